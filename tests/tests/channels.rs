//! Channels carrying any `T: Send`, end to end: programs written the way std programs are
//! (boxed closures, handles) record, replay with `--verify`, report no race or deadlock, and
//! `ppd why` says which value it cannot rebuild when a re-execution needs an opaque one; the
//! senders of a fan-in number their messages from runs of their own.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use ppd_formats::{Event, ProcessId, Recording};
use ppd_tests::{
    assert_no_races, assert_races_only_on, assert_replays, output_text as text, ppd, record_program,
};

fn channels() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_channels"))
}

/// Records case `case` of `channels` into `work/case`; returns the directory and the program's
/// standard output.
fn record_case(work: &Path, case: &str) -> (PathBuf, String) {
    let dir = work.join(case);
    let out = record_program(work, &dir, &channels(), &[case], &[]);
    assert!(
        out.status.success(),
        "recording {case} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (dir, String::from_utf8_lossy(&out.stdout).into_owned())
}

#[test]
fn the_books_thread_pool_sends_boxed_closures_and_replays() {
    let work = tempfile::tempdir().unwrap();
    let (dir, printed) = record_case(work.path(), "pool");
    // 8 jobs, squares 0..8 summed; tickets 1..=5; selected 10+11+12+20+21+22.
    assert_eq!(
        printed, "8 results, squares 140\ntickets 15\nselected 96\n",
        "the program's own answer"
    );
    assert_replays(work.path(), &dir, &printed);
    // The pool's workers send their results concurrently whenever two of them overlap, and
    // the program sums them in any order.
    assert_races_only_on(work.path(), &dir, &["results"]);
}

#[test]
fn a_program_with_opaque_messages_replays_and_why_names_the_opaque_value() {
    let work = tempfile::tempdir().unwrap();
    let (dir, printed) = record_case(work.path(), "opaque");
    assert_eq!(printed, "total 308\n");
    assert_replays(work.path(), &dir, &printed);
    assert_no_races(work.path(), &dir);

    // A serde message in the same process is explained as before: back to its send.
    let d = dir.to_str().unwrap();
    let out = ppd(work.path(), &["why", d, "server", "%0", "--at", "tally#2"]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(stdout.contains("%0 = 201"), "{stdout}");
    assert!(stdout.contains("data: received 200"), "{stdout}");
    assert!(stdout.contains("message 2 on channel numbers"), "{stdout}");

    // The ticket was never logged: the answer says which message and why, and exits 1; it
    // does not fall back on an earlier instance's `%0` (tally's 101).
    for var in ["%0", "ticket"] {
        let out = ppd(work.path(), &["why", d, "server", var, "--at", "serve#2"]);
        let (stdout, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
        assert_eq!(stdout, "", "no answer is given");
        for part in [
            "channels::serve of server",
            &format!("stopped before it defined `{var}`"),
            "needs message 2 from p0 on channel #0.0, received at tests/src/bin/channels.rs:",
            "its type `channels::Ticket` is not known to be Serialize + Deserialize",
        ] {
            assert!(stderr.contains(part), "{part:?} missing: {stderr}");
        }
    }
}

#[test]
fn each_sender_numbers_its_messages_from_runs_of_its_own_and_every_receive_names_its_send() {
    let work = tempfile::tempdir().unwrap();
    let (dir, printed) = record_case(work.path(), "fan-in");
    // Producer p sends p·1000 + k, `main` 10 000 + k, for k in 0..150.
    assert_eq!(printed, "sum 1994700\n");
    assert_replays(work.path(), &dir, &printed);

    let recording = Recording::open(&dir).unwrap();
    let mut sent: BTreeMap<u64, ProcessId> = BTreeMap::new();
    let mut received = Vec::new();
    for process in recording.processes() {
        let mut last = 0;
        for event in recording.open_log(process).unwrap().events() {
            match event.unwrap().1 {
                Event::Send { seq, .. } => {
                    assert!(seq > last, "{:?} sent {seq} after {last}", process.id);
                    last = seq;
                    let before = sent.insert(seq, process.id);
                    assert_eq!(before, None, "message {seq} sent twice");
                }
                Event::Recv { sender, seq, .. } => received.push((sender, seq)),
                _ => {}
            }
        }
    }
    assert_eq!(sent.len(), 4 * 150);
    assert_eq!(received.len(), 4 * 150);
    for (sender, seq) in &received {
        assert_eq!(
            sent.get(seq),
            Some(sender),
            "received {seq} from {sender:?}"
        );
    }
    // A run of 64 numbers belongs to one sender; each of the four needed three runs.
    let mut runs: BTreeMap<u64, ProcessId> = BTreeMap::new();
    for (seq, sender) in &sent {
        let owner = *runs.entry((seq - 1) / 64).or_insert(*sender);
        assert_eq!(owner, *sender, "message {seq} is in another sender's run");
    }
    assert_eq!(runs.len(), 4 * 3, "{runs:?}");
}
