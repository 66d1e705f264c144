//! The crossbeam channel a ppd channel rides on.
//!
//! Under a backend every message travels in an [`Envelope`] with its header (the sending
//! process and its sequence number on the channel), which the receive logs. Without one
//! (pass-through) nothing reads a header, and a carrier of bare messages costs what crossbeam's
//! channel costs: an envelope triples the slot of a small message, which measurably slows a
//! busy channel. Which kind a channel gets is decided when it is made, from the mode; the
//! methods here hand every message out as an envelope either way (a bare one with an empty
//! header), so the code above them has one shape.

use std::time::Duration;

use crossbeam_channel as cc;
use ppd_formats::ProcessId;

/// A message and its header.
pub(crate) struct Envelope<T> {
    /// The process that sent it.
    pub(crate) sender: ProcessId,
    /// Its sequence number on the channel.
    pub(crate) seq: u64,
    /// The message.
    pub(crate) value: T,
}

/// The header only: the message may be of any type.
impl<T> std::fmt::Debug for Envelope<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Envelope")
            .field("sender", &self.sender)
            .field("seq", &self.seq)
            .finish_non_exhaustive()
    }
}

impl<T> Envelope<T> {
    /// A message without a header: what a bare carrier carries.
    pub(crate) fn bare(value: T) -> Envelope<T> {
        Envelope {
            sender: ProcessId(0),
            seq: 0,
            value,
        }
    }
}

/// The sending end of a carrier.
pub(crate) enum CarrierTx<T> {
    /// Pass-through: bare messages.
    Bare(cc::Sender<T>),
    /// Under a backend: messages with their headers.
    Enveloped(cc::Sender<Envelope<T>>),
}

/// The receiving end of a carrier.
pub(crate) enum CarrierRx<T> {
    /// Pass-through: bare messages.
    Bare(cc::Receiver<T>),
    /// Under a backend: messages with their headers.
    Enveloped(cc::Receiver<Envelope<T>>),
}

/// A carrier of bare messages, bounded by crossbeam itself when `capacity` is given.
pub(crate) fn bare<T>(capacity: Option<usize>) -> (CarrierTx<T>, CarrierRx<T>) {
    let (tx, rx) = match capacity {
        Some(n) => cc::bounded(n),
        None => cc::unbounded(),
    };
    (CarrierTx::Bare(tx), CarrierRx::Bare(rx))
}

/// An unbounded carrier of messages with headers (a backend bounds a channel itself).
pub(crate) fn enveloped<T>() -> (CarrierTx<T>, CarrierRx<T>) {
    let (tx, rx) = cc::unbounded();
    (CarrierTx::Enveloped(tx), CarrierRx::Enveloped(rx))
}

/// Recording a rendezvous channel: crossbeam's own rendezvous carrier of messages with
/// headers. It pairs each send with one receive — a `try_send` with a receive waiting in
/// `recv` or a selection, a `try_recv` with a send waiting, a selection's chosen send with the
/// receive it reserved while its message is still being computed — which no count of waiting
/// receives beside an unbounded carrier can do: a message put in a shared queue goes to
/// whichever receive comes first, not to the one its send was paired with.
pub(crate) fn enveloped_paired<T>() -> (CarrierTx<T>, CarrierRx<T>) {
    let (tx, rx) = cc::bounded(0);
    (CarrierTx::Enveloped(tx), CarrierRx::Enveloped(rx))
}

impl<T> Clone for CarrierTx<T> {
    fn clone(&self) -> Self {
        match self {
            CarrierTx::Bare(tx) => CarrierTx::Bare(tx.clone()),
            CarrierTx::Enveloped(tx) => CarrierTx::Enveloped(tx.clone()),
        }
    }
}

impl<T> Clone for CarrierRx<T> {
    fn clone(&self) -> Self {
        match self {
            CarrierRx::Bare(rx) => CarrierRx::Bare(rx.clone()),
            CarrierRx::Enveloped(rx) => CarrierRx::Enveloped(rx.clone()),
        }
    }
}

/// A send's failure over envelopes: `Full` (no room in time) or `Disconnected`.
pub(crate) type SendFailure<T> = cc::TrySendError<Envelope<T>>;

/// The same failure with the bare message put back in its envelope.
fn rewrapped<T>(e: cc::TrySendError<T>) -> SendFailure<T> {
    match e {
        cc::TrySendError::Full(v) => cc::TrySendError::Full(Envelope::bare(v)),
        cc::TrySendError::Disconnected(v) => cc::TrySendError::Disconnected(Envelope::bare(v)),
    }
}

/// A timed send's failure as the untimed one's: running out of time is `Full`.
fn untimed<T>(e: cc::SendTimeoutError<T>) -> cc::TrySendError<T> {
    match e {
        cc::SendTimeoutError::Timeout(v) => cc::TrySendError::Full(v),
        cc::SendTimeoutError::Disconnected(v) => cc::TrySendError::Disconnected(v),
    }
}

