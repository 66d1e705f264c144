//! Halting the live program while it records (`ppd record --stop`, Miller & Choi §4), on a
//! real run of `live_halt`: two producers, a consumer that marks a checkpoint every 1000
//! items, a bookkeeper busy on a lock until the consumer is done (so only the halting
//! algorithm stops it).
//!
//! Each halt must be a consistent global state (no receive in it without its send), the one
//! the program reports must be the one the recording keeps, and `ppd replay --to halt:N` must
//! reach exactly that state later.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use ppd_formats::Event;
use ppd_formats::live::{Halt, read_halts};
use ppd_tests::{output_text, ppd, ppd_with_input, record_example, record_program};
use serde_json::Value;

fn program() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_live_halt"))
}

/// What the program prints when it ran to its end.
const FINISHED: &str = "total = 4502248500";

/// The events of every process of the recording, by id.
fn logs(dir: &Path) -> Vec<(ppd_formats::ProcessId, Vec<Event>)> {
    let recording = ppd_formats::Recording::open(dir).unwrap();
    recording
        .processes()
        .iter()
        .map(|p| {
            let events = recording
                .open_log(p)
                .unwrap()
                .events()
                .map(|e| e.unwrap().1)
                .collect();
            (p.id, events)
        })
        .collect()
}

/// Checks that `halt`'s cut is consistent: every receive in it has its send in it.
fn assert_consistent(dir: &Path, halt: &Halt) {
    let logs = logs(dir);
    let upto = |id| {
        halt.cut
            .iter()
            .find(|(p, _)| *p == id)
            .map_or(0, |(_, n)| *n as usize)
    };
    let sent: HashSet<_> = logs
        .iter()
        .flat_map(|(id, events)| events[..upto(*id)].iter())
        .filter_map(|e| match e {
            Event::Send { channel, seq, .. } => Some((*channel, *seq)),
            _ => None,
        })
        .collect();
    let mut received = 0;
    for (id, events) in &logs {
        for e in &events[..upto(*id)] {
            if let Event::Recv { channel, seq, .. } = e {
                assert!(
                    sent.contains(&(*channel, *seq)),
                    "halt {}: {id} received message {seq} on {channel}, not sent in the cut",
                    halt.halt
                );
                received += 1;
            }
        }
    }
    assert!(received > 0, "the cut holds receives to check");
}

/// The value of the consumer's last event in the cut, which must be the checkpoint mark.
fn checkpoint_at(dir: &Path, halt: &Halt) -> u64 {
    let (events, n) = initiator_at(dir, halt);
    match &events[n - 1] {
        Event::Mark { label, value, .. } if &**label == "checkpoint" => {
            ppd_formats::value::decode_as(value).unwrap()
        }
        other => panic!(
            "halt {}: the initiator's last event is {other:?}",
            halt.halt
        ),
    }
}

/// The log of `halt`'s initiator, and how many of its events are in the halt's cut.
fn initiator_at(dir: &Path, halt: &Halt) -> (Vec<Event>, usize) {
    let (_, events) = logs(dir)
        .into_iter()
        .find(|(id, _)| *id == halt.initiator)
        .expect("the initiator has a log");
    let (_, n) = halt
        .cut
        .iter()
        .find(|(p, _)| *p == halt.initiator)
        .expect("the initiator is in the cut");
    (events, *n as usize)
}

/// The prelog of the innermost e-block entered among `events`, decoded.
fn last_entry(events: &[Event]) -> Value {
    let prelog = events
        .iter()
        .rev()
        .find_map(|e| match e {
            Event::EblockEnter { prelog, .. } => Some(prelog.clone()),
            _ => None,
        })
        .expect("an e-block was entered");
    ppd_formats::value::decode_as(&prelog).unwrap()
}

/// `ppd replay DIR --stop PRED --json`: the events of the process `is` picks in the state
/// the replay halts in.
fn replay_halts(work: &Path, dir: &Path, pred: &str, is: impl Fn(&Value) -> bool) -> Option<u64> {
    let out = ppd(
        work,
        &["replay", dir.to_str().unwrap(), "--stop", pred, "--json"],
    );
    let (stdout, stderr) = output_text(&out);
    assert!(out.status.success(), "{stderr}");
    let state: Value = serde_json::from_str(&stdout).unwrap();
    state["processes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| is(p))
        .map(|p| p["events"].as_u64().unwrap())
}

/// `ppd replay DIR --to halt:N --json`: each process's events.
fn replayed_to(work: &Path, dir: &Path, halt: u64) -> Vec<(u32, u64)> {
    let to = format!("halt:{halt}");
    let out = ppd(
        work,
        &["replay", dir.to_str().unwrap(), "--to", &to, "--json"],
    );
    let (stdout, stderr) = output_text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let state: Value = serde_json::from_str(&stdout).unwrap();
    state["processes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["id"].as_u64().unwrap() as u32,
                p["events"].as_u64().unwrap(),
            )
        })
        .filter(|(_, events)| *events > 0)
        .collect()
}

