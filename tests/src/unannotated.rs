//! Scratch crates of programs with no `#[ppd::eblock]`, for `ppd build`'s automatic e-blocks:
//! the examples with every `#[ppd::eblock]` line blanked (so every other line keeps its number)
//! and the programs of `tests/unannotated/`, written once under a directory of the caller's and
//! built there.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// An example's source with each `#[ppd::eblock]` / `#[ppd::eblocks]` line made empty.
pub fn without_eblocks(source: &str) -> String {
    source
        .lines()
        .map(|line| match line.trim() {
            "#[ppd::eblock]" | "#[ppd::eblocks]" => "",
            _ => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

/// Writes `text` unless the file holds it already, so cargo's up-to-date check holds.
fn write_if_changed(path: &Path, text: &str) {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("a scratch directory");
    }
    if std::fs::read_to_string(path).ok().as_deref() != Some(text) {
        std::fs::write(path, text).expect("a scratch file");
    }
}

/// Writes the scratch crate at `root`: example `NAME` is `examples/NAME.rs` without its
/// e-blocks, `NAME_written` (with `written`) the example as it is, and each program of
/// `tests/unannotated/` is a binary of its own name, `src/bin/NAME.rs`.
pub fn write_crate(root: &Path, examples: &[&str], written: bool) {
    let mut manifest = format!(
        "[workspace]\n\n[package]\nname = \"unannotated\"\nversion = \"0.0.0\"\n\
         edition = \"2024\"\npublish = false\n\n[dependencies]\n\
         ppd = {{ path = {:?} }}\nserde = {{ version = \"1\", features = [\"derive\"] }}\n\n\
         [profile.release]\ndebug = 1\n",
        workspace().join("ppd").to_str().expect("a UTF-8 path")
    );
    for example in examples {
        let source = std::fs::read_to_string(workspace().join(format!("examples/{example}.rs")))
            .expect("an example's source");
        write_if_changed(
            &root.join(format!("examples/{example}.rs")),
            &without_eblocks(&source),
        );
        manifest.push_str(&format!(
            "\n[[example]]\nname = \"{example}\"\npath = \"examples/{example}.rs\"\n"
        ));
        if written {
            write_if_changed(&root.join(format!("written/{example}.rs")), &source);
            manifest.push_str(&format!(
                "\n[[example]]\nname = \"{example}_written\"\npath = \"written/{example}.rs\"\n"
            ));
        }
    }
    let programs = std::fs::read_dir(workspace().join("tests/unannotated")).expect("the programs");
    for entry in programs.flatten() {
        let path = entry.path();
        let text = std::fs::read_to_string(&path).expect("a program's source");
        let name = path.file_name().expect("a file name");
        write_if_changed(&root.join("src/bin").join(name), &text);
    }
    write_if_changed(&root.join("Cargo.toml"), &manifest);
    if !root.join("Cargo.lock").exists() {
        std::fs::copy(workspace().join("Cargo.lock"), root.join("Cargo.lock"))
            .expect("the workspace's Cargo.lock");
    }
}

/// `PROGRAM ARGS` in the scratch crate, with the calling build's environment taken away.
fn in_crate(program: &Path, root: &Path, args: &[&str]) -> Output {
    Command::new(program)
        .args(args)
        .current_dir(root)
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("CARGO_BUILD_TARGET_DIR")
        .output()
        .expect("run the build")
}

/// `ppd build ARGS` in the scratch crate (into `target/ppd`).
pub fn ppd_build(ppd: &Path, root: &Path, args: &[&str]) -> Output {
    let mut all = vec!["build"];
    all.extend_from_slice(args);
    in_crate(ppd, root, &all)
}

/// `cargo build ARGS` in the scratch crate (into `target`).
pub fn cargo_build(root: &Path, args: &[&str]) -> Output {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut all = vec!["build"];
    all.extend_from_slice(args);
    in_crate(Path::new(&cargo), root, &all)
}
