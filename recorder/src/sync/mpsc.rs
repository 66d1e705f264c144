//! Multi-producer, single-consumer channels, mirroring `std::sync::mpsc`, plus [`Select`].
//!
//! Every message carries a header: the sending process and its sequence number on the channel
//! (each process numbers from runs of its own, `SEQ_RUN`). A receive logs the pair — the item
//! of the receiver's communication history (Manabe & Imase §2.2) — and replay hands each
//! receive exactly that message: from its sender's lane when the channel has one receiver
//! (`mpsc/lanes.rs`), otherwise from one carrier, holding back messages that arrive early.
//! Payloads are logged only with `ppd record --payloads`, or inside an e-block, whose
//! re-execution needs them, and only once the channel's message type is known to be serde
//! ([`super::values`]): messages may be any `T`, as std's are, and a channel of non-serde
//! messages (boxed closures, handles) logs the order of its messages but not their contents.

use std::cell::Cell;
use std::fmt;
use std::marker::PhantomData;
use std::panic::Location;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, MutexGuard};
use std::time::{Duration, Instant};

use crossbeam_channel as cc;
use crossbeam_utils::Backoff;
use ppd_formats::event::{ObjectKind, Outcome, RecvOutcome};
use ppd_formats::{Event, EventKind, ObjectId, ProcessId};
use rustc_hash::FxHashMap;
use serde::Serialize;
use serde::de::DeserializeOwned;

pub use std::sync::mpsc::{RecvError, RecvTimeoutError, SendError, TryRecvError, TrySendError};

mod bounded;
mod carrier;
mod lanes;
mod select;

pub use bounded::{SyncSender, named_sync_channel, sync_channel};
use carrier::{CarrierRx, CarrierTx, Envelope};
use lanes::{Lane, Lanes};
pub(crate) use select::CarrierChoice;
pub use select::{Select, SelectTimeoutError, SelectedOperation};

use super::bound::{Bound, serve_emulated_room};
use super::values::{Carries, Opaque, Values};
use crate::runtime::backend::{Dependency, Mode, Op};
use crate::runtime::{self, diverged};

/// What every end of a channel shares: its id, its send counter and its codec slot (so a
/// registration through one end serves every clone of both).
#[derive(Debug)]
pub(crate) struct ChannelMeta<T> {
    id: ObjectId,
    next_seq: SeqCounter,
    values: Values<T>,
    /// The capacity of a bounded channel under a backend (without one, the carrier channel
    /// is bounded itself).
    bound: Option<Arc<Bound>>,
    /// Replaying a channel with one receiver: its logged messages, by sender.
    lanes: Option<Lanes<T>>,
}

impl<T> ChannelMeta<T> {
    fn new(id: ObjectId) -> Arc<ChannelMeta<T>> {
        Arc::new(ChannelMeta {
            id,
            next_seq: SeqCounter(AtomicU64::new(0)),
            values: Values::new(),
            bound: None,
            lanes: None,
        })
    }

    /// Whether `self` and `other` are one channel's: the same bookkeeping, or, under a backend
    /// (where every channel has its own id), the same id.
    fn same(self: &Arc<Self>, other: &Arc<ChannelMeta<T>>) -> bool {
        Arc::ptr_eq(self, other) || (self.id == other.id && self.id != ObjectId(0))
    }

    /// The payload to log for `value`, when payloads are wanted and the channel's values are
    /// known to be serde.
    fn payload(&self, value: &T) -> Option<Vec<u8>> {
        if runtime::wants_payload() {
            self.values.encode(value)
        } else {
            None
        }
    }
}

/// The channel's counter of reserved runs of sequence numbers, on a cache line of its own:
/// each sending process increments it once per [`SEQ_RUN`] sends, and sharing the line with
/// `id`, which every receive reads, would make the receiver miss.
#[derive(Debug)]
#[repr(align(128))]
struct SeqCounter(AtomicU64);

/// How many sequence numbers a sending process reserves at once. Run `r` of a channel holds
/// the numbers `r * SEQ_RUN + 1 ..= (r + 1) * SEQ_RUN`.
///
/// One counter incremented by every send made the channel's senders take its cache line in
/// turn, one more contended line beside the channel's own tail: in a fan-in of four senders
/// that increment was three quarters of the recorded send's own time. A message's number only
/// has to tell it apart from the channel's other messages and follow its sender's earlier
/// ones (a receive logs the pair (sender, number), and replay delivers by it), so each
/// process takes a run of numbers and counts within it ([`runtime::next_message_seq`]).
/// Numbers a process never used are gaps, which readers allow for.
const SEQ_RUN: u64 = 64;

impl SeqCounter {
    /// Reserves the channel's next run of numbers; returns its first.
    fn reserve_run(&self) -> u64 {
        self.0.fetch_add(1, Ordering::Relaxed) * SEQ_RUN + 1
    }
}

/// The sender of a message sent from a thread ppd does not manage (nothing logs its sends).
const UNMANAGED_SENDER: ProcessId = ProcessId(u32::MAX);

/// How long a replayed receive waits on its sender's lane before it looks whether every sender
/// is gone (the message then never comes).
const SENDERS_GONE_CHECK: Duration = Duration::from_millis(20);

