//! The DCFG of a ppd program, built from its Rust source with `syn` (the paper's §2 assumes the
//! graph given; building it from Rust is this project's own).
//!
//! # What is modelled
//!
//! * **Processes**: the body of the `#[ppd::main]` function (process `main`; a plain `fn main`
//!   when no function carries the attribute) and every closure passed to a `spawn` call
//!   (`ppd::thread::spawn`, `Builder::spawn`, a scope's `s.spawn`). A process's name is the
//!   literal of `.name("x".into())` (or `.to_string()`, `.to_owned()`, `String::from`) on the
//!   builder; an unnamed thread gets ppd's default name `PARENT.K` when its spawn is the K-th
//!   spawn of a parent that spawns only in straight-line code (and in no call the walk does
//!   not follow). A spawn inside a loop or inside
//!   a closure makes a *replicated* process (several instances, told apart by no name).
//! * **Spawn and join as interactions**, as ppd's happened-before has them
//!   (`ppd_formats::order`): the spawn node is a send whose only receive is the child's first
//!   node; the child's last node, which every node flows to (a panic may end the process
//!   anywhere, and ppd logs it as its last event), is a send whose receive is `h.join()` on a
//!   handle bound by `let h = ..spawn(..)` (perhaps unwrapped) and not rebound since. So a
//!   join orders what holds right after an event of the child before it, but not the end of
//!   an e-block's interval, which a panic inside the e-block leaves open.
//! * **Control flow**: one statement node per statement and per `let`; sequences, `if`/`else`,
//!   `if let`, `match` (with guards), `loop`/`while`/`while let`/`for`, labelled and unlabelled
//!   `break`/`continue`, `return`, `?` (an edge out of the function being followed, else to
//!   the process's end), `&&`/`||` (the right operand may not run), blocks, `unsafe` blocks,
//!   and `thread::scope(|s| …)` (its closure runs once, in place). The names a pattern binds
//!   (`let`, `for`, `match` arms, `if let`, `while let`, closure parameters) shadow channel
//!   ends and handles of the same names.
//! * **Sends** (`Kind::Send`): `.send(`, `.try_send(`, `.send_timeout(` on a channel end the
//!   analysis knows. **Receives** (`Kind::Recv`): `.recv(`, `.try_recv(`, `.recv_timeout(`,
//!   `.recv_deadline(`, and each turn of `for m in rx`, `&rx`, `rx.iter()`, `rx.try_iter()`,
//!   `rx.into_iter()`. A receive forks: one branch goes through the receive node (a message
//!   was taken), the other through a "no message" statement node (disconnected, empty or timed
//!   out). The second branch ends the process under `.unwrap()`/`.expect(..)` and `?`, skips
//!   the body of `if let Ok(..)`/`while let Ok(..)`/`Some(..)` and ends a `for` loop; so a
//!   node is dominated by a receive node only where reaching it needs a message.
//! * **Channels**: `let (tx, rx) = C(..)` for `channel`, `sync_channel`, `named_channel`,
//!   `named_sync_channel`, `unbounded`, `bounded`, `named` (ppd's and crossbeam's
//!   constructors), aliases `let b = a`, `let b = a.clone()`, `let b = Sender::clone(&a)`, and
//!   the capture of those names by spawned closures. Each send is joined by a message edge to
//!   each receive of the same channel in another process, except the pairs §2's counting
//!   rules out: on a channel made once, that one process sends on with `.send(..)` and one
//!   other receives from, the message of a send that at least `#S` sends precede cannot
//!   reach a receive that at most `#R < #S` receives precede (messages arrive in order).
//! * **Calls of the program's functions** that communicate, spawn, mark or enter e-blocks are
//!   followed into the callee's body (to a depth of 8, never into a function already being
//!   followed): channel ends passed as arguments (`f(tx)`, `f(&tx)`, `f(tx.clone())`) are
//!   bound to the parameters, `return` and `?` leave the call. A call is resolved by name: a
//!   plain `f(..)` or `crate::`/`self::`/`super::`/`module::f(..)` to the program's one free
//!   function `f`, `T::f(..)`/`Self::f(..)` and `self.f(..)` to the one `f` of the program's
//!   `impl T`. Other method calls (`x.f()`) are not followed.
//! * **Points for predicates**: `ppd::mark!("L", ..)` (a `mark L` statement node), and calls
//!   of `#[ppd::eblock]` functions (and of the functions of an item under `#[ppd::eblocks]`):
//!   an `enter F` node, the body when it is followed, then an `exit F` node.
//!
//! # Where the analysis gives up
//!
//! Nothing here panics on any input; what the analysis does not model is recorded as an
//! [`Unknown`] naming the construct and its `file:line`, and made *conservative* in the graph:
//!
//! * a send or receive on something that is not a known channel end (a struct field, a
//!   function parameter, a vector element), a channel end that escapes (passed to a function,
//!   put in a struct, sent, returned, captured by a closure that is not a spawned body), a
//!   send to a channel from the process that also receives it, a call of a function of the
//!   program that communicates, spawns, marks or enters an e-block and is not followed (a
//!   method call on a value, recursion, a name defined more than once), ends a call gives
//!   back, and communication inside a closure or `async` block that is not a spawned body.
//!   The receives such a construct could feed are given an extra in-edge from an
//!   *unmodelled sender* process, so that no guarantee (`POST2`) rests on them;
//! * a mark whose label is not a literal, a process whose name is not a literal, a component
//!   whose node the graph cannot reach (no verdict rests on a gap in the graph);
//! * functions outside the files read (other crates) are assumed not to communicate on the
//!   program's channels unless a channel end is passed to them (which is an escape), not to
//!   send or receive on channels of their own (a `send` or `recv` component counts the
//!   operations the source shows; `ppd::task`'s `farm` and `divide_and_conquer` are known to
//!   communicate and spawn), and not to mark or enter e-blocks; sockets (`ppd::net`), locks, atomics, `select!`, the implicit
//!   joins at the end of a `thread::scope` and joins of handles kept in collections are not
//!   interactions here: they can only order events the analysis then fails to order, never
//!   make it order events a run leaves unordered.
//!
//! Panics are not modelled except after a failed receive that is unwrapped; they can only end
//! a process early, which the dominator-based guarantees do not depend on.

