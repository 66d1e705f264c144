//! Where a why-query starts: the process, the place, and the last definition of the place at
//! the point asked about.
//!
//! The instances open at the point are searched first, innermost first and each only up to the
//! point; then the earlier instances of e-blocks that define the variable, latest first. The
//! first is re-executed alone (it usually has the answer), the others in batches.

use std::collections::BTreeSet;

use ppd_formats::ProcessId;
use ppd_formats::eblock_trace::EblockTrace;

use super::answer::Query;
use ppd_replayer::emulate::STOPPED;

use super::engine::{DepNode, Engine, Stall};
use super::place::Place;
use super::store::{InstanceKey, Lookup};
use super::{did_you_mean, find_process};
use crate::error::{FlowbackError, Result};

/// How many instances a query's target is looked for in, and how many are re-executed at once.
const TARGET_CANDIDATES: usize = 64;
const TARGET_BATCH: usize = 8;

impl Engine<'_, '_> {
    /// The process and the definition the query is about.
    pub(super) fn target(&mut self, query: &Query) -> Result<(ProcessId, DepNode)> {
        let recording = self.store.recording();
        let process = find_process(recording, &query.process)?;
        let name = self.process_name(process);
        let mut place = Place::parse(&query.var).ok_or_else(|| {
            FlowbackError::Query(format!(
                "`{}` is not a variable or a place (like `balance` or `bank.accounts[1].balance`)",
                query.var
            ))
        })?;
        let index = self.store.index(process)?;
        let at = query.at.resolve(recording, process, &index)?;
        if index.is_empty() {
            return match self.body_target(process, &place, at)? {
                BodyTarget::Found(site) => Ok((process, site)),
                BodyTarget::Undefined => Err(FlowbackError::Query(format!(
                    "{name} ran no e-block, and its body does not define `{}`{}",
                    query.var,
                    before_point(at)
                ))),
                BodyTarget::Untraced(why) => Err(FlowbackError::Query(format!(
                    "{name} ran no e-block, and its body could not be traced: {why}"
                ))),
            };
        }
        let registry = self.store.registry()?;
        let mine: Vec<_> = registry
            .iter()
            .filter(|e| index.names().contains(&e.name))
            .collect();
        // Every e-block defines its returned value, `%0`.
        let known = |e: &ppd_formats::eblock_trace::EblockInfo| -> Vec<Place> {
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
                    let why_not = match self.body_target(process, &place, at)? {
                        BodyTarget::Found(site) => return Ok((process, site)),
                        BodyTarget::Undefined => "nor does its body (a function that is \
                            no e-block is not traced: build with `ppd build`, whose \
                            `--explain` says which functions are)"
                            .to_owned(),
                        BodyTarget::Untraced(why) => {
                            format!("and its body could not be traced ({why})")
                        }
                    };
                    let names: BTreeSet<String> = mine
                        .iter()
                        .flat_map(|e| e.params.iter().chain(&e.defines).cloned())
                        .collect();
                    return Err(FlowbackError::Query(format!(
                        "no e-block of {name} defines or takes `{}`{}; {why_not}",
                        query.var,
                        did_you_mean(&query.var, names.iter().map(String::as_str))
                    )));
                }
            }
        }
        let defining: BTreeSet<&str> = mine
            .iter()
            .filter(|e| known(e).iter().any(|p| p.root == place.root))
            .map(|e| e.name.as_str())
            .collect();

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
                    let before = records_up_to(&trace, cutoff);
                    let place = engine.concretize(key, before, &place, 0)?;
                    let found = engine.last_def(key, before, &place, 0)?;
                    // An instance whose re-execution the program stopped may have defined the
                    // variable after the stop: an earlier definition would be a wrong answer.
                    match trace.leaks.iter().find(|l| l.what == STOPPED) {
                        Some(stop) if found.is_none() => Err(Stall::Failed(
                            key,
                            format!(
                                "its re-execution stopped before it defined `{}`: {}",
                                query.var, stop.reproduced
                            )
                            .into(),
                        )),
                        _ => Ok(found),
                    }
                })?;
                if let Some(site) = found {
                    return Ok((process, site));
                }
            }
        }
        if let BodyTarget::Found(site) = self.body_target(process, &place, at)? {
            return Ok((process, site));
        }
        let before = before_point(at);
        // A re-execution that stopped (a value the log could not give it) may be why no
        // definition was found: say where and why rather than that none exists.
        let stopped: Vec<String> = candidates
            .iter()
            .filter_map(|(key, _)| match self.store.trace(*key) {
                Lookup::Ready(trace) => trace.leaks.first().map(|leak| {
                    format!(
                        "re-executing {} (entered at event {}): {}: logged {}, re-executed {}",
                        trace.eblock, key.enter, leak.what, leak.logged, leak.reproduced
                    )
                }),
                Lookup::Missing | Lookup::Failed(_) => None,
            })
            .collect();
        if let Some(first) = stopped.first() {
            let more = match stopped.len() - 1 {
                0 => String::new(),
                n => format!(" ({n} more of the instances looked at stopped too)"),
            };
            return Err(FlowbackError::Emulation(format!(
                "no e-block instance of {name}{before} defined `{}` before its re-execution \
                 stopped: {first}{more}",
                query.var
            )));
        }
        Err(FlowbackError::Query(format!(
            "no e-block instance of {name}{before} defined `{}` (looked at the {} latest that could)",
            query.var,
            candidates.len()
        )))
    }
}

/// What a process's body says of a query's variable.
enum BodyTarget {
    /// Its last definition up to the point.
    Found(DepNode),
    /// The body was traced and does not define it there.
    Undefined,
    /// The body could not be traced, and why.
    Untraced(String),
}

impl Engine<'_, '_> {
    /// The last definition of `place` in `process`'s body up to event `at` (its end when
    /// none): the body is traced in a replay (`ppd_replayer::body`) when no e-block answers.
    fn body_target(
        &mut self,
        process: ProcessId,
        place: &Place,
        at: Option<u64>,
    ) -> Result<BodyTarget> {
        let key = InstanceKey::body(process);
        self.store.fetch(&BTreeSet::from([key]))?;
        if let Lookup::Failed(why) = self.store.trace(key) {
            return Ok(BodyTarget::Untraced(why.to_string()));
        }
        let found = self.settle(|engine| {
            let trace = engine.trace(key)?;
            let before = records_up_to(&trace, at);
            let place = engine.concretize(key, before, place, 0)?;
            engine.last_def(key, before, &place, 0)
        })?;
        Ok(found.map_or(BodyTarget::Undefined, BodyTarget::Found))
    }
}

/// How many of `trace`'s records come up to event `cutoff` (all of them when none).
fn records_up_to(trace: &EblockTrace, cutoff: Option<u64>) -> usize {
    match cutoff {
        None => trace.records.len(),
        Some(n) => match trace.records.iter().position(|r| r.event == Some(n)) {
            Some(i) => i + 1,
            None => trace
                .records
                .iter()
                .position(|r| r.event.is_some_and(|e| e > n))
                .unwrap_or(trace.records.len()),
        },
    }
}

/// ` up to its event N`, or nothing for the end of the run.
fn before_point(at: Option<u64>) -> String {
    match at {
        Some(n) => format!(" up to its event {n}"),
        None => String::new(),
    }
}
