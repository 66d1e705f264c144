//! A recording in memory, compact: every event of every process, with source sites, names and
//! shared objects interned.
//!
//! The analyses visit events many times and in orders other than the logs' (by object version,
//! by happened-before), so the logs are decoded once into small [`Ev`]s that refer to
//! processes, objects and sites by index, kept per process in an [`EventStore`]: a dense
//! vector (32 bytes an event) for analyses that look events up anywhere, or the [`Compact`]
//! store (a few bytes an event) for those that read each process's events in order.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use ppd_formats::event::{
    AtomicOp, EventKind, MemOrdering, ObjectKind, Outcome, Question, RecvOutcome, RwMode,
};
use ppd_formats::order::Sync;
use ppd_formats::{Event, ObjectId, ProcessId, Site, net};
use serde::{Deserialize, Serialize};

use crate::fasthash::FastMap;
pub use logged::{Logged, LoggedIter};
pub use store::{Compact, EventSink, EventStore};
use translate::{ByAddress, Dictionary, Interner, SiteIds, translate};

/// An event, named by its process (dense index into [`Trace::processes`]) and its position in
/// that process's log.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct EventRef {
    /// Dense process index.
    pub process: u32,
    /// Index of the event in the process's log.
    pub index: u32,
}

impl EventRef {
    /// Event `index` of process `process`.
    pub fn new(process: u32, index: u32) -> EventRef {
        EventRef { process, index }
    }
}

/// Index of an interned source site.
pub type SiteId = u32;
/// Index of an interned name.
pub type NameId = u32;
/// Dense index of a shared object.
pub type ObjIdx = u32;

/// The site of an event that has none.
pub const NO_SITE: SiteId = u32::MAX;

/// What an event did, with references resolved to dense indexes.
#[derive(Clone, Copy, Debug, PartialEq)]
#[allow(missing_docs)]
pub enum Op {
    Start {
        parent: Option<ProcessId>,
    },
    Spawn {
        child: ProcessId,
    },
    Join {
        child: ProcessId,
    },
    Exit,
    Panic {
        message: NameId,
    },
    Create {
        object: ObjIdx,
    },
    Send {
        channel: ObjIdx,
        seq: u64,
    },
    Recv {
        channel: ObjIdx,
        sender: ProcessId,
        seq: u64,
    },
    RecvNone {
        channel: ObjIdx,
        outcome: RecvOutcome,
    },
    Select {
        index: u32,
    },
    Lock {
        object: ObjIdx,
        version: u64,
        prev: Option<ProcessId>,
    },
    Unlock {
        object: ObjIdx,
    },
    SemAcquire {
        object: ObjIdx,
        version: u64,
        prev: Option<ProcessId>,
    },
    SemRelease {
        object: ObjIdx,
        version: u64,
        prev: Option<ProcessId>,
    },
    Atomic {
        object: ObjIdx,
        version: u64,
        prev: Option<ProcessId>,
        op: AtomicOp,
        /// The ordering that governed the access: for a failed compare-exchange, its failure
        /// ordering (`ppd_formats::order::governing_ordering`).
        ordering: MemOrdering,
    },
    Clock,
    Random,
    EblockEnter {
        name: NameId,
    },
    EblockExit {
        name: NameId,
    },
    Mark {
        label: NameId,
    },
    Blocked {
        object: ObjIdx,
    },
    Undelivered {
        channel: ObjIdx,
        seq: u64,
    },
    JoinBlocked {
        child: ProcessId,
    },
    Sleep {
        nanos: u64,
    },
    Answer {
        question: Question,
        value: u64,
    },
    Outcome {
        object: ObjIdx,
        outcome: Outcome,
    },
    RwAcquire {
        object: ObjIdx,
        version: u64,
        prev: Option<ProcessId>,
        mode: RwMode,
    },
    RwRelease {
        object: ObjIdx,
        version: u64,
        mode: RwMode,
    },
    /// A socket made (`NetOpen`).
    NetOpen {
        socket: ObjIdx,
    },
    /// A stream write or a datagram sent: message `seq` of its socket.
    NetWrite {
        socket: ObjIdx,
        seq: u64,
        datagram: bool,
    },
    /// A stream read or a datagram received: when the recording holds the other end, `peer`
    /// is its socket and `seq` the write (or datagram) the bytes read end with; else `peer`
    /// is [`NO_OBJECT`] (and `end` says whether it read the end of the stream).
    NetRead {
        socket: ObjIdx,
        peer: ObjIdx,
        seq: u64,
        datagram: bool,
        end: bool,
    },
    /// A socket operation failed (`NetFail`).
    NetFail {
        socket: ObjIdx,
    },
}

