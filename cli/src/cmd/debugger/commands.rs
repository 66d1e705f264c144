//! The debugger's commands: their names, what each does in a line, and which one a word means.

/// A command of the interactive debugger.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Verb {
    Step,
    Continue,
    Back,
    Goto,
    Stop,
    Print,
    Why,
    Restore,
    Gdb,
    Lldb,
    Help,
    Quit,
}

/// What a command takes after its name, for completion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Operands {
    /// Nothing.
    Nothing,
    /// A process.
    Process,
    /// A process, then one of its variables, then options.
    ProcessAndVariable,
    /// `PROCESS=EVENTS,...`.
    Cut,
    /// A predicate, `PROCESS: EVENT ...`.
    Predicate,
    /// A command's name.
    Command,
    /// Options of its own, then another program's arguments after `--`.
    Options,
}

/// One command: its name, its short forms, how it is written and what it does.
#[derive(Debug)]
pub(super) struct Spec {
    pub(super) verb: Verb,
    pub(super) name: &'static str,
    pub(super) aliases: &'static [&'static str],
    pub(super) usage: &'static str,
    pub(super) about: &'static str,
    /// Its options, for `help COMMAND`.
    pub(super) options: &'static str,
    pub(super) operands: Operands,
}

/// Every command, in the order `help` lists them.
pub(super) const COMMANDS: &[Spec] = &[
    Spec {
        verb: Verb::Step,
        name: "step",
        aliases: &["s"],
        usage: "step [PROCESS]",
        about: "run PROCESS's next event (and what it waits for), or any process's",
        options: "",
        operands: Operands::Process,
    },
    Spec {
        verb: Verb::Continue,
        name: "continue",
        aliases: &["c"],
        usage: "continue",
        about: "replay to the end of the run; the debugger stays there",
        options: "",
        operands: Operands::Nothing,
    },
    Spec {
        verb: Verb::Back,
        name: "back",
        aliases: &["b"],
        usage: "back",
        about: "go back to the previous state of this session",
        options: "",
        operands: Operands::Nothing,
    },
    Spec {
        verb: Verb::Goto,
        name: "goto",
        aliases: &[],
        usage: "goto CUT",
        about: "go to the consistent state PROCESS=EVENTS,... (others as far as needed)",
        options: "",
        operands: Operands::Cut,
    },
    Spec {
        verb: Verb::Stop,
        name: "stop",
        aliases: &[],
        usage: "stop PRED",
        about: "replay from the start to the first state satisfying PRED",
        options: "",
        operands: Operands::Predicate,
    },
    Spec {
        verb: Verb::Print,
        name: "print",
        aliases: &["p", "state"],
        usage: "print [PROCESS] [json]",
        about: "the whole current state, or one process",
        options: "",
        operands: Operands::Process,
    },
    Spec {
        verb: Verb::Why,
        name: "why",
        aliases: &["w"],
        usage: "why PROCESS VAR [OPTIONS]",
        about: "the chain that gave VAR its value at PROCESS's current event",
        options: "--depth N (how many dependences to follow back), --json (the steps as JSON), \
                  --dot (a Graphviz graph)",
        operands: Operands::ProcessAndVariable,
    },
    Spec {
        verb: Verb::Restore,
        name: "restore",
        aliases: &[],
        usage: "restore PROCESS",
        about: "the values PROCESS's e-blocks last logged before its current event",
        options: "",
        operands: Operands::Process,
    },
    Spec {
        verb: Verb::Gdb,
        name: "gdb",
        aliases: &[],
        usage: "gdb [--dry-run] [-- GDB-ARGS]",
        about: "attach gdb to the replayed program, in the halted process's own frame",
        options: "--dry-run (print the command), -- GDB-ARGS (gdb's own, after ppd's)",
        operands: Operands::Options,
    },
    Spec {
        verb: Verb::Lldb,
        name: "lldb",
        aliases: &[],
        usage: "lldb [--dry-run] [-- LLDB-ARGS]",
        about: "attach lldb to the replayed program, in the halted process's own frame",
        options: "--dry-run (print the command), -- LLDB-ARGS (lldb's own, after ppd's)",
        operands: Operands::Options,
    },
    Spec {
        verb: Verb::Help,
        name: "help",
        aliases: &["h", "?"],
        usage: "help [COMMAND]",
        about: "this list, or one command",
        options: "",
        operands: Operands::Command,
    },
    Spec {
        verb: Verb::Quit,
        name: "quit",
        aliases: &["q", "exit"],
        usage: "quit",
        about: "end the replay and leave (Ctrl-D too)",
        options: "",
        operands: Operands::Nothing,
    },
];

