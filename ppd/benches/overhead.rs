//! What recording costs, and what the ppd types cost when nothing is recorded.
//!
//! ```sh
//! cargo bench -p ppd --bench overhead                 # every workload
//! cargo bench -p ppd --bench overhead -- ping-pong    # workloads whose name contains a word
//! ```
//!
//! The record runtime is installed once per OS process, so every measured run is a fresh child
//! process: this binary runs itself with `child WORKLOAD VARIANT`. The child runs the workload
//! through `ppd::__private::main` (what `#[ppd::main]` expands to) and prints how long the
//! workload took, measured inside the child from before its first spawn to after its last join:
//! process start-up and the runtime's end-of-run work are not counted. The variants are
//!
//! * `recorded`: ppd types, with `PPD_MODE=record` and a fresh recording directory;
//! * `armed`: recorded with a live breakpoint that never holds (`ppd record --stop`): a mark no
//!   workload logs, named for every process `p0` to `p63`, so each process checks each event it
//!   logs; this harness is the debugger at the other end of the control socket;
//! * `unrecorded`: the same ppd code without `PPD_MODE` (pass-through);
//! * `std`: the same program written with `std::thread`, `std::sync::mpsc`, `std::sync::Mutex`
//!   and `std::sync::atomic` (and crossbeam-channel for the `channel-*` workloads, which use
//!   `ppd::channel`, and `std::net` for the `tcp-*` ones, which use `ppd::net`).
//!
//! The `tcp-*` workloads run between two OS processes: the child starts this binary again as
//! its peer (`peer ROLE KIND ADDR`), which connects back over loopback and, recorded, records
//! as a second node of the same recording. Their time runs from the first byte written to the
//! last byte read back, after the peer has connected; their cpu time is the child's only.
//!
//! Each round runs every variant once, in an order that rotates from round to round; the report
//! gives the median of each variant over the rounds, the ratios of the medians, for the
//! recorded runs the bytes per logged event read back from the recording, and each variant's
//! peak resident memory: the child's `VmHWM`, which it reads from `/proc/self/status` as it
//! ends. Not `ru_maxrss`: Linux carries the high-water mark of the image a process replaces at
//! `exec` into it, so a spawned child's `ru_maxrss` is at least its parent's peak at the spawn,
//! and this harness's own peak (about 10 MiB, growing as it reads recordings) would hide the
//! small children's.
//!
//! Run as a test (`cargo test --benches`) it only checks that every workload runs, with small
//! sizes and one round.

use std::path::Path;
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

use ppd_formats::summary::{Payloads, summarize};
use ppd_formats::{Recording, WriterOptions};

/// Sizes of the workloads.
#[derive(Debug, Clone, Copy)]
struct Sizes {
    /// Ping-pong: pairs of processes, and round trips per pair (two messages each).
    pairs: u64,
    rounds: u64,
    /// All-to-one: senders, and messages per sender, to one receiving process.
    senders: u64,
    per_sender: u64,
    /// Lock- and atomic-heavy: processes, and iterations per process.
    workers: u64,
    iterations: u64,
    /// Scoped: scopes, each running `workers` scoped processes.
    scopes: u64,
    /// Park-pong: round trips of two processes waking each other with `unpark`.
    parks: u64,
    /// Hash-map: entries each process inserts into its own map, then iterates over.
    entries: u64,
    /// TCP round trips of one message between two OS processes.
    tcp_round_trips: u64,
    /// TCP streaming: writes of [`STREAM_CHUNK`] bytes from one OS process to another.
    stream_chunks: u64,
}

const FULL: Sizes = Sizes {
    pairs: 4,
    rounds: 125_000,
    senders: 7,
    per_sender: 143_000,
    workers: 4,
    iterations: 250_000,
    scopes: 250,
    parks: 20_000,
    entries: 250_000,
    tcp_round_trips: 20_000,
    stream_chunks: 4096,
};

const SMOKE: Sizes = Sizes {
    pairs: 2,
    rounds: 200,
    senders: 3,
    per_sender: 300,
    workers: 2,
    iterations: 500,
    scopes: 5,
    parks: 100,
    entries: 500,
    tcp_round_trips: 100,
    stream_chunks: 16,
};

/// Rounds per workload in a full run.
const ROUNDS: usize = 7;

