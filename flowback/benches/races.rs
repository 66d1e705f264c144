//! Race analysis throughput and memory on synthetic traces, and a side-by-side with Valgrind's
//! Helgrind on one program written twice.
//!
//! ```sh
//! cargo build --release -p ppd-cli -p ppd-examples --bin ppd --example racy_counter   # for Helgrind's part
//! cargo bench -p ppd-flowback --bench races
//! ```
//!
//! **Throughput.** Synthetic traces of `PPD_BENCH_EVENTS` events (default 10 000 000) in three
//! shapes; each timing is the median of `PPD_BENCH_RUNS` runs (default 5), trace generation
//! excluded. "All race analysis" is timed as one piece, the report `ppd races` prints once the
//! trace is read (`Analysis::race_report_of`): clocks, data races, message races, deadlocks,
//! lock-order cycles (potential deadlocks) and the report itself; the parts' own costs are
//! also printed.
//!
//! **Memory.** A counting global allocator measures the bytes each structure keeps alive (the
//! trace after it is built, the clocks after they are computed) and the peak heap while the
//! analysis runs. The detector's bytes per shared variable are its own count of its tables'
//! capacity, labelled as such. Counting costs two atomic operations per allocation, which the
//! timings include.
//!
//! **Helgrind.** The same program twice: four threads, each `PPD_BENCH_HELGRIND_ITERS` (default
//! 20 000) times a relaxed load then a store of one shared counter — `std` compiled with
//! `rustc -O -g` and run under `valgrind --tool=helgrind`, and its ppd twin, the `racy_counter`
//! example (release build), recorded with `ppd record` and analysed with `ppd races --json` on
//! that recording. Whole-process wall times, median of `PPD_BENCH_RUNS` runs each, runs interleaved.
//! Printed beside each other: Helgrind's run against the recorded run plus the analysis, and the
//! races each tool reports, by source line. Without valgrind, or without the release binaries,
//! the part that needs them is skipped with a notice saying so.
//!
//! Nothing here gates: the goal (10 M events/s on one core) is reported, not asserted. The
//! machine may be shared: the figures are as noisy as it is.

use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::BTreeMap;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use ppd_flowback::synth::{self, Shape};
use ppd_flowback::{Analysis, Clocks, clocks_and_races, message_races, potential_deadlocks};
use settings::env_u64;

#[path = "common/settings.rs"]
mod settings;

/// The system allocator, counting the bytes live and the peak since the last reset.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call goes to the system allocator with the caller's arguments; the counters
// only observe sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded unchanged to the system allocator.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded unchanged to the system allocator.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded unchanged to the system allocator.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
            grew(new_size);
        }
        p
    }
}

