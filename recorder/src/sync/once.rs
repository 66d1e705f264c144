//! One-time initialization mirroring `std::sync::{Once, OnceLock, LazyLock}`.
//!
//! Built on ppd's own [`Mutex`] and [`AtomicU8`], so the existing events carry every choice:
//! which process runs the initializer is the order of the lock's acquisitions (logged and
//! replayed), and whether a caller found the initialization done is an atomic load whose
//! version replay reproduces. Only a process's first look that finds it done is logged (outside
//! e-blocks): done is final, so its later looks follow that one in program order and cannot
//! find anything else. The happened-before follows as std's guarantees do: the
//! initializer's process stores "complete" with `Release` before it unlocks, and every caller
//! that sees it complete either loaded it with `Acquire` (an atomic edge) or acquired the lock
//! after the initializer released it (a lock edge). So no write of the initializer races with a
//! reader of the value.
//!
//! Values are the user's: the value a `OnceLock` holds is never logged. Re-executing an
//! e-block (`ppd why`), a `OnceLock` starts empty; where the logged run found it initialized by
//! someone else, `get_or_init` and `LazyLock` run the initializer again to rebuild it, which is
//! right when the initializer computes the same value from nothing ppd logs (no receive, lock or
//! atomic inside it: those would be operations the instance's log lacks). A bare `get` that
//! needs a value initialized outside the instance stops the re-execution, saying so.

use std::cell::UnsafeCell;
use std::fmt;
use std::ops::{Deref, DerefMut};
use std::panic::{Location, RefUnwindSafe, UnwindSafe};
use std::sync::atomic::{AtomicU8 as PlainU8, AtomicU32 as PlainU32};

use super::atomic::{AtomicU8, Ordering};
use super::condvar::Condvar;
use super::mutex::Mutex;
use crate::runtime::binding::LazyObject;
use crate::runtime::{self, backend::Mode};

/// Nobody has completed the initialization.
const INCOMPLETE: u8 = 0;
/// An initializer panicked; nobody has completed it since.
const POISONED: u8 = 1;
/// Done.
const COMPLETE: u8 = 2;

/// A one-time initialization, like `std::sync::Once`.
///
/// ```
/// use ppd::sync::Once;
/// static INIT: Once = Once::new();
/// let mut runs = 0;
/// INIT.call_once(|| runs += 1);
/// INIT.call_once(|| runs += 1);
/// assert_eq!(runs, 1);
/// assert!(INIT.is_completed());
/// ```
pub struct Once {
    state: AtomicU8,
    /// Held by the process running the initializer; the others wait on it.
    running: Mutex<()>,
    /// Where [`Once::wait`] waits for a completion nobody has started yet.
    finished: Condvar,
    /// How many processes wait on `finished`: read and written holding `running`, whose
    /// order replay reproduces, so an initializer notifies (a logged event) only when
    /// someone waits, in replay as in the recording.
    waiters: PlainU32,
    /// How many times the `OnceLock` this belongs to was emptied (`take`): a process that saw
    /// an earlier generation complete must look again.
    generation: PlainU32,
    /// Bit `k` set: process `k` (below 64) has seen this generation complete, and looks no
    /// more (see [`is_completed_logged`](Once::is_completed_logged)). In the cell, not in the
    /// process, so that a repeated look is one load of a line the cell's readers share.
    seen_by: std::sync::atomic::AtomicU64,
}

/// What `call_once_force`'s closure is told, like `std::sync::OnceState`.
#[derive(Debug)]
pub struct OnceState {
    poisoned: bool,
}

impl OnceState {
    /// Whether an earlier initializer panicked.
    ///
    /// ```
    /// let once = ppd::sync::Once::new();
    /// once.call_once_force(|state| assert!(!state.is_poisoned()));
    /// ```
    pub fn is_poisoned(&self) -> bool {
        self.poisoned
    }
}

impl fmt::Debug for Once {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Once").finish_non_exhaustive()
    }
}

impl Default for Once {
    #[track_caller]
    fn default() -> Self {
        Once::new()
    }
}

