//! Record, replay and flowback debugging for parallel and distributed Rust programs.
//!
//! Write the program against this crate instead of `std` — the API mirrors it, so moving over
//! is mostly a matter of changing `use` lines — and mark `main` with `#[ppd::main]`. Channel
//! messages and `Mutex` contents may be any `T: Send`, as in std; their values are logged where
//! the type is known to be serde (the objects an e-block reaches, or [`sync::log_values`]), and
//! a re-execution that needs a value that was not logged says which ([`sync::values`]).
//!
//! ```no_run
//! use ppd::sync::mpsc::channel;
//!
//! #[ppd::main]
//! fn main() {
//!     let (tx, rx) = channel();
//!     let worker = ppd::thread::Builder::new()
//!         .name("worker".into())
//!         .spawn(move || tx.send(6 * 7).unwrap())
//!         .unwrap();
//!     println!("{}", rx.recv().unwrap());
//!     worker.join().unwrap();
//! }
//! ```
//!
//! Run natively it behaves like the `std` version. Run under `ppd record -- ./program` each
//! thread is a logical process with its own log: which message every receive got, the order of
//! every lock and atomic access, every clock and random value. `ppd replay` reproduces the run
//! from those logs, `ppd info` summarizes a recording.

#![deny(missing_docs)]

//!
//! # Building without ppd
//!
//! With the default `record` feature turned off (`default-features = false`),
//! `ppd::{thread, sync, time, collections, io}` are std's modules, `ppd::channel` (and
//! `ppd::select!`) is crossbeam-channel, `#[ppd::main]`, `#[ppd::eblock]` and `#[ppd::eblocks]` leave the code as
//! it is and `ppd::mark!` does nothing: the build carries no ppd code, as loom's and shuttle's
//! switches do. Only the std-mirroring surface switches; ppd's own additions (`rand`, `task`,
//! `Semaphore`, `named` constructors, `current_process`) exist only with `record`.

#[cfg(feature = "record")]
pub use ppd_macros::{eblock, eblocks, main, not_traced, test};
#[cfg(feature = "record")]
pub use ppd_recorder::{
    channel, collections, io, mark, net, rand, select, select_biased, sync, task, thread, time,
};

/// crossbeam-utils' twins: `utils::thread::scope`, scoped threads with crossbeam's interface.
#[cfg(feature = "record")]
pub mod utils {
    /// `crossbeam_utils::thread`: [`scope`](thread::scope), whose threads are logical
    /// processes.
    pub mod thread {
        pub use ppd_recorder::thread::crossbeam_scope::{Scope, ScopedJoinHandle, scope};
    }
}

#[cfg(not(feature = "record"))]
pub use ppd_macros_off::{eblock, eblocks, main, not_traced, test};
#[cfg(not(feature = "record"))]
pub use std::{collections, io, sync, thread, time};

/// std's networking, in a build without ppd: `std::net`, and `std::os::unix::net` as `unix`.
#[cfg(not(feature = "record"))]
pub mod net {
    pub use std::net::*;
    /// `std::os::unix::net`.
    pub mod unix {
        pub use std::os::unix::net::*;
    }
}

/// crossbeam-channel itself, in a build without ppd.
#[cfg(not(feature = "record"))]
pub use crossbeam_channel as channel;
/// crossbeam-channel's `select!` and `select_biased!`, in a build without ppd.
#[cfg(not(feature = "record"))]
pub use crossbeam_channel::{select, select_biased};
/// crossbeam-utils itself, in a build without ppd.
#[cfg(not(feature = "record"))]
pub use crossbeam_utils as utils;

/// Does nothing in a build without ppd; the arguments are only borrowed, so they still count
/// as used.
#[cfg(not(feature = "record"))]
#[macro_export]
macro_rules! mark {
    ($label:expr, $value:expr $(,)?) => {{
        let _ = (&$label, &$value);
    }};
    ($label:expr $(,)?) => {{
        let _ = &$label;
    }};
}

#[cfg(feature = "record")]
#[doc(hidden)]
pub mod __private {
    //! Called by the code `#[ppd::main]` and `#[ppd::eblock]` generate; not a stable interface.

    pub use inventory;
    pub use ppd_recorder::__capture as capture;
    pub use ppd_recorder::__register_values as register_values;
    pub use ppd_recorder::runtime::binding::{Binding, Bindings, Bound, RegisterBound, SkipBound};
    pub use ppd_recorder::{eblock, tracer};
    pub use ppd_replayer::{body, emulate};

    use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
    use std::process::ExitCode;
    use std::sync::atomic::{AtomicBool, Ordering};

    use ppd_formats::ProcessId;
    use ppd_recorder::runtime::record::RecordRuntime;
    use ppd_recorder::runtime::{self, Ending, env};

