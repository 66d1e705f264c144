//! Perfetto's native trace format: a `Trace` protobuf message, written packet by packet.
//!
//! Field numbers follow Perfetto's `protos/perfetto/trace/` (`trace_packet.proto`,
//! `track_event/track_event.proto`, `track_event/track_descriptor.proto`,
//! `interned_data/interned_data.proto`). The layout keeps the trace to about 30 bytes per event
//! (28 on a long `bank` run):
//!
//! * one track per logical process (a thread of the trace process "ppd run", `tid` = process
//!   id + 1, as in the JSON variant), and one packet sequence per process: its first packet
//!   declares the track, clears the sequence's incremental state
//!   (`SEQ_INCREMENTAL_STATE_CLEARED`) and sets the track as the sequence's default, so the
//!   event packets (`SEQ_NEEDS_INCREMENTAL_STATE`) name no track;
//! * every event is an instant (`TYPE_INSTANT`) at its Lamport time (`1 ns` = one causal
//!   step), named by its kind and object (`send accounts`), both interned per sequence
//!   (`InternedData.event_names`), with its source location interned too;
//! * e-blocks are slices (`TYPE_SLICE_BEGIN`/`TYPE_SLICE_END`) around their events;
//! * every synchronization edge is a flow: its id (the edge's index + 1) in `flow_ids` of the
//!   event it starts at and in `terminating_flow_ids` of the event it ends at.
//!
//! Output is streamed: beyond the trace and its clocks, the writer holds the Lamport times
//! (4 bytes per event), the edges' ends in event order (16 bytes per edge end) and one
//! packet's buffers.

use std::collections::HashMap;
use std::io::Write;

use super::proto::Message;
use super::put;
use crate::error::Result;
use crate::lamport::lamport;
use crate::trace::{NameId, ObjIdx, Op, SiteId, Trace};
use crate::vclock::Clocks;
use ppd_formats::progress;

const WHAT: &str = "the Perfetto trace";

/// `Trace.packet`.
const TRACE_PACKET: u32 = 1;

/// Fields of `TracePacket`.
mod packet {
    pub(super) const TIMESTAMP: u32 = 8;
    pub(super) const SEQUENCE_ID: u32 = 10;
    pub(super) const TRACK_EVENT: u32 = 11;
    pub(super) const INTERNED_DATA: u32 = 12;
    pub(super) const SEQUENCE_FLAGS: u32 = 13;
    pub(super) const DEFAULTS: u32 = 59;
    pub(super) const TRACK_DESCRIPTOR: u32 = 60;
    /// `SEQ_INCREMENTAL_STATE_CLEARED`.
    pub(super) const CLEARED: u64 = 1;
    /// `SEQ_NEEDS_INCREMENTAL_STATE`.
    pub(super) const NEEDS_STATE: u64 = 2;
}

/// Fields of `TrackEvent` (and of `TrackEventDefaults`, which shares `track_uuid`).
mod event {
    pub(super) const TYPE: u32 = 9;
    pub(super) const NAME_IID: u32 = 10;
    pub(super) const TRACK_UUID: u32 = 11;
    pub(super) const SOURCE_LOCATION_IID: u32 = 34;
    pub(super) const FLOW_IDS: u32 = 47;
    pub(super) const TERMINATING_FLOW_IDS: u32 = 48;
    pub(super) const SLICE_BEGIN: u64 = 1;
    pub(super) const SLICE_END: u64 = 2;
    pub(super) const INSTANT: u64 = 3;
}

/// `TracePacketDefaults.track_event_defaults`.
const TRACK_EVENT_DEFAULTS: u32 = 11;

/// Fields of `TrackDescriptor`, `ProcessDescriptor` and `ThreadDescriptor`.
mod track {
    pub(super) const UUID: u32 = 1;
    pub(super) const PROCESS: u32 = 3;
    pub(super) const THREAD: u32 = 4;
    pub(super) const PID: u32 = 1;
    pub(super) const TID: u32 = 2;
    pub(super) const PROCESS_NAME: u32 = 6;
    pub(super) const THREAD_NAME: u32 = 5;
}

/// Fields of `InternedData`, `EventName` and `SourceLocation`.
mod interned {
    pub(super) const EVENT_NAMES: u32 = 2;
    pub(super) const SOURCE_LOCATIONS: u32 = 4;
    pub(super) const IID: u32 = 1;
    pub(super) const NAME: u32 = 2;
    pub(super) const FILE_NAME: u32 = 2;
    pub(super) const LINE_NUMBER: u32 = 4;
}