impl Once {
    /// A new `Once`; its hidden lock and state are reported as `once`.
    #[track_caller]
    pub const fn new() -> Once {
        Once::hidden("once", INCOMPLETE)
    }

    /// A `Once` in `state` whose hidden objects reports call `name` (the type that uses it).
    #[track_caller]
    const fn hidden(name: &'static str, state: u8) -> Once {
        Once {
            state: AtomicU8::named(name, state),
            running: Mutex::named(name, ()),
            finished: Condvar::named(name),
            waiters: PlainU32::new(0),
            generation: PlainU32::new(0),
            seen_by: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// Runs `f` if no call has completed yet; returns once one has. Panics if an earlier
    /// initializer panicked, as std's does.
    ///
    /// ```
    /// let once = ppd::sync::Once::new();
    /// once.call_once(|| println!("once"));
    /// ```
    #[track_caller]
    pub fn call_once<F: FnOnce()>(&self, f: F) {
        if self.is_completed() {
            return;
        }
        self.run(false, |_| f());
    }

    /// Like [`call_once`](Self::call_once), but also runs after a panicked initializer,
    /// telling `f` so.
    ///
    /// ```
    /// let once = ppd::sync::Once::new();
    /// let _ = std::panic::catch_unwind(|| once.call_once(|| panic!("fails")));
    /// once.call_once_force(|state| assert!(state.is_poisoned()));
    /// assert!(once.is_completed());
    /// ```
    #[track_caller]
    pub fn call_once_force<F: FnOnce(&OnceState)>(&self, f: F) {
        if self.is_completed() {
            return;
        }
        self.run(true, f);
    }

    /// Whether a call has completed (a logged `Acquire` load: seeing it complete orders the
    /// caller after the initializer).
    ///
    /// ```
    /// let once = ppd::sync::Once::new();
    /// assert!(!once.is_completed());
    /// once.call_once(|| {});
    /// assert!(once.is_completed());
    /// ```
    #[inline]
    #[track_caller]
    pub fn is_completed(&self) -> bool {
        if !runtime::active() {
            return self.state.load(Ordering::Acquire) == COMPLETE;
        }
        self.is_completed_logged()
    }

    /// `is_completed` under a backend. Completion is final until the cell is emptied, which
    /// takes it exclusively, so only a process's first look that finds it complete is logged:
    /// that load orders the process after the initializer, and its later looks follow in
    /// program order. Logging every look made each a contended versioned access of the state,
    /// hundreds of times a plain load.
    ///
    /// What a process has seen is kept in the cell for processes below 64 ([`Once::seen_by`],
    /// a load and a bit test), in the process's own table for the others.
    #[inline]
    #[track_caller]
    fn is_completed_logged(&self) -> bool {
        let Some(bit) = runtime::seen_bit() else {
            return self.is_completed_looked_up();
        };
        // Relaxed: the bit is this process's own, set after its first look (an `Acquire`
        // load that ordered it after the initializer); `take` clears every bit exclusively.
        if self.seen_by.load(Ordering::Relaxed) & bit != 0 {
            return true;
        }
        self.first_look(bit)
    }

    /// A process's look while it has not seen the cell complete: the logged load.
    #[inline(never)]
    #[track_caller]
    fn first_look(&self, bit: u64) -> bool {
        let complete = self.state.load(Ordering::Acquire) == COMPLETE;
        if complete {
            self.seen_by.fetch_or(bit, Ordering::Relaxed);
        }
        complete
    }

    /// `is_completed_logged` for a process with no bit in the cell: what it has seen is in its
    /// own table, by generation.
    #[inline(never)]
    #[track_caller]
    fn is_completed_looked_up(&self) -> bool {
        let object = self.state.object();
        // Relaxed: only `take` changes it, holding the cell exclusively.
        let generation = self.generation.load(Ordering::Relaxed);
        if runtime::seen_complete(object, generation) {
            return true;
        }
        let complete = self.state.load(Ordering::Acquire) == COMPLETE;
        if complete {
            runtime::note_complete(object, generation);
        }
        complete
    }

    /// The slow path: under the lock, runs `f` unless someone completed meanwhile.
    #[track_caller]
    fn run(&self, force: bool, f: impl FnOnce(&OnceState)) {
        let held = self.running.lock().unwrap_or_else(|p| p.into_inner());
        // The lock orders this load after every earlier initializer's store.
        let poisoned = match self.state.load(Ordering::Acquire) {
            COMPLETE => return,
            POISONED if !force => {
                drop(held);
                panic!("Once instance has previously been poisoned");
            }
            state => state == POISONED,
        };
        let running = Running { once: self };
        f(&OnceState { poisoned });
        std::mem::forget(running);
        self.state.store(COMPLETE, Ordering::Release);
        self.wake_waiters();
        drop(held);
    }

    /// Wakes the processes in [`wait`](Self::wait); the caller holds `running`.
    fn wake_waiters(&self) {
        if self.waiters.load(Ordering::Relaxed) > 0 {
            self.finished.notify_all();
        }
    }

    /// Blocks until a call has completed, as std's `Once::wait`. Panics if an initializer
    /// panicked and none has completed since.
    ///
    /// ```
    /// let once = ppd::sync::Once::new();
    /// ppd::thread::scope(|s| {
    ///     s.spawn(|| once.wait());
    ///     once.call_once(|| {});
    /// });
    /// ```
    #[track_caller]
    pub fn wait(&self) {
        if !self.is_completed() {
            self.wait_slow(false);
        }
    }

    /// Blocks until a call has completed, like [`wait`](Self::wait) but waiting on through a
    /// panicked initializer, as std's `Once::wait_force`.
    ///
    /// ```
    /// let once = ppd::sync::Once::new();
    /// once.call_once(|| {});
    /// once.wait_force();
    /// ```
    #[track_caller]
    pub fn wait_force(&self) {
        if !self.is_completed() {
            self.wait_slow(true);
        }
    }

    #[track_caller]
    fn wait_slow(&self, force: bool) {
        let mut held = self.running.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            match self.state.load(Ordering::Acquire) {
                COMPLETE => return,
                POISONED if !force => {
                    drop(held);
                    panic!("Once instance has previously been poisoned");
                }
                _ => {}
            }
            self.waiters.fetch_add(1, Ordering::Relaxed);
            held = self.finished.wait(held).unwrap_or_else(|p| p.into_inner());
            self.waiters.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// The completed state without logging: the caller holds the `Once` exclusively.
    fn completed_mut(&mut self) -> bool {
        *self.state.get_mut() == COMPLETE
    }
}

/// Poisons its `Once` if the initializer unwinds (it is forgotten when it returns).
struct Running<'a> {
    once: &'a Once,
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.once.state.store(POISONED, Ordering::Release);
        // Still under `running`: `wait` panics, `wait_force` waits on.
        self.once.wake_waiters();
    }
}

/// Whether a cell's value is in this process's memory, and, once it is, whether a `get` may
/// read it without the runtime: set without a backend, a filled cell is read in one load, as
/// std's; set under one, every `get` is a logged access.
#[derive(Debug)]
struct Fill(PlainU8);

/// Not filled.
const EMPTY: u8 = 0;
/// Filled without a backend.
const FILLED_PLAIN: u8 = 1;
/// Filled under a backend: reads go through the runtime.
const FILLED_LOGGED: u8 = 2;

impl Fill {
    const fn empty() -> Fill {
        Fill(PlainU8::new(EMPTY))
    }

