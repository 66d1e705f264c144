//! [`Select`]: waiting on several channel operations at once, the choice logged.
//!
//! Receives are judged ready by the carriers themselves. A send is too without a backend (the
//! carrier of a bounded channel is bounded then), and recording a rendezvous channel (its
//! carrier is crossbeam's rendezvous channel, which pairs the chosen send with the receive it
//! reserved); otherwise, under a backend, carriers are unbounded and a bounded channel's room is
//! a hidden semaphore (`super::super::bound`), so the selection asks the room whether the send
//! could proceed, and waits for it through a watcher the room pings. (A selection that has
//! such a send waits on its receives without reserving them, so a rendezvous receive among
//! them pairs only with a send already waiting.)
//! Whatever was chosen is logged as the operation's index (`Select`), or that none was ready
//! in time (`RecvNone` on the first channel); replay takes the logged choice without looking
//! at the channels, and the operation that completes it is logged on its own.

use std::fmt;
use std::panic::Location;
use std::time::{Duration, Instant};

use crossbeam_channel as cc;
use ppd_formats::event::RecvOutcome;
use ppd_formats::{Event, EventKind, ObjectId};
use smallvec::SmallVec;

use super::{Receiver, ReceiverCore, RecvError, SendError, Sender, Wait};
use crate::runtime;
use crate::runtime::backend::{Mode, Op};
use crate::sync::bound::Bound;

/// Waits on several receivers at once and receives from the one that is ready.
///
/// Mirrors `crossbeam_channel::Select`: add receivers with [`recv`](Select::recv), call
/// [`select`](Select::select), then complete the chosen operation. The choice is logged, and
/// replay makes the same choice.
///
/// ```
/// use ppd::sync::mpsc::{channel, Select};
/// let (tx1, rx1) = channel::<u8>();
/// let (_tx2, rx2) = channel::<u8>();
/// tx1.send(9).unwrap();
/// let mut sel = Select::new();
/// let a = sel.recv(&rx1);
/// let _b = sel.recv(&rx2);
/// let op = sel.select();
/// assert_eq!(op.index(), a);
/// assert_eq!(op.recv(&rx1).unwrap(), 9);
/// ```
#[derive(Clone)]
pub struct Select<'a> {
    /// Every operation, under the index it was added with: the carriers' selection.
    inner: cc::Select<'a>,
    /// Whether the first operation that can proceed is chosen (`new_biased`).
    biased: bool,
    /// Each operation, in the order added (inline: a selection is made per choice, and most
    /// have a few operations).
    ops: SmallVec<[SelectOp<'a>; 4]>,
}

/// An operation of a [`Select`].
#[derive(Clone, Copy)]
enum SelectOp<'a> {
    /// A receive from `channel`.
    Recv { channel: ObjectId },
    /// A send on `channel`. Under a backend, `bound` is its room (none: unbounded, always
    /// ready), which judges it unless it is on its carrier ([`SelectOp::on_carrier`]).
    Send {
        channel: ObjectId,
        bound: Option<&'a Bound>,
    },
    /// An operation taken out of the selection ([`Select::remove`]); its index stays used.
    Removed,
}

impl SelectOp<'_> {
    /// The operation's channel; none once removed.
    fn channel(&self) -> Option<ObjectId> {
        match *self {
            SelectOp::Recv { channel } | SelectOp::Send { channel, .. } => Some(channel),
            SelectOp::Removed => None,
        }
    }

    /// Whether the carriers judge the operation: a receive, and recording, a send on a
    /// rendezvous channel, whose carrier pairs it with a receive.
    fn on_carrier(&self) -> bool {
        match *self {
            SelectOp::Recv { .. } => true,
            SelectOp::Send { bound, .. } => {
                bound.is_some_and(Bound::is_rendezvous) && runtime::mode() == Mode::Record
            }
            SelectOp::Removed => false,
        }
    }

    /// Whether the operation is a send its room judges.
    fn judged_by_room(&self) -> bool {
        matches!(self, SelectOp::Send { .. }) && !self.on_carrier()
    }
}

