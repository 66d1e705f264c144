//! Checking a condition against the values its event logged, before replay: every variable and
//! path it reads must be in some logged value, and each comparison must be between kinds that
//! can compare. A condition that fails either could never hold; it is refused where it is
//! wrong instead of making the predicate "never hold".

use std::borrow::Cow;

use super::resolve::{Located, ResolveError, closest};
use super::shape::{Kinds, Shape};
use super::{CmpOp, Comparison, Expr, Operand, Part};

/// The values a simple predicate's condition reads at its events, as its process logged them.
pub(super) enum Values<'a> {
    /// A mark's `value`.
    Mark(Cow<'a, Shape>),
    /// A message's `value` (its payload, when logged), `seq` and, at a receive, `sender`.
    Message {
        /// At a receive (else at a send).
        receive: bool,
        /// The payloads logged.
        payloads: Cow<'a, Shape>,
    },
    /// An e-block's arguments at its entry, by name or as `%1`, `%2`, ...
    Enter {
        /// Its parameters, in order.
        params: &'a [String],
        /// Its prelogs.
        args: Cow<'a, Shape>,
    },
    /// An e-block's arguments at its exit (the final values of the `&mut` ones) and `%0`.
    Exit {
        /// Its parameters, in order.
        params: &'a [String],
        /// Its prelogs and postlogs.
        args: Cow<'a, Shape>,
        /// Its return values.
        ret: Cow<'a, Shape>,
    },
}

/// What a variable reads.
enum Root<'s> {
    /// Logged values of this shape.
    LoggedShapes(&'s Shape),
    /// A message's sequence number or sender: an integer.
    Integer,
}

impl Values<'_> {
    /// The variables a condition can read here, for the message that names none of them.
    fn variables(&self) -> Vec<String> {
        let numbered = |params: &[String]| (1..=params.len()).map(|i| format!("%{i}"));
        match self {
            Values::Mark(_) => vec!["value".into()],
            Values::Message { receive, .. } => {
                let mut v: Vec<String> = vec!["value".into(), "seq".into()];
                v.extend(receive.then(|| "sender".into()));
                v
            }
            Values::Enter { params, .. } => {
                params.iter().cloned().chain(numbered(params)).collect()
            }
            Values::Exit { params, .. } => params
                .iter()
                .cloned()
                .chain(numbered(params))
                .chain(["%0".to_owned()])
                .collect(),
        }
    }

    /// What `name` reads at `event` (as written), or why it reads nothing.
    fn root(&self, name: &str, event: &str, who: &str) -> Result<Root<'_>, ResolveError> {
        let refuse = |what: &'static str, reason: String| ResolveError {
            what,
            name: name.to_owned(),
            reason,
            suggestions: Vec::new(),
            known: Vec::new(),
            place: None,
        };
        let number = name.strip_prefix('%').and_then(|n| n.parse::<usize>().ok());
        match (self, number) {
            (Values::Mark(shape), None) if name == "value" => Ok(Root::LoggedShapes(shape)),
            (Values::Message { payloads, .. }, None) if name == "value" => {
                if payloads.is_empty() {
                    return Err(refuse(
                        "variable",
                        format!(
                            "is never logged at `{event}` in {who}: no message there had its \
                             value logged (values are logged on the channels an e-block \
                             reaches, or on every channel with `ppd record --payloads`)"
                        ),
                    ));
                }
                Ok(Root::LoggedShapes(payloads))
            }
            (Values::Message { .. }, None) if name == "seq" => Ok(Root::Integer),
            (Values::Message { receive, .. }, None) if name == "sender" => {
                if *receive {
                    Ok(Root::Integer)
                } else {
                    Err(refuse(
                        "variable",
                        format!("is logged at a receive, not at `{event}`"),
                    ))
                }
            }
            (Values::Enter { params, args } | Values::Exit { params, args, .. }, _)
                if params.iter().any(|p| p == name) =>
            {
                Ok(Root::LoggedShapes(
                    args.field(name).unwrap_or(Shape::none()),
                ))
            }
            (Values::Exit { ret, .. }, Some(0)) => Ok(Root::LoggedShapes(ret)),
            (Values::Enter { .. }, Some(0)) => Err(refuse(
                "variable",
                format!(
                    "is the return value, logged at the exit, not at `{event}`: use `exit` \
                     instead of `enter`"
                ),
            )),
            (Values::Enter { params, args } | Values::Exit { params, args, .. }, Some(n)) => {
                match params.get(n - 1) {
                    Some(param) => Ok(Root::LoggedShapes(
                        args.field(param).unwrap_or(Shape::none()),
                    )),
                    None => Err(refuse("variable", past_the_parameters(params, self, event))),
                }
            }
            _ => {
                let variables = self.variables();
                let mut e = ResolveError {
                    reason: format!("is not a logged value of `{event}`"),
                    ..refuse("variable", String::new())
                };
                e.suggestions = closest(name, variables.iter().map(String::as_str));
                if e.suggestions.is_empty() {
                    e.known = variables.into_iter().take(8).collect();
                }
                Err(e)
            }
        }
    }
}

