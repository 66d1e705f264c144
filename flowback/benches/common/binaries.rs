//! What the benchmarks that run the release binaries share.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::memory::{peak_rss, reset_peak_rss};

/// One command's cost.
pub(crate) struct Cost {
    pub(crate) wall: Duration,
    /// The command's peak resident memory, `None` when it stayed below [`Cost::floor`].
    pub(crate) peak_rss: Option<u64>,
    /// This benchmark's own resident memory when it started the command: Linux carries the
    /// high-water mark of the image a process replaces at `exec` into its `ru_maxrss`, so a
    /// child's `ru_maxrss` is never below its parent's peak at the spawn. The parent's peak is
    /// reset to what it holds just before (`clear_refs`), and a child that stays below it has
    /// no peak of its own to report.
    pub(crate) floor: u64,
    pub(crate) stderr: String,
    pub(crate) ok: bool,
}

/// Runs `ppd args` to completion and measures it.
// The child is reaped by `wait4`, which also reports its peak memory; `Child::wait` cannot.
#[allow(clippy::zombie_processes)]
pub(crate) fn run(ppd: &Path, args: &[&str]) -> Cost {
    reset_peak_rss();
    let floor = peak_rss().unwrap_or(0);
    let start = Instant::now();
    let child = Command::new(ppd)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run ppd");
    let pid = child.id() as libc::pid_t;
    // Read stderr before reaping, so a chatty child cannot block on a full pipe.
    let mut stderr = String::new();
    if let Some(mut err) = child.stderr {
        use std::io::Read;
        let _ = err.read_to_string(&mut stderr);
    }
    let mut status = 0;
    // SAFETY: an all-zero `rusage` is a valid value of this plain C struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `pid` is our own child, not yet reaped (its `Child` handle was consumed above
    // without waiting); `status` and `usage` are valid for writes.
    let reaped = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let wall = start.elapsed();
    let peak = u64::try_from(usage.ru_maxrss).unwrap_or(0) * 1024;
    Cost {
        wall,
        peak_rss: (peak > floor).then_some(peak),
        floor,
        stderr,
        ok: reaped == pid && libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
    }
}

pub(crate) fn mb(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

impl Cost {
    /// The peak as a report prints it: "≤ floor" when the command stayed below the floor.
    pub(crate) fn peak_text(&self) -> String {
        self.peak_rss
            .map_or_else(|| format!("≤ {}", mb(self.floor)), mb)
    }
}

/// The release binaries, next to this benchmark's own build directory.
pub(crate) fn release_binaries() -> Option<(PathBuf, PathBuf)> {
    let exe = std::env::current_exe().ok()?;
    let profile = exe.parent()?.parent()?;
    let ppd = profile.join("ppd");
    let bank = profile.join("examples").join("bank");
    (ppd.exists() && bank.exists()).then_some((ppd, bank))
}

/// Records `bank ops` with the release binaries into `rec`; returns how many events the
/// recording holds.
pub(crate) fn record_bank(ppd: &Path, bank: &Path, ops: u64, rec: &Path) -> Result<u64, String> {
    let recorded = Command::new(ppd)
        .arg("record")
        .arg("-o")
        .arg(rec)
        .arg("--")
        .arg(bank)
        .arg(ops.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map_err(|e| format!("cannot run ppd record: {e}"))?;
    // bank exits with code 1 when its audit finds the race it is written to have.
    if !rec.join("manifest.json").exists() {
        return Err(format!(
            "ppd record bank {ops} wrote no recording ({recorded})"
        ));
    }
    let info = Command::new(ppd)
        .args(["info", "--json"])
        .arg(rec)
        .output()
        .map_err(|e| format!("cannot run ppd info: {e}"))?;
    serde_json::from_slice::<serde_json::Value>(&info.stdout)
        .ok()
        .and_then(|v| v["events"].as_u64())
        .ok_or_else(|| "ppd info --json gave no event count".to_owned())
}
