use expect_test::expect;
use ppd_formats::event::{AtomicOp, MemOrdering, ObjectKind};
use ppd_formats::{ObjectId, ProcessId};

use super::*;
use crate::synth::{self, Shape};
use crate::testing::reference_clocks;
use crate::trace::{NO_SITE, Trace, TraceBuilder};

/// A main process and `workers` children, spawned at the start.
fn family(workers: u32) -> (TraceBuilder, Vec<u32>) {
    let mut b = Trace::builder();
    let mut ps = vec![b.add_process(ProcessId(0), "main", None)];
    for w in 1..=workers {
        let p = b.add_process(ProcessId(w), &format!("w{w}"), Some(ProcessId(0)));
        b.push(
            0,
            Op::Spawn {
                child: ProcessId(w),
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
        ps.push(p);
    }
    (b, ps)
}

fn object(b: &mut TraceBuilder, n: u32, kind: ObjectKind, init: u64) -> ObjIdx {
    let o = b.define_object(ObjectId::new(ProcessId(0), n), kind, init, None);
    b.push(0, Op::Create { object: o }, NO_SITE);
    o
}

fn atomic(object: ObjIdx, version: u64, op: AtomicOp, ordering: MemOrdering) -> Op {
    Op::Atomic {
        object,
        version,
        prev: None,
        op,
        ordering,
    }
}

fn v(object: ObjIdx, version: u64) -> Op {
    Op::SemRelease {
        object,
        version,
        prev: None,
    }
}

fn p(object: ObjIdx, version: u64) -> Op {
    Op::SemAcquire {
        object,
        version,
        prev: None,
    }
}

fn kinds(clocks: &Clocks) -> Vec<(u32, u32, SyncKind)> {
    clocks
        .edges()
        .iter()
        .filter(|e| !matches!(e.kind, SyncKind::Spawn | SyncKind::Join))
        .map(|e| (e.from.process, e.to.process, e.kind))
        .collect()
}

#[test]
fn clocks_match_the_reference_model_on_synthetic_runs() {
    for seed in 0..40 {
        let shape = Shape::mixed(2 + (seed % 5) as u32, 300 + seed * 10);
        let trace = synth::execution(&shape, seed);
        let clocks = Clocks::compute(&trace);
        let reference = reference_clocks(&trace);
        for (p, per_event) in reference.iter().enumerate() {
            for (k, expected) in per_event.iter().enumerate() {
                let e = EventRef::new(p as u32, k as u32);
                assert_eq!(&clocks.vector(e), expected, "seed {seed}, {e:?}");
            }
        }
        assert!(
            clocks.notes().is_empty(),
            "seed {seed}: {:?}",
            clocks.notes()
        );
    }
}

#[test]
fn message_clocks_follow_fidge() {
    let (mut b, ps) = family(2);
    let ch = object(&mut b, 0, ObjectKind::Channel, 0);
    b.push(
        ps[1],
        Op::Send {
            channel: ch,
            seq: 1,
        },
        NO_SITE,
    );
    b.push(ps[2], Op::Clock, NO_SITE);
    b.push(
        ps[2],
        Op::Recv {
            channel: ch,
            sender: ProcessId(1),
            seq: 1,
        },
        NO_SITE,
    );
    b.push(ps[2], Op::Exit, NO_SITE);
    b.push(ps[1], Op::Exit, NO_SITE);
    b.push(
        0,
        Op::Join {
            child: ProcessId(2),
        },
        NO_SITE,
    );
    let trace = b.build();
    let clocks = Clocks::compute(&trace);
    let mut out = String::new();
    for (p, proc) in trace.processes().iter().enumerate() {
        for (k, ev) in proc.events.iter().enumerate() {
            let v = clocks.vector(EventRef::new(p as u32, k as u32));
            out.push_str(&format!(
                "{} {k} {:<6} {v:?}\n",
                proc.name,
                ev.op.kind_name()
            ));
        }
    }
    expect![[r#"
        main 0 spawn  [1, 0, 0]
        main 1 spawn  [2, 0, 0]
        main 2 create [3, 0, 0]
        main 3 join   [4, 2, 4]
        w1 0 start  [1, 1, 0]
        w1 1 send   [1, 2, 0]
        w1 2 exit   [1, 3, 0]
        w2 0 start  [2, 0, 1]
        w2 1 clock  [2, 0, 2]
        w2 2 recv   [2, 2, 3]
        w2 3 exit   [2, 2, 4]
    "#]]
    .assert_eq(&out);
    assert_eq!(clocks.checkpoint_count(), 4);
}

/// Miller & Choi §6.2.1: a V that lets a blocked P through, and a V taking the value from 0
/// to 1 followed by a P of another process; and ppd's generalization to any P that took
/// another process's permit.
#[test]
fn semaphore_edges_cover_both_cases_of_section_6_2_1_and_permits() {
    // Case 1: w1 blocks in P, w2's V unblocks it.
    let (mut b, ps) = family(2);
    let s = object(&mut b, 0, ObjectKind::Semaphore, 0);
    b.push(ps[1], Op::Blocked { object: s }, NO_SITE);
    b.push(ps[2], v(s, 1), NO_SITE);
    b.push(ps[1], p(s, 2), NO_SITE);
    let clocks = Clocks::compute(&b.build());
    assert_eq!(kinds(&clocks), vec![(2, 1, SyncKind::SemUnblock)]);

    // Case 2: V takes 0 → 1 and the next operation is another process's P.
    let (mut b, ps) = family(2);
    let s = object(&mut b, 0, ObjectKind::Semaphore, 0);
    b.push(ps[2], v(s, 1), NO_SITE);
    b.push(ps[1], p(s, 2), NO_SITE);
    let clocks = Clocks::compute(&b.build());
    assert_eq!(kinds(&clocks), vec![(2, 1, SyncKind::SemZeroToOne)]);

    // Beyond: V V then P P — the second P takes the second V's permit.
    let (mut b, ps) = family(3);
    let s = object(&mut b, 0, ObjectKind::Semaphore, 0);
    b.push(ps[2], v(s, 1), NO_SITE);
    b.push(ps[3], v(s, 2), NO_SITE);
    b.push(ps[1], p(s, 3), NO_SITE);
    b.push(ps[1], p(s, 4), NO_SITE);
    let clocks = Clocks::compute(&b.build());
    assert_eq!(
        kinds(&clocks),
        vec![(2, 1, SyncKind::SemPermit), (3, 1, SyncKind::SemPermit)]
    );

    // Initial permits order nothing.
    let (mut b, ps) = family(2);
    let s = object(&mut b, 0, ObjectKind::Semaphore, 2);
    b.push(ps[1], p(s, 1), NO_SITE);
    b.push(ps[2], p(s, 2), NO_SITE);
    b.push(ps[1], v(s, 3), NO_SITE);
    let clocks = Clocks::compute(&b.build());
    assert_eq!(kinds(&clocks), vec![]);
}

#[test]
fn atomics_synchronize_release_to_acquire_through_release_sequences() {
    use AtomicOp::*;
    use MemOrdering::*;
    // Release store → acquire load: an edge. A relaxed store ends the release sequence: an
    // acquire load of it takes nothing, so w3, which nothing else orders after w1, stays
    // unordered with w1's release store (were the sequence left running, w3 would read w1's
    // release through it).
    let (mut b, ps) = family(3);
    let a = object(&mut b, 0, ObjectKind::Atomic, 0);
    b.push(ps[1], atomic(a, 1, Store, Release), NO_SITE);
    b.push(ps[2], atomic(a, 2, Load, Acquire), NO_SITE);
    b.push(ps[1], atomic(a, 3, Store, Relaxed), NO_SITE);
    let read_after_the_end = b.push(ps[3], atomic(a, 4, Load, Acquire), NO_SITE);
    let clocks = Clocks::compute(&b.build());
    assert_eq!(kinds(&clocks), vec![(1, 2, SyncKind::Atomic)]);
    assert!(!clocks.happened_before(EventRef::new(1, 1), read_after_the_end));

    // A relaxed read-modify-write of a third process continues w1's release sequence.
    let (mut b, ps) = family(3);
    let a = object(&mut b, 0, ObjectKind::Atomic, 0);
    b.push(ps[1], atomic(a, 1, Store, Release), NO_SITE);
    b.push(ps[2], atomic(a, 2, Rmw, Relaxed), NO_SITE);
    b.push(ps[3], atomic(a, 3, Load, Acquire), NO_SITE);
    let clocks = Clocks::compute(&b.build());
    assert_eq!(kinds(&clocks), vec![(1, 3, SyncKind::Atomic)]);
    let trace_w2 = EventRef::new(2, 1);
    assert!(!clocks.happened_before(EventRef::new(1, 1), trace_w2));

    // Read-modify-writes with acquire-release ordering chain: counter-style.
    let (mut b, ps) = family(3);
    let a = object(&mut b, 0, ObjectKind::Atomic, 0);
    b.push(ps[1], atomic(a, 1, Rmw, SeqCst), NO_SITE);
    b.push(ps[2], atomic(a, 2, Rmw, SeqCst), NO_SITE);
    b.push(ps[3], atomic(a, 3, Rmw, SeqCst), NO_SITE);
    let clocks = Clocks::compute(&b.build());
    assert_eq!(
        kinds(&clocks),
        vec![(1, 2, SyncKind::Atomic), (2, 3, SyncKind::Atomic)]
    );
}

#[test]
fn lock_edges_go_from_the_previous_holders_unlock() {
    let (mut b, ps) = family(2);
    let m = object(&mut b, 0, ObjectKind::Mutex, 0);
    b.push(
        ps[1],
        Op::Lock {
            object: m,
            version: 1,
            prev: None,
        },
        NO_SITE,
    );
    b.push(ps[1], Op::Unlock { object: m }, NO_SITE);
    b.push(ps[2], Op::Blocked { object: m }, NO_SITE);
    b.push(
        ps[2],
        Op::Lock {
            object: m,
            version: 2,
            prev: Some(ProcessId(1)),
        },
        NO_SITE,
    );
    b.push(ps[2], Op::Unlock { object: m }, NO_SITE);
    b.push(
        ps[2],
        Op::Lock {
            object: m,
            version: 3,
            prev: Some(ProcessId(2)),
        },
        NO_SITE,
    );
    let clocks = Clocks::compute(&b.build());
    assert_eq!(kinds(&clocks), vec![(1, 2, SyncKind::Lock)]);
    assert_eq!(
        clocks
            .edges()
            .iter()
            .find(|e| e.kind == SyncKind::Lock)
            .unwrap()
            .from,
        EventRef::new(1, 2)
    );
}

/// A crash leaves a receive whose send never made it to disk, a version gap, and two
/// processes each waiting for the other (only a damaged log can say that): the computation
/// ends, says what it worked around, and still orders what it can.
#[test]
fn damaged_recordings_are_stamped_without_hanging() {
    let (mut b, ps) = family(2);
    let ch = object(&mut b, 0, ObjectKind::Channel, 0);
    let a = object(&mut b, 1, ObjectKind::Atomic, 0);
    // Gap: version 2 of `a` was never logged.
    b.push(
        ps[1],
        atomic(a, 1, AtomicOp::Store, MemOrdering::Release),
        NO_SITE,
    );
    b.push(
        ps[2],
        atomic(a, 3, AtomicOp::Load, MemOrdering::Acquire),
        NO_SITE,
    );
    // Each receives what the other sends after its receive: impossible, so one is forced.
    b.push(
        ps[1],
        Op::Recv {
            channel: ch,
            sender: ProcessId(2),
            seq: 2,
        },
        NO_SITE,
    );
    b.push(
        ps[1],
        Op::Send {
            channel: ch,
            seq: 1,
        },
        NO_SITE,
    );
    b.push(
        ps[2],
        Op::Recv {
            channel: ch,
            sender: ProcessId(1),
            seq: 1,
        },
        NO_SITE,
    );
    b.push(
        ps[2],
        Op::Send {
            channel: ch,
            seq: 2,
        },
        NO_SITE,
    );
    // A receive of a message nobody logged.
    b.push(
        ps[2],
        Op::Recv {
            channel: ch,
            sender: ProcessId(1),
            seq: 9,
        },
        NO_SITE,
    );
    let trace = b.build();
    let clocks = Clocks::compute(&trace);
    assert_eq!(clocks.notes().len(), 2, "{:?}", clocks.notes());
    assert!(clocks.notes()[0].contains("never logged"));
    assert!(clocks.notes()[1].contains("never happens"));
    assert!(clocks.happened_before(EventRef::new(1, 1), EventRef::new(2, 1)));
    // Of the two receives that wait for each other, exactly one gets its message edge; the
    // receive of the message nobody logged gets none.
    let messages: Vec<(EventRef, EventRef)> = clocks
        .edges()
        .iter()
        .filter(|e| e.kind == SyncKind::Message)
        .map(|e| (e.from, e.to))
        .collect();
    assert_eq!(messages.len(), 1, "{messages:?}");
    assert!(
        [
            (EventRef::new(1, 3), EventRef::new(2, 2)),
            (EventRef::new(2, 3), EventRef::new(1, 2)),
        ]
        .contains(&messages[0]),
        "{messages:?}"
    );
    // What is stamped is still a partial order: no two events each happened before the other,
    // and the spawns still order main before every event of its children.
    let events: Vec<EventRef> = (0..trace.processes().len() as u32)
        .flat_map(|p| (0..trace.process(p).events.len() as u32).map(move |k| EventRef::new(p, k)))
        .collect();
    for &a in &events {
        for &b in &events {
            assert!(
                a == b || !(clocks.happened_before(a, b) && clocks.happened_before(b, a)),
                "{a:?} and {b:?} each happened before the other"
            );
        }
        if a.process != 0 {
            assert!(clocks.happened_before(EventRef::new(0, 0), a), "{a:?}");
        }
    }
}

#[test]
fn ranks_close_version_gaps() {
    let (mut b, ps) = family(1);
    let a = object(&mut b, 0, ObjectKind::Atomic, 0);
    for v in [1, 2, 5, 7] {
        b.push(
            ps[1],
            atomic(a, v, AtomicOp::Load, MemOrdering::Relaxed),
            NO_SITE,
        );
    }
    let ranks = Ranks::compute(&b.build());
    assert_eq!([1, 2, 5, 7].map(|v| ranks.rank(a, v)), [1, 2, 3, 4]);
    assert_eq!(ranks.gaps().collect::<Vec<_>>(), vec![(a, 3)]);
}

/// Versions that number as many as the largest but repeat one (1, 1, 3: version 2 was never
/// logged) are not taken for the dense 1..=3: the access of version 3 is the second, and one
/// access is missing.
#[test]
fn a_repeated_version_is_no_dense_numbering() {
    let (mut b, ps) = family(2);
    let o = object(&mut b, 0, ObjectKind::Atomic, 0);
    let store = |version| atomic(o, version, AtomicOp::Store, MemOrdering::Relaxed);
    b.push(ps[1], store(1), NO_SITE);
    b.push(ps[2], store(1), NO_SITE);
    b.push(ps[2], store(3), NO_SITE);
    let ranks = Ranks::compute(&b.build());
    assert_eq!(ranks.rank(o, 3), 2);
    assert_eq!(ranks.gaps().collect::<Vec<_>>(), vec![(o, 1)]);
}

/// Versions 1..=count in any order across processes are dense: the rank is the version.
#[test]
fn versions_one_to_count_are_their_own_ranks() {
    let (mut b, ps) = family(2);
    let o = object(&mut b, 0, ObjectKind::Atomic, 0);
    let store = |version| atomic(o, version, AtomicOp::Store, MemOrdering::Relaxed);
    b.push(ps[1], store(3), NO_SITE);
    b.push(ps[2], store(1), NO_SITE);
    b.push(ps[2], store(2), NO_SITE);
    let ranks = Ranks::compute(&b.build());
    assert!(ranks.sorted[o as usize].is_none());
    assert_eq!(ranks.gaps().count(), 0);
}

fn stream_write(b: &mut TraceBuilder, p: u32, socket: ObjIdx, seq: u64) -> EventRef {
    b.push(
        p,
        Op::NetWrite {
            socket,
            seq,
            datagram: false,
        },
        NO_SITE,
    )
}

fn stream_read(b: &mut TraceBuilder, p: u32, socket: ObjIdx, from: (ObjIdx, u64)) -> EventRef {
    b.push(
        p,
        Op::NetRead {
            socket,
            peer: from.0,
            seq: from.1,
            datagram: false,
            end: false,
        },
        NO_SITE,
    )
}

#[test]
fn every_read_of_a_stream_write_read_in_pieces_comes_after_it() {
    // The writer sends a frame in one write and later two more; the reader takes the first
    // in two pieces (a length, then the body), then one read that ends in the third write.
    let mut b = Trace::builder();
    let writer = b.add_process(ProcessId(0), "writer", None);
    let reader = b.add_process(ProcessId(1), "reader", None);
    let (out, inn) = (
        b.object(ObjectId::new(ProcessId(9), 0)),
        b.object(ObjectId::new(ProcessId(9), 1)),
    );
    let w1 = stream_write(&mut b, writer, out, 1);
    let w2 = stream_write(&mut b, writer, out, 2);
    let w3 = stream_write(&mut b, writer, out, 3);
    let head = stream_read(&mut b, reader, inn, (out, 1));
    let body = stream_read(&mut b, reader, inn, (out, 1));
    let rest = stream_read(&mut b, reader, inn, (out, 3));
    let trace = b.build();
    let clocks = Clocks::compute(&trace);
    assert_eq!(clocks.notes(), &[] as &[String]);
    assert!(clocks.happened_before(w1, head));
    assert!(clocks.happened_before(w1, body));
    assert!(!clocks.happened_before(w2, body));
    assert!(clocks.happened_before(w2, rest) && clocks.happened_before(w3, rest));
}

/// A store that says it holds one event more than it gives: a log that changed on disk
/// between being counted and being read again.
#[derive(Debug)]
struct OneShort(Vec<Ev>);

impl crate::trace::EventStore for OneShort {
    type Iter<'a> = std::iter::Copied<std::slice::Iter<'a, Ev>>;

    fn len(&self) -> usize {
        self.0.len() + 1
    }

    fn at(&self, k: usize) -> Option<Ev> {
        self.0.get(k).copied()
    }

    fn iter_from(&self, k: usize) -> Self::Iter<'_> {
        self.0.get(k..).unwrap_or_default().iter().copied()
    }
}

#[test]
fn a_store_that_gives_fewer_events_than_it_counted_ends_its_process_there_with_a_note() {
    let (mut b, ps) = family(2);
    let ch = object(&mut b, 0, ObjectKind::Channel, 0);
    b.push(
        ps[1],
        Op::Send {
            channel: ch,
            seq: 1,
        },
        NO_SITE,
    );
    b.push(
        ps[2],
        Op::Recv {
            channel: ch,
            sender: ProcessId(1),
            seq: 1,
        },
        NO_SITE,
    );
    let trace = b.build().map_events(|_, events| OneShort(events));
    let mut marks = ();
    let notes = Clocks::stream(&trace, &mut marks);
    let held = "it held when it was first read";
    assert_eq!(
        notes,
        [
            format!("main (p0): its log ended at event 3 of the 4 {held}"),
            format!("w1 (p1): its log ended at event 2 of the 3 {held}"),
            format!("w2 (p2): its log ended at event 2 of the 3 {held}"),
        ]
    );
}