/// The object of a reference that names none: a socket read whose writer is not recorded.
pub const NO_OBJECT: ObjIdx = u32::MAX;

impl Op {
    /// The event's kind in the table of kinds (`ppd_formats::event::EventKind`): a socket
    /// write or read of a datagram is the datagram's kind.
    pub fn kind(&self) -> EventKind {
        match self {
            Op::Start { .. } => EventKind::Start,
            Op::Spawn { .. } => EventKind::Spawn,
            Op::Join { .. } => EventKind::Join,
            Op::Exit => EventKind::Exit,
            Op::Panic { .. } => EventKind::Panic,
            Op::Create { .. } => EventKind::Create,
            Op::Send { .. } => EventKind::Send,
            Op::Recv { .. } => EventKind::Recv,
            Op::RecvNone { .. } => EventKind::RecvNone,
            Op::Select { .. } => EventKind::Select,
            Op::Lock { .. } => EventKind::Lock,
            Op::Unlock { .. } => EventKind::Unlock,
            Op::SemAcquire { .. } => EventKind::SemAcquire,
            Op::SemRelease { .. } => EventKind::SemRelease,
            Op::Atomic { .. } => EventKind::Atomic,
            Op::Clock => EventKind::Clock,
            Op::Random => EventKind::Random,
            Op::EblockEnter { .. } => EventKind::EblockEnter,
            Op::EblockExit { .. } => EventKind::EblockExit,
            Op::Mark { .. } => EventKind::Mark,
            Op::Blocked { .. } => EventKind::Blocked,
            Op::Undelivered { .. } => EventKind::Undelivered,
            Op::JoinBlocked { .. } => EventKind::JoinBlocked,
            Op::Sleep { .. } => EventKind::Sleep,
            Op::Answer { .. } => EventKind::Answer,
            Op::Outcome { .. } => EventKind::Outcome,
            Op::RwAcquire { .. } => EventKind::RwAcquire,
            Op::RwRelease { .. } => EventKind::RwRelease,
            Op::NetOpen { .. } => EventKind::NetOpen,
            Op::NetWrite {
                datagram: false, ..
            } => EventKind::NetWrite,
            Op::NetWrite { datagram: true, .. } => EventKind::NetSendTo,
            Op::NetRead {
                datagram: false, ..
            } => EventKind::NetRead,
            Op::NetRead { datagram: true, .. } => EventKind::NetRecvFrom,
            Op::NetFail { .. } => EventKind::NetFail,
        }
    }

