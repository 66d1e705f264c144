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
//! A rendezvous channel (capacity 0) pairs each send with one receive, and the receive that
//! takes a message happens-before its send returns. Recorded, crossbeam's own rendezvous
//! carrier makes the pairs (`mpsc/carrier.rs`, `enveloped_paired`): a `try_send` pairs with a
//! receive waiting in `recv` or in a selection, a `try_recv` with a send waiting, a selection's
//! chosen send with the receive it reserved while its message is computed, and every receiver
//! gone fails a waiting send. The room is not taken then; the *handoff*, a semaphore with no
//! permits, gives the order: the receive gives it a permit after taking the message, and the
//! send returns after taking one. A send that waits for a receive logs `Blocked` on the
//! handoff; a `try_send` or `send_timeout` logs whether it found one (in time) as an `Outcome`
//! on the room, `Acquired` or `WouldBlock`, which replay reads back. Replay gives each receive its logged message, so it
//! pairs nothing itself.
//!
//! A selection with a send on a channel with room cannot wait on the room the way it waits on
//! carriers; it registers a *watcher* (a crossbeam channel of its own) that every change that
//! could make a send possible pings: a slot freed, the last receiver gone. (Recorded, a send
//! on a rendezvous channel is on its carrier, which the selection waits on as on any other.)

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

/// How long a recorded rendezvous send whose message was taken looks for its receive's permit
/// before it sleeps: the receive that took it is often still being woken.
const HANDOFF_PATIENCE: Duration = Duration::from_micros(100);

/// The room (and for capacity 0 the handoff) of one bounded channel.
#[derive(Debug)]
pub(crate) struct Bound {
    room: Semaphore,
    handoff: Option<Semaphore>,
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

    /// Before a `try_send` on a channel with room: takes a free slot if there is one; the
    /// answer is logged.
    pub(crate) fn try_enter(&self, site: &'static Location<'static>) -> bool {
        self.room.try_acquire_at(site, None)
    }

    /// Before a `send_timeout` on a channel with room: waits at most `patience` for a free
    /// slot; the answer is logged.
    pub(crate) fn enter_within(
        &self,
        site: &'static Location<'static>,
        patience: Duration,
    ) -> bool {
        self.room.try_acquire_at(site, Some(patience))
    }

    /// Recording a rendezvous send that found no receive to pair with: it waits for one, on
    /// the handoff whose permit such a receive gives.
    pub(crate) fn log_waiting(&self, site: &'static Location<'static>) {
        let object = self.handoff.as_ref().map_or(self.room.id(), |h| h.id());
        runtime::done(&Event::Blocked {
            object,
            site: Some(site),
        });
    }

    /// Recording a rendezvous `try_send` or `send_timeout`: whether it found a receive to pair
    /// with (in time), an `Outcome` on the room — `Acquired` (its send is logged next) or
    /// `WouldBlock` — as a `try_send` on a channel with room logs.
    pub(crate) fn log_pairing(&self, paired: bool, site: &'static Location<'static>) {
        runtime::done(&Event::Outcome {
            object: self.room.id(),
            outcome: if paired {
                Outcome::Acquired
            } else {
                Outcome::WouldBlock
            },
            site: Some(site),
        });
    }

    /// Replaying a rendezvous `try_send` or `send_timeout`: whether the log says it found a
    /// receive to pair with ([`log_pairing`](Bound::log_pairing)).
    pub(crate) fn replay_pairing(&self, site: &'static Location<'static>) -> bool {
        let paired = !matches!(
            runtime::expect(Op::on(EventKind::Outcome, self.room.id(), Some(site))),
            Some(Event::Outcome {
                outcome: Outcome::WouldBlock,
                ..
            })
        );
        self.log_pairing(paired, site);
        paired
    }

    /// Whether the channel is a rendezvous channel (capacity 0).
    pub(crate) fn is_rendezvous(&self) -> bool {
        self.handoff.is_some()
    }

    /// Whether every receiver is gone.
    pub(crate) fn disconnected(&self) -> bool {
        self.receivers.load(Ordering::Acquire) == 0
    }

