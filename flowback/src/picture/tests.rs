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
