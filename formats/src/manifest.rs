//! The recording manifest: `manifest.json` in the recording directory.
//!
//! The runtime inside the recorded program writes it — not the `ppd record` wrapper — so it
//! names the real program binary even when the wrapper ran `cargo run`. It is rewritten
//! atomically (a temporary file renamed over the old one) whenever a process is spawned and when
//! the run ends, so a reader always sees a whole manifest. It ends with a MAC under the
//! recording user's key (`crate::authenticity`): its program, arguments and ending are believed
//! only when that holds.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::authenticity::{Authenticity, ReaderKey, SealedFile, UserKey, sealed_json, unseal};
use crate::error::{FormatError, Result};
use crate::ids::ProcessId;
use crate::layout::{FORMAT_VERSION, OLDEST_READABLE_VERSION};

/// File name of the manifest inside a recording directory.
pub const MANIFEST_FILE: &str = "manifest.json";

/// Everything about a recording that is not an event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// Format version of the recording.
    pub format_version: u32,
    /// The recorded program.
    pub program: Program,
    /// Its command line.
    pub argv: Vec<String>,
    /// Its working directory.
    pub cwd: PathBuf,
    /// Host name of the machine it ran on.
    pub host: String,
    /// The node's name, in a recording of several OS processes (`ppd record` of a launcher,
    /// or `PPD_NODE`); absent in older recordings, whose node is named after the program.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// The run it belongs to: every OS process of one run records the same id (`ppd record`
    /// makes one and hands it down; `ppd record --join ID` joins a run recorded elsewhere), so
    /// recordings made apart can be merged (`ppd merge`) and nothing else can be.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
    /// Its OS process id.
    pub os_pid: u32,
    /// When it started, Unix nanoseconds.
    pub start_unix_ns: u64,
    /// When it started, RFC 3339.
    pub start_time: String,
    /// How it was recorded.
    pub options: RecordOptions,
    /// The logical processes, in id order.
    pub processes: Vec<ProcessEntry>,
    /// How the run ended; absent when the program died before the runtime could say.
    #[serde(default)]
    pub end: Option<RunEnd>,
    /// Why recording stopped before the program ended (a write to a log failed), and where
    /// each process's log ends; absent when the whole run was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<RecordingStopped>,
}

/// Recording stopped while the program ran on: every process stopped logging at one
/// consistent cut (no receive is logged whose send is not).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordingStopped {
    /// The write that failed, naming the file and the OS error ("No space left on device").
    pub reason: String,
    /// When, Unix nanoseconds.
    pub unix_ns: u64,
    /// Events each process logged before the cut, filled in as processes end.
    pub cut: Vec<CutEntry>,
}

/// Where one process's log ends in a stopped recording.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CutEntry {
    /// The process.
    pub process: ProcessId,
    /// Events in its log.
    pub events: u64,
}

/// The recorded program's binary.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Program {
    /// Absolute path of the executable.
    pub path: PathBuf,
    /// Size in bytes.
    pub size: u64,
    /// BLAKE3 hash of its contents, hex; replay refuses a binary whose hash differs.
    pub blake3: String,
}

/// Recording settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordOptions {
    /// Message payloads are logged.
    pub payloads: bool,
    /// Frames are fsynced before their ring slot is reused.
    pub fsync: bool,
    /// Raw block size of the logs.
    pub block_size: u32,
    /// Ring slots per log.
    pub ring_blocks: u32,
}

/// One logical process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessEntry {
    /// Its id.
    pub id: ProcessId,
    /// Its name.
    pub name: String,
    /// The process that spawned it.
    pub parent: Option<ProcessId>,
    /// Host it ran on.
    pub host: String,
    /// OS process it ran in.
    pub os_pid: u32,
    /// Its log, a file in its node's directory.
    pub log: String,
    /// Which node (OS process) of the recording it ran in: the index into
    /// [`Recording::nodes`](crate::Recording::nodes). Not stored: the recording's layout says it.
    #[serde(skip)]
    pub node: usize,
}

/// How the run ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunEnd {
    /// When, Unix nanoseconds.
    pub unix_ns: u64,
    /// The exit code the program returned.
    pub exit_code: i32,
    /// Whether `main` panicked.
    pub panicked: bool,
    /// Events written by all processes.
    pub events: u64,
    /// Times a writer waited for the compressor.
    pub stalls: u64,
}

