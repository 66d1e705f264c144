//! Where a why-query gets its traces, indexes and logged events: in memory, from the
//! recording's cache, or by re-executing e-block instances in the recorded binary.
//!
//! Incremental tracing (Miller & Choi §5.3): an instance is re-executed only when a query
//! reaches it, the instances one step of a query needs are re-executed together in one run of
//! the binary, and every trace is kept in `cache/traces/p<process>-<enter>.json`, so the next
//! query that passes through the instance does not run anything. What the binary registered
//! (`cache/eblocks.json`, keyed by the binary's hash) is cached the same way. A process's body
//! is traced in a replay of the run (`ppd_replayer::body`) and cached as an instance
//! entered at `BODY_ENTER`; why a body could not be traced is kept too
//! (`p<process>-body.failed`, JSON), since finding out costs a replay. A cache file that does not
//! parse is a miss.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use ppd_formats::eblock_trace::{BODY_ENTER, EblockInfo, EblockTrace};
use ppd_formats::{Event, LogReader, ProcessId, Recording};
use ppd_replayer::debugger::check_binary;
use ppd_replayer::emulate::{self, Request};
use serde::{Deserialize, Serialize};

use super::index::ProcessIndex;
use crate::error::{FlowbackError, Result};

/// An e-block instance: its process and the index of its `EblockEnter` event; or a process's
/// body ([`InstanceKey::body`]), which has no such event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct InstanceKey {
    /// The process.
    pub process: ProcessId,
    /// Index of the instance's `EblockEnter` event in the process's log.
    pub enter: u64,
}

impl InstanceKey {
    /// The body of `process`: the closure its thread was spawned with, or `main`'s body.
    pub fn body(process: ProcessId) -> InstanceKey {
        InstanceKey {
            process,
            enter: BODY_ENTER,
        }
    }

    /// Whether this is a process's body rather than an e-block instance.
    pub fn is_body(&self) -> bool {
        self.enter == BODY_ENTER
    }
}

/// What the store has for an instance.
#[derive(Debug, Clone)]
pub enum Lookup {
    /// Its trace.
    Ready(Arc<EblockTrace>),
    /// Nothing yet: it must be re-executed.
    Missing,
    /// It could not be re-executed, and why.
    Failed(Arc<str>),
}

/// Counts of what a query cost.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Work {
    /// Instances re-executed.
    pub reexecuted: usize,
    /// Runs of the recorded binary.
    pub runs: usize,
    /// Traces read from the cache.
    pub from_cache: usize,
    /// Steps whose dependences were worked out: a query follows each step of its answer
    /// once at most, however deep it asks.
    pub followed: usize,
}

/// Why a process's body could not be traced, as the cache keeps it.
#[derive(Serialize, Deserialize)]
struct BodyFailure {
    process: ProcessId,
    why: String,
}

#[derive(Serialize, Deserialize)]
struct RegistryCache {
    program: String,
    eblocks: Vec<EblockInfo>,
}

/// Traces, indexes and events of one recording.
pub struct TraceStore<'r> {
    recording: &'r Recording,
    program: Option<PathBuf>,
    checked: Option<PathBuf>,
    traces: HashMap<InstanceKey, Lookup>,
    indexes: HashMap<ProcessId, Arc<ProcessIndex>>,
    readers: HashMap<ProcessId, LogReader>,
    registry: Option<Arc<Vec<EblockInfo>>>,
    /// What the query cost so far.
    pub work: Work,
}

impl std::fmt::Debug for TraceStore<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TraceStore")
            .field("recording", &self.recording.dir())
            .field("traces", &self.traces.len())
            .field("work", &self.work)
            .finish_non_exhaustive()
    }
}

impl<'r> TraceStore<'r> {
    /// A store for `recording`, re-executing with `program` (default: the recorded binary).
    pub fn new(recording: &'r Recording, program: Option<PathBuf>) -> TraceStore<'r> {
        TraceStore {
            recording,
            program,
            checked: None,
            traces: HashMap::new(),
            indexes: HashMap::new(),
            readers: HashMap::new(),
            registry: None,
            work: Work::default(),
        }
    }

    /// The recording.
    pub fn recording(&self) -> &'r Recording {
        self.recording
    }

