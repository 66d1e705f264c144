//! `ppd record --stop PRED [-i]`: the debugger of a live program.
//!
//! Miller & Choi §4: the debugger is a process of its own (this one) with a control channel to
//! the program (a Unix socket the program's runtime connects to, named in its environment).
//! The program evaluates the breakpoint where it occurs and halts itself by the halting
//! algorithm (`ppd_recorder`'s `runtime::halt`); this side prints the halted state, read from
//! the recording so far at the positions the program reports, keeps the halt in the recording
//! (`halts.json`, so `ppd replay --to halt` reproduces it), and resumes, detaches or kills.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus};
use std::time::Duration;

use anyhow::anyhow;
use ppd_formats::live::{
    DebuggerCommand, Halt, HaltReport, LiveEvent, LiveStatus, LiveStop, LiveTrigger,
};
use ppd_formats::{ProcessId, Recording};
use ppd_recorder::runtime::env;
use ppd_replayer::debugger::{HaltState, Reason};
use ppd_replayer::predicate::{self, Catalog, EventPattern, Predicate, Simple};
use ppd_replayer::protocol::{HaltReason, ProcessReport};

use super::debugger::input::{Input, Words};
use crate::exit::{CliError, failure, input};
use crate::output::out;

/// The breakpoint of one recorded run and the socket the program reports on.
pub(crate) struct LiveDebugger {
    stop: LiveStop,
    /// Each trigger's simple predicate, as written.
    trigger_texts: Vec<String>,
    interactive: bool,
    listener: UnixListener,
    socket: PathBuf,
    /// Holds the socket's directory for the run.
    _dir: tempfile::TempDir,
}

/// What the user chose at a halt.
enum Choice {
    Continue,
    Detach,
    Kill,
}

impl LiveDebugger {
    /// Parses `text` and makes the socket. A predicate the live program cannot evaluate yet
    /// is refused, pointing at what to do instead.
    pub(crate) fn prepare(text: &str, interactive: bool) -> Result<LiveDebugger, CliError> {
        let parsed = predicate::parse(text).map_err(input)?;
        let simples = match &parsed {
            Predicate::Simple(s) => vec![s.clone()],
            Predicate::Disjunctive(v) => v.clone(),
            _ => {
                return Err(input(anyhow!(
                    "--stop {text:?}: a live program halts at a simple predicate or at a \
                     disjunction of them (`|`); for `&`, `->` and `==`, record the run, then \
                     `ppd replay --stop`"
                )));
            }
        };
        let any_of = simples
            .iter()
            .map(|s| trigger(text, s))
            .collect::<Result<Vec<_>, _>>()?;
        let dir = tempfile::Builder::new()
            .prefix("ppd-live-")
            .tempdir()
            .map_err(|e| failure(anyhow!("cannot make the debugger's socket directory: {e}")))?;
        let socket = dir.path().join("control.sock");
        let listener = UnixListener::bind(&socket).map_err(|e| {
            failure(anyhow!(
                "cannot listen for the program at {}: {e}",
                socket.display()
            ))
        })?;
        listener
            .set_nonblocking(true)
            .map_err(|e| failure(anyhow!("cannot listen for the program: {e}")))?;
        Ok(LiveDebugger {
            stop: LiveStop {
                text: parsed.to_string(),
                any_of,
            },
            trigger_texts: simples.iter().map(ToString::to_string).collect(),
            interactive,
            listener,
            socket,
            _dir: dir,
        })
    }

    /// Tells the program, through its environment, the breakpoint and where to report.
    pub(crate) fn configure(&self, command: &mut Command) {
        let stop = serde_json::to_string(&self.stop).expect("a breakpoint serializes");
        command
            .env(env::LIVE_STOP, stop)
            .env(env::LIVE_CONTROL, &self.socket);
    }

