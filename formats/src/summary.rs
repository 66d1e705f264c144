//! What `ppd info` reports: events by kind, bytes and completeness, per process and in total.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Serialize;

use crate::ending::{ProcessEnding, RunEnding};
use crate::error::{FormatError, Result};
use crate::ids::ProcessId;
use crate::reader::LogState;
use crate::recording::Recording;

/// Summary of a whole recording.
#[derive(Debug, Clone, Serialize)]
pub struct RecordingSummary {
    /// The recording directory.
    pub recording: PathBuf,
    /// The recorded program.
    pub program: PathBuf,
    /// When it started, RFC 3339.
    pub start_time: String,
    /// Exit code, when the run ended normally.
    pub exit_code: Option<i32>,
    /// How the run ended.
    pub run_ending: RunEnding,
    /// How the run ended, in words.
    pub run_ending_text: String,
    /// Events in all logs.
    pub events: u64,
    /// Encoded bytes before compression.
    pub bytes_raw: u64,
    /// Bytes the events take in the logs: compressed frames plus any recovered raw tail.
    pub bytes_compressed: u64,
    /// `bytes_raw / bytes_compressed`.
    pub compression_ratio: f64,
    /// Every log closed cleanly, undamaged, and the run's end was recorded.
    pub complete: bool,
    /// Writer stalls (waits for the compressor) over all processes.
    pub stalls: u64,
    /// Why recording stopped before the program ended, if it did.
    pub stopped: Option<String>,
    /// Per process.
    pub processes: Vec<ProcessSummary>,
    /// Per OS process, in a recording of several (empty otherwise: the fields above are the
    /// one program's).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub nodes: Vec<NodeSummary>,
}

/// Summary of one OS process of a recording of several.
#[derive(Debug, Clone, Serialize)]
pub struct NodeSummary {
    /// Its name (`server-1`), which prefixes its processes' names.
    pub name: String,
    /// Its directory.
    pub dir: PathBuf,
    /// Its program.
    pub program: PathBuf,
    /// Its OS process id.
    pub os_pid: u32,
    /// When it started, RFC 3339.
    pub start_time: String,
    /// How it ended.
    pub run_ending: RunEnding,
    /// How it ended, in words.
    pub run_ending_text: String,
    /// Its logical processes.
    pub processes: usize,
    /// Every log of it closed cleanly, undamaged, and its end was recorded.
    pub complete: bool,
    /// Why its recording stopped before it ended, if it did.
    pub stopped: Option<String>,
}

/// The name a process without a log is listed under: only its log says what it was called.
pub const UNLOGGED_NAME: &str = "(no log)";

/// Summary of one process's log.
#[derive(Debug, Clone, Serialize)]
pub struct ProcessSummary {
    /// Process id.
    pub id: ProcessId,
    /// Process name.
    pub name: String,
    /// Spawning process.
    pub parent: Option<ProcessId>,
    /// Readable events.
    pub events: u64,
    /// Events by kind (kinds with none are left out).
    pub by_kind: BTreeMap<String, u64>,
    /// Encoded bytes before compression.
    pub bytes_raw: u64,
    /// Bytes the events take in the log.
    pub bytes_compressed: u64,
    /// The log's state: `complete`, `recovered after crash`, `recovered (process alive at
    /// exit)`, `being written (read up to here)`, `recording stopped`, `not recorded (recording stopped)`, `missing`, or `none:
    /// spawned, never started` (a process spawned just before the run was cut short); then, if
    /// the last event was rebuilt from the pending access record (`crate::pending`), that.
    pub state: String,
    /// Whether the log closed cleanly and is undamaged.
    pub complete: bool,
    /// How the process ended, as its log shows; absent when the log cannot be read.
    pub ending: Option<ProcessEnding>,
    /// How the process ended, in words.
    pub ending_text: String,
    /// Damage found in the log, each naming file and offset.
    pub damage: Vec<String>,
    /// Writer stalls, when the log records them.
    pub stalls: u64,
}

/// Whether [`summarize`] checks every frame's payload checksum, a full pass over the logs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Payloads {
    /// Check them, and list a failure as damage.
    Verify,
    /// The caller has checked them already ([`crate::integrity::check`]): do not read them
    /// again.
    AlreadyVerified,
}

