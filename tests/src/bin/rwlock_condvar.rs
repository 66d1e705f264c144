//! Programs that use ppd's `RwLock` as std programs use std's, chosen by the first argument.
//!
//! * `readers`: three `reader`s read a `RwLock`ed config (`config`) while `writer` bumps its
//!   version twenty times; each reader prints the sum of the versions it saw, which the run
//!   decides;
//! * `try`: `prober` tries to read while `main` writes (would block) and to write while `main`
//!   reads (would block), then tries both against `main`'s contending writes until it has seen
//!   twenty of each answer, printing how many tries of each kind failed;
//! * `poison`: `victim` panics holding the write lock of `ledger`; `main` sees it poisoned and
//!   clears it, as with std;
//! * `queue`: a producer/consumer queue on a `Mutex` and a `Condvar`: `producer` pushes forty
//!   jobs, notifying one consumer each, then closes the queue and notifies all; two `consumer`s
//!   take jobs in `wait_while` and print how many each took, which the run decides;
//! * `gate`: three `waiter`s wait on a closed gate, `main` opens it with one `notify_all`;
//! * `timeout`: a `wait_timeout` nobody notifies times out; a `wait_timeout_while` whose
//!   condition `opener` clears returns before its (long) timeout;
//! * `two-mutexes`: one condvar waited on with two mutexes panics, as std's does.

use std::sync::TryLockError;

use ppd::sync::mpsc::named_channel;
use std::collections::VecDeque;
use std::time::Duration;

use ppd::sync::{Arc, Condvar, Mutex, RwLock};

/// The shared configuration: a version and a name, read far more often than written.
#[derive(Debug, Clone)]
struct Config {
    version: u64,
    name: String,
}

fn readers() {
    let config = Arc::new(RwLock::named(
        "config",
        Config {
            version: 0,
            name: "start".into(),
        },
    ));
    let writer = ppd::thread::Builder::new()
        .name("writer".into())
        .spawn({
            let config = Arc::clone(&config);
            move || {
                for _ in 0..20 {
                    let mut c = config.write().expect("not poisoned");
                    c.version += 1;
                    c.name = format!("v{}", c.version);
                    drop(c);
                    ppd::thread::yield_now();
                }
            }
        })
        .expect("spawn writer");
    let readers: Vec<_> = (0..3)
        .map(|r| {
            let config = Arc::clone(&config);
            ppd::thread::Builder::new()
                .name(format!("reader{r}"))
                .spawn(move || {
                    let mut seen = 0;
                    for _ in 0..50 {
                        let c = config.read().expect("not poisoned");
                        assert_eq!(
                            c.name,
                            if c.version == 0 {
                                "start".to_owned()
                            } else {
                                format!("v{}", c.version)
                            }
                        );
                        seen += c.version;
                        drop(c);
                        ppd::thread::yield_now();
                    }
                    seen
                })
                .expect("spawn reader")
        })
        .collect();
    writer.join().expect("writer");
    for (r, reader) in readers.into_iter().enumerate() {
        println!("reader{r} saw {}", reader.join().expect("reader"));
    }
    println!(
        "final version = {}",
        config.read().expect("not poisoned").version
    );
}

fn try_answers() {
    let lock = Arc::new(RwLock::named("gate", 0u64));
    let (held_tx, held) = named_channel::<()>("held");
    let (tried_tx, tried) = named_channel::<()>("tried");
    let (stop_tx, stop) = named_channel::<()>("stop");
    let prober = ppd::thread::Builder::new()
        .name("prober".into())
        .spawn({
            let lock = Arc::clone(&lock);
            move || {
                held.recv().expect("main writes");
                let read_blocked = matches!(lock.try_read(), Err(TryLockError::WouldBlock));
                println!("read while written: would block = {read_blocked}");
                tried_tx.send(()).expect("main waits");
                held.recv().expect("main reads");
                let write_blocked = matches!(lock.try_write(), Err(TryLockError::WouldBlock));
                let reads_together = lock.try_read().is_ok();
                println!(
                    "write while read: would block = {write_blocked}, read alongside = {reads_together}"
                );
                tried_tx.send(()).expect("main waits");
                let (mut read_failed, mut write_failed, mut got) = (0u32, 0u32, 0u32);
                while read_failed < 20 || write_failed < 20 || got < 20 {
                    match lock.try_write() {
                        Ok(mut g) => {
                            *g += 1;
                            got += 1;
                        }
                        Err(TryLockError::WouldBlock) => write_failed += 1,
                        Err(TryLockError::Poisoned(_)) => panic!("nobody panicked"),
                    }
                    match lock.try_read() {
                        Ok(_) => {}
                        Err(TryLockError::WouldBlock) => read_failed += 1,
                        Err(TryLockError::Poisoned(_)) => panic!("nobody panicked"),
                    }
                    ppd::thread::yield_now();
                }
                stop_tx.send(()).expect("main waits");
                (read_failed, write_failed, got)
            }
        })
        .expect("spawn prober");
    {
        let _w = lock.write().expect("not poisoned");
        held_tx.send(()).expect("prober waits");
        tried.recv().expect("prober tried");
    }
    {
        let _r = lock.read().expect("not poisoned");
        held_tx.send(()).expect("prober waits");
        tried.recv().expect("prober tried");
    }
    let mut writes = 0u64;
    while stop.try_recv().is_err() {
        let mut w = lock.write().expect("not poisoned");
        *w += 1;
        writes += 1;
        ppd::thread::yield_now();
        drop(w);
        ppd::thread::yield_now();
    }
    let (read_failed, write_failed, got) = prober.join().expect("prober");
    println!("reads failed = {read_failed}, writes failed = {write_failed}, succeeded = {got}");
    let total = *lock.read().expect("not poisoned");
    println!("consistent = {}", total == writes + u64::from(got));
}

