//! A barrier mirroring `std::sync::Barrier`, built from ppd's [`Mutex`] and two [`Semaphore`]s.
//!
//! Each arrival takes the count's lock (a logged acquisition); the arrival that completes the
//! generation is the leader, which resets the count and opens its generation's gate once per
//! waiter (a semaphore V each); every other arrival waits at the gate (a semaphore P, logged as
//! `Blocked` first, so a killed run says where it waits). The leader choice is the lock's
//! acquisition order, replayed as any lock's. The happened-before is what std promises: every
//! arrival's unlock precedes the leader's lock, which precedes each V, each of which precedes
//! the P that takes its permit, so every arrival happens before every departure of its
//! generation.
//!
//! Generations alternate between two gates: with one, a fast process already waiting in the
//! next generation could take a permit the leader meant for a slow one of this generation. With
//! two it cannot: generation `g + 2` (the same gate again) cannot begin before every process of
//! generation `g` has left it, since each must arrive in `g + 1` first.

use std::fmt;

use super::mutex::Mutex;
use super::semaphore::Semaphore;
use crate::runtime::binding::LazyObject;

/// A barrier for `n` processes, like `std::sync::Barrier`.
///
/// ```
/// use std::sync::Arc;
/// let barrier = Arc::new(ppd::sync::Barrier::new(2));
/// let other = Arc::clone(&barrier);
/// let h = ppd::thread::spawn(move || other.wait().is_leader());
/// let mine = barrier.wait().is_leader();
/// assert!(mine ^ h.join().unwrap(), "exactly one leader");
/// ```
pub struct Barrier {
    n: usize,
    arrivals: Mutex<Arrivals>,
    gates: [Semaphore; 2],
}

/// The count of the current generation.
struct Arrivals {
    arrived: usize,
    generation: u64,
}

/// What [`Barrier::wait`] returns, like `std::sync::BarrierWaitResult`.
pub struct BarrierWaitResult(bool);

impl BarrierWaitResult {
    /// Whether this process was the leader of its generation (the last to arrive).
    ///
    /// ```
    /// assert!(ppd::sync::Barrier::new(1).wait().is_leader());
    /// ```
    pub fn is_leader(&self) -> bool {
        self.0
    }
}

impl fmt::Debug for BarrierWaitResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BarrierWaitResult")
            .field("is_leader", &self.0)
            .finish()
    }
}

impl fmt::Debug for Barrier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Barrier").finish_non_exhaustive()
    }
}

impl Barrier {
    /// A barrier that lets `n` processes through together; with `n` 0 or 1 every `wait`
    /// returns at once as the leader, as std's does. Its hidden lock and gates are reported as
    /// `barrier`.
    #[track_caller]
    pub const fn new(n: usize) -> Barrier {
        Barrier {
            n,
            arrivals: Mutex::named(
                "barrier",
                Arrivals {
                    arrived: 0,
                    generation: 0,
                },
            ),
            gates: [
                Semaphore::named("barrier", 0),
                Semaphore::named("barrier", 0),
            ],
        }
    }

    /// Waits until `n` processes have called `wait` in this generation.
    ///
    /// ```
    /// let barrier = ppd::sync::Barrier::new(0);
    /// assert!(barrier.wait().is_leader());
    /// ```
    #[track_caller]
    pub fn wait(&self) -> BarrierWaitResult {
        // The arrivals lock is never held across a panic: poisoning cannot happen, but is
        // harmless to look past.
        let mut arrivals = self.arrivals.lock().unwrap_or_else(|p| p.into_inner());
        arrivals.arrived += 1;
        let gate = &self.gates[(arrivals.generation % 2) as usize];
        if arrivals.arrived < self.n {
            drop(arrivals);
            gate.acquire();
            return BarrierWaitResult(false);
        }
        let waiters = arrivals.arrived - 1;
        arrivals.arrived = 0;
        arrivals.generation += 1;
        drop(arrivals);
        for _ in 0..waiters {
            gate.release();
        }
        BarrierWaitResult(true)
    }
}

impl LazyObject for Barrier {
    fn register_now(&self) {
        self.arrivals.register_now();
        for gate in &self.gates {
            gate.register_now();
        }
    }
}