impl fmt::Debug for Select<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let channels: Vec<ObjectId> = self.ops.iter().filter_map(SelectOp::channel).collect();
        f.debug_struct("Select")
            .field("channels", &channels)
            .finish()
    }
}

impl Default for Select<'_> {
    fn default() -> Self {
        Select::new()
    }
}

/// `select_timeout` ran out of time.
///
/// ```
/// use std::time::{Duration, Instant};
/// let (_tx, rx) = ppd::sync::mpsc::channel::<u8>();
/// let mut select = ppd::sync::mpsc::Select::new();
/// select.recv(&rx);
/// assert!(select.select_timeout(Duration::from_millis(1)).is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SelectTimeoutError;

impl fmt::Display for SelectTimeoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("timed out waiting on select")
    }
}

impl std::error::Error for SelectTimeoutError {}

impl<'a> Select<'a> {
    /// An empty selection.
    ///
    /// ```
    /// let _sel = ppd::sync::mpsc::Select::new();
    /// ```
    pub fn new() -> Select<'a> {
        Select {
            inner: cc::Select::new(),
            biased: false,
            ops: SmallVec::new(),
        }
    }

    /// An empty selection that, when several operations can proceed, chooses the first
    /// added, like `crossbeam_channel::Select::new_biased`.
    ///
    /// ```
    /// let (tx1, rx1) = ppd::sync::mpsc::channel::<u8>();
    /// let (tx2, rx2) = ppd::sync::mpsc::channel::<u8>();
    /// tx1.send(1).unwrap();
    /// tx2.send(2).unwrap();
    /// let mut sel = ppd::sync::mpsc::Select::new_biased();
    /// let first = sel.recv(&rx1);
    /// sel.recv(&rx2);
    /// let op = sel.select();
    /// assert_eq!(op.index(), first);
    /// assert_eq!(op.recv(&rx1), Ok(1));
    /// ```
    pub fn new_biased() -> Select<'a> {
        Select {
            inner: cc::Select::new_biased(),
            biased: true,
            ops: SmallVec::new(),
        }
    }

    /// Adds a receive from `receiver`; returns the operation's index.
    ///
    /// ```
    /// let (_tx, rx) = ppd::sync::mpsc::channel::<u8>();
    /// let mut sel = ppd::sync::mpsc::Select::new();
    /// assert_eq!(sel.recv(&rx), 0);
    /// ```
    pub fn recv<T>(&mut self, receiver: &'a Receiver<T>) -> usize {
        self.recv_core(&receiver.core)
    }

    /// Adds a receive from any receiving end.
    pub(crate) fn recv_core<T>(&mut self, receiver: &'a ReceiverCore<T>) -> usize {
        self.ops.push(SelectOp::Recv {
            channel: receiver.meta.id,
        });
        receiver.inner.select_recv(&mut self.inner)
    }

    /// Adds a send on any sending end.
    pub(crate) fn send_core<T>(&mut self, sender: &'a Sender<T>) -> usize {
        self.ops.push(SelectOp::Send {
            channel: sender.meta.id,
            bound: sender.meta.bound.as_deref(),
        });
        sender.inner.select_send(&mut self.inner)
    }

    /// Takes the operation with index `index` out of the selection, like
    /// `crossbeam_channel::Select::remove`; the other operations keep their indexes.
    ///
    /// ```
    /// let (tx1, rx1) = ppd::sync::mpsc::channel::<u8>();
    /// let (tx2, rx2) = ppd::sync::mpsc::channel::<u8>();
    /// let mut sel = ppd::sync::mpsc::Select::new();
    /// let first = sel.recv(&rx1);
    /// let second = sel.recv(&rx2);
    /// sel.remove(first);
    /// tx1.send(1).unwrap();
    /// tx2.send(2).unwrap();
    /// let op = sel.select();
    /// assert_eq!(op.index(), second);
    /// assert_eq!(op.recv(&rx2), Ok(2));
    /// ```
    ///
    /// # Panics
    ///
    /// When no operation has index `index` (never added, or removed already), as crossbeam's.
    pub fn remove(&mut self, index: usize) {
        let op = self.ops.get_mut(index);
        let Some(op) = op.filter(|op| !matches!(op, SelectOp::Removed)) else {
            panic!("no operation with this index");
        };
        *op = SelectOp::Removed;
        self.inner.remove(index);
    }

    /// Blocks until one of the receives can proceed and chooses it.
    ///
    /// ```
    /// let (tx, rx) = ppd::sync::mpsc::channel();
    /// tx.send(1u8).unwrap();
    /// let mut sel = ppd::sync::mpsc::Select::new();
    /// sel.recv(&rx);
    /// assert_eq!(sel.select().recv(&rx).unwrap(), 1);
    /// ```
    #[track_caller]
    #[inline]
    pub fn select(&mut self) -> SelectedOperation<'a> {
        let site = Location::caller();
        if !runtime::active() {
            // Outside a recording: crossbeam's choice, with nothing to log.
            return SelectedOperation::live(self.inner.select(), site);
        }
        match self.choose(Wait::Block, site) {
            Ok(op) => op,
            Err(SelectTimeoutError) => unreachable!("select without a timeout cannot time out"),
        }
    }

    /// Like [`select`](Select::select), giving up after `timeout`.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// let (_tx, rx) = ppd::sync::mpsc::channel::<u8>();
    /// let mut sel = ppd::sync::mpsc::Select::new();
    /// sel.recv(&rx);
    /// assert!(sel.select_timeout(Duration::from_millis(5)).is_err());
    /// ```
    #[track_caller]
    pub fn select_timeout(
        &mut self,
        timeout: Duration,
    ) -> Result<SelectedOperation<'a>, SelectTimeoutError> {
        self.choose(Wait::Timeout(timeout), Location::caller())
    }

    /// Pass-through only: the carriers' own choice, waiting until one can proceed.
    #[inline]
    pub(crate) fn carriers_select(&mut self) -> CarrierChoice<'a> {
        CarrierChoice(self.inner.select())
    }

    /// Pass-through only: the carriers' own choice, waiting as `wait` says, with nothing
    /// around it to log or check. The crossbeam selection's index is the operation's.
    #[inline]
    pub(crate) fn carriers_choose(
        &mut self,
        wait: Wait,
    ) -> Result<CarrierChoice<'a>, SelectTimeoutError> {
        carriers_choice(&mut self.inner, wait).map(CarrierChoice)
    }

    /// Chooses an operation that can proceed, waiting as `wait` says; for `Wait::Try` and
    /// `Wait::Timeout`, an error when none could. The choice is logged (`Select`, or
    /// `RecvNone` on the first channel when there was none) and replay makes it again.
    #[inline]
    pub(crate) fn choose(
        &mut self,
        wait: Wait,
        site: &'static Location<'static>,
    ) -> Result<SelectedOperation<'a>, SelectTimeoutError> {
        self.decide(
            wait,
            site,
            |sel, wait| carriers_choice(sel, wait).map(|op| SelectedOperation::live(op, site)),
            |op| op.index,
            |index| SelectedOperation {
                index,
                live: None,
                site,
                op: None,
            },
        )
        .map(|mut chosen| {
            chosen.op = self.ops.get(chosen.index).copied();
            chosen
        })
    }

    /// Like [`choose`](Select::choose), but only says which operation can proceed, as
    /// crossbeam's `ready` does: the caller then performs it (and that is logged on its own).
    pub(crate) fn ready_in(
        &mut self,
        wait: Wait,
        site: &'static Location<'static>,
    ) -> Result<usize, SelectTimeoutError> {
        self.decide(
            wait,
            site,
            |sel, wait| match wait {
                Wait::Block => Ok(sel.ready()),
                Wait::Try => sel.try_ready().map_err(|_| SelectTimeoutError),
                Wait::Timeout(t) => sel.ready_timeout(t).map_err(|_| SelectTimeoutError),
            },
            |&index| index,
            |index| index,
        )
    }

    /// The logged choice among the operations: `live` waits on the carriers as told, `index`
    /// says which operation a live choice is, `replayed` makes a choice from a logged index
    /// (or from a send the rooms judged ready).
    #[inline]
    fn decide<R>(
        &mut self,
        wait: Wait,
        site: &'static Location<'static>,
        mut live: impl FnMut(&mut cc::Select<'a>, Wait) -> Result<R, SelectTimeoutError>,
        index: impl Fn(&R) -> usize,
        replayed: impl FnOnce(usize) -> R,
    ) -> Result<R, SelectTimeoutError> {
        if !runtime::active() {
            return live(&mut self.inner, wait);
        }
        let first = self
            .ops
            .iter()
            .find_map(SelectOp::channel)
            .unwrap_or(ObjectId(0));
        match runtime::expect(Op::plain(EventKind::Select, Some(site))) {
            Some(Event::Select { index, .. }) => {
                runtime::done(&Event::Select {
                    index,
                    site: Some(site),
                });
                return Ok(replayed(index as usize));
            }
            Some(Event::RecvNone { outcome, .. }) => {
                log_none(first, outcome, site);
                return Err(SelectTimeoutError);
            }
            _ => {}
        }
        let chosen = if self.ops.iter().any(SelectOp::judged_by_room) {
            match self.choose_with_sends(wait, first, site, &mut live) {
                Ok(Chosen::Live(r)) => Ok(r),
                Ok(Chosen::Send(i)) => {
                    log_choice(i, site);
                    return Ok(replayed(i));
                }
                Err(e) => Err(e),
            }
        } else {
            // A `try_select` of the program's own is crossbeam's, spurious wake-ups and all; a
            // look before a wait is a probe, which leaves other threads' `ready` alone.
            let now = match wait {
                Wait::Try => live(&mut self.inner, Wait::Try),
                Wait::Block | Wait::Timeout(_) => live_if_ready(&mut self.inner, &mut live),
            };
            match now {
                Ok(op) => Ok(op),
                Err(e) if matches!(wait, Wait::Try) => Err(e),
                Err(_) => {
                    log_blocked(first, site);
                    live(&mut self.inner, wait)
                }
            }
        };
        match chosen {
            Ok(op) => {
                log_choice(index(&op), site);
                Ok(op)
            }
            Err(e) => {
                let outcome = match wait {
                    Wait::Try => RecvOutcome::Empty,
                    Wait::Block | Wait::Timeout(_) => RecvOutcome::Timeout,
                };
                log_none(first, outcome, site);
                Err(e)
            }
        }
    }

    /// Record, with sends its rooms judge among the operations: the first such send whose room
    /// has space, or an operation the carriers have ready, waiting as `wait` says for either (on the carriers,
    /// and on a watcher every room pings when a send may have become possible). Logs
    /// `Blocked` before it waits; the caller logs the choice.
    fn choose_with_sends<R>(
        &mut self,
        wait: Wait,
        first: ObjectId,
        site: &'static Location<'static>,
        live: &mut impl FnMut(&mut cc::Select<'a>, Wait) -> Result<R, SelectTimeoutError>,
    ) -> Result<Chosen<R>, SelectTimeoutError> {
        let deadline = match wait {
            Wait::Timeout(t) => Instant::now().checked_add(t),
            Wait::Block | Wait::Try => None,
        };
        // The carriers' operations alone: the carrier of a send its room judges is unbounded
        // here and always looks ready.
        let mut receives = self.inner.clone();
        for (i, op) in self.ops.iter().enumerate() {
            if op.judged_by_room() {
                receives.remove(i);
            }
        }
        // Watching before looking: a room that frees after the look still wakes the wait.
        let (ping, pinged) = cc::bounded(1);
        let _watches: Vec<_> = self
            .ops
            .iter()
            .filter_map(|op| match op {
                SelectOp::Send {
                    bound: Some(bound), ..
                } => Some(bound.watch(ping.clone())),
                _ => None,
            })
            .collect();
        // Crossbeam chooses at random among ready operations; this takes turns instead, so
        // that a loop over one selection neither starves a send nor the receives (a biased
        // selection chooses the first).
        let turn = TURN.with(|t| {
            let turn = t.get();
            t.set(turn.wrapping_add(1));
            turn
        });
        let n = self.ops.len();
        let mut blocked = false;
        let ops = &self.ops;
        let send_ready = |i: usize| match ops[i] {
            SelectOp::Send { bound, .. } if ops[i].judged_by_room() => {
                bound.is_none_or(Bound::could_send)
            }
            _ => false,
        };
        loop {
            if self.biased {
                // The first operation that can proceed: the first ready send, unless a receive
                // added before it is ready (the carriers' biased choice among those).
                let ready_send = (0..n).find(|&i| send_ready(i));
                let mut earlier;
                let looked = match ready_send {
                    Some(i) => {
                        earlier = receives.clone();
                        for j in i + 1..n {
                            if self.ops[j].on_carrier() {
                                earlier.remove(j);
                            }
                        }
                        &mut earlier
                    }
                    None => &mut receives,
                };
                if let Ok(r) = live_if_ready(looked, live) {
                    return Ok(Chosen::Live(r));
                }
                if let Some(i) = ready_send {
                    return Ok(Chosen::Send(i));
                }
            } else {
                let ready_send = (0..n).map(|k| (turn + k) % n).find(|&i| send_ready(i));
                let receives_first = turn.is_multiple_of(2);
                if receives_first && let Ok(r) = live_if_ready(&mut receives, live) {
                    return Ok(Chosen::Live(r));
                }
                if let Some(i) = ready_send {
                    return Ok(Chosen::Send(i));
                }
                if !receives_first && let Ok(r) = live_if_ready(&mut receives, live) {
                    return Ok(Chosen::Live(r));
                }
            }
            if matches!(wait, Wait::Try) || deadline.is_some_and(|d| Instant::now() >= d) {
                return Err(SelectTimeoutError);
            }
            if !blocked {
                log_blocked(first, site);
                blocked = true;
            }
            let mut woken_by = receives.clone();
            let woken = woken_by.recv(&pinged);
            let ready = match deadline {
                Some(deadline) => woken_by.ready_deadline(deadline).ok(),
                None => Some(woken_by.ready()),
            };
            if ready == Some(woken) {
                let _ = pinged.try_recv();
            }
        }
    }
}

/// `live`'s choice among `sel`'s operations if one can proceed now, asked first with a probe
/// that registers nothing (`try_ready`). A failing crossbeam `try_select` registers every
/// operation for a moment, and a rendezvous carrier tells the other end's watchers of each
/// registration, so a thread in `ready` on that end would wake to an operation already gone
/// (crossbeam allows that of `ready`, but its own blocking operations never cause it, and
/// programs count on that).
fn live_if_ready<'a, R>(
    sel: &mut cc::Select<'a>,
    live: &mut impl FnMut(&mut cc::Select<'a>, Wait) -> Result<R, SelectTimeoutError>,
) -> Result<R, SelectTimeoutError> {
    sel.try_ready().map_err(|_| SelectTimeoutError)?;
    live(sel, Wait::Try)
}

/// The operation the carriers choose among `sel`'s if one can proceed now, looked for without
/// registering anything first ([`live_if_ready`]).
pub(super) fn carriers_choice_if_ready<'a>(
    sel: &mut cc::Select<'a>,
) -> Option<cc::SelectedOperation<'a>> {
    live_if_ready(sel, &mut carriers_choice).ok()
}

