//! Phase one of Lin's two-phase debugging of task-oriented programs (seed thesis §4.2–4.3,
//! deTrEK §5.4): from the task marks `ppd::task` logs, each task's events, checked against
//! what its virtual machine expects, give an error list — which task failed, in which subtask,
//! on which process and in which role — ranked so that the root cause comes first.
//!
//! Following the thesis: a task's events are its *event set*; ordered by happened-before (the
//! vector clocks of [`crate::Clocks`], which implement the thesis's §5.4.1) they form its *event
//! graph* ([`TaskGraph`]); folding each process's events into one vertex gives the *coalesced
//! event graph*, whose vertices are complete when they hold the number of events their role
//! expects; the events where a task's data flow stops are its *frontier events*, and each
//! frontier event of a failed task is one fatal error, located at the process of the next
//! expected event (§4.3, "Failure").
//!
//! Beyond the thesis:
//!
//! * deTrEK checks the graph's shape against the VM's task computation graph without building
//!   the latter (§5.4.2); ppd does the same, unit by unit: a *unit* is a task or one subtask,
//!   and its expected life is give → begin → (split | end) → collect (→ join, for a split).
//! * The fault is named, not only located: a computation that panicked (the process's `Panic`
//!   event follows the unit's begin, and gives the `file:line`), an OS process (node) that died
//!   inside a unit while the node that handed it out went on (deTrEK's NODE fault: the
//!   recording says how each node ended), a process that stopped inside a unit (hung or
//!   killed: its log ends there), a result lost between worker and collector,
//!   a result collected twice, subtasks that all came back but were never joined.
//! * The list is ranked: by fault (a panic is a cause, a lost result usually a consequence),
//!   then units that the run overtook (a unit handed out later came back while this one did
//!   not) before units merely in flight when the run stopped, then by happened-before (a
//!   linear extension: the sum of the vector clock).
//! * deTrEK's NODE column is a processor; ppd's is the logical process that holds the unit
//!   (`NODE/THREAD` when the recording has several OS processes), which is where a sequential
//!   debugger would be attached. The NODE *fault* is deTrEK's: the unit's OS process died.
//! * Each error carries a `ppd replay --stop` predicate that halts where its unit began, for
//!   the whole run's state there; phase two, re-executing the unit alone, is [`rerun`].
//! * deTrEK holds every task's event graph; ppd follows the tasks through the run as the
//!   clocks are computed and lets each go when it completes (`tasks/follow.rs`), so the analysis
//!   holds the tasks in flight, not the run (the thesis's §7.2.2 names the space of time
//!   stamps as its limit).

mod follow;
pub(crate) mod graph;
pub mod rerun;
#[cfg(test)]
pub(crate) mod synth;

use ppd_formats::RunEnding;
use ppd_formats::task::{TaskMark, TaskStep};
use ppd_formats::{Event, ProcessId, Recording};
use serde::Serialize;

use crate::error::Result;
use crate::fasthash::FastMap;
use crate::trace::{EventRef, EventStore, Logged, Op, Trace};
use crate::vclock::Clocks;
use follow::{EventClocks, Followed, Follower, LogMarks, MarkSource};

pub use graph::TaskGraph;

/// One task mark, decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskEvent {
    /// Which step.
    pub step: TaskStep,
    /// The unit it concerns.
    pub unit: Unit,
    /// The step's argument: a worker's process id (give), a number of subtasks (split, join).
    pub arg: u64,
    /// The mark in the trace.
    pub at: EventRef,
}

/// A task or one of its subtasks.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Unit {
    /// The virtual machine run (0: labelled by hand).
    pub vm: u64,
    /// The task number.
    pub task: u64,
    /// The subtask's path from the task; empty for the task itself.
    pub path: Vec<u32>,
}

impl Unit {
    /// The path as the error list prints it: `0.1`, or `-` for the task itself.
    pub fn subtask(&self) -> String {
        if self.path.is_empty() {
            "-".to_owned()
        } else {
            self.path
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(".")
        }
    }
}

