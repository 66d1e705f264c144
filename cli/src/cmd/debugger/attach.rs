//! The source-level debuggers, gdb and lldb (which one, and the program that runs it), and
//! attaching one to a halted OS process with one of its
//! threads selected in the newest frame of the user's own code: what `gdb` and `lldb` do at a
//! live halt (`record --stop -i`) and in a halted replay (`replay -i`). The frames above that
//! one are ppd's halt and the standard and C libraries' waits; `bt`, locals and `p` then show
//! the state the breakpoint found. When the debugger ends (or detaches), the program is still
//! halted.

use std::process::Command;

use crate::output::out;

/// Which debugger.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tool {
    Gdb,
    Lldb,
}

impl Tool {
    /// The debugger command's name.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Tool::Gdb => "gdb",
            Tool::Lldb => "lldb",
        }
    }

    /// The program to run: its name, or for lldb, when there is no `lldb` on `PATH`, the
    /// newest `lldb-N` there (distributions install versioned ones side by side).
    pub(crate) fn program(self) -> String {
        let name = self.name();
        let Some(path) = std::env::var_os("PATH") else {
            return name.to_owned();
        };
        let dirs: Vec<std::path::PathBuf> = std::env::split_paths(&path).collect();
        if self == Tool::Gdb || dirs.iter().any(|d| d.join(name).is_file()) {
            return name.to_owned();
        }
        let versioned = dirs
            .iter()
            .filter_map(|d| std::fs::read_dir(d).ok())
            .flatten()
            .flatten()
            .filter_map(|e| {
                let file = e.file_name().into_string().ok()?;
                let version: u32 = file.strip_prefix("lldb-")?.parse().ok()?;
                Some((version, file))
            })
            .max();
        versioned.map_or_else(|| name.to_owned(), |(_, file)| file)
    }

    /// The tool a command line starts with (`gdb ...`, `lldb ...`), and the rest of the line.
    pub(crate) fn of_line(line: &str) -> Option<(Tool, &str)> {
        [Tool::Gdb, Tool::Lldb].into_iter().find_map(|tool| {
            let rest = line.trim().strip_prefix(tool.name())?;
            (rest.is_empty() || rest.starts_with(' ')).then_some((tool, rest))
        })
    }

    /// Its arguments to attach to `pid` and select OS thread `thread`.
    fn attach_args(self, pid: u32, thread: Option<u32>) -> Vec<String> {
        let mut args = match self {
            Tool::Gdb => vec!["-q".to_owned(), "-p".to_owned(), pid.to_string()],
            Tool::Lldb => vec!["-p".to_owned(), pid.to_string()],
        };
        if let Some(thread) = thread {
            let (flag, select) = match self {
                Tool::Gdb => ("-ex", gdb_select(thread)),
                Tool::Lldb => ("-o", lldb_select(thread)),
            };
            args.extend([flag.to_owned(), select]);
        }
        args
    }
}

/// The frames that are not the user's: ppd's, the standard library's, the C library's (a
/// name is read without the `<` of a trait method's `<Type as Trait>::method`).
const NOT_THE_USERS: &str =
    "('ppd_recorder::', 'ppd_replayer::', 'std::', 'core::', 'alloc::', '__', 'syscall')";

fn gdb_select(thread: u32) -> String {
    let script = [
        &format!(
            "[t.switch() for t in gdb.selected_inferior().threads() if t.ptid[1] == {thread}]"
        ),
        "f = gdb.newest_frame()",
        &format!("ours = {NOT_THE_USERS}"),
        "while f is not None and (f.name() is None or f.name().lstrip('<').startswith(ours)): f = f.older()",
        "f is not None and f.select()",
    ];
    format!("python exec({:?})", script.join("\n"))
}

fn lldb_select(thread: u32) -> String {
    let script = [
        "p = lldb.debugger.GetSelectedTarget().GetProcess()",
        &format!("t = p.GetThreadByID({thread})"),
        &format!("ours = {NOT_THE_USERS}"),
        // lldb leaves some Rust names half demangled: `_$LT$ppd_replayer..local..X$u20$as...`.
        "plain = lambda n: n.replace('_$LT$', '<').replace('$LT$', '<').replace('..', '::').lstrip('<')",
        "frames = [f for f in t if f.GetFunctionName() and not plain(f.GetFunctionName()).startswith(ours)] if t.IsValid() else []",
        "t.IsValid() and p.SetSelectedThread(t)",
        "frames and t.SetSelectedFrame(frames[0].GetFrameID())",
    ];
    format!("script exec({:?})", script.join("\n"))
}

