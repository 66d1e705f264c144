//! The local controllers of the processes and the termination detector: Manabe & Imase's
//! Algorithm 1 (§3.2, Appendix B), the disjunctive halting of §3.3, Miller & Choi's linked
//! predicates (§3.4, §3.6) and Spezialetti & Gupta's simultaneity, over one replayed run.
//!
//! Each process has a local controller (`Lc`). A process runs while its controller is
//! *active* and is held before its next event while it is *passive* (`gate`). As in the
//! paper, a controller is active while its local predicate is false or while another process
//! has asked it, by a control message, to produce something it has not produced yet
//! (`mustsend`); a process that needs something from a passive one sends it such a message
//! (`request`). The paper's control messages name a message by its number on the channel from
//! S to R; ours name any happened-before dependency the runtime has — a message by channel and
//! sequence number, an access version of a lock, semaphore or atomic, the end of a process, the
//! spawn of a process — so the same algorithm halts programs that share memory as well as
//! those that pass messages. The termination detector is centralized (the paper allows either):
//! every controller's state is under one lock, and a control message is delivered to its
//! controller the moment it is sent, so none is ever in flight when the detector looks.
//!
//! Global states are consistent cuts (no receive without its send) rather than the paper's
//! tuples of pairwise concurrent events, so a process may be halted right after a send whose
//! receipt another process has executed.
//!
//! Algorithm 1 runs a process without a predicate only on request, one needed event at a
//! time, so a receiver fed by such processes asks them once per message. A held process
//! therefore watches for its next request for a few tens of microseconds before it sleeps:
//! halting a 1 M-message fan-in took 21 s of wake-ups and takes 2 s (`cargo bench -p ppd
//! --bench replay`). The halted state is the paper's; only the waiting changed.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Instant;

use crossbeam_utils::CachePadded;

use ppd_formats::clock::VectorClock;
use ppd_formats::order::{Order, Point, Rule, Tick};
use ppd_formats::{Event, ObjectId, ProcessId};
use ppd_recorder::runtime::backend::Dependency;
use ppd_recorder::runtime::watch::watch;

use crate::predicate::{After, Combination, Linked, Resolved, Tests};
use crate::protocol::{Goal, HaltReason, ProcessReport, Report};

/// Something a process may need another process to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Need {
    /// A happened-before dependency the runtime reports.
    Dep(Dependency),
    /// The spawn of this process by its parent.
    Spawn(ProcessId),
}

impl Need {
    /// The process that must act.
    fn producer(self, parents: &[Option<ProcessId>]) -> Option<ProcessId> {
        match self {
            Need::Dep(Dependency::Message { sender, .. }) => Some(sender),
            Need::Dep(Dependency::Version { by, .. }) => Some(by),
            Need::Dep(Dependency::Exit { child }) => Some(child),
            // Not found in the logs (`creations`): nobody is known to make it.
            Need::Dep(Dependency::Creation { .. }) => None,
            Need::Spawn(child) => parents.get(child.index()).copied().flatten(),
        }
    }

    /// What is needed, with processes by their names.
    fn describe(self, name: &dyn Fn(ProcessId) -> String) -> String {
        match self {
            Need::Dep(Dependency::Message {
                channel,
                seq,
                sender,
            }) => format!("message {seq} on {channel} from {}", name(sender)),
            Need::Dep(Dependency::Version {
                object,
                version,
                by,
            }) => format!("access {version} of {object} by {}", name(by)),
            Need::Dep(Dependency::Exit { child }) => format!("the end of {}", name(child)),
            Need::Dep(Dependency::Creation { kind, site }) => {
                let kind = kind.name();
                format!("the creation of the {kind} made at {site}, which no log has left")
            }
            Need::Spawn(child) => format!("the spawn of {}", name(child)),
        }
    }
}

/// What each process has produced that others may need, with the vector clock (in the replay
/// order, `ppd_formats::order`) of the event that produced it.
#[derive(Debug, Default)]
struct Produced {
    messages: HashMap<(ObjectId, u64), Vec<Tick>>,
    /// Latest version done (for a mutex: released) and its clock.
    versions: HashMap<ObjectId, (u64, Vec<Tick>)>,
    /// Version of a mutex while it is held.
    held: HashMap<ObjectId, u64>,
    exits: HashMap<ProcessId, Vec<Tick>>,
    spawns: HashMap<ProcessId, Vec<Tick>>,
    /// Objects whose `Create` was replayed: access 0 of an object registered at its first use
    /// (`ppd_recorder::sync`), which another process reaching it first waits for.
    created: HashSet<ObjectId>,
}

impl Produced {
    fn has(&self, need: Need) -> bool {
        match need {
            Need::Dep(Dependency::Message { channel, seq, .. }) => {
                self.messages.contains_key(&(channel, seq))
            }
            Need::Dep(Dependency::Version {
                object, version: 0, ..
            }) => self.created.contains(&object) || self.versions.contains_key(&object),
            Need::Dep(Dependency::Version {
                object, version, ..
            }) => self
                .versions
                .get(&object)
                .is_some_and(|(v, _)| *v >= version),
            Need::Dep(Dependency::Exit { child }) => self.exits.contains_key(&child),
            // The waiter goes on by itself once the object is registered.
            Need::Dep(Dependency::Creation { .. }) => false,
            Need::Spawn(child) => self.spawns.contains_key(&child),
        }
    }
}

