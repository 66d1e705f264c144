//! The rustc wrapper `ppd build` runs as cargo's `RUSTC_WORKSPACE_WRAPPER`.
//!
//! For a workspace crate that depends on `ppd` (an `--extern ppd=…` among rustc's arguments)
//! it chooses the e-blocks ([`crate::select`]), writes a copy of the crate's files with the
//! attributes in ([`crate::rewrite`]) under `OUT_DIR/ppd-auto/CRATE-HASH/` + each file's
//! absolute path, and compiles the copy with `--remap-path-prefix`, so every path rustc writes
//! (`file!()`, panics, debug info, diagnostics) is the original's. The copy's other entries
//! (data files, directories without modules) are symlinks to the originals, so `include_str!`
//! finds what it would have found. rustc's dep-info is rewritten to name the originals, so
//! cargo rebuilds when the user edits them.
//!
//! Every other invocation (a dependency, a build script, `rustc -vV`) runs rustc unchanged. A
//! crate whose copy does not compile is compiled again as written, with a notice naming the
//! first error: automatic e-blocks never fail a build the program would pass.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde::{Deserialize, Serialize};

use crate::InstrumentError;
use crate::modules::{self, SourceFile};
use crate::select::{self, Choice};

/// Set (to anything) when `ppd` is started by cargo as the rustc wrapper.
pub const WRAPPER_ENV: &str = "PPD_RUSTC_WRAPPER";
/// A directory where the wrapper writes one [`CrateReport`] per instrumented crate.
pub const REPORT_ENV: &str = "PPD_BUILD_REPORTS";

/// What the wrapper did to one crate, for `ppd build` to print.
#[derive(Debug, Serialize, Deserialize)]
pub struct CrateReport {
    /// The crate's name, as rustc has it.
    pub crate_name: String,
    /// Every function considered and its verdict.
    pub choices: Vec<Choice>,
    /// Why the crate was compiled as written after all, if it was.
    pub fallback: Option<String>,
}

/// rustc's flags that take their value as the next argument.
const FLAGS_WITH_VALUE: &[&str] = &[
    "--crate-name",
    "--edition",
    "--crate-type",
    "--emit",
    "-C",
    "--codegen",
    "--cfg",
    "--check-cfg",
    "-L",
    "-l",
    "--extern",
    "--out-dir",
    "-o",
    "--cap-lints",
    "--error-format",
    "--json",
    "--target",
    "--print",
    "-A",
    "-W",
    "-D",
    "-F",
    "--sysroot",
    "--remap-path-prefix",
    "--diagnostic-width",
    "--env-set",
    "-Z",
];

/// What the wrapper needs of one rustc command line.
struct Invocation {
    rustc: OsString,
    args: Vec<OsString>,
    crate_name: Option<String>,
    /// The index in `args` of the crate root.
    root: Option<usize>,
    out_dir: Option<PathBuf>,
    extra_filename: String,
    uses_ppd: bool,
}

impl Invocation {
    fn parse(command: &[OsString]) -> Option<Invocation> {
        let (rustc, args) = command.split_first()?;
        let mut invocation = Invocation {
            rustc: rustc.clone(),
            args: args.to_vec(),
            crate_name: None,
            root: None,
            out_dir: None,
            extra_filename: String::new(),
            uses_ppd: false,
        };
        let mut i = 0;
        while i < args.len() {
            let arg = args[i].to_string_lossy();
            let value = args.get(i + 1).map(|v| v.to_string_lossy());
            match (arg.as_ref(), value.as_deref()) {
                ("--crate-name", Some(v)) => invocation.crate_name = Some(v.to_string()),
                ("--out-dir", Some(v)) => invocation.out_dir = Some(PathBuf::from(v)),
                ("--extern", Some(v)) if v == "ppd" || v.starts_with("ppd=") => {
                    invocation.uses_ppd = true;
                }
                ("-C" | "--codegen", Some(v)) => {
                    if let Some(extra) = v.strip_prefix("extra-filename=") {
                        invocation.extra_filename = extra.to_string();
                    }
                }
                (a, _) if a.starts_with("-Cextra-filename=") => {
                    invocation.extra_filename = a["-Cextra-filename=".len()..].to_string();
                }
                (a, _) if !a.starts_with('-') && a.ends_with(".rs") => invocation.root = Some(i),
                _ => {}
            }
            i += if FLAGS_WITH_VALUE.contains(&arg.as_ref()) {
                2
            } else {
                1
            };
        }
        Some(invocation)
    }