/// Creates a channel, like `std::sync::mpsc::channel`.
///
/// ```
/// let (tx, rx) = ppd::sync::mpsc::channel();
/// tx.send(5u32).unwrap();
/// assert_eq!(rx.recv().unwrap(), 5);
/// ```
#[track_caller]
pub fn channel<T>() -> (Sender<T>, Receiver<T>) {
    make(None, Location::caller(), None, Receivers::One)
}

/// Creates a channel with a name that predicates (`recv requests`) and reports use.
///
/// ```
/// let (tx, rx) = ppd::sync::mpsc::named_channel("requests");
/// tx.send("hi".to_string()).unwrap();
/// assert_eq!(rx.recv().unwrap(), "hi");
/// ```
#[track_caller]
pub fn named_channel<T>(name: &'static str) -> (Sender<T>, Receiver<T>) {
    make(Some(name), Location::caller(), None, Receivers::One)
}

/// How many receiving ends a channel can have.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Receivers {
    /// One (`std::sync::mpsc`'s): replay delivers its messages through lanes.
    One,
    /// Any number of clones (`crate::channel`'s).
    Many,
}

/// Makes a channel with room for `capacity` messages (`None`: unbounded).
pub(crate) fn make<T>(
    name: Option<&'static str>,
    site: &'static Location<'static>,
    capacity: Option<usize>,
    receivers: Receivers,
) -> (Sender<T>, Receiver<T>) {
    if !runtime::active() {
        let (tx, rx) = carrier::bare(capacity);
        let meta = ChannelMeta::new(ObjectId(0));
        return (
            Sender {
                inner: tx,
                meta: Arc::clone(&meta),
            },
            Receiver::new(rx, meta),
        );
    }
    // The channel and its hidden semaphores all carry the name of the binding it is made in.
    let name = name.or_else(|| runtime::binding::name_at(site));
    let (tx, rx) = if capacity == Some(0) && runtime::mode() == Mode::Record {
        carrier::enveloped_paired()
    } else {
        carrier::enveloped()
    };
    let id = runtime::create(ObjectKind::Channel, 0, name, site);
    let meta = Arc::new(ChannelMeta {
        id,
        next_seq: SeqCounter(AtomicU64::new(0)),
        values: Values::new(),
        bound: capacity.map(|n| Bound::shared(n, name, site)),
        lanes: (runtime::mode() == Mode::Replay && receivers == Receivers::One).then(Lanes::new),
    });
    (
        Sender {
            inner: tx,
            meta: Arc::clone(&meta),
        },
        Receiver::new(rx, meta),
    )
}

/// The sending half of a channel, like `std::sync::mpsc::Sender`. Clone it for more senders.
///
/// ```
/// let (tx, rx) = ppd::sync::mpsc::channel();
/// let tx2 = tx.clone();
/// tx.send(1).unwrap();
/// tx2.send(2).unwrap();
/// assert_eq!(rx.recv().unwrap() + rx.recv().unwrap(), 3);
/// ```
pub struct Sender<T> {
    inner: CarrierTx<T>,
    meta: Arc<ChannelMeta<T>>,
}

impl<T> Clone for Sender<T> {
    fn clone(&self) -> Self {
        Sender {
            inner: self.inner.clone(),
            meta: Arc::clone(&self.meta),
        }
    }
}

impl<T> fmt::Debug for Sender<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sender")
            .field("channel", &self.meta.id)
            .finish()
    }
}

impl<T> Sender<T> {
    /// Sends a message; fails, giving it back, when the receiver is gone.
    ///
    /// ```
    /// let (tx, rx) = ppd::sync::mpsc::channel::<i32>();
    /// drop(rx);
    /// assert!(tx.send(1).is_err());
    /// ```
    #[inline]
    #[track_caller]
    pub fn send(&self, value: T) -> Result<(), SendError<T>> {
        if !runtime::active() {
            return self.send_plain(value);
        }
        self.send_logged(value, Location::caller())
    }

    /// `send` under a backend, out of line so that pass-through inlines to the plain send.
    #[inline(never)]
    fn send_logged(&self, value: T, site: &'static Location<'static>) -> Result<(), SendError<T>> {
        self.send_logged_seq(value, site).map(|_| ())
    }

    /// `send_logged`, saying which sequence number the message has.
    fn send_logged_seq(
        &self,
        value: T,
        site: &'static Location<'static>,
    ) -> Result<u64, SendError<T>> {
        let (env, replayed) = self.log_send(value, site)?;
        let seq = env.seq;
        if let (Some(lanes), true) = (&self.meta.lanes, replayed) {
            // Replay of a logged send: delivered, as the log says (see the `Err` below).
            lanes.push(env);
            return Ok(seq);
        }
        match self.inner.send(env) {
            Ok(()) => Ok(seq),
            // Replay: the log says the message was delivered, so in the recorded run it sat in
            // the channel until the receiver went away unread; here it went away first. Either
            // way nobody receives it, and the sender saw success.
            Err(_) if matches!(runtime::mode(), Mode::Replay | Mode::Emulate) => Ok(seq),
            Err(env) => {
                self.log_undelivered(seq, site);
                Err(SendError(env.value))
            }
        }
    }

