//! Conformance of `ppd::sync::mpsc::{channel, Sender, Receiver}` with the documented behaviour
//! of `std::sync::mpsc::channel`: in-order delivery, a non-blocking unbounded `send`, `send`
//! to a dropped receiver, `recv`/`try_recv`/`recv_timeout` and disconnection, `iter`,
//! `try_iter` and `IntoIterator`, and cloned senders.

use std::time::Duration;

use ppd::sync::mpsc::{RecvError, RecvTimeoutError, SendError, TryRecvError, channel};
use ppd::thread;

/// std `channel`: "All data sent on the Sender will become available on the Receiver in the
/// same order as it was sent".
#[test]
fn messages_arrive_in_the_order_they_were_sent() {
    let (tx, rx) = channel();
    let producer = thread::spawn(move || {
        for i in 0..20 {
            tx.send(i).unwrap();
        }
    });
    let got: Vec<i32> = (0..20).map(|_| rx.recv().unwrap()).collect();
    assert_eq!(got, (0..20).collect::<Vec<_>>());
    producer.join().unwrap();
}

/// std `channel`: "no send will block the calling thread (this channel has an 'infinite
/// buffer' ...)" — many sends with nobody receiving all succeed, and are all delivered.
#[test]
fn send_never_blocks_on_an_unbounded_channel() {
    let (tx, rx) = channel();
    for i in 0..500u32 {
        tx.send(i).unwrap();
    }
    drop(tx);
    assert_eq!(rx.iter().count(), 500);
}

/// std `Sender::send`: "An unsuccessful send would be one where the corresponding receiver has
/// already been deallocated"; the error gives the value back.
#[test]
fn send_to_a_dropped_receiver_returns_the_value_in_the_error() {
    let (tx, rx) = channel::<String>();
    drop(rx);
    let SendError(back) = tx.send(String::from("lost")).unwrap_err();
    assert_eq!(back, "lost");
}

/// std `recv`: "since channels are buffered, messages sent before the disconnect will still be
/// properly received"; after them `recv` returns `Err(RecvError)`.
#[test]
fn recv_drains_buffered_messages_then_reports_disconnection() {
    let (tx, rx) = channel();
    tx.send(1).unwrap();
    tx.send(2).unwrap();
    drop(tx);
    assert_eq!(rx.recv(), Ok(1));
    assert_eq!(rx.recv(), Ok(2));
    assert_eq!(rx.recv(), Err(RecvError));
}

/// std `recv`: "If the corresponding Sender has disconnected, or it disconnects while this call
/// is blocking, this call will wake up and return Err".
#[test]
fn blocked_recv_wakes_with_an_error_when_the_last_sender_is_dropped() {
    let (tx, rx) = channel::<u8>();
    let dropper = thread::spawn(move || drop(tx));
    assert_eq!(rx.recv(), Err(RecvError));
    dropper.join().unwrap();
}

/// std `recv`: "This function will always block the current thread if there is no data
/// available and it's possible for more data to be sent"; "Once a message is sent ... this
/// receiver will wake up and return that message."
#[test]
fn recv_blocks_until_a_message_is_sent() {
    let (tx, rx) = channel();
    let (back_tx, back_rx) = channel();
    let echo = thread::spawn(move || {
        let v: u32 = rx.recv().unwrap();
        back_tx.send(v * 2).unwrap();
    });
    tx.send(21).unwrap();
    assert_eq!(back_rx.recv(), Ok(42));
    echo.join().unwrap();
}

/// std `try_recv`: "This method will never block the caller in order to wait for data to
/// become available"; it has "two failure cases ... (one for disconnection, one for an empty
/// buffer)" — `Empty` while a sender lives, `Disconnected` once all are gone and the buffer
/// is drained.
#[test]
fn try_recv_distinguishes_empty_from_disconnected() {
    let (tx, rx) = channel();
    assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
    tx.send('a').unwrap();
    drop(tx);
    assert_eq!(rx.try_recv(), Ok('a'), "buffered data survives the disconnection");
    assert_eq!(rx.try_recv(), Err(TryRecvError::Disconnected));
}

