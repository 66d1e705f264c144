//! Where a process's events are kept: [`EventStore`] to read them, [`EventSink`] to fill the
//! store as a log is read, and the kinds of store.
//!
//! * `Vec<Ev>`: 32 bytes per event, any event read in constant time. What the analyses that
//!   jump around the run use (`why`, pictures, exports, tasks).
//! * [`Compact`]: about 3–8 bytes per event (a tag, the site and the fields as variable-length
//!   integers), read in order, or from any event by decoding at most 7 events before it. What
//!   `ppd races` uses: every pass of its analyses reads the events in order, so it keeps a run
//!   of ten million events in tens of megabytes rather than hundreds.
//! * [`Logged`](super::Logged): nothing in memory; the events are decoded again from their log
//!   each time they are read. What `ppd analyze tasks` uses, so that its memory follows the
//!   tasks in flight rather than the run.

use ppd_formats::ProcessId;
use ppd_formats::event::{
    AtomicOp, EventKind, MemOrdering, Outcome, Question, RecvOutcome, RwMode,
};

use super::{Ev, ObjIdx, Op};

/// A process's events, in log order.
pub trait EventStore: std::fmt::Debug + Send + Sync {
    /// The events from one on, in order.
    type Iter<'a>: Iterator<Item = Ev>
    where
        Self: 'a;

    /// How many events there are.
    fn len(&self) -> usize;

    /// Whether there are none.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Event `k`, if there is one.
    fn at(&self, k: usize) -> Option<Ev>;

    /// The events from `k` on (none if `k` is past the end).
    fn iter_from(&self, k: usize) -> Self::Iter<'_>;

    /// Every event, in order.
    fn iter(&self) -> Self::Iter<'_> {
        self.iter_from(0)
    }

    /// The last event.
    fn last(&self) -> Option<Ev> {
        self.len().checked_sub(1).and_then(|k| self.at(k))
    }
}

/// What a process's events are appended to as its log is read.
pub trait EventSink: Default + std::fmt::Debug + Send + Sync {
    /// How many events were appended.
    fn appended(&self) -> usize;

    /// Appends an event.
    fn push(&mut self, ev: Ev);

    /// Makes room for `additional` more events.
    fn reserve(&mut self, additional: usize);

    /// Says which write socket read `k` (an [`Op::NetRead`]) ends in: pairing is known only
    /// once every log is read.
    fn set_read_source(&mut self, k: usize, peer: ObjIdx, seq: u64);
}

impl EventStore for Vec<Ev> {
    type Iter<'a> = std::iter::Copied<std::slice::Iter<'a, Ev>>;

    fn len(&self) -> usize {
        <[Ev]>::len(self)
    }

    fn at(&self, k: usize) -> Option<Ev> {
        self.get(k).copied()
    }

    fn iter_from(&self, k: usize) -> Self::Iter<'_> {
        self.get(k..).unwrap_or_default().iter().copied()
    }
}

impl EventSink for Vec<Ev> {
    fn appended(&self) -> usize {
        <[Ev]>::len(self)
    }

    fn push(&mut self, ev: Ev) {
        Vec::push(self, ev);
    }

    fn reserve(&mut self, additional: usize) {
        Vec::reserve(self, additional);
    }

    fn set_read_source(&mut self, k: usize, peer: ObjIdx, seq: u64) {
        if let Some(Ev {
            op: Op::NetRead {
                peer: p, seq: s, ..
            },
            ..
        }) = self.get_mut(k)
        {
            *p = peer;
            *s = seq;
        }
    }
}

/// Every how many events [`Compact`] notes where an event starts.
const STRIDE: usize = 8;

/// Events encoded one after another: a tag byte, the site, then the fields.
#[derive(Clone, Debug, Default)]
pub struct Compact {
    bytes: Vec<u8>,
    /// Where events 0, `STRIDE`, 2 × `STRIDE`, … start in `bytes`.
    starts: Vec<u64>,
    len: usize,
}

impl Compact {
    /// Bytes used per event, the index included.
    pub fn bytes_per_event(&self) -> f64 {
        let used = self.bytes.len() + self.starts.len() * std::mem::size_of::<u64>();
        used as f64 / self.len.max(1) as f64
    }

