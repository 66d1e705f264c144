//! The backward search of a why-query over the dynamic program dependence graph (Miller &
//! Choi §4.2), built incrementally from e-block traces (§5.3).
//!
//! A query starts at the last definition of a place at a point of a process and follows
//! dependences backwards, level by level: a use leads to the place's last definition before
//! it in the instance's trace; a parameter (`%n`, the ENTRY node's values) leads to the
//! caller's argument when the instance is nested, and otherwise to the earlier instance whose
//! postlog left the value (state restoration, §5.7); a received message leads, through a
//! synchronization edge, to the sending statement in the other process; a nested call's
//! result (`%0`) or changed `&mut` argument leads into the callee, a sub-graph node expanded
//! only then; every statement also depends on the branch that chose it (a control edge).
//!
//! The instances a level needs are re-executed together, in one run of the recorded binary,
//! so a query at depth N runs the binary at most N times, and not at all when the traces are
//! cached.
//!
//! Beyond the paper: definitions are matched by place (`bank.accounts[1].balance`, with index
//! variables resolved to their traced values), not by whole variable; a call defines the
//! `&mut` place it was passed only if the callee's postlog shows the place changed.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use ppd_formats::trace::{Captured, Leak, Record, RecordKind, Trace};
use ppd_formats::value::{self, Value};
use ppd_formats::{Event, ProcessId};
use ppd_replayer::predicate::closest;
use serde::Serialize;

use super::place::Place;
use super::point::Point;
use super::store::{InstanceKey, Lookup, TraceStore, Work};
use crate::error::{FlowbackError, Result};

/// How many earlier instances a parameter's value is looked for in, and how many instances a
/// query's target is looked for in.
const WALK_LIMIT: usize = 100_000;
const TARGET_CANDIDATES: usize = 64;
const TARGET_BATCH: usize = 8;
/// How deep index variables are resolved through other index variables.
const INDEX_NESTING: u32 = 4;

/// A why-query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Query {
    /// The process, by name (or `p<id>`).
    pub process: String,
    /// The variable or place.
    pub var: String,
    /// Where in the process's run.
    pub at: Point,
    /// How many dependences to follow from the target.
    pub depth: usize,
}

/// The node types of the dynamic program dependence graph (§4.2), plus values that came from
/// outside traced code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeKind {
    /// A parameter's value on entry (`%n`).
    Entry,
    /// The returned value on exit (`%0`).
    Exit,
    /// A statement: an assignment or a branch condition, a message operation.
    Singular,
    /// A nested e-block call, not re-executed unless the query goes into it.
    Subgraph,
    /// A value from outside the traced code: an untraced caller, a constant, the initial state.
    Outside,
}

/// How a step's parent depends on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Dependence {
    /// The query's answer.
    Target,
    /// The parent's value was computed from this one.
    Data,
    /// The parent ran because of this branch.
    Control,
}

/// What a data dependence went through, when it crossed an instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Via {
    /// A message: a synchronization edge from the sending process.
    Message,
    /// A nested call: into the callee.
    Call,
    /// A parameter: out to the caller.
    Parameter,
    /// The state an earlier instance of the process left (its postlog).
    EarlierInstance,
}

/// One step of an answer: a node of the dependence graph and what it depends on.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Step {
    /// Its number in the answer.
    pub id: usize,
    /// The process's name.
    pub process: String,
    /// The process's id.
    pub pid: u32,
    /// The e-block instance it is in: its e-block.
    pub eblock: Option<String>,
    /// The instance: the index of its entry event.
    pub instance: Option<u64>,
    /// The variable or place it defines, `%n` for parameters, `%0` for returned values.
    pub var: Option<String>,
    /// Its value.
    pub value: Option<String>,
    /// Source file.
    pub file: String,
    /// Source line.
    pub line: u32,
    /// The statement.
    pub text: String,
    /// How the parent depends on it.
    pub kind: Dependence,
    /// Through what, when across instances.
    pub via: Option<Via>,
    /// Its node type.
    pub node: NodeKind,
    /// What kind of trace record it is.
    pub record: Option<RecordKind>,
    /// The log event it corresponds to (messages, calls, inputs).
    pub event: Option<u64>,
    /// More to know.
    pub note: Option<String>,
    /// Already shown as step `see`.
    pub see: Option<usize>,
    /// Its dependences were not followed: the depth limit.
    pub more: bool,
    /// What it depends on.
    pub deps: Vec<Step>,
}

/// A difference re-execution found between an instance's log and its re-execution.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LeakReport {
    /// The process.
    pub process: String,
    /// The e-block.
    pub eblock: String,
    /// Index of the instance's entry event.
    pub instance: u64,
    /// The variable or event.
    pub what: String,
    /// What the log holds.
    pub logged: String,
    /// What re-execution produced.
    pub reproduced: String,
}

/// The answer to a why-query.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Answer {
    /// The process asked about.
    pub process: String,
    /// The variable asked about.
    pub var: String,
    /// The point asked about.
    pub at: String,
    /// The depth asked for.
    pub depth: usize,
    /// The chain, from the target back.
    pub root: Step,
    /// Nondeterminism leaks in the instances the answer used: where they are, the answer may
    /// be wrong.
    pub leaks: Vec<LeakReport>,
    /// What the answer cost.
    pub work: Work,
}

