//! `ppd replay`: replay a recording, verify it, halt it at a distributed breakpoint, trace it.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::anyhow;
use ppd_formats::ProcessEnding;
use ppd_formats::integrity::Integrity;
use ppd_formats::order::Tick;
use ppd_formats::recording::Node;
use ppd_formats::summary::{Payloads, RecordingSummary, summarize};
use ppd_formats::{ProcessId, Recording};
use ppd_replayer::debugger::{HaltState, Launch, ProgramOutput, Reason, Session};
use ppd_replayer::predicate::{self, Catalog, Combination, Resolved, Satisfying};
use ppd_replayer::protocol::{Goal, ProcessReport, Report, Setup};
use serde::Serialize;

use crate::cmd::debugger;
use crate::damage::{self, DamageArgs};
use crate::exit::{CliError, CmdResult, failure, input};
use crate::output;
use crate::output::{out, outln};

/// Arguments of `ppd replay`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The recording (default: the newest in ./ppd-recordings).
    rec: Option<PathBuf>,
    /// Check every logged value too (payloads, arguments, marks), not only each choice.
    #[arg(long)]
    verify: bool,
    /// Print JSON.
    #[arg(long)]
    pub(crate) json: bool,
    /// Halt at the first global state satisfying PRED and print it.
    #[arg(long, value_name = "PRED", conflicts_with = "trace")]
    pub(crate) stop: Option<String>,
    /// With a disjunctive --stop: replay twice to halt exactly at a first satisfying state.
    #[arg(long, requires = "stop")]
    pub(crate) first: bool,
    /// Replay even an `==` or `&` --stop that the program's source shows no run can satisfy
    /// (see `ppd check`; the check runs only when the recorded source is found unchanged).
    #[arg(long, requires = "stop")]
    no_check: bool,
    /// Print --print's values at every global state satisfying PRED, without halting.
    #[arg(long, value_name = "PRED", requires = "print")]
    trace: Option<String>,
    /// What --trace prints: comma-separated PROCESS.NAME, NAME a mark label or an argument of
    /// the process's innermost e-block.
    #[arg(long, value_name = "EXPR", requires = "trace")]
    print: Option<String>,
    /// Replay to this consistent global state: PROCESS=EVENTS,... (others stay at 0), or
    /// `halt` (`halt:N`): where `ppd record --stop` halted the live program (its N-th halt).
    #[arg(long, value_name = "CUT", conflicts_with_all = ["stop", "trace"])]
    pub(crate) to: Option<String>,
    /// After halting (or from the start), take debugger commands: step, continue, back, ...
    #[arg(short, long)]
    interactive: bool,
    /// After halting, attach gdb to the held replay (to every node of several, one inferior
    /// each) with the halted thread selected in its own frame; the replay ends with gdb.
    #[arg(long, conflicts_with_all = ["lldb", "interactive", "trace"])]
    gdb: bool,
    /// After halting, attach lldb to the held replay (one node: `--only NODE` for several).
    #[arg(long, conflicts_with_all = ["interactive", "trace"])]
    lldb: bool,
    /// With --gdb or --lldb: print the debugger's command line instead of running it.
    #[arg(long)]
    dry_run: bool,
    /// Replay this binary instead of the recorded path (it must be the same build).
    #[arg(long, value_name = "PATH")]
    binary: Option<PathBuf>,
    /// In a recording of several OS processes, replay only these nodes (comma-separated
    /// names, as `ppd info` lists them).
    #[arg(long, value_name = "NODE,...")]
    only: Option<String>,
    #[command(flatten)]
    damage: DamageArgs,
}

/// Everything a replay needs from the recording.
pub(crate) struct Context {
    pub(crate) recording: Recording,
    pub(crate) catalog: Option<Catalog>,
    pub(crate) launch: Launch,
    pub(crate) verify: bool,
    /// What is damaged in, or missing from, the recording (see `crate::damage`).
    pub(crate) integrity: Integrity,
}

impl Context {
    pub(crate) fn catalog(&mut self) -> Result<&Catalog, CliError> {
        if self.catalog.is_none() {
            self.catalog = Some(Catalog::of(&self.recording)?);
        }
        Ok(self.catalog.as_ref().expect("just filled"))
    }