fn cut_of(halt: &Halt) -> Vec<(u32, u64)> {
    let mut cut: Vec<(u32, u64)> = halt
        .cut
        .iter()
        .map(|(p, n)| (p.0, *n))
        .filter(|(_, n)| *n > 0)
        .collect();
    cut.sort();
    cut
}

/// `ppd record -o DIR -i --stop PRED -- live_halt` with `commands` on its standard input.
fn interactive(work: &Path, dir: &Path, pred: &str, commands: &[u8]) -> std::process::Output {
    let program = program();
    ppd_with_input(
        work,
        &[
            "record",
            "-o",
            dir.to_str().unwrap(),
            "-i",
            "--stop",
            pred,
            "--",
            program.to_str().unwrap(),
        ],
        commands,
    )
}

#[test]
fn a_live_program_halts_where_the_predicate_holds_and_a_replay_reaches_that_state_again() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("rec");
    let out = record_program(
        work.path(),
        &dir,
        &program(),
        &[],
        &["--stop", "consumer: mark checkpoint"],
    );
    let (stdout, stderr) = output_text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("halted (the predicate holds) at: consumer: mark checkpoint"),
        "{stdout}"
    );
    assert!(
        stdout.contains("halt 1 started by consumer; halting order: consumer -> "),
        "{stdout}"
    );
    // Busy with operations, the bookkeeper is stopped by the halting algorithm alone.
    assert!(stdout.contains("bookkeeper (p3): halted, "), "{stdout}");
    assert!(
        stdout.contains("holds    consumer: mark checkpoint"),
        "{stdout}"
    );
    // Without -i the program runs on, recording, to its end.
    assert!(stdout.contains(FINISHED), "{stdout}");
    assert!(stderr.contains("(complete)"), "{stderr}");

    let halts = read_halts(&dir).unwrap();
    assert_eq!(halts.len(), 1, "{halts:?}");
    let halt = &halts[0];
    assert_eq!(halt.order.first(), Some(&halt.initiator));
    assert!(halt.order.contains(&ppd_formats::ProcessId(3)), "{halt:?}");
    assert_eq!(checkpoint_at(&dir, halt), 1000);
    assert_consistent(&dir, halt);
    assert_eq!(replayed_to(work.path(), &dir, 1), cut_of(halt));

    let out = ppd(work.path(), &["replay", dir.to_str().unwrap(), "--verify"]);
    assert!(out.status.success(), "{}", output_text(&out).1);
}

#[test]
fn continue_halts_again_at_the_next_occurrence_and_detach_lets_the_program_finish() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("rec");
    let out = interactive(
        work.path(),
        &dir,
        "consumer: mark checkpoint",
        b"print\nnonsense\ncontinue\ncontinue\ndetach\n",
    );
    let (stdout, stderr) = output_text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("unknown command `nonsense`"), "{stdout}");
    assert!(stdout.contains(FINISHED), "{stdout}");
    let halts = read_halts(&dir).unwrap();
    let ids: Vec<u64> = halts.iter().map(|h| h.halt).collect();
    assert_eq!(ids, [1, 2, 3]);
    for (halt, expected) in halts.iter().zip([1000, 2000, 3000]) {
        assert_eq!(checkpoint_at(&dir, halt), expected);
        assert!(halt.order.contains(&ppd_formats::ProcessId(3)), "{halt:?}");
        assert_consistent(&dir, halt);
        assert_eq!(replayed_to(work.path(), &dir, halt.halt), cut_of(halt));
    }
}

#[test]
fn a_program_killed_at_a_halt_leaves_a_recording_that_replays_to_the_halt() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("rec");
    let out = interactive(
        work.path(),
        &dir,
        "producer-2: send | consumer: enter apply",
        b"kill\n",
    );
    let (stdout, stderr) = output_text(&out);
    assert_eq!(out.status.code(), Some(128 + 9), "{stdout}\n{stderr}");
    assert!(!stdout.contains(FINISHED), "{stdout}");
    assert!(stderr.contains("killed by signal 9"), "{stderr}");
    let halts = read_halts(&dir).unwrap();
    assert_eq!(halts.len(), 1);
    assert_eq!(replayed_to(work.path(), &dir, 1), cut_of(&halts[0]));
    // `why` at the halt answers from the killed recording: the consumer's body never
    // returned, so the replay that would trace it ends at the logs' ends, and says so.
    let out = ppd(
        work.path(),
        &[
            "why",
            dir.to_str().unwrap(),
            "producer-2",
            "i",
            "--at",
            "halt",
        ],
    );
    let (stdout, stderr) = output_text(&out);
    assert!(
        stdout.contains("did not return in the recorded run")
            || stderr.contains("did not return in the recorded run"),
        "{stdout}\n{stderr}"
    );
}

