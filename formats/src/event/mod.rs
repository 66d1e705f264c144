//! The events a recorded process logs.
//!
//! One enum serves both directions: the runtime hands a writer [`Event<Borrowed>`] (source
//! locations as `&'static Location`, payloads as borrowed slices, nothing allocated), and a reader
//! returns [`Event<Owned>`] (locations and names resolved to shared values). The two differ only
//! in the [`Repr`] of sites, names and bytes, so the encoder and decoder cannot drift apart.
//!
//! The log records what control-driven replay needs and no more (Manabe & Imase §2.2, LeBlanc &
//! Mellor-Crummey's instant replay): the sender and sequence number of every receive, the version
//! of every lock and atomic access, the values of clock and random reads. Payloads appear only
//! where the user asked for them or where an e-block's re-execution needs them (Miller & Choi
//! §5.5: the extra prelog of a synchronization unit).

use std::collections::HashSet;
use std::fmt;
use std::panic::Location;
use std::sync::{Arc, LazyLock, Mutex};

use serde::{Deserialize, Serialize};

use crate::ids::{ObjectId, ProcessId};

mod kind;

pub use kind::{Class, EventKind, Nesting};

/// How sites, names and bytes are represented in an [`Event`].
pub trait Repr {
    /// A source location.
    type Site: Clone + fmt::Debug + PartialEq;
    /// An interned name (e-block, mark label, object name).
    type Name: Clone + fmt::Debug + PartialEq;
    /// An encoded user value or payload.
    type Bytes: Clone + fmt::Debug + PartialEq + AsRef<[u8]>;
    /// Free text (panic messages).
    type Text: Clone + fmt::Debug + PartialEq + AsRef<str>;
}

/// Events as the runtime writes them: nothing owned, nothing allocated.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Borrowed<'a> {
    #[doc(hidden)]
    _Lifetime(std::convert::Infallible, std::marker::PhantomData<&'a ()>),
}

impl<'a> Repr for Borrowed<'a> {
    type Site = &'static Location<'static>;
    type Name = &'a str;
    type Bytes = &'a [u8];
    type Text = &'a str;
}

/// Events as a reader returns them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Owned {}

impl Repr for Owned {
    type Site = &'static Site;
    type Name = Arc<str>;
    type Bytes = Box<[u8]>;
    type Text = Box<str>;
}

/// A source location, as a reader resolves it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Site {
    /// Source file as the compiler names it.
    pub file: String,
    /// 1-based line.
    pub line: u32,
    /// 1-based column.
    pub column: u32,
}

impl Site {
    /// Whether this is the place `location` names: a logged site against the call site of a
    /// live operation.
    pub fn is(&self, location: &Location<'_>) -> bool {
        (self.file.as_str(), self.line, self.column)
            == (location.file(), location.line(), location.column())
    }

    /// The one copy of this site in the process, made the first time it is met.
    ///
    /// Readers intern every site they decode: the events of every block and log that share a
    /// location share one `&'static Site`, so copying an event's site copies a pointer (a
    /// shared count's two atomic operations were a fifth of decoding an event). A program has
    /// finitely many sites; a damaged log can add made-up ones, never more than its bytes.
    pub fn intern(self) -> &'static Site {
        static INTERNED: LazyLock<Mutex<HashSet<&'static Site>>> = LazyLock::new(Default::default);
        let mut interned = INTERNED.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(&site) = interned.get(&self) {
            return site;
        }
        let site: &'static Site = Box::leak(Box::new(self));
        interned.insert(site);
        site
    }
}

impl fmt::Display for Site {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.file, self.line)
    }
}

/// What kind of shared object a `Create` event makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ObjectKind {
    /// An mpsc channel.
    Channel,
    /// A mutex.
    Mutex,
    /// A counting semaphore; `init` is its initial count.
    Semaphore,
    /// An atomic integer or flag; `init` is its initial value.
    Atomic,
    /// A reader-writer lock.
    RwLock,
    /// A condition variable: the hidden lock over its queue of waiters, whose acquisitions
    /// are those of a mutex (waits and notifies take it).
    Condvar,
    /// A socket (`ppd::net`); its creation is a `NetOpen`, never a `Create`.
    Socket,
}

