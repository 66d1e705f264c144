use ppd_formats::event::ObjectKind;
use ppd_formats::{ObjectId, ProcessId};

use super::*;
use crate::trace::{NO_SITE, TraceBuilder};

/// A run of processes that each take and release mutexes in a given pattern: `Some(m)` locks
/// mutex `m` (at line `100 * process + step`), `None` unlocks the last one it holds.
fn run(mutexes: u32, processes: &[&[Option<u32>]]) -> Trace {
    let mut b = Trace::builder();
    let objects: Vec<ObjIdx> = (0..mutexes)
        .map(|m| {
            b.define_object(
                ObjectId::new(ProcessId(0), m),
                ObjectKind::Mutex,
                0,
                Some(&format!("m{m}")),
            )
        })
        .collect();
    for (p, steps) in processes.iter().enumerate() {
        let pi = b.add_process(ProcessId(p as u32), &format!("p{p}"), None);
        let mut held = Vec::new();
        for (s, step) in steps.iter().enumerate() {
            let site = b.site("prog.rs", 100 * p as u32 + s as u32, 1);
            push(&mut b, pi, &objects, &mut held, *step, site);
        }
    }
    b.build()
}

fn push(
    b: &mut TraceBuilder,
    p: u32,
    objects: &[ObjIdx],
    held: &mut Vec<ObjIdx>,
    step: Option<u32>,
    site: SiteId,
) {
    match step {
        Some(m) => {
            let object = objects[m as usize];
            held.push(object);
            b.push(
                p,
                Op::Lock {
                    object,
                    version: 0,
                    prev: None,
                },
                site,
            );
        }
        None => {
            let object = held.pop().expect("a held mutex");
            b.push(p, Op::Unlock { object }, site);
        }
    }
}

/// Each cycle as its steps' (held, acquired) mutex pairs.
fn cycles(trace: &Trace) -> Vec<Vec<(ObjIdx, ObjIdx)>> {
    potential_deadlocks(trace)
        .0
        .iter()
        .map(|d| d.edges.iter().map(|e| (e.held, e.acquired)).collect())
        .collect()
}

#[test]
fn two_processes_in_opposite_orders_form_a_cycle() {
    let t = run(
        2,
        &[
            &[Some(0), Some(1), None, None],
            &[Some(1), Some(0), None, None],
        ],
    );
    assert_eq!(cycles(&t), vec![vec![(0, 1), (1, 0)]]);
    let d = &potential_deadlocks(&t).0[0];
    assert_eq!(d.edges[0].process, 0);
    assert_eq!(d.edges[0].held_at, EventRef::new(0, 0));
    assert_eq!(d.edges[0].acquired_at, EventRef::new(0, 1));
    assert_eq!(d.edges[1].process, 1);
}

#[test]
fn the_same_order_everywhere_is_no_cycle() {
    let t = run(
        3,
        &[
            &[Some(0), Some(1), Some(2), None, None, None],
            &[Some(0), Some(2), None, None, Some(1), Some(2), None, None],
        ],
    );
    assert_eq!(cycles(&t), Vec::<Vec<_>>::new());
}

#[test]
fn three_processes_close_a_three_lock_cycle() {
    let t = run(
        3,
        &[
            &[Some(0), Some(1), None, None],
            &[Some(1), Some(2), None, None],
            &[Some(2), Some(0), None, None],
        ],
    );
    assert_eq!(cycles(&t), vec![vec![(0, 1), (1, 2), (2, 0)]]);
}

#[test]
fn a_gate_lock_held_by_both_serializes_the_inversion() {
    let t = run(
        3,
        &[
            &[Some(2), Some(0), Some(1), None, None, None],
            &[Some(2), Some(1), Some(0), None, None, None],
        ],
    );
    assert_eq!(cycles(&t), Vec::<Vec<_>>::new());
    // Without the gate the same inversion is reported.
    let t = run(
        3,
        &[
            &[Some(2), Some(0), Some(1), None, None, None],
            &[Some(1), Some(0), None, None],
        ],
    );
    assert_eq!(cycles(&t), vec![vec![(0, 1), (1, 0)]]);
}