mod effects;
mod walk;

use std::collections::BTreeSet;
use std::fmt;
use std::path::{Path, PathBuf};

use crate::dcfg::{Dcfg, NodeId};

/// A place in the source.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Site {
    /// The file, as given or found.
    pub file: String,
    /// The line, from 1.
    pub line: usize,
}

impl fmt::Display for Site {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.file, self.line)
    }
}

/// What a node of a program's graph stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum What {
    /// A process's start.
    Start,
    /// A process's end.
    Stop,
    /// A statement.
    Stmt,
    /// The head of a loop.
    LoopHead,
    /// A send on a channel (an index into [`Program::channels`]), or on one not known.
    Send(Option<usize>),
    /// A receive that took a message.
    Recv(Option<usize>),
    /// A receive that took none (disconnected, empty or timed out).
    NoMessage,
    /// `ppd::mark!`, with its label when it is a literal.
    Mark(Option<String>),
    /// The entry of an e-block.
    Enter(String),
    /// The exit of an e-block.
    Exit(String),
    /// A spawn of a process (an index into [`Program::processes`]): a send, whose receive
    /// is the child's [`What::Started`].
    Spawn(usize),
    /// A spawned process's first node: a receive from its spawn.
    Started,
    /// A spawned process's last node before its end: a send, to the joins of its handle.
    Ending,
    /// `handle.join()` of a process: a receive from its [`What::Ending`].
    Joined(usize),
    /// A call of the program's function that the analysis does not follow.
    Opaque(String),
    /// The send of the unmodelled-sender process.
    Unmodelled,
}

/// A channel the analysis knows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Channel {
    /// Its name: the literal of a named constructor, else the names it was bound to.
    pub names: Vec<String>,
    /// Where it was made.
    pub site: Site,
    /// Whether an end escapes where the analysis cannot follow it.
    pub escapes: bool,
}

/// A process of the program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessInfo {
    /// Its name, when the source gives it.
    pub name: Option<String>,
    /// Where its body starts.
    pub site: Site,
    /// Several instances may run (spawned in a loop or a closure).
    pub replicated: bool,
    /// The unmodelled-sender process, which stands for senders the analysis cannot see.
    pub unmodelled: bool,
}

