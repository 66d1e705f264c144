//! The shapes of logged values: which paths (`value.balance`, `%2.0`) some logged value has,
//! and what kinds of value are there, so that a condition naming a path no value has is refused
//! before replay instead of never holding.
//!
//! A shape merges every value logged at one place (the marks of one label in one process, the
//! prelogs of one e-block, ...). It may claim more than the values have (a field seen in one
//! item of an array is taken to be in all its items; past a depth or a number of fields, any
//! path is taken to exist), never less: a path it lacks is in no logged value.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// How deep a shape follows nested values; below, any path is taken to exist.
const DEPTH: usize = 16;
/// How many distinct fields one map shape keeps; past that, any field is taken to exist.
const FIELDS: usize = 256;

/// The kinds of value seen at one place, as a set.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Kinds(u16);

impl Kinds {
    /// MessagePack nil (a unit, a `None`).
    pub const NIL: Kinds = Kinds(1);
    /// A boolean.
    pub const BOOL: Kinds = Kinds(1 << 1);
    /// An integer.
    pub const INTEGER: Kinds = Kinds(1 << 2);
    /// A floating-point number.
    pub const FLOAT: Kinds = Kinds(1 << 3);
    /// A string.
    pub const STRING: Kinds = Kinds(1 << 4);
    /// Bytes.
    pub const BINARY: Kinds = Kinds(1 << 5);
    /// An array (a sequence or a tuple).
    pub const ARRAY: Kinds = Kinds(1 << 6);
    /// A map (a struct or a map).
    pub const MAP: Kinds = Kinds(1 << 7);
    /// An extension value (a ppd object's handle).
    pub const EXTENSION: Kinds = Kinds(1 << 8);
    /// Nothing is known: anything may be there.
    pub const ANY: Kinds = Kinds(u16::MAX);

    const NAMES: [(Kinds, &'static str, &'static str); 9] = [
        (Kinds::NIL, "nil", "nil"),
        (Kinds::BOOL, "a boolean", "booleans"),
        (Kinds::INTEGER, "an integer", "integers"),
        (Kinds::FLOAT, "a float", "floats"),
        (Kinds::STRING, "a string", "strings"),
        (Kinds::BINARY, "bytes", "bytes"),
        (Kinds::ARRAY, "an array", "arrays"),
        (Kinds::MAP, "a map", "maps"),
        (Kinds::EXTENSION, "an extension value", "extension values"),
    ];

    fn has(self, other: Kinds) -> bool {
        self.0 & other.0 != 0
    }

    fn union(self, other: Kinds) -> Kinds {
        Kinds(self.0 | other.0)
    }

    /// Whether nothing was seen.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Whether a value of these kinds can compare with one of `other` so that `eq` (`==`) or an
    /// ordering holds, as conditions compare: numbers with numbers, strings with strings,
    /// booleans with booleans, and, for `==`, any two values of one kind.
    pub fn compare_with(self, other: Kinds, eq: bool) -> bool {
        let numbers = Kinds::INTEGER.union(Kinds::FLOAT);
        let ordered = [numbers, Kinds::STRING, Kinds::BOOL];
        ordered.iter().any(|&k| self.has(k) && other.has(k)) || (eq && self.has(other))
    }

    /// The kinds in words: "an integer", "integers or strings".
    pub fn describe(self, plural: bool) -> String {
        let names: Vec<&str> = Kinds::NAMES
            .iter()
            .filter(|(k, ..)| self.has(*k))
            .map(|&(_, one, many)| if plural { many } else { one })
            .collect();
        match names.as_slice() {
            [] => "nothing".into(),
            [one] => (*one).into(),
            [init @ .., last] => format!("{} or {last}", init.join(", ")),
        }
    }
}

/// What the values logged at one place looked like, merged.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Shape {
    /// The kinds seen here.
    kinds: Kinds,
    /// The fields of the maps seen here (by their string keys), each merged.
    fields: BTreeMap<String, Shape>,
    /// The items of the arrays seen here, merged.
    items: Option<Box<Shape>>,
    /// The longest of those arrays.
    longest: usize,
    /// Nested deeper or with more fields than a shape keeps: any path below exists.
    open: bool,
}

