//! `ppd why` end to end: real programs recorded, their e-blocks re-executed by the recorded
//! binary, the answers pinned as snapshots (`UPDATE_EXPECT=1` rewrites them).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use expect_test::{Expect, expect};
use ppd_flowback::why::index::ProcessIndex;
use ppd_flowback::why::store::{InstanceKey, Lookup, TraceStore};
use ppd_formats::Recording;
use ppd_tests::{ppd, record_example, record_program};
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
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("event ") {
        out.push_str(&rest[..i + 6]);
        rest = &rest[i + 6..];
        let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        if digits > 0 {
            out.push('N');
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
    expected.assert_eq(&without_event_numbers(&stdout));
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
            total = 26  (tests/src/bin/why_cases.rs:39, sink why_cases::absorb entered at event N)
            │   *total += value;
            ├─ data: %2 total = 0  (tests/src/bin/why_cases.rs:35)
            │  │   fn absorb
            │  └─ data: total = 0  (tests/src/bin/why_cases.rs:35)
            │         fn absorb
            │         [passed by the caller of why_cases::absorb, which is not an e-block]
            ├─ data: value = 26  (tests/src/bin/why_cases.rs:36)
            │  │   let Ok(value) = input.recv() else { return false; };
            │  └─ [#5] data: received 26  (tests/src/bin/why_cases.rs:36)
            │     │   let Ok(value) = input.recv() else { return false; };
            │     │   [message 1 from doubler]
            │     └─ data via message: sent 26  (tests/src/bin/why_cases.rs:30, doubler why_cases::double entered at event N)
            │        │   out.send(doubled).expect("sink")
            │        │   [message 1 on channel doubled]
            │        ├─ data: doubled = 26  (tests/src/bin/why_cases.rs:29)
            │        │  │   let doubled = value * 2;
            │        │  └─ data: value = 13  (tests/src/bin/why_cases.rs:26)
            │        │     │   let Ok(value) = input.recv() else { return false; };
            │        │     └─ data: received 13  (see #11)
            │        └─ control: condition = true  (tests/src/bin/why_cases.rs:26)
            │           │   let Ok(value) = input.recv() else { return false; };
            │           └─ [#11] data: received 13  (tests/src/bin/why_cases.rs:26)
            │              │   let Ok(value) = input.recv() else { return false; };
            │              │   [message 1 from source]
            │              └─ data via message: sent 13  (tests/src/bin/why_cases.rs:21, source why_cases::produce entered at event N)
            │                 │   out.send(reading).expect("doubler")
            │                 │   [message 1 on channel readings]
            │                 └─ data: reading = 13  (tests/src/bin/why_cases.rs:20)
            │                    │   let reading = seed * 10 + 3;
            │                    └─ data: %1 seed = 1  (tests/src/bin/why_cases.rs:19)
            │                       │   fn produce
            │                       └─ data: seed = 1  (tests/src/bin/why_cases.rs:19)
            │                              fn produce
            │                              [passed by the caller of why_cases::produce, which is not an e-block]
            └─ control: condition = true  (tests/src/bin/why_cases.rs:36)
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
            report.total = 27  (tests/src/bin/why_cases.rs:93, main why_cases::summarize entered at event N)
            │   report.total = top + bonus;
            ├─ data: bonus = 18  (tests/src/bin/why_cases.rs:92)
            │  │   let bonus = if top > 5 { top * 2 } else { 0 };
            │  └─ data: top = 9  (see #2)
            └─ [#2] data: top = 9  (tests/src/bin/why_cases.rs:90)
               │   let top = best_of(&values);
               └─ data: %0 of why_cases::best_of = 9  (tests/src/bin/why_cases.rs:90)
                  │   let top = best_of(&values);
                  └─ data via call: %0 = 9  (tests/src/bin/why_cases.rs:85, main why_cases::best_of entered at event N)
                     │   best
                     └─ data: best = 9  (tests/src/bin/why_cases.rs:82)
                        │   best = *v;
                        ├─ data: v = 9  (tests/src/bin/why_cases.rs:80)
                        │  │   for v in values
                        │  └─ … (more: raise --depth)
                        └─ control: condition = true  (tests/src/bin/why_cases.rs:81)
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
            steps = 8  (tests/src/bin/why_cases.rs:113, main why_cases::collatz_steps entered at event N)
            │   steps += 1;
            ├─ data: steps = 7  (tests/src/bin/why_cases.rs:113)
            │  │   steps += 1;
            │  ├─ data: steps = 6  (tests/src/bin/why_cases.rs:113)
            │  │  │   steps += 1;
            │  │  ├─ data: steps = 5  (tests/src/bin/why_cases.rs:113)
            │  │  │  │   steps += 1;
            │  │  │  └─ … (more: raise --depth)
            │  │  └─ control: condition = true  (tests/src/bin/why_cases.rs:107)
            │  │     │   while left > 1
            │  │     └─ … (more: raise --depth)
            │  └─ control: condition = true  (tests/src/bin/why_cases.rs:107)
            │     │   while left > 1
            │     └─ [#8] data: left = 4  (tests/src/bin/why_cases.rs:109)
            │        │   left /= 2;
            │        └─ … (more: raise --depth)
            └─ control: condition = true  (tests/src/bin/why_cases.rs:107)
               │   while left > 1
               └─ data: left = 2  (tests/src/bin/why_cases.rs:109)
                  │   left /= 2;
                  ├─ data: left = 4  (see #8)
                  └─ control: condition = true  (tests/src/bin/why_cases.rs:108)
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
            %0 = "negative"  (tests/src/bin/why_cases.rs:125, main why_cases::classify entered at event N)
            │   return "negative".into();
            └─ control: condition = true  (tests/src/bin/why_cases.rs:124)
               │   if x < 0
               └─ data: %1 x = -3  (tests/src/bin/why_cases.rs:123)
                  │   fn classify
                  └─ data: x = -3  (tests/src/bin/why_cases.rs:123)
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
            kind = "odd"  (tests/src/bin/why_cases.rs:127, main why_cases::classify entered at event N)
            │   let kind = if x % 2 == 0 { "even" } else { "odd" };
            ├─ data: %1 x = 7  (tests/src/bin/why_cases.rs:123)
            │  │   fn classify
            │  └─ … (more: raise --depth)
            └─ control: condition = false  (tests/src/bin/why_cases.rs:124)
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
    let root = &answer["root"];
    for field in ["process", "var", "value", "file", "line", "kind", "deps"] {
        assert!(
            root.get(field).is_some(),
            "the root has no `{field}`: {root:#}"
        );
    }
    assert_eq!(root["process"], "sink");
    assert_eq!(root["value"], "72");
    let mut processes = BTreeSet::new();
    let mut sources = Vec::new();
    walk(root, &mut |n| {
        processes.insert(n["process"].as_str().unwrap().to_owned());
        if n["var"] == "reading" {
            sources.push(n["value"].as_str().unwrap().to_owned());
        }
    });
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

fn walk(node: &Value, f: &mut impl FnMut(&Value)) {
    f(node);
    for d in node["deps"].as_array().unwrap() {
        walk(d, f);
    }
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
fn a_halted_replay_shows_restored_state_and_is_a_point_to_ask_at() {
    let work = tempfile::tempdir().unwrap();
    let dir = record_case(work.path(), "chain");
    let mut child = std::process::Command::new(ppd_tests::ppd_bin())
        .args([
            "replay",
            dir.to_str().unwrap(),
            "--stop",
            "sink: exit absorb",
            "-i",
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"restore sink\nquit\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
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
        answer["root"]["value"], "26",
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

/// Re-executes every e-block instance of every process of a recording; returns the leaks.
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
    (keys.len(), leaks)
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
        let (instances, leaks) = leaks_of_every_instance(&dir);
        assert!(
            instances > 10,
            "{example} ran only {instances} e-block instances"
        );
        assert!(leaks.is_empty(), "{example}: {leaks:#?}");
    }
    for case in ["chain", "nested", "loops", "early", "shared"] {
        let dir = record_case(work.path(), case);
        let (_, leaks) = leaks_of_every_instance(&dir);
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
    let now: i64 = answer["root"]["value"].as_str().unwrap().parse().unwrap();
    assert!((6..=9).contains(&now), "{now}");
    let mut locked = Vec::new();
    find(
        &answer["root"],
        &|n| n["record"] == "input" && n["note"].as_str().unwrap_or("").contains("under lock"),
        &mut locked,
    );
    assert_eq!(locked.len(), 1, "{stdout}");
    let found: i64 = locked[0]["value"].as_str().unwrap().parse().unwrap();
    assert_eq!(found + 2, now, "the value found under the lock, plus 2");
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

/// The steps of an answer that satisfy `f`.
fn find<'a>(node: &'a Value, f: &impl Fn(&Value) -> bool, out: &mut Vec<&'a Value>) {
    if f(node) {
        out.push(node);
    }
    for d in node["deps"].as_array().unwrap() {
        find(d, f, out);
    }
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
    let root = &answer["root"];
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
    let mut withdrawals = Vec::new();
    find(
        root,
        &|n| {
            n["via"] == "message"
                && n["record"] == "send"
                && n["value"].as_str().unwrap().starts_with("Withdraw")
        },
        &mut withdrawals,
    );
    let clients: BTreeSet<&str> = withdrawals
        .iter()
        .map(|n| n["process"].as_str().unwrap())
        .collect();
    assert!(
        clients.iter().all(|c| c.starts_with("client-")),
        "{clients:?}"
    );
    // ... which sent it because the teller's check approved it (a control dependence on the
    // approval it received)...
    let mut approvals = Vec::new();
    find(
        root,
        &|n| n["kind"] == "control" && n["text"].as_str().unwrap().contains("Approved(true)"),
        &mut approvals,
    );
    assert!(
        !approvals.is_empty(),
        "no control dependence on an approval:\n{stdout}"
    );
    let mut checks = Vec::new();
    find(
        root,
        &|n| n["var"] == "covered" && n["value"] == "true",
        &mut checks,
    );
    assert!(
        !checks.is_empty(),
        "the teller's check is not in the chain:\n{stdout}"
    );
    // ... and the balance it was taken from had been lowered by the other client of the
    // account since that check: the last write of the balance before the withdrawal served a
    // request of the other client, whichever client went negative.
    let deps = root["deps"].as_array().unwrap();
    let dep = |var: &dyn Fn(&str) -> bool| {
        deps.iter()
            .find(|d| var(d["var"].as_str().unwrap_or("")))
            .unwrap_or_else(|| panic!("no such dependence of the root:\n{stdout}"))
    };
    // The request's own fields (each shown in full once) lead to the withdrawing client.
    let mut direct = Vec::new();
    for var in ["account", "amount"] {
        find(
            dep(&|v| v == var),
            &|n| {
                n["via"] == "message"
                    && n["record"] == "send"
                    && n["value"].as_str().unwrap().starts_with("Withdraw")
            },
            &mut direct,
        );
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
    let mut lowered = Vec::new();
    find(
        dep(&|v| v.ends_with(&format!("bank.accounts[{account}].balance"))),
        &|n| n["via"] == "message" && n["record"] == "send" && n["process"] == other.as_str(),
        &mut lowered,
    );
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