/// The carriers' own choice among `sel`'s operations, waiting as `wait` says.
#[inline]
fn carriers_choice<'a>(
    sel: &mut cc::Select<'a>,
    wait: Wait,
) -> Result<cc::SelectedOperation<'a>, SelectTimeoutError> {
    match wait {
        Wait::Block => Ok(sel.select()),
        Wait::Try => sel.try_select().map_err(|_| SelectTimeoutError),
        Wait::Timeout(t) => sel.select_timeout(t).map_err(|_| SelectTimeoutError),
    }
}

thread_local! {
    /// Which operation a selection with sends looks at first, advanced by every selection.
    static TURN: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// What [`Select::choose_with_sends`] found.
enum Chosen<R> {
    /// An operation the carriers chose (or only judged ready).
    Live(R),
    /// The send with this index, judged ready by its room.
    Send(usize),
}

fn log_choice(index: usize, site: &'static Location<'static>) {
    runtime::done(&Event::Select {
        index: index as u32,
        site: Some(site),
    });
}

fn log_none(channel: ObjectId, outcome: RecvOutcome, site: &'static Location<'static>) {
    runtime::done(&Event::RecvNone {
        channel,
        outcome,
        site: Some(site),
    });
}

fn log_blocked(object: ObjectId, site: &'static Location<'static>) {
    runtime::done(&Event::Blocked {
        object,
        site: Some(site),
    });
}

/// Pass-through: an operation the carriers chose ([`Select::carriers_choose`]), completed on
/// the carrier with nothing logged. It is kept apart from [`SelectedOperation`] so that a
/// selection outside a recording moves no more than crossbeam's own choice.
pub(crate) struct CarrierChoice<'a>(cc::SelectedOperation<'a>);

