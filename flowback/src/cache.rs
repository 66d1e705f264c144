//! The vector clocks of a recording, cached in its `cache/` directory.
//!
//! `cache/clocks.bin` holds the clocks and synchronization edges [`Clocks::compute`] found,
//! together with a fingerprint of the logs they were computed from. It is used only when the
//! fingerprint still matches (same log files, sizes and modification times) and the file is
//! whole (its checksum matches and every structure fits the trace); anything else — a missing,
//! stale, truncated or corrupt file, another format version — means the clocks are computed
//! again and the file rewritten. Reading never panics on the file's bytes.
//!
//! Layout (integers little-endian):
//!
//! ```text
//! magic "PPDCLOCK" (8) | version u32 | body length u64 | crc32c of body u32 | body
//! body: fingerprint: count u32, per log: name (u32 length + UTF-8), size u64, mtime s i64,
//!                    mtime ns u32
//!       width u32
//!       per process: events u32, checkpoints u32, checkpoint event indexes [u32],
//!                    vectors [u32; checkpoints × width]
//!       edges u64, per edge: from process u32, from index u32, to process u32,
//!                            to index u32, kind u8
//!       notes u32, per note: u32 length + UTF-8
//! ```

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use ppd_formats::Recording;

use crate::hb::SyncKind;
use crate::trace::{EventRef, EventStore, Trace};
use crate::vclock::{Clocks, SyncEdge};

/// File name of the cache inside `cache/`.
pub const CLOCKS_FILE: &str = "clocks.bin";
const MAGIC: &[u8; 8] = b"PPDCLOCK";
/// Version of the layout and of the happened-before rules; bump when either changes.
/// (2: a stream write read in pieces gives its edge to every read that ends in it.)
pub const CACHE_VERSION: u32 = 2;

/// How the clocks were obtained.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CacheOutcome {
    /// Read from the cache.
    Hit,
    /// Computed (the reason the cache was not used) and stored.
    Stored(String),
    /// Computed, but the cache could not be written (read-only recording?).
    Unwritable(String),
}

/// The clocks of `trace` (read from `recording`): from the cache when it is valid, else
/// computed and cached.
pub fn load_or_compute<S: EventStore>(
    recording: &Recording,
    trace: &Trace<S>,
) -> (Clocks, CacheOutcome) {
    load_or_compute_with(recording, trace, Clocks::compute)
}

/// Like [`load_or_compute`], computing with `compute` when the cache cannot be used (an
/// analysis that runs during the computation, like race detection, comes along).
pub fn load_or_compute_with<S: EventStore>(
    recording: &Recording,
    trace: &Trace<S>,
    compute: impl FnOnce(&Trace<S>) -> Clocks,
) -> (Clocks, CacheOutcome) {
    let fingerprint = fingerprint(recording);
    let path = recording
        .dir()
        .join(ppd_formats::recording::CACHE_DIR)
        .join(CLOCKS_FILE);
    let reason = match fs::read(&path) {
        Ok(bytes) => match decode(&bytes, &fingerprint, trace) {
            Ok(clocks) => return (clocks, CacheOutcome::Hit),
            Err(why) => why,
        },
        Err(e) => format!("no cache ({e})"),
    };
    let clocks = compute(trace);
    let outcome = match store(recording, &fingerprint, &clocks) {
        Ok(()) => CacheOutcome::Stored(reason),
        Err(e) => CacheOutcome::Unwritable(e),
    };
    (clocks, outcome)
}

/// Where the cache of `recording` is.
pub fn cache_path(recording: &Recording) -> PathBuf {
    recording
        .dir()
        .join(ppd_formats::recording::CACHE_DIR)
        .join(CLOCKS_FILE)
}

/// Identity of the logs the clocks come from.
#[derive(Debug, Clone, PartialEq, Eq)]
struct LogStamp {
    name: String,
    size: u64,
    mtime_s: i64,
    mtime_ns: u32,
}

