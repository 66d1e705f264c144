//! `ppd races`: the data races, message races and deadlocks of a recorded run.

use ppd_formats::ProcessId;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use ppd_flowback::report::{BlockedView, Race, Report, Side};
use ppd_flowback::why::races::RaceOnChain;
use ppd_flowback::why::{self, Point, Query, Step, TraceStore};
use ppd_flowback::{Analysis, FlowbackError};
use ppd_formats::integrity::Integrity;
use serde::Serialize;

use crate::cmd::why as why_cmd;
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
    /// Only the message races on the chain `ppd why PROCESS VAR` follows: the receives it went
    /// through that could have taken another message, nearest the value first.
    #[arg(long = "for", num_args = 2, value_names = ["PROCESS", "VAR"])]
    for_value: Vec<String>,
    /// With --for: where in the process's run, as `ppd why --at` takes it.
    #[arg(long, value_name = "POINT", requires = "for_value")]
    at: Option<String>,
    /// With --for: how many dependences the chain follows, as `ppd why --depth`.
    #[arg(long, value_name = "N", requires = "for_value")]
    depth: Option<usize>,
    /// With --for: the recorded program, if it moved (it must be the same binary).
    #[arg(long, value_name = "PATH", requires = "for_value")]
    binary: Option<PathBuf>,
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
    if let [process, var] = args.for_value.as_slice() {
        return on_chain(args, process, var);
    }
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

/// `--for PROCESS VAR`: the message races on the value's why-chain.
fn on_chain(args: &Args, process: &str, var: &str) -> CmdResult {
    let at = args.at.as_deref().unwrap_or("end");
    let point: Point = at.parse().map_err(classify)?;
    let checked = damage::open(args.rec.as_deref(), args.damage)?;
    let recording = &checked.recording;
    let mut store = TraceStore::new(recording, args.binary.clone());
    let query = Query {
        process: process.to_owned(),
        var: var.to_owned(),
        at: point,
        depth: args.depth.unwrap_or(why_cmd::DEFAULT_DEPTH),
    };
    let answer = why::ask(&mut store, &query).map_err(classify)?;
    let analysis = Analysis::open(recording).map_err(classify)?;
    let races = why::races::on_chain(&analysis, &answer);
    let receives: Vec<&Step> = answer.receives().collect();
    if args.json {
        output::json(&ChainOutput {
            recording: &checked.dir,
            process: &answer.process,
            var: &answer.var,
            at: &answer.at,
            steps: answer.steps.len(),
            receives: receives.len(),
            races: &races,
            integrity: &checked.integrity,
        });
        return Ok(ExitCode::SUCCESS);
    }
    let c = output::palette();
    let chain = format!("why {} {} (at {})", answer.process, answer.var, answer.at);
    if receives.is_empty() {
        outln!(
            "the chain of {chain} ({} steps) goes through no receive",
            answer.steps.len()
        );
    } else {
        let raced: Vec<&&Step> = receives
            .iter()
            .filter(|s| races.iter().any(|r| r.step == s.id))
            .collect();
        outln!(
            "message races on the chain of {chain}: {} of its {} receives could have taken \
             another message",
            raced.len(),
            receives.len()
        );
        for step in raced {
            outln!();
            outln!(
                "step #{}: {} received at {}{}; it could have received instead:",
                step.id,
                c.process(&step.process),
                c.site(format!("{}:{}", step.file, step.line)),
                step.note
                    .as_ref()
                    .map(|n| format!(" ({n})"))
                    .unwrap_or_default()
            );
            for race in races.iter().filter(|r| r.step == step.id) {
                outln!(
                    "  {} on {} from {}, sent at {}",
                    race.message_label(),
                    race.channel,
                    c.process(&race.process),
                    c.site(format!("{}:{}", race.file, race.line))
                );
            }
        }
    }
    why_cmd::print_integrity(&checked.integrity);
    Ok(ExitCode::SUCCESS)
}

/// `--for … --json`.
#[derive(Serialize)]
struct ChainOutput<'a> {
    recording: &'a Path,
    process: &'a str,
    var: &'a str,
    at: &'a str,
    /// Steps of the chain.
    steps: usize,
    /// Receives among them.
    receives: usize,
    races: &'a [RaceOnChain],
    integrity: &'a Integrity,
}