    /// Where event `k` starts: decodes from the last noted start before it.
    fn offset(&self, k: usize) -> usize {
        let mut pos = self.starts[k / STRIDE] as usize;
        for _ in 0..k % STRIDE {
            decode(&self.bytes, &mut pos);
        }
        pos
    }
}

impl EventStore for Compact {
    type Iter<'a> = CompactIter<'a>;

    fn len(&self) -> usize {
        self.len
    }

    fn at(&self, k: usize) -> Option<Ev> {
        (k < self.len).then(|| {
            let mut pos = self.offset(k);
            decode(&self.bytes, &mut pos)
        })
    }

    fn iter_from(&self, k: usize) -> CompactIter<'_> {
        if k >= self.len {
            return CompactIter {
                bytes: &self.bytes,
                pos: self.bytes.len(),
                left: 0,
            };
        }
        CompactIter {
            bytes: &self.bytes,
            pos: self.offset(k),
            left: self.len - k,
        }
    }
}

impl EventSink for Compact {
    fn appended(&self) -> usize {
        self.len
    }

    fn push(&mut self, ev: Ev) {
        if self.len.is_multiple_of(STRIDE) {
            self.starts.push(self.bytes.len() as u64);
        }
        encode(&mut self.bytes, ev);
        self.len += 1;
    }

    fn reserve(&mut self, additional: usize) {
        // A guess from the runs measured: most events take 3 to 6 bytes.
        self.bytes.reserve(additional.saturating_mul(5));
        self.starts.reserve(additional / STRIDE + 1);
    }

    fn set_read_source(&mut self, k: usize, peer: ObjIdx, seq: u64) {
        if k >= self.len {
            return;
        }
        let start = self.offset(k);
        let tag = self.bytes[start];
        if tag != EventKind::NetRead as u8 && tag != EventKind::NetRecvFrom as u8 {
            return;
        }
        // The tag, the site, the socket, then the two fixed-width fields.
        let mut pos = start + 1;
        varint(&self.bytes, &mut pos);
        varint(&self.bytes, &mut pos);
        self.bytes[pos..pos + 4].copy_from_slice(&peer.to_le_bytes());
        self.bytes[pos + 4..pos + 12].copy_from_slice(&seq.to_le_bytes());
    }
}

/// The events of a [`Compact`] store from one on.
#[derive(Debug, Clone)]
pub struct CompactIter<'a> {
    bytes: &'a [u8],
    pos: usize,
    left: usize,
}

impl Iterator for CompactIter<'_> {
    type Item = Ev;

    #[inline]
    fn next(&mut self) -> Option<Ev> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        Some(decode(self.bytes, &mut self.pos))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl ExactSizeIterator for CompactIter<'_> {}

const RECV_OUTCOMES: [RecvOutcome; 3] = [
    RecvOutcome::Empty,
    RecvOutcome::Timeout,
    RecvOutcome::Disconnected,
];
const ATOMIC_OPS: [AtomicOp; 4] = AtomicOp::ALL;
const ORDERINGS: [MemOrdering; 5] = MemOrdering::ALL;
const QUESTIONS: [Question; 3] = [
    Question::IsFinished,
    Question::AvailableParallelism,
    Question::ChannelLen,
];
const OUTCOMES: [Outcome; 2] = [Outcome::WouldBlock, Outcome::Acquired];
const RW_MODES: [RwMode; 2] = [RwMode::Read, RwMode::Write];

/// The position of `x` in `all`, as a byte.
fn small<T: PartialEq>(all: &[T], x: &T) -> u8 {
    all.iter().position(|a| a == x).unwrap_or(0) as u8
}

