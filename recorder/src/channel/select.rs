//! [`Select`] over receives and sends, and the [`select!`](crate::select) macro, with
//! crossbeam-channel's API. The choice is the mpsc [`Select`](crate::sync::mpsc::Select)'s:
//! logged as a `Select` event (or `RecvNone` when nothing was ready in time), made again in
//! replay; the receive or send that completes it is logged as every receive and send is.
//! Timers are read through the logged clock; a selection of timers alone waits by sleeping
//! (a logged `Sleep`), never by blocking on a channel.

use std::fmt;
use std::panic::Location;
use std::time::Duration;

use smallvec::SmallVec;

use super::timer::Timer;
use super::{
    ReadyTimeoutError, Receiver, RecvError, SelectTimeoutError, SendError, Sender, TryReadyError,
    TrySelectError,
};
use crate::runtime;
use crate::sync::mpsc::{self, CarrierChoice, Wait};
use crate::time::Instant;

/// Waits on several receive operations and chooses one that can proceed, like
/// `crossbeam_channel::Select`.
///
/// ```
/// let (s1, r1) = ppd::channel::unbounded::<u8>();
/// let (_s2, r2) = ppd::channel::unbounded::<u8>();
/// s1.send(3).unwrap();
/// let mut sel = ppd::channel::Select::new();
/// let first = sel.recv(&r1);
/// sel.recv(&r2);
/// let op = sel.select();
/// assert_eq!(op.index(), first);
/// assert_eq!(op.recv(&r1), Ok(3));
/// ```
#[derive(Clone, Default)]
pub struct Select<'a> {
    inner: mpsc::Select<'a>,
    /// Each operation, in the order added (inline, as the mpsc selection's).
    ops: SmallVec<[Slot<'a>; 4]>,
    /// Whether the first operation that can proceed is chosen (`new_biased`).
    biased: bool,
}

/// An operation of a [`Select`].
#[derive(Clone, Copy)]
enum Slot<'a> {
    /// A receive from or a send on a channel: its index in the mpsc selection.
    Channel(usize),
    /// A receive from a timer, which the selection reads through the logged clock.
    Timer(&'a Timer),
    /// An operation taken out ([`Select::remove`]); `timer` when it was a timer's.
    Removed { timer: bool },
}

/// What a choice among the operations asks of a timer that is due.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Due {
    /// Take its delivery (`select`).
    Take,
    /// Only say it is due; the receive that follows takes it (`ready`).
    Peek,
}

impl fmt::Debug for Select<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.fmt(f)
    }
}

