//! Running every test of every binary alone, plain, recorded and replayed, and the report.

use std::collections::BTreeMap;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::cuts::{CUTS, cut};
use crate::scratch::Binary;

/// How a test is run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Mode {
    /// The test binary alone: ppd's twins passing through.
    Plain,
    /// Under `ppd record`.
    Recorded,
    /// `ppd replay --verify` of the recording.
    Replayed,
}

const MODES: [Mode; 3] = [Mode::Plain, Mode::Recorded, Mode::Replayed];

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Plain => "plain",
            Mode::Recorded => "recorded",
            Mode::Replayed => "replayed",
        }
    }
}

/// A run that takes longer than this has hung: it is killed and counted as failed. Not a
/// limit on speed: the slowest test takes a few seconds.
const HUNG_AFTER: Duration = Duration::from_secs(120);

/// What became of one test in one mode.
enum Outcome {
    Passed,
    Failed(String),
    Cut(&'static str),
    /// Not run because an earlier mode failed.
    NotReached,
}

/// What became of each test of a suite, by test, then mode.
type SuiteResults = BTreeMap<String, Vec<(Mode, Outcome)>>;

/// The results of every test, by suite.
pub(crate) struct Report {
    results: BTreeMap<&'static str, SuiteResults>,
    unknown_cuts: Vec<&'static str>,
    took: Duration,
}

fn list(binary: &Binary, ignored: bool) -> Vec<String> {
    let mut command = Command::new(&binary.path);
    command.args(["--list", "--format", "terse"]);
    if ignored {
        command.arg("--ignored");
    }
    let out = command.output().expect("run a test binary's --list");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.strip_suffix(": test"))
        .map(str::to_owned)
        .collect()
}

