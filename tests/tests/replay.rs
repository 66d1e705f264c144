//! Replay: every run reproduces exactly, breakpoints halt at the global states the papers
//! define (checked against a brute-force enumeration of the lattice), divergences and stuck
//! replays are reported instead of hanging.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use ppd_formats::Event;
use ppd_formats::value;
use ppd_tests::lattice::Lattice;
use ppd_tests::{ppd, record_example, record_program};
use proptest::prelude::*;

fn random_program() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_random_program"))
}

fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn replay(work: &Path, dir: &Path, args: &[&str]) -> Output {
    let mut all = vec!["replay", dir.to_str().unwrap()];
    all.extend_from_slice(args);
    ppd(work, &all)
}

/// `ppd replay --stop PRED --json`: the halted cut, or the failure message.
fn halt_cut(work: &Path, dir: &Path, pred: &str, first: bool) -> Result<Vec<u64>, String> {
    let mut args = vec!["--json", "--stop", pred];
    if first {
        args.push("--first");
    }
    let out = replay(work, dir, &args);
    let (stdout, stderr) = text(&out);
    if !out.status.success() {
        return Err(stderr);
    }
    let state: serde_json::Value = serde_json::from_str(&stdout).expect("JSON state");
    let processes = state["processes"].as_array().expect("processes");
    let n = processes
        .iter()
        .map(|p| p["id"].as_u64().unwrap() as usize + 1)
        .max()
        .unwrap_or(0);
    let mut cut = vec![0; n];
    for p in processes {
        cut[p["id"].as_u64().unwrap() as usize] = p["events"].as_u64().unwrap();
    }
    Ok(cut)
}

// ---------------------------------------------------------------------------------------------
// Every example replays

