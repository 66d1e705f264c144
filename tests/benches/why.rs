//! How long a why-query takes as the recording grows, and what e-blocks cost a recorded run.
//!
//! ```sh
//! cargo build --release -p ppd-examples --example bank   # for the overhead on bank
//! cargo bench -p ppd-tests --bench why
//! ```
//!
//! **Query latency.** `why_cases long N` (`source` → `doubler` → `sink`, every step an e-block)
//! is recorded with N chosen for about 1 M and 10 M events. The query is `ppd why sink total
//! --at E --depth 5`, E an event near the end of `sink`'s log, asked through the library the way
//! the command asks it, with the cache in three states:
//!
//! * cold: no cache: each process's index is built by reading its log, and the instances the
//!   answer passes through are re-executed by the recorded binary (one run per level);
//! * indexed: indexes cached, traces not: only the re-execution;
//! * warm: indexes and traces cached.
//!
//! Each is the median of 7 queries (the three states in turn, 7 times).
//!
//! The warm 10 M / 1 M ratio says whether the latency stays flat as the recording grows.
//!
//! **Recording overhead.** Whole-process wall time of a program recorded (`PPD_MODE=record`)
//! against the same binary run without ppd's environment (pass-through), alternating, median of
//! 7 runs each: a program that does nearly nothing (what starting and ending a recording cost,
//! hashing the binary included), `why_cases long 200000` (e-blocks that only pass messages: the
//! worst case), and the `bank` example with 12 and 2000 operations per client (its clients sleep
//! between a check and a withdrawal, as a real client would wait for its user).
//!
//! **`why` on `bank 160000`** (about 10.8 M events). `ppd why teller balance --depth 8`, run as
//! the `ppd` command (release build) the way a user runs it, cold (no cache) and warm, median of
//! 3 each: wall time, CPU time (user and system: what the command took on a shared machine)
//! and peak memory of the `ppd` process (`wait4`'s resource usage). The answer's chain
//! reaches the clients' `operate` instances, whose `account` was passed by code outside
//! e-blocks: without an index the query read every earlier instance's logs to learn that. The
//! baseline in the same run is `--depth 6`, which stops before those steps: depth 8 / depth 6
//! says whether the deeper chain costs in proportion to its steps. The size of the cache the
//! queries left is compared with the recording's.
//!
//! ```sh
//! cargo build --release -p ppd-cli -p ppd-examples --bin ppd --example bank
//! ```
//!
//! `cargo bench -p ppd-tests --bench why -- bank` runs only that part (`latency`, `bank`,
//! `overhead`; all by default). Run as a test (`cargo test --benches`) it records a small run
//! and asks one query.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use ppd_flowback::why::index::ProcessIndex;
use ppd_flowback::why::{self, Point, Query, TraceStore};
use ppd_formats::Recording;

#[path = "../../flowback/benches/common/memory.rs"]
mod memory;

fn why_cases() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_why_cases"))
}

/// Runs `program ARGS` recorded into `dir` (or unrecorded when `dir` is `None`); its wall time.
fn run(program: &Path, args: &[&str], dir: Option<&Path>) -> Duration {
    let mut cmd = Command::new(program);
    cmd.args(args)
        .env_remove("PPD_MODE")
        .env_remove("PPD_DIR")
        .stdout(std::process::Stdio::null());
    if let Some(dir) = dir {
        std::fs::create_dir_all(dir).expect("a recording directory");
        cmd.env("PPD_MODE", "record").env("PPD_DIR", dir);
    }
    let start = Instant::now();
    let status = cmd.status().expect("run the program");
    let took = start.elapsed();
    assert!(
        matches!(status.code(), Some(0 | 1)),
        "{} {args:?}: {status}",
        program.display()
    );
    took
}

