//! One task's event graph and its coalesced event graph (seed thesis §4.2).
//!
//! The vertices are the task's events (every step of every unit of it); there is an arc a → b
//! when a happened before b and no other event of the task lies between them — the thesis's
//! arcs (messages between processes, program order within one) once transitively reduced.
//! The thesis's source and sink pseudo-events are implicit: the source precedes the events
//! with no incoming arc, the sink follows the frontier events of a complete task.

use std::collections::{BTreeMap, BTreeSet};

use ppd_formats::ProcessId;
use ppd_formats::task::TaskStep;
use serde::Serialize;

use super::follow::EventClocks;
use super::{Runs, Unit, UnitEvents, Vm, node};
use crate::trace::{EventRef, EventStore, Trace};
use crate::vclock::Clocks;

/// Above this many events a task's arcs are not computed (the reduction is cubic).
const MAX_ARC_EVENTS: usize = 400;

/// One event of a task.
#[derive(Clone, Debug, Serialize)]
pub struct GraphEvent {
    /// The step it logs.
    pub step: TaskStep,
    /// The unit's subtask path (`-`: the task itself).
    pub subtask: String,
    /// Its process, `name/pN`.
    pub process: String,
    /// Its index in that process's log.
    pub index: u32,
    /// Its `file:line`.
    pub at: Option<String>,
}

/// A vertex of the coalesced event graph: one process's events of the task.
#[derive(Clone, Debug, Serialize)]
pub struct Vertex {
    /// The process, `name/pN`.
    pub process: String,
    /// How many of the task's events it logged.
    pub events: u32,
    /// How many its roles in the task expect.
    pub expected: u32,
    /// Whether the two agree.
    pub complete: bool,
}

/// A task's event graph, coalesced graph and frontier.
#[derive(Clone, Debug, Serialize)]
pub struct TaskGraph {
    /// The virtual machine.
    pub vm: Vm,
    /// Which run of it.
    pub run: u64,
    /// The task number.
    pub task: u64,
    /// The events, in a linear extension of happened-before.
    pub events: Vec<GraphEvent>,
    /// The arcs, as indexes into `events`; empty when the task has too many events.
    pub arcs: Vec<(usize, usize)>,
    /// The coalesced event graph's vertices, by process.
    pub coalesced: Vec<Vertex>,
    /// The frontier events: those without an outgoing arc, where the task's data flow stops.
    pub frontier: Vec<usize>,
    /// The events in the trace.
    #[serde(skip)]
    refs: Vec<EventRef>,
}

