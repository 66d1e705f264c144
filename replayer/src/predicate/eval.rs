//! Evaluating simple predicates on the events a process executes.

use std::cmp::Ordering;

use ppd_formats::Event;
use ppd_formats::value::{self, Value};

use super::resolve::{Component, Matcher};
use super::{CmpOp, Comparison, Expr, Logic, Operand};

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
    pub fn of(event: &Event, entry_prelog: Option<&[u8]>) -> Scope {
        match event {
            Event::Mark { value, .. } => Scope {
                value: value::decode(value).ok(),
                ..Scope::default()
            },
            Event::Send { seq, payload, .. } => Scope {
                value: payload.as_deref().and_then(|p| value::decode(p).ok()),
                seq: Some(*seq),
                ..Scope::default()
            },
            Event::Recv {
                seq,
                sender,
                payload,
                ..
            } => Scope {
                value: payload.as_deref().and_then(|p| value::decode(p).ok()),
                seq: Some(*seq),
                sender: Some(sender.0),
                ..Scope::default()
            },
            Event::EblockEnter { prelog, .. } => Scope {
                args: decode_map(prelog),
                ..Scope::default()
            },
            Event::EblockExit { postlog, .. } => {
                let mut args = entry_prelog.map(decode_map).unwrap_or_default();
                let mut ret = None;
                for (name, v) in decode_map(postlog) {
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

impl Component {
    /// Whether `event` is the kind of event this component is about (before its condition).
    pub fn matches_event(&self, event: &Event) -> bool {
        match (&self.matcher, event) {
            (Matcher::Enter(f), Event::EblockEnter { eblock, .. }) => **eblock == **f,
            (Matcher::Exit(f), Event::EblockExit { eblock, .. }) => **eblock == **f,
            (Matcher::Mark(l), Event::Mark { label, .. }) => **label == **l,
            (Matcher::Send(c), Event::Send { channel, .. }) => c.is_none_or(|c| c == *channel),
            (Matcher::Recv(c), Event::Recv { channel, .. }) => c.is_none_or(|c| c == *channel),
            _ => false,
        }
    }

    /// Whether the component holds right after `event` (Manabe & Imase's SP_i(e)).
    pub fn holds_after(&self, event: &Event, entry_prelog: Option<&[u8]>) -> bool {
        self.matches_event(event)
            && self
                .condition
                .as_ref()
                .is_none_or(|c| Scope::of(event, entry_prelog).eval(c))
    }
}

/// A component read as a stable state (Spezialetti & Gupta's local event): `enter F [if E]`
/// holds while the process is inside an instance of F that satisfied E; `mark L if E` from a
/// mark L satisfying E until the next mark L that does not; a send, receive or exit only right
/// after it.
#[derive(Debug, Clone, Default)]
pub struct Interval {
    /// For `enter F`: for each open instance of F, whether it satisfied the condition.
    open: Vec<bool>,
    holds: bool,
}

impl Interval {
    /// Updates the state with the event the process just executed; returns whether the
    /// component holds now.
    pub fn observe(&mut self, c: &Component, event: &Event, entry_prelog: Option<&[u8]>) -> bool {
        match (&c.matcher, event) {
            (Matcher::Enter(f), Event::EblockEnter { eblock, .. }) if **eblock == **f => {
                self.open.push(c.holds_after(event, entry_prelog));
                self.holds = self.open.iter().any(|&b| b);
            }
            (Matcher::Enter(f), Event::EblockExit { eblock, .. }) if **eblock == **f => {
                self.open.pop();
                self.holds = self.open.iter().any(|&b| b);
            }
            (Matcher::Enter(_), _) => {}
            (Matcher::Mark(l), Event::Mark { label, .. }) if **label == **l => {
                self.holds = c.holds_after(event, entry_prelog);
            }
            (Matcher::Mark(_), _) => {}
            _ => self.holds = c.holds_after(event, entry_prelog),
        }
        self.holds
    }

    /// Whether the component holds.
    pub fn holds(&self) -> bool {
        self.holds
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::predicate::{EventPattern, Predicate, parse};
    use ppd_formats::ProcessId;
    use std::sync::Arc;

    /// The component `text` (one simple predicate), bound without a recording.
    fn component(text: &str) -> Component {
        let Predicate::Simple(simple) = parse(text).unwrap() else {
            panic!("{text} is not a simple predicate");
        };
        let matcher = match &simple.event {
            EventPattern::Enter(f) => Matcher::Enter(f.clone()),
            EventPattern::Exit(f) => Matcher::Exit(f.clone()),
            EventPattern::Mark(l) => Matcher::Mark(l.clone()),
            EventPattern::Send(_) => Matcher::Send(None),
            EventPattern::Recv(_) => Matcher::Recv(None),
        };
        Component {
            id: 0,
            process: ProcessId(0),
            matcher,
            condition: simple.condition,
            text: text.to_owned(),
        }
    }

    fn mark(label: &str, v: impl serde::Serialize) -> Event {
        Event::Mark {
            label: Arc::from(label),
            site: None,
            value: value::encode(&v).unwrap().into(),
        }
    }

    #[derive(serde::Serialize)]
    struct Account {
        owner: &'static str,
        balance: i64,
    }

    #[test]
    fn conditions_compare_logged_values() {
        let c = component("p: mark balance if value.balance < 0 && value.owner == \"ann\"");
        assert!(c.holds_after(
            &mark(
                "balance",
                Account {
                    owner: "ann",
                    balance: -3
                }
            ),
            None
        ));
        assert!(!c.holds_after(
            &mark(
                "balance",
                Account {
                    owner: "ann",
                    balance: 3
                }
            ),
            None
        ));
        assert!(!c.holds_after(
            &mark(
                "balance",
                Account {
                    owner: "bo",
                    balance: -3
                }
            ),
            None
        ));
        assert!(!c.holds_after(
            &mark(
                "holding",
                Account {
                    owner: "ann",
                    balance: -3
                }
            ),
            None
        ));
        let c = component("p: mark balance if value > 2.5");
        assert!(c.holds_after(&mark("balance", 3u64), None));
        assert!(
            !c.holds_after(&mark("balance", "3"), None),
            "a string is not a number"
        );
    }

    #[test]
    fn conditions_read_left_to_right() {
        // `a || b && c` is `(a || b) && c`, as the predicate prints it.
        let c = component("p: mark balance if value > 0 || value < -10 && value != 5");
        assert_eq!(
            c.condition.as_ref().unwrap().to_string(),
            "(value > 0 || value < -10) && value != 5"
        );
        assert!(c.holds_after(&mark("balance", 3), None));
        assert!(!c.holds_after(&mark("balance", 5), None));
        assert!(c.holds_after(&mark("balance", -20), None));
        assert!(!c.holds_after(&mark("balance", -3), None));
    }

    #[test]
    fn exits_see_arguments_and_return_value() {
        let prelog = value::encode(
            &[("account", 1i64), ("amount", 50)]
                .into_iter()
                .collect::<std::collections::BTreeMap<_, _>>(),
        )
        .unwrap();
        let postlog = value::encode(
            &[("%0", -20i64)]
                .into_iter()
                .collect::<std::collections::BTreeMap<_, _>>(),
        )
        .unwrap();
        let exit = Event::EblockExit {
            eblock: Arc::from("f"),
            postlog: postlog.into(),
        };
        assert!(component("p: exit f if %0 < 0 && amount == 50").holds_after(&exit, Some(&prelog)));
        assert!(!component("p: exit f if %0 > 0").holds_after(&exit, Some(&prelog)));
    }

    #[test]
    fn intervals_hold_until_the_state_changes() {
        let c = component("p: mark holding if value == true");
        let mut i = Interval::default();
        assert!(i.observe(&c, &mark("holding", true), None));
        assert!(
            i.observe(&c, &mark("balance", 1), None),
            "other marks keep the state"
        );
        assert!(!i.observe(&c, &mark("holding", false), None));
        let c = component("p: enter f if amount > 10");
        let enter = |amount: i64| Event::EblockEnter {
            eblock: Arc::from("f"),
            site: None,
            prelog: value::encode(
                &[("account", 0i64), ("amount", amount)]
                    .into_iter()
                    .collect::<std::collections::BTreeMap<_, _>>(),
            )
            .unwrap()
            .into(),
        };
        let exit = Event::EblockExit {
            eblock: Arc::from("f"),
            postlog: value::encode(&()).unwrap().into(),
        };
        let mut i = Interval::default();
        assert!(i.observe(&c, &enter(50), None));
        assert!(i.observe(&c, &mark("balance", 1), None));
        assert!(
            i.observe(&c, &enter(5), None),
            "still inside the outer instance"
        );
        assert!(i.observe(&c, &exit, None));
        assert!(!i.observe(&c, &exit, None));
    }
}
