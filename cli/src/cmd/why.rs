//! `ppd why`: the chain of statements, messages and processes that gave a variable its value;
//! with `--state`, a process's state restored from its logs; with `--what-if`, an e-block
//! instance re-executed with an argument changed.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::anyhow;
use ppd_flowback::Analysis;
use ppd_flowback::why::restore::{self, RestoredState};
use ppd_flowback::why::{self, Answer, Point, Query, TraceStore, render};
use ppd_formats::Recording;
use ppd_formats::integrity::Integrity;

use crate::cmd::races::classify;
use crate::damage::{self, DamageArgs};
use crate::exit::{CliError, CmdResult, input};
use crate::output;
use crate::output::{out, outln};
use crate::rec;

/// How many dependences a why-query follows unless told.
pub(crate) const DEFAULT_DEPTH: usize = 12;

/// Arguments of `ppd why`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The recording (default: the newest in ./ppd-recordings), the process (by name), and the
    /// variable or place (`balance`, `bank.accounts[1].balance`).
    #[arg(value_name = "[REC] PROCESS VAR", num_args = 1..=3, required = true)]
    args: Vec<String>,
    /// Where in the process's run: `end`, an event index, `halt` (where the last halted replay
    /// stopped it), `EBLOCK#K` (the exit of its K-th instance), or an event as predicates write
    /// it (`mark negative`, `exit handle if %0 > 3`, `recv requests #2`).
    #[arg(long, value_name = "POINT", default_value = "end")]
    at: String,
    /// How many dependences to follow back from the variable.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_DEPTH)]
    depth: usize,
    /// Print JSON.
    #[arg(long, conflicts_with = "dot")]
    json: bool,
    /// Print a Graphviz graph.
    #[arg(long)]
    dot: bool,
    /// Instead of a chain, show the process's state at POINT, restored from its logs.
    #[arg(long, conflicts_with_all = ["what_if", "dot"])]
    state: bool,
    /// Instead of a chain, re-execute the e-block instance at POINT with argument NAME set to
    /// VALUE (JSON) and show how its results differ.
    #[arg(long = "what-if", value_name = "NAME=VALUE", conflicts_with = "dot")]
    what_if: Vec<String>,
    /// The recorded program, if it moved (it must be the same binary).
    #[arg(long, value_name = "PATH")]
    binary: Option<PathBuf>,
    #[command(flatten)]
    damage: DamageArgs,
}

struct Target {
    rec: Option<PathBuf>,
    process: String,
    var: Option<String>,
}

/// Splits the positional arguments into `[REC] PROCESS VAR`. Which of them were given is read
/// off their number, except that a first argument naming a recording is taken for `REC`
/// whatever follows: `ppd why REC teller` is missing its variable, not asking about a process
/// called REC.
fn positionals(args: &Args) -> Result<Target, CliError> {
    let needs_var = !args.state && args.what_if.is_empty();
    let a = &args.args;
    let t = |rec: Option<&String>, process: &String, var: Option<&String>| Target {
        rec: rec.map(PathBuf::from),
        process: process.clone(),
        var: var.cloned(),
    };
    let rec_first = a.first().is_some_and(|first| rec::names_recording(first));
    let state_hint = |rec: Option<&String>, process: &str| {
        let rec = rec.map_or_else(String::new, |r| format!("{r} "));
        format!("`ppd why {rec}{process} --state` lists the values its e-blocks logged")
    };
    match (needs_var, a.as_slice()) {
        (true, [rec, process, var]) => Ok(t(Some(rec), process, Some(var))),
        (true, [rec, process]) if rec_first => Err(input(anyhow!(
            "missing VAR: ppd why [REC] PROCESS VAR ({rec} is the recording and {process} the \
             process; {})",
            state_hint(Some(rec), process)
        ))),
        (true, [process, var]) => Ok(t(None, process, Some(var))),
        (true, [rec]) if rec_first => Err(input(anyhow!(
            "missing PROCESS and VAR: ppd why [REC] PROCESS VAR ({rec} is the recording; `ppd \
             info {rec}` lists its processes)"
        ))),
        (true, [process]) => Err(input(anyhow!(
            "missing VAR: ppd why [REC] PROCESS VAR ({})",
            state_hint(None, process)
        ))),
        (true, _) => Err(input(anyhow!(
            "give the process and the variable: ppd why [REC] PROCESS VAR"
        ))),
        (false, [rec, process]) => Ok(t(Some(rec), process, None)),
        (false, [rec]) if rec_first => Err(input(anyhow!(
            "missing PROCESS: ppd why [REC] PROCESS --state | --what-if NAME=VALUE ({rec} is the \
             recording; `ppd info {rec}` lists its processes)"
        ))),
        (false, [process]) => Ok(t(None, process, None)),
        (false, _) => Err(input(anyhow!(
            "with --state or --what-if, give only [REC] PROCESS (the point is --at)"
        ))),
    }
}

