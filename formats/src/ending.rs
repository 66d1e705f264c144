//! How each process ended and how the recording ended, read from the logs and the manifest:
//! what `ppd info` and the replay summaries say about runs that hang, crash, panic or are
//! killed.
//!
//! A process's ending is its log's last event: an exit, a panic, or a wait marker (`Blocked`)
//! that the process never got past. A log that ends anywhere else belongs to a process that was
//! still running when the program exited or died. The recording's ending is the manifest's
//! `end`: absent when the program died before the runtime could write it.

use std::fmt;
use std::io::Write;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::authenticity::{Authenticity, ReaderKey, SealedFile, UserKey, sealed_json, unseal};
use crate::error::{FormatError, Result};
use crate::event::Event;
use crate::ids::{ObjectId, ProcessId};
use crate::manifest::Manifest;
use crate::reader::LogReader;
use crate::recording::Recording;

/// How one process's log ends.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "how", rename_all = "snake_case")]
pub enum ProcessEnding {
    /// Its log holds no event.
    NeverStarted,
    /// It returned.
    Exited,
    /// It panicked.
    Panicked {
        /// The panic message.
        message: String,
        /// Where.
        file: String,
        /// Line.
        line: u32,
    },
    /// It was waiting when the recording ended, and never got past the wait.
    Blocked {
        /// What it waited on, by the user's name when it has one.
        on: String,
        /// The index of the wait marker in its log.
        since_event: u64,
    },
    /// It was running (not in a logged wait) when the recording ended.
    Running {
        /// The index of its last logged event.
        last_event: u64,
    },
}

/// The file `ppd record` writes into the recording once the program has ended: how the
/// operating system saw it end. The runtime inside a killed program cannot say; the wrapper can.
/// Like the manifest it carries a MAC under the user's key (`crate::authenticity`).
pub(crate) const PROGRAM_EXIT_FILE: &str = "exit.json";

/// How the recorded program's OS process ended, as `ppd record` saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProgramExit {
    /// Its exit code, when it exited.
    pub code: Option<i32>,
    /// The signal that killed it, when one did.
    pub signal: Option<i32>,
    /// Its OS process id: the exit is the node's only when its program is the one `ppd record`
    /// ran (a launcher script's exit is not its children's). Absent in older recordings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
}

impl ProgramExit {
    /// Writes it into the recording directory `dir` (mode 0600, like every recording file),
    /// with its MAC under `key` (none: without one).
    pub fn write(&self, dir: &Path, key: Option<&UserKey>) -> Result<()> {
        let path = dir.join(PROGRAM_EXIT_FILE);
        let json = sealed_json(self, SealedFile::ProgramExit, key);
        let mut file = crate::private::create_file(&path, "create the program's exit file")?;
        file.write_all(&json)
            .map_err(|e| FormatError::io(&path, "write the program's exit file", e))
    }

    /// Replaces the one in `dir` with this one under the MAC of `key` (`ppd trust`).
    pub fn rewrite(&self, dir: &Path, key: &UserKey) -> Result<()> {
        let json = sealed_json(self, SealedFile::ProgramExit, Some(key));
        crate::private::write_atomic(&dir.join(PROGRAM_EXIT_FILE), &json, false)
    }

    /// Reads it from the recording directory `dir`; `None` when `ppd record` did not write one
    /// (it was killed too), it is not a regular file, or it does not parse.
    pub fn read(dir: &Path) -> Option<ProgramExit> {
        let bytes = read_exit_file(dir)?;
        serde_json::from_slice(&bytes).ok()
    }

    /// Reads it as [`read`](Self::read) does, and whether this user's `ppd record` wrote it
    /// here (`key`); what is returned is parsed from the bytes its MAC covers.
    pub fn read_checked(dir: &Path, key: &ReaderKey) -> Option<(ProgramExit, Authenticity)> {
        let bytes = read_exit_file(dir)?;
        let (authenticity, content) = unseal(SealedFile::ProgramExit, &bytes, key);
        Some((serde_json::from_slice(&content).ok()?, authenticity))
    }
}

fn read_exit_file(dir: &Path) -> Option<Vec<u8>> {
    crate::private::read_regular(&dir.join(PROGRAM_EXIT_FILE), "read the program's exit").ok()
}

