//! `ppd`: record a run of a parallel program, replay it, ask why a variable has its value.
//!
//! Errors go to stderr; the exit code is 2 for bad input (a missing or damaged recording, a bad
//! predicate, a wrong argument) and 1 for a failure (a replay that diverged, a program that
//! could not be started). `ppd record` exits with the recorded program's own code.

mod cmd;
mod damage;
mod exit;
mod output;
mod progress;
mod rec;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(name = "ppd", version, about, long_about = None)]
struct Cli {
    /// Show no progress (it is shown only on a terminal, for work that runs over a second).
    #[arg(long, short, global = true)]
    quiet: bool,
    /// When to colour the text ppd prints: process names, sites, races, why-chains.
    #[arg(long, global = true, value_enum, value_name = "WHEN", default_value_t = output::ColorWhen::Auto)]
    color: output::ColorWhen,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// `cargo build` with automatic e-blocks, so `ppd why` explains every function of the
    /// workspace's crates with no annotation (into TARGET/ppd).
    Build(cmd::build::Args),
    /// Record a run of PROGRAM (built with #[ppd::main]); exits with the program's exit code.
    Record(cmd::record::Args),
    /// Replay a recording: verify it, halt it at a distributed breakpoint, trace it, step it.
    Replay(cmd::replay::Args),
    /// Why a variable has its value: the chain of statements, messages and processes behind it.
    Why(cmd::why::Args),
    /// Processes, events, bytes, compression and completeness of a recording.
    Info {
        /// The recording (default: the newest in ./ppd-recordings).
        rec: Option<PathBuf>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        damage: damage::DamageArgs,
    },
    /// Data races, message races and deadlocks of a recorded run.
    Races(cmd::races::Args),
    /// A static verdict on a `==` or `&` predicate from the program's source: possible
    /// (exit 0), impossible in every run (1) or unknown (3).
    Check(cmd::check::Args),
    /// A time-space diagram of a run: HTML (zoomable), SVG or Graphviz.
    Graph(cmd::graph::Args),
    /// Export a run for Perfetto, ShiViz or scripts.
    Export(cmd::export::Args),
    /// Analyses of a run against a model: `tasks` (which task failed, where, why).
    Analyze(cmd::analyze::Args),
    /// One recording from recordings of one run made apart (`ppd record --join ID`).
    Merge(cmd::merge::Args),
    /// Vouch for a recording made elsewhere, after seeing what it would run, so it can replay.
    Trust(cmd::trust::Args),
    /// A completion script for SHELL, on standard output
    /// (`ppd completions bash > ~/.local/share/bash-completion/completions/ppd`).
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
}

/// Output into a closed pipe (`ppd info | head`) ends `ppd` quietly, as it does other Unix
/// tools, instead of failing the next `println!`.
fn die_on_closed_pipe() {
    use nix::sys::signal::{SigHandler, Signal, signal};
    // SAFETY: restores the default disposition before any other thread exists; no handler
    // code runs.
    let _ = unsafe { signal(Signal::SIGPIPE, SigHandler::SigDfl) };
}

/// Prints what clap has to say instead of running a command (help, the version, a usage
/// error), and gives its exit code; help that cannot be written (`ppd --help > /dev/full`) is a
/// failure, as any other output is.
fn exit_from_clap(e: &clap::Error) -> ExitCode {
    use std::io::Write;
    let written = e.print().and_then(|()| std::io::stdout().flush());
    match written {
        // A usage error that could not be shown: its exit code still says what happened.
        Err(_) if e.use_stderr() => ExitCode::from(e.exit_code() as u8),
        Err(error) => {
            eprintln!("ppd: cannot write to standard output: {error}");
            ExitCode::FAILURE
        }
        Ok(()) => ExitCode::from(e.exit_code() as u8),
    }
}

fn main() -> ExitCode {
    if ppd_instrument::wrapper::started_as_wrapper() {
        return rustc_wrapper();
    }
    die_on_closed_pipe();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return exit_from_clap(&e),
    };
    progress::install(cli.quiet);
    output::choose_palette(cli.color);
    let result = match cli.command {
        Command::Build(args) => cmd::build::run(&args),
        Command::Record(args) => cmd::record::run(&args),
        Command::Replay(args) => cmd::replay::run(&args),
        Command::Why(args) => cmd::why::run(&args),
        Command::Info { rec, json, damage } => cmd::info::run(rec.as_deref(), json, damage),
        Command::Races(args) => cmd::races::run(&args),
        Command::Check(args) => cmd::check::run(&args),
        Command::Graph(args) => cmd::graph::run(&args),
        Command::Export(args) => cmd::export::run(&args),
        Command::Analyze(args) => cmd::analyze::run(&args),
        Command::Merge(args) => cmd::merge::run(&args),
        Command::Trust(args) => cmd::trust::run(&args),
        Command::Completions { shell } => {
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "ppd", &mut script);
            output::out!("{}", String::from_utf8_lossy(&script));
            Ok(ExitCode::SUCCESS)
        }
    };
    progress::clear();
    let code = match result {
        Ok(code) => code,
        Err(e) => e.report(),
    };
    // Output that did not reach its reader is a failure, whatever the command concluded.
    match output::finish() {
        Ok(()) => code,
        Err(e) => {
            eprintln!("ppd: cannot write to standard output: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `ppd` as cargo's rustc wrapper, under `ppd build`: the arguments are rustc's command line.
fn rustc_wrapper() -> ExitCode {
    let command: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    match ppd_instrument::wrapper::run(&command) {
        Ok(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
        Err(e) => {
            eprintln!("ppd: {e}");
            ExitCode::from(2)
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory as _;

    #[test]
    fn the_command_line_definition_is_consistent() {
        super::Cli::command().debug_assert();
    }
}
