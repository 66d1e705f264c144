//! The BLAKE3 hash of a recorded program's binary, which replay, `ppd why` and phase two check
//! before they run a binary: hashed once per build, then remembered by the file's identity.
//!
//! Hashing a 35 MiB binary takes 10–20 ms. `ppd record` pays it before the program starts (a
//! program killed early must still leave the hash), and every replay pays it again: a fixed
//! cost that a short program, run often, feels most. So a hash is remembered in
//! `$XDG_CACHE_HOME/ppd/program-hashes` (else `~/.cache/...`), one entry per file named by its
//! device and inode, holding its size, modification and status-change times (to the
//! nanosecond) and the hash. A rebuilt, copied-over or edited binary has a new status-change
//! time, which no unprivileged program can set back, so it is hashed again.
//!
//! Any doubt means hashing the file: no cache directory, an entry that is malformed, not the
//! user's own or writable by others, or whose identity differs. A hash is remembered only when
//! the file's identity was the same before and after it was read, so a binary rebuilt while it
//! was being hashed is never remembered with the wrong hash. Remembering is best effort: a
//! cache that cannot be written changes nothing but the time.

use std::fs;
use std::io;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Hashes a file with BLAKE3, hex-encoded, reading all of it. Replay and `ppd why` run only a
/// binary whose hash equals the recorded one, so a file that cannot be hashed is an error,
/// never an empty hash.
///
/// Read through a small buffer rather than mapped: a mapped binary (tens of MiB with debug
/// information) would count in the recorded program's peak memory.
pub fn hash_file(path: &Path) -> io::Result<String> {
    let mut hasher = blake3::Hasher::new();
    // A FIFO or a device in place of the program would never end (or never start) the read.
    let file = ppd_formats::private::open_regular(path, "hash the program")
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    hasher.update_reader(file)?;
    Ok(hasher.finalize().to_hex().to_string())
}

/// The hash of the program binary at `path`: remembered, or [`hash_file`] and remembered.
pub fn program_hash(path: &Path) -> io::Result<String> {
    program_hash_with(path, cache_dir().as_deref())
}

/// [`program_hash`] remembering in `cache` (none: always hash).
pub fn program_hash_with(path: &Path, cache: Option<&Path>) -> io::Result<String> {
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
/// `$HOME/.cache/ppd/program-hashes` (absolute paths only).
fn cache_dir() -> Option<PathBuf> {
    let absolute = |v: std::ffi::OsString| Some(PathBuf::from(v)).filter(|p| p.is_absolute());
    let base = std::env::var_os("XDG_CACHE_HOME")
        .and_then(absolute)
        .or_else(|| {
            std::env::var_os("HOME")
                .and_then(absolute)
                .map(|h| h.join(".cache"))
        })?;
    Some(base.join("ppd").join("program-hashes"))
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

    /// The entry's line: size, the two times, then the hash.
    fn line(&self, hash: &str) -> String {
        format!(
            "{} {} {} {} {} {hash}\n",
            self.size, self.modified.0, self.modified.1, self.changed.0, self.changed.1
        )
    }
}

/// The hash `entry` remembers for a file of identity `file`, if the entry is the user's own,
/// well formed, and for that identity.
fn remembered(entry: &Path, file: &Identity) -> Option<String> {
    let meta = fs::symlink_metadata(entry).ok()?;
    let own = meta.file_type().is_file()
        && meta.uid() == nix::unistd::geteuid().as_raw()
        && meta.permissions().mode() & 0o022 == 0;
    if !own {
        return None;
    }
    let text = fs::read_to_string(entry).ok()?;
    let hash = text.trim_end().rsplit(' ').next()?;
    let well_formed = hash.len() == 64 && hash.bytes().all(|b| b.is_ascii_hexdigit());
    (well_formed && text == file.line(hash)).then(|| hash.to_owned())
}

/// Remembers `hash` for a file of identity `file` in `entry`, if the cache can be written.
fn remember(entry: &Path, file: &Identity, hash: &str) {
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

    #[test]
    fn a_remembered_hash_is_used_while_the_file_is_the_same_and_dropped_when_it_changes() {
        let tmp = tempfile::tempdir().unwrap();
        let cache = tmp.path().join("cache/ppd/program-hashes");
        let path = binary(tmp.path(), b"the first build");
        let first = program_hash_with(&path, Some(&cache)).unwrap();
        assert_eq!(first, hash_file(&path).unwrap());
        // The entry is what answers: plant a different hash for the same identity.
        let entry = cache.join(Identity::of(&path).unwrap().entry_name());
        let planted = "ab".repeat(32);
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
        for bad in [
            "garbage".to_owned(),
            id.line("not-a-hash"),
            id.line(&"ab".repeat(31)),
            format!("{}trailing\n", id.line(&"ab".repeat(32))),
        ] {
            ppd_formats::private::write_atomic(&entry, bad.as_bytes(), false).unwrap();
            assert_eq!(
                program_hash_with(&path, Some(&cache)).unwrap(),
                real,
                "{bad:?}"
            );
        }
        // Well formed but writable by others: not trusted.
        let planted = id.line(&"cd".repeat(32));
        ppd_formats::private::write_atomic(&entry, planted.as_bytes(), false).unwrap();
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
}