impl ObjectKind {
    /// The name reports use.
    pub fn name(self) -> &'static str {
        match self {
            ObjectKind::Channel => "channel",
            ObjectKind::Mutex => "mutex",
            ObjectKind::Semaphore => "semaphore",
            ObjectKind::Atomic => "atomic",
            ObjectKind::RwLock => "rwlock",
            ObjectKind::Condvar => "condvar",
            ObjectKind::Socket => "socket",
        }
    }
}

/// Why a receive returned no message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RecvOutcome {
    /// `try_recv` found the channel empty.
    Empty,
    /// `recv_timeout` timed out.
    Timeout,
    /// Every sender was gone.
    Disconnected,
}

/// What a non-blocking operation on an object answered, when the answer is not an access of
/// the object: the logged choice replay gives back.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// A `try_lock` found the lock held by another process (std's `WouldBlock`), or a
    /// bounded channel's `try_send` found no room (`Full`; the object is the channel's room).
    WouldBlock,
    /// A `try_lock` acquired the lock, or a `try_send` took room in its channel: the
    /// acquisition logged next did not wait, so it is no step of a deadlock.
    Acquired,
}

/// How a reader-writer lock was held: shared by readers or exclusively by one writer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RwMode {
    /// `RwLock::read`, `try_read`: shared with other readers.
    Read,
    /// `RwLock::write`, `try_write`: exclusive.
    Write,
}

/// What an atomic access did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AtomicOp {
    /// A load.
    Load,
    /// A store.
    Store,
    /// A read-modify-write that wrote (`fetch_add`, `swap`, successful compare-exchange, ...).
    Rmw,
    /// A compare-exchange that failed: it only read.
    CasFail,
}

impl AtomicOp {
    /// Every kind of access, in declaration order.
    pub const ALL: [AtomicOp; 4] = [
        AtomicOp::Load,
        AtomicOp::Store,
        AtomicOp::Rmw,
        AtomicOp::CasFail,
    ];

    /// Whether the access wrote the object.
    pub fn writes(self) -> bool {
        matches!(self, AtomicOp::Store | AtomicOp::Rmw)
    }
}

/// The memory ordering the program asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemOrdering {
    /// `Ordering::Relaxed`
    Relaxed,
    /// `Ordering::Release`
    Release,
    /// `Ordering::Acquire`
    Acquire,
    /// `Ordering::AcqRel`
    AcqRel,
    /// `Ordering::SeqCst`
    SeqCst,
}

impl MemOrdering {
    /// Every ordering, in declaration order.
    pub const ALL: [MemOrdering; 5] = [
        MemOrdering::Relaxed,
        MemOrdering::Release,
        MemOrdering::Acquire,
        MemOrdering::AcqRel,
        MemOrdering::SeqCst,
    ];
}

impl From<std::sync::atomic::Ordering> for MemOrdering {
    fn from(o: std::sync::atomic::Ordering) -> Self {
        use std::sync::atomic::Ordering as O;
        match o {
            O::Relaxed => MemOrdering::Relaxed,
            O::Release => MemOrdering::Release,
            O::Acquire => MemOrdering::Acquire,
            O::AcqRel => MemOrdering::AcqRel,
            _ => MemOrdering::SeqCst,
        }
    }
}

/// Which clock a `Clock` event read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClockSource {
    /// `Instant::now()`: nanoseconds of the monotonic clock (Linux's `CLOCK_MONOTONIC`, since boot).
    Monotonic,
    /// `SystemTime::now()`: nanoseconds since the Unix epoch.
    Wall,
}

/// Which question about the run a logged [`Event::Answer`] answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Question {
    /// `JoinHandle::is_finished`: 1 if the process had ended, 0 if not.
    IsFinished,
    /// `thread::available_parallelism`: the count, 0 for an error.
    AvailableParallelism,
    /// A channel's `len` (and `is_empty`, `is_full`): how many messages it held.
    ChannelLen,
}

