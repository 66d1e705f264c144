//! `ppd check`: the static verdict on a `==` predicate, against what recorded runs show. An
//! *impossible* verdict must never be contradicted by a run (checked by recording the program
//! many times, with random delays, and evaluating the predicate over each run's consistent
//! global states with `ppd replay --stop`); a *possible* one is borne out by some run.

use std::path::{Path, PathBuf};

use ppd_tests::{output_text, ppd, record_program};

const SECTIONS: &str = "first: enter critical_first == second: enter critical_second";
const RUNS: usize = 20;

fn source(bin: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("src/bin")
        .join(format!("{bin}.rs"))
}

/// `ppd check --json PRED --source FILE`: the exit code and the report.
fn check(work: &Path, pred: &str, bin: &str) -> (Option<i32>, serde_json::Value) {
    let src = source(bin);
    let out = ppd(
        work,
        &["check", "--json", pred, "--source", src.to_str().unwrap()],
    );
    let (stdout, stderr) = output_text(&out);
    let report = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    (out.status.code(), report)
}

/// Records `program` `RUNS` times and says, for each run, whether `pred` held in some
/// consistent global state of it.
fn held_in_runs(work: &Path, program: &Path, pred: &str) -> Vec<bool> {
    (0..RUNS)
        .map(|i| {
            let dir = work.join(format!("run-{i}"));
            let rec = record_program(work, &dir, program, &[], &[]);
            assert!(rec.status.success(), "{}", output_text(&rec).1);
            // `--no-check`: evaluate the predicate over the run, whatever the source says.
            let out = ppd(
                work,
                &[
                    "replay",
                    dir.to_str().unwrap(),
                    "--stop",
                    pred,
                    "--no-check",
                ],
            );
            let (stdout, stderr) = output_text(&out);
            match out.status.code() {
                Some(0) => true,
                Some(1) if stderr.contains("the predicate never holds in this run") => {
                    // Both parts were reached: the run got as far as the predicate's events.
                    assert!(stderr.contains("every part held at some point"), "{stderr}");
                    false
                }
                code => panic!("replay exited with {code:?}: {stdout}{stderr}"),
            }
        })
        .collect()
}

#[test]
fn an_impossible_verdict_is_never_contradicted_by_a_run() {
    let work = tempfile::tempdir().unwrap();
    let (code, report) = check(work.path(), SECTIONS, "ordered_sections");
    assert_eq!(code, Some(1), "{report:#}");
    assert_eq!(report["verdict"], "impossible", "{report:#}");
    let chain: Vec<(String, u64)> = report["orderings"][0]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["what"].as_str().unwrap().to_owned(),
                p["line"].as_u64().unwrap(),
            )
        })
        .collect();
    let text = std::fs::read_to_string(source("ordered_sections")).unwrap();
    let line_of = |needle: &str| {
        text.lines()
            .position(|l| l.contains(needle))
            .map(|i| i as u64 + 1)
            .unwrap()
    };
    assert_eq!(
        chain,
        [
            (
                "exit critical_first".to_owned(),
                line_of("critical_first(delay);")
            ),
            (
                "send on `done_tx`/`done_rx`".to_owned(),
                line_of("done_tx.send(delay)")
            ),
            (
                "receive on `done_tx`/`done_rx`".to_owned(),
                line_of("done_rx.recv()")
            ),
            (
                "enter critical_second".to_owned(),
                line_of("critical_second(got);")
            ),
        ]
    );
    let program = PathBuf::from(env!("CARGO_BIN_EXE_ordered_sections"));
    let held = held_in_runs(work.path(), &program, SECTIONS);
    assert!(held.iter().all(|h| !h), "held in runs {held:?}");
    // Without `--no-check`, replay finds the recorded source and refuses before replaying.
    let dir = work.path().join("run-0");
    let out = ppd(
        work.path(),
        &["replay", dir.to_str().unwrap(), "--stop", SECTIONS],
    );
    let (stdout, stderr) = output_text(&out);
    assert_eq!(out.status.code(), Some(2), "{stdout}{stderr}");
    assert!(
        stderr.contains("the predicate cannot hold in any run of")
            && stderr.contains("ordered_sections.rs")
            && stderr.contains("send on `done_tx`/`done_rx`"),
        "{stderr}"
    );
    // And the same sections as events (`&`).
    let events = SECTIONS.replace(" == ", " & ");
    let out = ppd(
        work.path(),
        &["replay", dir.to_str().unwrap(), "--stop", &events],
    );
    let (stdout, stderr) = output_text(&out);
    assert_eq!(out.status.code(), Some(2), "{stdout}{stderr}");
    assert!(
        stderr.contains("the predicate cannot hold in any run of"),
        "{stderr}"
    );
    // So does halting the live program, before anything runs; `--no-check` records.
    let dir = work.path().join("live");
    let out = ppd(
        work.path(),
        &[
            "record",
            "-o",
            dir.to_str().unwrap(),
            "--stop",
            SECTIONS,
            "--",
            program.to_str().unwrap(),
        ],
    );
    let (stdout, stderr) = output_text(&out);
    assert_eq!(out.status.code(), Some(2), "{stdout}{stderr}");
    assert!(
        stderr.contains("the predicate cannot hold in any run of")
            && stderr.contains("--no-check records anyway"),
        "{stderr}"
    );
    assert!(!dir.exists(), "nothing is recorded");
    let out = ppd(
        work.path(),
        &[
            "record",
            "-o",
            dir.to_str().unwrap(),
            "--no-check",
            "--stop",
            SECTIONS,
            "--",
            program.to_str().unwrap(),
        ],
    );
    let (stdout, stderr) = output_text(&out);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(stderr.contains("never held in this run"), "{stderr}");
}

