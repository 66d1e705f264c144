//! The BLAKE3 hash of a recorded program's binary, which replay, `ppd why` and phase two check
//! before they run a binary, and whether the binary is a ppd program at all (it carries the
//! runtime's marker, `runtime/marker.rs`): found in one read of the file, once per build, then
//! remembered by the file's identity.
//!
//! Hashing a 35 MiB binary takes 10–20 ms. `ppd record` pays it before the program starts (a
//! program killed early must still leave the hash), and every replay pays it again: a fixed
//! cost that a short program, run often, feels most. So a hash is remembered in
//! `$XDG_CACHE_HOME/ppd/program-hashes` (else `~/.cache/...`), one entry per file named by its
//! device and inode, holding its size, modification and status-change times (to the
//! nanosecond), whether it is a ppd program, and the hash. A rebuilt, copied-over or edited
//! binary has a new status-change time, which no unprivileged program can set back, so it is
//! hashed again.
//!
//! Any doubt means hashing the file: no cache directory, an entry that is malformed, not the
//! user's own or writable by others, or whose identity differs. A hash is remembered only when
//! the file's identity was the same before and after it was read, so a binary rebuilt while it
//! was being hashed is never remembered with the wrong hash. Remembering is best effort: a
//! cache that cannot be written changes nothing but the time.

use std::fs;
use std::io::{self, Read};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use super::marker;

/// What one read of a binary tells.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProgramHash {
    /// BLAKE3 of its contents, hex.
    pub blake3: String,
    /// It is a native executable (ELF or Mach-O) that carries the ppd runtime's marker: a
    /// program built with ppd, not a shell or another tool.
    pub ppd_program: bool,
}

/// The first bytes of the executables a ppd program can be: ELF, and Mach-O (thin, either
/// byte order, and universal).
const EXECUTABLE_MAGIC: [[u8; 4]; 6] = [
    *b"\x7fELF",
    [0xcf, 0xfa, 0xed, 0xfe],
    [0xce, 0xfa, 0xed, 0xfe],
    [0xfe, 0xed, 0xfa, 0xcf],
    [0xfe, 0xed, 0xfa, 0xce],
    [0xca, 0xfe, 0xba, 0xbe],
];

/// Hashes a file with BLAKE3, hex-encoded, reading all of it, and looks for the ppd marker in
/// the same read. Replay and `ppd why` run only a binary whose hash equals the recorded one, so
/// a file that cannot be hashed is an error, never an empty hash.
///
/// Read through a small buffer rather than mapped: a mapped binary (tens of MiB with debug
/// information) would count in the recorded program's peak memory.
pub fn hash_file(path: &Path) -> io::Result<ProgramHash> {
    // A FIFO or a device in place of the program would never end (or never start) the read.
    let mut file = ppd_formats::private::open_regular(path, "hash the program")
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    let needle = marker::needle();
    let finder = memchr::memmem::Finder::new(&needle);
    let mut hasher = blake3::Hasher::new();
    let mut buffer = vec![0u8; 64 * 1024];
    // The last bytes read before this chunk, where a marker cut by the buffer's edge begins.
    let overlap = needle.len() - 1;
    let mut tail: Vec<u8> = Vec::with_capacity(2 * overlap);
    let mut head = Vec::with_capacity(4);
    let mut found = false;
    loop {
        let n = match file.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let chunk = &buffer[..n];
        hasher.update(chunk);
        if head.len() < 4 {
            head.extend_from_slice(&chunk[..(4 - head.len()).min(n)]);
        }
        if found {
            continue;
        }
        let seam_end = tail.len();
        tail.extend_from_slice(&chunk[..overlap.min(n)]);
        found = finder.find(&tail).is_some() || finder.find(chunk).is_some();
        tail.truncate(seam_end);
        tail.extend_from_slice(&chunk[n.saturating_sub(overlap)..]);
        let excess = tail.len().saturating_sub(overlap);
        tail.drain(..excess);
    }
    let native = EXECUTABLE_MAGIC.iter().any(|magic| head == magic);
    Ok(ProgramHash {
        blake3: hasher.finalize().to_hex().to_string(),
        ppd_program: native && found,
    })
}

/// The hash of the program binary at `path`: remembered, or [`hash_file`] and remembered.
pub fn program_hash(path: &Path) -> io::Result<ProgramHash> {
    program_hash_with(path, cache_dir().as_deref())
}

