//! `ppd graph`: time-space diagrams, rendered in headless Chromium and checked for what is
//! drawn: what the page reports of its canvas, and what its screenshot shows.

mod analysis_support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use analysis_support::{
    Screenshot, chromium, colour, count, is_ink, near, ppd_ok, record, record_scenario, render_dom,
    render_dom_at, screenshot,
};
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
    let drawing = Drawing::of(&dom);
    assert_eq!(drawing.attr("data-drawn"), "1");
    assert_eq!(drawing.count("data-lines"), 7, "one line per process");
    for name in ["main", "teller", "auditor", "client-0", "client-3"] {
        assert!(dom.contains(&format!(">{name} (p")), "label of {name}");
    }
    let messages = message_edges(work.path(), &dir);
    assert!(messages > 50, "bank exchanges many messages");
    assert_eq!(drawing.count("data-messages"), messages);
    // Spawns and joins are drawn as other edges; local events are collapsed.
    assert!(drawing.count("data-syncs") >= 6);
    assert!(drawing.count("data-runs") > 0);
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
    let drawing = Drawing::of(&dom);
    assert_eq!(drawing.count("data-lines"), 5);
    assert_eq!(
        drawing.count("data-races"),
        2,
        "two races (load/store, store/store)"
    );
    let race_dots = page_data(&dom)["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["class"] == "race")
        .count();
    assert!(race_dots >= 2);
    assert!(
        dom.contains("data race on counter"),
        "the race list names it"
    );
    // 8000 accesses fold into a handful of boxes.
    let nodes = drawing.count("data-nodes");
    assert!(nodes < 100, "{nodes} dots for 8000 events");
    assert!(drawing.count("data-runs") >= 4);
}

/// A run of more than 10 000 events renders: its 6000 messages are too many to draw across the
/// whole run, and the page says so; zoomed in, every message in view is drawn.
#[test]
fn a_long_run_renders() {
    let Some(chromium) = chromium("a_long_run_renders") else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let dir = record_scenario(work.path(), "token_ring_long");
    let info = ppd_tests::info_json(work.path(), &dir);
    assert!(info["events"].as_u64().unwrap() > 10_000, "{info:#}");
    let page = html(work.path(), &dir, "ring");
    let dom = render_dom(&chromium, &page);
    let drawing = Drawing::of(&dom);
    assert_eq!(drawing.attr("data-drawn"), "1");
    assert_eq!(drawing.count("data-lines"), 5);
    assert_eq!(drawing.count("data-messages"), 0);
    assert!(drawing.count("data-edges-hidden") > 6000);
    assert!(where_line(&dom).contains("edges in view are not drawn at this zoom"));
    assert_eq!(drawing.count("data-races"), 0);
    // The messages with an end in Lamport times 1000..=1400, from the export.
    let export = ppd_ok(
        work.path(),
        &["export", dir.to_str().unwrap(), "--format", "json"],
    );
    let json: Value = serde_json::from_slice(&export).unwrap();
    let time: BTreeMap<(u64, u64), u64> = json["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let at = (e["pid"].as_u64().unwrap(), e["event"].as_u64().unwrap());
            (at, e["lamport"].as_u64().unwrap())
        })
        .collect();
    let end = |e: &Value| time[&(e["pid"].as_u64().unwrap(), e["event"].as_u64().unwrap())];
    let (from, to) = (1000, 1400);
    let in_view = json["edges"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "message")
        .filter(|e| {
            let (a, b) = (end(&e["from"]), end(&e["to"]));
            a.max(b) + 1 >= from && a.min(b) <= to + 1
        })
        .count();
    assert!(in_view > 50, "{in_view}");
    let dom = render_dom_at(&chromium, &page, &format!("#from={from}&to={to}"));
    let drawing = Drawing::of(&dom);
    assert_eq!(drawing.count("data-edges-hidden"), 0);
    assert_eq!(drawing.count("data-messages"), in_view);
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
        assert_eq!(Drawing::of(&dom).count("data-cut"), 1);
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
        let drawing = Drawing::of(&dom);
        assert_eq!(drawing.attr("data-drawn"), "1");
        // At the whole run, every bundle is drawn, or said to be between boxes too long to
        // place it.
        assert_eq!(drawing.count("data-edges-hidden"), 0);
        let bundles = count(&svg, "<line class=\"bundle\"");
        assert_eq!(
            drawing.count("data-bundles") + drawing.count("data-vague"),
            bundles
        );
        assert_eq!(drawing.count("data-nodes"), overview.dots.len());
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

