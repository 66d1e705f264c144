//! A reader-writer lock mirroring `std::sync::RwLock`, whose acquisitions and releases are
//! versioned.
//!
//! Instant replay (LeBlanc & Mellor-Crummey) versions every access of a shared object; ppd's
//! mutex versions its acquisitions only, because the next acquisition cannot happen before the
//! release. Readers hold the lock together, so a writer's turn depends on every reader's
//! release: here acquisitions *and* releases share one version sequence, each logged while the
//! lock is held, and replay makes them in that order. Which operation came first among
//! concurrent readers is logged but orders nothing in the happened-before
//! (`ppd_formats::order`: a read takes the last write release, a write every release since).
//! `try_read`/`try_write` log their answer as an `Outcome`, as `Mutex::try_lock` does. Inside an
//! e-block, the guarded value is logged at acquisition when it is serde (`super::values`).

use std::fmt;
use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut};
use std::panic::Location;
use std::sync::{LockResult, PoisonError, TryLockError, TryLockResult};

use ppd_formats::event::{ObjectKind, RwMode};
use ppd_formats::{Event, EventKind};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::lock_core::{self, LockKind};
use super::object::ObjectMeta;
use super::values::{Carries, Values};
use crate::runtime::backend::{Mode, Op, expected};
use crate::runtime::{self};

/// A reader-writer lock, like `std::sync::RwLock`, for any `T: Send + Sync`.
///
/// ```
/// let lock = ppd::sync::RwLock::new(5);
/// {
///     let a = lock.read().unwrap();
///     let b = lock.read().unwrap();
///     assert_eq!(*a + *b, 10);
/// }
/// *lock.write().unwrap() += 1;
/// assert_eq!(*lock.read().unwrap(), 6);
/// ```
pub struct RwLock<T> {
    meta: ObjectMeta,
    values: Values<T>,
    /// `None` only in a lock rebuilt from an e-block's prelog before its first acquisition
    /// gives it the logged value.
    inner: std::sync::RwLock<Option<T>>,
}

impl<T: fmt::Debug> fmt::Debug for RwLock<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RwLock")
            .field("object", &self.meta.known_id())
            .field("inner", &self.inner)
            .finish()
    }
}

impl<T> crate::runtime::binding::LazyObject for RwLock<T> {
    fn register_now(&self) {
        self.meta.register_now();
    }
}

impl<T: Default> Default for RwLock<T> {
    #[track_caller]
    fn default() -> Self {
        RwLock::new(T::default())
    }
}

impl<T> From<T> for RwLock<T> {
    /// A new unlocked lock holding `value`, as std's.
    #[track_caller]
    fn from(value: T) -> Self {
        RwLock::new(value)
    }
}

impl<T> RwLock<T> {
    /// A new unlocked lock holding `value`.
    #[track_caller]
    pub const fn new(value: T) -> RwLock<T> {
        RwLock::with_meta(
            ObjectMeta::new(ObjectKind::RwLock, 0, None, Location::caller()),
            Some(value),
        )
    }

    /// A new lock with a name that reports use.
    ///
    /// ```
    /// let config = ppd::sync::RwLock::named("config", vec![1, 2]);
    /// assert_eq!(config.read().unwrap().len(), 2);
    /// ```
    #[track_caller]
    pub const fn named(name: &'static str, value: T) -> RwLock<T> {
        RwLock::with_meta(
            ObjectMeta::new(ObjectKind::RwLock, 0, Some(name), Location::caller()),
            Some(value),
        )
    }

    const fn with_meta(meta: ObjectMeta, value: Option<T>) -> RwLock<T> {
        RwLock {
            meta,
            values: Values::new(),
            inner: std::sync::RwLock::new(value),
        }
    }

    /// Mutable access without locking: the borrow proves nobody else can lock it.
    ///
    /// ```
    /// let mut lock = ppd::sync::RwLock::new(1);
    /// *lock.get_mut().unwrap() = 2;
    /// assert_eq!(lock.into_inner().unwrap(), 2);
    /// ```
    pub fn get_mut(&mut self) -> LockResult<&mut T> {
        lock_core::value_mut(self.inner.get_mut(), LockKind::RwLock, &self.meta)
    }