    /// Serves the program's halts until it ends; its exit status.
    pub(crate) fn serve(&self, child: &mut Child, dir: &Path) -> Result<ExitStatus, CliError> {
        let Some(stream) = self.accept(child)? else {
            eprintln!(
                "ppd: the program never armed the breakpoint (it ended before its runtime \
                 connected); it ran unhalted"
            );
            return wait(child);
        };
        let mut reports = BufReader::new(
            stream
                .try_clone()
                .map_err(|e| failure(anyhow!("the program's control channel: {e}")))?,
        )
        .lines();
        let mut commands = stream;
        let mut terminal = self.interactive.then(|| Input::open(Words::default()));
        let mut halts = 0;
        while let Some(Ok(line)) = reports.next() {
            halts += 1;
            let report: HaltReport = serde_json::from_str(&line)
                .map_err(|e| failure(anyhow!("the program's halt report {line:?}: {e}")))?;
            let state = self.halted_state(dir, &report)?;
            out!("{}", state.render());
            out!("{}", halting_order(&report, &state));
            let halt = Halt {
                halt: report.halt,
                predicate: self.stop.text.clone(),
                initiator: report.initiator,
                order: report.order.clone(),
                cut: state.processes.iter().map(|p| (p.id, p.events)).collect(),
            };
            if let Err(e) = keep(dir, halt, &state) {
                eprintln!("ppd: not keeping the halt in the recording: {e}");
            }
            let choice = match &mut terminal {
                Some(terminal) => ask(terminal, &state, &report),
                None => {
                    out!(
                        "\nthe program runs on, recording (`ppd replay --to halt:{}` brings a \
                         replay here; -i to stay)\n",
                        report.halt
                    );
                    Choice::Detach
                }
            };
            let command = match choice {
                Choice::Continue => DebuggerCommand::Continue,
                Choice::Detach => DebuggerCommand::Detach,
                Choice::Kill => {
                    // The recording survives SIGKILL; what was logged up to the halt is kept.
                    let _ = child.kill();
                    return wait(child);
                }
            };
            let mut line = serde_json::to_string(&command).expect("a command serializes");
            line.push('\n');
            if commands.write_all(line.as_bytes()).is_err() {
                break;
            }
        }
        let status = wait(child)?;
        if halts == 0 {
            self.never_held(dir);
        }
        Ok(status)
    }

    /// Says that the breakpoint never held, and which of its processes never ran.
    fn never_held(&self, dir: &Path) {
        let absent: Vec<&str> = match Recording::open(dir) {
            Ok(recording) => self
                .stop
                .any_of
                .iter()
                .filter(|t| {
                    !recording
                        .processes()
                        .iter()
                        .any(|p| t.names_process(p.id, &p.name))
                })
                .map(|t| t.process.as_str())
                .collect(),
            Err(_) => Vec::new(),
        };
        let absent = if absent.is_empty() {
            String::new()
        } else {
            format!(" (no process named {} ran)", absent.join(", "))
        };
        eprintln!(
            "ppd: --stop {:?} never held in this run{absent}",
            self.stop.text
        );
    }

