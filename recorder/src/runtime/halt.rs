//! Halting the live program at a breakpoint while it records (`ppd record --stop`).
//!
//! Miller & Choi, *Breakpoints and Halting in Distributed Programs*, §4. The debugger (`ppd
//! record`) is a process of its own with a control channel to every OS process (node) of the
//! program: the Unix socket each node's control thread connects to. A breakpoint is evaluated
//! where it occurs: each process checks the events it logs against the triggers that name it
//! ([`LiveStop`]). The process where one matches halts at once and starts a halt in its node,
//! and the node tells the debugger, which sends the halt marker to every other node. Within a
//! node the marker reaches every process through the halt id in [`HALT`]: each halts at the
//! start of its next operation, appending itself to the node's halting order. A process
//! blocked in an operation waits for a halted one, so it is halted as it is; one that logs
//! nothing more in a second is reported as running. Each node reports its part; the debugger
//! answers every node with the same command.
//!
//! Where this goes beyond the paper: the paper's processes halt on receiving the marker on
//! any channel, so the halted state is consistent because markers follow messages. Here a
//! process halts before an operation, never between an operation and its log entry, so no
//! receive of a ppd channel is in the cut without its send (a message is logged as sent before
//! its receive can complete). Between nodes the marker goes over the control connections, not
//! the program's sockets, so a socket read may be in a node's part while the write it read
//! is not in the writer's: nothing is added to the bytes the program sends.
//!
//! A conjunction (`&`) halts when every process it names has, as its last event, one that
//! holds its part. A simultaneous predicate (`==`, Spezialetti & Gupta) halts when every part
//! holds at once as a stable state (`enter F` while inside F, `mark L` from the mark on): a
//! moment of the real run, so a consistent state where all hold; `ppd replay --stop` also
//! finds the states of the run's lattice where they could have held at once.
//!
//! A conjunction or simultaneous predicate whose parts name processes of several nodes
//! ([`LiveStop::across`]) cannot be seen whole by any node. The debugger is then where the
//! parts meet, as the state's lock is within a node: a node tells it which parts its
//! processes hold whenever that changes — when an event starts a part, and before the
//! operation that ends one — and the process that changed them waits for the answer. The
//! debugger takes the nodes' changes in one order; when with one every part holds, it sends
//! every other node the halt marker and tells the changing process to halt at its event. A
//! process whose part ended waits before its operation, so if the debugger had already
//! decided, the marker finds it still at the event that held its part: the halted state has
//! every part holding. The cost is a round trip to the debugger per part that starts or ends,
//! nothing on other events. Recognition points are not used across nodes (the knowledge they
//! rest on would have to travel with the program's bytes).
//!
//! A linked predicate (`->`) follows Miller & Choi §6: a process whose event matches the
//! next stage of the predicate its causal past has reached moves to the stage after, and the
//! stage travels as a *predicate marker* with everything that orders events in replay: the
//! message it sends, the spawn of a process, its end to the joiner, the release of a mutex to
//! the next acquisition, each access of a semaphore, reader-writer lock or atomic to the next
//! (`ppd_formats::order`'s replay-order rules, the order `ppd replay` evaluates `->` on). The
//! marker is kept beside the object, in this node's table of markers, not in the program's
//! data: a send is logged before its message can be received and an unlock before the lock
//! is free, so the marker is there before anyone can take it. An access of a semaphore,
//! reader-writer lock or atomic logged after the next access began may miss its marker: the
//! halt then comes later than it could, never before its predecessor. Between OS processes
//! the marker of a socket write goes over the control connections: a process past the first
//! stage hands its stage to the debugger before it writes, the debugger forwards it to every
//! other node, and the write waits until all have kept it, so the read of those bytes, in
//! whichever node, takes it ([`before_socket_write`]).
//!
//! A condition (`if EXPR`) is evaluated on the values the event logged, as replay evaluates
//! it (`ppd_formats::condition`); an exit's condition sees the arguments its entry logged,
//! which a process keeps only when one of its triggers needs them.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use ppd_formats::condition::Stable;
use ppd_formats::live::{
    Breakpoint, DebuggerCommand, HaltReport, LiveProcess, LiveStatus, LiveStop, ProgramMessage,
    names_process,
};
use ppd_formats::order::{Order, Point, Rule};
use ppd_formats::{Borrowed, Event, EventKind, ObjectId, ProcessId};
use rustc_hash::FxHashMap;

/// The id of the halt in progress in this node, 0 when none: every operation of a recording
/// process looks at it first ([`check_needed`]).
static HALT: AtomicU64 = AtomicU64::new(0);

/// Under a conjunction, how many processes' last events hold one of its components: each of
/// them must clear its part before its next operation, or halt there ([`before_operation`]).
static HOLDING: AtomicU64 = AtomicU64::new(0);

/// Whether stream writes hand their writer's stage to the other nodes: a linked predicate
/// across nodes is armed ([`before_socket_write`]).
static SOCKET_MARKS: AtomicBool = AtomicBool::new(false);

