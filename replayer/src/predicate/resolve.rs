//! Resolving a predicate against a recording, before replay starts.
//!
//! Every process, e-block, label, channel and variable a predicate names must exist in the
//! recording, and each simple predicate must be able to hold: its process must log its event,
//! and its condition must read values that process logged there (`check.rs`). Anything else is
//! refused, pointing at the name, with the closest known names.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use ppd_formats::ProcessNameError;
use ppd_formats::{Event, FormatError, ObjectId, ProcessId, Recording, value};
use serde::{Deserialize, Serialize};

use super::check::{self, Values};
use super::parse::point_at;
use super::shape::Shape;
use super::{EventPattern, Expr, Part, Predicate, Simple};

/// The names a recording knows, and what each process logged under them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Catalog {
    /// Processes: id and name.
    pub processes: Vec<(ProcessId, String)>,
    /// E-blocks, with their parameter names as their prelogs give them.
    pub eblocks: BTreeMap<String, Vec<String>>,
    /// Mark labels.
    pub labels: BTreeSet<String>,
    /// Channels: id and name, if named.
    pub channels: Vec<(ObjectId, Option<String>)>,
    /// Every object created with a name (`named_channel`, `Mutex::named`, ...).
    #[serde(default)]
    pub objects: BTreeMap<ObjectId, String>,
    /// What each process logged (a process that logged none of it is absent).
    #[serde(default)]
    pub logged: BTreeMap<ProcessId, LoggedShapes>,
}

/// What one process logged that a predicate can be about: its marks, e-block entries and exits,
/// sends and receives, each with the shape of the values logged with it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LoggedShapes {
    /// Labels marked, with their values.
    pub marks: BTreeMap<String, Shape>,
    /// E-blocks entered, with their prelogs (a map from parameter to argument).
    pub entered: BTreeMap<String, Shape>,
    /// E-blocks exited, with their postlogs (`%0` and the final `&mut` arguments).
    pub exited: BTreeMap<String, Shape>,
    /// Channels sent on, with the payloads that were logged.
    pub sent: BTreeMap<ObjectId, Shape>,
    /// Channels received on, with the payloads that were logged.
    pub received: BTreeMap<ObjectId, Shape>,
}

impl LoggedShapes {
    /// Merges a logged value (none: a message whose payload was not logged) into the shape at
    /// `key` of `map`; a value not `wanted` is not read, and its shape says nothing is known.
    fn add<K, Q>(map: &mut BTreeMap<K, Shape>, key: &Q, bytes: Option<&[u8]>, wanted: bool)
    where
        K: std::borrow::Borrow<Q> + Ord,
        Q: Ord + ToOwned<Owned = K> + ?Sized,
    {
        let bytes = bytes.filter(|_| wanted);
        if let Some(shape) = map.get_mut(key) {
            if let Some(bytes) = bytes {
                shape.add(bytes);
            }
            return;
        }
        let mut shape = if wanted {
            Shape::default()
        } else {
            Shape::unknown().clone()
        };
        if let Some(bytes) = bytes {
            shape.add(bytes);
        }
        map.insert(key.to_owned(), shape);
    }
}

/// Whose values a catalog reads: every one, or those a predicate's conditions test.
enum Wanted<'p> {
    All,
    /// For each process, the events its conditions are about.
    Tested(BTreeMap<ProcessId, Vec<&'p EventPattern>>),
}

impl Wanted<'_> {
    /// Whether the values of `event`, logged by `process`, are read.
    fn wants(&self, process: ProcessId, event: &Event) -> bool {
        let Wanted::Tested(tested) = self else {
            return true;
        };
        let names = |eblock: &str, f: &str| eblock == f || eblock.rsplit("::").next() == Some(f);
        tested.get(&process).is_some_and(|patterns| {
            patterns.iter().any(|pattern| match (pattern, event) {
                (EventPattern::Mark(l), Event::Mark { label, .. }) => **label == **l,
                // An exit's condition also reads the arguments its entry logged.
                (
                    EventPattern::Enter(f) | EventPattern::Exit(f),
                    Event::EblockEnter { eblock, .. },
                ) => names(eblock, f),
                (EventPattern::Exit(f), Event::EblockExit { eblock, .. }) => names(eblock, f),
                (EventPattern::Send(_), Event::Send { .. })
                | (EventPattern::Recv(_), Event::Recv { .. }) => true,
                _ => false,
            })
        })
    }
}

impl Catalog {
    /// Reads every log of the recording for the names it uses and the values logged with them.
    pub fn of(recording: &Recording) -> Result<Catalog, FormatError> {
        Catalog::read(recording, &Wanted::All)
    }

