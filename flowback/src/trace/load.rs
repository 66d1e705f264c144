//! Reading a recording into a [`Trace`].
//!
//! A large recording's logs are decoded on several threads. The events of all logs, taken in
//! process order, are cut into one part per thread of about equal size; a log is cut only
//! where one of its blocks starts, since a block decodes on its own. Each part is read into
//! its own [`TraceBuilder`], which knows every process and where in each log its events begin,
//! so event references mean the same in all of them. The builders are then merged in order:
//! the later ones' objects, names and sites are renumbered into the first one's in the order
//! one builder reading the logs in turn would have met them, so the trace is the one a single
//! thread would have built.

use std::ops::Range;

use std::sync::Arc;

use ppd_formats::{Event, LogReader, LogState, Recording, progress};

use super::logged::Counted;
use super::{
    Compact, Ev, EventSink, EventStore, Logged, NO_OBJECT, NO_SITE, NameId, ObjIdx, Object, Op,
    SiteId, Trace, TraceBuilder,
};
use crate::error::Result;
use crate::trace::EventRef;

/// How many decompressed bytes cost about as much to read as decoding one event does: about
/// 67 ns per event and 0.3 ns per byte, measured on `bank` (a log of 83 bytes per event read
/// at 92 ns per event, one of 16 at 72).
const BYTES_PER_EVENT_COST: f64 = 224.0;

type Log = std::result::Result<LogReader, ppd_formats::FormatError>;

/// A builder holding some pieces, and which of them damage cut short.
type PartRead<S> = (TraceBuilder<S>, Vec<(Piece, bool)>);

/// Events `range` of log number `log` (the recording's process entry).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Piece {
    log: usize,
    range: Range<u64>,
}

impl Trace {
    /// Reads every event of every process of `recording`.
    ///
    /// A damaged log contributes the events before its damage, and the damage is listed in
    /// [`super::Process::damage`]; only a recording that cannot be listed at all is an error.
    pub fn load(recording: &Recording) -> Result<Trace> {
        read(recording)
    }
}

impl Trace<Compact> {
    /// Like [`Trace::load`], keeping the events in the [`Compact`] store.
    pub fn load_compact(recording: &Recording) -> Result<Trace<Compact>> {
        read(recording)
    }
}

impl Trace<Logged> {
    /// Like [`Trace::load`], keeping no event in memory: each process's events are decoded
    /// from its log again whenever they are read ([`Logged`]). The logs are read once, in
    /// turn, on this thread.
    pub fn load_logged(recording: &Recording) -> Result<Trace<Logged>> {
        let logs = open_logs(recording);
        let whole = whole_logs(&logs);
        progress::stage(READING, Some(events_of(&whole)));
        let (b, _) = read_pieces::<Counted>(recording, &logs, &whole, false, &mut |_, _| {});
        let dictionary = Arc::new(b.dictionary());
        let trace = b.build();
        let mut readers: Vec<Option<Arc<LogReader>>> =
            (0..trace.processes.len()).map(|_| None).collect();
        for (entry, log) in recording.processes().iter().zip(logs) {
            if let (Some(&p), Ok(reader)) = (trace.by_pid.get(&entry.id), log) {
                readers[p as usize] = Some(Arc::new(reader));
            }
        }
        Ok(trace.map_events(|p, counted| {
            Logged::new(
                p,
                readers[p as usize].take(),
                Arc::clone(&dictionary),
                counted,
            )
        }))
    }
}

fn open_logs(recording: &Recording) -> Vec<Log> {
    recording
        .processes()
        .iter()
        .map(|entry| recording.open_log(entry))
        .collect()
}

/// What the stage that decodes every log is called.
const READING: &str = "reading the logs";

/// How many events `pieces` hold.
fn events_of(pieces: &[Piece]) -> u64 {
    pieces.iter().map(|p| p.range.end - p.range.start).sum()
}

/// Every log whole, in order.
fn whole_logs(logs: &[Log]) -> Vec<Piece> {
    logs.iter()
        .enumerate()
        .map(|(log, reader)| Piece {
            log,
            range: 0..reader.as_ref().map_or(0, LogReader::event_count),
        })
        .collect()
}

/// Reads `recording` into a trace whose events are kept in `S`, on several threads when it is
/// large.
fn read<S: EventStore + EventSink>(recording: &Recording) -> Result<Trace<S>> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    read_with(recording, threads, crate::threads::WORTH_A_THREAD)
}