    /// Logs the send of `value` — before the message becomes visible, so no receive is ever
    /// logged without its send (a crash in between leaves a send nobody received, which is
    /// consistent) — and gives it its envelope, saying whether the log had the send (replay).
    /// Replayed, a send the log says found every receiver gone fails here.
    fn log_send(
        &self,
        value: T,
        site: &'static Location<'static>,
    ) -> Result<(Envelope<T>, bool), SendError<T>> {
        let channel = self.meta.id;
        let expected = runtime::expect(Op::on(EventKind::Send, channel, Some(site)));
        let seq = runtime::backend::expected::send_seq(&expected).unwrap_or_else(|| {
            runtime::next_message_seq(channel, SEQ_RUN, || self.meta.next_seq.reserve_run())
        });
        let payload = self.meta.payload(&value);
        runtime::done(&Event::Send {
            channel,
            seq,
            site: Some(site),
            payload: payload.as_deref(),
        });
        // Whether every receiver was gone is a race: the log says how it went.
        if let Some(Event::Undelivered { .. }) =
            runtime::expect_if(Op::on(EventKind::Undelivered, channel, Some(site)))
        {
            runtime::done(&Event::Undelivered {
                channel,
                seq,
                site: Some(site),
            });
            return Err(SendError(value));
        }
        let sender = runtime::current_process().unwrap_or(UNMANAGED_SENDER);
        Ok((Envelope { sender, seq, value }, expected.is_some()))
    }

    /// Logs that message `seq`, sent at `site`, found every receiver gone.
    fn log_undelivered(&self, seq: u64, site: &'static Location<'static>) {
        let channel = self.meta.id;
        runtime::expect(Op::on(EventKind::Undelivered, channel, Some(site)));
        runtime::done(&Event::Undelivered {
            channel,
            seq,
            site: Some(site),
        });
    }
}

impl<T> Sender<T> {
    /// A send that waits for room in a bounded channel: the room's P, then the send (a
    /// rendezvous send waits for a receive to pair with instead, then until its message is
    /// taken).
    #[inline]
    pub(crate) fn send_bounded(
        &self,
        value: T,
        site: &'static Location<'static>,
    ) -> Result<(), SendError<T>> {
        if !runtime::active() {
            return self.send_plain(value);
        }
        self.send_bounded_logged(value, site)
    }

    /// `send_bounded` under a backend, out of line so that pass-through inlines to the plain
    /// send.
    #[inline(never)]
    fn send_bounded_logged(
        &self,
        value: T,
        site: &'static Location<'static>,
    ) -> Result<(), SendError<T>> {
        let Some(bound) = self.meta.bound.as_deref() else {
            serve_emulated_room(self.meta.id, site);
            let sent = self.send_logged(value, site);
            serve_emulated_room(self.meta.id, site);
            return sent;
        };
        if bound.is_rendezvous() {
            return self
                .send_rendezvous(bound, value, site, Wait::Block)
                .map_err(|e| match e {
                    TrySendError::Full(value) | TrySendError::Disconnected(value) => {
                        SendError(value)
                    }
                });
        }
        bound.enter(site);
        match self.send_logged_seq(value, site) {
            Ok(_) => Ok(()),
            Err(e) => {
                bound.abandoned(site);
                Err(e)
            }
        }
    }

    /// A send on a rendezvous channel, waiting as `wait` says for a receive to pair with:
    /// `Full` when none came in time, `Disconnected` when every receiver is gone. Once its
    /// message is taken, the send waits for the receive's permit on the handoff, so the
    /// receive happens-before the send returns.
    ///
    /// Recorded, crossbeam's rendezvous carrier pairs the send with a receive
    /// ([`carrier::enveloped_paired`]): the pairing is made first, then the send is logged
    /// and the message handed over. A send that had to wait logs `Blocked` on the handoff (a
    /// receive's permit is what it waits for); a `try_send` or `send_timeout` logs whether it
    /// paired ([`Bound::log_pairing`]), which replay reads back.
    fn send_rendezvous(
        &self,
        bound: &Bound,
        value: T,
        site: &'static Location<'static>,
        wait: Wait,
    ) -> Result<(), TrySendError<T>> {
        if runtime::mode() != Mode::Record {
            if !matches!(wait, Wait::Block) && !bound.replay_pairing(site) {
                return Err(TrySendError::Full(value));
            }
            self.send_logged_seq(value, site)
                .map_err(|e| TrySendError::Disconnected(e.0))?;
            bound.sent(site);
            return Ok(());
        }
        let mut select = cc::Select::new();
        self.inner.select_send(&mut select);
        let paired = match select::carriers_choice_if_ready(&mut select) {
            Some(op) => op,
            None => {
                let waited = match wait {
                    Wait::Try => None,
                    Wait::Block => {
                        bound.log_waiting(site);
                        Some(select.select())
                    }
                    Wait::Timeout(patience) => {
                        bound.log_waiting(site);
                        select.select_timeout(patience).ok()
                    }
                };
                let Some(op) = waited else {
                    bound.log_pairing(false, site);
                    return Err(TrySendError::Full(value));
                };
                op
            }
        };
        if !matches!(wait, Wait::Block) {
            bound.log_pairing(true, site);
        }
        self.complete_paired(bound, paired, value, site)
            .map_err(|e| TrySendError::Disconnected(e.0))
    }

    /// Recording: completes a send on a rendezvous carrier that crossbeam paired with a
    /// receive (in [`send_rendezvous`](Sender::send_rendezvous) or a selection), logged as
    /// any send, then waits for the receive's permit on the handoff.
    pub(crate) fn complete_paired(
        &self,
        bound: &Bound,
        paired: cc::SelectedOperation<'_>,
        value: T,
        site: &'static Location<'static>,
    ) -> Result<(), SendError<T>> {
        let (env, _) = self.log_send(value, site)?;
        let seq = env.seq;
        if let Err(env) = self.inner.complete_send(paired, env) {
            self.log_undelivered(seq, site);
            return Err(SendError(env.value));
        }
        bound.sent(site);
        Ok(())
    }

