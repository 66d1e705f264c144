//! Phase two of Lin's two-phase debugging (seed thesis §1.3, §4.1): re-executing one task's
//! sequential computation from the history. The thesis proposes a driver program that
//! simulates the virtual machine around a traditional sequential debugger, fed from the event
//! history, and leaves building it to future work (§7.2.1). ppd has each computation logged as
//! an e-block (its input is the prelog, its result the postlog, `ppd::task`), so this module
//! only finds the logged computation of a unit and where the program reaches it; the emulator
//! (`ppd_replayer::emulate`) re-executes it against its log interval, as `ppd why` does for
//! any e-block instance.
//!
//! Beyond the thesis: a divide-and-conquer subtask that split has two computations, its split
//! (on a worker, after its begin mark) and its combine (in the process that called the virtual
//! machine, just before its join mark); [`Part`] says which one to re-execute. The thesis
//! re-executes only the task's sequential code on a processor. The re-execution is checked against the log (the result compared with
//! the logged one, a panic with the recorded panic), so a computation that depends on
//! something the log does not hold shows as a difference instead of a silently other run.

use ppd_formats::task::{COMBINE_EBLOCK, WORKER_NODE_RUN, is_computation};
use ppd_formats::{Event, ProcessId, Recording};

use super::{TaskRecording, Unit, Vm};
use crate::trace::EventRef;

/// Which of a unit's computations to re-execute.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Part {
    /// What ran after its begin mark: a farm's work, a subtask's split, a leaf's solve.
    #[default]
    Compute,
    /// A split subtask's combine of its children's results.
    Combine,
}

/// A unit's logged computation: what phase two re-executes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Computation {
    /// The task or subtask.
    pub unit: Unit,
    /// Its virtual machine.
    pub vm: Vm,
    /// The process that computed it.
    pub process: ProcessId,
    /// That process's name.
    pub process_name: String,
    /// The node (OS process) whose binary and logs re-execute it.
    pub node: u32,
    /// The process that computed it, as that node numbers it.
    pub local: ProcessId,
    /// The e-block the computation ran as (`ppd::task::work`, `split`, `solve` or `combine`).
    pub eblock: String,
    /// Index of its `EblockEnter` event (the prelog) in the process's log.
    pub enter: u64,
    /// The name, as its node names it, of the process that takes the computation over in
    /// phase two: the one that started the virtual machine run, or the worker node's process
    /// that served it (`ppd::task::farm_nodes`).
    pub generator: String,
    /// The run's ordinal in that process (`ppd_formats::task::WORKER_NODE_RUN` for a worker
    /// node's serving).
    pub ordinal: u32,
}

/// Why a unit cannot be re-executed alone.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum NoComputation {
    /// The run has no such task or subtask.
    #[error("the run has no task {task} subtask {subtask}")]
    NoSuchUnit {
        /// The task.
        task: u64,
        /// The subtask path, as printed.
        subtask: String,
    },
    /// Labelled by hand: `enter` takes no input, so none was logged.
    #[error(
        "task {task} was labelled by hand with ppd::task::enter, which takes no input: nothing \
         was logged to re-execute it from (make its code a #[ppd::eblock] function and use \
         ppd why, or run it with ppd::task::farm)"
    )]
    ByHand {
        /// The task.
        task: u64,
    },
    /// Handed out but never begun.
    #[error("task {task} subtask {subtask} was never begun: it has no computation to re-execute")]
    NotBegun {
        /// The task.
        task: u64,
        /// The subtask path, as printed.
        subtask: String,
    },
    /// Begun, but no logged input follows the begin.
    #[error(
        "task {task} subtask {subtask}: its input was not logged ({process} event {after} is \
         followed by {found}, not the computation's prelog; the recording predates work \
         functions being e-blocks, or its log ends there)"
    )]
    InputNotLogged {
        /// The task.
        task: u64,
        /// The subtask path, as printed.
        subtask: String,
        /// The process.
        process: String,
        /// Its begin mark's index.
        after: u64,
        /// What follows instead.
        found: String,
    },
    /// `--combine` of a unit that is not a split subtask of a divide and conquer.
    #[error(
        "task {task} subtask {subtask} did not split (a farm's task or a leaf): it has no \
         combine to re-execute"
    )]
    NotSplit {
        /// The task.
        task: u64,
        /// The subtask path, as printed.
        subtask: String,
    },
    /// A split unit whose combine is not in the log.
    #[error(
        "task {task} subtask {subtask}: no combine of it is logged in {process} between its \
         collection (event {from}) and {until} (its subtasks never all came back, or the \
         recording predates combines being e-blocks)"
    )]
    NotCombined {
        /// The task.
        task: u64,
        /// The subtask path, as printed.
        subtask: String,
        /// The process that collected it.
        process: String,
        /// Its collection's index.
        from: u64,
        /// Its join (`its join, event N`) or `the end of the log`.
        until: String,
    },
    /// The generator of the run is not in the recording.
    #[error("the process {0} that started task {1}'s virtual machine is not in the recording")]
    NoGenerator(ProcessId, u64),
}