    /// The snake_case name of the event kind.
    pub fn kind_name(&self) -> &'static str {
        self.kind().name()
    }

    /// The shared object the event acts on.
    pub fn object(&self) -> Option<ObjIdx> {
        match *self {
            Op::Create { object }
            | Op::Lock { object, .. }
            | Op::Unlock { object }
            | Op::SemAcquire { object, .. }
            | Op::SemRelease { object, .. }
            | Op::Atomic { object, .. }
            | Op::Blocked { object }
            | Op::Outcome { object, .. }
            | Op::RwAcquire { object, .. }
            | Op::RwRelease { object, .. } => Some(object),
            Op::NetOpen { socket }
            | Op::NetWrite { socket, .. }
            | Op::NetRead { socket, .. }
            | Op::NetFail { socket } => Some(socket),
            Op::Send { channel, .. }
            | Op::Recv { channel, .. }
            | Op::RecvNone { channel, .. }
            | Op::Undelivered { channel, .. } => Some(channel),
            Op::Start { .. }
            | Op::Spawn { .. }
            | Op::Join { .. }
            | Op::Exit
            | Op::Panic { .. }
            | Op::Select { .. }
            | Op::Clock
            | Op::Random
            | Op::Answer { .. }
            | Op::EblockEnter { .. }
            | Op::EblockExit { .. }
            | Op::Mark { .. }
            | Op::JoinBlocked { .. }
            | Op::Sleep { .. } => None,
        }
    }

    /// The part the event plays in synchronization, for the edge rules of
    /// `ppd_formats::order`.
    pub fn sync(&self) -> Sync<ObjIdx> {
        match *self {
            Op::Start { parent } => Sync::Start {
                spawned: parent.is_some(),
            },
            Op::Spawn { child } => Sync::Spawn { child },
            Op::Join { child } => Sync::Join { child },
            Op::Exit | Op::Panic { .. } => Sync::End,
            Op::Send { channel, seq } => Sync::Send { channel, seq },
            Op::Recv { channel, seq, .. } => Sync::Recv { channel, seq },
            Op::Lock {
                object, version, ..
            } => Sync::Lock { object, version },
            Op::Unlock { object } => Sync::Unlock { object },
            Op::SemAcquire {
                object, version, ..
            } => Sync::SemAcquire { object, version },
            Op::SemRelease {
                object, version, ..
            } => Sync::SemRelease { object, version },
            Op::Atomic {
                object,
                version,
                op,
                ordering,
                ..
            } => Sync::Atomic {
                object,
                version,
                op,
                ordering,
            },
            Op::Create { .. }
            | Op::RecvNone { .. }
            | Op::Select { .. }
            | Op::Clock
            | Op::Random
            | Op::Answer { .. }
            | Op::EblockEnter { .. }
            | Op::EblockExit { .. }
            | Op::Mark { .. }
            | Op::Blocked { .. }
            | Op::Undelivered { .. }
            | Op::JoinBlocked { .. }
            | Op::Sleep { .. }
            | Op::Outcome { .. } => Sync::Local,
            Op::RwAcquire {
                object,
                version,
                mode,
                ..
            } => Sync::RwAcquire {
                object,
                version,
                mode,
            },
            Op::RwRelease {
                object,
                version,
                mode,
            } => Sync::RwRelease {
                object,
                version,
                mode,
            },
            Op::NetWrite { socket, seq, .. } => Sync::Send {
                channel: socket,
                seq,
            },
            Op::NetRead { peer, seq, .. } if peer != NO_OBJECT => Sync::Recv { channel: peer, seq },
            Op::NetRead { .. } | Op::NetOpen { .. } | Op::NetFail { .. } => Sync::Local,
        }
    }

    /// Whether the process ended with this event.
    pub fn is_end(&self) -> bool {
        self.kind().ends_process()
    }
}

/// One event: what it did and where.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Ev {
    /// What it did.
    pub op: Op,
    /// Where, or [`NO_SITE`].
    pub site: SiteId,
}

/// A logical process and its events, kept in `S` ([`Vec<Ev>`] unless an analysis chooses
/// the [`Compact`] store).
#[derive(Clone, Debug)]
pub struct Process<S = Vec<Ev>> {
    /// Its id in the recording.
    pub id: ProcessId,
    /// Its name.
    pub name: String,
    /// The process that spawned it.
    pub parent: Option<ProcessId>,
    /// Whether the log was closed cleanly (false: recovered after the program died).
    pub complete: bool,
    /// Its events, in log order.
    pub events: S,
    /// Damage met while reading the log; the events before it are all here.
    pub damage: Vec<String>,
}

/// A shared object: channel, mutex, semaphore or atomic.
#[derive(Clone, Debug, PartialEq)]
pub struct Object {
    /// Its id in the recording.
    pub id: ObjectId,
    /// What it is; from its `Create` event, else guessed from its use.
    pub kind: Option<ObjectKind>,
    /// Initial count (semaphore) or value (atomic).
    pub init: u64,
    /// The name the program gave it.
    pub name: Option<Arc<str>>,
    /// Where it was created, or [`NO_SITE`].
    pub site: SiteId,
    /// Its `Create` event, when the log has it.
    pub created: Option<EventRef>,
}

impl Object {
    fn placeholder(id: ObjectId) -> Object {
        Object {
            id,
            kind: None,
            init: 0,
            name: None,
            site: NO_SITE,
            created: None,
        }
    }

    /// The name reports use: the program's name for it, else its id (a park token: whose).
    pub fn label(&self) -> String {
        match &self.name {
            Some(n) => n.to_string(),
            None if self.id.is_park_token() => format!("{}'s park token", self.id.creator()),
            None => self.id.to_string(),
        }
    }
}

