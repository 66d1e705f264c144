//! Halting a live program (`ppd record --stop`): what the debugger and the recording program
//! say to each other, and the halts a recording keeps.
//!
//! Miller & Choi, *Breakpoints and Halting in Distributed Programs*, §4: the debugger is a
//! process of its own, joined to every process of the program by a control channel. Every OS
//! process (node) of the recorded run connects to the debugger's Unix socket, which the
//! environment names with the breakpoint ([`LiveStop`]), and says which node it is
//! ([`ProgramMessage::Hello`]). The process where the breakpoint occurs starts a halt in its
//! node and tells the debugger ([`ProgramMessage::Started`]), which sends the halt marker to
//! every other node ([`DebuggerCommand::Halt`]); in each node every process halts at its next
//! operation, and the node reports its part of the halted state with its *halting order*
//! ([`HaltReport`]). The debugger answers every node with the same command. The messages are
//! JSON, one per line.
//!
//! The halt's cut is kept in the recording ([`HALTS_FILE`]), so that `ppd replay --to halt`
//! brings a replay to the same state later.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::condition::{Bearing, Expr, Scope};
use crate::{Borrowed, Event, EventKind, FormatError, ObjectId, ProcessId, Result};

/// A breakpoint of a live program: a simple predicate, a disjunction of them (Miller & Choi
/// §3.3: it occurs when any trigger matches an event as it is logged), a conjunction (Manabe &
/// Imase §3.2: it holds in a global state where each trigger matches its process's last
/// event), or a linked predicate (Miller & Choi §3.4: it occurs at an event matching its last
/// stage that follows, by happened-before, an event of each stage before).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LiveStop {
    /// The predicate as the user wrote it, for reports.
    pub text: String,
    /// The simple predicates.
    pub triggers: Vec<LiveTrigger>,
    /// Whether all of them must hold at once (`&`), rather than any (`|`, or one alone).
    pub all: bool,
    /// A linked predicate's stages, in order, each the triggers of a disjunction; empty for
    /// any other predicate.
    #[serde(default)]
    pub stages: Vec<Vec<usize>>,
    /// Whether the triggers are stable states that must hold at once (`==`, Spezialetti &
    /// Gupta): `all` is then set too.
    #[serde(default)]
    pub stable: bool,
    /// Under `==`: the recognition points the static analysis found (Spezialetti & Gupta
    /// §3.2.4), where alone the whole predicate is evaluated; none: at every event.
    #[serde(default)]
    pub recognition: Vec<RecognitionPoint>,
    /// The predicate names processes of several nodes. Under `&` or `==` no node can see the
    /// whole, so each tells the debugger which parts its processes hold whenever that changes
    /// ([`ProgramMessage::Holding`]) and waits for the answer; the debugger, which sees every
    /// node's parts in one order, halts the program when all hold. Under `->` a process past
    /// the first stage hands the debugger its stage before each socket write
    /// ([`ProgramMessage::SocketMarker`]), which every other node keeps before the write goes
    /// on, so the read of those bytes in another node takes it.
    #[serde(default)]
    pub across: bool,
}

/// A point of the program where a process evaluates a simultaneous predicate: a node of the
/// static analysis's DCFG, as the process's events show it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecognitionPoint {
    /// The process, named as a trigger names one.
    pub process: String,
    /// The event that is the point.
    pub at: RecognitionAt,
}

/// The event of a [`RecognitionPoint`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum RecognitionAt {
    /// The entry of this e-block.
    Enter(String),
    /// A mark with this label.
    Mark(String),
    /// The process's first event.
    Start,
    /// The process's last event.
    End,
    /// The operation at this line of this file (a send, a receive, a join).
    Site {
        /// The file, as the analysis read it.
        file: String,
        /// The line.
        line: u32,
    },
}

impl RecognitionPoint {
    /// Whether `event` is the point.
    pub fn is_at(&self, event: &Event<Borrowed<'_>>) -> bool {
        match (&self.at, event) {
            (RecognitionAt::Enter(f), Event::EblockEnter { eblock, .. }) => eblock_is(eblock, f),
            (RecognitionAt::Mark(l), Event::Mark { label, .. }) => label == l,
            (RecognitionAt::Start, Event::Start { .. }) => true,
            (RecognitionAt::End, Event::Exit | Event::Panic { .. }) => true,
            (RecognitionAt::Site { file, line }, _) => event.site().is_some_and(|site| {
                site.line() == *line && std::path::Path::new(file).ends_with(site.file())
            }),
            _ => false,
        }
    }
}