/// Why `%n` names no parameter: "is past the parameters: `exit handle` has 2 (`%1` is
/// `bank`, `%2` is `request`, `%0` is the return value)".
fn past_the_parameters(params: &[String], values: &Values<'_>, event: &str) -> String {
    let mut named: Vec<String> = params
        .iter()
        .enumerate()
        .map(|(i, p)| format!("`%{}` is `{p}`", i + 1))
        .collect();
    if let Values::Exit { .. } = values {
        named.push("`%0` is the return value".into());
    }
    let count = match params.len() {
        0 => "none".to_owned(),
        n => n.to_string(),
    };
    let listed = match named.is_empty() {
        true => String::new(),
        false => format!(" ({})", named.join(", ")),
    };
    format!("is past the parameters: `{event}` has {count}{listed}")
}

/// The kinds an operand, the condition's `part`, can have, or why it has none. `who` and
/// `event` name where its values were logged, for messages.
fn kinds(
    operand: &Operand,
    part: Part,
    values: &Values<'_>,
    who: &str,
    event: &str,
) -> Result<Kinds, Located> {
    let at = |error: ResolveError, within: usize| Located {
        error: Box::new(error),
        part,
        within,
    };
    let path = match operand {
        Operand::Path(path) => path,
        Operand::Int(_) => return Ok(Kinds::INTEGER),
        Operand::Float(_) => return Ok(Kinds::FLOAT),
        Operand::Str(_) => return Ok(Kinds::STRING),
        Operand::Bool(_) => return Ok(Kinds::BOOL),
    };
    let root = values.root(&path[0], event, who).map_err(|e| at(e, 0))?;
    let shape = match root {
        Root::Integer if path.len() == 1 => return Ok(Kinds::INTEGER),
        Root::Integer => {
            let miss = ResolveError {
                what: "path",
                name: path[..2].join("."),
                reason: format!("goes into `{}`, which is an integer", path[0]),
                suggestions: Vec::new(),
                known: Vec::new(),
                place: None,
            };
            return Err(at(miss, path[0].len() + 1));
        }
        Root::LoggedShapes(shape) => shape,
    };
    shape.follow(&path[1..]).map_err(|miss| {
        let segment = miss.segment + 1;
        let within: usize = path[..segment].iter().map(|s| s.len() + 1).sum();
        let error = ResolveError {
            what: "path",
            name: path[..=segment].join("."),
            reason: format!(
                "is in no value {who} logged at `{event}` (`{}` holds {})",
                path[..segment].join("."),
                miss.found
            ),
            suggestions: closest(&path[segment], miss.fields.iter().map(String::as_str)),
            known: Vec::new(),
            place: None,
        };
        at(error, within)
    })
}

/// What an operand is, in words, for a comparison that never holds.
fn described(operand: &Operand, kinds: Kinds, who: &str, event: &str) -> String {
    match operand {
        Operand::Path(_) => format!(
            "`{operand}` is always {} in what {who} logged at `{event}`",
            kinds.describe(false)
        ),
        _ => format!("`{operand}` is {}", kinds.describe(false)),
    }
}

/// Checks `condition` against `values`, logged by process `who` at `event` (as written).
pub(super) fn condition(
    condition: &Expr,
    values: &Values<'_>,
    who: &str,
    event: &str,
) -> Result<(), Located> {
    for (comparison, c) in condition.comparisons().enumerate() {
        let part = |right| Part::Operand { comparison, right };
        let left = kinds(&c.left, part(false), values, who, event)?;
        let right = kinds(&c.right, part(true), values, who, event)?;
        if c.op != CmpOp::Ne && !left.compare_with(right, c.op == CmpOp::Eq) {
            return Err(never_holds(c, left, right, who, event).at(part(true)));
        }
    }
    Ok(())
}

fn never_holds(c: &Comparison, left: Kinds, right: Kinds, who: &str, event: &str) -> ResolveError {
    ResolveError {
        what: "comparison",
        name: c.to_string(),
        reason: format!(
            "never holds: {}, and {}",
            described(&c.left, left, who, event),
            described(&c.right, right, who, event)
        ),
        suggestions: Vec::new(),
        known: Vec::new(),
        place: None,
    }
}
