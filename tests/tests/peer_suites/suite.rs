//! Where each suite's test files come from, and how their paths are rewritten to ppd's.

use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// One suite: a set of libtest files built as one package.
pub(crate) struct Suite {
    /// The package name in the scratch workspace, and the suite's name in the report.
    pub(crate) name: &'static str,
    /// Where the files came from, printed before the run: the crate and version, or this
    /// repository.
    pub(crate) origin: String,
    /// The edition the files are written in.
    pub(crate) edition: &'static str,
    /// Whether the files use `rand`, which the scratch workspace then provides as ppd's logged
    /// randomness.
    pub(crate) uses_rand: bool,
    /// Each test file, by its stem, with its text rewritten.
    pub(crate) files: Vec<(String, String)>,
}

/// An error finding, writing or building a suite.
#[derive(Debug)]
pub(crate) struct SuiteError(String);

impl SuiteError {
    /// An error of the file or directory `path`.
    pub(crate) fn new(path: &Path, e: std::io::Error) -> SuiteError {
        SuiteError(format!("{}: {e}", path.display()))
    }

    /// An error said in words.
    pub(crate) fn text(text: String) -> SuiteError {
        SuiteError(text)
    }
}

impl fmt::Display for SuiteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The paths the peers' tests name, rewritten to ppd's twins, in order (a rule sees what the
/// rules before it made). `#[test]` becomes
/// `#[ppd::test]` so that `ppd record` can record one test of the binary. The std mpsc port
/// calls crossbeam's private `crossbeam_channel_internal!` (the body of `select!`) directly:
/// it becomes `ppd::select!`, whose grammar it uses.
pub(crate) const REWRITES: &[(&str, &str)] = &[
    ("cc::crossbeam_channel_internal!", "ppd::select!"),
    ("crossbeam_channel", "ppd::channel"),
    ("crossbeam_utils", "ppd::utils"),
    ("std::thread", "ppd::thread"),
    ("std::sync", "ppd::sync"),
    ("std::time", "ppd::time"),
    ("std::collections", "ppd::collections"),
    ("#[test]", "#[ppd::test]"),
    // The golang port counts allocations in its global allocator, which ppd's own allocations
    // go through too: the counter stays std's (a recorded atomic there would record the
    // runtime's allocations, and re-enter it).
    (
        "static ALLOCATED: AtomicUsize = AtomicUsize::new(0);",
        "static ALLOCATED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);",
    ),
];

/// The workspace's root directory.
pub(crate) fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the tests package sits in the workspace root")
        .to_owned()
}

/// Every suite.
pub(crate) fn all() -> Result<Vec<Suite>, SuiteError> {
    Ok(vec![crossbeam_channel()?, std_sync()?])
}

fn rewrite(text: &str) -> String {
    REWRITES
        .iter()
        .fold(text.to_owned(), |text, (from, to)| text.replace(from, to))
}

/// The `.rs` files directly in `dir`, by stem, rewritten.
fn files_in(dir: &Path) -> Result<Vec<(String, String)>, SuiteError> {
    let read_dir = std::fs::read_dir(dir).map_err(|e| SuiteError::new(dir, e))?;
    let mut files = Vec::new();
    for entry in read_dir {
        let path = entry.map_err(|e| SuiteError::new(dir, e))?.path();
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path).map_err(|e| SuiteError::new(&path, e))?;
        let stem = path
            .file_stem()
            .and_then(|s| s.to_str())
            .ok_or_else(|| SuiteError(format!("{}: not a UTF-8 name", path.display())))?;
        files.push((stem.to_owned(), rewrite(&text)));
    }
    files.sort();
    if files.is_empty() {
        return Err(SuiteError(format!("{}: no test files", dir.display())));
    }
    Ok(files)
}

/// crossbeam-channel's published `tests/`, from the source cargo fetched for this workspace.
fn crossbeam_channel() -> Result<Suite, SuiteError> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    // Offline, metadata needs the platform filter: the packages of other platforms were never
    // fetched.
    let out = Command::new(&cargo)
        .args(["metadata", "--format-version", "1", "--offline"])
        .args(["--filter-platform", &host()?, "--manifest-path"])
        .arg(workspace_root().join("Cargo.toml"))
        .output()
        .map_err(|e| SuiteError(format!("{cargo} metadata: {e}")))?;
    if !out.status.success() {
        return Err(SuiteError(format!(
            "{cargo} metadata failed: {}",
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    let metadata: serde_json::Value = serde_json::from_slice(&out.stdout)
        .map_err(|e| SuiteError(format!("{cargo} metadata printed no JSON: {e}")))?;
    let package = metadata["packages"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| p["name"] == "crossbeam-channel")
        .ok_or_else(|| {
            SuiteError("crossbeam-channel is not a dependency of the workspace".into())
        })?;
    let version = package["version"].as_str().unwrap_or("?");
    let manifest = package["manifest_path"]
        .as_str()
        .ok_or_else(|| SuiteError("crossbeam-channel has no manifest path".into()))?;
    let tests = Path::new(manifest)
        .parent()
        .expect("a manifest is in its package's directory")
        .join("tests");
    Ok(Suite {
        name: "crossbeam-channel",
        origin: format!(
            "crossbeam-channel {version}'s own tests/, from the registry source cargo fetched"
        ),
        edition: "2021",
        uses_rand: true,
        files: files_in(&tests)?,
    })
}

/// The host's target triple, from `rustc -vV`.
fn host() -> Result<String, SuiteError> {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let out = Command::new(&rustc)
        .arg("-vV")
        .output()
        .map_err(|e| SuiteError(format!("{rustc} -vV: {e}")))?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: "))
        .map(str::to_owned)
        .ok_or_else(|| SuiteError(format!("{rustc} -vV names no host")))
}

/// std's documented behaviour of each sync twin, written in this repository.
fn std_sync() -> Result<Suite, SuiteError> {
    let dir = workspace_root().join("tests/conformance/std");
    Ok(Suite {
        name: "std-sync",
        origin: "std's documented behaviour of each sync twin, tests/conformance/std".into(),
        edition: "2024",
        uses_rand: false,
        files: files_in(&dir)?,
    })
}
