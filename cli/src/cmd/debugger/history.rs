//! The debugger's command history, kept per user between sessions:
//! `$XDG_STATE_HOME/ppd/debugger-history` (else `~/.local/state/ppd/...`), one command a
//! line, the newest last. Like every file ppd writes it is private (the directory 0700, the
//! file 0600, replaced whole and never written through a link); a file that is not the user's
//! own, or that others could have written, is not read.

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Commands kept: the oldest are dropped beyond this.
const KEPT: usize = 1000;

/// The history file of the user running ppd.
#[derive(Debug)]
pub(crate) struct History {
    path: PathBuf,
    /// Set after a save failed, so that the failure is told once.
    warned: bool,
}

impl History {
    /// The user's history file; `None` when neither `XDG_STATE_HOME` nor `HOME` is an
    /// absolute path.
    pub(super) fn of_user() -> Option<History> {
        let absolute = |v: std::ffi::OsString| Some(PathBuf::from(v)).filter(|p| p.is_absolute());
        let base = std::env::var_os("XDG_STATE_HOME")
            .and_then(absolute)
            .or_else(|| {
                std::env::var_os("HOME")
                    .and_then(absolute)
                    .map(|h| h.join(".local").join("state"))
            })?;
        Some(History::at(base.join("ppd").join("debugger-history")))
    }

    fn at(path: PathBuf) -> History {
        History {
            path,
            warned: false,
        }
    }

    /// The commands kept, oldest first; none when there is no file or it is not the user's own.
    pub(super) fn load(&self) -> Vec<String> {
        read_own(&self.path)
            .map(|text| text.lines().map(str::to_owned).collect())
            .unwrap_or_default()
    }

    /// Adds `command` to the file, keeping what other sessions added since this one started.
    /// A file that cannot be written costs only the history (said once, on stderr).
    pub(super) fn add(&mut self, command: &str) {
        let mut commands = self.load();
        if commands.last().is_some_and(|last| last == command) {
            return;
        }
        commands.push(command.to_owned());
        let start = commands.len().saturating_sub(KEPT);
        let mut text = commands[start..].join("\n");
        text.push('\n');
        if let Err(e) = self.write(&text) {
            if !self.warned {
                eprintln!(
                    "ppd: not keeping the debugger's history in {}: {e}",
                    self.path.display()
                );
            }
            self.warned = true;
        }
    }

    fn write(&self, text: &str) -> Result<(), ppd_formats::FormatError> {
        if let Some(dir) = self.path.parent() {
            if let Some(parent) = dir.parent() {
                fs::create_dir_all(parent)
                    .map_err(|e| ppd_formats::FormatError::io(parent, "create directory", e))?;
            }
            ppd_formats::private::ensure_dir(dir)?;
        }
        ppd_formats::private::write_atomic(&self.path, text.as_bytes(), false)
    }
}

/// The text of `path` if it is a regular file of the user's that no one else can write.
fn read_own(path: &Path) -> Option<String> {
    let meta = fs::symlink_metadata(path).ok()?;
    let own = meta.file_type().is_file()
        && meta.uid() == nix::unistd::geteuid().as_raw()
        && meta.permissions().mode() & 0o022 == 0;
    if !own {
        return None;
    }
    let bytes = ppd_formats::private::read_regular(path, "read the debugger's history").ok()?;
    String::from_utf8(bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_kept_private_newest_last_and_repeats_once() {
        let home = tempfile::tempdir().unwrap();
        let path = home.path().join("state/ppd/debugger-history");
        let mut history = History::at(path.clone());
        assert!(history.load().is_empty());
        history.add("step teller");
        history.add("step teller");
        history.add("why teller balance");
        assert_eq!(history.load(), ["step teller", "why teller balance"]);
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(path.parent().unwrap()), 0o700);
        // Another session's commands, written since, are kept.
        History::at(path).add("back");
        history.add("quit");
        assert_eq!(
            history.load(),
            ["step teller", "why teller balance", "back", "quit"]
        );
    }

    #[test]
    fn only_the_newest_commands_are_kept() {
        let home = tempfile::tempdir().unwrap();
        let mut history = History::at(home.path().join("ppd/debugger-history"));
        for i in 0..KEPT + 5 {
            history.add(&format!("step p{i}"));
        }
        let kept = history.load();
        assert_eq!(kept.len(), KEPT);
        assert_eq!(kept[0], "step p5");
        assert_eq!(kept[KEPT - 1], format!("step p{}", KEPT + 4));
    }

    #[test]
    fn a_file_others_can_write_or_a_link_is_not_read() {
        let home = tempfile::tempdir().unwrap();
        let dir = home.path().join("ppd");
        let path = dir.join("debugger-history");
        let mut history = History::at(path.clone());
        history.add("step teller");
        fs::set_permissions(&path, fs::Permissions::from_mode(0o622)).unwrap();
        assert!(history.load().is_empty(), "group-writable");
        fs::remove_file(&path).unwrap();
        let elsewhere = home.path().join("elsewhere");
        fs::write(&elsewhere, "goto main=1\n").unwrap();
        fs::set_permissions(&elsewhere, fs::Permissions::from_mode(0o600)).unwrap();
        std::os::unix::fs::symlink(&elsewhere, &path).unwrap();
        assert!(history.load().is_empty(), "a link");
        // Writing replaces the link; the file it pointed to is untouched.
        history.add("back");
        assert_eq!(history.load(), ["back"]);
        assert_eq!(fs::read_to_string(&elsewhere).unwrap(), "goto main=1\n");
    }
}
