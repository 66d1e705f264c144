//! Lin's task virtual machines (seed thesis §3.2–3.3) on ppd processes and channels: the
//! processor farm ([`farm`]), divide and conquer ([`divide_and_conquer`]), and [`enter`] for
//! task code written by hand.
//!
//! Every step of a task's life — handed out, begun, split, ended, collected, joined — is logged
//! as a `Mark` with a reserved label (`ppd_formats::task`), naming the task, its subtask path
//! and, for a hand-out, the worker. The process and the place come with every event, so
//! `ppd analyze tasks` can rebuild each task's event graph from the log and name the task that
//! failed, where, and in which role (thesis §4.2–4.3).
//!
//! Each task's computation (a farm's `work`, a divide-and-conquer `split`, `solve` or
//! `combine`) runs as an e-block without annotation: its input is the prelog, its result the postlog. No probe
//! for `Serialize` is needed: the types are serde already, because tasks and results travel
//! over ppd channels, which log them. So phase two (thesis §4.1, left to future work in
//! §7.2.1) can re-execute one task alone: `ppd analyze tasks --rerun N` runs the recorded
//! binary in emulate mode, which runs the program natively up to the call that started task
//! N's virtual machine (the closures exist only there) and then, instead of that virtual
//! machine, task N's computation from its logged input against its log interval
//! ([`rerun_at`]).
//!
//! The generator and the collector are the calling process; each worker is a ppd process
//! (`farm-worker-N`, `dc-worker-N`). Tasks are handed out one at a time, a new one to a worker
//! when its previous result comes back, so a task that never comes back is exactly one worker's
//! fault. A worker that panics ends its process; the run goes on with the others and the call
//! panics at the end, naming the failed task.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, VecDeque};
use std::marker::PhantomData;
use std::panic::Location;
use std::sync::{Arc, OnceLock};

use ppd_formats::task::{
    COMBINE_EBLOCK, SOLVE_EBLOCK, SPLIT_EBLOCK, TaskMark, TaskStep, WORK_EBLOCK, WORKER_NODE_RUN,
};
use ppd_formats::value;
use ppd_formats::{Event, EventKind, ProcessId};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::eblock::{self, Entry};
use crate::runtime;
use crate::runtime::backend::Op;
use crate::sync::log_values;
use crate::sync::mpsc::{Receiver, Select, Sender, channel};
use crate::thread::{Builder, JoinHandle};

mod nodes;

pub use nodes::{farm_nodes, serve};

/// A subtask's path from its task: the child index at each split.
pub type SubtaskPath = Vec<u32>;

/// Logs one step of task `task`'s subtask `path` of virtual machine run `vm` at `site`.
fn log(
    step: TaskStep,
    (vm, task): (u64, u64),
    path: &[u32],
    arg: u64,
    site: &'static Location<'static>,
) {
    if !runtime::active() {
        return;
    }
    let value = TaskMark::encode_parts(vm, task, path, arg);
    runtime::expect(Op::plain(EventKind::Mark, Some(site)));
    runtime::done(&Event::Mark {
        label: step.label(),
        site: Some(site),
        value: &value,
    });
}

/// Runs `f(input)` as the e-block `name` (one of `ppd_formats::task`'s): the input logged as
/// the prelog's `input`, the result as the postlog's `%0`. Inside a re-executed e-block the
/// logged result stands for the call, as for any nested e-block.
fn computation<T: Serialize, R: Serialize + DeserializeOwned>(
    name: &'static str,
    site: &'static Location<'static>,
    input: T,
    f: impl FnOnce(T) -> R,
) -> R {
    let entry = eblock::enter(name, site, || {
        let mut prelog = eblock::map(1);
        prelog.entry("input", &input);
        prelog.finish()
    });
    match entry {
        Entry::Substituted(postlog) => postlog.take("%0"),
        Entry::Run(frame) => {
            let result = f(input);
            frame.exit(|| {
                let mut postlog = eblock::map(1);
                postlog.entry("%0", &result);
                postlog.finish()
            });
            result
        }
    }
}

/// One task computation with its types erased, for phase two: given the e-block it ran as and
/// its logged input (MessagePack), runs it and gives its result's MessagePack, or says why the
/// input does not fit.
pub type Compute<'a> = dyn FnMut(&str, &[u8]) -> Result<Vec<u8>, String> + Send + 'a;

