//! Re-executing single e-block instances from their logs (Miller & Choi §5.3): the emulation
//! driver `ppd why` calls.
//!
//! `ppd why` starts the recorded binary with `PPD_MODE=emulate` and a request naming instances
//! (a process and the index of the instance's `EblockEnter` event). `#[ppd::main]` then does
//! not run the program: [`run_from_env`] looks each instance's e-block up in the registry the
//! `#[ppd::eblock]` attribute fills at link time, rebuilds the arguments from the prelog, runs
//! the e-block's tracing twin with a backend that serves the instance's log interval, and
//! writes the traces. Nested e-block calls are not re-run: their postlogs are substituted
//! (§5.2). Whatever re-execution produces is compared with the log; a difference is a
//! nondeterminism leak, reported with the e-block and the variable.
//!
//! The registry uses `inventory`, which collects the registrations with the platform's
//! static-constructor mechanism (`.init_array` on Linux, `__mod_init_func` on macOS, `.CRT$XCU`
//! on Windows). It works wherever those run before `main`; on targets without them (wasm
//! without constructors, some embedded targets) the registry is empty and emulation reports
//! every e-block as missing.

use std::any::Any;
use std::iter::Peekable;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use ppd_formats::Events;
use ppd_formats::eblock_trace::{Captured, EblockInfo, EblockTrace, Leak};
use ppd_formats::event::{Nesting, Owned};
use ppd_formats::value;
use ppd_formats::{Borrowed, Event, EventKind, ProcessId, Recording};
use ppd_recorder::eblock::logged;
use ppd_recorder::runtime::backend::{Dependency, Mode, Op, ProcessBackend, Runtime};
use ppd_recorder::runtime::{self, env};
use ppd_recorder::task::Compute;
use ppd_recorder::tracer::{self as tracer, Statement};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::describe::describe;
use crate::trace_hook::OpenCalls;

/// An e-block's entry in the registry: what `#[ppd::eblock]` registers for each e-block.
#[derive(Debug)]
pub struct Emulator {
    /// The e-block's name, as its events log it.
    pub name: &'static str,
    /// Where it is defined.
    pub file: &'static str,
    /// Line of the definition.
    pub line: u32,
    /// Its parameters, in order.
    pub params: &'static [&'static str],
    /// Variables and places it may define.
    pub defines: &'static [&'static str],
    /// Runs its tracing twin on the arguments in `ctx`.
    pub run: fn(&mut Ctx),
}

inventory::collect!(Emulator);

/// What a re-executed instance's tracing twin reads its arguments from and writes its results
/// to.
#[derive(Debug)]
pub struct Ctx {
    prelog: Vec<(String, Vec<u8>)>,
    outputs: Vec<(String, Vec<u8>)>,
}

/// Raised (as a panic payload) to stop a re-execution that diverged from its log.
#[derive(Debug)]
struct Stopped;

impl Ctx {
    /// The logged bytes of parameter `name`, recorded as the instance's entry.
    fn arg_bytes(&mut self, name: &str, site: &'static Statement) -> Vec<u8> {
        let Some((_, bytes)) = self.prelog.iter().find(|(n, _)| n == name) else {
            runtime::diverged(&format!("the prelog has no argument `{name}`"));
        };
        tracer::entry(site, name, Captured::Value(bytes.clone()));
        bytes.clone()
    }

    /// The logged value of parameter `name`, recorded as the instance's entry.
    pub fn arg<T: DeserializeOwned>(&mut self, name: &str, site: &'static Statement) -> T {
        let Some((_, bytes)) = self.prelog.iter().find(|(n, _)| n == name) else {
            runtime::diverged(&format!("the prelog has no argument `{name}`"));
        };
        tracer::entry(site, name, Captured::Value(bytes.clone()));
        match value::decode_as(bytes) {
            Ok(v) => v,
            Err(e) => runtime::diverged(&undecodable_argument(name, &e.to_string())),
        }
    }

    /// Parameter `name`, whose type is not serde: the prelog has only its mark
    /// (`ppd_recorder::eblock::logged`), recorded as the instance's entry, and the
    /// re-execution stops here, saying which argument it could not rebuild.
    pub fn unlogged_arg<T>(&mut self, name: &str, site: &'static Statement, type_name: &str) -> T {
        self.arg_bytes(name, site);
        runtime::diverged(&logged::stop_reason(
            &format!("the argument `{name}`"),
            type_name,
        ))
    }

    /// A result of the re-execution as a log holds it (`Logged::logged_bytes`), to compare
    /// with the postlog (`%0` or a `&mut` parameter).
    pub fn output(&mut self, name: &str, bytes: Vec<u8>) {
        self.outputs.push((name.to_owned(), bytes));
    }
}

