//! The runtime behind the std-mirroring API: which mode the program runs in, and which logical
//! process the current thread is.
//!
//! Every operation of the API follows the same three steps:
//! [`expect`] asks the current process's backend what the log says the operation must do,
//! the operation acts (calling [`waiting_for`] before it blocks on another process), and
//! [`done`] tells the backend what happened. In pass-through mode, and on threads that are not
//! logical processes, the three steps do nothing.

pub mod backend;
pub mod binding;
pub mod env;
mod halt;
mod marker;
mod panic;
pub mod program_hash;
pub mod record;
pub mod watch;

use std::cell::{Cell, RefCell};
use std::panic::Location;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

use ppd_formats::event::ObjectKind;
use ppd_formats::pending::PendingAccess;
use ppd_formats::{Borrowed, Event, EventKind, ObjectId, ProcessId};
use rustc_hash::FxHashMap;

use self::backend::{Dependency, Mode, Op, ProcessBackend, Runtime};

static MODE: AtomicU8 = AtomicU8::new(0);
static RUNTIME: OnceLock<Box<dyn Runtime>> = OnceLock::new();

fn mode_code(mode: Mode) -> u8 {
    match mode {
        Mode::PassThrough => 0,
        Mode::Record => 1,
        Mode::Replay => 2,
        Mode::Emulate => 3,
    }
}

/// The mode the program runs in. Pass-through until a runtime is installed.
#[inline]
pub fn mode() -> Mode {
    match MODE.load(Ordering::Relaxed) {
        0 => Mode::PassThrough,
        1 => Mode::Record,
        2 => Mode::Replay,
        _ => Mode::Emulate,
    }
}

/// Whether operations go to a backend (any mode but pass-through).
#[inline]
pub fn active() -> bool {
    MODE.load(Ordering::Relaxed) != 0
}

/// Installs the runtime of a mode. Called once, before `main`'s body runs. Every mode starts
/// here, so this is where the program keeps the marker that says it is a ppd program.
///
/// Returns false if a runtime was already installed.
pub fn install(runtime: Box<dyn Runtime>) -> bool {
    marker::keep();
    let mode = runtime.mode();
    if RUNTIME.set(runtime).is_err() {
        return false;
    }
    panic::install_hook();
    MODE.store(mode_code(mode), Ordering::Release);
    true
}

/// The installed runtime.
pub fn runtime() -> Option<&'static dyn Runtime> {
    RUNTIME.get().map(|r| &**r)
}

/// A logical process: the state the runtime keeps for the thread that runs it.
struct Process {
    id: ProcessId,
    name: String,
    next_object: u32,
    next_child: u32,
    eblock_depth: u32,
    /// One-time initializations this process has seen complete: the generation of each
    /// (`sync/once.rs`).
    seen_complete: FxHashMap<ObjectId, u32>,
    /// The number of the last message this process sent on each channel it sent on.
    sent_seqs: FxHashMap<ObjectId, u64>,
    backend: Box<dyn ProcessBackend>,
}

/// What every logged operation asks of the current process, kept apart from [`Process`]: a
/// plain copy in a thread-local without a destructor is read without borrowing or
/// registering anything.
#[derive(Debug, Clone, Copy)]
struct Hot {
    id: Option<ProcessId>,
    /// Recording: whether transferred values are logged (payloads were asked for, or an
    /// e-block is open).
    payloads: bool,
    /// Whether an e-block is open (where every look at a one-time initialization is logged).
    in_eblock: bool,
}

thread_local! {
    static CURRENT: RefCell<Option<Process>> = const { RefCell::new(None) };
    static HOT: Cell<Hot> = const {
        Cell::new(Hot {
            id: None,
            payloads: false,
            in_eblock: false,
        })
    };
    static WARNED_UNMANAGED: Cell<bool> = const { Cell::new(false) };
}

/// Refreshes [`HOT`] from the current process.
fn refresh_hot(process: Option<&Process>) {
    let hot = match process {
        Some(p) => Hot {
            id: Some(p.id),
            payloads: p.eblock_depth > 0 || p.backend.log_payloads(),
            in_eblock: p.eblock_depth > 0,
        },
        None => Hot {
            id: None,
            payloads: false,
            in_eblock: false,
        },
    };
    HOT.with(|h| h.set(hot));
}

