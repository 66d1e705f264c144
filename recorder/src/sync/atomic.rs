//! Atomic integers and flags mirroring `std::sync::atomic`, whose accesses are versioned.
//!
//! While recording, an access and its version are assigned together while the access holds the
//! object's version word, so the versions are the order in which the accesses reached memory;
//! replay lets each access through only in that order (instant replay for shared memory). Inside
//! an e-block the value each access read is logged too, for re-execution.
//!
//! The memory ordering the program asked for is logged: race detection treats relaxed loads
//! and stores as plain data accesses and read-modify-writes as synchronizing.

use std::fmt;
use std::panic::Location;

pub use std::sync::atomic::Ordering;

use ppd_formats::event::{AtomicOp, MemOrdering, ObjectKind};
use ppd_formats::pending::PendingAccess;
use ppd_formats::{ObjectId, ProcessId};

use super::object::ObjectMeta;
use crate::runtime;
use crate::runtime::backend::{Mode, Op, expected};

/// Runs one access of an atomic through the runtime. `access` gets the value the log dictates
/// it read (emulation only: the re-executed e-block has no shared memory to read) and returns
/// its result, the value it read (if it read), and what it turned out to be.
///
/// Pass-through is this function's first line and is inlined into the caller, so an access
/// outside `ppd record` compiles to the plain access plus one relaxed load; the logged path is
/// kept out of line.
#[inline(always)]
fn logged_access<R>(
    meta: &ObjectMeta,
    ordering: Ordering,
    site: &'static Location<'static>,
    access: impl FnOnce(Option<u64>) -> (R, Option<u64>, AtomicOp),
) -> R {
    if !runtime::active() {
        return access(None).0;
    }
    logged_access_slow(meta, ordering, None, site, access)
}

/// [`logged_access`] for a compare-exchange or `fetch_update`, which also logs its failure
/// ordering: a failed one is ordered by it.
#[inline(always)]
fn logged_cas<R>(
    meta: &ObjectMeta,
    success: Ordering,
    failure: Ordering,
    site: &'static Location<'static>,
    access: impl FnOnce(Option<u64>) -> (R, Option<u64>, AtomicOp),
) -> R {
    if !runtime::active() {
        return access(None).0;
    }
    logged_access_slow(meta, success, Some(failure), site, access)
}

#[inline(never)]
fn logged_access_slow<R>(
    meta: &ObjectMeta,
    ordering: Ordering,
    failure: Option<Ordering>,
    site: &'static Location<'static>,
    access: impl FnOnce(Option<u64>) -> (R, Option<u64>, AtomicOp),
) -> R {
    let object = meta.id();
    let logged = runtime::expect(Op::on(ppd_formats::EventKind::Atomic, object, Some(site)));
    let forced = match (runtime::mode(), expected::atomic_value(&logged)) {
        (Mode::Emulate, Some((_, value))) => value,
        _ => None,
    };
    // Asked before the access: the pending record is written while the access holds the
    // object.
    let payloads = runtime::wants_payload();
    let access_of =
        |version: u64, prev: Option<ProcessId>, (_, read, op): &(R, Option<u64>, AtomicOp)| {
            PendingAccess {
                object,
                version,
                prev,
                op: *op,
                ordering: MemOrdering::from(ordering),
                failure: failure.map(MemOrdering::from),
                value: if payloads { *read } else { None },
            }
        };
    let log = |a: PendingAccess| runtime::done(&a.event(Some(site)));
    match expected::version(&logged) {
        Some((version, prev)) => {
            let replayed = meta.replay(
                version,
                prev,
                || access(forced),
                |done| log(access_of(version, prev, done)),
            );
            replayed.0
        }
        None => {
            let (result, ..) = meta.record_pended(
                || access(None),
                |done, version, prev| runtime::pend(&access_of(version, prev, done)),
                |done, version, prev| log(access_of(version, prev, done)),
            );
            result
        }
    }
}

/// The failure ordering of std's `compare_and_swap` for `order`.
fn strongest_failure_ordering(order: Ordering) -> Ordering {
    match order {
        Ordering::Release | Ordering::Relaxed => Ordering::Relaxed,
        Ordering::AcqRel | Ordering::Acquire => Ordering::Acquire,
        _ => Ordering::SeqCst,
    }
}

