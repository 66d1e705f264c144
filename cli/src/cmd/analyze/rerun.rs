//! `ppd analyze tasks --rerun / --gdb / --lldb`: phase two of Lin's debugging, one task's
//! computation re-executed alone from its logged input (`ppd_flowback::tasks::rerun`), traced
//! and compared with the log, or stopped at its entry under a sequential debugger.

use std::ffi::OsString;
use std::path::Path;
use std::process::ExitCode;

use ppd_flowback::tasks::TaskRecording;
use ppd_flowback::tasks::rerun::{Computation, Part};
use ppd_formats::Recording;
use ppd_formats::eblock_trace::{Captured, EblockTrace, Record, RecordKind};
use ppd_formats::task::SPLIT_EBLOCK;
use ppd_formats::value;
use ppd_replayer::debugger::check_binary;
use ppd_replayer::emulate::{TaskInvocation, TaskRerun};
use serde::Serialize;

use crate::cmd::debugger::attach::Tool;
use crate::exit::{CmdResult, failure, input};
use crate::output;
use crate::output::outln;

/// A task or subtask as the command line names it: `N`, or `N.path` (`0.1.0`: task 0's
/// subtask 1.0), the TASK and SUBTASK columns of the error list joined.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct UnitArg {
    task: u64,
    path: Vec<u32>,
}

impl UnitArg {
    /// The task it names or is a subtask of.
    pub(crate) fn task(&self) -> u64 {
        self.task
    }
}

impl std::str::FromStr for UnitArg {
    type Err = String;

    fn from_str(s: &str) -> Result<UnitArg, String> {
        let mut parts = s.split('.');
        let bad = || format!("`{s}` is not a task: write N, or N.PATH for a subtask (0.1.0)");
        let task = parts.next().and_then(|t| t.parse().ok()).ok_or_else(bad)?;
        let path = parts
            .map(|p| p.parse().map_err(|_| bad()))
            .collect::<Result<_, _>>()?;
        Ok(UnitArg { task, path })
    }
}

/// The arguments of `debugger` that start `binary args` under it, stopped at the task's entry
/// (a breakpoint on `ppd_task_entry`).
fn launch_args(debugger: Tool, binary: &Path, args: &[String]) -> Vec<OsString> {
    let mut out: Vec<OsString> = match debugger {
        Tool::Gdb => ["-q", "-ex", "break ppd_task_entry", "-ex", "run", "--args"]
            .map(OsString::from)
            .to_vec(),
        Tool::Lldb => [
            "-o",
            "breakpoint set --name ppd_task_entry",
            "-o",
            "run",
            "--",
        ]
        .map(OsString::from)
        .to_vec(),
    };
    out.push(binary.as_os_str().to_owned());
    out.extend(args.iter().map(OsString::from));
    out
}

/// Finds `unit`'s logged computation `part` and prepares the program run that re-executes it.
fn prepare(
    recording: &Recording,
    run: &TaskRecording,
    (unit, part): (&UnitArg, Part),
    binary: Option<&Path>,
) -> Result<(Computation, TaskInvocation), crate::exit::CliError> {
    let computation = run
        .computation(recording, unit.task, &unit.path, part)
        .map_err(input)?;
    // The node that computed it re-executes it: its binary, its logs, its numbering.
    let node = recording
        .nodes()
        .get(computation.node as usize)
        .ok_or_else(|| {
            input(anyhow::anyhow!(
                "the recording has no node {}",
                computation.node
            ))
        })?;
    let node = Recording::open_node(&node.dir).map_err(input)?;
    let binary = check_binary(&node, binary).map_err(input)?;
    let invocation = TaskInvocation::new(
        &node,
        &binary,
        TaskRerun {
            generator: computation.generator.clone(),
            ordinal: computation.ordinal,
            process: computation.local,
            enter: computation.enter,
        },
    )
    .map_err(failure)?;
    Ok((computation, invocation))
}

#[derive(Serialize)]
struct RerunOutput<'a> {
    recording: &'a Path,
    task: u64,
    subtask: String,
    process: String,
    eblock: &'a str,
    enter: u64,
    outcome: String,
    trace: &'a EblockTrace,
}

