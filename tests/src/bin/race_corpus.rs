//! `race_corpus NAME`: small programs with known races, and without.
//!
//! Every scenario declares, right above it, the races `ppd races` must report on it: the
//! variable (or channel) and the two source lines, named by `// @marker` comments on those
//! lines. `race_corpus --list` prints every scenario with its expected races resolved to line
//! numbers (it reads its own source). A racy scenario makes its racy accesses unordered by
//! happened-before in every run, whatever the timing; a race-free one orders every conflicting
//! access in every run.
//!
//! The `deadlock_*` scenarios never end: they are for the deadlock tests, which kill them.

use std::process::ExitCode;
use std::sync::Arc;

use ppd::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use ppd::sync::mpsc::named_channel;
use ppd::sync::{Condvar, Mutex, RwLock, Semaphore};
use ppd::thread::JoinHandle;
use serde::Serialize;

use Ordering::{AcqRel, Acquire, Relaxed, Release, SeqCst};

const SOURCE: &str = include_str!("race_corpus.rs");

/// A race a scenario must show: the variable (or channel), the markers of its two sides, its
/// kind, and how many racing pairs of those two sites a run may show.
struct Race {
    var: &'static str,
    a: &'static str,
    b: &'static str,
    kind: &'static str,
    count: (u64, u64),
}

/// A data race whose two sites race once in every run.
const fn data(var: &'static str, a: &'static str, b: &'static str) -> Race {
    Race {
        var,
        a,
        b,
        kind: "data",
        count: (1, 1),
    }
}

/// A message race whose two sends compete once in every run.
const fn message(var: &'static str, a: &'static str, b: &'static str) -> Race {
    Race {
        kind: "message",
        ..data(var, a, b)
    }
}

impl Race {
    /// The same race, shown between `min` and `max` times depending on the interleaving.
    const fn times(self, min: u64, max: u64) -> Race {
        Race {
            count: (min, max),
            ..self
        }
    }
}

