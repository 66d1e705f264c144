//! Vector timestamps for every event, computed after the run from the per-process logs.
//!
//! This is the post-mortem algorithm of Lin's thesis, §5.4.1 ("Algorithm for Logical Time
//! Stamping"), which replays the message-passing events of a finished run to give each event a
//! Fidge vector clock: every process has a queue of events still to be stamped, a list keeps
//! stamped sends until their receive is met, and a stack of process ids says which queue to
//! look at next. A send is stamped and parked; a receive is stamped when its send has been,
//! taking the component-wise maximum; a process whose head event cannot be stamped yet simply
//! waits until the event it needs is stamped and pushes it back on the stack.
//!
//! Beyond the thesis, which has only send and receive between processors:
//!
//! * every synchronization edge of [`crate::vclock::hb`] is a "send" (the event the edge starts from
//!   parks its clock under a key) and a "receive" (the event it ends at waits for the key):
//!   messages are matched by (channel, sequence number) rather than by destination processor;
//!   unlock → lock, spawn → start and exit → join by what the events name;
//! * semaphores and atomics are replayed object by object in version order, so each object's
//!   state (the semaphore's permits, the atomic's release sequence) is exactly what it was at
//!   each access;
//! * the thesis pushes a processor id per event read; here each process is on the stack at most
//!   once, and a waiting process is pushed again only by the event it waits for, so the work is
//!   linear in events × processes (one clock merge per incoming edge);
//! * a recording cut short by a crash can lack the event another one waits for (a version never
//!   logged, a send in a damaged block): such waits are skipped, and if the replay still cannot
//!   go on the lowest waiting process is let through, with a note.
//!
//! Clocks tick once per event (the thesis's `D` is 1), so the own component of event *k* of a
//! process is *k* + 1 and only events with an incoming edge need their whole vector stored:
//! the other components of any event are those of the latest such *checkpoint* before it in
//! its process. Lin's §7.2.2 discusses the space time stamps take (a vector of *n* per event);
//! stored this way they take *n* per receiving event plus a quarter of a byte per event (which
//! checkpoint covers it: `vclock/covering.rs`), and the work is one merge of *n* components
//! per synchronization edge: linear in events × processes. An analysis that needs the clocks
//! of only some events, as it meets them, can have them streamed instead ([`Clocks::stream`]):
//! then nothing is stored, and memory is that of the replay's own state.

use std::collections::VecDeque;

use ppd_formats::ProcessId;

use crate::fasthash::{FastMap, FastSet};
use hb::SyncKind;
use ppd_formats::clock::{self, VectorClock};
use ppd_formats::event::{AtomicOp, MemOrdering, RwMode};
use ppd_formats::order::{Order, Point, Rule, Sequence, Sync};
use ppd_formats::progress;

use crate::threads;
use crate::trace::{Ev, EventRef, EventStore, ObjIdx, Op, SiteId, Trace};
use covering::Covering;
use seq_set::SeqSet;

/// Told about the events an online analysis needs as the replay stamps them, with their
/// whole clocks: such an analysis needs no second pass over the trace, and no stored clocks.
pub trait Observer {
    /// Whether [`Observer::mark`] wants to be called: a constant, so that an observer that
    /// does not want marks adds nothing to the stamping of local events.
    const MARKS: bool = false;

    /// What the stamping is called in a progress report, this analysis along.
    const STAGE: &'static str = "computing the vector clocks";

    /// Access `e` to `object` did `op` with `ordering` at `site`; `clock` is its vector clock.
    /// Each object's accesses come in version order.
    #[inline]
    fn access(
        &mut self,
        e: EventRef,
        object: ObjIdx,
        op: AtomicOp,
        ordering: MemOrdering,
        site: SiteId,
        clock: &[u32],
    ) {
        let _ = (e, object, op, ordering, site, clock);
    }

    /// Mark `e` is stamped with `clock` (only called when [`Observer::MARKS`] is set). Each
    /// process's marks come in its order, and a mark comes after every event that happened
    /// before it.
    #[inline]
    fn mark(&mut self, e: EventRef, clock: &[u32]) {
        let _ = (e, clock);
    }
}

impl Observer for () {}

/// A synchronization edge between events of two different processes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SyncEdge {
    /// Where it starts (a send, an unlock, a V, a release write, a spawn, an exit).
    pub from: EventRef,
    /// Where it ends.
    pub to: EventRef,
    /// What kind it is.
    pub kind: SyncKind,
}

/// The clocks of one process, stored at its checkpoints.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub(crate) struct ProcClocks {
    /// Events whose clock took another process's time, ascending.
    pub(crate) checkpoints: Vec<u32>,
    /// The vector of each checkpoint, `width` components each.
    pub(crate) pool: Vec<u32>,
    /// For every event, the number of the latest checkpoint at or before it (or none).
    pub(crate) covering: Covering,
}

/// The vector clock of every event of a trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Clocks {
    width: usize,
    procs: Vec<ProcClocks>,
    edges: Vec<SyncEdge>,
    /// How many edges were found: `edges.len()`, unless they were only counted.
    edge_count: usize,
    notes: Vec<String>,
}

impl Clocks {
    /// Computes the clocks of every event of `trace`.
    pub fn compute<S: EventStore>(trace: &Trace<S>) -> Clocks {
        Engine::new(trace, &mut (), Keep::Everything).run()
    }

