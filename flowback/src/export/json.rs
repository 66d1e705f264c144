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
//!
//! The export is streamed: each edge and event is serialized straight into a buffered writer as
//! it is reached, so memory holds the analysis and one record, not the document (a run of ten
//! million events makes about 2.5 GB of JSON). Each object's keys are written in alphabetical
//! order and the clock's components in process order.

use std::fmt::Display;
use std::io::{BufWriter, Write};

use ppd_formats::event::{ObjectKind, Outcome, RwMode};
use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};

use crate::error::{FlowbackError, Result};
use crate::lamport::lamport;
use crate::reads_from::{self, reads_from};
use crate::trace::{EventRef, NO_OBJECT, Op, Trace, access_name, ordering_name};
use crate::vclock::Clocks;

const WHAT: &str = "the JSON export";

/// How much of the export is gathered before each write to the output.
const BUFFER: usize = 1 << 20;

/// A value written through its `Display`, without a `String` of its own.
struct Shown<T>(T);

impl<T: Display> Serialize for Shown<T> {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.collect_str(&self.0)
    }
}

/// The vector clock of one event: its non-zero components keyed by process id (`"p3"`), as
/// [`crate::report::ClockView`] prints them, read off the clocks one component at a time.
struct Clock<'a> {
    clocks: &'a Clocks,
    /// Each process's id as a key, made once for the whole export.
    keys: &'a [String],
    event: EventRef,
}

impl Serialize for Clock<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        for q in 0..self.clocks.width() as u32 {
            let c = self.clocks.component(self.event, q);
            if c > 0 {
                map.serialize_entry(&self.keys[q as usize], &c)?;
            }
        }
        map.end()
    }
}

/// One end of an edge.
#[derive(Serialize)]
struct End {
    event: u32,
    pid: u32,
}

/// A synchronization edge or a `reads_from` edge (the atomic it went through).
#[derive(Serialize)]
struct Edge<'a> {
    from: End,
    kind: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    object: Option<String>,
    to: End,
}

#[derive(Serialize)]
struct ProcessRecord<'a> {
    complete: bool,
    damage: &'a [String],
    events: usize,
    name: &'a str,
    parent: Option<u32>,
    pid: u32,
}

#[derive(Serialize)]
struct ObjectRecord<'a> {
    id: Shown<ppd_formats::ObjectId>,
    init: u64,
    kind: Option<&'static str>,
    name: Option<&'a str>,
}

/// An object an event names, by id.
type ObjectName = Shown<ppd_formats::ObjectId>;

/// One event, with the fields of its kind.
#[derive(Serialize)]
struct EventRecord<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    child: Option<u32>,
    clock: Clock<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    column: Option<u32>,
    event: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    file: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    from: Option<ObjectName>,
    kind: &'static str,
    lamport: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    line: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    mode: Option<RwMode>,
    #[serde(skip_serializing_if = "Option::is_none")]
    object: Option<ObjectName>,
    #[serde(skip_serializing_if = "Option::is_none")]
    op: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    ordering: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    outcome: Option<Outcome>,
    pid: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    sender: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    seq: Option<u64>,
    text: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    version: Option<u64>,
}