    /// Filled, and readable without the runtime (an acquire load, pairing with [`set`]).
    ///
    /// [`set`]: Fill::set
    #[inline]
    fn for_plain_reads(&self) -> bool {
        self.0.load(Ordering::Acquire) == FILLED_PLAIN
    }

    fn is_filled(&self) -> bool {
        self.0.load(Ordering::Acquire) != EMPTY
    }

    fn is_filled_mut(&mut self) -> bool {
        *self.0.get_mut() != EMPTY
    }

    /// Marks the value written (a release store, after the write).
    fn set(&self) {
        let state = if runtime::active() {
            FILLED_LOGGED
        } else {
            FILLED_PLAIN
        };
        self.0.store(state, Ordering::Release);
    }

    fn clear_mut(&mut self) {
        *self.0.get_mut() = EMPTY;
    }
}

/// A cell written once, like `std::sync::OnceLock`.
///
/// ```
/// use ppd::sync::OnceLock;
/// static CONFIG: OnceLock<String> = OnceLock::new();
/// assert_eq!(CONFIG.get_or_init(|| "fast".to_string()), "fast");
/// assert_eq!(CONFIG.get().map(String::as_str), Some("fast"));
/// ```
pub struct OnceLock<T> {
    once: Once,
    /// Whether `value` holds a value in this process's memory: always when `once` is complete,
    /// except re-executing an e-block, where the logged run may have initialized it elsewhere.
    filled: Fill,
    /// `Some` exactly when `filled` says so. An `Option` rather than `MaybeUninit`, so that the
    /// cell needs no `Drop` of its own: its value is dropped as a field, and a cell of
    /// references may outlive what they point to when nobody reads it again, as std's may.
    value: UnsafeCell<Option<T>>,
}

// SAFETY: the value is written once, under the `Once`, before it is complete; shared
// references only read it after seeing it filled, as std's `OnceLock`. `Send` is needed
// because one process may initialize it and another read it.
unsafe impl<T: Sync + Send> Sync for OnceLock<T> {}
// SAFETY: the cell owns its value; moving the cell moves the value.
unsafe impl<T: Send> Send for OnceLock<T> {}
impl<T: RefUnwindSafe + UnwindSafe> RefUnwindSafe for OnceLock<T> {}
impl<T: UnwindSafe> UnwindSafe for OnceLock<T> {}

impl<T> OnceLock<T> {
    /// An empty cell; its hidden objects are reported as `once_lock`.
    ///
    /// ```
    /// let cell = ppd::sync::OnceLock::<u32>::new();
    /// assert!(cell.get().is_none());
    /// ```
    #[track_caller]
    pub const fn new() -> OnceLock<T> {
        OnceLock {
            once: Once::hidden("once_lock", INCOMPLETE),
            filled: Fill::empty(),
            value: UnsafeCell::new(None),
        }
    }

