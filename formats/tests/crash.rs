//! A writer killed with SIGKILL loses no record whose `append` returned.
//!
//! The test re-runs its own binary as a child that appends events forever and reports on
//! stdout how many appends have returned; the parent kills it at a random moment and reads the
//! log back. Small blocks and a small ring make the kill land in every state: a record half
//! copied, a block just sealed, a frame half written, the writer waiting for a free slot, a
//! record spanning blocks.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};
use std::time::Duration;

use ppd_formats::{LogReader, LogState, LogWriter};

use common::{check_event, event_at, identity, payload, small_blocks};

/// Set in the child's environment: the log it writes.
const CHILD_LOG: &str = "PPD_CRASH_TEST_LOG";
/// Prefix of the child's progress lines.
const DONE: &str = "appended ";
const KILLS: usize = 24;

/// The child: appends events until it is killed, reporting after every few appends.
#[test]
#[ignore = "the child process of `sigkill_loses_no_completed_record`"]
fn child_writer() {
    let Some(path) = std::env::var_os(CHILD_LOG) else {
        return;
    };
    let mut writer = LogWriter::create(path.as_ref(), &identity(), small_blocks(4)).unwrap();
    // Straight to the pipe: the test harness captures `print!`, not writes to the handle.
    let mut out = std::io::stdout().lock();
    for i in 0.. {
        let bytes = payload(i);
        writer.append(&event_at(i, &bytes)).unwrap();
        if i % 7 == 0 {
            writeln!(out, "{DONE}{}", i + 1).unwrap();
            out.flush().unwrap();
        }
    }
}

#[test]
fn sigkill_loses_no_completed_record() {
    let seed = fastrand::u64(..);
    let mut rng = fastrand::Rng::with_seed(seed);
    let exe = std::env::current_exe().unwrap();
    let mut total_reported = 0;
    for kill in 0..KILLS {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("proc-0000.log");
        let mut child = Command::new(&exe)
            .args(["child_writer", "--exact", "--ignored", "--nocapture"])
            .args(["--test-threads", "1"])
            .env(CHILD_LOG, &path)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let progress = |line: std::io::Result<String>| -> Option<u64> {
            line.unwrap().strip_prefix(DONE).map(|n| n.parse().unwrap())
        };
        // Kill at a random moment once the log exists: anywhere from the first block to a
        // few hundred frames in.
        lines
            .by_ref()
            .find_map(progress)
            .expect("the child reports");
        std::thread::sleep(Duration::from_micros(rng.u64(0..40_000)));
        child.kill().unwrap();
        let status = child.wait().unwrap();
        assert_eq!(status.signal(), Some(9), "the child must die by SIGKILL");
        // Everything the child wrote to the pipe before it died is still there to read.
        let reported = lines.filter_map(progress).last().unwrap_or(1);
        total_reported += reported;

        let context = format!("kill {kill} (seed {seed}) after {reported} reported appends");
        let reader = LogReader::open(&path).expect(&context);
        assert_eq!(reader.state(), LogState::Recovered, "{context}");
        assert!(
            reader.damage().is_empty(),
            "{context}: {:?}",
            reader.damage()
        );
        let count = reader.event_count();
        assert!(count >= reported, "{context}: only {count} events readable");
        let mut next = 0;
        for item in reader.events() {
            let (i, event) = item.expect(&context);
            assert_eq!(i, next, "{context}");
            check_event(i, &event).expect(&context);
            next += 1;
        }
        assert_eq!(next, count, "{context}");
        for _ in 0..5 {
            let k = rng.u64(0..count);
            check_event(k, &reader.get(k).expect(&context)).expect(&context);
        }
    }
    // The kills must have landed while the child was writing, not all before its first block.
    assert!(
        total_reported > KILLS as u64 * 100,
        "{total_reported} records reported in all"
    );
}
