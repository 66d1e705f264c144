//! The memory-mapped ring of raw blocks at the front of a log file.
//!
//! Records are copied straight into the mapped pages, so the kernel holds them the moment the
//! copy finishes: a process killed by SIGKILL leaves them in the page cache, and from there in
//! the file. A slot is owned by exactly one side at a time — the writer while it fills the
//! block, the compressor from sealing until it hands the slot back — and that hand-over through
//! channels is what makes the unsynchronized byte copies below sound.

use std::fs::File;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use memmap2::{MmapOptions, MmapRaw};

use crate::error::{FormatError, Result};
use crate::layout::{
    BLOCK_INFO_LEN, BLOCK_MAGIC, BlockInfo, HEADER_REGION, SLOT_HEADER, archive_with_crc,
};

/// Records up to this long are copied byte by byte (see [`Ring::write_data`]).
const SHORT_RECORD: usize = 32;

/// The front of the ring whose pages the kernel faults in one at a time, not read around.
///
/// The ring's blocks are allocated but unwritten, so every page is zero-filled on its first
/// touch. Left to read around, the first touch of a new log (its first block's header) fills
/// the whole 128 KiB block at once: most of a short-lived process's start-up cost, though it
/// logs a few hundred bytes. Past this prefix, read-around serves the logs that do fill their
/// blocks. The overhead benchmark's recorded `scoped` workload (1000 processes of a few events
/// each) took 917 ms before and 442 ms after (medians of 9 alternating runs).
const FAULTED_ALONE: usize = 16 * 1024;

/// The mapped ring.
#[derive(Debug)]
pub(crate) struct Ring {
    map: MmapRaw,
    block_size: usize,
    slots: u32,
}

impl Ring {
    /// Maps the ring region of `file`, which must already be long enough.
    pub(crate) fn map(file: &File, path: &Path, block_size: u32, slots: u32) -> Result<Ring> {
        let len = block_size as usize * slots as usize;
        let map = MmapOptions::new()
            .offset(HEADER_REGION)
            .len(len)
            .map_raw(file)
            .map_err(|e| FormatError::io(path, "map the log's ring", e))?;
        // Best effort: without the advice the kernel reads around instead.
        let _ = map.advise_range(memmap2::Advice::Random, 0, FAULTED_ALONE.min(len));
        Ok(Ring {
            map,
            block_size: block_size as usize,
            slots,
        })
    }

    /// Bytes of data a block can hold.
    pub(crate) fn capacity(&self) -> usize {
        self.block_size - SLOT_HEADER
    }

    pub(crate) fn slots(&self) -> u32 {
        self.slots
    }

    fn slot_ptr(&self, slot: u32) -> *mut u8 {
        assert!(slot < self.slots, "slot {slot} out of range");
        // SAFETY: the slot lies inside the mapping, whose length is block_size * slots.
        unsafe { self.map.as_mut_ptr().add(slot as usize * self.block_size) }
    }

    /// The slot's commit word: `(events << 32) | bytes` of complete data.
    pub(crate) fn commit_word(&self, slot: u32) -> &AtomicU64 {
        // SAFETY: slots start at multiples of the block size (a multiple of the page size) from a
        // page-aligned mapping, so the word is 8-byte aligned; it lives as long as the mapping.
        unsafe { &*(self.slot_ptr(slot) as *const AtomicU64) }
    }

    /// Starts a new block in `slot`: clears the commit word, then writes the block info.
    ///
    /// The caller must own the slot.
    pub(crate) fn open_block(&self, slot: u32, info: &BlockInfo) {
        let commit = self.commit_word(slot);
        // Invalidate the old block before its header is overwritten, so a crash in between
        // leaves a slot that claims no data rather than old data under a new header.
        commit.store(0, Ordering::Release);
        let bytes = archive_with_crc(info);
        debug_assert_eq!(bytes.len(), BLOCK_INFO_LEN + 4);
        debug_assert_eq!(info.magic, BLOCK_MAGIC);
        // SAFETY: the header lies within the slot (checked by a const assertion in layout) and
        // the caller owns the slot, so nobody else reads or writes these bytes now.
        unsafe {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.slot_ptr(slot).add(8), bytes.len());
        }
    }

    /// Copies `bytes` into the data of `slot` at `offset`.
    ///
    /// The caller must own the slot; the range must fit in the block's capacity.
    pub(crate) fn write_data(&self, slot: u32, offset: usize, bytes: &[u8]) {
        assert!(
            offset + bytes.len() <= self.capacity(),
            "write past the block"
        );
        // SAFETY: the range is inside the slot's data (asserted) and the caller owns the slot.
        let dst = unsafe { self.slot_ptr(slot).add(SLOT_HEADER + offset) };
        if bytes.len() <= SHORT_RECORD {
            // Most records are a few bytes the encoder has just pushed one at a time; a wide
            // load of them (what `memcpy` does) stalls until those byte stores retire, which
            // costs more than copying byte by byte. Volatile keeps the loop from being turned
            // back into a `memcpy` call.
            for (i, &b) in bytes.iter().enumerate() {
                // SAFETY: `i < bytes.len()`, and the range is inside the slot's data.
                unsafe { dst.add(i).write_volatile(b) };
            }
        } else {
            // SAFETY: as above.
            unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), dst, bytes.len()) };
        }
    }

    /// Publishes the block's complete prefix: `events` records in `bytes` bytes.
    pub(crate) fn commit(&self, slot: u32, events: u32, bytes: usize) {
        self.commit_word(slot)
            .store((u64::from(events) << 32) | bytes as u64, Ordering::Release);
    }

    /// The first `len` data bytes of a sealed block.
    ///
    /// The caller (the compressor) must own the slot for as long as it uses the slice.
    pub(crate) fn sealed_data(&self, slot: u32, len: usize) -> &[u8] {
        assert!(
            len <= self.capacity(),
            "sealed block longer than its capacity"
        );
        // SAFETY: in range (asserted); the writer handed the slot over, so nobody writes it
        // until the compressor hands it back, after it is done with this slice.
        unsafe { std::slice::from_raw_parts(self.slot_ptr(slot).add(SLOT_HEADER), len) }
    }
}
