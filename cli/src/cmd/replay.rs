//! `ppd replay`: replay a recording, verify it, halt it at a distributed breakpoint, trace it.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::anyhow;
use ppd_formats::integrity::Integrity;
use ppd_formats::{ProcessId, Recording};
use ppd_replayer::debugger::{HaltState, Launch, ProgramOutput, Session};
use ppd_replayer::predicate::{self, Catalog, Combination, Resolved};
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
    json: bool,
    /// Halt at the first global state satisfying PRED and print it.
    #[arg(long, value_name = "PRED", conflicts_with = "trace")]
    stop: Option<String>,
    /// With a disjunctive --stop: replay twice to halt exactly at a first satisfying state.
    #[arg(long, requires = "stop")]
    first: bool,
    /// Print --print's values at every global state satisfying PRED, without halting.
    #[arg(long, value_name = "PRED", requires = "print")]
    trace: Option<String>,
    /// What --trace prints: comma-separated PROCESS.NAME, NAME a mark label or an argument of
    /// the process's innermost e-block.
    #[arg(long, value_name = "EXPR", requires = "trace")]
    print: Option<String>,
    /// Replay to this consistent global state: PROCESS=EVENTS,... (others stay at 0).
    #[arg(long, value_name = "CUT", conflicts_with_all = ["stop", "trace"])]
    to: Option<String>,
    /// After halting (or from the start), take debugger commands: step, continue, back, ...
    #[arg(short, long)]
    interactive: bool,
    /// Replay this binary instead of the recorded path (it must be the same build).
    #[arg(long, value_name = "PATH")]
    binary: Option<PathBuf>,
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

    pub(crate) fn resolve(&mut self, text: &str) -> Result<Resolved, CliError> {
        let parsed = predicate::parse(text).map_err(input)?;
        parsed.resolve(self.catalog()?).map_err(input)
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
        reason: &str,
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

pub(crate) fn run(args: &Args) -> CmdResult {
    let checked = damage::open(args.rec.as_deref(), args.damage)?;
    let mut ctx = Context {
        recording: checked.recording,
        integrity: checked.integrity,
        catalog: None,
        launch: Launch {
            binary: args.binary.clone(),
            output: if args.json {
                ProgramOutput::ToStderr
            } else {
                ProgramOutput::Inherit
            },
        },
        verify: args.verify,
    };
    if let (Some(pred), Some(print)) = (&args.trace, &args.print) {
        return trace(&mut ctx, pred, print, args.json);
    }
    if let Some(pred) = &args.stop {
        let plan = ctx.resolve(pred)?;
        return stop(&mut ctx, plan, args.first, args.json, args.interactive);
    }
    if let Some(cut) = &args.to {
        let targets = parse_cut(&mut ctx, cut)?;
        let session = ctx.start(Goal::Cut(targets))?;
        return halt_and_show(&mut ctx, session, None, args.json, args.interactive);
    }
    if args.interactive {
        let session = ctx.start(Goal::Hold)?;
        return halt_and_show(&mut ctx, session, None, args.json, true);
    }
    replay_whole(&mut ctx, args.json)
}

/// `PROCESS=EVENTS,...` to per-process targets.
pub(crate) fn parse_cut(ctx: &mut Context, text: &str) -> Result<Vec<u64>, CliError> {
    let n = ctx
        .recording
        .processes()
        .iter()
        .map(|p| p.id.index() + 1)
        .max()
        .unwrap_or(1);
    let mut targets = vec![0u64; n];
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (name, events) = part
            .split_once('=')
            .ok_or_else(|| input(anyhow!("bad cut `{part}`: expected PROCESS=EVENTS")))?;
        let process = ctx
            .recording
            .find_process(name.trim())
            .ok_or_else(|| input(anyhow!("bad cut: no process `{}`", name.trim())))?;
        let events: u64 = events
            .trim()
            .parse()
            .map_err(|_| input(anyhow!("bad cut `{part}`: `{events}` is not a number")))?;
        targets[process.id.index()] = events;
    }
    Ok(targets)
}

#[derive(Debug, Serialize)]
struct ReplaySummary {
    outcome: &'static str,
    events: u64,
    processes: usize,
    seconds: f64,
    verified: bool,
    exit_code: Option<i32>,
    recorded_exit_code: Option<i32>,
    divergence: Option<serde_json::Value>,
    stuck: Vec<serde_json::Value>,
    integrity: Integrity,
}

