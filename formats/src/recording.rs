//! A recording directory: the manifest, one log per logical process, and a cache.
//!
//! Recordings live under `./ppd-recordings/<program>-<n>/` by default, with a `latest` symbolic
//! link to the newest. Directories are created 0700 and files 0600: a recording holds the
//! program's data.

use std::fs;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::{FormatError, Result};
use crate::ids::ProcessId;
use crate::manifest::{Manifest, ProcessEntry};
use crate::reader::LogReader;

/// Default directory holding recordings, relative to the working directory.
pub const RECORDINGS_DIR: &str = "ppd-recordings";
/// Name of the link to the newest recording.
pub const LATEST: &str = "latest";
/// Sub-directory for derived data (vector clocks, traces), safe to delete.
pub const CACHE_DIR: &str = "cache";

/// Sub-directory holding the nodes after the first, in a recording of several OS processes.
pub const NODES_DIR: &str = "nodes";

/// One OS process of a recording: the first program that starts records into the recording's
/// directory, every other one into `nodes/NAME/` under it, each with its own manifest and logs.
#[derive(Debug, Clone)]
pub struct Node {
    /// Its name: the manifest's, else the program's file name.
    pub name: String,
    /// Its directory.
    pub dir: PathBuf,
    /// Its manifest.
    pub manifest: Manifest,
    /// The id its logs' process 0 has in the recording (`k << ProcessId::NODE_SHIFT` for
    /// node `k`): each node numbers its processes from 0, the recording keeps them apart.
    pub base: u32,
}

/// An open recording.
#[derive(Debug, Clone)]
pub struct Recording {
    dir: PathBuf,
    nodes: Vec<Node>,
    /// Every logical process of every node, with the ids and names the recording gives them.
    processes: Vec<ProcessEntry>,
    /// The same processes as their own node's manifest and logs number and name them.
    locals: Vec<ProcessEntry>,
}

impl Recording {
    /// Opens the recording in `dir`: its first node there and the others under `nodes/`.
    ///
    /// A node's processes are those of its manifest plus any log file the manifest does not
    /// list yet (a program killed between creating a log and rewriting the manifest). In a
    /// recording of several nodes, processes are named `NODE/NAME`.
    pub fn open(dir: &Path) -> Result<Recording> {
        Recording::open_nodes(dir, true)
    }

    /// Opens only the node recorded in `dir`, as its own program sees it: its processes as its
    /// logs number and name them. What a node's replay (and a re-execution in it) reads.
    pub fn open_node(dir: &Path) -> Result<Recording> {
        Recording::open_nodes(dir, false)
    }

