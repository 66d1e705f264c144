//! The pending access: an atomic access a process has made and may not have logged yet.
//!
//! Recording versions an atomic access while the access holds the object's version word, and
//! logs it after letting the word go, so that the next access need not wait for the encoding
//! and append (`recorder/src/sync/object.rs`). A process killed between the two would leave a
//! later version logged by another process without this one: replay would wait for it forever,
//! and an analysis would miss the access the later one read from. So, while it still holds
//! the word, the process writes the access, raw, into the last 64 bytes of its log's header
//! region, a page the writer keeps mapped; a successful append clears it. A reader that finds
//! the record set and the log not ending with that access gives the log one more event, this
//! one, rebuilt from the record: its site is not known (`docs/format.md` §3.1).
//!
//! The record is written field by field and then marked set with a release store; a process
//! killed while writing it still held the word, so no later version exists and the unmarked
//! record is rightly ignored. From format version 5 the record carries a check word over its
//! fields, so that a flipped byte is damage rather than an access the program never made; it
//! is a fold, not a CRC, because the record is written on every recorded atomic access (a
//! CRC of 36 bytes cost about 19 ns there, the fold about 1).

use std::fs::File;
use std::panic::Location;
use std::path::Path;
use std::sync::atomic::{AtomicU32, Ordering};

use memmap2::{MmapOptions, MmapRaw};

use crate::error::{FormatError, Result};
use crate::event::{AtomicOp, Borrowed, Event, MemOrdering};
use crate::ids::{ObjectId, ProcessId};
use crate::layout::HEADER_REGION;

/// Offset of the record in the file: the last 64 bytes of the header region.
pub(crate) const PENDING_OFFSET: u64 = HEADER_REGION - PENDING_LEN as u64;
/// Bytes the record occupies.
pub(crate) const PENDING_LEN: usize = 64;
/// The record's first word while it is set.
const PENDING_MAGIC: u32 = u32::from_le_bytes(*b"PACC");
/// Bytes of the record after its first word that carry the access: 36 of fields, then (from
/// format version 5) the 8 of their check.
const FIELDS_LEN: usize = 44;
/// Where the check starts among the fields.
const CHECK_AT: usize = 36;
/// The first format version whose records carry the check.
pub(crate) const CHECKED_FROM_VERSION: u32 = 5;

/// The check of bytes 4..40 of a record: the 64-bit little-endian words at 4, 12, 20 and 28 and
/// the 32-bit one at 36, each rotated by a different amount, XORed with a constant. A change of
/// any one byte changes it.
fn check(fields: &[u8; FIELDS_LEN]) -> u64 {
    let long = |at: usize| u64::from_le_bytes(fields[at..at + 8].try_into().expect("8 bytes"));
    let short = u64::from(u32::from_le_bytes(
        fields[32..36].try_into().expect("4 bytes"),
    ));
    long(0)
        ^ long(8).rotate_left(13)
        ^ long(16).rotate_left(29)
        ^ long(24).rotate_left(43)
        ^ short.rotate_left(53)
        ^ 0x5050_4143_4348_4b21
}

/// An atomic access as the pending record holds it: an [`Event::Atomic`] without its site.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PendingAccess {
    /// The atomic.
    pub object: ObjectId,
    /// The access's version.
    pub version: u64,
    /// Who made the access before it.
    pub prev: Option<ProcessId>,
    /// What it did.
    pub op: AtomicOp,
    /// The ordering it used.
    pub ordering: MemOrdering,
    /// The failure ordering of a compare-exchange or `fetch_update`.
    pub failure: Option<MemOrdering>,
    /// The value it read, when its event would have carried one.
    pub value: Option<u64>,
}

fn code<T: PartialEq>(all: &[T], x: &T) -> u8 {
    all.iter()
        .position(|y| y == x)
        .expect("every variant is listed") as u8
}

