//! The capacity of a bounded channel under a backend: hidden semaphores whose permits are the
//! channel's free slots.
//!
//! Run without ppd, a bounded channel is crossbeam's bounded channel and blocks on its own.
//! Recorded and replayed, its messages travel on an unbounded channel (replay holds messages
//! back, so the carrier's own capacity would not match the recorded run's) and its capacity is
//! a ppd [`Semaphore`], `room`, with one permit per slot: a send takes a permit before its
//! message becomes visible, a receive gives one back. Every choice is then an existing
//! semaphore operation: a full channel is a P that waits (logging `Blocked` first), a
//! `try_send` on a full one is the `WouldBlock` answer of a try-P, and the happened-before std
//! guarantees — the k-th receive happens-before the (k+n)-th send returns — is the
//! semaphore's edge from a V to the P that takes its permit.
//!
//! A rendezvous channel (capacity 0) has one slot in `room`, so one message is in flight at a
//! time, and a second semaphore, `handoff`, with none: the receive that takes the message gives
//! `handoff` a permit, and the send returns only after taking it (so the receive
//! happens-before the send returns), then frees the slot. A send that must not wait for a
//! receive (`try_send`, and `send_timeout` once its time is up) takes the slot only while a
//! receive waits for the message — in `recv`, `recv_timeout` or a selection, counted from the
//! start of its wait — or once every receiver is gone (it then fails as disconnected), so that,
//! as crossbeam's, it never leaves a message in the channel that nobody takes.
//!
//! A selection with a send on the channel cannot wait on the room the way it waits on
//! carriers; it registers a *watcher* (a crossbeam channel of its own) that every change that
//! could make a send possible pings: a slot freed, a receive starting to wait (rendezvous),
//! the last receiver gone.

use crate::runtime::binding::LazyObject;
use std::panic::Location;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use crossbeam_channel as cc;
use rustc_hash::FxHashMap;

use ppd_formats::event::{Outcome, Site};
use ppd_formats::{Event, EventKind, ObjectId};

use super::semaphore::Semaphore;
use crate::runtime;
use crate::runtime::backend::{Mode, Op};

/// The room (and for capacity 0 the handoff) of one bounded channel.
#[derive(Debug)]
pub(crate) struct Bound {
    room: Semaphore,
    handoff: Option<Semaphore>,
    /// Receives blocked on the channel now: a rendezvous `try_send` succeeds only when one is
    /// waiting to take its message, as std's does.
    waiting_receivers: AtomicUsize,
    /// Receivers alive; when the last goes, blocked senders are woken to fail.
    receivers: AtomicUsize,
    /// Where the channel was made: the place of the operations no call site stands for (the
    /// wake-up when the last receiver goes).
    site: &'static Location<'static>,
    /// Selections waiting to send on the channel, by registration number; `watching` says
    /// whether there are any without taking the lock.
    watchers: Mutex<Vec<(u64, cc::Sender<()>)>>,
    watching: AtomicUsize,
    next_watcher: AtomicU64,
}

impl Bound {
    /// The bookkeeping of a channel with room for `capacity` messages, its semaphores named
    /// after the channel (or, for an unnamed one, after what they are) so that a sender
    /// blocked on one is reported as waiting on that channel.
    pub(crate) fn new(
        capacity: usize,
        name: Option<&'static str>,
        site: &'static Location<'static>,
    ) -> Bound {
        let slots = capacity.max(1) as u64;
        let bound = Bound {
            room: Semaphore::hidden(slots, name.unwrap_or("room of a bounded channel"), site),
            handoff: (capacity == 0).then(|| {
                Semaphore::hidden(0, name.unwrap_or("handoff of a rendezvous channel"), site)
            }),
            waiting_receivers: AtomicUsize::new(0),
            receivers: AtomicUsize::new(1),
            site,
            watchers: Mutex::new(Vec::new()),
            watching: AtomicUsize::new(0),
            next_watcher: AtomicU64::new(0),
        };
        // Registered with the channel, not at their first use: a channel is never a `static`,
        // and re-executing an e-block finds the room as the next objects its creator made.
        bound.room.register_now();
        if let Some(handoff) = &bound.handoff {
            handoff.register_now();
        }
        bound
    }