fn events_of(dir: &Path) -> u64 {
    let recording = Recording::open(dir).expect("a recording");
    recording
        .processes()
        .iter()
        .map(|p| recording.open_log(p).expect("a log").event_count())
        .sum()
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn median(mut xs: Vec<Duration>) -> Duration {
    xs.sort();
    xs[xs.len() / 2]
}

struct Latency {
    events: u64,
    cold: Duration,
    indexed: Duration,
    warm: Duration,
    steps: usize,
    reexecuted: usize,
    runs: usize,
}

fn query(dir: &Path, at: u64) -> (Duration, why::Answer) {
    let recording = Recording::open(dir).expect("a recording");
    let start = Instant::now();
    let mut store = TraceStore::new(&recording, None);
    let answer = why::ask(
        &mut store,
        &Query {
            process: "sink".into(),
            var: "total".into(),
            at: Point::Event(at),
            depth: 5,
        },
    )
    .expect("the query is answered");
    (start.elapsed(), answer)
}

/// The query's latency in each cache state, each the median of `rounds` queries.
fn latency(work: &Path, values: u64, rounds: usize) -> Latency {
    let dir = work.join(format!("long-{values}"));
    run(&why_cases(), &["long", &values.to_string()], Some(&dir));
    let events = events_of(&dir);
    let recording = Recording::open(&dir).unwrap();
    let sink = recording.find_process("sink").unwrap().id;
    let at = ProcessIndex::build(&recording, sink).unwrap().events - 20;
    let cache = dir.join("cache");
    let (mut cold, mut indexed, mut warm) = (Vec::new(), Vec::new(), Vec::new());
    let mut answer = None;
    for _ in 0..rounds {
        let _ = std::fs::remove_dir_all(&cache);
        let (t, a) = query(&dir, at);
        assert!(a.leaks.is_empty());
        cold.push(t);
        std::fs::remove_dir_all(cache.join("traces")).unwrap();
        let (t, a) = query(&dir, at);
        indexed.push(t);
        answer = Some(a);
        let (t, a) = query(&dir, at);
        assert_eq!(a.work.reexecuted, 0);
        warm.push(t);
    }
    let answer = answer.expect("at least one round");
    Latency {
        events,
        cold: median(cold),
        indexed: median(indexed),
        warm: median(warm),
        steps: answer.steps.len(),
        reexecuted: answer.work.reexecuted,
        runs: answer.work.runs,
    }
}

fn overhead(program: &Path, args: &[&str], work: &Path, rounds: usize) -> (Duration, Duration) {
    let mut recorded = Vec::new();
    let mut plain = Vec::new();
    for round in 0..rounds {
        let dir = work.join(format!("overhead-{round}"));
        if round % 2 == 0 {
            plain.push(run(program, args, None));
            recorded.push(run(program, args, Some(&dir)));
        } else {
            recorded.push(run(program, args, Some(&dir)));
            plain.push(run(program, args, None));
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
    (median(recorded), median(plain))
}

/// Bytes of the regular files under `dir`, leaving out `skip`.
fn size_of(dir: &Path, skip: Option<&Path>) -> u64 {
    let mut total = 0;
    for entry in std::fs::read_dir(dir).expect("a directory").flatten() {
        let path = entry.path();
        if Some(path.as_path()) == skip {
            continue;
        }
        let meta = entry.metadata().expect("metadata");
        if meta.is_dir() {
            total += size_of(&path, skip);
        } else if meta.is_file() {
            total += meta.len();
        }
    }
    total
}

/// What one run of the `ppd` command cost.
struct Cost {
    wall: Duration,
    /// User and system time: on a shared machine, what the command itself took.
    cpu: Duration,
    /// Peak resident memory, bytes; `None` when the command stayed below this benchmark's own
    /// resident memory at the spawn, which Linux carries into a child's `ru_maxrss` at `exec`
    /// (it is reset to what is resident just before, so that floor is as low as it can be).
    peak: Option<u64>,
    floor: u64,
}

/// One run of the `ppd` command: what it cost, and what it printed.
#[expect(
    clippy::zombie_processes,
    reason = "`wait4` reaps the child, and gives its resource usage"
)]
fn ppd_run(ppd: &Path, args: &[&str]) -> (Cost, String) {
    memory::reset_peak_rss();
    let floor = memory::peak_rss().unwrap_or(0);
    let start = Instant::now();
    let mut child = Command::new(ppd)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("run ppd");
    let mut out = String::new();
    child
        .stdout
        .take()
        .expect("piped")
        .read_to_string(&mut out)
        .expect("ppd's output");
    let mut status = 0;
    // SAFETY: an all-zero `rusage` is a valid value of the plain C struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waits for our own child, writing only into the two locals passed.
    let pid = unsafe { libc::wait4(child.id() as libc::pid_t, &mut status, 0, &mut usage) };
    let took = start.elapsed();
    assert_eq!(pid, child.id() as libc::pid_t, "wait4");
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "ppd {args:?}: {status}"
    );
    let time = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    let cost = Cost {
        wall: took,
        cpu: time(usage.ru_utime) + time(usage.ru_stime),
        // Linux gives ru_maxrss in KiB.
        peak: Some(usage.ru_maxrss as u64 * 1024).filter(|&peak| peak > floor),
        floor,
    };
    (cost, out)
}

