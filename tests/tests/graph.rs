//! `ppd graph`: time-space diagrams, rendered in headless Chromium and checked for what is
//! drawn.

mod analysis_support;

use std::path::Path;

use analysis_support::{attribute, chromium, count, ppd_ok, record, record_scenario, render_dom};
use serde_json::Value;

/// Message edges of a run, from the JSON export.
fn message_edges(work: &Path, dir: &Path) -> usize {
    let out = ppd_ok(work, &["export", dir.to_str().unwrap(), "--format", "json"]);
    let v: Value = serde_json::from_slice(&out).unwrap();
    v["edges"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "message")
        .count()
}

fn html(work: &Path, dir: &Path, name: &str) -> std::path::PathBuf {
    let page = work.join(format!("{name}.html"));
    ppd_ok(
        work,
        &[
            "graph",
            dir.to_str().unwrap(),
            "--format",
            "html",
            "-o",
            page.to_str().unwrap(),
        ],
    );
    page
}

#[test]
fn bank_renders_with_a_line_per_process_and_an_arrow_per_message() {
    let Some(chromium) = chromium("bank_renders_with_a_line_per_process_and_an_arrow_per_message")
    else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let dir = record(work.path(), "bank");
    let page = html(work.path(), &dir, "bank");
    let page_text = std::fs::read_to_string(&page).unwrap();
    for external in ["src=\"http", "href=\"http", "<link", "@import"] {
        assert!(
            !page_text.contains(external),
            "no external resources: {external}"
        );
    }
    let dom = render_dom(&chromium, &page);
    assert_eq!(
        attribute(&dom, "<svg id=\"diagram\"", "data-drawn").as_deref(),
        Some("1")
    );
    assert_eq!(
        count(&dom, "class=\"proc-line\""),
        7,
        "one line per process"
    );
    for name in ["main", "teller", "auditor", "client-0", "client-3"] {
        assert!(dom.contains(&format!(">{name} (p")), "label of {name}");
    }
    let messages = message_edges(work.path(), &dir);
    assert!(messages > 50, "bank exchanges many messages");
    assert_eq!(count(&dom, "class=\"msg\""), messages);
    assert_eq!(
        attribute(&dom, "<svg id=\"diagram\"", "data-messages"),
        Some(messages.to_string())
    );
    // Spawns and joins are drawn as other edges; local events are collapsed.
    assert!(count(&dom, "class=\"sync-edge spawn\"") >= 6);
    assert!(count(&dom, "class=\"local-run\"") > 0);
}

#[test]
fn racy_counter_highlights_its_race_and_collapses_local_events() {
    let Some(chromium) = chromium("racy_counter_highlights_its_race_and_collapses_local_events")
    else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let dir = record(work.path(), "racy_counter");
    let dom = render_dom(&chromium, &html(work.path(), &dir, "racy"));
    assert_eq!(count(&dom, "class=\"proc-line\""), 5);
    assert_eq!(
        count(&dom, "class=\"race-link\""),
        2,
        "two races (load/store, store/store)"
    );
    assert!(count(&dom, "class=\"ev race\"") >= 2);
    assert!(
        dom.contains("data race on counter"),
        "the race list names it"
    );
    // 8000 accesses fold into a handful of boxes.
    let nodes: usize = attribute(&dom, "<svg id=\"diagram\"", "data-nodes")
        .unwrap()
        .parse()
        .unwrap();
    assert!(nodes < 100, "{nodes} dots for 8000 events");
    assert!(count(&dom, "class=\"local-run\"") >= 4);
}

/// A run of more than 10 000 events renders, every message drawn.
#[test]
fn a_long_run_renders() {
    let Some(chromium) = chromium("a_long_run_renders") else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let dir = record_scenario(work.path(), "token_ring_long");
    let info = ppd_tests::info_json(work.path(), &dir);
    assert!(info["events"].as_u64().unwrap() > 10_000, "{info:#}");
    let dom = render_dom(&chromium, &html(work.path(), &dir, "ring"));
    assert_eq!(
        attribute(&dom, "<svg id=\"diagram\"", "data-drawn").as_deref(),
        Some("1")
    );
    assert_eq!(count(&dom, "class=\"proc-line\""), 5);
    assert_eq!(count(&dom, "class=\"msg\""), 6000);
    assert_eq!(count(&dom, "class=\"race-link\""), 0);
}

fn write_cut(dir: &Path, writer: u64, reader: u64) {
    let cut = serde_json::json!({
        "predicate": "reader: recv ready",
        "cut": [
            {"process": 0, "events": 5},
            {"process": 1, "events": writer},
            {"process": 2, "events": reader},
        ],
    });
    std::fs::create_dir_all(dir.join("cache")).unwrap();
    std::fs::write(dir.join("cache/halt.json"), cut.to_string()).unwrap();
}