    /// A send that waits for room at most `patience` (none: not at all): `Full` when the
    /// channel has no room in time (a rendezvous channel: no receive to pair with),
    /// `Disconnected` when every receiver is gone.
    pub(crate) fn try_send_bounded(
        &self,
        value: T,
        site: &'static Location<'static>,
        patience: Option<Duration>,
    ) -> Result<(), TrySendError<T>> {
        if !runtime::active() {
            let envelope = Envelope::bare(value);
            let sent = match patience {
                None => self.inner.try_send(envelope),
                Some(patience) => self.inner.send_timeout(envelope, patience),
            };
            return sent.map_err(|e| match e {
                cc::TrySendError::Full(env) => TrySendError::Full(env.value),
                cc::TrySendError::Disconnected(env) => TrySendError::Disconnected(env.value),
            });
        }
        let Some(bound) = self.meta.bound.as_deref() else {
            if serve_emulated_room(self.meta.id, site) == Some(Outcome::WouldBlock) {
                return Err(TrySendError::Full(value));
            }
            let sent = self.send_logged(value, site);
            serve_emulated_room(self.meta.id, site);
            return sent.map_err(|e| TrySendError::Disconnected(e.0));
        };
        if bound.is_rendezvous() {
            let wait = patience.map_or(Wait::Try, Wait::Timeout);
            return self.send_rendezvous(bound, value, site, wait);
        }
        let entered = match patience {
            None => bound.try_enter(site),
            Some(patience) => bound.enter_within(site, patience),
        };
        if !entered {
            return Err(TrySendError::Full(value));
        }
        match self.send_logged_seq(value, site) {
            Ok(_) => Ok(()),
            Err(e) => {
                bound.abandoned(site);
                Err(TrySendError::Disconnected(e.0))
            }
        }
    }

    /// Pass-through: the carrier's own send (which waits for room in a bounded one).
    #[inline]
    fn send_plain(&self, value: T) -> Result<(), SendError<T>> {
        self.inner
            .send(Envelope::bare(value))
            .map_err(|env| SendError(env.value))
    }
}

impl<T> Sender<T> {
    /// The channel's id.
    pub(crate) fn id(&self) -> ObjectId {
        self.meta.id
    }

    /// Whether both ends are of one channel (handles rebuilt for a re-execution are by id).
    pub(crate) fn same_channel(&self, other: &Sender<T>) -> bool {
        self.meta.same(&other.meta)
    }

    /// Completes a send a selection chose on the carrier (pass-through).
    fn complete_send(&self, op: cc::SelectedOperation<'_>, value: T) -> Result<(), SendError<T>> {
        self.inner
            .complete_send(op, Envelope::bare(value))
            .map_err(|env| SendError(env.value))
    }

    /// How many messages the carrier holds now.
    pub(crate) fn carrier_len(&self) -> usize {
        self.inner.len()
    }

    /// A sender rebuilt for re-executing an e-block: its sends are checked against the log.
    fn emulated(id: ObjectId) -> Sender<T> {
        let (inner, _) = carrier::enveloped();
        Sender {
            inner,
            meta: ChannelMeta::new(id),
        }
    }
}

/// A sender is logged as its channel's id (it can be an e-block argument).
impl<T> Serialize for Sender<T> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        super::handle::serialize(self.meta.id, ppd_formats::value::End::Sender, serializer)
    }
}

impl<'de, T> serde::Deserialize<'de> for Sender<T> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        super::handle::deserialize(deserializer, "channel sender").map(Sender::emulated)
    }
}

/// The receiving half of a channel, like `std::sync::mpsc::Receiver`.
///
/// ```
/// let (tx, rx) = ppd::sync::mpsc::channel();
/// ppd::thread::spawn(move || tx.send(String::from("ping")).unwrap());
/// assert_eq!(rx.recv().unwrap(), "ping");
/// ```
pub struct Receiver<T> {
    core: ReceiverCore<T>,
    /// std's receiver is not `Sync`: one receiving end, used by one thread at a time.
    _not_sync: PhantomData<Cell<()>>,
}

/// What a receiving end is, shared with the multi-consumer receivers of `crate::channel`
/// (clones of one core).
pub(crate) struct ReceiverCore<T> {
    inner: CarrierRx<T>,
    meta: Arc<ChannelMeta<T>>,
    stash: Arc<Stash<T>>,
    /// Declared after `inner`, so that it is dropped after the carrier's receiving end: the
    /// senders it wakes find the channel disconnected.
    _closer: Option<Closer>,
}

/// Replay: messages that arrived before their turn, shared by every receiver of the channel
/// (each receive of a multi-consumer channel is logged by the process that made it, and a
/// receiver may pull another's message off the carrier); with lanes, the messages the log
/// never receives, kept until the receiver goes.
struct Stash<T> {
    state: std::sync::Mutex<StashState<T>>,
    /// Signalled when a message is held back or a receiver stops pulling.
    changed: Condvar,
}

