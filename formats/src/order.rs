//! The two orders over a recording's events, and the edge rules of every event kind.
//!
//! Both orders are program order plus edges between processes; they differ in which edges.
//!
//! * The **replay order** is what replay must enforce to reproduce every choice the run made:
//!   the receive of a message after its send, a process's first event after its spawn, a join
//!   after the child's end, and every access to a mutex, semaphore or atomic after the one
//!   before it in version order (for a mutex: each acquisition after the previous release;
//!   for a reader-writer lock: each acquisition and release after the operation before it).
//!   The replay controller keeps vector clocks in this order; the linked predicates of
//!   `ppd replay` (`->`) are evaluated on them.
//! * The **memory-model happened-before** is the order the program's synchronization
//!   guarantees: the same message, spawn, join and mutex edges, but an atomic access orders
//!   only what the C++20/Rust memory model says (a release write heading the release sequence
//!   an acquire read reads from, to that read; relaxed accesses order nothing), and a semaphore
//!   P follows only the V whose permit it took; a reader-writer lock's read hold follows only
//!   the last write hold's release (readers are not ordered among themselves), a write hold
//!   every release before it. Race detection, lock-order analysis, the parallel dynamic graph,
//!   `ppd graph` and the pictures use it.
//!
//! The happened-before is contained in the replay order: every edge of the first is a path of
//! the second, so two events the analysis orders are ordered the same way in any replay.
//!
//! [`Sync`] is an event kind reduced to what the rules read; [`Sync::rule`] is the one table
//! of edges per kind and order. Every consumer (the replay controller, the analysis's clocks,
//! its Lamport times through those clocks, the deadlock analysis) dispatches on it, so a new
//! event kind is added to the table once, and the compiler lists the places that must handle it.

use crate::event::{AtomicOp, Event, MemOrdering, Repr, RwMode};
use crate::ids::{ObjectId, ProcessId};

/// One component of a vector clock: how many events of a process are at or before the stamped
/// event. Every clock in ppd (replay controller, analysis, Lamport times) uses this type.
pub type Tick = u32;

/// Which of the two orders (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Order {
    /// What replay enforces: every choice of the run, in the order it was made.
    Replay,
    /// What the program's synchronization guarantees under the memory model.
    HappenedBefore,
}

/// The part an event plays in synchronization: its kind, with only what the edge rules read.
/// `O` names objects: [`ObjectId`] in logs, an index in analyses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sync<O> {
    /// Orders nothing beyond program order.
    Local,
    /// A process's first event; `spawned` unless it is `main`.
    Start {
        /// Whether a parent spawned it.
        spawned: bool,
    },
    /// Spawned `child`.
    Spawn {
        /// The new process.
        child: ProcessId,
    },
    /// The process's last event (exit or panic).
    End,
    /// Joined `child`.
    Join {
        /// The joined process.
        child: ProcessId,
    },
    /// Sent message `seq` on `channel`.
    Send {
        /// The channel.
        channel: O,
        /// The message's sequence number.
        seq: u64,
    },
    /// Received message `seq` on `channel`.
    Recv {
        /// The channel.
        channel: O,
        /// The message's sequence number.
        seq: u64,
    },
    /// Acquisition `version` of a mutex.
    Lock {
        /// The mutex.
        object: O,
        /// Acquisition number.
        version: u64,
    },
    /// Release of the mutex the process holds.
    Unlock {
        /// The mutex.
        object: O,
    },
    /// Semaphore P, operation `version`.
    SemAcquire {
        /// The semaphore.
        object: O,
        /// Operation number.
        version: u64,
    },
    /// Semaphore V, operation `version`.
    SemRelease {
        /// The semaphore.
        object: O,
        /// Operation number.
        version: u64,
    },
    /// Access `version` of an atomic.
    Atomic {
        /// The atomic.
        object: O,
        /// Access number.
        version: u64,
        /// What it did.
        op: AtomicOp,
        /// The ordering that governed it ([`governing_ordering`]).
        ordering: MemOrdering,
    },
    /// A reader-writer lock acquired, operation `version`.
    RwAcquire {
        /// The lock.
        object: O,
        /// Operation number (acquisitions and releases count alike).
        version: u64,
        /// Read or write.
        mode: RwMode,
    },
    /// A reader-writer lock released, operation `version`.
    RwRelease {
        /// The lock.
        object: O,
        /// Operation number.
        version: u64,
        /// Which hold ended.
        mode: RwMode,
    },
}

