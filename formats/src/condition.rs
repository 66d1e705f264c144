//! The condition of a simple predicate (`if EXPR`): comparisons of the values an event
//! logged, and their evaluation on an event. One definition for both evaluators: the replay's
//! local controllers (`ppd_replayer::predicate`) and a live program's breakpoints
//! ([`crate::live`]), which read the same events.

use std::cmp::Ordering;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::event::{Event, Repr};
use crate::value::{self, Value};

/// A condition on logged values: comparisons joined by `&&` and `||`, read left to right
/// (`a || b && c` is `(a || b) && c`). It is kept flat, not as a tree, so that nothing that
/// reads, prints or drops a condition recurses as deep as the condition is long.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Expr {
    /// The first comparison.
    pub first: Comparison,
    /// Each further comparison, with how it joins everything before it.
    pub rest: Vec<(Logic, Comparison)>,
}

impl Expr {
    /// Every comparison, in the order written.
    pub fn comparisons(&self) -> impl Iterator<Item = &Comparison> {
        std::iter::once(&self.first).chain(self.rest.iter().map(|(_, c)| c))
    }
}

impl Expr {
    /// Writes the condition as it is displayed, telling `note` where each operand starts (the
    /// comparison's number, whether it is the right operand, the offset). Each `||` groups
    /// everything before it: `(a || b) && c`.
    pub fn render(&self, out: &mut String, note: &mut dyn FnMut(usize, bool, usize)) {
        use fmt::Write as _;
        let ors = self.rest.iter().filter(|(l, _)| *l == Logic::Or).count();
        out.push_str(&"(".repeat(ors));
        let joined = std::iter::once((None, &self.first))
            .chain(self.rest.iter().map(|(l, c)| (Some(*l), c)));
        for (comparison, (logic, c)) in joined.enumerate() {
            match logic {
                Some(Logic::And) => out.push_str(" && "),
                Some(Logic::Or) => out.push_str(" || "),
                None => {}
            }
            note(comparison, false, out.len());
            let _ = write!(out, "{} {} ", c.left, c.op);
            note(comparison, true, out.len());
            let _ = write!(out, "{}", c.right);
            if logic == Some(Logic::Or) {
                out.push(')');
            }
        }
    }
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = String::new();
        self.render(&mut out, &mut |_, _, _| {});
        f.write_str(&out)
    }
}

/// `&&` or `||`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Logic {
    /// `&&`
    And,
    /// `||`
    Or,
}

/// `a OP b`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// The left operand.
    pub left: Operand,
    /// The operator.
    pub op: CmpOp,
    /// The right operand.
    pub right: Operand,
}

impl fmt::Display for Comparison {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} {}", self.left, self.op, self.right)
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

/// The logged values an event makes visible to a condition.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Scope {
    /// `value`: a mark's value or a message's payload.
    pub value: Option<Value>,
    /// E-block arguments by name, in order (`%1` is the first).
    pub args: Vec<(String, Value)>,
    /// `%0`: an e-block's return value.
    pub ret: Option<Value>,
    /// `seq`: a message's sequence number.
    pub seq: Option<u64>,
    /// `sender`: a received message's sender.
    pub sender: Option<u32>,
}

fn decode_map(bytes: &[u8]) -> Vec<(String, Value)> {
    match value::decode(bytes) {
        Ok(Value::Map(entries)) => entries
            .into_iter()
            .map(|(k, v)| (k.as_str().unwrap_or("?").to_owned(), v))
            .collect(),
        Ok(Value::Array(items)) => items
            .into_iter()
            .enumerate()
            .map(|(i, v)| (format!("%{}", i + 1), v))
            .collect(),
        _ => Vec::new(),
    }
}

impl Scope {
    /// The scope of `event`. An e-block exit also sees the arguments its entry logged
    /// (`entry_prelog`), overlaid with the final values of the `&mut` ones.
    pub fn of<R: Repr>(event: &Event<R>, entry_prelog: Option<&[u8]>) -> Scope {
        match event {
            Event::Mark { value, .. } => Scope {
                value: value::decode(value.as_ref()).ok(),
                ..Scope::default()
            },
            Event::Send { seq, payload, .. } => Scope {
                value: payload
                    .as_ref()
                    .and_then(|p| value::decode(p.as_ref()).ok()),
                seq: Some(*seq),
                ..Scope::default()
            },
            Event::Recv {
                seq,
                sender,
                payload,
                ..
            } => Scope {
                value: payload
                    .as_ref()
                    .and_then(|p| value::decode(p.as_ref()).ok()),
                seq: Some(*seq),
                sender: Some(sender.0),
                ..Scope::default()
            },
            Event::EblockEnter { prelog, .. } => Scope {
                args: decode_map(prelog.as_ref()),
                ..Scope::default()
            },
            Event::EblockExit { postlog, .. } => {
                let mut args = entry_prelog.map(decode_map).unwrap_or_default();
                let mut ret = None;
                for (name, v) in decode_map(postlog.as_ref()) {
                    if name == "%0" {
                        ret = Some(v);
                    } else if let Some(slot) = args.iter_mut().find(|(n, _)| *n == name) {
                        slot.1 = v;
                    } else {
                        args.push((name, v));
                    }
                }
                Scope {
                    args,
                    ret,
                    ..Scope::default()
                }
            }
            _ => Scope::default(),
        }
    }

