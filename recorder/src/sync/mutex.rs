//! A mutual-exclusion lock mirroring `std::sync::Mutex`, whose acquisitions are versioned.
//!
//! Every acquisition gets the next version of the mutex and logs it with the process that held
//! the lock before; replay grants the lock in version order. A `try_lock` logs its answer (an
//! `Outcome` event), which replay gives back: the lock was held, or it acquired it, and then its
//! `Lock` follows (the lock-order analysis needs to know: a try never waits). Inside an e-block, the
//! guarded value is logged at acquisition (the extra prelog of a synchronization unit, Miller &
//! Choi §5.5) when the mutex's values are known to be serde (`super::values`), so that
//! re-executing the e-block sees what it saw; an opaque one stops the re-execution, saying why.

use std::fmt;
use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut};
use std::panic::Location;
use std::sync::{LockResult, PoisonError, TryLockError, TryLockResult};

use ppd_formats::event::ObjectKind;
use ppd_formats::{Event, EventKind, ObjectId, ProcessId};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::lock_core::{self, LockKind};
use super::object::ObjectMeta;
use super::values::{Carries, Values};
use crate::runtime::backend::{Mode, Op, expected};
use crate::runtime::{self};

/// A mutual-exclusion lock, like `std::sync::Mutex`, for any `T: Send`.
///
/// ```
/// let m = ppd::sync::Mutex::new(5);
/// *m.lock().unwrap() += 1;
/// assert_eq!(*m.lock().unwrap(), 6);
/// ```
pub struct Mutex<T> {
    meta: ObjectMeta,
    values: Values<T>,
    /// `None` only in a mutex rebuilt from an e-block's prelog before its first acquisition
    /// gives it the logged value.
    inner: std::sync::Mutex<Option<T>>,
}

impl<T: fmt::Debug> fmt::Debug for Mutex<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Mutex")
            .field("object", &self.meta.known_id())
            .field("inner", &self.inner)
            .finish()
    }
}

impl<T: Default> Default for Mutex<T> {
    #[track_caller]
    fn default() -> Self {
        Mutex::new(T::default())
    }
}

impl<T> From<T> for Mutex<T> {
    /// A new unlocked mutex holding `value`, as std's.
    #[track_caller]
    fn from(value: T) -> Self {
        Mutex::new(value)
    }
}

impl<T> Mutex<T> {
    /// A new unlocked mutex holding `value`.
    ///
    /// ```
    /// let m = ppd::sync::Mutex::new(String::from("ann"));
    /// assert_eq!(m.lock().unwrap().as_str(), "ann");
    /// ```
    #[track_caller]
    pub const fn new(value: T) -> Mutex<T> {
        Mutex::with_meta(
            ObjectMeta::new(ObjectKind::Mutex, 0, None, Location::caller()),
            Some(value),
        )
    }

    /// A new mutex with a name that reports use.
    ///
    /// ```
    /// let m = ppd::sync::Mutex::named("accounts", vec![0i64; 4]);
    /// assert_eq!(m.lock().unwrap().len(), 4);
    /// ```
    #[track_caller]
    pub const fn named(name: &'static str, value: T) -> Mutex<T> {
        Mutex::with_meta(
            ObjectMeta::new(ObjectKind::Mutex, 0, Some(name), Location::caller()),
            Some(value),
        )
    }

    /// A mutex that is the hidden lock of another kind of object (a condvar's queue of
    /// waiters): its `Create` says which kind, and reports name it as that.
    #[track_caller]
    pub(crate) const fn hidden(kind: ObjectKind, name: Option<&'static str>, value: T) -> Mutex<T> {
        Mutex::with_meta(
            ObjectMeta::new(kind, 0, name, Location::caller()),
            Some(value),
        )
    }

    /// The mutex's object id (registering it, if this is its first use).
    pub(crate) fn object_id(&self) -> ObjectId {
        self.meta.id()
    }