/// Answers `query` on the recording of `store`.
pub fn ask(store: &mut TraceStore<'_>, query: &Query) -> Result<Answer> {
    let mut engine = Engine::new(store);
    let (process, target) = engine.target(query)?;
    let root = engine.chain(target, query.depth)?;
    Ok(Answer {
        process: engine.process_name(process),
        var: query.var.clone(),
        at: query.at.to_string(),
        depth: query.depth,
        root,
        leaks: engine.leak_reports(),
        work: engine.store.work,
    })
}

// ---------------------------------------------------------------------------------------------
// Sites: the nodes of the graph a query visits

/// A node of the dependence graph.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) enum Site {
    /// Record `rec` of an instance's trace, about `place` (its own variable or a part of it).
    Record {
        inst: InstanceKey,
        rec: u32,
        place: Option<Place>,
    },
    /// A nested call (record `rec`) as the definition of `place`, which the callee changed
    /// through its `&mut` parameter (`param`: the place as the callee names it).
    CallOutput {
        inst: InstanceKey,
        rec: u32,
        callee: InstanceKey,
        param: Place,
        place: Place,
    },
    /// A value from outside the traced code.
    Outside(Box<Outside>),
}

/// A value from outside the traced code, and what is known of it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) struct Outside {
    pub(super) process: ProcessId,
    pub(super) inst: Option<InstanceKey>,
    pub(super) var: Option<String>,
    pub(super) value: Option<String>,
    pub(super) file: String,
    pub(super) line: u32,
    pub(super) text: String,
    pub(super) note: String,
}

/// Why a computation cannot go on yet.
pub(super) enum Stall {
    /// It needs these instances' traces.
    Need(BTreeSet<InstanceKey>),
    /// This instance could not be re-executed.
    Failed(InstanceKey, Arc<str>),
    /// Something went wrong.
    Error(FlowbackError),
}

impl From<FlowbackError> for Stall {
    fn from(e: FlowbackError) -> Stall {
        Stall::Error(e)
    }
}

impl From<ppd_formats::FormatError> for Stall {
    fn from(e: ppd_formats::FormatError) -> Stall {
        Stall::Error(e.into())
    }
}

pub(super) type Try<T> = std::result::Result<T, Stall>;

/// An edge to a dependence.
pub(super) type Dep = (Dependence, Option<Via>, Site);

/// An instance's logged arguments and results, decoded.
#[derive(Debug, Default)]
pub(super) struct Logs {
    pub(super) prelog: Vec<(String, Value)>,
    pub(super) postlog: Vec<(String, Value)>,
}

fn decode_map(bytes: &[u8]) -> Vec<(String, Value)> {
    value::map_entries(bytes)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|(name, bytes)| value::decode(&bytes).ok().map(|v| (name, v)))
        .collect()
}

fn decoded(captured: Option<&Captured>) -> Option<Value> {
    match captured? {
        Captured::Value(bytes) => value::decode(bytes).ok(),
        _ => None,
    }
}

/// A captured value as the answer shows it.
pub(super) fn shown(captured: Option<&Captured>) -> Option<String> {
    Some(match captured? {
        Captured::Value(bytes) => value::show_bytes(bytes),
        Captured::Debug(text) => text.clone(),
        Captured::Opaque(ty) => format!("<{ty}>"),
    })
}

fn as_index(v: &Value) -> Option<u64> {
    v.as_u64()
        .or_else(|| v.as_i64().and_then(|i| u64::try_from(i).ok()))
}

/// The part of a record's value `place` names, or the whole value.
pub(super) fn record_value(record: &Record, place: Option<&Place>) -> Option<String> {
    let var = record.var.as_deref().and_then(Place::parse);
    match (place, var) {
        (Some(place), Some(var)) if place.steps.len() > var.steps.len() => Some(
            decoded(record.value.as_ref())
                .and_then(|v| place.select(&var, &v).map(value::show))
                .unwrap_or_else(|| "?".into()),
        ),
        _ => shown(record.value.as_ref()),
    }
}

// ---------------------------------------------------------------------------------------------
// The engine

pub(super) struct Engine<'s, 'r> {
    pub(super) store: &'s mut TraceStore<'r>,
    logs: HashMap<InstanceKey, Arc<Logs>>,
    leaks: BTreeMap<InstanceKey, (String, Vec<Leak>)>,
}

/// A node of the answer while it is being built.
struct Node {
    site: Site,
    parent: Option<usize>,
    kind: Dependence,
    via: Option<Via>,
    see: Option<usize>,
    more: bool,
    children: Vec<usize>,
}

impl<'s, 'r> Engine<'s, 'r> {
    pub(super) fn new(store: &'s mut TraceStore<'r>) -> Engine<'s, 'r> {
        Engine {
            store,
            logs: HashMap::new(),
            leaks: BTreeMap::new(),
        }
    }

    pub(super) fn process_name(&self, process: ProcessId) -> String {
        self.store
            .recording()
            .process(process)
            .map_or_else(|| process.to_string(), |p| p.name.clone())
    }

    /// Runs `f` until it no longer needs traces, fetching what it asks for.
    pub(super) fn settle<T>(&mut self, mut f: impl FnMut(&mut Self) -> Try<T>) -> Result<T> {
        loop {
            match f(self) {
                Ok(v) => return Ok(v),
                Err(Stall::Need(keys)) => self.store.fetch(&keys)?,
                Err(Stall::Failed(key, why)) => {
                    return Err(FlowbackError::Emulation(format!(
                        "{} of {}, entered at event {}: {why}",
                        self.eblock_name(key).unwrap_or_else(|| "an e-block".into()),
                        self.process_name(key.process),
                        key.enter
                    )));
                }
                Err(Stall::Error(e)) => return Err(e),
            }
        }
    }

