//! The narrow waist: the interface every nondeterministic choice of a logical process goes
//! through.
//!
//! An operation of the runtime (a receive, a lock, a clock read, ...) asks its process's backend
//! what the log expects before acting ([`ProcessBackend::expect`]), performs the operation
//! accordingly, and reports what happened ([`ProcessBackend::done`]). The record backend expects
//! nothing and appends what happened to the log; the replay backend (in `ppd-replayer`) answers
//! with the logged event — which message, which version, which value — blocks while its local
//! debugger holds the process, and checks what happened against the log; the emulation backend
//! serves one e-block instance from its log interval. Pass-through mode has no backend: the
//! operations run as plain `std` code.

use std::panic::Location;

use ppd_formats::event::{AtomicOp, ClockSource, ObjectKind};
use ppd_formats::pending::PendingAccess;
use ppd_formats::{Borrowed, Event, EventKind, ObjectId, ProcessId};

pub use crate::sync::bound::is_last_receiver_release;

/// How the runtime runs the program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Not under ppd: plain `std` semantics, nothing logged.
    PassThrough,
    /// Under `ppd record`: every nondeterministic choice is logged.
    Record,
    /// Under `ppd replay`: every nondeterministic choice is forced to its logged outcome.
    Replay,
    /// Under `ppd why`: single e-block instances re-execute from their logs.
    Emulate,
}

/// An operation about to happen, as the backend is told before it acts.
#[derive(Debug, Clone, Copy)]
pub struct Op {
    /// The kind of event the operation will log.
    pub kind: EventKind,
    /// The object it acts on, when it acts on one.
    pub object: Option<ObjectId>,
    /// Where in the program it is.
    pub site: Option<&'static Location<'static>>,
}

impl Op {
    /// An operation on `object`.
    pub fn on(kind: EventKind, object: ObjectId, site: Option<&'static Location<'static>>) -> Op {
        Op {
            kind,
            object: Some(object),
            site,
        }
    }

    /// An operation without an object.
    pub fn plain(kind: EventKind, site: Option<&'static Location<'static>>) -> Op {
        Op {
            kind,
            object: None,
            site,
        }
    }
}

/// Something another process must do before this one can go on: Manabe & Imase's "message M
/// from S", generalized to every kind of happened-before edge the runtime has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dependency {
    /// Message `seq` on `channel`, to be sent by `sender`.
    Message {
        /// The channel.
        channel: ObjectId,
        /// Its sequence number.
        seq: u64,
        /// The process that sends it.
        sender: ProcessId,
    },
    /// Access number `version` of `object`, to be made by `by`.
    Version {
        /// The object.
        object: ObjectId,
        /// The access number that must have happened.
        version: u64,
        /// The process that makes it.
        by: ProcessId,
    },
    /// The end of process `child` (a join waits for it).
    Exit {
        /// The process.
        child: ProcessId,
    },
    /// The creation of an object registered at its first use (`sync::object`) whose id this
    /// process cannot know yet: its next logged event does not name it (an e-block's entry
    /// whose arguments do, say). The process whose log has the `Create` of this kind at this
    /// site makes it; replay looks the creator up in the logs.
    Creation {
        /// What the object is.
        kind: ObjectKind,
        /// Where it was constructed.
        site: &'static Location<'static>,
    },
}

/// One logical process's backend.
pub trait ProcessBackend: Send {
    /// Called before every operation. Returns the logged event the operation must reproduce
    /// (replay, emulation) or `None` when the operation may do whatever the run does (record).
    ///
    /// A replay backend may block here while its local debugger holds the process; when the
    /// program does something the log does not say, it reports the divergence and never
    /// returns — except when the log's next event is the wake-up of a bounded channel's last
    /// receiver ([`is_last_receiver_release`]), which a drop did between two operations: that
    /// `SemRelease` is returned, not consumed, for the runtime to do before `op`.
    fn expect(&mut self, op: Op) -> Option<Event>;

    /// Like [`expect`](Self::expect) for an event that may or may not come next: the logged
    /// event, consumed like `expect` does, if the log's next event is `op`'s; `None` otherwise
    /// (and always when recording). For outcomes known only after the fact, such as a send
    /// that finds its receiver gone. It continues an operation under way, so a last
    /// receiver's wake-up, done between operations, is never its answer.
    fn expect_if(&mut self, op: Op) -> Option<Event>;

    /// The next logged event, without consuming it (replay and emulation; `None` when
    /// recording, at the end of the log, or where it is damaged). An object registered at its
    /// first use asks it whether this process logged the object's creation there
    /// (`sync::object`).
    fn next_logged(&mut self) -> Option<Event> {
        None
    }

