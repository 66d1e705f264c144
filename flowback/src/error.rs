//! Typed errors of the analyses.
//!
//! Reading a recording fails with the formats crate's error, which names file and offset;
//! everything the analyses add (the cache, the halt cut, output files) names its file too.

use std::io;
use std::path::PathBuf;

use ppd_formats::FormatError;
use ppd_replayer::debugger::DebugError;

/// What went wrong while analysing a recording.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FlowbackError {
    /// The recording could not be read.
    #[error(transparent)]
    Format(#[from] FormatError),
    /// A file the analyses read or write failed.
    #[error("{path}: {action}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What was being done.
        action: &'static str,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// `cache/halt.json` exists but is not a halt cut.
    #[error("{path}: not a halt cut: {detail}")]
    BadHaltCut {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        detail: String,
    },
    /// A cache file is damaged where a query read it.
    #[error("{path}: damaged at byte {offset} (a cache: delete it and ask again)")]
    BadCache {
        /// The file.
        path: PathBuf,
        /// Where the damage was found.
        offset: u64,
    },
    /// A why-query that names something the recording does not have.
    #[error("{0}")]
    Query(String),
    /// The recorded binary could not re-execute the e-block instances a query needs.
    #[error("re-executing e-blocks: {0}")]
    Emulation(String),
    /// The recorded binary is missing, is not the one recorded, or could not be run.
    #[error(transparent)]
    Program(#[from] DebugError),
    /// Writing an output (a picture, an export) failed.
    #[error("writing {what}")]
    Output {
        /// What was being written.
        what: &'static str,
        /// The OS error.
        #[source]
        source: io::Error,
    },
}

impl FlowbackError {
    /// An I/O error on `path`.
    pub fn io(path: impl Into<PathBuf>, action: &'static str, source: io::Error) -> FlowbackError {
        FlowbackError::Io {
            path: path.into(),
            action,
            source,
        }
    }

    /// Whether the error is about the user's input (a missing or damaged recording, a bad
    /// halt cut) rather than a failure of the machine (an output that cannot be written).
    pub fn is_bad_input(&self) -> bool {
        match self {
            FlowbackError::Output { .. } | FlowbackError::Emulation(_) => false,
            FlowbackError::Program(e) => e.is_bad_input(),
            _ => true,
        }
    }
}

/// Result of the analyses.
pub type Result<T, E = FlowbackError> = std::result::Result<T, E>;