/// What calls the analysis did not follow may do in a process.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Hidden {
    /// Mark labels.
    pub marks: BTreeSet<String>,
    /// Marks with a label that is not a literal.
    pub any_mark: bool,
    /// E-blocks entered.
    pub enters: BTreeSet<String>,
    /// Sends or receives.
    pub comm: bool,
    /// Spawns.
    pub spawn: bool,
}

/// A construct the analysis does not model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unknown {
    /// The process it is in, if any.
    pub process: Option<usize>,
    /// What it is.
    pub construct: String,
    /// Where.
    pub site: Site,
}

impl fmt::Display for Unknown {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at {}", self.construct, self.site)
    }
}

/// A program's DCFG and what each node stands for.
#[derive(Debug, Clone)]
pub struct Program {
    /// The graph.
    pub graph: Dcfg,
    /// What each node stands for.
    pub what: Vec<What>,
    /// Where each node is.
    pub sites: Vec<Site>,
    /// The processes, in the order of `graph.processes`.
    pub processes: Vec<ProcessInfo>,
    /// What unfollowed calls may do in each process.
    pub hidden: Vec<Hidden>,
    /// The channels.
    pub channels: Vec<Channel>,
    /// The constructs not modelled.
    pub unknowns: Vec<Unknown>,
    /// The `exit F` node that closes each `enter F` node.
    pub closes: std::collections::BTreeMap<NodeId, NodeId>,
    /// The files read.
    pub files: Vec<String>,
}

impl Program {
    /// A node described for a report: `send on tx at src/main.rs:12`.
    pub fn describe(&self, n: NodeId) -> String {
        format!("{} at {}", self.what_text(n), self.sites[n])
    }

    /// What a node does, for a report: `send on tx`.
    pub fn what_text(&self, n: NodeId) -> String {
        let chan = |c: &Option<usize>| match c {
            Some(c) => format!(" on `{}`", self.channels[*c].names.join("`/`")),
            None => " on an unknown channel".to_owned(),
        };
        match &self.what[n] {
            What::Start => "start".to_owned(),
            What::Stop => "end".to_owned(),
            What::Stmt => "statement".to_owned(),
            What::LoopHead => "loop".to_owned(),
            What::Send(c) => format!("send{}", chan(c)),
            What::Recv(c) => format!("receive{}", chan(c)),
            What::NoMessage => "receive without a message".to_owned(),
            What::Mark(Some(l)) => format!("mark {l}"),
            What::Mark(None) => "mark (label not a literal)".to_owned(),
            What::Enter(f) => format!("enter {f}"),
            What::Exit(f) => format!("exit {f}"),
            What::Spawn(p) => format!("spawn {}", self.process_name(*p)),
            What::Started => "start, after the spawn".to_owned(),
            What::Ending => "end, before a join".to_owned(),
            What::Joined(p) => format!("join {}", self.process_name(*p)),
            What::Opaque(f) => format!("call {f} (not followed)"),
            What::Unmodelled => "send by an unmodelled sender".to_owned(),
        }
    }

    /// A process's name for reports.
    pub fn process_name(&self, p: usize) -> String {
        match &self.processes[p].name {
            Some(n) => n.clone(),
            None => format!("(unnamed, spawned at {})", self.processes[p].site),
        }
    }
}

/// Source that cannot be read or parsed, or holds no program.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// A file or directory that cannot be read.
    #[error("cannot read {path}")]
    Io {
        /// The path.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A file that is not Rust.
    #[error("{file}:{line}:{column}: cannot parse: {message}")]
    Parse {
        /// The file.
        file: String,
        /// The line, from 1.
        line: usize,
        /// The column, from 1.
        column: usize,
        /// What is wrong.
        message: String,
    },
    /// No `#[ppd::main]` (or `main`) function.
    #[error("no `#[ppd::main]` function (nor a `fn main`) in {0}")]
    NoMain(String),
    /// More than one program.
    #[error("several `#[ppd::main]` functions ({0}): name one file with --source")]
    SeveralMains(String),
    /// Source nested deeper than the analysis reads.
    #[error("{file}:{line}: nested deeper than {limit} levels, which the analysis does not read")]
    TooDeep {
        /// The file.
        file: String,
        /// The line where the limit is passed.
        line: usize,
        /// The limit.
        limit: usize,
    },
}

