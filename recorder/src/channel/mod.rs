//! Multi-producer, multi-consumer channels with crossbeam-channel's API, recorded and
//! replayed: `ppd::channel` in a build with ppd, crossbeam-channel itself in one without.
//!
//! A channel here is the mpsc channel of [`crate::sync::mpsc`] under another API: the same
//! message headers, events and replay (each receive logs which message it took, so which
//! receiver of a multi-consumer channel got which message is replayed, the receivers of one
//! channel sharing the messages held back for each other), and a bounded channel's capacity is
//! the same hidden semaphore as `sync_channel`'s. What crossbeam answers from the channel's
//! state (`len`, `is_empty`, `is_full`) is logged as an `Answer` and given back in replay.
//! [`Select`] and [`select!`](crate::select) choose among receives as the mpsc `Select` does,
//! logging the choice. [`after`], [`tick`] and [`never()`] are timers read through the logged
//! clock (`timer`).

mod select;
mod timer;

use std::fmt;
use std::panic::Location;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ppd_formats::event::{Question, RecvOutcome};
use serde::Serialize;
use serde::de::DeserializeOwned;

pub use crossbeam_channel::{
    ReadyTimeoutError, RecvError, RecvTimeoutError, SelectTimeoutError, SendError,
    SendTimeoutError, TryReadyError, TryRecvError, TrySelectError, TrySendError,
};
pub use select::{Select, SelectedOperation};

use timer::Timer;

/// `select!` and `select_biased!` under the channel module too, where crossbeam-channel has
/// them.
pub use crate::{select, select_biased};

use crate::runtime;
use crate::sync::mpsc::{self, ReceiverCore, Wait};
use crate::sync::values::Carries;

/// Creates a channel of unbounded capacity, like `crossbeam_channel::unbounded`.
///
/// ```
/// let (s, r) = ppd::channel::unbounded();
/// s.send(1).unwrap();
/// assert_eq!(r.recv(), Ok(1));
/// ```
#[track_caller]
pub fn unbounded<T>() -> (Sender<T>, Receiver<T>) {
    make(None, None, Location::caller())
}

/// Creates a channel with room for `cap` messages, like `crossbeam_channel::bounded`; with
/// `cap` 0 every send waits for a receive to take its message.
///
/// ```
/// let (s, r) = ppd::channel::bounded(1);
/// s.send(1).unwrap();
/// assert!(s.is_full());
/// assert!(s.try_send(2).is_err());
/// assert_eq!(r.recv(), Ok(1));
/// ```
#[track_caller]
pub fn bounded<T>(cap: usize) -> (Sender<T>, Receiver<T>) {
    make(None, Some(cap), Location::caller())
}

/// Like [`unbounded`] (`cap` none) or [`bounded`], with a name that predicates and reports
/// use.
///
/// ```
/// let (s, r) = ppd::channel::named("work", Some(8));
/// s.send("job").unwrap();
/// assert_eq!(r.recv(), Ok("job"));
/// ```
#[track_caller]
pub fn named<T>(name: &'static str, cap: Option<usize>) -> (Sender<T>, Receiver<T>) {
    make(Some(name), cap, Location::caller())
}

fn make<T>(
    name: Option<&'static str>,
    cap: Option<usize>,
    site: &'static Location<'static>,
) -> (Sender<T>, Receiver<T>) {
    let (inner, rx) = mpsc::make(name, site, cap, mpsc::Receivers::Many);
    (
        Sender { inner, cap },
        Receiver {
            core: rx.into_core(),
            cap,
            timer: None,
        },
    )
}

