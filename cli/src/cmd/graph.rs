//! `ppd graph`: the time-space diagram of a run.

use std::path::PathBuf;
use std::process::ExitCode;

use ppd_flowback::HaltCut;
use ppd_flowback::picture::{Diagram, Plan, View, dot, html, svg};
use ppd_flowback::tasks;

use std::io::{BufWriter, Write};
use std::path::Path;

use ppd_flowback::FlowbackError;
use ppd_flowback::Window;
use ppd_flowback::trace::Trace;
use ppd_flowback::why::find_process;
use ppd_formats::Recording;

use super::races::{classify, open_analysis};
use crate::damage::DamageArgs;
use crate::exit::{CliError, CmdResult, failure, input};
use crate::output::outln;
use crate::progress;

/// Picture formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Format {
    /// One self-contained page: zoom, pan, race list.
    Html,
    /// A standalone image.
    Svg,
    /// Graphviz (render with `dot -Tsvg`).
    Dot,
}

/// Arguments of `ppd graph`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The recording (default: the newest in ./ppd-recordings).
    rec: Option<PathBuf>,
    /// The picture format.
    #[arg(long, value_enum, default_value_t = Format::Html)]
    format: Format,
    /// Write to FILE instead of standard output (on a terminal, the default is a file beside
    /// the recording, named after it: `bank-1.html`).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: Option<PathBuf>,
    #[command(flatten)]
    damage: DamageArgs,
    /// Draw task N's events (`ppd::task`) in colour and grey out the rest of the run.
    #[arg(long, value_name = "N")]
    task: Option<u64>,
    #[command(flatten)]
    window: WindowArgs,
    /// Draw every event that matters, however many (the default turns a run too large to
    /// draw into an overview). Prints a size estimate first.
    #[arg(long)]
    full: bool,
    /// With --full, write the picture even when the estimate is over 200 MB.
    #[arg(long, requires = "full")]
    yes: bool,
    /// Past N dots the picture becomes an overview (the default keeps it to a few MB).
    #[arg(
        long,
        value_name = "N",
        default_value_t = 20_000,
        conflicts_with = "full"
    )]
    max_dots: usize,
}

/// Estimated size past which `--full` asks for `--yes`.
const HUGE: u64 = 200_000_000;

pub(crate) fn run(args: &Args) -> CmdResult {
    let (checked, analysis) = open_analysis(args.rec.as_deref(), args.damage)?;
    let (dir, recording) = (&checked.dir, &checked.recording);
    let cut = match HaltCut::load(dir) {
        Ok(cut) => cut,
        Err(e) => {
            progress::note(&format!("ppd: not drawing the halt cut: {e}"));
            None
        }
    };
    let program = recording
        .manifest()
        .program
        .path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "run".into());
    let mut title = format!("{program}: {}", dir.display());
    let focus = match args.task {
        Some(n) => {
            let graph = tasks::task_graph(recording, &analysis.trace, &analysis.clocks, n)
                .map_err(classify)?
                .ok_or_else(|| input(anyhow::anyhow!("the run has no task {n}")))?;
            title.push_str(&format!(", task {n}"));
            Some(graph.highlight(&analysis.clocks))
        }
        None => None,
    };
    let window = args.window.resolve(recording, &analysis.trace)?;
    let (data, messages) = (analysis.data_races(), analysis.message_races());
    let view = View {
        window,
        budget: (!args.full).then_some(args.max_dots),
        chosen: focus.iter().flatten().copied().collect(),
    };
    // The plan is made once: `--full`'s estimate counts the picture below.
    let plan = Plan::new(
        &analysis.trace,
        &analysis.clocks,
        &data,
        &messages,
        cut.as_ref(),
        &view,
    );
    if args.full {
        let size = plan.size(&analysis.clocks);
        let bytes = match args.format {
            Format::Html => html::estimated_bytes(size),
            Format::Svg => svg::estimated_bytes(size),
            Format::Dot => dot::estimated_bytes(size),
        };
        progress::note(&format!(
            "ppd: the full picture: {} dots, {} arrows, {} boxes: about {}",
            size.dots,
            size.arrows,
            size.runs,
            megabytes(bytes)
        ));
        if bytes > HUGE && !args.yes {
            return Err(input(anyhow::anyhow!(
                "not writing a picture of about {}: add --yes to write it anyway, or zoom with \
                 --from/--to/--processes (without --full, an overview)",
                megabytes(bytes)
            )));
        }
    }
    let mut diagram = Diagram::from_plan(
        &title,
        &analysis.trace,
        &analysis.clocks,
        cut.as_ref(),
        &view,
        plan,
    );
    if let Some(events) = &focus {
        diagram.focus(events);
    }
    for note in &diagram.left_out {
        progress::note(&format!("ppd: left out: {note}"));
    }
    ppd_formats::progress::stage("writing the picture", None);
    let text = match args.format {
        Format::Html => html::render(&diagram),
        Format::Svg => svg::render(&diagram),
        Format::Dot => dot::render(&diagram),
    };
    let extension = match args.format {
        Format::Html => "html",
        Format::Svg => "svg",
        Format::Dot => "dot",
    };
    let output = destination(args.output.as_deref(), dir, extension);
    write_to(output.as_deref(), "the picture", |out| {
        out.write_all(text.as_bytes())
            .map_err(|source| FlowbackError::Output {
                what: "the picture",
                source,
            })
    })?;
    if args.output.is_none()
        && let Some(path) = &output
    {
        announce(path, "the picture", args.format == Format::Html);
    }
    Ok(ExitCode::SUCCESS)
}

