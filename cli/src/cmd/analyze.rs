//! `ppd analyze tasks`: which task of a task-oriented run failed, where, and in which role
//! (phase one of Lin's two-phase debugging; `ppd_flowback::tasks`), and phase two: one task
//! re-executed alone ([`rerun`]).

mod rerun;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use ppd_flowback::tasks::rerun::Part;
use ppd_flowback::tasks::{TaskGraph, TaskRecording, TaskReport};
use ppd_formats::integrity::Integrity;
use serde::Serialize;

use crate::cmd::debugger::attach::Tool;
use crate::cmd::races::classify;
use crate::damage::{self, DamageArgs};
use crate::exit::{CmdResult, input};
use crate::output;
use crate::output::outln;

/// Arguments of `ppd analyze`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(subcommand)]
    what: What,
}

#[derive(Debug, clap::Subcommand)]
enum What {
    /// The error list of a run of ppd::task farms, divide and conquer, or `enter`-labelled
    /// code: FAULT TASK SUBTASK NODE PROCESS, root cause first, and a verdict.
    Tasks(TasksArgs),
}

/// Arguments of `ppd analyze tasks`.
#[derive(Debug, clap::Args)]
struct TasksArgs {
    /// The recording (default: the newest in ./ppd-recordings).
    rec: Option<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
    /// Also print task N's event graph and coalesced event graph.
    #[arg(long, value_name = "N")]
    task: Option<u64>,
    /// Re-execute task N (N.PATH: a subtask, `0.1.0`) alone from its logged input: its trace
    /// and its result compared with the logged one. A subtask that split re-executes its split;
    /// add --combine for its combine of its subtasks' results.
    #[arg(long, value_name = "N", conflicts_with_all = ["task", "gdb", "lldb"])]
    rerun: Option<rerun::UnitArg>,
    /// With --rerun, --gdb or --lldb on a divide-and-conquer subtask that split: its combine
    /// (from its subtasks' logged results) instead of its split.
    #[arg(long)]
    combine: bool,
    /// Start the recorded program under gdb, stopped at the entry of task N's computation
    /// (`ppd_task_entry`) with its logged input.
    #[arg(long, value_name = "N", conflicts_with_all = ["task", "lldb", "json"])]
    gdb: Option<rerun::UnitArg>,
    /// As --gdb, under lldb.
    #[arg(long, value_name = "N", conflicts_with_all = ["task", "json"])]
    lldb: Option<rerun::UnitArg>,
    /// With --gdb or --lldb: print the command instead of running it.
    #[arg(long)]
    dry_run: bool,
    /// The recorded program, if it moved (it must be the same binary).
    #[arg(long, value_name = "PATH")]
    binary: Option<PathBuf>,
    #[command(flatten)]
    damage: DamageArgs,
}

#[derive(Serialize)]
struct Output<'a> {
    recording: &'a Path,
    #[serde(flatten)]
    report: &'a TaskReport,
    #[serde(skip_serializing_if = "Option::is_none")]
    task: Option<&'a TaskGraph>,
    integrity: &'a Integrity,
}

