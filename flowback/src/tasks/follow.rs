//! Following a run's tasks as the vector clocks are computed, so that what the analysis holds
//! is the tasks in flight, not the run.
//!
//! The thesis's deTrEK (§5.4) builds every task's event graph, then checks each. Here the clock
//! replay of [`crate::vclock`] stamps the events in a linear extension of happened-before and
//! shows this module every mark with its clock ([`Clocks::stream`], which keeps no clock):
//!
//! * a task's units, and the clocks of its events, are kept while the task is open;
//! * a task whose every unit has completed is dropped, leaving one bit in its run's set of
//!   completed tasks (a compressed bitmap, a few bits per task when tasks are numbered densely,
//!   as a farm numbers them);
//! * a collection of a task already dropped is a duplicate, reported at that collection;
//! * per process, the clock of the latest first event of a completed unit is kept, which is
//!   all that the "overtaken" rank needs of the completed units.
//!
//! What is left at the end is the tasks that did not complete, whose errors and event graphs
//! are made as before, from the kept clocks. Because `ppd::task` hands a worker a new task only
//! when its previous result is back, the happened-before order holds few tasks open at once:
//! about one per worker in a farm. A divide-and-conquer task is open until its root is
//! collected and joined, so its subtasks are kept until then (its event graph, drawn if it
//! fails, has all of them).
//!
//! The events themselves are not kept either: the trace is [`Logged`], decoded from the logs
//! each time it is read. The marks' values (which task, which subtask) are not in the trace;
//! [`LogMarks`] reads them from each process's log as the replay reaches them, one block of
//! each log at a time.

use ppd_formats::Events;
use ppd_formats::task::TaskStep;
use roaring::RoaringTreemap;

use super::{Runs, TaskEvent, Unit, UnitEvents, Vm, task_event};
use crate::fasthash::FastMap;
use crate::trace::{EventRef, Logged, Trace};
use crate::vclock::{Clocks, Observer};

/// Where the values of the marks come from: which task mark, if any, the mark at `at` is.
pub(crate) trait MarkSource {
    /// The task mark at `at` (a mark of the trace, asked in each process's order); its label
    /// and why if its value is not a task mark's; `None` if it is some other mark.
    fn task_mark(&mut self, at: EventRef) -> Option<Result<TaskEvent, (String, String)>>;
}

/// Task marks of given events: the synthetic runs of the tests.
impl MarkSource for FastMap<EventRef, TaskEvent> {
    fn task_mark(&mut self, at: EventRef) -> Option<Result<TaskEvent, (String, String)>> {
        self.remove(&at).map(Ok)
    }
}

/// The task marks of a recording, read from its logs in each process's order: one decoder, and
/// so one block, per process with marks, opened at its first mark.
pub(crate) struct LogMarks<'r> {
    trace: &'r Trace<Logged>,
    cursors: Vec<Option<Events<'r>>>,
}

impl<'r> LogMarks<'r> {
    /// The marks of the logs `trace`'s events are read from.
    pub(crate) fn new(trace: &'r Trace<Logged>) -> LogMarks<'r> {
        LogMarks {
            trace,
            cursors: trace.processes().iter().map(|_| None).collect(),
        }
    }
}

impl std::fmt::Debug for LogMarks<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogMarks")
            .field("logs", &self.cursors.len())
            .finish_non_exhaustive()
    }
}

impl MarkSource for LogMarks<'_> {
    fn task_mark(&mut self, at: EventRef) -> Option<Result<TaskEvent, (String, String)>> {
        let p = at.process as usize;
        if self.cursors[p].is_none() {
            self.cursors[p] = Some(self.trace.process(at.process).events.log()?.events());
        }
        let cursor = self.cursors[p].as_mut()?;
        for item in cursor {
            // The trace was read from the same logs and stops where they are damaged: past
            // that, there is nothing to find.
            let Ok((index, event)) = item else {
                return None;
            };
            match index.cmp(&u64::from(at.index)) {
                std::cmp::Ordering::Less => continue,
                std::cmp::Ordering::Equal => return task_event(at, &event),
                std::cmp::Ordering::Greater => return None,
            }
        }
        None
    }
}

