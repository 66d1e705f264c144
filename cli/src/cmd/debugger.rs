//! The interactive global debugger: step a halted replay, continue it, halt it elsewhere, go
//! back to an earlier state (by replaying to it: Manabe & Imase §5.2 without checkpoints).

use std::io::{BufRead, IsTerminal, Write};
use std::process::ExitCode;

use anyhow::anyhow;
use ppd_replayer::debugger::{HaltState, Reason, Session};
use ppd_replayer::predicate::Resolved;
use ppd_replayer::protocol::{Command, Goal, Report};

use crate::cmd::replay::{Context, parse_cut};
use crate::exit::{CliError, CmdResult, failure};
use crate::output::{out, outln};

/// How waiting for a halt ended.
pub(crate) enum Outcome {
    /// Every process is held: the state.
    Halted(Box<HaltState>),
    /// Something else: what to tell the user.
    Other(String),
}

/// Waits until the replay halts, or says why it will not.
pub(crate) fn wait_halt(
    ctx: &mut Context,
    session: &mut Session,
    plan: Option<&Resolved>,
) -> Result<Outcome, CliError> {
    loop {
        let report = match session.next_report() {
            Ok(r) => r,
            Err(ppd_replayer::debugger::DebugError::Ended { status }) => {
                return Ok(Outcome::Other(format!("the program ended ({status})")));
            }
            Err(e) => return Err(failure(e)),
        };
        match report {
            Report::Halted {
                reason,
                processes,
                latency_ns,
            } => {
                let state = ctx.halt_state(plan, Reason::Halted(reason), &processes, latency_ns)?;
                return Ok(Outcome::Halted(Box::new(state)));
            }
            Report::Unsatisfiable { reason } => {
                return Ok(Outcome::Other(match plan {
                    Some(_) => format!("the predicate never holds in this run: {reason}"),
                    None => reason,
                }));
            }
            Report::Diverged {
                process,
                event,
                expected,
                happened,
            } => {
                let name = ctx
                    .recording
                    .process(process)
                    .map_or_else(|| process.to_string(), |p| p.name.clone());
                return Ok(Outcome::Other(format!(
                    "replay diverged in {name} at event {event}: expected {expected}; \
                     happened {happened}"
                )));
            }
            Report::Stuck { processes } => {
                let waits: Vec<String> = processes
                    .iter()
                    .filter_map(|p| {
                        p.waiting_for
                            .as_ref()
                            .map(|w| format!("{} waits for {w}", p.id))
                    })
                    .collect();
                return Ok(Outcome::Other(format!(
                    "replay cannot make progress: {}",
                    waits.join("; ")
                )));
            }
            Report::Finished { events, .. } => {
                return Ok(Outcome::Other(format!(
                    "the run ended ({events} events) without halting"
                )));
            }
            Report::Ready { .. } | Report::Satisfied { .. } => {}
        }
    }
}

const HELP: &str = "\
commands:
  step [PROCESS]   execute the next event of PROCESS (and what it waits for), or of any process
  continue         run to the end of the recording
  stop PRED        replay again from the start to the first state satisfying PRED
  goto CUT         replay again to the consistent state CUT (PROCESS=EVENTS,...)
  back             replay again to the previous halted state
  state [json]     print the current state
  restore PROCESS  the values PROCESS's e-blocks last logged before the current state
  quit             end the replay";

/// Reads commands from a terminal (with line editing) or from a pipe.
enum Input {
    Terminal(Box<rustyline::DefaultEditor>),
    Pipe(std::io::StdinLock<'static>),
}

impl Input {
    fn open() -> Input {
        if std::io::stdin().is_terminal()
            && let Ok(editor) = rustyline::DefaultEditor::new()
        {
            return Input::Terminal(Box::new(editor));
        }
        Input::Pipe(std::io::stdin().lock())
    }