impl<'a> EventRecord<'a> {
    fn of(trace: &'a Trace, clock: Clock<'a>, lamport: u32) -> EventRecord<'a> {
        let e = clock.event;
        let ev = trace.event(e);
        let site = trace.site(ev.site);
        let mut record = EventRecord {
            child: None,
            clock,
            column: site.map(|s| s.column),
            event: e.index,
            file: site.map(|s| s.file.as_str()),
            from: None,
            kind: ev.op.kind_name(),
            lamport,
            line: site.map(|s| s.line),
            mode: None,
            object: None,
            op: None,
            ordering: None,
            outcome: None,
            pid: trace.process(e.process).id.0,
            sender: None,
            seq: None,
            text: trace.describe(e),
            version: None,
        };
        let name = |o| Some(Shown(trace.object(o).id));
        match ev.op {
            Op::Spawn { child } | Op::Join { child } | Op::JoinBlocked { child } => {
                record.child = Some(child.0);
            }
            Op::Create { object }
            | Op::Unlock { object }
            | Op::Blocked { object }
            | Op::RecvNone {
                channel: object, ..
            }
            | Op::NetOpen { socket: object }
            | Op::NetFail { socket: object } => record.object = name(object),
            Op::Send { channel, seq }
            | Op::Undelivered { channel, seq }
            | Op::NetWrite {
                socket: channel,
                seq,
                ..
            } => {
                record.object = name(channel);
                record.seq = Some(seq);
            }
            Op::Recv {
                channel,
                sender,
                seq,
            } => {
                record.object = name(channel);
                record.seq = Some(seq);
                record.sender = Some(sender.0);
            }
            Op::Outcome { object, outcome } => {
                record.object = name(object);
                record.outcome = Some(outcome);
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
                record.object = name(object);
                record.version = Some(version);
                record.mode = Some(mode);
            }
            Op::NetRead {
                socket, peer, seq, ..
            } => {
                record.object = name(socket);
                if peer != NO_OBJECT {
                    record.from = name(peer);
                    record.seq = Some(seq);
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
                record.object = name(object);
                record.version = Some(version);
            }
            Op::Atomic {
                object,
                version,
                op,
                ordering,
                ..
            } => {
                record.object = name(object);
                record.version = Some(version);
                record.op = Some(access_name(op));
                record.ordering = Some(ordering_name(ordering));
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
        record
    }
}

/// Writes the records of a JSON array one after another, each with `separator` before it but
/// the first.
struct Records<'w, W: Write> {
    out: &'w mut W,
    separator: &'static [u8],
    first: bool,
}

impl<'w, W: Write> Records<'w, W> {
    fn new(out: &'w mut W, separator: &'static [u8]) -> Records<'w, W> {
        Records {
            out,
            separator,
            first: true,
        }
    }

    fn put(&mut self, record: &impl Serialize) -> std::io::Result<()> {
        if !self.first {
            self.out.write_all(self.separator)?;
        }
        self.first = false;
        serde_json::to_writer(&mut *self.out, record).map_err(std::io::Error::from)
    }
}

/// Writes the run as JSON.
pub fn write(trace: &Trace, clocks: &Clocks, out: &mut dyn Write) -> Result<()> {
    let times = lamport(trace, clocks);
    let mut out = BufWriter::with_capacity(BUFFER, out);
    stream(trace, clocks, &times, &mut out)
        .and_then(|()| out.flush())
        .map_err(|source| FlowbackError::Output { what: WHAT, source })
}

fn stream(
    trace: &Trace,
    clocks: &Clocks,
    times: &[Vec<u32>],
    out: &mut impl Write,
) -> std::io::Result<()> {
    out.write_all(br#"{"format":"ppd-events","version":1,"processes":["#)?;
    let mut records = Records::new(out, b",");
    for p in trace.processes() {
        records.put(&ProcessRecord {
            complete: p.complete,
            damage: &p.damage,
            events: p.events.len(),
            name: &p.name,
            parent: p.parent.map(|q| q.0),
            pid: p.id.0,
        })?;
    }
    out.write_all(br#"],"objects":["#)?;
    let mut records = Records::new(out, b",");
    for o in trace.objects() {
        records.put(&ObjectRecord {
            id: Shown(o.id),
            init: o.init,
            kind: o.kind.map(ObjectKind::name),
            name: o.name.as_deref(),
        })?;
    }
    out.write_all(br#"],"edges":["#)?;
    let end = |e: EventRef| End {
        event: e.index,
        pid: trace.process(e.process).id.0,
    };
    let mut records = Records::new(out, b",");
    for e in clocks.edges() {
        records.put(&Edge {
            from: end(e.from),
            kind: e.kind.name(),
            object: None,
            to: end(e.to),
        })?;
    }
    for e in reads_from(trace) {
        records.put(&Edge {
            from: end(e.from),
            kind: reads_from::KIND,
            object: Some(trace.object(e.object).label()),
            to: end(e.to),
        })?;
    }
    out.write_all(b"],\"events\":[\n")?;
    let keys: Vec<String> = trace.processes().iter().map(|p| p.id.to_string()).collect();
    let mut records = Records::new(out, b",\n");
    for (p, stamps) in times.iter().enumerate() {
        for (k, &lamport) in stamps.iter().enumerate() {
            let clock = Clock {
                clocks,
                keys: &keys,
                event: EventRef::new(p as u32, k as u32),
            };
            records.put(&EventRecord::of(trace, clock, lamport))?;
        }
    }
    out.write_all(b"\n]}\n")
}

#[cfg(test)]
mod tests;
