//! Programs that use bounded channels the way std and crossbeam programs do, chosen by the
//! first argument:
//!
//! * `pipeline`: a producer fills a `sync_channel(2)` (its `try_send` on the full channel
//!   answers `Full`, every time), then keeps sending while `main` drains it;
//! * `rendezvous`: a `sync_channel(0)`: each send returns only after `main` took the message,
//!   so the worker may read what `main` wrote before the receive without a race;
//! * `hang`: `main` sends on a full `sync_channel(1)` nobody ever receives from, forever.
//!
//! Each prints results that do not depend on the interleaving.

use std::sync::Arc;

use ppd::sync::atomic::{AtomicU64, Ordering};
use ppd::sync::mpsc::{self, TrySendError};

fn spawn<F: FnOnce() + Send + 'static>(name: &str, f: F) -> ppd::thread::JoinHandle<()> {
    ppd::thread::Builder::new()
        .name(name.to_owned())
        .spawn(f)
        .expect("spawn")
}

fn pipeline() {
    let (tx, rx) = mpsc::sync_channel::<u64>(2);
    let (go, wait_for_go) = mpsc::channel::<()>();
    let producer = spawn("producer", move || {
        tx.send(1).expect("room");
        tx.send(2).expect("room");
        // Nobody receives before `go`: the channel is full, whatever the timing.
        let full = matches!(tx.try_send(99), Err(TrySendError::Full(99)));
        println!("full: {full}");
        go.send(()).expect("main waits");
        for i in 3..=40 {
            tx.send(i).expect("main receives");
        }
    });
    wait_for_go.recv().expect("producer");
    let mut sum = 0;
    let mut count = 0;
    for value in rx.iter() {
        sum += value;
        count += 1;
    }
    producer.join().expect("producer");
    println!("received {count}, sum {sum}");
}

fn rendezvous() {
    let (tx, rx) = mpsc::sync_channel::<u64>(0);
    let round = Arc::new(AtomicU64::named("round", 0));
    let worker_round = Arc::clone(&round);
    let worker = spawn("worker", move || {
        for i in 1..=5 {
            tx.send(i).expect("main receives");
        }
        // `main` wrote 5 before its last receive, which happened before the last send
        // returned: no race, and always 5 (a buffered channel would let this read 0..=5).
        println!("worker read round {}", worker_round.load(Ordering::Relaxed));
    });
    let mut sum = 0;
    for i in 1..=5 {
        round.store(i, Ordering::Relaxed);
        sum += rx.recv().expect("worker sends");
    }
    worker.join().expect("worker");
    println!("rendezvous sum {sum}");
}

fn hang() {
    let (results, _unread) = mpsc::sync_channel::<u64>(1);
    results.send(1).expect("room for one");
    println!("filled");
    // Full, and nobody receives: blocked forever.
    results.send(2).expect("never returns");
}

#[ppd::main]
fn main() {
    match std::env::args().nth(1).as_deref() {
        Some("pipeline") => pipeline(),
        Some("rendezvous") => rendezvous(),
        Some("hang") => hang(),
        other => {
            eprintln!("unknown case {other:?}");
            std::process::exit(2);
        }
    }
}
