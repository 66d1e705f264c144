//! `ppd info`: what a recording holds and whether it is whole.

use std::path::Path;
use std::process::ExitCode;

use ppd_formats::Recording;
use ppd_formats::recording::resolve;
use ppd_formats::summary::{RecordingSummary, summarize};

use crate::exit::CmdResult;
use crate::output;

pub(crate) fn run(rec: Option<&Path>, json: bool) -> CmdResult {
    let dir = resolve(rec)?;
    let recording = Recording::open(&dir)?;
    let summary = summarize(&recording)?;
    if json {
        output::json(&summary);
    } else {
        print_text(&summary);
    }
    let damaged = summary.processes.iter().any(|p| !p.damage.is_empty());
    Ok(if damaged {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    })
}

fn print_text(s: &RecordingSummary) {
    println!("recording {}", s.recording.display());
    println!("  program  {}", s.program.display());
    println!("  started  {}", s.start_time);
    println!("  ended    {}", s.run_ending_text);
    println!();
    println!(
        "  {:<4} {:<16} {:>10} {:>11} {:>11}  ending",
        "id", "process", "events", "raw", "compressed"
    );
    for p in &s.processes {
        println!(
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
            println!("         {}", kinds.join(", "));
        }
        if p.state != "complete" {
            println!("         log {}", p.state);
        }
        for d in &p.damage {
            println!("         damage: {d}");
        }
    }
    println!(
        "  {:<21} {:>10} {:>11} {:>11}  ratio {:.1}x",
        "total",
        s.events,
        output::bytes(s.bytes_raw),
        output::bytes(s.bytes_compressed),
        s.compression_ratio
    );
    if s.stalls > 0 {
        println!("  writers waited {} times for the compressor", s.stalls);
    }
}
