//! Conformance of `ppd::sync::OnceLock` with the documented behaviour of
//! `std::sync::OnceLock`: `get`, `set`, `get_or_init` (one initializer, panics leave the cell
//! empty), `get_mut`, `take`, `into_inner`, `From`, `Clone`, `Default`, use as a `static`,
//! and its drop check (a cell of references may outlive them).

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use ppd::sync::OnceLock;
use ppd::sync::atomic::{AtomicUsize, Ordering};
use ppd::thread;

/// std `new` / `get`: "Creates a new uninitialized cell"; `get` "Returns None if the cell is
/// uninitialized".
#[test]
fn new_cell_is_uninitialized() {
    let cell: OnceLock<u32> = OnceLock::new();
    assert_eq!(cell.get(), None);
}

/// std `set`: "Returns Ok(()) if the cell was uninitialized"; afterwards `get` returns the
/// value.
#[test]
fn set_fills_an_empty_cell() {
    let cell = OnceLock::new();
    assert_eq!(cell.set(String::from("first")), Ok(()));
    assert_eq!(cell.get().map(String::as_str), Some("first"));
}

/// std `set`: returns "Err(value) if the cell was already initialized", and the cell keeps
/// the value it had.
#[test]
fn set_on_a_full_cell_gives_the_value_back_and_keeps_the_old_one() {
    let cell = OnceLock::new();
    cell.set(1).unwrap();
    assert_eq!(cell.set(2), Err(2));
    assert_eq!(cell.get(), Some(&1));
}