fn put(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn put_pid(out: &mut Vec<u8>, pid: Option<ProcessId>) {
    put(out, pid.map_or(0, |p| u64::from(p.0) + 1));
}

fn encode(out: &mut Vec<u8>, ev: Ev) {
    // The first byte is the event's kind, in the table's order (`EventKind::ALL`).
    let (kind, site) = (ev.op.kind(), ev.site);
    out.push(kind.index() as u8);
    put(out, u64::from(site.wrapping_add(1)));
    match ev.op {
        Op::Start { parent } => put_pid(out, parent),
        Op::Spawn { child } | Op::Join { child } | Op::JoinBlocked { child } => {
            put(out, u64::from(child.0));
        }
        Op::Exit | Op::Clock | Op::Random => {}
        Op::Panic { message: n }
        | Op::EblockEnter { name: n }
        | Op::EblockExit { name: n }
        | Op::Mark { label: n } => put(out, u64::from(n)),
        Op::Create { object: o }
        | Op::Unlock { object: o }
        | Op::Blocked { object: o }
        | Op::NetOpen { socket: o }
        | Op::NetFail { socket: o } => put(out, u64::from(o)),
        Op::Send { channel, seq } | Op::Undelivered { channel, seq } => {
            put(out, u64::from(channel));
            put(out, seq);
        }
        Op::Recv {
            channel,
            sender,
            seq,
        } => {
            put(out, u64::from(channel));
            put(out, u64::from(sender.0));
            put(out, seq);
        }
        Op::RecvNone { channel, outcome } => {
            put(out, u64::from(channel));
            out.push(small(&RECV_OUTCOMES, &outcome));
        }
        Op::Select { index } => put(out, u64::from(index)),
        Op::Lock {
            object,
            version,
            prev,
        }
        | Op::SemAcquire {
            object,
            version,
            prev,
        }
        | Op::SemRelease {
            object,
            version,
            prev,
        } => {
            put(out, u64::from(object));
            put(out, version);
            put_pid(out, prev);
        }
        Op::Atomic {
            object,
            version,
            prev,
            op,
            ordering,
        } => {
            put(out, u64::from(object));
            put(out, version);
            put_pid(out, prev);
            out.push(small(&ATOMIC_OPS, &op) << 4 | small(&ORDERINGS, &ordering));
        }
        Op::Sleep { nanos } => put(out, nanos),
        Op::Answer { question, value } => {
            out.push(small(&QUESTIONS, &question));
            put(out, value);
        }
        Op::Outcome { object, outcome } => {
            put(out, u64::from(object));
            out.push(small(&OUTCOMES, &outcome));
        }
        Op::RwAcquire {
            object,
            version,
            prev,
            mode,
        } => {
            put(out, u64::from(object));
            put(out, version);
            put_pid(out, prev);
            out.push(small(&RW_MODES, &mode));
        }
        Op::RwRelease {
            object,
            version,
            mode,
        } => {
            put(out, u64::from(object));
            put(out, version);
            out.push(small(&RW_MODES, &mode));
        }
        // Whether it is a datagram is in the kind.
        Op::NetWrite { socket, seq, .. } => {
            put(out, u64::from(socket));
            put(out, seq);
        }
        Op::NetRead {
            socket,
            peer,
            seq,
            end,
            ..
        } => {
            // Fixed width where pairing fills them in later (`set_read_source`).
            put(out, u64::from(socket));
            out.extend_from_slice(&peer.to_le_bytes());
            out.extend_from_slice(&seq.to_le_bytes());
            out.push(u8::from(end));
        }
    }
}

/// A variable-length integer. The bytes were written by [`encode`] in this process, so they
/// are well formed.
#[inline]
fn varint(bytes: &[u8], pos: &mut usize) -> u64 {
    let mut v = 0u64;
    let mut shift = 0;
    loop {
        let b = bytes[*pos];
        *pos += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            return v;
        }
        shift += 7;
    }
}

#[inline]
fn byte(bytes: &[u8], pos: &mut usize) -> u8 {
    let b = bytes[*pos];
    *pos += 1;
    b
}

#[inline]
fn u32_at(bytes: &[u8], pos: &mut usize) -> u32 {
    varint(bytes, pos) as u32
}

#[inline]
fn pid_at(bytes: &[u8], pos: &mut usize) -> Option<ProcessId> {
    match varint(bytes, pos) {
        0 => None,
        p => Some(ProcessId((p - 1) as u32)),
    }
}