struct StashState<T> {
    /// By sender and sequence number. Only a channel with several receivers (or a sender
    /// outside ppd) replays through the stash, and there one sender's messages go to several
    /// receivers, each taking its own out of the middle of that sender's order: kept in a
    /// queue per sender and searched, a replayed pool of four workers spent 70% of its time
    /// in the search. Keyed with Fx, not SipHash: the default hasher took a tenth of the
    /// receiving process's time replaying a busy fan-in.
    held: FxHashMap<(ProcessId, u64), Envelope<T>>,
    /// A receiver is waiting on the carrier: the others wait for what it pulls off.
    pulling: bool,
    /// Receivers asleep on `changed`. Notifying a condition variable is a system call even
    /// when nobody waits, and a lone receiver pulls a held-back message for almost every
    /// receive of a busy fan-in: it notifies only when a clone waits.
    sleeping: u32,
}

impl<T> Stash<T> {
    fn new() -> Arc<Stash<T>> {
        Arc::new(Stash {
            state: std::sync::Mutex::new(StashState {
                held: FxHashMap::default(),
                pulling: false,
                sleeping: 0,
            }),
            changed: Condvar::new(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, StashState<T>> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Sleeps until another receiver changes the stash.
    fn wait<'a>(
        &'a self,
        mut state: MutexGuard<'a, StashState<T>>,
    ) -> MutexGuard<'a, StashState<T>> {
        state.sleeping += 1;
        state = self.changed.wait(state).unwrap_or_else(|p| p.into_inner());
        state.sleeping -= 1;
        state
    }

    /// Wakes the receivers asleep in [`Stash::wait`], if any.
    fn changed(&self, state: &StashState<T>) {
        if state.sleeping > 0 {
            self.changed.notify_all();
        }
    }
}

impl<T> StashState<T> {
    /// The held-back message `seq` of `sender`.
    fn take(&mut self, seq: u64, sender: ProcessId) -> Option<Envelope<T>> {
        self.held.remove(&(sender, seq))
    }

    /// Holds back `env` for the receive the log gives it to.
    fn hold(&mut self, env: Envelope<T>) {
        self.held.insert((env.sender, env.seq), env);
    }
}

/// Tells a bounded channel's room that a receiver has gone, when dropped.
#[derive(Debug)]
struct Closer(Arc<Bound>);

impl Drop for Closer {
    fn drop(&mut self) {
        self.0.receiver_dropped();
    }
}

impl<T> fmt::Debug for Receiver<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Receiver")
            .field("channel", &self.core.meta.id)
            .finish()
    }
}

impl<T> Receiver<T> {
    fn new(inner: CarrierRx<T>, meta: Arc<ChannelMeta<T>>) -> Receiver<T> {
        Receiver {
            core: ReceiverCore::new(inner, meta),
            _not_sync: PhantomData,
        }
    }

    /// The shared receiving end, for `crate::channel`'s multi-consumer receivers.
    pub(crate) fn into_core(self) -> ReceiverCore<T> {
        self.core
    }
}

impl<T> ReceiverCore<T> {
    fn new(inner: CarrierRx<T>, meta: Arc<ChannelMeta<T>>) -> ReceiverCore<T> {
        let closer = meta.bound.clone().map(Closer);
        ReceiverCore {
            inner,
            meta,
            stash: Stash::new(),
            _closer: closer,
        }
    }

    /// A receiver rebuilt for re-executing an e-block: it gets the logged payloads.
    pub(crate) fn emulated(id: ObjectId) -> ReceiverCore<T> {
        let (_, inner) = carrier::enveloped();
        ReceiverCore::new(inner, ChannelMeta::new(id))
    }

    /// A receiving end of no channel, which never receives (what a timer's receiver holds
    /// in place of one); it logs nothing.
    pub(crate) fn unconnected() -> ReceiverCore<T> {
        ReceiverCore::emulated(ObjectId(0))
    }

    /// The channel's id.
    pub(crate) fn id(&self) -> ObjectId {
        self.meta.id
    }

    /// Whether both ends are of one channel (handles rebuilt for a re-execution are by id).
    pub(crate) fn same_channel(&self, other: &ReceiverCore<T>) -> bool {
        self.meta.same(&other.meta)
    }

    /// How many messages the carrier holds now.
    pub(crate) fn carrier_len(&self) -> usize {
        self.inner.len()
    }

    /// Registers the channel's values as serde.
    pub(crate) fn register_serde(&self)
    where
        T: Serialize + DeserializeOwned,
    {
        self.meta.values.register_serde();
    }
}

/// The one receiver of a replayed channel with lanes is gone: their messages go with it, as a
/// carrier's go with its last receiver.
impl<T> Drop for ReceiverCore<T> {
    fn drop(&mut self) {
        if let Some(lanes) = &self.meta.lanes {
            lanes.close();
        }
    }
}

/// Another receiving end of the same channel (a multi-consumer receiver's clone).
impl<T> Clone for ReceiverCore<T> {
    fn clone(&self) -> Self {
        let closer = self.meta.bound.clone().map(|bound| {
            bound.receiver_added();
            Closer(bound)
        });
        ReceiverCore {
            inner: self.inner.clone(),
            meta: Arc::clone(&self.meta),
            stash: Arc::clone(&self.stash),
            _closer: closer,
        }
    }
}

/// A receiver is logged as its channel's id (it can be an e-block argument).
impl<T> Serialize for Receiver<T> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        super::handle::serialize(
            self.core.meta.id,
            ppd_formats::value::End::Receiver,
            serializer,
        )
    }
}

