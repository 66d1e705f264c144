//! `ppd races`: data races, message races and the race corpus, end to end.

mod analysis_support;

use std::path::Path;

use analysis_support::{listing, ppd_ok, race_lines, races_json, record, record_scenario};
use ppd_tests::{line_of, ppd};
use serde_json::Value;

/// The 1-based line of `examples/<file>` that contains `needle`.
fn example_line(file: &str, needle: &str) -> u64 {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples")
        .join(file);
    line_of(
        &std::fs::read_to_string(&path).expect("example source"),
        needle,
    )
}

/// Component `pid` of a side's clock (absent means 0).
fn component(side: &Value, pid: u64) -> u64 {
    side["clock"][format!("p{pid}")].as_u64().unwrap_or(0)
}

#[test]
fn racy_counter_shows_its_load_store_race_with_both_sides() {
    let work = tempfile::tempdir().unwrap();
    let dir = record(work.path(), "racy_counter");
    let report = races_json(work.path(), &dir);
    let load = example_line("racy_counter.rs", "counter.load(Ordering::Relaxed)");
    let store = example_line("racy_counter.rs", "counter.store(");
    assert_eq!(
        race_lines(&report),
        vec![
            ("counter".to_owned(), load, store),
            ("counter".to_owned(), store, store)
        ],
        "{report:#}"
    );
    for race in report["races"].as_array().unwrap() {
        assert_eq!(race["kind"], "data");
        assert!(race["count"].as_u64().unwrap() >= 1);
        for side in [&race["a"], &race["b"]] {
            assert!(
                side["process"].as_str().unwrap().starts_with("incr-"),
                "{side}"
            );
            assert!(side["file"].as_str().unwrap().ends_with("racy_counter.rs"));
            assert!(["read", "write"].contains(&side["access"].as_str().unwrap()));
            assert_eq!(side["ordering"], "relaxed");
        }
        // The clocks show the two are unordered: each has seen more of its own process than
        // the other has.
        let (a, b) = (&race["a"], &race["b"]);
        let (pa, pb) = (a["pid"].as_u64().unwrap(), b["pid"].as_u64().unwrap());
        assert_ne!(pa, pb);
        assert!(component(a, pa) > component(b, pa), "{race:#}");
        assert!(component(b, pb) > component(a, pb), "{race:#}");
    }
    let text = String::from_utf8(ppd_ok(work.path(), &["races", dir.to_str().unwrap()])).unwrap();
    assert!(text.contains("data race on counter"), "{text}");
    assert!(text.contains(&format!("racy_counter.rs:{load}")), "{text}");
    assert!(text.contains(&format!("racy_counter.rs:{store}")), "{text}");
}

#[test]
fn counter_with_fetch_add_has_no_race() {
    let work = tempfile::tempdir().unwrap();
    let dir = record(work.path(), "counter");
    let report = races_json(work.path(), &dir);
    assert_eq!(report["races"], Value::Array(vec![]), "{report:#}");
    assert!(report["sync_edges"].as_u64().unwrap() >= 8);
    let text = String::from_utf8(ppd_ok(work.path(), &["races", dir.to_str().unwrap()])).unwrap();
    assert!(text.contains("no races"), "{text}");
}

/// Recordings of each corpus scenario: interleavings differ from run to run.
const RUNS: usize = 3;

/// The races of a report as `((var, lower line, higher line, kind), count)`, sorted.
fn races_by_site(report: &Value) -> Vec<((String, u64, u64, String), u64)> {
    let mut v: Vec<_> = report["races"]
        .as_array()
        .expect("races")
        .iter()
        .map(|r| {
            let (a, b) = (
                r["a"]["line"].as_u64().expect("a.line"),
                r["b"]["line"].as_u64().expect("b.line"),
            );
            (
                (
                    r["var"].as_str().expect("var").to_owned(),
                    a.min(b),
                    a.max(b),
                    r["kind"].as_str().expect("kind").to_owned(),
                ),
                r["count"].as_u64().expect("count"),
            )
        })
        .collect();
    v.sort();
    v
}

/// Lists of lines, each sorted, in sorted order.
fn sorted_cycles(v: &Value) -> Vec<Vec<u64>> {
    let mut cycles: Vec<Vec<u64>> = v
        .as_array()
        .expect("a list of cycles")
        .iter()
        .map(|c| {
            let mut lines: Vec<u64> = c
                .as_array()
                .expect("a cycle")
                .iter()
                .map(|l| l.as_u64().expect("a line"))
                .collect();
            lines.sort_unstable();
            lines
        })
        .collect();
    cycles.sort();
    cycles
}