impl TaskRecording {
    /// The logged computation `part` of task `task`'s subtask `path` (empty: the task itself),
    /// of the first virtual machine run that has it; `recording` is the one this was read from.
    /// The task must be the one this was opened with in focus, or one that did not complete.
    pub fn computation(
        &self,
        recording: &Recording,
        task: u64,
        path: &[u32],
        part: Part,
    ) -> Result<Computation, NoComputation> {
        let unit = self
            .runs()
            .units
            .keys()
            .filter(|u| u.task == task && u.path == path)
            .min()
            .cloned()
            .ok_or_else(|| NoComputation::NoSuchUnit {
                task,
                subtask: show(path),
            })?;
        let vm = self.runs().vm_of(&unit);
        if vm == Vm::Hand {
            return Err(NoComputation::ByHand { task });
        }
        if part == Part::Combine {
            return self.combination(recording, unit, vm);
        }
        let begin = self.runs().units[&unit]
            .begin
            .ok_or_else(|| NoComputation::NotBegun {
                task,
                subtask: unit.subtask(),
            })?;
        let process = self.trace.process(begin.process);
        let after = u64::from(begin.index);
        let (computed, next) = recording
            .process(process.id)
            .and_then(|entry| recording.open_log(entry).ok())
            .map_or((None, None), |reader| computed_after(&reader, after));
        let (enter, eblock) = match computed {
            Some(found) => found,
            None => {
                let other = next;
                return Err(NoComputation::InputNotLogged {
                    task,
                    subtask: unit.subtask(),
                    process: self.trace.process_label(begin.process),
                    after,
                    found: other.map_or_else(
                        || "the end of the log".to_owned(),
                        |e| format!("a {} event", e.kind()),
                    ),
                });
            }
        };
        self.located(recording, unit, vm, begin, enter, eblock)
    }

    /// The logged combine of split unit `unit`: the last combine e-block the collecting process
    /// entered between the unit's collection and its join (combines of its subtasks that split
    /// come before it), or, without a join, the combine the log ends inside (it panicked, or
    /// the run was killed in it).
    fn combination(
        &self,
        recording: &Recording,
        unit: Unit,
        vm: Vm,
    ) -> Result<Computation, NoComputation> {
        let u = &self.runs().units[&unit];
        let (Some(_), Some(collected)) = (u.split, u.collects[0]) else {
            return Err(NoComputation::NotSplit {
                task: unit.task,
                subtask: unit.subtask(),
            });
        };
        let until = u.join.filter(|j| j.process == collected.process);
        let process = self.trace.process(collected.process);
        let found = recording
            .process(process.id)
            .and_then(|entry| recording.open_log(entry).ok())
            .and_then(|reader| {
                combine_between(&reader, u64::from(collected.index), until.map(|j| j.index))
            });
        let Some(enter) = found else {
            return Err(NoComputation::NotCombined {
                task: unit.task,
                subtask: unit.subtask(),
                process: self.trace.process_label(collected.process),
                from: u64::from(collected.index),
                until: until.map_or_else(
                    || "the end of the log".to_owned(),
                    |j| format!("its join, event {}", j.index),
                ),
            });
        };
        self.located(
            recording,
            unit,
            vm,
            collected,
            enter,
            COMBINE_EBLOCK.to_owned(),
        )
    }