    /// Whether this is a crate of the user's the wrapper instruments.
    fn instrumentable(&self) -> bool {
        self.uses_ppd
            && self.root.is_some()
            && self.out_dir.is_some()
            && self
                .crate_name
                .as_deref()
                .is_some_and(|name| !name.starts_with("build_script_"))
    }

    fn plain(&self) -> Result<i32, InstrumentError> {
        let status = Command::new(&self.rustc)
            .args(&self.args)
            .status()
            .map_err(|source| InstrumentError::Rustc {
                rustc: PathBuf::from(&self.rustc),
                source,
            })?;
        Ok(status.code().unwrap_or(101))
    }
}

/// Runs one rustc command line (`command[0]` is rustc) as the wrapper; returns rustc's exit
/// code.
pub fn run(command: &[OsString]) -> Result<i32, InstrumentError> {
    let Some(invocation) = Invocation::parse(command) else {
        eprintln!("ppd: run as a rustc wrapper without a compiler to run");
        return Ok(2);
    };
    if !invocation.instrumentable() {
        return invocation.plain();
    }
    instrumented(&invocation)
}

fn instrumented(invocation: &Invocation) -> Result<i32, InstrumentError> {
    let (Some(root_index), Some(out_dir), Some(crate_name)) = (
        invocation.root,
        invocation.out_dir.as_deref(),
        invocation.crate_name.as_deref(),
    ) else {
        return invocation.plain();
    };
    let root = PathBuf::from(&invocation.args[root_index]);
    let unit = format!("{crate_name}{}", invocation.extra_filename);
    let mut report = CrateReport {
        crate_name: crate_name.to_string(),
        choices: Vec::new(),
        fallback: None,
    };
    let files = match modules::collect(&root) {
        Ok(files) => files,
        Err(e) => {
            report.fallback = Some(e.to_string());
            write_report(&unit, &report)?;
            return invocation.plain();
        }
    };
    let mut selection = select::choose(&files);
    let shadow = std::path::absolute(out_dir.join("ppd-auto").join(&unit))
        .map_err(|e| InstrumentError::io(out_dir, e))?;
    let cwd = std::env::current_dir().map_err(|e| InstrumentError::io(".", e))?;
    let mut first = String::new();
    for _ in 0..ATTEMPTS {
        report.choices = selection.choices.clone();
        if selection.is_empty() {
            break;
        }
        let attempt = compile_copy(invocation, &files, &selection, &shadow, root_index, &cwd)?;
        if attempt.status.success() {
            forward(&attempt.stdout, &attempt.stderr);
            fix_dep_info(out_dir, &unit, &shadow)?;
            write_report(&unit, &report)?;
            return Ok(0);
        }
        let errors = errors_in(&attempt.stderr, &files, &cwd);
        if first.is_empty() {
            first = first_error(&attempt.stderr);
            let kept = shadow.join("rustc-diagnostics.json");
            std::fs::write(&kept, &attempt.stderr).map_err(|e| InstrumentError::io(&kept, e))?;
        }
        let withdrew = errors.iter().fold(false, |any, (file, line, message)| {
            selection.withdraw(*file, *line, message) | any
        });
        if !withdrew {
            break;
        }
    }
    report.choices = selection.choices;
    if !first.is_empty() {
        eprintln!(
            "ppd: the automatic e-blocks of crate `{crate_name}` do not compile ({first}; all of \
             rustc's messages are in {}); it is built as written, and `ppd why` explains only \
             its #[ppd::eblock] functions",
            shadow.join("rustc-diagnostics.json").display()
        );
        report.fallback = Some(first);
    }
    write_report(&unit, &report)?;
    invocation.plain()
}

