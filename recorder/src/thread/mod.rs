//! Logical processes, mirroring `std::thread`.
//!
//! Every thread spawned here is a logical process: it has an id, a name and its own log, and it
//! may spawn processes of its own. The parent logs `Spawn`, the child `Start` … `Exit` (or
//! `Panic`), and a `join` logs `Join`, so the happened-before edges of process creation and
//! termination are in the recording.

pub mod crossbeam_scope;
mod current;
pub(crate) mod park;
mod scope;

use std::io;
use std::num::NonZeroUsize;
use std::panic::{AssertUnwindSafe, Location, catch_unwind, resume_unwind};
use std::sync::Arc;
use std::time::Duration;

use ppd_formats::event::Question;
use ppd_formats::{Event, EventKind, ProcessId};

pub use current::{Thread, ThreadId, current, park, park_timeout};
pub use scope::{Scope, ScopedJoinHandle, scope};
pub use std::thread::{Result, panicking};

use crate::runtime::backend::{Dependency, Op};
use crate::runtime::{self, Ending};
use park::Parker;

/// Configures a new logical process, like `std::thread::Builder`.
///
/// ```
/// let handle = ppd::thread::Builder::new()
///     .name("teller".into())
///     .spawn(|| 40 + 2)
///     .unwrap();
/// assert_eq!(handle.join().unwrap(), 42);
/// ```
#[derive(Debug, Default)]
pub struct Builder {
    name: Option<String>,
    stack_size: Option<usize>,
}

impl Builder {
    /// A builder with no name and the default stack size.
    ///
    /// ```
    /// let h = ppd::thread::Builder::new().spawn(|| ()).unwrap();
    /// h.join().unwrap();
    /// ```
    pub fn new() -> Builder {
        Builder::default()
    }

    /// Names the process; predicates and reports refer to it by this name.
    ///
    /// ```
    /// let h = ppd::thread::Builder::new().name("auditor".into()).spawn(|| ()).unwrap();
    /// h.join().unwrap();
    /// ```
    pub fn name(mut self, name: String) -> Builder {
        self.name = Some(name);
        self
    }

    /// Sets the thread's stack size in bytes.
    ///
    /// ```
    /// let h = ppd::thread::Builder::new().stack_size(1 << 20).spawn(|| ()).unwrap();
    /// h.join().unwrap();
    /// ```
    pub fn stack_size(mut self, size: usize) -> Builder {
        self.stack_size = Some(size);
        self
    }

    /// Spawns the process. Without a name it is called `<parent>.<n>`, for the parent's n-th
    /// child.
    ///
    /// ```
    /// let h = ppd::thread::Builder::new().name("worker".into()).spawn(|| 6 * 7).unwrap();
    /// assert_eq!(h.join().unwrap(), 42);
    /// ```
    #[track_caller]
    pub fn spawn<F, T>(self, f: F) -> io::Result<JoinHandle<T>>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        let (std_builder, child) = self.launch(Location::caller());
        let process = child.as_ref().map(|c| c.id);
        let parker = child.as_ref().map(|c| Arc::clone(&c.parker));
        let inner = match child {
            Some(child) => std_builder.spawn(move || child.run(f))?,
            None => std_builder.spawn(f)?,
        };
        let thread = Thread::new(inner.thread().clone(), process, parker);
        Ok(JoinHandle {
            inner,
            process,
            thread,
        })
    }

    /// Spawns a logical process in `scope`, like `std::thread::Builder::spawn_scoped`.
    ///
    /// ```
    /// let mut n = 0;
    /// ppd::thread::scope(|s| {
    ///     ppd::thread::Builder::new()
    ///         .name("adder".into())
    ///         .spawn_scoped(s, || n += 1)
    ///         .unwrap();
    /// });
    /// assert_eq!(n, 1);
    /// ```
    #[track_caller]
    pub fn spawn_scoped<'scope, 'env, F, T>(
        self,
        scope: &'scope Scope<'scope, 'env>,
        f: F,
    ) -> io::Result<ScopedJoinHandle<'scope, T>>
    where
        F: FnOnce() -> T + Send + 'scope,
        T: Send + 'scope,
    {
        let (std_builder, child) = self.launch(Location::caller());
        scope.spawn_with(std_builder, child, f)
    }

    /// The std builder to start the thread with and, under ppd, the logical process it will
    /// be: the parent logs `Spawn` here, before the thread exists.
    fn launch(self, site: &'static Location<'static>) -> (std::thread::Builder, Option<Child>) {
        let mut std_builder = std::thread::Builder::new();
        if let Some(size) = self.stack_size {
            std_builder = std_builder.stack_size(size);
        }
        let (Some(parent), Some(rt)) = (runtime::current_process(), runtime::runtime()) else {
            if let Some(name) = self.name {
                std_builder = std_builder.name(name);
            }
            return (std_builder, None);
        };
        let default_name = runtime::next_child_name();
        let name = self
            .name
            .or(default_name)
            .unwrap_or_else(|| "process".into());
        let expected = runtime::expect(Op::plain(EventKind::Spawn, Some(site)));
        let id = match expected {
            Some(Event::Spawn { child, .. }) => child,
            _ => rt.allocate_process(),
        };
        rt.prepare_process(id, parent, &name);
        runtime::done(&Event::Spawn {
            child: id,
            site: Some(site),
        });
        let child = Child {
            id,
            parent,
            name: name.clone(),
            parker: Parker::new(id),
        };
        (std_builder.name(name), Some(child))
    }
}