impl<'de, T> serde::Deserialize<'de> for Receiver<T> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        super::handle::deserialize(deserializer, "channel receiver").map(|id| Receiver {
            core: ReceiverCore::emulated(id),
            _not_sync: PhantomData,
        })
    }
}

/// A channel whose messages are serde logs them (through either end, for every clone of both).
impl<T: Serialize + DeserializeOwned> Carries for Sender<T> {
    fn register_serde(&self) {
        self.meta.values.register_serde();
    }
}

/// A channel whose messages are serde logs them (through either end, for every clone of both).
impl<T: Serialize + DeserializeOwned> Carries for Receiver<T> {
    fn register_serde(&self) {
        self.core.register_serde();
    }
}

/// How long a receive may wait.
#[derive(Clone, Copy)]
pub(crate) enum Wait {
    /// Until a message comes or every sender is gone.
    Block,
    /// Not at all.
    Try,
    /// At most this long.
    Timeout(Duration),
}

impl<T> Receiver<T> {
    /// Blocks until a message arrives; fails when every sender is gone and the channel is
    /// empty.
    ///
    /// ```
    /// let (tx, rx) = ppd::sync::mpsc::channel();
    /// tx.send(3).unwrap();
    /// drop(tx);
    /// assert_eq!(rx.recv(), Ok(3));
    /// assert!(rx.recv().is_err());
    /// ```
    #[inline]
    #[track_caller]
    pub fn recv(&self) -> Result<T, RecvError> {
        self.core
            .receive(Wait::Block, Location::caller())
            .map_err(|_| RecvError)
    }

    /// Returns a message if one is waiting, without blocking.
    ///
    /// ```
    /// use ppd::sync::mpsc::TryRecvError;
    /// let (tx, rx) = ppd::sync::mpsc::channel::<u8>();
    /// assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
    /// tx.send(1).unwrap();
    /// assert_eq!(rx.try_recv(), Ok(1));
    /// ```
    #[inline]
    #[track_caller]
    pub fn try_recv(&self) -> Result<T, TryRecvError> {
        self.core
            .receive(Wait::Try, Location::caller())
            .map_err(|outcome| match outcome {
                RecvOutcome::Disconnected => TryRecvError::Disconnected,
                _ => TryRecvError::Empty,
            })
    }

    /// Waits at most `timeout` for a message.
    ///
    /// ```
    /// use ppd::sync::mpsc::RecvTimeoutError;
    /// use std::time::{Duration, Instant};
    /// let (_tx, rx) = ppd::sync::mpsc::channel::<u8>();
    /// assert_eq!(rx.recv_timeout(Duration::from_millis(5)), Err(RecvTimeoutError::Timeout));
    /// ```
    #[inline]
    #[track_caller]
    pub fn recv_timeout(&self, timeout: Duration) -> Result<T, RecvTimeoutError> {
        self.core
            .receive(Wait::Timeout(timeout), Location::caller())
            .map_err(|outcome| match outcome {
                RecvOutcome::Disconnected => RecvTimeoutError::Disconnected,
                _ => RecvTimeoutError::Timeout,
            })
    }

    /// Iterates over messages until every sender is gone.
    ///
    /// ```
    /// let (tx, rx) = ppd::sync::mpsc::channel();
    /// for i in 0..3 { tx.send(i).unwrap(); }
    /// drop(tx);
    /// assert_eq!(rx.iter().sum::<i32>(), 3);
    /// ```
    pub fn iter(&self) -> Iter<'_, T> {
        Iter { receiver: self }
    }

    /// Iterates over the messages waiting now, without blocking. Each `try_recv` is logged:
    /// which messages were there is a choice of the run, and replay makes it again.
    ///
    /// ```
    /// let (tx, rx) = ppd::sync::mpsc::channel();
    /// tx.send(1).unwrap();
    /// tx.send(2).unwrap();
    /// assert_eq!(rx.try_iter().collect::<Vec<i32>>(), [1, 2]);
    /// assert_eq!(rx.try_iter().next(), None);
    /// ```
    pub fn try_iter(&self) -> TryIter<'_, T> {
        TryIter { receiver: self }
    }

    /// Waits for a message until `deadline`, like std's (unstable) `recv_deadline`. Whether
    /// the deadline passed first is logged like `recv_timeout`'s outcome.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use ppd::sync::mpsc::RecvTimeoutError;
    /// let (tx, rx) = ppd::sync::mpsc::channel::<u8>();
    /// let soon = Instant::now() + Duration::from_millis(5);
    /// assert_eq!(rx.recv_deadline(soon), Err(RecvTimeoutError::Timeout));
    /// tx.send(7).unwrap();
    /// assert_eq!(rx.recv_deadline(soon), Ok(7));
    /// ```
    #[track_caller]
    pub fn recv_deadline(&self, deadline: Instant) -> Result<T, RecvTimeoutError> {
        let left = deadline.saturating_duration_since(Instant::now());
        self.core
            .receive(Wait::Timeout(left), Location::caller())
            .map_err(|outcome| match outcome {
                RecvOutcome::Disconnected => RecvTimeoutError::Disconnected,
                _ => RecvTimeoutError::Timeout,
            })
    }
}

