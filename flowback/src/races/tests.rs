use std::collections::BTreeMap;

use ppd_formats::event::{AtomicOp, MemOrdering, ObjectKind};
use ppd_formats::{ObjectId, ProcessId};
use proptest::prelude::*;

use super::*;
use crate::synth::{self, Shape};
use crate::testing::{reference_clocks, reference_races};
use crate::trace::{NO_SITE, Op};
use crate::vclock::hb::AccessClass;

fn found(trace: &Trace) -> BTreeMap<(ObjIdx, u32, u32), u64> {
    data_races(trace)
        .into_iter()
        .map(|r| {
            let (sa, sb) = (trace.event(r.a).site, trace.event(r.b).site);
            ((r.object, sa.min(sb), sa.max(sb)), r.count)
        })
        .collect()
}

/// The detector reports exactly the racing site pairs of the definition, computed by brute
/// force over every pair of accesses with independently computed clocks, counts included.
fn same_as_the_definition(trace: &Trace) {
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
fn every_racing_site_pair_is_reported_with_its_count_on_synthetic_runs() {
    for seed in 0..200 {
        let shape = if seed % 2 == 0 {
            Shape::mixed(2 + (seed % 6) as u32, 400)
        } else {
            Shape::atomics(2 + (seed % 4) as u32, 400, 3, (seed * 7 % 60) as u32)
        };
        same_as_the_definition(&synth::execution(&shape, seed));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]
    #[test]
    fn every_racing_site_pair_is_reported_with_its_count_on_random_shapes(
        processes in 2u32..7,
        events in 20u64..600,
        variables in 1u32..5,
        relaxed in 0u32..100,
        seed in any::<u64>(),
    ) {
        same_as_the_definition(&synth::execution(&Shape::atomics(processes, events, variables, relaxed), seed));
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

/// Two processes with no synchronization between them: `writer` stores at site 1 three times,
/// then at site 2 once; `reader` loads at site 3 twice, after all of them in memory order.
/// The detector compares each load with the writer's last store only (site 2); the stores at
/// site 1 are as unordered with the loads and must be named and counted too.
#[test]
fn an_earlier_access_from_another_site_of_the_same_process_is_reported_and_counted() {
    let mut b = Trace::builder();
    let writer = b.add_process(ProcessId(0), "writer", None);
    let reader = b.add_process(ProcessId(1), "reader", None);
    let x = b.define_object(
        ObjectId::new(ProcessId(0), 0),
        ObjectKind::Atomic,
        0,
        Some("x"),
    );
    let sites: Vec<SiteId> = (1..=3).map(|l| b.site("racy.rs", l, 1)).collect();
    let mut version = 0;
    let mut access = |b: &mut crate::trace::TraceBuilder, p, op, site| {
        version += 1;
        b.push(
            p,
            Op::Atomic {
                object: x,
                version,
                prev: None,
                op,
                ordering: MemOrdering::Relaxed,
            },
            site,
        );
    };
    for _ in 0..3 {
        access(&mut b, writer, AtomicOp::Store, sites[0]);
    }
    access(&mut b, writer, AtomicOp::Store, sites[1]);
    for _ in 0..2 {
        access(&mut b, reader, AtomicOp::Load, sites[2]);
    }
    let trace = b.build();
    let expected: BTreeMap<_, _> = [((x, sites[0], sites[2]), 6), ((x, sites[1], sites[2]), 2)]
        .into_iter()
        .collect();
    assert_eq!(found(&trace), expected);
    same_as_the_definition(&trace);
}
