//! Small message-passing protocols, one per scenario (the first argument names it), with marks
//! and e-block sections at the points `ppd check` is asked about. The static verdicts on every
//! pair of them are set against recorded runs (`tests/tests/check.rs`): a pair `ppd check`
//! calls impossible must never hold in any run. Random pauses (logged, so replay repeats
//! them) vary the interleaving from run to run.

use std::time::Duration;

use ppd::sync::mpsc::channel;
use ppd::thread::Builder;

fn pause() {
    ppd::thread::sleep(Duration::from_micros(ppd::rand::u64(0..300)));
}

#[ppd::eblock]
fn section(k: u64) -> u64 {
    pause();
    k
}

/// A client asks, a server answers; each works in a section before and after.
fn request_response() {
    let (req_tx, req_rx) = channel::<u64>();
    let (resp_tx, resp_rx) = channel::<u64>();
    let server = Builder::new()
        .name("server".into())
        .spawn(move || {
            ppd::mark!("s_start");
            let r = req_rx.recv().unwrap();
            ppd::mark!("s_got");
            section(r);
            resp_tx.send(r + 1).unwrap();
            ppd::mark!("s_sent");
        })
        .unwrap();
    let client = Builder::new()
        .name("client".into())
        .spawn(move || {
            ppd::mark!("c_start");
            pause();
            section(1);
            req_tx.send(1).unwrap();
            ppd::mark!("c_sent");
            let v = resp_rx.recv().unwrap();
            ppd::mark!("c_got");
            section(v);
        })
        .unwrap();
    server.join().unwrap();
    client.join().unwrap();
    ppd::mark!("m_end");
}

/// A boss sends four jobs; the worker acknowledges the even ones.
fn conditional_ack() {
    let (tx, rx) = channel::<u64>();
    let (ack_tx, ack_rx) = channel::<u64>();
    let worker = Builder::new()
        .name("worker".into())
        .spawn(move || {
            for _ in 0..4 {
                let v = rx.recv().unwrap();
                ppd::mark!("w_got");
                if v % 2 == 0 {
                    ack_tx.send(v).unwrap();
                    ppd::mark!("w_acked");
                }
            }
            ppd::mark!("w_done");
        })
        .unwrap();
    let boss = Builder::new()
        .name("boss".into())
        .spawn(move || {
            ppd::mark!("b_start");
            for i in 0..4 {
                pause();
                tx.send(i).unwrap();
            }
            ppd::mark!("b_sent");
            ack_rx.recv().unwrap();
            ppd::mark!("b_acked");
            ack_rx.recv().unwrap();
            ppd::mark!("b_acked_twice");
        })
        .unwrap();
    worker.join().unwrap();
    boss.join().unwrap();
}

/// A poller that never blocks: its `try_recv` guarantees the analysis nothing.
fn polling() {
    let (tx, rx) = channel::<u64>();
    let poller = Builder::new()
        .name("poller".into())
        .spawn(move || {
            let mut got = 0;
            while got == 0 {
                match rx.try_recv() {
                    Ok(v) => got = v,
                    Err(_) => pause(),
                }
            }
            ppd::mark!("p_got");
            section(got);
        })
        .unwrap();
    let sender = Builder::new()
        .name("sender".into())
        .spawn(move || {
            section(7);
            ppd::mark!("x_before");
            tx.send(7).unwrap();
            ppd::mark!("x_after");
        })
        .unwrap();
    poller.join().unwrap();
    sender.join().unwrap();
}

/// Three stages: what the first does before it sends is over before the last receives.
fn relay() {
    let (ab_tx, ab_rx) = channel::<u64>();
    let (bc_tx, bc_rx) = channel::<u64>();
    let a = Builder::new()
        .name("a".into())
        .spawn(move || {
            section(1);
            ppd::mark!("a_before");
            ab_tx.send(1).unwrap();
            ppd::mark!("a_after");
        })
        .unwrap();
    let b = Builder::new()
        .name("b".into())
        .spawn(move || {
            ppd::mark!("b_start");
            let v = ab_rx.recv().unwrap();
            ppd::mark!("b_mid");
            pause();
            bc_tx.send(v).unwrap();
        })
        .unwrap();
    let c = Builder::new()
        .name("c".into())
        .spawn(move || {
            ppd::mark!("c_start");
            bc_rx.recv().unwrap();
            ppd::mark!("c_got");
            section(3);
        })
        .unwrap();
    a.join().unwrap();
    b.join().unwrap();
    c.join().unwrap();
}

/// The parent's work before a spawn and after a join.
fn spawn_join() {
    ppd::mark!("m_before");
    section(0);
    let child = Builder::new()
        .name("child".into())
        .spawn(|| {
            ppd::mark!("k_inside");
            section(1);
        })
        .unwrap();
    ppd::mark!("m_during");
    child.join().unwrap();
    ppd::mark!("m_after");
}

/// A loop that ends on a message, and a controller that waits for it to end.
fn stop_message() {
    let (tx, rx) = channel::<u64>();
    let (done_tx, done_rx) = channel::<u64>();
    let looper = Builder::new()
        .name("looper".into())
        .spawn(move || {
            loop {
                match rx.recv() {
                    Ok(0) | Err(_) => break,
                    Ok(_) => ppd::mark!("l_item"),
                }
            }
            ppd::mark!("l_end");
            done_tx.send(1).unwrap();
        })
        .unwrap();
    let ctl = Builder::new()
        .name("ctl".into())
        .spawn(move || {
            for i in (0..3).rev() {
                pause();
                tx.send(i).unwrap();
            }
            ppd::mark!("c_sent_all");
            done_rx.recv().unwrap();
            ppd::mark!("c_done");
        })
        .unwrap();
    looper.join().unwrap();
    ctl.join().unwrap();
}

/// Two messages on one channel: the first receive can only get the first send's message.
fn two_messages() {
    let (tx, rx) = channel::<u64>();
    let producer = Builder::new()
        .name("producer".into())
        .spawn(move || {
            ppd::mark!("q_first");
            tx.send(1).unwrap();
            section(1);
            ppd::mark!("q_between");
            tx.send(2).unwrap();
            ppd::mark!("q_after");
        })
        .unwrap();
    let consumer = Builder::new()
        .name("consumer".into())
        .spawn(move || {
            ppd::mark!("r_start");
            rx.recv().unwrap();
            ppd::mark!("r_one");
            rx.recv().unwrap();
            ppd::mark!("r_two");
            section(2);
        })
        .unwrap();
    producer.join().unwrap();
    consumer.join().unwrap();
}

#[ppd::main]
fn main() {
    let which = std::env::args().nth(1).unwrap_or_default();
    match which.as_str() {
        "request_response" => request_response(),
        "conditional_ack" => conditional_ack(),
        "polling" => polling(),
        "relay" => relay(),
        "spawn_join" => spawn_join(),
        "stop_message" => stop_message(),
        "two_messages" => two_messages(),
        other => panic!("no scenario {other:?}"),
    }
}
