//! The interactive global debugger: step a halted replay, continue it to the end, halt it
//! elsewhere, go back to an earlier state (by replaying to it: Manabe & Imase §5.2 without
//! checkpoints), and ask why a variable has its value where a process is now.
//!
//! The debugger stays on a state until the user quits: at the end of the run too, where the
//! replayed program has ended and the state is read from the logs, so that `back`, `goto`,
//! `why` and `print` still work there. A command that needs the replay running again (`step`
//! after a failure) first replays to the current state.

pub(super) mod attach;
mod changes;
mod commands;
pub(super) mod history;
pub(super) mod input;
pub(super) mod nodes;

use std::process::ExitCode;

use anyhow::anyhow;
use clap::Parser;
use ppd_flowback::why::{Point, Query, TraceStore};
use ppd_replayer::debugger::{HaltState, ProcessState, Reason, Session};
use ppd_replayer::predicate::Resolved;
use ppd_replayer::protocol::{Command, Goal, Report};

use crate::cmd::races::classify;
use crate::cmd::replay::{Context, parse_cut};
use crate::cmd::why;
use crate::exit::{CliError, CmdResult, failure};
use crate::output::{self, out, outln};
use attach::{Request, Tool, attach};
use commands::{COMMANDS, Operands, Verb};
use input::{Input, Words};

/// How waiting for a halt ended.
pub(crate) enum Outcome {
    /// Every process is held: the state.
    Halted(Box<HaltState>),
    /// Something else: what to tell the user.
    Other(String),
}

/// How waiting for the replay ended, the end of the run included.
enum Ending {
    /// Every process is held.
    Halted(Box<HaltState>),
    /// The run is over: no process can move any more.
    Over { state: Box<HaltState>, events: u64 },
    /// The goal cannot be reached: why.
    Unreachable(String),
    /// Something else: what to tell the user.
    Other(String),
}

/// Waits until the replay halts, or says why it will not.
pub(crate) fn wait_halt(
    ctx: &mut Context,
    session: &mut Session,
    plan: Option<&Resolved>,
) -> Result<Outcome, CliError> {
    Ok(match wait(ctx, session, plan)? {
        Ending::Halted(state) => Outcome::Halted(state),
        Ending::Over { events, .. } => {
            Outcome::Other(format!("the run ended ({events} events) without halting"))
        }
        Ending::Unreachable(reason) => Outcome::Other(match plan {
            Some(_) => format!("the predicate never holds in this run: {reason}"),
            None => reason,
        }),
        Ending::Other(message) => Outcome::Other(message),
    })
}