/// Reads every log of `recording` and summarizes it.
pub fn summarize(recording: &Recording, payloads: Payloads) -> Result<RecordingSummary> {
    let node_endings: Vec<RunEnding> = recording
        .nodes()
        .iter()
        .map(|node| RunEnding::of(&node.dir, &node.manifest))
        .collect();
    let mut processes = Vec::new();
    for entry in recording.processes() {
        let node = recording.node_of(entry);
        let run_ending = node_endings[entry.node];
        let mut summary = ProcessSummary {
            id: entry.id,
            name: entry.name.clone(),
            parent: entry.parent,
            events: 0,
            by_kind: BTreeMap::new(),
            bytes_raw: 0,
            bytes_compressed: 0,
            state: "missing".into(),
            complete: false,
            ending: None,
            ending_text: "unknown (its log cannot be read)".into(),
            damage: Vec::new(),
            stalls: 0,
        };
        let reader = match recording.open_log(entry) {
            Ok(r) => r,
            Err(FormatError::Missing { .. }) if node.manifest.stopped.is_some() => {
                summary.state = "not recorded (recording stopped)".into();
                processes.push(summary);
                continue;
            }
            Err(e) => {
                summary.damage.push(e.to_string());
                processes.push(summary);
                continue;
            }
        };
        summary.events = reader.event_count();
        summary.bytes_raw = reader.raw_bytes();
        summary.bytes_compressed = reader.frame_bytes() + reader.ring_bytes();
        summary.state = match (reader.state(), run_ending) {
            (LogState::Complete, _) => "complete".into(),
            (LogState::Recovered, _) if node.manifest.stopped.is_some() => {
                "recording stopped".into()
            }
            (LogState::Recovered, run) if run.still_recording() => {
                "being written (read up to here)".into()
            }
            (LogState::Recovered, run) if run.cut_short() => "recovered after crash".into(),
            // The program exited while this process was still alive: its writer was never
            // closed, and what it wrote is recovered like after a crash.
            (LogState::Recovered, _) => "recovered (process alive at exit)".into(),
        };
        if reader.pending_access().is_some() {
            summary
                .state
                .push_str("; its last atomic access rebuilt from the pending record, site unknown");
        }
        summary.damage = reader.damage().iter().map(|e| e.to_string()).collect();
        if payloads == Payloads::Verify
            && let Err(e) = reader.verify_payloads()
        {
            summary.damage.push(e.to_string());
        }
        match reader.kind_counts() {
            Ok(counts) => {
                summary.by_kind = counts
                    .into_iter()
                    .filter(|(_, n)| *n > 0)
                    .map(|(k, n)| (k.name().to_owned(), n))
                    .collect();
            }
            Err(e) => summary.damage.push(e.to_string()),
        }
        summary.stalls = reader.totals().map_or(0, |t| t.stalls);
        match ProcessEnding::of(recording, &reader) {
            Ok(ending) => {
                summary.ending_text =
                    ending.describe(run_ending, entry.id.local() == ProcessId::MAIN);
                summary.ending = Some(ending);
            }
            Err(e) => summary.damage.push(e.to_string()),
        }
        summary.complete = reader.state() == LogState::Complete && summary.damage.is_empty();
        processes.push(summary);
    }
    for unlogged in crate::ending::spawned_without_log(recording) {
        processes.push(ProcessSummary {
            id: unlogged.id,
            name: UNLOGGED_NAME.into(),
            parent: Some(unlogged.parent),
            events: 0,
            by_kind: BTreeMap::new(),
            bytes_raw: 0,
            bytes_compressed: 0,
            state: "none: spawned, never started".into(),
            complete: false,
            ending: Some(ProcessEnding::NeverStarted),
            ending_text: unlogged.describe(recording),
            damage: Vec::new(),
            stalls: 0,
        });
    }
    processes.sort_by_key(|p| p.id);
    let events = processes.iter().map(|p| p.events).sum();
    let bytes_raw: u64 = processes.iter().map(|p| p.bytes_raw).sum();
    let bytes_compressed: u64 = processes.iter().map(|p| p.bytes_compressed).sum();
    let manifest = recording.manifest();
    let run_ending = node_endings[0];
    let node_complete = |n: usize| {
        let node = &recording.nodes()[n];
        node.manifest.end.is_some()
            && node.manifest.stopped.is_none()
            && processes
                .iter()
                .filter(|p| p.id.node() as usize == n)
                .all(|p| p.complete)
    };
    let nodes: Vec<NodeSummary> = if recording.is_distributed() {
        recording
            .nodes()
            .iter()
            .enumerate()
            .map(|(n, node)| NodeSummary {
                name: node.name.clone(),
                dir: node.dir.clone(),
                program: node.manifest.program.path.clone(),
                os_pid: node.manifest.os_pid,
                start_time: node.manifest.start_time.clone(),
                run_ending: node_endings[n],
                run_ending_text: node_endings[n].to_string(),
                processes: recording.processes().iter().filter(|e| e.node == n).count(),
                complete: node_complete(n),
                stopped: node.manifest.stopped.as_ref().map(|s| s.reason.clone()),
            })
            .collect()
    } else {
        Vec::new()
    };
    let stopped = recording
        .nodes()
        .iter()
        .find_map(|node| node.manifest.stopped.as_ref())
        .map(|s| s.reason.clone());
    Ok(RecordingSummary {
        recording: recording.dir().to_owned(),
        program: manifest.program.path.clone(),
        start_time: manifest.start_time.clone(),
        exit_code: manifest.end.as_ref().map(|e| e.exit_code),
        run_ending,
        run_ending_text: run_ending.to_string(),
        events,
        bytes_raw,
        bytes_compressed,
        compression_ratio: if bytes_compressed == 0 {
            0.0
        } else {
            bytes_raw as f64 / bytes_compressed as f64
        },
        complete: !processes.is_empty() && (0..recording.nodes().len()).all(node_complete),
        stalls: processes.iter().map(|p| p.stalls).sum(),
        stopped,
        processes,
        nodes,
    })
}