/// One simple predicate, `PROCESS: EVENT`, as the recording program evaluates it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LiveTrigger {
    /// The process as written: a name, the last `/`-part of a name, or an id (`p3`); the
    /// rule of [`crate::resolve_process`], applied to each process as it logs.
    pub process: String,
    /// The event.
    pub event: LiveEvent,
    /// A condition on the values the event logged (`if EXPR`); one on a value the event does
    /// not log is false.
    #[serde(default)]
    pub condition: Option<Expr>,
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

/// Whether `wanted`, a process as a predicate names it, is process `name` (id `id`) of node
/// `node`: see [`LiveTrigger::names_process`].
pub fn names_process(wanted: &str, node: &str, first: bool, id: ProcessId, name: &str) -> bool {
    let full = format!("{node}/{name}");
    name == wanted
        || full == wanted
        || (!wanted.contains('/') && name.ends_with(&format!("/{wanted}")))
        || (first && ProcessId::parse_label(wanted) == Some(id))
}

fn eblock_is(logged: &str, wanted: &str) -> bool {
    logged == wanted || logged.rsplit("::").next() == Some(wanted)
}

impl LiveTrigger {
    /// Whether process `name` (id `id`) of node `node` is the process the trigger names: as the
    /// recording will name it (`NODE/NAME` when it has several nodes, else `NAME`), by the
    /// rule of [`crate::resolve_process`]. An id (`p3`) names a process of the first node
    /// (`first`), whose ids are the recording's.
    pub fn names_process(&self, node: &str, first: bool, id: ProcessId, name: &str) -> bool {
        names_process(&self.process, node, first, id, name)
    }

    /// Whether `event`, just logged by the process the trigger names, matches it and
    /// satisfies its condition (an e-block's exit sees the arguments its entry logged,
    /// `entry_prelog`); `channel_named` says whether a channel has a given name.
    pub fn matches(
        &self,
        event: &Event<Borrowed<'_>>,
        entry_prelog: Option<&[u8]>,
        channel_named: impl Fn(ObjectId, &str) -> bool,
    ) -> bool {
        self.matches_event(event, &channel_named)
            && self
                .condition
                .as_ref()
                .is_none_or(|c| Scope::of(event, entry_prelog).eval(c))
    }

    /// How `event`, just logged by the process the trigger names, bears on the trigger read
    /// as a stable state (under `==`).
    pub fn bearing(
        &self,
        event: &Event<Borrowed<'_>>,
        entry_prelog: Option<&[u8]>,
        channel_named: impl Fn(ObjectId, &str) -> bool,
    ) -> Bearing {
        let holds = || self.matches(event, entry_prelog, &channel_named);
        match (&self.event, event) {
            (LiveEvent::Enter(f), Event::EblockEnter { eblock, .. }) if eblock_is(eblock, f) => {
                Bearing::Opens(holds())
            }
            (LiveEvent::Enter(f), Event::EblockExit { eblock, .. }) if eblock_is(eblock, f) => {
                Bearing::Closes
            }
            (LiveEvent::Enter(_), _) => Bearing::Leaves,
            (LiveEvent::Mark(l), Event::Mark { label, .. }) if label == l => Bearing::Sets(holds()),
            (LiveEvent::Mark(_), _) => Bearing::Leaves,
            _ => Bearing::Sets(holds()),
        }
    }

    /// Whether an operation logging a `kind` event may end the trigger's stable state: an
    /// e-block's exit for `enter F`, a mark for `mark L`, any operation for an instant.
    pub fn may_end(&self, kind: EventKind) -> bool {
        match &self.event {
            LiveEvent::Enter(_) => kind == EventKind::EblockExit,
            LiveEvent::Mark(_) => kind == EventKind::Mark,
            LiveEvent::Exit(_) | LiveEvent::Send(_) | LiveEvent::Recv(_) => true,
        }
    }

    /// Whether the trigger is about an e-block's exit with a condition, which may name the
    /// arguments its entry logged: the process must keep its entries' prelogs.
    pub fn needs_entries(&self) -> bool {
        matches!(self.event, LiveEvent::Exit(_)) && self.condition.is_some()
    }