/// A scenario and the races it must show.
struct Scenario {
    name: &'static str,
    /// Prefix of the scenario's `// @tag.side` markers.
    tag: &'static str,
    /// The races `ppd races` must report.
    races: &'static [Race],
    /// Runs forever (deadlock scenarios).
    hangs: bool,
    /// The lock-order cycles `ppd races` must report as potential deadlocks, each as the
    /// markers of its acquisitions (the `lock` taken while another mutex was held).
    potential_deadlocks: &'static [&'static [&'static str]],
    run: fn(),
}

fn spawn(name: &str, f: impl FnOnce() + Send + 'static) -> JoinHandle<()> {
    ppd::thread::Builder::new()
        .name(name.to_owned())
        .spawn(f)
        .expect("spawn")
}

fn join(handles: Vec<JoinHandle<()>>) {
    for h in handles {
        h.join().expect("scenario process");
    }
}

fn shared(name: &'static str) -> Arc<AtomicU64> {
    Arc::new(AtomicU64::named(name, 0))
}

// ---------------------------------------------------------------------------------------------
// Racy scenarios.

const RELAXED_STORE_STORE: Scenario = Scenario {
    name: "relaxed_store_store",
    tag: "rss",
    races: &[data("x", "rss.a", "rss.b")],
    hangs: false,
    potential_deadlocks: &[],
    run: || {
        let x = shared("x");
        let (x1, x2) = (x.clone(), x);
        join(vec![
            spawn("a", move || x1.store(1, Relaxed)), // @rss.a
            spawn("b", move || x2.store(2, Relaxed)), // @rss.b
        ]);
    },
};

const RELAXED_LOAD_STORE: Scenario = Scenario {
    name: "relaxed_load_store",
    tag: "rls",
    races: &[data("x", "rls.a", "rls.b")],
    hangs: false,
    potential_deadlocks: &[],
    run: || {
        let x = shared("x");
        let (x1, x2) = (x.clone(), x);
        join(vec![
            spawn("a", move || {
                let _ = x1.load(Relaxed); // @rls.a
            }),
            spawn("b", move || x2.store(2, Relaxed)), // @rls.b
        ]);
    },
};

/// `racy_counter` in small: a load and a store that should have been one fetch_add.
const LOST_UPDATE: Scenario = Scenario {
    name: "lost_update",
    tag: "lu",
    races: &[
        // Nothing orders the two workers' accesses, whatever the interleaving: each of a
        // worker's 50 loads races with each of the other's 50 stores (2 × 2500 pairs), and each
        // store with each of the other's stores (2500 pairs).
        data("x", "lu.load", "lu.store").times(5000, 5000),
        data("x", "lu.store", "lu.store").times(2500, 2500),
    ],
    hangs: false,
    potential_deadlocks: &[],
    run: || {
        let x = shared("x");
        let workers = (0..2)
            .map(|i| {
                let x = x.clone();
                spawn(&format!("incr-{i}"), move || {
                    for _ in 0..50 {
                        let v = x.load(Relaxed); // @lu.load
                        x.store(v + 1, Relaxed); // @lu.store
                    }
                })
            })
            .collect();
        join(workers);
    },
};

const RELAXED_STORE_ACQUIRE_LOAD: Scenario = Scenario {
    name: "relaxed_store_acquire_load",
    tag: "rsal",
    races: &[data("x", "rsal.a", "rsal.b")],
    hangs: false,
    potential_deadlocks: &[],
    run: || {
        let x = shared("x");
        let (x1, x2) = (x.clone(), x);
        join(vec![
            spawn("a", move || x1.store(1, Relaxed)), // @rsal.a
            spawn("b", move || {
                let _ = x2.load(Acquire); // @rsal.b
            }),
        ]);
    },
};

const RELAXED_LOAD_RELEASE_STORE: Scenario = Scenario {
    name: "relaxed_load_release_store",
    tag: "rlrs",
    races: &[data("x", "rlrs.a", "rlrs.b")],
    hangs: false,
    potential_deadlocks: &[],
    run: || {
        let x = shared("x");
        let (x1, x2) = (x.clone(), x);
        join(vec![
            spawn("a", move || {
                let _ = x1.load(Relaxed); // @rlrs.a
            }),
            spawn("b", move || x2.store(1, Release)), // @rlrs.b
        ]);
    },
};

const RELAXED_LOAD_VS_RMW: Scenario = Scenario {
    name: "relaxed_load_vs_rmw",
    tag: "rlr",
    races: &[data("x", "rlr.a", "rlr.b")],
    hangs: false,
    potential_deadlocks: &[],
    run: || {
        let x = shared("x");
        let (x1, x2) = (x.clone(), x);
        join(vec![
            spawn("a", move || {
                let _ = x1.fetch_add(1, SeqCst); // @rlr.a
            }),
            spawn("b", move || {
                let _ = x2.load(Relaxed); // @rlr.b
            }),
        ]);
    },
};

const RELAXED_STORE_VS_RMW: Scenario = Scenario {
    name: "relaxed_store_vs_rmw",
    tag: "rsr",
    races: &[data("x", "rsr.a", "rsr.b")],
    hangs: false,
    potential_deadlocks: &[],
    run: || {
        let x = shared("x");
        let (x1, x2) = (x.clone(), x);
        join(vec![
            spawn("a", move || {
                let _ = x1.fetch_add(1, SeqCst); // @rsr.a
            }),
            spawn("b", move || x2.store(5, Relaxed)), // @rsr.b
        ]);
    },
};

/// Publication with relaxed accesses only: both the flag and the data race.
const RELAXED_PUBLICATION: Scenario = Scenario {
    name: "relaxed_publication",
    tag: "rp",
    races: &[
        // The store races with every load of the reader, as many as it spun: at least the one
        // that sees it.
        data("flag", "rp.fw", "rp.fr").times(1, u64::MAX),
        data("data", "rp.dw", "rp.dr"),
    ],
    hangs: false,
    potential_deadlocks: &[],
    run: || {
        let (data, flag) = (shared("data"), shared("flag"));
        let (d1, f1, d2, f2) = (data.clone(), flag.clone(), data, flag);
        join(vec![
            spawn("writer", move || {
                d1.store(42, Relaxed); // @rp.dw
                f1.store(1, Relaxed); // @rp.fw
            }),
            spawn("reader", move || {
                loop {
                    let seen = f2.load(Relaxed); // @rp.fr
                    if seen != 0 {
                        break;
                    }
                    ppd::thread::yield_now();
                }
                let _ = d2.load(Relaxed); // @rp.dr
            }),
        ]);
    },
};

/// The writer releases, but the reader does not acquire.
const RELEASE_WITHOUT_ACQUIRE: Scenario = Scenario {
    name: "release_without_acquire",
    tag: "rwa",
    races: &[
        // The store races with every load of the reader, as many as it spun: at least the one
        // that sees it.
        data("flag", "rwa.fw", "rwa.fr").times(1, u64::MAX),
        data("data", "rwa.dw", "rwa.dr"),
    ],
    hangs: false,
    potential_deadlocks: &[],
    run: || {
        let (data, flag) = (shared("data"), shared("flag"));
        let (d1, f1, d2, f2) = (data.clone(), flag.clone(), data, flag);
        join(vec![
            spawn("writer", move || {
                d1.store(42, Relaxed); // @rwa.dw
                f1.store(1, Release); // @rwa.fw
            }),
            spawn("reader", move || {
                loop {
                    let seen = f2.load(Relaxed); // @rwa.fr
                    if seen != 0 {
                        break;
                    }
                    ppd::thread::yield_now();
                }
                let _ = d2.load(Relaxed); // @rwa.dr
            }),
        ]);
    },
};

/// The reader acquires, but the writer does not release.
const ACQUIRE_WITHOUT_RELEASE: Scenario = Scenario {
    name: "acquire_without_release",
    tag: "awr",
    races: &[
        // The store races with every load of the reader, as many as it spun: at least the one
        // that sees it.
        data("flag", "awr.fw", "awr.fr").times(1, u64::MAX),
        data("data", "awr.dw", "awr.dr"),
    ],
    hangs: false,
    potential_deadlocks: &[],
    run: || {
        let (data, flag) = (shared("data"), shared("flag"));
        let (d1, f1, d2, f2) = (data.clone(), flag.clone(), data, flag);
        join(vec![
            spawn("writer", move || {
                d1.store(42, Relaxed); // @awr.dw
                f1.store(1, Relaxed); // @awr.fw
            }),
            spawn("reader", move || {
                loop {
                    let seen = f2.load(Acquire); // @awr.fr
                    if seen != 0 {
                        break;
                    }
                    ppd::thread::yield_now();
                }
                let _ = d2.load(Relaxed); // @awr.dr
            }),
        ]);
    },
};

/// Each side holds a lock, but not the same one.
const DIFFERENT_MUTEXES: Scenario = Scenario {
    name: "different_mutexes",
    tag: "dm",
    races: &[data("x", "dm.a", "dm.b")],
    hangs: false,
    potential_deadlocks: &[],
    run: || {
        let x = shared("x");
        let m1 = Arc::new(Mutex::named("m1", 0u64));
        let m2 = Arc::new(Mutex::named("m2", 0u64));
        let (x1, x2) = (x.clone(), x);
        join(vec![
            spawn("a", move || {
                let _g = m1.lock().expect("m1");
                x1.store(1, Relaxed); // @dm.a
            }),
            spawn("b", move || {
                let _g = m2.lock().expect("m2");
                x2.store(2, Relaxed); // @dm.b
            }),
        ]);
    },
};

/// One side locks, the other does not.
const LOCK_AND_NO_LOCK: Scenario = Scenario {
    name: "lock_and_no_lock",
    tag: "lnl",
    races: &[data("x", "lnl.a", "lnl.b")],
    hangs: false,
    potential_deadlocks: &[],
    run: || {
        let x = shared("x");
        let m = Arc::new(Mutex::named("m", 0u64));
        let (x1, x2) = (x.clone(), x);
        join(vec![
            spawn("locker", move || {
                let _g = m.lock().expect("m");
                x1.store(1, Relaxed); // @lnl.a
            }),
            spawn("reader", move || {
                let _ = x2.load(Relaxed); // @lnl.b
            }),
        ]);
    },
};

const MESSAGE_RACE_TWO_SENDERS: Scenario = Scenario {
    name: "message_race_two_senders",
    tag: "mr2",
    races: &[message("jobs", "mr2.a", "mr2.b")],
    hangs: false,
    potential_deadlocks: &[],
    run: || {
        let (tx, rx) = named_channel::<u64>("jobs");
        let tx2 = tx.clone();
        let senders = vec![
            spawn("a", move || tx.send(1).expect("send")), // @mr2.a
            spawn("b", move || tx2.send(2).expect("send")), // @mr2.b
        ];
        rx.recv().expect("first");
        rx.recv().expect("second");
        join(senders);
    },
};

const MESSAGE_RACE_THREE_SENDERS: Scenario = Scenario {
    name: "message_race_three_senders",
    tag: "mr3",
    races: &[
        message("jobs", "mr3.a", "mr3.b"),
        message("jobs", "mr3.a", "mr3.c"),
        message("jobs", "mr3.b", "mr3.c"),
    ],
    hangs: false,
    potential_deadlocks: &[],
    run: || {
        let (tx, rx) = named_channel::<u64>("jobs");
        let (tx2, tx3) = (tx.clone(), tx.clone());
        let senders = vec![
            spawn("a", move || tx.send(1).expect("send")), // @mr3.a
            spawn("b", move || tx2.send(2).expect("send")), // @mr3.b
            spawn("c", move || tx3.send(3).expect("send")), // @mr3.c
        ];
        for _ in 0..3 {
            rx.recv().expect("message");
        }
        join(senders);
    },
};

/// `a` sends before telling `b` to send, so only `c` races with either.
const MESSAGE_RACE_PARTIAL_ORDER: Scenario = Scenario {
    name: "message_race_partial_order",
    tag: "mrp",
    races: &[
        message("jobs", "mrp.a", "mrp.c"),
        message("jobs", "mrp.b", "mrp.c"),
    ],
    hangs: false,
    potential_deadlocks: &[],
    run: || {
        let (tx, rx) = named_channel::<u64>("jobs");
        let (go, wait) = named_channel::<()>("go");
        let (tx2, tx3) = (tx.clone(), tx.clone());
        let senders = vec![
            spawn("a", move || {
                tx.send(1).expect("send"); // @mrp.a
                go.send(()).expect("go");
            }),
            spawn("b", move || {
                wait.recv().expect("go");
                tx2.send(2).expect("send"); // @mrp.b
            }),
            spawn("c", move || tx3.send(3).expect("send")), // @mrp.c
        ];
        for _ in 0..3 {
            rx.recv().expect("message");
        }
        join(senders);
    },
};

/// The child reads what the parent writes after spawning it.
const WRITE_AFTER_SPAWN: Scenario = Scenario {
    name: "write_after_spawn",
    tag: "was",
    races: &[data("x", "was.parent", "was.child")],
    hangs: false,
    potential_deadlocks: &[],
    run: || {
        let x = shared("x");
        let x1 = x.clone();
        let child = spawn("child", move || {
            let _ = x1.load(Relaxed); // @was.child
        });
        x.store(1, Relaxed); // @was.parent
        join(vec![child]);
    },
};

/// The parent joins the wrong child before reading.
const JOIN_THE_WRONG_CHILD: Scenario = Scenario {
    name: "join_the_wrong_child",
    tag: "jwc",
    races: &[data("x", "jwc.write", "jwc.read")],
    hangs: false,
    potential_deadlocks: &[],
    run: || {
        let x = shared("x");
        let x1 = x.clone();
        let writer = spawn("writer", move || x1.store(1, Relaxed)); // @jwc.write
        let idle = spawn("idle", || {});
        join(vec![idle]);
        let _ = x.load(Relaxed); // @jwc.read
        join(vec![writer]);
    },
};

/// Two permits let both in at once.
const SEMAPHORE_TWO_PERMITS: Scenario = Scenario {
    name: "semaphore_two_permits",
    tag: "stp",
    races: &[data("x", "stp.a", "stp.b")],
    hangs: false,
    potential_deadlocks: &[],
    run: || {
        let x = shared("x");
        let sem = Arc::new(Semaphore::new(2));
        let (x1, x2, s1, s2) = (x.clone(), x, sem.clone(), sem);
        join(vec![
            spawn("a", move || {
                s1.acquire();
                x1.store(1, Relaxed); // @stp.a
                s1.release();
            }),
            spawn("b", move || {
                s2.acquire();
                x2.store(2, Relaxed); // @stp.b
                s2.release();
            }),
        ]);
    },
};

const SEQCST_STORE_RELAXED_STORE: Scenario = Scenario {
    name: "seqcst_store_relaxed_store",
    tag: "ssrs",
    races: &[data("x", "ssrs.a", "ssrs.b")],
    hangs: false,
    potential_deadlocks: &[],
    run: || {
        let x = shared("x");
        let (x1, x2) = (x.clone(), x);
        join(vec![
            spawn("a", move || x1.store(1, SeqCst)),  // @ssrs.a
            spawn("b", move || x2.store(2, Relaxed)), // @ssrs.b
        ]);
    },
};

/// A relaxed read-modify-write publishes nothing: the flag never races (read-modify-writes
/// are indivisible), the data does.
const RELAXED_RMW_PUBLISHES_NOTHING: Scenario = Scenario {
    name: "relaxed_rmw_publishes_nothing",
    tag: "rrpn",
    races: &[data("data", "rrpn.w", "rrpn.r")],
    hangs: false,
    potential_deadlocks: &[],
    run: || {
        let (data, flag) = (shared("data"), shared("flag"));
        let (d1, f1, d2, f2) = (data.clone(), flag.clone(), data, flag);
        join(vec![
            spawn("writer", move || {
                d1.store(42, Relaxed); // @rrpn.w
                f1.fetch_add(1, Relaxed);
            }),
            spawn("reader", move || {
                while f2.fetch_add(0, Acquire) == 0 {
                    ppd::thread::yield_now();
                }
                let _ = d2.load(Relaxed); // @rrpn.r
            }),
        ]);
    },
};

const SWAP_VS_RELAXED_LOAD: Scenario = Scenario {
    name: "swap_vs_relaxed_load",
    tag: "svl",
    races: &[data("x", "svl.a", "svl.b")],
    hangs: false,
    potential_deadlocks: &[],
    run: || {
        let x = shared("x");
        let (x1, x2) = (x.clone(), x);
        join(vec![
            spawn("a", move || {
                let _ = x1.swap(5, AcqRel); // @svl.a
            }),
            spawn("b", move || {
                let _ = x2.load(Relaxed); // @svl.b
            }),
        ]);
    },
};

/// Whether the compare-exchange succeeds or fails, the relaxed store races with it.
const CAS_VS_RELAXED_STORE: Scenario = Scenario {
    name: "cas_vs_relaxed_store",
    tag: "cvs",
    races: &[data("x", "cvs.a", "cvs.b")],
    hangs: false,
    potential_deadlocks: &[],
    run: || {
        let x = shared("x");
        let (x1, x2) = (x.clone(), x);
        join(vec![
            spawn("a", move || {
                let _ = x1.compare_exchange(0, 1, SeqCst, SeqCst); // @cvs.a
            }),
            spawn("b", move || x2.store(7, Relaxed)), // @cvs.b
        ]);
    },
};

/// An unnamed `AtomicBool`, the first object `main` uses (objects are registered at their first
/// use): reported by its id.
const RELAXED_BOOL: Scenario = Scenario {
    name: "relaxed_bool",
    tag: "rb",
    races: &[data("#0.0", "rb.a", "rb.b")],
    hangs: false,
    potential_deadlocks: &[],
    run: || {
        let b = Arc::new(AtomicBool::new(false));
        assert!(!b.load(Relaxed), "main uses it first: its id is main's");
        let (b1, b2) = (b.clone(), b);
        join(vec![
            spawn("a", move || b1.store(true, Relaxed)), // @rb.a
            spawn("b", move || {
                let _ = b2.load(Relaxed); // @rb.b
            }),
        ]);
    },
};

/// A message race and a data race in one run: two workers report on one channel and both
/// write the same statistic without ordering.
const RACY_WORKERS: Scenario = Scenario {
    name: "racy_workers",
    tag: "rw",
    races: &[
        message("results", "rw.send", "rw.send"),
        data("done", "rw.stat", "rw.stat"),
    ],
    hangs: false,
    potential_deadlocks: &[],
    run: || {
        let done = shared("done");
        let (tx, rx) = named_channel::<u64>("results");
        let workers = (0..2)
            .map(|i| {
                let (tx, done) = (tx.clone(), done.clone());
                spawn(&format!("worker-{i}"), move || {
                    tx.send(i).expect("send"); // @rw.send
                    done.store(i, Relaxed); // @rw.stat
                })
            })
            .collect();
        drop(tx);
        rx.recv().expect("first");
        rx.recv().expect("second");
        join(workers);
    },
};

/// A failed compare-exchange reads the writer's release store, but its failure ordering is
/// relaxed: it does not acquire, whatever its success ordering.
const CAS_FAILURE_RELAXED: Scenario = Scenario {
    name: "cas_failure_relaxed",
    tag: "cfr",
    races: &[data("data", "cfr.dw", "cfr.dr")],
    hangs: false,
    potential_deadlocks: &[],
    run: || {
        let (data, flag) = (shared("data"), shared("flag"));
        let (d1, f1, d2, f2) = (data.clone(), flag.clone(), data, flag);
        join(vec![
            spawn("writer", move || {
                d1.store(42, Relaxed); // @cfr.dw
                f1.store(1, Release);
            }),
            spawn("reader", move || {
                // Never succeeds: fails reading 0 until it reads the writer's 1.
                while f2.compare_exchange(7, 8, AcqRel, Relaxed) != Err(1) {
                    ppd::thread::yield_now();
                }
                let _ = d2.load(Relaxed); // @cfr.dr
            }),
        ]);
    },
};

// ---------------------------------------------------------------------------------------------
// Race-free scenarios.

const FETCH_ADD_COUNTER: Scenario = Scenario {
    name: "fetch_add_counter",
    tag: "",
    races: &[],
    hangs: false,
    potential_deadlocks: &[],
    run: || {
        let x = shared("x");
        let workers = (0..3)
            .map(|i| {
                let x = x.clone();
                spawn(&format!("incr-{i}"), move || {
                    for _ in 0..100 {
                        x.fetch_add(1, SeqCst);
                    }
                })
            })
            .collect();
        join(workers);
        assert_eq!(x.load(Relaxed), 300);
    },
};

const RELAXED_RMW_COUNTER: Scenario = Scenario {
    name: "relaxed_rmw_counter",
    tag: "",
    races: &[],
    hangs: false,
    potential_deadlocks: &[],
    run: || {
        let x = shared("x");
        let workers = (0..3)
            .map(|i| {
                let x = x.clone();
                spawn(&format!("incr-{i}"), move || {
                    for _ in 0..100 {
                        x.fetch_add(1, Relaxed);
                    }
                })
            })
            .collect();
        join(workers);
        assert_eq!(x.load(Relaxed), 300);
    },
};

const MUTEX_PROTECTED: Scenario = Scenario {
    name: "mutex_protected",
    tag: "",
    races: &[],
    hangs: false,
    potential_deadlocks: &[],
    run: || {
        let x = shared("x");
        let m = Arc::new(Mutex::named("m", 0u64));
        let workers = (0..3)
            .map(|i| {
                let (x, m) = (x.clone(), m.clone());
                spawn(&format!("incr-{i}"), move || {
                    for _ in 0..20 {
                        let _g = m.lock().expect("m");
                        let v = x.load(Relaxed);
                        x.store(v + 1, Relaxed);
                    }
                })
            })
            .collect();
        join(workers);
        assert_eq!(x.load(Relaxed), 60);
    },
};

fn publication(release: Ordering, acquire: Ordering) {
    let (data, flag) = (shared("data"), shared("flag"));
    let (d1, f1, d2, f2) = (data.clone(), flag.clone(), data, flag);
    join(vec![
        spawn("writer", move || {
            d1.store(42, Relaxed);
            f1.store(1, release);
        }),
        spawn("reader", move || {
            while f2.load(acquire) == 0 {
                ppd::thread::yield_now();
            }
            assert_eq!(d2.load(Relaxed), 42);
        }),
    ]);
}

const RELEASE_ACQUIRE_PUBLICATION: Scenario = Scenario {
    name: "release_acquire_publication",
    tag: "",
    races: &[],
    hangs: false,
    potential_deadlocks: &[],
    run: || publication(Release, Acquire),
};

const SEQCST_PUBLICATION: Scenario = Scenario {
    name: "seqcst_publication",
    tag: "",
    races: &[],
    hangs: false,
    potential_deadlocks: &[],
    run: || publication(SeqCst, SeqCst),
};

/// The reader acquires a read-modify-write of a third process, which continues the writer's
/// release sequence.
const RELEASE_SEQUENCE: Scenario = Scenario {
    name: "release_sequence",
    tag: "",
    races: &[],
    hangs: false,
    potential_deadlocks: &[],
    run: || {
        let (data, flag) = (shared("data"), shared("flag"));
        let (d1, f1, f2, d3, f3) = (data.clone(), flag.clone(), flag.clone(), data, flag);
        join(vec![
            spawn("writer", move || {
                d1.store(42, Relaxed);
                f1.store(1, Release);
            }),
            spawn("bumper", move || {
                while f2.compare_exchange(1, 2, Relaxed, Relaxed).is_err() {
                    ppd::thread::yield_now();
                }
            }),
            spawn("reader", move || {
                while f3.load(Acquire) != 2 {
                    ppd::thread::yield_now();
                }
                assert_eq!(d3.load(Relaxed), 42);
            }),
        ]);
    },
};

const MESSAGE_PASSING: Scenario = Scenario {
    name: "message_passing",
    tag: "",
    races: &[],
    hangs: false,
    potential_deadlocks: &[],
    run: || {
        let x = shared("x");
        let (tx, rx) = named_channel::<()>("ready");
        let (x1, x2) = (x.clone(), x);
        join(vec![
            spawn("writer", move || {
                x1.store(5, Relaxed);
                tx.send(()).expect("send");
            }),
            spawn("reader", move || {
                rx.recv().expect("recv");
                assert_eq!(x2.load(Relaxed), 5);
            }),
        ]);
    },
};

const SPAWN_ORDERS: Scenario = Scenario {
    name: "spawn_orders",
    tag: "",
    races: &[],
    hangs: false,
    potential_deadlocks: &[],
    run: || {
        let x = shared("x");
        x.store(1, Relaxed);
        let x1 = x;
        join(vec![spawn("child", move || {
            assert_eq!(x1.load(Relaxed), 1)
        })]);
    },
};

const JOIN_ORDERS: Scenario = Scenario {
    name: "join_orders",
    tag: "",
    races: &[],
    hangs: false,
    potential_deadlocks: &[],
    run: || {
        let x = shared("x");
        let x1 = x.clone();
        join(vec![spawn("child", move || x1.store(1, Relaxed))]);
        assert_eq!(x.load(Relaxed), 1);
    },
};

const SEMAPHORE_SIGNAL: Scenario = Scenario {
    name: "semaphore_signal",
    tag: "",
    races: &[],
    hangs: false,
    potential_deadlocks: &[],
    run: || {
        let x = shared("x");
        let sem = Arc::new(Semaphore::new(0));
        let (x1, x2, s1, s2) = (x.clone(), x, sem.clone(), sem);
        join(vec![
            spawn("signaller", move || {
                x1.store(1, Relaxed);
                s1.release();
            }),
            spawn("waiter", move || {
                s2.acquire();
                assert_eq!(x2.load(Relaxed), 1);
            }),
        ]);
    },
};

const SEMAPHORE_AS_MUTEX: Scenario = Scenario {
    name: "semaphore_as_mutex",
    tag: "",
    races: &[],
    hangs: false,
    potential_deadlocks: &[],
    run: || {
        let x = shared("x");
        let sem = Arc::new(Semaphore::new(1));
        let workers = (0..2)
            .map(|i| {
                let (x, sem) = (x.clone(), sem.clone());
                spawn(&format!("incr-{i}"), move || {
                    for _ in 0..10 {
                        sem.acquire();
                        let v = x.load(Relaxed);
                        x.store(v + 1, Relaxed);
                        sem.release();
                    }
                })
            })
            .collect();
        join(workers);
        assert_eq!(x.load(Relaxed), 20);
    },
};

/// Three V's may all come before the first P (no P ever blocks): each P still takes its V's
/// permit, which orders the slot it reads.
const SEMAPHORE_BATCH: Scenario = Scenario {
    name: "semaphore_batch",
    tag: "",
    races: &[],
    hangs: false,
    potential_deadlocks: &[],
    run: || {
        let slots: Arc<Vec<AtomicU64>> =
            Arc::new((0..3).map(|_| AtomicU64::named("slot", 0)).collect());
        let sem = Arc::new(Semaphore::new(0));
        let (w, s1, r, s2) = (slots.clone(), sem.clone(), slots, sem);
        join(vec![
            spawn("producer", move || {
                for (i, slot) in w.iter().enumerate() {
                    slot.store(i as u64 + 1, Relaxed);
                    s1.release();
                }
            }),
            spawn("consumer", move || {
                for (i, slot) in r.iter().enumerate() {
                    s2.acquire();
                    assert_eq!(slot.load(Relaxed), i as u64 + 1);
                }
            }),
        ]);
    },
};

const NESTED_LOCKS: Scenario = Scenario {
    name: "nested_locks",
    tag: "",
    races: &[],
    hangs: false,
    potential_deadlocks: &[],
    run: || {
        let x = shared("x");
        let outer = Arc::new(Mutex::named("outer", 0u64));
        let inner = Arc::new(Mutex::named("inner", 0u64));
        let workers = (0..2)
            .map(|i| {
                let (x, outer, inner) = (x.clone(), outer.clone(), inner.clone());
                spawn(&format!("w-{i}"), move || {
                    for _ in 0..5 {
                        let _o = outer.lock().expect("outer");
                        let _i = inner.lock().expect("inner");
                        x.fetch_add(0, Relaxed);
                        x.store(x.load(Relaxed) + 1, Relaxed);
                    }
                })
            })
            .collect();
        join(workers);
    },
};

const REQUEST_REPLY: Scenario = Scenario {
    name: "request_reply",
    tag: "",
    races: &[],
    hangs: false,
    potential_deadlocks: &[],
    run: || {
        let x = shared("x");
        let (req_tx, req_rx) = named_channel::<u64>("requests");
        let (rep_tx, rep_rx) = named_channel::<u64>("replies");
        let (x1, x2) = (x.clone(), x);
        join(vec![
            spawn("server", move || {
                let n = req_rx.recv().expect("request");
                x1.store(n, Relaxed);
                rep_tx.send(n + 1).expect("reply");
            }),
            spawn("client", move || {
                req_tx.send(41).expect("request");
                let n = rep_rx.recv().expect("reply");
                assert_eq!(x2.load(Relaxed) + 1, n);
            }),
        ]);
    },
};

/// One sender: messages arrive in the order sent, nothing races.
const SINGLE_PRODUCER: Scenario = Scenario {
    name: "single_producer",
    tag: "",
    races: &[],
    hangs: false,
    potential_deadlocks: &[],
    run: || {
        let (tx, rx) = named_channel::<u64>("items");
        join(vec![
            spawn("producer", move || {
                for i in 0..50 {
                    tx.send(i).expect("send");
                }
            }),
            spawn("consumer", move || {
                for i in 0..50 {
                    assert_eq!(rx.recv().expect("item"), i);
                }
            }),
        ]);
    },
};

/// Two senders, but the second sends only after hearing from the first.
const ORDERED_SENDERS: Scenario = Scenario {
    name: "ordered_senders",
    tag: "",
    races: &[],
    hangs: false,
    potential_deadlocks: &[],
    run: || {
        let (tx, rx) = named_channel::<u64>("jobs");
        let (go, wait) = named_channel::<()>("go");
        let tx2 = tx.clone();
        let senders = vec![
            spawn("first", move || {
                tx.send(1).expect("send");
                go.send(()).expect("go");
            }),
            spawn("second", move || {
                wait.recv().expect("go");
                tx2.send(2).expect("send");
            }),
        ];
        assert_eq!(rx.recv().expect("first"), 1);
        assert_eq!(rx.recv().expect("second"), 2);
        join(senders);
    },
};

const BOOL_RELEASE_ACQUIRE: Scenario = Scenario {
    name: "bool_release_acquire",
    tag: "",
    races: &[],
    hangs: false,
    potential_deadlocks: &[],
    run: || {
        let data = shared("data");
        let flag = Arc::new(AtomicBool::new(false));
        let (d1, f1, d2, f2) = (data.clone(), flag.clone(), data, flag);
        join(vec![
            spawn("writer", move || {
                d1.store(7, Relaxed);
                f1.store(true, Release);
            }),
            spawn("reader", move || {
                while !f2.load(Acquire) {
                    ppd::thread::yield_now();
                }
                assert_eq!(d2.load(Relaxed), 7);
            }),
        ]);
    },
};

/// A spin lock built from compare-exchange (acquire) and store (release).
const SPINLOCK: Scenario = Scenario {
    name: "spinlock",
    tag: "",
    races: &[],
    hangs: false,
    potential_deadlocks: &[],
    run: || {
        let x = shared("x");
        let lock = Arc::new(AtomicBool::new(false));
        let workers = (0..2)
            .map(|i| {
                let (x, lock) = (x.clone(), lock.clone());
                spawn(&format!("w-{i}"), move || {
                    for _ in 0..10 {
                        while lock
                            .compare_exchange(false, true, Acquire, Relaxed)
                            .is_err()
                        {
                            ppd::thread::yield_now();
                        }
                        let v = x.load(Relaxed);
                        x.store(v + 1, Relaxed);
                        lock.store(false, Release);
                    }
                })
            })
            .collect();
        join(workers);
        assert_eq!(x.load(Relaxed), 20);
    },
};

/// The grandchild reads what `main` wrote before the chain of spawns.
const SPAWN_CHAIN: Scenario = Scenario {
    name: "spawn_chain",
    tag: "",
    races: &[],
    hangs: false,
    potential_deadlocks: &[],
    run: || {
        let x = shared("x");
        x.store(3, Relaxed);
        let x1 = x;
        join(vec![spawn("child", move || {
            join(vec![spawn("grandchild", move || {
                assert_eq!(x1.load(Relaxed), 3)
            })]);
        })]);
    },
};

const JOIN_ALL: Scenario = Scenario {
    name: "join_all",
    tag: "",
    races: &[],
    hangs: false,
    potential_deadlocks: &[],
    run: || {
        let slots: Arc<Vec<AtomicU64>> =
            Arc::new((0..4).map(|_| AtomicU64::named("slot", 0)).collect());
        let workers = (0..4)
            .map(|i| {
                let slots = slots.clone();
                spawn(&format!("w-{i}"), move || slots[i].store(i as u64, Relaxed))
            })
            .collect();
        join(workers);
        let total: u64 = slots.iter().map(|s| s.load(Relaxed)).sum();
        assert_eq!(total, 6);
    },
};

/// The race-free twin of `cas_failure_relaxed`: the failed compare-exchange that reads the
/// release store has an acquire failure ordering, so it synchronizes with it.
const CAS_FAILURE_ACQUIRE: Scenario = Scenario {
    name: "cas_failure_acquire",
    tag: "cfa",
    races: &[],
    hangs: false,
    potential_deadlocks: &[],
    run: || {
        let (data, flag) = (shared("data"), shared("flag"));
        let (d1, f1, d2, f2) = (data.clone(), flag.clone(), data, flag);
        join(vec![
            spawn("writer", move || {
                d1.store(42, Relaxed);
                f1.store(1, Release);
            }),
            spawn("reader", move || {
                // Never succeeds: fails reading 0 until it reads the writer's 1.
                while f2.compare_exchange(7, 8, Relaxed, Acquire) != Err(1) {
                    ppd::thread::yield_now();
                }
                let _ = d2.load(Relaxed);
            }),
        ]);
    },
};

const FETCH_UPDATE_CONCURRENT: Scenario = Scenario {
    name: "fetch_update_concurrent",
    tag: "",
    races: &[],
    hangs: false,
    potential_deadlocks: &[],
    run: || {
        let x = shared("x");
        let workers = (0..2)
            .map(|i| {
                let x = x.clone();
                spawn(&format!("w-{i}"), move || {
                    for _ in 0..20 {
                        x.fetch_update(SeqCst, SeqCst, |v| Some(v + 1))
                            .expect("update");
                    }
                })
            })
            .collect();
        join(workers);
        assert_eq!(x.load(Relaxed), 40);
    },
};

/// A hand-off through `swap` with acquire-release ordering.
const SWAP_HANDOFF: Scenario = Scenario {
    name: "swap_handoff",
    tag: "",
    races: &[],
    hangs: false,
    potential_deadlocks: &[],
    run: || {
        let (data, slot) = (shared("data"), shared("slot"));
        let (d1, s1, d2, s2) = (data.clone(), slot.clone(), data, slot);
        join(vec![
            spawn("giver", move || {
                d1.store(9, Relaxed);
                s1.swap(1, AcqRel);
            }),
            spawn("taker", move || {
                while s2.swap(0, AcqRel) != 1 {
                    ppd::thread::yield_now();
                }
                assert_eq!(d2.load(Relaxed), 9);
            }),
        ]);
    },
};

/// A token passed around a ring many times: a long run (tens of thousands of events) with
/// one sender per channel.
const TOKEN_RING_LONG: Scenario = Scenario {
    name: "token_ring_long",
    tag: "",
    races: &[],
    hangs: false,
    potential_deadlocks: &[],
    run: || {
        const NODES: usize = 4;
        const ROUNDS: u64 = 1500;
        let mut senders = Vec::new();
        let mut receivers = Vec::new();
        for i in 0..NODES {
            let name: &'static str = ["ring-0", "ring-1", "ring-2", "ring-3"][i];
            let (tx, rx) = named_channel::<u64>(name);
            senders.push(Some(tx));
            receivers.push(Some(rx));
        }
        let nodes = (0..NODES)
            .map(|i| {
                let rx = receivers[i].take().expect("receiver");
                let tx = senders[(i + 1) % NODES].take().expect("sender");
                spawn(&format!("node-{i}"), move || {
                    if i == 0 {
                        tx.send(0).expect("start");
                    }
                    for _ in 0..ROUNDS {
                        let token = rx.recv().expect("token");
                        if token + 1 < ROUNDS * NODES as u64 {
                            tx.send(token + 1).expect("pass the token");
                        }
                    }
                })
            })
            .collect();
        join(nodes);
    },
};

// ---------------------------------------------------------------------------------------------
// Lock-order inversions in runs that complete: potential deadlocks, and look-alikes that are not.

/// Runs `steps` one process after another, each joined before the next starts: the run cannot
/// deadlock, whatever order the steps take their locks in.
fn one_after_another(steps: Vec<(String, Box<dyn FnOnce() + Send>)>) {
    for (name, step) in steps {
        join(vec![spawn(&name, step)]);
    }
}

fn mutexes(names: &[&'static str]) -> Vec<Arc<Mutex<u64>>> {
    names
        .iter()
        .map(|n| Arc::new(Mutex::named(n, 0u64)))
        .collect()
}

/// Five philosophers: four take their left fork then their right, the fifth its right fork
/// (fork-0) after its left (fork-4), closing fork-0 -> fork-1 -> ... -> fork-4 -> fork-0.
const FIVE_PHILOSOPHERS: Scenario = Scenario {
    name: "five_philosophers",
    tag: "fp",
    races: &[],
    hangs: false,
    potential_deadlocks: &[&[
        "fp.right",
        "fp.right",
        "fp.right",
        "fp.right",
        "fp.reversed",
    ]],
    run: || {
        let forks = mutexes(&["fork-0", "fork-1", "fork-2", "fork-3", "fork-4"]);
        let mut steps: Vec<(String, Box<dyn FnOnce() + Send>)> = Vec::new();
        for i in 0..4 {
            let (left, right) = (forks[i].clone(), forks[i + 1].clone());
            steps.push((
                format!("philosopher-{i}"),
                Box::new(move || {
                    let _l = left.lock().expect("left fork");
                    let _r = right.lock().expect("right fork"); // @fp.right
                }),
            ));
        }
        let (left, right) = (forks[4].clone(), forks[0].clone());
        steps.push((
            "philosopher-4".to_owned(),
            Box::new(move || {
                let _l = left.lock().expect("left fork");
                let _r = right.lock().expect("right fork"); // @fp.reversed
            }),
        ));
        one_after_another(steps);
    },
};

/// Two processes take two mutexes in opposite orders, one after the other.
const LOCK_CYCLE_TWO: Scenario = Scenario {
    name: "lock_cycle_two",
    tag: "lc2",
    races: &[],
    hangs: false,
    potential_deadlocks: &[&["lc2.a", "lc2.b"]],
    run: || {
        let m = mutexes(&["m1", "m2"]);
        let (a1, a2, b1, b2) = (m[0].clone(), m[1].clone(), m[0].clone(), m[1].clone());
        one_after_another(vec![
            (
                "a".to_owned(),
                Box::new(move || {
                    let _first = a1.lock().expect("m1");
                    let _second = a2.lock().expect("m2"); // @lc2.a
                }),
            ),
            (
                "b".to_owned(),
                Box::new(move || {
                    let _first = b2.lock().expect("m2");
                    let _second = b1.lock().expect("m1"); // @lc2.b
                }),
            ),
        ]);
    },
};

/// Three processes, each holding one mutex while taking the next: m1 -> m2 -> m3 -> m1.
const LOCK_CYCLE_THREE: Scenario = Scenario {
    name: "lock_cycle_three",
    tag: "lc3",
    races: &[],
    hangs: false,
    potential_deadlocks: &[&["lc3.a", "lc3.b", "lc3.c"]],
    run: || {
        let m = mutexes(&["m1", "m2", "m3"]);
        let pair = |i: usize| (m[i].clone(), m[(i + 1) % 3].clone());
        let ((a1, a2), (b1, b2), (c1, c2)) = (pair(0), pair(1), pair(2));
        one_after_another(vec![
            (
                "a".to_owned(),
                Box::new(move || {
                    let _first = a1.lock().expect("m1");
                    let _second = a2.lock().expect("m2"); // @lc3.a
                }),
            ),
            (
                "b".to_owned(),
                Box::new(move || {
                    let _first = b1.lock().expect("m2");
                    let _second = b2.lock().expect("m3"); // @lc3.b
                }),
            ),
            (
                "c".to_owned(),
                Box::new(move || {
                    let _first = c1.lock().expect("m3");
                    let _second = c2.lock().expect("m1"); // @lc3.c
                }),
            ),
        ]);
    },
};

/// Two processes invert the order of m1 and m2, but both take a gate mutex first: the gate
/// serializes the inversions, so they run concurrently and cannot deadlock.
const GATE_LOCKED_INVERSION: Scenario = Scenario {
    name: "gate_locked_inversion",
    tag: "",
    races: &[],
    hangs: false,
    potential_deadlocks: &[],
    run: || {
        let m = mutexes(&["gate", "m1", "m2"]);
        let (ga, a1, a2) = (m[0].clone(), m[1].clone(), m[2].clone());
        let (gb, b1, b2) = (m[0].clone(), m[1].clone(), m[2].clone());
        join(vec![
            spawn("a", move || {
                for _ in 0..3 {
                    let _gate = ga.lock().expect("gate");
                    let _first = a1.lock().expect("m1");
                    let _second = a2.lock().expect("m2");
                }
            }),
            spawn("b", move || {
                for _ in 0..3 {
                    let _gate = gb.lock().expect("gate");
                    let _first = b2.lock().expect("m2");
                    let _second = b1.lock().expect("m1");
                }
            }),
        ]);
    },
};

/// One process takes m1 then m2, later m2 then m1; another takes each alone. A process cannot
/// wait for itself, so there is nothing to report.
const SINGLE_PROCESS_INVERSION: Scenario = Scenario {
    name: "single_process_inversion",
    tag: "",
    races: &[],
    hangs: false,
    potential_deadlocks: &[],
    run: || {
        let m = mutexes(&["m1", "m2"]);
        let (a1, a2, b1, b2) = (m[0].clone(), m[1].clone(), m[0].clone(), m[1].clone());
        join(vec![
            spawn("inverter", move || {
                {
                    let _first = a1.lock().expect("m1");
                    let _second = a2.lock().expect("m2");
                }
                let _first = a2.lock().expect("m2");
                let _second = a1.lock().expect("m1");
            }),
            spawn("other", move || {
                drop(b1.lock().expect("m1"));
                drop(b2.lock().expect("m2"));
            }),
        ]);
    },
};

// ---------------------------------------------------------------------------------------------
// Deadlocks (never end).

/// Two processes take two mutexes in opposite orders.
const DEADLOCK_LOCKS: Scenario = Scenario {
    name: "deadlock_locks",
    tag: "dl",
    races: &[],
    hangs: true,
    potential_deadlocks: &[],
    run: || {
        let m1 = Arc::new(Mutex::named("m1", 0u64));
        let m2 = Arc::new(Mutex::named("m2", 0u64));
        let (left_has, right_hears) = named_channel::<()>("left-has-m1");
        let (right_has, left_hears) = named_channel::<()>("right-has-m2");
        let (a1, a2, b1, b2) = (m1.clone(), m2.clone(), m1, m2);
        join(vec![
            spawn("left", move || {
                let _first = a1.lock().expect("m1");
                left_has.send(()).expect("tell right");
                left_hears.recv().expect("hear right");
                let _second = a2.lock().expect("m2"); // @dl.left
            }),
            spawn("right", move || {
                let _first = b2.lock().expect("m2");
                right_hears.recv().expect("hear left");
                right_has.send(()).expect("tell left");
                let _second = b1.lock().expect("m1"); // @dl.right
            }),
        ]);
    },
};

/// Each process sends one message to the other, then waits for two.
const DEADLOCK_MESSAGES: Scenario = Scenario {
    name: "deadlock_messages",
    tag: "dmsg",
    races: &[],
    hangs: true,
    potential_deadlocks: &[],
    run: || {
        let (to_right, right_inbox) = named_channel::<u64>("to-right");
        let (to_left, left_inbox) = named_channel::<u64>("to-left");
        join(vec![
            spawn("left", move || {
                to_right.send(1).expect("send");
                left_inbox.recv().expect("first");
                left_inbox.recv().expect("second"); // @dmsg.left
            }),
            spawn("right", move || {
                to_left.send(1).expect("send");
                right_inbox.recv().expect("first");
                right_inbox.recv().expect("second"); // @dmsg.right
            }),
        ]);
    },
};

// A bounded channel's capacity orders a receive before the send it makes room for: with room
// for one message, the second send returns only after the first receive, so the sender's
// read after it is ordered after the receiver's write before that receive.
const BOUNDED_ROOM_ORDERS: Scenario = Scenario {
    name: "bounded_room_orders",
    tag: "",
    races: &[],
    hangs: false,
    potential_deadlocks: &[],
    run: || {
        let x = shared("x");
        let (tx, rx) = ppd::sync::mpsc::sync_channel::<u8>(1);
        let (x1, x2) = (x.clone(), x);
        join(vec![
            spawn("receiver", move || {
                x1.store(5, Relaxed);
                rx.recv().expect("first");
                rx.recv().expect("second");
            }),
            spawn("sender", move || {
                tx.send(1).expect("room");
                tx.send(2).expect("room after the first receive");
                assert_eq!(x2.load(Relaxed), 5);
            }),
        ]);
    },
};

// The same with room for two: the second send does not wait for any receive, so nothing
// orders the receiver's write before the sender's read.
const BOUNDED_ROOM_TO_SPARE: Scenario = Scenario {
    name: "bounded_room_to_spare",
    tag: "brs",
    races: &[data("x", "brs.write", "brs.read")],
    hangs: false,
    potential_deadlocks: &[],
    run: || {
        let x = shared("x");
        let (tx, rx) = ppd::sync::mpsc::sync_channel::<u8>(2);
        let (x1, x2) = (x.clone(), x);
        join(vec![
            spawn("receiver", move || {
                x1.store(5, Relaxed); // @brs.write
                rx.recv().expect("first");
                rx.recv().expect("second");
            }),
            spawn("sender", move || {
                tx.send(1).expect("room");
                tx.send(2).expect("room");
                let _ = x2.load(Relaxed); // @brs.read
            }),
        ]);
    },
};

const SCENARIOS: &[Scenario] = &[
    RELAXED_STORE_STORE,
    RELAXED_LOAD_STORE,
    LOST_UPDATE,
    RELAXED_STORE_ACQUIRE_LOAD,
    RELAXED_LOAD_RELEASE_STORE,
    RELAXED_LOAD_VS_RMW,
    RELAXED_STORE_VS_RMW,
    RELAXED_PUBLICATION,
    RELEASE_WITHOUT_ACQUIRE,
    ACQUIRE_WITHOUT_RELEASE,
    DIFFERENT_MUTEXES,
    LOCK_AND_NO_LOCK,
    MESSAGE_RACE_TWO_SENDERS,
    MESSAGE_RACE_THREE_SENDERS,
    MESSAGE_RACE_PARTIAL_ORDER,
    WRITE_AFTER_SPAWN,
    JOIN_THE_WRONG_CHILD,
    SEMAPHORE_TWO_PERMITS,
    SEQCST_STORE_RELAXED_STORE,
    RELAXED_RMW_PUBLISHES_NOTHING,
    SWAP_VS_RELAXED_LOAD,
    CAS_VS_RELAXED_STORE,
    RELAXED_BOOL,
    RACY_WORKERS,
    CAS_FAILURE_RELAXED,
    FETCH_ADD_COUNTER,
    RELAXED_RMW_COUNTER,
    MUTEX_PROTECTED,
    RELEASE_ACQUIRE_PUBLICATION,
    SEQCST_PUBLICATION,
    RELEASE_SEQUENCE,
    MESSAGE_PASSING,
    SPAWN_ORDERS,
    JOIN_ORDERS,
    SEMAPHORE_SIGNAL,
    SEMAPHORE_AS_MUTEX,
    SEMAPHORE_BATCH,
    NESTED_LOCKS,
    REQUEST_REPLY,
    SINGLE_PRODUCER,
    ORDERED_SENDERS,
    BOOL_RELEASE_ACQUIRE,
    SPINLOCK,
    SPAWN_CHAIN,
    JOIN_ALL,
    CAS_FAILURE_ACQUIRE,
    FETCH_UPDATE_CONCURRENT,
    SWAP_HANDOFF,
    TOKEN_RING_LONG,
    FIVE_PHILOSOPHERS,
    LOCK_CYCLE_TWO,
    LOCK_CYCLE_THREE,
    GATE_LOCKED_INVERSION,
    SINGLE_PROCESS_INVERSION,
    DEADLOCK_LOCKS,
    DEADLOCK_MESSAGES,
    ONCE_LOCK_PUBLICATION,
    BOUNDED_ROOM_ORDERS,
    BOUNDED_ROOM_TO_SPARE,
    RWLOCK_READERS_WRITE,
    RWLOCK_PROTECTED,
    DEADLOCK_RWLOCKS,
    DEADLOCK_CONDVARS,
    DEADLOCK_PARK,
];

/// An expected race with its markers resolved to lines.
#[derive(Serialize)]
struct ExpectedRace {
    var: &'static str,
    a: u32,
    b: u32,
    kind: &'static str,
    /// Fewest and most racing pairs of these sites in one run.
    count: (u64, u64),
}

#[derive(Serialize)]
struct Listing {
    name: &'static str,
    hangs: bool,
    races: Vec<ExpectedRace>,
    /// Expected potential deadlocks, each as the sorted lines of its acquisitions.
    potential_deadlocks: Vec<Vec<u32>>,
    /// Lines of every marker of the scenario (deadlock tests use them).
    markers: Vec<(String, u32)>,
}

/// The line of `// @marker`, which must appear exactly once.
fn line_of(marker: &str) -> Result<u32, String> {
    let tag = format!("// @{marker}");
    let lines: Vec<u32> = SOURCE
        .lines()
        .enumerate()
        .filter(|(_, l)| l.trim_end().ends_with(&tag))
        .map(|(i, _)| i as u32 + 1)
        .collect();
    match lines.as_slice() {
        [line] => Ok(*line),
        [] => Err(format!("no line is marked {tag}")),
        _ => Err(format!("{tag} marks {} lines", lines.len())),
    }
}

fn list() -> Result<Vec<Listing>, String> {
    SCENARIOS
        .iter()
        .map(|s| {
            let races = s
                .races
                .iter()
                .map(|r| {
                    Ok(ExpectedRace {
                        var: r.var,
                        a: line_of(r.a)?,
                        b: line_of(r.b)?,
                        kind: r.kind,
                        count: r.count,
                    })
                })
                .collect::<Result<Vec<_>, String>>()?;
            let potential_deadlocks = s
                .potential_deadlocks
                .iter()
                .map(|cycle| {
                    let mut lines = cycle
                        .iter()
                        .map(|m| line_of(m))
                        .collect::<Result<Vec<_>, String>>()?;
                    lines.sort_unstable();
                    Ok(lines)
                })
                .collect::<Result<Vec<_>, String>>()?;
            let markers = SOURCE
                .lines()
                .enumerate()
                .filter_map(|(i, l)| {
                    let m = l.trim_end().rsplit_once("// @")?.1;
                    let ours = !s.tag.is_empty() && m.split('.').next() == Some(s.tag);
                    ours.then(|| (m.to_owned(), i as u32 + 1))
                })
                .collect();
            Ok(Listing {
                name: s.name,
                hangs: s.hangs,
                races,
                potential_deadlocks,
                markers,
            })
        })
        .collect()
}

#[ppd::main]
fn main() -> ExitCode {
    let arg = std::env::args().nth(1);
    match arg.as_deref() {
        Some("--list") => match list() {
            Ok(listing) => {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&listing).expect("the listing serializes")
                );
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("race_corpus: {e}");
                ExitCode::from(2)
            }
        },
        Some(name) => match SCENARIOS.iter().find(|s| s.name == name) {
            Some(s) => {
                (s.run)();
                ExitCode::SUCCESS
            }
            None => {
                eprintln!("race_corpus: no scenario {name:?}; try --list");
                ExitCode::from(2)
            }
        },
        None => {
            eprintln!("usage: race_corpus NAME | --list");
            ExitCode::from(2)
        }
    }
}

