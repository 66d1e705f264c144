//! Phase two of Lin's two-phase debugging (seed thesis §1.3, §4.1): re-executing one task's
//! sequential computation from the history. The thesis proposes a driver program that
//! simulates the virtual machine around a traditional sequential debugger, fed from the event
//! history, and leaves building it to future work (§7.2.1). ppd has each computation logged as
//! an e-block (its input is the prelog, its result the postlog, `ppd::task`), so this module
//! only finds the logged computation of a unit and where the program reaches it; the emulator
//! (`ppd_replayer::emulate`) re-executes it against its log interval, as `ppd why` does for
//! any e-block instance.
//!
//! Beyond the thesis: the re-execution is checked against the log (the result compared with
//! the logged one, a panic with the recorded panic), so a computation that depends on
//! something the log does not hold shows as a difference instead of a silently other run.

use ppd_formats::task::is_computation;
use ppd_formats::{Event, ProcessId, Recording};

use super::{TaskRecording, Unit, Vm};

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
    /// The e-block the computation ran as (`ppd::task::work`, `split` or `solve`).
    pub eblock: String,
    /// Index of its `EblockEnter` event (the prelog) in the process's log.
    pub enter: u64,
    /// The name of the process that started the virtual machine run.
    pub generator: String,
    /// The run's ordinal in that process.
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
    /// The generator of the run is not in the recording.
    #[error("the process {0} that started task {1}'s virtual machine is not in the recording")]
    NoGenerator(ProcessId, u64),
}

impl TaskRecording {
    /// The logged computation of task `task`'s subtask `path` (empty: the task itself), of the
    /// first virtual machine run that has it; `recording` is the one this was read from.
    pub fn computation(
        &self,
        recording: &Recording,
        task: u64,
        path: &[u32],
    ) -> Result<Computation, NoComputation> {
        let unit = self
            .runs
            .units
            .keys()
            .filter(|u| u.task == task && u.path == path)
            .min()
            .cloned()
            .ok_or_else(|| NoComputation::NoSuchUnit {
                task,
                subtask: show(path),
            })?;
        let vm = self.runs.vm_of(&unit);
        if vm == Vm::Hand {
            return Err(NoComputation::ByHand { task });
        }
        let begin = self.runs.units[&unit]
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
        let generator_id = ProcessId((unit.vm >> 32) as u32);
        let generator = recording
            .process(generator_id)
            .map(|p| p.name.clone())
            .ok_or(NoComputation::NoGenerator(generator_id, task))?;
        Ok(Computation {
            vm,
            process: process.id,
            process_name: process.name.clone(),
            eblock,
            enter,
            generator,
            ordinal: (unit.vm & u64::from(u32::MAX)) as u32,
            unit,
        })
    }
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
