//! Programs that use bounded channels the way std and crossbeam programs do, chosen by the
//! first argument:
//!
//! * `pipeline`: a producer fills a `sync_channel(2)` (its `try_send` on the full channel
//!   answers `Full`, every time), then keeps sending while `main` drains it;
//! * `rendezvous`: a `sync_channel(0)`: each send returns only after `main` took the message,
//!   so the worker may read what `main` wrote before the receive without a race;
//! * `hang`: `main` sends on a full `sync_channel(1)` nobody ever receives from, forever;
//! * `work-queue`: crossbeam's API: three workers share a `bounded(4)` job queue (clones of
//!   one receiver), `main` fills it (`try_send` answers `Full`, `len` 4) and collects each
//!   worker's results;
//! * `select`: `select!` over two producers' channels with a `default(timeout)` arm, until
//!   both are disconnected;
//! * `eblock`: an e-block receives from a `sync_channel(1)` (so `ppd why` re-executes a
//!   receive whose room the log has);
//! * `eblock-unbounded`: an e-block receives from an unbounded channel and releases a
//!   semaphore made right after it (where a bounded channel's room would be);
//! * `timers`: `select!` in a loop over a worker's messages, a `tick` and an `after` that
//!   never fires in time, with another `after` nobody waits on;
//! * `select-send`: a dispatcher's `select!` sends jobs on two workers' `bounded(1)` queues
//!   (whichever has room) and receives their results, until every job is done; then a
//!   `select!` of timers alone (`at`, `after`, `never`) and `same_channel`;
//! * `last-receiver FLAG`: two workers hold clones of an `Arc` around a `sync_channel(1)`'s
//!   receiver while `main` blocks sending into the full channel, until the last clone's drop
//!   disconnects it. Which worker drops last is decided by whether the file `FLAG` exists
//!   (neither std's `Arc` nor a file's existence is logged): recorded with it and replayed
//!   without, the other worker's drop is the last in the replay.
//!
//! Each prints results that do not depend on the interleaving.

use std::sync::Arc;
use std::time::Duration;

use ppd::sync::Mutex;
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

fn work_queue() {
    let (jobs, queue) = ppd::channel::bounded::<u64>(4);
    for i in 0..4 {
        jobs.send(i).expect("room");
    }
    // Nobody takes jobs yet: full, whatever the timing.
    let full = matches!(jobs.try_send(99), Err(ppd::channel::TrySendError::Full(99)));
    println!(
        "full: {full}, len {}, is_full {}",
        jobs.len(),
        jobs.is_full()
    );
    // One results channel per worker, so that no receive races between two senders.
    let workers: Vec<_> = (0..3)
        .map(|w| {
            let queue = queue.clone();
            let (results, collected) = ppd::channel::unbounded::<u64>();
            let worker = spawn(&format!("worker{w}"), move || {
                for job in queue.iter() {
                    results.send(job * job).expect("main collects");
                }
            });
            (worker, collected)
        })
        .collect();
    drop(queue);
    for i in 4..30 {
        jobs.send(i).expect("workers take jobs");
    }
    drop(jobs);
    let mut count = 0;
    let mut squares = 0;
    for (worker, collected) in workers {
        for square in collected.iter() {
            count += 1;
            squares += square;
        }
        worker.join().expect("worker");
    }
    println!("results {count}, squares {squares}");
}

fn select() {
    let (evens_tx, evens) = ppd::channel::bounded::<u64>(1);
    let (odds_tx, odds) = ppd::channel::unbounded::<u64>();
    let producers = vec![
        spawn("evens", move || {
            for i in (0..20).step_by(2) {
                evens_tx.send(i).expect("main selects");
            }
        }),
        spawn("odds", move || {
            for i in (1..20).step_by(2) {
                odds_tx.send(i).expect("main selects");
            }
        }),
    ];
    let (mut evens_open, mut odds_open) = (true, true);
    let (mut even_sum, mut odd_sum, mut idle) = (0, 0, 0u64);
    // A closed channel's arm would always be ready: it is swapped for one nobody sends on.
    let (_silent, never) = ppd::channel::unbounded::<u64>();
    while evens_open || odds_open {
        ppd::select! {
            recv(if evens_open { &evens } else { &never }) -> msg => match msg {
                Ok(n) => even_sum += n,
                Err(_) => evens_open = false,
            },
            recv(if odds_open { &odds } else { &never }) -> msg => {
                match msg {
                    Ok(n) => odd_sum += n,
                    Err(_) => odds_open = false,
                }
            }
            default(Duration::from_millis(1)) => idle += 1,
        }
    }
    for producer in producers {
        producer.join().expect("producer");
    }
    // How often it idled depends on the timing; replay reproduces it.
    let _ = idle;
    println!("evens {even_sum}, odds {odd_sum}");
}

fn timers() {
    let ticks = ppd::channel::tick(Duration::from_millis(1));
    let deadline = ppd::channel::after(Duration::from_secs(600));
    let _nobody_waits = ppd::channel::after(Duration::from_secs(3600));
    let (tx, rx) = ppd::channel::unbounded::<u64>();
    let worker = spawn("worker", move || {
        for i in 1..=5 {
            ppd::thread::sleep(Duration::from_millis(2));
            tx.send(i).expect("main receives");
        }
    });
    let (mut received, mut ticked) = (0, 0);
    let mut last_tick = None;
    loop {
        ppd::select! {
            recv(rx) -> msg => match msg {
                Ok(n) => received += n,
                Err(_) => break,
            },
            recv(ticks) -> at => {
                let at = at.expect("ticks never end");
                assert!(last_tick.is_none_or(|last| at >= last), "ticks go forward");
                last_tick = Some(at);
                ticked += 1;
            }
            recv(deadline) -> _ => {
                println!("deadline passed");
                break;
            }
        }
    }
    worker.join().expect("worker");
    // The first tick is due before the first message can come: at least one, every run.
    println!("received {received}, ticked {}", ticked > 0);
}

