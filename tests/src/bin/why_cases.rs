//! Small programs with e-blocks whose why-answers the tests pin, chosen by the first argument.
//! Each is deterministic: every channel has one sender, nothing reads a clock or randomness.
//!
//! * `chain`: `source` → `doubler` → `sink`, a value crossing three processes;
//! * `long N`: the same with N values (for benchmarks);
//! * `nested`: an e-block calling another (a sub-graph node), with a loop and branches;
//! * `loops`: a `while` loop whose counter depends on every earlier iteration;
//! * `deep N`: the same over N iterations in one instance, a chain N steps deep;
//! * `early`: an e-block that returns early from a guard clause;
//! * `shared`: two processes add to a counter under a `ppd` mutex, in e-blocks: the value each
//!   finds under the lock is logged with the acquisition (Miller & Choi's extra prelog of a
//!   synchronization unit, §5.5), so re-execution reproduces it whatever the interleaving;
//! * `leaky`: an e-block reading state ppd does not log (a `std` atomic), which re-execution
//!   cannot reproduce: a nondeterminism leak;
//! * `withdraw`: an atomicity violation: `alice` and `bob` each check the balance of
//!   `account` in one critical section and subtract in another; both checks come first, so
//!   both are approved and the balance goes negative;
//! * `relay`: a value carried through mutex `slot` by `first`, `second` and `third`;
//! * `flag`: a value carried through atomic `ready` by a Release store, an AcqRel
//!   read-modify-write and an Acquire load in three processes;
//! * `outside`: an e-block reading an atomic and a mutex that `main` wrote outside e-blocks.
//!
//! In the last four, unit messages order the processes and only shared memory carries values.

use std::sync::Arc;

use ppd::sync::Mutex;
use ppd::sync::atomic::{AtomicU64, Ordering};
use ppd::sync::mpsc::{Receiver, Sender, named_channel};
use serde::{Deserialize, Serialize};

#[ppd::eblock]
fn produce(seed: i64, out: &Sender<i64>) {
    let reading = seed * 10 + 3;
    out.send(reading).expect("doubler");
}

#[ppd::eblock]
fn double(input: &Receiver<i64>, out: &Sender<i64>) -> bool {
    let Ok(value) = input.recv() else {
        return false;
    };
    let doubled = value * 2;
    out.send(doubled).expect("sink");
    true
}

#[ppd::eblock]
fn absorb(input: &Receiver<i64>, total: &mut i64) -> bool {
    let Ok(value) = input.recv() else {
        return false;
    };
    *total += value;
    true
}