/// Writes the workloads against the `thread`, `mpsc`, `Mutex`, `AtomicU64`, `AtomicPtr`,
/// `Ordering` and `HashMap` in scope where it expands: once for ppd, once for std.
macro_rules! workloads {
    () => {
        use std::sync::Arc;

        fn spawn<F>(name: String, f: F) -> thread::JoinHandle<u64>
        where
            F: FnOnce() -> u64 + Send + 'static,
        {
            thread::Builder::new()
                .name(name)
                .spawn(f)
                .expect("spawn a process")
        }

        fn join_all(handles: Vec<thread::JoinHandle<u64>>) -> u64 {
            handles
                .into_iter()
                .map(|h| h.join().expect("a process panicked"))
                .fold(0, u64::wrapping_add)
        }

        /// Pairs of processes bouncing a counter back and forth.
        pub(crate) fn ping_pong(s: super::Sizes) -> u64 {
            let mut handles = Vec::new();
            for pair in 0..s.pairs {
                let (to_pong, from_ping) = mpsc::channel::<u64>();
                let (to_ping, from_pong) = mpsc::channel::<u64>();
                let rounds = s.rounds;
                handles.push(spawn(format!("ping-{pair}"), move || {
                    let mut v = 0;
                    for _ in 0..rounds {
                        to_pong.send(v).expect("send to pong");
                        v = from_pong.recv().expect("recv from pong");
                    }
                    v
                }));
                handles.push(spawn(format!("pong-{pair}"), move || {
                    for _ in 0..rounds {
                        let v = from_ping.recv().expect("recv from ping");
                        to_ping.send(v + 1).expect("send to ping");
                    }
                    0
                }));
            }
            join_all(handles)
        }

        /// Many senders, one receiving process.
        pub(crate) fn all_to_one(s: super::Sizes) -> u64 {
            let (tx, rx) = mpsc::channel::<u64>();
            let total = s.senders * s.per_sender;
            let mut handles = vec![spawn("sink".into(), move || {
                let mut sum = 0u64;
                for _ in 0..total {
                    sum = sum.wrapping_add(rx.recv().expect("recv"));
                }
                sum
            })];
            for i in 0..s.senders {
                let tx = tx.clone();
                let n = s.per_sender;
                handles.push(spawn(format!("source-{i}"), move || {
                    for k in 0..n {
                        tx.send(k).expect("send to sink");
                    }
                    0
                }));
            }
            drop(tx);
            join_all(handles)
        }

        /// Processes taking turns on one mutex.
        pub(crate) fn lock_heavy(s: super::Sizes) -> u64 {
            let shared = Arc::new(Mutex::new(0u64));
            let handles = (0..s.workers)
                .map(|i| {
                    let shared = Arc::clone(&shared);
                    let n = s.iterations;
                    spawn(format!("locker-{i}"), move || {
                        for _ in 0..n {
                            let mut g = shared.lock().expect("lock");
                            *g = g.wrapping_mul(31).wrapping_add(i + 1);
                        }
                        0
                    })
                })
                .collect();
            join_all(handles);
            let v = *shared.lock().expect("lock");
            v
        }

        /// Processes trying one mutex without waiting: each try acquires it or is told it is
        /// held.
        pub(crate) fn try_lock_heavy(s: super::Sizes) -> u64 {
            let shared = Arc::new(Mutex::new(0u64));
            let handles = (0..s.workers)
                .map(|i| {
                    let shared = Arc::clone(&shared);
                    let n = s.iterations;
                    spawn(format!("trier-{i}"), move || {
                        let mut busy = 0u64;
                        for _ in 0..n {
                            match shared.try_lock() {
                                Ok(mut g) => *g = g.wrapping_mul(31).wrapping_add(i + 1),
                                Err(_) => busy += 1,
                            }
                        }
                        busy
                    })
                })
                .collect();
            let busy = join_all(handles);
            let v = *shared.lock().expect("lock");
            busy ^ v
        }

        /// Processes doing read-modify-writes, loads and stores on two shared atomics.
        pub(crate) fn atomic_heavy(s: super::Sizes) -> u64 {
            let counter = Arc::new(AtomicU64::new(0));
            let last = Arc::new(AtomicU64::new(0));
            let handles = (0..s.workers)
                .map(|i| {
                    let counter = Arc::clone(&counter);
                    let last = Arc::clone(&last);
                    let n = s.iterations;
                    spawn(format!("atomic-{i}"), move || {
                        let mut seen = 0u64;
                        for _ in 0..n {
                            let c = counter.fetch_add(1, Ordering::AcqRel);
                            seen = seen.wrapping_add(last.load(Ordering::Acquire));
                            last.store(c ^ i, Ordering::Release);
                        }
                        seen
                    })
                })
                .collect();
            join_all(handles) ^ counter.load(Ordering::Acquire)
        }

        /// Scopes whose scoped processes each add to their own slot of a borrowed slice.
        pub(crate) fn scoped(s: super::Sizes) -> u64 {
            let mut slots = vec![0u64; s.workers as usize];
            for round in 0..s.scopes {
                thread::scope(|scope| {
                    for slot in slots.iter_mut() {
                        scope.spawn(move || *slot = slot.wrapping_add(round));
                    }
                });
            }
            slots.iter().fold(0, |a, b| a.wrapping_add(*b))
        }

        /// `main` and one process take turns, each unparking the other and parking until its
        /// turn (an atomic counter says whose turn it is; parks may return spuriously).
        pub(crate) fn park_pong(s: super::Sizes) -> u64 {
            let turn = Arc::new(AtomicU64::new(0));
            let me = thread::current();
            let rounds = s.parks;
            let pong = {
                let turn = Arc::clone(&turn);
                spawn("pong".into(), move || {
                    for r in 0..rounds {
                        while turn.load(Ordering::Acquire) != 2 * r + 1 {
                            thread::park();
                        }
                        turn.store(2 * r + 2, Ordering::Release);
                        me.unpark();
                    }
                    0
                })
            };
            for r in 0..rounds {
                turn.store(2 * r + 1, Ordering::Release);
                pong.thread().unpark();
                while turn.load(Ordering::Acquire) != 2 * r + 2 {
                    thread::park();
                }
            }
            join_all(vec![pong]) ^ turn.load(Ordering::Acquire)
        }

        /// Processes swapping and loading one shared pointer.
        pub(crate) fn atomic_ptr(s: super::Sizes) -> u64 {
            let shared = Arc::new(AtomicPtr::new(std::ptr::null_mut::<u64>()));
            let handles = (0..s.workers)
                .map(|i| {
                    let shared = Arc::clone(&shared);
                    let n = s.iterations;
                    spawn(format!("pointer-{i}"), move || {
                        let mine = std::ptr::without_provenance_mut::<u64>(8 * (i as usize + 1));
                        let mut seen = 0u64;
                        for _ in 0..n {
                            let old = shared.swap(mine, Ordering::AcqRel);
                            seen = seen.wrapping_add(old as usize as u64);
                            seen ^= shared.load(Ordering::Acquire) as usize as u64;
                        }
                        seen
                    })
                })
                .collect();
            join_all(handles)
        }

        /// Processes filling their own hash map, then summing it in iteration order.
        pub(crate) fn hash_map(s: super::Sizes) -> u64 {
            let handles = (0..s.workers)
                .map(|i| {
                    let n = s.entries;
                    spawn(format!("mapper-{i}"), move || {
                        let mut map = HashMap::new();
                        for k in 0..n {
                            map.insert(k ^ i, k);
                        }
                        map.iter().enumerate().fold(0u64, |a, (pos, (k, v))| {
                            a.wrapping_mul(31).wrapping_add(k ^ v ^ pos as u64)
                        })
                    })
                })
                .collect();
            join_all(handles)
        }

        /// Processes reading an initialized `OnceLock` (its fast path: the cell is complete).
        pub(crate) fn once_get(s: super::Sizes) -> u64 {
            let cell = Arc::new(OnceLock::new());
            cell.get_or_init(|| 7u64);
            let handles = (0..s.workers)
                .map(|i| {
                    let cell = Arc::clone(&cell);
                    let n = super::once_gets(s);
                    spawn(format!("reader-{i}"), move || {
                        let mut sum = 0u64;
                        for _ in 0..n {
                            sum = sum.wrapping_add(*cell.get().expect("initialized"));
                        }
                        sum
                    })
                })
                .collect();
            join_all(handles)
        }

        /// Processes passing a barrier together, generation after generation.
        pub(crate) fn barrier(s: super::Sizes) -> u64 {
            let barrier = Arc::new(Barrier::new(s.workers as usize));
            let handles = (0..s.workers)
                .map(|i| {
                    let barrier = Arc::clone(&barrier);
                    let n = super::barrier_generations(s);
                    spawn(format!("party-{i}"), move || {
                        (0..n).map(|_| u64::from(barrier.wait().is_leader())).sum()
                    })
                })
                .collect();
            join_all(handles)
        }

        /// Ping-pong over bounded channels with room for one message, made by `bounded`.
        fn bounded_ping_pong<S, R>(
            s: super::Sizes,
            bounded: fn() -> (S, R),
            send: fn(&S, u64),
            recv: fn(&R) -> u64,
        ) -> u64
        where
            S: Send + 'static,
            R: Send + 'static,
        {
            let mut handles = Vec::new();
            for pair in 0..s.pairs {
                let (to_pong, from_ping) = bounded();
                let (to_ping, from_pong) = bounded();
                let rounds = s.rounds;
                handles.push(spawn(format!("ping-{pair}"), move || {
                    let mut v = 0;
                    for _ in 0..rounds {
                        send(&to_pong, v);
                        v = recv(&from_pong);
                    }
                    v
                }));
                handles.push(spawn(format!("pong-{pair}"), move || {
                    for _ in 0..rounds {
                        let v = recv(&from_ping);
                        send(&to_ping, v + 1);
                    }
                    0
                }));
            }
            join_all(handles)
        }

        /// All-to-one over a bounded channel with room for 64 messages, made by `bounded`.
        fn bounded_all_to_one<S, R>(
            s: super::Sizes,
            bounded: fn() -> (S, R),
            send: fn(&S, u64),
            recv: fn(&R) -> u64,
        ) -> u64
        where
            S: Clone + Send + 'static,
            R: Send + 'static,
        {
            let (tx, rx) = bounded();
            let total = s.senders * s.per_sender;
            let mut handles = vec![spawn("sink".into(), move || {
                let mut sum = 0u64;
                for _ in 0..total {
                    sum = sum.wrapping_add(recv(&rx));
                }
                sum
            })];
            for i in 0..s.senders {
                let tx = tx.clone();
                let n = s.per_sender;
                handles.push(spawn(format!("source-{i}"), move || {
                    for k in 0..n {
                        send(&tx, k);
                    }
                    0
                }));
            }
            drop(tx);
            join_all(handles)
        }

        /// Ping-pong over `sync_channel(1)`s.
        pub(crate) fn sync_ping_pong(s: super::Sizes) -> u64 {
            bounded_ping_pong(
                s,
                || mpsc::sync_channel::<u64>(1),
                |tx, v| tx.send(v).expect("send"),
                |rx| rx.recv().expect("recv"),
            )
        }

        /// All-to-one over a `sync_channel(64)`.
        pub(crate) fn sync_all_to_one(s: super::Sizes) -> u64 {
            bounded_all_to_one(
                s,
                || mpsc::sync_channel::<u64>(64),
                |tx, v| tx.send(v).expect("send"),
                |rx| rx.recv().expect("recv"),
            )
        }

        /// Ping-pong over crossbeam-style `bounded(1)` channels.
        pub(crate) fn channel_ping_pong(s: super::Sizes) -> u64 {
            bounded_ping_pong(
                s,
                || channel::bounded::<u64>(1),
                |tx, v| tx.send(v).expect("send"),
                |rx| rx.recv().expect("recv"),
            )
        }

        /// All-to-one over a crossbeam-style `bounded(64)` channel.
        pub(crate) fn channel_all_to_one(s: super::Sizes) -> u64 {
            bounded_all_to_one(
                s,
                || channel::bounded::<u64>(64),
                |tx, v| tx.send(v).expect("send"),
                |rx| rx.recv().expect("recv"),
            )
        }

        /// Two processes taking turns through a `Mutex<bool>` and a `Condvar`.
        pub(crate) fn condvar_pong(s: super::Sizes) -> u64 {
            let turn = Arc::new((Mutex::new(false), Condvar::new()));
            let rounds = s.parks;
            let pong = {
                let turn = Arc::clone(&turn);
                spawn("pong".into(), move || {
                    let (lock, wake) = &*turn;
                    for _ in 0..rounds {
                        let mut pongs = wake
                            .wait_while(lock.lock().expect("turn"), |pongs| !*pongs)
                            .expect("turn");
                        *pongs = false;
                        wake.notify_one();
                    }
                    0
                })
            };
            let (lock, wake) = &*turn;
            for _ in 0..rounds {
                let mut pongs = wake
                    .wait_while(lock.lock().expect("turn"), |pongs| *pongs)
                    .expect("turn");
                *pongs = true;
                wake.notify_one();
            }
            join_all(vec![pong])
        }

        /// Processes mostly reading one `RwLock`ed value, writing it every eighth time.
        pub(crate) fn rwlock_read_heavy(s: super::Sizes) -> u64 {
            let shared = Arc::new(RwLock::new(0u64));
            let handles = (0..s.workers)
                .map(|i| {
                    let shared = Arc::clone(&shared);
                    let n = s.iterations;
                    spawn(format!("reader-{i}"), move || {
                        let mut seen = 0u64;
                        for k in 0..n {
                            if k % 8 == 0 {
                                let mut g = shared.write().expect("write");
                                *g = g.wrapping_mul(31).wrapping_add(i + 1);
                            } else {
                                seen = seen.wrapping_add(*shared.read().expect("read"));
                            }
                        }
                        seen
                    })
                })
                .collect();
            let seen = join_all(handles);
            let v = *shared.read().expect("read");
            seen ^ v
        }
    };
}

