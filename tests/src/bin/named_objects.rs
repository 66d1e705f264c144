//! Objects named after the variables `#[ppd::main]` binds them to: `account` and `hits` by
//! their `let` statements (the second on two lines), `ledger` by `Mutex::named`; of `pair`,
//! only the first object takes the name. `main` and `worker` race on `hits` (relaxed stores).

use std::sync::Arc;

use ppd::sync::Mutex;
use ppd::sync::atomic::{AtomicU64, Ordering};

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
                *account.lock().expect("not poisoned") -= 1;
                hits.store(1, Ordering::Relaxed);
            })
            .expect("spawn")
    };
    hits.store(2, Ordering::Relaxed);
    worker.join().expect("worker");
    let sum = *pair.0.lock().expect("not poisoned") + *pair.1.lock().expect("not poisoned");
    *ledger.lock().expect("not poisoned") += sum;
    println!("account = {}", *account.lock().expect("not poisoned"));
}
