//! `ppd replay -i` on a recording of several OS processes: one global debugger over every
//! node (Manabe & Imase's split, §2 and §5).
//!
//! The debugger holds a global state: for each node, its replay held at that node's part of a
//! consistent cut. Every command names the global state it wants — `step PROCESS` the current
//! one with PROCESS one event further, `goto` a cut, `stop` the first state of a predicate,
//! `back` the state before — and each node is replayed to its part of the least consistent
//! cut that contains it (the analysis's vector clocks, whose socket edges cross the nodes), so
//! a read in one node never stands in the state without the write it read in another: a step
//! of a reader takes its writer's node as far as the write. A node whose part did not change
//! is not replayed again.
//!
//! Where ppd goes beyond the paper: each node replays alone from its own logs, so moving one
//! node never waits for another; the price is that a node whose part changes is replayed from
//! its start (as `back` is inside one node), not stepped in place; and `gdb` replays every
//! node to its part and holds them there, one gdb over all of them.

use std::process::ExitCode;

use anyhow::anyhow;
use ppd_flowback::Analysis;
use ppd_flowback::why::TraceStore;
use ppd_formats::integrity::Integrity;
use ppd_formats::{ProcessId, Recording};
use ppd_replayer::debugger::ProcessState;
use ppd_replayer::predicate::Catalog;
use ppd_replayer::protocol::Goal;

use super::attach::{Request, Tool, attach, attach_every};
use super::commands::{COMMANDS, Verb};
use super::input::{Input, Words};
use super::{Flow, Outcome, changes};
use crate::cmd::halt_nodes::{self, NodeState};
use crate::cmd::replay::{Args, context};
use crate::exit::{CliError, CmdResult, failure};
use crate::output::{self, out, outln};

/// The interactive loop over every node, from the global state `first`.
pub(crate) fn repl(
    args: &Args,
    recording: &Recording,
    integrity: &Integrity,
    analysis: Analysis,
    first: Vec<NodeState>,
) -> CmdResult {
    let words = Catalog::of(recording).map_or_else(|_| Words::default(), |c| Words::of(&c));
    let mut input = Input::open(words);
    let mut debugger = Global {
        args,
        recording,
        integrity,
        analysis,
        states: first,
        earlier: Vec::new(),
    };
    debugger.print_all(false);
    let names: Vec<&str> = COMMANDS.iter().map(|c| c.name).collect();
    outln!(
        "commands: {} (`help` says what each does); {} nodes, one global state",
        names.join(", "),
        recording.nodes().len()
    );
    super::command_loop(&mut input, &mut debugger);
    Ok(ExitCode::SUCCESS)
}

/// The global debugger: the recording, every node's part of the current state, and the cuts
/// of the states before it.
struct Global<'a> {
    args: &'a Args,
    recording: &'a Recording,
    integrity: &'a Integrity,
    analysis: Analysis,
    states: Vec<NodeState>,
    earlier: Vec<Vec<(ProcessId, u64)>>,
}

impl super::Commands for Global<'_> {
    fn run(&mut self, verb: Verb, rest: &str) -> Result<Flow, CliError> {
        self.command(verb, rest)
    }
}