    /// The predicate `text`, parsed and checked against the recording: refused (bad input)
    /// when it cannot hold in it.
    pub(crate) fn resolve(&mut self, text: &str) -> Result<Resolved, CliError> {
        let parsed = predicate::parse(text).map_err(input)?;
        // Reads the values of only the events the predicate's conditions test.
        let catalog = Catalog::for_predicate(&self.recording, &parsed)?;
        let resolved = parsed.resolve(&catalog).map_err(input)?;
        self.catalog.get_or_insert(catalog);
        Ok(resolved)
    }

    pub(crate) fn start(&self, goal: Goal) -> Result<Session, CliError> {
        let setup = Setup {
            goal,
            verify: self.verify,
        };
        Session::start(&self.recording, &self.launch, &setup).map_err(|e| {
            if e.is_bad_input() {
                input(e)
            } else {
                failure(e)
            }
        })
    }

    /// The halted state for `reports`, and `cache/halt.json` for `ppd graph`.
    pub(crate) fn halt_state(
        &mut self,
        plan: Option<&Resolved>,
        reason: Reason,
        reports: &[ProcessReport],
        latency_ns: Option<u64>,
    ) -> Result<HaltState, CliError> {
        let catalog = self.catalog()?.clone();
        let state = HaltState::build(&self.recording, &catalog, plan, reason, reports, latency_ns)?;
        let written = self.recording.cache_dir().and_then(|dir| {
            let json = serde_json::to_vec_pretty(&state.cut_json()).unwrap_or_default();
            ppd_formats::private::write_atomic(&dir.join("halt.json"), &json, false)
        });
        if let Err(e) = written {
            eprintln!("ppd: not saving the halt for `ppd graph` and `--at halt`: {e}");
        }
        Ok(state)
    }
}

impl Args {
    /// Whether the replay hands over to the debugger once it halts (or from the start): `-i`,
    /// or `--gdb` / `--lldb`, which run its `gdb` / `lldb` command and leave.
    pub(crate) fn interactive(&self) -> bool {
        self.interactive || self.gdb || self.lldb
    }
}

pub(crate) fn run(args: &Args) -> CmdResult {
    if args.dry_run && !args.gdb && !args.lldb {
        return Err(input(anyhow!("--dry-run goes with --gdb or --lldb")));
    }
    if args.gdb || args.lldb {
        let tool = if args.gdb { "gdb" } else { "lldb" };
        let dry = if args.dry_run { " --dry-run" } else { "" };
        debugger::input::script(vec![format!("{tool}{dry}"), "quit".to_owned()]);
    }
    let checked = damage::open(args.rec.as_deref(), args.damage)?;
    let nodes = chosen_nodes(&checked.recording, args.only.as_deref())?;
    let halts = args.stop.is_some() || args.trace.is_some() || args.to.is_some();
    if nodes.len() > 1
        && (args.stop.is_some() || args.to.is_some() || args.interactive())
        && args.only.is_none()
    {
        return super::halt_nodes::run(args, &checked.recording, &checked.integrity);
    }
    if nodes.len() > 1
        && args.only.is_none()
        && let (Some(pred), Some(print)) = (&args.trace, &args.print)
    {
        return super::halt_nodes::trace(args, &checked.recording, &checked.integrity, pred, print);
    }
    if nodes.len() > 1 && (halts || args.interactive()) {
        return Err(input(anyhow!(
            "a replay that halts, traces or steps takes the whole recording, or one node with \
             --only NODE; --only names several here (nodes: {})",
            node_names(&checked.recording)
        )));
    }
    if checked.recording.is_distributed() {
        // Each node replays alone, from its own logs: its reads are served from what they
        // logged, so no node waits for another.
        if halts || args.interactive() {
            let node = &nodes[0];
            let recording = Recording::open_node(&node.dir)?;
            return run_one(args, recording, checked.integrity);
        }
        return replay_nodes(args, &nodes, checked.integrity);
    }
    run_one(args, checked.recording, checked.integrity)
}

/// The nodes `--only` names (all of them without it).
fn chosen_nodes(recording: &Recording, only: Option<&str>) -> Result<Vec<Node>, CliError> {
    let Some(only) = only else {
        return Ok(recording.nodes().to_vec());
    };
    if only.split(',').all(|n| n.trim().is_empty()) {
        return Err(input(anyhow!(
            "--only names no node (its nodes: {})",
            node_names(recording)
        )));
    }
    only.split(',')
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .map(|name| {
            recording
                .nodes()
                .iter()
                .find(|n| n.name == name)
                .cloned()
                .ok_or_else(|| {
                    input(anyhow!(
                        "no node `{name}` in the recording (its nodes: {})",
                        node_names(recording)
                    ))
                })
        })
        .collect()
}

