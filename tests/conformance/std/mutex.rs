//! Conformance of `ppd::sync::Mutex` and `MutexGuard` with the documented behaviour of
//! `std::sync::Mutex`: exclusive access through guards, unlocking on drop, `try_lock` and
//! `WouldBlock`, poisoning (`lock`, `try_lock`, `is_poisoned`, `clear_poison`, recovery through
//! `PoisonError::into_inner`), `into_inner`, `get_mut`, `Default` and `const` construction.

use std::sync::Arc;

use ppd::sync::{Mutex, TryLockError};
use ppd::thread;

/// Panics in another thread while holding `m`'s lock, after setting the data to `value`.
fn poison_with(m: &Arc<Mutex<i32>>, value: i32) {
    let m2 = Arc::clone(m);
    let joined = thread::spawn(move || {
        let mut guard = m2.lock().unwrap();
        *guard = value;
        panic!("panicking while holding the lock, on purpose");
    })
    .join();
    assert!(joined.is_err(), "the poisoning thread must have panicked");
}

/// std: the data "can only be accessed through the RAII guards returned from lock and
/// try_lock, which guarantees that the data is only ever accessed when the mutex is locked"
/// — so concurrent read-modify-write through guards loses no update.
#[test]
fn lock_serializes_access_so_no_increment_is_lost() {
    let counter = Arc::new(Mutex::new(0u32));
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let counter = Arc::clone(&counter);
            thread::spawn(move || {
                for _ in 0..50 {
                    let mut guard = counter.lock().unwrap();
                    let seen = *guard;
                    *guard = seen + 1;
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    assert_eq!(*counter.lock().unwrap(), 200);
}

/// std: the guard is RAII — "when the guard goes out of scope, the mutex will be unlocked",
/// so after dropping it the mutex can be taken again without blocking.
#[test]
fn dropping_the_guard_unlocks_the_mutex() {
    let m = Mutex::new(String::from("a"));
    let mut guard = m.lock().unwrap();
    guard.push('b');
    drop(guard);
    let again = m.try_lock().expect("unlocked after the guard was dropped");
    assert_eq!(*again, "ab");
}

/// std `try_lock`: "If the lock could not be acquired at this time, then Err is returned";
/// it fails with `WouldBlock` when the mutex is already locked, and does not block.
#[test]
fn try_lock_reports_would_block_while_another_thread_holds_the_lock() {
    let m = Arc::new(Mutex::new(1));
    let held = m.lock().unwrap();
    let m2 = Arc::clone(&m);
    let other = thread::spawn(move || matches!(m2.try_lock(), Err(TryLockError::WouldBlock)));
    assert!(other.join().unwrap(), "try_lock on a held mutex must be WouldBlock");
    drop(held);
}

/// std `try_lock`: attempts to acquire the lock and, if it is free, returns the guard (the
/// call "does not block").
#[test]
fn try_lock_acquires_a_free_mutex() {
    let m = Mutex::new(7);
    {
        let mut guard = m.try_lock().expect("a free mutex is acquired by try_lock");
        *guard += 1;
    }
    assert_eq!(*m.lock().unwrap(), 8);
}

/// std: "a mutex becomes poisoned if it recognizes that the thread holding it has panicked";
/// `lock` then returns an error, and `PoisonError::into_inner` still gives the guard with the
/// data as the panicking thread left it.
#[test]
fn panic_while_holding_the_guard_poisons_and_data_stays_reachable() {
    let m = Arc::new(Mutex::new(0));
    poison_with(&m, 41);
    assert!(m.is_poisoned());
    let err = m.lock().expect_err("a poisoned mutex's lock is an error");
    let mut guard = err.into_inner();
    assert_eq!(*guard, 41);
    *guard += 1;
    drop(guard);
    assert_eq!(*m.lock().unwrap_or_else(|e| e.into_inner()), 42);
}

/// std: poisoning happens when "the thread holding it has panicked" — a thread that panics
/// without holding the lock leaves the mutex unpoisoned.
#[test]
fn panic_without_holding_the_guard_does_not_poison() {
    let m = Arc::new(Mutex::new(5));
    let m2 = Arc::clone(&m);
    let joined = thread::spawn(move || {
        {
            let mut guard = m2.lock().unwrap();
            *guard = 6;
        }
        panic!("panicking after the guard was dropped, on purpose");
    })
    .join();
    assert!(joined.is_err());
    assert!(!m.is_poisoned());
    assert_eq!(*m.lock().unwrap(), 6);
}

/// std `try_lock`: "If another user of this mutex panicked while holding the mutex, then this
/// call will return the Poisoned error if the mutex would otherwise be acquired"; the error
/// carries the guard.
#[test]
fn try_lock_on_a_poisoned_mutex_returns_poisoned_with_the_guard() {
    let m = Arc::new(Mutex::new(0));
    poison_with(&m, 3);
    match m.try_lock() {
        Err(TryLockError::Poisoned(e)) => assert_eq!(*e.into_inner(), 3),
        Err(TryLockError::WouldBlock) => panic!("a free poisoned mutex is not WouldBlock"),
        Ok(_) => panic!("a poisoned mutex's try_lock is an error"),
    }
}

/// std `clear_poison`: "If the mutex is poisoned, it will remain poisoned until this function
/// is called", after which it is no longer poisoned and `lock` succeeds.
#[test]
fn clear_poison_lets_lock_succeed_again() {
    let m = Arc::new(Mutex::new(0));
    poison_with(&m, 9);
    assert!(m.is_poisoned());
    assert!(m.is_poisoned(), "poison stays until cleared");
    m.clear_poison();
    assert!(!m.is_poisoned());
    assert_eq!(*m.lock().expect("no longer poisoned"), 9);
}

/// std `into_inner`: consumes the mutex and returns the data; "If another user of this mutex
/// panicked while holding the mutex, then this call will return an error containing the
/// underlying data instead."
#[test]
fn into_inner_returns_the_data_or_an_error_carrying_it_when_poisoned() {
    let clean = Mutex::new(vec![1, 2, 3]);
    assert_eq!(clean.into_inner().unwrap(), vec![1, 2, 3]);

    let m = Arc::new(Mutex::new(0));
    poison_with(&m, 12);
    let m = Arc::into_inner(m).expect("the only reference left");
    let err = m.into_inner().expect_err("poisoned");
    assert_eq!(err.into_inner(), 12);
}

/// std `get_mut`: "Since this call borrows the Mutex mutably, no actual locking needs to take
/// place"; on a poisoned mutex it returns an error that still gives the `&mut` data.
#[test]
fn get_mut_borrows_the_data_without_locking_and_reports_poison() {
    let mut m = Mutex::new(10);
    *m.get_mut().unwrap() += 5;
    assert_eq!(*m.lock().unwrap(), 15);

    let m = Arc::new(Mutex::new(0));
    poison_with(&m, 20);
    let mut m = Arc::into_inner(m).expect("the only reference left");
    let err = m.get_mut().expect_err("poisoned");
    *err.into_inner() += 1;
    assert_eq!(m.into_inner().unwrap_or_else(|e| e.into_inner()), 21);
}

/// std `Default for Mutex<T>`: "Creates a Mutex<T>, with the Default value for T."
#[test]
fn default_mutex_holds_the_default_value_unlocked() {
    let m: Mutex<Vec<u8>> = Mutex::default();
    assert!(!m.is_poisoned());
    assert!(m.try_lock().unwrap().is_empty());
}

/// std `Mutex::new` is `const`: "Creates a new mutex in an unlocked state ready for use",
/// usable to initialize a `static`.
#[test]
fn const_new_mutex_works_as_a_static_shared_by_threads() {
    static TOTAL: Mutex<u64> = Mutex::new(0);
    let handles: Vec<_> = (1..=3u64)
        .map(|i| thread::spawn(move || *TOTAL.lock().unwrap() += i))
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    assert_eq!(*TOTAL.lock().unwrap(), 6);
}

/// std `From<T> for Mutex<T>`: "Creates a new mutex in an unlocked state ready for use"; and
/// `Display for MutexGuard` shows the protected value.
#[test]
fn from_makes_an_unlocked_mutex_and_its_guard_displays_the_value() {
    let m = Mutex::from(7);
    let guard = m.try_lock().expect("a new mutex is unlocked");
    assert_eq!(guard.to_string(), "7");
}
