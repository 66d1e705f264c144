//! [`after`], [`at`], [`tick`] and [`never()`]: receivers of time, not of messages.
//!
//! A timer is not a channel another process sends on: nothing but time ends a wait on it. So
//! it has no carrier and no helper thread; a receive reads the clock through the runtime (a
//! logged `Clock` event, given back in replay), sleeps through `ppd::thread::sleep` until the
//! timer is due (a logged `Sleep`, which replay passes over without sleeping, and which says,
//! in a run killed during the wait, that only time would have ended it — never `Blocked`), and
//! delivers the instant the timer was due, as crossbeam's does. A timer no process waits on
//! leaves nothing in any log, so a finished run never looks hung because of one.
//!
//! When the timer is next due is a ppd atomic, as crossbeam's is an atomic: receivers of clones
//! of one timer in several processes race to take a delivery, and each look and each take is a
//! logged access, which replay gives back, so the same receive gets the same delivery.
//!
//! [`after`]: super::after
//! [`at`]: super::at
//! [`tick`]: super::tick
//! [`never()`]: super::never

use std::sync::Arc;
use std::time::Duration;

use crate::sync::atomic::{AtomicU64, Ordering};
use crate::time::Instant;

/// What [`Timer::next`] holds when no delivery is to come.
const NONE: u64 = u64::MAX;

/// When a timer is next due.
#[derive(Debug)]
pub(crate) struct Timer {
    /// The next delivery, as [`Instant::nanos`]: [`NONE`] once an `after` timer has delivered,
    /// and for `never`.
    next: AtomicU64,
    /// A `tick` timer's period.
    period: Option<Duration>,
    /// Made by `never`: every such timer is the same channel, as crossbeam's are.
    never: bool,
}

fn nanos(at: Option<Instant>) -> u64 {
    at.map_or(NONE, Instant::nanos)
}

impl Timer {
    /// Due once, at `when`.
    pub(crate) fn at(when: Instant) -> Timer {
        Timer {
            next: AtomicU64::new(nanos(Some(when))),
            period: None,
            never: false,
        }
    }

    /// Due every `period`, first at `first`.
    pub(crate) fn tick(first: Instant, period: Duration) -> Timer {
        Timer {
            next: AtomicU64::new(nanos(Some(first))),
            period: Some(period),
            never: false,
        }
    }

    /// Never due.
    pub(crate) fn never() -> Timer {
        Timer {
            next: AtomicU64::new(NONE),
            period: None,
            never: true,
        }
    }

    /// Whether `self` and `other` deliver to the same receivers: the same timer, or both
    /// `never`.
    pub(crate) fn same(self: &Arc<Self>, other: &Arc<Timer>) -> bool {
        Arc::ptr_eq(self, other) || (self.never && other.never)
    }

    /// When the timer is next due, if ever (a logged look, unless it is `never`).
    pub(crate) fn due(&self) -> Option<Instant> {
        if self.never {
            return None;
        }
        let next = self.next.load(Ordering::Acquire);
        (next != NONE).then(|| Instant::from_nanos(next))
    }

    /// Delivers if the timer is due at `now`: the instant it was due, as crossbeam's
    /// delivers, and the timer moves on to its next delivery, a period after `now` (a tick
    /// taken late is not due again at once: crossbeam's delivers at most one late tick).
    pub(crate) fn take_if_due(&self, now: Instant) -> Option<Instant> {
        loop {
            let due = self.due()?;
            if due > now {
                return None;
            }
            if let Some(at) = self.take(due, now) {
                return Some(at);
            }
        }
    }

    /// Takes the delivery due at `due`, seen due at `now`: the instant it was due, and the
    /// timer moves on as [`take_if_due`](Timer::take_if_due) says; `None` when another
    /// receiver of a clone took it first.
    pub(crate) fn take(&self, due: Instant, now: Instant) -> Option<Instant> {
        let then = self.period.and_then(|period| now.checked_add(period));
        self.replace(due, then).then_some(due)
    }

    /// A tick's delivery due at `due`, taken before it is due by a receive that will wait
    /// for it (as crossbeam's claims it before it sleeps): the next is a period after it.
    /// `false` when another receiver of a clone took it first.
    fn claim(&self, due: Instant) -> bool {
        self.replace(due, self.period.and_then(|period| due.checked_add(period)))
    }

    /// Moves the next delivery from `due` to `then`, unless another receiver moved it first.
    fn replace(&self, due: Instant, then: Option<Instant>) -> bool {
        self.next
            .compare_exchange(
                nanos(Some(due)),
                nanos(then),
                Ordering::AcqRel,
                Ordering::Acquire,
            )
            .is_ok()
    }

    /// Waits at most `patience` (none: for as long as it takes) for the timer to be due, and
    /// delivers the instant it was due; `None` when it was not due in time.
    #[track_caller]
    pub(crate) fn receive(&self, patience: Option<Duration>) -> Option<Instant> {
        let start = Instant::now();
        // A patience too long to have an end is none.
        let deadline = patience.and_then(|patience| start.checked_add(patience));
        let mut now = start;
        loop {
            if let Some(at) = self.take_if_due(now) {
                return Some(at);
            }
            match (self.due(), deadline) {
                // Not due in time: the receive waits out its patience, as crossbeam's does.
                (Some(due), Some(deadline)) if due > deadline => break,
                (None, Some(_)) => break,
                (Some(due), _) => {
                    if self.period.is_some() {
                        if self.claim(due) {
                            crate::thread::sleep(due.saturating_duration_since(now));
                            return Some(due);
                        }
                    } else {
                        crate::thread::sleep(due.saturating_duration_since(now));
                    }
                    // Another receiver of a clone may have taken this delivery meanwhile.
                }
                // Never due, waited for forever: like crossbeam's, this receive never returns.
                (None, None) => loop {
                    std::thread::park();
                },
            }
            now = Instant::now();
        }
        let left = deadline.map_or(Duration::ZERO, |d| d.saturating_duration_since(now));
        if !left.is_zero() {
            crate::thread::sleep(left);
        }
        None
    }
}
