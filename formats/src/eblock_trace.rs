//! Traces of re-executed e-block instances (Miller & Choi §5.3), as the emulation writes them
//! and `ppd why` reads them; cached in `cache/traces/` of the recording.
//!
//! A trace is the list of the instance's events in execution order: its entry, every
//! variable definition, branch, return, and every runtime operation (receive, send, random,
//! clock, nested e-block call, atomic write, mutex release). Each record says which variables
//! its value was computed from (`uses`, syntactic), which earlier records fed it at run time
//! (`inputs`: the receive or call whose result it holds) and which branch it depends on
//! (`control`).

use serde::{Deserialize, Serialize};

use crate::ids::{ObjectId, ProcessId};

/// A value as the trace captured it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Captured {
    /// MessagePack of a `Serialize` value.
    Value(Vec<u8>),
    /// The `Debug` form of a value that is not `Serialize`.
    Debug(String),
    /// Neither: the type's name.
    Opaque(String),
}

/// What a record is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RecordKind {
    /// The instance's entry: one record per parameter (`%n`).
    Entry,
    /// A `let`, an assignment, or a place a statement changed.
    Def,
    /// An `if`, `while`, loop iteration, `match` arm or `let ... else` condition.
    Branch,
    /// The returned value (`%0`).
    Return,
    /// A message received.
    Recv,
    /// A message sent.
    Send,
    /// A nested e-block called (a sub-graph node; not re-executed).
    Call,
    /// A value from outside the program: clock, random number, shared memory.
    Input,
    /// A user mark.
    Mark,
    /// Shared memory handed to other processes: an atomic store or read-modify-write
    /// (computed from its statement's variables), or a mutex released (the end of the
    /// critical section, after which the guarded value is the next holder's).
    Publish,
    /// A thread joined: what its body returned (`joined` names it).
    Join,
}

/// A message a record sent or received.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct MessageRef {
    /// The channel.
    pub channel: ObjectId,
    /// Its sequence number.
    pub seq: u64,
    /// The sending process.
    pub sender: ProcessId,
}

/// One record of a trace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    /// What it is.
    pub kind: RecordKind,
    /// Source file.
    pub file: String,
    /// Source line.
    pub line: u32,
    /// The statement, as written.
    pub text: String,
    /// The variable (or place, `bank.accounts[account].balance`, or `%n`) it defines.
    pub var: Option<String>,
    /// The value it defines, or the branch's outcome.
    pub value: Option<Captured>,
    /// Variables its value was computed from.
    pub uses: Vec<String>,
    /// Earlier records whose results it holds (receives, calls, inputs).
    pub inputs: Vec<u32>,
    /// The branch record it is control dependent on.
    pub control: Option<u32>,
    /// The message, for sends and receives.
    pub message: Option<MessageRef>,
    /// For calls: the nested instance (index of its `EblockEnter` event).
    pub call: Option<u64>,
    /// For calls: what each argument (the receiver first, for methods) was computed from, so
    /// that the callee's `%n` maps to the caller's variables.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<Vec<String>>,
    /// For calls: the name the traced code called (`classify`, a method's name), when it
    /// announced the call: an e-block called from a function the trace does not show is
    /// recorded with that function's announcement, and its name tells them apart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub callee: Option<String>,
    /// For joins: the process joined.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub joined: Option<ProcessId>,
    /// The index of the log event it corresponds to, for runtime operations.
    pub event: Option<u64>,
}

/// The `enter` of the trace of a process's body (the closure its thread was spawned with, or
/// `main`'s body), which has no `EblockEnter` event: it is traced in a replay
/// (`ppd_replayer::body`), not re-executed from a prelog.
pub const BODY_ENTER: u64 = u64::MAX;

/// The trace of one e-block instance.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EblockTrace {
    /// The process.
    pub process: ProcessId,
    /// The e-block.
    pub eblock: String,
    /// Index of the instance's `EblockEnter` event in the process's log.
    pub enter: u64,
    /// Index of its `EblockExit` event, if it exited.
    pub exit: Option<u64>,
    /// The records, in execution order.
    pub records: Vec<Record>,
    /// Differences between what re-execution produced and what the log holds: a
    /// nondeterminism leak (`e-block`, variable, logged, reproduced). Empty when faithful.
    pub leaks: Vec<Leak>,
    /// The recorded instance panicked: `"message" at file:line`.
    #[serde(default)]
    pub logged_panic: Option<String>,
    /// The re-execution panicked: `"message" at file:line`.
    #[serde(default)]
    pub panicked: Option<String>,
}

impl EblockTrace {
    /// The trace as a recording of several OS processes numbers it: a node's re-execution
    /// names its processes and objects as the node's logs do, and the recording moves them up
    /// by the node's `base` (see `ProcessId::NODE_SHIFT`).
    pub fn rebase(&mut self, base: u32) {
        if base == 0 {
            return;
        }
        self.process.0 += base;
        for record in &mut self.records {
            if let Some(m) = &mut record.message {
                m.channel = m.channel.rebased(base);
                m.sender.0 += base;
            }
        }
    }
}

/// A value re-execution did not reproduce.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Leak {
    /// The variable (`%0`, an argument name) or event that differs.
    pub what: String,
    /// What the log holds.
    pub logged: String,
    /// What re-execution produced.
    pub reproduced: String,
}

/// What `#[ppd::eblock]` knows about an e-block without running it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EblockInfo {
    /// Its name.
    pub name: String,
    /// Where it is defined.
    pub file: String,
    /// Line of its definition.
    pub line: u32,
    /// Its parameters, in order.
    pub params: Vec<String>,
    /// The variables and places it may define (Miller & Choi's DEFINED set, syntactically).
    pub defines: Vec<String>,
}