/// Where phase two re-executes a task: the virtual machine run that holds it, and the
/// emulator's entry that takes over there.
#[derive(Clone, Debug)]
pub struct Rerun {
    /// The name of the process that started the run (threads carry their process's name).
    pub generator: String,
    /// The run's ordinal in that process, from 1 (the low half of its id), or
    /// `ppd_formats::task::WORKER_NODE_RUN` for the process's [`serve`] in a worker node.
    pub ordinal: u32,
    /// Re-executes the task from its log with the run's computations, and ends the program.
    pub hook: fn(&mut Compute<'_>) -> !,
}

static RERUN: OnceLock<Rerun> = OnceLock::new();

/// Makes the virtual machine run `rerun` names hand its computations to `rerun.hook` instead
/// of running. Set once, by the emulator, before the program's body runs natively.
pub fn rerun_at(rerun: Rerun) {
    // The emulator sets it once per program run.
    let _ = RERUN.set(rerun);
}

/// In phase two, if `vm` is the run to re-execute a task of, hands `compute` to the emulator,
/// which does not return.
fn rerun_here(vm: u64, compute: &mut Compute<'_>) {
    let Some(rerun) = RERUN.get() else {
        return;
    };
    let here = std::thread::current().name() == Some(rerun.generator.as_str());
    if here && vm & u64::from(u32::MAX) == u64::from(rerun.ordinal) {
        (rerun.hook)(compute)
    }
}

/// In phase two, if the task to re-execute was computed by this worker node's [`serve`],
/// hands `compute` to the emulator, which does not return.
fn rerun_serving(compute: &mut Compute<'_>) {
    let Some(rerun) = RERUN.get() else {
        return;
    };
    let here = std::thread::current().name() == Some(rerun.generator.as_str());
    if here && rerun.ordinal == WORKER_NODE_RUN {
        (rerun.hook)(compute)
    }
}

/// Decodes a logged input for phase two.
fn logged<T: DeserializeOwned>(input: &[u8]) -> Result<T, String> {
    value::decode_as(input)
        .map_err(|e| format!("the logged input does not decode as its type: {e}"))
}

/// Encodes a re-executed result for phase two.
fn result_bytes<R: Serialize>(result: &R) -> Result<Vec<u8>, String> {
    value::encode(result).map_err(|e| format!("the result does not encode: {e}"))
}

thread_local! {
    /// How many virtual machine runs this process has started.
    static RUNS: Cell<u32> = const { Cell::new(0) };
}

/// The number of a new virtual machine run of the current process: its id in the high 32
/// bits, the run's ordinal from 1 in the low 32 (deterministic, so replay logs the same).
fn next_run() -> u64 {
    let ordinal = RUNS.with(|r| {
        r.set(r.get() + 1);
        r.get()
    });
    let pid = runtime::current_process().map_or(0, |ProcessId(p)| p);
    (u64::from(pid) << 32) | u64::from(ordinal)
}

/// A worker's process id as task marks carry it (`u64::MAX`: not running under ppd).
fn worker_arg(handle: &JoinHandle<()>) -> u64 {
    handle
        .process()
        .map_or(u64::MAX, |ProcessId(p)| u64::from(p))
}

/// A pool of worker processes, each with its own inbox and outbox, so that a worker that dies
/// shows as its outbox disconnecting — a recorded receive, hence the same in replay.
struct Pool<J, Y> {
    /// The virtual machine run the pool works for.
    vm: u64,
    inboxes: Vec<Option<Sender<J>>>,
    outboxes: Vec<Receiver<Y>>,
    handles: Vec<JoinHandle<()>>,
    /// What each worker is working on.
    busy: Vec<Option<(u64, SubtaskPath)>>,
}

/// What a pool's worker said, or that it died.
enum Reply<Y> {
    /// A worker answered.
    Answer(Y),
    /// Worker `w` ended without answering the job it had.
    Died(usize, (u64, SubtaskPath)),
}

impl<J, Y> Pool<J, Y>
where
    J: Serialize + DeserializeOwned + Send + 'static,
    Y: Serialize + DeserializeOwned + Send + 'static,
{
    /// Starts `n` workers named `{prefix}-{i}`, each running `body` on its number, inbox and
    /// outbox.
    fn start(
        vm: u64,
        n: usize,
        prefix: &str,
        body: impl Fn(usize, Receiver<J>, Sender<Y>) + Send + Sync + 'static,
    ) -> Pool<J, Y> {
        let body = Arc::new(body);
        let mut pool = Pool {
            vm,
            inboxes: Vec::new(),
            outboxes: Vec::new(),
            handles: Vec::new(),
            busy: Vec::new(),
        };
        for i in 0..n.max(1) {
            let (job_tx, job_rx) = channel();
            let (reply_tx, reply_rx) = channel();
            // Jobs and results are serde: log them wherever payloads are wanted.
            log_values(&job_tx);
            log_values(&reply_tx);
            let body = Arc::clone(&body);
            let handle = Builder::new()
                .name(format!("{prefix}-{i}"))
                .spawn(move || body(i, job_rx, reply_tx))
                .expect("spawn a task worker");
            pool.inboxes.push(Some(job_tx));
            pool.outboxes.push(reply_rx);
            pool.handles.push(handle);
            pool.busy.push(None);
        }
        pool
    }

    /// An idle worker that is still alive.
    fn idle(&self) -> Option<usize> {
        (0..self.busy.len()).find(|&w| self.busy[w].is_none() && self.inboxes[w].is_some())
    }

    /// Hands `job` (task `task`, subtask `path`) to worker `w`; gives the job back if the
    /// worker is gone.
    fn give(
        &mut self,
        w: usize,
        task: u64,
        path: SubtaskPath,
        job: J,
        site: &'static Location<'static>,
    ) -> Result<(), J> {
        let Some(inbox) = &self.inboxes[w] else {
            return Err(job);
        };
        log(
            TaskStep::Give,
            (self.vm, task),
            &path,
            worker_arg(&self.handles[w]),
            site,
        );
        match inbox.send(job) {
            Ok(()) => {
                self.busy[w] = Some((task, path));
                Ok(())
            }
            Err(e) => {
                self.inboxes[w] = None;
                Err(e.0)
            }
        }
    }

    /// Waits for the next answer from a busy worker (`None`: no worker is busy).
    #[track_caller]
    fn next(&mut self) -> Option<Reply<Y>> {
        let waiting: Vec<usize> = (0..self.busy.len())
            .filter(|&w| self.busy[w].is_some())
            .collect();
        if waiting.is_empty() {
            return None;
        }
        let mut select = Select::new();
        for &w in &waiting {
            select.recv(&self.outboxes[w]);
        }
        let chosen = select.select();
        let w = waiting[chosen.index()];
        match chosen.recv(&self.outboxes[w]) {
            Ok(y) => {
                self.busy[w] = None;
                Some(Reply::Answer(y))
            }
            Err(_) => {
                self.inboxes[w] = None;
                let job = self.busy[w].take().unwrap_or_default();
                Some(Reply::Died(w, job))
            }
        }
    }

    /// Closes the inboxes and waits for every worker; the panic messages of those that
    /// panicked, by worker.
    fn finish(mut self) -> BTreeMap<usize, String> {
        self.inboxes.clear();
        let mut panics = BTreeMap::new();
        for (w, handle) in self.handles.into_iter().enumerate() {
            if let Err(payload) = handle.join() {
                panics.insert(w, panic_message(payload.as_ref()));
            }
        }
        panics
    }
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic".to_owned()
    }
}

