//! Synchronization between logical processes, mirroring `std::sync`.
//!
//! Channels ([`mpsc`]), [`Mutex`], [`Semaphore`] and [`atomic`]s are shared objects: each has an
//! id, logs its creation, and versions or sequences every access so that replay can force the
//! recorded order. All but channels have `const` constructors, as std's do, and are registered
//! at their first use (`object`). [`Once`], [`OnceLock`], [`LazyLock`], [`Barrier`] and
//! [`Condvar`] are built from them, so their choices are carried by the events of their parts.

pub mod atomic;
mod barrier;
pub(crate) mod bound;
mod condvar;
pub(crate) mod handle;
mod lock_core;
pub mod mpsc;
mod mutex;
mod object;
mod once;
pub(crate) mod receiver_iterators;
mod rwlock;
mod semaphore;
pub mod values;

pub use barrier::{Barrier, BarrierWaitResult};
pub use condvar::{Condvar, WaitTimeoutResult};
pub use mutex::{Mutex, MutexGuard};
pub use once::{LazyLock, Once, OnceLock, OnceState};
pub use rwlock::{RwLock, RwLockReadGuard, RwLockWriteGuard};
pub use semaphore::Semaphore;
pub use std::sync::{Arc, LockResult, PoisonError, TryLockError, TryLockResult, Weak};
pub use values::log_values;
