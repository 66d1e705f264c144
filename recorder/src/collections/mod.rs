//! Hash maps and sets whose iteration order replays, mirroring `std::collections`.
//!
//! std's `RandomState` draws fresh keys in every run, so a loop over a `HashMap` visits its
//! entries in another order when the run is replayed. ppd's
//! [`RandomState`](hash_map::RandomState) takes its keys from [`crate::rand`], which logs them:
//! the same keys, hence the same order, in replay.
//! [`HashMap`] and [`HashSet`] are std's types behind a thin wrapper whose hasher defaults to it
//! (the wrapper only exists so that `HashMap::new()` works as in std); they dereference to the
//! std map or set for everything else.

pub mod hash_map;
pub mod hash_set;

pub use hash_map::HashMap;
pub use hash_set::HashSet;
pub use std::collections::{BTreeMap, BTreeSet, BinaryHeap, LinkedList, TryReserveError, VecDeque};
pub use std::collections::{binary_heap, btree_map, btree_set, linked_list, vec_deque};