static LIVE: OnceLock<Live> = OnceLock::new();

/// How long the report waits for processes still running their own code to halt.
const SETTLE: Duration = Duration::from_secs(1);

/// The breakpoint and the state of its halts.
struct Live {
    stop: LiveStop,
    /// This node's name in the recording, and whether it is the first node.
    node: String,
    first: bool,
    armed: AtomicBool,
    state: Mutex<State>,
    /// Signalled when a process halts or a halt starts (the control thread waits on it).
    changed: Condvar,
    /// Signalled when the debugger resumes the program.
    resumed: Condvar,
    /// Under a linked predicate, or `==` with recognition points: the predicate markers left
    /// at synchronization points, each the stage (linked) or the parts known to have held
    /// (`==`, one bit each) it carries; `marking` says whether there are any without taking
    /// the lock.
    markers: Mutex<FxHashMap<Point<ObjectId>, u64>>,
    marking: AtomicBool,
    /// Evaluations of the whole conjunction since the program started or last resumed.
    evaluations: AtomicU64,
    /// The connection's writing end, shared by the report thread and, across nodes, the
    /// processes that tell the debugger their parts.
    teller: Mutex<UnixStream>,
    /// Under a linked predicate across nodes: each socket's local and peer address, and the
    /// stages other nodes' writers handed on, by the direction of their bytes (writer's
    /// address, reader's address), with the stream offset their write began at.
    sockets: Mutex<SocketMarkers>,
}

#[derive(Default)]
struct SocketMarkers {
    addresses: FxHashMap<ObjectId, (String, String)>,
    stages: FxHashMap<(String, String), Vec<(u64, u8)>>,
}

#[derive(Default)]
struct State {
    /// The last halt id given in this node.
    last_halt: u64,
    /// The halt in progress: where it began, when, and whether the debugger has its report.
    current: Option<Begun>,
    order: Vec<ProcessId>,
    /// Every process started, those that ended too (their last events are in every cut).
    processes: Vec<Arc<Slot>>,
    /// Channels created with a name a trigger uses.
    named_channels: Vec<(ObjectId, String)>,
    /// Across nodes: the parts last told to the debugger, the number of the last change told,
    /// the last one it answered, and the last one it answered was complete.
    parts_told: u64,
    told: u64,
    answered: u64,
    completed: u64,
}

#[derive(Clone)]
struct Begun {
    halt: u64,
    /// None when the halt came from another node's breakpoint.
    breakpoint: Option<Breakpoint>,
    at: Instant,
    reported: bool,
}

const RUNNING: u8 = 0;
const WAITING: u8 = 1;
const HALTED: u8 = 2;
const ENDED: u8 = 3;

/// A live process as the halting algorithm sees it: kept by the process's record backend,
/// which updates it as it logs, and listed for the report. Aligned to its own cache lines:
/// each process writes its slot at every event, and slots side by side on the heap would
/// make the processes contend for one line.
#[derive(Debug)]
#[repr(align(128))]
pub(crate) struct Slot {
    id: ProcessId,
    name: String,
    /// The OS thread running it.
    thread: u32,
    /// The triggers that name this process.
    triggers: Vec<usize>,
    status: AtomicU8,
    events: AtomicU64,
    /// The halt this process last halted in.
    halted_in: AtomicU64,
    /// Under a conjunction: the components its last event holds, one bit each.
    holding: AtomicU64,
    /// Under a linked predicate: how many of its stages the process's causal past has passed.
    stage: AtomicU8,
    /// The prelogs of the e-blocks it is in, innermost last, when a trigger's condition on an
    /// exit may name their arguments.
    entries: Option<Mutex<Vec<Box<[u8]>>>>,
    /// Under `==`: the stable state of each of its triggers, in the order of `triggers`.
    stable: Option<Mutex<Vec<Stable>>>,
    /// Under `==` with recognition points: those in this process, and the parts it knows to
    /// have held in its causal past, one bit each.
    recognizes: Vec<usize>,
    known: AtomicU64,
}

fn live_state(live: &Live) -> MutexGuard<'_, State> {
    live.state.lock().unwrap_or_else(|p| p.into_inner())
}