impl<T> CarrierTx<T> {
    /// Sends, waiting for room in a bounded carrier; the envelope back if every receiver is
    /// gone.
    #[inline]
    pub(crate) fn send(&self, env: Envelope<T>) -> Result<(), Envelope<T>> {
        match self {
            CarrierTx::Bare(tx) => tx
                .send(env.value)
                .map_err(|cc::SendError(value)| Envelope::bare(value)),
            CarrierTx::Enveloped(tx) => tx.send(env).map_err(|cc::SendError(env)| env),
        }
    }

    /// Sends if there is room now.
    pub(crate) fn try_send(&self, env: Envelope<T>) -> Result<(), SendFailure<T>> {
        match self {
            CarrierTx::Bare(tx) => tx.try_send(env.value).map_err(rewrapped),
            CarrierTx::Enveloped(tx) => tx.try_send(env),
        }
    }

    /// Sends, waiting at most `patience` for room; running out of time is `Full`.
    pub(crate) fn send_timeout(
        &self,
        env: Envelope<T>,
        patience: Duration,
    ) -> Result<(), SendFailure<T>> {
        match self {
            CarrierTx::Bare(tx) => tx
                .send_timeout(env.value, patience)
                .map_err(|e| rewrapped(untimed(e))),
            CarrierTx::Enveloped(tx) => tx.send_timeout(env, patience).map_err(untimed),
        }
    }

    /// How many messages the carrier holds now.
    pub(crate) fn len(&self) -> usize {
        match self {
            CarrierTx::Bare(tx) => tx.len(),
            CarrierTx::Enveloped(tx) => tx.len(),
        }
    }

    /// Adds a send on this carrier to a crossbeam selection; its index there.
    pub(crate) fn select_send<'a>(&'a self, select: &mut cc::Select<'a>) -> usize {
        match self {
            CarrierTx::Bare(tx) => select.send(tx),
            CarrierTx::Enveloped(tx) => select.send(tx),
        }
    }

    /// Completes a selected send on this carrier; the envelope back if every receiver is gone.
    pub(crate) fn complete_send(
        &self,
        op: cc::SelectedOperation<'_>,
        env: Envelope<T>,
    ) -> Result<(), Envelope<T>> {
        match self {
            CarrierTx::Bare(tx) => op
                .send(tx, env.value)
                .map_err(|cc::SendError(value)| Envelope::bare(value)),
            CarrierTx::Enveloped(tx) => op.send(tx, env).map_err(|cc::SendError(env)| env),
        }
    }
}

impl<T> CarrierRx<T> {
    /// Waits for a message; `Err` once every sender is gone and the carrier is empty.
    #[inline]
    pub(crate) fn recv(&self) -> Result<Envelope<T>, cc::RecvError> {
        match self {
            CarrierRx::Bare(rx) => rx.recv().map(Envelope::bare),
            CarrierRx::Enveloped(rx) => rx.recv(),
        }
    }

    /// A message if one is there now.
    #[inline]
    pub(crate) fn try_recv(&self) -> Result<Envelope<T>, cc::TryRecvError> {
        match self {
            CarrierRx::Bare(rx) => rx.try_recv().map(Envelope::bare),
            CarrierRx::Enveloped(rx) => rx.try_recv(),
        }
    }

    /// Waits at most `timeout` for a message.
    #[inline]
    pub(crate) fn recv_timeout(
        &self,
        timeout: Duration,
    ) -> Result<Envelope<T>, cc::RecvTimeoutError> {
        match self {
            CarrierRx::Bare(rx) => rx.recv_timeout(timeout).map(Envelope::bare),
            CarrierRx::Enveloped(rx) => rx.recv_timeout(timeout),
        }
    }

    /// How many messages the carrier holds now.
    pub(crate) fn len(&self) -> usize {
        match self {
            CarrierRx::Bare(rx) => rx.len(),
            CarrierRx::Enveloped(rx) => rx.len(),
        }
    }

    /// Adds a receive from this carrier to a crossbeam selection; its index there.
    pub(crate) fn select_recv<'a>(&'a self, select: &mut cc::Select<'a>) -> usize {
        match self {
            CarrierRx::Bare(rx) => select.recv(rx),
            CarrierRx::Enveloped(rx) => select.recv(rx),
        }
    }

    /// Completes a selected receive from this carrier.
    pub(crate) fn complete(
        &self,
        op: cc::SelectedOperation<'_>,
    ) -> Result<Envelope<T>, cc::RecvError> {
        match self {
            CarrierRx::Bare(rx) => op.recv(rx).map(Envelope::bare),
            CarrierRx::Enveloped(rx) => op.recv(rx),
        }
    }
}
