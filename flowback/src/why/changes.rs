//! Which top-level e-block instance last changed a place: the part of the why index that lets
//! a query go from a parameter's value on entry to the instance that left it (state
//! restoration, Miller & Choi §5.7) without reading the logs of the instances in between.
//!
//! Per parameter name that top-level instances log on exit (a `&mut` argument), the index
//! keeps the instances that logged it (*holders*, in order) and, per changed place, the
//! holders at which it changed: inside the instance (its postlog differs from its prelog
//! there) or after it (the next holder's prelog differs from its postlog there: code outside
//! e-blocks changed it). Places are found by comparing the two MessagePack values part by part
//! (`bank.accounts[1].balance`); a part that cannot be named (a map key that is not a name, an
//! array whose length changed, too many changed parts) is recorded as its container, so a
//! place that could have changed is never missed. The paper walks back over the instances;
//! this is ppd's, so that a query's cost follows the steps it shows, not the run's length.

use std::collections::{BTreeMap, HashMap};

use rmpv::ValueRef;

use super::place::{Index, Place, Projection};

/// More changed parts than this in one comparison are recorded as the whole parameter.
const PARTS_LIMIT: usize = 64;

/// The entries of a logged map (a prelog or a postlog) as `(name, encoded value)`, the first
/// of each name only; `None` when the bytes are not a map of named values, as the query's
/// decoding would also find.
fn entries(bytes: &[u8]) -> Option<Vec<(&str, &[u8])>> {
    let mut rd = bytes;
    let len = rmp::decode::read_map_len(&mut rd).ok()?;
    let mut out: Vec<(&str, &[u8])> = Vec::new();
    for _ in 0..len {
        let key = rmpv::decode::read_value_ref(&mut rd).ok()?;
        let name = text(&key)?;
        let start = bytes.len() - rd.len();
        rmpv::decode::read_value_ref(&mut rd).ok()?;
        let value = &bytes[start..bytes.len() - rd.len()];
        if !out.iter().any(|(n, _)| *n == name) {
            out.push((name, value));
        }
    }
    rd.is_empty().then_some(out)
}

/// A string value's text (a valid UTF-8 string only, as the query's decoding reads keys).
fn text<'a>(value: &ValueRef<'a>) -> Option<&'a str> {
    match value {
        ValueRef::String(s) => s.into_str(),
        _ => None,
    }
}

fn decode(bytes: &[u8]) -> Option<ValueRef<'_>> {
    rmpv::decode::read_value_ref(&mut &bytes[..]).ok()
}

/// The step that selects a map entry by its key, when a place can name it.
fn key_step(key: &ValueRef<'_>) -> Option<Projection> {
    if let Some(n) = key.as_u64() {
        return Some(Projection::Index(Index::At(n)));
    }
    let key = text(key)?;
    if let Ok(n) = key.parse::<u64>() {
        return Some(Projection::Index(Index::At(n)));
    }
    let name = !key.is_empty() && key.chars().all(|c| c.is_alphanumeric() || c == '_');
    name.then(|| Projection::Field(key.to_owned()))
}

