//! What ppd does when its output is a terminal, as a user sees it: commands run with standard
//! output (and error) on a pseudo-terminal, the text read back from its other side.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use ppd_tests::{ppd, ppd_bin, record_example};

/// `ppd ARGS` in `cwd` with stdout and stderr on one pseudo-terminal; its exit code and all
/// that reached the terminal.
fn on_terminal(cwd: &Path, args: &[&str], env: &[(&str, &str)]) -> (Option<i32>, String) {
    let pty = nix::pty::openpty(None, None).expect("a pseudo-terminal");
    let slave = std::fs::File::from(pty.slave);
    let status = Command::new(ppd_bin())
        .args(args)
        .current_dir(cwd)
        .env_remove("NO_COLOR")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::from(slave.try_clone().unwrap()))
        .stderr(Stdio::from(slave))
        .status()
        .expect("run ppd");
    // The only writers are gone: the terminal reads what they wrote, then fails (EIO).
    let mut master = std::fs::File::from(pty.master);
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    while let Ok(n) = master.read(&mut buf) {
        if n == 0 {
            break;
        }
        seen.extend_from_slice(&buf[..n]);
    }
    (status.code(), String::from_utf8_lossy(&seen).into_owned())
}

fn bank(work: &Path) -> std::path::PathBuf {
    let dir = work.join("bank-1");
    let out: Output = record_example(work, &dir, "bank", &[]);
    assert!(
        dir.join("manifest.json").exists(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    dir
}

#[test]
fn pictures_and_exports_go_to_a_file_beside_the_recording_on_a_terminal_and_to_pipes_as_asked() {
    let work = tempfile::tempdir().unwrap();
    let dir = bank(work.path());
    let rec = dir.to_str().unwrap();
    for (args, file, page) in [
        (&["graph", rec][..], "bank-1.html", true),
        (&["graph", rec, "--format", "svg"][..], "bank-1.svg", false),
        (
            &["export", rec, "--format", "perfetto"][..],
            "bank-1.perfetto-trace",
            false,
        ),
        (
            &["export", rec, "--format", "json"][..],
            "bank-1.json",
            false,
        ),
    ] {
        let (code, seen) = on_terminal(work.path(), args, &[]);
        assert_eq!(code, Some(0), "{args:?}: {seen}");
        let path = work.path().join(file);
        let written = std::fs::read(&path).unwrap_or_else(|e| panic!("{args:?}: {file}: {e}"));
        assert!(written.len() > 1000, "{args:?}: {} bytes", written.len());
        // The terminal gets where it went, not the picture.
        assert!(
            seen.len() < 1000,
            "{args:?} wrote to the terminal: {} bytes",
            seen.len()
        );
        assert!(
            seen.contains(&format!("to {}", path.display())),
            "{args:?}: {seen}"
        );
        let absolute = std::fs::canonicalize(&path).unwrap();
        assert_eq!(
            seen.contains(&format!("file://{}", absolute.display())),
            page,
            "{args:?}: {seen}"
        );
        // Piped, the same command writes the bytes themselves.
        let piped = ppd(work.path(), args);
        assert_eq!(piped.status.code(), Some(0));
        if args[0] == "graph" {
            assert!(piped.stdout.len() > 1000);
        }
        std::fs::remove_file(&path).unwrap();
    }
}

/// Whether `text` holds an ANSI escape.
fn colored(text: &str) -> bool {
    text.contains("\u{1b}[")
}

#[test]
fn reports_are_coloured_on_a_terminal_unless_no_color_or_never_and_never_into_a_pipe() {
    let work = tempfile::tempdir().unwrap();
    let dir = bank(work.path());
    let rec = dir.to_str().unwrap();
    for args in [
        &["info", rec][..],
        &["races", rec][..],
        &["why", rec, "teller", "balance", "--depth", "3"][..],
    ] {
        let (code, seen) = on_terminal(work.path(), args, &[]);
        assert_eq!(code, Some(0), "{args:?}: {seen}");
        assert!(colored(&seen), "{args:?}: no colour on a terminal: {seen}");
        // The process names are what is painted, and painting keeps the text.
        assert!(seen.contains("teller"), "{args:?}: {seen}");
        for (env, flag) in [
            (&[("NO_COLOR", "1")][..], None),
            (&[][..], Some("--color=never")),
        ] {
            let mut with = args.to_vec();
            with.extend(flag);
            let (code, plain) = on_terminal(work.path(), &with, env);
            assert_eq!(code, Some(0), "{with:?}: {plain}");
            assert!(!colored(&plain), "{with:?} {env:?}: {plain}");
        }
        let piped = ppd(work.path(), args);
        assert!(
            !colored(&String::from_utf8_lossy(&piped.stdout)),
            "{args:?} into a pipe"
        );
        let mut forced = args.to_vec();
        forced.push("--color=always");
        let piped = ppd(work.path(), &forced);
        assert!(
            colored(&String::from_utf8_lossy(&piped.stdout)),
            "{forced:?} into a pipe"
        );
    }
    // JSON is for programs: never coloured, whatever is asked.
    let (_, json) = on_terminal(work.path(), &["info", rec, "--json", "--color=always"], &[]);
    assert!(!colored(&json), "{json}");
}
