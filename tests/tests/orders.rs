//! The two orders of `ppd_formats::order` on real recordings: the analysis's clocks (the
//! memory-model happened-before, which `ppd races` and `ppd graph` use) against the replay
//! controller's (the replay order, which `->` uses).

mod analysis_support;

use std::path::Path;

use analysis_support::{listing, record, record_scenario};
use ppd_flowback::Analysis;
use ppd_flowback::trace::{EventRef, Op};
use ppd_formats::clock::VectorClock;
use ppd_formats::order::Tick;
use ppd_formats::{Event, Recording};
use ppd_replayer::local::replay_clocks;

/// How the two orders compare on one recording.
#[derive(Debug, PartialEq)]
enum Agreement {
    /// The same order on every pair of events.
    Same,
    /// Every pair the happened-before orders is ordered the same way by replay, which orders
    /// more pairs besides.
    Contained,
}

/// Compares the orders on every pair of events of the recording in `dir`. The component of
/// event *b*'s clock for process *p* counts *p*'s events ordered before *b* (or *b* itself), so
/// comparing clocks component by component compares the two orders on every pair.
fn compare(dir: &Path) -> Agreement {
    let rec = Recording::open(dir).expect("open the recording");
    let analysis = Analysis::open(&rec).expect("analyse the recording");
    let n = rec
        .processes()
        .iter()
        .map(|p| p.id.index() + 1)
        .max()
        .unwrap_or(0);
    let mut parents = vec![None; n];
    let mut logs: Vec<Vec<Event>> = vec![Vec::new(); n];
    for p in rec.processes() {
        parents[p.id.index()] = p.parent;
        let reader = rec.open_log(p).expect("open a log");
        logs[p.id.index()] = reader
            .events()
            .map(|e| e.map(|(_, event)| event))
            .collect::<Result<_, _>>()
            .expect("read a log");
    }
    let replay = replay_clocks(parents, &logs);
    let trace = &analysis.trace;
    let mut same = true;
    for (i, proc) in trace.processes().iter().enumerate() {
        let pid = proc.id.index();
        assert_eq!(proc.events.len(), logs[pid].len(), "{}: events", proc.name);
        for (k, replayed) in replay[pid].iter().enumerate() {
            let b = EventRef::new(i as u32, k as u32);
            for (j, other) in trace.processes().iter().enumerate() {
                let hb = u64::from(analysis.clocks.component(b, j as u32));
                let rp = u64::from(replayed[other.id.index()]);
                assert!(
                    hb <= rp,
                    "{}: event {k} of {} has seen {hb} events of {} in happened-before \
                     but only {rp} in the replay order",
                    dir.display(),
                    proc.name,
                    other.name
                );
                same &= hb == rp;
            }
            // The same containment through the one vector-clock type both sides share: the
            // analysis's clock, laid out by process id as the controller's is, is below it.
            let mut seen: Vec<Tick> = vec![0; replayed.len()];
            for (j, other) in trace.processes().iter().enumerate() {
                seen[other.id.index()] = analysis.clocks.component(b, j as u32);
            }
            assert!(
                seen.leq(replayed),
                "{}: event {k} of {}: {seen:?} not below {replayed:?}",
                dir.display(),
                proc.name
            );
            same &= seen == *replayed;
        }
    }
    if same {
        Agreement::Same
    } else {
        Agreement::Contained
    }
}

/// Whether a recording synchronizes only through messages, mutexes, spawns and joins, whose
/// edges are the same in both orders.
fn orders_agree_by_kind(dir: &Path) -> bool {
    let rec = Recording::open(dir).expect("open the recording");
    let analysis = Analysis::open(&rec).expect("analyse the recording");
    analysis.trace.processes().iter().all(|p| {
        p.events.iter().all(|e| {
            !matches!(
                e.op,
                Op::Atomic { .. } | Op::SemAcquire { .. } | Op::SemRelease { .. }
            )
        })
    })
}

/// Every scenario of the race corpus and every example: the happened-before is contained in
/// the replay order on every pair of events, and equal to it where a recording uses only the
/// edges the two orders share.
#[test]
fn the_analysis_and_the_replay_controller_agree_wherever_both_order() {
    let work = tempfile::tempdir().unwrap();
    let mut dirs: Vec<_> = listing()
        .into_iter()
        .filter(|s| s["hangs"] == false)
        .map(|s| record_scenario(work.path(), s["name"].as_str().unwrap()))
        .collect();
    for example in [
        "bank",
        "token_ring",
        "pipeline",
        "farm",
        "counter",
        "racy_counter",
    ] {
        dirs.push(record(work.path(), example));
    }
    let (mut shared_only, mut strictly_contained) = (0, 0);
    for dir in &dirs {
        let agreement = compare(dir);
        if orders_agree_by_kind(dir) {
            assert_eq!(agreement, Agreement::Same, "{}", dir.display());
            shared_only += 1;
        } else if agreement == Agreement::Contained {
            strictly_contained += 1;
        }
    }
    // Both cases are exercised: recordings with only shared edges, and recordings where the
    // replay order orders atomics and semaphores the memory model leaves unordered.
    assert!(
        shared_only >= 10,
        "{shared_only} recordings with shared edges only"
    );
    assert!(
        strictly_contained >= 10,
        "{strictly_contained} strictly contained"
    );
}