pub(crate) fn run(args: &Args) -> CmdResult {
    let target = positionals(args)?;
    let at: Point = args.at.parse().map_err(classify)?;
    let checked = damage::open(target.rec.as_deref(), args.damage)?;
    let recording = checked.recording;
    ppd_formats::progress::stage("asking why", None);
    let mut store = TraceStore::new(&recording, args.binary.clone());
    if args.state {
        return state(&recording, &mut store, &target.process, &at, args.json);
    }
    if !args.what_if.is_empty() {
        return what_if(
            &recording,
            &mut store,
            &target.process,
            &at,
            &args.what_if,
            args.json,
        );
    }
    let query = Query {
        process: target.process,
        var: target.var.unwrap_or_default(),
        at,
        depth: args.depth,
    };
    let format = if args.json {
        Format::Json
    } else if args.dot {
        Format::Dot
    } else {
        Format::Text
    };
    answer(&mut store, &query, format, &checked.integrity)
}

/// How an answer is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    /// The chain as a tree.
    Text,
    /// The steps as JSON, with the recording's integrity.
    Json,
    /// A Graphviz graph.
    Dot,
}

/// Asks `query` and prints the answer, with what was damaged or ended early in the logs it
/// came from: `ppd why` and the interactive debugger's `why` both answer here. Exit code 1
/// after a nondeterminism leak.
pub(crate) fn answer(
    store: &mut TraceStore<'_>,
    query: &Query,
    format: Format,
    integrity: &Integrity,
) -> CmdResult {
    let mut answer = why::ask(store, query).map_err(classify)?;
    let races_unchecked = mark_races(store.recording(), &mut answer);
    match format {
        Format::Json => output::json(&AnswerOutput {
            answer: &answer,
            races_unchecked: races_unchecked.as_deref(),
            integrity,
        }),
        Format::Dot => out!("{}", render::dot(&answer)),
        Format::Text => {
            out!("{}", render::text_with(&answer, output::palette()));
            if let Some(why_not) = &races_unchecked {
                outln!("the chain's receives were not checked for message races: {why_not}");
            }
            print_integrity(integrity);
        }
    }
    Ok(leak_exit(&answer))
}

/// What was damaged, tampered with or ended early in the logs an answer came from: it is only as
/// whole as they are.
pub(crate) fn print_integrity(integrity: &Integrity) {
    for d in &integrity.damage {
        outln!("answered from a damaged log: {d}");
    }
    for f in integrity.tampered() {
        outln!("answered from a recording whose MAC fails: {f}");
    }
    for e in &integrity.ends_early {
        outln!("answered from a log that ends early: {e}");
    }
}

/// Marks the receives of `answer`'s chain that raced (`why::races`), when it has any; says
/// why they could not be checked otherwise.
fn mark_races(recording: &Recording, answer: &mut Answer) -> Option<String> {
    // A chain with no receive has nothing to check.
    answer.receives().next()?;
    match Analysis::open(recording) {
        Ok(analysis) => {
            answer.races = why::races::on_chain(&analysis, answer);
            None
        }
        Err(e) => Some(e.to_string()),
    }
}