/// The task event a logged event is, if it is a task mark; a note (the label and why) if it
/// has a task mark's label but not its value.
fn task_event(at: EventRef, event: &Event) -> Option<Result<TaskEvent, (String, String)>> {
    let Event::Mark { label, value, .. } = event else {
        return None;
    };
    let step = TaskStep::of_label(label)?;
    Some(match TaskMark::decode(value) {
        Ok(TaskMark(vm, task, path, arg)) => Ok(TaskEvent {
            step,
            unit: Unit { vm, task, path },
            arg,
            at,
        }),
        Err(e) => Err((label.to_string(), e.to_string())),
    })
}

/// The note about a mark with a task mark's label and a foreign value.
fn foreign_note<S: EventStore>(
    trace: &Trace<S>,
    at: EventRef,
    (label, why): &(String, String),
) -> String {
    format!(
        "{} event {}: a {label} mark whose value is not a task's: {why}",
        trace.process_label(at.process),
        at.index
    )
}

/// Reads every task mark of `recording` into `sink`; `trace` must have been loaded from it.
/// Marks whose value is not a task mark's are listed in the notes returned, not trusted.
pub fn read_marks<S: EventStore>(
    recording: &Recording,
    trace: &Trace<S>,
    mut sink: impl FnMut(TaskEvent),
) -> Result<Vec<String>> {
    let mut notes = Vec::new();
    for entry in recording.processes() {
        let Some(p) = trace.index_of(entry.id) else {
            continue;
        };
        let Ok(reader) = recording.open_log(entry) else {
            // The trace lists the damage already.
            continue;
        };
        for item in reader.events() {
            let Ok((index, event)) = item else { break };
            let at = EventRef::new(p, index as u32);
            match task_event(at, &event) {
                Some(Ok(e)) => sink(e),
                Some(Err(foreign)) => notes.push(foreign_note(trace, at, &foreign)),
                None => {}
            }
        }
    }
    Ok(notes)
}

/// Which virtual machine a run of tasks used.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Vm {
    /// `ppd::task::farm`.
    Farm,
    /// `ppd::task::divide_and_conquer`.
    DivideAndConquer,
    /// Task code labelled with `ppd::task::enter`.
    Hand,
}

impl Vm {
    /// Its name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Vm::Farm => "farm",
            Vm::DivideAndConquer => "divide and conquer",
            Vm::Hand => "hand-labelled",
        }
    }
}

/// The kind of a fatal error.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Fault {
    /// The unit's computation panicked.
    Panic,
    /// The OS process (node) working on the unit died in it, while the one that handed it out
    /// went on: killed, crashed, or its host gone.
    Node,
    /// The process working on the unit stopped in it: hung, or killed.
    Process,
    /// The subtasks all came back, but were never joined.
    Unjoined,
    /// Handed out and never received, or computed and never collected.
    Lost,
    /// The result was collected more than once.
    Duplicate,
}

impl Fault {
    /// Its name in the error list.
    pub fn name(self) -> &'static str {
        match self {
            Fault::Panic => "PANIC",
            Fault::Node => "NODE",
            Fault::Process => "PROCESS",
            Fault::Unjoined => "UNJOINED",
            Fault::Lost => "LOST",
            Fault::Duplicate => "DUPLICATE",
        }
    }
}

/// The role of the process where an error is located (thesis §5.4.3's PROCESS column).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Handing the unit out.
    Distributing,
    /// Computing it.
    Computing,
    /// Splitting or computing it (a divide-and-conquer unit that had not said which).
    SplittingComputing,
    /// Joining its subtasks' results.
    Joining,
    /// Collecting its result.
    Collecting,
}

impl Role {
    /// Its name in the error list.
    pub fn name(self) -> &'static str {
        match self {
            Role::Distributing => "distributing",
            Role::Computing => "computing",
            Role::SplittingComputing => "splitting/computing",
            Role::Joining => "joining",
            Role::Collecting => "collecting",
        }
    }
}

