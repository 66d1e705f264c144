//! Deadlocks: a program that hangs is killed with SIGKILL; its recording survives and
//! `ppd races` shows the wait-for cycle.

mod analysis_support;

use std::collections::HashMap;
use std::os::unix::process::CommandExt;
use std::path::Path;
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

/// What a process's log shows at its end: the name of the object its final `Blocked` waits
/// on (`park` for its park token), and how many messages it had received.
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

/// Records scenario `name` until its processes wait as `expected` says, then kills it.
fn record_until_deadlocked(
    work: &Path,
    name: &str,
    expected: &[(&str, &str, usize)],
) -> std::path::PathBuf {
    let dir = work.join(name);
    let wrapper = Command::new(ppd_path())
        .args(["record", "-o"])
        .arg(&dir)
        .arg("--")
        .arg(corpus_bin())
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
    // Wait (polling the live logs) until both processes wait for each other. The deadlock is
    // certain; if the program ends instead, or its logs never show the waits, that is the
    // failure.
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
    let dir = record_until_deadlocked(work.path(), "deadlock_park", &[("sleeper", "park", 0)]);
    // main's join is logged after the sleeper parks or before: wait for both, then look.
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
    let info = ppd_tests::info_json(work.path(), &dir);
    let procs = ppd_tests::processes(&info);
    assert_eq!(
        procs["sleeper"]["ending"]["on"], "the park token of sleeper (p1)",
        "{info:#}"
    );
}
