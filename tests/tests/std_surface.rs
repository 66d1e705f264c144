//! std's surface under ppd (`tests/src/bin/std_surface.rs`): each scenario records, replays
//! with `--verify` to the same output, and shows no race or deadlock; the logs hold the joins
//! of a scope, the park token's accesses, the logged answers and an `AtomicPtr`'s versions.

use std::path::{Path, PathBuf};

use ppd_formats::event::{AtomicOp, Question};
use ppd_formats::{Event, Recording};
use ppd_tests::{ppd, record_program};
use serde_json::Value;

fn program() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_std_surface"))
}

/// Records `scenario`, replays it with `--verify`, and checks that the replay reproduced the
/// run and printed what the recorded run printed, and that the analysis finds no race and no
/// deadlock. Returns the recording.
fn record_replay_analyze(work: &Path, scenario: &str, extra: &[&str]) -> PathBuf {
    let dir = work.join(scenario);
    let recorded = record_program(work, &dir, &program(), &[scenario], extra);
    let printed = String::from_utf8_lossy(&recorded.stdout).into_owned();
    assert!(
        recorded.status.success(),
        "{scenario}: {}",
        String::from_utf8_lossy(&recorded.stderr)
    );
    let replayed = ppd(
        work,
        &["replay", dir.to_str().unwrap(), "--verify", "--json"],
    );
    let stderr = String::from_utf8_lossy(&replayed.stderr);
    assert!(replayed.status.success(), "{scenario}: {stderr}");
    let summary: Value = serde_json::from_slice(&replayed.stdout).expect("replay --json");
    assert_eq!(summary["outcome"], "reproduced", "{scenario}: {summary:#}");
    for line in printed.lines() {
        assert!(
            stderr.contains(line),
            "{scenario}: replay did not print {line:?}"
        );
    }
    let races = ppd(work, &["races", "--json", dir.to_str().unwrap()]);
    assert!(
        races.status.success(),
        "{}",
        String::from_utf8_lossy(&races.stderr)
    );
    let report: Value = serde_json::from_slice(&races.stdout).expect("races --json");
    assert_eq!(
        report["races"],
        Value::Array(vec![]),
        "{scenario}: {report:#}"
    );
    for part in ["running", "blocked", "cycles"] {
        assert_eq!(
            report["deadlocks"][part],
            Value::Array(vec![]),
            "{scenario}: {report:#}"
        );
    }
    dir
}

/// Every event of process `name`.
fn events(dir: &Path, name: &str) -> Vec<Event> {
    let recording = Recording::open(dir).expect("open recording");
    let entry = recording.find_process(name).expect("process").clone();
    let log = recording.open_log(&entry).expect("open log");
    (0..log.event_count())
        .map(|k| log.get(k).expect("event"))
        .collect()
}

#[test]
fn scoped_threads_are_processes_joined_by_the_end_of_their_scope() {
    let work = tempfile::tempdir().unwrap();
    let dir = record_replay_analyze(work.path(), "scope", &[]);
    let main = events(&dir, "main");
    let spawned: Vec<_> = main
        .iter()
        .filter_map(|e| match e {
            Event::Spawn { child, .. } => Some(*child),
            _ => None,
        })
        .collect();
    let joined: Vec<_> = main
        .iter()
        .filter_map(|e| match e {
            Event::Join { child, .. } => Some(*child),
            _ => None,
        })
        .collect();
    // One join by its handle, then the two the scope made, in process order.
    assert_eq!(spawned.len(), 3, "{main:#?}");
    assert_eq!(joined, spawned, "{main:#?}");
    for name in ["scoped-0", "scoped-1"] {
        assert!(matches!(events(&dir, name).last(), Some(Event::Exit)));
    }
}

