//! The state of a halted replay, as the user inspects it: where each process is, the values
//! it last logged, its vector clock, and the messages in the channels.
//!
//! The processes report their positions; everything else is read from the logs up to those
//! positions, so it is exactly the recorded state at the cut.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

use ppd_formats::{Event, FormatError, ObjectId, ProcessId, Recording, value};
use serde::Serialize;

use crate::describe::describe_with;
use crate::predicate::{Catalog, Resolved};
use crate::protocol::{HaltReason, ProcessReport};

/// Why the processes are where a state has them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// The replay halted, as it reported.
    Halted(HaltReason),
    /// A state of `--trace`: one where the predicate holds.
    Traced,
    /// The run is over: no process can move any more.
    Over,
}

impl Reason {
    /// In words, as a state's header gives it.
    pub fn text(self) -> &'static str {
        match self {
            Reason::Halted(HaltReason::Predicate) => "the predicate holds",
            Reason::Halted(HaltReason::Cut) => "the requested state",
            Reason::Halted(HaltReason::Step) => "after a step",
            Reason::Halted(HaltReason::Command) => "on command",
            Reason::Halted(HaltReason::Start) => "before the first event",
            Reason::Traced => "trace",
            Reason::Over => "the run is over",
        }
    }

    /// Whether the predicate holds in the state (a step or a cut may lead out of it).
    fn at_predicate(self) -> bool {
        matches!(self, Reason::Halted(HaltReason::Predicate) | Reason::Traced)
    }
}

/// One process in a halted state.
#[derive(Debug, Clone, Serialize)]
pub struct ProcessState {
    /// Process id.
    pub id: ProcessId,
    /// Process name.
    pub name: String,
    /// Events executed.
    pub events: u64,
    /// Events in its log: it is at the end of its log when `events` reaches it.
    pub logged: u64,
    /// `held`, `finished`, `log ended`, `waiting`, `not started`.
    pub status: String,
    /// Index of its last executed event.
    pub last_event: Option<u64>,
    /// Kind of that event.
    pub kind: Option<String>,
    /// That event, described.
    pub at: Option<String>,
    /// Its source file.
    pub file: Option<String>,
    /// Its source line.
    pub line: Option<u32>,
    /// The innermost e-block the process is in.
    pub eblock: Option<String>,
    /// That e-block's arguments.
    pub eblock_args: Option<serde_json::Value>,
    /// The latest value of each mark label.
    pub values: BTreeMap<String, serde_json::Value>,
    /// Vector clock: events of each process in its causal past.
    pub vclock: Vec<ppd_formats::order::Tick>,
    /// Predicate components that hold for it.
    pub holds: Vec<String>,
    /// What it waits for.
    pub waiting_for: Option<String>,
    /// The OS thread that runs it in the replayed program, when the state is of one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thread: Option<u32>,
}

impl ProcessState {
    /// Whether it has executed every event of its log.
    pub fn at_end(&self) -> bool {
        self.events >= self.logged
    }

    /// The process as text for a terminal: where it is, what it last logged, what it waits
    /// for, its clock and the parts of the predicate that hold for it.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "  {} ({}): {}, {} events",
            self.name, self.id, self.status, self.events
        );
        if let Some(at) = &self.at {
            let _ = writeln!(out, "    at       {at}");
        }
        if let Some(e) = &self.eblock {
            let _ = writeln!(out, "    in       {e}{}", self.eblock_arguments());
        }
        for (label, v) in &self.values {
            let _ = writeln!(out, "    {label:<8} = {v}");
        }
        if let Some(w) = &self.waiting_for {
            let _ = writeln!(out, "    waiting  for {w}");
        }
        if !self.vclock.is_empty() {
            let _ = writeln!(out, "    clock    {:?}", self.vclock);
        }
        for h in &self.holds {
            let _ = writeln!(out, "    holds    {h}");
        }
        out
    }

    /// The innermost e-block's arguments, `({...})`, or nothing.
    pub fn eblock_arguments(&self) -> String {
        self.eblock_args
            .as_ref()
            .map(|a| format!("({a})"))
            .unwrap_or_default()
    }
}