/// std `recv_timeout`: waits for a value for at most the timeout — `Timeout` if none arrives
/// while a sender lives; a value already sent is returned.
#[test]
fn recv_timeout_times_out_without_a_message_and_returns_one_that_is_there() {
    let (tx, rx) = channel();
    assert_eq!(
        rx.recv_timeout(Duration::from_millis(20)),
        Err(RecvTimeoutError::Timeout)
    );
    tx.send(5).unwrap();
    assert_eq!(rx.recv_timeout(Duration::from_millis(20)), Ok(5));
}

/// std `recv_timeout`: "If the corresponding Sender has disconnected, or it disconnects while
/// this call is blocking, this call will wake up and return Err" — `Disconnected`, after the
/// buffered messages.
#[test]
fn recv_timeout_reports_disconnection_after_buffered_messages() {
    let (tx, rx) = channel();
    tx.send(1).unwrap();
    drop(tx);
    assert_eq!(rx.recv_timeout(Duration::from_secs(10)), Ok(1));
    assert_eq!(
        rx.recv_timeout(Duration::from_secs(10)),
        Err(RecvTimeoutError::Disconnected)
    );
}

/// std `channel`: "The Sender can be cloned to send to the same channel multiple times"; `recv`
/// blocks "while there is at least one Sender alive (including clones)", and `iter` "will
/// return None when the channel has hung up".
#[test]
fn iter_collects_from_cloned_senders_and_ends_when_all_are_dropped() {
    let (tx, rx) = channel();
    let handles: Vec<_> = (0..3u32)
        .map(|id| {
            let tx = tx.clone();
            thread::spawn(move || {
                for seq in 0..5u32 {
                    tx.send((id, seq)).unwrap();
                }
            })
        })
        .collect();
    drop(tx);
    let got: Vec<(u32, u32)> = rx.iter().collect();
    for h in handles {
        h.join().unwrap();
    }
    assert_eq!(got.len(), 15);
    for id in 0..3 {
        let seqs: Vec<u32> = got.iter().filter(|m| m.0 == id).map(|m| m.1).collect();
        assert_eq!(seqs, vec![0, 1, 2, 3, 4], "each sender's messages keep their order");
    }
}

/// std `channel`: the channel stays open while "at least one Sender [is] alive (including
/// clones)" — dropping the original leaves the clone able to send.
#[test]
fn dropping_one_sender_keeps_the_channel_open_for_its_clones() {
    let (tx, rx) = channel();
    let tx2 = tx.clone();
    drop(tx);
    assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
    tx2.send(3).unwrap();
    assert_eq!(rx.recv(), Ok(3));
    drop(tx2);
    assert_eq!(rx.recv(), Err(RecvError));
}

/// std `try_iter`: "Returns an iterator that will attempt to yield all pending values for a
/// receiver ... It will return None if there are no more pending values or if the channel has
/// hung up. The iterator will never panic! or block the user by waiting for values."
#[test]
fn try_iter_yields_pending_values_without_blocking() {
    let (tx, rx) = channel();
    for i in 0..3 {
        tx.send(i).unwrap();
    }
    let pending: Vec<i32> = rx.try_iter().collect();
    assert_eq!(pending, vec![0, 1, 2]);
    // The sender is still alive, yet the iterator ends rather than waits.
    assert_eq!(rx.try_iter().next(), None);
    tx.send(9).unwrap();
    assert_eq!(rx.try_iter().collect::<Vec<_>>(), vec![9]);
}

/// std: `&Receiver` and `Receiver` are `IntoIterator`, iterating as `iter` does — blocking for
/// messages and ending when the channel has hung up.
#[test]
fn receiver_iterates_by_reference_and_by_value_until_hang_up() {
    let (tx, rx) = channel();
    tx.send(1).unwrap();
    tx.send(2).unwrap();
    let mut by_ref = Vec::new();
    for v in &rx {
        by_ref.push(v);
        if by_ref.len() == 2 {
            break;
        }
    }
    assert_eq!(by_ref, vec![1, 2]);
    let producer = thread::spawn(move || {
        tx.send(3).unwrap();
        tx.send(4).unwrap();
    });
    let by_value: Vec<i32> = rx.into_iter().collect();
    assert_eq!(by_value, vec![3, 4]);
    producer.join().unwrap();
}
