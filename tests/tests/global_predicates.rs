//! Predicates over the processes of several OS processes, halted in replay by the global
//! debugger: the replicated store of `examples/kvstore.rs` (a backup, a primary and a client,
//! three OS processes talking over TCP) is recorded once, and each predicate's halt is checked
//! against a brute force that knows only the recording's events and the edges `ppd export`
//! draws between them (program order, messages, socket bytes, spawns, locks): it searches every
//! candidate event, or every combination of them, for the first global state the predicate's
//! definition asks for.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use ppd_tests::{output_text, ppd};
use serde_json::Value;

/// One recorded event, as the export gives it.
struct Event {
    kind: String,
    text: String,
}

/// The recording as the brute force sees it: every event and every edge between processes.
struct Run {
    /// Each process's full name and its events, in order.
    processes: Vec<(String, Vec<Event>)>,
    /// Edges `(from, to)` between events, as (process index, event index).
    edges: Vec<((usize, usize), (usize, usize))>,
}

impl Run {
    fn load(work: &Path, dir: &Path) -> Run {
        let out = ppd(work, &["export", dir.to_str().unwrap(), "--format", "json"]);
        assert!(out.status.success(), "{}", output_text(&out).1);
        let export: Value = serde_json::from_slice(&out.stdout).unwrap();
        let mut index: HashMap<u64, usize> = HashMap::new();
        let mut processes = Vec::new();
        for (i, p) in export["processes"].as_array().unwrap().iter().enumerate() {
            index.insert(p["pid"].as_u64().unwrap(), i);
            processes.push((p["name"].as_str().unwrap().to_owned(), Vec::new()));
        }
        for e in export["events"].as_array().unwrap() {
            let p = index[&e["pid"].as_u64().unwrap()];
            assert_eq!(e["event"].as_u64().unwrap() as usize, processes[p].1.len());
            processes[p].1.push(Event {
                kind: e["kind"].as_str().unwrap().to_owned(),
                text: e["text"].as_str().unwrap().to_owned(),
            });
        }
        let at = |v: &Value| {
            (
                index[&v["pid"].as_u64().unwrap()],
                v["event"].as_u64().unwrap() as usize,
            )
        };
        let edges = export["edges"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| (at(&e["from"]), at(&e["to"])))
            .collect();
        Run { processes, edges }
    }

    fn process(&self, name: &str) -> usize {
        self.processes
            .iter()
            .position(|(n, _)| n == name)
            .unwrap_or_else(|| panic!("no process {name}"))
    }

    /// The events of `process` a simple predicate without condition matches.
    fn matching(&self, process: &str, event: &str) -> Vec<(usize, usize)> {
        let p = self.process(process);
        let (verb, what) = event.split_once(' ').unwrap();
        self.processes[p]
            .1
            .iter()
            .enumerate()
            .filter(|(_, e)| match verb {
                "enter" => {
                    e.kind == "eblock_enter"
                        && e.text.starts_with(&format!("enter kvstore::{what} "))
                }
                "exit" => e.kind == "eblock_exit" && e.text == format!("exit kvstore::{what}"),
                "mark" => e.kind == "mark" && e.text.starts_with(&format!("mark {what} ")),
                _ => panic!("no brute force for {event}"),
            })
            .map(|(i, _)| (p, i))
            .collect()
    }

    /// The causal past of event `e`: for each process, how many of its events precede or are
    /// `e`, by a search backwards along program order and the edges.
    fn past(&self, e: (usize, usize)) -> Vec<u64> {
        let mut past = vec![0u64; self.processes.len()];
        let mut stack = vec![e];
        while let Some((p, i)) = stack.pop() {
            if past[p] > i as u64 {
                continue;
            }
            // Every event of p up to i is in the past; their incoming edges are searched.
            let from = past[p] as usize;
            past[p] = i as u64 + 1;
            for k in from..=i {
                for &(a, b) in &self.edges {
                    if b == (p, k) {
                        stack.push(a);
                    }
                }
            }
        }
        past
    }
}

