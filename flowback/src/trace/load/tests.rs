use std::panic::Location;
use std::path::Path;

use ppd_formats::event::{AtomicOp, MemOrdering, ObjectKind};
use ppd_formats::{
    Borrowed, Event, LogWriter, Manifest, ObjectId, ProcessId, Recording, WriterOptions,
};

use super::{Piece, parts, read_with};
use crate::trace::{Compact, Ev, EventStore, Trace};

/// Logs of `sizes` events whose blocks start every `block` events.
fn logs(sizes: &[u64], block: u64) -> (Vec<Piece>, Vec<Vec<u64>>) {
    let whole = sizes
        .iter()
        .enumerate()
        .map(|(log, &n)| Piece { log, range: 0..n })
        .collect();
    let starts = sizes
        .iter()
        .map(|&n| (0..n).step_by(block as usize).collect())
        .collect();
    (whole, starts)
}

#[track_caller]
fn check(sizes: &[u64], block: u64, threads: usize, expected: &[&[(usize, u64, u64)]]) {
    let (whole, starts) = logs(sizes, block);
    let cost = vec![1.0; sizes.len()];
    let got: Vec<Vec<(usize, u64, u64)>> = parts(&whole, &starts, &cost, threads)
        .into_iter()
        .map(|part| {
            part.into_iter()
                .map(|p| (p.log, p.range.start, p.range.end))
                .collect()
        })
        .collect();
    assert_eq!(got, expected);
}

#[test]
fn a_large_log_is_cut_where_a_block_starts_so_that_each_thread_reads_about_half() {
    // Shaped like `bank`: a teller with half the events, four clients.
    check(
        &[23, 5_613_194, 17, 1_352_465, 1_351_456],
        4096,
        2,
        &[
            &[(0, 0, 23), (1, 0, 4_161_536)],
            &[
                (1, 4_161_536, 5_613_194),
                (2, 0, 17),
                (3, 0, 1_352_465),
                (4, 0, 1_351_456),
            ],
        ],
    );
}

#[test]
fn logs_that_fit_are_not_cut_and_empty_logs_keep_their_place() {
    check(
        &[10, 0, 10],
        4,
        2,
        &[&[(0, 0, 10)], &[(1, 0, 0), (2, 0, 10)]],
    );
    check(&[7], 4, 1, &[&[(0, 0, 7)]]);
    check(&[0, 0], 4, 2, &[&[(0, 0, 0), (1, 0, 0)]]);
}

#[test]
fn the_last_thread_takes_what_is_left() {
    check(&[100], 40, 2, &[&[(0, 0, 80)], &[(0, 80, 100)]]);
    check(&[100], 200, 3, &[&[(0, 0, 100)]]);
}

/// Writes a run of `clients` processes that send to a server, lock a shared mutex, increment a
/// shared atomic and mark their progress, `rounds` times each, in small blocks so that a log
/// spans many of them.
fn write_run(dir: &Path, clients: u32, rounds: u64) {
    let processes = clients + 2;
    let options = WriterOptions {
        block_size: 4096,
        ..WriterOptions::default()
    };
    let names: Vec<String> = (0..processes)
        .map(|id| match id {
            0 => "main".to_owned(),
            1 => "server".to_owned(),
            c => format!("client-{c}"),
        })
        .collect();
    let mut logs = Manifest::create_synthetic(dir, "run", &names, options).unwrap();
    let put = |logs: &mut Vec<LogWriter>, p: u32, e: &Event<Borrowed<'_>>| {
        logs[p as usize].append(e).unwrap();
    };
    let (here, there) = (Location::caller(), Location::caller());
    let channel = ObjectId::new(ProcessId(0), 0);
    let mutex = ObjectId::new(ProcessId(1), 0);
    put(&mut logs, 0, &Event::Start { parent: None });
    put(
        &mut logs,
        0,
        &Event::Create {
            object: channel,
            kind: ObjectKind::Channel,
            init: 0,
            name: Some("requests"),
            site: Some(here),
        },
    );
    for p in 1..processes {
        put(
            &mut logs,
            0,
            &Event::Spawn {
                child: ProcessId(p),
                site: Some(here),
            },
        );
        put(
            &mut logs,
            p,
            &Event::Start {
                parent: Some(ProcessId(0)),
            },
        );
    }
    let (mut seq, mut version, mut access) = (0, 0, 0);
    let mut last_holder = None;
    for round in 0..rounds {
        for c in 0..clients {
            let client = 2 + c;
            seq += 1;
            // Each client's first events name objects the server's log meets later.
            let counter = ObjectId::new(ProcessId(client), 0);
            put(
                &mut logs,
                client,
                &Event::Mark {
                    label: "round",
                    site: Some(there),
                    value: &[],
                },
            );
            put(
                &mut logs,
                client,
                &Event::Send {
                    channel,
                    seq,
                    site: Some(here),
                    payload: None,
                },
            );
            access += 1;
            put(
                &mut logs,
                client,
                &Event::Atomic {
                    object: counter,
                    version: round + 1,
                    prev: None,
                    op: AtomicOp::Rmw,
                    ordering: MemOrdering::Relaxed,
                    failure: None,
                    site: Some(there),
                    value: None,
                },
            );
            put(
                &mut logs,
                1,
                &Event::Recv {
                    channel,
                    sender: ProcessId(client),
                    seq,
                    site: Some(there),
                    payload: None,
                },
            );
            version += 1;
            put(
                &mut logs,
                1,
                &Event::Lock {
                    object: mutex,
                    version,
                    prev: last_holder,
                    site: Some(here),
                    value: None,
                },
            );
            last_holder = Some(ProcessId(1));
            put(
                &mut logs,
                1,
                &Event::Unlock {
                    object: mutex,
                    site: Some(here),
                },
            );
        }
    }
    let _ = access;
    for p in (1..processes).chain([0]) {
        put(&mut logs, p, &Event::Exit);
    }
    for log in logs {
        log.close().unwrap();
    }
}