pub(crate) fn run(args: &Args) -> CmdResult {
    let What::Tasks(args) = &args.what;
    let checked = damage::open(args.rec.as_deref(), args.damage)?;
    let (dir, recording) = (&checked.dir, &checked.recording);
    ppd_formats::progress::stage("finding the tasks", None);
    // The task a command asks about is kept even if it completed; of the others, only those
    // that did not.
    let focus = args.task.or_else(|| {
        [&args.rerun, &args.gdb, &args.lldb]
            .into_iter()
            .flatten()
            .next()
            .map(rerun::UnitArg::task)
    });
    let run = TaskRecording::open(recording, focus).map_err(classify)?;
    let binary = args.binary.as_deref();
    let part = if args.combine {
        Part::Combine
    } else {
        Part::Compute
    };
    if let Some(unit) = &args.rerun {
        return rerun::rerun(dir, recording, &run, (unit, part), binary, args.json);
    }
    let debugger = match (&args.gdb, &args.lldb) {
        (Some(unit), _) => Some((unit, Tool::Gdb)),
        (None, Some(unit)) => Some((unit, Tool::Lldb)),
        (None, None) => None,
    };
    if let Some((unit, debugger)) = debugger {
        return rerun::debug(
            recording,
            &run,
            (unit, part),
            binary,
            debugger,
            args.dry_run,
        );
    }
    if args.combine {
        return Err(input(anyhow::anyhow!(
            "--combine chooses which computation --rerun, --gdb or --lldb re-executes"
        )));
    }
    let report = run.report();
    if report.tasks == 0 {
        return Err(input(anyhow::anyhow!(
            "{}: the run logged no tasks (use ppd::task::farm, divide_and_conquer or enter)",
            dir.display()
        )));
    }
    let graph = match args.task {
        Some(n) => Some(
            run.graph(n)
                .ok_or_else(|| input(anyhow::anyhow!("the run has no task {n}")))?,
        ),
        None => None,
    };
    if args.json {
        output::json(&Output {
            recording: dir,
            report: &report,
            task: graph.as_ref(),
            integrity: &checked.integrity,
        });
    } else {
        print_text(dir, &report, graph.as_ref());
    }
    // A failed run is the finding, not a failure of the command.
    Ok(ExitCode::SUCCESS)
}

fn print_text(dir: &Path, report: &TaskReport, graph: Option<&TaskGraph>) {
    if !report.errors.is_empty() {
        let rows: Vec<[String; 6]> = report
            .errors
            .iter()
            .map(|e| {
                [
                    e.fault.name().to_owned(),
                    e.task.to_string(),
                    e.subtask.clone(),
                    e.node.clone(),
                    e.process.name().to_owned(),
                    e.at.clone().unwrap_or_else(|| "-".to_owned()),
                ]
            })
            .collect();
        let header = ["FAULT", "TASK", "SUBTASK", "NODE", "PROCESS", "AT"].map(str::to_owned);
        let mut widths = header.clone().map(|h| h.len());
        for row in &rows {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(cell.len());
            }
        }
        let line = |cells: &[String; 6]| {
            cells
                .iter()
                .zip(widths)
                .map(|(c, w)| format!("{c:<w$}"))
                .collect::<Vec<_>>()
                .join("  ")
                .trim_end()
                .to_owned()
        };
        outln!("{}", line(&header));
        for (row, e) in rows.iter().zip(&report.errors) {
            outln!("{}  {}", line(row), e.detail);
        }
    }
    outln!("{}", report.verdict_line());
    if let Some(predicate) = report.errors.first().and_then(|e| e.replay.as_ref()) {
        outln!(
            "replay to it: ppd replay {} --stop '{predicate}'",
            dir.display()
        );
    }
    for note in &report.notes {
        outln!("note: {note}");
    }
    if let Some(g) = graph {
        print_graph(g);
    }
}

fn print_graph(g: &TaskGraph) {
    outln!();
    outln!(
        "task {} ({}): {} events",
        g.task,
        g.vm.name(),
        g.events.len()
    );
    for (i, e) in g.events.iter().enumerate() {
        let next: Vec<String> = g
            .arcs
            .iter()
            .filter(|(a, _)| *a == i)
            .map(|(_, b)| format!("e{b}"))
            .collect();
        let frontier = if g.frontier.contains(&i) {
            "  (frontier)"
        } else {
            ""
        };
        outln!(
            "  e{i}  {:<8} {:<6} {} #{}{}  -> {}{frontier}",
            format!("{:?}", e.step).to_lowercase(),
            e.subtask,
            e.process,
            e.index,
            e.at.as_deref()
                .map(|a| format!(" at {a}"))
                .unwrap_or_default(),
            if next.is_empty() {
                "-".to_owned()
            } else {
                next.join(", ")
            }
        );
    }
    outln!("coalesced:");
    for v in &g.coalesced {
        outln!(
            "  {}: {} of {} events, {}",
            v.process,
            v.events,
            v.expected,
            if v.complete { "complete" } else { "incomplete" }
        );
    }
}
