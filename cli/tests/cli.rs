//! The `ppd` command line itself: its commands, and its refusals of bad arguments. (The
//! commands at work on real recordings are tested in `ppd-tests`, which finds this binary where
//! these tests make cargo build it.)

use std::process::{Command, Output};

fn ppd(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ppd"))
        .args(args)
        .output()
        .expect("run ppd")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn help_lists_every_command() {
    let out = ppd(&["--help"]);
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    // The first word of each line of the `Commands:` section, up to the blank line after it.
    let listed: Vec<&str> = help
        .lines()
        .skip_while(|line| *line != "Commands:")
        .skip(1)
        .take_while(|line| !line.trim().is_empty())
        .filter_map(|line| line.split_whitespace().next())
        .collect();
    assert_eq!(
        listed,
        [
            "build",
            "record",
            "replay",
            "why",
            "info",
            "races",
            "check",
            "graph",
            "export",
            "analyze",
            "merge",
            "trust",
            "completions",
            "help"
        ],
        "{help}"
    );
}

#[test]
fn a_missing_recording_is_bad_input_named_in_the_error() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such-recording");
    for command in ["info", "races", "why"] {
        let mut args = vec![command, missing.to_str().unwrap()];
        if command == "why" {
            args.extend(["teller", "balance"]);
        }
        let out = ppd(&args);
        assert_eq!(out.status.code(), Some(2), "{command}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("no-such-recording"),
            "{command}: {}",
            stderr(&out)
        );
        assert!(
            !stderr(&out).contains("panicked"),
            "{command}: {}",
            stderr(&out)
        );
    }
}

#[test]
fn bad_arguments_are_refused_with_exit_code_2() {
    for args in [
        vec!["why"],
        vec!["why", "--depth", "many", "teller", "balance"],
        vec!["why", "teller", "balance", "--json", "--dot"],
        vec!["export", "--format", "xml"],
        vec!["frobnicate"],
    ] {
        let out = ppd(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
    }
}

#[test]
fn completions_are_written_for_each_shell_and_name_every_command() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let out = ppd(&["completions", shell]);
        assert_eq!(out.status.code(), Some(0), "{shell}: {}", stderr(&out));
        let script = String::from_utf8_lossy(&out.stdout);
        for command in ["record", "replay", "why", "races", "merge", "completions"] {
            assert!(
                script.contains(command),
                "{shell}: no {command} in\n{script}"
            );
        }
    }
    // bash's script defines its completion function and registers it for `ppd`.
    let bash = String::from_utf8_lossy(&ppd(&["completions", "bash"]).stdout).into_owned();
    assert!(
        bash.contains("complete -F _ppd") && bash.contains("--until-failure"),
        "{bash}"
    );
    let out = ppd(&["completions", "tcsh"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("invalid value 'tcsh'"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn check_refuses_bad_input_with_exit_code_2() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.rs");
    std::fs::write(&bad, "#[ppd::main]\nfn main() {\n    let x = ;\n}\n").unwrap();
    let bad = bad.to_str().unwrap();
    let cases: [(&[&str], &str); 4] = [
        (
            &["check", "a: mark x ==", "--source", bad],
            "bad predicate at column 13",
        ),
        (
            &["check", "a: mark x", "--source", bad],
            "decides `==` and `&` predicates",
        ),
        (
            &["check", "a: mark x == b: mark y", "--source", bad],
            "bad.rs:3:13: cannot parse",
        ),
        (
            &[
                "check",
                "a: mark x == b: mark y",
                "--source",
                dir.path().to_str().unwrap(),
            ],
            "bad.rs:3:13: cannot parse",
        ),
    ];
    for (args, message) in cases {
        let out = ppd(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(message), "{args:?}: {}", stderr(&out));
    }
    // Source nested deeper than the analysis reads is refused, not a crash.
    let deep = dir.path().join("deep.rs");
    let body = format!("{}1{}", "(".repeat(5000), ")".repeat(5000));
    std::fs::write(
        &deep,
        format!("#[ppd::main]\nfn main() {{\n    let x = {body};\n}}\n"),
    )
    .unwrap();
    let chain = dir.path().join("chain.rs");
    let body = vec!["1"; 20_000].join(" + ");
    std::fs::write(
        &chain,
        format!("#[ppd::main]\nfn main() {{\n    let x = {body};\n}}\n"),
    )
    .unwrap();
    for file in [&deep, &chain] {
        let out = ppd(&[
            "check",
            "a: mark x == b: mark y",
            "--source",
            file.to_str().unwrap(),
        ]);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(
            stderr(&out).contains(":3: nested deeper than 256 levels"),
            "{}",
            stderr(&out)
        );
    }
    std::fs::remove_file(&deep).unwrap();
    std::fs::remove_file(&chain).unwrap();
    std::fs::write(dir.path().join("bad.rs"), "fn unused() {}\n").unwrap();
    let out = ppd(&[
        "check",
        "a: mark x == b: mark y",
        "--source",
        dir.path().to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("no `#[ppd::main]` function"),
        "{}",
        stderr(&out)
    );
}