fn node_names(recording: &Recording) -> String {
    recording
        .nodes()
        .iter()
        .map(|n| n.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Replays each of `nodes` alone, one after the other, and says how each went.
fn replay_nodes(args: &Args, nodes: &[Node], integrity: Integrity) -> CmdResult {
    let mut summaries = Vec::new();
    for node in nodes {
        let recording = Recording::open_node(&node.dir)?;
        let mut ctx = context(args, recording, integrity.clone());
        if !args.json {
            eprintln!("ppd: node {}:", node.name);
        }
        let summary = replay_summary(&mut ctx)?;
        if !args.json {
            print_summary(&summary);
        }
        summaries.push((node.name.clone(), summary));
    }
    let reproduced = summaries.iter().all(|(_, s)| s.outcome == "reproduced");
    if args.json {
        let nodes: Vec<serde_json::Value> = summaries
            .iter()
            .map(|(name, s)| {
                let mut v = serde_json::to_value(s).unwrap_or_default();
                v["node"] = serde_json::json!(name);
                v
            })
            .collect();
        output::json(&serde_json::json!({
            "outcome": if reproduced { "reproduced" } else { "not reproduced" },
            "events": summaries.iter().map(|(_, s)| s.events).sum::<u64>(),
            "logged": summaries.iter().map(|(_, s)| s.logged).sum::<u64>(),
            "verified": args.verify,
            "nodes": nodes,
        }));
    } else if summaries.len() > 1 {
        let events: u64 = summaries.iter().map(|(_, s)| s.events).sum();
        eprintln!(
            "ppd: {} nodes {}: {events} events replayed",
            summaries.len(),
            if reproduced {
                "reproduced"
            } else {
                "not all reproduced"
            }
        );
    }
    Ok(if reproduced {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

pub(crate) fn context(args: &Args, recording: Recording, integrity: Integrity) -> Context {
    Context {
        recording,
        integrity,
        catalog: None,
        launch: Launch {
            binary: args.binary.clone(),
            output: if args.json {
                ProgramOutput::ToStderr
            } else {
                ProgramOutput::Inherit
            },
            env: Vec::new(),
        },
        verify: args.verify,
    }
}

/// `ppd replay` of a recording of one OS process (or of one node of several).
fn run_one(args: &Args, recording: Recording, integrity: Integrity) -> CmdResult {
    let mut ctx = context(args, recording, integrity);
    if let (Some(pred), Some(print)) = (&args.trace, &args.print) {
        return trace(&mut ctx, pred, print, args.json);
    }
    if let Some(pred) = &args.stop {
        let plan = ctx.resolve(pred)?;
        if !args.no_check {
            crate::cmd::check::refuse_impossible(&ctx.recording, pred)?;
        }
        return stop(&mut ctx, plan, args.first, args.json, args.interactive());
    }
    if let Some(cut) = &args.to {
        let targets = parse_cut(&mut ctx, cut)?;
        let session = ctx.start(Goal::Cut(targets.clone()))?;
        let session = Halting {
            session,
            plan: None,
            listed: Some(&targets),
        };
        return halt_and_show(&mut ctx, session, args.json, args.interactive());
    }
    if args.interactive() {
        let session = ctx.start(Goal::Hold)?;
        return halt_and_show(&mut ctx, Halting::of(session, None), args.json, true);
    }
    replay_whole(&mut ctx, args.json)
}

/// `PROCESS=EVENTS,...` to per-process targets; processes not listed have none (they stay at
/// their start unless the listed ones need them). `halt` and `halt:N` name a halt of the live
/// program the recording keeps.
pub(crate) fn parse_cut(ctx: &mut Context, text: &str) -> Result<Vec<Option<u64>>, CliError> {
    let n = ctx
        .recording
        .processes()
        .iter()
        .map(|p| p.id.index() + 1)
        .max()
        .unwrap_or(1);
    let mut targets = vec![None; n];
    if let Some(which) = text.trim().strip_prefix("halt") {
        let halt = recorded_halt(&ctx.recording, which)?;
        for (process, events) in halt.cut {
            if let Some(target) = targets.get_mut(process.index()) {
                *target = Some(events);
            }
        }
        return Ok(targets);
    }
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (name, events) = part
            .split_once('=')
            .ok_or_else(|| input(anyhow!("bad cut `{part}`: expected PROCESS=EVENTS")))?;
        let process = ctx
            .recording
            .resolve_process(name.trim())
            .map_err(|e| input(anyhow!("bad cut `{part}`: {e}")))?;
        let events: u64 = events
            .trim()
            .parse()
            .map_err(|_| input(anyhow!("bad cut `{part}`: `{events}` is not a number")))?;
        targets[process.id.index()] = Some(events);
    }
    Ok(targets)
}

/// The halt `which` (empty: the last; `:N`: the N-th) of those `ppd record --stop` kept in
/// `recording`.
pub(crate) fn recorded_halt(
    recording: &Recording,
    which: &str,
) -> Result<ppd_formats::live::Halt, CliError> {
    let halts = ppd_formats::live::read_halts(recording.dir()).map_err(input)?;
    let wanted =
        match which.strip_prefix(':') {
            None if which.is_empty() => halts.last().map(|h| h.halt),
            Some(n) => Some(n.trim().parse::<u64>().map_err(|_| {
                input(anyhow!("bad cut `halt{which}`: `{n}` is not a halt number"))
            })?),
            None => {
                return Err(input(anyhow!(
                    "bad cut `halt{which}`: expected halt or halt:N"
                )));
            }
        };
    let listed = || {
        halts
            .iter()
            .map(|h| format!("halt:{} ({})", h.halt, h.predicate))
            .collect::<Vec<_>>()
            .join(", ")
    };
    match wanted.and_then(|n| halts.iter().find(|h| h.halt == n)) {
        Some(h) => Ok(h.clone()),
        None if halts.is_empty() => Err(input(anyhow!(
            "--to halt: the recording keeps no halt (`ppd record --stop PRED` halts the live \
             program and keeps where)"
        ))),
        None => Err(input(anyhow!(
            "--to halt{which}: no such halt; the recording keeps {}",
            listed()
        ))),
    }
}

#[derive(Debug, Serialize)]
struct ReplaySummary {
    outcome: &'static str,
    /// Events replayed.
    events: u64,
    /// Events in the logs.
    logged: u64,
    processes: usize,
    seconds: f64,
    verified: bool,
    exit_code: Option<i32>,
    recorded_exit_code: Option<i32>,
    /// How the recorded run ended.
    recording_ended: String,
    /// Per process: events replayed of events logged, and how it ended in the recording.
    by_process: Vec<ProcessOutcome>,
    divergence: Option<serde_json::Value>,
    stuck: Vec<serde_json::Value>,
    integrity: Integrity,
}

/// One process of a whole-run replay.
#[derive(Debug, Serialize)]
struct ProcessOutcome {
    process: String,
    id: u32,
    /// Events the replay executed; absent when the replay ended before it could say.
    replayed: Option<u64>,
    logged: u64,
    /// How it ended in the recording, in words.
    ending: String,
    /// The same, as data.
    ended: Option<ProcessEnding>,
}

/// Each process's events and ending in the recording; says at the start when the recording
/// was cut short or ended with processes still alive.
fn recorded_outcomes(summary: &RecordingSummary) -> Vec<ProcessOutcome> {
    summary
        .processes
        .iter()
        .map(|p| ProcessOutcome {
            process: p.name.clone(),
            id: p.id.0,
            replayed: None,
            logged: p.events,
            ending: p.ending_text.clone(),
            ended: p.ending.clone(),
        })
        .collect()
}

fn announce_bad_ending(summary: &RecordingSummary) {
    let alive: Vec<String> = summary
        .processes
        .iter()
        .filter(|p| p.ending.as_ref().is_some_and(ProcessEnding::alive))
        .map(|p| format!("{} ({})", p.name, p.ending_text))
        .collect();
    if let Some(reason) = &summary.stopped {
        eprintln!("ppd: recording stopped early: {reason}; replaying to where it stopped");
    }
    if summary.run_ending.cut_short() {
        eprintln!("ppd: this recording was {}", summary.run_ending);
    } else if !alive.is_empty() {
        eprintln!("ppd: {}, with processes still alive", summary.run_ending);
    }
    if !alive.is_empty() {
        eprintln!(
            "ppd: replaying them to their last logged event and holding them there: {}",
            alive.join("; ")
        );
    }
}

fn replay_whole(ctx: &mut Context, json: bool) -> CmdResult {
    let summary = replay_summary(ctx)?;
    if json {
        output::json(&summary);
    } else {
        print_summary(&summary);
    }
    Ok(if summary.outcome == "reproduced" {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// Replays the whole run of `ctx`'s recording; how it went.
fn replay_summary(ctx: &mut Context) -> Result<ReplaySummary, CliError> {
    let started = Instant::now();
    // Every payload passed the damage gate when the recording was opened.
    let recorded = summarize(&ctx.recording, Payloads::AlreadyVerified)?;
    // Said before the program starts, so that its output does not run into the message; a
    // binary that cannot be replayed is refused first.
    ppd_replayer::debugger::check_binary(&ctx.recording, ctx.launch.binary.as_deref())
        .map_err(input)?;
    announce_bad_ending(&recorded);
    ppd_formats::progress::stage(&format!("replaying {} events", recorded.events), None);
    let mut session = ctx.start(Goal::Run)?;
    let recorded_exit_code = ctx.recording.manifest().end.as_ref().map(|e| e.exit_code);
    let mut summary = ReplaySummary {
        outcome: "reproduced",
        events: 0,
        logged: recorded.events,
        processes: ctx.recording.processes().len(),
        seconds: 0.0,
        verified: ctx.verify,
        exit_code: None,
        recorded_exit_code,
        recording_ended: recorded.run_ending_text.clone(),
        by_process: recorded_outcomes(&recorded),
        divergence: None,
        stuck: Vec::new(),
        integrity: ctx.integrity.clone(),
    };
    let replayed = |reports: &[ProcessReport], outcomes: &mut [ProcessOutcome]| {
        for o in outcomes.iter_mut() {
            o.replayed = Some(
                reports
                    .iter()
                    .find(|r| r.id.0 == o.id)
                    .map_or(0, |r| r.events),
            );
        }
    };
    loop {
        match session.next_report() {
            Ok(Report::Finished { events, processes }) => {
                summary.events = events;
                replayed(&processes, &mut summary.by_process);
                if summary
                    .by_process
                    .iter()
                    .any(|o| o.replayed != Some(o.logged))
                {
                    summary.outcome = "incomplete";
                }
                break;
            }
            Ok(Report::Diverged {
                process,
                event,
                expected,
                happened,
            }) => {
                summary.outcome = "diverged";
                let name = ctx
                    .recording
                    .process(process)
                    .map_or_else(|| process.to_string(), |p| p.name.clone());
                summary.divergence = Some(serde_json::json!({
                    "process": name, "id": process.0, "event": event,
                    "expected": expected, "happened": happened,
                }));
                break;
            }
            Ok(Report::Stuck { processes }) => {
                summary.outcome = "stuck";
                summary.stuck = stuck_waits(ctx, &processes);
                summary.events = processes.iter().map(|p| p.events).sum();
                replayed(&processes, &mut summary.by_process);
                break;
            }
            Ok(_) => {}
            Err(ppd_replayer::debugger::DebugError::Ended { status }) => {
                // The program ended without the runtime's final report: it exited early.
                summary.outcome = "ended early";
                summary.exit_code = status.code();
                break;
            }
            Err(e) => return Err(failure(e)),
        }
    }
    // The replayed program ends by itself when the recorded `main` did (it waits for every
    // process to replay its log first); otherwise `main` is held at the end of its log.
    let main_ended = recorded.processes.iter().any(|p| {
        p.id == ProcessId::MAIN
            && matches!(
                p.ending,
                Some(ProcessEnding::Exited | ProcessEnding::Panicked { .. })
            )
    });
    if summary.outcome == "reproduced" && main_ended {
        let status = session.wait().map_err(failure)?;
        summary.exit_code = status.code();
        if let (Some(a), Some(b)) = (summary.exit_code, recorded_exit_code)
            && a != b
        {
            summary.outcome = "diverged";
            summary.divergence = Some(serde_json::json!({
                "process": "main", "expected": format!("exit code {b}"),
                "happened": format!("exit code {a}"),
            }));
        }
    } else {
        session.quit().map_err(failure)?;
    }
    summary.seconds = started.elapsed().as_secs_f64();
    Ok(summary)
}

fn print_summary(s: &ReplaySummary) {
    let what = if s.verified {
        "every event and logged value matched the recording"
    } else {
        "every choice matched the recording"
    };
    match s.outcome {
        "reproduced" => eprintln!(
            "ppd: replayed all {} logged events of {} processes in {:.3} s; {what}",
            s.events, s.processes, s.seconds
        ),
        "incomplete" => eprintln!(
            "ppd: replay incomplete: {} of {} logged events replayed",
            s.events, s.logged
        ),
        "diverged" => {
            let d = s.divergence.as_ref().expect("a divergence has details");
            eprintln!(
                "ppd: replay diverged in {} at event {}:\n  expected: {}\n  happened: {}",
                d["process"].as_str().unwrap_or("?"),
                d["event"],
                d["expected"].as_str().unwrap_or("?"),
                d["happened"].as_str().unwrap_or("?")
            );
        }
        "stuck" => {
            eprintln!("ppd: replay cannot make progress:");
            for w in &s.stuck {
                eprintln!(
                    "  {} (after {} events) waits for {}",
                    w["process"].as_str().unwrap_or("?"),
                    w["events"],
                    w["waiting_for"].as_str().unwrap_or("?")
                );
            }
        }
        other => match s.exit_code {
            Some(code) => eprintln!("ppd: replay {other}: the program exited with code {code}"),
            None => eprintln!("ppd: replay {other}: the program was killed by a signal"),
        },
    }
    for p in &s.by_process {
        let replayed = p.replayed.map_or_else(|| "?".to_owned(), |n| n.to_string());
        let missing = match p.replayed {
            Some(n) if n < p.logged => format!(" ({} not replayed)", p.logged - n),
            _ => String::new(),
        };
        eprintln!(
            "  {:<16} {replayed:>10} of {:<10} {}{missing}",
            format!("{} ({})", p.process, ProcessId(p.id)),
            p.logged,
            p.ending
        );
    }
}

fn stuck_waits(ctx: &Context, processes: &[ProcessReport]) -> Vec<serde_json::Value> {
    processes
        .iter()
        .filter(|p| p.waiting_for.is_some())
        .map(|p| {
            let name = ctx
                .recording
                .process(p.id)
                .map_or_else(|| p.id.to_string(), |e| e.name.clone());
            serde_json::json!({
                "process": name, "events": p.events,
                "waiting_for": p.waiting_for.clone().unwrap_or_default(),
            })
        })
        .collect()
}

/// A replay on its way to a halt.
struct Halting<'a> {
    session: Session,
    /// The predicate it halts at.
    plan: Option<&'a Resolved>,
    /// The targets of `--to`, when it halts at a cut (`None` for a process not listed).
    listed: Option<&'a [Option<u64>]>,
}

impl<'a> Halting<'a> {
    fn of(session: Session, plan: Option<&'a Resolved>) -> Halting<'a> {
        Halting {
            session,
            plan,
            listed: None,
        }
    }
}

/// Waits for the session's next halt and prints it (then hands over to the interactive
/// debugger if asked).
fn halt_and_show(
    ctx: &mut Context,
    halting: Halting<'_>,
    json: bool,
    interactive: bool,
) -> CmdResult {
    let Halting {
        mut session,
        plan,
        listed,
    } = halting;
    match debugger::wait_halt(ctx, &mut session, plan)? {
        debugger::Outcome::Halted(state) => {
            // Processes left out of `--to` stay at their start unless the listed ones need them.
            let needed: Vec<String> = state
                .processes
                .iter()
                .filter(|p| {
                    p.events > 0 && listed.is_some_and(|l| l.get(p.id.index()) == Some(&None))
                })
                .map(|p| format!("{} to {} events", p.name, p.events))
                .collect();
            if !needed.is_empty() {
                eprintln!(
                    "ppd: not listed, but needed for a consistent state: {}",
                    needed.join(", ")
                );
            }
            if json {
                output::json(&state);
            } else {
                out!("{}", state.render());
            }
            if interactive {
                return debugger::repl(ctx, session, plan.cloned(), state);
            }
            session.quit().map_err(failure)?;
            Ok(ExitCode::SUCCESS)
        }
        debugger::Outcome::Other(message) => {
            session.quit().map_err(failure)?;
            Err(failure(anyhow!(message)))
        }
    }
}

fn stop(
    ctx: &mut Context,
    plan: Resolved,
    first: bool,
    json: bool,
    interactive: bool,
) -> CmdResult {
    if first {
        match plan.combination {
            Combination::Disjunctive => {
                let Some(cut) = first_disjunctive_cut(ctx, &plan)? else {
                    return Err(failure(anyhow!(
                        "the predicate never holds in this run: {}",
                        plan.text
                    )));
                };
                let session = ctx.start(Goal::Cut(cut.into_iter().map(Some).collect()))?;
                return halt_and_show(ctx, Halting::of(session, Some(&plan)), json, interactive);
            }
            Combination::Conjunctive | Combination::Simultaneous => {
                // Algorithm 1 already halts at the first satisfying state.
            }
            Combination::Linked(_) => {
                return Err(input(anyhow!(
                    "--first is for disjunctive predicates; a linked predicate halts when its \
                     last stage holds"
                )));
            }
        }
    }
    let session = ctx.start(Goal::Stop(plan.clone()))?;
    halt_and_show(ctx, Halting::of(session, Some(&plan)), json, interactive)
}

/// The first pass of `--first`: replays to the end recording every event at which a
/// component holds, with its vector clock. The least consistent cut containing such an event
/// is its vector clock; the minimal ones are the first satisfying states (Inf(P)), of which the
/// one with the fewest events is returned.
fn first_disjunctive_cut(ctx: &mut Context, plan: &Resolved) -> Result<Option<Vec<u64>>, CliError> {
    let reported: Vec<Satisfying> = history(ctx, plan)?
        .into_iter()
        .map(|s| s.satisfying(s.process.index()))
        .collect();
    let process_of: Vec<usize> = plan.components.iter().map(|c| c.process.index()).collect();
    Ok(predicate::first_state(&plan.combination, &process_of, &reported).map(|first| first.cut))
}

/// An event at which components of the predicate hold, as a node's local controllers report
/// it.
pub(crate) struct Satisfaction {
    /// The process, as the replayed program numbers it.
    pub(crate) process: ProcessId,
    /// The event's index in the process's log.
    pub(crate) event: u64,
    /// The components that hold after it.
    pub(crate) components: Vec<usize>,
    /// The event's vector clock: its least consistent cut.
    pub(crate) vclock: Vec<Tick>,
}

impl Satisfaction {
    /// The state after the event, for [`predicate::first_state`], with the process at index
    /// `process` of the clocks and the replay's own vector clock.
    pub(crate) fn satisfying(&self, process: usize) -> Satisfying {
        Satisfying {
            process,
            events: self.event + 1,
            components: self.components.clone(),
            vclock: self.vclock.iter().map(|&t| u64::from(t)).collect(),
        }
    }
}

/// Replays the whole run in history mode: every event at which a component holds.
pub(crate) fn history(ctx: &mut Context, plan: &Resolved) -> Result<Vec<Satisfaction>, CliError> {
    // The pass only finds where the predicate holds: what the program prints in it would
    // repeat what the halting replay prints.
    let output = std::mem::replace(&mut ctx.launch.output, ProgramOutput::Discard);
    let session = ctx.start(Goal::History(plan.clone()));
    ctx.launch.output = output;
    let mut session = session?;
    let mut satisfied = Vec::new();
    loop {
        match session.next_report() {
            Ok(Report::Satisfied {
                components,
                process,
                event,
                vclock,
            }) => satisfied.push(Satisfaction {
                process,
                event,
                components,
                vclock,
            }),
            Ok(Report::Finished { .. }) => break,
            Ok(Report::Diverged {
                expected, happened, ..
            }) => {
                let _ = session.quit();
                return Err(failure(anyhow!(
                    "replay diverged: expected {expected}, happened {happened}"
                )));
            }
            Ok(Report::Stuck { .. }) => {
                let _ = session.quit();
                return Err(failure(anyhow!("replay cannot make progress")));
            }
            Ok(_) => {}
            Err(ppd_replayer::debugger::DebugError::Ended { .. }) => break,
            Err(e) => return Err(failure(e)),
        }
    }
    let _ = session.quit();
    Ok(satisfied)
}

/// `--trace PRED --print EXPR` (Manabe & Imase §4).
fn trace(ctx: &mut Context, pred: &str, print: &str, json: bool) -> CmdResult {
    let plan = ctx.resolve(pred)?;
    let items = parse_print(ctx, print)?;
    let mut lines = Vec::new();
    match plan.combination {
        Combination::Conjunctive | Combination::Simultaneous => {
            // Halt at Inf(P), print, put the statuses back, and go on.
            let mut session = ctx.start(Goal::Stop(plan.clone()))?;
            while let debugger::Outcome::Halted(state) =
                debugger::wait_halt(ctx, &mut session, Some(&plan))?
            {
                lines.push(trace_line(&state, &items));
                session
                    .command(&ppd_replayer::protocol::Command::Resume)
                    .map_err(failure)?;
            }
            let _ = session.quit();
        }
        Combination::Disjunctive | Combination::Linked(_) => {
            // The first global state of each satisfying event is its vector clock; the
            // values there are read from the logs.
            let history = history(ctx, &plan)?;
            for Satisfaction { vclock, .. } in history {
                let reports: Vec<ProcessReport> = vclock
                    .iter()
                    .enumerate()
                    .map(|(i, &events)| {
                        traced_report(ProcessId(i as u32), u64::from(events), vclock.clone())
                    })
                    .collect();
                let state = ctx.halt_state(Some(&plan), Reason::Traced, &reports, None)?;
                lines.push(trace_line(&state, &items));
            }
        }
    }
    print_trace(&lines, json, &plan.text);
    Ok(ExitCode::SUCCESS)
}

/// Process `id` after `events` events in a state `--trace` reads from the logs (no replay
/// holds it there), `vclock` its vector clock when known.
pub(crate) fn traced_report(id: ProcessId, events: u64, vclock: Vec<Tick>) -> ProcessReport {
    ProcessReport {
        id,
        events,
        status: "traced".into(),
        waiting_for: None,
        holds: Vec::new(),
        vclock,
        thread: None,
    }
}

/// One global state `--trace` prints: each process's events, and the `--print` values there.
#[derive(Debug, Serialize)]
pub(crate) struct TraceLine {
    pub(crate) cut: Vec<(String, u64)>,
    pub(crate) values: Vec<(String, serde_json::Value)>,
}

/// Prints the states `--trace` found, as JSON or a line each, and how many satisfied `text`.
pub(crate) fn print_trace(lines: &[TraceLine], json: bool, text: &str) {
    if json {
        output::json(&lines);
        return;
    }
    for line in lines {
        let cut: Vec<String> = line.cut.iter().map(|(p, n)| format!("{p}={n}")).collect();
        let values: Vec<String> = line
            .values
            .iter()
            .map(|(k, v)| format!("{k} = {v}"))
            .collect();
        outln!("[{}] {}", cut.join(" "), values.join(", "));
    }
    eprintln!("ppd: {} states satisfied {text}", lines.len());
}

fn parse_print(ctx: &mut Context, print: &str) -> Result<Vec<PrintItem>, CliError> {
    let mut items = Vec::new();
    for part in print_parts(&ctx.recording, print)? {
        // Refused now rather than printed as null at every state.
        ctx.catalog()?
            .printable(part.id, &part.name)
            .map_err(|e| input(anyhow!("bad --print item `{}`: {e}", part.text)))?;
        items.push(PrintItem {
            text: part.text,
            id: part.id,
            name: part.name,
        });
    }
    Ok(items)
}

/// One item of `--print PROCESS.NAME,...`.
pub(crate) struct PrintPart {
    /// As written.
    pub(crate) text: String,
    /// Its process, by the rule every command uses, and the process's node.
    pub(crate) id: ProcessId,
    pub(crate) node: usize,
    /// The mark label or argument name.
    pub(crate) name: String,
}

/// The items of `--print PROCESS.NAME,...`, their processes found in `recording`.
pub(crate) fn print_parts(recording: &Recording, print: &str) -> Result<Vec<PrintPart>, CliError> {
    print
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|part| {
            let (process, name) = part.split_once('.').ok_or_else(|| {
                input(anyhow!("bad --print item `{part}`: expected PROCESS.NAME"))
            })?;
            let entry = recording
                .resolve_process(process)
                .map_err(|e| input(anyhow!("bad --print item `{part}`: {e}")))?;
            Ok(PrintPart {
                text: part.to_owned(),
                id: entry.id,
                node: entry.node,
                name: name.to_owned(),
            })
        })
        .collect()
}

/// One `PROCESS.NAME` of `--print`, its process resolved by the rule every command uses.
struct PrintItem {
    /// As the user wrote it.
    text: String,
    id: ProcessId,
    name: String,
}

/// What `--print` shows of `name` for process `id` in `state`: the last mark so labelled, or
/// the argument so named of the e-block it is in; null when there is neither.
pub(crate) fn printed_value(state: &HaltState, id: ProcessId, name: &str) -> serde_json::Value {
    state
        .processes
        .iter()
        .find(|p| p.id == id)
        .and_then(|p| {
            p.values
                .get(name)
                .cloned()
                .or_else(|| p.eblock_args.as_ref().and_then(|a| a.get(name).cloned()))
        })
        .unwrap_or(serde_json::Value::Null)
}

fn trace_line(state: &HaltState, items: &[PrintItem]) -> TraceLine {
    let values = items
        .iter()
        .map(|item| (item.text.clone(), printed_value(state, item.id, &item.name)))
        .collect();
    TraceLine {
        cut: state
            .processes
            .iter()
            .map(|p| (p.name.clone(), p.events))
            .collect(),
        values,
    }
}
