//! Programs that check `ppd::channel` answers as crossbeam-channel does, chosen by the first
//! argument; each prints what each operation answered, which is the same in every mode
//! (run alone, recorded, replayed):
//!
//! * `rendezvous-try-send`: a `try_send` on a `bounded(0)` channel answers `Full` while no
//!   receive waits, and succeeds once a receiver waits in `recv` (it takes the message);
//! * `disconnected`: once the only receiver is gone, `send`, `try_send` and `send_timeout`
//!   fail and give the message back, on a rendezvous, a bounded and an unbounded channel;
//! * `send-timeout`: a `send_timeout` on a full bounded channel and on a rendezvous channel
//!   nobody receives from times out and gives the message back; the next message is the one
//!   received;
//! * `timers`: `after`, `at` and `tick` deliver the instant they were due, a tick taken late
//!   is due next a period after it was taken, and a timer whose delivery was taken is empty;
//! * `select-forms`: every form of `select!` arm crossbeam's accepts: a block body followed
//!   by a comma, trailing commas in an operation's arguments, `default()`, a `select!` of a
//!   default alone, and a receiver made by an expression with temporaries in it;
//! * `biased`: `select_biased!` and `Select::new_biased` choose the first of the operations
//!   that can proceed, receives and sends alike; a cloned `Select` has the operations of the
//!   one it was cloned from;
//! * `non-send`: messages that are not `Send` (`Rc`, `Box<dyn Any>`) go through channels used
//!   on one thread, with both crossbeam's and std's API, and channels of messages that are
//!   `Send` but not `Sync` have ends that are both;
//! * `far-timers`: an `after` or `tick` due past the end of time is `never`, and a timer's
//!   receive with a timeout too long to have an end waits for the timer;
//! * `select-remove`: a `Select`'s operations, timers among them, can be removed, the others
//!   keeping their indexes; `ready_deadline` gives up at its deadline;
//! * `timer-fairness`: an unbiased selection among due timers and ready channels chooses each
//!   of them in turn, never always the same one;
//! * `shared-timers`: workers race to take the deliveries of timers they share (clones of
//!   `after` receivers, and of one `tick`); each delivery goes to one of them, and replay
//!   gives each the ones it took;
//! * `send-waits-disconnect`: a rendezvous send waiting for a receive (in `send` and in a
//!   `select!`) fails, giving its message back, when the receiver goes away instead;
//! * `select-matching`: workers each select between receiving from and sending on one
//!   rendezvous channel; they pair up, half sending and half receiving, none left waiting;
//! * `ready-send`: a selection says which of two rendezvous channels a receive waits on, and
//!   a `try_send` there succeeds, round after round, while the receiver takes turns between
//!   them: a receive that has taken its message no longer counts as waiting;
//! * `ready-recv`: a selection in `ready` on a rendezvous receive wakes for a send that waits
//!   there (in `send` or a `select!`), not for `try_send`s that found no receive waiting (a
//!   selection in `ready` is not one), so the `try_recv` after it always gets the message.

use std::time::Duration;

use ppd::channel::{self, SendError, SendTimeoutError, TrySendError};
use ppd::time::Instant;

fn spawn<T: Send + 'static, F: FnOnce() -> T + Send + 'static>(
    name: &str,
    f: F,
) -> ppd::thread::JoinHandle<T> {
    ppd::thread::Builder::new()
        .name(name.to_owned())
        .spawn(f)
        .expect("spawn")
}

const MS: Duration = Duration::from_millis(1);

/// `try_send`s `value` until it is taken, for a while; whether it was.
fn try_send_until_taken(s: &channel::Sender<u32>, value: u32) -> bool {
    for _ in 0..1000 {
        match s.try_send(value) {
            Ok(()) => return true,
            Err(TrySendError::Full(_)) => ppd::thread::sleep(5 * MS),
            Err(TrySendError::Disconnected(_)) => return false,
        }
    }
    false
}

