//! Conformance of `ppd::sync::Condvar` with the documented behaviour of `std::sync::Condvar`:
//! `wait` (unlocks while blocked, re-locks before returning, reports poison), `wait_while`,
//! `wait_timeout`, `wait_timeout_while` and its `WaitTimeoutResult`, `notify_one` and
//! `notify_all`.

use std::sync::Arc;
use std::time::Duration;

use ppd::sync::{Condvar, Mutex, TryLockError};
use ppd::thread;

/// Long enough never to expire in a passing run: a bound that turns a lost wake-up into a
/// failure rather than a hang.
const NEVER: Duration = Duration::from_secs(20);

/// State shared by waiters and the notifier: how many waiters are parked, and the go flag.
struct Gate {
    state: Mutex<(usize, bool)>,
    /// Notified by the waiters each time one of them starts waiting.
    arrived: Condvar,
    /// Notified by the main thread once `go` is set.
    go: Condvar,
}

/// std `wait_while`: "The condition is checked immediately; if not met (returns true), this
/// will wait for the next notification" — when it is already false the call returns at once,
/// with no notification at all.
#[test]
fn wait_while_returns_at_once_when_the_condition_is_already_false() {
    let m = Mutex::new(3);
    let cv = Condvar::new();
    let guard = cv.wait_while(m.lock().unwrap(), |v| *v != 3).unwrap();
    assert_eq!(*guard, 3);
}

/// std `wait`: "atomically unlock the mutex specified ... and block the current thread";
/// the notifier can take the lock meanwhile, and "when this function call returns, the lock
/// specified will have been re-acquired". Used in a loop because of spurious wake-ups.
#[test]
fn wait_unlocks_while_blocked_and_relocks_before_returning() {
    let pair = Arc::new((Mutex::new(false), Condvar::new()));
    let p2 = Arc::clone(&pair);
    let notifier = thread::spawn(move || {
        let (m, cv) = &*p2;
        *m.lock().unwrap() = true;
        cv.notify_one();
    });
    let (m, cv) = &*pair;
    let mut ready = m.lock().unwrap();
    while !*ready {
        ready = cv.wait(ready).unwrap();
    }
    assert!(*ready);
    // The guard returned holds the lock again.
    let p3 = Arc::clone(&pair);
    let probe = thread::spawn(move || matches!(p3.0.try_lock(), Err(TryLockError::WouldBlock)));
    assert!(probe.join().unwrap(), "the mutex is held by the returned guard");
    drop(ready);
    notifier.join().unwrap();
}

/// std `wait_while`: blocks "until the provided condition becomes false", re-checking it after
/// every notification; it returns holding the lock with the condition false.
#[test]
fn wait_while_blocks_until_the_notifier_makes_the_condition_false() {
    let pair = Arc::new((Mutex::new(0u32), Condvar::new()));
    let p2 = Arc::clone(&pair);
    let producer = thread::spawn(move || {
        for _ in 0..5 {
            *p2.0.lock().unwrap() += 1;
            p2.1.notify_one();
        }
    });
    let (m, cv) = &*pair;
    let guard = cv.wait_while(m.lock().unwrap(), |n| *n < 5).unwrap();
    assert_eq!(*guard, 5);
    drop(guard);
    producer.join().unwrap();
}

/// std `notify_all`: "Wakes up all blocked threads on this condvar" — every waiter that is
/// blocked when it is called returns from its wait.
#[test]
fn notify_all_wakes_every_blocked_waiter() {
    const WAITERS: usize = 3;
    let gate = Arc::new(Gate {
        state: Mutex::new((0, false)),
        arrived: Condvar::new(),
        go: Condvar::new(),
    });
    let handles: Vec<_> = (0..WAITERS)
        .map(|_| {
            let gate = Arc::clone(&gate);
            thread::spawn(move || {
                let mut st = gate.state.lock().unwrap();
                st.0 += 1;
                gate.arrived.notify_all();
                let (st, res) = gate.go.wait_timeout_while(st, NEVER, |st| !st.1).unwrap();
                assert!(st.1);
                !res.timed_out()
            })
        })
        .collect();
    {
        let st = gate.state.lock().unwrap();
        // Under the lock with every waiter counted: each of them has released it by waiting.
        let mut st = gate.arrived.wait_while(st, |st| st.0 < WAITERS).unwrap();
        st.1 = true;
        gate.go.notify_all();
    }
    for h in handles {
        assert!(h.join().unwrap(), "every waiter was woken by notify_all");
    }
}

