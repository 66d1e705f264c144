//! The per-process index a why-query searches: every e-block instance (its interval in the
//! log, its name, the instance it is nested in) and every send made inside one.
//!
//! Built by one pass over a process's log and cached in `cache/why/p<id>.idx`. A query reads
//! the cache memory-mapped and touches only what its binary searches visit, so a warm query
//! costs the same on a recording ten times longer: the file is checked in two steps, the
//! header and the small tables when it is opened, each chunk of 1024 entries (with its own
//! checksum) when a search first reads it. A cache that is stale or whose header or tables are
//! damaged is rebuilt; damage found later in a chunk is an error naming the file and offset.
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
//!   per chunk of instances: first entry's enter u64, crc of the chunk u32
//!   per chunk of sends: first entry's channel u64 and seq u64, crc of the chunk u32
//!   crc of the tables so far u32
//! instances, 24 bytes each, by enter: enter u64, exit u64 (u64::MAX: never exited),
//!   name u32 (index into the names), parent u32 (index of the enclosing instance; u32::MAX: top
//!   level)
//! sends inside instances, 24 bytes each, by (channel, seq): channel u64, seq u64, event u64
//! ```

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU8, Ordering};

use memmap2::Mmap;
use ppd_formats::{Event, ObjectId, ProcessId, Recording};

use crate::error::{FlowbackError, Result};

const MAGIC: &[u8; 8] = b"PPDWHYIX";
const VERSION: u32 = 2;
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

/// A chunk's state: not yet read, checked, or damaged.
const UNCHECKED: u8 = 0;
const GOOD: u8 = 1;
const BAD: u8 = 2;

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
    instance_chunks: Vec<(u64, u32)>,
    send_chunks: Vec<((u64, u64), u32)>,
    instances_at: usize,
    sends_at: usize,
    checked: Vec<AtomicU8>,
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
    };
    let mut open: Vec<u32> = Vec::new();
    for item in reader.events() {
        let (k, event) = item?;
        match event {
            Event::EblockEnter { eblock, .. } => {
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
            Event::EblockExit { .. } => {
                if let Some(i) = open.pop() {
                    found.instances[i as usize].exit = k;
                }
            }
            Event::Send { channel, seq, .. } if !open.is_empty() => {
                found.sends.push(SendAt {
                    channel: channel.0,
                    seq,
                    event: k,
                });
            }
            Event::Start { .. }
            | Event::Spawn { .. }
            | Event::Join { .. }
            | Event::Exit
            | Event::Panic { .. }
            | Event::Create { .. }
            | Event::Send { .. }
            | Event::Recv { .. }
            | Event::RecvNone { .. }
            | Event::Select { .. }
            | Event::Lock { .. }
            | Event::Unlock { .. }
            | Event::SemAcquire { .. }
            | Event::SemRelease { .. }
            | Event::Atomic { .. }
            | Event::Clock { .. }
            | Event::Random { .. }
            | Event::Mark { .. }
            | Event::Blocked { .. }
            | Event::Undelivered { .. }
            | Event::JoinBlocked { .. }
            | Event::Sleep { .. } => {}
        }
    }
    found.sends.sort_by_key(|s| (s.channel, s.seq));
    Ok((log, found))
}