#[inline]
fn decode(bytes: &[u8], pos: &mut usize) -> Ev {
    let kind = EventKind::ALL[usize::from(byte(bytes, pos))];
    // Stored plus one, so that `NO_SITE` (`u32::MAX`) takes one byte.
    let site = (varint(bytes, pos) as u32).wrapping_sub(1);
    let b = bytes;
    let op = match kind {
        EventKind::Start => Op::Start {
            parent: pid_at(b, pos),
        },
        EventKind::Spawn => Op::Spawn {
            child: ProcessId(u32_at(b, pos)),
        },
        EventKind::Join => Op::Join {
            child: ProcessId(u32_at(b, pos)),
        },
        EventKind::JoinBlocked => Op::JoinBlocked {
            child: ProcessId(u32_at(b, pos)),
        },
        EventKind::Exit => Op::Exit,
        EventKind::Clock => Op::Clock,
        EventKind::Random => Op::Random,
        EventKind::Panic => Op::Panic {
            message: u32_at(b, pos),
        },
        EventKind::EblockEnter => Op::EblockEnter {
            name: u32_at(b, pos),
        },
        EventKind::EblockExit => Op::EblockExit {
            name: u32_at(b, pos),
        },
        EventKind::Mark => Op::Mark {
            label: u32_at(b, pos),
        },
        EventKind::Create => Op::Create {
            object: u32_at(b, pos),
        },
        EventKind::Unlock => Op::Unlock {
            object: u32_at(b, pos),
        },
        EventKind::Blocked => Op::Blocked {
            object: u32_at(b, pos),
        },
        EventKind::NetOpen => Op::NetOpen {
            socket: u32_at(b, pos),
        },
        EventKind::NetFail => Op::NetFail {
            socket: u32_at(b, pos),
        },
        EventKind::Send => Op::Send {
            channel: u32_at(b, pos),
            seq: varint(b, pos),
        },
        EventKind::Undelivered => Op::Undelivered {
            channel: u32_at(b, pos),
            seq: varint(b, pos),
        },
        EventKind::Recv => Op::Recv {
            channel: u32_at(b, pos),
            sender: ProcessId(u32_at(b, pos)),
            seq: varint(b, pos),
        },
        EventKind::RecvNone => Op::RecvNone {
            channel: u32_at(b, pos),
            outcome: RECV_OUTCOMES[usize::from(byte(b, pos))],
        },
        EventKind::Select => Op::Select {
            index: u32_at(b, pos),
        },
        EventKind::Lock => Op::Lock {
            object: u32_at(b, pos),
            version: varint(b, pos),
            prev: pid_at(b, pos),
        },
        EventKind::SemAcquire => Op::SemAcquire {
            object: u32_at(b, pos),
            version: varint(b, pos),
            prev: pid_at(b, pos),
        },
        EventKind::SemRelease => Op::SemRelease {
            object: u32_at(b, pos),
            version: varint(b, pos),
            prev: pid_at(b, pos),
        },
        EventKind::Atomic => {
            let object = u32_at(b, pos);
            let version = varint(b, pos);
            let prev = pid_at(b, pos);
            let how = byte(b, pos);
            Op::Atomic {
                object,
                version,
                prev,
                op: ATOMIC_OPS[usize::from(how >> 4)],
                ordering: ORDERINGS[usize::from(how & 0xf)],
            }
        }
        EventKind::Sleep => Op::Sleep {
            nanos: varint(b, pos),
        },
        EventKind::Answer => Op::Answer {
            question: QUESTIONS[usize::from(byte(b, pos))],
            value: varint(b, pos),
        },
        EventKind::Outcome => Op::Outcome {
            object: u32_at(b, pos),
            outcome: OUTCOMES[usize::from(byte(b, pos))],
        },
        EventKind::RwAcquire => Op::RwAcquire {
            object: u32_at(b, pos),
            version: varint(b, pos),
            prev: pid_at(b, pos),
            mode: RW_MODES[usize::from(byte(b, pos))],
        },
        EventKind::RwRelease => Op::RwRelease {
            object: u32_at(b, pos),
            version: varint(b, pos),
            mode: RW_MODES[usize::from(byte(b, pos))],
        },
        EventKind::NetWrite | EventKind::NetSendTo => Op::NetWrite {
            socket: u32_at(b, pos),
            seq: varint(b, pos),
            datagram: kind == EventKind::NetSendTo,
        },
        EventKind::NetRead | EventKind::NetRecvFrom => {
            let socket = u32_at(b, pos);
            let mut peer = [0; 4];
            peer.copy_from_slice(&b[*pos..*pos + 4]);
            let mut seq = [0; 8];
            seq.copy_from_slice(&b[*pos + 4..*pos + 12]);
            *pos += 12;
            let end = byte(b, pos) != 0;
            Op::NetRead {
                socket,
                peer: u32::from_le_bytes(peer),
                seq: u64::from_le_bytes(seq),
                datagram: kind == EventKind::NetRecvFrom,
                end,
            }
        }
    };
    Ev { op, site }
}

#[cfg(test)]
mod tests;
