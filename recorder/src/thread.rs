//! Logical processes, mirroring `std::thread`.
//!
//! Every thread spawned here is a logical process: it has an id, a name and its own log, and it
//! may spawn processes of its own. The parent logs `Spawn`, the child `Start` … `Exit` (or
//! `Panic`), and a `join` logs `Join`, so the happened-before edges of process creation and
//! termination are in the recording.

use std::io;
use std::panic::{AssertUnwindSafe, Location, catch_unwind, resume_unwind};
use std::time::Duration;

use ppd_formats::{Event, EventKind, ProcessId};

use crate::runtime::backend::{Dependency, Op};
use crate::runtime::{self, Ending};

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
        let site = Location::caller();
        let mut std_builder = std::thread::Builder::new();
        if let Some(size) = self.stack_size {
            std_builder = std_builder.stack_size(size);
        }
        let parent = runtime::current_process();
        let (Some(parent), Some(rt)) = (parent, runtime::runtime()) else {
            if let Some(name) = self.name {
                std_builder = std_builder.name(name);
            }
            return Ok(JoinHandle {
                inner: std_builder.spawn(f)?,
                process: None,
            });
        };
        let default_name = runtime::next_child_name();
        let name = self
            .name
            .or(default_name)
            .unwrap_or_else(|| "process".into());
        let expected = runtime::expect(Op::plain(EventKind::Spawn, Some(site)));
        let child = match expected {
            Some(Event::Spawn { child, .. }) => child,
            _ => rt.allocate_process(),
        };
        runtime::done(&Event::Spawn {
            child,
            site: Some(site),
        });
        let child_name = name.clone();
        let inner = std_builder.name(name).spawn(move || {
            runtime::enter_process(child, Some(parent), &child_name);
            let result = catch_unwind(AssertUnwindSafe(f));
            match result {
                Ok(value) => {
                    runtime::leave_process(&Ending::Returned);
                    value
                }
                Err(payload) => {
                    runtime::leave_process_panicked();
                    resume_unwind(payload)
                }
            }
        })?;
        Ok(JoinHandle {
            inner,
            process: Some(child),
        })
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
        let site = Location::caller();
        let Some(child) = self.process else {
            return self.inner.join();
        };
        let replayed = runtime::expect(Op::plain(EventKind::Join, Some(site)));
        if !self.inner.is_finished() {
            // Recorded before waiting, so a run that hangs here says so at the end of its log.
            if replayed.is_none() {
                runtime::done(&Event::JoinBlocked {
                    child,
                    site: Some(site),
                });
            }
            runtime::waiting_for(Dependency::Exit { child });
        }
        let result = self.inner.join();
        runtime::done(&Event::Join {
            child,
            site: Some(site),
        });
        result
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

    /// Whether the process has ended.
    ///
    /// ```
    /// let h = ppd::thread::spawn(|| ());
    /// while !h.is_finished() { std::thread::yield_now(); }
    /// h.join().unwrap();
    /// ```
    pub fn is_finished(&self) -> bool {
        self.inner.is_finished()
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
    match runtime::mode() {
        // Replay and re-execution do not wait: the log already says what came next.
        runtime::backend::Mode::Replay | runtime::backend::Mode::Emulate => {}
        mode => {
            // Logged before waiting, so that a run killed during the sleep says where each
            // process was. A thread ppd does not manage has no log to say it in.
            if mode == runtime::backend::Mode::Record && runtime::current_process().is_some() {
                runtime::done(&Event::Sleep {
                    nanos: u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX),
                    site: Some(Location::caller()),
                });
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