/// `--json`: the answer, and what was damaged or ended early in the logs it came from.
#[derive(serde::Serialize)]
struct AnswerOutput<'a> {
    #[serde(flatten)]
    answer: &'a Answer,
    /// Why the chain's receives were not checked for message races, if they were not.
    #[serde(skip_serializing_if = "Option::is_none")]
    races_unchecked: Option<&'a str>,
    integrity: &'a Integrity,
}

/// A nondeterminism leak makes the answer suspect: exit 1 after printing it.
fn leak_exit(answer: &Answer) -> ExitCode {
    if answer.leaks.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

fn state(
    recording: &Recording,
    store: &mut TraceStore<'_>,
    process: &str,
    at: &Point,
    json: bool,
) -> CmdResult {
    let pid = why::find_process(recording, process).map_err(classify)?;
    let state = store
        .repairing(|store| {
            let index = store.index(pid)?;
            let event = at.resolve(recording, pid, &index)?;
            restore::state_at(recording, pid, event)
        })
        .map_err(classify)?;
    if json {
        output::json(&state);
    } else {
        print_state(&state);
    }
    Ok(ExitCode::SUCCESS)
}

/// Prints a restored state.
pub(crate) fn print_state(state: &RestoredState) {
    let at = state.at_event.map_or_else(
        || "before its first event".to_owned(),
        |e| format!("after event {e}"),
    );
    outln!("{} {at}, restored from its e-block logs:", state.process);
    if !state.open.is_empty() {
        outln!("  inside {}", state.open.join(" → "));
    }
    if state.values.is_empty() {
        outln!("  (no e-block logged a value yet)");
    }
    for v in &state.values {
        let how = match v.logged_on {
            restore::LoggedOn::Entry => "entry",
            restore::LoggedOn::Exit => "exit",
        };
        outln!(
            "  {} = {}    [{how} of {}, event {}]",
            v.name,
            v.value,
            v.eblock,
            v.event
        );
    }
}

fn what_if(
    recording: &Recording,
    store: &mut TraceStore<'_>,
    process: &str,
    at: &Point,
    changes: &[String],
    json: bool,
) -> CmdResult {
    let pid = why::find_process(recording, process).map_err(classify)?;
    let event = store
        .repairing(|store| {
            let index = store.index(pid)?;
            at.resolve(recording, pid, &index)
        })
        .map_err(classify)?
        .ok_or_else(|| {
            input(anyhow!(
                "--what-if re-executes one e-block instance: name it with --at (`handle#3`, an \
                 event inside it, `mark negative`)"
            ))
        })?;
    let inst = store
        .repairing(|store| restore::instance_at(store, pid, event))
        .map_err(classify)?;
    let changes = changes
        .iter()
        .map(|c| restore::parse_change(c))
        .collect::<Result<Vec<_>, _>>()
        .map_err(classify)?;
    let result = store
        .repairing(|store| restore::what_if(store, inst, &changes))
        .map_err(classify)?;
    if json {
        output::json(&result);
    } else {
        outln!(
            "{} {} entered at event {}, re-executed with:",
            result.process,
            result.eblock,
            result.instance
        );
        for (name, recorded, tried) in &result.changed {
            outln!("  {name} = {tried}    (recorded: {recorded})");
        }
        if let Some(left) = &result.left_the_log {
            outln!("it left the recorded run, and stopped there: {left}");
        }
        if let Some((recorded, now)) = &result.ending {
            outln!("  {now}    (recorded: {recorded})");
        }
        for o in &result.outcomes {
            match &o.what_if {
                Some(v) if *v == o.recorded => outln!("  {} = {v}    (unchanged)", o.name),
                Some(v) => outln!("  {} = {v}    (recorded: {})", o.name, o.recorded),
                None => outln!("  {} = ?    (recorded: {})", o.name, o.recorded),
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
