//! Data races: Miller & Choi's Definitions 6.1–6.4 on the atomics of a recording.
//!
//! Two accesses race when they are on simultaneous edges (neither happened before the other,
//! Definition 6.1) and conflict (Definition 6.3: write/write or read/write on the same shared
//! variable). The shared variables a recording shows are its atomics; which accesses count as
//! data accesses and which as synchronization is [`AccessClass`]'s rule.
//!
//! Precision is DJIT+'s: each access is compared with the last access of every other process
//! that it conflicts with, using their vector clocks, so a race-free run reports nothing and
//! every reported pair is truly unordered. Speed is FastTrack's: each of a variable's four
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

use crate::fasthash::FastMap;
use crate::hb::AccessClass;
use crate::trace::{EventRef, ObjIdx, SiteId, Trace};
use crate::vclock::{AccessObserver, Clocks};

/// A data race: two unordered, conflicting accesses to one atomic, deduplicated by their pair
/// of source sites.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DataRace {
    /// The atomic.
    pub object: ObjIdx,
    /// The earlier access (in memory order) of the first pair found at these sites.
    pub a: EventRef,
    /// The later one.
    pub b: EventRef,
    /// How many racing pairs share these two sites.
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

/// An access in a table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Entry {
    event: EventRef,
    site: SiteId,
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
    entries: Vec<Entry>,
}

impl Table {
    const fn new() -> Table {
        Table {
            dom: Dom::Empty,
            entries: Vec::new(),
        }
    }

    fn insert(&mut self, x: Entry) {
        match self
            .entries
            .iter_mut()
            .find(|e| e.event.process == x.event.process)
        {
            Some(e) => *e = x,
            None => self.entries.push(x),
        }
    }
}

/// The detector state of one variable.
#[derive(Debug, Clone)]
struct VarState {
    used: bool,
    tables: [Table; 4],
}

impl VarState {
    const fn new() -> VarState {
        VarState {
            used: false,
            tables: [Table::new(), Table::new(), Table::new(), Table::new()],
        }
    }

    fn bytes(&self) -> usize {
        std::mem::size_of::<VarState>()
            + self
                .tables
                .iter()
                .map(|t| t.entries.capacity() * std::mem::size_of::<Entry>())
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
            let (a, b) = (CLASSES[i], CLASSES[j]);
            let writes = matches!(a, AccessClass::DataWrite | AccessClass::SyncWrite)
                || matches!(b, AccessClass::DataWrite | AccessClass::SyncWrite);
            let data = matches!(a, AccessClass::DataRead | AccessClass::DataWrite)
                || matches!(b, AccessClass::DataRead | AccessClass::DataWrite);
            m[i][j] = writes && data;
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

/// Finds data races as the clock computation hands it each atomic access.
#[derive(Debug)]
pub struct RaceDetector {
    vars: Vec<VarState>,
    races: Vec<(u64, DataRace)>,
    index: FastMap<(ObjIdx, SiteId, SiteId), usize>,
    /// The last race reported: a racy variable reports the same pair of sites again and again.
    last: Option<((ObjIdx, SiteId, SiteId), usize)>,
    stats: DetectorStats,
}

impl RaceDetector {
    /// A detector for the objects of `trace`.
    pub fn new(trace: &Trace) -> RaceDetector {
        RaceDetector {
            vars: vec![VarState::new(); trace.objects().len()],
            races: Vec::new(),
            index: FastMap::default(),
            last: None,
            stats: DetectorStats::default(),
        }
    }

    /// The races, ordered by object then by when they were first found, and what it took.
    pub fn finish(mut self) -> (Vec<DataRace>, DetectorStats) {
        for var in &self.vars {
            if var.used {
                self.stats.variables += 1;
                self.stats.state_bytes += var.bytes() as u64;
            }
        }
        self.races.sort_by_key(|(order, r)| (r.object, *order));
        (self.races.into_iter().map(|(_, r)| r).collect(), self.stats)
    }

    /// Compares `x` with a table it conflicts with; reports each entry it races with. Returns
    /// whether every entry happened before `x`.
    #[inline]
    fn check(&mut self, object: ObjIdx, t: usize, x: Entry, clock: &[u32]) -> bool {
        let table = &self.vars[object as usize].tables[t];
        match table.dom {
            Dom::Empty => return true,
            Dom::At(d) if le(d, clock) => {
                self.stats.fast_checks += 1;
                return true;
            }
            _ => {}
        }
        self.stats.slow_checks += 1;
        let mut ok = true;
        let n = table.entries.len();
        for i in 0..n {
            let entry = self.vars[object as usize].tables[t].entries[i];
            if entry.event.process != x.event.process && !le(entry.event, clock) {
                ok = false;
                self.report(object, entry, x);
            }
        }
        ok
    }

    fn report(&mut self, object: ObjIdx, a: Entry, b: Entry) {
        let key = (object, a.site.min(b.site), a.site.max(b.site));
        if let Some((k, i)) = self.last
            && k == key
        {
            self.races[i].1.count += 1;
            return;
        }
        match self.index.get(&key) {
            Some(&i) => {
                self.races[i].1.count += 1;
                self.last = Some((key, i));
            }
            None => {
                self.last = Some((key, self.races.len()));
                self.index.insert(key, self.races.len());
                let order = self.races.len() as u64;
                self.races.push((
                    order,
                    DataRace {
                        object,
                        a: a.event,
                        b: b.event,
                        count: 1,
                    },
                ));
            }
        }
    }
}

impl AccessObserver for RaceDetector {
    #[inline]
    fn access(
        &mut self,
        e: EventRef,
        object: ObjIdx,
        op: AtomicOp,
        ordering: MemOrdering,
        site: SiteId,
        clock: &[u32],
    ) {
        self.stats.accesses += 1;
        let class = AccessClass::of(op, ordering);
        let own = class_index(class);
        let x = Entry { event: e, site };
        let mut own_ok = None;
        for (t, &conflicts) in CHECKS[own].iter().enumerate() {
            if !conflicts {
                continue;
            }
            let ok = self.check(object, t, x, clock);
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
        table.insert(x);
    }
}

/// Computes the clocks of `trace` and its data races in one pass.
pub fn clocks_and_races(trace: &Trace) -> (Clocks, Vec<DataRace>, DetectorStats) {
    let mut detector = RaceDetector::new(trace);
    let clocks = Clocks::compute_observed(trace, &mut detector);
    let (races, stats) = detector.finish();
    (clocks, races, stats)
}

/// The data races of `trace`.
pub fn data_races(trace: &Trace) -> Vec<DataRace> {
    clocks_and_races(trace).1
}

#[cfg(test)]
mod tests;
