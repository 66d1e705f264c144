//! Reading a process's log: complete logs through their index, crashed logs by recovery.
//!
//! A cleanly closed log ends with an index and a footer; the reader finds every frame from
//! them. A log whose writer died has neither: the reader walks the frames from the end of the
//! ring, stops at the first one that is torn, and takes the rest of the records from the raw
//! blocks still in the ring, up to each block's commit word. Either way it ends with a list of
//! blocks ordered by sequence number and can find event *k* by binary search over their first
//! event numbers, decompressing only the block that holds it.
//!
//! Damage is reported, not hidden: a checksum mismatch or malformed structure becomes a
//! [`FormatError`] naming the file and byte offset, and everything before it stays readable.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rkyv::rancor;

use crate::codec::{DecodeError, Decoder, Encoder, Step};
use crate::error::{FormatError, Result};
use crate::event::{Event, EventKind};
use crate::ids::ProcessId;
use crate::layout::{
    ArchivedBlockInfo, ArchivedFileHeader, ArchivedFooter, ArchivedFrameHeader, ArchivedLogIndex,
    BLOCK_INFO_LEN, BLOCK_MAGIC, FILE_MAGIC, FOOTER_LEN, FOOTER_MAGIC, FORMAT_VERSION,
    FRAME_HEADER_LEN, FRAME_MAGIC, HEADER_PROLOGUE, HEADER_REGION, OLDEST_READABLE_VERSION,
    SLOT_HEADER, split_crc,
};
use crate::pending::{PENDING_LEN, PENDING_OFFSET, PendingAccess};
use crate::writer::LogIdentity;

thread_local! {
    /// One zstd decompression context per thread, made at its first frame: creating one per
    /// block (tens of thousands in a long run) costs as much as decompressing a small block.
    static DECOMPRESSOR: std::cell::RefCell<Option<zstd::bulk::Decompressor<'static>>> =
        const { std::cell::RefCell::new(None) };
}

/// Decompresses a frame's payload of at most `capacity` bytes with the thread's context.
/// Decompresses `payload`, at most `capacity` bytes, into `buf` (whose old bytes go): a
/// reader that reuses one buffer block after block does not ask the system for fresh pages
/// each time.
fn decompress(payload: &[u8], capacity: usize, mut buf: Vec<u8>) -> std::io::Result<Vec<u8>> {
    DECOMPRESSOR.with(|cell| {
        let mut slot = cell.borrow_mut();
        let context = match &mut *slot {
            Some(context) => context,
            None => slot.insert(zstd::bulk::Decompressor::new()?),
        };
        buf.clear();
        buf.reserve(capacity);
        context.decompress_to_buffer(payload, &mut buf)?;
        Ok(buf)
    })
}

/// How a log ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LogState {
    /// The writer closed it: index and footer present.
    Complete,
    /// The writer died; the events were recovered from the frames and the ring.
    Recovered,
}

/// Where a block's bytes are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    /// A compressed frame at this file offset.
    Frame { offset: u64 },
    /// A raw block in this ring slot, `len` bytes committed.
    Ring { slot: u32, len: u32 },
    /// The one event rebuilt from the pending access record ([`crate::pending`]).
    Pending,
}

#[derive(Debug, Clone, Copy)]
struct BlockLoc {
    seq: u64,
    first_event: u64,
    event_count: u32,
    source: Source,
}

/// A block's data, ready to decode.
#[derive(Debug)]
struct LoadedBlock {
    seq: u64,
    offset: u64,
    continuation: usize,
    data: Vec<u8>,
}

/// Totals a complete log stores in its index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexTotals {
    /// Events by kind, in [`EventKind::ALL`] order.
    pub kind_counts: Vec<u64>,
    /// Bytes of encoded events.
    pub raw_bytes: u64,
    /// Times the writer waited for a free slot.
    pub stalls: u64,
    /// Nanoseconds spent waiting.
    pub stall_nanos: u64,
}

/// An open log.
#[derive(Debug)]
pub struct LogReader {
    path: PathBuf,
    file: File,
    file_len: u64,
    identity: LogIdentity,
    created_unix_ns: u64,
    block_size: u32,
    ring_blocks: u32,
    blocks: Vec<BlockLoc>,
    event_count: u64,
    state: LogState,
    damage: Vec<FormatError>,
    totals: Option<IndexTotals>,
    frame_bytes: u64,
    raw_bytes: u64,
    /// Where the frames end according to a footer that passed its checksum.
    footer_frames_end: Option<u64>,
    /// The blocks [`get`](Self::get) decoded last, most recent first.
    recent: Mutex<Vec<(usize, Arc<[Event]>)>>,
    /// Added to every process id the log's events name (and to every object's creator): the
    /// first id of the node the log is from, in a recording of several OS processes.
    base: u32,
    /// The access the pending record held and the log did not: the last event, encoded as a
    /// block of its own.
    pending: Option<(PendingAccess, Vec<u8>)>,
    /// The format version in the header.
    version: u32,
}

/// How many decoded blocks [`LogReader::get`] keeps: lookups of nearby events (an instance's
/// entry and exit, the instances before it) decompress each block once.
const RECENT_BLOCKS: usize = 8;