#[test]
fn a_possible_verdict_is_borne_out_by_some_run() {
    let work = tempfile::tempdir().unwrap();
    let (code, report) = check(work.path(), SECTIONS, "overlapping_sections");
    assert_eq!(code, Some(0), "{report:#}");
    assert_eq!(report["verdict"], "possible", "{report:#}");
    let program = PathBuf::from(env!("CARGO_BIN_EXE_overlapping_sections"));
    let held = held_in_runs(work.path(), &program, SECTIONS);
    assert!(held.iter().any(|&h| h), "held in no run");
    // A possible predicate replays as before, the check notwithstanding.
    let dir = work.path().join("run-0");
    let out = ppd(
        work.path(),
        &["replay", dir.to_str().unwrap(), "--stop", SECTIONS],
    );
    assert_eq!(
        out.status.code(),
        Some(if held[0] { 0 } else { 1 }),
        "{}",
        output_text(&out).1
    );
}

#[test]
fn an_example_whose_channels_live_in_structs_is_unknown() {
    let work = tempfile::tempdir().unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/token_ring.rs");
    let out = ppd(
        work.path(),
        &[
            "check",
            "node-0: mark holding if value > 0 == node-2: mark holding if value > 0",
            "--source",
            src.to_str().unwrap(),
        ],
    );
    let (stdout, stderr) = output_text(&out);
    assert_eq!(out.status.code(), Some(3), "{stdout}{stderr}");
    assert!(stdout.starts_with("unknown:"), "{stdout}");
    assert!(stdout.contains("token_ring.rs:"), "{stdout}");
}

