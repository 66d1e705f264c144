//! Whether a recording can be believed: every log present, its own, and undamaged.
//!
//! Every command that answers from a recording checks it first. Damage (a missing, empty,
//! foreign or unreadable log, a structure or payload that fails its checksum) makes the answer
//! unreliable, so commands refuse it unless asked to use the readable prefix. A log that ends
//! early without damage (the program died, or recording stopped on a failed write) is a
//! faithful prefix of the run; answers from it say where it ends.
//!
//! The manifests and `ppd record`'s exit record say what ran and how it ended, so each is
//! checked against this user's key too (`crate::authenticity`): one whose MAC fails is damage;
//! one without this user's MAC is answered from with a note that its fields are as the
//! recording says.

use std::path::PathBuf;

use serde::Serialize;

use crate::authenticity::{Authenticity, ReaderKey, Unsealed};
use crate::ending::{PROGRAM_EXIT_FILE, ProgramExit};
use crate::error::FormatError;
use crate::ids::ProcessId;
use crate::manifest::{MANIFEST_FILE, Manifest};
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
    /// Each node's manifest and exit record, and whether this user's ppd wrote it here.
    pub authenticity: Vec<FileAuthenticity>,
}

/// Whether one manifest or exit record was written by this user's ppd here.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileAuthenticity {
    /// The node it belongs to.
    pub node: String,
    /// The file.
    pub path: PathBuf,
    /// What its MAC says.
    #[serde(flatten)]
    pub authenticity: Authenticity,
}

impl std::fmt::Display for FileAuthenticity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.authenticity)
    }
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
    /// Whether nothing is damaged: every log, and every manifest and exit record that carries
    /// a MAC.
    pub fn is_sound(&self) -> bool {
        self.damage.is_empty() && self.tampered().next().is_none()
    }

    /// The manifests and exit records whose MAC fails.
    pub fn tampered(&self) -> impl Iterator<Item = &FileAuthenticity> {
        self.authenticity
            .iter()
            .filter(|f| f.authenticity.is_tampered())
    }

    /// The manifests and exit records without this user's MAC: their fields are as the
    /// recording says.
    pub fn unauthenticated(&self) -> impl Iterator<Item = &FileAuthenticity> {
        self.authenticity
            .iter()
            .filter(|f| matches!(f.authenticity, Authenticity::Unauthenticated { .. }))
    }
}

/// Checks each node's manifest and exit record against this user's key. A manifest that is not
/// the one the recording was opened with (rewritten meanwhile) is unchecked: what is answered
/// is not what was checked.
pub fn authenticity(recording: &Recording) -> Vec<FileAuthenticity> {
    let key = ReaderKey::of_user();
    let mut out = Vec::new();
    for node in recording.nodes() {
        let file = |path: PathBuf, authenticity: Authenticity| FileAuthenticity {
            node: node.name.clone(),
            path,
            authenticity,
        };
        let path = node.dir.join(MANIFEST_FILE);
        let authenticity = match Manifest::read_checked(&node.dir, &key) {
            Ok((manifest, authenticity)) if manifest == node.manifest => authenticity,
            Ok(_) => Authenticity::unauthenticated(
                Unsealed::Changed,
                "it changed while ppd read the recording".into(),
            ),
            Err(e) => Authenticity::unauthenticated(
                Unsealed::Changed,
                format!("it cannot be read again: {e}"),
            ),
        };
        out.push(file(path, authenticity));
        if let Some((_, authenticity)) = ProgramExit::read_checked(&node.dir, &key) {
            out.push(file(node.dir.join(PROGRAM_EXIT_FILE), authenticity));
        }
    }
    out
}

/// Opens every log of `recording`, checks its identity against the manifest, its structure and
/// the checksum of every compressed payload, and lists what is damaged or ends early; checks
/// each manifest and exit record against this user's key ([`authenticity`]).
pub fn check(recording: &Recording) -> Integrity {
    let mut out = Integrity {
        authenticity: authenticity(recording),
        ..Integrity::default()
    };
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
