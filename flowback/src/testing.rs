//! Reference implementations the tests compare the real ones with: written for clarity, not
//! speed, and independently of them.

use std::collections::{BTreeMap, HashMap};

use ppd_formats::event::{AtomicOp, MemOrdering, ObjectKind, RwMode};

use crate::trace::{EventRef, ObjIdx, Op, SiteId, Trace};

/// The documented table of atomic accesses (the `hb` module's docs, after the C++20/Rust model),
/// spelt out case by case rather than derived, so that a mistake in `hb`'s rules shows up as a
/// disagreement: (reads, writes, acquires, releases, is a data access).
fn reference_access(op: AtomicOp, ordering: MemOrdering) -> (bool, bool, bool, bool, bool) {
    use AtomicOp::*;
    use MemOrdering::*;
    match (op, ordering) {
        (Load, Relaxed) => (true, false, false, false, true),
        (Load, Acquire | AcqRel | SeqCst) => (true, false, true, false, false),
        // A load cannot be Release; the recorder never logs one, but it would order nothing.
        (Load, Release) => (true, false, false, false, false),
        (Store, Relaxed) => (false, true, false, false, true),
        (Store, Release | AcqRel | SeqCst) => (false, true, false, true, false),
        (Store, Acquire) => (false, true, false, false, false),
        // A read-modify-write is indivisible whatever its ordering: never a data access.
        (Rmw, Relaxed) => (true, true, false, false, false),
        (Rmw, Acquire) => (true, true, true, false, false),
        (Rmw, Release) => (true, true, false, true, false),
        (Rmw, AcqRel | SeqCst) => (true, true, true, true, false),
        // A failed compare-exchange only reads, with at most the acquire part of its ordering.
        (CasFail, Relaxed | Release) => (true, false, false, false, false),
        (CasFail, Acquire | AcqRel | SeqCst) => (true, false, true, false, false),
    }
}

/// Whether an access acquires, by the reference table.
fn reference_acquires(op: AtomicOp, ordering: MemOrdering) -> bool {
    reference_access(op, ordering).2
}

/// Whether an access releases, by the reference table.
fn reference_releases(op: AtomicOp, ordering: MemOrdering) -> bool {
    reference_access(op, ordering).3
}

/// An atomic access: what it did and with which ordering.
type Access = (AtomicOp, MemOrdering);

/// Whether two unordered accesses race: one of them writes and one of them is a data access.
pub(crate) fn reference_conflict(a: (AtomicOp, MemOrdering), b: (AtomicOp, MemOrdering)) -> bool {
    let (_, wa, _, _, da) = reference_access(a.0, a.1);
    let (_, wb, _, _, db) = reference_access(b.0, b.1);
    (wa || wb) && (da || db)
}

/// Every event's vector clock, by fixpoint over edges derived straight from the semantics.
pub(crate) fn reference_clocks(trace: &Trace) -> Vec<Vec<Vec<u32>>> {
    let n = trace.processes().len();
    let incoming = reference_edges(trace);
    let mut vc: Vec<Vec<Vec<u32>>> = trace
        .processes()
        .iter()
        .enumerate()
        .map(|(p, proc)| {
            (0..proc.events.len())
                .map(|k| {
                    let mut v = vec![0; n];
                    v[p] = k as u32 + 1;
                    v
                })
                .collect()
        })
        .collect();
    loop {
        let mut changed = false;
        for p in 0..n {
            for k in 0..vc[p].len() {
                let mut v = vc[p][k].clone();
                let mut sources: Vec<EventRef> = incoming
                    .get(&EventRef::new(p as u32, k as u32))
                    .cloned()
                    .unwrap_or_default();
                if k > 0 {
                    sources.push(EventRef::new(p as u32, k as u32 - 1));
                }
                for s in sources {
                    for (a, b) in v.iter_mut().zip(&vc[s.process as usize][s.index as usize]) {
                        *a = (*a).max(*b);
                    }
                }
                if v != vc[p][k] {
                    vc[p][k] = v;
                    changed = true;
                }
            }
        }
        if !changed {
            return vc;
        }
    }
}