/// The trace process's pid and track.
const PID: u64 = 1;
const PROCESS_TRACK: u64 = 1;

/// What an event is called: its kind and object, or an e-block's name.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum NameKey {
    Op(&'static str, Option<ObjIdx>),
    Eblock(NameId),
}

/// One sequence's interning tables (iids start at 1; 0 means "none").
#[derive(Default)]
struct Interned {
    names: HashMap<NameKey, u64>,
    sites: HashMap<SiteId, u64>,
}

/// The packet writer and its reusable buffers.
struct Writer<'a> {
    out: &'a mut dyn Write,
    packet: Message,
    event: Message,
    interned: Message,
    entry: Message,
    head: Message,
}

impl Writer<'_> {
    /// Writes `self.packet` as one `Trace.packet` field.
    fn flush_packet(&mut self) -> Result<()> {
        self.head.clear();
        self.head
            .length_delimited_header(TRACE_PACKET, self.packet.bytes().len());
        put(self.out, WHAT, self.head.bytes())?;
        put(self.out, WHAT, self.packet.bytes())
    }
}

/// The edges' ends of one kind (starts or ends), sorted by event, walked along with the events.
struct Ends {
    ends: Vec<(u32, u32, u64)>,
    next: usize,
}

impl Ends {
    fn new(mut ends: Vec<(u32, u32, u64)>) -> Ends {
        ends.sort_unstable();
        Ends { ends, next: 0 }
    }

    /// Writes the flow ids of the edges with an end at event `k` of process `p` as `field`.
    fn write(&mut self, p: u32, k: u32, field: u32, m: &mut Message) {
        while let Some(&(q, i, id)) = self.ends.get(self.next) {
            if (q, i) > (p, k) {
                break;
            }
            if (q, i) == (p, k) {
                m.fixed64(field, id);
            }
            self.next += 1;
        }
    }
}

/// Writes the trace of a run.
pub fn write(trace: &Trace, clocks: &Clocks, out: &mut dyn Write) -> Result<()> {
    let times = lamport(trace, clocks);
    let edges = clocks.edges();
    let mut starts = Ends::new(
        edges
            .iter()
            .enumerate()
            .map(|(i, e)| (e.from.process, e.from.index, i as u64 + 1))
            .collect(),
    );
    let mut ends = Ends::new(
        edges
            .iter()
            .enumerate()
            .map(|(i, e)| (e.to.process, e.to.index, i as u64 + 1))
            .collect(),
    );
    let mut w = Writer {
        out,
        packet: Message::default(),
        event: Message::default(),
        interned: Message::default(),
        entry: Message::default(),
        head: Message::default(),
    };
    w.packet.varint(packet::SEQUENCE_ID, 1);
    w.packet.nested(packet::TRACK_DESCRIPTOR, |d| {
        d.varint(track::UUID, PROCESS_TRACK);
        d.nested(track::PROCESS, |p| {
            p.varint(track::PID, PID);
            p.string(track::PROCESS_NAME, "ppd run");
        });
    });
    w.flush_packet()?;
    let mut counted = progress::pass("writing the Perfetto trace", trace.event_count());
    for (p, proc) in trace.processes().iter().enumerate() {
        let sequence = p as u64 + 1;
        let uuid = PROCESS_TRACK + 1 + p as u64;
        w.packet.clear();
        w.packet.varint(packet::SEQUENCE_ID, sequence);
        w.packet.varint(packet::SEQUENCE_FLAGS, packet::CLEARED);
        w.packet.nested(packet::TRACK_DESCRIPTOR, |d| {
            d.varint(track::UUID, uuid);
            d.nested(track::THREAD, |t| {
                t.varint(track::PID, PID);
                t.varint(track::TID, u64::from(proc.id.0) + 1);
                t.string(track::THREAD_NAME, &format!("{} ({})", proc.name, proc.id));
            });
        });
        w.packet.nested(packet::DEFAULTS, |d| {
            d.nested(TRACK_EVENT_DEFAULTS, |t| t.varint(event::TRACK_UUID, uuid));
        });
        w.flush_packet()?;
        let mut tables = Interned::default();
        let mut open: Vec<NameKey> = Vec::new();
        for (k, ev) in proc.events.iter().enumerate() {
            counted.add(1);
            let ts = u64::from(times[p][k]);
            if let Op::EblockEnter { name } = ev.op {
                let key = NameKey::Eblock(name);
                slice_event(
                    &mut w,
                    trace,
                    &mut tables,
                    sequence,
                    ts,
                    key,
                    event::SLICE_BEGIN,
                )?;
                open.push(key);
            }
            w.packet.clear();
            w.packet.varint(packet::TIMESTAMP, ts);
            w.packet.varint(packet::SEQUENCE_ID, sequence);
            w.packet.varint(packet::SEQUENCE_FLAGS, packet::NEEDS_STATE);
            w.interned.clear();
            let key = NameKey::Op(ev.op.kind_name(), ev.op.object());
            let name = intern_name(&mut w, trace, &mut tables, key);
            let site = intern_site(&mut w, trace, &mut tables, ev.site);
            w.event.clear();
            w.event.varint(event::TYPE, event::INSTANT);
            w.event.varint(event::NAME_IID, name);
            if let Some(site) = site {
                w.event.varint(event::SOURCE_LOCATION_IID, site);
            }
            starts.write(p as u32, k as u32, event::FLOW_IDS, &mut w.event);
            ends.write(
                p as u32,
                k as u32,
                event::TERMINATING_FLOW_IDS,
                &mut w.event,
            );
            finish_event_packet(&mut w)?;
            if matches!(ev.op, Op::EblockExit { .. })
                && let Some(key) = open.pop()
            {
                slice_event(
                    &mut w,
                    trace,
                    &mut tables,
                    sequence,
                    ts,
                    key,
                    event::SLICE_END,
                )?;
            }
        }
        // E-blocks a crash left open end with the process.
        let end = times[p].last().map_or(0, |&t| u64::from(t) + 1);
        while let Some(key) = open.pop() {
            slice_event(
                &mut w,
                trace,
                &mut tables,
                sequence,
                end,
                key,
                event::SLICE_END,
            )?;
        }
    }
    Ok(())
}