fn total(cut: &[u64]) -> u64 {
    cut.iter().sum()
}

/// The events of each process in the global state `ppd replay --stop PRED --json` halted in,
/// in `run`'s order of processes.
fn halt(work: &Path, dir: &Path, run: &Run, predicate: &str) -> Vec<u64> {
    let out = ppd(
        work,
        &[
            "replay",
            dir.to_str().unwrap(),
            "--stop",
            predicate,
            "--json",
        ],
    );
    let (stdout, stderr) = output_text(&out);
    assert!(out.status.success(), "{predicate}:\n{stdout}\n{stderr}");
    let halted: Value = serde_json::from_str(&stdout).unwrap();
    let mut cut = vec![0; run.processes.len()];
    for node in halted["nodes"].as_array().unwrap() {
        for p in node["state"]["processes"].as_array().unwrap() {
            let name = format!(
                "{}/{}",
                node["node"].as_str().unwrap(),
                p["name"].as_str().unwrap()
            );
            cut[run.process(&name)] = p["events"].as_u64().unwrap();
        }
    }
    cut
}

fn record_kvstore(work: &Path) -> PathBuf {
    let dir = work.join("rec");
    let out = ppd_tests::record_kvstore(work, &dir, &[]);
    let (printed, said) = output_text(&out);
    assert!(said.contains("in 3 OS processes"), "{printed}\n{said}");
    dir
}

#[test]
fn predicates_over_three_os_processes_halt_where_a_brute_force_finds_their_first_state() {
    let work = tempfile::tempdir().unwrap();
    let dir = record_kvstore(work.path());
    let run = Run::load(work.path(), &dir);
    let (w, d) = (work.path(), dir.as_path());

    // Disjunctive: the least causal past of any matching event, the fewest events of all.
    let pred = "backup/replication: mark ignored | client/main: exit count";
    let candidates: Vec<_> = [
        run.matching("backup/replication", "mark ignored"),
        run.matching("client/main", "exit count"),
    ]
    .concat();
    assert!(
        candidates.len() > 6,
        "{pred}: too few events to choose from"
    );
    let least = candidates
        .iter()
        .map(|&e| run.past(e))
        .min_by_key(|c| total(c));
    assert_eq!(Some(halt(w, d, &run, pred)), least, "{pred}");

    // Linked: the first `exit count` after some `mark ignored` by happened-before (the
    // client hears of the ignored put only through the primary's answer).
    let pred = "backup/replication: mark ignored -> client/main: exit count";
    let marks = run.matching("backup/replication", "mark ignored");
    assert!(!marks.is_empty(), "the backup ignored no update");
    let least = run
        .matching("client/main", "exit count")
        .into_iter()
        .map(|e| run.past(e))
        .filter(|past| marks.iter().any(|&(p, i)| past[p] > i as u64))
        .min_by_key(|c| total(c));
    let cut = halt(w, d, &run, pred);
    assert_eq!(Some(cut.clone()), least, "{pred}");
    // And it is not simply the first exit of count: the chain made it wait.
    let first_exit = run.past(run.matching("client/main", "exit count")[0]);
    assert!(total(&cut) > total(&first_exit), "{pred}: {cut:?}");

    // Conjunctive: every combination of one event per process whose causal pasts do not
    // pass each other's event; the least join of such a combination.
    for pred in [
        "primary/session: enter serve & backup/replication: enter replicate",
        "client/main: enter count & primary/session: enter serve & backup/replication: enter replicate",
        "client/main: exit count & backup/replication: mark ignored",
    ] {
        let sets: Vec<Vec<(usize, usize)>> = pred
            .split(" & ")
            .map(|simple| {
                let (process, event) = simple.split_once(": ").unwrap();
                run.matching(process, event)
            })
            .collect();
        let mut least: Option<Vec<u64>> = None;
        let mut combination = vec![0usize; sets.len()];
        'all: loop {
            let events: Vec<(usize, usize)> = combination
                .iter()
                .enumerate()
                .map(|(s, &k)| sets[s][k])
                .collect();
            let pasts: Vec<Vec<u64>> = events.iter().map(|&e| run.past(e)).collect();
            let consistent = events
                .iter()
                .all(|&(p, i)| pasts.iter().all(|past| past[p] <= i as u64 + 1));
            if consistent {
                let join: Vec<u64> = (0..run.processes.len())
                    .map(|q| pasts.iter().map(|past| past[q]).max().unwrap())
                    .collect();
                if least.as_ref().is_none_or(|l| total(&join) < total(l)) {
                    least = Some(join);
                }
            }
            for s in 0..sets.len() {
                combination[s] += 1;
                if combination[s] < sets[s].len() {
                    continue 'all;
                }
                combination[s] = 0;
            }
            break;
        }
        match least {
            Some(least) => assert_eq!(halt(w, d, &run, pred), least, "{pred}"),
            None => {
                // The client's exit of count follows the backup's mark through the primary's
                // acknowledgement: the two never end a global state together.
                let out = ppd(w, &["replay", d.to_str().unwrap(), "--stop", pred]);
                let said = output_text(&out).1;
                assert!(!out.status.success(), "{pred}: {said}");
                assert!(said.contains("never holds in this run"), "{pred}: {said}");
            }
        }
    }
}