#[test]
fn the_halt_cut_is_drawn_and_checked() {
    let work = tempfile::tempdir().unwrap();
    let dir = record_scenario(work.path(), "message_passing");
    // main (p0) has spawned both; the writer (p1) sent; the reader (p2) has not received:
    // consistent.
    write_cut(&dir, 10, 1);
    let svg = String::from_utf8(ppd_ok(
        work.path(),
        &["graph", dir.to_str().unwrap(), "--format", "svg"],
    ))
    .unwrap();
    assert_eq!(count(&svg, "class=\"halt-cut\""), 1, "{svg}");
    assert!(svg.contains("halt: reader: recv ready</title>"));
    // The reader received a message the writer has not sent yet: inconsistent, and said so.
    write_cut(&dir, 1, 10);
    let svg = String::from_utf8(ppd_ok(
        work.path(),
        &["graph", dir.to_str().unwrap(), "--format", "svg"],
    ))
    .unwrap();
    assert!(svg.contains("(inconsistent cut)"), "{svg}");
    if let Some(chromium) = chromium("the_halt_cut_is_drawn_and_checked") {
        let dom = render_dom(&chromium, &html(work.path(), &dir, "cut"));
        assert_eq!(count(&dom, "class=\"halt-cut\""), 1);
        assert!(dom.contains("halt: reader: recv ready"));
    }
    // A damaged cut file is reported and the picture drawn without it.
    std::fs::write(dir.join("cache/halt.json"), "{not json").unwrap();
    let out = ppd_tests::ppd(
        work.path(),
        &["graph", dir.to_str().unwrap(), "--format", "svg"],
    );
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not drawing the halt cut"));
    assert_eq!(
        count(&String::from_utf8_lossy(&out.stdout), "class=\"halt-cut\""),
        0
    );
}

#[test]
fn svg_and_dot_are_well_formed() {
    let work = tempfile::tempdir().unwrap();
    let dir = record(work.path(), "pipeline");
    let svg_path = work.path().join("pipeline.svg");
    ppd_ok(
        work.path(),
        &[
            "graph",
            dir.to_str().unwrap(),
            "--format",
            "svg",
            "-o",
            svg_path.to_str().unwrap(),
        ],
    );
    let svg = std::fs::read_to_string(&svg_path).unwrap();
    assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
    assert_eq!(count(&svg, "class=\"proc-line\""), 4);
    assert_eq!(
        count(&svg, "<line") + count(&svg, "<circle") + count(&svg, "<rect"),
        count(&svg, "</line>") + count(&svg, "</circle>") + count(&svg, "</rect>")
    );
    if let Some(chromium) = chromium("svg_and_dot_are_well_formed") {
        // Opened as an image document, a malformed SVG shows an XML error page.
        let dom = render_dom(&chromium, &svg_path);
        assert!(!dom.contains("error on line"), "{dom}");
        assert_eq!(count(&dom, "class=\"proc-line\""), 4);
    }
    let dot = String::from_utf8(ppd_ok(
        work.path(),
        &["graph", dir.to_str().unwrap(), "--format", "dot"],
    ))
    .unwrap();
    assert!(dot.starts_with("digraph ppd {"));
    assert_eq!(count(&dot, "subgraph cluster_p"), 4);
    assert_eq!(count(&dot, "{"), count(&dot, "}"));
    let messages = message_edges(work.path(), &dir);
    assert_eq!(count(&dot, "[color=\"#2f6db5\"]"), messages);
}

/// What an SVG picture draws: its dots' titles, its boxes' event counts, its arrows, and its
/// bundles' edge counts.
struct Drawn {
    dots: Vec<String>,
    boxed: u64,
    arrows: usize,
    bundled: u64,
    races: usize,
}

fn drawn(svg: &str) -> Drawn {
    let title = |element: &str| {
        element
            .split_once("<title>")
            .and_then(|(_, t)| t.split_once("</title>"))
            .map(|(t, _)| t.to_owned())
            .unwrap_or_default()
    };
    let number = |t: &str| t.split(' ').next().unwrap().parse::<u64>().unwrap();
    let mut d = Drawn {
        dots: Vec::new(),
        boxed: 0,
        arrows: count(svg, "marker-end=\"url(#arrowhead)\""),
        bundled: 0,
        races: count(svg, "class=\"race-link\""),
    };
    for line in svg.lines() {
        if line.starts_with("<circle class=\"ev ") {
            d.dots.push(title(line));
        } else if line.starts_with("<rect class=\"local-run\"")
            || line.starts_with("<rect class=\"collapsed-run\"")
        {
            d.boxed += number(&title(line));
        } else if line.starts_with("<line class=\"bundle\"") {
            d.bundled += number(&title(line));
        }
    }
    d
}