impl Question {
    /// The question and its answer in words, for reports.
    pub fn describe(self, value: u64) -> String {
        match self {
            Question::IsFinished if value == 0 => "is_finished: not yet".to_owned(),
            Question::IsFinished => "is_finished: yes".to_owned(),
            Question::AvailableParallelism if value == 0 => {
                "available_parallelism: unknown (error)".to_owned()
            }
            Question::AvailableParallelism => format!("available_parallelism: {value}"),
            Question::ChannelLen => format!("channel len: {value}"),
        }
    }
}

/// What kind of socket a [`Event::NetOpen`] made.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SocketKind {
    /// `TcpListener`.
    TcpListener,
    /// `TcpStream`.
    TcpStream,
    /// `UdpSocket`.
    UdpSocket,
    /// `UnixListener`.
    UnixListener,
    /// `UnixStream`.
    UnixStream,
    /// `UnixDatagram`.
    UnixDatagram,
}

impl SocketKind {
    /// Whether it carries a byte stream (reads and writes by offset) rather than datagrams or
    /// connections.
    pub fn is_stream(self) -> bool {
        matches!(self, SocketKind::TcpStream | SocketKind::UnixStream)
    }

    /// The name reports use.
    pub fn name(self) -> &'static str {
        match self {
            SocketKind::TcpListener => "tcp listener",
            SocketKind::TcpStream => "tcp",
            SocketKind::UdpSocket => "udp",
            SocketKind::UnixListener => "unix listener",
            SocketKind::UnixStream => "unix",
            SocketKind::UnixDatagram => "unix datagram",
        }
    }
}

/// How a [`Event::NetOpen`] made its socket.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OpenHow {
    /// Bound to a local address (a listener, a datagram socket).
    Bind,
    /// Connected to a peer: a client's stream.
    Connect,
    /// Accepted from a listener (`from`).
    Accept,
    /// One of two connected ends made together (`UnixStream::pair`): `from` is the other.
    Pair,
}

/// A socket operation, as a [`Event::NetFail`] names the one that failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NetOp {
    /// Binding a listener or datagram socket.
    Bind,
    /// Connecting.
    Connect,
    /// Accepting.
    Accept,
    /// Reading (or peeking) a stream.
    Read,
    /// Writing a stream.
    Write,
    /// Sending a datagram.
    SendTo,
    /// Receiving (or peeking) a datagram.
    RecvFrom,
    /// Shutting a stream down.
    Shutdown,
}

impl NetOp {
    /// The name reports use.
    pub fn name(self) -> &'static str {
        match self {
            NetOp::Bind => "bind",
            NetOp::Connect => "connect",
            NetOp::Accept => "accept",
            NetOp::Read => "read",
            NetOp::Write => "write",
            NetOp::SendTo => "send_to",
            NetOp::RecvFrom => "recv_from",
            NetOp::Shutdown => "shutdown",
        }
    }
}

/// An I/O error as the log keeps it: std's error kind, and the OS error number when there was
/// one (replay rebuilds the same `io::Error` from it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct NetError {
    /// `std::io::ErrorKind`, as [`NetError::kind_code`] numbers it.
    pub kind: u8,
    /// The raw OS error, when the error came from the OS.
    pub os: Option<i32>,
}

/// The error kinds a log names by number; any other is `Other` (code 0).
const ERROR_KINDS: [std::io::ErrorKind; 22] = {
    use std::io::ErrorKind as K;
    [
        K::Other,
        K::NotFound,
        K::PermissionDenied,
        K::ConnectionRefused,
        K::ConnectionReset,
        K::ConnectionAborted,
        K::NotConnected,
        K::AddrInUse,
        K::AddrNotAvailable,
        K::BrokenPipe,
        K::AlreadyExists,
        K::WouldBlock,
        K::InvalidInput,
        K::InvalidData,
        K::TimedOut,
        K::WriteZero,
        K::Interrupted,
        K::Unsupported,
        K::UnexpectedEof,
        K::OutOfMemory,
        K::HostUnreachable,
        K::NetworkUnreachable,
    ]
};

impl NetError {
    /// The log's number for an error kind.
    pub fn kind_code(kind: std::io::ErrorKind) -> u8 {
        ERROR_KINDS
            .iter()
            .position(|k| *k == kind)
            .map_or(0, |i| i as u8)
    }

