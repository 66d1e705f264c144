//! Deadlocks: processes that ended the run blocked, and the wait-for cycles among them.
//!
//! A process is blocked at the end of a recording when its last event is `Blocked` (logged
//! just before a receive, lock or P waits) with nothing after it: the program was killed while
//! it waited, or the log stops there. What it waits for and who could end the wait:
//!
//! * a mutex: the process holding it (its last `Lock` of the mutex has no `Unlock` after it);
//! * a message: the live processes that have sent on the channel (they hold a sender); if none
//!   has, the channel's creator, which held the only sender at first;
//! * a semaphore permit: the live processes holding permits (more P than V), else those that
//!   did V operations, else the creator; a process that has never done a V on it (a sender
//!   waiting for room in a bounded channel) waits for the live ones that did V operations
//!   first (its receivers);
//! * the end of a process, for a `join` (its last event is `JoinBlocked`): that process;
//! * a notify of a condition variable: the condvar's other users (the live processes that
//!   have taken its queue's lock, to wait or to notify), else every live process;
//! * an unpark, for a `park`: the live processes that unparked it before, else every live
//!   process (any of them may hold its `Thread`);
//! * bytes on a socket: the live processes that used the other end of its connection; when
//!   the other end is in no log of the recording (a peer outside it), the wait can end at any
//!   time, and the process is blocked, never deadlocked.
//!
//! The deadlocked processes are the largest set of blocked processes none of which waits for a
//! process outside the set (a process that has ended can no longer help, so it does not
//! count); cycles are read off the wait-for edges inside that set, so a cycle may run through
//! joins as well as channels and locks. A process that is sleeping is not visible in the log and
//! counts as running.

use std::collections::{BTreeSet, HashMap};

use ppd_formats::ProcessId;
use ppd_formats::event::{AtomicOp, ObjectKind};
use ppd_formats::order::{Order, Point, Rule};

use crate::fasthash::FastMap;
use crate::trace::{EventRef, EventStore, ObjIdx, Op, Trace};

/// How a process's log ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ending {
    /// With `Exit` or `Panic`.
    Ended,
    /// With `Blocked` or `JoinBlocked`: it was waiting when the recording stopped.
    Blocked,
    /// Anywhere else: it was running (or sleeping) when the recording stopped.
    Running,
}

/// What a blocked process waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitKind {
    /// A mutex.
    Lock,
    /// A message.
    Message,
    /// A semaphore permit.
    Permit,
    /// The end of a process it joins.
    Exit,
    /// A notify of a condition variable.
    Notify,
    /// An unpark of its own park token.
    Unpark,
    /// Bytes (or a connection, or a datagram) on a socket.
    Bytes,
}

impl WaitKind {
    /// The name reports use.
    pub fn name(self) -> &'static str {
        match self {
            WaitKind::Lock => "lock",
            WaitKind::Message => "message",
            WaitKind::Permit => "permit",
            WaitKind::Exit => "the end of",
            WaitKind::Notify => "a notify of",
            WaitKind::Unpark => "an unpark of",
            WaitKind::Bytes => "bytes on",
        }
    }
}

/// A process that ended the run blocked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockedProcess {
    /// The process (dense index).
    pub process: u32,
    /// Its final `Blocked` or `JoinBlocked` event.
    pub event: EventRef,
    /// The object it waits on; none for a join.
    pub object: Option<ObjIdx>,
    /// The process it joins, for a join.
    pub joins: Option<ProcessId>,
    /// What it waits for.
    pub kind: WaitKind,
    /// The processes that could end the wait (the lock's holder; the message's or permit's
    /// likely providers), live ones only.
    pub waits_for: Vec<u32>,
    /// Whether `waits_for` is a guess (nobody has sent on the channel: its creator).
    pub guessed: bool,
    /// Whether it is deadlocked.
    pub deadlocked: bool,
}