fn rendezvous_try_send() {
    let (s, r) = channel::bounded::<u32>(0);
    println!(
        "alone: full, message back: {}",
        matches!(s.try_send(1), Err(TrySendError::Full(1)))
    );
    let receiver = spawn("receiver", move || {
        println!("received: {:?}", r.recv());
        // Now waiting in a selection, beside a channel nothing is sent on.
        let (_quiet, nothing) = channel::unbounded::<u32>();
        ppd::select! {
            recv(r) -> got => println!("selected: {got:?}"),
            recv(nothing) -> _ => unreachable!("nothing is sent"),
        }
    });
    // The receiver gets to its `recv` and waits there; until it does, `Full`.
    println!(
        "taken by the waiting receive: {}",
        try_send_until_taken(&s, 2)
    );
    println!(
        "taken by the waiting selection: {}",
        try_send_until_taken(&s, 3)
    );
    // Were it not taken, the selection ends when the channel is disconnected.
    drop(s);
    receiver.join().expect("receiver");
}

fn disconnected() {
    let (s0, r0) = channel::bounded::<u32>(0);
    let (s1, r1) = channel::bounded::<u32>(1);
    let (su, ru) = channel::unbounded::<u32>();
    // Dropped on another thread, which has ended before the sends.
    spawn("receiver", move || drop((r0, r1, ru)))
        .join()
        .expect("receiver");
    for (name, s) in [("rendezvous", &s0), ("bounded", &s1), ("unbounded", &su)] {
        let sent = s.send(1);
        println!("{name} send: {}", matches!(sent, Err(SendError(1))));
        let tried = s.try_send(2);
        println!(
            "{name} try_send: {}",
            matches!(tried, Err(TrySendError::Disconnected(2)))
        );
        let timed = s.send_timeout(3, 50 * MS);
        println!(
            "{name} send_timeout: {}",
            matches!(timed, Err(SendTimeoutError::Disconnected(3)))
        );
    }
}

fn send_timeout() {
    let (s, r) = channel::bounded::<u32>(1);
    s.send(1).expect("room");
    let start = Instant::now();
    let late = s.send_timeout(7, 100 * MS);
    println!(
        "full: timed out, message back: {}, waited the timeout: {}",
        matches!(late, Err(SendTimeoutError::Timeout(7))),
        start.elapsed() >= 100 * MS
    );
    println!("then: {:?} {:?}", r.recv(), r.try_recv());

    let (s, r) = channel::bounded::<u32>(0);
    let (go, wait_for_go) = channel::bounded::<()>(1);
    let receiver = spawn("receiver", move || {
        // Told when the timed send has returned; should it never return, after a while.
        let _ = wait_for_go.recv_timeout(5000 * MS);
        println!("rendezvous then: {:?}", r.recv());
    });
    let start = Instant::now();
    let late = s.send_timeout(7, 100 * MS);
    println!(
        "rendezvous: timed out, message back: {}, waited the timeout: {}",
        matches!(late, Err(SendTimeoutError::Timeout(7))),
        start.elapsed() >= 100 * MS
    );
    go.send(()).expect("room");
    println!("rendezvous send: {:?}", s.send(8));
    receiver.join().expect("receiver");
}