    /// Before a send: waits for a free slot.
    pub(crate) fn enter(&self, site: &'static Location<'static>) {
        self.room.acquire_at(site);
    }

    /// Before a `try_send`: takes a free slot if there is one (for a rendezvous channel, only
    /// while a receive waits for the message, or once every receiver is gone, so that the
    /// send fails as disconnected rather than full); the answer is logged.
    pub(crate) fn try_enter(&self, site: &'static Location<'static>) -> bool {
        self.room.try_acquire_at(site, None, || self.taker_ready())
    }

    /// Before a `send_timeout`: waits at most `patience` for a free slot (for a rendezvous
    /// channel, also for a receive waiting to take the message: a rendezvous send that times
    /// out has handed nothing over); the answer is logged.
    ///
    /// Recording a rendezvous send, the wait for a receive is made on a watcher, as a
    /// selection's is, and the slot is then tried; replay gives the logged answer at once.
    pub(crate) fn enter_within(
        &self,
        site: &'static Location<'static>,
        patience: Duration,
    ) -> bool {
        if self.handoff.is_some() && runtime::mode() == Mode::Record && !self.could_send() {
            runtime::done(&Event::Blocked {
                object: self.room.id(),
                site: Some(site),
            });
            let (ping, pinged) = cc::bounded(1);
            let _watch = self.watch(ping);
            let deadline = std::time::Instant::now().checked_add(patience);
            while !self.could_send() {
                let woken = match deadline {
                    Some(deadline) => pinged.recv_deadline(deadline).is_ok(),
                    None => pinged.recv().is_ok(),
                };
                if !woken {
                    break;
                }
            }
            return self.room.try_acquire_at(site, None, || self.taker_ready());
        }
        self.room
            .try_acquire_at(site, Some(patience), || self.taker_ready())
    }

    /// Whether the channel is a rendezvous channel (capacity 0).
    pub(crate) fn is_rendezvous(&self) -> bool {
        self.handoff.is_some()
    }

    /// Whether the receiver asking is the channel's last.
    pub(crate) fn last_receiver(&self) -> bool {
        self.receivers.load(Ordering::Acquire) == 1
    }

    /// Whether every receiver is gone.
    pub(crate) fn disconnected(&self) -> bool {
        self.receivers.load(Ordering::Acquire) == 0
    }

    /// Whether a message sent now is taken (or fails) without waiting for a receive: always
    /// for a channel with room; for a rendezvous channel, while a receive waits for it or
    /// once every receiver is gone.
    fn taker_ready(&self) -> bool {
        self.taker_ready_besides(0)
    }

    /// [`taker_ready`](Bound::taker_ready), not counting `own` of the waiting receives.
    fn taker_ready_besides(&self, own: usize) -> bool {
        self.handoff.is_none()
            || self.waiting_receivers.load(Ordering::Acquire) > own
            || self.receivers.load(Ordering::Acquire) == 0
    }

    /// After a send delivered its message: a rendezvous send waits until it is taken.
    pub(crate) fn sent(&self, site: &'static Location<'static>) {
        if let Some(handoff) = &self.handoff {
            handoff.acquire_at(site);
            self.room.release_at(site);
            self.ping_watchers();
        }
    }

    /// After a send that found every receiver gone: its slot goes on to the next sender, which
    /// fails the same way.
    pub(crate) fn abandoned(&self, site: &'static Location<'static>) {
        self.room.release_at(site);
        self.ping_watchers();
    }

    /// After a receive took a message: its slot is free again (rendezvous: its sender may
    /// return).
    pub(crate) fn taken(&self, site: &'static Location<'static>) {
        match &self.handoff {
            Some(handoff) => handoff.release_at(site),
            None => {
                self.room.release_at(site);
                self.ping_watchers();
            }
        }
    }

