//! Statics, one-time initialization and barriers under ppd, one scenario per argument:
//! `statics` (a static atomic, mutex, semaphore, `OnceLock` and `LazyLock` used by four
//! processes), `race` (four processes race to initialize a `OnceLock`; each prints who did),
//! `poison` (a panicking `call_once` poisons a `Once`; `call_once` then panics, and
//! `call_once_force` completes it), `barrier` (four processes through three generations of a
//! `Barrier`; each prints whether it led), `trivial` (`Barrier::new(0)` and `new(1)`),
//! `rereads` (processes look at a `OnceLock` again and again; `take` empties one),
//! `many-readers` (more processes than a cell keeps a bit for read a `OnceLock` set before
//! they start) and `stuck`
//! (two processes wait forever at a barrier for three; for the test that kills it).
//! Every scenario but `stuck` prints what it observed, so a replay can be compared with its
//! recording, and none has a data race or a deadlock.

use std::sync::Arc;

use ppd::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use ppd::sync::{Barrier, LazyLock, Mutex, Once, OnceLock, Semaphore};
use ppd::thread;

/// Processes in every scenario but `trivial`.
const WORKERS: usize = 4;

static HITS: AtomicUsize = AtomicUsize::new(0);
static TABLE: Mutex<Vec<usize>> = Mutex::new(Vec::new());
static SLOTS: Semaphore = Semaphore::new(2);
static CONFIG: OnceLock<String> = OnceLock::new();
static SQUARES: LazyLock<Vec<u64>> = LazyLock::new(|| (0..8).map(|i| i * i).collect());

/// Runs `body(i)` in `WORKERS` processes named `worker-i` and joins them in order.
fn workers<T: Send + 'static>(body: impl Fn(usize) -> T + Send + Sync + 'static) -> Vec<T> {
    let body = Arc::new(body);
    let handles: Vec<_> = (0..WORKERS)
        .map(|i| {
            let body = Arc::clone(&body);
            thread::Builder::new()
                .name(format!("worker-{i}"))
                .spawn(move || body(i))
                .expect("spawn")
        })
        .collect();
    handles
        .into_iter()
        .map(|h| h.join().expect("worker"))
        .collect()
}

/// Each process counts itself, appends to the table under a permit, reads the configuration
/// (whoever comes first sets it) and the lazily computed squares.
fn statics() {
    let seen = workers(|i| {
        HITS.fetch_add(1, Ordering::SeqCst);
        SLOTS.acquire();
        TABLE.lock().expect("not poisoned").push(i);
        SLOTS.release();
        let config = CONFIG.get_or_init(|| format!("config of worker-{i}"));
        (config.clone(), SQUARES[i + 1])
    });
    let mut table = TABLE.lock().expect("not poisoned").clone();
    table.sort_unstable();
    println!("hits {}", HITS.load(Ordering::SeqCst));
    println!("table {table:?}");
    for (i, (config, square)) in seen.iter().enumerate() {
        println!("worker-{i} read {config:?} and square {square}");
    }
}

/// Four processes race to initialize a `OnceLock` with their own name; the one that wins is a
/// logged choice, printed by everyone.
fn race() {
    static WINNER: OnceLock<String> = OnceLock::new();
    let seen = workers(|i| WINNER.get_or_init(|| format!("worker-{i}")).clone());
    for (i, winner) in seen.iter().enumerate() {
        println!("worker-{i} saw the cell initialized by {winner}");
    }
    println!(
        "initialized by {}",
        WINNER.get().expect("initialized by then")
    );
}

/// A panicking initializer poisons the `Once`; `call_once` then panics, as std's does, and
/// `call_once_force` sees the poison and completes it.
fn poison() {
    static INIT: Once = Once::new();
    let failed = thread::Builder::new()
        .name("failing".into())
        .spawn(|| INIT.call_once(|| panic!("the first initializer fails")))
        .expect("spawn")
        .join();
    println!("first initializer panicked: {}", failed.is_err());
    let again = std::panic::catch_unwind(|| INIT.call_once(|| println!("never runs")));
    println!(
        "call_once on the poisoned Once panicked: {}",
        again.is_err()
    );
    println!("completed before the forced call: {}", INIT.is_completed());
    INIT.call_once_force(|state| println!("forced call sees poison: {}", state.is_poisoned()));
    println!("completed after the forced call: {}", INIT.is_completed());
}

