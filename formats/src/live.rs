//! Halting a live program (`ppd record --stop`): what the debugger and the recording program
//! say to each other, and the halts a recording keeps.
//!
//! Miller & Choi, *Breakpoints and Halting in Distributed Programs*, §4: the debugger is a
//! process of its own, joined to every process of the program by a control channel. The
//! debugger gives the program the breakpoint ([`LiveStop`], in the environment); the process
//! where it occurs starts a halt; every process halts at its next operation, in the *halting
//! order* the report gives ([`HaltReport`]); the debugger answers with a [`DebuggerCommand`].
//! The messages are JSON, one per line, over a Unix socket.
//!
//! The halt's cut is kept in the recording ([`HALTS_FILE`]), so that `ppd replay --to halt`
//! brings a replay to the same state later.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::{Borrowed, Event, FormatError, ObjectId, ProcessId, Result};

/// A breakpoint of a live program: it occurs when any of its triggers matches an event as it
/// is logged (a simple predicate, or a disjunction of them: Miller & Choi §3.3).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LiveStop {
    /// The predicate as the user wrote it, for reports.
    pub text: String,
    /// Any of these.
    pub any_of: Vec<LiveTrigger>,
}

/// One simple predicate, `PROCESS: EVENT`, as the recording program evaluates it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LiveTrigger {
    /// The process as written: a name, the last `/`-part of a name, or an id (`p3`); the
    /// rule of [`crate::resolve_process`], applied to each process as it logs.
    pub process: String,
    /// The event.
    pub event: LiveEvent,
}

/// The event of a [`LiveTrigger`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum LiveEvent {
    /// Entry of an e-block: its full name, or its last `::` segment.
    Enter(String),
    /// Exit of an e-block, named as for `Enter`.
    Exit(String),
    /// A send, on the channel so named (its user name or its id) or on any.
    Send(Option<String>),
    /// A receive, as for `Send`.
    Recv(Option<String>),
    /// A mark with this label.
    Mark(String),
}

fn eblock_is(logged: &str, wanted: &str) -> bool {
    logged == wanted || logged.rsplit("::").next() == Some(wanted)
}

impl LiveTrigger {
    /// Whether `name` (id `id`) is the process the trigger names.
    pub fn names_process(&self, id: ProcessId, name: &str) -> bool {
        let wanted = self.process.as_str();
        name == wanted
            || (!wanted.contains('/') && name.ends_with(&format!("/{wanted}")))
            || ProcessId::parse_label(wanted) == Some(id)
    }

    /// Whether `event`, just logged by the process the trigger names, matches it;
    /// `channel_named` says whether a channel has a given name.
    pub fn matches(
        &self,
        event: &Event<Borrowed<'_>>,
        channel_named: impl Fn(ObjectId, &str) -> bool,
    ) -> bool {
        let channel_is = |wanted: &Option<String>, channel: ObjectId| match wanted {
            None => true,
            Some(w) => channel.to_string() == *w || channel_named(channel, w),
        };
        match (&self.event, event) {
            (LiveEvent::Enter(f), Event::EblockEnter { eblock, .. }) => eblock_is(eblock, f),
            (LiveEvent::Exit(f), Event::EblockExit { eblock, .. }) => eblock_is(eblock, f),
            (LiveEvent::Send(c), Event::Send { channel, .. }) => channel_is(c, *channel),
            (LiveEvent::Recv(c), Event::Recv { channel, .. }) => channel_is(c, *channel),
            (LiveEvent::Mark(l), Event::Mark { label, .. }) => label == l,
            _ => false,
        }
    }

    /// The channel name the trigger needs to know, if any: the recorder remembers the ids of
    /// channels created with it.
    pub fn channel_name(&self) -> Option<&str> {
        match &self.event {
            LiveEvent::Send(Some(c)) | LiveEvent::Recv(Some(c)) => Some(c),
            _ => None,
        }
    }
}

/// How a process stands in a halted live program.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum LiveStatus {
    /// Halted by the halting algorithm, before its next operation.
    Halted,
    /// Blocked in an operation that waits for another process, which is halted: it cannot
    /// move until the program continues.
    Waiting,
    /// Still running its own code: it had made no operation since the halt when the report
    /// was sent (it halts at its next one).
    Running,
    /// It ended before the halt: all its events are in the cut.
    Ended,
}

impl LiveStatus {
    /// In words, as the halted state shows it.
    pub fn text(self) -> &'static str {
        match self {
            LiveStatus::Halted => "halted",
            LiveStatus::Waiting => "halted while waiting",
            LiveStatus::Running => "running (no operation since the halt)",
            LiveStatus::Ended => "finished",
        }
    }
}