/// What the analysis asks of vector clocks: those of a whole trace, or those it kept.
pub(crate) trait EventClocks {
    /// Number of components.
    fn width(&self) -> usize;

    /// Component `q` of the clock of `e`.
    fn component(&self, e: EventRef, q: u32) -> u32;

    /// Whether `a` happened before `b`.
    fn happened_before(&self, a: EventRef, b: EventRef) -> bool {
        crate::vclock::happened_before(a, b, |q| self.component(b, q))
    }
}

impl EventClocks for Clocks {
    fn width(&self) -> usize {
        Clocks::width(self)
    }

    fn component(&self, e: EventRef, q: u32) -> u32 {
        Clocks::component(self, e, q)
    }
}

/// The clocks of the events the analysis kept: those of the tasks left open, and the latest
/// first event of a completed unit of each process.
#[derive(Debug, Default)]
pub(crate) struct KeptClocks {
    width: usize,
    clocks: FastMap<EventRef, Box<[u32]>>,
}

impl EventClocks for KeptClocks {
    fn width(&self) -> usize {
        self.width
    }

    fn component(&self, e: EventRef, q: u32) -> u32 {
        self.clocks
            .get(&e)
            .expect("the analysis asks only for the clocks of the events it kept")[q as usize]
    }
}

/// A task not yet completed: its units and the clocks of its events.
#[derive(Debug, Default)]
struct OpenTask {
    units: FastMap<Vec<u32>, UnitEvents>,
    clocks: FastMap<EventRef, Box<[u32]>>,
    /// How many of its units have not completed.
    undone: u32,
}

/// A unit collected again after its task was dropped as complete.
#[derive(Debug)]
pub(crate) struct Late {
    /// Its first late collection.
    pub(crate) at: EventRef,
    /// How many times it was collected in all.
    pub(crate) collected: u32,
    /// The first late collection's rank in happened-before (its clock's sum).
    pub(crate) rank: u64,
}

/// What is left once the run is followed to its end.
#[derive(Debug, Default)]
pub(crate) struct Followed {
    /// The virtual machine runs, and the units of the tasks left open (and of the task in
    /// focus).
    pub(crate) runs: Runs,
    /// The clocks of their events, and of [`Followed::latest`].
    pub(crate) clocks: KeptClocks,
    /// Per process, the latest first event of a completed unit.
    pub(crate) latest: Vec<Option<u32>>,
    /// Units collected again after their task completed.
    pub(crate) late: FastMap<Unit, Late>,
    /// Per run, how many tasks had at least one event.
    pub(crate) seen: FastMap<u64, u64>,
    /// Tasks that completed and were dropped (and not collected again).
    pub(crate) complete_dropped: u64,
    /// Marks with a task mark's label and a foreign value.
    pub(crate) foreign: Vec<(EventRef, (String, String))>,
    /// The most tasks open at once.
    pub(crate) most_open: usize,
}

/// The [`Observer`] that follows the tasks.
#[derive(Debug)]
pub(crate) struct Follower<M> {
    marks: M,
    /// A task kept whatever becomes of it: the one a command asks about.
    focus: Option<u64>,
    open: FastMap<(u64, u64), OpenTask>,
    /// Per run, its completed tasks.
    done: FastMap<u64, RoaringTreemap>,
    /// Per process, the latest first event of a completed unit, and its clock.
    latest: Vec<Option<(u32, Box<[u32]>)>>,
    out: Followed,
}

impl<M: MarkSource> Follower<M> {
    /// A follower of `width` processes' marks from `marks`, keeping task `focus` to the end.
    pub(crate) fn new(width: usize, marks: M, focus: Option<u64>) -> Follower<M> {
        let mut out = Followed::default();
        out.runs.vms.insert(0, (Vm::Hand, 0));
        out.clocks.width = width;
        Follower {
            marks,
            focus,
            open: FastMap::default(),
            done: FastMap::default(),
            latest: vec![None; width],
            out,
        }
    }

