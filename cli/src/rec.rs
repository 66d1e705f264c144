//! The optional `[REC]` that commands reading a recording take first: what names a recording,
//! and what a word given in its place names instead. Positional arguments shift when one is
//! left out (`ppd why REC teller`, `ppd replay backup`); the command then says what the words
//! it got are, not only that one of them is not what it expected.

use std::path::{Path, PathBuf};

use anyhow::anyhow;
use ppd_formats::recording::resolve as resolve_dir;
use ppd_formats::{FormatError, Recording};

use crate::exit::{CliError, input};

/// Whether `arg` names a recording: a recording's directory, a directory of recordings, or
/// `latest`.
pub(crate) fn names_recording(arg: &str) -> bool {
    resolve_dir(Some(Path::new(arg))).is_ok()
}

/// The recording `rec` names, else the newest. A `rec` that names none but is a process or a
/// node of the newest recording is refused with what it is.
pub(crate) fn resolve(rec: Option<&Path>) -> Result<PathBuf, CliError> {
    resolve_dir(rec).map_err(|e| match rec.and_then(|r| named_instead(r, &e)) {
        Some(hint) => input(anyhow!("{e}; {hint}")),
        None => e.into(),
    })
}

/// What `rec`, which names no recording, names in the newest one, as advice.
fn named_instead(rec: &Path, error: &FormatError) -> Option<String> {
    if !matches!(error, FormatError::NotARecording { .. }) || rec.exists() {
        return None;
    }
    let word = rec.to_str()?;
    let newest = resolve_dir(None).ok()?;
    let recording = Recording::open(&newest).ok()?;
    let what = if recording.is_distributed() && recording.nodes().iter().any(|n| n.name == word) {
        "a node"
    } else {
        let processes = recording
            .processes()
            .iter()
            .map(|p| (p.id, p.name.as_str()));
        ppd_formats::resolve_process(word, processes).ok()?;
        "a process"
    };
    Some(format!(
        "`{word}` is {what} of the newest recording, {}: the recording comes first and may be \
         left out",
        newest.display()
    ))
}
