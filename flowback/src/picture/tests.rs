use ppd_formats::ProcessId;

use super::*;
use crate::halt::CutPoint;
use crate::message_races::message_races;
use crate::races::data_races;
use crate::synth::{self, Shape};

fn diagram(trace: &Trace, cut: Option<&HaltCut>) -> Diagram {
    let clocks = Clocks::compute(trace);
    Diagram::build(
        "test",
        trace,
        &clocks,
        &data_races(trace),
        &message_races(trace, &clocks),
        cut,
    )
}

/// Every event is drawn exactly once (as a dot or inside a box), items on a line move
/// strictly rightwards, and every arrow points rightwards.
#[test]
fn layout_accounts_for_every_event_and_arrows_point_forward() {
    for seed in 0..10 {
        let trace = synth::execution(&Shape::mixed(3 + seed % 4, 2_000), u64::from(seed));
        let d = diagram(&trace, None);
        for (p, proc) in trace.processes().iter().enumerate() {
            let mut items: Vec<(u32, u32, u32)> = d
                .nodes
                .iter()
                .filter(|n| n.lane == p as u32)
                .map(|n| (n.event, 1, n.col))
                .chain(
                    d.runs
                        .iter()
                        .filter(|r| r.lane == p as u32)
                        .map(|r| (r.first, r.count, r.col)),
                )
                .collect();
            items.sort();
            let mut next = 0;
            for w in items.windows(2) {
                assert!(w[0].2 < w[1].2, "columns increase along a line");
            }
            for (first, count, _) in items {
                assert_eq!(first, next, "no gap or overlap");
                next = first + count;
            }
            assert_eq!(next as usize, proc.events.len());
        }
        for a in &d.arrows {
            assert!(d.nodes[a.from as usize].col < d.nodes[a.to as usize].col);
        }
        assert!(d.nodes.len() + d.runs.len() < trace.event_count() as usize);
        assert!(d.columns > 0);
    }
}

#[test]
fn the_cut_crosses_each_line_between_its_last_inside_and_first_outside_event() {
    let trace = synth::execution(&Shape::mixed(3, 300), 5);
    let cut = HaltCut {
        predicate: "p1: mark x".into(),
        cut: vec![
            CutPoint {
                process: 1,
                events: 10,
            },
            CutPoint {
                process: 2,
                events: 0,
            },
        ],
    };
    let d = diagram(&trace, Some(&cut));
    let line = d.cut.as_ref().expect("a cut");
    let col = |lane: u32, event: u32| {
        d.nodes
            .iter()
            .find(|n| n.lane == lane && n.event == event)
            .map(|n| f64::from(n.col))
            .expect("events next to the cut are dots")
    };
    assert!(col(1, 9) < line.cols[1] && line.cols[1] < col(1, 10));
    assert!(line.cols[2] < col(2, 0));
    // Process 0 is not named: all of it is inside.
    let last0 = trace.process(0).events.len() as u32 - 1;
    assert!(line.cols[0] > col(0, last0));
    assert_eq!(trace.process(2).id, ProcessId(2));
}

/// Names come from the program: whatever they contain cannot break out of the page's data
/// or markup.
#[test]
fn hostile_names_are_escaped() {
    let mut b = Trace::builder();
    let p = b.add_process(ProcessId(0), "</script><script>alert(1)</script>", None);
    b.push(
        p,
        crate::trace::Op::Start { parent: None },
        crate::trace::NO_SITE,
    );
    b.push(p, crate::trace::Op::Exit, crate::trace::NO_SITE);
    let d = diagram(&b.build(), None);
    let html = html::render(&d);
    assert_eq!(
        html.matches("<script").count(),
        2,
        "only the page's own scripts"
    );
    let svg = svg::render(&d);
    assert!(!svg.contains("<script"));
    let dot = dot::render(&d);
    assert!(dot.contains("\"</script><script>alert(1)</script> (p0)\""));
}

/// The size estimate printed before a full picture is written is within a factor of two of
/// what each format writes.
#[test]
fn size_estimates_are_within_a_factor_of_two() {
    for seed in 0..6 {
        let trace = synth::execution(&Shape::mixed(3 + seed % 4, 3_000), u64::from(seed));
        let d = diagram(&trace, None);
        let clocks = Clocks::compute(&trace);
        let (data, messages) = (data_races(&trace), message_races(&trace, &clocks));
        let view = View {
            window: Window::all(&trace),
            budget: None,
            chosen: Vec::new(),
        };
        let size = Plan::new(&trace, &clocks, &data, &messages, None, &view).size(&clocks);
        assert_eq!(size.dots, d.nodes.len() as u64);
        assert_eq!(size.arrows, d.arrows.len() as u64);
        assert_eq!(size.runs, d.runs.len() as u64);
        for (name, actual, estimate) in [
            ("svg", svg::render(&d).len(), svg::estimated_bytes(size)),
            ("html", html::render(&d).len(), html::estimated_bytes(size)),
            ("dot", dot::render(&d).len(), dot::estimated_bytes(size)),
        ] {
            let ratio = estimate as f64 / actual as f64;
            eprintln!("{name}: {actual} bytes, estimated {estimate} ({ratio:.2})");
            assert!((0.5..=2.0).contains(&ratio), "{name}: {ratio}");
        }
    }
}