impl<T> ReceiverCore<T> {
    /// Receives a message, waiting as `wait` says; the outcome when there is none.
    #[inline]
    pub(crate) fn receive(
        &self,
        wait: Wait,
        site: &'static Location<'static>,
    ) -> Result<T, RecvOutcome> {
        if !runtime::active() {
            return match wait {
                Wait::Block => self.inner.recv().map_err(|_| RecvOutcome::Disconnected),
                Wait::Try => self.inner.try_recv().map_err(|e| match e {
                    cc::TryRecvError::Empty => RecvOutcome::Empty,
                    cc::TryRecvError::Disconnected => RecvOutcome::Disconnected,
                }),
                Wait::Timeout(d) => self.inner.recv_timeout(d).map_err(|e| match e {
                    cc::RecvTimeoutError::Timeout => RecvOutcome::Timeout,
                    cc::RecvTimeoutError::Disconnected => RecvOutcome::Disconnected,
                }),
            }
            .map(|env| env.value);
        }
        self.receive_logged(wait, site)
    }

    /// `receive` under a backend, out of line so that pass-through inlines to the plain receive.
    #[inline(never)]
    fn receive_logged(
        &self,
        wait: Wait,
        site: &'static Location<'static>,
    ) -> Result<T, RecvOutcome> {
        let channel = self.meta.id;
        match runtime::expect(Op::on(EventKind::Recv, channel, Some(site))) {
            // Re-executing an e-block: the message is the payload its receive logged.
            Some(Event::Recv {
                seq,
                sender,
                payload,
                ..
            }) if runtime::mode() == Mode::Emulate => {
                let value = self.rebuild(seq, sender, payload.as_deref(), site);
                Ok(self.log_recv(Envelope { sender, seq, value }, site))
            }
            Some(Event::Recv { seq, sender, .. }) => {
                let env = self.take_exact(seq, sender);
                Ok(self.log_recv(env, site))
            }
            Some(Event::RecvNone { outcome, .. }) => {
                self.log_none(outcome, site);
                Err(outcome)
            }
            _ => self.receive_live(wait, site),
        }
    }

    /// Record: takes whatever the channel delivers and logs it.
    fn receive_live(&self, wait: Wait, site: &'static Location<'static>) -> Result<T, RecvOutcome> {
        // A rendezvous carrier pairs a receive with a send only once the receive waits on it,
        // so a receive there does not spin first: a `try_send` meanwhile would find nobody.
        let rendezvous = self.meta.bound.as_ref().is_some_and(|b| b.is_rendezvous());
        let first = match wait {
            // A timed wait is not lengthened by the back-off.
            Wait::Try | Wait::Timeout(_) => self.inner.try_recv(),
            Wait::Block if rendezvous => self.inner.try_recv(),
            Wait::Block => self.try_recv_after_backoff(),
        };
        let got = match first {
            Ok(env) => Ok(env),
            Err(cc::TryRecvError::Disconnected) => Err(RecvOutcome::Disconnected),
            Err(cc::TryRecvError::Empty) => match wait {
                Wait::Try => Err(RecvOutcome::Empty),
                Wait::Block => {
                    self.log_blocked(site);
                    self.inner.recv().map_err(|_| RecvOutcome::Disconnected)
                }
                Wait::Timeout(d) => {
                    self.log_blocked(site);
                    self.inner.recv_timeout(d).map_err(|e| match e {
                        cc::RecvTimeoutError::Timeout => RecvOutcome::Timeout,
                        cc::RecvTimeoutError::Disconnected => RecvOutcome::Disconnected,
                    })
                }
            },
        };
        match got {
            Ok(env) => Ok(self.log_recv(env, site)),
            Err(outcome) => {
                self.log_none(outcome, site);
                Err(outcome)
            }
        }
    }

    /// A message once one is there or a short back-off has passed without one. A receive that
    /// waits logs a `Blocked` marker, sleeps and is woken; most waits in a busy exchange end
    /// sooner than that takes, and then log nothing but the receive.
    fn try_recv_after_backoff(&self) -> Result<Envelope<T>, cc::TryRecvError> {
        let backoff = Backoff::new();
        loop {
            match self.inner.try_recv() {
                Err(cc::TryRecvError::Empty) if !backoff.is_completed() => backoff.snooze(),
                got => return got,
            }
        }
    }

    /// Replay: the message with sequence number `seq`, holding back others that come first.
    /// One receiver at a time waits on the carrier; the others wait for what it pulls off.
    fn take_exact(&self, seq: u64, sender: ProcessId) -> Envelope<T> {
        if let Some(lanes) = &self.meta.lanes
            && sender != UNMANAGED_SENDER
        {
            return self.take_from_lane(lanes.lane(sender), seq, sender);
        }
        let mut asked = false;
        let mut state = self.stash.lock();
        loop {
            if let Some(env) = state.take(seq, sender) {
                return env;
            }
            let pulled = if state.pulling {
                None
            } else {
                match self.inner.try_recv() {
                    Ok(env) => Some(Ok(env)),
                    Err(cc::TryRecvError::Empty) => None,
                    Err(cc::TryRecvError::Disconnected) => Some(Err(())),
                }
            };
            let pulled = match pulled {
                Some(pulled) => pulled,
                // About to wait: tell the runtime first (only now, as telling costs its
                // controller's lock), then look again, as the stash may have changed.
                None if !asked => {
                    drop(state);
                    runtime::waiting_for(Dependency::Message {
                        channel: self.meta.id,
                        seq,
                        sender,
                    });
                    asked = true;
                    state = self.stash.lock();
                    continue;
                }
                None if state.pulling => {
                    state = self.stash.wait(state);
                    continue;
                }
                None => {
                    state.pulling = true;
                    drop(state);
                    let pulled = self.inner.recv();
                    state = self.stash.lock();
                    state.pulling = false;
                    self.stash.changed(&state);
                    pulled.map_err(|_| ())
                }
            };
            let Ok(env) = pulled else {
                drop(state);
                self.lost(seq, sender)
            };
            if env.seq == seq {
                return env;
            }
            state.hold(env);
            self.stash.changed(&state);
        }
    }