impl CarrierChoice<'_> {
    /// The index of the operation chosen.
    #[inline]
    pub(crate) fn index(&self) -> usize {
        self.0.index()
    }

    /// Completes the chosen receive on `receiver`'s carrier.
    ///
    /// # Panics
    ///
    /// When `receiver` is not the one chosen (crossbeam's check).
    #[inline]
    pub(crate) fn recv<T>(self, receiver: &ReceiverCore<T>) -> Result<T, RecvError> {
        receiver
            .inner
            .complete(self.0)
            .map(|env| env.value)
            .map_err(|_| RecvError)
    }

    /// Completes the chosen send on `sender`'s carrier.
    ///
    /// # Panics
    ///
    /// When `sender` is not the one chosen (crossbeam's check).
    #[inline]
    pub(crate) fn send<T>(self, sender: &Sender<T>, msg: T) -> Result<(), SendError<T>> {
        sender.complete_send(self.0, msg)
    }
}

impl fmt::Debug for CarrierChoice<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CarrierChoice")
            .field("index", &self.index())
            .finish()
    }
}

/// The operation a [`Select`] chose; complete it with [`recv`](SelectedOperation::recv).
///
/// ```
/// let (tx, rx) = ppd::sync::mpsc::channel::<u8>();
/// tx.send(5).unwrap();
/// let mut select = ppd::sync::mpsc::Select::new();
/// select.recv(&rx);
/// let chosen: ppd::sync::mpsc::SelectedOperation<'_> = select.select();
/// assert_eq!(chosen.index(), 0);
/// assert_eq!(chosen.recv(&rx), Ok(5));
/// ```
pub struct SelectedOperation<'a> {
    index: usize,
    live: Option<cc::SelectedOperation<'a>>,
    site: &'static Location<'static>,
    /// The operation chosen (filled in once chosen; without a backend crossbeam checks the
    /// end passed to complete it).
    op: Option<SelectOp<'a>>,
}

