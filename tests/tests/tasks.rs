//! `ppd analyze tasks` end to end: task-oriented programs (tests/src/bin/task_cases.rs) with
//! one injected failure each — a panicking task, a hung worker in a farm and in divide and
//! conquer (the run killed with SIGKILL), a hand-written farm labelled with `enter`, a farm
//! over OS processes whose worker node is killed with SIGKILL — are recorded by `ppd record`,
//! and the first line of the error list must name the failed task, subtask, process and role,
//! with the frontier's `file:line`. A clean run is a success.
//!
//! Phase two: `--rerun N` re-executes one task's computation alone from its logged input and
//! compares its result with the log; `--gdb N` stops the recorded program at that
//! computation's entry under gdb.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Output};

use ppd_tests::{line_of, ppd, ppd_bin, record_program, start_recording};
use serde_json::Value;

const CASES: &str = env!("CARGO_BIN_EXE_task_cases");
const SOURCE: &str = "tests/src/bin/task_cases.rs";

/// The 1-based line of task_cases.rs that contains `needle` (exactly one does).
fn source_line(needle: &str) -> usize {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/bin/task_cases.rs");
    line_of(
        &std::fs::read_to_string(path).expect("task_cases.rs"),
        needle,
    ) as usize
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

    // A way to the failure in the whole run: a replay that halts where task 37's computation
    // begins.
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
fn a_farm_over_os_processes_whose_worker_node_is_killed_names_the_task_as_a_node_fault() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("farm-nodes");
    let launcher = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/task-nodes.sh");
    let args = [
        launcher.to_str().unwrap(),
        CASES,
        work.path().to_str().unwrap(),
    ];
    let mut child = start_recording(work.path(), &dir, "sh", &args);
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    // The other nodes may compute before, while or after the hung one says so.
    let mut computed = 0;
    let pid = loop {
        let line = lines
            .next()
            .expect("the run ended before a worker hung")
            .unwrap();
        if let Some(p) = line.strip_prefix("hanging ") {
            break p.parse::<i32>().expect("a pid");
        }
        computed += usize::from(line == "computed");
    };
    assert_ne!(pid as u32, child.id(), "kill the worker node, not ppd");
    // SAFETY: kill only sends a signal.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0);
    // The farm goes on with the other two nodes, then fails naming the task.
    computed += lines
        .map_while(Result::ok)
        .filter(|l| l == "computed")
        .count();
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(computed, 29, "{err}");
    assert!(err.contains("farm_nodes: failed: task 0"), "{err}");
    assert!(err.contains("in 4 OS processes"), "{err}");

    let text = analyze_text(work.path(), &dir);
    let first = first_error(&text);
    assert_eq!(first[..3], ["NODE", "0", "-"], "{text}");
    assert!(first[3].starts_with("worker-"), "{text}");
    assert_eq!(first[4], "computing", "{text}");
    // The frontier is where the worker node began the task: its `serve` call.
    let line = source_line("ppd::task::serve(address");
    assert_eq!(first[5], format!("{SOURCE}:{line}"), "{text}");
    assert!(
        verdict(&text).starts_with("failure: 1 error in 30 tasks"),
        "{text}"
    );
    // The socket edges give every task's events their order across the OS processes: the
    // clocks need no forcing.
    assert!(
        !text.contains("waits for an event that never happens"),
        "{text}"
    );
    let json = analyze_json(work.path(), &dir);
    assert_eq!(json["errors"][0]["fault"], "NODE", "{json:#}");
    let detail = json["errors"][0]["detail"].as_str().unwrap();
    assert!(
        detail.contains("died while the process was in the task"),
        "{detail}"
    );
    // Phase two re-executes a task in the worker node that computed it: that node's binary,
    // run natively up to its `serve`, computes task 5 again from the logged input.
    let text = rerun(work.path(), &dir, "5", &[]);
    let lines = rerun_lines(&text);
    assert!(
        text.starts_with("task 5 subtask - (farm): ppd::task::work on worker-"),
        "{text}"
    );
    assert!(lines.contains(&"result: same as logged: 55"), "{text}");
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
    // The analysis keeps no task that completed, but the one a command names.
    let out = ppd(
        work.path(),
        &[
            "analyze",
            "tasks",
            "--json",
            dir.to_str().unwrap(),
            "--task",
            "7",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let steps: Vec<&str> = json["task"]["events"]
        .as_array()
        .expect("task 7's event graph")
        .iter()
        .map(|e| e["step"].as_str().unwrap())
        .collect();
    assert_eq!(steps, ["give", "begin", "end", "collect"], "{json:#}");
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

/// `ppd analyze tasks DIR ARGS…` with `env` added to its environment (the recorded program,
/// re-executed, inherits it).
fn analyze_with(cwd: &Path, dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(ppd_bin())
        .args(["analyze", "tasks", dir.to_str().unwrap()])
        .args(args)
        .envs(env.iter().copied())
        .current_dir(cwd)
        .output()
        .expect("run ppd")
}

/// `ppd analyze tasks DIR --rerun UNIT`: its text output, which must succeed.
fn rerun(cwd: &Path, dir: &Path, unit: &str, env: &[(&str, &str)]) -> String {
    let out = analyze_with(cwd, dir, &["--rerun", unit], env);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "--rerun {unit}: {}{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

/// The trace lines of a rerun's output, without their process and event numbers (which depend
/// on how the run was scheduled): `r0  entry   input = 37  at …`, then the result line.
fn rerun_lines(text: &str) -> Vec<&str> {
    text.lines().skip(1).collect()
}

#[test]
fn rerun_re_executes_a_farm_task_from_its_logged_input_and_compares_its_result() {
    let work = tempfile::tempdir().unwrap();
    let dir = record_case(work.path(), "farm-panic");
    let call = source_line("ppd::task::farm(4, (0..100u64)");
    let panic = source_line("is poisoned");

    let text = rerun(work.path(), &dir, "37", &[]);
    let header = text.lines().next().unwrap();
    assert!(
        header.starts_with("task 37 subtask - (farm): ppd::task::work on farm-worker-"),
        "{text}"
    );
    assert!(
        header.ends_with("re-executed from its logged input"),
        "{text}"
    );
    assert_eq!(
        rerun_lines(&text),
        [
            format!("  r0  entry   input = 37  at {SOURCE}:{call}  work(input)").as_str(),
            format!(
                "result: panicked as recorded: \"task input 37 is poisoned\" at {SOURCE}:{panic}"
            )
            .as_str(),
        ],
        "{text}"
    );

    // A task that completed: its result again, the same as the logged one (1² + … + 36²).
    let text = rerun(work.path(), &dir, "36", &[]);
    assert_eq!(
        rerun_lines(&text),
        [
            format!("  r0  entry   input = 36  at {SOURCE}:{call}  work(input)").as_str(),
            format!("  r1  return  %0 = 16206  at {SOURCE}:{call}  work(input)").as_str(),
            "result: same as logged: 16206",
        ],
        "{text}"
    );

    // The same as JSON: the trace with the logged input, for tools.
    let out = analyze_with(work.path(), &dir, &["--rerun", "36", "--json"], &[]);
    assert!(out.status.success());
    let json: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(json["task"], 36);
    assert_eq!(json["eblock"], "ppd::task::work");
    assert_eq!(json["outcome"], "result: same as logged: 16206");
    assert_eq!(json["trace"]["records"][0]["kind"], "entry");
    assert_eq!(json["trace"]["leaks"], serde_json::json!([]));
}

#[test]
fn rerun_of_a_subtask_re_executes_its_split_or_its_solve() {
    let work = tempfile::tempdir().unwrap();
    let dir = record_case(work.path(), "clean");
    // 1..=100 splits into 1..=50 (subtask 0) and 51..=100 (subtask 1), and so on down to
    // leaves of fewer than 16 numbers: 76..=88 is subtask 1.1.0, a leaf.
    let text = rerun(work.path(), &dir, "0.1", &[]);
    assert!(
        text.starts_with("task 0 subtask 1 (divide and conquer): ppd::task::split on dc-worker-"),
        "{text}"
    );
    assert!(
        text.contains("  r0  entry   input = [51, 100]  at "),
        "{text}"
    );
    assert!(
        text.ends_with(
            "result: same as logged: [[51, 75], [76, 100]]\n\
             (its combine of its subtasks' results: --rerun 0.1 --combine)\n"
        ),
        "{text}"
    );

    // A leaf's split said "leaf"; its solve computed its result, and is what re-runs.
    let text = rerun(work.path(), &dir, "0.1.1.0", &[]);
    assert!(
        text.starts_with(
            "task 0 subtask 1.1.0 (divide and conquer): ppd::task::solve on dc-worker-"
        ),
        "{text}"
    );
    assert!(
        text.contains("  r0  entry   input = [76, 88]  at "),
        "{text}"
    );
    assert!(text.ends_with("result: same as logged: 1066\n"), "{text}");

    // A subtask the run does not have is bad input.
    let out = analyze_with(work.path(), &dir, &["--rerun", "0.9"], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("the run has no task 0 subtask 9"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn rerun_reports_a_result_that_depends_on_something_the_log_does_not_hold() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("farm-env");
    let out = Command::new(ppd_bin())
        .args([
            "record",
            "-o",
            dir.to_str().unwrap(),
            "--",
            CASES,
            "farm-env",
        ])
        .env("TASK_CASES_SALT", "10")
        .current_dir(work.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // The same environment: the same result (task 2's input is 3).
    let text = rerun(work.path(), &dir, "2", &[("TASK_CASES_SALT", "10")]);
    assert!(text.ends_with("result: same as logged: 30\n"), "{text}");

    // Another: the work reads it, ppd did not log it, and the re-execution says so.
    let text = rerun(work.path(), &dir, "2", &[("TASK_CASES_SALT", "7")]);
    assert!(
        text.ends_with(
            "result: differs from the log (1 difference)\n  %0: logged 30, re-executed 21\n"
        ),
        "{text}"
    );
}

#[test]
fn rerun_of_a_task_labelled_by_hand_says_its_input_was_not_logged() {
    let work = tempfile::tempdir().unwrap();
    let dir = record_case(work.path(), "hand-farm");
    let out = analyze_with(work.path(), &dir, &["--rerun", "5"], &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("task 5 was labelled by hand with ppd::task::enter, which takes no input"),
        "{err}"
    );
}

/// The words of a POSIX shell command line that quotes with `'` only.
fn shell_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quoted = false;
    for c in line.chars() {
        match c {
            '\'' => quoted = !quoted,
            ' ' if !quoted => words.push(std::mem::take(&mut word)),
            c => word.push(c),
        }
    }
    words.push(word);
    words.retain(|w| !w.is_empty());
    words
}

/// The command `--gdb 37 --dry-run` prints: the directory, then the environment and gdb's
/// command line.
fn gdb_command(work: &Path, dir: &Path) -> (String, Vec<(String, String)>, Vec<String>) {
    let out = analyze_with(work, dir, &["--gdb", "37", "--dry-run"], &[]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut lines = text.lines();
    let cwd = lines
        .next()
        .and_then(|l| l.strip_prefix("cd "))
        .expect("cd");
    let words = shell_words(lines.next().expect("the command"));
    let env = words
        .iter()
        .take_while(|w| w.starts_with("PPD_"))
        .map(|w| {
            let (k, v) = w.split_once('=').unwrap();
            (k.to_owned(), v.to_owned())
        })
        .collect::<Vec<_>>();
    let rest = words[env.len()..].to_vec();
    (cwd.to_owned(), env, rest)
}

#[test]
fn gdb_starts_the_program_stopped_at_the_task_entry_with_its_logged_input() {
    let work = tempfile::tempdir().unwrap();
    let dir = record_case(work.path(), "farm-panic");
    let (cwd, env, command) = gdb_command(work.path(), &dir);
    let names: Vec<&str> = env.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(names, ["PPD_MODE", "PPD_DIR", "PPD_REQUEST"]);
    assert_eq!(env[0].1, "emulate");
    assert_eq!(
        command[..6],
        ["gdb", "-q", "-ex", "break ppd_task_entry", "-ex", "run"],
        "{command:?}"
    );
    assert_eq!(command[6..], ["--args", CASES, "farm-panic"], "{command:?}");

    // lldb gets the same program, environment and breakpoint in its own syntax.
    let out = analyze_with(work.path(), &dir, &["--lldb", "37", "--dry-run"], &[]);
    let text = String::from_utf8_lossy(&out.stdout);
    let lldb = shell_words(text.lines().nth(1).expect("the command"));
    // `lldb`, or the newest `lldb-N` on PATH when there is no `lldb`.
    let is_lldb = |w: &String| {
        w == "lldb"
            || w.strip_prefix("lldb-")
                .is_some_and(|v| v.parse::<u32>().is_ok())
    };
    let at = lldb.iter().position(is_lldb).expect("lldb");
    assert_eq!(
        lldb[at + 1..],
        [
            "-o",
            "breakpoint set --name ppd_task_entry",
            "-o",
            "run",
            "--",
            CASES,
            "farm-panic"
        ],
        "{text}"
    );
    let request = lldb[2].strip_prefix("PPD_REQUEST=").expect("the request");
    std::fs::remove_dir_all(Path::new(request).parent().unwrap()).unwrap();

    // Without the debugger, the printed environment alone runs the emulation: the program
    // re-executes task 37 and writes the response next to the request.
    let program = Command::new(CASES)
        .arg("farm-panic")
        .envs(env.iter().map(|(k, v)| (k, v)))
        .current_dir(&cwd)
        .output()
        .unwrap();
    assert!(program.status.success(), "{program:?}");
    let request = Path::new(&env[2].1);
    let response: Value =
        serde_json::from_slice(&std::fs::read(request.with_file_name("response.json")).unwrap())
            .unwrap();
    let trace = &response["traces"][0];
    assert_eq!(trace["eblock"], "ppd::task::work");
    assert_eq!(
        trace["records"][0]["value"]["value"],
        serde_json::json!([37])
    );
    assert!(
        trace["logged_panic"]
            .as_str()
            .unwrap()
            .contains("task input 37 is poisoned")
    );
    std::fs::remove_dir_all(request.parent().unwrap()).unwrap();

    // Under gdb: stopped at the entry, whose `input` is task 37's logged input (MessagePack
    // of 37 is the one byte 37). Skipped where gdb is not installed, unless required.
    if Command::new("gdb").arg("--version").output().is_err() {
        assert!(
            std::env::var_os("PPD_REQUIRE_GDB").is_none(),
            "PPD_REQUIRE_GDB is set and gdb is missing"
        );
        eprintln!("gdb is not installed: the session under it is not tested");
        return;
    }
    let out = ppd_tests::ppd_with_input(
        work.path(),
        &["analyze", "tasks", dir.to_str().unwrap(), "--gdb", "37"],
        b"info args\nkill\nquit\n",
    );
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains("hit Breakpoint 1, ppd_replayer::emulate::ppd_task_entry"),
        "{said}"
    );
    assert!(said.contains("eblock = \"ppd::task::work\""), "{said}");
    assert!(said.contains("input = &[u8] [37]"), "{said}");
}

#[test]
fn a_work_function_that_is_an_eblock_stays_a_top_level_instance_for_why() {
    let work = tempfile::tempdir().unwrap();
    let dir = record_case(work.path(), "farm-eblock");
    // The farm's own e-block around each task is transparent to `ppd why`: the work's
    // parameter comes from its caller, as it would without the farm.
    let out = ppd(
        work.path(),
        &[
            "why",
            dir.to_str().unwrap(),
            "farm-worker-0",
            "tripled",
            "--at",
            "scaled#2",
        ],
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("tripled = 3  (tests/src/bin/task_cases.rs:"),
        "{text}"
    );
    assert!(
        text.ends_with("[passed by the caller of task_cases::scaled, which is not an e-block]\n"),
        "{text}"
    );

    // Re-run, the task's work is that e-block's call, its logged result standing for it.
    let text = rerun(work.path(), &dir, "2", &[]);
    let lines = rerun_lines(&text);
    assert_eq!(lines.len(), 4, "{text}");
    assert!(
        lines[1].starts_with("  r1  call    7  (a nested e-block entered at event "),
        "{text}"
    );
    assert_eq!(lines[3], "result: same as logged: 7", "{text}");
}

/// The request file a `--gdb UNIT --dry-run` command names, parsed.
fn gdb_request(work: &Path, dir: &Path, args: &[&str]) -> Value {
    let out = analyze_with(work, dir, args, &[]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let words = shell_words(text.lines().nth(1).expect("the command"));
    let request = words
        .iter()
        .find_map(|w| w.strip_prefix("PPD_REQUEST="))
        .expect("PPD_REQUEST");
    serde_json::from_slice(&std::fs::read(request).expect("read the request")).unwrap()
}

#[test]
fn rerun_combine_re_executes_a_split_subtasks_combine_from_its_subtasks_results() {
    let work = tempfile::tempdir().unwrap();
    let dir = record_case(work.path(), "dc-combine");
    // The virtual machine did its job: phase one finds nothing wrong with a wrong combine.
    let text = analyze_text(work.path(), &dir);
    assert!(verdict(&text).starts_with("success"), "{text}");

    // Subtask 1 (257..=512) joined 257..=384 (41024) and 385..=512 (57408) into 32896: the
    // combine, re-executed from those logged results in the calling process, does the same.
    let out = analyze_with(work.path(), &dir, &["--rerun", "0.1", "--combine"], &[]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{}{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.starts_with("task 0 subtask 1 (divide and conquer): ppd::task::combine on main/"),
        "{text}"
    );
    assert!(
        text.contains("  r0  entry   input = [41024, 57408]  at "),
        "{text}"
    );
    assert!(text.contains("combine(input)"), "{text}");
    assert!(text.ends_with("result: same as logged: 32896\n"), "{text}");

    // The task's own combine is the last one, after its subtasks' combines.
    let text = rerun_combine(work.path(), &dir, "0");
    assert!(
        text.contains("  r0  entry   input = [32896, 32896]  at "),
        "{text}"
    );
    assert!(text.ends_with("result: same as logged: 256\n"), "{text}");

    // Without --combine, a subtask that split re-executes its split.
    let text = rerun(work.path(), &dir, "0.1", &[]);
    assert!(text.contains("ppd::task::split on dc-worker-"), "{text}");

    // A leaf (497..=512) has no combine: bad input, saying so.
    let out = analyze_with(
        work.path(),
        &dir,
        &["--rerun", "0.1.1.1.1.1", "--combine"],
        &[],
    );
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("subtask 1.1.1.1.1 did not split"),
        "{stderr}"
    );
    // --combine alone chooses nothing.
    let out = analyze_with(work.path(), &dir, &["--combine"], &[]);
    assert_eq!(out.status.code(), Some(2));

    // --gdb --combine stops at the combine's entry: in the calling process, not on a worker.
    let split = gdb_request(work.path(), &dir, &["--gdb", "0.1", "--dry-run"]);
    let combine = gdb_request(
        work.path(),
        &dir,
        &["--gdb", "0.1", "--combine", "--dry-run"],
    );
    assert_ne!(split["task"]["process"], combine["task"]["process"]);
    assert_ne!(split["task"]["enter"], combine["task"]["enter"]);
    assert_eq!(combine["task"]["process"], 0, "{combine}");
}

/// `ppd analyze tasks DIR --rerun UNIT --combine`: its text output, which must succeed.
fn rerun_combine(cwd: &Path, dir: &Path, unit: &str) -> String {
    let out = analyze_with(cwd, dir, &["--rerun", unit, "--combine"], &[]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "--rerun {unit} --combine: {}{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}