impl LogReader {
    /// Opens the log at `path`, recovering it if its writer died.
    ///
    /// Fails only when the file header is unreadable; damage further in is listed by
    /// [`damage`](Self::damage) and everything before it is readable.
    pub fn open(path: &Path) -> Result<LogReader> {
        let file = crate::private::open_regular(path, "open log")?;
        let file_len = file
            .metadata()
            .map_err(|e| FormatError::io(path, "stat log", e))?
            .len();
        let mut reader = LogReader {
            path: path.to_owned(),
            file,
            file_len,
            identity: LogIdentity {
                process_id: ProcessId(0),
                parent: None,
                name: String::new(),
                os_pid: 0,
            },
            created_unix_ns: 0,
            block_size: 0,
            ring_blocks: 0,
            blocks: Vec::new(),
            event_count: 0,
            state: LogState::Recovered,
            damage: Vec::new(),
            totals: None,
            frame_bytes: 0,
            raw_bytes: 0,
            footer_frames_end: None,
            recent: Mutex::new(Vec::new()),
            base: 0,
            pending: None,
            version: 0,
        };
        let header_end = reader.read_header()?;
        if !reader.read_index() {
            reader.recover();
        }
        // A version-2 or -3 log's header may run into where the record lies.
        if header_end <= PENDING_OFFSET {
            reader.read_pending();
        }
        Ok(reader)
    }

    fn read_at(&self, offset: u64, len: usize, what: &'static str) -> Result<Vec<u8>> {
        if offset
            .checked_add(len as u64)
            .is_none_or(|end| end > self.file_len)
        {
            return Err(FormatError::Truncated {
                path: self.path.clone(),
                what,
                offset,
                needed: len as u64,
                len: self.file_len,
            });
        }
        let mut buf = vec![0u8; len];
        self.file
            .read_exact_at(&mut buf, offset)
            .map_err(|e| FormatError::io(&self.path, "read log", e))?;
        Ok(buf)
    }

    fn corrupt(&self, offset: u64, what: &'static str, detail: impl Into<String>) -> FormatError {
        FormatError::Corrupt {
            path: self.path.clone(),
            offset,
            what,
            detail: detail.into(),
        }
    }

    /// Reads the header; returns the offset where it ends.
    fn read_header(&mut self) -> Result<u64> {
        let prologue = self.read_at(0, HEADER_PROLOGUE, "log header")?;
        if prologue[..8] != FILE_MAGIC {
            return Err(FormatError::BadMagic {
                path: self.path.clone(),
                offset: 0,
                expected: "ppd log",
            });
        }
        let version = u32::from_le_bytes(prologue[8..12].try_into().expect("4 bytes"));
        if !(OLDEST_READABLE_VERSION..=FORMAT_VERSION).contains(&version) {
            return Err(FormatError::UnsupportedVersion {
                path: self.path.clone(),
                found: version,
                supported: FORMAT_VERSION,
                oldest: OLDEST_READABLE_VERSION,
            });
        }
        self.version = version;
        let len = u32::from_le_bytes(prologue[12..16].try_into().expect("4 bytes")) as usize;
        let crc = u32::from_le_bytes(prologue[16..20].try_into().expect("4 bytes"));
        if HEADER_PROLOGUE + len > HEADER_REGION as usize {
            return Err(self.corrupt(12, "log header", format!("header length {len}")));
        }
        let body = self.read_at(HEADER_PROLOGUE as u64, len, "log header")?;
        if crc32c::crc32c(&body) != crc {
            return Err(FormatError::Checksum {
                path: self.path.clone(),
                offset: HEADER_PROLOGUE as u64,
                what: "log header",
            });
        }
        let header = rkyv::access::<ArchivedFileHeader, rancor::Error>(&body)
            .map_err(|e| self.corrupt(HEADER_PROLOGUE as u64, "log header", e.to_string()))?;
        let block_size = header.block_size.to_native();
        let ring_blocks = header.ring_blocks.to_native();
        if block_size < 4096
            || !block_size.is_multiple_of(4096)
            || !(2..=1 << 16).contains(&ring_blocks)
        {
            return Err(self.corrupt(
                HEADER_PROLOGUE as u64,
                "log header",
                format!("ring of {ring_blocks} blocks of {block_size} bytes"),
            ));
        }
        self.identity = LogIdentity {
            process_id: ProcessId(header.process_id.to_native()),
            parent: header.parent.as_ref().map(|p| ProcessId(p.to_native())),
            name: header.name.as_str().to_owned(),
            os_pid: header.os_pid.to_native(),
        };
        self.created_unix_ns = header.created_unix_ns.to_native();
        self.block_size = block_size;
        self.ring_blocks = ring_blocks;
        Ok((HEADER_PROLOGUE + len) as u64)
    }

    /// Makes the access in the pending record the log's last event if the log does not end
    /// with it: its process made it and died, or stopped logging, before appending it
    /// ([`crate::pending`]). A record that cannot be read, or a log whose end cannot be read
    /// to compare, is damage, and no event is added.
    fn read_pending(&mut self) {
        let Ok(bytes) = self.read_at(PENDING_OFFSET, PENDING_LEN, "pending access") else {
            return;
        };
        let record: &[u8; PENDING_LEN] = bytes[..].try_into().expect("PENDING_LEN bytes");
        let access = match PendingAccess::read(record, self.version) {
            Ok(Some(access)) => access,
            Ok(None) => return,
            Err(detail) => {
                let e = self.corrupt(PENDING_OFFSET, "pending access", detail);
                self.damage.push(e);
                return;
            }
        };
        if let Some(last) = self.event_count.checked_sub(1) {
            match self.get(last) {
                Ok(e) if access.is(&e) => return,
                Ok(_) => {}
                Err(e) => {
                    self.damage.push(self.corrupt(
                        PENDING_OFFSET,
                        "pending access",
                        format!("the log's last event, to compare it with, is unreadable: {e}"),
                    ));
                    return;
                }
            }
        }
        let mut data = Vec::new();
        Encoder::default().encode(&access.event(None), &mut data);
        let seq = self.blocks.last().map_or(0, |b| b.seq + 1);
        self.blocks.push(BlockLoc {
            seq,
            first_event: self.event_count,
            event_count: 1,
            source: Source::Pending,
        });
        self.event_count += 1;
        self.pending = Some((access, data));
    }