    /// Computes the clocks, telling `observer` about each atomic access as it is stamped
    /// (each object's accesses in version order).
    pub fn compute_observed<O: Observer, S: EventStore>(
        trace: &Trace<S>,
        observer: &mut O,
    ) -> Clocks {
        Engine::new(trace, observer, Keep::Everything).run()
    }

    /// Like [`Clocks::compute_observed`], but the edges are only counted, not listed:
    /// [`Clocks::edges`] is empty and [`Clocks::edge_count`] says how many there were. A
    /// report that prints their number saves 20 bytes per edge (a message-passing run has
    /// one edge per message). Crate-private so that such clocks never reach a caller that
    /// draws the edges.
    pub(crate) fn compute_counting_edges<O: Observer, S: EventStore>(
        trace: &Trace<S>,
        observer: &mut O,
    ) -> Clocks {
        Engine::new(trace, observer, Keep::CountedEdges).run()
    }

    /// Stamps every event of `trace` for `observer` alone and keeps no clock: memory stays
    /// that of the replay's state (each process's clock, the clocks of messages in flight),
    /// however long the run. Gives the notes [`Clocks::notes`] would.
    pub fn stream<O: Observer, S: EventStore>(trace: &Trace<S>, observer: &mut O) -> Vec<String> {
        let mut engine = Engine::new(trace, observer, Keep::Nothing);
        engine.stamp_all();
        engine.notes
    }

    /// Number of components: the number of processes.
    pub fn width(&self) -> usize {
        self.width
    }

    /// Component `q` of the clock of event `e`.
    #[inline]
    pub fn component(&self, e: EventRef, q: u32) -> u32 {
        if q == e.process {
            return e.index + 1;
        }
        let proc = &self.procs[e.process as usize];
        match proc.covering.checkpoint_of(e.index) {
            Some(cp) => proc.pool[cp as usize * self.width + q as usize],
            None => 0,
        }
    }

    /// The whole clock of event `e`.
    pub fn vector(&self, e: EventRef) -> Vec<u32> {
        (0..self.width as u32)
            .map(|q| self.component(e, q))
            .collect()
    }

    /// Whether `a` happened before `b` (a → b).
    #[inline]
    pub fn happened_before(&self, a: EventRef, b: EventRef) -> bool {
        happened_before(a, b, |q| self.component(b, q))
    }

    /// Whether neither event happened before the other (and they are distinct).
    pub fn concurrent(&self, a: EventRef, b: EventRef) -> bool {
        a != b && !self.happened_before(a, b) && !self.happened_before(b, a)
    }

    /// The synchronization edges between processes, in the order they were found.
    pub fn edges(&self) -> &[SyncEdge] {
        &self.edges
    }

    /// How many synchronization edges between processes there are.
    pub fn edge_count(&self) -> usize {
        self.edge_count
    }

    /// What the computation had to work around (events a crash cut off, inconsistencies).
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// How many events carry a stored vector.
    pub fn checkpoint_count(&self) -> usize {
        self.procs.iter().map(|p| p.checkpoints.len()).sum()
    }

    pub(crate) fn parts(&self) -> (&[ProcClocks], &[SyncEdge], &[String]) {
        (&self.procs, &self.edges, &self.notes)
    }

    /// Rebuilds clocks from stored parts, checking them against the trace; `None` if they do
    /// not fit it.
    pub(crate) fn from_parts<S: EventStore>(
        trace: &Trace<S>,
        checkpoints: Vec<(Vec<u32>, Vec<u32>)>,
        edges: Vec<SyncEdge>,
        notes: Vec<String>,
    ) -> Option<Clocks> {
        let width = trace.processes().len();
        if checkpoints.len() != width {
            return None;
        }
        let mut procs = Vec::with_capacity(width);
        for (p, (cps, pool)) in checkpoints.into_iter().enumerate() {
            let len = trace.processes()[p].events.len();
            if pool.len() != cps.len().checked_mul(width)? {
                return None;
            }
            let ascending = cps.windows(2).all(|w| w[0] < w[1]);
            if !ascending || cps.last().is_some_and(|&k| k as usize >= len) {
                return None;
            }
            // The own component of a checkpoint is its position: a cheap check that the vectors
            // are where they belong.
            for (i, &k) in cps.iter().enumerate() {
                if pool[i * width + p] != k + 1 {
                    return None;
                }
            }
            let covering = Covering::new(u32::try_from(len).ok()?, &cps);
            procs.push(ProcClocks {
                checkpoints: cps,
                pool,
                covering,
            });
        }
        let valid = |r: EventRef| trace.get(r).is_some();
        if !edges.iter().all(|e| valid(e.from) && valid(e.to)) {
            return None;
        }
        Some(Clocks {
            width,
            procs,
            edge_count: edges.len(),
            edges,
            notes,
        })
    }
}

/// The position of each versioned access among the versions present in the logs.
///
/// Versions count from 1 without gaps in a whole recording; a crash can leave a version that
/// was assigned but never logged. Ranks close such gaps, so replaying an object in rank order
/// never waits for an access that does not exist.
#[derive(Debug, Default)]
pub(crate) struct Ranks {
    /// Per object: `None` when its versions are exactly 1..=count (the rank is the version),
    /// else its distinct versions, sorted.
    sorted: Vec<Option<Vec<u64>>>,
}

