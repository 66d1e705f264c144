//! A random program of atomic accesses for the differential test of `ppd races`.
//!
//! `random_atomics SEED`: the seed fixes the program's *text* — how many workers, and for each
//! a script of atomic accesses (loads, stores, read-modify-writes and compare-exchanges at every
//! memory ordering, failing ones with every failure ordering), accesses inside a mutex, sends,
//! receives and pauses — on two shared atomics. Each kind of access with each ordering is made
//! at its own source line ([`access`]), so the sites of a race say which accesses raced.
//!
//! Messages only go from a worker to a later one, and a worker receives only as many messages
//! as the earlier workers' scripts send it, so no run deadlocks.

use std::process::ExitCode;
use std::sync::Arc;

use ppd::sync::Mutex;
use ppd::sync::atomic::{AtomicU64, Ordering, Ordering::*};
use ppd::sync::mpsc::{Receiver, Sender, channel};

/// How many access sites [`access`] has.
const SITES: usize = 30;
/// The sites of relaxed loads and stores: the data accesses, drawn more often so races occur.
const DATA_SITES: [usize; 4] = [0, 1, 4, 5];
/// How many shared atomics.
const ATOMICS: usize = 2;

#[derive(Debug, Clone, Copy)]
enum Op {
    /// Access atomic `var` at site `site` with `value`.
    Access {
        site: usize,
        var: usize,
        value: u64,
    },
    /// The same, holding the mutex.
    Locked {
        site: usize,
        var: usize,
        value: u64,
    },
    Send {
        to: usize,
    },
    Recv,
    Pause,
}

fn script(rng: &mut fastrand::Rng, me: usize, workers: usize, inbound: usize) -> Vec<Op> {
    let mut receivable = inbound;
    let ops = rng.usize(8..16);
    let access = |rng: &mut fastrand::Rng| {
        let site = if rng.u32(0..5) < 2 {
            DATA_SITES[rng.usize(0..DATA_SITES.len())]
        } else {
            rng.usize(0..SITES)
        };
        (site, rng.usize(0..ATOMICS), rng.u64(0..4))
    };
    (0..ops)
        .map(|_| match rng.u32(0..10) {
            0 if me + 1 < workers => Op::Send {
                to: rng.usize(me + 1..workers),
            },
            1 if receivable > 0 => {
                receivable -= 1;
                Op::Recv
            }
            2 => {
                let (site, var, value) = access(rng);
                Op::Locked { site, var, value }
            }
            3 => Op::Pause,
            _ => {
                let (site, var, value) = access(rng);
                Op::Access { site, var, value }
            }
        })
        .collect()
}

#[track_caller]
fn store(x: &AtomicU64, value: u64, order: Ordering) -> u64 {
    x.store(value, order);
    value
}

#[track_caller]
fn cas(x: &AtomicU64, value: u64, success: Ordering, failure: Ordering) -> u64 {
    x.compare_exchange(value % 2, value, success, failure)
        .unwrap_or_else(|seen| seen)
}

/// Access `x` at site `site`: one line per kind of access and ordering.
fn access(site: usize, x: &AtomicU64, value: u64) -> u64 {
    match site {
        0 => x.load(Relaxed),
        1 => x.load(Relaxed),
        2 => x.load(Acquire),
        3 => x.load(SeqCst),
        4 => store(x, value, Relaxed),
        5 => store(x, value, Relaxed),
        6 => store(x, value, Release),
        7 => store(x, value, SeqCst),
        8 => x.fetch_xor(value, Relaxed),
        9 => x.fetch_xor(value, Release),
        10 => x.fetch_xor(value, Acquire),
        11 => x.fetch_xor(value, AcqRel),
        12 => x.fetch_xor(value, SeqCst),
        13 => x.swap(value, Relaxed),
        14 => x.swap(value, AcqRel),
        15 => cas(x, value, Relaxed, Relaxed),
        16 => cas(x, value, Relaxed, Acquire),
        17 => cas(x, value, Relaxed, SeqCst),
        18 => cas(x, value, Release, Relaxed),
        19 => cas(x, value, Release, Acquire),
        20 => cas(x, value, Release, SeqCst),
        21 => cas(x, value, Acquire, Relaxed),
        22 => cas(x, value, Acquire, Acquire),
        23 => cas(x, value, Acquire, SeqCst),
        24 => cas(x, value, AcqRel, Relaxed),
        25 => cas(x, value, AcqRel, Acquire),
        26 => cas(x, value, AcqRel, SeqCst),
        27 => cas(x, value, SeqCst, Relaxed),
        28 => cas(x, value, SeqCst, Acquire),
        _ => cas(x, value, SeqCst, SeqCst),
    }
}

struct Worker {
    ops: Vec<Op>,
    outboxes: Vec<Sender<u64>>,
    inbox: Receiver<u64>,
    gate: Arc<Mutex<u64>>,
    atomics: Arc<Vec<AtomicU64>>,
}

impl Worker {
    fn run(self) -> u64 {
        let mut digest: u64 = 17;
        for op in &self.ops {
            let seen = match *op {
                Op::Access { site, var, value } => access(site, &self.atomics[var], value),
                Op::Locked { site, var, value } => {
                    let mut held = self.gate.lock().expect("no panics");
                    *held += 1;
                    access(site, &self.atomics[var], value)
                }
                Op::Send { to } => {
                    // A worker that has finished has dropped its inbox: the message is lost.
                    u64::from(self.outboxes[to].send(digest).is_ok())
                }
                Op::Recv => self.inbox.recv().expect("an earlier worker sends it"),
                Op::Pause => {
                    std::thread::yield_now();
                    0
                }
            };
            digest = digest.wrapping_mul(31).wrapping_add(seen);
        }
        digest
    }
}

#[ppd::main]
fn main() -> ExitCode {
    let Some(seed) = std::env::args().nth(1).and_then(|a| a.parse::<u64>().ok()) else {
        eprintln!("usage: random_atomics SEED");
        return ExitCode::from(2);
    };
    let mut rng = fastrand::Rng::with_seed(seed);
    let workers = rng.usize(3..5);
    let mut inbound = vec![0; workers];
    let mut scripts = Vec::new();
    for me in 0..workers {
        let ops = script(&mut rng, me, workers, inbound[me]);
        for op in &ops {
            if let Op::Send { to } = op {
                inbound[*to] += 1;
            }
        }
        scripts.push(ops);
    }
    let (outboxes, inboxes): (Vec<_>, Vec<_>) = (0..workers).map(|_| channel::<u64>()).unzip();
    let gate = Arc::new(Mutex::named("gate", 0));
    let atomics = Arc::new(vec![AtomicU64::named("x0", 0), AtomicU64::named("x1", 0)]);
    let handles: Vec<_> = scripts
        .into_iter()
        .zip(inboxes)
        .enumerate()
        .map(|(me, (ops, inbox))| {
            let worker = Worker {
                ops,
                outboxes: outboxes.clone(),
                inbox,
                gate: Arc::clone(&gate),
                atomics: Arc::clone(&atomics),
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
