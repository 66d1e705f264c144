//! Automatic e-blocks: `ppd build` compiles the workspace's own crates with the e-blocks PPD's
//! compiler would have chosen, so that `ppd why` explains the variables of functions nobody
//! annotated.
//!
//! In PPD (Miller & Choi, *A Mechanism for Efficient Debugging of Parallel Programs*, §5.4
//! "Constructing E-blocks") the programmer marks nothing: the compiler makes subroutines
//! e-blocks, except small subroutines at the leaves of the call graph, whose callers inherit
//! their logging. ppd does the same at build time, from the source:
//!
//! 1. [`wrapper`] is cargo's *workspace* wrapper (`RUSTC_WORKSPACE_WRAPPER`), so only the
//!    workspace's own crates are touched, and of those only the ones that depend on `ppd`;
//! 2. [`modules`] finds every file of the crate from its root, as rustc does;
//! 3. [`select`] applies §5.4's rule to every function and inherent method;
//! 4. [`rewrite`] puts `#[::ppd::eblock(auto)]` in front of each chosen one, on its own line of
//!    the source, in a copy of the crate's files; rustc compiles the copy with its paths
//!    remapped to the originals, so `file!()`, panics, debug info and `ppd why` name the
//!    user's files and lines exactly.
//!
//! Where ppd goes beyond the paper: a small leaf that synchronizes (a send, a receive, a lock)
//! is still an e-block, since in a parallel program that is where the values come from (§5.5's
//! synchronization units); `#[ppd::not_traced]` keeps a function out and `#[ppd::eblock]`
//! forces one in; loops are not made e-blocks of their own (the enclosing function's e-block
//! logs once per call, not per iteration, so log growth follows calls); and a crate whose
//! automatic e-blocks do not compile is built without them, with a notice, never refused.

pub mod modules;
pub mod rewrite;
pub mod select;
pub mod wrapper;

use std::path::PathBuf;

/// What went wrong instrumenting a crate. Each names the file it concerns.
#[derive(Debug, thiserror::Error)]
pub enum InstrumentError {
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// A source file is not Rust that `syn` can parse (rustc will say why).
    #[error("{path}:{line}:{column}: cannot parse: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// The line of the problem, from 1.
        line: usize,
        /// The column, from 1.
        column: usize,
        /// syn's message.
        message: String,
    },
    /// rustc itself could not be started.
    #[error("cannot run {rustc}: {source}")]
    Rustc {
        /// The compiler cargo asked for.
        rustc: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
}

impl InstrumentError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        InstrumentError::Io {
            path: path.into(),
            source,
        }
    }
}