fn encode(scan: &Scan) -> Vec<u8> {
    let mut tables = Vec::new();
    tables.extend_from_slice(&(scan.names.len() as u32).to_le_bytes());
    for name in &scan.names {
        tables.extend_from_slice(&(name.len() as u32).to_le_bytes());
        tables.extend_from_slice(name.as_bytes());
    }
    let mut instances = Vec::with_capacity(scan.instances.len() * ENTRY);
    for i in &scan.instances {
        instances.extend_from_slice(&i.enter.to_le_bytes());
        instances.extend_from_slice(&i.exit.to_le_bytes());
        instances.extend_from_slice(&i.name.to_le_bytes());
        instances.extend_from_slice(&i.parent.to_le_bytes());
    }
    let mut sends = Vec::with_capacity(scan.sends.len() * ENTRY);
    for s in &scan.sends {
        sends.extend_from_slice(&s.channel.to_le_bytes());
        sends.extend_from_slice(&s.seq.to_le_bytes());
        sends.extend_from_slice(&s.event.to_le_bytes());
    }
    for (chunk, bytes) in scan
        .instances
        .chunks(CHUNK)
        .zip(instances.chunks(CHUNK * ENTRY))
    {
        tables.extend_from_slice(&chunk[0].enter.to_le_bytes());
        tables.extend_from_slice(&crc32c::crc32c(bytes).to_le_bytes());
    }
    for (chunk, bytes) in scan.sends.chunks(CHUNK).zip(sends.chunks(CHUNK * ENTRY)) {
        tables.extend_from_slice(&chunk[0].channel.to_le_bytes());
        tables.extend_from_slice(&chunk[0].seq.to_le_bytes());
        tables.extend_from_slice(&crc32c::crc32c(bytes).to_le_bytes());
    }
    let crc = crc32c::crc32c(&tables);
    tables.extend_from_slice(&crc.to_le_bytes());

    let mut out = Vec::with_capacity(HEADER + tables.len() + instances.len() + sends.len());
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
    out.extend_from_slice(&instances);
    out.extend_from_slice(&sends);
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
        let cached = fs::File::open(&path)
            .ok()
            // SAFETY: the map is read through bounds-checked slices only, and the file is
            // replaced by rename, never written in place, so its pages do not change under us.
            .and_then(|f| unsafe { Mmap::map(&f) }.ok())
            .and_then(|m| ProcessIndex::parse(path.clone(), Bytes::Mapped(m)).ok())
            .filter(|i| i.fingerprint == wanted);
        if let Some(index) = cached {
            return Ok(index);
        }
        let (log, found) = scan(recording, process)?;
        let bytes = encode(&found);
        // Unwritable, it costs the next query this scan again.
        let _ = ppd_formats::private::write_atomic(&path, &bytes, false);
        ProcessIndex::parse(log, Bytes::Owned(bytes))
            .map_err(|detail| FlowbackError::Query(format!("indexing {process}: {detail}")))
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
        let instances_at = HEADER + tables_len;
        let sends_at = instances
            .checked_mul(ENTRY)
            .and_then(|n| n.checked_add(instances_at))
            .ok_or("size")?;
        let end = sends
            .checked_mul(ENTRY)
            .and_then(|n| n.checked_add(sends_at))
            .ok_or("size")?;
        if end != b.len() {
            return Err(format!("{} bytes where the header says {end}", b.len()));
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
        let mut instance_chunks = Vec::with_capacity(chunks(instances));
        for _ in 0..chunks(instances) {
            let first = u64_at(body, at).ok_or("short chunk table")?;
            let crc = u32_at(body, at + 8).ok_or("short chunk table")?;
            instance_chunks.push((first, crc));
            at += 12;
        }
        let mut send_chunks = Vec::with_capacity(chunks(sends));
        for _ in 0..chunks(sends) {
            let channel = u64_at(body, at).ok_or("short chunk table")?;
            let seq = u64_at(body, at + 8).ok_or("short chunk table")?;
            let crc = u32_at(body, at + 16).ok_or("short chunk table")?;
            send_chunks.push(((channel, seq), crc));
            at += 20;
        }
        if at != body.len() {
            return Err("tables longer than their contents".into());
        }
        let checked = (0..instance_chunks.len() + send_chunks.len())
            .map(|_| AtomicU8::new(UNCHECKED))
            .collect();
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
            instances_at,
            sends_at,
            checked,
        })
    }

    /// The bytes of chunk `c` of the array at `base`, checked against `crc` once.
    fn chunk(&self, base: usize, count: usize, c: usize, crc: u32, slot: usize) -> Result<&[u8]> {
        let from = base + c * CHUNK * ENTRY;
        let to = base + ((c + 1) * CHUNK).min(count) * ENTRY;
        let bytes = &self.bytes[from..to];
        let state = &self.checked[slot];
        match state.load(Ordering::Relaxed) {
            GOOD => Ok(bytes),
            BAD => Err(self.damaged(from)),
            _ => {
                let good = crc32c::crc32c(bytes) == crc;
                state.store(if good { GOOD } else { BAD }, Ordering::Relaxed);
                if good {
                    Ok(bytes)
                } else {
                    Err(self.damaged(from))
                }
            }
        }
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
        let (_, crc) = self.instance_chunks[c];
        let bytes = self.chunk(self.instances_at, self.instances, c, crc, c)?;
        let at = (i % CHUNK) * ENTRY;
        let field = |o| u64_at(bytes, at + o).unwrap_or_default();
        Ok(Instance {
            enter: field(0),
            exit: field(8),
            name: u32_at(bytes, at + 16).unwrap_or_default(),
            parent: u32_at(bytes, at + 20).unwrap_or_default(),
        })
    }

    fn send_at(&self, i: usize) -> Result<SendAt> {
        let c = i / CHUNK;
        let (_, crc) = self.send_chunks[c];
        let slot = self.instance_chunks.len() + c;
        let bytes = self.chunk(self.sends_at, self.sends, c, crc, slot)?;
        let at = (i % CHUNK) * ENTRY;
        let field = |o| u64_at(bytes, at + o).unwrap_or_default();
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

    /// The top-level instances that exited before `enter`, latest first.
    pub fn earlier_top_level(&self, enter: u64) -> impl Iterator<Item = Result<Instance>> + '_ {
        let end = self.entered_before(enter);
        let (end, first_error) = match end {
            Ok(end) => (end, None),
            Err(e) => (0, Some(Err(e))),
        };
        first_error
            .into_iter()
            .chain(
                self.before(end)
                    .map(|r| r.map(|(_, x)| x))
                    .filter(move |r| {
                        r.as_ref()
                            .map_or(true, |x| x.is_top_level() && x.exit < enter)
                    }),
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
        let earlier: Vec<u64> = index
            .earlier_top_level(21_000)
            .take(2)
            .map(|r| r.unwrap().enter)
            .collect();
        assert_eq!(earlier, [20_990, 20_980]);
        assert_eq!(index.entered_before(0).unwrap(), 0);
        assert_eq!(index.entered_before(u64::MAX).unwrap(), 6000);
    }

    #[test]
    fn damage_is_found_where_it_is_read() {
        let instances: Vec<_> = (0..3000u64).map(|n| (n * 2, n * 2 + 1, u32::MAX)).collect();
        let mut bytes = encode(&scan_of(&instances, &[]));
        // A flipped bit in the third chunk of instances.
        let data = bytes.len() - 3000 * ENTRY;
        bytes[data + 2 * CHUNK * ENTRY + 5] ^= 1;
        let index =
            ProcessIndex::parse(PathBuf::from("x.idx"), Bytes::Owned(bytes.clone())).unwrap();
        assert!(
            index.instance_at(10).unwrap().is_some(),
            "the first chunk is whole"
        );
        let err = index.instance_at(4_100).unwrap_err().to_string();
        assert!(
            err.contains("x.idx") && err.contains(&format!("{}", data + 2 * CHUNK * ENTRY)),
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