#[test]
fn why_at_a_live_halt_answers_from_the_recording_up_to_the_halt() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("rec");
    let out = interactive(
        work.path(),
        &dir,
        "consumer: exit apply if item == 2000005",
        b"why consumer total\nwhy consumr total\nkill\n",
    );
    let (stdout, stderr) = output_text(&out);
    assert_eq!(out.status.code(), Some(128 + 9), "{stdout}\n{stderr}");
    // The consumer halted at the exit of the apply that took 2000005: its `total` argument is
    // what the previous items summed to, and the chain says where it came from.
    let halts = read_halts(&dir).unwrap();
    let (events, n) = initiator_at(&dir, &halts[0]);
    let args = last_entry(&events[..n]);
    let total = format!("%1 total = {}", args["total"]);
    assert!(stdout.contains(&total), "no `{total}` in:\n{stdout}");
    assert!(stdout.contains("fn apply"), "{stdout}");
    assert!(
        stdout.contains("(answered from the recording up to halt 1)"),
        "{stdout}"
    );
    assert!(stdout.contains("did you mean consumer?"), "{stdout}");
}

#[test]
fn a_predicate_the_live_program_cannot_evaluate_is_refused_before_anything_runs() {
    let work = tempfile::tempdir().unwrap();
    let too_long = vec!["consumer: mark checkpoint"; 256].join(" -> ");
    for (pred, says) in [
        (
            too_long.as_str(),
            "a live program follows at most 255 stages",
        ),
        ("consumer: frobnicate x", "unknown event `frobnicate`"),
    ] {
        let dir = work.path().join("refused");
        let out = record_program(work.path(), &dir, &program(), &[], &["--stop", pred]);
        let (_, stderr) = output_text(&out);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(says), "{stderr}");
        assert!(!dir.exists(), "nothing is recorded");
    }
}

#[test]
fn a_breakpoint_that_never_holds_is_said_so_with_the_process_that_never_ran() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("rec");
    let out = record_program(
        work.path(),
        &dir,
        &program(),
        &[],
        &["--stop", "consumr: mark checkpoint"],
    );
    let (stdout, stderr) = output_text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains(FINISHED));
    assert!(
        stderr.contains("never held in this run (no process named consumr ran)"),
        "{stderr}"
    );
    assert!(read_halts(&dir).unwrap().is_empty());
}

/// `tests/scripts/cluster.sh`: a server and two clients, three OS processes over TCP.
fn cluster() -> String {
    concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/cluster.sh").to_owned()
}

#[test]
fn a_breakpoint_in_one_node_halts_every_node_and_a_replay_reaches_that_global_state() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("rec");
    let address_dir = work.path().to_str().unwrap();
    let net_cases = env!("CARGO_BIN_EXE_net_cases");
    let out = ppd(
        work.path(),
        &[
            "record",
            "-o",
            dir.to_str().unwrap(),
            "--stop",
            "server/handler-0: enter handle",
            "--",
            "sh",
            &cluster(),
            net_cases,
            "tcp",
            address_dir,
        ],
    );
    let (stdout, stderr) = output_text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("halt 1 started by server/handler-0; halting order: server/handler-0"),
        "{stdout}"
    );
    assert!(
        stdout.contains("holds    server/handler-0: enter handle"),
        "{stdout}"
    );
    // The clients' OS processes got the halt marker from the debugger: both are in the state.
    for client in ["alice/main", "bob/main"] {
        assert!(
            stdout.contains(&format!("  {client} (")),
            "{client} is not in the halted state: {stdout}"
        );
    }
    assert!(stdout.contains("final total 30"), "{stdout}");
    assert!(stderr.contains("in 3 OS processes"), "{stderr}");

    let halts = read_halts(&dir).unwrap();
    assert_eq!(halts.len(), 1);
    let halt = &halts[0];
    let nodes_in_cut: HashSet<usize> = halt.cut.iter().map(|(p, _)| p.node() as usize).collect();
    assert_eq!(nodes_in_cut.len(), 3, "{halt:?}");
    // The replay reaches the same global state, node by node.
    assert_eq!(replayed_nodes_to_halt(work.path(), &dir), cut_of(halt));
}