fn timers() {
    // A timer is due `duration` after the moment it was made, somewhere between these two
    // readings of the clock; what it delivers is that due instant, not when it was received.
    let before = Instant::now();
    let after = channel::after(50 * MS);
    let made = Instant::now();
    ppd::thread::sleep(100 * MS);
    let fired = after.recv().expect("after delivers");
    println!(
        "after: delivered its due instant: {}",
        before + 50 * MS <= fired && fired <= made + 50 * MS
    );
    println!("after: once: {}", after.try_recv().is_err());

    let when = Instant::now() + 20 * MS;
    let at = channel::at(when);
    ppd::thread::sleep(40 * MS);
    println!("at: delivered its instant: {}", at.recv() == Ok(when));

    let before = Instant::now();
    let tick = channel::tick(50 * MS);
    let made = Instant::now();
    let t1 = tick.recv().expect("a tick");
    println!(
        "tick 1: delivered its due instant: {}",
        before + 50 * MS <= t1 && t1 <= made + 50 * MS
    );
    ppd::thread::sleep(200 * MS);
    println!("tick due: len {} full {}", tick.len(), tick.is_full());
    let taken_at = Instant::now();
    let t2 = tick.try_recv().expect("a late tick");
    println!("tick 2: delivered its due instant: {}", t2 == t1 + 50 * MS);
    println!(
        "tick taken: len {} empty {} again {}",
        tick.len(),
        tick.is_empty(),
        tick.try_recv().is_ok()
    );
    let t3 = tick.recv().expect("a tick");
    println!(
        "tick 3: a period after the late one was taken: {}",
        t3 >= taken_at + 50 * MS
    );
}

fn select_forms() {
    let (s, r) = channel::unbounded::<u32>();
    s.send(1).expect("unbounded");
    let mut got = None;
    // A block body, then a comma.
    ppd::select! {
        recv(r) -> m => { got = m.ok(); },
        default => {},
    }
    println!("block and comma: {got:?}");

    // Trailing commas in the arguments; `default()`.
    let sent = ppd::select! {
        send(s, 2,) -> res => res.is_ok(),
        default() => false,
    };
    let taken = ppd::select! {
        recv(r,) -> m => m.ok(),
        default(Duration::from_millis(50),) => None,
    };
    println!("trailing commas: {sent} {taken:?}");

    // Nothing but a default.
    let alone = ppd::select! { default => "default" };
    let start = Instant::now();
    ppd::select! { default(20 * MS) => {} }
    println!(
        "default alone: {alone}, timeout waited: {}",
        start.elapsed() >= 20 * MS
    );

    // The receiver is an expression whose temporary (`never()`) must live through the
    // selection.
    let mut picked = Vec::new();
    for maybe in [None, Some(&r)] {
        if maybe.is_some() {
            s.send(3).expect("unbounded");
        }
        picked.push(ppd::select! {
            recv(maybe.unwrap_or(&channel::never())) -> m => m.ok(),
            default(20 * MS) => None,
        });
    }
    println!("temporaries: {picked:?}");
}

fn biased() {
    let (s1, r1) = channel::unbounded::<u32>();
    let (s2, r2) = channel::unbounded::<u32>();
    let mut firsts = 0;
    for i in 0..20 {
        s1.send(i).expect("unbounded");
        s2.send(i).expect("unbounded");
        let first = ppd::select_biased! {
            recv(r1) -> m => m.is_ok(),
            recv(r2) -> _ => false,
        };
        firsts += usize::from(first);
        r2.recv().expect("sent");
    }
    println!("select_biased!: the first receive, {firsts} times of 20");

    let (out, out_r) = channel::bounded::<u32>(1);
    s1.send(1).expect("unbounded");
    let send_first = ppd::select_biased! {
        send(out, 7) -> res => res.map(|()| "send"),
        recv(r1) -> m => m.map(|_| "recv").map_err(|_| channel::SendError(0)),
    };
    let sent = out_r.try_recv();
    s1.send(2).expect("unbounded");
    let recv_first = ppd::select_biased! {
        recv(r1) -> m => m.map(|_| "recv").map_err(|_| channel::SendError(0)),
        send(out, 8) -> res => res.map(|()| "send"),
    };
    println!("select_biased!, sends too: {send_first:?} {sent:?} {recv_first:?}");

    s2.send(5).expect("unbounded");
    s1.send(6).expect("unbounded");
    let mut sel = channel::Select::new_biased();
    let second = sel.recv(&r2);
    sel.recv(&r1);
    let op = sel.select();
    let index = op.index();
    println!(
        "new_biased: first added: {} {:?}",
        index == second,
        op.recv(&r2)
    );
    let mut copy = sel.clone();
    let op = copy.select();
    println!("cloned: {} {:?}", op.index(), op.recv(&r1));
}