    /// What `main` may return.
    pub trait MainReturn {
        /// The exit code to record, and the one to exit with.
        fn exit_code(self) -> (i32, ExitCode);
    }

    impl MainReturn for () {
        fn exit_code(self) -> (i32, ExitCode) {
            (0, ExitCode::SUCCESS)
        }
    }

    impl MainReturn for ExitCode {
        fn exit_code(self) -> (i32, ExitCode) {
            // `ExitCode` does not say its number; the ones a program can make compare equal to
            // `ExitCode::from(n)`.
            let code = (0..=255u8)
                .find(|&n| ExitCode::from(n) == self)
                .map_or(1, i32::from);
            (code, self)
        }
    }

    impl<E: std::fmt::Debug> MainReturn for Result<(), E> {
        fn exit_code(self) -> (i32, ExitCode) {
            match self {
                Ok(()) => (0, ExitCode::SUCCESS),
                Err(e) => {
                    eprintln!("Error: {e:?}");
                    (1, ExitCode::FAILURE)
                }
            }
        }
    }

    /// Picks the mode from the environment and installs its runtime.
    fn boot() {
        let Some(mode) = std::env::var_os(env::MODE) else {
            return;
        };
        match mode.to_str() {
            Some("record") => match RecordRuntime::from_env() {
                Ok(rt) => {
                    runtime::install(Box::new(rt));
                }
                Err(e) => eprintln!("ppd: not recording: {e}"),
            },
            Some("emulate") => ppd_replayer::emulate::boot_from_env(),
            Some("replay") => {
                if let Err(e) = ppd_replayer::local::install_from_env() {
                    // Running on without the log would silently be a different run.
                    eprintln!("ppd: cannot replay: {e}");
                    std::process::exit(2);
                }
            }
            _ => eprintln!("ppd: unknown {}={mode:?}; running without ppd", env::MODE),
        }
    }

    /// Runs `main`'s body as logical process `main` under the mode the environment selects.
    pub fn main<R: MainReturn>(body: impl FnOnce() -> R) -> ExitCode {
        boot();
        if !runtime::active() {
            return body().exit_code().1;
        }
        run_as_main(body, MainReturn::exit_code, 101).1
    }

    /// What a `#[ppd::test]` may return: what libtest accepts of a test.
    pub trait TestReturn {
        /// Whether the test passed by returning this.
        fn passed(&self) -> bool;
    }

    impl TestReturn for () {
        fn passed(&self) -> bool {
            true
        }
    }

    impl<E> TestReturn for Result<(), E> {
        fn passed(&self) -> bool {
            self.is_ok()
        }
    }

    /// The exit code libtest gives a run of one test: 0 when it passed, 101 when it failed.
    fn libtest_code(passed: bool) -> i32 {
        if passed { 0 } else { 101 }
    }

    /// Runs test `name`'s body as logical process `main` under the mode the environment
    /// selects. A recording is of one test: a second test started in the same recorded run
    /// fails, naming itself, rather than mixing two tests' processes in one log. The exit code
    /// recorded is the one the test binary exits with, which replay compares: libtest's for
    /// the test's result (a panic passes a `should_panic` test).
    pub fn test<R: TestReturn>(name: &str, should_panic: bool, body: impl FnOnce() -> R) -> R {
        static STARTED: AtomicBool = AtomicBool::new(false);
        if std::env::var_os(env::MODE).is_some() && STARTED.swap(true, Ordering::SeqCst) {
            panic!(
                "ppd records one test per run, and {name} is a second one: \
                 run the test binary with the test's name and --exact"
            );
        }
        boot();
        if !runtime::active() {
            return body();
        }
        run_as_main(
            body,
            |value| (libtest_code(value.passed() != should_panic), value),
            libtest_code(should_panic),
        )
        .1
    }

    /// Runs `body` as logical process `main` of an active runtime and finishes the run with the
    /// code `code_of` reads off its value, or `panic_code` when it panics (the panic going on).
    fn run_as_main<R, T>(
        body: impl FnOnce() -> R,
        code_of: impl FnOnce(R) -> (i32, T),
        panic_code: i32,
    ) -> (i32, T) {
        runtime::enter_process(ProcessId::MAIN, None, "main");
        match catch_unwind(AssertUnwindSafe(body)) {
            Ok(value) => {
                let (code, out) = code_of(value);
                runtime::leave_process(&Ending::Returned);
                runtime::finish(code, false);
                (code, out)
            }
            Err(payload) => {
                runtime::leave_process_panicked();
                runtime::finish(panic_code, true);
                resume_unwind(payload)
            }
        }
    }
}