macro_rules! atomic_int {
    ($name:ident, $int:ty, $doc_value:expr) => {
        #[doc = concat!("An atomic `", stringify!($int), "`, like `std::sync::atomic::", stringify!($name), "`.")]
        ///
        /// ```
        #[doc = concat!("use ppd::sync::atomic::{", stringify!($name), ", Ordering};")]
        #[doc = concat!("let a = ", stringify!($name), "::new(", $doc_value, ");")]
        /// a.fetch_add(1, Ordering::SeqCst);
        #[doc = concat!("assert_eq!(a.load(Ordering::SeqCst), ", $doc_value, " + 1);")]
        /// ```
        pub struct $name {
            meta: ObjectMeta,
            inner: std::sync::atomic::$name,
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                // Reads without logging: printing must not add events to the run.
                f.debug_struct(stringify!($name))
                    .field("object", &self.meta.known_id())
                    .field("value", &self.inner)
                    .finish()
            }
        }

        impl crate::runtime::binding::LazyObject for $name {
            fn register_now(&self) {
                self.meta.register_now();
            }
        }

        impl Default for $name {
            #[track_caller]
            fn default() -> Self {
                $name::new(0)
            }
        }

        /// Logged as its id (it can be an e-block argument); re-executing the e-block, what
        /// each access read is what it logged.
        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                super::handle::serialize(self.meta.id(), ppd_formats::value::End::Whole, serializer)
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let id = super::handle::deserialize(deserializer, stringify!($name))?;
                Ok($name {
                    meta: ObjectMeta::emulated(id),
                    inner: std::sync::atomic::$name::new(0),
                })
            }
        }

        impl $name {
            /// A new atomic holding `value`.
            ///
            /// ```
            #[doc = concat!("let a = ppd::sync::atomic::", stringify!($name), "::new(", $doc_value, ");")]
            #[doc = concat!("assert_eq!(a.into_inner(), ", $doc_value, ");")]
            /// ```
            #[track_caller]
            pub const fn new(value: $int) -> $name {
                $name {
                    meta: ObjectMeta::new(ObjectKind::Atomic, value as u64, None, Location::caller()),
                    inner: std::sync::atomic::$name::new(value),
                }
            }

            /// A new atomic with a name that reports use.
            ///
            /// ```
            #[doc = concat!("let a = ppd::sync::atomic::", stringify!($name), "::named(\"hits\", 0);")]
            #[doc = concat!("assert_eq!(a.into_inner(), 0);")]
            /// ```
            #[track_caller]
            pub const fn named(name: &'static str, value: $int) -> $name {
                $name {
                    meta: ObjectMeta::new(ObjectKind::Atomic, value as u64, Some(name), Location::caller()),
                    inner: std::sync::atomic::$name::new(value),
                }
            }

            /// Loads the value.
            ///
            /// ```
            #[doc = concat!("use ppd::sync::atomic::{", stringify!($name), ", Ordering};")]
            #[doc = concat!("let a = ", stringify!($name), "::new(", $doc_value, ");")]
            #[doc = concat!("assert_eq!(a.load(Ordering::Relaxed), ", $doc_value, ");")]
            /// ```
            #[inline]
            #[track_caller]
            pub fn load(&self, order: Ordering) -> $int {
                logged_access(&self.meta, order, Location::caller(), |forced| {
                    let v = match forced {
                        Some(v) => v as $int,
                        None => self.inner.load(order),
                    };
                    (v, Some(v as u64), AtomicOp::Load)
                })
            }

            /// Stores a value.
            ///
            /// ```
            #[doc = concat!("use ppd::sync::atomic::{", stringify!($name), ", Ordering};")]
            #[doc = concat!("let a = ", stringify!($name), "::new(0);")]
            #[doc = concat!("a.store(", $doc_value, ", Ordering::Relaxed);")]
            #[doc = concat!("assert_eq!(a.load(Ordering::Relaxed), ", $doc_value, ");")]
            /// ```
            #[inline]
            #[track_caller]
            pub fn store(&self, value: $int, order: Ordering) {
                logged_access(&self.meta, order, Location::caller(), |_| {
                    self.inner.store(value, order);
                    ((), None, AtomicOp::Store)
                })
            }

            /// Stores a value and returns the previous one.
            ///
            /// ```
            #[doc = concat!("use ppd::sync::atomic::{", stringify!($name), ", Ordering};")]
            #[doc = concat!("let a = ", stringify!($name), "::new(1);")]
            /// assert_eq!(a.swap(2, Ordering::AcqRel), 1);
            /// ```
            #[inline]
            #[track_caller]
            pub fn swap(&self, value: $int, order: Ordering) -> $int {
                self.rmw(order, Location::caller(), |a| a.swap(value, order))
            }

            /// Stores `new` if the value is `current`; returns the previous value, as `Ok` if
            /// it was `current`.
            ///
            /// ```
            #[doc = concat!("use ppd::sync::atomic::{", stringify!($name), ", Ordering};")]
            #[doc = concat!("let a = ", stringify!($name), "::new(1);")]
            /// assert_eq!(a.compare_exchange(1, 2, Ordering::AcqRel, Ordering::Acquire), Ok(1));
            /// assert_eq!(a.compare_exchange(1, 3, Ordering::AcqRel, Ordering::Acquire), Err(2));
            /// ```
            #[inline]
            #[track_caller]
            pub fn compare_exchange(
                &self,
                current: $int,
                new: $int,
                success: Ordering,
                failure: Ordering,
            ) -> Result<$int, $int> {
                logged_cas(&self.meta, success, failure, Location::caller(), |forced| {
                    let result = match forced {
                        Some(v) if v as $int == current => Ok(current),
                        Some(v) => Err(v as $int),
                        None => self.inner.compare_exchange(current, new, success, failure),
                    };
                    match result {
                        Ok(v) => (result, Some(v as u64), AtomicOp::Rmw),
                        Err(v) => (result, Some(v as u64), AtomicOp::CasFail),
                    }
                })
            }

            /// Like [`compare_exchange`](Self::compare_exchange); never fails spuriously here.
            ///
            /// ```
            #[doc = concat!("use ppd::sync::atomic::{", stringify!($name), ", Ordering};")]
            #[doc = concat!("let a = ", stringify!($name), "::new(5);")]
            /// assert_eq!(a.compare_exchange_weak(5, 6, Ordering::SeqCst, Ordering::SeqCst), Ok(5));
            /// ```
            #[inline]
            #[track_caller]
            pub fn compare_exchange_weak(
                &self,
                current: $int,
                new: $int,
                success: Ordering,
                failure: Ordering,
            ) -> Result<$int, $int> {
                self.compare_exchange(current, new, success, failure)
            }

            /// Stores `new` if the value is `current`; returns the previous value, as std's
            /// deprecated `compare_and_swap` (a `compare_exchange` whose failure ordering is
            /// the strongest `order` allows).
            #[deprecated(note = "use `compare_exchange` or `compare_exchange_weak`, as std says")]
            #[inline]
            #[track_caller]
            pub fn compare_and_swap(&self, current: $int, new: $int, order: Ordering) -> $int {
                match self.compare_exchange(current, new, order, strongest_failure_ordering(order)) {
                    Ok(v) | Err(v) => v,
                }
            }

            /// Adds to the value (wrapping); returns the previous value.
            ///
            /// ```
            #[doc = concat!("use ppd::sync::atomic::{", stringify!($name), ", Ordering};")]
            #[doc = concat!("let a = ", stringify!($name), "::new(1);")]
            /// assert_eq!(a.fetch_add(2, Ordering::SeqCst), 1);
            /// ```
            #[inline]
            #[track_caller]
            pub fn fetch_add(&self, value: $int, order: Ordering) -> $int {
                self.rmw(order, Location::caller(), |a| a.fetch_add(value, order))
            }

            /// Subtracts from the value (wrapping); returns the previous value.
            ///
            /// ```
            #[doc = concat!("use ppd::sync::atomic::{", stringify!($name), ", Ordering};")]
            #[doc = concat!("let a = ", stringify!($name), "::new(3);")]
            /// assert_eq!(a.fetch_sub(1, Ordering::SeqCst), 3);
            /// ```
            #[inline]
            #[track_caller]
            pub fn fetch_sub(&self, value: $int, order: Ordering) -> $int {
                self.rmw(order, Location::caller(), |a| a.fetch_sub(value, order))
            }

            /// Bitwise and; returns the previous value.
            ///
            /// ```
            #[doc = concat!("use ppd::sync::atomic::{", stringify!($name), ", Ordering};")]
            #[doc = concat!("let a = ", stringify!($name), "::new(3);")]
            /// assert_eq!(a.fetch_and(1, Ordering::SeqCst), 3);
            /// ```
            #[inline]
            #[track_caller]
            pub fn fetch_and(&self, value: $int, order: Ordering) -> $int {
                self.rmw(order, Location::caller(), |a| a.fetch_and(value, order))
            }

            /// Bitwise or; returns the previous value.
            ///
            /// ```
            #[doc = concat!("use ppd::sync::atomic::{", stringify!($name), ", Ordering};")]
            #[doc = concat!("let a = ", stringify!($name), "::new(1);")]
            /// assert_eq!(a.fetch_or(2, Ordering::SeqCst), 1);
            /// ```
            #[inline]
            #[track_caller]
            pub fn fetch_or(&self, value: $int, order: Ordering) -> $int {
                self.rmw(order, Location::caller(), |a| a.fetch_or(value, order))
            }

            /// Bitwise xor; returns the previous value.
            ///
            /// ```
            #[doc = concat!("use ppd::sync::atomic::{", stringify!($name), ", Ordering};")]
            #[doc = concat!("let a = ", stringify!($name), "::new(1);")]
            /// assert_eq!(a.fetch_xor(1, Ordering::SeqCst), 1);
            /// ```
            #[inline]
            #[track_caller]
            pub fn fetch_xor(&self, value: $int, order: Ordering) -> $int {
                self.rmw(order, Location::caller(), |a| a.fetch_xor(value, order))
            }

            /// Maximum; returns the previous value.
            ///
            /// ```
            #[doc = concat!("use ppd::sync::atomic::{", stringify!($name), ", Ordering};")]
            #[doc = concat!("let a = ", stringify!($name), "::new(1);")]
            /// assert_eq!(a.fetch_max(9, Ordering::SeqCst), 1);
            /// ```
            #[inline]
            #[track_caller]
            pub fn fetch_max(&self, value: $int, order: Ordering) -> $int {
                self.rmw(order, Location::caller(), |a| a.fetch_max(value, order))
            }

            /// Minimum; returns the previous value.
            ///
            /// ```
            #[doc = concat!("use ppd::sync::atomic::{", stringify!($name), ", Ordering};")]
            #[doc = concat!("let a = ", stringify!($name), "::new(1);")]
            /// assert_eq!(a.fetch_min(0, Ordering::SeqCst), 1);
            /// ```
            #[inline]
            #[track_caller]
            pub fn fetch_min(&self, value: $int, order: Ordering) -> $int {
                self.rmw(order, Location::caller(), |a| a.fetch_min(value, order))
            }

            /// Applies `f` to the value atomically while it returns `Some`; returns the
            /// previous value, as `Ok` if a new one was stored.
            ///
            /// ```
            #[doc = concat!("use ppd::sync::atomic::{", stringify!($name), ", Ordering};")]
            #[doc = concat!("let a = ", stringify!($name), "::new(1);")]
            /// assert_eq!(a.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |v| Some(v * 2)), Ok(1));
            /// assert_eq!(a.load(Ordering::SeqCst), 2);
            /// ```
            #[inline]
            #[track_caller]
            pub fn fetch_update(
                &self,
                set: Ordering,
                fetch: Ordering,
                mut f: impl FnMut($int) -> Option<$int>,
            ) -> Result<$int, $int> {
                logged_cas(&self.meta, set, fetch, Location::caller(), |forced| {
                    let result = match forced {
                        Some(v) => {
                            let v = v as $int;
                            if f(v).is_some() { Ok(v) } else { Err(v) }
                        }
                        None => self.inner.fetch_update(set, fetch, f),
                    };
                    match result {
                        Ok(v) => (result, Some(v as u64), AtomicOp::Rmw),
                        Err(v) => (result, Some(v as u64), AtomicOp::CasFail),
                    }
                })
            }

            /// Mutable access without synchronization: the borrow proves exclusivity.
            ///
            /// ```
            #[doc = concat!("let mut a = ppd::sync::atomic::", stringify!($name), "::new(0);")]
            /// *a.get_mut() = 4;
            /// assert_eq!(a.into_inner(), 4);
            /// ```
            pub fn get_mut(&mut self) -> &mut $int {
                self.inner.get_mut()
            }

            /// Consumes the atomic and returns the value.
            ///
            /// ```
            #[doc = concat!("let a = ppd::sync::atomic::", stringify!($name), "::new(8);")]
            /// assert_eq!(a.into_inner(), 8);
            /// ```
            pub fn into_inner(self) -> $int {
                self.inner.into_inner()
            }

            #[inline(always)]
            fn rmw(
                &self,
                order: Ordering,
                site: &'static Location<'static>,
                op: impl FnOnce(&std::sync::atomic::$name) -> $int,
            ) -> $int {
                logged_access(&self.meta, order, site, |forced| {
                    let previous = match forced {
                        Some(v) => v as $int,
                        None => op(&self.inner),
                    };
                    (previous, Some(previous as u64), AtomicOp::Rmw)
                })
            }
        }
    };
}

