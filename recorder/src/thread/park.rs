//! Parking, mirroring `std::thread::park` and `Thread::unpark`.
//!
//! std documents that an `unpark` synchronizes with the `park` that consumes its token. ppd gives
//! each logical process a park token that is an atomic flag of the runtime (object
//! `#<process>.4294967295`, which every process has without creating it): `unpark` stores
//! `true` with release ordering, `park` takes the token with an acquiring swap. So the wake is a
//! reads-from edge of the happened-before like any release/acquire pair, and the token's
//! accesses are versioned: replay lets them through in the recorded order.
//!
//! A `park` that finds no token waits, then takes the token again: that second swap says how the
//! wait ended — `true` when an `unpark` came, `false` when it returned spuriously or
//! `park_timeout` timed out — and its version is logged, so replay returns the same way without
//! waiting at all.
//!
//! A wait without a timeout is logged first as a `Blocked` marker, on the token (or, for a
//! condition variable's wait, on the condvar), so that a run that ends while the process waits
//! says where it waits and for what, and the deadlock analysis can ask who could wake it. A
//! timed wait logs none: time ends it.

use std::cell::RefCell;
use std::panic::Location;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use ppd_formats::{Event, ObjectId, ProcessId};

use crate::runtime::{self, backend::Mode};
use crate::sync::atomic::AtomicBool;

/// One logical process's park token.
#[derive(Debug)]
pub(crate) struct Parker {
    token: AtomicBool,
    /// The token's object id, which a wait's `Blocked` marker names.
    id: ObjectId,
}

impl Parker {
    /// The token of `process`.
    pub(crate) fn new(process: ProcessId) -> Arc<Parker> {
        let id = ObjectId::park_token(process);
        Arc::new(Parker {
            token: AtomicBool::implicit(id),
            id,
        })
    }

    /// Makes the token available (a release store), before the OS-level unpark.
    #[track_caller]
    pub(crate) fn unpark(&self) {
        self.token.store(true, Ordering::Release);
    }
}

thread_local! {
    /// This thread's process's token: set when a spawned process starts, made on first use for
    /// `main`.
    static OWN: RefCell<Option<Arc<Parker>>> = const { RefCell::new(None) };
}

/// Installs the token a spawned process's parent made for it.
pub(crate) fn adopt(parker: Arc<Parker>) {
    OWN.with(|own| *own.borrow_mut() = Some(parker));
}

/// The current process's token, `None` outside ppd.
pub(crate) fn own() -> Option<Arc<Parker>> {
    let process = runtime::current_process()?;
    Some(OWN.with(|own| Arc::clone(own.borrow_mut().get_or_insert_with(|| Parker::new(process)))))
}

/// Blocks until the token is available or, with `timeout`, that long at most. An untimed wait
/// is logged as blocked on `on`, or on the token when `on` is `None`, at `site`.
#[track_caller]
pub(crate) fn park(
    timeout: Option<Duration>,
    on: Option<ObjectId>,
    site: &'static Location<'static>,
) {
    let Some(parker) = own() else {
        wait(timeout);
        return;
    };
    if parker.token.swap(false, Ordering::Acquire) {
        return;
    }
    // Replay and re-execution do not wait: the next swap's version says when the recorded wait
    // ended, and replay lets it through only then (passing the logged marker on its way).
    if !matches!(runtime::mode(), Mode::Replay | Mode::Emulate) {
        if timeout.is_none() {
            runtime::done(&Event::Blocked {
                object: on.unwrap_or(parker.id),
                site: Some(site),
            });
        }
        wait(timeout);
    }
    parker.token.swap(false, Ordering::Acquire);
}

fn wait(timeout: Option<Duration>) {
    match timeout {
        Some(d) => std::thread::park_timeout(d),
        None => std::thread::park(),
    }
}
