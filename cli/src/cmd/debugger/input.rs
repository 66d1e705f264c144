//! Where the debugger's commands come from: a terminal, with line editing, the user's history
//! and Tab completion; or anything else (a pipe, a file), read line by line with no history
//! kept, so that scripts drive the debugger as a user would.

use std::collections::BTreeMap;
use std::io::{BufRead, IsTerminal, Write};

use ppd_replayer::debugger::HaltState;
use ppd_replayer::predicate::Catalog;
use rustyline::completion::Completer;
use rustyline::error::ReadlineError;
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::history::DefaultHistory;
use rustyline::validate::Validator;
use rustyline::{Config, Editor, Helper};

use super::commands::{self, COMMANDS, Operands};
use super::history::History;
use crate::output::out;

const PROMPT: &str = "(ppd) ";

/// The debugger's input.
pub(crate) enum Input {
    Terminal {
        editor: Box<Editor<Words, DefaultHistory>>,
        /// The user's history file, when there is one.
        history: Option<History>,
    },
    Pipe(std::io::StdinLock<'static>),
    /// The commands a flag stands for (`--gdb`: `gdb`, then leave), each shown as typed.
    Script(std::collections::VecDeque<String>),
}

/// The commands the next debugger session runs instead of reading its input ([`script`]).
static SCRIPT: std::sync::Mutex<Option<Vec<String>>> = std::sync::Mutex::new(None);

/// Makes the next debugger session run `commands`, then end: what `--gdb` and `--lldb` on
/// `replay` and `record --stop` stand for.
pub(crate) fn script(commands: Vec<String>) {
    *SCRIPT.lock().unwrap_or_else(|p| p.into_inner()) = Some(commands);
}

impl Input {
    /// A terminal's line editor when standard input is one, else standard input as it is;
    /// the commands of [`script`] when a flag gave some.
    pub(crate) fn open(words: Words) -> Input {
        if let Some(commands) = SCRIPT.lock().unwrap_or_else(|p| p.into_inner()).take() {
            return Input::Script(commands.into());
        }
        if std::io::stdin().is_terminal() {
            let config = Config::builder()
                .auto_add_history(false)
                .max_history_size(1000)
                .and_then(|b| b.history_ignore_dups(true))
                .map(|b| b.completion_type(rustyline::CompletionType::List).build());
            if let Ok(config) = config
                && let Ok(mut editor) = Editor::with_config(config)
            {
                editor.set_helper(Some(words));
                let history = History::of_user();
                for command in history.iter().flat_map(History::load) {
                    let _ = editor.add_history_entry(command);
                }
                return Input::Terminal {
                    editor: Box::new(editor),
                    history,
                };
            }
        }
        Input::Pipe(std::io::stdin().lock())
    }

    /// The next command; `None` at the end of the input (Ctrl-D on a terminal).
    pub(crate) fn line(&mut self) -> Option<String> {
        match self {
            Input::Terminal { editor, history } => loop {
                match editor.readline(PROMPT) {
                    Ok(line) => {
                        let command = line.trim();
                        if !command.is_empty() {
                            let _ = editor.add_history_entry(command);
                            if let Some(history) = history {
                                history.add(command);
                            }
                        }
                        return Some(line);
                    }
                    // Ctrl-C drops the line being typed, as in a shell.
                    Err(ReadlineError::Interrupted) => {}
                    Err(_) => return None,
                }
            },
            Input::Script(commands) => {
                let command = commands.pop_front()?;
                out!("{PROMPT}{command}\n");
                Some(command)
            }
            Input::Pipe(stdin) => {
                out!("{PROMPT}");
                let _ = std::io::stdout().flush();
                let mut line = String::new();
                match stdin.read_line(&mut line) {
                    Ok(0) | Err(_) => None,
                    Ok(_) => Some(line),
                }
            }
        }
    }