    /// The program's connection, once its runtime starts; `None` if it ends first.
    fn accept(&self, child: &mut Child) -> Result<Option<UnixStream>, CliError> {
        loop {
            match self.listener.accept() {
                Ok((stream, _)) => {
                    stream
                        .set_nonblocking(false)
                        .map_err(|e| failure(anyhow!("the program's control channel: {e}")))?;
                    return Ok(Some(stream));
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(failure(anyhow!("waiting for the program: {e}"))),
            }
            if child
                .try_wait()
                .map_err(|e| failure(anyhow!("waiting for the program: {e}")))?
                .is_some()
            {
                return Ok(None);
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// The halted state the report describes, read from the recording so far.
    fn halted_state(&self, dir: &Path, report: &HaltReport) -> Result<HaltState, CliError> {
        let recording = Recording::open(dir).map_err(failure)?;
        let catalog = Catalog::of(&recording).map_err(failure)?;
        let reports: Vec<ProcessReport> = report
            .processes
            .iter()
            .map(|p| ProcessReport {
                id: p.id,
                events: p.events,
                status: p.status.text().to_owned(),
                waiting_for: None,
                holds: Vec::new(),
                vclock: Vec::new(),
            })
            .collect();
        let reason = Reason::Halted(HaltReason::Predicate);
        let mut state = HaltState::build(
            &recording,
            &catalog,
            None,
            reason,
            &reports,
            Some(report.latency_ns),
        )
        .map_err(failure)?;
        state.predicate = Some(self.stop.text.clone());
        for p in &mut state.processes {
            if p.id == report.initiator {
                p.holds = self
                    .trigger_texts
                    .get(report.trigger)
                    .cloned()
                    .into_iter()
                    .collect();
            }
        }
        Ok(state)
    }
}

/// Keeps `halt` in the recording for `ppd replay --to halt`, and its cut where `ppd why --at
/// halt` and `ppd graph` look for the last halt.
fn keep(dir: &Path, halt: Halt, state: &HaltState) -> ppd_formats::Result<()> {
    ppd_formats::live::append_halt(dir, halt)?;
    let cache = Recording::open(dir)?.cache_dir()?;
    let json = serde_json::to_vec_pretty(&state.cut_json()).expect("a cut serializes");
    ppd_formats::private::write_atomic(&cache.join("halt.json"), &json, false)
}

/// The simple predicate `s` of `text` as the program evaluates it.
fn trigger(text: &str, s: &Simple) -> Result<LiveTrigger, CliError> {
    if s.condition.is_some() {
        return Err(input(anyhow!(
            "--stop {text:?}: a live program does not evaluate conditions (`if`) yet; halt \
             at the event, or record the run and `ppd replay --stop` with the condition"
        )));
    }
    let event = match &s.event {
        EventPattern::Enter(f) => LiveEvent::Enter(f.clone()),
        EventPattern::Exit(f) => LiveEvent::Exit(f.clone()),
        EventPattern::Send(c) => LiveEvent::Send(c.clone()),
        EventPattern::Recv(c) => LiveEvent::Recv(c.clone()),
        EventPattern::Mark(l) => LiveEvent::Mark(l.clone()),
    };
    Ok(LiveTrigger {
        process: s.process.clone(),
        event,
    })
}

/// The halting order, and the processes not halted, as lines for the terminal.
fn halting_order(report: &HaltReport, state: &HaltState) -> String {
    let name = |id: ProcessId| {
        state
            .processes
            .iter()
            .find(|p| p.id == id)
            .map_or_else(|| id.to_string(), |p| p.name.clone())
    };
    let order: Vec<String> = report.order.iter().map(|id| name(*id)).collect();
    let mut text = format!(
        "\n  halt {} started by {}; halting order: {}\n",
        report.halt,
        name(report.initiator),
        order.join(" -> ")
    );
    let with = |status: LiveStatus| -> Vec<String> {
        report
            .processes
            .iter()
            .filter(|p| p.status == status)
            .map(|p| p.name.clone())
            .collect()
    };
    let waiting = with(LiveStatus::Waiting);
    if !waiting.is_empty() {
        text.push_str(&format!(
            "  halted while waiting: {} (blocked on halted processes)\n",
            waiting.join(", ")
        ));
    }
    let running = with(LiveStatus::Running);
    if !running.is_empty() {
        text.push_str(&format!(
            "  not halted: {} (no operation since the halt; each halts at its next)\n",
            running.join(", ")
        ));
    }
    text
}

/// Asks the user at a halt what to do, until they say continue, detach or kill.
fn ask(terminal: &mut Input, state: &HaltState, report: &HaltReport) -> Choice {
    loop {
        let Some(line) = terminal.line() else {
            return Choice::Detach;
        };
        match line.trim() {
            "" => {}
            "c" | "continue" => return Choice::Continue,
            "detach" | "q" | "quit" => return Choice::Detach,
            "kill" => return Choice::Kill,
            "p" | "print" => {
                out!("{}", state.render());
                out!("{}", halting_order(report, state));
            }
            "h" | "help" => out!(
                "print      the halted state again\n\
                 continue   resume every process; the breakpoint halts the program again\n\
                 detach     resume every process with the breakpoint off; recording goes on\n\
                 kill       kill the program (the recording keeps everything up to the kill)\n"
            ),
            other => out!("unknown command `{other}` (help lists them)\n"),
        }
    }
}

fn wait(child: &mut Child) -> Result<ExitStatus, CliError> {
    child
        .wait()
        .map_err(|e| failure(anyhow!("cannot wait for the program: {e}")))
}
