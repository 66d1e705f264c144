//! Scoped threads with crossbeam-utils' interface (`crossbeam_utils::thread::scope`), over
//! ppd's scoped threads: a program written against crossbeam's scope moves over by its `use`
//! line, and each thread it spawns is a logical process.
//!
//! Two differences from crossbeam-utils: [`Scope`] has std's two lifetimes (code that names the
//! type, rather than taking it as a closure argument, writes `Scope<'_, 'env>`), and when a
//! thread that was not joined panicked, the error [`scope`] returns carries std's "a scoped
//! thread panicked" panic rather than the list of the threads' panics.

use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};

use super::scope as std_like;

/// A scope to spawn threads in, as `crossbeam_utils::thread::Scope`: the closure a thread runs
/// is given the scope, to spawn more.
#[derive(Clone, Copy, Debug)]
pub struct Scope<'scope, 'env> {
    inner: &'scope std_like::Scope<'scope, 'env>,
}

/// The handle of a thread spawned in a [`Scope`].
pub type ScopedJoinHandle<'scope, T> = std_like::ScopedJoinHandle<'scope, T>;

impl<'scope, 'env> Scope<'scope, 'env> {
    /// Spawns a scoped logical process running `f`, which is given the scope, as crossbeam's
    /// `Scope::spawn`.
    ///
    /// ```
    /// let mut hits = 0;
    /// ppd::utils::thread::scope(|s| {
    ///     s.spawn(|_| hits += 1);
    /// })
    /// .unwrap();
    /// assert_eq!(hits, 1);
    /// ```
    ///
    /// # Panics
    ///
    /// Panics if the OS cannot create a thread.
    #[track_caller]
    pub fn spawn<F, T>(&self, f: F) -> ScopedJoinHandle<'scope, T>
    where
        F: FnOnce(&Scope<'scope, 'env>) -> T + Send + 'scope,
        T: Send + 'scope,
    {
        let inner = self.inner;
        inner.spawn(move || f(&Scope { inner }))
    }
}

/// Runs `f` with a scope whose threads may borrow from the caller and joins them all, as
/// `crossbeam_utils::thread::scope`: `Err` when a thread that was not joined panicked; a panic
/// of `f` itself goes on.
///
/// ```
/// let words = ["a", "bc"];
/// let total = ppd::utils::thread::scope(|s| {
///     let h = s.spawn(|_| words.iter().map(|w| w.len()).sum::<usize>());
///     h.join().unwrap()
/// })
/// .unwrap();
/// assert_eq!(total, 3);
/// ```
#[track_caller]
pub fn scope<'env, F, R>(f: F) -> std::thread::Result<R>
where
    F: for<'scope> FnOnce(&Scope<'scope, 'env>) -> R,
{
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        std_like::scope(|inner| catch_unwind(AssertUnwindSafe(|| f(&Scope { inner }))))
    }));
    match outcome {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(body_panic)) => resume_unwind(body_panic),
        Err(thread_panic) => Err(thread_panic),
    }
}
