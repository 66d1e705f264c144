//! Record mode: every logical process appends what it does to its own log.
//!
//! What is logged is what control-driven replay needs and no more: the communication history
//! (which message each receive got, Manabe & Imase §2.2), the version of every lock, semaphore
//! and atomic access (instant replay), clock and random values, sends (for happened-before),
//! spawns, joins, exits and panics. Payloads only when asked for or inside e-blocks.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use ppd_formats::authenticity::UserKey;
use ppd_formats::manifest::{
    CutEntry, Manifest, ProcessEntry, Program, RecordOptions, RecordingStopped, RunEnd,
};
use ppd_formats::pending::PendingAccess;
use ppd_formats::{
    Borrowed, Event, EventKind, FORMAT_VERSION, LogIdentity, LogWriter, ObjectId, ProcessId,
    WriterOptions,
};

use super::backend::{Dependency, Mode, Op, ProcessBackend, Runtime};
use super::env;
use super::halt;
use super::program_hash::program_hash;

/// Name of the file that marks a recording directory as taken by one program.
const OWNER_FILE: &str = ".owner";
/// Disk space held back for the manifest: deleted when a write fails for want of space, so
/// that the manifest can still say why recording stopped.
const RESERVE_FILE: &str = ".reserve";
const RESERVE_BYTES: i64 = 64 * 1024;

/// The record-mode runtime.
#[derive(Debug)]
pub struct RecordRuntime {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    dir: PathBuf,
    options: RecordOptions,
    writer: WriterOptions,
    host: String,
    next_pid: AtomicU32,
    spawned: AtomicU32,
    manifest: Mutex<Manifest>,
    /// Logs created by parents for children whose threads have not started yet.
    prepared: Mutex<HashMap<ProcessId, LogWriter>>,
    /// The user's key, which every write of the manifest seals it with; without one (no home,
    /// a key others can read) the manifest is written unsealed, and `ppd record` says so.
    key: Option<UserKey>,
    events: AtomicU64,
    stalls: AtomicU64,
    stopped: AtomicBool,
}

fn unix_nanos() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

fn env_u32(name: &str, default: u32) -> Result<u32, String> {
    match std::env::var(name) {
        Ok(v) => v
            .parse()
            .map_err(|_| format!("{name}={v:?} is not a number")),
        Err(_) => Ok(default),
    }
}

impl RecordRuntime {
    /// Builds the record runtime from the environment `ppd record` set, claiming the recording
    /// directory and writing the first manifest.
    pub fn from_env() -> Result<RecordRuntime, String> {
        let dir = std::env::var_os(env::DIR)
            .map(PathBuf::from)
            .ok_or_else(|| format!("{} is not set", env::DIR))?;
        let defaults = WriterOptions::default();
        let writer = WriterOptions {
            block_size: env_u32(env::BLOCK_SIZE, defaults.block_size)?,
            ring_blocks: env_u32(env::RING_BLOCKS, defaults.ring_blocks)?,
            fsync: env::flag(env::FSYNC),
            level: defaults.level,
        };
        let options = RecordOptions {
            payloads: env::flag(env::PAYLOADS),
            fsync: writer.fsync,
            block_size: writer.block_size,
            ring_blocks: writer.ring_blocks,
        };
        RecordRuntime::new(&dir, options, writer)
    }