/// One process of a [`HaltReport`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LiveProcess {
    /// Its id.
    pub id: ProcessId,
    /// Its name.
    pub name: String,
    /// How it stands.
    pub status: LiveStatus,
    /// Events it had logged when it halted (or when the report was sent).
    pub events: u64,
}

/// Program to debugger: every process has halted (or the wait for the last ones ran out).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HaltReport {
    /// The halt's id: 1 for the first halt of the run, then one more for each.
    pub halt: u64,
    /// The process where the breakpoint occurred.
    pub initiator: ProcessId,
    /// The index of the event that matched, in the initiator's log.
    pub event: u64,
    /// Which trigger of the [`LiveStop`] matched.
    pub trigger: usize,
    /// The halting order (§4): the processes in the order they halted, the initiator first.
    pub order: Vec<ProcessId>,
    /// Every process that had started by the halt, those that ended too.
    pub processes: Vec<LiveProcess>,
    /// Nanoseconds from the breakpoint to the report.
    pub latency_ns: u64,
}

/// Debugger to program.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum DebuggerCommand {
    /// Resume every process; the breakpoint stays armed and halts the program again.
    Continue,
    /// Resume every process and disarm the breakpoint: the program runs on, recording.
    Detach,
}

/// The file, in a recording's directory, that lists its halts (JSON: an array of [`Halt`]).
pub const HALTS_FILE: &str = "halts.json";

/// A halt of the recorded run, as the recording keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Halt {
    /// The halt's id ([`HaltReport::halt`]).
    pub halt: u64,
    /// The breakpoint's predicate.
    pub predicate: String,
    /// The process where it occurred.
    pub initiator: ProcessId,
    /// The halting order.
    pub order: Vec<ProcessId>,
    /// The cut: the events of each process at the halt.
    pub cut: Vec<(ProcessId, u64)>,
}

/// The halts kept in the recording at `dir`; none when it has no halts file.
pub fn read_halts(dir: &Path) -> Result<Vec<Halt>> {
    let path = dir.join(HALTS_FILE);
    let bytes = match crate::private::read_regular(&path, "read the halts") {
        Ok(bytes) => bytes,
        Err(FormatError::Missing { .. }) => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    serde_json::from_slice(&bytes).map_err(|e| FormatError::Corrupt {
        path,
        offset: e.column() as u64,
        what: "halts",
        detail: e.to_string(),
    })
}

/// Adds `halt` to the recording at `dir`, replacing the file whole (written aside, then
/// renamed), so a reader never sees half a list.
pub fn append_halt(dir: &Path, halt: Halt) -> Result<()> {
    let mut halts = read_halts(dir)?;
    halts.retain(|h| h.halt != halt.halt);
    halts.push(halt);
    let path = dir.join(HALTS_FILE);
    let text = serde_json::to_vec_pretty(&halts).expect("halts serialize");
    crate::private::write_atomic(&path, &text, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trigger(process: &str, event: LiveEvent) -> LiveTrigger {
        LiveTrigger {
            process: process.into(),
            event,
        }
    }

    #[test]
    fn a_trigger_names_a_process_as_the_other_commands_do() {
        let t = trigger("worker", LiveEvent::Mark("x".into()));
        assert!(t.names_process(ProcessId(3), "worker"));
        assert!(t.names_process(ProcessId(3), "pool/worker"));
        assert!(!t.names_process(ProcessId(3), "worker-2"));
        assert!(trigger("p3", LiveEvent::Mark("x".into())).names_process(ProcessId(3), "a"));
    }

    #[test]
    fn a_trigger_matches_its_event_only() {
        let enter = Event::EblockEnter {
            eblock: "bank::transfer",
            site: None,
            prelog: &[][..],
        };
        let none = |_: ObjectId, _: &str| false;
        assert!(trigger("m", LiveEvent::Enter("transfer".into())).matches(&enter, none));
        assert!(trigger("m", LiveEvent::Enter("bank::transfer".into())).matches(&enter, none));
        assert!(!trigger("m", LiveEvent::Exit("transfer".into())).matches(&enter, none));
        assert!(!trigger("m", LiveEvent::Enter("fer".into())).matches(&enter, none));
        let channel = ObjectId::new(ProcessId(0), 2);
        let send = Event::Send {
            channel,
            seq: 1,
            site: None,
            payload: None,
        };
        let named = |c: ObjectId, n: &str| c == channel && n == "jobs";
        assert!(trigger("m", LiveEvent::Send(None)).matches(&send, none));
        assert!(trigger("m", LiveEvent::Send(Some("jobs".into()))).matches(&send, named));
        assert!(!trigger("m", LiveEvent::Send(Some("other".into()))).matches(&send, named));
        assert!(!trigger("m", LiveEvent::Recv(None)).matches(&send, none));
    }
}