    /// The access the log's last event was rebuilt from, when its process died (or stopped
    /// logging) between making it and appending it: that event has no site.
    pub fn pending_access(&self) -> Option<&PendingAccess> {
        self.pending.as_ref().map(|(access, _)| access)
    }

    fn frames_start(&self) -> u64 {
        HEADER_REGION + u64::from(self.block_size) * u64::from(self.ring_blocks)
    }

    fn capacity(&self) -> usize {
        self.block_size as usize - SLOT_HEADER
    }

    /// Reads the footer and index of a complete log. Returns false when there is none (the
    /// writer died) or it is damaged (recorded, and the log is then recovered by scanning).
    fn read_index(&mut self) -> bool {
        let start = self.frames_start();
        if self.file_len < start + FOOTER_LEN as u64 {
            return false;
        }
        let footer_offset = self.file_len - FOOTER_LEN as u64;
        let Ok(bytes) = self.read_at(footer_offset, FOOTER_LEN, "log footer") else {
            return false;
        };
        let magic_ok = bytes[..4] == FOOTER_MAGIC.to_le_bytes();
        let Some(body) = split_crc(&bytes) else {
            if magic_ok {
                self.damage.push(FormatError::Checksum {
                    path: self.path.clone(),
                    offset: footer_offset,
                    what: "log footer",
                });
            }
            return false;
        };
        let Ok(footer) = rkyv::access::<ArchivedFooter, rancor::Error>(body) else {
            return false;
        };
        if footer.magic.to_native() != FOOTER_MAGIC {
            return false;
        }
        let index_offset = footer.index_offset.to_native();
        let index_len = footer.index_len.to_native();
        let frames_end = footer.frames_end.to_native();
        let plausible = index_offset >= start
            && frames_end == index_offset
            && index_offset.checked_add(index_len) == Some(footer_offset);
        if !plausible {
            self.damage
                .push(self.corrupt(footer_offset, "log footer", "offsets do not add up"));
            return false;
        }
        self.footer_frames_end = Some(frames_end);
        let index_crc = footer.index_crc.to_native();
        let Ok(index_bytes) = self.read_at(index_offset, index_len as usize, "log index") else {
            return false;
        };
        if crc32c::crc32c(&index_bytes) != index_crc {
            self.damage.push(FormatError::Checksum {
                path: self.path.clone(),
                offset: index_offset,
                what: "log index",
            });
            return false;
        }
        let index = match rkyv::access::<ArchivedLogIndex, rancor::Error>(&index_bytes) {
            Ok(i) => i,
            Err(e) => {
                self.damage
                    .push(self.corrupt(index_offset, "log index", e.to_string()));
                return false;
            }
        };
        let mut blocks = Vec::with_capacity(index.entries.len());
        let mut next_event = 0u64;
        for (i, e) in index.entries.iter().enumerate() {
            let loc = BlockLoc {
                seq: e.block_seq.to_native(),
                first_event: e.first_event.to_native(),
                event_count: e.event_count.to_native(),
                source: Source::Frame {
                    offset: e.offset.to_native(),
                },
            };
            let in_frames = loc_offset(&loc) >= start && loc_offset(&loc) < frames_end;
            if loc.seq != i as u64 || loc.first_event != next_event || !in_frames {
                self.damage.push(self.corrupt(
                    index_offset,
                    "log index",
                    format!("entry {i} does not follow its predecessor"),
                ));
                return false;
            }
            next_event += u64::from(loc.event_count);
            blocks.push(loc);
        }
        if next_event != index.total_events.to_native() {
            self.damage.push(self.corrupt(
                index_offset,
                "log index",
                "event total does not match its entries",
            ));
            return false;
        }
        self.totals = Some(IndexTotals {
            kind_counts: index.kind_counts.iter().map(|c| c.to_native()).collect(),
            raw_bytes: index.raw_bytes.to_native(),
            stalls: index.stalls.to_native(),
            stall_nanos: index.stall_nanos.to_native(),
        });
        self.raw_bytes = index.raw_bytes.to_native();
        self.blocks = blocks;
        self.event_count = next_event;
        self.frame_bytes = frames_end - start;
        self.state = LogState::Complete;
        true
    }