    /// A receive (or a selection with a receive on the channel) starts waiting; the guard
    /// says when it stops. Only a rendezvous channel's sends ask whether one waits, so for any
    /// other channel nothing is counted.
    pub(crate) fn receiver_waits(&self) -> Option<WaitingReceiver<'_>> {
        self.handoff.as_ref()?;
        self.waiting_receivers.fetch_add(1, Ordering::AcqRel);
        self.ping_watchers();
        Some(WaitingReceiver(self))
    }

    /// Whether a send could proceed now without waiting, as a selection judges it: a slot is
    /// free (for a rendezvous channel, while a receive waits for the message), or every
    /// receiver is gone (the send then fails at once). Nothing is logged.
    pub(crate) fn could_send(&self) -> bool {
        self.could_send_besides(0)
    }

    /// [`could_send`](Bound::could_send), for a selection that has `own` receives of its own
    /// told to be waiting on the channel: they cannot take its send's message.
    pub(crate) fn could_send_besides(&self, own: usize) -> bool {
        self.disconnected() || (self.room.has_permit() && self.taker_ready_besides(own))
    }

    /// Pings `watcher` whenever a send may have become possible, until the guard drops.
    pub(crate) fn watch(&self, watcher: cc::Sender<()>) -> Watch<'_> {
        let number = self.next_watcher.fetch_add(1, Ordering::Relaxed);
        let mut watchers = self.watchers.lock().unwrap_or_else(|p| p.into_inner());
        watchers.push((number, watcher));
        self.watching.store(watchers.len(), Ordering::Release);
        Watch {
            bound: self,
            number,
        }
    }

    fn ping_watchers(&self) {
        if self.watching.load(Ordering::Acquire) == 0 {
            return;
        }
        let watchers = self.watchers.lock().unwrap_or_else(|p| p.into_inner());
        for (_, watcher) in watchers.iter() {
            // Full: a ping is already pending, which says the same.
            let _ = watcher.try_send(());
        }
    }

    /// Another receiver (a clone) shares the channel.
    pub(crate) fn receiver_added(&self) {
        self.receivers.fetch_add(1, Ordering::AcqRel);
    }

    /// A receiver went away, after its end of the carrier channel: when it was the last, a
    /// sender waiting for room or for its message to be taken wakes, finds the channel
    /// disconnected and passes the wake-up on.
    ///
    /// Which receiver is the last is a race between the receivers' processes; the wake-up's V
    /// in the log is its answer, and replay gives it to the same process: the one whose
    /// receiver was the last in the recorded run, whether or not its receiver is the last in
    /// the replay ([`release_for_last_receiver`]).
    pub(crate) fn receiver_dropped(&self) {
        let last = self.receivers.fetch_sub(1, Ordering::AcqRel) == 1;
        let room = self.room.release_if(self.site, last);
        let handoff = self
            .handoff
            .as_ref()
            .is_some_and(|h| h.release_if(self.site, last));
        // Replayed by this drop: no other process does it (recording registers nothing).
        if runtime::mode() == Mode::Replay && (room || handoff) {
            let mut drops = last_drops();
            if room {
                drops.remove(&self.room.id());
            }
            if let Some(h) = self.handoff.as_ref().filter(|_| handoff) {
                drops.remove(&h.id());
            }
        }
        if last {
            self.ping_watchers();
        }
    }

    /// A bounded channel's room and handoff, registered in replay so that the wake-up of its
    /// last receiver's drop can be done where the log has it ([`release_for_last_receiver`]).
    pub(crate) fn shared(
        capacity: usize,
        name: Option<&'static str>,
        site: &'static Location<'static>,
    ) -> Arc<Bound> {
        let bound = Arc::new(Bound::new(capacity, name, site));
        if runtime::mode() == Mode::Replay {
            let mut drops = last_drops();
            drops.insert(bound.room.id(), Arc::clone(&bound));
            if let Some(handoff) = &bound.handoff {
                drops.insert(handoff.id(), Arc::clone(&bound));
            }
        }
        bound
    }
}

/// Replay: the bounded channels by the ids of their room and handoff, until the wake-up of
/// their last receiver's drop is replayed. Held strongly: the replay may reach the wake-up
/// after every end of the channel is gone.
fn last_drops() -> MutexGuard<'static, FxHashMap<ObjectId, Arc<Bound>>> {
    static LAST_DROPS: OnceLock<Mutex<FxHashMap<ObjectId, Arc<Bound>>>> = OnceLock::new();
    LAST_DROPS
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner())
}

