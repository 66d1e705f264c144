//! `thread_pool`: an order server on a thread pool in the Rust Book's style.
//!
//! A `ThreadPool` of four `worker` threads takes boxed jobs (`Box<dyn FnOnce() + Send>`) from
//! one `Mutex<Receiver<Job>>`, as the Book's final chapter builds it. `main` submits orders and,
//! half way, a price change; each order job quotes the order at the prices in a `RwLock` and
//! sends the receipt on a bounded results channel (`sync_channel`) to a `collector` thread that
//! `main` runs in a `thread::scope`. A `Barrier` holds the pool back until every worker is up,
//! a `Condvar` lets `main` wait until every job has finished, and a `OnceLock` static keeps the
//! name of the worker that served first. It is a std program ported by changing its `use` lines
//! and adding `#[ppd::main]` (see `docs/porting.md`).
//!
//! The bug: the price change gives its discount in cents, and `reprice` stores it as a
//! percentage, so every order quoted after it is billed nothing. Ask why:
//!
//! ```text
//! ppd record -- ./target/debug/examples/thread_pool
//! ppd why collector unbilled
//! ```
//!
//! The chain leads from the first receipt that billed nothing, through the results channel, to the
//! worker that quoted it, and through the price list's lock to the `reprice` job that wrote
//! the discount.

use ppd::sync::mpsc::{self, Receiver, SyncSender};
use ppd::sync::{Arc, Barrier, Condvar, Mutex, OnceLock, RwLock};
use ppd::thread;
use serde::{Deserialize, Serialize};

/// The price list every quote reads.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Prices {
    unit_cents: u64,
    discount_percent: u64,
}

/// The admin's price change: a new unit price, and a discount in cents per order.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
struct PriceChange {
    unit_cents: u64,
    discount_cents: u64,
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
struct Order {
    id: u64,
    items: u64,
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
struct Receipt {
    order: u64,
    cents: u64,
}

/// The worker that served the first job.
static FIRST_SERVER: OnceLock<String> = OnceLock::new();

/// Quotes one order at the current prices and sends its receipt.
#[ppd::eblock]
fn quote(order: Order, prices: &RwLock<Prices>, receipts: &SyncSender<Receipt>) -> u64 {
    let cents = {
        let prices = prices.read().unwrap();
        let gross = order.items * prices.unit_cents;
        gross.saturating_sub(gross * prices.discount_percent / 100)
    };
    let receipt = Receipt {
        order: order.id,
        cents,
    };
    receipts.send(receipt).unwrap();
    cents
}

/// Applies a price change.
#[ppd::eblock]
fn reprice(prices: &RwLock<Prices>, change: PriceChange) {
    let mut prices = prices.write().unwrap();
    prices.unit_cents = change.unit_cents;
    prices.discount_percent = change.discount_cents;
}

/// Receives `expected` receipts; returns the total and the first receipt that bills nothing.
#[ppd::eblock]
fn collect(receipts: &Receiver<Receipt>, expected: u64) -> (u64, Option<Receipt>) {
    let mut total = 0;
    let mut unbilled = None;
    for _ in 0..expected {
        let receipt = receipts.recv().unwrap();
        total += receipt.cents;
        if receipt.cents == 0 && unbilled.is_none() {
            unbilled = Some(receipt);
        }
    }
    (total, unbilled)
}

type Job = Box<dyn FnOnce() + Send + 'static>;

/// Jobs submitted and not yet finished, and the signal that the count reached zero.
type Pending = Arc<(Mutex<usize>, Condvar)>;

struct ThreadPool {
    workers: Vec<thread::JoinHandle<()>>,
    sender: Option<mpsc::Sender<Job>>,
    pending: Pending,
}

impl ThreadPool {
    /// Starts `size` workers and returns once every one of them is ready.
    fn new(size: usize) -> ThreadPool {
        let (sender, receiver) = mpsc::channel::<Job>();
        let receiver = Arc::new(Mutex::new(receiver));
        let pending: Pending = Arc::new((Mutex::new(0), Condvar::new()));
        let ready = Arc::new(Barrier::new(size + 1));
        let workers = (0..size)
            .map(|id| {
                let receiver = Arc::clone(&receiver);
                let pending = Arc::clone(&pending);
                let ready = Arc::clone(&ready);
                thread::Builder::new()
                    .name(format!("worker{id}"))
                    .spawn(move || {
                        ready.wait();
                        worker(&receiver, &pending);
                    })
                    .unwrap()
            })
            .collect();
        ready.wait();
        ThreadPool {
            workers,
            sender: Some(sender),
            pending,
        }
    }

    fn execute(&self, job: impl FnOnce() + Send + 'static) {
        *self.pending.0.lock().unwrap() += 1;
        self.sender.as_ref().unwrap().send(Box::new(job)).unwrap();
    }

    /// Waits until every submitted job has finished.
    fn wait_idle(&self) {
        let (count, idle) = &*self.pending;
        let _guard = idle
            .wait_while(count.lock().unwrap(), |pending| *pending > 0)
            .unwrap();
    }
}

impl Drop for ThreadPool {
    fn drop(&mut self) {
        drop(self.sender.take());
        for worker in self.workers.drain(..) {
            worker.join().unwrap();
        }
    }
}

/// A worker's loop: run jobs until the pool's sender is gone.
fn worker(receiver: &Mutex<Receiver<Job>>, pending: &Pending) {
    loop {
        let message = receiver.lock().unwrap().recv();
        let Ok(job) = message else {
            return;
        };
        FIRST_SERVER.get_or_init(|| thread::current().name().unwrap_or("?").to_owned());
        job();
        let (count, idle) = &**pending;
        let mut count = count.lock().unwrap();
        *count -= 1;
        if *count == 0 {
            idle.notify_all();
        }
    }
}

#[ppd::main]
fn main() {
    let orders: Vec<Order> = (1..=12)
        .map(|id| Order {
            id,
            items: id % 4 + 1,
        })
        .collect();
    let prices = Arc::new(RwLock::new(Prices {
        unit_cents: 200,
        discount_percent: 10,
    }));
    let (receipts_tx, receipts_rx) = mpsc::sync_channel::<Receipt>(2);
    let pool = ThreadPool::new(4);

    let expected = orders.len() as u64;
    let (total, unbilled) = thread::scope(|scope| {
        let collector = thread::Builder::new()
            .name("collector".into())
            .spawn_scoped(scope, move || collect(&receipts_rx, expected))
            .unwrap();
        for (n, order) in orders.iter().copied().enumerate() {
            if n == orders.len() / 2 {
                let prices = Arc::clone(&prices);
                let change = PriceChange {
                    unit_cents: 250,
                    discount_cents: 150,
                };
                pool.execute(move || reprice(&prices, change));
                // The change applies to every order taken after it.
                pool.wait_idle();
            }
            let prices = Arc::clone(&prices);
            let receipts = receipts_tx.clone();
            pool.execute(move || {
                quote(order, &prices, &receipts);
            });
        }
        pool.wait_idle();
        collector.join().unwrap()
    });
    drop(pool);
    println!("{} orders, {total} cents in all", orders.len());
    match unbilled {
        Some(receipt) => println!("order {} was billed nothing", receipt.order),
        None => println!("every order was billed"),
    }
    println!("first job served by {}", FIRST_SERVER.get().unwrap());
}