    /// How the log keeps `error`.
    pub fn of(error: &std::io::Error) -> NetError {
        NetError {
            kind: NetError::kind_code(error.kind()),
            os: error.raw_os_error(),
        }
    }

    /// The error kind (`Other` for a number the log does not know).
    pub fn kind(self) -> std::io::ErrorKind {
        ERROR_KINDS
            .get(usize::from(self.kind))
            .copied()
            .unwrap_or(std::io::ErrorKind::Other)
    }

    /// The error again: from the OS number when there was one (same kind and message), else
    /// from the kind.
    pub fn to_io(self) -> std::io::Error {
        match self.os {
            Some(code) => std::io::Error::from_raw_os_error(code),
            None => std::io::Error::new(self.kind(), "error logged by ppd"),
        }
    }
}

impl fmt::Display for NetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.os {
            Some(code) => write!(f, "{}", std::io::Error::from_raw_os_error(code)),
            None => write!(f, "{}", self.kind()),
        }
    }
}

/// One event of one logical process.
#[derive(Clone, Debug, PartialEq)]
pub enum Event<R: Repr = Owned> {
    /// First event of every process; `parent` is the spawning process (none for `main`).
    Start {
        /// The spawning process.
        parent: Option<ProcessId>,
    },
    /// This process spawned `child`.
    Spawn {
        /// The new process.
        child: ProcessId,
        /// Where `spawn` was called.
        site: Option<R::Site>,
    },
    /// This process joined `child`, which had ended.
    Join {
        /// The joined process.
        child: ProcessId,
        /// Where `join` was called.
        site: Option<R::Site>,
    },
    /// The process ended normally.
    Exit,
    /// The process panicked.
    Panic {
        /// The panic message.
        message: R::Text,
        /// Source file of the panic.
        file: R::Text,
        /// Line of the panic.
        line: u32,
    },
    /// The process created a shared object.
    Create {
        /// The new object.
        object: ObjectId,
        /// What it is.
        kind: ObjectKind,
        /// Initial count (semaphore) or value (atomic); 0 otherwise.
        init: u64,
        /// A name the user gave it.
        name: Option<R::Name>,
        /// Where it was created.
        site: Option<R::Site>,
    },
    /// A message was sent on `channel` with sequence number `seq`.
    Send {
        /// The channel.
        channel: ObjectId,
        /// The message's number: from 1, unique on the channel, and growing with each message
        /// its sender sends on it. The recorder numbers in runs of 64 per sending process, so
        /// a channel's numbers have gaps (`docs/format.md`).
        seq: u64,
        /// Where `send` was called.
        site: Option<R::Site>,
        /// The message, when payloads are logged.
        payload: Option<R::Bytes>,
    },
    /// A message was received: the item of the communication history.
    Recv {
        /// The channel.
        channel: ObjectId,
        /// The sending process.
        sender: ProcessId,
        /// The message's sequence number (see [`Event::Send`]).
        seq: u64,
        /// Where the receive was called.
        site: Option<R::Site>,
        /// The message, when payloads are logged or inside an e-block.
        payload: Option<R::Bytes>,
    },
    /// A receive returned no message (the history's Null item).
    RecvNone {
        /// The channel.
        channel: ObjectId,
        /// Why nothing was received.
        outcome: RecvOutcome,
        /// Where the receive was called.
        site: Option<R::Site>,
    },
    /// A select chose its `index`-th operation; the `Recv` follows.
    Select {
        /// Index of the chosen operation, in the order they were added.
        index: u32,
        /// Where `select` was called.
        site: Option<R::Site>,
    },
    /// A mutex was acquired; `version` counts acquisitions of this mutex from 1.
    Lock {
        /// The mutex.
        object: ObjectId,
        /// Acquisition number.
        version: u64,
        /// Who held it before (none for the first acquisition).
        prev: Option<ProcessId>,
        /// Where `lock` was called.
        site: Option<R::Site>,
        /// The guarded value at acquisition, when an e-block needs it.
        value: Option<R::Bytes>,
    },
    /// A mutex was released.
    Unlock {
        /// The mutex.
        object: ObjectId,
        /// Where the guard was dropped.
        site: Option<R::Site>,
    },
    /// A semaphore P operation completed; `version` counts operations on the semaphore.
    SemAcquire {
        /// The semaphore.
        object: ObjectId,
        /// Operation number.
        version: u64,
        /// Who did the previous operation.
        prev: Option<ProcessId>,
        /// Where `acquire` was called.
        site: Option<R::Site>,
    },
    /// A semaphore V operation.
    SemRelease {
        /// The semaphore.
        object: ObjectId,
        /// Operation number.
        version: u64,
        /// Who did the previous operation.
        prev: Option<ProcessId>,
        /// Where `release` was called.
        site: Option<R::Site>,
    },
    /// An atomic access; `version` counts accesses to the object from 1.
    Atomic {
        /// The atomic.
        object: ObjectId,
        /// Access number.
        version: u64,
        /// Who did the previous access.
        prev: Option<ProcessId>,
        /// What the access did.
        op: AtomicOp,
        /// The ordering the program used (for a compare-exchange or `fetch_update`: its
        /// success ordering).
        ordering: MemOrdering,
        /// The failure ordering of a compare-exchange or `fetch_update`; none for every other
        /// access. A failed one (`CasFail`) is ordered by this, not by `ordering`.
        failure: Option<MemOrdering>,
        /// Where the access was made.
        site: Option<R::Site>,
        /// The value read (loads, read-modify-writes), when an e-block needs it.
        value: Option<u64>,
    },
    /// A clock read and its value.
    Clock {
        /// Which clock.
        source: ClockSource,
        /// Nanoseconds (see [`ClockSource`]).
        nanos: u64,
    },
    /// A random number drawn and its value.
    Random {
        /// The raw 64 random bits.
        value: u64,
    },
    /// Entry of an e-block: its prelog (the arguments).
    EblockEnter {
        /// The e-block's name.
        eblock: R::Name,
        /// Where the e-block is defined.
        site: Option<R::Site>,
        /// The arguments, encoded as a MessagePack array.
        prelog: R::Bytes,
    },
    /// Exit of the innermost open e-block: its postlog.
    EblockExit {
        /// The e-block's name.
        eblock: R::Name,
        /// The return value and final `&mut` arguments, encoded as a MessagePack array.
        postlog: R::Bytes,
    },
    /// A user mark: `ppd::mark!(label, value)`.
    Mark {
        /// The label.
        label: R::Name,
        /// Where the mark is.
        site: Option<R::Site>,
        /// The value, MessagePack-encoded.
        value: R::Bytes,
    },
    /// The process is about to block on `object` (a receive, lock or semaphore that must wait).
    Blocked {
        /// The object waited on.
        object: ObjectId,
        /// Where the blocking call was made.
        site: Option<R::Site>,
    },
    /// The send just logged found every receiver gone: message `seq` was not delivered and
    /// the send returned an error.
    Undelivered {
        /// The channel.
        channel: ObjectId,
        /// The message's sequence number.
        seq: u64,
        /// Where `send` was called.
        site: Option<R::Site>,
    },
    /// The process is about to wait in `join` for `child`, which has not ended yet: what a
    /// hang through a join leaves at the end of the log.
    JoinBlocked {
        /// The process waited for.
        child: ProcessId,
        /// Where `join` was called.
        site: Option<R::Site>,
    },
    /// The process is about to sleep for `nanos` nanoseconds (`ppd::thread::sleep`): a wait
    /// that only time ends, and what a run killed during a sleep leaves at the end of the log.
    Sleep {
        /// How long it asked to sleep.
        nanos: u64,
        /// Where `sleep` was called.
        site: Option<R::Site>,
    },
    /// A query whose answer depends on the run (timing, the machine) and that replay must give
    /// again: which question, and what it answered.
    Answer {
        /// What was asked.
        question: Question,
        /// The answer (see [`Question`]).
        value: u64,
        /// Where it was asked.
        site: Option<R::Site>,
    },
    /// The answer of a non-blocking operation on `object` (a `try_lock` that found the lock
    /// held, or acquired it: then its `Lock` follows).
    Outcome {
        /// The object asked.
        object: ObjectId,
        /// The answer.
        outcome: Outcome,
        /// Where the operation was called.
        site: Option<R::Site>,
    },
    /// A reader-writer lock was acquired, shared or exclusive. Every acquisition and release
    /// of the lock has a version: replay makes them in the recorded order.
    RwAcquire {
        /// The lock.
        object: ObjectId,
        /// Operation number, counting acquisitions and releases of this lock from 1.
        version: u64,
        /// Who made the previous operation (none for the first).
        prev: Option<ProcessId>,
        /// Read or write.
        mode: RwMode,
        /// Where `read`/`write` was called.
        site: Option<R::Site>,
        /// The guarded value at acquisition, when an e-block needs it.
        value: Option<R::Bytes>,
    },
    /// A reader-writer lock was released (its guard dropped), logged while still held.
    RwRelease {
        /// The lock.
        object: ObjectId,
        /// Operation number (see `RwAcquire`).
        version: u64,
        /// Who made the previous operation.
        prev: Option<ProcessId>,
        /// Which hold ended.
        mode: RwMode,
        /// Where the guard was acquired.
        site: Option<R::Site>,
    },
    /// A socket was made (`ppd::net`): bound, connected, accepted or paired. It is the
    /// socket's creation; its addresses are what the analysis pairs the two ends of a
    /// connection by, across OS processes and hosts.
    NetOpen {
        /// The socket.
        socket: ObjectId,
        /// What it is.
        kind: SocketKind,
        /// How it was made.
        how: OpenHow,
        /// The listener it was accepted from, or the other end of a pair.
        from: Option<ObjectId>,
        /// Its local address (`""`: unnamed).
        local: R::Text,
        /// Its peer's address (`""`: none, or unnamed).
        peer: R::Text,
        /// A Unix socket's peer OS process (`SO_PEERCRED`), when known.
        peer_pid: Option<u32>,
        /// When, Unix nanoseconds: orders connections that reuse the same addresses.
        unix_ns: u64,
        /// Where the program made it.
        site: Option<R::Site>,
    },
    /// A stream write: `len` bytes at stream offset `offset` (the bytes this end wrote
    /// before), the `seq`-th write of this end. The bytes are logged where they are read.
    NetWrite {
        /// The socket.
        socket: ObjectId,
        /// Which write of this end, from 1.
        seq: u64,
        /// Bytes this end wrote before.
        offset: u64,
        /// Bytes written.
        len: u64,
        /// Where `write` was called.
        site: Option<R::Site>,
    },
    /// A stream read: the bytes read (none at the end of the stream), from stream offset
    /// `offset` (the bytes this end read before). A peek reads without consuming.
    NetRead {
        /// The socket.
        socket: ObjectId,
        /// Bytes this end read before.
        offset: u64,
        /// Whether it was a peek (the bytes stay to be read).
        peek: bool,
        /// What it read.
        data: R::Bytes,
        /// Where `read` was called.
        site: Option<R::Site>,
    },
    /// A datagram sent to `to`: its length and a digest of its bytes (the receiver logs the
    /// bytes), the `seq`-th datagram of this socket.
    NetSendTo {
        /// The socket.
        socket: ObjectId,
        /// Which datagram of this socket, from 1.
        seq: u64,
        /// Where it went.
        to: R::Text,
        /// Its length.
        len: u64,
        /// FNV-1a of its bytes ([`datagram_digest`]): pairs it with its receipt.
        digest: u64,
        /// Where `send_to` was called.
        site: Option<R::Site>,
    },
    /// A datagram received from `from`: its bytes. A peek leaves it to be received.
    NetRecvFrom {
        /// The socket.
        socket: ObjectId,
        /// Where it came from.
        from: R::Text,
        /// Whether it was a peek.
        peek: bool,
        /// What it received.
        data: R::Bytes,
        /// Where it was received.
        site: Option<R::Site>,
    },
    /// A socket operation failed, or could not go on now (`WouldBlock`, a timeout): replay
    /// returns the same error.
    NetFail {
        /// The socket (for a connect that failed, the one it would have been).
        socket: ObjectId,
        /// Which operation.
        op: NetOp,
        /// The error.
        error: NetError,
        /// Where it was called.
        site: Option<R::Site>,
    },
}