/// Lifecycle of a process in the replay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Life {
    NotStarted,
    Running,
    Finished,
    LogEnded,
    Diverged,
}

/// The local controller of one process.
#[derive(Debug)]
struct Lc {
    life: Life,
    /// Events executed.
    position: u64,
    /// Held at the gate, before its next event.
    parked: bool,
    /// Asleep on its condition variable: waking it takes a notification (a system call),
    /// which a process not asleep is spared.
    asleep: bool,
    /// Blocked inside an operation, waiting for this.
    waiting: Option<Need>,
    /// Requests taken and not yet satisfied (the paper's `mustsend`).
    mustsend: Vec<Need>,
    /// Whether a predicate component is about this process.
    has_predicate: bool,
    /// The predicate's tests that hold in the process's current state (`Tests`).
    holds: Vec<usize>,
    /// For a linked predicate, the stage they hold in (only that stage's components hold).
    holds_stage: Option<usize>,
    /// Whether every component about this process holds (SP_i).
    satisfied: bool,
    /// Events it may execute on command (stepping).
    budget: u64,
    /// Vector clock of its current state, in the replay order.
    vclock: Vec<Tick>,
    /// Its spawn was requested from its parent.
    spawn_requested: bool,
    /// Its parent replayed its spawn: its thread exists and will start.
    spawned: bool,
    /// Events after which every component about it held (SP_i became true).
    times_satisfied: u64,
}

impl Lc {
    fn new(n: usize) -> Lc {
        Lc {
            life: Life::NotStarted,
            position: 0,
            parked: false,
            asleep: false,
            waiting: None,
            mustsend: Vec::new(),
            has_predicate: false,
            holds: Vec::new(),
            holds_stage: None,
            satisfied: false,
            budget: 0,
            vclock: vec![0; n],
            spawn_requested: false,
            spawned: false,
            times_satisfied: 0,
        }
    }

    fn done(&self) -> bool {
        matches!(self.life, Life::Finished | Life::LogEnded | Life::Diverged)
    }
}

#[derive(Debug)]
struct State {
    lcs: Vec<Lc>,
    parents: Vec<Option<ProcessId>>,
    produced: Produced,
    goal: Goal,
    /// A halt was decided (disjunctive, linked): nobody moves until commanded.
    halted: bool,
    /// The current quiescent state was reported.
    reported: bool,
    /// Why the next halt happens.
    reason: HaltReason,
    /// Where a linked predicate stands.
    linked: Option<Linked>,
    /// When the predicate became true, for the halting latency.
    satisfied_at: Option<Instant>,
    /// Every process reached the end of its log (or can never move again) and `Finished`
    /// was reported.
    over: bool,
}

/// Why a linked predicate never held: the first stage that no event reached after the one
/// before it.
fn unreached(plan: &Resolved, stages: &[Vec<usize>], linked: &Linked) -> String {
    let text = |k: usize| -> String {
        let parts: Vec<&str> = stages[k]
            .iter()
            .filter_map(|&c| plan.components.get(c).map(|c| c.text.as_str()))
            .collect();
        parts.join(" | ")
    };
    match linked.reached() {
        0 => format!("its first stage, `{}`, never held", text(0)),
        k => format!(
            "it reached stage {k} of {}, but `{}` never held after it",
            stages.len(),
            text(k)
        ),
    }
}

/// The components that hold in the state of the process whose controller is `lc`: those of
/// its tests that hold (for a linked predicate, only those in the stage they hold in).
fn held(tests: &Tests, lc: &Lc) -> Vec<usize> {
    let mut held: Vec<usize> = lc
        .holds
        .iter()
        .flat_map(|&t| tests.components(t))
        .copied()
        .filter(|&c| lc.holds_stage.is_none_or(|k| tests.stage_of(c) == Some(k)))
        .collect();
    held.sort_unstable();
    held
}

/// The vector clock, in the replay order (`ppd_formats::order`), of every event of `logs`
/// (indexed by process id; `parents` likewise): what the controller computes when it takes part
/// in every event of a replay. The events are fed to a controller in an order replay allows (a
/// process goes on when what its next event takes has been given); when none can (a log cut
/// short by a crash), the lowest process goes on, as the analysis's clocks do.
pub fn replay_clocks(parents: Vec<Option<ProcessId>>, logs: &[Vec<Event>]) -> Vec<Vec<Vec<Tick>>> {
    let n = parents.len().max(logs.len());
    let mut parents = parents;
    parents.resize(n, None);
    let logged = (0..n)
        .map(|p| logs.get(p).map_or(0, |l| l.len() as u64))
        .collect();
    let names = (0..n).map(|p| ProcessId(p as u32).to_string()).collect();
    let controller = Controller::new(parents, logged, names, Goal::Hold, Box::new(|_| {}));
    let mut clocks: Vec<Vec<Vec<Tick>>> =
        logs.iter().map(|l| Vec::with_capacity(l.len())).collect();
    loop {
        let pending = |p: usize| clocks[p].len() < logs[p].len();
        let ready = (0..logs.len()).find(|&p| {
            pending(p) && {
                let st = controller.lock();
                let me = ProcessId(p as u32);
                need_of(&logs[p][clocks[p].len()], me, &st.parents)
                    .is_none_or(|need| st.produced.has(need))
            }
        });
        let Some(p) = ready.or_else(|| (0..logs.len()).find(|&p| pending(p))) else {
            break;
        };
        let me = ProcessId(p as u32);
        controller.executed(me, &logs[p][clocks[p].len()], None);
        clocks[p].push(controller.lock().lcs[p].vclock.clone());
    }
    clocks
}

