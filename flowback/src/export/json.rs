//! Every event as plain JSON, with its vector clock and Lamport time, plus the processes,
//! objects and synchronization edges — for scripts.
//!
//! ```text
//! {"format": "ppd-events", "version": 1,
//!  "processes": [{"pid", "name", "parent", "events", "complete", "damage"}],
//!  "objects": [{"id", "name", "kind", "init"}],
//!  "edges": [{"kind", "from": {"pid", "event"}, "to": {...}}],  (`reads_from`: also "object")
//!  "events": [{"pid", "event", "kind", "lamport", "clock", "text", "file", "line", ...}]}
//! ```
//!
//! Events are listed process by process; kind-specific fields (`object`, `seq`, `sender`,
//! `version`, `op`, `ordering`, `child`) appear where they apply. An atomic access's `ordering`
//! is the one that governed it: for a failed compare-exchange, its failure ordering.

use std::io::Write;

use ppd_formats::event::ObjectKind;
use serde_json::{Map, Value, json};

use super::put;
use crate::error::Result;
use crate::lamport::lamport;
use crate::reads_from::reads_from;
use crate::report::ClockView;
use crate::trace::{EventRef, Op, Trace, access_name, ordering_name};
use crate::vclock::Clocks;

const WHAT: &str = "the JSON export";

fn event_json(trace: &Trace, clocks: &Clocks, e: EventRef, lamport: u32) -> Value {
    let proc = trace.process(e.process);
    let ev = trace.event(e);
    let mut m = Map::new();
    m.insert("pid".into(), json!(proc.id.0));
    m.insert("event".into(), json!(e.index));
    m.insert("kind".into(), json!(ev.op.kind_name()));
    m.insert("lamport".into(), json!(lamport));
    m.insert(
        "clock".into(),
        serde_json::to_value(ClockView::of(trace, clocks, e)).unwrap_or(Value::Null),
    );
    m.insert("text".into(), json!(trace.describe(e)));
    if let Some(site) = trace.site(ev.site) {
        m.insert("file".into(), json!(site.file));
        m.insert("line".into(), json!(site.line));
        m.insert("column".into(), json!(site.column));
    }
    let obj = |o| json!(trace.object(o).id.to_string());
    match ev.op {
        Op::Spawn { child } | Op::Join { child } | Op::JoinBlocked { child } => {
            m.insert("child".into(), json!(child.0));
        }
        Op::Create { object } | Op::Unlock { object } | Op::Blocked { object } => {
            m.insert("object".into(), obj(object));
        }
        Op::Send { channel, seq } => {
            m.insert("object".into(), obj(channel));
            m.insert("seq".into(), json!(seq));
        }
        Op::Recv {
            channel,
            sender,
            seq,
        } => {
            m.insert("object".into(), obj(channel));
            m.insert("seq".into(), json!(seq));
            m.insert("sender".into(), json!(sender.0));
        }
        Op::RecvNone { channel, .. } => {
            m.insert("object".into(), obj(channel));
        }
        Op::Outcome { object, outcome } => {
            m.insert("object".into(), obj(object));
            m.insert("outcome".into(), json!(outcome));
        }
        Op::RwAcquire {
            object,
            version,
            mode,
            ..
        }
        | Op::RwRelease {
            object,
            version,
            mode,
        } => {
            m.insert("object".into(), obj(object));
            m.insert("version".into(), json!(version));
            m.insert("mode".into(), json!(mode));
        }
        Op::Undelivered { channel, seq } => {
            m.insert("object".into(), obj(channel));
            m.insert("seq".into(), json!(seq));
        }
        Op::NetOpen { socket } | Op::NetFail { socket } => {
            m.insert("object".into(), obj(socket));
        }
        Op::NetWrite { socket, seq, .. } => {
            m.insert("object".into(), obj(socket));
            m.insert("seq".into(), json!(seq));
        }
        Op::NetRead {
            socket, peer, seq, ..
        } => {
            m.insert("object".into(), obj(socket));
            if peer != crate::trace::NO_OBJECT {
                m.insert("from".into(), obj(peer));
                m.insert("seq".into(), json!(seq));
            }
        }
        Op::Lock {
            object, version, ..
        }
        | Op::SemAcquire {
            object, version, ..
        }
        | Op::SemRelease {
            object, version, ..
        } => {
            m.insert("object".into(), obj(object));
            m.insert("version".into(), json!(version));
        }
        Op::Atomic {
            object,
            version,
            op,
            ordering,
            ..
        } => {
            m.insert("object".into(), obj(object));
            m.insert("version".into(), json!(version));
            m.insert("op".into(), json!(access_name(op)));
            m.insert("ordering".into(), json!(ordering_name(ordering)));
        }
        Op::Start { .. }
        | Op::Exit
        | Op::Panic { .. }
        | Op::Select { .. }
        | Op::Clock
        | Op::Random
        | Op::Answer { .. }
        | Op::EblockEnter { .. }
        | Op::EblockExit { .. }
        | Op::Mark { .. }
        | Op::Sleep { .. } => {}
    }
    Value::Object(m)
}

/// Writes the run as JSON.
pub fn write(trace: &Trace, clocks: &Clocks, out: &mut dyn Write) -> Result<()> {
    let times = lamport(trace, clocks);
    let processes: Vec<Value> = trace
        .processes()
        .iter()
        .map(|p| {
            json!({"pid": p.id.0, "name": p.name, "parent": p.parent.map(|q| q.0),
                   "events": p.events.len(), "complete": p.complete, "damage": p.damage})
        })
        .collect();
    let objects: Vec<Value> = trace
        .objects()
        .iter()
        .map(|o| {
            json!({"id": o.id.to_string(), "name": o.name.as_deref(),
                   "kind": o.kind.map(ObjectKind::name), "init": o.init})
        })
        .collect();
    let pid = |p: u32| trace.process(p).id.0;
    let mut edges: Vec<Value> = clocks
        .edges()
        .iter()
        .map(|e| {
            json!({"kind": e.kind.name(),
                   "from": {"pid": pid(e.from.process), "event": e.from.index},
                   "to": {"pid": pid(e.to.process), "event": e.to.index}})
        })
        .collect();
    edges.extend(reads_from(trace).iter().map(|e| {
        json!({"kind": crate::reads_from::KIND, "object": trace.object(e.object).label(),
               "from": {"pid": pid(e.from.process), "event": e.from.index},
               "to": {"pid": pid(e.to.process), "event": e.to.index}})
    }));
    let head = format!(
        "{{\"format\":\"ppd-events\",\"version\":1,\"processes\":{},\"objects\":{},\"edges\":{},\"events\":[\n",
        Value::Array(processes),
        Value::Array(objects),
        Value::Array(edges)
    );
    put(out, WHAT, head.as_bytes())?;
    let mut first = true;
    for (p, stamps) in times.iter().enumerate() {
        for (k, &lamport) in stamps.iter().enumerate() {
            if !first {
                put(out, WHAT, b",\n")?;
            }
            first = false;
            let e = EventRef::new(p as u32, k as u32);
            let v = event_json(trace, clocks, e, lamport);
            put(out, WHAT, v.to_string().as_bytes())?;
        }
    }
    put(out, WHAT, b"\n]}\n")
}