/// Where an edge meets: the event that gives a point and the event that takes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Point<O> {
    /// A message, given by its send.
    Message {
        /// The channel.
        channel: O,
        /// The sequence number.
        seq: u64,
    },
    /// A process's spawn, given by its parent.
    Spawned(ProcessId),
    /// A process's end, given by its last event.
    Ended(ProcessId),
    /// The release of a mutex's previous acquisition, given by its unlock.
    Released(O),
    /// The previous access (in version order) of a semaphore or atomic.
    Accessed(O),
}

/// The edges of one event in one order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule<O> {
    /// No edge: program order only.
    Local,
    /// Ends the edge from the event that gives `point`.
    Takes(Point<O>),
    /// Starts the edges to the events that take `point`.
    Gives(Point<O>),
    /// Takes `point`, then gives it anew: each access after the one before it.
    Chains(Point<O>),
    /// A semaphore P: ends the edge from the V whose permit it took (the *j*-th P takes the
    /// initial permits while *j* ≤ init, then the permit of the (*j* − init)-th V).
    TakesPermit(O),
    /// A semaphore V: gives a permit.
    GivesPermit(O),
    /// An atomic access: acquires from the release sequence it reads from, if `acquires`; then
    /// does `sequence` to the object's release sequence.
    Atomic {
        /// The atomic.
        object: O,
        /// What the access did.
        op: AtomicOp,
        /// The ordering that governed it.
        ordering: MemOrdering,
        /// Whether it synchronizes with the release sequence it reads from.
        acquires: bool,
        /// What it does to the release sequence.
        sequence: Sequence,
    },
    /// A reader-writer lock's acquisition: a read takes the release of the last write hold
    /// before it; a write takes every release before it (of readers and of the last writer).
    /// Readers are not ordered among themselves.
    RwAcquire {
        /// The lock.
        object: O,
        /// Read or write.
        mode: RwMode,
    },
    /// A reader-writer lock's release: gives what the acquisitions after it take (see
    /// [`Rule::RwAcquire`]).
    RwRelease {
        /// The lock.
        object: O,
        /// Which hold ended.
        mode: RwMode,
    },
}

/// What an atomic access does to its object's release sequence (C++20 [intro.races]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sequence {
    /// A read leaves it as it is.
    Reads,
    /// A releasing read-modify-write joins it; one that also acquires carries everything before
    /// it, so it alone `heads` the sequence from now on.
    Joins {
        /// Whether it becomes the sequence's only head.
        heads: bool,
    },
    /// A read-modify-write that does not release continues it.
    Continues,
    /// A release store starts a new one, headed by itself.
    Restarts,
    /// A plain store ends it.
    Ends,
}

impl<O: Copy> Sync<O> {
    /// The edges of this event of process `me` in `order`: the one table of edge rules.
    pub fn rule(self, me: ProcessId, order: Order) -> Rule<O> {
        match (self, order) {
            (Sync::Local, _) | (Sync::Start { spawned: false }, _) => Rule::Local,
            (Sync::Start { spawned: true }, _) => Rule::Takes(Point::Spawned(me)),
            (Sync::Spawn { child }, _) => Rule::Gives(Point::Spawned(child)),
            (Sync::End, _) => Rule::Gives(Point::Ended(me)),
            (Sync::Join { child }, _) => Rule::Takes(Point::Ended(child)),
            (Sync::Send { channel, seq }, _) => Rule::Gives(Point::Message { channel, seq }),
            (Sync::Recv { channel, seq }, _) => Rule::Takes(Point::Message { channel, seq }),
            (Sync::Lock { object, .. }, _) => Rule::Takes(Point::Released(object)),
            (Sync::Unlock { object }, _) => Rule::Gives(Point::Released(object)),
            (
                Sync::SemAcquire { object, .. }
                | Sync::SemRelease { object, .. }
                | Sync::Atomic { object, .. }
                | Sync::RwAcquire { object, .. }
                | Sync::RwRelease { object, .. },
                Order::Replay,
            ) => Rule::Chains(Point::Accessed(object)),
            (Sync::RwAcquire { object, mode, .. }, Order::HappenedBefore) => {
                Rule::RwAcquire { object, mode }
            }
            (Sync::RwRelease { object, mode, .. }, Order::HappenedBefore) => {
                Rule::RwRelease { object, mode }
            }
            (Sync::SemAcquire { object, .. }, Order::HappenedBefore) => Rule::TakesPermit(object),
            (Sync::SemRelease { object, .. }, Order::HappenedBefore) => Rule::GivesPermit(object),
            (
                Sync::Atomic {
                    object,
                    op,
                    ordering,
                    ..
                },
                Order::HappenedBefore,
            ) => Rule::Atomic {
                object,
                op,
                ordering,
                acquires: acquires(op, ordering),
                sequence: sequence(op, ordering),
            },
        }
    }

