//! The death of the recorded program, end to end through `ppd record` with real processes: a
//! process that panics logs its panic while the others finish; a program that aborts or is
//! killed with SIGKILL leaves a readable recording holding every event it completed; `ppd record`
//! passes the program's exit status through.
//!
//! The program is `victim` (tests/src/bin/victim.rs): a hub and four workers exchanging messages
//! and taking a shared lock, dying in the way its first argument says.

use std::hash::{BuildHasher, Hasher, RandomState};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use ppd_formats::{Event, Recording};
use ppd_tests::{info_json, ppd, ppd_bin, processes};
use serde_json::Value;

const VICTIM: &str = env!("CARGO_BIN_EXE_victim");
/// The victim's workers and rounds (see victim.rs).
const WORKERS: u64 = 4;
const ROUNDS: u64 = 200;
const DOOM_ROUND: u64 = 100;

/// `ppd record -o DIR -- victim ARGS...`, run in `cwd`.
fn record_victim(cwd: &Path, dir: &Path, args: &[&str]) -> Output {
    let mut all = vec!["record", "-o", dir.to_str().unwrap(), "--", VICTIM];
    all.extend_from_slice(args);
    ppd(cwd, &all)
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// How many events of `kind` process `p` logged.
fn count(p: &Value, kind: &str) -> u64 {
    p["by_kind"][kind].as_u64().unwrap_or(0)
}

fn expected_names() -> Vec<String> {
    let mut names = vec!["main".to_owned(), "hub".to_owned()];
    names.extend((0..WORKERS).map(|i| format!("worker-{i}")));
    names.sort();
    names
}

/// The events of process `name` in the recording at `dir`.
fn events_of(dir: &Path, name: &str) -> Vec<Event> {
    let recording = Recording::open(dir).expect("open the recording");
    let entry = recording
        .find_process(name)
        .unwrap_or_else(|| panic!("no process {name}"))
        .clone();
    let log = recording.open_log(&entry).expect("open the log");
    log.events()
        .map(|e| e.expect("every event decodes").1)
        .collect()
}

#[test]
fn a_panicking_process_logs_its_panic_and_the_others_finish() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("rec");
    let out = record_victim(work.path(), &dir, &["panic"]);
    let err = stderr(&out);
    // The victim reports the panicked worker and exits 3; ppd passes the 3 through.
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("injected panic in worker-1"), "{err}");
    assert!(err.contains("victim: panicked: worker-1"), "{err}");
    assert!(err.contains("ppd: recorded 6 processes"), "{err}");

    let info = info_json(work.path(), &dir);
    assert_eq!(info["complete"], true, "{info:#}");
    let procs = processes(&info);
    assert_eq!(
        procs.keys().cloned().collect::<Vec<_>>(),
        expected_names(),
        "{info:#}"
    );
    for (name, p) in &procs {
        assert_eq!(p["state"], "complete", "{name}: {p:#}");
        assert_eq!(p["complete"], true, "{name}: {p:#}");
    }
    // worker-1 died at the start of round 100: 100 rounds of lock / request / reply, plus
    // `ready` and `go`, then its panic — and no exit.
    let doomed = &procs["worker-1"];
    assert_eq!(count(doomed, "panic"), 1, "{doomed:#}");
    assert_eq!(count(doomed, "exit"), 0, "{doomed:#}");
    assert_eq!(count(doomed, "lock"), DOOM_ROUND, "{doomed:#}");
    assert_eq!(count(doomed, "send"), DOOM_ROUND + 1, "{doomed:#}");
    assert_eq!(count(doomed, "recv"), DOOM_ROUND + 1, "{doomed:#}");
    // Everybody else ran to the end.
    for i in [0, 2, 3] {
        let p = &procs[&format!("worker-{i}")];
        assert_eq!(count(p, "exit"), 1, "{p:#}");
        assert_eq!(count(p, "panic"), 0, "{p:#}");
        assert_eq!(count(p, "lock"), ROUNDS, "{p:#}");
    }
    let hub = &procs["hub"];
    assert_eq!(count(hub, "recv"), 3 * ROUNDS + DOOM_ROUND, "{hub:#}");
    assert_eq!(count(hub, "exit"), 1, "{hub:#}");
    // main joined every worker, the panicked one included.
    assert_eq!(count(&procs["main"], "join"), WORKERS + 1);
    assert_eq!(count(&procs["main"], "exit"), 1);

    // The Panic event says what and where, and it is the process's last event.
    let events = events_of(&dir, "worker-1");
    match events.last() {
        Some(Event::Panic {
            message,
            file,
            line,
        }) => {
            assert_eq!(
                &**message, "injected panic in worker-1 at round 100",
                "{events:?}"
            );
            assert!(file.ends_with("victim.rs"), "{file}");
            assert!(*line > 0);
        }
        other => panic!("worker-1's last event is {other:?}, not its panic"),
    }

    // The text summary shows every process and the panicking one's events.
    let text = ppd(work.path(), &["info", dir.to_str().unwrap()]);
    assert!(text.status.success(), "{}", stderr(&text));
    let text = String::from_utf8_lossy(&text.stdout);
    for name in expected_names() {
        assert!(text.contains(&name), "no {name} in\n{text}");
    }
    let doomed_block: String = text
        .lines()
        .skip_while(|l| !l.contains("worker-1"))
        .take(2)
        .collect::<Vec<_>>()
        .join("\n");
    assert!(doomed_block.contains("panic 1"), "{text}");
}

