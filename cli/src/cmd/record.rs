//! `ppd record`: run a program with the record runtime switched on.
//!
//! The wrapper only prepares the directory and the environment; the runtime inside the program
//! writes the logs and the manifest, so the manifest names the real binary even when PROGRAM is
//! `cargo run`. The wrapper makes the user's key first (the runtime seals the manifest with it)
//! and seals its own record of how the program ended, `exit.json`, with it.

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use anyhow::{Context, anyhow};
use ppd_formats::authenticity::UserKey;
use ppd_formats::integrity;
use ppd_formats::recording::{self, RECORDINGS_DIR};
use ppd_formats::summary::{Payloads, summarize};
use ppd_formats::{FormatError, Recording};
use ppd_formats::{ProcessEnding, ProgramExit};
use ppd_recorder::runtime::env;

use super::live_halt::LiveDebugger;
use crate::exit::{CliError, CmdResult, failure, input};
use crate::output;

/// Arguments of `ppd record`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Record into DIR instead of ./ppd-recordings/<program>-<n>.
    #[arg(short = 'o', long = "output", value_name = "DIR")]
    output: Option<PathBuf>,
    /// Log message payloads (by default only their order is logged).
    #[arg(long)]
    payloads: bool,
    /// Make every sealed log block durable (fdatasync) before its buffer is reused.
    #[arg(long)]
    fsync: bool,
    /// Record as part of run ID, recorded elsewhere too (other hosts, other launchers), so that
    /// `ppd merge` can combine the recordings. Without it the run gets a new id (or keeps the
    /// PPD_RUN it was started with).
    #[arg(long, value_name = "ID")]
    join: Option<String>,
    /// Record runs of PROGRAM until one fails (exits non-zero or is killed by a signal),
    /// keeping only that one: for a bug that shows in some runs only. The recordings of runs
    /// that passed are deleted.
    #[arg(long)]
    until_failure: bool,
    /// With --until-failure: give up after N runs (the last is kept).
    #[arg(long, value_name = "N", default_value_t = 100, requires = "until_failure",
          value_parser = clap::value_parser!(u32).range(1..))]
    tries: u32,
    /// Halt the live program where PRED holds (a simple predicate with or without `if`, or
    /// several joined by `|`, `&`, `==` or `->`), print its state, and keep the halt in the
    /// recording (`ppd replay --to halt`); without -i the program then runs on, recording.
    #[arg(long, value_name = "PRED", conflicts_with = "until_failure")]
    stop: Option<String>,
    /// With --stop: at each halt, take commands (print, continue, detach, kill).
    #[arg(short, long, requires = "stop")]
    interactive: bool,
    /// With --stop: at the halt, attach gdb to every halted OS process (one inferior each)
    /// with the breakpoint's thread selected in its own frame; when gdb ends, the program
    /// runs on, recording.
    #[arg(long, requires = "stop", conflicts_with_all = ["lldb", "interactive"])]
    gdb: bool,
    /// With --stop: at the halt, attach lldb to the first node's OS process.
    #[arg(long, requires = "stop", conflicts_with = "interactive")]
    lldb: bool,
    /// With --gdb or --lldb: print the debugger's command line instead of running it.
    #[arg(long)]
    dry_run: bool,
    /// With an `==` or `&` --stop: the program's `#[ppd::main]` file (or a directory holding
    /// one), for the static analysis that refuses an impossible predicate and finds the
    /// recognition points where an `==` is evaluated; by default found from PROGRAM.
    #[arg(long, value_name = "PATH", requires = "stop")]
    source: Option<PathBuf>,
    /// With --stop: no static analysis; an impossible predicate is recorded anyway, and an
    /// `==` is evaluated at every event.
    #[arg(long, requires = "stop")]
    no_check: bool,
    /// The program and its arguments.
    #[arg(
        required = true,
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "PROGRAM"
    )]
    command: Vec<String>,
}