/// Panics naming the tasks that failed, with their workers' panic messages, and how many were
/// left when no worker was.
fn fail(
    vm: &str,
    failed: &[(u64, SubtaskPath, usize)],
    left: usize,
    panics: &BTreeMap<usize, String>,
) -> ! {
    let mut list: Vec<String> = failed
        .iter()
        .map(|(task, path, w)| {
            let sub = if path.is_empty() {
                String::new()
            } else {
                format!(" subtask {}", show_path(path))
            };
            match panics.get(w) {
                Some(m) => format!("task {task}{sub} (worker {w} panicked: {m})"),
                None => format!("task {task}{sub} (worker {w} ended)"),
            }
        })
        .collect();
    if left > 0 {
        list.push(format!("{left} never handed out: no worker left"));
    }
    panic!("ppd::task::{vm}: failed: {}", list.join("; "))
}

/// A subtask path as the tools print it: `0.1.0`.
fn show_path(path: &[u32]) -> String {
    path.iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(".")
}

/// The processor farm (PFVM, thesis §3.2): `workers` processes compute `work(task)` for every
/// task, handed out in the order given and numbered from 0; the results come back in that
/// order.
///
/// # Panics
///
/// If a task's work panics (after the other tasks are done), naming the task and the panic.
///
/// ```
/// let squares = ppd::task::farm(2, vec![1u64, 2, 3], |x| x * x);
/// assert_eq!(squares, vec![1, 4, 9]);
/// ```
#[track_caller]
pub fn farm<T, R, F>(workers: usize, tasks: Vec<T>, work: F) -> Vec<R>
where
    T: Serialize + DeserializeOwned + Send + 'static,
    R: Serialize + DeserializeOwned + Send + 'static,
    F: Fn(T) -> R + Send + Sync + 'static,
{
    let site = Location::caller();
    let total = tasks.len();
    let vm = next_run();
    rerun_here(vm, &mut |eblock, input| match eblock {
        WORK_EBLOCK => result_bytes(&work(logged(input)?)),
        other => Err(format!("a farm runs no {other}")),
    });
    log(TaskStep::Farm, (vm, 0), &[], total as u64, site);
    let pool: Pool<(u64, T), (u64, R)> =
        Pool::start(vm, workers, "farm-worker", move |_, inbox, outbox| {
            for (task, input) in inbox.iter() {
                log(TaskStep::Begin, (vm, task), &[], 0, site);
                let result = computation(WORK_EBLOCK, site, input, &work);
                log(TaskStep::End, (vm, task), &[], 0, site);
                if outbox.send((task, result)).is_err() {
                    return;
                }
            }
        });
    pool.farm_out("farm", tasks, site)
}