/// [`program_hash`] remembering in `cache` (none: always hash).
pub fn program_hash_with(path: &Path, cache: Option<&Path>) -> io::Result<ProgramHash> {
    let before = Identity::of(path)?;
    let entry = cache.map(|dir| dir.join(before.entry_name()));
    if let Some(hash) = entry.as_deref().and_then(|e| remembered(e, &before)) {
        return Ok(hash);
    }
    let hash = hash_file(path)?;
    if let Some(entry) = entry
        && Identity::of(path).is_ok_and(|after| after == before)
    {
        remember(&entry, &before, &hash);
    }
    Ok(hash)
}

/// Where hashes are remembered: `$XDG_CACHE_HOME/ppd/program-hashes`, else
/// `~/.cache/ppd/program-hashes` (`ppd_formats::authenticity::user_dir`).
fn cache_dir() -> Option<PathBuf> {
    ppd_formats::authenticity::user_dir("XDG_CACHE_HOME", ".cache")
        .map(|dir| dir.join("program-hashes"))
}

/// What tells a file's contents apart without reading them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Identity {
    device: u64,
    inode: u64,
    size: u64,
    modified: (i64, i64),
    changed: (i64, i64),
}

impl Identity {
    fn of(path: &Path) -> io::Result<Identity> {
        let m = fs::metadata(path)?;
        Ok(Identity {
            device: m.dev(),
            inode: m.ino(),
            size: m.size(),
            modified: (m.mtime(), m.mtime_nsec()),
            changed: (m.ctime(), m.ctime_nsec()),
        })
    }

    fn entry_name(&self) -> String {
        format!("{:x}-{:x}", self.device, self.inode)
    }

    /// The entry's line: size, the two times, whether it is a ppd program, then the hash.
    fn line(&self, hash: &ProgramHash) -> String {
        format!(
            "{} {} {} {} {} {} {}\n",
            self.size,
            self.modified.0,
            self.modified.1,
            self.changed.0,
            self.changed.1,
            u8::from(hash.ppd_program),
            hash.blake3
        )
    }
}

/// What `entry` remembers for a file of identity `file`, if the entry is the user's own, well
/// formed, and for that identity.
fn remembered(entry: &Path, file: &Identity) -> Option<ProgramHash> {
    let meta = fs::symlink_metadata(entry).ok()?;
    let own = meta.file_type().is_file()
        && meta.uid() == nix::unistd::geteuid().as_raw()
        && meta.permissions().mode() & 0o022 == 0;
    if !own {
        return None;
    }
    let text = fs::read_to_string(entry).ok()?;
    let mut fields = text.trim_end().rsplit(' ');
    let blake3 = fields.next()?;
    let ppd_program = match fields.next()? {
        "1" => true,
        "0" => false,
        _ => return None,
    };
    let well_formed = blake3.len() == 64 && blake3.bytes().all(|b| b.is_ascii_hexdigit());
    let hash = ProgramHash {
        blake3: blake3.to_owned(),
        ppd_program,
    };
    (well_formed && text == file.line(&hash)).then_some(hash)
}