atomic_int!(AtomicI8, i8, "7");
atomic_int!(AtomicU8, u8, "7");
atomic_int!(AtomicI16, i16, "7");
atomic_int!(AtomicU16, u16, "7");
atomic_int!(AtomicI32, i32, "7");
atomic_int!(AtomicU32, u32, "7");
atomic_int!(AtomicI64, i64, "7");
atomic_int!(AtomicU64, u64, "7");
atomic_int!(AtomicIsize, isize, "7");
atomic_int!(AtomicUsize, usize, "7");

impl AtomicU8 {
    /// The atomic's object id, registering it if this is its first use (`ObjectId(0)` in
    /// pass-through): the state of a `Once` is remembered by it.
    pub(crate) fn object(&self) -> ObjectId {
        self.meta.id()
    }
}

/// An atomic `bool`, like `std::sync::atomic::AtomicBool`.
///
/// ```
/// use ppd::sync::atomic::{AtomicBool, Ordering};
/// let flag = AtomicBool::new(false);
/// flag.store(true, Ordering::Release);
/// assert!(flag.load(Ordering::Acquire));
/// ```
pub struct AtomicBool {
    meta: ObjectMeta,
    inner: std::sync::atomic::AtomicBool,
}

impl fmt::Debug for AtomicBool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AtomicBool")
            .field("object", &self.meta.known_id())
            .field("value", &self.inner)
            .finish()
    }
}

