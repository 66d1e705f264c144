//! `ppd races`: the data races, message races and deadlocks of a recorded run.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use ppd_flowback::report::{Race, Report, Side};
use ppd_flowback::{Analysis, FlowbackError};
use ppd_formats::Recording;
use ppd_formats::recording::resolve;
use serde::Serialize;

use crate::exit::{CliError, CmdResult, failure, input};
use crate::output;

/// Arguments of `ppd races`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The recording (default: the newest in ./ppd-recordings).
    rec: Option<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// An analysis error, classified for the exit code.
pub(crate) fn classify(e: FlowbackError) -> CliError {
    if e.is_bad_input() {
        input(e)
    } else {
        failure(e)
    }
}

/// Opens the recording `rec` names (or the newest) for analysis.
pub(crate) fn open_analysis(
    rec: Option<&Path>,
) -> Result<(PathBuf, Recording, Analysis), CliError> {
    let dir = resolve(rec)?;
    let recording = Recording::open(&dir)?;
    let analysis = Analysis::open(&recording).map_err(classify)?;
    Ok((dir, recording, analysis))
}

#[derive(Serialize)]
struct Output<'a> {
    recording: &'a Path,
    #[serde(flatten)]
    report: &'a Report,
}

pub(crate) fn run(args: &Args) -> CmdResult {
    let (dir, _, analysis) = open_analysis(args.rec.as_deref())?;
    let report = analysis.report();
    if args.json {
        output::json(&Output {
            recording: &dir,
            report: &report,
        });
    } else {
        print_text(&dir, &report);
    }
    Ok(ExitCode::SUCCESS)
}

fn side_line(tag: &str, s: &Side) -> String {
    let what = match &s.ordering {
        Some(o) => format!("{} ({}, {o})", s.access, s.operation),
        None => s.access.clone(),
    };
    format!(
        "  {tag}: {} (p{}) {what} at {}\n     clock {}",
        s.process,
        s.pid,
        s.location(),
        s.clock
    )
}

fn print_race(r: &Race) {
    let pairs = if r.count == 1 {
        "1 pair".to_owned()
    } else {
        format!("{} pairs", r.count)
    };
    println!(
        "{} race on {} ({} {}), {pairs}",
        r.kind, r.var, r.object_kind, r.object
    );
    println!("{}", side_line("a", &r.a));
    println!("{}", side_line("b", &r.b));
    if let Some(recv) = &r.receive {
        println!(
            "  the receive at {} by {} (p{}) took a's message; b's could have come first",
            recv.location(),
            recv.process,
            recv.pid
        );
    }
    println!("  unordered: {}", r.unordered);
    println!();
}

fn print_text(dir: &Path, report: &Report) {
    println!(
        "recording {}: {} processes, {} events, {} synchronization edges",
        dir.display(),
        report.processes,
        report.events,
        report.sync_edges
    );
    println!();
    let data = report.races.iter().filter(|r| r.kind == "data").count();
    let messages = report.races.len() - data;
    if report.races.is_empty() {
        println!("no races");
        println!();
    } else {
        println!("{data} data race(s), {messages} message race(s)");
        println!();
        for r in &report.races {
            print_race(r);
        }
    }
    let d = &report.deadlocks;
    for cycle in &d.cycles {
        println!("deadlock: {} processes wait for each other", cycle.len());
        for b in cycle {
            let relation = if b.relation == "held_by" {
                "held by"
            } else {
                "owed by"
            };
            let at = match (&b.file, b.line) {
                (Some(f), Some(l)) => format!(" at {f}:{l}"),
                _ => String::new(),
            };
            println!(
                "  {} (p{}) waits for {} {}{at}, {relation} {}{}",
                b.process,
                b.pid,
                b.waits_for,
                b.object,
                b.by.join(", "),
                if b.guessed { " (guess)" } else { "" }
            );
        }
        println!();
    }
    let stuck: Vec<_> = d
        .blocked
        .iter()
        .filter(|b| !in_cycle(d, &b.process))
        .collect();
    if !stuck.is_empty() {
        println!("blocked when the recording stopped:");
        for b in stuck {
            let who = if b.by.is_empty() {
                "no live process can end the wait".to_owned()
            } else {
                format!("waiting for {}", b.by.join(", "))
            };
            println!(
                "  {} (p{}) on {} {}: {who}{}",
                b.process,
                b.pid,
                b.waits_for,
                b.object,
                if b.deadlocked { " (deadlocked)" } else { "" }
            );
        }
        println!();
    }
    if !d.running.is_empty() && (!d.blocked.is_empty() || !report.notes.is_empty()) {
        println!(
            "running (or in a join or sleep) when the recording stopped: {}",
            d.running.join(", ")
        );
        println!();
    }
    for note in &report.notes {
        println!("note: {note}");
    }
}

fn in_cycle(d: &ppd_flowback::report::DeadlockView, process: &str) -> bool {
    d.cycles.iter().flatten().any(|b| b.process == process)
}
