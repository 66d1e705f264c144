//! A random message-passing program for the replay property and brute-force tests.
//!
//! `random_program SEED WORKERS OPS`: the seed fixes the program's *text* — how many workers,
//! which sends, locks, atomic operations and non-blocking receives each performs, in which
//! order — while the run's interleaving stays nondeterministic: which message a receive gets,
//! whether a `try_recv` finds one, the order of lock acquisitions and atomic accesses. Every
//! value a worker observes is marked (`got`, `tried`, `saw`, `loaded`) and its digest printed,
//! so a replay must reproduce each worker's sequence of observations exactly.
//!
//! Every worker performs all its sends before it blocks on a receive, so no run deadlocks.

use std::process::ExitCode;
use std::sync::Arc;

use ppd::sync::Mutex;
use ppd::sync::atomic::{AtomicU64, Ordering};
use ppd::sync::mpsc::{Receiver, Sender, TryRecvError, channel};

#[derive(Debug, Clone, Copy)]
enum Op {
    Send { to: usize, value: u64 },
    TryRecv,
    Lock { push: u64 },
    Add { amount: u64 },
    Load,
    Swap { value: u64 },
    Pause,
}

fn script(rng: &mut fastrand::Rng, me: usize, workers: usize, ops: usize) -> Vec<Op> {
    (0..ops)
        .map(|_| match rng.u32(0..7) {
            0 | 1 if workers > 1 => {
                let mut to = rng.usize(0..workers - 1);
                if to >= me {
                    to += 1;
                }
                Op::Send {
                    to,
                    value: rng.u64(1..1000),
                }
            }
            2 => Op::TryRecv,
            3 => Op::Lock {
                push: rng.u64(1..100),
            },
            4 => Op::Add {
                amount: rng.u64(1..10),
            },
            5 => Op::Load,
            _ if rng.bool() => Op::Swap {
                value: rng.u64(1..50),
            },
            _ => Op::Pause,
        })
        .collect()
}

struct Worker {
    ops: Vec<Op>,
    quota: usize,
    outboxes: Vec<Sender<u64>>,
    inbox: Receiver<u64>,
    shared: Arc<Mutex<Vec<u64>>>,
    counter: Arc<AtomicU64>,
    extra: bool,
}

impl Worker {
    fn run(self) -> u64 {
        let mut digest: u64 = 17;
        let mut observe = |label: &'static str, value: u64| {
            ppd::mark(label, &value);
            digest = digest.wrapping_mul(31).wrapping_add(value);
        };
        let mut received = 0;
        if self.extra {
            let _ = self.inbox.try_recv();
        }
        for op in &self.ops {
            match *op {
                Op::Send { to, value } => {
                    self.outboxes[to].send(value).expect("receiver alive");
                }
                Op::TryRecv => match self.inbox.try_recv() {
                    Ok(v) => {
                        received += 1;
                        observe("got", v);
                    }
                    Err(TryRecvError::Empty) => observe("tried", 0),
                    Err(TryRecvError::Disconnected) => observe("tried", 1),
                },
                Op::Lock { push } => {
                    let mut v = self.shared.lock().expect("no panics");
                    let seen: u64 = v.iter().sum();
                    v.push(push);
                    drop(v);
                    observe("saw", seen);
                }
                Op::Add { amount } => {
                    let before = self.counter.fetch_add(amount, Ordering::SeqCst);
                    observe("loaded", before);
                }
                Op::Load => observe("loaded", self.counter.load(Ordering::Acquire)),
                Op::Swap { value } => observe("loaded", self.counter.swap(value, Ordering::AcqRel)),
                Op::Pause => std::thread::yield_now(),
            }
        }
        while received < self.quota {
            let v = self.inbox.recv().expect("every sender sends its messages");
            received += 1;
            observe("got", v);
        }
        digest
    }
}

#[ppd::main]
fn main() -> ExitCode {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("numeric arguments"))
        .collect();
    let [seed, workers, ops] = args[..] else {
        eprintln!("usage: random_program SEED WORKERS OPS");
        return ExitCode::from(2);
    };
    let workers = workers.max(1) as usize;
    let mut rng = fastrand::Rng::with_seed(seed);
    // Not logged, so a replay run with it set does something the log does not say.
    let extra = std::env::var_os("RANDOM_PROGRAM_EXTRA").is_some();
    let scripts: Vec<Vec<Op>> = (0..workers)
        .map(|me| script(&mut rng, me, workers, ops as usize))
        .collect();
    let mut quotas = vec![0; workers];
    for s in &scripts {
        for op in s {
            if let Op::Send { to, .. } = op {
                quotas[*to] += 1;
            }
        }
    }
    let (outboxes, inboxes): (Vec<_>, Vec<_>) = (0..workers).map(|_| channel::<u64>()).unzip();
    let shared = Arc::new(Mutex::named("shared", Vec::new()));
    let counter = Arc::new(AtomicU64::named("counter", 0));
    let handles: Vec<_> = scripts
        .into_iter()
        .zip(inboxes)
        .enumerate()
        .map(|(me, (ops, inbox))| {
            let worker = Worker {
                ops,
                quota: quotas[me],
                outboxes: outboxes.clone(),
                inbox,
                shared: Arc::clone(&shared),
                counter: Arc::clone(&counter),
                extra: extra && me == 0,
            };
            ppd::thread::Builder::new()
                .name(format!("w{me}"))
                .spawn(move || worker.run())
                .expect("spawn")
        })
        .collect();
    drop(outboxes);
    for (me, h) in handles.into_iter().enumerate() {
        println!("w{me}: {:016x}", h.join().expect("worker"));
    }
    ExitCode::SUCCESS
}
