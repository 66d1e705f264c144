//! The colours of text reports: the styles of what a reader scans a report for — process
//! names, `file:line` sites, values, the kind of a step, and what went wrong (races, deadlocks,
//! panics, leaks).
//!
//! A report is written with a palette. [`Palette::PLAIN`] adds nothing, so that reports go to
//! files, pipes and tests as plain text; the command line hands [`Palette::ANSI`] only to a
//! terminal that wants colour (`--color`, `NO_COLOR`), as ripgrep and cargo do.

use std::fmt::Display;

use anstyle::{AnsiColor, Effects, Style};

/// Whether, and how, a report colours what it writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Palette {
    ansi: bool,
}

impl Palette {
    /// No colour: the text as it is.
    pub const PLAIN: Palette = Palette { ansi: false };
    /// ANSI escapes, for a terminal.
    pub const ANSI: Palette = Palette { ansi: true };

    /// Whether this palette colours anything.
    pub fn is_colored(self) -> bool {
        self.ansi
    }

    fn paint(self, style: Style, text: impl Display) -> String {
        if self.ansi {
            format!("{}{text}{}", style.render(), style.render_reset())
        } else {
            text.to_string()
        }
    }

    /// A process's name (`teller`, `backup/replication`).
    pub fn process(self, text: impl Display) -> String {
        self.paint(AnsiColor::Cyan.on_default().effects(Effects::BOLD), text)
    }

    /// A place in the source (`examples/bank.rs:112`).
    pub fn site(self, text: impl Display) -> String {
        self.paint(AnsiColor::Blue.on_default(), text)
    }

    /// A value the program computed or logged.
    pub fn value(self, text: impl Display) -> String {
        self.paint(Style::new().effects(Effects::BOLD), text)
    }

    /// The kind of a step of a chain or of a finding (`data`, `control`, `message race`).
    pub fn kind(self, text: impl Display) -> String {
        self.paint(AnsiColor::Green.on_default(), text)
    }

    /// What went wrong: a race, a deadlock, a panic, a leak.
    pub fn alarm(self, text: impl Display) -> String {
        self.paint(AnsiColor::Red.on_default().effects(Effects::BOLD), text)
    }

    /// What the reader should know about the answer: a note, a limit reached.
    pub fn note(self, text: impl Display) -> String {
        self.paint(AnsiColor::Yellow.on_default(), text)
    }

    /// Structure around the content: the tree of a chain, quoted source lines.
    pub fn faint(self, text: impl Display) -> String {
        self.paint(Style::new().effects(Effects::DIMMED), text)
    }
}

#[cfg(test)]
mod tests {
    use super::Palette;

    #[test]
    fn the_plain_palette_adds_nothing_and_the_ansi_one_resets_what_it_sets() {
        assert_eq!(Palette::PLAIN.process("teller"), "teller");
        assert_eq!(Palette::PLAIN.alarm(3), "3");
        let painted = Palette::ANSI.process("teller");
        assert!(painted.starts_with("\u{1b}[") && painted.contains("teller"));
        assert!(painted.ends_with("\u{1b}[0m"), "{painted:?}");
        assert_ne!(Palette::ANSI.site("a.rs:1"), Palette::ANSI.alarm("a.rs:1"));
    }
}