/// The arguments of a re-executed instance, of any type: `(&&Rebuilt::<T>::new()).arg(..)`
/// with both traits in scope rebuilds a serde value from the prelog and stops at any other
/// (autoref specialization, as `ppd_recorder::eblock::logged`).
pub mod arguments {
    use ppd_recorder::eblock::logged::Rebuilt;
    use ppd_recorder::tracer::Statement;
    use serde::de::DeserializeOwned;

    use super::Ctx;

    /// A serde argument, rebuilt.
    pub trait ArgLogged<T> {
        /// The argument's logged value.
        fn arg(&self, ctx: &mut Ctx, name: &str, site: &'static Statement) -> T;
    }

    impl<T: DeserializeOwned> ArgLogged<T> for &Rebuilt<T> {
        fn arg(&self, ctx: &mut Ctx, name: &str, site: &'static Statement) -> T {
            ctx.arg(name, site)
        }
    }

    /// An argument that is not serde: the re-execution stops at it.
    pub trait ArgUnlogged<T> {
        /// Stops, naming the argument.
        fn arg(&self, ctx: &mut Ctx, name: &str, site: &'static Statement) -> T;
    }

    impl<T> ArgUnlogged<T> for Rebuilt<T> {
        fn arg(&self, ctx: &mut Ctx, name: &str, site: &'static Statement) -> T {
            ctx.unlogged_arg(name, site, std::any::type_name::<T>())
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The backend serving one instance's log interval

/// What the runner learns from the backend.
#[derive(Debug, Default)]
struct Findings {
    leaks: Vec<Leak>,
    /// Index of the instance's own exit event.
    exit: Option<u64>,
    /// The panic the log has where the instance's exit would be: the recorded instance
    /// panicked.
    logged_panic: Option<String>,
}

/// A panic as reports show it: `message at file:line`.
fn panic_outcome(message: &str, file: &str, line: u32) -> String {
    format!("{message:?} at {file}:{line}")
}

struct Interval {
    process: ProcessId,
    events: Peekable<Events<'static>>,
    /// The logged event the current operation reproduces, and its index.
    current: Option<(u64, Event)>,
    /// The nested e-block call being substituted, if one is.
    calls: OpenCalls,
    findings: Arc<Mutex<Findings>>,
    /// The re-execution stopped (a leak, or the log ran out) and is unwinding: the operations
    /// drops perform on the way out (a guard's unlock) are not checked against the log, which
    /// no longer describes them, and must not stop it a second time (a panic in a drop while
    /// unwinding aborts the program).
    stopped: bool,
}

impl Interval {
    fn next_event(&mut self) -> Option<(u64, Event)> {
        loop {
            match self.events.next()? {
                Ok((_, e)) if e.kind().is_wait() => continue,
                Ok(item) => return Some(item),
                Err(e) => {
                    self.leak("the log", "a readable event".into(), e.to_string());
                    return None;
                }
            }
        }
    }

    /// Passes over the markers a wait left (`Blocked`, `JoinBlocked`, `Sleep`), which
    /// [`Interval::next_event`] skips too, so that a peek sees the operation that followed.
    fn skip_wait_markers(&mut self) {
        while let Some(Ok((_, e))) = self.events.peek()
            && e.kind().is_wait()
        {
            self.events.next();
        }
    }

    fn findings(&self) -> std::sync::MutexGuard<'_, Findings> {
        self.findings.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn leak(&self, what: &str, logged: String, reproduced: String) {
        self.findings().leaks.push(Leak {
            what: what.to_owned(),
            logged,
            reproduced,
        });
    }

    /// The log ends inside the instance: its process died, or stopped recording, while the
    /// instance ran (a log that ends with the process's exit cannot be run past without a
    /// mismatch first; an unreadable one was reported as it was read). The re-execution ends
    /// where the recorded run did, and what it traced up to there stands.
    fn log_ended(&mut self) -> ! {
        self.stop()
    }

    fn stop(&mut self) -> ! {
        self.stopped = true;
        std::panic::resume_unwind(Box::new(Stopped))
    }

    /// After the re-executed body panicked: how the log says the instance ended. The panic
    /// unwinds the instance and its callers, whose drops may log events on the way, up to the
    /// process's `Panic`; an exit of the instance first means the recorded instance returned.
    fn logged_outcome(&mut self) -> Option<Event> {
        let mut depth = 0u32;
        loop {
            let (_, e) = self.next_event()?;
            if let Event::Panic { .. } = e {
                return Some(e);
            }
            match e.nesting() {
                Nesting::Enter => depth += 1,
                Nesting::Exit if depth == 0 => return Some(e),
                Nesting::Exit => depth -= 1,
                Nesting::Flat => {}
            }
        }
    }
}

/// Whether `e` is what operation `op` must reproduce, as in replay; a re-executed instance
/// starts in the middle of its process, so the objects it creates do not get their logged ids
/// from a count and may differ from them.
fn matches(op: &Op, e: &Event) -> bool {
    // Objects made in the instance take the ids logged: a process re-executed from the middle
    // of its run has not counted the objects it made before.
    crate::local::op_matches(op, e)
        || (op.kind == EventKind::Create && e.kind() == EventKind::Create)
        || (op.kind == EventKind::NetOpen
            && matches!(e.kind(), EventKind::NetOpen | EventKind::NetFail))
}

impl ProcessBackend for Interval {
    fn expect(&mut self, op: Op) -> Option<Event<Owned>> {
        if self.stopped {
            return None;
        }
        if op.kind == EventKind::Panic {
            return self.logged_outcome();
        }
        if op.kind == EventKind::EblockExit {
            // The end of a nested call being substituted, or of the instance: skip whatever
            // the nested call did, up to its exit.
            let mut depth = 0u32;
            loop {
                let Some((index, e)) = self.next_event() else {
                    if self.calls.depth() == 0 {
                        // The recorded instance never ended: the log stops inside it.
                        return None;
                    }
                    self.log_ended();
                };
                if let Event::Panic {
                    message,
                    file,
                    line,
                } = &e
                    && self.calls.depth() == 0
                {
                    // The recorded instance panicked where this run returned.
                    self.findings().logged_panic = Some(panic_outcome(message, file, *line));
                    return None;
                }
                match e.nesting() {
                    Nesting::Enter => depth += 1,
                    Nesting::Exit if depth == 0 => {
                        if self.calls.depth() == 0 {
                            self.findings().exit = Some(index);
                        }
                        self.current = Some((index, e.clone()));
                        return Some(e);
                    }
                    Nesting::Exit => depth -= 1,
                    Nesting::Flat => {}
                }
            }
        }
        let Some((index, e)) = self.next_event() else {
            self.log_ended();
        };
        if !matches(&op, &e) {
            self.leak(
                &format!("event {index}"),
                describe(&e),
                crate::local::describe_op(&op),
            );
            self.stop();
        }
        self.current = Some((index, e.clone()));
        Some(e)
    }

    fn expect_if(&mut self, op: Op) -> Option<Event<Owned>> {
        if self.stopped {
            return None;
        }
        self.skip_wait_markers();
        match self.events.peek() {
            Some(Ok((_, e))) if matches(&op, e) => {
                let e = e.clone();
                self.expect(op);
                Some(e)
            }
            _ => None,
        }
    }

    fn next_logged(&mut self) -> Option<Event<Owned>> {
        self.skip_wait_markers();
        match self.events.peek() {
            Some(Ok((_, e))) => Some(e.clone()),
            _ => None,
        }
    }

    fn done(&mut self, event: &Event<Borrowed<'_>>) {
        let Some((index, logged)) = self.current.take() else {
            return;
        };
        if crate::local::compare(&logged, event, true).is_err() {
            self.leak(
                &format!("event {index}"),
                describe(&logged),
                describe(event),
            );
            self.stop();
        }
        self.calls.record(&logged, index, self.process);
    }

    fn waiting_for(&mut self, _dependency: Dependency) {}

    fn diverged(&mut self, detail: &str) {
        if self.stopped {
            return;
        }
        let logged = self
            .current
            .as_ref()
            .map_or_else(|| "the logged event".to_owned(), |(_, e)| describe(e));
        self.leak(STOPPED, logged, detail.to_owned());
        self.stop();
    }

    fn log_payloads(&self) -> bool {
        true
    }

    fn finish(&mut self) {}
}

// ---------------------------------------------------------------------------------------------
// The runner

/// What `ppd why` asks for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Request {
    /// Instances to re-execute: `(process, index of their EblockEnter event)`.
    pub instances: Vec<(ProcessId, u64)>,
    /// Arguments to replace before re-executing (what-if, Miller & Choi §5.7): name and
    /// MessagePack value, applied to every instance of the request.
    #[serde(default)]
    pub overrides: Vec<(String, Vec<u8>)>,
    /// Only list the e-blocks the binary has (their [`EblockInfo`]).
    pub describe: bool,
    /// Re-execute one task's computation instead (phase two of `ppd analyze tasks`): the
    /// program runs natively up to the task's virtual machine; `instances` is then ignored.
    #[serde(default)]
    pub task: Option<TaskRerun>,
    /// Where to write the [`Response`].
    pub output: PathBuf,
}

/// What the emulation writes back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Response {
    /// The traces, in the order asked for.
    pub traces: Vec<EblockTrace>,
    /// Instances that could not be re-executed, and why.
    pub errors: Vec<String>,
    /// The e-blocks of the binary, when asked to describe them.
    pub eblocks: Vec<EblockInfo>,
}

/// The e-blocks this binary registered.
pub fn registry() -> Vec<EblockInfo> {
    inventory::iter::<Emulator>
        .into_iter()
        .map(|e| EblockInfo {
            name: e.name.to_owned(),
            file: e.file.to_owned(),
            line: e.line,
            params: e.params.iter().map(|p| (*p).to_owned()).collect(),
            defines: e.defines.iter().map(|d| (*d).to_owned()).collect(),
        })
        .collect()
}

/// Which task computation to re-execute, and where the program reaches it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskRerun {
    /// The process that started the task's virtual machine run, by name.
    pub generator: String,
    /// The run's ordinal in that process (the low half of its id).
    pub ordinal: u32,
    /// The process that computed the task.
    pub process: ProcessId,
    /// Index of the computation's `EblockEnter` event in its log.
    pub enter: u64,
}

#[derive(Debug)]
struct EmulateRuntime;

/// The backend of a process spawned inside a re-executed e-block: children are not re-run
/// (their own logs hold what they did), so it holds the child before its first event.
#[derive(Debug)]
struct Held;

impl ProcessBackend for Held {
    fn expect(&mut self, _op: Op) -> Option<Event<Owned>> {
        loop {
            std::thread::park();
        }
    }

