//! Typed errors of the analyses.
//!
//! Reading a recording fails with the formats crate's error, which names file and offset;
//! everything the analyses add (the cache, the halt cut, output files) names its file too.

use std::io;
use std::path::PathBuf;

use ppd_formats::FormatError;

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
    /// Writing an output (a picture, an export) failed.
    #[error("writing {what}: {source}")]
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
        !matches!(self, FlowbackError::Output { .. })
    }
}

/// Result of the analyses.
pub type Result<T, E = FlowbackError> = std::result::Result<T, E>;