impl Ranks {
    pub(crate) fn compute<S: EventStore>(trace: &Trace<S>) -> Ranks {
        let n = trace.objects().len();
        // One pass: an object is dense while its versions are distinct, not 0, and (checked at
        // the end) as many as the largest. One bit per version seen checks distinctness; a
        // dense object's largest version is at most the number of events, so bits beyond that
        // (or beyond twice the events over all objects, which only versions from damaged logs
        // could ask for) are never allocated: such an object is listed and sorted instead.
        let events = trace.event_count();
        let mut budget = events.saturating_mul(2).saturating_add(64 * n as u64);
        let mut counts = vec![0u64; n];
        let mut max = vec![0u64; n];
        let mut seen: Vec<Vec<u64>> = vec![Vec::new(); n];
        let mut dense = vec![true; n];
        for proc in trace.processes() {
            for ev in proc.events.iter() {
                let Some((object, version)) = versioned(&ev.op) else {
                    continue;
                };
                let o = object as usize;
                counts[o] += 1;
                max[o] = max[o].max(version);
                if !dense[o] {
                    continue;
                }
                let word = (version.wrapping_sub(1) / 64) as usize;
                let grow = (word + 1).saturating_sub(seen[o].len()) as u64 * 64;
                let fits = version != 0 && version <= events && grow <= budget;
                if !fits
                    || seen[o]
                        .get(word)
                        .is_some_and(|w| w & (1 << ((version - 1) % 64)) != 0)
                {
                    dense[o] = false;
                    budget += seen[o].len() as u64 * 64;
                    seen[o] = Vec::new();
                    continue;
                }
                if grow > 0 {
                    budget -= grow;
                    seen[o].resize(word + 1, 0);
                }
                seen[o][word] |= 1 << ((version - 1) % 64);
            }
        }
        for ((d, count), max) in dense.iter_mut().zip(&counts).zip(&max) {
            *d &= count == max;
        }
        drop(seen);
        let mut sorted: Vec<Option<Vec<u64>>> =
            (0..n).map(|o| (!dense[o]).then(Vec::new)).collect();
        // Only a log with gaps or duplicates (a crash, damage) needs its versions listed.
        if dense.iter().all(|&d| d) {
            return Ranks { sorted };
        }
        for proc in trace.processes() {
            for ev in proc.events.iter() {
                if let Some((object, version)) = versioned(&ev.op)
                    && let Some(v) = &mut sorted[object as usize]
                {
                    v.push(version);
                }
            }
        }
        for v in sorted.iter_mut().flatten() {
            v.sort_unstable();
            v.dedup();
        }
        Ranks { sorted }
    }

    /// The version of rank `rank` (from 1) of `object`; 0 if there is none.
    #[inline]
    pub(crate) fn version(&self, object: ObjIdx, rank: u64) -> u64 {
        match &self.sorted[object as usize] {
            None => rank,
            Some(v) => rank
                .checked_sub(1)
                .and_then(|i| v.get(usize::try_from(i).ok()?))
                .copied()
                .unwrap_or(0),
        }
    }

    /// The rank (from 1) of `version` of `object`.
    #[inline]
    pub(crate) fn rank(&self, object: ObjIdx, version: u64) -> u64 {
        match &self.sorted[object as usize] {
            None => version,
            Some(v) => v.partition_point(|&x| x < version) as u64 + 1,
        }
    }

    /// Objects whose versions have gaps: some accesses were never logged.
    pub(crate) fn gaps(&self) -> impl Iterator<Item = (ObjIdx, u64)> + '_ {
        self.sorted.iter().enumerate().filter_map(|(o, v)| {
            let v = v.as_ref()?;
            let max = v.last().copied().unwrap_or(0);
            (max != v.len() as u64).then(|| (o as ObjIdx, max - v.len() as u64))
        })
    }
}

/// The object and version of a versioned event (lock, semaphore and atomic operations).
pub(crate) fn versioned(op: &Op) -> Option<(ObjIdx, u64)> {
    op.sync().version()
}

/// What an event waits for: the key under which the event its incoming edge starts from parks
/// its clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Key {
    /// The send of message `seq` on a channel.
    Message(ObjIdx, u64),
    /// The spawn of a process.
    Spawned(ProcessId),
    /// The end of a process.
    Ended(ProcessId),
    /// The unlock of acquisition `rank` of a mutex.
    Released(ObjIdx, u64),
    /// The access of rank `rank` of a semaphore or atomic.
    Done(ObjIdx, u64),
}

/// A stamped event whose clock an edge will carry.
#[derive(Debug)]
struct Stamp {
    from: EventRef,
    clock: Box<[u32]>,
}

#[derive(Debug)]
struct Permit {
    from: EventRef,
    clock: Box<[u32]>,
    from_zero: bool,
    rank: u64,
}

/// The replayed state of one object.
#[derive(Debug, Default)]
struct ObjState {
    /// Rank of the last semaphore or atomic access stamped.
    done: u64,
    /// Rank of the last mutex acquisition released, and its unlock.
    released: u64,
    release: Option<Stamp>,
    /// Atomic: the join of the release writes of the current release sequence, and those
    /// writes (the graph's edges start there).
    rel: Option<Box<[u32]>>,
    rel_from: Vec<EventRef>,
    /// Semaphore: initial permits not yet taken, the value, permits of V's not yet taken.
    initial_left: u64,
    value: i64,
    permits: VecDeque<Permit>,
    /// Processes waiting for an access or release of this object: `(is release, rank, p)`.
    waiters: Vec<(bool, u64, u32)>,
    /// Reader-writer lock: the last write hold's release, which readers take, and the read
    /// holds' releases since, which (with it) the next writer takes.
    written: Option<Stamp>,
    read_releases: Vec<Stamp>,
}

