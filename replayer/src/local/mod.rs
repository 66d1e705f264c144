//! Replay inside the program: the local debuggers (Manabe & Imase's LD_i, one per process).
//!
//! `#[ppd::main]` calls [`install_from_env`] when `ppd replay` started the program: it connects
//! to the global debugger, receives the goal, and installs the replay runtime, whose backend
//! forces every nondeterministic choice to its logged outcome.

mod control;
mod creations;
mod process;

pub use control::replay_clocks;
pub(crate) use process::{compare, describe_op, op_matches};

use std::io::BufReader;
use std::os::unix::net::UnixStream;
use std::panic::Location;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use ppd_formats::event::ObjectKind;
use ppd_formats::{ProcessId, Recording};
use ppd_recorder::runtime::backend::{Dependency, Mode, ProcessBackend, Runtime};
use ppd_recorder::runtime::{self, ReplayCode, env};

use self::control::Controller;
use self::creations::Creations;
use self::process::ReplayProcess;
use crate::protocol::{self, Command, Report, Setup};

/// Where reports go: the socket to the global debugger (or a test's collector).
pub(crate) type Sink = Box<dyn Fn(&Report) + Send + Sync>;

/// What the processes of the replayed program share.
pub(crate) struct Shared {
    recording: Recording,
    controller: Controller,
    verify: bool,
    /// Read on first need (`creations`).
    creations: OnceLock<Creations>,
}

impl Shared {
    /// What a process waiting for the creation of an object of `kind` made at `site` waits
    /// for: access 0 of the first such object not created yet, by its creator. `None` when the
    /// logs have no such creation left.
    fn creation_awaited(&self, kind: ObjectKind, site: &Location<'_>) -> Option<Dependency> {
        let creations = self
            .creations
            .get_or_init(|| Creations::read(&self.recording));
        let object = creations
            .at(kind, site)
            .iter()
            .copied()
            .find(|&object| !self.controller.created(object))?;
        Some(Dependency::Version {
            object,
            version: 0,
            by: object.creator(),
        })
    }
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("recording", &self.recording.dir())
            .field("verify", &self.verify)
            .finish_non_exhaustive()
    }
}

/// The replay-mode runtime.
#[derive(Debug)]
pub struct ReplayRuntime {
    shared: Arc<Shared>,
}

/// Events in each process's log, indexed by process id (0 for a log that cannot be read: the
/// process's backend reports the damage when it gets there).
fn logged(recording: &Recording, n: usize) -> Vec<u64> {
    let mut logged = vec![0; n];
    for p in recording.processes() {
        if let Ok(reader) = recording.open_log(p) {
            logged[p.id.index()] = reader.event_count();
        }
    }
    logged
}

/// The parent of each process, indexed by process id.
fn parents(recording: &Recording) -> Vec<Option<ProcessId>> {
    let n = recording
        .processes()
        .iter()
        .map(|p| p.id.index() + 1)
        .max()
        .unwrap_or(1);
    let mut parents = vec![None; n];
    for p in recording.processes() {
        parents[p.id.index()] = p.parent;
    }
    parents
}

impl ReplayRuntime {
    /// A replay runtime for `recording`, reporting to `sink`.
    pub(crate) fn new(recording: Recording, setup: Setup, sink: Sink) -> ReplayRuntime {
        let parents = parents(&recording);
        let logged = logged(&recording, parents.len());
        let mut names = vec![String::new(); parents.len()];
        for p in recording.processes() {
            names[p.id.index()] = p.name.clone();
        }
        let controller = Controller::new(parents, logged, names, setup.goal, sink);
        ReplayRuntime {
            shared: Arc::new(Shared {
                recording,
                controller,
                verify: setup.verify,
                creations: OnceLock::new(),
            }),
        }
    }

    /// Applies a command of the global debugger.
    pub(crate) fn command(&self, command: &Command) {
        self.shared.controller.command(command);
    }

    /// Watches for a replay that stopped making progress where the controllers cannot see why.
    fn start_watchdog(&self) {
        let shared = Arc::clone(&self.shared);
        let _ = std::thread::Builder::new()
            .name("ppd-watchdog".into())
            .spawn(move || {
                let _replay_code = ReplayCode::enter();
                let mut last = u64::MAX;
                let mut still = 0;
                loop {
                    std::thread::sleep(Duration::from_millis(250));
                    let now = shared.controller.progress();
                    still = if now == last { still + 1 } else { 0 };
                    last = now;
                    if still == 8 {
                        shared.controller.watchdog_check();
                    }
                }
            });
    }
}

impl Runtime for ReplayRuntime {
    fn mode(&self) -> Mode {
        Mode::Replay
    }

