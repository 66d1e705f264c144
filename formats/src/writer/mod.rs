//! The append-only writer of one process's log.
//!
//! Each record is encoded into a scratch buffer and copied into the current raw block of the
//! memory-mapped ring, then the block's commit word is advanced; from that moment the record
//! survives the death of the process. Full blocks go to the background compressor; the writer
//! continues in the next free slot, and when none is free it waits (backpressure) and counts the
//! stall — records are never dropped. Memory is the ring's fixed size however long the run.

mod compressor;
mod ring;

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender, bounded};

use self::compressor::Job;
use self::ring::Ring;
use crate::codec::{Encoder, TAG_SPAN, put_varint};
use crate::error::{FormatError, Result};
use crate::event::{Borrowed, Event, EventKind};
use crate::ids::ProcessId;
use crate::layout::{
    BLOCK_ENDS_IN_SPAN, BLOCK_MAGIC, BlockInfo, FILE_MAGIC, FOOTER_MAGIC, FORMAT_VERSION,
    FileHeader, Footer, HEADER_PROLOGUE, HEADER_REGION, IndexEntry, LogIndex, SLOT_HEADER, archive,
    archive_with_crc,
};
use crate::pending::{PENDING_OFFSET, PendingAccess, PendingSlot};

/// How a log is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriterOptions {
    /// Size of a raw block (and a ring slot), a multiple of 4096.
    pub block_size: u32,
    /// Slots in the ring.
    pub ring_blocks: u32,
    /// `fdatasync` every frame before its slot is reused, and the file at close.
    pub fsync: bool,
    /// zstd compression level.
    pub level: i32,
}

impl Default for WriterOptions {
    fn default() -> Self {
        WriterOptions {
            block_size: 128 * 1024,
            ring_blocks: 8,
            fsync: false,
            level: 3,
        }
    }
}

/// Who a log belongs to; stored in the log's header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogIdentity {
    /// The logical process.
    pub process_id: ProcessId,
    /// The process that spawned it.
    pub parent: Option<ProcessId>,
    /// Its name.
    pub name: String,
    /// The OS process it ran in.
    pub os_pid: u32,
}

/// What a writer did, reported when it closes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriterStats {
    /// Events written.
    pub events: u64,
    /// Bytes of encoded events.
    pub raw_bytes: u64,
    /// Bytes of frames (headers and compressed payloads).
    pub compressed_bytes: u64,
    /// Blocks sealed.
    pub blocks: u64,
    /// Times the writer waited for the compressor to free a slot.
    pub stalls: u64,
    /// Total time spent waiting.
    pub stall_time: Duration,
    /// Events by kind, in [`EventKind::ALL`] order.
    pub kind_counts: [u64; EventKind::ALL.len()],
}

impl Default for WriterStats {
    fn default() -> Self {
        WriterStats {
            events: 0,
            raw_bytes: 0,
            compressed_bytes: 0,
            blocks: 0,
            stalls: 0,
            stall_time: Duration::ZERO,
            kind_counts: [0; EventKind::ALL.len()],
        }
    }
}

/// State shared between a writer and the compressor thread.
#[derive(Debug)]
pub(crate) struct LogShared {
    pub(crate) path: PathBuf,
    pub(crate) file: File,
    pub(crate) ring: Ring,
    pub(crate) fsync: bool,
    pub(crate) level: i32,
    pub(crate) frames: Mutex<FrameState>,
    pub(crate) free_slots: Sender<u32>,
    failed: AtomicBool,
    failure: Mutex<Option<FormatError>>,
}

/// Where the next frame goes and what has been written.
#[derive(Debug)]
pub(crate) struct FrameState {
    pub(crate) frames_end: u64,
    pub(crate) compressed_bytes: u64,
    pub(crate) entries: Vec<IndexEntry>,
}

impl LogShared {
    /// Records that the compressor could not write a frame for this log.
    pub(crate) fn fail(&self, error: FormatError) {
        let _ = FIRST_FAILURE.set(error.to_string());
        let mut failure = self.failure.lock().unwrap_or_else(|p| p.into_inner());
        failure.get_or_insert(error);
        self.failed.store(true, Ordering::Release);
    }

    /// Whether a frame of this log could not be written.
    pub(crate) fn has_failed(&self) -> bool {
        self.failed.load(Ordering::Acquire)
    }

