//! Deadlocks: processes that ended the run blocked, and the wait-for cycles among them.
//!
//! A process is blocked at the end of a recording when its last event is `Blocked` (logged
//! just before a receive, lock or P waits) with nothing after it: the program was killed while
//! it waited, its `main` returned while it waited, or the log stops there. What it waits for
//! and who could end the wait (the waiter itself among them when it holds what it waits for: a
//! wait nobody else can end is then a self-wait, a deadlock of one process):
//!
//! * a mutex: the process holding it (its last `Lock` of the mutex has no `Unlock` after it);
//! * a message: the live processes that have sent on the channel (they held a sender), the
//!   waiter too if it has; if none has, the channel's creator, which held the only sender at
//!   first. A receive ends with a message or with the drop of the last sender; when the waiter
//!   holds a sender itself the channel cannot close, and a process that can act only after the
//!   waiter has ended (it joins the waiter) cannot send first, so it owes nothing;
//! * a semaphore permit: the live processes holding permits (more P than V), else those that
//!   did V operations, else the creator; a process that has never done a V on it (a sender
//!   waiting for room in a bounded channel) waits for the live ones that did V operations
//!   first (its receivers), and counts among the holders only if it gives permits back;
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
//! joins as well as channels and locks, and a self-wait is a cycle of one. A process that is
//! sleeping is not visible in the log and counts as running.
//!
//! When `main` returned (or panicked) its program exited, and the processes still waiting were
//! left waiting by the exit. `main` was alive until then, so it counts among those that could
//! have ended a wait: a process left waiting is deadlocked only if its wait belongs to a
//! cycle, or waits behind one, or nobody alive before the exit could have ended it.

use std::collections::{BTreeSet, HashMap};

use ppd_formats::ProcessId;
use ppd_formats::event::{AtomicOp, Class, ObjectKind};
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
    /// Whether it was left waiting by the program's exit: its `main` returned while it
    /// waited, and a process alive until then could have ended the wait (it is not deadlocked).
    pub left_waiting: bool,
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

/// What a blocked process waits on, as its report names it.
struct Wait {
    object: Option<ObjIdx>,
    joins: Option<ProcessId>,
    kind: WaitKind,
}

/// Who could end a wait.
struct Provided {
    /// The processes, by index.
    by: Vec<u32>,
    /// Whether they are a guess (the log names nobody in particular).
    guessed: bool,
    /// Whether the wait can be part of a deadlock: not when a peer outside the recording
    /// could end it.
    can_deadlock: bool,
}

impl Provided {
    fn known(by: Vec<u32>) -> Provided {
        Provided {
            by,
            guessed: false,
            can_deadlock: true,
        }
    }

    fn guess(by: Vec<u32>) -> Provided {
        Provided {
            by,
            guessed: true,
            can_deadlock: true,
        }
    }

    /// A wait on a lock nobody holds: it ends with the grant already due.
    fn free() -> Provided {
        Provided {
            by: Vec::new(),
            guessed: false,
            can_deadlock: false,
        }
    }

    /// A wait a peer outside the recording can end at any time.
    fn outside() -> Provided {
        Provided {
            by: Vec::new(),
            guessed: false,
            can_deadlock: false,
        }
    }
}