/// Runs `command` in a process group of its own, killing the group when it hangs.
fn output(mut command: Command) -> Result<Output, String> {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let child = command.spawn().map_err(|e| format!("spawn: {e}"))?;
    let pid = child.id() as libc::pid_t;
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let watchdog = {
        let done = done.clone();
        std::thread::spawn(move || {
            let start = Instant::now();
            while !done.load(Ordering::SeqCst) {
                if start.elapsed() > HUNG_AFTER {
                    // SAFETY: signalling a process group we created; no memory is involved.
                    unsafe { libc::kill(-pid, libc::SIGKILL) };
                    return true;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            false
        })
    };
    let out = child.wait_with_output().map_err(|e| format!("wait: {e}"));
    done.store(true, Ordering::SeqCst);
    if watchdog.join().unwrap_or(false) {
        let printed = out.as_ref().map(tail).unwrap_or_default();
        return Err(format!(
            "hung: killed after {} s, having printed:\n{printed}",
            HUNG_AFTER.as_secs()
        ));
    }
    out
}

/// What a run printed: its standard output, then its standard error.
fn printed(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn tail(out: &Output) -> String {
    let text = printed(out);
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(20)..].join("\n")
}

/// The test ran, alone, and passed: a filter that matched nothing would also exit 0.
fn one_test_passed(out: &Output) -> bool {
    out.status.success()
        && String::from_utf8_lossy(&out.stdout).contains("test result: ok. 1 passed")
}

fn test_command(binary: &Path, test: &str) -> Command {
    let mut command = Command::new(binary);
    command.args([test, "--exact", "--test-threads=1"]);
    command
}

fn plain(binary: &Binary, test: &str) -> Outcome {
    match output(test_command(&binary.path, test)) {
        Ok(out) if one_test_passed(&out) => Outcome::Passed,
        Ok(out) => Outcome::Failed(tail(&out)),
        Err(e) => Outcome::Failed(e),
    }
}

fn recorded(binary: &Binary, test: &str, dir: &Path) -> Outcome {
    let mut command = Command::new(ppd_tests::ppd_bin());
    command.arg("record").arg("-o").arg(dir).arg("--");
    command
        .arg(&binary.path)
        .args([test, "--exact", "--test-threads=1"]);
    match output(command) {
        Ok(out) if one_test_passed(&out) => Outcome::Passed,
        Ok(out) => Outcome::Failed(tail(&out)),
        // Where each thread was when the run was killed, from what its log kept.
        Err(e) => Outcome::Failed(format!("{e}\n{}", recording_info(dir))),
    }
}

/// `ppd info` of the recording in `dir`, as text.
fn recording_info(dir: &Path) -> String {
    let mut command = Command::new(ppd_tests::ppd_bin());
    command.arg("info").arg(dir);
    match output(command) {
        Ok(out) => printed(&out),
        Err(e) => format!("ppd info: {e}"),
    }
}

fn replayed(dir: &Path) -> Outcome {
    let mut command = Command::new(ppd_tests::ppd_bin());
    command.arg("replay").arg(dir).args(["--verify", "--json"]);
    match output(command) {
        Ok(out) => {
            let summary: Option<serde_json::Value> = serde_json::from_slice(&out.stdout).ok();
            let outcome = summary.as_ref().and_then(|s| s["outcome"].as_str());
            if out.status.success() && outcome == Some("reproduced") {
                Outcome::Passed
            } else {
                let stderr = String::from_utf8_lossy(&out.stderr);
                let lines: Vec<&str> = stderr.lines().collect();
                Outcome::Failed(format!(
                    "outcome: {}\n{}",
                    outcome.unwrap_or("none"),
                    lines[lines.len().saturating_sub(20)..].join("\n")
                ))
            }
        }
        Err(e) => Outcome::Failed(e),
    }
}

/// Runs `test` in every mode it is not cut from.
fn run_test(binary: &Binary, test: &str, name: &str) -> Vec<(Mode, Outcome)> {
    let work = tempfile::tempdir().expect("a scratch directory");
    let dir = work.path().join("recording");
    let mut results = Vec::new();
    let mut failed = false;
    for mode in MODES {
        let result = if let Some(c) = cut(name, mode) {
            Outcome::Cut(c.reason)
        } else if failed {
            Outcome::NotReached
        } else {
            match mode {
                Mode::Plain => plain(binary, test),
                Mode::Recorded => recorded(binary, test, &dir),
                Mode::Replayed => replayed(&dir),
            }
        };
        failed |= matches!(result, Outcome::Failed(_) | Outcome::Cut(_));
        results.push((mode, result));
    }
    results
}

/// A recording holds one test: a recorded run of two tests must fail the second, naming it,
/// rather than log both in one recording. `None` when it does; what went wrong otherwise.
pub(crate) fn second_test_is_refused(binaries: &[Binary]) -> Option<String> {
    let (binary, tests) = binaries
        .iter()
        .map(|b| (b, list(b, false)))
        .find(|(_, tests)| tests.len() >= 2)?;
    let work = tempfile::tempdir().expect("a scratch directory");
    let mut command = Command::new(ppd_tests::ppd_bin());
    command
        .arg("record")
        .arg("-o")
        .arg(work.path().join("two"))
        .arg("--");
    command
        .arg(&binary.path)
        .args([&tests[0], &tests[1], "--exact", "--test-threads=1"]);
    let out = match output(command) {
        Ok(out) => out,
        Err(e) => return Some(e),
    };
    let second = tests[1].rsplit("::").next().unwrap_or(&tests[1]);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let refused = !out.status.success()
        && text.contains("ppd records one test per run")
        && text.contains(&format!("{second} is a second one"));
    (!refused).then(|| {
        format!(
            "recording {} and {} of {binary:?} in one run was not refused:\n{}",
            tests[0],
            tests[1],
            tail(&out)
        )
    })
}

/// Whether test `name` measures how fairly a selection chooses among ready operations: its
/// assertion is a statistic over thousands of choices, which another test on the other CPU
/// can skew by keeping one of its threads off the processor, so it runs alone.
fn measures_fairness(name: &str) -> bool {
    name.rsplit("::")
        .next()
        .is_some_and(|test| test.contains("fairness"))
}

/// Runs every test of `binaries`, as many at once as there are CPUs, then the tests that
/// measure fairness one at a time.
pub(crate) fn all(binaries: &[Binary]) -> Report {
    let start = Instant::now();
    let mut jobs = Vec::new();
    let mut ignored = Vec::new();
    for binary in binaries {
        let skipped = list(binary, true);
        for test in list(binary, false) {
            let name = format!("{}/{}::{test}", binary.suite, binary.file);
            if skipped.contains(&test) {
                ignored.push(name);
            } else {
                jobs.push((binary, test, name));
            }
        }
    }
    let unknown_cuts = CUTS
        .iter()
        .filter(|c| !jobs.iter().any(|(_, _, name)| c.names(name)))
        .map(|c| c.test)
        .collect();
    let (alone, jobs): (Vec<_>, Vec<_>) = jobs
        .into_iter()
        .partition(|(_, _, name)| measures_fairness(name));
    let next = AtomicUsize::new(0);
    let done = Mutex::new(Vec::new());
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get());
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| {
                while let Some((binary, test, name)) = jobs.get(next.fetch_add(1, Ordering::SeqCst))
                {
                    let results = run_test(binary, test, name);
                    done.lock()
                        .unwrap()
                        .push((binary.suite, name.clone(), results));
                }
            });
        }
    });
    let mut done = done.into_inner().unwrap();
    for (binary, test, name) in &alone {
        done.push((binary.suite, name.clone(), run_test(binary, test, name)));
    }
    let mut results: BTreeMap<&'static str, SuiteResults> = BTreeMap::new();
    for (suite, name, r) in done {
        results.entry(suite).or_default().insert(name, r);
    }
    for name in ignored {
        println!("ignored upstream, not run: {name}");
    }
    Report {
        results,
        unknown_cuts,
        took: start.elapsed(),
    }
}