    /// The object and version of a versioned event (lock, semaphore and atomic operations).
    pub fn version(self) -> Option<(O, u64)> {
        match self {
            Sync::Lock { object, version }
            | Sync::SemAcquire { object, version }
            | Sync::SemRelease { object, version }
            | Sync::Atomic {
                object, version, ..
            }
            | Sync::RwAcquire {
                object, version, ..
            }
            | Sync::RwRelease {
                object, version, ..
            } => Some((object, version)),
            Sync::Local
            | Sync::Start { .. }
            | Sync::Spawn { .. }
            | Sync::End
            | Sync::Join { .. }
            | Sync::Send { .. }
            | Sync::Recv { .. }
            | Sync::Unlock { .. } => None,
        }
    }
}

impl<R: Repr> Event<R> {
    /// The part the event plays in synchronization.
    pub fn sync(&self) -> Sync<ObjectId> {
        match *self {
            Event::Start { parent } => Sync::Start {
                spawned: parent.is_some(),
            },
            Event::Spawn { child, .. } => Sync::Spawn { child },
            Event::Join { child, .. } => Sync::Join { child },
            Event::Exit | Event::Panic { .. } => Sync::End,
            Event::Send { channel, seq, .. } => Sync::Send { channel, seq },
            Event::Recv { channel, seq, .. } => Sync::Recv { channel, seq },
            Event::Lock {
                object, version, ..
            } => Sync::Lock { object, version },
            Event::Unlock { object, .. } => Sync::Unlock { object },
            Event::SemAcquire {
                object, version, ..
            } => Sync::SemAcquire { object, version },
            Event::SemRelease {
                object, version, ..
            } => Sync::SemRelease { object, version },
            Event::Atomic {
                object,
                version,
                op,
                ordering,
                failure,
                ..
            } => Sync::Atomic {
                object,
                version,
                op,
                ordering: governing_ordering(op, ordering, failure),
            },
            Event::Create { .. }
            | Event::RecvNone { .. }
            | Event::Select { .. }
            | Event::Clock { .. }
            | Event::Random { .. }
            | Event::EblockEnter { .. }
            | Event::EblockExit { .. }
            | Event::Mark { .. }
            | Event::Blocked { .. }
            | Event::Undelivered { .. }
            | Event::JoinBlocked { .. }
            | Event::Sleep { .. }
            | Event::Answer { .. } => Sync::Local,
            Event::Outcome { .. } => Sync::Local,
            Event::RwAcquire {
                object,
                version,
                mode,
                ..
            } => Sync::RwAcquire {
                object,
                version,
                mode,
            },
            Event::RwRelease {
                object,
                version,
                mode,
                ..
            } => Sync::RwRelease {
                object,
                version,
                mode,
            },
            // A write gives its bytes as message `seq` of its socket; the read that consumes
            // them is on the other end's socket, which only the pairing of the two ends knows
            // (`crate::net`): a read is local here, and the analysis, which pairs the ends,
            // gives it that message's `Recv`. Replay serves a read from its log without waiting
            // for the write, so the replay order (`->`, `--first`) does not hold this edge.
            Event::NetWrite { socket, seq, .. } | Event::NetSendTo { socket, seq, .. } => {
                Sync::Send {
                    channel: socket,
                    seq,
                }
            }
            Event::NetOpen { .. }
            | Event::NetRead { .. }
            | Event::NetRecvFrom { .. }
            | Event::NetFail { .. } => Sync::Local,
        }
    }
}