#[test]
fn the_replicated_store_halts_live_in_all_three_os_processes_at_the_stale_update() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("rec");
    let out = ppd_tests::record_kvstore(
        work.path(),
        &dir,
        &["--stop", "backup/replication: mark ignored"],
    );
    let (stdout, stderr) = output_text(&out);
    // The client finds the backup stale after the program runs on to its end.
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(
        stdout.contains(r#"mark ignored = "put hits 10 10""#),
        "{stdout}"
    );
    let halts = read_halts(&dir).unwrap();
    assert_eq!(halts.len(), 1, "{stderr}");
    let nodes_in_cut: HashSet<u32> = halts[0]
        .cut
        .iter()
        .filter(|(_, n)| *n > 0)
        .map(|(p, _)| p.node())
        .collect();
    assert_eq!(nodes_in_cut.len(), 3, "{:?}", halts[0]);
    assert_eq!(replayed_nodes_to_halt(work.path(), &dir), cut_of(&halts[0]));
}

#[test]
fn a_simultaneous_predicate_over_two_os_processes_halts_the_live_store_with_both_inside() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("rec");
    let pred = "client/main: enter count == primary/session: enter serve";
    let out = ppd_tests::record_kvstore(work.path(), &dir, &["--stop", pred]);
    let (stdout, stderr) = output_text(&out);
    let halts = read_halts(&dir).unwrap();
    assert_eq!(halts.len(), 1, "{stdout}\n{stderr}");
    for part in ["client/main: enter count", "primary/session: enter serve"] {
        assert!(stdout.contains(&format!("holds    {part}")), "{stdout}");
    }
    // In the halted state each of the two is inside its e-block: the parts, held in two OS
    // processes, held at once.
    let recording = ppd_formats::Recording::open(&dir).unwrap();
    let mut checked = 0;
    for (id, events) in logs(&dir) {
        // A process of a recording of several nodes is named `NODE/NAME`.
        let name = recording.process(id).unwrap().name.clone();
        let eblock = match name.as_str() {
            "client/main" => "count",
            "primary/session" => "serve",
            _ => continue,
        };
        checked += 1;
        let (_, n) = halts[0].cut.iter().find(|(p, _)| *p == id).unwrap();
        let depth: i64 = events[..*n as usize]
            .iter()
            .map(|e| match e {
                Event::EblockEnter { eblock: f, .. } if f.ends_with(eblock) => 1,
                Event::EblockExit { eblock: f, .. } if f.ends_with(eblock) => -1,
                _ => 0,
            })
            .sum();
        assert_eq!(depth, 1, "{name} is not inside {eblock} at the halt");
    }
    assert_eq!(checked, 2);
    assert_eq!(replayed_nodes_to_halt(work.path(), &dir), cut_of(&halts[0]));
}

#[test]
fn a_linked_predicate_follows_its_stage_through_sockets_into_another_os_process() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("rec");
    // The client's put reaches the backup through the primary: two TCP connections, three OS
    // processes. Each socket write after the first stage hands its stage on through the
    // debugger before its bytes go.
    let pred = "client/main: enter count -> backup/replication: mark ignored";
    let out = ppd_tests::record_kvstore(work.path(), &dir, &["--stop", pred]);
    let (stdout, stderr) = output_text(&out);
    let halts = read_halts(&dir).unwrap();
    assert_eq!(halts.len(), 1, "{stdout}\n{stderr}");
    assert!(
        stdout.contains("holds    backup/replication: mark ignored"),
        "{stdout}"
    );
    let halt = &halts[0];
    let recording = ppd_formats::Recording::open(&dir).unwrap();
    let initiator = &recording.process(halt.initiator).unwrap().name;
    assert_eq!(initiator, "backup/replication");
    let (_, at) = halt.cut.iter().find(|(p, _)| *p == halt.initiator).unwrap();
    // The halt's event ends a chain from the client's count: replay's trace of the same
    // predicate, which follows every socket edge of the whole recording, lists it.
    let lines = ppd_tests::replay_trace(work.path(), &dir, pred, "backup/replication.ignored");
    let ends: Vec<u64> = lines
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|line| {
            line["cut"]
                .as_array()
                .unwrap()
                .iter()
                .find(|pair| pair[0] == "backup/replication")
                .and_then(|pair| pair[1].as_u64())
        })
        .collect();
    assert!(
        ends.contains(at),
        "halted after {at} events; chains end at {ends:?}"
    );
    assert_eq!(replayed_nodes_to_halt(work.path(), &dir), cut_of(halt));
}

