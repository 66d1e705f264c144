//! Race analysis throughput, memory per shared variable, and a side-by-side with Valgrind's
//! Helgrind.
//!
//! `cargo bench -p ppd-flowback --bench races` prints what it measured and how. Sizes:
//! `PPD_BENCH_EVENTS` (default 10 000 000 events per synthetic trace),
//! `PPD_BENCH_HELGRIND_ITERS` (default 20 000 iterations per thread of the Helgrind program).
//! Nothing here gates: the goal (10 M events/s on one core) is reported, not asserted.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use ppd_flowback::message_races::message_races;
use ppd_flowback::races::clocks_and_races;
use ppd_flowback::synth::{self, Shape};
use ppd_flowback::{Analysis, Clocks, Trace};

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Best of `runs` timings of `f`.
fn best<T>(runs: usize, mut f: impl FnMut() -> T) -> (Duration, T) {
    let mut best = Duration::MAX;
    let mut last = None;
    for _ in 0..runs {
        let t = Instant::now();
        let v = f();
        best = best.min(t.elapsed());
        last = Some(v);
    }
    (best, last.expect("at least one run"))
}

fn rate(events: u64, d: Duration) -> String {
    format!("{:>7.1} M events/s", events as f64 / d.as_secs_f64() / 1e6)
}

fn ms(d: Duration) -> String {
    format!("{:>9.1} ms", d.as_secs_f64() * 1e3)
}

fn measure(label: &str, trace: &Trace) {
    let events = trace.event_count();
    let (t_clocks, _) = best(3, || Clocks::compute(trace));
    let (t_races, (clocks, races, stats)) = best(3, || clocks_and_races(trace));
    let (t_messages, messages) = best(3, || message_races(trace, &clocks));
    let total = t_races + t_messages;
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
        "  all race analysis             {}  {}",
        ms(total),
        rate(events, total)
    );
    println!(
        "  found: {} data races, {} message races (deduplicated by site pair)",
        races.len(),
        messages.len()
    );
    println!(
        "  memory: detector {:.0} bytes per shared variable ({} variables); clocks {:.1} bytes \
         per event ({} stored vectors); trace {} bytes per event",
        stats.state_bytes as f64 / stats.variables.max(1) as f64,
        stats.variables,
        clocks.heap_bytes() as f64 / events as f64,
        clocks.checkpoint_count(),
        std::mem::size_of::<ppd_flowback::trace::Ev>()
    );
    println!();
    black_box((races, messages));
}

