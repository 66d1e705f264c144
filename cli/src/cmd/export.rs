//! `ppd export`: a run in other tools' formats.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::ValueEnum;

use ppd_flowback::export::{json, perfetto, perfetto_proto, shiviz};

use super::graph::{WindowArgs, announce, destination, write_to};
use super::races::open_analysis;
use crate::damage::DamageArgs;
use crate::exit::{CmdResult, input};

/// Export formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Format {
    /// Perfetto's native protobuf trace (about 30 bytes per event): open it in ui.perfetto.dev.
    Perfetto,
    /// Chrome trace JSON, with a description of every event: open it in ui.perfetto.dev or
    /// chrome://tracing.
    PerfettoJson,
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
    /// Write to FILE instead of standard output (on a terminal, the default is a file beside
    /// the recording, named after it: `bank-1.perfetto-trace`).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: Option<PathBuf>,
    #[command(flatten)]
    damage: DamageArgs,
    /// The part of the run to export (ShiViz only: it lays out every event it is given).
    #[command(flatten)]
    window: WindowArgs,
}

pub(crate) fn run(args: &Args) -> CmdResult {
    if args.format != Format::Shiviz && !args.window.is_all() {
        return Err(input(anyhow::anyhow!(
            "--from, --to and --processes choose a window of the ShiViz log; the {} export \
             is always the whole run (its viewers zoom)",
            args.format
                .to_possible_value()
                .map_or_else(String::new, |v| v.get_name().to_owned())
        )));
    }
    let (checked, analysis) = open_analysis(args.rec.as_deref(), args.damage)?;
    let (trace, clocks) = (&analysis.trace, &analysis.clocks);
    let window = args.window.resolve(&checked.recording, trace)?;
    let extension = match args.format {
        Format::Perfetto => "perfetto-trace",
        Format::PerfettoJson => "trace.json",
        Format::Shiviz => "shiviz.log",
        Format::Json => "json",
    };
    let output = destination(args.output.as_deref(), &checked.dir, extension);
    write_to(output.as_deref(), "the export", |out| match args.format {
        Format::Perfetto => perfetto_proto::write(trace, clocks, out),
        Format::PerfettoJson => perfetto::write(trace, clocks, out),
        Format::Shiviz => shiviz::write(trace, clocks, &window, out),
        Format::Json => json::write(trace, clocks, out),
    })?;
    if args.output.is_none()
        && let Some(path) = &output
    {
        announce(path, "the export", false);
    }
    Ok(ExitCode::SUCCESS)
}
