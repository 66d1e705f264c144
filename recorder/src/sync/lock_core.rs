//! What a mutex and a reader-writer lock do alike under a backend: a try's logged answer, a
//! recorded acquisition that says `Blocked` before it waits, the wait a replayed acquisition
//! announces, the guarded value logged with an acquisition and put back when an e-block is
//! re-executed, and the value slot a lock rebuilt from a prelog leaves empty.
//!
//! The two differ in when an acquisition takes its version and logs it (`Mutex` after it
//! holds the lock, `RwLock` inside its version turn, as its releases are versioned too); that
//! stays in each.

use std::panic::Location;
use std::sync::{LockResult, PoisonError, TryLockError, TryLockResult};

use ppd_formats::event::Outcome;
use ppd_formats::{Event, EventKind, ObjectId, ProcessId};

use super::object::{ObjectMeta, another_process};
use super::values::{Opaque, Values};
use crate::runtime::backend::{Dependency, Op};
use crate::runtime::{self};

/// What kind of lock a message names.
#[derive(Clone, Copy, Debug)]
pub(super) enum LockKind {
    Mutex,
    RwLock,
}

impl LockKind {
    fn name(self) -> &'static str {
        match self {
            LockKind::Mutex => "mutex",
            LockKind::RwLock => "rwlock",
        }
    }

    /// What its versions count.
    fn versions(self) -> &'static str {
        match self {
            LockKind::Mutex => "acquisition",
            LockKind::RwLock => "operation",
        }
    }
}

/// A `try_*`'s answer under a backend: `None` if the lock was held, else that it acquired
/// (with the std guard when recording, which already holds the lock: the answer is logged
/// first; without it in replay, where the acquisition logged next says in which turn). Out of
/// line, so that a pass-through `try_*` inlines to std's.
#[inline(never)]
pub(super) fn try_answer<G>(
    meta: &ObjectMeta,
    site: &'static Location<'static>,
    try_now: impl FnOnce() -> TryLockResult<G>,
) -> Option<Option<LockResult<G>>> {
    let object = meta.id();
    let answer = runtime::expect(Op::on(EventKind::Outcome, object, Some(site)));
    let tried = match answer {
        Some(Event::Outcome {
            outcome: Outcome::WouldBlock,
            ..
        }) => None,
        Some(_) => Some(None),
        None => match try_now() {
            Ok(guard) => Some(Some(Ok(guard))),
            Err(TryLockError::Poisoned(p)) => Some(Some(Err(p))),
            Err(TryLockError::WouldBlock) => None,
        },
    };
    runtime::done(&Event::Outcome {
        object,
        outcome: if tried.is_some() {
            Outcome::Acquired
        } else {
            Outcome::WouldBlock
        },
        site: Some(site),
    });
    tried
}

/// A recorded acquisition: what a try already got, or the lock if it is free within a short
/// spin ([`try_a_while`]), or, after logging `Blocked` (what a hang leaves at the end of the
/// log), the lock once it is.
#[inline]
pub(super) fn acquire_recording<G>(
    object: ObjectId,
    site: &'static Location<'static>,
    tried: Option<LockResult<G>>,
    try_now: impl FnMut() -> TryLockResult<G>,
    block: impl FnOnce() -> LockResult<G>,
) -> LockResult<G> {
    match tried {
        Some(acquired) => acquired,
        None => match try_a_while(try_now) {
            Ok(guard) => Ok(guard),
            Err(TryLockError::Poisoned(p)) => Err(p),
            Err(TryLockError::WouldBlock) => {
                runtime::done(&Event::Blocked {
                    object,
                    site: Some(site),
                });
                block()
            }
        },
    }
}

/// How many times [`try_a_while`] tries the lock, and the spin-loop pauses between tries.
const TRIES: u32 = 5;
const PAUSES_BETWEEN_TRIES: u32 = 128;

