//! The ppd runtime that a recorded program links.
//!
//! It mirrors `std` — [`thread`], [`sync`] (channels, mutexes, semaphores, atomics), [`time`] —
//! plus [`rand`] and [`mark!`], so moving a program over is mostly a matter of changing `use`
//! lines. Not entirely, yet: channel messages must be `Serialize + DeserializeOwned`. A `Mutex`
//! holds any `T: Send`; its values are logged when an e-block reaches it and `T` is serde
//! ([`sync::values`]).
//!
//! Each nondeterministic choice goes through the current process's
//! [backend](runtime::backend): nothing in pass-through mode, the log in record mode, the log's
//! dictate in replay.
//!
//! Programs use it through the `ppd` crate, whose `#[ppd::main]` picks the mode.

pub mod eblock;
mod mark;
pub mod rand;
pub mod runtime;
pub mod sync;
pub mod task;
pub mod thread;
pub mod time;
pub mod trace;

pub use mark::mark;