impl<R: Repr> Event<R> {
    /// The event as a recording of several OS processes numbers it: every process id, and the
    /// creator of every object id, moved up by `base`, the first id of the node whose log
    /// holds it ([`ProcessId::NODE_SHIFT`]).
    pub fn rebase(&mut self, base: u32) {
        if base == 0 {
            return;
        }
        let pid = |p: &mut ProcessId| p.0 += base;
        let opt = |p: &mut Option<ProcessId>| {
            if let Some(p) = p {
                p.0 += base;
            }
        };
        let obj = |o: &mut ObjectId| *o = o.rebased(base);
        match self {
            Event::Start { parent } => opt(parent),
            Event::Spawn { child, .. }
            | Event::Join { child, .. }
            | Event::JoinBlocked { child, .. } => pid(child),
            Event::Exit
            | Event::Panic { .. }
            | Event::Select { .. }
            | Event::Clock { .. }
            | Event::Random { .. }
            | Event::EblockEnter { .. }
            | Event::EblockExit { .. }
            | Event::Mark { .. }
            | Event::Sleep { .. }
            | Event::Answer { .. } => {}
            Event::Create { object, .. }
            | Event::Unlock { object, .. }
            | Event::Blocked { object, .. }
            | Event::Outcome { object, .. } => obj(object),
            Event::Send { channel, .. }
            | Event::RecvNone { channel, .. }
            | Event::Undelivered { channel, .. } => obj(channel),
            Event::Recv {
                channel, sender, ..
            } => {
                obj(channel);
                pid(sender);
            }
            Event::Lock { object, prev, .. }
            | Event::SemAcquire { object, prev, .. }
            | Event::SemRelease { object, prev, .. }
            | Event::Atomic { object, prev, .. }
            | Event::RwAcquire { object, prev, .. }
            | Event::RwRelease { object, prev, .. } => {
                obj(object);
                opt(prev);
            }
            Event::NetOpen { socket, from, .. } => {
                obj(socket);
                if let Some(f) = from {
                    obj(f);
                }
            }
            Event::NetWrite { socket, .. }
            | Event::NetRead { socket, .. }
            | Event::NetSendTo { socket, .. }
            | Event::NetRecvFrom { socket, .. }
            | Event::NetFail { socket, .. } => obj(socket),
        }
    }
}

