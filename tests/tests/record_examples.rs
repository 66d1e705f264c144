//! Every example records under `ppd record`, and `ppd info` shows a complete recording with
//! every process the program started.

use ppd_tests::{info_json, ppd, record_example};

fn check(example: &str, processes: &[&str]) {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("rec");
    let out = record_example(work.path(), &dir, example, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("ppd: recorded"),
        "{example}: no summary line in {stderr}"
    );
    let info = info_json(work.path(), &dir);
    assert_eq!(info["complete"], true, "{example}: {info:#}");
    let names: Vec<&str> = info["processes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    for want in processes {
        assert!(
            names.contains(want),
            "{example}: no process {want} in {names:?}"
        );
    }
    for p in info["processes"].as_array().unwrap() {
        assert!(p["events"].as_u64().unwrap() >= 2, "{example}: {p:#}");
        assert_eq!(p["complete"], true, "{example}: {p:#}");
    }
    assert!(info["events"].as_u64().unwrap() > 0);
    assert!(info["bytes_compressed"].as_u64().unwrap() > 0);
}

#[test]
fn bank_records_every_process() {
    check(
        "bank",
        &[
            "main", "teller", "auditor", "client-0", "client-1", "client-2", "client-3",
        ],
    );
}

#[test]
fn token_ring_records_every_node() {
    check(
        "token_ring",
        &["main", "node-0", "node-1", "node-2", "node-3"],
    );
}

#[test]
fn pipeline_records_every_stage() {
    check("pipeline", &["main", "producer", "filter", "consumer"]);
}

#[test]
fn farm_records_the_manager_and_workers() {
    check(
        "farm",
        &["main", "manager", "worker-0", "worker-1", "worker-2"],
    );
}

#[test]
fn counters_record_every_incrementer() {
    check("counter", &["main", "incr-0", "incr-1", "incr-2", "incr-3"]);
    check(
        "racy_counter",
        &["main", "incr-0", "incr-1", "incr-2", "incr-3"],
    );
}

/// The recordings under `cwd/ppd-recordings`, by name (`latest` included, as the name it points
/// to after `->`).
fn listed(cwd: &std::path::Path) -> Vec<String> {
    let base = cwd.join("ppd-recordings");
    let Ok(entries) = std::fs::read_dir(&base) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .map(|e| {
            let e = e.unwrap();
            let name = e.file_name().to_string_lossy().into_owned();
            match std::fs::read_link(e.path()) {
                Ok(target) => format!("{name} -> {}", target.display()),
                Err(_) => name,
            }
        })
        .collect();
    names.sort();
    names
}

#[test]
fn a_program_that_cannot_run_or_is_not_a_ppd_program_is_bad_input_and_leaves_nothing() {
    let work = tempfile::tempdir().unwrap();
    // A first recording in ppd-recordings, which `latest` must go on naming.
    let bank = ppd_tests::example_bin("bank");
    let first = ppd(work.path(), &["record", "--", bank.to_str().unwrap()]);
    assert!(matches!(first.status.code(), Some(0 | 1)));
    assert_eq!(listed(work.path()), ["bank-1", "latest -> bank-1"]);
    for (program, says) in [
        ("./nosuch", "cannot run ./nosuch: No such file or directory"),
        (
            "/bin/true",
            "/bin/true exited with code 0 without writing a recording: it is not a ppd program",
        ),
        (
            "/bin/false",
            "/bin/false exited with code 1 without writing a recording",
        ),
    ] {
        let out = ppd(work.path(), &["record", "--", program]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{program}: {err}");
        assert!(err.contains(says), "{program}: {err}");
        assert_eq!(
            listed(work.path()),
            ["bank-1", "latest -> bank-1"],
            "{program} left a recording behind"
        );
    }
}

#[test]
fn until_failure_keeps_only_the_run_that_failed() {
    let work = tempfile::tempdir().unwrap();
    let bank = ppd_tests::example_bin("bank");
    // bank exits 1 in the runs whose balance goes negative, most of them.
    let out = ppd(
        work.path(),
        &["record", "--until-failure", "--", bank.to_str().unwrap()],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let run = err
        .lines()
        .find_map(|l| {
            l.strip_prefix("ppd: --until-failure: run ")?
                .split_once(" exited with code 1: this is its recording")
        })
        .map(|(n, _)| n.parse::<u32>().unwrap())
        .unwrap_or_else(|| panic!("{err}"));
    // Every passing run before it said so, and left nothing.
    assert_eq!(
        err.matches("exited with code 0; its recording is deleted")
            .count() as u32,
        run - 1,
        "{err}"
    );
    assert_eq!(listed(work.path()), ["bank-1", "latest -> bank-1"], "{err}");
    let info = info_json(work.path(), &work.path().join("ppd-recordings/bank-1"));
    assert_eq!(info["exit_code"], 1, "{info:#}");

    // A program that never fails: every run is tried, and the last one is kept.
    let counter = ppd_tests::example_bin("counter");
    let out = ppd(
        work.path(),
        &[
            "record",
            "--until-failure",
            "--tries",
            "3",
            "-o",
            "always",
            "--",
            counter.to_str().unwrap(),
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(err.matches("its recording is deleted").count(), 2, "{err}");
    assert!(
        err.contains("no run failed in 3; the recording of the last one is kept"),
        "{err}"
    );
    assert!(work.path().join("always/manifest.json").exists());
}