/// Where a path leaves every logged value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Miss {
    /// The first segment no value has.
    pub segment: usize,
    /// What the values have instead, in words: "an integer", "fields `a`, `b`".
    pub found: String,
    /// The fields there, for suggestions.
    pub fields: Vec<String>,
}

impl Shape {
    /// The shape of no value at all.
    pub fn none() -> &'static Shape {
        static NONE: Shape = Shape {
            kinds: Kinds(0),
            fields: BTreeMap::new(),
            items: None,
            longest: 0,
            open: false,
        };
        &NONE
    }

    /// The shape of values that were not read: anything may be there.
    pub fn unknown() -> &'static Shape {
        static UNKNOWN: Shape = Shape {
            kinds: Kinds::ANY,
            fields: BTreeMap::new(),
            items: None,
            longest: 0,
            open: true,
        };
        &UNKNOWN
    }

    /// Merges one more logged value into the shape, read straight from its MessagePack bytes:
    /// a catalog reads every value a recording logged, and decoding each into a tree first
    /// took most of its time. Bytes that do not decode add what precedes the damage (such a
    /// value never satisfies a condition, so what its shape claims cannot matter).
    pub fn add(&mut self, bytes: &[u8]) {
        let _ = self.read(&mut Bytes(bytes), 0);
    }

    fn read(&mut self, bytes: &mut Bytes<'_>, depth: usize) -> Option<()> {
        let head = bytes.head()?;
        self.kinds = self.kinds.union(head.kinds());
        let (entries, items) = match head {
            Head::Map(n) => (n, 0),
            Head::Array(n) => (0, n),
            Head::Scalar(_) | Head::Str(_) => return Some(()),
        };
        if !self.open && depth == DEPTH {
            self.open();
        }
        if self.open {
            return bytes.skip(2 * entries + items);
        }
        for entry in 0..entries {
            let key = match bytes.head()? {
                Head::Str(key) => std::str::from_utf8(key).ok(),
                other => {
                    bytes.skip(other.children())?;
                    None
                }
            };
            // Conditions name only fields with string keys.
            let Some(key) = key else {
                bytes.skip(1)?;
                continue;
            };
            if let Some(field) = self.fields.get_mut(key) {
                field.read(bytes, depth + 1)?;
            } else if self.fields.len() == FIELDS {
                self.open();
                return bytes.skip(2 * (entries - entry) - 1);
            } else {
                let mut field = Shape::default();
                field.read(bytes, depth + 1)?;
                self.fields.insert(key.to_owned(), field);
            }
        }
        if let Head::Array(n) = head {
            self.longest = self.longest.max(usize::try_from(n).unwrap_or(usize::MAX));
            let shape = self.items.get_or_insert_with(Box::default);
            for _ in 0..items {
                shape.read(bytes, depth + 1)?;
            }
        }
        Some(())
    }

    fn open(&mut self) {
        self.open = true;
        self.fields.clear();
        self.items = None;
    }

    /// The shape of both `self`'s values and `other`'s.
    pub fn merge(&mut self, other: &Shape) {
        self.kinds = self.kinds.union(other.kinds);
        if self.open {
            return;
        }
        if other.open {
            self.open();
            return;
        }
        for (key, shape) in &other.fields {
            if let Some(mine) = self.fields.get_mut(key) {
                mine.merge(shape);
            } else if self.fields.len() == FIELDS {
                self.open();
                return;
            } else {
                self.fields.insert(key.clone(), shape.clone());
            }
        }
        if let Some(items) = &other.items {
            self.items.get_or_insert_with(Box::default).merge(items);
        }
        self.longest = self.longest.max(other.longest);
    }

    /// Whether no value was logged here.
    pub fn is_empty(&self) -> bool {
        self.kinds.is_empty()
    }

    /// The shape of field `name` of the maps here, if one may have it.
    pub fn field(&self, name: &str) -> Option<&Shape> {
        if self.open {
            return Some(Shape::unknown());
        }
        self.fields.get(name)
    }

    /// The kinds some logged value has at `path` below this shape (map fields and array
    /// indices, as conditions read them), or where the path leaves every value.
    pub fn follow(&self, path: &[String]) -> Result<Kinds, Miss> {
        let mut here: Vec<&Shape> = vec![self];
        for (segment, name) in path.iter().enumerate() {
            if here.iter().any(|s| s.open) {
                return Ok(Kinds::ANY);
            }
            let index = name.parse::<usize>().ok();
            let mut next: Vec<&Shape> = Vec::new();
            for s in &here {
                next.extend(s.fields.get(name));
                if let (Some(items), Some(i)) = (&s.items, index)
                    && i < s.longest
                {
                    next.push(items);
                }
            }
            if next.is_empty() {
                return Err(Miss {
                    segment,
                    found: describe(&here),
                    fields: here.iter().flat_map(|s| s.fields.keys().cloned()).collect(),
                });
            }
            here = next;
        }
        if here.iter().any(|s| s.open) {
            return Ok(Kinds::ANY);
        }
        Ok(here.iter().fold(Kinds::default(), |k, s| k.union(s.kinds)))
    }
}

