//! Analyses over a recording written with the real log writer: reading it, caching the clocks,
//! noticing when a log changes, surviving a damaged log.

use std::panic::Location;
use std::path::Path;

use ppd_flowback::Analysis;
use ppd_flowback::CacheOutcome;
use ppd_formats::event::{AtomicOp, MemOrdering, ObjectKind};
use ppd_formats::manifest::Manifest;
use ppd_formats::{Event, LogReader, ObjectId, ProcessId, Recording};

mod common;
use common::{manifest, write_log};

/// `main` spawns two workers that store to a shared atomic without ordering: `extra` more
/// stores by the second worker.
fn write_recording(dir: &Path, extra: usize) {
    let here = Location::caller();
    let x = ObjectId::new(ProcessId(0), 0);
    manifest(&[(0, "main"), (1, "a"), (2, "b")])
        .write(dir, false)
        .unwrap();
    let store = |version: u64| Event::Atomic {
        object: x,
        version,
        prev: None,
        op: AtomicOp::Store,
        ordering: MemOrdering::Relaxed,
        failure: None,
        site: Some(here),
        value: None,
    };
    write_log(
        dir,
        0,
        "main",
        &[
            Event::Start { parent: None },
            Event::Create {
                object: x,
                kind: ObjectKind::Atomic,
                init: 0,
                name: Some("x"),
                site: Some(here),
            },
            Event::Spawn {
                child: ProcessId(1),
                site: Some(here),
            },
            Event::Spawn {
                child: ProcessId(2),
                site: Some(here),
            },
        ],
    );
    write_log(
        dir,
        1,
        "a",
        &[
            Event::Start {
                parent: Some(ProcessId(0)),
            },
            store(1),
            Event::Exit,
        ],
    );
    let mut b = vec![Event::Start {
        parent: Some(ProcessId(0)),
    }];
    b.extend((0..=extra).map(|i| store(2 + i as u64)));
    b.push(Event::Exit);
    write_log(dir, 2, "b", &b);
}

#[test]
fn clocks_are_cached_and_recomputed_when_a_log_changes() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write_recording(dir, 0);
    let rec = Recording::open(dir).unwrap();
    let first = Analysis::open(&rec).unwrap();
    assert!(
        matches!(first.cache, Some(CacheOutcome::Stored(_))),
        "{:?}",
        first.cache
    );
    assert_eq!(first.trace.event_count(), 4 + 3 + 3);
    assert_eq!(first.data_races().len(), 1);
    let again = Analysis::open(&rec).unwrap();
    assert_eq!(again.cache, Some(CacheOutcome::Hit));
    assert_eq!(again.clocks, first.clocks);
    assert_eq!(again.report(), first.report());

    // A log rewritten with more events: the cache no longer matches.
    std::thread::sleep(std::time::Duration::from_millis(20));
    write_recording(dir, 3);
    let rec = Recording::open(dir).unwrap();
    let changed = Analysis::open(&rec).unwrap();
    match &changed.cache {
        Some(CacheOutcome::Stored(why)) => assert!(why.contains("changed"), "{why}"),
        other => panic!("expected a recomputation, got {other:?}"),
    }
    assert_eq!(changed.trace.event_count(), 4 + 3 + 6);
    let report = changed.report();
    assert_eq!(report.races.len(), 1);
    assert_eq!(
        report.races[0].count, 4,
        "each of b's stores races with a's"
    );
}

#[test]
fn a_damaged_log_is_analysed_up_to_its_damage() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // Worker b stores 2000 times: its log spans many blocks.
    let extra = 1999;
    write_recording(dir, extra);
    let written = 1 + (extra + 1) + 1;
    // Cut b's log in the middle of its frames, which follow the 4096-byte header region and
    // the ring of two 4096-byte blocks (docs/format.md §3) and precede the index and footer.
    let log = dir.join(Manifest::log_name(ProcessId(2)));
    let bytes = std::fs::read(&log).unwrap();
    let frames = 4096 + 2 * 4096;
    let frame_bytes = LogReader::open(&log).unwrap().frame_bytes() as usize;
    assert!(frame_bytes > 0, "b's log has frames to cut");
    std::fs::write(&log, &bytes[..frames + frame_bytes / 2]).unwrap();
    let rec = Recording::open(dir).unwrap();
    let analysis = Analysis::open(&rec).unwrap();
    let report = analysis.report();
    let b = analysis.trace.process(2);
    assert!(!b.complete);
    let kept = b.events.len();
    assert!(
        kept > 1 && kept < written,
        "{kept} of b's {written} events survived the cut"
    );
    // What survived is analysed: each of b's surviving stores races with a's store.
    let stores = b
        .events
        .iter()
        .filter(|e| matches!(e.op, ppd_flowback::trace::Op::Atomic { .. }))
        .count();
    assert_eq!(stores, kept - 1, "b's events are its start and its stores");
    assert_eq!(report.processes, 3);
    assert_eq!(report.events, (4 + 3 + kept) as u64);
    assert_eq!(report.races.len(), 1, "{:#?}", report.races);
    assert_eq!(report.races[0].count, stores as u64);
    // The report says which process lost events, in which file, and that they were lost.
    let note = report
        .notes
        .iter()
        .find(|n| n.starts_with("b (p2): "))
        .unwrap_or_else(|| panic!("no note about b: {:?}", report.notes));
    assert!(
        note.contains("proc-0002.log") && note.contains("offset"),
        "{note}"
    );
    assert!(
        report
            .notes
            .iter()
            .all(|n| !n.starts_with("a (") && !n.starts_with("main (")),
        "only b was damaged: {:?}",
        report.notes
    );
    let _ = ppd_flowback::picture::html::render(&ppd_flowback::picture::Diagram::build(
        "damaged",
        &analysis.trace,
        &analysis.clocks,
        &analysis.data_races(),
        &analysis.message_races(),
        None,
    ));
}