    /// Replay through lanes: message `seq` of `sender`, the front of its sender's lane. A
    /// message before it there was never received in the recorded run (the one receiver takes
    /// each sender's messages in order): it is held back, to be dropped with the receiver.
    fn take_from_lane(&self, lane: &Lane<T>, seq: u64, sender: ProcessId) -> Envelope<T> {
        let mut asked = false;
        loop {
            let env = match lane.try_take() {
                Some(env) => env,
                // About to wait: tell the runtime first, then look again.
                None if !asked => {
                    runtime::waiting_for(Dependency::Message {
                        channel: self.meta.id,
                        seq,
                        sender,
                    });
                    asked = true;
                    continue;
                }
                None => match lane.take_within(SENDERS_GONE_CHECK) {
                    Some(env) => env,
                    // Only this receiver holds the channel: no sender is left to send it.
                    None if Arc::strong_count(&self.meta) == 1 => match lane.try_take() {
                        Some(env) => env,
                        None => self.lost(seq, sender),
                    },
                    None => continue,
                },
            };
            match env.seq.cmp(&seq) {
                std::cmp::Ordering::Equal => return env,
                std::cmp::Ordering::Less => {
                    let mut state = self.stash.lock();
                    state.hold(env);
                }
                std::cmp::Ordering::Greater => diverged(&format!(
                    "the log says message {seq} from {sender} on channel {} is received here, \
                     but the next message {sender} sent is message {}",
                    self.meta.id, env.seq
                )),
            }
        }
    }

    /// Re-executing an e-block: the received message, rebuilt from its logged payload, or a
    /// stop that names the message, the receive and why it cannot be rebuilt.
    fn rebuild(
        &self,
        seq: u64,
        sender: ProcessId,
        payload: Option<&[u8]>,
        site: &'static Location<'static>,
    ) -> T {
        let rebuilt = match payload {
            Some(bytes) => self.meta.values.decode(bytes).map_err(|e| e.to_string()),
            None if !self.meta.values.known() => Err(format!(
                "it is opaque: {}",
                Opaque::NotSerde(std::any::type_name::<T>())
            )),
            None => Err(
                "no payload was logged for it (its channel was registered only \
                         after the receive)"
                    .to_owned(),
            ),
        };
        match rebuilt {
            Ok(value) => value,
            Err(why) => diverged(&format!(
                "it needs message {seq} from {sender} on channel {}, received at {}:{}, and {why}",
                self.meta.id,
                site.file(),
                site.line()
            )),
        }
    }

    fn lost(&self, seq: u64, sender: ProcessId) -> ! {
        diverged(&format!(
            "every sender of channel {} is gone, but the log says message {seq} from {sender} \
             is received",
            self.meta.id
        ))
    }

    fn log_recv(&self, env: Envelope<T>, site: &'static Location<'static>) -> T {
        let payload = self.meta.payload(&env.value);
        runtime::done(&Event::Recv {
            channel: self.meta.id,
            sender: env.sender,
            seq: env.seq,
            site: Some(site),
            payload: payload.as_deref(),
        });
        match &self.meta.bound {
            Some(bound) => bound.taken(site),
            None => {
                serve_emulated_room(self.meta.id, site);
            }
        }
        env.value
    }

    fn log_none(&self, outcome: RecvOutcome, site: &'static Location<'static>) {
        runtime::done(&Event::RecvNone {
            channel: self.meta.id,
            outcome,
            site: Some(site),
        });
    }

    fn log_blocked(&self, site: &'static Location<'static>) {
        runtime::done(&Event::Blocked {
            object: self.meta.id,
            site: Some(site),
        });
    }
}

crate::sync::receiver_iterators::receiver_iterators! {
    /// Iterator over received messages; see [`Receiver::iter`].
    ///
    /// ```
    /// let (tx, rx) = ppd::sync::mpsc::channel::<u8>();
    /// tx.send(1).unwrap();
    /// drop(tx);
    /// let mut messages: ppd::sync::mpsc::Iter<'_, u8> = rx.iter();
    /// assert_eq!(messages.next(), Some(1));
    /// assert_eq!(messages.next(), None);
    /// ```
    iter;
    /// Iterator over the messages waiting now; see [`Receiver::try_iter`].
    ///
    /// ```
    /// let (tx, rx) = ppd::sync::mpsc::channel::<u8>();
    /// tx.send(3).unwrap();
    /// let mut waiting: ppd::sync::mpsc::TryIter<'_, u8> = rx.try_iter();
    /// assert_eq!(waiting.next(), Some(3));
    /// assert_eq!(waiting.next(), None);
    /// ```
    try_iter;
    /// Owning iterator over received messages: `for message in rx`.
    ///
    /// ```
    /// let (tx, rx) = ppd::sync::mpsc::channel();
    /// tx.send('a').unwrap();
    /// drop(tx);
    /// let messages: ppd::sync::mpsc::IntoIter<char> = rx.into_iter();
    /// assert_eq!(messages.collect::<String>(), "a");
    /// ```
    into_iter;
}