/// Compiles only for `Send` types.
fn is_send<T: Send>() {}
/// Compiles only for `Sync` types.
fn is_sync<T: Sync>() {}

fn non_send() {
    let (s, r) = channel::bounded::<std::rc::Rc<u32>>(1);
    s.send(std::rc::Rc::new(4)).expect("room");
    println!("rc: {:?}", r.recv().map(|rc| *rc));

    let (s, r) = channel::unbounded::<Box<dyn std::any::Any>>();
    s.send(Box::new("any")).expect("unbounded");
    let got = r.recv().expect("sent");
    println!("any: {:?}", got.downcast_ref::<&str>());

    let (tx, rx) = ppd::sync::mpsc::channel::<std::rc::Rc<u32>>();
    tx.send(std::rc::Rc::new(5)).expect("receiver");
    let (stx, srx) = ppd::sync::mpsc::sync_channel::<std::rc::Rc<u32>>(1);
    stx.try_send(std::rc::Rc::new(6)).expect("room");
    println!(
        "std: {:?} {:?}",
        rx.recv().map(|rc| *rc),
        srx.recv().map(|rc| *rc)
    );

    // `Cell` is `Send` but not `Sync`: the ends of its channels are both, as crossbeam's are.
    is_send::<channel::Sender<std::cell::Cell<u32>>>();
    is_sync::<channel::Sender<std::cell::Cell<u32>>>();
    is_send::<channel::Receiver<std::cell::Cell<u32>>>();
    is_sync::<channel::Receiver<std::cell::Cell<u32>>>();
    is_send::<ppd::sync::mpsc::Sender<std::cell::Cell<u32>>>();
    is_send::<ppd::sync::mpsc::Receiver<std::cell::Cell<u32>>>();
    let (s, r) = channel::unbounded::<std::cell::Cell<u32>>();
    spawn("sender", move || {
        s.send(std::cell::Cell::new(7)).expect("receiver")
    })
    .join()
    .expect("sender");
    println!("cell: {:?}", r.recv().map(|c| c.get()));
}

fn far_timers() {
    let after = channel::after(Duration::MAX);
    let tick = channel::tick(Duration::MAX);
    println!(
        "past the end of time: never {} {}, empty {:?} {:?}",
        after.same_channel(&channel::never()),
        tick.same_channel(&channel::never()),
        after.try_recv(),
        tick.try_recv()
    );
    let when = Instant::now() + 10 * MS;
    println!(
        "endless timeout: {} {}",
        channel::at(when).recv_timeout(Duration::MAX) == Ok(when),
        channel::tick(10 * MS).recv_timeout(Duration::MAX).is_ok()
    );
}

fn select_remove() {
    let (s1, r1) = channel::unbounded::<u32>();
    let (s2, r2) = channel::unbounded::<u32>();
    let due = channel::after(Duration::ZERO);
    let mut sel = channel::Select::new();
    let first = sel.recv(&r1);
    let timer = sel.recv(&due);
    let last = sel.recv(&r2);
    sel.remove(first);
    sel.remove(timer);
    s1.send(1).expect("unbounded");
    s2.send(2).expect("unbounded");
    let op = sel.select();
    println!(
        "removed: chose the one left: {} {:?}",
        op.index() == last,
        op.recv(&r2)
    );
    let (_quiet, nothing) = channel::unbounded::<u32>();
    let mut sel = channel::Select::new();
    sel.recv(&nothing);
    let deadline = std::time::Instant::now() + 20 * MS;
    println!(
        "ready_deadline: {:?}",
        sel.ready_deadline(deadline).is_err()
    );
    println!("the removed receive's message stays: {:?}", r1.try_recv());
}