fn grew(bytes: usize) {
    let live = LIVE.fetch_add(bytes, Ordering::Relaxed) + bytes;
    PEAK.fetch_max(live, Ordering::Relaxed);
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn live() -> usize {
    LIVE.load(Ordering::Relaxed)
}

/// Peak heap while `f` runs, above what was live when it started.
fn peak_during<T>(f: impl FnOnce() -> T) -> (usize, T) {
    let before = live();
    PEAK.store(before, Ordering::Relaxed);
    let v = f();
    (PEAK.load(Ordering::Relaxed) - before, v)
}

fn median(mut xs: Vec<Duration>) -> Duration {
    xs.sort();
    xs[xs.len() / 2]
}

/// Median of `runs` timings of `f`, and its last result.
fn timed<T>(runs: usize, mut f: impl FnMut() -> T) -> (Duration, T) {
    let mut times = Vec::with_capacity(runs);
    let mut last = None;
    for _ in 0..runs {
        let t = Instant::now();
        let v = f();
        times.push(t.elapsed());
        last = Some(v);
    }
    (median(times), last.expect("at least one run"))
}

fn rate(events: u64, d: Duration) -> String {
    format!("{:>7.1} M events/s", events as f64 / d.as_secs_f64() / 1e6)
}

fn ms(d: Duration) -> String {
    format!("{:>9.1} ms", d.as_secs_f64() * 1e3)
}

fn measure(label: &str, shape: &Shape, seed: u64, runs: usize) {
    let before = live();
    let trace = synth::execution(shape, seed);
    let trace_bytes = live() - before;
    let events = trace.event_count();
    let (t_clocks, _) = timed(runs, || Clocks::compute(&trace));
    let (t_races, (clocks, races, stats)) = timed(runs, || clocks_and_races(&trace));
    let (t_messages, messages) = timed(runs, || message_races(&trace, &clocks));
    let (t_locks, (cycles, lock_stats)) = timed(runs, || potential_deadlocks(&trace));
    let (t_all, _) = timed(runs, || black_box(Analysis::race_report_of(&trace)));
    drop(clocks);
    let before = live();
    let clocks = Clocks::compute(&trace);
    let clock_bytes = live() - before;
    let checkpoints = clocks.checkpoint_count();
    drop(clocks);
    let (peak, analysed) = peak_during(|| Analysis::race_report_of(&trace));
    drop(analysed);
    println!(
        "{label}: {events} events, {} processes",
        trace.processes().len()
    );
    println!(
        "  vector clocks alone (§5.4.1)  {}  {}",
        ms(t_clocks),
        rate(events, t_clocks)
    );
    println!(
        "  clocks + data races, one pass {}  {}   ({} accesses; {} fast / {} full table checks)",
        ms(t_races),
        rate(events, t_races),
        stats.accesses,
        stats.fast_checks,
        stats.slow_checks
    );
    println!(
        "  message races (given clocks)  {}  {}",
        ms(t_messages),
        rate(events, t_messages)
    );
    println!(
        "  lock-order cycles (Goodlock)  {}  {}   ({} lock acquisitions; {} lock-order edges)",
        ms(t_locks),
        rate(events, t_locks),
        lock_stats.acquisitions,
        lock_stats.edges
    );
    println!(
        "  all race analysis, timed whole{}  {}",
        ms(t_all),
        rate(events, t_all)
    );
    println!(
        "  found: {} data races, {} message races (deduplicated by site pair), {} potential \
         deadlocks",
        races.len(),
        messages.len(),
        cycles.len()
    );
    println!(
        "  memory, measured: trace {:.1} bytes per event; clocks {:.1} bytes per event ({} \
         stored vectors); peak heap during all race analysis {:.1} MB",
        trace_bytes as f64 / events as f64,
        clock_bytes as f64 / events as f64,
        checkpoints,
        peak as f64 / 1e6
    );
    println!(
        "  peak bytes per event, trace included: {:.1} (goal: at most 24)",
        (trace_bytes + peak) as f64 / events as f64
    );
    println!(
        "  detector tables, by its own count of their capacity: {:.0} bytes per shared variable \
         ({} variables)",
        stats.state_bytes as f64 / stats.variables.max(1) as f64,
        stats.variables
    );
    println!();
    black_box((races, messages));
}

// ---------------------------------------------------------------------------------------------
// Helgrind

/// The program Helgrind runs: `examples/racy_counter.rs` with `std` instead of `ppd`, statement
/// for statement.
const STD_RACY_COUNTER: &str = r#"use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

const PROCESSES: u64 = 4;
const INCREMENTS: u64 = 1000;

fn main() -> ExitCode {
    let increments = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(INCREMENTS);
    let counter = Arc::new(AtomicU64::new(0));
    let workers: Vec<_> = (0..PROCESSES)
        .map(|i| {
            let counter = Arc::clone(&counter);
            std::thread::Builder::new()
                .name(format!("incr-{i}"))
                .spawn(move || {
                    for _ in 0..increments {
                        let seen = counter.load(Ordering::Relaxed);
                        counter.store(seen + 1, Ordering::Relaxed);
                    }
                })
                .expect("spawn")
        })
        .collect();
    for w in workers {
        w.join().expect("worker");
    }
    let total = counter.load(Ordering::SeqCst);
    println!("counter = {total} (expected {})", PROCESSES * increments);
    if total == PROCESSES * increments {
        ExitCode::SUCCESS
    } else {
        println!("lost {} increments", PROCESSES * increments - total);
        ExitCode::FAILURE
    }
}
"#;

const STD_FILE: &str = "std_racy_counter.rs";

fn build_std_program(dir: &Path) -> Result<PathBuf, String> {
    let src = dir.join(STD_FILE);
    let bin = dir.join("std_racy_counter");
    std::fs::write(&src, STD_RACY_COUNTER).map_err(|e| e.to_string())?;
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let out = Command::new(&rustc)
        .args(["--edition", "2021", "-O", "-g", "-o"])
        .arg(&bin)
        .arg(&src)
        .output()
        .map_err(|e| format!("{rustc}: {e}"))?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    Ok(bin)
}

/// Wall time of a whole process, which must exit with 0 or 1 (racy_counter's "lost
/// increments").
fn run_timed(cmd: &mut Command) -> (Duration, Output) {
    cmd.stdin(Stdio::null());
    let t = Instant::now();
    let out = cmd.output().expect("run a benchmark process");
    let took = t.elapsed();
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{cmd:?}: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    (took, out)
}

/// One side of a reported race: what it did and at which line of the program's own source
/// (`None`: only in code that is not the program's, such as std's thread start-up).
type SiteOf = (String, Option<u32>);

/// Helgrind's "Possible data race" reports as pairs of sides, each with the first frame in the
/// program's source file.
fn helgrind_races(log: &str) -> Vec<(SiteOf, SiteOf)> {
    let frame_line = |text: &str| -> Option<u32> {
        let at = text.find(&format!("({STD_FILE}:"))? + STD_FILE.len() + 2;
        text[at..].split(')').next()?.parse().ok()
    };
    log.split("Possible data race during ")
        .skip(1)
        .map(|report| {
            let access = report.split(' ').next().unwrap_or("?").to_owned();
            let (mine, theirs) = report
                .split_once("This conflicts with a previous ")
                .unwrap_or((report, ""));
            let other = theirs.split(' ').next().unwrap_or("?").to_owned();
            // A report ends where the next separator line starts.
            let theirs = theirs.split("----------------").next().unwrap_or("");
            let a = (access, frame_line(mine));
            let b = (other, frame_line(theirs));
            if a <= b { (a, b) } else { (b, a) }
        })
        .collect()
}

/// `ppd races --json`'s races as pairs of sides, and the count of each.
fn ppd_races(report: &serde_json::Value) -> Vec<((SiteOf, SiteOf), String, u64)> {
    report["races"]
        .as_array()
        .map(|races| {
            races
                .iter()
                .map(|r| {
                    let side = |s: &serde_json::Value| -> SiteOf {
                        (
                            s["operation"].as_str().unwrap_or("?").to_owned(),
                            s["line"].as_u64().map(|l| l as u32),
                        )
                    };
                    let (a, b) = (side(&r["a"]), side(&r["b"]));
                    let pair = if a <= b { (a, b) } else { (b, a) };
                    (
                        pair,
                        format!("{} race on {}", r["kind"].as_str().unwrap_or("?"), r["var"]),
                        r["count"].as_u64().unwrap_or(0),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn statement(source: &str, line: Option<u32>) -> String {
    match line {
        Some(l) => format!(
            "line {l:>2} `{}`",
            source
                .lines()
                .nth(l as usize - 1)
                .unwrap_or("?")
                .trim()
                .trim_end_matches(';')
        ),
        None => "not in the program's source (std's own code)".to_owned(),
    }
}

fn side_text(source: &str, (access, line): &SiteOf) -> String {
    format!("{access} at {}", statement(source, *line))
}

/// The release binaries the twin needs, next to this benchmark's own build directory.
fn release_binaries() -> Option<(PathBuf, PathBuf)> {
    let exe = std::env::current_exe().ok()?;
    let profile = exe.parent()?.parent()?;
    let ppd = profile.join("ppd");
    let twin = profile.join("examples").join("racy_counter");
    (ppd.exists() && twin.exists()).then_some((ppd, twin))
}

fn row(label: &str, d: Duration, note: &str) {
    println!("  {label:<48}{}{note}", ms(d));
}

fn helgrind(iters: u64, runs: usize) {
    println!(
        "side by side with Valgrind's Helgrind: 4 threads x {iters} iterations of a relaxed load \
         then store of one counter; whole-process wall time, median of {runs} runs each"
    );
    let tmp = std::env::temp_dir().join(format!("ppd-bench-races-{}", std::process::id()));
    if let Err(e) = std::fs::create_dir_all(&tmp) {
        println!("  SKIPPED: no temporary directory ({e})");
        return;
    }
    let std_bin = match build_std_program(&tmp) {
        Ok(bin) => Some(bin),
        Err(e) => {
            println!("  SKIPPED the std program and Helgrind: rustc could not build it: {e}");
            None
        }
    };
    let valgrind = Command::new("valgrind")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !valgrind {
        println!("  SKIPPED Helgrind: valgrind is not installed (or does not run) on this machine");
    }
    let binaries = release_binaries();
    if binaries.is_none() {
        println!(
            "  SKIPPED ppd's side: build the release binaries first: cargo build --release -p \
             ppd-cli -p ppd-examples --bin ppd --example racy_counter"
        );
    }
    let arg = iters.to_string();
    let mut native = Vec::new();
    let mut under = Vec::new();
    let mut helgrind_reports: BTreeMap<(SiteOf, SiteOf), usize> = BTreeMap::new();
    let mut helgrind_summary = String::new();
    let mut twin_plain = Vec::new();
    let mut recorded = Vec::new();
    let mut analysed = Vec::new();
    let mut both = Vec::new();
    let mut ppd_reports: BTreeMap<(SiteOf, SiteOf), (String, Vec<u64>)> = BTreeMap::new();
    let mut events = 0;
    for run in 0..runs {
        if let Some(bin) = &std_bin {
            native.push(run_timed(Command::new(bin).arg(&arg)).0);
            if valgrind {
                let (took, out) = run_timed(
                    Command::new("valgrind")
                        .args(["--tool=helgrind", "--error-limit=no"])
                        .arg(bin)
                        .arg(&arg),
                );
                under.push(took);
                let log = String::from_utf8_lossy(&out.stderr);
                for pair in helgrind_races(&log) {
                    *helgrind_reports.entry(pair).or_default() += 1;
                }
                helgrind_summary = log
                    .lines()
                    .find(|l| l.contains("ERROR SUMMARY"))
                    .unwrap_or("")
                    .trim_start_matches(|c: char| c == '=' || c.is_ascii_digit())
                    .trim()
                    .to_owned();
            }
        }
        if let Some((ppd, twin)) = &binaries {
            twin_plain.push(
                run_timed(
                    Command::new(twin)
                        .arg(&arg)
                        .env_remove("PPD_MODE")
                        .env_remove("PPD_DIR"),
                )
                .0,
            );
            let dir = tmp.join(format!("rec-{run}"));
            let (t_record, _) = run_timed(
                Command::new(ppd)
                    .arg("record")
                    .arg("-o")
                    .arg(&dir)
                    .arg("--")
                    .arg(twin)
                    .arg(&arg)
                    .current_dir(&tmp),
            );
            let (t_races, out) = run_timed(
                Command::new(ppd)
                    .args(["races", "--json"])
                    .arg(&dir)
                    .current_dir(&tmp),
            );
            recorded.push(t_record);
            analysed.push(t_races);
            both.push(t_record + t_races);
            let report: serde_json::Value =
                serde_json::from_slice(&out.stdout).expect("ppd races --json prints JSON");
            events = report["events"].as_u64().unwrap_or(0);
            for (pair, what, count) in ppd_races(&report) {
                let entry = ppd_reports.entry(pair).or_insert((what, Vec::new()));
                entry.1.push(count);
            }
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
    if !native.is_empty() {
        let native = median(native);
        row("std program (rustc -O -g), native", native, "");
        if !under.is_empty() {
            let under = median(under.clone());
            let slowdown = under.as_secs_f64() / native.as_secs_f64();
            row(
                "std program under helgrind",
                under,
                &format!("   ({slowdown:.0}x native)"),
            );
        }
    }
    if !recorded.is_empty() {
        row(
            "ppd twin (examples/racy_counter), not recorded",
            median(twin_plain),
            "",
        );
        row(
            "ppd twin, ppd record",
            median(recorded),
            &format!("   ({events} events logged)"),
        );
        row(
            "ppd races --json on that recording",
            median(analysed),
            "   (decode, clocks, races, report)",
        );
        let total = median(both);
        row("record + races, per run", total, "");
        if !under.is_empty() {
            println!(
                "  {:<48}{:>9.2}",
                "helgrind / (record + races)",
                median(under).as_secs_f64() / total.as_secs_f64()
            );
        }
    }
    if valgrind && std_bin.is_some() {
        println!("  helgrind reports (\"Possible data race\", by the first frame in {STD_FILE}):");
        for ((a, b), n) in &helgrind_reports {
            println!(
                "    {} / {}: {n} report(s) over {runs} run(s)",
                side_text(STD_RACY_COUNTER, a),
                side_text(STD_RACY_COUNTER, b)
            );
        }
        println!(
            "    (rustc -O may fold the relaxed load, the add and the store into one increment of \
             memory, whose read and write Helgrind both places at the store's line)"
        );
        println!("    helgrind's last summary: {helgrind_summary}");
    }
    if binaries.is_some() {
        let source = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/racy_counter.rs"),
        )
        .unwrap_or_default();
        println!("  ppd races reports (racy_counter.rs):");
        for ((a, b), (what, counts)) in &ppd_reports {
            println!(
                "    {what}: {} / {}: in {} of {runs} run(s), racing pairs {:?}",
                side_text(&source, a),
                side_text(&source, b),
                counts.len(),
                counts
            );
        }
    }
    let _ = std::fs::remove_dir_all(&tmp);
}

fn main() {
    // `cargo bench` passes `--bench`; a test run (`cargo test --benches`) passes nothing and
    // gets a quick smoke run.
    let quick = !std::env::args().any(|a| a == "--bench");
    let (events, runs) = if quick {
        (20_000, 1)
    } else {
        (
            env_u64("PPD_BENCH_EVENTS", 10_000_000),
            env_u64("PPD_BENCH_RUNS", 5).max(1) as usize,
        )
    };
    println!(
        "ppd race analysis benchmark: one core, median of {runs} runs, times exclude trace \
         generation"
    );
    println!();
    measure(
        "race-free: 8 processes, 32 lock-guarded atomics (relaxed accesses inside lock sections), \
         32 atomics with acquire/release/rmw accesses",
        &Shape::guarded(8, events, 64),
        1,
        runs,
    );
    measure(
        "mixed: 8 processes, atomics, lock sections, messages, semaphores, local events (racy)",
        &Shape::mixed(8, events),
        3,
        runs,
    );
    measure(
        "worst case: 8 processes, 64 atomics, 50% unordered relaxed accesses (almost every \
         access races)",
        &Shape::atomics(8, events, 64, 50),
        2,
        runs,
    );
    let iters = if quick {
        200
    } else {
        env_u64("PPD_BENCH_HELGRIND_ITERS", 20_000)
    };
    helgrind(iters, runs);
}
