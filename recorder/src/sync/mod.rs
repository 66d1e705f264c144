//! Synchronization between logical processes, mirroring `std::sync`.
//!
//! Channels ([`mpsc`]), [`Mutex`], [`Semaphore`] and [`atomic`]s are shared objects: each has an
//! id, logs its creation, and versions or sequences every access so that replay can force the
//! recorded order.

pub mod atomic;
mod handle;
pub mod mpsc;
mod mutex;
mod object;
mod rwlock;
mod semaphore;
pub mod values;

pub use mutex::{Mutex, MutexGuard};
pub use rwlock::{RwLock, RwLockReadGuard, RwLockWriteGuard};
pub use semaphore::Semaphore;
pub use std::sync::{Arc, LockResult, PoisonError, TryLockError, TryLockResult, Weak};
pub use values::log_values;
