//! The global debugger (Manabe & Imase's GD, Miller & Choi's debugger process): starts the
//! recorded program in replay mode with a control connection, sets the goal, sends commands
//! and reads back reports.

mod state;

use std::io::BufReader;
use std::os::fd::AsFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command as Process, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use ppd_formats::Recording;
use ppd_formats::authenticity::ReaderKey;
use ppd_formats::manifest::{MANIFEST_FILE, Manifest};
use ppd_recorder::runtime::env;
use ppd_recorder::runtime::program_hash::program_hash;

pub use state::{ChannelState, HaltState, ProcessState, Reason};

use crate::protocol::{self, Command, Report, Setup};

/// Why the global debugger could not do its job.
#[derive(Debug, thiserror::Error)]
pub enum DebugError {
    /// The recorded binary is not there.
    #[error("{path}: the recorded program is missing (rebuild it, or pass --binary)")]
    BinaryMissing {
        /// Where it should be.
        path: PathBuf,
    },
    /// The binary is not the one that was recorded.
    #[error(
        "{path}: this is not the binary that was recorded (its BLAKE3 hash differs from the \
         one in the recording's manifest); ppd runs only the program it recorded"
    )]
    BinaryChanged {
        /// The binary.
        path: PathBuf,
    },
    /// The manifest has no hash of the program: nothing says which binary may run.
    #[error(
        "{manifest}: the recording has no hash of its program, so ppd cannot tell whether {path} \
         is the program it recorded, and does not run it"
    )]
    BinaryUnverified {
        /// The manifest.
        manifest: PathBuf,
        /// The binary.
        path: PathBuf,
    },
    /// The manifest was not written by this user's ppd here, and the user did not name the
    /// program: a recording from elsewhere must not choose what runs.
    #[error(
        "{manifest}: {why}. ppd runs a recorded program only from a recording you made here: \
         look at what it would run and trust it with `ppd trust {dir}`, or name the program \
         yourself with --binary PATH"
    )]
    NotAuthenticated {
        /// The manifest.
        manifest: PathBuf,
        /// What its MAC says.
        why: String,
        /// The recording (the node's directory).
        dir: PathBuf,
    },
    /// The binary has the recorded hash but is not a ppd program (a shell, another tool).
    #[error(
        "{path}: not a program built with ppd (it does not carry the ppd runtime); ppd runs \
         only ppd programs, never a shell or another tool, even with --binary"
    )]
    NotAPpdProgram {
        /// The binary.
        path: PathBuf,
    },
    /// A file or directory others could have changed: what it says cannot be trusted.
    #[error(
        "{path}: {problem}; ppd does not run programs from recordings others can change \
         (fix with chown/chmod go-w)"
    )]
    Untrusted {
        /// The file or directory.
        path: PathBuf,
        /// Who owns it or who can write to it.
        problem: String,
    },
    /// The program ended before it connected.
    #[error(
        "{program} ended ({status}) before it reached the debugger: is its main marked \
         #[ppd::main]?"
    )]
    NotStarted {
        /// The program.
        program: PathBuf,
        /// How it ended.
        status: ExitStatus,
    },
    /// The program ended while the debugger expected more.
    #[error("the replayed program ended ({status}) before the replay was over")]
    Ended {
        /// How it ended.
        status: ExitStatus,
    },
    /// The program said something this debugger cannot read: most often a program built
    /// with another version of ppd's runtime than this `ppd`.
    #[error(
        "the replayed program sent a report this ppd cannot read ({reason}); was it built with \
         another version of ppd than this one?"
    )]
    Unreadable {
        /// What was wrong with it.
        reason: String,
    },
    /// A replay that was to trace a process's body ended without its trace
    /// (`crate::body`): the body is not compiled for tracing, did not return, or the replay
    /// stopped first.
    #[error("{0}")]
    BodyNotTraced(String),
    /// Anything the operating system refused.
    #[error("{action}: {source}")]
    Io {
        /// What was being done.
        action: &'static str,
        /// The error.
        #[source]
        source: std::io::Error,
    },
}

impl DebugError {
    /// Whether the error is about the user's input (a program or recording ppd will not run)
    /// rather than a failure of the run.
    pub fn is_bad_input(&self) -> bool {
        matches!(
            self,
            DebugError::BinaryMissing { .. }
                | DebugError::BinaryChanged { .. }
                | DebugError::BinaryUnverified { .. }
                | DebugError::NotAuthenticated { .. }
                | DebugError::NotAPpdProgram { .. }
                | DebugError::Untrusted { .. }
        )
    }
}

