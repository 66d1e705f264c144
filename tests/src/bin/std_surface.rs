//! std's surface under ppd, one scenario per argument: `scope` (scoped threads, joined
//! explicitly and by the end of the scope), `park` (an unpark wakes a parked thread, a
//! `park_timeout` times out), `answers` (`is_finished` polled, `available_parallelism`), `ptr`
//! (a value published through an `AtomicPtr`), `hash` (the iteration order of ppd's `HashMap`
//! and `HashSet`, values of `ppd::rand::Rng` through `rand_core`).
//! Every scenario prints what it observed, so a replay can be compared with its recording; none
//! has a data race or a deadlock.

use std::sync::Arc;

use ppd::sync::atomic::{AtomicPtr, AtomicU64, Ordering};
use ppd::thread;

/// Scoped threads store to relaxed atomics; `main` loads them after the scope. Only the joins
/// (one explicit, the others at the end of the scope) order the loads after the stores.
fn scope() {
    let explicit = AtomicU64::named("explicit", 0);
    let implicit = [
        AtomicU64::named("implicit-0", 0),
        AtomicU64::named("implicit-1", 0),
    ];
    let mut borrowed = vec![0u64; 3];
    let (first, rest) = borrowed.split_at_mut(1);
    let ids = thread::scope(|s| {
        let joined = s.spawn(|| {
            explicit.store(1, Ordering::Relaxed);
            first[0] = 10;
            thread::current().id()
        });
        for (i, slot) in rest.iter_mut().enumerate() {
            let implicit = &implicit[i];
            thread::Builder::new()
                .name(format!("scoped-{i}"))
                .spawn_scoped(s, move || {
                    implicit.store(1, Ordering::Relaxed);
                    *slot = 20 + i as u64;
                })
                .expect("spawn");
        }
        let joined_id = joined.thread().id();
        assert_eq!(joined.join().expect("no panic"), joined_id);
        joined_id
    });
    println!(
        "explicit {} implicit {} {} borrowed {borrowed:?} id {ids:?} main {:?}",
        explicit.load(Ordering::Relaxed),
        implicit[0].load(Ordering::Relaxed),
        implicit[1].load(Ordering::Relaxed),
        thread::current().id()
    );
}

/// `main` writes a relaxed value and unparks the worker, which parks and then reads it: the
/// unpark → park edge is the only order between the two.
fn park() {
    let data = Arc::new(AtomicU64::named("data", 0));
    let worker = {
        let data = Arc::clone(&data);
        thread::Builder::new()
            .name("parker".into())
            .spawn(move || {
                thread::park();
                data.load(Ordering::Relaxed)
            })
            .expect("spawn")
    };
    // Nobody unparks this one: its park ends by the timeout.
    let timer = thread::Builder::new()
        .name("timer".into())
        .spawn(|| thread::park_timeout(std::time::Duration::from_millis(1)))
        .expect("spawn");
    data.store(42, Ordering::Relaxed);
    worker.thread().unpark();
    timer.join().expect("no panic");
    println!("parked worker read {}", worker.join().expect("no panic"));
}

/// Answers that depend on timing and on the machine.
fn answers() {
    let worker = thread::spawn(|| thread::sleep(std::time::Duration::from_millis(5)));
    let mut polls = 0u64;
    while !worker.is_finished() {
        polls += 1;
        thread::yield_now();
    }
    worker.join().expect("no panic");
    let cpus = thread::available_parallelism().map_or(0, |n| n.get());
    println!("is_finished after {polls} polls; {cpus} cpus");
}

/// `main` writes a relaxed value and publishes a box through an `AtomicPtr` with a release
/// store; the worker takes it with acquiring swaps and then reads the value: the pointer's
/// release/acquire pair is the only order between the two.
fn ptr() {
    let slot = Arc::new(AtomicPtr::<u64>::named("slot", std::ptr::null_mut()));
    let data = Arc::new(AtomicU64::named("data", 0));
    let taker = {
        let (slot, data) = (Arc::clone(&slot), Arc::clone(&data));
        thread::Builder::new()
            .name("taker".into())
            .spawn(move || {
                loop {
                    let p = slot.swap(std::ptr::null_mut(), Ordering::Acquire);
                    if !p.is_null() {
                        // SAFETY: main published a leaked box; only this swap took it.
                        let boxed = unsafe { Box::from_raw(p) };
                        return *boxed + data.load(Ordering::Relaxed);
                    }
                    thread::yield_now();
                }
            })
            .expect("spawn")
    };
    data.store(1, Ordering::Relaxed);
    slot.store(Box::into_raw(Box::new(41)), Ordering::Release);
    println!("taker got {}", taker.join().expect("no panic"));
}

/// Iteration orders depend on the hasher's keys, which come from the log; so do the draws of
/// a `rand_core` generator.
fn hash() {
    use rand_core::Rng as _;
    let map: ppd::collections::HashMap<u32, u32> = (0..20).map(|k| (k, k * k)).collect();
    let keys: Vec<u32> = map.keys().copied().collect();
    let set = thread::spawn(|| {
        let mut set = ppd::collections::HashSet::new();
        set.extend(0..20u32);
        set.into_iter().collect::<Vec<_>>()
    })
    .join()
    .expect("no panic");
    let mut rng = ppd::rand::Rng::new();
    let mut bytes = [0u8; 4];
    rng.fill_bytes(&mut bytes);
    println!("map {keys:?}");
    println!("set {set:?}");
    println!("rng {} {bytes:?}", rng.next_u64());
}

#[ppd::main]
fn main() {
    match std::env::args().nth(1).as_deref() {
        Some("scope") => scope(),
        Some("park") => park(),
        Some("answers") => answers(),
        Some("ptr") => ptr(),
        Some("hash") => hash(),
        other => {
            eprintln!("usage: std_surface scope|park|answers|ptr|hash (got {other:?})");
            std::process::exit(2);
        }
    }
}
