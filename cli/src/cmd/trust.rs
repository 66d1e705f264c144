//! `ppd trust`: vouch for a recording made elsewhere, after seeing what it would run.
//!
//! `replay`, `why` and `analyze tasks --rerun` run a recording's program only from a manifest
//! the user's ppd wrote here (or a program the user names with `--binary`). A recording someone
//! sent is not one: `ppd trust` shows, node by node, the program (its path, its hash, and
//! whether the binary there is that program and a ppd program), its arguments and working
//! directory, and on the user's yes seals each manifest and exit record with the user's key,
//! as ssh asks before it adds a host key. What it vouches for includes how the run ended.

use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::anyhow;
use ppd_formats::ProgramExit;
use ppd_formats::Recording;
use ppd_formats::authenticity::{Authenticity, ReaderKey, UserKey};
use ppd_formats::manifest::{MANIFEST_FILE, Manifest};
use ppd_formats::recording::resolve;
use ppd_recorder::runtime::program_hash::program_hash;

use crate::exit::{CliError, CmdResult, failure, input};
use crate::output::outln;

/// Arguments of `ppd trust`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The recording (default: the newest in ./ppd-recordings).
    rec: Option<PathBuf>,
    /// Trust it without asking: for scripts, once what it would run has been checked.
    #[arg(long)]
    yes: bool,
}

/// One node as it is shown, and then sealed: read once.
struct Shown {
    name: String,
    dir: PathBuf,
    manifest: Manifest,
    authenticity: Authenticity,
    exit: Option<(ProgramExit, Authenticity)>,
}

impl Shown {
    fn is_authenticated(&self) -> bool {
        self.authenticity.is_authenticated()
            && self.exit.as_ref().is_none_or(|(_, a)| a.is_authenticated())
    }
}

/// What is at the path the manifest names, as `replay` would judge it.
enum Binary {
    Missing,
    Other,
    NotPpd,
    Recorded,
}

fn binary_at(manifest: &Manifest) -> Binary {
    let path = &manifest.program.path;
    if !path.is_file() {
        return Binary::Missing;
    }
    match program_hash(path) {
        Ok(hash) if hash.blake3 != manifest.program.blake3 => Binary::Other,
        Ok(hash) if !hash.ppd_program => Binary::NotPpd,
        Ok(_) => Binary::Recorded,
        Err(_) => Binary::Missing,
    }
}

pub(crate) fn run(args: &Args) -> CmdResult {
    let dir = resolve(args.rec.as_deref())?;
    let recording = Recording::open(&dir)?;
    let reader = ReaderKey::of_user();
    let mut nodes = Vec::new();
    for node in recording.nodes() {
        let (manifest, authenticity) = Manifest::read_checked(&node.dir, &reader)?;
        nodes.push(Shown {
            name: node.name.clone(),
            dir: node.dir.clone(),
            exit: ProgramExit::read_checked(&node.dir, &reader),
            manifest,
            authenticity,
        });
    }
    let mut refused = Vec::new();
    for node in &nodes {
        if show(node) {
            refused.push(node.manifest.program.path.display().to_string());
        }
    }
    if nodes.iter().all(Shown::is_authenticated) {
        eprintln!(
            "ppd: {} was written by you here: there is nothing to trust",
            dir.display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    if !refused.is_empty() {
        return Err(input(anyhow!(
            "not trusting {}: it would run {}, which is not a ppd program (no recording ppd \
             makes names one)",
            dir.display(),
            refused.join(", ")
        )));
    }
    confirm(&dir, args.yes)?;
    let key = UserKey::load_or_create().map_err(input)?;
    let mut sealed = 0;
    for node in &nodes {
        sealed += seal(node, &key)?;
    }
    eprintln!(
        "ppd: trusted {}: {sealed} files sealed with your key; replay and why may now run what \
         it names",
        dir.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// Prints what `node` would run; whether its binary is one ppd will never run.
fn show(node: &Shown) -> bool {
    let m = &node.manifest;
    let binary = binary_at(m);
    outln!(
        "node {} ({})",
        node.name,
        node.dir.join(MANIFEST_FILE).display()
    );
    outln!("  manifest  {}", node.authenticity);
    outln!("  program   {}", m.program.path.display());
    outln!("  blake3    {}", m.program.blake3);
    outln!(
        "  binary    {}",
        match binary {
            Binary::Missing => "not here (replay will need it, or --binary PATH)",
            Binary::Other => "a different binary from the recorded one (rebuilt?)",
            Binary::NotPpd => "NOT a ppd program: ppd will never run it",
            Binary::Recorded => "the recorded binary, a ppd program",
        }
    );
    outln!("  argv      {:?}", m.argv);
    outln!("  cwd       {}", m.cwd.display());
    outln!("  host      {}", m.host);
    if let Some((exit, authenticity)) = &node.exit {
        outln!(
            "  exit      {} ({authenticity})",
            match (exit.code, exit.signal) {
                (_, Some(signal)) => format!("killed by signal {signal}"),
                (Some(code), None) => format!("exited with code {code}"),
                (None, None) => "ended".to_owned(),
            }
        );
    }
    matches!(binary, Binary::NotPpd)
}

/// The user's yes: `--yes`, or an answer on the terminal.
fn confirm(dir: &Path, yes: bool) -> Result<(), CliError> {
    if yes {
        return Ok(());
    }
    let refused = || {
        input(anyhow!(
            "not trusted: once you have checked what it would run, confirm with `ppd trust \
             --yes {}`",
            dir.display()
        ))
    };
    if !std::io::stdin().is_terminal() {
        return Err(refused());
    }
    eprint!("Trust this recording, so that replay and why may run the programs above? [y/N] ");
    let _ = std::io::stderr().flush();
    let mut answer = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut answer)
        .map_err(|e| failure(anyhow!("cannot read the answer: {e}")))?;
    match answer.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" => Ok(()),
        _ => Err(refused()),
    }
}

/// Seals `node`'s manifest and exit record with `key`, if they are still what was shown; how
/// many files it sealed.
fn seal(node: &Shown, key: &UserKey) -> Result<usize, CliError> {
    let reader = ReaderKey::Usable(key.clone());
    let changed = || {
        input(anyhow!(
            "{}: changed while you were looking; nothing more is trusted",
            node.dir.display()
        ))
    };
    let mut sealed = 0;
    if !node.authenticity.is_authenticated() {
        let (now, _) = Manifest::read_checked(&node.dir, &reader)?;
        if now != node.manifest {
            return Err(changed());
        }
        node.manifest.write_sealed(&node.dir, true, Some(key))?;
        sealed += 1;
    }
    if let Some((exit, authenticity)) = &node.exit
        && !authenticity.is_authenticated()
    {
        if ProgramExit::read_checked(&node.dir, &reader).map(|(e, _)| e) != Some(*exit) {
            return Err(changed());
        }
        exit.rewrite(&node.dir, key)?;
        sealed += 1;
    }
    Ok(sealed)
}