    /// The value, if the cell is initialized.
    ///
    /// ```
    /// let cell = ppd::sync::OnceLock::new();
    /// cell.set(3).unwrap();
    /// assert_eq!(cell.get(), Some(&3));
    /// ```
    #[inline]
    #[track_caller]
    pub fn get(&self) -> Option<&T> {
        // Pass-through: one load of the fill state publishes the value, as std's state word
        // does.
        if self.filled.for_plain_reads() {
            // SAFETY: filled with `Release` after the value was written.
            return Some(unsafe { self.filled_ref() });
        }
        self.get_logged(Location::caller())
    }

    /// The value if it is in this process's memory, read as std's fast path reads it.
    #[inline]
    fn filled_value(&self) -> Option<&T> {
        // SAFETY: filled with `Release` after the value was written.
        self.filled
            .is_filled()
            .then(|| unsafe { self.filled_ref() })
    }

    /// The value of a cell seen filled.
    ///
    /// # Safety
    /// The cell is filled (its fill state was read with `Acquire`, or it is borrowed
    /// exclusively): the value is written and is never written again while shared.
    #[inline]
    unsafe fn filled_ref(&self) -> &T {
        // SAFETY: filled, so `Some`, and nobody writes it while it is shared.
        unsafe { (*self.value.get()).as_ref().unwrap_unchecked() }
    }

    /// `get` under a backend: the logged load of the state orders the caller after the
    /// initializer and is what replay reproduces.
    #[inline(never)]
    #[track_caller]
    fn get_logged(&self, site: &'static Location<'static>) -> Option<&T> {
        if !runtime::active() || !self.once.is_completed_logged() {
            return None;
        }
        match self.filled_value() {
            Some(v) => Some(v),
            None => self.vacant(site),
        }
    }