impl<'a> Select<'a> {
    /// An empty selection.
    ///
    /// ```
    /// let _sel = ppd::channel::Select::new();
    /// ```
    pub fn new() -> Select<'a> {
        Select {
            inner: mpsc::Select::new(),
            ops: SmallVec::new(),
            biased: false,
        }
    }

    /// An empty selection that, when several operations can proceed, chooses the first
    /// added, like `crossbeam_channel::Select::new_biased`. A timer that is due is chosen
    /// before the channels.
    ///
    /// ```
    /// let (s1, r1) = ppd::channel::unbounded::<u8>();
    /// let (s2, r2) = ppd::channel::unbounded::<u8>();
    /// s1.send(1).unwrap();
    /// s2.send(2).unwrap();
    /// let mut sel = ppd::channel::Select::new_biased();
    /// let first = sel.recv(&r1);
    /// sel.recv(&r2);
    /// let op = sel.select();
    /// assert_eq!(op.index(), first);
    /// assert_eq!(op.recv(&r1), Ok(1));
    /// ```
    pub fn new_biased() -> Select<'a> {
        Select {
            inner: mpsc::Select::new_biased(),
            ops: SmallVec::new(),
            biased: true,
        }
    }

    /// Adds a receive from `r`; returns the operation's index.
    ///
    /// ```
    /// let (_s, r) = ppd::channel::unbounded::<u8>();
    /// let mut sel = ppd::channel::Select::new();
    /// assert_eq!(sel.recv(&r), 0);
    /// ```
    pub fn recv<T>(&mut self, r: &'a Receiver<T>) -> usize {
        let slot = match &r.timer {
            Some(end) => Slot::Timer(&end.timer),
            None => Slot::Channel(self.inner.recv_core(&r.core)),
        };
        self.ops.push(slot);
        self.ops.len() - 1
    }

    /// Adds a send on `s`; returns the operation's index. The message is given when the
    /// chosen operation is completed ([`SelectedOperation::send`]).
    ///
    /// ```
    /// let (s, r) = ppd::channel::bounded::<u8>(1);
    /// let mut sel = ppd::channel::Select::new();
    /// let i = sel.send(&s);
    /// let op = sel.select();
    /// assert_eq!(op.index(), i);
    /// op.send(&s, 4).unwrap();
    /// assert_eq!(r.recv(), Ok(4));
    /// ```
    pub fn send<T>(&mut self, s: &'a Sender<T>) -> usize {
        self.ops.push(Slot::Channel(self.inner.send_core(&s.inner)));
        self.ops.len() - 1
    }

    /// Whether any operation is (or was, before its removal) a timer's: the mpsc
    /// selection's indexes are then not the selection's own.
    fn has_timers(&self) -> bool {
        self.ops
            .iter()
            .any(|slot| matches!(slot, Slot::Timer(_) | Slot::Removed { timer: true }))
    }

    /// Takes the operation with index `index` out of the selection, like
    /// `crossbeam_channel::Select::remove`; the other operations keep their indexes.
    ///
    /// ```
    /// let (s1, r1) = ppd::channel::unbounded::<u8>();
    /// let (s2, r2) = ppd::channel::unbounded::<u8>();
    /// let mut sel = ppd::channel::Select::new();
    /// let first = sel.recv(&r1);
    /// let second = sel.recv(&r2);
    /// sel.remove(first);
    /// s1.send(1).unwrap();
    /// s2.send(2).unwrap();
    /// let op = sel.select();
    /// assert_eq!(op.index(), second);
    /// assert_eq!(op.recv(&r2), Ok(2));
    /// ```
    ///
    /// # Panics
    ///
    /// When no operation has index `index` (never added, or removed already), as crossbeam's.
    pub fn remove(&mut self, index: usize) {
        match self.ops.get(index).copied() {
            Some(Slot::Channel(inner)) => {
                self.inner.remove(inner);
                self.ops[index] = Slot::Removed { timer: false };
            }
            Some(Slot::Timer(_)) => self.ops[index] = Slot::Removed { timer: true },
            Some(Slot::Removed { .. }) | None => panic!("no operation with this index"),
        }
    }

    /// Outside a recording, a selection of channels alone is the carriers' choice and nothing
    /// more. Without timers every operation is a channel's, added in order: the carriers'
    /// index is the selection's.
    fn passes_through(&self) -> bool {
        !runtime::active() && !self.has_timers()
    }

    /// The index of the operation that is the mpsc selection's `inner`-th.
    fn outer(&self, inner: usize) -> usize {
        self.ops
            .iter()
            .position(|slot| matches!(slot, Slot::Channel(i) if *i == inner))
            .unwrap_or(inner)
    }

    /// When each timer is next due, each read once (a logged look): the timer's index, the
    /// timer, and the instant.
    fn timer_dues(&self) -> SmallVec<[(usize, &'a Timer, Instant); 4]> {
        self.ops
            .iter()
            .enumerate()
            .filter_map(|(index, slot)| match *slot {
                Slot::Timer(timer) => timer.due().map(|at| (index, timer, at)),
                Slot::Channel(_) | Slot::Removed { .. } => None,
            })
            .collect()
    }

    /// Of the timers `dues` says are due at `now`, the `turn`-th (counting round): its index,
    /// and the instant it delivers (`Due::Take`: taken).
    fn due_timer(
        dues: &[(usize, &Timer, Instant)],
        now: Instant,
        due: Due,
        turn: usize,
    ) -> Option<(usize, Instant)> {
        let count = dues.iter().filter(|&&(_, _, at)| at <= now).count();
        if count == 0 {
            return None;
        }
        let &(index, timer, at) = dues
            .iter()
            .filter(|&&(_, _, at)| at <= now)
            .nth(turn % count)?;
        match due {
            // Another receiver of a clone may have taken it since it was looked at.
            Due::Take => timer.take(at, now).map(|at| (index, at)),
            Due::Peek => Some((index, now)),
        }
    }

    /// The choice among channels and timers, waiting as `wait` says: `attempt` chooses among
    /// the channels (logged by the mpsc selection), the timers are read through the logged
    /// clock, and the earliest timer bounds how long `attempt` may wait. Every step is
    /// logged, so replay comes to the same choice.
    #[track_caller]
    #[inline]
    fn decide<R>(
        &mut self,
        mut wait: Wait,
        due: Due,
        mut attempt: impl FnMut(&mut mpsc::Select<'a>, Wait) -> Result<R, SelectTimeoutError>,
        channel: impl Fn(&Self, R) -> (usize, Chosen<'a>),
    ) -> Result<(usize, Chosen<'a>), SelectTimeoutError> {
        if !self.has_timers() {
            return attempt(&mut self.inner, wait).map(|r| channel(self, r));
        }
        let timers_only = !self.ops.iter().any(|slot| matches!(slot, Slot::Channel(_)));
        // Crossbeam chooses at random among the operations that can proceed; an unbiased
        // selection here takes turns instead (which replays, the turns being the process's
        // own): every other selection looks at the channels before a due timer, and which of
        // the due timers is taken moves on with every selection that takes one.
        let (timer_turn, channels_first) = if self.biased {
            (0, false)
        } else {
            let turn = TURN.with(|t| {
                let turn = t.get();
                t.set(turn.wrapping_add(1));
                turn
            });
            if timers_only {
                (turn, false)
            } else {
                (turn / 2, turn % 2 == 1)
            }
        };
        let due_now = |sel: &Self| {
            let now = Instant::now();
            Self::due_timer(&sel.timer_dues(), now, due, timer_turn)
        };
        loop {
            let now = Instant::now();
            let dues = self.timer_dues();
            if channels_first
                && Self::due_timer(&dues, now, Due::Peek, timer_turn).is_some()
                && let Ok(r) = attempt(&mut self.inner, Wait::Try)
            {
                return Ok(channel(self, r));
            }
            if let Some((index, at)) = Self::due_timer(&dues, now, due, timer_turn) {
                return Ok((index, Chosen::Timer(at)));
            }
            let until_timer = dues
                .iter()
                .map(|&(_, _, at)| at)
                .min()
                .map(|at| at.saturating_duration_since(now));
            let bounded = match (wait, until_timer) {
                (Wait::Try, _) => Wait::Try,
                (Wait::Block, None) => Wait::Block,
                (Wait::Block, Some(left)) => Wait::Timeout(left),
                (Wait::Timeout(t), Some(left)) => Wait::Timeout(t.min(left)),
                (Wait::Timeout(t), None) => Wait::Timeout(t),
            };
            if timers_only {
                // Nothing but time can end the wait: sleep (logged) instead of blocking on no
                // channel, then look at the timers again.
                match bounded {
                    Wait::Try => return Err(SelectTimeoutError),
                    // Only `never` timers: like crossbeam's, this waits forever.
                    Wait::Block => loop {
                        std::thread::park();
                    },
                    Wait::Timeout(left) => {
                        crate::thread::sleep(left);
                        if let Wait::Timeout(t) = wait {
                            if t <= left {
                                // The time is up; a timer due now still wins.
                                return match due_now(self) {
                                    Some((index, at)) => Ok((index, Chosen::Timer(at))),
                                    None => Err(SelectTimeoutError),
                                };
                            }
                            wait = Wait::Timeout(t - left);
                        }
                        continue;
                    }
                }
            }
            match attempt(&mut self.inner, bounded) {
                Ok(r) => return Ok(channel(self, r)),
                Err(e) => match (wait, until_timer) {
                    (Wait::Timeout(t), Some(left)) if t > left => wait = Wait::Timeout(t - left),
                    (Wait::Try | Wait::Timeout(_), _) => {
                        return match due_now(self) {
                            Some((index, at)) => Ok((index, Chosen::Timer(at))),
                            None => Err(e),
                        };
                    }
                    // A timer bounded the wait: it is due now, and the next round takes it.
                    (Wait::Block, _) => {}
                },
            }
        }
    }

    /// `decide` for the operations that perform the receive ([`passes_through`]: the
    /// carriers' choice).
    ///
    /// [`passes_through`]: Select::passes_through
    #[track_caller]
    #[inline]
    fn choose(&mut self, wait: Wait) -> Result<SelectedOperation<'a>, SelectTimeoutError> {
        if self.passes_through() {
            return match self.inner.carriers_choose(wait) {
                Ok(op) => Ok(SelectedOperation::carried(op)),
                Err(_) => Err(SelectTimeoutError),
            };
        }
        let site = Location::caller();
        self.decide(
            wait,
            Due::Take,
            |inner, wait| inner.choose(wait, site).map_err(|_| SelectTimeoutError),
            |sel, op| (sel.outer(op.index()), Chosen::Channel(op)),
        )
        .map(|(index, chosen)| SelectedOperation { index, chosen })
    }

    /// `decide` for the operations that only say which is ready.
    #[track_caller]
    fn ready_index(&mut self, wait: Wait) -> Result<usize, SelectTimeoutError> {
        let site = Location::caller();
        self.decide(
            wait,
            Due::Peek,
            |inner, wait| inner.ready_in(wait, site).map_err(|_| SelectTimeoutError),
            |sel, index| (sel.outer(index), Chosen::Ready),
        )
        .map(|(index, _)| index)
    }

    /// Waits until one of the operations can proceed and chooses it.
    ///
    /// ```
    /// let (s, r) = ppd::channel::unbounded();
    /// s.send(1u8).unwrap();
    /// let mut sel = ppd::channel::Select::new();
    /// sel.recv(&r);
    /// assert_eq!(sel.select().recv(&r), Ok(1));
    /// ```
    #[track_caller]
    #[inline]
    pub fn select(&mut self) -> SelectedOperation<'a> {
        if self.passes_through() {
            return SelectedOperation::carried(self.inner.carriers_select());
        }
        loop {
            if let Ok(op) = self.choose(Wait::Block) {
                return op;
            }
        }
    }

    /// Chooses an operation that can proceed now, if there is one.
    ///
    /// ```
    /// let (_s, r) = ppd::channel::unbounded::<u8>();
    /// let mut sel = ppd::channel::Select::new();
    /// sel.recv(&r);
    /// assert!(sel.try_select().is_err());
    /// ```
    #[track_caller]
    pub fn try_select(&mut self) -> Result<SelectedOperation<'a>, TrySelectError> {
        self.choose(Wait::Try).map_err(|_| TrySelectError)
    }

    /// Like [`select`](Select::select), giving up after `timeout`.
    ///
    /// ```
    /// use std::time::Duration;
    /// let (_s, r) = ppd::channel::unbounded::<u8>();
    /// let mut sel = ppd::channel::Select::new();
    /// sel.recv(&r);
    /// assert!(sel.select_timeout(Duration::from_millis(1)).is_err());
    /// ```
    #[track_caller]
    pub fn select_timeout(
        &mut self,
        timeout: Duration,
    ) -> Result<SelectedOperation<'a>, SelectTimeoutError> {
        self.choose(Wait::Timeout(timeout))
    }

    /// Like [`select`](Select::select), giving up at `deadline`.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// let (_s, r) = ppd::channel::unbounded::<u8>();
    /// let mut sel = ppd::channel::Select::new();
    /// sel.recv(&r);
    /// assert!(sel.select_deadline(Instant::now()).is_err());
    /// ```
    #[track_caller]
    pub fn select_deadline(
        &mut self,
        deadline: std::time::Instant,
    ) -> Result<SelectedOperation<'a>, SelectTimeoutError> {
        self.choose(Wait::Timeout(
            deadline.saturating_duration_since(std::time::Instant::now()),
        ))
    }

    /// Waits until one of the operations can proceed and returns its index without performing
    /// it; the caller then does (a `try_recv`, say), and that is logged on its own.
    ///
    /// ```
    /// let (s, r) = ppd::channel::unbounded();
    /// s.send(2u8).unwrap();
    /// let mut sel = ppd::channel::Select::new();
    /// let i = sel.recv(&r);
    /// assert_eq!(sel.ready(), i);
    /// assert_eq!(r.try_recv(), Ok(2));
    /// ```
    #[track_caller]
    pub fn ready(&mut self) -> usize {
        loop {
            if let Ok(index) = self.ready_index(Wait::Block) {
                return index;
            }
        }
    }

    /// The index of an operation that can proceed now, if there is one.
    ///
    /// ```
    /// let (_s, r) = ppd::channel::unbounded::<u8>();
    /// let mut sel = ppd::channel::Select::new();
    /// sel.recv(&r);
    /// assert!(sel.try_ready().is_err());
    /// ```
    #[track_caller]
    pub fn try_ready(&mut self) -> Result<usize, TryReadyError> {
        self.ready_index(Wait::Try).map_err(|_| TryReadyError)
    }

    /// Like [`ready`](Select::ready), giving up after `timeout`.
    ///
    /// ```
    /// use std::time::Duration;
    /// let (_s, r) = ppd::channel::unbounded::<u8>();
    /// let mut sel = ppd::channel::Select::new();
    /// sel.recv(&r);
    /// assert!(sel.ready_timeout(Duration::from_millis(1)).is_err());
    /// ```
    #[track_caller]
    pub fn ready_timeout(&mut self, timeout: Duration) -> Result<usize, ReadyTimeoutError> {
        self.ready_index(Wait::Timeout(timeout))
            .map_err(|_| ReadyTimeoutError)
    }

    /// Like [`ready`](Select::ready), giving up at `deadline`.
    ///
    /// ```
    /// use std::time::Instant;
    /// let (_s, r) = ppd::channel::unbounded::<u8>();
    /// let mut sel = ppd::channel::Select::new();
    /// sel.recv(&r);
    /// assert!(sel.ready_deadline(Instant::now()).is_err());
    /// ```
    #[track_caller]
    pub fn ready_deadline(
        &mut self,
        deadline: std::time::Instant,
    ) -> Result<usize, ReadyTimeoutError> {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        self.ready_index(Wait::Timeout(left))
            .map_err(|_| ReadyTimeoutError)
    }
}

