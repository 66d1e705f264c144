//! `ppd races`: the data races, message races and deadlocks of a recorded run.

use ppd_formats::ProcessId;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use ppd_flowback::report::{BlockedView, Race, Report, Side};
use ppd_flowback::{Analysis, FlowbackError};
use ppd_formats::integrity::Integrity;
use serde::Serialize;

use crate::damage::{self, Checked, DamageArgs};
use crate::exit::{CliError, CmdResult, failure, input};
use crate::output;
use crate::output::outln;

/// Arguments of `ppd races`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The recording (default: the newest in ./ppd-recordings).
    rec: Option<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    damage: DamageArgs,
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
    damage: DamageArgs,
) -> Result<(Checked, Analysis), CliError> {
    let checked = damage::open(rec, damage)?;
    let analysis = Analysis::open(&checked.recording).map_err(classify)?;
    Ok((checked, analysis))
}

#[derive(Serialize)]
struct Output<'a> {
    recording: &'a Path,
    #[serde(flatten)]
    report: &'a Report,
    integrity: &'a Integrity,
}

pub(crate) fn run(args: &Args) -> CmdResult {
    // The data races need the clocks computed access by access: the cache would not save that.
    let checked = damage::open(args.rec.as_deref(), args.damage)?;
    let report = Analysis::race_report(&checked.recording).map_err(classify)?;
    let dir = &checked.dir;
    if args.json {
        output::json(&Output {
            recording: dir,
            report: &report,
            integrity: &checked.integrity,
        });
    } else {
        print_text(dir, &report);
    }
    Ok(ExitCode::SUCCESS)
}

fn side_line(tag: &str, s: &Side) -> String {
    let what = match &s.ordering {
        Some(o) => format!("{} ({}, {o})", s.access, s.operation),
        None => s.access.clone(),
    };
    let c = output::palette();
    format!(
        "  {tag}: {} ({}) {what} at {}\n     {}",
        c.process(&s.process),
        ProcessId(s.pid),
        c.site(s.location()),
        c.faint(format!("clock {}", s.clock))
    )
}

fn print_race(r: &Race) {
    let pairs = if r.count == 1 {
        "1 pair".to_owned()
    } else {
        format!("{} pairs", r.count)
    };
    let c = output::palette();
    outln!(
        "{} on {} ({} {}), {pairs}",
        c.alarm(format!("{} race", r.kind)),
        c.value(&r.var),
        r.object_kind,
        r.object
    );
    outln!("{}", side_line("a", &r.a));
    outln!("{}", side_line("b", &r.b));
    if let Some(recv) = &r.receive {
        outln!(
            "  the receive at {} by {} ({}) took a's message; b's could have come first",
            c.site(recv.location()),
            c.process(&recv.process),
            ProcessId(recv.pid)
        );
    }
    outln!("  unordered: {}", r.unordered);
    outln!();
}

fn print_text(dir: &Path, report: &Report) {
    outln!(
        "recording {}: {} processes, {} events, {} synchronization edges",
        dir.display(),
        report.processes,
        report.events,
        report.sync_edges
    );
    outln!();
    let data = report.races.iter().filter(|r| r.kind == "data").count();
    let messages = report.races.len() - data;
    if report.races.is_empty() {
        outln!("no races");
        outln!();
    } else {
        outln!("{data} data race(s), {messages} message race(s)");
        outln!();
        for r in &report.races {
            print_race(r);
        }
    }
    let d = &report.deadlocks;
    let c = output::palette();
    for cycle in &d.cycles {
        match cycle.as_slice() {
            [alone] => outln!(
                "{}: {} ({}) waits for itself",
                c.alarm("deadlock"),
                c.process(&alone.process),
                ProcessId(alone.pid)
            ),
            _ => outln!(
                "{}: {} processes wait for each other",
                c.alarm("deadlock"),
                cycle.len()
            ),
        }
        for b in cycle {
            let relation = if b.relation == "held_by" {
                "held by"
            } else {
                "owed by"
            };
            let at = match (&b.file, b.line) {
                (Some(f), Some(l)) => format!(" at {}", c.site(format!("{f}:{l}"))),
                _ => String::new(),
            };
            outln!(
                "  {} ({}) waits for {} {}{at}, {relation} {}{}",
                c.process(&b.process),
                ProcessId(b.pid),
                b.waits_for,
                b.object,
                b.by.join(", "),
                if b.guessed { " (guess)" } else { "" }
            );
        }
        outln!();
    }
    for p in &report.potential_deadlocks {
        let mut cycle = p.cycle.clone();
        cycle.extend(p.cycle.first().cloned());
        outln!(
            "{}: lock-order cycle {} ({} processes)",
            c.alarm("potential deadlock"),
            cycle.join(" -> "),
            p.steps.len()
        );
        for s in &p.steps {
            let at = |file: &Option<String>, line: Option<u32>| match (file, line) {
                (Some(f), Some(l)) => c.site(format!("{f}:{l}")),
                _ => "?".to_owned(),
            };
            outln!(
                "  {} ({}) holds {} (locked at {}) and locks {} at {}",
                c.process(&s.process),
                ProcessId(s.pid),
                s.holds,
                at(&s.held_file, s.held_line),
                s.acquires,
                at(&s.file, s.line)
            );
        }
        outln!();
    }
    let (left, stuck): (Vec<_>, Vec<_>) = d
        .blocked
        .iter()
        .filter(|b| !in_cycle(d, &b.process))
        .partition(|b| b.left_waiting);
    if !stuck.is_empty() {
        outln!("blocked when the recording stopped:");
        for b in stuck {
            print_wait(b);
        }
        outln!();
    }
    if !left.is_empty() {
        outln!("left waiting when the program exited (main returned):");
        for b in left {
            print_wait(b);
        }
        outln!();
    }
    if !d.running.is_empty() && (!d.blocked.is_empty() || !report.notes.is_empty()) {
        outln!(
            "running (or in a join or sleep) when the recording stopped: {}",
            d.running.join(", ")
        );
        outln!();
    }
    for note in &report.notes {
        outln!("{} {note}", c.note("note:"));
    }
}

/// One blocked process outside the cycles: what it waits on and for whom.
fn print_wait(b: &BlockedView) {
    let who = match (b.by.is_empty(), b.deadlocked) {
        (true, true) => "no live process can end the wait (deadlocked)".to_owned(),
        (true, false) => "a peer outside the recording can end the wait".to_owned(),
        (false, true) => format!("blocked behind {} (deadlocked)", b.by.join(", ")),
        (false, false) => format!("waiting for {}", b.by.join(", ")),
    };
    let who = if b.deadlocked {
        output::palette().alarm(who)
    } else {
        who
    };
    outln!(
        "  {} ({}) on {} {}: {who}{}",
        output::palette().process(&b.process),
        ProcessId(b.pid),
        b.waits_for,
        b.object,
        if b.guessed { " (guess)" } else { "" }
    );
}

fn in_cycle(d: &ppd_flowback::report::DeadlockView, process: &str) -> bool {
    d.cycles.iter().flatten().any(|b| b.process == process)
}
