//! [`after`], [`at`], [`tick`] and [`never()`]: receivers of time, not of messages.
//!
//! A timer is not a channel another process sends on: nothing but time ends a wait on it. So
//! it has no carrier and no helper thread; a receive reads the clock through the runtime (a
//! logged `Clock` event, given back in replay), sleeps through `ppd::thread::sleep` until the
//! timer is due (a logged `Sleep`, which replay passes over without sleeping, and which says,
//! in a run killed during the wait, that only time would have ended it — never `Blocked`), and
//! delivers the instant the timer was due, as crossbeam's does. A timer no process waits on leaves nothing in
//! any log, so a finished run never looks hung because of one.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::time::Instant;

/// When a timer is next due.
#[derive(Debug)]
pub(crate) struct Timer {
    /// The next delivery: `None` once an `after` timer has delivered, and for `never`.
    next: Mutex<Option<Instant>>,
    /// A `tick` timer's period.
    period: Option<Duration>,
    /// Made by `never`: every such timer is the same channel, as crossbeam's are.
    never: bool,
}

impl Timer {
    /// Due once, at `when`.
    pub(crate) fn at(when: Instant) -> Timer {
        Timer {
            next: Mutex::new(Some(when)),
            period: None,
            never: false,
        }
    }

    /// Due every `period`, first at `first`.
    pub(crate) fn tick(first: Instant, period: Duration) -> Timer {
        Timer {
            next: Mutex::new(Some(first)),
            period: Some(period),
            never: false,
        }
    }

    /// Never due.
    pub(crate) fn never() -> Timer {
        Timer {
            next: Mutex::new(None),
            period: None,
            never: true,
        }
    }

    /// Whether `self` and `other` deliver to the same receivers: the same timer, or both
    /// `never`.
    pub(crate) fn same(self: &Arc<Self>, other: &Arc<Timer>) -> bool {
        Arc::ptr_eq(self, other) || (self.never && other.never)
    }

    fn next(&self) -> std::sync::MutexGuard<'_, Option<Instant>> {
        self.next.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// When the timer is next due, if ever.
    pub(crate) fn due(&self) -> Option<Instant> {
        *self.next()
    }

    /// Delivers if the timer is due at `now`: the instant it was due, as crossbeam's
    /// delivers, and the timer moves on to its next delivery, a period after `now` (a tick
    /// taken late is not due again at once: crossbeam's delivers at most one late tick).
    pub(crate) fn take_if_due(&self, now: Instant) -> Option<Instant> {
        let mut next = self.next();
        let due = (*next)?;
        if due > now {
            return None;
        }
        *next = self.period.and_then(|period| now.checked_add(period));
        Some(due)
    }

    /// A tick's delivery due at `due`, taken before it is due by a receive that will wait
    /// for it (as crossbeam's claims it before it sleeps): the next is a period after it.
    /// `false` when another receiver of a clone took it first.
    fn claim(&self, due: Instant) -> bool {
        let mut next = self.next();
        if *next != Some(due) {
            return false;
        }
        *next = self.period.and_then(|period| due.checked_add(period));
        true
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
