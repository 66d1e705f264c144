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

use ppd_formats::eblock_trace::{Captured, EblockTrace, Leak, Record, RecordKind};
use ppd_formats::value::{self, Value};
use ppd_formats::{Event, ObjectId, ProcessId};

use super::answer::{Answer, Dependence, LeakReport, Query, Via};
use super::objects::Objects;
use super::place::Place;
use super::shared::Histories;
use super::store::{InstanceKey, Lookup, TraceStore};
use crate::error::{FlowbackError, Result};

/// How many earlier instances a parameter's value is looked for in.
const WALK_LIMIT: usize = 100_000;
/// How deep index variables are resolved through other index variables.
const INDEX_NESTING: u32 = 4;

/// Answers `query` on the recording of `store`.
pub fn ask(store: &mut TraceStore<'_>, query: &Query) -> Result<Answer> {
    store.repairing(|store| {
        let mut engine = Engine::new(store);
        let (process, target) = engine.target(query)?;
        let steps = engine.chain(target, query.depth)?;
        Ok(Answer {
            process: engine.process_name(process),
            var: query.var.clone(),
            at: query.at.to_string(),
            depth: query.depth,
            steps,
            leaks: engine.leak_reports(),
            races: Vec::new(),
            work: engine.store.work,
        })
    })
}

// ---------------------------------------------------------------------------------------------
// Sites: the nodes of the graph a query visits

