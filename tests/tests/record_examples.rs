//! Every example records under `ppd record`, and `ppd info` shows a complete recording with
//! every process the program started.

use ppd_tests::{info_json, record_example};

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