fn replay_whole(ctx: &mut Context, json: bool) -> CmdResult {
    let started = Instant::now();
    let mut session = ctx.start(Goal::Run)?;
    let recorded_exit_code = ctx.recording.manifest().end.as_ref().map(|e| e.exit_code);
    let mut summary = ReplaySummary {
        outcome: "reproduced",
        events: 0,
        processes: ctx.recording.processes().len(),
        seconds: 0.0,
        verified: ctx.verify,
        exit_code: None,
        recorded_exit_code,
        divergence: None,
        stuck: Vec::new(),
        integrity: ctx.integrity.clone(),
    };
    loop {
        match session.next_report() {
            Ok(Report::Finished { events, .. }) => {
                summary.events = events;
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
    if summary.outcome == "reproduced" {
        // A recording whose processes all ended comes with a program that exits by itself;
        // one cut short by a crash leaves threads held at the end of their logs.
        match session
            .wait_for_exit(Duration::from_secs(5))
            .map_err(failure)?
        {
            Some(status) => summary.exit_code = status.code(),
            None => session.quit().map_err(failure)?,
        }
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

fn print_summary(s: &ReplaySummary) {
    let what = if s.verified {
        "every event and logged value matched the recording"
    } else {
        "every choice matched the recording"
    };
    match s.outcome {
        "reproduced" => eprintln!(
            "ppd: replayed {} events of {} processes in {:.3} s; {what}",
            s.events, s.processes, s.seconds
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
        other => eprintln!("ppd: replay {other} (exit code {:?})", s.exit_code),
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

/// Waits for the session's next halt and prints it (then hands over to the interactive
/// debugger if asked).
fn halt_and_show(
    ctx: &mut Context,
    mut session: Session,
    plan: Option<&Resolved>,
    json: bool,
    interactive: bool,
) -> CmdResult {
    match debugger::wait_halt(ctx, &mut session, plan)? {
        debugger::Outcome::Halted(state) => {
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
                let session = ctx.start(Goal::Cut(cut))?;
                return halt_and_show(ctx, session, Some(&plan), json, interactive);
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
    halt_and_show(ctx, session, Some(&plan), json, interactive)
}

/// The first pass of `--first`: replays to the end recording every event at which a
/// component holds, with its vector clock. The least consistent cut containing such an event
/// is its vector clock; the minimal ones are the first satisfying states (Inf(P)), of which the
/// one with the fewest events is returned.
fn first_disjunctive_cut(ctx: &mut Context, plan: &Resolved) -> Result<Option<Vec<u64>>, CliError> {
    let history = history(ctx, plan)?;
    let leq = |a: &[u64], b: &[u64]| a.iter().zip(b).all(|(x, y)| x <= y);
    let minimal: Vec<&Vec<u64>> = history
        .iter()
        .map(|s| &s.vclock)
        .filter(|vc| {
            !history
                .iter()
                .any(|other| other.vclock != **vc && leq(&other.vclock, vc))
        })
        .collect();
    Ok(minimal
        .into_iter()
        .min_by_key(|vc| vc.iter().sum::<u64>())
        .cloned())
}

/// An event at which a component of the predicate holds.
pub(crate) struct Satisfaction {
    /// The event's vector clock: its least consistent cut.
    pub(crate) vclock: Vec<u64>,
}

/// Replays the whole run in history mode: every event at which a component holds.
pub(crate) fn history(ctx: &mut Context, plan: &Resolved) -> Result<Vec<Satisfaction>, CliError> {
    let mut session = ctx.start(Goal::History(plan.clone()))?;
    let mut satisfied = Vec::new();
    loop {
        match session.next_report() {
            Ok(Report::Satisfied { vclock, .. }) => satisfied.push(Satisfaction { vclock }),
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
            for Satisfaction { vclock } in history {
                let reports: Vec<ProcessReport> = vclock
                    .iter()
                    .enumerate()
                    .map(|(i, &events)| ProcessReport {
                        id: ProcessId(i as u32),
                        events,
                        status: "traced".into(),
                        waiting_for: None,
                        holds: Vec::new(),
                        vclock: vclock.clone(),
                    })
                    .collect();
                let state = ctx.halt_state(Some(&plan), "trace", &reports, None)?;
                lines.push(trace_line(&state, &items));
            }
        }
    }
    if json {
        output::json(&lines);
    } else {
        for line in &lines {
            let cut: Vec<String> = line.cut.iter().map(|(p, n)| format!("{p}={n}")).collect();
            let values: Vec<String> = line
                .values
                .iter()
                .map(|(k, v)| format!("{k} = {v}"))
                .collect();
            outln!("[{}] {}", cut.join(" "), values.join(", "));
        }
        eprintln!("ppd: {} states satisfied {}", lines.len(), plan.text);
    }
    Ok(ExitCode::SUCCESS)
}

#[derive(Debug, Serialize)]
struct TraceLine {
    cut: Vec<(String, u64)>,
    values: Vec<(String, serde_json::Value)>,
}

fn parse_print(ctx: &mut Context, print: &str) -> Result<Vec<(String, String)>, CliError> {
    let mut items = Vec::new();
    for part in print.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (process, name) = part
            .split_once('.')
            .ok_or_else(|| input(anyhow!("bad --print item `{part}`: expected PROCESS.NAME")))?;
        if ctx.recording.find_process(process).is_none() {
            let names: Vec<String> = ctx
                .recording
                .processes()
                .iter()
                .map(|p| p.name.clone())
                .collect();
            return Err(input(anyhow!(
                "bad --print item `{part}`: no process `{process}` (known: {})",
                names.join(", ")
            )));
        }
        items.push((process.to_owned(), name.to_owned()));
    }
    Ok(items)
}

fn trace_line(state: &HaltState, items: &[(String, String)]) -> TraceLine {
    let values = items
        .iter()
        .map(|(process, name)| {
            let p = state
                .processes
                .iter()
                .find(|p| p.name == *process || p.id.to_string() == *process);
            let v = p
                .and_then(|p| {
                    p.values.get(name).cloned().or_else(|| {
                        p.eblock_args
                            .as_ref()
                            .and_then(|a| a.get(name.as_str()).cloned())
                    })
                })
                .unwrap_or(serde_json::Value::Null);
            (format!("{process}.{name}"), v)
        })
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
