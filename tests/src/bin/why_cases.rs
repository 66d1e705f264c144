//! Small programs with e-blocks whose why-answers the tests pin, chosen by the first argument.
//! Each is deterministic: every channel has one sender, nothing reads a clock or randomness.
//!
//! * `chain`: `source` → `doubler` → `sink`, a value crossing three processes;
//! * `long N`: the same with N values (for benchmarks);
//! * `nested`: an e-block calling another (a sub-graph node), with a loop and branches;
//! * `loops`: a `while` loop whose counter depends on every earlier iteration;
//! * `early`: an e-block that returns early from a guard clause;
//! * `shared`: two processes add to a counter under a `ppd` mutex, in e-blocks: the value each
//!   finds under the lock is logged with the acquisition (Miller & Choi's extra prelog of a
//!   synchronization unit, §5.5), so re-execution reproduces it whatever the interleaving;
//! * `leaky`: an e-block reading state ppd does not log (a `std` atomic), which re-execution
//!   cannot reproduce: a nondeterminism leak.

use ppd::sync::mpsc::{Receiver, Sender, named_channel};
use serde::{Deserialize, Serialize};

#[ppd::eblock]
fn produce(seed: i64, out: &Sender<i64>) {
    let reading = seed * 10 + 3;
    out.send(reading).expect("doubler");
}

#[ppd::eblock]
fn double(input: &Receiver<i64>, out: &Sender<i64>) -> bool {
    let Ok(value) = input.recv() else {
        return false;
    };
    let doubled = value * 2;
    out.send(doubled).expect("sink");
    true
}

#[ppd::eblock]
fn absorb(input: &Receiver<i64>, total: &mut i64) -> bool {
    let Ok(value) = input.recv() else {
        return false;
    };
    *total += value;
    true
}

fn chain(values: i64) {
    let (to_doubler, doubler_in) = named_channel("readings");
    let (to_sink, sink_in) = named_channel("doubled");
    let source = ppd::thread::Builder::new()
        .name("source".into())
        .spawn(move || {
            for seed in 1..=values {
                produce(seed, &to_doubler);
            }
        })
        .expect("spawn");
    let doubler = ppd::thread::Builder::new()
        .name("doubler".into())
        .spawn(move || while double(&doubler_in, &to_sink) {})
        .expect("spawn");
    let sink = ppd::thread::Builder::new()
        .name("sink".into())
        .spawn(move || {
            let mut total = 0;
            while absorb(&sink_in, &mut total) {}
            total
        })
        .expect("spawn");
    source.join().expect("source");
    doubler.join().expect("doubler");
    println!("total = {}", sink.join().expect("sink"));
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct Report {
    top: i64,
    total: i64,
}

#[ppd::eblock]
fn best_of(values: &[i64]) -> i64 {
    let mut best = 0;
    for v in values {
        if *v > best {
            best = *v;
        }
    }
    best
}

#[ppd::eblock]
fn summarize(values: Vec<i64>, report: &mut Report) -> i64 {
    let top = best_of(&values);
    report.top = top;
    let bonus = if top > 5 { top * 2 } else { 0 };
    report.total = top + bonus;
    report.total
}

fn nested() {
    let mut report = Report::default();
    let total = summarize(vec![4, 9, 2, 7], &mut report);
    println!("total = {total}, top = {}", report.top);
}

#[ppd::eblock]
fn collatz_steps(start: u64) -> u64 {
    let mut steps = 0;
    let mut left = start;
    while left > 1 {
        if left.is_multiple_of(2) {
            left /= 2;
        } else {
            left = 3 * left + 1;
        }
        steps += 1;
    }
    steps
}

fn loops() {
    println!("steps = {}", collatz_steps(6));
}

#[ppd::eblock]
fn classify(x: i64) -> String {
    if x < 0 {
        return "negative".into();
    }
    let kind = if x % 2 == 0 { "even" } else { "odd" };
    kind.to_string()
}

fn early() {
    for x in [4, -3, 7] {
        println!("{x}: {}", classify(x));
    }
}

// `now` is the variable the tests ask about.
#[allow(clippy::let_and_return)]
#[ppd::eblock]
fn bump(counter: &ppd::sync::Mutex<i64>, by: i64) -> i64 {
    let mut guard = counter.lock().expect("not poisoned");
    *guard += by;
    let now = *guard;
    now
}

fn shared() {
    let counter = std::sync::Arc::new(ppd::sync::Mutex::new(0i64));
    let workers: Vec<_> = (1..=2)
        .map(|w| {
            let counter = std::sync::Arc::clone(&counter);
            ppd::thread::Builder::new()
                .name(format!("worker-{w}"))
                .spawn(move || {
                    for _ in 0..3 {
                        bump(&counter, w);
                    }
                })
                .expect("spawn")
        })
        .collect();
    for w in workers {
        w.join().expect("worker");
    }
    println!("counter = {}", *counter.lock().expect("not poisoned"));
}

/// Not a `ppd` atomic: its accesses are not logged.
static CALLS: std::sync::atomic::AtomicI64 = std::sync::atomic::AtomicI64::new(0);

#[ppd::eblock]
fn count_call(base: i64) -> i64 {
    let seen = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    base + seen
}

fn leaky() {
    println!("{} {}", count_call(10), count_call(10));
}

#[ppd::main]
fn main() {
    match std::env::args().nth(1).as_deref() {
        Some("chain") => chain(3),
        Some("long") => chain(
            std::env::args()
                .nth(2)
                .and_then(|n| n.parse().ok())
                .unwrap_or(1000),
        ),
        Some("nested") => nested(),
        Some("loops") => loops(),
        Some("early") => early(),
        Some("shared") => shared(),
        Some("leaky") => leaky(),
        other => {
            eprintln!(
                "why_cases: unknown case {other:?} (chain, long N, nested, loops, early, shared, leaky)"
            );
            std::process::exit(2);
        }
    }
}