fn reference_edges(trace: &Trace) -> HashMap<EventRef, Vec<EventRef>> {
    let mut incoming: HashMap<EventRef, Vec<EventRef>> = HashMap::new();
    let mut add = |to: EventRef, from: EventRef| incoming.entry(to).or_default().push(from);
    let all: Vec<(EventRef, Op)> = trace
        .processes()
        .iter()
        .enumerate()
        .flat_map(|(p, proc)| {
            proc.events
                .iter()
                .enumerate()
                .map(move |(k, e)| (EventRef::new(p as u32, k as u32), e.op))
        })
        .collect();
    let find = |pred: &dyn Fn(&Op) -> bool| all.iter().find(|(_, op)| pred(op)).map(|(r, _)| *r);
    for &(r, op) in &all {
        let pid = trace.process(r.process).id;
        match op {
            Op::Recv { channel, seq, .. } => {
                if let Some(s) = find(&|o| *o == Op::Send { channel, seq }) {
                    add(r, s);
                }
            }
            Op::Start { parent: Some(_) } => {
                if let Some(s) = find(&|o| *o == Op::Spawn { child: pid }) {
                    add(r, s);
                }
            }
            Op::Join { child } => {
                if let Some(c) = trace.index_of(child) {
                    let events = &trace.process(c).events;
                    if events.last().is_some_and(|e| e.op.is_end()) {
                        add(r, EventRef::new(c, events.len() as u32 - 1));
                    }
                }
            }
            _ => {}
        }
    }
    for (o, object) in trace.objects().iter().enumerate() {
        let o = o as ObjIdx;
        let mut ops: Vec<(u64, EventRef, Op)> = all
            .iter()
            .filter_map(|&(r, op)| match op {
                Op::Lock {
                    object, version, ..
                }
                | Op::SemAcquire {
                    object, version, ..
                }
                | Op::SemRelease {
                    object, version, ..
                }
                | Op::Atomic {
                    object, version, ..
                }
                | Op::RwAcquire {
                    object, version, ..
                }
                | Op::RwRelease {
                    object, version, ..
                } if object == o => Some((version, r, op)),
                _ => None,
            })
            .collect();
        ops.sort_by_key(|x| x.0);
        match object.kind {
            Some(ObjectKind::Mutex) => {
                for w in ops.windows(2) {
                    let (prev_lock, lock) = (w[0].1, w[1].1);
                    // The unlock that released the previous acquisition: the next unlock of
                    // this mutex in its process.
                    let unlock = trace.process(prev_lock.process).events
                        [prev_lock.index as usize..]
                        .iter()
                        .position(|e| e.op == Op::Unlock { object: o })
                        .map(|d| EventRef::new(prev_lock.process, prev_lock.index + d as u32));
                    if let Some(u) = unlock {
                        add(lock, u);
                    }
                }
            }
            Some(ObjectKind::Semaphore) => {
                let mut initial = object.init;
                let mut vs = std::collections::VecDeque::new();
                for &(_, r, op) in &ops {
                    match op {
                        Op::SemRelease { .. } => vs.push_back(r),
                        _ if initial > 0 => initial -= 1,
                        _ => {
                            if let Some(v) = vs.pop_front() {
                                add(r, v);
                            }
                        }
                    }
                }
            }
            // A read hold starts after the last write hold ended; a write hold after every
            // hold before it ended.
            Some(ObjectKind::RwLock) => {
                let mut write_release: Option<EventRef> = None;
                let mut read_releases: Vec<EventRef> = Vec::new();
                for &(_, r, op) in &ops {
                    match op {
                        Op::RwAcquire { mode, .. } => {
                            if let Some(w) = write_release {
                                add(r, w);
                            }
                            if mode == RwMode::Write {
                                for &rr in &read_releases {
                                    add(r, rr);
                                }
                            }
                        }
                        Op::RwRelease {
                            mode: RwMode::Read, ..
                        } => read_releases.push(r),
                        Op::RwRelease {
                            mode: RwMode::Write,
                            ..
                        } => {
                            write_release = Some(r);
                            read_releases.clear();
                        }
                        _ => {}
                    }
                }
            }
            Some(ObjectKind::Atomic) => {
                for (i, &(_, r, op)) in ops.iter().enumerate() {
                    let Op::Atomic {
                        op: aop, ordering, ..
                    } = op
                    else {
                        continue;
                    };
                    if !reference_acquires(aop, ordering) {
                        continue;
                    }
                    // Walk back from the write read from through its release sequence.
                    for &(_, w, wop) in ops[..i].iter().rev() {
                        let Op::Atomic {
                            op: wo,
                            ordering: word,
                            ..
                        } = wop
                        else {
                            continue;
                        };
                        if !reference_access(wo, word).1 {
                            continue;
                        }
                        if reference_releases(wo, word) {
                            add(r, w);
                        }
                        if wo == AtomicOp::Store {
                            break;
                        }
                    }
                }
            }
            _ => {}
        }
    }
    incoming
}

/// The definition itself, by brute force: every pair of accesses to one atomic from two
/// processes that conflict and are unordered by the clocks `vc`, counted once per pair and
/// keyed by (object, lower site, higher site).
pub(crate) fn reference_races(
    trace: &Trace,
    vc: &[Vec<Vec<u32>>],
) -> BTreeMap<(ObjIdx, SiteId, SiteId), u64> {
    let hb = |a: EventRef, b: EventRef| {
        a.index < vc[b.process as usize][b.index as usize][a.process as usize]
    };
    let mut accesses: Vec<(ObjIdx, EventRef, SiteId, Access)> = Vec::new();
    for (p, proc) in trace.processes().iter().enumerate() {
        for (k, e) in proc.events.iter().enumerate() {
            if let Op::Atomic {
                object,
                op,
                ordering,
                ..
            } = e.op
            {
                let r = EventRef::new(p as u32, k as u32);
                accesses.push((object, r, e.site, (op, ordering)));
            }
        }
    }
    let mut races = BTreeMap::new();
    for (i, &(o, a, sa, access_a)) in accesses.iter().enumerate() {
        for &(o2, b, sb, access_b) in &accesses[i + 1..] {
            if o == o2
                && a.process != b.process
                && reference_conflict(access_a, access_b)
                && !hb(a, b)
                && !hb(b, a)
            {
                *races.entry((o, sa.min(sb), sa.max(sb))).or_insert(0) += 1;
            }
        }
    }
    races
}
