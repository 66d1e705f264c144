//! Potential deadlocks: cycles in the lock-order graph of a run, whether or not it deadlocked.
//!
//! This is Goodlock (Havelund, "Using runtime analysis to guide model checking of Java
//! programs", SPIN 2000) with the gate-lock refinement of Bensalem & Havelund ("Dynamic
//! deadlock analysis of multi-threaded programs", PADTAD 2005). Every `Lock` of a mutex taken
//! while the process already holds other mutexes adds an edge *held → acquired* to the graph,
//! labelled with the process and the whole set of mutexes it held (its *gates*). A cycle of
//! edges is a potential deadlock when its edges come from pairwise different processes (a
//! process cannot wait for itself) and their gate sets are pairwise disjoint: a mutex held
//! across two of the acquisitions serializes them, so they cannot be in progress together
//! (Bensalem & Havelund's guarded cycles).
//!
//! Where ppd goes beyond the papers: each edge keeps its two acquisitions (the held mutex's
//! `Lock` and the acquiring `Lock`) so a report names the process and `file:line` of every
//! step; cycles are deduplicated by their source sites, so many workers running the same code
//! give one report. Where it stays short of Bensalem & Havelund: their segmentation by thread
//! start and join (a cycle whose edges happened-before each other cannot deadlock) is not
//! applied. Only acquisitions that completed count: a `Lock` that never returned is a real
//! deadlock, which [`crate::deadlock`] reports. An acquisition by `try_lock` (its `Lock` follows
//! an `Outcome` that says so) adds no edge: it never waits, so it cannot close a cycle.

use std::collections::{BTreeSet, HashMap, HashSet};

use ppd_formats::event::{Class, Outcome, RwMode};

use crate::trace::{EventRef, EventStore, ObjIdx, Op, SiteId, Trace};

/// One edge of the lock-order graph: a process held `held` while it acquired `acquired`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LockOrderEdge {
    /// The process.
    pub process: u32,
    /// The mutex it held.
    pub held: ObjIdx,
    /// Its `Lock` of `held`.
    pub held_at: EventRef,
    /// The mutex it acquired.
    pub acquired: ObjIdx,
    /// Its `Lock` of `acquired`.
    pub acquired_at: EventRef,
    /// Every mutex it held while acquiring, sorted.
    pub gates: Vec<ObjIdx>,
}

/// A potential deadlock: edges each acquiring the mutex the next one holds, the last acquiring
/// the mutex the first holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PotentialDeadlock {
    /// The cycle, starting at the edge that holds its lowest-numbered mutex.
    pub edges: Vec<LockOrderEdge>,
}

/// What the analysis did, for benchmarks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LockOrderStats {
    /// `Lock` events seen.
    pub acquisitions: u64,
    /// Distinct edges of the graph.
    pub edges: u64,
}

/// The key that makes two edges the same: the same step taken by the same process at the same
/// sites under the same gates.
type EdgeKey = (u32, ObjIdx, ObjIdx, SiteId, SiteId, Vec<ObjIdx>);

