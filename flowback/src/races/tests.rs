use std::collections::BTreeMap;

use ppd_formats::event::{AtomicOp, MemOrdering, ObjectKind};
use ppd_formats::{ObjectId, ProcessId};
use proptest::prelude::*;

use super::*;
use crate::hb::AccessClass;
use crate::synth::{self, Shape};
use crate::testing::{reference_clocks, reference_races};
use crate::trace::{NO_SITE, Op};

fn found(trace: &Trace) -> BTreeMap<(ObjIdx, u32, u32), u64> {
    data_races(trace)
        .into_iter()
        .map(|r| {
            let (sa, sb) = (trace.event(r.a).site, trace.event(r.b).site);
            ((r.object, sa.min(sb), sa.max(sb)), r.count)
        })
        .collect()
}

/// The epoch-based detector finds exactly what DJIT+ with full clocks finds, pair counts
/// included.
fn same_as_djit(trace: &Trace) {
    let (clocks, races, _) = clocks_and_races(trace);
    assert_eq!(clocks, Clocks::compute(trace), "observing changes nothing");
    let reference = reference_races(trace, &reference_clocks(trace));
    assert_eq!(found(trace), reference);
    // Every reported pair is truly unordered and conflicting.
    for r in races {
        assert!(clocks.concurrent(r.a, r.b));
        let class = |e: EventRef| match trace.event(e).op {
            Op::Atomic { op, ordering, .. } => AccessClass::of(op, ordering),
            _ => unreachable!("races are between atomic accesses"),
        };
        assert!(class(r.a).conflicts(class(r.b)));
    }
}

#[test]
fn the_detector_agrees_with_djit_on_synthetic_runs() {
    for seed in 0..60 {
        let shape = if seed % 2 == 0 {
            Shape::mixed(2 + (seed % 6) as u32, 400)
        } else {
            Shape::atomics(2 + (seed % 4) as u32, 400, 3, (seed * 7 % 60) as u32)
        };
        same_as_djit(&synth::execution(&shape, seed));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn the_detector_agrees_with_djit_on_random_shapes(
        processes in 2u32..7,
        events in 20u64..600,
        variables in 1u32..5,
        relaxed in 0u32..100,
        seed in any::<u64>(),
    ) {
        same_as_djit(&synth::execution(&Shape::atomics(processes, events, variables, relaxed), seed));
    }
}

/// Race-free: everything ordered by locks, release/acquire and joins, with relaxed data
/// accesses in between.
#[test]
fn ordered_runs_report_nothing_and_stay_on_the_fast_path() {
    let mut b = Trace::builder();
    let main = b.add_process(ProcessId(0), "main", None);
    let a = b.define_object(
        ObjectId::new(ProcessId(0), 0),
        ObjectKind::Atomic,
        0,
        Some("x"),
    );
    let flag = b.define_object(
        ObjectId::new(ProcessId(0), 1),
        ObjectKind::Atomic,
        0,
        Some("f"),
    );
    b.push(main, Op::Create { object: a }, NO_SITE);
    b.push(main, Op::Create { object: flag }, NO_SITE);
    let mut version = [0u64; 2];
    let mut access = |b: &mut crate::trace::TraceBuilder, p, o: ObjIdx, op, ordering| {
        version[o as usize] += 1;
        b.push(
            p,
            Op::Atomic {
                object: o,
                version: version[o as usize],
                prev: None,
                op,
                ordering,
            },
            NO_SITE,
        );
    };
    // A chain of 50 processes, each handing the data on with a release store its successor
    // acquires; every access is ordered.
    let mut prev = main;
    for i in 1..=50u32 {
        let p = b.add_process(ProcessId(i), &format!("p{i}"), Some(ProcessId(0)));
        b.push(
            main,
            Op::Spawn {
                child: ProcessId(i),
            },
            NO_SITE,
        );
        b.push(
            p,
            Op::Start {
                parent: Some(ProcessId(0)),
            },
            NO_SITE,
        );
        let _ = prev;
        access(&mut b, p, flag, AtomicOp::Load, MemOrdering::Acquire);
        access(&mut b, p, a, AtomicOp::Load, MemOrdering::Relaxed);
        access(&mut b, p, a, AtomicOp::Store, MemOrdering::Relaxed);
        access(&mut b, p, flag, AtomicOp::Store, MemOrdering::Release);
        prev = p;
    }
    let trace = b.build();
    let (_, races, stats) = clocks_and_races(&trace);
    assert_eq!(races, vec![]);
    assert_eq!(stats.slow_checks, 0, "{stats:?}");
    assert_eq!(stats.accesses, 200);
}
