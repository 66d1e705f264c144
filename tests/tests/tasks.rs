//! `ppd analyze tasks` end to end: task-oriented programs (tests/src/bin/task_cases.rs) with
//! one injected failure each — a panicking task, a hung worker in a farm and in divide and
//! conquer (the run killed with SIGKILL), a hand-written farm labelled with `enter` — are
//! recorded by `ppd record`, and the first line of the error list must name the failed task,
//! subtask, process and role, with the frontier's `file:line`. A clean run is a success.

use std::io::{BufRead, BufReader};
use std::path::Path;

use ppd_tests::{ppd, record_program, start_recording};
use serde_json::Value;

const CASES: &str = env!("CARGO_BIN_EXE_task_cases");
const SOURCE: &str = "tests/src/bin/task_cases.rs";

/// The 1-based line of task_cases.rs that contains `needle` (exactly one does).
fn source_line(needle: &str) -> usize {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/bin/task_cases.rs");
    let text = std::fs::read_to_string(path).expect("task_cases.rs");
    let lines: Vec<usize> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| l.contains(needle))
        .map(|(i, _)| i + 1)
        .collect();
    assert_eq!(lines.len(), 1, "{needle:?}: {lines:?}");
    lines[0]
}

/// `ppd analyze tasks DIR`: its text output, which must succeed.
fn analyze_text(cwd: &Path, dir: &Path) -> String {
    let out = ppd(cwd, &["analyze", "tasks", dir.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "ppd analyze tasks: {}{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

/// `ppd analyze tasks --json DIR`, parsed.
fn analyze_json(cwd: &Path, dir: &Path) -> Value {
    let out = ppd(cwd, &["analyze", "tasks", "--json", dir.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON")
}

/// The columns of the first error line: FAULT TASK SUBTASK NODE PROCESS AT.
fn first_error(text: &str) -> Vec<String> {
    let mut lines = text.lines();
    let header = lines.next().expect("a header");
    assert!(
        header.starts_with("FAULT") && header.contains("PROCESS"),
        "the output leads with the error list:\n{text}"
    );
    let first = lines.next().expect("an error line");
    first
        .split_whitespace()
        .take(6)
        .map(str::to_owned)
        .collect()
}

/// The verdict: the first line after the error list.
fn verdict(text: &str) -> &str {
    text.lines()
        .find(|l| l.starts_with("success") || l.starts_with("failure"))
        .unwrap_or_else(|| panic!("no verdict:\n{text}"))
}

fn record_case(work: &Path, case: &str) -> std::path::PathBuf {
    let dir = work.join(case);
    let out = record_program(work, &dir, Path::new(CASES), &[case], &[]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("ppd: recorded"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    dir
}

/// Records `task_cases CASE`, waits until its work printed `hanging PID` and `computed`
/// `others` times (everything but the hung unit is done or about to be), then kills the
/// program with SIGKILL.
fn record_and_kill_hung(work: &Path, case: &str, others: usize) -> std::path::PathBuf {
    let dir = work.join(case);
    let mut child = start_recording(work, &dir, CASES, &[case]);
    let mut pid = None;
    let mut computed = 0;
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    while pid.is_none() || computed < others {
        let line = lines
            .next()
            .expect("the program ended before its work hung")
            .unwrap();
        if let Some(p) = line.strip_prefix("hanging ") {
            pid = Some(p.parse::<i32>().expect("a pid"));
        } else if line == "computed" {
            computed += 1;
        }
    }
    let pid = pid.unwrap();
    assert_ne!(pid as u32, child.id(), "kill the program, not ppd");
    // SAFETY: kill only sends a signal.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0);
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("killed by signal 9"), "{err}");
    dir
}

#[test]
fn a_farm_of_100_tasks_names_the_task_whose_work_panicked() {
    let work = tempfile::tempdir().unwrap();
    let dir = record_case(work.path(), "farm-panic");
    let text = analyze_text(work.path(), &dir);
    let first = first_error(&text);
    let line = source_line("is poisoned");
    assert_eq!(first[..3], ["PANIC", "37", "-"], "{text}");
    assert!(first[3].starts_with("farm-worker-"), "{text}");
    assert_eq!(first[4], "computing", "{text}");
    assert_eq!(first[5], format!("{SOURCE}:{line}"), "{text}");
    assert_eq!(
        verdict(&text),
        "failure: 1 error in 100 tasks (99 complete)"
    );

    // The way into phase two: a replay that halts where task 37's computation begins, and
    // re-runs it from the log (its panic again).
    let hint = text
        .lines()
        .find_map(|l| l.strip_prefix("replay to it: "))
        .unwrap_or_else(|| panic!("no replay hint:\n{text}"));
    let predicate = hint
        .split_once("--stop '")
        .and_then(|(_, p)| p.strip_suffix('\''))
        .unwrap_or_else(|| panic!("{hint}"));
    assert_eq!(
        predicate,
        format!(
            "{}: mark ppd.task.begin if value.0 == 1 && value.1 == 37",
            first[3].split('/').next().unwrap()
        )
    );
    let out = ppd(
        work.path(),
        &["replay", dir.to_str().unwrap(), "--stop", predicate],
    );
    let replayed = String::from_utf8_lossy(&out.stdout);
    assert!(
        replayed.contains(&format!("halted (the predicate holds) at: {predicate}")),
        "{replayed}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("task input 37 is poisoned"));

    let json = analyze_json(work.path(), &dir);
    assert_eq!(json["verdict"], "failure");
    let e = &json["errors"][0];
    assert_eq!(e["fault"], "PANIC");
    assert_eq!(e["task"], 37);
    assert!(
        e["detail"]
            .as_str()
            .unwrap()
            .contains("task input 37 is poisoned")
    );
    // The node is the worker whose log has the panic.
    assert_eq!(json["graphs"][0]["task"], 37);
    let vertices = json["graphs"][0]["coalesced"].as_array().unwrap();
    let worker = vertices
        .iter()
        .find(|v| v["process"] == e["node"])
        .expect("the failed worker is a vertex of the coalesced graph");
    assert_eq!(worker["complete"], false, "{worker}");
}

#[test]
fn a_farm_whose_worker_hangs_and_is_killed_names_the_task_as_a_process_fault() {
    let work = tempfile::tempdir().unwrap();
    let dir = record_and_kill_hung(work.path(), "farm-hang", 39);
    let text = analyze_text(work.path(), &dir);
    let first = first_error(&text);
    // The hung task was handed out first. Another task can still be in its computation when
    // the kill comes (it printed `computed` and had not logged its end): the log shows it the
    // same way, and it ranks after the hung one, which began earlier.
    assert_eq!(first[..3], ["PROCESS", "0", "-"], "{text}");
    assert!(first[3].starts_with("farm-worker-"), "{text}");
    assert_eq!(first[4], "computing", "{text}");
    // The frontier is the begin of task 0: the farm's call site.
    let line = source_line("ppd::task::farm(4, (0..40u64)");
    assert_eq!(first[5], format!("{SOURCE}:{line}"), "{text}");
    assert!(verdict(&text).starts_with("failure"), "{text}");
    let json = analyze_json(work.path(), &dir);
    assert_eq!(json["errors"][0]["overtaken"], true, "{json:#}");
}

#[test]
fn divide_and_conquer_with_a_hung_subtask_names_the_subtask() {
    let work = tempfile::tempdir().unwrap();
    // Subtask 0 hangs in its split; subtask 1's two leaves print `computed`.
    let dir = record_and_kill_hung(work.path(), "dc-hang", 2);
    let text = analyze_text(work.path(), &dir);
    let first = first_error(&text);
    assert_eq!(first[..3], ["PROCESS", "0", "0"], "{text}");
    assert!(first[3].starts_with("dc-worker-"), "{text}");
    assert_eq!(first[4], "splitting/computing", "{text}");
    // A leaf still in its computation at the kill can add an error; the task is one, failed.
    let v = verdict(&text);
    assert!(
        v.starts_with("failure: ") && v.ends_with(" in 1 task (0 complete)"),
        "{text}"
    );
}

#[test]
fn a_hand_written_farm_labelled_with_enter_names_the_panicked_task() {
    let work = tempfile::tempdir().unwrap();
    let dir = record_case(work.path(), "hand-farm");
    let text = analyze_text(work.path(), &dir);
    let first = first_error(&text);
    let line = source_line("cannot be computed");
    // Task 5 goes to worker 5 % 3.
    assert_eq!(
        first,
        [
            "PANIC",
            "5",
            "-",
            "worker-2/p3",
            "computing",
            &format!("{SOURCE}:{line}")
        ],
        "{text}"
    );
}

#[test]
fn a_clean_run_is_a_success_without_errors() {
    let work = tempfile::tempdir().unwrap();
    let dir = record_case(work.path(), "clean");
    let text = analyze_text(work.path(), &dir);
    // 50 farm tasks and the one divide-and-conquer task.
    assert_eq!(
        text.lines().next(),
        Some("success: 51 tasks complete"),
        "{text}"
    );
    let json = analyze_json(work.path(), &dir);
    assert_eq!(json["verdict"], "success");
    assert_eq!(json["errors"], Value::Array(vec![]));
}

#[test]
fn ppd_graph_task_keeps_one_task_in_colour_and_greys_out_the_rest() {
    let work = tempfile::tempdir().unwrap();
    let dir = record_case(work.path(), "clean");
    let rec = dir.to_str().unwrap();
    let out = ppd(
        work.path(),
        &["graph", rec, "--task", "7", "--format", "svg"],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let svg = String::from_utf8_lossy(&out.stdout);
    let lit = |what: &str| {
        svg.lines()
            .filter(|l| l.contains(what) && !l.contains(" dim"))
            .count()
    };
    // Task 7 of the farm: give and send in main, receive, begin, end and send in its worker,
    // receive and collect in main; the two messages between them.
    assert_eq!(lit("<circle"), 8, "{svg}");
    assert_eq!(lit("class=\"msg\""), 2, "{svg}");
    for step in ["give", "begin", "end", "collect"] {
        let mark = format!("mark ppd.task.{step}");
        assert!(
            svg.lines()
                .any(|l| l.contains(&mark) && !l.contains(" dim")),
            "{step}: {svg}"
        );
    }
    assert!(
        svg.matches("<circle class=\"ev").count() > 100,
        "the rest is drawn, greyed"
    );

    let out = ppd(
        work.path(),
        &["graph", rec, "--task", "500", "--format", "svg"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no task 500"));
}

#[test]
fn a_run_without_tasks_is_refused_as_bad_input() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("plain");
    // An unknown case: the program only says so and exits 2, logging no task.
    let out = record_program(work.path(), &dir, Path::new(CASES), &["none"], &[]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = ppd(work.path(), &["analyze", "tasks", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("logged no tasks"));
}