/// Arms `stop` in node `node` (`first`: the node that records into the recording's own
/// directory) and connects to the debugger at `socket`; the control threads then serve it.
/// Called by the record runtime before the program's body runs.
pub(crate) fn install(stop: LiveStop, socket: &str, node: &str, first: bool) -> Result<(), String> {
    let unreachable = |e: std::io::Error| format!("cannot reach the debugger at {socket}: {e}");
    let mut stream = UnixStream::connect(socket).map_err(unreachable)?;
    send(
        &mut stream,
        &ProgramMessage::Hello {
            node: node.to_owned(),
            pid: std::process::id(),
        },
    )
    .map_err(unreachable)?;
    let commands = stream.try_clone().map_err(unreachable)?;
    let teller = Mutex::new(stream.try_clone().map_err(unreachable)?);
    allow_tracing_by_the_debugger(&stream);
    let live = Live {
        stop,
        node: node.to_owned(),
        first,
        armed: AtomicBool::new(true),
        state: Mutex::new(State::default()),
        changed: Condvar::new(),
        resumed: Condvar::new(),
        markers: Mutex::default(),
        marking: AtomicBool::new(false),
        evaluations: AtomicU64::new(0),
        teller,
        sockets: Mutex::default(),
    };
    let socket_marks = live.stop.across && !live.stop.stages.is_empty();
    if LIVE.set(live).is_err() {
        return Err("a breakpoint is already armed".into());
    }
    SOCKET_MARKS.store(socket_marks, Ordering::Relaxed);
    let spawn = |name: &str, f: Box<dyn FnOnce() + Send>| {
        std::thread::Builder::new()
            .name(name.into())
            .spawn(f)
            .map(|_| ())
            .map_err(|e| format!("cannot start the halting control thread: {e}"))
    };
    let halted = welcome(&stream);
    drop(stream);
    if halted && let Some(live) = LIVE.get() {
        // A halt is shown: the node's processes halt at their first operation.
        begin(live, None);
    }
    spawn("ppd-live-report", Box::new(report))?;
    spawn("ppd-live-commands", Box::new(move || obey(commands)))
}

/// How long a node waits for the debugger's answer to its hello before it starts anyway.
const WELCOME_WAIT: Duration = Duration::from_secs(5);

/// Reads the debugger's answer to the hello, one byte at a time so that nothing after it is
/// taken from the commands that follow: whether a halt is in progress. No answer in
/// [`WELCOME_WAIT`] (a debugger that does not send one) is none.
fn welcome(stream: &UnixStream) -> bool {
    use std::io::Read;
    let _ = stream.set_read_timeout(Some(WELCOME_WAIT));
    let mut line = Vec::new();
    let mut byte = [0u8; 1];
    let mut reader = stream;
    while let Ok(1) = reader.read(&mut byte) {
        if byte[0] == b'\n' {
            break;
        }
        line.push(byte[0]);
    }
    let _ = stream.set_read_timeout(None);
    matches!(
        serde_json::from_slice(&line),
        Ok(DebuggerCommand::Welcome { halted: true })
    )
}

/// Lets the debugger and the processes it starts (gdb, at a halt) attach to this one where the
/// kernel lets only a tracer's ancestors trace (Yama's `ptrace_scope` 1); best effort.
fn allow_tracing_by_the_debugger(stream: &UnixStream) {
    use nix::sys::socket::{getsockopt, sockopt::PeerCredentials};
    if let Ok(peer) = getsockopt(stream, PeerCredentials) {
        // SAFETY: PR_SET_PTRACER reads its integer argument only.
        unsafe {
            libc::prctl(libc::PR_SET_PTRACER, peer.pid() as libc::c_ulong, 0, 0, 0);
        }
    }
}

fn send(stream: &mut UnixStream, message: &ProgramMessage) -> std::io::Result<()> {
    let mut line = serde_json::to_string(message).expect("a message serializes");
    line.push('\n');
    stream.write_all(line.as_bytes())
}

/// Sends `message` on the connection, one line at a time whoever sends.
fn tell(live: &Live, message: &ProgramMessage) -> std::io::Result<()> {
    let mut stream = live.teller.lock().unwrap_or_else(|p| p.into_inner());
    send(&mut stream, message)
}

/// The slot of a starting process, when a breakpoint is installed.
pub(crate) fn started(id: ProcessId, name: &str) -> Option<Arc<Slot>> {
    let live = LIVE.get()?;
    let triggers = live
        .stop
        .triggers
        .iter()
        .enumerate()
        .filter(|(_, t)| t.names_process(&live.node, live.first, id, name))
        .map(|(i, _)| i)
        .collect::<Vec<_>>();
    let entries = triggers
        .iter()
        .any(|&i| live.stop.triggers[i].needs_entries())
        .then(Mutex::default);
    let stable = (live.stop.stable && !triggers.is_empty())
        .then(|| Mutex::new(vec![Stable::default(); triggers.len()]));
    let recognizes = live
        .stop
        .recognition
        .iter()
        .enumerate()
        .filter(|(_, r)| names_process(&r.process, &live.node, live.first, id, name))
        .map(|(i, _)| i)
        .collect();
    let slot = Arc::new(Slot {
        id,
        name: name.to_owned(),
        // Called on the process's own thread, as it starts.
        thread: nix::unistd::gettid().as_raw() as u32,
        triggers,
        status: AtomicU8::new(RUNNING),
        events: AtomicU64::new(0),
        halted_in: AtomicU64::new(0),
        holding: AtomicU64::new(0),
        stage: AtomicU8::new(0),
        entries,
        stable,
        recognizes,
        known: AtomicU64::new(0),
    });
    live_state(live).processes.push(Arc::clone(&slot));
    Some(slot)
}

