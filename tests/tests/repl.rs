//! The interactive debugger (`ppd replay -i`), driven as a user drives it: commands piped in
//! as a script would, and typed on a pseudo-terminal (line editing, Tab completion, history,
//! Ctrl-D), on real recordings of `bank` and `token_ring`.

use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;

use ppd_tests::{output_text, ppd, ppd_bin, ppd_with_input, record_example};
use serde_json::Value;

const PROMPT: &str = "(ppd) ";

/// Records `bank` until a run goes negative (exit code 1), which most runs do.
fn record_negative_bank(work: &Path) -> PathBuf {
    for attempt in 0..40 {
        let dir = work.join(format!("bank-{attempt}"));
        let out = record_example(work, &dir, "bank", &[]);
        if out.status.code() == Some(1) {
            return dir;
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
    panic!("bank never went negative in 40 recorded runs");
}

fn record(work: &Path, example: &str) -> PathBuf {
    let dir = work.join(example);
    let out = record_example(work, &dir, example, &[]);
    assert!(
        out.status.code().is_some_and(|c| c <= 1),
        "{}",
        output_text(&out).1
    );
    dir
}

/// `ppd replay DIR ARGS...` with `script` on standard input: what the debugger answered to
/// each command (the text after each prompt; the first part is what came before the first).
fn session(work: &Path, dir: &Path, args: &[&str], script: &str) -> Vec<String> {
    let mut all = vec!["replay", dir.to_str().unwrap()];
    all.extend_from_slice(args);
    let out = ppd_with_input(work, &all, script.as_bytes());
    let (stdout, stderr) = output_text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    stdout.split(PROMPT).map(str::to_owned).collect()
}

/// The JSON document `text` ends with (`print json`, `print PROCESS json`).
fn json_in(text: &str) -> Value {
    let start = text.find('{').expect("JSON in the answer");
    serde_json::from_str(text[start..].trim()).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// The lines of an answer that describe a process (`  NAME (pN): ...`), by process name.
fn process_lines<'a>(answer: &'a str, names: &[String]) -> Vec<&'a str> {
    answer
        .lines()
        .filter(|l| names.iter().any(|n| l.starts_with(&format!("  {n} ("))))
        .collect()
}

fn names(state: &Value) -> Vec<String> {
    state["processes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap().to_owned())
        .collect()
}

fn process<'a>(state: &'a Value, name: &str) -> &'a Value {
    state["processes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == name)
        .unwrap_or_else(|| panic!("no {name} in {state:#}"))
}

#[test]
fn a_step_prints_only_the_process_that_moved_and_where_it_is_now() {
    let work = tempfile::tempdir().unwrap();
    let dir = record_negative_bank(work.path());
    let answers = session(
        work.path(),
        &dir,
        &["--stop", "teller: mark negative", "-i", "--json"],
        "step teller\nprint teller json\nprint\nquit\n",
    );
    let halted = json_in(answers[0].split("commands:").next().unwrap());
    let everyone = names(&halted);
    assert_eq!(everyone.len(), 7, "{halted:#}");
    let before = process(&halted, "teller")["events"].as_u64().unwrap();

    let step = &answers[1];
    let teller = json_in(&answers[2]);
    assert_eq!(teller["events"].as_u64().unwrap(), before + 1, "{teller:#}");
    // The header says where the replay is now, not where it first halted.
    let header = step.lines().next().unwrap();
    assert_eq!(
        header,
        format!("halted (after a step): teller moved to event {before}; the other 6 did not move"),
    );
    assert!(!step.contains("mark negative"), "{step}");
    // Only the teller is described, at its new event, as the state describes that event.
    let described = process_lines(step, &everyone);
    assert_eq!(described.len(), 1, "{step}");
    let at = teller["at"].as_str().unwrap();
    assert!(
        described[0].starts_with(&format!("  teller (p1): event {before}, "))
            && described[0].ends_with(at),
        "{step}\nthe teller is at: {at}"
    );
    assert!(step.lines().count() < 6, "{step}");

    // `print` still shows every process.
    let all = &answers[3];
    assert!(all.starts_with("halted (after a step)\n"), "{all}");
    assert_eq!(process_lines(all, &everyone).len(), 7, "{all}");
}

#[test]
fn why_in_the_debugger_is_the_chain_ppd_why_gives_at_the_same_point() {
    let work = tempfile::tempdir().unwrap();
    let dir = record_negative_bank(work.path());
    let answers = session(
        work.path(),
        &dir,
        &["--stop", "teller: mark negative", "-i"],
        "step teller\nprint teller json\nwhy teller balance\nwhy teller balance --depth 3 --json\n\
         why teller\nquit\n",
    );
    let at = json_in(&answers[2])["last_event"].as_u64().unwrap();
    let at = at.to_string();
    let rec = dir.to_str().unwrap();

    let out = ppd(work.path(), &["why", rec, "teller", "balance", "--at", &at]);
    let (chain, stderr) = output_text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(
        chain.starts_with(&format!("why teller balance (at {at}):\nbalance = ")),
        "{chain}"
    );
    assert_eq!(answers[3], chain);

    let out = ppd(
        work.path(),
        &[
            "why", rec, "teller", "balance", "--at", &at, "--depth", "3", "--json",
        ],
    );
    let (json, stderr) = output_text(&out);
    assert!(out.status.success(), "{stderr}");
    let expected: Value = serde_json::from_str(&json).unwrap();
    let answered = json_in(&answers[4]);
    assert_eq!(answered["steps"], expected["steps"]);
    assert!(!expected["steps"].as_array().unwrap().is_empty());

    // Without a variable: `why`'s usage, and the session goes on.
    assert!(answers[5].contains("<VAR>"), "{}", answers[5]);
}

#[test]
fn continue_to_the_end_stays_in_the_debugger_and_back_returns() {
    let work = tempfile::tempdir().unwrap();
    let dir = record(work.path(), "token_ring");
    let answers = session(
        work.path(),
        &dir,
        &["-i"],
        "step\nprint json\ncontinue\nstep\nprint json\nwhy node-1 token\nback\nprint json\nquit\n",
    );
    let info: Value = serde_json::from_slice(
        &ppd(work.path(), &["info", "--json", dir.to_str().unwrap()]).stdout,
    )
    .unwrap();
    let logged = |name: &str| {
        info["processes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == name)
            .unwrap()["events"]
            .as_u64()
            .unwrap()
    };
    let before = json_in(&answers[2]);

    let over = &answers[3];
    assert!(
        over.contains("halted (the run is over): ")
            && over.contains("the run is over: every process is at the end of its log"),
        "{over}"
    );
    assert!(
        answers[4].starts_with("the run is over") && !answers[4].contains("halted ("),
        "nothing is left to step: {}",
        answers[4]
    );
    let end = json_in(&answers[5]);
    for name in names(&end) {
        assert_eq!(
            process(&end, &name)["events"].as_u64().unwrap(),
            logged(&name),
            "{name} at the end of its log: {end:#}"
        );
    }
    // A query at the end is answered (token_ring marks no e-block, and the answer says so).
    assert!(
        answers[6].starts_with("node-1 ran no e-block"),
        "{}",
        answers[6]
    );

    assert!(
        answers[7].starts_with("halted (the requested state): "),
        "{}",
        answers[7]
    );
    let back = json_in(&answers[8]);
    for name in names(&before) {
        assert_eq!(
            process(&back, &name)["events"],
            process(&before, &name)["events"],
            "{name} back where it was before `continue`"
        );
    }
}

#[test]
fn an_unknown_command_gets_the_closest_and_help_lists_every_command() {
    let work = tempfile::tempdir().unwrap();
    let dir = record(work.path(), "token_ring");
    let answers = session(work.path(), &dir, &["-i"], "contnue\nwhy\nhelp\n");
    assert!(
        answers[1].contains("unknown command `contnue`; did you mean `continue`?"),
        "{}",
        answers[1]
    );
    assert!(!answers[2].contains("unknown command"), "{}", answers[2]);
    let help = &answers[3];
    for command in [
        "step", "continue", "back", "goto", "stop", "print", "why", "restore", "help", "quit",
    ] {
        let line = help
            .lines()
            .find(|l| l.starts_with(&format!("  {command}")))
            .unwrap_or_else(|| panic!("help has no line for {command}: {help}"));
        let description = line[2 + command.len()..].trim();
        assert!(
            description.split_whitespace().count() > 2,
            "{command} is described: {line}"
        );
    }
}

/// Terminal output as text: without escape sequences (`ESC [ ... letter`) and carriage returns.
fn plain(output: &str) -> String {
    let mut text = String::new();
    let mut chars = output.chars();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => {
                if chars.next() == Some('[') {
                    for c in chars.by_ref() {
                        if c.is_ascii_alphabetic() || c == '~' {
                            break;
                        }
                    }
                }
            }
            '\r' => {}
            c => text.push(c),
        }
    }
    text
}