fn timer_fairness() {
    const ROUNDS: usize = 100;
    let mut hits = [0usize; 2];
    for _ in 0..ROUNDS {
        ppd::select! {
            recv(channel::after(Duration::ZERO)) -> _ => hits[0] += 1,
            recv(channel::after(Duration::ZERO)) -> _ => hits[1] += 1,
        }
    }
    println!(
        "two due timers: each chosen at least a quarter of the time: {}",
        hits.iter().all(|&n| n >= ROUNDS / 4)
    );

    let (s, r) = channel::unbounded::<()>();
    let mut hits = [0usize; 3];
    for _ in 0..ROUNDS {
        s.send(()).expect("unbounded");
        let due = channel::after(Duration::ZERO);
        let tick = channel::tick(Duration::ZERO);
        ppd::thread::sleep(MS);
        ppd::select! {
            recv(r) -> _ => hits[0] += 1,
            recv(due) -> _ => hits[1] += 1,
            recv(tick) -> _ => hits[2] += 1,
        }
        let _ = r.try_recv();
    }
    println!(
        "a channel and two due timers: each chosen at least a sixth of the time: {}",
        hits.iter().all(|&n| n >= ROUNDS / 6)
    );
}

fn shared_timers() {
    const TIMERS: usize = 2000;
    const WORKERS: usize = 4;
    let timers: Vec<channel::Receiver<Instant>> = (0..TIMERS)
        .map(|_| channel::after(Duration::ZERO))
        .collect();
    let tick = channel::tick(Duration::ZERO);
    let start = std::sync::Arc::new(ppd::sync::Barrier::new(WORKERS));
    let workers: Vec<_> = (0..WORKERS)
        .map(|w| {
            let timers = timers.clone();
            let tick = tick.clone();
            let start = std::sync::Arc::clone(&start);
            spawn(&format!("worker {w}"), move || {
                start.wait();
                let mut took = 0;
                let mut ticks = 0;
                for timer in &timers {
                    took += usize::from(timer.try_recv().is_ok());
                    ticks += usize::from(tick.try_recv().is_ok());
                }
                // Which worker took how many is the run's; replay must print the same.
                println!("worker {w} took {took} deliveries and {ticks} ticks");
                took
            })
        })
        .collect();
    let total: usize = workers.into_iter().map(|w| w.join().expect("worker")).sum();
    println!("every delivery taken once: {}", total == TIMERS);
}

/// Waits a while, on a channel nothing is sent on (a receive that times out, not a sleep).
fn pause() {
    let (_quiet, nothing) = channel::unbounded::<()>();
    let _ = nothing.recv_timeout(100 * MS);
}

fn send_waits_disconnect() {
    let (s, r) = channel::bounded::<u32>(0);
    let dropper = spawn("dropper", move || {
        pause();
        drop(r);
    });
    println!("send: {:?}", s.send(1).map_err(|e| e.into_inner()));
    dropper.join().expect("dropper");

    let (tx, rx) = ppd::sync::mpsc::sync_channel::<u32>(0);
    let dropper = spawn("dropper", move || {
        pause();
        drop(rx);
    });
    println!("std send: {:?}", tx.send(2).map_err(|e| e.0));
    dropper.join().expect("dropper");

    let (s, r) = channel::bounded::<u32>(0);
    let dropper = spawn("dropper", move || {
        pause();
        drop(r);
    });
    let selected = ppd::select! {
        send(s, 3) -> res => res.map_err(|e| e.into_inner()),
    };
    println!("select send: {selected:?}");
    dropper.join().expect("dropper");
}

fn select_matching() {
    const WORKERS: u32 = 8;
    let (s, r) = channel::bounded::<u32>(0);
    let (done, finished) = channel::unbounded::<bool>();
    let mut workers = Vec::new();
    for w in 0..WORKERS {
        let (s, r, done) = (s.clone(), r.clone(), done.clone());
        workers.push(spawn(&format!("worker {w}"), move || {
            let sent = ppd::select! {
                recv(r) -> got => {
                    assert_ne!(got, Ok(w), "a worker received its own message");
                    false
                }
                send(s, w) -> res => res.is_ok(),
            };
            done.send(sent).expect("main waits");
        }));
    }
    let mut sent = 0;
    for _ in 0..WORKERS {
        // Should the workers fail to pair up, they wait for ever: say so and stop.
        match finished.recv_timeout(10_000 * MS) {
            Ok(s) => sent += u32::from(s),
            Err(_) => {
                println!("the workers did not pair up");
                std::process::exit(1);
            }
        }
    }
    for worker in workers {
        worker.join().expect("worker");
    }
    println!("paired: {} sent, {} received", sent, WORKERS - sent);
}

