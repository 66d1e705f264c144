//! User values in logs: MessagePack with named fields, readable without the program's types.
//!
//! Prelogs, postlogs, payloads and marks are encoded with serde into self-describing
//! MessagePack (struct fields by name), so the tools can print, compare and search values of a
//! program they were not compiled with. [`Value`] is the decoded form; [`show`] prints it the
//! way Rust code would write it.

use std::fmt::Write as _;

mod parse;

pub use parse::{ParseError, parse};
pub use rmpv::{Integer, Value};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// A value that could not be encoded or decoded.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ValueError(String);

/// Encodes a decoded [`Value`] back into MessagePack, the bytes a program decodes it from.
pub fn encode_value(value: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    // Writing into a Vec cannot fail.
    let _ = rmpv::encode::write_value(&mut out, value);
    out
}

/// Encodes `value` as self-describing MessagePack.
pub fn encode<T: Serialize + ?Sized>(value: &T) -> Result<Vec<u8>, ValueError> {
    rmp_serde::to_vec_named(value).map_err(|e| ValueError(e.to_string()))
}

/// Raw bytes (what a socket read) as a value: a string when they are UTF-8, so that traces and
/// answers show text as text; binary otherwise.
pub fn encode_raw(bytes: &[u8]) -> Vec<u8> {
    let value = match std::str::from_utf8(bytes) {
        Ok(text) => Value::from(text),
        Err(_) => Value::Binary(bytes.to_vec()),
    };
    let mut out = Vec::new();
    // Writing into a Vec cannot fail.
    let _ = rmpv::encode::write_value(&mut out, &value);
    out
}

/// Writes a map from names to values, entry by entry: how prelogs and postlogs are built
/// without collecting their heterogeneous values first.
#[derive(Debug)]
pub struct MapWriter {
    bytes: Vec<u8>,
}

thread_local! {
    /// A map's buffer given back once its bytes are logged ([`recycle`]): a prelog and a
    /// postlog are written at every e-block call, and growing a fresh buffer for each, a few
    /// reallocations and a free, was a good part of what they cost.
    static SPARE: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

/// The largest buffer kept for reuse: one large value must not keep its memory for good.
const SPARE_LIMIT: usize = 64 * 1024;

/// Gives the bytes of a map back once they are logged, for this thread's next map to write
/// into.
pub fn recycle(mut bytes: Vec<u8>) {
    if bytes.capacity() <= SPARE_LIMIT {
        bytes.clear();
        SPARE.set(bytes);
    }
}

impl MapWriter {
    /// A map that will have `len` entries.
    pub fn new(len: u32) -> MapWriter {
        let mut bytes = SPARE.take();
        bytes.clear();
        // Writing into a Vec cannot fail.
        let _ = rmp::encode::write_map_len(&mut bytes, len);
        MapWriter { bytes }
    }

    /// Adds `name: value`. A value that cannot be encoded is logged as a description of why.
    pub fn entry<T: Serialize + ?Sized>(&mut self, name: &str, value: &T) -> &mut MapWriter {
        let _ = rmp::encode::write_str(&mut self.bytes, name);
        if let Err(e) = rmp_serde::encode::write_named(&mut self.bytes, value) {
            let _ = rmp::encode::write_str(&mut self.bytes, &format!("<not encodable: {e}>"));
        }
        self
    }

    /// The encoded map.
    pub fn finish(self) -> Vec<u8> {
        self.bytes
    }
}

/// The entries of a map written by [`MapWriter`], each re-encoded on its own.
pub fn map_entries(bytes: &[u8]) -> Result<Vec<(String, Vec<u8>)>, ValueError> {
    match decode(bytes)? {
        Value::Map(entries) => entries
            .into_iter()
            .map(|(k, v)| {
                let key = k
                    .as_str()
                    .ok_or_else(|| ValueError("a map key is not a string".into()))?
                    .to_owned();
                let mut one = Vec::new();
                rmpv::encode::write_value(&mut one, &v).map_err(|e| ValueError(e.to_string()))?;
                Ok((key, one))
            })
            .collect(),
        other => Err(ValueError(format!(
            "expected a map, found {}",
            show(&other)
        ))),
    }
}

/// Decodes bytes written by [`encode`] back into the program's type.
pub fn decode_as<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ValueError> {
    rmp_serde::from_slice(bytes).map_err(|e| ValueError(e.to_string()))
}

/// Decodes bytes written by [`encode`] into a type-free [`Value`].
pub fn decode(bytes: &[u8]) -> Result<Value, ValueError> {
    let mut cursor = bytes;
    let value = rmpv::decode::read_value(&mut cursor).map_err(|e| ValueError(e.to_string()))?;
    if !cursor.is_empty() {
        return Err(ValueError(format!(
            "{} trailing bytes after the value",
            cursor.len()
        )));
    }
    Ok(value)
}

/// Prints a value as Rust would write it: `{balance: -50, owner: "ann"}`, `Deposit(20)`.
pub fn show(value: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, value);
    out
}