/// A value published through a `OnceLock`: whichever process initializes it writes `data`
/// (relaxed) inside the initializer; every process reads `data` (relaxed) after `get_or_init`
/// returns. Only the cell orders the write before the reads of the others.
const ONCE_LOCK_PUBLICATION: Scenario = Scenario {
    name: "once_lock_publication",
    tag: "",
    races: &[],
    hangs: false,
    potential_deadlocks: &[],
    run: || {
        static CELL: ppd::sync::OnceLock<u64> = ppd::sync::OnceLock::new();
        let data = shared("data");
        let readers = (0..3)
            .map(|i| {
                let data = data.clone();
                spawn(&format!("reader-{i}"), move || {
                    let token = CELL.get_or_init(|| {
                        data.store(10 + i, Relaxed);
                        i
                    });
                    assert_eq!(data.load(Relaxed), 10 + token);
                })
            })
            .collect();
        join(readers);
    },
};

// ---------------------------------------------------------------------------------------------
// Reader-writer locks.

/// Two readers hold the read lock together: it orders neither after the other, so their writes
/// under it race.
const RWLOCK_READERS_WRITE: Scenario = Scenario {
    name: "rwlock_readers_write",
    tag: "rwr",
    races: &[data("x", "rwr.a", "rwr.b")],
    hangs: false,
    potential_deadlocks: &[],
    run: || {
        let x = shared("x");
        let lock = Arc::new(RwLock::named("config", 0u64));
        let (x1, x2, l1, l2) = (x.clone(), x, lock.clone(), lock);
        join(vec![
            spawn("a", move || {
                let _r = l1.read().expect("config");
                x1.store(1, Relaxed); // @rwr.a
            }),
            spawn("b", move || {
                let _r = l2.read().expect("config");
                x2.store(2, Relaxed); // @rwr.b
            }),
        ]);
    },
};

