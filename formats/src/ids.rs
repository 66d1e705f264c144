//! Identifiers of the things a recording talks about.
//!
//! Every identifier is assigned deterministically by the program's own execution, so that a replay
//! of the same program reproduces the same identifiers without consulting a global counter:
//! a process id comes from the parent's `Spawn` event, an object id from its creator's id and the
//! creator's local creation count.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A logical process: one thread of the recorded program with its own log.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ProcessId(pub u32);

impl ProcessId {
    /// The process that runs `main`.
    pub const MAIN: ProcessId = ProcessId(0);

    /// The low bits that number a process within its OS process (its node, in a recording of
    /// several): a node records at most `2^20` logical processes, and the recording
    /// numbers node `k`'s processes from `k << NODE_SHIFT`.
    pub const NODE_SHIFT: u32 = 20;

    /// The id as an index into per-process tables.
    pub fn index(self) -> usize {
        self.0 as usize
    }

    /// How many nodes process ids can tell apart: the bits above [`NODE_SHIFT`](Self::NODE_SHIFT).
    pub const MAX_NODES: u32 = 1 << (32 - ProcessId::NODE_SHIFT);

    /// Process `local` of node `node`; `node` must be below [`MAX_NODES`](Self::MAX_NODES) and
    /// `local` below `2^NODE_SHIFT`.
    pub fn on_node(node: u32, local: u32) -> ProcessId {
        debug_assert!(node < ProcessId::MAX_NODES && local < 1 << ProcessId::NODE_SHIFT);
        ProcessId((node << ProcessId::NODE_SHIFT) | local)
    }

    /// Reads a process id as reports write it: `p<N>` (or `N`) for node 0's process N, or
    /// `p<NODE>.<N>`. Only plain decimal digits are taken, and a node or a number past what ids
    /// hold is `None`, never wrapped onto another process.
    pub fn parse_label(text: &str) -> Option<ProcessId> {
        fn number(digits: &str, below: u32) -> Option<u32> {
            let plain = !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit());
            plain
                .then(|| digits.parse::<u32>().ok())
                .flatten()
                .filter(|&n| n < below)
        }
        let text = text.strip_prefix('p').unwrap_or(text);
        let local_limit = 1 << ProcessId::NODE_SHIFT;
        match text.split_once('.') {
            Some((node, local)) => Some(ProcessId::on_node(
                number(node, ProcessId::MAX_NODES)?,
                number(local, local_limit)?,
            )),
            None => number(text, local_limit).map(ProcessId),
        }
    }

    /// The node (OS process) it ran in, 0 in a recording of one.
    pub fn node(self) -> u32 {
        self.0 >> ProcessId::NODE_SHIFT
    }

    /// Its number within its node, as its node's log numbers it.
    pub fn local(self) -> ProcessId {
        ProcessId(self.0 & ((1 << ProcessId::NODE_SHIFT) - 1))
    }
}

/// `p3`; a process of node `k > 0` of a recording of several OS processes is `pk.3`.
impl fmt::Display for ProcessId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.node() {
            0 => write!(f, "p{}", self.0),
            node => write!(f, "p{node}.{}", self.local().0),
        }
    }
}

/// A shared object: a channel, mutex, semaphore or atomic.
///
/// The high 32 bits are the creating process, the low 32 bits count the objects that process
/// created before this one. Both are deterministic under replay.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ObjectId(pub u64);

impl ObjectId {
    /// The `ordinal`-th object created by `creator`.
    pub fn new(creator: ProcessId, ordinal: u32) -> ObjectId {
        ObjectId((u64::from(creator.0) << 32) | u64::from(ordinal))
    }

    /// The process that created the object.
    pub fn creator(self) -> ProcessId {
        ProcessId((self.0 >> 32) as u32)
    }

    /// How many objects the creator had created before this one.
    pub fn ordinal(self) -> u32 {
        self.0 as u32
    }

    /// The same object as a recording of several OS processes names it: its creator moved
    /// up by `base` (see [`ProcessId::NODE_SHIFT`]).
    pub fn rebased(self, base: u32) -> ObjectId {
        ObjectId::new(ProcessId(self.creator().0 + base), self.ordinal())
    }

    /// The park token of `process`: an atomic flag every process has without creating it
    /// (`unpark` sets it, `park` takes it), numbered past any object it could create.
    pub fn park_token(process: ProcessId) -> ObjectId {
        ObjectId::new(process, u32::MAX)
    }

    /// Whether this is a process's park token.
    pub fn is_park_token(self) -> bool {
        self.ordinal() == u32::MAX
    }
}

/// `#3.7`: the 7th object process 3 made; `#2.3.7` when process 3 is of node 2.
impl fmt::Display for ObjectId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let creator = self.creator();
        match creator.node() {
            0 => write!(f, "#{}.{}", creator.0, self.ordinal()),
            node => write!(f, "#{node}.{}.{}", creator.local().0, self.ordinal()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn object_id_round_trips_creator_and_ordinal() {
        let id = ObjectId::new(ProcessId(7), 42);
        assert_eq!(id.creator(), ProcessId(7));
        assert_eq!(id.ordinal(), 42);
        assert_eq!(id.to_string(), "#7.42");
        let remote = ObjectId::new(ProcessId::on_node(2, 3), 7);
        assert_eq!(remote.to_string(), "#2.3.7");
    }
}
