//! Statics, `Once`/`OnceLock`/`LazyLock` and `Barrier` under ppd
//! (`tests/src/bin/once_barrier.rs`): each scenario records, replays with `--verify` to the same
//! output, and shows no race or deadlock; the logs say who registered each static and who
//! initialized each cell, and a run killed at a barrier says where its processes wait.

use std::path::{Path, PathBuf};
use std::process::Child;

use ppd_formats::event::AtomicOp;
use ppd_formats::{Event, ObjectId, Recording};
use ppd_tests::{
    assert_no_races, assert_replays, info_json, output_text, processes, record_program,
    start_recording,
};

const PROGRAM: &str = env!("CARGO_BIN_EXE_once_barrier");

/// Records `scenario`, checks it succeeded, replays it with `--verify` to the same output and
/// finds no race or deadlock. Returns the recording and what the recorded run printed.
fn record_replay_analyze(work: &Path, scenario: &str) -> (PathBuf, String) {
    let dir = work.join(scenario);
    let recorded = record_program(work, &dir, Path::new(PROGRAM), &[scenario], &[]);
    let (printed, stderr) = output_text(&recorded);
    assert!(recorded.status.success(), "{scenario}: {stderr}");
    assert_replays(work, &dir, &printed);
    assert_no_races(work, &dir);
    (dir, printed)
}

/// Every process's events, by process name.
fn logs(dir: &Path) -> Vec<(String, Vec<Event>)> {
    let recording = Recording::open(dir).expect("open recording");
    recording
        .processes()
        .iter()
        .map(|entry| {
            let log = recording.open_log(entry).expect("open log");
            let events = (0..log.event_count())
                .map(|k| log.get(k).expect("event"))
                .collect();
            (entry.name.clone(), events)
        })
        .collect()
}

/// Every `Create` of the run: the object, its name, and the process that logged it.
fn creations(dir: &Path) -> Vec<(ObjectId, Option<String>, String)> {
    logs(dir)
        .into_iter()
        .flat_map(|(process, events)| {
            events.into_iter().filter_map(move |e| match e {
                Event::Create { object, name, .. } => {
                    Some((object, name.map(|n| n.to_string()), process.clone()))
                }
                _ => None,
            })
        })
        .collect()
}

#[test]
fn statics_are_created_once_by_the_process_that_uses_them_first() {
    let work = tempfile::tempdir().unwrap();
    let (dir, printed) = record_replay_analyze(work.path(), "statics");
    assert!(printed.contains("hits 4\n"), "{printed}");
    assert!(printed.contains("table [0, 1, 2, 3]\n"), "{printed}");
    assert!(printed.contains("and square 16\n"), "{printed}");

    let created = creations(&dir);
    // HITS, TABLE, SLOTS, and the atomic and lock of CONFIG and of SQUARES: each once.
    assert_eq!(created.len(), 7, "{created:?}");
    let mut ids: Vec<ObjectId> = created.iter().map(|(id, ..)| *id).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 7, "every object is created once: {created:?}");
    for (id, _, process) in &created {
        // `main` touches no static before the workers run: a worker registers each.
        assert!(process.starts_with("worker-"), "{id} by {process}");
        let recording = Recording::open(&dir).unwrap();
        assert_eq!(
            Some(id.creator()),
            recording.find_process(process).map(|p| p.id),
            "an id is its creator's"
        );
    }
    let names: Vec<_> = created.iter().filter_map(|(_, n, _)| n.clone()).collect();
    for hidden in ["once_lock", "lazy_lock"] {
        assert_eq!(
            names.iter().filter(|n| *n == hidden).count(),
            2,
            "{names:?}"
        );
    }
}

