//! Programs that use ppd's channels the way std programs do, chosen by the first argument:
//!
//! * `pool`: the Rust Book's thread pool: `Box<dyn FnOnce() + Send>` jobs taken by three
//!   workers from a `Mutex<Receiver<Job>>`, each job sending its result back; `main` collects
//!   them with `recv_deadline` and `try_iter`, receives non-serde handles with an owned `for`
//!   loop, and selects between two channels of them;
//! * `opaque`: e-blocks in process `server` receive a non-serde `Ticket` (`serve`) and a serde
//!   `u64` (`tally`): re-executing `serve` needs a message whose value was never logged.
//!
//! Each prints totals that do not depend on the interleaving.

use std::sync::Arc;
use std::time::{Duration, Instant};

use ppd::sync::Mutex;
use ppd::sync::mpsc::{self, Receiver, Select, Sender};

type Job = Box<dyn FnOnce() + Send + 'static>;

/// The Book's `ThreadPool`, with ppd's types.
struct ThreadPool {
    workers: Vec<Worker>,
    sender: Option<Sender<Job>>,
}

struct Worker {
    thread: Option<ppd::thread::JoinHandle<()>>,
}

impl ThreadPool {
    fn new(size: usize) -> ThreadPool {
        let (sender, receiver) = mpsc::named_channel("jobs");
        let receiver = Arc::new(Mutex::new(receiver));
        let workers = (0..size)
            .map(|id| Worker::new(id, Arc::clone(&receiver)))
            .collect();
        ThreadPool {
            workers,
            sender: Some(sender),
        }
    }

    fn execute<F: FnOnce() + Send + 'static>(&self, f: F) {
        let job: Job = Box::new(f);
        self.sender
            .as_ref()
            .expect("open")
            .send(job)
            .expect("workers");
    }
}

impl Drop for ThreadPool {
    fn drop(&mut self) {
        drop(self.sender.take());
        for worker in &mut self.workers {
            if let Some(thread) = worker.thread.take() {
                thread.join().expect("worker");
            }
        }
    }
}

impl Worker {
    fn new(id: usize, receiver: Arc<Mutex<Receiver<Job>>>) -> Worker {
        let thread = ppd::thread::Builder::new()
            .name(format!("worker-{id}"))
            .spawn(move || {
                loop {
                    let message = receiver.lock().expect("jobs lock").recv();
                    match message {
                        Ok(job) => job(),
                        Err(_) => break,
                    }
                }
            })
            .expect("spawn");
        Worker {
            thread: Some(thread),
        }
    }
}

/// A value that is not serde: it owns a handle.
struct Ticket {
    number: u64,
    _owner: Arc<()>,
}

impl Ticket {
    fn new(number: u64) -> Ticket {
        Ticket {
            number,
            _owner: Arc::new(()),
        }
    }
}

fn pool() {
    let (results, collected) = mpsc::named_channel::<(u64, u64)>("results");
    {
        let pool = ThreadPool::new(3);
        for i in 0..8u64 {
            let results = results.clone();
            pool.execute(move || results.send((i, i * i)).expect("main"));
        }
    }
    drop(results);
    let far = Instant::now() + Duration::from_secs(3600);
    let (first, square) = collected.recv_deadline(far).expect("a result");
    let rest: Vec<(u64, u64)> = collected.try_iter().collect();
    let squares = square + rest.iter().map(|(_, s)| s).sum::<u64>();
    println!("{} results, squares {squares}", 1 + rest.len());
    assert!(first < 8);

    let (tickets, ticket_rx) = mpsc::named_channel::<Ticket>("tickets");
    let issuer = ppd::thread::Builder::new()
        .name("issuer".into())
        .spawn(move || {
            for n in 1..=5 {
                tickets.send(Ticket::new(n)).expect("main");
            }
        })
        .expect("spawn");
    let mut numbers = 0;
    for ticket in ticket_rx {
        numbers += ticket.number;
    }
    issuer.join().expect("issuer");
    println!("tickets {numbers}");

    let (left_tx, left) = mpsc::named_channel::<Ticket>("left");
    let (right_tx, right) = mpsc::named_channel::<Ticket>("right");
    let senders: Vec<_> = [(left_tx, 10), (right_tx, 20)]
        .into_iter()
        .map(|(tx, base)| {
            ppd::thread::spawn(move || {
                for n in 0..3 {
                    tx.send(Ticket::new(base + n)).expect("main");
                }
            })
        })
        .collect();
    // Select among the channels still open until both are closed.
    let mut open = [Some(&left), Some(&right)];
    let mut selected = 0;
    while open.iter().any(Option::is_some) {
        let mut select = Select::new();
        let mut added = Vec::new();
        for (i, receiver) in open.iter().enumerate() {
            if let Some(receiver) = receiver {
                added.push((select.recv(receiver), i));
            }
        }
        let op = select.select();
        let (_, i) = added
            .into_iter()
            .find(|(index, _)| *index == op.index())
            .expect("a selected receive");
        match op.recv(open[i].expect("open")) {
            Ok(ticket) => selected += ticket.number,
            Err(_) => open[i] = None,
        }
    }
    for sender in senders {
        sender.join().expect("sender");
    }
    println!("selected {selected}");
}

#[ppd::eblock]
fn serve(tickets: &Receiver<Ticket>) -> u64 {
    let ticket = tickets.recv().expect("a ticket");
    ticket.number * 2
}

#[ppd::eblock]
fn tally(numbers: &Receiver<u64>) -> u64 {
    let number = numbers.recv().expect("a number");
    number + 1
}

fn opaque() {
    let (tickets, ticket_rx) = mpsc::named_channel::<Ticket>("tickets");
    let (numbers, number_rx) = mpsc::named_channel::<u64>("numbers");
    let server = ppd::thread::Builder::new()
        .name("server".into())
        .spawn(move || {
            let mut total = 0;
            for _ in 0..2 {
                total += serve(&ticket_rx);
                total += tally(&number_rx);
            }
            total
        })
        .expect("spawn");
    for n in 1..=2 {
        tickets.send(Ticket::new(n)).expect("server");
        numbers.send(n * 100).expect("server");
    }
    println!("total {}", server.join().expect("server"));
}

/// Messages each producer of `fan_in` sends: more than one run of sequence numbers.
const FAN_IN_MESSAGES: u64 = 150;

/// Three producers and `main` send on one channel to one consumer, some through a shared
/// handle, and the consumer sums what it gets.
fn fan_in() {
    let (tx, rx) = mpsc::named_channel::<u64>("work");
    let consumer = ppd::thread::Builder::new()
        .name("consumer".into())
        .spawn(move || rx.iter().sum::<u64>())
        .expect("spawn");
    let shared = tx.clone();
    ppd::thread::scope(|s| {
        for p in 0..3u64 {
            let own = tx.clone();
            let shared = &shared;
            s.spawn(move || {
                for k in 0..FAN_IN_MESSAGES {
                    let handle = if k % 2 == 0 { &own } else { shared };
                    handle.send(p * 1000 + k).expect("consumer");
                }
            });
        }
        for k in 0..FAN_IN_MESSAGES {
            tx.send(10_000 + k).expect("consumer");
        }
    });
    drop((tx, shared));
    println!("sum {}", consumer.join().expect("consumer"));
}

#[ppd::main]
fn main() {
    match std::env::args().nth(1).as_deref() {
        Some("pool") => pool(),
        Some("opaque") => opaque(),
        Some("fan-in") => fan_in(),
        other => {
            eprintln!("channels: unknown case {other:?} (pool, opaque, fan-in)");
            std::process::exit(2);
        }
    }
}
