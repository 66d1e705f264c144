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
//! word as a spin lock for the length of one access and a raw record of it in its log's
//! pending slot (`ppd_formats::pending`), and appends the encoded event after letting go.

use std::panic::Location;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::thread::Thread;

use crossbeam_utils::Backoff;

use ppd_formats::event::ObjectKind;
use ppd_formats::{Event, ObjectId, ProcessId};

use crate::runtime::backend::{Dependency, Mode};
use crate::runtime::{self};

/// What an object's `Create` event says about it, kept until its first use logs it.
#[derive(Debug, Clone, Copy)]
struct Creation {
    kind: ObjectKind,
    init: u64,
    name: Option<&'static str>,
    site: &'static Location<'static>,
}

/// Id and access versions of a shared object.
///
/// An object is registered lazily, so that constructors can be `const` as std's are (a
/// `static` mutex or atomic): it gets its id and logs its `Create` at its first use, in the
/// process that uses it first ([`ObjectMeta::id`]). Which process that is, is a choice of the
/// run: replay makes the process whose next logged event is the `Create` register it, and any
/// other process that reaches the object first waits for that (`Dependency::Version` of access
/// 0, the creation).
#[derive(Debug)]
pub(crate) struct ObjectMeta {
    /// The object's id, or [`UNREGISTERED`] / [`REGISTERING`].
    registered: AtomicU64,
    creation: Creation,
    /// Recording: twice the accesses so far, plus one while an access of an atomic holds it.
    stamp: AtomicU64,
    /// Recording: who made the last access, as [`encode_process`] writes it.
    last: AtomicU64,
    /// Replay: how many versions have happened, and the wait for the next (also the wait for
    /// the registration).
    access: Mutex<Turns>,
    turn: Condvar,
    /// Replay: `access.happened` as of its last change, for a process whose turn is near to
    /// watch without the lock.
    happened_hint: AtomicU64,
}

/// Replay: the versions of an object that have happened, and the accesses asleep until their
/// turn. Each access wakes only the one whose turn comes next, if it sleeps: waking every
/// sleeper (a condition variable's broadcast) made each access a system call and sent the
/// others straight back to sleep.
#[derive(Debug)]
struct Turns {
    happened: u64,
    /// The version each sleeping access waits to follow, and its thread.
    asleep: Vec<(u64, Thread)>,
}

/// How many back-off steps (spins, then yields) a replayed access watches for its turn before
/// it sleeps.
const TURN_WATCH_STEPS: u32 = 200;

/// The id word of an object nobody has used yet. Ids of unmanaged threads' objects count up
/// from `ObjectId::new(ProcessId(u32::MAX), 0)` and never reach these two.
const UNREGISTERED: u64 = u64::MAX;
/// The id word while the first user logs the creation.
const REGISTERING: u64 = u64::MAX - 1;

/// The process that made an object's previous access, if not the current one: replay waits
/// only for another process (its own earlier accesses came before in program order), and
/// telling the runtime about a wait costs its controller's lock.
pub(crate) fn another_process(prev: Option<ProcessId>) -> Option<ProcessId> {
    prev.filter(|&p| Some(p) != runtime::current_process())
}

fn encode_process(p: Option<ProcessId>) -> u64 {
    p.map_or(0, |p| u64::from(p.0) + 1)
}

fn decode_process(v: u64) -> Option<ProcessId> {
    v.checked_sub(1).map(|p| ProcessId(p as u32))
}

impl ObjectMeta {
    /// The bookkeeping of a new object, not yet registered: its first use gives it its id and
    /// logs its creation (`kind`, `init`, `name`, made at `site`).
    pub(crate) const fn new(
        kind: ObjectKind,
        init: u64,
        name: Option<&'static str>,
        site: &'static Location<'static>,
    ) -> ObjectMeta {
        ObjectMeta::with_word(
            UNREGISTERED,
            Creation {
                kind,
                init,
                name,
                site,
            },
        )
    }

    const fn with_word(word: u64, creation: Creation) -> ObjectMeta {
        ObjectMeta {
            registered: AtomicU64::new(word),
            creation,
            stamp: AtomicU64::new(0),
            last: AtomicU64::new(0),
            access: Mutex::new(Turns {
                happened: 0,
                asleep: Vec::new(),
            }),
            turn: Condvar::new(),
            happened_hint: AtomicU64::new(0),
        }
    }

    /// The bookkeeping of an object rebuilt for re-executing an e-block: its logged id, no
    /// creation event, and no turns to wait for (nothing else runs).
    #[track_caller]
    pub(crate) fn emulated(id: ObjectId) -> ObjectMeta {
        ObjectMeta::with_word(
            id.0,
            Creation {
                kind: ObjectKind::Atomic,
                init: 0,
                name: None,
                site: Location::caller(),
            },
        )
    }

