//! Handles to threads, mirroring `std::thread::{current, Thread, ThreadId}`.
//!
//! Under ppd a thread's id is its logical process's id, which the recording fixes (a child's
//! id comes from its parent's `Spawn` event), so ids compare, hash and print the same in record
//! and replay; std's `ThreadId`s are handed out in the order threads happen to start.

use std::fmt;
use std::sync::Arc;

use ppd_formats::ProcessId;

use super::park::{self, Parker};
use crate::runtime;

/// A handle to a thread, like `std::thread::Thread`.
///
/// ```
/// let me = ppd::thread::current();
/// let id = me.id();
/// assert_eq!(ppd::thread::current().id(), id);
/// ```
#[derive(Clone, Debug)]
pub struct Thread {
    inner: std::thread::Thread,
    process: Option<ProcessId>,
    parker: Option<Arc<Parker>>,
}

impl Thread {
    pub(crate) fn new(
        inner: std::thread::Thread,
        process: Option<ProcessId>,
        parker: Option<Arc<Parker>>,
    ) -> Thread {
        Thread {
            inner,
            process,
            parker,
        }
    }

    /// The thread's id: its logical process under ppd, std's id outside.
    ///
    /// ```
    /// let h = ppd::thread::spawn(|| ppd::thread::current().id());
    /// let id = h.thread().id();
    /// assert_eq!(h.join().unwrap(), id);
    /// ```
    pub fn id(&self) -> ThreadId {
        match self.process {
            Some(p) => ThreadId(Id::Process(p)),
            None => ThreadId(Id::Os(self.inner.id())),
        }
    }

    /// The thread's name (a logical process's name under ppd).
    ///
    /// ```
    /// let h = ppd::thread::Builder::new()
    ///     .name("worker".into())
    ///     .spawn(|| ppd::thread::current().name().map(str::to_owned))
    ///     .unwrap();
    /// assert_eq!(h.join().unwrap().as_deref(), Some("worker"));
    /// ```
    pub fn name(&self) -> Option<&str> {
        self.inner.name()
    }

    /// Makes the thread's park token available, waking it if it is parked. Under ppd the
    /// unpark happens before the `park` that takes the token.
    ///
    /// ```
    /// let t = ppd::thread::current();
    /// t.unpark();
    /// ppd::thread::park(); // returns at once: the token was there
    /// ```
    #[track_caller]
    pub fn unpark(&self) {
        if let Some(parker) = &self.parker {
            parker.unpark();
        }
        self.inner.unpark();
    }
}

/// A thread's identifier, like `std::thread::ThreadId`; stable between record and replay.
///
/// ```
/// let a = ppd::thread::current().id();
/// let b = ppd::thread::spawn(|| ppd::thread::current().id()).join().unwrap();
/// assert_ne!(a, b);
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct ThreadId(Id);

#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Id {
    Process(ProcessId),
    Os(std::thread::ThreadId),
}

impl fmt::Debug for ThreadId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Id::Process(p) => write!(f, "ThreadId({p})"),
            Id::Os(id) => id.fmt(f),
        }
    }
}

/// A handle to the calling thread, like `std::thread::current`.
///
/// ```
/// assert_eq!(ppd::thread::current().name(), Some("main"));
/// ```
pub fn current() -> Thread {
    Thread::new(
        std::thread::current(),
        runtime::current_process(),
        park::own(),
    )
}

/// Blocks until the current thread's token is available, like `std::thread::park`; may return
/// spuriously, as std's does. Under ppd how each park ended is logged, and replay ends it the
/// same way.
///
/// ```
/// ppd::thread::current().unpark();
/// ppd::thread::park();
/// ```
#[track_caller]
pub fn park() {
    park::park(None, None, std::panic::Location::caller());
}

/// Like [`park`], for at most `dur`, like `std::thread::park_timeout`.
///
/// ```
/// ppd::thread::park_timeout(std::time::Duration::from_millis(1));
/// ```
#[track_caller]
pub fn park_timeout(dur: std::time::Duration) {
    park::park(Some(dur), None, std::panic::Location::caller());
}
