//! A counting semaphore with P ([`acquire`](Semaphore::acquire)) and V
//! ([`release`](Semaphore::release)) operations, the synchronization primitive of Miller &
//! Choi's §5.5 and §6.2.1.
//!
//! Both operations are versioned: replay performs them in the recorded order, so every P is
//! satisfied by the same V as in the recorded run.
//!
//! A recorded P that finds no permit backs off (spinning, then yielding) before it sleeps, and
//! a V wakes a sleeper only when there is one: a bounded channel whose senders keep it full
//! would otherwise pay two context switches per message.

use std::fmt;
use std::panic::Location;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Duration;

use crossbeam_utils::{Backoff, CachePadded};

use ppd_formats::event::{ObjectKind, Outcome};
use ppd_formats::{Event, EventKind, ObjectId, ProcessId};

use super::object::ObjectMeta;
use crate::runtime;
use crate::runtime::backend::{Mode, Op, expected};

/// A counting semaphore.
///
/// ```
/// let s = ppd::sync::Semaphore::new(1);
/// s.acquire();
/// s.release();
/// ```
pub struct Semaphore {
    meta: ObjectMeta,
    count: Mutex<Permits>,
    /// `count.free` as of its last change, for a backing-off P to look at without the lock; on
    /// a cache line of its own, so that the P's watching it leave the lock's line to the V's.
    free_hint: CachePadded<AtomicU64>,
    available: Condvar,
}

/// The free permits, and how many recorded P's sleep on `available` waiting for one.
#[derive(Debug)]
struct Permits {
    free: u64,
    sleepers: u64,
}

impl Permits {
    const fn new(free: u64) -> Permits {
        Permits { free, sleepers: 0 }
    }
}

impl fmt::Debug for Semaphore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Semaphore")
            .field("object", &self.meta.known_id())
            .finish_non_exhaustive()
    }
}

impl crate::runtime::binding::LazyObject for Semaphore {
    fn register_now(&self) {
        self.meta.register_now();
    }
}

/// Logged as its id (it can be an e-block argument).
impl serde::Serialize for Semaphore {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        super::handle::serialize(self.meta.id(), ppd_formats::value::End::Whole, serializer)
    }
}

impl<'de> serde::Deserialize<'de> for Semaphore {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let id = super::handle::deserialize(deserializer, "semaphore")?;
        Ok(Semaphore {
            meta: ObjectMeta::emulated(id),
            count: Mutex::new(Permits::new(0)),
            free_hint: CachePadded::new(AtomicU64::new(0)),
            available: Condvar::new(),
        })
    }
}

impl Semaphore {
    /// A semaphore with `permits` permits.
    ///
    /// ```
    /// let s = ppd::sync::Semaphore::new(2);
    /// s.acquire();
    /// s.acquire();
    /// ```
    #[track_caller]
    pub const fn new(permits: u64) -> Semaphore {
        Semaphore {
            meta: ObjectMeta::new(ObjectKind::Semaphore, permits, None, Location::caller()),
            count: Mutex::new(Permits::new(permits)),
            free_hint: CachePadded::new(AtomicU64::new(permits)),
            available: Condvar::new(),
        }
    }

    /// A semaphore with a name that reports use.
    ///
    /// ```
    /// let s = ppd::sync::Semaphore::named("slots", 1);
    /// s.acquire();
    /// ```
    #[track_caller]
    pub const fn named(name: &'static str, permits: u64) -> Semaphore {
        Semaphore {
            meta: ObjectMeta::new(
                ObjectKind::Semaphore,
                permits,
                Some(name),
                Location::caller(),
            ),
            count: Mutex::new(Permits::new(permits)),
            free_hint: CachePadded::new(AtomicU64::new(permits)),
            available: Condvar::new(),
        }
    }