/// The potential deadlocks of a report, each as the lines of its acquisitions.
fn potential_deadlock_lines(report: &Value) -> Vec<Vec<u64>> {
    let cycles: Vec<Value> = report["potential_deadlocks"]
        .as_array()
        .expect("potential_deadlocks")
        .iter()
        .map(|d| {
            Value::Array(
                d["steps"]
                    .as_array()
                    .expect("steps")
                    .iter()
                    .map(|s| s["line"].clone())
                    .collect(),
            )
        })
        .collect();
    sorted_cycles(&Value::Array(cycles))
}

/// Every scenario of the corpus shows exactly its declared races, each of its declared kind and
/// as many times as declared, in every one of several recordings: each known race is found, and
/// nothing is reported on the race-free ones.
#[test]
fn the_race_corpus_is_reported_exactly() {
    let scenarios: Vec<Value> = listing()
        .into_iter()
        .filter(|s| s["hangs"] == false)
        .collect();
    let racy = scenarios
        .iter()
        .filter(|s| !s["races"].as_array().unwrap().is_empty())
        .count();
    assert!(racy >= 20, "only {racy} racy scenarios");
    assert!(
        scenarios.len() - racy >= 20,
        "only {} race-free scenarios",
        scenarios.len() - racy
    );
    let work = tempfile::tempdir().unwrap();
    let chunks: Vec<&[Value]> = scenarios.chunks(scenarios.len().div_ceil(4)).collect();
    let failures: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = chunks
            .iter()
            .map(|chunk| {
                let work = work.path();
                s.spawn(move || {
                    let mut failures = Vec::new();
                    for (scenario, run) in chunk
                        .iter()
                        .flat_map(|s| (0..RUNS).map(move |run| (s, run)))
                    {
                        let name = scenario["name"].as_str().unwrap();
                        let runs = work.join(format!("run-{run}"));
                        std::fs::create_dir_all(&runs).unwrap();
                        let dir = record_scenario(&runs, name);
                        let report = races_json(&runs, &dir);
                        let mut expected: Vec<(String, u64, u64, String)> = scenario["races"]
                            .as_array()
                            .unwrap()
                            .iter()
                            .map(|r| {
                                let (a, b) = (r["a"].as_u64().unwrap(), r["b"].as_u64().unwrap());
                                (
                                    r["var"].as_str().unwrap().to_owned(),
                                    a.min(b),
                                    a.max(b),
                                    r["kind"].as_str().unwrap().to_owned(),
                                )
                            })
                            .collect();
                        expected.sort();
                        let found = races_by_site(&report);
                        let sites: Vec<_> = found.iter().map(|(race, _)| race.clone()).collect();
                        if sites != expected {
                            failures.push(format!(
                                "{name} run {run}: expected {expected:?}, found {sites:?}"
                            ));
                        }
                        let expected_cycles = sorted_cycles(&scenario["potential_deadlocks"]);
                        let found_cycles = potential_deadlock_lines(&report);
                        if found_cycles != expected_cycles {
                            failures.push(format!(
                                "{name} run {run}: expected potential deadlocks \
                                 {expected_cycles:?}, found {found_cycles:?}"
                            ));
                        }
                        for r in scenario["races"].as_array().unwrap() {
                            let (a, b) = (r["a"].as_u64().unwrap(), r["b"].as_u64().unwrap());
                            let (min, max) = (
                                r["count"][0].as_u64().unwrap(),
                                r["count"][1].as_u64().unwrap(),
                            );
                            let count = found
                                .iter()
                                .find(|((var, lo, hi, _), _)| {
                                    var == r["var"].as_str().unwrap()
                                        && *lo == a.min(b)
                                        && *hi == a.max(b)
                                })
                                .map(|(_, count)| *count);
                            if count.is_some_and(|c| c < min || c > max) {
                                failures.push(format!(
                                    "{name} run {run}: {} at lines {a} and {b} raced {} times, \
                                     expected {min} to {max}",
                                    r["var"],
                                    count.unwrap()
                                ));
                            }
                        }
                        for race in report["races"].as_array().unwrap() {
                            for side in [&race["a"], &race["b"]] {
                                let file = side["file"].as_str().unwrap_or("");
                                if !file.ends_with("race_corpus.rs") {
                                    failures.push(format!("{name}: side in {file}"));
                                }
                            }
                        }
                    }
                    failures
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("corpus worker"))
            .collect()
    });
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// `ppd races` computes the clocks in the pass that finds the data races and leaves no cache;
/// the exports read the clocks from the recording's cache, and a damaged cache is ignored and
/// rewritten, with the same output.
#[test]
fn clocks_are_cached_and_a_damaged_cache_is_recomputed() {
    let work = tempfile::tempdir().unwrap();
    let dir = record_scenario(work.path(), "message_race_partial_order");
    let cache = dir.join("cache").join("clocks.bin");
    races_json(work.path(), &dir);
    assert!(!cache.exists(), "ppd races writes no clock cache");
    let export = || {
        ppd_ok(
            work.path(),
            &["export", "--format", "shiviz", dir.to_str().unwrap()],
        )
    };
    let first = export();
    let written = std::fs::read(&cache).expect("the clocks are cached");
    assert!(written.starts_with(b"PPDCLOCK"));
    assert_eq!(export(), first);
    assert_eq!(
        std::fs::read(&cache).unwrap(),
        written,
        "a valid cache is reused"
    );
    for damage in [
        b"garbage".to_vec(),
        written[..written.len() / 2].to_vec(),
        {
            let mut w = written.clone();
            let last = w.len() - 1;
            w[last] ^= 0xff;
            w
        },
    ] {
        std::fs::write(&cache, &damage).unwrap();
        assert_eq!(export(), first);
        assert_eq!(
            std::fs::read(&cache).unwrap(),
            written,
            "the cache is rewritten"
        );
    }
}

#[test]
fn message_races_name_the_receive_and_both_sends() {
    let work = tempfile::tempdir().unwrap();
    let dir = record_scenario(work.path(), "message_race_two_senders");
    let report = races_json(work.path(), &dir);
    let races = report["races"].as_array().unwrap();
    assert_eq!(races.len(), 1, "{report:#}");
    let race = &races[0];
    assert_eq!(race["kind"], "message");
    assert_eq!(race["var"], "jobs");
    assert_eq!(race["a"]["access"], "send");
    assert_eq!(race["b"]["access"], "send");
    assert_eq!(race["receive"]["process"], "main");
    assert_eq!(race["receive"]["access"], "recv");
}

#[test]
fn a_missing_recording_is_bad_input() {
    let work = tempfile::tempdir().unwrap();
    for cmd in [
        vec!["races", "nope"],
        vec!["graph", "nope"],
        vec!["export", "nope", "--format", "json"],
    ] {
        let out = ppd(work.path(), &cmd);
        assert_eq!(out.status.code(), Some(2), "{cmd:?}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("not a ppd recording"));
    }
}

/// A completed run whose philosophers take their forks in a cycle is reported as a potential
/// deadlock naming the cycle, each step with its process and `file:line`, in JSON and in text.
#[test]
fn five_philosophers_with_one_reversed_are_a_potential_deadlock() {
    let work = tempfile::tempdir().unwrap();
    let dir = record_scenario(work.path(), "five_philosophers");
    let report = races_json(work.path(), &dir);
    assert_eq!(report["races"], Value::Array(vec![]), "{report:#}");
    assert_eq!(report["deadlocks"]["cycles"], Value::Array(vec![]));
    let cycles = report["potential_deadlocks"].as_array().unwrap();
    assert_eq!(cycles.len(), 1, "{report:#}");
    assert_eq!(
        cycles[0]["cycle"],
        serde_json::json!(["fork-0", "fork-1", "fork-2", "fork-3", "fork-4"])
    );
    let steps = cycles[0]["steps"].as_array().unwrap();
    let processes: Vec<&str> = steps
        .iter()
        .map(|s| s["process"].as_str().unwrap())
        .collect();
    assert_eq!(
        processes,
        [
            "philosopher-0",
            "philosopher-1",
            "philosopher-2",
            "philosopher-3",
            "philosopher-4"
        ]
    );
    for s in steps {
        assert!(s["file"].as_str().unwrap().ends_with("race_corpus.rs"));
        assert!(s["held_file"].as_str().unwrap().ends_with("race_corpus.rs"));
    }
    assert_eq!(steps[4]["holds"], "fork-4");
    assert_eq!(steps[4]["acquires"], "fork-0");
    let reversed = listing()
        .into_iter()
        .find(|s| s["name"] == "five_philosophers")
        .unwrap()["markers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m[0] == "fp.reversed")
        .unwrap()[1]
        .as_u64()
        .unwrap();
    assert_eq!(steps[4]["line"].as_u64(), Some(reversed));
    let text = String::from_utf8(ppd_ok(work.path(), &["races", dir.to_str().unwrap()])).unwrap();
    assert!(
        text.contains(
            "potential deadlock: lock-order cycle fork-0 -> fork-1 -> fork-2 -> fork-3 -> \
             fork-4 -> fork-0 (5 processes)"
        ),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "philosopher-4 (p5) holds fork-4 (locked at {file}:{}) and locks fork-0 at \
             {file}:{reversed}",
            reversed - 1,
            file = steps[4]["file"].as_str().unwrap()
        )),
        "{text}"
    );
}
