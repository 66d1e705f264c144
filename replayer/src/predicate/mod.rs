//! Distributed predicates: the language of `--stop` and `--trace`.
//!
//! ```text
//! SP   := PROCESS ':' EVENT ['if' EXPR]
//! EVENT:= 'enter' F | 'exit' F | 'send' [CHAN] | 'recv' [CHAN] | 'mark' LABEL
//! CP   := SP ('&' SP)*          conjunctive  (Manabe & Imase §3.2)
//! DP   := SP ('|' SP)*          disjunctive  (Manabe & Imase §3.3, Miller & Choi §3.3)
//! LP   := DP ('->' DP)*         linked       (Miller & Choi §3.4)
//! SE   := SP ('==' SP)*         simultaneous (Spezialetti & Gupta, Definition 1.1)
//! EXPR := CMP (('&&' | '||') CMP)*      CMP := OPERAND ('=='|'!='|'<'|'<='|'>'|'>=') OPERAND
//! ```
//!
//! `&&` and `||` are read left to right. A predicate is resolved against a recording before
//! replay (`resolve.rs`, `check.rs`): one that names something the recording lacks, or that
//! cannot hold in it, is refused there, pointing at the token.
//!
//! A simple predicate of `&`, `|` and `->` is about an *event*: it holds in the state right after
//! an event that matches it (Manabe & Imase's SP_i(e)). Under `==` it is about a *stable state*,
//! as Spezialetti & Gupta require: `enter F` holds while the process is inside F, `mark L if E`
//! holds from a mark L whose value satisfies E until the next mark L that does not.
//!
//! A predicate mixing `&` and `|` is refused: halting at its first state needs the satisfiability
//! of a general boolean formula over the lattice of global states, which is NP-hard (Manabe &
//! Imase §6).

mod check;
mod eval;
mod first_state;
mod index;
mod linked;
mod parse;
mod resolve;
mod shape;

use std::fmt;

use serde::{Deserialize, Serialize};

pub use eval::Interval;
pub use first_state::{FirstState, Satisfying, conjunction_states, events_satisfying, first_state};
pub use index::{After, Local, Tests};
pub use linked::Linked;
pub use parse::{ParseError, parse};
pub use ppd_formats::condition::{CmpOp, Comparison, Expr, Logic, Operand, Scope};
pub use resolve::{
    Catalog, Combination, Component, LoggedShapes, Matcher, Place, ResolveError, Resolved, closest,
};
pub use shape::{Kinds, Shape};

/// A parsed predicate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Predicate {
    /// One simple predicate.
    Simple(Simple),
    /// `SP & SP …`: all hold in one global state.
    Conjunctive(Vec<Simple>),
    /// `SP | SP …`: one of them holds.
    Disjunctive(Vec<Simple>),
    /// `DP -> DP …`: each holds after the previous one, ordered by happened-before.
    Linked(Vec<Vec<Simple>>),
    /// `SP == SP …`: all hold at once and stay held.
    Simultaneous(Vec<Simple>),
}

impl Predicate {
    /// Every simple predicate, in order.
    pub fn simples(&self) -> Vec<&Simple> {
        match self {
            Predicate::Simple(s) => vec![s],
            Predicate::Conjunctive(v) | Predicate::Disjunctive(v) | Predicate::Simultaneous(v) => {
                v.iter().collect()
            }
            Predicate::Linked(stages) => stages.iter().flatten().collect(),
        }
    }
}

impl Predicate {
    /// Every simple predicate with the separator written before it (none before the first).
    fn pieces(&self) -> Vec<(&'static str, &Simple)> {
        fn joined<'a>(
            v: &'a [Simple],
            sep: &'static str,
        ) -> impl Iterator<Item = (&'static str, &'a Simple)> {
            v.iter()
                .enumerate()
                .map(move |(i, s)| (if i == 0 { "" } else { sep }, s))
        }
        match self {
            Predicate::Simple(s) => vec![("", s)],
            Predicate::Conjunctive(v) => joined(v, " & ").collect(),
            Predicate::Disjunctive(v) => joined(v, " | ").collect(),
            Predicate::Simultaneous(v) => joined(v, " == ").collect(),
            Predicate::Linked(stages) => stages
                .iter()
                .enumerate()
                .flat_map(|(k, stage)| {
                    stage.iter().enumerate().map(move |(i, s)| match (k, i) {
                        (0, 0) => ("", s),
                        (_, 0) => (" -> ", s),
                        _ => (" | ", s),
                    })
                })
                .collect(),
        }
    }

    /// Where `part` of the `simple`-th simple predicate starts in the predicate as displayed.
    pub(crate) fn offset(&self, simple: usize, part: Part) -> usize {
        let mut text = String::new();
        let mut found = None;
        for (i, (sep, s)) in self.pieces().into_iter().enumerate() {
            text.push_str(sep);
            if i == simple {
                s.render(&mut text, &mut |p, at| {
                    if p == part && found.is_none() {
                        found = Some(at);
                    }
                });
                return found.unwrap_or(text.len());
            }
            s.render(&mut text, &mut |_, _| {});
        }
        text.len()
    }
}

impl fmt::Display for Predicate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (sep, s) in self.pieces() {
            write!(f, "{sep}{s}")?;
        }
        Ok(())
    }
}

/// A part of a simple predicate, for errors that point at it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Part {
    /// The process.
    Process,
    /// The event's keyword.
    Event,
    /// The name after it: the e-block, label or channel.
    Name,
    /// An operand of the condition's `comparison`-th comparison.
    Operand {
        /// Which comparison, from 0.
        comparison: usize,
        /// The right operand, else the left.
        right: bool,
    },
}