/// The name a recording of `command` gets: the program's file name, or for `cargo run
/// --example NAME` / `--bin NAME` the NAME.
fn program_name(command: &[String]) -> String {
    let base = Path::new(&command[0])
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "run".into());
    if base == "cargo" {
        for pair in command.windows(2) {
            if pair[0] == "--example" || pair[0] == "--bin" {
                return pair[1].clone();
            }
        }
    }
    // A launcher script run by a shell (`sh start-cluster.sh`) names the run, not the shell.
    if SHELLS.contains(&base.as_str())
        && let Some(script) = command.get(1).filter(|a| !a.starts_with('-'))
        && let Some(stem) = Path::new(script).file_stem()
    {
        return stem.to_string_lossy().into_owned();
    }
    base
}

const SHELLS: &[&str] = &["sh", "bash", "dash", "zsh", "ksh"];

extern "C" fn ignore_signal(_: libc::c_int) {}

/// Keeps the wrapper alive through Ctrl-C and termination signals so it can report on the
/// recording; the program (in the same process group) gets the signal and decides. A handler,
/// not SIG_IGN, because handlers are reset for the program at exec.
fn shield_from_signals() {
    use nix::sys::signal::{SaFlags, SigAction, SigHandler, SigSet, Signal, sigaction};
    let action = SigAction::new(
        SigHandler::Handler(ignore_signal),
        SaFlags::SA_RESTART,
        SigSet::empty(),
    );
    for signal in [
        Signal::SIGINT,
        Signal::SIGQUIT,
        Signal::SIGTERM,
        Signal::SIGHUP,
    ] {
        // SAFETY: the handler does nothing, so it is async-signal-safe.
        let _ = unsafe { sigaction(signal, &action) };
    }
}

pub(crate) fn run(args: &Args) -> CmdResult {
    let run = match &args.join {
        Some(id) if env::valid_run_id(id) => id.clone(),
        Some(id) => {
            return Err(input(anyhow!(
                "--join {id:?}: a run id is 1 to 64 letters, digits, `-`, `_` and `.`"
            )));
        }
        None => std::env::var(env::RUN)
            .ok()
            .filter(|id| env::valid_run_id(id))
            .unwrap_or_else(new_run_id),
    };

    // Made before the program starts, which seals its manifest with it.
    let key = match UserKey::load_or_create() {
        Ok(key) => Some(key),
        Err(e) => {
            eprintln!(
                "ppd: warning: {e}\nppd: this recording will carry no MAC of yours: replaying \
                 it will need `ppd trust` or --binary"
            );
            None
        }
    };
    if args.dry_run && !args.gdb && !args.lldb {
        return Err(input(anyhow!("--dry-run goes with --gdb or --lldb")));
    }
    let interactive = args.interactive || args.gdb || args.lldb;
    if args.gdb || args.lldb {
        let tool = if args.gdb { "gdb all" } else { "lldb" };
        let dry = if args.dry_run { " --dry-run" } else { "" };
        super::debugger::input::script(vec![format!("{tool}{dry}"), "detach".to_owned()]);
    }
    // Before anything is made: a breakpoint the live program cannot evaluate is refused.
    let debugger = args
        .stop
        .as_deref()
        .map(|text| {
            let recognition = if args.no_check {
                Vec::new()
            } else {
                super::check::before_live(text, args.source.as_deref(), &args.command)?
            };
            LiveDebugger::prepare(text, interactive, recognition)
        })
        .transpose()?;
    shield_from_signals();
    let tries = if args.until_failure { args.tries } else { 1 };
    for attempt in 1..=tries {
        // Each run of `--until-failure` is a run of its own, with an id of its own.
        let run = if attempt == 1 {
            run.clone()
        } else {
            new_run_id()
        };
        let target = Target::prepare(args)?;
        let recorded = record_once(args, debugger.as_ref(), &target, &run, key.as_ref())?;
        let failed = !recorded.status.success();
        if !args.until_failure || failed || attempt == tries {
            if args.until_failure {
                let outcome = if failed {
                    format!("run {attempt} {}: this is its recording", recorded.how)
                } else {
                    format!("no run failed in {tries}; the recording of the last one is kept")
                };
                eprintln!("ppd: --until-failure: {outcome}");
            }
            return Ok(recorded.exit);
        }
        eprintln!(
            "ppd: --until-failure: run {attempt} {}; its recording is deleted, recording \
             run {} of at most {tries}",
            recorded.how,
            attempt + 1
        );
        target.discard()?;
    }
    unreachable!("the last attempt returns")
}