#[test]
fn one_process_inverting_its_own_order_is_no_cycle() {
    let t = run(
        2,
        &[
            &[Some(0), Some(1), None, None, Some(1), Some(0), None, None],
            &[Some(0), None, Some(1), None],
        ],
    );
    assert_eq!(cycles(&t), Vec::<Vec<_>>::new());
}

#[test]
fn unlocking_out_of_order_releases_the_right_mutex() {
    // p0 takes 0 then 1, releases 0 first (dropping the guards out of order), then takes 2
    // while holding only 1: the edges are 0 -> 1 and 1 -> 2, not 0 -> 2.
    let mut b = Trace::builder();
    let m: Vec<ObjIdx> = (0..3)
        .map(|i| b.define_object(ObjectId::new(ProcessId(0), i), ObjectKind::Mutex, 0, None))
        .collect();
    let p = b.add_process(ProcessId(0), "p0", None);
    let lock = |object| Op::Lock {
        object,
        version: 0,
        prev: None,
    };
    b.push(p, lock(m[0]), NO_SITE);
    b.push(p, lock(m[1]), NO_SITE);
    b.push(p, Op::Unlock { object: m[0] }, NO_SITE);
    b.push(p, lock(m[2]), NO_SITE);
    let (edges, stats) = lock_order_edges(&b.build());
    let pairs: Vec<_> = edges.iter().map(|e| (e.held, e.acquired)).collect();
    assert_eq!(pairs, vec![(m[0], m[1]), (m[1], m[2])]);
    assert_eq!(stats.acquisitions, 3);
}

#[test]
fn five_philosophers_with_one_reversed_form_one_five_lock_cycle() {
    let mut procs: Vec<Vec<Option<u32>>> = (0..5u32)
        .map(|i| vec![Some(i), Some((i + 1) % 5), None, None])
        .collect();
    assert_eq!(
        cycles(&run(
            5,
            &procs.iter().map(Vec::as_slice).collect::<Vec<_>>()
        )),
        vec![vec![(0, 1), (1, 2), (2, 3), (3, 4), (4, 0)]]
    );
    // Everyone taking the lower-numbered fork first breaks the cycle.
    procs[4] = vec![Some(0), Some(4), None, None];
    assert_eq!(
        cycles(&run(
            5,
            &procs.iter().map(Vec::as_slice).collect::<Vec<_>>()
        )),
        Vec::<Vec<_>>::new()
    );
}

#[test]
fn an_acquisition_by_try_lock_closes_no_cycle() {
    // p0 locks m0 then m1; p1 holds m1 and takes m0 with `try_lock`, which never waits.
    let mut b = Trace::builder();
    let m: Vec<ObjIdx> = (0..2)
        .map(|k| b.define_object(ObjectId::new(ProcessId(0), k), ObjectKind::Mutex, 0, None))
        .collect();
    let site = b.site("prog.rs", 1, 1);
    let lock = |object| Op::Lock {
        object,
        version: 0,
        prev: None,
    };
    let p0 = b.add_process(ProcessId(0), "p0", None);
    for op in [lock(m[0]), lock(m[1]), Op::Unlock { object: m[1] }] {
        b.push(p0, op, site);
    }
    let p1 = b.add_process(ProcessId(1), "p1", None);
    let tried = Op::Outcome {
        object: m[0],
        outcome: Outcome::Acquired,
    };
    for op in [lock(m[1]), tried, lock(m[0])] {
        b.push(p1, op, site);
    }
    let t = b.build();
    assert_eq!(cycles(&t), Vec::<Vec<(ObjIdx, ObjIdx)>>::new());
    // p1's step m1 -> m0 is no edge; with `lock` it would close the cycle of the test above.
    let (edges, _) = lock_order_edges(&t);
    assert_eq!(edges.len(), 1, "only p0's step m0 -> m1: {edges:?}");
}