/// Writers update under the write lock, readers read under the read lock: every write is
/// ordered with every other access.
const RWLOCK_PROTECTED: Scenario = Scenario {
    name: "rwlock_protected",
    tag: "",
    races: &[],
    hangs: false,
    potential_deadlocks: &[],
    run: || {
        let x = shared("x");
        let lock = Arc::new(RwLock::named("config", 0u64));
        let mut workers: Vec<JoinHandle<()>> = (0..2)
            .map(|i| {
                let (x, lock) = (x.clone(), lock.clone());
                spawn(&format!("writer-{i}"), move || {
                    for _ in 0..10 {
                        let mut w = lock.write().expect("config");
                        let v = x.load(Relaxed);
                        x.store(v + 1, Relaxed);
                        *w += 1;
                    }
                })
            })
            .collect();
        workers.extend((0..2).map(|i| {
            let (x, lock) = (x.clone(), lock.clone());
            spawn(&format!("reader-{i}"), move || {
                for _ in 0..10 {
                    let r = lock.read().expect("config");
                    assert!(x.load(Relaxed) == *r);
                }
            })
        }));
        join(workers);
        assert_eq!(x.load(Relaxed), 20);
    },
};

/// Each process reads one lock, then wants to write the other: each writer waits for the
/// other's read hold.
const DEADLOCK_RWLOCKS: Scenario = Scenario {
    name: "deadlock_rwlocks",
    tag: "drw",
    races: &[],
    hangs: true,
    potential_deadlocks: &[],
    run: || {
        let r1 = Arc::new(RwLock::named("r1", 0u64));
        let r2 = Arc::new(RwLock::named("r2", 0u64));
        let (left_has, right_hears) = named_channel::<()>("left-reads-r1");
        let (right_has, left_hears) = named_channel::<()>("right-reads-r2");
        let (a1, a2, b1, b2) = (r1.clone(), r2.clone(), r1, r2);
        join(vec![
            spawn("left", move || {
                let _first = a1.read().expect("r1");
                left_has.send(()).expect("tell right");
                left_hears.recv().expect("hear right");
                let _second = a2.write().expect("r2"); // @drw.left
            }),
            spawn("right", move || {
                let _first = b2.read().expect("r2");
                right_hears.recv().expect("hear left");
                right_has.send(()).expect("tell left");
                let _second = b1.write().expect("r1"); // @drw.right
            }),
        ]);
    },
};