/// How many times a crate is compiled with automatic e-blocks, each time without the ones the
/// last attempt's errors were in, before it is compiled as written.
const ATTEMPTS: usize = 4;

/// Writes the copy of the crate with `selection`'s attributes and compiles it.
fn compile_copy(
    invocation: &Invocation,
    files: &[SourceFile],
    selection: &select::Selection,
    shadow: &Path,
    root_index: usize,
    cwd: &Path,
) -> Result<std::process::Output, InstrumentError> {
    if shadow.exists() {
        std::fs::remove_dir_all(shadow).map_err(|e| InstrumentError::io(shadow, e))?;
    }
    let insertions = selection.insertions(files.len());
    let texts: BTreeMap<&Path, String> = files
        .iter()
        .zip(&insertions)
        .map(|(file, insertions)| {
            (
                file.path.as_path(),
                crate::rewrite::apply(&file.text, insertions),
            )
        })
        .collect();
    mirror(files, &texts, shadow)?;
    let mut args = invocation.args.clone();
    args[root_index] = shadowed(shadow, &files[0].path).into_os_string();
    // rustc applies the last prefix that matches: the copy of the working directory maps to
    // nothing, as a relative root's paths were; anything else to its absolute original.
    args.push(remap(shadow, "/"));
    if Path::new(&invocation.args[root_index]).is_relative() {
        args.push(remap(&shadowed(shadow, cwd), ""));
    }
    Command::new(&invocation.rustc)
        .args(&args)
        .output()
        .map_err(|source| InstrumentError::Rustc {
            rustc: PathBuf::from(&invocation.rustc),
            source,
        })
}

/// The crate files and lines rustc's errors are in, with each error's message: for an error
/// inside an expansion, the user's line it was expanded from.
fn errors_in(stderr: &[u8], files: &[SourceFile], cwd: &Path) -> Vec<(usize, usize, String)> {
    let text = String::from_utf8_lossy(stderr);
    let mut out = Vec::new();
    for line in text.lines() {
        let Ok(message) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        if message["level"] != "error" {
            continue;
        }
        let what = message["message"]
            .as_str()
            .unwrap_or("an error")
            .to_string();
        let mut spans: Vec<&serde_json::Value> =
            message["spans"].as_array().into_iter().flatten().collect();
        for child in message["children"].as_array().into_iter().flatten() {
            spans.extend(child["spans"].as_array().into_iter().flatten());
        }
        for mut span in spans {
            loop {
                let file = span["file_name"].as_str().map(|f| cwd.join(f));
                let index = file.and_then(|f| files.iter().position(|s| s.path == f));
                if let (Some(index), Some(line)) = (index, span["line_start"].as_u64()) {
                    out.push((index, line as usize, what.clone()));
                    break;
                }
                match span.get("expansion").and_then(|e| e.get("span")) {
                    Some(outer) if !outer.is_null() => span = outer,
                    _ => break,
                }
            }
        }
    }
    out
}

/// Where `path` (absolute) is copied under `shadow`.
fn shadowed(shadow: &Path, path: &Path) -> PathBuf {
    let mut out = shadow.to_path_buf();
    out.extend(path.components().filter(|c| {
        !matches!(
            c,
            std::path::Component::RootDir | std::path::Component::Prefix(_)
        )
    }));
    out
}

fn remap(from: &Path, to: &str) -> OsString {
    let mut arg = OsString::from("--remap-path-prefix=");
    arg.push(from.as_os_str());
    arg.push("=");
    arg.push(to);
    arg
}