/// The diagram of `view` and the Lamport times it was laid out with.
fn diagram_of_view(trace: &Trace, view: &View) -> (Diagram, Vec<Vec<u32>>) {
    let clocks = Clocks::compute(trace);
    let d = Diagram::build_view(
        "test",
        trace,
        &clocks,
        &data_races(trace),
        &message_races(trace, &clocks),
        None,
        view,
    );
    (d, crate::lamport::lamport(trace, &clocks))
}

/// The views a picture is drawn with: the whole run in full, an overview of it, and a window of
/// some processes and Lamport times.
fn views(trace: &Trace) -> Vec<View> {
    let all = Window::all(trace);
    vec![
        View {
            window: all.clone(),
            budget: None,
            chosen: Vec::new(),
        },
        View {
            window: all,
            budget: Some(60),
            chosen: Vec::new(),
        },
        View {
            window: Window::new(trace, Some(40), Some(400), &[0, 2]).unwrap(),
            budget: None,
            chosen: Vec::new(),
        },
    ]
}

/// However much an overview leaves out, the density counts every event of the window once,
/// in the bin of its Lamport time, and the diagram's span is that of the window's events.
#[test]
fn the_density_counts_every_event_of_the_window_once_in_the_bin_of_its_time() {
    for seed in 0..6u32 {
        let trace = synth::execution(&Shape::mixed(3 + seed % 3, 2_500), u64::from(seed));
        for view in views(&trace) {
            let (d, times) = diagram_of_view(&trace, &view);
            let mut span: Option<(u32, u32)> = None;
            for (lane, l) in d.lanes.iter().enumerate() {
                let p = l.process as usize;
                let mut expected = vec![0u32; d.density.lanes[lane].len()];
                let mut inside = 0;
                for &t in &times[p] {
                    if view.window.from <= t && t <= view.window.to {
                        expected[((t - d.density.from) / d.density.width) as usize] += 1;
                        inside += 1;
                        span = Some(span.map_or((t, t), |(a, b)| (a.min(t), b.max(t))));
                    }
                }
                assert_eq!(d.density.lanes[lane], expected, "seed {seed}, lane {lane}");
                assert_eq!(
                    d.density.lanes[lane]
                        .iter()
                        .map(|&c| u64::from(c))
                        .sum::<u64>(),
                    inside
                );
            }
            assert_eq!(d.span, span, "seed {seed}");
            let bins = d.density.lanes.first().map_or(0, Vec::len);
            assert!(
                bins <= density::MAX_BINS
                    && bins * d.lanes.len() <= density::CELLS.max(64 * d.lanes.len())
            );
            if let Some((from, to)) = d.span {
                assert_eq!(d.density.from, from);
                assert!(
                    u64::from(d.density.from) + bins as u64 * u64::from(d.density.width)
                        > u64::from(to)
                );
            }
        }
    }
}

/// Dots, boxes, bundles and the halt cut are placed at the Lamport times of their events, as
/// the exports place them.
#[test]
fn every_item_is_placed_at_its_lamport_time() {
    for seed in 0..4u64 {
        let trace = synth::execution(&Shape::mixed(4, 2_000), seed);
        for view in views(&trace) {
            let (d, times) = diagram_of_view(&trace, &view);
            let process = |lane: u32| d.lanes[lane as usize].process as usize;
            for n in &d.nodes {
                assert_eq!(n.time, times[process(n.lane)][n.event as usize]);
            }
            for r in &d.runs {
                let t = &times[process(r.lane)];
                assert_eq!(
                    (r.from, r.to),
                    (t[r.first as usize], t[(r.first + r.count - 1) as usize])
                );
            }
            let at = |lane: u32, time: u32| {
                d.nodes.iter().any(|n| n.lane == lane && n.time == time)
                    || d.runs
                        .iter()
                        .any(|r| r.lane == lane && r.from + (r.to - r.from) / 2 == time)
            };
            for b in &d.bundles {
                assert!(
                    at(b.from_lane, b.from_time) && at(b.to_lane, b.to_time),
                    "{b:?}"
                );
                assert!(b.from_time <= b.to_time || b.from_lane != b.to_lane);
            }
            for l in &d.lanes {
                let t = &times[l.process as usize];
                let inside: Vec<u32> = t
                    .iter()
                    .copied()
                    .filter(|&x| view.window.from <= x && x <= view.window.to)
                    .collect();
                assert_eq!(
                    l.span,
                    inside.first().zip(inside.last()).map(|(a, b)| (*a, *b))
                );
            }
        }
    }
    let trace = synth::execution(&Shape::mixed(3, 300), 5);
    let cut = HaltCut {
        predicate: "p1: mark x".into(),
        cut: vec![CutPoint {
            process: 1,
            events: 10,
        }],
    };
    let clocks = Clocks::compute(&trace);
    let times = crate::lamport::lamport(&trace, &clocks);
    let d = diagram(&trace, Some(&cut));
    let line = d.cut.expect("a cut");
    assert!(f64::from(times[1][9]) < line.times[1] && line.times[1] < f64::from(times[1][10]));
    assert!(line.times[0] > f64::from(*times[0].last().unwrap()));
}

