//! Source-level debuggers at a halt: gdb and lldb attached to the halted program — the live one
//! (`ppd record --stop -i`) and a replay (`ppd replay --stop -i`) — select the thread of the
//! process the breakpoint is about, in its own code's frame, so its locals are the state the
//! breakpoint found; the program is still halted when they leave. On `live_halt`, whose
//! consumer marks a checkpoint every 1000 items. (gdb at a live halt is in `live_halt.rs`.)

use std::path::{Path, PathBuf};

use ppd_tests::{line_of, output_text, ppd_with_input, record_program};

fn program() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_live_halt"))
}

const SOURCE: &str = include_str!("../src/bin/live_halt.rs");

/// Whether `tool` (or, for lldb, a versioned `lldb-N` as distributions install it) is on
/// `PATH`; when it is not, the test is skipped with a notice, unless `require` (an
/// environment variable) is set, which makes its absence a failure.
fn have(tool: &str, require: &str) -> bool {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let found = std::env::split_paths(&path).any(|dir| {
        dir.join(tool).is_file()
            || std::fs::read_dir(&dir).is_ok_and(|entries| {
                entries.flatten().any(|e| {
                    e.file_name()
                        .to_string_lossy()
                        .strip_prefix(&format!("{tool}-"))
                        .is_some_and(|v| v.parse::<u32>().is_ok())
                })
            })
    });
    if !found {
        assert!(
            std::env::var_os(require).is_none(),
            "{require} is set and {tool} is missing"
        );
        eprintln!("SKIPPED: {tool} is not installed, so attaching it at a halt is not tested");
    }
    found
}

/// `ppd record -o DIR -i --stop PRED -- live_halt` with `commands` typed at its halts.
fn live(work: &Path, dir: &Path, pred: &str, commands: &[u8]) -> (String, String) {
    let program = program();
    let out = ppd_with_input(
        work,
        &[
            "record",
            "-o",
            dir.to_str().unwrap(),
            "-i",
            "--stop",
            pred,
            "--",
            program.to_str().unwrap(),
        ],
        commands,
    );
    let (stdout, stderr) = output_text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    (stdout, stderr)
}

#[test]
fn lldb_at_a_live_halt_is_in_the_consumers_frame_at_its_mark() {
    if !have("lldb", "PPD_REQUIRE_LLDB") {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("rec");
    let (stdout, stderr) = live(
        work.path(),
        &dir,
        "consumer: mark checkpoint",
        b"lldb --dry-run\nlldb -- -b -o 'frame info' -o 'frame variable n'\ndetach\n",
    );
    let mark = line_of(SOURCE, "ppd::mark!(\"checkpoint\", n);");
    assert!(
        stdout.contains(" -p "),
        "the dry run prints the command: {stdout}"
    );
    assert!(
        stdout.contains(&format!("live_halt.rs:{mark}")),
        "{stdout}\n{stderr}"
    );
    assert!(stdout.contains(") n = 1000"), "{stdout}");
    // lldb left the program halted; it ran on to its end after `detach`.
    assert!(stdout.contains("total = 4502248500"), "{stdout}");
}

#[test]
fn gdb_and_lldb_at_a_halted_replay_are_in_the_consumers_own_frame() {
    let gdb = have("gdb", "PPD_REQUIRE_GDB");
    let lldb = have("lldb", "PPD_REQUIRE_LLDB");
    if !gdb && !lldb {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("rec");
    let out = record_program(work.path(), &dir, &program(), &[], &[]);
    assert!(out.status.success(), "{}", output_text(&out).1);
    let mut commands = String::new();
    if gdb {
        commands.push_str("gdb -- -batch -ex frame -ex 'info locals'\n");
    }
    if lldb {
        commands.push_str("lldb -- -b -o 'frame info' -o 'frame variable total'\n");
    }
    // Both attach to the same held replay: the second finds it as the first left it.
    commands.push_str("print consumer\nquit\n");
    let out = ppd_with_input(
        work.path(),
        &[
            "replay",
            dir.to_str().unwrap(),
            "--stop",
            "consumer: mark checkpoint",
            "-i",
        ],
        commands.as_bytes(),
    );
    let (stdout, stderr) = output_text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    // Held after its mark, the consumer waits at its next operation, the loop's receive.
    let receive = line_of(SOURCE, "for (n, item) in rx.into_iter().enumerate() {");
    let at = format!("live_halt.rs:{receive}");
    let totals: Vec<&str> = stdout
        .lines()
        .filter_map(|l| l.split("total = ").nth(1))
        .collect();
    if gdb {
        assert!(
            stdout.contains(&format!("tests/src/bin/{at}")),
            "{stdout}\n{stderr}"
        );
    }
    if lldb {
        assert!(stdout.contains(&format!("{at}:")), "{stdout}\n{stderr}");
    }
    assert_eq!(
        totals.len(),
        usize::from(gdb) + usize::from(lldb),
        "{stdout}"
    );
    assert!(totals.windows(2).all(|w| w[0] == w[1]), "{totals:?}");
    // The replay is still held at the checkpoint after the debuggers left.
    assert!(stdout.contains("mark checkpoint = 1000"), "{stdout}");
}