    const fn with_meta(meta: ObjectMeta, value: Option<T>) -> Mutex<T> {
        Mutex {
            meta,
            values: Values::new(),
            inner: std::sync::Mutex::new(value),
        }
    }

    /// Mutable access without locking: the borrow proves nobody else can lock it.
    ///
    /// ```
    /// let mut m = ppd::sync::Mutex::new(1);
    /// *m.get_mut().unwrap() = 2;
    /// assert_eq!(m.into_inner().unwrap(), 2);
    /// ```
    pub fn get_mut(&mut self) -> LockResult<&mut T> {
        lock_core::value_mut(self.inner.get_mut(), LockKind::Mutex, &self.meta)
    }

    /// Consumes the mutex and returns the value.
    ///
    /// ```
    /// let m = ppd::sync::Mutex::new(3);
    /// assert_eq!(m.into_inner().unwrap(), 3);
    /// ```
    pub fn into_inner(self) -> LockResult<T> {
        let id = self.meta.id();
        lock_core::into_value(self.inner.into_inner(), LockKind::Mutex, id)
    }

    /// Whether a holder panicked, as std's: poisoning follows from panics, which replay
    /// reproduces, so the answer is not logged.
    ///
    /// ```
    /// let m = ppd::sync::Mutex::new(0);
    /// assert!(!m.is_poisoned());
    /// ```
    pub fn is_poisoned(&self) -> bool {
        self.inner.is_poisoned()
    }

    /// Forgets that a holder panicked, as std's.
    ///
    /// ```
    /// let m = std::sync::Arc::new(ppd::sync::Mutex::new(0));
    /// let m2 = m.clone();
    /// let _ = std::thread::spawn(move || {
    ///     let _guard = m2.lock().unwrap();
    ///     panic!("poisons it");
    /// })
    /// .join();
    /// assert!(m.is_poisoned());
    /// m.clear_poison();
    /// assert!(!m.is_poisoned());
    /// ```
    pub fn clear_poison(&self) {
        self.inner.clear_poison();
    }
}

impl<T> crate::runtime::binding::LazyObject for Mutex<T> {
    fn register_now(&self) {
        self.meta.register_now();
    }
}

/// Registers the serde codec of a mutex whose values are serde (see `super::values`).
impl<T: Serialize + DeserializeOwned> Carries for Mutex<T> {
    fn register_serde(&self) {
        self.values.register_serde();
    }
}

/// A mutex is logged as its id (it can be an e-block argument); re-executing the e-block, its
/// value at each acquisition is the one the acquisition logged.
impl<T> Serialize for Mutex<T> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        super::handle::serialize(self.meta.id(), ppd_formats::value::End::Whole, serializer)
    }
}

impl<'de, T> serde::Deserialize<'de> for Mutex<T> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let id = super::handle::deserialize(deserializer, "mutex")?;
        Ok(Mutex::with_meta(ObjectMeta::emulated(id), None))
    }
}