/// The command `word` names (its name or a short form), or what to tell the user: the closest
/// names, when some are close.
pub(super) fn lookup(word: &str) -> Result<&'static Spec, String> {
    if let Some(spec) = find(word) {
        return Ok(spec);
    }
    let names = COMMANDS.iter().map(|c| c.name);
    let close = ppd_replayer::predicate::closest(word, names);
    Err(match close.as_slice() {
        [] => format!("unknown command `{word}`; `help` lists the commands"),
        [one] => format!("unknown command `{word}`; did you mean `{one}`? (`help` lists them)"),
        several => format!(
            "unknown command `{word}`; did you mean {}? (`help` lists them)",
            several
                .iter()
                .map(|c| format!("`{c}`"))
                .collect::<Vec<_>>()
                .join(" or ")
        ),
    })
}

/// The command `word` names exactly, by its name or a short form.
pub(super) fn find(word: &str) -> Option<&'static Spec> {
    COMMANDS
        .iter()
        .find(|c| c.name == word || c.aliases.contains(&word))
}

/// Every command with a line saying what it does.
pub(super) fn help() -> String {
    let width = COMMANDS.iter().map(|c| c.usage.len()).max().unwrap_or(0);
    let mut text = String::from("commands:\n");
    for c in COMMANDS {
        text.push_str(&format!("  {:<width$}  {}\n", c.usage, c.about));
    }
    let short: Vec<String> = COMMANDS
        .iter()
        .filter_map(|c| c.aliases.first().map(|a| format!("{a} {}", c.name)))
        .collect();
    text.push_str(&format!("short forms: {}\n", short.join(", ")));
    text.push_str(
        "`help COMMAND` says more of one; Tab completes commands, processes and variables",
    );
    text
}

/// One command: how it is written, what it does, and its short forms.
pub(super) fn help_for(spec: &Spec) -> String {
    let mut text = format!("{}\n  {}", spec.usage, spec.about);
    if !spec.options.is_empty() {
        text.push_str(&format!("\n  options: {}", spec.options));
    }
    if !spec.aliases.is_empty() {
        text.push_str(&format!("\n  short forms: {}", spec.aliases.join(", ")));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_short_forms_find_their_command() {
        assert_eq!(lookup("step").unwrap().verb, Verb::Step);
        assert_eq!(lookup("s").unwrap().verb, Verb::Step);
        assert_eq!(lookup("state").unwrap().verb, Verb::Print);
        assert_eq!(lookup("exit").unwrap().verb, Verb::Quit);
    }

    #[test]
    fn a_misspelt_command_gets_the_closest_name() {
        let message = lookup("stpe").unwrap_err();
        assert!(message.contains("did you mean `step`"), "{message}");
        let message = lookup("contnue").unwrap_err();
        assert!(message.contains("`continue`"), "{message}");
        let message = lookup("xyzzy").unwrap_err();
        assert!(!message.contains("did you mean"), "{message}");
        assert!(message.contains("`help` lists the commands"), "{message}");
    }

    #[test]
    fn help_lists_every_command_with_its_description() {
        let text = help();
        for c in COMMANDS {
            let line = text
                .lines()
                .find(|l| l.trim_start().starts_with(c.usage))
                .unwrap_or_else(|| panic!("no line for {}: {text}", c.name));
            assert!(line.ends_with(c.about), "{line}");
        }
    }

    #[test]
    fn no_two_commands_share_a_name() {
        let mut words: Vec<&str> = COMMANDS
            .iter()
            .flat_map(|c| std::iter::once(c.name).chain(c.aliases.iter().copied()))
            .collect();
        let all = words.len();
        words.sort_unstable();
        words.dedup();
        assert_eq!(words.len(), all, "{words:?}");
    }
}