    /// Called after every operation with what it did.
    fn done(&mut self, event: &Event<Borrowed<'_>>);

    /// Called, recording, with an atomic access made and not yet [`done`](Self::done), while
    /// the access still holds the object ([`ppd_formats::pending`]).
    fn pend(&mut self, _access: &PendingAccess) {}

    /// Called when the operation is about to wait for another process.
    fn waiting_for(&mut self, dependency: Dependency);

    /// Recording under a live breakpoint, the process about to start an operation while a
    /// halt is in progress (it halts here until the debugger resumes the program) or while a
    /// conjunction's component may hold at its last event (which the operation, logging a
    /// `kind` event, may change).
    fn before_live_operation(&mut self, _kind: EventKind) {}

    /// Recording under a linked predicate across nodes, the process about to write stream
    /// bytes from `offset` on to `socket`: hands its stage to the other nodes first.
    fn before_socket_write(&mut self, _socket: ObjectId, _offset: u64) {}

    /// Whether the other processes run on their own (a replay to the end), not only when a
    /// debugger lets them: then a wait for one of them mostly ends by itself soon, and is
    /// worth watching for a moment before telling the backend about it.
    fn others_run_freely(&self) -> bool {
        true
    }

    /// The program did something the log does not allow; `detail` says what. Reports it and
    /// does not return while the report is pending (the process cannot go on).
    fn diverged(&mut self, detail: &str);

    /// Whether message payloads and guarded values are to be logged.
    fn log_payloads(&self) -> bool;

    /// Called when the process ends (normally or by panic), after its last event.
    fn finish(&mut self);
}

/// The mode-wide part of a backend: creates each process's backend and ends the run.
pub trait Runtime: Send + Sync {
    /// The mode this runtime implements.
    fn mode(&self) -> Mode;

    /// A new process id for a child being spawned (record mode; a replaying runtime takes the
    /// id from the parent's log instead).
    fn allocate_process(&self) -> ProcessId;

    /// Readies child `id` of `parent`, on the parent's thread, before the parent logs its
    /// `Spawn`: a recording creates the child's log here, so that every logged spawn has its
    /// child's log, and a log that cannot be created stops recording before the spawn is
    /// logged. Nothing to do in the other modes.
    fn prepare_process(&self, _id: ProcessId, _parent: ProcessId, _name: &str) {}

    /// Registers a process about to start and gives it a backend. Called on the process's own
    /// thread before its first event.
    fn start_process(
        &self,
        id: ProcessId,
        parent: Option<ProcessId>,
        name: &str,
    ) -> Box<dyn ProcessBackend>;

    /// The run is over: `main` returned `exit_code` (or panicked).
    fn finish(&self, exit_code: i32, panicked: bool);
}

/// Facts about a created object that its `Create` event logs.
#[derive(Debug, Clone, Copy)]
pub struct Creation {
    /// What the object is.
    pub kind: ObjectKind,
    /// Initial count or value.
    pub init: u64,
    /// The user's name for it.
    pub name: Option<&'static str>,
}

/// Helpers that read the fields a replayed event dictates.
pub(crate) mod expected {
    use super::*;

    /// The sequence number of an expected send.
    pub(crate) fn send_seq(e: &Option<Event>) -> Option<u64> {
        match e {
            Some(Event::Send { seq, .. }) => Some(*seq),
            _ => None,
        }
    }

    /// The version and previous accessor an expected lock, semaphore, atomic or reader-writer
    /// lock operation has.
    pub(crate) fn version(e: &Option<Event>) -> Option<(u64, Option<ProcessId>)> {
        match e {
            Some(Event::Lock { version, prev, .. })
            | Some(Event::SemAcquire { version, prev, .. })
            | Some(Event::SemRelease { version, prev, .. })
            | Some(Event::Atomic { version, prev, .. })
            | Some(Event::RwAcquire { version, prev, .. })
            | Some(Event::RwRelease { version, prev, .. }) => Some((*version, *prev)),
            _ => None,
        }
    }

    /// The value an expected atomic access read, when it was logged.
    pub(crate) fn atomic_value(e: &Option<Event>) -> Option<(AtomicOp, Option<u64>)> {
        match e {
            Some(Event::Atomic { op, value, .. }) => Some((*op, *value)),
            _ => None,
        }
    }

    /// The reading of an expected clock event.
    pub(crate) fn clock(e: &Option<Event>, source: ClockSource) -> Option<u64> {
        match e {
            Some(Event::Clock { source: s, nanos }) if *s == source => Some(*nanos),
            _ => None,
        }
    }
}