/// The steps of a map's entries, or `None` when one cannot be named or two name the same.
fn keyed<'v, 'a>(
    entries: &'v [(ValueRef<'a>, ValueRef<'a>)],
) -> Option<Vec<(Projection, &'v ValueRef<'a>)>> {
    let mut out: Vec<(Projection, &ValueRef<'a>)> = Vec::with_capacity(entries.len());
    for (k, v) in entries {
        let step = key_step(k)?;
        if out.iter().any(|(s, _)| *s == step) {
            return None;
        }
        out.push((step, v));
    }
    Some(out)
}

/// Adds to `out` the places under `at` where `a` and `b` differ.
fn diff(a: &ValueRef<'_>, b: &ValueRef<'_>, at: &mut Place, out: &mut Vec<Place>) {
    if a == b {
        return;
    }
    match (a, b) {
        (ValueRef::Map(x), ValueRef::Map(y)) => {
            let (Some(x), Some(y)) = (keyed(x), keyed(y)) else {
                out.push(at.clone());
                return;
            };
            for (step, xv) in &x {
                at.steps.push(step.clone());
                match y.iter().find(|(s, _)| s == step) {
                    Some((_, yv)) => diff(xv, yv, at, out),
                    None => out.push(at.clone()),
                }
                at.steps.pop();
            }
            for (step, _) in y.iter().filter(|(s, _)| !x.iter().any(|(t, _)| t == s)) {
                at.steps.push(step.clone());
                out.push(at.clone());
                at.steps.pop();
            }
        }
        (ValueRef::Array(x), ValueRef::Array(y)) if x.len() == y.len() => {
            for (i, (xv, yv)) in x.iter().zip(y).enumerate() {
                at.steps.push(Projection::Index(Index::At(i as u64)));
                diff(xv, yv, at, out);
                at.steps.pop();
            }
        }
        _ => out.push(at.clone()),
    }
}

/// The places of parameter `name` where two encoded values differ; the whole parameter when
/// either is missing or does not decode, or when too many parts changed.
fn changed_places(name: &str, before: Option<&[u8]>, after: Option<&[u8]>) -> Vec<String> {
    let whole = || vec![name.to_owned()];
    let (Some(before), Some(after)) = (before, after) else {
        return whole();
    };
    if before == after {
        return Vec::new();
    }
    let (Some(a), Some(b)) = (decode(before), decode(after)) else {
        return whole();
    };
    let mut out = Vec::new();
    diff(&a, &b, &mut Place::variable(name), &mut out);
    if out.len() > PARTS_LIMIT {
        return whole();
    }
    out.iter().map(Place::to_string).collect()
}

/// One parameter's history while the index is built.
#[derive(Debug, Default)]
struct Building {
    holders: Vec<u32>,
    last_after: Option<Vec<u8>>,
    changes: BTreeMap<String, Vec<u32>>,
}

impl Building {
    fn changed(&mut self, places: Vec<String>, at: u32) {
        for place in places {
            let list = self.changes.entry(place).or_default();
            if list.last() != Some(&at) {
                list.push(at);
            }
        }
    }
}

/// The change history of one process's parameters, collected while its log is scanned.
#[derive(Debug, Default)]
pub(super) struct ChangeLog {
    params: Vec<(String, Building)>,
    by_name: HashMap<String, usize>,
}

impl ChangeLog {
    /// Top-level instance `instance` exited: `prelog` and `postlog` are its logged maps.
    pub(super) fn exited(&mut self, instance: u32, prelog: &[u8], postlog: &[u8]) {
        let Some(after) = entries(postlog) else {
            return;
        };
        let before = entries(prelog).unwrap_or_default();
        for (name, value) in after {
            if name == "%0" {
                continue;
            }
            let p = match self.by_name.get(name) {
                Some(&p) => p,
                None => {
                    self.params.push((name.to_owned(), Building::default()));
                    self.by_name.insert(name.to_owned(), self.params.len() - 1);
                    self.params.len() - 1
                }
            };
            let history = &mut self.params[p].1;
            let on_entry = before.iter().find(|(n, _)| *n == name).map(|(_, v)| *v);
            if let Some(last) = history.last_after.take() {
                let previous = history.holders.len() as u32 - 1;
                let outside = changed_places(name, Some(&last), on_entry);
                history.changed(outside, previous);
            }
            history.holders.push(instance);
            let here = history.holders.len() as u32 - 1;
            history.changed(changed_places(name, on_entry, Some(value)), here);
            history.last_after = Some(value.to_vec());
        }
    }

    /// The section of the index file (layout in `index.rs`).
    pub(super) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        let text = |out: &mut Vec<u8>, s: &str| {
            out.extend_from_slice(&(s.len() as u32).to_le_bytes());
            out.extend_from_slice(s.as_bytes());
        };
        out.extend_from_slice(&(self.params.len() as u32).to_le_bytes());
        for (name, h) in &self.params {
            text(&mut out, name);
            out.extend_from_slice(&(h.holders.len() as u32).to_le_bytes());
            out.extend_from_slice(&(h.changes.len() as u32).to_le_bytes());
            for (place, at) in &h.changes {
                text(&mut out, place);
                out.extend_from_slice(&(at.len() as u32).to_le_bytes());
            }
        }
        for (_, h) in &self.params {
            for x in h.holders.iter().chain(h.changes.values().flatten()) {
                out.extend_from_slice(&x.to_le_bytes());
            }
        }
        let crc = crc32c::crc32c(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }
}

/// A list of u32 in the index file: where it starts and how long it is.
#[derive(Debug, Clone, Copy)]
pub(super) struct List {
    at: usize,
    len: usize,
}

/// One parameter's history, as read from the index file.
#[derive(Debug)]
pub(super) struct History {
    holders: List,
    changes: Vec<(Place, List)>,
}

/// The change histories of one process, as read from the index file.
#[derive(Debug)]
pub(super) struct Changes {
    params: HashMap<String, History>,
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn get(b: &[u8], list: List, i: usize) -> u32 {
    u32_at(b, list.at + 4 * i).unwrap_or_default()
}

/// Reads a section of the index file front to back; a failure is the offset it stopped at.
struct Cursor<'b> {
    body: &'b [u8],
    start: usize,
    at: usize,
}

impl Cursor<'_> {
    fn u32(&mut self) -> Result<u32, usize> {
        let v = u32_at(self.body, self.at).ok_or(self.start + self.at)?;
        self.at += 4;
        Ok(v)
    }

    fn text(&mut self) -> Result<&str, usize> {
        let len = self.u32()? as usize;
        let bytes = self
            .body
            .get(self.at..self.at + len)
            .ok_or(self.start + self.at)?;
        let text = std::str::from_utf8(bytes).map_err(|_| self.start + self.at)?;
        self.at += len;
        Ok(text)
    }
}

