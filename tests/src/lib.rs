//! Support for the end-to-end tests: finding the `ppd` binary and the example programs that
//! `cargo test --workspace` builds, and running them as real processes.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

pub mod lattice;
pub mod unannotated;

/// The directory cargo builds into (`target/debug`), found from the running test binary
/// (`target/debug/deps/<test>`).
pub fn build_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary has a path");
    let deps = exe
        .parent()
        .expect("test binaries live in target/<profile>/deps");
    deps.parent()
        .expect("deps has a parent: the profile directory")
        .to_owned()
}

fn must_exist(path: PathBuf, what: &str) -> PathBuf {
    assert!(
        path.exists(),
        "{what} {} is not built; run the tests with `cargo test --workspace`",
        path.display()
    );
    path
}

/// The `ppd` command.
pub fn ppd_bin() -> PathBuf {
    must_exist(build_dir().join("ppd"), "the ppd binary")
}

/// An example program of the `ppd-examples` package.
pub fn example_bin(name: &str) -> PathBuf {
    must_exist(build_dir().join("examples").join(name), "example")
}

/// `ppd record -o DIR [OPTIONS...] -- sh examples/kvstore.sh KVSTORE`: the replicated store
/// of `examples/kvstore.rs`, its backup, primary and client three OS processes, recorded as
/// one run by wrapping its launcher.
pub fn record_kvstore(cwd: &Path, dir: &Path, options: &[&str]) -> Output {
    let launcher = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/kvstore.sh");
    let kvstore = example_bin("kvstore");
    let mut args = vec!["record", "-o", dir.to_str().expect("utf-8 path")];
    args.extend_from_slice(options);
    args.extend([
        "--",
        "sh",
        launcher.to_str().expect("utf-8 path"),
        kvstore.to_str().expect("utf-8 path"),
    ]);
    ppd(cwd, &args)
}

/// `ppd ARGS...` run in `cwd`.
pub fn ppd(cwd: &Path, args: &[&str]) -> Output {
    Command::new(ppd_bin())
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("run ppd")
}

/// Records example `name` into `dir` with `ppd record -o DIR`; returns ppd's output.
pub fn record_example(cwd: &Path, dir: &Path, name: &str, extra: &[&str]) -> Output {
    let bin = example_bin(name);
    let mut args = vec!["record", "-o", dir.to_str().expect("utf-8 path")];
    args.extend_from_slice(extra);
    args.push("--");
    args.push(bin.to_str().expect("utf-8 path"));
    ppd(cwd, &args)
}