#[test]
fn a_node_that_ended_before_the_halt_is_in_the_halted_state_as_it_ended() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("rec");
    let program = program();
    // Two OS processes one after the other: `early` runs to its end before `late` reaches the
    // breakpoint.
    let script = format!(
        "PPD_NODE=early {p} && PPD_NODE=late {p}",
        p = program.to_str().unwrap()
    );
    let out = ppd(
        work.path(),
        &[
            "record",
            "-o",
            dir.to_str().unwrap(),
            "--stop",
            "late/consumer: mark checkpoint",
            "--",
            "sh",
            "-c",
            &script,
        ],
    );
    let (stdout, stderr) = output_text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let halts = read_halts(&dir).unwrap();
    assert_eq!(halts.len(), 1, "{stdout}\n{stderr}");
    let recording = ppd_formats::Recording::open(&dir).unwrap();
    let mut early = 0;
    for (id, events) in logs(&dir) {
        let name = recording.process(id).unwrap().name.clone();
        if !name.starts_with("early/") {
            continue;
        }
        early += 1;
        assert!(
            stdout.contains(&format!("  {name} (")),
            "{name} is not in the halted state: {stdout}"
        );
        let (_, n) = halts[0].cut.iter().find(|(p, _)| *p == id).unwrap();
        assert_eq!(
            *n as usize,
            events.len(),
            "{name} is in the cut with all its events"
        );
    }
    assert!(early >= 2, "{stdout}");
    assert!(stdout.contains("finished"), "{stdout}");
    assert_eq!(replayed_nodes_to_halt(work.path(), &dir), cut_of(&halts[0]));
}

/// `ppd replay DIR --to halt --json` on a recording of several nodes: each process's events,
/// in the recording's ids.
fn replayed_nodes_to_halt(work: &Path, dir: &Path) -> Vec<(u32, u64)> {
    let recording = ppd_formats::Recording::open(dir).unwrap();
    let out = ppd(
        work,
        &["replay", dir.to_str().unwrap(), "--to", "halt", "--json"],
    );
    let (stdout, stderr) = output_text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let replayed: Value = serde_json::from_str(&stdout).unwrap();
    let mut reached: Vec<(u32, u64)> = Vec::new();
    for node in replayed["nodes"].as_array().unwrap() {
        let base = recording
            .nodes()
            .iter()
            .find(|n| n.name == node["node"])
            .unwrap()
            .base;
        for p in node["state"]["processes"].as_array().unwrap() {
            let events = p["events"].as_u64().unwrap();
            if events > 0 {
                reached.push((base + p["id"].as_u64().unwrap() as u32, events));
            }
        }
    }
    reached.sort();
    reached
}

#[test]
fn bank_halts_live_where_a_balance_goes_negative() {
    let work = tempfile::tempdir().unwrap();
    // Most runs of bank go negative; the first that does is the one to look at.
    for attempt in 0..20 {
        let dir = work.path().join(format!("bank-{attempt}"));
        let out = record_example(
            work.path(),
            &dir,
            "bank",
            &["--stop", "teller: mark negative"],
        );
        let (stdout, stderr) = output_text(&out);
        let halts = read_halts(&dir).unwrap();
        if halts.is_empty() {
            assert!(stderr.contains("never held in this run"), "{stderr}");
            continue;
        }
        assert!(stdout.contains("teller (p1): halted, "), "{stdout}");
        assert!(
            stdout.contains("holds    teller: mark negative"),
            "{stdout}"
        );
        let halt = &halts[0];
        assert_consistent(&dir, halt);
        let (teller, events) = logs(&dir).into_iter().nth(1).unwrap();
        let (_, n) = halt.cut.iter().find(|(p, _)| *p == teller).unwrap();
        assert!(
            matches!(&events[*n as usize - 1], Event::Mark { label, .. } if &**label == "negative"),
            "the teller halted right after its mark"
        );
        assert_eq!(replayed_to(work.path(), &dir, 1), cut_of(halt));
        return;
    }
    panic!("bank never went negative in 20 recorded runs");
}

#[test]
fn the_token_ring_halts_live_with_two_nodes_holding_the_token_at_once() {
    let work = tempfile::tempdir().unwrap();
    let pred = "node-1: mark holding if value > 0 == node-3: mark holding if value > 0";
    // Two tokens circulate in about a third of the runs (the example's bug), and two nodes
    // then hold one each at once in some of those: the first run where node-1 and node-3 do
    // is the one to look at.
    for attempt in 0..30 {
        let dir = work.path().join(format!("ring-{attempt}"));
        let out = record_example(work.path(), &dir, "token_ring", &["--stop", pred]);
        let (stdout, stderr) = output_text(&out);
        let halts = read_halts(&dir).unwrap();
        if halts.is_empty() {
            assert!(stderr.contains("never held in this run"), "{stderr}");
            continue;
        }
        let halt = &halts[0];
        assert_consistent(&dir, halt);
        let recording = ppd_formats::Recording::open(&dir).unwrap();
        for (id, events) in logs(&dir) {
            let name = &recording.processes()[id.index()].name;
            if name != "node-1" && name != "node-3" {
                continue;
            }
            assert!(
                stdout.contains(&format!("holds    {name}: mark holding")),
                "{stdout}"
            );
            // In the halted state the node's last `holding` mark is its entry's, not its exit's.
            let (_, n) = halt.cut.iter().find(|(p, _)| *p == id).unwrap();
            let inside = events[..*n as usize].iter().rev().find_map(|e| match e {
                Event::Mark { label, value, .. } if &**label == "holding" => {
                    Some(ppd_formats::value::decode_as::<u32>(value).unwrap())
                }
                _ => None,
            });
            assert!(
                inside.is_some_and(|v| v > 0),
                "{name} is not in its critical section in the halted state: {inside:?}\n{stdout}"
            );
        }
        assert_eq!(replayed_to(work.path(), &dir, 1), cut_of(halt));
        return;
    }
    panic!("in 30 runs node-1 and node-3 never held a token at once");
}

