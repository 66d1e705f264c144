//! `ppd info`: what a recording holds and whether it is whole.

use std::path::Path;
use std::process::ExitCode;

use ppd_formats::Recording;
use ppd_formats::summary::{Payloads, RecordingSummary, summarize};

use anyhow::anyhow;

use crate::damage::DamageArgs;
use crate::exit::{CmdResult, input};
use crate::output;
use crate::output::outln;

pub(crate) fn run(rec: Option<&Path>, json: bool, damage: DamageArgs) -> CmdResult {
    let dir = crate::rec::resolve(rec)?;
    let recording = Recording::open(&dir)?;
    let summary = summarize(&recording, Payloads::Verify)?;
    // A recording being written changes while it is read: what a log held a moment ago may
    // have moved on (a ring slot reused), which is not damage.
    let live = summary.run_ending.still_recording()
        || summary.nodes.iter().any(|n| n.run_ending.still_recording());
    if json {
        output::json(&summary);
    } else {
        print_text(&summary, live);
    }
    if live {
        eprintln!(
            "ppd: note: {} is still being recorded: this is what its logs held as they were \
             read, and they go on growing",
            dir.display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    let damaged: Vec<String> = summary
        .processes
        .iter()
        .flat_map(|p| {
            p.damage
                .iter()
                .map(move |d| format!("\n  {} ({}): {d}", p.name, p.id))
        })
        .collect();
    if !damaged.is_empty() && !damage.allow_damage {
        return Err(input(anyhow!(
            "{} is damaged (--allow-damage accepts it):{}",
            dir.display(),
            damaged.concat()
        )));
    }
    if summary.processes.is_empty() {
        return Err(input(anyhow!(
            "{}: the manifest lists no process and the directory holds no log",
            dir.display()
        )));
    }
    Ok(ExitCode::SUCCESS)
}

/// Prints `s`; in a recording still being written (`live`), a log that could not be read is
/// one that changed under the reader.
fn print_text(s: &RecordingSummary, live: bool) {
    outln!("recording {}", s.recording.display());
    if s.nodes.is_empty() {
        outln!("  program  {}", s.program.display());
        outln!("  started  {}", s.start_time);
        outln!("  ended    {}", s.run_ending_text);
    } else {
        outln!("  {} OS processes (nodes)", s.nodes.len());
        outln!("  started  {}", s.start_time);
    }
    if let Some(reason) = &s.stopped {
        outln!("  recording stopped early: {reason}");
    }
    if !s.nodes.is_empty() {
        outln!();
        outln!(
            "  {:<16} {:>8} {:>9}  program, ending",
            "node",
            "os pid",
            "processes"
        );
        for n in &s.nodes {
            let program = n.program.file_name().unwrap_or(n.program.as_os_str());
            outln!(
                "  {:<16} {:>8} {:>9}  {}, {}",
                n.name,
                n.os_pid,
                n.processes,
                program.to_string_lossy(),
                n.run_ending_text
            );
            if let Some(reason) = &n.stopped {
                outln!("  {:<16} recording stopped early: {reason}", "");
            }
        }
    }
    outln!();
    outln!(
        "  {:<4} {:<16} {:>10} {:>11} {:>11}  ending",
        "id",
        "process",
        "events",
        "raw",
        "compressed"
    );
    for p in &s.processes {
        outln!(
            "  {:<4} {:<16} {:>10} {:>11} {:>11}  {}",
            p.id.to_string(),
            p.name,
            p.events,
            output::bytes(p.bytes_raw),
            output::bytes(p.bytes_compressed),
            p.ending_text
        );
        let kinds: Vec<String> = p.by_kind.iter().map(|(k, n)| format!("{k} {n}")).collect();
        if !kinds.is_empty() {
            outln!("         {}", kinds.join(", "));
        }
        if p.state != "complete" {
            outln!("         log {}", p.state);
        }
        let label = if live { "changed while read" } else { "damage" };
        for d in &p.damage {
            outln!("         {label}: {d}");
        }
    }
    outln!(
        "  {:<21} {:>10} {:>11} {:>11}  ratio {:.1}x",
        "total",
        s.events,
        output::bytes(s.bytes_raw),
        output::bytes(s.bytes_compressed),
        s.compression_ratio
    );
    if s.stalls > 0 {
        outln!("  writers waited {} times for the compressor", s.stalls);
    }
}