/// The process of `slot` has ended, after its last event.
pub(crate) fn ended(slot: &Slot) {
    slot.status.store(ENDED, Ordering::Relaxed);
    if let Some(live) = LIVE.get() {
        live.changed.notify_all();
    }
}

/// Whether a halt is in progress.
#[inline]
fn requested() -> bool {
    HALT.load(Ordering::Relaxed) != 0
}

/// Whether the process must call [`before_operation`]: a halt is in progress, or a process's
/// last event holds a component of a conjunction. The check at the start of every recorded
/// operation.
#[inline]
pub(crate) fn check_needed() -> bool {
    requested() || HOLDING.load(Ordering::Relaxed) != 0
}

/// At the start of an operation of the process of `slot`: halts it if a halt is in progress;
/// then, as the operation will change its last event, the components of a conjunction it held
/// hold no more. Both under the state's lock, so that no halt can begin between them.
///
/// Under `==` a part holds across operations, while its stable state does: only those the
/// operation may end (`kind`: what it will log) stop holding here, and the event it logs says
/// whether they hold again ([`after_event`]).
pub(crate) fn before_operation(slot: &Slot, kind: EventKind) {
    let Some(live) = LIVE.get() else { return };
    let mut state = live_state(live);
    while let Some(halt) = state.current.as_ref().map(|c| c.halt)
        && slot.halted_in.load(Ordering::Relaxed) != halt
    {
        state = halt_locked(live, slot, state, halt);
    }
    let ending = if live.stop.stable {
        slot.triggers
            .iter()
            .filter(|&&i| live.stop.triggers[i].may_end(kind))
            .fold(0u64, |m, &i| m | 1 << i)
    } else {
        u64::MAX
    };
    let before = slot.holding.fetch_and(!ending, Ordering::Relaxed);
    if before != 0 && before & !ending == 0 {
        HOLDING.fetch_sub(1, Ordering::Relaxed);
    }
    if live.stop.across && before & ending != 0 && live.armed.load(Ordering::Relaxed) {
        // The debugger must know the part ended before the operation ends it; a halt it
        // decided first finds this process still at the event that held it.
        state = tell_parts(live, state).0;
        while let Some(halt) = state.current.as_ref().map(|c| c.halt)
            && slot.halted_in.load(Ordering::Relaxed) != halt
        {
            state = halt_locked(live, slot, state, halt);
        }
    }
}

/// Across nodes: tells the debugger the parts this node's processes hold, if they changed
/// since it was last told, and waits for its answer (or a halt, or the debugger's end);
/// whether it answered that every part holds with this change.
fn tell_parts<'a>(
    live: &'a Live,
    mut state: MutexGuard<'a, State>,
) -> (MutexGuard<'a, State>, bool) {
    let parts = state
        .processes
        .iter()
        .fold(0u64, |m, s| m | s.holding.load(Ordering::Relaxed));
    if parts == state.parts_told {
        return (state, false);
    }
    state.parts_told = parts;
    state.told += 1;
    let seq = state.told;
    if tell(live, &ProgramMessage::Holding { seq, parts }).is_err() {
        return (state, false);
    }
    while state.answered < seq && state.current.is_none() && live.armed.load(Ordering::Relaxed) {
        state = live.changed.wait(state).unwrap_or_else(|p| p.into_inner());
    }
    let complete = state.completed == seq;
    (state, complete)
}

/// The debugger's answer to change `seq` of this node's parts.
fn answered(live: &Live, seq: u64, complete: bool) {
    let mut state = live_state(live);
    state.answered = state.answered.max(seq);
    if complete {
        state.completed = seq;
    }
    drop(state);
    live.changed.notify_all();
}