    /// The value, mutably, if the cell is initialized.
    ///
    /// ```
    /// let mut cell = ppd::sync::OnceLock::from(1);
    /// *cell.get_mut().unwrap() += 1;
    /// assert_eq!(cell.get(), Some(&2));
    /// ```
    pub fn get_mut(&mut self) -> Option<&mut T> {
        if self.once.completed_mut() && self.filled.is_filled_mut() {
            self.value.get_mut().as_mut()
        } else {
            None
        }
    }

    /// Initializes the cell with `value`, or gives it back if the cell was initialized.
    ///
    /// ```
    /// let cell = ppd::sync::OnceLock::new();
    /// assert_eq!(cell.set(1), Ok(()));
    /// assert_eq!(cell.set(2), Err(2));
    /// ```
    #[track_caller]
    pub fn set(&self, value: T) -> Result<(), T> {
        let mut value = Some(value);
        self.get_or_init(|| value.take().expect("the initializer runs at most once"));
        match value {
            None => Ok(()),
            Some(v) => Err(v),
        }
    }

    /// The value, initializing the cell with `f` if it is empty. Which caller's `f` runs is
    /// logged (the hidden lock's acquisitions) and replayed. If `f` panics, the cell stays
    /// empty and the panic goes on.
    ///
    /// ```
    /// let cell = ppd::sync::OnceLock::new();
    /// assert_eq!(*cell.get_or_init(|| 5), 5);
    /// assert_eq!(*cell.get_or_init(|| 6), 5);
    /// ```
    #[track_caller]
    pub fn get_or_init<F: FnOnce() -> T>(&self, f: F) -> &T {
        if !runtime::active()
            && let Some(v) = self.filled_value()
        {
            return v;
        }
        if self.once.is_completed() {
            if !self.filled.is_filled() {
                // Re-executing an e-block: the logged run found the cell initialized by
                // someone else; rebuild the value by running the initializer here.
                self.fill(f());
            }
            // SAFETY: filled.
            return unsafe { self.filled_ref() };
        }
        let mut f = Some(f);
        self.once.call_once_force(|_| {
            let f = f.take().expect("the initializer runs at most once");
            self.fill(f());
        });
        if !self.filled.is_filled()
            && let Some(f) = f
        {
            // As above: the logged run saw another process complete it under the lock.
            self.fill(f());
        }
        // SAFETY: complete (the `Once` returned without a panic) and filled.
        unsafe { self.filled_ref() }
    }

    /// Blocks until the cell is initialized and returns its value, as std's `OnceLock::wait`
    /// (an initializer that panics leaves it empty, and the wait goes on).
    ///
    /// ```
    /// let cell = ppd::sync::OnceLock::new();
    /// ppd::thread::scope(|s| {
    ///     s.spawn(|| assert_eq!(*cell.wait(), 9));
    ///     cell.set(9).unwrap();
    /// });
    /// ```
    #[track_caller]
    pub fn wait(&self) -> &T {
        self.once.wait_force();
        match self.filled_value() {
            Some(v) => v,
            None => self.vacant(Location::caller()),
        }
    }

    /// Writes the value into a cell held exclusively, completing it without the hidden lock:
    /// nobody else can see the cell.
    fn fill_mut(&mut self, value: T) -> &mut T {
        *self.once.state.get_mut() = COMPLETE;
        self.filled.set();
        self.value.get_mut().insert(value)
    }

    /// Writes the value; only the one caller that runs the initializer (or, re-executing an
    /// e-block, the only process) does.
    fn fill(&self, value: T) {
        // SAFETY: exclusive: under the `Once`'s lock before completion, or alone in emulation.
        unsafe { *self.value.get() = Some(value) };
        self.filled.set();
    }

    /// Consumes the cell, returning its value if it was initialized.
    ///
    /// ```
    /// let cell = ppd::sync::OnceLock::from("x");
    /// assert_eq!(cell.into_inner(), Some("x"));
    /// ```
    pub fn into_inner(mut self) -> Option<T> {
        self.take()
    }