    /// The bookkeeping of an object a process has without creating it (its parker): a fixed
    /// id derived from the process, and no creation event to log.
    #[track_caller]
    pub(crate) fn implicit(id: ObjectId) -> ObjectMeta {
        ObjectMeta::emulated(id)
    }

    /// The object's id, registering the object if this is its first use (see the type's
    /// docs). Pass-through objects are all `ObjectId(0)` and never registered.
    #[inline]
    pub(crate) fn id(&self) -> ObjectId {
        let word = self.registered.load(Ordering::Acquire);
        if word < REGISTERING {
            return ObjectId(word);
        }
        if !runtime::active() {
            return ObjectId(0);
        }
        self.register()
    }

    /// The id if the object has been used: for printing it, which must not log anything.
    pub(crate) fn known_id(&self) -> Option<ObjectId> {
        let word = self.registered.load(Ordering::Acquire);
        (word < REGISTERING).then_some(ObjectId(word))
    }

    /// Registers the object now, as its first use would: a `let` in `#[ppd::main]` does, so
    /// that the object is created where it is bound and takes the binding's name.
    pub(crate) fn register_now(&self) {
        if runtime::active() {
            self.id();
        }
    }

    #[cold]
    #[inline(never)]
    fn register(&self) -> ObjectId {
        let Creation {
            kind,
            init,
            name,
            site,
        } = self.creation;
        match runtime::mode() {
            Mode::PassThrough => ObjectId(0),
            Mode::Record => {
                if self.claim() {
                    self.publish(runtime::create(kind, init, name, site))
                } else {
                    self.await_registration()
                }
            }
            Mode::Replay | Mode::Emulate => match runtime::next_logged() {
                // This process logged the creation: it registers the object, with the id the
                // log checks (replay) or gives (emulation).
                Some(e) if self.is_my_creation(&e) && self.claim() => {
                    self.publish(runtime::create(kind, init, name, site))
                }
                // Re-executing an e-block, nothing else runs: the object is the one the next
                // logged event acts on, created outside the instance.
                Some(e) if runtime::mode() == Mode::Emulate => match e.object() {
                    Some(id) if self.claim() => self.publish(id),
                    _ => self.await_registration(),
                },
                // Another process registers it: wait for its `Create` to be replayed. (The
                // next event is this object's unless it is the creation of another: then
                // which process registers this one is not known here.)
                Some(e) => {
                    match e.object().filter(|_| !matches!(e, Event::Create { .. })) {
                        Some(id) => runtime::waiting_for(Dependency::Version {
                            object: id,
                            version: 0,
                            by: id.creator(),
                        }),
                        // Without the id, say what is awaited: a held creator would
                        // otherwise leave this process waiting where no controller sees it.
                        None => runtime::waiting_for(Dependency::Creation { kind, site }),
                    }
                    self.await_registration()
                }
                // The end of the log (or damage): `create` reports the divergence.
                None => {
                    runtime::create(kind, init, name, site);
                    self.await_registration()
                }
            },
        }
    }

    /// Whether `logged` is this object's `Create`: its kind, made at its site.
    fn is_my_creation(&self, logged: &Event) -> bool {
        let here = self.creation.site;
        match logged {
            Event::Create { kind, site, .. } => {
                *kind == self.creation.kind && site.as_ref().is_none_or(|s| s.is(here))
            }
            _ => false,
        }
    }

    /// Whether this process is the one to register the object.
    fn claim(&self) -> bool {
        self.registered
            .compare_exchange(
                UNREGISTERED,
                REGISTERING,
                Ordering::Acquire,
                Ordering::Acquire,
            )
            .is_ok()
    }

    fn publish(&self, id: ObjectId) -> ObjectId {
        self.registered.store(id.0, Ordering::Release);
        // Under the lock the waiters check the word under: none misses the wake-up.
        drop(self.lock());
        self.turn.notify_all();
        id
    }

    /// Waits until another process has registered the object.
    fn await_registration(&self) -> ObjectId {
        let mut state = self.lock();
        loop {
            if let Some(id) = self.known_id() {
                return id;
            }
            state = self.turn.wait(state).unwrap_or_else(|p| p.into_inner());
        }
    }