/// A message sent and not yet received.
#[derive(Debug, Clone, Serialize)]
pub struct InFlight {
    /// Its sequence number on the channel.
    pub seq: u64,
    /// The sender.
    pub from: String,
    /// Its payload, when logged.
    pub payload: Option<serde_json::Value>,
}

/// A channel holding messages at the cut.
#[derive(Debug, Clone, Serialize)]
pub struct ChannelState {
    /// The channel's id.
    pub channel: ObjectId,
    /// Its name, if it has one.
    pub name: Option<String>,
    /// Messages sent before the cut and not received before it.
    pub in_flight: Vec<InFlight>,
}

/// A halted global state.
#[derive(Debug, Clone, Serialize)]
pub struct HaltState {
    /// The predicate, if the state is where it holds (not after a step or a cut away from it).
    pub predicate: Option<String>,
    /// Why the replay halted.
    pub reason: String,
    /// Every process.
    pub processes: Vec<ProcessState>,
    /// Channels with messages in flight.
    pub channels: Vec<ChannelState>,
    /// Time from the predicate becoming true to every process halted.
    pub latency_ns: Option<u64>,
}

impl HaltState {
    /// Builds the state at the cut the processes report, reading the logs up to it; `plan` is
    /// the session's predicate, whose components are evaluated at the cut.
    pub fn build(
        recording: &Recording,
        catalog: &Catalog,
        plan: Option<&Resolved>,
        reason: Reason,
        reports: &[ProcessReport],
        latency_ns: Option<u64>,
    ) -> Result<HaltState, FormatError> {
        let mut processes = Vec::new();
        let mut sent: HashMap<(ObjectId, u64), InFlight> = HashMap::new();
        let mut received: Vec<(ObjectId, u64)> = Vec::new();
        for report in reports {
            let name = catalog.process_name(report.id);
            let mut state = ProcessState {
                id: report.id,
                name: name.clone(),
                events: report.events,
                logged: 0,
                status: report.status.clone(),
                last_event: report.events.checked_sub(1),
                kind: None,
                at: None,
                file: None,
                line: None,
                eblock: None,
                eblock_args: None,
                values: BTreeMap::new(),
                vclock: report.vclock.clone(),
                holds: report
                    .holds
                    .iter()
                    .filter_map(|c| {
                        plan.and_then(|p| p.components.get(*c))
                            .map(|c| c.text.clone())
                    })
                    .collect(),
                waiting_for: report.waiting_for.clone(),
                thread: report.thread,
            };
            let Some(entry) = recording.process(report.id) else {
                processes.push(state);
                continue;
            };
            let reader = recording.open_log(entry)?;
            state.logged = reader.event_count();
            let mut eblocks: Vec<(String, Box<[u8]>)> = Vec::new();
            let mut last: Option<(Event, Option<Box<[u8]>>)> = None;
            for item in reader.events().take(report.events as usize) {
                let (index, event) = item?;
                match &event {
                    Event::EblockEnter { eblock, prelog, .. } => {
                        eblocks.push((eblock.to_string(), prelog.clone()));
                    }
                    Event::EblockExit { .. } => {
                        let entry = eblocks.pop().map(|(_, prelog)| prelog);
                        if index + 1 == report.events {
                            last = Some((event.clone(), entry));
                        }
                    }
                    Event::Mark { label, value, .. } => {
                        let v = value::decode(value)
                            .map(|v| value::to_json(&v))
                            .unwrap_or(serde_json::Value::Null);
                        state.values.insert(label.to_string(), v);
                    }
                    Event::Send {
                        channel,
                        seq,
                        payload,
                        ..
                    } => {
                        let payload = payload
                            .as_deref()
                            .and_then(|p| value::decode(p).ok())
                            .map(|v| value::to_json(&v));
                        sent.insert(
                            (*channel, *seq),
                            InFlight {
                                seq: *seq,
                                from: name.clone(),
                                payload,
                            },
                        );
                    }
                    Event::Recv { channel, seq, .. } => received.push((*channel, *seq)),
                    _ => {}
                }
                if index + 1 == report.events {
                    if last.is_none() {
                        last = Some((event.clone(), None));
                    }
                    state.kind = Some(event.kind().name().to_owned());
                    state.at = Some(describe_with(&event, catalog));
                    if let Some(site) = event.site() {
                        state.file = Some(site.file.clone());
                        state.line = Some(site.line);
                    }
                }
            }
            // Components the processes did not report (a halt at a cut): evaluate them on the
            // last event, as the predicate's events are read (Manabe & Imase's SP_i(e)).
            if state.holds.is_empty()
                && let (Some(plan), Some((event, entry))) = (plan, &last)
            {
                state.holds = plan
                    .components_of(report.id)
                    .filter(|c| c.holds_after(event, entry.as_deref()))
                    .map(|c| c.text.clone())
                    .collect();
            }
            if let Some((name, prelog)) = eblocks.last() {
                state.eblock = Some(name.clone());
                state.eblock_args = value::decode(prelog).ok().map(|v| value::to_json(&v));
            }
            processes.push(state);
        }
        for key in received {
            sent.remove(&key);
        }
        let mut by_channel: BTreeMap<ObjectId, Vec<InFlight>> = BTreeMap::new();
        for ((channel, _), message) in sent {
            by_channel.entry(channel).or_default().push(message);
        }
        let channels = by_channel
            .into_iter()
            .map(|(channel, mut in_flight)| {
                in_flight.sort_by_key(|m| m.seq);
                ChannelState {
                    channel,
                    name: catalog
                        .channels
                        .iter()
                        .find(|(c, _)| *c == channel)
                        .and_then(|(_, n)| n.clone()),
                    in_flight,
                }
            })
            .collect();
        Ok(HaltState {
            predicate: plan
                .filter(|_| reason.at_predicate())
                .map(|p| p.text.clone()),
            reason: reason.text().to_owned(),
            processes,
            channels,
            latency_ns,
        })
    }