/// A process of a scenario: its name, its marks, and whether it runs sections.
type Offers = (&'static str, &'static [&'static str], bool);

/// The processes of each scenario of `protocols` and the components each offers: its marks,
/// and `enter section` where it runs sections.
const PROTOCOLS: &[(&str, &[Offers])] = &[
    (
        "request_response",
        &[
            ("server", &["s_start", "s_got", "s_sent"], true),
            ("client", &["c_start", "c_sent", "c_got"], true),
            ("main", &["m_end"], false),
        ],
    ),
    (
        "conditional_ack",
        &[
            ("worker", &["w_got", "w_acked", "w_done"], false),
            (
                "boss",
                &["b_start", "b_sent", "b_acked", "b_acked_twice"],
                false,
            ),
        ],
    ),
    (
        "polling",
        &[
            ("poller", &["p_got"], true),
            ("sender", &["x_before", "x_after"], true),
        ],
    ),
    (
        "relay",
        &[
            ("a", &["a_before", "a_after"], true),
            ("b", &["b_start", "b_mid"], false),
            ("c", &["c_start", "c_got"], true),
        ],
    ),
    (
        "spawn_join",
        &[
            ("main", &["m_before", "m_during", "m_after"], true),
            ("child", &["k_inside"], true),
        ],
    ),
    (
        "stop_message",
        &[
            ("looper", &["l_item", "l_end"], false),
            ("ctl", &["c_sent_all", "c_done"], false),
        ],
    ),
    (
        "two_messages",
        &[
            ("producer", &["q_first", "q_between", "q_after"], true),
            ("consumer", &["r_start", "r_one", "r_two"], true),
        ],
    ),
];

/// Every `&` and `==` pair of components of two processes of one scenario of `protocols`,
/// decided by `ppd check`; each pair called impossible is replayed against every recorded
/// run and must never hold, each called possible against two runs, to count how many of them
/// a run bears out.
#[test]
fn impossible_verdicts_on_every_pair_of_a_protocol_are_never_contradicted() {
    const PROTOCOL_RUNS: usize = 8;
    let work = tempfile::tempdir().unwrap();
    let program = PathBuf::from(env!("CARGO_BIN_EXE_protocols"));
    let (mut impossible, mut possible, mut borne_out, mut unknown) = (0, 0, 0, 0);
    for (scenario, processes) in PROTOCOLS {
        let runs: Vec<PathBuf> = (0..PROTOCOL_RUNS)
            .map(|i| {
                let dir = work.path().join(format!("{scenario}-{i}"));
                let rec = record_program(work.path(), &dir, &program, &[scenario], &[]);
                assert!(rec.status.success(), "{}", output_text(&rec).1);
                dir
            })
            .collect();
        let components: Vec<(&str, String)> = processes
            .iter()
            .flat_map(|(p, marks, section)| {
                let marks = marks.iter().map(move |m| (*p, format!("{p}: mark {m}")));
                let section = section.then(|| (*p, format!("{p}: enter section")));
                marks.chain(section)
            })
            .collect();
        for (i, (p, x)) in components.iter().enumerate() {
            for (q, y) in &components[i + 1..] {
                if p == q {
                    continue;
                }
                for op in ["&", "=="] {
                    let pred = format!("{x} {op} {y}");
                    let (code, report) = check(work.path(), &pred, "protocols");
                    let (tried, must_not_hold) = match report["verdict"].as_str() {
                        Some("impossible") => {
                            assert_eq!(code, Some(1), "{pred}: {report:#}");
                            impossible += 1;
                            (&runs[..], true)
                        }
                        Some("possible") => {
                            assert_eq!(code, Some(0), "{pred}: {report:#}");
                            possible += 1;
                            (&runs[..2], false)
                        }
                        _ => {
                            assert_eq!(code, Some(3), "{pred}: {report:#}");
                            unknown += 1;
                            continue;
                        }
                    };
                    let mut held_somewhere = false;
                    for dir in tried {
                        let out = ppd(
                            work.path(),
                            &[
                                "replay",
                                dir.to_str().unwrap(),
                                "--stop",
                                &pred,
                                "--no-check",
                            ],
                        );
                        let (stdout, stderr) = output_text(&out);
                        match out.status.code() {
                            Some(0) => {
                                assert!(
                                    !must_not_hold,
                                    "{pred} is impossible by {report:#}, but held in {}: {stdout}",
                                    dir.display()
                                );
                                held_somewhere = true;
                            }
                            Some(1) if stderr.contains("never holds") => {}
                            code => panic!("{pred}: replay exited with {code:?}: {stderr}"),
                        }
                    }
                    borne_out += usize::from(held_somewhere);
                }
            }
        }
    }
    eprintln!(
        "{impossible} impossible (never held in {PROTOCOL_RUNS} runs each), {possible} possible \
         ({borne_out} held in one of two runs), {unknown} unknown"
    );
    assert!(impossible >= 10, "{impossible} impossible verdicts");
    assert!(borne_out > 0, "no possible verdict held in any run");
}

/// The README shows what `ppd check` prints for `ordered_sections`: it must be what it prints.
#[test]
fn the_readme_shows_what_check_prints() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let out = ppd(
        &root,
        &[
            "check",
            SECTIONS,
            "--source",
            "tests/src/bin/ordered_sections.rs",
        ],
    );
    let (stdout, stderr) = output_text(&out);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let shown = format!("      --source tests/src/bin/ordered_sections.rs\n{stdout}```");
    assert!(
        readme.contains(&shown),
        "the README does not show:\n{stdout}"
    );
}