/// All events of a recording, interned; each process's events are kept in `S`.
#[derive(Clone, Debug, Default)]
pub struct Trace<S = Vec<Ev>> {
    processes: Vec<Process<S>>,
    objects: Vec<Object>,
    sites: Vec<Arc<Site>>,
    names: Vec<Arc<str>>,
    by_pid: FastMap<ProcessId, u32>,
    by_object: FastMap<ObjectId, ObjIdx>,
    /// Each stream socket's other end, where the recording holds both.
    socket_peers: FastMap<ObjIdx, ObjIdx>,
}

impl Trace {
    /// An empty trace, filled with [`TraceBuilder`].
    pub fn builder() -> TraceBuilder {
        TraceBuilder::default()
    }
}

impl<S> Trace<S> {
    /// The same trace with each process's events moved by `f(process, events)` into another
    /// kind of store.
    pub(crate) fn map_events<T>(self, mut f: impl FnMut(u32, S) -> T) -> Trace<T> {
        Trace {
            processes: self
                .processes
                .into_iter()
                .enumerate()
                .map(|(p, proc)| Process {
                    id: proc.id,
                    name: proc.name,
                    parent: proc.parent,
                    complete: proc.complete,
                    events: f(p as u32, proc.events),
                    damage: proc.damage,
                })
                .collect(),
            objects: self.objects,
            sites: self.sites,
            names: self.names,
            by_pid: self.by_pid,
            by_object: self.by_object,
            socket_peers: self.socket_peers,
        }
    }
}

impl<S: EventStore> Trace<S> {
    /// The other end of stream socket `socket`'s connection, when the recording holds it.
    pub fn peer_socket(&self, socket: ObjIdx) -> Option<ObjIdx> {
        self.socket_peers.get(&socket).copied()
    }

    /// The processes, in id order; [`EventRef::process`] indexes this.
    pub fn processes(&self) -> &[Process<S>] {
        &self.processes
    }

    /// Process number `p` (dense index).
    pub fn process(&self, p: u32) -> &Process<S> {
        &self.processes[p as usize]
    }

    /// The event `r` names, if it exists.
    pub fn get(&self, r: EventRef) -> Option<Ev> {
        self.processes
            .get(r.process as usize)?
            .events
            .at(r.index as usize)
    }

    /// The event `r` names.
    ///
    /// # Panics
    ///
    /// If `r` is not an event of this trace; references made by the analyses always are.
    pub fn event(&self, r: EventRef) -> Ev {
        self.get(r)
            .unwrap_or_else(|| panic!("{r:?} is not an event of this trace"))
    }

    /// The dense index of process `id`.
    pub fn index_of(&self, id: ProcessId) -> Option<u32> {
        self.by_pid.get(&id).copied()
    }

    /// The shared objects; [`ObjIdx`] indexes this.
    pub fn objects(&self) -> &[Object] {
        &self.objects
    }

    /// Object number `o`.
    pub fn object(&self, o: ObjIdx) -> &Object {
        &self.objects[o as usize]
    }

    /// The dense index of object `id`.
    pub fn object_index(&self, id: ObjectId) -> Option<ObjIdx> {
        self.by_object.get(&id).copied()
    }

    /// Site number `s`, if it is one.
    pub fn site(&self, s: SiteId) -> Option<&Site> {
        self.sites.get(s as usize).map(|s| &**s)
    }

    /// Name number `n`.
    pub fn name(&self, n: NameId) -> &str {
        self.names.get(n as usize).map(|n| &**n).unwrap_or("")
    }

    /// Number of events of all processes.
    pub fn event_count(&self) -> u64 {
        self.processes.iter().map(|p| p.events.len() as u64).sum()
    }

    /// `name (pN)` of process `p`.
    pub fn process_label(&self, p: u32) -> String {
        let proc = self.process(p);
        format!("{} ({})", proc.name, proc.id)
    }