/// Decodes and prints, or says why the bytes are not a value.
pub fn show_bytes(bytes: &[u8]) -> String {
    match decode(bytes) {
        Ok(v) => show(&v),
        Err(e) => format!("<undecodable value: {e}>"),
    }
}

fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_alphabetic() || c == '_')
        && chars.all(|c| c.is_alphanumeric() || c == '_')
}

fn write_value(out: &mut String, value: &Value) {
    match value {
        Value::Nil => out.push_str("()"),
        Value::Boolean(b) => {
            let _ = write!(out, "{b}");
        }
        Value::Integer(i) => {
            let _ = write!(out, "{i}");
        }
        Value::F32(f) => {
            let _ = write!(out, "{f:?}");
        }
        Value::F64(f) => {
            let _ = write!(out, "{f:?}");
        }
        Value::String(s) => match s.as_str() {
            Some(s) => {
                let _ = write!(out, "{s:?}");
            }
            None => out.push_str("<invalid utf-8>"),
        },
        Value::Binary(b) => {
            let _ = write!(out, "{b:?}");
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_value(out, item);
            }
            out.push(']');
        }
        Value::Map(entries) => {
            // serde's externally tagged enum variant with data: a one-entry map `{Variant: data}`.
            if let [(Value::String(k), v)] = entries.as_slice()
                && let Some(k) = k.as_str()
                && k.starts_with(char::is_uppercase)
                && is_identifier(k)
            {
                out.push_str(k);
                match v {
                    Value::Map(_) => {
                        out.push(' ');
                        write_value(out, v);
                    }
                    Value::Array(items) => {
                        out.push('(');
                        for (i, item) in items.iter().enumerate() {
                            if i > 0 {
                                out.push_str(", ");
                            }
                            write_value(out, item);
                        }
                        out.push(')');
                    }
                    _ => {
                        out.push('(');
                        write_value(out, v);
                        out.push(')');
                    }
                }
                return;
            }
            out.push('{');
            for (i, (k, v)) in entries.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                match k {
                    Value::String(s) if s.as_str().is_some_and(is_identifier) => {
                        out.push_str(s.as_str().unwrap_or_default());
                    }
                    _ => write_value(out, k),
                }
                out.push_str(": ");
                write_value(out, v);
            }
            out.push('}');
        }
        Value::Ext(tag, bytes) => {
            let _ = write!(out, "<ext {tag}: {bytes:?}>");
        }
    }
}

/// Converts a value to JSON for machine-readable reports: maps with string keys become
/// objects, binary becomes an array of bytes, other keys are printed.
pub fn to_json(value: &Value) -> serde_json::Value {
    use serde_json::Value as J;
    match value {
        Value::Nil => J::Null,
        Value::Boolean(b) => J::Bool(*b),
        Value::Integer(i) => i
            .as_i64()
            .map(J::from)
            .or_else(|| i.as_u64().map(J::from))
            .unwrap_or(J::Null),
        Value::F32(x) => J::from(f64::from(*x)),
        Value::F64(x) => J::from(*x),
        Value::String(s) => J::String(s.as_str().unwrap_or("<invalid utf-8>").to_owned()),
        Value::Binary(b) => J::Array(b.iter().map(|x| J::from(*x)).collect()),
        Value::Array(items) => J::Array(items.iter().map(to_json).collect()),
        Value::Map(entries) => J::Object(
            entries
                .iter()
                .map(|(k, v)| {
                    let key = match k {
                        Value::String(s) => s.as_str().unwrap_or("?").to_owned(),
                        other => show(other),
                    };
                    (key, to_json(v))
                })
                .collect(),
        ),
        Value::Ext(tag, bytes) => J::String(format!("<ext {tag}: {bytes:?}>")),
    }
}

