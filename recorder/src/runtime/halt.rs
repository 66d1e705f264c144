//! Halting the live program at a breakpoint while it records (`ppd record --stop`).
//!
//! Miller & Choi, *Breakpoints and Halting in Distributed Programs*, §4. The debugger (`ppd
//! record`) is a process of its own with a control channel to the program: the Unix socket
//! this module's control thread connects to. A breakpoint is evaluated where it occurs: each
//! process checks the events it logs against the triggers that name it ([`LiveStop`]). The
//! process where one matches halts at once and starts a halt with a new halt id; the halt
//! marker reaches every other process through the control channel, which in one OS process is
//! the halt id in [`HALT`], and each halts at the start of its next operation, appending
//! itself to the halting order. A process blocked in an operation waits for a halted one, so
//! it is halted as it is; one that logs nothing more in a second is reported as running.
//!
//! Where this goes beyond the paper: the paper's processes halt on receiving the marker on
//! any channel, so the halted state is consistent because markers follow messages. Here a
//! process halts before an operation, never between an operation and its log entry, so no
//! receive is in the cut without its send (a message is sent before it can be received, and
//! the sender logged it before the receiver's operation could complete).
//!
//! Not yet: linked (`->`) and conjunctive predicates, conditions (`if`), and the processes of
//! other OS processes (nodes), which are not halted.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use ppd_formats::live::{DebuggerCommand, HaltReport, LiveProcess, LiveStatus, LiveStop};
use ppd_formats::{Borrowed, Event, ObjectId, ProcessId};

/// The id of the halt in progress, 0 when none: every operation of a recording process looks
/// at it first ([`requested`]).
static HALT: AtomicU64 = AtomicU64::new(0);

static LIVE: OnceLock<Live> = OnceLock::new();

/// How long the report waits for processes still running their own code to halt.
const SETTLE: Duration = Duration::from_secs(1);

/// The breakpoint and the state of its halts.
struct Live {
    stop: LiveStop,
    armed: AtomicBool,
    state: Mutex<State>,
    /// Signalled when a process halts or a halt starts (the control thread waits on it).
    changed: Condvar,
    /// Signalled when the debugger resumes the program.
    resumed: Condvar,
}

#[derive(Default)]
struct State {
    /// The last halt id given.
    last_halt: u64,
    /// The halt in progress: its initiator, the matching event and trigger, when it began.
    current: Option<Begun>,
    order: Vec<ProcessId>,
    /// Every process started, those that ended too (their last events are in every cut).
    processes: Vec<Arc<Slot>>,
    /// Channels created with a name a trigger uses.
    named_channels: Vec<(ObjectId, String)>,
}

#[derive(Clone, Copy)]
struct Begun {
    halt: u64,
    initiator: ProcessId,
    event: u64,
    trigger: usize,
    at: Instant,
}

const RUNNING: u8 = 0;
const WAITING: u8 = 1;
const HALTED: u8 = 2;
const ENDED: u8 = 3;

/// A live process as the halting algorithm sees it: kept by the process's record backend,
/// which updates it as it logs, and listed for the report.
#[derive(Debug)]
pub(crate) struct Slot {
    id: ProcessId,
    name: String,
    /// The triggers that name this process.
    triggers: Vec<usize>,
    status: AtomicU8,
    events: AtomicU64,
    /// The halt this process last halted in.
    halted_in: AtomicU64,
}

fn live_state(live: &Live) -> MutexGuard<'_, State> {
    live.state.lock().unwrap_or_else(|p| p.into_inner())
}

/// Arms `stop` and connects to the debugger at `socket`; the control thread then serves it.
/// Called by the record runtime before the program's body runs.
pub(crate) fn install(stop: LiveStop, socket: &str) -> Result<(), String> {
    let stream = UnixStream::connect(socket)
        .map_err(|e| format!("cannot reach the debugger at {socket}: {e}"))?;
    let live = Live {
        stop,
        armed: AtomicBool::new(true),
        state: Mutex::new(State::default()),
        changed: Condvar::new(),
        resumed: Condvar::new(),
    };
    if LIVE.set(live).is_err() {
        return Err("a breakpoint is already armed".into());
    }
    std::thread::Builder::new()
        .name("ppd-live-halt".into())
        .spawn(move || serve(stream))
        .map(|_| ())
        .map_err(|e| format!("cannot start the halting control thread: {e}"))
}

