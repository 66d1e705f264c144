//! The marks `ppd::task` logs: one reserved label per step of a task's life, and the value
//! every such mark carries. Task steps are ordinary `Mark` events (docs/format.md §4.5), so
//! every tool that reads marks reads them, and the format needs no event kind of its own.

use serde::{Deserialize, Serialize};

use crate::value::{self, ValueError};

/// Every task mark's label starts with this.
pub const PREFIX: &str = "ppd.task.";

/// The e-block a farm's work runs as: its prelog holds the task's `input`, its postlog the
/// result (`%0`), so that phase two can re-execute one task alone from its log.
pub const WORK_EBLOCK: &str = "ppd::task::work";
/// The e-block a divide-and-conquer split runs as (`input`: the subproblem; `%0`: the parts,
/// or nil for a leaf).
pub const SPLIT_EBLOCK: &str = "ppd::task::split";
/// The e-block a divide-and-conquer leaf's solve runs as (`input`: the subproblem; `%0`: its
/// result).
pub const SOLVE_EBLOCK: &str = "ppd::task::solve";
/// The e-block a divide-and-conquer combine runs as, in the process that called
/// `divide_and_conquer`, just before the split subtask's join mark (`input`: its children's
/// results, in child order; `%0`: the joined result).
pub const COMBINE_EBLOCK: &str = "ppd::task::combine";

/// The run ordinal phase two asks for to take over a worker node's `ppd::task::serve` rather
/// than a virtual machine run of the generator (whose ordinals start at 1).
pub const WORKER_NODE_RUN: u32 = 0;

/// Whether `eblock` is one of the e-blocks a task's computation runs as.
pub fn is_computation(eblock: &str) -> bool {
    [WORK_EBLOCK, SPLIT_EBLOCK, SOLVE_EBLOCK, COMBINE_EBLOCK].contains(&eblock)
}

/// A step of a task's life, as its mark's label names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStep {
    /// A processor farm starts: `arg` is its number of tasks (logged by the generator).
    Farm,
    /// A divide-and-conquer run starts on task 0 (logged by the generator).
    Dc,
    /// The task is handed to a worker: `arg` is the worker's process id.
    Give,
    /// A process starts working on the task.
    Begin,
    /// The work split the task into `arg` subtasks.
    Split,
    /// The work is done; its result goes back next.
    End,
    /// The result (or the split) came back to the collector.
    Collect,
    /// The `arg` results of the task's subtasks were combined into its own.
    Join,
}

impl TaskStep {
    /// Every step, in the order of a task's life.
    pub const ALL: [TaskStep; 8] = [
        TaskStep::Farm,
        TaskStep::Dc,
        TaskStep::Give,
        TaskStep::Begin,
        TaskStep::Split,
        TaskStep::End,
        TaskStep::Collect,
        TaskStep::Join,
    ];

    /// The mark label of this step.
    pub fn label(self) -> &'static str {
        match self {
            TaskStep::Farm => "ppd.task.farm",
            TaskStep::Dc => "ppd.task.dc",
            TaskStep::Give => "ppd.task.give",
            TaskStep::Begin => "ppd.task.begin",
            TaskStep::Split => "ppd.task.split",
            TaskStep::End => "ppd.task.end",
            TaskStep::Collect => "ppd.task.collect",
            TaskStep::Join => "ppd.task.join",
        }
    }

    /// The step a mark label names, if it is a task mark.
    pub fn of_label(label: &str) -> Option<TaskStep> {
        if !label.starts_with(PREFIX) {
            return None;
        }
        TaskStep::ALL.into_iter().find(|s| s.label() == label)
    }
}

/// The value of a task mark: MessagePack `[vm, task, [subtask path…], arg]`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskMark(
    /// Which run of a virtual machine the task belongs to: the generator's process id in the
    /// high 32 bits and the number of the run in that process, from 1, in the low 32; 0 for
    /// tasks labelled by hand.
    pub u64,
    /// The task number (farm: its index among the tasks; divide and conquer: 0).
    pub u64,
    /// The subtask's path from the task: child indexes, empty for the task itself.
    pub Vec<u32>,
    /// The step's argument (see [`TaskStep`]); 0 when it has none.
    pub u64,
);

impl TaskMark {
    /// The encoded value.
    pub fn encode(&self) -> Vec<u8> {
        TaskMark::encode_parts(self.0, self.1, &self.2, self.3)
    }

    /// The encoded value of `TaskMark(run, task, path, arg)`, without building one: what the
    /// runtime logs at every step.
    pub fn encode_parts(run: u64, task: u64, path: &[u32], arg: u64) -> Vec<u8> {
        // Integers and a sequence of integers always encode.
        value::encode(&(run, task, path, arg)).unwrap_or_default()
    }

    /// Decodes a task mark's value.
    pub fn decode(bytes: &[u8]) -> Result<TaskMark, ValueError> {
        value::decode_as(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_round_trip_and_other_marks_are_not_steps() {
        for s in TaskStep::ALL {
            assert_eq!(TaskStep::of_label(s.label()), Some(s));
        }
        assert_eq!(TaskStep::of_label("ppd.task.other"), None);
        assert_eq!(TaskStep::of_label("negative"), None);
    }

    #[test]
    fn a_mark_value_is_a_four_element_array() {
        let m = TaskMark(1, 7, vec![1, 0], 3);
        let bytes = m.encode();
        assert_eq!(
            value::show(&value::decode(&bytes).unwrap()),
            "[1, 7, [1, 0], 3]"
        );
        assert_eq!(TaskMark::decode(&bytes).unwrap(), m);
        assert!(TaskMark::decode(&value::encode(&"x").unwrap()).is_err());
    }
}