/// What `TOOL [NODE] [--dry-run] [-- TOOL-ARGS...]` asks.
pub(crate) struct Request {
    /// The node named, if any.
    pub(crate) node: Option<String>,
    /// Print the command instead of running it.
    pub(crate) dry_run: bool,
    /// The debugger's own arguments, after `--`.
    pub(crate) extra: Vec<String>,
}

impl Request {
    /// Reads `rest`, the words after the tool's name; `nodes` says whether a node may be
    /// named. The error is what to tell the user.
    pub(crate) fn parse(tool: Tool, rest: &str, nodes: bool) -> Result<Request, String> {
        let name = tool.name();
        let words = shlex::split(rest).ok_or_else(|| format!("{name}: unbalanced quotes"))?;
        let (ours, theirs) = match words.iter().position(|w| w == "--") {
            Some(k) => (&words[..k], &words[k + 1..]),
            None => (&words[..], &[][..]),
        };
        let dry_run = ours.iter().any(|w| w == "--dry-run");
        let named: Vec<&String> = ours.iter().filter(|w| *w != "--dry-run").collect();
        let node = match named.as_slice() {
            [] => None,
            [node] if nodes => Some((*node).clone()),
            _ if nodes => {
                return Err(format!(
                    "{name}: one node at most ({name} [NODE] [--dry-run] [-- ARGS])"
                ));
            }
            _ => return Err(format!("usage: {name} [--dry-run] [-- ARGS]")),
        };
        Ok(Request {
            node,
            dry_run,
            extra: theirs.to_vec(),
        })
    }
}

/// Runs `tool` attached to OS process `pid` with OS thread `thread` selected (or prints the
/// command, `dry_run`), `extra` its own arguments after ours; `label` says what it is
/// attached to.
pub(crate) fn attach(tool: Tool, pid: u32, thread: Option<u32>, request: &Request, label: &str) {
    let mut args = tool.attach_args(pid, thread);
    args.extend(request.extra.iter().cloned());
    run(tool, args, request, label);
}

/// Runs gdb attached to every one of `targets` (OS process and the thread to select), one
/// inferior each, the first selected when it starts: one debugger over every halted node.
/// lldb debugs one process at a time, so it is not offered here.
pub(crate) fn attach_every(targets: &[(u32, Option<u32>)], request: &Request, label: &str) {
    let Some((&(first, thread), rest)) = targets.split_first() else {
        return;
    };
    let mut args = Tool::Gdb.attach_args(first, thread);
    for (k, &(pid, thread)) in rest.iter().enumerate() {
        let inferior = k + 2;
        args.extend(
            [
                "add-inferior".to_owned(),
                format!("inferior {inferior}"),
                format!("attach {pid}"),
            ]
            .into_iter()
            .chain(thread.map(gdb_select))
            .flat_map(|command| ["-ex".to_owned(), command]),
        );
    }
    if !rest.is_empty() {
        // Back to the first, whose thread switching inferiors left unselected.
        args.extend(["-ex".to_owned(), "inferior 1".to_owned()]);
        args.extend(
            thread
                .map(gdb_select)
                .into_iter()
                .flat_map(|c| ["-ex".to_owned(), c]),
        );
    }
    args.extend(request.extra.iter().cloned());
    run(Tool::Gdb, args, request, label);
}

fn run(tool: Tool, args: Vec<String>, request: &Request, label: &str) {
    let program = tool.program();
    let name = program.as_str();
    let shown = shlex::try_join(std::iter::once(name).chain(args.iter().map(String::as_str)))
        .unwrap_or_else(|_| format!("{name} {}", args.join(" ")));
    if request.dry_run {
        out!("{shown}\n");
        return;
    }
    out!("{label}: {shown}\n");
    match Command::new(name).args(&args).status() {
        Ok(status) if status.success() => {}
        Ok(status) => out!("{name} ended: {status}\n"),
        Err(e) => out!("{name}: cannot run it: {e}\n"),
    }
}
