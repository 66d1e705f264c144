//! ppd's locks used as std's are: real programs (`tests/src/bin/locks.rs`) run unrecorded,
//! recorded, replayed with `--verify`, analysed for races and deadlocks, and asked `why`.

use std::path::{Path, PathBuf};
use std::process::Command;

use ppd_formats::Event;
use ppd_formats::event::Outcome;
use ppd_tests::{events_of, number_after, ppd, record_program};

fn locks() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_locks"))
}

/// Runs case `case` without ppd around it (pass-through); its standard output.
fn run_plain(case: &str) -> String {
    let out = Command::new(locks()).arg(case).output().expect("run locks");
    assert!(
        out.status.success(),
        "locks {case}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

/// Records case `case` into `<work>/<case>`; the directory and the program's standard output.
fn record_case(work: &Path, case: &str) -> (PathBuf, String) {
    let dir = work.join(case);
    let out = record_program(work, &dir, &locks(), &[case], &[]);
    assert!(
        out.status.success(),
        "recording {case} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (dir, String::from_utf8(out.stdout).expect("utf-8"))
}

/// Replays `dir` with `--verify`, which must reproduce every logged event and value.
fn replay_verifies(work: &Path, dir: &Path) {
    let out = ppd(work, &["replay", "--verify", dir.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "replay --verify: {stderr}");
    assert!(
        stderr.contains("every event and logged value matched the recording"),
        "{stderr}"
    );
}

/// The line of `tests/src/bin/locks.rs` holding `needle`.
fn source_line(needle: &str) -> usize {
    let source = include_str!("../src/bin/locks.rs");
    1 + source
        .lines()
        .position(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("{needle} in locks.rs"))
}

#[test]
fn try_lock_answers_are_logged_and_replay_gives_each_back() {
    let plain = run_plain("try");
    assert!(plain.contains("while held: would block = true"), "{plain}");
    assert!(plain.ends_with("nested try = true\n"), "{plain}");

    let work = tempfile::tempdir().unwrap();
    let (dir, stdout) = record_case(work.path(), "try");
    assert!(
        stdout.contains("while held: would block = true"),
        "{stdout}"
    );
    let failed = number_after(&stdout, "tries failed = ");
    let got = number_after(&stdout, "succeeded = ");
    assert!(failed >= 20 && got >= 20, "{stdout}");

    // Every failed try is an answer in the log, every successful one an acquisition.
    let prober = events_of(&dir, "prober");
    let would_block = prober
        .iter()
        .filter(|e| {
            matches!(
                e,
                Event::Outcome {
                    outcome: Outcome::WouldBlock,
                    ..
                }
            )
        })
        .count();
    let acquired = prober
        .iter()
        .filter(|e| {
            matches!(
                e,
                Event::Outcome {
                    outcome: Outcome::Acquired,
                    ..
                }
            )
        })
        .count();
    let locks = prober
        .iter()
        .filter(|e| matches!(e, Event::Lock { .. }))
        .count();
    // The try while `main` held the gate, then the contended ones.
    assert_eq!(would_block as u64, 1 + failed, "{stdout}");
    // The try after `main` let it go, then the contended ones.
    assert_eq!(acquired as u64, 1 + got, "{stdout}");
    assert_eq!(locks, acquired, "{stdout}");

    // Replay gives each try its recorded answer, though the timing that decided it is gone.
    replay_verifies(work.path(), &dir);
    // `nester` took `gate` after `other` by `try_lock`, against `main`'s order: not a potential
    // deadlock.
    ppd_tests::assert_no_races(work.path(), &dir);
}

#[test]
fn a_poisoned_mutex_behaves_as_std_recorded_replayed_and_unrecorded() {
    let expected =
        "poisoned = true\nentries = 2, try_lock poisoned = true, after clear_poison = false\n";
    assert_eq!(run_plain("poison"), expected);
    let work = tempfile::tempdir().unwrap();
    let (dir, stdout) = record_case(work.path(), "poison");
    assert_eq!(stdout, expected);
    replay_verifies(work.path(), &dir);
    ppd_tests::assert_no_races(work.path(), &dir);
}

#[test]
fn a_mutex_of_boxed_closures_records_replays_and_why_names_the_opaque_value() {
    let expected = "total = 91, queue gone = true\n";
    assert_eq!(run_plain("jobs"), expected);
    let work = tempfile::tempdir().unwrap();
    let (dir, stdout) = record_case(work.path(), "jobs");
    assert_eq!(stdout, expected);
    replay_verifies(work.path(), &dir);
    ppd_tests::assert_no_races(work.path(), &dir);

    // `answer` depends on the job taken from the queue, a value the log cannot hold.
    let out = ppd(
        work.path(),
        &["why", dir.to_str().unwrap(), "worker-1", "answer"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let lock_line = source_line("let job = queue.lock()");
    for needed in [
        "locks::take_job of worker-1".to_owned(),
        format!("a lock of mutex #0.0 at tests/src/bin/locks.rs:{lock_line}:"),
        "that needs the locked value, which is not in the log".to_owned(),
        "its type `alloc::vec::Vec<alloc::boxed::Box<dyn core::ops::function::FnOnce() -> u64 + \
         core::marker::Send>>` is not known to be Serialize + Deserialize"
            .to_owned(),
    ] {
        assert!(stderr.contains(&needed), "{needed} not in: {stderr}");
    }
    assert!(!stderr.contains("panicked"), "{stderr}");
}