#[test]
fn an_unpark_happens_before_the_park_it_wakes_and_a_timeout_is_logged() {
    let work = tempfile::tempdir().unwrap();
    let dir = record_replay_analyze(work.path(), "park", &[]);
    // The parker takes its token with acquiring swaps, main makes it available with a release
    // store on the same object: the parker's own token.
    let token_of = |events: &[Event]| -> Vec<(ppd_formats::ObjectId, AtomicOp)> {
        events
            .iter()
            .filter_map(|e| match e {
                Event::Atomic { object, op, .. } if object.ordinal() == u32::MAX => {
                    Some((*object, *op))
                }
                _ => None,
            })
            .collect()
    };
    let parker = token_of(&events(&dir, "parker"));
    assert!(!parker.is_empty(), "the parker took its token");
    assert!(parker.iter().all(|(_, op)| *op == AtomicOp::Rmw));
    let unparks = token_of(&events(&dir, "main"));
    assert_eq!(unparks.len(), 1, "{unparks:?}");
    assert_eq!(unparks[0].1, AtomicOp::Store);
    assert_eq!(unparks[0].0, parker[0].0);
    // The timer parked (one swap), waited for its timeout and took the token again (another).
    assert_eq!(token_of(&events(&dir, "timer")).len(), 2);
}

#[test]
fn is_finished_and_available_parallelism_are_logged_answers() {
    let work = tempfile::tempdir().unwrap();
    let dir = record_replay_analyze(work.path(), "answers", &[]);
    let answers: Vec<_> = events(&dir, "main")
        .into_iter()
        .filter_map(|e| match e {
            Event::Answer {
                question, value, ..
            } => Some((question, value)),
            _ => None,
        })
        .collect();
    let finished: Vec<u64> = answers
        .iter()
        .filter(|(q, _)| *q == Question::IsFinished)
        .map(|(_, v)| *v)
        .collect();
    // Polled until it said yes, once.
    assert_eq!(finished.last(), Some(&1), "{answers:?}");
    assert_eq!(finished.iter().filter(|&&v| v == 1).count(), 1);
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get() as u64);
    assert_eq!(
        answers.last(),
        Some(&(Question::AvailableParallelism, cpus)),
        "{answers:?}"
    );
}

#[test]
fn an_atomic_pointer_is_versioned_without_its_addresses() {
    let work = tempfile::tempdir().unwrap();
    let dir = record_replay_analyze(work.path(), "ptr", &["--payloads"]);
    // The slot is registered by whichever process uses it first.
    let slot = ["main", "taker"]
        .iter()
        .flat_map(|name| events(&dir, name))
        .find_map(|e| match e {
            Event::Create { object, name, .. } if name.as_deref() == Some("slot") => Some(object),
            _ => None,
        })
        .expect("the slot's creation is logged");
    let slot_accesses: Vec<Event> = ["main", "taker"]
        .iter()
        .flat_map(|name| events(&dir, name))
        .filter(|e| matches!(e, Event::Atomic { object, .. } if *object == slot))
        .collect();
    // main's release store, and at least the taker's swap that took the box; with payloads
    // asked for, an integer atomic's accesses would carry their values.
    assert!(slot_accesses.len() >= 2, "{slot_accesses:#?}");
    for e in &slot_accesses {
        let Event::Atomic { value, .. } = e else {
            unreachable!()
        };
        assert_eq!(*value, None, "an address was logged: {e:?}");
    }
}

#[test]
fn hash_maps_iterate_in_the_recorded_order_and_rng_values_replay() {
    let work = tempfile::tempdir().unwrap();
    // Each recording replays to its own output (record_replay_analyze compares them); the
    // keys are random, so two recordings iterate in different orders.
    let printed = |dir: &Path| {
        let out = ppd(work.path(), &["replay", dir.to_str().unwrap()]);
        assert!(out.status.success());
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let first = record_replay_analyze(work.path(), "hash", &[]);
    let first_out = printed(&first);
    std::fs::rename(&first, work.path().join("hash-1")).unwrap();
    let second = record_replay_analyze(work.path(), "hash", &[]);
    let second_out = printed(&second);
    let line = |out: &str, prefix: &str| {
        out.lines()
            .find(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("no {prefix} line in {out}"))
            .to_owned()
    };
    for prefix in ["map ", "set ", "rng "] {
        assert_ne!(line(&first_out, prefix), line(&second_out, prefix));
    }
    // Two keys per process that made a map or set, then the generator's draws.
    let draws = |name: &str| {
        events(&second, name)
            .iter()
            .filter(|e| matches!(e, Event::Random { .. }))
            .count()
    };
    assert_eq!(draws("main"), 2 + 2);
    assert_eq!(draws("main.1"), 2);
}
