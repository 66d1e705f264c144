//! Synthetic executions: random but consistent traces, for benchmarks and property tests.
//!
//! A small scheduler runs `processes` simulated processes (process 0 spawns the others and
//! joins them at the end) over shared atomics, mutexes, channels and semaphores, and logs
//! what each does exactly as the recorder would: versions in memory order, per-channel
//! sequence numbers, `Blocked` before a contended lock. The same seed gives the same trace.

use ppd_formats::event::{AtomicOp, MemOrdering, ObjectKind};
use ppd_formats::{ObjectId, ProcessId};

use crate::trace::{ObjIdx, Op, SiteId, Trace, TraceBuilder};

/// What a synthetic execution looks like.
#[derive(Clone, Debug, PartialEq)]
pub struct Shape {
    /// Processes, including the spawning process 0 (at least 2).
    pub processes: u32,
    /// Events to generate, roughly.
    pub events: u64,
    /// Shared atomics.
    pub atomics: u32,
    /// Mutexes.
    pub mutexes: u32,
    /// Channels (each has one receiving process).
    pub channels: u32,
    /// Semaphores.
    pub semaphores: u32,
    /// Relative weights of: relaxed atomic access, synchronizing atomic access, lock section,
    /// send, receive, semaphore operation, local event.
    pub weights: [u32; 7],
    /// Distinct source sites per kind of operation.
    pub sites: u32,
    /// Race-free discipline: the first half of the atomics is data guarded by the mutexes
    /// (atomic *i* by mutex *i* mod mutexes, touched with relaxed accesses inside its lock
    /// sections only); the second half is touched only by synchronizing accesses.
    pub guarded: bool,
}

impl Shape {
    /// Every kind of operation.
    pub fn mixed(processes: u32, events: u64) -> Shape {
        Shape {
            processes: processes.max(2),
            events,
            atomics: 8,
            mutexes: 3,
            channels: 3,
            semaphores: 2,
            weights: [10, 30, 15, 10, 10, 5, 20],
            sites: 8,
            guarded: false,
        }
    }

    /// Atomic accesses only, `relaxed_percent` of them relaxed loads and stores (data
    /// accesses), the rest acquire/release accesses and read-modify-writes.
    pub fn atomics(processes: u32, events: u64, variables: u32, relaxed_percent: u32) -> Shape {
        Shape {
            processes: processes.max(2),
            events,
            atomics: variables.max(1),
            mutexes: 0,
            channels: 0,
            semaphores: 0,
            weights: [
                relaxed_percent,
                100 - relaxed_percent.min(100),
                0,
                0,
                0,
                0,
                0,
            ],
            sites: 16,
            guarded: false,
        }
    }

    /// A race-free program: relaxed data accesses inside the lock sections of the mutex that
    /// guards them, synchronizing accesses (acquire/release, read-modify-writes) on other
    /// atomics, messages on channels with one sender each.
    pub fn guarded(processes: u32, events: u64, variables: u32) -> Shape {
        Shape {
            processes: processes.max(2),
            events,
            atomics: variables.max(2),
            mutexes: (variables / 4).max(1),
            channels: 0,
            semaphores: 0,
            weights: [0, 20, 70, 0, 0, 0, 10],
            sites: 16,
            guarded: true,
        }
    }
}

