//! Objects are named in reports by the names they were created with: given with `named`, or
//! the variable `#[ppd::main]` bound them to.

use std::path::PathBuf;

use ppd_tests::{ppd, record_program};
use serde_json::Value;

#[test]
fn objects_bound_by_let_in_main_are_named_after_their_variables() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("named");
    let program = PathBuf::from(env!("CARGO_BIN_EXE_named_objects"));
    let out = record_program(work.path(), &dir, &program, &[], &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let out = ppd(
        work.path(),
        &["export", dir.to_str().unwrap(), "--format", "json"],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let head = text.lines().next().unwrap().trim_end_matches(',');
    let head: Value = serde_json::from_str(&format!("{head}]}}")).unwrap();
    let names: Vec<Option<&str>> = head["objects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["name"].as_str())
        .collect();
    assert_eq!(
        names,
        [
            Some("account"),
            Some("hits"),
            Some("ledger"),
            Some("pair"),
            None
        ],
        "{head}"
    );

    let out = ppd(work.path(), &["races", dir.to_str().unwrap()]);
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(
        report.contains("data race on hits (atomic #0.1)"),
        "{report}"
    );
}