#[test]
fn a_panicking_main_exits_with_101_and_logs_its_panic() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("rec");
    let out = record_victim(work.path(), &dir, &["panic-main"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(101), "{err}");
    let info = info_json(work.path(), &dir);
    assert_eq!(info["complete"], true, "{info:#}");
    assert_eq!(info["exit_code"], 101, "{info:#}");
    let procs = processes(&info);
    assert_eq!(procs.keys().cloned().collect::<Vec<_>>(), expected_names());
    assert_eq!(count(&procs["main"], "panic"), 1);
    assert_eq!(count(&procs["main"], "exit"), 0);
    match events_of(&dir, "main").last() {
        Some(Event::Panic { message, .. }) => {
            assert!(message.contains("injected panic in main"), "{message}")
        }
        other => panic!("main's last event is {other:?}, not its panic"),
    }
}

#[test]
fn an_aborting_program_leaves_a_recovered_recording_of_every_process() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("rec");
    let out = record_victim(work.path(), &dir, &["abort"]);
    let err = stderr(&out);
    // SIGABRT: 128 + 6.
    assert_eq!(out.status.code(), Some(134), "{err}");
    assert!(err.contains("ppd: recorded 6 processes"), "{err}");
    assert!(
        err.contains("recovered after the program killed by signal 6"),
        "{err}"
    );

    let info = info_json(work.path(), &dir);
    assert_eq!(info["complete"], false, "{info:#}");
    assert_eq!(info["exit_code"], Value::Null, "{info:#}");
    let procs = processes(&info);
    assert_eq!(
        procs.keys().cloned().collect::<Vec<_>>(),
        expected_names(),
        "{info:#}"
    );
    for (name, p) in &procs {
        assert_eq!(p["damage"], Value::Array(vec![]), "{name}: {p:#}");
        assert_eq!(count(p, "start"), 1, "{name}: {p:#}");
        assert_eq!(count(p, "panic"), 0, "{name}: {p:#}");
        // main, the hub and worker-2 were running when it aborted; another worker may, on a
        // busy machine, have finished its rounds first and closed its log.
        let finished = count(p, "exit") == 1;
        if finished {
            assert!(
                !["main", "hub", "worker-2"].contains(&name.as_str()),
                "{name}: {p:#}"
            );
            // The abort may also land between its exit event and the closing of its log.
            assert!(
                p["state"] == "complete" || p["state"] == "recovered after crash",
                "{name}: {p:#}"
            );
        } else {
            assert_eq!(p["state"], "recovered after crash", "{name}: {p:#}");
        }
    }
    assert!(
        procs
            .values()
            .any(|p| p["state"] == "recovered after crash"),
        "{info:#}"
    );
    // worker-2 aborted at the start of round 100, after everything it had done was logged.
    let doomed = &procs["worker-2"];
    assert_eq!(count(doomed, "lock"), DOOM_ROUND, "{doomed:#}");
    assert_eq!(count(doomed, "unlock"), DOOM_ROUND, "{doomed:#}");
    assert_eq!(count(doomed, "send"), DOOM_ROUND + 1, "{doomed:#}");
    assert_eq!(count(doomed, "recv"), DOOM_ROUND + 1, "{doomed:#}");
    // No receive without its send, even cut off at an arbitrary point: the hub received no
    // more requests than the workers logged sending (each also sent one `ready` to main), and
    // the workers received no more replies than the hub logged sending (plus one `go` each).
    let workers: Vec<&Value> = (0..WORKERS)
        .map(|i| &procs[&format!("worker-{i}")])
        .collect();
    let worker_sends: u64 = workers.iter().map(|p| count(p, "send")).sum();
    let worker_recvs: u64 = workers.iter().map(|p| count(p, "recv")).sum();
    let hub = &procs["hub"];
    assert!(count(hub, "recv") <= worker_sends - WORKERS, "{info:#}");
    assert!(worker_recvs - WORKERS <= count(hub, "send"), "{info:#}");
    // Every event the summary counts can be read back.
    for name in expected_names() {
        let n = events_of(&dir, &name).len() as u64;
        assert_eq!(n, procs[&name]["events"].as_u64().unwrap(), "{name}");
    }
}