/// `ppd info --json DIR`, parsed.
pub fn info_json(cwd: &Path, dir: &Path) -> serde_json::Value {
    let out = ppd(cwd, &["info", "--json", dir.to_str().expect("utf-8 path")]);
    assert!(
        out.status.success() || out.status.code() == Some(2),
        "ppd info failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("ppd info --json prints JSON")
}

/// Starts `ppd record -o DIR -- PROGRAM ARGS...` in `cwd` without waiting for it, its output
/// piped, for tests that watch or kill the recorded program.
pub fn start_recording(cwd: &Path, dir: &Path, program: &str, args: &[&str]) -> Child {
    Command::new(ppd_bin())
        .args([
            "record",
            "-o",
            dir.to_str().expect("utf-8 path"),
            "--",
            program,
        ])
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start ppd record")
}

/// The processes of `ppd info --json`, by name.
pub fn processes(info: &serde_json::Value) -> BTreeMap<String, serde_json::Value> {
    info["processes"]
        .as_array()
        .expect("processes is an array")
        .iter()
        .map(|p| (p["name"].as_str().unwrap().to_owned(), p.clone()))
        .collect()
}

/// Records `program ARGS...` into `dir` with `ppd record -o DIR EXTRA... --`.
pub fn record_program(
    cwd: &Path,
    dir: &Path,
    program: &Path,
    args: &[&str],
    extra: &[&str],
) -> Output {
    let mut all = vec!["record", "-o", dir.to_str().expect("utf-8 path")];
    all.extend_from_slice(extra);
    all.push("--");
    all.push(program.to_str().expect("utf-8 path"));
    all.extend_from_slice(args);
    ppd(cwd, &all)
}

/// Standard output and standard error of a finished command, as text.
pub fn output_text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Replays `dir` with `--verify`: it must reproduce the run and print each line of `printed`.
pub fn assert_replays(cwd: &Path, dir: &Path, printed: &str) {
    let out = ppd(
        cwd,
        &[
            "replay",
            dir.to_str().expect("utf-8 path"),
            "--verify",
            "--json",
        ],
    );
    let (stdout, stderr) = output_text(&out);
    assert!(out.status.success(), "{stderr}");
    let summary: serde_json::Value =
        serde_json::from_str(&stdout).expect("ppd replay --json prints JSON");
    assert_eq!(summary["outcome"], "reproduced", "{summary:#}");
    for line in printed.lines() {
        assert!(stderr.contains(line), "replay did not print {line:?}");
    }
}

/// `ppd races --json DIR` finds no race, deadlock cycle, blocked process or potential deadlock.
pub fn assert_no_races(cwd: &Path, dir: &Path) {
    assert_races_only_on(cwd, dir, &[]);
}

/// Like [`assert_no_races`], except for message races on the named channels: where the
/// program takes their messages in any order, whether a race happened depends on the
/// schedule of the run.
pub fn assert_races_only_on(cwd: &Path, dir: &Path, channels: &[&str]) {
    let out = ppd(cwd, &["races", dir.to_str().expect("utf-8 path"), "--json"]);
    let (stdout, stderr) = output_text(&out);
    assert!(out.status.success(), "{stderr}");
    let report: serde_json::Value =
        serde_json::from_str(&stdout).expect("ppd races --json prints JSON");
    let none = serde_json::Value::Array(vec![]);
    let races = report["races"].as_array().expect("a list of races");
    let unexpected: Vec<_> = races
        .iter()
        .filter(|race| {
            race["kind"] != "message" || !channels.iter().any(|&channel| race["var"] == channel)
        })
        .collect();
    assert!(unexpected.is_empty(), "{report:#}");
    assert_eq!(report["deadlocks"]["cycles"], none, "{report:#}");
    assert_eq!(report["deadlocks"]["blocked"], none, "{report:#}");
    assert_eq!(report["potential_deadlocks"], none, "{report:#}");
}

/// `ppd ARGS...` run in `cwd` with `input` on its standard input (commands for an interactive
/// session), to the end.
pub fn ppd_with_input(cwd: &Path, args: &[&str], input: &[u8]) -> Output {
    use std::io::Write;
    let mut child = Command::new(ppd_bin())
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run ppd");
    child
        .stdin
        .take()
        .expect("a piped stdin")
        .write_all(input)
        .expect("write ppd's input");
    child.wait_with_output().expect("wait for ppd")
}

/// The events of process `name`.
pub fn events_of(dir: &Path, name: &str) -> Vec<ppd_formats::Event> {
    let recording = ppd_formats::Recording::open(dir).expect("open the recording");
    let entry = recording
        .processes()
        .iter()
        .find(|p| p.name == name)
        .unwrap_or_else(|| panic!("no process {name}"));
    recording
        .open_log(entry)
        .expect("open the log")
        .events()
        .map(|e| e.expect("a readable event").1)
        .collect()
}

/// The 1-based line of `text` that contains `needle`, which must be on one line only.
pub fn line_of(text: &str, needle: &str) -> u64 {
    let lines: Vec<usize> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| l.contains(needle))
        .map(|(i, _)| i + 1)
        .collect();
    assert_eq!(lines.len(), 1, "{needle:?}: on lines {lines:?}");
    lines[0] as u64
}

/// The number in `text` after `label`.
pub fn number_after(text: &str, label: &str) -> u64 {
    let rest = &text[text
        .find(label)
        .unwrap_or_else(|| panic!("{label} in {text}"))
        + label.len()..];
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits
        .parse()
        .unwrap_or_else(|_| panic!("a number after {label} in {text}"))
}

/// `ppd replay DIR --trace PRED --print PRINT --json` in `cwd`: the states it printed.
pub fn replay_trace(cwd: &Path, dir: &Path, pred: &str, print: &str) -> serde_json::Value {
    let out = ppd(
        cwd,
        &[
            "replay",
            dir.to_str().expect("utf-8 path"),
            "--trace",
            pred,
            "--print",
            print,
            "--json",
        ],
    );
    let (stdout, stderr) = output_text(&out);
    assert!(out.status.success(), "--trace {pred}:\n{stdout}\n{stderr}");
    serde_json::from_str(&stdout).expect("--trace's JSON")
}

/// Whether gdb is installed; when it is not, says which test does not run, unless
/// `PPD_REQUIRE_GDB` is set, which makes its absence a failure.
pub fn have_gdb(what: &str) -> bool {
    if Command::new("gdb").arg("--version").output().is_ok() {
        return true;
    }
    assert!(
        std::env::var_os("PPD_REQUIRE_GDB").is_none(),
        "PPD_REQUIRE_GDB is set and gdb is missing"
    );
    eprintln!("SKIPPED: gdb is not installed, so {what} is not tested");
    false
}

/// How many inferiors attached to a process gdb's `info inferiors` listed in `text`.
pub fn gdb_inferiors(text: &str) -> usize {
    text.lines()
        .filter(|l| {
            let words: Vec<&str> = l.trim_start_matches('*').split_whitespace().collect();
            words.len() > 2 && words[0].parse::<u32>().is_ok() && words[1] == "process"
        })
        .count()
}