    fn expect_if(&mut self, op: Op) -> Option<Event<Owned>> {
        self.expect(op)
    }

    fn done(&mut self, _event: &Event<Borrowed<'_>>) {}

    fn waiting_for(&mut self, _dependency: Dependency) {}

    fn diverged(&mut self, _detail: &str) {}

    fn log_payloads(&self) -> bool {
        false
    }

    fn finish(&mut self) {}
}

impl Runtime for EmulateRuntime {
    fn mode(&self) -> Mode {
        Mode::Emulate
    }

    fn allocate_process(&self) -> ProcessId {
        ProcessId(u32::MAX)
    }

    fn start_process(
        &self,
        _id: ProcessId,
        _parent: Option<ProcessId>,
        _name: &str,
    ) -> Box<dyn ProcessBackend> {
        Box::new(Held)
    }

    fn finish(&self, _exit_code: i32, _panicked: bool) {}
}

fn emulate_one(
    recording: &Recording,
    process: ProcessId,
    enter: u64,
    overrides: Vec<(String, Vec<u8>)>,
) -> Result<EblockTrace, String> {
    emulate_instance(
        recording,
        process,
        enter,
        overrides,
        &mut |instance, ctx| {
            let emulator = inventory::iter::<Emulator>
                .into_iter()
                .find(|e| e.name == instance.eblock)
                .ok_or_else(|| format!("the e-block {} is not in this binary", instance.eblock))?;
            (emulator.run)(ctx);
            Ok(())
        },
    )
}

/// The instance a runner is asked to re-execute.
struct Instance<'a> {
    eblock: &'a str,
    site: Option<&'a ppd_formats::event::Site>,
}

/// What runs an instance's body with its context, on the instance's own thread; an error,
/// before the body starts, says why it cannot run.
type Runner<'r> = dyn FnMut(&Instance<'_>, &mut Ctx) -> Result<(), String> + Send + 'r;

/// Re-executes the instance whose `EblockEnter` is event `enter` of `process`, with the body
/// `runner` gives, against the instance's log interval.
fn emulate_instance(
    recording: &Recording,
    process: ProcessId,
    enter: u64,
    overrides: Vec<(String, Vec<u8>)>,
    runner: &mut Runner<'_>,
) -> Result<EblockTrace, String> {
    let entry = recording
        .process(process)
        .ok_or_else(|| format!("no process {process} in the recording"))?;
    let reader = recording.open_log(entry).map_err(|e| e.to_string())?;
    let mut events = reader
        .into_events_from(enter)
        .map_err(|e| e.to_string())?
        .peekable();
    let (eblock, site, prelog) = match events.next() {
        Some(Ok((
            _,
            Event::EblockEnter {
                eblock,
                site,
                prelog,
            },
        ))) => (eblock, site, prelog),
        Some(Ok((_, other))) => {
            return Err(format!(
                "event {enter} of {process} is not an e-block entry but {}",
                describe(&other)
            ));
        }
        Some(Err(e)) => return Err(e.to_string()),
        None => return Err(format!("{process} has no event {enter}")),
    };
    let prelog = value::map_entries(&prelog).map_err(|e| format!("prelog of {eblock}: {e}"))?;
    let findings = Arc::new(Mutex::new(Findings::default()));
    let name = entry.name.clone();
    let for_thread = Arc::clone(&findings);
    // A fresh thread per instance: its thread-locals (tracer, process) start clean, and a
    // panic of the re-executed code stays in it.
    let instance = Instance {
        eblock: &eblock,
        site,
    };
    let outcome = std::thread::scope(|scope| {
        scope
            .spawn(|| {
                run_instance(
                    process,
                    &name,
                    events,
                    &for_thread,
                    prelog,
                    overrides,
                    &instance,
                    runner,
                )
            })
            .join()
    })
    .map_err(|_| format!("re-executing {eblock} crashed the emulation"))??;
    let (outputs, logged, ended, records) = outcome;
    let (mut leaks, exit_index, logged_panic) = {
        let mut f = findings.lock().unwrap_or_else(|p| p.into_inner());
        (std::mem::take(&mut f.leaks), f.exit, f.logged_panic.take())
    };
    let (exit, logged_panic) = match logged {
        Some(e @ Event::EblockExit { .. }) => (Some(e), logged_panic),
        Some(Event::Panic {
            message,
            file,
            line,
        }) => (None, Some(panic_outcome(&message, &file, line))),
        _ => (None, logged_panic),
    };
    if let Some(Event::EblockExit { postlog, .. }) = &exit {
        let logged = value::map_entries(postlog).unwrap_or_default();
        for (name, reproduced) in &outputs {
            let was = logged.iter().find(|(n, _)| n == name).map(|(_, v)| v);
            if was != Some(reproduced) {
                leaks.push(Leak {
                    what: name.clone(),
                    logged: was.map_or_else(|| "nothing".into(), |v| value::show_bytes(v)),
                    reproduced: value::show_bytes(reproduced),
                });
            }
        }
    }
    // A panic is an outcome like a return: the re-execution is faithful when it ends as the
    // recorded instance did, with the same message at the same place.
    let panicked = match ended {
        Ended::Panicked(text) => Some(text),
        _ => None,
    };
    let outcome_leak = |logged: String, reproduced: String| Leak {
        what: OUTCOME.into(),
        logged,
        reproduced,
    };
    match (&logged_panic, &panicked) {
        (Some(a), Some(b)) if a != b => {
            leaks.push(outcome_leak(
                format!("a panic: {a}"),
                format!("a panic: {b}"),
            ));
        }
        (Some(a), None) if leaks.is_empty() => {
            leaks.push(outcome_leak(format!("a panic: {a}"), "a return".into()));
        }
        (None, Some(b)) if leaks.is_empty() && exit.is_some() => {
            leaks.push(outcome_leak("an exit".into(), format!("a panic: {b}")));
        }
        _ => {}
    }
    Ok(EblockTrace {
        process,
        eblock: eblock.to_string(),
        enter,
        exit: exit_index,
        records,
        leaks,
        logged_panic,
        panicked,
    })
}

/// What a re-executed instance produced: its outputs, how the log says it ended, how it ended,
/// and its trace records.
type Outcome = (
    Vec<(String, Vec<u8>)>,
    Option<Event<Owned>>,
    Ended,
    Vec<ppd_formats::eblock_trace::Record>,
);

/// Runs one instance on the current (fresh) thread, as process `process`, against `events`.
#[allow(clippy::too_many_arguments)]
fn run_instance(
    process: ProcessId,
    name: &str,
    events: Peekable<Events<'static>>,
    findings: &Arc<Mutex<Findings>>,
    prelog: Vec<(String, Vec<u8>)>,
    overrides: Vec<(String, Vec<u8>)>,
    instance: &Instance<'_>,
    runner: &mut Runner<'_>,
) -> Result<Outcome, String> {
    let interval = Interval {
        process,
        events,
        current: None,
        calls: OpenCalls::default(),
        findings: Arc::clone(findings),
        stopped: false,
    };
    runtime::adopt_process(process, name, Box::new(interval));
    tracer::start();
    let mut prelog = prelog;
    for (name, value) in &overrides {
        if let Some(slot) = prelog.iter_mut().find(|(n, _)| n == name) {
            slot.1.clone_from(value);
        }
    }
    let mut ctx = Ctx {
        prelog,
        outputs: Vec::new(),
    };
    let mut refused = Ok(());
    let run = catch_unwind(AssertUnwindSafe(|| refused = runner(instance, &mut ctx)));
    if let Err(e) = refused {
        tracer::finish();
        runtime::release_process();
        return Err(e);
    }
    let ended = match run {
        Ok(()) => Ended::Returned,
        Err(payload) if payload.is::<Stopped>() => Ended::Stopped,
        Err(payload) => Ended::Panicked(match runtime::take_last_panic() {
            Some(p) => panic_outcome(&p.message, &p.file, p.line),
            None => format!("{:?}", panic_text(payload.as_ref())),
        }),
    };
    // How the log says the instance ended: its exit after a return (what it produced), or
    // whatever follows the panic. Both only read the log, and cannot stop the run.
    let logged = match &ended {
        Ended::Returned => runtime::expect(Op::plain(EventKind::EblockExit, None)),
        Ended::Panicked(_) => runtime::expect(Op::plain(EventKind::Panic, None)),
        Ended::Stopped => None,
    };
    let records = tracer::finish();
    runtime::release_process();
    Ok((ctx.outputs, logged, ended, records))
}

/// The name of the leak that says a re-executed instance ended otherwise than the recorded one
/// (a return for a panic, a panic for a return, another panic).
pub const OUTCOME: &str = "the outcome";

/// Why a re-execution stopped at an argument whose bytes are not a value of its type (a value
/// `--what-if` gave, typically).
fn undecodable_argument(name: &str, error: &str) -> String {
    format!("the logged argument `{name}` does not decode as its type: {error}")
}

/// Whether `reason` (a leak's `reproduced`) says that argument `name` did not decode as its
/// type: for a value a user gave, bad input rather than a run that left its log.
pub fn is_undecodable_argument(reason: &str, name: &str) -> bool {
    reason.contains(&undecodable_argument(name, ""))
}

/// The name of the leak that says the program stopped the re-execution itself, because it
/// could not go on from the log (a value the log does not hold, say); `reproduced` says why.
pub const STOPPED: &str = "the re-execution";

/// How the re-executed body ended.
enum Ended {
    Returned,
    /// Stopped where it left the log.
    Stopped,
    /// Panicked: message and place.
    Panicked(String),
}

fn panic_text(payload: &(dyn Any + Send)) -> String {
    if payload.is::<Stopped>() {
        return "stopped".into();
    }
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "panic".into())
}