/// The message of a TCP round trip, bytes.
const TCP_MESSAGE: usize = 64;
/// A streaming write, bytes.
const STREAM_CHUNK: usize = 64 * 1024;

/// Writes the workloads between two OS processes over TCP against the `net` in scope: once for
/// ppd, once for std. `$kind` names the module for the peer process (`peer ROLE KIND ADDR`).
macro_rules! tcp_workloads {
    ($kind:literal) => {
        use std::io::{Read, Write};

        /// Starts this benchmark again as the peer OS process of a TCP workload, which connects
        /// to a listener here: the connection and the peer. Under `PPD_MODE=record` the peer
        /// records too, as a node of the same recording.
        fn start_peer(role: &str) -> (net::TcpStream, std::process::Child) {
            let listener = net::TcpListener::bind("127.0.0.1:0").expect("bind");
            let addr = listener
                .local_addr()
                .expect("the bound address")
                .to_string();
            let exe = std::env::current_exe().expect("the benchmark knows its own path");
            let peer = std::process::Command::new(exe)
                .args(["peer", role, $kind, &addr])
                .spawn()
                .expect("start the peer process");
            let (stream, _) = listener.accept().expect("the peer connects");
            stream.set_nodelay(true).expect("nodelay");
            (stream, peer)
        }

        fn wait_for(mut peer: std::process::Child) {
            let status = peer.wait().expect("wait for the peer process");
            assert!(status.success(), "the peer process failed: {status}");
        }

        /// Round trips of a [`super::TCP_MESSAGE`]-byte message to an echoing peer.
        pub(crate) fn tcp_round_trips(s: super::Sizes) -> u64 {
            let (mut stream, peer) = start_peer("echo");
            let mut message = [0u8; super::TCP_MESSAGE];
            let mut sum = 0u64;
            super::clock::start();
            for k in 0..s.tcp_round_trips {
                message[..8].copy_from_slice(&k.to_le_bytes());
                stream.write_all(&message).expect("send");
                stream.read_exact(&mut message).expect("receive the echo");
                sum = sum.wrapping_add(u64::from(message[0]));
            }
            super::clock::stop();
            drop(stream);
            wait_for(peer);
            sum
        }

        /// Writes of [`super::STREAM_CHUNK`] pseudo-random bytes to a peer that reads them all
        /// and answers with their count.
        pub(crate) fn tcp_stream(s: super::Sizes) -> u64 {
            let (mut stream, peer) = start_peer("sink");
            let chunk = super::incompressible(super::STREAM_CHUNK);
            super::clock::start();
            for _ in 0..s.stream_chunks {
                stream.write_all(&chunk).expect("stream");
            }
            stream
                .shutdown(std::net::Shutdown::Write)
                .expect("end the stream");
            let mut count = [0u8; 8];
            stream.read_exact(&mut count).expect("the peer's count");
            super::clock::stop();
            wait_for(peer);
            let count = u64::from_le_bytes(count);
            assert_eq!(count, s.stream_chunks * super::STREAM_CHUNK as u64);
            count
        }

        /// The echoing peer: returns every message until the stream ends.
        pub(crate) fn echo_peer(addr: &str) {
            let mut stream = net::TcpStream::connect(addr).expect("connect");
            stream.set_nodelay(true).expect("nodelay");
            let mut message = [0u8; super::TCP_MESSAGE];
            while stream.read_exact(&mut message).is_ok() {
                stream.write_all(&message).expect("echo");
            }
        }

        /// The sink peer: reads to the end of the stream, then writes how many bytes it read.
        pub(crate) fn sink_peer(addr: &str) {
            let mut stream = net::TcpStream::connect(addr).expect("connect");
            let mut buf = vec![0u8; super::STREAM_CHUNK];
            let mut count = 0u64;
            loop {
                match stream.read(&mut buf).expect("read the stream") {
                    0 => break,
                    n => count += n as u64,
                }
            }
            stream.write_all(&count.to_le_bytes()).expect("answer");
        }
    };
}