/// Looks up a dotted path (`account.balance`, `0.owner`) inside a value.
pub fn field<'v>(value: &'v Value, path: &str) -> Option<&'v Value> {
    let mut current = value;
    for part in path.split('.').filter(|p| !p.is_empty()) {
        current = match current {
            Value::Map(entries) => entries
                .iter()
                .find(|(k, _)| k.as_str() == Some(part))
                .map(|(_, v)| v)?,
            Value::Array(items) => items.get(part.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(current)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Serialize, Deserialize, Debug, PartialEq)]
    struct Account {
        owner: String,
        balance: i64,
    }

    #[derive(Serialize, Deserialize, Debug, PartialEq)]
    enum Request {
        Deposit(i64),
        Move { from: u32, to: u32 },
        Audit,
    }

    #[test]
    fn values_print_like_rust() {
        let a = Account {
            owner: "ann".into(),
            balance: -50,
        };
        let v = decode(&encode(&a).unwrap()).unwrap();
        assert_eq!(show(&v), r#"{owner: "ann", balance: -50}"#);
        assert_eq!(show(field(&v, "balance").unwrap()), "-50");
        let r = [
            Request::Deposit(20),
            Request::Move { from: 1, to: 2 },
            Request::Audit,
        ];
        let v = decode(&encode(&r).unwrap()).unwrap();
        assert_eq!(show(&v), r#"[Deposit(20), Move {from: 1, to: 2}, "Audit"]"#);
    }

    #[test]
    fn a_recycled_buffer_is_written_into_afresh_and_a_large_one_is_not_kept() {
        let one = |name: &str, v: &str| {
            let mut w = MapWriter::new(1);
            w.entry(name, v);
            w.finish()
        };
        let long = one("first", &"x".repeat(300));
        let capacity = long.capacity();
        recycle(long);
        let short = one("b", "y");
        assert_eq!(show(&decode(&short).unwrap()), r#"{b: "y"}"#);
        assert_eq!(
            short.capacity(),
            capacity,
            "the buffer given back is reused"
        );
        recycle(one("big", &"z".repeat(SPARE_LIMIT)));
        assert!(one("b", "y").capacity() < SPARE_LIMIT);
    }

    #[test]
    fn maps_are_written_entry_by_entry_and_read_back_by_name() {
        let mut w = MapWriter::new(2);
        w.entry(
            "bank",
            &Account {
                owner: "ann".into(),
                balance: 3,
            },
        )
        .entry("amount", &40i64);
        let bytes = w.finish();
        assert_eq!(
            show(&decode(&bytes).unwrap()),
            r#"{bank: {owner: "ann", balance: 3}, amount: 40}"#
        );
        let entries = map_entries(&bytes).unwrap();
        assert_eq!(entries[0].0, "bank");
        let back: Account = decode_as(&entries[0].1).unwrap();
        assert_eq!(back.balance, 3);
        assert!(map_entries(&encode(&7u8).unwrap()).is_err());
    }

    #[test]
    fn typed_round_trip_and_garbage() {
        let a = Account {
            owner: "bo".into(),
            balance: 7,
        };
        let back: Account = decode_as(&encode(&a).unwrap()).unwrap();
        assert_eq!(back, a);
        assert!(
            decode(&[0xcd, 0x01]).is_err(),
            "a truncated u16 is an error"
        );
        assert!(
            decode(&[0x01, 0x02]).is_err(),
            "trailing bytes are an error"
        );
        assert!(show_bytes(&[0xdd, 0xff]).starts_with("<undecodable"));
    }
}