    /// A semaphore ppd makes for an object built on it (a bounded channel's room), created
    /// at the object's site under the object's name.
    pub(crate) fn hidden(
        permits: u64,
        name: &'static str,
        site: &'static Location<'static>,
    ) -> Semaphore {
        Semaphore {
            meta: ObjectMeta::new(ObjectKind::Semaphore, permits, Some(name), site),
            count: Mutex::new(Permits::new(permits)),
            free_hint: CachePadded::new(AtomicU64::new(permits)),
            available: Condvar::new(),
        }
    }

    fn count(&self) -> MutexGuard<'_, Permits> {
        self.count.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The permits once one is free or a short back-off has passed without one: most waits
    /// for room in a busy channel are shorter than falling asleep and being woken.
    fn count_after_backoff(&self) -> MutexGuard<'_, Permits> {
        let backoff = Backoff::new();
        loop {
            // Looked at without the lock, so that the waiters leave it to the V's.
            if self.free_hint.load(Ordering::Relaxed) > 0 || backoff.is_completed() {
                let count = self.count();
                if count.free > 0 || backoff.is_completed() {
                    return count;
                }
            }
            backoff.snooze();
        }
    }

    /// Returns `count` once it has a free permit, asleep on `available` until then (at most
    /// `patience`, if given).
    fn sleep_for_permit<'a>(
        &'a self,
        mut count: MutexGuard<'a, Permits>,
        patience: Option<Duration>,
    ) -> MutexGuard<'a, Permits> {
        count.sleepers += 1;
        count = match patience {
            None => self
                .available
                .wait_while(count, |count| count.free == 0)
                .unwrap_or_else(|p| p.into_inner()),
            Some(patience) => {
                self.available
                    .wait_timeout_while(count, patience, |count| count.free == 0)
                    .unwrap_or_else(|p| p.into_inner())
                    .0
            }
        };
        count.sleepers -= 1;
        count
    }

    /// The semaphore's id.
    pub(crate) fn id(&self) -> ObjectId {
        self.meta.id()
    }

    /// Whether a permit is free now: a look that is not an operation (nothing is logged), for
    /// a selection deciding whether a send could proceed.
    pub(crate) fn has_permit(&self) -> bool {
        self.count().free > 0
    }

    /// P: takes a permit, waiting until one is available.
    ///
    /// ```
    /// let s = std::sync::Arc::new(ppd::sync::Semaphore::new(0));
    /// let s2 = s.clone();
    /// let h = ppd::thread::spawn(move || s2.release());
    /// s.acquire();
    /// h.join().unwrap();
    /// ```
    #[track_caller]
    pub fn acquire(&self) {
        self.acquire_at(Location::caller());
    }

    /// P on behalf of an operation at `site` (a bounded channel's send waiting for room): the
    /// `Blocked` marker and the acquisition name the caller's place, not this module.
    pub(crate) fn acquire_at(&self, site: &'static Location<'static>) {
        let object = self.meta.id();
        let logged = runtime::expect(Op::on(EventKind::SemAcquire, object, Some(site)));
        let log = |version: u64, prev: Option<ProcessId>| {
            runtime::done(&Event::SemAcquire {
                object,
                version,
                prev,
                site: Some(site),
            });
        };
        match expected::version(&logged) {
            Some((version, prev)) => {
                // In recorded order a permit is there when this P's turn comes.
                self.meta.replay(
                    version,
                    prev,
                    || {
                        let mut count = self.count();
                        count.free = count.free.saturating_sub(1);
                        self.free_hint.store(count.free, Ordering::Relaxed);
                    },
                    |_| log(version, prev),
                );
            }
            None => {
                let mut count = self.count_after_backoff();
                if count.free == 0 {
                    runtime::done(&Event::Blocked {
                        object,
                        site: Some(site),
                    });
                    count = self.sleep_for_permit(count, None);
                }
                count.free -= 1;
                self.free_hint.store(count.free, Ordering::Relaxed);
                // Logged before the permit count is released: in version order (see
                // `ObjectMeta::record_logged`).
                let (version, prev) = self.meta.record_serialized();
                log(version, prev);
                drop(count);
            }
        }
    }

    /// V: returns a permit, waking one waiter.
    ///
    /// ```
    /// let s = ppd::sync::Semaphore::new(0);
    /// s.release();
    /// s.acquire();
    /// ```
    #[track_caller]
    pub fn release(&self) {
        self.release_at(Location::caller());
    }

    /// V on behalf of an operation at `site`.
    pub(crate) fn release_at(&self, site: &'static Location<'static>) {
        let object = self.meta.id();
        let logged = runtime::expect(Op::on(EventKind::SemRelease, object, Some(site)));
        let log = |version: u64, prev: Option<ProcessId>| {
            runtime::done(&Event::SemRelease {
                object,
                version,
                prev,
                site: Some(site),
            });
        };
        let wake = match expected::version(&logged) {
            // Replayed P's wait for their turn, not for a permit: nobody sleeps here.
            Some((version, prev)) => {
                let put_back = || {
                    let mut count = self.count();
                    count.free += 1;
                    self.free_hint.store(count.free, Ordering::Relaxed);
                };
                self.meta
                    .replay(version, prev, put_back, |_| log(version, prev));
                false
            }
            None => {
                // Count before version, as in `acquire`: one lock order for both.
                let mut count = self.count();
                count.free += 1;
                self.free_hint.store(count.free, Ordering::Relaxed);
                // Logged before the permit count is released: in version order (see
                // `ObjectMeta::record_logged`).
                let (version, prev) = self.meta.record_serialized();
                log(version, prev);
                count.sleepers > 0
            }
        };
        if wake {
            self.available.notify_one();
        }
    }

    /// V, on behalf of an operation at `site`, when the run decides it (`live`, recording) or
    /// the log says it happened next (replay): for a V whose happening is a race of the run,
    /// as whether a channel's receiver was its last. Returns whether it happened.
    pub(crate) fn release_if(&self, site: &'static Location<'static>, live: bool) -> bool {
        let happened = match runtime::mode() {
            Mode::Replay | Mode::Emulate => {
                runtime::expect_if(Op::on(EventKind::SemRelease, self.meta.id(), Some(site)))
                    .is_some()
            }
            Mode::PassThrough | Mode::Record => live,
        };
        if happened {
            self.release_at(site);
        }
        happened
    }

    /// P that waits at most `patience` (none: not at all), on behalf of an operation at `site`
    /// (a bounded channel's `try_send`, `send_timeout`): takes a permit if one is there (or
    /// comes in time). The answer is logged as an `Outcome` (`WouldBlock`, or
    /// `Acquired` followed by the `SemAcquire`), as a `try_lock`'s is, and replay gives it
    /// back.
    pub(crate) fn try_acquire_at(
        &self,
        site: &'static Location<'static>,
        patience: Option<Duration>,
    ) -> bool {
        let object = self.meta.id();
        let answer = |outcome: Outcome| {
            runtime::done(&Event::Outcome {
                object,
                outcome,
                site: Some(site),
            });
        };
        let logged = runtime::expect(Op::on(EventKind::Outcome, object, Some(site)));
        match logged {
            Some(Event::Outcome {
                outcome: Outcome::WouldBlock,
                ..
            }) => {
                answer(Outcome::WouldBlock);
                false
            }
            // Replay: it took a permit; the `SemAcquire` logged next says in which turn.
            Some(_) => {
                answer(Outcome::Acquired);
                self.acquire_at(site);
                true
            }
            None => {
                let mut count = self.count();
                if let Some(patience) = patience.filter(|_| count.free == 0) {
                    runtime::done(&Event::Blocked {
                        object,
                        site: Some(site),
                    });
                    count = self.sleep_for_permit(count, Some(patience));
                }
                if count.free == 0 {
                    answer(Outcome::WouldBlock);
                    return false;
                }
                answer(Outcome::Acquired);
                count.free -= 1;
                self.free_hint.store(count.free, Ordering::Relaxed);
                let (version, prev) = self.meta.record_serialized();
                runtime::done(&Event::SemAcquire {
                    object,
                    version,
                    prev,
                    site: Some(site),
                });
                drop(count);
                true
            }
        }
    }
}
