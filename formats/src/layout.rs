//! The fixed-layout structures of a log file, archived with rkyv and read with validated access.
//!
//! A log file is: a 4 KiB header region, a ring of raw blocks (memory-mapped by the writer), the
//! compressed frames, and — after a clean close — an index and a footer. `docs/format.md`
//! specifies every byte; this module is the code of that specification.

use rkyv::api::high::HighSerializer;
use rkyv::rancor;
use rkyv::ser::allocator::ArenaHandle;
use rkyv::util::AlignedVec;
use rkyv::{Archive, Deserialize, Serialize};

/// Magic bytes at the start of every log file.
pub(crate) const FILE_MAGIC: [u8; 8] = *b"PPDLOG\r\n";
/// The format version this build writes. Version 3 added extended event tags (tag 30,
/// `docs/format.md` §4.2); a reader of version 2 refuses it by its version rather than meeting
/// tags it cannot decode. Version 4 added the pending access record (§3.1), which a reader of
/// version 3 would not see: it would miss the access the record holds. Version 5 added the
/// record's check word, without which a reader of version 4 cannot tell a damaged record.
pub const FORMAT_VERSION: u32 = 5;
/// The oldest format version this build reads: every version-2 log is a valid version-3 log
/// that has no extended events.
pub const OLDEST_READABLE_VERSION: u32 = 2;
/// Bytes reserved at the start of the file for the header.
pub(crate) const HEADER_REGION: u64 = 4096;
/// Offset of the archived header inside the header region: magic, version, length, checksum.
pub(crate) const HEADER_PROLOGUE: usize = 20;
/// Bytes at the start of each ring slot before the block's data.
pub(crate) const SLOT_HEADER: usize = 64;
/// Magic of a frame header.
pub(crate) const FRAME_MAGIC: u32 = u32::from_le_bytes(*b"PFRM");
/// Magic of the footer.
pub(crate) const FOOTER_MAGIC: u32 = u32::from_le_bytes(*b"PEND");
/// Magic of a ring slot's block info.
pub(crate) const BLOCK_MAGIC: u32 = u32::from_le_bytes(*b"PBLK");

/// Block flag: the block's last record continues in the next block.
pub(crate) const BLOCK_ENDS_IN_SPAN: u32 = 1;

/// Identity of a log file: which process, and how its ring is laid out.
#[derive(Archive, Serialize, Deserialize, Debug, Clone, PartialEq)]
pub(crate) struct FileHeader {
    pub(crate) process_id: u32,
    pub(crate) parent: Option<u32>,
    pub(crate) name: String,
    pub(crate) block_size: u32,
    pub(crate) ring_blocks: u32,
    pub(crate) created_unix_ns: u64,
    pub(crate) os_pid: u32,
}

/// Header of a raw block in a ring slot, written when the block is opened.
///
/// It follows the slot's 8-byte commit word, which the writer updates after every record:
/// `(events << 32) | bytes`, counting what of the block's data is complete.
#[derive(Archive, Serialize, Deserialize, Debug, Clone, Copy, PartialEq)]
pub(crate) struct BlockInfo {
    pub(crate) magic: u32,
    pub(crate) seq: u64,
    pub(crate) first_event: u64,
    pub(crate) continuation: u32,
    pub(crate) flags: u32,
    pub(crate) start_unix_ns: u64,
}

/// Header of a compressed frame; followed by a crc32c of its archived bytes, then the payload.
#[derive(Archive, Serialize, Deserialize, Debug, Clone, Copy, PartialEq)]
pub(crate) struct FrameHeader {
    pub(crate) magic: u32,
    pub(crate) block_seq: u64,
    pub(crate) first_event: u64,
    pub(crate) event_count: u32,
    pub(crate) raw_len: u32,
    pub(crate) compressed_len: u32,
    pub(crate) continuation: u32,
    pub(crate) flags: u32,
    pub(crate) start_unix_ns: u64,
    pub(crate) payload_crc: u32,
}

/// One frame in the index.
#[derive(Archive, Serialize, Deserialize, Debug, Clone, Copy, PartialEq)]
pub(crate) struct IndexEntry {
    pub(crate) block_seq: u64,
    pub(crate) first_event: u64,
    pub(crate) event_count: u32,
    pub(crate) offset: u64,
}

