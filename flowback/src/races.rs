//! Data races: Miller & Choi's Definitions 6.1–6.4 on the atomics of a recording.
//!
//! Two accesses race when they are on simultaneous edges (neither happened before the other,
//! Definition 6.1) and conflict (Definition 6.3: write/write or read/write on the same shared
//! variable). The shared variables a recording shows are its atomics; which accesses count as
//! data accesses and which as synchronization is [`AccessClass`]'s rule.
//!
//! What is reported is every pair of source sites at which two accesses race, with `count` the
//! number of racing access pairs at those sites: all of them, not only those a detector that
//! remembers one access per process happens to compare.
//!
//! Finding which variables race is DJIT+'s: each access is compared with the last access of
//! every other process that it conflicts with, using their vector clocks. That is exact for
//! the question "does this variable race" (if any access of a process is unordered with a
//! later one, so is that process's last access of the same class before it) but names only
//! the latest site of each process, so the racy variables then go through a second, exact
//! pass (`races/pairs.rs`) that names every site pair and counts every pair; a race-free run
//! never enters it. Speed is FastTrack's: each of a variable's four
//! access tables (data reads, data writes, synchronizing reads, synchronizing writes) keeps a
//! *dominator*, the epoch `c@p` of an access that happened after all of the table's entries.
//! An access that the dominator happened before is race-free with the whole table after one
//! comparison of two integers; only when that fails are the entries compared one by one. The
//! dominator is re-established by every access that passes a full comparison, so a variable
//! whose accesses are ordered (the common case) never leaves the fast path, and one with
//! concurrent readers pays the per-entry comparison only at its next write, as in FastTrack's
//! read-shared mode.
//!
//! The detector runs inside the clock computation ([`Clocks::compute_observed`]): the replay
//! hands it each access in version order (the recorded memory order) with the access's clock,
//! the way a dynamic detector sees a running program, so nothing is looked up twice.

use ppd_formats::event::{AtomicOp, MemOrdering};

use crate::trace::{EventRef, EventStore, ObjIdx, SiteId, Trace};
use crate::vclock::hb::AccessClass;
use crate::vclock::{Clocks, Observer};

/// A data race: the unordered, conflicting accesses to one atomic at one pair of source
/// sites.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DataRace {
    /// The atomic.
    pub object: ObjIdx,
    /// The earlier access (in memory order) of the first pair found at these sites.
    pub a: EventRef,
    /// The later one.
    pub b: EventRef,
    /// How many racing pairs of accesses share these two sites (each unordered pair once).
    pub count: u64,
}

/// What the detector did, for benchmarks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DetectorStats {
    /// Accesses examined.
    pub accesses: u64,
    /// Shared variables (atomics accessed at least once).
    pub variables: u64,
    /// Table checks decided by one epoch comparison.
    pub fast_checks: u64,
    /// Table checks that compared entry by entry.
    pub slow_checks: u64,
    /// Bytes of detector state at the end, over all variables.
    pub state_bytes: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Dom {
    /// The table is empty.
    Empty,
    /// Every entry happened before (or is) this access.
    At(EventRef),
    /// No single access is known to dominate the entries.
    Invalid,
}

#[derive(Debug, Clone)]
struct Table {
    dom: Dom,
    entries: Vec<EventRef>,
}

impl Table {
    const fn new() -> Table {
        Table {
            dom: Dom::Empty,
            entries: Vec::new(),
        }
    }

    fn insert(&mut self, x: EventRef) {
        match self.entries.iter_mut().find(|e| e.process == x.process) {
            Some(e) => *e = x,
            None => self.entries.push(x),
        }
    }
}

/// The detector state of one variable.
#[derive(Debug, Clone)]
struct VarState {
    used: bool,
    /// Two of its accesses were found unordered and conflicting.
    racy: bool,
    tables: [Table; 4],
}

impl VarState {
    const fn new() -> VarState {
        VarState {
            used: false,
            racy: false,
            tables: [Table::new(), Table::new(), Table::new(), Table::new()],
        }
    }

    fn bytes(&self) -> usize {
        std::mem::size_of::<VarState>()
            + self
                .tables
                .iter()
                .map(|t| t.entries.capacity() * std::mem::size_of::<EventRef>())
                .sum::<usize>()
    }
}

fn class_index(c: AccessClass) -> usize {
    match c {
        AccessClass::DataRead => 0,
        AccessClass::DataWrite => 1,
        AccessClass::SyncRead => 2,
        AccessClass::SyncWrite => 3,
    }
}

/// Which tables an access of each class is compared with (`CHECKS[class][table]`).
const CHECKS: [[bool; 4]; 4] = {
    const CLASSES: [AccessClass; 4] = [
        AccessClass::DataRead,
        AccessClass::DataWrite,
        AccessClass::SyncRead,
        AccessClass::SyncWrite,
    ];
    let mut m = [[false; 4]; 4];
    let mut i = 0;
    while i < 4 {
        let mut j = 0;
        while j < 4 {
            m[i][j] = CLASSES[i].conflicts(CLASSES[j]);
            j += 1;
        }
        i += 1;
    }
    m
};