/// `n` bytes no compressor can shrink (xorshift), so that the bytes a recorded read logs cost
/// what real payloads would.
fn incompressible(n: usize) -> Vec<u8> {
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 32) as u8
        })
        .collect()
}

/// The measured interval of a workload that sets one up first (a peer process to start): by
/// default the whole workload.
mod clock {
    use std::sync::Mutex;
    use std::time::{Duration, Instant};

    /// The wall clock and the CPU time used so far, at a mark.
    type Mark = Option<(Instant, Duration)>;

    /// The start and the end.
    static MARKS: Mutex<(Mark, Mark)> = Mutex::new((None, None));

    pub(crate) fn start() {
        MARKS.lock().expect("clock").0 = Some((Instant::now(), super::cpu_time()));
    }

    pub(crate) fn stop() {
        MARKS.lock().expect("clock").1 = Some((Instant::now(), super::cpu_time()));
    }

    /// The marks the workload set, if it set both.
    pub(crate) fn marked() -> Option<(Duration, Duration)> {
        match *MARKS.lock().expect("clock") {
            (Some((t0, c0)), Some((t1, c1))) => Some((t1 - t0, c1 - c0)),
            _ => None,
        }
    }
}

/// Gets per process of the once-get workload: a get costs a fraction of a lock acquisition, so
/// it takes more of them to measure it above the cost of spawning.
fn once_gets(s: Sizes) -> u64 {
    s.iterations * 8
}

/// Generations the barrier workload runs: a barrier passage costs a few hundred lock-heavy
/// iterations' worth of wake-ups.
fn barrier_generations(s: Sizes) -> u64 {
    (s.iterations / 25).max(1)
}

mod with_ppd {
    use ppd::channel;
    use ppd::collections::HashMap;
    use ppd::sync::atomic::{AtomicPtr, AtomicU64, Ordering};
    use ppd::sync::mpsc;
    use ppd::sync::{Barrier, Condvar, Mutex, OnceLock, RwLock};
    use ppd::{net, thread};

    workloads!();
    tcp_workloads!("ppd");
}

mod with_std {
    use crossbeam_channel as channel;
    use std::collections::HashMap;
    use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};
    use std::sync::mpsc;
    use std::sync::{Barrier, Condvar, Mutex, OnceLock, RwLock};
    use std::{net, thread};

    workloads!();
    tcp_workloads!("std");
}

