//! The per-process index a why-query searches: every e-block instance (its interval in the
//! log, its name, the instance it is nested in), every send made inside one, and which
//! top-level instances changed which part of the arguments they log on exit (`changes.rs`).
//! The e-blocks `ppd::task` wraps each task's computation in are left out, as if absent: no
//! tracing twin exists for them (`ppd analyze tasks --rerun` re-executes them instead).
//!
//! Built by one pass over a process's log and cached in `cache/why/p<id>.idx`. A query reads
//! the cache memory-mapped and touches only what its binary searches visit, so a warm query
//! costs the same on a recording ten times longer: the file is checked in two steps, the
//! header and the small tables when it is opened, each chunk of 1024 entries (compressed with
//! zstd, with its own checksum) when a search first reads it. Compressed, the index stays a
//! fraction of the log it indexes. A cache that is stale or whose header or tables are damaged
//! is rebuilt; damage found later in a chunk or the change histories is an error naming the
//! file and offset, on which the query rebuilds the index and starts again
//! ([`TraceStore::repairing`](super::store::TraceStore::repairing)).
//!
//! Layout (integers little-endian, checksums crc32c):
//!
//! ```text
//! header, 64 bytes:
//!   0  magic "PPDWHYIX"          8  version u32          12  reserved u32 (0)
//!   16 log size u64              24 log mtime ns u64     32  events in the log u64
//!   40 instances u64             48 sends u64            56  tables length u32
//!   60 crc of bytes 0..60 u32
//! tables (tables length bytes):
//!   names: count u32, then per name: length u32, UTF-8
//!   per chunk of instances: first entry's enter u64, stored length u32, crc of the stored
//!     chunk u32
//!   per chunk of sends: first entry's channel u64 and seq u64, stored length u32, crc u32
//!   crc of the tables so far u32
//! the chunks of instances, then of sends, each up to 1024 entries compressed with zstd:
//! instances, 24 bytes each, by enter: enter u64, exit u64 (u64::MAX: never exited),
//!   name u32 (index into the names), parent u32 (index of the enclosing instance; u32::MAX: top
//!   level)
//! sends inside instances, 24 bytes each, by (channel, seq): channel u64, seq u64, event u64
//! change histories, to the end of the file, checked as a whole when a query first needs them:
//!   parameters u32, then per parameter: name (u32 length + UTF-8), holders u32, places u32,
//!     per place: text (u32 length + UTF-8), changes u32
//!   then per parameter its holders [u32] (instance indexes, ascending) and per place its
//!     changes [u32] (positions among the holders, ascending)
//!   crc of the section so far u32
//! ```

use std::fs;
use std::path::{Path, PathBuf};

use std::sync::{Arc, Mutex, OnceLock};

use memmap2::Mmap;
use ppd_formats::{Event, ObjectId, ProcessId, Recording};

use super::changes::{ChangeLog, Changes};
use super::place::Place;
use crate::error::{FlowbackError, Result};

const MAGIC: &[u8; 8] = b"PPDWHYIX";
const VERSION: u32 = 4;
const HEADER: usize = 64;
const ENTRY: usize = 24;
const CHUNK: usize = 1024;

/// One e-block instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Instance {
    /// Index of its `EblockEnter` event.
    pub enter: u64,
    /// Index of its `EblockExit` event; `u64::MAX` if it never exited.
    pub exit: u64,
    /// Its e-block, as an index into [`ProcessIndex::names`].
    pub name: u32,
    /// The instance it is nested in, as an index into the instances; `u32::MAX` at top level.
    pub parent: u32,
}

impl Instance {
    /// Whether it is not nested in another instance.
    pub fn is_top_level(&self) -> bool {
        self.parent == u32::MAX
    }
}

/// A send made inside an instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct SendAt {
    channel: u64,
    seq: u64,
    event: u64,
}

/// The bytes of an index: the mapped cache file, or built in memory when it cannot be cached.
#[derive(Debug)]
enum Bytes {
    Mapped(Mmap),
    Owned(Vec<u8>),
}