    /// A one-line description of an event, for reports and pictures.
    pub fn describe(&self, r: EventRef) -> String {
        let Some(ev) = self.get(r) else {
            return format!("{}#{} (missing)", self.process(r.process).id, r.index);
        };
        let obj = |o: ObjIdx| self.object(o).label();
        let what = match ev.op {
            Op::Start { parent: Some(p) } => format!("start (spawned by {p})"),
            Op::Start { parent: None } => "start".to_owned(),
            Op::Spawn { child } => format!("spawn {}", self.pid_label(child)),
            Op::Join { child } => format!("join {}", self.pid_label(child)),
            Op::Exit => "exit".to_owned(),
            Op::Panic { message } => format!("panic: {}", self.name(message)),
            Op::Create { object } => {
                let kind = self
                    .object(object)
                    .kind
                    .map(ObjectKind::name)
                    .unwrap_or("object");
                format!("create {kind} {}", obj(object))
            }
            Op::Send { channel, seq } => format!("send on {} (message {seq})", obj(channel)),
            Op::Recv {
                channel,
                sender,
                seq,
            } => format!(
                "recv on {} (message {seq} from {})",
                obj(channel),
                self.pid_label(sender)
            ),
            Op::RecvNone { channel, outcome } => {
                let why = match outcome {
                    RecvOutcome::Empty => "empty",
                    RecvOutcome::Timeout => "timed out",
                    RecvOutcome::Disconnected => "disconnected",
                };
                format!("recv on {}: {why}", obj(channel))
            }
            Op::Select { index } => format!("select #{index}"),
            Op::Lock {
                object, version, ..
            } => format!("lock {} (acquisition {version})", obj(object)),
            Op::Unlock { object } => format!("unlock {}", obj(object)),
            Op::SemAcquire {
                object, version, ..
            } => format!("P {} (operation {version})", obj(object)),
            Op::SemRelease {
                object, version, ..
            } => format!("V {} (operation {version})", obj(object)),
            Op::Atomic {
                object,
                op,
                ordering,
                version,
                ..
            } => format!(
                "{} {} {} (access {version})",
                access_name(op),
                obj(object),
                ordering_name(ordering)
            ),
            Op::Clock => "clock".to_owned(),
            Op::Random => "random".to_owned(),
            Op::EblockEnter { name } => format!("enter {}", self.name(name)),
            Op::EblockExit { name } => format!("exit {}", self.name(name)),
            Op::Mark { label } => format!("mark {}", self.name(label)),
            Op::Blocked { object } => format!("blocked on {}", obj(object)),
            Op::JoinBlocked { child } => format!("waits in join for {}", self.pid_label(child)),
            Op::Sleep { nanos } => format!("sleeps for {:?}", Duration::from_nanos(nanos)),
            Op::Answer { question, value } => question.describe(value),
            Op::Outcome {
                object,
                outcome: Outcome::WouldBlock,
            } => format!("try_lock found {} held", obj(object)),
            Op::Outcome {
                object,
                outcome: Outcome::Acquired,
            } => format!("try_lock acquires {}", obj(object)),
            Op::RwAcquire {
                object,
                version,
                mode,
                ..
            } => format!(
                "{} lock {} (operation {version})",
                rw_mode_name(mode),
                obj(object)
            ),
            Op::RwRelease {
                object,
                version,
                mode,
            } => format!(
                "{} unlock {} (operation {version})",
                rw_mode_name(mode),
                obj(object)
            ),
            Op::Undelivered { channel, seq } => {
                format!(
                    "message {seq} on {} not delivered (receiver gone)",
                    obj(channel)
                )
            }
            Op::NetOpen { socket } => format!("open {}", obj(socket)),
            Op::NetWrite {
                socket,
                seq,
                datagram: false,
            } => format!("write to {} (write {seq})", obj(socket)),
            Op::NetWrite { socket, seq, .. } => {
                format!("send a datagram from {} (datagram {seq})", obj(socket))
            }
            Op::NetRead {
                socket, end: true, ..
            } => format!("read the end of {}'s stream", obj(socket)),
            Op::NetRead {
                socket,
                peer,
                datagram,
                ..
            } if peer == NO_OBJECT => format!(
                "{} {} (from outside the recording)",
                if datagram {
                    "receive a datagram on"
                } else {
                    "read from"
                },
                obj(socket)
            ),
            Op::NetRead {
                socket,
                peer,
                seq,
                datagram: true,
                ..
            } => format!(
                "receive a datagram on {} (datagram {seq} of {})",
                obj(socket),
                obj(peer)
            ),
            Op::NetRead {
                socket, peer, seq, ..
            } => format!("read from {} (write {seq} of {})", obj(socket), obj(peer)),
            Op::NetFail { socket } => format!("failed on {}", obj(socket)),
        };
        match self.site(ev.site) {
            Some(site) => format!("{what} at {site}"),
            None => what,
        }
    }

    /// `name (pN)` for a process id, or the id alone when it has no log.
    pub fn pid_label(&self, id: ProcessId) -> String {
        match self.index_of(id) {
            Some(p) => self.process_label(p),
            None => id.to_string(),
        }
    }
}

