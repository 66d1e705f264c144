//! `ppd record --stop PRED [-i]`: the debugger of a live program.
//!
//! Miller & Choi §4: the debugger is a process of its own (this one) with a control channel to
//! the program (a Unix socket the program's runtime connects to, named in its environment).
//! The program evaluates the breakpoint where it occurs and halts itself by the halting
//! algorithm (`ppd_recorder`'s `runtime::halt`); this side prints the halted state, read from
//! the recording so far at the positions the program reports, keeps the halt in the recording
//! (`halts.json`, so `ppd replay --to halt` reproduces it), and resumes, detaches or kills.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::anyhow;
use clap::Parser;
use ppd_flowback::why::TraceStore;
use ppd_formats::integrity;
use ppd_formats::live::{
    DebuggerCommand, Halt, HaltReport, LiveEvent, LiveProcess, LiveStatus, LiveStop, LiveTrigger,
    ProgramMessage, RecognitionPoint,
};
use ppd_formats::{ProcessId, Recording};
use ppd_recorder::runtime::env;
use ppd_replayer::debugger::{HaltState, Reason};
use ppd_replayer::predicate::{self, Catalog, Combination, EventPattern, Predicate, Simple};
use ppd_replayer::protocol::{HaltReason, ProcessReport};

use super::debugger::WhyArgs;
use super::debugger::attach::{Request, Tool, attach, attach_every};
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
    pub(crate) fn prepare(
        text: &str,
        interactive: bool,
        recognition: Vec<RecognitionPoint>,
    ) -> Result<LiveDebugger, CliError> {
        let parsed = predicate::parse(text).map_err(input)?;
        let stable = matches!(parsed, Predicate::Simultaneous(_));
        let (simples, all, stages) = match &parsed {
            Predicate::Simple(s) => (vec![s.clone()], false, Vec::new()),
            Predicate::Disjunctive(v) => (v.clone(), false, Vec::new()),
            Predicate::Conjunctive(v) | Predicate::Simultaneous(v) => (v.clone(), true, Vec::new()),
            Predicate::Linked(stages) => {
                if stages.len() > usize::from(u8::MAX) {
                    return Err(input(anyhow!(
                        "--stop {text:?}: a live program follows at most {} stages of a linked \
                         predicate",
                        u8::MAX
                    )));
                }
                let ids = match parsed.combination() {
                    Combination::Linked(ids) => ids,
                    _ => unreachable!("a linked predicate combines as one"),
                };
                (stages.concat(), false, ids)
            }
        };
        let triggers: Vec<LiveTrigger> = simples.iter().map(trigger).collect();
        // A process named without a node is the first node's, whichever that is.
        let mut nodes: Vec<&str> = triggers
            .iter()
            .map(|t| t.process.split_once('/').map_or("", |(node, _)| node))
            .collect();
        nodes.sort_unstable();
        nodes.dedup();
        let across = (all || !stages.is_empty()) && nodes.len() > 1;
        // The knowledge recognition points rest on does not cross OS processes.
        let recognition = if across { Vec::new() } else { recognition };
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
                triggers,
                all,
                stages,
                stable,
                recognition,
                across,
            },
            trigger_texts: simples.iter().map(ToString::to_string).collect(),
            interactive,
            listener,
            socket,
            _dir: dir,
        })
    }

    /// Whether each halt takes commands (`-i`, or the ones `--gdb` stands for).
    pub(crate) fn interactive(&self) -> bool {
        self.interactive
    }

    /// Tells the program, through its environment, the breakpoint and where to report.
    pub(crate) fn configure(&self, command: &mut Command) {
        let stop = serde_json::to_string(&self.stop).expect("a breakpoint serializes");
        command
            .env(env::LIVE_STOP, stop)
            .env(env::LIVE_CONTROL, &self.socket);
    }

    /// Serves the program's halts until it ends, and every node connected to the debugger
    /// has gone; the program's exit status.
    pub(crate) fn serve(&self, child: &mut Child, dir: &Path) -> Result<ExitStatus, CliError> {
        // Set while a halt is shown: a node that connects then is halted on arrival.
        let held = Arc::new(Mutex::new(false));
        let incoming = self.listen(Arc::clone(&held))?;
        let mut served = Served::default();
        let mut terminal = self.interactive.then(|| Input::open(Words::default()));
        let mut halts = 0;
        let mut exited = None;
        loop {
            if exited.is_none() {
                exited = child
                    .try_wait()
                    .map_err(|e| failure(anyhow!("waiting for the program: {e}")))?;
            }
            let over = exited.is_some() && served.nodes.is_empty();
            if over && served.connected {
                break;
            }
            // With no node connected, the program's end (or its first connection) is near:
            // look often. A program that ended unconnected may still have one on its way.
            let wait = match (over, served.nodes.is_empty()) {
                (true, _) => Duration::from_millis(50),
                (false, true) => Duration::from_millis(2),
                (false, false) => Duration::from_millis(20),
            };
            match incoming.recv_timeout(wait) {
                Ok(arrived) => self.receive(arrived, &mut served),
                Err(RecvTimeoutError::Timeout) if over => break,
                Err(_) => {}
            }
            let Served { nodes, round, .. } = &mut served;
            let complete = round.as_mut().is_some_and(|r| {
                !r.reports.is_empty()
                    && nodes.keys().all(|k| r.reports.contains_key(k))
                    && r.no_node_on_its_way(child.id(), nodes)
            });
            if !complete {
                continue;
            }
            let finished = served.round.take().expect("a complete round");
            halts += 1;
            *held.lock().unwrap_or_else(|p| p.into_inner()) = true;
            let choice = self
                .present(
                    dir,
                    halts,
                    (&served.nodes, &served.gone),
                    finished,
                    &mut terminal,
                )
                .unwrap_or_else(|e| {
                    let (CliError::Input(e) | CliError::Failure(e)) = e;
                    eprintln!("ppd: cannot show halt {halts}: {e:#}; the program runs on");
                    Choice::Detach
                });
            let command = match choice {
                Choice::Continue => DebuggerCommand::Continue,
                Choice::Detach => DebuggerCommand::Detach,
                Choice::Kill => {
                    // The recording survives SIGKILL; what was logged up to the halt is kept.
                    for pid in served.nodes.values().filter_map(|n| n.pid) {
                        let _ = nix::sys::signal::kill(
                            nix::unistd::Pid::from_raw(pid as i32),
                            nix::sys::signal::Signal::SIGKILL,
                        );
                    }
                    let _ = child.kill();
                    return wait_for(child);
                }
            };
            // The nodes that connected while the halt was shown were halted on arrival: they
            // are told too. No node connects between the look and the command.
            let mut shown = held.lock().unwrap_or_else(|p| p.into_inner());
            *shown = false;
            while let Ok(arrived) = incoming.try_recv() {
                self.receive(arrived, &mut served);
            }
            for node in served.nodes.values_mut() {
                node.command(command.clone());
            }
            drop(shown);
        }
        let status = match exited {
            Some(status) => status,
            None => wait_for(child)?,
        };
        if !served.connected {
            eprintln!(
                "ppd: the program never connected to the debugger (built with another ppd, \
                 or it ended before its runtime started): the breakpoint was never armed"
            );
        } else if halts == 0 {
            self.never_held(dir);
        }
        Ok(status)
    }

    /// What the nodes' connections brought: a node, a message, or a node's end.
    fn receive(&self, arrived: Incoming, served: &mut Served) {
        match arrived {
            Incoming::Connected(id, commands, halted) => {
                served.connected = true;
                let mut node = Node {
                    name: None,
                    pid: None,
                    parts: 0,
                    arrived_halted: halted,
                    commands,
                };
                if served.round.is_some() && !halted {
                    node.command(DebuggerCommand::Halt);
                }
                served.nodes.insert(id, node);
            }
            Incoming::Message(id, message) => {
                self.take(
                    id,
                    message,
                    &mut served.nodes,
                    &mut served.round,
                    &mut served.forwards,
                );
            }
            Incoming::Closed(id) => {
                served
                    .gone
                    .extend(served.nodes.remove(&id).and_then(|n| n.name));
                served.forwards.kept_by(id, None, &mut served.nodes);
            }
        }
    }

    /// What a node said: a breakpoint starts a round, whose halt marker goes to every other
    /// node; a report is kept in the round.
    fn take(
        &self,
        id: usize,
        message: ProgramMessage,
        nodes: &mut BTreeMap<usize, Node>,
        round: &mut Option<Round>,
        forwards: &mut Forwards,
    ) {
        match message {
            ProgramMessage::Hello { node, pid } => {
                if let Some(n) = nodes.get_mut(&id) {
                    n.name = Some(node);
                    n.pid = Some(pid);
                }
            }
            ProgramMessage::Started => {
                if round.is_none() {
                    *round = Some(Round::default());
                    for (k, node) in nodes.iter_mut() {
                        if *k != id {
                            node.command(DebuggerCommand::Halt);
                        }
                    }
                }
            }
            ProgramMessage::Halted(report) => {
                // A node halted on arrival, while a halt was shown, reports a halt of its own
                // that belongs to no round.
                if let Some(node) = nodes.get_mut(&id)
                    && std::mem::take(&mut node.arrived_halted)
                {
                    return;
                }
                round
                    .get_or_insert_with(Round::default)
                    .reports
                    .insert(id, report);
            }
            ProgramMessage::Holding { seq, parts } => {
                // The nodes' changes meet here, in the order they arrive: the predicate holds
                // when, with this one, every part is held by some node.
                if let Some(node) = nodes.get_mut(&id) {
                    node.parts = parts;
                }
                let held = nodes.values().fold(0u64, |m, n| m | n.parts);
                let every = u64::MAX >> (64 - self.stop.triggers.len());
                if round.is_none() && held == every {
                    *round = Some(Round::default());
                    for (k, node) in nodes.iter_mut() {
                        node.command(if *k == id {
                            DebuggerCommand::Complete(seq)
                        } else {
                            DebuggerCommand::Halt
                        });
                    }
                } else if let Some(node) = nodes.get_mut(&id) {
                    node.command(DebuggerCommand::Hold(seq));
                }
            }
            ProgramMessage::SocketMarker {
                seq,
                from,
                to,
                offset,
                stage,
            } => forwards.forward(id, seq, (from, to, offset, stage), nodes),
            ProgramMessage::Kept(forward) => forwards.kept_by(id, Some(forward), nodes),
        }
    }

    /// Accepts the nodes' connections on a thread of their own, and reads each on another:
    /// everything they say arrives on the channel returned.
    /// Every node is welcomed at once; one that connects while `held` (a halt is being shown)
    /// is told it starts halted, under the same lock the debugger takes to resume, so it is
    /// resumed with the rest.
    fn listen(&self, held: Arc<Mutex<bool>>) -> Result<Receiver<Incoming>, CliError> {
        let listener = self
            .listener
            .try_clone()
            .map_err(|e| failure(anyhow!("cannot listen for the program: {e}")))?;
        listener
            .set_nonblocking(false)
            .map_err(|e| failure(anyhow!("cannot listen for the program: {e}")))?;
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for (id, stream) in listener.incoming().enumerate() {
                let Ok(mut stream) = stream else { continue };
                let Ok(reading) = stream.try_clone() else {
                    continue;
                };
                let shown = held.lock().unwrap_or_else(|p| p.into_inner());
                send_command(&mut stream, &DebuggerCommand::Welcome { halted: *shown });
                if tx.send(Incoming::Connected(id, stream, *shown)).is_err() {
                    return;
                }
                drop(shown);
                let tx = tx.clone();
                std::thread::spawn(move || {
                    for line in BufReader::new(reading).lines() {
                        let Ok(line) = line else { break };
                        let Ok(message) = serde_json::from_str(&line) else {
                            eprintln!("ppd: a node's control channel said {line:?}; ignored");
                            continue;
                        };
                        if tx.send(Incoming::Message(id, message)).is_err() {
                            return;
                        }
                    }
                    let _ = tx.send(Incoming::Closed(id));
                });
            }
        });
        Ok(rx)
    }

    /// Prints halt number `halt`, the nodes' reports put together, keeps it in the recording
    /// and asks what to do (without -i: detach).
    fn present(
        &self,
        dir: &Path,
        halt: u64,
        (nodes, gone): (&BTreeMap<usize, Node>, &[String]),
        round: Round,
        terminal: &mut Option<Input>,
    ) -> Result<Choice, CliError> {
        let recording = Recording::open(dir).map_err(failure)?;
        let merged = merge(&recording, nodes, round, gone)?;
        let state = self.halted_state(&recording, &merged)?;
        out!("{}", state.render());
        out!("{}", halting_order(halt, &merged, &state));
        let kept = Halt {
            halt,
            predicate: self.stop.text.clone(),
            initiator: merged.initiator,
            order: merged.order.clone(),
            cut: state.processes.iter().map(|p| (p.id, p.events)).collect(),
        };
        if let Err(e) = keep(dir, kept, &state) {
            eprintln!("ppd: not keeping the halt in the recording: {e}");
        }
        Ok(match terminal {
            Some(terminal) => {
                let halted: Vec<(String, u32)> = nodes
                    .values()
                    .filter_map(|n| Some((n.name.clone()?, n.pid?)))
                    .collect();
                ask(terminal, dir, &state, halt, &merged, &halted)
            }
            None => {
                out!(
                    "\nthe program runs on, recording (`ppd replay --to halt:{halt}` brings a \
                     replay here; -i to stay)\n"
                );
                Choice::Detach
            }
        })
    }

    /// The halted state of `merged`, read from the recording so far.
    fn halted_state(&self, recording: &Recording, merged: &Merged) -> Result<HaltState, CliError> {
        let catalog = Catalog::of(recording).map_err(failure)?;
        let reports: Vec<ProcessReport> = merged
            .processes
            .iter()
            .map(|p| ProcessReport {
                id: p.id,
                events: p.events,
                status: p.status.text().to_owned(),
                waiting_for: None,
                holds: Vec::new(),
                vclock: Vec::new(),
                thread: None,
            })
            .collect();
        let reason = Reason::Halted(HaltReason::Predicate);
        let mut state = HaltState::build(
            recording,
            &catalog,
            None,
            reason,
            &reports,
            Some(merged.latency_ns),
        )
        .map_err(failure)?;
        state.predicate = Some(self.stop.text.clone());
        // A conjunction holds with every component true at its process; a disjunction by the
        // component that occurred.
        let named = |t: &LiveTrigger| {
            let processes = recording
                .processes()
                .iter()
                .map(|p| (p.id, p.name.as_str()));
            ppd_formats::resolve_process(&t.process, processes).ok()
        };
        for p in &mut state.processes {
            p.holds = self
                .stop
                .triggers
                .iter()
                .zip(&self.trigger_texts)
                .enumerate()
                .filter(|(i, (t, _))| {
                    if self.stop.all {
                        named(t) == Some(p.id)
                    } else {
                        *i == merged.trigger && p.id == merged.initiator
                    }
                })
                .map(|(_, (_, text))| text.clone())
                .collect();
        }
        Ok(state)
    }
}

