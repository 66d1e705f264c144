//! Two critical sections that an acknowledgement protocol orders: `first` runs
//! `critical_first`, then tells `second`, which waits for that message before it runs
//! `critical_second` and acknowledges it. No run has both inside at once, and `ppd check`
//! proves it from the source:
//! `ppd check 'first: enter critical_first == second: enter critical_second'`.
//! Random delays (logged, so replay repeats them) vary the interleaving from run to run.

use std::time::Duration;

use ppd::sync::mpsc::channel;

#[ppd::eblock]
fn critical_first(delay: u64) -> u64 {
    ppd::thread::sleep(Duration::from_micros(delay));
    delay
}

#[ppd::eblock]
fn critical_second(delay: u64) -> u64 {
    ppd::thread::sleep(Duration::from_micros(delay));
    delay
}

#[ppd::main]
fn main() {
    let (done_tx, done_rx) = channel::<u64>();
    let (ack_tx, ack_rx) = channel::<u64>();
    let first = ppd::thread::Builder::new()
        .name("first".into())
        .spawn(move || {
            let delay = ppd::rand::u64(0..400);
            critical_first(delay);
            done_tx.send(delay).unwrap();
            ack_rx.recv().unwrap();
        })
        .unwrap();
    let second = ppd::thread::Builder::new()
        .name("second".into())
        .spawn(move || {
            ppd::thread::sleep(Duration::from_micros(ppd::rand::u64(0..400)));
            let got = done_rx.recv().unwrap();
            critical_second(got);
            ack_tx.send(got).unwrap();
        })
        .unwrap();
    first.join().unwrap();
    second.join().unwrap();
}