    /// An instance's trace.
    pub(super) fn trace(&mut self, key: InstanceKey) -> Try<Arc<Trace>> {
        match self.store.trace(key) {
            Lookup::Ready(trace) => {
                if !trace.leaks.is_empty() {
                    self.leaks
                        .entry(key)
                        .or_insert_with(|| (trace.eblock.clone(), trace.leaks.clone()));
                }
                Ok(trace)
            }
            Lookup::Missing => Err(Stall::Need(BTreeSet::from([key]))),
            Lookup::Failed(why) => Err(Stall::Failed(key, why)),
        }
    }

    pub(super) fn eblock_name(&mut self, key: InstanceKey) -> Option<String> {
        let index = self.store.index(key.process).ok()?;
        index
            .instance_at(key.enter)
            .ok()
            .flatten()
            .map(|(_, i)| index.name(&i).to_owned())
    }

    /// An instance's prelog and postlog, from its entry and exit events.
    pub(super) fn logs(&mut self, key: InstanceKey) -> Try<Arc<Logs>> {
        if let Some(logs) = self.logs.get(&key) {
            return Ok(Arc::clone(logs));
        }
        let index = self.store.index(key.process)?;
        let mut logs = Logs::default();
        if let Some((_, instance)) = index.instance_at(key.enter)? {
            if let Event::EblockEnter { prelog, .. } = self.store.event(key.process, key.enter)? {
                logs.prelog = decode_map(&prelog);
            }
            if instance.exit != u64::MAX
                && let Event::EblockExit { postlog, .. } =
                    self.store.event(key.process, instance.exit)?
            {
                logs.postlog = decode_map(&postlog);
            }
        }
        let logs = Arc::new(logs);
        self.logs.insert(key, Arc::clone(&logs));
        Ok(logs)
    }

    fn leak_reports(&self) -> Vec<LeakReport> {
        self.leaks
            .iter()
            .flat_map(|(key, (eblock, leaks))| {
                leaks.iter().map(move |l| LeakReport {
                    process: self.process_name(key.process),
                    eblock: eblock.clone(),
                    instance: key.enter,
                    what: l.what.clone(),
                    logged: l.logged.clone(),
                    reproduced: l.reproduced.clone(),
                })
            })
            .collect()
    }

    // -----------------------------------------------------------------------------------------
    // Definitions

    /// The last definition of `place` in an instance before record `before`.
    pub(super) fn last_def(
        &mut self,
        inst: InstanceKey,
        before: usize,
        place: &Place,
        nesting: u32,
    ) -> Try<Option<Site>> {
        let trace = self.trace(inst)?;
        for ri in (0..before.min(trace.records.len())).rev() {
            let r = &trace.records[ri];
            match r.kind {
                RecordKind::Def | RecordKind::Entry | RecordKind::Return => {
                    let Some(var) = r.var.as_deref().and_then(Place::parse) else {
                        continue;
                    };
                    if var.root != place.root {
                        continue;
                    }
                    let var = self.concretize(inst, ri, &var, nesting)?;
                    if var.overlaps(place) {
                        let refined = if place.is_within(&var) {
                            place.clone()
                        } else {
                            var
                        };
                        return Ok(Some(Site::Record {
                            inst,
                            rec: ri as u32,
                            place: Some(refined),
                        }));
                    }
                }
                RecordKind::Call => {
                    if let Some(site) = self.call_output(inst, &trace, ri, place, nesting)? {
                        return Ok(Some(site));
                    }
                }
                _ => {}
            }
        }
        Ok(None)
    }

    /// `place` with its index variables resolved to their values before record `before`.
    pub(super) fn concretize(
        &mut self,
        inst: InstanceKey,
        before: usize,
        place: &Place,
        nesting: u32,
    ) -> Try<Place> {
        let vars: Vec<String> = place.index_variables().map(str::to_owned).collect();
        if vars.is_empty() {
            return Ok(place.clone());
        }
        let mut values = HashMap::new();
        for var in vars {
            let value = if nesting < INDEX_NESTING {
                self.index_value(inst, before, &var, nesting + 1)?
            } else {
                None
            };
            values.insert(var, value);
        }
        Ok(place.concretize(|v| values.get(v).copied().flatten()))
    }

    fn index_value(
        &mut self,
        inst: InstanceKey,
        before: usize,
        var: &str,
        nesting: u32,
    ) -> Try<Option<u64>> {
        let site = self.last_def(inst, before, &Place::variable(var), nesting)?;
        let Some(Site::Record { rec, .. }) = site else {
            return Ok(None);
        };
        let trace = self.trace(inst)?;
        Ok(decoded(trace.records[rec as usize].value.as_ref()).and_then(|v| as_index(&v)))
    }