/// `a` happened before (or is) the access whose clock is `clock`.
#[inline]
fn le(a: EventRef, clock: &[u32]) -> bool {
    a.index < clock[a.process as usize]
}

/// Finds the variables that race as the clock computation hands it each atomic access.
#[derive(Debug)]
pub(crate) struct RaceDetector {
    vars: Vec<VarState>,
    stats: DetectorStats,
}

impl RaceDetector {
    /// A detector for the objects of `trace`.
    pub(crate) fn new<S: EventStore>(trace: &Trace<S>) -> RaceDetector {
        RaceDetector {
            vars: vec![VarState::new(); trace.objects().len()],
            stats: DetectorStats::default(),
        }
    }

    /// Every racing pair of sites (found by a second pass over the racy variables only),
    /// ordered by object then by when each was
    /// first met in memory order, and what it took. `clocks` are those this detector observed
    /// being computed for `trace`.
    pub(crate) fn finish<S: EventStore>(
        mut self,
        trace: &Trace<S>,
        clocks: &Clocks,
    ) -> (Vec<DataRace>, DetectorStats) {
        for var in &self.vars {
            if var.used {
                self.stats.variables += 1;
                self.stats.state_bytes += var.bytes() as u64;
            }
        }
        let racy: Vec<bool> = self.vars.iter().map(|v| v.racy).collect();
        let races = if racy.contains(&true) {
            pairs::every_pair(trace, clocks, &racy)
        } else {
            Vec::new()
        };
        (races, self.stats)
    }

    /// Compares `x` with a table it conflicts with; marks the variable racy if an entry is
    /// unordered with `x`. Returns whether every entry happened before `x`.
    #[inline]
    fn check(&mut self, object: ObjIdx, t: usize, x: EventRef, clock: &[u32]) -> bool {
        let var = &mut self.vars[object as usize];
        let table = &var.tables[t];
        match table.dom {
            Dom::Empty => return true,
            Dom::At(d) if le(d, clock) => {
                self.stats.fast_checks += 1;
                return true;
            }
            _ => {}
        }
        self.stats.slow_checks += 1;
        let ok = table
            .entries
            .iter()
            .all(|&e| e.process == x.process || le(e, clock));
        var.racy |= !ok;
        ok
    }
}

impl Observer for RaceDetector {
    const STAGE: &'static str = "computing the vector clocks and the data races";

    #[inline]
    fn access(
        &mut self,
        e: EventRef,
        object: ObjIdx,
        op: AtomicOp,
        ordering: MemOrdering,
        _site: SiteId,
        clock: &[u32],
    ) {
        self.stats.accesses += 1;
        let class = AccessClass::of(op, ordering);
        let own = class_index(class);
        let mut own_ok = None;
        for (t, &conflicts) in CHECKS[own].iter().enumerate() {
            if !conflicts {
                continue;
            }
            let ok = self.check(object, t, e, clock);
            if t == own {
                own_ok = Some(ok);
            } else if ok {
                // Every entry happened before x: x dominates the table now.
                self.vars[object as usize].tables[t].dom = Dom::At(e);
            }
        }
        let var = &mut self.vars[object as usize];
        var.used = true;
        let table = &mut var.tables[own];
        let dominated = match table.dom {
            Dom::Empty => true,
            Dom::At(d) => le(d, clock),
            Dom::Invalid => false,
        };
        table.dom = match own_ok {
            Some(true) => Dom::At(e),
            Some(false) => Dom::Invalid,
            None if dominated => Dom::At(e),
            None => Dom::Invalid,
        };
        table.insert(e);
    }
}

/// Computes the clocks of `trace` and its data races in one pass.
pub fn clocks_and_races<S: EventStore>(trace: &Trace<S>) -> (Clocks, Vec<DataRace>, DetectorStats) {
    let mut detector = RaceDetector::new(trace);
    let clocks = Clocks::compute_observed(trace, &mut detector);
    let (races, stats) = detector.finish(trace, &clocks);
    (clocks, races, stats)
}

/// Like [`clocks_and_races`], with the synchronization edges only counted (see
/// [`Clocks::compute_counting_edges`]).
pub(crate) fn clocks_and_races_counting_edges<S: EventStore>(
    trace: &Trace<S>,
) -> (Clocks, Vec<DataRace>) {
    let mut detector = RaceDetector::new(trace);
    let clocks = Clocks::compute_counting_edges(trace, &mut detector);
    let (races, _) = detector.finish(trace, &clocks);
    (clocks, races)
}

/// The data races of `trace`.
pub(crate) fn data_races<S: EventStore>(trace: &Trace<S>) -> Vec<DataRace> {
    clocks_and_races(trace).1
}

mod pairs;
#[cfg(test)]
mod tests;