/// Four processes through three generations: before each wait a process writes its slot
/// (relaxed), after it reads every slot (relaxed); only the barrier orders the writes before
/// the reads, so the analysis finds a race if it does not.
fn barrier() {
    const GENERATIONS: u64 = 3;
    let barrier = Arc::new(Barrier::new(WORKERS));
    let slots: Arc<Vec<AtomicU64>> = Arc::new(
        (0..WORKERS)
            .map(|i| AtomicU64::named(["slot-0", "slot-1", "slot-2", "slot-3"][i], 0))
            .collect(),
    );
    let (b, s) = (Arc::clone(&barrier), Arc::clone(&slots));
    let led = workers(move |i| {
        let mut led = Vec::new();
        for generation in 1..=GENERATIONS {
            s[i].store(generation, Ordering::Relaxed);
            if b.wait().is_leader() {
                led.push(generation);
            }
            let seen: Vec<u64> = s.iter().map(|slot| slot.load(Ordering::Relaxed)).collect();
            assert!(seen.iter().all(|&g| g == generation), "{seen:?}");
            // Nobody writes the next generation's value before everyone has read this one.
            b.wait();
        }
        led
    });
    for (i, generations) in led.iter().enumerate() {
        println!("worker-{i} led generations {generations:?}");
    }
    let leaders: usize = led.iter().map(Vec::len).sum();
    println!("leaders {leaders}");
}

/// Barriers for nobody and for one process let every wait through as its leader.
fn trivial() {
    let none = Barrier::new(0);
    let one = Barrier::new(1);
    println!(
        "new(0) leads {} {}, new(1) leads {} {}",
        none.wait().is_leader(),
        none.wait().is_leader(),
        one.wait().is_leader(),
        one.wait().is_leader()
    );
}

/// Set by `main` while the workers of `rereads` look for it.
static GREETING: OnceLock<String> = OnceLock::new();

/// Looks at the greeting twice inside an e-block.
#[ppd::eblock]
fn greeting_twice() -> usize {
    GREETING.get().map_or(0, String::len) + GREETING.get().map_or(0, String::len)
}

/// Workers look at a cell until `main` sets it, then many times more, and twice inside an
/// e-block; each prints how many looks found it empty. Then `main` reads a cell of its own,
/// empties it with `take`, sets it again and reads it again.
fn rereads() {
    let handles: Vec<_> = (0..WORKERS)
        .map(|i| {
            thread::Builder::new()
                .name(format!("worker-{i}"))
                .spawn(move || {
                    let mut empty_looks = 0;
                    while GREETING.get().is_none() {
                        empty_looks += 1;
                        thread::yield_now();
                    }
                    let total: usize = (0..100)
                        .map(|_| GREETING.get().map_or(0, String::len))
                        .sum();
                    println!(
                        "worker-{i} found it empty {empty_looks} times, then read {total} bytes \
                         and {} in an e-block",
                        greeting_twice()
                    );
                })
                .expect("spawn")
        })
        .collect();
    GREETING.set("hello".to_owned()).expect("set once");
    for h in handles {
        h.join().expect("worker");
    }
    let mut cell = OnceLock::new();
    cell.set(1u64).expect("empty");
    let first: u64 = (0..50).filter_map(|_| cell.get()).sum();
    let taken = cell.take();
    cell.set(2).expect("empty again");
    let second: u64 = (0..50).filter_map(|_| cell.get()).sum();
    println!("took {taken:?}; read {first} before and {second} after");
}

/// Processes that read a cell: more than the 64 a cell records, by a bit each, as having seen
/// it set.
const MANY_READERS: usize = 70;

/// `main` sets a cell, then `MANY_READERS` processes read it ten times each.
fn many_readers() {
    static SHARED: OnceLock<u64> = OnceLock::new();
    SHARED.set(3).expect("set once");
    let handles: Vec<_> = (0..MANY_READERS)
        .map(|i| {
            thread::Builder::new()
                .name(format!("reader-{i}"))
                .spawn(|| (0..10).filter_map(|_| SHARED.get()).sum::<u64>())
                .expect("spawn")
        })
        .collect();
    let total: u64 = handles.into_iter().map(|h| h.join().expect("reader")).sum();
    println!("read {total}");
}

/// Two processes wait at a barrier for three, forever.
fn stuck() {
    static MEETING: Barrier = Barrier::new(3);
    let waiting: Vec<_> = (0..2)
        .map(|i| {
            thread::Builder::new()
                .name(format!("waiter-{i}"))
                .spawn(|| {
                    MEETING.wait();
                })
                .expect("spawn")
        })
        .collect();
    for w in waiting {
        w.join().expect("waiter");
    }
}

#[ppd::main]
fn main() -> std::process::ExitCode {
    match std::env::args().nth(1).as_deref() {
        Some("statics") => statics(),
        Some("race") => race(),
        Some("poison") => poison(),
        Some("barrier") => barrier(),
        Some("trivial") => trivial(),
        Some("rereads") => rereads(),
        Some("many-readers") => many_readers(),
        Some("stuck") => stuck(),
        other => {
            eprintln!(
                "usage: once_barrier statics|race|poison|barrier|trivial|rereads|stuck (got {other:?})"
            );
            return std::process::ExitCode::from(2);
        }
    }
    std::process::ExitCode::SUCCESS
}