    /// Takes the value out, leaving the cell empty.
    ///
    /// ```
    /// let mut cell = ppd::sync::OnceLock::from(4);
    /// assert_eq!(cell.take(), Some(4));
    /// assert_eq!(cell.get(), None);
    /// ```
    pub fn take(&mut self) -> Option<T> {
        if !(self.once.completed_mut() && self.filled.is_filled_mut()) {
            return None;
        }
        *self.once.state.get_mut() = INCOMPLETE;
        *self.once.generation.get_mut() += 1;
        *self.once.seen_by.get_mut() = 0;
        self.filled.clear_mut();
        self.value.get_mut().take()
    }

    /// A bare `get` re-executing an e-block, of a value the logged run found initialized
    /// elsewhere: there is no initializer to rebuild it with.
    #[cold]
    fn vacant(&self, site: &'static Location<'static>) -> ! {
        debug_assert_eq!(runtime::mode(), Mode::Emulate);
        runtime::diverged(&format!(
            "the value of a OnceLock read at {site}, which was initialized outside the \
             re-executed e-block (its value is never logged: read it with get_or_init, whose \
             initializer can rebuild it)"
        ))
    }
}

impl<T> Default for OnceLock<T> {
    #[track_caller]
    fn default() -> Self {
        OnceLock::new()
    }
}

impl<T> From<T> for OnceLock<T> {
    #[track_caller]
    fn from(value: T) -> Self {
        let cell = OnceLock {
            once: Once::hidden("once_lock", COMPLETE),
            filled: Fill::empty(),
            value: UnsafeCell::new(None),
        };
        cell.fill(value);
        cell
    }
}

impl<T: PartialEq> PartialEq for OnceLock<T> {
    /// Equal when both are empty, or both hold equal values, as std's.
    #[track_caller]
    fn eq(&self, other: &OnceLock<T>) -> bool {
        self.get() == other.get()
    }
}

impl<T: Eq> Eq for OnceLock<T> {}

impl<T: Clone> Clone for OnceLock<T> {
    #[track_caller]
    fn clone(&self) -> Self {
        match self.get() {
            Some(v) => OnceLock::from(v.clone()),
            None => OnceLock::new(),
        }
    }
}

impl<T: fmt::Debug> fmt::Debug for OnceLock<T> {
    /// Reads the cell with [`get`](OnceLock::get), a logged load like any other.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_tuple("OnceLock");
        match self.get() {
            Some(v) => d.field(v),
            None => d.field(&format_args!("<uninit>")),
        };
        d.finish()
    }
}

/// A value computed on first use, like `std::sync::LazyLock`.
///
/// ```
/// use ppd::sync::LazyLock;
/// static SQUARES: LazyLock<Vec<u32>> = LazyLock::new(|| (0..4).map(|i| i * i).collect());
/// assert_eq!(SQUARES[3], 9);
/// ```
pub struct LazyLock<T, F = fn() -> T> {
    cell: OnceLock<T>,
    /// Taken by the one caller that initializes (under the cell's `Once`).
    init: UnsafeCell<Option<F>>,
}

// SAFETY: as std's: the initializer is taken once, under the cell's `Once`, by the one caller
// that runs it; the value is shared as a `OnceLock`'s is.
unsafe impl<T: Sync + Send, F: Send> Sync for LazyLock<T, F> {}
impl<T: RefUnwindSafe + UnwindSafe, F: UnwindSafe> RefUnwindSafe for LazyLock<T, F> {}

impl<T, F: FnOnce() -> T> LazyLock<T, F> {
    /// A value `f` computes on first use; its hidden objects are reported as `lazy_lock`.
    #[track_caller]
    pub const fn new(f: F) -> LazyLock<T, F> {
        LazyLock {
            cell: OnceLock {
                once: Once::hidden("lazy_lock", INCOMPLETE),
                filled: Fill::empty(),
                value: UnsafeCell::new(None),
            },
            init: UnsafeCell::new(Some(f)),
        }
    }

