//! `ppd info`: what a recording holds, whether it is whole, and whether the user wrote it.

use std::path::Path;
use std::process::ExitCode;

use ppd_formats::ProcessEnding;
use ppd_formats::Recording;
use ppd_formats::authenticity::Authenticity;
use ppd_formats::integrity::{self, FileAuthenticity};
use ppd_formats::summary::{Payloads, RecordingSummary, summarize};

use anyhow::anyhow;
use serde::Serialize;

use crate::damage::DamageArgs;
use crate::exit::{CmdResult, input};
use crate::output;
use crate::output::outln;

pub(crate) fn run(rec: Option<&Path>, json: bool, damage: DamageArgs) -> CmdResult {
    let dir = crate::rec::resolve(rec)?;
    let recording = Recording::open(&dir)?;
    // How the run ended is the manifest's word: not given from one whose MAC fails.
    let authenticity = integrity::authenticity(&recording);
    let tampered: String = authenticity
        .iter()
        .filter(|f| f.authenticity.is_tampered())
        .map(|f| format!("\n  {f}"))
        .collect();
    if !tampered.is_empty() {
        if !damage.allow_damage {
            return Err(input(anyhow!(
                "{} is damaged (--allow-damage accepts it):{tampered}",
                dir.display()
            )));
        }
        eprintln!("ppd: warning: {} is damaged:{tampered}", dir.display());
    }
    let summary = summarize(&recording, Payloads::Verify)?;
    // A recording being written changes while it is read: what a log held a moment ago may
    // have moved on (a ring slot reused), which is not damage.
    let live = summary.run_ending.still_recording()
        || summary.nodes.iter().any(|n| n.run_ending.still_recording());
    if json {
        output::json(&Info {
            summary: &summary,
            authenticity: &authenticity,
        });
    } else {
        print_text(&summary, &authenticity, live);
    }
    crate::damage::note_unauthenticated(
        authenticity
            .iter()
            .filter(|f| matches!(f.authenticity, Authenticity::Unauthenticated { .. })),
    );
    if live {
        eprintln!(
            "ppd: note: {} is still being recorded: this is what its logs held as they were \
             read, and they go on growing",
            dir.display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    let damaged: Vec<String> = summary
        .processes
        .iter()
        .flat_map(|p| {
            p.damage
                .iter()
                .map(move |d| format!("\n  {} ({}): {d}", p.name, p.id))
        })
        .collect();
    if !damaged.is_empty() && !damage.allow_damage {
        return Err(input(anyhow!(
            "{} is damaged (--allow-damage accepts it):{}",
            dir.display(),
            damaged.concat()
        )));
    }
    if summary.processes.is_empty() {
        return Err(input(anyhow!(
            "{}: the manifest lists no process and the directory holds no log",
            dir.display()
        )));
    }
    Ok(ExitCode::SUCCESS)
}

/// `--json`: the summary, and whether each manifest and exit record was written by the user.
#[derive(Serialize)]
struct Info<'a> {
    #[serde(flatten)]
    summary: &'a RecordingSummary,
    authenticity: &'a [FileAuthenticity],
}

/// Prints `s` and the manifests and exit records the user did not write; in a recording still
/// being written (`live`), a log that could not be read is one that changed under the reader.
fn print_text(s: &RecordingSummary, authenticity: &[FileAuthenticity], live: bool) {
    outln!("recording {}", s.recording.display());
    if s.nodes.is_empty() {
        outln!("  program  {}", s.program.display());
        outln!("  started  {}", s.start_time);
        outln!("  ended    {}", s.run_ending_text);
    } else {
        outln!("  {} OS processes (nodes)", s.nodes.len());
        outln!("  started  {}", s.start_time);
    }
    for file in authenticity
        .iter()
        .filter(|f| !f.authenticity.is_authenticated())
    {
        outln!("  unchecked {file}");
    }
    if let Some(reason) = &s.stopped {
        outln!("  recording stopped early: {reason}");
    }
    if !s.nodes.is_empty() {
        outln!();
        outln!(
            "  {:<16} {:>8} {:>9}  program, ending",
            "node",
            "os pid",
            "processes"
        );
        for n in &s.nodes {
            let program = n.program.file_name().unwrap_or(n.program.as_os_str());
            outln!(
                "  {:<16} {:>8} {:>9}  {}, {}",
                n.name,
                n.os_pid,
                n.processes,
                program.to_string_lossy(),
                n.run_ending_text
            );
            if let Some(reason) = &n.stopped {
                outln!("  {:<16} recording stopped early: {reason}", "");
            }
        }
    }
    outln!();
    outln!(
        "  {:<4} {:<16} {:>10} {:>11} {:>11}  ending",
        "id",
        "process",
        "events",
        "raw",
        "compressed"
    );
    let c = output::palette();
    for p in &s.processes {
        // Padded before it is painted: escapes take no columns.
        let name = c.process(format!("{:<16}", p.name));
        let ending = match &p.ending {
            Some(ProcessEnding::Panicked { .. }) => c.alarm(&p.ending_text),
            Some(ProcessEnding::Blocked { .. } | ProcessEnding::Running { .. }) | None => {
                c.note(&p.ending_text)
            }
            Some(ProcessEnding::Exited | ProcessEnding::NeverStarted) => p.ending_text.clone(),
        };
        outln!(
            "  {:<4} {name} {:>10} {:>11} {:>11}  {ending}",
            p.id.to_string(),
            p.events,
            output::bytes(p.bytes_raw),
            output::bytes(p.bytes_compressed),
        );
        let kinds: Vec<String> = p.by_kind.iter().map(|(k, n)| format!("{k} {n}")).collect();
        if !kinds.is_empty() {
            outln!("         {}", kinds.join(", "));
        }
        if p.state != "complete" {
            outln!("         log {}", p.state);
        }
        let label = if live { "changed while read" } else { "damage" };
        for d in &p.damage {
            outln!("         {}: {d}", c.alarm(label));
        }
    }
    outln!(
        "  {:<21} {:>10} {:>11} {:>11}  ratio {:.1}x",
        "total",
        s.events,
        output::bytes(s.bytes_raw),
        output::bytes(s.bytes_compressed),
        s.compression_ratio
    );
    if s.stalls > 0 {
        outln!("  writers waited {} times for the compressor", s.stalls);
    }
}
