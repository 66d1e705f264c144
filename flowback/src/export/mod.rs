//! Exports of a run for other tools: Perfetto's native protobuf trace, Chrome trace JSON that
//! Perfetto (and `chrome://tracing`) opens, ShiViz's vector-clock log, and plain JSON.
//!
//! The logs carry no per-event wall-clock time, and the order that matters is causal, so all
//! of them place events at their Lamport time (computed from the happened-before order).

pub mod json;
pub mod perfetto;
pub mod perfetto_proto;
mod proto;
pub mod shiviz;

use std::io::Write;

use crate::error::{FlowbackError, Result};

/// Writes `bytes`, naming what was being written if it fails.
pub(crate) fn put(out: &mut dyn Write, what: &'static str, bytes: &[u8]) -> Result<()> {
    out.write_all(bytes)
        .map_err(|source| FlowbackError::Output { what, source })
}