#[test]
fn a_stable_predicate_over_two_os_processes_halts_with_both_inside_their_eblocks() {
    let work = tempfile::tempdir().unwrap();
    let dir = record_kvstore(work.path());
    let out = ppd(
        work.path(),
        &[
            "replay",
            dir.to_str().unwrap(),
            "--stop",
            "client/main: enter count == primary/session: enter serve",
            "--json",
        ],
    );
    let (stdout, stderr) = output_text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let halted: Value = serde_json::from_str(&stdout).unwrap();
    let eblock = |node: &str, name: &str| -> Value {
        halted["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|n| n["node"] == node)
            .flat_map(|n| n["state"]["processes"].as_array().unwrap().clone())
            .find(|p| p["name"] == name)
            .map(|p| p["eblock"].clone())
            .unwrap_or_else(|| panic!("no {node}/{name} in {halted:#}"))
    };
    assert_eq!(eblock("client", "main"), "kvstore::count", "{halted:#}");
    assert_eq!(eblock("primary", "session"), "kvstore::serve", "{halted:#}");
    let holds = halted["holds"].as_array().unwrap();
    assert_eq!(holds.len(), 2, "{halted:#}");
}

/// The states `ppd replay --trace PRED --print backup/replication.ignored` printed: each
/// one's cut, in `run`'s order of processes, and its printed value.
fn traced(work: &Path, dir: &Path, run: &Run, pred: &str) -> Vec<(Vec<u64>, Value)> {
    let lines = ppd_tests::replay_trace(work, dir, pred, "backup/replication.ignored");
    lines
        .as_array()
        .unwrap()
        .iter()
        .map(|line| {
            let mut cut = vec![0; run.processes.len()];
            for pair in line["cut"].as_array().unwrap() {
                cut[run.process(pair[0].as_str().unwrap())] = pair[1].as_u64().unwrap();
            }
            (cut, line["values"][0][1].clone())
        })
        .collect()
}

#[test]
fn a_conjunctions_trace_over_two_os_processes_prints_the_least_state_from_each_part() {
    let work = tempfile::tempdir().unwrap();
    let dir = record_kvstore(work.path());
    let run = Run::load(work.path(), &dir);
    let pred = "primary/session: enter serve & backup/replication: enter replicate";
    let cuts: Vec<Vec<u64>> = traced(work.path(), &dir, &run, pred)
        .into_iter()
        .map(|(c, _)| c)
        .collect();
    assert!(!cuts.is_empty(), "the conjunction never held");
    // Brute force: a pair of events, one of each part, is a satisfying state when the least
    // cut holding both has each at its event (neither's past holds a later event of the
    // other's process). From each part's event, the least satisfying state at it or later.
    let (a, b) = (
        run.matching("primary/session", "enter serve"),
        run.matching("backup/replication", "enter replicate"),
    );
    let mut satisfying = Vec::new();
    for &ea in &a {
        for &eb in &b {
            let cut: Vec<u64> = run
                .past(ea)
                .iter()
                .zip(run.past(eb))
                .map(|(x, y)| (*x).max(y))
                .collect();
            if cut[ea.0] == ea.1 as u64 + 1 && cut[eb.0] == eb.1 as u64 + 1 {
                satisfying.push(cut);
            }
        }
    }
    let mut expected: Vec<Vec<u64>> = Vec::new();
    for &(p, i) in a.iter().chain(&b) {
        let least = satisfying
            .iter()
            .filter(|cut| cut[p] > i as u64)
            .min_by_key(|cut| total(cut));
        if let Some(least) = least
            && !expected.contains(least)
        {
            expected.push(least.clone());
        }
    }
    let mut sorted = cuts.clone();
    sorted.sort_by_key(|c| total(c));
    assert_eq!(cuts, sorted, "not in the order of their sizes");
    let mut got = cuts;
    got.sort();
    expected.sort();
    assert_eq!(got, expected);
}

#[test]
fn a_trace_over_three_os_processes_prints_the_least_state_of_every_event_that_satisfies() {
    let work = tempfile::tempdir().unwrap();
    let dir = record_kvstore(work.path());
    let run = Run::load(work.path(), &dir);
    let pred = "backup/replication: mark ignored | client/main: exit count";
    let traced = traced(work.path(), &dir, &run, pred);
    // One state per satisfying event, its causal past, fewest events first.
    let mut expected: Vec<Vec<u64>> = [
        run.matching("backup/replication", "mark ignored"),
        run.matching("client/main", "exit count"),
    ]
    .concat()
    .into_iter()
    .map(|e| run.past(e))
    .collect();
    expected.sort_by_key(|c| total(c));
    let cuts: Vec<Vec<u64>> = traced.iter().map(|(c, _)| c.clone()).collect();
    let mut sorted = cuts.clone();
    sorted.sort_by_key(|c| total(c));
    assert_eq!(cuts, sorted, "not in the order of their sizes");
    let mut got = cuts;
    got.sort();
    expected.sort();
    assert_eq!(got, expected);
    // The backup's last mark is printed where it has marked: the first is the put of 10.
    let marked: Vec<&Value> = traced
        .iter()
        .map(|(_, v)| v)
        .filter(|v| !v.is_null())
        .collect();
    assert!(!marked.is_empty());
    assert!(
        marked
            .iter()
            .all(|v| v.as_str().unwrap().starts_with("put hits 1")),
        "{marked:?}"
    );
}

#[test]
fn a_print_item_its_process_never_logs_is_refused_across_nodes_as_in_one() {
    let work = tempfile::tempdir().unwrap();
    let dir = record_kvstore(work.path());
    let out = ppd(
        work.path(),
        &[
            "replay",
            dir.to_str().unwrap(),
            "--trace",
            "primary/session: enter serve | backup/replication: enter replicate",
            "--print",
            "backup/replication.ignord",
        ],
    );
    let (stdout, stderr) = output_text(&out);
    assert_eq!(out.status.code(), Some(2), "{stdout}\n{stderr}");
    assert!(stdout.is_empty(), "{stdout}");
    assert!(
        stderr.contains("bad --print item `backup/replication.ignord`")
            && stderr.contains("did you mean `ignored`?"),
        "{stderr}"
    );
}

/// `ppd replay DIR -i` with `commands` typed: what it printed.
fn interactive(work: &Path, dir: &Path, commands: &str) -> String {
    let out = ppd_tests::ppd_with_input(
        work,
        &["replay", dir.to_str().unwrap(), "-i"],
        commands.as_bytes(),
    );
    let (stdout, stderr) = output_text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    stdout
}

/// The global states each `print json` of an interactive session showed, in order, each in
/// `run`'s order of processes.
fn printed_cuts(stdout: &str, run: &Run) -> Vec<Vec<u64>> {
    stdout
        .match_indices("[\n  {")
        .map(|(start, _)| {
            let mut stream =
                serde_json::Deserializer::from_str(&stdout[start..]).into_iter::<Value>();
            let states = stream.next().unwrap().unwrap();
            let mut cut = vec![0; run.processes.len()];
            for node in states.as_array().unwrap() {
                for p in node["state"]["processes"].as_array().unwrap() {
                    let name = format!(
                        "{}/{}",
                        node["node"].as_str().unwrap(),
                        p["name"].as_str().unwrap()
                    );
                    cut[run.process(&name)] = p["events"].as_u64().unwrap();
                }
            }
            cut
        })
        .collect()
}

#[test]
fn stepping_over_three_os_processes_keeps_every_node_at_the_least_consistent_state() {
    let work = tempfile::tempdir().unwrap();
    let dir = record_kvstore(work.path());
    let run = Run::load(work.path(), &dir);
    let client = run.process("client/main");
    let events = run.processes[client].1.len();
    // A state of the client alone: every other node goes as far as the client's past needs
    // (the primary's answers it read, the backup's acknowledgements behind them).
    for k in [events / 3, events / 2, events] {
        let stdout = interactive(
            work.path(),
            &dir,
            &format!("goto client/main={k}\nprint json\nquit\n"),
        );
        assert_eq!(
            printed_cuts(&stdout, &run),
            [run.past((client, k - 1))],
            "goto client/main={k}:\n{stdout}"
        );
    }
    // A step of the primary's session from there: the least state holding both.
    let k = events / 2;
    let stdout = interactive(
        work.path(),
        &dir,
        &format!(
            "goto client/main={k}\nstep primary/session\nprint json\nback\nprint json\nquit\n"
        ),
    );
    let before = run.past((client, k - 1));
    let session = run.process("primary/session");
    let stepped: Vec<u64> = before
        .iter()
        .zip(run.past((session, before[session] as usize)))
        .map(|(a, b)| (*a).max(b))
        .collect();
    // `back` returns to the state before the step.
    assert_eq!(printed_cuts(&stdout, &run), [stepped, before], "{stdout}");
}

#[test]
fn gdb_at_a_global_state_of_three_os_processes_attaches_to_every_replayed_node() {
    if !ppd_tests::have_gdb("attaching gdb to every replayed node") {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let dir = record_kvstore(work.path());
    let run = Run::load(work.path(), &dir);
    let half = run.processes[run.process("client/main")].1.len() / 2;
    let stdout = interactive(
        work.path(),
        &dir,
        &format!("goto client/main={half}\ngdb -- -batch -ex 'info inferiors'\nquit\n"),
    );
    assert_eq!(ppd_tests::gdb_inferiors(&stdout), 3, "{stdout}");
}

#[test]
fn replay_gdb_dry_run_at_a_halt_over_three_os_processes_prints_one_gdb_for_every_node() {
    let work = tempfile::tempdir().unwrap();
    let dir = record_kvstore(work.path());
    let out = ppd(
        work.path(),
        &[
            "replay",
            dir.to_str().unwrap(),
            "--stop",
            "backup/replication: mark ignored",
            "--gdb",
            "--dry-run",
        ],
    );
    let (stdout, stderr) = output_text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let command = stdout
        .lines()
        .find(|l| l.starts_with("gdb -q -p "))
        .unwrap_or_else(|| panic!("no gdb command in {stdout}"));
    // The first node with -p, the two others as inferiors of the same gdb.
    assert_eq!(command.matches("'attach ").count(), 2, "{command}");
    assert!(stdout.contains("(ppd) quit"), "{stdout}");
}
