//! `ppd replay --stop` and `--to` on a recording of several OS processes: one global state
//! across the nodes.
//!
//! Each node replays alone, from its own logs, so no algorithm has to run across OS processes:
//! the predicate's node is replayed to the state where it holds (Manabe & Imase's Algorithm 1,
//! inside that node, as for a recording of one OS process), and every other node to the least
//! consistent cut that contains that state — for each of their processes, the events in the
//! causal past of the halted events, read off the analysis's vector clocks, whose socket edges
//! (a read after the write its bytes came from) cross the nodes. No receive of the global state
//! lacks its send; no node runs further than the halt needs. `--to` takes the cut the same way
//! from the listed processes.
//!
//! A predicate whose processes are in several nodes is refused: finding its first global state
//! needs the controllers of all the nodes' processes to cooperate, and each node's run in its
//! own replay.

use std::collections::HashMap;
use std::process::ExitCode;

use anyhow::anyhow;
use ppd_flowback::Analysis;
use ppd_flowback::trace::EventRef;
use ppd_formats::integrity::Integrity;
use ppd_formats::recording::Node;
use ppd_formats::{ProcessId, Recording};
use ppd_replayer::debugger::HaltState;
use ppd_replayer::predicate::{self, Predicate};
use ppd_replayer::protocol::Goal;
use serde::Serialize;

use super::debugger::{self, Outcome};
use super::replay::{Args, context};
use crate::exit::{CliError, CmdResult, failure, input};
use crate::output;
use crate::output::out;

/// One node's part of the global state.
#[derive(Serialize)]
struct NodeState {
    node: String,
    /// How far its processes were replayed, and why.
    state: HaltState,
}

pub(crate) fn run(args: &Args, recording: &Recording, integrity: &Integrity) -> CmdResult {
    let nodes = recording.nodes();
    // Where the run must be: processes and how many events each, in the recording's ids.
    let (origin, halted) = match (&args.stop, &args.to) {
        (Some(text), _) => {
            let (node, local) = predicate_of_one_node(recording, text)?;
            let goal = Goal::Stop(local.clone());
            let state = replay_node(args, &nodes[node], integrity, goal, Some(&local))?;
            let base = nodes[node].base;
            let origin: Vec<(ProcessId, u64)> = state
                .processes
                .iter()
                .map(|p| (ProcessId(p.id.0 + base), p.events))
                .collect();
            (origin, Some((node, state)))
        }
        (None, Some(cut)) => (parse_global_cut(recording, cut)?, None),
        (None, None) => unreachable!("called for --stop or --to"),
    };
    let need = least_cut(recording, &origin)?;

    let mut states = Vec::new();
    for (k, node) in nodes.iter().enumerate() {
        let targets: Vec<(ProcessId, u64)> = recording
            .processes()
            .iter()
            .filter(|p| p.node == k)
            .map(|p| (p.id.local(), need.get(&p.id).copied().unwrap_or(0)))
            .collect();
        if let Some((halted_node, state)) = &halted
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

    if args.json {
        output::json(&serde_json::json!({ "nodes": states }));
    } else {
        if let Some((node, _)) = &halted {
            eprintln!(
                "ppd: {} halted where the predicate holds; the other nodes are at the least \
                 consistent state that contains it",
                nodes[*node].name
            );
        }
        for s in &states {
            out!("node {}:\n{}\n", s.node, s.state.render());
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The node every process of the predicate `text` is in, and the predicate with its processes
/// named as that node's own logs name them.
fn predicate_of_one_node(
    recording: &Recording,
    text: &str,
) -> Result<(usize, predicate::Resolved), CliError> {
    let mut parsed = predicate::parse(text).map_err(input)?;
    let mut node = None;
    for simple in simples_mut(&mut parsed) {
        let entry = recording
            .resolve_process(&simple.process)
            .map_err(|e| input(anyhow!("{text}: {e}")))?;
        match node {
            None => node = Some(entry.node),
            Some(k) if k != entry.node => {
                return Err(input(anyhow!(
                    "{text}: its processes are in two OS processes ({} and {}); halting at a \
                     predicate across OS processes is not supported yet: name processes of \
                     one node",
                    recording.nodes()[k].name,
                    recording.nodes()[entry.node].name
                )));
            }
            Some(_) => {}
        }
        let prefix = format!("{}/", recording.nodes()[entry.node].name);
        simple.process = entry
            .name
            .strip_prefix(&prefix)
            .unwrap_or(&entry.name)
            .to_owned();
    }
    let node = node.ok_or_else(|| input(anyhow!("{text}: names no process")))?;
    let local = Recording::open_node(&recording.nodes()[node].dir)?;
    let catalog = predicate::Catalog::for_predicate(&local, &parsed)?;
    let resolved = parsed.resolve(&catalog).map_err(input)?;
    Ok((node, resolved))
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
fn parse_global_cut(recording: &Recording, text: &str) -> Result<Vec<(ProcessId, u64)>, CliError> {
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
fn least_cut(
    recording: &Recording,
    origin: &[(ProcessId, u64)],
) -> Result<HashMap<ProcessId, u64>, CliError> {
    let analysis = Analysis::open(recording).map_err(failure)?;
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
    Ok(need)
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