impl PendingAccess {
    /// Bytes 4..48 of the record (`docs/format.md` §3.1).
    fn fields(&self) -> [u8; FIELDS_LEN] {
        let mut b = [0u8; FIELDS_LEN];
        b[0] = code(&AtomicOp::ALL, &self.op);
        b[1] = code(&MemOrdering::ALL, &self.ordering);
        b[2] = self.failure.map_or(0, |f| code(&MemOrdering::ALL, &f) + 1);
        b[3] = u8::from(self.value.is_some());
        b[4..12].copy_from_slice(&self.object.0.to_le_bytes());
        b[12..20].copy_from_slice(&self.version.to_le_bytes());
        b[20..24].copy_from_slice(&self.prev.map_or(0, |p| p.0 + 1).to_le_bytes());
        b[28..36].copy_from_slice(&self.value.unwrap_or(0).to_le_bytes());
        let sum = check(&b);
        b[CHECK_AT..].copy_from_slice(&sum.to_le_bytes());
        b
    }

    /// Reads a record of a log of format `version`: `None` when it is not set, an error naming
    /// the byte when it is set but holds what no writer writes, or (version 5 on) fails its
    /// check.
    pub(crate) fn read(
        record: &[u8; PENDING_LEN],
        version: u32,
    ) -> std::result::Result<Option<Self>, String> {
        let word = |at: usize| u32::from_le_bytes(record[at..at + 4].try_into().expect("4 bytes"));
        let long = |at: usize| u64::from_le_bytes(record[at..at + 8].try_into().expect("8 bytes"));
        if word(0) != PENDING_MAGIC {
            return Ok(None);
        }
        if version >= CHECKED_FROM_VERSION {
            let fields: &[u8; FIELDS_LEN] = record[4..4 + FIELDS_LEN].try_into().expect("fields");
            if long(4 + CHECK_AT) != check(fields) {
                return Err(format!(
                    "bytes 40..48: the check {:#018x} does not match the fields (bytes 4..40), \
                     which give {:#018x}",
                    long(4 + CHECK_AT),
                    check(fields)
                ));
            }
        }
        let op = *AtomicOp::ALL
            .get(usize::from(record[4]))
            .ok_or_else(|| format!("byte 4: access code {}", record[4]))?;
        let ordering = *MemOrdering::ALL
            .get(usize::from(record[5]))
            .ok_or_else(|| format!("byte 5: ordering code {}", record[5]))?;
        let failure = match record[6] {
            0 => None,
            c => Some(
                *MemOrdering::ALL
                    .get(usize::from(c - 1))
                    .ok_or_else(|| format!("byte 6: failure ordering code {c}"))?,
            ),
        };
        let value = match record[7] {
            0 => None,
            1 => Some(long(32)),
            b => return Err(format!("byte 7: value flag {b}")),
        };
        let version = long(16);
        if version == 0 {
            return Err("bytes 16..24: version 0 (versions count from 1)".into());
        }
        Ok(Some(PendingAccess {
            object: ObjectId(long(8)),
            version,
            prev: word(24).checked_sub(1).map(ProcessId),
            op,
            ordering,
            failure,
            value,
        }))
    }

    /// The access's event, made at `site` (a reader rebuilding it from the record knows none).
    pub fn event(&self, site: Option<&'static Location<'static>>) -> Event<Borrowed<'static>> {
        Event::Atomic {
            object: self.object,
            version: self.version,
            prev: self.prev,
            op: self.op,
            ordering: self.ordering,
            failure: self.failure,
            site,
            value: self.value,
        }
    }

    /// Whether `event` is this access, logged.
    pub(crate) fn is(&self, event: &Event) -> bool {
        matches!(event, Event::Atomic { object, version, .. }
            if *object == self.object && *version == self.version)
    }
}

/// The writer's view of its log's pending record: the header region's page, mapped shared.
#[derive(Debug)]
pub(crate) struct PendingSlot {
    map: MmapRaw,
}

impl PendingSlot {
    /// Maps the header region of `file`, whose header is already written.
    pub(crate) fn map(file: &File, path: &Path) -> Result<PendingSlot> {
        let map = MmapOptions::new()
            .len(HEADER_REGION as usize)
            .map_raw(file)
            .map_err(|e| FormatError::io(path, "map the log's header", e))?;
        Ok(PendingSlot { map })
    }

    fn record(&self) -> *mut u8 {
        // SAFETY: the record lies inside the mapping, which is HEADER_REGION bytes long.
        unsafe { self.map.as_mut_ptr().add(PENDING_OFFSET as usize) }
    }

    fn state(&self) -> &AtomicU32 {
        // SAFETY: the record starts 64-byte aligned in a page-aligned mapping, and lives as long
        // as the mapping; only this writer stores into it.
        unsafe { &*(self.record() as *const AtomicU32) }
    }