/// Writes the copy: each directory holding a module file, with the module files rewritten and
/// every other entry a symlink to the original.
fn mirror(
    files: &[SourceFile],
    texts: &BTreeMap<&Path, String>,
    shadow: &Path,
) -> Result<(), InstrumentError> {
    let root_dir = files[0].path.parent().unwrap_or(Path::new("/"));
    let mut dirs: BTreeSet<&Path> = BTreeSet::new();
    for file in files {
        let mut dir = file.path.parent();
        while let Some(d) = dir {
            dirs.insert(d);
            if d == root_dir || !d.starts_with(root_dir) {
                break;
            }
            dir = d.parent();
        }
    }
    for dir in &dirs {
        let copy = shadowed(shadow, dir);
        std::fs::create_dir_all(&copy).map_err(|e| InstrumentError::io(&copy, e))?;
        let listing = std::fs::read_dir(dir).map_err(|e| InstrumentError::io(*dir, e))?;
        for entry in listing {
            let entry = entry.map_err(|e| InstrumentError::io(*dir, e))?;
            let original = entry.path();
            let target = copy.join(entry.file_name());
            if let Some(text) = texts.get(original.as_path()) {
                std::fs::write(&target, text).map_err(|e| InstrumentError::io(&target, e))?;
            } else if !dirs.contains(original.as_path()) {
                std::os::unix::fs::symlink(&original, &target)
                    .map_err(|e| InstrumentError::io(&target, e))?;
            }
        }
    }
    Ok(())
}

/// Passes on what rustc printed.
fn forward(stdout: &[u8], stderr: &[u8]) {
    let _ = std::io::stdout().write_all(stdout);
    let _ = std::io::stderr().write_all(stderr);
}

/// rustc's dep-info names the copy's files; cargo must watch the originals.
fn fix_dep_info(out_dir: &Path, unit: &str, shadow: &Path) -> Result<(), InstrumentError> {
    let path = out_dir.join(format!("{unit}.d"));
    let Ok(text) = std::fs::read_to_string(&path) else {
        return Ok(());
    };
    let fixed = text.replace(&*shadow.to_string_lossy(), "");
    std::fs::write(&path, fixed).map_err(|e| InstrumentError::io(&path, e))
}

/// The first error rustc reported, from its JSON or plain diagnostics.
fn first_error(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    for line in text.lines() {
        if let Ok(message) = serde_json::from_str::<serde_json::Value>(line)
            && message["level"] == "error"
        {
            let what = message["message"].as_str().unwrap_or("an error");
            let span = &message["spans"][0];
            return match (span["file_name"].as_str(), span["line_start"].as_u64()) {
                (Some(file), Some(line)) => format!("{file}:{line}: {what}"),
                _ => what.to_string(),
            };
        }
        if let Some(error) = line.strip_prefix("error") {
            return format!("error{error}");
        }
    }
    "rustc failed without saying why".into()
}

fn write_report(unit: &str, report: &CrateReport) -> Result<(), InstrumentError> {
    let Some(dir) = std::env::var_os(REPORT_ENV) else {
        return Ok(());
    };
    let path = Path::new(&dir).join(format!("{unit}.json"));
    let text = serde_json::to_string(report).unwrap_or_default();
    std::fs::write(&path, text).map_err(|e| InstrumentError::io(&path, e))
}

/// Reads the reports the wrapper wrote in `dir`, the newest first (a crate compiled for a
/// binary and for its tests has one report each; the newest is the last build's).
pub fn reports(dir: &Path) -> Vec<CrateReport> {
    let mut found: Vec<(std::time::SystemTime, CrateReport)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let modified = entry.metadata().and_then(|m| m.modified()).ok()?;
            let text = std::fs::read_to_string(entry.path()).ok()?;
            Some((modified, serde_json::from_str(&text).ok()?))
        })
        .collect();
    found.sort_by_key(|f| std::cmp::Reverse(f.0));
    found.into_iter().map(|(_, report)| report).collect()
}

/// Whether `ppd` was started as the wrapper.
pub fn started_as_wrapper() -> bool {
    std::env::var_os(WRAPPER_ENV).is_some()
}

/// The wrapper's own program path (`ppd`), as cargo must be given it.
pub fn wrapper_program() -> std::io::Result<PathBuf> {
    std::env::current_exe()
}
