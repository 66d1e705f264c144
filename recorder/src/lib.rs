//! The ppd runtime that a recorded program links.
//!
//! It mirrors `std` — [`thread`], [`sync`] (channels, mutexes, semaphores, atomics), [`time`],
//! [`collections`] — plus [`rand`] and [`mark!`], so moving a program over is mostly a matter of
//! changing `use` lines. Channel messages may be any `T` and `Mutex` contents any `T: Send`, as
//! std's ([`sync::values`] says when their values are logged).
//!
//! Each nondeterministic choice goes through the current process's
//! [backend](runtime::backend): nothing in pass-through mode, the log in record mode, the log's
//! dictate in replay.
//!
//! Programs use it through the `ppd` crate, whose `#[ppd::main]` picks the mode.

#![deny(missing_docs)]

pub mod channel;
pub mod collections;
pub mod eblock;
pub mod io;
mod mark;
pub mod net;
pub mod rand;
pub mod runtime;
pub mod sync;
pub mod task;
pub mod thread;
pub mod time;
pub mod tracer;

pub use mark::mark;
