//! The happened-before rules: which pairs of events of different processes are ordered by a
//! synchronization edge, and how an atomic access is classified.
//!
//! Miller & Choi's parallel dynamic graph (§6.1–6.2) orders events by internal edges (program
//! order) and synchronization edges. ppd has these synchronization edges:
//!
//! | kind | from | to |
//! |---|---|---|
//! | message | `Send` of (channel, seq) | the `Recv` of (channel, seq) |
//! | lock | the `Unlock` of acquisition *v*−1 | the `Lock` of acquisition *v* (its `prev` holder) |
//! | semaphore, unblock (§6.2.1 case 1) | the V whose permit a blocked P took | that P |
//! | semaphore, 0→1 (§6.2.1 case 2) | a V taking the value from 0 to 1 | the P right after it |
//! | semaphore, permit (beyond §6.2.1) | the V whose permit a P took | that P |
//! | atomic | a release write heading the release sequence a read reads from | the acquire read |
//! | spawn | `Spawn` of a child | the child's `Start` |
//! | join | the child's `Exit` or `Panic` | the `Join` |
//!
//! Semaphore permits are matched in order: the *j*-th P (in version order) takes the initial
//! permits while *j* ≤ init, then the permit of the (*j* − init)-th V. That V must have come
//! before the P in every execution with these P's in this order, so the edge is a real
//! dependence. Miller & Choi's two cases are the special cases where the P blocked (the V woke
//! it) or the V found the value 0 and the next operation was the P; ppd draws the edge for every
//! P that took another process's permit, which keeps semaphore-ordered programs race-free when no
//! P ever had to wait.
//!
//! These are the edges of the *memory-model happened-before*, one of the two orders whose edge
//! rules are tabled, kind by kind, in `ppd_formats::order` (the other is the replay order).
//!
//! Atomics follow the C++20/Rust model, evaluated on the recorded memory order (the versions):
//! a read reads from the last write before it; an acquire read (acquire, acq_rel or seq_cst load
//! or read-modify-write, or a failed compare-exchange whose *failure* ordering is acquire or
//! seq_cst) that reads from a write in a release sequence synchronizes with the release write
//! (release, acq_rel or seq_cst store or read-modify-write) heading it. A release sequence is the release write followed by read-modify-writes of any
//! ordering; a plain store ends it. Relaxed accesses order nothing.

use ppd_formats::event::{AtomicOp, MemOrdering};
use serde::{Deserialize, Serialize};

/// The kind of a synchronization edge.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SyncKind {
    /// Send → receive of the same message.
    Message,
    /// Unlock → the next lock of the same mutex.
    Lock,
    /// V → the blocked P it let through (Miller & Choi §6.2.1, first case).
    SemUnblock,
    /// V taking the value from 0 to 1 → the P right after it (§6.2.1, second case).
    SemZeroToOne,
    /// V → the P that took its permit, neither blocked nor right after it.
    SemPermit,
    /// Release write → acquire read that reads from its release sequence.
    Atomic,
    /// Spawn → the child's first event.
    Spawn,
    /// The child's last event → join.
    Join,
}

impl SyncKind {
    /// Every kind.
    pub const ALL: [SyncKind; 8] = [
        SyncKind::Message,
        SyncKind::Lock,
        SyncKind::SemUnblock,
        SyncKind::SemZeroToOne,
        SyncKind::SemPermit,
        SyncKind::Atomic,
        SyncKind::Spawn,
        SyncKind::Join,
    ];

    /// The snake_case name.
    pub fn name(self) -> &'static str {
        match self {
            SyncKind::Message => "message",
            SyncKind::Lock => "lock",
            SyncKind::SemUnblock => "sem_unblock",
            SyncKind::SemZeroToOne => "sem_zero_to_one",
            SyncKind::SemPermit => "sem_permit",
            SyncKind::Atomic => "atomic",
            SyncKind::Spawn => "spawn",
            SyncKind::Join => "join",
        }
    }

    /// The kind with code `c` (the cache stores kinds as codes).
    pub fn from_code(c: u8) -> Option<SyncKind> {
        SyncKind::ALL.get(c as usize).copied()
    }

    /// The kind's code.
    pub fn code(self) -> u8 {
        SyncKind::ALL
            .iter()
            .position(|k| *k == self)
            .map(|i| i as u8)
            .unwrap_or(0)
    }
}

/// How race detection sees an atomic access.
///
/// Relaxed loads and stores are plain data accesses: they order nothing, so two of them (or one
/// and any write) that are unordered race. Every other access is a synchronization operation,
/// like a lock operation: acquire loads, release stores and every read-modify-write (which is
/// indivisible whatever its ordering). Two synchronization operations never race with each
/// other; a data access races with an unordered conflicting synchronization operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum AccessClass {
    /// A relaxed load.
    DataRead,
    /// A relaxed store.
    DataWrite,
    /// An acquire (or stronger) load, or a failed compare-exchange.
    SyncRead,
    /// A release (or stronger) store, or any read-modify-write.
    SyncWrite,
}

