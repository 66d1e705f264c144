//! A fast hasher for the analyses' hot maps, keyed by small integers.
//!
//! The keys are event references, object indexes and sequence numbers from the user's own
//! recording; hash flooding is not a threat here, while SipHash would cost as much as the
//! analysis itself. The hash is rustc's (FxHash, from `rustc-hash`), as the recorder's replay
//! of channels uses.

/// A map with FxHash.
pub(crate) type FastMap<K, V> = rustc_hash::FxHashMap<K, V>;
/// A set with FxHash.
pub(crate) type FastSet<K> = rustc_hash::FxHashSet<K>;
