//! The halt cut a replay stopped at, read from `<recording>/cache/halt.json`.
//!
//! The replayer writes `{"predicate": "...", "cut": [{"process": <id>, "events": <n>}, ...]}`
//! when a replay halts: process `id` had executed its first `n` events. Pictures draw it.

use std::path::{Path, PathBuf};

use ppd_formats::ProcessId;
use serde::{Deserialize, Serialize};

use crate::error::{FlowbackError, Result};
use crate::trace::Trace;
use crate::vclock::{Clocks, SyncEdge};

/// File name of the halt cut inside `cache/`.
pub(crate) const HALT_FILE: &str = "halt.json";

/// One process's place in the cut.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CutPoint {
    /// The process id.
    pub process: u32,
    /// How many of its events it had executed.
    pub events: u64,
}

/// A halted replay's global state.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HaltCut {
    /// The predicate that halted it.
    pub predicate: String,
    /// Where each process stopped.
    pub cut: Vec<CutPoint>,
}

impl HaltCut {
    /// Where the cut file of the recording in `dir` is.
    pub fn path(dir: &Path) -> PathBuf {
        dir.join(ppd_formats::recording::CACHE_DIR).join(HALT_FILE)
    }

    /// Reads the cut of the recording in `dir`; `None` when there is none.
    pub fn load(dir: &Path) -> Result<Option<HaltCut>> {
        let path = HaltCut::path(dir);
        let bytes = match ppd_formats::private::read_regular(&path, "read halt cut") {
            Ok(b) => b,
            Err(ppd_formats::FormatError::Missing { .. }) => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| FlowbackError::BadHaltCut {
                path,
                detail: e.to_string(),
            })
    }

    /// How many events of process `p` (dense index) are inside the cut; a process the cut
    /// does not name is entirely inside.
    pub fn events_of(&self, trace: &Trace, p: u32) -> u64 {
        let id = trace.process(p).id;
        self.cut
            .iter()
            .find(|c| ProcessId(c.process) == id)
            .map(|c| c.events)
            .unwrap_or(trace.process(p).events.len() as u64)
    }

    /// Synchronization edges that enter the cut from outside it: a consistent cut has none.
    pub fn crossing_edges(&self, trace: &Trace, clocks: &Clocks) -> Vec<SyncEdge> {
        clocks
            .edges()
            .iter()
            .filter(|e| {
                u64::from(e.to.index) < self.events_of(trace, e.to.process)
                    && u64::from(e.from.index) >= self.events_of(trace, e.from.process)
            })
            .copied()
            .collect()
    }
}
