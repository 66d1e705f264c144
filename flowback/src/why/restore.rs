//! State restoration and what-if (Miller & Choi §5.7).
//!
//! The state of a process at a point is rebuilt from its logs alone, by accumulating them: each
//! e-block entry logged its arguments (prelog) and each exit its results and final `&mut`
//! arguments (postlog), so the latest logged value of each name, up to the point, is what the
//! process held there. Nothing is re-executed.
//!
//! A what-if re-executes one instance from its prelog with an argument replaced and compares
//! what it produces with the postlog. Where the changed argument sends the instance down a path
//! the log does not have (another message, another receive), the re-execution stops there and
//! says so: the log cannot tell what the rest of the run would have done.

use std::collections::BTreeMap;

use ppd_formats::value;
use ppd_formats::{Event, ProcessId, Recording};
use ppd_replayer::emulate::OUTCOME;
use serde::Serialize;

use super::did_you_mean;
use super::engine::Engine;
use super::objects::Objects;
use super::place::Place;
use super::store::{InstanceKey, TraceStore};
use crate::error::{FlowbackError, Result};

/// A value in a restored state.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RestoredValue {
    /// The argument's name (`bank`, `self`, `%0`).
    pub name: String,
    /// Its value.
    pub value: String,
    /// The same, as JSON.
    pub json: serde_json::Value,
    /// The e-block whose log holds it.
    pub eblock: String,
    /// Whether it was logged on entry (an argument of an instance still open at the point) or
    /// on exit (a result or final `&mut` argument).
    pub logged_on: LoggedOn,
    /// The event that logged it.
    pub event: u64,
}

/// Where a restored value was logged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LoggedOn {
    /// The entry of an instance (its prelog).
    Entry,
    /// The exit of an instance (its postlog).
    Exit,
}

/// A process's state at a point, restored from its logs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RestoredState {
    /// The process.
    pub process: String,
    /// The last event included.
    pub at_event: Option<u64>,
    /// The e-block instances open at the point, outermost first.
    pub open: Vec<String>,
    /// The latest logged value of each name.
    pub values: Vec<RestoredValue>,
}

/// The state of `process` right after event `at` (the end of the run when `None`).
pub fn state_at(
    recording: &Recording,
    process: ProcessId,
    at: Option<u64>,
) -> Result<RestoredState> {
    let entry = recording
        .process(process)
        .ok_or_else(|| FlowbackError::Query(format!("no process {process} in the recording")))?;
    let reader = recording.open_log(entry)?;
    let mut latest: BTreeMap<String, RestoredValue> = BTreeMap::new();
    let mut open: Vec<String> = Vec::new();
    let mut last = None;
    let objects = Objects::new(recording);
    let mut take = |bytes: &[u8], eblock: &str, logged_on: LoggedOn, event: u64| {
        for (name, bytes) in value::map_entries(bytes).unwrap_or_default() {
            let Ok(v) = value::decode(&bytes) else {
                continue;
            };
            latest.insert(
                name.clone(),
                RestoredValue {
                    name,
                    value: objects.show(process, &v),
                    json: objects.json(process, &v),
                    eblock: eblock.to_owned(),
                    logged_on,
                    event,
                },
            );
        }
    };
    for item in reader.events() {
        let (k, event) = item?;
        if at.is_some_and(|n| k > n) {
            break;
        }
        last = Some(k);
        match &event {
            Event::EblockEnter { eblock, prelog, .. } => {
                take(prelog, eblock, LoggedOn::Entry, k);
                open.push(eblock.to_string());
            }
            Event::EblockExit { eblock, postlog } => {
                take(postlog, eblock, LoggedOn::Exit, k);
                open.pop();
            }
            // Only e-blocks log values to restore.
            _ => {}
        }
    }
    Ok(RestoredState {
        process: entry.name.clone(),
        at_event: last,
        open,
        values: latest.into_values().collect(),
    })
}

/// One output of a what-if.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WhatIfOutput {
    /// `%0` or a `&mut` argument.
    pub name: String,
    /// What the recorded run produced.
    pub recorded: String,
    /// What the changed run produced, when it ran to the end.
    pub what_if: Option<String>,
}

/// What re-executing an instance with changed arguments shows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WhatIf {
    /// The process.
    pub process: String,
    /// The e-block.
    pub eblock: String,
    /// The instance: the index of its entry event.
    pub instance: u64,
    /// The arguments changed: name, recorded value, value tried.
    pub changed: Vec<(String, String, String)>,
    /// Its outputs, recorded and changed.
    pub outcomes: Vec<WhatIfOutput>,
    /// Where the changed run left the recorded path, if it did: it stopped there.
    pub left_the_log: Option<String>,
    /// How the instance ended, recorded and changed, when either panicked: `panics: "message"
    /// at file:line`, `returns VALUE`, or `no longer panics: returns VALUE`.
    pub ending: Option<(String, String)>,
}

