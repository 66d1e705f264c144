//! An independent oracle for the replay tests: the dependencies of a recording in the replay
//! order (`ppd_formats::order`), read straight from its logs, and the lattice of its consistent
//! global states.
//!
//! It shares no code with the replayer's controllers or the edge table they use, so a bug there
//! is not repeated here.

use std::collections::HashMap;
use std::path::Path;

use ppd_formats::{Event, ObjectId, ProcessId, Recording};

/// Every event of every process, and what each event depends on.
#[derive(Debug)]
pub struct Lattice {
    /// Name of each process, indexed by process id.
    pub names: Vec<String>,
    /// Events of each process, indexed by process id.
    pub events: Vec<Vec<Event>>,
    /// For each process and event: the `(process, event index)` that must happen before it.
    pub deps: Vec<Vec<Vec<(usize, usize)>>>,
}

impl Lattice {
    /// Reads a recording.
    pub fn load(dir: &Path) -> Lattice {
        let recording = Recording::open(dir).expect("a recording");
        let n = recording
            .processes()
            .iter()
            .map(|p| p.id.index() + 1)
            .max()
            .unwrap_or(0);
        let mut events = vec![Vec::new(); n];
        let mut names = vec![String::new(); n];
        for p in recording.processes() {
            names[p.id.index()] = p.name.clone();
            let reader = recording.open_log(p).expect("a log");
            events[p.id.index()] = reader.events().map(|e| e.expect("readable").1).collect();
        }
        let mut sends = HashMap::new();
        let mut spawns = HashMap::new();
        let mut exits = HashMap::new();
        // Position that makes version v of an object available to the next access: the access
        // itself, or for a mutex the unlock that follows the acquisition.
        let mut released: HashMap<(ObjectId, u64), (usize, usize)> = HashMap::new();
        for (i, log) in events.iter().enumerate() {
            let mut held: HashMap<ObjectId, u64> = HashMap::new();
            for (k, e) in log.iter().enumerate() {
                match e {
                    Event::Send { channel, seq, .. } => {
                        sends.insert((*channel, *seq), (i, k));
                    }
                    Event::Spawn { child, .. } => {
                        spawns.insert(*child, (i, k));
                    }
                    Event::Exit | Event::Panic { .. } => {
                        exits.insert(ProcessId(i as u32), (i, k));
                    }
                    Event::Lock {
                        object, version, ..
                    } => {
                        held.insert(*object, *version);
                    }
                    Event::Unlock { object, .. } => {
                        if let Some(v) = held.remove(object) {
                            released.insert((*object, v), (i, k));
                        }
                    }
                    Event::SemAcquire {
                        object, version, ..
                    }
                    | Event::SemRelease {
                        object, version, ..
                    }
                    | Event::Atomic {
                        object, version, ..
                    }
                    // A reader-writer lock versions its releases too: each operation after
                    // the one before it.
                    | Event::RwAcquire {
                        object, version, ..
                    }
                    | Event::RwRelease {
                        object, version, ..
                    } => {
                        released.insert((*object, *version), (i, k));
                    }
                    _ => {}
                }
            }
        }
        let deps = events
            .iter()
            .enumerate()
            .map(|(i, log)| {
                log.iter()
                    .map(|e| {
                        let dep = match e {
                            Event::Recv { channel, seq, .. } => {
                                sends.get(&(*channel, *seq)).copied()
                            }
                            Event::Start { .. } => spawns.get(&ProcessId(i as u32)).copied(),
                            Event::Join { child, .. } => exits.get(child).copied(),
                            Event::Lock {
                                object, version, ..
                            }
                            | Event::SemAcquire {
                                object, version, ..
                            }
                            | Event::SemRelease {
                                object, version, ..
                            }
                            | Event::Atomic {
                                object, version, ..
                            }
                            | Event::RwAcquire {
                                object, version, ..
                            }
                            | Event::RwRelease {
                                object, version, ..
                            } if *version > 1 => released.get(&(*object, version - 1)).copied(),
                            _ => None,
                        };
                        dep.into_iter().collect()
                    })
                    .collect()
            })
            .collect();
        Lattice {
            names,
            events,
            deps,
        }
    }

