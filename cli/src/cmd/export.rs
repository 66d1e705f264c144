//! `ppd export`: a run in other tools' formats.

use std::path::PathBuf;
use std::process::ExitCode;

use ppd_flowback::export::{json, perfetto, shiviz};

use super::graph::write_to;
use super::races::open_analysis;
use crate::damage::DamageArgs;
use crate::exit::CmdResult;

/// Export formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Format {
    /// Chrome trace JSON: open it in ui.perfetto.dev or chrome://tracing.
    Perfetto,
    /// ShiViz's vector-clock log; its first line is the parsing regular expression ShiViz asks
    /// for, so the file can be uploaded as is.
    Shiviz,
    /// Every event as plain JSON, with clocks and edges.
    Json,
}

/// Arguments of `ppd export`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The recording (default: the newest in ./ppd-recordings).
    rec: Option<PathBuf>,
    /// The format.
    #[arg(long, value_enum)]
    format: Format,
    /// Write to FILE instead of standard output.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: Option<PathBuf>,
    #[command(flatten)]
    damage: DamageArgs,
}

pub(crate) fn run(args: &Args) -> CmdResult {
    let (_, analysis) = open_analysis(args.rec.as_deref(), args.damage)?;
    let (trace, clocks) = (&analysis.trace, &analysis.clocks);
    write_to(args.output.as_deref(), "the export", |out| {
        match args.format {
            Format::Perfetto => perfetto::write(trace, clocks, out),
            Format::Shiviz => shiviz::write(trace, clocks, out),
            Format::Json => json::write(trace, clocks, out),
        }
    })?;
    Ok(ExitCode::SUCCESS)
}