/// `ppd` on a pseudo-terminal, as a user at a terminal runs it.
struct Terminal {
    child: Child,
    master: File,
    output: mpsc::Receiver<Vec<u8>>,
    seen: String,
    /// How much of `seen` the last `answer` consumed.
    read: usize,
}

impl Terminal {
    /// Starts `ppd ARGS...` with its standard streams on a new terminal, its history under
    /// `state` (`XDG_STATE_HOME`).
    fn start(cwd: &Path, args: &[&str], state: &Path) -> Terminal {
        let size = nix::pty::Winsize {
            ws_row: 50,
            ws_col: 200,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        let pty = nix::pty::openpty(Some(&size), None).expect("a pseudo-terminal");
        let slave = File::from(pty.slave);
        let child = Command::new(ppd_bin())
            .args(args)
            .current_dir(cwd)
            .env("TERM", "xterm")
            .env("XDG_STATE_HOME", state)
            .stdin(Stdio::from(slave.try_clone().unwrap()))
            .stdout(Stdio::from(slave.try_clone().unwrap()))
            .stderr(Stdio::from(slave))
            .spawn()
            .expect("run ppd");
        let master = File::from(pty.master);
        let mut reader = master.try_clone().unwrap();
        let (tx, output) = mpsc::channel();
        // Reads until every writer is gone (the terminal then fails with EIO).
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 || tx.send(buf[..n].to_vec()).is_err() {
                    break;
                }
            }
        });
        Terminal {
            child,
            master,
            output,
            seen: String::new(),
            read: 0,
        }
    }

    /// Waits until ppd asks for the next command: the terminal has moved to a new line since
    /// the last call, and now ends with a prompt (a prompt redrawn as a line is edited is
    /// followed by the line). What it showed since, without escape sequences. Fails when ppd
    /// leaves the terminal first.
    fn answer(&mut self) -> String {
        loop {
            let shown = plain(&self.seen[self.read..]);
            if shown.contains('\n') && shown.ends_with(PROMPT) {
                self.read = self.seen.len();
                return shown;
            }
            match self.output.recv() {
                Ok(bytes) => self.seen.push_str(&String::from_utf8_lossy(&bytes)),
                Err(_) => panic!("ppd left without asking for a command: {}", self.seen),
            }
        }
    }

    fn type_keys(&mut self, keys: &str) {
        self.master.write_all(keys.as_bytes()).unwrap();
        self.master.flush().unwrap();
    }

    /// Waits for ppd to exit; whether it succeeded.
    fn wait(mut self) -> bool {
        self.child.wait().unwrap().success()
    }
}

