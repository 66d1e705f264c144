//! `let`s whose type is inferred only after the statement, in `main`, in its closures and in an
//! e-block: naming the objects they bind leaves them alone (choosing how to register such a
//! variable at the `let` would fix its type too early, and reject it).

use std::sync::Arc;

use ppd::sync::Mutex;

#[ppd::eblock]
fn parse(text: &str) -> u64 {
    let n = text.parse().unwrap_or_default();
    let doubled: u64 = n;
    doubled * 2
}

#[ppd::main]
fn main() {
    let n = "5".parse().expect("a number");
    let d = Default::default();
    let shared = Arc::new(Default::default());
    let total: u64 = n;
    let small: u32 = d;
    let lock: &Mutex<Vec<u8>> = &shared;
    let worker = ppd::thread::spawn(move || {
        let m = "7".parse().expect("a number");
        let later: i64 = m;
        let (tx, rx) = ppd::sync::mpsc::channel();
        tx.send(later).expect("sent");
        rx.recv().expect("received")
    });
    let joined = worker.join().expect("joined");
    println!(
        "{total} {small} {} {joined} {}",
        lock.lock().expect("locked").len(),
        parse("4")
    );
}