/// Written after the last frame at a clean close: where every frame is, and totals.
#[derive(Archive, Serialize, Deserialize, Debug, Clone, PartialEq)]
pub(crate) struct LogIndex {
    pub(crate) entries: Vec<IndexEntry>,
    pub(crate) kind_counts: Vec<u64>,
    pub(crate) total_events: u64,
    pub(crate) raw_bytes: u64,
    pub(crate) stalls: u64,
    pub(crate) stall_nanos: u64,
}

/// The last bytes of a cleanly closed log; followed by a crc32c of its archived bytes.
#[derive(Archive, Serialize, Deserialize, Debug, Clone, Copy, PartialEq)]
pub(crate) struct Footer {
    pub(crate) magic: u32,
    pub(crate) index_offset: u64,
    pub(crate) index_len: u64,
    pub(crate) index_crc: u32,
    pub(crate) frames_end: u64,
}

/// Size of an archived [`BlockInfo`].
pub(crate) const BLOCK_INFO_LEN: usize = size_of::<ArchivedBlockInfo>();
/// Size of an archived [`FrameHeader`] plus its checksum.
pub(crate) const FRAME_HEADER_LEN: usize = size_of::<ArchivedFrameHeader>() + 4;
/// Size of an archived [`Footer`] plus its checksum.
pub(crate) const FOOTER_LEN: usize = size_of::<ArchivedFooter>() + 4;

const _: () = assert!(8 + BLOCK_INFO_LEN + 4 <= SLOT_HEADER);

/// Archives a value whose archived form has a fixed size.
pub(crate) fn archive<T>(value: &T) -> Vec<u8>
where
    T: for<'a> Serialize<HighSerializer<AlignedVec, ArenaHandle<'a>, rancor::Error>>,
{
    // Serializing plain structs, strings and vectors into memory cannot fail.
    rkyv::to_bytes::<rancor::Error>(value)
        .expect("archiving into memory does not fail")
        .into_vec()
}

/// Archives `value` followed by the crc32c of the archived bytes.
pub(crate) fn archive_with_crc<T>(value: &T) -> Vec<u8>
where
    T: for<'a> Serialize<HighSerializer<AlignedVec, ArenaHandle<'a>, rancor::Error>>,
{
    let mut bytes = archive(value);
    let crc = crc32c::crc32c(&bytes);
    bytes.extend_from_slice(&crc.to_le_bytes());
    bytes
}

/// Checks the trailing crc32c of `bytes` and gives back the archived part.
pub(crate) fn split_crc(bytes: &[u8]) -> Option<&[u8]> {
    let (body, crc) = bytes.split_at(bytes.len().checked_sub(4)?);
    let crc = u32::from_le_bytes(crc.try_into().ok()?);
    (crc32c::crc32c(body) == crc).then_some(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_structures_archive_to_their_declared_size() {
        let info = BlockInfo {
            magic: BLOCK_MAGIC,
            seq: 1,
            first_event: 2,
            continuation: 3,
            flags: 0,
            start_unix_ns: 5,
        };
        assert_eq!(archive(&info).len(), BLOCK_INFO_LEN);
        let frame = FrameHeader {
            magic: FRAME_MAGIC,
            block_seq: 1,
            first_event: 2,
            event_count: 3,
            raw_len: 4,
            compressed_len: 5,
            continuation: 0,
            flags: 0,
            start_unix_ns: 6,
            payload_crc: 7,
        };
        assert_eq!(archive_with_crc(&frame).len(), FRAME_HEADER_LEN);
        let bytes = archive_with_crc(&frame);
        let body = split_crc(&bytes).unwrap();
        let back = rkyv::access::<ArchivedFrameHeader, rancor::Error>(body).unwrap();
        assert_eq!(back.block_seq.to_native(), 1);
        assert_eq!(back.compressed_len.to_native(), 5);
    }

    #[test]
    fn sizes_match_the_format_specification() {
        // docs/format.md §3.2–3.4 gives these sizes; the spec and the code must agree.
        assert_eq!(BLOCK_INFO_LEN, 36);
        assert_eq!(FRAME_HEADER_LEN, 56);
        assert_eq!(FOOTER_LEN, 36);
        assert_eq!(FILE_MAGIC, *b"PPDLOG\r\n");
    }

    #[test]
    fn a_flipped_bit_fails_the_checksum() {
        let footer = Footer {
            magic: FOOTER_MAGIC,
            index_offset: 10,
            index_len: 20,
            index_crc: 30,
            frames_end: 40,
        };
        let mut bytes = archive_with_crc(&footer);
        bytes[3] ^= 0x10;
        assert!(split_crc(&bytes).is_none());
    }
}