/// `--rerun UNIT`: re-executes the unit's computation and prints its trace and how its result
/// compares with the log.
pub(crate) fn rerun(
    dir: &Path,
    recording: &Recording,
    run: &TaskRecording,
    unit: (&UnitArg, Part),
    binary: Option<&Path>,
    json: bool,
) -> CmdResult {
    let (c, invocation) = prepare(recording, run, unit, binary)?;
    ppd_formats::progress::stage("re-executing the task", None);
    let response = invocation.run().map_err(failure)?;
    if let Some(e) = response.errors.first() {
        return Err(failure(anyhow::anyhow!("re-executing the task: {e}")));
    }
    let trace = response
        .traces
        .first()
        .ok_or_else(|| failure(anyhow::anyhow!("the emulation returned no trace")))?;
    let outcome = outcome(trace);
    if json {
        output::json(&RerunOutput {
            recording: dir,
            task: c.unit.task,
            subtask: c.unit.subtask(),
            process: format!("{}/{}", c.process_name, c.process),
            eblock: &c.eblock,
            enter: c.enter,
            outcome,
            trace,
        });
    } else {
        outln!(
            "task {} subtask {} ({}): {} on {}/{} (event {}), re-executed from its logged input",
            c.unit.task,
            c.unit.subtask(),
            c.vm.name(),
            c.eblock,
            c.process_name,
            c.process,
            c.enter
        );
        for (i, r) in trace.records.iter().enumerate() {
            outln!("  {}", record_line(i, r));
        }
        outln!("{outcome}");
        for leak in &trace.leaks {
            outln!(
                "  {}: logged {}, re-executed {}",
                leak.what,
                leak.logged,
                leak.reproduced
            );
        }
        if c.eblock == SPLIT_EBLOCK {
            let name = if c.unit.path.is_empty() {
                c.unit.task.to_string()
            } else {
                format!("{}.{}", c.unit.task, c.unit.subtask())
            };
            outln!("(its combine of its subtasks' results: --rerun {name} --combine)");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// One line of the trace: `r3  return  %0 = 1240  at file:line  text`.
fn record_line(i: usize, r: &Record) -> String {
    let kind = format!("{:?}", r.kind).to_lowercase();
    let what = match (&r.var, &r.value) {
        (Some(var), Some(v)) => format!("{var} = {}", show(v)),
        (None, Some(v)) => show(v),
        (Some(var), None) => var.clone(),
        (None, None) => String::new(),
    };
    let event = match (r.kind, r.call, r.event) {
        // A nested e-block's logged result stands for it; `ppd why` re-executes it.
        (RecordKind::Call, Some(enter), _) => {
            format!("  (a nested e-block entered at event {enter}, not re-executed)")
        }
        (_, _, Some(e)) => format!("  (event {e})"),
        _ => String::new(),
    };
    let place = if r.file.is_empty() {
        String::new()
    } else {
        format!("  at {}:{}  {}", r.file, r.line, r.text)
    };
    format!("r{i}  {kind:<7} {what}{place}{event}")
}

fn show(v: &Captured) -> String {
    match v {
        Captured::Value(bytes) => value::show_bytes(bytes),
        Captured::Debug(text) => text.clone(),
        Captured::Opaque(ty) => format!("<{ty}>"),
    }
}

/// How the re-execution compares with the log, in one line.
fn outcome(trace: &EblockTrace) -> String {
    let result = trace
        .records
        .iter()
        .rev()
        .find(|r| r.kind == RecordKind::Return)
        .and_then(|r| r.value.as_ref())
        .map(show);
    if !trace.leaks.is_empty() {
        return format!(
            "result: differs from the log ({} difference{})",
            trace.leaks.len(),
            if trace.leaks.len() == 1 { "" } else { "s" }
        );
    }
    match (&trace.logged_panic, &trace.panicked, trace.exit, result) {
        (Some(p), Some(_), _, _) => format!("result: panicked as recorded: {p}"),
        (None, None, Some(_), Some(r)) => format!("result: same as logged: {r}"),
        (None, Some(p), None, _) => format!(
            "result: panicked ({p}); the recorded computation never ended (its log stops inside it)"
        ),
        (None, None, None, Some(r)) => format!(
            "result: returned {r}; the recorded computation never ended (its log stops inside it)"
        ),
        _ => "result: the re-execution stopped where it left the log".to_owned(),
    }
}

/// `--gdb UNIT` / `--lldb UNIT`: starts the recorded program under the debugger, stopped at
/// the entry of the unit's computation (`ppd_task_entry`) with its logged input; with
/// `dry_run`, prints the command instead (and keeps its request file).
pub(crate) fn debug(
    recording: &Recording,
    run: &TaskRecording,
    unit: (&UnitArg, Part),
    binary: Option<&Path>,
    debugger: Tool,
    dry_run: bool,
) -> CmdResult {
    let (c, invocation) = prepare(recording, run, unit, binary)?;
    let args = launch_args(debugger, &invocation.binary, &invocation.args);
    let program = debugger.program();
    if dry_run {
        let mut line: Vec<String> = invocation
            .env
            .iter()
            .map(|(k, v)| format!("{k}={}", quote(v.as_os_str())))
            .collect();
        line.push(program);
        line.extend(args.iter().map(|a| quote(a)));
        if let Some(cwd) = &invocation.cwd {
            outln!("cd {}", quote(cwd.as_os_str()));
        }
        outln!("{}", line.join(" "));
        // The printed command reads the request: it must outlive this process.
        invocation.keep();
        return Ok(ExitCode::SUCCESS);
    }
    eprintln!(
        "ppd: task {} subtask {} on {}/{}: {} stops at ppd_task_entry; `step` enters the computation",
        c.unit.task,
        c.unit.subtask(),
        c.process_name,
        c.process,
        program
    );
    let mut command = std::process::Command::new(&program);
    command.args(&args).envs(invocation.env.iter().cloned());
    if let Some(cwd) = &invocation.cwd {
        command.current_dir(cwd);
    }
    let status = command.status().map_err(|e| {
        failure(anyhow::anyhow!(
            "cannot start {}: {e} (is it installed?)",
            program
        ))
    })?;
    Ok(if status.success() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// `s` quoted for a POSIX shell when it needs it.
fn quote(s: &std::ffi::OsStr) -> String {
    let s = s.to_string_lossy();
    let plain = |c: char| c.is_ascii_alphanumeric() || "/._-=:,+@%".contains(c);
    if !s.is_empty() && s.chars().all(plain) {
        s.into_owned()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}