impl<T, R> Pool<(u64, T), (u64, R)>
where
    T: Serialize + DeserializeOwned + Send + 'static,
    R: Serialize + DeserializeOwned + Send + 'static,
{
    /// The farm's generator and collector (`vm` names the farm in a failure): hands `tasks`
    /// out one at a time per idle worker, numbered from 0, collects the results and returns
    /// them in task order once every worker is done.
    ///
    /// # Panics
    ///
    /// If a worker ended holding a task, or no worker was left for some: naming the tasks.
    fn farm_out(mut self, vm: &str, tasks: Vec<T>, site: &'static Location<'static>) -> Vec<R> {
        let total = tasks.len();
        let mut pending: VecDeque<(u64, T)> = (0u64..).zip(tasks).collect();
        let mut results: Vec<Option<R>> = (0..total).map(|_| None).collect();
        let mut failed = Vec::new();
        loop {
            while let Some(w) = self.idle() {
                let Some((task, input)) = pending.pop_front() else {
                    break;
                };
                if let Err(job) = self.give(w, task, Vec::new(), (task, input), site) {
                    pending.push_front(job);
                }
            }
            match self.next() {
                Some(Reply::Answer((task, result))) => {
                    log(TaskStep::Collect, (self.vm, task), &[], 0, site);
                    if let Some(slot) = results.get_mut(task as usize) {
                        *slot = Some(result);
                    }
                }
                Some(Reply::Died(w, (task, path))) => failed.push((task, path, w)),
                None => break,
            }
        }
        let panics = self.finish();
        if !failed.is_empty() || !pending.is_empty() {
            fail(vm, &failed, pending.len(), &panics);
        }
        results.into_iter().flatten().collect()
    }
}

/// A job of a divide-and-conquer worker: a subproblem to split or solve.
#[derive(Serialize, Deserialize)]
struct Job<P> {
    path: SubtaskPath,
    problem: P,
}

/// What a divide-and-conquer worker sends back.
#[derive(Serialize, Deserialize)]
enum Answer<P, R> {
    /// The subproblem split into these.
    Split(SubtaskPath, Vec<P>),
    /// The subproblem was a leaf with this result.
    Solved(SubtaskPath, R),
}