/// One fatal error: a frontier event of a failed task.
#[derive(Clone, Debug, Serialize)]
pub struct TaskError {
    /// What went wrong.
    pub fault: Fault,
    /// The virtual machine.
    pub vm: Vm,
    /// Which run of it (see `ppd_formats::task::TaskMark`).
    pub run: u64,
    /// The task number.
    pub task: u64,
    /// The subtask path, `-` for the task itself.
    pub subtask: String,
    /// The logical process where the error is located (`name/pN`).
    pub node: String,
    /// That process's id.
    pub pid: u32,
    /// Its role for this unit.
    pub process: Role,
    /// The frontier event's `file:line`, when it has one.
    pub at: Option<String>,
    /// The frontier event.
    pub frontier: String,
    /// What the log shows.
    pub detail: String,
    /// Whether a unit handed out after this one came back while this one did not.
    pub overtaken: bool,
    /// A `ppd replay --stop` predicate that halts where the unit's computation begins (or, if
    /// it never began, where it was handed out): the way into phase two, re-running the unit
    /// from the log.
    pub replay: Option<String>,
    #[serde(skip)]
    rank: (Fault, bool, u64),
}

/// The outcome of phase one.
#[derive(Clone, Debug, Serialize)]
pub struct TaskReport {
    /// `success` or `failure`.
    pub verdict: &'static str,
    /// The fatal errors, root cause first.
    pub errors: Vec<TaskError>,
    /// Tasks seen (declared by a farm, or with at least one event).
    pub tasks: u64,
    /// Tasks whose every unit completed.
    pub complete: u64,
    /// Tasks a farm declared but never handed out.
    pub never_handed_out: u64,
    /// The event graphs of the failed tasks.
    pub graphs: Vec<TaskGraph>,
    /// What the analysis had to work around.
    pub notes: Vec<String>,
}

impl TaskReport {
    /// The one-line verdict: `success: N tasks complete` or `failure: K errors in N tasks`.
    pub fn verdict_line(&self) -> String {
        let tasks = |n: u64| {
            if n == 1 {
                "1 task".to_owned()
            } else {
                format!("{n} tasks")
            }
        };
        if self.verdict == "success" {
            return format!("success: {} complete", tasks(self.complete));
        }
        let errors = match self.errors.len() {
            1 => "1 error".to_owned(),
            n => format!("{n} errors"),
        };
        let mut line = format!(
            "failure: {errors} in {} ({} complete)",
            tasks(self.tasks),
            self.complete
        );
        if self.never_handed_out > 0 {
            line.push_str(&format!(", {} never handed out", self.never_handed_out));
        }
        line
    }
}

/// The events of one unit, by step.
#[derive(Clone, Debug, Default)]
pub(crate) struct UnitEvents {
    pub(crate) give: Option<(EventRef, u64)>,
    pub(crate) begin: Option<EventRef>,
    pub(crate) split: Option<(EventRef, u64)>,
    pub(crate) end: Option<EventRef>,
    /// The first collection, and the second if there was one.
    pub(crate) collects: [Option<EventRef>; 2],
    /// How many collections.
    pub(crate) collected: u32,
    pub(crate) join: Option<EventRef>,
}

impl UnitEvents {
    /// Whether the unit was begun in another OS process (node) than the one that handed it
    /// out: by a worker node of `ppd::task::farm_nodes`.
    pub(crate) fn begun_on_another_node<S: EventStore>(&self, trace: &Trace<S>) -> bool {
        let node = |e: EventRef| trace.process(e.process).id.node();
        matches!((self.give, self.begin), (Some((g, _)), Some(b)) if node(g) != node(b))
    }

    /// Its first event: where its life starts.
    pub(crate) fn first(&self) -> Option<EventRef> {
        self.give.map(|g| g.0).or(self.begin)
    }

