//! Parsing predicates, with errors that point at the offending column.

use std::fmt;

use super::{CmpOp, Comparison, EventPattern, Expr, Logic, Operand, Predicate, Simple};

/// A predicate that does not parse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// The predicate as given.
    pub input: String,
    /// Byte offset of the problem.
    pub offset: usize,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        point_at(f, &self.input, self.offset, &self.message)
    }
}

/// The widest predicate shown whole under an error; a longer one is shown around the problem.
const SHOWN: usize = 100;

/// Writes `message` about `text` at byte `offset`: the column, the text and a caret under it
/// (for a long text, the part of it around the caret).
pub(super) fn point_at(
    f: &mut fmt::Formatter<'_>,
    text: &str,
    offset: usize,
    message: &str,
) -> fmt::Result {
    let column = text
        .char_indices()
        .take_while(|&(at, _)| at < offset)
        .count();
    writeln!(f, "bad predicate at column {}: {message}", column + 1)?;
    let chars = text.chars().count();
    let (from, to) = if chars <= SHOWN {
        (0, chars)
    } else {
        let from = column.saturating_sub(SHOWN / 2).min(chars - SHOWN);
        (from, from + SHOWN)
    };
    let before = if from > 0 { "…" } else { "" };
    let after = if to < chars { "…" } else { "" };
    let shown: String = text.chars().skip(from).take(to - from).collect();
    writeln!(f, "  {before}{shown}{after}")?;
    let pad = column - from + before.chars().count();
    write!(f, "  {}^", " ".repeat(pad))
}

impl std::error::Error for ParseError {}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    Int(i64),
    Float(f64),
    Str(String),
    Colon,
    Amp,
    AndAnd,
    Bar,
    OrOr,
    Arrow,
    Cmp(CmpOp),
    End,
}

impl fmt::Display for Tok {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Tok::Ident(s) => write!(f, "`{s}`"),
            Tok::Int(i) => write!(f, "`{i}`"),
            Tok::Float(x) => write!(f, "`{x}`"),
            Tok::Str(s) => write!(f, "{s:?}"),
            Tok::Colon => f.write_str("`:`"),
            Tok::Amp => f.write_str("`&`"),
            Tok::AndAnd => f.write_str("`&&`"),
            Tok::Bar => f.write_str("`|`"),
            Tok::OrOr => f.write_str("`||`"),
            Tok::Arrow => f.write_str("`->`"),
            Tok::Cmp(op) => write!(f, "`{op}`"),
            Tok::End => f.write_str("the end"),
        }
    }
}

fn ident_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '#' | '%' | '/')
}

fn tokenize(input: &str) -> Result<Vec<(usize, Tok)>, ParseError> {
    let fail = |offset: usize, message: String| ParseError {
        input: input.to_owned(),
        offset,
        message,
    };
    let chars: Vec<(usize, char)> = input.char_indices().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let (at, c) = chars[i];
        let next = chars.get(i + 1).map(|&(_, c)| c);
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        let two = |t: Tok| (t, 2);
        let (tok, len) = match (c, next) {
            (':', Some(':')) => return Err(fail(at, "`::` must be part of a name".into())),
            (':', _) => (Tok::Colon, 1),
            ('&', Some('&')) => two(Tok::AndAnd),
            ('&', _) => (Tok::Amp, 1),
            ('|', Some('|')) => two(Tok::OrOr),
            ('|', _) => (Tok::Bar, 1),
            ('-', Some('>')) => two(Tok::Arrow),
            ('=', Some('=')) => two(Tok::Cmp(CmpOp::Eq)),
            ('!', Some('=')) => two(Tok::Cmp(CmpOp::Ne)),
            ('<', Some('=')) => two(Tok::Cmp(CmpOp::Le)),
            ('>', Some('=')) => two(Tok::Cmp(CmpOp::Ge)),
            ('<', _) => (Tok::Cmp(CmpOp::Lt), 1),
            ('>', _) => (Tok::Cmp(CmpOp::Gt), 1),
            ('"', _) => {
                let mut s = String::new();
                let mut j = i + 1;
                loop {
                    match chars.get(j) {
                        None => return Err(fail(at, "unterminated string".into())),
                        Some((_, '"')) => break,
                        Some((_, '\\')) => {
                            match chars.get(j + 1) {
                                Some((_, e)) => s.push(*e),
                                None => return Err(fail(at, "unterminated string".into())),
                            }
                            j += 2;
                        }
                        Some((_, ch)) => {
                            s.push(*ch);
                            j += 1;
                        }
                    }
                }
                out.push((at, Tok::Str(s)));
                i = j + 1;
                continue;
            }
            _ if c.is_ascii_digit() || (c == '-' && next.is_some_and(|n| n.is_ascii_digit())) => {
                let mut j = i + 1;
                while chars
                    .get(j)
                    .is_some_and(|&(_, ch)| ch.is_ascii_digit() || ch == '.' || ch == '_')
                {
                    j += 1;
                }
                let end = chars.get(j).map_or(input.len(), |&(o, _)| o);
                let text: String = input[at..end].chars().filter(|&ch| ch != '_').collect();
                let tok = if text.contains('.') {
                    Tok::Float(
                        text.parse()
                            .map_err(|_| fail(at, format!("`{text}` is not a number")))?,
                    )
                } else {
                    Tok::Int(
                        text.parse()
                            .map_err(|_| fail(at, format!("`{text}` is not a number")))?,
                    )
                };
                out.push((at, tok));
                i = j;
                continue;
            }
            _ if c.is_alphabetic() || matches!(c, '_' | '#' | '%') => {
                let mut j = i;
                loop {
                    match chars.get(j) {
                        Some(&(_, ch)) if ident_char(ch) => j += 1,
                        // `::` inside a path like `bank::handle`
                        Some(&(_, ':'))
                            if chars.get(j + 1).map(|&(_, c)| c) == Some(':')
                                && chars.get(j + 2).is_some_and(|&(_, c)| ident_char(c)) =>
                        {
                            j += 2
                        }
                        _ => break,
                    }
                }
                let end = chars.get(j).map_or(input.len(), |&(o, _)| o);
                out.push((at, Tok::Ident(input[at..end].to_owned())));
                i = j;
                continue;
            }
            _ => return Err(fail(at, format!("unexpected `{c}`"))),
        };
        out.push((at, tok));
        i += len;
    }
    out.push((input.len(), Tok::End));
    Ok(out)
}

