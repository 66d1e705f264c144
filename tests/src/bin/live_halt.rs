//! A program to halt while it records (`ppd record --stop`): two producers stream numbered
//! items to a consumer, which marks a checkpoint every `EVERY` items; a bookkeeper counts
//! under a lock until the consumer is done, so a halt always finds it busy with operations.
//! At a checkpoint, items are in the channel, sent and not received, and the other processes
//! are halted or waiting.

use ppd::sync::atomic::{AtomicBool, Ordering};
use ppd::sync::mpsc::{Receiver, Sender, channel, sync_channel};
use ppd::sync::{Arc, Mutex};
use ppd::thread;

const ITEMS: u64 = 3000;
const EVERY: u64 = 1000;

/// What the consumer does with an item: an e-block, so `enter apply` can be a breakpoint.
#[ppd::eblock]
fn apply(total: u64, item: u64) -> u64 {
    total + item
}

/// `live_halt meet`: two processes mark `arrived`, then work a while in code that makes no
/// ppd operation, so that their last events are both the mark for that while; the main thread
/// waits for both.
fn meet() {
    let walkers: Vec<_> = ["left", "right"]
        .into_iter()
        .map(|name| {
            thread::Builder::new()
                .name(name.into())
                .spawn(|| {
                    ppd::mark!("arrived");
                    std::thread::sleep(std::time::Duration::from_millis(300));
                })
                .expect("spawn a walker")
        })
        .collect();
    for walker in walkers {
        walker.join().expect("a walker");
    }
    println!("met");
}

/// `live_halt linked`: a worker marks `step` every millisecond and looks at its inbox after
/// each; after a while the main thread marks `go` and sends the worker one message. A
/// bystander marks `idle` and never talks to the worker (the main thread joins it last).
/// So a `step` follows `go` by happened-before only once the worker has the message, and
/// never follows `idle`.
fn linked() {
    let (tx, rx) = channel::<u32>();
    let worker = thread::Builder::new()
        .name("worker".into())
        .spawn(move || {
            let mut heard = false;
            for i in 0..400u32 {
                ppd::mark!("step", i);
                if !heard {
                    heard = rx.try_recv().is_ok();
                }
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        })
        .expect("spawn the worker");
    let bystander = thread::Builder::new()
        .name("bystander".into())
        .spawn(|| ppd::mark!("idle"))
        .expect("spawn the bystander");
    std::thread::sleep(std::time::Duration::from_millis(100));
    ppd::mark!("go");
    tx.send(1).expect("the worker");
    worker.join().expect("the worker");
    bystander.join().expect("the bystander");
    println!("linked");
}

/// A critical section: tells the other side it is inside; with `wait`, counts in `ledger`
/// until the other side says it is inside too; then five increments of `ledger`, each
/// followed by 10 ms of work that makes no ppd operation.
#[ppd::eblock]
fn section(ledger: &Mutex<u64>, tell: &Sender<()>, hear: &Receiver<()>, wait: bool) {
    // The other side may be gone already.
    let _ = tell.send(());
    while wait && hear.try_recv().is_err() {
        *ledger.lock().unwrap() += 1;
    }
    for _ in 0..5 {
        *ledger.lock().unwrap() += 1;
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// `live_halt sections [apart | late]`: `left` and `right` each run a section; they overlap
/// (each waits inside until the other is inside; with `late`, right starts 100 ms late, so
/// left counts a while inside alone) — or, with `apart`, right enters only once left has left
/// (left tells it so).
fn sections(mode: Option<&str>) {
    let (apart, late) = (mode == Some("apart"), mode == Some("late"));
    let ledger = Arc::new(Mutex::new(0u64));
    let (to_right, right_hears) = channel::<()>();
    let (to_left, left_hears) = channel::<()>();
    let (left_done, wait_for_left) = channel::<()>();
    let left = {
        let ledger = Arc::clone(&ledger);
        thread::Builder::new()
            .name("left".into())
            .spawn(move || {
                section(&ledger, &to_right, &left_hears, !apart);
                // Only `apart` waits for it.
                let _ = left_done.send(());
            })
            .expect("spawn left")
    };
    let right = thread::Builder::new()
        .name("right".into())
        .spawn(move || {
            if apart {
                wait_for_left.recv().expect("left");
            } else if late {
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
            section(&ledger, &to_left, &right_hears, true);
        })
        .expect("spawn right");
    left.join().expect("left");
    right.join().expect("right");
    println!("sections");
}

#[ppd::main]
fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("meet") => return meet(),
        Some("linked") => return linked(),
        Some("sections") => return sections(args.get(1).map(String::as_str)),
        _ => {}
    }
    let (tx, rx) = sync_channel::<u64>(64);
    let ledger = Arc::new(Mutex::new(0u64));
    let consumed = Arc::new(AtomicBool::new(false));
    let producers: Vec<_> = (1..=2u64)
        .map(|p| {
            let tx = tx.clone();
            thread::Builder::new()
                .name(format!("producer-{p}"))
                .spawn(move || {
                    for i in 0..ITEMS / 2 {
                        tx.send(p * 1_000_000 + i).expect("the consumer");
                    }
                })
                .expect("spawn a producer")
        })
        .collect();
    drop(tx);
    let bookkeeper = {
        let ledger = Arc::clone(&ledger);
        let consumed = Arc::clone(&consumed);
        thread::Builder::new()
            .name("bookkeeper".into())
            .spawn(move || {
                while !consumed.load(Ordering::Acquire) {
                    *ledger.lock().unwrap() += 1;
                }
            })
            .expect("spawn the bookkeeper")
    };
    let consumer = thread::Builder::new()
        .name("consumer".into())
        .spawn(move || {
            let mut total = 0;
            for (n, item) in rx.into_iter().enumerate() {
                total = apply(total, item);
                let n = n as u64 + 1;
                if n.is_multiple_of(EVERY) {
                    ppd::mark!("checkpoint", n);
                }
            }
            total
        })
        .expect("spawn the consumer");
    for producer in producers {
        producer.join().expect("a producer");
    }
    let total = consumer.join().expect("the consumer");
    consumed.store(true, Ordering::Release);
    bookkeeper.join().expect("the bookkeeper");
    println!("total = {total}");
}
