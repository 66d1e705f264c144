//! Conformance of `ppd::sync::Once` and `OnceState` with the documented behaviour of
//! `std::sync::Once`: `call_once` runs its closure once, `is_completed`, poisoning by a
//! panicking closure, and `call_once_force` with `OnceState::is_poisoned`.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use ppd::sync::Once;
use ppd::sync::atomic::{AtomicUsize, Ordering};
use ppd::thread;

/// Poisons `once` by running a panicking `call_once` (the panic is caught).
fn poison(once: &Once) {
    let r = catch_unwind(AssertUnwindSafe(|| {
        once.call_once(|| panic!("initializer panics, on purpose"));
    }));
    assert!(r.is_err(), "the panic propagates out of call_once");
}

/// std `call_once`: "The given closure will be executed if this is the first time call_once
/// has been called, and otherwise the routine will not be invoked."
#[test]
fn call_once_runs_only_the_first_closure() {
    let once = Once::new();
    let runs = AtomicUsize::new(0);
    once.call_once(|| {
        runs.fetch_add(1, Ordering::SeqCst);
    });
    once.call_once(|| {
        runs.fetch_add(10, Ordering::SeqCst);
    });
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

/// std `is_completed`: returns false when "call_once() was not called at all", and true once
/// "some call_once() call has completed successfully".
#[test]
fn is_completed_is_false_before_and_true_after_call_once() {
    let once = Once::new();
    assert!(!once.is_completed());
    once.call_once(|| {});
    assert!(once.is_completed());
}

/// std `call_once`: "The closure f will only be executed once even if this is called
/// concurrently amongst many threads", and "When this function returns, it is guaranteed that
/// some initialization has run and completed".
#[test]
fn concurrent_call_once_runs_one_closure_and_all_callers_see_it_completed() {
    let once = Arc::new(Once::new());
    let runs = Arc::new(AtomicUsize::new(0));
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let once = Arc::clone(&once);
            let runs = Arc::clone(&runs);
            thread::spawn(move || {
                once.call_once(|| {
                    runs.fetch_add(1, Ordering::SeqCst);
                });
                // Whoever ran it, it has completed by the time call_once returns.
                (runs.load(Ordering::SeqCst), once.is_completed())
            })
        })
        .collect();
    for h in handles {
        assert_eq!(h.join().unwrap(), (1, true));
    }
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

/// std `call_once`: "If that closure panics, however, then it will poison this Once instance,
/// causing all future invocations of call_once to also panic" (without running their closure).
#[test]
fn panicking_closure_poisons_so_later_call_once_panics() {
    let once = Once::new();
    poison(&once);
    let ran = AtomicUsize::new(0);
    let later = catch_unwind(AssertUnwindSafe(|| {
        once.call_once(|| {
            ran.fetch_add(1, Ordering::SeqCst);
        });
    }));
    assert!(later.is_err(), "call_once on a poisoned Once panics");
    assert_eq!(ran.load(Ordering::SeqCst), 0, "its closure is not run");
}

/// std `is_completed`: returns false when "the Once instance is poisoned".
#[test]
fn is_completed_is_false_when_poisoned() {
    let once = Once::new();
    poison(&once);
    assert!(!once.is_completed());
}

/// std `call_once_force`: "if this Once has been poisoned ... calling call_once_force() will
/// still invoke the closure f and will not result in an immediate panic", and the closure's
/// `OnceState::is_poisoned` is true ("the associated Once was poisoned prior to the
/// invocation").
#[test]
fn call_once_force_runs_on_a_poisoned_once_and_reports_the_poison() {
    let once = Once::new();
    poison(&once);
    let mut saw_poison = None;
    once.call_once_force(|state| saw_poison = Some(state.is_poisoned()));
    assert_eq!(saw_poison, Some(true));
}

/// std `call_once_force`: "If f does not panic, the Once will no longer be in a poison state
/// and all future calls to call_once() or call_once_force() will be no-ops."
#[test]
fn successful_call_once_force_clears_poison_and_later_calls_are_no_ops() {
    let once = Once::new();
    poison(&once);
    once.call_once_force(|_| {});
    assert!(once.is_completed());
    let runs = AtomicUsize::new(0);
    once.call_once(|| {
        runs.fetch_add(1, Ordering::SeqCst);
    });
    once.call_once_force(|_| {
        runs.fetch_add(1, Ordering::SeqCst);
    });
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

/// std `call_once_force`: "If f panics, the Once will remain in a poison state" — the next
/// forced call still sees `is_poisoned()`, and `call_once` still panics.
#[test]
fn panicking_call_once_force_leaves_the_once_poisoned() {
    let once = Once::new();
    poison(&once);
    let r = catch_unwind(AssertUnwindSafe(|| {
        once.call_once_force(|_| panic!("forced initializer panics too, on purpose"));
    }));
    assert!(r.is_err());
    assert!(!once.is_completed());
    assert!(catch_unwind(AssertUnwindSafe(|| once.call_once(|| {}))).is_err());
    let mut saw_poison = None;
    once.call_once_force(|state| saw_poison = Some(state.is_poisoned()));
    assert_eq!(saw_poison, Some(true));
}

/// std `OnceState::is_poisoned`: true only if the `Once` was poisoned before the closure was
/// invoked — on a fresh `Once`, `call_once_force` sees it false and completes it.
#[test]
fn call_once_force_on_a_fresh_once_is_not_poisoned() {
    let once = Once::new();
    let mut saw_poison = None;
    once.call_once_force(|state| saw_poison = Some(state.is_poisoned()));
    assert_eq!(saw_poison, Some(false));
    assert!(once.is_completed());
}

/// std `Once::new` is `const` ("Creates a new Once value"): a `static` Once initializes a
/// shared value once for all threads.
#[test]
fn static_once_initializes_once_across_threads() {
    static INIT: Once = Once::new();
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    let handles: Vec<_> = (0..3)
        .map(|_| {
            thread::spawn(|| {
                INIT.call_once(|| {
                    RUNS.fetch_add(1, Ordering::SeqCst);
                })
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    assert!(INIT.is_completed());
    assert_eq!(RUNS.load(Ordering::SeqCst), 1);
}

/// std `wait`: "Blocks the current thread until initialization has completed", and "If this
/// Once has been poisoned because an initialization closure has panicked, this method will
/// also panic".
#[test]
fn wait_returns_once_another_thread_completes_and_panics_when_poisoned() {
    let once = Arc::new(Once::new());
    let ran = Arc::new(AtomicUsize::new(0));
    let waiter = {
        let (once, ran) = (Arc::clone(&once), Arc::clone(&ran));
        thread::spawn(move || {
            once.wait();
            ran.load(Ordering::SeqCst)
        })
    };
    once.call_once(|| {
        ran.store(1, Ordering::SeqCst);
    });
    assert_eq!(waiter.join().unwrap(), 1, "wait returned after the closure ran");

    let poisoned = Once::new();
    poison(&poisoned);
    let r = catch_unwind(AssertUnwindSafe(|| poisoned.wait()));
    assert!(r.is_err(), "wait on a poisoned Once panics");
}

/// std `wait_force`: "Blocks the current thread until initialization has completed, ignoring
/// poisoning": it waits on through a panicked closure until one completes.
#[test]
fn wait_force_waits_through_poisoning_until_a_call_completes() {
    let once = Arc::new(Once::new());
    poison(&once);
    let waiter = {
        let once = Arc::clone(&once);
        thread::spawn(move || {
            once.wait_force();
            once.is_completed()
        })
    };
    once.call_once_force(|state| assert!(state.is_poisoned()));
    assert!(waiter.join().unwrap());
}
