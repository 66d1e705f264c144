//! The check every command that answers from a recording passes first.
//!
//! A damaged recording (a missing, empty, foreign or unreadable log, a checksum that fails) is
//! bad input: the command refuses it with exit code 2 and the list of damage, unless it was
//! asked to answer from the readable part with `--allow-damage`; then the damage goes to
//! stderr and into `--json`. A log that ends early without damage (a crash, recording stopped
//! on a failed write) is a faithful prefix of the run: answers from it get a note.
//!
//! A manifest or exit record whose MAC fails is damage too. One without the user's MAC (a
//! recording made elsewhere, or by an older ppd) is answered from with a note: how the run
//! ended is as the recording says, unchecked.

use std::path::{Path, PathBuf};

use anyhow::anyhow;
use ppd_formats::Recording;
use ppd_formats::RunEnding;
use ppd_formats::integrity::{self, FileAuthenticity, Integrity};

use crate::exit::{CliError, input};

/// The `--allow-damage` flag.
#[derive(Debug, Clone, Copy, clap::Args)]
pub(crate) struct DamageArgs {
    /// Answer from the readable part of a damaged recording instead of refusing it (the damage
    /// is listed on stderr and in --json).
    #[arg(long)]
    pub(crate) allow_damage: bool,
}

/// A recording that passed the check.
pub(crate) struct Checked {
    pub(crate) dir: PathBuf,
    pub(crate) recording: Recording,
    pub(crate) integrity: Integrity,
}

/// Finds, opens and checks the recording `rec` names (or the newest).
pub(crate) fn open(rec: Option<&Path>, args: DamageArgs) -> Result<Checked, CliError> {
    let dir = crate::rec::resolve(rec)?;
    let recording = Recording::open(&dir)?;
    refuse_live(&dir, &recording)?;
    ppd_formats::progress::stage(
        "checking the recording",
        ppd_formats::progress::events_in(&recording),
    );
    let integrity = integrity::check(&recording);
    gate(&dir, &integrity, args.allow_damage)?;
    Ok(Checked {
        dir,
        recording,
        integrity,
    })
}

/// Refuses a recording still being written: its logs grow while they are read, so no answer
/// (a replay's count of events, a race, a chain) would be of one run's prefix. `ppd info`
/// says what it holds so far.
fn refuse_live(dir: &Path, recording: &Recording) -> Result<(), CliError> {
    for node in recording.nodes() {
        if let RunEnding::StillRecording { pid } = RunEnding::of(&node.dir, &node.manifest) {
            let which = if recording.is_distributed() {
                format!(" (node {})", node.name)
            } else {
                String::new()
            };
            return Err(input(anyhow!(
                "{} is still being recorded: OS process {pid}{which} is running and writing it; \
                 ask again once it has ended (`ppd info` shows what it holds so far)",
                dir.display()
            )));
        }
    }
    Ok(())
}

/// Refuses damage unless `allow`; says what the answer is based on.
pub(crate) fn gate(dir: &Path, integrity: &Integrity, allow: bool) -> Result<(), CliError> {
    let list: String = integrity
        .damage
        .iter()
        .map(|d| format!("\n  {d}"))
        .chain(integrity.tampered().map(|f| format!("\n  {f}")))
        .collect();
    if !integrity.is_sound() {
        if !allow {
            return Err(input(anyhow!(
                "{} is damaged; refusing to answer from it (--allow-damage answers from the \
                 readable part):{list}",
                dir.display()
            )));
        }
        eprintln!(
            "ppd: warning: {} is damaged; answering from the readable part only:{list}",
            dir.display()
        );
    }
    if let Some(reason) = &integrity.stopped {
        eprintln!("ppd: note: recording stopped before the program ended: {reason}");
    }
    for early in &integrity.ends_early {
        eprintln!("ppd: note: {early}");
    }
    note_unauthenticated(integrity.unauthenticated());
    Ok(())
}

/// Says which manifests and exit records the user's ppd did not write, and what that means for
/// the answer.
pub(crate) fn note_unauthenticated<'a>(files: impl Iterator<Item = &'a FileAuthenticity>) {
    for file in files {
        eprintln!(
            "ppd: note: {file}; what it says (the program, how the run ended) is as the \
             recording says, unchecked (`ppd trust` vouches for it)"
        );
    }
}