/// A workload: its name, what it does, how many operations (messages, lock acquisitions,
/// atomic accesses) it makes, and how many processes it runs (main included).
struct Workload {
    name: &'static str,
    what: &'static str,
    ops: fn(Sizes) -> u64,
    processes: fn(Sizes) -> u64,
    ppd: fn(Sizes) -> u64,
    std: fn(Sizes) -> u64,
}

const WORKLOADS: &[Workload] = &[
    Workload {
        name: "ping-pong",
        what: "messages",
        ops: |s| s.pairs * s.rounds * 2,
        processes: |s| 1 + 2 * s.pairs,
        ppd: with_ppd::ping_pong,
        std: with_std::ping_pong,
    },
    Workload {
        name: "all-to-one",
        what: "messages",
        ops: |s| s.senders * s.per_sender,
        processes: |s| 2 + s.senders,
        ppd: with_ppd::all_to_one,
        std: with_std::all_to_one,
    },
    Workload {
        name: "lock-heavy",
        what: "lock acquisitions",
        ops: |s| s.workers * s.iterations,
        processes: |s| 1 + s.workers,
        ppd: with_ppd::lock_heavy,
        std: with_std::lock_heavy,
    },
    Workload {
        name: "try-lock",
        what: "lock tries",
        ops: |s| s.workers * s.iterations,
        processes: |s| 1 + s.workers,
        ppd: with_ppd::try_lock_heavy,
        std: with_std::try_lock_heavy,
    },
    Workload {
        name: "atomic-heavy",
        what: "atomic accesses",
        ops: |s| s.workers * s.iterations * 3,
        processes: |s| 1 + s.workers,
        ppd: with_ppd::atomic_heavy,
        std: with_std::atomic_heavy,
    },
    Workload {
        name: "scoped",
        what: "scoped spawns",
        ops: |s| s.scopes * s.workers,
        processes: |s| 1 + s.scopes * s.workers,
        ppd: with_ppd::scoped,
        std: with_std::scoped,
    },
    Workload {
        name: "park-pong",
        what: "unpark-park wakes",
        ops: |s| s.parks * 2,
        processes: |_| 2,
        ppd: with_ppd::park_pong,
        std: with_std::park_pong,
    },
    Workload {
        name: "atomic-ptr",
        what: "pointer accesses",
        ops: |s| s.workers * s.iterations * 2,
        processes: |s| 1 + s.workers,
        ppd: with_ppd::atomic_ptr,
        std: with_std::atomic_ptr,
    },
    Workload {
        name: "hash-map",
        what: "inserts",
        ops: |s| s.workers * s.entries,
        processes: |s| 1 + s.workers,
        ppd: with_ppd::hash_map,
        std: with_std::hash_map,
    },
    Workload {
        name: "once-get",
        what: "OnceLock gets",
        ops: |s| s.workers * once_gets(s),
        processes: |s| 1 + s.workers,
        ppd: with_ppd::once_get,
        std: with_std::once_get,
    },
    Workload {
        name: "barrier",
        what: "barrier waits",
        ops: |s| s.workers * barrier_generations(s),
        processes: |s| 1 + s.workers,
        ppd: with_ppd::barrier,
        std: with_std::barrier,
    },
    Workload {
        name: "sync-ping-pong",
        what: "messages",
        ops: |s| s.pairs * s.rounds * 2,
        processes: |s| 1 + 2 * s.pairs,
        ppd: with_ppd::sync_ping_pong,
        std: with_std::sync_ping_pong,
    },
    Workload {
        name: "sync-all-to-one",
        what: "messages",
        ops: |s| s.senders * s.per_sender,
        processes: |s| 2 + s.senders,
        ppd: with_ppd::sync_all_to_one,
        std: with_std::sync_all_to_one,
    },
    Workload {
        name: "channel-ping-pong",
        what: "messages (std column: crossbeam)",
        ops: |s| s.pairs * s.rounds * 2,
        processes: |s| 1 + 2 * s.pairs,
        ppd: with_ppd::channel_ping_pong,
        std: with_std::channel_ping_pong,
    },
    Workload {
        name: "channel-all-to-one",
        what: "messages (std column: crossbeam)",
        ops: |s| s.senders * s.per_sender,
        processes: |s| 2 + s.senders,
        ppd: with_ppd::channel_all_to_one,
        std: with_std::channel_all_to_one,
    },
    Workload {
        name: "rwlock-read-heavy",
        what: "rwlock holds (7 reads : 1 write)",
        ops: |s| s.workers * s.iterations,
        processes: |s| 1 + s.workers,
        ppd: with_ppd::rwlock_read_heavy,
        std: with_std::rwlock_read_heavy,
    },
    Workload {
        name: "tcp-round-trip",
        what: "64-byte round trips, 2 OS processes",
        ops: |s| s.tcp_round_trips,
        processes: |_| 2,
        ppd: with_ppd::tcp_round_trips,
        std: with_std::tcp_round_trips,
    },
    Workload {
        name: "tcp-stream",
        what: "64 KiB writes, 2 OS processes",
        ops: |s| s.stream_chunks,
        processes: |_| 2,
        ppd: with_ppd::tcp_stream,
        std: with_std::tcp_stream,
    },
    Workload {
        name: "condvar-pong",
        what: "condvar wakes",
        ops: |s| s.parks * 2,
        processes: |_| 2,
        ppd: with_ppd::condvar_pong,
        std: with_std::condvar_pong,
    },
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Variant {
    Recorded,
    Unrecorded,
    Std,
    Armed,
}

impl Variant {
    const ALL: [Variant; 4] = [
        Variant::Recorded,
        Variant::Unrecorded,
        Variant::Std,
        Variant::Armed,
    ];

    fn name(self) -> &'static str {
        match self {
            Variant::Recorded => "recorded",
            Variant::Unrecorded => "unrecorded",
            Variant::Std => "std",
            Variant::Armed => "armed",
        }
    }

    fn parse(s: &str) -> Option<Variant> {
        Variant::ALL.into_iter().find(|v| v.name() == s)
    }
}