impl<T> Mutex<T> {
    /// Acquires the lock, blocking until it is free. Like `std`, fails if a holder panicked,
    /// handing the guard over inside the error.
    ///
    /// ```
    /// let m = ppd::sync::Mutex::new(vec![1]);
    /// m.lock().unwrap().push(2);
    /// assert_eq!(*m.lock().unwrap(), vec![1, 2]);
    /// ```
    #[inline]
    #[track_caller]
    pub fn lock(&self) -> LockResult<MutexGuard<'_, T>> {
        let site = Location::caller();
        // The guard is made here, on either path, from std's: a pass-through caller keeps it
        // in registers as it keeps std's.
        let acquired = if runtime::active() {
            self.lock_logged(None, site)
        } else {
            self.inner.lock()
        };
        wrap(acquired, self, site)
    }

    /// Acquires the lock if it is free now, as std's. Whether it was is a logged choice:
    /// replay answers `WouldBlock` exactly where the recorded run did.
    ///
    /// ```
    /// use std::sync::TryLockError;
    /// let m = ppd::sync::Mutex::new(1);
    /// let held = m.lock().unwrap();
    /// assert!(matches!(m.try_lock(), Err(TryLockError::WouldBlock)));
    /// drop(held);
    /// assert_eq!(*m.try_lock().unwrap(), 1);
    /// ```
    #[inline]
    #[track_caller]
    pub fn try_lock(&self) -> TryLockResult<MutexGuard<'_, T>> {
        let site = Location::caller();
        // As in `lock`: the guard is made once, from std's, on either path.
        let tried = if runtime::active() {
            self.try_lock_logged(site)
        } else {
            self.inner.try_lock()
        };
        match tried {
            Ok(inner) => Ok(MutexGuard::new(inner, self, site)),
            Err(TryLockError::Poisoned(p)) => Err(TryLockError::Poisoned(PoisonError::new(
                MutexGuard::new(p.into_inner(), self, site),
            ))),
            Err(TryLockError::WouldBlock) => Err(TryLockError::WouldBlock),
        }
    }

    /// `try_lock` under a backend: its answer, then, if it acquired, the acquisition.
    #[inline(never)]
    fn try_lock_logged(
        &self,
        site: &'static Location<'static>,
    ) -> TryLockResult<std::sync::MutexGuard<'_, Option<T>>> {
        let tried = lock_core::try_answer(&self.meta, site, || self.inner.try_lock());
        match tried {
            Some(acquired) => self.lock_logged(acquired, site).map_err(TryLockError::from),
            None => Err(TryLockError::WouldBlock),
        }
    }

    /// `lock` under a backend, out of line so that pass-through inlines to the `std` lock;
    /// also the acquisition of a `try_lock` that got the lock, `tried` when recording.
    #[inline(never)]
    fn lock_logged<'a>(
        &'a self,
        tried: Option<LockResult<std::sync::MutexGuard<'a, Option<T>>>>,
        site: &'static Location<'static>,
    ) -> LockResult<std::sync::MutexGuard<'a, Option<T>>> {
        let object = self.meta.id();
        let logged = runtime::expect(Op::on(EventKind::Lock, object, Some(site)));
        let (acquired, version, prev) = match expected::version(&logged) {
            Some((version, prev)) => {
                lock_core::announce_turn(object, version, prev);
                // The acquisition is logged below, after the lock is held: the next acquirer
                // waits for this one's release, which is logged before the lock is let go.
                let acquired = self
                    .meta
                    .replay(version, prev, || self.inner.lock(), |_| ());
                (acquired, version, prev)
            }
            None => {
                let acquired = lock_core::acquire_recording(
                    object,
                    site,
                    tried,
                    || self.inner.try_lock(),
                    || self.inner.lock(),
                );
                let (version, prev) = self.meta.record_serialized();
                (acquired, version, prev)
            }
        };
        let mut acquired = acquired;
        if runtime::mode() == Mode::Emulate {
            self.restore(&mut acquired, logged.as_ref(), version, site);
        }
        self.finish_lock(acquired, version, prev, site)
    }

    /// Re-executing an e-block: the guarded value is the one this acquisition logged. A mutex
    /// the re-execution made itself keeps its own value when none was logged; one rebuilt from
    /// the prelog has no other, and without a logged value the re-execution stops, saying why.
    fn restore(
        &self,
        acquired: &mut LockResult<std::sync::MutexGuard<'_, Option<T>>>,
        logged: Option<&Event>,
        version: u64,
        site: &'static Location<'static>,
    ) {
        let held = match acquired {
            Ok(g) => &mut **g,
            Err(p) => &mut **p.get_mut(),
        };
        let logged_bytes = match logged {
            Some(Event::Lock {
                value: Some(bytes), ..
            }) => Some(&bytes[..]),
            _ => None,
        };
        lock_core::restore_value(
            LockKind::Mutex,
            &self.meta,
            &self.values,
            held,
            logged_bytes,
            version,
            site,
        );
    }

    /// Logs an acquisition and hands out the guard.
    fn finish_lock<'a>(
        &'a self,
        acquired: LockResult<std::sync::MutexGuard<'a, Option<T>>>,
        version: u64,
        prev: Option<ProcessId>,
        site: &'static Location<'static>,
    ) -> LockResult<std::sync::MutexGuard<'a, Option<T>>> {
        let held = match &acquired {
            Ok(g) => &**g,
            Err(p) => &**p.get_ref(),
        };
        let value = lock_core::logged_value(&self.values, held);
        runtime::done(&Event::Lock {
            object: self.meta.id(),
            version,
            prev,
            site: Some(site),
            value: value.as_deref(),
        });
        acquired
    }
}

