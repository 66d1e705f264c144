//! Runs that end badly, end to end with real processes: a thread left blocked when `main`
//! returns, a hang through `join` stopped by SIGKILL, and SIGKILL at random moments of a busy
//! run. For each, `ppd info` says how every process ended and `ppd replay --verify` replays
//! every logged event of every process (or fails saying which it did not).

use std::collections::BTreeMap;
use std::hash::{BuildHasher, Hasher, RandomState};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Output};
use std::time::Duration;

use ppd_formats::{Event, FormatError, Recording};
use ppd_tests::{info_json, ppd, processes, record_program, start_recording};
use serde_json::Value;

const ENDINGS: &str = env!("CARGO_BIN_EXE_endings");
const VICTIM: &str = env!("CARGO_BIN_EXE_victim");

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `ppd replay DIR --verify --json`: the exit status, the summary and what went to stderr
/// (the program's own output among it).
fn replay_verify(cwd: &Path, dir: &Path) -> (Option<i32>, Value, String) {
    let out = ppd(
        cwd,
        &["replay", dir.to_str().unwrap(), "--verify", "--json"],
    );
    let summary: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("replay --json prints JSON ({e}): {}", stderr(&out)));
    (out.status.code(), summary, stderr(&out))
}

/// Checks that the replay covered every logged event of every process, as the recording's
/// own logs count them.
fn assert_every_event_replayed(dir: &Path, summary: &Value, context: &str) {
    let recording = Recording::open(dir).unwrap();
    let by_process = summary["by_process"].as_array().expect("by_process");
    assert_eq!(by_process.len(), recording.processes().len(), "{context}");
    let mut total = 0;
    for entry in recording.processes() {
        // A kill between the manifest naming a new process and its log's creation leaves no
        // log: the process logged nothing.
        let logged = match recording.open_log(entry) {
            Ok(log) => log.event_count(),
            Err(FormatError::Missing { .. }) => 0,
            Err(e) => panic!("{context}: {e}"),
        };
        total += logged;
        let p = by_process
            .iter()
            .find(|p| p["id"] == entry.id.0)
            .unwrap_or_else(|| panic!("{context}: no {} in {summary:#}", entry.name));
        assert_eq!(
            p["logged"], logged,
            "{context}: {}: {summary:#}",
            entry.name
        );
        assert_eq!(
            p["replayed"], logged,
            "{context}: {} replayed {} of {logged} events: {summary:#}",
            entry.name, p["replayed"]
        );
    }
    assert_eq!(summary["events"], total, "{context}: {summary:#}");
    assert_eq!(summary["logged"], total, "{context}: {summary:#}");
}

/// `ppd replay --verify` exits 0 having replayed every logged event of every process. Returns
/// its summary and what it printed on stderr.
fn assert_replays_every_event(cwd: &Path, dir: &Path, context: &str) -> (Value, String) {
    let (code, summary, err) = replay_verify(cwd, dir);
    let context = format!("{context}: {err}");
    assert_eq!(code, Some(0), "{context}");
    assert_every_event_replayed(dir, &summary, &context);
    (summary, err)
}

/// The last event of process `name`'s log, read while the program may still be running.
fn last_event(dir: &Path, name: &str) -> Option<Event> {
    let recording = Recording::open(dir).ok()?;
    let entry = recording.find_process(name)?.clone();
    let log = recording.open_log(&entry).ok()?;
    let n = log.event_count();
    n.checked_sub(1).and_then(|k| log.get(k).ok())
}

fn sigkill(pid: i32) {
    // SAFETY: kill only sends a signal.
    let killed = unsafe { libc::kill(pid, libc::SIGKILL) };
    assert_eq!(killed, 0, "kill {pid}: {}", std::io::Error::last_os_error());
}