/// A receiver that delivers, once, the instant it is due, `duration` from now, like
/// `crossbeam_channel::after`; in replay, the logged time.
///
/// ```
/// use std::time::Duration;
/// let timeout = ppd::channel::after(Duration::from_millis(1));
/// let fired: ppd::time::Instant = timeout.recv().unwrap();
/// assert!(timeout.try_recv().is_err(), "once");
/// # let _ = fired;
/// ```
#[track_caller]
pub fn after(duration: Duration) -> Receiver<crate::time::Instant> {
    match crate::time::Instant::now().checked_add(duration) {
        Some(when) => timer(Timer::at(when), Some(1)),
        // Due past the end of time: never, as crossbeam's is.
        None => never(),
    }
}

/// A receiver that delivers `when`, once, at `when`, like `crossbeam_channel::at`.
///
/// ```
/// use std::time::Duration;
/// let soon = ppd::time::Instant::now() + Duration::from_millis(1);
/// let fired = ppd::channel::at(soon).recv().unwrap();
/// assert_eq!(fired, soon);
/// ```
#[track_caller]
pub fn at(when: crate::time::Instant) -> Receiver<crate::time::Instant> {
    timer(Timer::at(when), Some(1))
}

/// A receiver that delivers the instant each tick is due, every `duration`, like
/// `crossbeam_channel::tick`: a tick received late is delivered once, and the next is due
/// `duration` after it was received.
///
/// ```
/// use std::time::Duration;
/// let ticks = ppd::channel::tick(Duration::from_millis(1));
/// let first = ticks.recv().unwrap();
/// assert!(ticks.recv().unwrap() >= first);
/// ```
#[track_caller]
pub fn tick(duration: Duration) -> Receiver<crate::time::Instant> {
    match crate::time::Instant::now().checked_add(duration) {
        Some(first) => timer(Timer::tick(first, duration), Some(1)),
        // Due past the end of time: never, as crossbeam's is.
        None => never(),
    }
}

/// A receiver that never delivers, like `crossbeam_channel::never`: in a [`select!`]
/// arm, an operation that is never chosen.
///
/// ```
/// use std::time::Duration;
/// let nothing = ppd::channel::never::<u8>();
/// assert!(nothing.recv_timeout(Duration::from_millis(1)).is_err());
/// ```
pub fn never<T>() -> Receiver<T> {
    Receiver {
        core: ReceiverCore::unconnected(),
        cap: Some(0),
        timer: Some(TimerEnd {
            timer: Arc::new(Timer::never()),
            // Never called: a never timer delivers nothing.
            deliver: |_| unreachable!("a never timer delivered"),
        }),
    }
}

fn timer(timer: Timer, cap: Option<usize>) -> Receiver<crate::time::Instant> {
    Receiver {
        core: ReceiverCore::unconnected(),
        cap,
        timer: Some(TimerEnd {
            timer: Arc::new(timer),
            deliver: |at| at,
        }),
    }
}

/// The time end of a timer's receiver: the timer, and how its instant is the receiver's
/// message type (the identity, for the `Receiver<Instant>` a timer is).
struct TimerEnd<T> {
    timer: Arc<Timer>,
    deliver: fn(crate::time::Instant) -> T,
}

impl<T> Clone for TimerEnd<T> {
    fn clone(&self) -> Self {
        TimerEnd {
            timer: Arc::clone(&self.timer),
            deliver: self.deliver,
        }
    }
}

/// The sending side of a channel, like `crossbeam_channel::Sender`. Clone it for more
/// senders.
///
/// ```
/// let (s, r) = ppd::channel::unbounded();
/// let s2 = s.clone();
/// s.send(1).unwrap();
/// s2.send(2).unwrap();
/// assert_eq!(r.iter().take(2).sum::<i32>(), 3);
/// ```
pub struct Sender<T> {
    inner: mpsc::Sender<T>,
    cap: Option<usize>,
}

impl<T> Clone for Sender<T> {
    fn clone(&self) -> Self {
        Sender {
            inner: self.inner.clone(),
            cap: self.cap,
        }
    }
}

impl<T> fmt::Debug for Sender<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sender")
            .field("channel", &self.inner.id())
            .finish()
    }
}

