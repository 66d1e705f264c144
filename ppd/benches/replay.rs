//! What replaying costs against recording, and how fast a breakpoint halts every process.
//!
//! ```sh
//! cargo bench -p ppd --bench replay
//! ```
//!
//! The program is this binary in child mode (`child WORKLOAD`), 1 M operations each:
//! message-heavy `ping-pong` (4 pairs bouncing a counter), `all-to-one` (7 senders, one
//! receiver) and `work-queue` (`main` handing jobs to 4 workers that all receive from one
//! crossbeam-style channel, and summing their answers); shared-memory-heavy `lock-heavy` (4
//! processes taking turns on one mutex) and `atomic-heavy` (4 processes doing a
//! read-modify-write, a load and a store on two atomics).
//! Half-way through, one process marks `half`. Each round:
//!
//! * **record**: the child run with `PPD_MODE=record`, whole-process wall time (spawn to exit);
//! * **replay**: the recording replayed to the end under the global debugger with every logged
//!   value checked (`ppd replay --verify`), wall time from starting the program to its end;
//! * **halt**: the recording replayed with `--stop 'PROCESS: mark half'`: the wall time from
//!   starting the program to the halt report, measured here; and the halting latency, the time
//!   from the event that made the predicate true to every process held, as the replay runtime
//!   itself reports it (only the runtime sees when the predicate became true: this figure is
//!   its own, not measured from outside).
//!
//! The report gives medians over the rounds and replay / record.
//!
//! Run as a test (`cargo test --benches`) it replays one small recording of each workload.

use std::path::Path;
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

use ppd::sync::atomic::{AtomicU64, Ordering};
use ppd::sync::{Arc, Mutex, mpsc};
use ppd::thread;
use ppd_formats::Recording;
use ppd_replayer::debugger::{Launch, ProgramOutput, Session};
use ppd_replayer::predicate::{self, Catalog};
use ppd_replayer::protocol::{Goal, Report, Setup};

const OPERATIONS: u64 = 1_000_000;
const SMOKE_OPERATIONS: u64 = 2_000;
const ROUNDS: usize = 5;

fn spawn(name: String, f: impl FnOnce() + Send + 'static) -> thread::JoinHandle<()> {
    thread::Builder::new()
        .name(name)
        .spawn(f)
        .expect("spawn a process")
}

fn ping_pong(messages: u64) {
    let rounds = messages / 8;
    let handles: Vec<_> = (0..4)
        .flat_map(|pair| {
            let (to_pong, from_ping) = mpsc::channel::<u64>();
            let (to_ping, from_pong) = mpsc::channel::<u64>();
            [
                spawn(format!("ping-{pair}"), move || {
                    let mut v = 0;
                    for round in 0..rounds {
                        if round == rounds / 2 {
                            ppd::mark!("half", v);
                        }
                        to_pong.send(v).expect("pong");
                        v = from_pong.recv().expect("pong");
                    }
                }),
                spawn(format!("pong-{pair}"), move || {
                    for _ in 0..rounds {
                        let v = from_ping.recv().expect("ping");
                        to_ping.send(v + 1).expect("ping");
                    }
                }),
            ]
        })
        .collect();
    for h in handles {
        h.join().expect("a process panicked");
    }
}

fn all_to_one(messages: u64) {
    let senders = 7;
    let (tx, rx) = mpsc::channel::<u64>();
    let sink = spawn("sink".into(), move || {
        let mut sum = 0u64;
        for n in 0..messages / senders * senders {
            if n == messages / 2 {
                ppd::mark!("half", sum);
            }
            sum = sum.wrapping_add(rx.recv().expect("a sender"));
        }
        std::hint::black_box(sum);
    });
    let sources: Vec<_> = (0..senders)
        .map(|i| {
            let tx = tx.clone();
            spawn(format!("source-{i}"), move || {
                for k in 0..messages / senders {
                    tx.send(k).expect("the sink");
                }
            })
        })
        .collect();
    drop(tx);
    for s in sources {
        s.join().expect("a source panicked");
    }
    sink.join().expect("the sink panicked");
}

/// `main` hands jobs to four workers through one crossbeam-style channel they all receive from,
/// and sums what they send back: `messages` messages in all, half of them jobs.
fn work_queue(messages: u64) {
    let jobs_total = messages / 2;
    let (jobs, jobs_rx) = ppd::channel::unbounded::<u64>();
    let (results, results_rx) = ppd::channel::unbounded::<u64>();
    let workers: Vec<_> = (0..4)
        .map(|i| {
            let jobs_rx = jobs_rx.clone();
            let results = results.clone();
            spawn(format!("worker-{i}"), move || {
                while let Ok(job) = jobs_rx.recv() {
                    results.send(job * 2).expect("main");
                }
            })
        })
        .collect();
    drop((jobs_rx, results));
    for job in 0..jobs_total {
        if job == jobs_total / 2 {
            ppd::mark!("half", job);
        }
        jobs.send(job).expect("a worker");
    }
    drop(jobs);
    std::hint::black_box(results_rx.iter().sum::<u64>());
    for w in workers {
        w.join().expect("a worker panicked");
    }
}