/// What a MessagePack item starts with.
#[derive(Debug, Clone, Copy)]
enum Head<'a> {
    /// A scalar (its bytes skipped) of these kinds.
    Scalar(Kinds),
    /// A string's bytes.
    Str(&'a [u8]),
    /// An array of this many items.
    Array(u64),
    /// A map of this many entries.
    Map(u64),
}

impl Head<'_> {
    fn kinds(self) -> Kinds {
        match self {
            Head::Scalar(k) => k,
            Head::Str(_) => Kinds::STRING,
            Head::Array(_) => Kinds::ARRAY,
            Head::Map(_) => Kinds::MAP,
        }
    }

    /// How many items follow it as its contents.
    fn children(self) -> u64 {
        match self {
            Head::Scalar(_) | Head::Str(_) => 0,
            Head::Array(n) => n,
            Head::Map(n) => 2 * n,
        }
    }
}

/// MessagePack bytes being read; every read is bounds-checked (`None` past the end).
struct Bytes<'a>(&'a [u8]);

impl<'a> Bytes<'a> {
    fn take(&mut self, n: u64) -> Option<&'a [u8]> {
        let n = usize::try_from(n).ok()?;
        let (taken, rest) = self.0.split_at_checked(n)?;
        self.0 = rest;
        Some(taken)
    }

    /// A big-endian unsigned number of `width` bytes.
    fn number(&mut self, width: u64) -> Option<u64> {
        Some(
            self.take(width)?
                .iter()
                .fold(0, |n, &b| (n << 8) | u64::from(b)),
        )
    }

    /// The next item's head; a scalar's bytes (and an extension's) are skipped.
    fn head(&mut self) -> Option<Head<'a>> {
        let marker = *self.take(1)?.first()?;
        let skip = |bytes: &mut Self, n: u64, kinds: Kinds| {
            bytes.take(n)?;
            Some(Head::Scalar(kinds))
        };
        match marker {
            0x00..=0x7f | 0xe0..=0xff => Some(Head::Scalar(Kinds::INTEGER)),
            0x80..=0x8f => Some(Head::Map(u64::from(marker & 0x0f))),
            0x90..=0x9f => Some(Head::Array(u64::from(marker & 0x0f))),
            0xa0..=0xbf => Some(Head::Str(self.take(u64::from(marker & 0x1f))?)),
            0xc0 => Some(Head::Scalar(Kinds::NIL)),
            0xc2 | 0xc3 => Some(Head::Scalar(Kinds::BOOL)),
            0xc4..=0xc6 => {
                let n = self.number(1 << (marker - 0xc4))?;
                skip(self, n, Kinds::BINARY)
            }
            0xc7..=0xc9 => {
                let n = self.number(1 << (marker - 0xc7))?;
                skip(self, n + 1, Kinds::EXTENSION)
            }
            0xca => skip(self, 4, Kinds::FLOAT),
            0xcb => skip(self, 8, Kinds::FLOAT),
            0xcc..=0xcf => skip(self, 1 << (marker - 0xcc), Kinds::INTEGER),
            0xd0..=0xd3 => skip(self, 1 << (marker - 0xd0), Kinds::INTEGER),
            0xd4..=0xd8 => skip(self, 1 + (1 << (marker - 0xd4)), Kinds::EXTENSION),
            0xd9..=0xdb => {
                let n = self.number(1 << (marker - 0xd9))?;
                Some(Head::Str(self.take(n)?))
            }
            0xdc | 0xdd => Some(Head::Array(self.number(2 << (marker - 0xdc))?)),
            0xde | 0xdf => Some(Head::Map(self.number(2 << (marker - 0xde))?)),
            0xc1 => None,
        }
    }

    /// Skips `items` whole items, without recursion however deeply they nest.
    fn skip(&mut self, items: u64) -> Option<()> {
        let mut pending = items;
        while pending > 0 {
            pending = (pending - 1).saturating_add(self.head()?.children());
        }
        Some(())
    }
}