fn io(action: &'static str) -> impl FnOnce(std::io::Error) -> DebugError {
    move |source| DebugError::Io { action, source }
}

/// Where the replayed program's standard output goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProgramOutput {
    /// To the debugger's standard output.
    Inherit,
    /// To the debugger's standard error (when standard output carries JSON).
    ToStderr,
    /// Nowhere.
    Discard,
}

/// How to start the program.
#[derive(Debug, Clone)]
pub struct Launch {
    /// The binary to run instead of the recorded path (it must have the recorded hash).
    pub binary: Option<PathBuf>,
    /// Where its output goes.
    pub output: ProgramOutput,
    /// More of its environment.
    pub env: Vec<(&'static str, std::ffi::OsString)>,
}

/// A running replay.
#[derive(Debug)]
pub struct Session {
    child: Child,
    reader: BufReader<UnixStream>,
    writer: UnixStream,
    _socket_dir: tempfile::TempDir,
    ended: Option<ExitStatus>,
}

/// The binary to replay or re-execute: the recorded program (or `binary`, when it moved),
/// run only if it is what was recorded, by whom it was recorded, and a ppd program.
///
/// Like ssh's StrictModes, the recording directory (whose manifest names the program and its
/// hash) and the binary must belong to the invoking user or root and be writable by no one
/// else. The manifest must carry this user's MAC (it was written by their ppd here, or they
/// trusted it with `ppd trust`) unless the user names the program with `binary`: a recording
/// from elsewhere chooses neither the program nor, unchecked, its arguments. The binary's
/// BLAKE3 hash must equal the manifest's (a manifest without one runs nothing), and the binary
/// must carry the ppd runtime's marker, `--binary` or not, so that no manifest makes ppd run a
/// shell or another tool with arguments of its choosing.
pub fn check_binary(recording: &Recording, binary: Option<&Path>) -> Result<PathBuf, DebugError> {
    let program = &recording.manifest().program;
    let path = binary.map_or_else(|| program.path.clone(), Path::to_path_buf);
    let manifest_path = recording.dir().join(MANIFEST_FILE);
    trusted(recording.dir(), "recording directory")?;
    trusted(&manifest_path, "manifest")?;
    if binary.is_none() {
        let key = ReaderKey::of_user();
        // What runs is what was checked: the manifest the recording was opened with.
        let why = match Manifest::read_checked(recording.dir(), &key) {
            Ok((read, authenticity)) if read == *recording.manifest() => {
                (!authenticity.is_authenticated()).then(|| authenticity.to_string())
            }
            Ok(_) => Some("it changed while ppd read the recording".into()),
            Err(e) => Some(format!("it cannot be read again: {e}")),
        };
        if let Some(why) = why {
            return Err(DebugError::NotAuthenticated {
                manifest: manifest_path,
                why,
                dir: recording.dir().to_owned(),
            });
        }
    }
    if !path.is_file() {
        return Err(DebugError::BinaryMissing { path });
    }
    trusted(&path, "program")?;
    if program.blake3.is_empty() {
        return Err(DebugError::BinaryUnverified {
            manifest: manifest_path,
            path,
        });
    }
    let actual = program_hash(&path).map_err(io("hash the program"))?;
    if actual.blake3 != program.blake3 {
        return Err(DebugError::BinaryChanged { path });
    }
    if !actual.ppd_program {
        return Err(DebugError::NotAPpdProgram { path });
    }
    if binary.is_some() {
        eprintln!(
            "ppd: running {} (--binary; it has the recorded program's hash)",
            path.display()
        );
    }
    Ok(path)
}

/// `path` belongs to the invoking user or root and is writable by no one else.
fn trusted(path: &Path, what: &str) -> Result<(), DebugError> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(path).map_err(io("inspect the recording"))?;
    let me = nix::unistd::geteuid().as_raw();
    let problem = if meta.uid() != me && meta.uid() != 0 {
        Some(format!(
            "the {what} belongs to user {}, not to you (user {me}) or root",
            meta.uid()
        ))
    } else if meta.mode() & 0o022 != 0 {
        Some(format!(
            "the {what} is writable by {} (mode {:o})",
            if meta.mode() & 0o002 != 0 {
                "everyone"
            } else {
                "its group"
            },
            meta.mode() & 0o7777
        ))
    } else {
        None
    };
    match problem {
        Some(problem) => Err(DebugError::Untrusted {
            path: path.to_owned(),
            problem,
        }),
        None => Ok(()),
    }
}