    fn open_nodes(dir: &Path, with_nested: bool) -> Result<Recording> {
        let mut nodes = vec![dir.to_owned()];
        let nested = dir.join(NODES_DIR);
        if with_nested && nested.is_dir() {
            let listing =
                fs::read_dir(&nested).map_err(|e| FormatError::io(&nested, "list nodes", e))?;
            let mut more = Vec::new();
            for item in listing {
                let item = item.map_err(|e| FormatError::io(&nested, "list nodes", e))?;
                let path = item.path();
                if path.join(crate::manifest::MANIFEST_FILE).exists() {
                    more.push(path);
                }
            }
            more.sort();
            nodes.extend(more);
        }
        let mut recording = Recording {
            dir: dir.to_owned(),
            nodes: Vec::new(),
            processes: Vec::new(),
            locals: Vec::new(),
        };
        let several = nodes.len() > 1;
        for (k, node_dir) in nodes.into_iter().enumerate() {
            let (manifest, locals) = open_node(&node_dir)?;
            // Every node a run starts records its id; a node of another run is not part of
            // this one, however its logs read.
            if let Some(first) = recording.nodes.first()
                && manifest.run != first.manifest.run
            {
                return Err(FormatError::ForeignNode {
                    path: node_dir,
                    node_run: manifest.run,
                    run: first.manifest.run.clone(),
                });
            }
            let base = u32::try_from(k)
                .ok()
                .and_then(|k| k.checked_shl(ProcessId::NODE_SHIFT))
                .filter(|_| k < (1 << (32 - ProcessId::NODE_SHIFT)))
                .ok_or_else(|| FormatError::NotARecording {
                    path: dir.to_owned(),
                    detail: "more nodes than process ids can tell apart".into(),
                })?;
            let name = manifest.node.clone().unwrap_or_else(|| {
                manifest
                    .program
                    .path
                    .file_name()
                    .map_or_else(|| format!("node{k}"), |n| n.to_string_lossy().into_owned())
            });
            for local in locals {
                if local.id.0 >= 1 << ProcessId::NODE_SHIFT {
                    return Err(FormatError::NotARecording {
                        path: node_dir,
                        detail: format!(
                            "process {} is numbered past the {} a node can hold",
                            local.id.0,
                            1u32 << ProcessId::NODE_SHIFT
                        ),
                    });
                }
                let mut entry = local.clone();
                entry.id = ProcessId(local.id.0 + base);
                entry.parent = local.parent.map(|p| ProcessId(p.0 + base));
                entry.node = k;
                if several {
                    entry.name = format!("{name}/{}", local.name);
                }
                recording.processes.push(entry);
                recording.locals.push(ProcessEntry { node: k, ..local });
            }
            recording.nodes.push(Node {
                name,
                dir: node_dir,
                manifest,
                base,
            });
        }
        Ok(recording)
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The manifest of the first node (the only one, in a recording of one OS process).
    pub fn manifest(&self) -> &Manifest {
        &self.nodes[0].manifest
    }

    /// The OS processes the recording holds, the first one first.
    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    /// The node `process` ran in.
    pub fn node_of(&self, process: &ProcessEntry) -> &Node {
        &self.nodes[process.node]
    }

    /// Whether the recording holds several OS processes.
    pub fn is_distributed(&self) -> bool {
        self.nodes.len() > 1
    }

    /// The logical processes, in id order.
    pub fn processes(&self) -> &[ProcessEntry] {
        &self.processes
    }

    /// The process with id `id`.
    pub fn process(&self, id: ProcessId) -> Option<&ProcessEntry> {
        self.processes.iter().find(|p| p.id == id)
    }

    /// Finds a process by name, or by id written `p3` or `3` when no process has that name
    /// ([`names::resolve_process`](crate::names::resolve_process)).
    pub fn find_process(&self, name: &str) -> Option<&ProcessEntry> {
        self.resolve_process(name).ok()
    }

    /// Like [`find_process`](Self::find_process), saying why when `name` names no process or
    /// several.
    pub fn resolve_process(
        &self,
        name: &str,
    ) -> std::result::Result<&ProcessEntry, crate::names::ProcessNameError> {
        let id = crate::names::resolve_process(
            name,
            self.processes.iter().map(|p| (p.id, p.name.as_str())),
        )?;
        Ok(self
            .process(id)
            .expect("resolve_process returns the id of a listed process"))
    }

    /// The name of process `id` as its own node's manifest names it (`main`, where the
    /// recording says `NODE/main`).
    pub fn local_name(&self, id: ProcessId) -> Option<&str> {
        let i = self.processes.iter().position(|p| p.id == id)?;
        Some(
            self.locals
                .get(i)
                .unwrap_or(&self.processes[i])
                .name
                .as_str(),
        )
    }

    /// Path of a process's log.
    pub fn log_path(&self, process: &ProcessEntry) -> PathBuf {
        self.node_of(process).dir.join(&process.log)
    }

    /// Opens a process's log and checks that its header belongs to this process of this run:
    /// the same process id, name and parent as the manifest, the same OS process, and created
    /// while the run went on. A log swapped with another process's, or copied from another
    /// run, is refused.
    pub fn open_log(&self, process: &ProcessEntry) -> Result<LogReader> {
        let mut reader = LogReader::open(&self.log_path(process))?;
        let local = self
            .processes
            .iter()
            .position(|p| p.id == process.id)
            .map(|i| &self.locals[i])
            .unwrap_or(process);
        let node = self.node_of(process);
        check_identity(&node.manifest, local, &reader)?;
        reader.rebase(node.base);
        Ok(reader)
    }

    /// The cache directory, created (private) on first use; a `cache` that is not a real
    /// directory of the recording is refused rather than written through.
    pub fn cache_dir(&self) -> Result<PathBuf> {
        let path = self.dir.join(CACHE_DIR);
        crate::private::ensure_dir(&path)?;
        Ok(path)
    }
}

/// Checks that `reader`'s header belongs to `process` (as its node's manifest and logs number
/// it) of the run `manifest` describes.
fn check_identity(manifest: &Manifest, process: &ProcessEntry, reader: &LogReader) -> Result<()> {
    let id = reader.identity();
    let foreign = |detail: String| FormatError::Foreign {
        path: reader.path().to_owned(),
        detail,
    };
    if (id.process_id, id.name.as_str(), id.parent)
        != (process.id, process.name.as_str(), process.parent)
    {
        return Err(foreign(format!(
            "the log's header is process {} {:?} (parent {}), the manifest expects process \
             {} {:?} (parent {}) here: logs swapped or copied in",
            id.process_id,
            id.name,
            show_parent(id.parent),
            process.id,
            process.name,
            show_parent(process.parent)
        )));
    }
    // No bound at the run's end: the OS process's threads may go on spawning after `main` (or
    // a recorded test) returned, until the OS process exits.
    let created = reader.created_unix_ns();
    if id.os_pid != process.os_pid || created < manifest.start_unix_ns {
        return Err(foreign(format!(
            "the log was written by OS process {} at {}, not by this run (OS process {}, \
             started {}): a log from another run",
            id.os_pid,
            Manifest::rfc3339(created),
            process.os_pid,
            manifest.start_time
        )));
    }
    Ok(())
}

/// Reads one node's manifest and lists its processes as its own logs number and name them.
fn open_node(dir: &Path) -> Result<(Manifest, Vec<ProcessEntry>)> {
    let manifest = Manifest::read(dir)?;
    let mut processes = manifest.processes.clone();
    for entry in &processes {
        check_log_name(dir, &entry.log)?;
    }
    let listing = fs::read_dir(dir).map_err(|e| FormatError::io(dir, "list recording", e))?;
    let mut extra = Vec::new();
    for item in listing {
        let item = item.map_err(|e| FormatError::io(dir, "list recording", e))?;
        let name = item.file_name().to_string_lossy().into_owned();
        let is_log = name.starts_with("proc-") && name.ends_with(".log");
        if is_log && !processes.iter().any(|p| p.log == name) {
            extra.push(name);
        }
    }
    extra.sort();
    for name in extra {
        let reader = LogReader::open(&dir.join(&name))?;
        let id = reader.identity();
        processes.push(ProcessEntry {
            id: id.process_id,
            name: id.name.clone(),
            parent: id.parent,
            host: manifest.host.clone(),
            os_pid: id.os_pid,
            log: name,
            node: 0,
        });
    }
    processes.sort_by_key(|p| p.id);
    if let Some(twice) = processes.windows(2).find(|w| w[0].id == w[1].id) {
        return Err(FormatError::NotARecording {
            path: dir.to_owned(),
            detail: format!(
                "the manifest lists process {} twice (logs {} and {})",
                twice[0].id, twice[0].log, twice[1].log
            ),
        });
    }
    Ok((manifest, processes))
}

fn show_parent(parent: Option<ProcessId>) -> String {
    parent.map_or_else(|| "none".to_owned(), |p| p.to_string())
}

/// A log name from a manifest must be a plain file name inside the recording.
fn check_log_name(dir: &Path, log: &str) -> Result<()> {
    let plain = !log.is_empty() && !log.contains('/') && log != "." && log != "..";
    if plain {
        Ok(())
    } else {
        Err(FormatError::NotARecording {
            path: dir.to_owned(),
            detail: format!("manifest names log {log:?}, which is not a file in the recording"),
        })
    }
}

/// Finds the recording a command should use: `arg` if given (a recording, or a directory of
/// recordings whose newest is taken; `latest`, when nothing here has that name, is the newest
/// in `./ppd-recordings`, as its link there says), else the newest in `./ppd-recordings`.
pub fn resolve(arg: Option<&Path>) -> Result<PathBuf> {
    let base = match arg {
        Some(path) if path.join(crate::manifest::MANIFEST_FILE).exists() => {
            return Ok(path.to_owned());
        }
        Some(path) if path == Path::new(LATEST) && fs::symlink_metadata(path).is_err() => {
            PathBuf::from(RECORDINGS_DIR)
        }
        Some(path) => path.to_owned(),
        None => PathBuf::from(RECORDINGS_DIR),
    };
    if !base.is_dir() {
        return Err(FormatError::NotARecording {
            detail: match (arg, fs::metadata(&base)) {
                (Some(_), Ok(_)) => "a file, not a directory; give a recording directory \
                                     (the one holding manifest.json)"
                    .into(),
                (Some(_), Err(_)) => "no such directory".into(),
                (None, _) => "no recordings yet; record one with `ppd record -- PROGRAM`".into(),
            },
            path: base,
        });
    }
    if let Some(latest) = latest_sibling(&base)? {
        return Ok(latest);
    }
    newest_in(&base)?.ok_or_else(|| FormatError::NotARecording {
        path: base,
        detail: "no manifest.json here or in any sub-directory".into(),
    })
}

/// The recording `base/latest` points at, if it is a symbolic link to a sibling recording
/// (a plain name inside `base`). Anything else named `latest` is refused rather than followed:
/// a link out of the recordings directory would send reads, and cache writes, elsewhere.
fn latest_sibling(base: &Path) -> Result<Option<PathBuf>> {
    let latest = base.join(LATEST);
    let target = match fs::read_link(&latest) {
        Ok(target) => target,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(_) if fs::symlink_metadata(&latest).is_ok() => {
            return Err(FormatError::NotARecording {
                path: latest,
                detail: "not a symbolic link; ppd only follows `latest` to a sibling recording"
                    .into(),
            });
        }
        Err(e) => return Err(FormatError::io(&latest, "read latest link", e)),
    };
    let mut parts = target.components();
    let sibling = match (parts.next(), parts.next()) {
        (Some(std::path::Component::Normal(name)), None) => base.join(name),
        _ => {
            return Err(FormatError::NotARecording {
                path: latest,
                detail: format!(
                    "points to {}, which is not a recording next to it; ppd only follows \
                     `latest` to a sibling",
                    target.display()
                ),
            });
        }
    };
    let is_dir = fs::symlink_metadata(&sibling).is_ok_and(|m| m.is_dir());
    Ok((is_dir && sibling.join(crate::manifest::MANIFEST_FILE).exists()).then_some(sibling))
}

fn newest_in(base: &Path) -> Result<Option<PathBuf>> {
    let listing = fs::read_dir(base).map_err(|e| FormatError::io(base, "list recordings", e))?;
    let mut best: Option<(u64, PathBuf)> = None;
    for item in listing.flatten() {
        let path = item.path();
        if let Ok(m) = Manifest::read(&path)
            && best.as_ref().is_none_or(|(t, _)| m.start_unix_ns > *t)
        {
            best = Some((m.start_unix_ns, path));
        }
    }
    Ok(best.map(|(_, p)| p))
}

/// Creates a fresh recording directory `base/<program>-<n>` (n = 1, 2, ...), private to the
/// user. Creation is atomic, so recordings started at the same moment get different `n`.
pub fn create_recording_dir(base: &Path, program: &str) -> Result<PathBuf> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(base)
        .map_err(|e| FormatError::io(base, "create recordings directory", e))?;
    let stem: String = program
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let stem = if stem.is_empty() {
        "run".to_owned()
    } else {
        stem
    };
    for n in 1.. {
        let dir = base.join(format!("{stem}-{n}"));
        match fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => {
                crate::private::ensure_dir(&dir)?;
                return Ok(dir);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(FormatError::io(&dir, "create recording directory", e)),
        }
    }
    unreachable!("the loop returns or runs out of integers")
}

