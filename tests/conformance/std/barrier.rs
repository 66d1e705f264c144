//! Conformance of `ppd::sync::Barrier` and `BarrierWaitResult` with the documented behaviour
//! of `std::sync::Barrier`: `n - 1` threads block until the `n`th arrives, exactly one leader
//! per rendezvous, reuse across generations, and a barrier of one.

use std::sync::Arc;

use ppd::sync::Barrier;
use ppd::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use ppd::thread;

/// Runs `body(i)` in `n` threads and returns their results in thread order.
fn run_n<T: Send + 'static>(n: usize, body: impl Fn(usize) -> T + Send + Sync + 'static) -> Vec<T> {
    let body = Arc::new(body);
    let handles: Vec<_> = (0..n)
        .map(|i| {
            let body = Arc::clone(&body);
            thread::spawn(move || body(i))
        })
        .collect();
    handles.into_iter().map(|h| h.join().unwrap()).collect()
}

/// std `wait`: "A single (arbitrary) thread will receive a BarrierWaitResult that returns true
/// from is_leader() when returning from this function, and all other threads will receive a
/// result that will return false."
#[test]
fn exactly_one_waiter_is_the_leader() {
    let barrier = Arc::new(Barrier::new(4));
    let leaders = run_n(4, move |_| barrier.wait().is_leader());
    assert_eq!(leaders.iter().filter(|l| **l).count(), 1);
}

/// std `new`: "A barrier will block n-1 threads which call wait() and then wake all threads at
/// once when the nth thread calls wait()" — nobody leaves before everybody has arrived.
#[test]
fn no_waiter_leaves_before_all_have_arrived() {
    const N: usize = 4;
    let barrier = Arc::new(Barrier::new(N));
    let arrived = Arc::new(AtomicUsize::new(0));
    let seen = run_n(N, move |_| {
        arrived.fetch_add(1, Ordering::SeqCst);
        barrier.wait();
        arrived.load(Ordering::SeqCst)
    });
    assert_eq!(seen, vec![N; N], "every waiter saw all arrivals when released");
}

/// std `new`: the `n - 1` early callers block until "the nth thread calls wait()" — what the
/// last arriver did before its `wait` is visible to every released waiter.
#[test]
fn early_waiters_stay_blocked_until_the_last_one_calls_wait() {
    let barrier = Arc::new(Barrier::new(3));
    let main_arrived = Arc::new(AtomicBool::new(false));
    let handles: Vec<_> = (0..2)
        .map(|_| {
            let barrier = Arc::clone(&barrier);
            let main_arrived = Arc::clone(&main_arrived);
            thread::spawn(move || {
                barrier.wait();
                main_arrived.load(Ordering::SeqCst)
            })
        })
        .collect();
    main_arrived.store(true, Ordering::SeqCst);
    barrier.wait();
    for h in handles {
        assert!(h.join().unwrap(), "a waiter left before the third party arrived");
    }
}

/// std `wait`: "Barriers are re-usable after all threads have rendezvoused once, and can be
/// used continuously" — each generation has its own single leader and full rendezvous.
#[test]
fn barrier_is_reusable_with_one_leader_per_generation() {
    const N: usize = 3;
    const ROUNDS: usize = 4;
    let barrier = Arc::new(Barrier::new(N));
    let counts: Arc<Vec<AtomicUsize>> = Arc::new((0..ROUNDS).map(|_| AtomicUsize::new(0)).collect());
    let results = run_n(N, move |_| {
        let mut led = 0;
        for round in 0..ROUNDS {
            counts[round].fetch_add(1, Ordering::SeqCst);
            if barrier.wait().is_leader() {
                led += 1;
            }
            assert_eq!(counts[round].load(Ordering::SeqCst), N, "round {round} incomplete");
        }
        led
    });
    assert_eq!(results.iter().sum::<usize>(), ROUNDS, "one leader per generation");
}

/// std `new`: with `n = 1` there are no other threads to block for ("block n-1 threads"), so
/// every `wait` returns at once, and that thread is the leader.
#[test]
fn barrier_of_one_never_blocks_and_always_leads() {
    let barrier = Barrier::new(1);
    for _ in 0..3 {
        assert!(barrier.wait().is_leader());
    }
}

/// std `Barrier::new` is `const`: a barrier can be a `static` shared by the waiting threads.
#[test]
fn const_new_barrier_works_as_a_static() {
    static BARRIER: Barrier = Barrier::new(2);
    let other = thread::spawn(|| BARRIER.wait().is_leader());
    let mine = BARRIER.wait().is_leader();
    assert!(mine ^ other.join().unwrap(), "exactly one of the two leads");
}

/// std: "A barrier enables multiple threads to synchronize the beginning of some computation" —
/// writes made by each thread before the barrier are seen by every thread after it.
#[test]
fn work_done_before_the_barrier_is_seen_by_all_after_it() {
    const N: usize = 3;
    let barrier = Arc::new(Barrier::new(N));
    let slots: Arc<Vec<AtomicUsize>> = Arc::new((0..N).map(|_| AtomicUsize::new(0)).collect());
    let sums = run_n(N, move |i| {
        slots[i].store(i + 1, Ordering::SeqCst);
        barrier.wait();
        slots.iter().map(|s| s.load(Ordering::SeqCst)).sum::<usize>()
    });
    assert_eq!(sums, vec![6; N]);
}