/// Runs the emulation request named by the environment and exits. Called by `#[ppd::main]`
/// when `PPD_MODE=emulate`; the program's own `main` does not run.
pub fn run_from_env() -> ! {
    let code = match run() {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("ppd: emulation failed: {e}");
            2
        }
    };
    std::process::exit(code)
}

/// The request the environment names.
fn read_request() -> Result<Request, String> {
    let request_path = std::env::var_os(env::REQUEST)
        .map(PathBuf::from)
        .ok_or_else(|| format!("{} is not set", env::REQUEST))?;
    serde_json::from_slice(
        &std::fs::read(&request_path).map_err(|e| format!("{}: {e}", request_path.display()))?,
    )
    .map_err(|e| format!("{}: {e}", request_path.display()))
}

fn run() -> Result<(), String> {
    let request = read_request()?;
    let mut response = Response {
        traces: Vec::new(),
        errors: Vec::new(),
        eblocks: Vec::new(),
    };
    if request.describe {
        response.eblocks = registry();
    } else {
        let dir = std::env::var_os(env::DIR)
            .map(PathBuf::from)
            .ok_or_else(|| format!("{} is not set", env::DIR))?;
        let recording = Recording::open_node(&dir).map_err(|e| e.to_string())?;
        // The re-executed code's panics are expected (a recorded panic, a divergence stopped):
        // they are reported in the traces, not printed. The runtime's hook, installed over this
        // one, still keeps each panic's message and place.
        std::panic::set_hook(Box::new(|_| {}));
        runtime::install(Box::new(EmulateRuntime));
        for (process, enter) in &request.instances {
            match emulate_one(&recording, *process, *enter, request.overrides.clone()) {
                Ok(trace) => response.traces.push(trace),
                Err(e) => response.errors.push(e),
            }
        }
    }
    let bytes = serde_json::to_vec(&response).map_err(|e| e.to_string())?;
    std::fs::write(&request.output, bytes).map_err(|e| format!("{}: {e}", request.output.display()))
}

