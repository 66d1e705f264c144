//! Any bytes, opened as a log: no panic, and scanning and seeking agree on every event.
//!
//! Each input is tried twice: as it is, and with every checksum it seems to carry recomputed,
//! so that mutations reach the parsing behind the checksums instead of stopping at them.

#![no_main]

use std::path::Path;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use ppd_formats::{FormatError, LogReader};

/// One file per fuzzing process, rewritten for every input.
static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();

fuzz_target!(|data: &[u8]| {
    let dir = DIR.get_or_init(|| tempfile::tempdir().expect("create a temporary directory"));
    let path = dir.path().join("proc-0000.log");
    check(&path, data);
    let fixed = fix_checksums(data);
    if fixed != data {
        check(&path, &fixed);
    }
});

fn check(path: &Path, data: &[u8]) {
    std::fs::write(path, data).expect("write the input");
    let Ok(reader) = LogReader::open(path) else {
        return;
    };
    let count = reader.event_count();
    let mut scanned = Vec::new();
    let mut failure = None;
    for item in reader.events() {
        let (index, event) = match item {
            Ok(item) => item,
            Err(e) => {
                failure = Some(e);
                break;
            }
        };
        assert_eq!(index, scanned.len() as u64, "events come in order");
        assert!(index < count, "event {index} past the count {count}");
        scanned.push(event);
    }
    // A block whose content is damaged behind a valid checksum (forged here; a ring block has
    // none) is found out when it does not decode or its event count does not add up, possibly
    // after some of its events: only the blocks before the one that failed are certain.
    let read = scanned.len() as u64;
    let starts: Vec<u64> = reader
        .block_times()
        .unwrap_or_default()
        .into_iter()
        .map(|(first, _)| first)
        .collect();
    let certain = match failure {
        None => read,
        Some(FormatError::Record { block_seq, .. }) => starts
            .get(block_seq as usize)
            .copied()
            .unwrap_or(0)
            .min(read),
        // A block that failed to load: every block before it passed its count check.
        Some(_) => starts
            .iter()
            .copied()
            .filter(|&first| first <= read)
            .max()
            .unwrap_or(0),
    };
    let last = count.saturating_sub(1);
    for k in [
        0,
        1,
        2,
        count / 3,
        count / 2,
        last.saturating_sub(1),
        last,
        count,
        u64::MAX,
    ] {
        match reader.get(k) {
            Ok(event) => {
                assert!(k < count, "event {k} past the count {count}");
                if k < certain {
                    assert_eq!(
                        event, scanned[k as usize],
                        "seeking to {k} and scanning disagree"
                    );
                }
            }
            Err(_) => assert!(
                k >= certain,
                "event {k} was read by the scan but not by seeking"
            ),
        }
        if let Ok(events) = reader.events_from(k) {
            for (n, item) in events.take(3).enumerate() {
                if let Ok((index, _)) = item {
                    assert_eq!(index, k + n as u64, "events_from({k}) numbers its events");
                }
            }
        }
    }
    let _ = reader.kind_counts();
    let _ = reader.block_times();
    // Verifying every payload checksum reads each frame again; it must not panic either.
    let _ = reader.verify_payloads();
}

fn u32_at(data: &[u8], at: usize) -> Option<usize> {
    Some(u32::from_le_bytes(data.get(at..at + 4)?.try_into().ok()?) as usize)
}

fn u64_at(data: &[u8], at: usize) -> Option<usize> {
    usize::try_from(u64::from_le_bytes(data.get(at..at + 8)?.try_into().ok()?)).ok()
}

/// Writes the crc32c of `data[range]` at `at`, when both are inside `data`.
fn put_crc(data: &mut [u8], start: usize, len: usize, at: usize) {
    let Some(body) = start.checked_add(len).and_then(|end| data.get(start..end)) else {
        return;
    };
    let crc = crc32c::crc32c(body).to_le_bytes();
    if let Some(slot) = data.get_mut(at..at + 4) {
        slot.copy_from_slice(&crc);
    }
}

/// Recomputes the checksums of every structure found by its magic (docs/format.md §3).
fn fix_checksums(input: &[u8]) -> Vec<u8> {
    let mut data = input.to_vec();
    // The file header: its length at 12, its checksum at 16, the archive from 20.
    if let Some(len) = u32_at(&data, 12) {
        put_crc(&mut data, 20, len, 16);
    }
    let magic_at = |data: &[u8], magic: &[u8; 4]| -> Vec<usize> {
        data.windows(4)
            .enumerate()
            .filter(|(_, w)| w == magic)
            .map(|(i, _)| i)
            .collect()
    };
    // Ring blocks: 36 bytes of block info, then their checksum.
    for at in magic_at(&data, b"PBLK") {
        put_crc(&mut data, at, 36, at + 36);
    }
    // Frames: the payload checksum inside the 52-byte header, then the header's checksum.
    for at in magic_at(&data, b"PFRM") {
        if let Some(len) = u32_at(&data, at + 28) {
            put_crc(&mut data, at + 56, len, at + 48);
        }
        put_crc(&mut data, at, 52, at + 52);
    }
    // The pending access record, the last 64 bytes of the header region: its check at 40.
    if data.len() >= 4096 && data[4032..4036] == *b"PACC" {
        let record = &data[4032..4096];
        let long = |at: usize| u64::from_le_bytes(record[at..at + 8].try_into().unwrap());
        let short = u64::from(u32::from_le_bytes(record[36..40].try_into().unwrap()));
        let check = long(4)
            ^ long(12).rotate_left(13)
            ^ long(20).rotate_left(29)
            ^ long(28).rotate_left(43)
            ^ short.rotate_left(53)
            ^ 0x5050_4143_4348_4b21;
        data[4072..4080].copy_from_slice(&check.to_le_bytes());
    }
    // The footer, in the last 36 bytes: the index checksum inside it, then its own.
    if let Some(at) = data.len().checked_sub(36)
        && data[at..at + 4] == *b"PEND"
    {
        if let (Some(offset), Some(len)) = (u64_at(&data, at + 4), u64_at(&data, at + 12)) {
            put_crc(&mut data, offset, len, at + 20);
        }
        put_crc(&mut data, at, 32, at + 32);
    }
    data
}