    /// Whether the cut (events executed by each process) has no event before it whose
    /// dependency is after it: no receive without its send.
    pub fn consistent(&self, cut: &[u64]) -> bool {
        self.deps.iter().enumerate().all(|(i, deps)| {
            deps.iter()
                .take(cut[i] as usize)
                .flatten()
                .all(|&(j, k)| (k as u64) < cut[j])
        })
    }

    /// Every consistent cut.
    pub fn consistent_cuts(&self) -> Vec<Vec<u64>> {
        let n = self.events.len();
        let mut out = Vec::new();
        let mut cut = vec![0u64; n];
        loop {
            if self.consistent(&cut) {
                out.push(cut.clone());
            }
            // Next cut in mixed-radix order.
            let mut i = 0;
            loop {
                if i == n {
                    return out;
                }
                if cut[i] < self.events[i].len() as u64 {
                    cut[i] += 1;
                    break;
                }
                cut[i] = 0;
                i += 1;
            }
        }
    }

    /// Every event's vector clock: how many events of each process are in its causal past,
    /// itself included. The least consistent cut containing an event is its clock.
    pub fn clocks(&self) -> Vec<Vec<Vec<u64>>> {
        let n = self.events.len();
        let mut clocks: Vec<Vec<Vec<u64>>> = vec![Vec::new(); n];
        loop {
            let mut progress = false;
            for i in 0..n {
                while clocks[i].len() < self.events[i].len() {
                    let k = clocks[i].len();
                    let deps = &self.deps[i][k];
                    if deps.iter().any(|&(j, d)| clocks[j].len() <= d) {
                        break;
                    }
                    let mut clock = match k {
                        0 => vec![0; n],
                        _ => clocks[i][k - 1].clone(),
                    };
                    for &(j, d) in deps {
                        for (a, b) in clock.iter_mut().zip(&clocks[j][d]) {
                            *a = (*a).max(*b);
                        }
                    }
                    clock[i] = k as u64 + 1;
                    clocks[i].push(clock);
                    progress = true;
                }
            }
            if (0..n).all(|i| clocks[i].len() == self.events[i].len()) {
                return clocks;
            }
            assert!(progress, "the logs' dependencies form a cycle");
        }
    }

    /// The least consistent cut in which each process `p` of `fixed` has executed exactly `c`
    /// events, for each `(p, c)`; `None` when no consistent cut does.
    pub fn least_cut_through(
        &self,
        clocks: &[Vec<Vec<u64>>],
        fixed: &[(usize, u64)],
    ) -> Option<Vec<u64>> {
        let mut cut = vec![0; self.events.len()];
        for &(p, c) in fixed {
            if let Some(k) = c.checked_sub(1) {
                for (a, b) in cut.iter_mut().zip(&clocks[p][k as usize]) {
                    *a = (*a).max(*b);
                }
            }
        }
        fixed.iter().all(|&(p, c)| cut[p] == c).then_some(cut)
    }

    /// The id of the process called `name`.
    pub fn process(&self, name: &str) -> usize {
        self.names
            .iter()
            .position(|n| n == name)
            .unwrap_or_else(|| panic!("no process {name} in {:?}", self.names))
    }

    /// The minimal cuts among `cuts` under the componentwise order.
    pub fn minimal(cuts: &[Vec<u64>]) -> Vec<Vec<u64>> {
        let leq = |a: &[u64], b: &[u64]| a.iter().zip(b).all(|(x, y)| x <= y);
        cuts.iter()
            .filter(|c| !cuts.iter().any(|o| o != *c && leq(o, c)))
            .cloned()
            .collect()
    }
}
