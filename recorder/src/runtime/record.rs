//! Record mode: every logical process appends what it does to its own log.
//!
//! What is logged is what control-driven replay needs and no more: the communication history
//! (which message each receive got, Manabe & Imase §2.2), the version of every lock, semaphore
//! and atomic access (instant replay), clock and random values, sends (for happened-before),
//! spawns, joins, exits and panics. Payloads only when asked for or inside e-blocks.

use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use ppd_formats::manifest::{Manifest, ProcessEntry, Program, RecordOptions, RunEnd};
use ppd_formats::{
    Borrowed, Event, FORMAT_VERSION, LogIdentity, LogWriter, ProcessId, WriterOptions,
};

use super::backend::{Dependency, Mode, Op, ProcessBackend, Runtime};
use super::env;

/// Name of the file that marks a recording directory as taken by one program.
const OWNER_FILE: &str = ".owner";

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
    events: AtomicU64,
    stalls: AtomicU64,
    failed: AtomicBool,
    hasher: Mutex<Option<std::thread::JoinHandle<()>>>,
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

    /// Builds a record runtime writing into `dir`.
    pub fn new(
        dir: &Path,
        options: RecordOptions,
        writer: WriterOptions,
    ) -> Result<RecordRuntime, String> {
        claim(dir)?;
        let exe =
            std::env::current_exe().map_err(|e| format!("cannot find own executable: {e}"))?;
        let size = std::fs::metadata(&exe).map(|m| m.len()).unwrap_or(0);
        let host = nix::unistd::gethostname()
            .map(|h| h.to_string_lossy().into_owned())
            .unwrap_or_else(|_| "localhost".into());
        let start = unix_nanos();
        let os_pid = std::process::id();
        let manifest = Manifest {
            format_version: FORMAT_VERSION,
            program: Program {
                path: exe.clone(),
                size,
                blake3: String::new(),
            },
            argv: std::env::args_os()
                .map(|a| a.to_string_lossy().into_owned())
                .collect(),
            cwd: std::env::current_dir().unwrap_or_default(),
            host: host.clone(),
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
            }],
            end: None,
            stopped: None,
        };
        manifest
            .write(dir, options.fsync)
            .map_err(|e| e.to_string())?;
        let shared = Arc::new(Shared {
            dir: dir.to_owned(),
            options,
            writer,
            host,
            next_pid: AtomicU32::new(1),
            spawned: AtomicU32::new(0),
            manifest: Mutex::new(manifest),
            events: AtomicU64::new(0),
            stalls: AtomicU64::new(0),
            failed: AtomicBool::new(false),
            hasher: Mutex::new(None),
        });
        // Hash the binary off the program's path; the manifest gets the hash when it is ready.
        let for_hasher = Arc::clone(&shared);
        let hasher = std::thread::Builder::new()
            .name("ppd-hash".into())
            .spawn(move || {
                let hash = hash_file(&exe);
                let mut m = for_hasher.lock_manifest();
                m.program.blake3 = hash;
                let _ = m.write(&for_hasher.dir, false);
            })
            .map_err(|e| format!("cannot start hashing thread: {e}"))?;
        *shared.hasher.lock().unwrap_or_else(|p| p.into_inner()) = Some(hasher);
        Ok(RecordRuntime { shared })
    }
}

/// Hashes a file with BLAKE3, hex-encoded; an unreadable file hashes to the empty string,
/// which replay then refuses to trust.
pub fn hash_file(path: &Path) -> String {
    let mut hasher = blake3::Hasher::new();
    match hasher.update_mmap(path) {
        Ok(_) => hasher.finalize().to_hex().to_string(),
        Err(_) => String::new(),
    }
}

/// Takes the recording directory for this program; a second program started with the same
/// environment (a ppd program spawning another) is refused rather than mixed in.
fn claim(dir: &Path) -> Result<(), String> {
    let owner = dir.join(OWNER_FILE);
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&owner)
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::AlreadyExists => format!(
                "{} is already being recorded into by another program",
                dir.display()
            ),
            _ => format!("cannot record into {}: {e}", dir.display()),
        })?;
    let _ = writeln!(file, "{}", std::process::id());
    Ok(())
}

impl Shared {
    fn lock_manifest(&self) -> std::sync::MutexGuard<'_, Manifest> {
        self.manifest.lock().unwrap_or_else(|p| p.into_inner())
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
        });
        // Rewriting the whole manifest on every spawn is quadratic; past a few hundred
        // processes do it now and then — readers also find logs the manifest does not list.
        let n = self.spawned.fetch_add(1, Ordering::Relaxed) + 1;
        if n <= 256 || n.is_multiple_of(64) {
            let _ = m.write(&self.dir, self.options.fsync);
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

    fn start_process(
        &self,
        id: ProcessId,
        parent: Option<ProcessId>,
        name: &str,
    ) -> Box<dyn ProcessBackend> {
        let shared = &self.shared;
        shared.register(id, parent, name);
        let path = shared.dir.join(Manifest::log_name(id));
        let identity = LogIdentity {
            process_id: id,
            parent,
            name: name.to_owned(),
            os_pid: std::process::id(),
        };
        let writer = match LogWriter::create(&path, &identity, shared.writer) {
            Ok(w) => Some(w),
            Err(e) => {
                eprintln!("ppd: cannot record process {name} ({id}): {e}");
                shared.failed.store(true, Ordering::Relaxed);
                None
            }
        };
        Box::new(RecordProcess {
            shared: Arc::clone(shared),
            name: name.to_owned(),
            writer,
        })
    }

    fn finish(&self, exit_code: i32, panicked: bool) {
        if super::FINISHED.swap(true, Ordering::AcqRel) {
            return;
        }
        let shared = &self.shared;
        let hasher = shared
            .hasher
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(h) = hasher {
            let _ = h.join();
        }
        let mut m = shared.lock_manifest();
        m.end = Some(RunEnd {
            unix_ns: unix_nanos(),
            exit_code,
            panicked,
            events: shared.events.load(Ordering::Relaxed),
            stalls: shared.stalls.load(Ordering::Relaxed),
        });
        if let Err(e) = m.write(&shared.dir, shared.options.fsync) {
            eprintln!("ppd: cannot write the manifest: {e}");
        }
    }
}

/// One process's record backend: its log writer.
struct RecordProcess {
    shared: Arc<Shared>,
    name: String,
    writer: Option<LogWriter>,
}

impl ProcessBackend for RecordProcess {
    fn expect(&mut self, _op: Op) -> Option<Event> {
        None
    }

    fn expect_if(&mut self, _op: Op) -> Option<Event> {
        None
    }

    fn done(&mut self, event: &Event<Borrowed<'_>>) {
        let Some(writer) = &mut self.writer else {
            return;
        };
        if let Err(e) = writer.append(event) {
            // Loud, once: the log keeps everything before this event.
            eprintln!(
                "ppd: recording of process {} stopped after {} events: {e}",
                self.name,
                writer.events()
            );
            self.shared.failed.store(true, Ordering::Relaxed);
            self.writer = None;
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