// The page at the scale of a long run, seen as a user sees it: headless Chromium's screenshot
// of it, and what the page reports of its canvas.

/// What the page says it drew: the `data-*` attributes of its canvas.
struct Drawing(BTreeMap<String, String>);

impl Drawing {
    fn of(dom: &str) -> Drawing {
        let at = dom
            .find("<canvas id=\"diagram\"")
            .expect("the page has its canvas");
        let tag = &dom[at..at + dom[at..].find('>').expect("a whole tag")];
        let mut attrs = BTreeMap::new();
        for part in tag.split("\" ") {
            if let Some((key, value)) = part.rsplit(' ').next().and_then(|p| p.split_once("=\"")) {
                attrs.insert(key.to_owned(), value.trim_end_matches('"').to_owned());
            }
        }
        Drawing(attrs)
    }

    fn attr(&self, name: &str) -> &str {
        self.0
            .get(name)
            .unwrap_or_else(|| panic!("the canvas has no {name}: {:?}", self.0))
    }

    fn number(&self, name: &str) -> f64 {
        self.attr(name).parse().expect("a number")
    }

    fn count(&self, name: &str) -> usize {
        self.attr(name).parse().expect("a count")
    }

    fn numbers(&self, name: &str) -> Vec<f64> {
        self.attr(name)
            .split(',')
            .map(|v| v.parse().expect("a number"))
            .collect()
    }

    /// The canvas on the page: left, top, right, bottom, in the screenshot's pixels.
    fn plot(&self) -> [f64; 4] {
        let p = self.numbers("data-plot");
        [p[0], p[1], p[2], p[3]]
    }

    /// The Lamport times at the canvas's left and right edges.
    fn view(&self) -> (f64, f64) {
        (self.number("data-view-from"), self.number("data-view-to"))
    }

    /// Per line: its colour and the height of its middle on the page.
    fn lanes(&self) -> Vec<([u8; 3], f64)> {
        let colours = self.attr("data-lane-colours").split(',').map(colour);
        colours.zip(self.numbers("data-lane-ys")).collect()
    }
}

/// What the line above the picture says about the view.
fn where_line(dom: &str) -> String {
    let start = dom.find("<div id=\"where\">").expect("the view's line");
    let end = start + dom[start..].find("</div>").expect("its end");
    dom[start..end].replace("<code>", "").replace("</code>", "")
}

/// The model the page draws, as it carries it.
fn page_data(dom: &str) -> Value {
    let start = dom.find("id=\"ppd-data\">").expect("the page's data") + "id=\"ppd-data\">".len();
    let end = start + dom[start..].find("</script>").expect("the end of the data");
    serde_json::from_str(&dom[start..end]).expect("the page's data is JSON")
}

/// The labels of the time axis: where each is (pixels from the canvas's left edge) and the
/// Lamport time it reads.
fn ticks(dom: &str) -> Vec<(f64, u64)> {
    dom.split("<div class=\"tick\"")
        .skip(1)
        .map(|rest| {
            let tag = &rest[..rest.find('>').expect("a whole tag")];
            let left = tag
                .split_once("left: ")
                .and_then(|(_, r)| r.split_once("px"))
                .expect("a tick's place")
                .0
                .parse()
                .expect("a number");
            let label = &rest[rest.find('>').unwrap() + 1..rest.find("</div>").unwrap()];
            let time: u64 = label.parse().expect("a tick reads a Lamport time");
            assert!(tag.contains(&format!("data-time=\"{time}\"")), "{tag}");
            (left, time)
        })
        .collect()
}

