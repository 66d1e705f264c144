//! `pipeline`: `producer` → `filter` → `consumer`, connected by channels in one direction only.
//!
//! An acyclic topology is the case Chandy–Lamport style halting cannot handle on its own: a
//! halt marker sent downstream never reaches the producer. ppd's global debugger has a control
//! channel to every process (Miller & Choi §2.2.3), so
//! `ppd replay --stop 'consumer: mark sum'` halts all three consistently.

use ppd::sync::mpsc::{Receiver, Sender, named_channel};

const ITEMS: u64 = 200;

fn producer(out: Sender<u64>) {
    for _ in 0..ITEMS {
        out.send(ppd::rand::u64(0..1000)).expect("filter");
    }
}

fn filter(input: Receiver<u64>, out: Sender<u64>) {
    for value in input.iter() {
        if value % 3 != 0 {
            out.send(value * 2).expect("consumer");
        }
    }
}

fn consumer(input: Receiver<u64>) -> u64 {
    let mut sum = 0;
    for (n, value) in input.iter().enumerate() {
        sum += value;
        if n % 25 == 0 {
            ppd::mark!("sum", sum);
        }
    }
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