    fn take_failure(&self) -> Option<FormatError> {
        if !self.failed.load(Ordering::Acquire) {
            return None;
        }
        self.failure
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
            .or_else(|| {
                Some(FormatError::Io {
                    path: self.path.clone(),
                    action: "append a frame",
                    source: std::io::Error::other("an earlier frame write failed"),
                })
            })
    }
}

/// The block being filled.
#[derive(Debug)]
struct OpenBlock {
    slot: u32,
    seq: u64,
    first_event: u64,
    continuation: u32,
    flags: u32,
    start_unix_ns: u64,
    len: usize,
    events: u32,
}

/// Appends events to one process's log.
#[derive(Debug)]
pub struct LogWriter {
    shared: Arc<LogShared>,
    free_slots: Receiver<u32>,
    encoder: Encoder,
    scratch: Vec<u8>,
    block: OpenBlock,
    next_event: u64,
    stats: WriterStats,
    closed: bool,
    /// The record of an access made and not yet appended ([`crate::pending`]).
    pending: PendingSlot,
    /// Whether `pending` is set.
    pending_set: bool,
}

fn unix_nanos() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

impl LogWriter {
    /// Sizes the new, still unnamed file of the log `path` and writes its header. Errors name
    /// `path`, the log the user will look for.
    fn prepare_file(
        file: File,
        path: &Path,
        identity: &LogIdentity,
        options: &WriterOptions,
    ) -> Result<File> {
        let ring_len = u64::from(options.block_size) * u64::from(options.ring_blocks);
        reserve(&file, path, HEADER_REGION + ring_len)?;
        let header = FileHeader {
            process_id: identity.process_id.0,
            parent: identity.parent.map(|p| p.0),
            name: identity.name.clone(),
            block_size: options.block_size,
            ring_blocks: options.ring_blocks,
            created_unix_ns: unix_nanos(),
            os_pid: identity.os_pid,
        };
        let archived = archive(&header);
        let mut region = Vec::with_capacity(HEADER_PROLOGUE + archived.len());
        region.extend_from_slice(&FILE_MAGIC);
        region.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        region.extend_from_slice(&(archived.len() as u32).to_le_bytes());
        region.extend_from_slice(&crc32c::crc32c(&archived).to_le_bytes());
        region.extend_from_slice(&archived);
        if region.len() as u64 > PENDING_OFFSET {
            return Err(FormatError::Corrupt {
                path: path.to_owned(),
                offset: 0,
                what: "log header",
                detail: format!("process name too long ({} bytes)", identity.name.len()),
            });
        }
        file.write_all_at(&region, 0)
            .map_err(|e| FormatError::io(path, "write log header", e))?;
        if options.fsync {
            file.sync_all()
                .map_err(|e| FormatError::io(path, "fsync log header", e))?;
        }
        Ok(file)
    }

    /// Creates the log file at `path` (which must not exist) and opens its first block.
    ///
    /// The file is prepared under a hidden name and linked to `path` once its header is
    /// written and its first block is open in the ring, so a process killed while creating its
    /// log leaves no headerless log behind (readers would take one for a damaged log), and one
    /// killed before its first event leaves a log of no events (a process that never started),
    /// never one whose ring is empty without a footer, as only a closed log's is.
    pub fn create(path: &Path, identity: &LogIdentity, options: WriterOptions) -> Result<Self> {
        let valid_block = options.block_size >= 4096 && options.block_size.is_multiple_of(4096);
        if !valid_block || options.ring_blocks < 2 {
            return Err(FormatError::Corrupt {
                path: path.to_owned(),
                offset: 0,
                what: "writer options",
                detail: format!(
                    "block size must be a multiple of 4096 and the ring at least 2 blocks \
                     (got {} bytes, {} blocks)",
                    options.block_size, options.ring_blocks
                ),
            });
        }
        let tmp = crate::private::temporary_sibling(path);
        let file = crate::private::create_file(&tmp, "create log")?;
        Self::prepare(file, path, identity, options)
            .and_then(|writer| {
                crate::private::publish_new(&tmp, path, "create log").map(|()| writer)
            })
            .inspect_err(|_| {
                let _ = std::fs::remove_file(&tmp);
            })
    }