fn ready_send() {
    const ROUNDS: u32 = 2000;
    let (s1, r1) = channel::bounded::<u32>(0);
    let (s2, r2) = channel::bounded::<u32>(0);
    let (done, finished) = channel::bounded::<()>(1);
    // Should a send wait for a receive that is not coming, nothing else would end the run.
    let watchdog = spawn("watchdog", move || {
        if finished.recv_timeout(60_000 * MS).is_err() {
            println!("a send waited for a receive that was not coming");
            std::process::exit(1);
        }
    });
    let receiver = spawn("receiver", move || {
        for i in 0..ROUNDS {
            assert_eq!(r1.recv(), Ok(i));
            assert_eq!(r2.recv(), Ok(i));
        }
    });
    let mut sent = 0;
    for i in 0..ROUNDS {
        for _ in 0..2 {
            let mut sel = channel::Select::new();
            sel.send(&s1);
            sel.send(&s2);
            let ok = match sel.ready() {
                0 => s1.try_send(i).is_ok(),
                _ => s2.try_send(i).is_ok(),
            };
            sent += u32::from(ok);
        }
    }
    receiver.join().expect("receiver");
    done.send(()).expect("watchdog");
    watchdog.join().expect("watchdog");
    println!(
        "every try_send the selection said was ready succeeded: {}",
        sent == 2 * ROUNDS
    );
}

fn ready_recv() {
    const ROUNDS: u32 = 500;
    const TRIES: u32 = 20;
    let (s, r) = channel::bounded::<u32>(0);
    let waiter = spawn("waiter", move || {
        let mut empty = 0;
        for i in 0..ROUNDS {
            loop {
                let mut sel = channel::Select::new();
                sel.recv(&r);
                sel.ready();
                match r.try_recv() {
                    Ok(got) => {
                        assert_eq!(got, i);
                        break;
                    }
                    Err(_) => empty += 1,
                }
            }
        }
        empty
    });
    let mut taken = 0;
    for i in 0..ROUNDS {
        for _ in 0..TRIES {
            taken += u32::from(s.try_send(i).is_ok());
        }
        // A waiting send of either kind wakes the waiter: in `send`, and in a selection.
        if i % 2 == 0 {
            s.send(i).expect("the waiter receives every round");
        } else {
            channel::select! {
                send(s, i) -> sent => sent.expect("the waiter receives every round"),
            }
        }
    }
    let empty = waiter.join().expect("waiter");
    println!("try_sends taken: {taken}");
    println!("receives after ready that found nothing: {empty}");
}

#[ppd::main]
fn main() {
    match std::env::args().nth(1).as_deref() {
        Some("rendezvous-try-send") => rendezvous_try_send(),
        Some("disconnected") => disconnected(),
        Some("send-timeout") => send_timeout(),
        Some("timers") => timers(),
        Some("select-forms") => select_forms(),
        Some("biased") => biased(),
        Some("non-send") => non_send(),
        Some("far-timers") => far_timers(),
        Some("select-remove") => select_remove(),
        Some("timer-fairness") => timer_fairness(),
        Some("shared-timers") => shared_timers(),
        Some("send-waits-disconnect") => send_waits_disconnect(),
        Some("select-matching") => select_matching(),
        Some("ready-send") => ready_send(),
        Some("ready-recv") => ready_recv(),
        other => {
            eprintln!("unknown case {other:?}");
            std::process::exit(2);
        }
    }
}