/// Replay: whether a V of `object` logged at `site` is the wake-up of a bounded channel's
/// last receiver not replayed yet: `object` is the channel's room or handoff, and `site` the
/// channel's own (a receive's V names the receive's call site).
pub fn is_last_receiver_release(object: ObjectId, site: Option<&Site>) -> bool {
    let drops = last_drops();
    let Some(bound) = drops.get(&object) else {
        return false;
    };
    site.is_some_and(|s| s.is(bound.site))
}

/// Replay: does the wake-up of a bounded channel's last receiver's drop, a V of its room or
/// handoff `object`, in the current process, because its log has it next and the process is
/// about to do something else. The channel's ends are shared through something ppd does not
/// log — most often clones of an `Arc` holding them, whose last clone's thread std's `Arc`
/// does not say — and in this replay another thread's drop is the last, or none is yet; the V
/// goes where the recorded run did it, so the senders that it woke are woken in the same
/// order. Returns false for an object that is no such room or handoff.
pub(crate) fn release_for_last_receiver(object: ObjectId) -> bool {
    let Some(bound) = last_drops().remove(&object) else {
        return false;
    };
    let semaphore = if bound.room.id() == object {
        &bound.room
    } else {
        match &bound.handoff {
            Some(handoff) => handoff,
            None => return false,
        }
    };
    semaphore.release_at(bound.site);
    true
}

/// A selection's registration as a watcher of a channel's room; see [`Bound::watch`].
#[derive(Debug)]
pub(crate) struct Watch<'a> {
    bound: &'a Bound,
    number: u64,
}

impl Drop for Watch<'_> {
    fn drop(&mut self) {
        let mut watchers = self
            .bound
            .watchers
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        watchers.retain(|(n, _)| *n != self.number);
        self.bound.watching.store(watchers.len(), Ordering::Release);
    }
}

/// A receive blocked on a bounded channel; see [`Bound::receiver_waits`].
#[derive(Debug)]
pub(crate) struct WaitingReceiver<'a>(&'a Bound);

impl Drop for WaitingReceiver<'_> {
    fn drop(&mut self) {
        self.0.waiting_receivers.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Re-executing an e-block through a bounded channel's handle rebuilt from its id
/// (`super::handle`): the handle does not know the channel's room, so the room's operations
/// the log has at this point are served as they come. The room is the object the channel's
/// creator made right after the channel, the handoff the one after (`Bound::new`), and their
/// operations are logged at the channel operation's own call site: an operation of another
/// object made after an unbounded channel (a user's semaphore) is told apart by its site, and
/// left to its own operation. Returns the last answer served (a `try_send`'s).
pub(crate) fn serve_emulated_room(
    channel: ObjectId,
    site: &'static Location<'static>,
) -> Option<Outcome> {
    if runtime::mode() != Mode::Emulate {
        return None;
    }
    let ours = [ObjectId(channel.0 + 1), ObjectId(channel.0 + 2)];
    let kinds = [
        EventKind::Outcome,
        EventKind::SemAcquire,
        EventKind::SemRelease,
    ];
    let at_this_call =
        |logged: Option<&&ppd_formats::event::Site>| logged.is_some_and(|s| s.is(site));
    let mut answer = None;
    while let Some(event) = runtime::next_logged()
        .filter(|next| {
            next.object().is_some_and(|o| ours.contains(&o))
                && kinds.contains(&next.kind())
                && at_this_call(next.site())
        })
        .and_then(|next| runtime::expect_if(Op::on(next.kind(), next.object()?, Some(site))))
    {
        match event {
            Event::SemAcquire {
                object,
                version,
                prev,
                ..
            } => runtime::done(&Event::SemAcquire {
                object,
                version,
                prev,
                site: Some(site),
            }),
            Event::SemRelease {
                object,
                version,
                prev,
                ..
            } => runtime::done(&Event::SemRelease {
                object,
                version,
                prev,
                site: Some(site),
            }),
            Event::Outcome {
                object, outcome, ..
            } => {
                answer = Some(outcome);
                runtime::done(&Event::Outcome {
                    object,
                    outcome,
                    site: Some(site),
                });
            }
            _ => break,
        }
    }
    answer
}
