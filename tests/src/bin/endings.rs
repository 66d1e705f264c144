//! `endings`: ppd programs whose runs end badly, for the end-to-end tests of what ppd says about
//! such runs.
//!
//! ```text
//! endings blocked-thread   a worker is left blocked on a channel when main returns; exits 4
//! endings join-hang        main joins a fetcher that waits for a request only main could send;
//!                          hangs until killed
//! endings eblock-panic     a teller's third withdrawal panics inside the e-block; exits 3
//! endings token-pair       processes named P3 (id p1) and P1 (id p2) pass one token back and
//!                          forth, each marking `holding` while it has it: never both at once
//! endings outside-wait     main joins a reader that, after its last ppd operation, waits on a
//!                          std channel nobody sends on (a wait ppd cannot see); hangs until killed
//! endings long-sleep       main joins a sleeper that marks, then sleeps ten minutes in
//!                          `ppd::thread::sleep`; killed before it wakes
//! endings atomic-panic     main's `fetch_update` closure panics and main catches it; an adder
//!                          then adds 2 to the same atomic; main prints `hits 2`
//! endings full-socket      a writer writes to a TCP connection whose other end main accepts and
//!                          never reads, until the socket's buffers are full; hangs until killed
//! ```
//!
//! Each line a process prints is printed after the operations before it returned, so a test
//! that reads a line knows those operations are in the process's log.

use std::io::Write;
use std::process::ExitCode;

use ppd::sync::mpsc::{channel, named_channel};
use ppd::thread::Builder;

fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{line}").expect("stdout");
    out.flush().expect("stdout");
}

/// A worker reports ready, works on (500 marks), prints, and waits on `jobs`, which nobody
/// sends on; main returns as soon as the worker is ready, without dropping the sender.
fn blocked_thread() -> ExitCode {
    let (jobs_tx, jobs) = named_channel::<u64>("jobs");
    let (ready_tx, ready) = channel::<u64>();
    Builder::new()
        .name("waiter".into())
        .spawn(move || {
            ready_tx.send(7).expect("main waits for ready");
            for step in 0..500 {
                ppd::mark!("step", step);
            }
            say("waiter: waiting for a job");
            let job = jobs.recv();
            say(&format!("waiter: got {job:?}"));
        })
        .expect("spawn");
    let got = ready.recv().expect("the waiter reports ready");
    say(&format!("main: waiter ready ({got}), leaving"));
    // Still open when main returns: the waiter stays blocked.
    std::mem::forget(jobs_tx);
    // While recorded, give the waiter time to reach its wait, so that the recording ends with
    // it blocked there. A replay does not wait: its main returns while the waiter still has its
    // work to replay, which the replay must not cut short.
    if std::env::var("PPD_MODE").as_deref() == Ok("record") {
        std::thread::sleep(std::time::Duration::from_millis(300));
    }
    ExitCode::from(4)
}

/// A writer fills a connection that main accepted and never reads from, and waits in a write.
fn full_socket() {
    let listener = ppd::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let address = listener.local_addr().expect("the listener's address");
    let writer = Builder::new()
        .name("writer".into())
        .spawn(move || {
            let mut stream = ppd::net::TcpStream::connect(address).expect("connect");
            say("writer: writing");
            let chunk = vec![7u8; 1 << 16];
            loop {
                stream.write_all(&chunk).expect("the reader never closes");
            }
        })
        .expect("spawn");
    let (_unread, _) = listener.accept().expect("accept");
    say("main: accepted, joining the writer");
    writer.join().expect("the writer does not panic");
}

/// Main keeps the only sender of `requests` and joins the fetcher, which waits on it.
fn join_hang() {
    let (requests_tx, requests) = named_channel::<u64>("requests");
    let fetcher = Builder::new()
        .name("fetcher".into())
        .spawn(move || {
            say("fetcher: waiting for a request");
            let request = requests.recv();
            say(&format!("fetcher: got {request:?}"));
        })
        .expect("spawn");
    say("main: joining the fetcher");
    fetcher.join().expect("the fetcher does not panic");
    drop(requests_tx);
}

