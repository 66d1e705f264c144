//! The answer to a why-query: a tree of steps, each a node of the dynamic program dependence
//! graph (Miller & Choi §4.2) with the dependence that led to it.

use ppd_formats::eblock_trace::RecordKind;
use serde::Serialize;

use super::point::Point;
use super::races::RaceOnChain;
use super::store::Work;

/// A why-query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Query {
    /// The process, by name (or `p<id>`).
    pub process: String,
    /// The variable or place.
    pub var: String,
    /// Where in the process's run.
    pub at: Point,
    /// How many dependences to follow from the target.
    pub depth: usize,
}

/// The node types of the dynamic program dependence graph (§4.2), plus values that came from
/// outside traced code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeKind {
    /// A parameter's value on entry (`%n`).
    Entry,
    /// The returned value on exit (`%0`).
    Exit,
    /// A statement: an assignment or a branch condition, a message operation.
    Singular,
    /// A nested e-block call, not re-executed unless the query goes into it.
    Subgraph,
    /// A value from outside the traced code: an untraced caller, a constant, the initial state.
    Outside,
}

/// How a step depends on another.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Dependence {
    /// Its value was computed from the other's.
    Data,
    /// It ran because of the other, a branch.
    Control,
}

/// What a data dependence went through, when it crossed an instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Via {
    /// A message: a synchronization edge from the sending process.
    Message,
    /// A nested call: into the callee.
    Call,
    /// A parameter: out to the caller.
    Parameter,
    /// The state an earlier instance of the process left (its postlog).
    EarlierInstance,
    /// A mutex or reader-writer lock: the critical section that last wrote what an
    /// acquisition found.
    Lock,
    /// An atomic: the write a load or read-modify-write read.
    Atomic,
    /// A join: what the joined thread's body returned.
    Join,
}

/// One step of an answer: a node of the dependence graph and the steps it depends on.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Step {
    /// Its number in the answer: its place in [`Answer::steps`].
    pub id: usize,
    /// The process's name.
    pub process: String,
    /// The process's id.
    pub pid: u32,
    /// The e-block instance it is in: its e-block.
    pub eblock: Option<String>,
    /// The instance: the index of its entry event.
    pub instance: Option<u64>,
    /// The variable or place it defines, `%n` for parameters, `%0` for returned values.
    pub var: Option<String>,
    /// Its value.
    pub value: Option<String>,
    /// Source file.
    pub file: String,
    /// Source line.
    pub line: u32,
    /// The statement.
    pub text: String,
    /// Its node type.
    pub node: NodeKind,
    /// What kind of trace record it is.
    pub record: Option<RecordKind>,
    /// The log event it corresponds to (messages, calls, inputs).
    pub event: Option<u64>,
    /// More to know.
    pub note: Option<String>,
    /// Its dependences were not followed: the depth limit.
    pub more: bool,
    /// What it depends on, in the order the search followed them.
    pub deps: Vec<Edge>,
}

/// A dependence of one step on another.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Edge {
    /// The step depended on, by its number.
    pub step: usize,
    /// Data or control.
    pub kind: Dependence,
    /// Through what, when across instances.
    pub via: Option<Via>,
    /// The lock or atomic a `via` of `lock` or `atomic` went through, by the name it was
    /// created with (else its id).
    pub through: Option<String>,
}

/// A difference re-execution found between an instance's log and its re-execution.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LeakReport {
    /// The process.
    pub process: String,
    /// The e-block.
    pub eblock: String,
    /// Index of the instance's entry event.
    pub instance: u64,
    /// The variable or event.
    pub what: String,
    /// What the log holds.
    pub logged: String,
    /// What re-execution produced.
    pub reproduced: String,
}

/// The answer to a why-query.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Answer {
    /// The process asked about.
    pub process: String,
    /// The variable asked about.
    pub var: String,
    /// The point asked about.
    pub at: String,
    /// The depth asked for.
    pub depth: usize,
    /// The chain: the target first, then the steps in the order the search reached them,
    /// breadth first, each once however many others depend on it. A list rather than a tree,
    /// so that a chain thousands of steps deep is as easy to read as a short one.
    pub steps: Vec<Step>,
    /// Nondeterminism leaks in the instances the answer used: where they are, the answer may
    /// be wrong.
    pub leaks: Vec<LeakReport>,
    /// The receives of the chain that another order of the processes could have given
    /// another message ([`races::on_chain`](super::races::on_chain)); empty until asked.
    pub races: Vec<RaceOnChain>,
    /// What the answer cost.
    pub work: Work,
}

impl Answer {
    /// The steps that are receives: where another order of the processes could have given
    /// the chain another message.
    pub fn receives(&self) -> impl Iterator<Item = &Step> {
        self.steps
            .iter()
            .filter(|s| s.record == Some(RecordKind::Recv))
    }
}

/// The graph node type of a trace record.
pub(super) fn node_kind(kind: RecordKind) -> NodeKind {
    match kind {
        RecordKind::Entry => NodeKind::Entry,
        RecordKind::Return => NodeKind::Exit,
        RecordKind::Call => NodeKind::Subgraph,
        _ => NodeKind::Singular,
    }
}