#[test]
fn a_thread_left_blocked_when_main_returns_is_replayed_to_its_last_event() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("rec");
    let out = record_program(
        work.path(),
        &dir,
        Path::new(ENDINGS),
        &["blocked-thread"],
        &[],
    );
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert!(
        !stderr(&out).contains("recovered after"),
        "a normal exit is not a crash: {}",
        stderr(&out)
    );

    let info = info_json(work.path(), &dir);
    assert_eq!(info["run_ending"]["how"], "exited", "{info:#}");
    assert_eq!(info["run_ending"]["code"], 4, "{info:#}");
    let procs = processes(&info);
    assert_eq!(procs["main"]["ending"]["how"], "exited", "{info:#}");
    assert_eq!(
        procs["main"]["ending_text"], "exited with code 4",
        "{info:#}"
    );
    let waiter = &procs["waiter"];
    assert_eq!(waiter["ending"]["how"], "blocked", "{info:#}");
    assert_eq!(waiter["ending"]["on"], "channel jobs", "{info:#}");
    assert_eq!(
        waiter["ending"]["since_event"].as_u64().unwrap() + 1,
        waiter["events"].as_u64().unwrap()
    );
    let text = String::from_utf8_lossy(&ppd(work.path(), &["info", dir.to_str().unwrap()]).stdout)
        .into_owned();
    assert!(text.contains("the program exited with code 4"), "{text}");
    assert!(!text.contains("after crash"), "{text}");

    // The outcome must not depend on how the threads of the replay happen to be scheduled.
    for round in 0..3 {
        let (code, summary, err) = replay_verify(work.path(), &dir);
        let context = format!("replay {round}: {err}");
        assert_eq!(code, Some(0), "{context}");
        assert_eq!(summary["outcome"], "reproduced", "{context}");
        assert_eq!(summary["exit_code"], 4, "{context}");
        assert_every_event_replayed(&dir, &summary, &context);
        assert!(err.contains("waiter: waiting for a job"), "{context}");
        assert!(err.contains("with processes still alive"), "{context}");
    }
}

/// What a wait looks like at the end of a process's log.
type WaitMarker = fn(&Event) -> bool;

/// Waits until each named process's log ends in the wait its marker matches, then SIGKILLs the
/// recorded program and checks the wrapper passed the signal on. The program ending by itself,
/// or the waits never showing, is a failure rather than a hang (the bound is generous: each
/// marker is logged as its wait begins). Returns how many polls it took.
fn kill_in_waits(mut child: Child, dir: &Path, waits: &[(&str, WaitMarker)]) -> u64 {
    let mut polls = 0;
    while !waits
        .iter()
        .all(|(name, is_wait)| last_event(dir, name).is_some_and(|e| is_wait(&e)))
    {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the program ended by itself"
        );
        polls += 1;
        assert!(
            polls < 3000,
            "the logs never ended in their waits: {:?}",
            waits
                .iter()
                .map(|(name, _)| (name, last_event(dir, name)))
                .collect::<Vec<_>>()
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let recording = Recording::open(dir).unwrap();
    sigkill(recording.manifest().os_pid as i32);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(137), "{}", stderr(&out));
    polls
}

#[test]
fn a_hang_through_join_is_a_deadlock_reported_by_name() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("rec");
    let child = start_recording(work.path(), &dir, ENDINGS, &["join-hang"]);
    let polls = kill_in_waits(
        child,
        &dir,
        &[
            ("main", |e| matches!(e, Event::JoinBlocked { .. })),
            ("fetcher", |e| matches!(e, Event::Blocked { .. })),
        ],
    );

    let info = info_json(work.path(), &dir);
    assert_eq!(info["run_ending"]["how"], "killed", "{info:#}");
    assert_eq!(info["run_ending"]["signal"], 9, "{info:#}");
    let procs = processes(&info);
    assert_eq!(procs["main"]["ending"]["how"], "blocked", "{info:#}");
    assert_eq!(
        procs["main"]["ending"]["on"], "the end of fetcher (p1)",
        "{info:#}"
    );
    assert_eq!(
        procs["fetcher"]["ending"]["on"], "channel requests",
        "{info:#}"
    );

    let races = ppd(work.path(), &["races", dir.to_str().unwrap(), "--json"]);
    let report: Value = serde_json::from_slice(&races.stdout).unwrap();
    let cycles = report["deadlocks"]["cycles"].as_array().unwrap();
    assert_eq!(cycles.len(), 1, "after {polls} polls: {report:#}");
    let members: Vec<(&str, &str)> = cycles[0]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            (
                b["process"].as_str().unwrap(),
                b["object"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        members,
        vec![("main", "fetcher (p1)"), ("fetcher", "requests")],
        "{report:#}"
    );
    assert!(
        report["deadlocks"]["running"]
            .as_array()
            .unwrap()
            .is_empty(),
        "main waits in join, it is not running: {report:#}"
    );

    // main's log ends right after the spawn: however the replay's threads are scheduled, the
    // fetcher must still be replayed after main reached the end of its log.
    for round in 0..5 {
        let (_, err) = assert_replays_every_event(work.path(), &dir, &format!("replay {round}"));
        assert!(
            err.contains("this recording was cut short"),
            "replay {round}: {err}"
        );
    }
}