    fn root(&self, name: &str) -> Option<Value> {
        let special = match name {
            "value" => self.value.clone(),
            "%0" => self.ret.clone(),
            "seq" => self.seq.map(Value::from),
            "sender" => self.sender.map(Value::from),
            _ => None,
        };
        // An e-block's scope has none of those: its parameter may be called `value` or `seq`.
        special.or_else(|| {
            if let Some(i) = name.strip_prefix('%').and_then(|n| n.parse::<usize>().ok()) {
                return self.args.get(i.checked_sub(1)?).map(|(_, v)| v.clone());
            }
            self.args
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.clone())
        })
    }

    fn operand(&self, operand: &Operand) -> Option<Value> {
        match operand {
            Operand::Path(path) => {
                let root = self.root(&path[0])?;
                value::field(&root, &path[1..].join(".")).cloned()
            }
            Operand::Int(i) => Some(Value::from(*i)),
            Operand::Float(x) => Some(Value::from(*x)),
            Operand::Str(s) => Some(Value::from(s.as_str())),
            Operand::Bool(b) => Some(Value::from(*b)),
        }
    }

    /// Evaluates a condition, left to right. A missing value or a comparison between values
    /// that do not compare (a string with a number) is false.
    pub fn eval(&self, expr: &Expr) -> bool {
        let mut holds = self.compare(&expr.first);
        for (logic, c) in &expr.rest {
            holds = match logic {
                Logic::And => holds && self.compare(c),
                Logic::Or => holds || self.compare(c),
            };
        }
        holds
    }

    fn compare(&self, c: &Comparison) -> bool {
        let (Some(a), Some(b)) = (self.operand(&c.left), self.operand(&c.right)) else {
            return false;
        };
        match (compare(&a, &b), c.op) {
            (Some(o), CmpOp::Eq) => o == Ordering::Equal,
            (Some(o), CmpOp::Ne) => o != Ordering::Equal,
            (Some(o), CmpOp::Lt) => o == Ordering::Less,
            (Some(o), CmpOp::Le) => o != Ordering::Greater,
            (Some(o), CmpOp::Gt) => o == Ordering::Greater,
            (Some(o), CmpOp::Ge) => o != Ordering::Less,
            (None, CmpOp::Eq) => a == b,
            (None, CmpOp::Ne) => a != b,
            (None, _) => false,
        }
    }
}

/// Orders two values when they are comparable: numbers numerically, strings and booleans
/// among themselves.
fn compare(a: &Value, b: &Value) -> Option<Ordering> {
    let number = |v: &Value| -> Option<f64> {
        match v {
            Value::Integer(i) => i
                .as_i64()
                .map(|x| x as f64)
                .or(i.as_u64().map(|x| x as f64)),
            Value::F32(x) => Some(f64::from(*x)),
            Value::F64(x) => Some(*x),
            _ => None,
        }
    };
    match (a, b) {
        (Value::Integer(x), Value::Integer(y)) => {
            let wide =
                |n: &value::Integer| n.as_i64().map(i128::from).or(n.as_u64().map(i128::from));
            Some(wide(x)?.cmp(&wide(y)?))
        }
        (Value::String(x), Value::String(y)) => Some(x.as_str()?.cmp(y.as_str()?)),
        (Value::Boolean(x), Value::Boolean(y)) => Some(x.cmp(y)),
        _ => number(a)?.partial_cmp(&number(b)?),
    }
}

/// How an event bears on a simple predicate read as a stable state (Spezialetti & Gupta's
/// local event): what [`Stable`] needs to know of it, which each evaluator reads off its own
/// matcher.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bearing {
    /// An instance of the predicate's e-block begins (`enter F`); whether it satisfied the
    /// condition.
    Opens(bool),
    /// The innermost instance of the predicate's e-block ends.
    Closes,
    /// The event sets whether the predicate holds from now on: a mark of its label, or, for a
    /// predicate about an instant (a send, a receive, an exit), every event.
    Sets(bool),
    /// The event leaves the state as it was.
    Leaves,
}

/// A simple predicate read as a stable state: `enter F` holds while the process is inside an
/// instance of F that satisfied the condition, `mark L` from a mark L that satisfies it until
/// the next mark L that does not, an instant only right after it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stable {
    /// For `enter F`: each open instance of F, innermost last, and whether it satisfied the
    /// condition.
    open: Vec<bool>,
    holds: bool,
}

impl Stable {
    /// Updates the state with how the process's last event bears on it; whether the predicate
    /// holds now.
    pub fn observe(&mut self, bearing: Bearing) -> bool {
        match bearing {
            Bearing::Opens(satisfied) => {
                self.open.push(satisfied);
                self.holds = self.open.iter().any(|&b| b);
            }
            Bearing::Closes => {
                self.open.pop();
                self.holds = self.open.iter().any(|&b| b);
            }
            Bearing::Sets(holds) => self.holds = holds,
            Bearing::Leaves => {}
        }
        self.holds
    }

    /// Whether the predicate holds.
    pub fn holds(&self) -> bool {
        self.holds
    }
}
