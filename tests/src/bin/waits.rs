//! `waits`: ppd programs that end with processes waiting, for the end-to-end tests of what
//! `ppd races` makes of each wait.
//!
//! ```text
//! waits requeue-hang   main sends three requests, drops its sender and joins the fetcher,
//!                      which requeues the first on its own clone of the sender: that clone
//!                      keeps the channel open, so the fetcher waits for more forever; hangs
//!                      until killed
//! waits idle-pool      the Rust Book's first thread pool (no shutdown): main runs six jobs on
//!                      three workers, sums their results and returns while the workers wait
//!                      for the next job; exits 0
//! waits exit-cycle     `left` and `right` each hold one mutex and wait for the other's, and
//!                      main returns; exits 0
//! ```
//!
//! While recorded, a program that returns first gives its other processes time to reach their
//! waits, so that the recording ends with them there; a replay does not wait (its `main` is held
//! until every process has replayed its log).

use std::io::Write;
use std::process::ExitCode;

use ppd::sync::mpsc::{Sender, named_channel};
use ppd::sync::{Arc, Mutex};
use ppd::thread::Builder;

fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{line}").expect("stdout");
    out.flush().expect("stdout");
}

/// Lets the other processes reach their waits before `main` returns, when recorded.
fn settle_before_returning() {
    if std::env::var("PPD_MODE").as_deref() == Ok("record") {
        std::thread::sleep(std::time::Duration::from_millis(300));
    }
}

/// The fetcher serves requests until the channel closes, and requeues a request it cannot
/// serve yet on its own sender, which therefore keeps the channel open after main's is gone.
fn requeue_hang() {
    let (requests_tx, requests) = named_channel::<u64>("requests");
    let requeue = requests_tx.clone();
    let fetcher = Builder::new()
        .name("fetcher".into())
        .spawn(move || {
            let mut retried = false;
            for request in requests.iter() {
                if request == 1 && !retried {
                    retried = true;
                    requeue
                        .send(request)
                        .expect("the fetcher holds the receiver");
                    continue;
                }
                say(&format!("fetcher: served {request}"));
            }
            say("fetcher: the requests are over");
        })
        .expect("spawn");
    for request in 1..=3 {
        requests_tx.send(request).expect("the fetcher is up");
    }
    drop(requests_tx);
    say("main: joining the fetcher");
    fetcher.join().expect("the fetcher does not panic");
}

type Job = Box<dyn FnOnce() + Send + 'static>;

/// The Rust Book's first `ThreadPool`: its workers take jobs from one `Mutex<Receiver<Job>>`
/// forever, and nothing shuts them down.
struct ThreadPool {
    sender: Sender<Job>,
}

impl ThreadPool {
    fn new(size: usize) -> ThreadPool {
        let (sender, receiver) = named_channel::<Job>("jobs");
        let receiver = Arc::new(Mutex::named("receiver", receiver));
        for id in 0..size {
            let receiver = Arc::clone(&receiver);
            Builder::new()
                .name(format!("worker{id}"))
                .spawn(move || {
                    loop {
                        let job = receiver.lock().unwrap().recv().unwrap();
                        job();
                    }
                })
                .expect("spawn");
        }
        ThreadPool { sender }
    }

    fn execute(&self, job: impl FnOnce() + Send + 'static) {
        self.sender.send(Box::new(job)).unwrap();
    }
}

fn idle_pool() {
    // The pool lives as long as the program, as a server's does: dropping it would close the
    // job channel and wake the workers with an error.
    let pool: &'static ThreadPool = Box::leak(Box::new(ThreadPool::new(3)));
    let (results_tx, results) = named_channel::<u64>("results");
    for n in 1..=6u64 {
        let results_tx = results_tx.clone();
        pool.execute(move || results_tx.send(n * n).expect("main collects the results"));
    }
    let sum: u64 = results.iter().take(6).sum();
    say(&format!("main: the squares sum to {sum}"));
    settle_before_returning();
}

/// `left` holds `m1` and `right` holds `m2`; once each knows the other holds its mutex, each
/// locks the other's. Main does not join them.
fn exit_cycle() {
    let m1 = Arc::new(Mutex::named("m1", 0u64));
    let m2 = Arc::new(Mutex::named("m2", 0u64));
    let (to_left, left_inbox) = named_channel::<()>("to-left");
    let (to_right, right_inbox) = named_channel::<()>("to-right");
    for (name, first, second, tell, inbox) in [
        (
            "left",
            Arc::clone(&m1),
            Arc::clone(&m2),
            to_right,
            left_inbox,
        ),
        ("right", m2, m1, to_left, right_inbox),
    ] {
        Builder::new()
            .name(name.into())
            .spawn(move || {
                let _held = first.lock().unwrap();
                tell.send(()).expect("the other process is up");
                inbox.recv().expect("the other process holds its mutex");
                let _never = second.lock().unwrap();
            })
            .expect("spawn");
    }
    say("main: returning");
    settle_before_returning();
}

#[ppd::main]
fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("requeue-hang") => requeue_hang(),
        Some("idle-pool") => idle_pool(),
        Some("exit-cycle") => exit_cycle(),
        _ => {
            eprintln!("usage: waits requeue-hang | idle-pool | exit-cycle");
            return ExitCode::from(2);
        }
    }
    ExitCode::SUCCESS
}