#[test]
fn a_conjunction_halts_the_live_program_where_every_part_holds_at_once() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("rec");
    let out = record_program(
        work.path(),
        &dir,
        &program(),
        &["meet"],
        &["--stop", "left: mark arrived & right: mark arrived"],
    );
    let (stdout, stderr) = output_text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("holds    left: mark arrived"), "{stdout}");
    assert!(stdout.contains("holds    right: mark arrived"), "{stdout}");
    let halts = read_halts(&dir).unwrap();
    assert_eq!(halts.len(), 1);
    // In the halted state each walker's last event is its mark: both parts hold at once.
    let recording = ppd_formats::Recording::open(&dir).unwrap();
    for (id, events) in logs(&dir) {
        let name = &recording.processes()[id.index()].name;
        if name == "main" {
            continue;
        }
        let (_, n) = halts[0].cut.iter().find(|(p, _)| *p == id).unwrap();
        assert!(
            matches!(&events[*n as usize - 1], Event::Mark { label, .. } if &**label == "arrived"),
            "{name} is past its mark in the halted state"
        );
    }
    assert_eq!(replayed_to(work.path(), &dir, 1), cut_of(&halts[0]));
}

#[test]
fn a_linked_predicate_halts_the_live_program_only_after_its_first_stage_happened_before() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("rec");
    let pred = "main: mark go -> worker: mark step";
    let out = record_program(
        work.path(),
        &dir,
        &program(),
        &["linked"],
        &["--stop", pred],
    );
    let (stdout, stderr) = output_text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("holds    worker: mark step"), "{stdout}");
    let halts = read_halts(&dir).unwrap();
    assert_eq!(halts.len(), 1, "{stderr}");
    let halt = &halts[0];
    assert_consistent(&dir, halt);
    // The worker marked a step every millisecond long before `go`; it halts at the first
    // step after the receive of the message sent after `go`, and at no step before.
    let (worker, n) = initiator_at(&dir, halt);
    let at = n - 1;
    assert!(
        matches!(&worker[at], Event::Mark { label, .. } if &**label == "step"),
        "{:?}",
        worker[at]
    );
    let received = worker
        .iter()
        .position(|e| matches!(e, Event::Recv { .. }))
        .expect("the worker received the message");
    let steps_between = worker[received..at]
        .iter()
        .filter(|e| matches!(e, Event::Mark { .. }))
        .count();
    assert_eq!(steps_between, 0, "a step after the message was passed over");
    assert!(
        worker[..received]
            .iter()
            .filter(|e| matches!(e, Event::Mark { .. }))
            .count()
            > 10,
        "the worker stepped before the message too"
    );
    // A replay halting at the same predicate finds the same step.
    let replayed = replay_halts(work.path(), &dir, pred, |p| p["name"] == "worker");
    assert_eq!(replayed, Some(n as u64));

    // The bystander's mark precedes no step: the run goes to its end unhalted.
    let dir = work.path().join("unrelated");
    let pred = "bystander: mark idle -> worker: mark step";
    let out = record_program(
        work.path(),
        &dir,
        &program(),
        &["linked"],
        &["--stop", pred],
    );
    let (stdout, stderr) = output_text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("linked"), "{stdout}");
    assert!(stderr.contains("never held in this run"), "{stderr}");
    assert!(read_halts(&dir).unwrap().is_empty());
}

