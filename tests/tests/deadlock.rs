//! Deadlocks: a program that hangs is killed with SIGKILL; its recording survives and
//! `ppd races` shows the wait-for cycle, or the self-wait of a process that holds the only
//! sender that could feed it. A program whose `main` returns while others wait leaves them
//! waiting, which is no deadlock unless their waits form a cycle.

mod analysis_support;

use std::collections::HashMap;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use analysis_support::{corpus_bin, marker_line, ppd_path, races_json, scenario};
use ppd_formats::{Event, ObjectId, Recording};
use serde_json::Value;

/// Kills the recorded program (and reaps `ppd record`) however the test ends.
struct Running {
    wrapper: Child,
    program: Option<i32>,
}

impl Drop for Running {
    fn drop(&mut self) {
        // Kill the program and let `ppd record` reap it and report; if the program's pid is
        // not known yet, kill the whole process group the wrapper leads.
        let target = match self.program.take() {
            Some(pid) => pid,
            None => -(self.wrapper.id() as i32),
        };
        // SAFETY: sending a signal to processes this test started has no memory effects.
        unsafe { libc::kill(target, libc::SIGKILL) };
        let _ = self.wrapper.wait();
    }
}

/// The program of the `waits` scenarios.
const WAITS: &str = env!("CARGO_BIN_EXE_waits");

/// What a process's log shows at its end: the name of the object its final `Blocked` waits
/// on (`park` for its park token, `join NAME` for a join of process NAME), and how many
/// messages it had received.
fn final_wait(recording: &Recording, name: &str) -> Option<(String, usize)> {
    let mut names: HashMap<ObjectId, String> = HashMap::new();
    for entry in recording.processes() {
        let reader = recording.open_log(entry).ok()?;
        for (_, e) in reader.events().filter_map(Result::ok) {
            if let Event::Create {
                object,
                name: Some(n),
                ..
            } = e
            {
                names.insert(object, n.to_string());
            }
        }
    }
    let entry = recording.processes().iter().find(|p| p.name == name)?;
    let events: Vec<Event> = recording
        .open_log(entry)
        .ok()?
        .events()
        .filter_map(Result::ok)
        .map(|(_, e)| e)
        .collect();
    let received = events
        .iter()
        .filter(|e| matches!(e, Event::Recv { .. }))
        .count();
    match events.last()? {
        Event::Blocked { object, .. } if object.is_park_token() => Some(("park".into(), received)),
        Event::Blocked { object, .. } => Some((names.get(object)?.clone(), received)),
        Event::JoinBlocked { child, .. } => Some((
            format!("join {}", recording.process(*child)?.name),
            received,
        )),
        _ => None,
    }
}

/// Whether each named process waits on the given object, having received at least the given
/// number of messages (a wait before that is one the program gets through).
fn waiting(dir: &Path, expected: &[(&str, &str, usize)]) -> bool {
    let Ok(recording) = Recording::open(dir) else {
        return false;
    };
    expected.iter().all(|&(process, object, received)| {
        final_wait(&recording, process).is_some_and(|(o, r)| o == object && r >= received)
    })
}

/// Records race-corpus scenario `name` until its processes wait as `expected` says, then
/// kills it.
fn record_until_deadlocked(work: &Path, name: &str, expected: &[(&str, &str, usize)]) -> PathBuf {
    record_until_waiting(work, &corpus_bin(), name, expected)
}