    /// Builds a record runtime writing into `dir`: into `dir` itself if this program is the
    /// first to record there, else into a node directory of its own under it (a recording of
    /// several OS processes: a launcher's children, a program that starts another).
    pub fn new(
        dir: &Path,
        options: RecordOptions,
        writer: WriterOptions,
    ) -> Result<RecordRuntime, String> {
        let exe =
            std::env::current_exe().map_err(|e| format!("cannot find own executable: {e}"))?;
        let program = exe
            .file_name()
            .map_or_else(|| "node".to_owned(), |n| n.to_string_lossy().into_owned());
        let (node_dir, node) = claim(dir, &program)?;
        // Every node of the run connects to the debugger of `ppd record --stop`.
        if let Some(stop) = std::env::var_os(env::LIVE_STOP) {
            let stop = serde_json::from_str(&stop.to_string_lossy())
                .map_err(|e| format!("{} is not a breakpoint: {e}", env::LIVE_STOP))?;
            let socket = std::env::var(env::LIVE_CONTROL)
                .map_err(|_| format!("{} is set without {}", env::LIVE_STOP, env::LIVE_CONTROL))?;
            halt::install(stop, &socket, &node, node_dir == dir)?;
        }
        let dir = node_dir.as_path();
        reserve_space(dir);
        let size = std::fs::metadata(&exe).map(|m| m.len()).unwrap_or(0);
        // Before the run, not beside it: a program killed early must still leave the hash that
        // lets it be replayed.
        let blake3 = program_hash(&exe)
            .map_err(|e| format!("cannot hash own executable {}: {e}", exe.display()))?
            .blake3;
        let host = nix::unistd::gethostname()
            .map(|h| h.to_string_lossy().into_owned())
            .unwrap_or_else(|_| "localhost".into());
        let start = unix_nanos();
        let os_pid = std::process::id();
        let manifest = Manifest {
            format_version: FORMAT_VERSION,
            program: Program {
                path: exe,
                size,
                blake3,
            },
            argv: std::env::args_os()
                .map(|a| a.to_string_lossy().into_owned())
                .collect(),
            cwd: std::env::current_dir().unwrap_or_default(),
            host: host.clone(),
            node: Some(node),
            run: std::env::var(env::RUN)
                .ok()
                .filter(|r| env::valid_run_id(r)),
            os_pid,
            start_unix_ns: start,
            start_time: Manifest::rfc3339(start),
            options,
            processes: vec![ProcessEntry {
                id: ProcessId::MAIN,
                name: "main".into(),
                parent: None,
                host: host.clone(),
                os_pid,
                log: Manifest::log_name(ProcessId::MAIN),
                node: 0,
            }],
            end: None,
            stopped: None,
        };
        let key = UserKey::load_or_create().ok();
        manifest
            .write_sealed(dir, options.fsync, key.as_ref())
            .map_err(|e| e.to_string())?;
        let shared = Arc::new(Shared {
            dir: dir.to_owned(),
            options,
            writer,
            host,
            next_pid: AtomicU32::new(1),
            spawned: AtomicU32::new(0),
            manifest: Mutex::new(manifest),
            prepared: Mutex::new(HashMap::new()),
            key,
            events: AtomicU64::new(0),
            stalls: AtomicU64::new(0),
            stopped: AtomicBool::new(false),
        });
        Ok(RecordRuntime { shared })
    }
}

/// Holds back space for the manifest (best effort: without it a full disk may leave the
/// manifest unable to say why recording stopped, nothing worse).
fn reserve_space(dir: &Path) {
    use nix::fcntl::{FallocateFlags, fallocate};
    let path = dir.join(RESERVE_FILE);
    if let Ok(file) = ppd_formats::private::create_file(&path, "reserve space")
        && fallocate(&file, FallocateFlags::empty(), 0, RESERVE_BYTES).is_err()
    {
        let _ = std::fs::remove_file(&path);
    }
}

/// Takes a place in the recording for this program, a node of it, and names the node:
/// `PPD_NODE`, else the program's name and a number (`server-1`). The first program to claim
/// `dir` records into it; every later one (another program a launcher started under the same
/// `ppd record`) into `nodes/NAME/` under it. Names are taken atomically (a marker file each),
/// so programs starting together get different ones. Returns the node's directory and name.
fn claim(dir: &Path, program: &str) -> Result<(PathBuf, String), String> {
    let node = take_node_name(dir, program)?;
    let owner = dir.join(OWNER_FILE);
    let node_dir = match ppd_formats::private::create_file(&owner, "claim the recording") {
        Ok(mut file) => {
            let _ = writeln!(file, "{}", std::process::id());
            dir.to_owned()
        }
        Err(ppd_formats::FormatError::Io { source, .. })
            if source.kind() == std::io::ErrorKind::AlreadyExists =>
        {
            let nodes = dir.join(ppd_formats::recording::NODES_DIR);
            ppd_formats::private::ensure_dir(&nodes)
                .map_err(|e| format!("cannot record into {}: {e}", dir.display()))?;
            let node_dir = nodes.join(&node);
            ppd_formats::private::ensure_dir(&node_dir)
                .map_err(|e| format!("cannot record into {}: {e}", node_dir.display()))?;
            let mut file =
                ppd_formats::private::create_file(&node_dir.join(OWNER_FILE), "claim the node")
                    .map_err(|e| format!("cannot record into {}: {e}", node_dir.display()))?;
            let _ = writeln!(file, "{}", std::process::id());
            node_dir
        }
        Err(e) => return Err(format!("cannot record into {}: {e}", dir.display())),
    };
    Ok((node_dir, node))
}