#[test]
fn every_example_replays_with_verify() {
    let work = tempfile::tempdir().unwrap();
    for example in [
        "bank",
        "token_ring",
        "pipeline",
        "farm",
        "racy_counter",
        "counter",
    ] {
        let dir = work.path().join(example);
        let recorded = record_example(work.path(), &dir, example, &["--payloads"]);
        let out = replay(work.path(), &dir, &["--verify", "--json"]);
        let (stdout, stderr) = text(&out);
        assert!(out.status.success(), "{example}: {stderr}");
        let summary: serde_json::Value = serde_json::from_str(&stdout).unwrap();
        assert_eq!(summary["outcome"], "reproduced", "{example}: {summary:#}");
        assert!(
            summary["events"].as_u64().unwrap() > 10,
            "{example}: {summary:#}"
        );
        assert_eq!(
            summary["exit_code"], summary["recorded_exit_code"],
            "{example}: the replay must end as the recording did"
        );
        // The program's own output is reproduced too (it went to stderr with --json).
        let recorded_out = String::from_utf8_lossy(&recorded.stdout);
        for line in recorded_out.lines() {
            assert!(
                stderr.contains(line),
                "{example}: replay did not print {line:?}"
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Property: random programs, recorded several times, replay to the same observations

fn record_and_check(work: &Path, seed: u64, workers: u64, ops: u64, round: usize) {
    let dir = work.join(format!("rp-{seed}-{round}"));
    let args = [seed.to_string(), workers.to_string(), ops.to_string()];
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let recorded = record_program(work, &dir, &random_program(), &args, &["--payloads"]);
    assert!(recorded.status.success(), "{}", text(&recorded).1);
    let out = replay(work, &dir, &["--verify"]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "seed {seed}: {stderr}");
    // Each worker's digest of its observations is printed at the end.
    assert_eq!(
        stdout,
        String::from_utf8_lossy(&recorded.stdout),
        "seed {seed}: the replay's observations differ"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 6, ..ProptestConfig::default() })]

    #[test]
    fn random_programs_replay_to_their_recorded_observations(
        seed in any::<u64>(), workers in 2u64..5, ops in 4u64..30,
    ) {
        let work = tempfile::tempdir().unwrap();
        for round in 0..3 {
            record_and_check(work.path(), seed, workers, ops, round);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Breakpoints against brute force

/// A simple predicate that holds right after `event` of process `name`.
fn predicate_for(name: &str, event: &Event) -> Option<String> {
    match event {
        Event::Mark { label, value, .. } => {
            let v = value::decode(value).ok()?;
            Some(format!(
                "{name}: mark {label} if value == {}",
                value::show(&v)
            ))
        }
        _ => None,
    }
}

fn holds(lattice: &Lattice, process: usize, label_value: &(String, String), cut: &[u64]) -> bool {
    let Some(k) = cut[process].checked_sub(1) else {
        return false;
    };
    match &lattice.events[process][k as usize] {
        Event::Mark { label, value, .. } => {
            **label == *label_value.0
                && value::decode(value)
                    .map(|v| value::show(&v))
                    .ok()
                    .as_deref()
                    == Some(label_value.1.as_str())
        }
        _ => false,
    }
}

/// Records seed `program` of the random program (3 workers, 4 operations each) into
/// `<work>/<name><program>`; the directory and its logs loaded as a lattice.
fn record_small_random(work: &Path, name: &str, program: u64) -> (PathBuf, Lattice) {
    let dir = work.join(format!("{name}{program}"));
    let out = record_program(
        work,
        &dir,
        &random_program(),
        &[&program.to_string(), "3", "4"],
        &[],
    );
    assert!(out.status.success(), "{}", text(&out).1);
    let lattice = Lattice::load(&dir);
    (dir, lattice)
}

#[test]
fn halts_are_the_first_states_a_brute_force_search_finds() {
    let work = tempfile::tempdir().unwrap();
    let mut rng = fastrand::Rng::with_seed(0x5eed);
    let mut checked = 0;
    for program in 0..5u64 {
        let (dir, lattice) = record_small_random(work.path(), "bf", program);
        let cuts = lattice.consistent_cuts();
        assert!(cuts.len() > 10);
        // Marks, by process: (process, label, value shown).
        let marks: Vec<(usize, String, String)> = lattice
            .events
            .iter()
            .enumerate()
            .skip(1)
            .flat_map(|(i, log)| {
                log.iter().filter_map(move |e| match e {
                    Event::Mark { label, value, .. } => Some((
                        i,
                        label.to_string(),
                        value::show(&value::decode(value).unwrap()),
                    )),
                    _ => None,
                })
            })
            .collect();
        for trial in 0..6 {
            // Components on distinct processes.
            let mut chosen: Vec<&(usize, String, String)> = Vec::new();
            let wanted = 2 + trial % 2;
            for _ in 0..20 {
                let m = &marks[rng.usize(..marks.len())];
                if chosen.iter().all(|c| c.0 != m.0) {
                    chosen.push(m);
                }
                if chosen.len() == wanted {
                    break;
                }
            }
            let texts: Vec<String> = chosen
                .iter()
                .map(|(i, label, v)| {
                    let event = lattice.events[*i]
                        .iter()
                        .find(|e| matches!(e, Event::Mark { label: l, value, .. } if **l == **label && value::show(&value::decode(value).unwrap()) == *v))
                        .unwrap();
                    predicate_for(&format!("w{}", i - 1), event).unwrap()
                })
                .collect();
            let components: Vec<(usize, (String, String))> = chosen
                .iter()
                .map(|(i, l, v)| (*i, (l.clone(), v.clone())))
                .collect();

            // Conjunctive: Inf(P) is the least consistent cut where every component holds.
            let conj: Vec<Vec<u64>> = cuts
                .iter()
                .filter(|c| components.iter().all(|(i, lv)| holds(&lattice, *i, lv, c)))
                .cloned()
                .collect();
            let pred = texts.join(" & ");
            match halt_cut(work.path(), &dir, &pred, false) {
                Ok(cut) => {
                    assert!(
                        lattice.consistent(&cut),
                        "{pred}: inconsistent halt {cut:?}"
                    );
                    let inf = Lattice::minimal(&conj);
                    assert_eq!(
                        inf.len(),
                        1,
                        "{pred}: the satisfying states have one least element"
                    );
                    assert_eq!(
                        cut, inf[0],
                        "{pred}: halted at {cut:?}, Inf(P) is {:?}",
                        inf[0]
                    );
                }
                Err(message) => {
                    assert!(
                        conj.is_empty(),
                        "{pred}: no halt ({message}) but {} states satisfy it",
                        conj.len()
                    );
                    assert!(message.contains("never holds"), "{message}");
                }
            }

            // Disjunctive: a state of G(P) at once; with --first, a state of Inf(P).
            let disj: Vec<Vec<u64>> = cuts
                .iter()
                .filter(|c| components.iter().any(|(i, lv)| holds(&lattice, *i, lv, c)))
                .cloned()
                .collect();
            let pred = texts.join(" | ");
            let cut = halt_cut(work.path(), &dir, &pred, false)
                .expect("a disjunction of marks that occurred holds");
            assert!(
                lattice.consistent(&cut),
                "{pred}: inconsistent halt {cut:?}"
            );
            assert!(
                disj.contains(&cut),
                "{pred}: halted at {cut:?}, which does not satisfy it"
            );
            let cut = halt_cut(work.path(), &dir, &pred, true).expect("--first halts");
            assert!(
                Lattice::minimal(&disj).contains(&cut),
                "{pred} --first: halted at {cut:?}, not a first satisfying state"
            );
            checked += 1;
        }
    }
    assert_eq!(checked, 30);
}

// ---------------------------------------------------------------------------------------------
// The examples' bugs, caught by breakpoints

/// Records `example` until a run shows its intermittent bug (exit code 1).
fn record_until_buggy(work: &Path, example: &str) -> PathBuf {
    for attempt in 0..40 {
        let dir = work.join(format!("{example}-{attempt}"));
        let out = record_example(work, &dir, example, &[]);
        if out.status.code() == Some(1) {
            return dir;
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
    panic!("{example} never showed its bug in 40 recorded runs");
}

#[test]
fn bank_halts_where_a_balance_is_negative() {
    let work = tempfile::tempdir().unwrap();
    let dir = record_until_buggy(work.path(), "bank");
    let out = replay(
        work.path(),
        &dir,
        &["--json", "--stop", "teller: mark negative if value < 0"],
    );
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    let state: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let teller = state["processes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "teller")
        .unwrap();
    assert!(
        teller["values"]["negative"].as_i64().unwrap() < 0,
        "{teller:#}"
    );
    assert_eq!(teller["kind"], "mark");
    assert!(teller["file"].as_str().unwrap().ends_with("bank.rs"));
    assert_eq!(teller["holds"][0], "teller: mark negative if value < 0");
    // The halt is the least consistent cut containing the event: every process is exactly at
    // the teller's vector clock.
    let clock = teller["vclock"].as_array().unwrap();
    for p in state["processes"].as_array().unwrap() {
        let id = p["id"].as_u64().unwrap() as usize;
        assert_eq!(
            p["events"], clock[id],
            "{} is not at the teller's clock",
            p["name"]
        );
    }
    assert!(
        Lattice::load(&dir).consistent(
            &clock
                .iter()
                .map(|c| c.as_u64().unwrap())
                .collect::<Vec<_>>()
        )
    );
    assert!(
        dir.join("cache/halt.json").exists(),
        "the cut is left for ppd graph"
    );
}

/// The values of `process`'s marks `label`, shown, with the number of events up to and
/// including each.
fn marks(lattice: &Lattice, process: usize, label: &str) -> Vec<(u64, String)> {
    lattice.events[process]
        .iter()
        .enumerate()
        .filter_map(|(k, e)| match e {
            Event::Mark {
                label: l, value, ..
            } if **l == *label => Some((
                k as u64 + 1,
                value::show(&value::decode(value).expect("a logged value")),
            )),
            _ => None,
        })
        .collect()
}

/// Whether a stable `mark LABEL if <test>` holds for a process that has executed `events`
/// events: its last mark `label` so far passes the test (`==`'s meaning, Spezialetti & Gupta).
fn stable_holds(marks: &[(u64, String)], events: u64, test: &dyn Fn(&str) -> bool) -> bool {
    marks
        .iter()
        .rev()
        .find(|(k, _)| *k <= events)
        .is_some_and(|(_, v)| test(v))
}

/// The least consistent cuts in which both processes' stable predicates hold, by brute force
/// over the two processes' positions.
fn simultaneous_states(
    lattice: &Lattice,
    clocks: &[Vec<Vec<u64>>],
    a: (usize, &dyn Fn(u64) -> bool),
    b: (usize, &dyn Fn(u64) -> bool),
) -> Vec<Vec<u64>> {
    let positions = |(p, holds): (usize, &dyn Fn(u64) -> bool)| -> Vec<u64> {
        (0..=lattice.events[p].len() as u64)
            .filter(|&c| holds(c))
            .collect()
    };
    let (pa, pb) = (positions(a), positions(b));
    pa.iter()
        .flat_map(|&ca| {
            pb.iter()
                .filter_map(move |&cb| lattice.least_cut_through(clocks, &[(a.0, ca), (b.0, cb)]))
        })
        .collect()
}

#[test]
fn token_ring_halts_where_two_nodes_hold_the_token() {
    let work = tempfile::tempdir().unwrap();
    let dir = record_until_buggy(work.path(), "token_ring");
    let lattice = Lattice::load(&dir);
    let clocks = lattice.clocks();
    let positive = |v: &str| v.parse::<u64>().is_ok_and(|v| v > 0);
    // Every pair either halts in a state where the logged marks show both holding, or is
    // reported as never holding; the lattice decides which.
    let mut halted = Vec::new();
    for a in 0..4 {
        for b in a + 1..4 {
            let (pa, pb) = (
                lattice.process(&format!("node-{a}")),
                lattice.process(&format!("node-{b}")),
            );
            let (ma, mb) = (
                marks(&lattice, pa, "holding"),
                marks(&lattice, pb, "holding"),
            );
            let holds_a = |c: u64| stable_holds(&ma, c, &positive);
            let holds_b = |c: u64| stable_holds(&mb, c, &positive);
            let states = simultaneous_states(&lattice, &clocks, (pa, &holds_a), (pb, &holds_b));
            let pred = format!(
                "node-{a}: mark holding if value > 0 == node-{b}: mark holding if value > 0"
            );
            match halt_cut(work.path(), &dir, &pred, false) {
                Ok(cut) => {
                    assert!(
                        lattice.consistent(&cut),
                        "{pred}: inconsistent halt {cut:?}"
                    );
                    assert!(
                        holds_a(cut[pa]) && holds_b(cut[pb]),
                        "{pred}: halted at {cut:?}, where the logs do not show both holding"
                    );
                    halted.push(pred);
                }
                Err(message) => {
                    assert!(
                        message.contains("never holds"),
                        "{pred}: neither a halt nor 'never holds': {message}"
                    );
                    assert!(
                        states.is_empty(),
                        "{pred}: reported as never holding, but the logs show both holding \
                         at {:?}",
                        states[0]
                    );
                }
            }
        }
    }
    // The run showed its bug (exit code 1): two nodes were inside at once.
    assert!(
        !halted.is_empty(),
        "no pair of nodes was found holding the token at once"
    );
}

/// A mark of a process: (process, label, value shown).
type MarkOf = (usize, String, String);

/// Pairs of marks of distinct workers of a recorded random program, for the linked and
/// simultaneous tests: up to `each` pairs for which the oracle `holds` says the predicate holds
/// somewhere, and up to `each` for which it says it never does, drawn at random, so that both
/// answers are checked against the replay.
fn mark_pairs<T>(
    lattice: &Lattice,
    rng: &mut fastrand::Rng,
    each: usize,
    holds: impl Fn(&MarkOf, &MarkOf) -> Option<T>,
) -> Vec<(MarkOf, MarkOf, Option<T>)> {
    let all: Vec<MarkOf> = (1..lattice.events.len())
        .flat_map(|i| {
            ["got", "tried", "saw", "loaded"]
                .into_iter()
                .flat_map(move |label| {
                    marks(lattice, i, label)
                        .into_iter()
                        .map(move |(_, v)| (i, label.to_string(), v))
                })
        })
        .collect();
    let (mut yes, mut no) = (Vec::new(), Vec::new());
    for _ in 0..400 {
        let (x, y) = (&all[rng.usize(..all.len())], &all[rng.usize(..all.len())]);
        if x.0 == y.0 {
            continue;
        }
        match holds(x, y) {
            Some(t) if yes.len() < each => yes.push((x.clone(), y.clone(), Some(t))),
            None if no.len() < each => no.push((x.clone(), y.clone(), None)),
            _ => {}
        }
        if yes.len() == each && no.len() == each {
            break;
        }
    }
    yes.extend(no);
    yes
}

fn mark_predicate(lattice: &Lattice, (i, label, value): &MarkOf) -> String {
    format!("{}: mark {label} if value == {value}", lattice.names[*i])
}

/// Random programs a predicate test records at most.
const MAX_PROGRAMS: u64 = 24;

/// Whether a predicate test has recorded enough random programs: at least four, and both
/// outcomes (a halt, and "never holds") seen. Which outcome a pair gives depends on the
/// interleaving each recording caught, so a run on an idle machine may need more programs
/// than one on a busy one to meet both.
fn enough_programs(recorded: u64, halts: u32, never: u32) -> bool {
    recorded >= 4 && halts > 0 && never > 0
}

#[test]
fn linked_predicates_halt_at_the_first_event_after_the_previous_stage() {
    // Miller & Choi §3.4: `A -> B` holds at an event satisfying B that A happened before; the
    // replay halts right after the first such event of B's process.
    let work = tempfile::tempdir().unwrap();
    let mut rng = fastrand::Rng::with_seed(0x11ced);
    let (mut halts, mut never) = (0, 0);
    for program in 0..MAX_PROGRAMS {
        if enough_programs(program, halts, never) {
            break;
        }
        let (dir, lattice) = record_small_random(work.path(), "linked", program);
        let clocks = lattice.clocks();
        let is = |e: &Event, (_, l, v): &MarkOf| {
            matches!(e, Event::Mark { label, value, .. }
                if **label == **l && value::show(&value::decode(value).unwrap()) == *v)
        };
        // The first event of `then`'s process matching it with an event matching `first` in
        // its causal past.
        let first_after = |first: &MarkOf, then: &MarkOf| {
            let firsts: Vec<usize> = (0..lattice.events[first.0].len())
                .filter(|&k| is(&lattice.events[first.0][k], first))
                .collect();
            (0..lattice.events[then.0].len()).find(|&k| {
                is(&lattice.events[then.0][k], then)
                    && firsts
                        .iter()
                        .any(|&f| (f as u64) < clocks[then.0][k][first.0])
            })
        };
        for (first, then, expected) in mark_pairs(&lattice, &mut rng, 3, first_after) {
            let pred = format!(
                "{} -> {}",
                mark_predicate(&lattice, &first),
                mark_predicate(&lattice, &then)
            );
            match (halt_cut(work.path(), &dir, &pred, false), expected) {
                (Ok(cut), Some(k)) => {
                    assert_eq!(
                        cut[then.0],
                        k as u64 + 1,
                        "{pred}: halted at {cut:?}, not right after event {k}"
                    );
                    assert!(lattice.consistent(&cut), "{pred}: inconsistent {cut:?}");
                    assert!(
                        cut.iter().zip(&clocks[then.0][k]).all(|(c, v)| c >= v),
                        "{pred}: {cut:?} does not contain the event's past"
                    );
                    halts += 1;
                }
                (Err(message), None) => {
                    assert!(message.contains("never holds"), "{pred}: {message}");
                    never += 1;
                }
                (Ok(cut), None) => {
                    panic!("{pred}: halted at {cut:?}, but no such event follows the first")
                }
                (Err(message), Some(k)) => {
                    panic!("{pred}: no halt ({message}), but event {k} satisfies it")
                }
            }
        }
    }
    assert!(
        halts > 0 && never > 0,
        "both outcomes checked: {halts} halts, {never} never"
    );
}

#[test]
fn simultaneous_predicates_halt_only_where_both_states_hold() {
    // Spezialetti & Gupta: `A == B` holds in a consistent state where both stable states
    // hold; where none exists, the replay says the predicate never holds.
    let work = tempfile::tempdir().unwrap();
    let mut rng = fastrand::Rng::with_seed(0x5a3e);
    let (mut halts, mut never) = (0, 0);
    for program in 0..MAX_PROGRAMS {
        if enough_programs(program, halts, never) {
            break;
        }
        let (dir, lattice) = record_small_random(work.path(), "simultaneous", program);
        let clocks = lattice.clocks();
        // The least consistent states where both marks' stable predicates hold.
        let both_hold = |a: &MarkOf, b: &MarkOf| {
            let (ma, mb) = (marks(&lattice, a.0, &a.1), marks(&lattice, b.0, &b.1));
            let holds_a = |c: u64| stable_holds(&ma, c, &|v| v == a.2);
            let holds_b = |c: u64| stable_holds(&mb, c, &|v| v == b.2);
            let states = simultaneous_states(&lattice, &clocks, (a.0, &holds_a), (b.0, &holds_b));
            (!states.is_empty()).then_some(states)
        };
        for (a, b, states) in mark_pairs(&lattice, &mut rng, 3, both_hold) {
            let pred = format!(
                "{} == {}",
                mark_predicate(&lattice, &a),
                mark_predicate(&lattice, &b)
            );
            let (ma, mb) = (marks(&lattice, a.0, &a.1), marks(&lattice, b.0, &b.1));
            let holds_a = |c: u64| stable_holds(&ma, c, &|v| v == a.2);
            let holds_b = |c: u64| stable_holds(&mb, c, &|v| v == b.2);
            match halt_cut(work.path(), &dir, &pred, false) {
                Ok(cut) => {
                    assert!(lattice.consistent(&cut), "{pred}: inconsistent {cut:?}");
                    assert!(
                        holds_a(cut[a.0]) && holds_b(cut[b.0]),
                        "{pred}: halted at {cut:?}, where the logs do not show both holding"
                    );
                    halts += 1;
                }
                Err(message) => {
                    assert!(message.contains("never holds"), "{pred}: {message}");
                    assert!(
                        states.is_none(),
                        "{pred}: reported as never holding, but both hold at {:?}",
                        states.map(|s| s[0].clone())
                    );
                    never += 1;
                }
            }
        }
    }
    assert!(
        halts > 0 && never > 0,
        "both outcomes checked: {halts} halts, {never} never"
    );
}

// ---------------------------------------------------------------------------------------------
// Divergence, a changed binary, a log that ends early

#[test]
fn a_program_that_does_something_else_diverges_with_a_report() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("rec");
    record_program(work.path(), &dir, &random_program(), &["3", "2", "8"], &[]);
    let out = Command::new(ppd_tests::ppd_bin())
        .args(["replay", dir.to_str().unwrap(), "--json"])
        .env("RANDOM_PROGRAM_EXTRA", "1")
        .current_dir(work.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["outcome"], "diverged");
    let d = &summary["divergence"];
    assert_eq!(d["process"], "w0");
    assert!(d["happened"].as_str().unwrap().starts_with("recv"), "{d:#}");
    assert!(d["expected"].as_str().unwrap().len() > 3, "{d:#}");
    assert!(d["event"].as_u64().is_some());
}

#[test]
fn a_rebuilt_binary_is_refused() {
    let work = tempfile::tempdir().unwrap();
    let copy = work.path().join("prog");
    std::fs::copy(random_program(), &copy).unwrap();
    let dir = work.path().join("rec");
    record_program(work.path(), &dir, &copy, &["1", "2", "4"], &[]);
    // Same program, different bytes: as after a rebuild.
    let mut bytes = std::fs::read(&copy).unwrap();
    bytes.extend_from_slice(b"rebuilt");
    std::fs::write(&copy, bytes).unwrap();
    let out = replay(work.path(), &dir, &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out).1.contains("not the binary that was recorded"),
        "{}",
        text(&out).1
    );
}

#[test]
fn a_log_that_ends_early_is_reported_not_waited_for() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("rec");
    let out = record_program(
        work.path(),
        &dir,
        &random_program(),
        &["11", "2", "12"],
        &[],
    );
    assert!(out.status.success());
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap();
    let ring = manifest["options"]["block_size"].as_u64().unwrap()
        * manifest["options"]["ring_blocks"].as_u64().unwrap();
    // w0's log loses every event: as if w0 had been killed before it did anything.
    let log = std::fs::OpenOptions::new()
        .write(true)
        .open(dir.join("proc-0001.log"))
        .unwrap();
    log.set_len(4096 + ring).unwrap();
    // A log cut like this is damage: refused as bad input unless asked to use what is left.
    let out = replay(work.path(), &dir, &["--json"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out).1);
    assert!(text(&out).1.contains("proc-0001.log"), "{}", text(&out).1);
    let out = replay(work.path(), &dir, &["--json", "--allow-damage"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out).1);
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["outcome"], "stuck", "{summary:#}");
    let waits = summary["stuck"].as_array().unwrap();
    // Whatever w1 needs next from w0 (a message or an atomic access), and main's join of w0.
    let waits_for_w0 = |name: &str| {
        waits
            .iter()
            .any(|w| w["process"] == name && w["waiting_for"].as_str().unwrap().contains("p1"))
    };
    assert!(
        waits_for_w0("w1"),
        "w1 waits for something of w0: {waits:#?}"
    );
    assert!(waits_for_w0("main"), "main waits for w0's end: {waits:#?}");
}

// ---------------------------------------------------------------------------------------------
// Predicates refused before replay starts

#[test]
fn bad_predicates_are_refused_before_replay() {
    let work = tempfile::tempdir().unwrap();
    // A run that went negative: its recording knows the label `negative`.
    let dir = record_until_buggy(work.path(), "bank");
    let check = |pred: &str, needle: &str| {
        let out = replay(work.path(), &dir, &["--stop", pred]);
        assert_eq!(out.status.code(), Some(2), "{pred}");
        let stderr = text(&out).1;
        assert!(stderr.contains(needle), "{pred}: {stderr}");
    };
    check("tellr: mark negative", "did you mean `teller`");
    check("teller: mark negtive", "did you mean `negative`");
    check("teller: send reqests", "did you mean `requests`");
    check(
        "teller: mark negative & auditor: mark total | client-0: send",
        "NP-hard",
    );
    check("teller mark negative", "expected `:`");
}

/// Whether `message` shows a line containing `token` with a caret under the token's first
/// character on the next line, as predicate errors point.
fn points_at(message: &str, token: &str) -> bool {
    let lines: Vec<&str> = message.lines().collect();
    lines.windows(2).any(|pair| {
        pair[0].find(token).is_some_and(|at| {
            let column = pair[0][..at].chars().count();
            pair[1].chars().position(|c| c == '^') == Some(column)
        })
    })
}

#[test]
fn predicates_that_cannot_hold_are_refused_where_they_are_wrong() {
    let work = tempfile::tempdir().unwrap();
    let dir = record_until_buggy(work.path(), "bank");
    let rec = dir.to_str().unwrap();
    let refused = |args: &[&str], token: &str, needles: &[&str]| {
        let out = ppd(work.path(), args);
        let stderr = text(&out).1;
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            points_at(&stderr, token),
            "{args:?}: not at `{token}`: {stderr}"
        );
        for needle in needles {
            assert!(stderr.contains(needle), "{args:?}: no `{needle}`: {stderr}");
        }
    };
    // `handle(bank, request)` has two parameters; `%0` is its return value.
    refused(
        &["replay", rec, "--stop", "teller: exit handle if %99 > 3"],
        "%99",
        &[
            "column 24",
            "`%99` is past the parameters: `exit handle` has 2",
        ],
    );
    // The teller marks `negative` with an integer: there is no `.0` in it.
    refused(
        &[
            "replay",
            rec,
            "--stop",
            "teller: mark negative if value.0.1.2.3 < 0",
        ],
        "0.1.2.3",
        &["`value.0` is in no value teller logged at `mark negative` (`value` holds integers)"],
    );
    refused(
        &["replay", rec, "--stop", "auditor: mark negative"],
        "negative",
        &["label `negative` is never marked by auditor (only by teller)"],
    );
    refused(
        &[
            "replay",
            rec,
            "--stop",
            "teller: mark negative if value == \"low\"",
        ],
        "\"low\"",
        &["never holds: `value` is always an integer"],
    );
    refused(
        &[
            "replay",
            rec,
            "--trace",
            "teller: enter handle if %0 != 0",
            "--print",
            "teller.negative",
        ],
        "%0",
        &["`%0` is the return value, logged at the exit"],
    );
    refused(
        &[
            "replay",
            rec,
            "--trace",
            "teller: enter handle if request.Withdraw.amout > 50",
            "--print",
            "teller.negative",
        ],
        "amout",
        &["did you mean `amount`"],
    );
    // `--print` names a label the process marks or a parameter of an e-block it enters.
    let out = ppd(
        work.path(),
        &[
            "replay",
            rec,
            "--trace",
            "teller: mark negative",
            "--print",
            "teller.negatve",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out).1;
    assert!(
        stderr.contains("bad --print item `teller.negatve`")
            && stderr.contains("did you mean `negative`"),
        "{stderr}"
    );
    // `why --at` reads its event through the same checks.
    refused(
        &[
            "why",
            rec,
            "teller",
            "balance",
            "--at",
            "exit handle if %99 > 3",
        ],
        "%99",
        &["`%99` is past the parameters"],
    );
    refused(
        &[
            "why",
            rec,
            "teller",
            "balance",
            "--at",
            "mark negative if value.x < 0",
        ],
        "x < 0",
        &["`value.x` is in no value teller logged"],
    );

    // Well typed and false in this run: it never holds, which is not bad input.
    let out = replay(
        work.path(),
        &dir,
        &["--stop", "teller: mark negative if value > 0"],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out).1.contains("never holds"), "{}", text(&out).1);
    // A path some logged values have and others not (an audit has no amount) is accepted, and
    // holds where a value has it.
    for pred in [
        "teller: enter handle if request.Withdraw.amount > 0",
        "teller: exit handle if %0.1.Balance < 0 && %2.Withdraw.amount >= 10",
    ] {
        let out = replay(work.path(), &dir, &["--json", "--stop", pred]);
        assert!(out.status.success(), "{pred}: {}", text(&out).1);
    }
}

// ---------------------------------------------------------------------------------------------
// Tracing, going to a cut, the interactive debugger

#[test]
fn tracing_prints_every_state_that_satisfies_the_predicate() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("rec");
    record_program(work.path(), &dir, &random_program(), &["5", "3", "10"], &[]);
    let lattice = Lattice::load(&dir);
    let gots = lattice.events[1]
        .iter()
        .filter(|e| matches!(e, Event::Mark { label, .. } if &**label == "got"))
        .count();
    assert!(gots > 0);
    let out = replay(
        work.path(),
        &dir,
        &[
            "--json",
            "--trace",
            "w0: mark got",
            "--print",
            "w0.got,w1.loaded",
        ],
    );
    assert!(out.status.success(), "{}", text(&out).1);
    let lines: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        lines.len(),
        gots,
        "one line per state where w0 just got a message"
    );
    for line in &lines {
        assert_eq!(line["values"][0][0], "w0.got");
        assert!(line["values"][0][1].is_u64(), "{line:#}");
    }
}

/// `ppd replay --trace PRED --print PRINT --json` on `dir`: each line's cut.
fn traced_cuts(work: &Path, dir: &Path, pred: &str, print: &str) -> Vec<Vec<u64>> {
    let out = replay(work, dir, &["--json", "--trace", pred, "--print", print]);
    assert!(out.status.success(), "{pred}: {}", text(&out).1);
    let lines: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    lines
        .iter()
        .map(|line| {
            let cut = line["cut"].as_array().unwrap();
            cut.iter().map(|p| p[1].as_u64().unwrap()).collect()
        })
        .collect()
}

#[test]
fn tracing_a_linked_predicate_prints_the_states_where_its_last_stage_is_reached() {
    // `A -> B` holds right after each event of B with an event of A in its causal past, and
    // only there (Miller & Choi §3.4); each state is printed once.
    let work = tempfile::tempdir().unwrap();
    let labels = ["got", "tried", "saw", "loaded"];
    for seed in 0..MAX_PROGRAMS {
        let dir = work.path().join(format!("trace{seed}"));
        let args = [seed.to_string(), "3".into(), "10".into()];
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        record_program(work.path(), &dir, &random_program(), &args, &[]);
        let lattice = Lattice::load(&dir);
        let clocks = lattice.clocks();
        let (w0, w1) = (lattice.process("w0"), lattice.process("w1"));
        let marks = |p: usize, wanted: &str| -> Vec<usize> {
            (0..lattice.events[p].len())
                .filter(|&k| {
                    matches!(&lattice.events[p][k], Event::Mark { label, .. } if **label == *wanted)
                })
                .collect()
        };
        for (a, b) in labels
            .iter()
            .flat_map(|a| labels.iter().map(move |b| (a, b)))
        {
            let (firsts, thens) = (marks(w0, a), marks(w1, b));
            let expected: Vec<Vec<u64>> = thens
                .iter()
                .filter(|&&k| firsts.iter().any(|&f| (f as u64) < clocks[w1][k][w0]))
                .map(|&k| clocks[w1][k].clone())
                .collect();
            // Some of B's events after an A and some not: the answer tells them apart.
            if expected.is_empty() || expected.len() == thens.len() {
                continue;
            }
            let pred = format!("w0: mark {a} -> w1: mark {b}");
            let cuts = traced_cuts(work.path(), &dir, &pred, "w0.got");
            assert_eq!(cuts, expected, "seed {seed}: {pred}");
            let pred = format!("w0: mark {a} | w0: mark {a} if value >= 0");
            let cuts = traced_cuts(work.path(), &dir, &pred, "w0.got");
            assert_eq!(
                cuts.len(),
                firsts.len(),
                "seed {seed}: {pred}: one line per state"
            );
            return;
        }
    }
    panic!("no recorded run had a mark of w1 both before and after one of w0");
}

#[test]
fn going_to_a_cut_reaches_exactly_it_and_refuses_an_inconsistent_one() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("rec");
    record_program(work.path(), &dir, &random_program(), &["9", "2", "6"], &[]);
    let lattice = Lattice::load(&dir);
    let cuts = lattice.consistent_cuts();
    let target = &cuts[cuts.len() / 2];
    let spec: Vec<String> = target
        .iter()
        .enumerate()
        .map(|(i, n)| {
            format!(
                "{}={n}",
                if i == 0 {
                    "main".into()
                } else {
                    format!("w{}", i - 1)
                }
            )
        })
        .collect();
    let out = replay(work.path(), &dir, &["--json", "--to", &spec.join(",")]);
    assert!(out.status.success(), "{}", text(&out).1);
    let state: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for p in state["processes"].as_array().unwrap() {
        assert_eq!(p["events"], target[p["id"].as_u64().unwrap() as usize]);
    }
    // w0 past its end while main has not even spawned it: not a consistent state.
    let out = replay(work.path(), &dir, &["--to", "main=0,w0=3"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out).1.contains("cannot be reached"),
        "{}",
        text(&out).1
    );
}

