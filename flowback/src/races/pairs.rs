//! Every racing pair of source sites, with the number of racing access pairs at each.
//!
//! The online detector compares an access with the *last* access of each other process and
//! class, which is enough to know whether a variable races (if any access of a process is
//! unordered with a later one, so is that process's last access of the same class before it)
//! but names only the latest site of each process: an earlier access from another site, still
//! unordered, is never named. This pass runs after the clocks, on the variables the detector
//! found racy only (a race-free run never enters it), and counts every pair.
//!
//! It walks a variable's accesses in memory order. For each process and access class it keeps
//! the process's sites in the order they were last used, each with the positions of its
//! accesses. A process's accesses that happened before an access `x` are exactly those below
//! `x`'s clock component for it, a prefix of its program; so walking the sites from the most
//! recently used, the first whose last access happened before `x` ends the walk, and the
//! accesses unordered with `x` at each site visited are counted by one binary search. The
//! work per access is one comparison per process and class, plus a binary search and a count
//! update per racing site; the memory, one index per access of a racy variable.

use crate::trace::{EventRef, EventStore, ObjIdx, Op, SiteId, Trace};
use crate::vclock::Clocks;
use crate::vclock::hb::AccessClass;

use super::{CHECKS, DataRace, class_index};
use crate::fasthash::FastMap;

/// A process's accesses of one class at one site, in program order.
#[derive(Debug)]
struct SiteRun {
    site: SiteId,
    indices: Vec<u32>,
}

/// One access of a racy variable.
#[derive(Clone, Copy, Debug)]
struct Access {
    version: u64,
    event: EventRef,
    class: usize,
    site: SiteId,
}

/// Every racing pair of sites on the variables `racy` marks, ordered by variable then by when
/// each pair was first met in memory order, with exact counts.
pub(super) fn every_pair<S: EventStore>(
    trace: &Trace<S>,
    clocks: &Clocks,
    racy: &[bool],
) -> Vec<DataRace> {
    let mut by_object: FastMap<ObjIdx, Vec<Access>> = FastMap::default();
    for (p, proc) in trace.processes().iter().enumerate() {
        for (k, ev) in proc.events.iter().enumerate() {
            if let Op::Atomic {
                object,
                version,
                op,
                ordering,
                ..
            } = ev.op
                && racy.get(object as usize).copied().unwrap_or(false)
            {
                by_object.entry(object).or_default().push(Access {
                    version,
                    event: EventRef::new(p as u32, k as u32),
                    class: class_index(AccessClass::of(op, ordering)),
                    site: ev.site,
                });
            }
        }
    }
    let mut objects: Vec<_> = by_object.into_iter().collect();
    objects.sort_unstable_by_key(|(o, _)| *o);
    let width = trace.processes().len();
    let mut races = Vec::new();
    for (object, mut accesses) in objects {
        // Memory order; a version logged twice (only in an inconsistent recording) counts once,
        // as the clock computation stamps it once.
        accesses.sort_by_key(|a| (a.version, a.event));
        accesses.dedup_by_key(|a| a.version);
        races.extend(pairs_of(object, &accesses, clocks, width));
    }
    races
}

fn pairs_of(object: ObjIdx, accesses: &[Access], clocks: &Clocks, width: usize) -> Vec<DataRace> {
    // history[process][class]: sites by last use, most recent last.
    let mut history: Vec<[Vec<SiteRun>; 4]> = (0..width).map(|_| Default::default()).collect();
    // The processes that accessed the variable so far.
    let mut active: Vec<u32> = Vec::new();
    let mut found: Vec<DataRace> = Vec::new();
    let mut index: FastMap<(SiteId, SiteId), usize> = FastMap::default();
    for x in accesses {
        let p = x.event.process;
        for &q in &active {
            if q == p {
                continue;
            }
            let before = clocks.component(x.event, q);
            for (c, runs) in history[q as usize].iter().enumerate() {
                if !CHECKS[x.class][c] {
                    continue;
                }
                for run in runs.iter().rev() {
                    let last = *run.indices.last().expect("a site run is never empty");
                    if last < before {
                        break;
                    }
                    let unordered =
                        run.indices.len() - run.indices.partition_point(|&i| i < before);
                    let key = (run.site.min(x.site), run.site.max(x.site));
                    match index.get(&key) {
                        Some(&i) => found[i].count += unordered as u64,
                        None => {
                            index.insert(key, found.len());
                            found.push(DataRace {
                                object,
                                a: EventRef::new(q, last),
                                b: x.event,
                                count: unordered as u64,
                            });
                        }
                    }
                }
            }
        }
        if history[p as usize].iter().all(Vec::is_empty) {
            active.push(p);
        }
        let runs = &mut history[p as usize][x.class];
        match runs.last_mut() {
            Some(run) if run.site == x.site => run.indices.push(x.event.index),
            _ => {
                let mut run = match runs.iter().position(|r| r.site == x.site) {
                    Some(i) => runs.remove(i),
                    None => SiteRun {
                        site: x.site,
                        indices: Vec::new(),
                    },
                };
                run.indices.push(x.event.index);
                runs.push(run);
            }
        }
    }
    found
}