/// What exists somewhere in the logs: events waited for that do not exist are not waited for.
#[derive(Debug, Default)]
struct Present {
    sends: SeqSet,
    spawns: FastSet<ProcessId>,
    ends: FastSet<ProcessId>,
    /// Per mutex, one bit per acquisition's version: whether that acquisition was released.
    /// Versions are looked at, not ranks, so that this needs no [`Ranks`] and is found beside
    /// them. A version no run could reach (damage) is kept in `unlocked_far` instead.
    unlocked: Vec<Vec<u64>>,
    unlocked_far: FastSet<(ObjIdx, u64)>,
}

impl Present {
    /// Whether the acquisition of rank `rank` of mutex `object` was released.
    fn was_unlocked(&self, ranks: &Ranks, object: ObjIdx, rank: u64) -> bool {
        let version = ranks.version(object, rank);
        let i = version.wrapping_sub(1);
        let bits = &self.unlocked[object as usize];
        match usize::try_from(i / 64).ok().and_then(|w| bits.get(w)) {
            Some(w) => w & (1 << (i % 64)) != 0,
            None => self.unlocked_far.contains(&(object, version)),
        }
    }

    /// Notes that the acquisition of `object` at `version` was released.
    fn unlocked(&mut self, object: ObjIdx, version: u64, reachable: u64) {
        if version == 0 {
            return;
        }
        if version > reachable {
            self.unlocked_far.insert((object, version));
            return;
        }
        let i = (version - 1) as usize;
        let bits = &mut self.unlocked[object as usize];
        if bits.len() <= i / 64 {
            bits.resize(i / 64 + 1, 0);
        }
        bits[i / 64] |= 1 << (i % 64);
    }
}

impl Present {
    /// Goes through every event, each `counted`.
    fn scan<S: EventStore>(trace: &Trace<S>, mut counted: progress::Counter) -> Present {
        let mut present = Present {
            sends: SeqSet::new(trace.objects().len()),
            unlocked: vec![Vec::new(); trace.objects().len()],
            ..Present::default()
        };
        // A dense version is at most the number of events.
        let reachable = trace.event_count();
        for proc in trace.processes() {
            let mut held: Vec<(ObjIdx, u64)> = Vec::new();
            for ev in proc.events.iter() {
                counted.add(1);
                let sync = ev.op.sync();
                match sync.rule(proc.id, Order::Replay) {
                    Rule::Gives(Point::Message { channel, seq }) => {
                        present.sends.insert(channel, seq);
                    }
                    Rule::Gives(Point::Spawned(child)) => {
                        present.spawns.insert(child);
                    }
                    Rule::Gives(Point::Ended(process)) => {
                        present.ends.insert(process);
                    }
                    Rule::Takes(Point::Released(object)) => {
                        let version = sync.version().map_or(0, |(_, v)| v);
                        held.push((object, version));
                    }
                    Rule::Gives(Point::Released(object)) => {
                        if let Some(i) = held.iter().rposition(|h| h.0 == object) {
                            let (o, version) = held.remove(i);
                            present.unlocked(o, version, reachable);
                        }
                    }
                    // What others wait for is given; what an event takes is not.
                    Rule::Local
                    | Rule::Takes(_)
                    | Rule::Chains(_)
                    | Rule::Gives(Point::Accessed(_))
                    | Rule::TakesPermit(_)
                    | Rule::GivesPermit(_)
                    | Rule::Atomic { .. }
                    | Rule::RwAcquire { .. }
                    | Rule::RwRelease { .. } => {}
                }
            }
        }
        present
    }
}

enum Step {
    Stamped,
    Wait(Key),
}

/// What the replay keeps of the clocks it computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Keep {
    /// The checkpoints and the list of edges.
    Everything,
    /// The checkpoints; the edges only counted.
    CountedEdges,
    /// Nothing: an observer takes what it needs as events are stamped.
    Nothing,
}

/// The replay that stamps the events.
struct Engine<'t, 'o, O: Observer, S: EventStore> {
    trace: &'t Trace<S>,
    /// Per process: its events from the next one to stamp on, that next event, and the one
    /// before it. The engine reads each process's events in order, which any store does fast.
    cursors: Vec<S::Iter<'t>>,
    head: Vec<Option<Ev>>,
    before: Vec<Option<Ev>>,
    observer: &'o mut O,
    width: usize,
    ranks: Ranks,
    present: Present,
    /// Current clock of each process (allocated while it has events to stamp).
    current: Vec<Vec<u32>>,
    next: Vec<u32>,
    on_stack: Vec<bool>,
    stack: Vec<u32>,
    waiting: FastMap<Key, u32>,
    messages: FastMap<(ObjIdx, u64), Stamp>,
    /// Per stream socket, the last write a read of it took: a write read in pieces is taken
    /// by several reads, so its stamp stays parked until a read takes a later write.
    stream_taken: FastMap<ObjIdx, u64>,
    spawned: FastMap<ProcessId, Stamp>,
    ended: FastMap<ProcessId, Stamp>,
    objects: Vec<ObjState>,
    /// Per process, the mutexes it holds and the rank of their acquisition.
    held: Vec<Vec<(ObjIdx, u64)>>,
    /// Clock buffers of consumed stamps, reused: steady state allocates nothing.
    free: Vec<Box<[u32]>>,
    out: Vec<ProcClocks>,
    /// What is kept: `edge_count` counts the edges whatever it says.
    keep: Keep,
    edges: Vec<SyncEdge>,
    edge_count: usize,
    notes: Vec<String>,
    /// The events stamped, for the progress report (its pass begins in `stamp_all`).
    stamped: progress::Counter,
}