    /// Takes step `step` at `at` with argument `arg`; a repeated step adds nothing, except a
    /// collection, which is counted.
    pub(crate) fn add(&mut self, step: TaskStep, at: EventRef, arg: u64) {
        match step {
            TaskStep::Give => self.give = self.give.or(Some((at, arg))),
            TaskStep::Begin => self.begin = self.begin.or(Some(at)),
            TaskStep::Split => self.split = self.split.or(Some((at, arg))),
            TaskStep::End => self.end = self.end.or(Some(at)),
            TaskStep::Collect => {
                if let Some(slot) = self.collects.iter_mut().find(|c| c.is_none()) {
                    *slot = Some(at);
                }
                self.collected += 1;
            }
            TaskStep::Join => self.join = self.join.or(Some(at)),
            TaskStep::Farm | TaskStep::Dc => {}
        }
    }

    /// Whether it completed, for a unit of a virtual machine of kind `vm`.
    pub(crate) fn done(&self, vm: Vm) -> bool {
        match vm {
            Vm::Hand => self.end.is_some(),
            Vm::Farm => self.collected == 1,
            Vm::DivideAndConquer if self.split.is_some() => {
                self.collected == 1 && self.join.is_some()
            }
            Vm::DivideAndConquer => self.collected == 1,
        }
    }
}

/// The task marks of a run, grouped.
#[derive(Debug, Default)]
pub(crate) struct Runs {
    /// Per virtual machine run: its kind and declared number of tasks.
    pub(crate) vms: FastMap<u64, (Vm, u64)>,
    /// Every unit's events.
    pub(crate) units: FastMap<Unit, UnitEvents>,
}

impl Runs {
    pub(crate) fn new(events: impl IntoIterator<Item = TaskEvent>) -> Runs {
        let mut runs = Runs::default();
        runs.vms.insert(0, (Vm::Hand, 0));
        for e in events {
            runs.add(e);
        }
        runs
    }

    fn add(&mut self, e: TaskEvent) {
        match e.step {
            TaskStep::Farm => {
                self.vms.insert(e.unit.vm, (Vm::Farm, e.arg));
                return;
            }
            TaskStep::Dc => {
                self.vms.insert(e.unit.vm, (Vm::DivideAndConquer, 1));
                return;
            }
            _ => {}
        }
        self.units
            .entry(e.unit)
            .or_default()
            .add(e.step, e.at, e.arg);
    }

    pub(crate) fn vm_of(&self, unit: &Unit) -> Vm {
        self.vms.get(&unit.vm).map_or(Vm::Hand, |v| v.0)
    }

    /// Whether `unit` and, for a split, every subtask below it completed.
    fn complete(&self, unit: &Unit) -> bool {
        let Some(u) = self.units.get(unit) else {
            return false;
        };
        u.done(self.vm_of(unit))
    }
}

/// Analyses the task marks `events` of a run whose events are `trace`, computing its clocks on
/// the way.
pub fn analyse<S: EventStore>(
    trace: &Trace<S>,
    events: impl IntoIterator<Item = TaskEvent>,
) -> TaskReport {
    let marks: FastMap<EventRef, TaskEvent> = events.into_iter().map(|e| (e.at, e)).collect();
    let (followed, clock_notes) = follow(trace, marks, None);
    let mut report = report(trace, &followed, &DeadNodes::default());
    report.notes.extend(clock_notes);
    report
}

/// Follows the tasks of `trace`, whose marks' values come from `marks`, as its clocks are
/// computed, keeping task `focus` whatever becomes of it; also the clocks' notes.
fn follow<S: EventStore, M: MarkSource>(
    trace: &Trace<S>,
    marks: M,
    focus: Option<u64>,
) -> (Followed, Vec<String>) {
    let mut follower = Follower::new(trace.processes().len(), marks, focus);
    let notes = Clocks::stream(trace, &mut follower);
    (follower.finish(), notes)
}

/// The nodes (OS processes) of a recording that died before they could record their end, by
/// node number: each one's name and how it ended.
#[derive(Debug, Default, Clone)]
pub struct DeadNodes(Vec<Option<(String, String)>>);

