//! `ppd export`: Perfetto's Chrome trace JSON, ShiViz's log, plain JSON — checked against
//! what those viewers require.

mod analysis_support;

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use analysis_support::{chromium, ppd_ok, record, render_dom};
use serde_json::Value;

fn export(work: &Path, dir: &Path, format: &str) -> Vec<u8> {
    ppd_ok(work, &["export", dir.to_str().unwrap(), "--format", format])
}

#[test]
fn perfetto_trace_has_the_structure_perfetto_loads() {
    let work = tempfile::tempdir().unwrap();
    let dir = record(work.path(), "bank");
    let trace: Value = serde_json::from_slice(&export(work.path(), &dir, "perfetto")).unwrap();
    let info = ppd_tests::info_json(work.path(), &dir);
    let events = trace["traceEvents"].as_array().expect("traceEvents array");
    let mut names = Vec::new();
    let mut slices: BTreeMap<u64, Vec<(f64, f64)>> = BTreeMap::new();
    let mut flows: HashMap<u64, (Option<f64>, Option<f64>)> = HashMap::new();
    for e in events {
        let ph = e["ph"].as_str().expect("every event has a phase");
        assert_eq!(e["pid"], 1, "{e}");
        let tid = e["tid"].as_u64().expect("tid");
        match ph {
            "M" => {
                if e["name"] == "thread_name" {
                    names.push(e["args"]["name"].as_str().unwrap().to_owned());
                }
            }
            "X" => {
                let ts = e["ts"].as_f64().expect("ts");
                let dur = e["dur"].as_f64().expect("dur");
                assert!(dur > 0.0);
                assert!(e["name"].is_string() && e["cat"].is_string());
                slices.entry(tid).or_default().push((ts, dur));
            }
            "s" | "f" => {
                let id = e["id"].as_u64().expect("flow id");
                let ts = e["ts"].as_f64().expect("ts");
                let entry = flows.entry(id).or_default();
                if ph == "s" {
                    assert!(entry.0.replace(ts).is_none(), "one start per flow");
                } else {
                    assert_eq!(e["bp"], "e", "flow ends bind to the enclosing slice");
                    assert!(entry.1.replace(ts).is_none(), "one end per flow");
                }
            }
            "B" | "E" => {}
            other => panic!("unexpected phase {other}"),
        }
    }
    assert_eq!(names.len(), 7);
    assert!(names.iter().any(|n| n.starts_with("teller")));
    let total: usize = slices.values().map(Vec::len).sum();
    assert_eq!(
        total as u64,
        info["events"].as_u64().unwrap(),
        "a slice per event"
    );
    for (tid, mut s) in slices {
        s.sort_by(|a, b| a.0.total_cmp(&b.0));
        for w in s.windows(2) {
            assert!(w[0].0 + w[0].1 <= w[1].0, "slices of thread {tid} overlap");
        }
    }
    assert!(flows.len() > 50);
    for (id, (start, end)) in flows {
        let (start, end) = (start.expect("start"), end.expect("end"));
        assert!(start < end, "flow {id} goes forward in time");
    }
}

/// Parses a ShiViz log as ShiViz does: the first line is the regular expression, the second
/// the delimiter; then each event is a description line and `host {clock}`. Checks ShiViz's
/// rules: a host's own clock counts its events from 1 in steps of 1, and every host a clock
/// names exists and has that many events.
fn check_shiviz(text: &str, processes: usize, events: u64) {
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some(r"(?<event>.*)\n(?<host>\S*) (?<clock>{.*})")
    );
    assert_eq!(lines.next(), Some(""));
    let rest: Vec<&str> = lines.collect();
    assert_eq!(rest.len() % 2, 0);
    let mut own: HashMap<String, Vec<u64>> = HashMap::new();
    let mut clocks: Vec<BTreeMap<String, u64>> = Vec::new();
    for pair in rest.chunks(2) {
        assert!(!pair[0].is_empty());
        let (host, clock) = pair[1].split_once(' ').expect("host and clock");
        assert!(!host.contains(char::is_whitespace));
        let clock: BTreeMap<String, u64> = serde_json::from_str(clock).expect("clock is JSON");
        own.entry(host.to_owned()).or_default().push(clock[host]);
        clocks.push(clock);
    }
    assert_eq!(own.len(), processes);
    assert_eq!(clocks.len() as u64, events);
    for times in own.values_mut() {
        times.sort();
        assert_eq!(*times, (1..=times.len() as u64).collect::<Vec<_>>());
    }
    for clock in &clocks {
        for (host, &t) in clock {
            let n = own.get(host).map(Vec::len).unwrap_or(0) as u64;
            assert!(t >= 1 && t <= n, "{host}: {t} of {n}");
        }
    }
}