fn chain(values: i64) {
    let (to_doubler, doubler_in) = named_channel("readings");
    let (to_sink, sink_in) = named_channel("doubled");
    let source = ppd::thread::Builder::new()
        .name("source".into())
        .spawn(move || {
            for seed in 1..=values {
                produce(seed, &to_doubler);
            }
        })
        .expect("spawn");
    let doubler = ppd::thread::Builder::new()
        .name("doubler".into())
        .spawn(move || while double(&doubler_in, &to_sink) {})
        .expect("spawn");
    let sink = ppd::thread::Builder::new()
        .name("sink".into())
        .spawn(move || {
            let mut total = 0;
            while absorb(&sink_in, &mut total) {}
            total
        })
        .expect("spawn");
    source.join().expect("source");
    doubler.join().expect("doubler");
    println!("total = {}", sink.join().expect("sink"));
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct Report {
    top: i64,
    total: i64,
}

#[ppd::eblock]
fn best_of(values: &[i64]) -> i64 {
    let mut best = 0;
    for v in values {
        if *v > best {
            best = *v;
        }
    }
    best
}

#[ppd::eblock]
fn summarize(values: Vec<i64>, report: &mut Report) -> i64 {
    let top = best_of(&values);
    report.top = top;
    let bonus = if top > 5 { top * 2 } else { 0 };
    report.total = top + bonus;
    report.total
}

fn nested() {
    let mut report = Report::default();
    let total = summarize(vec![4, 9, 2, 7], &mut report);
    println!("total = {total}, top = {}", report.top);
}

#[ppd::eblock]
fn collatz_steps(start: u64) -> u64 {
    let mut steps = 0;
    let mut left = start;
    while left > 1 {
        if left.is_multiple_of(2) {
            left /= 2;
        } else {
            left = 3 * left + 1;
        }
        steps += 1;
    }
    steps
}

fn loops() {
    println!("steps = {}", collatz_steps(6));
}

#[ppd::eblock]
fn classify(x: i64) -> String {
    if x < 0 {
        return "negative".into();
    }
    let kind = if x % 2 == 0 { "even" } else { "odd" };
    kind.to_string()
}

fn early() {
    for x in [4, -3, 7] {
        println!("{x}: {}", classify(x));
    }
}

// `now` is the variable the tests ask about.
#[allow(clippy::let_and_return)]
#[ppd::eblock]
fn bump(counter: &ppd::sync::Mutex<i64>, by: i64) -> i64 {
    let mut guard = counter.lock().expect("not poisoned");
    *guard += by;
    let now = *guard;
    now
}

fn shared() {
    let counter = std::sync::Arc::new(ppd::sync::Mutex::new(0i64));
    let workers: Vec<_> = (1..=2)
        .map(|w| {
            let counter = std::sync::Arc::clone(&counter);
            ppd::thread::Builder::new()
                .name(format!("worker-{w}"))
                .spawn(move || {
                    for _ in 0..3 {
                        bump(&counter, w);
                    }
                })
                .expect("spawn")
        })
        .collect();
    for w in workers {
        w.join().expect("worker");
    }
    println!("counter = {}", *counter.lock().expect("not poisoned"));
}

/// Not a `ppd` atomic: its accesses are not logged.
static CALLS: std::sync::atomic::AtomicI64 = std::sync::atomic::AtomicI64::new(0);

#[ppd::eblock]
fn count_call(base: i64) -> i64 {
    let seen = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    base + seen
}

fn leaky() {
    println!("{} {}", count_call(10), count_call(10));
}

/// Whether the account can pay `amount`: the check, one critical section.
#[allow(clippy::let_and_return)]
#[ppd::eblock]
fn approve(account: &Mutex<i64>, amount: i64) -> bool {
    let guard = account.lock().expect("not poisoned");
    let enough = *guard >= amount;
    enough
}

/// Takes `amount` out: the subtraction, another critical section.
#[ppd::eblock]
fn withdraw(account: &Mutex<i64>, amount: i64) -> i64 {
    let mut guard = account.lock().expect("not poisoned");
    let new_balance = *guard - amount;
    *guard = new_balance;
    new_balance
}

fn withdraw_twice() {
    let account = Arc::new(Mutex::named("account", 100i64));
    let (checked, alice_checked) = named_channel::<()>("checked");
    let (paid, bob_paid) = named_channel::<()>("paid");
    let alice = {
        let account = Arc::clone(&account);
        ppd::thread::Builder::new()
            .name("alice".into())
            .spawn(move || {
                let approved = approve(&account, 80);
                checked.send(()).expect("bob");
                bob_paid.recv().expect("bob");
                if approved {
                    withdraw(&account, 80);
                }
            })
            .expect("spawn")
    };
    let bob = {
        let account = Arc::clone(&account);
        ppd::thread::Builder::new()
            .name("bob".into())
            .spawn(move || {
                alice_checked.recv().expect("alice");
                if approve(&account, 80) {
                    withdraw(&account, 80);
                }
                paid.send(()).expect("alice");
            })
            .expect("spawn")
    };
    alice.join().expect("alice");
    bob.join().expect("bob");
    println!("balance = {}", *account.lock().expect("not poisoned"));
}

#[ppd::eblock]
fn deposit(slot: &Mutex<i64>, seed: i64) {
    let mut guard = slot.lock().expect("not poisoned");
    *guard = seed * 10;
}

#[ppd::eblock]
fn add_on(slot: &Mutex<i64>, extra: i64) {
    let mut guard = slot.lock().expect("not poisoned");
    let seen = *guard;
    *guard = seen + extra;
}

#[allow(clippy::let_and_return)]
#[ppd::eblock]
fn take(slot: &Mutex<i64>) -> i64 {
    let guard = slot.lock().expect("not poisoned");
    let taken = *guard;
    taken
}

/// Runs `body` in a process named `name` after a unit message on `after`, then sends one on
/// `then`: the processes of a case run one after the other.
fn in_turn(
    name: &str,
    after: Option<Receiver<()>>,
    then: Option<Sender<()>>,
    body: impl FnOnce() + Send + 'static,
) -> ppd::thread::JoinHandle<()> {
    ppd::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            if let Some(after) = after {
                after.recv().expect("the process before");
            }
            body();
            if let Some(then) = then {
                then.send(()).expect("the process after");
            }
        })
        .expect("spawn")
}

