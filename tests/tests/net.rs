//! `ppd::net` end to end (`tests/src/bin/net_cases.rs`): real sockets on loopback and Unix
//! paths, recorded, replayed with `--verify` (no socket opened), and analysed: each read is
//! paired with the write its bytes came from, across processes.

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use ppd_tests::{assert_no_races, assert_replays, output_text, ppd, record_program};
use serde_json::Value;

fn program() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_net_cases"))
}

/// Records case `args[0]` into `work/NAME`; the directory and what the program printed.
fn record_case(work: &Path, name: &str, args: &[&str]) -> (PathBuf, String) {
    let dir = work.join(name);
    let out = record_program(work, &dir, &program(), args, &[]);
    let (stdout, stderr) = output_text(&out);
    assert!(out.status.success(), "recording {args:?} failed: {stderr}");
    (dir, stdout)
}

/// Every event of the run as `ppd export --format json` gives it.
fn exported_events(work: &Path, dir: &Path) -> Vec<Value> {
    let out_file = work.join(format!(
        "{}.json",
        dir.file_name().unwrap().to_string_lossy()
    ));
    let out = ppd(
        work,
        &[
            "export",
            dir.to_str().unwrap(),
            "--format",
            "json",
            "-o",
            out_file.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", output_text(&out).1);
    let json: Value = serde_json::from_slice(&std::fs::read(out_file).unwrap()).unwrap();
    json["events"].as_array().unwrap().clone()
}

/// The texts of the events of kind `kind`.
fn texts(events: &[Value], kind: &str) -> Vec<String> {
    events
        .iter()
        .filter(|e| e["kind"] == kind)
        .map(|e| e["text"].as_str().unwrap().to_owned())
        .collect()
}

const TALK: &str = "sent alpha, got alpha\nsent beta, got beta\nsent gamma, got gamma\n";

#[test]
fn a_tcp_conversation_replays_without_a_socket_and_every_read_names_its_write() {
    let work = tempfile::tempdir().unwrap();
    let (dir, printed) = record_case(work.path(), "echo", &["echo"]);
    assert_eq!(printed, TALK);
    assert_replays(work.path(), &dir, &printed);
    assert_no_races(work.path(), &dir);
    let events = exported_events(work.path(), &dir);
    let reads = texts(&events, "net_read");
    // Three lines each way, then the server's end of stream.
    assert!(reads.len() >= 7, "{reads:#?}");
    let ends = reads.iter().filter(|r| r.contains("the end of")).count();
    assert_eq!(ends, 1, "{reads:#?}");
    for read in reads.iter().filter(|r| !r.contains("the end of")) {
        assert!(
            read.contains("(write "),
            "a read not paired with a write: {read}"
        );
    }
}

#[test]
fn a_unix_socket_conversation_pairs_its_ends_by_path_and_process() {
    let work = tempfile::tempdir().unwrap();
    let path = work.path().join("echo.sock");
    let (dir, printed) = record_case(work.path(), "unix", &["unix", path.to_str().unwrap()]);
    assert_eq!(printed, TALK);
    assert_replays(work.path(), &dir, &printed);
    assert_no_races(work.path(), &dir);
    let reads = texts(&exported_events(work.path(), &dir), "net_read");
    assert!(
        reads.iter().filter(|r| r.contains("(write ")).count() >= 6,
        "{reads:#?}"
    );
}

#[test]
fn datagrams_pair_with_their_sends_by_address_and_digest() {
    let work = tempfile::tempdir().unwrap();
    let (dir, printed) = record_case(work.path(), "udp", &["udp"]);
    assert_eq!(printed, "one: 3\nthree: 5\nseventeen: 9\n");
    assert_replays(work.path(), &dir, &printed);
    assert_no_races(work.path(), &dir);
    let receipts = texts(&exported_events(work.path(), &dir), "net_recv_from");
    assert_eq!(receipts.len(), 6, "{receipts:#?}");
    for receipt in receipts {
        assert!(receipt.contains("(datagram "), "unpaired: {receipt}");
    }
}

#[test]
fn a_peer_that_is_not_recorded_is_read_from_the_log_in_replay_while_it_is_gone() {
    let work = tempfile::tempdir().unwrap();
    let mut server = Command::new(program())
        .arg("plain-echo-server")
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the plain server");
    let mut address = String::new();
    std::io::BufReader::new(server.stdout.take().unwrap())
        .read_line(&mut address)
        .unwrap();
    let (dir, printed) = record_case(work.path(), "outside", &["outside", address.trim()]);
    assert_eq!(
        printed,
        "sent alpha, got ALPHA\nsent beta, got BETA\nsent gamma, got GAMMA\n"
    );
    // The peer is gone: replay does not need it.
    assert!(server.wait().unwrap().success());
    assert_replays(work.path(), &dir, &printed);
    let reads = texts(&exported_events(work.path(), &dir), "net_read");
    assert!(
        reads
            .iter()
            .all(|r| r.contains("from outside the recording")),
        "{reads:#?}"
    );
}

#[test]
fn a_refused_connection_is_logged_and_refused_again_in_replay() {
    let work = tempfile::tempdir().unwrap();
    let (dir, printed) = record_case(work.path(), "refused", &["refused"]);
    assert_eq!(printed, "refused: ConnectionRefused\n");
    assert_replays(work.path(), &dir, &printed);
}

#[test]
fn two_processes_writing_one_connection_under_a_lock_race_on_nothing() {
    let work = tempfile::tempdir().unwrap();
    let (dir, printed) = record_case(work.path(), "shared", &["shared"]);
    assert_eq!(printed, "server read from-main from-writer\n");
    assert_replays(work.path(), &dir, &printed);
    assert_no_races(work.path(), &dir);
}

/// A trace whose events stay in their logs (`Trace::load_logged`, what `ppd analyze tasks`
/// reads) is the trace read into memory, socket reads' pairing included, whether read in order
/// or from any event.
#[test]
fn events_left_in_their_logs_are_the_events_read_into_memory_sockets_paired() {
    use ppd_flowback::Trace;
    use ppd_flowback::trace::{EventRef, EventStore};
    let work = tempfile::tempdir().unwrap();
    for case in ["echo", "udp"] {
        let (dir, _) = record_case(work.path(), case, &[case]);
        let recording = ppd_formats::Recording::open(&dir).unwrap();
        let whole = Trace::load(&recording).unwrap();
        let logged = Trace::load_logged(&recording).unwrap();
        let mut paired = 0;
        for (p, proc) in whole.processes().iter().enumerate() {
            let left = &logged.processes()[p];
            assert_eq!((left.id, left.events.len()), (proc.id, proc.events.len()));
            let in_order: Vec<_> = left.events.iter().collect();
            assert_eq!(in_order, proc.events, "{case}: {}", proc.name);
            for k in (0..proc.events.len()).rev() {
                let at = EventRef::new(p as u32, k as u32);
                assert_eq!(logged.get(at), whole.get(at), "{case}: {at:?}");
            }
            paired += proc
                .events
                .iter()
                .filter(|e| matches!(e.op, ppd_flowback::trace::Op::NetRead { seq, .. } if seq > 0))
                .count();
        }
        assert!(paired > 0, "{case}: the reads are paired with their writes");
    }
}

/// The line of `tests/src/bin/net_cases.rs` that holds `needle`.
fn source_line(needle: &str) -> u64 {
    let source = include_str!("../src/bin/net_cases.rs");
    1 + source
        .lines()
        .position(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("{needle} is not in net_cases.rs")) as u64
}

#[test]
fn every_read_and_write_is_located_at_the_line_of_the_program_that_made_it() {
    let work = tempfile::tempdir().unwrap();
    let (dir, printed) = record_case(work.path(), "sites", &["sites"]);
    assert_eq!(
        printed, "head first [\"second\", \"third\"] all of it\n",
        "what the server read"
    );
    assert_replays(work.path(), &dir, &printed);
    let events = exported_events(work.path(), &dir);
    let lines_of = |kind: &str| -> std::collections::BTreeSet<u64> {
        events
            .iter()
            .filter(|e| e["kind"] == kind)
            .map(|e| {
                assert_eq!(
                    e["file"], "tests/src/bin/net_cases.rs",
                    "located outside the program: {e}"
                );
                e["line"].as_u64().unwrap()
            })
            .collect()
    };
    let expected = |needles: &[&str]| needles.iter().map(|n| source_line(n)).collect();
    assert_eq!(
        lines_of("net_write"),
        expected(&[
            "stream.write_all(b\"head\")",
            "writeln!(stream, \"first\")",
            "write!(&stream, ",
            "(&second).write_all(",
        ]),
        "each write at its line: write_all, writeln!, write!"
    );
    assert_eq!(
        lines_of("net_read"),
        expected(&[
            "(&stream).read_exact(",
            "reader.read_line(",
            "for line in reader.lines()",
            "(&second).read_to_string(",
        ]),
        "each read at its line, through ppd's BufReader too"
    );
}