struct Parser<'a> {
    input: &'a str,
    toks: Vec<(usize, Tok)>,
    pos: usize,
}

impl Parser<'_> {
    fn peek(&self) -> &Tok {
        &self.toks[self.pos].1
    }

    fn offset(&self) -> usize {
        self.toks[self.pos].0
    }

    fn bump(&mut self) -> Tok {
        let t = self.toks[self.pos].1.clone();
        if self.pos + 1 < self.toks.len() {
            self.pos += 1;
        }
        t
    }

    fn fail<T>(&self, message: impl Into<String>) -> Result<T, ParseError> {
        Err(ParseError {
            input: self.input.to_owned(),
            offset: self.offset(),
            message: message.into(),
        })
    }

    fn ident(&mut self, what: &str) -> Result<String, ParseError> {
        match self.peek().clone() {
            Tok::Ident(s) => {
                self.bump();
                Ok(s)
            }
            other => self.fail(format!("expected {what}, found {other}")),
        }
    }

    fn simple(&mut self) -> Result<Simple, ParseError> {
        // A process is named, or numbered (`3` or `p3`).
        let process = match self.peek().clone() {
            Tok::Int(n) if n >= 0 => {
                self.bump();
                n.to_string()
            }
            _ => self.ident("a process name")?,
        };
        if *self.peek() != Tok::Colon {
            return self.fail(format!(
                "expected `:` after the process name, found {}",
                self.peek()
            ));
        }
        self.bump();
        let keyword_at = self.offset();
        let keyword = self.ident("an event (enter, exit, send, recv or mark)")?;
        let event = match keyword.as_str() {
            "enter" => EventPattern::Enter(self.ident("an e-block name after `enter`")?),
            "exit" => EventPattern::Exit(self.ident("an e-block name after `exit`")?),
            "mark" => EventPattern::Mark(self.ident("a label after `mark`")?),
            "send" | "recv" => {
                let channel = match self.peek() {
                    Tok::Ident(s) if s != "if" => Some(self.ident("a channel")?),
                    _ => None,
                };
                if keyword == "send" {
                    EventPattern::Send(channel)
                } else {
                    EventPattern::Recv(channel)
                }
            }
            other => {
                return Err(ParseError {
                    input: self.input.to_owned(),
                    offset: keyword_at,
                    message: format!(
                        "unknown event `{other}`: expected enter, exit, send, recv or mark"
                    ),
                });
            }
        };
        let condition = match self.peek() {
            Tok::Ident(s) if s == "if" => {
                self.bump();
                Some(self.expr()?)
            }
            _ => None,
        };
        Ok(Simple {
            process,
            event,
            condition,
        })
    }

    fn expr(&mut self) -> Result<Expr, ParseError> {
        let first = self.comparison()?;
        let mut rest = Vec::new();
        loop {
            let logic = match self.peek() {
                Tok::AndAnd => Logic::And,
                Tok::OrOr => Logic::Or,
                _ => return Ok(Expr { first, rest }),
            };
            self.bump();
            rest.push((logic, self.comparison()?));
        }
    }

    fn comparison(&mut self) -> Result<Comparison, ParseError> {
        let left = self.operand()?;
        let op = match self.peek() {
            Tok::Cmp(op) => *op,
            other => {
                return self.fail(format!(
                    "expected a comparison (==, !=, <, <=, >, >=), found {other}"
                ));
            }
        };
        self.bump();
        let right = self.operand()?;
        Ok(Comparison { left, op, right })
    }

    fn operand(&mut self) -> Result<Operand, ParseError> {
        let operand = match self.peek().clone() {
            Tok::Int(i) => Operand::Int(i),
            Tok::Float(x) => Operand::Float(x),
            Tok::Str(s) => Operand::Str(s),
            Tok::Ident(s) if s == "true" => Operand::Bool(true),
            Tok::Ident(s) if s == "false" => Operand::Bool(false),
            Tok::Ident(s) => Operand::Path(s.split('.').map(str::to_owned).collect()),
            other => return self.fail(format!("expected a value or a name, found {other}")),
        };
        self.bump();
        Ok(operand)
    }
}