impl Global<'_> {
    fn command(&mut self, verb: Verb, rest: &str) -> Result<Flow, CliError> {
        match verb {
            Verb::Step => self.step(rest)?,
            Verb::Continue => {
                let end: Vec<(ProcessId, u64)> = self
                    .recording
                    .processes()
                    .iter()
                    .map(|p| {
                        let events = self.recording.open_log(p).map(|l| l.event_count())?;
                        Ok((p.id, events))
                    })
                    .collect::<Result<_, CliError>>()?;
                self.go(&end, None)?;
            }
            Verb::Back => match self.earlier.pop() {
                None => outln!("already at the first state of this session"),
                Some(cut) => {
                    let states = self.drive(&cut, None)?;
                    self.show(states);
                }
            },
            Verb::Goto => {
                let cut = halt_nodes::parse_global_cut(self.recording, rest)?;
                self.go(&cut, None)?;
            }
            Verb::Stop => {
                let (origin, _, halted) = halt_nodes::stop_origin(
                    self.args,
                    self.recording,
                    self.integrity,
                    &self.analysis,
                    rest,
                )?;
                self.go(&origin, halted.as_ref())?;
            }
            Verb::Print => self.print(rest)?,
            Verb::Why => self.why(rest)?,
            Verb::Restore => outln!(
                "`restore` works on one node's replay: `ppd replay --only NODE -i` (nodes: {})",
                self.node_names()
            ),
            Verb::Gdb => self.attach(Tool::Gdb, rest)?,
            Verb::Lldb => self.attach(Tool::Lldb, rest)?,
            Verb::Help => super::help(rest),
            Verb::Quit => return Ok(Flow::Quit),
        }
        Ok(Flow::Next)
    }

    fn node_names(&self) -> String {
        let names: Vec<&str> = self
            .recording
            .nodes()
            .iter()
            .map(|n| n.name.as_str())
            .collect();
        names.join(", ")
    }

    /// The current state's cut, in the recording's ids.
    fn cut(&self) -> Vec<(ProcessId, u64)> {
        let nodes = self.recording.nodes();
        self.states
            .iter()
            .zip(nodes)
            .flat_map(|(s, node)| {
                s.state
                    .processes
                    .iter()
                    .map(move |p| (ProcessId(p.id.0 + node.base), p.events))
            })
            .collect()
    }

    /// The process the whole recording names `name`, in the current state, and its node.
    fn process(&self, name: &str) -> Result<(ProcessId, &ProcessState), CliError> {
        let entry = self
            .recording
            .resolve_process(name)
            .map_err(|e| crate::exit::input(anyhow!("{e}")))?;
        let base = self.recording.nodes()[entry.node].base;
        let local = ProcessId(entry.id.0 - base);
        self.states[entry.node]
            .state
            .processes
            .iter()
            .find(|p| p.id == local)
            .map(|p| (entry.id, p))
            .ok_or_else(|| failure(anyhow!("{name} is not in the replayed state")))
    }

    fn step(&mut self, rest: &str) -> Result<(), CliError> {
        if rest.is_empty() {
            outln!(
                "step PROCESS: name the process to step; its node's replay goes one event on, \
                 and any other node as far as that event needs (processes: {})",
                self.recording
                    .processes()
                    .iter()
                    .map(|p| p.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            return Ok(());
        }
        let (id, p) = self.process(rest)?;
        if p.at_end() {
            outln!(
                "{} is at the end of its log ({} events): step another process, or go `back`",
                p.name,
                p.events
            );
            return Ok(());
        }
        let mut origin = self.cut();
        for (q, events) in &mut origin {
            if *q == id {
                *events += 1;
            }
        }
        self.go(&origin, None)
    }

    /// Every node replayed to the least consistent cut that contains `origin`, a node whose
    /// part is unchanged left as it is.
    fn drive(
        &self,
        origin: &[(ProcessId, u64)],
        halted: Option<&halt_nodes::NodeHalt>,
    ) -> Result<Vec<NodeState>, CliError> {
        halt_nodes::drive(
            self.args,
            self.recording,
            self.integrity,
            &self.analysis,
            origin,
            halted,
        )
    }

    /// Moves to the least consistent cut that contains `origin`, remembering the current
    /// state for `back`.
    fn go(
        &mut self,
        origin: &[(ProcessId, u64)],
        halted: Option<&halt_nodes::NodeHalt>,
    ) -> Result<(), CliError> {
        let states = self.drive(origin, halted)?;
        self.earlier.push(self.cut());
        self.show(states);
        Ok(())
    }

    /// Prints what changed in each node, and makes `states` the current state.
    fn show(&mut self, states: Vec<NodeState>) {
        let mut moved = false;
        for (before, after) in self.states.iter().zip(&states) {
            let unchanged = before
                .state
                .processes
                .iter()
                .zip(&after.state.processes)
                .all(|(a, b)| a.id == b.id && a.events == b.events)
                && before.state.processes.len() == after.state.processes.len();
            if !unchanged {
                moved = true;
                out!(
                    "node {}:\n{}",
                    after.node,
                    changes::render(&before.state, &after.state)
                );
            }
        }
        if !moved {
            outln!("nothing moved: every node is where it was");
        }
        if states.iter().all(|s| s.state.at_end()) {
            outln!("the run is over: every process is at the end of its log");
        }
        self.states = states;
    }

    /// `gdb [NODE] [--dry-run] [-- ARGS]`: every node (or NODE) replayed to its part of the
    /// current state and held there, one gdb attached to all of them, one inferior each, with
    /// the thread of the process the predicate holds for (else of the first one held) selected;
    /// `lldb NODE` to one. The replays end when the debugger does.
    fn attach(&self, tool: Tool, rest: &str) -> Result<(), CliError> {
        let request = match Request::parse(tool, rest, true) {
            Ok(request) => request,
            Err(e) => {
                outln!("{e}");
                return Ok(());
            }
        };
        let nodes = self.recording.nodes();
        let chosen: Vec<usize> = match &request.node {
            Some(name) => match nodes.iter().position(|n| &n.name == name) {
                Some(k) => vec![k],
                None => {
                    outln!(
                        "{}: no node {name} (nodes: {})",
                        tool.name(),
                        self.node_names()
                    );
                    return Ok(());
                }
            },
            None if tool == Tool::Lldb => {
                outln!(
                    "lldb debugs one OS process at a time: lldb NODE, one of {} (gdb attaches to \
                     every node at once)",
                    self.node_names()
                );
                return Ok(());
            }
            None => (0..nodes.len()).collect(),
        };
        let mut held = Vec::new();
        let mut targets = Vec::new();
        for k in chosen {
            let part = &self.states[k].state;
            if part.at_end() {
                outln!(
                    "node {}: every process is at the end of its log; nothing to attach to",
                    nodes[k].name
                );
                continue;
            }
            let len = part.processes.iter().map(|p| p.id.index() + 1).max();
            let mut cut = vec![Some(0); len.unwrap_or(0)];
            for p in &part.processes {
                cut[p.id.index()] = Some(p.events);
            }
            let local = Recording::open_node(&nodes[k].dir)?;
            let mut ctx = context(self.args, local, self.integrity.clone());
            let mut session = ctx.start(Goal::Cut(cut))?;
            match super::wait_halt(&mut ctx, &mut session, None)? {
                Outcome::Halted(state) => {
                    let selected = state
                        .processes
                        .iter()
                        .find(|p| !p.holds.is_empty())
                        .or_else(|| state.processes.iter().find(|p| p.status == "held"))
                        .and_then(|p| p.thread);
                    targets.push((session.pid(), selected));
                    held.push(session);
                }
                Outcome::Other(message) => {
                    outln!("node {}: {message}", nodes[k].name);
                    let _ = session.quit();
                }
            }
        }
        match (tool, targets.as_slice()) {
            (_, []) => {}
            (Tool::Lldb, [(pid, thread)]) => {
                attach(tool, *pid, *thread, &request, "the replayed node");
            }
            _ => attach_every(
                &targets,
                &request,
                &format!("{} replayed nodes", targets.len()),
            ),
        }
        for session in held {
            session.quit().map_err(failure)?;
        }
        Ok(())
    }

    fn print_all(&self, json: bool) {
        if json {
            output::json(&self.states);
            return;
        }
        for s in &self.states {
            out!("node {}:\n{}\n", s.node, s.state.render());
        }
    }

    fn print(&self, rest: &str) -> Result<(), CliError> {
        super::print_command(
            rest,
            |json| self.print_all(json),
            |name| self.process(name).map(|(_, p)| p),
        )
    }

    /// `why PROCESS VAR`: the chain behind VAR at the process's current event, followed
    /// through every node of the recording.
    fn why(&self, rest: &str) -> Result<(), CliError> {
        let store = TraceStore::new(self.recording, None);
        super::why_command(
            rest,
            |name| self.process(name).map(|(_, p)| p),
            store,
            self.integrity,
        )
    }
}