    /// The index of a process's log.
    pub fn index(&mut self, process: ProcessId) -> Result<Arc<ProcessIndex>> {
        if let Some(index) = self.indexes.get(&process) {
            return Ok(Arc::clone(index));
        }
        let index = Arc::new(ProcessIndex::load(self.recording, process)?);
        self.indexes.insert(process, Arc::clone(&index));
        Ok(index)
    }

    /// Runs `f`, and runs it again after rebuilding a cached index in which it found damage:
    /// an index is derived from its log, so damage costs its rebuilding, never the answer.
    /// Each index is rebuilt once at most (the rebuilt one is in memory), so this ends.
    pub fn repairing<T>(&mut self, mut f: impl FnMut(&mut Self) -> Result<T>) -> Result<T> {
        loop {
            match f(self) {
                Err(FlowbackError::BadCache { path, offset }) => {
                    let damaged = self
                        .indexes
                        .iter()
                        .find(|(_, index)| index.is_mapped_from(&path))
                        .map(|(process, _)| *process);
                    let Some(process) = damaged else {
                        return Err(FlowbackError::BadCache { path, offset });
                    };
                    let rebuilt = ProcessIndex::rebuild(self.recording, process)?;
                    self.indexes.insert(process, Arc::new(rebuilt));
                }
                other => return other,
            }
        }
    }

    /// Event `k` of a process.
    pub fn event(&mut self, process: ProcessId, k: u64) -> Result<Event> {
        if !self.readers.contains_key(&process) {
            let entry = self.recording.process(process).ok_or_else(|| {
                FlowbackError::Query(format!("no process {process} in the recording"))
            })?;
            let reader = self.recording.open_log(entry)?;
            self.readers.insert(process, reader);
        }
        Ok(self.readers[&process].get(k)?)
    }

    /// What the store has for `key`, looking in the cache directory if not in memory.
    pub fn trace(&mut self, key: InstanceKey) -> Lookup {
        if let Some(found) = self.traces.get(&key) {
            return found.clone();
        }
        let cached = self
            .trace_path(key)
            .ok()
            .and_then(|path| ppd_formats::private::read_regular(&path, "read a trace").ok())
            .and_then(|bytes| serde_json::from_slice::<EblockTrace>(&bytes).ok())
            .filter(|t| t.process == key.process && t.enter == key.enter);
        match cached {
            Some(trace) => {
                self.work.from_cache += 1;
                let found = Lookup::Ready(Arc::new(trace));
                self.traces.insert(key, found.clone());
                found
            }
            // A body that could not be traced costs a replay of the run: the reason is kept.
            None if key.is_body() => match self
                .body_failure_path(key)
                .ok()
                .and_then(|path| {
                    ppd_formats::private::read_regular(&path, "read why a body was not traced").ok()
                })
                .and_then(|bytes| serde_json::from_slice::<BodyFailure>(&bytes).ok())
                .filter(|f| f.process == key.process)
            {
                Some(failure) => {
                    let found = Lookup::Failed(Arc::from(failure.why));
                    self.traces.insert(key, found.clone());
                    found
                }
                None => Lookup::Missing,
            },
            None => Lookup::Missing,
        }
    }

