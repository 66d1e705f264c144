//! User values in logs: MessagePack with named fields, readable without the program's types.
//!
//! Prelogs, postlogs, payloads and marks are encoded with serde into self-describing
//! MessagePack (struct fields by name), so the tools can print, compare and search values of a
//! program they were not compiled with. [`Value`] is the decoded form; [`show`] prints it the
//! way Rust code would write it. A ppd object in a value (a channel end, a mutex, an atomic, a
//! socket passed to an e-block) is a [`Handle`], which [`show_with`] prints as the object it is
//! (`channel requests (receiver)`).

use std::fmt;
use std::fmt::Write as _;

mod parse;

use crate::ids::ObjectId;
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

/// The MessagePack extension type of a [`Handle`].
pub const HANDLE_EXT: i8 = 0x50;

/// A ppd object logged as a value: extension type [`HANDLE_EXT`], whose 9 bytes are the
/// object's id (big-endian, as its creator's log numbers it) and which end of it the value is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Handle {
    /// The object.
    pub object: ObjectId,
    /// Which end of it.
    pub end: End,
}

/// Which end of an object a handle is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum End {
    /// The object itself: a mutex, an atomic, a socket.
    Whole,
    /// A channel's sending end.
    Sender,
    /// A channel's receiving end.
    Receiver,
}

impl Handle {
    /// The bytes of its extension value.
    pub fn payload(self) -> [u8; 9] {
        let mut bytes = [0; 9];
        bytes[..8].copy_from_slice(&self.object.0.to_be_bytes());
        bytes[8] = match self.end {
            End::Whole => 0,
            End::Sender => 1,
            End::Receiver => 2,
        };
        bytes
    }

    /// The handle an extension value is, if it is one.
    pub fn from_ext(tag: i8, bytes: &[u8]) -> Option<Handle> {
        let (id, end) = match bytes {
            [id @ .., end] if tag == HANDLE_EXT && id.len() == 8 => (id, end),
            _ => return None,
        };
        let end = match end {
            0 => End::Whole,
            1 => End::Sender,
            2 => End::Receiver,
            _ => return None,
        };
        let id = u64::from_be_bytes(id.try_into().ok()?);
        Some(Handle {
            object: ObjectId(id),
            end,
        })
    }

    /// The handle `value` is, if it is one.
    pub fn of(value: &Value) -> Option<Handle> {
        match value {
            Value::Ext(tag, bytes) => Handle::from_ext(*tag, bytes),
            _ => None,
        }
    }

    /// The handle as reports write it, given the object's label (`channel requests`).
    pub fn described(self, object: &str) -> String {
        match self.end {
            End::Whole => object.to_owned(),
            End::Sender => format!("{object} (sender)"),
            End::Receiver => format!("{object} (receiver)"),
        }
    }
}

/// The name serde's MessagePack encoder gives an extension value.
const EXT_STRUCT: &str = "_ExtStruct";

/// A handle is written as its extension value (with any other serializer: the tag and bytes).
impl Serialize for Handle {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        struct Bytes([u8; 9]);
        impl Serialize for Bytes {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_bytes(&self.0)
            }
        }
        serializer.serialize_newtype_struct(EXT_STRUCT, &(HANDLE_EXT, Bytes(self.payload())))
    }
}

impl<'de> serde::Deserialize<'de> for Handle {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::Deserialize as _;
        use serde::de::{self, Visitor};

        struct Bytes(Vec<u8>);
        impl<'de> serde::Deserialize<'de> for Bytes {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct Raw;
                impl Visitor<'_> for Raw {
                    type Value = Bytes;
                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        f.write_str("the bytes of a ppd object")
                    }
                    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Bytes, E> {
                        Ok(Bytes(v.to_vec()))
                    }
                }
                d.deserialize_bytes(Raw)
            }
        }

        struct Ext;
        impl<'de> Visitor<'de> for Ext {
            type Value = Handle;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a ppd object (MessagePack extension type 0x50)")
            }
            fn visit_newtype_struct<D: serde::Deserializer<'de>>(
                self,
                d: D,
            ) -> Result<Handle, D::Error> {
                let (tag, Bytes(bytes)) = <(i8, Bytes)>::deserialize(d)?;
                Handle::from_ext(tag, &bytes)
                    .ok_or_else(|| de::Error::custom("an extension value that is no ppd object"))
            }
        }
        deserializer.deserialize_newtype_struct(EXT_STRUCT, Ext)
    }
}

/// `#0.3 (receiver)`: the object by its id, as its creator's log numbers it.
impl fmt::Display for Handle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.described(&self.object.to_string()))
    }
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

/// What a reader of the recording knows of the objects handles name, for [`show_with`] and
/// [`to_json_with`].
pub trait Objects {
    /// The id the recording gives the object that a value logged by one of its nodes calls
    /// `object` (the node's ids moved up).
    fn id(&self, object: ObjectId) -> ObjectId;
    /// What the object with the recording's id `object` is called: its kind and name
    /// (`channel requests`).
    fn label(&self, object: ObjectId) -> String;
}

/// Objects by the ids values give them: a value read without its recording.
struct ById;

impl Objects for ById {
    fn id(&self, object: ObjectId) -> ObjectId {
        object
    }

    fn label(&self, object: ObjectId) -> String {
        object.to_string()
    }
}

/// Prints a value as Rust would write it: `{balance: -50, owner: "ann"}`, `Deposit(20)`; a
/// handle by its object's id (`#0.3 (receiver)`).
pub fn show(value: &Value) -> String {
    show_with(value, &ById)
}