    /// Rebuilds the block list of a log without a usable index: frames first, then the ring.
    fn recover(&mut self) {
        self.state = LogState::Recovered;
        self.blocks.clear();
        self.raw_bytes = 0;
        let start = self.frames_start();
        if self.file_len < start {
            // The writer sizes the file to hold the whole ring before it writes anything else.
            self.damage.push(FormatError::Truncated {
                path: self.path.clone(),
                what: "log ring",
                offset: HEADER_REGION,
                needed: start - HEADER_REGION,
                len: self.file_len,
            });
        }
        // A damaged index leaves a valid footer saying where the frames end.
        let frames_end = self.footer_frames_end.unwrap_or(self.file_len);
        let mut offset = start;
        let mut next_seq = 0u64;
        let mut next_event = 0u64;
        // Frames: stop at the first that is incomplete or damaged.
        let mut stopped_at: Option<FormatError> = None;
        while offset < frames_end {
            match self.read_frame_header(offset) {
                Ok(h) => {
                    if h.block_seq != next_seq || h.first_event != next_event {
                        stopped_at = Some(self.corrupt(
                            offset,
                            "frame header",
                            format!(
                                "block {} (first event {}) where block {next_seq} \
                                 (first event {next_event}) was expected",
                                h.block_seq, h.first_event
                            ),
                        ));
                        break;
                    }
                    self.blocks.push(BlockLoc {
                        seq: h.block_seq,
                        first_event: h.first_event,
                        event_count: h.event_count,
                        source: Source::Frame { offset },
                    });
                    self.raw_bytes += u64::from(h.raw_len);
                    next_seq += 1;
                    next_event += u64::from(h.event_count);
                    offset += FRAME_HEADER_LEN as u64 + u64::from(h.compressed_len);
                }
                Err(e) => {
                    stopped_at = Some(e);
                    break;
                }
            }
        }
        self.frame_bytes = offset.saturating_sub(start);
        // Ring: the blocks after the last good frame, in sequence order.
        let mut ring: Vec<(u64, u32, BlockLoc)> = Vec::new();
        let mut ring_damage = None;
        let mut ring_empty = true;
        for slot in 0..self.ring_blocks {
            match self.read_slot(slot) {
                Ok(Some(loc)) => {
                    ring_empty = false;
                    if loc.seq >= next_seq {
                        ring.push((loc.seq, slot, loc));
                    }
                }
                Ok(None) => {}
                Err(e) => {
                    ring_damage.get_or_insert(e);
                }
            }
        }
        ring.sort_by_key(|(seq, _, _)| *seq);
        let mut took_ring = false;
        let mut gap = None;
        for (seq, slot, loc) in ring {
            if seq != next_seq || loc.first_event != next_event {
                gap = Some(self.corrupt(
                    self.slot_offset(slot) + 8,
                    "ring block header",
                    format!(
                        "block {seq} (first event {}) where block {next_seq} \
                         (first event {next_event}) was expected",
                        loc.first_event
                    ),
                ));
                break;
            }
            took_ring = true;
            if let Source::Ring { len, .. } = loc.source {
                self.raw_bytes += u64::from(len);
            }
            next_seq += 1;
            next_event += u64::from(loc.event_count);
            self.blocks.push(loc);
        }
        // The ring holds every block whose frame is not complete (a slot is reused only after
        // its frame is written), so it picks up where a frame torn by a crash stopped the scan.
        // A stop it does not explain, or a block it cannot follow, is damage.
        let past_the_frames =
            stopped_at.is_some() && !took_ring && ring_empty && !self.frame_starts_at(offset);
        if past_the_frames {
            // What a closed log has after its frames: an index and a footer, one of which is
            // cut or damaged. The frames are whole; say so once, where the index starts.
            if self.damage.is_empty() {
                self.damage.push(self.corrupt(
                    offset,
                    "log index",
                    "the frames end here and what follows is no frame: \
                     the log's index or footer is cut or damaged",
                ));
            }
        } else if let Some(e) = stopped_at
            && !took_ring
        {
            self.damage.push(e);
        } else if let Some(e) = gap {
            self.damage.push(e);
        } else if ring_empty && self.footer_frames_end.is_none() {
            // A writer keeps its current block in the ring from creation until it closes the
            // log, and closing writes the footer before it empties the ring.
            self.damage.push(self.corrupt(
                self.file_len,
                "log footer",
                "missing, and the ring holds no block as only a closed log's does",
            ));
        }
        self.damage.extend(ring_damage);
        self.event_count = next_event;
        self.trim_unfinished_tail();
    }

    /// Counts the events of the last block that really decode: a crash can leave a spanned
    /// record without its end, or a damaged tail.
    fn trim_unfinished_tail(&mut self) {
        let Some(last) = self.blocks.iter().rposition(|b| b.event_count > 0) else {
            return;
        };
        let first = self.blocks[last].first_event;
        let mut decoded = 0u64;
        let mut failure = None;
        // Decode to the end of the data, not just to the claimed count: a block holding more or
        // fewer records than its commit word says is damaged.
        let mut events = self.iter_from_block(last, first, 0);
        events.limit = u64::MAX;
        for item in events {
            match item {
                Ok(_) => decoded += 1,
                Err(e) => {
                    failure = Some(e);
                    break;
                }
            }
        }
        self.damage.extend(failure);
        self.event_count = self.event_count.min(first + decoded);
    }

    /// Whether the bytes at `offset` start with a frame's magic (as far as the file goes).
    fn frame_starts_at(&self, offset: u64) -> bool {
        let magic = FRAME_MAGIC.to_le_bytes();
        let available = self.file_len.saturating_sub(offset).min(magic.len() as u64) as usize;
        match self.read_at(offset, available, "frame header") {
            Ok(bytes) => bytes[..] == magic[..available],
            Err(_) => false,
        }
    }

    /// The compressed payload of the frame at `offset` whose header is `h`, checked against
    /// the header's checksum; with the payload's own offset, for errors about its contents.
    fn checked_frame_payload(&self, offset: u64, h: &FrameInfo) -> Result<(u64, Vec<u8>)> {
        let payload_offset = offset + FRAME_HEADER_LEN as u64;
        let payload = self.read_at(payload_offset, h.compressed_len as usize, "frame payload")?;
        if crc32c::crc32c(&payload) != h.payload_crc {
            return Err(FormatError::Checksum {
                path: self.path.clone(),
                offset: payload_offset,
                what: "frame payload",
            });
        }
        Ok((payload_offset, payload))
    }