/// A write that waits for room in a socket's buffers is a wait like a read's: killed there, the
/// writer's log ends in `Blocked` on the socket, and `ppd info` says it was blocked writing.
#[test]
fn a_write_to_a_full_socket_is_a_wait_the_recording_names() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("rec");
    let child = start_recording(work.path(), &dir, ENDINGS, &["full-socket"]);
    kill_in_waits(
        child,
        &dir,
        &[
            ("main", |e| matches!(e, Event::JoinBlocked { .. })),
            ("writer", |e| matches!(e, Event::Blocked { .. })),
        ],
    );

    let info = info_json(work.path(), &dir);
    let writer = &processes(&info)["writer"];
    assert_eq!(writer["ending"]["how"], "blocked", "{info:#}");
    let on = writer["ending"]["on"].as_str().unwrap();
    assert!(on.starts_with("tcp socket 127.0.0.1:"), "{info:#}");
    assert!(
        writer["ending_text"]
            .as_str()
            .unwrap()
            .ends_with("when the run was cut short"),
        "{info:#}"
    );

    assert_replays_every_event(work.path(), &dir, "replay");
}

#[test]
fn a_run_killed_during_a_sleep_says_the_sleeper_was_asleep_and_replays_without_sleeping() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("rec");
    let mut child = start_recording(work.path(), &dir, ENDINGS, &["long-sleep"]);
    // The sleeper logs its sleep just after printing this line.
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    assert_eq!(lines.next().unwrap().unwrap(), "sleeper: sleeping");
    kill_in_waits(
        child,
        &dir,
        &[
            ("main", |e| matches!(e, Event::JoinBlocked { .. })),
            ("sleeper", |e| matches!(e, Event::Sleep { .. })),
        ],
    );

    let info = info_json(work.path(), &dir);
    let procs = processes(&info);
    assert_eq!(procs["sleeper"]["ending"]["how"], "blocked", "{info:#}");
    assert_eq!(
        procs["sleeper"]["ending"]["on"], "a sleep of 600s (only time ends it)",
        "{info:#}"
    );
    assert_eq!(
        procs["main"]["ending"]["on"], "the end of sleeper (p1)",
        "{info:#}"
    );

    // A sleep is no wait on another process: no deadlock.
    let races = ppd(work.path(), &["races", dir.to_str().unwrap(), "--json"]);
    let report: Value = serde_json::from_slice(&races.stdout).unwrap();
    assert!(
        report["deadlocks"]["cycles"].as_array().unwrap().is_empty(),
        "{report:#}"
    );

    // The replay does not sleep ten minutes: it replays the sleep marker and holds the sleeper
    // at the end of its log.
    assert_replays_every_event(work.path(), &dir, "replay");
}

#[test]
fn a_process_waiting_where_ppd_cannot_see_ends_the_replay_at_its_last_event() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("rec");
    let mut child = start_recording(work.path(), &dir, ENDINGS, &["outside-wait"]);
    // The reader's third mark is its last event; main then waits in its join.
    while !(matches!(last_event(&dir, "reader"), Some(Event::Mark { .. }))
        && recording_events(&dir, "reader") == 4
        && matches!(last_event(&dir, "main"), Some(Event::JoinBlocked { .. })))
    {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the program ended by itself"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    sigkill(Recording::open(&dir).unwrap().manifest().os_pid as i32);
    child.wait().unwrap();

    // The replayed reader waits on its std channel forever after its last event; the replay
    // ends anyway, because every process has replayed its whole log.
    assert_replays_every_event(work.path(), &dir, "replay");
    let info = info_json(work.path(), &dir);
    assert_eq!(
        processes(&info)["reader"]["ending_text"],
        "cut short after event 3",
        "{info:#}"
    );
}

/// Events in process `name`'s log so far.
fn recording_events(dir: &Path, name: &str) -> u64 {
    Recording::open(dir)
        .ok()
        .and_then(|r| {
            let entry = r.find_process(name)?.clone();
            Some(r.open_log(&entry).ok()?.event_count())
        })
        .unwrap_or(0)
}

/// A random number in `0..n`, different in every call.
fn random_below(n: u64) -> u64 {
    let mut h = RandomState::new().build_hasher();
    h.write_u64(n);
    h.finish() % n
}