/// The end state of a run.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Deadlocks {
    /// How each process's log ends.
    pub endings: Vec<Ending>,
    /// The processes that ended the run blocked, by process.
    pub blocked: Vec<BlockedProcess>,
    /// Wait-for cycles among deadlocked processes: each is a list of indexes into `blocked`,
    /// each member waiting for the next (and the last for the first).
    pub cycles: Vec<Vec<usize>>,
}

impl Deadlocks {
    /// Whether some processes are deadlocked.
    pub fn any(&self) -> bool {
        self.blocked.iter().any(|b| b.deadlocked)
    }
}

/// What a process blocked at the end of the run waits on.
#[derive(Clone, Copy, Debug)]
enum Waited {
    /// A mutex, channel or semaphore.
    Object(ObjIdx),
    /// The end of a process it joins.
    Process(ProcessId),
}

/// How a log whose last event is `last` ends, and what it waits on if it ends blocked.
fn ending(last: Option<Op>) -> (Ending, Option<Waited>) {
    match last {
        Some(Op::Blocked { object }) => (Ending::Blocked, Some(Waited::Object(object))),
        Some(Op::JoinBlocked { child }) => (Ending::Blocked, Some(Waited::Process(child))),
        Some(Op::Exit | Op::Panic { .. }) => (Ending::Ended, None),
        Some(
            Op::Start { .. }
            | Op::Spawn { .. }
            | Op::Join { .. }
            | Op::Create { .. }
            | Op::Send { .. }
            | Op::Recv { .. }
            | Op::RecvNone { .. }
            | Op::Select { .. }
            | Op::Lock { .. }
            | Op::Unlock { .. }
            | Op::SemAcquire { .. }
            | Op::SemRelease { .. }
            | Op::Atomic { .. }
            | Op::Clock
            | Op::Random
            | Op::Answer { .. }
            | Op::EblockEnter { .. }
            | Op::EblockExit { .. }
            | Op::Mark { .. }
            | Op::Undelivered { .. }
            | Op::Sleep { .. }
            | Op::Outcome { .. }
            | Op::RwAcquire { .. }
            | Op::RwRelease { .. }
            | Op::NetOpen { .. }
            | Op::NetWrite { .. }
            | Op::NetRead { .. }
            | Op::NetFail { .. },
        )
        | None => (Ending::Running, None),
    }
}