/// Where a run is recorded.
struct Target {
    /// The recording directory, absolute.
    dir: PathBuf,
    /// The directory `latest` is updated in, when the recording is one of ./ppd-recordings.
    base: Option<PathBuf>,
    /// Whether ppd made `dir` (rather than being given it, empty, by `-o`).
    created: bool,
}

impl Target {
    fn prepare(args: &Args) -> Result<Target, CliError> {
        let (dir, base, created) = match &args.output {
            Some(dir) => {
                let created = !dir.exists();
                (prepare_output(dir)?, None, created)
            }
            None => {
                let base = PathBuf::from(RECORDINGS_DIR);
                let dir = recording::create_recording_dir(&base, &program_name(&args.command))?;
                (dir, Some(base), true)
            }
        };
        let dir = std::fs::canonicalize(&dir)
            .map_err(|e| input(FormatError::io(&dir, "resolve recording directory", e)))?;
        Ok(Target { dir, base, created })
    }

    /// Removes what a run left in the directory (the directory too, if ppd made it): nothing
    /// was recorded worth keeping.
    fn discard(&self) -> Result<(), CliError> {
        let removed = if self.created {
            std::fs::remove_dir_all(&self.dir)
        } else {
            std::fs::read_dir(&self.dir).and_then(|entries| {
                entries.into_iter().try_for_each(|entry| {
                    let path = entry?.path();
                    if std::fs::symlink_metadata(&path)?.is_dir() {
                        std::fs::remove_dir_all(&path)
                    } else {
                        std::fs::remove_file(&path)
                    }
                })
            })
        };
        removed.map_err(|e| failure(FormatError::io(&self.dir, "remove a recording", e)))
    }
}

/// One run of the program, recorded.
struct Recorded {
    status: std::process::ExitStatus,
    /// How it ended, in words.
    how: String,
    /// What `ppd record` exits with for it.
    exit: ExitCode,
}