#[test]
fn a_condition_is_evaluated_live_on_the_logged_values_as_replay_evaluates_it() {
    let work = tempfile::tempdir().unwrap();
    // A mark's value; then an exit's condition on an argument its entry logged and on the
    // result.
    for (k, pred) in [
        "consumer: mark checkpoint if value >= 2000",
        "consumer: exit apply if item == 2000005 && %0 > 0",
    ]
    .into_iter()
    .enumerate()
    {
        let dir = work.path().join(format!("rec{k}"));
        let out = record_program(work.path(), &dir, &program(), &[], &["--stop", pred]);
        let (stdout, stderr) = output_text(&out);
        assert!(out.status.success(), "{stdout}\n{stderr}");
        let halts = read_halts(&dir).unwrap();
        assert_eq!(halts.len(), 1, "{pred}: {stderr}");
        let halt = &halts[0];
        assert_consistent(&dir, halt);
        let (events, n) = initiator_at(&dir, halt);
        match &events[n - 1] {
            Event::Mark { label, value, .. } => {
                assert_eq!(&**label, "checkpoint");
                assert_eq!(ppd_formats::value::decode_as::<u64>(value).unwrap(), 2000);
            }
            Event::EblockExit { eblock, .. } => {
                assert!(eblock.ends_with("apply"), "{eblock}");
                let args = last_entry(&events[..n - 1]);
                assert_eq!(args["item"], 2000005, "{args}");
            }
            other => panic!("{pred}: halted after {other:?}"),
        }
        // Replay, which evaluates the same condition, halts the initiator at the same event.
        let replayed = replay_halts(work.path(), &dir, pred, |p| p["id"] == halt.initiator.0);
        assert_eq!(replayed, Some(n as u64), "{pred}");
    }
}

#[test]
fn a_simultaneous_predicate_halts_the_live_program_with_both_inside_their_sections() {
    let work = tempfile::tempdir().unwrap();
    let pred = "left: enter section == right: enter section";
    let dir = work.path().join("rec");
    let out = record_program(
        work.path(),
        &dir,
        &program(),
        &["sections"],
        &["--stop", pred],
    );
    let (stdout, stderr) = output_text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    // The static analysis of the program's source (found from the binary) gave the
    // recognition points; left's receive of right's word is the one where it succeeds, so
    // the whole predicate is evaluated once.
    assert!(
        stderr.contains("evaluated at its recognition points only")
            && stderr.contains("left at ")
            && stderr.contains("live_halt.rs"),
        "{stderr}"
    );
    assert!(
        stdout.contains("the whole predicate was evaluated once before it held"),
        "{stdout}"
    );
    let halts = read_halts(&dir).unwrap();
    assert_eq!(halts.len(), 1, "{stderr}");
    let recording = ppd_formats::Recording::open(&dir).unwrap();
    assert_eq!(
        recording.processes()[halts[0].initiator.index()].name,
        "left"
    );
    // Whatever their last events, both are inside their sections in the halted state.
    let recording = ppd_formats::Recording::open(&dir).unwrap();
    for (id, events) in logs(&dir) {
        let name = &recording.processes()[id.index()].name;
        if name == "main" {
            continue;
        }
        let (_, n) = halts[0].cut.iter().find(|(p, _)| *p == id).unwrap();
        let depth: i64 = events[..*n as usize]
            .iter()
            .map(|e| match e {
                Event::EblockEnter { eblock, .. } if eblock.ends_with("section") => 1,
                Event::EblockExit { eblock, .. } if eblock.ends_with("section") => -1,
                _ => 0,
            })
            .sum();
        assert_eq!(depth, 1, "{name} is not inside its section at the halt");
    }
    // Without the analysis, every event at which a part holds evaluates the whole predicate.
    let dir = work.path().join("everywhere");
    let out = record_program(
        work.path(),
        &dir,
        &program(),
        &["sections"],
        &["--stop", pred, "--no-check"],
    );
    let (stdout, stderr) = output_text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(!stderr.contains("recognition points"), "{stderr}");
    let evaluated = stdout
        .lines()
        .find_map(|l| l.trim().strip_prefix("the whole predicate was evaluated "))
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse::<u32>().ok());
    assert!(evaluated.is_some_and(|n| n > 1), "{stdout}");
    assert_eq!(read_halts(&dir).unwrap().len(), 1);
    // Sections one after the other never overlap: the run goes to its end.
    let dir = work.path().join("apart");
    let out = record_program(
        work.path(),
        &dir,
        &program(),
        &["sections", "apart"],
        &["--stop", pred],
    );
    let (stdout, stderr) = output_text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("sections"), "{stdout}");
    assert!(stderr.contains("never held in this run"), "{stderr}");
}

