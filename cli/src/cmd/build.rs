//! `ppd build [CARGO ARGS]`: `cargo build` with automatic e-blocks, so that `ppd why` explains
//! the variables of every function of the workspace's crates, none annotated.
//!
//! cargo runs `ppd` itself as its workspace rustc wrapper ([`ppd_instrument::wrapper`]): only
//! the workspace's own crates that depend on `ppd` are rewritten, dependencies are compiled as
//! always. The build goes to its own target directory (`TARGET/ppd`), so a plain `cargo build`
//! and this one never take each other's artifacts for up to date (cargo does not see a wrapper
//! change), at the cost of building the dependencies once more.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};

use anyhow::{Context, anyhow};
use ppd_instrument::select::Verdict;
use ppd_instrument::wrapper::{self, CrateReport};

use crate::exit::{CmdResult, failure, input};
use crate::output;

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// List every function with what was decided for it and why.
    #[arg(long)]
    explain: bool,
    /// Arguments for `cargo build` (`--example bank`, `--release`, `-p NAME`, `--bins`…).
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "CARGO_ARGS"
    )]
    cargo_args: Vec<String>,
}

pub(crate) fn run(args: &Args) -> CmdResult {
    if args
        .cargo_args
        .iter()
        .any(|a| a.starts_with("--target-dir"))
    {
        return Err(input(anyhow!(
            "ppd build chooses its own target directory (TARGET/ppd); leave out --target-dir"
        )));
    }
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let workspace = Workspace::of(&cargo)?;
    let target = workspace.target.join("ppd");
    let reports = target.join("ppd-reports");
    std::fs::create_dir_all(&reports)
        .with_context(|| format!("cannot create {}", reports.display()))
        .map_err(failure)?;
    let program = wrapper::wrapper_program().map_err(failure)?;
    let mut child = Command::new(&cargo)
        .arg("build")
        .arg("--message-format=json-render-diagnostics")
        .arg("--target-dir")
        .arg(&target)
        .args(&args.cargo_args)
        .env("RUSTC_WORKSPACE_WRAPPER", &program)
        .env(wrapper::WRAPPER_ENV, "1")
        .env(wrapper::REPORT_ENV, &reports)
        .stdout(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot run {}", Path::new(&cargo).display()))
        .map_err(failure)?;
    let mut executables = Vec::new();
    let mut crates = Vec::new();
    if let Some(stdout) = child.stdout.take() {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let Ok(message) = serde_json::from_str::<serde_json::Value>(&line) else {
                continue;
            };
            if message["reason"] != "compiler-artifact" {
                continue;
            }
            if let Some(path) = message["executable"].as_str() {
                executables.push(PathBuf::from(path));
            }
            let member = message["package_id"]
                .as_str()
                .is_some_and(|id| workspace.members.iter().any(|m| m == id));
            let script = message["target"]["kind"][0] == "custom-build";
            if let (true, false, Some(name)) = (member, script, message["target"]["name"].as_str())
            {
                let name = name.replace('-', "_");
                if !crates.contains(&name) {
                    crates.push(name);
                }
            }
        }
    }
    let status = child.wait().map_err(failure)?;
    let reports = wrapper::reports(&reports);
    for name in &crates {
        if let Some(report) = reports.iter().find(|r| &r.crate_name == name) {
            print_report(report, args.explain);
        }
    }
    if !status.success() {
        return Err(failure(anyhow!("cargo build failed ({status})")));
    }
    for executable in &executables {
        output::out!("built {}\n", executable.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// What `cargo metadata` says of the workspace.
struct Workspace {
    target: PathBuf,
    /// The package ids of its members.
    members: Vec<String>,
}

impl Workspace {
    fn of(cargo: &std::ffi::OsStr) -> Result<Workspace, crate::exit::CliError> {
        let metadata = metadata(cargo)?;
        let target = metadata["target_directory"]
            .as_str()
            .map(PathBuf::from)
            .ok_or_else(|| failure(anyhow!("cargo metadata names no target directory")))?;
        let members = metadata["workspace_members"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|m| m.as_str().map(str::to_string))
            .collect();
        Ok(Workspace { target, members })
    }
}

fn metadata(cargo: &std::ffi::OsStr) -> Result<serde_json::Value, crate::exit::CliError> {
    let out = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--no-deps"])
        .stderr(Stdio::inherit())
        .output()
        .with_context(|| format!("cannot run {}", Path::new(cargo).display()))
        .map_err(failure)?;
    if !out.status.success() {
        return Err(input(anyhow!(
            "cargo metadata failed: ppd build runs in a cargo workspace"
        )));
    }
    serde_json::from_slice(&out.stdout)
        .context("cargo metadata printed no JSON")
        .map_err(failure)
}

fn print_report(report: &CrateReport, explain: bool) {
    let named = |wanted: fn(&Verdict) -> bool| -> Vec<&str> {
        report
            .choices
            .iter()
            .filter(|c| wanted(&c.verdict))
            .map(|c| c.function.as_str())
            .collect()
    };
    let eblocks = named(|v| *v == Verdict::Eblock);
    let leaves = named(|v| *v == Verdict::SmallLeaf);
    let written = named(|v| *v == Verdict::Written);
    let cannot = named(|v| matches!(v, Verdict::CannotBe(_)));
    let mut line = format!(
        "{}: {} automatic e-block{}",
        report.crate_name,
        eblocks.len(),
        if eblocks.len() == 1 { "" } else { "s" }
    );
    if !written.is_empty() {
        line.push_str(&format!(", {} written", written.len()));
    }
    if !leaves.is_empty() {
        line.push_str(&format!(
            ", {} small leaf function{} left to {} callers ({})",
            leaves.len(),
            if leaves.len() == 1 { "" } else { "s" },
            if leaves.len() == 1 { "its" } else { "their" },
            leaves.join(", ")
        ));
    }
    if !cannot.is_empty() {
        line.push_str(&format!(
            ", {} that cannot be e-blocks ({})",
            cannot.len(),
            cannot.join(", ")
        ));
    }
    output::out!("{line}\n");
    if let Some(why) = &report.fallback {
        output::out!("  built as written instead: {why}\n");
    }
    if explain {
        let cwd = std::env::current_dir().unwrap_or_default();
        for choice in &report.choices {
            let verdict = match &choice.verdict {
                Verdict::Eblock => "e-block".to_string(),
                Verdict::Written => "e-block (#[ppd::eblock])".to_string(),
                Verdict::SmallLeaf => "a small leaf: left to its callers".to_string(),
                Verdict::NotTraced => "#[ppd::not_traced]".to_string(),
                Verdict::Entry => "an entry point, traced by its own attribute".to_string(),
                Verdict::CannotBe(why) => format!("not an e-block: {why}"),
            };
            output::out!(
                "  {}:{} {}: {verdict}\n",
                choice
                    .file
                    .strip_prefix(&cwd)
                    .unwrap_or(&choice.file)
                    .display(),
                choice.line,
                choice.function
            );
        }
    }
}