/// The steps of a `--json` answer.
fn json_steps(answer: &str) -> usize {
    let answer: serde_json::Value = serde_json::from_str(answer).expect("a JSON answer");
    answer["steps"].as_array().map_or(0, Vec::len)
}

/// `ppd why teller balance` on `bank 160000`, cold and warm.
fn bank_query(work: &Path, bank: &Path, ppd: &Path) {
    let dir = work.join("bank-160000");
    run(bank, &["160000"], Some(&dir));
    let events = events_of(&dir);
    let cache = dir.join("cache");
    let recording = size_of(&dir, Some(&cache));
    let rec = dir.to_str().expect("a UTF-8 path");
    let ask = |depth: &str| {
        ppd_run(
            ppd,
            &[
                "why", rec, "teller", "balance", "--depth", depth, "--json", "--quiet",
            ],
        )
    };
    let (mut cold, mut warm, mut shallow) = (Vec::new(), Vec::new(), Vec::new());
    let mut steps = (0, 0);
    for _ in 0..3 {
        let _ = std::fs::remove_dir_all(&cache);
        let (cost, out) = ask("8");
        cold.push(cost);
        let (cost, again) = ask("8");
        assert_eq!(json_steps(&out), json_steps(&again), "cold and warm agree");
        warm.push(cost);
        let (cost, six) = ask("6");
        shallow.push(cost);
        steps = (json_steps(&again), json_steps(&six));
    }
    let cached = size_of(&cache, None);
    let mb = |b: u64| b as f64 / (1024.0 * 1024.0);
    println!(
        "\n`ppd why teller balance` on bank 160000 ({events} events, {:.1} MiB recording), \
         the ppd command, median of 3:",
        mb(recording)
    );
    let show = |what: &str, costs: &[Cost]| {
        let wall = median(costs.iter().map(|c| c.wall).collect());
        let cpu = median(costs.iter().map(|c| c.cpu).collect());
        let top = costs
            .iter()
            .max_by_key(|c| c.peak.unwrap_or(c.floor))
            .expect("at least one run");
        let peak = match top.peak {
            Some(peak) => format!("{:.0} MiB", mb(peak)),
            None => format!("≤ {:.0} MiB (below this benchmark's own)", mb(top.floor)),
        };
        println!(
            "  {what}: {:.1} ms wall, {:.1} ms CPU, peak memory {peak}",
            ms(wall),
            ms(cpu),
        );
        cpu
    };
    show("--depth 8, cold (no cache)", &cold);
    let warm = show("--depth 8, warm           ", &warm);
    let shallow = show("--depth 6, warm (baseline)", &shallow);
    println!(
        "  depth 8 / depth 6, warm: {:.2} in CPU time, {:.2} in steps ({} / {})",
        warm.as_secs_f64() / shallow.as_secs_f64(),
        steps.0 as f64 / steps.1 as f64,
        steps.0,
        steps.1
    );
    println!(
        "  cache after the queries: {:.1} MiB = {:.2} of the recording",
        mb(cached),
        cached as f64 / recording as f64
    );
    let _ = std::fs::remove_dir_all(&dir);
}