    /// The writer of `file`, sized and given its header, with its first block open in the
    /// ring; `path` is where it will be published.
    fn prepare(
        file: File,
        path: &Path,
        identity: &LogIdentity,
        options: WriterOptions,
    ) -> Result<Self> {
        let file = Self::prepare_file(file, path, identity, &options)?;
        let ring_len = u64::from(options.block_size) * u64::from(options.ring_blocks);
        let ring = Ring::map(&file, path, options.block_size, options.ring_blocks)?;
        let pending = PendingSlot::map(&file, path)?;

        let (free_tx, free_rx) = bounded(options.ring_blocks as usize);
        for slot in 1..options.ring_blocks {
            free_tx.send(slot).expect("the channel holds every slot");
        }
        let shared = Arc::new(LogShared {
            path: path.to_owned(),
            file,
            ring,
            fsync: options.fsync,
            level: options.level,
            frames: Mutex::new(FrameState {
                frames_end: HEADER_REGION + ring_len,
                compressed_bytes: 0,
                entries: Vec::new(),
            }),
            free_slots: free_tx,
            failed: AtomicBool::new(false),
            failure: Mutex::new(None),
        });
        let mut writer = LogWriter {
            shared,
            free_slots: free_rx,
            encoder: Encoder::default(),
            scratch: Vec::with_capacity(256),
            block: OpenBlock {
                slot: 0,
                seq: 0,
                first_event: 0,
                continuation: 0,
                flags: 0,
                start_unix_ns: 0,
                len: 0,
                events: 0,
            },
            next_event: 0,
            stats: WriterStats::default(),
            closed: false,
            pending,
            pending_set: false,
        };
        writer.start_block(0, 0, 0);
        Ok(writer)
    }

    /// The file being written.
    pub fn path(&self) -> &Path {
        &self.shared.path
    }

    /// Events appended so far; the index the next event will get.
    pub fn events(&self) -> u64 {
        self.next_event
    }

    /// Events a reader will find in the log if it ends now: those appended, and the access
    /// [`pend`](Self::pend)ing if there is one.
    pub fn readable_events(&self) -> u64 {
        self.next_event + u64::from(self.pending_set)
    }

    /// Stalls so far: how often the writer waited for a free slot.
    pub fn stalls(&self) -> u64 {
        self.stats.stalls
    }

    /// Records `access`, made and about to be appended, so that it survives the death of
    /// this process before its event is in the log ([`crate::pending`]). The next successful
    /// [`append`](Self::append) clears it. A few stores to a mapped page, no encoding: the
    /// caller holds the atomic's version word meanwhile.
    pub fn pend(&mut self, access: &PendingAccess) {
        self.pending.set(access);
        self.pending_set = true;
    }

    /// Appends one event. When this returns, the event is in the mapped file and survives the
    /// death of this process.
    pub fn append(&mut self, event: &Event<Borrowed<'_>>) -> Result<()> {
        self.append_record(event)?;
        if self.pending_set {
            self.pending.clear();
            self.pending_set = false;
        }
        Ok(())
    }

    fn append_record(&mut self, event: &Event<Borrowed<'_>>) -> Result<()> {
        self.scratch.clear();
        self.encoder.encode(event, &mut self.scratch);
        if self.scratch.len() > self.remaining() {
            let fresh = self.block.len == 0;
            if !fresh {
                self.seal_and_advance(0)?;
                self.scratch.clear();
                self.encoder.encode(event, &mut self.scratch);
            }
            if self.scratch.len() > self.remaining() {
                // Counted first: the blocks the span spills into start at the event after it.
                self.count(event.kind());
                return self.append_span();
            }
        }
        let ring = &self.shared.ring;
        ring.write_data(self.block.slot, self.block.len, &self.scratch);
        self.block.len += self.scratch.len();
        self.block.events += 1;
        ring.commit(self.block.slot, self.block.events, self.block.len);
        self.stats.raw_bytes += self.scratch.len() as u64;
        self.count(event.kind());
        Ok(())
    }

    fn count(&mut self, kind: EventKind) {
        self.next_event += 1;
        self.stats.events += 1;
        self.stats.kind_counts[kind.index()] += 1;
    }

    fn remaining(&self) -> usize {
        self.shared.ring.capacity() - self.block.len
    }

