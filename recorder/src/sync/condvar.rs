//! A condition variable, mirroring `std::sync::Condvar`, built from ppd's own parts so that
//! every choice it makes is already an event the log carries.
//!
//! std's condvar cannot say which notify woke which waiter, or whether a wake-up was spurious.
//! This one keeps its waiters itself: a queue of tickets under a hidden ppd [`Mutex`] (named
//! `condvar`), and each waiter's park token (`thread::park`). A wait takes a ticket, releases
//! the user's mutex, and parks until its ticket has left the queue; `notify_one` takes the
//! oldest ticket out and unparks its owner, `notify_all` every ticket. So:
//!
//! - *Who was woken by which notify* is the order of the queue's lock acquisitions, which
//!   replay enforces; a waiter that finds its ticket gone was notified.
//! - *A spurious wake-up* (the OS returning from park early) is a park whose token swap found
//!   nothing, logged with its version: the waiter finds its ticket still queued and parks again,
//!   in replay exactly where it did in the recording.
//! - *A timeout* is decided by `ppd::time::Instant`, whose readings are logged, so replay times
//!   out at the same wait.
//! - *The happened-before*: the notifier releases the queue's lock after taking the ticket, and
//!   the waiter acquires it to see the ticket gone, so everything before a notify happens-before
//!   the return of the wait it ended, as std promises.
//!
//! The user's mutex is released and re-acquired by its own guard, so its version chain and
//! lock-order edges are those of ordinary `Unlock`/`Lock` events at the `wait`'s call site.
//!
//! The queue's lock is created as a `condvar` object, and a wait without a timeout logs a
//! `Blocked` marker on it before it parks: a run that ends while a process waits says that it
//! waits for a notify of this condvar, at the `wait`'s call site, and the deadlock analysis
//! takes the condvar's other users for those who could notify it.

use std::collections::VecDeque;
use std::panic::Location;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use ppd_formats::event::ObjectKind;

use super::mutex::{Mutex, MutexGuard};
use super::{LockResult, PoisonError};
use crate::thread::{self, Thread};
use crate::time::Instant;

/// A condition variable, like `std::sync::Condvar`, used with [`ppd::sync::Mutex`](Mutex).
///
/// ```
/// use ppd::sync::{Arc, Condvar, Mutex};
///
/// let pair = Arc::new((Mutex::new(false), Condvar::new()));
/// let other = Arc::clone(&pair);
/// let t = ppd::thread::spawn(move || {
///     *other.0.lock().unwrap() = true;
///     other.1.notify_one();
/// });
/// let (ready, cvar) = &*pair;
/// let guard = cvar.wait_while(ready.lock().unwrap(), |ready| !*ready).unwrap();
/// assert!(*guard);
/// drop(guard);
/// t.join().unwrap();
/// ```
#[derive(Debug)]
pub struct Condvar {
    waiters: Mutex<Waiters>,
    /// The address of the mutex this condvar waits with, 0 before the first wait: std panics
    /// when one condvar is used with two mutexes, and so does this one.
    mutex: AtomicUsize,
}

/// The tickets of the processes waiting now, oldest first.
#[derive(Debug)]
struct Waiters {
    next_ticket: u64,
    queue: VecDeque<(u64, Thread)>,
}

/// Whether a timed wait returned because its time was up, like std's `WaitTimeoutResult`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WaitTimeoutResult(bool);

impl WaitTimeoutResult {
    /// True when the wait ended because the timeout elapsed.
    pub fn timed_out(&self) -> bool {
        self.0
    }
}

impl Default for Condvar {
    #[track_caller]
    fn default() -> Condvar {
        Condvar::new()
    }
}

impl crate::runtime::binding::LazyObject for Condvar {
    fn register_now(&self) {
        self.waiters.register_now();
    }
}

/// How one wait ended.
enum Woken {
    Notified,
    TimedOut,
}

impl Condvar {
    /// A condition variable nobody waits on. `const`, as std's, so it can be a `static`.
    #[track_caller]
    pub const fn new() -> Condvar {
        Condvar::with_name(None)
    }

    /// A condition variable with a name that reports use (`waits for a notify of wake`).
    ///
    /// ```
    /// let ready = ppd::sync::Condvar::named("ready");
    /// ready.notify_all();
    /// ```
    #[track_caller]
    pub const fn named(name: &'static str) -> Condvar {
        Condvar::with_name(Some(name))
    }

    #[track_caller]
    const fn with_name(name: Option<&'static str>) -> Condvar {
        Condvar {
            waiters: Mutex::hidden(
                ObjectKind::Condvar,
                name,
                Waiters {
                    next_ticket: 0,
                    queue: VecDeque::new(),
                },
            ),
            mutex: AtomicUsize::new(0),
        }
    }