    /// Tells completion where the replay is now (the variables of each process's e-block).
    pub(super) fn now_at(&mut self, state: &HaltState) {
        if let Input::Terminal { editor, .. } = self
            && let Some(words) = editor.helper_mut()
        {
            words.now_at(state);
        }
    }
}

/// What Tab completes: command names, process names, a process's variables (the parameters
/// of its current e-block and of every e-block), predicates' event words, mark labels and
/// e-block names.
#[derive(Debug, Default)]
pub(crate) struct Words {
    processes: Vec<String>,
    /// Per process, the parameters of the e-block it is in now.
    current: BTreeMap<String, Vec<String>>,
    /// Every e-block's parameters.
    parameters: Vec<String>,
    eblocks: Vec<String>,
    labels: Vec<String>,
}

/// The events a predicate names after `PROCESS:`.
const EVENTS: &[&str] = &["enter", "exit", "send", "recv", "mark"];
/// The options of `why`.
const WHY_OPTIONS: &[&str] = &["--depth", "--json", "--dot"];

impl Words {
    /// The names of a recording.
    pub(super) fn of(catalog: &Catalog) -> Words {
        let mut parameters: Vec<String> = catalog.eblocks.values().flatten().cloned().collect();
        parameters.sort();
        parameters.dedup();
        Words {
            processes: catalog.processes.iter().map(|(_, n)| n.clone()).collect(),
            current: BTreeMap::new(),
            parameters,
            eblocks: catalog.eblocks.keys().cloned().collect(),
            labels: catalog.labels.iter().cloned().collect(),
        }
    }

    /// Notes the e-block each process is in at `state`.
    pub(super) fn now_at(&mut self, state: &HaltState) {
        self.current = state
            .processes
            .iter()
            .map(|p| {
                let names = p
                    .eblock_args
                    .as_ref()
                    .and_then(serde_json::Value::as_object)
                    .map(|args| args.keys().cloned().collect())
                    .unwrap_or_default();
                (p.name.clone(), names)
            })
            .collect();
    }

    /// Where the word under the cursor starts in `line`, and what it may become.
    pub(super) fn complete(&self, line: &str) -> (usize, Vec<String>) {
        let start = line.rfind(|c: char| c.is_whitespace()).map_or(0, |i| i + 1);
        let before: Vec<&str> = line[..start].split_whitespace().collect();
        let word = &line[start..];
        let Some((first, operands)) = before.split_first() else {
            let names = COMMANDS.iter().map(|c| c.name.to_owned());
            return (start, starting(word, names));
        };
        let Some(spec) = commands::find(first) else {
            return (start, Vec::new());
        };
        let processes = || self.processes.iter().cloned();
        let candidates = match (spec.operands, operands) {
            (Operands::Process, []) => {
                let extra = (spec.verb == commands::Verb::Print).then(|| "json".to_owned());
                starting(word, processes().chain(extra))
            }
            (Operands::ProcessAndVariable, []) => starting(word, processes()),
            (Operands::ProcessAndVariable, [process]) if !word.starts_with('-') => {
                // Its own e-block's first, then every e-block's, each once.
                let current = self.current.get(*process).into_iter().flatten();
                let mut names: Vec<String> = Vec::new();
                for name in current.chain(&self.parameters) {
                    if !names.contains(name) {
                        names.push(name.clone());
                    }
                }
                starting(word, names)
            }
            (Operands::ProcessAndVariable, [_, ..]) => {
                starting(word, WHY_OPTIONS.iter().map(|o| (*o).to_owned()))
            }
            (Operands::Cut, _) => {
                // The process of the cut's last part: `main=3,tel` completes `teller=`.
                let part = word.rfind(',').map_or(0, |i| i + 1);
                let names = processes().map(|p| format!("{}{p}=", &word[..part]));
                starting(word, names)
            }
            (Operands::Predicate, _) => self.predicate(word, operands),
            (Operands::Command, []) => starting(word, COMMANDS.iter().map(|c| c.name.to_owned())),
            _ => Vec::new(),
        };
        (start, candidates)
    }