    /// Reads every log of the recording for the names it uses, and for the values of only the
    /// events `predicate`'s conditions test (the others are the bulk of a log, and decoding
    /// them all would be most of the work); it resolves `predicate` as [`Catalog::of`] does.
    pub fn for_predicate(
        recording: &Recording,
        predicate: &Predicate,
    ) -> Result<Catalog, FormatError> {
        let processes = || {
            recording
                .processes()
                .iter()
                .map(|p| (p.id, p.name.as_str()))
        };
        let mut tested: BTreeMap<ProcessId, Vec<&EventPattern>> = BTreeMap::new();
        for simple in predicate.simples() {
            if simple.condition.is_none() {
                continue;
            }
            if let Ok(id) = ppd_formats::resolve_process(&simple.process, processes()) {
                tested.entry(id).or_default().push(&simple.event);
            }
        }
        Catalog::read(recording, &Wanted::Tested(tested))
    }

    fn read(recording: &Recording, wanted: &Wanted<'_>) -> Result<Catalog, FormatError> {
        let mut catalog = Catalog {
            processes: recording
                .processes()
                .iter()
                .map(|p| (p.id, p.name.clone()))
                .collect(),
            ..Catalog::default()
        };
        for entry in recording.processes() {
            let reader = recording.open_log(entry)?;
            let mut logged = LoggedShapes::default();
            for item in reader.events() {
                let (_, event) = item?;
                let wants = wanted.wants(entry.id, &event);
                match event {
                    Event::EblockEnter { eblock, prelog, .. } => {
                        if !catalog.eblocks.contains_key(&*eblock) {
                            let params = match value::decode(&prelog) {
                                Ok(value::Value::Map(entries)) => entries
                                    .iter()
                                    .map(|(k, _)| k.as_str().unwrap_or("?").to_owned())
                                    .collect(),
                                _ => Vec::new(),
                            };
                            catalog.eblocks.insert(eblock.to_string(), params);
                        }
                        LoggedShapes::add(&mut logged.entered, &*eblock, Some(&prelog), wants);
                    }
                    Event::EblockExit { eblock, postlog } => {
                        LoggedShapes::add(&mut logged.exited, &*eblock, Some(&postlog), wants);
                    }
                    Event::Mark { label, value, .. } => {
                        if !catalog.labels.contains(&*label) {
                            catalog.labels.insert(label.to_string());
                        }
                        LoggedShapes::add(&mut logged.marks, &*label, Some(&value), wants);
                    }
                    Event::Send {
                        channel, payload, ..
                    } => LoggedShapes::add(&mut logged.sent, &channel, payload.as_deref(), wants),
                    Event::Recv {
                        channel, payload, ..
                    } => {
                        LoggedShapes::add(&mut logged.received, &channel, payload.as_deref(), wants)
                    }
                    Event::Create {
                        object, kind, name, ..
                    } => {
                        if let Some(name) = &name {
                            catalog.objects.insert(object, name.to_string());
                        }
                        if kind == ppd_formats::event::ObjectKind::Channel {
                            catalog.channels.push((object, name.map(|n| n.to_string())));
                        }
                    }
                    _ => {}
                }
            }
            if logged != LoggedShapes::default() {
                catalog.logged.insert(entry.id, logged);
            }
        }
        Ok(catalog)
    }

    /// The name of a process.
    pub fn process_name(&self, id: ProcessId) -> String {
        self.processes
            .iter()
            .find(|(p, _)| *p == id)
            .map_or_else(|| id.to_string(), |(_, n)| n.clone())
    }

    /// Checks that `name` is something `--print` can show for process `id` at a state: a label
    /// it marks, or a parameter of an e-block it enters.
    pub fn printable(&self, id: ProcessId, name: &str) -> Result<(), ResolveError> {
        let logged = self.logged_by(id);
        let params = || {
            logged
                .entered
                .keys()
                .filter_map(|f| self.eblocks.get(f))
                .flatten()
                .map(String::as_str)
        };
        if logged.marks.contains_key(name) || params().any(|p| p == name) {
            return Ok(());
        }
        let known: BTreeSet<&str> = logged
            .marks
            .keys()
            .map(String::as_str)
            .chain(params())
            .collect();
        let suggestions = closest(name, known.iter().copied());
        Err(ResolveError {
            what: "value",
            name: name.to_owned(),
            reason: format!(
                "is neither a label {} marks nor a parameter of an e-block it enters",
                self.process_name(id)
            ),
            known: match suggestions.is_empty() {
                true => known.iter().take(8).map(|s| (*s).to_owned()).collect(),
                false => Vec::new(),
            },
            suggestions,
            place: None,
        })
    }

