//! Writing logs and reading them back: complete, crashed, spanning, seeking.

use std::panic::Location;
use std::path::Path;

use ppd_formats::event::{ObjectKind, RecvOutcome};
use ppd_formats::{
    Borrowed, Event, EventKind, LogIdentity, LogReader, LogState, LogWriter, ObjectId, ProcessId,
    WriterOptions,
};

fn identity() -> LogIdentity {
    LogIdentity {
        process_id: ProcessId(3),
        parent: Some(ProcessId(0)),
        name: "teller".into(),
        os_pid: std::process::id(),
    }
}

fn small_blocks() -> WriterOptions {
    WriterOptions {
        block_size: 4096,
        ring_blocks: 4,
        ..WriterOptions::default()
    }
}

/// The `i`-th event of a deterministic mix of kinds, some with payloads.
fn event_at(i: u64, payload: &[u8]) -> Event<Borrowed<'_>> {
    let ch = ObjectId::new(ProcessId(1), (i % 3) as u32);
    let site = Some(Location::caller());
    match i % 7 {
        0 => Event::Send {
            channel: ch,
            seq: i / 7 + 1,
            site,
            payload: None,
        },
        1 => Event::Recv {
            channel: ch,
            sender: ProcessId((i % 5) as u32),
            seq: i / 7 + 1,
            site,
            payload: if i.is_multiple_of(2) {
                Some(payload)
            } else {
                None
            },
        },
        2 => Event::RecvNone {
            channel: ch,
            outcome: RecvOutcome::Empty,
            site,
        },
        3 => Event::Random { value: i * 31 },
        4 => Event::Create {
            object: ch,
            kind: ObjectKind::Channel,
            init: 0,
            name: Some("requests"),
            site,
        },
        5 => Event::Mark {
            label: "balance",
            site,
            value: payload,
        },
        _ => Event::Clock {
            source: ppd_formats::event::ClockSource::Monotonic,
            nanos: i * 1000,
        },
    }
}

fn write_events(path: &Path, n: u64, options: WriterOptions) -> LogWriter {
    let mut w = LogWriter::create(path, &identity(), options).unwrap();
    for i in 0..n {
        let payload = i.to_le_bytes();
        w.append(&event_at(i, &payload)).unwrap();
    }
    w
}

fn assert_event_matches(i: u64, got: &Event) {
    let payload = i.to_le_bytes();
    let want = event_at(i, &payload);
    assert_eq!(got.kind(), want.kind(), "event {i}");
    match (got, &want) {
        (Event::Random { value: a }, Event::Random { value: b }) => assert_eq!(a, b),
        (
            Event::Recv {
                seq: a,
                payload: pa,
                ..
            },
            Event::Recv {
                seq: b,
                payload: pb,
                ..
            },
        ) => {
            assert_eq!(a, b, "event {i}");
            assert_eq!(pa.as_deref(), *pb, "event {i}");
        }
        (Event::Mark { value: a, .. }, Event::Mark { value: b, .. }) => {
            assert_eq!(&a[..], *b, "event {i}")
        }
        _ => {}
    }
}

#[test]
fn a_closed_log_reads_back_every_event_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.log");
    let stats = write_events(&path, 5_000, small_blocks()).close().unwrap();
    assert_eq!(stats.events, 5_000);
    assert!(
        stats.blocks > 5,
        "small blocks must have been sealed: {stats:?}"
    );

    let r = LogReader::open(&path).unwrap();
    assert_eq!(r.state(), LogState::Complete);
    assert!(r.damage().is_empty(), "{:?}", r.damage());
    assert_eq!(r.event_count(), 5_000);
    assert_eq!(r.identity(), &identity());
    let mut n = 0;
    for item in r.events() {
        let (i, e) = item.unwrap();
        assert_eq!(i, n);
        assert_event_matches(i, &e);
        n += 1;
    }
    assert_eq!(n, 5_000);
    let counts = r.kind_counts().unwrap();
    let recv = counts
        .iter()
        .find(|(k, _)| *k == EventKind::Recv)
        .unwrap()
        .1;
    assert_eq!(recv, (0..5_000).filter(|i| i % 7 == 1).count() as u64);
}

#[test]
fn seeking_finds_every_event_without_reading_from_the_start() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.log");
    write_events(&path, 3_000, small_blocks()).close().unwrap();
    let r = LogReader::open(&path).unwrap();
    for k in [0, 1, 6, 7, 499, 1500, 2998, 2999] {
        let e = r.get(k).unwrap();
        assert_event_matches(k, &e);
        let mut from = r.events_from(k).unwrap();
        let (i, _) = from.next().unwrap().unwrap();
        assert_eq!(i, k);
    }
    let err = r.get(3_000).unwrap_err().to_string();
    assert!(err.contains("event 3000 is out of range"), "{err}");
}

/// The files this process holds open whose path is `path`.
fn open_files_of(path: &Path) -> usize {
    std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|fd| std::fs::read_link(fd.ok()?.path()).ok())
        .filter(|target| target == path)
        .count()
}