/// [`read`] on up to `threads` threads when the recording holds at least `parallel_from`
/// events.
fn read_with<S: EventStore + EventSink>(
    recording: &Recording,
    threads: usize,
    parallel_from: u64,
) -> Result<Trace<S>> {
    let logs = open_logs(recording);
    let ids_unique = {
        let mut ids: Vec<_> = recording.processes().iter().map(|e| e.id).collect();
        ids.sort_unstable();
        ids.windows(2).all(|w| w[0] != w[1])
    };
    let whole = whole_logs(&logs);
    let total = events_of(&whole);
    progress::stage(READING, Some(total));
    let parts = if total < parallel_from || !ids_unique || threads < 2 {
        vec![whole]
    } else {
        // Reading an event costs its decoding and its share of the decompressed bytes: a log
        // whose events carry large values costs more per event.
        let cost: Vec<f64> = logs
            .iter()
            .map(|l| {
                l.as_ref().map_or(1.0, |r| {
                    1.0 + r.raw_bytes() as f64
                        / r.event_count().max(1) as f64
                        / BYTES_PER_EVENT_COST
                })
            })
            .collect();
        let starts: Vec<Vec<u64>> = logs
            .iter()
            .map(|l| {
                l.as_ref()
                    .map_or(Vec::new(), |r| r.block_starts().collect())
            })
            .collect();
        parts(&whole, &starts, &cost, threads)
    };
    let logs = &logs;
    let mut read: Vec<PartRead<S>> = crate::threads::each(parts, |part| {
        read_pieces(recording, logs, &part, false, &mut |_, _| {})
    });
    // Damage ends a log: what a later part read after it is not the log's. Such a recording
    // is read again in turn, as rare as it is.
    let cut_inside = read.iter().enumerate().any(|(i, (_, pieces))| {
        pieces.iter().any(|(piece, cut_short)| {
            *cut_short
                && read[i + 1..]
                    .iter()
                    .any(|(_, later)| later.iter().any(|(l, _)| l.log == piece.log))
        })
    });
    if cut_inside {
        progress::stage(
            "reading the logs again, one after the other (damage ends one of them)",
            Some(total),
        );
        let (b, _) = read_pieces(recording, logs, &whole_logs(logs), false, &mut |_, _| {});
        return Ok(b.build());
    }
    let (mut first, _) = read.remove(0);
    let mut renumberings = Vec::new();
    let mut moves = Vec::new();
    for (later, pieces) in read {
        let (renumbering, events) = first.merge(later, &pieces);
        moves.extend(events.into_iter().map(|(p, e)| (p, renumberings.len(), e)));
        renumberings.push(renumbering);
    }
    append_events(&mut first, moves, &renumberings, threads);
    Ok(first.build())
}

/// Cuts the logs, whose `whole` pieces are given with the events each of their blocks starts
/// with and the cost of reading one of their events, into at most `threads` parts of about
/// equal cost, each a run of pieces in log order. A log is cut only where a block starts.
fn parts(whole: &[Piece], starts: &[Vec<u64>], cost: &[f64], threads: usize) -> Vec<Vec<Piece>> {
    let total: f64 = whole.iter().map(|p| p.range.end as f64 * cost[p.log]).sum();
    if total == 0.0 {
        return vec![whole.to_vec()];
    }
    let share = total / threads as f64;
    let mut parts: Vec<Vec<Piece>> = vec![Vec::new()];
    let mut room = share;
    for piece in whole {
        let per_event = cost[piece.log].max(f64::MIN_POSITIVE);
        let mut at = piece.range.start;
        loop {
            let left = (piece.range.end - at) as f64 * per_event;
            let last_part = parts.len() == threads;
            // Where this part's share ends in this log: the first block start from there on.
            let cut = if last_part || left <= room {
                piece.range.end
            } else {
                let want = at + (room / per_event) as u64;
                let blocks = &starts[piece.log];
                blocks[blocks.partition_point(|&b| b < want)..]
                    .first()
                    .copied()
                    .unwrap_or(piece.range.end)
                    .min(piece.range.end)
            };
            let part = parts.last_mut().expect("there is always a part");
            if cut > at || piece.range.is_empty() {
                part.push(Piece {
                    log: piece.log,
                    range: at..cut,
                });
            }
            room -= (cut - at) as f64 * per_event;
            at = cut;
            if room <= 0.0 && !last_part {
                parts.push(Vec::new());
                room = share;
            }
            if at >= piece.range.end {
                break;
            }
        }
    }
    parts.retain(|p| !p.is_empty());
    parts
}

/// How a later builder's objects, names and sites are numbered in the first one.
struct Renumbering {
    objects: Vec<ObjIdx>,
    names: Vec<NameId>,
    sites: Vec<SiteId>,
}

impl Renumbering {
    fn apply(&self, ev: &mut Ev) {
        ev.op.renumber(&self.objects, &self.names);
        if ev.site != NO_SITE {
            ev.site = self.sites[ev.site as usize];
        }
    }
}