/// A logical process about to start on its thread.
struct Child {
    id: ProcessId,
    parent: ProcessId,
    name: String,
    parker: Arc<Parker>,
}

impl Child {
    /// Runs `f` as this process: logs its start, then its exit or panic.
    fn run<T>(self, f: impl FnOnce() -> T) -> T {
        park::adopt(self.parker);
        runtime::enter_process(self.id, Some(self.parent), &self.name);
        match catch_unwind(AssertUnwindSafe(f)) {
            Ok(value) => {
                runtime::leave_process(&Ending::Returned);
                value
            }
            Err(payload) => {
                runtime::leave_process_panicked();
                resume_unwind(payload)
            }
        }
    }
}

/// Joins `child` through the runtime: logs `JoinBlocked` before waiting on a child that has
/// not ended (`finished` says), waits (`join`), then logs `Join`.
fn join_logged<R>(
    child: ProcessId,
    site: &'static Location<'static>,
    finished: bool,
    join: impl FnOnce() -> R,
) -> R {
    let replayed = runtime::expect(Op::plain(EventKind::Join, Some(site)));
    if !finished {
        // Recorded before waiting, so a run that hangs here says so at the end of its log.
        if replayed.is_none() {
            runtime::done(&Event::JoinBlocked {
                child,
                site: Some(site),
            });
        }
        runtime::waiting_for(Dependency::Exit { child });
    }
    let result = join();
    runtime::done(&Event::Join {
        child,
        site: Some(site),
    });
    result
}

/// Answers `question` through the runtime: the live answer when recording (logged), the logged
/// one in replay.
pub(crate) fn answer(
    question: Question,
    site: &'static Location<'static>,
    live: impl FnOnce() -> u64,
) -> u64 {
    if runtime::current_process().is_none() {
        return live();
    }
    let value = match runtime::expect(Op::plain(EventKind::Answer, Some(site))) {
        Some(Event::Answer {
            question: q, value, ..
        }) if q == question => value,
        _ => live(),
    };
    runtime::done(&Event::Answer {
        question,
        value,
        site: Some(site),
    });
    value
}

/// How many threads the machine runs at once, like `std::thread::available_parallelism`.
/// Logged: replay gets the recorded machine's answer.
///
/// ```
/// assert!(ppd::thread::available_parallelism().unwrap().get() >= 1);
/// ```
#[track_caller]
pub fn available_parallelism() -> io::Result<NonZeroUsize> {
    let mut error = None;
    let count = answer(Question::AvailableParallelism, Location::caller(), || {
        match std::thread::available_parallelism() {
            Ok(n) => n.get() as u64,
            Err(e) => {
                error = Some(e);
                0
            }
        }
    });
    match NonZeroUsize::new(count as usize) {
        Some(n) => Ok(n),
        None => Err(error.unwrap_or_else(|| {
            io::Error::other("available parallelism was unknown in the recorded run")
        })),
    }
}