// Each process first notifies the other's condvar (nobody waits yet), then waits on its own
// for a flag only the other sets after its own wait: each waits for a notify of a condvar
// whose only other user waits too.
const DEADLOCK_CONDVARS: Scenario = Scenario {
    name: "deadlock_condvars",
    tag: "dcv",
    races: &[],
    hangs: true,
    potential_deadlocks: &[],
    run: || {
        let wake_left = Arc::new((
            Mutex::named("left-flag", false),
            Condvar::named("wake-left"),
        ));
        let wake_right = Arc::new((
            Mutex::named("right-flag", false),
            Condvar::named("wake-right"),
        ));
        let (mine_l, theirs_l) = (wake_left.clone(), wake_right.clone());
        let (mine_r, theirs_r) = (wake_right, wake_left);
        join(vec![
            spawn("left", move || {
                theirs_l.1.notify_one();
                let (flag, wake) = &*mine_l;
                let up = wake.wait_while(flag.lock().expect("flag"), |up| !*up); // @dcv.left
                drop(up);
                *theirs_l.0.lock().expect("flag") = true;
                theirs_l.1.notify_one();
            }),
            spawn("right", move || {
                theirs_r.1.notify_one();
                let (flag, wake) = &*mine_r;
                let up = wake.wait_while(flag.lock().expect("flag"), |up| !*up); // @dcv.right
                drop(up);
                *theirs_r.0.lock().expect("flag") = true;
                theirs_r.1.notify_one();
            }),
        ]);
    },
};

// A process parks until a flag is set, and nobody sets it or unparks it; `main` joins it.
const DEADLOCK_PARK: Scenario = Scenario {
    name: "deadlock_park",
    tag: "dpk",
    races: &[],
    hangs: true,
    potential_deadlocks: &[],
    run: || {
        let go = Arc::new(AtomicBool::named("go", false));
        let seen = go.clone();
        join(vec![spawn("sleeper", move || {
            while !seen.load(Acquire) {
                ppd::thread::park(); // @dpk.park
            }
        })]);
        go.store(true, Release);
    },
};
