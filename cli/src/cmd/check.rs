//! `ppd check PRED`: a static verdict on a `==` or `&` predicate, from the program's source
//! (Spezialetti & Gupta's analysis, in `ppd-simultaneity`), before anything runs.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::anyhow;
use ppd_formats::live::{RecognitionAt, RecognitionPoint};
use ppd_replayer::predicate::{self, EventPattern, Predicate};
use ppd_simultaneity::source::{self, Program, What};
use ppd_simultaneity::{Combination, Component, Event, NodeId, Verdict};
use serde::Serialize;

use crate::exit::{CmdResult, input};
use crate::output;

/// The exit code of an *impossible* verdict.
const IMPOSSIBLE: u8 = 1;
/// The exit code of an *unknown* verdict.
const UNKNOWN: u8 = 3;

/// Arguments of `ppd check`.
#[derive(Debug, clap::Args)]
#[command(after_help = "\
Verdicts and exit codes:
  0  possible: no guaranteed interaction orders the components; the points where each is
     evaluated and the recognition points (Spezialetti & Gupta, section 3.2.4) are listed
  1  impossible in every run: a send after one component's end whose message a receive
     before the other's start must have taken; the chain is printed with file:line
  3  unknown: something the analysis does not model decides it; each is named with file:line
  2  bad input: unparsable source, no #[ppd::main], a bad predicate or a process the source
     does not have

