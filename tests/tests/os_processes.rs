//! Recordings of several OS processes (`tests/scripts/*.sh`, launchers as users write them):
//! a total server and two clients (`net_cases total-server` / `total-client`), each an OS
//! process, recorded by wrapping the launcher in `ppd record`; replayed with `--verify`, one
//! node alone, after the server was killed, and between two network namespaces acting as two
//! hosts; and `why` followed from a value the server computed to the client statement that
//! computed what it received. A task farm across two hosts (`ppd::task::farm_nodes`) completes,
//! replays, and re-executes a task in the worker node that computed it.

use std::path::{Path, PathBuf};
use std::process::Command;

use ppd_tests::{info_json, output_text, ppd, processes};
use serde_json::Value;

fn net_cases() -> String {
    env!("CARGO_BIN_EXE_net_cases").to_owned()
}

fn script(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scripts")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

/// `ppd record -o work/rec -- COMMAND...`: the recording, and what the run printed to stdout
/// and what ppd said on stderr.
fn record(work: &Path, command: &[&str]) -> (PathBuf, String, String) {
    let dir = work.join("rec");
    let mut args = vec!["record", "-o", dir.to_str().unwrap(), "--"];
    args.extend_from_slice(command);
    let out = ppd(work, &args);
    let (stdout, stderr) = output_text(&out);
    assert!(
        out.status.success(),
        "recording failed:\n{stdout}\n{stderr}"
    );
    (dir, stdout, stderr)
}

/// `ppd ARGS` that must succeed: its stdout and stderr.
fn ppd_ok(work: &Path, args: &[&str]) -> (String, String) {
    let out = ppd(work, args);
    let (stdout, stderr) = output_text(&out);
    assert!(
        out.status.success(),
        "ppd {args:?} failed:\n{stdout}\n{stderr}"
    );
    (stdout, stderr)
}

/// Each node of `ppd info --json`: its name and how it ended.
fn nodes(info: &Value) -> Vec<(String, Value)> {
    info["nodes"]
        .as_array()
        .expect("a recording of several OS processes lists its nodes")
        .iter()
        .map(|n| (n["name"].as_str().unwrap().to_owned(), n.clone()))
        .collect()
}

/// `ppd why` on a handler's answer: the chain of a value the server computed from a request.
fn why_handler(work: &Path, dir: &Path, handler: &str) -> String {
    ppd_ok(
        work,
        &["why", dir.to_str().unwrap(), handler, "%0", "--depth", "14"],
    )
    .0
}

/// The chain reaches, in a client's OS process, the statement that computed the amount the
/// client sent, through the read in the server and the write in the client.
fn assert_crosses_the_wire(chain: &str, transport: &str) {
    for step in [
        format!("read from {transport} socket"),
        format!("written to {transport} socket"),
        "let asked = amount * 10;".to_owned(),
    ] {
        assert!(chain.contains(&step), "no `{step}` in:\n{chain}");
    }
    assert!(
        chain.contains("alice/main net_cases::request")
            || chain.contains("bob/main net_cases::request"),
        "the write is not in a client's OS process:\n{chain}"
    );
}

fn lines_sorted(text: &str) -> Vec<&str> {
    let mut lines: Vec<&str> = text.lines().collect();
    lines.sort_unstable();
    lines
}

#[test]
fn a_server_and_two_clients_over_tcp_record_as_three_nodes_that_replay_and_why_crosses_the_wire() {
    let work = tempfile::tempdir().unwrap();
    let cluster = script("cluster.sh");
    let address_dir = work.path().to_str().unwrap();
    let (dir, printed, said) = record(
        work.path(),
        &["sh", &cluster, &net_cases(), "tcp", address_dir],
    );
    let printed = lines_sorted(&printed);
    assert_eq!(printed.len(), 3, "{printed:?}");
    assert!(printed[0].starts_with("alice: total "), "{printed:?}");
    assert!(printed[1].starts_with("bob: total "), "{printed:?}");
    assert_eq!(printed[2], "final total 30");
    assert!(
        said.contains("5 processes in 3 OS processes") && said.contains("(complete)"),
        "{said}"
    );

    let info = info_json(work.path(), &dir);
    assert_eq!(info["complete"], true, "{info:#}");
    let nodes = nodes(&info);
    let names: Vec<&str> = nodes.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["server", "alice", "bob"]);
    let mut pids: Vec<u64> = nodes
        .iter()
        .map(|(_, n)| n["os_pid"].as_u64().unwrap())
        .collect();
    pids.dedup();
    assert_eq!(
        pids.len(),
        3,
        "each node is an OS process of its own: {pids:?}"
    );
    for (name, node) in &nodes {
        assert_eq!(node["run_ending"]["how"], "exited", "{name}: {node:#}");
        assert_eq!(node["complete"], true, "{name}: {node:#}");
    }
    let named: Vec<String> = processes(&info).into_keys().collect();
    assert_eq!(
        named,
        [
            "alice/main",
            "bob/main",
            "server/handler-0",
            "server/handler-1",
            "server/main"
        ]
    );

    let d = dir.to_str().unwrap();
    let (_, replayed) = ppd_ok(work.path(), &["replay", d, "--verify"]);
    assert!(replayed.contains("3 nodes reproduced"), "{replayed}");
    assert_eq!(
        replayed
            .matches("every event and logged value matched")
            .count(),
        3,
        "{replayed}"
    );

    // One client alone: its reads come from the log, the server need not run.
    let (alone, said) = ppd_ok(work.path(), &["replay", d, "--verify", "--only", "alice"]);
    assert!(alone.starts_with("alice: total "), "{alone}");
    assert!(
        said.contains("node alice:") && !said.contains("node server"),
        "{said}"
    );
    assert_eq!(
        said.matches("every event and logged value matched").count(),
        1,
        "{said}"
    );

    for handler in ["server/handler-0", "server/handler-1"] {
        assert_crosses_the_wire(&why_handler(work.path(), &dir, handler), "tcp");
    }

    // The total's mutex is created at its first use, by whichever handler comes first; the
    // other's e-block takes it as an argument. Halting either handler at its entry must not
    // wait, unseen, for the creator held before it starts.
    for handler in ["handler-0", "handler-1"] {
        let stop = format!("server/{handler}: enter handle");
        let (halted, _) = ppd_ok(work.path(), &["replay", d, "--json", "--stop", &stop]);
        let state: Value = serde_json::from_str(&halted).unwrap();
        let server = state["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["node"] == "server")
            .unwrap_or_else(|| panic!("no server node: {state:#}"));
        let held = server["state"]["processes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == handler)
            .unwrap_or_else(|| panic!("no {handler}: {server:#}"));
        assert_eq!(held["kind"], "eblock_enter", "{stop}: {held:#}");
        assert_eq!(
            held["holds"][0],
            format!("{handler}: enter handle"),
            "{held:#}"
        );
    }
}

#[test]
fn unix_sockets_between_os_processes_pair_their_ends_and_why_crosses_them() {
    let work = tempfile::tempdir().unwrap();
    let cluster = script("cluster.sh");
    let address_dir = work.path().to_str().unwrap();
    let (dir, printed, _) = record(
        work.path(),
        &["sh", &cluster, &net_cases(), "unix", address_dir],
    );
    assert!(printed.contains("final total 30"), "{printed}");
    let (_, replayed) = ppd_ok(work.path(), &["replay", dir.to_str().unwrap(), "--verify"]);
    assert!(replayed.contains("3 nodes reproduced"), "{replayed}");
    assert_crosses_the_wire(&why_handler(work.path(), &dir, "server/handler-0"), "unix");
}

#[test]
fn a_server_killed_mid_run_leaves_a_recording_whose_every_node_replays() {
    let work = tempfile::tempdir().unwrap();
    let kill = script("kill-server.sh");
    let address_dir = work.path().to_str().unwrap();
    let (dir, printed, said) = record(work.path(), &["sh", &kill, &net_cases(), address_dir]);
    assert!(printed.contains("alice: total 10"), "{printed}");
    assert!(!printed.contains("bob: total"), "{printed}");
    assert!(said.contains("recovered: server cut short"), "{said}");

    let info = info_json(work.path(), &dir);
    assert_eq!(info["complete"], false, "{info:#}");
    let nodes = nodes(&info);
    let how: Vec<(&str, &str)> = nodes
        .iter()
        .map(|(name, n)| (name.as_str(), n["run_ending"]["how"].as_str().unwrap()))
        .collect();
    assert_eq!(
        how,
        [
            ("server", "cut_short"),
            ("alice", "exited"),
            // Nobody listened any more: its connect failed and it panicked.
            ("bob", "panicked"),
        ]
    );
    let server_main = &processes(&info)["server/main"];
    assert!(
        server_main["ending_text"]
            .as_str()
            .unwrap()
            .contains("blocked on tcp listener"),
        "{server_main:#}"
    );

    let d = dir.to_str().unwrap();
    let (_, replayed) = ppd_ok(work.path(), &["replay", d, "--verify"]);
    assert!(replayed.contains("3 nodes reproduced"), "{replayed}");
    assert!(replayed.contains("Connection refused"), "{replayed}");

    // The killed server's prefix is there to ask about: alice's answer came from it.
    let (chain, _) = ppd_ok(work.path(), &["why", d, "alice/main", "%0", "--depth", "6"]);
    for step in [
        "read from tcp socket",
        "server/handler-0 net_cases::handle",
        "let answer = *total;",
    ] {
        assert!(chain.contains(step), "no `{step}` in:\n{chain}");
    }
}

/// Whether this machine lets an unprivileged user make network namespaces and veth pairs, so
/// that two hosts can be made here. A test that needs them skips, saying so, unless
/// `PPD_REQUIRE_NETNS` makes their absence a failure.
fn two_hosts_here() -> bool {
    let available = Command::new("unshare")
        .args([
            "-rn", "ip", "link", "add", "name", "ppd-a", "type", "veth", "peer", "name", "ppd-b",
        ])
        .output()
        .is_ok_and(|out| out.status.success());
    if !available {
        assert!(
            std::env::var_os("PPD_REQUIRE_NETNS").is_none(),
            "PPD_REQUIRE_NETNS is set, but network namespaces cannot be made here \
             (`unshare -rn ip link add ... type veth` failed)"
        );
        eprintln!(
            "skipped: network namespaces cannot be made here (set PPD_REQUIRE_NETNS to fail \
             instead)"
        );
    }
    available
}

#[test]
fn a_server_and_clients_in_two_network_namespaces_acting_as_two_hosts() {
    if !two_hosts_here() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let two_hosts = script("two-hosts.sh");
    let address_dir = work.path().to_str().unwrap();
    let (dir, printed, _) = record(
        work.path(),
        &[
            "unshare",
            "-rn",
            "sh",
            &two_hosts,
            &net_cases(),
            address_dir,
        ],
    );
    assert!(printed.contains("final total 30"), "{printed}");
    let d = dir.to_str().unwrap();
    let (_, replayed) = ppd_ok(work.path(), &["replay", d, "--verify"]);
    assert!(replayed.contains("3 nodes reproduced"), "{replayed}");
    let chain = why_handler(work.path(), &dir, "server/handler-1");
    assert_crosses_the_wire(&chain, "tcp");
    // The two ends are on the two hosts' addresses.
    assert!(
        chain.contains("10.77.0.1:") && chain.contains("→ 10.77.0.2:"),
        "{chain}"
    );
}

#[test]
fn recordings_made_apart_on_two_hosts_merge_into_one_that_replays_and_why_crosses_them() {
    if !two_hosts_here() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let apart = script("two-hosts-apart.sh");
    let w = work.path().to_str().unwrap();
    let ppd_bin = ppd_tests::ppd_bin();
    let out = Command::new("unshare")
        .args([
            "-rn",
            "sh",
            &apart,
            ppd_bin.to_str().unwrap(),
            &net_cases(),
            w,
            "run-7",
        ])
        .output()
        .unwrap();
    let (printed, said) = output_text(&out);
    assert!(
        out.status.success(),
        "{printed}
{said}"
    );
    assert!(printed.contains("final total 30"), "{printed}");

    let merged = work.path().join("merged");
    let m = merged.to_str().unwrap();
    let (printed, said) = ppd_ok(
        work.path(),
        &[
            "merge",
            "--json",
            "-o",
            m,
            &format!("{w}/server-host"),
            &format!("{w}/client-host"),
        ],
    );
    assert!(
        said.contains("merged 3 nodes (5 processes) of run run-7"),
        "{said}"
    );
    let report: serde_json::Value = serde_json::from_str(&printed).unwrap();
    assert_eq!(
        (&report["run"], &report["processes"]),
        (&"run-7".into(), &5.into())
    );
    let mut merged_names: Vec<&str> = report["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["name"].as_str().unwrap())
        .collect();
    // The report follows the inputs, each host's root node first; which client is the client
    // host's root depends on which of them started first.
    merged_names[1..].sort_unstable();
    assert_eq!(merged_names, ["server", "alice", "bob"], "{report:#}");
    assert!(
        report["nodes"][0]["from"]
            .as_str()
            .unwrap()
            .ends_with("server-host"),
        "{report:#}"
    );
    let info = info_json(work.path(), &merged);
    let names: Vec<String> = nodes(&info).into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["server", "alice", "bob"]);
    let (_, replayed) = ppd_ok(work.path(), &["replay", m, "--verify"]);
    assert!(replayed.contains("3 nodes reproduced"), "{replayed}");
    let chain = why_handler(work.path(), &merged, "server/handler-0");
    assert_crosses_the_wire(&chain, "tcp");

    // Merging checks that the parts are of one run, and each there once.
    let other = work.path().join("other");
    let o = other.to_str().unwrap();
    let out = ppd(
        work.path(),
        &[
            "record",
            "--join",
            "run-8",
            "-o",
            o,
            "--",
            &net_cases(),
            "echo",
        ],
    );
    assert!(out.status.success(), "{}", output_text(&out).1);
    for (inputs, complaint) in [
        (
            vec![format!("{w}/server-host"), o.to_owned()],
            "different runs (run-7 and run-8)",
        ),
        (
            vec![format!("{w}/server-host"), format!("{w}/server-host")],
            "the same OS process",
        ),
    ] {
        let target = work.path().join(format!("refused-{}", inputs[1].len()));
        let mut args = vec!["merge", "-o", target.to_str().unwrap()];
        args.extend(inputs.iter().map(String::as_str));
        let out = ppd(work.path(), &args);
        let (_, said) = output_text(&out);
        assert_eq!(out.status.code(), Some(2), "{said}");
        assert!(said.contains(complaint), "{said}");
        assert!(
            !target.join("manifest.json").exists(),
            "a refused merge wrote {target:?}"
        );
    }
}

/// An e-block instance its OS process never finished (the process was killed inside it) is
/// re-executed up to where its log ends, and a `why` through it is no nondeterminism leak.
#[test]
fn why_through_an_instance_of_a_killed_process_stops_where_its_log_does() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("rec");
    let d = dir.to_str().unwrap();
    let kvstore = ppd_tests::example_bin("kvstore");
    let kill = script("kill-primary.sh");
    let out = ppd(
        work.path(),
        &[
            "record",
            "-o",
            d,
            "--",
            "sh",
            &kill,
            kvstore.to_str().unwrap(),
            d,
        ],
    );
    let (_, said) = output_text(&out);
    assert!(said.contains("primary cut short"), "{said}");
    let info = info_json(work.path(), &dir);
    let session = &processes(&info)["primary/session"];
    assert!(
        session["ending_text"]
            .as_str()
            .unwrap()
            .contains("when the run was cut short"),
        "{session:#}"
    );
    let (_, replayed) = ppd_ok(work.path(), &["replay", d, "--verify"]);
    assert!(replayed.contains("3 nodes reproduced"), "{replayed}");

    // The client's first answer came from the primary's serve, which never returned.
    let out = ppd(
        work.path(),
        &["why", d, "client/main", "%0", "--at", "count#1"],
    );
    let (chain, said) = output_text(&out);
    assert_eq!(out.status.code(), Some(0), "{chain}\n{said}");
    assert!(chain.contains("primary/session kvstore::serve"), "{chain}");
    assert!(!chain.contains("did not reproduce the log"), "{chain}");
    assert!(
        chain.contains("answered from a log that ends early: primary/session"),
        "{chain}"
    );
}

/// The README's walk-through of `examples/kvstore.rs`, step by step.
#[test]
fn the_replicated_store_example_records_replays_halts_at_the_stale_update_and_explains_it() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("rec");
    let out = ppd_tests::record_kvstore(work.path(), &dir, &[]);
    let (printed, said) = output_text(&out);
    // The client finds the backup stale and says so with its exit code.
    assert_eq!(out.status.code(), Some(1), "{printed}\n{said}");
    assert_eq!(
        printed,
        "primary: hits = 12\nbackup:  hits = 9\nthe backup is stale\n"
    );
    assert!(said.contains("in 3 OS processes"), "{said}");

    let d = dir.to_str().unwrap();
    let (_, replayed) = ppd_ok(work.path(), &["replay", d, "--verify"]);
    assert!(replayed.contains("3 nodes reproduced"), "{replayed}");

    let (halted, _) = ppd_ok(
        work.path(),
        &[
            "replay",
            d,
            "--only",
            "backup",
            "--stop",
            "replication: mark ignored",
        ],
    );
    assert!(
        halted.contains(r#"mark ignored = "put hits 10 10""#),
        "{halted}"
    );

    // The same breakpoint on the whole recording: the backup halts there, and the primary
    // and the client at the least consistent state that contains it — the client inside its
    // count of 10 (its put of 10 is what the backup received), the primary after forwarding it.
    let (halted, _) = ppd_ok(
        work.path(),
        &[
            "replay",
            d,
            "--stop",
            "backup/replication: mark ignored",
            "--json",
        ],
    );
    let halted: Value = serde_json::from_str(&halted).unwrap();
    let process = |node: &str, name: &str| -> Value {
        halted["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["node"] == node)
            .and_then(|n| {
                n["state"]["processes"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|p| p["name"] == name)
                    .cloned()
            })
            .unwrap_or_else(|| panic!("no {node}/{name} in {halted:#}"))
    };
    assert!(
        process("backup", "replication")["holds"]
            .to_string()
            .contains("mark ignored"),
        "{halted:#}"
    );
    let client = process("client", "main");
    assert_eq!(client["eblock"], "kvstore::count", "{client:#}");
    assert_eq!(client["eblock_args"]["n"], 10, "{client:#}");
    let session = process("primary", "session");
    assert_eq!(session["eblock"], "kvstore::serve", "{session:#}");
    assert_eq!(session["kind"], "net_write", "{session:#}");
    // A cut named on one node takes the others as far as it needs them.
    let (cut, _) = ppd_ok(
        work.path(),
        &["replay", d, "--to", "client/main=20", "--json"],
    );
    let cut: Value = serde_json::from_str(&cut).unwrap();
    let events = |node: &str| -> u64 {
        cut["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|n| n["node"] == node)
            .flat_map(|n| n["state"]["processes"].as_array().unwrap().clone())
            .map(|p| p["events"].as_u64().unwrap())
            .sum()
    };
    assert_eq!(events("client"), 20, "{cut:#}");
    assert!(events("primary") > 0 && events("backup") > 0, "{cut:#}");
    // Halted across OS processes, -i goes on from that global state (stepping over several
    // nodes is checked in tests/global_predicates.rs).
    let out = ppd_tests::ppd_with_input(
        work.path(),
        &[
            "replay",
            d,
            "--stop",
            "backup/replication: mark ignored | client/main: exit count",
            "-i",
        ],
        b"print client/main\nquit\n",
    );
    let (stdout, stderr) = output_text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("3 nodes, one global state"), "{stdout}");

    let (chain, _) = ppd_ok(
        work.path(),
        &[
            "why",
            d,
            "backup/replication",
            "newer",
            "--at",
            "mark ignored",
        ],
    );
    for step in [
        "newer = false",
        "let newer = version.as_str() > current;",
        r#"data: current = "9""#,
        r#"data: version = "10""#,
        r#"received "put hits 10 10""#,
        "primary/session kvstore::serve",
        r#"let acknowledged = ask(&replica, &format!("put {key} {version} {value}"));"#,
    ] {
        assert!(chain.contains(step), "no `{step}` in:\n{chain}");
    }
}

#[test]
fn datagrams_between_os_processes_pair_with_their_sends_whatever_was_lost_and_interleaved() {
    let work = tempfile::tempdir().unwrap();
    let datagrams = script("datagrams.sh");
    let address_dir = work.path().to_str().unwrap();
    let count = 400;
    let (dir, printed, _) = record(
        work.path(),
        &[
            "sh",
            &datagrams,
            &net_cases(),
            address_dir,
            &count.to_string(),
        ],
    );
    let received = ppd_tests::number_after(&printed, "received ");
    let switches = ppd_tests::number_after(&printed, "sender switched ");
    assert!(received > 0, "{printed}");
    // What the kernel dropped and how the two senders interleaved vary from run to run; the
    // pairing must hold whatever they were.
    eprintln!(
        "{received} of {} datagrams arrived; the sender changed {switches} times",
        2 * count
    );
    let d = dir.to_str().unwrap();
    let (_, replayed) = ppd_ok(work.path(), &["replay", d, "--verify"]);
    assert!(replayed.contains("3 nodes reproduced"), "{replayed}");

    // Every receipt is paired with one send, and no send with two receipts.
    let export = work.path().join("export.json");
    ppd_ok(
        work.path(),
        &[
            "export",
            d,
            "--format",
            "json",
            "-o",
            export.to_str().unwrap(),
        ],
    );
    let json: Value = serde_json::from_slice(&std::fs::read(export).unwrap()).unwrap();
    let kind_of = |pid: &Value, event: &Value| -> String {
        json["events"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| &e["pid"] == pid && &e["event"] == event)
            .map(|e| e["kind"].as_str().unwrap().to_owned())
            .unwrap_or_default()
    };
    let mut senders = std::collections::BTreeSet::new();
    let mut paired = 0;
    for edge in json["edges"].as_array().unwrap() {
        let (from, to) = (&edge["from"], &edge["to"]);
        if kind_of(&to["pid"], &to["event"]) == "net_recv_from" {
            assert_eq!(kind_of(&from["pid"], &from["event"]), "net_send_to");
            assert!(
                senders.insert((from["pid"].to_string(), from["event"].to_string())),
                "a send paired twice: {edge}"
            );
            paired += 1;
        }
    }
    assert_eq!(
        paired, received,
        "every datagram received is paired with its send"
    );

    // Two senders that never talk to each other race for the collector's socket: when its
    // receipts switched between them, the race is reported on that socket.
    let (races, _) = ppd_ok(work.path(), &["races", d, "--json"]);
    let races: Value = serde_json::from_str(&races).unwrap();
    let on_socket: Vec<&Value> = races["races"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["kind"] == "message" && r["object_kind"] == "socket")
        .collect();
    if switches > 0 {
        assert_eq!(on_socket.len(), 1, "{races:#}");
        let mut sides = [
            on_socket[0]["a"]["process"].as_str().unwrap(),
            on_socket[0]["b"]["process"].as_str().unwrap(),
        ];
        sides.sort_unstable();
        assert_eq!(sides, ["alice/main", "bob/main"], "{races:#}");
    }

    // A received value leads to the statement that computed it, in the sender's OS process.
    let (chain, _) = ppd_ok(
        work.path(),
        &[
            "why",
            d,
            "collector/main",
            "%0",
            "--at",
            "collect#1",
            "--depth",
            "8",
        ],
    );
    for step in [
        "a datagram from 127.0.0.1:",
        "net_cases::send_one",
        r#"let text = format!("{name} {k} {value} {:>1000}", "");"#,
    ] {
        assert!(chain.contains(step), "no `{step}` in:\n{chain}");
    }
    assert!(
        chain.contains("alice/main") || chain.contains("bob/main"),
        "{chain}"
    );
}

/// A processor farm across two hosts (`ppd::task::farm_nodes`): the farm node on one, its three
/// worker nodes on the other. Every task completes; the run replays node by node; phase two
/// re-executes a task in the worker node on the other host that computed it.
#[test]
fn a_task_farm_across_two_hosts_completes_replays_and_reruns_a_task_where_it_ran() {
    if !two_hosts_here() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let launcher = script("task-two-hosts.sh");
    let cases = env!("CARGO_BIN_EXE_task_cases");
    let w = work.path().to_str().unwrap();
    let (dir, printed, said) = record(work.path(), &["unshare", "-rn", "sh", &launcher, cases, w]);
    assert!(printed.contains("30 results"), "{printed}\n{said}");
    assert!(said.contains("in 4 OS processes"), "{said}");
    let d = dir.to_str().unwrap();
    let (report, _) = ppd_ok(work.path(), &["analyze", "tasks", d]);
    assert!(report.starts_with("success: 30 tasks complete"), "{report}");
    assert!(!report.contains("never happens"), "{report}");
    let (_, replayed) = ppd_ok(work.path(), &["replay", d, "--verify"]);
    assert!(replayed.contains("4 nodes reproduced"), "{replayed}");
    let (rerun, _) = ppd_ok(work.path(), &["analyze", "tasks", d, "--rerun", "7"]);
    assert!(
        rerun.starts_with("task 7 subtask - (farm): ppd::task::work on worker-"),
        "{rerun}"
    );
    assert!(rerun.contains("result: same as logged: 140"), "{rerun}");
}
