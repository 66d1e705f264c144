//! Pictures and exports of a ten-million-event run: size, time and memory of `ppd graph` (the
//! default overview in each format, and `--full`'s size estimate) and `ppd export --format
//! perfetto`.
//!
//! ```sh
//! cargo build --release -p ppd-cli -p ppd-examples --bin ppd --example bank
//! cargo bench -p ppd-flowback --bench pictures
//! ```
//!
//! Records `bank PPD_BENCH_BANK_OPS` (default 160 000 operations per client: about 11 M
//! events) with the release binaries, then runs each command once on it as a whole process:
//! wall time, peak resident memory of the process (`wait4`'s `ru_maxrss`), and the size of what
//! it wrote. The commands read the recording as `ppd` does, so the times include reading the
//! logs, the clocks and the race analysis the pictures draw. The goals (a picture of at most
//! 20 MB in at most 10 s; at most 30 bytes per event of Perfetto trace) are printed beside the
//! figures, not asserted. The machine may be shared: the figures are as noisy as it is.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// One command's cost.
struct Cost {
    wall: Duration,
    peak_rss: u64,
    stderr: String,
    ok: bool,
}

/// Runs `ppd args` to completion and measures it.
// The child is reaped by `wait4`, which also reports its peak memory; `Child::wait` cannot.
#[allow(clippy::zombie_processes)]
fn run(ppd: &Path, args: &[&str]) -> Cost {
    let start = Instant::now();
    let child = Command::new(ppd)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run ppd");
    let pid = child.id() as libc::pid_t;
    // Read stderr before reaping, so a chatty child cannot block on a full pipe.
    let mut stderr = String::new();
    if let Some(mut err) = child.stderr {
        use std::io::Read;
        let _ = err.read_to_string(&mut stderr);
    }
    let mut status = 0;
    // SAFETY: an all-zero `rusage` is a valid value of this plain C struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `pid` is our own child, not yet reaped (its `Child` handle was consumed above
    // without waiting); `status` and `usage` are valid for writes.
    let reaped = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let wall = start.elapsed();
    Cost {
        wall,
        peak_rss: u64::try_from(usage.ru_maxrss).unwrap_or(0) * 1024,
        stderr,
        ok: reaped == pid && libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
    }
}

fn mb(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

/// The release binaries, next to this benchmark's own build directory.
fn release_binaries() -> Option<(PathBuf, PathBuf)> {
    let exe = std::env::current_exe().ok()?;
    let profile = exe.parent()?.parent()?;
    let ppd = profile.join("ppd");
    let bank = profile.join("examples").join("bank");
    (ppd.exists() && bank.exists()).then_some((ppd, bank))
}

fn main() {
    let ops: u64 = std::env::var("PPD_BENCH_BANK_OPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(160_000);
    let Some((ppd, bank)) = release_binaries() else {
        println!(
            "SKIPPED: build the release binaries first: cargo build --release -p ppd-cli -p \
             ppd-examples --bin ppd --example bank"
        );
        return;
    };
    let tmp = std::env::temp_dir().join(format!("ppd-bench-pictures-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).expect("a temporary directory");
    let rec = tmp.join("rec");
    let ops_arg = ops.to_string();
    let recorded = Command::new(&ppd)
        .arg("record")
        .arg("-o")
        .arg(&rec)
        .arg("--")
        .arg(&bank)
        .arg(&ops_arg)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("run ppd record");
    // bank exits with code 1 when its audit finds the race it is written to have.
    if !rec.join("manifest.json").exists() {
        println!("FAILED: ppd record bank {ops} wrote no recording ({recorded})");
        return;
    }
    let info = Command::new(&ppd)
        .args(["info", "--json"])
        .arg(&rec)
        .output()
        .expect("run ppd info");
    let events = serde_json::from_slice::<serde_json::Value>(&info.stdout)
        .ok()
        .and_then(|v| v["events"].as_u64())
        .unwrap_or(0);
    println!("bank {ops}: {events} events; each command run once, as a whole process");
    let r = rec.to_str().expect("a UTF-8 temporary path");
    // The race analysis, for comparison: it computes the clocks without caching them, so the
    // first picture below computes and caches the clocks and the later commands read them.
    let warm = run(&ppd, &["races", r]);
    println!(
        "  {:<44}{:>8.2} s {:>10}   (reads the logs, computes clocks and races; no cache)",
        "ppd races (first command on the recording)",
        warm.wall.as_secs_f64(),
        mb(warm.peak_rss)
    );
    let cases: [(&str, Vec<&str>, &str); 5] = [
        ("graph (html overview)", vec!["graph", r], "graph.html"),
        (
            "graph --format svg",
            vec!["graph", r, "--format", "svg"],
            "graph.svg",
        ),
        (
            "graph --format dot",
            vec!["graph", r, "--format", "dot"],
            "graph.dot",
        ),
        (
            "graph --full (estimate, refused)",
            vec!["graph", r, "--full"],
            "full.html",
        ),
        (
            "export --format perfetto",
            vec!["export", r, "--format", "perfetto"],
            "trace.pftrace",
        ),
    ];
    println!(
        "  {:<44}{:>10} {:>10} {:>12}",
        "command", "wall", "peak RSS", "output"
    );
    for (label, mut args, file) in cases {
        let out = tmp.join(file);
        let out_arg = out.to_str().expect("a UTF-8 temporary path").to_owned();
        args.extend(["-o", &out_arg]);
        let cost = run(&ppd, &args);
        let size = std::fs::metadata(&out).map(|m| m.len()).ok();
        let mut note = String::new();
        if let Some(size) = size
            && label.starts_with("export")
        {
            note = format!(
                "  {:.1} bytes per event (goal: at most 30)",
                size as f64 / events.max(1) as f64
            );
        } else if label.starts_with("graph (") || label.starts_with("graph --format") {
            note = "  (goal: at most 20 MB in at most 10 s)".to_owned();
        }
        println!(
            "  {label:<44}{:>8.2} s {:>10} {:>12}{note}{}",
            cost.wall.as_secs_f64(),
            mb(cost.peak_rss),
            size.map_or_else(|| "none".to_owned(), mb),
            if cost.ok { "" } else { "  (exited non-zero)" }
        );
        for line in cost.stderr.lines().filter(|l| l.contains("full picture")) {
            println!("      {line}");
        }
    }
    let _ = std::fs::remove_dir_all(&tmp);
}