/// What event `event` of `me` waits for in the replay order. Only [`Produced::has`] reads it,
/// which looks at what is needed and not at who produces it: the producer fields name `me`.
fn need_of(event: &Event, me: ProcessId, parents: &[Option<ProcessId>]) -> Option<Need> {
    let sync = event.sync();
    let earlier = |object| {
        let (_, version) = sync.version()?;
        (version > 1).then_some(Need::Dep(Dependency::Version {
            object,
            version: version - 1,
            by: me,
        }))
    };
    match sync.rule(me, Order::Replay) {
        Rule::Takes(Point::Spawned(child)) => parents
            .get(child.index())
            .copied()
            .flatten()
            .map(|_| Need::Spawn(child)),
        Rule::Takes(Point::Message { channel, seq }) => Some(Need::Dep(Dependency::Message {
            channel,
            seq,
            sender: me,
        })),
        Rule::Takes(Point::Ended(child)) => Some(Need::Dep(Dependency::Exit { child })),
        Rule::Takes(Point::Released(object)) | Rule::Chains(Point::Accessed(object)) => {
            earlier(object)
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

/// What a process's controller publishes of it without the lock.
#[derive(Debug, Default)]
struct Progress {
    /// Events it has executed.
    position: AtomicU64,
    /// Whether it is blocked inside an operation.
    blocked: AtomicBool,
    /// The OS thread that runs it, once started (0 before): where a debugger attached to the
    /// program finds it.
    thread: AtomicU32,
}

/// Shared by the processes of the replayed program and the command thread.
pub(crate) struct Controller {
    state: Mutex<State>,
    conds: Vec<Condvar>,
    /// How often each process was woken (`wake`), readable without the lock: a held process
    /// watches its own for a moment before it sleeps on its condition variable.
    wakes: Vec<CachePadded<AtomicU64>>,
    /// Whether controllers take part in every event (any goal but a plain run).
    debugging: AtomicBool,
    /// A halt command arrived during a plain run: processes must stop at their next event.
    halt_requested: AtomicBool,
    /// Each process's progress, readable without the lock; each on a cache line of its own,
    /// as every process writes its own at every event.
    progress: Vec<CachePadded<Progress>>,
    /// Events in each process's log: the run is over only when every process that can still
    /// move has replayed them all.
    logged: Vec<u64>,
    /// Signalled when the run is over (the `Finished` report is sent).
    over: Condvar,
    /// Each process's name, for what reports say.
    names: Vec<String>,
    /// The distinct tests of the predicate the replay was started with.
    tests: Option<Arc<Tests>>,
    sink: super::Sink,
}

impl Controller {
    /// `parents`, `logged` (events in each log) and `names` are indexed by process id.
    pub(crate) fn new(
        parents: Vec<Option<ProcessId>>,
        logged: Vec<u64>,
        names: Vec<String>,
        goal: Goal,
        sink: super::Sink,
    ) -> Controller {
        let n = parents.len();
        let debugging = goal != Goal::Run;
        let tests = goal.plan().map(|plan| Arc::new(Tests::of(plan)));
        let controller = Controller {
            state: Mutex::new(State {
                lcs: (0..n).map(|_| Lc::new(n)).collect(),
                parents,
                produced: Produced::default(),
                goal: Goal::Hold,
                halted: false,
                reported: false,
                reason: HaltReason::Start,
                linked: None,
                satisfied_at: None,
                over: false,
            }),
            conds: (0..n).map(|_| Condvar::new()).collect(),
            debugging: AtomicBool::new(debugging),
            halt_requested: AtomicBool::new(false),
            progress: (0..n)
                .map(|_| CachePadded::new(Progress::default()))
                .collect(),
            wakes: (0..n)
                .map(|_| CachePadded::new(AtomicU64::new(0)))
                .collect(),
            logged,
            over: Condvar::new(),
            names,
            tests,
            sink,
        };
        let mut st = controller.lock();
        controller.set_goal(&mut st, goal);
        drop(st);
        controller
    }

    /// The distinct tests of the predicate, for the processes to evaluate.
    pub(crate) fn tests(&self) -> Option<Arc<Tests>> {
        self.tests.clone()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Sends a report to the global debugger.
    pub(crate) fn report(&self, report: Report) {
        (self.sink)(&report);
    }

    /// Number of processes the recording has.
    pub(crate) fn processes(&self) -> usize {
        self.conds.len()
    }

    /// Whether the controllers take part in every event.
    pub(crate) fn debugging(&self) -> bool {
        self.debugging.load(Ordering::Acquire)
    }

    fn set_goal(&self, st: &mut State, goal: Goal) {
        let n = st.lcs.len();
        st.halted = false;
        st.reported = false;
        st.satisfied_at = None;
        st.reason = match goal {
            Goal::Run | Goal::History(_) => HaltReason::Command,
            Goal::Stop(_) => HaltReason::Predicate,
            Goal::Cut(_) => HaltReason::Cut,
            Goal::Hold => HaltReason::Start,
        };
        let plan = match &goal {
            Goal::Stop(p) | Goal::History(p) => Some(p),
            _ => None,
        };
        for (i, lc) in st.lcs.iter_mut().enumerate() {
            lc.has_predicate =
                plan.is_some_and(|p| p.components_of(ProcessId(i as u32)).count() > 0);
            lc.satisfied = false;
            lc.holds.clear();
            lc.holds_stage = None;
        }
        st.linked = match plan.map(|p| &p.combination) {
            Some(Combination::Linked(stages)) => Some(Linked::new(stages.len(), n)),
            _ => None,
        };
        self.debugging.store(goal != Goal::Run, Ordering::Release);
        st.goal = goal;
        debug_assert_eq!(st.lcs.len(), n);
        self.wake_all(st);
    }

    // ------------------------------------------------------------------------------------
    // The paper's TerminationTest: is the controller active?

    fn active(st: &State, p: usize) -> bool {
        let lc = &st.lcs[p];
        if lc.done() {
            return false;
        }
        if lc.budget > 0 {
            return true;
        }
        // After a halt broadcast a process is neither active nor passive, whatever it is asked
        // (Manabe & Imase §3.3): serving a request could move it off its satisfying state.
        if st.halted {
            return false;
        }
        if !lc.mustsend.is_empty() {
            return true;
        }
        match &st.goal {
            Goal::Run | Goal::History(_) => true,
            Goal::Hold => false,
            Goal::Cut(targets) => lc.position < targets.get(p).copied().flatten().unwrap_or(0),
            Goal::Stop(plan) => match plan.combination {
                Combination::Conjunctive | Combination::Simultaneous => {
                    lc.has_predicate && !lc.satisfied
                }
                Combination::Disjunctive | Combination::Linked(_) => lc.has_predicate,
            },
        }
    }

    // ------------------------------------------------------------------------------------
    // Process side

    /// A process thread starts (called on that thread).
    pub(crate) fn started(&self, p: ProcessId) {
        self.progress[p.index()]
            .thread
            .store(nix::unistd::gettid().as_raw() as u32, Ordering::Relaxed);
        let mut st = self.lock();
        let lc = &mut st.lcs[p.index()];
        lc.life = Life::Running;
        self.settle(&mut st);
    }

    /// Held here, before each event, while the controller is passive.
    ///
    /// Fast path during a plain run: no lock unless a halt was requested.
    pub(crate) fn gate(&self, p: ProcessId) {
        if !self.debugging() && !self.halt_requested.load(Ordering::Acquire) {
            return;
        }
        let i = p.index();
        let mut st = self.lock();
        loop {
            let halt_now = self.halt_requested.load(Ordering::Acquire) && !st.halted;
            if halt_now {
                st.halted = true;
                st.reason = HaltReason::Command;
                st.reported = false;
            }
            if Self::active(&st, i) {
                st.lcs[i].parked = false;
                return;
            }
            st.lcs[i].parked = true;
            self.settle(&mut st);
            st = self.hold(i, st);
        }
    }

    /// Holds process `i` until it is woken. It first watches for a wake-up without the lock
    /// ([`watch`]): a process that serves requests one at a time (Algorithm 1's processes
    /// without a predicate, sending one message at a time to a receiver that needs them) is
    /// mostly asked again within microseconds, sooner than sleeping and being woken would
    /// take. Wakes happen under the lock, so one that comes after the watch is seen by the
    /// check under the lock, or wakes the sleep.
    fn hold<'a>(&'a self, i: usize, st: MutexGuard<'a, State>) -> MutexGuard<'a, State> {
        let seen = self.wakes[i].load(Ordering::Acquire);
        drop(st);
        let woken = || self.wakes[i].load(Ordering::Acquire) != seen;
        watch(woken);
        let mut st = self.lock();
        if woken() {
            return st;
        }
        st.lcs[i].asleep = true;
        let mut st = self.conds[i].wait(st).unwrap_or_else(|e| e.into_inner());
        st.lcs[i].asleep = false;
        st
    }

    /// Wakes process `i` if the controller holds it (called under the lock, `st`).
    fn wake(&self, st: &State, i: usize) {
        self.wakes[i].fetch_add(1, Ordering::Release);
        if st.lcs.get(i).is_some_and(|lc| lc.asleep) {
            self.conds[i].notify_all();
        }
    }

    fn wake_all(&self, st: &State) {
        for i in 0..self.conds.len() {
            self.wake(st, i);
        }
    }

    /// Whether `object`'s `Create` has been replayed.
    pub(crate) fn created(&self, object: ObjectId) -> bool {
        self.lock().produced.created.contains(&object)
    }

    /// The process is about to block on `need` (Algorithm 1's TrytoExecuteNext: ask the
    /// producer for it).
    pub(crate) fn request(&self, p: ProcessId, need: Need) {
        let mut st = self.lock();
        if st.produced.has(need) && self.debugging() {
            return;
        }
        self.progress[p.index()]
            .blocked
            .store(true, Ordering::Release);
        st.lcs[p.index()].waiting = Some(need);
        if self.debugging() {
            self.send_control(&mut st, need);
        }
        self.settle(&mut st);
    }

    fn send_control(&self, st: &mut State, need: Need) {
        let Some(producer) = need.producer(&st.parents) else {
            return;
        };
        let q = producer.index();
        if q >= st.lcs.len() {
            return;
        }
        // ControlMessageArrival, handled at once: the controllers share one lock, so a control
        // message is never in flight, and a process blocked inside an operation still has its
        // controller take requests (as the paper's LC_i does beside its process).
        if st.produced.has(need) {
            return;
        }
        let lc = &mut st.lcs[q];
        if lc.mustsend.contains(&need) {
            return;
        }
        lc.mustsend.push(need);
        self.wake(st, q);
    }

    /// The process executed `event`; `after` evaluates the predicate's tests about it in its
    /// new state (none hold without it).
    pub(crate) fn executed(&self, p: ProcessId, event: &Event, after: Option<&mut After<'_>>) {
        let i = p.index();
        // Only process `i` writes its position: a load and a store, not a locked add, which
        // cost a tenth of a busy receiver's replay.
        let position = self.progress[i].position.load(Ordering::Relaxed) + 1;
        self.progress[i].position.store(position, Ordering::Relaxed);
        self.progress[i].blocked.store(false, Ordering::Release);
        if !self.debugging() {
            match event.sync().rule(p, Order::Replay) {
                Rule::Gives(Point::Ended(_)) => {
                    let mut st = self.lock();
                    st.lcs[i].life = Life::Finished;
                    st.lcs[i].waiting = None;
                    self.settle(&mut st);
                }
                Rule::Gives(Point::Spawned(child)) => {
                    let mut st = self.lock();
                    if let Some(lc) = st.lcs.get_mut(child.index()) {
                        lc.spawned = true;
                    }
                }
                // Its last logged event: the run may be over now, even if the process goes on
                // in code ppd does not see before its next operation.
                Rule::Local
                | Rule::Takes(_)
                | Rule::Gives(Point::Message { .. } | Point::Released(_) | Point::Accessed(_))
                | Rule::Chains(_)
                | Rule::TakesPermit(_)
                | Rule::GivesPermit(_)
                | Rule::Atomic { .. }
                | Rule::RwAcquire { .. }
                | Rule::RwRelease { .. } => {
                    if self.logged.get(i) == Some(&position) {
                        let mut st = self.lock();
                        self.settle(&mut st);
                    }
                }
            }
            return;
        }
        let mut st = self.lock();
        let st = &mut *st;
        let lc = &mut st.lcs[i];
        lc.position += 1;
        lc.waiting = None;
        lc.budget = lc.budget.saturating_sub(1);
        let position = lc.position;
        // Vector clock in the replay order: own component, then what the event takes, then
        // what it gives.
        let own = Tick::try_from(position).unwrap_or(Tick::MAX);
        lc.vclock[i] = own;
        let merge = |into: &mut Vec<Tick>, from: &[Tick]| {
            into.join(from);
        };
        let produced = &mut st.produced;
        if let Event::Create { object, .. } = event {
            produced.created.insert(*object);
        }
        let sync = event.sync();
        let version = sync.version().map_or(0, |(_, v)| v);
        match sync.rule(p, Order::Replay) {
            Rule::Takes(Point::Spawned(child)) => {
                if let Some(vc) = produced.spawns.get(&child) {
                    merge(&mut lc.vclock, vc);
                }
            }
            Rule::Takes(Point::Message { channel, seq }) => {
                if let Some(vc) = produced.messages.remove(&(channel, seq)) {
                    merge(&mut lc.vclock, &vc);
                }
            }
            Rule::Takes(Point::Ended(child)) => {
                if let Some(vc) = produced.exits.get(&child) {
                    merge(&mut lc.vclock, vc);
                }
            }
            Rule::Takes(Point::Released(object)) => {
                if let Some((_, vc)) = produced.versions.get(&object) {
                    merge(&mut lc.vclock, vc);
                }
                produced.held.insert(object, version);
            }
            Rule::Chains(Point::Accessed(object)) => {
                if let Some((_, vc)) = produced.versions.get(&object) {
                    merge(&mut lc.vclock, vc);
                }
                lc.vclock[i] = own;
                produced
                    .versions
                    .insert(object, (version, lc.vclock.clone()));
            }
            Rule::Gives(Point::Message { channel, seq }) => {
                produced.messages.insert((channel, seq), lc.vclock.clone());
            }
            Rule::Gives(Point::Spawned(child)) => {
                produced.spawns.insert(child, lc.vclock.clone());
            }
            Rule::Gives(Point::Ended(process)) => {
                produced.exits.insert(process, lc.vclock.clone());
                lc.life = Life::Finished;
            }
            Rule::Gives(Point::Released(object)) => {
                if let Some(version) = produced.held.remove(&object) {
                    produced
                        .versions
                        .insert(object, (version, lc.vclock.clone()));
                }
            }
            Rule::Local => {}
            // Not in the replay order's table.
            Rule::Takes(Point::Accessed(_))
            | Rule::Gives(Point::Accessed(_))
            | Rule::Chains(
                Point::Message { .. } | Point::Spawned(_) | Point::Ended(_) | Point::Released(_),
            )
            | Rule::TakesPermit(_)
            | Rule::GivesPermit(_)
            | Rule::Atomic { .. }
            | Rule::RwAcquire { .. }
            | Rule::RwRelease { .. } => {}
        }
        lc.vclock[i] = own;
        let vclock = lc.vclock.clone();
        lc.mustsend.retain(|need| !produced.has(*need));
        if let Rule::Gives(Point::Spawned(child)) = sync.rule(p, Order::Replay)
            && let Some(child) = st.lcs.get_mut(child.index())
        {
            child.spawned = true;
        }
        self.evaluate(st, p, position, &vclock, after);
        self.settle(st);
    }

    /// Evaluates the predicate of the goal in process `p`'s state after its `position`-th
    /// event, whose vector clock is `vclock`: halts, or reports the event, where it holds.
    fn evaluate(
        &self,
        st: &mut State,
        p: ProcessId,
        position: u64,
        vclock: &[Tick],
        mut after: Option<&mut After<'_>>,
    ) {
        let (plan, history) = match &st.goal {
            Goal::Stop(plan) => (plan, false),
            Goal::History(plan) => (plan, true),
            Goal::Run | Goal::Cut(_) | Goal::Hold => return,
        };
        let Some(tests) = self.tests.as_deref() else {
            return;
        };
        let i = p.index();
        let satisfied_here = match (&plan.combination, st.linked.as_mut()) {
            (Combination::Linked(_), Some(linked)) => {
                // Miller & Choi §3.6: only the stage the event can reach next is asked.
                let mut held = Vec::new();
                let mut asked = None;
                let last = linked.observe(i, vclock, |stage| {
                    asked = Some(stage);
                    if let Some(after) = after.as_deref_mut() {
                        held = tests
                            .of_stage(p, stage)
                            .iter()
                            .copied()
                            .filter(|&t| after.holds(t))
                            .collect();
                    }
                    !held.is_empty()
                });
                let lc = &mut st.lcs[i];
                lc.holds_stage = asked.filter(|_| !held.is_empty());
                lc.holds = held;
                last
            }
            (combination, _) => {
                let holding = after.map(|a| a.holding()).unwrap_or_default();
                let mine = tests.of_process(p);
                let lc = &mut st.lcs[i];
                lc.satisfied = !mine.is_empty() && holding.len() == mine.len();
                lc.times_satisfied += u64::from(lc.satisfied);
                lc.holds_stage = None;
                lc.holds = holding;
                match combination {
                    _ if history => !lc.holds.is_empty(),
                    Combination::Disjunctive => !lc.holds.is_empty(),
                    Combination::Conjunctive | Combination::Simultaneous => lc.satisfied,
                    Combination::Linked(_) => false,
                }
            }
        };
        if !satisfied_here {
            return;
        }
        if history {
            let lc = &st.lcs[i];
            let mut components: Vec<usize> = lc
                .holds
                .iter()
                .flat_map(|&t| tests.components(t).iter().copied())
                .filter(|&c| lc.holds_stage.is_none_or(|k| tests.stage_of(c) == Some(k)))
                .collect();
            components.sort_unstable();
            components.dedup();
            self.report(Report::Satisfied {
                components,
                process: p,
                event: position - 1,
                vclock: vclock.to_vec(),
            });
            return;
        }
        if let Combination::Disjunctive | Combination::Linked(_) = plan.combination {
            st.halted = true;
        }
        st.satisfied_at = Some(Instant::now());
    }

    /// The process's log has no more events, or it diverged: it will not move again.
    pub(crate) fn ended(&self, p: ProcessId, diverged: bool) {
        let mut st = self.lock();
        let lc = &mut st.lcs[p.index()];
        lc.life = if diverged {
            Life::Diverged
        } else {
            Life::LogEnded
        };
        lc.parked = true;
        self.settle(&mut st);
    }

    // ------------------------------------------------------------------------------------
    // The termination detector

    /// Starts processes that must run but have not been spawned (by asking their parents),
    /// then reports if nothing can move any more.
    fn settle(&self, st: &mut State) {
        if !self.debugging() && !self.halt_requested.load(Ordering::Acquire) {
            self.detect_end_of_run(st);
            return;
        }
        for i in 0..st.lcs.len() {
            let wants = st.lcs[i].life == Life::NotStarted && Self::active(st, i);
            if wants && !st.lcs[i].spawn_requested {
                st.lcs[i].spawn_requested = true;
                self.send_control(st, Need::Spawn(ProcessId(i as u32)));
            }
        }
        if st.reported {
            return;
        }
        let quiescent = (0..st.lcs.len()).all(|i| {
            let lc = &st.lcs[i];
            match lc.life {
                Life::NotStarted => !Self::active(st, i),
                Life::Finished | Life::LogEnded | Life::Diverged => true,
                Life::Running => {
                    (lc.parked && !Self::active(st, i))
                        || (st.halted && lc.waiting.is_some_and(|n| !st.produced.has(n)))
                }
            }
        });
        if quiescent {
            st.reported = true;
            let report = self.outcome(st);
            if matches!(report, Report::Finished { .. }) {
                self.finish_run(st, report);
            } else {
                self.report(report);
            }
            return;
        }
        // Not quiescent: is anything able to move? A process waiting for something whose
        // producer has ended, or is held for good, is stuck.
        let stuck = (0..st.lcs.len()).all(|i| {
            let lc = &st.lcs[i];
            match lc.life {
                Life::NotStarted => {
                    let parent = st.parents[i].map(|p| p.index());
                    parent.is_none_or(|q| st.lcs[q].done())
                }
                Life::Finished | Life::LogEnded | Life::Diverged => true,
                Life::Running => match lc.waiting {
                    Some(need) if !st.produced.has(need) => need
                        .producer(&st.parents)
                        .is_none_or(|q| st.lcs.get(q.index()).is_none_or(Lc::done)),
                    _ => lc.parked && !Self::active(st, i),
                },
            }
        });
        let someone_waits = st.lcs.iter().any(|lc| lc.waiting.is_some());
        if stuck && someone_waits {
            st.reported = true;
            let processes = self.process_reports(st);
            self.report(Report::Stuck { processes });
        }
    }

    /// In a plain run: the run is over when no process can move any more. A process has
    /// ended (its exit, its panic, the end of its log, a divergence), it has replayed every
    /// event of its log (whatever it does next is past the recording), or it never started and
    /// cannot start (its log is empty, or its parent has ended without spawning it). A process
    /// with events still to replay, spawned and not yet started, or one whose parent may yet
    /// spawn it, keeps the run going: a process
    /// alive at the end of the recording is replayed to its last logged event and held there,
    /// so the end of the run is the end of every log, not a pause.
    fn detect_end_of_run(&self, st: &mut State) {
        if st.reported {
            return;
        }
        let may_move = |i: usize| {
            let lc = &st.lcs[i];
            match lc.life {
                Life::Running => {
                    self.progress[i].position.load(Ordering::Relaxed)
                        < self.logged.get(i).copied().unwrap_or(0)
                }
                Life::NotStarted => {
                    self.logged.get(i).is_some_and(|&n| n > 0)
                        && (lc.spawned || st.parents[i].is_none_or(|q| !st.lcs[q.index()].done()))
                }
                Life::Finished | Life::LogEnded | Life::Diverged => false,
            }
        };
        if (0..st.lcs.len()).any(may_move) {
            return;
        }
        st.reported = true;
        let report = Report::Finished {
            events: self.progress(),
            processes: self.process_reports(st),
        };
        self.finish_run(st, report);
    }

    /// Sends the final report and lets `main` end the program.
    fn finish_run(&self, st: &mut State, report: Report) {
        self.report(report);
        st.over = true;
        self.over.notify_all();
    }

    /// Blocks until the run is over: `main` returned, but the program must not end before
    /// every other process has replayed its log.
    pub(crate) fn wait_until_over(&self) {
        let mut st = self.lock();
        while !st.over {
            st = self.over.wait(st).unwrap_or_else(|e| e.into_inner());
        }
    }

    fn outcome(&self, st: &mut State) -> Report {
        let processes = self.process_reports(st);
        let latency_ns = st.satisfied_at.map(|t| t.elapsed().as_nanos() as u64);
        let all_ended = st
            .lcs
            .iter()
            .all(|lc| lc.done() || lc.life == Life::NotStarted);
        match &st.goal {
            Goal::Stop(plan) => {
                let halted_by_predicate = match plan.combination {
                    Combination::Conjunctive | Combination::Simultaneous => st
                        .lcs
                        .iter()
                        .filter(|lc| lc.has_predicate)
                        .all(|lc| lc.satisfied && !lc.done()),
                    Combination::Disjunctive | Combination::Linked(_) => st.halted,
                };
                if halted_by_predicate {
                    st.reason = HaltReason::Predicate;
                    Report::Halted {
                        reason: HaltReason::Predicate,
                        processes,
                        latency_ns,
                    }
                } else if st.reason == HaltReason::Command && st.halted {
                    Report::Halted {
                        reason: HaltReason::Command,
                        processes,
                        latency_ns: None,
                    }
                } else {
                    Report::Unsatisfiable {
                        reason: match (&plan.combination, &st.linked) {
                            (Combination::Linked(stages), Some(linked)) => {
                                unreached(plan, stages, linked)
                            }
                            _ => self.unsatisfied(st),
                        },
                    }
                }
            }
            Goal::History(_) | Goal::Run if all_ended => Report::Finished {
                events: st.lcs.iter().map(|lc| lc.position).sum(),
                processes,
            },
            Goal::Cut(targets) => {
                let missed: Vec<String> = st
                    .lcs
                    .iter()
                    .enumerate()
                    .filter_map(|(i, lc)| {
                        let target = targets.get(i).copied().flatten()?;
                        let name = self.name(i);
                        let position = lc.position;
                        // Past the cut: a process of the cut could not reach its place without
                        // something this one did later (an object it created on first use).
                        (position > target)
                            .then(|| {
                                format!(
                                    "{name} had to run on to {position} events (not {target}): \
                                 another process needed what it did there"
                                )
                            })
                            .or_else(|| {
                                (position < target).then(|| {
                                    format!(
                                        "{name} stopped after {position} events instead of \
                                     {target} (is the cut consistent?)"
                                    )
                                })
                            })
                    })
                    .collect();
                if missed.is_empty() {
                    Report::Halted {
                        reason: HaltReason::Cut,
                        processes,
                        latency_ns: None,
                    }
                } else {
                    Report::Unsatisfiable {
                        reason: format!("the cut cannot be reached: {}", missed.join("; ")),
                    }
                }
            }
            _ => Report::Halted {
                reason: st.reason,
                processes,
                latency_ns: None,
            },
        }
    }

    /// The process's name, as the user knows it.
    fn name(&self, i: usize) -> String {
        match self.names.get(i) {
            Some(name) if !name.is_empty() => name.clone(),
            _ => ProcessId(i as u32).to_string(),
        }
    }

    /// Why a conjunctive or simultaneous predicate never held, in the user's names: a part
    /// that never held, or parts that each held but never in one consistent global state.
    fn unsatisfied(&self, st: &State) -> String {
        let parts: Vec<(usize, u64)> = (0..st.lcs.len())
            .filter(|&i| st.lcs[i].has_predicate)
            .map(|i| (i, st.lcs[i].times_satisfied))
            .collect();
        let never: Vec<String> = parts
            .iter()
            .filter(|(_, n)| *n == 0)
            .map(|&(i, _)| self.name(i))
            .collect();
        if !never.is_empty() {
            return format!(
                "the part about {} never held in this run",
                never.join(" and ")
            );
        }
        let held: Vec<String> = parts
            .iter()
            .map(|&(i, n)| match n {
                1 => format!("{} once", self.name(i)),
                _ => format!("{} {n} times", self.name(i)),
            })
            .collect();
        format!(
            "every part held at some point ({}), but never all at once in a consistent global state",
            held.join(", ")
        )
    }

    fn process_reports(&self, st: &State) -> Vec<ProcessReport> {
        st.lcs
            .iter()
            .enumerate()
            .map(|(i, lc)| {
                let status = match lc.life {
                    Life::NotStarted => "not started",
                    Life::Finished => "finished",
                    Life::LogEnded => "log ended",
                    Life::Diverged => "diverged",
                    Life::Running if self.progress[i].blocked.load(Ordering::Acquire) => "waiting",
                    Life::Running => "held",
                };
                let position = if self.debugging() {
                    lc.position
                } else {
                    self.progress[i].position.load(Ordering::Relaxed)
                };
                ProcessReport {
                    id: ProcessId(i as u32),
                    events: position,
                    status: status.into(),
                    waiting_for: lc
                        .waiting
                        .filter(|_| self.progress[i].blocked.load(Ordering::Acquire))
                        .map(|need| {
                            need.describe(&|p: ProcessId| format!("{} ({p})", self.name(p.index())))
                        }),
                    holds: self
                        .tests
                        .as_deref()
                        .map(|tests| held(tests, lc))
                        .unwrap_or_default(),
                    vclock: if self.debugging() {
                        lc.vclock.clone()
                    } else {
                        Vec::new()
                    },
                    thread: Some(self.progress[i].thread.load(Ordering::Relaxed))
                        .filter(|&t| t != 0),
                }
            })
            .collect()
    }

    // ------------------------------------------------------------------------------------
    // Commands of the global debugger

    /// Applies a command.
    pub(crate) fn command(&self, command: &crate::protocol::Command) {
        use crate::protocol::Command;
        let mut st = self.lock();
        match command {
            Command::Step { process } => {
                let target = match process {
                    Some(p) => Some(p.index()),
                    None => self.ready_process(&st),
                };
                st.halted = false;
                st.goal = Goal::Hold;
                self.debugging.store(true, Ordering::Release);
                st.reason = HaltReason::Step;
                st.reported = false;
                if let Some(i) = target.filter(|&i| i < st.lcs.len()) {
                    st.lcs[i].budget += 1;
                    self.wake(&st, i);
                }
            }
            Command::Resume => {
                let goal = st.goal.clone();
                if let Goal::Stop(_) = goal {
                    // Statuses back to their initial values: processes with a predicate
                    // become active and look for its next satisfaction.
                    for lc in &mut st.lcs {
                        lc.satisfied = false;
                    }
                    st.halted = false;
                    st.reported = false;
                    st.satisfied_at = None;
                    self.wake_all(&st);
                }
            }
            Command::Continue => {
                self.halt_requested.store(false, Ordering::Release);
                self.set_goal(&mut st, Goal::Run);
                for lc in &mut st.lcs {
                    lc.parked = false;
                }
            }
            Command::Halt => {
                self.halt_requested.store(true, Ordering::Release);
                st.halted = true;
                st.reason = HaltReason::Command;
                st.reported = false;
            }
            Command::Quit => {}
        }
        self.settle(&mut st);
    }

    /// A held process whose next event does not wait for anything unproduced (stepping any
    /// process, Manabe & Imase §5.1): the one with the fewest events, for a fair walk.
    fn ready_process(&self, st: &State) -> Option<usize> {
        st.lcs
            .iter()
            .enumerate()
            .filter(|(_, lc)| lc.life == Life::Running && lc.parked)
            .min_by_key(|(_, lc)| lc.position)
            .map(|(i, _)| i)
            .or_else(|| {
                st.lcs
                    .iter()
                    .enumerate()
                    .find(|(i, lc)| {
                        lc.life == Life::NotStarted
                            && st.parents[*i]
                                .is_some_and(|p| st.lcs[p.index()].life == Life::Running)
                    })
                    .map(|(i, _)| i)
            })
    }

    /// Events executed by each process, without the lock (for the watchdog).
    pub(crate) fn progress(&self) -> u64 {
        self.progress
            .iter()
            .map(|p| p.position.load(Ordering::Relaxed))
            .sum()
    }

    /// Reports, if it is so, that nothing moved for a while and every live process waits for
    /// something: the fallback for waits the controllers cannot see through.
    pub(crate) fn watchdog_check(&self) {
        let mut st = self.lock();
        if st.reported {
            return;
        }
        let live: Vec<usize> = (0..st.lcs.len())
            .filter(|&i| st.lcs[i].life == Life::Running)
            .collect();
        let blocked = |i: usize| self.progress[i].blocked.load(Ordering::Acquire);
        let someone_blocked = live.iter().any(|&i| blocked(i));
        if someone_blocked && live.iter().all(|&i| blocked(i) || st.lcs[i].parked) {
            st.reported = true;
            let processes = self.process_reports(&st);
            self.report(Report::Stuck { processes });
        }
    }
}

impl std::fmt::Debug for Controller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Controller")
            .field("processes", &self.conds.len())
            .field("debugging", &self.debugging())
            .finish_non_exhaustive()
    }
}