#[test]
fn who_initializes_a_raced_once_lock_replays() {
    let work = tempfile::tempdir().unwrap();
    let (dir, printed) = record_replay_analyze(work.path(), "race");
    let winner = printed
        .lines()
        .find_map(|l| l.strip_prefix("initialized by "))
        .expect("the program names the initializer")
        .to_owned();
    for i in 0..4 {
        assert!(
            printed.contains(&format!(
                "worker-{i} saw the cell initialized by {winner}\n"
            )),
            "{printed}"
        );
    }
    // The initializer took the hidden lock first among those that found the cell empty; the
    // replay printed the same name (`assert_replays` compared every line).
    let (_, events) = logs(&dir)
        .into_iter()
        .find(|(name, _)| *name == winner)
        .expect("the winner is a process");
    assert!(
        events.iter().any(|e| matches!(e, Event::Lock { .. })),
        "the initializer locked the cell: {events:?}"
    );
}

/// How many loads of `object` `events` make.
fn loads_of(events: &[Event], object: ObjectId) -> usize {
    events
        .iter()
        .filter(
            |e| matches!(e, Event::Atomic { object: o, op: AtomicOp::Load, .. } if *o == object),
        )
        .count()
}

#[test]
fn a_process_logs_only_its_first_look_at_a_completed_cell_outside_e_blocks() {
    let work = tempfile::tempdir().unwrap();
    let (dir, printed) = record_replay_analyze(work.path(), "rereads");
    let logs = logs(&dir);
    let cells: Vec<ObjectId> = creations(&dir)
        .into_iter()
        .filter(|(_, name, _)| name.as_deref() == Some("once_lock"))
        .map(|(object, ..)| object)
        .collect();
    let log_of = |process: &str| &logs.iter().find(|(n, _)| n == process).expect(process).1;
    let greeting = *cells
        .iter()
        .find(|&&c| loads_of(log_of("worker-0"), c) > 0)
        .expect("the workers load the greeting's state");
    for i in 0..4 {
        let worker = format!("worker-{i}");
        let empty_looks: usize = printed
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{worker} found it empty ")))
            .and_then(|rest| rest.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| {
                panic!("{worker} says how often it found the cell empty: {printed}")
            });
        // Every look that found it empty, the first that found it set (the one that orders
        // the process after `main`'s set), and both looks inside the e-block; not the hundred
        // looks between.
        assert_eq!(
            loads_of(log_of(&worker), greeting),
            empty_looks + 1 + 2,
            "{worker}: {printed}"
        );
    }
    assert!(
        printed.contains("took Some(1); read 50 before and 100 after"),
        "{printed}"
    );
    let own = *cells
        .iter()
        .find(|&&c| c != greeting && loads_of(log_of("main"), c) > 0)
        .expect("main's own cell");
    // Each `set` of an empty cell looks twice and loads once under the lock; of each fifty
    // reads, only the first of its generation is logged: `take` makes the next a new one.
    assert_eq!(loads_of(log_of("main"), own), 2 * 3 + 2, "{printed}");
}

#[test]
fn every_process_logs_one_look_at_a_cell_set_before_it_started_whatever_its_id() {
    let work = tempfile::tempdir().unwrap();
    let (dir, printed) = record_replay_analyze(work.path(), "many-readers");
    assert_eq!(printed, "read 2100\n");
    let cell = creations(&dir)
        .into_iter()
        .find(|(_, name, _)| name.as_deref() == Some("once_lock"))
        .map(|(object, ..)| object)
        .expect("the cell's state is created");
    let recording = Recording::open(&dir).expect("open recording");
    let ids: Vec<(String, u32)> = recording
        .processes()
        .iter()
        .map(|p| (p.name.clone(), p.id.0))
        .collect();
    let readers: Vec<(String, Vec<Event>)> = logs(&dir)
        .into_iter()
        .filter(|(name, _)| name.starts_with("reader-"))
        .collect();
    assert_eq!(readers.len(), 70);
    // Processes below 64 keep what they have seen in the cell, the others in a table of
    // their own: both kinds are here, and each logs its first look only.
    let id_of = |name: &str| ids.iter().find(|(n, _)| n == name).expect("an id").1;
    assert!(readers.iter().any(|(name, _)| id_of(name) < 64));
    assert!(readers.iter().any(|(name, _)| id_of(name) >= 64));
    for (name, events) in &readers {
        assert_eq!(loads_of(events, cell), 1, "{name} (p{})", id_of(name));
    }
}