    /// Consumes the lock and returns the value.
    pub fn into_inner(self) -> LockResult<T> {
        let id = self.meta.id();
        lock_core::into_value(self.inner.into_inner(), LockKind::RwLock, id)
    }

    /// Whether a writer panicked while holding the lock, as std's: poisoning follows from
    /// panics, which replay reproduces, so the answer is not logged.
    ///
    /// ```
    /// let lock = std::sync::Arc::new(ppd::sync::RwLock::new(0));
    /// let l2 = lock.clone();
    /// let _ = std::thread::spawn(move || {
    ///     let _w = l2.write().unwrap();
    ///     panic!("poisons it");
    /// })
    /// .join();
    /// assert!(lock.is_poisoned());
    /// lock.clear_poison();
    /// assert!(!lock.is_poisoned());
    /// ```
    pub fn is_poisoned(&self) -> bool {
        self.inner.is_poisoned()
    }

    /// Forgets that a writer panicked, as std's.
    pub fn clear_poison(&self) {
        self.inner.clear_poison();
    }
}

/// Registers the serde codec of a lock whose values are serde (see `super::values`).
impl<T: Serialize + DeserializeOwned> Carries for RwLock<T> {
    fn register_serde(&self) {
        self.values.register_serde();
    }
}

/// A lock is logged as its id (it can be an e-block argument); re-executing the e-block, its
/// value at each acquisition is the one the acquisition logged.
impl<T> Serialize for RwLock<T> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        super::handle::serialize(self.meta.id(), ppd_formats::value::End::Whole, serializer)
    }
}

impl<'de, T> serde::Deserialize<'de> for RwLock<T> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let id = super::handle::deserialize(deserializer, "rwlock")?;
        Ok(RwLock::with_meta(ObjectMeta::emulated(id), None))
    }
}

type StdRead<'a, T> = std::sync::RwLockReadGuard<'a, Option<T>>;
type StdWrite<'a, T> = std::sync::RwLockWriteGuard<'a, Option<T>>;