fn fingerprint(recording: &Recording) -> Vec<LogStamp> {
    recording
        .processes()
        .iter()
        .map(|p| {
            let meta = fs::metadata(recording.log_path(p)).ok();
            LogStamp {
                name: p.log.clone(),
                size: meta.as_ref().map(|m| m.len()).unwrap_or(0),
                mtime_s: meta.as_ref().map(|m| m.mtime()).unwrap_or(0),
                mtime_ns: meta.as_ref().map(|m| m.mtime_nsec() as u32).unwrap_or(0),
            }
        })
        .collect()
}

fn store(recording: &Recording, fingerprint: &[LogStamp], clocks: &Clocks) -> Result<(), String> {
    let dir = recording.cache_dir().map_err(|e| e.to_string())?;
    let path = dir.join(CLOCKS_FILE);
    ppd_formats::private::write_atomic(&path, &encode(fingerprint, clocks), false)
        .map_err(|e| e.to_string())
}

fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    put_u32(out, s.len() as u32);
    out.extend_from_slice(s.as_bytes());
}

fn encode(fingerprint: &[LogStamp], clocks: &Clocks) -> Vec<u8> {
    let mut body = Vec::new();
    put_u32(&mut body, fingerprint.len() as u32);
    for s in fingerprint {
        put_str(&mut body, &s.name);
        put_u64(&mut body, s.size);
        put_u64(&mut body, s.mtime_s as u64);
        put_u32(&mut body, s.mtime_ns);
    }
    let (procs, edges, notes) = clocks.parts();
    put_u32(&mut body, clocks.width() as u32);
    for p in procs {
        put_u32(&mut body, p.covering.len());
        put_u32(&mut body, p.checkpoints.len() as u32);
        for &k in &p.checkpoints {
            put_u32(&mut body, k);
        }
        for &c in &p.pool {
            put_u32(&mut body, c);
        }
    }
    put_u64(&mut body, edges.len() as u64);
    for e in edges {
        put_u32(&mut body, e.from.process);
        put_u32(&mut body, e.from.index);
        put_u32(&mut body, e.to.process);
        put_u32(&mut body, e.to.index);
        body.push(e.kind.code());
    }
    put_u32(&mut body, notes.len() as u32);
    for n in notes {
        put_str(&mut body, n);
    }
    let mut out = Vec::with_capacity(body.len() + 24);
    out.extend_from_slice(MAGIC);
    put_u32(&mut out, CACHE_VERSION);
    put_u64(&mut out, body.len() as u64);
    put_u32(&mut out, crc32c::crc32c(&body));
    out.extend_from_slice(&body);
    out
}

/// A bounds-checked reader over the cache's bytes.
struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.bytes.len());
        let end = end.ok_or_else(|| format!("truncated at byte {}", self.pos))?;
        let slice = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(slice)
    }

    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }

    fn u32(&mut self) -> Result<u32, String> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u64(&mut self) -> Result<u64, String> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }

    fn str(&mut self) -> Result<String, String> {
        let len = self.u32()? as usize;
        let b = self.take(len)?;
        String::from_utf8(b.to_vec()).map_err(|_| "bad text".to_owned())
    }

    /// `n` u32s, refusing counts the remaining bytes cannot hold before allocating.
    fn u32s(&mut self, n: usize) -> Result<Vec<u32>, String> {
        let bytes = n.checked_mul(4).ok_or("count overflows")?;
        let raw = self.take(bytes)?;
        Ok(raw
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect())
    }
}

