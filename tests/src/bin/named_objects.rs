//! Objects named after the variables their `let` statements bind them to, wherever the
//! statement is: in `#[ppd::main]`'s body (`account`; `hits` on two lines; `ledger` keeps the
//! name `Mutex::named` gave it; `pair`'s parts are `pair.0` and `pair.1`), in a thread's
//! closure (`tx/rx`, a channel bound by a tuple pattern; `token`, created at its first use),
//! in a scoped thread's closure (`left` and `right`, each its part of the tuple; `lock` on a
//! line where text before it takes more bytes than characters), and in an e-block
//! (`sums_tx/sums_rx`, `scratch`). The mutex a spawned closure makes without a `let` is not
//! named after the statement that spawns it. `main` and `worker` race on `hits` (relaxed
//! stores).

use std::sync::Arc;

use ppd::sync::Mutex;
use ppd::sync::atomic::{AtomicU64, Ordering};
use ppd::sync::mpsc::channel;

/// Adds what `first` holds to a scratch total, through a channel of its own.
#[ppd::eblock]
fn tally(first: &Mutex<i64>) -> i64 {
    let (sums_tx, sums_rx) = channel();
    let scratch = Mutex::new(0i64);
    sums_tx
        .send(*first.lock().expect("not poisoned"))
        .expect("sent");
    *scratch.lock().expect("not poisoned") += sums_rx.recv().expect("received");
    scratch.into_inner().expect("not poisoned")
}

#[ppd::main]
fn main() {
    let account = Arc::new(Mutex::new(100i64));
    let hits: Arc<AtomicU64> = Arc::new(AtomicU64::new(0));
    let ledger = Mutex::named("ledger", 0i64);
    let pair = (Mutex::new(1i64), Mutex::new(2i64));
    let worker = {
        let (account, hits) = (Arc::clone(&account), Arc::clone(&hits));
        ppd::thread::Builder::new()
            .name("worker".into())
            .spawn(move || {
                let (tx, rx) = channel();
                let token = Mutex::new(0u8);
                tx.send(1i64).expect("sent");
                *account.lock().expect("not poisoned") -= rx.recv().expect("received");
                *token.lock().expect("not poisoned") += 1;
                *Mutex::new(5u8).lock().expect("not poisoned") += 1;
                hits.store(1, Ordering::Relaxed);
            })
            .expect("spawn")
    };
    hits.store(2, Ordering::Relaxed);
    worker.join().expect("worker");
    ppd::thread::scope(|s| {
        s.spawn(|| {
            let (left, right) = (Mutex::new(3i64), Mutex::new(4i64));
            let (label, lock) = ("é—ü", Mutex::new(label_len()));
            *lock.lock().expect("not poisoned") += label.len();
            *left.lock().expect("not poisoned") += *right.lock().expect("not poisoned");
        });
    });
    let sum = *pair.0.lock().expect("not poisoned") + *pair.1.lock().expect("not poisoned");
    *ledger.lock().expect("not poisoned") += sum + tally(&pair.0);
    println!("account = {}", *account.lock().expect("not poisoned"));
}

fn label_len() -> usize {
    0
}