impl LiveDebugger {
    /// Says that the breakpoint never held, and which of its processes never ran.
    fn never_held(&self, dir: &Path) {
        let absent: Vec<&str> = match Recording::open(dir) {
            Ok(recording) => self
                .stop
                .triggers
                .iter()
                .filter(|t| {
                    let processes = recording
                        .processes()
                        .iter()
                        .map(|p| (p.id, p.name.as_str()));
                    matches!(
                        ppd_formats::resolve_process(&t.process, processes),
                        Err(ppd_formats::ProcessNameError::Unknown { .. })
                    )
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
}

/// A node's connection.
struct Node {
    /// Its name in the recording, once it has said it.
    name: Option<String>,
    pid: Option<u32>,
    /// Under a predicate across nodes: the parts its processes hold, as it last said.
    parts: u64,
    /// It connected while a halt was shown and was halted on arrival; its report of that is
    /// not a round's.
    arrived_halted: bool,
    commands: UnixStream,
}

/// The debugger's side of the nodes, as `serve` keeps it.
#[derive(Default)]
struct Served {
    nodes: BTreeMap<usize, Node>,
    /// The halt in progress, if any.
    round: Option<Round>,
    forwards: Forwards,
    /// The nodes that said who they are and have ended: in a halted state, finished.
    gone: Vec<String>,
    /// Whether any node has connected.
    connected: bool,
}

impl Node {
    /// Sends `command`; a node that has gone is seen when its connection closes.
    fn command(&mut self, command: DebuggerCommand) {
        send_command(&mut self.commands, &command);
    }
}

/// Sends `command` on a node's connection; a node that has gone is seen when its connection
/// closes.
fn send_command(stream: &mut UnixStream, command: &DebuggerCommand) {
    let mut line = serde_json::to_string(command).expect("a command serializes");
    line.push('\n');
    let _ = stream.write_all(line.as_bytes());
}

/// What the nodes' connections bring, in the order it came.
enum Incoming {
    /// A node's connection, and whether it was halted on arrival (a halt was being shown).
    Connected(usize, UnixStream, bool),
    Message(usize, ProgramMessage),
    Closed(usize),
}

/// Socket markers of a linked predicate across nodes, forwarded and not yet kept by every
/// node they went to: the writer waits until they are.
#[derive(Default)]
struct Forwards {
    last: u64,
    pending: BTreeMap<u64, Forward>,
}

struct Forward {
    /// The writer's node, and its request's number there.
    writer: usize,
    seq: u64,
    /// The nodes that have not said they kept it.
    waiting: std::collections::BTreeSet<usize>,
}

impl Forwards {
    /// Sends node `writer`'s marker (request `seq`) to every other node; with none, the
    /// writer goes on at once.
    fn forward(
        &mut self,
        writer: usize,
        seq: u64,
        (from, to, offset, stage): (String, String, u64, u8),
        nodes: &mut BTreeMap<usize, Node>,
    ) {
        self.last += 1;
        let forward = self.last;
        let mut waiting = std::collections::BTreeSet::new();
        for (&k, node) in nodes.iter_mut() {
            if k != writer {
                node.command(DebuggerCommand::SocketMarker {
                    forward,
                    from: from.clone(),
                    to: to.clone(),
                    offset,
                    stage,
                });
                waiting.insert(k);
            }
        }
        self.pending.insert(
            forward,
            Forward {
                writer,
                seq,
                waiting,
            },
        );
        self.kept_by(writer, Some(forward), nodes);
    }

    /// Node `node` has kept marker `forward` (none: it has gone, keeping none of them): a
    /// marker every node has kept lets its writer go on.
    fn kept_by(&mut self, node: usize, forward: Option<u64>, nodes: &mut BTreeMap<usize, Node>) {
        let done: Vec<u64> = self
            .pending
            .iter_mut()
            .filter(|(f, _)| forward.is_none_or(|wanted| **f == wanted))
            .filter_map(|(&f, pending)| {
                pending.waiting.remove(&node);
                pending.waiting.is_empty().then_some(f)
            })
            .collect();
        for f in done {
            if let Some(pending) = self.pending.remove(&f)
                && let Some(writer) = nodes.get_mut(&pending.writer)
            {
                writer.command(DebuggerCommand::Hold(pending.seq));
            }
        }
    }
}

/// A halt in progress: the report of each node that has sent one.
#[derive(Default)]
struct Round {
    reports: BTreeMap<usize, HaltReport>,
    /// Until when the round waits for nodes the program started that have not connected yet.
    deadline: Option<std::time::Instant>,
}

/// How long a halt waits for a node that has started but not connected to the debugger.
const LATE_NODE_WAIT: Duration = Duration::from_secs(10);

impl Round {
    /// Whether no node of the program is on its way: every OS process under the program's own
    /// that is a ppd program has connected (it is then told to halt, and its report is
    /// waited for) or ended. Miller & Choi's debugger knows every process; this one learns of
    /// a node only when it connects, so a node started just before the halt (a client the
    /// launcher started a moment after the server) would otherwise run on outside the halted
    /// state. One that does not connect within [`LATE_NODE_WAIT`] is named and left out.
    fn no_node_on_its_way(&mut self, program: u32, nodes: &BTreeMap<usize, Node>) -> bool {
        let connected: Vec<u32> = nodes.values().filter_map(|n| n.pid).collect();
        if connected.len() < nodes.len() {
            // A connection whose hello has not arrived yet: its pid is not known.
            return false;
        }
        let late: Vec<(u32, PathBuf)> = ppd_descendants(program)
            .into_iter()
            .filter(|(pid, _)| !connected.contains(pid))
            .collect();
        if late.is_empty() {
            return true;
        }
        let deadline = *self
            .deadline
            .get_or_insert_with(|| std::time::Instant::now() + LATE_NODE_WAIT);
        if std::time::Instant::now() < deadline {
            return false;
        }
        for (pid, exe) in late {
            eprintln!(
                "ppd: {} (pid {pid}) is a process of this run that may be a ppd program and has \
                 not connected to the debugger in {} s; it is not in the halted state",
                exe.display(),
                LATE_NODE_WAIT.as_secs()
            );
        }
        true
    }
}

/// The OS processes under `root` (its descendants, itself included) that are, or may be
/// about to be, ppd programs, with their executables: those whose executable is one, and
/// those that run their parent's executable — a launcher's fork that has not yet `exec`ed
/// the program it starts.
fn ppd_descendants(root: u32) -> Vec<(u32, PathBuf)> {
    let Ok(listing) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut parent_of: BTreeMap<u32, u32> = BTreeMap::new();
    for entry in listing.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        // `pid (comm) state ppid …`: the command may hold spaces and parentheses.
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let ppid = stat
            .rfind(')')
            .and_then(|end| stat[end + 1..].split_whitespace().nth(1))
            .and_then(|p| p.parse().ok());
        if let Some(ppid) = ppid {
            parent_of.insert(pid, ppid);
        }
    }
    let under = |mut pid: u32| {
        while pid > 1 {
            if pid == root {
                return true;
            }
            match parent_of.get(&pid) {
                Some(&parent) => pid = parent,
                None => return false,
            }
        }
        false
    };
    let exe = |pid: u32| std::fs::read_link(format!("/proc/{pid}/exe")).ok();
    parent_of
        .keys()
        .copied()
        .filter(|&pid| under(pid))
        .filter_map(|pid| {
            let path = exe(pid)?;
            let forked = pid != root
                && parent_of
                    .get(&pid)
                    .is_some_and(|&parent| exe(parent).as_ref() == Some(&path));
            let ppd = || {
                ppd_recorder::runtime::program_hash::program_hash(&path)
                    .is_ok_and(|hash| hash.ppd_program)
            };
            (forked || ppd()).then_some((pid, path))
        })
        .collect()
}

/// A halt of every node, in the recording's process ids.
struct Merged {
    initiator: ProcessId,
    /// The OS process id of each process's node.
    node_pids: BTreeMap<ProcessId, u32>,
    trigger: usize,
    /// The halting order: the initiator's node's, then the others'.
    order: Vec<ProcessId>,
    processes: Vec<LiveProcess>,
    latency_ns: u64,
    /// Evaluations of the whole predicate in every node since the run started or resumed.
    evaluations: u64,
}

/// The nodes' reports in the recording's ids (a node's processes are numbered from its base).
fn merge(
    recording: &Recording,
    nodes: &BTreeMap<usize, Node>,
    round: Round,
    gone: &[String],
) -> Result<Merged, CliError> {
    let base_of = |id: &usize| -> Result<u32, CliError> {
        let name = nodes.get(id).and_then(|n| n.name.as_deref());
        match recording.nodes() {
            [only] if name.is_none_or(|n| Some(n) == only.manifest.node.as_deref()) => {
                Ok(only.base)
            }
            all => all
                .iter()
                .find(|n| Some(n.name.as_str()) == name)
                .map(|n| n.base)
                .ok_or_else(|| {
                    failure(anyhow!(
                        "a node that reported a halt ({}) is not in the recording",
                        name.unwrap_or("unnamed")
                    ))
                }),
        }
    };
    let global = |base: u32, id: ProcessId| ProcessId(base + id.0);
    let mut breakpoint = None;
    let mut order = Vec::new();
    let mut later = Vec::new();
    let mut processes = Vec::new();
    let mut node_pids = BTreeMap::new();
    let mut latency_ns = 0;
    let mut evaluations = 0;
    for (id, report) in &round.reports {
        let base = base_of(id)?;
        if let Some(pid) = nodes.get(id).and_then(|n| n.pid) {
            node_pids.extend(report.processes.iter().map(|p| (global(base, p.id), pid)));
        }
        let ids = report.order.iter().map(|p| global(base, *p));
        if let Some(b) = &report.breakpoint
            && breakpoint.is_none()
        {
            breakpoint = Some((global(base, b.process), b.trigger));
            order.extend(ids);
        } else {
            later.extend(ids);
        }
        latency_ns = latency_ns.max(report.latency_ns);
        evaluations += report.evaluations;
        processes.extend(report.processes.iter().map(|p| LiveProcess {
            id: global(base, p.id),
            ..p.clone()
        }));
    }
    order.extend(later);
    // A node that ended before the halt is in it as it ended: every event of its processes
    // (it can have read nothing written after the halt began).
    let ended: Vec<_> = recording
        .processes()
        .iter()
        .filter(|p| gone.contains(&recording.nodes()[p.node].name))
        .filter(|p| processes.iter().all(|q| q.id != p.id))
        .collect();
    for entry in ended {
        let events = recording.open_log(entry).map(|log| log.event_count())?;
        let node = &recording.nodes()[entry.node].name;
        let name = entry
            .name
            .strip_prefix(&format!("{node}/"))
            .unwrap_or(&entry.name);
        processes.push(LiveProcess {
            id: entry.id,
            name: name.to_owned(),
            status: LiveStatus::Ended,
            events,
            thread: 0,
        });
    }
    processes.sort_by_key(|p| p.id);
    let (initiator, trigger) = breakpoint
        .ok_or_else(|| failure(anyhow!("no node reported the breakpoint it halted at")))?;
    Ok(Merged {
        initiator,
        node_pids,
        trigger,
        order,
        processes,
        latency_ns,
        evaluations,
    })
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
fn trigger(s: &Simple) -> LiveTrigger {
    let event = match &s.event {
        EventPattern::Enter(f) => LiveEvent::Enter(f.clone()),
        EventPattern::Exit(f) => LiveEvent::Exit(f.clone()),
        EventPattern::Send(c) => LiveEvent::Send(c.clone()),
        EventPattern::Recv(c) => LiveEvent::Recv(c.clone()),
        EventPattern::Mark(l) => LiveEvent::Mark(l.clone()),
    };
    LiveTrigger {
        process: s.process.clone(),
        event,
        condition: s.condition.clone(),
    }
}

/// The halting order, and the processes not halted by it, as lines for the terminal.
fn halting_order(halt: u64, merged: &Merged, state: &HaltState) -> String {
    let name = |id: ProcessId| {
        state
            .processes
            .iter()
            .find(|p| p.id == id)
            .map_or_else(|| id.to_string(), |p| p.name.clone())
    };
    let order: Vec<String> = merged.order.iter().map(|id| name(*id)).collect();
    let mut text = format!(
        "\n  halt {halt} started by {}; halting order: {}\n",
        name(merged.initiator),
        order.join(" -> ")
    );
    let with = |status: LiveStatus| -> Vec<String> {
        merged
            .processes
            .iter()
            .filter(|p| p.status == status)
            .map(|p| name(p.id))
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
    if merged.evaluations > 0 {
        let times = match merged.evaluations {
            1 => "once".to_owned(),
            n => format!("{n} times"),
        };
        text.push_str(&format!(
            "  the whole predicate was evaluated {times} before it held\n"
        ));
    }
    text
}

/// Asks the user at a halt what to do, until they say continue, detach or kill.
fn ask(
    terminal: &mut Input,
    dir: &Path,
    state: &HaltState,
    halt: u64,
    merged: &Merged,
    nodes: &[(String, u32)],
) -> Choice {
    // The recording as it is at this halt, copied at the first `why`.
    let mut snapshot = None;
    loop {
        let Some(line) = terminal.line() else {
            return Choice::Detach;
        };
        if let Some((tool, rest)) = Tool::of_line(&line) {
            attach_debugger(tool, rest, nodes, merged);
            continue;
        }
        if let Some(rest) = line.trim().strip_prefix("why")
            && (rest.is_empty() || rest.starts_with(' '))
        {
            if let Err(e) = why_at_halt(rest, dir, state, halt, &mut snapshot) {
                super::debugger::report_error(e);
            }
            continue;
        }
        match line.trim() {
            "" => {}
            "c" | "continue" => return Choice::Continue,
            "detach" | "q" | "quit" => return Choice::Detach,
            "kill" => return Choice::Kill,
            "p" | "print" => {
                out!("{}", state.render());
                out!("{}", halting_order(halt, merged, state));
            }
            "h" | "help" => out!(
                "print      the halted state again\n\
                 continue   resume every process; the breakpoint halts the program again\n\
                 detach     resume every process with the breakpoint off; recording goes on\n\
                 why PROCESS VAR [--depth N] [--json | --dot]\n           \
                 the chain that gave VAR its value, from the recording up to this halt\n\
                 kill       kill the program (the recording keeps everything up to the kill)\n\
                 gdb|lldb [NODE] [--dry-run] [-- ARGS]\n           \
                 attach gdb or lldb to the halted OS process (the first node's, or NODE's)\n\
                 gdb all [--dry-run] [-- ARGS]\n           \
                 attach one gdb to every halted node, one inferior each\n"
            ),
            other => out!("unknown command `{other}` (help lists them)\n"),
        }
    }
}

/// `why PROCESS VAR ...` at a halt: the chain that gave VAR its value at the process's last
/// event, answered from the recording up to the halt.
fn why_at_halt(
    rest: &str,
    dir: &Path,
    state: &HaltState,
    halt: u64,
    snapshot: &mut Option<Snapshot>,
) -> Result<(), CliError> {
    let args = match WhyArgs::try_parse_from(rest.split_whitespace()) {
        Ok(args) => args,
        Err(e) => {
            out!("{}", e.render());
            return Ok(());
        }
    };
    let snapshot = match snapshot {
        Some(s) => s,
        None => snapshot.insert(Snapshot::of(dir)?),
    };
    let recording = &snapshot.recording;
    let id = ppd_flowback::why::find_process(recording, &args.process).map_err(input)?;
    let Some(last) = state
        .processes
        .iter()
        .find(|p| p.id == id)
        .and_then(|p| p.last_event)
    else {
        out!(
            "{} had executed no event at the halt: none of its variables has a value to explain\n",
            args.process
        );
        return Ok(());
    };
    let (query, format) = args.at(last);
    // Every log ends at the halt, because the program is halted there, not because it died.
    let mut integrity = integrity::check(recording);
    integrity.ends_early.clear();
    let mut store = TraceStore::new(recording, None);
    super::why::answer(&mut store, &query, format, &integrity)?;
    if format == super::why::Format::Text {
        out!("(answered from the recording up to halt {halt})\n");
    }
    Ok(())
}

/// The recording as it was at a halt, copied aside (its caches left out) so that `why` reads
/// one prefix of the run that does not change under it: a live log keeps its size as it
/// fills, so nothing that knows a file by its size and time could tell this halt's logs from
/// the next one's.
struct Snapshot {
    recording: Recording,
    _dir: tempfile::TempDir,
}

impl Snapshot {
    fn of(dir: &Path) -> Result<Snapshot, CliError> {
        let copy = tempfile::Builder::new()
            .prefix("ppd-halt-")
            .tempdir()
            .map_err(|e| {
                failure(anyhow!(
                    "cannot make a directory for the halted recording: {e}"
                ))
            })?;
        copy_recording(dir, copy.path()).map_err(|e| {
            failure(anyhow!(
                "cannot copy {} as it is at the halt: {e}",
                dir.display()
            ))
        })?;
        let recording = Recording::open(copy.path())?;
        Ok(Snapshot {
            recording,
            _dir: copy,
        })
    }
}

/// Copies the recording at `from` into `to`, every file but the caches.
fn copy_recording(from: &Path, to: &Path) -> std::io::Result<()> {
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let (source, target) = (entry.path(), to.join(entry.file_name()));
        let kind = entry.file_type()?;
        if kind.is_dir() {
            if entry.file_name() == "cache" {
                continue;
            }
            std::fs::create_dir(&target)?;
            copy_recording(&source, &target)?;
        } else if kind.is_file() {
            std::fs::copy(&source, &target)?;
        }
    }
    Ok(())
}

/// `gdb|lldb [NODE|all] [--dry-run] [-- ARGS...]`: attaches the debugger to a halted OS
/// process (the first node's, or NODE's) with the breakpoint's thread selected when it is in
/// that node, else a halted one's; `gdb all` to every node at once, one inferior each, the
/// initiator's first.
fn attach_debugger(tool: Tool, rest: &str, nodes: &[(String, u32)], merged: &Merged) {
    let request = match Request::parse(tool, rest, true) {
        Ok(request) => request,
        Err(e) => {
            out!("{e}\n");
            return;
        }
    };
    if request.node.as_deref() == Some("all") {
        if tool == Tool::Lldb {
            let known: Vec<&str> = nodes.iter().map(|(n, _)| n.as_str()).collect();
            out!(
                "lldb debugs one OS process at a time: lldb NODE, one of {} (gdb all attaches \
                 to every node at once)\n",
                known.join(", ")
            );
            return;
        }
        let mut targets: Vec<(u32, Option<u32>)> = nodes
            .iter()
            .map(|(_, pid)| (*pid, selected_thread(merged, *pid)))
            .collect();
        let initiator = merged.node_pids.get(&merged.initiator).copied();
        targets.sort_by_key(|&(pid, _)| Some(pid) != initiator);
        attach_every(&targets, &request, &format!("{} nodes", nodes.len()));
        return;
    }
    let node = match &request.node {
        None => nodes.first(),
        Some(name) => nodes.iter().find(|(n, _)| n == name),
    };
    let Some((node, pid)) = node else {
        let known: Vec<&str> = nodes.iter().map(|(n, _)| n.as_str()).collect();
        out!(
            "{}: no such node; the halted nodes are {}\n",
            tool.name(),
            known.join(", ")
        );
        return;
    };
    attach(
        tool,
        *pid,
        selected_thread(merged, *pid),
        &request,
        &format!("node {node}"),
    );
}

/// The thread to select in the node whose OS process is `pid`: the breakpoint's, when it is
/// there, else a halted process's, else one halted while it waits.
fn selected_thread(merged: &Merged, pid: u32) -> Option<u32> {
    let in_node: Vec<&LiveProcess> = merged
        .processes
        .iter()
        .filter(|p| merged.node_pids.get(&p.id) == Some(&pid))
        .collect();
    in_node
        .iter()
        .find(|p| p.id == merged.initiator)
        .or_else(|| in_node.iter().find(|p| p.status == LiveStatus::Halted))
        .or_else(|| in_node.iter().find(|p| p.status == LiveStatus::Waiting))
        .map(|p| p.thread)
}

fn wait_for(child: &mut Child) -> Result<ExitStatus, CliError> {
    child
        .wait()
        .map_err(|e| failure(anyhow!("cannot wait for the program: {e}")))
}
