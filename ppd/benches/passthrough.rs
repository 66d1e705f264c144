//! What each ppd primitive costs when nothing is recorded, next to std's (and crossbeam's): one
//! operation at a time, on one thread.
//!
//! ```sh
//! cargo bench -p ppd --bench passthrough               # every operation
//! cargo bench -p ppd --bench passthrough -- mutex      # operations whose name contains a word
//! ```
//!
//! The overhead bench (`--bench overhead`) runs whole programs with several processes, where
//! contention and scheduling spread a run's time over a wide range from one run to the next;
//! a pass-through layer that adds a nanosecond disappears in that noise. Here each operation
//! runs uncontended in a loop on the bench's own thread, written once and compiled twice — with
//! std's types and with ppd's — so the difference between the two loops is ppd's layer. A round
//! times both loops back to back (in alternating order); the report gives each loop's median
//! time per operation over the rounds and the median of the per-round ratios.
//!
//! No `PPD_MODE` is set: every ppd type runs in pass-through mode, as in a program run without
//! `ppd record`. Run as a test (`cargo test --benches`) it only checks that every loop runs.

use std::hint::black_box;
use std::time::{Duration, Instant};

/// Rounds in a full run.
const ROUNDS: usize = 15;
/// How long one loop should run in a full run, to calibrate its iteration count.
const TARGET: Duration = Duration::from_millis(20);

/// `n` selections between a channel holding a message and an empty one, made with `$channel`
/// (an unbounded channel of `u64`s' constructor) and `$select` (a selection type).
macro_rules! select_loop {
    ($n:expr, $channel:expr, $select:ty) => {{
        let (tx, rx) = $channel();
        let (_other_tx, other) = $channel();
        let mut sum = 0u64;
        for i in 0..$n {
            tx.send(i).unwrap();
            let mut sel = <$select>::new();
            let mine = sel.recv(&rx);
            sel.recv(&other);
            let op = sel.select();
            assert_eq!(op.index(), mine);
            sum = sum.wrapping_add(op.recv(&rx).unwrap());
        }
        sum
    }};
}

