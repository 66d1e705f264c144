//! Progress is drawn on stderr only when it is a terminal, and `--quiet` turns it off. The
//! delay before progress shows is set to nothing (`PPD_PROGRESS_AFTER_MS=0`), so that a quick
//! command on a small recording would draw it.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};

use ppd_tests::{ppd_bin, record_example};

/// Runs `ppd ARGS` with stderr on a pseudo-terminal; what reached the terminal.
fn stderr_on_terminal(cwd: &Path, args: &[&str]) -> String {
    let pty = nix::pty::openpty(None, None).expect("a pseudo-terminal");
    let status = Command::new(ppd_bin())
        .args(args)
        .current_dir(cwd)
        .env("PPD_PROGRESS_AFTER_MS", "0")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(pty.slave))
        .status()
        .expect("run ppd");
    assert!(status.success(), "ppd {args:?}: {status}");
    // The only writer is gone: the terminal reads what it wrote, then fails (EIO).
    let mut master = std::fs::File::from(pty.master);
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    while let Ok(n) = master.read(&mut buf) {
        if n == 0 {
            break;
        }
        seen.extend_from_slice(&buf[..n]);
    }
    String::from_utf8_lossy(&seen).into_owned()
}

#[test]
fn progress_is_drawn_on_a_terminal_unless_quiet_and_never_into_a_pipe() {
    let work = tempfile::tempdir().unwrap();
    let rec = work.path().join("rec");
    let recorded = record_example(work.path(), &rec, "pipeline", &[]);
    assert!(
        recorded.status.success(),
        "{}",
        String::from_utf8_lossy(&recorded.stderr)
    );
    let rec = rec.to_str().unwrap();

    let drawn = stderr_on_terminal(work.path(), &["races", rec]);
    // The spinner's line (`ppd ⠁ checking the recording: 0 events, 0s`), redrawn in place: a
    // stage and its count of events, and the erase of the line before the next draw, not merely
    // some message of ppd's.
    assert!(
        drawn.contains(" events, ")
            && drawn.contains("checking the recording")
            && drawn.contains("\r\u{1b}[2K"),
        "a terminal gets the progress line: {drawn:?}"
    );

    let quiet = stderr_on_terminal(work.path(), &["races", rec, "--quiet"]);
    assert_eq!(quiet, "", "--quiet draws nothing");

    let piped = Command::new(ppd_bin())
        .args(["races", rec])
        .current_dir(work.path())
        .env("PPD_PROGRESS_AFTER_MS", "0")
        .output()
        .expect("run ppd");
    assert!(piped.status.success());
    assert_eq!(
        String::from_utf8_lossy(&piped.stderr),
        "",
        "stderr that is not a terminal gets no progress"
    );
    assert!(!piped.stdout.is_empty(), "the answer is still printed");
}