impl<'t, 'o, O: Observer, S: EventStore> Engine<'t, 'o, O, S> {
    fn new(trace: &'t Trace<S>, observer: &'o mut O, keep: Keep) -> Engine<'t, 'o, O, S> {
        let width = trace.processes().len();
        // Two passes over every event that need nothing of each other.
        // The pass's count is the scan's: the ranks run beside it over the same events.
        let counted = progress::pass("ordering each object's accesses", trace.event_count());
        let (ranks, present) = if trace.event_count() < threads::WORTH_A_THREAD {
            (Ranks::compute(trace), Present::scan(trace, counted))
        } else {
            threads::both(|| Ranks::compute(trace), || Present::scan(trace, counted))
        };
        let objects = trace
            .objects()
            .iter()
            .map(|o| ObjState {
                initial_left: o.init,
                value: i64::try_from(o.init).unwrap_or(i64::MAX),
                ..ObjState::default()
            })
            .collect();
        let out = vec![ProcClocks::default(); width];
        let mut notes = Vec::new();
        for (object, missing) in ranks.gaps() {
            notes.push(format!(
                "{}: {missing} access(es) were never logged (the program died mid-operation?)",
                trace.object(object).label()
            ));
        }
        let mut cursors: Vec<S::Iter<'t>> =
            trace.processes().iter().map(|p| p.events.iter()).collect();
        let head = cursors.iter_mut().map(Iterator::next).collect();
        Engine {
            trace,
            cursors,
            head,
            before: vec![None; width],
            observer,
            width,
            ranks,
            present,
            current: vec![Vec::new(); width],
            next: vec![0; width],
            on_stack: vec![false; width],
            stack: Vec::new(),
            waiting: FastMap::default(),
            messages: FastMap::default(),
            stream_taken: FastMap::default(),
            spawned: FastMap::default(),
            ended: FastMap::default(),
            objects,
            held: vec![Vec::new(); width],
            free: Vec::new(),
            out,
            keep,
            edges: Vec::new(),
            edge_count: 0,
            notes,
            stamped: progress::Counter::silent(),
        }
    }

    /// A copy of `clock` in a recycled buffer.
    fn snapshot(&mut self, clock: &[u32]) -> Box<[u32]> {
        match self.free.pop() {
            Some(mut b) => {
                b.copy_from_slice(clock);
                b
            }
            None => clock.to_vec().into_boxed_slice(),
        }
    }

    fn stamp(&mut self, from: EventRef, clock: &[u32]) -> Stamp {
        Stamp {
            from,
            clock: self.snapshot(clock),
        }
    }

    fn recycle(&mut self, clock: Box<[u32]>) {
        self.free.push(clock);
    }

    fn push(&mut self, p: u32) {
        if !self.on_stack[p as usize] {
            self.on_stack[p as usize] = true;
            self.stack.push(p);
        }
    }

    fn wake(&mut self, key: Key) {
        let (object, release, rank) = match key {
            Key::Done(o, r) => (o, false, r),
            Key::Released(o, r) => (o, true, r),
            _ => {
                if let Some(p) = self.waiting.remove(&key) {
                    self.push(p);
                }
                return;
            }
        };
        let waiters = &mut self.objects[object as usize].waiters;
        if let Some(i) = waiters
            .iter()
            .position(|&(rel, r, _)| rel == release && r == rank)
        {
            let (_, _, p) = waiters.swap_remove(i);
            self.push(p);
        }
    }

    /// Registers `p` as waiting for `key`: objects keep their few waiters themselves.
    fn wait(&mut self, key: Key, p: u32) {
        match key {
            Key::Done(o, r) => self.objects[o as usize].waiters.push((false, r, p)),
            Key::Released(o, r) => self.objects[o as usize].waiters.push((true, r, p)),
            _ => {
                self.waiting.insert(key, p);
            }
        }
    }

    /// Moves `p` on to its next event: the one it was on is stamped.
    fn advance(&mut self, p: u32) {
        let p = p as usize;
        if O::MARKS
            && matches!(
                self.head[p],
                Some(Ev {
                    op: Op::Mark { .. },
                    ..
                })
            )
        {
            // A local event's clock is its process's, with its own component: the stamping of
            // local events does not keep that one up to date.
            let k = self.next[p];
            self.current[p][p] = k + 1;
            self.observer
                .mark(EventRef::new(p as u32, k), &self.current[p]);
        }
        self.next[p] += 1;
        self.stamped.add(1);
        self.before[p] = self.head[p].take();
        self.head[p] = self.cursors[p].next();
    }

    /// What the next event of `p` to stamp did (it exists: `next[p]` is below its length).
    fn head_op(&self, p: u32) -> Op {
        self.head[p as usize]
            .expect("a process with events left to stamp has a next event")
            .op
    }

    fn len(&self, p: u32) -> u32 {
        self.trace.process(p).events.len() as u32
    }

    fn run(mut self) -> Clocks {
        self.stamp_all();
        for (p, out) in self.out.iter_mut().enumerate() {
            out.covering = Covering::new(
                self.trace.process(p as u32).events.len() as u32,
                &out.checkpoints,
            );
        }
        Clocks {
            width: self.width,
            procs: self.out,
            edges: self.edges,
            edge_count: self.edge_count,
            notes: self.notes,
        }
    }