/// Everything a trace holds that an analysis reads, as text.
fn contents<S: EventStore>(trace: &Trace<S>) -> String {
    let mut out = String::new();
    for p in trace.processes() {
        let events: Vec<Ev> = p.events.iter().collect();
        out += &format!(
            "{:?} {} {:?} complete={} damage={:?}\n{events:?}\n",
            p.id, p.name, p.parent, p.complete, p.damage
        );
    }
    out += &format!("{:?}\n", trace.objects());
    for o in 0..trace.objects().len() as u32 {
        out += &format!("{}\n", trace.object(o).label());
    }
    out
}

#[track_caller]
fn same_however_read(dir: &Path) {
    let recording = Recording::open(dir).unwrap();
    let alone: Trace = read_with(&recording, 1, u64::MAX).unwrap();
    let expected = contents(&alone);
    for threads in [2, 3, 5] {
        let full: Trace = read_with(&recording, threads, 0).unwrap();
        assert_eq!(
            contents(&full),
            expected,
            "{threads} threads, events kept whole"
        );
        let compact: Trace<Compact> = read_with(&recording, threads, 0).unwrap();
        assert_eq!(
            contents(&compact),
            expected,
            "{threads} threads, compact events"
        );
    }
    let logged = Trace::load_logged(&recording).unwrap();
    assert_eq!(contents(&logged), expected, "events left in their logs");
    for (p, proc) in alone.processes().iter().enumerate() {
        let left = &logged.processes()[p].events;
        for k in (0..proc.events.len()).step_by(97) {
            assert_eq!(left.at(k), proc.events.at(k), "event {k} of {}", proc.name);
            assert_eq!(left.iter_from(k).nth(3), proc.events.iter_from(k).nth(3));
        }
    }
}

#[test]
fn a_recording_read_on_several_threads_is_the_one_read_on_one() {
    let dir = tempfile::tempdir().unwrap();
    write_run(dir.path(), 3, 2000);
    same_however_read(dir.path());
}

#[test]
fn a_log_damaged_in_the_middle_is_read_to_its_damage_however_many_threads_read_it() {
    let dir = tempfile::tempdir().unwrap();
    write_run(dir.path(), 3, 2000);
    let server = dir.path().join(Manifest::log_name(ProcessId(1)));
    let mut bytes = std::fs::read(&server).unwrap();
    // Frames follow the 4096-byte header and the ring (docs/format.md §3); the index ends the
    // file. A third of the way into the frames is a block in the middle of the log.
    let frames = 4096 + 8 * 4096;
    let middle = frames + (bytes.len() - frames) / 3;
    for b in &mut bytes[middle..middle + 64] {
        *b ^= 0x5a;
    }
    std::fs::write(&server, bytes).unwrap();
    same_however_read(dir.path());
    let recording = Recording::open(dir.path()).unwrap();
    let trace: Trace = read_with(&recording, 2, 0).unwrap();
    let server = &trace.processes()[1];
    assert!(!server.damage.is_empty(), "the damage is listed");
    assert!(!server.complete);
}