/// xorshift64*: small, fast, reproducible.
#[derive(Debug, Clone)]
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next() % n }
    }

    fn pick(&mut self, weights: &[u32]) -> usize {
        let total: u64 = weights.iter().map(|&w| u64::from(w)).sum();
        let mut r = self.below(total.max(1));
        for (i, &w) in weights.iter().enumerate() {
            if r < u64::from(w) {
                return i;
            }
            r -= u64::from(w);
        }
        0
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum State {
    Idle,
    /// Inside a lock section: `left` accesses to go before the unlock.
    Section {
        mutex: u32,
        left: u32,
    },
    /// Blocked on a mutex.
    WaitingLock {
        mutex: u32,
    },
    Done,
}

struct Sim {
    b: TraceBuilder,
    rng: Rng,
    atomics: Vec<ObjIdx>,
    mutexes: Vec<ObjIdx>,
    channels: Vec<ObjIdx>,
    semaphores: Vec<ObjIdx>,
    versions: Vec<u64>,
    last: Vec<Option<ProcessId>>,
    seqs: Vec<u64>,
    queues: Vec<std::collections::VecDeque<(u64, ProcessId)>>,
    receivers: Vec<u32>,
    holder: Vec<Option<u32>>,
    counts: Vec<u64>,
    sites: Vec<SiteId>,
    sites_per_kind: u32,
    guarded: bool,
}

impl Sim {
    fn site(&mut self, kind: u32) -> SiteId {
        let i = kind * self.sites_per_kind + self.rng.below(u64::from(self.sites_per_kind)) as u32;
        self.sites[i as usize]
    }

    fn versioned(&mut self, object: ObjIdx) -> (u64, Option<ProcessId>) {
        let o = object as usize;
        self.versions[o] += 1;
        (self.versions[o], self.last[o])
    }

    /// An access to a random atomic: in guarded mode, a synchronizing access touches only the
    /// synchronization half, a relaxed one only the atomics the held mutex guards.
    fn atomic(&mut self, p: u32, relaxed: bool, held: Option<u32>) {
        let n = self.atomics.len() as u64;
        let i = match (self.guarded, held) {
            (false, _) => self.rng.below(n),
            (true, Some(m)) if relaxed => {
                let mutexes = self.mutexes.len() as u64;
                let data = (n / 2).max(1);
                let slots = data.div_ceil(mutexes).max(1);
                let i = u64::from(m) + mutexes * self.rng.below(slots);
                if i < data { i } else { u64::from(m) % data }
            }
            (true, _) => n / 2 + self.rng.below(n - n / 2),
        } as usize;
        let object = self.atomics[i];
        let (op, ordering, kind) = if relaxed {
            if self.rng.below(2) == 0 {
                (AtomicOp::Load, MemOrdering::Relaxed, 0)
            } else {
                (AtomicOp::Store, MemOrdering::Relaxed, 1)
            }
        } else {
            match self.rng.below(4) {
                0 => (AtomicOp::Load, MemOrdering::Acquire, 2),
                1 => (AtomicOp::Store, MemOrdering::Release, 3),
                2 => (AtomicOp::Rmw, MemOrdering::SeqCst, 4),
                _ => (AtomicOp::Rmw, MemOrdering::Relaxed, 4),
            }
        };
        let (version, prev) = self.versioned(object);
        self.last[object as usize] = Some(ProcessId(p));
        let site = self.site(kind);
        self.b.push(
            p,
            Op::Atomic {
                object,
                version,
                prev,
                op,
                ordering,
            },
            site,
        );
    }

    fn lock(&mut self, p: u32, m: u32) {
        let object = self.mutexes[m as usize];
        let (version, prev) = self.versioned(object);
        self.last[object as usize] = Some(ProcessId(p));
        self.holder[m as usize] = Some(p);
        let site = self.site(5);
        self.b.push(
            p,
            Op::Lock {
                object,
                version,
                prev,
            },
            site,
        );
    }
}

/// Generates an execution of the given shape.
pub fn execution(shape: &Shape, seed: u64) -> Trace {
    let n = shape.processes.max(2);
    let mut b = Trace::builder();
    let main = b.add_process(ProcessId(0), "main", None);
    let mut ordinal = 0u32;
    let mut make = |b: &mut TraceBuilder, kind: ObjectKind, init: u64, count: u32, label: &str| {
        (0..count)
            .map(|i| {
                let id = ObjectId::new(ProcessId(0), ordinal);
                ordinal += 1;
                let o = b.define_object(id, kind, init, Some(&format!("{label}{i}")));
                b.push(main, Op::Create { object: o }, crate::trace::NO_SITE);
                o
            })
            .collect::<Vec<_>>()
    };
    let atomics = make(&mut b, ObjectKind::Atomic, 0, shape.atomics, "a");
    let mutexes = make(&mut b, ObjectKind::Mutex, 0, shape.mutexes, "m");
    let channels = make(&mut b, ObjectKind::Channel, 0, shape.channels, "c");
    let semaphores = make(&mut b, ObjectKind::Semaphore, 1, shape.semaphores, "s");
    let per_kind = shape.sites.max(1);
    let sites: Vec<SiteId> = (0..10 * per_kind)
        .map(|i| b.site("synth.rs", i + 1, 1))
        .collect();
    for p in 1..n {
        b.add_process(ProcessId(p), &format!("worker-{p}"), Some(ProcessId(0)));
    }
    let objects = b.object_count();
    let mut sim = Sim {
        b,
        rng: Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1),
        receivers: (0..shape.channels).map(|c| 1 + c % (n - 1)).collect(),
        queues: vec![Default::default(); shape.channels as usize],
        seqs: vec![0; shape.channels as usize],
        holder: vec![None; shape.mutexes as usize],
        counts: vec![1; shape.semaphores as usize],
        versions: vec![0; objects],
        last: vec![None; objects],
        atomics,
        mutexes,
        channels,
        semaphores,
        sites,
        sites_per_kind: per_kind,
        guarded: shape.guarded,
    };
    for p in 1..n {
        sim.b.push(
            main,
            Op::Spawn {
                child: ProcessId(p),
            },
            crate::trace::NO_SITE,
        );
        sim.b.push(
            p,
            Op::Start {
                parent: Some(ProcessId(0)),
            },
            crate::trace::NO_SITE,
        );
    }
    let budget = shape.events / u64::from(n - 1) + 1;
    let mut states = vec![State::Idle; n as usize];
    let mut done = vec![0u64; n as usize];
    let mut running: Vec<u32> = (1..n).collect();
    while !running.is_empty() {
        let i = sim.rng.below(running.len() as u64) as usize;
        let p = running[i];
        step(
            &mut sim,
            shape,
            p,
            &mut states[p as usize],
            &mut done[p as usize],
            budget,
        );
        if states[p as usize] == State::Done {
            running.swap_remove(i);
        }
        // Processes blocked on a lock take it as soon as it is free.
        for q in 1..n {
            if let State::WaitingLock { mutex } = states[q as usize]
                && sim.holder[mutex as usize].is_none()
            {
                sim.lock(q, mutex);
                states[q as usize] = State::Section {
                    mutex,
                    left: 1 + sim.rng.below(3) as u32,
                };
            }
        }
    }
    for p in 1..n {
        sim.b.push(
            main,
            Op::Join {
                child: ProcessId(p),
            },
            crate::trace::NO_SITE,
        );
    }
    sim.b.push(main, Op::Exit, crate::trace::NO_SITE);
    sim.b.build()
}

