//! Pictures and exports of a ten-million-event run: size, time and memory of `ppd graph` (the
//! default overview in each format, and `--full`'s size estimate), `ppd export --format
//! perfetto` and `ppd export --format json`.
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
//! 20 MB in at most 10 s; at most 30 bytes per event of Perfetto trace; a JSON export streamed,
//! its memory that of the analysis, not of its 2.5 GB) are printed beside the figures, not
//! asserted. The machine may be shared: the figures are as noisy as it is.

use binaries::{mb, record_bank, release_binaries, run};

#[path = "common/binaries.rs"]
mod binaries;
#[path = "common/memory.rs"]
mod memory;

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
    let events = match record_bank(&ppd, &bank, ops, &rec) {
        Ok(events) => events,
        Err(why) => {
            println!("FAILED: {why}");
            return;
        }
    };
    println!("bank {ops}: {events} events; each command run once, as a whole process");
    let r = rec.to_str().expect("a UTF-8 temporary path");
    // The race analysis, for comparison: it computes the clocks without caching them, so the
    // first picture below computes and caches the clocks and the later commands read them.
    let warm = run(&ppd, &["races", r]);
    println!(
        "  {:<44}{:>8.2} s {:>10}   (reads the logs, computes clocks and races; no cache)",
        "ppd races (first command on the recording)",
        warm.wall.as_secs_f64(),
        warm.peak_text()
    );
    let cases: [(&str, Vec<&str>, &str); 6] = [
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
        (
            "export --format json",
            vec!["export", r, "--format", "json"],
            "events.json",
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
        let per_event = |size: u64| size as f64 / events.max(1) as f64;
        if let Some(size) = size
            && label.starts_with("export --format perfetto")
        {
            note = format!(
                "  {:.1} bytes per event (goal: at most 30)",
                per_event(size)
            );
        } else if let Some(size) = size
            && label.starts_with("export --format json")
        {
            note = format!(
                "  {:.1} bytes per event (goal: peak memory that of the perfetto export)",
                per_event(size)
            );
        } else if label.starts_with("graph (") || label.starts_with("graph --format") {
            note = "  (goal: at most 20 MB in at most 10 s)".to_owned();
        }
        println!(
            "  {label:<44}{:>8.2} s {:>10} {:>12}{note}{}",
            cost.wall.as_secs_f64(),
            cost.peak_text(),
            size.map_or_else(|| "none".to_owned(), mb),
            if cost.ok { "" } else { "  (exited non-zero)" }
        );
        for line in cost.stderr.lines().filter(|l| l.contains("full picture")) {
            println!("      {line}");
        }
        // The JSON export alone is gigabytes: each output goes once it is measured.
        let _ = std::fs::remove_file(&out);
    }
    let _ = std::fs::remove_dir_all(&tmp);
}
