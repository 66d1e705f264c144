//! How a replayed process waits for another's next step: watching for it a moment before it
//! sleeps. In a replayed exchange the step mostly comes within microseconds, sooner than
//! falling asleep and being woken would take; every message of a replayed ping-pong was a
//! wake-up while a receive slept at once.

use std::time::{Duration, Instant};

/// How long a watch lasts before its process sleeps.
const WATCH: Duration = Duration::from_micros(50);

/// Spins, then yields, until `done` or 50 µs (`WATCH`) have passed.
pub fn watch(mut done: impl FnMut() -> bool) {
    let backoff = crossbeam_utils::Backoff::new();
    let start = Instant::now();
    while !done() {
        if backoff.is_completed() {
            if start.elapsed() >= WATCH {
                return;
            }
            std::thread::yield_now();
        } else {
            backoff.snooze();
        }
    }
}