impl std::ops::Deref for Bytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            Bytes::Mapped(m) => m,
            Bytes::Owned(v) => v,
        }
    }
}

/// How many decompressed chunks an index keeps: a search reads one chunk many times.
const RECENT_CHUNKS: usize = 4;

/// Where a compressed chunk is in the file, and its checksum.
#[derive(Debug, Clone, Copy)]
struct ChunkAt {
    at: usize,
    len: usize,
    crc: u32,
}

/// Everything a query needs to know about one process's log.
#[derive(Debug)]
pub struct ProcessIndex {
    path: PathBuf,
    bytes: Bytes,
    /// Size and modification time of the log it was built from.
    pub fingerprint: (u64, u64),
    /// Events in the log.
    pub events: u64,
    names: Vec<String>,
    instances: usize,
    sends: usize,
    instance_chunks: Vec<(u64, ChunkAt)>,
    send_chunks: Vec<((u64, u64), ChunkAt)>,
    /// Chunks decompressed last (instance chunks by number, send chunks after them).
    recent: Mutex<Vec<(usize, Arc<[u8]>)>>,
    /// Where the change histories start, and the histories once a query first needs them.
    changes_at: usize,
    changes: OnceLock<std::result::Result<Changes, usize>>,
}

fn fingerprint(path: &Path) -> Result<(u64, u64)> {
    let meta = fs::metadata(path).map_err(|e| FlowbackError::io(path, "stat log", e))?;
    let mtime = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos() as u64);
    Ok((meta.len(), mtime))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// What one pass over a log finds.
struct Scan {
    fingerprint: (u64, u64),
    events: u64,
    names: Vec<String>,
    instances: Vec<Instance>,
    sends: Vec<SendAt>,
    changes: ChangeLog,
}

fn scan(recording: &Recording, process: ProcessId) -> Result<(PathBuf, Scan)> {
    let entry = recording
        .process(process)
        .ok_or_else(|| FlowbackError::Query(format!("no process {process} in the recording")))?;
    let log = recording.log_path(entry);
    let reader = recording.open_log(entry)?;
    let mut found = Scan {
        fingerprint: fingerprint(&log)?,
        events: reader.event_count(),
        names: Vec::new(),
        instances: Vec::new(),
        sends: Vec::new(),
        changes: ChangeLog::default(),
    };
    let mut open: Vec<u32> = Vec::new();
    // The prelog of the open top-level instance.
    let mut top_prelog: Box<[u8]> = Box::default();
    // Open task computations (`ppd::task`'s e-blocks, which no `#[ppd::eblock]` registers):
    // transparent, so that what the work calls is indexed as it would be without them. Each
    // is the number of instances open when it entered.
    let mut transparent: Vec<usize> = Vec::new();
    for item in reader.events() {
        let (k, event) = item?;
        match event {
            Event::EblockEnter { eblock, .. } if ppd_formats::task::is_computation(&eblock) => {
                transparent.push(open.len());
            }
            Event::EblockExit { .. } if transparent.last() == Some(&open.len()) => {
                transparent.pop();
            }
            Event::EblockEnter { eblock, prelog, .. } => {
                if open.is_empty() {
                    top_prelog = prelog;
                }
                let name = match found.names.iter().position(|n| **n == *eblock) {
                    Some(i) => i as u32,
                    None => {
                        found.names.push(eblock.to_string());
                        (found.names.len() - 1) as u32
                    }
                };
                open.push(found.instances.len() as u32);
                found.instances.push(Instance {
                    enter: k,
                    exit: u64::MAX,
                    name,
                    parent: open.iter().rev().nth(1).copied().unwrap_or(u32::MAX),
                });
            }
            Event::EblockExit { postlog, .. } => {
                if let Some(i) = open.pop() {
                    found.instances[i as usize].exit = k;
                    if open.is_empty() {
                        found.changes.exited(i, &top_prelog, &postlog);
                    }
                }
            }
            // A socket write (a datagram's send) is message `seq` of its socket, as its reader's
            // pairing names it.
            Event::Send { channel, seq, .. }
            | Event::NetWrite {
                socket: channel,
                seq,
                ..
            }
            | Event::NetSendTo {
                socket: channel,
                seq,
                ..
            } if !open.is_empty() => {
                found.sends.push(SendAt {
                    channel: channel.0,
                    seq,
                    event: k,
                });
            }
            // Nothing else defines an instance or a message.
            _ => {}
        }
    }
    found.sends.sort_by_key(|s| (s.channel, s.seq));
    Ok((log, found))
}