/// Every race side, mark and panicked or blocked end of the window is a landmark in the bin of
/// its Lamport time, dot or not.
#[test]
fn landmarks_find_races_marks_and_failed_ends_however_few_dots_fit() {
    for seed in 0..4u64 {
        let trace = synth::execution(&Shape::atomics(3, 3_000, 2, 60), seed);
        let races = data_races(&trace);
        assert!(!races.is_empty(), "seed {seed}: a racy trace");
        for view in views(&trace) {
            let (d, times) = diagram_of_view(&trace, &view);
            for (lane, l) in d.lanes.iter().enumerate() {
                let p = l.process;
                let sides: BTreeSet<u32> = races
                    .iter()
                    .flat_map(|r| [r.a, r.b])
                    .filter(|e| e.process == p)
                    .map(|e| e.index)
                    .filter(|&k| {
                        let t = times[p as usize][k as usize];
                        view.window.from <= t && t <= view.window.to
                    })
                    .collect();
                let mut expected: Vec<(u32, u32)> = Vec::new();
                for k in sides {
                    let bin = (times[p as usize][k as usize] - d.density.from) / d.density.width;
                    match expected.last_mut() {
                        Some((b, n)) if *b == bin => *n += 1,
                        _ => expected.push((bin, 1)),
                    }
                }
                let found = d
                    .landmarks
                    .iter()
                    .find(|m| m.lane == lane as u32 && m.kind == "race")
                    .map_or(Vec::new(), |m| m.bins.clone());
                assert_eq!(found, expected, "seed {seed}, lane {lane}");
            }
        }
    }

    // A mark and a panic: in an overview whose budget holds almost nothing, still found.
    let mut b = Trace::builder();
    let main = b.add_process(ProcessId(0), "main", None);
    let worker = b.add_process(ProcessId(1), "worker", Some(ProcessId(0)));
    let label = b.name("found");
    let message = b.name("boom");
    b.push(main, Op::Start { parent: None }, crate::trace::NO_SITE);
    b.push(
        main,
        Op::Spawn {
            child: ProcessId(1),
        },
        crate::trace::NO_SITE,
    );
    b.push(
        worker,
        Op::Start {
            parent: Some(ProcessId(0)),
        },
        crate::trace::NO_SITE,
    );
    for _ in 0..500 {
        b.push(worker, Op::Clock, crate::trace::NO_SITE);
    }
    b.push(worker, Op::Mark { label }, crate::trace::NO_SITE);
    for _ in 0..500 {
        b.push(worker, Op::Clock, crate::trace::NO_SITE);
    }
    b.push(worker, Op::Panic { message }, crate::trace::NO_SITE);
    b.push(main, Op::Exit, crate::trace::NO_SITE);
    let trace = b.build();
    let view = View {
        window: Window::all(&trace),
        budget: Some(1),
        chosen: Vec::new(),
    };
    let (d, times) = diagram_of_view(&trace, &view);
    assert!(d.overview);
    let bin = |k: usize| (times[1][k] - d.density.from) / d.density.width;
    let kinds: Vec<(&str, Vec<(u32, u32)>)> = d
        .landmarks
        .iter()
        .filter(|m| m.lane == 1)
        .map(|m| (m.kind, m.bins.clone()))
        .collect();
    assert_eq!(
        kinds,
        vec![
            ("panic", vec![(bin(1002), 1)]),
            ("mark", vec![(bin(501), 1)])
        ]
    );
}

/// The page carries what it draws: each item's Lamport time, the density and the landmarks.
#[test]
fn the_page_carries_the_time_axis_density_and_landmarks() {
    let trace = synth::execution(&Shape::atomics(3, 2_000, 2, 60), 1);
    let d = diagram(&trace, None);
    let page = html::render(&d);
    let start = page.find("id=\"ppd-data\">").unwrap() + "id=\"ppd-data\">".len();
    let end = start + page[start..].find("</script>").unwrap();
    let data: serde_json::Value = serde_json::from_str(&page[start..end]).unwrap();
    assert_eq!(data["nodes"][0]["time"], d.nodes[0].time);
    assert_eq!(data["runs"][0]["to"], d.runs[0].to);
    assert_eq!(
        data["density"]["lanes"].as_array().unwrap().len(),
        d.lanes.len()
    );
    assert_eq!(
        data["landmarks"].as_array().unwrap().len(),
        d.landmarks.len()
    );
    assert!(!d.landmarks.is_empty());
    assert_eq!(data["span"][1], d.span.unwrap().1);
    assert!(
        data["nodes"][0].get("col").is_none(),
        "the page has no use for columns"
    );
}
