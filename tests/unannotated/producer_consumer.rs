//! A producer/consumer written against ppd with no annotation but `#[ppd::main]`: what a user
//! ports by `use` lines. `ppd build` makes its functions e-blocks, so `ppd why consumer last`
//! and `ppd why consumer doubled` reach the producer's send.

use ppd::sync::mpsc::{Receiver, Sender, channel};
use ppd::thread;

fn produce(id: u64, count: u64, out: Sender<u64>) {
    for i in 0..count {
        let item = id * 100 + i;
        out.send(item).unwrap();
    }
}

fn process(item: u64) -> u64 {
    let doubled = item * 2;
    if doubled % 7 == 0 {
        return doubled + 1;
    }
    doubled
}

#[ppd::not_traced]
fn checksum(values: &[u64]) -> u64 {
    let mut sum = 0;
    for value in values {
        sum ^= value;
    }
    sum
}

fn consume(input: Receiver<u64>) -> u64 {
    let mut total = 0;
    let mut last = 0;
    let mut seen = Vec::new();
    for item in input {
        let doubled = process(item);
        total += doubled;
        last = item;
        seen.push(item);
    }
    println!("last {last}, checksum {}", checksum(&seen));
    total
}

#[ppd::main]
fn main() {
    let (tx, rx) = channel();
    let mut producers = Vec::new();
    for id in 1..=2 {
        let out = tx.clone();
        let name = format!("producer-{id}");
        let handle = thread::Builder::new().name(name).spawn(move || produce(id, 40, out));
        producers.push(handle.unwrap());
    }
    drop(tx);
    let consumer = thread::Builder::new().name("consumer".into()).spawn(move || consume(rx));
    for p in producers {
        p.join().unwrap();
    }
    let total = consumer.unwrap().join().unwrap();
    println!("total {total}");
}