/// The operators between simple predicates, in the order written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Joint {
    And,
    Or,
    Then,
    Same,
}

/// Parses a predicate.
pub fn parse(input: &str) -> Result<Predicate, ParseError> {
    let toks = tokenize(input)?;
    let mut p = Parser {
        input,
        toks,
        pos: 0,
    };
    if *p.peek() == Tok::End {
        return p.fail("empty predicate");
    }
    let mut simples = vec![p.simple()?];
    let mut joints: Vec<(usize, Joint)> = Vec::new();
    loop {
        let at = p.offset();
        let joint = match p.peek() {
            Tok::Amp => Joint::And,
            Tok::Bar => Joint::Or,
            Tok::Arrow => Joint::Then,
            Tok::Cmp(CmpOp::Eq) => Joint::Same,
            Tok::End => break,
            Tok::AndAnd | Tok::OrOr => {
                return p.fail(
                    "`&&` and `||` combine comparisons after `if`; between simple predicates use \
                     `&`, `|`, `->` or `==`",
                );
            }
            other => {
                return p.fail(format!(
                    "expected `&`, `|`, `->`, `==` or the end, found {other}"
                ));
            }
        };
        p.bump();
        joints.push((at, joint));
        simples.push(p.simple()?);
    }
    classify(input, simples, &joints)
}