impl crate::runtime::binding::LazyObject for AtomicBool {
    fn register_now(&self) {
        self.meta.register_now();
    }
}

impl Default for AtomicBool {
    #[track_caller]
    fn default() -> Self {
        AtomicBool::new(false)
    }
}

/// Logged as its id (it can be an e-block argument).
impl serde::Serialize for AtomicBool {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        super::handle::serialize(self.meta.id(), ppd_formats::value::End::Whole, serializer)
    }
}

impl<'de> serde::Deserialize<'de> for AtomicBool {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let id = super::handle::deserialize(deserializer, "AtomicBool")?;
        Ok(AtomicBool {
            meta: ObjectMeta::emulated(id),
            inner: std::sync::atomic::AtomicBool::new(false),
        })
    }
}

impl AtomicBool {
    /// A flag that is object `id` without a creation event: a process's park token, which
    /// every process has and whose id is derived from the process's.
    pub(crate) fn implicit(id: ObjectId) -> AtomicBool {
        AtomicBool {
            meta: ObjectMeta::implicit(id),
            inner: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// A new flag.
    ///
    /// ```
    /// let f = ppd::sync::atomic::AtomicBool::new(true);
    /// assert!(f.into_inner());
    /// ```
    #[track_caller]
    pub const fn new(value: bool) -> AtomicBool {
        AtomicBool {
            meta: ObjectMeta::new(ObjectKind::Atomic, value as u64, None, Location::caller()),
            inner: std::sync::atomic::AtomicBool::new(value),
        }
    }

    /// A new flag with a name that reports use.
    ///
    /// ```
    /// let f = ppd::sync::atomic::AtomicBool::named("ready", false);
    /// assert!(!f.into_inner());
    /// ```
    #[track_caller]
    pub const fn named(name: &'static str, value: bool) -> AtomicBool {
        AtomicBool {
            meta: ObjectMeta::new(
                ObjectKind::Atomic,
                value as u64,
                Some(name),
                Location::caller(),
            ),
            inner: std::sync::atomic::AtomicBool::new(value),
        }
    }

    /// Loads the flag.
    ///
    /// ```
    /// use ppd::sync::atomic::{AtomicBool, Ordering};
    /// assert!(!AtomicBool::new(false).load(Ordering::SeqCst));
    /// ```
    #[inline]
    #[track_caller]
    pub fn load(&self, order: Ordering) -> bool {
        logged_access(&self.meta, order, Location::caller(), |forced| {
            let v = match forced {
                Some(v) => v != 0,
                None => self.inner.load(order),
            };
            (v, Some(u64::from(v)), AtomicOp::Load)
        })
    }

    /// Stores the flag.
    ///
    /// ```
    /// use ppd::sync::atomic::{AtomicBool, Ordering};
    /// let f = AtomicBool::new(false);
    /// f.store(true, Ordering::SeqCst);
    /// assert!(f.load(Ordering::SeqCst));
    /// ```
    #[inline]
    #[track_caller]
    pub fn store(&self, value: bool, order: Ordering) {
        logged_access(&self.meta, order, Location::caller(), |_| {
            self.inner.store(value, order);
            ((), None, AtomicOp::Store)
        })
    }

    /// Stores and returns the previous value.
    ///
    /// ```
    /// use ppd::sync::atomic::{AtomicBool, Ordering};
    /// let f = AtomicBool::new(false);
    /// assert!(!f.swap(true, Ordering::SeqCst));
    /// ```
    #[inline]
    #[track_caller]
    pub fn swap(&self, value: bool, order: Ordering) -> bool {
        self.rmw(order, Location::caller(), |a| a.swap(value, order))
    }

    /// Stores `new` if the flag is `current`.
    ///
    /// ```
    /// use ppd::sync::atomic::{AtomicBool, Ordering};
    /// let f = AtomicBool::new(false);
    /// assert_eq!(f.compare_exchange(false, true, Ordering::SeqCst, Ordering::SeqCst), Ok(false));
    /// ```
    #[inline]
    #[track_caller]
    pub fn compare_exchange(
        &self,
        current: bool,
        new: bool,
        success: Ordering,
        failure: Ordering,
    ) -> Result<bool, bool> {
        logged_cas(&self.meta, success, failure, Location::caller(), |forced| {
            let result = match forced {
                Some(v) if (v != 0) == current => Ok(current),
                Some(v) => Err(v != 0),
                None => self.inner.compare_exchange(current, new, success, failure),
            };
            match result {
                Ok(v) => (result, Some(u64::from(v)), AtomicOp::Rmw),
                Err(v) => (result, Some(u64::from(v)), AtomicOp::CasFail),
            }
        })
    }

    /// Logical and; returns the previous value.
    ///
    /// ```
    /// use ppd::sync::atomic::{AtomicBool, Ordering};
    /// assert!(AtomicBool::new(true).fetch_and(false, Ordering::SeqCst));
    /// ```
    #[inline]
    #[track_caller]
    pub fn fetch_and(&self, value: bool, order: Ordering) -> bool {
        self.rmw(order, Location::caller(), |a| a.fetch_and(value, order))
    }

    /// Logical or; returns the previous value.
    ///
    /// ```
    /// use ppd::sync::atomic::{AtomicBool, Ordering};
    /// assert!(!AtomicBool::new(false).fetch_or(true, Ordering::SeqCst));
    /// ```
    #[inline]
    #[track_caller]
    pub fn fetch_or(&self, value: bool, order: Ordering) -> bool {
        self.rmw(order, Location::caller(), |a| a.fetch_or(value, order))
    }

    /// Logical xor; returns the previous value.
    ///
    /// ```
    /// use ppd::sync::atomic::{AtomicBool, Ordering};
    /// assert!(AtomicBool::new(true).fetch_xor(true, Ordering::SeqCst));
    /// ```
    #[inline]
    #[track_caller]
    pub fn fetch_xor(&self, value: bool, order: Ordering) -> bool {
        self.rmw(order, Location::caller(), |a| a.fetch_xor(value, order))
    }

    /// Consumes the flag and returns its value.
    ///
    /// ```
    /// assert!(ppd::sync::atomic::AtomicBool::new(true).into_inner());
    /// ```
    pub fn into_inner(self) -> bool {
        self.inner.into_inner()
    }

    /// Mutable access without synchronization.
    ///
    /// ```
    /// let mut f = ppd::sync::atomic::AtomicBool::new(false);
    /// *f.get_mut() = true;
    /// assert!(f.into_inner());
    /// ```
    pub fn get_mut(&mut self) -> &mut bool {
        self.inner.get_mut()
    }

    #[inline(always)]
    fn rmw(
        &self,
        order: Ordering,
        site: &'static Location<'static>,
        op: impl FnOnce(&std::sync::atomic::AtomicBool) -> bool,
    ) -> bool {
        logged_access(&self.meta, order, site, |forced| {
            let previous = match forced {
                Some(v) => v != 0,
                None => op(&self.inner),
            };
            (previous, Some(u64::from(previous)), AtomicOp::Rmw)
        })
    }
}

/// An atomic raw pointer, like `std::sync::atomic::AtomicPtr`.
///
/// Its accesses are versioned like every atomic's, so replay reproduces their order, and with it
/// which store each load read. The addresses themselves mean nothing in another run: they are
/// never logged (not even inside an e-block), and the creation logs 0 as the initial value.
///
/// ```
/// use ppd::sync::atomic::{AtomicPtr, Ordering};
/// let mut x = 5;
/// let p = AtomicPtr::new(&mut x as *mut i32);
/// assert_eq!(unsafe { *p.load(Ordering::Acquire) }, 5);
/// ```
pub struct AtomicPtr<T> {
    meta: ObjectMeta,
    inner: std::sync::atomic::AtomicPtr<T>,
}

impl<T> fmt::Debug for AtomicPtr<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Reads without logging: printing must not add events to the run.
        f.debug_struct("AtomicPtr")
            .field("object", &self.meta.known_id())
            .field("value", &self.inner)
            .finish()
    }
}