    fn matches_event(
        &self,
        event: &Event<Borrowed<'_>>,
        channel_named: &impl Fn(ObjectId, &str) -> bool,
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
    /// The OS thread that runs it, for a debugger attached to the node (gdb's LWP).
    pub thread: u32,
}

/// Where a node's halt began.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Breakpoint {
    /// The process where the breakpoint occurred (the node's own id).
    pub process: ProcessId,
    /// The index of the event that matched, in its log.
    pub event: u64,
    /// Which trigger of the [`LiveStop`] matched.
    pub trigger: usize,
}

/// A node's part of a halted state: every process of the node has halted (or the wait for
/// the last ones ran out).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HaltReport {
    /// The breakpoint, when it occurred in this node; none when the node halted on the
    /// debugger's halt marker.
    pub breakpoint: Option<Breakpoint>,
    /// The node's halting order (§4): its processes in the order they halted.
    pub order: Vec<ProcessId>,
    /// Every process of the node that had started by the halt, those that ended too, with
    /// the node's own ids.
    pub processes: Vec<LiveProcess>,
    /// Nanoseconds from the halt's start in the node to the report.
    pub latency_ns: u64,
    /// How many times a process of the node evaluated the whole predicate since the program
    /// started or last resumed (under `&` and `==`; at recognition points only, when there
    /// are some).
    #[serde(default)]
    pub evaluations: u64,
}

/// Program (one node) to debugger.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ProgramMessage {
    /// The first message of a node's connection: its name in the recording and OS process id.
    Hello {
        /// The node's name.
        node: String,
        /// Its OS process id.
        pid: u32,
    },
    /// A breakpoint occurred in the node, which is halting.
    Started,
    /// The node has halted.
    Halted(HaltReport),
    /// Under a predicate [`LiveStop::across`] nodes: the parts this node's processes hold
    /// now, one bit per trigger, as change number `seq` of the node. The process that made
    /// the change waits for [`DebuggerCommand::Hold`] or [`DebuggerCommand::Complete`] (or
    /// the halt marker) before it goes on.
    Holding {
        /// The change's number in this node, from 1.
        seq: u64,
        /// The parts held.
        parts: u64,
    },
    /// Under a linked predicate across nodes: a process at `stage` is about to write the
    /// stream bytes from `offset` on of the connection from address `from` to `to`. The
    /// writer waits for [`DebuggerCommand::Hold`] with `seq`, which the debugger sends once
    /// every other node has kept the marker.
    SocketMarker {
        /// The request's number in this node (shared with [`ProgramMessage::Holding`]).
        seq: u64,
        /// The writing end's local address.
        from: String,
        /// Its peer's.
        to: String,
        /// The stream offset of the write's first byte.
        offset: u64,
        /// The stage the writer's past has reached.
        stage: u8,
    },
    /// The node has kept the socket marker the debugger forwarded as number `forward`.
    Kept(u64),
}

/// Debugger to program.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum DebuggerCommand {
    /// The answer to [`ProgramMessage::Hello`], read before the node's program starts:
    /// whether a halt is being shown, in which case the node starts halted.
    Welcome {
        /// A halt is in progress: the node halts before its first operation.
        halted: bool,
    },
    /// The halt marker: a breakpoint occurred in another node; halt every process of this one.
    Halt,
    /// Resume every process; the breakpoint stays armed and halts the program again.
    Continue,
    /// Resume every process and disarm the breakpoint: the program runs on, recording.
    Detach,
    /// The node's change `seq` of [`ProgramMessage::Holding`] is known, and the predicate
    /// does not hold with it: the process that made it goes on.
    Hold(u64),
    /// With the node's change `seq` every part holds: the process that made it halts there,
    /// starting the halt (the debugger has sent every other node the halt marker).
    Complete(u64),
    /// Another node's [`ProgramMessage::SocketMarker`], as the debugger's forward number
    /// `forward`: kept, it is answered with [`ProgramMessage::Kept`].
    SocketMarker {
        /// The debugger's number for it.
        forward: u64,
        /// The writing end's local address.
        from: String,
        /// Its peer's.
        to: String,
        /// The stream offset of the write's first byte.
        offset: u64,
        /// The writer's stage.
        stage: u8,
    },
}