/// The tops of the lines' names, in pixels from the top of the column of names.
fn label_tops(dom: &str) -> Vec<f64> {
    dom.split("<div class=\"lane-label\"")
        .skip(1)
        .map(|rest| {
            let tag = &rest[..rest.find('>').unwrap()];
            tag.split_once("top: ")
                .and_then(|(_, r)| r.split_once("px"))
                .expect("a label's place")
                .0
                .parse()
                .expect("a number")
        })
        .collect()
}

/// The axis of a view: at least four labels, each a Lamport time inside the view and placed
/// where the view maps it, evenly spaced; and in the screenshot, text under each label.
fn check_axis(dom: &str, drawing: &Drawing, shot: &Screenshot) -> Vec<u64> {
    let ticks = ticks(dom);
    let (from, to) = drawing.view();
    let [left, top, right, _] = drawing.plot();
    let width = right - left;
    assert!(ticks.len() >= 4, "an axis with labels: {ticks:?}");
    for w in ticks.windows(2) {
        assert!(w[0].1 < w[1].1, "times grow to the right: {ticks:?}");
        let (step, gap) = (w[1].1 - w[0].1, w[1].0 - w[0].0);
        assert!(
            (step as f64 * width / (to - from) - gap).abs() < 1.0,
            "evenly spaced: {ticks:?}"
        );
    }
    for &(x, t) in &ticks {
        assert!(
            from <= t as f64 && t as f64 <= to,
            "{t} inside {from}..{to}"
        );
        let expected = (t as f64 - from) * width / (to - from);
        assert!((x - expected).abs() < 1.0, "{t} at {x}, not {expected}");
        if x + 40.0 < width {
            let xs = (left + x) as u32 + 2..(left + x) as u32 + 40;
            let ink = shot.count(xs, top as u32 - 22..top as u32 - 2, is_ink);
            assert!(ink >= 8, "the label {t} is drawn: {ink} dark pixels");
        }
    }
    ticks.iter().map(|t| t.1).collect()
}

/// Every line's name is written, one under the other, none over another.
fn check_labels(dom: &str, drawing: &Drawing, shot: &Screenshot) {
    let tops = label_tops(dom);
    let lanes = drawing.lanes();
    assert_eq!(tops.len(), lanes.len());
    for w in tops.windows(2) {
        assert!(w[1] - w[0] >= 16.0, "names a line apart: {tops:?}");
    }
    let [left, ..] = drawing.plot();
    for (i, &(_, y)) in lanes.iter().enumerate() {
        let ink = shot.count(20..left as u32 - 4, y as u32 - 6..y as u32 + 6, is_ink);
        assert!(ink >= 20, "line {i}'s name is written: {ink} dark pixels");
    }
}

/// The share of the canvas's width where line `lane` shows its colour.
fn lane_coverage(drawing: &Drawing, shot: &Screenshot, lane: usize) -> f64 {
    let lanes = drawing.lanes();
    let (hue, y) = lanes[lane];
    let half = lanes
        .get(1)
        .map_or(20.0, |l| (l.1 - lanes[0].1) / 2.0 - 4.0);
    let [left, _, right, _] = drawing.plot();
    shot.columns_with(
        left as u32 + 1..right as u32 - 1,
        (y - half) as u32..(y + half) as u32,
        |px| near(px, hue, 10),
    )
}

/// The lines of `names` in `dom`'s page, by name.
fn lane_of(dom: &str, name: &str) -> usize {
    page_data(dom)["lanes"]
        .as_array()
        .unwrap()
        .iter()
        .position(|l| l["name"] == name)
        .unwrap_or_else(|| panic!("no line {name}"))
}