/// The slot of a starting process, when a breakpoint is installed.
pub(crate) fn started(id: ProcessId, name: &str) -> Option<Arc<Slot>> {
    let live = LIVE.get()?;
    let triggers = live
        .stop
        .any_of
        .iter()
        .enumerate()
        .filter(|(_, t)| t.names_process(id, name))
        .map(|(i, _)| i)
        .collect();
    let slot = Arc::new(Slot {
        id,
        name: name.to_owned(),
        triggers,
        status: AtomicU8::new(RUNNING),
        events: AtomicU64::new(0),
        halted_in: AtomicU64::new(0),
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

/// Whether a halt is in progress: the check at the start of every recorded operation.
#[inline]
pub(crate) fn requested() -> bool {
    HALT.load(Ordering::Relaxed) != 0
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
    slot.status.store(status, Ordering::Relaxed);
    let Some(live) = LIVE.get() else { return };
    if let Event::Create {
        object,
        name: Some(name),
        ..
    } = event
        && live
            .stop
            .any_of
            .iter()
            .any(|t| t.channel_name() == Some(*name))
    {
        live_state(live)
            .named_channels
            .push((*object, (*name).to_owned()));
    }
    if slot.triggers.is_empty() || !live.armed.load(Ordering::Relaxed) || requested() {
        if requested() {
            live.changed.notify_all();
        }
        return;
    }
    let matched = slot.triggers.iter().copied().find(|&i| {
        live.stop.any_of[i].matches(event, |channel, wanted| {
            live_state(live)
                .named_channels
                .iter()
                .any(|(c, n)| *c == channel && n == wanted)
        })
    });
    let Some(trigger) = matched else { return };
    let mut state = live_state(live);
    if state.current.is_some() {
        // Another process's breakpoint started a halt first: halt in it.
        drop(state);
        halt(slot);
        return;
    }
    state.last_halt += 1;
    let halt_id = state.last_halt;
    state.current = Some(Begun {
        halt: halt_id,
        initiator: slot.id,
        event: events - 1,
        trigger,
        at: Instant::now(),
    });
    state.order.clear();
    HALT.store(halt_id, Ordering::Release);
    drop(state);
    halt(slot);
}

/// Halts the process of `slot` in the halt in progress, until the debugger resumes the
/// program. A process halts once per halt.
pub(crate) fn halt(slot: &Slot) {
    let Some(live) = LIVE.get() else { return };
    let mut state = live_state(live);
    let Some(begun) = state.current else { return };
    if slot.halted_in.swap(begun.halt, Ordering::Relaxed) == begun.halt {
        return;
    }
    slot.status.store(HALTED, Ordering::Relaxed);
    state.order.push(slot.id);
    live.changed.notify_all();
    while state.current.is_some_and(|c| c.halt == begun.halt) {
        state = live.resumed.wait(state).unwrap_or_else(|p| p.into_inner());
    }
    slot.status.store(RUNNING, Ordering::Relaxed);
}

/// The control thread: reports each halt once every process has halted (or [`SETTLE`] has
/// passed), then waits for the debugger's command. A debugger that goes away detaches.
fn serve(stream: UnixStream) {
    let Some(live) = LIVE.get() else { return };
    let Ok(reading) = stream.try_clone() else {
        return detach(live);
    };
    let mut commands = BufReader::new(reading).lines();
    let mut writer = stream;
    loop {
        let report = settled_report(live);
        let mut line = serde_json::to_string(&report).expect("a report serializes");
        line.push('\n');
        if writer.write_all(line.as_bytes()).is_err() {
            return detach(live);
        }
        let command = match commands.next() {
            Some(Ok(line)) => serde_json::from_str::<DebuggerCommand>(&line).ok(),
            _ => None,
        };
        match command {
            Some(DebuggerCommand::Continue) => resume(live),
            Some(DebuggerCommand::Detach) | None => return detach(live),
        }
    }
}

/// Waits for a halt, then for every live process to halt or wait; the report of it.
fn settled_report(live: &Live) -> HaltReport {
    let mut state = live_state(live);
    let begun = loop {
        if let Some(begun) = state.current {
            break begun;
        }
        state = live.changed.wait(state).unwrap_or_else(|p| p.into_inner());
    };
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
        })
        .collect();
    processes.sort_by_key(|p| p.id);
    HaltReport {
        halt: begun.halt,
        initiator: begun.initiator,
        event: begun.event,
        trigger: begun.trigger,
        order: state.order.clone(),
        processes,
        latency_ns: begun.at.elapsed().as_nanos() as u64,
    }
}

fn resume(live: &Live) {
    let mut state = live_state(live);
    state.current = None;
    HALT.store(0, Ordering::Release);
    drop(state);
    live.resumed.notify_all();
}

fn detach(live: &Live) {
    live.armed.store(false, Ordering::Relaxed);
    resume(live);
}
