//! Reading a value as ppd prints it ([`show`](super::show)): what a user copies from a report
//! and pastes into `--what-if`. The printed form is Rust's: `Withdraw {client: 1, amount: 28}`,
//! `Deposit(20)`, `[1, 2]`, `"ann"`, `()`; JSON (`{"Withdraw": {"client": 1}}`, `null`) reads
//! too, since its objects, arrays, strings and numbers are the same there.
//!
//! Each form reads back as the MessagePack value [`show`](super::show) printed it from:
//! `Variant {..}`, `Variant(x)` and `Variant(x, y)` as serde's externally tagged enum (a map of
//! one entry), a bare `Variant` as the string serde writes for a unit variant, `{name: x}` as a
//! map with string keys.

use super::{Integer, Value};

/// Why a text is not a value, with the byte offset where reading stopped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("at byte {offset}: {detail}")]
pub struct ParseError {
    /// Where in the text.
    pub offset: usize,
    /// What was expected there.
    pub detail: String,
}

/// Nesting past which a value is refused rather than read: reading is recursive.
const MAX_DEPTH: usize = 128;

/// Reads `text` as a value in ppd's printed form or in JSON.
pub fn parse(text: &str) -> Result<Value, ParseError> {
    let mut reader = Reader { text, at: 0 };
    let value = reader.value(0)?;
    reader.skip_space();
    if reader.at < text.len() {
        return Err(reader.error("the end of the value"));
    }
    Ok(value)
}

struct Reader<'t> {
    text: &'t str,
    at: usize,
}