    fn allocate_process(&self) -> ProcessId {
        // A replayed spawn takes its child's id from the log; reaching this means the log had
        // no spawn there, which the process's backend reports as a divergence first.
        ProcessId(u32::MAX)
    }

    fn start_process(
        &self,
        id: ProcessId,
        _parent: Option<ProcessId>,
        _name: &str,
    ) -> Box<dyn ProcessBackend> {
        let _replay_code = ReplayCode::enter();
        let shared = &self.shared;
        // A process the recording has no entry for has no log (it was spawned just before the
        // run was cut short); one whose log cannot be opened stops, saying why.
        let events = match shared.recording.process(id) {
            None => Ok(None),
            Some(entry) => shared
                .recording
                .open_log(entry)
                // The backend reads the events as the process goes and owns the reader: the
                // log's file closes when the process's thread ends (a run of 20 000 short
                // threads would otherwise hold 20 000 files open).
                .map(|reader| Some(reader.into_events()))
                .map_err(|e| e.to_string()),
        };
        if id.index() < shared.controller.processes() {
            shared.controller.started(id);
        }
        Box::new(ReplayProcess::new(
            id,
            Arc::clone(shared),
            events,
            shared.controller.tests(),
        ))
    }

    /// `main` returned: the program ends once every other process has replayed its log (a
    /// thread still blocked when the recorded `main` returned is replayed up to its last
    /// event). A debugging session ends the program by its quit command instead.
    fn finish(&self, _exit_code: i32, _panicked: bool) {
        let _replay_code = ReplayCode::enter();
        self.shared.controller.wait_until_over();
    }
}

/// Connects to the global debugger named by the environment, receives the goal and installs
/// the replay runtime. Called by `#[ppd::main]` when `PPD_MODE=replay`.
pub fn install_from_env() -> Result<(), String> {
    let dir = std::env::var_os(env::DIR)
        .map(PathBuf::from)
        .ok_or_else(|| format!("{} is not set", env::DIR))?;
    let socket = std::env::var_os(env::CONTROL)
        .map(PathBuf::from)
        .ok_or_else(|| format!("{} is not set", env::CONTROL))?;
    let recording = Recording::open_node(&dir).map_err(|e| e.to_string())?;
    let stream = UnixStream::connect(&socket)
        .map_err(|e| format!("cannot reach the debugger at {}: {e}", socket.display()))?;
    let mut writer = stream
        .try_clone()
        .map_err(|e| format!("debugger socket: {e}"))?;
    protocol::send(
        &mut writer,
        &Report::Ready {
            os_pid: std::process::id(),
        },
    )
    .map_err(|e| format!("debugger socket: {e}"))?;
    let mut reader = BufReader::new(stream);
    let setup: Setup = protocol::receive(&mut reader)
        .map_err(|e| format!("debugger socket: {e}"))?
        .ok_or("the debugger closed the connection before sending the goal")?;

    let writer = Mutex::new(writer);
    let sink: Sink = Box::new(move |report| {
        let mut w = writer.lock().unwrap_or_else(|p| p.into_inner());
        // A debugger that went away cannot be told anything more; the program then ends
        // when the debugger's side kills it.
        let _ = protocol::send(&mut *w, report);
    });
    let runtime = Arc::new(ReplayRuntime::new(recording, setup, sink));
    let for_commands = Arc::clone(&runtime);
    std::thread::Builder::new()
        .name("ppd-control".into())
        .spawn(move || {
            let _replay_code = ReplayCode::enter();
            loop {
                match protocol::receive::<Command>(&mut reader) {
                    Ok(Some(Command::Quit)) | Ok(None) | Err(_) => std::process::exit(0),
                    Ok(Some(command)) => for_commands.command(&command),
                }
            }
        })
        .map_err(|e| format!("cannot start the control thread: {e}"))?;
    runtime.start_watchdog();
    runtime::install(Box::new(ArcRuntime(runtime)));
    Ok(())
}

/// Lets the runtime be shared with the control thread and installed at once.
#[derive(Debug)]
struct ArcRuntime(Arc<ReplayRuntime>);

impl Runtime for ArcRuntime {
    fn mode(&self) -> Mode {
        self.0.mode()
    }

    fn allocate_process(&self) -> ProcessId {
        self.0.allocate_process()
    }

    fn start_process(
        &self,
        id: ProcessId,
        parent: Option<ProcessId>,
        name: &str,
    ) -> Box<dyn ProcessBackend> {
        self.0.start_process(id, parent, name)
    }

    fn finish(&self, exit_code: i32, panicked: bool) {
        self.0.finish(exit_code, panicked)
    }
}