/// Prints a value as [`show`] does, a handle as `objects` calls its object (`channel requests
/// (receiver)`).
pub fn show_with(value: &Value, objects: &dyn Objects) -> String {
    let mut out = String::new();
    write_value(&mut out, value, objects);
    out
}

/// Decodes and prints, or says why the bytes are not a value.
pub fn show_bytes(bytes: &[u8]) -> String {
    show_bytes_with(bytes, &ById)
}

/// Decodes and prints as [`show_with`], or says why the bytes are not a value.
pub fn show_bytes_with(bytes: &[u8], objects: &dyn Objects) -> String {
    match decode(bytes) {
        Ok(v) => show_with(&v, objects),
        Err(e) => format!("<undecodable value: {e}>"),
    }
}

fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_alphabetic() || c == '_')
        && chars.all(|c| c.is_alphanumeric() || c == '_')
}

fn write_value(out: &mut String, value: &Value, objects: &dyn Objects) {
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
                write_value(out, item, objects);
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
                        write_value(out, v, objects);
                    }
                    Value::Array(items) => {
                        out.push('(');
                        for (i, item) in items.iter().enumerate() {
                            if i > 0 {
                                out.push_str(", ");
                            }
                            write_value(out, item, objects);
                        }
                        out.push(')');
                    }
                    _ => {
                        out.push('(');
                        write_value(out, v, objects);
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
                    _ => write_value(out, k, objects),
                }
                out.push_str(": ");
                write_value(out, v, objects);
            }
            out.push('}');
        }
        Value::Ext(tag, bytes) => match Handle::from_ext(*tag, bytes) {
            Some(handle) => {
                let label = objects.label(objects.id(handle.object));
                out.push_str(&handle.described(&label));
            }
            None => {
                let _ = write!(out, "<ext {tag}: {bytes:?}>");
            }
        },
    }
}

/// Converts a value to JSON for machine-readable reports: maps with string keys become
/// objects, binary becomes an array of bytes, other keys are printed, a handle is `{"object":
/// "#0.3 (receiver)", "id": "#0.3"}`.
pub fn to_json(value: &Value) -> serde_json::Value {
    to_json_with(value, &ById)
}

/// Converts a value to JSON as [`to_json`] does, a handle as `objects` calls its object
/// (`{"object": "channel requests (receiver)", "id": "#0.3"}`).
pub fn to_json_with(value: &Value, objects: &dyn Objects) -> serde_json::Value {
    use serde_json::Value as J;
    let to_json = |v: &Value| to_json_with(v, objects);
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
        Value::Array(items) => J::Array(items.iter().map(&to_json).collect()),
        Value::Map(entries) => J::Object(
            entries
                .iter()
                .map(|(k, v)| {
                    let key = match k {
                        Value::String(s) => s.as_str().unwrap_or("?").to_owned(),
                        other => show_with(other, objects),
                    };
                    (key, to_json(v))
                })
                .collect(),
        ),
        Value::Ext(tag, bytes) => match Handle::from_ext(*tag, bytes) {
            Some(handle) => {
                let id = objects.id(handle.object);
                serde_json::json!({
                    "object": handle.described(&objects.label(id)),
                    "id": id.to_string(),
                })
            }
            None => J::String(format!("<ext {tag}: {bytes:?}>")),
        },
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
    fn a_handle_is_an_extension_value_shown_as_the_object_it_is() {
        let receiver = Handle {
            object: ObjectId::new(crate::ProcessId(1), 3),
            end: End::Receiver,
        };
        let mutex = Handle {
            object: ObjectId(0),
            end: End::Whole,
        };
        let mut w = MapWriter::new(3);
        w.entry("rx", &receiver)
            .entry("lock", &mutex)
            .entry("n", &4u64);
        let v = decode(&w.finish()).unwrap();
        assert_eq!(Handle::of(field(&v, "rx").unwrap()), Some(receiver));
        assert_eq!(
            Handle::of(field(&v, "n").unwrap()),
            None,
            "a number is none"
        );
        assert_eq!(show(&v), "{rx: #1.3 (receiver), lock: #0.0, n: 4}");
        // A reader of a recording in which the value's node is node 2.
        struct Node2;
        impl Objects for Node2 {
            fn id(&self, object: ObjectId) -> ObjectId {
                object.rebased(crate::ProcessId::on_node(2, 0).0)
            }
            fn label(&self, object: ObjectId) -> String {
                match object.ordinal() {
                    3 => "channel requests".to_owned(),
                    _ => format!("mutex {object}"),
                }
            }
        }
        assert_eq!(
            show_with(&v, &Node2),
            "{rx: channel requests (receiver), lock: mutex #2.0.0, n: 4}"
        );
        assert_eq!(
            to_json_with(&v, &Node2)["rx"],
            serde_json::json!({"object": "channel requests (receiver)", "id": "#2.1.3"})
        );
        let back: Handle = decode_as(&encode(&receiver).unwrap()).unwrap();
        assert_eq!(back, receiver);
        assert!(decode_as::<Handle>(&encode(&7u64).unwrap()).is_err());
        assert_eq!(Handle::from_ext(HANDLE_EXT, &[0; 8]), None, "too short");
        assert_eq!(
            Handle::from_ext(HANDLE_EXT, &[0, 0, 0, 0, 0, 0, 0, 0, 9]),
            None
        );
        assert_eq!(
            Handle::from_ext(1, &receiver.payload()),
            None,
            "another type"
        );
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