    /// Releases `guard`'s mutex, waits for a notify, and re-acquires the mutex, as std's.
    /// Like std's, it may wake without a notify; wait in a loop, or with [`wait_while`].
    ///
    /// [`wait_while`]: Condvar::wait_while
    #[track_caller]
    pub fn wait<'a, T>(&self, guard: MutexGuard<'a, T>) -> LockResult<MutexGuard<'a, T>> {
        let mutex = guard.mutex();
        self.wait_until(guard, None);
        mutex.lock()
    }

    /// Waits while `condition` holds, re-checking it after every wake-up, as std's.
    #[track_caller]
    pub fn wait_while<'a, T, F>(
        &self,
        mut guard: MutexGuard<'a, T>,
        mut condition: F,
    ) -> LockResult<MutexGuard<'a, T>>
    where
        F: FnMut(&mut T) -> bool,
    {
        while condition(&mut *guard) {
            let mutex = guard.mutex();
            self.wait_until(guard, None);
            guard = mutex.lock()?;
        }
        Ok(guard)
    }

    /// Waits for a notification or until `ms` milliseconds have passed, as std's deprecated
    /// `wait_timeout_ms`: the flag is whether it was woken before the time was up.
    #[deprecated(note = "use `wait_timeout`, as std says")]
    #[track_caller]
    pub fn wait_timeout_ms<'a, T>(
        &self,
        guard: MutexGuard<'a, T>,
        ms: u32,
    ) -> LockResult<(MutexGuard<'a, T>, bool)> {
        match self.wait_timeout(guard, Duration::from_millis(u64::from(ms))) {
            Ok((guard, timeout)) => Ok((guard, !timeout.timed_out())),
            Err(poisoned) => {
                let (guard, timeout) = poisoned.into_inner();
                Err(PoisonError::new((guard, !timeout.timed_out())))
            }
        }
    }

    /// Like [`wait`](Condvar::wait), for at most `dur`, as std's.
    #[track_caller]
    pub fn wait_timeout<'a, T>(
        &self,
        guard: MutexGuard<'a, T>,
        dur: Duration,
    ) -> LockResult<(MutexGuard<'a, T>, WaitTimeoutResult)> {
        let mutex = guard.mutex();
        let deadline = Instant::now().checked_add(dur);
        let woken = self.wait_until(guard, deadline);
        let timed_out = WaitTimeoutResult(matches!(woken, Woken::TimedOut));
        match mutex.lock() {
            Ok(guard) => Ok((guard, timed_out)),
            Err(poisoned) => Err(PoisonError::new((poisoned.into_inner(), timed_out))),
        }
    }

    /// Waits while `condition` holds, for at most `dur` in all, as std's: the result says
    /// whether the time ran out with the condition still holding.
    #[track_caller]
    pub fn wait_timeout_while<'a, T, F>(
        &self,
        mut guard: MutexGuard<'a, T>,
        dur: Duration,
        mut condition: F,
    ) -> LockResult<(MutexGuard<'a, T>, WaitTimeoutResult)>
    where
        F: FnMut(&mut T) -> bool,
    {
        let deadline = Instant::now().checked_add(dur);
        loop {
            if !condition(&mut *guard) {
                return Ok((guard, WaitTimeoutResult(false)));
            }
            if deadline.is_some_and(|deadline| Instant::now() >= deadline) {
                return Ok((guard, WaitTimeoutResult(true)));
            }
            let mutex = guard.mutex();
            self.wait_until(guard, deadline);
            guard = match mutex.lock() {
                Ok(guard) => guard,
                Err(poisoned) => {
                    return Err(PoisonError::new((
                        poisoned.into_inner(),
                        WaitTimeoutResult(false),
                    )));
                }
            };
        }
    }

    /// Wakes the process that has waited longest, if any.
    #[track_caller]
    pub fn notify_one(&self) {
        let mut waiters = self.waiters.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((_, thread)) = waiters.queue.pop_front() {
            thread.unpark();
        }
    }

    /// Wakes every process waiting now.
    #[track_caller]
    pub fn notify_all(&self) {
        let mut waiters = self.waiters.lock().unwrap_or_else(PoisonError::into_inner);
        for (_, thread) in waiters.queue.drain(..) {
            thread.unpark();
        }
    }

    /// Queues a ticket, releases `guard`, and parks until the ticket is taken by a notify or
    /// `deadline` passes (then takes it out itself).
    #[track_caller]
    fn wait_until<T>(&self, guard: MutexGuard<'_, T>, deadline: Option<Instant>) -> Woken {
        self.check_mutex(guard.mutex());
        let ticket = {
            let mut waiters = self.waiters.lock().unwrap_or_else(PoisonError::into_inner);
            let ticket = waiters.next_ticket;
            waiters.next_ticket += 1;
            waiters.queue.push_back((ticket, thread::current()));
            ticket
        };
        drop(guard);
        loop {
            match deadline {
                None => {
                    thread::park::park(None, Some(self.waiters.object_id()), Location::caller())
                }
                Some(deadline) => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if !left.is_zero() {
                        thread::park_timeout(left);
                    }
                }
            }
            let mut waiters = self.waiters.lock().unwrap_or_else(PoisonError::into_inner);
            let Some(queued) = waiters.queue.iter().position(|(t, _)| *t == ticket) else {
                return Woken::Notified;
            };
            if deadline.is_some_and(|deadline| Instant::now() >= deadline) {
                waiters.queue.remove(queued);
                return Woken::TimedOut;
            }
        }
    }

    /// Panics, as std's condvar does, when this condvar already waited with another mutex.
    fn check_mutex<T>(&self, mutex: &Mutex<T>) {
        let address = std::ptr::from_ref(mutex) as usize;
        match self
            .mutex
            .compare_exchange(0, address, Ordering::Relaxed, Ordering::Relaxed)
        {
            Ok(_) => {}
            Err(used) if used == address => {}
            Err(_) => panic!("attempted to use a condition variable with two mutexes"),
        }
    }
}
