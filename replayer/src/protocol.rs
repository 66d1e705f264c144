//! What the global debugger (in `ppd`) and the replayed program say to each other.
//!
//! One Unix socket connects them; every message is one line of JSON. The per-process control
//! channels of Miller & Choi's debugger process (§2.2.3) are multiplexed on it: commands and
//! reports that concern one process name it. Nothing listens on a network address.

use std::io::{BufRead, Write};

use ppd_formats::ProcessId;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::predicate::Resolved;

/// What the replay should do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Goal {
    /// Replay the whole run.
    Run,
    /// Halt at the first global state satisfying the predicate.
    Stop(Resolved),
    /// Run to the end, reporting every event at which a component holds (for a linked
    /// predicate, every event that reaches its last stage), with its vector clock: the first
    /// pass of `--first`, and tracing of disjunctive and linked predicates.
    History(Resolved),
    /// Halt at this consistent cut: process `i` after exactly `cut[i]` events. A process
    /// without a target stays at its start unless a listed one needs something from it, and
    /// then goes only as far as needed (the least consistent cut with the listed targets): the
    /// control messages of Manabe & Imase's Algorithm 1 (§3.2) move it, as they move a passive
    /// process whose output another needs.
    Cut(Vec<Option<u64>>),
    /// Start with every process held before its first event; move only when commanded.
    Hold,
}

/// Sent once, before the program's `main` runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Setup {
    /// What to do.
    pub goal: Goal,
    /// Compare every logged value too (payloads, prelogs, postlogs, marks), not only the
    /// outcome of each choice.
    pub verify: bool,
}

/// Commands of the global debugger.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Command {
    /// Execute the next event of `process`, running the processes it waits for (Manabe &
    /// Imase §5.1); with no process, the next event of any process that can go on.
    Step {
        /// The process to step.
        process: Option<ProcessId>,
    },
    /// Run to the next global state satisfying the predicate (Manabe & Imase §4: statuses back
    /// to their initial values).
    Resume,
    /// Run freely to the end.
    Continue,
    /// Halt every process at its next event (Miller & Choi's halting, through the control
    /// channels).
    Halt,
    /// End the program.
    Quit,
}

/// Where a process is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProcessReport {
    /// The process.
    pub id: ProcessId,
    /// Events executed: the process is in the state after event `events - 1`.
    pub events: u64,
    /// `held`, `finished`, `log ended`, `waiting`, `not started`, `diverged`.
    pub status: String,
    /// What it waits for, when it waits.
    pub waiting_for: Option<String>,
    /// Components of the predicate that hold for it.
    pub holds: Vec<usize>,
    /// Its vector clock (events of each process in its causal past), when tracked.
    pub vclock: Vec<ppd_formats::order::Tick>,
    /// The OS thread that runs it in the replayed program, once it has started.
    #[serde(default)]
    pub thread: Option<u32>,
}

/// Why the processes stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HaltReason {
    /// The predicate holds (termination of Algorithm 1, or a halt broadcast).
    Predicate,
    /// The requested cut is reached.
    Cut,
    /// A step is done.
    Step,
    /// The global debugger asked.
    Command,
    /// Every process is held before its first event.
    Start,
}

/// Reports of the program.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Report {
    /// The replay runtime is up.
    Ready {
        /// OS pid of the program.
        os_pid: u32,
    },
    /// Every process is stopped and none will move unless commanded.
    Halted {
        /// Why.
        reason: HaltReason,
        /// Every process.
        processes: Vec<ProcessReport>,
        /// Nanoseconds from the event that made the predicate true to the moment every
        /// process was held.
        latency_ns: Option<u64>,
    },
    /// History mode: the predicate's components `components` hold after event `event` of
    /// `process` (reported once per event, with every component that holds there; for a
    /// linked predicate, those of the stage the event reached).
    Satisfied {
        /// The components, ascending.
        components: Vec<usize>,
        /// The process.
        process: ProcessId,
        /// The event (0-based index in the process's log).
        event: u64,
        /// The event's vector clock.
        vclock: Vec<ppd_formats::order::Tick>,
    },
    /// The program did something the log does not say.
    Diverged {
        /// The process.
        process: ProcessId,
        /// Index of the event in its log.
        event: u64,
        /// What the log says.
        expected: String,
        /// What the program did.
        happened: String,
    },
    /// Nothing can move, and not because a predicate holds: who waits for what.
    Stuck {
        /// Every process.
        processes: Vec<ProcessReport>,
    },
    /// The predicate can never hold in this run.
    Unsatisfiable {
        /// Why.
        reason: String,
    },
    /// The run is over: every process replayed its log.
    Finished {
        /// Events replayed.
        events: u64,
        /// Every process.
        processes: Vec<ProcessReport>,
    },
}

/// Writes one message as a line of JSON.
pub fn send<T: Serialize>(out: &mut impl Write, message: &T) -> std::io::Result<()> {
    let mut line = serde_json::to_vec(message).map_err(std::io::Error::other)?;
    line.push(b'\n');
    out.write_all(&line)?;
    out.flush()
}

/// Reads one message; `Ok(None)` at the end of the stream, or at a last line cut short (the
/// writer died writing it). A whole line that is no message is `InvalidData`.
pub fn receive<T: DeserializeOwned>(input: &mut impl BufRead) -> std::io::Result<Option<T>> {
    let mut line = String::new();
    if input.read_line(&mut line)? == 0 || !line.ends_with('\n') {
        return Ok(None);
    }
    serde_json::from_str(&line)
        .map(Some)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}