/// Runs the program once, recording into `target`, and reports on the recording.
/// `key` seals what ppd record writes, `exit.json`.
fn record_once(
    args: &Args,
    debugger: Option<&LiveDebugger>,
    target: &Target,
    run: &str,
    key: Option<&UserKey>,
) -> Result<Recorded, CliError> {
    let dir = &target.dir;
    warn_if_short_of_space(dir);
    let mut command = Command::new(&args.command[0]);
    command
        .args(&args.command[1..])
        .env(env::MODE, "record")
        .env(env::RUN, run)
        .env(env::DIR, dir)
        .env(env::PAYLOADS, if args.payloads { "1" } else { "0" })
        .env(env::FSYNC, if args.fsync { "1" } else { "0" });
    if let Some(debugger) = debugger {
        debugger.configure(&mut command);
        if debugger.interactive() {
            // The debugger's commands are not the program's input.
            command.stdin(std::process::Stdio::null());
        }
    }
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(e) => {
            // Nothing ran: no recording, and `latest` still names the last one there is.
            target.discard()?;
            return Err(input(anyhow!("cannot run {}: {e}", args.command[0])));
        }
    };
    if let Some(base) = &target.base {
        recording::update_latest(base, dir)?;
    }
    let status = match debugger {
        Some(debugger) => debugger.serve(&mut child, dir)?,
        None => child
            .wait()
            .with_context(|| format!("cannot wait for {}", args.command[0]))
            .map_err(failure)?,
    };
    let (code, how) = match (status.code(), status.signal()) {
        (Some(code), _) => (code, format!("exited with code {code}")),
        (None, Some(signal)) => (128 + signal, format!("killed by signal {signal}")),
        (None, None) => (1, "ended".to_owned()),
    };
    let exit = ExitCode::from(code.clamp(0, 255) as u8);
    // How the program ended, for readers of a recording whose runtime could not say (a kill).
    if dir.join(ppd_formats::manifest::MANIFEST_FILE).exists() {
        let seen = ProgramExit {
            code: status.code(),
            signal: status.signal(),
            pid: Some(child.id()),
        };
        if let Err(e) = seen.write(dir, key) {
            eprintln!("ppd: {e}");
        }
    }

    let recording = match Recording::open(dir) {
        Ok(r) => r,
        Err(FormatError::NotARecording { .. }) => {
            // A program that is not a ppd program ran and recorded nothing: nothing to keep,
            // and nothing `latest` should name.
            target.discard()?;
            if let Some(base) = &target.base {
                restore_latest(base);
            }
            return Err(input(anyhow!(
                "{} {how} without writing a recording: it is not a ppd program (its main \
                 must be marked #[ppd::main], and it must link ppd with the `record` feature)",
                args.command[0]
            )));
        }
        Err(e) => {
            eprintln!("ppd: {e}");
            return Ok(Recorded { status, how, exit });
        }
    };
    if key.is_some() {
        warn_unsealed(&recording);
    }
    report(&recording, dir, &how);
    Ok(Recorded { status, how, exit })
}

/// Points `latest` in `base` at the newest recording left there, or removes it when none is.
fn restore_latest(base: &Path) {
    let latest = base.join("latest");
    let _ = std::fs::remove_file(&latest);
    if let Ok(Some(newest)) = recording::resolve(Some(base)).map(Some)
        && newest.parent() == Some(base)
    {
        let _ = recording::update_latest(base, &newest);
    }
}

/// Warns of each manifest the program wrote without the user's MAC, though ppd record had the
/// key: it ran with another home, or could not read the key.
fn warn_unsealed(recording: &Recording) {
    for file in integrity::authenticity(recording)
        .iter()
        .filter(|f| !f.authenticity.is_authenticated())
    {
        eprintln!(
            "ppd: warning: {file}: the program did not seal it with your key (another HOME or \
             XDG_DATA_HOME?); replaying it will need `ppd trust` or --binary"
        );
    }
}

/// Prints the one-line summary of what was recorded.
fn report(recording: &Recording, dir: &Path, how: &str) {
    ppd_formats::progress::stage("summarizing the recording", None);
    match summarize(recording, Payloads::Verify) {
        Ok(s) => {
            let alive = s
                .processes
                .iter()
                .filter(|p| p.ending.as_ref().is_some_and(ProcessEnding::alive))
                .count();
            let unended: Vec<String> = s
                .nodes
                .iter()
                .filter(|n| n.run_ending.cut_short())
                .map(|n| format!("{} {}", n.name, n.run_ending))
                .collect();
            let state = if let Some(reason) = &s.stopped {
                format!("recording stopped early: {reason}")
            } else if s.complete {
                "complete".to_owned()
            } else if !unended.is_empty() {
                format!("recovered: {}", unended.join("; "))
            } else if !s.run_ending.cut_short() {
                let processes = if alive == 1 { "process" } else { "processes" };
                format!("the program {how} with {alive} {processes} still alive")
            } else {
                format!("recovered after the program {how}")
            };
            eprintln!(
                "ppd: recorded {} processes{}, {} events, {} in {} ({state})",
                s.processes.len(),
                match s.nodes.len() {
                    0 => String::new(),
                    n => format!(" in {n} OS processes"),
                },
                s.events,
                output::bytes(s.bytes_compressed),
                dir.display()
            );
        }
        Err(e) => eprintln!("ppd: {e}"),
    }
}

