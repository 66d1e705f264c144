//! The pending access record (`docs/format.md` §3.1): an atomic access a process made and did
//! not append is its log's last event; one it did append is not read twice; a damaged record
//! is damage, naming its offset.

mod common;

use std::os::unix::fs::FileExt;
use std::panic::Location;
use std::path::Path;

use ppd_formats::event::{AtomicOp, MemOrdering};
use ppd_formats::pending::PendingAccess;
use ppd_formats::{Event, FormatError, LogReader, LogState, LogWriter, ObjectId, ProcessId};

use common::{identity, small_blocks};

/// Where the record lies: the last 64 bytes of the 4096-byte header region.
const RECORD: u64 = 4032;

fn access(version: u64) -> PendingAccess {
    PendingAccess {
        object: ObjectId::new(ProcessId(1), 4),
        version,
        prev: Some(ProcessId(3)),
        op: AtomicOp::Load,
        ordering: MemOrdering::Acquire,
        failure: None,
        value: None,
    }
}

/// A log of accesses 1 to `n`, each pended and appended; then `last` pended and not appended;
/// then closed (`close`) or left as a crash leaves it.
fn write(path: &Path, n: u64, last: Option<u64>, close: bool) {
    let mut w = LogWriter::create(path, &identity(), small_blocks(4)).unwrap();
    for v in 1..=n {
        w.pend(&access(v));
        w.append(&access(v).event(Some(Location::caller())))
            .unwrap();
    }
    if let Some(v) = last {
        w.pend(&access(v));
    }
    assert_eq!(w.readable_events(), n + u64::from(last.is_some()));
    if close {
        w.close().unwrap();
    } else {
        w.abandon();
    }
}

fn last_event(r: &LogReader) -> Event {
    r.get(r.event_count() - 1).unwrap()
}

#[test]
fn an_access_pended_and_not_appended_is_the_last_event_without_a_site() {
    for close in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("proc-0002.log");
        write(&path, 3000, Some(3001), close);
        let r = LogReader::open(&path).unwrap();
        let state = if close {
            LogState::Complete
        } else {
            LogState::Recovered
        };
        assert_eq!(r.state(), state);
        assert!(r.damage().is_empty(), "{:?}", r.damage());
        assert_eq!(r.event_count(), 3001);
        assert_eq!(r.pending_access(), Some(&access(3001)));
        let Event::Atomic {
            version,
            site,
            prev,
            ..
        } = last_event(&r)
        else {
            panic!("not an access");
        };
        assert_eq!((version, site, prev), (3001, None, Some(ProcessId(3))));
        // Read in order too, and counted with the others.
        assert_eq!(r.events().count(), 3001);
        let atomics = r.kind_counts().unwrap();
        assert!(
            atomics.contains(&(ppd_formats::EventKind::Atomic, 3001)),
            "{atomics:?}"
        );
        assert_eq!(r.block_times().unwrap().len(), r.block_count());
    }
}

#[test]
fn an_appended_access_is_read_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("proc-0002.log");
    write(&path, 10, None, true);
    let r = LogReader::open(&path).unwrap();
    assert_eq!((r.event_count(), r.pending_access()), (10, None));
    // A process killed after appending its access and before clearing the record.
    set_record(&path, &record_of(&access(10)));
    let r = LogReader::open(&path).unwrap();
    assert_eq!((r.event_count(), r.pending_access()), (10, None));
    assert!(r.damage().is_empty(), "{:?}", r.damage());
}

#[test]
fn the_rebuilt_event_is_renumbered_with_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("proc-0002.log");
    write(&path, 2, Some(3), false);
    let mut r = LogReader::open(&path).unwrap();
    r.rebase(1 << 20);
    let Event::Atomic { object, prev, .. } = last_event(&r) else {
        panic!("not an access");
    };
    assert_eq!(prev, Some(ProcessId((1 << 20) + 3)));
    assert_eq!(object.creator(), ProcessId((1 << 20) + 1));
}

#[test]
fn a_record_no_writer_writes_is_damage_at_its_offset_and_adds_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("proc-0002.log");
    write(&path, 5, None, true);
    let mut record = record_of(&access(6));
    record[4] = 200;
    seal(&mut record);
    set_record(&path, &record);
    let r = LogReader::open(&path).unwrap();
    assert_eq!(r.event_count(), 5);
    match r.damage() {
        [
            FormatError::Corrupt {
                offset,
                what,
                detail,
                ..
            },
        ] => {
            assert_eq!((*offset, *what), (RECORD, "pending access"));
            assert!(detail.contains("byte 4"), "{detail}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_record_whose_check_fails_is_damage_and_adds_no_access() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("proc-0002.log");
    write(&path, 5, None, true);
    // A byte of the version flipped: a valid-looking access the program never made.
    let mut record = record_of(&access(6));
    record[16] ^= 0x40;
    set_record(&path, &record);
    let r = LogReader::open(&path).unwrap();
    assert_eq!((r.event_count(), r.pending_access()), (5, None));
    match r.damage() {
        [FormatError::Corrupt { offset, detail, .. }] => {
            assert_eq!(*offset, RECORD);
            assert!(detail.contains("bytes 40..48: the check"), "{detail}");
        }
        other => panic!("{other:?}"),
    }
}

/// The record of `a`, as `docs/format.md` §3.1 lays it out.
fn record_of(a: &PendingAccess) -> [u8; 64] {
    let mut r = [0u8; 64];
    r[..4].copy_from_slice(b"PACC");
    r[4] = AtomicOp::ALL.iter().position(|o| *o == a.op).unwrap() as u8;
    r[5] = MemOrdering::ALL
        .iter()
        .position(|o| *o == a.ordering)
        .unwrap() as u8;
    r[8..16].copy_from_slice(&a.object.0.to_le_bytes());
    r[16..24].copy_from_slice(&a.version.to_le_bytes());
    r[24..28].copy_from_slice(&a.prev.map_or(0, |p| p.0 + 1).to_le_bytes());
    seal(&mut r);
    r
}

/// Writes the check of the record's fields into bytes 40..48, as `docs/format.md` §3.1 says.
fn seal(r: &mut [u8; 64]) {
    let long = |at: usize| u64::from_le_bytes(r[at..at + 8].try_into().unwrap());
    let short = u64::from(u32::from_le_bytes(r[36..40].try_into().unwrap()));
    let check = long(4)
        ^ long(12).rotate_left(13)
        ^ long(20).rotate_left(29)
        ^ long(28).rotate_left(43)
        ^ short.rotate_left(53)
        ^ 0x5050_4143_4348_4b21;
    r[40..48].copy_from_slice(&check.to_le_bytes());
}

fn set_record(path: &Path, record: &[u8; 64]) {
    let file = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    file.write_all_at(record, RECORD).unwrap();
}