    /// The value, computing it if this is the first use. Panics if the initializer panicked
    /// before, as std's does.
    ///
    /// ```
    /// let lazy = ppd::sync::LazyLock::new(|| 7);
    /// assert_eq!(*ppd::sync::LazyLock::force(&lazy), 7);
    /// ```
    #[track_caller]
    pub fn force(this: &LazyLock<T, F>) -> &T {
        this.cell.get_or_init(|| {
            // SAFETY: exclusive: the cell runs one initializer at a time.
            match unsafe { (*this.init.get()).take() } {
                Some(f) => f(),
                None => panic!("LazyLock instance has previously been poisoned"),
            }
        })
    }
}

impl<T, F> LazyLock<T, F> {
    /// The value if it has been computed, as std's `LazyLock::get`.
    ///
    /// ```
    /// let lazy = ppd::sync::LazyLock::new(|| 7);
    /// assert_eq!(ppd::sync::LazyLock::get(&lazy), None);
    /// let _ = *lazy;
    /// assert_eq!(ppd::sync::LazyLock::get(&lazy), Some(&7));
    /// ```
    #[track_caller]
    pub fn get(this: &LazyLock<T, F>) -> Option<&T> {
        this.cell.get()
    }

    /// The value, mutably, if it has been computed, as std's `LazyLock::get_mut`.
    ///
    /// ```
    /// let mut lazy = ppd::sync::LazyLock::new(|| 7);
    /// assert_eq!(ppd::sync::LazyLock::get_mut(&mut lazy), None);
    /// ```
    pub fn get_mut(this: &mut LazyLock<T, F>) -> Option<&mut T> {
        this.cell.get_mut()
    }
}

impl<T, F: FnOnce() -> T> LazyLock<T, F> {
    /// The value, mutably, computing it if this is the first use, as std's
    /// `LazyLock::force_mut`: held exclusively, the lock needs no synchronization. Panics if
    /// the initializer panicked before.
    ///
    /// ```
    /// let mut lazy = ppd::sync::LazyLock::new(|| 7);
    /// *ppd::sync::LazyLock::force_mut(&mut lazy) += 1;
    /// assert_eq!(*lazy, 8);
    /// ```
    pub fn force_mut(this: &mut LazyLock<T, F>) -> &mut T {
        let cell = &mut this.cell;
        if !(cell.once.completed_mut() && cell.filled.is_filled_mut()) {
            let value = match this.init.get_mut().take() {
                Some(f) => f(),
                None => panic!("LazyLock instance has previously been poisoned"),
            };
            return cell.fill_mut(value);
        }
        match cell.value.get_mut() {
            Some(value) => value,
            None => unreachable!("a filled cell holds its value"),
        }
    }
}

impl<T, F: FnOnce() -> T> DerefMut for LazyLock<T, F> {
    fn deref_mut(&mut self) -> &mut T {
        LazyLock::force_mut(self)
    }
}

impl<T, F: FnOnce() -> T> Deref for LazyLock<T, F> {
    type Target = T;

    #[track_caller]
    fn deref(&self) -> &T {
        LazyLock::force(self)
    }
}

impl<T: Default> Default for LazyLock<T> {
    #[track_caller]
    fn default() -> Self {
        LazyLock::new(T::default)
    }
}

impl<T: fmt::Debug, F> fmt::Debug for LazyLock<T, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_tuple("LazyLock");
        match self.cell.get() {
            Some(v) => d.field(v),
            None => d.field(&format_args!("<uninit>")),
        };
        d.finish()
    }
}

impl LazyObject for Once {
    fn register_now(&self) {
        self.state.register_now();
        self.running.register_now();
    }
}

impl<T> crate::runtime::binding::LazyObject for OnceLock<T> {
    fn register_now(&self) {
        self.once.register_now();
    }
}

impl<T, F> crate::runtime::binding::LazyObject for LazyLock<T, F> {
    fn register_now(&self) {
        self.cell.register_now();
    }
}