fn select_send() {
    let jobs: Vec<u64> = (1..=30).collect();
    let (done_tx, done) = ppd::channel::unbounded::<(usize, u64)>();
    let mut queues = Vec::new();
    let mut workers = Vec::new();
    for w in 0..2 {
        let (tx, rx) = ppd::channel::bounded::<u64>(1);
        let done_tx = done_tx.clone();
        workers.push(spawn(&format!("worker-{w}"), move || {
            for job in rx {
                done_tx
                    .send((w, job * job))
                    .expect("the dispatcher collects");
            }
        }));
        queues.push(tx);
    }
    drop(done_tx);
    let (mut next, mut collected, mut squares) = (0, 0, 0u64);
    let mut by_worker = [0u64; 2];
    // Jobs go to whichever worker has room; a worker with a job waiting holds up nobody.
    while collected < jobs.len() {
        let mut collect = |result: Result<(usize, u64), _>| {
            let (w, square) = result.expect("workers send results");
            by_worker[w] += 1;
            squares += square;
            collected += 1;
        };
        match jobs.get(next).copied() {
            Some(job) => ppd::select! {
                send(queues[0], job) -> sent => {
                    sent.expect("worker-0 receives");
                    next += 1;
                }
                send(queues[1], job) -> sent => {
                    sent.expect("worker-1 receives");
                    next += 1;
                }
                recv(done) -> result => collect(result),
            },
            None => collect(done.recv()),
        }
    }
    drop(queues);
    for worker in workers {
        worker.join().expect("worker");
    }
    // Who got how many jobs is the run's choice; replay gives the same split.
    println!(
        "squares {squares}, worker-0 {} worker-1 {}",
        by_worker[0], by_worker[1]
    );
    let soon = ppd::time::Instant::now() + Duration::from_millis(3);
    let at = ppd::channel::at(soon);
    let late = ppd::channel::after(Duration::from_secs(600));
    let never = ppd::channel::never::<ppd::time::Instant>();
    let fired = ppd::select! {
        recv(late) -> _ => "after",
        recv(never) -> _ => "never",
        recv(at) -> when => if when.expect("at delivers") >= soon { "at" } else { "early" },
    };
    let timed_out = ppd::select! {
        recv(never) -> _ => "never",
        default(Duration::from_millis(2)) => "timed out",
    };
    let (s, r) = ppd::channel::unbounded::<u8>();
    println!(
        "{fired}, {timed_out}, same {} {} {}",
        s.same_channel(&s.clone()),
        r.same_channel(&r.clone()),
        never.same_channel(&ppd::channel::never())
    );
}

#[ppd::eblock]
fn doubled(numbers: &mpsc::Receiver<u64>) -> u64 {
    let got = numbers.recv().expect("the feeder sends");
    let next = numbers.recv().expect("the feeder sends");
    got * 2 + next
}

#[ppd::eblock]
fn received_then_released(numbers: &mpsc::Receiver<u64>, done: &ppd::sync::Semaphore) -> u64 {
    let got = numbers.recv().expect("the feeder sends");
    done.release();
    got + 1
}

fn eblock_unbounded() {
    let (feed, numbers) = mpsc::channel::<u64>();
    let done = Arc::new(ppd::sync::Semaphore::new(0));
    let feeder = spawn("feeder", {
        let done = Arc::clone(&done);
        move || {
            for n in 1..=3 {
                feed.send(n * 10).expect("main receives");
                done.acquire();
            }
        }
    });
    let total: u64 = (0..3)
        .map(|_| received_then_released(&numbers, &done))
        .sum();
    feeder.join().expect("feeder");
    println!("released total {total}");
}

fn eblock() {
    let (feed, numbers) = mpsc::sync_channel::<u64>(1);
    let feeder = spawn("feeder", move || {
        for n in 1..=6 {
            feed.send(n * 10).expect("main receives");
        }
    });
    let total: u64 = (0..3).map(|_| doubled(&numbers)).sum();
    feeder.join().expect("feeder");
    println!("doubled total {total}");
}

fn last_receiver() {
    let flag = std::env::args().nth(2).expect("the path of a flag file");
    let first_waits = std::path::Path::new(&flag).exists();
    let (tx, shared_rx) = mpsc::sync_channel::<u64>(1);
    tx.send(1).expect("room for one");
    let shared = Arc::new(Mutex::new(shared_rx));
    let workers: Vec<_> = [("first", first_waits), ("second", !first_waits)]
        .into_iter()
        .map(|(name, waits)| {
            let clone = Arc::clone(&shared);
            spawn(name, move || {
                if waits {
                    std::thread::sleep(Duration::from_millis(300));
                }
                drop(clone);
            })
        })
        .collect();
    drop(shared);
    let second = tx.send(2);
    println!("second send disconnected: {}", second.is_err());
    for worker in workers {
        worker.join().expect("worker");
    }
}

#[ppd::main]
fn main() {
    match std::env::args().nth(1).as_deref() {
        Some("pipeline") => pipeline(),
        Some("rendezvous") => rendezvous(),
        Some("hang") => hang(),
        Some("work-queue") => work_queue(),
        Some("select") => select(),
        Some("timers") => timers(),
        Some("select-send") => select_send(),
        Some("eblock") => eblock(),
        Some("eblock-unbounded") => eblock_unbounded(),
        Some("last-receiver") => last_receiver(),
        other => {
            eprintln!("unknown case {other:?}");
            std::process::exit(2);
        }
    }
}
