//! What `ppd build`'s automatic e-blocks cost a recorded run, against the e-blocks written by
//! hand and against none.
//!
//! ```sh
//! cargo build --release -p ppd-cli
//! cargo bench -p ppd-tests --bench auto_eblocks
//! ```
//!
//! A scratch crate ([`ppd_tests::unannotated`]) holds `bank`, `pipeline` and `word_count` with
//! their `#[ppd::eblock]` lines blanked, the same examples as written, and the CPU-bound loop of
//! `tests/unannotated/cpu_loop.rs`. It is built twice, in release: by `cargo build` (the
//! unannotated programs have **no** e-blocks, the written ones their own) and by `ppd build`
//! (the unannotated programs get the **automatic** ones). Each program is then recorded
//! (`PPD_MODE=record`), the three variants in turn, `PPD_BENCH_ROUNDS` times (default 9); the
//! figures are medians of whole-process wall and CPU time (user + system, from
//! `getrusage(RUSAGE_CHILDREN)`), with the events and compressed bytes of the recording as
//! `ppd info` counts them. Ratios are against the variant with no e-blocks, recorded: what the
//! e-blocks add to a recording, not what recording adds to the program.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use ppd_tests::unannotated;

/// One program of the comparison: its name in each build, and its arguments.
struct Workload {
    label: &'static str,
    /// The path under `target/<profile>/` of the unannotated program.
    unannotated: &'static str,
    /// The path of the example as written, if it has written e-blocks.
    written: Option<&'static str>,
    args: &'static [&'static str],
}

const WORKLOADS: &[Workload] = &[
    Workload {
        label: "bank 2000",
        unannotated: "examples/bank",
        written: Some("examples/bank_written"),
        args: &["2000"],
    },
    Workload {
        label: "pipeline",
        unannotated: "examples/pipeline",
        written: Some("examples/pipeline_written"),
        args: &[],
    },
    Workload {
        label: "word_count",
        unannotated: "examples/word_count",
        written: Some("examples/word_count_written"),
        args: &[],
    },
    Workload {
        label: "cpu_loop 20000",
        unannotated: "cpu_loop",
        written: None,
        args: &["20000"],
    },
];

/// What one recorded run cost and wrote.
struct Run {
    wall: Duration,
    cpu: Duration,
    events: u64,
    bytes: u64,
}

fn children_cpu() -> Duration {
    // SAFETY: an all-zero `rusage` is a valid value of the plain C struct, and `getrusage`
    // writes only into it.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage);
        usage
    };
    let time = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    time(usage.ru_utime) + time(usage.ru_stime)
}

/// Records `program ARGS` into `dir`.
fn record(ppd: &Path, program: &Path, args: &[&str], dir: &Path, cwd: &Path) -> Run {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).expect("a recording directory");
    let cpu_before = children_cpu();
    let start = Instant::now();
    let status = Command::new(program)
        .args(args)
        .current_dir(cwd)
        .env("PPD_MODE", "record")
        .env("PPD_DIR", dir)
        .stdout(Stdio::null())
        .status()
        .expect("run the program");
    let wall = start.elapsed();
    let cpu = children_cpu() - cpu_before;
    assert!(
        matches!(status.code(), Some(0 | 1)),
        "{} {args:?}: {status}",
        program.display()
    );
    let info = Command::new(ppd)
        .args(["info", "--json"])
        .arg(dir)
        .output()
        .expect("run ppd info");
    let info: serde_json::Value = serde_json::from_slice(&info.stdout).expect("ppd info's JSON");
    let events = info["events"].as_u64().expect("events");
    let bytes = info["bytes_compressed"].as_u64().expect("bytes_compressed");
    Run {
        wall,
        cpu,
        events,
        bytes,
    }
}

fn median(mut xs: Vec<Duration>) -> Duration {
    xs.sort();
    xs[xs.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn main() {
    // `cargo test --benches` runs this without `--bench`: the builds alone take minutes.
    if !std::env::args().any(|a| a == "--bench") {
        println!("auto_eblocks bench: run with `cargo bench -p ppd-tests --bench auto_eblocks`");
        return;
    }
    let ppd = ppd_tests::build_dir().join("ppd");
    if !ppd.exists() {
        println!(
            "auto_eblocks bench: {} is not built; run `cargo build --release -p ppd-cli`",
            ppd.display()
        );
        return;
    }
    let rounds: usize = std::env::var("PPD_BENCH_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(9);
    let root = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("auto-eblocks-bench");
    unannotated::write_crate(&root, &["bank", "pipeline", "word_count"], true);
    for (what, out) in [
        (
            "cargo build",
            unannotated::cargo_build(&root, &["--release", "--offline", "--bins", "--examples"]),
        ),
        (
            "ppd build",
            unannotated::ppd_build(
                &ppd,
                &root,
                &["--release", "--offline", "--bins", "--examples"],
            ),
        ),
    ] {
        assert!(
            out.status.success(),
            "{what}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        if what == "ppd build" {
            print!("{}", String::from_utf8_lossy(&out.stdout));
        }
    }
    let work = tempfile::tempdir().expect("a scratch directory");
    println!(
        "\nrecorded runs, release, median of {rounds} (the variants in turn): wall and CPU \
         time, events and compressed bytes; ratios against no e-blocks"
    );
    println!(
        "{:<14} {:<10} {:>9} {:>9} {:>9} {:>9} {:>10} {:>8} {:>10}",
        "program", "e-blocks", "wall ms", "cpu ms", "events", "bytes", "B/event", "wall ×", "cpu ×"
    );
    for workload in WORKLOADS {
        let mut variants: Vec<(&str, PathBuf)> = vec![
            (
                "none",
                root.join("target/release").join(workload.unannotated),
            ),
            (
                "automatic",
                root.join("target/ppd/release").join(workload.unannotated),
            ),
        ];
        if let Some(written) = workload.written {
            variants.insert(1, ("written", root.join("target/release").join(written)));
        }
        let mut runs: Vec<Vec<Run>> = variants.iter().map(|_| Vec::new()).collect();
        for round in 0..rounds {
            for (index, (_, program)) in variants.iter().enumerate() {
                let dir = work.path().join(format!("rec-{index}-{round}"));
                runs[index].push(record(&ppd, program, workload.args, &dir, &root));
                let _ = std::fs::remove_dir_all(&dir);
            }
        }
        let summary: Vec<(Duration, Duration, &Run)> = runs
            .iter()
            .map(|r| {
                (
                    median(r.iter().map(|x| x.wall).collect()),
                    median(r.iter().map(|x| x.cpu).collect()),
                    &r[r.len() / 2],
                )
            })
            .collect();
        let (none_wall, none_cpu, _) = summary[0];
        for ((name, _), (wall, cpu, run)) in variants.iter().zip(&summary) {
            println!(
                "{:<14} {:<10} {:>9.1} {:>9.1} {:>9} {:>9} {:>10.3} {:>8.3} {:>10.3}",
                workload.label,
                name,
                ms(*wall),
                ms(*cpu),
                run.events,
                run.bytes,
                run.bytes as f64 / run.events.max(1) as f64,
                wall.as_secs_f64() / none_wall.as_secs_f64(),
                cpu.as_secs_f64() / none_cpu.as_secs_f64().max(1e-9),
            );
        }
    }
}