impl Changes {
    /// Reads the section at `bytes[start..]`, checking its checksum and its structure; a
    /// failure is the offset of the damage.
    pub(super) fn parse(bytes: &[u8], start: usize) -> Result<Changes, usize> {
        let section = bytes.get(start..).ok_or(start)?;
        let body_len = section.len().checked_sub(4).ok_or(start)?;
        if u32_at(section, body_len) != Some(crc32c::crc32c(&section[..body_len])) {
            return Err(start);
        }
        let mut c = Cursor {
            body: &section[..body_len],
            start,
            at: 0,
        };
        let mut shapes = Vec::new();
        for _ in 0..c.u32()? {
            let name = c.text()?.to_owned();
            let holders = c.u32()? as usize;
            let mut places = Vec::new();
            for _ in 0..c.u32()? {
                let at = c.start + c.at;
                let place = Place::parse(c.text()?).ok_or(at)?;
                places.push((place, c.u32()? as usize));
            }
            shapes.push((name, holders, places));
        }
        let mut next = start + c.at;
        let mut list = |len: usize| -> Result<List, usize> {
            let l = List { at: next, len };
            next = len
                .checked_mul(4)
                .and_then(|n| n.checked_add(next))
                .ok_or(next)?;
            Ok(l)
        };
        let mut params = HashMap::new();
        for (name, holders, places) in shapes {
            let holders = list(holders)?;
            let mut changes = Vec::new();
            for (place, len) in places {
                changes.push((place, list(len)?));
            }
            params.insert(name, History { holders, changes });
        }
        if next != start + body_len {
            return Err(start + body_len);
        }
        Ok(Changes { params })
    }

    /// The holders of `place.root` among the first `entered_before` instances where `place`
    /// may have changed, latest first, as instance indexes: the latest holder always (the
    /// query compares its value with the one it has), then every one where a part
    /// overlapping `place` changed inside or after it.
    pub(super) fn sources<'s>(
        &'s self,
        bytes: &'s [u8],
        entered_before: usize,
        place: &Place,
    ) -> Sources<'s> {
        let mut sources = Sources {
            bytes,
            holders: List { at: 0, len: 0 },
            latest: None,
            heads: Vec::new(),
        };
        let Some(history) = self.params.get(&place.root) else {
            return sources;
        };
        sources.holders = history.holders;
        let holders = history.holders;
        let below = partition(holders.len, |pos| {
            (get(bytes, holders, pos) as usize) < entered_before
        });
        let Some(latest) = below.checked_sub(1) else {
            return sources;
        };
        sources.latest = Some(latest as u32);
        for (changed, list) in &history.changes {
            if changed.overlaps(place) {
                let before = partition(list.len, |i| (get(bytes, *list, i) as usize) < latest);
                sources.heads.push((*list, before));
            }
        }
        sources
    }
}

/// How many of `0..len` satisfy `below`, which holds for a prefix of them.
fn partition(len: usize, below: impl Fn(usize) -> bool) -> usize {
    let (mut lo, mut hi) = (0, len);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if below(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// The instances [`Changes::sources`] finds, merged from the lists of the places that
/// overlap the one asked about, one at a time.
#[derive(Debug)]
pub(super) struct Sources<'s> {
    bytes: &'s [u8],
    holders: List,
    latest: Option<u32>,
    /// Per overlapping place: its list, and how many of its entries are still to come.
    heads: Vec<(List, usize)>,
}

impl Iterator for Sources<'_> {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        let pos = match self.latest.take() {
            Some(latest) => latest,
            None => {
                let bytes = self.bytes;
                let top = self
                    .heads
                    .iter()
                    .filter(|(_, left)| *left > 0)
                    .map(|(list, left)| get(bytes, *list, left - 1))
                    .max()?;
                for (list, left) in &mut self.heads {
                    if *left > 0 && get(bytes, *list, *left - 1) == top {
                        *left -= 1;
                    }
                }
                top
            }
        };
        Some(get(self.bytes, self.holders, pos as usize) as usize)
    }
}

#[cfg(test)]
mod tests {
    use ppd_formats::value::MapWriter;
    use serde_json::json;

    use super::*;

    fn bank(balances: &[i64]) -> serde_json::Value {
        let accounts: Vec<_> = balances
            .iter()
            .map(|b| json!({"owner": "ann", "balance": b}))
            .collect();
        json!({"accounts": accounts, "went_negative": false})
    }