/// Waits until the replay halts or the run is over, or says why neither happens.
fn wait(
    ctx: &mut Context,
    session: &mut Session,
    plan: Option<&Resolved>,
) -> Result<Ending, CliError> {
    loop {
        let report = match session.next_report() {
            Ok(r) => r,
            Err(ppd_replayer::debugger::DebugError::Ended { status }) => {
                return Ok(Ending::Other(format!("the program ended ({status})")));
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
                return Ok(Ending::Halted(Box::new(state)));
            }
            Report::Unsatisfiable { reason } => return Ok(Ending::Unreachable(reason)),
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
                return Ok(Ending::Other(format!(
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
                return Ok(Ending::Other(format!(
                    "replay cannot make progress: {}",
                    waits.join("; ")
                )));
            }
            Report::Finished { events, processes } => {
                let state = ctx.halt_state(plan, Reason::Over, &processes, None)?;
                return Ok(Ending::Over {
                    state: Box::new(state),
                    events,
                });
            }
            Report::Ready { .. } | Report::Satisfied { .. } => {}
        }
    }
}

/// Whether the loop goes on.
enum Flow {
    Next,
    Quit,
}

/// The interactive loop, from a halted state.
pub(crate) fn repl(
    ctx: &mut Context,
    session: Session,
    plan: Option<Resolved>,
    first: Box<HaltState>,
) -> CmdResult {
    let mut input = Input::open(Words::of(ctx.catalog()?));
    input.now_at(&first);
    let mut debugger = Debugger {
        ctx,
        session: Some(session),
        plan,
        current: first,
        over: false,
        earlier: Vec::new(),
    };
    let names: Vec<&str> = COMMANDS.iter().map(|c| c.name).collect();
    outln!(
        "commands: {} (`help` says what each does)",
        names.join(", ")
    );
    command_loop(&mut input, &mut debugger);
    if let Some(session) = debugger.session.take() {
        session.quit().map_err(failure)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// What the command loop drives: the debugger of one node's replay, or the global one.
trait Commands {
    /// Runs one command.
    fn run(&mut self, verb: Verb, rest: &str) -> Result<Flow, CliError>;

    /// After each command: tells completion where the replay is now.
    fn after(&self, _input: &mut Input) {}
}

/// Reads commands until `quit` or the end of the input, running each; a misspelt one or one
/// with operands it does not take is said so, an error reported, and the loop goes on.
fn command_loop(input: &mut Input, debugger: &mut impl Commands) {
    while let Some(line) = input.line() {
        let line = line.trim();
        let (word, rest) = line
            .split_once(char::is_whitespace)
            .map_or((line, ""), |(w, r)| (w, r.trim()));
        if word.is_empty() {
            continue;
        }
        let spec = match commands::lookup(word) {
            Ok(spec) => spec,
            Err(message) => {
                outln!("{message}");
                continue;
            }
        };
        if spec.operands == Operands::Nothing && !rest.is_empty() {
            outln!("`{}` takes nothing after it", spec.name);
            continue;
        }
        match debugger.run(spec.verb, rest) {
            Ok(Flow::Next) => {}
            Ok(Flow::Quit) => break,
            Err(e) => report_error(e),
        }
        debugger.after(input);
    }
}

/// `print [PROCESS] [json]`: the whole state (`all`, told whether as JSON), or one process
/// of it, as `process` finds it by name.
fn print_command<'s>(
    rest: &str,
    all: impl FnOnce(bool),
    process: impl FnOnce(&str) -> Result<&'s ProcessState, CliError>,
) -> Result<(), CliError> {
    let mut words: Vec<&str> = rest.split_whitespace().collect();
    let json = words.last() == Some(&"json");
    if json {
        words.pop();
    }
    match words.as_slice() {
        [] => all(json),
        [name] => {
            let p = process(name)?;
            if json {
                output::json(p);
            } else {
                out!("{}", p.render());
            }
        }
        _ => outln!("print takes one process at most: print [PROCESS] [json]"),
    }
    Ok(())
}

/// `why PROCESS VAR [...]`: the chain behind VAR at the process's current event, the process
/// found by name by `process`, the answer traced through `store`.
fn why_command<'s>(
    rest: &str,
    process: impl FnOnce(&str) -> Result<&'s ProcessState, CliError>,
    mut store: TraceStore<'_>,
    integrity: &ppd_formats::integrity::Integrity,
) -> Result<(), CliError> {
    let args = match WhyArgs::try_parse_from(rest.split_whitespace()) {
        Ok(args) => args,
        Err(e) => {
            out!("{}", e.render());
            return Ok(());
        }
    };
    let p = process(&args.process)?;
    let Some(last) = p.last_event else {
        outln!(
            "{} has not executed an event yet: none of its variables has a value to explain",
            p.name
        );
        return Ok(());
    };
    let (query, format) = args.at(last);
    // A nondeterminism leak is in the answer printed; the session goes on.
    why::answer(&mut store, &query, format, integrity)?;
    Ok(())
}

pub(crate) fn report_error(e: CliError) {
    match e {
        CliError::Input(e) | CliError::Failure(e) => outln!("{e:#}"),
    }
}

/// The events each process has executed in `state`: its cut.
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

/// What the debugger says when no process has anything left to replay.
fn run_over(state: &HaltState) -> String {
    let short: Vec<String> = state
        .processes
        .iter()
        .filter(|p| !p.at_end())
        .map(|p| format!("{} after {} of {} events", p.name, p.events, p.logged))
        .collect();
    if short.is_empty() {
        "the run is over: every process is at the end of its log (`back`, `goto` and `stop` \
         go to an earlier state, `quit` leaves)"
            .to_owned()
    } else {
        format!(
            "the run is over, but not every process reached the end of its log: {}",
            short.join(", ")
        )
    }
}

/// `why`'s arguments in the debugger: `ppd why`'s, with the point the current state.
#[derive(Debug, Parser)]
#[command(
    name = "why",
    no_binary_name = true,
    about = "The chain that gave VAR its value at PROCESS's current event"
)]
pub(crate) struct WhyArgs {
    /// The process (by name).
    pub(crate) process: String,
    /// The variable or place (`balance`, `bank.accounts[1].balance`).
    pub(crate) var: String,
    /// How many dependences to follow back from the variable.
    #[arg(long, value_name = "N", default_value_t = why::DEFAULT_DEPTH)]
    pub(crate) depth: usize,
    /// Print JSON.
    #[arg(long, conflicts_with = "dot")]
    pub(crate) json: bool,
    /// Print a Graphviz graph.
    #[arg(long)]
    pub(crate) dot: bool,
}

impl WhyArgs {
    /// The query at event `last` of the process, and how its answer is printed.
    pub(crate) fn at(self, last: u64) -> (Query, why::Format) {
        let format = self.format();
        let query = Query {
            process: self.process,
            var: self.var,
            at: Point::Event(last),
            depth: self.depth,
        };
        (query, format)
    }