fn main() {
    // `cargo test --benches` runs this with `--bench` absent: a smoke run.
    let full = std::env::args().any(|a| a == "--bench");
    let work = tempfile::tempdir().expect("a scratch directory");
    if !full {
        let l = latency(work.path(), 300, 1);
        assert!(l.steps > 1 && l.events > 1000);
        println!(
            "why bench smoke run: {} events, {} steps",
            l.events, l.steps
        );
        return;
    }
    let parts: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let wanted = |part: &str| parts.is_empty() || parts.iter().any(|p| p == part);
    if wanted("latency") {
        query_latency(work.path());
    }
    let bank = ppd_tests::build_dir().join("examples").join("bank");
    let ppd = ppd_tests::build_dir().join("ppd");
    if wanted("bank") {
        if bank.exists() && ppd.exists() {
            bank_query(work.path(), &bank, &ppd);
        } else {
            println!(
                "\nwhy on bank 160000: not built; run `cargo build --release -p ppd-cli -p \
                 ppd-examples --bin ppd --example bank`"
            );
        }
    }
    if wanted("overhead") {
        recording_overhead(work.path(), &bank);
    }
}

/// The why-query latency at about 1 M and 10 M events.
fn query_latency(work: &Path) {
    // About 11 events per value: calibrate on a small run.
    let probe = work.join("probe");
    run(&why_cases(), &["long", "10000"], Some(&probe));
    let per_value = events_of(&probe) as f64 / 10_000.0;
    let _ = std::fs::remove_dir_all(&probe);

    println!(
        "why-query latency, `why sink total --at <late event> --depth 5`, median of 7 queries \
         in each cache state:"
    );
    println!(
        "{:>12} {:>10} {:>12} {:>10} {:>7} {:>12}",
        "events", "cold ms", "indexed ms", "warm ms", "steps", "re-executed"
    );
    let mut warm = Vec::new();
    for target in [1_000_000f64, 10_000_000f64] {
        let values = (target / per_value) as u64;
        let l = latency(work, values, 7);
        println!(
            "{:>12} {:>10.1} {:>12.1} {:>10.2} {:>7} {:>6} in {} runs",
            l.events,
            ms(l.cold),
            ms(l.indexed),
            ms(l.warm),
            l.steps,
            l.reexecuted,
            l.runs
        );
        warm.push(l.warm);
        let _ = std::fs::remove_dir_all(work.join(format!("long-{values}")));
    }
    println!(
        "warm latency, 10 M / 1 M events: {:.2}",
        warm[1].as_secs_f64() / warm[0].as_secs_f64()
    );
}

/// Recorded against unrecorded wall time.
fn recording_overhead(work: &Path, bank: &Path) {
    println!("\nrecording overhead, whole-process wall time, median of 7 (recorded / unrecorded):");
    let (r, p) = overhead(&why_cases(), &["early"], work, 7);
    println!(
        "  a program that does nearly nothing (start-up and end of a recording): {:.1} ms / {:.1} ms, +{:.1} ms",
        ms(r),
        ms(p),
        ms(r.saturating_sub(p))
    );
    let (r, p) = overhead(&why_cases(), &["long", "200000"], work, 7);
    println!(
        "  why_cases long 200000 (e-blocks passing messages, nothing else): {:.1} ms / {:.1} ms = {:.2}",
        ms(r),
        ms(p),
        r.as_secs_f64() / p.as_secs_f64()
    );
    if bank.exists() {
        for operations in ["12", "2000"] {
            let (r, p) = overhead(bank, &[operations], work, 7);
            println!(
                "  bank {operations} (operations per client; clients think between check and withdrawal): {:.1} ms / {:.1} ms = {:.2}",
                ms(r),
                ms(p),
                r.as_secs_f64() / p.as_secs_f64()
            );
        }
    } else {
        println!(
            "  bank: not built ({}); run `cargo build --release -p ppd-examples --example bank`",
            bank.display()
        );
    }
}
