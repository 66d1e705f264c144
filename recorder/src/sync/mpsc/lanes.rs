//! Replay: a single-consumer channel's messages kept in one queue per sending process.
//!
//! A replayed receive wants one exact message, `(sender, seq)`, and each sender's messages
//! reach it in the order they were sent (the log receives them in that order too). Through
//! one shared carrier, a receive had to pull off, and hold back, every message of the other
//! senders that came first: replaying a busy fan-in spent a third of its time moving messages
//! in and out of the held-back queues. Here each sender's logged sends go to its own lane, and
//! a receive takes the front of the lane its log names.
//!
//! Lanes are made on first use by either end and live as long as the channel. They are found
//! without a lock: a fixed table of buckets, each a list that only grows, linked through
//! `OnceLock`s, so a lookup is a few acquire loads and never a read-modify-write that the
//! senders and the receiver would contend for.
//!
//! When the receiver is dropped the lanes are closed: the messages in them are dropped then,
//! as a carrier drops the messages it holds when its last receiver goes, and a message sent
//! later is dropped at once.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

use crossbeam_channel as cc;
use ppd_formats::ProcessId;

use super::carrier::Envelope;
use crate::runtime;

/// Buckets of the lane table: enough that a fan-in from hundreds of senders walks short lists.
const BUCKETS: usize = 64;

/// The lanes of one channel.
pub(crate) struct Lanes<T> {
    buckets: Box<[OnceLock<Box<Lane<T>>>]>,
    closed: AtomicBool,
}

/// The messages of one sending process, and the next lane of its bucket.
pub(crate) struct Lane<T> {
    sender: ProcessId,
    tx: cc::Sender<Envelope<T>>,
    rx: cc::Receiver<Envelope<T>>,
    next: OnceLock<Box<Lane<T>>>,
}

impl<T> std::fmt::Debug for Lanes<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lanes")
            .field("closed", &self.closed.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl<T> Lanes<T> {
    pub(crate) fn new() -> Lanes<T> {
        Lanes {
            buckets: (0..BUCKETS).map(|_| OnceLock::new()).collect(),
            closed: AtomicBool::new(false),
        }
    }

    /// The lane of `sender`, made if it has none yet.
    pub(crate) fn lane(&self, sender: ProcessId) -> &Lane<T> {
        // Processes are numbered densely within a node: the low bits spread them.
        let mut slot = &self.buckets[sender.0 as usize % BUCKETS];
        loop {
            match slot.get() {
                Some(lane) if lane.sender == sender => return lane,
                Some(lane) => slot = &lane.next,
                None => {
                    let (tx, rx) = cc::unbounded();
                    // Another end may append first: the loop then looks at what it appended.
                    let _ = slot.set(Box::new(Lane {
                        sender,
                        tx,
                        rx,
                        next: OnceLock::new(),
                    }));
                }
            }
        }
    }

    /// Puts `env` at the back of its sender's lane; if the receiver is gone, drops it with the
    /// lane's other messages, as a carrier's go with its last receiver.
    pub(crate) fn push(&self, env: Envelope<T>) {
        let lane = self.lane(env.sender);
        // The lane holds both ends of its queue: the send cannot fail.
        let _ = lane.tx.send(env);
        // A close that came first may have drained this lane before the push: drain it again.
        // (A close that comes later drains it itself.)
        if self.closed.load(Ordering::SeqCst) {
            lane.drain();
        }
    }

    /// The receiver is gone: drops every message, now and from now on.
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        for bucket in self.buckets.iter() {
            let mut next = bucket.get();
            while let Some(lane) = next {
                lane.drain();
                next = lane.next.get();
            }
        }
    }
}

impl<T> Lane<T> {
    /// The message at the front, if one is there.
    pub(crate) fn try_take(&self) -> Option<Envelope<T>> {
        self.rx.try_recv().ok()
    }

    /// The message at the front, waiting at most `patience` (longer than a watch) for one:
    /// watching for it first ([`runtime::watch`]), then asleep.
    pub(crate) fn take_within(&self, patience: std::time::Duration) -> Option<Envelope<T>> {
        let started = std::time::Instant::now();
        let mut taken = None;
        runtime::watch::watch(|| {
            taken = self.rx.try_recv().ok();
            taken.is_some()
        });
        taken.or_else(|| {
            self.rx
                .recv_timeout(patience.saturating_sub(started.elapsed()))
                .ok()
        })
    }

    fn drain(&self) {
        while self.rx.try_recv().is_ok() {}
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::AtomicUsize;

    use super::*;

    fn env(sender: u32, seq: u64) -> Envelope<u64> {
        Envelope {
            sender: ProcessId(sender),
            seq,
            value: seq,
        }
    }

    #[test]
    fn each_sender_has_one_lane_in_send_order_however_many_share_a_bucket() {
        let lanes = Lanes::new();
        // 1, 65 and 129 share a bucket.
        for seq in 1..=3 {
            for sender in [1, 65, 129, 2] {
                lanes.push(env(sender, seq * 1000 + u64::from(sender)));
            }
        }
        for sender in [129, 2, 1, 65] {
            let lane = lanes.lane(ProcessId(sender));
            let got: Vec<u64> = std::iter::from_fn(|| lane.try_take().map(|e| e.seq)).collect();
            let want: Vec<u64> = (1..=3).map(|s| s * 1000 + u64::from(sender)).collect();
            assert_eq!(got, want, "sender {sender}");
        }
    }

    #[test]
    fn senders_racing_to_make_lanes_of_one_bucket_lose_no_message() {
        let lanes = Arc::new(Lanes::new());
        let threads: Vec<_> = (0..8u32)
            .map(|t| {
                let lanes = Arc::clone(&lanes);
                std::thread::spawn(move || {
                    for seq in 0..1000 {
                        lanes.push(env(t * BUCKETS as u32, seq));
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        for t in 0..8u32 {
            let lane = lanes.lane(ProcessId(t * BUCKETS as u32));
            let got: Vec<u64> = std::iter::from_fn(|| lane.try_take().map(|e| e.seq)).collect();
            assert_eq!(got, (0..1000).collect::<Vec<_>>(), "sender {t}");
        }
    }

    /// A message whose drop is counted.
    struct Counted(Arc<AtomicUsize>);

    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn closing_drops_the_messages_held_and_those_sent_later() {
        let dropped = Arc::new(AtomicUsize::new(0));
        let lanes = Lanes::new();
        let send = |sender: u32, seq: u64| {
            lanes.push(Envelope {
                sender: ProcessId(sender),
                seq,
                value: Counted(Arc::clone(&dropped)),
            });
        };
        send(1, 1);
        send(2, 2);
        assert_eq!(dropped.load(Ordering::SeqCst), 0);
        lanes.close();
        assert_eq!(dropped.load(Ordering::SeqCst), 2);
        send(3, 3);
        assert_eq!(dropped.load(Ordering::SeqCst), 3);
    }
}
