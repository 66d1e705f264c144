//! The part of `rand` 0.8 that crossbeam-channel's tests use (`thread_rng().gen_range(a..b)`),
//! drawing from ppd's logged randomness: the conformance harness builds the peers' tests
//! against this crate under the name `rand`, so that a replay draws the numbers the recording
//! drew, as a ported program would by using `ppd::rand`.

use std::ops::Range;

/// A handle on ppd's logged randomness, as `rand::rngs::ThreadRng`.
#[derive(Debug, Clone, Copy, Default)]
pub struct ThreadRng;

/// The handle, as `rand::thread_rng`.
pub fn thread_rng() -> ThreadRng {
    ThreadRng
}

/// `rand::Rng`'s `gen_range` over `usize` ranges, the one form the tests use.
pub trait Rng {
    /// A draw in `range` (which must not be empty).
    fn gen_range(&mut self, range: Range<usize>) -> usize;
}

impl Rng for ThreadRng {
    fn gen_range(&mut self, range: Range<usize>) -> usize {
        ppd::rand::usize(range)
    }
}