/// The process of `slot` has just logged `event`, its `events`-th: keeps its status for the
/// report, and starts a halt when the event is a breakpoint of this process (then halts it).
pub(crate) fn after_event(slot: &Slot, event: &Event<Borrowed<'_>>, events: u64) {
    slot.events.store(events, Ordering::Relaxed);
    let status = if event.kind().is_wait() {
        WAITING
    } else {
        RUNNING
    };
    // Most events leave the status as it was: a store only when it changes.
    if slot.status.load(Ordering::Relaxed) != status {
        slot.status.store(status, Ordering::Relaxed);
    }
    let Some(live) = LIVE.get() else { return };
    let entry = slot.entries.as_ref().and_then(|e| track_entries(e, event));
    let entry = entry.as_deref();
    if let Event::Create {
        object,
        name: Some(name),
        ..
    } = event
        && live
            .stop
            .triggers
            .iter()
            .any(|t| t.channel_name() == Some(*name))
    {
        live_state(live)
            .named_channels
            .push((*object, (*name).to_owned()));
    }
    if let Event::NetOpen {
        socket,
        local,
        peer,
        ..
    } = event
        && socket_marks()
    {
        lock_sockets(live)
            .addresses
            .insert(*socket, ((*local).to_owned(), (*peer).to_owned()));
    }
    if requested() {
        live.changed.notify_all();
        return;
    }
    if !live.stop.stages.is_empty() {
        if live.armed.load(Ordering::Relaxed) {
            follow_markers(live, slot, event, entry, events);
        }
        return;
    }
    if !live.stop.recognition.is_empty() {
        if live.armed.load(Ordering::Relaxed) {
            recognize(live, slot, event, entry, events);
        }
        return;
    }
    if slot.triggers.is_empty() || !live.armed.load(Ordering::Relaxed) {
        return;
    }
    let mut matched = slot.triggers.iter().copied().filter(|&i| {
        live.stop.triggers[i].matches(event, entry, |channel, wanted| {
            channel_named(live, channel, wanted)
        })
    });
    let breakpoint = |trigger| Breakpoint {
        process: slot.id,
        event: events - 1,
        trigger,
    };
    if !live.stop.all {
        let Some(trigger) = matched.next() else {
            return;
        };
        halt_at(live, slot, live_state(live), breakpoint(trigger));
        return;
    }
    // A conjunction: this process's part holds while its last event is this one (under `==`:
    // while its stable state holds); the whole holds when every component's process holds
    // its part at once.
    let had = slot.holding.load(Ordering::Relaxed) != 0;
    let mask = match &slot.stable {
        Some(states) => observe_stable(live, slot, states, event, entry),
        None => matched.fold(0u64, |m, i| m | 1 << i),
    };
    if mask == 0 {
        if had && live.stop.across {
            // A stable state the event ended, which the operation's kind did not foretell.
            let state = live_state(live);
            if state.current.is_none() {
                drop(tell_parts(live, state));
            }
        }
        return;
    }
    let state = live_state(live);
    if state.current.is_some() {
        return;
    }
    hold(slot, mask);
    let at = breakpoint(mask.trailing_zeros() as usize);
    if live.stop.across {
        let (state, complete) = tell_parts(live, state);
        if complete {
            halt_at(live, slot, state, at);
        }
        return;
    }
    evaluate_locked(live, slot, state, at);
}

/// Under `==`: updates the stable state of each of the process's triggers with `event`; the
/// triggers that hold after it, one bit each. Parts that no longer hold stop holding here.
fn observe_stable(
    live: &Live,
    slot: &Slot,
    states: &Mutex<Vec<Stable>>,
    event: &Event<Borrowed<'_>>,
    entry: Option<&[u8]>,
) -> u64 {
    let named = |channel: ObjectId, wanted: &str| channel_named(live, channel, wanted);
    let mut states = states.lock().unwrap_or_else(|p| p.into_inner());
    let mut mask = 0u64;
    for (&i, stable) in slot.triggers.iter().zip(states.iter_mut()) {
        if stable.observe(live.stop.triggers[i].bearing(event, entry, named)) {
            mask |= 1 << i;
        }
    }
    if mask == 0 && slot.holding.swap(0, Ordering::Relaxed) != 0 {
        HOLDING.fetch_sub(1, Ordering::Relaxed);
    }
    mask
}

/// The process's parts `mask` hold (the state's lock held, no halt in progress).
fn hold(slot: &Slot, mask: u64) {
    if slot.holding.swap(mask, Ordering::Relaxed) == 0 {
        HOLDING.fetch_add(1, Ordering::Relaxed);
    }
}

/// Evaluates the whole conjunction with the state's lock held: when every part holds, the
/// process of `slot` starts a halt at `breakpoint` and halts.
fn evaluate_locked(live: &Live, slot: &Slot, state: MutexGuard<'_, State>, breakpoint: Breakpoint) {
    live.evaluations.fetch_add(1, Ordering::Relaxed);
    let held = state
        .processes
        .iter()
        .fold(0u64, |m, s| m | s.holding.load(Ordering::Relaxed));
    if held == every_trigger(live) {
        halt_at(live, slot, state, breakpoint);
    }
}

/// One bit for each trigger.
fn every_trigger(live: &Live) -> u64 {
    u64::MAX >> (64 - live.stop.triggers.len())
}