    fn read_frame_header(&self, offset: u64) -> Result<FrameInfo> {
        let bytes = self.read_at(offset, FRAME_HEADER_LEN, "frame header")?;
        let body = split_crc(&bytes).ok_or_else(|| FormatError::Checksum {
            path: self.path.clone(),
            offset,
            what: "frame header",
        })?;
        let h = rkyv::access::<ArchivedFrameHeader, rancor::Error>(body)
            .map_err(|e| self.corrupt(offset, "frame header", e.to_string()))?;
        if h.magic.to_native() != FRAME_MAGIC {
            return Err(self.corrupt(offset, "frame header", "bad magic"));
        }
        let info = FrameInfo {
            block_seq: h.block_seq.to_native(),
            first_event: h.first_event.to_native(),
            event_count: h.event_count.to_native(),
            raw_len: h.raw_len.to_native(),
            compressed_len: h.compressed_len.to_native(),
            continuation: h.continuation.to_native(),
            start_unix_ns: h.start_unix_ns.to_native(),
            payload_crc: h.payload_crc.to_native(),
        };
        if info.raw_len as usize > self.capacity() || info.continuation > info.raw_len {
            return Err(self.corrupt(
                offset,
                "frame header",
                format!(
                    "raw length {} / continuation {} exceed the block capacity {}",
                    info.raw_len,
                    info.continuation,
                    self.capacity()
                ),
            ));
        }
        let end = offset + FRAME_HEADER_LEN as u64 + u64::from(info.compressed_len);
        if end > self.file_len {
            return Err(FormatError::Truncated {
                path: self.path.clone(),
                what: "frame",
                offset,
                needed: end - offset,
                len: self.file_len,
            });
        }
        Ok(info)
    }

    fn slot_offset(&self, slot: u32) -> u64 {
        HEADER_REGION + u64::from(slot) * u64::from(self.block_size)
    }

    /// The block in a ring slot, if the slot holds one. A slot that claims data (a non-zero
    /// commit word) under a damaged header is an error.
    fn read_slot(&self, slot: u32) -> Result<Option<BlockLoc>> {
        let offset = self.slot_offset(slot);
        let Ok(bytes) = self.read_at(offset, 8 + BLOCK_INFO_LEN + 4, "ring slot") else {
            // Past the end of a truncated file, which is reported once for the whole ring.
            return Ok(None);
        };
        let commit = u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes"));
        let info = split_crc(&bytes[8..])
            .and_then(|body| rkyv::access::<ArchivedBlockInfo, rancor::Error>(body).ok())
            .filter(|info| info.magic.to_native() == BLOCK_MAGIC);
        let Some(info) = info else {
            // A slot never used, or reused by a writer that died before its first record.
            if commit == 0 {
                return Ok(None);
            }
            return Err(FormatError::Checksum {
                path: self.path.clone(),
                offset: offset + 8,
                what: "ring block header",
            });
        };
        let len = (commit & 0xffff_ffff) as u32;
        let events = (commit >> 32) as u32;
        if len as usize > self.capacity()
            || info.continuation.to_native() as usize > self.capacity()
        {
            return Err(self.corrupt(
                offset,
                "ring slot",
                format!(
                    "commit word says {len} bytes, header says {} continue a record; \
                     the block holds {}",
                    info.continuation,
                    self.capacity()
                ),
            ));
        }
        Ok(Some(BlockLoc {
            seq: info.seq.to_native(),
            first_event: info.first_event.to_native(),
            event_count: events,
            source: Source::Ring { slot, len },
        }))
    }

    /// Reads and checks block `loc`, decompressing it into `spare` when it is compressed.
    fn load_block(&self, loc: &BlockLoc, spare: Vec<u8>) -> Result<LoadedBlock> {
        match loc.source {
            Source::Frame { offset } => {
                let h = self.read_frame_header(offset)?;
                if (h.block_seq, h.first_event, h.event_count)
                    != (loc.seq, loc.first_event, loc.event_count)
                {
                    return Err(self.corrupt(
                        offset,
                        "frame header",
                        format!(
                            "block {} (events {}+{}) where the index says block {} \
                             (events {}+{})",
                            h.block_seq,
                            h.first_event,
                            h.event_count,
                            loc.seq,
                            loc.first_event,
                            loc.event_count
                        ),
                    ));
                }
                let (payload_offset, payload) = self.checked_frame_payload(offset, &h)?;
                let data = decompress(&payload, h.raw_len as usize, spare).map_err(|e| {
                    self.corrupt(payload_offset, "frame payload", format!("zstd: {e}"))
                })?;
                if data.len() != h.raw_len as usize {
                    return Err(self.corrupt(
                        payload_offset,
                        "frame payload",
                        format!(
                            "decompressed to {} bytes, header says {}",
                            data.len(),
                            h.raw_len
                        ),
                    ));
                }
                Ok(LoadedBlock {
                    seq: h.block_seq,
                    offset,
                    continuation: h.continuation as usize,
                    data,
                })
            }
            Source::Ring { slot, len } => {
                let offset = self.slot_offset(slot);
                let info = self.read_at(offset + 8, BLOCK_INFO_LEN + 4, "ring slot")?;
                let body = split_crc(&info).ok_or_else(|| FormatError::Checksum {
                    path: self.path.clone(),
                    offset: offset + 8,
                    what: "ring block header",
                })?;
                let info = rkyv::access::<ArchivedBlockInfo, rancor::Error>(body)
                    .map_err(|e| self.corrupt(offset + 8, "ring block header", e.to_string()))?;
                if (info.seq.to_native(), info.first_event.to_native())
                    != (loc.seq, loc.first_event)
                {
                    // The slot was reused since the log was opened: its writer is still alive.
                    return Err(self.corrupt(
                        offset + 8,
                        "ring block header",
                        format!(
                            "the slot now holds block {}, not block {}",
                            info.seq, loc.seq
                        ),
                    ));
                }
                let data = self.read_at(offset + SLOT_HEADER as u64, len as usize, "ring block")?;
                Ok(LoadedBlock {
                    seq: info.seq.to_native(),
                    offset,
                    continuation: (info.continuation.to_native() as usize).min(data.len()),
                    data,
                })
            }
            Source::Pending => Ok(LoadedBlock {
                seq: loc.seq,
                offset: PENDING_OFFSET,
                continuation: 0,
                data: self
                    .pending
                    .as_ref()
                    .map(|(_, data)| data.clone())
                    .unwrap_or_default(),
            }),
        }
    }