#[inline(always)]
fn wrap<'a, T>(
    acquired: LockResult<std::sync::MutexGuard<'a, Option<T>>>,
    mutex: &'a Mutex<T>,
    site: &'static Location<'static>,
) -> LockResult<MutexGuard<'a, T>> {
    match acquired {
        Ok(inner) => Ok(MutexGuard::new(inner, mutex, site)),
        Err(p) => Err(PoisonError::new(MutexGuard::new(
            p.into_inner(),
            mutex,
            site,
        ))),
    }
}

/// Access to the locked value; the lock is released when the guard is dropped.
///
/// ```
/// let m = ppd::sync::Mutex::new(0);
/// {
///     let mut g = m.lock().unwrap();
///     *g = 9;
/// } // released here
/// assert_eq!(*m.lock().unwrap(), 9);
/// ```
pub struct MutexGuard<'a, T> {
    /// Dropped by hand, after the release is logged: one drop function, which inlines into
    /// a pass-through caller's loop as std's guard's does.
    inner: ManuallyDrop<std::sync::MutexGuard<'a, Option<T>>>,
    mutex: &'a Mutex<T>,
    site: &'static Location<'static>,
}

impl<'a, T> MutexGuard<'a, T> {
    #[inline]
    fn new(
        inner: std::sync::MutexGuard<'a, Option<T>>,
        mutex: &'a Mutex<T>,
        site: &'static Location<'static>,
    ) -> MutexGuard<'a, T> {
        MutexGuard {
            inner: ManuallyDrop::new(inner),
            mutex,
            site,
        }
    }

    /// The mutex this guard holds, for a condvar that releases and re-acquires it.
    pub(crate) fn mutex(&self) -> &'a Mutex<T> {
        self.mutex
    }
}

impl<T: fmt::Debug> fmt::Debug for MutexGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl<T: fmt::Display> fmt::Display for MutexGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&**self, f)
    }
}

impl<T> Deref for MutexGuard<'_, T> {
    type Target = T;

    #[inline]
    fn deref(&self) -> &T {
        match &**self.inner {
            Some(v) => v,
            None => lock_core::vacant(LockKind::Mutex, self.mutex.meta.id()),
        }
    }
}

impl<T> DerefMut for MutexGuard<'_, T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        lock_core::present_mut(&mut *self.inner, LockKind::Mutex, &self.mutex.meta)
    }
}

impl<T> Drop for MutexGuard<'_, T> {
    #[inline(always)]
    fn drop(&mut self) {
        if runtime::active() {
            // Logged while the lock is still held: the release precedes the next acquisition.
            log_unlock(self.mutex.meta.id(), self.site);
        }
        // SAFETY: dropped once, here, and never used again.
        unsafe { ManuallyDrop::drop(&mut self.inner) };
    }
}

#[inline(never)]
fn log_unlock(object: ObjectId, site: &'static Location<'static>) {
    runtime::expect(Op::on(EventKind::Unlock, object, Some(site)));
    runtime::done(&Event::Unlock {
        object,
        site: Some(site),
    });
}