/// Re-executes the instance at `inst` with the arguments in `changes` (name, JSON value)
/// replaced.
pub fn what_if(
    store: &mut TraceStore<'_>,
    inst: InstanceKey,
    changes: &[(String, value::Value)],
) -> Result<WhatIf> {
    let mut engine = Engine::new(store);
    let eblock = engine.eblock_name(inst).ok_or_else(|| {
        FlowbackError::Query(format!(
            "no e-block instance entered at event {}",
            inst.enter
        ))
    })?;
    let logs = engine.settle(|e| e.logs(inst))?;
    let mut overrides = Vec::new();
    let mut changed = Vec::new();
    for (name, given) in changes {
        let Some((_, recorded)) = logs.prelog.iter().find(|(n, _)| n == name) else {
            let known = logs.prelog.iter().map(|(n, _)| n.as_str());
            return Err(FlowbackError::Query(format!(
                "{eblock} has no argument `{name}`{}",
                did_you_mean(name, known)
            )));
        };
        let bytes = value::encode_value(given);
        changed.push((
            name.clone(),
            engine.show(inst.process, recorded),
            engine.show(inst.process, given),
        ));
        overrides.push((name.clone(), bytes));
    }
    let trace = engine.store.what_if(inst, overrides)?;
    // A value given that is not of the argument's type is the user's to correct: the program
    // could not even start the changed run.
    if let Some((name, given, leak)) = changes.iter().find_map(|(name, given)| {
        trace
            .leaks
            .iter()
            .find(|l| ppd_replayer::emulate::is_undecodable_argument(&l.reproduced, name))
            .map(|l| (name, given, l))
    }) {
        let recorded = logs
            .prelog
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| value::show(v))
            .unwrap_or_default();
        let why = leak
            .reproduced
            .split_once("does not decode as its type: ")
            .map_or(leak.reproduced.as_str(), |(_, why)| why);
        return Err(FlowbackError::Query(format!(
            "--what-if {name}: {} is not a value of the argument's type ({why}); the recorded \
             value was {recorded}",
            value::show(given)
        )));
    }
    let mut outcomes: Vec<WhatIfOutput> = logs
        .postlog
        .iter()
        .map(|(name, v)| WhatIfOutput {
            name: name.clone(),
            recorded: engine.show(inst.process, v),
            what_if: Some(engine.show(inst.process, v)),
        })
        .collect();
    let mut left_the_log = None;
    // A changed outcome (a return for a panic, another panic) is the answer, not a departure.
    for leak in trace.leaks.iter().filter(|l| l.what != OUTCOME) {
        match outcomes.iter_mut().find(|o| o.name == leak.what) {
            Some(o) => o.what_if = Some(leak.reproduced.clone()),
            None => {
                left_the_log.get_or_insert_with(|| {
                    format!(
                        "{}: the log has {}, the changed run did {}",
                        leak.what, leak.logged, leak.reproduced
                    )
                });
            }
        }
    }
    if left_the_log.is_some() {
        for o in &mut outcomes {
            o.what_if = None;
        }
    }
    // The changed run's own `%0`, when it returned one the log's exit did not compare.
    if left_the_log.is_none()
        && let Some(ret) = trace
            .records
            .iter()
            .rev()
            .find(|r| r.var.as_deref() == Some("%0"))
        && let Some(o) = outcomes.iter_mut().find(|o| o.name == "%0")
    {
        o.what_if = engine.shown(inst.process, ret.value.as_ref());
    }
    let returned = || {
        trace
            .records
            .iter()
            .rev()
            .find(|r| r.var.as_deref() == Some("%0"))
            .and_then(|r| engine.shown(inst.process, r.value.as_ref()))
            .map_or_else(|| "returns".to_owned(), |v| format!("returns {v}"))
    };
    let ending = match (&trace.logged_panic, &trace.panicked) {
        (None, None) => None,
        _ if left_the_log.is_some() => None,
        (Some(recorded), None) => Some((
            format!("panics: {recorded}"),
            format!("no longer panics: {}", returned()),
        )),
        (recorded, Some(now)) => Some((
            recorded.as_ref().map_or_else(
                || {
                    outcomes
                        .iter()
                        .find(|o| o.name == "%0")
                        .map_or_else(|| "returns".into(), |o| format!("returns {}", o.recorded))
                },
                |r| format!("panics: {r}"),
            ),
            format!("panics: {now}"),
        )),
    };
    Ok(WhatIf {
        process: engine.process_name(inst.process),
        eblock,
        instance: inst.enter,
        changed,
        outcomes,
        left_the_log,
        ending,
    })
}

/// Parses `NAME=VALUE`, the value as ppd prints values (`amount=60`,
/// `request=Withdraw {client: 1, account: 0, amount: 5}`, `name="ann"`) or as JSON
/// (`request={"Withdraw":{"client":1,"account":0,"amount":5}}`).
pub fn parse_change(text: &str) -> Result<(String, value::Value)> {
    let (name, given) = text.split_once('=').ok_or_else(|| {
        FlowbackError::Query(format!(
            "--what-if {text:?}: write NAME=VALUE, the value as ppd prints it or as JSON"
        ))
    })?;
    let name = name.trim();
    if Place::parse(name).is_none_or(|p| !p.steps.is_empty()) {
        return Err(FlowbackError::Query(format!(
            "--what-if {text:?}: `{name}` is not an argument name"
        )));
    }
    let given = given.trim();
    let value = value::parse(given).map_err(|e| {
        let quoted = if given.starts_with('"') {
            String::new()
        } else {
            format!("; a string is quoted: {name}='\"{given}\"'")
        };
        FlowbackError::Query(format!(
            "--what-if {text:?}: `{given}` is not a value ({e}){quoted}"
        ))
    })?;
    Ok((name.to_owned(), value))
}

/// The instance open at event `at` of `process` (innermost), or the one entered there.
pub fn instance_at(store: &mut TraceStore<'_>, process: ProcessId, at: u64) -> Result<InstanceKey> {
    let index = store.index(process)?;
    index
        .innermost_containing(at)?
        .map(|(_, i)| InstanceKey {
            process,
            enter: i.enter,
        })
        .ok_or_else(|| {
            FlowbackError::Query(format!(
                "event {at} of {process} is not inside an e-block instance"
            ))
        })
}