/// How the recorded program ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "how", rename_all = "snake_case")]
pub enum RunEnding {
    /// `main` returned this exit code.
    Exited {
        /// The exit code.
        code: i32,
    },
    /// `main` panicked (exit code 101).
    Panicked,
    /// A signal killed the program before it could record its end.
    Killed {
        /// The signal.
        signal: i32,
    },
    /// The program exited without recording its end (`std::process::exit` outside `main`,
    /// or its logs could not be written any more).
    ExitedUnrecorded {
        /// The exit code.
        code: i32,
    },
    /// The program died before it could record its end, and `ppd record` did not see how (it
    /// was killed too, or the recording was copied while the program ran).
    CutShort,
    /// The program is still running on this machine, writing the recording: its logs grow
    /// while they are read.
    StillRecording {
        /// Its OS process id.
        pid: u32,
    },
}

impl RunEnding {
    /// How the run recorded in `dir` with `manifest` ended.
    pub fn of(dir: &Path, manifest: &Manifest) -> RunEnding {
        let seen =
            ProgramExit::read(dir).filter(|exit| exit.pid.is_none_or(|pid| pid == manifest.os_pid));
        match (&manifest.end, seen) {
            (Some(end), _) if end.panicked => RunEnding::Panicked,
            (Some(end), _) => RunEnding::Exited {
                code: end.exit_code,
            },
            (
                None,
                Some(ProgramExit {
                    signal: Some(signal),
                    ..
                }),
            ) => RunEnding::Killed { signal },
            (
                None,
                Some(ProgramExit {
                    code: Some(code), ..
                }),
            ) => RunEnding::ExitedUnrecorded { code },
            (None, None) if recorder_alive(manifest) => RunEnding::StillRecording {
                pid: manifest.os_pid,
            },
            (None, _) => RunEnding::CutShort,
        }
    }

    /// Whether the recording is still being written: answers from it are of a prefix that
    /// grows while it is read.
    pub fn still_recording(self) -> bool {
        matches!(self, RunEnding::StillRecording { .. })
    }

    /// Whether the program ended before recording its end: processes alive then were cut
    /// short, not left behind by a normal exit.
    pub fn cut_short(self) -> bool {
        !matches!(self, RunEnding::Exited { .. } | RunEnding::Panicked)
    }
}

/// Whether the OS process that writes the node `manifest` describes is alive: a process of
/// that pid on this host that started no later than the run did (a pid reused by a later
/// process is not it). The start is read from `/proc` to the kernel's second of boot time, so
/// a process started within two seconds after the run could pass for it.
fn recorder_alive(manifest: &Manifest) -> bool {
    let this_host =
        nix::unistd::gethostname().is_ok_and(|h| h.to_string_lossy() == manifest.host.as_str());
    if !this_host || manifest.os_pid == 0 {
        return false;
    }
    const SLACK_NS: u64 = 2_000_000_000;
    process_start_unix_ns(manifest.os_pid)
        .is_some_and(|started| started <= manifest.start_unix_ns.saturating_add(SLACK_NS))
}

/// When OS process `pid` started, in Unix nanoseconds, from `/proc/PID/stat` (its start in
/// clock ticks after boot) and `/proc/stat` (the boot time); `None` when there is no such
/// process, it has ended (a zombie whose parent has not reaped it yet: a SIGKILLed program
/// stays one for a moment), or it cannot be read.
fn process_start_unix_ns(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name, field 2, is in parentheses and may hold spaces: count from after it.
    let after_name = &stat[stat.rfind(')')? + 1..];
    // Field 3, the state: Z (zombie) and X (dead) have ended.
    if matches!(after_name.split_whitespace().next()?, "Z" | "X") {
        return None;
    }
    // Field 22, the start time: the 20th after the name.
    let ticks: u64 = after_name.split_whitespace().nth(19)?.parse().ok()?;
    let boot_s: u64 = std::fs::read_to_string("/proc/stat")
        .ok()?
        .lines()
        .find_map(|line| line.strip_prefix("btime "))?
        .trim()
        .parse()
        .ok()?;
    let hz = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
        .ok()
        .flatten()
        .filter(|&hz| hz > 0)? as u64;
    Some(boot_s * 1_000_000_000 + ticks * (1_000_000_000 / hz))
}