/// Analyses how the run of `trace` ended.
pub fn deadlocks<S: EventStore>(trace: &Trace<S>) -> Deadlocks {
    let n = trace.processes().len();
    let ends: Vec<(Ending, Option<Waited>)> = trace
        .processes()
        .iter()
        .map(|p| ending(p.events.last().map(|e| e.op)))
        .collect();
    let endings: Vec<Ending> = ends.iter().map(|e| e.0).collect();
    let live = |p: u32| endings[p as usize] != Ending::Ended;

    // Who holds which mutex, who sent on which channel, permits held and given.
    let mut holder: FastMap<ObjIdx, u32> = FastMap::default();
    let mut senders: FastMap<ObjIdx, BTreeSet<u32>> = FastMap::default();
    let mut net_permits: FastMap<(ObjIdx, u32), i64> = FastMap::default();
    let mut releasers: FastMap<ObjIdx, BTreeSet<u32>> = FastMap::default();
    // Reader-writer locks: holds per process (a reader may hold more than one).
    let mut rw_holds: FastMap<(ObjIdx, u32), i64> = FastMap::default();
    // Condition variables: who took the queue's lock. Park tokens: who unparked them.
    let mut condvar_users: FastMap<ObjIdx, BTreeSet<u32>> = FastMap::default();
    let mut unparkers: FastMap<ObjIdx, BTreeSet<u32>> = FastMap::default();
    // Sockets: who used each (the other end's users could send to a reader of this one).
    let mut socket_users: FastMap<ObjIdx, BTreeSet<u32>> = FastMap::default();
    for (p, proc) in trace.processes().iter().enumerate() {
        let p = p as u32;
        // A process mostly sends on the channel it sent on last: already listed.
        let mut sent_last: Option<ObjIdx> = None;
        for ev in proc.events.iter() {
            if let Op::NetOpen { socket }
            | Op::NetWrite { socket, .. }
            | Op::NetRead { socket, .. }
            | Op::NetFail { socket } = ev.op
            {
                socket_users.entry(socket).or_default().insert(p);
            }
            // The happened-before edges say who holds, who sends and who gives permits.
            match ev.op.sync().rule(proc.id, Order::HappenedBefore) {
                Rule::Takes(Point::Released(object)) => {
                    holder.insert(object, p);
                    if trace.object(object).kind == Some(ObjectKind::Condvar) {
                        condvar_users.entry(object).or_default().insert(p);
                    }
                }
                Rule::Gives(Point::Released(object)) => {
                    if holder.get(&object) == Some(&p) {
                        holder.remove(&object);
                    }
                }
                Rule::Gives(Point::Message { channel, .. }) => {
                    if sent_last != Some(channel) {
                        senders.entry(channel).or_default().insert(p);
                        sent_last = Some(channel);
                    }
                }
                Rule::TakesPermit(object) => *net_permits.entry((object, p)).or_default() += 1,
                Rule::GivesPermit(object) => {
                    *net_permits.entry((object, p)).or_default() -= 1;
                    releasers.entry(object).or_default().insert(p);
                }
                Rule::RwAcquire { object, .. } => *rw_holds.entry((object, p)).or_default() += 1,
                Rule::RwRelease { object, .. } => *rw_holds.entry((object, p)).or_default() -= 1,
                Rule::Atomic {
                    object,
                    op: AtomicOp::Store,
                    ..
                } if trace.object(object).id.is_park_token() => {
                    unparkers.entry(object).or_default().insert(p);
                }
                Rule::Local
                | Rule::Takes(
                    Point::Message { .. }
                    | Point::Spawned(_)
                    | Point::Ended(_)
                    | Point::Accessed(_),
                )
                | Rule::Gives(Point::Spawned(_) | Point::Ended(_) | Point::Accessed(_))
                | Rule::Chains(_)
                | Rule::Atomic { .. } => {}
            }
        }
    }
    let creator = |object: ObjIdx| -> Vec<u32> {
        trace
            .object(object)
            .created
            .map(|c| c.process)
            .into_iter()
            .collect()
    };

    let mut blocked = Vec::new();
    for p in 0..n as u32 {
        if endings[p as usize] != Ending::Blocked {
            continue;
        }
        let events = &trace.process(p).events;
        let event = EventRef::new(p, events.len() as u32 - 1);
        let others = |set: Vec<u32>| -> Vec<u32> {
            set.into_iter().filter(|&q| q != p && live(q)).collect()
        };
        let object = match ends[p as usize].1 {
            Some(Waited::Object(object)) => object,
            Some(Waited::Process(child)) => {
                let ends_it = trace.index_of(child).into_iter().collect();
                blocked.push(BlockedProcess {
                    process: p,
                    event,
                    object: None,
                    joins: Some(child),
                    kind: WaitKind::Exit,
                    waits_for: others(ends_it),
                    guessed: false,
                    deadlocked: true,
                });
                continue;
            }
            None => continue,
        };
        let kind = match trace.object(object).kind {
            _ if trace.object(object).id.is_park_token() => WaitKind::Unpark,
            Some(ObjectKind::Mutex | ObjectKind::RwLock) => WaitKind::Lock,
            Some(ObjectKind::Semaphore) => WaitKind::Permit,
            Some(ObjectKind::Condvar) => WaitKind::Notify,
            Some(ObjectKind::Socket) => WaitKind::Bytes,
            // Nothing blocks on an atomic but a park token; an object whose creation is not in
            // the logs is taken for a channel, the only other kind a process blocks on.
            Some(ObjectKind::Channel | ObjectKind::Atomic) | None => WaitKind::Message,
        };
        // Every live process but this one: who could wake a process when the log names
        // nobody in particular.
        let anyone = || (others((0..n as u32).collect()), true);
        // Who could end the wait, as far as the log shows; when it shows nobody, the object's
        // creator is the guess.
        let known_or_creator = |known: Vec<u32>| -> (Vec<u32>, bool) {
            if known.is_empty() {
                (others(creator(object)), true)
            } else {
                (known, false)
            }
        };
        let (waits_for, guessed) = match kind {
            // A reader-writer lock's waiter waits for every holder: a writer for the readers
            // or the writer, a reader for the writer holding it or queued before it (which
            // itself waits for the readers). Readers alone never block a reader.
            WaitKind::Lock if trace.object(object).kind == Some(ObjectKind::RwLock) => (
                others(
                    rw_holds
                        .iter()
                        .filter(|((o, _), holds)| *o == object && **holds > 0)
                        .map(|((_, q), _)| *q)
                        .collect::<BTreeSet<u32>>()
                        .into_iter()
                        .collect(),
                ),
                false,
            ),
            WaitKind::Lock => (
                others(holder.get(&object).copied().into_iter().collect()),
                false,
            ),
            WaitKind::Message => known_or_creator(others(
                senders
                    .get(&object)
                    .map(|s| s.iter().copied().collect())
                    .unwrap_or_default(),
            )),
            WaitKind::Exit => unreachable!("a join is handled above"),
            WaitKind::Bytes => match trace.peer_socket(object) {
                Some(peer) => (
                    others(
                        socket_users
                            .get(&peer)
                            .map(|s| s.iter().copied().collect())
                            .unwrap_or_default(),
                    ),
                    false,
                ),
                // A peer outside the recording can end the wait any time.
                None => {
                    blocked.push(BlockedProcess {
                        process: p,
                        event,
                        object: Some(object),
                        joins: None,
                        kind,
                        waits_for: Vec::new(),
                        guessed: false,
                        deadlocked: false,
                    });
                    continue;
                }
            },
            WaitKind::Notify | WaitKind::Unpark => {
                let known = if kind == WaitKind::Notify {
                    &condvar_users
                } else {
                    &unparkers
                };
                let known = others(
                    known
                        .get(&object)
                        .map(|s| s.iter().copied().collect())
                        .unwrap_or_default(),
                );
                if known.is_empty() {
                    anyone()
                } else {
                    (known, false)
                }
            }
            // A process that only ever takes permits (a sender waiting for room in a bounded
            // channel) waits for those that give them (its receivers), not for the other
            // takers holding permits they never give back.
            WaitKind::Permit
                if !releasers
                    .get(&object)
                    .is_some_and(|givers| givers.contains(&p))
                    && releasers
                        .get(&object)
                        .is_some_and(|givers| givers.iter().any(|&q| q != p && live(q))) =>
            {
                (others(releasers[&object].iter().copied().collect()), false)
            }
            WaitKind::Permit => {
                let holding: Vec<u32> = net_permits
                    .iter()
                    .filter(|((o, _), net)| *o == object && **net > 0)
                    .map(|((_, q), _)| *q)
                    .collect::<BTreeSet<u32>>()
                    .into_iter()
                    .collect();
                let holding = others(holding);
                if !holding.is_empty() {
                    (holding, false)
                } else {
                    known_or_creator(others(
                        releasers
                            .get(&object)
                            .map(|s| s.iter().copied().collect())
                            .unwrap_or_default(),
                    ))
                }
            }
        };
        blocked.push(BlockedProcess {
            process: p,
            event,
            object: Some(object),
            joins: None,
            kind,
            waits_for,
            guessed,
            deadlocked: true,
        });
    }

    // The largest set closed under "waits only for members".
    let position: HashMap<u32, usize> = blocked
        .iter()
        .enumerate()
        .map(|(i, b)| (b.process, i))
        .collect();
    loop {
        let mut changed = false;
        for i in 0..blocked.len() {
            if !blocked[i].deadlocked {
                continue;
            }
            let escapes = blocked[i]
                .waits_for
                .iter()
                .any(|q| position.get(q).is_none_or(|&j| !blocked[j].deadlocked));
            if escapes {
                blocked[i].deadlocked = false;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }

    // Cycles: follow each deadlocked process's first deadlocked provider.
    let mut cycles: Vec<Vec<usize>> = Vec::new();
    let mut seen = vec![false; blocked.len()];
    for start in 0..blocked.len() {
        if !blocked[start].deadlocked || seen[start] {
            continue;
        }
        let mut path: Vec<usize> = Vec::new();
        let mut on_path: HashMap<usize, usize> = HashMap::new();
        let mut at = start;
        loop {
            if let Some(&from) = on_path.get(&at) {
                cycles.push(path[from..].to_vec());
                break;
            }
            if seen[at] {
                break;
            }
            seen[at] = true;
            on_path.insert(at, path.len());
            path.push(at);
            let next = blocked[at]
                .waits_for
                .iter()
                .filter_map(|q| position.get(q).copied())
                .find(|&j| blocked[j].deadlocked);
            match next {
                Some(j) => at = j,
                None => break,
            }
        }
    }
    for cycle in &mut cycles {
        if let Some(min) = cycle
            .iter()
            .enumerate()
            .min_by_key(|(_, i)| **i)
            .map(|(k, _)| k)
        {
            cycle.rotate_left(min);
        }
    }
    Deadlocks {
        endings,
        blocked,
        cycles,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{NO_SITE, ObjIdx, Op, TraceBuilder};
    use ppd_formats::ObjectId;

    /// `main` creates a channel and spawns `child` (p1), which starts: the opening of the
    /// wait scenarios. Returns the builder, main, the child and the channel.
    fn main_spawns_a_child_with_a_channel(child: &str) -> (TraceBuilder, u32, u32, ObjIdx) {
        let mut b = Trace::builder();
        let main = b.add_process(ProcessId(0), "main", None);
        let child = b.add_process(ProcessId(1), child, Some(ProcessId(0)));
        let ch = b.define_object(ObjectId::new(ProcessId(0), 0), ObjectKind::Channel, 0, None);
        b.push(main, Op::Create { object: ch }, NO_SITE);
        b.push(
            main,
            Op::Spawn {
                child: ProcessId(1),
            },
            NO_SITE,
        );
        b.push(
            child,
            Op::Start {
                parent: Some(ProcessId(0)),
            },
            NO_SITE,
        );
        (b, main, child, ch)
    }

    /// Two processes take two mutexes in opposite orders and block on the second.
    #[test]
    fn opposite_lock_orders_make_a_cycle() {
        let mut b = Trace::builder();
        let main = b.add_process(ProcessId(0), "main", None);
        let left = b.add_process(ProcessId(1), "left", Some(ProcessId(0)));
        let right = b.add_process(ProcessId(2), "right", Some(ProcessId(0)));
        let m1 = b.define_object(
            ObjectId::new(ProcessId(0), 0),
            ObjectKind::Mutex,
            0,
            Some("m1"),
        );
        let m2 = b.define_object(
            ObjectId::new(ProcessId(0), 1),
            ObjectKind::Mutex,
            0,
            Some("m2"),
        );
        b.push(main, Op::Create { object: m1 }, NO_SITE);
        b.push(main, Op::Create { object: m2 }, NO_SITE);
        b.push(
            main,
            Op::Spawn {
                child: ProcessId(1),
            },
            NO_SITE,
        );
        b.push(
            main,
            Op::Spawn {
                child: ProcessId(2),
            },
            NO_SITE,
        );
        b.push(
            left,
            Op::Start {
                parent: Some(ProcessId(0)),
            },
            NO_SITE,
        );
        b.push(
            right,
            Op::Start {
                parent: Some(ProcessId(0)),
            },
            NO_SITE,
        );
        let lock = |object, version| Op::Lock {
            object,
            version,
            prev: None,
        };
        b.push(left, lock(m1, 1), NO_SITE);
        b.push(right, lock(m2, 1), NO_SITE);
        b.push(left, Op::Blocked { object: m2 }, NO_SITE);
        b.push(right, Op::Blocked { object: m1 }, NO_SITE);
        let trace = b.build();
        let d = deadlocks(&trace);
        assert_eq!(
            d.endings,
            vec![Ending::Running, Ending::Blocked, Ending::Blocked]
        );
        assert!(d.any());
        assert_eq!(d.blocked.len(), 2);
        assert_eq!(d.blocked[0].waits_for, vec![right]);
        assert_eq!(d.blocked[1].waits_for, vec![left]);
        assert_eq!(d.cycles, vec![vec![0, 1]]);
    }

    /// A sender waiting for room in a bounded channel (its room semaphore) waits for the
    /// receiver that gives permits back, not for the other sender holding permits it never
    /// returns.
    #[test]
    fn a_sender_waiting_for_room_waits_for_its_receiver() {
        let mut b = Trace::builder();
        let main = b.add_process(ProcessId(0), "main", None);
        let first = b.add_process(ProcessId(1), "first", Some(ProcessId(0)));
        let second = b.add_process(ProcessId(2), "second", Some(ProcessId(0)));
        let room = b.define_object(
            ObjectId::new(ProcessId(0), 0),
            ObjectKind::Semaphore,
            1,
            None,
        );
        b.push(main, Op::Create { object: room }, NO_SITE);
        for (child, id) in [(first, 1), (second, 2)] {
            b.push(
                main,
                Op::Spawn {
                    child: ProcessId(id),
                },
                NO_SITE,
            );
            b.push(
                child,
                Op::Start {
                    parent: Some(ProcessId(0)),
                },
                NO_SITE,
            );
        }
        let take = |version| Op::SemAcquire {
            object: room,
            version,
            prev: None,
        };
        b.push(first, take(1), NO_SITE);
        b.push(
            main,
            Op::SemRelease {
                object: room,
                version: 2,
                prev: Some(ProcessId(1)),
            },
            NO_SITE,
        );
        b.push(first, take(3), NO_SITE);
        b.push(second, Op::Blocked { object: room }, NO_SITE);
        let d = deadlocks(&b.build());
        assert_eq!(d.blocked.len(), 1);
        assert_eq!(d.blocked[0].kind, WaitKind::Permit);
        assert_eq!(d.blocked[0].waits_for, vec![main]);
        assert!(!d.blocked[0].guessed);
    }

    /// A receiver waiting for a process that is still running is blocked, not deadlocked.
    #[test]
    fn waiting_for_a_running_sender_is_no_deadlock() {
        let (mut b, main, worker, ch) = main_spawns_a_child_with_a_channel("worker");
        b.push(
            worker,
            Op::Send {
                channel: ch,
                seq: 1,
            },
            NO_SITE,
        );
        b.push(
            main,
            Op::Recv {
                channel: ch,
                sender: ProcessId(1),
                seq: 1,
            },
            NO_SITE,
        );
        b.push(main, Op::Blocked { object: ch }, NO_SITE);
        let d = deadlocks(&b.build());
        assert_eq!(d.blocked.len(), 1);
        assert_eq!(d.blocked[0].kind, WaitKind::Message);
        assert_eq!(d.blocked[0].waits_for, vec![worker]);
        assert!(!d.any());
        assert!(d.cycles.is_empty());
    }

    /// `main` joins a fetcher that waits on a channel only `main` could feed: a cycle through
    /// a join and a channel.
    #[test]
    fn a_join_waiting_for_a_receiver_that_waits_for_the_joiner_is_a_deadlock() {
        let (mut b, main, fetcher, ch) = main_spawns_a_child_with_a_channel("fetcher");
        b.push(fetcher, Op::Blocked { object: ch }, NO_SITE);
        b.push(
            main,
            Op::JoinBlocked {
                child: ProcessId(1),
            },
            NO_SITE,
        );
        let d = deadlocks(&b.build());
        assert_eq!(d.endings, vec![Ending::Blocked, Ending::Blocked]);
        assert_eq!(d.blocked.len(), 2);
        assert_eq!(d.blocked[0].kind, WaitKind::Exit);
        assert_eq!(d.blocked[0].joins, Some(ProcessId(1)));
        assert_eq!(d.blocked[0].waits_for, vec![fetcher]);
        assert_eq!(d.blocked[1].waits_for, vec![main]);
        assert!(d.any());
        assert_eq!(d.cycles, vec![vec![0, 1]]);
    }

    /// `main` and `worker` have both used condvar `wake` and `main` waits on it; `worker`
    /// too when `both_wait`.
    fn condvar_waiters(both_wait: bool) -> (Trace, u32) {
        let (mut b, main, worker, _) = main_spawns_a_child_with_a_channel("worker");
        let cv = b.define_object(
            ObjectId::new(ProcessId(0), 1),
            ObjectKind::Condvar,
            0,
            Some("wake"),
        );
        for (version, p) in [(1, worker), (2, main)] {
            let lock = Op::Lock {
                object: cv,
                version,
                prev: None,
            };
            b.push(p, lock, NO_SITE);
            b.push(p, Op::Unlock { object: cv }, NO_SITE);
        }
        b.push(main, Op::Blocked { object: cv }, NO_SITE);
        if both_wait {
            b.push(worker, Op::Blocked { object: cv }, NO_SITE);
        }
        (b.build(), worker)
    }

    /// A condvar waiter waits for the condvar's other users: while one runs it is blocked, not
    /// deadlocked; once that user waits on the same condvar too, both are deadlocked.
    #[test]
    fn a_condvar_waiter_waits_for_the_condvars_other_users() {
        let (running, worker) = condvar_waiters(false);
        let d = deadlocks(&running);
        assert_eq!(d.blocked.len(), 1);
        assert_eq!(d.blocked[0].kind, WaitKind::Notify);
        assert_eq!(d.blocked[0].waits_for, vec![worker]);
        assert!(!d.blocked[0].guessed);
        assert!(!d.any());

        let (stuck, _) = condvar_waiters(true);
        let d = deadlocks(&stuck);
        assert_eq!(d.blocked.len(), 2);
        assert!(d.blocked.iter().all(|w| w.deadlocked), "{d:?}");
        assert_eq!(d.cycles.len(), 1);
    }

    /// `worker` parks with nobody having unparked it; `main` joins it when `main_joins`.
    fn parked_worker(main_joins: bool) -> (Trace, u32) {
        let (mut b, main, worker, _) = main_spawns_a_child_with_a_channel("worker");
        let token = b.define_object(
            ObjectId::park_token(ProcessId(1)),
            ObjectKind::Atomic,
            0,
            None,
        );
        b.push(worker, Op::Blocked { object: token }, NO_SITE);
        if main_joins {
            let join = Op::JoinBlocked {
                child: ProcessId(1),
            };
            b.push(main, join, NO_SITE);
        }
        (b.build(), main)
    }

    /// A parked process that nobody has unparked may be woken by anyone: every live process is
    /// the guess, so it is deadlocked only when they all are.
    #[test]
    fn a_parked_process_waits_for_its_unparkers_or_anyone() {
        let (running, main) = parked_worker(false);
        let d = deadlocks(&running);
        assert_eq!(d.blocked[0].kind, WaitKind::Unpark);
        assert_eq!(d.blocked[0].waits_for, vec![main]);
        assert!(d.blocked[0].guessed);
        assert!(!d.any(), "main still runs");

        let (stuck, _) = parked_worker(true);
        let d = deadlocks(&stuck);
        assert!(d.any());
        assert_eq!(d.cycles.len(), 1);
    }
}