/// The lock if a try gets it within a short spin. Most contended acquisitions end that soon,
/// and one that does logs no `Blocked` (an append while the holder waits for nothing). The
/// pauses keep the tries, each a compare-and-swap of the lock's line, from taking it from its
/// holder. The recorded lock-heavy workload of the overhead benchmark (4 processes, 2 CPUs;
/// medians of 7 runs) took 117 ms with one try, which blocked on 18 % of acquisitions; 6 tries
/// 128 pauses apart 64–70 ms, 11 tries 16 apart 68, 101 back to back 115, and 8 spaced by
/// crossbeam's back-off (pauses doubling from 1) 159. These 5 took 63 ms in a run of the whole
/// benchmark.
#[inline]
fn try_a_while<G>(mut try_now: impl FnMut() -> TryLockResult<G>) -> TryLockResult<G> {
    for _ in 1..TRIES {
        match try_now() {
            Err(TryLockError::WouldBlock) => {
                for _ in 0..PAUSES_BETWEEN_TRIES {
                    std::hint::spin_loop();
                }
            }
            got => return got,
        }
    }
    try_now()
}

/// A replayed acquisition `version` needs the operation before it: say so before blocking
/// on it, so that a debugger holding the other process knows who waits.
#[inline]
pub(super) fn announce_turn(object: ObjectId, version: u64, prev: Option<ProcessId>) {
    if let Some(by) = another_process(prev).filter(|_| version > 1) {
        runtime::waiting_for(Dependency::Version {
            object,
            version: version - 1,
            by,
        });
    }
}

/// The guarded value to log with an acquisition, when the backend wants values.
#[inline]
pub(super) fn logged_value<T>(values: &Values<T>, held: &Option<T>) -> Option<Vec<u8>> {
    if runtime::wants_payload() {
        held.as_ref().and_then(|v| values.encode(v))
    } else {
        None
    }
}

/// Re-executing an e-block: puts in `held` the value acquisition `version` logged
/// (`logged_bytes`). A lock the re-execution made itself keeps its own value when none was
/// logged; one rebuilt from the prelog has no other, and without a logged value the
/// re-execution stops, saying why.
pub(super) fn restore_value<T>(
    kind: LockKind,
    meta: &ObjectMeta,
    values: &Values<T>,
    held: &mut Option<T>,
    logged_bytes: Option<&[u8]>,
    version: u64,
    site: &'static Location<'static>,
) {
    let rebuilt = match logged_bytes {
        Some(bytes) => values.decode(bytes),
        None if held.is_some() => return,
        None if !values.known() => Err(Opaque::NotSerde(std::any::type_name::<T>())),
        None => Err(Opaque::Undecodable(
            "the acquisition was logged without it".into(),
        )),
    };
    match rebuilt {
        Ok(v) => *held = Some(v),
        Err(why) => runtime::diverged(&format!(
            "a lock of {} {} at {site} ({} {version}) that needs the locked value, which is \
             not in the log: {why}",
            kind.name(),
            meta.id(),
            kind.versions()
        )),
    }
}

/// The value of a lock that has one: every lock but one rebuilt for a re-execution before
/// its first acquisition. The id is asked for only then (asking registers the object).
#[inline]
pub(super) fn present_mut<'v, T>(
    value: &'v mut Option<T>,
    kind: LockKind,
    meta: &ObjectMeta,
) -> &'v mut T {
    match value {
        Some(v) => v,
        None => vacant(kind, meta.id()),
    }
}

/// `get_mut` of a lock: the value through std's poisoning.
pub(super) fn value_mut<'v, T>(
    inner: LockResult<&'v mut Option<T>>,
    kind: LockKind,
    meta: &ObjectMeta,
) -> LockResult<&'v mut T> {
    match inner {
        Ok(v) => Ok(present_mut(v, kind, meta)),
        Err(p) => Err(PoisonError::new(present_mut(p.into_inner(), kind, meta))),
    }
}

/// `into_inner` of a lock: the value through std's poisoning.
pub(super) fn into_value<T>(
    inner: LockResult<Option<T>>,
    kind: LockKind,
    id: ObjectId,
) -> LockResult<T> {
    match inner {
        Ok(v) => Ok(v.unwrap_or_else(|| vacant(kind, id))),
        Err(p) => Err(PoisonError::new(
            p.into_inner().unwrap_or_else(|| vacant(kind, id)),
        )),
    }
}

/// A re-executed e-block used the value of a lock it never acquired: the prelog holds only
/// the lock's id, so there is no value to give it.
#[cold]
pub(super) fn vacant(kind: LockKind, id: ObjectId) -> ! {
    let kind = kind.name();
    runtime::diverged(&format!(
        "the value of {kind} {id}, which the re-executed e-block used without acquiring it \
         (the log holds a {kind}'s value only at its acquisitions)"
    ))
}