    /// Completion inside a predicate, from the word before the cursor's.
    fn predicate(&self, word: &str, before: &[&str]) -> Vec<String> {
        let owned = |names: &[String]| names.to_vec();
        match before.last() {
            Some(last) if last.ends_with(':') => {
                starting(word, EVENTS.iter().map(|e| (*e).to_owned()))
            }
            Some(&"mark") => starting(word, owned(&self.labels)),
            Some(&"enter" | &"exit") => starting(word, owned(&self.eblocks)),
            // A process starts the predicate and each part after `&`, `|`, `->` or `==`.
            None | Some(&"&" | &"|" | &"->" | &"==") => {
                starting(word, self.processes.iter().map(|p| format!("{p}:")))
            }
            Some(_) => Vec::new(),
        }
    }
}

/// The names that start with `word`.
fn starting(word: &str, names: impl IntoIterator<Item = String>) -> Vec<String> {
    names.into_iter().filter(|n| n.starts_with(word)).collect()
}

impl Completer for Words {
    type Candidate = String;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _: &rustyline::Context<'_>,
    ) -> rustyline::Result<(usize, Vec<String>)> {
        Ok(Words::complete(self, &line[..pos]))
    }
}

impl Hinter for Words {
    type Hint = String;
}

impl Highlighter for Words {}

impl Validator for Words {}

impl Helper for Words {}

#[cfg(test)]
mod tests {
    use super::*;

    fn words() -> Words {
        let mut words = Words {
            processes: ["main", "teller", "client-0", "client-1"]
                .map(str::to_owned)
                .to_vec(),
            parameters: ["bank", "request"].map(str::to_owned).to_vec(),
            eblocks: vec!["bank::handle".into()],
            labels: vec!["negative".into()],
            ..Words::default()
        };
        words
            .current
            .insert("teller".into(), vec!["request".into(), "to_clients".into()]);
        words
    }

    fn complete(line: &str) -> (usize, Vec<String>) {
        words().complete(line)
    }

    #[test]
    fn the_first_word_completes_to_a_command() {
        assert_eq!(complete("st"), (0, vec!["step".into(), "stop".into()]));
        assert_eq!(complete("wh"), (0, vec!["why".into()]));
    }

    #[test]
    fn a_process_completes_after_commands_that_take_one() {
        assert_eq!(complete("step tel"), (5, vec!["teller".into()]));
        assert_eq!(
            complete("s cl"),
            (2, vec!["client-0".into(), "client-1".into()])
        );
        assert_eq!(complete("print js"), (6, vec!["json".into()]));
        assert_eq!(complete("continue te"), (9, vec![]));
    }

    #[test]
    fn why_completes_the_process_then_its_variables_then_options() {
        assert_eq!(complete("why te"), (4, vec!["teller".into()]));
        assert_eq!(
            complete("why teller "),
            (
                11,
                vec!["request".into(), "to_clients".into(), "bank".into()]
            )
        );
        assert_eq!(complete("why teller to"), (11, vec!["to_clients".into()]));
        assert_eq!(complete("why main ba"), (9, vec!["bank".into()]));
        assert_eq!(
            complete("why teller balance --d"),
            (19, vec!["--depth".into(), "--dot".into()])
        );
    }

    #[test]
    fn a_cut_and_a_predicate_complete_their_parts() {
        assert_eq!(complete("goto te"), (5, vec!["teller=".into()]));
        assert_eq!(
            complete("goto main=3,te"),
            (5, vec!["main=3,teller=".into()])
        );
        assert_eq!(complete("stop tel"), (5, vec!["teller:".into()]));
        assert_eq!(complete("stop teller: ma"), (13, vec!["mark".into()]));
        assert_eq!(
            complete("stop teller: mark ne"),
            (18, vec!["negative".into()])
        );
        assert_eq!(
            complete("stop teller: exit ba"),
            (18, vec!["bank::handle".into()])
        );
        assert_eq!(
            complete("stop teller: mark negative & cl"),
            (29, vec!["client-0:".into(), "client-1:".into()])
        );
    }
}