/// std `notify_one`: "If there is a blocked thread on this condition variable, then it will
/// be woken up from its call to wait or wait_timeout."
#[test]
fn notify_one_wakes_a_blocked_waiter() {
    let gate = Arc::new(Gate {
        state: Mutex::new((0, false)),
        arrived: Condvar::new(),
        go: Condvar::new(),
    });
    let g2 = Arc::clone(&gate);
    let waiter = thread::spawn(move || {
        let mut st = g2.state.lock().unwrap();
        st.0 = 1;
        g2.arrived.notify_one();
        let (_st, res) = g2.go.wait_timeout_while(st, NEVER, |st| !st.1).unwrap();
        !res.timed_out()
    });
    {
        let st = gate.state.lock().unwrap();
        let mut st = gate.arrived.wait_while(st, |st| st.0 == 0).unwrap();
        st.1 = true;
        gate.go.notify_one();
    }
    assert!(waiter.join().unwrap(), "the blocked waiter was woken by notify_one");
}

/// std `wait_timeout_while`: "The returned WaitTimeoutResult value indicates if the timeout is
/// known to have elapsed without the condition being met" — with nobody changing the state it
/// times out, and returns the guard.
#[test]
fn wait_timeout_while_times_out_when_the_condition_stays_true() {
    let m = Mutex::new(1);
    let cv = Condvar::new();
    let (guard, res) = cv
        .wait_timeout_while(m.lock().unwrap(), Duration::from_millis(20), |v| *v == 1)
        .unwrap();
    assert!(res.timed_out());
    assert_eq!(*guard, 1);
}

/// std `wait_timeout_while`: returns once the condition is false, and then `timed_out()` is
/// false; an already-false condition returns at once even with a zero timeout.
#[test]
fn wait_timeout_while_does_not_time_out_when_the_condition_is_met() {
    let m = Mutex::new(false);
    let cv = Condvar::new();
    *m.lock().unwrap() = true;
    let (guard, res) = cv
        .wait_timeout_while(m.lock().unwrap(), Duration::ZERO, |done| !*done)
        .unwrap();
    assert!(!res.timed_out());
    assert!(*guard);
}

/// std `wait_timeout_while`: a notifier that makes the condition false before the timeout ends
/// the wait with `timed_out()` false and the notifier's value visible.
#[test]
fn wait_timeout_while_returns_when_notified_before_the_timeout() {
    let pair = Arc::new((Mutex::new(None::<u32>), Condvar::new()));
    let p2 = Arc::clone(&pair);
    let notifier = thread::spawn(move || {
        *p2.0.lock().unwrap() = Some(99);
        p2.1.notify_all();
    });
    let (m, cv) = &*pair;
    let (guard, res) = cv
        .wait_timeout_while(m.lock().unwrap(), NEVER, |v| v.is_none())
        .unwrap();
    assert!(!res.timed_out());
    assert_eq!(*guard, Some(99));
    drop(guard);
    notifier.join().unwrap();
}

/// std `wait_timeout`: waits "for this condition variable to receive a notification" for at
/// most the duration, and, as `wait`, returns with the lock re-acquired.
#[test]
fn wait_timeout_returns_after_the_timeout_holding_the_lock() {
    let m = Arc::new(Mutex::new(10));
    let cv = Condvar::new();
    let (mut guard, _res) = cv
        .wait_timeout(m.lock().unwrap(), Duration::from_millis(10))
        .unwrap();
    *guard += 1;
    let m2 = Arc::clone(&m);
    let probe = thread::spawn(move || matches!(m2.try_lock(), Err(TryLockError::WouldBlock)));
    assert!(probe.join().unwrap(), "wait_timeout returned holding the lock");
    drop(guard);
    assert_eq!(*m.lock().unwrap(), 11);
}

/// std `wait`/`wait_timeout`: "This function will return an error if the mutex being waited on
/// is poisoned when this thread re-acquires the lock."
#[test]
fn waiting_on_a_poisoned_mutex_returns_an_error() {
    let m = Arc::new(Mutex::new(0));
    let m2 = Arc::clone(&m);
    let joined = thread::spawn(move || {
        let _g = m2.lock().unwrap();
        panic!("poisoning the mutex, on purpose");
    })
    .join();
    assert!(joined.is_err());
    let cv = Condvar::new();
    let guard = m.lock().unwrap_or_else(|e| e.into_inner());
    let err = cv
        .wait_timeout(guard, Duration::from_millis(1))
        .expect_err("the re-acquired mutex is poisoned");
    let (guard, _res) = err.into_inner();
    assert_eq!(*guard, 0);
}