/// What the child prints before the workload's duration.
const ELAPSED: &str = "ppd-bench-elapsed-ns";

fn sizes(smoke: bool) -> Sizes {
    if smoke { SMOKE } else { FULL }
}

/// The child: runs one workload once and prints its duration.
fn child(workload: &str, variant: &str, smoke: bool) -> ExitCode {
    let (Some(w), Some(v)) = (
        WORKLOADS.iter().find(|w| w.name == workload),
        Variant::parse(variant),
    ) else {
        eprintln!("unknown workload {workload:?} or variant {variant:?}");
        return ExitCode::from(2);
    };
    let s = sizes(smoke);
    let body = if v == Variant::Std { w.std } else { w.ppd };
    ppd::__private::main(|| {
        let cpu = cpu_time();
        let started = Instant::now();
        let result = body(s);
        let (elapsed, cpu) = clock::marked().unwrap_or((started.elapsed(), cpu_time() - cpu));
        std::hint::black_box(result);
        println!(
            "{ELAPSED} {} {} {}",
            elapsed.as_nanos(),
            cpu.as_nanos(),
            peak_resident_kib()
        );
    })
}

/// This process's resident high-water mark, KiB, since it started its image (see the
/// module's docs for why not `ru_maxrss`).
fn peak_resident_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .expect("VmHWM in /proc/self/status")
}

/// What this process has used so far.
fn usage() -> libc::rusage {
    // SAFETY: getrusage only writes the struct it is given.
    unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    }
}