impl DeadNodes {
    /// The dead nodes of `recording`.
    pub fn of(recording: &Recording) -> DeadNodes {
        DeadNodes(
            recording
                .nodes()
                .iter()
                .map(|node| {
                    let ending = RunEnding::of(&node.dir, &node.manifest);
                    matches!(ending, RunEnding::Killed { .. } | RunEnding::CutShort)
                        .then(|| (node.name.clone(), ending.to_string()))
                })
                .collect(),
        )
    }

    /// The name and ending of `pid`'s node, if it died.
    fn of_process(&self, pid: ProcessId) -> Option<&(String, String)> {
        self.0.get(pid.node() as usize)?.as_ref()
    }
}

/// The error list and verdict of a followed run.
fn report<S: EventStore>(trace: &Trace<S>, followed: &Followed, dead: &DeadNodes) -> TaskReport {
    let (runs, clocks) = (&followed.runs, &followed.clocks);
    let overtaken = Overtaken {
        latest: &followed.latest,
    };
    let mut errors = Vec::new();
    for (unit, u) in &runs.units {
        let vm = runs.vm_of(unit);
        if let Some(mut e) = locate(trace, runs, unit, u, vm, dead) {
            e.overtaken = u.first().is_some_and(|f| overtaken.check(clocks, f));
            let sum = u.first().map_or(0, |f| clock_sum(clocks, f));
            e.rank = (e.fault, !e.overtaken, sum);
            errors.push(e);
        }
    }
    for (unit, late) in &followed.late {
        // Its task completed and was dropped: all that is left of the unit is its collections
        // (the first one went with its task, so the late one stands for both).
        let u = UnitEvents {
            collects: [Some(late.at); 2],
            collected: late.collected,
            ..UnitEvents::default()
        };
        if let Some(mut e) = locate(trace, runs, unit, &u, runs.vm_of(unit), dead) {
            e.rank = (e.fault, true, late.rank);
            errors.push(e);
        }
    }
    drop_ancestors(&mut errors);
    errors.sort_by(|a, b| {
        (a.rank, a.task, &a.subtask, a.pid).cmp(&(b.rank, b.task, &b.subtask, b.pid))
    });

    // The tasks left open or in focus: complete when all their units are.
    let mut kept: FastMap<(u64, u64), bool> = FastMap::default();
    for unit in runs.units.keys() {
        let ok = runs.complete(unit);
        *kept.entry((unit.vm, unit.task)).or_insert(true) &= ok;
    }
    let complete = followed.complete_dropped + kept.values().filter(|ok| **ok).count() as u64;
    let mut never_handed_out = 0;
    for (&vm, &(kind, count)) in &runs.vms {
        if kind == Vm::Farm {
            let seen = followed.seen.get(&vm).copied().unwrap_or(0);
            never_handed_out += count.saturating_sub(seen);
        }
    }
    let seen: u64 = followed.seen.values().sum();
    let failed: Vec<(u64, u64)> = {
        let mut f: Vec<(u64, u64)> = errors
            .iter()
            .map(|e| (e.run, e.task))
            .filter(|t| kept.contains_key(t))
            .collect();
        f.sort_unstable();
        f.dedup();
        f
    };
    let graphs = failed
        .iter()
        .map(|&(vm, task)| graph::TaskGraph::build(trace, clocks, runs, vm, task))
        .collect();
    let verdict = if errors.is_empty() && never_handed_out == 0 {
        "success"
    } else {
        "failure"
    };
    TaskReport {
        verdict,
        errors,
        tasks: seen + never_handed_out,
        complete,
        never_handed_out,
        graphs,
        notes: Vec::new(),
    }
}

/// A recording read for the task analysis: its events, and what is left of its tasks once they
/// are followed through the run in happened-before order (`tasks/follow.rs`): the tasks that did not
/// complete, with the clocks of their events.
#[derive(Debug)]
pub struct TaskRecording {
    /// Every event, left in its log: the analysis reads them in order, and looks up only the
    /// few around a failed unit.
    pub trace: Trace<Logged>,
    followed: Followed,
    dead: DeadNodes,
    notes: Vec<String>,
}