#[test]
fn gdb_attached_at_a_live_halt_is_in_the_initiators_frame_at_its_breakpoint() {
    if !ppd_tests::have_gdb("attaching gdb at a live halt") {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("rec");
    let out = interactive(
        work.path(),
        &dir,
        "consumer: mark checkpoint",
        b"gdb --dry-run\ngdb -- -batch -ex frame -ex 'info locals'\ndetach\n",
    );
    let (stdout, stderr) = output_text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let source = include_str!("../src/bin/live_halt.rs");
    let mark = ppd_tests::line_of(source, "ppd::mark!(\"checkpoint\", n);");
    // The frame gdb is left in is the consumer's, at the mark that was the breakpoint, with
    // the locals of that moment.
    assert!(
        stdout.contains(&format!("tests/src/bin/live_halt.rs:{mark}")),
        "{stdout}\n{stderr}"
    );
    assert!(stdout.contains("n = 1000"), "{stdout}");
    // The program was still halted under gdb, and ran on to its end after it.
    assert!(stdout.contains(FINISHED), "{stdout}");
    assert_eq!(read_halts(&dir).unwrap().len(), 1);
}

#[test]
fn gdb_all_attaches_one_gdb_to_every_halted_node_with_the_breakpoints_thread_selected() {
    if !ppd_tests::have_gdb("attaching gdb to every halted node") {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("rec");
    let launcher = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/kvstore.sh");
    let kvstore = ppd_tests::example_bin("kvstore");
    let out = ppd_with_input(
        work.path(),
        &[
            "record",
            "-o",
            dir.to_str().unwrap(),
            "-i",
            "--stop",
            "backup/replication: mark ignored",
            "--",
            "sh",
            launcher,
            kvstore.to_str().unwrap(),
        ],
        b"gdb all -- -batch -ex 'info inferiors' -ex thread\nlldb all\ndetach\n",
    );
    let (stdout, stderr) = output_text(&out);
    let halts = read_halts(&dir).unwrap();
    assert_eq!(halts.len(), 1, "{stdout}\n{stderr}");
    // One inferior per OS process of the run, each attached.
    assert_eq!(ppd_tests::gdb_inferiors(&stdout), 3, "{stdout}\n{stderr}");
    // The first inferior is the breakpoint's node, with a thread of its own selected.
    assert!(stdout.contains("[Current thread is 1."), "{stdout}");
    assert!(
        stdout.contains("lldb debugs one OS process at a time"),
        "{stdout}"
    );
    // `--gdb` stands for the same command at the halt, then `detach`.
    let dir = work.path().join("flag");
    let out = ppd_tests::record_kvstore(
        work.path(),
        &dir,
        &[
            "--stop",
            "backup/replication: mark ignored",
            "--gdb",
            "--dry-run",
        ],
    );
    let (stdout, stderr) = output_text(&out);
    let command = stdout
        .lines()
        .find(|l| l.starts_with("gdb -q -p "))
        .unwrap_or_else(|| panic!("no gdb command in {stdout}\n{stderr}"));
    assert_eq!(command.matches("'attach ").count(), 2, "{command}");
    assert!(stdout.contains("(ppd) detach"), "{stdout}");
    assert!(
        stdout.contains("the backup is stale"),
        "the program ran on: {stdout}"
    );
}

#[test]
fn a_node_that_connects_while_a_halt_is_shown_is_halted_on_arrival_and_resumed_with_the_rest() {
    use std::io::{BufRead, BufReader, Write};
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("rec");
    let program = program();
    // `late` starts a second after `early`, whose first checkpoint halts the run long before.
    let script = format!(
        "PPD_NODE=early {p} & sleep 1; PPD_NODE=late {p}; wait",
        p = program.to_str().unwrap()
    );
    let mut child = std::process::Command::new(ppd_tests::ppd_bin())
        .args([
            "record",
            "-o",
            dir.to_str().unwrap(),
            "-i",
            "--stop",
            "early/consumer: mark checkpoint",
            "--",
            "sh",
            "-c",
            &script,
        ])
        .current_dir(work.path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut shown = String::new();
    while !shown.contains("halting order") {
        let mut line = String::new();
        assert!(stdout.read_line(&mut line).unwrap() > 0, "{shown}");
        shown.push_str(&line);
    }
    // While the halt is shown, `late` starts and connects: it must not run.
    std::thread::sleep(std::time::Duration::from_secs(3));
    let late_events = || -> Option<usize> {
        let recording = ppd_formats::Recording::open(&dir).ok()?;
        let events = recording
            .processes()
            .iter()
            .filter(|p| p.name.starts_with("late/"))
            .map(|p| recording.open_log(p).map(|l| l.event_count()).unwrap_or(0) as usize)
            .sum();
        Some(events)
    };
    let halted_at = late_events().expect("late has a log by now");
    assert!(
        halted_at < 10,
        "late ran on during the halt: {halted_at} events"
    );
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"detach\n").unwrap();
    drop(stdin);
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).unwrap();
    assert!(child.wait().unwrap().success(), "{shown}{rest}");
    // Resumed with the rest, it ran to its end.
    assert_eq!(rest.matches(FINISHED).count(), 2, "{rest}");
    assert!(late_events().unwrap() > 100);
}
