//! Random numbers. Every draw logs its raw 64 bits and replay returns them, so a run that
//! depended on randomness replays the same way. Each function draws exactly one value and maps
//! it with a generator seeded by it, so the mapping is a pure function of the logged bits.

use std::cell::RefCell;
use std::ops::RangeBounds;

use ppd_formats::{Event, EventKind};

use crate::runtime;
use crate::runtime::backend::Op;

thread_local! {
    static SOURCE: RefCell<fastrand::Rng> = RefCell::new(fastrand::Rng::new());
}

/// 64 random bits, logged.
///
/// ```
/// let _bits: u64 = ppd::rand::next_u64();
/// ```
pub fn next_u64() -> u64 {
    if !runtime::active() {
        return SOURCE.with(|s| s.borrow_mut().u64(..));
    }
    let value = match runtime::expect(Op::plain(EventKind::Random, None)) {
        Some(Event::Random { value }) => value,
        _ => SOURCE.with(|s| s.borrow_mut().u64(..)),
    };
    runtime::done(&Event::Random { value });
    value
}

fn seeded() -> fastrand::Rng {
    fastrand::Rng::with_seed(next_u64())
}

/// A `u64` in `range`.
///
/// ```
/// let x = ppd::rand::u64(1..=6);
/// assert!((1..=6).contains(&x));
/// ```
pub fn u64(range: impl RangeBounds<u64>) -> u64 {
    seeded().u64(range)
}

/// An `i64` in `range`.
///
/// ```
/// let x = ppd::rand::i64(-5..5);
/// assert!((-5..5).contains(&x));
/// ```
pub fn i64(range: impl RangeBounds<i64>) -> i64 {
    seeded().i64(range)
}

/// A `u32` in `range`.
///
/// ```
/// assert!(ppd::rand::u32(0..10) < 10);
/// ```
pub fn u32(range: impl RangeBounds<u32>) -> u32 {
    seeded().u32(range)
}

/// A `usize` in `range`.
///
/// ```
/// assert!(ppd::rand::usize(..3) < 3);
/// ```
pub fn usize(range: impl RangeBounds<usize>) -> usize {
    seeded().usize(range)
}

/// An `f64` in `[0, 1)`.
///
/// ```
/// let x = ppd::rand::f64();
/// assert!((0.0..1.0).contains(&x));
/// ```
pub fn f64() -> f64 {
    seeded().f64()
}

/// A fair coin.
///
/// ```
/// let _heads: bool = ppd::rand::bool();
/// ```
pub fn bool() -> bool {
    next_u64() & 1 == 1
}

/// Shuffles `slice` in place.
///
/// ```
/// let mut v = vec![1, 2, 3];
/// ppd::rand::shuffle(&mut v);
/// v.sort();
/// assert_eq!(v, [1, 2, 3]);
/// ```
pub fn shuffle<T>(slice: &mut [T]) {
    seeded().shuffle(slice)
}

/// A random element of `slice`, `None` if it is empty.
///
/// ```
/// let v = [10, 20];
/// assert!(v.contains(ppd::rand::choice(&v).unwrap()));
/// ```
pub fn choice<T>(slice: &[T]) -> Option<&T> {
    if slice.is_empty() {
        return None;
    }
    Some(&slice[usize(..slice.len())])
}

/// A handle on ppd's logged randomness for code written against `rand_core`: every value it
/// gives is a logged draw, as with the functions of this module.
///
/// It implements `rand_core`'s `TryRng` with an infallible error, hence `rand_core::Rng` (and
/// the `RngCore` alias of earlier `rand_core` versions).
///
/// ```
/// use rand_core::Rng as _;
/// let mut rng = ppd::rand::Rng::new();
/// let _roll = rng.next_u32() % 6;
/// let mut key = [0u8; 12];
/// rng.fill_bytes(&mut key);
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct Rng;

impl Rng {
    /// A handle; all handles draw from the same logged source.
    ///
    /// ```
    /// let _rng = ppd::rand::Rng::new();
    /// ```
    pub fn new() -> Rng {
        Rng
    }
}

impl rand_core::TryRng for Rng {
    type Error = std::convert::Infallible;

    /// The low half of one logged draw.
    fn try_next_u32(&mut self) -> Result<u32, Self::Error> {
        Ok(next_u64() as u32)
    }

    fn try_next_u64(&mut self) -> Result<u64, Self::Error> {
        Ok(next_u64())
    }

    /// One logged draw per eight bytes.
    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Self::Error> {
        for chunk in dst.chunks_mut(8) {
            let bytes = next_u64().to_le_bytes();
            chunk.copy_from_slice(&bytes[..chunk.len()]);
        }
        Ok(())
    }
}
