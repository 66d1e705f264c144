//! Writes the seed inputs of the fuzz targets into `seeds/`: small valid logs (closed, crashed,
//! with a record spanning blocks, with a pending access) and manifests. Run from `fuzz/`: `cargo run --example seeds`.

use std::fs;
use std::path::Path;
use std::time::Duration;

use ppd_formats::event::{AtomicOp, MemOrdering, ObjectKind};
use ppd_formats::pending::PendingAccess;
use ppd_formats::manifest::{ProcessEntry, Program, RecordOptions};
use ppd_formats::{
    Borrowed, Event, FORMAT_VERSION, LogIdentity, LogWriter, Manifest, ObjectId, ProcessId,
    WriterOptions,
};

fn options() -> WriterOptions {
    WriterOptions {
        block_size: 4096,
        ring_blocks: 2,
        ..WriterOptions::default()
    }
}

fn identity() -> LogIdentity {
    LogIdentity {
        process_id: ProcessId(1),
        parent: Some(ProcessId(0)),
        name: "worker".into(),
        os_pid: 1,
    }
}

fn event(i: u64, big: &[u8]) -> Event<Borrowed<'_>> {
    let channel = ObjectId::new(ProcessId(0), (i % 2) as u32);
    let site = Some(std::panic::Location::caller());
    match i % 5 {
        0 => Event::Create {
            object: channel,
            kind: ObjectKind::Channel,
            init: 0,
            name: Some("jobs"),
            site,
        },
        1 => Event::Recv {
            channel,
            sender: ProcessId(2),
            seq: i,
            site,
            payload: Some(&big[..3]),
        },
        2 => Event::Random { value: i },
        3 => Event::Mark {
            label: "m",
            site: None,
            value: if i == 3 { big } else { &big[..1] },
        },
        _ => Event::Lock {
            object: channel,
            version: i,
            prev: Some(ProcessId(0)),
            site,
            value: None,
        },
    }
}

fn write(path: &Path, events: u64) -> LogWriter {
    let big: Vec<u8> = (0..5000u32).map(|i| i as u8).collect();
    let mut w = LogWriter::create(path, &identity(), options()).unwrap();
    for i in 0..events {
        w.append(&event(i, &big)).unwrap();
    }
    w
}

fn main() {
    let seeds = Path::new("seeds");
    let reader = seeds.join("reader");
    let manifests = seeds.join("manifest");
    let _ = fs::remove_dir_all(seeds);
    fs::create_dir_all(&reader).unwrap();
    fs::create_dir_all(&manifests).unwrap();

    write(&reader.join("empty.log"), 0).close().unwrap();
    write(&reader.join("few.log"), 8).close().unwrap();
    write(&reader.join("frames.log"), 600).close().unwrap();
    // An atomic access pended and never appended: the reader rebuilds it from the record.
    let mut pending = write(&reader.join("pending.log"), 8);
    pending.pend(&PendingAccess {
        object: ObjectId::new(ProcessId(0), 1),
        version: 3,
        prev: Some(ProcessId(2)),
        op: AtomicOp::Rmw,
        ordering: MemOrdering::SeqCst,
        failure: None,
        value: Some(7),
    });
    pending.close().unwrap();
    // A crashed log: copied while its writer is alive, once the compressor has caught up.
    let tmp = tempfile::tempdir().unwrap();
    let live = tmp.path().join("live.log");
    let writer = write(&live, 700);
    std::thread::sleep(Duration::from_millis(200));
    fs::copy(&live, reader.join("crashed.log")).unwrap();
    drop(writer);

    let manifest = Manifest {
        format_version: FORMAT_VERSION,
        program: Program {
            path: "/usr/local/bin/farm".into(),
            size: 1,
            blake3: "00".into(),
        },
        argv: vec!["farm".into(), "--workers".into(), "2".into()],
        cwd: "/".into(),
        host: "host".into(),
        node: None,
        run: None,
        os_pid: 1,
        start_unix_ns: 1_700_000_000_000_000_000,
        start_time: Manifest::rfc3339(1_700_000_000_000_000_000),
        options: RecordOptions {
            payloads: true,
            fsync: false,
            block_size: 4096,
            ring_blocks: 2,
        },
        processes: vec![ProcessEntry {
            id: ProcessId(0),
            name: "main".into(),
            parent: None,
            host: "host".into(),
            os_pid: 1,
            log: Manifest::log_name(ProcessId(0)),
            node: 0,
        }],
        end: None,
        stopped: None,
    };
    let json = serde_json(&manifest);
    fs::write(manifests.join("running.json"), &json).unwrap();
    let ended = json.replace(
        "\"end\": null",
        "\"end\": {\"unix_ns\": 1700000001000000000, \"exit_code\": 0, \"panicked\": false, \
         \"events\": 10, \"stalls\": 0}",
    );
    fs::write(manifests.join("ended.json"), ended).unwrap();
}

/// The manifest as `Manifest::write` puts it on disk.
fn serde_json(manifest: &Manifest) -> String {
    let dir = tempfile::tempdir().unwrap();
    manifest.write(dir.path(), false).unwrap();
    fs::read_to_string(dir.path().join("manifest.json")).unwrap()
}