    /// A prelog (`bank`, and `n`, which is not logged on exit) or a postlog (`%0`, `bank`).
    fn log(bank: &serde_json::Value, entry: bool) -> Vec<u8> {
        let mut map = MapWriter::new(2);
        if entry {
            map.entry("bank", bank).entry("n", &1);
        } else {
            map.entry("%0", &true).entry("bank", bank);
        }
        map.finish()
    }

    fn encoded(v: &serde_json::Value) -> Vec<u8> {
        ppd_formats::value::encode(v).unwrap()
    }

    #[test]
    fn a_comparison_names_the_parts_that_changed() {
        let a = encoded(&bank(&[100, 50]));
        let changed = |b: &serde_json::Value| changed_places("bank", Some(&a), Some(&encoded(b)));
        assert_eq!(changed(&bank(&[100, 50])), Vec::<String>::new());
        assert_eq!(changed(&bank(&[100, -10])), ["bank.accounts[1].balance"]);
        assert_eq!(
            changed(&bank(&[0, -10])),
            ["bank.accounts[0].balance", "bank.accounts[1].balance"]
        );
        // A part that appears, and an array whose length changed: their container.
        assert_eq!(changed(&bank(&[100, 50, 7])), ["bank.accounts"]);
        let mut more = bank(&[100, 50]);
        more["audits"] = json!(1);
        assert_eq!(changed(&more), ["bank.audits"]);
        // A key no place can name: the map that holds it.
        let odd = |v: i64| encoded(&json!({"a-b": v}));
        assert_eq!(changed_places("m", Some(&odd(1)), Some(&odd(2))), ["m"]);
        assert_eq!(changed_places("m", None, Some(&odd(2))), ["m"]);
        assert_eq!(changed_places("m", Some(&[0xc1]), Some(&odd(2))), ["m"]);
    }

    /// Instances 0, 2, 4, … of a process log `bank` on exit; the odd ones do not.
    fn history(banks: &[(&[i64], &[i64])]) -> (Vec<u8>, Changes) {
        let mut changes = ChangeLog::default();
        for (i, (before, after)) in banks.iter().enumerate() {
            let i = 2 * i as u32;
            changes.exited(i, &log(&bank(before), true), &log(&bank(after), false));
            let mut none = MapWriter::new(1);
            none.entry("%0", &true);
            changes.exited(i + 1, &log(&bank(after), true), &none.finish());
        }
        let bytes = changes.encode();
        let parsed = Changes::parse(&bytes, 0).unwrap();
        (bytes, parsed)
    }

    fn sources(index: &(Vec<u8>, Changes), entered_before: usize, place: &str) -> Vec<usize> {
        let place = Place::parse(place).unwrap();
        index.1.sources(&index.0, entered_before, &place).collect()
    }

    #[test]
    fn sources_are_the_latest_holder_and_the_changes_before_it() {
        let index = history(&[
            (&[100, 100], &[100, 100]), // 0: nothing changes
            (&[100, 100], &[60, 100]),  // 2: account 0
            (&[60, 100], &[60, 100]),   // 4: nothing
            (&[60, 100], &[60, 30]),    // 6: account 1
            (&[60, 30], &[60, 30]),     // 8: nothing
            (&[99, 30], &[99, 30]),     // 10: account 0, changed before it entered
            (&[99, 30], &[99, 30]),     // 12: nothing
        ]);
        assert_eq!(sources(&index, 14, "bank.accounts[0].balance"), [12, 8, 2]);
        assert_eq!(sources(&index, 14, "bank.accounts[1].balance"), [12, 6]);
        assert_eq!(
            sources(&index, 14, "bank.accounts[k].balance"),
            [12, 8, 6, 2]
        );
        assert_eq!(sources(&index, 14, "bank"), [12, 8, 6, 2]);
        assert_eq!(sources(&index, 14, "bank.went_negative"), [12]);
        assert_eq!(sources(&index, 7, "bank.accounts[1].balance"), [6]);
        assert_eq!(sources(&index, 6, "bank.accounts[1].balance"), [4]);
        assert_eq!(sources(&index, 0, "bank"), Vec::<usize>::new());
        // Not logged on exit by any instance.
        assert_eq!(sources(&index, 14, "n"), Vec::<usize>::new());
    }

    #[test]
    fn a_damaged_history_is_refused_at_its_offset() {
        let (bytes, _) = history(&[(&[1], &[2]), (&[2], &[3])]);
        for at in [0, 5, bytes.len() - 6, bytes.len() - 1] {
            let mut b = bytes.clone();
            b[at] ^= 0x10;
            assert!(Changes::parse(&b, 0).is_err(), "{at}");
        }
        assert!(Changes::parse(&bytes[..bytes.len() - 4], 0).is_err());
        let mut shifted = vec![7u8; 3];
        shifted.extend_from_slice(&bytes);
        assert!(Changes::parse(&shifted, 3).is_ok());
    }
}