    /// A nested call as a definition of `place`: when one of its arguments holds (part of)
    /// `place` and the callee's postlog shows that parameter changed.
    fn call_output(
        &mut self,
        inst: InstanceKey,
        trace: &Trace,
        ri: usize,
        place: &Place,
        nesting: u32,
    ) -> Try<Option<Site>> {
        let r = &trace.records[ri];
        let Some(enter) = r.call else {
            return Ok(None);
        };
        let callee = InstanceKey {
            process: inst.process,
            enter,
        };
        for used in &r.uses {
            let Some(arg) = Place::parse(used) else {
                continue;
            };
            if arg.root != place.root {
                continue;
            }
            let arg = self.concretize(inst, ri, &arg, nesting)?;
            if !arg.overlaps(place) {
                continue;
            }
            let logs = self.logs(callee)?;
            let outputs: Vec<&(String, Value)> =
                logs.postlog.iter().filter(|(n, _)| n != "%0").collect();
            let param = outputs
                .iter()
                .find(|(n, _)| n == arg.last_name())
                .or_else(|| (outputs.len() == 1).then(|| &outputs[0]));
            let Some((param, after)) = param else {
                continue;
            };
            let whole = Place::variable(param);
            let param_place = if place.is_within(&arg) {
                place.rebase(&arg, &whole)
            } else {
                whole.clone()
            };
            let before = logs
                .prelog
                .iter()
                .find(|(n, _)| n == param)
                .and_then(|(_, v)| param_place.select(&whole, v));
            let after = param_place.select(&whole, after);
            if before.is_some() && before == after {
                continue;
            }
            return Ok(Some(Site::CallOutput {
                inst,
                rec: ri as u32,
                callee,
                param: param_place,
                place: place.clone(),
            }));
        }
        Ok(None)
    }

    // -----------------------------------------------------------------------------------------
    // Dependences

    /// What a node depends on.
    pub(super) fn deps(&mut self, site: &Site) -> Try<Vec<Dep>> {
        match site {
            Site::Record { inst, rec, place } => {
                let trace = self.trace(*inst)?;
                let r = &trace.records[*rec as usize];
                let mut deps = match r.kind {
                    RecordKind::Entry => self.entry_source(*inst, &trace, *rec, place.as_ref())?,
                    RecordKind::Recv => self.message_source(r)?,
                    RecordKind::Call => self.returned_by(*inst, r)?,
                    RecordKind::Input => Vec::new(),
                    RecordKind::Def
                    | RecordKind::Branch
                    | RecordKind::Return
                    | RecordKind::Send
                    | RecordKind::Mark => self.data_deps(*inst, &trace, *rec as usize)?,
                };
                if let Some(branch) = r.control {
                    deps.push((
                        Dependence::Control,
                        None,
                        Site::Record {
                            inst: *inst,
                            rec: branch,
                            place: None,
                        },
                    ));
                }
                Ok(deps)
            }
            Site::CallOutput {
                inst,
                rec,
                callee,
                param,
                ..
            } => {
                let end = self.trace(*callee)?.records.len();
                Ok(match self.last_def(*callee, end, param, 0)? {
                    Some(site) => vec![(Dependence::Data, Some(Via::Call), site)],
                    None => {
                        let trace = self.trace(*inst)?;
                        let r = &trace.records[*rec as usize];
                        vec![self.outside(
                            *inst,
                            r,
                            Some(param.to_string()),
                            "changed by the callee in code its trace does not show",
                        )]
                    }
                })
            }
            Site::Outside(_) => Ok(Vec::new()),
        }
    }

    fn outside(&self, inst: InstanceKey, r: &Record, var: Option<String>, note: &str) -> Dep {
        self.outside_with(inst, r, var, None, note)
    }

    fn outside_with(
        &self,
        inst: InstanceKey,
        r: &Record,
        var: Option<String>,
        value: Option<String>,
        note: &str,
    ) -> Dep {
        (
            Dependence::Data,
            None,
            Site::Outside(Box::new(Outside {
                process: inst.process,
                inst: Some(inst),
                var,
                value,
                file: r.file.clone(),
                line: r.line,
                text: r.text.clone(),
                note: note.to_owned(),
            })),
        )
    }

    fn data_deps(&mut self, inst: InstanceKey, trace: &Trace, rec: usize) -> Try<Vec<Dep>> {
        let r = &trace.records[rec];
        // What was passed to a nested call whose result this holds reaches it through the
        // callee (its `%n`), not directly.
        let through_calls: BTreeSet<&String> = r
            .inputs
            .iter()
            .filter_map(|&i| trace.records.get(i as usize))
            .filter(|x| x.kind == RecordKind::Call)
            .flat_map(|x| x.args.iter().flatten())
            .collect();
        let mut deps = Vec::new();
        for used in &r.uses {
            if through_calls.contains(used) {
                continue;
            }
            let Some(place) = Place::parse(used) else {
                continue;
            };
            let place = self.concretize(inst, rec, &place, 0)?;
            match self.last_def(inst, rec, &place, 0)? {
                Some(site) => deps.push((Dependence::Data, None, site)),
                None => deps.push(self.outside(
                    inst,
                    r,
                    Some(used.clone()),
                    "not defined in this e-block instance: a constant, a static or a captured value",
                )),
            }
        }
        for &input in &r.inputs {
            deps.push((
                Dependence::Data,
                None,
                Site::Record {
                    inst,
                    rec: input,
                    place: None,
                },
            ));
        }
        Ok(deps)
    }