fn with_process<R>(f: impl FnOnce(&mut Process) -> R) -> Option<R> {
    CURRENT.with(|c| c.borrow_mut().as_mut().map(f))
}

/// Says once per thread that a thread outside ppd's control touched a ppd object.
fn warn_unmanaged(what: &str) {
    if mode() == Mode::Record && !WARNED_UNMANAGED.with(|w| w.replace(true)) {
        eprintln!(
            "ppd: {what} on a thread not started by ppd::thread::spawn; operations on this \
             thread are not recorded and will not replay"
        );
    }
}

/// Makes the current thread logical process `id` and logs its start.
pub fn enter_process(id: ProcessId, parent: Option<ProcessId>, name: &str) {
    let Some(rt) = runtime() else { return };
    let backend = rt.start_process(id, parent, name);
    CURRENT.with(|c| {
        let mut current = c.borrow_mut();
        *current = Some(Process {
            id,
            name: name.to_owned(),
            next_object: 0,
            next_child: 0,
            eblock_depth: 0,
            seen_complete: FxHashMap::default(),
            sent_seqs: FxHashMap::default(),
            backend,
        });
        refresh_hot(current.as_ref());
    });
    expect(Op::plain(EventKind::Start, None));
    done(&Event::Start { parent });
}

/// Makes the current thread logical process `id` with `backend`, without logging a start:
/// re-executing an e-block instance starts a process in the middle of its log.
pub fn adopt_process(id: ProcessId, name: &str, backend: Box<dyn ProcessBackend>) {
    CURRENT.with(|c| {
        let mut current = c.borrow_mut();
        *current = Some(Process {
            id,
            name: name.to_owned(),
            next_object: 0,
            next_child: 0,
            eblock_depth: 1,
            seen_complete: FxHashMap::default(),
            sent_seqs: FxHashMap::default(),
            backend,
        });
        refresh_hot(current.as_ref());
    });
}

/// Releases the current thread's logical process without logging an end.
pub fn release_process() {
    CURRENT.with(|c| c.borrow_mut().take());
    refresh_hot(None);
}

/// How a logical process ended.
#[derive(Debug)]
pub enum Ending<'a> {
    /// Its body returned.
    Returned,
    /// Its body panicked.
    Panicked {
        /// The panic message.
        message: &'a str,
        /// Where.
        file: &'a str,
        /// Line.
        line: u32,
    },
}

/// The current thread's logical process ends with the panic it is unwinding from: the message
/// and place the panic hook kept, or a bare "panic" when it kept none.
pub fn leave_process_panicked() {
    let report = take_last_panic();
    let (message, file, line) = match &report {
        Some(r) => (r.message.as_str(), r.file.as_str(), r.line),
        None => ("panic", "", 0),
    };
    leave_process(&Ending::Panicked {
        message,
        file,
        line,
    });
}

/// Logs the end of the current logical process and releases it.
pub fn leave_process(ending: &Ending<'_>) {
    let event = match ending {
        Ending::Returned => Event::Exit,
        Ending::Panicked {
            message,
            file,
            line,
        } => Event::Panic {
            message: *message,
            file: *file,
            line: *line,
        },
    };
    expect(Op::plain(event.kind(), None));
    done(&event);
    let process = CURRENT.with(|c| c.borrow_mut().take());
    refresh_hot(None);
    if let Some(mut p) = process {
        p.backend.finish();
    }
}

/// The current logical process, if this thread is one.
#[inline]
pub fn current_process() -> Option<ProcessId> {
    if !active() {
        return None;
    }
    HOT.with(|h| h.get().id)
}

/// The current logical process's name, if this thread is one.
pub fn current_name() -> Option<String> {
    with_process(|p| p.name.clone())
}

