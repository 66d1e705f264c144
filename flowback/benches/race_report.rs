//! `ppd races` end to end on synthetic recordings of ten and a hundred million events, and on
//! `bank 160000`: how fast, and how much memory per event.
//!
//! ```sh
//! cargo build --release -p ppd-cli -p ppd-examples --bin ppd --example bank   # for bank's part
//! cargo bench -p ppd-flowback --bench race_report
//! ```
//!
//! **Bank.** `bank PPD_BENCH_BANK_OPS` (default 160 000: about 11 M events) is recorded with
//! the release binaries, then `ppd races` runs on it as a whole process `PPD_BENCH_RUNS` times:
//! the median wall time and the largest peak resident memory (`wait4`'s `ru_maxrss`), which is
//! what a user meets. The in-process report with both event stores follows, as below. Without
//! the release binaries this part is skipped with a notice.
//!
//! **Synthetic.**
//! The recording is written with the real log writer and is shaped like `examples/bank`: one
//! server and `CLIENTS` clients. Each request is a client drawing a random number, sending on
//! the shared request channel, blocking and receiving its reply on its own channel; the
//! server receives it, opens an e-block with a 64-byte prelog, takes and releases a mutex,
//! closes the e-block with its postlog and replies. That is 10 events per request. The
//! clients' sends race at the server's receives, as the bank's do.
//!
//! What is timed is what `ppd races` does once the recording is open:
//! [`Analysis::race_report`] reads the logs into the compact event store and computes the
//! clocks, the data and message races, the deadlocks and the lock-order cycles. The baseline,
//! in the same run, is the same report from events kept 32 bytes each
//! (`Trace::load` and [`Analysis::race_report_of`]); both reports must be equal. Peak memory
//! is the process's resident high-water mark during the report, above what was resident
//! before it (reset through `/proc/self/clear_refs`, Linux). Each timing is the median of
//! `PPD_BENCH_RUNS` runs (default 3). `PPD_BENCH_EVENTS` (default 100 000 000) sets the
//! larger recording; the smaller is a tenth of it. The goals (10 M events/s end to end, at
//! most 24 bytes per event) are reported, not asserted: the machine may be shared.

use std::panic::Location;
use std::path::Path;
use std::time::{Duration, Instant};

use binaries::{record_bank, release_binaries, run};
use memory::{peak_rss, reset_peak_rss};
use ppd_flowback::{Analysis, Trace};
use ppd_formats::event::ObjectKind;
use ppd_formats::{
    Borrowed, Event, LogWriter, Manifest, ObjectId, ProcessId, Recording, WriterOptions,
};
use settings::env_u64;

#[path = "common/binaries.rs"]
mod binaries;
#[path = "common/memory.rs"]
mod memory;
#[path = "common/settings.rs"]
mod settings;

const CLIENTS: u32 = 4;
const EVENTS_PER_REQUEST: u64 = 10;

fn name(id: u32) -> String {
    match id {
        0 => "main".to_owned(),
        1 => "server".to_owned(),
        c => format!("client-{}", c - 2),
    }
}