impl<T> RwLock<T> {
    /// Locks for shared reading, blocking while a writer holds it. Like std, fails if a writer
    /// panicked, handing the guard over inside the error.
    #[inline]
    #[track_caller]
    pub fn read(&self) -> LockResult<RwLockReadGuard<'_, T>> {
        let site = Location::caller();
        // The guard is made once, from std's, on either path (as `Mutex::lock`'s).
        let acquired = if runtime::active() {
            self.acquire_logged(
                RwMode::Read,
                None,
                site,
                || self.inner.read(),
                || self.inner.try_read(),
            )
        } else {
            self.inner.read()
        };
        wrap_read(acquired, self, site)
    }

    /// Locks for exclusive writing, blocking while anyone holds it.
    #[inline]
    #[track_caller]
    pub fn write(&self) -> LockResult<RwLockWriteGuard<'_, T>> {
        let site = Location::caller();
        let acquired = if runtime::active() {
            self.acquire_logged(
                RwMode::Write,
                None,
                site,
                || self.inner.write(),
                || self.inner.try_write(),
            )
        } else {
            self.inner.write()
        };
        wrap_write(acquired, self, site)
    }

    /// Locks for reading if no writer holds it now, as std's. The answer is a logged choice
    /// that replay gives back.
    ///
    /// ```
    /// use std::sync::TryLockError;
    /// let lock = ppd::sync::RwLock::new(1);
    /// let w = lock.write().unwrap();
    /// assert!(matches!(lock.try_read(), Err(TryLockError::WouldBlock)));
    /// drop(w);
    /// assert_eq!(*lock.try_read().unwrap(), 1);
    /// ```
    #[inline]
    #[track_caller]
    pub fn try_read(&self) -> TryLockResult<RwLockReadGuard<'_, T>> {
        let site = Location::caller();
        if !runtime::active() {
            return try_wrap(self.inner.try_read(), |g| {
                RwLockReadGuard::new(g, self, site)
            });
        }
        let Some(tried) = lock_core::try_answer(&self.meta, site, || self.inner.try_read()) else {
            return Err(TryLockError::WouldBlock);
        };
        let acquired = self.acquire_logged(
            RwMode::Read,
            tried,
            site,
            || self.inner.read(),
            || self.inner.try_read(),
        );
        wrap_read(acquired, self, site).map_err(TryLockError::from)
    }

    /// Locks for writing if nobody holds it now, as std's; the answer is logged.
    ///
    /// ```
    /// use std::sync::TryLockError;
    /// let lock = ppd::sync::RwLock::new(1);
    /// let r = lock.read().unwrap();
    /// assert!(matches!(lock.try_write(), Err(TryLockError::WouldBlock)));
    /// drop(r);
    /// *lock.try_write().unwrap() = 2;
    /// ```
    #[inline]
    #[track_caller]
    pub fn try_write(&self) -> TryLockResult<RwLockWriteGuard<'_, T>> {
        let site = Location::caller();
        if !runtime::active() {
            return try_wrap(self.inner.try_write(), |g| {
                RwLockWriteGuard::new(g, self, site)
            });
        }
        let Some(tried) = lock_core::try_answer(&self.meta, site, || self.inner.try_write()) else {
            return Err(TryLockError::WouldBlock);
        };
        let acquired = self.acquire_logged(
            RwMode::Write,
            tried,
            site,
            || self.inner.write(),
            || self.inner.try_write(),
        );
        wrap_write(acquired, self, site).map_err(TryLockError::from)
    }

    /// An acquisition under a backend, out of line so that pass-through inlines to std's.
    /// Recording: acquires (`tried`, or now, logging `Blocked` before it waits), then takes
    /// the next version and logs it while holding the lock. Replay: acquires in the logged
    /// turn.
    #[inline(never)]
    fn acquire_logged<G: Deref<Target = Option<T>>>(
        &self,
        mode: RwMode,
        tried: Option<LockResult<G>>,
        site: &'static Location<'static>,
        block: impl FnOnce() -> LockResult<G>,
        try_now: impl FnMut() -> TryLockResult<G>,
    ) -> LockResult<G> {
        let object = self.meta.id();
        let logged = runtime::expect(Op::on(EventKind::RwAcquire, object, Some(site)));
        let log = |acquired: &LockResult<G>, version, prev| {
            let held = match acquired {
                Ok(g) => &**g,
                Err(p) => &**p.get_ref(),
            };
            let value = lock_core::logged_value(&self.values, held);
            runtime::done(&Event::RwAcquire {
                object,
                version,
                prev,
                mode,
                site: Some(site),
                value: value.as_deref(),
            });
        };
        match expected::version(&logged) {
            Some((version, prev)) => {
                if runtime::mode() == Mode::Emulate {
                    self.restore(logged.as_ref(), version, site);
                }
                lock_core::announce_turn(object, version, prev);
                self.meta.replay(version, prev, block, |acquired| {
                    log(acquired, version, prev)
                })
            }
            None => {
                let acquired = lock_core::acquire_recording(object, site, tried, try_now, block);
                // Held: the version is taken, and logged, before any later operation can be.
                self.meta
                    .record_logged(|| (), |(), version, prev| log(&acquired, version, prev));
                acquired
            }
        }
    }

    /// The read acquisition of a downgrade, logged while the write hold is still the caller's
    /// (`held`), so it takes the version right after the write's release. Re-executing, the
    /// value is already the one the writer left: nothing is restored.
    #[rustversion::since(1.92)]
    #[inline(never)]
    fn log_downgraded_read(&self, held: &Option<T>, site: &'static Location<'static>) {
        let object = self.meta.id();
        let logged = runtime::expect(Op::on(EventKind::RwAcquire, object, Some(site)));
        let log = |version, prev| {
            let value = lock_core::logged_value(&self.values, held);
            runtime::done(&Event::RwAcquire {
                object,
                version,
                prev,
                mode: RwMode::Read,
                site: Some(site),
                value: value.as_deref(),
            });
        };
        match expected::version(&logged) {
            Some((version, prev)) => {
                self.meta
                    .replay(version, prev, || (), |()| log(version, prev))
            }
            None => self
                .meta
                .record_logged(|| (), |(), version, prev| log(version, prev)),
        }
    }

    /// Re-executing an e-block: the guarded value is the one this acquisition logged, put in
    /// place before the acquisition (nothing else runs). A lock the re-execution made itself
    /// keeps its own value when none was logged; one rebuilt from the prelog has no other, and
    /// without a logged value the re-execution stops, saying why.
    fn restore(&self, logged: Option<&Event>, version: u64, site: &'static Location<'static>) {
        let mut held = self.inner.write().unwrap_or_else(|p| p.into_inner());
        let logged_bytes = match logged {
            Some(Event::RwAcquire {
                value: Some(bytes), ..
            }) => Some(&bytes[..]),
            _ => None,
        };
        lock_core::restore_value(
            LockKind::RwLock,
            &self.meta,
            &self.values,
            &mut held,
            logged_bytes,
            version,
            site,
        );
    }
}

