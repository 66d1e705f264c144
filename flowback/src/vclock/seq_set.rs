//! A set of (channel, message number) pairs: which sends exist in the logs.
//!
//! A program numbers the messages of each channel from the start, leaving less than a run of
//! numbers per sender unused (`docs/format.md`), so one bit per number is enough and a lookup
//! is an index, where a hash set of every send of a long run costs a hash and a probe per
//! message and 16 bytes or more per send. A number far beyond what a channel's sends so far
//! could reach (many senders that each sent a few messages, or a damaged log) goes to a hash
//! set instead, so the bits stay within a few per send whatever the logs say.

use crate::fasthash::FastSet;
use crate::trace::ObjIdx;

/// Numbers below this are kept as bits on any channel.
const ALWAYS_DENSE: u64 = 1 << 12;
/// Beyond that, a number is kept as a bit while it is below this many times the channel's
/// sends so far.
const SPREAD: u64 = 8;

#[derive(Debug, Default, Clone)]
struct Channel {
    bits: Vec<u64>,
    inserted: u64,
}

/// Which `(channel, seq)` pairs were inserted.
#[derive(Debug, Default, Clone)]
pub(crate) struct SeqSet {
    dense: Vec<Channel>,
    sparse: FastSet<(ObjIdx, u64)>,
}

impl SeqSet {
    /// An empty set for channels numbered below `objects`.
    pub(crate) fn new(objects: usize) -> SeqSet {
        SeqSet {
            dense: vec![Channel::default(); objects],
            sparse: FastSet::default(),
        }
    }

    pub(crate) fn insert(&mut self, channel: ObjIdx, seq: u64) {
        let Some(ch) = self.dense.get_mut(channel as usize) else {
            self.sparse.insert((channel, seq));
            return;
        };
        ch.inserted += 1;
        if seq >= ALWAYS_DENSE.max(SPREAD.saturating_mul(ch.inserted)) {
            self.sparse.insert((channel, seq));
            return;
        }
        let word = (seq / 64) as usize;
        if ch.bits.len() <= word {
            ch.bits.resize(word + 1, 0);
        }
        ch.bits[word] |= 1 << (seq % 64);
    }

    #[inline]
    pub(crate) fn contains(&self, channel: ObjIdx, seq: u64) -> bool {
        let dense = self.dense.get(channel as usize).is_some_and(|ch| {
            usize::try_from(seq / 64)
                .ok()
                .and_then(|w| ch.bits.get(w))
                .is_some_and(|w| w & (1 << (seq % 64)) != 0)
        });
        dense || (!self.sparse.is_empty() && self.sparse.contains(&(channel, seq)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_exactly_what_was_inserted_dense_or_sparse() {
        let mut set = SeqSet::new(2);
        let inserted = [(0, 0), (0, 1), (0, 4095), (0, 1 << 40), (1, 5), (7, 3)];
        for &(c, s) in &inserted {
            set.insert(c, s);
        }
        for &(c, s) in &inserted {
            assert!(set.contains(c, s), "({c}, {s}) inserted");
        }
        for (c, s) in [
            (0, 2),
            (1, 0),
            (0, (1 << 40) + 1),
            (7, 4),
            (1, 4095),
            (3, 0),
        ] {
            assert!(!set.contains(c, s), "({c}, {s}) never inserted");
        }
        // The far number went to the hash set, not into 2^34 words of bits.
        assert!(set.dense[0].bits.len() <= (ALWAYS_DENSE / 64) as usize);
        assert_eq!(set.sparse.len(), 2);
    }
}
