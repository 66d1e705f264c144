//! The bookkeeping every shared object carries: its id and its access versions.
//!
//! Instant replay for shared memory (LeBlanc & Mellor-Crummey): each access to an object gets a
//! version number, the count of accesses before it plus one, assigned atomically with the
//! access. Recording logs the version; replay lets an access through only when all earlier
//! versions have happened, so every process sees the object change in the recorded order.
//!
//! Recording keeps the versions in two plain atomics rather than under a lock: an object whose
//! own lock already serializes its accesses (a mutex, a semaphore's count) versions them under
//! that lock; an atomic, whose accesses nothing else orders, takes the low bit of its version
//! word as a spin lock for the length of one access and its log append.

use std::panic::Location;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};

use ppd_formats::event::ObjectKind;
use ppd_formats::{ObjectId, ProcessId};

use crate::runtime::{self, backend::Dependency};

/// Id and access versions of a shared object.
#[derive(Debug)]
pub(crate) struct ObjectMeta {
    pub(crate) id: ObjectId,
    /// Recording: twice the accesses so far, plus one while an access of an atomic holds it.
    stamp: AtomicU64,
    /// Recording: who made the last access, as [`encode_process`] writes it.
    last: AtomicU64,
    /// Replay: how many versions have happened, and the wait for the next.
    access: Mutex<u64>,
    turn: Condvar,
}

/// Spins on a held version word before yielding the CPU to its holder.
const SPINS_BEFORE_YIELD: u32 = 64;

fn encode_process(p: Option<ProcessId>) -> u64 {
    p.map_or(0, |p| u64::from(p.0) + 1)
}

fn decode_process(v: u64) -> Option<ProcessId> {
    v.checked_sub(1).map(|p| ProcessId(p as u32))
}

impl ObjectMeta {
    /// Creates the bookkeeping of a new object, logging its creation.
    pub(crate) fn new(
        kind: ObjectKind,
        init: u64,
        name: Option<&'static str>,
        site: &'static Location<'static>,
    ) -> ObjectMeta {
        ObjectMeta {
            id: runtime::create(kind, init, name, site),
            stamp: AtomicU64::new(0),
            last: AtomicU64::new(0),
            access: Mutex::new(0),
            turn: Condvar::new(),
        }
    }

    /// The bookkeeping of an object rebuilt for re-executing an e-block: its logged id, no
    /// creation event, and no turns to wait for (nothing else runs).
    pub(crate) fn emulated(id: ObjectId) -> ObjectMeta {
        ObjectMeta {
            id,
            stamp: AtomicU64::new(0),
            last: AtomicU64::new(0),
            access: Mutex::new(0),
            turn: Condvar::new(),
        }
    }

    /// The bookkeeping of an object a process has without creating it (its parker): a fixed
    /// id derived from the process, and no creation event to log.
    pub(crate) fn implicit(id: ObjectId) -> ObjectMeta {
        ObjectMeta::emulated(id)
    }

    fn lock(&self) -> MutexGuard<'_, u64> {
        self.access.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Record, for an access the caller's lock on the object serializes (held from before the
    /// access until after its event is logged): the access's version and who made the previous
    /// one.
    pub(crate) fn record_serialized(&self) -> (u64, Option<ProcessId>) {
        let me = runtime::current_process();
        // The caller's lock orders these with every other access: relaxed is enough.
        let stamp = self.stamp.load(Ordering::Relaxed) + 2;
        self.stamp.store(stamp, Ordering::Relaxed);
        let prev = self.last.swap(encode_process(me), Ordering::Relaxed);
        (stamp / 2, decode_process(prev))
    }

    /// Record: performs `access` as the object's next version and `log`s it before the next
    /// access can happen; returns the access's result. The accesses reach the log in version
    /// order, so if recording stops between two of them the logs keep the earlier one whenever
    /// they keep the later (a consistent cut).
    pub(crate) fn record_logged<R>(
        &self,
        access: impl FnOnce() -> R,
        log: impl FnOnce(&R, u64, Option<ProcessId>),
    ) -> R {
        let me = runtime::current_process();
        let mut held = self.hold_stamp();
        let result = access();
        let prev = self.last.swap(encode_process(me), Ordering::Relaxed);
        let version = held.stamp / 2 + 1;
        log(&result, version, decode_process(prev));
        held.stamp += 2;
        result
    }

    /// Takes the version word's lock bit; the guard gives it back, with the version it holds
    /// then.
    fn hold_stamp(&self) -> HeldStamp<'_> {
        let mut spins = 0;
        loop {
            let stamp = self.stamp.load(Ordering::Relaxed);
            if stamp & 1 == 0
                && self
                    .stamp
                    .compare_exchange_weak(stamp, stamp + 1, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
            {
                return HeldStamp { meta: self, stamp };
            }
            // The holder may be descheduled (more processes than cores): let it run.
            if spins < SPINS_BEFORE_YIELD {
                spins += 1;
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
    }

    /// Replay: waits until `version - 1` accesses have happened, performs `access` as access
    /// `version`, tells the runtime about it (`log`), and only then lets the next one through —
    /// so the runtime learns of the accesses in version order, as they happened.
    pub(crate) fn replay<R>(
        &self,
        version: u64,
        prev: Option<ProcessId>,
        access: impl FnOnce() -> R,
        log: impl FnOnce(&R),
    ) -> R {
        let mut state = self.lock();
        let mut asked = false;
        let alone = runtime::mode() == crate::runtime::backend::Mode::Emulate;
        while *state + 1 < version && !alone {
            if !asked {
                if let Some(by) = prev {
                    runtime::waiting_for(Dependency::Version {
                        object: self.id,
                        version: version - 1,
                        by,
                    });
                }
                asked = true;
            }
            state = self.turn.wait(state).unwrap_or_else(|p| p.into_inner());
        }
        let result = access();
        log(&result);
        *state = (*state).max(version);
        drop(state);
        self.turn.notify_all();
        result
    }
}

/// The version word of an object held by one access. Released when dropped, also when the
/// access panics (a user's `fetch_update` closure): then with the version unchanged, as no
/// access happened.
struct HeldStamp<'a> {
    meta: &'a ObjectMeta,
    /// The (even) word to store on release.
    stamp: u64,
}

impl Drop for HeldStamp<'_> {
    fn drop(&mut self) {
        self.meta.stamp.store(self.stamp, Ordering::Release);
    }
}