impl fmt::Display for RunEnding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunEnding::Exited { code } => write!(f, "the program exited with code {code}"),
            RunEnding::Panicked => f.write_str("main panicked (exit code 101)"),
            RunEnding::Killed { signal: 6 } => {
                f.write_str("cut short: the program aborted (signal 6)")
            }
            RunEnding::Killed { signal } => {
                write!(f, "cut short: the program was killed by signal {signal}")
            }
            RunEnding::ExitedUnrecorded { code } => write!(
                f,
                "cut short: the program exited with code {code} without recording its end"
            ),
            RunEnding::StillRecording { pid } => write!(
                f,
                "still being recorded: the program (OS process {pid}) is running and writing it"
            ),
            RunEnding::CutShort => f.write_str(
                "cut short: the program died before recording its end (killed, aborted or \
                 crashed, and ppd record did not see how)",
            ),
        }
    }
}

impl ProcessEnding {
    /// Reads the ending of the log `reader` of `recording`.
    pub fn of(recording: &Recording, reader: &LogReader) -> Result<ProcessEnding> {
        let n = reader.event_count();
        if n == 0 {
            return Ok(ProcessEnding::NeverStarted);
        }
        let last = n - 1;
        Ok(match reader.get(last)? {
            Event::Exit => ProcessEnding::Exited,
            Event::Panic {
                message,
                file,
                line,
            } => ProcessEnding::Panicked {
                message: message.into(),
                file: file.into(),
                line,
            },
            Event::Blocked { object, .. } => ProcessEnding::Blocked {
                on: object_label(recording, object),
                since_event: last,
            },
            Event::JoinBlocked { child, .. } => ProcessEnding::Blocked {
                on: format!("the end of {}", process_label(recording, child)),
                since_event: last,
            },
            Event::Sleep { nanos, .. } => ProcessEnding::Blocked {
                on: format!(
                    "a sleep of {:?} (only time ends it)",
                    std::time::Duration::from_nanos(nanos)
                ),
                since_event: last,
            },
            // Any other last event: the process was running.
            _ => ProcessEnding::Running { last_event: last },
        })
    }

    /// Whether the process was still alive at the end of the recording.
    pub fn alive(&self) -> bool {
        matches!(
            self,
            ProcessEnding::Blocked { .. } | ProcessEnding::Running { .. }
        )
    }

    /// One line for people, in the context of how the run ended; `main` is the process that
    /// ran `main` (its exit is the program's).
    pub fn describe(&self, run: RunEnding, main: bool) -> String {
        let cut_short = run.cut_short();
        if run.still_recording() {
            return match self {
                ProcessEnding::NeverStarted => "not started yet".into(),
                ProcessEnding::Exited | ProcessEnding::Panicked { .. } => {
                    self.describe(RunEnding::Exited { code: 0 }, false)
                }
                ProcessEnding::Blocked { on, since_event } => {
                    format!("still recording: waiting on {on} since event {since_event}")
                }
                ProcessEnding::Running { last_event } => {
                    format!("still recording: running, at event {last_event} so far")
                }
            };
        }
        match self {
            ProcessEnding::NeverStarted => "never started".into(),
            ProcessEnding::Exited => match run {
                RunEnding::Exited { code } if main => format!("exited with code {code}"),
                _ => "exited".into(),
            },
            ProcessEnding::Panicked {
                message,
                file,
                line,
            } => format!("panicked at {file}:{line}: {message}"),
            ProcessEnding::Blocked { on, since_event } if cut_short => {
                format!("blocked on {on} since event {since_event} when the run was cut short")
            }
            ProcessEnding::Blocked { on, since_event } => {
                format!("blocked at the end on {on} since event {since_event}")
            }
            ProcessEnding::Running { last_event } if cut_short => {
                format!("cut short after event {last_event}")
            }
            ProcessEnding::Running { last_event } => {
                format!("still running when the program exited (last event {last_event})")
            }
        }
    }
}

/// A process whose parent logged its `Spawn` and which has no log: the run was cut short (or
/// recording stopped) between the spawn and the child's log. ppd now creates a child's log
/// before its parent logs the spawn, so only recordings made before that hold such processes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct SpawnedWithoutLog {
    /// The id the spawn gave it.
    pub id: ProcessId,
    /// Its parent.
    pub parent: ProcessId,
    /// The index of the `Spawn` in the parent's log.
    pub spawn_event: u64,
    /// Where it was spawned, `file:line`.
    pub site: Option<String>,
}

