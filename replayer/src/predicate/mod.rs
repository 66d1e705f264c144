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
//! A simple predicate of `&`, `|` and `->` is about an *event*: it holds in the state right after
//! an event that matches it (Manabe & Imase's SP_i(e)). Under `==` it is about a *stable state*,
//! as Spezialetti & Gupta require: `enter F` holds while the process is inside F, `mark L if E`
//! holds from a mark L whose value satisfies E until the next mark L that does not.
//!
//! A predicate mixing `&` and `|` is refused: halting at its first state needs the satisfiability
//! of a general boolean formula over the lattice of global states, which is NP-hard (Manabe &
//! Imase §6).

mod eval;
mod parse;
mod resolve;

use std::fmt;

use serde::{Deserialize, Serialize};

pub use eval::{Interval, Scope};
pub use parse::{ParseError, parse};
pub use resolve::{Catalog, Combination, Component, Matcher, ResolveError, Resolved, closest};

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

impl fmt::Display for Predicate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let join = |f: &mut fmt::Formatter<'_>, v: &[Simple], sep: &str| -> fmt::Result {
            for (i, s) in v.iter().enumerate() {
                if i > 0 {
                    write!(f, " {sep} ")?;
                }
                write!(f, "{s}")?;
            }
            Ok(())
        };
        match self {
            Predicate::Simple(s) => write!(f, "{s}"),
            Predicate::Conjunctive(v) => join(f, v, "&"),
            Predicate::Disjunctive(v) => join(f, v, "|"),
            Predicate::Simultaneous(v) => join(f, v, "=="),
            Predicate::Linked(stages) => {
                for (i, stage) in stages.iter().enumerate() {
                    if i > 0 {
                        write!(f, " -> ")?;
                    }
                    join(f, stage, "|")?;
                }
                Ok(())
            }
        }
    }
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

impl fmt::Display for Simple {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.process, self.event)?;
        if let Some(c) = &self.condition {
            write!(f, " if {c}")?;
        }
        Ok(())
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

impl fmt::Display for EventPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EventPattern::Enter(n) => write!(f, "enter {n}"),
            EventPattern::Exit(n) => write!(f, "exit {n}"),
            EventPattern::Send(Some(c)) => write!(f, "send {c}"),
            EventPattern::Send(None) => write!(f, "send"),
            EventPattern::Recv(Some(c)) => write!(f, "recv {c}"),
            EventPattern::Recv(None) => write!(f, "recv"),
            EventPattern::Mark(l) => write!(f, "mark {l}"),
        }
    }
}

/// A condition on logged values.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Expr {
    /// `a OP b`.
    Compare(Operand, CmpOp, Operand),
    /// `a && b`.
    And(Box<Expr>, Box<Expr>),
    /// `a || b`.
    Or(Box<Expr>, Box<Expr>),
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expr::Compare(a, op, b) => write!(f, "{a} {op} {b}"),
            Expr::And(a, b) => write!(f, "{a} && {b}"),
            Expr::Or(a, b) => write!(f, "({a} || {b})"),
        }
    }
}

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum CmpOp {
    /// `==`
    Eq,
    /// `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
}

impl fmt::Display for CmpOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CmpOp::Eq => "==",
            CmpOp::Ne => "!=",
            CmpOp::Lt => "<",
            CmpOp::Le => "<=",
            CmpOp::Gt => ">",
            CmpOp::Ge => ">=",
        })
    }
}

/// One side of a comparison.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Operand {
    /// A logged value: `value`, `value.balance`, `amount`, `%0`, `%1.owner`.
    Path(Vec<String>),
    /// An integer literal.
    Int(i64),
    /// A floating-point literal.
    Float(f64),
    /// A string literal.
    Str(String),
    /// `true` or `false`.
    Bool(bool),
}

impl fmt::Display for Operand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Operand::Path(p) => f.write_str(&p.join(".")),
            Operand::Int(i) => write!(f, "{i}"),
            Operand::Float(x) => write!(f, "{x:?}"),
            Operand::Str(s) => write!(f, "{s:?}"),
            Operand::Bool(b) => write!(f, "{b}"),
        }
    }
}