    /// Stamps every event.
    fn stamp_all(&mut self) {
        self.stamped = progress::pass(O::STAGE, self.trace.event_count());
        for p in (0..self.width as u32).rev() {
            self.push(p);
        }
        loop {
            while let Some(p) = self.stack.pop() {
                self.on_stack[p as usize] = false;
                self.drain(p, false);
            }
            // Everything stamped, or every remaining process waits for something that will not
            // come (only in damaged or inconsistent recordings): let the lowest one through.
            let stuck = (0..self.width as u32).find(|&p| self.next[p as usize] < self.len(p));
            let Some(p) = stuck else { break };
            self.waiting.retain(|_, q| *q != p);
            for o in &mut self.objects {
                o.waiters.retain(|w| w.2 != p);
            }
            let e = EventRef::new(p, self.next[p as usize]);
            self.notes.push(format!(
                "{} waits for an event that never happens; stamped without it",
                self.trace.describe(e)
            ));
            self.drain(p, true);
        }
    }

    /// Stamps the events of `p` until one has to wait. With `force`, the first one does not.
    fn drain(&mut self, p: u32, mut force: bool) {
        let len = self.len(p);
        if self.current[p as usize].is_empty() && self.next[p as usize] < len {
            self.current[p as usize] = vec![0; self.width];
        }
        while self.next[p as usize] < len {
            let Some(head) = self.head[p as usize] else {
                // The store gave fewer events than it counted: a log read again from disk
                // that changed since (`trace::Logged`). Its process ends there.
                self.notes.push(format!(
                    "{}: its log ended at event {} of the {len} it held when it was first read",
                    self.trace.process_label(p),
                    self.next[p as usize]
                ));
                self.next[p as usize] = len;
                break;
            };
            // Most events order nothing beyond program order: their clock is the process's
            // latest checkpoint, with no rule to consult.
            if !force && matches!(head.op.sync(), Sync::Local) {
                self.advance(p);
                continue;
            }
            match self.step(p, force) {
                Step::Stamped => self.advance(p),
                Step::Wait(key) => {
                    self.wait(key, p);
                    return;
                }
            }
            force = false;
        }
        // Done: the clock is not needed any more.
        self.current[p as usize] = Vec::new();
    }

    /// What event `e` must wait for before it can be stamped, if anything: its incoming edge in
    /// the replay order, which is the order the logs' choices were made in (each object's
    /// accesses in version order), so every object's state is replayed exactly.
    fn needs(&self, e: EventRef) -> Option<Key> {
        let sync = self.head_op(e.process).sync();
        match sync.rule(self.trace.process(e.process).id, Order::Replay) {
            Rule::Takes(Point::Spawned(child)) => (self.present.spawns.contains(&child)
                && !self.spawned.contains_key(&child))
            .then_some(Key::Spawned(child)),
            Rule::Takes(Point::Ended(child)) => (self.present.ends.contains(&child)
                && !self.ended.contains_key(&child))
            .then_some(Key::Ended(child)),
            // The parked sends are few; every send of the run is many: look there only when
            // the message is not parked.
            Rule::Takes(Point::Message { channel, seq }) => {
                (!self.messages.contains_key(&(channel, seq))
                    && self.present.sends.contains(channel, seq))
                .then_some(Key::Message(channel, seq))
            }
            Rule::Takes(Point::Released(object)) => {
                let rank = self.rank(sync);
                let released = self.objects[object as usize].released;
                (rank > 1
                    && released < rank - 1
                    && self.present.was_unlocked(&self.ranks, object, rank - 1))
                .then_some(Key::Released(object, rank - 1))
            }
            Rule::Chains(Point::Accessed(object)) => {
                let rank = self.rank(sync);
                (rank > self.objects[object as usize].done + 1)
                    .then_some(Key::Done(object, rank - 1))
            }
            Rule::Local | Rule::Gives(_) => None,
            // Not in the replay order's table.
            Rule::Takes(Point::Accessed(_))
            | Rule::Chains(
                Point::Message { .. } | Point::Spawned(_) | Point::Ended(_) | Point::Released(_),
            )
            | Rule::TakesPermit(_)
            | Rule::GivesPermit(_)
            | Rule::Atomic { .. }
            | Rule::RwAcquire { .. }
            | Rule::RwRelease { .. } => None,
        }
    }

    /// The stamp of write `seq` of stream socket `socket`, for a read that ends in its bytes: a
    /// copy, as later reads may end in the same write (it was read in pieces). The writes
    /// before it are read through by now (a stream is read in order), so their stamps go.
    fn take_stream_write(&mut self, socket: ObjIdx, seq: u64) -> Option<Stamp> {
        let first_unread = self.stream_taken.get(&socket).copied().unwrap_or(1);
        if first_unread < seq {
            for earlier in first_unread..seq {
                if let Some(old) = self.messages.remove(&(socket, earlier)) {
                    self.recycle(old.clock);
                }
            }
        }
        self.stream_taken.insert(socket, seq.max(first_unread));
        let parked = self.messages.get(&(socket, seq))?;
        let (from, clock) = (parked.from, parked.clock.clone());
        Some(Stamp { from, clock })
    }

    /// The rank of a versioned event's version (0 for any other event).
    fn rank(&self, sync: Sync<ObjIdx>) -> u64 {
        sync.version()
            .map_or(0, |(object, version)| self.ranks.rank(object, version))
    }