/// Fixed-size entries, compressed a chunk at a time.
fn compressed_chunks(entries: usize, entry: impl Fn(usize, &mut Vec<u8>)) -> Vec<Vec<u8>> {
    (0..entries.div_ceil(CHUNK))
        .map(|c| {
            let mut raw = Vec::with_capacity(CHUNK * ENTRY);
            for i in c * CHUNK..((c + 1) * CHUNK).min(entries) {
                entry(i, &mut raw);
            }
            // Compressing a buffer in memory fails only on allocation failure.
            zstd::bulk::compress(&raw, 3).unwrap_or_default()
        })
        .collect()
}

fn encode(scan: &Scan) -> Vec<u8> {
    let mut tables = Vec::new();
    tables.extend_from_slice(&(scan.names.len() as u32).to_le_bytes());
    for name in &scan.names {
        tables.extend_from_slice(&(name.len() as u32).to_le_bytes());
        tables.extend_from_slice(name.as_bytes());
    }
    let instances = compressed_chunks(scan.instances.len(), |i, out| {
        let x = &scan.instances[i];
        out.extend_from_slice(&x.enter.to_le_bytes());
        out.extend_from_slice(&x.exit.to_le_bytes());
        out.extend_from_slice(&x.name.to_le_bytes());
        out.extend_from_slice(&x.parent.to_le_bytes());
    });
    let sends = compressed_chunks(scan.sends.len(), |i, out| {
        let s = &scan.sends[i];
        out.extend_from_slice(&s.channel.to_le_bytes());
        out.extend_from_slice(&s.seq.to_le_bytes());
        out.extend_from_slice(&s.event.to_le_bytes());
    });
    for (c, bytes) in instances.iter().enumerate() {
        tables.extend_from_slice(&scan.instances[c * CHUNK].enter.to_le_bytes());
        tables.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
        tables.extend_from_slice(&crc32c::crc32c(bytes).to_le_bytes());
    }
    for (c, bytes) in sends.iter().enumerate() {
        tables.extend_from_slice(&scan.sends[c * CHUNK].channel.to_le_bytes());
        tables.extend_from_slice(&scan.sends[c * CHUNK].seq.to_le_bytes());
        tables.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
        tables.extend_from_slice(&crc32c::crc32c(bytes).to_le_bytes());
    }
    let crc = crc32c::crc32c(&tables);
    tables.extend_from_slice(&crc.to_le_bytes());

    let mut out = Vec::new();
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    out.extend_from_slice(&scan.fingerprint.0.to_le_bytes());
    out.extend_from_slice(&scan.fingerprint.1.to_le_bytes());
    out.extend_from_slice(&scan.events.to_le_bytes());
    out.extend_from_slice(&(scan.instances.len() as u64).to_le_bytes());
    out.extend_from_slice(&(scan.sends.len() as u64).to_le_bytes());
    out.extend_from_slice(&(tables.len() as u32).to_le_bytes());
    let crc = crc32c::crc32c(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out.extend_from_slice(&tables);
    for chunk in instances.iter().chain(&sends) {
        out.extend_from_slice(chunk);
    }
    out.extend_from_slice(&scan.changes.encode());
    out
}

impl ProcessIndex {
    /// Reads the log of `process` and indexes it, in memory.
    pub fn build(recording: &Recording, process: ProcessId) -> Result<ProcessIndex> {
        let (log, found) = scan(recording, process)?;
        ProcessIndex::parse(log, Bytes::Owned(encode(&found)))
            .map_err(|detail| FlowbackError::Query(format!("indexing {process}: {detail}")))
    }

    /// The index of `process`, from the cache when it is fresh, else built and cached.
    pub fn load(recording: &Recording, process: ProcessId) -> Result<ProcessIndex> {
        let entry = recording.process(process).ok_or_else(|| {
            FlowbackError::Query(format!("no process {process} in the recording"))
        })?;
        let wanted = fingerprint(&recording.log_path(entry))?;
        let path = cache_path(recording, process)?;
        let cached = ppd_formats::private::open_regular(&path, "read the why index")
            .ok()
            // SAFETY: the map is read through bounds-checked slices only, and the file is
            // replaced by rename, never written in place, so its pages do not change under us.
            .and_then(|f| unsafe { Mmap::map(&f) }.ok())
            .and_then(|m| ProcessIndex::parse(path.clone(), Bytes::Mapped(m)).ok())
            .filter(|i| i.fingerprint == wanted);
        if let Some(index) = cached {
            return Ok(index);
        }
        ProcessIndex::rebuild(recording, process)
    }

    /// The index of `process` built from its log, replacing the cached one.
    pub fn rebuild(recording: &Recording, process: ProcessId) -> Result<ProcessIndex> {
        let path = cache_path(recording, process)?;
        let (log, found) = scan(recording, process)?;
        let bytes = encode(&found);
        // Unwritable, it costs the next query this scan again.
        let _ = ppd_formats::private::write_atomic(&path, &bytes, false);
        ProcessIndex::parse(log, Bytes::Owned(bytes))
            .map_err(|detail| FlowbackError::Query(format!("indexing {process}: {detail}")))
    }

    /// Whether this index is the cache file at `path`, read as it is on disk: the one a
    /// rebuild can replace when damage is found in it.
    pub fn is_mapped_from(&self, path: &Path) -> bool {
        matches!(self.bytes, Bytes::Mapped(_)) && self.path == path
    }

    /// Checks the header and the tables; the chunks are checked when first read.
    fn parse(path: PathBuf, bytes: Bytes) -> std::result::Result<ProcessIndex, String> {
        let b: &[u8] = &bytes;
        if b.len() < HEADER || &b[..8] != MAGIC {
            return Err("not an index".into());
        }
        let field = |at| u64_at(b, at).ok_or("short header");
        if u32_at(b, 8) != Some(VERSION) {
            return Err("another version".into());
        }
        if u32_at(b, 60) != Some(crc32c::crc32c(&b[..60])) {
            return Err("header checksum".into());
        }
        let fingerprint = (field(16)?, field(24)?);
        let events = field(32)?;
        let instances = usize::try_from(field(40)?).map_err(|_| "size")?;
        let sends = usize::try_from(field(48)?).map_err(|_| "size")?;
        let tables_len = u32_at(b, 56).ok_or("short header")? as usize;
        let tables = b.get(HEADER..HEADER + tables_len).ok_or("short tables")?;
        let (body, crc) = tables.split_at(tables_len.checked_sub(4).ok_or("short tables")?);
        if u32_at(crc, 0) != Some(crc32c::crc32c(body)) {
            return Err("tables checksum".into());
        }
        let mut at = 0;
        let count = u32_at(body, at).ok_or("short names")?;
        at += 4;
        let mut names = Vec::new();
        for _ in 0..count {
            let len = u32_at(body, at).ok_or("short names")? as usize;
            let text = body.get(at + 4..at + 4 + len).ok_or("short names")?;
            names.push(String::from_utf8(text.to_vec()).map_err(|_| "a name is not UTF-8")?);
            at += 4 + len;
        }
        let chunks = |n: usize| n.div_ceil(CHUNK);
        let mut next = HEADER + tables_len;
        let mut chunk_at = |len: u32, crc: u32| -> std::result::Result<ChunkAt, String> {
            let chunk = ChunkAt {
                at: next,
                len: len as usize,
                crc,
            };
            next = next
                .checked_add(len as usize)
                .filter(|end| *end <= b.len())
                .ok_or("chunks past the end of the file")?;
            Ok(chunk)
        };
        let mut instance_chunks = Vec::with_capacity(chunks(instances));
        for _ in 0..chunks(instances) {
            let first = u64_at(body, at).ok_or("short chunk table")?;
            let len = u32_at(body, at + 8).ok_or("short chunk table")?;
            let crc = u32_at(body, at + 12).ok_or("short chunk table")?;
            instance_chunks.push((first, chunk_at(len, crc)?));
            at += 16;
        }
        let mut send_chunks = Vec::with_capacity(chunks(sends));
        for _ in 0..chunks(sends) {
            let channel = u64_at(body, at).ok_or("short chunk table")?;
            let seq = u64_at(body, at + 8).ok_or("short chunk table")?;
            let len = u32_at(body, at + 16).ok_or("short chunk table")?;
            let crc = u32_at(body, at + 20).ok_or("short chunk table")?;
            send_chunks.push(((channel, seq), chunk_at(len, crc)?));
            at += 24;
        }
        if at != body.len() {
            return Err("tables longer than their contents".into());
        }
        Ok(ProcessIndex {
            path,
            bytes,
            fingerprint,
            events,
            names,
            instances,
            sends,
            instance_chunks,
            send_chunks,
            recent: Mutex::new(Vec::new()),
            changes_at: next,
            changes: OnceLock::new(),
        })
    }

    /// The entries of chunk `slot` (`count` of them), decompressed and checked against its
    /// checksum; damage is an error naming the file and the chunk's offset.
    fn chunk(&self, slot: usize, chunk: ChunkAt, count: usize) -> Result<Arc<[u8]>> {
        let mut recent = self.recent.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = recent.iter().position(|(s, _)| *s == slot) {
            let hit = recent.remove(i);
            let bytes = Arc::clone(&hit.1);
            recent.insert(0, hit);
            return Ok(bytes);
        }
        let stored = &self.bytes[chunk.at..chunk.at + chunk.len];
        if crc32c::crc32c(stored) != chunk.crc {
            return Err(self.damaged(chunk.at));
        }
        let raw = zstd::bulk::decompress(stored, count * ENTRY)
            .ok()
            .filter(|raw| raw.len() == count * ENTRY)
            .ok_or_else(|| self.damaged(chunk.at))?;
        let raw: Arc<[u8]> = raw.into();
        recent.truncate(RECENT_CHUNKS - 1);
        recent.insert(0, (slot, Arc::clone(&raw)));
        Ok(raw)
    }

    fn damaged(&self, offset: usize) -> FlowbackError {
        FlowbackError::BadCache {
            path: self.path.clone(),
            offset: offset as u64,
        }
    }

    /// The names of the e-blocks the process entered.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// How many instances the process ran.
    pub fn len(&self) -> usize {
        self.instances
    }

    /// Whether the process ran no e-block.
    pub fn is_empty(&self) -> bool {
        self.instances == 0
    }

    /// Instance `i` (in order of entry).
    pub fn instance(&self, i: usize) -> Result<Instance> {
        let c = i / CHUNK;
        let (_, chunk) = self.instance_chunks[c];
        let count = CHUNK.min(self.instances - c * CHUNK);
        let bytes = self.chunk(c, chunk, count)?;
        let at = (i % CHUNK) * ENTRY;
        let field = |o| u64_at(&bytes, at + o).unwrap_or_default();
        Ok(Instance {
            enter: field(0),
            exit: field(8),
            name: u32_at(&bytes, at + 16).unwrap_or_default(),
            parent: u32_at(&bytes, at + 20).unwrap_or_default(),
        })
    }

    fn send_at(&self, i: usize) -> Result<SendAt> {
        let c = i / CHUNK;
        let (_, chunk) = self.send_chunks[c];
        let count = CHUNK.min(self.sends - c * CHUNK);
        let bytes = self.chunk(self.instance_chunks.len() + c, chunk, count)?;
        let at = (i % CHUNK) * ENTRY;
        let field = |o| u64_at(&bytes, at + o).unwrap_or_default();
        Ok(SendAt {
            channel: field(0),
            seq: field(8),
            event: field(16),
        })
    }

    /// The name of an instance's e-block.
    pub fn name(&self, instance: &Instance) -> &str {
        self.names
            .get(instance.name as usize)
            .map_or("?", String::as_str)
    }

    /// How many instances entered before event `k`: the first chunk whose first entry is not
    /// before `k` bounds the search to one chunk.
    pub fn entered_before(&self, k: u64) -> Result<usize> {
        let c = self
            .instance_chunks
            .partition_point(|(first, _)| *first < k);
        let Some(c) = c.checked_sub(1) else {
            return Ok(0);
        };
        let (mut lo, mut hi) = (c * CHUNK, ((c + 1) * CHUNK).min(self.instances));
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.instance(mid)?.enter < k {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        Ok(lo)
    }

    /// The instance entered at event `enter`.
    pub fn instance_at(&self, enter: u64) -> Result<Option<(usize, Instance)>> {
        let i = self.entered_before(enter)?;
        if i < self.instances {
            let x = self.instance(i)?;
            if x.enter == enter {
                return Ok(Some((i, x)));
            }
        }
        Ok(None)
    }

    /// The innermost instance whose interval contains event `k`.
    pub fn innermost_containing(&self, k: u64) -> Result<Option<(usize, Instance)>> {
        let Some(mut i) = self.entered_before(k + 1)?.checked_sub(1) else {
            return Ok(None);
        };
        // Intervals nest: walking out from the last instance entered by k, the first one still
        // open at k is the innermost.
        loop {
            let instance = self.instance(i)?;
            if instance.exit >= k {
                return Ok(Some((i, instance)));
            }
            if instance.is_top_level() {
                // An earlier top-level instance exited before this one entered.
                return Ok(None);
            }
            i = instance.parent as usize;
        }
    }

    /// The send of message `seq` on `channel`, if an instance made it.
    pub fn send(&self, channel: ObjectId, seq: u64) -> Result<Option<u64>> {
        let key = (channel.0, seq);
        let c = self.send_chunks.partition_point(|(first, _)| *first <= key);
        let Some(c) = c.checked_sub(1) else {
            return Ok(None);
        };
        let (mut lo, mut hi) = (c * CHUNK, ((c + 1) * CHUNK).min(self.sends));
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let s = self.send_at(mid)?;
            match (s.channel, s.seq).cmp(&key) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Ok(Some(s.event)),
            }
        }
        Ok(None)
    }

    /// The instances entered before index `end`, latest first.
    pub fn before(&self, end: usize) -> impl Iterator<Item = Result<(usize, Instance)>> + '_ {
        (0..end.min(self.instances))
            .rev()
            .map(|i| self.instance(i).map(|x| (i, x)))
    }

    /// The top-level instances that exited before `enter` and logged `place.root` on exit,
    /// latest first, skipping those after which `place` cannot have changed: the latest one,
    /// then each inside or after which a part overlapping `place` changed. A why-query that
    /// looks for the instance that left a parameter its value reads only these.
    pub fn state_sources(
        &self,
        enter: u64,
        place: &Place,
    ) -> impl Iterator<Item = Result<Instance>> + '_ {
        let found = self.entered_before(enter).and_then(|before| {
            let changes = self
                .changes
                .get_or_init(|| Changes::parse(&self.bytes, self.changes_at))
                .as_ref()
                .map_err(|&offset| self.damaged(offset))?;
            Ok(changes.sources(&self.bytes, before, place))
        });
        let (sources, first_error) = match found {
            Ok(sources) => (Some(sources), None),
            Err(e) => (None, Some(Err(e))),
        };
        first_error.into_iter().chain(
            sources
                .into_iter()
                .flatten()
                .map(|i| self.instance(i))
                .filter(move |r| r.as_ref().map_or(true, |x| x.exit < enter)),
        )
    }
}

