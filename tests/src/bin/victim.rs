//! `victim`: a ppd program that dies on purpose, for the end-to-end tests of what a recording
//! keeps when the recorded program dies.
//!
//! ```text
//! victim panic          worker-1 panics mid-run; the others finish; exits 3
//! victim panic-main     every process finishes, then main panics (exit code 101)
//! victim abort          worker-2 calls std::process::abort() mid-run (SIGABRT)
//! victim spin PIDFILE   writes its pid to PIDFILE and runs rounds until killed
//! victim atomics PIDFILE  four workers read-modify-write, load and store two shared atomics
//!                       until killed; main writes its pid to PIDFILE and prints `running`
//!                       once they all have
//! victim ok             runs to the end and exits 0
//! victim spawn-and-die  main spawns eight sleepers and SIGKILLs itself right after the last
//!                       spawn, most likely before the last ones start
//! ```
//!
//! In every mode `main` spawns a `hub` and four workers. Each round, a worker takes the shared
//! `tally` lock, sends a request to the hub and waits for the reply. In `spin` mode main itself
//! drives the rounds instead: it sends round r to every worker, waits for every echo, takes the
//! lock, and only then prints `round r` — so each line it prints reports operations that have
//! returned, and therefore events that are in its log.

use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;

use ppd::sync::Mutex;
use ppd::sync::atomic::{AtomicU64, Ordering};
use ppd::sync::mpsc::{Receiver, Sender, channel, named_channel};
use ppd::thread::{Builder, JoinHandle};
use serde::{Deserialize, Serialize};

const WORKERS: usize = 4;
const ROUNDS: u64 = 200;
/// The round at which the doomed worker dies.
const DOOM_ROUND: u64 = ROUNDS / 2;
/// Random numbers each worker draws a round in `ok-random`: logged values that do not
/// compress, so that the run's log has a size its interleaving cannot shrink.
const NOISE_DRAWS: usize = 8;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Fate {
    Finish,
    Panic,
    Abort,
}

fn spawn<T: Send + 'static>(name: String, f: impl FnOnce() -> T + Send + 'static) -> JoinHandle<T> {
    Builder::new().name(name).spawn(f).expect("spawn a process")
}

/// A request to the hub: who asks, and for which round.
#[derive(Debug, Serialize, Deserialize)]
struct Request {
    from: usize,
    round: u64,
    /// The worker's random draws of the round, folded (0 without them).
    noise: u64,
}

/// Who a worker is: its number, its fate, and how many random numbers it draws a round.
struct Role {
    me: usize,
    fate: Fate,
    draws: usize,
}

fn worker(
    Role { me, fate, draws }: Role,
    tally: Arc<Mutex<u64>>,
    hub: Sender<Request>,
    replies: Receiver<u64>,
    ready: Sender<usize>,
    go: Receiver<()>,
) {
    ready.send(me).expect("main is waiting for us");
    go.recv().expect("main says go");
    for round in 0..ROUNDS {
        if round == DOOM_ROUND {
            match fate {
                Fate::Panic => panic!("injected panic in worker-{me} at round {round}"),
                Fate::Abort => std::process::abort(),
                Fate::Finish => {}
            }
        }
        *tally.lock().expect("tally") += 1;
        let noise = (0..draws).fold(0, |folded, _| folded ^ ppd::rand::next_u64());
        hub.send(Request {
            from: me,
            round,
            noise,
        })
        .expect("the hub is up");
        let answer = replies.recv().expect("the hub answers");
        assert_eq!(answer, round + 1);
    }
}

/// Runs the hub and the workers, drawing random numbers if `noisy`; returns the names of the
/// workers that panicked.
fn run(doomed: Option<(usize, Fate)>, noisy: bool) -> Vec<String> {
    let tally = Arc::new(Mutex::named("tally", 0u64));
    let (to_hub, requests) = named_channel::<Request>("requests");
    let (ready_tx, ready_rx) = channel::<usize>();
    let mut reply_txs = Vec::new();
    let mut workers = Vec::new();
    let mut gos = Vec::new();
    for me in 0..WORKERS {
        let (reply_tx, reply_rx) = channel::<u64>();
        let (go_tx, go_rx) = channel::<()>();
        reply_txs.push(reply_tx);
        gos.push(go_tx);
        let fate = match doomed {
            Some((who, fate)) if who == me => fate,
            _ => Fate::Finish,
        };
        let (tally, hub, ready) = (Arc::clone(&tally), to_hub.clone(), ready_tx.clone());
        workers.push(spawn(format!("worker-{me}"), move || {
            let draws = if noisy { NOISE_DRAWS } else { 0 };
            let role = Role { me, fate, draws };
            worker(role, tally, hub, reply_rx, ready, go_rx)
        }));
    }
    drop(to_hub);
    let hub_tally = Arc::clone(&tally);
    let hub = spawn("hub".into(), move || {
        // Ends when every worker is gone, including one that panicked.
        for Request { from, round, .. } in requests.iter() {
            *hub_tally.lock().expect("tally") += 1;
            let _ = reply_txs[from].send(round + 1);
        }
    });
    // Every process has started and logged before anyone may die.
    for _ in 0..WORKERS {
        ready_rx.recv().expect("a worker reports ready");
    }
    for go in &gos {
        go.send(()).expect("the worker waits for go");
    }
    let mut panicked = Vec::new();
    for (i, w) in workers.into_iter().enumerate() {
        if w.join().is_err() {
            panicked.push(format!("worker-{i}"));
        }
    }
    hub.join().expect("the hub does not panic");
    panicked
}