// ---------------------------------------------------------------------------------------------
// Phase two of `ppd analyze tasks`: one task's computation

/// The task request of this program run, once [`boot_from_env`] found one.
static TASK_REQUEST: std::sync::OnceLock<Request> = std::sync::OnceLock::new();

/// Called by `#[ppd::main]` when `PPD_MODE=emulate`. A request to re-execute a task returns,
/// so that the program's body runs natively (nothing logged, nothing replayed) up to the call
/// that starts the task's virtual machine, where `ppd::task` hands the computation to the
/// task runner here: closures exist only in a running program. Any other request is served
/// by [`run_from_env`], which exits.
pub fn boot_from_env() {
    let Ok(request) = read_request() else {
        run_from_env()
    };
    let Some(task) = request.task.clone() else {
        run_from_env()
    };
    if TASK_REQUEST.set(request).is_ok() {
        ppd_recorder::task::rerun_at(ppd_recorder::task::Rerun {
            generator: task.generator,
            ordinal: task.ordinal,
            hook: rerun_task,
        });
    }
}

/// Re-executes the requested task with `compute`, the computations of its virtual machine
/// run, writes the response and exits.
fn rerun_task(compute: &mut Compute<'_>) -> ! {
    let code = match serve_task(compute) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("ppd: emulation failed: {e}");
            2
        }
    };
    std::process::exit(code)
}