/// Step 1 of an operation: what the log says it must do (`None`: whatever the run does).
///
/// A recording backend never expects anything, so recording does not ask it.
#[inline]
pub fn expect(op: Op) -> Option<Event> {
    match mode() {
        Mode::PassThrough => return None,
        Mode::Record => {
            // A live halt stops each process at its next operation.
            if halt::check_needed() {
                with_process(|p| p.backend.before_live_operation(op.kind));
            }
            return None;
        }
        Mode::Replay | Mode::Emulate => {}
    }
    let _replay_code = panic::ReplayCode::enter();
    loop {
        let logged = with_process(|p| p.backend.expect(op)).flatten();
        if !release_for_last_receiver(op, logged.as_ref()) {
            return logged;
        }
    }
}

/// Replay: when the backend answered `op` with the wake-up of a bounded channel's last
/// receiver, which the recorded run did here ([`ProcessBackend::expect`]), does it and says so.
#[inline]
fn release_for_last_receiver(op: Op, logged: Option<&Event>) -> bool {
    match logged {
        Some(Event::SemRelease { object, .. })
            if op.kind != EventKind::SemRelease || op.object != Some(*object) =>
        {
            crate::sync::bound::release_for_last_receiver(*object)
        }
        _ => false,
    }
}

/// Step 1 for an event that may come next: the logged event if it is `op`'s (replay).
#[inline]
pub fn expect_if(op: Op) -> Option<Event> {
    if matches!(mode(), Mode::PassThrough | Mode::Record) {
        return None;
    }
    let _replay_code = panic::ReplayCode::enter();
    with_process(|p| p.backend.expect_if(op)).flatten()
}

/// The current process's next logged event, not consumed (replay and emulation).
pub fn next_logged() -> Option<Event> {
    if matches!(mode(), Mode::PassThrough | Mode::Record) {
        return None;
    }
    let _replay_code = panic::ReplayCode::enter();
    with_process(|p| p.backend.next_logged()).flatten()
}

/// Step 3 of an operation: what it did.
#[inline]
pub fn done(event: &Event<Borrowed<'_>>) {
    if !active() {
        return;
    }
    if with_process(|p| p.backend.done(event)).is_none() {
        warn_unmanaged(event.kind().name());
    }
}

/// Recording, before a stream write to `socket` from stream offset `offset`: under a linked
/// breakpoint across nodes, the writer's stage goes to the other nodes first
/// (`halt::before_socket_write`); otherwise one relaxed load.
#[inline]
pub fn before_socket_write(socket: ObjectId, offset: u64) {
    if halt::socket_marks() {
        with_process(|p| p.backend.before_socket_write(socket, offset));
    }
}

/// Between steps 2 and 3 of an atomic access, recording: the access, made and not yet logged
/// ([`ProcessBackend::pend`]).
#[inline]
pub fn pend(access: &PendingAccess) {
    with_process(|p| p.backend.pend(access));
}

/// Whether the other processes run on their own ([`ProcessBackend::others_run_freely`]).
pub fn others_run_freely() -> bool {
    with_process(|p| p.backend.others_run_freely()).unwrap_or(true)
}

/// Step 2, when the operation is about to block on another process.
pub fn waiting_for(dependency: Dependency) {
    if active() {
        with_process(|p| p.backend.waiting_for(dependency));
    }
}

/// The program did something the log does not allow (replay): the backend reports it. This
/// process cannot go on, so it stops here for good.
pub fn diverged(detail: &str) -> ! {
    with_process(|p| p.backend.diverged(detail));
    loop {
        std::thread::park();
    }
}

/// Whether the operation should log the value it transfers: when payloads were asked for, or
/// inside an e-block, whose re-execution needs the values it read (Miller & Choi §5.5).
#[inline]
pub fn wants_payload() -> bool {
    match mode() {
        Mode::PassThrough => false,
        // A recording backend's answer is fixed for the run: read from the copy.
        Mode::Record => HOT.with(|h| h.get().payloads),
        // A replaying one answers for the event at hand.
        _ => with_process(|p| p.eblock_depth > 0 || p.backend.log_payloads()).unwrap_or(false),
    }
}

/// Whether the current process has seen the one-time initialization whose state is `object`
/// complete in `generation`, outside any e-block: then it need not look again, and does not
/// log looking. Both what it has seen and where e-blocks are are the same in record and
/// replay, so both skip the same looks; re-executing an e-block, where the process's past is
/// not run, every look is logged.
pub fn seen_complete(object: ObjectId, generation: u32) -> bool {
    with_process(|p| p.eblock_depth == 0 && p.seen_complete.get(&object) == Some(&generation))
        .unwrap_or(false)
}

