//! How far long work has got, for whoever shows it.
//!
//! Libraries only count: reading a log reports the events of each block it decodes, and each
//! pass over a run's events is a stage of its own that says what it does and, when it is
//! known, how many events it will go through. A pass counts only its own events, so a count
//! never runs past its stage's total, and a second pass over the same events is a second
//! stage, not more of the first. The `ppd` command installs a [`Progress`] that draws it;
//! without one (a library user, a test) every report is a relaxed atomic load and nothing
//! else.

use std::sync::OnceLock;

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

/// Reports that a stage begins.
pub fn stage(what: &str, events: Option<u64>) {
    if let Some(sink) = SINK.get() {
        sink.stage(what, events);
    }
}

/// Reports that `events` more events were gone through.
pub fn advance(events: u64) {
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

/// Counts events in a loop that goes through them one by one, and reports them in batches
/// (the rest when it is dropped), so that the loop pays an addition per event.
#[derive(Debug, Default)]
pub struct Counter {
    pending: u64,
    /// Reports nothing: the pass runs beside another that counts the same events.
    silent: bool,
}

/// Events a [`Counter`] holds before it reports them.
const BATCH: u64 = 1 << 16;

impl Counter {
    /// A counter with nothing counted.
    pub fn new() -> Counter {
        Counter::default()
    }

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
            advance(self.pending);
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
