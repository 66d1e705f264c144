//! Bounded and rendezvous channels, mirroring `std::sync::mpsc::sync_channel`.
//!
//! The receiving end is the same [`Receiver`] as an unbounded channel's; the sending end waits
//! for room. Under a backend the room is a hidden semaphore (`super::super::bound`), so a full
//! channel, a `try_send`'s answer and the happened-before between a receive and the send it
//! makes room for are all logged and replayed as semaphore operations.

use std::fmt;
use std::panic::Location;

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::{Receiver, Receivers, SendError, Sender, TrySendError, make};
use crate::sync::values::Carries;

/// Creates a channel with room for `bound` messages, like `std::sync::mpsc::sync_channel`:
/// `send` waits while the channel is full, and with `bound` 0 until a receive has taken the
/// message (a rendezvous).
///
/// ```
/// let (tx, rx) = ppd::sync::mpsc::sync_channel(1);
/// tx.send(1u8).unwrap();
/// assert!(tx.try_send(2).is_err(), "full");
/// assert_eq!(rx.recv().unwrap(), 1);
/// tx.try_send(2).unwrap();
/// ```
#[track_caller]
pub fn sync_channel<T>(bound: usize) -> (SyncSender<T>, Receiver<T>) {
    let (inner, rx) = make(None, Location::caller(), Some(bound), Receivers::One);
    (SyncSender { inner }, rx)
}

/// Like [`sync_channel`], with a name that predicates and reports use.
///
/// ```
/// let (tx, rx) = ppd::sync::mpsc::named_sync_channel("results", 4);
/// tx.send("done").unwrap();
/// assert_eq!(rx.recv().unwrap(), "done");
/// ```
#[track_caller]
pub fn named_sync_channel<T>(name: &'static str, bound: usize) -> (SyncSender<T>, Receiver<T>) {
    let (inner, rx) = make(Some(name), Location::caller(), Some(bound), Receivers::One);
    (SyncSender { inner }, rx)
}

/// The sending half of a bounded channel, like `std::sync::mpsc::SyncSender`. Clone it for
/// more senders.
///
/// ```
/// let (tx, rx) = ppd::sync::mpsc::sync_channel(0);
/// let worker = ppd::thread::spawn(move || tx.send(7).unwrap());
/// assert_eq!(rx.recv().unwrap(), 7);
/// worker.join().unwrap();
/// ```
pub struct SyncSender<T> {
    inner: Sender<T>,
}

impl<T> Clone for SyncSender<T> {
    fn clone(&self) -> Self {
        SyncSender {
            inner: self.inner.clone(),
        }
    }
}

impl<T> fmt::Debug for SyncSender<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SyncSender")
            .field("channel", &self.inner.meta.id)
            .finish()
    }
}

impl<T> SyncSender<T> {
    /// Sends a message, waiting while the channel is full (and, for a rendezvous channel,
    /// until a receive has taken it); fails, giving it back, when the receiver is gone.
    ///
    /// ```
    /// let (tx, rx) = ppd::sync::mpsc::sync_channel::<i32>(1);
    /// drop(rx);
    /// assert!(tx.send(1).is_err());
    /// ```
    #[inline]
    #[track_caller]
    pub fn send(&self, value: T) -> Result<(), SendError<T>> {
        self.inner.send_bounded(value, Location::caller())
    }

    /// Sends a message if there is room now: `Full` when there is none (for a rendezvous
    /// channel: when no receive is waiting), `Disconnected` when the receiver is gone. The
    /// answer is logged, and replay gives it back.
    ///
    /// ```
    /// use ppd::sync::mpsc::TrySendError;
    /// let (tx, rx) = ppd::sync::mpsc::sync_channel(1);
    /// tx.try_send(1).unwrap();
    /// assert_eq!(tx.try_send(2), Err(TrySendError::Full(2)));
    /// drop(rx);
    /// assert_eq!(tx.try_send(3), Err(TrySendError::Disconnected(3)));
    /// ```
    #[inline]
    #[track_caller]
    pub fn try_send(&self, value: T) -> Result<(), TrySendError<T>> {
        self.inner.try_send_bounded(value, Location::caller(), None)
    }
}

/// A sender is logged as its channel's id (it can be an e-block argument).
impl<T> Serialize for SyncSender<T> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.inner.serialize(serializer)
    }
}

impl<'de, T> serde::Deserialize<'de> for SyncSender<T> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Sender::deserialize(deserializer).map(|inner| SyncSender { inner })
    }
}

/// A channel whose messages are serde logs them (through either end, for every clone of both).
impl<T: Serialize + DeserializeOwned> Carries for SyncSender<T> {
    fn register_serde(&self) {
        self.inner.register_serde();
    }
}