impl Session {
    /// Starts the recorded program in replay mode and gives it `setup`.
    pub fn start(
        recording: &Recording,
        launch: &Launch,
        setup: &Setup,
    ) -> Result<Session, DebugError> {
        let binary = check_binary(recording, launch.binary.as_deref())?;
        let manifest = recording.manifest();
        let socket_dir = tempfile::Builder::new()
            .prefix("ppd-replay")
            .tempdir()
            .map_err(io("create the control socket's directory"))?;
        let socket = socket_dir.path().join("control");
        let listener = UnixListener::bind(&socket).map_err(io("bind the control socket"))?;
        listener
            .set_nonblocking(true)
            .map_err(io("configure the control socket"))?;
        let dir = std::fs::canonicalize(recording.dir()).map_err(io("resolve the recording"))?;
        let stdout = match launch.output {
            ProgramOutput::Inherit => Stdio::inherit(),
            ProgramOutput::Discard => Stdio::null(),
            ProgramOutput::ToStderr => match std::io::stderr().as_fd().try_clone_to_owned() {
                Ok(fd) => Stdio::from(fd),
                Err(_) => Stdio::null(),
            },
        };
        let cwd = if manifest.cwd.is_dir() {
            manifest.cwd.clone()
        } else {
            std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"))
        };
        let mut child = Process::new(&binary)
            .args(manifest.argv.iter().skip(1))
            .current_dir(cwd)
            .env(env::MODE, "replay")
            .env(env::DIR, &dir)
            .env(env::CONTROL, &socket)
            .envs(launch.env.iter().map(|(k, v)| (k, v)))
            .stdout(stdout)
            .stdin(Stdio::null())
            .spawn()
            .map_err(io("start the recorded program"))?;
        let stream = loop {
            match listener.accept() {
                Ok((stream, _)) => break stream,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    if let Some(status) = child.try_wait().map_err(io("wait for the program"))? {
                        return Err(DebugError::NotStarted {
                            program: binary,
                            status,
                        });
                    }
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(e) => return Err(io("accept the program's connection")(e)),
            }
        };
        stream
            .set_nonblocking(false)
            .map_err(io("configure the control connection"))?;
        let writer = stream
            .try_clone()
            .map_err(io("clone the control connection"))?;
        let mut session = Session {
            child,
            reader: BufReader::new(stream),
            writer,
            _socket_dir: socket_dir,
            ended: None,
        };
        match session.next_report()? {
            Report::Ready { .. } => {}
            other => {
                return Err(DebugError::Io {
                    action: "start the replay",
                    source: std::io::Error::other(format!("unexpected first report {other:?}")),
                });
            }
        }
        protocol::send(&mut session.writer, setup).map_err(io("send the goal"))?;
        Ok(session)
    }

    /// The next report; fails when the program ends first.
    pub fn next_report(&mut self) -> Result<Report, DebugError> {
        match protocol::receive(&mut self.reader) {
            Ok(Some(report)) => Ok(report),
            Err(e) if e.kind() == std::io::ErrorKind::InvalidData => Err(DebugError::Unreadable {
                reason: e.to_string(),
            }),
            Ok(None) | Err(_) => {
                let status = self.wait()?;
                Err(DebugError::Ended { status })
            }
        }
    }

    /// Sends a command.
    pub fn command(&mut self, command: &Command) -> Result<(), DebugError> {
        protocol::send(&mut self.writer, command).map_err(io("send a command"))
    }

    /// Waits for the program to exit.
    pub fn wait(&mut self) -> Result<ExitStatus, DebugError> {
        if let Some(status) = self.ended {
            return Ok(status);
        }
        let status = self.child.wait().map_err(io("wait for the program"))?;
        self.ended = Some(status);
        Ok(status)
    }

    /// Waits at most `limit` for the program to exit by itself.
    pub fn wait_for_exit(&mut self, limit: Duration) -> Result<Option<ExitStatus>, DebugError> {
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().map_err(io("wait for the program"))? {
                self.ended = Some(status);
                return Ok(Some(status));
            }
            if start.elapsed() > limit {
                return Ok(None);
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// The replayed program's OS process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Ends the program: asks it to quit, then kills it if it does not.
    pub fn quit(mut self) -> Result<(), DebugError> {
        let _ = self.command(&Command::Quit);
        if self.wait_for_exit(Duration::from_millis(500))?.is_none() {
            let _ = self.child.kill();
            self.wait()?;
        }
        Ok(())
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if self.ended.is_none() && matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