/// Four processes taking turns on one mutex, `ops` acquisitions in all.
fn lock_heavy(ops: u64) {
    let shared = Arc::new(Mutex::new(0u64));
    let each = ops / 4;
    let workers: Vec<_> = (0..4u64)
        .map(|i| {
            let shared = Arc::clone(&shared);
            spawn(format!("locker-{i}"), move || {
                for n in 0..each {
                    let mut g = shared.lock().expect("lock");
                    *g = g.wrapping_mul(31).wrapping_add(i + 1);
                    if i == 0 && n == each / 2 {
                        ppd::mark!("half", *g);
                    }
                }
            })
        })
        .collect();
    for w in workers {
        w.join().expect("a locker panicked");
    }
}

/// Four processes each doing a read-modify-write, a load and a store on two shared atomics,
/// `ops` accesses in all.
fn atomic_heavy(ops: u64) {
    let counter = Arc::new(AtomicU64::new(0));
    let last = Arc::new(AtomicU64::new(0));
    let each = ops / 12;
    let workers: Vec<_> = (0..4u64)
        .map(|i| {
            let counter = Arc::clone(&counter);
            let last = Arc::clone(&last);
            spawn(format!("atomic-{i}"), move || {
                let mut seen = 0u64;
                for n in 0..each {
                    if i == 0 && n == each / 2 {
                        ppd::mark!("half", seen);
                    }
                    let c = counter.fetch_add(1, Ordering::AcqRel);
                    seen = seen.wrapping_add(last.load(Ordering::Acquire));
                    last.store(c ^ i, Ordering::Release);
                }
                std::hint::black_box(seen);
            })
        })
        .collect();
    for w in workers {
        w.join().expect("an atomic worker panicked");
    }
}

/// A workload: its name, its body, and the process that marks `half`.
struct Workload {
    name: &'static str,
    run: fn(u64),
    marker: &'static str,
}

const WORKLOADS: [Workload; 5] = [
    Workload {
        name: "ping-pong",
        run: ping_pong,
        marker: "ping-0",
    },
    Workload {
        name: "all-to-one",
        run: all_to_one,
        marker: "sink",
    },
    Workload {
        name: "work-queue",
        run: work_queue,
        marker: "main",
    },
    Workload {
        name: "lock-heavy",
        run: lock_heavy,
        marker: "locker-0",
    },
    Workload {
        name: "atomic-heavy",
        run: atomic_heavy,
        marker: "atomic-0",
    },
];

fn record(workload: &str, operations: u64, dir: &Path) -> Duration {
    let exe = std::env::current_exe().expect("the benchmark knows its own path");
    let start = Instant::now();
    let status = Command::new(exe)
        .args(["child", workload, &operations.to_string()])
        .env("PPD_MODE", "record")
        .env("PPD_DIR", dir)
        .status()
        .expect("run the child");
    let took = start.elapsed();
    assert!(status.success(), "recording {workload}: {status}");
    took
}

/// Starts the recorded program under the global debugger, its output discarded.
fn start_replay(recording: &Recording, goal: Goal, verify: bool) -> Session {
    let launch = Launch {
        binary: None,
        output: ProgramOutput::Discard,
        env: Vec::new(),
    };
    Session::start(recording, &launch, &Setup { goal, verify }).expect("the replay starts")
}

/// Replays to the end with every value checked; its wall time.
fn replay(recording: &Recording) -> Duration {
    let start = Instant::now();
    let mut session = start_replay(recording, Goal::Run, true);
    loop {
        match session.next_report().expect("the replay reports") {
            Report::Finished { .. } => break,
            Report::Diverged {
                process,
                expected,
                happened,
                ..
            } => panic!("{process} diverged: expected {expected}, did {happened}"),
            Report::Stuck { .. } => panic!("the replay is stuck"),
            _ => {}
        }
    }
    let _ = session.quit();
    start.elapsed()
}

