//! Progress is drawn on stderr only when it is a terminal, and `--quiet` turns it off; each
//! stage counts its own events, never more than the recording holds. The delay before progress
//! shows is set to nothing (`PPD_PROGRESS_AFTER_MS=0`), so that a quick command on a small
//! recording draws it.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};

use ppd_tests::{ppd_bin, record_example};

/// Runs `ppd ARGS` with stderr on a pseudo-terminal wide enough for every line; what reached
/// the terminal. The command must succeed.
fn stderr_on_terminal(cwd: &Path, args: &[&str]) -> String {
    let (status, seen) = terminal_run(cwd, args);
    assert!(status.success(), "ppd {args:?}: {status}");
    seen
}

/// Runs `ppd ARGS` with stderr on a pseudo-terminal; how it ended and what reached the
/// terminal.
fn terminal_run(cwd: &Path, args: &[&str]) -> (std::process::ExitStatus, String) {
    let size = nix::pty::Winsize {
        ws_row: 40,
        ws_col: 250,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    let pty = nix::pty::openpty(Some(&size), None).expect("a pseudo-terminal");
    let status = Command::new(ppd_bin())
        .args(args)
        .current_dir(cwd)
        .env("PPD_PROGRESS_AFTER_MS", "0")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(pty.slave))
        .status()
        .expect("run ppd");
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
    (status, String::from_utf8_lossy(&seen).into_owned())
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

/// One drawing of the progress line: its stage, and the count and total it shows, if any.
#[derive(Debug)]
struct Frame {
    stage: String,
    count: Option<u64>,
    total: Option<u64>,
}

/// `12,345` as a number.
fn number(text: &str) -> u64 {
    text.replace(',', "").parse().expect("a count")
}

/// Every drawing of the progress line in what reached the terminal, in order; notes written
/// above it (`ppd: ...`) are not drawings.
fn frames(terminal: &str) -> Vec<Frame> {
    let mut plain = String::new();
    let mut chars = terminal.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            // A control sequence: ESC [ parameters final-letter.
            if chars.next_if_eq(&'[').is_some() {
                while chars.next().is_some_and(|c| !c.is_ascii_alphabetic()) {}
            }
        } else {
            plain.push(c);
        }
    }
    plain
        .split(['\r', '\n'])
        .filter_map(|line| line.trim().strip_prefix("ppd "))
        .map(|rest| {
            // A spinner's frame starts with its glyph.
            let rest = match rest.split_once(' ') {
                Some((glyph, after)) if !glyph.is_ascii() => after,
                _ => rest,
            };
            if let Some((stage, after)) = rest.split_once(" [") {
                let counts = after.split_once("] ").expect("a bar's counts").1;
                let (count, total) = counts.split_once(" of ").expect("N of M events");
                let total = total.split_once(" events").expect("M events").0;
                Frame {
                    stage: stage.to_owned(),
                    count: Some(number(count)),
                    total: Some(number(total)),
                }
            } else if let Some((stage, count)) = rest
                .split_once(": ")
                .filter(|(_, c)| c.contains(" events, "))
            {
                Frame {
                    stage: stage.to_owned(),
                    count: Some(number(count.split_once(" events").unwrap().0)),
                    total: None,
                }
            } else {
                let (stage, _elapsed) = rest.rsplit_once(", ").expect("a stage and its time");
                Frame {
                    stage: stage.to_owned(),
                    count: None,
                    total: None,
                }
            }
        })
        .collect()
}

/// The stages in the order the frames show them, each once.
fn stages(frames: &[Frame]) -> Vec<&str> {
    let mut named: Vec<&str> = Vec::new();
    for f in frames {
        if named.last() != Some(&f.stage.as_str()) {
            named.push(&f.stage);
        }
    }
    named
}

/// Checks that no frame counts past the recording's `events` or its stage's total, that every
/// stage with a total is a pass over the whole recording and ends drawn at it, and that the
/// stages are `expected`, in that order.
fn check_stages(terminal: &str, events: u64, expected: &[&str]) {
    let frames = check_counts(terminal, events);
    let named: Vec<&str> = stages(&frames)
        .into_iter()
        .filter(|s| *s != "starting")
        .collect();
    assert_eq!(named, expected, "{frames:#?}");
    for stage in expected {
        let last = frames.iter().rfind(|f| f.stage == *stage).unwrap();
        if last.total.is_some() {
            assert_eq!(last.count, last.total, "{stage} ends drawn at its total");
        }
    }
}