    /// Where a parameter's value came from: the caller's argument, or the state an earlier
    /// instance left.
    fn entry_source(
        &mut self,
        inst: InstanceKey,
        trace: &Trace,
        rec: u32,
        place: Option<&Place>,
    ) -> Try<Vec<Dep>> {
        let r = &trace.records[rec as usize];
        let Some(name) = r.var.clone() else {
            return Ok(Vec::new());
        };
        let param = Place::variable(&name);
        let place = place.cloned().unwrap_or_else(|| param.clone());
        let index = self.store.index(inst.process)?;
        let Some((_, instance)) = index.instance_at(inst.enter)? else {
            return Ok(Vec::new());
        };
        if !instance.is_top_level() {
            let parent = InstanceKey {
                process: inst.process,
                enter: index.instance(instance.parent as usize)?.enter,
            };
            let ptrace = self.trace(parent)?;
            let Some(ci) = ptrace
                .records
                .iter()
                .position(|x| x.kind == RecordKind::Call && x.call == Some(inst.enter))
            else {
                return Ok(vec![self.outside(
                    inst,
                    r,
                    Some(place.to_string()),
                    "passed by code of the caller that its trace does not show",
                )]);
            };
            let call = &ptrace.records[ci];
            let chosen = argument_places(call, trace, rec, &place);
            let mut deps = Vec::new();
            for arg in chosen {
                let arg = self.concretize(parent, ci, &arg, 0)?;
                match self.last_def(parent, ci, &arg, 0)? {
                    Some(site) => deps.push((Dependence::Data, Some(Via::Parameter), site)),
                    None => deps.push(self.outside(
                        parent,
                        call,
                        Some(arg.to_string()),
                        "not defined in the caller's instance: a constant, a static or a captured value",
                    )),
                }
            }
            return Ok(deps);
        }
        self.earlier_source(inst, r, &place)
    }

    /// The earlier top-level instance of the process that left `place` with the value it has
    /// on entry to `inst`: the latest one whose postlog has it and whose prelog did not.
    fn earlier_source(&mut self, inst: InstanceKey, r: &Record, place: &Place) -> Try<Vec<Dep>> {
        let whole = Place::variable(&place.root);
        let Some(here) = decoded(r.value.as_ref()).and_then(|v| place.select(&whole, &v).cloned())
        else {
            return Ok(vec![self.outside(
                inst,
                r,
                Some(place.to_string()),
                "passed by code outside e-blocks (its value was not logged in a form ppd can compare)",
            )]);
        };
        let index = self.store.index(inst.process)?;
        let mut logged_before = false;
        for earlier in index.earlier_top_level(inst.enter).take(WALK_LIMIT) {
            let earlier = earlier?;
            let key = InstanceKey {
                process: inst.process,
                enter: earlier.enter,
            };
            let logs = self.logs(key)?;
            let Some((_, after)) = logs.postlog.iter().find(|(n, _)| *n == place.root) else {
                continue;
            };
            logged_before = true;
            let after = place.select(&whole, after);
            if after != Some(&here) {
                let left = after.map_or_else(|| "no such part".into(), value::show);
                return Ok(vec![self.outside(
                    inst,
                    r,
                    Some(place.to_string()),
                    &format!(
                        "changed by code outside e-blocks: {} left it {left} at event {}",
                        index.name(&earlier),
                        earlier.exit
                    ),
                )]);
            }
            let before = logs
                .prelog
                .iter()
                .find(|(n, _)| *n == place.root)
                .and_then(|(_, v)| place.select(&whole, v));
            if before == Some(&here) {
                continue;
            }
            let end = self.trace(key)?.records.len();
            return Ok(match self.last_def(key, end, place, 0)? {
                Some(site) => vec![(Dependence::Data, Some(Via::EarlierInstance), site)],
                None => vec![self.outside(
                    key,
                    r,
                    Some(place.to_string()),
                    "changed by code of this instance that its trace does not show",
                )],
            });
        }
        let eblock = match index.instance_at(inst.enter)? {
            Some((_, i)) => index.name(&i).to_owned(),
            None => "the e-block".to_owned(),
        };
        let note = if logged_before {
            "its initial value, set by code outside e-blocks before the first instance that \
             changed it"
                .to_owned()
        } else {
            format!("passed by the caller of {eblock}, which is not an e-block")
        };
        Ok(vec![self.outside_with(
            inst,
            r,
            Some(place.to_string()),
            Some(value::show(&here)),
            &note,
        )])
    }

    /// The send of a received message, in the sender's instance.
    fn message_source(&mut self, r: &Record) -> Try<Vec<Dep>> {
        let Some(m) = r.message else {
            return Ok(Vec::new());
        };
        let sender = m.sender;
        let index = self.store.index(sender)?;
        let from = self.process_name(sender);
        let untraced = |note: String| {
            vec![(
                Dependence::Data,
                Some(Via::Message),
                Site::Outside(Box::new(Outside {
                    process: sender,
                    inst: None,
                    var: None,
                    value: shown(r.value.as_ref()),
                    file: String::new(),
                    line: 0,
                    text: format!("message {} on {}", m.seq, m.channel),
                    note,
                })),
            )]
        };
        let Some(event) = index.send(m.channel, m.seq)? else {
            return Ok(untraced(format!("sent by {from} outside e-blocks")));
        };
        let Some((_, instance)) = index.innermost_containing(event)? else {
            return Ok(untraced(format!("sent by {from} outside e-blocks")));
        };
        let key = InstanceKey {
            process: sender,
            enter: instance.enter,
        };
        let trace = self.trace(key)?;
        Ok(
            match trace.records.iter().position(|x| x.event == Some(event)) {
                Some(i) => vec![(
                    Dependence::Data,
                    Some(Via::Message),
                    Site::Record {
                        inst: key,
                        rec: i as u32,
                        place: None,
                    },
                )],
                None => untraced(format!(
                    "sent by {from} at event {event}, which the trace of {} does not show",
                    trace.eblock
                )),
            },
        )
    }