/// Remembers `hash` for a file of identity `file` in `entry`, if the cache can be written.
fn remember(entry: &Path, file: &Identity, hash: &ProgramHash) {
    let Some(dir) = entry.parent() else { return };
    let made = dir
        .parent()
        .is_some_and(|ppd| fs::create_dir_all(ppd).is_ok())
        && ppd_formats::private::ensure_dir(dir).is_ok();
    if made {
        let _ = ppd_formats::private::write_atomic(entry, file.line(hash).as_bytes(), false);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn binary(dir: &Path, contents: &[u8]) -> PathBuf {
        let path = dir.join("program");
        fs::write(&path, contents).unwrap();
        path
    }

    fn planted(hex: &str, ppd_program: bool) -> ProgramHash {
        ProgramHash {
            blake3: hex.to_owned(),
            ppd_program,
        }
    }

    #[test]
    fn a_remembered_hash_is_used_while_the_file_is_the_same_and_dropped_when_it_changes() {
        let tmp = tempfile::tempdir().unwrap();
        let cache = tmp.path().join("cache/ppd/program-hashes");
        let path = binary(tmp.path(), b"the first build");
        let first = program_hash_with(&path, Some(&cache)).unwrap();
        assert_eq!(first, hash_file(&path).unwrap());
        // The entry is what answers: plant a different hash for the same identity.
        let entry = cache.join(Identity::of(&path).unwrap().entry_name());
        let planted = planted(&"ab".repeat(32), true);
        let line = Identity::of(&path).unwrap().line(&planted);
        ppd_formats::private::write_atomic(&entry, line.as_bytes(), false).unwrap();
        assert_eq!(program_hash_with(&path, Some(&cache)).unwrap(), planted);
        // Rewritten in place, same size: its status-change time moves, so it is hashed again.
        std::thread::sleep(std::time::Duration::from_millis(10));
        fs::write(&path, b"the other build").unwrap();
        let again = program_hash_with(&path, Some(&cache)).unwrap();
        assert_eq!(again, hash_file(&path).unwrap());
        assert_ne!(again, first);
    }

    #[test]
    fn a_malformed_or_foreign_entry_is_ignored_and_the_file_hashed() {
        let tmp = tempfile::tempdir().unwrap();
        let cache = tmp.path().join("cache/ppd/program-hashes");
        let path = binary(tmp.path(), b"a build");
        let real = program_hash_with(&path, Some(&cache)).unwrap();
        let id = Identity::of(&path).unwrap();
        let entry = cache.join(id.entry_name());
        let line = |hex: &str| id.line(&planted(hex, true));
        for bad in [
            "garbage".to_owned(),
            line("not-a-hash"),
            line(&"ab".repeat(31)),
            format!("{}trailing\n", line(&"ab".repeat(32))),
            // An entry of the format before the marker was remembered.
            format!(
                "{} {} {} {} {} {}\n",
                id.size,
                id.modified.0,
                id.modified.1,
                id.changed.0,
                id.changed.1,
                "ab".repeat(32)
            ),
            line(&"ab".repeat(32)).replacen(" 1 ", " yes ", 1),
        ] {
            ppd_formats::private::write_atomic(&entry, bad.as_bytes(), false).unwrap();
            assert_eq!(
                program_hash_with(&path, Some(&cache)).unwrap(),
                real,
                "{bad:?}"
            );
        }
        // Well formed but writable by others: not trusted.
        ppd_formats::private::write_atomic(&entry, line(&"cd".repeat(32)).as_bytes(), false)
            .unwrap();
        fs::set_permissions(&entry, fs::Permissions::from_mode(0o666)).unwrap();
        assert_eq!(program_hash_with(&path, Some(&cache)).unwrap(), real);
    }

    #[test]
    fn without_a_cache_the_file_is_hashed() {
        let tmp = tempfile::tempdir().unwrap();
        let path = binary(tmp.path(), b"a build");
        assert_eq!(
            program_hash_with(&path, None).unwrap(),
            hash_file(&path).unwrap()
        );
    }

    #[test]
    fn a_ppd_program_is_an_executable_carrying_the_marker_wherever_the_reads_cut_it() {
        let tmp = tempfile::tempdir().unwrap();
        let needle = marker::needle();
        // The marker at every offset around the reader's 64 KiB buffer edge.
        for at in (64 * 1024 - needle.len() - 1)..(64 * 1024 + 2) {
            let mut bytes = b"\x7fELF".to_vec();
            bytes.resize(at, 0);
            bytes.extend_from_slice(&needle);
            bytes.resize(at + needle.len() + 1000, 0);
            let path = binary(tmp.path(), &bytes);
            let hash = hash_file(&path).unwrap();
            assert!(hash.ppd_program, "marker at {at} not found");
            assert_eq!(hash.blake3, blake3::hash(&bytes).to_hex().to_string());
        }
        // A shell script that quotes the marker is not a ppd program: not an executable.
        let mut script = b"#!/bin/sh\n# ".to_vec();
        script.extend_from_slice(&needle);
        assert!(!hash_file(&binary(tmp.path(), &script)).unwrap().ppd_program);
        // Nor is an executable without the marker, or with only a part of it.
        let mut partial = b"\x7fELF".to_vec();
        partial.extend_from_slice(&needle[..needle.len() - 1]);
        assert!(
            !hash_file(&binary(tmp.path(), &partial))
                .unwrap()
                .ppd_program
        );
        // A file shorter than the magic.
        assert!(!hash_file(&binary(tmp.path(), b"\x7f")).unwrap().ppd_program);
    }

    #[test]
    fn the_system_shell_is_not_a_ppd_program() {
        let shell = fs::canonicalize("/bin/sh").unwrap();
        assert!(!hash_file(&shell).unwrap().ppd_program);
    }
}
