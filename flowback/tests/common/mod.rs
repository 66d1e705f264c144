//! What the analysis tests share: recordings assembled by hand with the real log writer.

use std::path::Path;

use ppd_formats::manifest::{Manifest, RecordOptions};
use ppd_formats::{Borrowed, Event, LogIdentity, LogWriter, ProcessId, WriterOptions};

/// The manifest of a synthetic recording of `processes` (id, name) with small rings.
pub(crate) fn manifest(processes: &[(u32, &str)]) -> Manifest {
    let options = RecordOptions {
        payloads: false,
        fsync: false,
        block_size: 4096,
        ring_blocks: 2,
    };
    let processes = processes
        .iter()
        .map(|&(id, name)| (ProcessId(id), name.to_owned()));
    Manifest::synthetic("prog", options, processes)
}

/// Writes process `id`'s log in `dir`, replacing any log it had (the writer creates its log
/// exclusively).
pub(crate) fn write_log(dir: &Path, id: u32, name: &str, events: &[Event<Borrowed<'_>>]) {
    let identity = LogIdentity {
        process_id: ProcessId(id),
        parent: (id != 0).then_some(ProcessId(0)),
        name: name.into(),
        os_pid: 1,
    };
    let options = WriterOptions {
        block_size: 4096,
        ring_blocks: 2,
        ..WriterOptions::default()
    };
    let path = dir.join(Manifest::log_name(ProcessId(id)));
    let _ = std::fs::remove_file(&path);
    let mut w = LogWriter::create(&path, &identity, options).unwrap();
    for e in events {
        w.append(e).unwrap();
    }
    w.close().unwrap();
}