impl AccessClass {
    /// The class of an atomic access.
    pub(crate) fn of(op: AtomicOp, ordering: MemOrdering) -> AccessClass {
        match op {
            AtomicOp::Load if ordering == MemOrdering::Relaxed => AccessClass::DataRead,
            AtomicOp::Load | AtomicOp::CasFail => AccessClass::SyncRead,
            AtomicOp::Store if ordering == MemOrdering::Relaxed => AccessClass::DataWrite,
            AtomicOp::Store | AtomicOp::Rmw => AccessClass::SyncWrite,
        }
    }

    /// Whether the access writes.
    pub(crate) const fn writes(self) -> bool {
        matches!(self, AccessClass::DataWrite | AccessClass::SyncWrite)
    }

    /// Whether the access is a plain data access.
    pub(crate) const fn is_data(self) -> bool {
        matches!(self, AccessClass::DataRead | AccessClass::DataWrite)
    }

    /// Whether two unordered accesses of these classes race: they conflict (one writes) and
    /// at least one is a data access.
    pub(crate) const fn conflicts(self, other: AccessClass) -> bool {
        (self.writes() || other.writes()) && (self.is_data() || other.is_data())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use ppd_formats::order::{acquires, releases};

    #[test]
    fn relaxed_loads_and_stores_are_data_and_rmws_never_race_with_each_other() {
        use AccessClass::*;
        let load = AccessClass::of(AtomicOp::Load, MemOrdering::Relaxed);
        let store = AccessClass::of(AtomicOp::Store, MemOrdering::Relaxed);
        let rmw = AccessClass::of(AtomicOp::Rmw, MemOrdering::Relaxed);
        let acq = AccessClass::of(AtomicOp::Load, MemOrdering::Acquire);
        let rel = AccessClass::of(AtomicOp::Store, MemOrdering::Release);
        assert_eq!(
            (load, store, rmw, acq, rel),
            (DataRead, DataWrite, SyncWrite, SyncRead, SyncWrite)
        );
        assert!(load.conflicts(store));
        assert!(store.conflicts(store));
        assert!(!load.conflicts(load));
        assert!(!rmw.conflicts(rmw));
        assert!(!acq.conflicts(rel));
        assert!(load.conflicts(rmw));
        assert!(acq.conflicts(store));
        assert!(!acq.conflicts(load));
    }

    const OPS: [AtomicOp; 4] = AtomicOp::ALL;
    const ORDERINGS: [MemOrdering; 5] = MemOrdering::ALL;

    #[test]
    fn acquire_and_release_follow_the_documented_table_for_every_access() {
        use AtomicOp::*;
        use MemOrdering::*;
        // (op, ordering, acquires, releases), one row per access, as the module docs state.
        let table = [
            (Load, Relaxed, false, false),
            (Load, Release, false, false),
            (Load, Acquire, true, false),
            (Load, AcqRel, true, false),
            (Load, SeqCst, true, false),
            (Store, Relaxed, false, false),
            (Store, Release, false, true),
            (Store, Acquire, false, false),
            (Store, AcqRel, false, true),
            (Store, SeqCst, false, true),
            (Rmw, Relaxed, false, false),
            (Rmw, Release, false, true),
            (Rmw, Acquire, true, false),
            (Rmw, AcqRel, true, true),
            (Rmw, SeqCst, true, true),
            (CasFail, Relaxed, false, false),
            (CasFail, Release, false, false),
            (CasFail, Acquire, true, false),
            (CasFail, AcqRel, true, false),
            (CasFail, SeqCst, true, false),
        ];
        assert_eq!(table.len(), OPS.len() * ORDERINGS.len());
        for (op, ordering, acq, rel) in table {
            assert_eq!(
                acquires(op, ordering),
                acq,
                "acquires({op:?}, {ordering:?})"
            );
            assert_eq!(
                releases(op, ordering),
                rel,
                "releases({op:?}, {ordering:?})"
            );
        }
    }

    #[test]
    fn access_classes_conflict_exactly_as_the_reference_rules_say() {
        use crate::testing::reference_conflict;
        for a in OPS.iter().flat_map(|&op| ORDERINGS.map(|o| (op, o))) {
            for b in OPS.iter().flat_map(|&op| ORDERINGS.map(|o| (op, o))) {
                assert_eq!(
                    AccessClass::of(a.0, a.1).conflicts(AccessClass::of(b.0, b.1)),
                    reference_conflict(a, b),
                    "{a:?} against {b:?}"
                );
            }
        }
    }

    #[test]
    fn kinds_round_trip_through_their_codes() {
        for k in SyncKind::ALL {
            assert_eq!(SyncKind::from_code(k.code()), Some(k));
        }
        assert_eq!(SyncKind::from_code(200), None);
    }
}