/// Appends the `moves` (a process, the renumbering its events need, the events), in order, to
/// the processes of `first`, on up to `threads` threads: one process's moves go to one thread,
/// and the processes are dealt out by event count.
fn append_events<S: EventStore + EventSink>(
    first: &mut TraceBuilder<S>,
    moves: Vec<(usize, usize, S)>,
    renumberings: &[Renumbering],
    threads: usize,
) {
    let mut jobs: Vec<Append<S>> = Vec::new();
    for (p, r, events) in moves {
        match jobs.iter_mut().find(|job| job.process == p) {
            Some(job) => job.sources.push((r, events)),
            None => jobs.push(Append {
                process: p,
                target: std::mem::take(&mut first.trace.processes[p].events),
                sources: vec![(r, events)],
            }),
        }
    }
    jobs.sort_by_key(|job| std::cmp::Reverse(job.size()));
    let mut shares: Vec<(usize, Vec<Append<S>>)> =
        (0..threads.max(1)).map(|_| (0, Vec::new())).collect();
    for job in jobs {
        let least = shares
            .iter_mut()
            .min_by_key(|(load, _)| *load)
            .expect("at least one thread");
        least.0 += job.size();
        least.1.push(job);
    }
    let done = crate::threads::each(shares, |(_, jobs)| {
        jobs.into_iter()
            .map(|job| job.run(renumberings))
            .collect::<Vec<_>>()
    });
    for (p, events) in done.into_iter().flatten() {
        first.trace.processes[p].events = events;
    }
}

/// Events of one process to append to what the first builder holds of it.
struct Append<S> {
    process: usize,
    target: S,
    /// Each with the number of the renumbering it needs.
    sources: Vec<(usize, S)>,
}

impl<S: EventStore + EventSink> Append<S> {
    fn size(&self) -> usize {
        self.sources.iter().map(|(_, e)| e.len()).sum()
    }

    fn run(mut self, renumberings: &[Renumbering]) -> (usize, S) {
        for (r, events) in self.sources {
            self.target.reserve(events.len());
            for mut ev in events.iter() {
                renumberings[r].apply(&mut ev);
                self.target.push(ev);
            }
        }
        (self.process, self.target)
    }
}

/// A builder that knows every process of `recording` and holds the events of `pieces`, each
/// shown to `observe`; with whether each piece was cut short by damage. User values are
/// decoded only with `values`: the trace keeps none.
fn read_pieces<S: EventSink>(
    recording: &Recording,
    logs: &[Log],
    pieces: &[Piece],
    values: bool,
    observe: &mut dyn FnMut(EventRef, &Event),
) -> (TraceBuilder<S>, Vec<(Piece, bool)>) {
    let mut b = TraceBuilder::default();
    let mut dense = Vec::with_capacity(recording.processes().len());
    for entry in recording.processes() {
        let p = b.add_process(entry.id, &entry.name, entry.parent);
        b.set_os_pid(p, entry.os_pid);
        dense.push(p);
    }
    b.first_index = vec![0; b.trace.processes.len()];
    let read = pieces
        .iter()
        .map(|piece| {
            let cut_short = read_piece(
                &mut b,
                dense[piece.log],
                &logs[piece.log],
                piece,
                values,
                observe,
            );
            (piece.clone(), cut_short)
        })
        .collect();
    for proc in &mut b.trace.processes {
        // A log that closed cleanly but lost events to damage is not a complete account.
        proc.complete &= proc.damage.is_empty();
    }
    (b, read)
}

/// Reads `piece` of `log` into process `p`; whether damage ended it early.
fn read_piece<S: EventSink>(
    b: &mut TraceBuilder<S>,
    p: u32,
    log: &Log,
    piece: &Piece,
    values: bool,
    observe: &mut dyn FnMut(EventRef, &Event),
) -> bool {
    let proc = &mut b.trace.processes[p as usize];
    let reader = match log {
        Ok(r) => r,
        Err(e) => {
            proc.damage.push(e.to_string());
            proc.complete = false;
            return true;
        }
    };
    if piece.range.start == 0 {
        proc.complete = reader.state() == LogState::Complete;
        proc.damage
            .extend(reader.damage().iter().map(|d| d.to_string()));
    }
    if piece.range.is_empty() {
        return false;
    }
    proc.events
        .reserve((piece.range.end - piece.range.start) as usize);
    b.first_index[p as usize] = piece.range.start as u32;
    let events = match reader.events_from(piece.range.start) {
        Ok(events) => events.until(piece.range.end),
        Err(e) => {
            b.trace.processes[p as usize].damage.push(e.to_string());
            return true;
        }
    };
    let events = if values {
        events
    } else {
        events.without_values()
    };
    for item in events {
        match item {
            Ok((index, event)) => {
                observe(EventRef::new(p, index as u32), &event);
                b.push_event(p, &event);
            }
            Err(e) => {
                b.trace.processes[p as usize].damage.push(e.to_string());
                return true;
            }
        }
    }
    false
}

