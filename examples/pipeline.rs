//! `pipeline`: `producer` → `filter` → `consumer`, connected by channels in one direction only.
//!
//! An acyclic topology is the case Chandy–Lamport style halting cannot handle on its own: a
//! halt marker sent downstream never reaches the producer. ppd's global debugger has a control
//! channel to every process (Miller & Choi §2.2.3), so
//! `ppd replay --stop 'consumer: mark sum'` halts all three consistently.
//!
//! Each step is an e-block, so `ppd why consumer sum` follows a value from the producer's
//! random reading through the filter to the sum.

use ppd::sync::mpsc::{Receiver, Sender, named_channel};

const ITEMS: u64 = 200;

/// Sends one reading on.
#[ppd::eblock]
fn produce(out: &Sender<u64>) {
    let reading = ppd::rand::u64(0..1000);
    out.send(reading).expect("filter");
}

fn producer(out: Sender<u64>) {
    for _ in 0..ITEMS {
        produce(&out);
    }
}

/// Passes one value on, doubled, unless it is a multiple of three; false when the input is
/// closed.
#[ppd::eblock]
fn pass(input: &Receiver<u64>, out: &Sender<u64>) -> bool {
    let Ok(value) = input.recv() else {
        return false;
    };
    if value % 3 != 0 {
        out.send(value * 2).expect("consumer");
    }
    true
}

fn filter(input: Receiver<u64>, out: Sender<u64>) {
    while pass(&input, &out) {}
}

/// Adds one value to the sum, marking it now and then; false when the input is closed.
#[ppd::eblock]
fn add(input: &Receiver<u64>, sum: &mut u64, count: &mut u64) -> bool {
    let Ok(value) = input.recv() else {
        return false;
    };
    *sum += value;
    if count.is_multiple_of(25) {
        ppd::mark!("sum", *sum);
    }
    *count += 1;
    true
}

fn consumer(input: Receiver<u64>) -> u64 {
    let mut sum = 0;
    let mut count = 0;
    while add(&input, &mut sum, &mut count) {}
    sum
}

#[ppd::main]
fn main() {
    let (to_filter, filter_in) = named_channel("raw");
    let (to_consumer, consumer_in) = named_channel("filtered");
    let p = ppd::thread::Builder::new()
        .name("producer".into())
        .spawn(move || producer(to_filter))
        .expect("spawn");
    let f = ppd::thread::Builder::new()
        .name("filter".into())
        .spawn(move || filter(filter_in, to_consumer))
        .expect("spawn");
    let c = ppd::thread::Builder::new()
        .name("consumer".into())
        .spawn(move || consumer(consumer_in))
        .expect("spawn");
    p.join().expect("producer");
    f.join().expect("filter");
    println!("sum = {}", c.join().expect("consumer"));
}
