//! How far long work has got, for whoever shows it.
//!
//! Libraries only count. A [`stage`] that reads logs counts the events of each block the log
//! reader decodes ([`advance`]); a [`pass`] over a run's events counts them itself, with the
//! [`Counter`] it returns, and while it runs the blocks a reader decodes are not counted (a
//! store that decodes its events from the log again for the pass would count them twice). So
//! a count never runs past its stage's total, and a second pass over the same events is a
//! second stage, not more of the first. The `ppd` command installs a [`Progress`] that draws
//! it; without one (a library user, a test) every report is a relaxed atomic load and nothing
//! else.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::recording::Recording;

/// A receiver of progress reports. Calls come from any thread.
pub trait Progress: Send + Sync {
    /// A stage of the work begins: what it does, as a person reads it, and how many events it
    /// will go through when that is known.
    fn stage(&self, what: &str, events: Option<u64>);
    /// `events` more events were gone through.
    fn advance(&self, events: u64);
}

static SINK: OnceLock<Box<dyn Progress>> = OnceLock::new();

/// Sends every later report of this process to `sink`; the first call wins.
pub fn report_to(sink: Box<dyn Progress>) {
    let _ = SINK.set(sink);
}

/// Whether the current stage counts the blocks log readers decode: it is not a [`pass`].
static READS_COUNT: AtomicBool = AtomicBool::new(true);

/// Reports that a stage begins, whose count is what log readers decode from now on.
pub fn stage(what: &str, events: Option<u64>) {
    READS_COUNT.store(true, Ordering::Relaxed);
    if let Some(sink) = SINK.get() {
        sink.stage(what, events);
    }
}

/// Reports that a pass over `events` events begins, counted with the counter it returns.
pub fn pass(what: &str, events: u64) -> Counter {
    READS_COUNT.store(false, Ordering::Relaxed);
    if let Some(sink) = SINK.get() {
        sink.stage(what, Some(events));
    }
    Counter {
        pending: 0,
        silent: false,
    }
}

/// Reports that a log reader decoded `events` more events (not counted during a [`pass`]).
pub fn advance(events: u64) {
    if READS_COUNT.load(Ordering::Relaxed) {
        report(events);
    }
}

fn report(events: u64) {
    if let Some(sink) = SINK.get() {
        sink.advance(events);
    }
}

/// How many events the logs of `recording` hold, for a stage that goes through all of them;
/// `None` when a log cannot be opened (the stage then counts without a total).
pub fn events_in(recording: &Recording) -> Option<u64> {
    recording
        .processes()
        .iter()
        .map(|entry| recording.open_log(entry).ok().map(|r| r.event_count()))
        .sum()
}

/// Counts the events of a [`pass`] as its loop goes through them one by one, and reports them
/// in batches (the rest when it is dropped), so that the loop pays an addition per event.
#[derive(Debug)]
pub struct Counter {
    pending: u64,
    /// Reports nothing: the pass runs beside another that counts the same events.
    silent: bool,
}

/// Events a [`Counter`] holds before it reports them.
const BATCH: u64 = 1 << 16;

impl Counter {
    /// A counter that reports nothing, for a pass that runs beside another one counting the
    /// same events: the stage counts them once.
    pub fn silent() -> Counter {
        Counter {
            pending: 0,
            silent: true,
        }
    }

    /// Counts `events` more.
    #[inline]
    pub fn add(&mut self, events: u64) {
        self.pending += events;
        if self.pending >= BATCH {
            self.report();
        }
    }

    fn report(&mut self) {
        if !self.silent {
            report(self.pending);
        }
        self.pending = 0;
    }
}

impl Drop for Counter {
    fn drop(&mut self) {
        if self.pending > 0 {
            self.report();
        }
    }
}