#[test]
fn an_iteration_that_owns_its_reader_reads_every_event_and_closes_the_log_when_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.log");
    write_events(&path, 3_000, small_blocks()).close().unwrap();
    let path = path.canonicalize().unwrap();

    let whole = LogReader::open(&path).unwrap().into_events();
    assert_eq!(open_files_of(&path), 1);
    let indexes: Vec<u64> = whole.map(|item| item.unwrap().0).collect();
    assert_eq!(indexes, (0..3_000).collect::<Vec<_>>());
    assert_eq!(
        open_files_of(&path),
        0,
        "the log stayed open after its events"
    );

    let mut from = LogReader::open(&path)
        .unwrap()
        .into_events_from(1500)
        .unwrap();
    let (i, e) = from.next().unwrap().unwrap();
    assert_eq!(i, 1500);
    assert_event_matches(i, &e);
    drop(from);
    assert_eq!(open_files_of(&path), 0);
    let err = LogReader::open(&path)
        .unwrap()
        .into_events_from(3_000)
        .unwrap_err();
    assert!(
        err.to_string().contains("event 3000 is out of range"),
        "{err}"
    );
}

#[test]
fn records_larger_than_a_block_span_several_blocks() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.log");
    let mut w = LogWriter::create(&path, &identity(), small_blocks()).unwrap();
    let big: Vec<u8> = (0..20_000u32).map(|i| (i % 251) as u8).collect();
    let exact = vec![7u8; 4096 - 64 - 16];
    let sizes = [10usize, 20_000, 5, 4096, 3, 20_000, 20_000, 1];
    for (i, &size) in sizes.iter().enumerate() {
        let value = if size == 4096 {
            &exact[..]
        } else {
            &big[..size]
        };
        w.append(&Event::Mark {
            label: "big",
            site: None,
            value,
        })
        .unwrap();
        w.append(&Event::Random { value: i as u64 }).unwrap();
    }
    w.close().unwrap();
    let r = LogReader::open(&path).unwrap();
    assert!(r.damage().is_empty(), "{:?}", r.damage());
    let events: Vec<_> = r.events().map(|e| e.unwrap().1).collect();
    assert_eq!(events.len(), sizes.len() * 2);
    for (i, &size) in sizes.iter().enumerate() {
        let Event::Mark { value, .. } = &events[2 * i] else {
            panic!("expected a mark at {}", 2 * i)
        };
        assert_eq!(value.len(), if size == 4096 { exact.len() } else { size });
        assert_eq!(events[2 * i + 1], Event::Random { value: i as u64 });
    }
    // Seeking straight to an event that follows a spanned record.
    assert_eq!(r.get(3).unwrap(), Event::Random { value: 1 });
    assert_eq!(r.get(13).unwrap(), Event::Random { value: 6 });
}

#[test]
fn a_log_whose_writer_vanished_is_recovered_from_frames_and_ring() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.log");
    let w = write_events(&path, 2_345, small_blocks());
    // No close: as if the process died here. Records already copied into the ring survive.
    std::mem::forget(w);
    // Give the compressor time to work on what it was handed; either way nothing is lost.
    std::thread::sleep(std::time::Duration::from_millis(100));
    let r = LogReader::open(&path).unwrap();
    assert_eq!(r.state(), LogState::Recovered);
    assert!(r.damage().is_empty(), "{:?}", r.damage());
    assert_eq!(r.event_count(), 2_345);
    for item in r.events() {
        let (i, e) = item.unwrap();
        assert_event_matches(i, &e);
    }
    assert!(r.ring_bytes() > 0, "the open block can only be in the ring");
}

#[test]
fn an_empty_log_is_complete_with_no_events() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.log");
    LogWriter::create(&path, &identity(), small_blocks())
        .unwrap()
        .close()
        .unwrap();
    let r = LogReader::open(&path).unwrap();
    assert_eq!(r.state(), LogState::Complete);
    assert_eq!(r.event_count(), 0);
    assert_eq!(r.events().count(), 0);
}

#[test]
fn a_log_whose_writer_vanished_before_its_first_event_holds_no_events_and_no_damage() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.log");
    // As if the process died right after creating its log: a process that never started.
    std::mem::forget(LogWriter::create(&path, &identity(), small_blocks()).unwrap());
    let r = LogReader::open(&path).unwrap();
    assert!(r.damage().is_empty(), "{:?}", r.damage());
    assert_eq!(r.state(), LogState::Recovered);
    assert_eq!(r.event_count(), 0);
}

#[test]
fn bad_writer_options_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let options = WriterOptions {
        block_size: 1000,
        ..WriterOptions::default()
    };
    let err = LogWriter::create(&dir.path().join("p.log"), &identity(), options).unwrap_err();
    assert!(err.to_string().contains("multiple of 4096"), "{err}");
}

#[test]
fn a_log_appears_under_its_name_only_with_its_header_and_never_replaces_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let names = || -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    // A header that cannot be written: nothing is left, not even the temporary file.
    let mut long = identity();
    long.name = "n".repeat(8000);
    let Err(err) = LogWriter::create(&dir.path().join("proc-0001.log"), &long, small_blocks())
    else {
        panic!("a name longer than the header region is refused");
    };
    assert!(err.to_string().contains("process name too long"), "{err}");
    assert!(names().is_empty(), "left behind: {:?}", names());
    // A log is opened by readers as soon as its name exists: its header is already whole.
    let path = dir.path().join("proc-0002.log");
    let writer = LogWriter::create(&path, &identity(), small_blocks()).unwrap();
    assert_eq!(names(), ["proc-0002.log"]);
    assert_eq!(LogReader::open(&path).unwrap().identity(), &identity());
    // An existing file is never replaced.
    let Err(err) = LogWriter::create(&path, &identity(), small_blocks()) else {
        panic!("the name is taken");
    };
    assert!(err.to_string().contains("proc-0002.log"), "{err}");
    assert_eq!(names(), ["proc-0002.log"]);
    writer.close().unwrap();
}