    /// What a nested call returned: the callee's `%0`.
    fn returned_by(&mut self, inst: InstanceKey, r: &Record) -> Try<Vec<Dep>> {
        let Some(enter) = r.call else {
            return Ok(Vec::new());
        };
        let callee = InstanceKey {
            process: inst.process,
            enter,
        };
        let trace = self.trace(callee)?;
        Ok(
            match trace
                .records
                .iter()
                .rposition(|x| x.kind == RecordKind::Return)
            {
                Some(i) => vec![(
                    Dependence::Data,
                    Some(Via::Call),
                    Site::Record {
                        inst: callee,
                        rec: i as u32,
                        place: None,
                    },
                )],
                None => {
                    vec![self.outside(inst, r, None, "the callee's trace shows no returned value")]
                }
            },
        )
    }

    // -----------------------------------------------------------------------------------------
    // The target

    fn target(&mut self, query: &Query) -> Result<(ProcessId, Site)> {
        let recording = self.store.recording();
        let process = recording
            .find_process(&query.process)
            .map(|p| p.id)
            .ok_or_else(|| {
                let names = recording.processes().iter().map(|p| p.name.as_str());
                FlowbackError::Query(format!(
                    "no process `{}` in the recording{}",
                    query.process,
                    suggestion(&query.process, names)
                ))
            })?;
        let name = self.process_name(process);
        let mut place = Place::parse(&query.var).ok_or_else(|| {
            FlowbackError::Query(format!(
                "`{}` is not a variable or a place (like `balance` or `bank.accounts[1].balance`)",
                query.var
            ))
        })?;
        let index = self.store.index(process)?;
        if index.is_empty() {
            return Err(FlowbackError::Query(format!(
                "{name} ran no e-block: mark the functions whose values you ask about with \
                 #[ppd::eblock]"
            )));
        }
        let registry = self.store.registry()?;
        let mine: Vec<_> = registry
            .iter()
            .filter(|e| index.names().contains(&e.name))
            .collect();
        // Every e-block defines its returned value, `%0`.
        let known = |e: &ppd_formats::trace::EblockInfo| -> Vec<Place> {
            e.params
                .iter()
                .chain(&e.defines)
                .map(String::as_str)
                .chain(["%0"])
                .filter_map(Place::parse)
                .collect()
        };
        if !mine
            .iter()
            .any(|e| known(e).iter().any(|p| p.root == place.root))
        {
            // `went_negative` for `bank.went_negative`.
            let by_field = mine
                .iter()
                .flat_map(|e| known(e))
                .find(|p| place.steps.is_empty() && p.last_name() == place.root);
            match by_field {
                Some(p) => place = p,
                None => {
                    let names: BTreeSet<String> = mine
                        .iter()
                        .flat_map(|e| e.params.iter().chain(&e.defines).cloned())
                        .collect();
                    return Err(FlowbackError::Query(format!(
                        "no e-block of {name} defines or takes `{}`{}",
                        query.var,
                        suggestion(&query.var, names.iter().map(String::as_str))
                    )));
                }
            }
        }
        let defining: BTreeSet<&str> = mine
            .iter()
            .filter(|e| known(e).iter().any(|p| p.root == place.root))
            .map(|e| e.name.as_str())
            .collect();
        let at = query.at.resolve(recording, process, &index)?;

        // Candidates: the instances open at the point, innermost first (up to the point), then
        // earlier instances of e-blocks that define the variable (whole), latest first.
        let mut candidates: Vec<(InstanceKey, Option<u64>)> = Vec::new();
        let limit = at.map_or(u64::MAX, |n| n + 1);
        if let Some(n) = at
            && let Some((mut i, _)) = index.innermost_containing(n)?
        {
            let mut cutoff = n;
            loop {
                let instance = index.instance(i)?;
                candidates.push((
                    InstanceKey {
                        process,
                        enter: instance.enter,
                    },
                    Some(cutoff),
                ));
                if instance.is_top_level() {
                    break;
                }
                cutoff = instance.enter;
                i = instance.parent as usize;
            }
        }
        let open: BTreeSet<u64> = candidates.iter().map(|(k, _)| k.enter).collect();
        let end = index.entered_before(limit)?;
        for item in index.before(end) {
            let (_, x) = item?;
            if candidates.len() >= TARGET_CANDIDATES + open.len() {
                break;
            }
            if !open.contains(&x.enter) && defining.contains(index.name(&x)) {
                candidates.push((
                    InstanceKey {
                        process,
                        enter: x.enter,
                    },
                    None,
                ));
            }
        }
        // The first candidate usually has the answer: it is re-executed alone.
        let first = candidates.len().min(1);
        let batches = candidates[..first]
            .chunks(1)
            .chain(candidates[first..].chunks(TARGET_BATCH));
        for batch in batches {
            let keys: BTreeSet<InstanceKey> = batch.iter().map(|(k, _)| *k).collect();
            self.store.fetch(&keys)?;
            for &(key, cutoff) in batch {
                let found = self.settle(|engine| {
                    let trace = engine.trace(key)?;
                    let before = match cutoff {
                        None => trace.records.len(),
                        Some(n) => match trace.records.iter().position(|r| r.event == Some(n)) {
                            Some(i) => i + 1,
                            None => trace
                                .records
                                .iter()
                                .position(|r| r.event.is_some_and(|e| e > n))
                                .unwrap_or(trace.records.len()),
                        },
                    };
                    let place = engine.concretize(key, before, &place, 0)?;
                    engine.last_def(key, before, &place, 0)
                })?;
                if let Some(site) = found {
                    return Ok((process, site));
                }
            }
        }
        let before = match at {
            Some(n) => format!(" up to its event {n}"),
            None => String::new(),
        };
        Err(FlowbackError::Query(format!(
            "no e-block instance of {name}{before} defined `{}` (looked at the {} latest that could)",
            query.var,
            candidates.len()
        )))
    }

