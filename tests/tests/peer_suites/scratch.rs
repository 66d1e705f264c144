//! The scratch workspace the suites are built in: a package per suite depending on this
//! workspace's `ppd`, built once, offline, with this workspace's `Cargo.lock`.

use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::suite::{Suite, SuiteError, workspace_root};

/// A built test binary: which suite and file it is.
pub(crate) struct Binary {
    /// The suite's name.
    pub(crate) suite: &'static str,
    /// The test file's stem.
    pub(crate) file: String,
    /// The executable.
    pub(crate) path: PathBuf,
}

impl fmt::Debug for Binary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.suite, self.file)
    }
}

fn write(path: &Path, text: &str) -> Result<(), SuiteError> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| SuiteError::new(dir, e))?;
    }
    // Leave an unchanged file alone, so that cargo rebuilds only what changed.
    if std::fs::read_to_string(path).is_ok_and(|old| old == text) {
        return Ok(());
    }
    std::fs::write(path, text).map_err(|e| SuiteError::new(path, e))
}

fn toml_path(path: &Path) -> String {
    format!("{:?}", path.display().to_string())
}

/// Writes the scratch workspace and builds every suite's tests; the binaries, by suite and
/// file.
pub(crate) fn build(suites: &[Suite]) -> Result<Vec<Binary>, SuiteError> {
    let root = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("peer-suites");
    let ppd = toml_path(&workspace_root().join("ppd"));
    let members: Vec<String> = suites.iter().map(|s| format!("{:?}", s.name)).collect();
    write(
        &root.join("Cargo.toml"),
        &format!(
            "[workspace]\nresolver = \"2\"\nmembers = [{}, \"logged-rand\"]\n\n\
             # ppd and its dependencies optimized, the tests not: a recorded stress test spawns\n\
             # tens of thousands of threads.\n\
             [profile.dev.package.\"*\"]\nopt-level = 2\ndebug = false\n",
            members.join(", ")
        ),
    )?;
    let lock = std::fs::read_to_string(workspace_root().join("Cargo.lock"))
        .map_err(|e| SuiteError::new(&workspace_root().join("Cargo.lock"), e))?;
    if !root.join("Cargo.lock").exists() {
        write(&root.join("Cargo.lock"), &lock)?;
    }
    write(
        &root.join("logged-rand/Cargo.toml"),
        &format!(
            "[package]\nname = \"logged-rand\"\nversion = \"0.0.0\"\nedition = \"2024\"\n\
             publish = false\n\n[lib]\npath = {}\n\n[dependencies]\nppd = {{ path = {ppd} }}\n",
            toml_path(&workspace_root().join("tests/conformance/logged_rand/lib.rs"))
        ),
    )?;
    for suite in suites {
        let dir = root.join(suite.name);
        let rand = if suite.uses_rand {
            "rand = { path = \"../logged-rand\", package = \"logged-rand\" }\n"
        } else {
            ""
        };
        write(
            &dir.join("Cargo.toml"),
            &format!(
                "[package]\nname = {:?}\nversion = \"0.0.0\"\nedition = {:?}\npublish = false\n\n\
                 [dev-dependencies]\nppd = {{ path = {ppd} }}\n{rand}\n\
                 [lints.rust]\nunexpected_cfgs = \"allow\"\n",
                suite.name, suite.edition
            ),
        )?;
        write(&dir.join("src/lib.rs"), "")?;
        remove_stale(&dir.join("tests"), suite)?;
        for (stem, text) in &suite.files {
            write(&dir.join("tests").join(format!("{stem}.rs")), text)?;
        }
    }
    let names: Vec<&'static str> = suites.iter().map(|s| s.name).collect();
    cargo_build(&root, &names)
}

/// Removes the test files of an earlier run that the suite no longer has.
fn remove_stale(tests: &Path, suite: &Suite) -> Result<(), SuiteError> {
    let Ok(listing) = std::fs::read_dir(tests) else {
        return Ok(());
    };
    for entry in listing.flatten() {
        let path = entry.path();
        let known = path
            .file_stem()
            .and_then(|s| s.to_str())
            .is_some_and(|stem| suite.files.iter().any(|(s, _)| s == stem));
        if !known {
            std::fs::remove_file(&path).map_err(|e| SuiteError::new(&path, e))?;
        }
    }
    Ok(())
}

fn cargo_build(root: &Path, suites: &[&'static str]) -> Result<Vec<Binary>, SuiteError> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    println!("building the suites in {}", root.display());
    let out = Command::new(&cargo)
        .args([
            "test",
            "--workspace",
            "--no-run",
            "--offline",
            "--message-format=json-render-diagnostics",
        ])
        .current_dir(root)
        .env("CARGO_TARGET_DIR", root.join("target"))
        .env_remove("RUSTFLAGS")
        .output()
        .map_err(|e| SuiteError::text(format!("{cargo} test --no-run: {e}")))?;
    if !out.status.success() {
        return Err(SuiteError::text(format!(
            "building the suites failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    let mut binaries = Vec::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Ok(message) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        let is_test = message["target"]["kind"]
            .as_array()
            .is_some_and(|kinds| kinds.iter().any(|k| k == "test"));
        let (Some(exe), Some(file), Some(id)) = (
            message["executable"].as_str(),
            message["target"]["name"].as_str(),
            message["package_id"].as_str(),
        ) else {
            continue;
        };
        if !is_test {
            continue;
        }
        let Some(&suite) = suites
            .iter()
            .find(|&&name| id.contains(&format!("/{name}#")) || id.contains(&format!("{name}@")))
        else {
            continue;
        };
        binaries.push(Binary {
            suite,
            file: file.to_owned(),
            path: PathBuf::from(exe),
        });
    }
    binaries.sort_by(|a, b| (a.suite, &a.file).cmp(&(b.suite, &b.file)));
    Ok(binaries)
}
