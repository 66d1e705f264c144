//! `ppd replay --stop` and `--to` on a recording of several OS processes: one global state
//! across the nodes.
//!
//! Each node replays alone, from its own logs, so no node waits for another: its socket reads
//! are served from what they logged. `ppd replay` is the global debugger over the nodes' local
//! controllers (Manabe & Imase's split, §2):
//!
//! - A predicate about the processes of one node is evaluated inside that node by Algorithm 1,
//!   as for a recording of one OS process.
//! - A predicate whose processes are in several nodes, and `--first`, are decided by the
//!   global debugger: each node's local controllers replay it to its end in history mode and
//!   report every event at which one of the predicate's simple predicates holds; the first
//!   global state is found from those events and the whole run's vector clocks
//!   (`ppd_replayer::predicate::first_state`).
//!
//! Every other node then goes to the least consistent cut that contains that state — for each
//! of its processes, the events in the causal past of the halted events, read off the
//! analysis's vector clocks, whose socket edges (a read after the write its bytes came from)
//! cross the nodes. No receive of the global state lacks its send; no node runs further than
//! the halt needs. `--to` takes the cut the same way from the listed processes.
//!
//! Where ppd goes beyond the paper: deciding the state before the halting replay costs one
//! extra replay of each node the predicate names, and needs no control message between OS
//! processes. `--trace` over several nodes is decided the same way ([`trace`]); stepping (`-i`)
//! moves from one such global state to another (`debugger::nodes`).

use std::collections::HashMap;
use std::process::ExitCode;

use anyhow::anyhow;
use ppd_flowback::Analysis;
use ppd_flowback::trace::EventRef;
use ppd_formats::integrity::Integrity;
use ppd_formats::recording::Node;
use ppd_formats::{ProcessId, Recording};
use ppd_replayer::debugger::{HaltState, Reason};
use ppd_replayer::predicate::{self, Combination, Predicate, Satisfying};
use ppd_replayer::protocol::{Goal, ProcessReport};
use serde::Serialize;

use super::debugger::{self, Outcome};
use super::replay::{Args, TraceLine, context};
use crate::exit::{CliError, CmdResult, failure, input};
use crate::output;
use crate::output::out;

/// One node's part of the global state.
#[derive(Serialize)]
pub(crate) struct NodeState {
    pub(crate) node: String,
    /// How far its processes were replayed, and why.
    pub(crate) state: HaltState,
}

/// A node's own halt at a predicate about its processes alone: the node, and its state.
pub(crate) type NodeHalt = (usize, HaltState);

/// Where a predicate first holds: the events of the processes it needs (the recording's ids),
/// what holds there, and a node's own halt when the predicate is about that node alone.
pub(crate) type StopOrigin = (Vec<(ProcessId, u64)>, Vec<Holds>, Option<NodeHalt>);