fn serve_task(compute: &mut Compute<'_>) -> Result<(), String> {
    let request = TASK_REQUEST
        .get()
        .ok_or("no task re-execution was requested")?;
    let task = request.task.as_ref().ok_or("the request names no task")?;
    let dir = std::env::var_os(env::DIR)
        .map(PathBuf::from)
        .ok_or_else(|| format!("{} is not set", env::DIR))?;
    let recording = Recording::open_node(&dir).map_err(|e| e.to_string())?;
    std::panic::set_hook(Box::new(|_| {}));
    runtime::install(Box::new(EmulateRuntime));
    let mut response = Response {
        traces: Vec::new(),
        errors: Vec::new(),
        eblocks: Vec::new(),
    };
    let traced = emulate_instance(
        &recording,
        task.process,
        task.enter,
        request.overrides.clone(),
        &mut |instance, ctx| {
            if !ppd_formats::task::is_computation(instance.eblock) {
                return Err(format!(
                    "{} event {} is the e-block {}, not a task's computation",
                    task.process, task.enter, instance.eblock
                ));
            }
            let site = computation_site(instance);
            let input = ctx.arg_bytes("input", site);
            match ppd_task_entry(compute, instance.eblock, &input) {
                Ok(result) => {
                    tracer::ret(site, Captured::Value(result.clone()), &["input"]);
                    ctx.outputs.push(("%0".to_owned(), result));
                }
                Err(e) => runtime::diverged(&e),
            }
            Ok(())
        },
    );
    match traced {
        Ok(trace) => response.traces.push(trace),
        Err(e) => response.errors.push(e),
    }
    let bytes = serde_json::to_vec(&response).map_err(|e| e.to_string())?;
    std::fs::write(&request.output, bytes).map_err(|e| format!("{}: {e}", request.output.display()))
}