/// The lock-order graph of `trace`, its distinct edges in the order first seen.
pub(crate) fn lock_order_edges<S: EventStore>(
    trace: &Trace<S>,
) -> (Vec<LockOrderEdge>, LockOrderStats) {
    let mut stats = LockOrderStats::default();
    let mut seen: HashSet<EdgeKey> = HashSet::new();
    let mut edges = Vec::new();
    for (p, proc) in trace.processes().iter().enumerate() {
        let p = p as u32;
        let mut held: Vec<(ObjIdx, EventRef)> = Vec::new();
        // The mutex whose next acquisition is a `try_lock`'s.
        let mut tried: Option<ObjIdx> = None;
        for (i, ev) in proc.events.iter().enumerate() {
            match ev.op.kind().class() {
                Class::Lock => match ev.op {
                    Op::Lock { object, .. } | Op::RwAcquire { object, .. } => {
                        stats.acquisitions += 1;
                        let at = EventRef::new(p, i as u32);
                        // A try never waits: it is no step of a deadlock, though what it holds is.
                        // Nor is a read of a reader-writer lock taken here: it waits only for a
                        // writer, and two readers never block each other, so a cycle through it
                        // is not reported (what it holds still gates others' steps).
                        let reads = matches!(
                            ev.op,
                            Op::RwAcquire {
                                mode: RwMode::Read,
                                ..
                            }
                        );
                        let waits = tried.take() != Some(object) && !reads;
                        if waits && !held.is_empty() {
                            let gates: Vec<ObjIdx> = held
                                .iter()
                                .map(|&(m, _)| m)
                                .collect::<BTreeSet<_>>()
                                .into_iter()
                                .collect();
                            for &(m, m_at) in &held {
                                if m == object {
                                    continue;
                                }
                                let key =
                                    (p, m, object, trace.event(m_at).site, ev.site, gates.clone());
                                if seen.insert(key) {
                                    edges.push(LockOrderEdge {
                                        process: p,
                                        held: m,
                                        held_at: m_at,
                                        acquired: object,
                                        acquired_at: at,
                                        gates: gates.clone(),
                                    });
                                }
                            }
                        }
                        held.push((object, at));
                    }
                    Op::Unlock { object } | Op::RwRelease { object, .. } => {
                        if let Some(k) = held.iter().rposition(|&(m, _)| m == object) {
                            held.remove(k);
                        }
                    }
                    _ => {}
                },
                Class::Attempt => {
                    if let Op::Outcome { object, outcome } = ev.op {
                        tried = (outcome == Outcome::Acquired).then_some(object);
                    }
                }
                Class::Lifecycle
                | Class::Create
                | Class::Message
                | Class::Semaphore
                | Class::Atomic
                | Class::Input
                | Class::Eblock
                | Class::Mark
                | Class::Wait
                | Class::Socket => {}
            }
        }
    }
    stats.edges = edges.len() as u64;
    (edges, stats)
}

/// The potential deadlocks of `trace`, and what finding them took.
pub fn potential_deadlocks<S: EventStore>(
    trace: &Trace<S>,
) -> (Vec<PotentialDeadlock>, LockOrderStats) {
    let (edges, stats) = lock_order_edges(trace);
    let mut from: HashMap<ObjIdx, Vec<usize>> = HashMap::new();
    for (i, e) in edges.iter().enumerate() {
        from.entry(e.held).or_default().push(i);
    }
    let mut search = Search {
        trace,
        edges: &edges,
        from: &from,
        path: Vec::new(),
        found: Vec::new(),
        sites: BTreeSet::new(),
    };
    let mut starts: Vec<ObjIdx> = from.keys().copied().collect();
    starts.sort_unstable();
    for start in starts {
        search.extend(start, start);
    }
    (search.found, stats)
}

/// A depth-first enumeration of the valid simple cycles through each start mutex, visiting only
/// mutexes numbered above the start so that each cycle is found from one rotation only.
struct Search<'a, S> {
    trace: &'a Trace<S>,
    edges: &'a [LockOrderEdge],
    from: &'a HashMap<ObjIdx, Vec<usize>>,
    path: Vec<usize>,
    found: Vec<PotentialDeadlock>,
    /// The cycles found, by their steps' mutexes and sites.
    sites: BTreeSet<Vec<(ObjIdx, ObjIdx, SiteId, SiteId)>>,
}

impl<S: EventStore> Search<'_, S> {
    fn extend(&mut self, start: ObjIdx, at: ObjIdx) {
        let Some(out) = self.from.get(&at) else {
            return;
        };
        for &i in out {
            let e = &self.edges[i];
            let compatible = self.path.iter().all(|&j| {
                let other = &self.edges[j];
                other.process != e.process && disjoint(&other.gates, &e.gates)
            });
            if !compatible {
                continue;
            }
            if e.acquired == start {
                self.path.push(i);
                self.record();
                self.path.pop();
            } else if e.acquired > start
                && !self.path.iter().any(|&j| self.edges[j].held == e.acquired)
            {
                self.path.push(i);
                self.extend(start, e.acquired);
                self.path.pop();
            }
        }
    }

    fn record(&mut self) {
        let key: Vec<_> = self
            .path
            .iter()
            .map(|&i| {
                let e = &self.edges[i];
                (
                    e.held,
                    e.acquired,
                    self.trace.event(e.held_at).site,
                    self.trace.event(e.acquired_at).site,
                )
            })
            .collect();
        if self.sites.insert(key) {
            self.found.push(PotentialDeadlock {
                edges: self.path.iter().map(|&i| self.edges[i].clone()).collect(),
            });
        }
    }
}

/// Whether two sorted sets share nothing.
fn disjoint(a: &[ObjIdx], b: &[ObjIdx]) -> bool {
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests;