#[test]
fn shiviz_log_follows_shivizs_rules() {
    let work = tempfile::tempdir().unwrap();
    let dir = record(work.path(), "token_ring");
    let info = ppd_tests::info_json(work.path(), &dir);
    let log = String::from_utf8(export(work.path(), &dir, "shiviz")).unwrap();
    let processes = info["processes"].as_array().unwrap().len();
    let events = info["events"].as_u64().unwrap();
    check_shiviz(&log, processes, events);
    // ShiViz applies the expression with JavaScript's regular expressions, multi-line: every
    // event must match.
    if let Some(chromium) = chromium("shiviz_log_follows_shivizs_rules") {
        let (regex, body) = log.split_once("\n\n").unwrap();
        let page = work.path().join("shiviz.html");
        let script = format!(
            "var re = new RegExp({}, 'gm'); var text = {}; var n = 0, bad = 0, m;\
             while ((m = re.exec(text)) !== null) {{ n++; try {{ JSON.parse(m.groups.clock); \
             if (!(m.groups.host in JSON.parse(m.groups.clock))) bad++; }} catch (e) {{ bad++; }} }}\
             document.getElementById('out').setAttribute('data-matches', n);\
             document.getElementById('out').setAttribute('data-bad', bad);",
            serde_json::to_string(regex).unwrap(),
            serde_json::to_string(body).unwrap()
        );
        std::fs::write(
            &page,
            format!("<!DOCTYPE html><html><body><div id=\"out\"></div><script>{script}</script></body></html>"),
        )
        .unwrap();
        let dom = render_dom(&chromium, &page);
        assert!(dom.contains(&format!("data-matches=\"{events}\"")), "{dom}");
        assert!(dom.contains("data-bad=\"0\""));
    }
}

#[test]
fn json_export_lists_every_event_with_its_clock() {
    let work = tempfile::tempdir().unwrap();
    let dir = record(work.path(), "pipeline");
    let v: Value = serde_json::from_slice(&export(work.path(), &dir, "json")).unwrap();
    let info = ppd_tests::info_json(work.path(), &dir);
    assert_eq!(v["format"], "ppd-events");
    let events = v["events"].as_array().unwrap();
    assert_eq!(events.len() as u64, info["events"].as_u64().unwrap());
    assert_eq!(v["processes"].as_array().unwrap().len(), 4);
    for e in events {
        let pid = e["pid"].as_u64().unwrap();
        let own = e["clock"][format!("p{pid}")].as_u64().unwrap();
        assert_eq!(own, e["event"].as_u64().unwrap() + 1, "{e}");
        assert!(e["lamport"].as_u64().unwrap() >= 1);
    }
    // Every message edge goes from a send to the receive of the same message.
    let find = |pid: &Value, k: &Value| {
        events
            .iter()
            .find(|e| e["pid"] == *pid && e["event"] == *k)
            .unwrap()
    };
    let mut messages = 0;
    for edge in v["edges"].as_array().unwrap() {
        if edge["kind"] != "message" {
            continue;
        }
        messages += 1;
        let (s, r) = (
            find(&edge["from"]["pid"], &edge["from"]["event"]),
            find(&edge["to"]["pid"], &edge["to"]["event"]),
        );
        assert_eq!(s["kind"], "send");
        assert_eq!(r["kind"], "recv");
        assert_eq!(s["seq"], r["seq"]);
        assert_eq!(s["object"], r["object"]);
        assert!(s["lamport"].as_u64() < r["lamport"].as_u64());
    }
    assert!(messages > 0);
    // Writing to a file gives the same bytes.
    let file = work.path().join("run.json");
    ppd_ok(
        work.path(),
        &[
            "export",
            dir.to_str().unwrap(),
            "--format",
            "json",
            "-o",
            file.to_str().unwrap(),
        ],
    );
    assert_eq!(
        std::fs::read(&file).unwrap(),
        export(work.path(), &dir, "json")
    );
}
