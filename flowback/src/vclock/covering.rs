//! Which checkpoint covers each event of a process, in a quarter of a byte per event.
//!
//! An event's clock is that of the latest checkpoint at or before it (module docs of
//! [`crate::vclock`]), so the number of that checkpoint is the count of checkpoints up to the
//! event, minus one. A list of one `u32` per event said so in 4 bytes per event: at ten
//! million events, more than the clocks themselves. Here each run of 64 events keeps one bit
//! per event (is it a checkpoint?) and the count of checkpoints before the run; the number is
//! that count plus the set bits up to the event. Answering takes a `popcount`.

/// The checkpoint covering each event of one process.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Covering {
    len: u32,
    /// Per run of 64 events: the checkpoints before it, and which of its events are ones.
    runs: Vec<(u32, u64)>,
}

impl Covering {
    /// The covering of a process of `len` events whose checkpoints are `checkpoints`, which
    /// ascend and are below `len`.
    pub(crate) fn new(len: u32, checkpoints: &[u32]) -> Covering {
        let mut runs = vec![(0u32, 0u64); (len as usize).div_ceil(64)];
        for &k in checkpoints {
            runs[k as usize / 64].1 |= 1 << (k % 64);
        }
        let mut before = 0;
        for run in &mut runs {
            run.0 = before;
            before += run.1.count_ones();
        }
        Covering { len, runs }
    }

    /// How many events it covers.
    pub(crate) fn len(&self) -> u32 {
        self.len
    }

    /// The number of the latest checkpoint at or before event `k`, if there is one (and `k`
    /// is an event).
    #[inline]
    pub(crate) fn checkpoint_of(&self, k: u32) -> Option<u32> {
        if k >= self.len {
            return None;
        }
        let (before, bits) = self.runs[k as usize / 64];
        let upto = bits & (u64::MAX >> (63 - k % 64));
        (before + upto.count_ones()).checked_sub(1)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::Covering;

    proptest! {
        #[test]
        fn each_event_is_covered_by_the_latest_checkpoint_at_or_before_it(
            len in 0u32..400,
            marks in proptest::collection::vec(any::<bool>(), 400),
        ) {
            let checkpoints: Vec<u32> = (0..len).filter(|&k| marks[k as usize]).collect();
            let covering = Covering::new(len, &checkpoints);
            for k in 0..len + 70 {
                let expected = checkpoints
                    .iter()
                    .rposition(|&c| c <= k)
                    .filter(|_| k < len)
                    .map(|i| i as u32);
                prop_assert_eq!(covering.checkpoint_of(k), expected, "event {}", k);
            }
        }
    }
}