    /// Writes the record in `scratch`, larger than a block, across as many blocks as it needs.
    /// It starts at the beginning of a fresh block and counts as an event of that block; the
    /// following blocks say in their `continuation` field how many of their first bytes are its.
    fn append_span(&mut self) -> Result<()> {
        let record = std::mem::take(&mut self.scratch);
        let mut head = vec![TAG_SPAN];
        put_varint(&mut head, record.len() as u64);
        let capacity = self.shared.ring.capacity();
        let first = (capacity - head.len()).min(record.len());
        let ring = &self.shared.ring;
        ring.write_data(self.block.slot, 0, &head);
        ring.write_data(self.block.slot, head.len(), &record[..first]);
        self.block.len = head.len() + first;
        self.block.events += 1;
        self.block.flags |= BLOCK_ENDS_IN_SPAN;
        ring.commit(self.block.slot, self.block.events, self.block.len);
        let mut written = first;
        while written < record.len() {
            let piece = (record.len() - written).min(capacity);
            self.seal_and_advance(piece as u32)?;
            let ring = &self.shared.ring;
            ring.write_data(self.block.slot, 0, &record[written..written + piece]);
            written += piece;
            self.block.len = piece;
            if written < record.len() {
                self.block.flags |= BLOCK_ENDS_IN_SPAN;
            }
            ring.commit(self.block.slot, 0, self.block.len);
        }
        self.stats.raw_bytes += (head.len() + record.len()) as u64;
        // Whatever follows the span is encoded afresh: it starts a new block.
        self.encoder.reset();
        if self.block.len == capacity {
            self.seal_and_advance(0)?;
        }
        self.scratch = record;
        Ok(())
    }

    /// Seals the current block and opens the next one, whose first `continuation` bytes will
    /// continue a spanned record.
    fn seal_and_advance(&mut self, continuation: u32) -> Result<()> {
        let seq = self.block.seq + 1;
        let first_event = self.next_event;
        self.seal();
        let slot = self.take_free_slot()?;
        self.block.slot = slot;
        self.start_block(seq, first_event, continuation);
        Ok(())
    }

    fn seal(&mut self) {
        let b = &self.block;
        self.stats.blocks += 1;
        compressor::submit(Job {
            log: Arc::clone(&self.shared),
            slot: b.slot,
            block_seq: b.seq,
            first_event: b.first_event,
            event_count: b.events,
            raw_len: b.len as u32,
            continuation: b.continuation,
            flags: b.flags,
            start_unix_ns: b.start_unix_ns,
        });
    }

    fn start_block(&mut self, seq: u64, first_event: u64, continuation: u32) {
        let start_unix_ns = unix_nanos();
        self.shared.ring.open_block(
            self.block.slot,
            &BlockInfo {
                magic: BLOCK_MAGIC,
                seq,
                first_event,
                continuation,
                flags: 0,
                start_unix_ns,
            },
        );
        self.block = OpenBlock {
            slot: self.block.slot,
            seq,
            first_event,
            continuation,
            flags: 0,
            start_unix_ns,
            len: 0,
            events: 0,
        };
        self.encoder.reset();
    }

    fn take_free_slot(&mut self) -> Result<u32> {
        if let Ok(slot) = self.free_slots.try_recv() {
            return Ok(slot);
        }
        self.stats.stalls += 1;
        let started = Instant::now();
        loop {
            match self.free_slots.recv_timeout(Duration::from_millis(50)) {
                Ok(slot) => {
                    self.stats.stall_time += started.elapsed();
                    return Ok(slot);
                }
                Err(RecvTimeoutError::Timeout) => {
                    if let Some(e) = self.shared.take_failure() {
                        return Err(e);
                    }
                }
                Err(RecvTimeoutError::Disconnected) => {
                    unreachable!("the writer's shared state holds the sender")
                }
            }
        }
    }

    /// Seals the last block, waits for every frame, writes the index and footer, and releases
    /// the ring's disk space. After this the file is a complete log.
    pub fn close(mut self) -> Result<WriterStats> {
        self.finish()
    }

    /// Stops writing without closing, after a failed append: the log is left as a crash would
    /// leave it (every committed record in a frame or in the ring, where a reader recovers it),
    /// rather than sealing a block whose hand-over may have failed half-way.
    pub fn abandon(mut self) {
        self.closed = true;
    }