/// Replays to the first state where `process: mark half` holds: the wall time to the halt
/// report, and the halting latency the runtime reports.
fn halt(recording: &Recording, process: &str) -> (Duration, Duration) {
    let catalog = Catalog::of(recording).expect("the recording reads");
    let plan = predicate::parse(&format!("{process}: mark half"))
        .expect("the predicate parses")
        .resolve(&catalog)
        .expect("the predicate names what the recording has");
    let start = Instant::now();
    let mut session = start_replay(recording, Goal::Stop(plan), false);
    let latency = loop {
        match session.next_report().expect("the replay reports") {
            Report::Halted { latency_ns, .. } => {
                break Duration::from_nanos(latency_ns.expect("a breakpoint halt has a latency"));
            }
            Report::Finished { .. } => panic!("the replay ended without halting"),
            _ => {}
        }
    };
    let to_halt = start.elapsed();
    let _ = session.quit();
    (to_halt, latency)
}

fn median(mut xs: Vec<Duration>) -> Duration {
    xs.sort();
    xs[xs.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("child") && args.len() >= 3 {
        let Some(w) = WORKLOADS.iter().find(|w| w.name == args[1]) else {
            eprintln!("unknown workload {:?}", args[1]);
            return ExitCode::from(2);
        };
        let operations: u64 = args[2].parse().expect("a number of operations");
        return ppd::__private::main(|| (w.run)(operations));
    }
    let full = args.iter().any(|a| a == "--bench");
    let (operations, rounds) = if full {
        (OPERATIONS, ROUNDS)
    } else {
        (SMOKE_OPERATIONS, 1)
    };
    println!(
        "replay / record, {operations} operations (messages, lock acquisitions, atomic accesses), \
         median of {rounds} round(s); halting latency of `--stop 'PROCESS: mark half'`"
    );
    println!(
        "{:<12} {:>10} {:>10} {:>8} {:>12} {:>22}",
        "workload", "record ms", "replay ms", "ratio", "to halt ms", "halt latency µs (own)"
    );
    let mut figures = Vec::new();
    for w in &WORKLOADS {
        let mut recorded = Vec::new();
        let mut replayed = Vec::new();
        let mut to_halt = Vec::new();
        let mut latencies = Vec::new();
        for _ in 0..rounds {
            let dir = tempfile::tempdir().expect("a scratch directory");
            recorded.push(record(w.name, operations, dir.path()));
            let recording = Recording::open(dir.path()).expect("the recording opens");
            replayed.push(replay(&recording));
            let (wall, latency) = halt(&recording, w.marker);
            to_halt.push(wall);
            latencies.push(latency);
        }
        let (r, p, h) = (median(recorded), median(replayed), median(to_halt));
        figures.push((w.name, r, p, h));
        println!(
            "{:<12} {:>10.1} {:>10.1} {:>8.2} {:>12.1} {:>22.1}",
            w.name,
            ms(r),
            ms(p),
            p.as_secs_f64() / r.as_secs_f64(),
            ms(h),
            median(latencies).as_secs_f64() * 1e6
        );
    }
    println!(
        "record: whole recorded process, spawn to exit; replay: program start to end under the \
         global debugger, every logged value checked"
    );
    println!(
        "to halt: program start to the halt report, measured here; halt latency (own): the \
         replay runtime's own figure, from the event that made the predicate true to every \
         process held, not measured from outside"
    );
    print_goals(&figures);
    ExitCode::SUCCESS
}

/// Whether each workload's replay is within 1.5 times its recording, and its halt within twice
/// the replay of the prefix it halts after. The mark is half-way through the operations, so the
/// prefix's replay is taken as half the whole replay: an estimate from it, not a run of its own.
fn print_goals(figures: &[(&str, Duration, Duration, Duration)]) {
    let verdict = |met: bool| if met { "met" } else { "not met" };
    println!();
    println!("goals:");
    let replay: Vec<String> = figures
        .iter()
        .map(|(name, r, p, _)| format!("{name} {:.2}", p.as_secs_f64() / r.as_secs_f64()))
        .collect();
    let replay_met = figures
        .iter()
        .all(|(_, r, p, _)| p.as_secs_f64() <= 1.5 * r.as_secs_f64());
    println!(
        "  replay / record <= 1.5 for every workload: {} ({})",
        verdict(replay_met),
        replay.join(", ")
    );
    let halt: Vec<String> = figures
        .iter()
        .map(|(name, _, p, h)| format!("{name} {:.2}", h.as_secs_f64() / (p.as_secs_f64() / 2.0)))
        .collect();
    let halt_met = figures
        .iter()
        .all(|(_, _, p, h)| h.as_secs_f64() <= 2.0 * (p.as_secs_f64() / 2.0));
    println!(
        "  to halt / replay of the prefix (half the replay) <= 2: {} ({})",
        verdict(halt_met),
        halt.join(", ")
    );
}