impl TaskGraph {
    /// The graph of task `task` of run `run`.
    pub(crate) fn build<S: EventStore>(
        trace: &Trace<S>,
        clocks: &impl EventClocks,
        runs: &Runs,
        run: u64,
        task: u64,
    ) -> TaskGraph {
        let mut units: Vec<(&Unit, &UnitEvents)> = runs
            .units
            .iter()
            .filter(|(u, _)| u.vm == run && u.task == task)
            .collect();
        units.sort_by(|a, b| a.0.cmp(b.0));
        let vm = units.first().map_or(Vm::Hand, |(u, _)| runs.vm_of(u));
        let mut raw: Vec<(EventRef, TaskStep, String)> = Vec::new();
        let mut expected: BTreeMap<u32, u32> = BTreeMap::new();
        for (unit, u) in &units {
            let sub = unit.subtask();
            let mut add = |e: EventRef, step: TaskStep| raw.push((e, step, sub.clone()));
            if let Some((g, _)) = u.give {
                add(g, TaskStep::Give);
            }
            if let Some(b) = u.begin {
                add(b, TaskStep::Begin);
            }
            if let Some((s, _)) = u.split {
                add(s, TaskStep::Split);
            }
            if let Some(e) = u.end {
                add(e, TaskStep::End);
            }
            for c in u.collects.into_iter().flatten() {
                add(c, TaskStep::Collect);
            }
            if let Some(j) = u.join {
                add(j, TaskStep::Join);
            }
            // The roles this unit gives its processes, and the events each role logs.
            let worker = u.begin.map(|b| trace.process(b.process).id).or_else(|| {
                u.give
                    .map(|(_, w)| ProcessId(u32::try_from(w).unwrap_or(u32::MAX)))
            });
            if let Some(w) = worker {
                *expected.entry(w.0).or_default() += 2;
            }
            if let Some((g, _)) = u.give {
                let coordinator = trace.process(g.process).id.0;
                *expected.entry(coordinator).or_default() += 2 + u32::from(u.split.is_some());
            }
        }
        raw.sort_by_key(|(e, _, _)| (super::clock_sum(clocks, *e), *e));
        let refs: Vec<EventRef> = raw.iter().map(|r| r.0).collect();
        let arcs = if refs.len() <= MAX_ARC_EVENTS {
            covering(clocks, &refs)
        } else {
            Vec::new()
        };
        let mut has_out = vec![false; refs.len()];
        for &(a, _) in &arcs {
            has_out[a] = true;
        }
        let frontier = if arcs.is_empty() && refs.len() > MAX_ARC_EVENTS {
            Vec::new()
        } else {
            (0..refs.len()).filter(|&i| !has_out[i]).collect()
        };
        let mut logged: BTreeMap<u32, u32> = BTreeMap::new();
        for e in &refs {
            *logged.entry(trace.process(e.process).id.0).or_default() += 1;
        }
        let mut pids: Vec<u32> = logged.keys().chain(expected.keys()).copied().collect();
        pids.sort_unstable();
        pids.dedup();
        let coalesced = pids
            .into_iter()
            .map(|pid| {
                let events = logged.get(&pid).copied().unwrap_or(0);
                let expected = expected.get(&pid).copied().unwrap_or(0);
                Vertex {
                    process: node(trace, ProcessId(pid)),
                    events,
                    expected,
                    complete: events == expected,
                }
            })
            .collect();
        let events = raw
            .iter()
            .map(|(e, step, subtask)| GraphEvent {
                step: *step,
                subtask: subtask.clone(),
                process: node(trace, trace.process(e.process).id),
                index: e.index,
                at: super::site_of(trace, *e),
            })
            .collect();
        TaskGraph {
            vm,
            run,
            task,
            events,
            arcs,
            coalesced,
            frontier,
            refs,
        }
    }

    /// The task's events and the synchronization edges that carry its arcs between processes
    /// (for each arc, the first edge out of its start's process after it that arrives before
    /// its end): what `ppd graph --task N` leaves in colour.
    pub fn highlight(&self, clocks: &Clocks) -> BTreeSet<EventRef> {
        let mut shown: BTreeSet<EventRef> = self.refs.iter().copied().collect();
        for &(a, b) in &self.arcs {
            let (a, b) = (self.refs[a], self.refs[b]);
            if a.process == b.process {
                continue;
            }
            let carrier = clocks
                .edges()
                .iter()
                .filter(|e| {
                    e.from.process == a.process
                        && e.to.process == b.process
                        && e.from.index >= a.index
                        && e.to.index <= b.index
                })
                .min_by_key(|e| e.from.index);
            if let Some(e) = carrier {
                shown.insert(e.from);
                shown.insert(e.to);
            }
        }
        shown
    }
}

/// The covering pairs of happened-before over `events` (sorted by a linear extension): a → b
/// with no c such that a → c → b.
fn covering(clocks: &impl EventClocks, events: &[EventRef]) -> Vec<(usize, usize)> {
    let n = events.len();
    let mut arcs = Vec::new();
    for a in 0..n {
        for b in a + 1..n {
            if !clocks.happened_before(events[a], events[b]) {
                continue;
            }
            let between = (a + 1..b).any(|c| {
                clocks.happened_before(events[a], events[c])
                    && clocks.happened_before(events[c], events[b])
            });
            if !between {
                arcs.push((a, b));
            }
        }
    }
    arcs
}