/// Checks that no frame counts past the recording's `events` or its stage's total, and that
/// every stage with a total is a pass over the whole recording; the frames.
fn check_counts(terminal: &str, events: u64) -> Vec<Frame> {
    let frames = frames(terminal);
    assert!(!frames.is_empty(), "progress is drawn: {terminal:?}");
    for f in &frames {
        if let Some(count) = f.count {
            assert!(count <= events, "{f:?} counts past the {events} events");
        }
        if let Some(total) = f.total {
            assert_eq!(total, events, "{f:?}: a pass over the whole recording");
            assert!(f.count <= Some(total), "{f:?}");
        }
    }
    frames
}

/// Each stage of `races`, `graph` and `export` counts the events it goes through, from 0 to the
/// recording's events and never past them: a second pass is a stage of its own.
#[test]
fn each_stage_counts_its_own_pass_up_to_the_recordings_events() {
    let work = tempfile::tempdir().unwrap();
    let rec = work.path().join("rec");
    let recorded = ppd_tests::record_program(
        work.path(),
        &rec,
        &ppd_tests::example_bin("bank"),
        &["300"],
        &[],
    );
    assert!(
        String::from_utf8_lossy(&recorded.stderr).contains("ppd: recorded"),
        "{}",
        String::from_utf8_lossy(&recorded.stderr)
    );
    let events = ppd_tests::info_json(work.path(), &rec)["events"]
        .as_u64()
        .unwrap();
    assert!(events > 10_000, "{events} events: several blocks a log");
    let rec = rec.to_str().unwrap();
    let clocks = [
        "ordering each object's accesses",
        "computing the vector clocks and the data races",
    ];
    let read = ["checking the recording", "reading the logs"];

    let races = stderr_on_terminal(work.path(), &["races", rec]);
    check_stages(&races, events, &[&read[..], &clocks[..]].concat());

    let picture = [
        "finding the message races",
        "finding how each process ended",
        "computing Lamport times",
        "finding which write each atomic read read",
        "choosing the dots",
        "laying out the picture",
        "summing up the events per process and time",
        "writing the picture",
    ];
    let out = work.path().join("graph.html");
    let graph = ["graph", rec, "-o", out.to_str().unwrap()];
    // The first picture computes the clocks (and the data races with them) and caches them;
    // the second reads the clocks and finds the data races again.
    check_stages(
        &stderr_on_terminal(work.path(), &graph),
        events,
        &[&read[..], &clocks[..], &picture[..]].concat(),
    );
    check_stages(
        &stderr_on_terminal(work.path(), &graph),
        events,
        &[
            &read[..],
            &["reading the clocks from the cache"][..],
            &clocks[..],
            &picture[..],
        ]
        .concat(),
    );

    let out = work.path().join("trace.pftrace");
    let export = [
        "export",
        rec,
        "--format",
        "perfetto",
        "-o",
        out.to_str().unwrap(),
    ];
    check_stages(
        &stderr_on_terminal(work.path(), &export),
        events,
        &[
            &read[..],
            &[
                "reading the clocks from the cache",
                "computing Lamport times",
                "writing the Perfetto trace",
            ][..],
        ]
        .concat(),
    );
}

/// `ppd analyze tasks` keeps no event in memory: its passes decode the logs again as they go,
/// and count each event once all the same.
#[test]
fn a_pass_over_events_read_again_from_the_logs_counts_each_once() {
    let work = tempfile::tempdir().unwrap();
    let rec = work.path().join("rec");
    let cases = std::path::PathBuf::from(env!("CARGO_BIN_EXE_task_cases"));
    let recorded = ppd_tests::record_program(work.path(), &rec, &cases, &["farm-panic"], &[]);
    assert!(
        String::from_utf8_lossy(&recorded.stderr).contains("ppd: recorded"),
        "{}",
        String::from_utf8_lossy(&recorded.stderr)
    );
    let events = ppd_tests::info_json(work.path(), &rec)["events"]
        .as_u64()
        .unwrap();
    let (status, seen) = terminal_run(work.path(), &["analyze", "tasks", rec.to_str().unwrap()]);
    assert!(status.code().is_some(), "{status}");
    let frames = check_counts(&seen, events);
    let named = stages(&frames);
    for stage in [
        "reading the logs",
        "ordering each object's accesses",
        "computing the vector clocks",
    ] {
        assert!(named.contains(&stage), "{named:?}");
        let last = frames.iter().rfind(|f| f.stage == stage).unwrap();
        assert_eq!(last.count, Some(events), "{stage}: {frames:#?}");
    }
}