impl Reader<'_> {
    fn rest(&self) -> &str {
        &self.text[self.at..]
    }

    fn error(&self, expected: &str) -> ParseError {
        let found = match self.rest().chars().next() {
            Some(c) => format!("`{c}`"),
            None => "the end of the text".to_owned(),
        };
        ParseError {
            offset: self.at,
            detail: format!("expected {expected}, found {found}"),
        }
    }

    fn skip_space(&mut self) {
        let trimmed = self.rest().trim_start();
        self.at = self.text.len() - trimmed.len();
    }

    fn eat(&mut self, c: char) -> bool {
        self.skip_space();
        if self.rest().starts_with(c) {
            self.at += c.len_utf8();
            true
        } else {
            false
        }
    }

    fn expect(&mut self, c: char) -> Result<(), ParseError> {
        if self.eat(c) {
            Ok(())
        } else {
            Err(self.error(&format!("`{c}`")))
        }
    }

    fn value(&mut self, depth: usize) -> Result<Value, ParseError> {
        if depth > MAX_DEPTH {
            return Err(ParseError {
                offset: self.at,
                detail: format!("a value nested more than {MAX_DEPTH} deep"),
            });
        }
        self.skip_space();
        match self.rest().chars().next() {
            Some('"') => self.string().map(Value::from),
            Some('[') => {
                self.at += 1;
                self.items(']', depth).map(Value::Array)
            }
            Some('{') => {
                self.at += 1;
                self.entries(depth).map(Value::Map)
            }
            Some('(') => {
                self.at += 1;
                self.expect(')')?;
                Ok(Value::Nil)
            }
            Some(c) if c == '-' || c.is_ascii_digit() => self.number(),
            Some(c) if c.is_alphabetic() || c == '_' => self.word(depth),
            _ => Err(self.error("a value")),
        }
    }

    /// `true`, `false`, `null`, or an enum variant: bare, `V(..)` or `V {..}`.
    fn word(&mut self, depth: usize) -> Result<Value, ParseError> {
        let word = self.identifier();
        match word {
            "true" => return Ok(Value::Boolean(true)),
            "false" => return Ok(Value::Boolean(false)),
            "null" => return Ok(Value::Nil),
            _ => {}
        }
        let variant = Value::from(word);
        if self.eat('(') {
            let mut fields = self.items(')', depth)?;
            let data = if fields.len() == 1 {
                fields.remove(0)
            } else {
                Value::Array(fields)
            };
            return Ok(Value::Map(vec![(variant, data)]));
        }
        self.skip_space();
        if self.rest().starts_with('{') {
            self.at += 1;
            let data = Value::Map(self.entries(depth)?);
            return Ok(Value::Map(vec![(variant, data)]));
        }
        // A unit variant, which serde writes as its name.
        Ok(variant)
    }

    fn identifier(&mut self) -> &str {
        let start = self.at;
        let len = self
            .rest()
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(self.rest().len());
        self.at += len;
        &self.text[start..self.at]
    }

    /// Items up to `close`, the opening bracket already read.
    fn items(&mut self, close: char, depth: usize) -> Result<Vec<Value>, ParseError> {
        let mut items = Vec::new();
        if self.eat(close) {
            return Ok(items);
        }
        loop {
            items.push(self.value(depth + 1)?);
            if self.eat(close) {
                return Ok(items);
            }
            if !self.eat(',') {
                return Err(self.error(&format!("`,` or `{close}`")));
            }
            // A trailing comma, as Rust allows.
            if self.eat(close) {
                return Ok(items);
            }
        }
    }

    /// `key: value` entries up to `}`, the `{` already read. A key is a name (`balance`) or a
    /// value (`"balance"`, `3`).
    fn entries(&mut self, depth: usize) -> Result<Vec<(Value, Value)>, ParseError> {
        let mut entries = Vec::new();
        if self.eat('}') {
            return Ok(entries);
        }
        loop {
            self.skip_space();
            let key = match self.rest().chars().next() {
                Some(c) if c.is_alphabetic() || c == '_' => {
                    let name = self.identifier();
                    Value::from(name)
                }
                _ => self.value(depth + 1)?,
            };
            self.expect(':')?;
            let value = self.value(depth + 1)?;
            entries.push((key, value));
            if self.eat('}') {
                return Ok(entries);
            }
            if !self.eat(',') {
                return Err(self.error("`,` or `}`"));
            }
            if self.eat('}') {
                return Ok(entries);
            }
        }
    }

    fn number(&mut self) -> Result<Value, ParseError> {
        let start = self.at;
        let len = self
            .rest()
            .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '+' | '.' | '_')))
            .unwrap_or(self.rest().len());
        let token = &self.text[start..start + len];
        let digits = token.replace('_', "");
        let value = if let Ok(i) = digits.parse::<i64>() {
            Value::Integer(Integer::from(i))
        } else if let Ok(u) = digits.parse::<u64>() {
            Value::Integer(Integer::from(u))
        } else if let Ok(f) = digits.parse::<f64>()
            && digits.contains(['.', 'e', 'E'])
        {
            Value::F64(f)
        } else {
            return Err(ParseError {
                offset: start,
                detail: format!("`{token}` is not a number"),
            });
        };
        self.at += len;
        Ok(value)
    }

    /// A string as Rust's `{:?}` (or JSON) writes it, escapes included.
    fn string(&mut self) -> Result<String, ParseError> {
        let start = self.at;
        self.at += 1;
        let mut out = String::new();
        let mut chars = self.rest().char_indices();
        while let Some((i, c)) = chars.next() {
            match c {
                '"' => {
                    self.at += i + 1;
                    return Ok(out);
                }
                '\\' => {
                    let Some((j, escape)) = chars.next() else {
                        break;
                    };
                    let simple = match escape {
                        'n' => Some('\n'),
                        't' => Some('\t'),
                        'r' => Some('\r'),
                        '0' => Some('\0'),
                        '\\' | '"' | '\'' | '/' => Some(escape),
                        _ => None,
                    };
                    if let Some(c) = simple {
                        out.push(c);
                        continue;
                    }
                    let code = match escape {
                        // Rust's `\u{1F600}`.
                        'u' if self.rest()[j + 1..].starts_with('{') => {
                            let body = &self.rest()[j + 2..];
                            let end = body.find('}');
                            let hex = end.map(|e| &body[..e]);
                            let code = hex.and_then(|h| u32::from_str_radix(h, 16).ok());
                            if let (Some(code), Some(end)) = (code, end) {
                                // Past the braces.
                                for _ in 0..end + 2 {
                                    chars.next();
                                }
                                Some(code)
                            } else {
                                None
                            }
                        }
                        // JSON's `\u00e9`.
                        'u' => {
                            let hex = self.rest().get(j + 1..j + 5);
                            let code = hex.and_then(|h| u32::from_str_radix(h, 16).ok());
                            if code.is_some() {
                                for _ in 0..4 {
                                    chars.next();
                                }
                            }
                            code
                        }
                        _ => None,
                    };
                    match code.and_then(char::from_u32) {
                        Some(c) => out.push(c),
                        None => {
                            return Err(ParseError {
                                offset: self.at + i,
                                detail: format!("`\\{escape}` is not an escape of a string"),
                            });
                        }
                    }
                }
                c => out.push(c),
            }
        }
        Err(ParseError {
            offset: start,
            detail: "a string that is not closed by `\"`".into(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::{decode, encode, show};
    use serde::{Deserialize, Serialize};

    #[derive(Serialize, Deserialize, Debug, PartialEq)]
    enum Request {
        Withdraw { client: u32, amount: i64 },
        Deposit(i64),
        Pair(u8, String),
        Audit,
    }

    #[derive(Serialize, Deserialize, Debug, PartialEq)]
    struct Account {
        owner: String,
        balance: i64,
        tags: Vec<String>,
        limit: Option<f64>,
        request: Request,
        unit: (),
    }

    /// What ppd prints of `v` reads back as the value it printed.
    fn round_trip<T: Serialize>(v: &T) {
        let printed = show(&decode(&encode(v).unwrap()).unwrap());
        let read = parse(&printed).unwrap_or_else(|e| panic!("{printed}: {e}"));
        assert_eq!(show(&read), printed);
    }

    #[test]
    fn what_ppd_prints_reads_back_as_the_same_value() {
        for request in [
            Request::Withdraw {
                client: 1,
                amount: -28,
            },
            Request::Deposit(20),
            Request::Pair(3, "x\"y\n\u{1F600}".into()),
            Request::Audit,
        ] {
            round_trip(&request);
            round_trip(&Account {
                owner: "ann".into(),
                balance: i64::MIN,
                tags: vec!["a".into(), String::new()],
                limit: Some(2.5),
                request,
                unit: (),
            });
        }
        round_trip(&(u64::MAX, -1.0e-3, vec![vec![1u8, 2], vec![]]));
    }

    #[test]
    fn the_printed_form_and_json_give_the_value_the_program_decodes() {
        let decoded = |text: &str| -> Request {
            let mut bytes = Vec::new();
            rmpv::encode::write_value(&mut bytes, &parse(text).unwrap()).unwrap();
            crate::value::decode_as(&bytes).unwrap()
        };
        let want = Request::Withdraw {
            client: 1,
            amount: 28,
        };
        assert_eq!(decoded("Withdraw {client: 1, amount: 28}"), want);
        assert_eq!(decoded("Withdraw { client: 1, amount: 28, }"), want);
        assert_eq!(
            decoded(r#"{"Withdraw": {"client": 1, "amount": 28}}"#),
            want
        );
        assert_eq!(decoded("Deposit(20)"), Request::Deposit(20));
        assert_eq!(decoded("Pair(3, \"x\")"), Request::Pair(3, "x".into()));
        assert_eq!(decoded("Audit"), Request::Audit);
        assert_eq!(decoded("\"Audit\""), Request::Audit);
    }

    #[test]
    fn what_is_not_a_value_is_refused_where_reading_stopped() {
        for (text, offset, says) in [
            ("Withdraw {client 1}", 17, "expected `:`"),
            ("[1, 2", 5, "expected `,` or `]`"),
            ("\"open", 0, "not closed"),
            ("12x", 0, "`12x` is not a number"),
            ("1 2", 2, "the end of the value"),
            ("", 0, "expected a value"),
            ("\"\\q\"", 1, "`\\q` is not an escape"),
        ] {
            let e = parse(text).unwrap_err();
            assert_eq!(e.offset, offset, "{text}: {e}");
            assert!(e.detail.contains(says), "{text}: {e}");
        }
        let deep = "[".repeat(10_000);
        assert!(
            parse(&deep)
                .unwrap_err()
                .detail
                .contains("nested more than")
        );
    }
}