#[test]
fn a_panicking_call_once_poisons_and_call_once_force_recovers() {
    let work = tempfile::tempdir().unwrap();
    let (_, printed) = record_replay_analyze(work.path(), "poison");
    assert_eq!(
        printed,
        "first initializer panicked: true\n\
         call_once on the poisoned Once panicked: true\n\
         completed before the forced call: false\n\
         forced call sees poison: true\n\
         completed after the forced call: true\n"
    );
}

#[test]
fn barrier_generations_replay_their_leaders_and_order_arrivals_before_departures() {
    let work = tempfile::tempdir().unwrap();
    // The no-race check is what shows the ordering: every slot is written and read relaxed,
    // and only the barrier orders the writes of a generation before its reads.
    let (_, printed) = record_replay_analyze(work.path(), "barrier");
    assert!(printed.contains("leaders 3\n"), "{printed}");
    let led: Vec<&str> = printed
        .lines()
        .filter(|l| l.contains(" led generations "))
        .collect();
    assert_eq!(led.len(), 4, "{printed}");
}

#[test]
fn barriers_for_zero_and_one_let_every_wait_through_as_leader() {
    let work = tempfile::tempdir().unwrap();
    let (_, printed) = record_replay_analyze(work.path(), "trivial");
    assert_eq!(printed, "new(0) leads true true, new(1) leads true true\n");
}

/// Polls until both waiters' logs end in their wait at the barrier, then kills the program.
fn kill_at_the_barrier(mut child: Child, dir: &Path) {
    // Polled while the program starts: a log the manifest lists may not exist yet.
    let waiting = |name: &str| {
        let Ok(recording) = Recording::open(dir) else {
            return false;
        };
        let last = recording
            .find_process(name)
            .and_then(|entry| recording.open_log(entry).ok())
            .and_then(|log| {
                log.event_count()
                    .checked_sub(1)
                    .and_then(|k| log.get(k).ok())
            });
        matches!(last, Some(Event::Blocked { .. }))
    };
    let mut polls = 0;
    while !(Recording::open(dir).is_ok() && waiting("waiter-0") && waiting("waiter-1")) {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the program ended by itself"
        );
        polls += 1;
        assert!(polls < 3000, "the waiters never blocked");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let pid = Recording::open(dir).unwrap().manifest().os_pid as i32;
    // SAFETY: kill only sends a signal.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0);
    child.wait().unwrap();
}

#[test]
fn a_run_killed_at_a_barrier_says_where_its_processes_wait() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("stuck");
    let child = start_recording(work.path(), &dir, PROGRAM, &["stuck"]);
    kill_at_the_barrier(child, &dir);

    let info = info_json(work.path(), &dir);
    let procs = processes(&info);
    let source = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/src/bin/once_barrier.rs"
    ))
    .unwrap();
    let wait_line = source
        .lines()
        .position(|l| l.contains("MEETING.wait()"))
        .unwrap() as u32
        + 1;
    for waiter in ["waiter-0", "waiter-1"] {
        assert_eq!(procs[waiter]["ending"]["how"], "blocked", "{info:#}");
        assert_eq!(
            procs[waiter]["ending"]["on"], "semaphore barrier",
            "{info:#}"
        );
        let (_, events) = logs(&dir).into_iter().find(|(n, _)| n == waiter).unwrap();
        match events.last() {
            Some(Event::Blocked {
                site: Some(site), ..
            }) => {
                assert!(site.file.ends_with("once_barrier.rs"), "{site:?}");
                assert_eq!(site.line, wait_line, "the user's wait: {site:?}");
            }
            other => panic!("{waiter} ends in {other:?}"),
        }
    }
}