/// How many messages the channel holds: crossbeam answers from its state at that moment, a
/// choice of the run, so it is logged and replay gives it back.
fn logged_len(site: &'static Location<'static>, live: impl FnOnce() -> usize) -> usize {
    if !runtime::active() {
        return live();
    }
    crate::thread::answer(Question::ChannelLen, site, || live() as u64) as usize
}

impl<T> Sender<T> {
    /// Sends a message, waiting for room in a bounded channel; fails, giving it back, when
    /// every receiver is gone.
    ///
    /// ```
    /// let (s, r) = ppd::channel::bounded(1);
    /// s.send(1).unwrap();
    /// drop(r);
    /// assert_eq!(s.send(2), Err(ppd::channel::SendError(2)));
    /// ```
    #[inline]
    #[track_caller]
    pub fn send(&self, msg: T) -> Result<(), SendError<T>> {
        self.inner
            .send_bounded(msg, Location::caller())
            .map_err(|e| SendError(e.0))
    }

    /// Sends a message if there is room now; the answer is logged.
    ///
    /// ```
    /// use ppd::channel::TrySendError;
    /// let (s, _r) = ppd::channel::bounded(1);
    /// s.try_send(1).unwrap();
    /// assert_eq!(s.try_send(2), Err(TrySendError::Full(2)));
    /// ```
    #[track_caller]
    pub fn try_send(&self, msg: T) -> Result<(), TrySendError<T>> {
        self.inner
            .try_send_bounded(msg, Location::caller(), None)
            .map_err(|e| match e {
                mpsc::TrySendError::Full(v) => TrySendError::Full(v),
                mpsc::TrySendError::Disconnected(v) => TrySendError::Disconnected(v),
            })
    }

    /// Sends a message, waiting at most `timeout` for room; whether it timed out is logged.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ppd::channel::SendTimeoutError;
    /// let (s, _r) = ppd::channel::bounded(0);
    /// let late = s.send_timeout(1, Duration::from_millis(1));
    /// assert_eq!(late, Err(SendTimeoutError::Timeout(1)));
    /// ```
    #[track_caller]
    pub fn send_timeout(&self, msg: T, timeout: Duration) -> Result<(), SendTimeoutError<T>> {
        self.inner
            .try_send_bounded(msg, Location::caller(), Some(timeout))
            .map_err(|e| match e {
                mpsc::TrySendError::Full(v) => SendTimeoutError::Timeout(v),
                mpsc::TrySendError::Disconnected(v) => SendTimeoutError::Disconnected(v),
            })
    }

    /// Sends a message, waiting for room until `deadline`.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// let (s, r) = ppd::channel::bounded(1);
    /// s.send_deadline(3, Instant::now() + Duration::from_millis(5)).unwrap();
    /// assert_eq!(r.recv(), Ok(3));
    /// ```
    #[track_caller]
    pub fn send_deadline(&self, msg: T, deadline: Instant) -> Result<(), SendTimeoutError<T>> {
        self.send_timeout(msg, deadline.saturating_duration_since(Instant::now()))
    }

    /// How many messages the channel holds (logged); a rendezvous channel's is always 0, as
    /// crossbeam's.
    ///
    /// ```
    /// let (s, _r) = ppd::channel::unbounded();
    /// s.send(()).unwrap();
    /// assert_eq!(s.len(), 1);
    /// ```
    #[track_caller]
    pub fn len(&self) -> usize {
        if self.cap == Some(0) {
            return 0;
        }
        logged_len(Location::caller(), || self.inner.carrier_len())
    }

    /// Whether the channel holds no message (logged, as `len`).
    ///
    /// ```
    /// let (s, _r) = ppd::channel::unbounded::<u8>();
    /// assert!(s.is_empty());
    /// ```
    #[track_caller]
    pub fn is_empty(&self) -> bool {
        self.cap == Some(0) || logged_len(Location::caller(), || self.inner.carrier_len()) == 0
    }