fn write_pid(pidfile: &str) {
    let tmp = format!("{pidfile}.tmp");
    std::fs::write(&tmp, std::process::id().to_string()).expect("write the pid file");
    std::fs::rename(&tmp, pidfile).expect("publish the pid file");
}

/// Workers contending for two atomics forever, as the atomic-heavy benchmark does.
fn atomics(pidfile: &str) {
    let counter = Arc::new(AtomicU64::named("counter", 0));
    let last = Arc::new(AtomicU64::named("last", 0));
    let (ready, started) = channel::<()>();
    for me in 0..WORKERS as u64 {
        let (counter, last, ready) = (Arc::clone(&counter), Arc::clone(&last), ready.clone());
        spawn(format!("worker-{me}"), move || {
            ready.send(()).expect("main waits for every worker");
            let mut seen = 0u64;
            loop {
                let c = counter.fetch_add(1, Ordering::AcqRel);
                seen = seen.wrapping_add(last.load(Ordering::Acquire));
                last.store(c ^ me ^ seen, Ordering::Release);
            }
        });
    }
    for _ in 0..WORKERS {
        started.recv().expect("a worker starts");
    }
    write_pid(pidfile);
    println!("running");
    loop {
        ppd::thread::park();
    }
}

fn spin(pidfile: &str) {
    write_pid(pidfile);

    let tally = Arc::new(Mutex::named("tally", 0u64));
    let mut links = Vec::new();
    for me in 0..WORKERS {
        let (to_worker, inbox) = channel::<u64>();
        let (to_main, replies) = channel::<u64>();
        let tally = Arc::clone(&tally);
        spawn(format!("worker-{me}"), move || {
            for round in inbox.iter() {
                *tally.lock().expect("tally") += 1;
                if to_main.send(round).is_err() {
                    break;
                }
            }
        });
        links.push((to_worker, replies));
    }
    let stdout = std::io::stdout();
    for round in 1u64.. {
        for (to_worker, _) in &links {
            to_worker.send(round).expect("the worker is up");
        }
        for (_, replies) in &links {
            assert_eq!(replies.recv().expect("the worker answers"), round);
        }
        *tally.lock().expect("tally") += 1;
        let mut out = stdout.lock();
        writeln!(out, "round {round}").expect("report the round");
        out.flush().expect("report the round");
    }
}

/// Spawns eight sleepers that wait on a channel nobody sends on, then dies by SIGKILL before
/// they can all start: the children spawned last are in the parent's log and, at most, in a
/// log of their own holding no event.
fn spawn_and_die() {
    let (keep_tx, never) = channel::<()>();
    let never = Arc::new(ppd::sync::Mutex::new(never));
    for n in 0..8 {
        let never = Arc::clone(&never);
        Builder::new()
            .name(format!("sleeper-{n}"))
            .spawn(move || {
                let _ = never.lock().unwrap().recv();
            })
            .expect("spawn");
    }
    std::mem::forget(keep_tx);
    // A replay holds main at its next ppd operation after the log's last event, the spawn: the
    // park, so it must not die first.
    if std::env::var("PPD_MODE").as_deref() == Ok("record") {
        // SAFETY: kill(2) on our own pid with a valid signal has no memory effects.
        unsafe { libc::kill(libc::getpid(), libc::SIGKILL) };
    }
    ppd::thread::park();
}

#[ppd::main]
fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("ok") => {
            let panicked = run(None, false);
            assert!(panicked.is_empty());
            ExitCode::SUCCESS
        }
        Some("ok-random") => {
            let panicked = run(None, true);
            assert!(panicked.is_empty());
            ExitCode::SUCCESS
        }
        Some("panic") => {
            let panicked = run(Some((1, Fate::Panic)), false);
            eprintln!("victim: panicked: {}", panicked.join(", "));
            ExitCode::from(3)
        }
        Some("panic-main") => {
            let panicked = run(None, false);
            assert!(panicked.is_empty());
            panic!("injected panic in main after every process finished");
        }
        Some("abort") => {
            run(Some((2, Fate::Abort)), false);
            unreachable!("worker-2 aborts the program");
        }
        Some("atomics") => {
            atomics(args.get(1).expect("atomics needs a pid file argument"));
            unreachable!("atomics runs until killed")
        }
        Some("spawn-and-die") => {
            spawn_and_die();
            unreachable!("SIGKILL ends the program")
        }
        Some("spin") => {
            let pidfile = args.get(1).expect("spin needs a pid file argument");
            spin(pidfile);
            unreachable!("spin runs until killed")
        }
        _ => {
            eprintln!(
                "usage: victim ok | panic | panic-main | abort | spawn-and-die | spin PIDFILE | \
                 atomics PIDFILE"
            );
            ExitCode::from(2)
        }
    }
}
