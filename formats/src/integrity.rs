//! Whether a recording can be believed: every log present, its own, and undamaged.
//!
//! Every command that answers from a recording checks it first. Damage (a missing, empty,
//! foreign or unreadable log, a structure or payload that fails its checksum) makes the answer
//! unreliable, so commands refuse it unless asked to use the readable prefix. A log that ends
//! early without damage (the program died, or recording stopped on a failed write) is a
//! faithful prefix of the run; answers from it say where it ends.

use serde::Serialize;

use crate::error::FormatError;
use crate::ids::ProcessId;
use crate::reader::LogState;
use crate::recording::Recording;

/// What is wrong with, or missing from, a recording.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Integrity {
    /// Damage, each naming the process and the file, offset or identity at fault.
    pub damage: Vec<Finding>,
    /// Logs that end before the run did, without damage.
    pub ends_early: Vec<Finding>,
    /// Why recording stopped while the program ran on, as the manifest says.
    pub stopped: Option<String>,
}

/// One finding about one process's log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// The process.
    pub process: ProcessId,
    /// Its name.
    pub name: String,
    /// What was found.
    pub detail: String,
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({}): {}", self.name, self.process, self.detail)
    }
}

impl Integrity {
    /// Whether nothing is damaged.
    pub fn is_sound(&self) -> bool {
        self.damage.is_empty()
    }
}

/// Opens every log of `recording`, checks its identity against the manifest, its structure and
/// the checksum of every compressed payload, and lists what is damaged or ends early.
pub fn check(recording: &Recording) -> Integrity {
    let mut out = Integrity::default();
    if recording.processes().is_empty() {
        out.damage.push(Finding {
            process: ProcessId::MAIN,
            name: "main".into(),
            detail: format!(
                "{}: the manifest lists no process and the directory holds no log",
                recording.dir().display()
            ),
        });
    }
    out.stopped = recording
        .nodes()
        .iter()
        .find_map(|node| node.manifest.stopped.as_ref())
        .map(|s| s.reason.clone());
    for entry in recording.processes() {
        // Each OS process stops recording on its own: what its node's manifest says.
        let stopped = recording.node_of(entry).manifest.stopped.as_ref();
        let finding = |detail: String| Finding {
            process: entry.id,
            name: entry.name.clone(),
            detail,
        };
        let reader = match recording.open_log(entry) {
            Ok(r) => r,
            // Recording stopped before this process's log could be created.
            Err(FormatError::Missing { path, .. }) if stopped.is_some() => {
                out.ends_early.push(finding(format!(
                    "{}: no log, recording stopped before it was created",
                    path.display()
                )));
                continue;
            }
            Err(e) => {
                out.damage.push(finding(e.to_string()));
                continue;
            }
        };
        out.damage
            .extend(reader.damage().iter().map(|e| finding(e.to_string())));
        if let Err(e) = reader.verify_payloads() {
            out.damage.push(finding(e.to_string()));
        }
        let early = reader.state() == LogState::Recovered || stopped.is_some();
        if early && reader.damage().is_empty() {
            let why = match stopped {
                Some(_) => "where recording stopped",
                None => "where the program died",
            };
            out.ends_early.push(finding(format!(
                "{}: ends after {} events, {why}",
                reader.path().display(),
                reader.event_count()
            )));
        }
    }
    out
}