/// Records `victim MODE PIDFILE` as trial `trial` in `work`; once `before_kill` has read what
/// it wanted of the program's output, kills the program by its pid file and checks that
/// `ppd record` says so. Returns the recording.
fn record_victim_and_kill(
    work: &Path,
    trial: usize,
    mode: &str,
    before_kill: impl FnOnce(&mut dyn Iterator<Item = std::io::Result<String>>),
) -> std::path::PathBuf {
    let dir = work.join(format!("rec-{trial}"));
    let pidfile = work.join(format!("victim-{trial}.pid"));
    let mut child = start_recording(work, &dir, VICTIM, &[mode, pidfile.to_str().unwrap()]);
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    before_kill(&mut lines);
    let pid: i32 = loop {
        match std::fs::read_to_string(&pidfile) {
            Ok(text) => break text.trim().parse().expect("a pid"),
            Err(_) => std::thread::yield_now(),
        }
    };
    sigkill(pid);
    for _ in lines {}
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(137), "{}", stderr(&out));
    dir
}

#[test]
fn sigkill_at_random_moments_replays_every_logged_event() {
    let work = tempfile::tempdir().unwrap();
    for trial in 0..20 {
        // Kill after a random number of rounds (0: while processes may still be starting).
        let rounds = random_below(60);
        let dir = record_victim_and_kill(work.path(), trial, "spin", |lines| {
            for _ in 0..rounds {
                lines.next();
            }
        });
        let context = format!("trial {trial}, killed after {rounds} rounds");
        let (summary, err) = assert_replays_every_event(work.path(), &dir, &context);
        assert_eq!(summary["outcome"], "reproduced", "{context}: {err}");
        assert!(
            err.contains("this recording was cut short: the program was killed by signal 9"),
            "{context}: {err}"
        );
    }
}

/// Four processes contend for two atomics, each appending an access's event after letting
/// the next access through; a kill leaves accesses made and not appended, which their logs'
/// pending access records hold. Every logged version then has the versions before it: the
/// replay reproduces every event of every process.
#[test]
fn sigkill_amid_atomic_accesses_replays_every_version() {
    let work = tempfile::tempdir().unwrap();
    let mut rebuilt = 0;
    for trial in 0..6 {
        let dir = record_victim_and_kill(work.path(), trial, "atomics", |lines| {
            assert_eq!(lines.next().unwrap().unwrap(), "running");
            std::thread::sleep(Duration::from_millis(5 + random_below(40)));
        });
        let recording = Recording::open(&dir).unwrap();
        rebuilt += recording
            .processes()
            .iter()
            .filter(|p| recording.open_log(p).unwrap().pending_access().is_some())
            .count();
        let (summary, err) =
            assert_replays_every_event(work.path(), &dir, &format!("trial {trial}"));
        assert_eq!(summary["outcome"], "reproduced", "trial {trial}: {err}");
    }
    // A kill mostly finds some worker between an access and its append; trials in which none
    // was would not have tested the record.
    assert!(
        rebuilt > 0,
        "no log ended with an access rebuilt from its pending record"
    );
}

#[test]
fn a_panic_inside_an_eblock_is_an_outcome_why_and_what_if_explain() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("rec");
    let rec = dir.to_str().unwrap();
    let out = record_program(
        work.path(),
        &dir,
        Path::new(ENDINGS),
        &["eblock-panic"],
        &[],
    );
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));

    let info = info_json(work.path(), &dir);
    let procs = processes(&info);
    let ending = &procs["teller"]["ending"];
    assert_eq!(ending["how"], "panicked", "{info:#}");
    assert_eq!(ending["message"], "overdrawn: -5000", "{info:#}");
    assert_eq!(ending["file"], "tests/src/bin/endings.rs", "{info:#}");
    assert!(ending["line"].as_u64().unwrap() > 0, "{info:#}");
    assert_eq!(
        procs["main"]["ending_text"], "exited with code 3",
        "{info:#}"
    );

    // why answers for a value defined before the panic, in the instance that panicked: its
    // re-execution panics as the recorded one did, which is no leak.
    let why = ppd(
        work.path(),
        &["why", rec, "teller", "after", "--at", "mark overdrawn"],
    );
    let text = String::from_utf8_lossy(&why.stdout);
    assert_eq!(why.status.code(), Some(0), "{text}{}", stderr(&why));
    assert!(text.contains("after = -5000"), "{text}");
    assert!(text.contains("amount = 5020"), "{text}");
    assert!(text.contains("balance = 20"), "{text}");
    assert!(!text.contains("leak"), "{text}");

    // --what-if on that instance shows the changed outcome.
    let what_if = |amount: &str| -> Value {
        let out = ppd(
            work.path(),
            &[
                "why",
                rec,
                "teller",
                "--what-if",
                &format!("amount={amount}"),
                "--at",
                "mark overdrawn",
                "--json",
            ],
        );
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let changed = what_if("5");
    let place = ending["line"].as_u64().unwrap();
    assert_eq!(
        changed["ending"],
        serde_json::json!([
            format!("panics: \"overdrawn: -5000\" at tests/src/bin/endings.rs:{place}"),
            "no longer panics: returns 15"
        ]),
        "{changed:#}"
    );
    assert_eq!(changed["left_the_log"], Value::Null, "{changed:#}");
    // An earlier instance, which returned, still answers with its return value.
    let earlier = ppd(
        work.path(),
        &[
            "why",
            rec,
            "teller",
            "--what-if",
            "amount=5",
            "--at",
            "withdraw#2",
            "--json",
        ],
    );
    let earlier: Value = serde_json::from_slice(&earlier.stdout).unwrap();
    assert_eq!(earlier["ending"], Value::Null, "{earlier:#}");
    assert_eq!(earlier["outcomes"][0]["what_if"], "65", "{earlier:#}");
}