Under `==`, `enter F` holds while inside F and `mark L` from the mark on; under `&`, each
component holds right after its event. Conditions (`if EXPR`) are not read: they only narrow
a component, so an impossible verdict stays sound, and a possible one means possible as far
as the program's messages go.")]
pub(crate) struct Args {
    /// The predicate: `P: EVENT == Q: EVENT` or `P: EVENT & Q: EVENT` (more components allowed).
    predicate: String,
    /// The program's source: its `#[ppd::main]` file, or a directory holding exactly one.
    #[arg(long, default_value = ".")]
    source: PathBuf,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// The components of `pred` and how they combine, or why `ppd check` cannot take it.
pub(crate) fn components(pred: &Predicate) -> Result<(Combination, Vec<Component>), String> {
    let (how, simples) = match pred {
        Predicate::Simultaneous(v) => (Combination::Simultaneous, v),
        Predicate::Conjunctive(v) => (Combination::Conjunctive, v),
        _ => {
            return Err(
                "ppd check decides `==` and `&` predicates of two or more components".to_owned(),
            );
        }
    };
    let components = simples
        .iter()
        .map(|s| Component {
            process: s.process.clone(),
            event: match &s.event {
                EventPattern::Enter(f) => Event::Enter(f.clone()),
                EventPattern::Exit(f) => Event::Exit(f.clone()),
                EventPattern::Send(c) => Event::Send(c.clone()),
                EventPattern::Recv(c) => Event::Recv(c.clone()),
                EventPattern::Mark(l) => Event::Mark(l.clone()),
            },
        })
        .collect();
    Ok((how, components))
}

/// The static verdict on `text` over the program at `source`.
pub(crate) fn decide(
    text: &str,
    source: &Path,
) -> Result<(Program, Vec<Component>, Verdict), crate::exit::CliError> {
    let parsed = predicate::parse(text).map_err(input)?;
    let (how, components) = components(&parsed).map_err(|e| input(anyhow!(e)))?;
    let (program, verdict) = analyse(source, how, &components)?;
    Ok((program, components, verdict))
}

/// The stack the analysis runs on: parsing and walking recurse as deep as the source nests,
/// which the analysis bounds, but in frames larger than a main thread's stack allows for.
const STACK: usize = 256 << 20;

/// Builds the program's graph and decides the predicate, on a thread with a stack of
/// [`STACK`] bytes.
fn analyse(
    source: &Path,
    how: Combination,
    components: &[Component],
) -> Result<(Program, Verdict), crate::exit::CliError> {
    let source = source.to_owned();
    let components = components.to_vec();
    let work = move || -> Result<(Program, Verdict), crate::exit::CliError> {
        let program = source::load(&source).map_err(input)?;
        let verdict = ppd_simultaneity::check(&program, how, &components).map_err(input)?;
        Ok((program, verdict))
    };
    std::thread::Builder::new()
        .name("ppd-check".into())
        .stack_size(STACK)
        .spawn(work)
        .map_err(|e| crate::exit::failure(anyhow!("cannot start the analysis: {e}")))?
        .join()
        .map_err(|_| crate::exit::failure(anyhow!("the analysis failed")))?
}

#[derive(Serialize)]
struct Place {
    process: String,
    what: String,
    file: String,
    line: usize,
}

fn place(p: &Program, n: NodeId) -> Place {
    Place {
        process: p.process_name(p.graph.nodes[n].process),
        what: p.what_text(n),
        file: p.sites[n].file.clone(),
        line: p.sites[n].line,
    }
}

#[derive(Serialize)]
struct Points {
    component: String,
    at: Vec<Place>,
}

#[derive(Serialize)]
struct Recognition {
    point: Place,
    after: Vec<Place>,
}

/// The size of the graph and the work of §3.2.5's steps.
#[derive(Serialize)]
struct Work {
    processes: usize,
    nodes: usize,
    sends: usize,
    receives: usize,
    message_edges: usize,
    pre_steps: usize,
    post1_steps: usize,
    post2_steps: usize,
}

fn work(p: &Program) -> Work {
    let c = ppd_simultaneity::Analysis::new(&p.graph).counts;
    Work {
        processes: p.graph.processes.len(),
        nodes: c.nodes,
        sends: c.sends,
        receives: c.receives,
        message_edges: c.edges,
        pre_steps: c.pre_steps,
        post1_steps: c.post1_steps,
        post2_steps: c.post2_steps,
    }
}

#[derive(Serialize)]
struct Report {
    predicate: String,
    verdict: &'static str,
    files: Vec<String>,
    graph: Work,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    points: Vec<Points>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    recognition: Vec<Recognition>,
    /// For an impossible verdict: the two components, and per ordering the chain
    /// `[end of one, send, receive, (send, receive)..., start of the other]`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    never_together: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    orderings: Vec<Vec<Place>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    reasons: Vec<String>,
}

fn report(text: &str, p: &Program, components: &[Component], v: &Verdict) -> Report {
    let mut r = Report {
        predicate: text.to_owned(),
        verdict: "",
        files: p.files.clone(),
        graph: work(p),
        points: Vec::new(),
        recognition: Vec::new(),
        never_together: Vec::new(),
        orderings: Vec::new(),
        reasons: Vec::new(),
    };
    match v {
        Verdict::Possible {
            points,
            recognition,
        } => {
            r.verdict = "possible";
            r.points = components
                .iter()
                .zip(points)
                .map(|(c, ns)| Points {
                    component: c.to_string(),
                    at: ns.iter().map(|&n| place(p, n)).collect(),
                })
                .collect();
            r.recognition = recognition
                .iter()
                .map(|x| Recognition {
                    point: place(p, x.point),
                    after: x.via.iter().map(|&(n, _)| place(p, n)).collect(),
                })
                .collect();
        }
        Verdict::Impossible { pair, chains, .. } => {
            r.verdict = "impossible";
            r.never_together = vec![
                components[pair.0].to_string(),
                components[pair.1].to_string(),
            ];
            r.orderings = chains
                .iter()
                .map(|c| c.iter().map(|&n| place(p, n)).collect())
                .collect();
        }
        Verdict::Unknown { reasons } => {
            r.verdict = "unknown";
            r.reasons = reasons.clone();
        }
    }
    r
}

pub(crate) fn run(args: &Args) -> CmdResult {
    let (program, components, verdict) = decide(&args.predicate, &args.source)?;
    if args.json {
        output::json(&report(&args.predicate, &program, &components, &verdict));
    } else {
        output::out!(
            "{}",
            ppd_simultaneity::render(&program, &components, &verdict)
        );
        let w = work(&program);
        output::outln!(
            "(from {} file(s): {} processes, {} nodes, {} sends, {} receives, {} message edges)",
            program.files.len(),
            w.processes,
            w.nodes,
            w.sends,
            w.receives,
            w.message_edges
        );
    }
    Ok(match verdict {
        Verdict::Possible { .. } => ExitCode::SUCCESS,
        Verdict::Impossible { .. } => ExitCode::from(IMPOSSIBLE),
        Verdict::Unknown { .. } => ExitCode::from(UNKNOWN),
    })
}

/// The `#[ppd::main]` file of the recorded program, if it can be found unchanged since the
/// recording started: among the source files the main process's events name, resolved
/// against the recording's working directory, the current one and the directories above the
/// recorded binary.
pub(crate) fn recorded_source(recording: &ppd_formats::Recording) -> Option<PathBuf> {
    let manifest = recording.manifest();
    let entry = recording.processes().first()?;
    let mut files: Vec<String> = Vec::new();
    for e in recording.open_log(entry).ok()?.events().take(10_000) {
        let Ok((_, event)) = e else { break };
        if let Some(site) = event.site()
            && !files.contains(&site.file)
        {
            files.push(site.file.clone());
        }
    }
    let mut bases = vec![manifest.cwd.clone(), PathBuf::new()];
    bases.extend(
        manifest
            .program
            .path
            .ancestors()
            .skip(1)
            .map(Path::to_owned),
    );
    let started = std::time::UNIX_EPOCH + std::time::Duration::from_nanos(manifest.start_unix_ns);
    for f in files.iter().filter(|f| f.ends_with(".rs")) {
        for base in &bases {
            let path = base.join(f);
            let Ok(meta) = std::fs::metadata(&path) else {
                continue;
            };
            // A source edited since the run may not be what was recorded.
            if meta.modified().is_ok_and(|m| m > started) {
                return None;
            }
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            if text.contains("ppd::main") {
                return Some(path);
            }
        }
    }
    None
}

/// Before `ppd record --stop` under an `==` or `&` predicate: the static verdict on the
/// program at `source` (given, or found from the recorded command). An impossible predicate is
/// refused, saying why; a possible `==` gives the recognition points where the live program
/// evaluates it; otherwise (no source found, *unknown*) an `==` is evaluated at every event, as
/// is said. (`&` holds right after its events, so it is evaluated at them.)
pub(crate) fn before_live(
    text: &str,
    source: Option<&Path>,
    command: &[String],
) -> Result<Vec<RecognitionPoint>, crate::exit::CliError> {
    let Ok(parsed) = predicate::parse(text) else {
        return Ok(Vec::new());
    };
    let Ok((how, components)) = components(&parsed) else {
        return Ok(Vec::new());
    };
    let simultaneous = how == Combination::Simultaneous;
    let everywhere = |why: String| {
        if simultaneous {
            eprintln!("ppd: {why}: the predicate is evaluated at every event");
        }
        Ok(Vec::new())
    };
    let (src, analysed) = match source {
        // One the user named must be readable.
        Some(src) => (src.to_owned(), Ok(analyse(src, how, &components)?)),
        None => match source_of_command(command) {
            Some(src) => {
                let analysed = analyse(&src, how, &components);
                (src, analysed)
            }
            None => {
                return everywhere(
                    "no source of the program found for the static analysis (--source FILE \
                     names it)"
                        .to_owned(),
                );
            }
        },
    };
    let (program, verdict) = match analysed {
        Ok(analysed) => analysed,
        Err(e) => {
            return everywhere(format!(
                "the static analysis of {} failed ({})",
                src.display(),
                error_text(e)
            ));
        }
    };
    match &verdict {
        Verdict::Impossible { .. } => Err(cannot_hold(
            &src,
            &program,
            &components,
            &verdict,
            "records",
        )),
        Verdict::Possible { .. } | Verdict::Unknown { .. } if !simultaneous => Ok(Vec::new()),
        Verdict::Possible { recognition, .. } => {
            let points: Vec<RecognitionPoint> = recognition
                .iter()
                .map(|r| live_point(&program, r.point))
                .collect();
            if points.is_empty() {
                eprintln!(
                    "ppd: the static analysis of {} found no recognition point: the predicate \
                     is evaluated at every event",
                    src.display()
                );
            } else {
                let at: Vec<String> = recognition
                    .iter()
                    .map(|r| {
                        let n = r.point;
                        let process = program.process_name(program.graph.nodes[n].process);
                        format!(
                            "{process} at {} ({})",
                            program.sites[n],
                            program.what_text(n)
                        )
                    })
                    .collect();
                eprintln!(
                    "ppd: the predicate is evaluated at its recognition points only (Spezialetti \
                     & Gupta §3.2.4; --no-check evaluates it at every event): {}",
                    at.join("; ")
                );
            }
            Ok(points)
        }
        Verdict::Unknown { .. } => everywhere(format!(
            "the static analysis of {} cannot decide the predicate (`ppd check` says why)",
            src.display()
        )),
    }
}

/// The refusal of a predicate the analysis of `src` found impossible; the command `--no-check`
/// then `anyway` does.
fn cannot_hold(
    src: &Path,
    program: &Program,
    components: &[Component],
    verdict: &Verdict,
    anyway: &str,
) -> crate::exit::CliError {
    input(anyhow!(
        "the predicate cannot hold in any run of {} (--no-check {anyway} anyway):\n{}",
        src.display(),
        ppd_simultaneity::render(program, components, verdict).trim_end()
    ))
}

/// An error of the analysis, in words.
fn error_text(e: crate::exit::CliError) -> String {
    match e {
        crate::exit::CliError::Input(e) | crate::exit::CliError::Failure(e) => format!("{e:#}"),
    }
}

/// Node `n` of the analysed program as the live program sees it: the event of its process
/// that is the node.
fn live_point(program: &Program, n: NodeId) -> RecognitionPoint {
    let site = &program.sites[n];
    let at = match &program.what[n] {
        What::Enter(f) => RecognitionAt::Enter(f.clone()),
        What::Mark(Some(label)) => RecognitionAt::Mark(label.clone()),
        What::Start | What::Started => RecognitionAt::Start,
        What::Stop | What::Ending => RecognitionAt::End,
        _ => RecognitionAt::Site {
            file: site.file.clone(),
            line: u32::try_from(site.line).unwrap_or(u32::MAX),
        },
    };
    RecognitionPoint {
        process: program.process_name(program.graph.nodes[n].process),
        at,
    }
}

/// The `#[ppd::main]` file of the program `command` runs, when it can be told: for a binary
/// cargo built (`ROOT/target/PROFILE/[examples/]NAME`, or `cargo run --bin|--example NAME`
/// in ROOT) the one file `NAME.rs` under ROOT that holds `ppd::main` (or ROOT's
/// `src/main.rs`).
pub(crate) fn source_of_command(command: &[String]) -> Option<PathBuf> {
    let program = Path::new(command.first()?);
    let (root, name) = if program.file_name().is_some_and(|n| n == "cargo") {
        let named = command
            .windows(2)
            .find(|w| w[0] == "--bin" || w[0] == "--example")
            .map(|w| w[1].clone());
        (std::env::current_dir().ok()?, named)
    } else {
        let program = std::fs::canonicalize(program).ok()?;
        let root = program
            .ancestors()
            .find(|a| a.file_name().is_some_and(|n| n == "target"))?
            .parent()?
            .to_owned();
        let name = program.file_name()?.to_string_lossy().into_owned();
        (root, Some(name))
    };
    let holds_main =
        |path: &Path| std::fs::read_to_string(path).is_ok_and(|t| t.contains("ppd::main"));
    let mut found = Vec::new();
    if let Some(name) = &name {
        find_named(&root, &format!("{name}.rs"), 4, &mut found);
    }
    found.retain(|p| holds_main(p));
    match found.as_slice() {
        [one] => Some(one.clone()),
        [] => Some(root.join("src/main.rs")).filter(|p| holds_main(p)),
        _ => None,
    }
}

/// Every file called `file` under `dir`, `depth` directories down at most, past `target` and
/// hidden directories.
fn find_named(dir: &Path, file: &str, depth: usize, found: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        match entry.file_type() {
            Ok(t) if t.is_dir() && depth > 0 && name != "target" && !name.starts_with('.') => {
                find_named(&path, file, depth - 1, found);
            }
            Ok(t) if t.is_file() && name == file => found.push(path),
            _ => {}
        }
    }
}

/// Refuses the `==` or `&` predicate `text`, before a replay of `recording`, when the program's
/// source shows that no run can satisfy it; proceeds (`Ok`) whenever the source is not found
/// or the verdict is anything but *impossible*.
pub(crate) fn refuse_impossible(
    recording: &ppd_formats::Recording,
    text: &str,
) -> Result<(), crate::exit::CliError> {
    let Ok(parsed) = predicate::parse(text) else {
        return Ok(());
    };
    let Ok((how, components)) = components(&parsed) else {
        return Ok(());
    };
    let Some(src) = recorded_source(recording) else {
        return Ok(());
    };
    match analyse(&src, how, &components) {
        Ok((program, v @ Verdict::Impossible { .. })) => {
            Err(cannot_hold(&src, &program, &components, &v, "replays"))
        }
        _ => Ok(()),
    }
}