    /// What process `id` logged.
    fn logged_by(&self, id: ProcessId) -> &LoggedShapes {
        static NOTHING: LoggedShapes = LoggedShapes {
            marks: BTreeMap::new(),
            entered: BTreeMap::new(),
            exited: BTreeMap::new(),
            sent: BTreeMap::new(),
            received: BTreeMap::new(),
        };
        self.logged.get(&id).unwrap_or(&NOTHING)
    }

    /// The processes whose logs `has` says have something, as a phrase: "auditor",
    /// "client-0, client-1 and 2 more".
    fn who(&self, has: impl Fn(&LoggedShapes) -> bool) -> Option<String> {
        let names: Vec<String> = self
            .logged
            .iter()
            .filter(|(_, l)| has(l))
            .map(|(id, _)| self.process_name(*id))
            .collect();
        let shown = names.len().min(3);
        match names.len() {
            0 => None,
            1 => Some(names[0].clone()),
            n if n == shown => Some(format!(
                "{} and {}",
                names[..n - 1].join(", "),
                names[n - 1]
            )),
            n => Some(format!(
                "{} and {} more",
                names[..shown].join(", "),
                n - shown
            )),
        }
    }

    /// The name of a channel, as a predicate names it.
    fn channel_name(&self, id: ObjectId) -> String {
        self.channels
            .iter()
            .find(|(c, _)| *c == id)
            .and_then(|(_, n)| n.clone())
            .unwrap_or_else(|| id.to_string())
    }
}

impl crate::describe::Names for Catalog {
    fn process(&self, id: ProcessId) -> String {
        self.process_name(id)
    }

    fn object(&self, id: ObjectId) -> String {
        self.objects
            .get(&id)
            .cloned()
            .unwrap_or_else(|| id.to_string())
    }
}

/// A name that is not in the recording, or a simple predicate that cannot hold in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolveError {
    /// What kind of name.
    pub what: &'static str,
    /// The name as written.
    pub name: String,
    /// Why it does not resolve.
    pub reason: String,
    /// The closest known names.
    pub suggestions: Vec<String>,
    /// Some known names, when none is close.
    pub known: Vec<String>,
    /// Where in the predicate the name is.
    pub place: Option<Box<Place>>,
}

/// Where a name is in a predicate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    /// The predicate, as displayed.
    pub text: String,
    /// The byte offset of the name in it.
    pub offset: usize,
}

impl ResolveError {
    /// What is wrong, in one line.
    fn message(&self) -> String {
        let quote = |v: &[String]| v.iter().map(|s| format!("`{s}`")).collect::<Vec<_>>();
        let mut out = format!("{} `{}` {}", self.what, self.name, self.reason);
        if !self.suggestions.is_empty() {
            out += &format!("; did you mean {}?", quote(&self.suggestions).join(" or "));
        } else if !self.known.is_empty() {
            out += &format!(" (known: {})", quote(&self.known).join(", "));
        }
        out
    }
}

impl fmt::Display for ResolveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.place {
            Some(place) => point_at(f, &place.text, place.offset, &self.message()),
            None => f.write_str(&self.message()),
        }
    }
}

impl std::error::Error for ResolveError {}

/// A resolve error and the part of its simple predicate it is about.
pub(super) struct Located {
    pub(super) error: Box<ResolveError>,
    pub(super) part: Part,
    /// Bytes into that part (a path's segment).
    pub(super) within: usize,
}

impl ResolveError {
    /// The error, about `part`.
    pub(super) fn at(self, part: Part) -> Located {
        Located {
            error: Box::new(self),
            part,
            within: 0,
        }
    }
}

/// The known names closest to `name`, best first (for "did you mean" messages).
pub fn closest<'a>(name: &str, known: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut scored: Vec<(f64, &str)> = known
        .map(|k| {
            // `handle` is as close to `bank::handle` as to `handle`.
            let short = k.rsplit("::").next().unwrap_or(k);
            let score = strsim::jaro_winkler(name, k).max(strsim::jaro_winkler(name, short));
            (score, k)
        })
        .filter(|(score, _)| *score > 0.75)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(b.1)));
    scored.dedup_by(|a, b| a.1 == b.1);
    scored
        .into_iter()
        .take(3)
        .map(|(_, k)| k.to_owned())
        .collect()
}