    /// The state as text for a terminal.
    pub fn render(&self) -> String {
        let mut out = String::new();
        match &self.predicate {
            Some(p) => {
                let _ = writeln!(out, "halted ({}) at: {p}", self.reason);
            }
            None => {
                let _ = writeln!(out, "halted ({})", self.reason);
            }
        }
        for p in &self.processes {
            let _ = writeln!(out);
            out.push_str(&p.render());
        }
        if !self.channels.is_empty() {
            let _ = writeln!(out);
            let _ = writeln!(out, "  messages in flight:");
            for c in &self.channels {
                let name = c
                    .name
                    .as_deref()
                    .map(|n| format!("{n} "))
                    .unwrap_or_default();
                for m in &c.in_flight {
                    let payload = m
                        .payload
                        .as_ref()
                        .map(|p| format!(" = {p}"))
                        .unwrap_or_default();
                    let _ = writeln!(
                        out,
                        "    {name}{}: message {} from {}{payload}",
                        c.channel, m.seq, m.from
                    );
                }
            }
        }
        if let Some(ns) = self.latency_ns {
            let _ = writeln!(
                out,
                "\n  halted {:.1} ms after the predicate became true",
                ns as f64 / 1e6
            );
        }
        out
    }

    /// Whether every process is at the end of its log: nothing is left to replay.
    pub fn at_end(&self) -> bool {
        self.processes.iter().all(ProcessState::at_end)
    }

    /// The cut, in the form `ppd graph` reads from `cache/halt.json`.
    pub fn cut_json(&self) -> serde_json::Value {
        serde_json::json!({
            "predicate": self.predicate.clone().unwrap_or_default(),
            "cut": self.processes.iter().map(|p| serde_json::json!({
                "process": p.id.0,
                "events": p.events,
            })).collect::<Vec<_>>(),
        })
    }
}