fn decode<S: EventStore>(
    bytes: &[u8],
    fingerprint: &[LogStamp],
    trace: &Trace<S>,
) -> Result<Clocks, String> {
    let mut head = Cursor { bytes, pos: 0 };
    if head.take(8)? != MAGIC {
        return Err("not a clocks cache".into());
    }
    let version = head.u32()?;
    if version != CACHE_VERSION {
        return Err(format!(
            "cache version {version}, this build writes {CACHE_VERSION}"
        ));
    }
    let len = head.u64()?;
    let crc = head.u32()?;
    let body = head.take(usize::try_from(len).map_err(|_| "length overflows")?)?;
    if crc32c::crc32c(body) != crc {
        return Err("checksum mismatch".into());
    }
    let mut c = Cursor {
        bytes: body,
        pos: 0,
    };
    let count = c.u32()? as usize;
    let mut stored = Vec::new();
    for _ in 0..count.min(body.len()) {
        stored.push(LogStamp {
            name: c.str()?,
            size: c.u64()?,
            mtime_s: c.u64()? as i64,
            mtime_ns: c.u32()?,
        });
    }
    if stored.len() != count {
        return Err("truncated fingerprint".into());
    }
    if stored != fingerprint {
        return Err("the logs changed since the cache was written".into());
    }
    let width = c.u32()? as usize;
    if width != trace.processes().len() {
        return Err("process count differs".into());
    }
    let mut per_process = Vec::with_capacity(width);
    for p in 0..width {
        let events = c.u32()? as usize;
        if events != trace.process(p as u32).events.len() {
            return Err(format!("process {p}: event count differs"));
        }
        let n = c.u32()? as usize;
        let checkpoints = c.u32s(n)?;
        let pool = c.u32s(n.checked_mul(width).ok_or("count overflows")?)?;
        per_process.push((checkpoints, pool));
    }
    let n_edges = c.u64()?;
    let mut edges = Vec::new();
    for _ in 0..n_edges {
        let from = EventRef::new(c.u32()?, c.u32()?);
        let to = EventRef::new(c.u32()?, c.u32()?);
        let kind = SyncKind::from_code(c.u8()?).ok_or("bad edge kind")?;
        edges.push(SyncEdge { from, to, kind });
    }
    let n_notes = c.u32()?;
    let mut notes = Vec::new();
    for _ in 0..n_notes {
        notes.push(c.str()?);
    }
    if c.pos != body.len() {
        return Err("trailing bytes".into());
    }
    Clocks::from_parts(trace, per_process, edges, notes)
        .ok_or_else(|| "clocks do not fit the logs".into())
}

/// Whether `path` looks like a clocks cache (for tests and tools).
pub fn is_cache_file(path: &Path) -> bool {
    fs::read(path)
        .map(|b| b.starts_with(MAGIC))
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synth::{self, Shape};

    fn stamps() -> Vec<LogStamp> {
        vec![LogStamp {
            name: "proc-0000.log".into(),
            size: 10,
            mtime_s: 5,
            mtime_ns: 7,
        }]
    }

    #[test]
    fn clocks_round_trip_through_the_cache_bytes() {
        let trace = synth::execution(&Shape::mixed(4, 3_000), 7);
        let clocks = Clocks::compute(&trace);
        let bytes = encode(&stamps(), &clocks);
        assert_eq!(decode(&bytes, &stamps(), &trace).unwrap(), clocks);
    }

    #[test]
    fn a_damaged_or_stale_cache_is_refused_without_panicking() {
        let trace = synth::execution(&Shape::mixed(3, 500), 3);
        let clocks = Clocks::compute(&trace);
        let bytes = encode(&stamps(), &clocks);
        let mut other = stamps();
        other[0].size = 11;
        assert!(
            decode(&bytes, &other, &trace)
                .unwrap_err()
                .contains("changed")
        );
        // Every truncation and every single-byte flip is refused.
        for cut in 0..bytes.len() {
            assert!(decode(&bytes[..cut], &stamps(), &trace).is_err());
        }
        for i in (0..bytes.len()).step_by(7) {
            let mut b = bytes.clone();
            b[i] ^= 0x5a;
            assert!(decode(&b, &stamps(), &trace).is_err(), "flip at {i}");
        }
        // A body whose checksum was fixed up after damage is still checked structurally.
        let mut b = bytes;
        let body_at = 24;
        let last = b.len() - 1;
        b[body_at + 4] ^= 0xff;
        b[last] ^= 0x01;
        let crc = crc32c::crc32c(&b[body_at..]);
        b[20..24].copy_from_slice(&crc.to_le_bytes());
        assert!(decode(&b, &stamps(), &trace).is_err());
    }
}