    /// Writes `access` and marks the record set.
    pub(crate) fn set(&self, access: &PendingAccess) {
        let fields = access.fields();
        // SAFETY: bytes 4..40 of the record, inside the mapping; only this writer writes them,
        // and readers look only once the release store below has marked them complete.
        unsafe { std::ptr::copy_nonoverlapping(fields.as_ptr(), self.record().add(4), FIELDS_LEN) };
        self.state().store(PENDING_MAGIC, Ordering::Release);
    }

    /// Marks the record unset: the access it held is in the log.
    pub(crate) fn clear(&self) {
        self.state().store(0, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::FORMAT_VERSION;

    fn access() -> PendingAccess {
        PendingAccess {
            object: ObjectId::new(ProcessId(3), 7),
            version: 41,
            prev: Some(ProcessId(2)),
            op: AtomicOp::CasFail,
            ordering: MemOrdering::AcqRel,
            failure: Some(MemOrdering::Acquire),
            value: Some(u64::MAX - 1),
        }
    }

    fn record(a: &PendingAccess) -> [u8; PENDING_LEN] {
        let mut r = [0u8; PENDING_LEN];
        r[..4].copy_from_slice(&PENDING_MAGIC.to_le_bytes());
        r[4..4 + FIELDS_LEN].copy_from_slice(&a.fields());
        r
    }

    #[test]
    fn a_record_reads_back_as_written() {
        let a = access();
        assert_eq!(
            PendingAccess::read(&record(&a), FORMAT_VERSION),
            Ok(Some(a))
        );
        let plain = PendingAccess {
            prev: None,
            failure: None,
            value: None,
            op: AtomicOp::Store,
            ..a
        };
        assert_eq!(
            PendingAccess::read(&record(&plain), FORMAT_VERSION),
            Ok(Some(plain))
        );
    }

    #[test]
    fn an_unmarked_record_is_no_access() {
        let mut r = record(&access());
        r[0] = 0;
        assert_eq!(PendingAccess::read(&r, FORMAT_VERSION), Ok(None));
        assert_eq!(
            PendingAccess::read(&[0; PENDING_LEN], FORMAT_VERSION),
            Ok(None)
        );
    }

    #[test]
    fn a_flipped_byte_anywhere_in_the_fields_fails_the_check_and_older_records_have_none() {
        let good = record(&access());
        for at in 4..40 {
            for bit in 0..8 {
                let mut r = good;
                r[at] ^= 1 << bit;
                // Flips that make a field invalid are refused by the field; the rest by the
                // check.
                assert!(
                    PendingAccess::read(&r, FORMAT_VERSION).is_err(),
                    "byte {at} bit {bit} went unnoticed"
                );
            }
        }
        // A version-4 record had no check: its bytes 40..48 were zero.
        let mut old = good;
        old[40..48].fill(0);
        assert!(PendingAccess::read(&old, FORMAT_VERSION).is_err());
        assert_eq!(
            PendingAccess::read(&old, CHECKED_FROM_VERSION - 1),
            Ok(Some(access()))
        );
    }

    #[test]
    fn a_marked_record_with_bytes_no_writer_writes_is_an_error_naming_the_byte() {
        for (at, byte, says) in [
            (4, 9, "byte 4"),
            (5, 5, "byte 5"),
            (6, 6, "byte 6"),
            (7, 2, "byte 7"),
        ] {
            let mut r = record(&access());
            r[at] = byte;
            // Made consistent with the changed byte, so that the byte itself is what is refused.
            let fields: [u8; FIELDS_LEN] = r[4..4 + FIELDS_LEN].try_into().unwrap();
            r[4 + CHECK_AT..4 + FIELDS_LEN].copy_from_slice(&check(&fields).to_le_bytes());
            let e = PendingAccess::read(&r, FORMAT_VERSION).unwrap_err();
            assert!(e.starts_with(says), "{e}");
        }
        let mut r = record(&access());
        r[16..24].fill(0);
        let fields: [u8; FIELDS_LEN] = r[4..4 + FIELDS_LEN].try_into().unwrap();
        r[4 + CHECK_AT..4 + FIELDS_LEN].copy_from_slice(&check(&fields).to_le_bytes());
        assert!(
            PendingAccess::read(&r, FORMAT_VERSION)
                .unwrap_err()
                .contains("version 0")
        );
    }
}
