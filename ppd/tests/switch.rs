//! The `record` feature is the switch: without it the facade is std's and crossbeam's modules
//! and a program written against ppd builds, runs, and links no ppd runtime.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("ppd/ is in the workspace")
        .to_owned()
}

/// `cargo ARGS` in the workspace, building into a target directory of its own so that the
/// feature-off build neither waits for nor replaces the artifacts of the build running this.
fn cargo(args: &[&str]) -> Output {
    let target = workspace().join("target").join("switch-off");
    let out = Command::new(env!("CARGO"))
        .args(args)
        .current_dir(workspace())
        .env("CARGO_TARGET_DIR", target)
        .output()
        .expect("run cargo");
    assert!(
        out.status.success(),
        "cargo {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

#[test]
fn without_record_the_facade_links_no_ppd_runtime() {
    let tree = cargo(&[
        "tree",
        "--offline",
        "-p",
        "ppd",
        "--no-default-features",
        "-e",
        "normal",
        "--prefix",
        "none",
    ]);
    let tree = String::from_utf8_lossy(&tree.stdout);
    let crates: Vec<&str> = tree
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert!(crates.contains(&"crossbeam-channel"), "{tree}");
    for runtime in ["ppd-recorder", "ppd-replayer", "ppd-formats", "ppd-macros"] {
        assert!(!crates.contains(&runtime), "{runtime} is linked:\n{tree}");
    }
    // The same command sees the runtime when the feature is on, so the check can fail.
    let on = cargo(&[
        "tree",
        "--offline",
        "-p",
        "ppd",
        "-e",
        "normal",
        "--prefix",
        "none",
    ]);
    assert!(String::from_utf8_lossy(&on.stdout).contains("ppd-recorder"));
}

#[test]
fn without_record_a_ppd_program_runs_on_std() {
    let out = cargo(&[
        "run",
        "--offline",
        "-q",
        "-p",
        "ppd",
        "--no-default-features",
        "--example",
        "switched_off",
    ]);
    let printed = String::from_utf8_lossy(&out.stdout);
    for line in [
        "counter 3 sum 3 received [0, 10, 20] total 30 squares 9 clock true",
        "channel 1",
        "mutex type std::sync::",
        "thread type std::thread::",
        "map type std::collections::",
        "once 5 lazy 4 leader true hits [1] cell type std::sync::",
        "sync channel full true selected 2",
        "channel type crossbeam_channel::",
    ] {
        assert!(printed.contains(line), "{line:?} not in:\n{printed}");
    }
}