#[test]
fn the_interactive_debugger_steps_and_goes_back() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("rec");
    record_program(work.path(), &dir, &random_program(), &["4", "2", "5"], &[]);
    // Held before the first event, then driven by commands from a pipe.
    let out = ppd_tests::ppd_with_input(
        work.path(),
        &["replay", dir.to_str().unwrap(), "-i", "--json"],
        b"step main\nstep main\nstep\nback\nstate json\nquit\n",
    );
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(
        stdout.matches("halted (after a step)").count(),
        3,
        "{stdout}"
    );
    assert!(
        stdout.contains("halted (the requested state)"),
        "back replays to a state: {stdout}"
    );
    // After two steps of main and one of any process, `back` returns to main's second step.
    let json_start = stdout
        .rfind("{\n  \"predicate\"")
        .expect("the state as JSON");
    let json_end = stdout[json_start..].find("\n}\n").unwrap() + json_start + 2;
    let state: serde_json::Value = serde_json::from_str(&stdout[json_start..json_end]).unwrap();
    let main = &state["processes"][0];
    assert_eq!(main["name"], "main");
    assert_eq!(main["events"], 2, "{state:#}");
}

#[test]
fn pipeline_halts_although_no_channel_reaches_the_producer() {
    // Miller & Choi §2.2.2: halt markers cannot reach the producer of an acyclic pipeline;
    // the debugger's control channel to every process can.
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("rec");
    let out = record_example(work.path(), &dir, "pipeline", &[]);
    assert!(out.status.success(), "{}", text(&out).1);
    let lattice = Lattice::load(&dir);
    let clocks = lattice.clocks();
    let (producer, consumer) = (lattice.process("producer"), lattice.process("consumer"));
    // The consumer's first `sum` mark: the least consistent cut containing it (its clock) is
    // the state the predicate defines.
    let first_sum = lattice.events[consumer]
        .iter()
        .position(|e| matches!(e, Event::Mark { label, .. } if **label == *"sum"))
        .expect("the consumer marks its sum");
    let defined = clocks[consumer][first_sum].clone();
    let cut = halt_cut(work.path(), &dir, "consumer: mark sum", false).unwrap();
    assert_eq!(cut, defined, "halted elsewhere than the predicate's state");
    let logged = lattice.events[producer].len() as u64;
    assert!(
        cut[producer] < logged,
        "the producer was not held: {} of its {logged} events ran",
        cut[producer]
    );
    // A disjunction with the producer's 150th send: --first halts at one of its two first
    // states, both of which hold the producer long before its end.
    let sends = |seq_wanted: u64| {
        lattice.events[producer]
            .iter()
            .position(|e| matches!(e, Event::Send { seq, .. } if *seq == seq_wanted))
            .expect("the producer sends 200 readings")
    };
    let candidates = [defined, clocks[producer][sends(150)].clone()];
    let cut = halt_cut(
        work.path(),
        &dir,
        "consumer: mark sum | producer: send raw if seq == 150",
        true,
    )
    .unwrap();
    assert!(
        candidates.contains(&cut),
        "halted at {cut:?}, not one of the first states {candidates:?}"
    );
    assert!(cut[producer] < logged);
    assert!(lattice.consistent(&cut));
}