    // -----------------------------------------------------------------------------------------
    // The chain

    /// The dependences of `target`, followed breadth first to `depth`; the instances each
    /// level needs are re-executed together.
    fn chain(&mut self, target: Site, depth: usize) -> Result<Step> {
        let mut nodes = vec![Node {
            site: target.clone(),
            parent: None,
            kind: Dependence::Target,
            via: None,
            see: None,
            more: false,
            children: Vec::new(),
        }];
        let mut seen: HashMap<Site, usize> = HashMap::from([(target, 0)]);
        let mut level = vec![0usize];
        for _ in 0..depth {
            let mut next = Vec::new();
            let mut todo = level;
            while !todo.is_empty() {
                let mut needed = BTreeSet::new();
                let mut stalled = Vec::new();
                for id in todo {
                    let site = nodes[id].site.clone();
                    let deps = match self.deps(&site) {
                        Ok(deps) => deps,
                        Err(Stall::Need(keys)) => {
                            needed.extend(keys);
                            stalled.push(id);
                            continue;
                        }
                        Err(Stall::Failed(key, why)) => vec![self.failed(key, &why)],
                        Err(Stall::Error(e)) => return Err(e),
                    };
                    // A branch that also controls the parent is shown there already.
                    let inherited = nodes[id]
                        .parent
                        .and_then(|p| self.control_of(&nodes[p].site));
                    for (kind, via, site) in deps {
                        if let (Dependence::Control, Site::Record { inst, rec, .. }) = (kind, &site)
                            && inherited == Some((*inst, *rec))
                        {
                            continue;
                        }
                        let child = nodes.len();
                        let see = seen.get(&site).copied();
                        if see.is_none() {
                            seen.insert(site.clone(), child);
                            next.push(child);
                        }
                        nodes.push(Node {
                            site,
                            parent: Some(id),
                            kind,
                            via,
                            see,
                            more: false,
                            children: Vec::new(),
                        });
                        nodes[id].children.push(child);
                    }
                }
                if !needed.is_empty() {
                    self.store.fetch(&needed)?;
                }
                todo = stalled;
            }
            level = next;
        }
        for id in level {
            nodes[id].more = match &nodes[id].site {
                Site::Outside(_) => false,
                Site::Record { inst, rec, .. } => match self.store.trace(*inst) {
                    Lookup::Ready(t) => t.records[*rec as usize].kind != RecordKind::Input,
                    _ => true,
                },
                Site::CallOutput { .. } => true,
            };
        }
        self.settle(|engine| engine.step(&nodes, 0))
    }

    /// The branch a node's statement is control dependent on, if its trace is at hand.
    fn control_of(&mut self, site: &Site) -> Option<(InstanceKey, u32)> {
        let (inst, rec) = match site {
            Site::Record { inst, rec, .. } | Site::CallOutput { inst, rec, .. } => (*inst, *rec),
            Site::Outside(_) => return None,
        };
        match self.store.trace(inst) {
            Lookup::Ready(t) => t.records[rec as usize].control.map(|c| (inst, c)),
            _ => None,
        }
    }

    fn failed(&mut self, key: InstanceKey, why: &str) -> Dep {
        let eblock = self.eblock_name(key).unwrap_or_default();
        (
            Dependence::Data,
            None,
            Site::Outside(Box::new(Outside {
                process: key.process,
                inst: Some(key),
                var: None,
                value: None,
                file: String::new(),
                line: 0,
                text: format!("{eblock} entered at event {}", key.enter),
                note: format!("could not be re-executed: {why}"),
            })),
        )
    }

    fn step(&mut self, nodes: &[Node], id: usize) -> Try<Step> {
        let node = &nodes[id];
        let mut step = self.describe(&node.site)?;
        step.id = id;
        step.kind = node.kind;
        step.via = node.via;
        step.see = node.see;
        step.more = node.more;
        for &child in &node.children {
            let child = self.step(nodes, child)?;
            step.deps.push(child);
        }
        Ok(step)
    }