impl Manifest {
    /// The log file name of process `id`.
    pub fn log_name(id: ProcessId) -> String {
        format!("proc-{:04}.log", id.0)
    }

    /// The manifest of a recording assembled without a recorded program (tests, benchmarks,
    /// synthetic recordings): `program` started at the Unix epoch as OS process 1 on host
    /// `host`, with `options`, and `processes` (id and name), every one but process 0 spawned
    /// by process 0. Its logs must be written with OS pid 1 to match.
    pub fn synthetic(
        program: &str,
        options: RecordOptions,
        processes: impl IntoIterator<Item = (ProcessId, String)>,
    ) -> Manifest {
        Manifest {
            format_version: crate::FORMAT_VERSION,
            program: Program {
                path: program.into(),
                size: 0,
                blake3: String::new(),
            },
            argv: vec![program.into()],
            cwd: ".".into(),
            host: "host".into(),
            node: None,
            run: None,
            os_pid: 1,
            start_unix_ns: 0,
            start_time: Manifest::rfc3339(0),
            options,
            processes: processes
                .into_iter()
                .map(|(id, name)| ProcessEntry {
                    id,
                    name,
                    parent: (id != ProcessId(0)).then_some(ProcessId(0)),
                    host: "host".into(),
                    os_pid: 1,
                    log: Manifest::log_name(id),
                    node: 0,
                })
                .collect(),
            end: None,
            stopped: None,
        }
    }

    /// Makes the recording of a synthetic run in `dir`: writes the [`Manifest::synthetic`] of
    /// `program` with one process per name (process 0 is the first, the parent of every other)
    /// and opens a log writer for each, with `options`. What tests and benchmarks that write
    /// recordings event by event start from.
    pub fn create_synthetic(
        dir: &Path,
        program: &str,
        names: &[String],
        options: crate::WriterOptions,
    ) -> Result<Vec<crate::LogWriter>> {
        let record = RecordOptions {
            payloads: false,
            fsync: options.fsync,
            block_size: options.block_size,
            ring_blocks: options.ring_blocks,
        };
        let ids = (0..names.len() as u32).map(ProcessId);
        Manifest::synthetic(program, record, ids.clone().zip(names.iter().cloned()))
            .write(dir, false)?;
        ids.zip(names)
            .map(|(id, name)| {
                let identity = crate::LogIdentity {
                    process_id: id,
                    parent: (id != ProcessId(0)).then_some(ProcessId(0)),
                    name: name.clone(),
                    os_pid: 1,
                };
                crate::LogWriter::create(&dir.join(Manifest::log_name(id)), &identity, options)
            })
            .collect()
    }

    /// Formats Unix nanoseconds as RFC 3339 (UTC, seconds precision).
    pub fn rfc3339(unix_ns: u64) -> String {
        let time = std::time::UNIX_EPOCH + std::time::Duration::from_nanos(unix_ns);
        humantime::format_rfc3339_seconds(time).to_string()
    }

    /// Reads the manifest of the recording in `dir`, as the file says (its MAC unchecked).
    pub fn read(dir: &Path) -> Result<Manifest> {
        let (path, bytes) = Manifest::read_bytes(dir)?;
        Manifest::parse(&path, &bytes)
    }

    /// Reads the manifest of the recording in `dir` and whether this user's ppd wrote it here
    /// (`key`). The file is read once, and what is returned is parsed from the bytes its MAC
    /// covers.
    pub fn read_checked(dir: &Path, key: &ReaderKey) -> Result<(Manifest, Authenticity)> {
        let (path, bytes) = Manifest::read_bytes(dir)?;
        let (authenticity, content) = unseal(SealedFile::Manifest, &bytes, key);
        Ok((Manifest::parse(&path, &content)?, authenticity))
    }

    fn read_bytes(dir: &Path) -> Result<(PathBuf, Vec<u8>)> {
        let path = dir.join(MANIFEST_FILE);
        let bytes = crate::private::read_regular(&path, "read manifest").map_err(|e| match e {
            FormatError::Missing { .. } => FormatError::NotARecording {
                path: dir.to_owned(),
                detail: format!("no {MANIFEST_FILE}"),
            },
            e => e,
        })?;
        Ok((path, bytes))
    }