/// A random number in `0..n`, different in every call.
fn random_below(n: u64) -> u64 {
    let mut h = RandomState::new().build_hasher();
    h.write_u64(n);
    h.finish() % n
}

/// How a SIGKILL run is set up.
#[derive(Debug, Clone, Copy)]
struct KillPlan {
    /// Rounds the victim reports before the kill.
    rounds: u64,
    /// Wait after that report, so the kill does not line up with it.
    extra_wait: Duration,
    /// Record with the smallest blocks and ring (4 KiB, 2 slots): many sealed blocks, frames
    /// being written and writers waiting for free slots when the kill comes.
    small_blocks: bool,
}

/// Starts `ppd record -- victim spin PIDFILE`, lets it complete some rounds, waits a little
/// more, kills the victim (not ppd) with SIGKILL and checks that the recording holds at least
/// everything the victim reported.
fn kill_spinning_victim(plan: KillPlan) {
    let KillPlan {
        rounds,
        extra_wait,
        small_blocks,
    } = plan;
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("rec");
    let pidfile = work.path().join("victim.pid");
    let mut command = Command::new(ppd_bin());
    if small_blocks {
        command
            .env("PPD_BLOCK_SIZE", "4096")
            .env("PPD_RING_BLOCKS", "2");
    }
    let mut child = command
        .args(["record", "-o", dir.to_str().unwrap(), "--", VICTIM, "spin"])
        .arg(&pidfile)
        .current_dir(work.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start ppd record");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut reported = 0u64;
    while reported < rounds {
        match lines.next() {
            Some(Ok(line)) => reported = parse_round(&line),
            _ => {
                let out = child.wait_with_output().unwrap();
                panic!(
                    "the victim stopped after {reported} rounds by itself: {}",
                    stderr(&out)
                );
            }
        }
    }
    std::thread::sleep(extra_wait);
    let pid: i32 = std::fs::read_to_string(&pidfile)
        .expect("the victim wrote its pid before its first round")
        .trim()
        .parse()
        .expect("a pid");
    assert_ne!(pid as u32, child.id(), "kill the victim, not ppd");
    // SAFETY: kill only sends a signal.
    let killed = unsafe { libc::kill(pid, libc::SIGKILL) };
    assert_eq!(killed, 0, "kill {pid}: {}", std::io::Error::last_os_error());
    // Whatever it reported up to its death: the last line names the last completed round.
    for line in lines {
        match line {
            Ok(line) if line.starts_with("round ") => reported = parse_round(&line),
            // A line cut by the kill.
            _ => {}
        }
    }
    let out = child.wait_with_output().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(137), "ppd record: {err}");
    assert!(err.contains("killed by signal 9"), "{err}");

    let info = info_json(work.path(), &dir);
    let procs = processes(&info);
    let mut names = vec!["main".to_owned()];
    names.extend((0..WORKERS).map(|i| format!("worker-{i}")));
    names.sort();
    assert_eq!(procs.keys().cloned().collect::<Vec<_>>(), names, "{info:#}");
    for (name, p) in &procs {
        assert_eq!(p["state"], "recovered after crash", "{name}: {p:#}");
        assert_eq!(p["damage"], Value::Array(vec![]), "{name}: {p:#}");
    }
    // Per reported round main logged one send and one receive per worker and one lock; each
    // worker logged a receive, a lock and the send of the reply main got.
    let main = &procs["main"];
    let context = format!("{plan:?}, killed after {reported} reported rounds: {info:#}");
    assert!(count(main, "lock") >= reported, "{context}");
    assert!(count(main, "recv") >= WORKERS * reported, "{context}");
    assert!(count(main, "send") >= WORKERS * reported, "{context}");
    for i in 0..WORKERS {
        let p = &procs[&format!("worker-{i}")];
        assert!(count(p, "send") >= reported, "worker-{i}: {context}");
        assert!(count(p, "lock") >= reported, "worker-{i}: {context}");
    }
    // main: a send and a receive per worker, a lock and an unlock; each worker: a receive, a
    // lock, an unlock and a send.
    let per_round = 2 + 6 * WORKERS;
    assert!(
        info["events"].as_u64().unwrap() >= per_round * reported,
        "{context}"
    );
    // And what the summary counts reads back.
    let n = events_of(&dir, "main").len() as u64;
    assert_eq!(n, main["events"].as_u64().unwrap());
}