fn poison() {
    let ledger = Arc::new(RwLock::named("ledger", vec![1u64]));
    let victim = ppd::thread::Builder::new()
        .name("victim".into())
        .spawn({
            let ledger = Arc::clone(&ledger);
            move || {
                let mut w = ledger.write().expect("not poisoned yet");
                w.push(2);
                panic!("victim fails while writing");
            }
        })
        .expect("spawn victim");
    assert!(victim.join().is_err());
    let poisoned = ledger.is_poisoned();
    let seen = match ledger.read() {
        Ok(_) => panic!("a write panic poisons, as std's"),
        Err(p) => p.into_inner().len(),
    };
    ledger.clear_poison();
    println!(
        "poisoned = {poisoned}, entries = {seen}, cleared = {}",
        !ledger.is_poisoned()
    );
}

/// Jobs waiting, and whether the producer is done.
struct Queue {
    jobs: VecDeque<u64>,
    closed: bool,
}

fn queue() {
    let shared = Arc::new((
        Mutex::named(
            "jobs",
            Queue {
                jobs: VecDeque::new(),
                closed: false,
            },
        ),
        Condvar::new(),
    ));
    let consumers: Vec<_> = (0..2)
        .map(|c| {
            let shared = Arc::clone(&shared);
            ppd::thread::Builder::new()
                .name(format!("consumer{c}"))
                .spawn(move || {
                    let (queue, ready) = &*shared;
                    let (mut taken, mut sum) = (0u64, 0u64);
                    loop {
                        let mut q = ready
                            .wait_while(queue.lock().expect("jobs"), |q| {
                                q.jobs.is_empty() && !q.closed
                            })
                            .expect("jobs");
                        let Some(job) = q.jobs.pop_front() else {
                            return (taken, sum);
                        };
                        drop(q);
                        taken += 1;
                        sum += job;
                    }
                })
                .expect("spawn consumer")
        })
        .collect();
    let producer = ppd::thread::Builder::new()
        .name("producer".into())
        .spawn({
            let shared = Arc::clone(&shared);
            move || {
                let (queue, ready) = &*shared;
                for job in 1..=40 {
                    queue.lock().expect("jobs").jobs.push_back(job);
                    ready.notify_one();
                }
                queue.lock().expect("jobs").closed = true;
                ready.notify_all();
            }
        })
        .expect("spawn producer");
    producer.join().expect("producer");
    let mut total = 0;
    for (c, consumer) in consumers.into_iter().enumerate() {
        let (taken, sum) = consumer.join().expect("consumer");
        println!("consumer{c} took {taken}");
        total += sum;
    }
    println!("sum {total}");
}

fn gate() {
    let gate = Arc::new((Mutex::named("gate", (false, 0u32)), Condvar::new()));
    let waiters: Vec<_> = (0..3)
        .map(|w| {
            let gate = Arc::clone(&gate);
            ppd::thread::Builder::new()
                .name(format!("waiter{w}"))
                .spawn(move || {
                    let (lock, opened) = &*gate;
                    let mut state = lock.lock().expect("gate");
                    state.1 += 1;
                    opened.notify_all();
                    while !state.0 {
                        state = opened.wait(state).expect("gate");
                    }
                })
                .expect("spawn waiter")
        })
        .collect();
    let (lock, opened) = &*gate;
    // Open only when all three are inside, so the one notify_all is what wakes them.
    let mut state = opened
        .wait_while(lock.lock().expect("gate"), |s| s.1 < 3)
        .expect("gate");
    state.0 = true;
    opened.notify_all();
    drop(state);
    for waiter in waiters {
        waiter.join().expect("waiter");
    }
    println!("gate opened for 3");
}

fn timeout() {
    let pair = Arc::new((Mutex::named("flag", true), Condvar::new()));
    let (lock, cvar) = &*pair;
    let (guard, alone) = cvar
        .wait_timeout(lock.lock().expect("flag"), Duration::from_millis(20))
        .expect("flag");
    println!("alone: timed out {}", alone.timed_out());
    drop(guard);
    let opener = ppd::thread::Builder::new()
        .name("opener".into())
        .spawn({
            let pair = Arc::clone(&pair);
            move || {
                *pair.0.lock().expect("flag") = false;
                pair.1.notify_one();
            }
        })
        .expect("spawn opener");
    let (guard, helped) = cvar
        .wait_timeout_while(lock.lock().expect("flag"), Duration::from_secs(60), |f| *f)
        .expect("flag");
    println!("helped: timed out {}, flag {}", helped.timed_out(), *guard);
    drop(guard);
    opener.join().expect("opener");
}

fn two_mutexes() {
    let cvar = Arc::new(Condvar::new());
    let (a, b) = (Mutex::new(()), Mutex::new(()));
    let waker = ppd::thread::spawn({
        let cvar = Arc::clone(&cvar);
        move || {
            for _ in 0..1000 {
                cvar.notify_all();
                ppd::thread::sleep(Duration::from_millis(1));
            }
        }
    });
    let guard = cvar.wait(a.lock().expect("a")).expect("a");
    drop(guard);
    let _never = cvar.wait(b.lock().expect("b"));
    drop(waker);
}

#[ppd::main]
fn main() {
    match std::env::args().nth(1).as_deref() {
        Some("readers") => readers(),
        Some("try") => try_answers(),
        Some("poison") => poison(),
        Some("queue") => queue(),
        Some("gate") => gate(),
        Some("timeout") => timeout(),
        Some("two-mutexes") => two_mutexes(),
        other => {
            eprintln!(
                "rwlock_condvar: unknown case {other:?} \
                 (readers, try, poison, queue, gate, timeout, two-mutexes)"
            );
            std::process::exit(2);
        }
    }
}