    fn vm_of(&self, run: u64) -> Vm {
        self.out.runs.vms.get(&run).map_or(Vm::Hand, |v| v.0)
    }

    /// A mark of a task dropped as complete: a collection is a duplicate; anything else adds
    /// nothing to a completed unit (as a repeated step adds nothing to an open one).
    fn after_completion(&mut self, e: TaskEvent, clock: &[u32]) {
        if e.step != TaskStep::Collect {
            return;
        }
        let first_late_of_its_task = !self
            .out
            .late
            .keys()
            .any(|u| u.vm == e.unit.vm && u.task == e.unit.task);
        if first_late_of_its_task {
            // It was counted complete when it was dropped.
            self.out.complete_dropped -= 1;
        }
        let late = self.out.late.entry(e.unit).or_insert(Late {
            at: e.at,
            collected: 1,
            rank: clock.iter().map(|&c| u64::from(c)).sum(),
        });
        late.collected += 1;
    }

    /// Unit `first`'s process's latest completed first event, if `first` is later.
    fn completed(&mut self, first: EventRef, clock: &[u32]) {
        let slot = &mut self.latest[first.process as usize];
        if slot.as_ref().is_none_or(|(i, _)| *i < first.index) {
            *slot = Some((first.index, clock.into()));
        }
    }

    /// Everything left once every event is stamped.
    pub(crate) fn finish(mut self) -> Followed {
        for (p, latest) in self.latest.into_iter().enumerate() {
            if let Some((index, clock)) = latest {
                self.out.latest.push(Some(index));
                self.out
                    .clocks
                    .clocks
                    .insert(EventRef::new(p as u32, index), clock);
            } else {
                self.out.latest.push(None);
            }
        }
        for ((vm, task), open) in self.open {
            self.out.clocks.clocks.extend(open.clocks);
            for (path, u) in open.units {
                self.out.runs.units.insert(Unit { vm, task, path }, u);
            }
        }
        self.out
    }
}

impl<M: MarkSource> Observer for Follower<M> {
    const MARKS: bool = true;

    fn mark(&mut self, at: EventRef, clock: &[u32]) {
        let e = match self.marks.task_mark(at) {
            None => return,
            Some(Err(foreign)) => {
                self.out.foreign.push((at, foreign));
                return;
            }
            Some(Ok(e)) => e,
        };
        let (run, task) = (e.unit.vm, e.unit.task);
        match e.step {
            TaskStep::Farm => {
                self.out.runs.vms.insert(run, (Vm::Farm, e.arg));
                return;
            }
            TaskStep::Dc => {
                self.out.runs.vms.insert(run, (Vm::DivideAndConquer, 1));
                return;
            }
            TaskStep::Give
            | TaskStep::Begin
            | TaskStep::Split
            | TaskStep::End
            | TaskStep::Collect
            | TaskStep::Join => {}
        }
        if self.done.get(&run).is_some_and(|d| d.contains(task)) {
            self.after_completion(e, clock);
            return;
        }
        let vm = self.vm_of(run);
        let open = self.open.entry((run, task)).or_insert_with(|| {
            *self.out.seen.entry(run).or_default() += 1;
            OpenTask::default()
        });
        open.clocks.insert(at, clock.into());
        let unit = open.units.entry(e.unit.path).or_insert_with(|| {
            open.undone += 1;
            UnitEvents::default()
        });
        let was = unit.done(vm);
        unit.add(e.step, at, e.arg);
        let now = unit.done(vm);
        let first = unit.first();
        match (was, now) {
            (false, true) => open.undone -= 1,
            (true, false) => open.undone += 1,
            _ => {}
        }
        let complete = open.undone == 0;
        if let (false, true, Some(first)) = (was, now, first) {
            let first_clock = open.clocks[&first].clone();
            self.completed(first, &first_clock);
        }
        if complete && self.focus != Some(task) {
            self.open.remove(&(run, task));
            self.done.entry(run).or_default().insert(task);
            self.out.complete_dropped += 1;
        }
        self.out.most_open = self.out.most_open.max(self.open.len());
    }
}
