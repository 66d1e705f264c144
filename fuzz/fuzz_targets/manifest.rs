//! Any bytes, read as a recording's manifest: no panic.

#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use ppd_formats::{Manifest, Recording};

/// One recording directory per fuzzing process, its manifest rewritten for every input.
static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();

fuzz_target!(|data: &[u8]| {
    let dir = DIR.get_or_init(|| tempfile::tempdir().expect("create a temporary directory"));
    std::fs::write(dir.path().join("manifest.json"), data).expect("write the input");
    if let Ok(manifest) = Manifest::read(dir.path()) {
        // What the reader accepts is what it can read: no older, no newer.
        let readable = ppd_formats::OLDEST_READABLE_VERSION..=ppd_formats::FORMAT_VERSION;
        assert!(readable.contains(&manifest.format_version));
    }
    if let Ok(recording) = Recording::open(dir.path()) {
        for process in recording.processes() {
            let _ = recording.open_log(process);
        }
    }
});
