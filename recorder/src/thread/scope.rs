//! Scoped threads, mirroring `std::thread::scope`.
//!
//! A scoped thread is a logical process like a spawned one: its parent logs `Spawn`, it logs
//! `Start` … `Exit`. std joins every scoped thread the program did not join itself when the
//! scope ends; ppd logs a `Join` for each of those in the process that called `scope`, in
//! process-id order (the same in record and replay), so what the threads did happens before
//! what follows the scope, as it does in std.

use std::collections::BTreeMap;
use std::io;
use std::panic::{AssertUnwindSafe, Location, catch_unwind, resume_unwind};
use std::sync::{Arc, Mutex, MutexGuard};

use ppd_formats::ProcessId;

use super::{Builder, Child, Thread, join_logged};
use crate::runtime;

/// A scope to spawn scoped threads in, like `std::thread::Scope`.
///
/// ```
/// let data = vec![1, 2, 3];
/// let sum = ppd::thread::scope(|s| {
///     let h = s.spawn(|| data.iter().sum::<i32>());
///     h.join().unwrap()
/// });
/// assert_eq!(sum, 6);
/// ```
#[repr(transparent)]
pub struct Scope<'scope, 'env> {
    inner: std::thread::Scope<'scope, 'env>,
}

impl std::fmt::Debug for Scope<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.inner.fmt(f)
    }
}

/// The logical processes spawned in each live scope and not joined yet, by the address of the
/// scope (a scope is shared by all its threads, and any of them may spawn in it).
fn unjoined() -> MutexGuard<'static, BTreeMap<usize, Vec<ProcessId>>> {
    static UNJOINED: Mutex<BTreeMap<usize, Vec<ProcessId>>> = Mutex::new(BTreeMap::new());
    UNJOINED.lock().unwrap_or_else(|p| p.into_inner())
}

impl<'scope, 'env> Scope<'scope, 'env> {
    fn wrap<'a>(inner: &'a std::thread::Scope<'scope, 'env>) -> &'a Scope<'scope, 'env> {
        // SAFETY: `Scope` is `repr(transparent)` over `std::thread::Scope`, so the two have the
        // same layout and a reference to one is a valid reference to the other.
        unsafe {
            &*(inner as *const std::thread::Scope<'scope, 'env>).cast::<Scope<'scope, 'env>>()
        }
    }

    fn key(&self) -> usize {
        &self.inner as *const std::thread::Scope<'scope, 'env> as usize
    }

    /// Spawns a scoped logical process, like `std::thread::Scope::spawn`.
    ///
    /// ```
    /// let mut hits = 0;
    /// ppd::thread::scope(|s| {
    ///     s.spawn(|| hits += 1);
    /// });
    /// assert_eq!(hits, 1);
    /// ```
    ///
    /// # Panics
    ///
    /// Panics if the OS cannot create a thread, as std's does.
    #[track_caller]
    pub fn spawn<F, T>(&'scope self, f: F) -> ScopedJoinHandle<'scope, T>
    where
        F: FnOnce() -> T + Send + 'scope,
        T: Send + 'scope,
    {
        let (std_builder, child) = Builder::new().launch(Location::caller());
        self.spawn_with(std_builder, child, f)
            .expect("failed to spawn thread")
    }

    pub(super) fn spawn_with<F, T>(
        &'scope self,
        std_builder: std::thread::Builder,
        child: Option<Child>,
        f: F,
    ) -> io::Result<ScopedJoinHandle<'scope, T>>
    where
        F: FnOnce() -> T + Send + 'scope,
        T: Send + 'scope,
    {
        let process = child.as_ref().map(|c| c.id);
        let parker = child.as_ref().map(|c| Arc::clone(&c.parker));
        let inner = match child {
            Some(child) => std_builder.spawn_scoped(&self.inner, move || child.run(f))?,
            None => std_builder.spawn_scoped(&self.inner, f)?,
        };
        if let Some(p) = process {
            unjoined().entry(self.key()).or_default().push(p);
        }
        let thread = Thread::new(inner.thread().clone(), process, parker);
        Ok(ScopedJoinHandle {
            inner,
            process,
            scope: self.key(),
            thread,
        })
    }
}