fn unknown<'a>(
    what: &'static str,
    name: &str,
    known: impl Iterator<Item = &'a str> + Clone,
) -> ResolveError {
    let suggestions = closest(name, known.clone());
    let known = if suggestions.is_empty() {
        known.take(8).map(str::to_owned).collect()
    } else {
        Vec::new()
    };
    ResolveError {
        what,
        name: name.to_owned(),
        reason: "is not in this recording".into(),
        suggestions,
        known,
        place: None,
    }
}

/// What a resolved simple predicate matches.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Matcher {
    /// Entry of this e-block.
    Enter(String),
    /// Exit of this e-block.
    Exit(String),
    /// A send on this channel, or any.
    Send(Option<ObjectId>),
    /// A receive on this channel, or any.
    Recv(Option<ObjectId>),
    /// A mark with this label.
    Mark(String),
}

/// A simple predicate bound to the recording.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Component {
    /// Its number in the predicate (0-based, in the order written).
    pub id: usize,
    /// The process it is about.
    pub process: ProcessId,
    /// What it matches.
    pub matcher: Matcher,
    /// Its condition.
    pub condition: Option<Expr>,
    /// How it was written.
    pub text: String,
}

/// How the components combine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Combination {
    /// All hold (a single component is a conjunction of one).
    Conjunctive,
    /// One holds.
    Disjunctive,
    /// Stages of component ids, each a disjunction, ordered by happened-before.
    Linked(Vec<Vec<usize>>),
    /// All hold at once and stay held.
    Simultaneous,
}

/// A predicate whose names are all bound.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Resolved {
    /// How the components combine.
    pub combination: Combination,
    /// The components.
    pub components: Vec<Component>,
    /// The predicate as written (normalized).
    pub text: String,
}

impl Resolved {
    /// The components about process `p`.
    pub fn components_of(&self, p: ProcessId) -> impl Iterator<Item = &Component> {
        self.components.iter().filter(move |c| c.process == p)
    }

    /// The processes the predicate is about.
    pub fn processes(&self) -> BTreeSet<ProcessId> {
        self.components.iter().map(|c| c.process).collect()
    }
}

impl Predicate {
    /// Binds every name to the recording's processes, e-blocks, labels and channels, and checks
    /// that each simple predicate can hold: that its process logs its event, and that its
    /// condition names values logged there, of kinds that can compare.
    pub fn resolve(&self, catalog: &Catalog) -> Result<Resolved, ResolveError> {
        let mut components = Vec::new();
        for (id, simple) in self.simples().into_iter().enumerate() {
            let component = resolve_simple(id, simple, catalog).map_err(|located| {
                let offset = self.offset(id, located.part) + located.within;
                ResolveError {
                    place: Some(Box::new(Place {
                        text: self.to_string(),
                        offset,
                    })),
                    ..*located.error
                }
            })?;
            components.push(component);
        }
        let combination = self.combination();
        Ok(Resolved {
            combination,
            components,
            text: self.to_string(),
        })
    }
}

impl Predicate {
    /// How its simple predicates combine, each numbered in the order written.
    pub fn combination(&self) -> Combination {
        match self {
            Predicate::Simple(_) | Predicate::Conjunctive(_) => Combination::Conjunctive,
            Predicate::Disjunctive(_) => Combination::Disjunctive,
            Predicate::Simultaneous(_) => Combination::Simultaneous,
            Predicate::Linked(stages) => {
                let mut next = 0;
                Combination::Linked(
                    stages
                        .iter()
                        .map(|stage| {
                            let ids = (next..next + stage.len()).collect();
                            next += stage.len();
                            ids
                        })
                        .collect(),
                )
            }
        }
    }
}

/// The rule every command uses ([`ppd_formats::resolve_process`]), with suggestions of
/// close names when the name is unknown.
fn resolve_process(name: &str, catalog: &Catalog) -> Result<ProcessId, ResolveError> {
    let processes = catalog.processes.iter().map(|(id, n)| (*id, n.as_str()));
    match ppd_formats::resolve_process(name, processes) {
        Ok(id) => Ok(id),
        Err(ProcessNameError::Ambiguous { ids, .. }) => Err(ResolveError {
            what: "process",
            name: name.to_owned(),
            reason: "names several processes".into(),
            suggestions: ids.iter().map(|id| id.to_string()).collect(),
            known: Vec::new(),
            place: None,
        }),
        Err(ProcessNameError::Unknown { .. }) => Err(unknown(
            "process",
            name,
            catalog.processes.iter().map(|(_, n)| n.as_str()),
        )),
    }
}