/// `bytes` for people: `12.3 MB`.
fn megabytes(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

/// Where a picture or an export goes: the file `-o` names; else standard output when it is a
/// pipe or a file; else, on a terminal, which has no use for HTML or protobuf, a file beside
/// the recording `dir` named after it with `extension` (`bank-1.html`), whose path is printed,
/// as `cargo doc --open` and `perf report` keep binary output off the terminal.
pub(crate) fn destination(path: Option<&Path>, dir: &Path, extension: &str) -> Option<PathBuf> {
    use std::io::IsTerminal;
    match path {
        Some(path) => Some(path.to_owned()),
        None if std::io::stdout().is_terminal() => {
            let name = dir
                .file_name()
                .map_or_else(|| "recording".into(), |n| n.to_string_lossy().into_owned());
            Some(dir.with_file_name(format!("{name}.{extension}")))
        }
        None => None,
    }
}

/// Says where a picture or export written beside its recording went; a page gets a `file://`
/// address a browser opens.
pub(crate) fn announce(path: &Path, what: &str, page: bool) {
    let absolute = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_owned());
    if page {
        outln!(
            "ppd: wrote {what} to {} (open file://{})",
            path.display(),
            absolute.display()
        );
    } else {
        outln!("ppd: wrote {what} to {}", path.display());
    }
}

/// Runs `write` on FILE (created or truncated, private like everything ppd writes) or on
/// standard output, buffered. A FILE that cannot be created is a bad argument; a write that
/// fails is a failure.
pub(crate) fn write_to(
    path: Option<&Path>,
    what: &'static str,
    write: impl FnOnce(&mut dyn Write) -> Result<(), FlowbackError>,
) -> Result<(), CliError> {
    use std::os::unix::fs::OpenOptionsExt;
    let target = path.map_or_else(|| "standard output".to_owned(), |p| p.display().to_string());
    let fail = |e: FlowbackError| failure(anyhow::Error::new(e).context(target.clone()));
    let flushed = |source| FlowbackError::Output { what, source };
    match path {
        Some(path) => {
            let file = std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(0o600)
                .open(path)
                .map_err(|e| {
                    input(anyhow::Error::new(e).context(format!("cannot create {target}")))
                })?;
            let mut out = BufWriter::new(file);
            write(&mut out).map_err(fail)?;
            out.flush().map_err(flushed).map_err(fail)
        }
        None => {
            let stdout = std::io::stdout();
            let mut out = BufWriter::new(stdout.lock());
            write(&mut out).map_err(fail)?;
            out.flush().map_err(flushed).map_err(fail)
        }
    }
}

/// `--from`, `--to`, `--processes`: the part of a run to show.
#[derive(Debug, clap::Args)]
pub(crate) struct WindowArgs {
    /// Start at Lamport time T (the time axis of every picture and export).
    #[arg(long, value_name = "T")]
    from: Option<u32>,
    /// End at Lamport time T (inclusive).
    #[arg(long, value_name = "T")]
    to: Option<u32>,
    /// Only these processes (names or p<id>, comma-separated).
    #[arg(long, value_name = "NAMES", value_delimiter = ',')]
    processes: Vec<String>,
}

impl WindowArgs {
    /// Whether no window was asked for.
    pub(crate) fn is_all(&self) -> bool {
        self.from.is_none() && self.to.is_none() && self.processes.is_empty()
    }

    /// The window, with its processes looked up in the recording.
    pub(crate) fn resolve(&self, recording: &Recording, trace: &Trace) -> Result<Window, CliError> {
        let mut processes = Vec::with_capacity(self.processes.len());
        for name in &self.processes {
            let id = find_process(recording, name.trim()).map_err(classify)?;
            let p = trace.index_of(id).ok_or_else(|| {
                input(anyhow::anyhow!(
                    "process `{name}` has no events in the recording"
                ))
            })?;
            processes.push(p);
        }
        Window::new(trace, self.from, self.to, &processes).map_err(classify)
    }
}