/// Under `==` with the recognition points of the static analysis (Spezialetti & Gupta §3.3):
/// every process keeps what it knows of the parts that have held in its causal past — its own
/// as it observes them, the others' as they travel, piggybacked as markers, with the
/// synchronization that orders its events (as a linked predicate's stages do). Only at a
/// recognition point, and only once it knows of every part, does the process evaluate the
/// whole predicate, on the parts that hold now: what it knows may be out of date, since
/// ppd's parts are not monotonic, so the knowledge only says where evaluating can succeed.
fn recognize(
    live: &Live,
    slot: &Slot,
    event: &Event<Borrowed<'_>>,
    entry: Option<&[u8]>,
    events: u64,
) {
    let mask = match &slot.stable {
        Some(states) => observe_stable(live, slot, states, event, entry),
        None => 0,
    };
    if mask != 0 && slot.holding.load(Ordering::Relaxed) != mask {
        let state = live_state(live);
        if state.current.is_none() {
            hold(slot, mask);
        }
    }
    let rule = event.sync().rule(slot.id, Order::Replay);
    let known = slot.known.load(Ordering::Relaxed) | mask | take_marker(live, rule);
    slot.known.store(known, Ordering::Relaxed);
    if known != 0 {
        give_marker(live, rule, known, |a, b| a | b);
    }
    let at_point = slot
        .recognizes
        .iter()
        .any(|&r| live.stop.recognition[r].is_at(event));
    if known != every_trigger(live) || !at_point {
        return;
    }
    let state = live_state(live);
    if state.current.is_some() {
        return;
    }
    let breakpoint = Breakpoint {
        process: slot.id,
        event: events - 1,
        trigger: slot.triggers.first().copied().unwrap_or(0),
    };
    evaluate_locked(live, slot, state, breakpoint);
}

/// The marker left where `rule` takes one (0 when none): a message, a spawn and an end are
/// taken once; a release or an access by every operation after it, until the next gives it
/// anew.
fn take_marker(live: &Live, rule: Rule<ObjectId>) -> u64 {
    let (Rule::Takes(point) | Rule::Chains(point)) = rule else {
        return 0;
    };
    if !live.marking.load(Ordering::Acquire) {
        return 0;
    }
    let mut markers = lock_markers(live);
    let taken = match point {
        Point::Message { .. } | Point::Spawned(_) | Point::Ended(_) => markers.remove(&point),
        Point::Released(_) | Point::Accessed(_) => markers.get(&point).copied(),
    };
    taken.unwrap_or(0)
}

/// Leaves `value` as the marker where `rule` gives one, `join`ed with the marker there.
fn give_marker(live: &Live, rule: Rule<ObjectId>, value: u64, join: fn(u64, u64) -> u64) {
    let (Rule::Gives(point) | Rule::Chains(point)) = rule else {
        return;
    };
    let mut markers = lock_markers(live);
    let carried = markers.entry(point).or_default();
    *carried = join(*carried, value);
    live.marking.store(true, Ordering::Release);
}

/// Keeps the prelogs of the e-blocks a process is in: an entry's is kept, an exit gives back
/// its entry's.
fn track_entries(
    entries: &Mutex<Vec<Box<[u8]>>>,
    event: &Event<Borrowed<'_>>,
) -> Option<Box<[u8]>> {
    let mut entries = entries.lock().unwrap_or_else(|p| p.into_inner());
    match event {
        Event::EblockEnter { prelog, .. } => {
            entries.push((*prelog).into());
            None
        }
        Event::EblockExit { .. } => entries.pop(),
        _ => None,
    }
}

/// Under a linked predicate, after the process of `slot` logged `event`, its `events`-th
/// (`entry`: an exit's entry prelog): takes the marker the event synchronizes with, moves to
/// the next stage when the event matches a trigger of the stage its past has reached, halts
/// when that was the last stage, and leaves its stage as a marker where the event gives one.
fn follow_markers(
    live: &Live,
    slot: &Slot,
    event: &Event<Borrowed<'_>>,
    entry: Option<&[u8]>,
    events: u64,
) {
    let rule = event.sync().rule(slot.id, Order::Replay);
    let mut taken = u8::try_from(take_marker(live, rule)).unwrap_or(u8::MAX);
    if let Event::NetRead {
        socket,
        offset,
        data,
        peek,
        ..
    } = event
        && socket_marks()
    {
        taken = taken.max(take_socket_marker(
            live,
            *socket,
            offset + data.len() as u64,
            *peek,
        ));
    }
    let mut stage = slot.stage.load(Ordering::Relaxed).max(taken);
    let stages = &live.stop.stages;
    if let Some(next) = stages.get(usize::from(stage)) {
        let matched = slot.triggers.iter().copied().find(|&i| {
            next.contains(&i)
                && live.stop.triggers[i].matches(event, entry, |channel, wanted| {
                    channel_named(live, channel, wanted)
                })
        });
        if let Some(trigger) = matched {
            stage += 1;
            if usize::from(stage) == stages.len() {
                let breakpoint = Breakpoint {
                    process: slot.id,
                    event: events - 1,
                    trigger,
                };
                halt_at(live, slot, live_state(live), breakpoint);
                return;
            }
        }
    }
    slot.stage.store(stage, Ordering::Relaxed);
    if stage > 0 {
        give_marker(live, rule, u64::from(stage), u64::max);
    }
}

/// Whether stream writes hand their stage on ([`SOCKET_MARKS`]).
#[inline]
pub(crate) fn socket_marks() -> bool {
    SOCKET_MARKS.load(Ordering::Relaxed)
}