impl<T> crate::runtime::binding::LazyObject for AtomicPtr<T> {
    fn register_now(&self) {
        self.meta.register_now();
    }
}

impl<T> Default for AtomicPtr<T> {
    /// A null pointer.
    #[track_caller]
    fn default() -> Self {
        AtomicPtr::new(std::ptr::null_mut())
    }
}

impl<T> From<*mut T> for AtomicPtr<T> {
    #[track_caller]
    fn from(p: *mut T) -> Self {
        AtomicPtr::new(p)
    }
}

impl<T> AtomicPtr<T> {
    /// A new atomic pointer.
    ///
    /// ```
    /// let p = ppd::sync::atomic::AtomicPtr::<u8>::new(std::ptr::null_mut());
    /// assert!(p.into_inner().is_null());
    /// ```
    #[track_caller]
    pub const fn new(p: *mut T) -> AtomicPtr<T> {
        AtomicPtr {
            meta: ObjectMeta::new(ObjectKind::Atomic, 0, None, Location::caller()),
            inner: std::sync::atomic::AtomicPtr::new(p),
        }
    }

    /// A new atomic pointer with a name that reports use.
    ///
    /// ```
    /// let p = ppd::sync::atomic::AtomicPtr::<u8>::named("head", std::ptr::null_mut());
    /// assert!(p.into_inner().is_null());
    /// ```
    #[track_caller]
    pub const fn named(name: &'static str, p: *mut T) -> AtomicPtr<T> {
        AtomicPtr {
            meta: ObjectMeta::new(ObjectKind::Atomic, 0, Some(name), Location::caller()),
            inner: std::sync::atomic::AtomicPtr::new(p),
        }
    }