/// One parsed file.
#[derive(Debug)]
pub(crate) struct File {
    pub(crate) name: String,
    pub(crate) ast: syn::File,
}

/// Parses `text` as the file `name`.
/// How deep brackets may nest in a file, and expressions in the walk: deeper source is
/// refused rather than parsed, since parsing and walking it recurse.
pub(crate) const DEPTH_LIMIT: usize = 256;

/// The line where `text`'s brackets (outside strings, characters and comments) nest deeper
/// than [`DEPTH_LIMIT`], if they do. A rough scan, only to keep recursion bounded.
fn too_deep(text: &str) -> Option<usize> {
    let (mut depth, mut line) = (0usize, 1);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\n' => line += 1,
            '(' | '[' | '{' => {
                depth += 1;
                if depth > DEPTH_LIMIT {
                    return Some(line);
                }
            }
            ')' | ']' | '}' => depth = depth.saturating_sub(1),
            '"' => {
                while let Some(c) = chars.next() {
                    match c {
                        '\\' => {
                            chars.next();
                        }
                        '"' => break,
                        '\n' => line += 1,
                        _ => {}
                    }
                }
            }
            '/' if chars.peek() == Some(&'/') => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        line += 1;
                        break;
                    }
                }
            }
            _ => {}
        }
    }
    None
}

fn parse_file(name: &str, text: &str) -> Result<File, SourceError> {
    if let Some(line) = too_deep(text) {
        return Err(SourceError::TooDeep {
            file: name.to_owned(),
            line,
            limit: DEPTH_LIMIT,
        });
    }
    let ast = syn::parse_file(text).map_err(|e| {
        let at = e.span().start();
        SourceError::Parse {
            file: name.to_owned(),
            line: at.line,
            column: at.column + 1,
            message: e.to_string(),
        }
    })?;
    Ok(File {
        name: name.to_owned(),
        ast,
    })
}

/// Builds the DCFG of the program in the given files (`(name, text)` pairs).
pub fn from_sources(files: &[(String, String)]) -> Result<Program, SourceError> {
    let parsed = files
        .iter()
        .map(|(n, t)| parse_file(n, t))
        .collect::<Result<Vec<_>, _>>()?;
    walk::build(&parsed)
}

/// Builds the DCFG of the program at `path`: a `.rs` file (with the files of the modules it
/// declares), or a directory, whose one `#[ppd::main]` file is the program (with its modules).
pub fn load(path: &Path) -> Result<Program, SourceError> {
    fn io(p: &Path) -> impl FnOnce(std::io::Error) -> SourceError + '_ {
        move |source| SourceError::Io {
            path: p.to_owned(),
            source,
        }
    }
    let root = if path.is_dir() {
        let mut candidates = Vec::new();
        rust_files(path, &mut candidates).map_err(io(path))?;
        candidates.sort();
        let mut mains = Vec::new();
        for c in &candidates {
            let text = std::fs::read_to_string(c).map_err(io(c))?;
            if text.contains("ppd::main") {
                let f = parse_file(&c.display().to_string(), &text)?;
                if walk::has_ppd_main(&f) {
                    mains.push(c.clone());
                }
            }
        }
        match mains.len() {
            0 => return Err(SourceError::NoMain(path.display().to_string())),
            1 => mains.remove(0),
            _ => {
                let names: Vec<String> = mains.iter().map(|m| m.display().to_string()).collect();
                return Err(SourceError::SeveralMains(names.join(", ")));
            }
        }
    } else {
        path.to_owned()
    };
    let mut files = Vec::new();
    let mut todo = vec![root];
    while let Some(f) = todo.pop() {
        if files.iter().any(|(n, _)| *n == f.display().to_string()) {
            continue;
        }
        let text = std::fs::read_to_string(&f).map_err(io(&f))?;
        let parsed = parse_file(&f.display().to_string(), &text)?;
        todo.extend(walk::module_files(&f, &parsed.ast));
        files.push((f.display().to_string(), text));
    }
    from_sources(&files)
}

/// The `.rs` files under `dir`, skipping `target` and hidden directories.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if entry.file_type()?.is_dir() {
            if name != "target" && !name.starts_with('.') {
                rust_files(&path, out)?;
            }
        } else if name.ends_with(".rs") {
            out.push(path);
        }
    }
    Ok(())
}