    fn line(&mut self) -> Option<String> {
        match self {
            Input::Terminal(editor) => {
                let line = editor.readline("(ppd) ").ok()?;
                let _ = editor.add_history_entry(line.as_str());
                Some(line)
            }
            Input::Pipe(stdin) => {
                out!("(ppd) ");
                let _ = std::io::stdout().flush();
                let mut line = String::new();
                match stdin.read_line(&mut line) {
                    Ok(0) | Err(_) => None,
                    Ok(_) => Some(line),
                }
            }
        }
    }
}

fn cut_of(state: &HaltState) -> Vec<u64> {
    let n = state
        .processes
        .iter()
        .map(|p| p.id.index() + 1)
        .max()
        .unwrap_or(0);
    let mut cut = vec![0; n];
    for p in &state.processes {
        cut[p.id.index()] = p.events;
    }
    cut
}

/// The interactive loop, from a halted state.
pub(crate) fn repl(
    ctx: &mut Context,
    mut session: Session,
    mut plan: Option<Resolved>,
    first: Box<HaltState>,
) -> CmdResult {
    let mut history = vec![cut_of(&first)];
    let mut current = first;
    let mut input = Input::open();
    outln!("{HELP}");
    while let Some(line) = input.line() {
        let line = line.trim();
        let (word, rest) = line
            .split_once(' ')
            .map_or((line, ""), |(w, r)| (w, r.trim()));
        let result: Result<Option<Box<HaltState>>, CliError> = match word {
            "" => continue,
            "help" | "?" => {
                outln!("{HELP}");
                continue;
            }
            "quit" | "q" | "exit" => break,
            "state" => {
                if rest == "json" {
                    crate::output::json(&current);
                } else {
                    out!("{}", current.render());
                }
                continue;
            }
            "restore" => {
                match ctx.recording.resolve_process(rest) {
                    Ok(p) => {
                        let events = current
                            .processes
                            .iter()
                            .find(|s| s.id == p.id)
                            .map_or(0, |s| s.events);
                        match events.checked_sub(1) {
                            None => outln!("{} has not executed an event yet", p.name),
                            Some(last) => {
                                match ppd_flowback::why::restore::state_at(
                                    &ctx.recording,
                                    p.id,
                                    Some(last),
                                ) {
                                    Ok(state) => crate::cmd::why::print_state(&state),
                                    Err(e) => outln!("ppd: {e}"),
                                }
                            }
                        }
                    }
                    Err(e) => outln!("{e}"),
                }
                continue;
            }
            "step" | "s" => {
                let process = if rest.is_empty() {
                    None
                } else {
                    match ctx.recording.resolve_process(rest) {
                        Ok(p) => Some(p.id),
                        Err(e) => {
                            outln!("{e}");
                            continue;
                        }
                    }
                };
                session
                    .command(&Command::Step { process })
                    .map_err(failure)
                    .and_then(|()| halted(ctx, &mut session, plan.as_ref()))
            }
            "continue" | "c" => {
                session.command(&Command::Continue).map_err(failure)?;
                match wait_halt(ctx, &mut session, plan.as_ref())? {
                    Outcome::Other(message) => outln!("{message}"),
                    Outcome::Halted(state) => out!("{}", state.render()),
                }
                break;
            }
            "stop" => match ctx.resolve(rest) {
                Ok(new_plan) => {
                    let _ = session.quit();
                    session = ctx.start(Goal::Stop(new_plan.clone()))?;
                    plan = Some(new_plan);
                    halted(ctx, &mut session, plan.as_ref())
                }
                Err(e) => Err(e),
            },
            "goto" | "back" => {
                let cut = if word == "back" {
                    if history.len() < 2 {
                        outln!("already at the first state of this session");
                        continue;
                    }
                    history.pop();
                    history
                        .pop()
                        .expect("two states")
                        .into_iter()
                        .map(Some)
                        .collect()
                } else {
                    match parse_cut(ctx, rest) {
                        Ok(c) => c,
                        Err(e) => {
                            report_error(e);
                            continue;
                        }
                    }
                };
                let _ = session.quit();
                session = ctx.start(Goal::Cut(cut))?;
                halted(ctx, &mut session, plan.as_ref())
            }
            other => {
                outln!("unknown command `{other}`; `help` lists them");
                continue;
            }
        };
        match result {
            Ok(Some(state)) => {
                out!("{}", state.render());
                history.push(cut_of(&state));
                current = state;
            }
            Ok(None) => break,
            Err(e) => report_error(e),
        }
    }
    session.quit().map_err(failure)?;
    Ok(ExitCode::SUCCESS)
}

fn report_error(e: CliError) {
    match e {
        CliError::Input(e) | CliError::Failure(e) => outln!("{e:#}"),
    }
}

/// Waits for the next halt; `None` when the replay cannot halt any more.
fn halted(
    ctx: &mut Context,
    session: &mut Session,
    plan: Option<&Resolved>,
) -> Result<Option<Box<HaltState>>, CliError> {
    match wait_halt(ctx, session, plan)? {
        Outcome::Halted(state) => Ok(Some(state)),
        Outcome::Other(message) => Err(failure(anyhow!(message))),
    }
}