impl<S: EventStore + EventSink> TraceBuilder<S> {
    /// Takes over the `pieces` of `later`, a builder that read the logs after this one's. The
    /// processes' ids are distinct, so a log's number is its process's.
    ///
    /// Everything but the events is merged here; the events of each piece are returned with
    /// the renumbering they need, for [`append_events`] to move on several threads.
    fn merge(
        &mut self,
        later: TraceBuilder<S>,
        pieces: &[(Piece, bool)],
    ) -> (Renumbering, Vec<(usize, S)>) {
        let TraceBuilder {
            trace: mut theirs,
            net,
            ..
        } = later;
        let names: Vec<NameId> = theirs
            .names
            .iter()
            .map(|n| self.intern_name_value(n))
            .collect();
        let sites: Vec<SiteId> = theirs
            .sites
            .iter()
            .map(|s| self.intern_site_value((**s).clone()))
            .collect();
        let objects: Vec<ObjIdx> = theirs
            .objects
            .iter()
            .map(|o| self.merge_object(o, &sites))
            .collect();
        let mut events = Vec::with_capacity(pieces.len());
        for (piece, _) in pieces {
            let p = piece.log;
            let from = &mut theirs.processes[p];
            let into = &mut self.trace.processes[p];
            if piece.range.start == 0 {
                into.complete = from.complete;
            } else {
                into.complete &= from.complete;
            }
            into.damage.append(&mut from.damage);
            events.push((p, std::mem::take(&mut from.events)));
        }
        let object = |o: ObjIdx| objects[o as usize];
        self.net.ends.extend(net.ends);
        for (socket, writes) in net.writes {
            self.net
                .writes
                .entry(object(socket))
                .or_default()
                .append(writes);
        }
        self.net.reads.extend(
            net.reads
                .into_iter()
                .map(|(at, o, last)| (at, object(o), last)),
        );
        self.net.sends.extend(
            net.sends
                .into_iter()
                .map(|(o, seq, to, digest)| (object(o), seq, to, digest)),
        );
        self.net.receipts.extend(
            net.receipts
                .into_iter()
                .map(|(at, o, from, digest)| (at, object(o), from, digest)),
        );
        let renumbering = Renumbering {
            objects,
            names,
            sites,
        };
        (renumbering, events)
    }

    /// Takes what a later builder learnt of an object, as its events would have told this one:
    /// a `Create` decides kind, initial value and name; a use guesses the kind only if nothing
    /// had; a socket's opening names it; the first site stays.
    fn merge_object(&mut self, theirs: &Object, sites: &[SiteId]) -> ObjIdx {
        let o = self.object(theirs.id);
        let ours = &mut self.trace.objects[o as usize];
        let created = theirs.created.is_some();
        if created || ours.kind.is_none() {
            ours.kind = theirs.kind.or(ours.kind);
        }
        if created {
            ours.init = theirs.init;
            ours.created = theirs.created;
        }
        if created || theirs.name.is_some() {
            ours.name.clone_from(&theirs.name);
        }
        if ours.site == NO_SITE && theirs.site != NO_SITE {
            ours.site = sites[theirs.site as usize];
        }
        o
    }
}

impl Op {
    /// Renumbers the objects and names this event refers to.
    fn renumber(&mut self, objects: &[ObjIdx], names: &[NameId]) {
        let object = |o: &mut ObjIdx| {
            if *o != NO_OBJECT {
                *o = objects[*o as usize];
            }
        };
        match self {
            Op::Create { object: o }
            | Op::Lock { object: o, .. }
            | Op::Unlock { object: o }
            | Op::SemAcquire { object: o, .. }
            | Op::SemRelease { object: o, .. }
            | Op::Atomic { object: o, .. }
            | Op::Blocked { object: o }
            | Op::Outcome { object: o, .. }
            | Op::RwAcquire { object: o, .. }
            | Op::RwRelease { object: o, .. }
            | Op::Send { channel: o, .. }
            | Op::Recv { channel: o, .. }
            | Op::RecvNone { channel: o, .. }
            | Op::Undelivered { channel: o, .. }
            | Op::NetOpen { socket: o }
            | Op::NetWrite { socket: o, .. }
            | Op::NetFail { socket: o } => object(o),
            Op::NetRead { socket, peer, .. } => {
                object(socket);
                object(peer);
            }
            Op::Panic { message: n }
            | Op::EblockEnter { name: n }
            | Op::EblockExit { name: n }
            | Op::Mark { label: n } => *n = names[*n as usize],
            Op::Start { .. }
            | Op::Spawn { .. }
            | Op::Join { .. }
            | Op::Exit
            | Op::Select { .. }
            | Op::Clock
            | Op::Random
            | Op::JoinBlocked { .. }
            | Op::Sleep { .. }
            | Op::Answer { .. } => {}
        }
    }
}

#[cfg(test)]
mod tests;
