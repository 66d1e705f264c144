//! The background thread that turns sealed raw blocks into checksummed zstd frames.
//!
//! One thread serves every log of the OS process, in the order blocks were sealed, so the frames
//! of each log are appended in block order without further coordination. A slot goes back to
//! its writer only after its frame is written (and, with `fsync`, on stable storage): until then
//! the raw block in the ring is the copy that survives a crash.

use std::collections::HashMap;
use std::os::unix::fs::FileExt;
use std::sync::{Arc, OnceLock};

use crossbeam_channel::{Receiver, Sender, unbounded};

use super::LogShared;
use crate::error::{FormatError, Result};
use crate::layout::{FRAME_MAGIC, FrameHeader, IndexEntry, archive_with_crc};

/// A sealed block waiting to be compressed.
#[derive(Debug)]
pub(crate) struct Job {
    pub(crate) log: Arc<LogShared>,
    pub(crate) slot: u32,
    pub(crate) block_seq: u64,
    pub(crate) first_event: u64,
    pub(crate) event_count: u32,
    pub(crate) raw_len: u32,
    pub(crate) continuation: u32,
    pub(crate) flags: u32,
    pub(crate) start_unix_ns: u64,
}

/// Hands a sealed block to the process-wide compressor thread.
pub(crate) fn submit(job: Job) {
    static QUEUE: OnceLock<Sender<Job>> = OnceLock::new();
    let queue = QUEUE.get_or_init(|| {
        let (tx, rx) = unbounded();
        std::thread::Builder::new()
            .name("ppd-compressor".into())
            .spawn(move || run(&rx))
            .expect("spawn the ppd compressor thread");
        tx
    });
    // The receiving thread never exits, so the queue never disconnects.
    let _ = queue.send(job);
}

fn run(queue: &Receiver<Job>) {
    let mut compressors: HashMap<i32, zstd::bulk::Compressor<'static>> = HashMap::new();
    for job in queue {
        let log = Arc::clone(&job.log);
        if log.has_failed() {
            // A frame of this log is missing: writing later ones would leave a gap. Their
            // blocks stay in the ring, where a reader recovers them.
            continue;
        }
        match write_frame(&job, &mut compressors) {
            // The writer may be gone (dropped after a failure); then nobody needs the slot.
            Ok(()) => {
                let _ = log.free_slots.send(job.slot);
            }
            // Keep the slot: its raw block is the only copy of those records.
            Err(e) => log.fail(e),
        }
    }
}

fn write_frame(
    job: &Job,
    compressors: &mut HashMap<i32, zstd::bulk::Compressor<'static>>,
) -> Result<()> {
    let log = &job.log;
    let compressor = match compressors.entry(log.level) {
        std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
        std::collections::hash_map::Entry::Vacant(e) => {
            let c = zstd::bulk::Compressor::new(log.level)
                .map_err(|e| FormatError::io(&log.path, "start zstd", e))?;
            e.insert(c)
        }
    };
    let raw = log.ring.sealed_data(job.slot, job.raw_len as usize);
    let payload = compressor
        .compress(raw)
        .map_err(|e| FormatError::io(&log.path, "compress a block", e))?;
    let header = FrameHeader {
        magic: FRAME_MAGIC,
        block_seq: job.block_seq,
        first_event: job.first_event,
        event_count: job.event_count,
        raw_len: job.raw_len,
        compressed_len: payload.len() as u32,
        continuation: job.continuation,
        flags: job.flags,
        start_unix_ns: job.start_unix_ns,
        payload_crc: crc32c::crc32c(&payload),
    };
    let mut frame = archive_with_crc(&header);
    frame.extend_from_slice(&payload);

    let mut state = log.frames.lock().unwrap_or_else(|p| p.into_inner());
    let offset = state.frames_end;
    log.file
        .write_all_at(&frame, offset)
        .map_err(|e| FormatError::io(&log.path, "append a frame", e))?;
    if log.fsync {
        log.file
            .sync_data()
            .map_err(|e| FormatError::io(&log.path, "fsync a frame", e))?;
    }
    state.frames_end += frame.len() as u64;
    state.compressed_bytes += frame.len() as u64;
    state.entries.push(IndexEntry {
        block_seq: job.block_seq,
        first_event: job.first_event,
        event_count: job.event_count,
        offset,
    });
    Ok(())
}