/// std `get_or_init`: "Gets the contents of the cell, initializing it to f() if the cell was
/// uninitialized" — a later initializer is not called.
#[test]
fn get_or_init_calls_the_initializer_only_when_empty() {
    let cell = OnceLock::new();
    let calls = AtomicUsize::new(0);
    let first = *cell.get_or_init(|| {
        calls.fetch_add(1, Ordering::SeqCst);
        10
    });
    let second = *cell.get_or_init(|| {
        calls.fetch_add(1, Ordering::SeqCst);
        20
    });
    assert_eq!((first, second), (10, 10));
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

/// std `get_or_init`: "Many threads may call get_or_init concurrently with different
/// initializing functions, but it is guaranteed that only one function will be executed if
/// the function doesn't panic."
#[test]
fn concurrent_get_or_init_executes_one_initializer_and_all_agree() {
    let cell = Arc::new(OnceLock::new());
    let calls = Arc::new(AtomicUsize::new(0));
    let handles: Vec<_> = (0..4usize)
        .map(|i| {
            let cell = Arc::clone(&cell);
            let calls = Arc::clone(&calls);
            thread::spawn(move || {
                *cell.get_or_init(|| {
                    calls.fetch_add(1, Ordering::SeqCst);
                    i
                })
            })
        })
        .collect();
    let seen: Vec<usize> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    let value = *cell.get().expect("initialized");
    assert!(seen.iter().all(|v| *v == value), "all callers got the one value: {seen:?}");
}

/// std `set`: "The cell is guaranteed to contain a value when set returns, though not
/// necessarily the one provided" — of concurrent `set`s exactly one succeeds, the others get
/// their values back.
#[test]
fn concurrent_set_has_exactly_one_winner() {
    let cell = Arc::new(OnceLock::new());
    let handles: Vec<_> = (0..4u32)
        .map(|i| {
            let cell = Arc::clone(&cell);
            thread::spawn(move || {
                let r = cell.set(i);
                assert!(cell.get().is_some(), "the cell holds a value once set returns");
                r
            })
        })
        .collect();
    let results: Vec<Result<(), u32>> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let winners: Vec<u32> = (0..4).filter(|i| results[*i as usize].is_ok()).collect();
    assert_eq!(winners.len(), 1);
    assert_eq!(cell.get(), Some(&winners[0]));
    for (i, r) in results.iter().enumerate() {
        if let Err(v) = r {
            assert_eq!(*v as usize, i, "a losing set gives its own value back");
        }
    }
}

/// std `get_or_init`: "If f panics, the panic is propagated to the caller, and the cell remains
/// uninitialized" — so a later `get_or_init` runs its initializer.
#[test]
fn panicking_initializer_leaves_the_cell_uninitialized() {
    let cell: OnceLock<u8> = OnceLock::new();
    let r = catch_unwind(AssertUnwindSafe(|| {
        cell.get_or_init(|| panic!("initializer panics, on purpose"));
    }));
    assert!(r.is_err(), "the panic propagates to the caller");
    assert_eq!(cell.get(), None);
    assert_eq!(*cell.get_or_init(|| 4), 4);
    assert_eq!(cell.set(5), Err(5));
}

/// std `get_mut`: "Gets the mutable reference to the underlying value. Returns None if the
/// cell is uninitialized."
#[test]
fn get_mut_is_none_when_empty_and_mutates_when_full() {
    let mut cell: OnceLock<Vec<u8>> = OnceLock::new();
    assert!(cell.get_mut().is_none());
    cell.set(vec![1]).unwrap();
    cell.get_mut().unwrap().push(2);
    assert_eq!(cell.get(), Some(&vec![1, 2]));
}

/// std `take`: "Takes the value out of this OnceLock, moving it back to an uninitialized
/// state. Has no effect and returns None if the OnceLock was uninitialized."
#[test]
fn take_empties_the_cell_so_it_can_be_set_again() {
    let mut cell: OnceLock<&str> = OnceLock::new();
    assert_eq!(cell.take(), None);
    cell.set("a").unwrap();
    assert_eq!(cell.take(), Some("a"));
    assert_eq!(cell.get(), None);
    assert_eq!(cell.set("b"), Ok(()));
    assert_eq!(*cell.get_or_init(|| "c"), "b");
}

/// std `into_inner`: "Consumes the OnceLock, returning the wrapped value. Returns None if the
/// cell was uninitialized."
#[test]
fn into_inner_returns_the_value_or_none() {
    let empty: OnceLock<u8> = OnceLock::new();
    assert_eq!(empty.into_inner(), None);
    let full = OnceLock::new();
    full.set(String::from("v")).unwrap();
    assert_eq!(full.into_inner(), Some(String::from("v")));
}

/// std `From<T>`: "Creates a new cell with its contents set to value"; `Clone` copies the
/// contents (or the emptiness); `Default` "Creates a new uninitialized cell".
#[test]
fn from_clone_and_default_give_the_documented_contents() {
    let full = OnceLock::from(7);
    assert_eq!(full.get(), Some(&7));
    assert_eq!(full.set(8), Err(8));
    let copy = full.clone();
    assert_eq!(copy.get(), Some(&7));
    let empty: OnceLock<i32> = OnceLock::default();
    assert_eq!(empty.get(), None);
    assert_eq!(empty.clone().get(), None);
}

/// std: `OnceLock::new` is `const`, so the cell can be a `static` initialized once, by
/// whichever thread gets there first, for all threads.
#[test]
fn static_cell_is_initialized_once_for_all_threads() {
    static CELL: OnceLock<usize> = OnceLock::new();
    static CALLS: AtomicUsize = AtomicUsize::new(0);
    let handles: Vec<_> = (0..3usize)
        .map(|i| {
            thread::spawn(move || {
                *CELL.get_or_init(|| {
                    CALLS.fetch_add(1, Ordering::SeqCst);
                    100 + i
                })
            })
        })
        .collect();
    let seen: Vec<usize> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    assert_eq!(CALLS.load(Ordering::SeqCst), 1);
    assert!(seen.iter().all(|v| Some(v) == CELL.get()));
}

/// std `wait`: "Blocks the current thread until the cell is initialized", then returns a
/// reference to the value.
#[test]
fn wait_blocks_until_another_thread_sets_the_value() {
    let cell = Arc::new(OnceLock::new());
    let waiter = {
        let cell = Arc::clone(&cell);
        thread::spawn(move || *cell.wait())
    };
    cell.set(41).unwrap();
    assert_eq!(waiter.join().unwrap(), 41);
    assert_eq!(*cell.wait(), 41, "wait on a full cell returns at once");
}

/// std `PartialEq for OnceLock`: two cells are equal when both are empty or their values are
/// equal.
#[test]
fn cells_compare_by_their_contents() {
    let (a, b) = (OnceLock::<u8>::new(), OnceLock::<u8>::new());
    assert!(a == b, "two empty cells are equal");
    a.set(1).unwrap();
    assert!(a != b, "a full cell differs from an empty one");
    b.set(1).unwrap();
    assert!(a == b);
    assert!(OnceLock::from(2) != a);
}

/// std's `OnceLock<T>` may hold references that die before the cell does, as long as nothing
/// reads them again: dropping the cell only drops its value (std's drop check). A cell with a
/// `Drop` of its own does not compile here.
#[test]
fn a_cell_of_references_may_outlive_what_they_point_to() {
    let cell = OnceLock::new();
    {
        let short_lived = String::from("short-lived");
        cell.set(&short_lived).unwrap();
        assert_eq!(cell.get().map(|s| s.len()), Some(11));
    }
}

/// Dropping a full cell drops its value once; an empty or taken cell drops nothing.
#[test]
fn dropping_a_cell_drops_its_value_once() {
    let counted = Arc::new(());
    let cell = OnceLock::new();
    cell.set(Arc::clone(&counted)).unwrap();
    assert_eq!(Arc::strong_count(&counted), 2);
    drop(cell);
    assert_eq!(Arc::strong_count(&counted), 1, "the value was dropped with the cell");
    let mut taken = OnceLock::from(Arc::clone(&counted));
    let value = taken.take();
    drop(taken);
    assert_eq!(Arc::strong_count(&counted), 2, "a taken cell drops nothing");
    drop(value);
    assert_eq!(Arc::strong_count(&counted), 1);
}