    /// Loads the pointer.
    ///
    /// ```
    /// use ppd::sync::atomic::{AtomicPtr, Ordering};
    /// let p = AtomicPtr::<u8>::default();
    /// assert!(p.load(Ordering::Relaxed).is_null());
    /// ```
    #[inline]
    #[track_caller]
    pub fn load(&self, order: Ordering) -> *mut T {
        logged_access(&self.meta, order, Location::caller(), |_| {
            (self.inner.load(order), None, AtomicOp::Load)
        })
    }

    /// Stores a pointer.
    ///
    /// ```
    /// use ppd::sync::atomic::{AtomicPtr, Ordering};
    /// let mut x = 1u8;
    /// let p = AtomicPtr::default();
    /// p.store(&mut x, Ordering::Release);
    /// assert!(!p.load(Ordering::Acquire).is_null());
    /// ```
    #[inline]
    #[track_caller]
    pub fn store(&self, ptr: *mut T, order: Ordering) {
        logged_access(&self.meta, order, Location::caller(), |_| {
            self.inner.store(ptr, order);
            ((), None, AtomicOp::Store)
        })
    }

    /// Stores a pointer and returns the previous one.
    ///
    /// ```
    /// use ppd::sync::atomic::{AtomicPtr, Ordering};
    /// let mut x = 1u8;
    /// let p = AtomicPtr::default();
    /// assert!(p.swap(&mut x, Ordering::AcqRel).is_null());
    /// ```
    #[inline]
    #[track_caller]
    pub fn swap(&self, ptr: *mut T, order: Ordering) -> *mut T {
        logged_access(&self.meta, order, Location::caller(), |_| {
            (self.inner.swap(ptr, order), None, AtomicOp::Rmw)
        })
    }