fn step(sim: &mut Sim, shape: &Shape, p: u32, state: &mut State, done: &mut u64, budget: u64) {
    match *state {
        State::Done | State::WaitingLock { .. } => {}
        State::Section { mutex, left } => {
            if left == 0 {
                let object = sim.mutexes[mutex as usize];
                sim.holder[mutex as usize] = None;
                let site = sim.site(6);
                sim.b.push(p, Op::Unlock { object }, site);
                *state = State::Idle;
            } else {
                let relaxed = sim.guarded || sim.rng.below(2) == 0;
                sim.atomic(p, relaxed, Some(mutex));
                *state = State::Section {
                    mutex,
                    left: left - 1,
                };
            }
            *done += 1;
        }
        State::Idle => {
            if *done >= budget {
                sim.b.push(p, Op::Exit, crate::trace::NO_SITE);
                *state = State::Done;
                return;
            }
            let mut weights = shape.weights;
            if sim.mutexes.is_empty() {
                weights[2] = 0;
            }
            if sim.channels.is_empty() {
                weights[3] = 0;
                weights[4] = 0;
            }
            if sim.semaphores.is_empty() {
                weights[5] = 0;
            }
            if sim.atomics.is_empty() {
                weights[0] = 0;
                weights[1] = 0;
            }
            match sim.rng.pick(&weights) {
                0 => sim.atomic(p, true, None),
                1 => sim.atomic(p, false, None),
                2 => {
                    let m = sim.rng.below(sim.mutexes.len() as u64) as u32;
                    if sim.holder[m as usize].is_none() {
                        sim.lock(p, m);
                        *state = State::Section {
                            mutex: m,
                            left: 1 + sim.rng.below(3) as u32,
                        };
                    } else {
                        let object = sim.mutexes[m as usize];
                        let site = sim.site(5);
                        sim.b.push(p, Op::Blocked { object }, site);
                        *state = State::WaitingLock { mutex: m };
                    }
                }
                3 => {
                    let c = sim.rng.below(sim.channels.len() as u64) as usize;
                    if sim.receivers[c] != p {
                        sim.seqs[c] += 1;
                        let seq = sim.seqs[c];
                        sim.queues[c].push_back((seq, ProcessId(p)));
                        let site = sim.site(7);
                        sim.b.push(
                            p,
                            Op::Send {
                                channel: sim.channels[c],
                                seq,
                            },
                            site,
                        );
                    }
                }
                4 => {
                    let mine: Vec<usize> = (0..sim.channels.len())
                        .filter(|&c| sim.receivers[c] == p && !sim.queues[c].is_empty())
                        .collect();
                    if let Some(&c) = mine.first() {
                        let (seq, sender) = sim.queues[c].pop_front().expect("non-empty");
                        let site = sim.site(8);
                        sim.b.push(
                            p,
                            Op::Recv {
                                channel: sim.channels[c],
                                sender,
                                seq,
                            },
                            site,
                        );
                    }
                }
                5 => {
                    let s = sim.rng.below(sim.semaphores.len() as u64) as usize;
                    let object = sim.semaphores[s];
                    let release = sim.counts[s] == 0 || sim.rng.below(2) == 0;
                    let (version, prev) = sim.versioned(object);
                    sim.last[object as usize] = Some(ProcessId(p));
                    let site = sim.site(9);
                    if release {
                        sim.counts[s] += 1;
                        sim.b.push(
                            p,
                            Op::SemRelease {
                                object,
                                version,
                                prev,
                            },
                            site,
                        );
                    } else {
                        sim.counts[s] -= 1;
                        sim.b.push(
                            p,
                            Op::SemAcquire {
                                object,
                                version,
                                prev,
                            },
                            site,
                        );
                    }
                }
                _ => {
                    sim.b.push(p, Op::Clock, crate::trace::NO_SITE);
                }
            }
            *done += 1;
        }
    }
}