fn relay() {
    let slot = Arc::new(Mutex::named("slot", 0i64));
    let (one, after_one) = named_channel("turn-1");
    let (two, after_two) = named_channel("turn-2");
    let handles = [
        in_turn("first", None, Some(one), {
            let slot = Arc::clone(&slot);
            move || deposit(&slot, 4)
        }),
        in_turn("second", Some(after_one), Some(two), {
            let slot = Arc::clone(&slot);
            move || add_on(&slot, 2)
        }),
        in_turn("third", Some(after_two), None, {
            let slot = Arc::clone(&slot);
            move || println!("taken = {}", take(&slot))
        }),
    ];
    for h in handles {
        h.join().expect("relay");
    }
}

#[ppd::eblock]
fn publish(ready: &AtomicU64, seed: u64) {
    let value = seed * 7;
    ready.store(value, Ordering::Release);
}

#[allow(clippy::let_and_return)]
#[ppd::eblock]
fn pass_on(ready: &AtomicU64, extra: u64) -> u64 {
    let before = ready.fetch_add(extra, Ordering::AcqRel);
    before
}

#[allow(clippy::let_and_return)]
#[ppd::eblock]
fn observe(ready: &AtomicU64) -> u64 {
    let seen = ready.load(Ordering::Acquire);
    seen
}

fn flag() {
    let ready = Arc::new(AtomicU64::named("ready", 0));
    let (one, after_one) = named_channel("turn-1");
    let (two, after_two) = named_channel("turn-2");
    let handles = [
        in_turn("publisher", None, Some(one), {
            let ready = Arc::clone(&ready);
            move || publish(&ready, 2)
        }),
        in_turn("forwarder", Some(after_one), Some(two), {
            let ready = Arc::clone(&ready);
            move || {
                pass_on(&ready, 3);
            }
        }),
        in_turn("observer", Some(after_two), None, {
            let ready = Arc::clone(&ready);
            move || println!("seen = {}", observe(&ready))
        }),
    ];
    for h in handles {
        h.join().expect("flag");
    }
}

#[ppd::eblock]
fn read_both(level: &AtomicU64, shelf: &Mutex<i64>) -> i64 {
    let low = level.load(Ordering::Acquire) as i64;
    let guard = shelf.lock().expect("not poisoned");
    let high = *guard;
    low + high
}

fn outside() {
    let level = Arc::new(AtomicU64::named("level", 0));
    let shelf = Arc::new(Mutex::named("shelf", 0i64));
    level.store(5, Ordering::Release);
    *shelf.lock().expect("not poisoned") = 9;
    let reader = in_turn("reader", None, None, {
        let (level, shelf) = (Arc::clone(&level), Arc::clone(&shelf));
        move || println!("both = {}", read_both(&level, &shelf))
    });
    reader.join().expect("reader");
}

#[ppd::eblock]
fn sum_down(start: u64) -> u64 {
    let mut left = start;
    let mut sum = 0;
    while left > 0 {
        sum += left;
        left -= 1;
    }
    sum
}

/// A handle that is not serde: an e-block still takes it, logged by its `Debug` form.
#[derive(Debug)]
struct Peer {
    name: &'static str,
}

/// `unlogged`: an e-block whose argument is not serde records and replays; `why` explains
/// what came from its serde argument and stops, saying so, at the one that was not logged.
fn unlogged() {
    let peer = Peer { name: "client-7" };
    println!("greeting = {}", greet(&peer, 3));
}

#[ppd::eblock]
fn greet(peer: &Peer, times: u32) -> String {
    let banner = peer.name.to_uppercase();
    let repeat = times * 2;
    format!("{banner} x{repeat}")
}

/// The state `serve` keeps under its lock.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Store {
    hits: u64,
}