#[test]
fn a_predicate_that_never_holds_is_explained_in_the_users_names() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("rec");
    let rec = dir.to_str().unwrap();
    let out = record_program(work.path(), &dir, Path::new(ENDINGS), &["token-pair"], &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let recording = Recording::open(&dir).unwrap();
    // The names are not the ids: P3 is p1, P1 is p2.
    assert_eq!(recording.find_process("P3").unwrap().id.0, 1);
    assert_eq!(recording.find_process("P1").unwrap().id.0, 2);

    let out = ppd(
        work.path(),
        &[
            "replay",
            rec,
            "--stop",
            "P1: mark holding & P3: mark holding",
        ],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(
            "every part held at some point (P3 3 times, P1 3 times), but never all at once in a \
             consistent global state"
        ),
        "{err}"
    );
    assert!(!err.contains("p1") && !err.contains("p2"), "{err}");

    // A part that never holds is named as the user wrote it.
    let out = ppd(
        work.path(),
        &[
            "replay",
            rec,
            "--stop",
            "P1: mark holding if value > 100 & P3: mark holding",
        ],
    );
    let err = stderr(&out);
    assert!(
        err.contains("the part about P1 never held in this run"),
        "{err}"
    );

    // --to with the other processes left out: they move only as far as P3's state needs.
    let out = ppd(work.path(), &["replay", rec, "--to", "P3=1", "--json"]);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    let state: Value = serde_json::from_slice(&out.stdout).unwrap();
    let events: BTreeMap<&str, u64> = state["processes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["name"].as_str().unwrap(), p["events"].as_u64().unwrap()))
        .collect();
    // P3's first event (its start) needs main's spawn of it, and nothing of P1.
    assert_eq!(events["P3"], 1, "{state:#}");
    assert_eq!(events["P1"], 0, "{state:#}");
    assert!(events["main"] > 0, "{state:#}");
    assert!(
        err.contains(&format!(
            "not listed, but needed for a consistent state: main to {} events",
            events["main"]
        )),
        "{err}"
    );
    // A listed process that must move past its target makes the cut unreachable, in names.
    let out = ppd(work.path(), &["replay", rec, "--to", "P3=3,P1=0"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("P1 had to run on to"), "{err}");
    // One rule for names: `p2` is P1 here (no process is called p2), and an unknown name
    // lists the processes there are.
    let out = ppd(work.path(), &["replay", rec, "--to", "p2=1"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = ppd(work.path(), &["replay", rec, "--to", "P4=1"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(
            "no process `P4` in the recording (its processes: main (p0), P3 (p1), P1 (p2))"
        ),
        "{err}"
    );
}

/// An atomic access whose `fetch_update` closure panics gives the atomic's version back while
/// unwinding: the recorded program goes on using the atomic (another process too), and the
/// accesses that happened hold versions 1 and 2, without a gap where the panicked one was.
#[test]
fn an_atomic_access_that_panics_gives_its_version_back() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("rec");
    let out = record_program(
        work.path(),
        &dir,
        Path::new(ENDINGS),
        &["atomic-panic"],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("main: update panicked: true"), "{stdout}");
    assert!(stdout.contains("main: hits 2"), "{stdout}");

    let recording = Recording::open(&dir).unwrap();
    let mut versions = Vec::new();
    for entry in recording.processes() {
        let log = recording.open_log(entry).unwrap();
        for k in 0..log.event_count() {
            if let Event::Atomic { version, .. } = log.get(k).unwrap() {
                versions.push(version);
            }
        }
    }
    versions.sort_unstable();
    assert_eq!(versions, [1, 2], "the adder's add and main's load");
}