/// Main joins a sleeper that sleeps far longer than any test waits.
fn long_sleep() {
    let sleeper = Builder::new()
        .name("sleeper".into())
        .spawn(|| {
            ppd::mark!("going to sleep", 1);
            say("sleeper: sleeping");
            ppd::thread::sleep(std::time::Duration::from_secs(600));
            say("sleeper: awake");
        })
        .expect("spawn");
    sleeper.join().expect("the sleeper does not panic");
}

/// One withdrawal: the balance after it, or a panic when it would be negative.
#[ppd::eblock]
fn withdraw(balance: i64, amount: i64) -> i64 {
    let after = balance - amount;
    if after < 0 {
        ppd::mark!("overdrawn", after);
        panic!("overdrawn: {after}");
    }
    after
}

/// A teller withdraws 30, 50 and 5020 from 100; the third withdrawal panics.
fn eblock_panic() -> ExitCode {
    let teller = Builder::new()
        .name("teller".into())
        .spawn(|| {
            let mut balance = 100;
            for amount in [30, 50, 5020] {
                balance = withdraw(balance, amount);
                say(&format!("teller: balance {balance}"));
            }
        })
        .expect("spawn");
    match teller.join() {
        Ok(()) => ExitCode::SUCCESS,
        Err(_) => ExitCode::from(3),
    }
}

/// One token between two processes, three rounds: whoever holds it marks `holding`, then
/// passes it on. The names differ from the ids on purpose (P3 is p1, P1 is p2).
fn token_pair() {
    let (to_p1, p1_inbox) = named_channel::<u64>("to-P1");
    let (to_p3, p3_inbox) = named_channel::<u64>("to-P3");
    let p3 = Builder::new()
        .name("P3".into())
        .spawn(move || {
            for token in p3_inbox.iter().take(3) {
                ppd::mark!("holding", token);
                to_p1.send(token + 1).expect("P1 is up");
            }
        })
        .expect("spawn");
    let p1 = Builder::new()
        .name("P1".into())
        .spawn(move || {
            let mut token = 0;
            for _ in 0..3 {
                ppd::mark!("holding", token);
                to_p3.send(token + 1).expect("P3 is up");
                token = p1_inbox.recv().expect("P3 passes the token back");
            }
        })
        .expect("spawn");
    p3.join().expect("P3 finishes");
    p1.join().expect("P1 finishes");
}

/// The reader marks three times, then waits where ppd does not see it.
fn outside_wait() {
    let reader = Builder::new()
        .name("reader".into())
        .spawn(|| {
            for step in 0..3 {
                ppd::mark!("step", step);
            }
            let (never_tx, never) = std::sync::mpsc::channel::<()>();
            std::mem::forget(never_tx);
            let _ = never.recv();
        })
        .expect("spawn");
    reader.join().expect("the reader does not panic");
}

/// An atomic access that panics half-way (its `fetch_update` closure), caught; then another
/// process and main use the same atomic.
fn atomic_panic() {
    use ppd::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;
    let hits = Arc::new(AtomicU64::named("hits", 0));
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _ = hits.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |_| -> Option<u64> {
            panic!("no update")
        });
    }));
    say(&format!("main: update panicked: {}", caught.is_err()));
    let adder = Arc::clone(&hits);
    Builder::new()
        .name("adder".into())
        .spawn(move || adder.fetch_add(2, Ordering::SeqCst))
        .expect("spawn")
        .join()
        .expect("the adder does not panic");
    say(&format!("main: hits {}", hits.load(Ordering::SeqCst)));
}

#[ppd::main]
fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("blocked-thread") => blocked_thread(),
        Some("join-hang") => {
            join_hang();
            ExitCode::SUCCESS
        }
        Some("eblock-panic") => eblock_panic(),
        Some("token-pair") => {
            token_pair();
            ExitCode::SUCCESS
        }
        Some("outside-wait") => {
            outside_wait();
            ExitCode::SUCCESS
        }
        Some("long-sleep") => {
            long_sleep();
            ExitCode::SUCCESS
        }
        Some("atomic-panic") => {
            atomic_panic();
            ExitCode::SUCCESS
        }
        Some("full-socket") => {
            full_socket();
            ExitCode::SUCCESS
        }
        _ => {
            eprintln!(
                "usage: endings blocked-thread | join-hang | eblock-panic | token-pair | \
                 outside-wait | long-sleep | atomic-panic | full-socket"
            );
            ExitCode::from(2)
        }
    }
}