/// Directory of the markers that reserve node names.
const NAMES_DIR: &str = ".node-names";

/// A node name nobody in the recording has: `PPD_NODE` as given if free, else with `-2`,
/// `-3`, ... after it; without `PPD_NODE`, `program-1`, `program-2`, ...
fn take_node_name(dir: &Path, program: &str) -> Result<String, String> {
    let names = dir.join(NAMES_DIR);
    ppd_formats::private::ensure_dir(&names)
        .map_err(|e| format!("cannot record into {}: {e}", dir.display()))?;
    let wanted = std::env::var(env::NODE).ok().filter(|n| valid_node_name(n));
    if let Some(bad) = std::env::var(env::NODE)
        .ok()
        .filter(|n| !valid_node_name(n))
    {
        eprintln!(
            "ppd: {}={bad:?} is not a node name (letters, digits, `-`, `_` and `.`, not \
             starting with `.`); naming the node after the program",
            env::NODE
        );
    }
    let stem: String = match &wanted {
        Some(name) => name.clone(),
        None => program
            .chars()
            .map(|c| if valid_node_char(c) { c } else { '_' })
            .collect(),
    };
    for n in 1..=100_000u32 {
        let name = match (&wanted, n) {
            (Some(_), 1) => stem.clone(),
            _ => format!("{stem}-{n}"),
        };
        match ppd_formats::private::create_file(&names.join(&name), "name the node") {
            Ok(_) => return Ok(name),
            Err(ppd_formats::FormatError::Io { source, .. })
                if source.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(format!("cannot record into {}: {e}", dir.display())),
        }
    }
    Err(format!(
        "cannot record into {}: every name for a node of {stem} is taken",
        dir.display()
    ))
}

fn valid_node_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')
}

fn valid_node_name(name: &str) -> bool {
    !name.is_empty() && !name.starts_with('.') && name.chars().all(valid_node_char)
}

impl Shared {
    fn lock_manifest(&self) -> std::sync::MutexGuard<'_, Manifest> {
        self.manifest.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Rewrites the manifest, sealed with the user's key.
    fn write_manifest(&self, manifest: &Manifest) -> ppd_formats::Result<()> {
        manifest.write_sealed(&self.dir, self.options.fsync, self.key.as_ref())
    }

    /// Whether recording has stopped. A write that failed anywhere in this OS process (the
    /// compressor writes every log's frames) stops it for every process.
    ///
    /// Every process asks before it logs an event, and the flag never goes back, so the logs
    /// end at a consistent cut: a send is logged before its message becomes visible, so a
    /// receiver that logs the receive asked after the sender logged the send; a sender that
    /// found recording stopped makes its message visible only afterwards, so its receiver
    /// finds recording stopped too.
    fn recording_stopped(&self) -> bool {
        if self.stopped.load(Ordering::SeqCst) {
            return true;
        }
        match ppd_formats::first_write_failure() {
            Some(reason) => {
                self.stop(reason.to_owned());
                true
            }
            None => false,
        }
    }

    /// Stops recording for every process, once, and says why in the manifest.
    fn stop(&self, reason: String) {
        if self.stopped.swap(true, Ordering::SeqCst) {
            return;
        }
        eprintln!(
            "ppd: recording stopped: {reason}\nppd: the program runs on unrecorded; the \
             recording replays up to here"
        );
        // Give the held-back space to the manifest.
        let _ = std::fs::remove_file(self.dir.join(RESERVE_FILE));
        let mut m = self.lock_manifest();
        m.stopped = Some(RecordingStopped {
            reason,
            unix_ns: unix_nanos(),
            cut: Vec::new(),
        });
        if let Err(e) = self.write_manifest(&m) {
            eprintln!("ppd: cannot note in the manifest why recording stopped: {e}");
        }
    }