/// The ordering that governs an atomic access: a failed compare-exchange is ordered by its
/// failure ordering, every other access by its (success) ordering. A failed one without a
/// logged failure ordering (an event built by hand) is taken at the strongest failure ordering
/// its success ordering allows, which is that ordering without its release part.
pub fn governing_ordering(
    op: AtomicOp,
    ordering: MemOrdering,
    failure: Option<MemOrdering>,
) -> MemOrdering {
    match (op, failure) {
        (AtomicOp::CasFail, Some(failure)) => failure,
        (AtomicOp::CasFail, None) => match ordering {
            MemOrdering::Relaxed | MemOrdering::Release => MemOrdering::Relaxed,
            MemOrdering::Acquire | MemOrdering::AcqRel => MemOrdering::Acquire,
            MemOrdering::SeqCst => MemOrdering::SeqCst,
        },
        (AtomicOp::Load | AtomicOp::Store | AtomicOp::Rmw, _) => ordering,
    }
}

/// Whether an atomic access with this (governing) ordering acquires.
pub fn acquires(op: AtomicOp, ordering: MemOrdering) -> bool {
    match op {
        AtomicOp::Store => false,
        AtomicOp::Load | AtomicOp::Rmw | AtomicOp::CasFail => matches!(
            ordering,
            MemOrdering::Acquire | MemOrdering::AcqRel | MemOrdering::SeqCst
        ),
    }
}

/// Whether an atomic access with this (governing) ordering releases.
pub fn releases(op: AtomicOp, ordering: MemOrdering) -> bool {
    match op {
        AtomicOp::Load | AtomicOp::CasFail => false,
        AtomicOp::Store | AtomicOp::Rmw => matches!(
            ordering,
            MemOrdering::Release | MemOrdering::AcqRel | MemOrdering::SeqCst
        ),
    }
}

/// What an access does to its object's release sequence.
fn sequence(op: AtomicOp, ordering: MemOrdering) -> Sequence {
    match (op, releases(op, ordering)) {
        (AtomicOp::Load | AtomicOp::CasFail, _) => Sequence::Reads,
        (AtomicOp::Rmw, true) => Sequence::Joins {
            heads: acquires(op, ordering),
        },
        (AtomicOp::Rmw, false) => Sequence::Continues,
        (AtomicOp::Store, true) => Sequence::Restarts,
        (AtomicOp::Store, false) => Sequence::Ends,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_compare_exchange_is_ordered_by_its_failure_ordering() {
        use MemOrdering::*;
        let fail = |success, failure| {
            let sync = Sync::Atomic {
                object: 0u32,
                version: 2,
                op: AtomicOp::CasFail,
                ordering: governing_ordering(AtomicOp::CasFail, success, failure),
            };
            sync.rule(ProcessId(1), Order::HappenedBefore)
        };
        let acquiring = |rule| matches!(rule, Rule::Atomic { acquires: true, .. });
        assert!(acquiring(fail(Release, Some(Acquire))));
        assert!(!acquiring(fail(AcqRel, Some(Relaxed))));
        assert!(!acquiring(fail(SeqCst, Some(Relaxed))));
        assert!(acquiring(fail(Relaxed, Some(SeqCst))));
        // Without a logged failure ordering: the strongest one the success ordering allows.
        assert!(acquiring(fail(AcqRel, None)));
        assert!(!acquiring(fail(Release, None)));
    }

    #[test]
    fn the_replay_order_chains_every_access_and_happened_before_only_synchronizing_ones() {
        let me = ProcessId(0);
        let relaxed_load = Sync::Atomic {
            object: 7u32,
            version: 3,
            op: AtomicOp::Load,
            ordering: MemOrdering::Relaxed,
        };
        assert_eq!(
            relaxed_load.rule(me, Order::Replay),
            Rule::Chains(Point::Accessed(7))
        );
        assert_eq!(
            relaxed_load.rule(me, Order::HappenedBefore),
            Rule::Atomic {
                object: 7,
                op: AtomicOp::Load,
                ordering: MemOrdering::Relaxed,
                acquires: false,
                sequence: Sequence::Reads
            }
        );
        let p = Sync::SemAcquire {
            object: 4u32,
            version: 1,
        };
        assert_eq!(p.rule(me, Order::Replay), Rule::Chains(Point::Accessed(4)));
        assert_eq!(p.rule(me, Order::HappenedBefore), Rule::TakesPermit(4));
        // Messages, spawns, joins and mutexes are the same in both orders.
        for sync in [
            Sync::Start { spawned: true },
            Sync::End,
            Sync::Send {
                channel: 1u32,
                seq: 2,
            },
            Sync::Lock {
                object: 3,
                version: 2,
            },
            Sync::Unlock { object: 3 },
        ] {
            assert_eq!(
                sync.rule(me, Order::Replay),
                sync.rule(me, Order::HappenedBefore)
            );
        }
    }
}