/// `serve`: `client` writes two requests on a TCP connection; `server` answers each in
/// `serve_one`, which reads the line and, holding `store`'s lock, hands the store and the
/// trimmed line to the nested e-block `add`.
fn serve() {
    let store = Arc::new(Mutex::named("store", Store::default()));
    let listener = ppd::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("the listener's address");
    let server = in_turn("server", None, None, move || {
        let (conn, _) = listener.accept().expect("accept");
        for _ in 0..2 {
            println!("hits = {}", serve_one(&conn, &store));
        }
    });
    let client = in_turn("client", None, None, move || {
        let conn = ppd::net::TcpStream::connect(addr).expect("connect");
        for amount in [19, 20] {
            request(&conn, amount);
        }
    });
    client.join().expect("client");
    server.join().expect("server");
}

/// A request is 12 bytes: `PUT hits NN\n`.
const REQUEST_LEN: usize = 12;

#[ppd::eblock]
fn request(conn: &ppd::net::TcpStream, amount: u64) {
    use std::io::Write;
    let line = format!("PUT hits {amount}\n");
    let mut writer = conn;
    writer.write_all(line.as_bytes()).expect("the server");
}

// `hits` is the variable the tests ask about.
#[allow(clippy::let_and_return)]
#[ppd::eblock]
fn serve_one(conn: &ppd::net::TcpStream, store: &Mutex<Store>) -> u64 {
    use std::io::Read;
    let mut bytes = [0u8; REQUEST_LEN];
    let mut reader = conn;
    reader.read_exact(&mut bytes).expect("a request");
    let line = String::from_utf8_lossy(&bytes).to_string();
    let mut guard = store.lock().expect("not poisoned");
    let hits = add(&mut guard, line.trim());
    hits
}

#[ppd::eblock]
fn add(store: &mut Store, line: &str) -> u64 {
    let amount: u64 = line
        .rsplit(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    store.hits += amount;
    store.hits
}

/// `race`: `left` and `right` each send a vote on `votes`, neither waiting for the other;
/// `counter` adds the two up in `tally`. The total is always the same, but which vote came
/// first is the one order here that no message fixes: the first receive races.
fn race() {
    let (votes, ballot) = named_channel("votes");
    let voters: Vec<_> = [("left", 3), ("right", 4)]
        .into_iter()
        .map(|(name, weight)| {
            let votes = votes.clone();
            in_turn(name, None, None, move || vote(&votes, weight))
        })
        .collect();
    drop(votes);
    let counter = in_turn("counter", None, None, move || {
        println!("total = {}", tally(&ballot));
    });
    for voter in voters {
        voter.join().expect("voter");
    }
    counter.join().expect("counter");
}

#[ppd::eblock]
fn vote(votes: &Sender<u64>, weight: u64) {
    let cast = weight * 10;
    votes.send(cast).expect("the counter");
}

// `total` is the variable the tests ask about.
#[allow(clippy::let_and_return)]
#[ppd::eblock]
fn tally(ballot: &Receiver<u64>) -> u64 {
    let first = ballot.recv().expect("a vote");
    let second = ballot.recv().expect("a vote");
    let total = first + second;
    total
}

#[ppd::main]
fn main() {
    match std::env::args().nth(1).as_deref() {
        Some("chain") => chain(3),
        Some("long") => chain(
            std::env::args()
                .nth(2)
                .and_then(|n| n.parse().ok())
                .unwrap_or(1000),
        ),
        Some("nested") => nested(),
        Some("loops") => loops(),
        Some("deep") => {
            let rounds = std::env::args().nth(2).and_then(|n| n.parse().ok());
            println!("sum = {}", sum_down(rounds.unwrap_or(1000)));
        }
        Some("early") => early(),
        Some("shared") => shared(),
        Some("leaky") => leaky(),
        Some("withdraw") => withdraw_twice(),
        Some("relay") => relay(),
        Some("flag") => flag(),
        Some("outside") => outside(),
        Some("unlogged") => unlogged(),
        Some("serve") => serve(),
        Some("race") => race(),
        other => {
            eprintln!(
                "why_cases: unknown case {other:?} (chain, long N, nested, loops, deep N, early, \
                 shared, leaky, withdraw, relay, flag, outside, unlogged, serve, race)"
            );
            std::process::exit(2);
        }
    }
}