    /// Re-executes, in one run of the binary, every instance of `keys` the store does not
    /// have. Afterwards each is either ready or failed.
    pub fn fetch(&mut self, keys: &BTreeSet<InstanceKey>) -> Result<()> {
        let missing: Vec<InstanceKey> = keys
            .iter()
            .copied()
            .filter(|k| matches!(self.trace(*k), Lookup::Missing))
            .collect();
        let (bodies, missing): (Vec<InstanceKey>, Vec<InstanceKey>) =
            missing.into_iter().partition(InstanceKey::is_body);
        for key in bodies {
            self.trace_body(key);
        }
        if missing.is_empty() {
            return Ok(());
        }
        let response = self.run(Request {
            instances: missing.iter().map(|k| (k.process, k.enter)).collect(),
            overrides: Vec::new(),
            describe: false,
            task: None,
            output: PathBuf::new(),
        })?;
        self.work.reexecuted += response.traces.len();
        for trace in response.traces {
            let key = InstanceKey {
                process: trace.process,
                enter: trace.enter,
            };
            self.save(key, &trace);
            self.traces.insert(key, Lookup::Ready(Arc::new(trace)));
        }
        let why: Arc<str> = if response.errors.is_empty() {
            Arc::from("the re-execution gave no trace for it")
        } else {
            Arc::from(response.errors.join("; "))
        };
        for key in missing {
            self.traces
                .entry(key)
                .or_insert_with(|| Lookup::Failed(Arc::clone(&why)));
        }
        Ok(())
    }

    /// Traces the body of `key`'s process in a replay of the recording
    /// (`ppd_replayer::body`); afterwards it is ready or failed.
    fn trace_body(&mut self, key: InstanceKey) {
        let found = if self.recording.is_distributed() {
            Lookup::Failed(Arc::from(
                "a process body is traced in a replay of its OS process, which a recording of \
                 several is not replayed as yet",
            ))
        } else {
            self.work.runs += 1;
            match ppd_replayer::body::trace(self.recording, self.program.as_deref(), key.process) {
                Ok(trace) => {
                    self.work.reexecuted += 1;
                    self.save(key, &trace);
                    Lookup::Ready(Arc::new(trace))
                }
                Err(e) => {
                    let why = e.to_string();
                    // What the run is, not what this machine lacks (a program to run).
                    if let ppd_replayer::debugger::DebugError::BodyNotTraced(_) = e {
                        self.save_body_failure(key, &why);
                    }
                    Lookup::Failed(Arc::from(why))
                }
            }
        };
        self.traces.insert(key, found);
    }

    /// Re-executes one instance with some arguments replaced (MessagePack values); the trace is
    /// not cached.
    pub fn what_if(
        &mut self,
        key: InstanceKey,
        overrides: Vec<(String, Vec<u8>)>,
    ) -> Result<EblockTrace> {
        let mut response = self.run(Request {
            instances: vec![(key.process, key.enter)],
            overrides,
            describe: false,
            task: None,
            output: PathBuf::new(),
        })?;
        self.work.reexecuted += response.traces.len();
        match response.traces.pop() {
            Some(trace) => Ok(trace),
            None => Err(FlowbackError::Emulation(response.errors.join("; "))),
        }
    }

    /// The e-blocks the recorded binary has (in a recording of several OS processes, those of
    /// every node's program).
    pub fn registry(&mut self) -> Result<Arc<Vec<EblockInfo>>> {
        if let Some(registry) = &self.registry {
            return Ok(Arc::clone(registry));
        }
        // The programs of every node: what the cached registry is valid for.
        let program = self
            .recording
            .nodes()
            .iter()
            .map(|n| n.manifest.program.blake3.as_str())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect::<Vec<_>>()
            .join("+");
        let path = self.recording.cache_dir()?.join("eblocks.json");
        let cached = ppd_formats::private::read_regular(&path, "read the e-block registry")
            .ok()
            .and_then(|bytes| serde_json::from_slice::<RegistryCache>(&bytes).ok())
            .filter(|c| c.program == program && !program.is_empty());
        let eblocks = match cached {
            Some(c) => c.eblocks,
            None => {
                let response = self.run(Request {
                    instances: Vec::new(),
                    overrides: Vec::new(),
                    describe: true,
                    task: None,
                    output: PathBuf::new(),
                })?;
                let cache = RegistryCache {
                    program,
                    eblocks: response.eblocks,
                };
                if let Ok(bytes) = serde_json::to_vec(&cache) {
                    // Unwritable, it costs the next query a run of the binary.
                    let _ = ppd_formats::private::write_atomic(&path, &bytes, false);
                }
                cache.eblocks
            }
        };
        let registry = Arc::new(eblocks);
        self.registry = Some(Arc::clone(&registry));
        Ok(registry)
    }