impl fmt::Debug for SelectedOperation<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SelectedOperation")
            .field("index", &self.index)
            .finish()
    }
}

impl<'a> SelectedOperation<'a> {
    /// The carriers' choice `op`, made at `site`: completed on its carrier.
    #[inline]
    fn live(op: cc::SelectedOperation<'a>, site: &'static Location<'static>) -> Self {
        SelectedOperation {
            index: op.index(),
            live: Some(op),
            site,
            op: None,
        }
    }
}

impl SelectedOperation<'_> {
    /// The index [`Select::recv`] returned for the chosen receive.
    ///
    /// ```
    /// let (tx, rx) = ppd::sync::mpsc::channel();
    /// tx.send(0u8).unwrap();
    /// let mut sel = ppd::sync::mpsc::Select::new();
    /// let i = sel.recv(&rx);
    /// let op = sel.select();
    /// assert_eq!(op.index(), i);
    /// op.recv(&rx).unwrap();
    /// ```
    pub fn index(&self) -> usize {
        self.index
    }

    /// Completes the chosen receive; `receiver` must be the one added at this index.
    ///
    /// ```
    /// let (tx, rx) = ppd::sync::mpsc::channel();
    /// tx.send(4u8).unwrap();
    /// let mut sel = ppd::sync::mpsc::Select::new();
    /// sel.recv(&rx);
    /// assert_eq!(sel.select().recv(&rx), Ok(4));
    /// ```
    #[inline]
    pub fn recv<T>(self, receiver: &Receiver<T>) -> Result<T, RecvError> {
        self.recv_core(&receiver.core)
    }

    /// Completes the chosen receive on any receiving end.
    ///
    /// # Panics
    ///
    /// When the chosen operation is not a receive from `receiver`'s channel, as crossbeam's.
    #[inline]
    pub(crate) fn recv_core<T>(self, receiver: &ReceiverCore<T>) -> Result<T, RecvError> {
        if runtime::active()
            && !matches!(self.op, Some(SelectOp::Recv { channel, .. }) if channel == receiver.meta.id)
        {
            panic!("passed a receiver that wasn't selected");
        }
        let site = self.site;
        match self.live {
            Some(op) if !runtime::active() => receiver
                .inner
                .complete(op)
                .map(|env| env.value)
                .map_err(|_| RecvError),
            Some(op) => match receiver.inner.complete(op) {
                Ok(env) => Ok(receiver.log_recv(env, site)),
                Err(_) => {
                    receiver.log_none(RecvOutcome::Disconnected, site);
                    Err(RecvError)
                }
            },
            None => receiver.receive(Wait::Block, site).map_err(|_| RecvError),
        }
    }

    /// Completes the chosen send on any sending end. Without a backend, the carrier's; under
    /// one, a rendezvous send the carrier paired is logged and handed over
    /// ([`Sender::complete_paired`]), any other is the channel's send as `send` makes it (its
    /// room's P, which the room said it could take at once, then the logged send).
    ///
    /// # Panics
    ///
    /// When the chosen operation is not a send on `sender`'s channel, as crossbeam's.
    pub(crate) fn send_core<T>(self, sender: &Sender<T>, msg: T) -> Result<(), SendError<T>> {
        if runtime::active()
            && !matches!(self.op, Some(SelectOp::Send { channel, .. }) if channel == sender.meta.id)
        {
            panic!("passed a sender that wasn't selected");
        }
        match self.live {
            // Under a backend, only a rendezvous send is chosen on its carrier.
            Some(op) => match sender.meta.bound.as_deref() {
                Some(bound) if runtime::active() => {
                    sender.complete_paired(bound, op, msg, self.site)
                }
                _ => sender.complete_send(op, msg),
            },
            None => sender.send_bounded(msg, self.site),
        }
    }
}