/// Where a task's computation's trace places its entry and result: the call that started its
/// virtual machine (a closure has no statements of its own to trace).
fn computation_site(instance: &Instance<'_>) -> &'static Statement {
    let (file, line) = instance
        .site
        .map_or((String::new(), 0), |s| (s.file.clone(), s.line));
    let call = instance.eblock.rsplit("::").next().unwrap_or("work");
    // One instance per program run: leaking its site is bounded.
    Box::leak(Box::new(Statement {
        file: Box::leak(file.into_boxed_str()),
        line,
        text: Box::leak(format!("{call}(input)").into_boxed_str()),
    }))
}

/// The entry of a re-executed task's computation: `ppd analyze tasks --gdb N` stops here, with
/// the task's logged `input`; stepping in reaches the program's closure. Reached only for the
/// requested task.
#[unsafe(no_mangle)]
#[inline(never)]
pub fn ppd_task_entry(
    compute: &mut Compute<'_>,
    eblock: &str,
    input: &[u8],
) -> Result<Vec<u8>, String> {
    compute(eblock, input)
}

/// How to start the recorded program so that it re-executes one task: its argument vector,
/// directory and environment, with the request written to a scratch directory that lives as
/// long as this value.
#[derive(Debug)]
pub struct TaskInvocation {
    /// The recorded program.
    pub binary: PathBuf,
    /// Its arguments as recorded (without the program name).
    pub args: Vec<String>,
    /// The directory it was recorded in, if it still exists.
    pub cwd: Option<PathBuf>,
    /// The environment that selects emulate mode and names the request.
    pub env: Vec<(&'static str, PathBuf)>,
    /// Where the program writes its [`Response`].
    pub output: PathBuf,
    scratch: tempfile::TempDir,
}

impl TaskInvocation {
    /// Writes `task`'s request for `binary` (checked against `recording` by the caller).
    pub fn new(
        recording: &Recording,
        binary: &std::path::Path,
        task: TaskRerun,
    ) -> Result<TaskInvocation, crate::debugger::DebugError> {
        use crate::debugger::DebugError;
        let io =
            |action: &'static str| move |source: std::io::Error| DebugError::Io { action, source };
        let scratch = tempfile::Builder::new()
            .prefix("ppd-rerun")
            .tempdir()
            .map_err(io("create a scratch directory"))?;
        let output = scratch.path().join("response.json");
        let request = Request {
            instances: Vec::new(),
            overrides: Vec::new(),
            describe: false,
            task: Some(task),
            output: output.clone(),
        };
        let request_path = scratch.path().join("request.json");
        std::fs::write(
            &request_path,
            serde_json::to_vec(&request).expect("a request always serializes"),
        )
        .map_err(io("write the emulation request"))?;
        let dir = std::fs::canonicalize(recording.dir()).map_err(io("resolve the recording"))?;
        let manifest = recording.manifest();
        Ok(TaskInvocation {
            binary: binary.to_owned(),
            args: manifest.argv.iter().skip(1).cloned().collect(),
            cwd: Some(manifest.cwd.clone()).filter(|d| d.is_dir()),
            env: vec![
                (env::MODE, PathBuf::from("emulate")),
                (env::DIR, dir),
                (env::REQUEST, request_path),
            ],
            output,
            scratch,
        })
    }

    /// Keeps the request on disk after this value is gone, for a command run later.
    pub fn keep(self) -> PathBuf {
        self.scratch.keep()
    }

    /// Runs the program and reads its response; a program that ends without reaching the
    /// task's virtual machine says so.
    pub fn run(&self) -> Result<Response, crate::debugger::DebugError> {
        use crate::debugger::DebugError;
        let mut command = std::process::Command::new(&self.binary);
        command.args(&self.args).envs(self.env.iter().cloned());
        if let Some(cwd) = &self.cwd {
            command.current_dir(cwd);
        }
        let output = command
            .stdin(std::process::Stdio::null())
            .output()
            .map_err(|source| DebugError::Io {
                action: "start the recorded program",
                source,
            })?;
        let Ok(bytes) = std::fs::read(&self.output) else {
            let said = String::from_utf8_lossy(&output.stderr);
            return Err(DebugError::Io {
                action: "re-execute the task",
                source: std::io::Error::other(format!(
                    "{} ({}) ended without reaching the task's virtual machine{}",
                    self.binary.display(),
                    output.status,
                    match said.trim() {
                        "" => String::new(),
                        said => format!(": {said}"),
                    }
                )),
            });
        };
        serde_json::from_slice(&bytes).map_err(|e| DebugError::Io {
            action: "read the emulation's response",
            source: std::io::Error::new(std::io::ErrorKind::InvalidData, e),
        })
    }
}

// ---------------------------------------------------------------------------------------------
// The driver (in `ppd`)

/// Runs `request` in `binary`, the recorded program (checked against the recording's hash
/// with [`check_binary`](crate::debugger::check_binary)), and reads the response.
pub fn drive(
    recording: &Recording,
    binary: &std::path::Path,
    request: &Request,
) -> Result<Response, crate::debugger::DebugError> {
    use crate::debugger::DebugError;
    let io = |action: &'static str| move |source: std::io::Error| DebugError::Io { action, source };
    let scratch = tempfile::Builder::new()
        .prefix("ppd-emulate")
        .tempdir()
        .map_err(io("create a scratch directory"))?;
    let mut request = request.clone();
    request.output = scratch.path().join("response.json");
    let request_path = scratch.path().join("request.json");
    std::fs::write(
        &request_path,
        serde_json::to_vec(&request).expect("a request always serializes"),
    )
    .map_err(io("write the emulation request"))?;
    let dir = std::fs::canonicalize(recording.dir()).map_err(io("resolve the recording"))?;
    let output = std::process::Command::new(binary)
        .env(env::MODE, "emulate")
        .env(env::DIR, &dir)
        .env(env::REQUEST, &request_path)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(io("start the recorded program"))?;
    let Ok(bytes) = std::fs::read(&request.output) else {
        let said = String::from_utf8_lossy(&output.stderr);
        let said = said.trim();
        return Err(if said.is_empty() {
            DebugError::NotStarted {
                program: binary.to_owned(),
                status: output.status,
            }
        } else {
            DebugError::Io {
                action: "re-execute e-blocks",
                source: std::io::Error::other(format!(
                    "{} ({}): {said}",
                    binary.display(),
                    output.status
                )),
            }
        });
    };
    serde_json::from_slice(&bytes).map_err(|e| DebugError::Io {
        action: "read the emulation's response",
        source: std::io::Error::new(std::io::ErrorKind::InvalidData, e),
    })
}