fn svg_of(work: &Path, dir: &Path, extra: &[&str]) -> (String, String) {
    let mut args = vec!["graph", dir.to_str().unwrap(), "--format", "svg"];
    args.extend_from_slice(extra);
    let out = ppd_tests::ppd(work, &args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// Past its dot budget the picture is an overview: at most that many dots, every event still
/// accounted for once (as a dot or inside a box), every synchronization edge once (as an arrow
/// or inside a bundle), the races kept, and what was left out said in the picture and on
/// stderr.
#[test]
fn an_overview_accounts_for_every_event_and_edge_and_says_what_it_left_out() {
    let work = tempfile::tempdir().unwrap();
    let dir = record(work.path(), "bank");
    let info = ppd_tests::info_json(work.path(), &dir);
    let events = info["events"].as_u64().unwrap();
    let export = ppd_ok(
        work.path(),
        &["export", dir.to_str().unwrap(), "--format", "json"],
    );
    let edges = serde_json::from_slice::<Value>(&export).unwrap()["edges"]
        .as_array()
        .unwrap()
        .len();
    let (full_svg, full_err) = svg_of(work.path(), &dir, &[]);
    assert!(
        !full_svg.contains("left out"),
        "a small run is drawn in full"
    );
    assert!(!full_err.contains("left out"), "{full_err}");
    let full = drawn(&full_svg);
    assert_eq!(full.dots.len() as u64 + full.boxed, events);
    assert_eq!(full.arrows, edges);
    assert_eq!(full.bundled, 0);

    let (svg, err) = svg_of(work.path(), &dir, &["--max-dots", "120"]);
    let overview = drawn(&svg);
    assert!(overview.dots.len() <= 120, "{} dots", overview.dots.len());
    assert!(overview.dots.len() < full.dots.len());
    assert_eq!(overview.dots.len() as u64 + overview.boxed, events);
    assert_eq!(overview.arrows as u64 + overview.bundled, edges as u64);
    assert!(overview.bundled > 0);
    if !err.contains("race sides did not fit") {
        assert_eq!(overview.races, full.races, "{err}");
    }
    assert!(
        svg.contains("<text class=\"left-out\""),
        "the picture says it"
    );
    assert!(err.contains("ppd: left out: an overview"), "{err}");
    assert!(count(&svg, "class=\"collapsed-run\"") > 0);
    // The page draws the same overview, bundles and notes included.
    if let Some(chromium) = chromium("an_overview_accounts_for_every_event_and_edge") {
        let page = work.path().join("overview.html");
        let d = dir.to_str().unwrap();
        let p = page.to_str().unwrap();
        ppd_ok(work.path(), &["graph", d, "--max-dots", "120", "-o", p]);
        let dom = render_dom(&chromium, &page);
        let svg_tag = "<svg id=\"diagram\"";
        assert_eq!(attribute(&dom, svg_tag, "data-drawn").as_deref(), Some("1"));
        let bundles = count(&svg, "<line class=\"bundle\"");
        assert_eq!(
            attribute(&dom, svg_tag, "data-bundles"),
            Some(bundles.to_string())
        );
        assert_eq!(count(&dom, "class=\"ev "), overview.dots.len());
        assert!(
            dom.contains("an overview: only"),
            "the page lists what it left out"
        );
    }
}

/// `--from/--to/--processes` draws only that window, every event of it accounted for, and
/// says so.
#[test]
fn a_window_draws_only_the_chosen_processes_and_times() {
    let work = tempfile::tempdir().unwrap();
    let dir = record(work.path(), "bank");
    let export = ppd_ok(
        work.path(),
        &["export", dir.to_str().unwrap(), "--format", "json"],
    );
    let json: Value = serde_json::from_slice(&export).unwrap();
    let pid = |name: &str| {
        json["processes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == name)
            .unwrap()["pid"]
            .clone()
    };
    let chosen = [pid("teller"), pid("auditor")];
    let all = json["events"].as_array().unwrap();
    let end = all
        .iter()
        .map(|e| e["lamport"].as_u64().unwrap())
        .max()
        .unwrap();
    let (from, to) = (end / 4, end / 2);
    let inside = all
        .iter()
        .filter(|e| chosen.contains(&e["pid"]))
        .filter(|e| (from..=to).contains(&e["lamport"].as_u64().unwrap()))
        .count() as u64;
    let (from, to) = (from.to_string(), to.to_string());
    let (svg, err) = svg_of(
        work.path(),
        &dir,
        &[
            "--from",
            &from,
            "--to",
            &to,
            "--processes",
            "teller,auditor",
        ],
    );
    assert_eq!(count(&svg, "class=\"proc-line\""), 2);
    let d = drawn(&svg);
    assert_eq!(d.dots.len() as u64 + d.boxed, inside);
    assert!(
        d.dots
            .iter()
            .all(|t| t.starts_with("teller #") || t.starts_with("auditor #")),
        "{:?}",
        d.dots
    );
    assert!(err.contains("shows Lamport times"), "{err}");
    assert!(svg.contains("of teller, auditor"), "the picture says it");
}

/// `--full` prints its size estimate first, and it counts what is drawn.
#[test]
fn full_prints_a_size_estimate_that_counts_the_dots() {
    let work = tempfile::tempdir().unwrap();
    let dir = record(work.path(), "bank");
    let (svg, err) = svg_of(work.path(), &dir, &["--full"]);
    let dots = drawn(&svg).dots.len();
    assert!(
        err.contains(&format!("ppd: the full picture: {dots} dots")),
        "{err}"
    );
    let bad = ppd_tests::ppd(
        work.path(),
        &["graph", dir.to_str().unwrap(), "--from", "9", "--to", "3"],
    );
    assert_eq!(
        bad.status.code(),
        Some(2),
        "a window that ends before it starts"
    );
}