/// The file, in a recording's directory, that lists its halts (JSON: an array of [`Halt`]).
pub const HALTS_FILE: &str = "halts.json";

/// A halt of the recorded run, as the recording keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Halt {
    /// The halt's number: 1 for the run's first, then one more for each.
    pub halt: u64,
    /// The breakpoint's predicate.
    pub predicate: String,
    /// The process where it occurred.
    pub initiator: ProcessId,
    /// The halting order: each node's, the initiator's node first.
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
            condition: None,
        }
    }

    #[test]
    fn a_trigger_names_a_process_as_the_other_commands_do() {
        let t = trigger("worker", LiveEvent::Mark("x".into()));
        assert!(t.names_process("n", true, ProcessId(3), "worker"));
        assert!(t.names_process("n", true, ProcessId(3), "pool/worker"));
        assert!(t.names_process("server", false, ProcessId(3), "worker"));
        assert!(!t.names_process("n", true, ProcessId(3), "worker-2"));
        let p3 = trigger("p3", LiveEvent::Mark("x".into()));
        assert!(p3.names_process("n", true, ProcessId(3), "a"));
        assert!(!p3.names_process("n", false, ProcessId(3), "a"));
        let qualified = trigger("server/worker", LiveEvent::Mark("x".into()));
        assert!(qualified.names_process("server", false, ProcessId(3), "worker"));
        assert!(!qualified.names_process("client", false, ProcessId(3), "worker"));
    }

    #[test]
    fn a_trigger_matches_its_event_only() {
        let enter = Event::EblockEnter {
            eblock: "bank::transfer",
            site: None,
            prelog: &[][..],
        };
        let none = |_: ObjectId, _: &str| false;
        assert!(trigger("m", LiveEvent::Enter("transfer".into())).matches(&enter, None, none));
        assert!(
            trigger("m", LiveEvent::Enter("bank::transfer".into())).matches(&enter, None, none)
        );
        assert!(!trigger("m", LiveEvent::Exit("transfer".into())).matches(&enter, None, none));
        assert!(!trigger("m", LiveEvent::Enter("fer".into())).matches(&enter, None, none));
        let channel = ObjectId::new(ProcessId(0), 2);
        let send = Event::Send {
            channel,
            seq: 1,
            site: None,
            payload: None,
        };
        let named = |c: ObjectId, n: &str| c == channel && n == "jobs";
        assert!(trigger("m", LiveEvent::Send(None)).matches(&send, None, none));
        assert!(trigger("m", LiveEvent::Send(Some("jobs".into()))).matches(&send, None, named));
        assert!(!trigger("m", LiveEvent::Send(Some("other".into()))).matches(&send, None, named));
        assert!(!trigger("m", LiveEvent::Recv(None)).matches(&send, None, none));
    }

    #[test]
    fn a_triggers_condition_is_evaluated_on_the_logged_values() {
        let value = crate::value::encode(&7u64).unwrap();
        let mark = Event::Mark {
            label: "balance",
            site: None,
            value: &value[..],
        };
        let none = |_: ObjectId, _: &str| false;
        let when = |text: &str| -> LiveTrigger {
            let condition = serde_json::from_str(text).unwrap();
            LiveTrigger {
                condition: Some(condition),
                ..trigger("m", LiveEvent::Mark("balance".into()))
            }
        };
        let over = |n: i64| {
            format!(
                r#"{{"first":{{"left":{{"Path":["value"]}},"op":"Gt","right":{{"Int":{n}}}}},"rest":[]}}"#
            )
        };
        assert!(when(&over(6)).matches(&mark, None, none));
        assert!(!when(&over(7)).matches(&mark, None, none));
        // An exit sees its entry's arguments.
        let args = crate::value::encode(&std::collections::BTreeMap::from([("n", 3u64)])).unwrap();
        let exit = Event::EblockExit {
            eblock: "f",
            postlog: &[][..],
        };
        let on_n = r#"{"first":{"left":{"Path":["n"]},"op":"Eq","right":{"Int":3}},"rest":[]}"#;
        let t = LiveTrigger {
            event: LiveEvent::Exit("f".into()),
            ..when(on_n)
        };
        assert!(t.needs_entries());
        assert!(t.matches(&exit, Some(&args), none));
        assert!(!t.matches(&exit, None, none));
    }
}