/// How a reader-writer lock hold is named in descriptions.
pub fn rw_mode_name(mode: RwMode) -> &'static str {
    match mode {
        RwMode::Read => "read",
        RwMode::Write => "write",
    }
}

/// What an atomic access did, as reports say it.
pub fn access_name(op: AtomicOp) -> &'static str {
    match op {
        AtomicOp::Load => "load",
        AtomicOp::Store => "store",
        AtomicOp::Rmw => "rmw",
        AtomicOp::CasFail => "failed-cas",
    }
}

/// A memory ordering, as reports say it.
pub fn ordering_name(o: MemOrdering) -> &'static str {
    match o {
        MemOrdering::Relaxed => "relaxed",
        MemOrdering::Release => "release",
        MemOrdering::Acquire => "acquire",
        MemOrdering::AcqRel => "acq_rel",
        MemOrdering::SeqCst => "seq_cst",
    }
}

/// What [`TraceBuilder::build`] pairs sockets' reads with their writes from.
#[derive(Debug, Default)]
struct NetTables {
    ends: Vec<net::End>,
    writes: FastMap<ObjIdx, net::Writes>,
    /// Stream reads: the event, its socket and the offset of the last byte it read.
    reads: Vec<(EventRef, ObjIdx, u64)>,
    /// Datagrams sent: socket, number, destination, digest.
    sends: Vec<(ObjIdx, u64, String, u64)>,
    /// Datagrams received: event, socket, source, digest.
    receipts: Vec<(EventRef, ObjIdx, String, u64)>,
}

/// Builds a [`Trace`]: from a recording's events, or by hand (tests, benchmarks, synthetic
/// executions).
#[derive(Debug, Default)]
pub struct TraceBuilder<S = Vec<Ev>> {
    trace: Trace<S>,
    /// Each process's OS process, and the sockets' ends, writes and reads, for pairing.
    os_pids: Vec<u32>,
    net: NetTables,
    site_by_address: SiteIds,
    site_by_value: HashMap<Site, SiteId>,
    name_by_address: ByAddress<str, NameId>,
    name_by_value: HashMap<Arc<str>, NameId>,
    /// Per process, the index in its log of the first event this builder holds: a builder
    /// may read a later part of a log (`trace/load.rs`).
    first_index: Vec<u32>,
}

impl<S: EventSink> TraceBuilder<S> {
    /// Adds a process; returns its dense index. Adding an id twice returns the first.
    pub fn add_process(&mut self, id: ProcessId, name: &str, parent: Option<ProcessId>) -> u32 {
        if let Some(&p) = self.trace.by_pid.get(&id) {
            return p;
        }
        let p = self.trace.processes.len() as u32;
        self.trace.processes.push(Process {
            id,
            name: name.to_owned(),
            parent,
            complete: true,
            events: S::default(),
            damage: Vec::new(),
        });
        self.trace.by_pid.insert(id, p);
        p
    }

    /// Marks process `p` as recovered after a crash (its log has no clean end).
    pub fn set_complete(&mut self, p: u32, complete: bool) {
        self.trace.processes[p as usize].complete = complete;
    }

    /// The dense index of object `id`, adding a placeholder if it is new.
    pub fn object(&mut self, id: ObjectId) -> ObjIdx {
        if let Some(&o) = self.trace.by_object.get(&id) {
            return o;
        }
        let o = self.trace.objects.len() as ObjIdx;
        self.trace.objects.push(Object::placeholder(id));
        self.trace.by_object.insert(id, o);
        o
    }

    /// Declares object `id`, as its `Create` event does.
    pub fn define_object(
        &mut self,
        id: ObjectId,
        kind: ObjectKind,
        init: u64,
        name: Option<&str>,
    ) -> ObjIdx {
        let o = self.object(id);
        let name = name.map(|n| self.intern_name_value(n));
        let obj = &mut self.trace.objects[o as usize];
        obj.kind = Some(kind);
        obj.init = init;
        obj.name = name.map(|n| Arc::clone(&self.trace.names[n as usize]));
        o
    }

    /// Interns a site given by value.
    pub fn site(&mut self, file: &str, line: u32, column: u32) -> SiteId {
        self.intern_site_value(Site {
            file: file.to_owned(),
            line,
            column,
        })
    }