/// The operation a [`Select`] chose; complete it with [`recv`](SelectedOperation::recv).
///
/// ```
/// let (s, r) = ppd::channel::unbounded::<u8>();
/// s.send(5).unwrap();
/// let mut sel = ppd::channel::Select::new();
/// sel.recv(&r);
/// let op: ppd::channel::SelectedOperation<'_> = sel.select();
/// assert_eq!(op.index(), 0);
/// assert_eq!(op.recv(&r), Ok(5));
/// ```
#[derive(Debug)]
pub struct SelectedOperation<'a> {
    index: usize,
    chosen: Chosen<'a>,
}

thread_local! {
    /// Where an unbiased selection with timers starts looking, advanced by every selection.
    static TURN: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// What a [`Select`] chose.
#[derive(Debug)]
enum Chosen<'a> {
    /// Outside a recording: a channel's receive or send, to complete on its carrier.
    Carrier(CarrierChoice<'a>),
    /// A channel's receive, to complete.
    Channel(mpsc::SelectedOperation<'a>),
    /// A timer, and the instant it delivered.
    Timer(Instant),
    /// Only which operation is ready (`ready`).
    Ready,
}

impl<'a> SelectedOperation<'a> {
    /// The carriers' choice outside a recording.
    #[inline]
    fn carried(op: CarrierChoice<'a>) -> Self {
        SelectedOperation {
            index: op.index(),
            chosen: Chosen::Carrier(op),
        }
    }
}

impl SelectedOperation<'_> {
    /// The index [`Select::recv`] returned for the chosen operation.
    ///
    /// ```
    /// let (s, r) = ppd::channel::unbounded();
    /// s.send(0u8).unwrap();
    /// let mut sel = ppd::channel::Select::new();
    /// let i = sel.recv(&r);
    /// let op = sel.select();
    /// assert_eq!(op.index(), i);
    /// op.recv(&r).unwrap();
    /// ```
    pub fn index(&self) -> usize {
        self.index
    }

    /// Completes the chosen receive; `r` must be the receiver added at this index.
    ///
    /// ```
    /// let (s, r) = ppd::channel::unbounded();
    /// s.send(4u8).unwrap();
    /// let mut sel = ppd::channel::Select::new();
    /// sel.recv(&r);
    /// assert_eq!(sel.select().recv(&r), Ok(4));
    /// ```
    ///
    /// # Panics
    ///
    /// When `r` is not the receiver chosen, as crossbeam's does.
    #[inline]
    pub fn recv<T>(self, r: &Receiver<T>) -> Result<T, RecvError> {
        match (self.chosen, &r.timer) {
            (Chosen::Carrier(op), None) => op.recv(&r.core).map_err(|_| RecvError),
            (Chosen::Channel(op), None) => op.recv_core(&r.core).map_err(|_| RecvError),
            (Chosen::Timer(at), Some(end)) => Ok((end.deliver)(at)),
            _ => panic!("passed a receiver that wasn't selected"),
        }
    }

    /// Completes the chosen send with `msg`; `s` must be the sender added at this index.
    ///
    /// ```
    /// let (s, r) = ppd::channel::unbounded::<u8>();
    /// let mut sel = ppd::channel::Select::new();
    /// sel.send(&s);
    /// sel.select().send(&s, 9).unwrap();
    /// assert_eq!(r.recv(), Ok(9));
    /// ```
    ///
    /// # Panics
    ///
    /// When `s` is not the sender chosen, as crossbeam's does.
    pub fn send<T>(self, s: &Sender<T>, msg: T) -> Result<(), SendError<T>> {
        match self.chosen {
            Chosen::Carrier(op) => op
                .send(&s.inner, msg)
                .map_err(|crate::sync::mpsc::SendError(msg)| SendError(msg)),
            Chosen::Channel(op) => op
                .send_core(&s.inner, msg)
                .map_err(|crate::sync::mpsc::SendError(msg)| SendError(msg)),
            Chosen::Timer(_) | Chosen::Ready => panic!("passed a sender that wasn't selected"),
        }
    }
}

/// Waits on several operations at once, like crossbeam-channel's `select!`: arms
/// `recv(r) -> msg => body` and `send(s, message) -> res => body`, and at most one of
/// `default => body` (when none is ready now) or `default(timeout) => body` (when none is
/// ready in time). The arm taken is logged and replay takes it again. A send arm's message is
/// evaluated only when its arm is taken.
///
/// ```
/// use std::time::Duration;
/// let (s1, r1) = ppd::channel::unbounded::<u8>();
/// let (_s2, r2) = ppd::channel::unbounded::<u8>();
/// s1.send(7).unwrap();
/// let got = ppd::select! {
///     recv(r1) -> msg => msg.unwrap(),
///     recv(r2) -> msg => msg.unwrap() + 100,
///     default(Duration::from_millis(10)) => 0,
/// };
/// assert_eq!(got, 7);
///
/// let (full, _keep) = ppd::channel::bounded::<u8>(0);
/// let (out, out_r) = ppd::channel::bounded::<u8>(1);
/// ppd::select! {
///     send(full, 1) -> _ => unreachable!("nobody receives"),
///     send(out, 2) -> res => res.unwrap(),
/// }
/// assert_eq!(out_r.recv(), Ok(2));
/// ```
#[macro_export]
macro_rules! select {
    ($($tokens:tt)*) => {
        $crate::__select_parse!(new [] [] $($tokens)*)
    };
}

/// Like [`select!`](crate::select!), choosing the first operation (in the order written) that can proceed
/// when several can, as crossbeam-channel's `select_biased!` does; the arm taken is logged
/// and replay takes it again.
///
/// ```
/// let (s1, r1) = ppd::channel::unbounded::<u8>();
/// let (s2, r2) = ppd::channel::unbounded::<u8>();
/// s1.send(1).unwrap();
/// s2.send(2).unwrap();
/// let first = ppd::select_biased! {
///     recv(r1) -> msg => msg.unwrap(),
///     recv(r2) -> msg => msg.unwrap(),
/// };
/// assert_eq!(first, 1);
/// ```
#[macro_export]
macro_rules! select_biased {
    ($($tokens:tt)*) => {
        $crate::__select_parse!(new_biased [] [] $($tokens)*)
    };
}

/// Parses `select!`'s arms: receives and sends, then the default. Not a stable interface.
///
/// An arm whose body is a block may be followed by a comma or not; any other body is followed
/// by one unless it is the last arm. An operation's arguments may end in a comma, and
/// `default()` is `default`.
#[doc(hidden)]
#[macro_export]
macro_rules! __select_parse {
    ($new:ident [$($ops:tt)*] [$($default:tt)*]
        recv($r:expr $(,)?) -> $res:pat => $body:block, $($rest:tt)*) => {
        $crate::__select_parse!($new [$($ops)* (recv ($r) ($res) ($body))] [$($default)*] $($rest)*)
    };
    ($new:ident [$($ops:tt)*] [$($default:tt)*]
        recv($r:expr $(,)?) -> $res:pat => $body:block $($rest:tt)*) => {
        $crate::__select_parse!($new [$($ops)* (recv ($r) ($res) ($body))] [$($default)*] $($rest)*)
    };
    ($new:ident [$($ops:tt)*] [$($default:tt)*]
        recv($r:expr $(,)?) -> $res:pat => $body:expr, $($rest:tt)*) => {
        $crate::__select_parse!($new [$($ops)* (recv ($r) ($res) ($body))] [$($default)*] $($rest)*)
    };
    ($new:ident [$($ops:tt)*] [$($default:tt)*] recv($r:expr $(,)?) -> $res:pat => $body:expr) => {
        $crate::__select_parse!($new [$($ops)* (recv ($r) ($res) ($body))] [$($default)*])
    };
    ($new:ident [$($ops:tt)*] [$($default:tt)*]
        send($s:expr, $m:expr $(,)?) -> $res:pat => $body:block, $($rest:tt)*) => {
        $crate::__select_parse!($new [$($ops)* (send ($s) ($m) ($res) ($body))] [$($default)*]
            $($rest)*)
    };
    ($new:ident [$($ops:tt)*] [$($default:tt)*]
        send($s:expr, $m:expr $(,)?) -> $res:pat => $body:block $($rest:tt)*) => {
        $crate::__select_parse!($new [$($ops)* (send ($s) ($m) ($res) ($body))] [$($default)*]
            $($rest)*)
    };
    ($new:ident [$($ops:tt)*] [$($default:tt)*]
        send($s:expr, $m:expr $(,)?) -> $res:pat => $body:expr, $($rest:tt)*) => {
        $crate::__select_parse!($new [$($ops)* (send ($s) ($m) ($res) ($body))] [$($default)*]
            $($rest)*)
    };
    ($new:ident [$($ops:tt)*] [$($default:tt)*]
        send($s:expr, $m:expr $(,)?) -> $res:pat => $body:expr) => {
        $crate::__select_parse!($new [$($ops)* (send ($s) ($m) ($res) ($body))] [$($default)*])
    };
    ($new:ident [$($ops:tt)*] [] default => $($rest:tt)*) => {
        $crate::__select_parse!($new [$($ops)*] [] default() => $($rest)*)
    };
    ($new:ident [$($ops:tt)*] [] default() => $body:block, $($rest:tt)*) => {
        $crate::__select_parse!($new [$($ops)*] [(try) ($body)] $($rest)*)
    };
    ($new:ident [$($ops:tt)*] [] default() => $body:block $($rest:tt)*) => {
        $crate::__select_parse!($new [$($ops)*] [(try) ($body)] $($rest)*)
    };
    ($new:ident [$($ops:tt)*] [] default() => $body:expr, $($rest:tt)*) => {
        $crate::__select_parse!($new [$($ops)*] [(try) ($body)] $($rest)*)
    };
    ($new:ident [$($ops:tt)*] [] default() => $body:expr) => {
        $crate::__select_parse!($new [$($ops)*] [(try) ($body)])
    };
    ($new:ident [$($ops:tt)*] [] default($timeout:expr $(,)?) => $body:block, $($rest:tt)*) => {
        $crate::__select_parse!($new [$($ops)*] [(timeout $timeout) ($body)] $($rest)*)
    };
    ($new:ident [$($ops:tt)*] [] default($timeout:expr $(,)?) => $body:block $($rest:tt)*) => {
        $crate::__select_parse!($new [$($ops)*] [(timeout $timeout) ($body)] $($rest)*)
    };
    ($new:ident [$($ops:tt)*] [] default($timeout:expr $(,)?) => $body:expr, $($rest:tt)*) => {
        $crate::__select_parse!($new [$($ops)*] [(timeout $timeout) ($body)] $($rest)*)
    };
    ($new:ident [$($ops:tt)*] [] default($timeout:expr $(,)?) => $body:expr) => {
        $crate::__select_parse!($new [$($ops)*] [(timeout $timeout) ($body)])
    };
    ($new:ident [$($ops:tt)*] [$($default:tt)+] default $($rest:tt)*) => {
        compile_error!("there can be only one `default` arm in a `select!`")
    };
    ($new:ident [$($ops:tt)*] [$($default:tt)*]) => {
        $crate::__select_build!($new sel [] [$($ops)*] [$($default)*])
    };
}

/// Builds `select!`'s selection, one channel end at a time, each bound once, by a `match`
/// whose scrutinee keeps the temporaries of the expression (`r.unwrap_or(&never())`) alive
/// through the whole selection. Not a stable interface.
#[doc(hidden)]
#[macro_export]
macro_rules! __select_build {
    ($new:ident $sel:ident [$($done:tt)*] [(recv ($r:expr) ($res:pat) ($body:expr)) $($rest:tt)*]
        [$($default:tt)*]) => {
        match &$r {
            end => $crate::__select_build!($new $sel [$($done)* (recv end ($res) ($body))] [$($rest)*]
                [$($default)*]),
        }
    };
    ($new:ident $sel:ident [$($done:tt)*] [(send ($s:expr) ($m:expr) ($res:pat) ($body:expr)) $($rest:tt)*]
        [$($default:tt)*]) => {
        match &$s {
            end => $crate::__select_build!($new $sel [$($done)* (send end ($m) ($res) ($body))] [$($rest)*]
                [$($default)*]),
        }
    };
    ($new:ident $sel:ident [$(($kind:ident $end:ident $($arm:tt)*))*] [] []) => {{
        let mut $sel = $crate::channel::Select::$new();
        let indexes: &[usize] = &[$($sel.$kind($end)),*];
        let op = $sel.select();
        $crate::__select_dispatch!(op indexes 0usize; $(($kind $end $($arm)*))*)
    }};
    ($new:ident $sel:ident [$(($kind:ident $end:ident $($arm:tt)*))*] [] [(try) ($default:expr)]) => {{
        let mut $sel = $crate::channel::Select::$new();
        let indexes: &[usize] = &[$($sel.$kind($end)),*];
        match $sel.try_select() {
            Ok(op) => $crate::__select_dispatch!(op indexes 0usize; $(($kind $end $($arm)*))*),
            Err(_) => $default,
        }
    }};
    ($new:ident $sel:ident [$(($kind:ident $end:ident $($arm:tt)*))*] []
        [(timeout $timeout:expr) ($default:expr)]) => {{
        let mut $sel = $crate::channel::Select::$new();
        let indexes: &[usize] = &[$($sel.$kind($end)),*];
        match $sel.select_timeout($timeout) {
            Ok(op) => $crate::__select_dispatch!(op indexes 0usize; $(($kind $end $($arm)*))*),
            Err(_) => $default,
        }
    }};
}

/// Completes the operation `select!` chose and runs its arm. Not a stable interface.
#[doc(hidden)]
#[macro_export]
macro_rules! __select_dispatch {
    ($op:ident $indexes:ident $at:expr; (recv $end:ident ($res:pat) ($body:expr)) $($rest:tt)*) => {
        if $op.index() == $indexes[$at] {
            let $res = $op.recv($end);
            $body
        } else {
            $crate::__select_dispatch!($op $indexes $at + 1; $($rest)*)
        }
    };
    ($op:ident $indexes:ident $at:expr;
        (send $end:ident ($m:expr) ($res:pat) ($body:expr)) $($rest:tt)*) => {
        if $op.index() == $indexes[$at] {
            let $res = $op.send($end, $m);
            $body
        } else {
            $crate::__select_dispatch!($op $indexes $at + 1; $($rest)*)
        }
    };
    ($op:ident $indexes:ident $at:expr;) => {{
        let _ = (&$op, $indexes);
        unreachable!("select! chose an operation it did not add")
    }};
}