/// User and system time of every thread of this process so far.
fn cpu_time() -> Duration {
    let usage = usage();
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

/// A breakpoint no workload reaches, naming every process of a workload (`p0` to `p63`).
fn never_holding_breakpoint() -> String {
    let triggers: Vec<String> = (0..64)
        .map(|p| format!(r#"{{"process":"p{p}","event":{{"Mark":"ppd-bench-never"}}}}"#))
        .collect();
    format!(
        r#"{{"text":"never","triggers":[{}],"all":false}}"#,
        triggers.join(",")
    )
}

/// The debugger's end of the control socket of an armed child (and of its peer node): takes
/// every connection, welcomes it (no halt is in progress), and reads what it says until it
/// goes.
fn listen_as_debugger(socket: &Path) {
    use std::io::Write;
    let listener = std::os::unix::net::UnixListener::bind(socket).expect("bind the control socket");
    std::thread::spawn(move || {
        for mut node in listener.incoming().flatten() {
            let welcome = ppd_formats::live::DebuggerCommand::Welcome { halted: false };
            let mut line = serde_json::to_string(&welcome).expect("a command serializes");
            line.push('\n');
            let _ = node.write_all(line.as_bytes());
            std::thread::spawn(move || std::io::copy(&mut node, &mut std::io::sink()));
        }
    });
}

/// One measured run of a child process.
struct Run {
    elapsed: Duration,
    /// CPU time of all the child's threads over the same interval.
    cpu: Duration,
    /// The child's peak resident memory, KiB.
    peak_kib: u64,
    /// Events and compressed / raw bytes of the recording (recorded runs only).
    recording: Option<(u64, u64, u64)>,
}

fn run_child(workload: &str, variant: Variant, smoke: bool) -> Run {
    let exe = std::env::current_exe().expect("the benchmark knows its own path");
    let mut cmd = Command::new(exe);
    cmd.args(["child", workload, variant.name()]);
    if smoke {
        cmd.arg("--smoke");
    }
    cmd.env_remove("PPD_MODE").env_remove("PPD_DIR");
    let dir = tempfile::tempdir().expect("a temporary directory");
    if matches!(variant, Variant::Recorded | Variant::Armed) {
        cmd.env("PPD_MODE", "record").env("PPD_DIR", dir.path());
    }
    let sockets = tempfile::tempdir().expect("a temporary directory");
    if variant == Variant::Armed {
        let socket = sockets.path().join("control.sock");
        listen_as_debugger(&socket);
        cmd.env("PPD_LIVE_STOP", never_holding_breakpoint())
            .env("PPD_LIVE_CONTROL", &socket);
    }
    let out = cmd.output().expect("run the benchmark child");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{workload} ({}) failed: {}\n{stdout}{stderr}",
        variant.name(),
        out.status
    );
    if !stderr.trim().is_empty() {
        eprintln!("{workload} ({}): {}", variant.name(), stderr.trim());
    }
    let nanos: Vec<u64> = stdout
        .lines()
        .find_map(|l| l.strip_prefix(ELAPSED))
        .map(|n| {
            n.split_whitespace()
                .filter_map(|x| x.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    let [elapsed, cpu, peak_kib] = nanos[..] else {
        panic!("{workload} ({}) printed no duration", variant.name())
    };
    let recording = (variant == Variant::Recorded).then(|| read_recording(dir.path()));
    drop(sockets);
    Run {
        elapsed: Duration::from_nanos(elapsed),
        cpu: Duration::from_nanos(cpu),
        peak_kib,
        recording,
    }
}

fn read_recording(dir: &Path) -> (u64, u64, u64) {
    let recording = Recording::open(dir).expect("the recorded run left a recording");
    let s = summarize(&recording, Payloads::Verify).expect("the recording summarizes");
    assert!(
        s.complete,
        "the recording in {} is incomplete",
        dir.display()
    );
    (s.events, s.bytes_compressed, s.bytes_raw)
}

fn median(xs: &[Duration]) -> Duration {
    let mut v = xs.to_vec();
    v.sort();
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// `median [min–max]` in milliseconds.
fn summary(xs: &[Duration]) -> String {
    let min = xs.iter().min().copied().unwrap_or_default();
    let max = xs.iter().max().copied().unwrap_or_default();
    format!("{:.1} [{:.1}–{:.1}]", ms(median(xs)), ms(min), ms(max))
}

fn ratio(a: &[Duration], b: &[Duration]) -> f64 {
    median(a).as_secs_f64() / median(b).as_secs_f64()
}

/// The median over the rounds of `a / b` within each round: runs of one round are close in
/// time, so this follows slow changes in the machine's load less than the ratio of medians.
fn paired_ratio(a: &[Duration], b: &[Duration]) -> f64 {
    let mut ratios: Vec<f64> = a
        .iter()
        .zip(b)
        .map(|(a, b)| a.as_secs_f64() / b.as_secs_f64())
        .collect();
    ratios.sort_by(f64::total_cmp);
    let n = ratios.len();
    if n % 2 == 1 {
        ratios[n / 2]
    } else {
        (ratios[n / 2 - 1] + ratios[n / 2]) / 2.0
    }
}

/// Everything measured for one workload.
struct Measured {
    name: &'static str,
    what: &'static str,
    ops: u64,
    processes: u64,
    /// Wall and CPU times by variant, in [`Variant::ALL`] order.
    wall: [Vec<Duration>; 4],
    cpu: [Vec<Duration>; 4],
    /// Peak resident memory by variant, KiB.
    peak_kib: [Vec<u64>; 4],
    /// Events, compressed bytes and raw bytes of the last recording.
    recording: (u64, u64, u64),
}

impl Measured {
    fn wall(&self, v: Variant) -> &[Duration] {
        &self.wall[v as usize]
    }

    fn cpu(&self, v: Variant) -> &[Duration] {
        &self.cpu[v as usize]
    }

    /// Seconds `v` adds per operation over `baseline`: the difference of their wall medians
    /// over the operations.
    fn added_per_op(&self, v: Variant, baseline: Variant) -> f64 {
        let added = median(self.wall(v)).as_secs_f64() - median(self.wall(baseline)).as_secs_f64();
        added / self.ops as f64
    }
}

fn measure(w: &Workload, rounds: usize, smoke: bool) -> Measured {
    let mut wall: [Vec<Duration>; 4] = Default::default();
    let mut cpu: [Vec<Duration>; 4] = Default::default();
    let mut peak_kib: [Vec<u64>; 4] = Default::default();
    let mut recording = (0, 0, 0);
    let variants = Variant::ALL.len();
    for round in 0..rounds {
        for k in 0..variants {
            let variant = Variant::ALL[(round + k) % variants];
            let run = run_child(w.name, variant, smoke);
            wall[variant as usize].push(run.elapsed);
            cpu[variant as usize].push(run.cpu);
            peak_kib[variant as usize].push(run.peak_kib);
            if let Some(r) = run.recording {
                recording = r;
            }
        }
        eprint!(".");
    }
    eprintln!();
    Measured {
        name: w.name,
        what: w.what,
        ops: (w.ops)(sizes(smoke)),
        processes: (w.processes)(sizes(smoke)),
        wall,
        cpu,
        peak_kib,
        recording,
    }
}

/// The logs' rings of `processes` processes at the default ring size, MiB.
fn ring_mib(processes: u64) -> f64 {
    let o = WriterOptions::default();
    (processes * u64::from(o.block_size) * u64::from(o.ring_blocks)) as f64 / (1024.0 * 1024.0)
}

/// The median of peak memories, MiB.
fn median_mib(kib: &[u64]) -> f64 {
    let mut v = kib.to_vec();
    v.sort_unstable();
    v.get(v.len() / 2).copied().unwrap_or(0) as f64 / 1024.0
}

/// The peer OS process of a TCP workload.
fn peer(role: &str, kind: &str, addr: &str) -> ExitCode {
    let body: fn(&str) = match (role, kind) {
        ("echo", "ppd") => with_ppd::echo_peer,
        ("echo", _) => with_std::echo_peer,
        ("sink", "ppd") => with_ppd::sink_peer,
        (_, _) => with_std::sink_peer,
    };
    ppd::__private::main(|| body(addr))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let smoke_flag = args.iter().any(|a| a == "--smoke");
    if args.first().map(String::as_str) == Some("child") && args.len() >= 3 {
        return child(&args[1], &args[2], smoke_flag);
    }
    if let [first, role, kind, addr] = &args[..]
        && first == "peer"
    {
        return peer(role, kind, addr);
    }
    // `cargo bench` passes --bench; anything else (`cargo test --benches`) is a quick check.
    let smoke = smoke_flag || !args.iter().any(|a| a == "--bench");
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
    let chosen: Vec<&Workload> = WORKLOADS
        .iter()
        .filter(|w| filters.is_empty() || filters.iter().any(|f| w.name.contains(f)))
        .collect();
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    println!(
        "ppd overhead{}: {rounds} round(s) per workload; a round runs each variant once, each \
         in a fresh process, in rotating order; {cpus} CPUs",
        if smoke {
            " (quick check, small sizes)"
        } else {
            ""
        },
    );
    println!(
        "wall = workload wall time inside the child, first spawn to last join; cpu = user + \
         system time of all the child's threads (the log compressor's included) over the same \
         interval; ms as median [min–max] over the rounds"
    );
    println!(
        "recorded runs write to a fresh directory under {} (set TMPDIR to choose the disk)",
        std::env::temp_dir().display()
    );
    let mut results = Vec::new();
    for w in chosen {
        eprint!("{:<13}", w.name);
        results.push(measure(w, rounds, smoke));
    }

    println!();
    println!("recorded (PPD_MODE=record) / unrecorded (the same ppd program, pass-through):");
    println!(
        "{:<13} {:>26} {:>24} {:>24} {:>7} {:>7} {:>9} {:>9}",
        "workload",
        "operations",
        "unrecorded wall",
        "recorded wall",
        "ratio",
        "paired",
        "cpu ratio",
        "+ns/op"
    );
    for m in &results {
        let (rec, un) = (m.wall(Variant::Recorded), m.wall(Variant::Unrecorded));
        println!(
            "{:<13} {:>26} {:>24} {:>24} {:>7.3} {:>7.3} {:>9.3} {:>9.1}",
            m.name,
            format!("{} {}", m.ops, m.what),
            summary(un),
            summary(rec),
            ratio(rec, un),
            paired_ratio(rec, un),
            ratio(m.cpu(Variant::Recorded), m.cpu(Variant::Unrecorded)),
            m.added_per_op(Variant::Recorded, Variant::Unrecorded) * 1e9,
        );
    }
    println!(
        "ratio: of the wall medians; paired: median of the per-round ratios; cpu ratio: of the \
         cpu medians; +ns/op: difference of the wall medians per operation"
    );

    println!();
    println!(
        "armed (recorded under a breakpoint that never holds, every process checking every \
         event it logs) / recorded:"
    );
    println!(
        "{:<13} {:>24} {:>24} {:>7} {:>7} {:>9} {:>9}",
        "workload", "recorded wall", "armed wall", "ratio", "paired", "cpu ratio", "+ns/op"
    );
    for m in &results {
        let (armed, rec) = (m.wall(Variant::Armed), m.wall(Variant::Recorded));
        println!(
            "{:<13} {:>24} {:>24} {:>7.3} {:>7.3} {:>9.3} {:>9.1}",
            m.name,
            summary(rec),
            summary(armed),
            ratio(armed, rec),
            paired_ratio(armed, rec),
            ratio(m.cpu(Variant::Armed), m.cpu(Variant::Recorded)),
            m.added_per_op(Variant::Armed, Variant::Recorded) * 1e9,
        );
    }

    println!();
    println!("log size (last recorded run):");
    println!(
        "{:<13} {:>10} {:>14} {:>14} {:>12} {:>10}",
        "workload", "events", "compressed", "raw", "bytes/event", "raw/event"
    );
    for m in &results {
        let (events, compressed, raw) = m.recording;
        let per = |bytes: u64| bytes as f64 / events.max(1) as f64;
        println!(
            "{:<13} {:>10} {:>14} {:>14} {:>12.3} {:>10.2}",
            m.name,
            events,
            compressed,
            raw,
            per(compressed),
            per(raw)
        );
    }
    println!(
        "compressed: bytes the events take in the logs (zstd frames with their headers, as \
         `ppd info` counts them); raw: encoded bytes before compression"
    );

    println!();
    println!("pass-through (ppd types, no PPD_MODE) / the same program written with std:");
    println!(
        "{:<13} {:>24} {:>24} {:>7} {:>7} {:>9}",
        "workload", "std wall", "ppd wall", "ratio", "paired", "cpu ratio"
    );
    for m in &results {
        let (un, std) = (m.wall(Variant::Unrecorded), m.wall(Variant::Std));
        println!(
            "{:<13} {:>24} {:>24} {:>7.3} {:>7.3} {:>9.3}",
            m.name,
            summary(std),
            summary(un),
            ratio(un, std),
            paired_ratio(un, std),
            ratio(m.cpu(Variant::Unrecorded), m.cpu(Variant::Std)),
        );
    }

    println!();
    println!("peak memory (resident, MiB, median over the rounds):");
    println!(
        "{:<13} {:>9} {:>11} {:>9} {:>10} {:>10}",
        "workload", "std", "unrecorded", "recorded", "added", "rings"
    );
    for m in &results {
        let peak = |v: Variant| median_mib(&m.peak_kib[v as usize]);
        let (std, un, rec) = (
            peak(Variant::Std),
            peak(Variant::Unrecorded),
            peak(Variant::Recorded),
        );
        println!(
            "{:<13} {:>9.1} {:>11.1} {:>9.1} {:>10.1} {:>10.1}",
            m.name,
            std,
            un,
            rec,
            rec - un,
            ring_mib(m.processes)
        );
    }
    println!(
        "added: recorded - unrecorded; rings: what the logs' rings take if every page of them \
         is touched (one per process, main included, at the default ring size)"
    );

    print_goals(&results);
    ExitCode::SUCCESS
}

/// A goal on the wall time recording adds per operation of a workload.
struct Goal {
    /// What the goal bounds.
    what: &'static str,
    /// The workloads that measure it; it is met when every one that ran is within `limit`.
    workloads: &'static [&'static str],
    /// The most that recording may add per operation.
    limit: Duration,
}

/// The goals on the cost recording adds per operation (the whole-process, replay and halting
/// goals are measured elsewhere: `--bench replay`, and pairs of whole `bank` runs).
const GOALS: &[Goal] = &[
    Goal {
        what: "per lock acquisition",
        workloads: &["lock-heavy"],
        limit: Duration::from_nanos(20),
    },
    Goal {
        what: "per atomic access",
        workloads: &["atomic-heavy", "atomic-ptr"],
        limit: Duration::from_nanos(10),
    },
    Goal {
        what: "per message beyond the channel's own cost",
        workloads: &["ping-pong", "all-to-one"],
        limit: Duration::from_nanos(30),
    },
    Goal {
        what: "per bounded-channel message",
        workloads: &["sync-all-to-one", "channel-all-to-one"],
        limit: Duration::from_nanos(50),
    },
    Goal {
        what: "per OnceLock::get after the first",
        workloads: &["once-get"],
        limit: Duration::from_nanos(2),
    },
    Goal {
        what: "per scoped spawn",
        workloads: &["scoped"],
        limit: Duration::from_micros(20),
    },
];

/// One line per goal: what recording added per operation to each of its workloads that ran
/// (the first table's figure), and whether that is within it.
fn print_goals(results: &[Measured]) {
    println!();
    println!("goals (wall time recording adds per operation, from the first table):");
    for goal in GOALS {
        let measured: Vec<(&str, f64)> = goal
            .workloads
            .iter()
            .filter_map(|&name| results.iter().find(|m| m.name == name))
            .map(|m| {
                (
                    m.name,
                    m.added_per_op(Variant::Recorded, Variant::Unrecorded),
                )
            })
            .collect();
        if measured.is_empty() {
            continue;
        }
        let limit = goal.limit.as_secs_f64();
        let met = measured.iter().all(|&(_, added)| added <= limit);
        let figures: Vec<String> = measured
            .iter()
            .map(|&(name, added)| format!("{name} {}", per_op(added)))
            .collect();
        println!(
            "  {:<44} <= {:>8}: {:<7} ({})",
            goal.what,
            per_op(limit),
            if met { "met" } else { "not met" },
            figures.join(", ")
        );
    }
}

/// A time per operation, in ns below 10 µs and in µs above.
fn per_op(seconds: f64) -> String {
    if seconds.abs() < 10e-6 {
        format!("{:.1} ns", seconds * 1e9)
    } else {
        format!("{:.1} µs", seconds * 1e6)
    }
}