/// A split subproblem waiting for its children's results.
struct Node<R> {
    results: Vec<Option<R>>,
}

/// Divide and conquer (DCVM, thesis §3.3) on `workers` processes: `split(&p)` divides a
/// problem (`None`: a leaf), `solve` computes a leaf, `combine` joins the results of a split
/// on the way back. The problem is task 0; its subtasks are numbered by their path from it
/// (the thesis's SubTid). Splits and leaves run on the workers, combines in the caller; each
/// runs as an e-block (`ppd_formats::task::COMBINE_EBLOCK` for a combine), so phase two can
/// re-execute any of them alone. A combine that keeps state between calls re-executes
/// without it, and a different result is reported as such.
///
/// # Panics
///
/// If a split or solve panics (after the other subtasks are done), naming the subtask.
///
/// ```
/// let sum = ppd::task::divide_and_conquer(
///     2,
///     (1u64, 100u64),
///     |&(lo, hi)| (hi - lo > 10).then(|| vec![(lo, (lo + hi) / 2), ((lo + hi) / 2 + 1, hi)]),
///     |(lo, hi)| (lo..=hi).sum::<u64>(),
///     |parts| parts.into_iter().sum(),
/// );
/// assert_eq!(sum, 5050);
/// ```
#[track_caller]
pub fn divide_and_conquer<P, R, S, V, C>(
    workers: usize,
    problem: P,
    split: S,
    solve: V,
    mut combine: C,
) -> R
where
    P: Serialize + DeserializeOwned + Send + 'static,
    R: Serialize + DeserializeOwned + Send + 'static,
    S: Fn(&P) -> Option<Vec<P>> + Send + Sync + 'static,
    V: Fn(P) -> R + Send + Sync + 'static,
    // Send: phase two re-executes a combine on a thread of its own, as any e-block instance.
    C: FnMut(Vec<R>) -> R + Send,
{
    let site = Location::caller();
    let vm = next_run();
    rerun_here(vm, &mut |eblock, input| match eblock {
        SPLIT_EBLOCK => result_bytes(&split(&logged(input)?)),
        SOLVE_EBLOCK => result_bytes(&solve(logged(input)?)),
        COMBINE_EBLOCK => result_bytes(&combine(logged(input)?)),
        other => Err(format!("a divide and conquer runs no {other}")),
    });
    log(TaskStep::Dc, (vm, 0), &[], 1, site);
    let mut pool: Pool<Job<P>, Answer<P, R>> =
        Pool::start(vm, workers, "dc-worker", move |_, inbox, outbox| {
            for Job { path, problem } in inbox.iter() {
                log(TaskStep::Begin, (vm, 0), &path, 0, site);
                let answer = match computation(SPLIT_EBLOCK, site, &problem, &split) {
                    Some(parts) => {
                        log(TaskStep::Split, (vm, 0), &path, parts.len() as u64, site);
                        Answer::Split(path, parts)
                    }
                    None => {
                        let result = computation(SOLVE_EBLOCK, site, problem, &solve);
                        log(TaskStep::End, (vm, 0), &path, 0, site);
                        Answer::Solved(path, result)
                    }
                };
                if outbox.send(answer).is_err() {
                    return;
                }
            }
        });
    let mut pending: VecDeque<Job<P>> = VecDeque::from([Job {
        path: Vec::new(),
        problem,
    }]);
    let mut nodes: BTreeMap<SubtaskPath, Node<R>> = BTreeMap::new();
    let mut root = None;
    let mut failed = Vec::new();
    loop {
        while let Some(w) = pool.idle() {
            let Some(job) = pending.pop_front() else {
                break;
            };
            let path = job.path.clone();
            if let Err(job) = pool.give(w, 0, path, job, site) {
                pending.push_front(job);
            }
        }
        match pool.next() {
            Some(Reply::Answer(Answer::Split(path, parts))) => {
                log(TaskStep::Collect, (vm, 0), &path, 0, site);
                if parts.is_empty() {
                    // Nothing to wait for: the split is its own join.
                    let joined = computation(COMBINE_EBLOCK, site, Vec::new(), &mut combine);
                    log(TaskStep::Join, (vm, 0), &path, 0, site);
                    root = deliver(vm, &mut nodes, &mut combine, path, joined, site).or(root);
                    continue;
                }
                nodes.insert(
                    path.clone(),
                    Node {
                        results: parts.iter().map(|_| None).collect(),
                    },
                );
                for (i, problem) in (0u32..).zip(parts) {
                    let mut child = path.clone();
                    child.push(i);
                    pending.push_back(Job {
                        path: child,
                        problem,
                    });
                }
            }
            Some(Reply::Answer(Answer::Solved(path, result))) => {
                log(TaskStep::Collect, (vm, 0), &path, 0, site);
                root = deliver(vm, &mut nodes, &mut combine, path, result, site).or(root);
            }
            Some(Reply::Died(w, (task, path))) => failed.push((task, path, w)),
            None => break,
        }
    }
    let panics = pool.finish();
    match root {
        Some(result) if failed.is_empty() => result,
        _ => fail("divide_and_conquer", &failed, pending.len(), &panics),
    }
}