    /// Runs `request` in the recorded binary. In a recording of several OS processes, each
    /// node's instances re-execute in that node's binary, against that node's logs and with
    /// the ids they number processes by; their traces come back numbered as the recording
    /// numbers them.
    fn run(&mut self, request: Request) -> Result<emulate::Response> {
        if !self.recording.is_distributed() {
            let binary = match &self.checked {
                Some(b) => b.clone(),
                None => {
                    let b = check_binary(self.recording, self.program.as_deref())?;
                    self.checked = Some(b.clone());
                    b
                }
            };
            self.work.runs += 1;
            return Ok(emulate::drive(self.recording, &binary, &request)?);
        }
        let mut by_node: std::collections::BTreeMap<u32, Vec<(ProcessId, u64)>> =
            std::collections::BTreeMap::new();
        for &(process, enter) in &request.instances {
            by_node
                .entry(process.node())
                .or_default()
                .push((process.local(), enter));
        }
        if request.describe {
            // Every program of the recording, once each.
            let mut seen = BTreeSet::new();
            for (k, node) in self.recording.nodes().iter().enumerate() {
                if seen.insert(node.manifest.program.blake3.clone()) {
                    by_node.entry(k as u32).or_default();
                }
            }
        }
        let mut merged = emulate::Response {
            traces: Vec::new(),
            errors: Vec::new(),
            eblocks: Vec::new(),
        };
        for (node, instances) in by_node {
            let Some(node) = self.recording.nodes().get(node as usize) else {
                merged
                    .errors
                    .push(format!("no node {node} in the recording"));
                continue;
            };
            let recording = Recording::open_node(&node.dir)?;
            let binary = check_binary(&recording, None)?;
            self.work.runs += 1;
            let response = emulate::drive(
                &recording,
                &binary,
                &Request {
                    instances,
                    ..request.clone()
                },
            )?;
            for mut trace in response.traces {
                trace.rebase(node.base);
                merged.traces.push(trace);
            }
            merged.errors.extend(
                response
                    .errors
                    .into_iter()
                    .map(|e| format!("node {}: {e}", node.name)),
            );
            for info in response.eblocks {
                if !merged.eblocks.contains(&info) {
                    merged.eblocks.push(info);
                }
            }
        }
        Ok(merged)
    }

    fn trace_path(&self, key: InstanceKey) -> Result<PathBuf> {
        let dir = self.recording.cache_dir()?.join("traces");
        Ok(dir.join(format!("p{:04}-{:012}.json", key.process.0, key.enter)))
    }

    fn body_failure_path(&self, key: InstanceKey) -> Result<PathBuf> {
        let dir = self.recording.cache_dir()?.join("traces");
        Ok(dir.join(format!("p{:04}-body.failed", key.process.0)))
    }

    /// Caches why a body could not be traced.
    fn save_body_failure(&self, key: InstanceKey, why: &str) {
        let failure = BodyFailure {
            process: key.process,
            why: why.to_owned(),
        };
        write_cache(self.body_failure_path(key), &failure);
    }

    /// Caches a trace.
    fn save(&self, key: InstanceKey, trace: &EblockTrace) {
        write_cache(self.trace_path(key), trace);
    }
}

/// Writes `value` as JSON to the cache file at `path`. Unwritable, it costs a later query the
/// run that made it.
fn write_cache(path: Result<PathBuf>, value: &impl Serialize) {
    let Ok(path) = path else {
        return;
    };
    if let Some(dir) = path.parent()
        && create_private_dir(dir).is_err()
    {
        return;
    }
    if let Ok(bytes) = serde_json::to_vec(value) {
        let _ = ppd_formats::private::write_atomic(&path, &bytes, false);
    }
}

/// Creates a directory of the cache, private (0700) like the recording, refusing a link.
pub(super) fn create_private_dir(dir: &Path) -> Result<()> {
    Ok(ppd_formats::private::ensure_dir(dir)?)
}