/// The comparable program for Helgrind: `racy_counter` with `std` instead of `ppd` (four
/// threads, a relaxed load then store of one shared counter).
const STD_RACY_COUNTER: &str = r#"
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
fn main() {
    let iters: u64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(1000);
    let counter = Arc::new(AtomicU64::new(0));
    let workers: Vec<_> = (0..4)
        .map(|_| {
            let counter = Arc::clone(&counter);
            std::thread::spawn(move || {
                for _ in 0..iters {
                    let seen = counter.load(Ordering::Relaxed);
                    counter.store(seen + 1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    println!("counter = {}", counter.load(Ordering::SeqCst));
}
"#;

fn build_std_program(dir: &Path) -> Option<PathBuf> {
    let src = dir.join("std_racy_counter.rs");
    let bin = dir.join("std_racy_counter");
    std::fs::write(&src, STD_RACY_COUNTER).ok()?;
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let ok = Command::new(rustc)
        .args(["--edition", "2021", "-O", "-g", "-o"])
        .arg(&bin)
        .arg(&src)
        .status()
        .ok()?
        .success();
    ok.then_some(bin)
}

fn helgrind(iters: u64) {
    println!("side by side with Valgrind's Helgrind (report only)");
    let Ok(tmp) = tempfile_dir() else {
        println!("  skipped: no temporary directory");
        return;
    };
    let Some(bin) = build_std_program(&tmp) else {
        println!("  skipped: could not compile the std program with rustc");
        return;
    };
    let arg = iters.to_string();
    let (native, _) = best(3, || Command::new(&bin).arg(&arg).output());
    let t = Instant::now();
    let out = Command::new("valgrind")
        .args(["--tool=helgrind", "--error-limit=no"])
        .arg(&bin)
        .arg(&arg)
        .output();
    let under = t.elapsed();
    let out = match out {
        Ok(o) => o,
        Err(e) => {
            println!("  skipped: valgrind not runnable ({e})");
            return;
        }
    };
    let log = String::from_utf8_lossy(&out.stderr);
    let reports = log.matches("Possible data race").count();
    let summary = log
        .lines()
        .find(|l| l.contains("ERROR SUMMARY"))
        .unwrap_or("")
        .trim_start_matches(|c: char| c == '=' || c.is_ascii_digit())
        .trim();
    let mut lines: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("std_racy_counter.rs:"))
        .filter_map(|l| l.rsplit_once('(').map(|(_, loc)| loc.trim_end_matches(')')))
        .collect();
    lines.sort_unstable();
    lines.dedup();
    println!(
        "  program: 4 std threads x {iters} iterations of a relaxed load then store (racy_counter \
         without ppd), built with rustc -O"
    );
    println!("  native                        {}", ms(native));
    println!(
        "  under helgrind                {}  slowdown {:.0}x",
        ms(under),
        under.as_secs_f64() / native.as_secs_f64()
    );
    println!("  helgrind: {reports} \"Possible data race\" reports; {summary}");
    println!("  helgrind locations: {}", lines.join(", "));
    // ppd on the same shape of run: 4 processes, each a relaxed load then store per iteration.
    let trace = racy_counter_trace(4, iters);
    let (t, a) = best(3, || {
        let a = Analysis::of_trace(trace.clone());
        let races = a.data_races();
        (a, races)
    });
    println!(
        "  ppd on the same run's log ({} events): clocks + races {}, {} races (load/store, \
         store/store) with both sides and clocks",
        trace.event_count(),
        ms(t),
        a.1.len()
    );
    let _ = std::fs::remove_dir_all(&tmp);
}

fn tempfile_dir() -> std::io::Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("ppd-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

/// The log `racy_counter` with `iters` iterations would produce: main spawns the workers,
/// each loads then stores, main joins them; accesses interleave round-robin.
fn racy_counter_trace(workers: u32, iters: u64) -> Trace {
    use ppd_flowback::trace::Op;
    use ppd_formats::event::{AtomicOp, MemOrdering, ObjectKind};
    use ppd_formats::{ObjectId, ProcessId};
    let mut b = Trace::builder();
    let main = b.add_process(ProcessId(0), "main", None);
    let counter = b.define_object(
        ObjectId::new(ProcessId(0), 0),
        ObjectKind::Atomic,
        0,
        Some("counter"),
    );
    let load = b.site("racy_counter.rs", 24, 1);
    let store = b.site("racy_counter.rs", 25, 1);
    let none = ppd_flowback::trace::NO_SITE;
    b.push(main, Op::Create { object: counter }, none);
    let ps: Vec<u32> = (1..=workers)
        .map(|w| {
            let p = b.add_process(ProcessId(w), &format!("incr-{w}"), Some(ProcessId(0)));
            b.push(
                main,
                Op::Spawn {
                    child: ProcessId(w),
                },
                none,
            );
            b.push(
                p,
                Op::Start {
                    parent: Some(ProcessId(0)),
                },
                none,
            );
            p
        })
        .collect();
    let mut version = 0;
    for _ in 0..iters {
        for &p in &ps {
            for (op, site) in [(AtomicOp::Load, load), (AtomicOp::Store, store)] {
                version += 1;
                b.push(
                    p,
                    Op::Atomic {
                        object: counter,
                        version,
                        prev: None,
                        op,
                        ordering: MemOrdering::Relaxed,
                    },
                    site,
                );
            }
        }
    }
    for &p in &ps {
        b.push(p, Op::Exit, none);
        b.push(
            main,
            Op::Join {
                child: ProcessId(p),
            },
            none,
        );
    }
    b.push(main, Op::Exit, none);
    b.build()
}

fn main() {
    // `cargo bench` passes `--bench`; a test run (`cargo test --benches`) passes nothing and
    // gets a quick smoke run.
    let quick = !std::env::args().any(|a| a == "--bench");
    let events = if quick {
        20_000
    } else {
        env_u64("PPD_BENCH_EVENTS", 10_000_000)
    };
    println!(
        "ppd race analysis benchmark: one core, best of 3 runs, times exclude trace generation"
    );
    println!();
    let trace = synth::execution(&Shape::guarded(8, events, 64), 1);
    measure(
        "race-free: 8 processes, 32 lock-guarded atomics (relaxed accesses inside lock sections), \
         32 atomics with acquire/release/rmw accesses",
        &trace,
    );
    drop(trace);
    let trace = synth::execution(&Shape::mixed(8, events), 3);
    measure(
        "mixed: 8 processes, atomics, lock sections, messages, semaphores, local events (racy)",
        &trace,
    );
    drop(trace);
    let trace = synth::execution(&Shape::atomics(8, events, 64, 50), 2);
    measure(
        "worst case: 8 processes, 64 atomics, 50% unordered relaxed accesses (almost every \
         access races)",
        &trace,
    );
    drop(trace);
    let iters = if quick {
        200
    } else {
        env_u64("PPD_BENCH_HELGRIND_ITERS", 20_000)
    };
    helgrind(iters);
}