/// A run id no other run has: 16 random bytes, hex.
fn new_run_id() -> String {
    use std::io::Read;
    let mut bytes = [0u8; 16];
    let random = std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut bytes));
    if random.is_err() {
        // No randomness to be had: this host, process and moment.
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        bytes = (now ^ (u128::from(std::process::id()) << 64)).to_le_bytes();
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Processes whose rings should fit on the disk before `ppd record` stays quiet about space.
const PROCESSES_TO_FIT: u64 = 8;

/// Warns when the recording's file system has less free space than the rings of a few
/// processes: each log reserves its ring when it is created, and its frames need more. A
/// full disk stops the recording, not the program, but the user should know up front.
fn warn_if_short_of_space(dir: &Path) {
    let Ok(stat) = nix::sys::statvfs::statvfs(dir) else {
        return;
    };
    let free = stat.blocks_available() * stat.fragment_size();
    let options = ppd_formats::WriterOptions::default();
    let setting = |name: &str, default: u32| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(u64::from(default))
    };
    let ring = 4096
        + setting(env::BLOCK_SIZE, options.block_size)
            * setting(env::RING_BLOCKS, options.ring_blocks);
    if free < ring * PROCESSES_TO_FIT {
        eprintln!(
            "ppd: warning: only {} free on the file system of {}; each process's log reserves \
             {} when it starts and needs more as it grows. If the disk fills, recording stops \
             (the program runs on) and the recording replays up to that point.",
            output::bytes(free),
            dir.display(),
            output::bytes(ring)
        );
    }
}

/// `-o DIR`: created if missing, refused if it already holds something.
pub(crate) fn prepare_output(dir: &Path) -> Result<PathBuf, crate::exit::CliError> {
    use std::os::unix::fs::DirBuilderExt;
    if dir.exists() {
        let empty = std::fs::read_dir(dir)
            .map_err(|e| input(FormatError::io(dir, "list output directory", e)))?
            .next()
            .is_none();
        if !empty {
            return Err(input(anyhow!(
                "{}: output directory is not empty",
                dir.display()
            )));
        }
        // A recording is private: the directory must be the user's, and is tightened to 0700.
        use std::os::unix::fs::MetadataExt;
        let owner = std::fs::metadata(dir)
            .map_err(|e| input(FormatError::io(dir, "inspect output directory", e)))?
            .uid();
        let me = nix::unistd::geteuid().as_raw();
        if owner != me {
            return Err(input(anyhow!(
                "{}: output directory belongs to user {owner}, not to you (user {me}); a \
                 recording must be private",
                dir.display()
            )));
        }
        ppd_formats::private::ensure_dir(dir).map_err(input)?;
        return Ok(dir.to_owned());
    }
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| input(FormatError::io(dir, "create output directory", e)))?;
    ppd_formats::private::ensure_dir(dir).map_err(input)?;
    Ok(dir.to_owned())
}

#[cfg(test)]
mod tests {
    use super::program_name;

    fn v(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn recordings_are_named_after_the_program() {
        assert_eq!(program_name(&v(&["./target/debug/bank"])), "bank");
        assert_eq!(
            program_name(&v(&["cargo", "run", "--example", "farm"])),
            "farm"
        );
        assert_eq!(
            program_name(&v(&["cargo", "run", "--release", "--bin", "x"])),
            "x"
        );
        assert_eq!(program_name(&v(&["cargo", "test"])), "cargo");
        assert_eq!(
            program_name(&v(&["sh", "examples/kvstore.sh", "x"])),
            "kvstore"
        );
        assert_eq!(program_name(&v(&["bash", "-c", "true"])), "bash");
    }
}
