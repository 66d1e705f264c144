//! A process's body traced in a replay: the closure a thread was spawned with, or `main`'s
//! body, when it is not an e-block.
//!
//! Miller & Choi re-execute an e-block from its prelog alone (§5.3). A thread's closure has no
//! prelog: what it captured is not logged, and its types have no names the attribute could use
//! to rebuild them. It is traced instead by replaying the run: `#[ppd::main]` compiles each
//! closure it hands to a `spawn` (and its own body) twice, as written and traced, and the
//! replay of the recording runs the traced copy in the one process asked for ([`traced`]),
//! every value it computes the one the recorded run computed. When the body returns, its
//! trace is written and the program exits: what the rest of the run does cannot change it.
//!
//! It costs the replay of the run up to the body's end, where an e-block's re-execution costs
//! its own events; `ppd why` uses it only where no e-block answers.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use ppd_formats::eblock_trace::{BODY_ENTER, EblockTrace};
use ppd_formats::{ProcessId, Recording};
use ppd_recorder::runtime::backend::Mode;
use ppd_recorder::runtime::{self, env};
use ppd_recorder::tracer;

use crate::debugger::{DebugError, Launch, ProgramOutput, Session};
use crate::protocol::{Goal, Report, Setup};

/// Whether a body started being traced: one is, the first the process asked for runs.
static STARTED: AtomicBool = AtomicBool::new(false);

/// Whether the body about to run is the one to trace: this is a replay asked to trace the
/// current process's body, and no body of it started yet (a thread runs the closure it was
/// spawned with before anything else of the program's that `#[ppd::main]` compiles twice).
pub fn traced() -> bool {
    if runtime::mode() != Mode::Replay {
        return false;
    }
    let Some(wanted) = std::env::var_os(env::TRACE_BODY) else {
        return false;
    };
    let current = runtime::current_process().map(|p| p.0.to_string());
    if current.as_deref().map(std::ffi::OsStr::new) != Some(wanted.as_os_str()) {
        return false;
    }
    !STARTED.swap(true, Ordering::SeqCst)
}

/// Runs the traced copy of a body named `name`, writes its trace where the replay was asked
/// to, and ends the program.
pub fn run_traced<R>(name: &'static str, body: impl FnOnce() -> R) -> R {
    tracer::start();
    let ran = catch_unwind(AssertUnwindSafe(body));
    let records = tracer::finish();
    let panicked = match &ran {
        Ok(_) => None,
        Err(_) => Some(match runtime::take_last_panic() {
            Some(p) => format!("{:?} at {}:{}", p.message, p.file, p.line),
            None => "a panic".to_owned(),
        }),
    };
    let trace = EblockTrace {
        process: runtime::current_process().unwrap_or(ProcessId(0)),
        eblock: name.to_owned(),
        enter: BODY_ENTER,
        exit: None,
        records,
        leaks: Vec::new(),
        logged_panic: None,
        panicked,
    };
    let written = std::env::var_os(env::TRACE_OUT)
        .map(PathBuf::from)
        .map(|out| {
            let bytes = serde_json::to_vec(&trace).expect("a trace always serializes");
            std::fs::write(&out, bytes)
        });
    match written {
        Some(Ok(())) => std::process::exit(0),
        Some(Err(e)) => {
            eprintln!("ppd: cannot write the trace of {name}: {e}");
            std::process::exit(2)
        }
        None => {
            eprintln!(
                "ppd: {} names no file for the trace of {name}",
                env::TRACE_OUT
            );
            std::process::exit(2)
        }
    }
}

/// Traces the body of `process` by replaying `recording` with `binary` (default: the recorded
/// one) up to the body's end.
pub fn trace(
    recording: &Recording,
    binary: Option<&Path>,
    process: ProcessId,
) -> Result<EblockTrace, DebugError> {
    let scratch = tempfile::Builder::new()
        .prefix("ppd-body")
        .tempdir()
        .map_err(|source| DebugError::Io {
            action: "create a scratch directory",
            source,
        })?;
    let out = scratch.path().join("trace.json");
    let launch = Launch {
        binary: binary.map(Path::to_owned),
        output: ProgramOutput::Discard,
        env: vec![
            (env::TRACE_BODY, process.0.to_string().into()),
            (env::TRACE_OUT, out.clone().into_os_string()),
        ],
    };
    let setup = Setup {
        goal: Goal::Run,
        verify: false,
    };
    let mut session = Session::start(recording, &launch, &setup)?;
    // Until the program exits, which it does once the body's trace is written; or until the
    // replay is over without the body returning (every log replayed, stuck, diverged): a run
    // cut short leaves its processes parked at their logs' ends, and the program never exits
    // by itself.
    let mut last = None;
    loop {
        match session.next_report() {
            Ok(
                report @ (Report::Finished { .. } | Report::Stuck { .. } | Report::Diverged { .. }),
            ) => {
                last = Some(report);
                session.quit()?;
                break;
            }
            Ok(report) => last = Some(report),
            Err(DebugError::Ended { .. }) => break,
            Err(e) => return Err(e),
        }
    }
    match std::fs::read(&out) {
        Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| DebugError::Io {
            action: "read the traced body",
            source: std::io::Error::new(std::io::ErrorKind::InvalidData, e),
        }),
        Err(_) => Err(DebugError::BodyNotTraced(match last {
            Some(Report::Diverged {
                event,
                expected,
                happened,
                ..
            }) => format!(
                "the replay diverged at event {event} (expected {expected}, happened \
                 {happened}) before the body returned"
            ),
            Some(Report::Stuck { .. }) => {
                "the replay was stuck before the body returned".to_owned()
            }
            _ => "it is not compiled for tracing (only main's body and the closures written in it \
                  as a `spawn`'s argument are), or it did not return in the recorded run"
                .to_owned(),
        })),
    }
}
