//! How far long work has got, for whoever shows it.
//!
//! Libraries only count: reading a log reports the events of each block it decodes, and a
//! command's stages say what they are doing. The `ppd` command installs a [`Progress`] that
//! draws it; without one (a library user, a test) every report is a relaxed atomic load and
//! nothing else.

use std::sync::OnceLock;

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
