//! Programs that use ppd's locks as std programs use std's, chosen by the first argument.
//!
//! * `try`: `main` holds mutex `gate` while `prober` tries it (`WouldBlock`), then lets it go
//!   and `prober` tries again (acquired); then both contend for `gate`, `main` with `lock`
//!   until `prober` has seen 20 tries fail and 20 succeed, so how many tries fail, and how
//!   often `main` locked, is the run's choice; last, `main` locks `gate` then mutex `other`,
//!   and `nester` locks `other` then tries `gate` (no potential deadlock: a try never waits);
//! * `poison`: `victim` panics holding mutex `ledger`; `main` sees it poisoned (`is_poisoned`,
//!   `lock` and `try_lock` both hand the guard over in the error), clears it, and goes on;
//! * `jobs`: a queue of boxed closures (not serde) in a mutex, taken by two workers in an
//!   e-block, `take_job`, as a thread pool does; the workers hold the queue through `Arc`s
//!   and `main` keeps only a `Weak` to it.

use std::sync::TryLockError;

use ppd::sync::mpsc::named_channel;
use ppd::sync::{Arc, Mutex, Weak};

fn try_lock_answers() {
    let gate = Arc::new(Mutex::named("gate", 0u64));
    let (held_tx, held) = named_channel::<()>("held");
    let (tried_tx, tried) = named_channel::<()>("tried");
    let (free_tx, free) = named_channel::<()>("free");
    let (stop_tx, stop) = named_channel::<()>("stop");
    let prober = ppd::thread::Builder::new()
        .name("prober".into())
        .spawn({
            let gate = Arc::clone(&gate);
            move || {
                held.recv().expect("main holds the gate");
                let busy = matches!(gate.try_lock(), Err(TryLockError::WouldBlock));
                println!("while held: would block = {busy}");
                tried_tx.send(()).expect("main waits");
                free.recv().expect("main let the gate go");
                match gate.try_lock() {
                    Ok(mut g) => *g += 1,
                    Err(e) => panic!("the gate is free, yet try_lock said {e}"),
                }
                tried_tx.send(()).expect("main waits");
                // Contention: `main` locks `gate` until told to stop, so some tries fail and
                // some succeed, as the run decides.
                let (mut failed, mut got) = (0u32, 0u32);
                while failed < 20 || got < 20 {
                    match gate.try_lock() {
                        Ok(mut g) => {
                            *g += 1;
                            got += 1;
                        }
                        Err(TryLockError::WouldBlock) => failed += 1,
                        Err(TryLockError::Poisoned(_)) => panic!("nobody panicked"),
                    }
                    ppd::thread::yield_now();
                }
                stop_tx.send(()).expect("main waits");
                (failed, got)
            }
        })
        .expect("spawn prober");
    {
        let _held = gate.lock().expect("not poisoned");
        held_tx.send(()).expect("prober waits");
        tried.recv().expect("prober tried");
    }
    free_tx.send(()).expect("prober waits");
    tried.recv().expect("prober tried again");
    let mut rounds = 0u32;
    while stop.try_recv().is_err() {
        let mut g = gate.lock().expect("not poisoned");
        *g += 1;
        rounds += 1;
        // Hold the lock a while, so that the prober finds it held, and leave it as long.
        spin(&mut g);
        drop(g);
        spin(&mut rounds);
    }
    let (failed, got) = prober.join().expect("prober");
    println!(
        "gate = {}, main rounds = {rounds}, tries failed = {failed}, succeeded = {got}",
        *gate.lock().expect("not poisoned")
    );

    // `gate` then `other` here, `other` then `gate` in `nester`, but by `try_lock`, which never
    // waits: no potential deadlock.
    let other = Arc::new(Mutex::named("other", 0u64));
    {
        let _gate = gate.lock().expect("not poisoned");
        *other.lock().expect("not poisoned") += 1;
    }
    let nester = ppd::thread::Builder::new()
        .name("nester".into())
        .spawn(move || {
            let _other = other.lock().expect("not poisoned");
            gate.try_lock().is_ok()
        })
        .expect("spawn nester");
    println!("nested try = {}", nester.join().expect("nester"));
}

/// Keeps the processor busy for a while.
fn spin<T>(value: &mut T) {
    for _ in 0..2000 {
        std::hint::black_box(&mut *value);
    }
}

fn poison() {
    let ledger = Arc::new(Mutex::named("ledger", vec![1u32]));
    let victim = ppd::thread::Builder::new()
        .name("victim".into())
        .spawn({
            let ledger = Arc::clone(&ledger);
            move || {
                let mut entries = ledger.lock().expect("not poisoned yet");
                entries.push(2);
                panic!("the victim panics holding the ledger");
            }
        })
        .expect("spawn victim");
    assert!(victim.join().is_err(), "the victim panicked");
    println!("poisoned = {}", ledger.is_poisoned());
    let seen = match ledger.lock() {
        Ok(_) => panic!("lock succeeded on a poisoned mutex"),
        Err(p) => p.into_inner().len(),
    };
    let tried = matches!(ledger.try_lock(), Err(TryLockError::Poisoned(_)));
    ledger.clear_poison();
    println!(
        "entries = {seen}, try_lock poisoned = {tried}, after clear_poison = {}",
        ledger.is_poisoned()
    );
    ledger.lock().expect("poison cleared").push(3);
}

/// A job, as a thread pool holds it: a boxed closure, which serde cannot log.
type Job = Box<dyn FnOnce() -> u64 + Send>;

#[allow(clippy::let_and_return)]
#[ppd::eblock]
fn take_job(queue: &Mutex<Vec<Job>>) -> u64 {
    let job = queue.lock().expect("not poisoned").pop();
    let answer = match job {
        Some(job) => job(),
        None => 0,
    };
    answer
}

fn jobs() {
    let queue: Arc<Mutex<Vec<Job>>> = Arc::new(Mutex::named("queue", Vec::new()));
    for n in 1..=6u64 {
        queue
            .lock()
            .expect("not poisoned")
            .push(Box::new(move || n * n));
    }
    let weak: Weak<Mutex<Vec<Job>>> = Arc::downgrade(&queue);
    let workers: Vec<_> = (1..=2)
        .map(|w| {
            let queue = Arc::clone(&queue);
            ppd::thread::Builder::new()
                .name(format!("worker-{w}"))
                .spawn(move || (0..3).map(|_| take_job(&queue)).sum::<u64>())
                .expect("spawn worker")
        })
        .collect();
    drop(queue);
    let total: u64 = workers.into_iter().map(|w| w.join().expect("worker")).sum();
    println!("total = {total}, queue gone = {}", weak.upgrade().is_none());
}

#[ppd::main]
fn main() {
    match std::env::args().nth(1).as_deref() {
        Some("try") => try_lock_answers(),
        Some("poison") => poison(),
        Some("jobs") => jobs(),
        other => {
            eprintln!("locks: unknown case {other:?} (try, poison, jobs)");
            std::process::exit(2);
        }
    }
}