impl SpawnedWithoutLog {
    /// How it ended, in words.
    pub(crate) fn describe(&self, recording: &Recording) -> String {
        let at = self
            .site
            .as_ref()
            .map_or(String::new(), |s| format!(", {s}"));
        format!(
            "never started: spawned by {} at event {}{at}; the run was cut short before its log \
             was created",
            process_label(recording, self.parent),
            self.spawn_event
        )
    }
}

/// The processes spawned in `recording` that have no log. Only a node cut short or stopped can
/// have them (a node that ended lists every process in its manifest, and a missing log of one
/// is damage), so only its logs are read; a log that cannot be read is skipped (its damage is
/// reported where logs are checked).
pub(crate) fn spawned_without_log(recording: &Recording) -> Vec<SpawnedWithoutLog> {
    let mut found = Vec::new();
    for (k, node) in recording.nodes().iter().enumerate() {
        let ended = node.manifest.end.is_some() && node.manifest.stopped.is_none();
        if ended {
            continue;
        }
        for entry in recording.processes().iter().filter(|p| p.node == k) {
            let Ok(reader) = recording.open_log(entry) else {
                continue;
            };
            // A closed log's index counts its kinds; a recovered one would be read twice.
            let spawns_nothing = reader.totals().is_some()
                && reader.kind_counts().is_ok_and(|counts| {
                    counts
                        .iter()
                        .all(|&(kind, n)| kind != crate::event::EventKind::Spawn || n == 0)
                });
            if spawns_nothing {
                continue;
            }
            for (index, event) in reader.events().without_values().map_while(Result::ok) {
                if let Event::Spawn { child, site } = event
                    && recording.process(child).is_none()
                {
                    found.push(SpawnedWithoutLog {
                        id: child,
                        parent: entry.id,
                        spawn_event: index,
                        site: site.map(|s| s.to_string()),
                    });
                }
            }
        }
    }
    found.sort_by_key(|p| p.id);
    found
}

/// A process by its name and id: `worker (p2)`.
pub(crate) fn process_label(recording: &Recording, id: ProcessId) -> String {
    match recording.process(id) {
        Some(p) => format!("{} ({id})", p.name),
        None => id.to_string(),
    }
}

/// An object as people know it: its kind and the name it was created with (`channel
/// requests`), or its kind and id when it has no name. Reads its creator's log up to its
/// `Create`. A park token, which nobody creates, is named by whose it is.
pub fn object_label(recording: &Recording, object: ObjectId) -> String {
    if object.is_park_token() {
        return format!(
            "the park token of {}",
            process_label(recording, object.creator())
        );
    }
    let created = recording
        .process(object.creator())
        .and_then(|entry| recording.open_log(entry).ok())
        .and_then(|reader| {
            reader.events().find_map(|item| match item {
                Ok((
                    _,
                    Event::Create {
                        object: o,
                        kind,
                        name,
                        ..
                    },
                )) if o == object => Some(Some((kind.name().to_owned(), name))),
                Ok((
                    _,
                    Event::NetOpen {
                        socket,
                        kind,
                        local,
                        peer,
                        ..
                    },
                )) if socket == object => {
                    let ends = match (local.is_empty(), peer.is_empty()) {
                        (false, false) => Some(format!("{local} → {peer}")),
                        (false, true) => Some(local.to_string()),
                        (true, false) => Some(format!("→ {peer}")),
                        (true, true) => None,
                    };
                    Some(Some((
                        format!("{} socket", kind.name()),
                        ends.map(Into::into),
                    )))
                }
                Ok(_) => None,
                Err(_) => Some(None),
            })
        })
        .flatten();
    match created {
        Some((kind, Some(name))) => format!("{kind} {name}"),
        Some((kind, None)) => format!("{kind} {object}"),
        None => object.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::process_start_unix_ns;

    #[test]
    fn a_process_that_ended_but_is_not_reaped_is_not_alive() {
        assert!(process_start_unix_ns(std::process::id()).is_some());
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let state = |pid: u32| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
            stat[stat.rfind(')').unwrap() + 1..]
                .split_whitespace()
                .next()
                .unwrap()
                .to_owned()
        };
        // Not waited for, the child stays a zombie once it has exited.
        while state(child.id()) != "Z" {
            std::thread::yield_now();
        }
        assert_eq!(process_start_unix_ns(child.id()), None);
        child.wait().unwrap();
    }
}