/// Who owes process `p` a message on a channel whose live known senders (the processes that
/// have sent on it, `p` among them if it has) are `holders`; `None` when nobody is known.
///
/// A receive ends with a message, or with the drop of the last sender. When `p` holds a sender
/// itself the channel cannot close while it waits, so only a message ends the wait, and a
/// process that can act only after `p` has ended (`after_p`: it joins `p`) cannot send one
/// first: it owes nothing, and with nobody else left `p` waits for itself. When `p` holds no
/// sender, every holder keeps the channel open and owes it a message or its drop, a joiner of
/// `p` too: that is a cycle through the join.
fn message_providers(p: u32, holders: Vec<u32>, after_p: impl Fn(u32) -> bool) -> Option<Provided> {
    if holders.is_empty() {
        None
    } else if holders.contains(&p) {
        Some(Provided::known(
            holders.into_iter().filter(|&q| !after_p(q)).collect(),
        ))
    } else {
        Some(Provided::known(holders))
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
    let Some(op) = last else {
        return (Ending::Running, None);
    };
    match op.kind().class() {
        Class::Wait => match op {
            Op::Blocked { object } => (Ending::Blocked, Some(Waited::Object(object))),
            Op::JoinBlocked { child } => (Ending::Blocked, Some(Waited::Process(child))),
            // A sleep: only time ends it, nobody else.
            _ => (Ending::Running, None),
        },
        Class::Lifecycle if op.kind().ends_process() => (Ending::Ended, None),
        Class::Lifecycle
        | Class::Create
        | Class::Message
        | Class::Lock
        | Class::Semaphore
        | Class::Atomic
        | Class::Input
        | Class::Attempt
        | Class::Eblock
        | Class::Mark
        | Class::Socket => (Ending::Running, None),
    }
}

/// What the logs say each process holds and gives at their ends: the edges of the wait-for
/// graph's candidates.
struct Holdings {
    /// Mutexes: whether each process's last step on it took it. The logs are read a process
    /// at a time, so the holder is whoever still holds at the end of its own log, not whoever
    /// happened to be read last.
    holds: FastMap<(ObjIdx, u32), bool>,
    /// Channels: the processes that sent on each.
    senders: FastMap<ObjIdx, BTreeSet<u32>>,
    /// Semaphores: the permits each process took and did not give back.
    net_permits: FastMap<(ObjIdx, u32), i64>,
    /// Semaphores: the processes that gave permits.
    releasers: FastMap<ObjIdx, BTreeSet<u32>>,
    /// Reader-writer locks: holds per process (a reader may hold more than one).
    rw_holds: FastMap<(ObjIdx, u32), i64>,
    /// Condition variables: who took the queue's lock.
    condvar_users: FastMap<ObjIdx, BTreeSet<u32>>,
    /// Park tokens: who unparked them.
    unparkers: FastMap<ObjIdx, BTreeSet<u32>>,
    /// Sockets: who used each (the other end's users could send to a reader of this one).
    socket_users: FastMap<ObjIdx, BTreeSet<u32>>,
}

impl Holdings {
    /// Who holds which mutex, who sent on which channel, permits held and given, read off the
    /// happened-before rules of every event.
    fn of<S: EventStore>(trace: &Trace<S>) -> Holdings {
        let mut holds: FastMap<(ObjIdx, u32), bool> = FastMap::default();
        let mut senders: FastMap<ObjIdx, BTreeSet<u32>> = FastMap::default();
        let mut net_permits: FastMap<(ObjIdx, u32), i64> = FastMap::default();
        let mut releasers: FastMap<ObjIdx, BTreeSet<u32>> = FastMap::default();
        let mut rw_holds: FastMap<(ObjIdx, u32), i64> = FastMap::default();
        let mut condvar_users: FastMap<ObjIdx, BTreeSet<u32>> = FastMap::default();
        let mut unparkers: FastMap<ObjIdx, BTreeSet<u32>> = FastMap::default();
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
                        holds.insert((object, p), true);
                        if trace.object(object).kind == Some(ObjectKind::Condvar) {
                            condvar_users.entry(object).or_default().insert(p);
                        }
                    }
                    Rule::Gives(Point::Released(object)) => {
                        holds.insert((object, p), false);
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
                    Rule::RwAcquire { object, .. } => {
                        *rw_holds.entry((object, p)).or_default() += 1
                    }
                    Rule::RwRelease { object, .. } => {
                        *rw_holds.entry((object, p)).or_default() -= 1
                    }
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
        Holdings {
            holds,
            senders,
            net_permits,
            releasers,
            rw_holds,
            condvar_users,
            unparkers,
            socket_users,
        }
    }
}

/// Analyses how the run of `trace` ended.
pub(crate) fn deadlocks<S: EventStore>(trace: &Trace<S>) -> Deadlocks {
    let n = trace.processes().len();
    let ends: Vec<(Ending, Option<Waited>)> = trace
        .processes()
        .iter()
        .map(|p| ending(p.events.last().map(|e| e.op)))
        .collect();
    let endings: Vec<Ending> = ends.iter().map(|e| e.0).collect();
    // A `main` whose log ended returned (or panicked), and its program exited there: it was
    // alive until the exit, so it counts among the processes that could have ended a wait.
    let is_main = |p: u32| trace.process(p).id.local() == ProcessId::MAIN;
    let live = |p: u32| endings[p as usize] != Ending::Ended || is_main(p);
    // Whether the program of `p` (its node) exited: its `main` ended.
    let program_exited = |p: u32| {
        let main = ProcessId::on_node(trace.process(p).id.node(), ProcessId::MAIN.0);
        trace
            .index_of(main)
            .is_some_and(|m| endings[m as usize] == Ending::Ended)
    };

    let Holdings {
        holds,
        senders,
        net_permits,
        releasers,
        rw_holds,
        condvar_users,
        unparkers,
        socket_users,
    } = Holdings::of(trace);
    let creator = |object: ObjIdx| trace.object(object).created.map(|c| c.process);
    // Whether `q` can act again only after `p` has ended: it joins `p`, or joins a process
    // that can act again only after `p` has ended. A chain of joins visits each process once.
    let acts_only_after_end_of = |q: u32, p: u32| -> bool {
        let mut at = q;
        for _ in 0..n {
            match ends[at as usize].1 {
                Some(Waited::Process(child)) => match trace.index_of(child) {
                    Some(joined) if joined == p => return true,
                    Some(joined) => at = joined,
                    None => return false,
                },
                Some(Waited::Object(_)) | None => return false,
            }
        }
        false
    };
    let sorted = |set: BTreeSet<u32>| -> Vec<u32> { set.into_iter().collect() };

    let mut blocked = Vec::new();
    for p in 0..n as u32 {
        if endings[p as usize] != Ending::Blocked {
            continue;
        }
        let events = &trace.process(p).events;
        let event = EventRef::new(p, events.len() as u32 - 1);
        // The live processes of `set`, the waiter among them: it is one of its own providers
        // when it holds what it waits for (a self-wait, once nobody else can end the wait).
        let alive = |set: &mut dyn Iterator<Item = u32>| -> Vec<u32> {
            sorted(set.filter(|&q| live(q)).collect())
        };
        // The live processes of `set` but the waiter: it cannot give itself a notify, an
        // unpark or its own end.
        let others = |set: &mut dyn Iterator<Item = u32>| -> Vec<u32> {
            sorted(set.filter(|&q| q != p && live(q)).collect())
        };
        let push = |blocked: &mut Vec<BlockedProcess>, wait: Wait, provided: Provided| {
            blocked.push(BlockedProcess {
                process: p,
                event,
                object: wait.object,
                joins: wait.joins,
                kind: wait.kind,
                waits_for: provided.by,
                guessed: provided.guessed,
                deadlocked: provided.can_deadlock,
                left_waiting: false,
            });
        };
        let object = match ends[p as usize].1 {
            Some(Waited::Object(object)) => object,
            Some(Waited::Process(child)) => {
                let wait = Wait {
                    object: None,
                    joins: Some(child),
                    kind: WaitKind::Exit,
                };
                let by = others(&mut trace.index_of(child).into_iter());
                push(&mut blocked, wait, Provided::known(by));
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
        let wait = Wait {
            object: Some(object),
            joins: None,
            kind,
        };
        let known = |sets: &FastMap<ObjIdx, BTreeSet<u32>>| -> Vec<u32> {
            sets.get(&object)
                .map(|s| s.iter().copied().collect())
                .unwrap_or_default()
        };
        // Every live process but this one: who could wake a process when the log names
        // nobody in particular.
        let anyone = || Provided::guess(others(&mut (0..n as u32)));
        let provided = match kind {
            // A reader-writer lock's waiter waits for every holder: a writer for the readers
            // or the writer, a reader for the writer holding it or queued before it (which
            // itself waits for the readers). Readers alone never block a reader.
            WaitKind::Lock => {
                let holders: Vec<u32> = if trace.object(object).kind == Some(ObjectKind::RwLock) {
                    rw_holds
                        .iter()
                        .filter(|((o, _), holds)| *o == object && **holds > 0)
                        .map(|((_, q), _)| *q)
                        .collect()
                } else {
                    holds
                        .iter()
                        .filter(|((o, _), held)| *o == object && **held)
                        .map(|((_, q), _)| *q)
                        .collect()
                };
                if holders.is_empty() {
                    // Released by its last holder: the wake-up was on its way when the logs
                    // end (the grant of a released lock is not refused).
                    Provided::free()
                } else {
                    Provided::known(alive(&mut holders.into_iter()))
                }
            }
            WaitKind::Message => {
                message_providers(p, alive(&mut known(&senders).into_iter()), |q| {
                    acts_only_after_end_of(q, p)
                })
                .unwrap_or_else(|| Provided::guess(alive(&mut creator(object).into_iter())))
            }
            WaitKind::Exit => unreachable!("a join is handled above"),
            WaitKind::Bytes => match trace.peer_socket(object) {
                Some(peer) => Provided::known(alive(
                    &mut socket_users
                        .get(&peer)
                        .into_iter()
                        .flat_map(|users| users.iter().copied()),
                )),
                // A peer outside the recording can end the wait any time.
                None => Provided::outside(),
            },
            WaitKind::Notify | WaitKind::Unpark => {
                let users = if kind == WaitKind::Notify {
                    &condvar_users
                } else {
                    &unparkers
                };
                let known = others(&mut known(users).into_iter());
                if known.is_empty() {
                    anyone()
                } else {
                    Provided::known(known)
                }
            }
            WaitKind::Permit => {
                let givers = known(&releasers);
                // A process that only ever takes permits (a sender waiting for room in a
                // bounded channel) waits for those that give them (its receivers), not for the
                // other takers holding permits they never give back; the permits it holds
                // itself are none it would give back either.
                let gives = givers.contains(&p);
                let givers = alive(&mut givers.into_iter());
                if !gives && !givers.is_empty() {
                    Provided::known(givers)
                } else {
                    let holding = alive(
                        &mut net_permits
                            .iter()
                            .filter(|((o, q), net)| *o == object && **net > 0 && (gives || *q != p))
                            .map(|((_, q), _)| *q),
                    );
                    if !holding.is_empty() {
                        Provided::known(holding)
                    } else if !givers.is_empty() {
                        Provided::known(givers)
                    } else {
                        Provided::guess(others(&mut creator(object).into_iter()))
                    }
                }
            }
        };
        push(&mut blocked, wait, provided);
    }

    let position = close_deadlocked(&mut blocked);

    for b in &mut blocked {
        b.left_waiting = !b.deadlocked && program_exited(b.process);
    }

    let cycles = cycles_of(&blocked, &position);
    Deadlocks {
        endings,
        blocked,
        cycles,
    }
}

/// Leaves deadlocked only the largest set of `blocked` processes closed under "waits only for
/// members"; returns each blocked process's position in `blocked`.
fn close_deadlocked(blocked: &mut [BlockedProcess]) -> HashMap<u32, usize> {
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
    position
}

/// The wait-for cycles among the deadlocked: each deadlocked process's first deadlocked
/// provider followed until a process repeats; each cycle starts at its least member.
fn cycles_of(blocked: &[BlockedProcess], position: &HashMap<u32, usize>) -> Vec<Vec<usize>> {
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
    cycles
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

    /// `main` sends a request on `requests` and the fetcher requeues it on its own sender
    /// before it waits for the next; `main` then joins the fetcher when `main_joins`, else
    /// runs on.
    fn fetcher_holding_its_own_sender(main_joins: bool) -> (Trace, u32, u32) {
        let (mut b, main, fetcher, requests) = main_spawns_a_child_with_a_channel("fetcher");
        let send = |seq| Op::Send {
            channel: requests,
            seq,
        };
        let recv = |sender, seq| Op::Recv {
            channel: requests,
            sender: ProcessId(sender),
            seq,
        };
        b.push(main, send(1), NO_SITE);
        b.push(fetcher, recv(0, 1), NO_SITE);
        b.push(fetcher, send(65), NO_SITE);
        b.push(fetcher, recv(1, 65), NO_SITE);
        b.push(fetcher, Op::Blocked { object: requests }, NO_SITE);
        if main_joins {
            let join = Op::JoinBlocked {
                child: ProcessId(1),
            };
            b.push(main, join, NO_SITE);
        }
        (b.build(), main, fetcher)
    }

    /// A receiver that has sent on its channel holds a sender, so the channel cannot close
    /// while it waits: only a message ends the wait. `main`, joining it, can send nothing
    /// before it ends, so the fetcher waits for itself alone (a deadlock of one process) and
    /// `main` is blocked behind it, in no cycle with it.
    #[test]
    fn a_receiver_holding_the_only_sender_that_can_still_send_waits_for_itself() {
        let (trace, main, fetcher) = fetcher_holding_its_own_sender(true);
        let d = deadlocks(&trace);
        assert_eq!(d.blocked.len(), 2);
        let (joiner, receiver) = (&d.blocked[0], &d.blocked[1]);
        assert_eq!(joiner.process, main);
        assert_eq!(joiner.waits_for, vec![fetcher]);
        assert!(joiner.deadlocked);
        assert_eq!(receiver.process, fetcher);
        assert_eq!(receiver.kind, WaitKind::Message);
        assert_eq!(receiver.waits_for, vec![fetcher]);
        assert!(!receiver.guessed);
        assert!(receiver.deadlocked);
        assert_eq!(d.cycles, vec![vec![1]], "the fetcher's self-wait alone");
    }

    /// The same receiver while `main`, which has sent on the channel, still runs: `main` may
    /// send again, so the receiver is blocked, not deadlocked.
    #[test]
    fn a_receiver_holding_a_sender_waits_for_the_other_senders_that_run() {
        let (trace, main, fetcher) = fetcher_holding_its_own_sender(false);
        let d = deadlocks(&trace);
        assert_eq!(d.blocked.len(), 1);
        assert_eq!(d.blocked[0].waits_for, vec![main, fetcher]);
        assert!(!d.any());
        assert!(!d.blocked[0].left_waiting, "main did not return");
        assert!(d.cycles.is_empty());
    }

    /// Nobody has sent on the channel `waiter` waits on: its creator, which held the only
    /// sender at first, is the guess, not any live process. With the creator joining the
    /// waiter, that is a cycle, though `bystander` still runs.
    #[test]
    fn when_nobody_has_sent_the_channels_creator_is_the_guess() {
        let (mut b, main, waiter, ch) = main_spawns_a_child_with_a_channel("waiter");
        let bystander = b.add_process(ProcessId(2), "bystander", Some(ProcessId(0)));
        b.push(
            main,
            Op::Spawn {
                child: ProcessId(2),
            },
            NO_SITE,
        );
        b.push(
            bystander,
            Op::Start {
                parent: Some(ProcessId(0)),
            },
            NO_SITE,
        );
        b.push(waiter, Op::Blocked { object: ch }, NO_SITE);
        b.push(
            main,
            Op::JoinBlocked {
                child: ProcessId(1),
            },
            NO_SITE,
        );
        let d = deadlocks(&b.build());
        assert_eq!(d.blocked.len(), 2);
        assert_eq!(d.blocked[1].process, waiter);
        assert_eq!(d.blocked[1].waits_for, vec![main]);
        assert!(d.blocked[1].guessed);
        assert!(d.any());
        assert_eq!(d.cycles, vec![vec![0, 1]]);
    }

    /// A pool: `main` created the job channel and the lock over its receiver, spawned two
    /// workers and sent one job; `w1` took it and waits for the next while holding the lock,
    /// `w2` waits for the lock; with `crossed_locks`, `w1` waits instead for a lock `w2` holds.
    /// Then `main` returns.
    fn main_returns_with_workers_waiting(crossed_locks: bool) -> (Trace, u32, u32, u32) {
        let (mut b, main, w1, jobs) = main_spawns_a_child_with_a_channel("w1");
        let w2 = b.add_process(ProcessId(2), "w2", Some(ProcessId(0)));
        b.push(
            main,
            Op::Spawn {
                child: ProcessId(2),
            },
            NO_SITE,
        );
        b.push(
            w2,
            Op::Start {
                parent: Some(ProcessId(0)),
            },
            NO_SITE,
        );
        let lock_of = |b: &mut TraceBuilder, n| {
            let m = b.define_object(ObjectId::new(ProcessId(0), n), ObjectKind::Mutex, 0, None);
            b.push(main, Op::Create { object: m }, NO_SITE);
            m
        };
        let receiver = lock_of(&mut b, 1);
        let lock = |object, version| Op::Lock {
            object,
            version,
            prev: None,
        };
        b.push(
            main,
            Op::Send {
                channel: jobs,
                seq: 1,
            },
            NO_SITE,
        );
        b.push(w1, lock(receiver, 1), NO_SITE);
        b.push(
            w1,
            Op::Recv {
                channel: jobs,
                sender: ProcessId(0),
                seq: 1,
            },
            NO_SITE,
        );
        if crossed_locks {
            let other = lock_of(&mut b, 2);
            b.push(w2, lock(other, 1), NO_SITE);
            b.push(w1, Op::Blocked { object: other }, NO_SITE);
        } else {
            b.push(w1, Op::Blocked { object: jobs }, NO_SITE);
        }
        b.push(w2, Op::Blocked { object: receiver }, NO_SITE);
        b.push(main, Op::Exit, NO_SITE);
        (b.build(), main, w1, w2)
    }

    /// Workers still waiting for jobs when `main` returned were left waiting by the program's
    /// exit: `main`, alive until then, could have sent the next job. Not a deadlock.
    #[test]
    fn workers_waiting_for_jobs_when_main_returns_are_left_waiting() {
        let (trace, main, w1, w2) = main_returns_with_workers_waiting(false);
        let d = deadlocks(&trace);
        assert_eq!(d.endings[main as usize], Ending::Ended);
        assert_eq!(d.blocked.len(), 2);
        assert_eq!(d.blocked[0].waits_for, vec![main]);
        assert_eq!(d.blocked[1].process, w2);
        assert_eq!(d.blocked[1].waits_for, vec![w1]);
        assert!(!d.any(), "{d:?}");
        assert!(d.blocked.iter().all(|b| b.left_waiting), "{d:?}");
        assert!(d.cycles.is_empty());
    }

    /// A lock released by its last holder is granted to its waiter next: a waiter whose log
    /// ends before the grant is not deadlocked, nor is the process that joins it.
    #[test]
    fn a_wait_for_a_released_lock_is_no_deadlock() {
        let (mut b, main, child, _) = main_spawns_a_child_with_a_channel("waiter");
        let m = b.define_object(ObjectId::new(ProcessId(0), 1), ObjectKind::Mutex, 0, None);
        b.push(main, Op::Create { object: m }, NO_SITE);
        let lock = Op::Lock {
            object: m,
            version: 1,
            prev: None,
        };
        b.push(main, lock, NO_SITE);
        b.push(main, Op::Unlock { object: m }, NO_SITE);
        b.push(child, Op::Blocked { object: m }, NO_SITE);
        b.push(
            main,
            Op::JoinBlocked {
                child: ProcessId(1),
            },
            NO_SITE,
        );
        let d = deadlocks(&b.build());
        assert_eq!(d.blocked.len(), 2, "{d:?}");
        assert!(d.blocked[1].waits_for.is_empty(), "{d:?}");
        assert!(!d.any(), "{d:?}");
        assert!(d.cycles.is_empty(), "{d:?}");
    }

    /// The holder of a mutex is whoever's log ends holding it, whatever order the logs are
    /// read in: `w2`, read after `w1`, took and released it before `w1` took it.
    #[test]
    fn the_holder_is_who_ends_holding_the_lock_not_who_is_read_last() {
        let (mut b, main, w1, jobs) = main_spawns_a_child_with_a_channel("w1");
        let w2 = b.add_process(ProcessId(2), "w2", Some(ProcessId(0)));
        let spawn = Op::Spawn {
            child: ProcessId(2),
        };
        b.push(main, spawn, NO_SITE);
        let start = Op::Start {
            parent: Some(ProcessId(0)),
        };
        b.push(w2, start, NO_SITE);
        let m = b.define_object(ObjectId::new(ProcessId(0), 1), ObjectKind::Mutex, 0, None);
        b.push(main, Op::Create { object: m }, NO_SITE);
        let lock = |version| Op::Lock {
            object: m,
            version,
            prev: None,
        };
        b.push(w2, lock(1), NO_SITE);
        b.push(w2, Op::Unlock { object: m }, NO_SITE);
        b.push(w1, lock(2), NO_SITE);
        b.push(w1, Op::Blocked { object: jobs }, NO_SITE);
        b.push(w2, Op::Blocked { object: m }, NO_SITE);
        let d = deadlocks(&b.build());
        let on_lock = d
            .blocked
            .iter()
            .find(|b| b.process == w2)
            .expect("w2 is blocked");
        assert_eq!(on_lock.waits_for, vec![w1], "{d:?}");
    }

    /// Waits that form a cycle are a deadlock whether or not `main` returned.
    #[test]
    fn waits_that_form_a_cycle_when_main_returns_are_a_deadlock() {
        let (trace, _, w1, w2) = main_returns_with_workers_waiting(true);
        let d = deadlocks(&trace);
        assert_eq!(d.blocked[0].waits_for, vec![w2]);
        assert_eq!(d.blocked[1].waits_for, vec![w1]);
        assert!(d.blocked.iter().all(|b| b.deadlocked), "{d:?}");
        assert!(d.blocked.iter().all(|b| !b.left_waiting), "{d:?}");
        assert_eq!(d.cycles, vec![vec![0, 1]]);
    }

    /// A wait that nobody alive before the exit could end (its channel's creator and only
    /// sender had ended) is a deadlock even though `main` returned.
    #[test]
    fn a_wait_nobody_alive_before_the_exit_could_end_is_a_deadlock() {
        let mut b = Trace::builder();
        let main = b.add_process(ProcessId(0), "main", None);
        let feeder = b.add_process(ProcessId(1), "feeder", Some(ProcessId(0)));
        let reader = b.add_process(ProcessId(2), "reader", Some(ProcessId(0)));
        for (child, id) in [(feeder, 1), (reader, 2)] {
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
        let ch = b.define_object(ObjectId::new(ProcessId(1), 0), ObjectKind::Channel, 0, None);
        b.push(feeder, Op::Create { object: ch }, NO_SITE);
        b.push(
            feeder,
            Op::Send {
                channel: ch,
                seq: 1,
            },
            NO_SITE,
        );
        b.push(feeder, Op::Exit, NO_SITE);
        b.push(
            reader,
            Op::Recv {
                channel: ch,
                sender: ProcessId(1),
                seq: 1,
            },
            NO_SITE,
        );
        b.push(reader, Op::Blocked { object: ch }, NO_SITE);
        b.push(main, Op::Exit, NO_SITE);
        let d = deadlocks(&b.build());
        assert_eq!(d.blocked.len(), 1);
        assert!(d.blocked[0].waits_for.is_empty(), "{d:?}");
        assert!(d.blocked[0].deadlocked);
        assert!(!d.blocked[0].left_waiting);
    }

    /// A process that locks a mutex it holds waits for itself.
    #[test]
    fn relocking_a_held_mutex_is_a_self_wait() {
        let mut b = Trace::builder();
        let main = b.add_process(ProcessId(0), "main", None);
        let m = b.define_object(ObjectId::new(ProcessId(0), 0), ObjectKind::Mutex, 0, None);
        b.push(main, Op::Create { object: m }, NO_SITE);
        let lock = Op::Lock {
            object: m,
            version: 1,
            prev: None,
        };
        b.push(main, lock, NO_SITE);
        b.push(main, Op::Blocked { object: m }, NO_SITE);
        let d = deadlocks(&b.build());
        assert_eq!(d.blocked[0].waits_for, vec![main]);
        assert!(d.blocked[0].deadlocked);
        assert_eq!(d.cycles, vec![vec![0]]);
    }

    /// A process waiting on a channel it made, that nobody has sent on, holds the only sender
    /// as far as the log shows (the creator's): it waits for itself, by guess.
    #[test]
    fn receiving_on_a_channel_of_ones_own_that_nobody_sent_on_is_a_self_wait_by_guess() {
        let (mut b, main, worker, _) = main_spawns_a_child_with_a_channel("worker");
        let own = b.define_object(ObjectId::new(ProcessId(1), 0), ObjectKind::Channel, 0, None);
        b.push(worker, Op::Create { object: own }, NO_SITE);
        b.push(worker, Op::Blocked { object: own }, NO_SITE);
        b.push(
            main,
            Op::JoinBlocked {
                child: ProcessId(1),
            },
            NO_SITE,
        );
        let d = deadlocks(&b.build());
        assert_eq!(d.blocked[1].process, worker);
        assert_eq!(d.blocked[1].waits_for, vec![worker]);
        assert!(d.blocked[1].guessed);
        assert_eq!(d.blocked[0].process, main);
        assert_eq!(d.blocked[0].waits_for, vec![worker]);
        assert!(d.blocked.iter().all(|b| b.deadlocked));
        assert_eq!(
            d.cycles,
            vec![vec![1]],
            "main is behind the worker, not in a cycle"
        );
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
