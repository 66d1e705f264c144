//! `racy_counter`: four processes increment a shared atomic counter with a load followed by a
//! store — a read-modify-write split in two, so increments are lost when two processes
//! interleave between the load and the store. The total is often below 4000; `ppd races` shows
//! the load/store race with both sides' source lines. Compare with `counter`.
//!
//! `racy_counter [INCREMENTS]`: increments per process (default 1000). The race benchmark runs
//! it beside the same program written with `std`, under Valgrind's Helgrind.

use std::process::ExitCode;
use std::sync::Arc;

use ppd::sync::atomic::{AtomicU64, Ordering};

const PROCESSES: u64 = 4;
/// Increments per process, unless the first argument says otherwise.
const INCREMENTS: u64 = 1000;

#[ppd::main]
fn main() -> ExitCode {
    let increments = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(INCREMENTS);
    let counter = Arc::new(AtomicU64::named("counter", 0));
    let workers: Vec<_> = (0..PROCESSES)
        .map(|i| {
            let counter = Arc::clone(&counter);
            ppd::thread::Builder::new()
                .name(format!("incr-{i}"))
                .spawn(move || {
                    for _ in 0..increments {
                        let seen = counter.load(Ordering::Relaxed);
                        counter.store(seen + 1, Ordering::Relaxed);
                    }
                })
                .expect("spawn")
        })
        .collect();
    for w in workers {
        w.join().expect("worker");
    }
    let total = counter.load(Ordering::SeqCst);
    ppd::mark!("total", total);
    println!("counter = {total} (expected {})", PROCESSES * increments);
    if total == PROCESSES * increments {
        ExitCode::SUCCESS
    } else {
        println!("lost {} increments", PROCESSES * increments - total);
        ExitCode::FAILURE
    }
}