    fn lock(&self) -> MutexGuard<'_, Turns> {
        self.access.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Replay: sleeps until the access before `version` wakes this thread (or it wakes
    /// spuriously: the caller checks its turn again).
    fn sleep_until_turn<'a>(
        &'a self,
        mut state: MutexGuard<'a, Turns>,
        version: u64,
    ) -> MutexGuard<'a, Turns> {
        let me = std::thread::current();
        state.asleep.push((version, me.clone()));
        drop(state);
        // An unpark between the drop and here makes this return at once.
        std::thread::park();
        let mut state = self.lock();
        state.asleep.retain(|(_, t)| t.id() != me.id());
        state
    }

    /// Record, for an access the caller's lock on the object serializes (held from before the
    /// access until after its event is logged): the access's version and who made the previous
    /// one.
    pub(crate) fn record_serialized(&self) -> (u64, Option<ProcessId>) {
        let me = runtime::current_process();
        // The caller's lock orders these with every other access: relaxed is enough.
        let stamp = self.stamp.load(Ordering::Relaxed) + 2;
        self.stamp.store(stamp, Ordering::Relaxed);
        (stamp / 2, self.take_last(me))
    }

    /// Record, while this access holds the object (its lock or its version word): who made the
    /// previous access, with `me` now the last. A load and a store, not a swap: nobody else
    /// writes the word meanwhile, and a locked exchange would lengthen every access.
    fn take_last(&self, me: Option<ProcessId>) -> Option<ProcessId> {
        let prev = self.last.load(Ordering::Relaxed);
        self.last.store(encode_process(me), Ordering::Relaxed);
        decode_process(prev)
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
        let (result, version, prev, held) = self.access_held(access);
        log(&result, version, prev);
        held.next_version();
        result
    }

    /// Record, for an atomic: performs `access` as the object's next version, `pend`s it (a
    /// raw record that survives the process's death) before the next access can happen, and
    /// `log`s it after letting the next one through; returns the access's result.
    ///
    /// Logging inside would keep the next access waiting for the event's encoding and append,
    /// which under contention made each access dearer: the atomic-heavy benchmark's recorded
    /// run took 245 ms with the append inside and 167 ms with it outside (medians of 9).
    /// Outside, a later version may reach the log before this one; if the process dies in
    /// between, the pending record gives a reader the missing access, so the logs still never
    /// hold a version without the versions before it.
    pub(crate) fn record_pended<R>(
        &self,
        access: impl FnOnce() -> R,
        pend: impl FnOnce(&R, u64, Option<ProcessId>),
        log: impl FnOnce(&R, u64, Option<ProcessId>),
    ) -> R {
        let (result, version, prev, held) = self.access_held(access);
        pend(&result, version, prev);
        held.next_version();
        log(&result, version, prev);
        result
    }

    /// Record: performs `access` holding the version word, which the caller gets to give back;
    /// with the access's version and who made the previous one.
    fn access_held<R>(
        &self,
        access: impl FnOnce() -> R,
    ) -> (R, u64, Option<ProcessId>, HeldStamp<'_>) {
        let me = runtime::current_process();
        let held = self.hold_stamp();
        let result = access();
        let prev = self.take_last(me);
        let version = held.stamp / 2 + 1;
        (result, version, prev, held)
    }

    /// Takes the version word's lock bit; the guard gives it back, with the version it holds
    /// then.
    fn hold_stamp(&self) -> HeldStamp<'_> {
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
            // Yields at once rather than spinning: the holder lets go after a few stores, and a
            // spinning waiter takes the word's cache line from it and, with more processes than
            // cores, the CPU it needs. With crossbeam's back-off (spins, then yields) the
            // recorded atomic-ptr benchmark took 250 ms, with 7 spins before yielding 215 ms,
            // yielding at once 113 ms (medians of 3 to 9 runs).
            std::thread::yield_now();
        }
    }

    /// Replay: watches for access `version`'s turn for a short back-off, without the lock or
    /// telling the runtime: in a busy object the turn mostly comes sooner than a sleep and
    /// a wake-up would take. Only while the other processes run freely: a debugger holding
    /// the one whose access comes first lets it go only once told of the wait.
    fn watch_for_turn(&self, version: u64) {
        let backoff = Backoff::new();
        for _ in 0..TURN_WATCH_STEPS {
            if self.happened_hint.load(Ordering::Acquire) + 1 >= version {
                return;
            }
            backoff.snooze();
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
        let alone = runtime::mode() == crate::runtime::backend::Mode::Emulate;
        if !alone
            && self.happened_hint.load(Ordering::Acquire) + 1 < version
            && runtime::others_run_freely()
        {
            self.watch_for_turn(version);
        }
        let mut state = self.lock();
        let mut asked = false;
        while state.happened + 1 < version && !alone {
            if !asked {
                if let Some(by) = prev {
                    runtime::waiting_for(Dependency::Version {
                        object: self.id(),
                        version: version - 1,
                        by,
                    });
                }
                asked = true;
            }
            state = self.sleep_until_turn(state, version);
        }
        let result = access();
        log(&result);
        state.happened = state.happened.max(version);
        self.happened_hint.store(state.happened, Ordering::Release);
        let next = state.happened + 1;
        let mut turn_come = Vec::new();
        state.asleep.retain(|(v, t)| {
            let woken = *v <= next;
            if woken {
                turn_come.push(t.clone());
            }
            !woken
        });
        drop(state);
        for t in turn_come {
            t.unpark();
        }
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

impl HeldStamp<'_> {
    /// Gives the word back with the access counted: the next access gets the next version.
    fn next_version(mut self) {
        self.stamp += 2;
    }
}

impl Drop for HeldStamp<'_> {
    fn drop(&mut self) {
        self.meta.stamp.store(self.stamp, Ordering::Release);
    }
}
