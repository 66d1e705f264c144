//! Conformance of `ppd::sync::mpsc::{sync_channel, SyncSender}` with the documented behaviour
//! of `std::sync::mpsc::sync_channel`: in-order delivery, the bounded buffer (`send` blocks
//! when it is full, `try_send` reports `Full`), the rendezvous channel of bound 0, and
//! disconnection on either side (`SendError`, `TrySendError::Disconnected`, `RecvError`).

use std::sync::Arc;
use std::time::Duration;

use ppd::sync::atomic::{AtomicUsize, Ordering};
use ppd::sync::mpsc::{RecvError, RecvTimeoutError, SendError, TryRecvError, TrySendError, sync_channel};
use ppd::thread;

/// std `sync_channel`: "All data sent on the SyncSender will become available on the Receiver
/// in the same order as it was sent."
#[test]
fn messages_arrive_in_the_order_they_were_sent() {
    let (tx, rx) = sync_channel(2);
    let producer = thread::spawn(move || {
        for i in 0..10 {
            tx.send(i).unwrap();
        }
    });
    let got: Vec<u32> = rx.iter().collect();
    assert_eq!(got, (0..10).collect::<Vec<_>>());
    producer.join().unwrap();
}

/// std `try_send`: returns "immediately if the channel's buffer is full", with
/// `TrySendError::Full` carrying the value; a `recv` frees a slot again.
#[test]
fn try_send_reports_full_when_the_buffer_is_full() {
    let (tx, rx) = sync_channel(2);
    assert_eq!(tx.try_send(1), Ok(()));
    assert_eq!(tx.try_send(2), Ok(()));
    assert_eq!(tx.try_send(3), Err(TrySendError::Full(3)));
    assert_eq!(rx.recv(), Ok(1));
    assert_eq!(tx.try_send(4), Ok(()));
    assert_eq!(rx.try_iter().collect::<Vec<_>>(), vec![2, 4]);
}

/// std `try_send`: "two failure cases ... one for disconnection" — `Disconnected` with the value
/// once the receiver is gone, even with room in the buffer.
#[test]
fn try_send_reports_disconnected_when_the_receiver_is_dropped() {
    let (tx, rx) = sync_channel(4);
    drop(rx);
    assert_eq!(tx.try_send(7), Err(TrySendError::Disconnected(7)));
}

/// std `SyncSender::send`: "it may return Err if the Receiver has disconnected and is no longer
/// able to receive information"; the `SendError` gives the value back.
#[test]
fn send_to_a_dropped_receiver_returns_the_value_in_the_error() {
    let (tx, rx) = sync_channel(1);
    drop(rx);
    assert_eq!(tx.send(String::from("x")), Err(SendError(String::from("x"))));
}

/// std `sync_channel`: "if the Receiver is disconnected while trying to send with the
/// SyncSender, the send method will return a SendError" — also a send blocked on a full
/// rendezvous channel.
#[test]
fn blocked_send_fails_when_the_receiver_is_dropped() {
    let (tx, rx) = sync_channel::<u8>(0);
    let sender = thread::spawn(move || tx.send(1));
    drop(rx);
    assert_eq!(sender.join().unwrap(), Err(SendError(1)));
}

/// std `try_send`: returns immediately "if ... no receiver is waiting to acquire some data" —
/// on a bound-0 channel with nobody in `recv`, it is `Full`.
#[test]
fn zero_bound_try_send_is_full_without_a_waiting_receiver() {
    let (tx, rx) = sync_channel(0);
    assert_eq!(tx.try_send(1), Err(TrySendError::Full(1)));
    assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
}

/// std `SyncSender::send`: "If the buffer size is 0, however, the channel becomes a rendezvous
/// channel and it guarantees that the receiver has indeed received the data if this function
/// returns success" — the sender is never more than one message ahead of the receiver.
#[test]
fn rendezvous_send_returns_only_after_the_receiver_took_the_message() {
    const N: usize = 6;
    let (tx, rx) = sync_channel(0);
    let sent = Arc::new(AtomicUsize::new(0));
    let s2 = Arc::clone(&sent);
    let producer = thread::spawn(move || {
        for i in 0..N {
            tx.send(i).unwrap();
            s2.fetch_add(1, Ordering::SeqCst);
        }
    });
    for i in 0..N {
        // Before the (i+1)th recv, at most i sends can have returned.
        assert!(sent.load(Ordering::SeqCst) <= i, "a send returned before its recv");
        assert_eq!(rx.recv(), Ok(i));
    }
    producer.join().unwrap();
    assert_eq!(sent.load(Ordering::SeqCst), N);
}

/// std `sync_channel`: "When the internal buffer becomes full, future sends will block waiting
/// for the buffer to open up" — the sender never runs more than `bound` messages ahead of the
/// receiver.
#[test]
fn bounded_send_blocks_once_bound_messages_are_buffered() {
    const BOUND: usize = 2;
    const N: usize = 8;
    let (tx, rx) = sync_channel(BOUND);
    let sent = Arc::new(AtomicUsize::new(0));
    let s2 = Arc::clone(&sent);
    let producer = thread::spawn(move || {
        for i in 0..N {
            tx.send(i).unwrap();
            s2.fetch_add(1, Ordering::SeqCst);
        }
    });
    for i in 0..N {
        assert!(
            sent.load(Ordering::SeqCst) <= i + BOUND,
            "more than {BOUND} sends completed ahead of the receiver"
        );
        assert_eq!(rx.recv(), Ok(i));
    }
    producer.join().unwrap();
}

/// std `sync_channel`: bound 0 is a rendezvous channel "where each send will not return until
/// a recv is paired with it" — so `try_send` succeeds once a receiver is waiting in `recv`.
#[test]
fn zero_bound_try_send_succeeds_once_a_receiver_is_waiting() {
    let (tx, rx) = sync_channel(0);
    let receiver = thread::spawn(move || rx.recv());
    let mut value = 5;
    let mut tries = 0;
    loop {
        match tx.try_send(value) {
            Ok(()) => break,
            Err(TrySendError::Full(v)) => value = v,
            Err(TrySendError::Disconnected(_)) => panic!("the receiver is alive"),
        }
        tries += 1;
        assert!(tries < 2000, "no receiver was ever seen waiting");
        thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(receiver.join().unwrap(), Ok(5));
}

/// std `sync_channel`: "If the SyncSender is disconnected while trying to recv, the recv method
/// will return a RecvError"; buffered messages are still received first, and all clones must
/// be dropped ("The SyncSender can be cloned to send to the same channel multiple times").
#[test]
fn receiver_sees_disconnection_after_every_clone_is_dropped() {
    let (tx, rx) = sync_channel(3);
    let tx2 = tx.clone();
    tx.send(1).unwrap();
    drop(tx);
    tx2.send(2).unwrap();
    assert_eq!(rx.recv_timeout(Duration::from_millis(10)), Ok(1));
    assert_eq!(rx.recv(), Ok(2));
    assert_eq!(
        rx.recv_timeout(Duration::from_millis(10)),
        Err(RecvTimeoutError::Timeout),
        "a live clone keeps the channel connected"
    );
    drop(tx2);
    assert_eq!(rx.recv(), Err(RecvError));
}