impl Report {
    /// Every test passed in every mode it was not cut from, and every cut names a test.
    pub(crate) fn passed(&self) -> bool {
        self.unknown_cuts.is_empty()
            && self
                .results
                .values()
                .flat_map(|t| t.values())
                .flatten()
                .all(|(_, r)| matches!(r, Outcome::Passed | Outcome::Cut(_)))
    }

    /// Prints the failures, the cuts, and the counts per suite and mode.
    pub(crate) fn print(&self) {
        for tests in self.results.values() {
            for (name, results) in tests {
                for (mode, result) in results {
                    match result {
                        Outcome::Failed(why) => {
                            println!("FAILED {} {name}:\n{why}\n", mode.name());
                        }
                        Outcome::Cut(reason) => println!("cut {} {name}: {reason}", mode.name()),
                        Outcome::Passed | Outcome::NotReached => {}
                    }
                }
            }
        }
        for test in &self.unknown_cuts {
            println!("FAILED: the cut of {test} names no test of the suites");
        }
        println!();
        println!(
            "{:<20} {:<9} {:>7} {:>7} {:>5} {:>12}",
            "suite", "mode", "passed", "failed", "cut", "not reached"
        );
        for (suite, tests) in &self.results {
            for mode in MODES {
                let mut counts = [0usize; 4];
                for results in tests.values() {
                    for (m, r) in results {
                        if *m == mode {
                            counts[match r {
                                Outcome::Passed => 0,
                                Outcome::Failed(_) => 1,
                                Outcome::Cut(_) => 2,
                                Outcome::NotReached => 3,
                            }] += 1;
                        }
                    }
                }
                println!(
                    "{suite:<20} {:<9} {:>7} {:>7} {:>5} {:>12}",
                    mode.name(),
                    counts[0],
                    counts[1],
                    counts[2],
                    counts[3]
                );
            }
        }
        println!("took {:.0} s", self.took.as_secs_f64());
    }
}