    /// Whether a bounded channel has no room (logged, as `len`); never for an unbounded one.
    ///
    /// ```
    /// let (s, _r) = ppd::channel::bounded(1);
    /// s.send(0).unwrap();
    /// assert!(s.is_full());
    /// ```
    #[track_caller]
    pub fn is_full(&self) -> bool {
        full(self.cap, || {
            logged_len(Location::caller(), || self.inner.carrier_len())
        })
    }

    /// The channel's capacity: `None` for an unbounded one.
    ///
    /// ```
    /// assert_eq!(ppd::channel::bounded::<u8>(4).0.capacity(), Some(4));
    /// assert_eq!(ppd::channel::unbounded::<u8>().0.capacity(), None);
    /// ```
    pub fn capacity(&self) -> Option<usize> {
        self.cap
    }

    /// Whether `self` and `other` send on the same channel, like crossbeam's.
    ///
    /// ```
    /// let (s, _r) = ppd::channel::unbounded::<u8>();
    /// let (other, _) = ppd::channel::unbounded::<u8>();
    /// assert!(s.same_channel(&s.clone()));
    /// assert!(!s.same_channel(&other));
    /// ```
    pub fn same_channel(&self, other: &Sender<T>) -> bool {
        self.inner.same_channel(&other.inner)
    }
}

/// Whether a channel of capacity `cap` holding `len()` messages is full. A rendezvous channel
/// is always full, as crossbeam's is.
fn full(cap: Option<usize>, len: impl FnOnce() -> usize) -> bool {
    match cap {
        None => false,
        Some(0) => true,
        Some(cap) => len() >= cap,
    }
}

/// A sender is logged as its channel's id (it can be an e-block argument).
impl<T> Serialize for Sender<T> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.inner.serialize(serializer)
    }
}

/// A channel whose messages are serde logs them (through either end, for every clone of both).
impl<T: Serialize + DeserializeOwned> Carries for Sender<T> {
    fn register_serde(&self) {
        self.inner.register_serde();
    }
}

/// The receiving side of a channel, like `crossbeam_channel::Receiver`: clones share the
/// messages, each taken by one of them, and the log says which.
///
/// ```
/// let (s, r) = ppd::channel::unbounded();
/// let r2 = r.clone();
/// s.send(1).unwrap();
/// s.send(2).unwrap();
/// assert_eq!(r.recv().unwrap() + r2.recv().unwrap(), 3);
/// ```
pub struct Receiver<T> {
    core: ReceiverCore<T>,
    cap: Option<usize>,
    /// For [`after`], [`tick`] and [`never()`]: the timer it receives from instead of `core`.
    timer: Option<TimerEnd<T>>,
}

impl<T> Clone for Receiver<T> {
    fn clone(&self) -> Self {
        Receiver {
            core: self.core.clone(),
            cap: self.cap,
            timer: self.timer.clone(),
        }
    }
}

impl<T> fmt::Debug for Receiver<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Receiver")
            .field("channel", &self.core.id())
            .finish()
    }
}

impl<T> Receiver<T> {
    /// Waits for a message; fails when every sender is gone and the channel is empty.
    ///
    /// ```
    /// let (s, r) = ppd::channel::unbounded();
    /// s.send(5).unwrap();
    /// drop(s);
    /// assert_eq!(r.recv(), Ok(5));
    /// assert!(r.recv().is_err());
    /// ```
    #[inline]
    #[track_caller]
    pub fn recv(&self) -> Result<T, RecvError> {
        if let Some(end) = &self.timer {
            return end.timer.receive(None).map(end.deliver).ok_or(RecvError);
        }
        self.core
            .receive(Wait::Block, Location::caller())
            .map_err(|_| RecvError)
    }