#[test]
fn on_a_terminal_tab_completes_history_is_kept_and_ctrl_d_leaves() {
    let work = tempfile::tempdir().unwrap();
    let dir = record(work.path(), "bank");
    let rec = dir.to_str().unwrap();
    let state = work.path().join("state");
    let history = state.join("ppd").join("debugger-history");

    let mut terminal = Terminal::start(work.path(), &["replay", rec, "-i"], &state);
    terminal.answer();
    // `tel` and Tab: the only process so named.
    terminal.type_keys("step tel\t\r");
    let step = terminal.answer();
    assert!(
        step.contains("teller (p1): event 0, start"),
        "Tab completed `tel` to `teller`: {step:?}"
    );
    terminal.type_keys("\x04");
    assert!(terminal.wait(), "Ctrl-D leaves, with success");
    let kept = std::fs::read_to_string(&history).unwrap();
    assert_eq!(kept, "step teller\n", "the completed command is kept");
    let mode = std::fs::metadata(&history).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);

    // The next session on a terminal starts with it: up arrow, Enter.
    let mut terminal = Terminal::start(work.path(), &["replay", rec, "-i"], &state);
    terminal.answer();
    terminal.type_keys("\x1b[A\r");
    let step = terminal.answer();
    assert!(step.contains("teller (p1): event 0, start"), "{step:?}");
    terminal.type_keys("quit\r");
    assert!(terminal.wait());
    assert_eq!(
        std::fs::read_to_string(&history).unwrap(),
        "step teller\nquit\n"
    );

    // Commands from a pipe are a script's, not the user's: they are not kept.
    let out = Command::new(ppd_bin())
        .args(["replay", rec, "-i"])
        .current_dir(work.path())
        .env("XDG_STATE_HOME", &state)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            child
                .stdin
                .take()
                .unwrap()
                .write_all(b"step main\nquit\n")?;
            child.wait_with_output()
        })
        .unwrap();
    assert!(out.status.success(), "{}", output_text(&out).1);
    assert!(output_text(&out).0.contains("main (p0): event 0"));
    assert_eq!(
        std::fs::read_to_string(&history).unwrap(),
        "step teller\nquit\n"
    );
}
