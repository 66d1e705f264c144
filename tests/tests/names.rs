//! Names as the user wrote them: objects are named in reports by the names they were created
//! with (given with `named`, or the variable a `let` bound them to, in `#[ppd::main]`, its
//! closures and e-blocks), values holding them as those objects; processes a name leaves
//! ambiguous are listed by the names that tell them apart; a recording given where a process
//! was expected is taken for what it is.

use std::path::{Path, PathBuf};

use ppd_tests::{output_text, ppd, record_program};
use serde_json::Value;

#[test]
fn objects_bound_by_let_are_named_after_their_variables_in_main_its_threads_and_eblocks() {
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
    let objects = head["objects"].as_array().unwrap();
    let mut names: Vec<&str> = objects.iter().filter_map(|o| o["name"].as_str()).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "account",
            "hits",
            "ledger",
            "left",
            "lock",
            "pair.0",
            "pair.1",
            "right",
            "scratch",
            "sums_tx/sums_rx",
            "token",
            "tx/rx",
        ],
        "{head}"
    );
    // The mutex the worker's closure makes without a `let` is not named after `worker`.
    let unnamed: Vec<&Value> = objects.iter().filter(|o| o["name"].is_null()).collect();
    assert_eq!(unnamed.len(), 1, "{head}");
    assert_eq!(unnamed[0]["kind"], "mutex", "{head}");
    // Bound in main, the objects are main's, whoever used them first.
    let id_of = |name: &str| {
        objects
            .iter()
            .find(|o| o["name"] == name)
            .and_then(|o| o["id"].as_str())
            .unwrap_or_default()
            .to_owned()
    };
    assert_eq!(id_of("account"), "#0.0", "{head}");
    assert_eq!(id_of("hits"), "#0.1", "{head}");

    let out = ppd(work.path(), &["races", dir.to_str().unwrap()]);
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(
        report.contains("data race on hits (atomic #0.1)"),
        "{report}"
    );

    // The mutex handed to the e-block is shown by the name its `let` gave it.
    let out = ppd(
        work.path(),
        &["why", dir.to_str().unwrap(), "main", "--state"],
    );
    let (state, said) = output_text(&out);
    assert!(out.status.success(), "{said}");
    assert!(state.contains("first = mutex pair.0"), "{state}");
}

/// Records the README's replicated store (three OS processes) into `./ppd-recordings` of
/// `work`, as `ppd record -- sh examples/kvstore.sh` does.
fn record_kvstore(work: &Path) {
    let launcher = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/kvstore.sh");
    let kvstore = ppd_tests::example_bin("kvstore");
    let out = ppd(
        work,
        &[
            "record",
            "--",
            "sh",
            launcher.to_str().unwrap(),
            kvstore.to_str().unwrap(),
        ],
    );
    let (printed, said) = output_text(&out);
    assert_eq!(
        out.status.code(),
        Some(1),
        "the backup is stale: {printed}{said}"
    );
}

/// `ppd ARGS` in `work`, expected to refuse its input: what it said.
fn refused(work: &Path, args: &[&str]) -> String {
    let out = ppd(work, args);
    let (printed, said) = output_text(&out);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {printed}{said}");
    said
}

#[test]
fn processes_and_recordings_are_taken_by_the_names_the_user_types() {
    let work = tempfile::tempdir().unwrap();
    record_kvstore(work.path());
    let rec = "ppd-recordings/kvstore-1";

    // Each node has a `main`: they are listed by the names that tell them apart.
    let said = refused(work.path(), &["why", "main", "x"]);
    assert!(
        said.contains(
            "`main` names 3 processes (backup/main (p0), client/main (p1.0), primary/main \
             (p2.0)); name one of them"
        ),
        "{said}"
    );

    // A recording first and no variable: the variable is what is missing.
    for first in [rec, "latest"] {
        let said = refused(work.path(), &["why", first, "client/main"]);
        assert!(
            said.contains("missing VAR: ppd why [REC] PROCESS VAR"),
            "{first}: {said}"
        );
        assert!(
            said.contains(&format!("{first} is the recording")),
            "{said}"
        );
    }
    let said = refused(work.path(), &["why", "latest"]);
    assert!(said.contains("missing PROCESS and VAR"), "{said}");
    let said = refused(work.path(), &["why", "--state", rec]);
    assert!(said.contains("missing PROCESS"), "{said}");
    let said = refused(work.path(), &["why", "client/main"]);
    assert!(said.contains("missing VAR"), "{said}");

    // A node or a process where a recording goes is named as what it is.
    let said = refused(work.path(), &["replay", "backup"]);
    assert!(
        said.contains("`backup` is a node of the newest recording"),
        "{said}"
    );
    let said = refused(work.path(), &["races", "client/main"]);
    assert!(
        said.contains("`client/main` is a process of the newest recording"),
        "{said}"
    );

    // `latest` is a recording wherever one goes; the client's socket, an e-block's argument,
    // is shown as the socket, by the id the recording gives it (the client is node 1).
    let out = ppd(
        work.path(),
        &[
            "why",
            "latest",
            "client/main",
            "--state",
            "--at",
            "count#1",
            "--json",
        ],
    );
    let (printed, said) = output_text(&out);
    assert!(out.status.success(), "{said}");
    let state: Value = serde_json::from_str(&printed).unwrap();
    let primary = state["values"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == "primary")
        .unwrap_or_else(|| panic!("{state:#}"));
    assert!(
        primary["value"]
            .as_str()
            .unwrap()
            .starts_with("tcp socket 127.0.0.1:"),
        "{primary:#}"
    );
    assert_eq!(primary["json"]["id"], "#1.0.0", "{primary:#}");
}