/// The digest a [`Event::NetSendTo`] logs of its datagram: 64-bit FNV-1a, which pairs a
/// received datagram with its send without logging the bytes twice.
pub fn datagram_digest(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

impl<R: Repr> Event<R> {
    /// How the event changes the e-block nesting: what the walkers that only track nesting
    /// match on, so that a new kind is decided once, in [`Event::kind`].
    pub fn nesting(&self) -> Nesting {
        self.kind().nesting()
    }

    /// The event's kind.
    pub fn kind(&self) -> EventKind {
        match self {
            Event::Start { .. } => EventKind::Start,
            Event::Spawn { .. } => EventKind::Spawn,
            Event::Join { .. } => EventKind::Join,
            Event::Exit => EventKind::Exit,
            Event::Panic { .. } => EventKind::Panic,
            Event::Create { .. } => EventKind::Create,
            Event::Send { .. } => EventKind::Send,
            Event::Recv { .. } => EventKind::Recv,
            Event::RecvNone { .. } => EventKind::RecvNone,
            Event::Select { .. } => EventKind::Select,
            Event::Lock { .. } => EventKind::Lock,
            Event::Unlock { .. } => EventKind::Unlock,
            Event::SemAcquire { .. } => EventKind::SemAcquire,
            Event::SemRelease { .. } => EventKind::SemRelease,
            Event::Atomic { .. } => EventKind::Atomic,
            Event::Clock { .. } => EventKind::Clock,
            Event::Random { .. } => EventKind::Random,
            Event::EblockEnter { .. } => EventKind::EblockEnter,
            Event::EblockExit { .. } => EventKind::EblockExit,
            Event::Mark { .. } => EventKind::Mark,
            Event::Blocked { .. } => EventKind::Blocked,
            Event::Undelivered { .. } => EventKind::Undelivered,
            Event::JoinBlocked { .. } => EventKind::JoinBlocked,
            Event::Sleep { .. } => EventKind::Sleep,
            Event::Answer { .. } => EventKind::Answer,
            Event::Outcome { .. } => EventKind::Outcome,
            Event::RwAcquire { .. } => EventKind::RwAcquire,
            Event::RwRelease { .. } => EventKind::RwRelease,
            Event::NetOpen { .. } => EventKind::NetOpen,
            Event::NetWrite { .. } => EventKind::NetWrite,
            Event::NetRead { .. } => EventKind::NetRead,
            Event::NetSendTo { .. } => EventKind::NetSendTo,
            Event::NetRecvFrom { .. } => EventKind::NetRecvFrom,
            Event::NetFail { .. } => EventKind::NetFail,
        }
    }

    /// The source location of the event, when it has one.
    pub fn site(&self) -> Option<&R::Site> {
        match self {
            Event::Spawn { site, .. }
            | Event::Join { site, .. }
            | Event::Create { site, .. }
            | Event::Send { site, .. }
            | Event::Recv { site, .. }
            | Event::RecvNone { site, .. }
            | Event::Select { site, .. }
            | Event::Lock { site, .. }
            | Event::Unlock { site, .. }
            | Event::SemAcquire { site, .. }
            | Event::SemRelease { site, .. }
            | Event::Atomic { site, .. }
            | Event::EblockEnter { site, .. }
            | Event::Mark { site, .. }
            | Event::Blocked { site, .. }
            | Event::Undelivered { site, .. }
            | Event::JoinBlocked { site, .. }
            | Event::Sleep { site, .. }
            | Event::Answer { site, .. } => site.as_ref(),
            Event::Outcome { site, .. }
            | Event::RwAcquire { site, .. }
            | Event::RwRelease { site, .. }
            | Event::NetOpen { site, .. }
            | Event::NetWrite { site, .. }
            | Event::NetRead { site, .. }
            | Event::NetSendTo { site, .. }
            | Event::NetRecvFrom { site, .. }
            | Event::NetFail { site, .. } => site.as_ref(),
            Event::Start { .. }
            | Event::Exit
            | Event::Panic { .. }
            | Event::Clock { .. }
            | Event::Random { .. }
            | Event::EblockExit { .. } => None,
        }
    }

    /// The shared object the event acts on, when it acts on one.
    pub fn object(&self) -> Option<ObjectId> {
        match self {
            Event::Create { object, .. }
            | Event::Lock { object, .. }
            | Event::Unlock { object, .. }
            | Event::SemAcquire { object, .. }
            | Event::SemRelease { object, .. }
            | Event::Atomic { object, .. }
            | Event::Blocked { object, .. }
            | Event::Outcome { object, .. }
            | Event::RwAcquire { object, .. }
            | Event::RwRelease { object, .. } => Some(*object),
            Event::NetOpen { socket, .. }
            | Event::NetWrite { socket, .. }
            | Event::NetRead { socket, .. }
            | Event::NetSendTo { socket, .. }
            | Event::NetRecvFrom { socket, .. }
            | Event::NetFail { socket, .. } => Some(*socket),
            Event::Send { channel, .. }
            | Event::Recv { channel, .. }
            | Event::RecvNone { channel, .. }
            | Event::Undelivered { channel, .. } => Some(*channel),
            Event::Start { .. }
            | Event::Spawn { .. }
            | Event::Join { .. }
            | Event::Exit
            | Event::Panic { .. }
            | Event::Select { .. }
            | Event::Clock { .. }
            | Event::Random { .. }
            | Event::EblockEnter { .. }
            | Event::EblockExit { .. }
            | Event::Mark { .. }
            | Event::JoinBlocked { .. }
            | Event::Sleep { .. }
            | Event::Answer { .. } => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Site;

    fn site(line: u32) -> Site {
        Site {
            file: "src/interned.rs".into(),
            line,
            column: 5,
        }
    }

    #[test]
    fn a_site_is_interned_once_per_location() {
        let first = site(7).intern();
        let again = site(7).intern();
        let other = site(8).intern();
        assert!(std::ptr::eq(first, again), "one location, one copy");
        assert!(!std::ptr::eq(first, other));
        assert_eq!((first, other), (&site(7), &site(8)));
    }
}