/// Writes the recording of about `events` events into `dir`; returns how many it wrote.
fn write_bank(dir: &Path, events: u64) -> u64 {
    let processes = CLIENTS + 2;
    let names: Vec<String> = (0..processes).map(name).collect();
    let mut logs =
        Manifest::create_synthetic(dir, "bank", &names, WriterOptions::default()).unwrap();
    let mut written = 0u64;
    let mut put = |logs: &mut Vec<LogWriter>, p: u32, e: &Event<Borrowed<'_>>| {
        logs[p as usize].append(e).unwrap();
        written += 1;
    };
    let (send_site, recv_site, serve_site) =
        (Location::caller(), Location::caller(), Location::caller());
    let requests = ObjectId::new(ProcessId(0), 0);
    let ledger = ObjectId::new(ProcessId(0), 1);
    let reply = |c: u32| ObjectId::new(ProcessId(0), 2 + c);
    let create = |object, kind| Event::Create {
        object,
        kind,
        init: 0,
        name: None,
        site: Some(serve_site),
    };
    put(&mut logs, 0, &Event::Start { parent: None });
    put(&mut logs, 0, &create(requests, ObjectKind::Channel));
    put(&mut logs, 0, &create(ledger, ObjectKind::Mutex));
    for c in 0..CLIENTS {
        put(&mut logs, 0, &create(reply(c), ObjectKind::Channel));
    }
    for p in 1..processes {
        put(
            &mut logs,
            0,
            &Event::Spawn {
                child: ProcessId(p),
                site: Some(serve_site),
            },
        );
        put(
            &mut logs,
            p,
            &Event::Start {
                parent: Some(ProcessId(0)),
            },
        );
    }
    let prelog = [0x91u8; 64];
    let (server, rounds) = (1u32, events / EVENTS_PER_REQUEST / u64::from(CLIENTS));
    let mut seq = 0u64;
    let mut replies = vec![0u64; CLIENTS as usize];
    for round in 0..rounds {
        for c in 0..CLIENTS {
            let client = 2 + c;
            seq += 1;
            put(&mut logs, client, &Event::Random { value: round });
            put(
                &mut logs,
                client,
                &Event::Send {
                    channel: requests,
                    seq,
                    site: Some(send_site),
                    payload: None,
                },
            );
            put(
                &mut logs,
                client,
                &Event::Blocked {
                    object: reply(c),
                    site: Some(recv_site),
                },
            );
            put(
                &mut logs,
                server,
                &Event::Recv {
                    channel: requests,
                    sender: ProcessId(client),
                    seq,
                    site: Some(serve_site),
                    payload: None,
                },
            );
            put(
                &mut logs,
                server,
                &Event::EblockEnter {
                    eblock: "serve",
                    site: Some(serve_site),
                    prelog: &prelog,
                },
            );
            put(
                &mut logs,
                server,
                &Event::Lock {
                    object: ledger,
                    version: seq,
                    prev: (seq > 1).then_some(ProcessId(server)),
                    site: Some(serve_site),
                    value: None,
                },
            );
            put(
                &mut logs,
                server,
                &Event::Unlock {
                    object: ledger,
                    site: Some(serve_site),
                },
            );
            put(
                &mut logs,
                server,
                &Event::EblockExit {
                    eblock: "serve",
                    postlog: &prelog,
                },
            );
            replies[c as usize] += 1;
            let r = replies[c as usize];
            put(
                &mut logs,
                server,
                &Event::Send {
                    channel: reply(c),
                    seq: r,
                    site: Some(serve_site),
                    payload: None,
                },
            );
            put(
                &mut logs,
                client,
                &Event::Recv {
                    channel: reply(c),
                    sender: ProcessId(server),
                    seq: r,
                    site: Some(recv_site),
                    payload: None,
                },
            );
        }
    }
    for p in (1..processes).chain([0]) {
        put(&mut logs, p, &Event::Exit);
    }
    for log in logs {
        log.close().unwrap();
    }
    written
}

/// The median time of `runs` runs of `f`, and the largest peak memory above the resident size
/// before each run (none if it cannot be measured here).
fn measure<T>(runs: usize, mut f: impl FnMut() -> T) -> (Duration, Option<u64>, T) {
    let mut times = Vec::with_capacity(runs);
    let mut peak_above = Some(0u64);
    let mut last = None;
    for _ in 0..runs {
        drop(last.take());
        let reset = reset_peak_rss();
        let base = peak_rss();
        let t = Instant::now();
        let out = f();
        times.push(t.elapsed());
        peak_above = match (reset, base, peak_rss(), peak_above) {
            (true, Some(base), Some(peak), Some(most)) => Some(most.max(peak.saturating_sub(base))),
            _ => None,
        };
        last = Some(out);
    }
    times.sort();
    (
        times[times.len() / 2],
        peak_above,
        last.expect("at least one run"),
    )
}

fn report_line(what: &str, events: u64, time: Duration, peak: Option<u64>) {
    let memory = match peak {
        Some(bytes) => format!(
            "{:>8.1} MiB  {:>5.1} B/event",
            bytes as f64 / 1048576.0,
            bytes as f64 / events as f64
        ),
        None => "peak memory not measurable here".to_owned(),
    };
    println!(
        "  {what:<34} {:>7.2} s  {:>6.1} M events/s  {memory}",
        time.as_secs_f64(),
        events as f64 / time.as_secs_f64() / 1e6
    );
}