    // -----------------------------------------------------------------------------------------
    // Public queries

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Which process the log belongs to.
    pub fn identity(&self) -> &LogIdentity {
        &self.identity
    }

    /// Numbers the log's processes from `base` on: from now on its identity and every event
    /// it returns name process `base + p` for the `p` the log holds (and objects so created).
    /// What a recording of several OS processes does with each node's logs.
    pub fn rebase(&mut self, base: u32) {
        let shift = base - self.base;
        self.identity.process_id.0 += shift;
        if let Some(parent) = &mut self.identity.parent {
            parent.0 += shift;
        }
        self.base = base;
        self.recent
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
    }

    /// When the writer created the log (Unix nanoseconds).
    pub fn created_unix_ns(&self) -> u64 {
        self.created_unix_ns
    }

    /// Number of readable events.
    pub fn event_count(&self) -> u64 {
        self.event_count
    }

    /// Whether the log was closed cleanly or recovered after its writer died.
    pub fn state(&self) -> LogState {
        self.state
    }

    /// Damage found while opening: the events before it are readable.
    pub fn damage(&self) -> &[FormatError] {
        &self.damage
    }

    /// Totals stored in a complete log's index.
    pub fn totals(&self) -> Option<&IndexTotals> {
        self.totals.as_ref()
    }

    /// Bytes of compressed frames (headers included).
    pub fn frame_bytes(&self) -> u64 {
        self.frame_bytes
    }

    /// Bytes of encoded events, before compression.
    pub fn raw_bytes(&self) -> u64 {
        self.raw_bytes
    }

    /// Bytes of events recovered from the ring (not yet compressed when the writer died).
    pub fn ring_bytes(&self) -> u64 {
        self.blocks
            .iter()
            .map(|b| match b.source {
                Source::Ring { len, .. } => u64::from(len),
                Source::Frame { .. } | Source::Pending => 0,
            })
            .sum()
    }

    /// Checks the checksum of every compressed frame's payload without decompressing it, and
    /// returns the first mismatch. Opening checks only the structures it reads (headers, index,
    /// footer); a command that answers from a log calls this so that a damaged payload is found
    /// before it is believed. Blocks still in the ring have no checksum (docs/format.md §5).
    pub fn verify_payloads(&self) -> Result<()> {
        for loc in &self.blocks {
            if let Source::Frame { offset } = loc.source {
                let h = self.read_frame_header(offset)?;
                self.checked_frame_payload(offset, &h)?;
            }
            crate::progress::advance(u64::from(loc.event_count));
        }
        Ok(())
    }

    /// Number of blocks.
    pub fn block_count(&self) -> usize {
        self.blocks.len()
    }

    /// Counts the events of each kind (from the index when the log has one, else by reading).
    pub fn kind_counts(&self) -> Result<Vec<(EventKind, u64)>> {
        // A log of an older build counts fewer kinds: it cannot hold the kinds added since,
        // so their counts are zero.
        if let Some(t) = &self.totals
            && t.kind_counts.len() <= EventKind::ALL.len()
        {
            let counted = t.kind_counts.iter().copied().chain(std::iter::repeat(0));
            let mut counts: Vec<(EventKind, u64)> =
                EventKind::ALL.iter().copied().zip(counted).collect();
            // The index counts what the writer appended; the pending access came after.
            if self.pending.is_some()
                && let Some((_, n)) = counts.iter_mut().find(|(k, _)| *k == EventKind::Atomic)
            {
                *n += 1;
            }
            return Ok(counts);
        }
        let mut counts = vec![0u64; EventKind::ALL.len()];
        for item in self.events() {
            let (_, e) = item?;
            counts[e.kind().index()] += 1;
        }
        Ok(EventKind::ALL.iter().copied().zip(counts).collect())
    }