/// A node of the dependence graph.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) enum DepNode {
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
    /// An atomic write (a `Publish` record of an instance's trace) whose value another access
    /// read: `value`, since a store's record does not hold it.
    Publish {
        inst: InstanceKey,
        rec: u32,
        value: Option<String>,
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
pub(super) type Dep = (Dependence, Option<Via>, DepNode);

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

pub(super) fn decoded(captured: Option<&Captured>) -> Option<Value> {
    match captured? {
        Captured::Value(bytes) => value::decode(bytes).ok(),
        _ => None,
    }
}

fn as_index(v: &Value) -> Option<u64> {
    v.as_u64()
        .or_else(|| v.as_i64().and_then(|i| u64::try_from(i).ok()))
}

// ---------------------------------------------------------------------------------------------
// The engine

pub(super) struct Engine<'s, 'r> {
    pub(super) store: &'s mut TraceStore<'r>,
    logs: HashMap<InstanceKey, Arc<Logs>>,
    leaks: BTreeMap<InstanceKey, (String, Vec<Leak>)>,
    /// Objects as answers name them, looked up once each.
    objects: Objects<'r>,
    /// Accesses to shared objects, read as queries cross them.
    pub(super) shared: Histories,
    /// The object each node reached through shared memory was reached through.
    pub(super) through: HashMap<DepNode, ObjectId>,
    /// The recording's connections, read when a query first meets a socket read.
    wire: Option<super::wire::Wire>,
}

impl<'s, 'r> Engine<'s, 'r> {
    pub(super) fn new(store: &'s mut TraceStore<'r>) -> Engine<'s, 'r> {
        let objects = Objects::new(store.recording());
        Engine {
            store,
            logs: HashMap::new(),
            leaks: BTreeMap::new(),
            objects,
            shared: Histories::default(),
            through: HashMap::new(),
            wire: None,
        }
    }

    /// An object by the name it was created with (`channel doubled`), else its kind and id.
    pub(super) fn object_name(&self, object: ObjectId) -> String {
        self.objects.label(object)
    }

    /// A value `process` logged, as the answer shows it (a handle as its object).
    pub(super) fn show(&self, process: ProcessId, value: &Value) -> String {
        self.objects.show(process, value)
    }

    /// A value a trace of `process` captured, as the answer shows it.
    pub(super) fn shown(&self, process: ProcessId, captured: Option<&Captured>) -> Option<String> {
        self.objects.shown(process, captured)
    }

    /// The part of a record's value `place` names, or the whole value (a record of a trace of
    /// `process`).
    pub(super) fn record_value(
        &self,
        process: ProcessId,
        record: &Record,
        place: Option<&Place>,
    ) -> Option<String> {
        let var = record.var.as_deref().and_then(Place::parse);
        match (place, var) {
            (Some(place), Some(var)) if place.steps.len() > var.steps.len() => Some(
                decoded(record.value.as_ref())
                    .and_then(|v| place.select(&var, &v).map(|v| self.show(process, v)))
                    .unwrap_or_else(|| "?".into()),
            ),
            _ => self.shown(process, record.value.as_ref()),
        }
    }

    /// An object by its name alone (`account`), else its id: what `via lock ...` says.
    pub(super) fn object_called(&self, object: ObjectId) -> String {
        let label = self.object_name(object);
        match label.split_once(' ') {
            Some((_, name)) => name.to_owned(),
            None => label,
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
                Err(Stall::Failed(key, why)) => return Err(self.not_reexecuted(key, &why)),
                Err(Stall::Error(e)) => return Err(e),
            }
        }
    }

    /// The error of a computation that needs an instance that could not be re-executed.
    pub(super) fn not_reexecuted(&mut self, key: InstanceKey, why: &str) -> FlowbackError {
        if key.is_body() {
            return FlowbackError::Emulation(format!(
                "the body of {} could not be traced: {why}",
                self.process_name(key.process)
            ));
        }
        FlowbackError::Emulation(format!(
            "{} of {}, entered at event {}: {why}",
            self.eblock_name(key).unwrap_or_else(|| "an e-block".into()),
            self.process_name(key.process),
            key.enter
        ))
    }

    /// An instance's trace.
    pub(super) fn trace(&mut self, key: InstanceKey) -> Try<Arc<EblockTrace>> {
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
    ) -> Try<Option<DepNode>> {
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
                        return Ok(Some(DepNode::Record {
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
        let Some(DepNode::Record { rec, .. }) = site else {
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
        trace: &EblockTrace,
        ri: usize,
        place: &Place,
        nesting: u32,
    ) -> Try<Option<DepNode>> {
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
            return Ok(Some(DepNode::CallOutput {
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
    pub(super) fn deps(&mut self, site: &DepNode) -> Try<Vec<Dep>> {
        match site {
            DepNode::Record { inst, rec, place } => {
                let trace = self.trace(*inst)?;
                let r = &trace.records[*rec as usize];
                let mut deps = match r.kind {
                    RecordKind::Entry => self.entry_source(*inst, &trace, *rec, place.as_ref())?,
                    RecordKind::Recv => self.message_source(inst.process, r)?,
                    RecordKind::Call => self.returned_by(*inst, r)?,
                    RecordKind::Input => self.shared_source(*inst, r)?,
                    RecordKind::Join => self.join_source(*inst, r)?,
                    RecordKind::Def
                    | RecordKind::Branch
                    | RecordKind::Return
                    | RecordKind::Send
                    | RecordKind::Mark
                    | RecordKind::Publish => self.data_deps(*inst, &trace, *rec as usize)?,
                };
                deps.extend(control_dep(*inst, r));
                Ok(deps)
            }
            DepNode::Publish { inst, rec, .. } => {
                let trace = self.trace(*inst)?;
                let mut deps = self.data_deps(*inst, &trace, *rec as usize)?;
                deps.extend(control_dep(*inst, &trace.records[*rec as usize]));
                Ok(deps)
            }
            DepNode::CallOutput {
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
            DepNode::Outside(_) => Ok(Vec::new()),
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
            DepNode::Outside(Box::new(Outside {
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

    fn data_deps(&mut self, inst: InstanceKey, trace: &EblockTrace, rec: usize) -> Try<Vec<Dep>> {
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
                None if inst.is_body() => deps.push(self.outside(
                    inst,
                    r,
                    Some(used.clone()),
                    "not defined in this body: captured where the closure was made, a constant or \
                     a static",
                )),
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
                DepNode::Record {
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
        trace: &EblockTrace,
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
            return Ok(self
                .caller_source(inst, trace, rec, &place, parent, &ptrace)?
                .unwrap_or_else(|| {
                    vec![self.outside(
                        inst,
                        r,
                        Some(place.to_string()),
                        "passed by code of the caller that its trace does not show",
                    )]
                }));
        }
        let here = match self.earlier_source(inst, r, &place)? {
            Earlier::Source(deps) => return Ok(deps),
            Earlier::Caller(here) => here,
        };
        // Called from the process's body: the closure its thread was spawned with, or main's.
        if let Some((body, btrace)) = self.body_trace(inst.process)?
            && let Some(deps) = self.caller_source(inst, trace, rec, &place, body, &btrace)?
        {
            return Ok(deps);
        }
        let eblock = match index.instance_at(inst.enter)? {
            Some((_, i)) => index.name(&i).to_owned(),
            None => "the e-block".to_owned(),
        };
        Ok(vec![self.outside_with(
            inst,
            r,
            Some(place.to_string()),
            Some(self.show(inst.process, &here)),
            &format!("passed by the caller of {eblock}, which is not an e-block"),
        )])
    }

    /// Where the caller's trace `ptrace` (of instance `parent`) computed what it passed as
    /// parameter `place` (Entry record `rec` of `inst`'s `trace`); none if that trace does not
    /// show the call.
    fn caller_source(
        &mut self,
        inst: InstanceKey,
        trace: &EblockTrace,
        rec: u32,
        place: &Place,
        parent: InstanceKey,
        ptrace: &EblockTrace,
    ) -> Try<Option<Vec<Dep>>> {
        let Some(ci) = ptrace
            .records
            .iter()
            .position(|x| x.kind == RecordKind::Call && x.call == Some(inst.enter))
        else {
            return Ok(None);
        };
        let call = &ptrace.records[ci];
        // An e-block called from a function the caller's trace does not show (a helper that
        // is not an e-block) is recorded at the caller's statement, with the helper's
        // announcement or none: not this call's. In an e-block's trace an unannounced call is
        // matched by its arguments' names (`argument_places`); a body calls too many helpers
        // for that to be safe.
        let announced_this = call.callee.as_ref().map(|callee| {
            let name = &trace.eblock;
            name == callee || name.ends_with(&format!("::{callee}"))
        });
        match announced_this {
            Some(false) => return Ok(None),
            None if parent.is_body() => return Ok(None),
            _ => {}
        }
        let chosen = argument_places(call, trace, rec, place);
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
        Ok(Some(deps))
    }

    /// The trace of `process`'s body (`ppd_replayer::body`), or none when it could not be
    /// traced: its thread was not spawned with a closure `#[ppd::main]` compiles twice, or the
    /// replay did not reach its end.
    pub(super) fn body_trace(
        &mut self,
        process: ProcessId,
    ) -> Try<Option<(InstanceKey, Arc<EblockTrace>)>> {
        let key = InstanceKey::body(process);
        match self.trace(key) {
            Ok(trace) => Ok(Some((key, trace))),
            Err(Stall::Failed(..)) => Ok(None),
            Err(other) => Err(other),
        }
    }

    /// The earlier top-level instance of the process that left `place` with the value it has
    /// on entry to `inst`: the latest one whose postlog has it and whose prelog did not.
    fn earlier_source(&mut self, inst: InstanceKey, r: &Record, place: &Place) -> Try<Earlier> {
        let whole = Place::variable(&place.root);
        let Some(here) = decoded(r.value.as_ref()).and_then(|v| place.select(&whole, &v).cloned())
        else {
            return Ok(Earlier::Source(vec![self.outside(
                inst,
                r,
                Some(place.to_string()),
                "passed by code outside e-blocks (its value was not logged in a form ppd can compare)",
            )]));
        };
        let index = self.store.index(inst.process)?;
        let mut logged_before = false;
        for earlier in index.state_sources(inst.enter, place).take(WALK_LIMIT) {
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
                let left =
                    after.map_or_else(|| "no such part".into(), |v| self.show(inst.process, v));
                return Ok(Earlier::Source(vec![self.outside(
                    inst,
                    r,
                    Some(place.to_string()),
                    &format!(
                        "changed by code outside e-blocks: {} left it {left} at event {}",
                        index.name(&earlier),
                        earlier.exit
                    ),
                )]));
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
            return Ok(Earlier::Source(
                match self.last_def(key, end, place, 0)? {
                    Some(site) => vec![(Dependence::Data, Some(Via::EarlierInstance), site)],
                    None => vec![self.outside(
                        key,
                        r,
                        Some(place.to_string()),
                        "changed by code of this instance that its trace does not show",
                    )],
                },
            ));
        }
        if !logged_before {
            return Ok(Earlier::Caller(here));
        }
        Ok(Earlier::Source(vec![self.outside_with(
            inst,
            r,
            Some(place.to_string()),
            Some(self.show(inst.process, &here)),
            "its initial value, set by code outside e-blocks before the first instance that \
             changed it",
        )]))
    }

    /// The send of a received message, in the sender's instance.
    fn message_source(&mut self, receiver: ProcessId, r: &Record) -> Try<Vec<Dep>> {
        let Some(mut m) = r.message else {
            return Ok(Vec::new());
        };
        // A socket read names its own socket and stream offset: the write its bytes came from
        // is found through the other end of the connection. A datagram's send is found by its
        // addresses and bytes. Its record names the reader as the sender (re-execution cannot
        // know the writer); a channel receive names the sending process, which is another one
        // but for a process's messages to itself: only then is the logged event read.
        let received = match r.event {
            Some(k) if m.sender == receiver => match self.store.event(receiver, k)? {
                Event::NetRead {
                    socket,
                    offset,
                    data,
                    ..
                } => Some((socket, Some((offset, data.len() as u64)), k)),
                Event::NetRecvFrom { socket, .. } => Some((socket, None, k)),
                _ => None,
            },
            _ => None,
        };
        if let Some((socket, bytes, k)) = received {
            if self.wire.is_none() {
                self.wire = Some(super::wire::Wire::load(self.store.recording())?);
            }
            let wire = self.wire.as_ref().expect("loaded above");
            let source = match bytes {
                Some((offset, len)) => wire.source(socket, offset, len),
                None => wire.datagram_source(receiver, k),
            };
            match source {
                Some(source) => {
                    m.channel = source.socket;
                    m.seq = source.seq;
                    m.sender = source.process;
                }
                None => {
                    return Ok(vec![(
                        Dependence::Data,
                        Some(Via::Message),
                        DepNode::Outside(Box::new(Outside {
                            process: m.sender,
                            inst: None,
                            var: None,
                            value: self.shown(receiver, r.value.as_ref()),
                            file: String::new(),
                            line: 0,
                            text: format!("read from {}", self.object_name(socket)),
                            note: "the bytes came from a peer outside the recording".into(),
                        })),
                    )]);
                }
            }
        }
        let sender = m.sender;
        let index = self.store.index(sender)?;
        let from = self.process_name(sender);
        let channel = self.object_name(m.channel);
        let received = self.shown(receiver, r.value.as_ref());
        let untraced = |note: String| {
            vec![(
                Dependence::Data,
                Some(Via::Message),
                DepNode::Outside(Box::new(Outside {
                    process: sender,
                    inst: None,
                    var: None,
                    value: received.clone(),
                    file: String::new(),
                    line: 0,
                    text: format!("message {} on {channel}", m.seq),
                    note,
                })),
            )]
        };
        let inside = match index.send(m.channel, m.seq)? {
            Some(event) => index
                .innermost_containing(event)?
                .map(|(_, instance)| (event, instance)),
            None => None,
        };
        let Some((event, instance)) = inside else {
            // Sent by the process's body, if it can be traced.
            if let Some((body, trace)) = self.body_trace(sender)?
                && let Some(i) = trace.records.iter().position(|x| {
                    x.kind == RecordKind::Send
                        && x.message
                            .is_some_and(|s| s.channel == m.channel && s.seq == m.seq)
                })
            {
                return Ok(vec![(
                    Dependence::Data,
                    Some(Via::Message),
                    DepNode::Record {
                        inst: body,
                        rec: i as u32,
                        place: None,
                    },
                )]);
            }
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
                    DepNode::Record {
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

    /// What a join got: what the joined thread's body returned, from its trace.
    fn join_source(&mut self, inst: InstanceKey, r: &Record) -> Try<Vec<Dep>> {
        let Some(child) = r.joined else {
            return Ok(Vec::new());
        };
        let returned = match self.body_trace(child)? {
            Some((body, trace)) => trace
                .records
                .iter()
                .rposition(|x| x.kind == RecordKind::Return)
                .map(|i| (body, i)),
            None => None,
        };
        Ok(match returned {
            Some((body, i)) => vec![(
                Dependence::Data,
                Some(Via::Join),
                DepNode::Record {
                    inst: body,
                    rec: i as u32,
                    place: None,
                },
            )],
            None => vec![self.outside(
                inst,
                r,
                None,
                &format!(
                    "returned by the body of {}, which could not be traced",
                    self.process_name(child)
                ),
            )],
        })
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
                    DepNode::Record {
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
}

/// Where a top-level instance's parameter came from, as the earlier instances tell it.
enum Earlier {
    /// Its dependences: an earlier instance's write, or code outside e-blocks.
    Source(Vec<Dep>),
    /// No earlier instance logged it: the caller passed it, with this value.
    Caller(Value),
}

/// The branch a record's statement ran under, as a dependence.
fn control_dep(inst: InstanceKey, r: &Record) -> Option<Dep> {
    r.control.map(|branch| {
        (
            Dependence::Control,
            None,
            DepNode::Record {
                inst,
                rec: branch,
                place: None,
            },
        )
    })
}

/// The caller's places that parameter `%n` (Entry record `rec` of the callee's trace) was
/// computed from, `place` (a part of the parameter) rebased onto them when the argument is a
/// variable or place itself. Calls record what each argument was computed from; a call that did
/// not (an e-block called from untraced code inside a traced one) is matched by name.
fn argument_places(call: &Record, callee: &EblockTrace, rec: u32, place: &Place) -> Vec<Place> {
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