    /// A message if one is waiting now (logged, as every receive is).
    ///
    /// ```
    /// use ppd::channel::TryRecvError;
    /// let (s, r) = ppd::channel::unbounded::<u8>();
    /// assert_eq!(r.try_recv(), Err(TryRecvError::Empty));
    /// drop(s);
    /// assert_eq!(r.try_recv(), Err(TryRecvError::Disconnected));
    /// ```
    #[inline]
    #[track_caller]
    pub fn try_recv(&self) -> Result<T, TryRecvError> {
        if let Some(end) = &self.timer {
            return end
                .timer
                .receive(Some(Duration::ZERO))
                .map(end.deliver)
                .ok_or(TryRecvError::Empty);
        }
        self.core
            .receive(Wait::Try, Location::caller())
            .map_err(|outcome| match outcome {
                RecvOutcome::Disconnected => TryRecvError::Disconnected,
                RecvOutcome::Empty | RecvOutcome::Timeout => TryRecvError::Empty,
            })
    }

    /// Waits at most `timeout` for a message.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ppd::channel::RecvTimeoutError;
    /// let (_s, r) = ppd::channel::unbounded::<u8>();
    /// assert_eq!(r.recv_timeout(Duration::from_millis(1)), Err(RecvTimeoutError::Timeout));
    /// ```
    #[inline]
    #[track_caller]
    pub fn recv_timeout(&self, timeout: Duration) -> Result<T, RecvTimeoutError> {
        if let Some(end) = &self.timer {
            return end
                .timer
                .receive(Some(timeout))
                .map(end.deliver)
                .ok_or(RecvTimeoutError::Timeout);
        }
        self.core
            .receive(Wait::Timeout(timeout), Location::caller())
            .map_err(|outcome| match outcome {
                RecvOutcome::Disconnected => RecvTimeoutError::Disconnected,
                RecvOutcome::Empty | RecvOutcome::Timeout => RecvTimeoutError::Timeout,
            })
    }

    /// Waits for a message until `deadline`.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// let (s, r) = ppd::channel::unbounded();
    /// s.send(1).unwrap();
    /// assert_eq!(r.recv_deadline(Instant::now() + Duration::from_millis(5)), Ok(1));
    /// ```
    #[track_caller]
    pub fn recv_deadline(&self, deadline: Instant) -> Result<T, RecvTimeoutError> {
        self.recv_timeout(deadline.saturating_duration_since(Instant::now()))
    }