    /// Stores `new` if the pointer is `current`; returns the previous pointer, as `Ok` if it
    /// was `current`.
    ///
    /// ```
    /// use ppd::sync::atomic::{AtomicPtr, Ordering};
    /// let mut x = 1u8;
    /// let p = AtomicPtr::default();
    /// let null = std::ptr::null_mut();
    /// assert_eq!(p.compare_exchange(null, &mut x, Ordering::AcqRel, Ordering::Acquire), Ok(null));
    /// assert!(p.compare_exchange(null, null, Ordering::AcqRel, Ordering::Acquire).is_err());
    /// ```
    #[inline]
    #[track_caller]
    pub fn compare_exchange(
        &self,
        current: *mut T,
        new: *mut T,
        success: Ordering,
        failure: Ordering,
    ) -> Result<*mut T, *mut T> {
        logged_cas(&self.meta, success, failure, Location::caller(), |_| {
            let result = self.inner.compare_exchange(current, new, success, failure);
            let op = if result.is_ok() {
                AtomicOp::Rmw
            } else {
                AtomicOp::CasFail
            };
            (result, None, op)
        })
    }

    /// Like [`compare_exchange`](Self::compare_exchange); never fails spuriously here.
    ///
    /// ```
    /// use ppd::sync::atomic::{AtomicPtr, Ordering};
    /// let p = AtomicPtr::<u8>::default();
    /// let null = std::ptr::null_mut();
    /// assert!(p.compare_exchange_weak(null, null, Ordering::SeqCst, Ordering::SeqCst).is_ok());
    /// ```
    #[inline]
    #[track_caller]
    pub fn compare_exchange_weak(
        &self,
        current: *mut T,
        new: *mut T,
        success: Ordering,
        failure: Ordering,
    ) -> Result<*mut T, *mut T> {
        self.compare_exchange(current, new, success, failure)
    }

