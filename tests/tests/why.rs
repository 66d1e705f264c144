//! `ppd why` end to end: real programs recorded, their e-blocks re-executed by the recorded
//! binary, the answers pinned as snapshots (`UPDATE_EXPECT=1` rewrites them).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use expect_test::{Expect, expect};
use ppd_flowback::why::index::ProcessIndex;
use ppd_flowback::why::store::{InstanceKey, Lookup, TraceStore};
use ppd_formats::{Event, Recording};
use ppd_tests::{line_of, ppd, record_example, record_program};
use serde_json::Value;

fn why_cases() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_why_cases"))
}

/// Records case `case` of `why_cases` into `work`.
fn record_case(work: &Path, case: &str) -> PathBuf {
    let dir = work.join(case);
    let out = record_program(work, &dir, &why_cases(), &[case], &[]);
    assert!(
        out.status.success(),
        "recording {case} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    dir
}

/// Event indices depend on how often a receive had to wait (each wait is logged); answers are
/// compared without them.
fn without_event_numbers(text: &str) -> String {
    mask_numbers_after(text, "event ", "N")
}

/// Sockets are named by their addresses, whose ports the OS chose.
fn without_ports(text: &str) -> String {
    mask_numbers_after(text, "127.0.0.1:", "PORT")
}

/// `text` with every number that follows `prefix` written `mark`.
fn mask_numbers_after(text: &str, prefix: &str, mark: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find(prefix) {
        out.push_str(&rest[..i + prefix.len()]);
        rest = &rest[i + prefix.len()..];
        let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        if digits > 0 {
            out.push_str(mark);
        }
        rest = &rest[digits..];
    }
    out.push_str(rest);
    out
}

fn why(work: &Path, dir: &Path, args: &[&str]) -> (Option<i32>, String, String) {
    let mut all = vec!["why", dir.to_str().unwrap()];
    all.extend_from_slice(args);
    let out = ppd(work, &all);
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Records `case`, asks `ppd why` with `args`, and compares the answer with `expected`.
fn check(case: &str, args: &[&str], expected: Expect) {
    let work = tempfile::tempdir().unwrap();
    let dir = record_case(work.path(), case);
    let (code, stdout, stderr) = why(work.path(), &dir, args);
    assert_eq!(code, Some(0), "ppd why failed: {stderr}");
    expected.assert_eq(&without_ports(&without_event_numbers(&stdout)));
    // A second query is answered from the cached traces, identically.
    let (_, again, _) = why(work.path(), &dir, args);
    assert_eq!(again, stdout, "the cached answer differs");
}

#[test]
fn a_value_is_traced_back_across_three_processes() {
    check(
        "chain",
        &["sink", "total", "--at", "absorb#1", "--depth", "9"],
        expect![[r#"
            why sink total (at absorb#1):
            total = 26  (tests/src/bin/why_cases.rs:53, sink why_cases::absorb entered at event N)
            │   *total += value;
            ├─ data: %2 total = 0  (tests/src/bin/why_cases.rs:49)
            │  │   fn absorb
            │  └─ data: total = 0  (tests/src/bin/why_cases.rs:49)
            │         fn absorb
            │         [passed by the caller of why_cases::absorb, which is not an e-block]
            ├─ data: value = 26  (tests/src/bin/why_cases.rs:50)
            │  │   let Ok(value) = input.recv() else { return false; };
            │  └─ [#5] data: received 26  (tests/src/bin/why_cases.rs:50)
            │     │   let Ok(value) = input.recv() else { return false; };
            │     │   [message 1 from doubler]
            │     └─ data via message: sent 26  (tests/src/bin/why_cases.rs:44, doubler why_cases::double entered at event N)
            │        │   out.send(doubled).expect("sink")
            │        │   [message 1 on channel doubled]
            │        ├─ data: doubled = 26  (tests/src/bin/why_cases.rs:43)
            │        │  │   let doubled = value * 2;
            │        │  └─ data: value = 13  (tests/src/bin/why_cases.rs:40)
            │        │     │   let Ok(value) = input.recv() else { return false; };
            │        │     └─ data: received 13  (see #10)
            │        └─ control: condition = true  (tests/src/bin/why_cases.rs:40)
            │           │   let Ok(value) = input.recv() else { return false; };
            │           └─ [#10] data: received 13  (tests/src/bin/why_cases.rs:40)
            │              │   let Ok(value) = input.recv() else { return false; };
            │              │   [message 1 from source]
            │              └─ data via message: sent 13  (tests/src/bin/why_cases.rs:35, source why_cases::produce entered at event N)
            │                 │   out.send(reading).expect("doubler")
            │                 │   [message 1 on channel readings]
            │                 └─ data: reading = 13  (tests/src/bin/why_cases.rs:34)
            │                    │   let reading = seed * 10 + 3;
            │                    └─ data: %1 seed = 1  (tests/src/bin/why_cases.rs:33)
            │                       │   fn produce
            │                       └─ data: seed = 1  (tests/src/bin/why_cases.rs:33)
            │                              fn produce
            │                              [passed by the caller of why_cases::produce, which is not an e-block]
            └─ control: condition = true  (tests/src/bin/why_cases.rs:50)
               │   let Ok(value) = input.recv() else { return false; };
               └─ data: received 26  (see #5)
        "#]],
    );
}

#[test]
fn a_nested_call_is_a_sub_graph_entered_for_its_returned_value() {
    check(
        "nested",
        &["main", "report.total", "--depth", "5"],
        expect![[r#"
            why main report.total (at the end of the run):
            report.total = 27  (tests/src/bin/why_cases.rs:107, main why_cases::summarize entered at event N)
            │   report.total = top + bonus;
            ├─ data: bonus = 18  (tests/src/bin/why_cases.rs:106)
            │  │   let bonus = if top > 5 { top * 2 } else { 0 };
            │  └─ data: top = 9  (see #2)
            └─ [#2] data: top = 9  (tests/src/bin/why_cases.rs:104)
               │   let top = best_of(&values);
               └─ data: %0 of why_cases::best_of = 9  (tests/src/bin/why_cases.rs:104)
                  │   let top = best_of(&values);
                  └─ data via call: %0 = 9  (tests/src/bin/why_cases.rs:99, main why_cases::best_of entered at event N)
                     │   best
                     └─ data: best = 9  (tests/src/bin/why_cases.rs:96)
                        │   best = *v;
                        ├─ data: v = 9  (tests/src/bin/why_cases.rs:94)
                        │  │   for v in values
                        │  └─ … (more: raise --depth)
                        └─ control: condition = true  (tests/src/bin/why_cases.rs:95)
                           │   if *v > best
                           └─ … (more: raise --depth)
        "#]],
    );
}

#[test]
fn a_loop_counter_depends_on_each_earlier_iteration() {
    check(
        "loops",
        &["main", "steps", "--depth", "3"],
        expect![[r#"
            why main steps (at the end of the run):
            steps = 8  (tests/src/bin/why_cases.rs:127, main why_cases::collatz_steps entered at event N)
            │   steps += 1;
            ├─ data: steps = 7  (tests/src/bin/why_cases.rs:127)
            │  │   steps += 1;
            │  ├─ data: steps = 6  (tests/src/bin/why_cases.rs:127)
            │  │  │   steps += 1;
            │  │  ├─ data: steps = 5  (tests/src/bin/why_cases.rs:127)
            │  │  │  │   steps += 1;
            │  │  │  └─ … (more: raise --depth)
            │  │  └─ control: condition = true  (tests/src/bin/why_cases.rs:121)
            │  │     │   while left > 1
            │  │     └─ … (more: raise --depth)
            │  └─ control: condition = true  (tests/src/bin/why_cases.rs:121)
            │     │   while left > 1
            │     └─ [#8] data: left = 4  (tests/src/bin/why_cases.rs:123)
            │        │   left /= 2;
            │        └─ … (more: raise --depth)
            └─ control: condition = true  (tests/src/bin/why_cases.rs:121)
               │   while left > 1
               └─ data: left = 2  (tests/src/bin/why_cases.rs:123)
                  │   left /= 2;
                  ├─ data: left = 4  (see #8)
                  └─ control: condition = true  (tests/src/bin/why_cases.rs:122)
                     │   if left.is_multiple_of(2)
                     └─ … (more: raise --depth)
        "#]],
    );
}

#[test]
fn an_early_return_depends_on_its_guard() {
    check(
        "early",
        &["main", "%0", "--at", "classify#2"],
        expect![[r#"
            why main %0 (at classify#2):
            %0 = "negative"  (tests/src/bin/why_cases.rs:139, main why_cases::classify entered at event N)
            │   return "negative".into();
            └─ control: condition = true  (tests/src/bin/why_cases.rs:138)
               │   if x < 0
               └─ data: %1 x = -3  (tests/src/bin/why_cases.rs:137)
                  │   fn classify
                  └─ data: x = -3  (tests/src/bin/why_cases.rs:137)
                         fn classify
                         [passed by the caller of why_cases::classify, which is not an e-block]
        "#]],
    );
}

#[test]
fn the_end_of_the_run_is_the_last_instance_that_defined_the_variable() {
    check(
        "early",
        &["main", "kind", "--depth", "1"],
        expect![[r#"
            why main kind (at the end of the run):
            kind = "odd"  (tests/src/bin/why_cases.rs:141, main why_cases::classify entered at event N)
            │   let kind = if x % 2 == 0 { "even" } else { "odd" };
            ├─ data: %1 x = 7  (tests/src/bin/why_cases.rs:137)
            │  │   fn classify
            │  └─ … (more: raise --depth)
            └─ control: condition = false  (tests/src/bin/why_cases.rs:138)
               │   if x < 0
               └─ … (more: raise --depth)
        "#]],
    );
}

#[test]
fn json_and_dot_answers_carry_the_graph() {
    let work = tempfile::tempdir().unwrap();
    let dir = record_case(work.path(), "chain");
    let (code, stdout, stderr) = why(
        work.path(),
        &dir,
        &["sink", "total", "--at", "absorb#2", "--json"],
    );
    assert_eq!(code, Some(0), "{stderr}");
    let answer: Value = serde_json::from_str(&stdout).unwrap();
    let root = &answer["steps"][0];
    for field in ["process", "var", "value", "file", "line", "node", "deps"] {
        assert!(
            root.get(field).is_some(),
            "the root has no `{field}`: {root:#}"
        );
    }
    assert_eq!(root["process"], "sink");
    assert_eq!(root["value"], "72");
    let edge = &root["deps"][0];
    for field in ["step", "kind", "via", "through"] {
        assert!(
            edge.get(field).is_some(),
            "an edge has no `{field}`: {edge:#}"
        );
    }
    let mut processes = BTreeSet::new();
    let mut sources = Vec::new();
    for n in find(&answer, 0, |_, _| true) {
        processes.insert(n["process"].as_str().unwrap().to_owned());
        if n["var"] == "reading" {
            sources.push(n["value"].as_str().unwrap().to_owned());
        }
    }
    assert_eq!(
        processes,
        BTreeSet::from(["sink".into(), "doubler".into(), "source".into()])
    );
    assert!(sources.contains(&"23".to_owned()), "{sources:?}");

    let (code, dot, _) = why(work.path(), &dir, &["sink", "total", "--dot"]);
    assert_eq!(code, Some(0));
    assert!(dot.starts_with("digraph why {"), "{dot}");
    assert!(
        dot.contains("label=\"message\""),
        "a synchronization edge: {dot}"
    );
    assert!(dot.contains("shape=invhouse"), "an ENTRY (%n) node: {dot}");
    assert!(dot.trim_end().ends_with('}'));
}

#[test]
fn unknown_names_are_refused_with_the_closest_known_ones() {
    let work = tempfile::tempdir().unwrap();
    let dir = record_case(work.path(), "chain");
    for (args, wanted) in [
        (
            vec!["sinc", "total"],
            "no process `sinc` in the recording (did you mean sink?)",
        ),
        (
            vec!["sink", "totl"],
            "no e-block of sink defines or takes `totl` (did you mean total?)",
        ),
        (
            vec!["sink", "total", "--at", "absorbb#1"],
            "did you mean why_cases::absorb?",
        ),
        (
            vec!["sink", "total", "--at", "absorb#9"],
            "sink has 4 instances of `absorb`",
        ),
        (vec!["sink", "total", "--at", "999999"], "sink has"),
        (vec!["sink", "to tal"], "is not a variable or a place"),
        (vec!["sink", "total", "--at", "mark nothing"], "nothing"),
    ] {
        let (code, _, stderr) = why(work.path(), &dir, &args);
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(wanted), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}

#[test]
fn a_rebuilt_binary_is_refused_before_anything_is_re_executed() {
    let work = tempfile::tempdir().unwrap();
    let copy = work.path().join("why_cases");
    std::fs::copy(why_cases(), &copy).unwrap();
    let dir = work.path().join("rec");
    let out = record_program(work.path(), &dir, &copy, &["chain"], &[]);
    assert!(out.status.success());
    // "Rebuild" it: same name, other bytes.
    let mut bytes = std::fs::read(&copy).unwrap();
    bytes.extend_from_slice(b"rebuilt");
    std::fs::write(&copy, bytes).unwrap();
    let (code, _, stderr) = why(work.path(), &dir, &["sink", "total"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("not the binary that was recorded"),
        "{stderr}"
    );
}

#[test]
fn state_is_restored_from_accumulated_logs() {
    let work = tempfile::tempdir().unwrap();
    let dir = record_case(work.path(), "chain");
    let (code, stdout, stderr) = why(
        work.path(),
        &dir,
        &["sink", "--state", "--at", "absorb#2", "--json"],
    );
    assert_eq!(code, Some(0), "{stderr}");
    let state: Value = serde_json::from_str(&stdout).unwrap();
    let total = state["values"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == "total")
        .unwrap();
    assert_eq!(
        total["json"], 72,
        "26 + 46 after the second absorb: {state:#}"
    );
    assert_eq!(total["logged_on"], "exit");
}

#[test]
fn channel_ends_passed_to_an_eblock_are_shown_as_the_channels_they_are() {
    let work = tempfile::tempdir().unwrap();
    let dir = record_case(work.path(), "chain");
    let (code, stdout, stderr) = why(work.path(), &dir, &["doubler", "--state"]);
    assert_eq!(code, Some(0), "{stderr}");
    for shown in [
        "input = channel readings (receiver)",
        "out = channel doubled (sender)",
    ] {
        assert!(stdout.contains(shown), "no `{shown}` in:\n{stdout}");
    }
    let (code, stdout, stderr) = why(work.path(), &dir, &["doubler", "--state", "--json"]);
    assert_eq!(code, Some(0), "{stderr}");
    let state: Value = serde_json::from_str(&stdout).unwrap();
    let input = state["values"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == "input")
        .unwrap();
    assert_eq!(input["value"], "channel readings (receiver)", "{state:#}");
    assert_eq!(input["json"]["object"], "channel readings (receiver)");
    assert!(
        input["json"]["id"].as_str().unwrap().starts_with('#'),
        "the id beside the name: {state:#}"
    );

    // In a chain, the parameter is the channel too.
    let (code, stdout, stderr) = why(work.path(), &dir, &["doubler", "input", "--at", "double#2"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stdout.contains("input = channel readings (receiver)"),
        "{stdout}"
    );
}

#[test]
fn a_halted_replay_shows_restored_state_and_is_a_point_to_ask_at() {
    let work = tempfile::tempdir().unwrap();
    let dir = record_case(work.path(), "chain");
    let out = ppd_tests::ppd_with_input(
        work.path(),
        &[
            "replay",
            dir.to_str().unwrap(),
            "--stop",
            "sink: exit absorb",
            "-i",
        ],
        b"restore sink\nquit\n",
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("sink after event"), "{stdout}");
    assert!(
        stdout.contains("total = 26    [exit of why_cases::absorb"),
        "{stdout}"
    );

    let (code, stdout, stderr) = why(
        work.path(),
        &dir,
        &["sink", "total", "--at", "halt", "--json"],
    );
    assert_eq!(code, Some(0), "{stderr}");
    let answer: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(
        answer["steps"][0]["value"], "26",
        "the halt is after the first absorb"
    );
}

#[test]
fn what_if_re_executes_an_instance_with_an_argument_changed() {
    let work = tempfile::tempdir().unwrap();
    let dir = record_case(work.path(), "early");
    let (code, stdout, stderr) = why(
        work.path(),
        &dir,
        &["main", "--what-if", "x=8", "--at", "classify#2", "--json"],
    );
    assert_eq!(code, Some(0), "{stderr}");
    let what_if: Value = serde_json::from_str(&stdout).unwrap();
    let ret = what_if["outcomes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["name"] == "%0")
        .unwrap();
    assert_eq!(ret["recorded"], "\"negative\"");
    assert_eq!(ret["what_if"], "\"even\"");
    assert_eq!(what_if["left_the_log"], Value::Null);

    let (code, _, stderr) = why(
        work.path(),
        &dir,
        &["main", "--what-if", "y=8", "--at", "classify#2"],
    );
    assert_eq!(code, Some(2));
    assert!(stderr.contains("has no argument `y`"), "{stderr}");
}

/// A value is given to `--what-if` as ppd prints it (what a user copies from a report) or as
/// JSON; one that is not a value of the argument's type is bad input, not a run that left its
/// log.
#[test]
fn what_if_takes_a_value_as_ppd_prints_it_and_refuses_one_of_another_type() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("rec");
    let out = record_example(work.path(), &dir, "bank", &[]);
    assert!(
        dir.join("manifest.json").exists(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The first withdrawal a client makes of account 0, as the teller's `handle` received it.
    let what_if = |value: &str| {
        let change = format!("request={value}");
        why(
            work.path(),
            &dir,
            &[
                "teller",
                "--what-if",
                &change,
                "--at",
                "bank::handle#3",
                "--json",
            ],
        )
    };
    // Account 0's balance after the changed run of `handle`.
    let balance_after = |answer: &Value| -> i64 {
        let bank = answer["outcomes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["name"] == "bank")
            .unwrap();
        let text = bank["what_if"].as_str().unwrap();
        let (_, rest) = text.split_once("\"account-0\", balance: ").unwrap();
        rest.split(['}', ',']).next().unwrap().parse().unwrap()
    };
    let printed = "Withdraw {client: 1, account: 0, amount: 30}";
    let (code, stdout, stderr) = what_if(printed);
    assert_eq!(code, Some(0), "{stderr}");
    let answer: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(answer["changed"][0][2], printed, "{answer:#}");
    let (code, stdout, stderr) = what_if("Withdraw {client: 1, account: 0, amount: 40}");
    assert_eq!(code, Some(0), "{stderr}");
    let more: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(
        balance_after(&answer) - balance_after(&more),
        10,
        "{answer:#} {more:#}"
    );
    // The same value as JSON gives the same answer.
    let (code, json_stdout, stderr) =
        what_if(r#"{"Withdraw": {"client": 1, "account": 0, "amount": 30}}"#);
    assert_eq!(code, Some(0), "{stderr}");
    let json_answer: Value = serde_json::from_str(&json_stdout).unwrap();
    assert_eq!(json_answer["outcomes"], answer["outcomes"]);
    // A variant the type does not have, and text that is not a value: exit 2, saying why.
    let (code, stdout, stderr) = what_if("Withdrw {client: 1}");
    assert_eq!(code, Some(2), "{stdout}{stderr}");
    assert!(
        stderr.contains("Withdrw {client: 1} is not a value of the argument's type")
            && stderr.contains("unknown variant `Withdrw`"),
        "{stderr}"
    );
    let (code, _, stderr) = what_if("Withdraw {client 1}");
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("expected `:`, found `1`"), "{stderr}");
}

/// Re-executes every e-block instance of every process of a recording; returns how many the
/// recorded binary re-executed, and the leaks.
fn leaks_of_every_instance(dir: &Path) -> (usize, Vec<String>) {
    let recording = Recording::open(dir).unwrap();
    let mut store = TraceStore::new(&recording, None);
    let mut keys = BTreeSet::new();
    for p in recording.processes() {
        let index = ProcessIndex::build(&recording, p.id).unwrap();
        keys.extend((0..index.len()).map(|i| InstanceKey {
            process: p.id,
            enter: index.instance(i).unwrap().enter,
        }));
    }
    store.fetch(&keys).unwrap();
    let reexecuted = store.work.reexecuted;
    let mut leaks = Vec::new();
    for key in &keys {
        match store.trace(*key) {
            Lookup::Ready(trace) => leaks.extend(trace.leaks.iter().map(|l| {
                format!(
                    "{} at {}: {}: logged {}, re-executed {}",
                    trace.eblock, key.enter, l.what, l.logged, l.reproduced
                )
            })),
            other => leaks.push(format!("{key:?}: {other:?}")),
        }
    }
    (reexecuted, leaks)
}

/// The e-block instances a recording's logs hold: their entries, counted in the logs
/// themselves.
fn instances_logged(dir: &Path) -> usize {
    let recording = Recording::open(dir).unwrap();
    recording
        .processes()
        .iter()
        .map(|p| {
            let reader = recording.open_log(p).unwrap();
            reader
                .events()
                .filter(|item| matches!(item, Ok((_, Event::EblockEnter { .. }))))
                .count()
        })
        .sum()
}

#[test]
fn re_executing_every_instance_of_the_examples_reproduces_their_logs() {
    let work = tempfile::tempdir().unwrap();
    for example in ["bank", "pipeline"] {
        let dir = work.path().join(example);
        let out = record_example(work.path(), &dir, example, &[]);
        assert!(
            matches!(out.status.code(), Some(0 | 1)),
            "{example}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let (reexecuted, leaks) = leaks_of_every_instance(&dir);
        assert!(
            reexecuted > 10,
            "{example} ran only {reexecuted} e-block instances"
        );
        assert_eq!(reexecuted, instances_logged(&dir), "{example}");
        assert!(leaks.is_empty(), "{example}: {leaks:#?}");
    }
    for case in [
        "chain", "nested", "loops", "early", "shared", "withdraw", "relay", "flag", "outside",
    ] {
        let dir = record_case(work.path(), case);
        let (reexecuted, leaks) = leaks_of_every_instance(&dir);
        // Every instance the logs hold, none left out: no leak in none re-executed is no proof.
        assert!(reexecuted > 0, "{case}: nothing was re-executed");
        assert_eq!(reexecuted, instances_logged(&dir), "{case}");
        assert!(leaks.is_empty(), "{case}: {leaks:#?}");
    }
}

#[test]
fn a_nondeterminism_leak_is_reported_with_the_eblock_and_the_variable() {
    let work = tempfile::tempdir().unwrap();
    let dir = record_case(work.path(), "leaky");
    let (code, stdout, stderr) = why(work.path(), &dir, &["main", "%0", "--at", "count_call#2"]);
    assert_eq!(code, Some(1), "{stdout}{stderr}");
    assert!(
        stdout.contains(
            "main why_cases::count_call (entered at event 3): %0: logged 11, re-executed 10"
        ),
        "{stdout}"
    );
}

#[test]
fn a_value_read_under_a_lock_comes_from_the_acquisition_logged_in_the_eblock() {
    let work = tempfile::tempdir().unwrap();
    let dir = record_case(work.path(), "shared");
    let (code, stdout, stderr) = why(
        work.path(),
        &dir,
        &["worker-2", "now", "--at", "bump#3", "--json"],
    );
    assert_eq!(code, Some(0), "{stderr}");
    let answer: Value = serde_json::from_str(&stdout).unwrap();
    // Six bumps in all, worker-2's by 2: after its third, the counter is at least 6 and at most
    // 3 * 1 + 3 * 2.
    let now: i64 = answer["steps"][0]["value"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((6..=9).contains(&now), "{now}");
    let locked = find(&answer, 0, |_, n| {
        n["record"] == "input" && n["note"].as_str().unwrap_or("").contains("under mutex")
    });
    // The first is worker-2's own acquisition; the others are earlier holders' the chain
    // reached through the lock.
    assert!(!locked.is_empty(), "{stdout}");
    assert_eq!(locked[0]["process"], "worker-2", "{stdout}");
    let found: i64 = locked[0]["value"].as_str().unwrap().parse().unwrap();
    assert_eq!(found + 2, now, "the value found under the lock, plus 2");
    // What it found was left by the holder before that wrote (or is the initial value).
    let edge = &locked[0]["deps"][0];
    assert_eq!(edge["via"], "lock", "{stdout}");
    // The mutex has no name: its id, which the process that used it first gave it.
    let through = edge["through"].as_str().unwrap_or_default();
    assert!(
        through.starts_with('#') && through.ends_with(".0"),
        "the mutex has no name: its id, not {through:?}"
    );
    let writer = &answer["steps"][edge["step"].as_u64().unwrap() as usize];
    assert_eq!(writer["value"], locked[0]["value"], "{stdout}");
}

// ---------------------------------------------------------------------------------------------
// bank: why did a balance go negative?

fn record_until_negative(work: &Path) -> PathBuf {
    for attempt in 0..40 {
        let dir = work.join(format!("bank-{attempt}"));
        let out = record_example(work, &dir, "bank", &[]);
        if out.status.code() == Some(1) {
            return dir;
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
    panic!("bank never went negative in 40 recorded runs");
}

/// The steps of a `--json` answer that step `from` depends on, itself included, breadth first,
/// for which `f` holds of the step and of the edge this walk first reached it by (`null` for
/// `from`).
fn find(answer: &Value, from: usize, f: impl Fn(&Value, &Value) -> bool) -> Vec<&Value> {
    let steps = answer["steps"].as_array().unwrap();
    let mut reached = BTreeSet::from([from]);
    let mut queue = std::collections::VecDeque::from([(from, &Value::Null)]);
    let mut found = Vec::new();
    while let Some((id, edge)) = queue.pop_front() {
        let step = &steps[id];
        if f(edge, step) {
            found.push(step);
        }
        for dep in step["deps"].as_array().unwrap() {
            let to = dep["step"].as_u64().unwrap() as usize;
            if reached.insert(to) {
                queue.push_back((to, dep));
            }
        }
    }
    found
}

/// Whether a step is a client's send of a withdrawal, reached through its message.
fn sent_withdrawal(edge: &Value, step: &Value) -> bool {
    edge["via"] == "message"
        && step["record"] == "send"
        && step["value"].as_str().unwrap().starts_with("Withdraw")
}

#[test]
fn bank_why_a_balance_is_negative_goes_through_the_check_and_both_clients() {
    let work = tempfile::tempdir().unwrap();
    let dir = record_until_negative(work.path());
    let (code, stdout, stderr) = why(
        work.path(),
        &dir,
        &["teller", "balance", "--at", "mark negative", "--json"],
    );
    assert_eq!(code, Some(0), "{stderr}");
    let answer: Value = serde_json::from_str(&stdout).unwrap();
    let steps = answer["steps"].as_array().unwrap();
    let root = &steps[0];
    assert_eq!(root["var"], "balance");
    assert_eq!(
        root["text"],
        "let balance = bank.accounts[account].balance - amount;"
    );
    assert!(
        root["value"].as_str().unwrap().parse::<i64>().unwrap() < 0,
        "{root:#}"
    );

    // The withdrawal that went negative came in a message from a client...
    let withdrawals = find(&answer, 0, sent_withdrawal);
    let clients: BTreeSet<&str> = withdrawals
        .iter()
        .map(|n| n["process"].as_str().unwrap())
        .collect();
    assert!(
        !clients.is_empty() && clients.iter().all(|c| c.starts_with("client-")),
        "{clients:?}"
    );
    // ... which sent it because the teller's check approved it (a control dependence on the
    // approval it received)...
    let approvals = find(&answer, 0, |edge, n| {
        edge["kind"] == "control" && n["text"].as_str().unwrap().contains("Approved(true)")
    });
    assert!(
        !approvals.is_empty(),
        "no control dependence on an approval:\n{stdout}"
    );
    let checks = find(&answer, 0, |_, n| {
        n["var"] == "covered" && n["value"] == "true"
    });
    assert!(
        !checks.is_empty(),
        "the teller's check is not in the chain:\n{stdout}"
    );
    // ... and the balance it was taken from had been lowered by the other client of the
    // account since that check: the last write of the balance before the withdrawal served a
    // request of the other client, whichever client went negative.
    let dep = |var: &dyn Fn(&str) -> bool| -> usize {
        root["deps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|edge| edge["step"].as_u64().unwrap() as usize)
            .find(|&to| var(steps[to]["var"].as_str().unwrap_or("")))
            .unwrap_or_else(|| panic!("no such dependence of the root:\n{stdout}"))
    };
    // The request's own fields lead to the withdrawing client.
    let mut direct = Vec::new();
    for var in ["account", "amount"] {
        direct.extend(find(&answer, dep(&|v| v == var), sent_withdrawal));
    }
    let withdrawal = direct
        .first()
        .unwrap_or_else(|| panic!("the amount does not lead to a client's send:\n{stdout}"));
    let field = |name: &str| -> usize {
        let value = withdrawal["value"].as_str().unwrap();
        let rest = &value[value.find(&format!("{name}: ")).unwrap() + name.len() + 2..];
        rest[..rest.find([',', '}']).unwrap()]
            .trim()
            .parse()
            .unwrap()
    };
    let (client, account) = (field("client"), field("account"));
    assert_eq!(withdrawal["process"], format!("client-{client}"));
    // Clients `id` and `id + 2` share account `id % 2`.
    let other = format!("client-{}", (client + 2) % 4);
    assert_eq!((client + 2) % 4 % 2, account);
    let balance = dep(&|v| v.ends_with(&format!("bank.accounts[{account}].balance")));
    let lowered = find(&answer, balance, |edge, n| {
        edge["via"] == "message" && n["record"] == "send" && n["process"] == other.as_str()
    });
    assert!(
        !lowered.is_empty(),
        "{other}, which shares account {account} with client-{client}, is not in the \
         balance's chain:\n{stdout}"
    );
    assert!(answer["leaks"].as_array().unwrap().is_empty());

    let (code, text, _) = why(
        work.path(),
        &dir,
        &["teller", "balance", "--at", "mark negative", "--depth", "1"],
    );
    assert_eq!(code, Some(0));
    // The values and the account differ from run to run; the statements do not.
    let shape: Vec<String> = text
        .lines()
        .map(|l| without_event_numbers(&without_values(l)).replace("accounts[1]", "accounts[0]"))
        .collect();
    expect![[r#"
        why teller balance (at mark negative):
        balance = …  (examples/bank.rs:112, teller bank::handle entered at event N)
        │   let balance = bank.accounts[account].balance - amount;
        ├─ data: account = …  (examples/bank.rs:106)
        │  │   Request::Withdraw { client, account, amount } =>
        │  └─ … (more: raise --depth)
        ├─ data: amount = …  (examples/bank.rs:106)
        │  │   Request::Withdraw { client, account, amount } =>
        │  └─ … (more: raise --depth)
        ├─ data: %1 bank.accounts[0].balance = …  (examples/bank.rs:95)
        │  │   fn handle
        │  └─ … (more: raise --depth)
        └─ control: match arm  (examples/bank.rs:106)
           │   Request::Withdraw { client, account, amount } =>
           └─ … (more: raise --depth)"#]]
    .assert_eq(&shape.join("\n"));
}

/// `var = value  (where)` → `var = …  (where)`.
fn without_values(line: &str) -> String {
    match line.split_once(" = ") {
        Some((head, rest)) if !head.trim_start().starts_with("│   let") => {
            let place = rest.find("  (").map_or("", |i| &rest[i..]);
            format!("{head} = …{place}")
        }
        _ => line.to_owned(),
    }
}

// ---------------------------------------------------------------------------------------------
// Values that crossed processes through shared memory

#[test]
fn an_atomicity_violation_reaches_the_write_of_the_other_process() {
    check(
        "withdraw",
        &[
            "alice",
            "new_balance",
            "--at",
            "withdraw#1",
            "--depth",
            "12",
        ],
        expect![[r#"
            why alice new_balance (at withdraw#1):
            new_balance = -60  (tests/src/bin/why_cases.rs:208, alice why_cases::withdraw entered at event N)
            │   let new_balance = *guard - amount;
            ├─ data: %2 amount = 80  (tests/src/bin/why_cases.rs:206)
            │  │   fn withdraw
            │  └─ data: amount = 80  (tests/src/bin/why_cases.rs:206)
            │         fn withdraw
            │         [passed by the caller of why_cases::withdraw, which is not an e-block]
            └─ data: guard = 20  (tests/src/bin/why_cases.rs:207)
               │   let mut guard = account.lock().expect("not poisoned");
               └─ data: input 20  (tests/src/bin/why_cases.rs:207)
                  │   let mut guard = account.lock().expect("not poisoned");
                  │   [the value under mutex account, from the log]
                  └─ data via lock account: guard = 20  (tests/src/bin/why_cases.rs:209, bob why_cases::withdraw entered at event N)
                     │   *guard = new_balance;
                     └─ data: new_balance = 20  (tests/src/bin/why_cases.rs:208)
                        │   let new_balance = *guard - amount;
                        ├─ data: %2 amount = 80  (tests/src/bin/why_cases.rs:206)
                        │  │   fn withdraw
                        │  └─ data: amount = 80  (tests/src/bin/why_cases.rs:206)
                        │         fn withdraw
                        │         [passed by the caller of why_cases::withdraw, which is not an e-block]
                        └─ data: guard = 100  (tests/src/bin/why_cases.rs:207)
                           │   let mut guard = account.lock().expect("not poisoned");
                           └─ data: input 100  (tests/src/bin/why_cases.rs:207)
                              │   let mut guard = account.lock().expect("not poisoned");
                              │   [the value under mutex account, from the log]
                              └─ data via lock account: 100  (tests/src/bin/why_cases.rs:214, alice)
                                     mutex account created
                                     [the initial value of mutex account: nothing wrote it before]
        "#]],
    );
}

#[test]
fn a_value_carried_through_a_mutex_by_three_processes_is_followed_to_its_origin() {
    check(
        "relay",
        &["third", "taken", "--at", "take#1", "--depth", "12"],
        expect![[r#"
            why third taken (at take#1):
            taken = 42  (tests/src/bin/why_cases.rs:266, third why_cases::take entered at event N)
            │   let taken = *guard;
            └─ data: guard = 42  (tests/src/bin/why_cases.rs:265)
               │   let guard = slot.lock().expect("not poisoned");
               └─ data: input 42  (tests/src/bin/why_cases.rs:265)
                  │   let guard = slot.lock().expect("not poisoned");
                  │   [the value under mutex slot, from the log]
                  └─ data via lock slot: guard = 42  (tests/src/bin/why_cases.rs:259, second why_cases::add_on entered at event N)
                     │   *guard = seen + extra;
                     ├─ data: %2 extra = 2  (tests/src/bin/why_cases.rs:256)
                     │  │   fn add_on
                     │  └─ data: extra = 2  (tests/src/bin/why_cases.rs:256)
                     │         fn add_on
                     │         [passed by the caller of why_cases::add_on, which is not an e-block]
                     └─ data: seen = 40  (tests/src/bin/why_cases.rs:258)
                        │   let seen = *guard;
                        └─ data: guard = 40  (tests/src/bin/why_cases.rs:257)
                           │   let mut guard = slot.lock().expect("not poisoned");
                           └─ data: input 40  (tests/src/bin/why_cases.rs:257)
                              │   let mut guard = slot.lock().expect("not poisoned");
                              │   [the value under mutex slot, from the log]
                              └─ data via lock slot: guard = 40  (tests/src/bin/why_cases.rs:252, first why_cases::deposit entered at event N)
                                 │   *guard = seed * 10;
                                 └─ data: %2 seed = 4  (tests/src/bin/why_cases.rs:250)
                                    │   fn deposit
                                    └─ data: seed = 4  (tests/src/bin/why_cases.rs:250)
                                           fn deposit
                                           [passed by the caller of why_cases::deposit, which is not an e-block]
        "#]],
    );
}

#[test]
fn an_acquire_load_reaches_the_release_store_through_a_read_modify_write() {
    check(
        "flag",
        &["observer", "seen", "--at", "observe#1", "--depth", "12"],
        expect![[r#"
            why observer seen (at observe#1):
            seen = 17  (tests/src/bin/why_cases.rs:331, observer why_cases::observe entered at event N)
            │   let seen = ready.load(Ordering::Acquire);
            └─ data: input 17  (tests/src/bin/why_cases.rs:331)
               │   let seen = ready.load(Ordering::Acquire);
               │   [the value of atomic ready, from the log]
               └─ data via atomic ready: wrote 17  (tests/src/bin/why_cases.rs:324, forwarder why_cases::pass_on entered at event N)
                  │   let before = ready.fetch_add(extra, Ordering::AcqRel);
                  │   [read-modify-write of atomic ready]
                  ├─ data: %2 extra = 3  (tests/src/bin/why_cases.rs:323)
                  │  │   fn pass_on
                  │  └─ data: extra = 3  (tests/src/bin/why_cases.rs:323)
                  │         fn pass_on
                  │         [passed by the caller of why_cases::pass_on, which is not an e-block]
                  └─ data: input 14  (tests/src/bin/why_cases.rs:324)
                     │   let before = ready.fetch_add(extra, Ordering::AcqRel);
                     │   [the value of atomic ready, from the log]
                     └─ data via atomic ready: wrote 14  (tests/src/bin/why_cases.rs:318, publisher why_cases::publish entered at event N)
                        │   ready.store(value, Ordering::Release)
                        │   [stored into atomic ready]
                        └─ data: value = 14  (tests/src/bin/why_cases.rs:317)
                           │   let value = seed * 7;
                           └─ data: %2 seed = 2  (tests/src/bin/why_cases.rs:316)
                              │   fn publish
                              └─ data: seed = 2  (tests/src/bin/why_cases.rs:316)
                                     fn publish
                                     [passed by the caller of why_cases::publish, which is not an e-block]
        "#]],
    );
}

#[test]
fn a_write_outside_every_eblock_ends_the_chain_at_its_release_or_store() {
    check(
        "outside",
        &["reader", "%0", "--at", "read_both#1", "--depth", "6"],
        expect![[r#"
            why reader %0 (at read_both#1):
            %0 = 14  (tests/src/bin/why_cases.rs:365, reader why_cases::read_both entered at event N)
            │   low + high
            ├─ data: high = 9  (tests/src/bin/why_cases.rs:364)
            │  │   let high = *guard;
            │  └─ data: guard = 9  (tests/src/bin/why_cases.rs:363)
            │     │   let guard = shelf.lock().expect("not poisoned");
            │     └─ data: input 9  (tests/src/bin/why_cases.rs:363)
            │        │   let guard = shelf.lock().expect("not poisoned");
            │        │   [the value under mutex shelf, from the log]
            │        └─ data via lock shelf: 9  (tests/src/bin/why_cases.rs:372, main)
            │               released mutex shelf at event N
            │               [held by main outside e-blocks (acquisition 1): what it wrote under the lock is not traced]
            └─ data: low = 5  (tests/src/bin/why_cases.rs:362)
               │   let low = level.load(Ordering::Acquire) as i64;
               └─ data: input 5  (tests/src/bin/why_cases.rs:362)
                  │   let low = level.load(Ordering::Acquire) as i64;
                  │   [the value of atomic level, from the log]
                  └─ data via atomic level: 5  (tests/src/bin/why_cases.rs:371, main)
                         stored into atomic level at event N
                         [stored by main outside e-blocks (access 1): what it computed the value from is not traced]
        "#]],
    );
}

/// The `reads_from` edges of `ppd export --format json`: (writer, reader, object) by process
/// name.
fn reads_from_edges(work: &Path, dir: &Path) -> Vec<(String, String, String)> {
    let out = ppd(work, &["export", dir.to_str().unwrap(), "--format", "json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    // The head line holds processes, objects and edges; events follow, one per line.
    let head = text.lines().next().unwrap().trim_end_matches(',');
    let head: Value = serde_json::from_str(&format!("{}]}}", head)).unwrap();
    let name = |pid: &Value| {
        head["processes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["pid"] == *pid)
            .map(|p| p["name"].as_str().unwrap().to_owned())
            .unwrap()
    };
    head["edges"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "reads_from")
        .map(|e| {
            (
                name(&e["from"]["pid"]),
                name(&e["to"]["pid"]),
                e["object"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[test]
fn the_graph_and_the_export_link_each_atomic_read_to_the_other_process_write_it_read() {
    let work = tempfile::tempdir().unwrap();
    let dir = record_case(work.path(), "flag");
    let edge = |from: &str, to: &str| (from.to_owned(), to.to_owned(), "ready".to_owned());
    assert_eq!(
        reads_from_edges(work.path(), &dir),
        [
            edge("publisher", "forwarder"),
            edge("forwarder", "observer")
        ]
    );
    let out = ppd(
        work.path(),
        &["graph", dir.to_str().unwrap(), "--format", "svg"],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let svg = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        svg.matches(r#"<line class="sync-edge reads_from""#).count(),
        2,
        "{svg}"
    );
    // A store outside every e-block is a write like any other.
    let dir = record_case(work.path(), "outside");
    assert_eq!(
        reads_from_edges(work.path(), &dir),
        [("main".to_owned(), "reader".to_owned(), "level".to_owned())]
    );
}

#[test]
fn a_critical_section_whose_trace_lacks_its_release_is_not_guessed() {
    let work = tempfile::tempdir().unwrap();
    let dir = record_case(work.path(), "withdraw");
    let args = ["alice", "new_balance", "--at", "withdraw#1", "--depth", "6"];
    let (code, _, stderr) = why(work.path(), &dir, &args);
    assert_eq!(code, Some(0), "{stderr}");
    // Traces cached by a ppd that did not record releases: every release record becomes a
    // mark (the records keep their positions).
    let mut rewritten = 0;
    for entry in std::fs::read_dir(dir.join("cache/traces")).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        let stale = text.replace(r#""kind":"publish""#, r#""kind":"mark""#);
        rewritten += usize::from(stale != text);
        std::fs::write(&path, stale).unwrap();
    }
    assert!(rewritten > 0, "no trace had a release record");
    let (code, stdout, stderr) = why(work.path(), &dir, &args);
    assert_eq!(code, Some(0), "{stderr}");
    let stdout = without_event_numbers(&stdout);
    assert!(
        stdout.contains(
            "held by bob in why_cases::withdraw (acquisition 3), whose trace does not show the \
             release at event N: what it wrote under the lock is not known"
        ),
        "{stdout}"
    );
    assert!(!stdout.contains("*guard = new_balance"), "{stdout}");
}

#[test]
fn the_dot_answer_labels_a_shared_memory_edge_with_its_object() {
    let work = tempfile::tempdir().unwrap();
    let dir = record_case(work.path(), "flag");
    let (code, dot, stderr) = why(
        work.path(),
        &dir,
        &["observer", "seen", "--at", "observe#1", "--dot"],
    );
    assert_eq!(code, Some(0), "{stderr}");
    // The load read the forwarder's read-modify-write, which read the publisher's store.
    assert_eq!(
        dot.matches(r#"[style=bold color=purple label="atomic ready"]"#)
            .count(),
        2,
        "{dot}"
    );
}

// ---------------------------------------------------------------------------------------------
// The search and its rendering: bounded by the graph, numbered by the answer alone

/// `ppd why --json` with `args`, which must answer.
fn why_json(work: &Path, dir: &Path, args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.push("--json");
    let (code, stdout, stderr) = why(work, dir, &all);
    assert_eq!(code, Some(0), "{args:?}: {stderr}");
    serde_json::from_str(&stdout).unwrap()
}

/// How many dependences the farthest step of an answer is from its target, along the
/// shortest way.
fn chain_depth(steps: &[Value]) -> usize {
    let mut distance = vec![usize::MAX; steps.len()];
    distance[0] = 0;
    let mut queue = std::collections::VecDeque::from([0]);
    while let Some(id) = queue.pop_front() {
        for dep in steps[id]["deps"].as_array().unwrap() {
            let to = dep["step"].as_u64().unwrap() as usize;
            if distance[to] == usize::MAX {
                distance[to] = distance[id] + 1;
                queue.push_back(to);
            }
        }
    }
    assert!(
        distance.iter().all(|&d| d != usize::MAX),
        "a step no path reaches"
    );
    distance.into_iter().max().unwrap()
}

#[test]
fn a_depth_beyond_the_chain_answers_with_the_whole_chain_at_the_cost_of_the_chain() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("deep");
    let out = record_program(work.path(), &dir, &why_cases(), &["deep", "3000"], &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ask = |depth: String| why_json(work.path(), &dir, &["main", "%0", "--depth", &depth]);

    let whole = ask("10000".into());
    let steps = whole["steps"].as_array().unwrap();
    // Each of the 3000 rounds defines `sum` and `left` and tests the loop's condition.
    assert!(steps.len() > 3 * 3000, "{} steps", steps.len());
    assert!(
        steps.iter().all(|s| s["more"] == false),
        "the chain is followed to its ends"
    );
    for (i, step) in steps.iter().enumerate() {
        assert_eq!(
            step["id"], i,
            "steps are numbered by their place in the answer"
        );
    }
    // Every step's dependences were worked out once: what a step depends on that is already
    // explained is referenced, not explored again.
    assert_eq!(whole["work"]["followed"], steps.len());
    let depth = chain_depth(steps);
    assert!(depth > 3000, "the chain is {depth} steps deep");

    // One more than the chain's depth follows everything; one less does not reach its end.
    let exhausting = ask((depth + 1).to_string());
    assert_eq!(exhausting["steps"], whole["steps"]);
    let short = ask((depth - 1).to_string());
    assert!(short["steps"].as_array().unwrap().len() < steps.len());

    for beyond in [u32::MAX as u64 + 1, u64::MAX] {
        let answer = ask(beyond.to_string());
        assert_eq!(answer["steps"], whole["steps"], "--depth {beyond}");
        assert_eq!(answer["work"]["followed"], steps.len(), "--depth {beyond}");
        assert_eq!(answer["work"]["reexecuted"], 0, "the trace is cached");
    }

    // The tree and the graph show every step once, however deep the chain.
    let edges: usize = steps
        .iter()
        .map(|s| s["deps"].as_array().unwrap().len())
        .sum();
    let (code, text, stderr) = why(
        work.path(),
        &dir,
        &["main", "%0", "--depth", &u64::MAX.to_string()],
    );
    assert_eq!(code, Some(0), "{stderr}");
    let lines = text.lines().count();
    assert!(lines <= 4 * (steps.len() + edges), "{lines} lines");
    // Deep chains are continued in trees of their own rather than indented without end.
    let widest = text.lines().map(|l| l.chars().count()).max().unwrap();
    assert!(widest < 300, "a line of {widest} characters");
    // A step drawn in full is numbered where another refers to it, once.
    let tagged: Vec<usize> = numbers_after(&text, "[#");
    let tags: BTreeSet<usize> = tagged.iter().copied().collect();
    assert_eq!(tags.len(), tagged.len(), "a step is drawn twice");
    assert_eq!(numbers_after::<BTreeSet<usize>>(&text, "(see #"), tags);
    let (code, dot, stderr) = why(
        work.path(),
        &dir,
        &["main", "%0", "--depth", "10000", "--dot"],
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(dot.matches(" [shape=").count(), steps.len());
    // Besides the dependences, dotted edges give the execution order inside an instance.
    let flow = dot.matches("style=dotted").count();
    assert_eq!(dot.matches(" -> ").count() - flow, edges);
}

/// The numbers that follow `marker` in `text`, in order.
fn numbers_after<T: FromIterator<usize>>(text: &str, marker: &str) -> T {
    text.match_indices(marker)
        .map(|(i, _)| {
            let rest = &text[i + marker.len()..];
            let digits = rest
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(rest.len());
            rest[..digits].parse().unwrap()
        })
        .collect()
}

#[test]
fn step_numbers_are_the_same_whether_the_traces_were_cached_or_not() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("bank");
    let out = record_program(
        work.path(),
        &dir,
        &ppd_tests::example_bin("bank"),
        &["60"],
        &[],
    );
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let cache = dir.join("cache");
    for depth in ["4", "8", "12"] {
        let args = ["teller", "balance", "--depth", depth];
        std::fs::remove_dir_all(&cache).unwrap_or_default();
        let (code, cold, stderr) = why(work.path(), &dir, &args);
        assert_eq!(code, Some(0), "{stderr}");
        let (_, warm, _) = why(work.path(), &dir, &args);
        assert!(cold.contains("[#"), "no step is referenced: {cold}");
        assert_eq!(warm, cold, "--depth {depth}, warm against cold");

        std::fs::remove_dir_all(&cache).unwrap();
        let mut cold = why_json(work.path(), &dir, &args);
        let mut warm = why_json(work.path(), &dir, &args);
        // What the answers cost differs, and shows the cache was cold, then warm.
        assert!(
            cold["work"]["reexecuted"].as_u64().unwrap() > 0,
            "{}",
            cold["work"]
        );
        assert_eq!(warm["work"]["reexecuted"], 0, "{}", warm["work"]);
        for answer in [&mut cold, &mut warm] {
            answer.as_object_mut().unwrap().remove("work");
        }
        assert_eq!(
            serde_json::to_string_pretty(&warm).unwrap(),
            serde_json::to_string_pretty(&cold).unwrap(),
            "--depth {depth} --json, warm against cold"
        );
    }
}

#[test]
fn damaged_traces_and_registry_are_recomputed_and_replaced() {
    let work = tempfile::tempdir().unwrap();
    let dir = record_case(work.path(), "chain");
    let args = ["sink", "total", "--at", "absorb#2", "--depth", "9"];
    let (code, answer, stderr) = why(work.path(), &dir, &args);
    assert_eq!(code, Some(0), "{stderr}");
    let mut files = vec![dir.join("cache/eblocks.json")];
    for entry in std::fs::read_dir(dir.join("cache/traces")).unwrap() {
        files.push(entry.unwrap().path());
    }
    assert!(files.len() > 3, "{files:?}");
    let computed: Vec<Vec<u8>> = files.iter().map(|f| std::fs::read(f).unwrap()).collect();
    for (n, (file, bytes)) in files.iter().zip(&computed).enumerate() {
        let damaged = match n % 3 {
            // Cut short.
            0 => bytes[..bytes.len() / 2].to_vec(),
            // Bytes overwritten.
            1 => {
                let mut b = bytes.clone();
                for at in (0..b.len()).step_by(7) {
                    b[at] = 0xff;
                }
                b
            }
            // Emptied.
            _ => Vec::new(),
        };
        std::fs::write(file, damaged).unwrap();
    }
    let (code, again, stderr) = why(work.path(), &dir, &args);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(again, answer);
    for (file, bytes) in files.iter().zip(&computed) {
        assert_eq!(
            &std::fs::read(file).unwrap(),
            bytes,
            "{} is computed again and replaced",
            file.display()
        );
    }
}

#[test]
fn an_eblock_argument_that_is_not_serde_is_logged_by_its_debug_form_and_why_stops_at_it() {
    let work = tempfile::tempdir().unwrap();
    let dir = record_case(work.path(), "unlogged");
    let d = dir.to_str().unwrap();
    // The recording replays, every logged value matching: the mark is compared as logged.
    let out = ppd(work.path(), &["replay", d, "--verify"]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert!(
        said.contains("every event and logged value matched"),
        "{said}"
    );
    // The prelog holds the type and the Debug form in place of the value.
    let out = ppd(
        work.path(),
        &["replay", d, "--json", "--stop", "main: enter greet"],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let state: Value = serde_json::from_slice(&out.stdout).unwrap();
    let args = &state["processes"][0]["eblock_args"];
    assert_eq!(args["times"], 3, "{state:#}");
    assert_eq!(args["peer"]["$not_logged"], "why_cases::Peer", "{state:#}");
    assert_eq!(
        args["peer"]["debug"], r#"Peer { name: "client-7" }"#,
        "{state:#}"
    );
    // `why` cannot re-execute without the value, and says which one it lacks.
    let (code, stdout, stderr) = why(work.path(), &dir, &["main", "banner", "--at", "greet#1"]);
    assert_eq!(code, Some(1), "{stdout}{stderr}");
    assert!(
        stderr.contains(
            "the argument `peer` is a `why_cases::Peer`, which is not serde (Serialize and \
             Deserialize): it was not logged"
        ),
        "{stdout}{stderr}"
    );
}

#[test]
fn a_nested_eblocks_arguments_lead_to_the_callers_statements_across_a_socket_and_a_lock() {
    // `add(&mut guard, line.trim())`: `store` is the caller's `guard`, `line` its `line`, and
    // each goes on from there: the line to the bytes read from the client's write, the store
    // to the lock's earlier holder. (`trim` is called inside the call's arguments: what it was
    // passed is not taken for `add`'s.)
    check(
        "serve",
        &["server", "hits", "--depth", "9"],
        expect![[r#"
            why server hits (at the end of the run):
            hits = 39  (tests/src/bin/why_cases.rs:461, server why_cases::serve_one entered at event N)
            │   let hits = add(&mut guard, line.trim());
            └─ data: %0 of why_cases::add = 39  (tests/src/bin/why_cases.rs:461)
               │   let hits = add(&mut guard, line.trim());
               └─ data via call: %0 = 39  (tests/src/bin/why_cases.rs:473, server why_cases::add entered at event N)
                  │   store.hits
                  └─ data: store.hits = 39  (tests/src/bin/why_cases.rs:472)
                     │   store.hits += amount;
                     ├─ data: amount = 20  (tests/src/bin/why_cases.rs:467)
                     │  │   let amount: u64 = line.rsplit(' ').next().and_then(|n| n.parse().ok()).unwrap_or(0);
                     │  └─ data: %2 line = "PUT hits 20"  (tests/src/bin/why_cases.rs:466)
                     │     │   fn add
                     │     └─ data via parameter: line = "PUT hits 20\n"  (tests/src/bin/why_cases.rs:459, server why_cases::serve_one entered at event N)
                     │        │   let line = String::from_utf8_lossy(&bytes).to_string();
                     │        └─ data: bytes = [80, 85, 84, 32, 104, 105, 116, 115, 32, 50, 48, 10]  (tests/src/bin/why_cases.rs:458)
                     │           │   reader.read_exact(&mut bytes).expect("a request")
                     │           ├─ data: bytes = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]  (tests/src/bin/why_cases.rs:456)
                     │           │      let mut bytes = [0u8; REQUEST_LEN];
                     │           ├─ data: reader = tcp socket 127.0.0.1:PORT → 127.0.0.1:PORT  (tests/src/bin/why_cases.rs:457)
                     │           │  │   let mut reader = conn;
                     │           │  └─ data: %1 conn = tcp socket 127.0.0.1:PORT → 127.0.0.1:PORT  (tests/src/bin/why_cases.rs:454)
                     │           │     │   fn serve_one
                     │           │     └─ … (more: raise --depth)
                     │           └─ data: received "PUT hits 20\n"  (tests/src/bin/why_cases.rs:458)
                     │              │   reader.read_exact(&mut bytes).expect("a request")
                     │              │   [bytes 12..24 read from tcp socket 127.0.0.1:PORT → 127.0.0.1:PORT]
                     │              └─ data via message: sent  (tests/src/bin/why_cases.rs:448, client why_cases::request entered at event N)
                     │                 │   writer.write_all(line.as_bytes()).expect("the server")
                     │                 │   [bytes 12..24 written to tcp socket 127.0.0.1:PORT → 127.0.0.1:PORT]
                     │                 └─ … (more: raise --depth)
                     └─ data: %1 store.hits = 19  (tests/src/bin/why_cases.rs:466)
                        │   fn add
                        └─ data via parameter: guard.hits = ?  (tests/src/bin/why_cases.rs:460, server why_cases::serve_one entered at event N)
                           │   let mut guard = store.lock().expect("not poisoned");
                           └─ data: input {hits: 19}  (tests/src/bin/why_cases.rs:460)
                              │   let mut guard = store.lock().expect("not poisoned");
                              │   [the value under mutex store, from the log]
                              └─ data via lock store: guard = Store { hits: 19 }  (tests/src/bin/why_cases.rs:461, server why_cases::serve_one entered at event N)
                                 │   let hits = add(&mut guard, line.trim());
                                 └─ data: %0 of why_cases::add = 19  (tests/src/bin/why_cases.rs:461)
                                    │   let hits = add(&mut guard, line.trim());
                                    └─ data via call: %0 = 19  (tests/src/bin/why_cases.rs:473, server why_cases::add entered at event N)
                                       │   store.hits
                                       └─ … (more: raise --depth)
        "#]],
    );
}

/// The 1-based line of `tests/src/bin/why_cases.rs` that contains `needle`, once.
fn case_line(needle: &str) -> u64 {
    line_of(include_str!("../src/bin/why_cases.rs"), needle)
}

#[test]
fn a_receive_on_the_chain_that_could_have_taken_the_other_message_is_marked_as_a_race() {
    let work = tempfile::tempdir().unwrap();
    let dir = record_case(work.path(), "race");
    let d = dir.to_str().unwrap();
    let send_line = case_line("votes.send(cast)");
    let (code, json, stderr) = why(work.path(), &dir, &["counter", "total", "--json"]);
    assert_eq!(code, Some(0), "{stderr}");
    let answer: Value = serde_json::from_str(&json).unwrap();
    let steps = answer["steps"].as_array().unwrap();
    let receives: Vec<&Value> = steps.iter().filter(|s| s["record"] == "recv").collect();
    assert_eq!(receives.len(), 2, "{answer:#}");
    // The first vote received races with the other voter's, still in the channel; the second
    // could only take what was left.
    let first = receives
        .iter()
        .find(|s| s["text"].as_str().unwrap().contains("let first"))
        .unwrap();
    let took = first["note"].as_str().unwrap();
    let other = if took.ends_with("from left") {
        "right"
    } else {
        assert!(took.ends_with("from right"), "{took}");
        "left"
    };
    let races = answer["races"].as_array().unwrap();
    assert_eq!(races.len(), 1, "{answer:#}");
    let race = &races[0];
    assert_eq!(race["step"], first["id"], "{answer:#}");
    assert_eq!(race["channel"], "votes");
    assert_eq!(race["process"], other);
    assert_eq!(race["file"], "tests/src/bin/why_cases.rs");
    assert_eq!(race["line"], send_line);
    // The tree shows it under the receive, and `ppd races --for` lists only it.
    let (_, text, _) = why(work.path(), &dir, &["counter", "total"]);
    let message = race["message"].as_u64().unwrap();
    let line = format!(
        "[message race: could have received message {message} from {other}, sent at \
         tests/src/bin/why_cases.rs:{send_line} instead]"
    );
    assert_eq!(text.matches(&line).count(), 1, "{text}");
    let out = ppd(work.path(), &["races", d, "--for", "counter", "total"]);
    let listed = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{listed}");
    assert!(
        listed.starts_with(
            "message races on the chain of why counter total (at end): 1 of its 2 receives \
             could have taken another message\n"
        ),
        "{listed}"
    );
    assert_eq!(listed.matches("  message ").count(), 1, "{listed}");
    assert!(
        listed.contains(&format!(
            "  message {message} on votes from {other}, sent at tests/src/bin/why_cases.rs:{send_line}\n"
        )),
        "{listed}"
    );
}

#[test]
fn a_chain_whose_receives_had_one_sender_each_has_no_races() {
    let work = tempfile::tempdir().unwrap();
    let dir = record_case(work.path(), "chain");
    let out = ppd(
        work.path(),
        &[
            "races",
            dir.to_str().unwrap(),
            "--for",
            "sink",
            "total",
            "--json",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let listed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(listed["receives"].as_u64().unwrap() >= 1, "{listed:#}");
    assert_eq!(listed["races"], serde_json::json!([]), "{listed:#}");
}

fn producer_consumer_line(needle: &str) -> u64 {
    line_of(include_str!("../src/bin/producer_consumer.rs"), needle)
}

/// Records `producer_consumer`, whose threads' closures are no e-blocks.
fn record_producer_consumer(work: &Path) -> PathBuf {
    let dir = work.join("producer-consumer");
    let program = PathBuf::from(env!("CARGO_BIN_EXE_producer_consumer"));
    let out = record_program(work, &dir, &program, &[], &[]);
    assert!(
        out.status.success(),
        "recording failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    dir
}

#[test]
fn a_threads_closure_is_explained_with_no_annotation_down_to_the_producers_send() {
    let work = tempfile::tempdir().unwrap();
    let dir = record_producer_consumer(work.path());
    let file = "tests/src/bin/producer_consumer.rs";
    // The consumer's closure starts on the line above its first statement.
    let closure = format!(
        "consumer {{closure at {file}:{}}}",
        producer_consumer_line("let mut last = 0;") - 1
    );
    let (code, text, stderr) = why(work.path(), &dir, &["consumer", "last"]);
    assert_eq!(code, Some(0), "{stderr}");
    // The closure's statement, the e-block it called, the closure's statement that computed
    // the e-block's argument, the message it received, and the producer's send.
    let wanted = [
        format!(
            "last  ({file}:{}, {closure})",
            producer_consumer_line("last = scale(doubled);")
        ),
        format!(
            "data via call: %0 = {}",
            text.lines()
                .find_map(|l| l.split("%0 of producer_consumer::scale = ").nth(1))
                .and_then(|v| v.split_whitespace().next())
                .unwrap_or("?")
        ),
        format!(
            "data via parameter: doubled  ({file}:{}, {closure})",
            producer_consumer_line("let doubled = process(item);")
        ),
        "│   for item in rx".to_owned(),
        format!(
            "data via message: sent  ({file}:{}, producer-",
            producer_consumer_line("tx.send(item)")
        ),
        "let item = 100 * p + i;".to_owned(),
    ];
    let mut rest = text.as_str();
    for w in &wanted {
        let at = rest
            .find(w.as_str())
            .unwrap_or_else(|| panic!("{w:?} (in this order) in:\n{text}"));
        rest = &rest[at + w.len()..];
    }
    // `doubled` alone: through the receive, to the send.
    let (code, text, stderr) = why(work.path(), &dir, &["consumer", "doubled"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(text.contains("[message "), "{text}");
    assert!(text.contains(" from producer-"), "{text}");
    assert!(text.contains("data via message: sent"), "{text}");
    // The traced bodies are cached: asking again runs nothing.
    let (_, json, _) = why(work.path(), &dir, &["consumer", "last", "--json"]);
    let answer: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(answer["work"]["runs"], 0, "{answer:#}");
    // Compiled twice, the program still replays as recorded.
    let out = ppd(work.path(), &["replay", dir.to_str().unwrap(), "--verify"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_variable_of_mains_body_is_explained_with_no_annotation() {
    let work = tempfile::tempdir().unwrap();
    let dir = record_producer_consumer(work.path());
    let (code, text, stderr) = why(work.path(), &dir, &["main", "count"]);
    assert_eq!(code, Some(0), "{stderr}");
    let first = format!(
        "count  (tests/src/bin/producer_consumer.rs:{}, main producer_consumer::main)",
        producer_consumer_line("let (last, count) = consumer.join()")
    );
    assert_eq!(text.lines().nth(1), Some(first.as_str()), "{text}");
    // What the join got is what the consumer's closure returned, and that is followed there.
    let returned = include_str!("../src/bin/producer_consumer.rs")
        .lines()
        .position(|l| l.trim() == "(last, count)")
        .expect("the closure's result")
        + 1;
    let join = format!(
        "data via join: %0  (tests/src/bin/producer_consumer.rs:{returned}, consumer {{closure at"
    );
    assert!(text.contains(&join), "{join:?} in:\n{text}");
    assert!(text.contains("count += 1;"), "{text}");
    // A variable no body defines is refused, saying where it looked.
    let (code, _, stderr) = why(work.path(), &dir, &["consumer", "nothing"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("no e-block of consumer defines or takes `nothing`; nor does its body"),
        "{stderr}"
    );
}

#[test]
fn a_body_that_cannot_be_traced_is_said_so_and_not_replayed_again() {
    let work = tempfile::tempdir().unwrap();
    // `sink` is spawned by a helper that takes the closure: its body is not compiled twice.
    let dir = record_case(work.path(), "chain");
    let (code, _, first) = why(work.path(), &dir, &["sink", "nothing"]);
    assert_eq!(code, Some(2), "{first}");
    assert!(
        first.contains("nor does its body") || first.contains("its body could not be traced"),
        "{first}"
    );
    assert!(first.contains("it is not compiled for tracing"), "{first}");
    let failed: Vec<_> = std::fs::read_dir(dir.join("cache/traces"))
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with("-body.failed"))
        .collect();
    assert_eq!(failed.len(), 1, "the reason is kept");
    // Asked again with no program to run, the answer comes from what was kept.
    let (_, _, again) = why(
        work.path(),
        &dir,
        &["sink", "nothing", "--binary", "/nonexistent/why_cases"],
    );
    assert_eq!(again, first);
}