    /// How the answer is printed.
    fn format(&self) -> why::Format {
        if self.json {
            why::Format::Json
        } else if self.dot {
            why::Format::Dot
        } else {
            why::Format::Text
        }
    }
}

/// Where the replay arrived.
struct Arrival {
    state: Box<HaltState>,
    /// The run is over there: no process can move any more.
    over: bool,
}

/// A debugging session: the replay, the state it is in, and the states before it.
struct Debugger<'a> {
    ctx: &'a mut Context,
    /// The replayed program, held at `current`; none once the run is over (the program has
    /// ended) or after the replay failed.
    session: Option<Session>,
    /// The predicate the session halts at, if any.
    plan: Option<Resolved>,
    current: Box<HaltState>,
    /// Whether the run is over at `current`: no process can move any more.
    over: bool,
    /// The cuts of the states before the current one, the latest last (`back`).
    earlier: Vec<Vec<u64>>,
}

impl Commands for Debugger<'_> {
    fn run(&mut self, verb: Verb, rest: &str) -> Result<Flow, CliError> {
        self.command(verb, rest)
    }

    fn after(&self, input: &mut Input) {
        input.now_at(&self.current);
    }
}

impl Debugger<'_> {
    fn command(&mut self, verb: Verb, rest: &str) -> Result<Flow, CliError> {
        match verb {
            Verb::Step => self.step(rest)?,
            Verb::Continue => self.continue_to_end()?,
            Verb::Back => self.back()?,
            Verb::Goto => {
                let cut = parse_cut(self.ctx, rest)?;
                let arrival = self.replay_to(Goal::Cut(cut), self.plan.clone().as_ref())?;
                self.moved_to(arrival);
            }
            Verb::Stop => {
                let plan = self.ctx.resolve(rest)?;
                let arrival = self.replay_to(Goal::Stop(plan.clone()), Some(&plan))?;
                out!("{}", arrival.state.render());
                self.plan = Some(plan);
                self.earlier.push(cut_of(&self.current));
                self.current = arrival.state;
                self.over = arrival.over;
            }
            Verb::Print => self.print(rest)?,
            Verb::Why => self.why(rest)?,
            Verb::Restore => self.restore(rest)?,
            Verb::Gdb => self.attach(Tool::Gdb, rest)?,
            Verb::Lldb => self.attach(Tool::Lldb, rest)?,
            Verb::Help => help(rest),
            Verb::Quit => return Ok(Flow::Quit),
        }
        Ok(Flow::Next)
    }

    /// The process `name` names, as it is in the current state.
    fn process(&self, name: &str) -> Result<&ProcessState, CliError> {
        let id = ppd_flowback::why::find_process(&self.ctx.recording, name).map_err(classify)?;
        self.current
            .processes
            .iter()
            .find(|p| p.id == id)
            .ok_or_else(|| failure(anyhow!("{name} is not in the replayed state")))
    }

    /// Whether no process has anything left to replay.
    fn at_end(&self) -> bool {
        self.over || self.current.at_end()
    }

    fn step(&mut self, rest: &str) -> Result<(), CliError> {
        if self.at_end() {
            outln!("{}", run_over(&self.current));
            return Ok(());
        }
        let process = if rest.is_empty() {
            None
        } else {
            let p = self.process(rest)?;
            if p.at_end() {
                outln!(
                    "{} is at the end of its log ({} events): step another process, or go `back`",
                    p.name,
                    p.events
                );
                return Ok(());
            }
            Some(p.id)
        };
        self.live()?;
        let session = self.session.as_mut().expect("made live");
        session
            .command(&Command::Step { process })
            .map_err(failure)?;
        let ending = wait(self.ctx, session, self.plan.as_ref());
        let state = self.arrived(ending)?;
        self.moved_to(state);
        Ok(())
    }

    fn continue_to_end(&mut self) -> Result<(), CliError> {
        if self.at_end() {
            outln!("{}", run_over(&self.current));
            return Ok(());
        }
        self.live()?;
        let session = self.session.as_mut().expect("made live");
        session.command(&Command::Continue).map_err(failure)?;
        let ending = wait(self.ctx, session, self.plan.as_ref());
        let state = self.arrived(ending)?;
        self.moved_to(state);
        Ok(())
    }

    fn back(&mut self) -> Result<(), CliError> {
        let Some(cut) = self.earlier.pop() else {
            outln!("already at the first state of this session");
            return Ok(());
        };
        let goal = Goal::Cut(cut.iter().copied().map(Some).collect());
        match self.replay_to(goal, self.plan.clone().as_ref()) {
            Ok(state) => {
                self.show(state);
                Ok(())
            }
            Err(e) => {
                self.earlier.push(cut);
                Err(e)
            }
        }
    }

    fn print(&self, rest: &str) -> Result<(), CliError> {
        print_command(
            rest,
            |json| {
                if json {
                    output::json(&self.current);
                } else {
                    out!("{}", self.current.render());
                }
            },
            |name| self.process(name),
        )
    }

    fn why(&self, rest: &str) -> Result<(), CliError> {
        let store = TraceStore::new(&self.ctx.recording, self.ctx.launch.binary.clone());
        why_command(rest, |name| self.process(name), store, &self.ctx.integrity)
    }

    fn restore(&self, rest: &str) -> Result<(), CliError> {
        let p = self.process(rest)?;
        let Some(last) = p.last_event else {
            outln!("{} has not executed an event yet", p.name);
            return Ok(());
        };
        let state = ppd_flowback::why::restore::state_at(&self.ctx.recording, p.id, Some(last))
            .map_err(classify)?;
        why::print_state(&state);
        Ok(())
    }

    /// `gdb|lldb [--dry-run] [-- ARGS]`: attaches the debugger to the replayed program, held
    /// at the current state, with the thread of the process the predicate holds for (else of
    /// the first one held) selected in its own code's frame.
    fn attach(&mut self, tool: Tool, rest: &str) -> Result<(), CliError> {
        let request = match Request::parse(tool, rest, false) {
            Ok(request) => request,
            Err(e) => {
                outln!("{e}");
                return Ok(());
            }
        };
        if self.over {
            outln!(
                "the run is over: the replayed program has ended, and {} has nothing to attach \
                 to (back or goto first)",
                tool.name()
            );
            return Ok(());
        }
        self.live()?;
        let session = self.session.as_ref().expect("made live");
        let processes = &self.current.processes;
        let selected = processes
            .iter()
            .find(|p| !p.holds.is_empty())
            .or_else(|| processes.iter().find(|p| p.status == "held"));
        attach(
            tool,
            session.pid(),
            selected.and_then(|p| p.thread),
            &request,
            "the replayed program",
        );
        Ok(())
    }

    /// Makes sure a replay is held at the current state, replaying to it if none is; the
    /// state is then the new replay's (the same cut, in that program's threads).
    fn live(&mut self) -> Result<(), CliError> {
        if self.session.is_none() {
            let goal = Goal::Cut(cut_of(&self.current).into_iter().map(Some).collect());
            self.current = self.replay_to(goal, self.plan.clone().as_ref())?.state;
        }
        Ok(())
    }

    /// Ends the replay running (if any) and replays again from the start to `goal`.
    fn replay_to(&mut self, goal: Goal, plan: Option<&Resolved>) -> Result<Arrival, CliError> {
        if let Some(old) = self.session.take() {
            let _ = old.quit();
        }
        let stop = matches!(goal, Goal::Stop(_));
        let mut session = self.ctx.start(goal)?;
        let ending = wait(self.ctx, &mut session, plan).map(|ending| match ending {
            Ending::Unreachable(reason) if stop => {
                Ending::Other(format!("the predicate never holds in this run: {reason}"))
            }
            other => other,
        });
        self.session = Some(session);
        self.arrived(ending)
    }

    /// The state the replay arrived at; the replay is dropped when the run is over or it
    /// failed (a later command replays to the current state again).
    fn arrived(&mut self, ending: Result<Ending, CliError>) -> Result<Arrival, CliError> {
        let outcome = match ending {
            Ok(Ending::Halted(state)) => return Ok(Arrival { state, over: false }),
            Ok(Ending::Over { state, .. }) => Ok(Arrival { state, over: true }),
            Ok(Ending::Unreachable(message) | Ending::Other(message)) => {
                Err(failure(anyhow!(message)))
            }
            Err(e) => Err(e),
        };
        if let Some(session) = self.session.take() {
            let _ = session.quit();
        }
        outcome
    }

    /// Moves on to where the replay arrived, remembering the current state for `back`.
    fn moved_to(&mut self, arrival: Arrival) {
        self.earlier.push(cut_of(&self.current));
        self.show(arrival);
    }

    /// Prints what changed from the current state to where the replay arrived, which becomes
    /// the current state.
    fn show(&mut self, arrival: Arrival) {
        let Arrival { state, over } = arrival;
        out!("{}", changes::render(&self.current, &state));
        if over || state.at_end() {
            outln!("{}", run_over(&state));
        }
        self.current = state;
        self.over = over;
    }
}

fn help(rest: &str) {
    if rest.is_empty() {
        outln!("{}", commands::help());
        return;
    }
    match commands::lookup(rest) {
        Ok(spec) => outln!("{}", commands::help_for(spec)),
        Err(message) => outln!("{message}"),
    }
}