    fn parse(path: &Path, bytes: &[u8]) -> Result<Manifest> {
        let manifest: Manifest =
            serde_json::from_slice(bytes).map_err(|source| FormatError::Manifest {
                path: path.to_owned(),
                source,
            })?;
        if !(OLDEST_READABLE_VERSION..=FORMAT_VERSION).contains(&manifest.format_version) {
            return Err(FormatError::UnsupportedVersion {
                path: path.to_owned(),
                found: manifest.format_version,
                supported: FORMAT_VERSION,
                oldest: OLDEST_READABLE_VERSION,
            });
        }
        Ok(manifest)
    }

    /// Writes the manifest into `dir` without a MAC (synthetic recordings: it reads as
    /// unauthenticated), replacing the old one atomically.
    pub fn write(&self, dir: &Path, fsync: bool) -> Result<()> {
        self.write_sealed(dir, fsync, None)
    }

    /// Writes the manifest into `dir` with its MAC under `key` (none: without one), replacing
    /// the old one atomically: a reader sees the old manifest or the new one, each with its own
    /// MAC.
    pub fn write_sealed(&self, dir: &Path, fsync: bool, key: Option<&UserKey>) -> Result<()> {
        let json = sealed_json(self, SealedFile::Manifest, key);
        crate::private::write_atomic(&dir.join(MANIFEST_FILE), &json, fsync)
    }
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;

    fn sample() -> Manifest {
        Manifest {
            format_version: FORMAT_VERSION,
            program: Program {
                path: "/bin/bank".into(),
                size: 10,
                blake3: "ab".into(),
            },
            argv: vec!["bank".into()],
            cwd: "/tmp".into(),
            host: "h".into(),
            node: None,
            run: None,
            os_pid: 1,
            start_unix_ns: 1_700_000_000_000_000_000,
            start_time: Manifest::rfc3339(1_700_000_000_000_000_000),
            options: RecordOptions {
                payloads: false,
                fsync: false,
                block_size: 4096,
                ring_blocks: 4,
            },
            processes: vec![ProcessEntry {
                id: ProcessId(0),
                name: "main".into(),
                parent: None,
                host: "h".into(),
                os_pid: 1,
                log: Manifest::log_name(ProcessId(0)),
                node: 0,
            }],
            end: None,
            stopped: None,
        }
    }

    #[test]
    fn manifest_round_trips_through_its_file() {
        let dir = tempfile::tempdir().unwrap();
        let m = sample();
        m.write(dir.path(), false).unwrap();
        assert_eq!(Manifest::read(dir.path()).unwrap(), m);
        assert_eq!(m.start_time, "2023-11-14T22:13:20Z");
        assert_eq!(m.processes[0].log, "proc-0000.log");
    }

    #[test]
    fn a_sealed_manifest_reads_back_authenticated_and_an_edited_one_tampered() {
        let dir = tempfile::tempdir().unwrap();
        let keys = tempfile::tempdir().unwrap();
        let key = UserKey::load_or_create_in(&keys.path().join("key")).unwrap();
        let reader = ReaderKey::in_dir(&keys.path().join("key"));
        let m = sample();
        m.write_sealed(dir.path(), false, Some(&key)).unwrap();
        let (read, authenticity) = Manifest::read_checked(dir.path(), &reader).unwrap();
        assert_eq!(
            (read, authenticity),
            (m.clone(), Authenticity::Authenticated)
        );
        // Readers that do not check see the same manifest.
        assert_eq!(Manifest::read(dir.path()).unwrap(), m);
        let path = dir.path().join(MANIFEST_FILE);
        let text = fs::read_to_string(&path).unwrap();
        fs::write(&path, text.replace("\"os_pid\": 1", "\"os_pid\": 2")).unwrap();
        let (read, authenticity) = Manifest::read_checked(dir.path(), &reader).unwrap();
        assert_eq!(read.os_pid, 2);
        assert!(authenticity.is_tampered(), "{authenticity:?}");
        m.write(dir.path(), false).unwrap();
        let (_, authenticity) = Manifest::read_checked(dir.path(), &reader).unwrap();
        assert!(
            matches!(authenticity, Authenticity::Unauthenticated { .. }),
            "{authenticity:?}"
        );
    }

    #[test]
    fn a_damaged_manifest_names_the_file() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join(MANIFEST_FILE), b"{\"format_version\": 1,").unwrap();
        let err = Manifest::read(dir.path()).unwrap_err().to_string();
        assert!(err.contains("manifest.json: invalid manifest"), "{err}");
        let err = Manifest::read(&dir.path().join("nope"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("not a ppd recording"), "{err}");
    }
}