    /// Stamps event `e`, merging the clocks its incoming edges in the memory-model
    /// happened-before carry, and parks its clock for its outgoing ones.
    fn step(&mut self, p: u32, force: bool) -> Step {
        let k = self.next[p as usize];
        let e = EventRef::new(p, k);
        if !force && let Some(key) = self.needs(e) {
            return Step::Wait(key);
        }
        let pid = self.trace.process(p).id;
        let head = self.head_op(p);
        let sync = head.sync();
        let rank = self.rank(sync);
        let mut clock = std::mem::take(&mut self.current[p as usize]);
        clock[p as usize] = k + 1;
        let mut changed = false;
        match sync.rule(pid, Order::HappenedBefore) {
            Rule::Takes(Point::Spawned(child)) => {
                if let Some(s) = self.spawned.remove(&child) {
                    changed |= self.merge(&mut clock, &s.clock, s.from, e, SyncKind::Spawn);
                    self.recycle(s.clock);
                }
            }
            Rule::Takes(Point::Ended(child)) => {
                if let Some(s) = self.ended.remove(&child) {
                    changed |= self.merge(&mut clock, &s.clock, s.from, e, SyncKind::Join);
                    self.recycle(s.clock);
                }
            }
            Rule::Takes(Point::Message { channel, seq }) => {
                let taken = if matches!(
                    head,
                    Op::NetRead {
                        datagram: false,
                        ..
                    }
                ) {
                    self.take_stream_write(channel, seq)
                } else {
                    self.messages.remove(&(channel, seq))
                };
                if let Some(s) = taken {
                    changed |= self.merge(&mut clock, &s.clock, s.from, e, SyncKind::Message);
                    self.recycle(s.clock);
                }
            }
            Rule::Gives(Point::Message { channel, seq }) => {
                let stamp = self.stamp(e, &clock);
                if let Some(old) = self.messages.insert((channel, seq), stamp) {
                    self.recycle(old.clock);
                }
                self.wake(Key::Message(channel, seq));
            }
            Rule::Gives(Point::Spawned(child)) => {
                let stamp = self.stamp(e, &clock);
                self.spawned.insert(child, stamp);
                self.wake(Key::Spawned(child));
            }
            Rule::Gives(Point::Ended(process)) => {
                let stamp = self.stamp(e, &clock);
                self.ended.insert(process, stamp);
                self.wake(Key::Ended(process));
            }
            Rule::Takes(Point::Released(object)) => {
                let st = &mut self.objects[object as usize];
                let release = if rank > 1 && st.released == rank - 1 {
                    st.release.take()
                } else {
                    None
                };
                if let Some(s) = release {
                    changed |= self.merge(&mut clock, &s.clock, s.from, e, SyncKind::Lock);
                    self.recycle(s.clock);
                }
                self.held[p as usize].push((object, rank));
            }
            Rule::Gives(Point::Released(object)) => {
                let held = &mut self.held[p as usize];
                let i = held.iter().rposition(|h| h.0 == object);
                if let Some((_, rank)) = i.map(|i| held.remove(i)) {
                    let stamp = self.stamp(e, &clock);
                    let st = &mut self.objects[object as usize];
                    st.released = st.released.max(rank);
                    if let Some(old) = st.release.replace(stamp) {
                        self.free.push(old.clock);
                    }
                    self.wake(Key::Released(object, rank));
                }
            }
            Rule::GivesPermit(object) => {
                if rank > self.objects[object as usize].done {
                    let snapshot = self.snapshot(&clock);
                    let st = &mut self.objects[object as usize];
                    st.permits.push_back(Permit {
                        from: e,
                        clock: snapshot,
                        from_zero: st.value == 0,
                        rank,
                    });
                    st.value += 1;
                    st.done = rank;
                    self.wake(Key::Done(object, rank));
                }
            }
            Rule::TakesPermit(object) => {
                changed |= self.sem_acquire(&mut clock, e, object, rank);
            }
            Rule::Atomic {
                object,
                op,
                ordering,
                acquires,
                sequence,
            } => {
                if rank > self.objects[object as usize].done {
                    if acquires {
                        changed |= self.acquire_atomic(&mut clock, e, object);
                    }
                    let site = self.head[p as usize].map_or(crate::trace::NO_SITE, |ev| ev.site);
                    self.observer.access(e, object, op, ordering, site, &clock);
                    self.release_write(&clock, e, object, sequence);
                    let st = &mut self.objects[object as usize];
                    st.done = rank;
                    self.wake(Key::Done(object, rank));
                }
            }
            Rule::RwAcquire { object, mode } => {
                if rank > self.objects[object as usize].done {
                    changed |= self.rw_acquire(&mut clock, e, object, mode);
                    self.objects[object as usize].done = rank;
                    self.wake(Key::Done(object, rank));
                }
            }
            Rule::RwRelease { object, mode } => {
                if rank > self.objects[object as usize].done {
                    let stamp = self.stamp(e, &clock);
                    let st = &mut self.objects[object as usize];
                    let freed = match mode {
                        RwMode::Read => {
                            st.read_releases.push(stamp);
                            Vec::new()
                        }
                        // The writer took every read release before it: its release carries
                        // them.
                        RwMode::Write => {
                            let mut freed: Vec<Stamp> = st.read_releases.drain(..).collect();
                            freed.extend(st.written.replace(stamp));
                            freed
                        }
                    };
                    self.free.extend(freed.into_iter().map(|s| s.clock));
                    self.objects[object as usize].done = rank;
                    self.wake(Key::Done(object, rank));
                }
            }
            Rule::Local => {}
            // Only the replay order chains accesses, and only it has a point for the previous
            // access: the happened-before table never yields these.
            Rule::Chains(_) | Rule::Takes(Point::Accessed(_)) | Rule::Gives(Point::Accessed(_)) => {
            }
        }
        if changed && self.keep != Keep::Nothing {
            let out = &mut self.out[p as usize];
            out.checkpoints.push(k);
            out.pool.extend_from_slice(&clock);
        }
        self.current[p as usize] = clock;
        Step::Stamped
    }