/// The current process's bit in a one-time initialization's record of who has seen it
/// complete, outside any e-block ([`seen_complete`] says why), if it has one: processes below
/// 64 do.
#[inline]
pub fn seen_bit() -> Option<u64> {
    let hot = HOT.with(|h| h.get());
    match hot.id {
        Some(ProcessId(k)) if k < 64 && !hot.in_eblock => Some(1 << k),
        _ => None,
    }
}

/// Notes that the current process saw the one-time initialization `object` complete in
/// `generation`.
pub fn note_complete(object: ObjectId, generation: u32) {
    with_process(|p| p.seen_complete.insert(object, generation));
}

/// The sequence number of the current process's next message on `channel`: the one after its
/// last while that one's run of `run` numbers lasts, else the first of a run `reserve` takes
/// from the channel. A thread outside ppd takes a run per message.
pub fn next_message_seq(channel: ObjectId, run: u64, reserve: impl Fn() -> u64) -> u64 {
    with_process(|p| {
        let last = p.sent_seqs.entry(channel).or_insert(0);
        *last = if *last % run == 0 {
            reserve()
        } else {
            *last + 1
        };
        *last
    })
    .unwrap_or_else(reserve)
}

/// Gives the next object id of the current process and logs the creation.
pub fn create(
    kind: ObjectKind,
    init: u64,
    name: Option<&'static str>,
    site: &'static Location<'static>,
) -> ObjectId {
    if !active() {
        return ObjectId(0);
    }
    let name = name.or_else(|| binding::name_at(site));
    let id = with_process(|p| {
        let id = ObjectId::new(p.id, p.next_object);
        p.next_object += 1;
        id
    });
    let Some(object) = id else {
        warn_unmanaged("creating a shared object");
        static UNMANAGED: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        return ObjectId::new(
            ProcessId(u32::MAX),
            UNMANAGED.fetch_add(1, Ordering::Relaxed),
        );
    };
    // Replay checks the computed id against the log; emulation, which starts a process in the
    // middle of its run, takes the logged one.
    let object = match expect(Op::on(EventKind::Create, object, Some(site))) {
        Some(Event::Create { object: logged, .. }) if mode() == Mode::Emulate => logged,
        _ => object,
    };
    done(&Event::Create {
        object,
        kind,
        init,
        name,
        site: Some(site),
    });
    object
}

/// The next object id of the current process, for an object whose creation is logged by its
/// own event (a socket's `NetOpen`) rather than a `Create`. `None` outside a logical process
/// (and in pass-through mode).
pub fn allocate_object() -> Option<ObjectId> {
    if !active() {
        return None;
    }
    with_process(|p| {
        let id = ObjectId::new(p.id, p.next_object);
        p.next_object += 1;
        id
    })
}

/// The name and ordinal a child of the current process gets by default.
pub fn next_child_name() -> Option<String> {
    with_process(|p| {
        p.next_child += 1;
        format!("{}.{}", p.name, p.next_child)
    })
}

/// Enters an e-block: while inside, transferred values are logged.
pub fn enter_eblock() {
    CURRENT.with(|c| {
        let mut current = c.borrow_mut();
        if let Some(p) = current.as_mut() {
            p.eblock_depth += 1;
        }
        refresh_hot(current.as_ref());
    });
}

/// Leaves an e-block.
pub fn leave_eblock() {
    CURRENT.with(|c| {
        let mut current = c.borrow_mut();
        if let Some(p) = current.as_mut() {
            p.eblock_depth = p.eblock_depth.saturating_sub(1);
        }
        refresh_hot(current.as_ref());
    });
}

/// Ends the run: `main` returned `exit_code`, or panicked.
pub fn finish(exit_code: i32, panicked: bool) {
    if let Some(rt) = runtime() {
        rt.finish(exit_code, panicked);
    }
}

/// Set once the run has been finished, so late threads do not try again.
pub(crate) static FINISHED: AtomicBool = AtomicBool::new(false);

pub use panic::{ReplayCode, take_last_panic};