/// Writes every operation's loop against the names in scope where it expands: once for std,
/// once for ppd.
macro_rules! loops {
    () => {
        use std::sync::Arc;

        pub(crate) fn mutex_lock(n: u64) -> u64 {
            let m = Mutex::new(0u64);
            for i in 0..n {
                *m.lock().unwrap() += i;
            }
            m.into_inner().unwrap()
        }

        pub(crate) fn mutex_try_lock(n: u64) -> u64 {
            let m = Mutex::new(0u64);
            for i in 0..n {
                if let Ok(mut g) = m.try_lock() {
                    *g += i;
                }
            }
            m.into_inner().unwrap()
        }

        pub(crate) fn rwlock_read(n: u64) -> u64 {
            let l = RwLock::new(7u64);
            let mut sum = 0u64;
            for _ in 0..n {
                sum = sum.wrapping_add(*black_box(&l).read().unwrap());
            }
            sum
        }

        pub(crate) fn rwlock_write(n: u64) -> u64 {
            let l = RwLock::new(0u64);
            for i in 0..n {
                *l.write().unwrap() += i;
            }
            l.into_inner().unwrap()
        }

        pub(crate) fn atomic_fetch_add(n: u64) -> u64 {
            let a = AtomicU64::new(0);
            for i in 0..n {
                black_box(&a).fetch_add(i, Ordering::AcqRel);
            }
            a.load(Ordering::Acquire)
        }

        pub(crate) fn atomic_load_store(n: u64) -> u64 {
            let a = AtomicU64::new(1);
            let mut sum = 0u64;
            for i in 0..n {
                let a = black_box(&a);
                sum = sum.wrapping_add(a.load(Ordering::Acquire));
                a.store(i, Ordering::Release);
            }
            sum
        }

        pub(crate) fn atomic_compare_exchange(n: u64) -> u64 {
            let a = AtomicU64::new(0);
            for i in 0..n {
                let _ =
                    black_box(&a).compare_exchange(i, i + 1, Ordering::AcqRel, Ordering::Acquire);
            }
            a.load(Ordering::Acquire)
        }

        pub(crate) fn atomic_ptr_swap(n: u64) -> u64 {
            let mut slots = [0u64; 2];
            let (a, b) = slots.split_at_mut(1);
            let (pa, pb): (*mut u64, *mut u64) = (&mut a[0], &mut b[0]);
            let p = AtomicPtr::new(pa);
            let mut flips = 0u64;
            for _ in 0..n {
                let old = black_box(&p).swap(pb, Ordering::AcqRel);
                if old == pa {
                    flips += 1;
                }
                black_box(&p).store(pa, Ordering::Release);
            }
            flips
        }

        pub(crate) fn once_lock_get(n: u64) -> u64 {
            let cell = OnceLock::new();
            cell.get_or_init(|| 3u64);
            let mut sum = 0u64;
            for _ in 0..n {
                sum = sum.wrapping_add(*black_box(&cell).get().unwrap());
            }
            sum
        }

        pub(crate) fn channel_send_recv(n: u64) -> u64 {
            let (tx, rx) = mpsc::channel::<u64>();
            let mut sum = 0u64;
            for i in 0..n {
                tx.send(i).unwrap();
                sum = sum.wrapping_add(rx.recv().unwrap());
            }
            sum
        }

        pub(crate) fn sync_channel_send_recv(n: u64) -> u64 {
            let (tx, rx) = mpsc::sync_channel::<u64>(64);
            let mut sum = 0u64;
            for i in 0..n {
                tx.send(i).unwrap();
                sum = sum.wrapping_add(rx.recv().unwrap());
            }
            sum
        }

        pub(crate) fn crossbeam_unbounded_send_recv(n: u64) -> u64 {
            let (tx, rx) = channel::unbounded::<u64>();
            let mut sum = 0u64;
            for i in 0..n {
                tx.send(i).unwrap();
                sum = sum.wrapping_add(rx.recv().unwrap());
            }
            sum
        }

        pub(crate) fn crossbeam_bounded_send_recv(n: u64) -> u64 {
            let (tx, rx) = channel::bounded::<u64>(64);
            let mut sum = 0u64;
            for i in 0..n {
                tx.send(i).unwrap();
                sum = sum.wrapping_add(rx.recv().unwrap());
            }
            sum
        }

        pub(crate) fn crossbeam_select(n: u64) -> u64 {
            select_loop!(n, channel::unbounded::<u64>, channel::Select<'_>)
        }

        /// A selection over std-style channels (`selectable`: std has none, so the std column
        /// runs crossbeam's over its own channels).
        pub(crate) fn mpsc_select(n: u64) -> u64 {
            select_loop!(n, selectable::channel::<u64>, selectable::Select<'_>)
        }

        pub(crate) fn condvar_notify(n: u64) -> u64 {
            let pair = Arc::new((Mutex::new(0u64), Condvar::new()));
            for i in 0..n {
                *pair.0.lock().unwrap() += i;
                pair.1.notify_one();
            }
            *pair.0.lock().unwrap()
        }

        pub(crate) fn barrier_of_one(n: u64) -> u64 {
            let b = Barrier::new(1);
            (0..n).map(|_| u64::from(b.wait().is_leader())).sum()
        }

        pub(crate) fn instant_now(n: u64) -> u64 {
            let start = time::Instant::now();
            let mut last = start;
            for _ in 0..n {
                last = time::Instant::now();
            }
            // Time runs forward, whichever clock: the same answer from both loops.
            n * u64::from(last >= start)
        }

        pub(crate) fn thread_current(n: u64) -> u64 {
            let mut same = 0u64;
            let me = thread::current().id();
            for _ in 0..n {
                if thread::current().id() == me {
                    same += 1;
                }
            }
            same
        }

        pub(crate) fn unpark_park(n: u64) -> u64 {
            let me = thread::current();
            for _ in 0..n {
                me.unpark();
                thread::park();
            }
            n
        }

        pub(crate) fn hash_map_insert_get(n: u64) -> u64 {
            let mut map = HashMap::new();
            let mut sum = 0u64;
            for i in 0..n {
                map.insert(i & 1023, i);
                sum = sum.wrapping_add(*map.get(&(i & 511)).unwrap_or(&0));
            }
            sum
        }

        pub(crate) fn spawn_join(n: u64) -> u64 {
            (0..n)
                .map(|i| thread::spawn(move || i * 2).join().unwrap())
                .fold(0, u64::wrapping_add)
        }

        /// A 64-byte write on one end of a loopback TCP connection and its read on the other,
        /// on one thread: the socket layer alone, without the scheduling of a round trip.
        pub(crate) fn tcp_write_read(n: u64) -> u64 {
            use std::io::{Read, Write};
            let listener = net::TcpListener::bind("127.0.0.1:0").unwrap();
            let mut a = net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
            let (mut b, _) = listener.accept().unwrap();
            let mut message = [7u8; 64];
            let mut sum = 0u64;
            for _ in 0..n {
                a.write_all(&message).unwrap();
                b.read_exact(&mut message).unwrap();
                sum = sum.wrapping_add(u64::from(message[0]));
            }
            sum
        }

        /// A 64-byte datagram sent to a loopback socket and received there, on one thread.
        pub(crate) fn udp_send_recv(n: u64) -> u64 {
            let socket = net::UdpSocket::bind("127.0.0.1:0").unwrap();
            let to = socket.local_addr().unwrap();
            let mut message = [7u8; 64];
            let mut sum = 0u64;
            for _ in 0..n {
                socket.send_to(&message, to).unwrap();
                let (got, _) = socket.recv_from(&mut message).unwrap();
                sum = sum.wrapping_add(got as u64);
            }
            sum
        }
    };
}

mod with_std {
    use crossbeam_channel as channel;
    use std::collections::HashMap;
    use std::hint::black_box;
    use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};
    use std::sync::mpsc;
    use std::sync::{Barrier, Condvar, Mutex, OnceLock, RwLock};
    use std::{net, thread, time};

    /// Std-style channels that can be selected over.
    mod selectable {
        pub(crate) use crossbeam_channel::{Select, unbounded as channel};
    }

    loops!();
}

mod with_ppd {
    use ppd::channel;
    use ppd::collections::HashMap;
    use ppd::sync::atomic::{AtomicPtr, AtomicU64, Ordering};
    use ppd::sync::mpsc;
    use ppd::sync::{Barrier, Condvar, Mutex, OnceLock, RwLock};
    use ppd::{net, thread, time};
    use std::hint::black_box;

    /// Std-style channels that can be selected over.
    mod selectable {
        pub(crate) use ppd::sync::mpsc::{Select, channel};
    }

    loops!();
}

/// One operation: its name, what the std column runs (crossbeam for `ppd::channel` and for the
/// selections), and the two loops.
struct Loop {
    name: &'static str,
    baseline: &'static str,
    std: fn(u64) -> u64,
    ppd: fn(u64) -> u64,
}

macro_rules! table {
    ($($name:literal $baseline:literal $f:ident),* $(,)?) => {
        &[$(Loop { name: $name, baseline: $baseline, std: with_std::$f, ppd: with_ppd::$f }),*]
    };
}

const LOOPS: &[Loop] = table![
    "mutex-lock" "std" mutex_lock,
    "mutex-try-lock" "std" mutex_try_lock,
    "rwlock-read" "std" rwlock_read,
    "rwlock-write" "std" rwlock_write,
    "atomic-fetch-add" "std" atomic_fetch_add,
    "atomic-load-store" "std" atomic_load_store,
    "atomic-cas" "std" atomic_compare_exchange,
    "atomic-ptr-swap" "std" atomic_ptr_swap,
    "once-lock-get" "std" once_lock_get,
    "mpsc-send-recv" "std" channel_send_recv,
    "sync-channel-send-recv" "std" sync_channel_send_recv,
    "channel-send-recv" "crossbeam" crossbeam_unbounded_send_recv,
    "channel-bounded-send-recv" "crossbeam" crossbeam_bounded_send_recv,
    "channel-select" "crossbeam" crossbeam_select,
    "mpsc-select" "crossbeam" mpsc_select,
    "condvar-notify" "std" condvar_notify,
    "barrier-wait" "std" barrier_of_one,
    "instant-now" "std" instant_now,
    "thread-current" "std" thread_current,
    "unpark-park" "std" unpark_park,
    "hash-map" "std" hash_map_insert_get,
    "spawn-join" "std" spawn_join,
    "tcp-write-read" "std" tcp_write_read,
    "udp-send-recv" "std" udp_send_recv,
];

/// Iterations that make `f` run for about `target`.
fn calibrate(f: fn(u64) -> u64, target: Duration) -> u64 {
    let mut n = 16u64;
    loop {
        let start = Instant::now();
        black_box(f(black_box(n)));
        let took = start.elapsed();
        if took >= target / 4 || n >= 1 << 34 {
            let scaled = n as f64 * target.as_secs_f64() / took.as_secs_f64().max(1e-9);
            return (scaled as u64).max(1);
        }
        n *= 4;
    }
}

fn time(f: fn(u64) -> u64, n: u64) -> f64 {
    let start = Instant::now();
    black_box(f(black_box(n)));
    start.elapsed().as_secs_f64() * 1e9 / n as f64
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    // `cargo bench` passes --bench; anything else (`cargo test --benches`) is a quick check.
    let smoke = !args.iter().any(|a| a == "--bench");
    let filters: Vec<&str> = args
        .iter()
        .filter(|a| !a.starts_with('-'))
        .map(String::as_str)
        .collect();
    let rounds = match std::env::var("PPD_BENCH_ROUNDS") {
        Ok(n) => n.parse().expect("PPD_BENCH_ROUNDS is a number"),
        Err(_) if smoke => 1,
        Err(_) => ROUNDS,
    };
    let target = if smoke {
        Duration::from_millis(1)
    } else {
        TARGET
    };
    println!(
        "ppd pass-through{}: each operation in a loop on one thread, std's (or crossbeam's) \
         loop and ppd's back to back, {rounds} round(s); ns per operation as the median over \
         the rounds; ratio = median of the per-round ratios ppd / std",
        if smoke { " (quick check)" } else { "" }
    );
    println!(
        "{:<26} {:>10} {:>12} {:>12} {:>7}",
        "operation", "baseline", "baseline ns", "ppd ns", "ratio"
    );
    for l in LOOPS
        .iter()
        .filter(|l| filters.is_empty() || filters.iter().any(|f| l.name.contains(f)))
    {
        assert_eq!(
            (l.std)(64),
            (l.ppd)(64),
            "{}: the two loops compute different things",
            l.name
        );
        let n = calibrate(l.std, target);
        let (mut std_ns, mut ppd_ns, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
        for round in 0..rounds {
            let (s, p) = if round % 2 == 0 {
                let s = time(l.std, n);
                (s, time(l.ppd, n))
            } else {
                let p = time(l.ppd, n);
                (time(l.std, n), p)
            };
            std_ns.push(s);
            ppd_ns.push(p);
            ratios.push(p / s);
        }
        println!(
            "{:<26} {:>10} {:>12.2} {:>12.2} {:>7.3}",
            l.name,
            l.baseline,
            median(std_ns),
            median(ppd_ns),
            median(ratios)
        );
    }
}