    /// Interns a name given by value.
    pub fn name(&mut self, name: &str) -> NameId {
        self.intern_name_value(name)
    }

    /// Appends an event to process `p`.
    pub fn push(&mut self, p: u32, op: Op, site: SiteId) -> EventRef {
        let r = self.next_ref(p);
        self.trace.processes[p as usize]
            .events
            .push(Ev { op, site });
        if let Op::Create { object } = op {
            let obj = &mut self.trace.objects[object as usize];
            obj.created = Some(r);
            if obj.site == NO_SITE {
                obj.site = site;
            }
        }
        r
    }

    /// The reference the next event pushed to process `p` gets.
    fn next_ref(&self, p: u32) -> EventRef {
        let first = self.first_index.get(p as usize).copied().unwrap_or(0);
        let held = self.trace.processes[p as usize].events.appended() as u32;
        EventRef::new(p, first + held)
    }

    /// Appends a decoded event to process `p`.
    pub fn push_event(&mut self, p: u32, event: &Event) {
        let (op, site) = translate(self, p, event);
        self.push(p, op, site);
    }

    /// The ids this builder gave what it met, to translate the logs it read again.
    pub(crate) fn dictionary(&self) -> Dictionary {
        Dictionary {
            objects: self.trace.by_object.clone(),
            sites: self.site_by_value.clone(),
            names: self.name_by_value.clone(),
        }
    }

    /// Notes the OS process process `p` ran in: what pairs its Unix sockets with their peers.
    pub fn set_os_pid(&mut self, p: u32, os_pid: u32) {
        let p = p as usize;
        if self.os_pids.len() <= p {
            self.os_pids.resize(p + 1, 0);
        }
        self.os_pids[p] = os_pid;
    }

    /// Number of objects so far.
    pub fn object_count(&self) -> usize {
        self.trace.objects.len()
    }

    /// The trace, with every socket read paired with the write its bytes end with (where the
    /// recording holds the other end; `ppd_formats::net`).
    pub fn build(mut self) -> Trace<S> {
        self.pair_net();
        self.trace
    }

    fn pair_net(&mut self) {
        let net = std::mem::take(&mut self.net);
        if net.ends.is_empty() && net.sends.is_empty() {
            return;
        }
        let index = |id: ObjectId| self.trace.by_object.get(&id).copied();
        let mut peer: FastMap<ObjIdx, ObjIdx> = FastMap::default();
        for (a, b) in net::pair_streams(&net.ends) {
            if let (Some(a), Some(b)) = (index(net.ends[a].socket), index(net.ends[b].socket)) {
                peer.insert(a, b);
                peer.insert(b, a);
            }
        }
        self.trace.socket_peers = peer.clone();
        let mut resolved: Vec<(EventRef, ObjIdx, u64)> = Vec::new();
        for &(at, socket, last_byte) in &net.reads {
            let Some(&writer) = peer.get(&socket) else {
                continue;
            };
            if let Some(seq) = net.writes.get(&writer).and_then(|w| w.holding(last_byte)) {
                resolved.push((at, writer, seq));
            }
        }
        // Datagrams: addressed by the sockets' local addresses.
        let local: FastMap<ObjIdx, &str> = net
            .ends
            .iter()
            .filter_map(|e| Some((index(e.socket)?, e.local.as_str())))
            .collect();
        let address = |o: ObjIdx| local.get(&o).copied().unwrap_or("").to_owned();
        let sends: Vec<net::Datagram> = net
            .sends
            .iter()
            .map(|(o, _, to, digest)| net::Datagram {
                from: address(*o),
                to: to.clone(),
                digest: *digest,
            })
            .collect();
        let receipts: Vec<net::Datagram> = net
            .receipts
            .iter()
            .map(|(_, o, from, digest)| net::Datagram {
                from: from.clone(),
                to: address(*o),
                digest: *digest,
            })
            .collect();
        for (r, send) in net::pair_datagrams(&sends, &receipts)
            .into_iter()
            .enumerate()
        {
            if let Some(s) = send {
                let (sender, seq) = (net.sends[s].0, net.sends[s].1);
                resolved.push((net.receipts[r].0, sender, seq));
            }
        }
        for (at, writer, seq) in resolved {
            self.trace.processes[at.process as usize]
                .events
                .set_read_source(at.index as usize, writer, seq);
        }
    }