    /// A write extends, restarts or ends the release sequence (see [`crate::vclock::hb`]).
    fn release_write(&mut self, clock: &[u32], e: EventRef, object: ObjIdx, sequence: Sequence) {
        let starts = matches!(sequence, Sequence::Joins { .. } | Sequence::Restarts);
        let fresh = if starts && self.objects[object as usize].rel.is_none() {
            Some(self.snapshot(clock))
        } else {
            None
        };
        let st = &mut self.objects[object as usize];
        match sequence {
            Sequence::Reads | Sequence::Continues => {}
            Sequence::Joins { heads } => {
                match (&mut st.rel, fresh) {
                    (Some(rel), _) => {
                        rel.join(clock);
                    }
                    (rel, fresh) => *rel = fresh,
                }
                if heads {
                    st.rel_from.clear();
                }
                st.rel_from.push(e);
            }
            Sequence::Restarts => {
                match (&mut st.rel, fresh) {
                    (Some(rel), _) => rel.copy_from_slice(clock),
                    (rel, fresh) => *rel = fresh,
                }
                st.rel_from.clear();
                st.rel_from.push(e);
            }
            Sequence::Ends => {
                st.rel_from.clear();
                if let Some(old) = st.rel.take() {
                    self.free.push(old);
                }
            }
        }
    }

    /// A P: takes an initial permit, else the oldest V's permit (see [`crate::vclock::hb`]).
    fn sem_acquire(&mut self, clock: &mut [u32], e: EventRef, object: ObjIdx, rank: u64) -> bool {
        let st = &mut self.objects[object as usize];
        if rank <= st.done {
            return false;
        }
        st.done = rank;
        st.value -= 1;
        let permit = if st.initial_left > 0 {
            st.initial_left -= 1;
            None
        } else {
            let permit = st.permits.pop_front();
            if permit.is_none() {
                self.notes.push(format!(
                    "{}: no permit was available (operations missing from the logs?)",
                    self.trace.describe(e)
                ));
            }
            permit
        };
        self.wake(Key::Done(object, rank));
        let Some(permit) = permit else { return false };
        let blocked = matches!(
            self.before[e.process as usize],
            Some(Ev { op: Op::Blocked { object: o }, .. }) if o == object
        );
        let kind = if blocked {
            SyncKind::SemUnblock
        } else if permit.from_zero && permit.rank + 1 == rank {
            SyncKind::SemZeroToOne
        } else {
            SyncKind::SemPermit
        };
        let changed = self.merge(clock, &permit.clock, permit.from, e, kind);
        self.recycle(permit.clock);
        changed
    }

    /// An acquire read takes the clock of the release sequence it reads from.
    fn acquire_atomic(&mut self, clock: &mut [u32], e: EventRef, object: ObjIdx) -> bool {
        let st = &mut self.objects[object as usize];
        let Some(rel) = st.rel.take() else {
            return false;
        };
        let sources = std::mem::take(&mut st.rel_from);
        // A spinning acquire load reads the same release again and again: only the first read
        // that learns of a release is an edge; later ones are implied by program order.
        for &from in &sources {
            if from.process != e.process && clock[from.process as usize] <= from.index {
                self.add_edge(SyncEdge {
                    from,
                    to: e,
                    kind: SyncKind::Atomic,
                });
            }
        }
        let changed = clock.join(&rel);
        let st = &mut self.objects[object as usize];
        st.rel = Some(rel);
        st.rel_from = sources;
        changed
    }

    /// A reader-writer lock's acquisition in the happened-before: a read takes the last write
    /// hold's release, a write also every read release since.
    fn rw_acquire(&mut self, clock: &mut [u32], e: EventRef, object: ObjIdx, mode: RwMode) -> bool {
        let st = &self.objects[object as usize];
        let mut taken: Vec<(EventRef, Box<[u32]>)> = Vec::new();
        if let Some(w) = &st.written {
            taken.push((w.from, w.clock.clone()));
        }
        if mode == RwMode::Write {
            taken.extend(st.read_releases.iter().map(|r| (r.from, r.clock.clone())));
        }
        let mut changed = false;
        for (from, other) in taken {
            changed |= self.merge(clock, &other, from, e, SyncKind::Lock);
        }
        changed
    }

    /// Joins the clock an edge carries into `clock`; records the edge when it crosses
    /// processes.
    fn merge(
        &mut self,
        clock: &mut [u32],
        other: &[u32],
        from: EventRef,
        to: EventRef,
        kind: SyncKind,
    ) -> bool {
        if from.process == to.process {
            return false;
        }
        self.add_edge(SyncEdge { from, to, kind });
        clock.join(other)
    }

    fn add_edge(&mut self, edge: SyncEdge) {
        self.edge_count += 1;
        if self.keep == Keep::Everything {
            self.edges.push(edge);
        }
    }
}

/// Whether `a` happened before `b`, given the components of `b`'s clock
/// ([`clock::happened_before`] on the analysis's event references).
#[inline]
pub(crate) fn happened_before(a: EventRef, b: EventRef, of_b: impl FnOnce(u32) -> u32) -> bool {
    clock::happened_before((a.process, a.index), (b.process, b.index), || {
        of_b(a.process)
    })
}

mod covering;
pub(crate) mod hb;
mod seq_set;
#[cfg(test)]
mod tests;