fn lock_sockets(live: &Live) -> MutexGuard<'_, SocketMarkers> {
    live.sockets.lock().unwrap_or_else(|p| p.into_inner())
}

/// Under a linked predicate across nodes, before the process of `slot` writes stream bytes
/// from `offset` on to `socket`: a process past the first stage hands its stage to the
/// debugger, which forwards it to every other node, and waits until all have kept it, so
/// that a read of these bytes anywhere takes it (Miller & Choi §6's predicate marker, sent
/// on the control connections rather than in the program's bytes). A socket whose ends are
/// not both named (an unnamed Unix socket) is not followed.
pub(crate) fn before_socket_write(slot: &Slot, socket: ObjectId, offset: u64) {
    let Some(live) = LIVE.get() else { return };
    let stage = slot.stage.load(Ordering::Relaxed);
    if stage == 0 || !live.armed.load(Ordering::Relaxed) {
        return;
    }
    let Some((from, to)) = lock_sockets(live).addresses.get(&socket).cloned() else {
        return;
    };
    if from.is_empty() || to.is_empty() {
        return;
    }
    let mut state = live_state(live);
    state.told += 1;
    let seq = state.told;
    let marker = ProgramMessage::SocketMarker {
        seq,
        from,
        to,
        offset,
        stage,
    };
    if tell(live, &marker).is_err() {
        return;
    }
    loop {
        if let Some(halt) = state.current.as_ref().map(|c| c.halt)
            && slot.halted_in.load(Ordering::Relaxed) != halt
        {
            state = halt_locked(live, slot, state, halt);
            continue;
        }
        if state.answered >= seq || !live.armed.load(Ordering::Relaxed) {
            return;
        }
        state = live.changed.wait(state).unwrap_or_else(|p| p.into_inner());
    }
}

/// Another node's writer handed on `stage` for the bytes from `offset` on, from `from` to
/// `to`.
fn keep_socket_marker(live: &Live, from: String, to: String, offset: u64, stage: u8) {
    lock_sockets(live)
        .stages
        .entry((from, to))
        .or_default()
        .push((offset, stage));
}

/// The stage a read of `socket` up to stream offset `end` takes: the highest handed on for
/// bytes it read (a write that began before `end`); those are used up unless it peeked.
fn take_socket_marker(live: &Live, socket: ObjectId, end: u64, peek: bool) -> u8 {
    let mut sockets = lock_sockets(live);
    let Some((local, peer)) = sockets.addresses.get(&socket).cloned() else {
        return 0;
    };
    let Some(markers) = sockets.stages.get_mut(&(peer, local)) else {
        return 0;
    };
    let taken = markers
        .iter()
        .filter(|(offset, _)| *offset < end)
        .map(|(_, stage)| *stage)
        .max()
        .unwrap_or(0);
    if !peek {
        markers.retain(|(offset, _)| *offset >= end);
    }
    taken
}

/// Whether `channel` was created with the name `wanted`, which a trigger uses.
fn channel_named(live: &Live, channel: ObjectId, wanted: &str) -> bool {
    live_state(live)
        .named_channels
        .iter()
        .any(|(c, n)| *c == channel && n == wanted)
}

/// The process of `slot` starts a halt at `breakpoint` and halts, under one hold of the
/// state's lock, so that the initiator comes first in the halting order.
fn halt_at(live: &Live, slot: &Slot, mut state: MutexGuard<'_, State>, breakpoint: Breakpoint) {
    let halt = begin_locked(live, &mut state, Some(breakpoint));
    drop(halt_locked(live, slot, state, halt));
}

fn lock_markers(live: &Live) -> MutexGuard<'_, FxHashMap<Point<ObjectId>, u64>> {
    live.markers.lock().unwrap_or_else(|p| p.into_inner())
}

/// Starts a halt in this node, unless one is in progress: at a breakpoint of its own, or on
/// the debugger's halt marker (`breakpoint` none).
fn begin(live: &Live, breakpoint: Option<Breakpoint>) {
    let mut state = live_state(live);
    begin_locked(live, &mut state, breakpoint);
}

/// [`begin`], with the state's lock held; the id of the halt in progress, new or not.
fn begin_locked(live: &Live, state: &mut State, breakpoint: Option<Breakpoint>) -> u64 {
    if let Some(current) = &state.current {
        return current.halt;
    }
    state.last_halt += 1;
    state.current = Some(Begun {
        halt: state.last_halt,
        breakpoint,
        at: Instant::now(),
        reported: false,
    });
    state.order.clear();
    HALT.store(state.last_halt, Ordering::Release);
    live.changed.notify_all();
    state.last_halt
}