    /// Notes where a process's log ends in a stopped recording.
    fn note_cut(&self, process: ProcessId, events: u64) {
        let mut m = self.lock_manifest();
        if let Some(stopped) = &mut m.stopped {
            stopped.cut.push(CutEntry { process, events });
            stopped.cut.sort_by_key(|c| c.process);
            let _ = self.write_manifest(&m);
        }
    }

    /// Creates the log of process `id` and lists it in the manifest; `None` when recording
    /// has stopped, or stops now because the log cannot be created (a process started after
    /// the cut has no log, and the manifest does not list it).
    fn create_log(
        &self,
        id: ProcessId,
        parent: Option<ProcessId>,
        name: &str,
    ) -> Option<LogWriter> {
        if self.recording_stopped() {
            return None;
        }
        // Ids past what a recording of several OS processes can tell apart: the node records
        // no more processes (`ProcessId::NODE_SHIFT`).
        if id.0 >= 1 << ProcessId::NODE_SHIFT {
            self.stop(format!(
                "process {name} is the {}th of this OS process, more than a recording holds",
                id.0
            ));
            return None;
        }
        let path = self.dir.join(Manifest::log_name(id));
        let identity = LogIdentity {
            process_id: id,
            parent,
            name: name.to_owned(),
            os_pid: std::process::id(),
        };
        match LogWriter::create(&path, &identity, self.writer) {
            Ok(writer) => {
                self.register(id, parent, name);
                Some(writer)
            }
            Err(e) => {
                self.stop(format!("cannot record process {name} ({id}): {e}"));
                None
            }
        }
    }

    fn register(&self, id: ProcessId, parent: Option<ProcessId>, name: &str) {
        if id == ProcessId::MAIN {
            return;
        }
        let mut m = self.lock_manifest();
        m.processes.push(ProcessEntry {
            id,
            name: name.to_owned(),
            parent,
            host: self.host.clone(),
            os_pid: std::process::id(),
            log: Manifest::log_name(id),
            node: 0,
        });
        // Rewriting the whole manifest on every spawn is quadratic; past a few hundred
        // processes do it now and then — readers also find logs the manifest does not list.
        let n = self.spawned.fetch_add(1, Ordering::Relaxed) + 1;
        if n <= 256 || n.is_multiple_of(64) {
            let _ = self.write_manifest(&m);
        }
    }
}

impl Runtime for RecordRuntime {
    fn mode(&self) -> Mode {
        Mode::Record
    }

    fn allocate_process(&self) -> ProcessId {
        ProcessId(self.shared.next_pid.fetch_add(1, Ordering::Relaxed))
    }

    fn prepare_process(&self, id: ProcessId, parent: ProcessId, name: &str) {
        let shared = &self.shared;
        if let Some(writer) = shared.create_log(id, Some(parent), name) {
            shared
                .prepared
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(id, writer);
        }
    }

    fn start_process(
        &self,
        id: ProcessId,
        parent: Option<ProcessId>,
        name: &str,
    ) -> Box<dyn ProcessBackend> {
        let shared = &self.shared;
        let prepared = shared
            .prepared
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&id);
        // `main` has no parent to prepare its log; a spawned process's log is its parent's
        // doing, and a child without one runs unrecorded (recording stopped before its spawn).
        let writer = match prepared {
            Some(writer) => Some(writer),
            None if parent.is_none() => shared.create_log(id, parent, name),
            None => None,
        };
        Box::new(RecordProcess {
            shared: Arc::clone(shared),
            id,
            name: name.to_owned(),
            live: writer.as_ref().and_then(|_| halt::started(id, name)),
            writer,
        })
    }

    fn finish(&self, exit_code: i32, panicked: bool) {
        if super::FINISHED.swap(true, Ordering::AcqRel) {
            return;
        }
        let shared = &self.shared;
        // The reserve was only for a manifest written on a full disk.
        let _ = std::fs::remove_file(shared.dir.join(RESERVE_FILE));
        let mut m = shared.lock_manifest();
        m.end = Some(RunEnd {
            unix_ns: unix_nanos(),
            exit_code,
            panicked,
            events: shared.events.load(Ordering::Relaxed),
            stalls: shared.stalls.load(Ordering::Relaxed),
        });
        if let Err(e) = shared.write_manifest(&m) {
            eprintln!("ppd: cannot write the manifest: {e}");
        }
    }
}

