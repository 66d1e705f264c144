//! Files and directories ppd writes: private to the user, and contained in the recording.
//!
//! A recording holds the program's data, so every file ppd creates is 0600 and every directory
//! 0700, set explicitly after creation so the umask cannot loosen or garble them. Writes never
//! follow a symbolic link: a directory ppd writes into must be a real directory (a `cache`
//! link pointing elsewhere is refused), and files are created new with `O_NOFOLLOW` under a
//! temporary name, then renamed into place (which replaces a link rather than following it).

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::{FormatError, Result};

/// Mode of every file ppd creates.
pub const FILE_MODE: u32 = 0o600;
/// Mode of every directory ppd creates.
pub const DIR_MODE: u32 = 0o700;

/// Creates `path` (its parent must exist) new, 0600 whatever the umask, without following a
/// link at `path`.
pub fn create_file(path: &Path, action: &'static str) -> Result<File> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .mode(FILE_MODE)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .map_err(|e| FormatError::io(path, action, e))?;
    file.set_permissions(fs::Permissions::from_mode(FILE_MODE))
        .map_err(|e| FormatError::io(path, action, e))?;
    Ok(file)
}

/// Opens `path` for reading if it is a regular file. The open does not block (a FIFO in place
/// of a log, a manifest or a cache file would otherwise wait for a writer forever) and the type
/// is checked on the open descriptor, so the file cannot be swapped between the check and the
/// read.
pub fn open_regular(path: &Path, action: &'static str) -> Result<File> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| FormatError::io(path, action, e))?;
    let kind = file
        .metadata()
        .map_err(|e| FormatError::io(path, action, e))?
        .file_type();
    if !kind.is_file() {
        return Err(FormatError::NotAFile {
            path: path.to_owned(),
            kind: describe_file_type(kind),
        });
    }
    Ok(file)
}

/// Reads all of `path` if it is a regular file ([`open_regular`]).
pub fn read_regular(path: &Path, action: &'static str) -> Result<Vec<u8>> {
    let mut file = open_regular(path, action)?;
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut file, &mut bytes)
        .map_err(|e| FormatError::io(path, action, e))?;
    Ok(bytes)
}

fn describe_file_type(kind: fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if kind.is_dir() {
        "a directory"
    } else if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_char_device() || kind.is_block_device() {
        "a device"
    } else {
        "not a regular file"
    }
}

/// Makes `path` a private directory: creates it 0700 if missing; if it exists it must be a real
/// directory (not a link) and is tightened to 0700.
pub fn ensure_dir(path: &Path) -> Result<()> {
    match fs::DirBuilder::new().mode(DIR_MODE).create(path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(FormatError::io(path, "create directory", e)),
    }
    let meta = fs::symlink_metadata(path).map_err(|e| FormatError::io(path, "inspect", e))?;
    if !meta.file_type().is_dir() {
        return Err(FormatError::NotAFile {
            path: path.to_owned(),
            kind: if meta.file_type().is_symlink() {
                "a symbolic link (ppd does not write through links), not a directory"
            } else {
                "a file, not a directory"
            },
        });
    }
    if meta.permissions().mode() & 0o7777 != DIR_MODE {
        fs::set_permissions(path, fs::Permissions::from_mode(DIR_MODE))
            .map_err(|e| FormatError::io(path, "make directory private", e))?;
    }
    Ok(())
}

/// Replaces `path` with `bytes` atomically: a private temporary file in the same directory,
/// renamed over it, so a reader never sees half a file.
pub fn write_atomic(path: &Path, bytes: &[u8], fsync: bool) -> Result<()> {
    write_atomic_with(path, fsync, |file| file.write_all(bytes))
}

/// Like [`write_atomic`], the contents written by `write` through a buffer: a large file is
/// never held in memory whole.
pub fn write_atomic_with(
    path: &Path,
    fsync: bool,
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<()> {
    let tmp = temporary_sibling(path);
    let attempt = || -> Result<()> {
        let file = create_file(&tmp, "create")?;
        let mut buffered = std::io::BufWriter::new(file);
        write(&mut buffered).map_err(|e| FormatError::io(&tmp, "write", e))?;
        let file = buffered
            .into_inner()
            .map_err(|e| FormatError::io(&tmp, "write", e.into_error()))?;
        if fsync {
            file.sync_all()
                .map_err(|e| FormatError::io(&tmp, "fsync", e))?;
        }
        fs::rename(&tmp, path).map_err(|e| FormatError::io(path, "replace", e))
    };
    attempt().inspect_err(|_| {
        let _ = fs::remove_file(&tmp);
    })
}

/// A hidden name beside `path`, unique in this process: readers list only the names ppd gives
/// finished files, so a file under this name is invisible to them until it is renamed or
/// linked into place.
pub fn temporary_sibling(path: &Path) -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    path.with_file_name(format!(
        ".{name}.{}.{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ))
}

/// Gives the finished file at `tmp` its name `path`, which must not exist yet (unlike a rename,
/// a link never replaces a file), and removes the temporary name.
pub fn publish_new(tmp: &Path, path: &Path, action: &'static str) -> Result<()> {
    fs::hard_link(tmp, path).map_err(|e| FormatError::io(path, action, e))?;
    fs::remove_file(tmp).map_err(|e| FormatError::io(tmp, action, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_and_directories_are_private_whatever_the_umask() {
        let base = tempfile::tempdir().unwrap();
        // SAFETY: umask only swaps the process's file-creation mask (no memory is touched); it
        // is restored below.
        let old = unsafe { libc::umask(0o000) };
        let dir = base.path().join("d");
        ensure_dir(&dir).unwrap();
        write_atomic(&dir.join("f"), b"x", false).unwrap();
        // SAFETY: as above.
        unsafe { libc::umask(old) };
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(&dir.join("f")), 0o600);
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).unwrap();
        ensure_dir(&dir).unwrap();
        assert_eq!(mode(&dir), 0o700, "an existing directory is tightened");
    }

    #[test]
    fn writes_do_not_follow_links_out_of_the_recording() {
        let base = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let link = base.path().join("cache");
        std::os::unix::fs::symlink(outside.path(), &link).unwrap();
        let err = ensure_dir(&link).unwrap_err().to_string();
        assert!(err.contains("symbolic link"), "{err}");
        // A file that is a link is replaced, not written through.
        let target = outside.path().join("victim");
        fs::write(&target, b"mine").unwrap();
        let file_link = base.path().join("halt.json");
        std::os::unix::fs::symlink(&target, &file_link).unwrap();
        write_atomic(&file_link, b"ppd", false).unwrap();
        assert_eq!(fs::read(&target).unwrap(), b"mine");
        assert!(
            !fs::symlink_metadata(&file_link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
    }
}