    /// All events in order, with their indexes.
    pub fn events(&self) -> Events<'_> {
        self.iter_from_block(0, 0, 0)
    }

    /// The index of the first event that starts in each block, in order: where a reader can
    /// begin ([`LogReader::events_from`]) without decoding what comes before.
    pub fn block_starts(&self) -> impl Iterator<Item = u64> + '_ {
        self.blocks.iter().map(|b| b.first_event)
    }

    /// Events from index `k` on. Finds the block by binary search and decompresses only it
    /// (and the blocks after it, as the iteration proceeds).
    pub fn events_from(&self, k: u64) -> Result<Events<'_>> {
        let (block, first) = self.block_of(k)?;
        Ok(self.iter_from_block(block, first, k - first))
    }

    /// [`events_from`](Self::events_from), owning the reader as
    /// [`into_events`](Self::into_events) does.
    pub fn into_events_from(self, k: u64) -> Result<Events<'static>> {
        let (block, first) = self.block_of(k)?;
        let count = self.event_count;
        Ok(Events::start(
            ReaderRef::Owned(Box::new(self)),
            block,
            first,
            k - first,
            count,
        ))
    }

    /// The block event `k` starts in, and that block's first event.
    fn block_of(&self, k: u64) -> Result<(usize, u64)> {
        if k >= self.event_count {
            return Err(FormatError::EventOutOfRange {
                path: self.path.clone(),
                index: k,
                count: self.event_count,
            });
        }
        let block = self
            .blocks
            .partition_point(|b| b.first_event + u64::from(b.event_count) <= k);
        Ok((block, self.blocks[block].first_event))
    }

    /// Event number `k`. Its block is decoded once and kept with the few decoded last, so
    /// looking up events near each other costs one decompression per block.
    pub fn get(&self, k: u64) -> Result<Event> {
        let out_of_range = || FormatError::EventOutOfRange {
            path: self.path.clone(),
            index: k,
            count: self.event_count,
        };
        if k >= self.event_count {
            return Err(out_of_range());
        }
        let block = self
            .blocks
            .partition_point(|b| b.first_event + u64::from(b.event_count) <= k);
        let at = usize::try_from(k - self.blocks[block].first_event).map_err(|_| out_of_range())?;
        if let Ok(events) = self.decoded_block(block) {
            return events.get(at).cloned().ok_or_else(out_of_range);
        }
        // Damage later in the block: the events before it stay readable, one at a time.
        match self.events_from(k)?.next() {
            Some(Ok((_, e))) => Ok(e),
            Some(Err(e)) => Err(e),
            None => Err(out_of_range()),
        }
    }

    /// The events of block `block`, from the recent ones or decoded now.
    fn decoded_block(&self, block: usize) -> Result<Arc<[Event]>> {
        let mut recent = self.recent.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = recent.iter().position(|(b, _)| *b == block) {
            let hit = recent.remove(i);
            let events = Arc::clone(&hit.1);
            recent.insert(0, hit);
            return Ok(events);
        }
        let loc = &self.blocks[block];
        let events: Arc<[Event]> = self
            .iter_from_block(block, loc.first_event, 0)
            .take(loc.event_count as usize)
            .map(|item| item.map(|(_, e)| e))
            .collect::<Result<_>>()?;
        recent.truncate(RECENT_BLOCKS - 1);
        recent.insert(0, (block, Arc::clone(&events)));
        Ok(events)
    }

    /// The wall-clock time each block was opened: `(first event, Unix nanoseconds)`.
    pub fn block_times(&self) -> Result<Vec<(u64, u64)>> {
        let mut times = Vec::with_capacity(self.blocks.len());
        for b in &self.blocks {
            let opened = match b.source {
                Source::Frame { offset } => self.read_frame_header(offset)?.start_unix_ns,
                Source::Ring { slot, .. } => {
                    let offset = self.slot_offset(slot) + 8;
                    let bytes = self.read_at(offset, BLOCK_INFO_LEN + 4, "ring slot")?;
                    let body = split_crc(&bytes).ok_or_else(|| FormatError::Checksum {
                        path: self.path.clone(),
                        offset,
                        what: "ring block header",
                    })?;
                    let info = rkyv::access::<ArchivedBlockInfo, rancor::Error>(body)
                        .map_err(|e| self.corrupt(offset, "ring block header", e.to_string()))?;
                    info.start_unix_ns.to_native()
                }
                // Made after the last block opened, at a time not recorded.
                Source::Pending => times.last().map_or(self.created_unix_ns, |&(_, t)| t),
            };
            times.push((b.first_event, opened));
        }
        Ok(times)
    }

    /// All events in order, with their indexes, owning the reader: the log's file closes when
    /// the iteration is dropped. For a reader that lives as long as one consumer, such as a
    /// replayed process's backend, without leaking one open file per process.
    pub fn into_events(self) -> Events<'static> {
        let count = self.event_count;
        Events::start(ReaderRef::Owned(Box::new(self)), 0, 0, 0, count)
    }

    fn iter_from_block(&self, block: usize, first: u64, skip: u64) -> Events<'_> {
        Events::start(
            ReaderRef::Borrowed(self),
            block,
            first,
            skip,
            self.event_count,
        )
    }

    fn record_error(&self, block: &LoadedBlock, e: DecodeError) -> FormatError {
        FormatError::Record {
            path: self.path.clone(),
            block_seq: block.seq,
            block_offset: block.offset,
            position: e.position,
            detail: e.detail,
        }
    }
}

fn loc_offset(loc: &BlockLoc) -> u64 {
    match loc.source {
        Source::Frame { offset } => offset,
        Source::Ring { .. } => 0,
        Source::Pending => PENDING_OFFSET,
    }
}

#[derive(Debug)]
struct FrameInfo {
    block_seq: u64,
    first_event: u64,
    event_count: u32,
    raw_len: u32,
    compressed_len: u32,
    continuation: u32,
    start_unix_ns: u64,
    payload_crc: u32,
}

/// Iterator over the events of a log, yielding `(index, event)`.
///
/// After an error it yields nothing more.
#[derive(Debug)]
pub struct Events<'r> {
    reader: ReaderRef<'r>,
    block_index: usize,
    block: Option<LoadedBlock>,
    pos: usize,
    decoder: Decoder,
    next_index: u64,
    skip: u64,
    /// Index at which the iteration ends.
    limit: u64,
    done: bool,
}

/// The reader an iteration reads from: borrowed, or its own ([`LogReader::into_events`]).
#[derive(Debug)]
enum ReaderRef<'r> {
    Borrowed(&'r LogReader),
    Owned(Box<LogReader>),
}