fn resolve_eblock(name: &str, catalog: &Catalog) -> Result<String, ResolveError> {
    if catalog.eblocks.contains_key(name) {
        return Ok(name.to_owned());
    }
    let by_suffix: Vec<&String> = catalog
        .eblocks
        .keys()
        .filter(|k| k.rsplit("::").next() == Some(name))
        .collect();
    match by_suffix.as_slice() {
        [one] => Ok((*one).clone()),
        [_, _, ..] => Err(ResolveError {
            what: "function",
            name: name.to_owned(),
            reason: "names several e-blocks".into(),
            suggestions: by_suffix.iter().map(|s| (*s).clone()).collect(),
            known: Vec::new(),
            place: None,
        }),
        [] => Err(unknown(
            "function",
            name,
            catalog.eblocks.keys().map(String::as_str),
        )),
    }
}

fn resolve_channel(name: &str, catalog: &Catalog) -> Result<ObjectId, ResolveError> {
    if let Some((id, _)) = catalog
        .channels
        .iter()
        .find(|(id, n)| n.as_deref() == Some(name) || id.to_string() == name)
    {
        return Ok(*id);
    }
    Err(unknown(
        "channel",
        name,
        catalog.channels.iter().filter_map(|(_, n)| n.as_deref()),
    ))
}

/// A name the recording knows that a process never logs: `what` `name` `reason`, the processes
/// that do log it (`others`), and the names the process does log (`own`) closest to `name`.
fn never<'a>(
    what: &'static str,
    name: &str,
    reason: String,
    others: Option<String>,
    own: impl Iterator<Item = &'a str>,
) -> ResolveError {
    let reason = match others {
        Some(others) => format!("{reason} (only by {others})"),
        None => reason,
    };
    ResolveError {
        what,
        name: name.to_owned(),
        reason,
        suggestions: closest(name, own),
        known: Vec::new(),
        place: None,
    }
}

