//! ppd's `RwLock` and `Condvar` used as std's are: real programs (`tests/src/bin/rwlock_condvar.rs`) run
//! unrecorded, recorded, replayed with `--verify` and analysed for races and deadlocks.

use std::path::{Path, PathBuf};
use std::process::Command;

use ppd_formats::event::{ObjectKind, Outcome, RwMode};
use ppd_formats::{Event, Recording};
use ppd_tests::{assert_no_races, assert_replays, events_of, number_after, record_program};

fn program() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_rwlock_condvar"))
}

/// Runs case `case` without ppd around it (pass-through); its standard output.
fn run_plain(case: &str) -> String {
    let out = Command::new(program())
        .arg(case)
        .output()
        .expect("run rwlock_condvar");
    assert!(
        out.status.success(),
        "rwlock_condvar {case}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

/// Records case `case` into `<work>/<case>`; the directory and the program's standard output.
fn record_case(work: &Path, case: &str) -> (PathBuf, String) {
    let dir = work.join(case);
    let out = record_program(work, &dir, &program(), &[case], &[]);
    assert!(
        out.status.success(),
        "recording {case} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (dir, String::from_utf8(out.stdout).expect("utf-8"))
}

fn count(events: &[Event], wanted: impl Fn(&Event) -> bool) -> usize {
    events.iter().filter(|e| wanted(e)).count()
}

#[test]
fn readers_and_a_writer_record_replay_what_each_reader_saw_and_race_nothing() {
    let plain = run_plain("readers");
    assert!(plain.ends_with("final version = 20\n"), "{plain}");

    let work = tempfile::tempdir().unwrap();
    let (dir, stdout) = record_case(work.path(), "readers");
    assert!(stdout.ends_with("final version = 20\n"), "{stdout}");

    // Every acquisition and release is logged with its mode; one version sequence numbers
    // them all.
    let writer = events_of(&dir, "writer");
    let write_holds = |e: &Event| {
        matches!(
            e,
            Event::RwAcquire {
                mode: RwMode::Write,
                ..
            }
        )
    };
    assert_eq!(count(&writer, write_holds), 20);
    let reader = events_of(&dir, "reader0");
    let read_holds = |e: &Event| {
        matches!(
            e,
            Event::RwAcquire {
                mode: RwMode::Read,
                ..
            }
        )
    };
    let read_releases = |e: &Event| {
        matches!(
            e,
            Event::RwRelease {
                mode: RwMode::Read,
                ..
            }
        )
    };
    assert_eq!(count(&reader, read_holds), 50);
    assert_eq!(count(&reader, read_releases), 50);
    let mut versions: Vec<u64> = ["main", "writer", "reader0", "reader1", "reader2"]
        .iter()
        .flat_map(|p| events_of(&dir, p))
        .filter_map(|e| match e {
            Event::RwAcquire { version, .. } | Event::RwRelease { version, .. } => Some(version),
            _ => None,
        })
        .collect();
    versions.sort_unstable();
    let expected: Vec<u64> = (1..=versions.len() as u64).collect();
    assert_eq!(versions, expected, "one gapless version sequence");

    // Replay makes every reader see the versions it saw: the sums are the run's.
    let sums: String = stdout
        .lines()
        .filter(|l| l.starts_with("reader"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_replays(work.path(), &dir, &sums);
    // Readers are not ordered among themselves, but every access of the config is under the
    // lock: no race, no deadlock.
    assert_no_races(work.path(), &dir);
}

#[test]
fn try_read_and_try_write_answers_are_logged_and_replay_gives_each_back() {
    let plain = run_plain("try");
    assert!(
        plain.contains("read while written: would block = true"),
        "{plain}"
    );
    assert!(
        plain.contains("write while read: would block = true, read alongside = true"),
        "{plain}"
    );
    assert!(plain.ends_with("consistent = true\n"), "{plain}");

    let work = tempfile::tempdir().unwrap();
    let (dir, stdout) = record_case(work.path(), "try");
    assert!(stdout.ends_with("consistent = true\n"), "{stdout}");
    let read_failed = number_after(&stdout, "reads failed = ");
    let write_failed = number_after(&stdout, "writes failed = ");
    let got = number_after(&stdout, "succeeded = ");

    let prober = events_of(&dir, "prober");
    let would_block = count(&prober, |e| {
        matches!(
            e,
            Event::Outcome {
                outcome: Outcome::WouldBlock,
                ..
            }
        )
    });
    // The two tries against `main`'s holds, then the contended ones.
    assert_eq!(
        would_block as u64,
        2 + read_failed + write_failed,
        "{stdout}"
    );
    let write_holds = count(&prober, |e| {
        matches!(
            e,
            Event::RwAcquire {
                mode: RwMode::Write,
                ..
            }
        )
    });
    assert_eq!(write_holds as u64, got, "{stdout}");

    // Replay gives each try its recorded answer, so the counts printed are the run's.
    let counts = stdout
        .lines()
        .find(|l| l.starts_with("reads failed"))
        .expect("the counts line");
    assert_replays(work.path(), &dir, counts);
    // A try never waits: no potential deadlock from the prober's tries under its own read.
    assert_no_races(work.path(), &dir);
}

#[test]
fn a_write_panic_poisons_as_std_recorded_replayed_and_unrecorded() {
    let expected = "poisoned = true, entries = 2, cleared = true\n";
    assert_eq!(run_plain("poison"), expected);
    let work = tempfile::tempdir().unwrap();
    let (dir, stdout) = record_case(work.path(), "poison");
    assert_eq!(stdout, expected);
    assert_replays(work.path(), &dir, expected.trim_end());
}

/// The acquisitions in `events` of the queue locks of condition variables.
fn condvar_locks(recording: &Path, events: &[Event]) -> usize {
    let recording = Recording::open(recording).expect("open the recording");
    let ids: Vec<_> = recording
        .processes()
        .iter()
        .flat_map(|p| {
            recording
                .open_log(p)
                .expect("open the log")
                .events()
                .filter_map(|e| match e.expect("a readable event").1 {
                    Event::Create {
                        object,
                        kind: ObjectKind::Condvar,
                        ..
                    } => Some(object),
                    _ => None,
                })
                .collect::<Vec<_>>()
        })
        .collect();
    count(
        events,
        |e| matches!(e, Event::Lock { object, .. } if ids.contains(object)),
    )
}

#[test]
fn a_condvar_queue_replays_which_consumer_took_which_jobs_and_races_nothing() {
    let plain = run_plain("queue");
    assert!(plain.ends_with("sum 820\n"), "{plain}");
    let work = tempfile::tempdir().unwrap();
    let (dir, stdout) = record_case(work.path(), "queue");
    assert!(stdout.ends_with("sum 820\n"), "{stdout}");
    let taken: u64 = (0..2)
        .map(|c| number_after(&stdout, &format!("consumer{c} took ")))
        .sum();
    assert_eq!(taken, 40, "{stdout}");
    // How the jobs were shared is the run's choice; replay gives the same split.
    assert_replays(work.path(), &dir, stdout.trim_end());
    assert_no_races(work.path(), &dir);
    // The producer's notifies go through the condvar's own queue, a ppd mutex: 41 notifies.
    let producer = events_of(&dir, "producer");
    assert!(condvar_locks(&dir, &producer) >= 41, "{:?}", producer.len());
}

#[test]
fn notify_all_wakes_every_waiter_and_the_run_replays() {
    let expected = "gate opened for 3\n";
    assert_eq!(run_plain("gate"), expected);
    let work = tempfile::tempdir().unwrap();
    let (dir, stdout) = record_case(work.path(), "gate");
    assert_eq!(stdout, expected);
    assert_replays(work.path(), &dir, expected.trim_end());
    assert_no_races(work.path(), &dir);
}

#[test]
fn a_timed_wait_times_out_alone_and_not_when_notified_in_every_mode() {
    let expected = "alone: timed out true\nhelped: timed out false, flag false\n";
    assert_eq!(run_plain("timeout"), expected);
    let work = tempfile::tempdir().unwrap();
    let (dir, stdout) = record_case(work.path(), "timeout");
    assert_eq!(stdout, expected);
    // The timeout was decided by logged clock readings, so replay decides it again the same way.
    let main = events_of(&dir, "main");
    assert!(count(&main, |e| matches!(e, Event::Clock { .. })) >= 2);
    assert_replays(work.path(), &dir, expected.trim_end());
    assert_no_races(work.path(), &dir);
}

#[test]
fn one_condvar_with_two_mutexes_panics_as_std() {
    let out = Command::new(program())
        .arg("two-mutexes")
        .output()
        .expect("run rwlock_condvar");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("attempted to use a condition variable with two mutexes"),
        "{stderr}"
    );
}