/// Logs the release of a hold, while it is still held: the operation after it in version
/// order (a writer waiting for it) cannot happen before.
#[inline(never)]
fn log_release(meta: &ObjectMeta, mode: RwMode, site: &'static Location<'static>) {
    let object = meta.id();
    let logged = runtime::expect(Op::on(EventKind::RwRelease, object, Some(site)));
    let log = |version, prev| {
        runtime::done(&Event::RwRelease {
            object,
            version,
            prev,
            mode,
            site: Some(site),
        })
    };
    match expected::version(&logged) {
        Some((version, prev)) => meta.replay(version, prev, || (), |()| log(version, prev)),
        None => meta.record_logged(|| (), |(), version, prev| log(version, prev)),
    }
}

#[inline(always)]
fn wrap_read<'a, T>(
    acquired: LockResult<StdRead<'a, T>>,
    lock: &'a RwLock<T>,
    site: &'static Location<'static>,
) -> LockResult<RwLockReadGuard<'a, T>> {
    match acquired {
        Ok(inner) => Ok(RwLockReadGuard::new(inner, lock, site)),
        Err(p) => Err(PoisonError::new(RwLockReadGuard::new(
            p.into_inner(),
            lock,
            site,
        ))),
    }
}

#[inline(always)]
fn wrap_write<'a, T>(
    acquired: LockResult<StdWrite<'a, T>>,
    lock: &'a RwLock<T>,
    site: &'static Location<'static>,
) -> LockResult<RwLockWriteGuard<'a, T>> {
    match acquired {
        Ok(inner) => Ok(RwLockWriteGuard::new(inner, lock, site)),
        Err(p) => Err(PoisonError::new(RwLockWriteGuard::new(
            p.into_inner(),
            lock,
            site,
        ))),
    }
}

fn try_wrap<G, W>(tried: TryLockResult<G>, wrap: impl FnOnce(G) -> W) -> TryLockResult<W> {
    match tried {
        Ok(g) => Ok(wrap(g)),
        Err(TryLockError::Poisoned(p)) => Err(TryLockError::Poisoned(PoisonError::new(wrap(
            p.into_inner(),
        )))),
        Err(TryLockError::WouldBlock) => Err(TryLockError::WouldBlock),
    }
}

/// Shared access to the locked value; the read hold ends when the guard is dropped.
///
/// Covariant in `T`, as std's: it keeps the lock's versioning (`ObjectMeta`, which does not
/// name `T`), not the lock, whose interior mutability would make it invariant.
pub struct RwLockReadGuard<'a, T> {
    /// Dropped by hand, after the release is logged (see `MutexGuard`).
    inner: ManuallyDrop<StdRead<'a, T>>,
    meta: &'a ObjectMeta,
    site: &'static Location<'static>,
}

/// Exclusive access to the locked value; the write hold ends when the guard is dropped.
pub struct RwLockWriteGuard<'a, T> {
    /// Dropped by hand, after the release is logged.
    inner: ManuallyDrop<StdWrite<'a, T>>,
    lock: &'a RwLock<T>,
    site: &'static Location<'static>,
}