    /// Replaces the pointer with what `f` makes of it, if `f` returns `Some`; returns the
    /// previous pointer, as `Ok` if it was replaced.
    ///
    /// ```
    /// use ppd::sync::atomic::{AtomicPtr, Ordering};
    /// let mut x = 1u8;
    /// let p = AtomicPtr::default();
    /// let x_ptr: *mut u8 = &mut x;
    /// assert!(p.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |_| Some(x_ptr)).is_ok());
    /// assert_eq!(p.load(Ordering::SeqCst), x_ptr);
    /// ```
    #[inline]
    #[track_caller]
    pub fn fetch_update(
        &self,
        set: Ordering,
        fetch: Ordering,
        f: impl FnMut(*mut T) -> Option<*mut T>,
    ) -> Result<*mut T, *mut T> {
        logged_cas(&self.meta, set, fetch, Location::caller(), |_| {
            let result = self.inner.fetch_update(set, fetch, f);
            let op = if result.is_ok() {
                AtomicOp::Rmw
            } else {
                AtomicOp::CasFail
            };
            (result, None, op)
        })
    }

    /// Mutable access without synchronization: the borrow proves exclusivity.
    ///
    /// ```
    /// let mut p = ppd::sync::atomic::AtomicPtr::<u8>::default();
    /// assert!(p.get_mut().is_null());
    /// ```
    pub fn get_mut(&mut self) -> &mut *mut T {
        self.inner.get_mut()
    }

    /// Consumes the atomic and returns the pointer.
    ///
    /// ```
    /// let p = ppd::sync::atomic::AtomicPtr::<u8>::default();
    /// assert!(p.into_inner().is_null());
    /// ```
    pub fn into_inner(self) -> *mut T {
        self.inner.into_inner()
    }
}

/// A memory fence, like `std::sync::atomic::fence`.
///
/// The fence itself takes effect as in std. ppd's happened-before does not model fences: it
/// orders two processes by an acquire access reading a release write, and a relaxed access
/// ordered only through a fence (C++'s fence–fence and fence–atomic synchronization) is
/// reported as a race. Give the accesses themselves release and acquire orderings to have the
/// order recorded.
///
/// ```
/// ppd::sync::atomic::fence(ppd::sync::atomic::Ordering::SeqCst);
/// ```
///
/// # Panics
///
/// Panics on `Ordering::Relaxed`, as std's does.
#[inline]
pub fn fence(order: Ordering) {
    std::sync::atomic::fence(order);
}

/// A compiler-only fence, like `std::sync::atomic::compiler_fence`; it orders nothing between
/// processes, in std or in ppd.
///
/// ```
/// ppd::sync::atomic::compiler_fence(ppd::sync::atomic::Ordering::SeqCst);
/// ```
///
/// # Panics
///
/// Panics on `Ordering::Relaxed`, as std's does.
#[inline]
pub fn compiler_fence(order: Ordering) {
    std::sync::atomic::compiler_fence(order);
}