pub(crate) fn run(args: &Args, recording: &Recording, integrity: &Integrity) -> CmdResult {
    let nodes = recording.nodes();
    let analysis = Analysis::open(recording).map_err(failure)?;
    // Where the run must be: processes and how many events each, in the recording's ids.
    let (origin, holds, halted) = match (&args.stop, &args.to) {
        (Some(text), _) => stop_origin(args, recording, integrity, &analysis, text)?,
        (None, Some(cut)) => (parse_global_cut(recording, cut)?, Vec::new(), None),
        // `-i` alone: from the start of the run.
        (None, None) => (Vec::new(), Vec::new(), None),
    };
    let states = drive(
        args,
        recording,
        integrity,
        &analysis,
        &origin,
        halted.as_ref(),
    )?;
    if args.interactive() {
        return debugger::nodes::repl(args, recording, integrity, analysis, states);
    }
    if args.json {
        output::json(&serde_json::json!({ "nodes": states, "holds": holds }));
    } else {
        if let Some((node, _)) = &halted {
            eprintln!(
                "ppd: {} halted where the predicate holds; the other nodes are at the least \
                 consistent state that contains it",
                nodes[*node].name
            );
        } else if !holds.is_empty() {
            let at: Vec<String> = holds
                .iter()
                .map(|h| format!("{} after {} events ({})", h.process, h.events, h.event))
                .collect();
            eprintln!(
                "ppd: the predicate first holds with {}; every node is at the least consistent \
                 state that contains it",
                at.join(", ")
            );
        }
        for s in &states {
            out!("node {}:\n{}\n", s.node, s.state.render());
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Where `--stop TEXT` first holds: the processes and events of the state (in the recording's
/// ids), what holds there, and, for a predicate about one node, that node's own halt.
pub(crate) fn stop_origin(
    args: &Args,
    recording: &Recording,
    integrity: &Integrity,
    analysis: &Analysis,
    text: &str,
) -> Result<StopOrigin, CliError> {
    let nodes = recording.nodes();
    let (combination, parts) = predicate_by_node(recording, text)?;
    match parts.as_slice() {
        [part] if !args.first => {
            // Algorithm 1 inside the one node the predicate is about.
            let goal = Goal::Stop(part.local.clone());
            let node = &nodes[part.node];
            let state = replay_node(args, node, integrity, goal, Some(&part.local))?;
            let origin: Vec<(ProcessId, u64)> = state
                .processes
                .iter()
                .map(|p| (ProcessId(p.id.0 + node.base), p.events))
                .collect();
            Ok((origin, Vec::new(), Some((part.node, state))))
        }
        _ => {
            let first =
                first_global_state(args, recording, integrity, analysis, (&combination, &parts))?;
            let Some((origin, holding)) = first else {
                return Err(failure(anyhow!(
                    "the predicate never holds in this run: {text}"
                )));
            };
            Ok((origin, holding, None))
        }
    }
}

/// Every node replayed to the least consistent cut that contains `origin` (the events of some
/// processes, in the recording's ids); `halted`, a node's own halt, is kept as it is when the
/// cut has it.
pub(crate) fn drive(
    args: &Args,
    recording: &Recording,
    integrity: &Integrity,
    analysis: &Analysis,
    origin: &[(ProcessId, u64)],
    halted: Option<&NodeHalt>,
) -> Result<Vec<NodeState>, CliError> {
    let nodes = recording.nodes();
    let need = least_cut(analysis, origin);
    let mut states = Vec::new();
    for (k, node) in nodes.iter().enumerate() {
        let targets: Vec<(ProcessId, u64)> = recording
            .processes()
            .iter()
            .filter(|p| p.node == k)
            .map(|p| (p.id.local(), need.get(&p.id).copied().unwrap_or(0)))
            .collect();
        if let Some((halted_node, state)) = halted
            && *halted_node == k
            && state
                .processes
                .iter()
                .all(|p| targets.iter().all(|&(id, n)| id != p.id || n <= p.events))
        {
            // The predicate's own halt is in the cut as it is.
            states.push(NodeState {
                node: node.name.clone(),
                state: state.clone(),
            });
            continue;
        }
        let len = targets
            .iter()
            .map(|(id, _)| id.index() + 1)
            .max()
            .unwrap_or(0);
        let mut cut = vec![Some(0); len];
        for (id, n) in targets {
            cut[id.index()] = Some(n);
        }
        let state = replay_node(args, node, integrity, Goal::Cut(cut), None)?;
        states.push(NodeState {
            node: node.name.clone(),
            state,
        });
    }
    Ok(states)
}

/// An event at which the predicate holds in the global state it halts in.
#[derive(Serialize)]
pub(crate) struct Holds {
    /// The process, as the whole recording names it.
    process: String,
    /// Its events in the state: the event is its last.
    events: u64,
    /// The event, in words.
    event: String,
}

/// Where a predicate over several nodes first holds: each process's events in the state, in
/// the recording's ids, and the events it holds at.
type GlobalHalt = (Vec<(ProcessId, u64)>, Vec<Holds>);

/// The simple predicates of a predicate about one node's processes, as that node's logs name
/// them.
struct NodePart {
    /// The node.
    node: usize,
    /// Its simple predicates: the predicate itself when every process is this node's;
    /// otherwise their disjunction (their stable states' conjunction under `==`), which the
    /// node's local controllers evaluate at every event in history mode.
    local: predicate::Resolved,
    /// The number in the whole predicate of each of `local`'s components.
    global: Vec<usize>,
}

/// The predicate `text` split by the nodes its processes are in, in the order they first
/// appear, and how its simple predicates combine.
fn predicate_by_node(
    recording: &Recording,
    text: &str,
) -> Result<(Combination, Vec<NodePart>), CliError> {
    let mut parsed = predicate::parse(text).map_err(input)?;
    let combination = parsed.combination();
    let simultaneous = matches!(parsed, Predicate::Simultaneous(_));
    let mut by_node: Vec<(usize, Vec<usize>, Vec<predicate::Simple>)> = Vec::new();
    for (id, simple) in simples_mut(&mut parsed).into_iter().enumerate() {
        let entry = recording
            .resolve_process(&simple.process)
            .map_err(|e| input(anyhow!("{text}: {e}")))?;
        let prefix = format!("{}/", recording.nodes()[entry.node].name);
        simple.process = entry
            .name
            .strip_prefix(&prefix)
            .unwrap_or(&entry.name)
            .to_owned();
        let at = match by_node.iter().position(|(node, ..)| *node == entry.node) {
            Some(at) => at,
            None => {
                by_node.push((entry.node, Vec::new(), Vec::new()));
                by_node.len() - 1
            }
        };
        by_node[at].1.push(id);
        by_node[at].2.push(simple.clone());
    }
    if by_node.is_empty() {
        return Err(input(anyhow!("{text}: names no process")));
    }
    let whole = by_node.len() == 1;
    let parts = by_node
        .into_iter()
        .map(|(node, global, simples)| {
            let local_predicate = if whole {
                parsed.clone()
            } else if simultaneous {
                Predicate::Simultaneous(simples)
            } else {
                Predicate::Disjunctive(simples)
            };
            let local = Recording::open_node(&recording.nodes()[node].dir)?;
            let catalog = predicate::Catalog::for_predicate(&local, &local_predicate)?;
            let local = local_predicate.resolve(&catalog).map_err(input)?;
            Ok(NodePart {
                node,
                local,
                global,
            })
        })
        .collect::<Result<_, CliError>>()?;
    Ok((combination, parts))
}

/// The first global state of the predicate whose simple predicates combine as `combination`
/// and whose parts are `parts`, decided from the events each node reports
/// ([`reported_by_nodes`]) and the whole run's vector clocks (`predicate::first_state`). The
/// state's cut, and the events the predicate holds at.
fn first_global_state(
    args: &Args,
    recording: &Recording,
    integrity: &Integrity,
    analysis: &Analysis,
    (combination, parts): (&Combination, &[NodePart]),
) -> Result<Option<GlobalHalt>, CliError> {
    let trace = &analysis.trace;
    let (process_of, reported) = reported_by_nodes(args, recording, integrity, analysis, parts)?;
    let Some(first) = predicate::first_state(combination, &process_of, &reported) else {
        return Ok(None);
    };
    let origin = first
        .cut
        .iter()
        .enumerate()
        .map(|(q, &n)| (trace.process(q as u32).id, n))
        .collect();
    let holds = first
        .holding
        .iter()
        .map(|&i| {
            let s = &reported[i];
            let process = trace.process(s.process as u32);
            let at = EventRef::new(s.process as u32, (s.events - 1) as u32);
            Holds {
                process: process.name.clone(),
                events: s.events,
                event: trace.describe(at),
            }
        })
        .collect();
    Ok(Some((origin, holds)))
}

/// Every event at which a part of the predicate holds: each node the predicate names is
/// replayed to its end in history mode, its local controllers reporting every event at which
/// one of its components holds, and each event gets its vector clock in the whole run. The
/// process (an index into the clocks) of each component of the whole predicate, and the
/// events.
fn reported_by_nodes(
    args: &Args,
    recording: &Recording,
    integrity: &Integrity,
    analysis: &Analysis,
    parts: &[NodePart],
) -> Result<(Vec<usize>, Vec<Satisfying>), CliError> {
    let nodes = recording.nodes();
    let (trace, clocks) = (&analysis.trace, &analysis.clocks);
    let index_of = |id: ProcessId| {
        trace.index_of(id).ok_or_else(|| {
            failure(anyhow!(
                "process {id} of the predicate has no log in the recording"
            ))
        })
    };
    let components = parts.iter().map(|p| p.global.len()).sum();
    let mut process_of = vec![0; components];
    let mut reported = Vec::new();
    for part in parts {
        let node = &nodes[part.node];
        let global_id = |local: ProcessId| ProcessId(local.0 + node.base);
        for c in &part.local.components {
            process_of[part.global[c.id]] = index_of(global_id(c.process))? as usize;
        }
        let mut ctx = context(args, Recording::open_node(&node.dir)?, integrity.clone());
        for s in super::replay::history(&mut ctx, &part.local)? {
            let p = index_of(global_id(s.process))?;
            let Ok(event) = u32::try_from(s.event) else {
                continue;
            };
            let at = EventRef::new(p, event);
            if event as usize >= trace.process(p).events.len() {
                return Err(failure(anyhow!(
                    "node {}: its replay reported event {} of {}, which the logs do not have",
                    node.name,
                    s.event,
                    global_id(s.process)
                )));
            }
            reported.push(Satisfying {
                process: p as usize,
                events: s.event + 1,
                components: s.components.iter().map(|&c| part.global[c]).collect(),
                vclock: clocks.vector(at).into_iter().map(u64::from).collect(),
            });
        }
    }
    Ok((process_of, reported))
}

/// `--trace PRED --print EXPR` over the processes of several nodes: every global state where
/// the predicate holds — for a disjunctive or linked one the least consistent cut of each event
/// at which it holds, for a conjunction the least satisfying cut from each state where one of
/// its processes' parts holds (`predicate::conjunction_states`), in the order of their sizes —
/// with the values `--print` names, read from the logs of their nodes at that cut (Manabe &
/// Imase §4, decided as `--stop` is across nodes).
pub(crate) fn trace(
    args: &Args,
    recording: &Recording,
    integrity: &Integrity,
    text: &str,
    print: &str,
) -> CmdResult {
    let (combination, parts) = predicate_by_node(recording, text)?;
    let items = print_items(recording, print)?;
    let nodes = recording.nodes();
    // Each node's recording and catalog, opened once for every state; an item its process
    // never logs is refused now rather than printed as null at every state.
    let mut opened: HashMap<usize, (Recording, predicate::Catalog)> = HashMap::new();
    for item in &items {
        if let std::collections::hash_map::Entry::Vacant(slot) = opened.entry(item.node) {
            let local = Recording::open_node(&nodes[item.node].dir)?;
            let catalog = predicate::Catalog::of(&local).map_err(failure)?;
            slot.insert((local, catalog));
        }
        opened[&item.node]
            .1
            .printable(item.local, &item.name)
            .map_err(|e| input(anyhow!("bad --print item `{}`: {e}", item.text)))?;
    }
    let analysis = Analysis::open(recording).map_err(failure)?;
    let (process_of, reported) = reported_by_nodes(args, recording, integrity, &analysis, &parts)?;
    let cuts: Vec<Vec<u64>> = match predicate::events_satisfying(&combination, &reported) {
        Some(mut states) => {
            states.sort_by_key(|&i| reported[i].vclock.iter().sum::<u64>());
            states
                .into_iter()
                .map(|i| reported[i].vclock.clone())
                .collect()
        }
        None => predicate::conjunction_states(&combination, &process_of, &reported)
            .into_iter()
            .map(|state| state.cut)
            .collect(),
    };
    let trace = &analysis.trace;
    let node_of: HashMap<ProcessId, usize> = recording
        .processes()
        .iter()
        .map(|p| (p.id, p.node))
        .collect();
    let mut lines = Vec::new();
    for cut in &cuts {
        // Each node's state at the cut, built once for the items it has.
        let mut built: HashMap<usize, HaltState> = HashMap::new();
        for (&node, (local, catalog)) in &opened {
            let reports: Vec<ProcessReport> = (0..cut.len())
                .map(|q| (trace.process(q as u32).id, cut[q]))
                .filter(|(id, _)| node_of.get(id) == Some(&node))
                .map(|(id, events)| super::replay::traced_report(id.local(), events, Vec::new()))
                .collect();
            let state = HaltState::build(local, catalog, None, Reason::Traced, &reports, None)
                .map_err(failure)?;
            built.insert(node, state);
        }
        let values = items
            .iter()
            .map(|item| {
                let value =
                    super::replay::printed_value(&built[&item.node], item.local, &item.name);
                (item.text.clone(), value)
            })
            .collect();
        let cut: Vec<(String, u64)> = (0..cut.len())
            .map(|q| (trace.process(q as u32).name.clone(), cut[q]))
            .collect();
        lines.push(TraceLine { cut, values });
    }
    super::replay::print_trace(&lines, args.json, text);
    Ok(ExitCode::SUCCESS)
}

/// One `PROCESS.NAME` of `--print`, its process found in the whole recording.
struct PrintItem {
    text: String,
    node: usize,
    /// The process as its node's own logs number it.
    local: ProcessId,
    name: String,
}

fn print_items(recording: &Recording, print: &str) -> Result<Vec<PrintItem>, CliError> {
    Ok(super::replay::print_parts(recording, print)?
        .into_iter()
        .map(|part| PrintItem {
            text: part.text,
            node: part.node,
            local: part.id.local(),
            name: part.name,
        })
        .collect())
}

fn simples_mut(p: &mut Predicate) -> Vec<&mut predicate::Simple> {
    match p {
        Predicate::Simple(s) => vec![s],
        Predicate::Conjunctive(v) | Predicate::Disjunctive(v) | Predicate::Simultaneous(v) => {
            v.iter_mut().collect()
        }
        Predicate::Linked(stages) => stages.iter_mut().flatten().collect(),
    }
}

/// `PROCESS=EVENTS,...` with processes named as the whole recording names them.
pub(crate) fn parse_global_cut(
    recording: &Recording,
    text: &str,
) -> Result<Vec<(ProcessId, u64)>, CliError> {
    if let Some(which) = text.trim().strip_prefix("halt") {
        return Ok(super::replay::recorded_halt(recording, which)?.cut);
    }
    text.split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|part| {
            let (name, events) = part
                .split_once('=')
                .ok_or_else(|| input(anyhow!("bad cut `{part}`: expected PROCESS=EVENTS")))?;
            let process = recording
                .resolve_process(name.trim())
                .map_err(|e| input(anyhow!("bad cut `{part}`: {e}")))?;
            let events = events
                .trim()
                .parse()
                .map_err(|_| input(anyhow!("bad cut `{part}`: `{events}` is not a number")))?;
            Ok((process.id, events))
        })
        .collect()
}

/// The least consistent cut that contains `origin` (each process after that many events): for
/// every process, the most events of it in the causal past of an origin event, by the
/// happened-before of the whole recording (socket edges across nodes included).
fn least_cut(analysis: &Analysis, origin: &[(ProcessId, u64)]) -> HashMap<ProcessId, u64> {
    let (trace, clocks) = (&analysis.trace, &analysis.clocks);
    let mut need: HashMap<ProcessId, u64> = HashMap::new();
    for &(process, events) in origin {
        let slot = need.entry(process).or_default();
        *slot = (*slot).max(events);
        let (Some(p), Some(last)) = (trace.index_of(process), events.checked_sub(1)) else {
            continue;
        };
        let Ok(last) = u32::try_from(last) else {
            continue;
        };
        let at = EventRef::new(p, last);
        for q in 0..clocks.width() as u32 {
            let before = u64::from(clocks.component(at, q));
            let slot = need.entry(trace.process(q).id).or_default();
            *slot = (*slot).max(before);
        }
    }
    need
}

/// Replays `node` alone until it halts as `goal` says, and its state there.
fn replay_node(
    args: &Args,
    node: &Node,
    integrity: &Integrity,
    goal: Goal,
    plan: Option<&predicate::Resolved>,
) -> Result<HaltState, CliError> {
    let mut ctx = context(args, Recording::open_node(&node.dir)?, integrity.clone());
    let mut session = ctx.start(goal)?;
    let outcome = debugger::wait_halt(&mut ctx, &mut session, plan)?;
    session.quit().map_err(failure)?;
    match outcome {
        Outcome::Halted(state) => Ok(*state),
        Outcome::Other(message) => Err(failure(anyhow!("node {}: {message}", node.name))),
    }
}