/// Writes the begin or end of an e-block's slice.
fn slice_event(
    w: &mut Writer<'_>,
    trace: &Trace,
    tables: &mut Interned,
    sequence: u64,
    ts: u64,
    key: NameKey,
    kind: u64,
) -> Result<()> {
    w.packet.clear();
    w.packet.varint(packet::TIMESTAMP, ts);
    w.packet.varint(packet::SEQUENCE_ID, sequence);
    w.packet.varint(packet::SEQUENCE_FLAGS, packet::NEEDS_STATE);
    w.interned.clear();
    let name = intern_name(w, trace, tables, key);
    w.event.clear();
    w.event.varint(event::TYPE, kind);
    if kind == event::SLICE_BEGIN {
        w.event.varint(event::NAME_IID, name);
    }
    finish_event_packet(w)
}

/// Adds the event and any newly interned strings to the packet and writes it.
fn finish_event_packet(w: &mut Writer<'_>) -> Result<()> {
    let Writer {
        packet,
        event,
        interned,
        ..
    } = w;
    packet.message(packet::TRACK_EVENT, event);
    if !interned.bytes().is_empty() {
        packet.message(packet::INTERNED_DATA, interned);
    }
    w.flush_packet()
}

/// The iid of an event name on this sequence, adding its definition to the packet's
/// interned data the first time.
fn intern_name(w: &mut Writer<'_>, trace: &Trace, tables: &mut Interned, key: NameKey) -> u64 {
    let next = tables.names.len() as u64 + 1;
    let iid = *tables.names.entry(key).or_insert(next);
    if iid == next {
        let text = match key {
            NameKey::Op(kind, Some(object)) => format!("{kind} {}", trace.object(object).label()),
            NameKey::Op(kind, None) => kind.to_owned(),
            NameKey::Eblock(name) => trace.name(name).to_owned(),
        };
        w.entry.clear();
        w.entry.varint(interned::IID, iid);
        w.entry.string(interned::NAME, &text);
        w.interned.message(interned::EVENT_NAMES, &w.entry);
    }
    iid
}

/// The iid of a source location on this sequence (none for events without a site), adding
/// its definition to the packet's interned data the first time.
fn intern_site(
    w: &mut Writer<'_>,
    trace: &Trace,
    tables: &mut Interned,
    site: SiteId,
) -> Option<u64> {
    let location = trace.site(site)?;
    let next = tables.sites.len() as u64 + 1;
    let iid = *tables.sites.entry(site).or_insert(next);
    if iid == next {
        w.entry.clear();
        w.entry.varint(interned::IID, iid);
        w.entry.string(interned::FILE_NAME, &location.file);
        w.entry
            .varint(interned::LINE_NUMBER, u64::from(location.line));
        w.interned.message(interned::SOURCE_LOCATIONS, &w.entry);
    }
    Some(iid)
}
