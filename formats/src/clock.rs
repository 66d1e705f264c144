//! Vector clocks: the one definition of their comparison and join, shared by the replay
//! controller's clocks in the replay order, the analysis's in the happened-before, the task
//! follower's and the command line's (both orders are tabled in [`crate::order`]).
//!
//! A clock is a slice of [`Tick`]s, one component per process: component *q* of an event's
//! clock is how many events of process *q* are in its causal past (its own process's included,
//! the event itself counted).

use crate::order::Tick;

/// The operations on a vector clock, implemented for `[Tick]` so that every owner keeps its
/// clocks as it stores them (a `Vec`, a boxed slice, a row of a pool).
pub trait VectorClock {
    /// Component-wise maximum of `self` and `other`, into `self`; whether any component grew.
    /// Components past the shorter of the two are left as they are.
    fn join(&mut self, other: &[Tick]) -> bool;

    /// Whether every component of `self` is at most `other`'s (the pointwise order on the
    /// components both have).
    fn leq(&self, other: &[Tick]) -> bool;
}

impl VectorClock for [Tick] {
    #[inline]
    fn join(&mut self, other: &[Tick]) -> bool {
        let mut changed = false;
        for (a, &b) in self.iter_mut().zip(other) {
            if b > *a {
                *a = b;
                changed = true;
            }
        }
        changed
    }

    #[inline]
    fn leq(&self, other: &[Tick]) -> bool {
        self.iter().zip(other).all(|(a, b)| a <= b)
    }
}

/// Whether event `a_index` of process `a_process` happened before event `b_index` of process
/// `b_process`, given component `a_process` of `b`'s clock (`b_knows_of_a`): within a process
/// by program order, across processes by whether `b`'s causal past reaches past `a`.
#[inline]
pub fn happened_before(
    (a_process, a_index): (u32, u32),
    (b_process, b_index): (u32, u32),
    b_knows_of_a: impl FnOnce() -> Tick,
) -> bool {
    if a_process == b_process {
        a_index < b_index
    } else {
        a_index < b_knows_of_a()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn join_takes_the_maximum_and_says_whether_anything_grew() {
        let mut a: Vec<Tick> = vec![1, 5, 0];
        assert!(a.join(&[2, 3, 0]));
        assert_eq!(a, [2, 5, 0]);
        assert!(!a.join(&[2, 5, 0]));
        assert!(!a.join(&[0, 0, 0]));
        assert_eq!(a, [2, 5, 0]);
    }

    #[test]
    fn leq_is_the_pointwise_order() {
        let a: &[Tick] = &[1, 2, 3];
        assert!(a.leq(&[1, 2, 3]));
        assert!(a.leq(&[1, 3, 3]));
        assert!(!a.leq(&[0, 9, 9]));
        let b: &[Tick] = &[2, 1, 3];
        assert!(!a.leq(b) && !b.leq(a));
    }

    #[test]
    fn happened_before_uses_program_order_within_a_process() {
        assert!(happened_before((0, 1), (0, 2), || 0));
        assert!(!happened_before((0, 2), (0, 2), || 9));
        assert!(!happened_before((0, 3), (0, 2), || 9));
        // Across processes: a's index (0-based) below b's knowledge of a's process.
        assert!(happened_before((0, 4), (1, 0), || 5));
        assert!(!happened_before((0, 5), (1, 0), || 5));
    }
}
