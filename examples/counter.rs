//! `counter`: four processes increment a shared atomic counter with `fetch_add`, an atomic
//! read-modify-write. Race-free: `ppd races` reports nothing and the total is always 4000.
//! Compare with `racy_counter`.

use std::sync::Arc;

use ppd::sync::atomic::{AtomicU64, Ordering};

const PROCESSES: u64 = 4;
const INCREMENTS: u64 = 1000;

#[ppd::main]
fn main() {
    let counter = Arc::new(AtomicU64::named("counter", 0));
    let workers: Vec<_> = (0..PROCESSES)
        .map(|i| {
            let counter = Arc::clone(&counter);
            ppd::thread::Builder::new()
                .name(format!("incr-{i}"))
                .spawn(move || {
                    for _ in 0..INCREMENTS {
                        counter.fetch_add(1, Ordering::SeqCst);
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
    println!("counter = {total} (expected {})", PROCESSES * INCREMENTS);
    assert_eq!(total, PROCESSES * INCREMENTS);
}
