//! Conformance of `ppd::sync::LazyLock` with the documented behaviour of
//! `std::sync::LazyLock`: initialization on first access (by `Deref` or `force`), at most once
//! even across threads, poisoning by a panicking initializer, `Default`, and use as a `static`.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use ppd::sync::LazyLock;
use ppd::sync::atomic::{AtomicUsize, Ordering};
use ppd::thread;

/// std: "A value which is initialized on the first access" — creating it runs nothing.
#[test]
fn initializer_does_not_run_before_the_first_access() {
    let calls = AtomicUsize::new(0);
    let lazy = LazyLock::new(|| {
        calls.fetch_add(1, Ordering::SeqCst);
        1
    });
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    assert_eq!(*lazy, 1);
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

/// std: initialized on the first access and then reused — many dereferences run the
/// initializing function once.
#[test]
fn repeated_access_runs_the_initializer_once() {
    let calls = AtomicUsize::new(0);
    let lazy = LazyLock::new(|| {
        calls.fetch_add(1, Ordering::SeqCst);
        vec![1, 2, 3]
    });
    let total: usize = (0..5).map(|_| lazy.len()).sum();
    assert_eq!(total, 15);
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

/// std `force`: "Forces the evaluation of this lazy value and returns a reference to result.
/// This is equivalent to the Deref impl, but is explicit."
#[test]
fn force_is_equivalent_to_deref() {
    let lazy = LazyLock::new(|| String::from("value"));
    let forced: &String = LazyLock::force(&lazy);
    let derefed: &String = &lazy;
    assert_eq!(forced, "value");
    assert!(std::ptr::eq(forced, derefed), "both give the one stored value");
}

/// std: "Since initialization may be called from multiple threads, any dereferencing call will
/// block the calling thread if another initialization routine is currently running" — racing
/// first accesses run the initializer once and all see its value.
#[test]
fn concurrent_first_access_runs_the_initializer_once() {
    let calls = Arc::new(AtomicUsize::new(0));
    let c2 = Arc::clone(&calls);
    let lazy = Arc::new(LazyLock::new(move || {
        c2.fetch_add(1, Ordering::SeqCst);
        42u64
    }));
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let lazy = Arc::clone(&lazy);
            thread::spawn(move || **lazy)
        })
        .collect();
    for h in handles {
        assert_eq!(h.join().unwrap(), 42);
    }
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

/// std `force` (Panics): "If the initialization closure panics ..., the panic is propagated to
/// the caller, and the lock becomes poisoned. This will cause all future accesses of the lock
/// (via force() or a dereference) to panic."
#[test]
fn panicking_initializer_poisons_every_later_access() {
    let calls = AtomicUsize::new(0);
    let lazy: LazyLock<u32, _> = LazyLock::new(|| {
        calls.fetch_add(1, Ordering::SeqCst);
        panic!("initializer panics, on purpose")
    });
    assert!(catch_unwind(AssertUnwindSafe(|| *lazy)).is_err(), "first access panics");
    assert!(catch_unwind(AssertUnwindSafe(|| *LazyLock::force(&lazy))).is_err());
    assert!(catch_unwind(AssertUnwindSafe(|| *lazy)).is_err());
    assert_eq!(calls.load(Ordering::SeqCst), 1, "the initializer is not run again");
}

/// std `Default for LazyLock<T>`: "Creates a new lazy value using Default as the initializing
/// function."
#[test]
fn default_lazy_lock_initializes_to_the_default_value() {
    let lazy: LazyLock<Vec<String>> = LazyLock::default();
    assert!(lazy.is_empty());
    let lazy: LazyLock<u8> = LazyLock::default();
    assert_eq!(*lazy, 0);
}

/// std `new`: "Creates a new lazy value with the given initializing function" — any
/// `FnOnce() -> T`, including a closure that moves captured state in.
#[test]
fn initializer_may_be_a_closure_consuming_captured_state() {
    let words = vec![String::from("a"), String::from("bc")];
    let lazy = LazyLock::new(move || words.into_iter().map(|w| w.len()).sum::<usize>());
    assert_eq!(*lazy, 3);
    assert_eq!(*LazyLock::force(&lazy), 3);
}

/// std: "This type is a thread-safe LazyCell, and can be used in statics" (with the default
/// `fn() -> T` initializer type); the value is computed once for all threads.
#[test]
fn static_lazy_lock_is_computed_once_for_all_threads() {
    static CALLS: AtomicUsize = AtomicUsize::new(0);
    static TABLE: LazyLock<Vec<u32>> = LazyLock::new(|| {
        CALLS.fetch_add(1, Ordering::SeqCst);
        (1..=4).collect()
    });
    let handles: Vec<_> = (0..3).map(|_| thread::spawn(|| TABLE.iter().sum::<u32>())).collect();
    for h in handles {
        assert_eq!(h.join().unwrap(), 10);
    }
    assert_eq!(TABLE[3], 4);
    assert_eq!(CALLS.load(Ordering::SeqCst), 1);
}

/// std `LazyLock::get`: "Returns a reference to the value if initialized, or None if not"; it
/// does not run the initializer.
#[test]
fn get_does_not_initialize() {
    let runs = AtomicUsize::new(0);
    let lazy = LazyLock::new(|| runs.fetch_add(1, Ordering::SeqCst) + 10);
    assert_eq!(LazyLock::get(&lazy), None);
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    assert_eq!(*lazy, 10);
    assert_eq!(LazyLock::get(&lazy), Some(&10));
}

/// std `force_mut` and `DerefMut`: "Forces the evaluation of this lazy value and returns a
/// mutable reference to the result"; `get_mut` returns it only when initialized.
#[test]
fn force_mut_and_deref_mut_initialize_and_give_a_mutable_value() {
    let mut lazy = LazyLock::new(|| vec![1]);
    assert_eq!(LazyLock::get_mut(&mut lazy), None);
    LazyLock::force_mut(&mut lazy).push(2);
    lazy.push(3);
    assert_eq!(LazyLock::get_mut(&mut lazy).map(|v| v.len()), Some(3));
    assert_eq!(*lazy, [1, 2, 3]);
}