    /// The computation of `unit` entered at event `enter` of the process of `at`.
    fn located(
        &self,
        recording: &Recording,
        unit: Unit,
        vm: Vm,
        at: EventRef,
        enter: u64,
        eblock: String,
    ) -> Result<Computation, NoComputation> {
        let process = self.trace.process(at.process);
        let node = process.id.node();
        // A task handed out by another node was computed by a worker node's `serve`, which
        // takes it over there; else the run's generator, in the same node, does.
        let (generator_id, ordinal) = if self.runs().units[&unit].begun_on_another_node(&self.trace)
        {
            (process.id, WORKER_NODE_RUN)
        } else {
            (
                ProcessId::on_node(node, (unit.vm >> 32) as u32),
                (unit.vm & u64::from(u32::MAX)) as u32,
            )
        };
        let generator = recording
            .local_name(generator_id)
            .map(str::to_owned)
            .ok_or(NoComputation::NoGenerator(generator_id, unit.task))?;
        Ok(Computation {
            vm,
            process: process.id,
            process_name: process.name.clone(),
            node,
            local: process.id.local(),
            eblock,
            enter,
            generator,
            ordinal,
            unit,
        })
    }
}

/// The combine e-block a split unit ran, from its process's log after its collection (event
/// `after`): with its join (event `join`), the last top-level combine entered before it; without
/// one, a top-level combine the log ends inside.
fn combine_between(reader: &ppd_formats::LogReader, after: u64, join: Option<u32>) -> Option<u64> {
    let events = reader.events_from(after + 1).ok()?;
    let mut last = None;
    let mut open = None;
    let mut depth = 0u32;
    for item in events {
        let Ok((index, event)) = item else { break };
        if join.is_some_and(|j| index >= u64::from(j)) {
            return last;
        }
        match &event {
            Event::EblockEnter { eblock, .. } => {
                if depth == 0 && **eblock == *COMBINE_EBLOCK {
                    last = Some(index);
                    open = Some(index);
                }
                depth += 1;
            }
            Event::EblockExit { .. } => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    open = None;
                }
            }
            _ => {}
        }
    }
    // The log ended before the join: only a combine still open there can be the unit's.
    if join.is_some() { None } else { open }
}

/// The last computation e-block a unit ran after its begin mark (event `after`): a leaf of
/// divide and conquer runs its split (which says "leaf") and then its solve, whose result is
/// the unit's. Without one, the event that follows the begin mark.
fn computed_after(
    reader: &ppd_formats::LogReader,
    after: u64,
) -> (Option<(u64, String)>, Option<Event>) {
    let Ok(events) = reader.events_from(after + 1) else {
        return (None, None);
    };
    let mut found = None;
    let mut first = None;
    let mut depth = 0u32;
    for item in events {
        let Ok((index, event)) = item else { break };
        match &event {
            Event::EblockEnter { eblock, .. } if depth == 0 && is_computation(eblock) => {
                found = Some((index, eblock.to_string()));
                depth += 1;
            }
            Event::EblockEnter { .. } => depth += 1,
            Event::EblockExit { .. } => depth = depth.saturating_sub(1),
            // The unit's next step, or the process's end: its computations are behind.
            _ if depth == 0 && found.is_some() => break,
            _ if depth == 0 => {
                first.get_or_insert(event);
                break;
            }
            _ => {}
        }
        first.get_or_insert(event);
    }
    (found, first)
}

/// A subtask path as printed: `0.1`, or `-` for the task itself.
fn show(path: &[u32]) -> String {
    Unit {
        vm: 0,
        task: 0,
        path: path.to_vec(),
    }
    .subtask()
}