    /// After a rendezvous send's message was taken: waits for its receive's permit on the
    /// handoff.
    pub(crate) fn sent(&self, site: &'static Location<'static>) {
        if let Some(handoff) = &self.handoff {
            if runtime::mode() == Mode::Record {
                let start = std::time::Instant::now();
                while !handoff.has_permit() && start.elapsed() < HANDOFF_PATIENCE {
                    std::thread::yield_now();
                }
            }
            handoff.acquire_at(site);
        }
    }

    /// After a send on a channel with room that found every receiver gone: its slot goes on to
    /// the next sender, which fails the same way.
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

    /// Whether a send on a channel with room could proceed now without waiting, as a selection
    /// judges it: a slot is free, or every receiver is gone (the send then fails at once).
    /// Nothing is logged.
    pub(crate) fn could_send(&self) -> bool {
        self.disconnected() || self.room.has_permit()
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
    /// sender waiting for room wakes, finds the channel disconnected and passes the wake-up
    /// on. (A rendezvous channel's waiting senders wait on its carrier, which wakes them.)
    ///
    /// Which receiver is the last is a race between the receivers' processes; the wake-up's V
    /// in the log is its answer, and replay gives it to the same process: the one whose
    /// receiver was the last in the recorded run, whether or not its receiver is the last in
    /// the replay ([`release_for_last_receiver`]).
    pub(crate) fn receiver_dropped(&self) {
        let last = self.receivers.fetch_sub(1, Ordering::AcqRel) == 1;
        if self.is_rendezvous() {
            return;
        }
        // Replayed by this drop: no other process does it (recording registers nothing).
        if self.room.release_if(self.site, last) && runtime::mode() == Mode::Replay {
            last_drops().remove(&self.room.id());
        }
        if last {
            self.ping_watchers();
        }
    }

    /// A bounded channel's room and handoff; the room of a channel with room is registered in
    /// replay so that the wake-up of its last receiver's drop can be done where the log has it
    /// ([`release_for_last_receiver`]).
    pub(crate) fn shared(
        capacity: usize,
        name: Option<&'static str>,
        site: &'static Location<'static>,
    ) -> Arc<Bound> {
        let bound = Arc::new(Bound::new(capacity, name, site));
        if runtime::mode() == Mode::Replay && !bound.is_rendezvous() {
            last_drops().insert(bound.room.id(), Arc::clone(&bound));
        }
        bound
    }
}

/// Replay: the channels with room by the ids of their rooms, until the wake-up of their last
/// receiver's drop is replayed. Held strongly: the replay may reach the wake-up
/// after every end of the channel is gone.
fn last_drops() -> MutexGuard<'static, FxHashMap<ObjectId, Arc<Bound>>> {
    static LAST_DROPS: OnceLock<Mutex<FxHashMap<ObjectId, Arc<Bound>>>> = OnceLock::new();
    LAST_DROPS
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner())
}

/// Replay: whether a V of `object` logged at `site` is the wake-up of a channel's last
/// receiver not replayed yet: `object` is the room of a channel with room, and `site` the
/// channel's own (a receive's V names the receive's call site).
pub fn is_last_receiver_release(object: ObjectId, site: Option<&Site>) -> bool {
    let drops = last_drops();
    let Some(bound) = drops.get(&object) else {
        return false;
    };
    site.is_some_and(|s| s.is(bound.site))
}

/// Replay: does the wake-up of a channel's last receiver's drop, a V of its room `object`, in
/// the current process, because its log has it next and the process is
/// about to do something else. The channel's ends are shared through something ppd does not
/// log — most often clones of an `Arc` holding them, whose last clone's thread std's `Arc`
/// does not say — and in this replay another thread's drop is the last, or none is yet; the V
/// goes where the recorded run did it, so the senders that it woke are woken in the same
/// order. Returns false for an object that is no such room.
pub(crate) fn release_for_last_receiver(object: ObjectId) -> bool {
    let Some(bound) = last_drops().remove(&object) else {
        return false;
    };
    bound.room.release_at(bound.site);
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