/// Owned permission to join a scoped logical process, like `std::thread::ScopedJoinHandle`.
///
/// ```
/// ppd::thread::scope(|s| {
///     let h = s.spawn(|| 7);
///     assert_eq!(h.join().unwrap(), 7);
/// });
/// ```
#[derive(Debug)]
pub struct ScopedJoinHandle<'scope, T> {
    inner: std::thread::ScopedJoinHandle<'scope, T>,
    process: Option<ProcessId>,
    scope: usize,
    thread: Thread,
}

impl<T> ScopedJoinHandle<'_, T> {
    /// Waits for the process to end; `Err` carries its panic, as in std.
    ///
    /// ```
    /// ppd::thread::scope(|s| {
    ///     let h = s.spawn(|| panic!("lost"));
    ///     assert!(h.join().is_err());
    /// });
    /// ```
    #[track_caller]
    pub fn join(self) -> std::thread::Result<T> {
        let Some(child) = self.process else {
            return self.inner.join();
        };
        if let Some(children) = unjoined().get_mut(&self.scope) {
            children.retain(|&c| c != child);
        }
        let finished = self.inner.is_finished();
        join_logged(child, Location::caller(), finished, || self.inner.join())
    }

    /// The thread, like std's `ScopedJoinHandle::thread`.
    ///
    /// ```
    /// ppd::thread::scope(|s| {
    ///     let h = s.spawn(ppd::thread::park);
    ///     h.thread().unpark();
    /// });
    /// ```
    pub fn thread(&self) -> &Thread {
        &self.thread
    }

    /// Whether the process has ended; logged, like [`JoinHandle::is_finished`].
    ///
    /// [`JoinHandle::is_finished`]: super::JoinHandle::is_finished
    ///
    /// ```
    /// ppd::thread::scope(|s| {
    ///     let h = s.spawn(|| ());
    ///     while !h.is_finished() { std::thread::yield_now(); }
    /// });
    /// ```
    #[track_caller]
    pub fn is_finished(&self) -> bool {
        if self.process.is_none() {
            return self.inner.is_finished();
        }
        super::answer(
            ppd_formats::event::Question::IsFinished,
            Location::caller(),
            || u64::from(self.inner.is_finished()),
        ) == 1
    }
}

/// Runs `f` with a scope whose threads may borrow from the caller, and joins them all before
/// returning, like `std::thread::scope`.
///
/// ```
/// let mut a = vec![1, 2, 3];
/// let mut x = 0;
/// ppd::thread::scope(|s| {
///     s.spawn(|| a.push(4));
///     s.spawn(|| x += 1);
/// });
/// assert_eq!((a.len(), x), (4, 1));
/// ```
///
/// # Panics
///
/// Panics if a thread the program did not join panicked, after joining them all, as std does.
#[track_caller]
pub fn scope<'env, F, T>(f: F) -> T
where
    F: for<'scope> FnOnce(&'scope Scope<'scope, 'env>) -> T,
{
    let site = Location::caller();
    if runtime::current_process().is_none() {
        return std::thread::scope(|s| f(Scope::wrap(s)));
    }
    let mut key = 0;
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        std::thread::scope(|s| {
            let scope = Scope::wrap(s);
            key = scope.key();
            f(scope)
        })
    }));
    // Every scoped thread has ended: std joined the rest. Log those joins.
    let mut rest = unjoined().remove(&key).unwrap_or_default();
    rest.sort();
    for child in rest {
        join_logged(child, site, true, || ());
    }
    match outcome {
        Ok(value) => value,
        Err(payload) => resume_unwind(payload),
    }
}