/// Halts the process of `slot` in halt `halt` (the one in progress, the state's lock held),
/// unless it has halted in it already, and hands the lock back once the debugger has resumed
/// the program. A process halts once per halt.
fn halt_locked<'a>(
    live: &'a Live,
    slot: &Slot,
    mut state: MutexGuard<'a, State>,
    halt: u64,
) -> MutexGuard<'a, State> {
    if slot.halted_in.swap(halt, Ordering::Relaxed) == halt {
        return state;
    }
    slot.status.store(HALTED, Ordering::Relaxed);
    state.order.push(slot.id);
    live.changed.notify_all();
    while state.current.as_ref().is_some_and(|c| c.halt == halt) {
        state = live.resumed.wait(state).unwrap_or_else(|p| p.into_inner());
    }
    slot.status.store(RUNNING, Ordering::Relaxed);
    state
}

/// The control thread that talks: tells the debugger of each breakpoint at once, then reports
/// the node's halted state once every process has halted (or [`SETTLE`] has passed). A
/// debugger that goes away detaches.
fn report() {
    let Some(live) = LIVE.get() else { return };
    loop {
        let begun = unreported_halt(live);
        if begun.breakpoint.is_some() && tell(live, &ProgramMessage::Started).is_err() {
            return detach(live);
        }
        let report = settled_report(live, &begun);
        if tell(live, &ProgramMessage::Halted(report)).is_err() {
            return detach(live);
        }
    }
}

/// The control thread that listens: the debugger's halt markers and commands.
fn obey(stream: UnixStream) {
    let Some(live) = LIVE.get() else { return };
    for line in BufReader::new(stream).lines() {
        let Ok(line) = line else { break };
        match serde_json::from_str::<DebuggerCommand>(&line) {
            Ok(DebuggerCommand::Halt) => begin(live, None),
            Ok(DebuggerCommand::Welcome { .. }) => {}
            Ok(DebuggerCommand::Continue) => resume(live),
            Ok(DebuggerCommand::Hold(seq)) => answered(live, seq, false),
            Ok(DebuggerCommand::Complete(seq)) => answered(live, seq, true),
            Ok(DebuggerCommand::SocketMarker {
                forward,
                from,
                to,
                offset,
                stage,
            }) => {
                keep_socket_marker(live, from, to, offset, stage);
                if tell(live, &ProgramMessage::Kept(forward)).is_err() {
                    break;
                }
            }
            Ok(DebuggerCommand::Detach) | Err(_) => break,
        }
    }
    detach(live);
}

/// Waits for a halt the debugger has not had the report of, and marks it reported.
fn unreported_halt(live: &Live) -> Begun {
    let mut state = live_state(live);
    loop {
        if let Some(begun) = state.current.as_mut().filter(|c| !c.reported) {
            begun.reported = true;
            return begun.clone();
        }
        state = live.changed.wait(state).unwrap_or_else(|p| p.into_inner());
    }
}

/// Waits for every process of the node to halt or wait (at most [`SETTLE`]); the report.
fn settled_report(live: &Live, begun: &Begun) -> HaltReport {
    let mut state = live_state(live);
    let deadline = begun.at + SETTLE;
    loop {
        let running = state
            .processes
            .iter()
            .any(|s| s.status.load(Ordering::Relaxed) == RUNNING);
        let now = Instant::now();
        if !running || now >= deadline {
            break;
        }
        let wait = (deadline - now).min(Duration::from_millis(10));
        state = live
            .changed
            .wait_timeout(state, wait)
            .unwrap_or_else(|p| p.into_inner())
            .0;
    }
    let mut processes: Vec<LiveProcess> = state
        .processes
        .iter()
        .map(|s| LiveProcess {
            id: s.id,
            name: s.name.clone(),
            status: match s.status.load(Ordering::Relaxed) {
                HALTED => LiveStatus::Halted,
                WAITING => LiveStatus::Waiting,
                ENDED => LiveStatus::Ended,
                _ => LiveStatus::Running,
            },
            events: s.events.load(Ordering::Relaxed),
            thread: s.thread,
        })
        .collect();
    processes.sort_by_key(|p| p.id);
    HaltReport {
        breakpoint: begun.breakpoint.clone(),
        order: state.order.clone(),
        processes,
        latency_ns: begun.at.elapsed().as_nanos() as u64,
        evaluations: live.evaluations.load(Ordering::Relaxed),
    }
}

/// Resumes the program; a linked predicate starts again from its first stage (Manabe &
/// Imase §4: the statuses go back to their initial values).
fn resume(live: &Live) {
    let mut state = live_state(live);
    if !live.stop.stages.is_empty() || !live.stop.recognition.is_empty() {
        for slot in &state.processes {
            slot.stage.store(0, Ordering::Relaxed);
            slot.known.store(0, Ordering::Relaxed);
        }
        lock_markers(live).clear();
        live.marking.store(false, Ordering::Release);
    }
    live.evaluations.store(0, Ordering::Relaxed);
    state.current = None;
    HALT.store(0, Ordering::Release);
    drop(state);
    live.resumed.notify_all();
    // A process waiting for the debugger's answer goes on when it has gone.
    live.changed.notify_all();
}

fn detach(live: &Live) {
    live.armed.store(false, Ordering::Relaxed);
    resume(live);
}