/// Records `program name` until its processes wait as `expected` says, then kills it.
fn record_until_waiting(
    work: &Path,
    program: &Path,
    name: &str,
    expected: &[(&str, &str, usize)],
) -> PathBuf {
    let dir = work.join(name);
    let wrapper = Command::new(ppd_path())
        .args(["record", "-o"])
        .arg(&dir)
        .arg("--")
        .arg(program)
        .arg(name)
        .current_dir(work)
        .process_group(0)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start ppd record");
    let mut running = Running {
        wrapper,
        program: None,
    };
    // Wait (polling the live logs) until the processes wait as expected. The hang is certain;
    // if the program ends instead, or its logs never show the waits, that is the failure.
    let mut polls = 0;
    while !waiting(&dir, expected) {
        if let Some(status) = running.wrapper.try_wait().expect("poll ppd record") {
            panic!("{name} ended ({status}) instead of deadlocking");
        }
        polls += 1;
        assert!(polls < 3000, "{name}: the logs never showed {expected:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
    let manifest = Recording::open(&dir).expect("recording").manifest().clone();
    running.program = Some(manifest.os_pid as i32);
    drop(running);
    dir
}

/// The processes of a cycle, sorted by name.
fn members_of(cycle: &[Value]) -> Vec<String> {
    let mut names: Vec<String> = cycle
        .iter()
        .map(|b| b["process"].as_str().expect("a process name").to_owned())
        .collect();
    names.sort();
    names
}

fn cycle_of(report: &Value) -> Vec<Value> {
    let cycles = report["deadlocks"]["cycles"].as_array().expect("cycles");
    assert_eq!(cycles.len(), 1, "{report:#}");
    cycles[0].as_array().unwrap().clone()
}

#[test]
fn two_locks_taken_in_opposite_orders_deadlock() {
    let work = tempfile::tempdir().unwrap();
    let dir = record_until_deadlocked(
        work.path(),
        "deadlock_locks",
        &[("left", "m2", 1), ("right", "m1", 1)],
    );
    let info = ppd_tests::info_json(work.path(), &dir);
    assert_eq!(info["complete"], false, "the run was killed: {info:#}");
    let report = races_json(work.path(), &dir);
    let listing = scenario("deadlock_locks");
    let cycle = cycle_of(&report);
    assert_eq!(cycle.len(), 2);
    let by_name = |n: &str| cycle.iter().find(|b| b["process"] == n).cloned().unwrap();
    let (left, right) = (by_name("left"), by_name("right"));
    assert_eq!(left["waits_for"], "lock");
    assert_eq!(left["object"], "m2");
    assert_eq!(left["relation"], "held_by");
    assert_eq!(left["by"], serde_json::json!(["right"]));
    assert_eq!(
        left["line"].as_u64(),
        Some(marker_line(&listing, "dl.left"))
    );
    assert_eq!(right["object"], "m1");
    assert_eq!(right["by"], serde_json::json!(["left"]));
    assert_eq!(
        right["line"].as_u64(),
        Some(marker_line(&listing, "dl.right"))
    );
    // main waits in its join of a deadlocked process: blocked behind the cycle, not running.
    assert!(
        !report["deadlocks"]["running"]
            .as_array()
            .unwrap()
            .contains(&Value::from("main")),
        "{report:#}"
    );
    let main = report["deadlocks"]["blocked"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["process"] == "main")
        .cloned()
        .unwrap_or_else(|| panic!("main is blocked in a join: {report:#}"));
    assert_eq!(main["waits_for"], "the end of", "{main:#}");
    assert_eq!(main["deadlocked"], true, "{main:#}");
    let out = ppd_tests::ppd(work.path(), &["races", dir.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("deadlock: 2 processes wait for each other"),
        "{text}"
    );
    assert!(text.contains("left (p1) waits for lock m2"), "{text}");
    assert!(text.contains("held by right"), "{text}");
}

#[test]
fn two_processes_waiting_for_each_others_message_deadlock() {
    let work = tempfile::tempdir().unwrap();
    let dir = record_until_deadlocked(
        work.path(),
        "deadlock_messages",
        &[("left", "to-left", 1), ("right", "to-right", 1)],
    );
    let report = races_json(work.path(), &dir);
    let listing = scenario("deadlock_messages");
    let cycle = cycle_of(&report);
    assert_eq!(cycle.len(), 2);
    for (me, other, channel) in [("left", "right", "to-left"), ("right", "left", "to-right")] {
        let b = cycle.iter().find(|b| b["process"] == me).unwrap();
        assert_eq!(b["waits_for"], "message");
        assert_eq!(b["object"], channel);
        assert_eq!(b["relation"], "owed_by");
        assert_eq!(b["by"], serde_json::json!([other]));
        assert_eq!(b["guessed"], false);
        assert_eq!(
            b["line"].as_u64(),
            Some(marker_line(&listing, &format!("dmsg.{me}")))
        );
    }
}

#[test]
fn two_writers_each_waiting_for_the_others_read_hold_deadlock() {
    let work = tempfile::tempdir().unwrap();
    let dir = record_until_deadlocked(
        work.path(),
        "deadlock_rwlocks",
        &[("left", "r2", 1), ("right", "r1", 1)],
    );
    let report = races_json(work.path(), &dir);
    let listing = scenario("deadlock_rwlocks");
    let cycle = cycle_of(&report);
    assert_eq!(cycle.len(), 2, "{report:#}");
    let by_name = |n: &str| cycle.iter().find(|b| b["process"] == n).cloned().unwrap();
    let (left, right) = (by_name("left"), by_name("right"));
    assert_eq!(left["waits_for"], "lock");
    assert_eq!(left["object"], "r2");
    assert_eq!(left["by"], serde_json::json!(["right"]));
    assert_eq!(
        left["line"].as_u64(),
        Some(marker_line(&listing, "drw.left"))
    );
    assert_eq!(right["object"], "r1");
    assert_eq!(right["by"], serde_json::json!(["left"]));
    assert_eq!(
        right["line"].as_u64(),
        Some(marker_line(&listing, "drw.right"))
    );
    // `ppd info` says where each waits: the killed run ended with both blocked.
    let info = ppd_tests::info_json(work.path(), &dir);
    assert_eq!(info["complete"], false, "the run was killed: {info:#}");
}

#[test]
fn two_processes_waiting_on_condvars_only_the_other_notifies_deadlock() {
    let work = tempfile::tempdir().unwrap();
    let dir = record_until_deadlocked(
        work.path(),
        "deadlock_condvars",
        &[("left", "wake-left", 0), ("right", "wake-right", 0)],
    );
    let report = races_json(work.path(), &dir);
    let listing = scenario("deadlock_condvars");
    let cycle = cycle_of(&report);
    assert_eq!(cycle.len(), 2, "{report:#}");
    for (me, other, condvar) in [
        ("left", "right", "wake-left"),
        ("right", "left", "wake-right"),
    ] {
        let b = cycle.iter().find(|b| b["process"] == me).unwrap();
        assert_eq!(b["waits_for"], "a notify of", "{b:#}");
        assert_eq!(b["object"], condvar);
        assert_eq!(b["relation"], "owed_by");
        // The other process used the condvar (it notified it first): known, not a guess.
        assert_eq!(b["by"], serde_json::json!([other]));
        assert_eq!(b["guessed"], false);
        assert_eq!(
            b["line"].as_u64(),
            Some(marker_line(&listing, &format!("dcv.{me}"))),
            "the user's wait: {b:#}"
        );
    }
    let out = ppd_tests::ppd(work.path(), &["races", dir.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("left (p1) waits for a notify of wake-left"),
        "{text}"
    );
    let info = ppd_tests::info_json(work.path(), &dir);
    let procs = ppd_tests::processes(&info);
    assert_eq!(procs["left"]["ending"]["how"], "blocked", "{info:#}");
    assert_eq!(
        procs["left"]["ending"]["on"], "condvar wake-left",
        "{info:#}"
    );
}

#[test]
fn a_process_parked_forever_while_main_joins_it_deadlocks_by_guess() {
    let work = tempfile::tempdir().unwrap();
    // main's join is logged after the sleeper parks or before: wait for both, then look.
    let dir = record_until_deadlocked(
        work.path(),
        "deadlock_park",
        &[("sleeper", "park", 0), ("main", "join sleeper", 0)],
    );
    let report = races_json(work.path(), &dir);
    let listing = scenario("deadlock_park");
    let blocked = report["deadlocks"]["blocked"].as_array().unwrap();
    let sleeper = blocked
        .iter()
        .find(|b| b["process"] == "sleeper")
        .unwrap_or_else(|| panic!("{report:#}"));
    assert_eq!(sleeper["waits_for"], "an unpark of", "{sleeper:#}");
    assert_eq!(sleeper["object"], "p1's park token");
    // Nobody ever unparked it: any live process could, and the only other one is main.
    assert_eq!(sleeper["by"], serde_json::json!(["main"]));
    assert_eq!(sleeper["guessed"], true);
    assert_eq!(
        sleeper["line"].as_u64(),
        Some(marker_line(&listing, "dpk.park"))
    );
    // main joins the sleeper, which only main could unpark: the two wait for each other.
    let main = blocked
        .iter()
        .find(|b| b["process"] == "main")
        .unwrap_or_else(|| panic!("main waits in its join: {report:#}"));
    assert_eq!(main["waits_for"], "the end of", "{main:#}");
    assert_eq!(main["by"], serde_json::json!(["sleeper"]), "{main:#}");
    assert_eq!(
        members_of(&cycle_of(&report)),
        ["main", "sleeper"],
        "{report:#}"
    );
    assert!(
        blocked.iter().all(|b| b["deadlocked"] == true),
        "{report:#}"
    );
    let info = ppd_tests::info_json(work.path(), &dir);
    let procs = ppd_tests::processes(&info);
    assert_eq!(
        procs["sleeper"]["ending"]["on"], "the park token of sleeper (p1)",
        "{info:#}"
    );
}

/// The blocked process `name` of a report.
fn blocked_process(report: &Value, name: &str) -> Value {
    report["deadlocks"]["blocked"]
        .as_array()
        .expect("blocked")
        .iter()
        .find(|b| b["process"] == name)
        .cloned()
        .unwrap_or_else(|| panic!("{name} is not blocked: {report:#}"))
}

/// `ppd races DIR`'s text.
fn races_text(work: &Path, dir: &Path) -> String {
    let out = ppd_tests::ppd(work, &["races", dir.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// main drops its sender and joins the fetcher, whose own requeue sender is the only one left:
/// the fetcher waits for itself, and main is blocked behind it, in no cycle with it.
#[test]
fn a_fetcher_holding_the_only_sender_left_waits_for_itself_with_main_behind_it() {
    let work = tempfile::tempdir().unwrap();
    let dir = record_until_waiting(
        work.path(),
        Path::new(WAITS),
        "requeue-hang",
        &[("fetcher", "requests", 4), ("main", "join fetcher", 0)],
    );
    let report = races_json(work.path(), &dir);
    let cycle = cycle_of(&report);
    assert_eq!(members_of(&cycle), ["fetcher"], "a self-wait: {report:#}");
    let fetcher = &cycle[0];
    assert_eq!(fetcher["waits_for"], "message", "{fetcher:#}");
    assert_eq!(fetcher["object"], "requests", "{fetcher:#}");
    assert_eq!(fetcher["relation"], "owed_by", "{fetcher:#}");
    assert_eq!(fetcher["by"], serde_json::json!(["fetcher"]), "{fetcher:#}");
    assert_eq!(
        fetcher["guessed"], false,
        "it sent on the channel: {fetcher:#}"
    );
    assert_eq!(fetcher["deadlocked"], true, "{fetcher:#}");
    let main = blocked_process(&report, "main");
    assert_eq!(main["waits_for"], "the end of", "{main:#}");
    assert_eq!(main["object"], "fetcher (p1)", "{main:#}");
    assert_eq!(main["by"], serde_json::json!(["fetcher"]), "{main:#}");
    assert_eq!(
        main["deadlocked"], true,
        "blocked behind the fetcher: {main:#}"
    );

    let text = races_text(work.path(), &dir);
    assert!(
        text.contains("deadlock: fetcher (p1) waits for itself"),
        "{text}"
    );
    assert!(!text.contains("wait for each other"), "{text}");
    assert!(
        text.contains("main (p0) on the end of fetcher (p1): blocked behind fetcher"),
        "{text}"
    );
}

/// Records `waits name` (a program that exits by itself) until the final waits of its
/// processes are `settled`: the program lets them reach their waits before `main` returns,
/// which a loaded machine can outrun, so a recording that missed is made again, a few times
/// at most.
fn record_exited_with_waits(
    work: &Path,
    name: &str,
    settled: impl Fn(&dyn Fn(&str) -> Option<String>) -> bool,
) -> PathBuf {
    let dir = work.join(name);
    for _ in 0..5 {
        let _ = std::fs::remove_dir_all(&dir);
        let out = ppd_tests::record_program(work, &dir, Path::new(WAITS), &[name], &[]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let recording = Recording::open(&dir).expect("the recording opens");
        if settled(&|process| final_wait(&recording, process).map(|(on, _)| on)) {
            return dir;
        }
    }
    panic!("{name}: five recordings never ended with their processes' waits settled");
}

/// The Book's pool has no shutdown: when main returns, its idle workers are still waiting for
/// jobs (one in the job channel's receive, holding the receiver's lock, the others for that
/// lock). main could have sent another job until it returned: they were left waiting by the
/// program's exit, not deadlocked.
#[test]
fn idle_workers_of_a_pool_when_main_returns_are_left_waiting_not_deadlocked() {
    let work = tempfile::tempdir().unwrap();
    let workers = ["worker0", "worker1", "worker2"];
    // Settled: one worker receives, holding the receiver's lock, the others wait for it.
    let dir = record_exited_with_waits(work.path(), "idle-pool", |wait_of| {
        let waits = workers.map(wait_of);
        let on = |object: &str| {
            waits
                .iter()
                .filter(|w| w.as_deref() == Some(object))
                .count()
        };
        on("jobs") == 1 && on("receiver") == workers.len() - 1
    });
    let report = races_json(work.path(), &dir);
    assert!(
        report["deadlocks"]["cycles"].as_array().unwrap().is_empty(),
        "{report:#}"
    );
    let mut on_jobs = Vec::new();
    for name in workers {
        let w = blocked_process(&report, name);
        assert_eq!(w["deadlocked"], false, "{w:#}");
        assert_eq!(w["left_waiting"], true, "{w:#}");
        if w["object"] == "jobs" {
            assert_eq!(w["waits_for"], "message", "{w:#}");
            assert_eq!(w["by"], serde_json::json!(["main"]), "{w:#}");
            on_jobs.push(name);
        } else {
            assert_eq!(w["object"], "receiver", "{w:#}");
            assert_eq!(w["relation"], "held_by", "{w:#}");
        }
    }
    assert_eq!(
        on_jobs.len(),
        1,
        "one worker receives, holding the lock: {report:#}"
    );
    for name in workers.iter().filter(|&&w| w != on_jobs[0]) {
        let w = blocked_process(&report, name);
        assert_eq!(w["by"], serde_json::json!([on_jobs[0]]), "{w:#}");
    }

    let text = races_text(work.path(), &dir);
    assert!(
        text.contains("left waiting when the program exited (main returned):"),
        "{text}"
    );
    assert!(
        text.contains(&format!("{} (p", on_jobs[0])) && text.contains("on message jobs"),
        "{text}"
    );
    assert!(!text.contains("deadlock"), "{text}");
}

/// Processes whose waits form a cycle are deadlocked, even when main returned while they
/// waited.
#[test]
fn a_cycle_of_waits_when_main_returns_is_still_a_deadlock() {
    let work = tempfile::tempdir().unwrap();
    let dir = record_exited_with_waits(work.path(), "exit-cycle", |wait_of| {
        wait_of("left").as_deref() == Some("m2") && wait_of("right").as_deref() == Some("m1")
    });
    let report = races_json(work.path(), &dir);
    let cycle = cycle_of(&report);
    assert_eq!(members_of(&cycle), ["left", "right"], "{report:#}");
    for (me, other, mutex) in [("left", "right", "m2"), ("right", "left", "m1")] {
        let b = cycle.iter().find(|b| b["process"] == me).unwrap();
        assert_eq!(b["object"], mutex, "{b:#}");
        assert_eq!(b["by"], serde_json::json!([other]), "{b:#}");
        assert_eq!(b["deadlocked"], true, "{b:#}");
        assert_eq!(b["left_waiting"], false, "{b:#}");
    }
    let text = races_text(work.path(), &dir);
    assert!(
        text.contains("deadlock: 2 processes wait for each other"),
        "{text}"
    );
    assert!(!text.contains("left waiting"), "{text}");
}