/// One process's record backend: its log writer.
struct RecordProcess {
    shared: Arc<Shared>,
    id: ProcessId,
    name: String,
    writer: Option<LogWriter>,
    /// Under a live breakpoint: what the halting algorithm knows of this process.
    live: Option<Arc<halt::Slot>>,
}

impl RecordProcess {
    /// Ends this process's log at the cut where recording stopped.
    fn stop_logging(&mut self, append_failed: bool) {
        let Some(writer) = self.writer.take() else {
            return;
        };
        self.shared.note_cut(self.id, writer.readable_events());
        if append_failed {
            writer.abandon();
        } else {
            // Writes what it can; a log whose frames cannot be written is recovered from its
            // ring, up to the same cut.
            let _ = writer.close();
        }
    }
}

impl ProcessBackend for RecordProcess {
    fn expect(&mut self, _op: Op) -> Option<Event> {
        None
    }

    fn expect_if(&mut self, _op: Op) -> Option<Event> {
        None
    }

    fn done(&mut self, event: &Event<Borrowed<'_>>) {
        if self.writer.is_none() {
            return;
        }
        if self.shared.recording_stopped() {
            self.stop_logging(false);
            return;
        }
        let Some(writer) = &mut self.writer else {
            return;
        };
        if let Err(e) = writer.append(event) {
            self.shared.stop(format!(
                "process {} after {} events: {e}",
                self.name,
                writer.events()
            ));
            self.stop_logging(true);
            return;
        }
        if let Some(slot) = &self.live {
            halt::after_event(slot, event, writer.readable_events());
        }
    }

    fn before_live_operation(&mut self, kind: EventKind) {
        if let Some(slot) = &self.live {
            halt::before_operation(slot, kind);
        }
    }

    fn before_socket_write(&mut self, socket: ObjectId, offset: u64) {
        if let Some(slot) = &self.live {
            halt::before_socket_write(slot, socket, offset);
        }
    }

    fn pend(&mut self, access: &PendingAccess) {
        if let Some(writer) = &mut self.writer {
            writer.pend(access);
        }
    }

    fn waiting_for(&mut self, _dependency: Dependency) {}

    fn diverged(&mut self, detail: &str) {
        // A recorded run has nothing to diverge from; reaching this is a runtime bug.
        eprintln!("ppd: internal error in process {}: {detail}", self.name);
    }

    fn log_payloads(&self) -> bool {
        self.shared.options.payloads
    }

    fn finish(&mut self) {
        self.close_log();
        // Only once the log is whole: a halted state is read from it.
        if let Some(slot) = self.live.take() {
            halt::ended(&slot);
        }
    }
}

impl RecordProcess {
    /// Closes the log after the process's last event.
    fn close_log(&mut self) {
        if self.shared.recording_stopped() {
            self.stop_logging(false);
            return;
        }
        let Some(writer) = self.writer.take() else {
            return;
        };
        match writer.close() {
            Ok(stats) => {
                self.shared
                    .events
                    .fetch_add(stats.events, Ordering::Relaxed);
                self.shared
                    .stalls
                    .fetch_add(stats.stalls, Ordering::Relaxed);
                if stats.stalls > 0 {
                    eprintln!(
                        "ppd: process {} waited {} times ({:?} in all) for its log compressor",
                        self.name, stats.stalls, stats.stall_time
                    );
                }
            }
            Err(e) => eprintln!("ppd: closing the log of process {}: {e}", self.name),
        }
    }
}

impl std::fmt::Debug for RecordProcess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordProcess")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}