    /// The object, guessing its kind from its use when its creation is not (yet) known.
    fn object_of_kind(&mut self, id: ObjectId, kind: ObjectKind) -> ObjIdx {
        let o = self.object(id);
        let obj = &mut self.trace.objects[o as usize];
        if obj.kind.is_none() {
            obj.kind = Some(kind);
        }
        o
    }

    /// Sites come interned: by address first (no hashing of file names per event), by value
    /// when an address is new.
    #[inline]
    fn intern_site(&mut self, site: &'static Site) -> SiteId {
        if let Some(id) = self.site_by_address.get(site) {
            return id;
        }
        let id = self.intern_site_value(site.clone());
        self.site_by_address.insert(site, id);
        id
    }

    fn intern_site_value(&mut self, site: Site) -> SiteId {
        if let Some(&id) = self.site_by_value.get(&site) {
            return id;
        }
        let id = self.trace.sites.len() as SiteId;
        self.trace.sites.push(Arc::new(site.clone()));
        self.site_by_value.insert(site, id);
        id
    }

    #[inline]
    fn intern_name(&mut self, name: &Arc<str>) -> NameId {
        if let Some(id) = self.name_by_address.get(name) {
            return id;
        }
        let id = self.intern_name_value(name);
        self.name_by_address.insert(name, id);
        id
    }

    fn intern_name_value(&mut self, name: &str) -> NameId {
        if let Some(&id) = self.name_by_value.get(name) {
            return id;
        }
        let id = self.trace.names.len() as NameId;
        let shared: Arc<str> = Arc::from(name);
        self.trace.names.push(Arc::clone(&shared));
        self.name_by_value.insert(shared, id);
        id
    }
}

/// The builder reading a log for the first time: it interns what it meets, defines the objects
/// events create, and notes the socket traffic that [`TraceBuilder::build`] pairs.
impl<S: EventSink> Interner for TraceBuilder<S> {
    #[inline]
    fn site(&mut self, site: &'static Site) -> SiteId {
        self.intern_site(site)
    }

    #[inline]
    fn site_value(&mut self, site: Site) -> SiteId {
        self.intern_site_value(site)
    }

    #[inline]
    fn name(&mut self, name: &Arc<str>) -> NameId {
        self.intern_name(name)
    }

    #[inline]
    fn name_value(&mut self, name: &str) -> NameId {
        self.intern_name_value(name)
    }

    #[inline]
    fn object(&mut self, id: ObjectId, kind: Option<ObjectKind>) -> ObjIdx {
        match kind {
            Some(kind) => self.object_of_kind(id, kind),
            None => TraceBuilder::object(self, id),
        }
    }

    fn created(&mut self, o: ObjIdx, kind: ObjectKind, init: u64, name: Option<NameId>) {
        let obj = &mut self.trace.objects[o as usize];
        obj.kind = Some(kind);
        obj.init = init;
        obj.name = name.map(|n| Arc::clone(&self.trace.names[n as usize]));
    }

    fn opened(&mut self, p: u32, o: ObjIdx, label: NameId, event: &Event) {
        let obj = &mut self.trace.objects[o as usize];
        obj.name = Some(Arc::clone(&self.trace.names[label as usize]));
        let os_pid = self.os_pids.get(p as usize).copied().unwrap_or(0);
        self.net.ends.extend(net::End::opened(event, os_pid));
    }

    fn traffic(&mut self, p: u32, o: ObjIdx, event: &Event) {
        match event {
            Event::NetWrite {
                seq, offset, len, ..
            } => self
                .net
                .writes
                .entry(o)
                .or_default()
                .push(*seq, *offset, *len),
            Event::NetRead {
                offset, peek, data, ..
            } if !*peek && !data.is_empty() => {
                let at = self.next_ref(p);
                let end = offset + data.len() as u64;
                self.net.reads.push((at, o, end - 1));
            }
            Event::NetSendTo {
                seq, to, digest, ..
            } => self.net.sends.push((o, *seq, to.to_string(), *digest)),
            Event::NetRecvFrom {
                from, peek, data, ..
            } if !*peek => {
                let at = self.next_ref(p);
                let digest = ppd_formats::event::datagram_digest(data);
                self.net.receipts.push((at, o, from.to_string(), digest));
            }
            // Peeks, and reads of nothing, pair with no write.
            _ => {}
        }
    }
}

mod load;
mod logged;
mod store;
mod translate;