/// What the values of `shapes` are, in words, for a path that goes past them.
fn describe(shapes: &[&Shape]) -> String {
    let kinds = shapes
        .iter()
        .fold(Kinds::default(), |k, s| k.union(s.kinds));
    let mut parts = Vec::new();
    let fields: Vec<String> = shapes
        .iter()
        .flat_map(|s| s.fields.keys().map(|k| format!("`{k}`")))
        .collect();
    if !fields.is_empty() {
        let shown = fields.len().min(8);
        let more = match fields.len() - shown {
            0 => String::new(),
            n => format!(" and {n} more"),
        };
        parts.push(format!(
            "maps with the fields {}{more}",
            fields[..shown].join(", ")
        ));
    }
    if let Some(longest) = shapes
        .iter()
        .filter(|s| s.items.is_some())
        .map(|s| s.longest)
        .max()
    {
        parts.push(match longest {
            0 => "empty arrays".to_owned(),
            1 => "arrays of one item (index 0)".to_owned(),
            n => format!("arrays of at most {n} items (indices 0 to {})", n - 1),
        });
    }
    let plain = Kinds(kinds.0 & !(Kinds::MAP.0 | Kinds::ARRAY.0));
    if !plain.is_empty() {
        parts.push(plain.describe(true));
    }
    if kinds.has(Kinds::MAP) && fields.is_empty() {
        parts.push("empty maps".into());
    }
    parts.join(" or ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use ppd_formats::value;

    fn shape_of(values: &[serde_json::Value]) -> Shape {
        let mut shape = Shape::default();
        for v in values {
            shape.add(&value::encode(v).unwrap());
        }
        shape
    }

    fn path_of(p: &str) -> Vec<String> {
        p.split('.').map(str::to_owned).collect()
    }

    #[test]
    fn a_path_some_value_has_is_found_with_its_kinds() {
        let shape = shape_of(&[
            serde_json::json!({"Withdraw": {"amount": 5}}),
            serde_json::json!({"Deposit": {"amount": 2.5}}),
            serde_json::json!("Audit"),
        ]);
        assert_eq!(
            shape.follow(&path_of("Withdraw.amount")),
            Ok(Kinds::INTEGER)
        );
        assert_eq!(shape.follow(&path_of("Deposit.amount")), Ok(Kinds::FLOAT));
        assert_eq!(
            shape.follow(&[]),
            Ok(Kinds::MAP.union(Kinds::STRING)),
            "the values themselves: maps in some, a string in one"
        );
    }

    #[test]
    fn a_path_no_value_has_says_where_it_leaves_them() {
        let shape = shape_of(&[serde_json::json!(-20), serde_json::json!(-5)]);
        let miss = shape.follow(&path_of("0.1.2.3")).unwrap_err();
        assert_eq!(miss.segment, 0);
        assert_eq!(miss.found, "integers");
        let shape = shape_of(&[serde_json::json!({"accounts": [{"balance": 1}, {"balance": 2}]})]);
        assert_eq!(
            shape.follow(&path_of("accounts.1.balance")),
            Ok(Kinds::INTEGER)
        );
        let miss = shape.follow(&path_of("accounts.2.balance")).unwrap_err();
        assert_eq!(
            (miss.segment, miss.found.as_str()),
            (1, "arrays of at most 2 items (indices 0 to 1)")
        );
        let miss = shape.follow(&path_of("acounts")).unwrap_err();
        assert_eq!(miss.fields, vec!["accounts".to_owned()]);
    }

    #[test]
    fn values_too_deep_or_too_wide_to_keep_accept_any_path() {
        let mut deep = serde_json::json!(1);
        for _ in 0..40 {
            deep = serde_json::json!({ "next": deep });
        }
        let shape = shape_of(&[deep]);
        let long: Vec<String> = std::iter::repeat_n("next".to_owned(), 30)
            .chain(["anything".to_owned()])
            .collect();
        assert_eq!(shape.follow(&long), Ok(Kinds::ANY));
        let wide: serde_json::Map<String, serde_json::Value> = (0..FIELDS + 1)
            .map(|i| (format!("k{i}"), serde_json::json!(i)))
            .collect();
        let shape = shape_of(&[serde_json::Value::Object(wide)]);
        assert_eq!(shape.follow(&path_of("other")), Ok(Kinds::ANY));
    }

    #[test]
    fn every_kind_of_value_is_read_from_its_bytes() {
        let long: String = "x".repeat(300);
        let many: Vec<u32> = (0..70_000).collect();
        let wide: serde_json::Map<String, serde_json::Value> = (0..20)
            .map(|i| {
                (
                    format!("k{i}"),
                    serde_json::json!(-(i as i64) * 1_000_000_000_000),
                )
            })
            .collect();
        let shape = shape_of(&[serde_json::json!({
            "nil": null, "yes": true, "small": 3, "big": u64::MAX, "negative": -40000,
            "float": 2.5, "text": "short", "long": long, "many": many,
            "wide": serde_json::Value::Object(wide),
        })]);
        for (path, kinds) in [
            ("nil", Kinds::NIL),
            ("yes", Kinds::BOOL),
            ("small", Kinds::INTEGER),
            ("big", Kinds::INTEGER),
            ("negative", Kinds::INTEGER),
            ("float", Kinds::FLOAT),
            ("text", Kinds::STRING),
            ("long", Kinds::STRING),
            ("many.69999", Kinds::INTEGER),
            ("wide.k19", Kinds::INTEGER),
        ] {
            assert_eq!(shape.follow(&path_of(path)), Ok(kinds), "{path}");
        }
        assert!(shape.follow(&path_of("many.70000")).is_err());
        let mut raw = Shape::default();
        raw.add(&value::encode_raw(&[0xff, 0xfe]));
        raw.add(&[0xd4, 1, 0]);
        assert_eq!(raw.follow(&[]), Ok(Kinds::BINARY.union(Kinds::EXTENSION)));
    }

    #[test]
    fn damaged_bytes_are_read_up_to_the_damage() {
        let bytes = value::encode(&serde_json::json!({"a": [1, {"b": "c"}], "d": 2.5})).unwrap();
        for end in 0..bytes.len() {
            let mut shape = Shape::default();
            shape.add(&bytes[..end]);
            assert!(
                shape.follow(&path_of("d")).is_err(),
                "cut at {end}: `d` is last"
            );
        }
        let mut shape = Shape::default();
        shape.add(&[0xc1, 0x01]);
        assert!(shape.is_empty(), "0xc1 is no value");
        shape.add(&[0xdf, 0xff, 0xff, 0xff, 0xff]);
        assert_eq!(
            shape.follow(&[]),
            Ok(Kinds::MAP),
            "a map that claims more than it has"
        );
    }

    #[test]
    fn kinds_compare_as_conditions_do() {
        assert!(Kinds::INTEGER.compare_with(Kinds::FLOAT, false));
        assert!(!Kinds::STRING.compare_with(Kinds::INTEGER, false));
        assert!(!Kinds::STRING.compare_with(Kinds::INTEGER, true));
        assert!(Kinds::MAP.compare_with(Kinds::MAP, true));
        assert!(!Kinds::MAP.compare_with(Kinds::MAP, false));
        assert!(Kinds::ANY.compare_with(Kinds::BOOL, false));
        assert_eq!(
            Kinds::INTEGER.union(Kinds::STRING).describe(false),
            "an integer or a string"
        );
    }
}
