//! Data edges of the parallel dynamic graph through shared memory: which write each atomic read
//! read (Miller & Choi §6.3 extend data dependences across processes along the graph).
//!
//! An atomic's accesses are logged in version order, the order they reached memory, so the
//! write a load, a read-modify-write or a failed compare-exchange read is the latest writing
//! access before it. An edge is drawn when the two are in different processes, whatever the
//! orderings: a relaxed load that read another process's store has a data edge and no
//! happened-before edge. A mutex's value travels along its lock edges (each acquisition reads
//! what the previous holder released); which earlier holder wrote it is known only from the
//! holders' traces, which `ppd why` follows.

use std::collections::HashMap;

use ppd_formats::event::{AtomicOp, MemOrdering};
use ppd_formats::order;

use crate::trace::{EventRef, ObjIdx, Op, Trace};

/// A read of a value another process wrote.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ReadsFrom {
    /// The write.
    pub from: EventRef,
    /// The read.
    pub to: EventRef,
    /// The atomic.
    pub object: ObjIdx,
    /// Whether a releasing write was read by an acquiring read (`ppd_formats::order`): the
    /// pictures give such a pair its own dots, while relaxed data flow between local events
    /// is bundled with them.
    pub synchronizes: bool,
}

/// The name of the edge kind in diagrams and exports.
pub(crate) const KIND: &str = "reads_from";

/// Every read of an atomic whose value another process wrote, in version order per object.
pub(crate) fn reads_from(trace: &Trace) -> Vec<ReadsFrom> {
    let mut accesses: HashMap<ObjIdx, Vec<(u64, EventRef, AtomicOp, MemOrdering)>> = HashMap::new();
    for (p, process) in trace.processes().iter().enumerate() {
        for (k, ev) in process.events.iter().enumerate() {
            if let Op::Atomic {
                object,
                version,
                op,
                ordering,
                ..
            } = ev.op
            {
                accesses.entry(object).or_default().push((
                    version,
                    EventRef::new(p as u32, k as u32),
                    op,
                    ordering,
                ));
            }
        }
    }
    let mut objects: Vec<_> = accesses.into_iter().collect();
    objects.sort_unstable_by_key(|(object, _)| *object);
    let mut edges = Vec::new();
    for (object, mut list) in objects {
        list.sort_unstable_by_key(|(version, ..)| *version);
        let mut written: Option<(EventRef, bool)> = None;
        for (_, at, op, ordering) in list {
            let reads = match op {
                AtomicOp::Load | AtomicOp::Rmw | AtomicOp::CasFail => true,
                AtomicOp::Store => false,
            };
            if reads
                && let Some((from, released)) = written
                && from.process != at.process
            {
                edges.push(ReadsFrom {
                    from,
                    to: at,
                    object,
                    synchronizes: released && order::acquires(op, ordering),
                });
            }
            if op.writes() {
                written = Some((at, order::releases(op, ordering)));
            }
        }
    }
    edges
}

#[cfg(test)]
mod tests {
    use ppd_formats::ObjectId;
    use ppd_formats::event::MemOrdering;

    use super::*;
    use crate::trace::{NO_SITE, TraceBuilder};

    /// Appends an access to `object` to process `at`'s events.
    fn atomic(
        b: &mut TraceBuilder,
        object: ObjIdx,
        at: u32,
        version: u64,
        op: AtomicOp,
        ordering: MemOrdering,
    ) -> EventRef {
        b.push(
            at,
            Op::Atomic {
                object,
                version,
                prev: None,
                op,
                ordering,
            },
            NO_SITE,
        )
    }

    #[test]
    fn a_read_is_linked_to_the_latest_write_before_it_in_another_process() {
        let mut b = Trace::builder();
        let (p, q, r) = (
            b.add_process(ppd_formats::ProcessId(0), "p", None),
            b.add_process(ppd_formats::ProcessId(1), "q", None),
            b.add_process(ppd_formats::ProcessId(2), "r", None),
        );
        let object = b.object(ObjectId(7));
        let access = |b: &mut TraceBuilder, at, version, op| {
            atomic(b, object, at, version, op, MemOrdering::Relaxed)
        };
        let store = access(&mut b, p, 1, AtomicOp::Store);
        let _own = access(&mut b, p, 2, AtomicOp::Load);
        let rmw = access(&mut b, q, 3, AtomicOp::Rmw);
        let load = access(&mut b, r, 5, AtomicOp::Load);
        let failed = access(&mut b, p, 4, AtomicOp::CasFail);
        let trace = b.build();
        let edges: Vec<(EventRef, EventRef)> =
            reads_from(&trace).iter().map(|e| (e.from, e.to)).collect();
        // p's own load reads p's store: no edge; the failed compare-exchange (version 4) and
        // the load (version 5) read q's read-modify-write.
        assert_eq!(edges, [(store, rmw), (rmw, failed), (rmw, load)]);
        assert!(
            reads_from(&trace).iter().all(|e| !e.synchronizes),
            "all relaxed"
        );
    }

    #[test]
    fn a_release_write_read_by_an_acquire_read_synchronizes() {
        let mut b = Trace::builder();
        let (p, q) = (
            b.add_process(ppd_formats::ProcessId(0), "p", None),
            b.add_process(ppd_formats::ProcessId(1), "q", None),
        );
        let object = b.object(ObjectId(7));
        atomic(&mut b, object, p, 1, AtomicOp::Store, MemOrdering::Release);
        atomic(&mut b, object, q, 2, AtomicOp::Load, MemOrdering::Acquire);
        atomic(&mut b, object, q, 3, AtomicOp::Store, MemOrdering::Relaxed);
        atomic(&mut b, object, p, 4, AtomicOp::Load, MemOrdering::Acquire);
        let trace = b.build();
        let synchronizes: Vec<bool> = reads_from(&trace).iter().map(|e| e.synchronizes).collect();
        // Release → Acquire synchronizes; a relaxed store read by an acquire load does not.
        assert_eq!(synchronizes, [true, false]);
    }
}