/// Points `base/latest` at `dir` by renaming a fresh link over the old one (atomic).
pub fn update_latest(base: &Path, dir: &Path) -> Result<()> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    // `latest` names a sibling, which is all readers follow: `dir`'s own name, however `dir`
    // was written (relative, absolute, canonical).
    let target = dir.file_name().map_or(dir, Path::new);
    let tmp = base.join(format!(
        ".{LATEST}.{}.{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    std::os::unix::fs::symlink(target, &tmp)
        .map_err(|e| FormatError::io(&tmp, "create latest link", e))?;
    let latest = base.join(LATEST);
    fs::rename(&tmp, &latest).map_err(|e| FormatError::io(&latest, "update latest link", e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn concurrent_recordings_get_distinct_directories_and_latest_moves() {
        let base = tempfile::tempdir().unwrap();
        let dirs: Vec<PathBuf> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8)
                .map(|_| s.spawn(|| create_recording_dir(base.path(), "bank").unwrap()))
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let mut names: Vec<_> = dirs
            .iter()
            .map(|d| d.file_name().unwrap().to_owned())
            .collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), 8);
        update_latest(base.path(), &dirs[3]).unwrap();
        update_latest(base.path(), &dirs[5]).unwrap();
        let link = fs::read_link(base.path().join(LATEST)).unwrap();
        assert_eq!(link, dirs[5].strip_prefix(base.path()).unwrap());
    }

    #[test]
    fn latest_is_only_followed_to_a_sibling_recording() {
        let base = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        fs::write(outside.path().join(crate::manifest::MANIFEST_FILE), b"{}").unwrap();
        std::os::unix::fs::symlink(outside.path(), base.path().join(LATEST)).unwrap();
        let err = resolve(Some(base.path())).unwrap_err().to_string();
        assert!(err.contains("which is not a recording next to it"), "{err}");
        fs::remove_file(base.path().join(LATEST)).unwrap();
        std::os::unix::fs::symlink("../elsewhere", base.path().join(LATEST)).unwrap();
        let err = resolve(Some(base.path())).unwrap_err().to_string();
        assert!(err.contains("points to ../elsewhere"), "{err}");
        fs::remove_file(base.path().join(LATEST)).unwrap();
        let dir = create_recording_dir(base.path(), "bank").unwrap();
        fs::write(dir.join(crate::manifest::MANIFEST_FILE), b"{}").unwrap();
        update_latest(base.path(), &dir).unwrap();
        assert_eq!(resolve(Some(base.path())).unwrap(), dir);
    }

    #[test]
    fn resolve_explains_a_missing_recording() {
        let base = tempfile::tempdir().unwrap();
        let err = resolve(Some(&base.path().join("nope")))
            .unwrap_err()
            .to_string();
        assert!(err.contains("no such directory"), "{err}");
        let err = resolve(Some(base.path())).unwrap_err().to_string();
        assert!(err.contains("no manifest.json"), "{err}");
        let file = base.path().join("file");
        fs::write(&file, b"").unwrap();
        let err = resolve(Some(&file)).unwrap_err().to_string();
        assert!(err.contains("a file, not a directory"), "{err}");
    }
}
