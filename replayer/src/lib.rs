//! Deterministic replay of recordings, and distributed breakpoints.
//!
//! Inside the replayed program, [`local`] forces every nondeterministic choice to its logged
//! outcome and runs the local debuggers; in `ppd`, [`debugger`] is the global debugger that
//! starts the program, sets the goal (a predicate to halt at, a cut, single steps) and reads
//! back the halted state. They talk through [`protocol`]. [`predicate`] is the breakpoint
//! language.

#![deny(missing_docs)]

pub mod body;
pub mod debugger;
mod describe;
pub mod emulate;
pub mod local;
pub mod predicate;
pub mod protocol;
mod trace_hook;

pub use describe::{Names, describe, describe_with};