fn classify(
    input: &str,
    simples: Vec<Simple>,
    joints: &[(usize, Joint)],
) -> Result<Predicate, ParseError> {
    let refuse = |offset: usize, message: &str| ParseError {
        input: input.to_owned(),
        offset,
        message: message.to_owned(),
    };
    let Some(&(_, first)) = joints.first() else {
        let mut simples = simples;
        return Ok(Predicate::Simple(simples.remove(0)));
    };
    let has = |j: Joint| joints.iter().any(|(_, k)| *k == j);
    if has(Joint::Same) {
        if let Some(&(at, _)) = joints.iter().find(|(_, k)| *k != Joint::Same) {
            return Err(refuse(
                at,
                "`==` (simultaneous) cannot be combined with `&`, `|` or `->`",
            ));
        }
        return Ok(Predicate::Simultaneous(simples));
    }
    if has(Joint::Then) {
        if let Some(&(at, _)) = joints.iter().find(|(_, k)| *k == Joint::And) {
            return Err(refuse(
                at,
                "the stages of a linked predicate are disjunctions (`|`); `&` is not allowed \
                 in them",
            ));
        }
        let mut stages = vec![Vec::new()];
        let mut simples = simples.into_iter();
        stages[0].extend(simples.next());
        for ((_, joint), simple) in joints.iter().zip(simples) {
            if *joint == Joint::Then {
                stages.push(Vec::new());
            }
            stages.last_mut().expect("at least one stage").push(simple);
        }
        return Ok(Predicate::Linked(stages));
    }
    if has(Joint::And) && has(Joint::Or) {
        let at = joints
            .iter()
            .find(|(_, k)| *k != first)
            .map_or(0, |(at, _)| *at);
        return Err(refuse(
            at,
            "a predicate mixing `&` and `|` is not supported: finding the first global state \
             that satisfies a general boolean combination of local predicates is NP-hard \
             (Manabe & Imase §6); split it into a conjunction or a disjunction",
        ));
    }
    Ok(if first == Joint::And {
        Predicate::Conjunctive(simples)
    } else {
        Predicate::Disjunctive(simples)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use expect_test::{Expect, expect};

    fn check(input: &str, expected: Expect) {
        let actual = match parse(input) {
            Ok(p) => format!("{p:?}\n{p}"),
            Err(e) => e.to_string(),
        };
        expected.assert_eq(&actual);
    }

    #[test]
    fn simple_predicates() {
        check(
            "teller: mark negative",
            expect![[r#"
                Simple(Simple { process: "teller", event: Mark("negative"), condition: None })
                teller: mark negative"#]],
        );
        check(
            "client-0: send requests if value.amount >= 50 && value.account == 1",
            expect![[r#"
                Simple(Simple { process: "client-0", event: Send(Some("requests")), condition: Some(Expr { first: Comparison { left: Path(["value", "amount"]), op: Ge, right: Int(50) }, rest: [(And, Comparison { left: Path(["value", "account"]), op: Eq, right: Int(1) })] }) })
                client-0: send requests if value.amount >= 50 && value.account == 1"#]],
        );
        check(
            "teller: exit bank::handle if %0 < -5",
            expect![[r#"
                Simple(Simple { process: "teller", event: Exit("bank::handle"), condition: Some(Expr { first: Comparison { left: Path(["%0"]), op: Lt, right: Int(-5) }, rest: [] }) })
                teller: exit bank::handle if %0 < -5"#]],
        );
    }

    #[test]
    fn compound_predicates() {
        check(
            "node-0: mark enter & node-2: mark enter",
            expect![[r#"
                Conjunctive([Simple { process: "node-0", event: Mark("enter"), condition: None }, Simple { process: "node-2", event: Mark("enter"), condition: None }])
                node-0: mark enter & node-2: mark enter"#]],
        );
        check(
            "a: recv | b: send if value == \"x\"",
            expect![[r#"
                Disjunctive([Simple { process: "a", event: Recv(None), condition: None }, Simple { process: "b", event: Send(None), condition: Some(Expr { first: Comparison { left: Path(["value"]), op: Eq, right: Str("x") }, rest: [] }) }])
                a: recv | b: send if value == "x""#]],
        );
        check(
            "a: mark x -> b: mark y | c: mark z -> d: exit f",
            expect![[r#"
                Linked([[Simple { process: "a", event: Mark("x"), condition: None }], [Simple { process: "b", event: Mark("y"), condition: None }, Simple { process: "c", event: Mark("z"), condition: None }], [Simple { process: "d", event: Exit("f"), condition: None }]])
                a: mark x -> b: mark y | c: mark z -> d: exit f"#]],
        );
        check(
            "a: mark holding if value == true == b: mark holding if value == true",
            expect![[r#"
                Simultaneous([Simple { process: "a", event: Mark("holding"), condition: Some(Expr { first: Comparison { left: Path(["value"]), op: Eq, right: Bool(true) }, rest: [] }) }, Simple { process: "b", event: Mark("holding"), condition: Some(Expr { first: Comparison { left: Path(["value"]), op: Eq, right: Bool(true) }, rest: [] }) }])
                a: mark holding if value == true == b: mark holding if value == true"#]],
        );
    }

    #[test]
    fn mixed_and_or_is_refused_with_the_reason() {
        check(
            "a: mark x & b: mark y | c: mark z",
            expect![[r#"
                bad predicate at column 23: a predicate mixing `&` and `|` is not supported: finding the first global state that satisfies a general boolean combination of local predicates is NP-hard (Manabe & Imase §6); split it into a conjunction or a disjunction
                  a: mark x & b: mark y | c: mark z
                                        ^"#]],
        );
        check(
            "a: mark x -> b: mark y & c: mark z",
            expect![[r#"
                bad predicate at column 24: the stages of a linked predicate are disjunctions (`|`); `&` is not allowed in them
                  a: mark x -> b: mark y & c: mark z
                                         ^"#]],
        );
    }

    #[test]
    fn malformed_predicates_point_at_the_problem() {
        check(
            "teller mark negative",
            expect![[r#"
                bad predicate at column 8: expected `:` after the process name, found `mark`
                  teller mark negative
                         ^"#]],
        );
        check(
            "teller: jump",
            expect![[r#"
                bad predicate at column 9: unknown event `jump`: expected enter, exit, send, recv or mark
                  teller: jump
                          ^"#]],
        );
        check(
            "a: mark x if value 3",
            expect![[r#"
                bad predicate at column 20: expected a comparison (==, !=, <, <=, >, >=), found `3`
                  a: mark x if value 3
                                     ^"#]],
        );
        check(
            "a: mark x && b: mark y",
            expect![[r#"
                bad predicate at column 11: `&&` and `||` combine comparisons after `if`; between simple predicates use `&`, `|`, `->` or `==`
                  a: mark x && b: mark y
                            ^"#]],
        );
        check(
            "",
            expect![[r#"
                bad predicate at column 1: empty predicate
                  
                  ^"#]],
        );
        check(
            "a: mark x if value == \"open",
            expect![[r#"
                bad predicate at column 23: unterminated string
                  a: mark x if value == "open
                                        ^"#]],
        );
    }
}