    /// A node as the answer shows it.
    pub(super) fn describe(&mut self, site: &Site) -> Try<Step> {
        let blank = |process: ProcessId, name: String| Step {
            id: 0,
            process: name,
            pid: process.0,
            eblock: None,
            instance: None,
            var: None,
            value: None,
            file: String::new(),
            line: 0,
            text: String::new(),
            kind: Dependence::Data,
            via: None,
            node: NodeKind::Singular,
            record: None,
            event: None,
            note: None,
            see: None,
            more: false,
            deps: Vec::new(),
        };
        match site {
            Site::Record { inst, rec, place } => {
                let trace = self.trace(*inst)?;
                let r = &trace.records[*rec as usize];
                let mut step = blank(inst.process, self.process_name(inst.process));
                step.eblock = Some(trace.eblock.clone());
                step.instance = Some(inst.enter);
                step.file = r.file.clone();
                step.line = r.line;
                step.text = r.text.clone();
                step.record = Some(r.kind);
                step.event = r.event;
                step.value = record_value(r, place.as_ref());
                let shown_place = place.as_ref().map(ToString::to_string).or(r.var.clone());
                step.node = node_kind(r.kind);
                if r.kind == RecordKind::Branch {
                    // A `match` arm records its pattern, which the statement shows already.
                    let arm = matches!(decoded(r.value.as_ref()), Some(Value::String(_)));
                    step.var = Some(if arm { "match arm" } else { "condition" }.into());
                    if arm {
                        step.value = None;
                    }
                    return Ok(step);
                }
                step.var = match r.kind {
                    RecordKind::Entry => {
                        let n = trace.records[..=*rec as usize]
                            .iter()
                            .filter(|x| x.kind == RecordKind::Entry)
                            .count();
                        Some(format!("%{n} {}", shown_place.unwrap_or_default()))
                    }
                    RecordKind::Return => Some("%0".into()),
                    RecordKind::Call => Some(format!(
                        "%0 of {}",
                        r.call
                            .and_then(|c| self.eblock_name(InstanceKey {
                                process: inst.process,
                                enter: c
                            }))
                            .unwrap_or_else(|| "a call".into())
                    )),
                    _ => shown_place,
                };
                step.note = match r.kind {
                    RecordKind::Recv => r
                        .message
                        .map(|m| format!("message {} from {}", m.seq, self.process_name(m.sender))),
                    RecordKind::Send => r
                        .message
                        .map(|m| format!("message {} on {}", m.seq, m.channel)),
                    RecordKind::Input => {
                        Some(match r.event.map(|k| self.store.event(inst.process, k)) {
                            Some(Ok(Event::Random { .. })) => {
                                "a random number, from the log".into()
                            }
                            Some(Ok(Event::Clock { .. })) => "a clock reading, from the log".into(),
                            Some(Ok(Event::Atomic { object, .. })) => {
                                format!("the value of atomic {object}, from the log")
                            }
                            Some(Ok(Event::Lock { object, .. })) => {
                                format!("the value under lock {object}, from the log")
                            }
                            _ => "a value from the log".into(),
                        })
                    }
                    _ => None,
                };
                Ok(step)
            }
            Site::CallOutput {
                inst,
                rec,
                callee,
                param,
                place,
            } => {
                let trace = self.trace(*inst)?;
                let r = &trace.records[*rec as usize];
                let logs = self.logs(*callee)?;
                let whole = Place::variable(&param.root);
                let value = logs
                    .postlog
                    .iter()
                    .find(|(n, _)| *n == param.root)
                    .and_then(|(_, v)| param.select(&whole, v))
                    .map(value::show);
                let callee_name = self.eblock_name(*callee).unwrap_or_default();
                let mut step = blank(inst.process, self.process_name(inst.process));
                step.eblock = Some(trace.eblock.clone());
                step.instance = Some(inst.enter);
                step.var = Some(place.to_string());
                step.value = value;
                step.file = r.file.clone();
                step.line = r.line;
                step.text = r.text.clone();
                step.node = NodeKind::Subgraph;
                step.record = Some(RecordKind::Call);
                step.event = r.event;
                step.note = Some(format!(
                    "changed by {callee_name} through `&mut {}`",
                    param.root
                ));
                Ok(step)
            }
            Site::Outside(o) => {
                let mut step = blank(o.process, self.process_name(o.process));
                if let Some(inst) = o.inst {
                    step.eblock = self.eblock_name(inst);
                    step.instance = Some(inst.enter);
                }
                step.var = o.var.clone();
                step.value = o.value.clone();
                step.file = o.file.clone();
                step.line = o.line;
                step.text = o.text.clone();
                step.node = NodeKind::Outside;
                step.note = Some(o.note.clone());
                Ok(step)
            }
        }
    }
}

/// The caller's places that parameter `%n` (Entry record `rec` of the callee's trace) was
/// computed from, `place` (a part of the parameter) rebased onto them when the argument is a
/// variable or place itself. Calls record what each argument was computed from; a call that did
/// not (an e-block called from untraced code inside a traced one) is matched by name.
fn argument_places(call: &Record, callee: &Trace, rec: u32, place: &Place) -> Vec<Place> {
    let param = Place::variable(&place.root);
    let params = callee
        .records
        .iter()
        .filter(|x| x.kind == RecordKind::Entry)
        .count();
    let position = callee.records[..=rec as usize]
        .iter()
        .filter(|x| x.kind == RecordKind::Entry)
        .count()
        - 1;
    if call.args.len() == params {
        let used: Vec<Place> = call.args[position]
            .iter()
            .filter_map(|u| Place::parse(u))
            .collect();
        return match used.as_slice() {
            [one] => vec![place.rebase(&param, one)],
            _ => used,
        };
    }
    let used: Vec<Place> = call.uses.iter().filter_map(|u| Place::parse(u)).collect();
    match used.iter().find(|a| a.last_name() == place.root) {
        Some(arg) => vec![place.rebase(&param, arg)],
        None => used,
    }
}

/// The graph node type of a trace record.
pub(super) fn node_kind(kind: RecordKind) -> NodeKind {
    match kind {
        RecordKind::Entry => NodeKind::Entry,
        RecordKind::Return => NodeKind::Exit,
        RecordKind::Call => NodeKind::Subgraph,
        _ => NodeKind::Singular,
    }
}

fn suggestion<'a>(wanted: &str, known: impl Iterator<Item = &'a str>) -> String {
    let close = closest(wanted, known);
    if close.is_empty() {
        String::new()
    } else {
        format!(" (did you mean {}?)", close.join(", "))
    }
}