impl TaskRecording {
    /// Reads `recording` and follows its tasks. Task `focus`, if any, is kept whatever becomes
    /// of it, for [`TaskRecording::graph`] and phase two ([`rerun`]); of the others, only those
    /// that did not complete are kept.
    pub fn open(recording: &Recording, focus: Option<u64>) -> Result<TaskRecording> {
        let trace = Trace::load_logged(recording)?;
        let (followed, clock_notes) = follow(&trace, LogMarks::new(&trace), focus);
        let mut notes: Vec<String> = followed
            .foreign
            .iter()
            .map(|(at, f)| foreign_note(&trace, *at, f))
            .collect();
        notes.extend(clock_notes);
        Ok(TaskRecording {
            trace,
            followed,
            dead: DeadNodes::of(recording),
            notes,
        })
    }

    /// The error list and verdict.
    pub fn report(&self) -> TaskReport {
        let mut report = report(&self.trace, &self.followed, &self.dead);
        report.notes.extend(self.notes.iter().cloned());
        report
    }

    /// The event graph of task `task` (of the first virtual machine run that has one), if it is
    /// the task in focus or one that did not complete.
    pub fn graph(&self, task: u64) -> Option<TaskGraph> {
        graph_of(
            &self.trace,
            &self.followed.clocks,
            &self.followed.runs,
            task,
        )
    }

    /// The most tasks that were open at once as the run was followed: what the analysis's
    /// memory grows with.
    pub fn most_open(&self) -> usize {
        self.followed.most_open
    }

    /// The units kept: those of the task in focus and of the tasks that did not complete.
    fn runs(&self) -> &Runs {
        &self.followed.runs
    }
}

/// The event graph of task `task` of the first run that has one.
fn graph_of<S: EventStore, C: EventClocks>(
    trace: &Trace<S>,
    clocks: &C,
    runs: &Runs,
    task: u64,
) -> Option<TaskGraph> {
    let run = runs
        .units
        .keys()
        .filter(|u| u.task == task)
        .map(|u| u.vm)
        .min()?;
    Some(TaskGraph::build(trace, clocks, runs, run, task))
}

/// The event graph of task `task` (of the first virtual machine run that has one), if any,
/// for a run already read into `trace` and `clocks`.
pub fn task_graph<S: EventStore>(
    recording: &Recording,
    trace: &Trace<S>,
    clocks: &Clocks,
    task: u64,
) -> Result<Option<TaskGraph>> {
    let mut runs = Runs::new([]);
    read_marks(recording, trace, |e| {
        if e.unit.task == task || matches!(e.step, TaskStep::Farm | TaskStep::Dc) {
            runs.add(e);
        }
    })?;
    Ok(graph_of(trace, clocks, &runs, task))
}

/// A linear extension of happened-before: if a → b, the sum of a's clock is smaller.
fn clock_sum(clocks: &impl EventClocks, e: EventRef) -> u64 {
    (0..clocks.width() as u32)
        .map(|q| u64::from(clocks.component(e, q)))
        .sum()
}

/// Per process, the latest first event of a completed unit: a unit is overtaken when its own
/// first event happened before one of them.
struct Overtaken<'f> {
    latest: &'f [Option<u32>],
}

impl Overtaken<'_> {
    fn check(&self, clocks: &impl EventClocks, first: EventRef) -> bool {
        self.latest.iter().enumerate().any(|(p, l)| {
            l.is_some_and(|i| {
                let later = EventRef::new(p as u32, i);
                later != first && clocks.happened_before(first, later)
            })
        })
    }
}

/// `name/pN` of a process id.
fn node<S: EventStore>(trace: &Trace<S>, pid: ProcessId) -> String {
    match trace.index_of(pid) {
        Some(p) => format!("{}/{pid}", trace.process(p).name),
        None => pid.to_string(),
    }
}

