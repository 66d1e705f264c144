//! Typed errors for everything that reads or writes recordings.
//!
//! Every variant that comes from reading bytes names the file and the byte offset, so a user
//! can tell which log is damaged and where; nothing in this crate panics on bad bytes.

use std::io;
use std::path::PathBuf;

/// What went wrong with a recording on disk.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FormatError {
    /// An I/O operation failed.
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
    /// A file the recording needs does not exist.
    #[error("{path}: missing ({what})")]
    Missing {
        /// The file.
        path: PathBuf,
        /// What the file should have been.
        what: &'static str,
    },
    /// The file does not start with the expected magic bytes.
    #[error("{path}: not a {expected} (bad magic at byte offset {offset})")]
    BadMagic {
        /// The file.
        path: PathBuf,
        /// Where the magic was expected.
        offset: u64,
        /// What kind of file was expected.
        expected: &'static str,
    },
    /// The file was written by a format version this build cannot read.
    #[error(
        "{path}: format version {found} is not supported (this build reads versions {oldest} to {supported})"
    )]
    UnsupportedVersion {
        /// The file.
        path: PathBuf,
        /// Version found in the file.
        found: u32,
        /// The newest version this build reads (the one it writes).
        supported: u32,
        /// The oldest version this build reads.
        oldest: u32,
    },
    /// Bytes whose checksum does not match.
    #[error("{path}: checksum mismatch in {what} at byte offset {offset}")]
    Checksum {
        /// The file.
        path: PathBuf,
        /// Offset of the damaged structure.
        offset: u64,
        /// Which structure.
        what: &'static str,
    },
    /// A structure that is malformed.
    #[error("{path}: corrupt {what} at byte offset {offset}: {detail}")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// Offset of the damaged structure.
        offset: u64,
        /// Which structure.
        what: &'static str,
        /// What is wrong with it.
        detail: String,
    },
    /// A record inside a block that does not decode.
    #[error(
        "{path}: corrupt event record in block {block_seq} (block at byte offset {block_offset}, \
         byte {position} of the block's data): {detail}"
    )]
    Record {
        /// The file.
        path: PathBuf,
        /// Sequence number of the block.
        block_seq: u64,
        /// File offset of the frame or ring slot holding the block.
        block_offset: u64,
        /// Offset of the record in the block's uncompressed data.
        position: usize,
        /// What is wrong with it.
        detail: String,
    },
    /// The file ends in the middle of a structure that must be complete.
    #[error(
        "{path}: truncated {what}: needed {needed} bytes at byte offset {offset}, file has {len}"
    )]
    Truncated {
        /// The file.
        path: PathBuf,
        /// Which structure.
        what: &'static str,
        /// Where the structure starts.
        offset: u64,
        /// How many bytes it needs.
        needed: u64,
        /// How long the file is.
        len: u64,
    },
    /// An event index past the end of a log.
    #[error("{path}: event {index} is out of range (the log has {count} events)")]
    EventOutOfRange {
        /// The file.
        path: PathBuf,
        /// The index asked for.
        index: u64,
        /// How many events the log has.
        count: u64,
    },
    /// The manifest is not valid JSON of the expected shape.
    #[error("{path}: invalid manifest: {source}")]
    Manifest {
        /// The manifest file.
        path: PathBuf,
        /// The parse error (with line and column).
        #[source]
        source: serde_json::Error,
    },
    /// Something in place of a file of the recording that is not a regular file (a FIFO, a
    /// directory, a device): refused rather than read, since reading it could block or lie.
    #[error("{path}: is {kind}, not a regular file")]
    NotAFile {
        /// The path.
        path: PathBuf,
        /// What it is instead.
        kind: &'static str,
    },
    /// A log whose header names another process or another run than the manifest says.
    #[error("{path}: {detail}")]
    Foreign {
        /// The log.
        path: PathBuf,
        /// Which identity differs, and how.
        detail: String,
    },
    /// A node under `nodes/` recorded by another run than the recording's own.
    #[error(
        "{path}: a node of another run ({}), not of this recording's ({}): it was copied in; \
         move it out, or combine recordings made apart with `ppd merge`",
        show_run(.node_run),
        show_run(.run)
    )]
    ForeignNode {
        /// The node's directory.
        path: PathBuf,
        /// Its run id.
        node_run: Option<String>,
        /// The recording's run id (its first node's).
        run: Option<String>,
    },
    /// A directory that is not a recording.
    #[error("{path}: not a ppd recording ({detail})")]
    NotARecording {
        /// The directory.
        path: PathBuf,
        /// Why not.
        detail: String,
    },
}

impl FormatError {
    /// Wraps an I/O error with the file and the action that failed.
    pub fn io(path: impl Into<PathBuf>, action: &'static str, source: io::Error) -> FormatError {
        let path = path.into();
        if source.kind() == io::ErrorKind::NotFound {
            return FormatError::Missing { path, what: action };
        }
        FormatError::Io {
            path,
            action,
            source,
        }
    }
}

/// Result alias for this crate.
pub type Result<T, E = FormatError> = std::result::Result<T, E>;

fn show_run(run: &Option<String>) -> String {
    run.as_ref()
        .map_or_else(|| "no run id".to_owned(), |r| format!("run {r}"))
}
