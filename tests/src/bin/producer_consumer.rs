//! A producer/consumer ported from std by its `use` lines: `ppd why` explains the variables of
//! its threads' closures, which are no e-blocks, by tracing their bodies in a replay of the run,
//! and follows the argument of the one e-block, `scale`, to the closure's statement that
//! computed it.

use ppd::sync::mpsc::channel;
use ppd::thread;

/// Not an e-block: what it returns is computed from what it is passed.
fn process(item: u64) -> u64 {
    item * 2
}

/// An e-block called from a closure.
#[ppd::eblock]
fn scale(x: u64) -> u64 {
    let factor = 3;
    x * factor
}

#[ppd::main]
fn main() {
    let (tx, rx) = channel();
    let producers: Vec<_> = (1..=2u64)
        .map(|p| {
            let tx = tx.clone();
            thread::Builder::new()
                .name(format!("producer-{p}"))
                .spawn(move || {
                    for i in 0..3 {
                        let item = 100 * p + i;
                        tx.send(item).expect("the consumer");
                    }
                })
                .expect("spawn a producer")
        })
        .collect();
    drop(tx);
    let consumer = thread::Builder::new()
        .name("consumer".into())
        .spawn(move || {
            let mut last = 0;
            let mut count = 0;
            for item in rx {
                let doubled = process(item);
                last = scale(doubled);
                count += 1;
            }
            (last, count)
        })
        .expect("spawn the consumer");
    for producer in producers {
        producer.join().expect("a producer");
    }
    let (last, count) = consumer.join().expect("the consumer");
    println!("last = {last}, count = {count}");
}