/// `PROCESS ':' EVENT ['if' EXPR]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Simple {
    /// The process, as written.
    pub process: String,
    /// The event it is about.
    pub event: EventPattern,
    /// A condition on the event's logged values.
    pub condition: Option<Expr>,
}

impl Simple {
    /// Writes the simple predicate as it is displayed, telling `note` where each part starts.
    fn render(&self, out: &mut String, note: &mut dyn FnMut(Part, usize)) {
        note(Part::Process, out.len());
        out.push_str(&self.process);
        out.push_str(": ");
        note(Part::Event, out.len());
        let (keyword, name) = self.event.parts();
        out.push_str(keyword);
        if let Some(name) = name {
            out.push(' ');
            note(Part::Name, out.len());
            out.push_str(name);
        }
        if let Some(condition) = &self.condition {
            out.push_str(" if ");
            condition.render(out, &mut |comparison, right, at| {
                note(Part::Operand { comparison, right }, at)
            });
        }
    }
}

impl fmt::Display for Simple {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = String::new();
        self.render(&mut out, &mut |_, _| {});
        f.write_str(&out)
    }
}

/// What kind of event a simple predicate matches.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum EventPattern {
    /// Entry of e-block F.
    Enter(String),
    /// Exit of e-block F.
    Exit(String),
    /// A send, on a named channel or any.
    Send(Option<String>),
    /// A receive, on a named channel or any.
    Recv(Option<String>),
    /// A user mark with this label.
    Mark(String),
}

impl EventPattern {
    /// Its keyword and the name after it.
    fn parts(&self) -> (&'static str, Option<&str>) {
        match self {
            EventPattern::Enter(n) => ("enter", Some(n)),
            EventPattern::Exit(n) => ("exit", Some(n)),
            EventPattern::Send(c) => ("send", c.as_deref()),
            EventPattern::Recv(c) => ("recv", c.as_deref()),
            EventPattern::Mark(l) => ("mark", Some(l)),
        }
    }
}

impl fmt::Display for EventPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.parts() {
            (keyword, Some(name)) => write!(f, "{keyword} {name}"),
            (keyword, None) => f.write_str(keyword),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ppd_formats::value;
    use ppd_formats::{Event, ProcessId};

    /// A recording's names in which process `p` marks `x` with integers.
    fn catalog() -> Catalog {
        let mut shape = Shape::default();
        shape.add(&value::encode(&7).unwrap());
        let logged = LoggedShapes {
            marks: [("x".to_owned(), shape)].into(),
            ..LoggedShapes::default()
        };
        Catalog {
            processes: vec![(ProcessId(0), "p".into())],
            labels: ["x".to_owned()].into(),
            logged: [(ProcessId(0), logged)].into(),
            ..Catalog::default()
        }
    }

    #[test]
    fn a_predicate_of_any_length_takes_no_stack_that_grows_with_it() {
        // On a thread with a small stack, anything that recursed once per stage or per
        // comparison (parsing, printing, resolving, sending the plan as JSON, evaluating,
        // dropping) would overflow it.
        let small = std::thread::Builder::new().stack_size(256 * 1024);
        let run = small.spawn(|| {
            let n = 100_000;
            let stages = vec!["p: mark x"; n].join(" -> ");
            let condition = vec!["value > 0"; n].join(" && ");
            let text = format!("{stages} -> p: mark x if {condition} || value == 3");
            let parsed = parse(&text).unwrap();
            let Predicate::Linked(ref linked) = parsed else {
                panic!("a linked predicate");
            };
            assert_eq!(linked.len(), n + 1);
            assert!(parsed.to_string().ends_with("value > 0 || value == 3)"));
            let resolved = parsed.resolve(&catalog()).unwrap();
            let json = serde_json::to_string(&resolved).unwrap();
            let sent: Resolved = serde_json::from_str(&json).unwrap();
            assert_eq!(sent, resolved);
            let tests = Tests::of(&sent);
            assert_eq!(tests.of_process(ProcessId(0)), [0, 1], "two distinct tests");
            let mark = |v: i64| Event::Mark {
                label: "x".into(),
                site: None,
                value: value::encode(&v).unwrap().into(),
            };
            let mut local = Local::new(std::sync::Arc::new(tests), ProcessId(0));
            assert!(local.after(&mark(5), None).holds(1));
            assert!(!local.after(&mark(-5), None).holds(1));
            assert!(local.after(&mark(3), None).holds(1), "`|| value == 3`");
            // A refusal deep inside points there.
            let bad = format!("{stages} -> p: mark x if value > 0 && value.y > 0");
            let refused = parse(&bad).unwrap().resolve(&catalog()).unwrap_err();
            let offset = refused.place.as_ref().unwrap().offset;
            assert_eq!(&bad[offset..], "y > 0", "{refused}");
        });
        run.unwrap().join().expect("no stack overflow");
    }

    #[test]
    fn a_predicate_prints_as_it_parses() {
        for text in [
            "teller: mark negative if value < 0",
            "a: recv requests -> b: send | c: exit f if %0 == \"x\" && %1.amount >= 2.5",
            "a: mark x & b: enter g if done == true",
            "a: mark x == b: mark y if value != -3",
        ] {
            let parsed = parse(text).unwrap();
            assert_eq!(parsed.to_string(), text);
            assert_eq!(parse(&parsed.to_string()).unwrap(), parsed);
        }
    }
}
