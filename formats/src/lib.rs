//! On-disk formats of ppd recordings.
//!
//! Everything a recording is made of lives here and nowhere else: the [events](event) a
//! recorded process logs, the [writer](LogWriter) that appends them crash-safely to a
//! per-process log, the [reader](LogReader) that opens complete and crash-truncated logs and
//! seeks to any event, the recording [manifest], whether it and the exit record were written by
//! this user here ([authenticity]), and the encoding of user [values](value). `docs/format.md`
//! specifies the bytes.
//!
//! The writer, the reader, process names and run endings are reached through the types this
//! root re-exports; the other modules are the vocabulary the other crates share.
//!
//! Nothing here panics on bad input: every read path returns a [`FormatError`] that names the
//! file and the byte offset.

#![deny(missing_docs)]

pub mod authenticity;
pub mod clock;
mod codec;
pub mod condition;
pub mod eblock_trace;
pub(crate) mod ending;
pub(crate) mod error;
pub mod event;
pub mod ids;
pub mod integrity;
mod layout;
pub mod live;
pub mod manifest;
pub(crate) mod names;
pub mod net;
pub mod order;
pub mod pending;
pub mod private;
pub mod progress;
pub(crate) mod reader;
pub mod recording;
pub mod summary;
pub mod task;
pub mod value;
pub(crate) mod writer;

pub use ending::{ProcessEnding, ProgramExit, RunEnding, object_label};
pub use error::{FormatError, Result};
pub use event::{Borrowed, Event, EventKind, Owned, Site};
pub use ids::{ObjectId, ProcessId};
pub use layout::{FORMAT_VERSION, OLDEST_READABLE_VERSION};
pub use manifest::Manifest;
pub use names::{ProcessNameError, resolve_process};
pub use reader::{Events, LogReader, LogState};
pub use recording::Recording;
pub use writer::{LogIdentity, LogWriter, WriterOptions, WriterStats, first_write_failure};