/// Spawns a logical process, like `std::thread::spawn`.
///
/// ```
/// let h = ppd::thread::spawn(|| "done");
/// assert_eq!(h.join().unwrap(), "done");
/// ```
///
/// # Panics
///
/// Panics if the OS cannot create a thread, as `std::thread::spawn` does.
#[track_caller]
pub fn spawn<F, T>(f: F) -> JoinHandle<T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    Builder::new().spawn(f).expect("failed to spawn thread")
}

/// Owned permission to join a logical process, like `std::thread::JoinHandle`.
///
/// ```
/// let h = ppd::thread::spawn(|| 7);
/// assert_eq!(h.join().unwrap(), 7);
/// ```
#[derive(Debug)]
pub struct JoinHandle<T> {
    inner: std::thread::JoinHandle<T>,
    process: Option<ProcessId>,
    thread: Thread,
}

impl<T> JoinHandle<T> {
    /// Waits for the process to end; `Err` carries its panic, as in `std`.
    ///
    /// ```
    /// let h = ppd::thread::spawn(|| panic!("lost"));
    /// assert!(h.join().is_err());
    /// ```
    #[track_caller]
    pub fn join(self) -> std::thread::Result<T> {
        let Some(child) = self.process else {
            return self.inner.join();
        };
        let finished = self.inner.is_finished();
        join_logged(child, Location::caller(), finished, || self.inner.join())
    }

    /// The thread, like `std::thread::JoinHandle::thread`.
    ///
    /// ```
    /// let h = ppd::thread::spawn(|| ppd::thread::park());
    /// h.thread().unpark();
    /// h.join().unwrap();
    /// ```
    pub fn thread(&self) -> &Thread {
        &self.thread
    }

    /// The process's id, when it runs under ppd.
    ///
    /// ```
    /// let h = ppd::thread::spawn(|| ());
    /// let _id = h.process();
    /// h.join().unwrap();
    /// ```
    pub fn process(&self) -> Option<ProcessId> {
        self.process
    }

    /// Whether the process has ended. The answer depends on timing, so it is logged and
    /// replay gives the recorded one.
    ///
    /// ```
    /// let h = ppd::thread::spawn(|| ());
    /// while !h.is_finished() { std::thread::yield_now(); }
    /// h.join().unwrap();
    /// ```
    #[track_caller]
    pub fn is_finished(&self) -> bool {
        if self.process.is_none() {
            return self.inner.is_finished();
        }
        answer(Question::IsFinished, Location::caller(), || {
            u64::from(self.inner.is_finished())
        }) == 1
    }
}

/// The id of the logical process running this code, when under ppd.
///
/// ```
/// // Outside `ppd record` there are no logical processes.
/// assert_eq!(ppd::thread::current_process(), None);
/// ```
pub fn current_process() -> Option<ProcessId> {
    runtime::current_process()
}

/// The name of the logical process running this code, when under ppd.
///
/// ```
/// assert_eq!(ppd::thread::current_name(), None);
/// ```
pub fn current_name() -> Option<String> {
    runtime::current_name()
}

/// Puts the process to sleep. Replay skips sleeps: their effect on the run is in the log.
///
/// ```
/// ppd::thread::sleep(std::time::Duration::from_millis(1));
/// ```
#[track_caller]
pub fn sleep(duration: Duration) {
    // Taken here: inside the closure, `Location::caller()` would name the closure.
    let site = Location::caller();
    let logged = || Event::Sleep {
        nanos: u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX),
        site: Some(site),
    };
    match runtime::mode() {
        // Re-execution does not wait: the log already says what came next.
        runtime::backend::Mode::Emulate => {}
        // Nor does replay, but it takes the sleep's event here, in its turn, so that what the
        // process does next (a drop's conditional release, say) finds its own event next.
        runtime::backend::Mode::Replay => {
            if runtime::current_process().is_some() {
                runtime::expect(Op::plain(EventKind::Sleep, Some(site)));
                runtime::done(&logged());
            }
        }
        mode => {
            // Logged before waiting, so that a run killed during the sleep says where each
            // process was. A thread ppd does not manage has no log to say it in.
            if mode == runtime::backend::Mode::Record && runtime::current_process().is_some() {
                runtime::done(&logged());
            }
            std::thread::sleep(duration);
        }
    }
}

/// Yields the processor, like `std::thread::yield_now`.
///
/// ```
/// ppd::thread::yield_now();
/// ```
pub fn yield_now() {
    std::thread::yield_now();
}