fn node_of<S: EventStore>(trace: &Trace<S>, e: EventRef) -> (String, u32) {
    let id = trace.process(e.process).id;
    (node(trace, id), id.0)
}

fn site_of<S: EventStore>(trace: &Trace<S>, e: EventRef) -> Option<String> {
    trace
        .get(e)
        .and_then(|ev| trace.site(ev.site))
        .map(|s| s.to_string())
}

/// The fatal error of one unit, located at its frontier event (thesis §4.3), or `None` if the
/// unit completed or its failure shows in a subtask instead.
fn locate<S: EventStore>(
    trace: &Trace<S>,
    runs: &Runs,
    unit: &Unit,
    u: &UnitEvents,
    vm: Vm,
    dead: &DeadNodes,
) -> Option<TaskError> {
    let error = |fault, role, at: EventRef, node: (String, u32), detail: String| TaskError {
        fault,
        vm,
        run: unit.vm,
        task: unit.task,
        subtask: unit.subtask(),
        node: node.0,
        pid: node.1,
        process: role,
        at: site_of(trace, at),
        frontier: trace.describe(at),
        detail,
        overtaken: false,
        replay: stop_predicate(trace, unit, u),
        rank: (fault, true, 0),
    };
    let working = if vm == Vm::DivideAndConquer {
        Role::SplittingComputing
    } else {
        Role::Computing
    };
    if let [_, Some(second)] = u.collects {
        return Some(error(
            Fault::Duplicate,
            Role::Collecting,
            second,
            node_of(trace, second),
            format!("the result was collected {} times", u.collected),
        ));
    }
    let Some(begin) = u.begin else {
        let (give, worker) = u.give?;
        let worker = ProcessId(u32::try_from(worker).unwrap_or(u32::MAX));
        return Some(error(
            Fault::Lost,
            Role::Distributing,
            give,
            (node(trace, worker), worker.0),
            format!(
                "handed to {} and never begun there",
                trace.pid_label(worker)
            ),
        ));
    };
    let worked = u.end.or(u.split.map(|s| s.0));
    let Some(worked) = worked else {
        let elsewhere = u.begun_on_another_node(trace);
        return Some(stopped(trace, begin, working, (dead, elsewhere), &error));
    };
    if vm == Vm::Hand {
        return None;
    }
    let Some(collected) = u.collects[0] else {
        let collector = u.give.map_or(begin, |g| g.0);
        return Some(error(
            Fault::Lost,
            Role::Collecting,
            worked,
            node_of(trace, collector),
            "the result was sent back and never collected".to_owned(),
        ));
    };
    if let Some((_, n)) = u.split
        && u.join.is_none()
    {
        let children: Vec<Unit> = (0..n as u32)
            .map(|i| {
                let mut path = unit.path.clone();
                path.push(i);
                Unit {
                    vm: unit.vm,
                    task: unit.task,
                    path,
                }
            })
            .collect();
        // A subtask that failed is the frontier; the missing join is its consequence.
        if !children.iter().all(|c| runs.complete(c)) {
            return None;
        }
        let last = children
            .iter()
            .filter_map(|c| runs.units.get(c).and_then(|c| c.collects[0]))
            .max_by_key(|e| e.index)
            .unwrap_or(collected);
        // The joining process panicked after the last result came in: in the combine.
        let proc = trace.process(last.process);
        let panic = events_after(proc, last.index)
            .enumerate()
            .find_map(|(k, e)| match e.op {
                Op::Panic { message } => Some((k, message)),
                _ => None,
            });
        if let Some((k, message)) = panic {
            let at = EventRef::new(last.process, last.index + 1 + k as u32);
            return Some(error(
                Fault::Panic,
                Role::Joining,
                at,
                node_of(trace, at),
                format!("panicked: {}", trace.name(message)),
            ));
        }
        return Some(error(
            Fault::Unjoined,
            Role::Joining,
            last,
            node_of(trace, last),
            format!("all {n} subtasks came back and were never joined"),
        ));
    }
    None
}