/// The page of `dir`, written by `ppd graph` with `extra` arguments; its stderr.
fn page_of(work: &Path, dir: &Path, name: &str, extra: &[&str]) -> (PathBuf, String) {
    let page = work.join(format!("{name}.html"));
    let mut args = vec!["graph", dir.to_str().unwrap(), "-o", page.to_str().unwrap()];
    args.extend_from_slice(extra);
    let out = ppd_tests::ppd(work, &args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (page, String::from_utf8(out.stderr).unwrap())
}

/// A run too long to draw every dot opens on the whole run: every busy process's colour across
/// the width, the races marked, an axis of Lamport times, every name legible, and the page
/// says it is an overview. Zoomed in (`#from=&to=`) the axis reads the times in view where
/// they are, and the dots and arrows of the stretch drawn in detail are there.
#[test]
fn a_long_run_opens_whole_with_a_time_axis_and_zooms_in() {
    let Some(chromium) = chromium("a_long_run_opens_whole_with_a_time_axis_and_zooms_in") else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("bank");
    let recorded = ppd_tests::record_program(
        work.path(),
        &dir,
        &ppd_tests::example_bin("bank"),
        &["2000"],
        &[],
    );
    assert!(
        String::from_utf8_lossy(&recorded.stderr).contains("ppd: recorded"),
        "{}",
        String::from_utf8_lossy(&recorded.stderr)
    );
    let (page, err) = page_of(work.path(), &dir, "long", &[]);
    assert!(
        err.contains("left out: an overview"),
        "too long to draw whole: {err}"
    );
    let dom = render_dom(&chromium, &page);
    let shot = screenshot(&chromium, &page, "");
    let drawing = Drawing::of(&dom);
    assert_eq!(drawing.count("data-lines"), 7);
    // The whole run in view: the span the page draws is the run's, as the export times it.
    let export = ppd_ok(
        work.path(),
        &["export", dir.to_str().unwrap(), "--format", "json"],
    );
    let events = serde_json::from_slice::<Value>(&export).unwrap()["events"].clone();
    let last = events
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["lamport"].as_u64().unwrap())
        .max()
        .unwrap();
    let span = &page_data(&dom)["span"];
    assert_eq!(span[1].as_u64(), Some(last));
    let (from, to) = drawing.view();
    assert!(
        from <= span[0].as_f64().unwrap() && to >= last as f64,
        "{from}..{to}"
    );
    let ticks = check_axis(&dom, &drawing, &shot);
    assert!(
        ticks.last().copied().unwrap_or(0) as f64 > last as f64 * 0.6,
        "the axis runs to the end of the run: {ticks:?}"
    );
    check_labels(&dom, &drawing, &shot);
    // A busy process's colour runs along its life: the teller's without a gap, a client's
    // wherever it is not waiting for the teller.
    for (name, share) in [
        ("teller", 0.9),
        ("client-0", 0.5),
        ("client-1", 0.5),
        ("client-2", 0.5),
        ("client-3", 0.5),
    ] {
        let lane = lane_of(&dom, name);
        let life = &page_data(&dom)["lanes"][lane]["span"];
        let lived = (life[1].as_f64().unwrap() - life[0].as_f64().unwrap()) / (to - from);
        let covered = lane_coverage(&drawing, &shot, lane);
        assert!(
            covered > share * lived && lived > 0.5,
            "{name} is drawn along its {lived:.2} of the run: {covered:.2} of the width"
        );
    }
    let [left, top, right, bottom] = drawing.plot();
    let plot = (left as u32..right as u32, top as u32..bottom as u32);
    let red = shot.count(plot.0.clone(), plot.1.clone(), |px| {
        near(px, colour("#d62828"), 30)
    });
    assert!(
        drawing.count("data-landmarks") > 0 && red >= 10,
        "the races are marked: {red}"
    );
    assert!(
        dom.contains("<li>an overview: only"),
        "the page says what it left out"
    );
    assert!(
        where_line(&dom).contains(&format!("ppd graph --from {} --to {last}", span[0])),
        "{}",
        where_line(&dom)
    );

    // The start of the run, drawn in detail.
    let start = span[0].as_u64().unwrap();
    let fragment = format!("#from={start}&to={}", start + 40);
    let dom = render_dom_at(&chromium, &page, &fragment);
    let shot = screenshot(&chromium, &page, &fragment);
    let drawing = Drawing::of(&dom);
    let (from, to) = drawing.view();
    assert!(
        (from - (start as f64 - 0.5)).abs() < 0.01 && (to - (start as f64 + 40.5)).abs() < 0.01,
        "the view asked for: {from}..{to}"
    );
    let ticks = check_axis(&dom, &drawing, &shot);
    assert!(
        ticks.iter().all(|&t| start <= t && t <= start + 40),
        "{ticks:?}"
    );
    check_labels(&dom, &drawing, &shot);
    assert!(drawing.count("data-nodes") > 20 && drawing.count("data-messages") > 5);
    let blue = shot.count(plot.0, plot.1, |px| near(px, colour("#2f6db5"), 30));
    assert!(blue > 200, "dots and arrows are drawn: {blue} pixels");
    assert!(where_line(&dom).contains(&format!("ppd graph --from {start} --to {}", start + 40)));

    // The middle of the run, collapsed: its boxes and its density, and the axis still right.
    let middle = last / 2;
    let fragment = format!("#from={middle}&to={}", middle + 2000);
    let dom = render_dom_at(&chromium, &page, &fragment);
    let shot = screenshot(&chromium, &page, &fragment);
    let drawing = Drawing::of(&dom);
    let ticks = check_axis(&dom, &drawing, &shot);
    assert!(
        ticks.iter().all(|&t| middle <= t && t <= middle + 2000),
        "{ticks:?}"
    );
    assert!(drawing.count("data-runs") > 0);
    let teller = drawing.lanes()[lane_of(&dom, "teller")].1;
    let background = [
        colour("#ffffff"),
        colour("#f7f8fa"),
        colour("#edf0f4"),
        colour("#e3e7ec"),
    ];
    let drawn = shot.columns_with(
        left as u32 + 1..right as u32 - 1,
        teller as u32 - 14..teller as u32 + 14,
        |px| !background.iter().any(|&b| near(px, b, 3)),
    );
    assert!(
        drawn > 0.9,
        "the teller's line is drawn across the view: {drawn:.2}"
    );
}