impl<'a, T> RwLockReadGuard<'a, T> {
    #[inline]
    fn new(inner: StdRead<'a, T>, lock: &'a RwLock<T>, site: &'static Location<'static>) -> Self {
        RwLockReadGuard {
            inner: ManuallyDrop::new(inner),
            meta: &lock.meta,
            site,
        }
    }
}

impl<'a, T> RwLockWriteGuard<'a, T> {
    #[inline]
    fn new(inner: StdWrite<'a, T>, lock: &'a RwLock<T>, site: &'static Location<'static>) -> Self {
        RwLockWriteGuard {
            inner: ManuallyDrop::new(inner),
            lock,
            site,
        }
    }

    /// Turns the write hold into a read hold with no writer in between, as std's
    /// `RwLockWriteGuard::downgrade` (Rust 1.92 and later). Logged as the write's release and
    /// a read's acquisition, both versioned while the write hold is still this guard's, so
    /// that nothing comes between them in the lock's order and replay makes them together.
    ///
    /// ```
    /// use ppd::sync::{RwLock, RwLockWriteGuard};
    /// let lock = RwLock::new(1);
    /// let mut w = lock.write().unwrap();
    /// *w += 1;
    /// let r = RwLockWriteGuard::downgrade(w);
    /// assert_eq!(*r, 2);
    /// assert!(lock.try_write().is_err(), "still held, for reading");
    /// assert_eq!(*lock.try_read().unwrap(), 2);
    /// ```
    #[rustversion::since(1.92)]
    #[track_caller]
    pub fn downgrade(guard: Self) -> RwLockReadGuard<'a, T> {
        let site = Location::caller();
        let mut guard = ManuallyDrop::new(guard);
        // SAFETY: taken once, and the guard around it is never dropped (its release is logged
        // here instead).
        let inner = unsafe { ManuallyDrop::take(&mut guard.inner) };
        let lock = guard.lock;
        if runtime::active() {
            log_release(&lock.meta, RwMode::Write, guard.site);
            lock.log_downgraded_read(&inner, site);
        }
        RwLockReadGuard::new(StdWrite::downgrade(inner), lock, site)
    }
}

impl<T> Deref for RwLockReadGuard<'_, T> {
    type Target = T;

    #[inline]
    fn deref(&self) -> &T {
        match &**self.inner {
            Some(v) => v,
            None => lock_core::vacant(LockKind::RwLock, self.meta.id()),
        }
    }
}

impl<T> Deref for RwLockWriteGuard<'_, T> {
    type Target = T;

    #[inline]
    fn deref(&self) -> &T {
        match &**self.inner {
            Some(v) => v,
            None => lock_core::vacant(LockKind::RwLock, self.lock.meta.id()),
        }
    }
}

impl<T> DerefMut for RwLockWriteGuard<'_, T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        match &mut **self.inner {
            Some(v) => v,
            None => lock_core::vacant(LockKind::RwLock, self.lock.meta.id()),
        }
    }
}

impl<T: fmt::Debug> fmt::Debug for RwLockReadGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl<T: fmt::Debug> fmt::Debug for RwLockWriteGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl<T: fmt::Display> fmt::Display for RwLockReadGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&**self, f)
    }
}

impl<T: fmt::Display> fmt::Display for RwLockWriteGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&**self, f)
    }
}

impl<T> Drop for RwLockReadGuard<'_, T> {
    #[inline(always)]
    fn drop(&mut self) {
        if runtime::active() {
            log_release(self.meta, RwMode::Read, self.site);
        }
        // SAFETY: dropped once, here, and never used again.
        unsafe { ManuallyDrop::drop(&mut self.inner) };
    }
}

impl<T> Drop for RwLockWriteGuard<'_, T> {
    #[inline(always)]
    fn drop(&mut self) {
        if runtime::active() {
            log_release(&self.lock.meta, RwMode::Write, self.site);
        }
        // SAFETY: dropped once, here, and never used again.
        unsafe { ManuallyDrop::drop(&mut self.inner) };
    }
}