fn parse_round(line: &str) -> u64 {
    line.strip_prefix("round ")
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("unexpected victim output {line:?}"))
}

#[test]
fn sigkill_at_random_moments_loses_no_completed_event() {
    // Early (while processes may still be starting up), and after a few thousand events, with a
    // random extra delay so the kill does not line up with a report.
    let mut plans = vec![KillPlan {
        rounds: 1,
        extra_wait: Duration::ZERO,
        small_blocks: false,
    }];
    for i in 0..7 {
        plans.push(KillPlan {
            rounds: 1 + random_below(3000),
            extra_wait: Duration::from_micros(random_below(20_000)),
            small_blocks: i % 2 == 0,
        });
    }
    for plan in plans {
        kill_spinning_victim(plan);
    }
}

#[test]
fn recording_into_a_non_empty_directory_is_refused() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("rec");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("precious.txt"), "keep me").unwrap();
    let out = record_victim(work.path(), &dir, &["ok"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("not empty"), "{}", stderr(&out));
    // The program did not run into it.
    let entries: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(entries, vec![dir.join("precious.txt")]);
}

#[test]
fn a_program_not_built_with_ppd_is_explained() {
    let work = tempfile::tempdir().unwrap();
    // It succeeds but writes no recording: ppd says why, as bad input.
    let dir = work.path().join("true");
    let out = ppd(
        work.path(),
        &["record", "-o", dir.to_str().unwrap(), "--", "true"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("#[ppd::main]"), "{}", stderr(&out));
    // It fails: it is still not a program ppd records (exit code 2), and its own exit code is
    // said.
    let dir = work.path().join("sh");
    let out = ppd(
        work.path(),
        &[
            "record",
            "-o",
            dir.to_str().unwrap(),
            "--",
            "sh",
            "-c",
            "exit 7",
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("sh exited with code 7 without writing a recording"),
        "{}",
        stderr(&out)
    );
    assert!(!dir.exists(), "the directory ppd made for it is gone");
}

#[test]
fn the_victim_runs_natively_too() {
    let native = |mode: &str| {
        Command::new(VICTIM)
            .arg(mode)
            .env_remove("PPD_MODE")
            .env_remove("PPD_DIR")
            .output()
            .unwrap()
    };
    let ok = native("ok");
    assert!(ok.status.success(), "{}", stderr(&ok));
    let panic = native("panic");
    assert_eq!(panic.status.code(), Some(3), "{}", stderr(&panic));
    assert!(stderr(&panic).contains("victim: panicked: worker-1"));
}

/// The processes of `info`, by id, in id order.
fn processes_by_id(info: &Value) -> Vec<&Value> {
    info["processes"]
        .as_array()
        .expect("processes")
        .iter()
        .collect()
}

/// `victim spawn-and-die` recorded: main spawned eight sleepers and SIGKILLed itself.
fn record_spawn_and_die(cwd: &Path, dir: &Path) {
    let out = record_victim(cwd, dir, &["spawn-and-die"]);
    assert_eq!(out.status.code(), Some(128 + 9), "{}", stderr(&out));
}

/// `ppd replay DIR --json ARGS...`: its exit code, its summary and its stderr.
fn replay_json(cwd: &Path, dir: &Path, args: &[&str]) -> (Option<i32>, Value, String) {
    let mut all = vec!["replay", dir.to_str().unwrap(), "--json"];
    all.extend_from_slice(args);
    let out = ppd(cwd, &all);
    let summary = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (out.status.code(), summary, stderr(&out))
}

#[test]
fn every_process_spawned_before_the_program_died_has_a_log_and_replays() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("rec");
    record_spawn_and_die(work.path(), &dir);
    let info = info_json(work.path(), &dir);
    let procs = processes_by_id(&info);
    // main and all eight sleepers: each spawn main logged has its child's log, even where the
    // child never ran (its log holds no event, and no damage).
    assert_eq!(procs.len(), 9, "{info:#}");
    for p in &procs {
        assert_eq!(p["damage"], Value::Array(vec![]), "{p:#}");
        assert_ne!(p["name"], "(no log)", "{p:#}");
        if p["events"] == 0 {
            assert_eq!(p["ending"]["how"], "never_started", "{p:#}");
        }
    }
    let (code, summary, err) = replay_json(work.path(), &dir, &[]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(summary["outcome"], "reproduced", "{summary:#}");
    assert!(!err.contains("panicked"), "{err}");
}

/// A recording made before ppd created a child's log in its parent can hold a spawn whose child
/// has no log at all (the program died in between): here, the last sleeper's log and manifest
/// entry are removed, which leaves exactly that. Replay once panicked on it and then reported
/// success; `info` did not list the child.
#[test]
fn a_spawned_process_without_a_log_is_listed_and_replayed_as_never_started() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("rec");
    record_spawn_and_die(work.path(), &dir);
    let manifest_path = dir.join("manifest.json");
    let mut manifest: Value =
        serde_json::from_slice(&std::fs::read(&manifest_path).unwrap()).unwrap();
    let entries = manifest["processes"].as_array_mut().unwrap();
    let last = entries
        .iter()
        .map(|p| p["id"].as_u64().unwrap())
        .max()
        .unwrap();
    assert_eq!(last, 8, "main and eight sleepers");
    entries.retain(|p| p["id"] != last);
    // Such a recording is older than MACs: it has none, and is trusted before it replays.
    manifest.as_object_mut().unwrap().remove("mac");
    std::fs::write(&manifest_path, serde_json::to_vec(&manifest).unwrap()).unwrap();
    std::fs::remove_file(dir.join("proc-0008.log")).unwrap();
    let out = ppd(work.path(), &["trust", "--yes", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));

    let info = info_json(work.path(), &dir);
    let procs = processes_by_id(&info);
    assert_eq!(
        procs.len(),
        9,
        "the child without a log is listed: {info:#}"
    );
    let unlogged = procs.last().unwrap();
    assert_eq!(unlogged["id"], 8, "{unlogged:#}");
    assert_eq!(unlogged["name"], "(no log)", "{unlogged:#}");
    assert_eq!(unlogged["ending"]["how"], "never_started", "{unlogged:#}");
    let text = unlogged["ending_text"].as_str().unwrap();
    assert!(
        text.starts_with("never started: spawned by main (p0) at event ")
            && text.contains("tests/src/bin/victim.rs:"),
        "{text}"
    );

    let (code, summary, err) = replay_json(work.path(), &dir, &[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(summary["outcome"], "reproduced", "{summary:#}");
    let outcome = summary["by_process"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["id"] == 8)
        .unwrap_or_else(|| panic!("the replay lists p8: {summary:#}"));
    assert_eq!(
        (&outcome["replayed"], &outcome["logged"]),
        (&0.into(), &0.into())
    );
    // Held replays too: every controller takes part in every event.
    for goal in [&["--to", "main=5"][..], &["--to", "sleeper-0=3,main=9"][..]] {
        let mut args = vec!["replay", dir.to_str().unwrap()];
        args.extend_from_slice(goal);
        let out = ppd(work.path(), &args);
        let err = stderr(&out);
        assert!(
            !err.contains("panicked") && !err.contains("inside ppd"),
            "{goal:?}: {err}"
        );
        assert!(matches!(out.status.code(), Some(0 | 1)), "{goal:?}: {err}");
    }
    let rec = dir.to_str().unwrap();
    for command in [&["races", rec][..], &["graph", rec, "-o", "/dev/null"][..]] {
        let out = ppd(work.path(), command);
        assert_eq!(out.status.code(), Some(0), "{command:?}: {}", stderr(&out));
    }
}

/// A recording whose program still runs is reported as such, not as a program that died, and
/// the commands that would read its growing logs as one run refuse it until it has ended.
#[test]
fn a_recording_still_being_written_is_said_to_be_and_not_read_as_a_run() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("rec");
    let pidfile = work.path().join("victim.pid");
    let mut child = Command::new(ppd_bin())
        .args(["record", "-o", dir.to_str().unwrap(), "--", VICTIM, "spin"])
        .arg(&pidfile)
        .current_dir(work.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start ppd record");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = lines.next().expect("the victim reports a round").unwrap();
    parse_round(&first);
    let pid: u32 = std::fs::read_to_string(&pidfile)
        .expect("the victim wrote its pid before its first round")
        .trim()
        .parse()
        .expect("a pid");
    // Keep the pipe drained so that the victim never blocks on it.
    let drain = std::thread::spawn(move || lines.count());

    let rec = dir.to_str().unwrap();
    let out = ppd(work.path(), &["info", "--json", rec]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let info: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(info["run_ending"]["how"], "still_recording", "{info:#}");
    assert_eq!(info["run_ending"]["pid"], pid, "{info:#}");
    let text = ppd(work.path(), &["info", rec]);
    let text_out = String::from_utf8_lossy(&text.stdout);
    assert!(
        text_out.contains(&format!(
            "still being recorded: the program (OS process {pid})"
        )) && !text_out.contains("cut short")
            && !text_out.contains("died"),
        "{text_out}"
    );
    for args in [
        vec!["replay", "--verify", rec],
        vec!["races", rec],
        vec!["why", rec, "main", "round"],
    ] {
        let out = ppd(work.path(), &args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains(&format!(
                "is still being recorded: OS process {pid} is running and writing it"
            )),
            "{args:?}: {}",
            stderr(&out)
        );
    }

    // SAFETY: kill only sends a signal.
    assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGKILL) }, 0);
    child.wait().unwrap();
    drain.join().unwrap();
    let info = info_json(work.path(), &dir);
    assert_eq!(info["run_ending"]["how"], "killed", "{info:#}");
    let out = ppd(work.path(), &["replay", rec]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}