/// A short run is drawn whole, every message an arrow, each line in its colour along the
/// times its process has events, with the axis and names; zoomed in, its dots are there.
#[test]
fn a_short_run_is_drawn_whole_and_zooms_in() {
    let Some(chromium) = chromium("a_short_run_is_drawn_whole_and_zooms_in") else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    for (example, busy) in [("bank", "teller"), ("token_ring", "")] {
        let dir = record(work.path(), example);
        let (page, err) = page_of(work.path(), &dir, example, &[]);
        assert!(!err.contains("left out"), "{example} is drawn whole: {err}");
        let dom = render_dom(&chromium, &page);
        let shot = screenshot(&chromium, &page, "");
        let drawing = Drawing::of(&dom);
        let data = page_data(&dom);
        let lanes = data["lanes"].as_array().unwrap().len();
        assert_eq!(drawing.count("data-lines"), lanes);
        assert!(!where_line(&dom).contains("overview"), "{example}");
        assert_eq!(
            drawing.count("data-messages"),
            message_edges(work.path(), &dir)
        );
        assert_eq!(
            drawing.count("data-nodes"),
            data["nodes"].as_array().unwrap().len()
        );
        check_axis(&dom, &drawing, &shot);
        check_labels(&dom, &drawing, &shot);
        for lane in 0..lanes {
            let covered = lane_coverage(&drawing, &shot, lane);
            assert!(covered > 0.0, "{example}: line {lane} shows its colour");
        }
        if !busy.is_empty() {
            let covered = lane_coverage(&drawing, &shot, lane_of(&dom, busy));
            assert!(
                covered > 0.7,
                "{busy} is drawn across the run: {covered:.2}"
            );
        }
        let [left, top, right, bottom] = drawing.plot();
        let fragment = "#from=20&to=60";
        let dom = render_dom_at(&chromium, &page, fragment);
        let shot = screenshot(&chromium, &page, fragment);
        let drawing = Drawing::of(&dom);
        let ticks = check_axis(&dom, &drawing, &shot);
        assert!(ticks.iter().all(|&t| (20..=60).contains(&t)), "{ticks:?}");
        let blue = shot.count(left as u32..right as u32, top as u32..bottom as u32, |px| {
            near(px, colour("#2f6db5"), 30)
        });
        assert!(
            drawing.count("data-nodes") > 5 && blue > 100,
            "{example}: dots in detail ({blue} pixels)"
        );
    }
}