    fn finish(&mut self) -> Result<WriterStats> {
        self.closed = true;
        let seal_current = self.block.len > 0;
        if seal_current {
            self.seal();
        }
        // Every slot but the one still held (if the current block was empty) must come back
        // through the free channel: then every frame has been written.
        let expected = self.shared.ring.slots() - u32::from(!seal_current);
        let mut free = 0;
        while free < expected {
            match self.free_slots.recv_timeout(Duration::from_millis(50)) {
                Ok(_) => free += 1,
                Err(_) => {
                    if let Some(e) = self.shared.take_failure() {
                        return Err(e);
                    }
                }
            }
        }
        let path = &self.shared.path;
        let state = self.shared.frames.lock().unwrap_or_else(|p| p.into_inner());
        let mut entries = state.entries.clone();
        entries.sort_by_key(|e| e.block_seq);
        let index = LogIndex {
            entries,
            kind_counts: self.stats.kind_counts.to_vec(),
            total_events: self.stats.events,
            raw_bytes: self.stats.raw_bytes,
            stalls: self.stats.stalls,
            stall_nanos: self.stats.stall_time.as_nanos() as u64,
        };
        let index_bytes = archive(&index);
        let footer = archive_with_crc(&Footer {
            magic: FOOTER_MAGIC,
            index_offset: state.frames_end,
            index_len: index_bytes.len() as u64,
            index_crc: crc32c::crc32c(&index_bytes),
            frames_end: state.frames_end,
        });
        let file = &self.shared.file;
        let mut tail = index_bytes;
        tail.extend_from_slice(&footer);
        file.write_all_at(&tail, state.frames_end).map_err(|e| {
            let e = FormatError::io(path, "write the log index", e);
            let _ = FIRST_FAILURE.set(e.to_string());
            e
        })?;
        if self.shared.fsync {
            file.sync_all()
                .map_err(|e| FormatError::io(path, "fsync the log", e))?;
        }
        release_ring_space(file, self.shared.ring.slots(), self.shared.ring.capacity());
        let mut stats = self.stats.clone();
        stats.compressed_bytes = state.compressed_bytes;
        Ok(stats)
    }
}

/// Sizes a new log to hold its header and ring, with every block allocated on disk now: the
/// ring is written through a shared mapping, and a page the file system cannot back when it is
/// first touched would kill the program with SIGBUS. A full disk fails here instead, before
/// the program logs anything. A file system without `fallocate` gets a sparse file (and keeps
/// that risk).
fn reserve(file: &File, path: &Path, len: u64) -> Result<()> {
    use nix::errno::Errno;
    use nix::fcntl::{FallocateFlags, fallocate};
    let signed = i64::try_from(len).expect("a ring is far smaller than 2^63 bytes");
    match fallocate(file, FallocateFlags::empty(), 0, signed) {
        Ok(()) => Ok(()),
        Err(Errno::EOPNOTSUPP) => file
            .set_len(len)
            .map_err(|e| FormatError::io(path, "size log", e)),
        Err(e) => Err(FormatError::io(
            path,
            "reserve disk space for the log's ring",
            std::io::Error::from(e),
        )),
    }
}

/// The first write to any log of this OS process that failed, as a message naming the file
/// and the OS error. One compressor thread writes every log's frames, so a full disk shows up
/// here for all of them; the record runtime reads it to stop every process at once.
pub fn first_write_failure() -> Option<&'static str> {
    FIRST_FAILURE.get().map(String::as_str)
}

static FIRST_FAILURE: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// Gives the ring's disk blocks back to the file system once every block is in a frame.
/// Best effort: a file system without hole punching keeps the (now unused) ring.
fn release_ring_space(file: &File, slots: u32, capacity: usize) {
    use std::os::fd::AsRawFd;
    let len = (capacity + SLOT_HEADER) as i64 * i64::from(slots);
    // SAFETY: fallocate only reads its integer arguments; the descriptor is open.
    unsafe {
        libc::fallocate(
            file.as_raw_fd(),
            libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
            HEADER_REGION as i64,
            len,
        );
    }
}

impl Drop for LogWriter {
    fn drop(&mut self) {
        // A writer dropped without `close` (its thread unwound) still completes its log; if
        // that fails, the ring keeps every record and a reader recovers them.
        if !self.closed {
            let _ = self.finish();
        }
    }
}