fn synthetic(events_wanted: u64, runs: usize, baseline: bool) {
    let dir = tempfile::tempdir().unwrap();
    let t = Instant::now();
    let events = write_bank(dir.path(), events_wanted);
    println!(
        "synthetic: {events} events ({} requests from {CLIENTS} clients), written in {:.1} s",
        events / EVENTS_PER_REQUEST,
        t.elapsed().as_secs_f64()
    );
    in_process(dir.path(), events, runs, baseline);
}

/// The report of the recording in `dir`, of `events` events, in this process: with compact
/// events, and with `baseline` also with events kept whole.
fn in_process(dir: &Path, events: u64, runs: usize, baseline: bool) {
    let recording = Recording::open(dir).unwrap();
    let (time, peak, report) = measure(runs, || Analysis::race_report(&recording).unwrap());
    report_line("ppd races (compact events)", events, time, peak);
    assert_eq!(report.events, events, "every event was read");
    assert!(
        report.races.iter().any(|r| r.kind == "message"),
        "the clients' sends race"
    );
    if baseline {
        let (full_time, full_peak, full) = measure(runs, || {
            Analysis::race_report_of(&Trace::load(&recording).unwrap())
        });
        report_line(
            "baseline: events kept 32 B each",
            events,
            full_time,
            full_peak,
        );
        assert_eq!(
            serde_json::to_string(&report).unwrap(),
            serde_json::to_string(&full).unwrap(),
            "both keep the same report"
        );
        if let (Some(peak), Some(full_peak)) = (peak, full_peak) {
            println!(
                "  compact / baseline: time {:.2}, memory {:.2}",
                time.as_secs_f64() / full_time.as_secs_f64(),
                peak as f64 / full_peak as f64
            );
        }
    }
}

fn main() {
    // `cargo test --benches` runs this without `--bench`: keep it short then.
    let quick = !std::env::args().any(|a| a == "--bench");
    let (large, runs) = if quick {
        (20_000, 1)
    } else {
        (
            env_u64("PPD_BENCH_EVENTS", 100_000_000),
            env_u64("PPD_BENCH_RUNS", 3).max(1) as usize,
        )
    };
    println!(
        "ppd races end to end on synthetic bank recordings: median of {runs} run(s); goals 10 M \
         events/s and at most 24 bytes per event"
    );
    if !quick {
        bank(runs);
    }
    synthetic(large / 10, runs, true);
    synthetic(large, runs, false);
}

/// `ppd races` on a recording of `bank`, as a whole process and in this one.
fn bank(runs: usize) {
    let ops = env_u64("PPD_BENCH_BANK_OPS", 160_000);
    let Some((ppd, bank)) = release_binaries() else {
        println!(
            "bank: SKIPPED: build the release binaries first: cargo build --release -p ppd-cli \
             -p ppd-examples --bin ppd --example bank"
        );
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let rec = dir.path().join("rec");
    let events = match record_bank(&ppd, &bank, ops, &rec) {
        Ok(events) => events,
        Err(why) => {
            println!("bank: FAILED: {why}");
            return;
        }
    };
    println!("bank {ops}: {events} events");
    let r = rec.to_str().expect("a UTF-8 temporary path");
    let costs: Vec<_> = (0..runs).map(|_| run(&ppd, &["races", r])).collect();
    let mut walls: Vec<Duration> = costs.iter().map(|c| c.wall).collect();
    walls.sort();
    let wall = walls[walls.len() / 2];
    let top = costs
        .iter()
        .max_by_key(|c| c.peak_rss.unwrap_or(c.floor))
        .expect("at least one run");
    let peak = top.peak_rss.unwrap_or(top.floor);
    println!(
        "  {:<34} {:>7.2} s  {:>6.1} M events/s  {:>12}  {}{:>5.1} B/event   (whole process; \
         goals: at most 1.1 s, 24 B/event){}",
        "ppd races",
        wall.as_secs_f64(),
        events as f64 / wall.as_secs_f64() / 1e6,
        top.peak_text(),
        if top.peak_rss.is_some() { "" } else { "≤ " },
        peak as f64 / events.max(1) as f64,
        if costs.iter().all(|c| c.ok) {
            ""
        } else {
            "  (exited non-zero)"
        }
    );
    if let Some(failed) = costs.iter().find(|c| !c.ok) {
        println!("    ppd races said: {}", failed.stderr.trim());
    }
    in_process(&rec, events, runs, true);
}
