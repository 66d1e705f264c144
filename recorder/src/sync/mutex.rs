//! A mutual-exclusion lock mirroring `std::sync::Mutex`, whose acquisitions are versioned.
//!
//! Every acquisition gets the next version of the mutex and logs it with the process that held
//! the lock before; replay grants the lock in version order. Inside an e-block, the guarded
//! value is logged at acquisition (the extra prelog of a synchronization unit, Miller & Choi
//! §5.5) so that re-executing the e-block sees what it saw.

use std::fmt;
use std::ops::{Deref, DerefMut};
use std::panic::Location;
use std::sync::{LockResult, PoisonError, TryLockError};

use ppd_formats::event::ObjectKind;
use ppd_formats::{Event, EventKind, ObjectId, value};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::object::ObjectMeta;
use crate::runtime::backend::{Dependency, Mode, Op, expected};
use crate::runtime::{self};

/// A mutual-exclusion lock, like `std::sync::Mutex`.
///
/// ```
/// let m = ppd::sync::Mutex::new(5);
/// *m.lock().unwrap() += 1;
/// assert_eq!(*m.lock().unwrap(), 6);
/// ```
pub struct Mutex<T> {
    meta: ObjectMeta,
    inner: std::sync::Mutex<T>,
}

impl<T: fmt::Debug> fmt::Debug for Mutex<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Mutex")
            .field("object", &self.meta.id)
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

impl<T> Mutex<T> {
    /// A new unlocked mutex holding `value`.
    ///
    /// ```
    /// let m = ppd::sync::Mutex::new(String::from("ann"));
    /// assert_eq!(m.lock().unwrap().as_str(), "ann");
    /// ```
    #[track_caller]
    pub fn new(value: T) -> Mutex<T> {
        Mutex {
            meta: ObjectMeta::new(ObjectKind::Mutex, 0, None, Location::caller()),
            inner: std::sync::Mutex::new(value),
        }
    }

    /// A new mutex with a name that reports use.
    ///
    /// ```
    /// let m = ppd::sync::Mutex::named("accounts", vec![0i64; 4]);
    /// assert_eq!(m.lock().unwrap().len(), 4);
    /// ```
    #[track_caller]
    pub fn named(name: &'static str, value: T) -> Mutex<T> {
        Mutex {
            meta: ObjectMeta::new(ObjectKind::Mutex, 0, Some(name), Location::caller()),
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
        self.inner.get_mut()
    }

    /// Consumes the mutex and returns the value.
    ///
    /// ```
    /// let m = ppd::sync::Mutex::new(3);
    /// assert_eq!(m.into_inner().unwrap(), 3);
    /// ```
    pub fn into_inner(self) -> LockResult<T> {
        self.inner.into_inner()
    }
}

/// A mutex is logged as its id (it can be an e-block argument); re-executing the e-block, its
/// value at each acquisition is the one the acquisition logged.
impl<T> Serialize for Mutex<T> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        super::handle::serialize(self.meta.id, serializer)
    }
}

impl<'de, T: Default> serde::Deserialize<'de> for Mutex<T> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let id = super::handle::deserialize(deserializer, "mutex")?;
        Ok(Mutex {
            meta: ObjectMeta::emulated(id),
            inner: std::sync::Mutex::new(T::default()),
        })
    }
}

impl<T: Serialize + DeserializeOwned> Mutex<T> {
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
        if !runtime::active() {
            return wrap(self.inner.lock(), self, site);
        }
        self.lock_logged(site)
    }

    /// `lock` under a backend, out of line so that pass-through inlines to the `std` lock.
    #[inline(never)]
    fn lock_logged(&self, site: &'static Location<'static>) -> LockResult<MutexGuard<'_, T>> {
        let object = self.meta.id;
        let logged = runtime::expect(Op::on(EventKind::Lock, object, Some(site)));
        let (acquired, version, prev) = match expected::version(&logged) {
            Some((version, prev)) => {
                // Acquisition `version` needs the release of the one before: say so before
                // blocking on it, so a debugger holding the holder knows who waits.
                if let Some(by) = prev.filter(|_| version > 1) {
                    runtime::waiting_for(Dependency::Version {
                        object,
                        version: version - 1,
                        by,
                    });
                }
                // The acquisition is logged below, after the lock is held: the next acquirer
                // waits for this one's release, which is logged before the lock is let go.
                let acquired = self
                    .meta
                    .replay(version, prev, || self.inner.lock(), |_| ());
                (acquired, version, prev)
            }
            None => {
                let acquired = match self.inner.try_lock() {
                    Ok(guard) => Ok(guard),
                    Err(TryLockError::Poisoned(p)) => Err(p),
                    Err(TryLockError::WouldBlock) => {
                        runtime::done(&Event::Blocked {
                            object,
                            site: Some(site),
                        });
                        self.inner.lock()
                    }
                };
                let (version, prev) = self.meta.record_serialized();
                (acquired, version, prev)
            }
        };
        let mut acquired = acquired;
        // Re-executing an e-block: the guarded value is the one this acquisition logged.
        if runtime::mode() == Mode::Emulate
            && let Some(Event::Lock {
                value: Some(bytes), ..
            }) = &logged
            && let Ok(logged_value) = value::decode_as::<T>(bytes)
        {
            match &mut acquired {
                Ok(g) => **g = logged_value,
                Err(p) => **p.get_mut() = logged_value,
            }
        }
        finish_lock(self, acquired, object, version, prev, site)
    }
}

/// Logs an acquisition and hands out the guard.
fn finish_lock<'a, T: Serialize>(
    mutex: &'a Mutex<T>,
    acquired: LockResult<std::sync::MutexGuard<'a, T>>,
    object: ppd_formats::ObjectId,
    version: u64,
    prev: Option<ppd_formats::ProcessId>,
    site: &'static Location<'static>,
) -> LockResult<MutexGuard<'a, T>> {
    let value = if runtime::wants_payload() {
        let guard = match &acquired {
            Ok(g) => &**g,
            Err(p) => &**p.get_ref(),
        };
        value::encode(guard).ok()
    } else {
        None
    };
    runtime::done(&Event::Lock {
        object,
        version,
        prev,
        site: Some(site),
        value: value.as_deref(),
    });
    wrap(acquired, mutex, site)
}

#[inline]
fn wrap<'a, T>(
    acquired: LockResult<std::sync::MutexGuard<'a, T>>,
    mutex: &'a Mutex<T>,
    site: &'static Location<'static>,
) -> LockResult<MutexGuard<'a, T>> {
    match acquired {
        Ok(inner) => Ok(MutexGuard { inner, mutex, site }),
        Err(p) => Err(PoisonError::new(MutexGuard {
            inner: p.into_inner(),
            mutex,
            site,
        })),
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
    inner: std::sync::MutexGuard<'a, T>,
    mutex: &'a Mutex<T>,
    site: &'static Location<'static>,
}

impl<T: fmt::Debug> fmt::Debug for MutexGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.inner, f)
    }
}

impl<T> Deref for MutexGuard<'_, T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.inner
    }
}

impl<T> DerefMut for MutexGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.inner
    }
}

impl<T> Drop for MutexGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        if runtime::active() {
            // Logged while the lock is still held: the release precedes the next acquisition.
            log_unlock(self.mutex.meta.id, self.site);
        }
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