fn resolve_simple(id: usize, s: &Simple, catalog: &Catalog) -> Result<Component, Located> {
    let process = resolve_process(&s.process, catalog).map_err(|e| e.at(Part::Process))?;
    let logged = catalog.logged_by(process);
    let who = catalog.process_name(process);
    let event = s.event.to_string();
    let (matcher, values) = match &s.event {
        EventPattern::Enter(f) | EventPattern::Exit(f) => {
            let name = resolve_eblock(f, catalog).map_err(|e| e.at(Part::Name))?;
            let exit = matches!(s.event, EventPattern::Exit(_));
            let mine = if exit {
                &logged.exited
            } else {
                &logged.entered
            };
            let Some(logs) = mine.get(&name) else {
                let entered = logged.entered.contains_key(&name);
                let (reason, others) = if exit && entered {
                    (format!("never returns in {who}"), None)
                } else {
                    let others = catalog.who(|l| l.entered.contains_key(&name));
                    (format!("is never entered by {who}"), others)
                };
                let own = logged.entered.keys().map(String::as_str);
                return Err(never("function", f, reason, others, own).at(Part::Name));
            };
            let params = catalog.eblocks.get(&name).map_or(&[][..], Vec::as_slice);
            let values = s.condition.as_ref().map(|_| {
                if exit {
                    let mut args = logged.entered.get(&name).cloned().unwrap_or_default();
                    args.merge(logs);
                    Values::Exit {
                        params,
                        args: Cow::Owned(args),
                        ret: Cow::Borrowed(logs.field("%0").unwrap_or(Shape::none())),
                    }
                } else {
                    Values::Enter {
                        params,
                        args: Cow::Borrowed(logs),
                    }
                }
            });
            let matcher = if exit {
                Matcher::Exit(name)
            } else {
                Matcher::Enter(name)
            };
            (matcher, values)
        }
        EventPattern::Send(c) | EventPattern::Recv(c) => {
            let send = matches!(s.event, EventPattern::Send(_));
            let channel = c
                .as_deref()
                .map(|c| resolve_channel(c, catalog))
                .transpose()
                .map_err(|e| e.at(Part::Name))?;
            let mine = if send { &logged.sent } else { &logged.received };
            let (verb, verbed) = if send {
                ("sends", "sent on")
            } else {
                ("receives", "received on")
            };
            let on_channel = |id: &&ObjectId| channel.is_none_or(|c| c == **id);
            let any = mine.keys().any(|id| on_channel(&id));
            if !any {
                let error = match (c, channel) {
                    (Some(written), Some(id)) => {
                        let others = catalog
                            .who(|l| if send { &l.sent } else { &l.received }.contains_key(&id));
                        let own: Vec<String> =
                            mine.keys().map(|id| catalog.channel_name(*id)).collect();
                        never(
                            "channel",
                            written,
                            format!("is never {verbed} by {who}"),
                            others,
                            own.iter().map(String::as_str),
                        )
                        .at(Part::Name)
                    }
                    _ => never(
                        "event",
                        &event,
                        format!("never happens: {who} {verb} no message"),
                        None,
                        std::iter::empty(),
                    )
                    .at(Part::Event),
                };
                return Err(error);
            }
            let values = s.condition.as_ref().map(|_| {
                let mut payloads = Shape::default();
                for (_, shape) in mine.iter().filter(|(id, _)| on_channel(id)) {
                    payloads.merge(shape);
                }
                Values::Message {
                    receive: !send,
                    payloads: Cow::Owned(payloads),
                }
            });
            let matcher = if send {
                Matcher::Send(channel)
            } else {
                Matcher::Recv(channel)
            };
            (matcher, values)
        }
        EventPattern::Mark(label) => {
            if !catalog.labels.contains(label) {
                return Err(
                    unknown("label", label, catalog.labels.iter().map(String::as_str))
                        .at(Part::Name),
                );
            }
            let Some(shape) = logged.marks.get(label) else {
                let others = catalog.who(|l| l.marks.contains_key(label));
                return Err(never(
                    "label",
                    label,
                    format!("is never marked by {who}"),
                    others,
                    logged.marks.keys().map(String::as_str),
                )
                .at(Part::Name));
            };
            (
                Matcher::Mark(label.clone()),
                Some(Values::Mark(Cow::Borrowed(shape))),
            )
        }
    };
    if let (Some(condition), Some(values)) = (&s.condition, &values) {
        check::condition(condition, values, &who, &event)?;
    }
    Ok(Component {
        id,
        process,
        matcher,
        condition: s.condition.clone(),
        text: s.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::predicate::parse;
    use expect_test::{Expect, expect};
    use serde_json::json;

    fn shape(values: &[serde_json::Value]) -> Shape {
        let mut shape = Shape::default();
        for v in values {
            shape.add(&value::encode(v).unwrap());
        }
        shape
    }

    /// Objects 0 and 1 of `main`.
    const REQUESTS: ObjectId = ObjectId(0);
    const REPLIES: ObjectId = ObjectId(1);

    /// A bank's names, and what its processes logged: the teller handles a withdrawal and an
    /// audit and marks a negative balance, the auditor marks a total, client-0 operates and
    /// sends requests.
    fn catalog() -> Catalog {
        let bank = json!({"accounts": [{"owner": "ann", "balance": -20}], "went_negative": true});
        let withdraw = json!({"Withdraw": {"client": 0, "account": 0, "amount": 50}});
        let teller = LoggedShapes {
            marks: [("negative".to_owned(), shape(&[json!(-20)]))].into(),
            entered: [(
                "bank::handle".to_owned(),
                shape(&[
                    json!({"bank": bank, "request": withdraw}),
                    json!({"bank": bank, "request": "Audit"}),
                ]),
            )]
            .into(),
            exited: [(
                "bank::handle".to_owned(),
                shape(&[json!({"%0": [0, {"Balance": -20}], "bank": bank})]),
            )]
            .into(),
            sent: [(REPLIES, Shape::default())].into(),
            received: [(REQUESTS, shape(std::slice::from_ref(&withdraw)))].into(),
        };
        let auditor = LoggedShapes {
            marks: [("total".to_owned(), shape(&[json!(180)]))].into(),
            received: [(REPLIES, Shape::default())].into(),
            ..LoggedShapes::default()
        };
        let client = LoggedShapes {
            entered: [("bank::operate".to_owned(), shape(&[json!({"id": 0})]))].into(),
            sent: [(REQUESTS, shape(&[withdraw]))].into(),
            ..LoggedShapes::default()
        };
        Catalog {
            processes: vec![
                (ProcessId(0), "main".into()),
                (ProcessId(1), "teller".into()),
                (ProcessId(2), "auditor".into()),
                (ProcessId(3), "client-0".into()),
            ],
            eblocks: [
                (
                    "bank::handle".to_owned(),
                    vec!["bank".to_owned(), "request".to_owned()],
                ),
                ("bank::operate".to_owned(), vec!["id".to_owned()]),
            ]
            .into_iter()
            .collect(),
            labels: ["negative".to_owned(), "total".to_owned()]
                .into_iter()
                .collect(),
            channels: vec![(REQUESTS, Some("requests".into())), (REPLIES, None)],
            objects: [(REQUESTS, "requests".to_owned())].into_iter().collect(),
            logged: [
                (ProcessId(1), teller),
                (ProcessId(2), auditor),
                (ProcessId(3), client),
            ]
            .into(),
        }
    }

    fn resolve(text: &str) -> Result<Resolved, String> {
        parse(text)
            .map_err(|e| e.to_string())?
            .resolve(&catalog())
            .map_err(|e| e.to_string())
    }

    /// The first line of the refusal of `text` (the message, without the caret).
    fn refusal(text: &str) -> String {
        let e = resolve(text).expect_err(text);
        e.lines().next().unwrap_or_default().to_owned()
    }

    fn check(text: &str, expected: Expect) {
        expected.assert_eq(&resolve(text).map(|r| r.text).unwrap_or_else(|e| e));
    }

    #[test]
    fn descriptions_name_processes_and_named_objects() {
        let recv: Event = Event::Recv {
            channel: REQUESTS,
            sender: ProcessId(3),
            seq: 4,
            site: None,
            payload: None,
        };
        assert_eq!(
            crate::describe_with(&recv, &catalog()),
            "recv message 4 from client-0 on requests"
        );
        assert_eq!(crate::describe(&recv), "recv message 4 from p3 on #0.0");
        let unnamed: Event = Event::Unlock {
            object: ObjectId::new(ProcessId(1), 2),
            site: None,
        };
        assert_eq!(crate::describe_with(&unnamed, &catalog()), "unlock #1.2");
    }

    #[test]
    fn names_bind_to_the_recording() {
        let r =
            resolve("auditor: mark total & teller: enter handle if request.Withdraw.amount == 50")
                .unwrap();
        assert_eq!(r.combination, Combination::Conjunctive);
        assert_eq!(r.components[0].process, ProcessId(2));
        assert_eq!(
            r.components[1].matcher,
            Matcher::Enter("bank::handle".into())
        );
        let r = resolve("p3: send requests | 2: recv").unwrap();
        assert_eq!(r.components[0].matcher, Matcher::Send(Some(REQUESTS)));
        assert_eq!(r.components[1].process, ProcessId(2));
    }

    #[test]
    fn unknown_names_are_refused_with_the_closest_known_ones() {
        check(
            "tellr: mark negative",
            expect![[r#"
                bad predicate at column 1: process `tellr` is not in this recording; did you mean `teller`?
                  tellr: mark negative
                  ^"#]],
        );
        assert_eq!(
            refusal("teller: mark negatve"),
            "bad predicate at column 14: label `negatve` is not in this recording; did you mean \
             `negative`?"
        );
        assert_eq!(
            refusal("teller: enter handel"),
            "bad predicate at column 15: function `handel` is not in this recording; did you \
             mean `bank::handle`?"
        );
        assert_eq!(
            refusal("teller: exit handle if reqest > 0"),
            "bad predicate at column 24: variable `reqest` is not a logged value of `exit \
             handle`; did you mean `request`?"
        );
        assert_eq!(
            refusal("teller: exit handle if total > 0"),
            "bad predicate at column 24: variable `total` is not a logged value of `exit \
             handle` (known: `bank`, `request`, `%1`, `%2`, `%0`)"
        );
        assert_eq!(
            refusal("client-0: send reqests"),
            "bad predicate at column 16: channel `reqests` is not in this recording; did you \
             mean `requests`?"
        );
    }

    #[test]
    fn parameters_past_the_arity_are_refused() {
        check(
            "teller: exit handle if %99 > 3",
            expect![[r#"
                bad predicate at column 24: variable `%99` is past the parameters: `exit handle` has 2 (`%1` is `bank`, `%2` is `request`, `%0` is the return value)
                  teller: exit handle if %99 > 3
                                         ^"#]],
        );
        assert_eq!(
            refusal("teller: enter handle if %0 == 1"),
            "bad predicate at column 25: variable `%0` is the return value, logged at the \
             exit, not at `enter handle`: use `exit` instead of `enter`"
        );
        assert_eq!(
            refusal("teller: mark negative if %1 < 0"),
            "bad predicate at column 26: variable `%1` is not a logged value of `mark \
             negative` (known: `value`)"
        );
        resolve("teller: exit handle if %2 == \"Audit\" && %0.1.Balance < 0").unwrap();
    }

    #[test]
    fn paths_no_logged_value_has_are_refused_where_they_leave_the_values() {
        check(
            "teller: mark negative if value.0.1.2.3 < 0",
            expect![[r#"
                bad predicate at column 32: path `value.0` is in no value teller logged at `mark negative` (`value` holds integers)
                  teller: mark negative if value.0.1.2.3 < 0
                                                 ^"#]],
        );
        assert_eq!(
            refusal("teller: enter handle if request.Withdraw.amout > 10"),
            "bad predicate at column 42: path `request.Withdraw.amout` is in no value teller \
             logged at `enter handle` (`request.Withdraw` holds maps with the fields \
             `account`, `amount`, `client`); did you mean `amount` or `account`?"
        );
        assert_eq!(
            refusal("teller: exit handle if bank.accounts.1.balance < 0"),
            "bad predicate at column 38: path `bank.accounts.1` is in no value teller logged \
             at `exit handle` (`bank.accounts` holds arrays of one item (index 0))"
        );
        assert_eq!(
            refusal("teller: recv requests if seq.x > 0"),
            "bad predicate at column 30: path `seq.x` goes into `seq`, which is an integer"
        );
        // Present in some values and not in others: the withdrawals have it, the audit not.
        resolve("teller: enter handle if request.Withdraw.amount > 10").unwrap();
        resolve("teller: exit handle if bank.accounts.0.owner == \"ann\"").unwrap();
    }

    #[test]
    fn values_a_process_never_logged_are_refused() {
        assert_eq!(
            refusal("teller: mark total"),
            "bad predicate at column 14: label `total` is never marked by teller (only by \
             auditor)"
        );
        assert_eq!(
            refusal("teller: enter operate"),
            "bad predicate at column 15: function `operate` is never entered by teller (only \
             by client-0)"
        );
        assert_eq!(
            refusal("client-0: recv requests"),
            "bad predicate at column 16: channel `requests` is never received on by client-0 \
             (only by teller)"
        );
        assert_eq!(
            refusal("main: send"),
            "bad predicate at column 7: event `send` never happens: main sends no message"
        );
        assert_eq!(
            refusal("client-0: send requests if sender == 1"),
            "bad predicate at column 28: variable `sender` is logged at a receive, not at \
             `send requests`"
        );
        assert!(
            refusal("auditor: recv if value > 0")
                .contains("variable `value` is never logged at `recv` in auditor"),
        );
        resolve("teller: recv requests if sender == 3 && seq > 0").unwrap();
    }

    #[test]
    fn comparisons_between_kinds_that_never_compare_are_refused() {
        assert_eq!(
            refusal("teller: mark negative if value == \"x\""),
            "bad predicate at column 35: comparison `value == \"x\"` never holds: `value` is \
             always an integer in what teller logged at `mark negative`, and `\"x\"` is a \
             string"
        );
        assert!(refusal("teller: exit handle if %0.0 < true").contains("never holds"));
        // `!=` holds between values that differ in kind; numbers compare whatever their kind.
        resolve("teller: mark negative if value != \"x\"").unwrap();
        resolve("teller: mark negative if value < 0.5").unwrap();
        // A unit variant is a string.
        resolve("teller: enter handle if request == \"Audit\"").unwrap();
    }

    #[test]
    fn values_that_were_not_read_refuse_no_condition() {
        // `Catalog::for_predicate` reads only the values its predicate tests; for any other
        // predicate, what it did not read must allow anything.
        let mut catalog = catalog();
        let teller = catalog.logged.get_mut(&ProcessId(1)).unwrap();
        for shape in teller.marks.values_mut().chain(teller.exited.values_mut()) {
            *shape = Shape::unknown().clone();
        }
        for text in [
            "teller: mark negative if value.0.1 == \"x\"",
            "teller: exit handle if %0.7 < 3 && bank.anything > 0",
        ] {
            parse(text).unwrap().resolve(&catalog).expect(text);
        }
        // What was read still counts: `%99` is past the parameters whatever the values.
        assert!(
            parse("teller: exit handle if %99 > 3")
                .unwrap()
                .resolve(&catalog)
                .is_err()
        );
    }

    #[test]
    fn the_caret_points_into_the_stage_of_a_long_predicate() {
        let good = "teller: recv requests";
        let text = [good; 40].join(" -> ") + " -> teller: mark negative if value.x > 0";
        let e = resolve(&text).unwrap_err();
        let lines: Vec<&str> = e.lines().collect();
        let column: usize = lines[0]
            .strip_prefix("bad predicate at column ")
            .and_then(|r| r.split(':').next())
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(&text[column - 1..], "x > 0", "{e}");
        // The shown line is a window of the text, with the caret under the field.
        let caret = lines[2].chars().position(|c| c == '^').unwrap();
        let shown: String = lines[1].chars().skip(caret - 6).collect();
        assert_eq!(shown, "value.x > 0", "{e}");
        assert!(lines[1].chars().count() < 120, "{e}");
    }
}