impl std::ops::Deref for ReaderRef<'_> {
    type Target = LogReader;

    fn deref(&self) -> &LogReader {
        match self {
            ReaderRef::Borrowed(r) => r,
            ReaderRef::Owned(r) => r,
        }
    }
}

impl<'r> Events<'r> {
    fn start(reader: ReaderRef<'r>, block: usize, first: u64, skip: u64, limit: u64) -> Self {
        Events {
            reader,
            block_index: block,
            block: None,
            pos: 0,
            decoder: Decoder::default(),
            next_index: first,
            skip,
            limit,
            done: false,
        }
    }
}

impl Events<'_> {
    /// Ends the iteration before event `end`.
    pub fn until(mut self, end: u64) -> Self {
        self.limit = self.limit.min(end);
        self
    }

    /// Leaves the user values of the events empty: payloads, prelogs, postlogs, mark and lock
    /// values (socket data stays). For readers that keep none of them, such as an analysis's
    /// trace; it saves copying every value out of the log.
    pub fn without_values(mut self) -> Self {
        self.decoder.skip_values();
        self
    }

    fn fail(&mut self, e: FormatError) -> Option<Result<(u64, Event)>> {
        self.done = true;
        Some(Err(e))
    }

    /// Loads block `index` and positions the cursor after its continuation bytes.
    fn enter_block(&mut self, index: usize) -> Result<()> {
        let loc = &self.reader.blocks[index];
        let spare = self.block.take().map(|b| b.data).unwrap_or_default();
        let loaded = self.reader.load_block(loc, spare)?;
        crate::progress::advance(u64::from(loc.event_count));
        self.block_index = index;
        self.pos = loaded.continuation;
        self.decoder.reset();
        self.block = Some(loaded);
        Ok(())
    }

    /// Collects a spanned record: its start in the current block, the rest from the
    /// continuation bytes of the following blocks. Returns `None` when the log ends first.
    fn gather_span(&mut self, total: usize, start: usize) -> Result<Option<Vec<u8>>> {
        let block = self
            .block
            .as_ref()
            .expect("a span is found in a loaded block");
        let mut record = block.data[start..].to_vec();
        while record.len() < total {
            let next = self.block_index + 1;
            if next >= self.reader.blocks.len() {
                return Ok(None);
            }
            self.enter_block(next)?;
            let block = self.block.as_ref().expect("just loaded");
            let take = block.continuation.min(total - record.len());
            record.extend_from_slice(&block.data[..take]);
            // A writer killed between opening the next block in the ring and committing the
            // span's piece there leaves that block empty: the record was never appended.
            let opened_not_written = next + 1 == self.reader.blocks.len()
                && matches!(self.reader.blocks[next].source, Source::Ring { len: 0, .. });
            if take == 0 && opened_not_written {
                return Ok(None);
            }
            if take == 0 {
                return Err(self.reader.record_error(
                    block,
                    DecodeError {
                        position: 0,
                        detail: "block does not continue the record spanning into it".into(),
                    },
                ));
            }
        }
        if record.len() != total {
            let block = self.block.as_ref().expect("loaded");
            return Err(self.reader.record_error(
                block,
                DecodeError {
                    position: 0,
                    detail: format!(
                        "spanned record has {} bytes, expected {total}",
                        record.len()
                    ),
                },
            ));
        }
        Ok(Some(record))
    }
}

impl Iterator for Events<'_> {
    type Item = Result<(u64, Event)>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.done || self.next_index >= self.limit {
                self.done = true;
                return None;
            }
            if self.block.is_none() {
                if self.block_index >= self.reader.blocks.len() {
                    self.done = true;
                    return None;
                }
                if let Err(e) = self.enter_block(self.block_index) {
                    return self.fail(e);
                }
            }
            let block = self.block.as_ref().expect("loaded above");
            let record_start = self.pos;
            let step = match self.decoder.next(&block.data, &mut self.pos) {
                Ok(step) => step,
                Err(e) => {
                    let e = self.reader.record_error(block, e);
                    return self.fail(e);
                }
            };
            // The block's header counts its events; a different number means damage the
            // checksums cannot see (a ring block's data has none), and the events would be
            // numbered wrongly.
            let loc = &self.reader.blocks[self.block_index];
            let end = loc.first_event + u64::from(loc.event_count);
            let miscount = match step {
                None => self.next_index != end,
                Some(_) => self.next_index >= end,
            };
            if miscount {
                let (position, what) = match step {
                    None => (block.data.len(), "fewer"),
                    Some(_) => (record_start, "more"),
                };
                let e = self.reader.record_error(
                    block,
                    DecodeError {
                        position,
                        detail: format!(
                            "the block holds {what} events than the {} its header counts",
                            loc.event_count
                        ),
                    },
                );
                return self.fail(e);
            }
            let event = match step {
                None => {
                    self.block = None;
                    self.block_index += 1;
                    continue;
                }
                Some(Step::Event(e)) => e,
                Some(Step::Span { total, start }) => {
                    let record = match self.gather_span(total, start) {
                        Ok(Some(r)) => r,
                        Ok(None) => {
                            self.done = true;
                            return None;
                        }
                        Err(e) => return self.fail(e),
                    };
                    match Decoder::default().whole(&record) {
                        Ok(e) => e,
                        Err(e) => {
                            let block = self.block.as_ref().expect("loaded");
                            let e = self.reader.record_error(block, e);
                            return self.fail(e);
                        }
                    }
                }
            };
            let index = self.next_index;
            self.next_index += 1;
            if self.skip > 0 {
                self.skip -= 1;
                continue;
            }
            let mut event = event;
            event.rebase(self.reader.base);
            return Some(Ok((index, event)));
        }
    }
}
