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
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;

use ppd_formats::{Recording, progress};

use crate::trace::{EventRef, EventStore, Trace};
use crate::vclock::hb::SyncKind;
use crate::vclock::{Clocks, SyncEdge};

/// File name of the cache inside `cache/`.
pub(crate) const CLOCKS_FILE: &str = "clocks.bin";
const MAGIC: &[u8; 8] = b"PPDCLOCK";
/// Bytes of one stored synchronization edge: from and to (process, index) and the kind.
const EDGE_BYTES: usize = 17;
/// Version of the layout and of the happened-before rules; bump when either changes.
/// (2: a stream write read in pieces gives its edge to every read that ends in it.)
pub(crate) const CACHE_VERSION: u32 = 2;

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
/// computed with `compute` and cached (an analysis that runs during the computation, like race
/// detection, comes along).
pub(crate) fn load_or_compute_with<S: EventStore>(
    recording: &Recording,
    trace: &Trace<S>,
    compute: impl FnOnce(&Trace<S>) -> Clocks,
) -> (Clocks, CacheOutcome) {
    let fingerprint = fingerprint(recording);
    let path = cache_path(recording);
    let opened = ppd_formats::private::open_regular(&path, "read the clocks cache").and_then(|f| {
        let size = f
            .metadata()
            .map_err(|e| ppd_formats::FormatError::io(&path, "read the clocks cache", e))?
            .len();
        Ok((size, f))
    });
    let reason = match opened {
        Ok((size, file)) => match decode(BufReader::new(file), size, &fingerprint, trace) {
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
pub(crate) fn cache_path(recording: &Recording) -> PathBuf {
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
    ppd_formats::private::write_atomic_with(&path, false, |out| {
        write_cache(out, fingerprint, clocks)
    })
    .map_err(|e| e.to_string())
}

/// Counts and checksums what is written to it, and keeps none of it.
#[derive(Default)]
struct Digest {
    len: u64,
    crc: u32,
}

impl Write for Digest {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.crc = crc32c::crc32c_append(self.crc, bytes);
        self.len += bytes.len() as u64;
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Writes the cache file: the header needs the body's length and checksum, so the body is
/// written twice, first to a [`Digest`], and never held in memory (at ten million events it
/// is hundreds of megabytes).
fn write_cache(out: &mut dyn Write, fingerprint: &[LogStamp], clocks: &Clocks) -> io::Result<()> {
    let mut digest = Digest::default();
    {
        let mut counted = BufWriter::new(&mut digest);
        write_body(&mut counted, fingerprint, clocks)?;
        counted.flush()?;
    }
    out.write_all(MAGIC)?;
    out.write_all(&CACHE_VERSION.to_le_bytes())?;
    out.write_all(&digest.len.to_le_bytes())?;
    out.write_all(&digest.crc.to_le_bytes())?;
    write_body(out, fingerprint, clocks)
}

/// Writes `values` little-endian, a few thousand at a time.
fn write_u32s(out: &mut dyn Write, values: &[u32]) -> io::Result<()> {
    let mut buf = [0u8; 4096];
    for chunk in values.chunks(buf.len() / 4) {
        for (slot, v) in buf.chunks_exact_mut(4).zip(chunk) {
            slot.copy_from_slice(&v.to_le_bytes());
        }
        out.write_all(&buf[..chunk.len() * 4])?;
    }
    Ok(())
}

fn write_body(out: &mut dyn Write, fingerprint: &[LogStamp], clocks: &Clocks) -> io::Result<()> {
    let u32 = |out: &mut dyn Write, v: u32| out.write_all(&v.to_le_bytes());
    let u64 = |out: &mut dyn Write, v: u64| out.write_all(&v.to_le_bytes());
    let text = |out: &mut dyn Write, s: &str| {
        u32(out, s.len() as u32)?;
        out.write_all(s.as_bytes())
    };
    u32(out, fingerprint.len() as u32)?;
    for s in fingerprint {
        text(out, &s.name)?;
        u64(out, s.size)?;
        u64(out, s.mtime_s as u64)?;
        u32(out, s.mtime_ns)?;
    }
    let (procs, edges, notes) = clocks.parts();
    u32(out, clocks.width() as u32)?;
    for p in procs {
        u32(out, p.covering.len())?;
        u32(out, p.checkpoints.len() as u32)?;
        write_u32s(out, &p.checkpoints)?;
        write_u32s(out, &p.pool)?;
    }
    u64(out, edges.len() as u64)?;
    for e in edges {
        u32(out, e.from.process)?;
        u32(out, e.from.index)?;
        u32(out, e.to.process)?;
        u32(out, e.to.index)?;
        out.write_all(&[e.kind.code()])?;
    }
    u32(out, notes.len() as u32)?;
    for n in notes {
        text(out, n)?;
    }
    Ok(())
}

/// The cache's body, read through a buffer and checksummed on the way: the file is never
/// held in memory whole, and nothing read is trusted until [`Body::finish`] found the
/// checksum right. Every read is bounded by the length the header gives.
struct Body<R> {
    inner: R,
    /// Bytes of the body not read yet.
    left: u64,
    crc: u32,
}

impl<R: Read> Body<R> {
    fn fill(&mut self, buf: &mut [u8]) -> Result<(), String> {
        if (buf.len() as u64) > self.left {
            return Err(format!(
                "truncated: {} bytes wanted, {} left",
                buf.len(),
                self.left
            ));
        }
        self.inner
            .read_exact(buf)
            .map_err(|e| format!("truncated ({e})"))?;
        self.crc = crc32c::crc32c_append(self.crc, buf);
        self.left -= buf.len() as u64;
        Ok(())
    }

    fn u32(&mut self) -> Result<u32, String> {
        let mut b = [0; 4];
        self.fill(&mut b)?;
        Ok(u32::from_le_bytes(b))
    }

    fn u64(&mut self) -> Result<u64, String> {
        let mut b = [0; 8];
        self.fill(&mut b)?;
        Ok(u64::from_le_bytes(b))
    }

    fn str(&mut self) -> Result<String, String> {
        let len = self.u32()?;
        if u64::from(len) > self.left {
            return Err("text runs past the body".into());
        }
        let mut b = vec![0; len as usize];
        self.fill(&mut b)?;
        String::from_utf8(b).map_err(|_| "bad text".to_owned())
    }

    /// `n` u32s, refusing counts the remaining bytes cannot hold before allocating.
    fn u32s(&mut self, n: usize) -> Result<Vec<u32>, String> {
        let bytes = (n as u64).checked_mul(4).ok_or("count overflows")?;
        if bytes > self.left {
            return Err(format!(
                "{n} values do not fit the {} bytes left",
                self.left
            ));
        }
        let mut values = Vec::with_capacity(n);
        let mut buf = [0u8; 4096];
        let mut missing = n;
        while missing > 0 {
            let take = missing.min(buf.len() / 4);
            self.fill(&mut buf[..take * 4])?;
            values.extend(
                buf[..take * 4]
                    .chunks_exact(4)
                    .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])),
            );
            missing -= take;
        }
        Ok(values)
    }

    /// `n` synchronization edges of [`EDGE_BYTES`] each, read a few hundred at a time.
    fn edges(&mut self, n: u64) -> Result<Vec<SyncEdge>, String> {
        if n.checked_mul(EDGE_BYTES as u64)
            .is_none_or(|bytes| bytes > self.left)
        {
            return Err("more edges than the body holds".into());
        }
        let mut edges = Vec::with_capacity(n as usize);
        let mut buf = [0u8; EDGE_BYTES * 256];
        let mut missing = n as usize;
        while missing > 0 {
            let take = missing.min(256);
            self.fill(&mut buf[..take * EDGE_BYTES])?;
            for e in buf[..take * EDGE_BYTES].chunks_exact(EDGE_BYTES) {
                let at = |i: usize| u32::from_le_bytes([e[i], e[i + 1], e[i + 2], e[i + 3]]);
                let kind = SyncKind::from_code(e[16]).ok_or("bad edge kind")?;
                edges.push(SyncEdge {
                    from: EventRef::new(at(0), at(4)),
                    to: EventRef::new(at(8), at(12)),
                    kind,
                });
            }
            missing -= take;
        }
        Ok(edges)
    }

    /// Whether the whole body was read and its checksum is `crc`.
    fn finish(self, crc: u32) -> Result<(), String> {
        if self.left != 0 {
            return Err("trailing bytes".into());
        }
        if self.crc != crc {
            return Err("checksum mismatch".into());
        }
        Ok(())
    }
}

/// The clocks in a cache file of `size` bytes read from `file`, if it is whole, fresh and fits
/// `trace`.
fn decode<S: EventStore>(
    mut file: impl Read,
    size: u64,
    fingerprint: &[LogStamp],
    trace: &Trace<S>,
) -> Result<Clocks, String> {
    let mut head = [0u8; 24];
    file.read_exact(&mut head)
        .map_err(|_| "not a clocks cache (too short)".to_owned())?;
    if &head[..8] != MAGIC {
        return Err("not a clocks cache".into());
    }
    let field = |at: usize, n: usize| {
        let mut b = [0u8; 8];
        b[..n].copy_from_slice(&head[at..at + n]);
        u64::from_le_bytes(b)
    };
    let version = field(8, 4) as u32;
    if version != CACHE_VERSION {
        return Err(format!(
            "cache version {version}, this build writes {CACHE_VERSION}"
        ));
    }
    let (len, crc) = (field(12, 8), field(20, 4) as u32);
    // Every count is checked against the length before anything is allocated for it, so the
    // length must be the file's.
    if len != size.saturating_sub(head.len() as u64) {
        return Err(format!(
            "the header says {len} bytes of body, the file has {size}"
        ));
    }
    let mut c = Body {
        inner: file,
        left: len,
        crc: 0,
    };
    let count = c.u32()? as usize;
    let mut stored = Vec::new();
    for _ in 0..count.min(len as usize) {
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
    let mut counted = progress::pass("reading the clocks from the cache", trace.event_count());
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
        counted.add(events as u64);
    }
    let n_edges = c.u64()?;
    let edges = c.edges(n_edges)?;
    let n_notes = c.u32()?;
    let mut notes = Vec::new();
    for _ in 0..n_notes {
        notes.push(c.str()?);
    }
    c.finish(crc)?;
    Clocks::from_parts(trace, per_process, edges, notes)
        .ok_or_else(|| "clocks do not fit the logs".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synth::{self, Shape};

    fn encode(fingerprint: &[LogStamp], clocks: &Clocks) -> Vec<u8> {
        let mut bytes = Vec::new();
        write_cache(&mut bytes, fingerprint, clocks).expect("writing to memory");
        bytes
    }

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
        assert_eq!(
            decode(&bytes[..], bytes.len() as u64, &stamps(), &trace).unwrap(),
            clocks
        );
    }

    #[test]
    fn a_damaged_or_stale_cache_is_refused_without_panicking() {
        let trace = synth::execution(&Shape::mixed(3, 500), 3);
        let clocks = Clocks::compute(&trace);
        let bytes = encode(&stamps(), &clocks);
        let mut other = stamps();
        other[0].size = 11;
        assert!(
            decode(&bytes[..], bytes.len() as u64, &other, &trace)
                .unwrap_err()
                .contains("changed")
        );
        // Every truncation and every single-byte flip is refused.
        for cut in 0..bytes.len() {
            assert!(decode(&bytes[..cut], cut as u64, &stamps(), &trace).is_err());
        }
        for i in (0..bytes.len()).step_by(7) {
            let mut b = bytes.clone();
            b[i] ^= 0x5a;
            assert!(
                decode(&b[..], b.len() as u64, &stamps(), &trace).is_err(),
                "flip at {i}"
            );
        }
        // A header that claims more body than the file holds is refused before a count in
        // the body can ask for memory.
        let mut b = bytes.clone();
        b[12..20].copy_from_slice(&(u64::MAX / 2).to_le_bytes());
        assert!(
            decode(&b[..], b.len() as u64, &stamps(), &trace)
                .unwrap_err()
                .contains("header says")
        );
        // A body whose checksum was fixed up after damage is still checked structurally.
        let mut b = bytes;
        let body_at = 24;
        let last = b.len() - 1;
        b[body_at + 4] ^= 0xff;
        b[last] ^= 0x01;
        let crc = crc32c::crc32c(&b[body_at..]);
        b[20..24].copy_from_slice(&crc.to_le_bytes());
        assert!(decode(&b[..], b.len() as u64, &stamps(), &trace).is_err());
    }
}