/// The predicate of [`TaskError::replay`]: the unit's begin mark (or its give), told apart from
/// the others by its value `[run, task, path, arg]`.
fn stop_predicate<S: EventStore>(trace: &Trace<S>, unit: &Unit, u: &UnitEvents) -> Option<String> {
    let (at, step) = match (u.begin, u.give) {
        (Some(b), _) => (b, TaskStep::Begin),
        (None, Some((g, _))) => (g, TaskStep::Give),
        (None, None) => return None,
    };
    let mut condition = format!("value.0 == {} && value.1 == {}", unit.vm, unit.task);
    for (i, child) in unit.path.iter().enumerate() {
        condition.push_str(&format!(" && value.2.{i} == {child}"));
    }
    Some(format!(
        "{}: mark {} if {condition}",
        trace.process(at.process).name,
        step.label()
    ))
}

/// The error of a unit begun and never finished: how its process's log goes on after the
/// begin says whether the work panicked or the process stopped in it, and a log cut short in
/// a node that died while the node that handed the unit out went on (the unit was begun
/// `on_another_node`) is the node's fault.
fn stopped<S: EventStore>(
    trace: &Trace<S>,
    begin: EventRef,
    role: Role,
    (dead, on_another_node): (&DeadNodes, bool),
    error: &impl Fn(Fault, Role, EventRef, (String, u32), String) -> TaskError,
) -> TaskError {
    let proc = trace.process(begin.process);
    let node = node_of(trace, begin);
    let end = events_after(proc, begin.index)
        .enumerate()
        .find(|(_, e)| e.op.is_end());
    if let Some((k, end)) = end {
        let at = EventRef::new(begin.process, begin.index + 1 + k as u32);
        return match end.op {
            Op::Panic { message } => error(
                Fault::Panic,
                role,
                at,
                node,
                format!("panicked: {}", trace.name(message)),
            ),
            // An exit (`is_end` found nothing else).
            _ => error(
                Fault::Process,
                role,
                at,
                node,
                "the process ended without finishing the task".to_owned(),
            ),
        };
    }
    // The trace holds the begin (the marks were read from the same log), unless the log
    // changed in between: then the begin stands for the last event.
    let last_index = (proc.events.len() as u32)
        .saturating_sub(1)
        .max(begin.index);
    let last = EventRef::new(begin.process, last_index);
    let died = dead
        .of_process(proc.id)
        .filter(|_| !proc.complete && on_another_node);
    let (fault, how) = match (died, proc.complete) {
        (Some((name, ending)), _) => (
            Fault::Node,
            format!("its node {name} died while the process was in the task ({ending})"),
        ),
        (None, true) => (
            Fault::Process,
            "its log goes on without finishing the task".to_owned(),
        ),
        (None, false) => (
            Fault::Process,
            "the run ended while the process was in the task (hung or killed)".to_owned(),
        ),
    };
    let detail = if last == begin {
        how
    } else {
        format!("{how}; its last event: {}", trace.describe(last))
    };
    error(fault, role, last, node, detail)
}

/// The events of `proc` after its event `index` (none if the trace ends there).
fn events_after<S: EventStore>(proc: &crate::trace::Process<S>, index: u32) -> S::Iter<'_> {
    proc.events.iter_from(index as usize + 1)
}

/// A unit whose error is also its subtask's (the same frontier event, a nested `enter`) is
/// not a frontier itself: its data flow went on into the subtask.
fn drop_ancestors(errors: &mut Vec<TaskError>) {
    let mut keep = vec![true; errors.len()];
    for (i, a) in errors.iter().enumerate() {
        for b in errors.iter() {
            let deeper = b.subtask != a.subtask
                && (a.subtask == "-" || b.subtask.starts_with(&format!("{}.", a.subtask)));
            if a.task == b.task && a.run == b.run && a.frontier == b.frontier && deeper {
                keep[i] = false;
            }
        }
    }
    let mut k = keep.into_iter();
    errors.retain(|_| k.next().unwrap_or(true));
}

#[cfg(test)]
mod tests;