    /// Iterates over messages until every sender is gone.
    ///
    /// ```
    /// let (s, r) = ppd::channel::unbounded();
    /// for i in 0..3 { s.send(i).unwrap(); }
    /// drop(s);
    /// assert_eq!(r.iter().collect::<Vec<_>>(), [0, 1, 2]);
    /// ```
    pub fn iter(&self) -> Iter<'_, T> {
        Iter { receiver: self }
    }

    /// Iterates over the messages waiting now.
    ///
    /// ```
    /// let (s, r) = ppd::channel::unbounded();
    /// s.send(1).unwrap();
    /// assert_eq!(r.try_iter().collect::<Vec<_>>(), [1]);
    /// ```
    pub fn try_iter(&self) -> TryIter<'_, T> {
        TryIter { receiver: self }
    }

    /// How many messages the channel holds (logged).
    ///
    /// ```
    /// let (s, r) = ppd::channel::unbounded();
    /// s.send(1).unwrap();
    /// assert_eq!(r.len(), 1);
    /// ```
    #[track_caller]
    pub fn len(&self) -> usize {
        self.held(Location::caller())
    }

    /// Whether the channel holds no message (logged, as `len`).
    ///
    /// ```
    /// let (_s, r) = ppd::channel::unbounded::<u8>();
    /// assert!(r.is_empty());
    /// ```
    #[track_caller]
    pub fn is_empty(&self) -> bool {
        self.held(Location::caller()) == 0
    }

    /// How many messages the channel holds (a timer: one when it is due, by the logged
    /// clock).
    fn held(&self, site: &'static Location<'static>) -> usize {
        match &self.timer {
            Some(end) => end
                .timer
                .due()
                .is_some_and(|due| due <= crate::time::Instant::now())
                .into(),
            // A rendezvous channel holds nothing, as crossbeam's: a message it carries
            // between a send and the receive that takes it is in neither's hands.
            None if self.cap == Some(0) => 0,
            None => logged_len(site, || self.core.carrier_len()),
        }
    }

    /// Whether a bounded channel has no room (logged, as `len`).
    ///
    /// ```
    /// let (s, r) = ppd::channel::bounded(1);
    /// s.send(1).unwrap();
    /// assert!(r.is_full());
    /// ```
    #[track_caller]
    pub fn is_full(&self) -> bool {
        let site = Location::caller();
        full(self.cap, || self.held(site))
    }

    /// The channel's capacity: `None` for an unbounded one.
    ///
    /// ```
    /// assert_eq!(ppd::channel::bounded::<u8>(0).1.capacity(), Some(0));
    /// ```
    pub fn capacity(&self) -> Option<usize> {
        self.cap
    }

    /// Whether `self` and `other` receive from the same channel (or timer), like crossbeam's.
    ///
    /// ```
    /// let (_s, r) = ppd::channel::unbounded::<u8>();
    /// assert!(r.same_channel(&r.clone()));
    /// assert!(!r.same_channel(&ppd::channel::never()));
    /// assert!(ppd::channel::never::<u8>().same_channel(&ppd::channel::never()));
    /// ```
    pub fn same_channel(&self, other: &Receiver<T>) -> bool {
        match (&self.timer, &other.timer) {
            (Some(a), Some(b)) => a.timer.same(&b.timer),
            (None, None) => self.core.same_channel(&other.core),
            _ => false,
        }
    }
}

/// A receiver is logged as its channel's id (it can be an e-block argument).
impl<T> Serialize for Receiver<T> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        crate::sync::handle::serialize(
            self.core.id(),
            ppd_formats::value::End::Receiver,
            serializer,
        )
    }
}

impl<'de, T> serde::Deserialize<'de> for Receiver<T> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let id = crate::sync::handle::deserialize(deserializer, "channel receiver")?;
        Ok(Receiver {
            core: ReceiverCore::emulated(id),
            cap: None,
            timer: None,
        })
    }
}

impl<'de, T> serde::Deserialize<'de> for Sender<T> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(Sender {
            inner: mpsc::Sender::deserialize(deserializer)?,
            cap: None,
        })
    }
}

/// A channel whose messages are serde logs them (through either end, for every clone of both).
impl<T: Serialize + DeserializeOwned> Carries for Receiver<T> {
    fn register_serde(&self) {
        self.core.register_serde();
    }
}

crate::sync::receiver_iterators::receiver_iterators! {
    /// Iterator over received messages; see [`Receiver::iter`].
    ///
    /// ```
    /// let (s, r) = ppd::channel::unbounded::<u8>();
    /// drop(s);
    /// let mut it: ppd::channel::Iter<'_, u8> = r.iter();
    /// assert_eq!(it.next(), None);
    /// ```
    iter;
    /// Iterator over the messages waiting now; see [`Receiver::try_iter`].
    ///
    /// ```
    /// let (_s, r) = ppd::channel::unbounded::<u8>();
    /// let mut it: ppd::channel::TryIter<'_, u8> = r.try_iter();
    /// assert_eq!(it.next(), None);
    /// ```
    try_iter;
    /// Owning iterator over received messages: `for msg in r`.
    ///
    /// ```
    /// let (s, r) = ppd::channel::unbounded();
    /// s.send('x').unwrap();
    /// drop(s);
    /// let it: ppd::channel::IntoIter<char> = r.into_iter();
    /// assert_eq!(it.collect::<String>(), "x");
    /// ```
    into_iter;
}