/// Hands the result of subtask `path` to its parent, combining every parent whose children are
/// all in; the root's result when it is complete.
fn deliver<R: Serialize + DeserializeOwned>(
    vm: u64,
    nodes: &mut BTreeMap<SubtaskPath, Node<R>>,
    combine: &mut impl FnMut(Vec<R>) -> R,
    mut path: SubtaskPath,
    mut result: R,
    site: &'static Location<'static>,
) -> Option<R> {
    loop {
        let Some(index) = path.pop() else {
            return Some(result);
        };
        let node = nodes.get_mut(&path)?;
        node.results[index as usize] = Some(result);
        if node.results.iter().any(Option::is_none) {
            return None;
        }
        let node = nodes.remove(&path)?;
        let parts: Vec<R> = node.results.into_iter().flatten().collect();
        let n = parts.len() as u64;
        result = computation(COMBINE_EBLOCK, site, parts, &mut *combine);
        log(TaskStep::Join, (vm, 0), &path, n, site);
    }
}

thread_local! {
    /// The tasks this thread is inside, innermost last.
    static ENTERED: RefCell<Vec<(u64, SubtaskPath)>> = const { RefCell::new(Vec::new()) };
}

/// While alive, the current process works on a task; see [`enter`].
#[derive(Debug)]
#[must_use = "the task ends when the guard drops"]
pub struct TaskGuard {
    task: u64,
    path: SubtaskPath,
    site: &'static Location<'static>,
    /// The guard belongs to the thread whose task stack it is on.
    _not_send: PhantomData<*const ()>,
}

/// Marks hand-written task code: the current process works on task `id` until the guard
/// drops. Inside another task's guard, `id` numbers a subtask of that task instead.
///
/// A panic inside leaves the task begun and not ended, which is how `ppd analyze tasks` tells a
/// computation that panicked.
///
/// ```
/// let total: u64 = (0..3u64)
///     .map(|id| {
///         let _task = ppd::task::enter(id);
///         id * 10
///     })
///     .sum();
/// assert_eq!(total, 30);
/// ```
#[track_caller]
pub fn enter(id: u64) -> TaskGuard {
    let site = Location::caller();
    let (task, path) = ENTERED.with(|e| {
        let mut e = e.borrow_mut();
        let unit = match e.last() {
            Some((task, path)) => {
                let mut path = path.clone();
                path.push(u32::try_from(id).unwrap_or(u32::MAX));
                (*task, path)
            }
            None => (id, Vec::new()),
        };
        e.push(unit.clone());
        unit
    });
    log(TaskStep::Begin, (0, task), &path, 0, site);
    TaskGuard {
        task,
        path,
        site,
        _not_send: PhantomData,
    }
}

impl TaskGuard {
    /// The task number.
    pub fn task(&self) -> u64 {
        self.task
    }

    /// The subtask's path from its task (empty for the task itself).
    pub fn path(&self) -> &[u32] {
        &self.path
    }
}

impl Drop for TaskGuard {
    fn drop(&mut self) {
        ENTERED.with(|e| e.borrow_mut().pop());
        // Unwinding: the task did not end; the process's `Panic` event says why.
        if !std::thread::panicking() {
            log(TaskStep::End, (0, self.task), &self.path, 0, self.site);
        }
    }
}