fn cache_path(recording: &Recording, process: ProcessId) -> Result<PathBuf> {
    let dir = recording.cache_dir()?.join("why");
    super::store::create_private_dir(&dir)?;
    Ok(dir.join(format!("p{:04}.idx", process.0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan_of(instances: &[(u64, u64, u32)], sends: &[(u64, u64, u64)]) -> Scan {
        Scan {
            fingerprint: (1, 2),
            events: 10_000_000,
            names: vec!["a::outer".into(), "a::inner".into()],
            instances: instances
                .iter()
                .map(|&(enter, exit, parent)| Instance {
                    enter,
                    exit,
                    name: u32::from(parent != u32::MAX),
                    parent,
                })
                .collect(),
            sends: sends
                .iter()
                .map(|&(channel, seq, event)| SendAt {
                    channel,
                    seq,
                    event,
                })
                .collect(),
            changes: ChangeLog::default(),
        }
    }

    fn index(scan: &Scan) -> ProcessIndex {
        ProcessIndex::parse(PathBuf::from("test.idx"), Bytes::Owned(encode(scan))).unwrap()
    }

    #[test]
    fn searches_find_instances_and_sends_across_chunks() {
        // 3000 top-level instances of 10 events, each with a nested one: chunks of 1024.
        let mut instances = Vec::new();
        let mut sends = Vec::new();
        for n in 0..3000u64 {
            let outer = instances.len() as u32;
            instances.push((n * 10, n * 10 + 9, u32::MAX));
            instances.push((n * 10 + 2, n * 10 + 5, outer));
            sends.push((7, n + 1, n * 10 + 3));
        }
        let index = index(&scan_of(&instances, &sends));
        assert_eq!(index.len(), 6000);
        assert_eq!(index.names(), ["a::outer", "a::inner"]);
        let (i, x) = index.instance_at(21_002).unwrap().unwrap();
        assert_eq!((i, x.exit, index.name(&x)), (4201, 21_005, "a::inner"));
        assert_eq!(index.instance_at(21_001).unwrap(), None);
        let (_, inner) = index.innermost_containing(21_004).unwrap().unwrap();
        assert_eq!(inner.enter, 21_002);
        let (_, outer) = index.innermost_containing(21_007).unwrap().unwrap();
        assert_eq!(outer.enter, 21_000);
        assert_eq!(index.send(ObjectId(7), 2101).unwrap(), Some(21_003));
        assert_eq!(index.send(ObjectId(7), 9999).unwrap(), None);
        assert_eq!(index.send(ObjectId(8), 1).unwrap(), None);
        assert_eq!(index.entered_before(0).unwrap(), 0);
        assert_eq!(index.entered_before(u64::MAX).unwrap(), 6000);
    }

    #[test]
    fn damage_is_found_where_it_is_read() {
        let instances: Vec<_> = (0..3000u64).map(|n| (n * 2, n * 2 + 1, u32::MAX)).collect();
        let bytes = encode(&scan_of(&instances, &[]));
        let third = index(&scan_of(&instances, &[])).instance_chunks[2].1.at;
        // A flipped bit in the third chunk of instances.
        let mut damaged = bytes.clone();
        damaged[third + 5] ^= 1;
        let index = ProcessIndex::parse(PathBuf::from("x.idx"), Bytes::Owned(damaged)).unwrap();
        assert!(
            index.instance_at(10).unwrap().is_some(),
            "the first chunk is whole"
        );
        let err = index.instance_at(4_100).unwrap_err().to_string();
        assert!(
            err.contains("x.idx") && err.contains(&format!("{third}")),
            "{err}"
        );
        // Damage in the header or the tables makes the whole file a miss.
        for at in [3, 20, HEADER + 2] {
            let mut b = bytes.clone();
            b[at] ^= 1;
            assert!(
                ProcessIndex::parse(PathBuf::from("x.idx"), Bytes::Owned(b)).is_err(),
                "{at}"
            );
        }
        assert!(
            ProcessIndex::parse(PathBuf::from("x.idx"), Bytes::Owned(bytes[..100].to_vec()))
                .is_err()
        );
    }
}
