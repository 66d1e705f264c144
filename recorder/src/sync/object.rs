//! The bookkeeping every shared object carries: its id and its access versions.
//!
//! Instant replay for shared memory (LeBlanc & Mellor-Crummey): each access to an object gets a
//! version number, the count of accesses before it plus one, assigned atomically with the
//! access. Recording logs the version; replay lets an access through only when all earlier
//! versions have happened, so every process sees the object change in the recorded order.

use std::panic::Location;
use std::sync::{Condvar, Mutex, MutexGuard};

use ppd_formats::event::ObjectKind;
use ppd_formats::{ObjectId, ProcessId};

use crate::runtime::{self, backend::Dependency};

#[derive(Debug, Default)]
struct Access {
    version: u64,
    last: Option<ProcessId>,
}

/// Id and access versions of a shared object.
#[derive(Debug)]
pub(crate) struct ObjectMeta {
    pub(crate) id: ObjectId,
    access: Mutex<Access>,
    turn: Condvar,
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
            access: Mutex::new(Access::default()),
            turn: Condvar::new(),
        }
    }

    /// The bookkeeping of an object rebuilt for re-executing an e-block: its logged id, no
    /// creation event, and no turns to wait for (nothing else runs).
    pub(crate) fn emulated(id: ObjectId) -> ObjectMeta {
        ObjectMeta {
            id,
            access: Mutex::new(Access::default()),
            turn: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Access> {
        self.access.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Record: performs `access` as the object's next version; returns its result, the version
    /// and who made the previous access.
    pub(crate) fn record<R>(&self, access: impl FnOnce() -> R) -> (R, u64, Option<ProcessId>) {
        self.record_logged(access, |_, _, _| {})
    }

    /// [`record`](Self::record), and `log` the access before the next one can happen: the
    /// accesses reach the log in version order, so if recording stops between two of them the
    /// logs keep the earlier one whenever they keep the later (a consistent cut).
    pub(crate) fn record_logged<R>(
        &self,
        access: impl FnOnce() -> R,
        log: impl FnOnce(&R, u64, Option<ProcessId>),
    ) -> (R, u64, Option<ProcessId>) {
        let me = runtime::current_process();
        let mut state = self.lock();
        let result = access();
        state.version += 1;
        let prev = std::mem::replace(&mut state.last, me);
        log(&result, state.version, prev);
        (result, state.version, prev)
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
        let me = runtime::current_process();
        let mut state = self.lock();
        let mut asked = false;
        let alone = runtime::mode() == crate::runtime::backend::Mode::Emulate;
        while state.version + 1 < version && !alone {
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
        state.version = state.version.max(version);
        state.last = me;
        drop(state);
        self.turn.notify_all();
        result
    }
}
