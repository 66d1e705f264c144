//! Resolving the names of a predicate against a recording, before replay starts.
//!
//! Every process, e-block, label, channel and variable a predicate names must exist in the
//! recording; an unknown one is refused with the closest known names.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use ppd_formats::names::ProcessNameError;
use ppd_formats::{Event, FormatError, ObjectId, ProcessId, Recording, value};
use serde::{Deserialize, Serialize};

use super::{EventPattern, Expr, Operand, Predicate, Simple};

/// The names a recording knows.
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
}

impl Catalog {
    /// Reads every log of the recording for the names it uses.
    pub fn of(recording: &Recording) -> Result<Catalog, FormatError> {
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
            for item in reader.events() {
                let (_, event) = item?;
                match event {
                    Event::EblockEnter { eblock, prelog, .. }
                        if !catalog.eblocks.contains_key(&*eblock) =>
                    {
                        let params = match value::decode(&prelog) {
                            Ok(value::Value::Map(entries)) => entries
                                .iter()
                                .map(|(k, _)| k.as_str().unwrap_or("?").to_owned())
                                .collect(),
                            _ => Vec::new(),
                        };
                        catalog.eblocks.insert(eblock.to_string(), params);
                    }
                    Event::Mark { label, .. } => {
                        catalog.labels.insert(label.to_string());
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
                    Event::Start { .. }
                    | Event::Spawn { .. }
                    | Event::Join { .. }
                    | Event::Exit
                    | Event::Panic { .. }
                    | Event::Send { .. }
                    | Event::Recv { .. }
                    | Event::RecvNone { .. }
                    | Event::Select { .. }
                    | Event::Lock { .. }
                    | Event::Unlock { .. }
                    | Event::SemAcquire { .. }
                    | Event::SemRelease { .. }
                    | Event::Atomic { .. }
                    | Event::Clock { .. }
                    | Event::Random { .. }
                    | Event::Answer { .. }
                    | Event::EblockEnter { .. }
                    | Event::EblockExit { .. }
                    | Event::Blocked { .. }
                    | Event::Undelivered { .. }
                    | Event::JoinBlocked { .. }
                    | Event::Sleep { .. }
                    | Event::Outcome { .. }
                    | Event::RwAcquire { .. }
                    | Event::RwRelease { .. }
                    | Event::NetOpen { .. }
                    | Event::NetWrite { .. }
                    | Event::NetRead { .. }
                    | Event::NetSendTo { .. }
                    | Event::NetRecvFrom { .. }
                    | Event::NetFail { .. } => {}
                }
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

/// A name that is not in the recording.
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
}

impl fmt::Display for ResolveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} `{}` {}", self.what, self.name, self.reason)?;
        let quote = |v: &[String]| v.iter().map(|s| format!("`{s}`")).collect::<Vec<_>>();
        if !self.suggestions.is_empty() {
            write!(
                f,
                "; did you mean {}?",
                quote(&self.suggestions).join(" or ")
            )?;
        } else if !self.known.is_empty() {
            write!(f, " (known: {})", quote(&self.known).join(", "))?;
        }
        Ok(())
    }
}

impl std::error::Error for ResolveError {}

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
    }
}

/// What a resolved simple predicate matches.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
    /// Binds every name to the recording's processes, e-blocks, labels and channels.
    pub fn resolve(&self, catalog: &Catalog) -> Result<Resolved, ResolveError> {
        let mut components = Vec::new();
        for (id, simple) in self.simples().into_iter().enumerate() {
            components.push(resolve_simple(id, simple, catalog)?);
        }
        let combination = match self {
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
        };
        Ok(Resolved {
            combination,
            components,
            text: self.to_string(),
        })
    }
}

/// The rule every command uses ([`ppd_formats::names::resolve_process`]), with suggestions of
/// close names when the name is unknown.
fn resolve_process(name: &str, catalog: &Catalog) -> Result<ProcessId, ResolveError> {
    let processes = catalog.processes.iter().map(|(id, n)| (*id, n.as_str()));
    match ppd_formats::names::resolve_process(name, processes) {
        Ok(id) => Ok(id),
        Err(ProcessNameError::Ambiguous { ids, .. }) => Err(ResolveError {
            what: "process",
            name: name.to_owned(),
            reason: "names several processes".into(),
            suggestions: ids.iter().map(|id| id.to_string()).collect(),
            known: Vec::new(),
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

fn resolve_simple(id: usize, s: &Simple, catalog: &Catalog) -> Result<Component, ResolveError> {
    let process = resolve_process(&s.process, catalog)?;
    let (matcher, variables): (Matcher, Vec<String>) = match &s.event {
        EventPattern::Enter(f) | EventPattern::Exit(f) => {
            let name = resolve_eblock(f, catalog)?;
            let params = catalog.eblocks.get(&name).cloned().unwrap_or_default();
            let mut vars: Vec<String> = params.clone();
            vars.extend((1..=params.len().max(1)).map(|i| format!("%{i}")));
            if matches!(s.event, EventPattern::Exit(_)) {
                vars.push("%0".into());
                (Matcher::Exit(name), vars)
            } else {
                (Matcher::Enter(name), vars)
            }
        }
        EventPattern::Send(c) | EventPattern::Recv(c) => {
            let channel = c
                .as_deref()
                .map(|c| resolve_channel(c, catalog))
                .transpose()?;
            let vars = vec!["value".into(), "seq".into(), "sender".into()];
            if matches!(s.event, EventPattern::Send(_)) {
                (Matcher::Send(channel), vars)
            } else {
                (Matcher::Recv(channel), vars)
            }
        }
        EventPattern::Mark(label) => {
            if !catalog.labels.contains(label) {
                return Err(unknown(
                    "label",
                    label,
                    catalog.labels.iter().map(String::as_str),
                ));
            }
            (Matcher::Mark(label.clone()), vec!["value".into()])
        }
    };
    if let Some(condition) = &s.condition {
        check_variables(condition, &variables, &s.event)?;
    }
    Ok(Component {
        id,
        process,
        matcher,
        condition: s.condition.clone(),
        text: s.to_string(),
    })
}

fn check_variables(
    expr: &Expr,
    variables: &[String],
    event: &EventPattern,
) -> Result<(), ResolveError> {
    match expr {
        Expr::And(a, b) | Expr::Or(a, b) => {
            check_variables(a, variables, event)?;
            check_variables(b, variables, event)
        }
        Expr::Compare(a, _, b) => {
            for operand in [a, b] {
                if let Operand::Path(path) = operand {
                    let root = &path[0];
                    let known = variables.iter().any(|v| v == root)
                        || (root.starts_with('%') && root[1..].parse::<usize>().is_ok());
                    if !known {
                        let mut e = unknown("variable", root, variables.iter().map(String::as_str));
                        e.reason = format!("is not a logged value of `{event}`");
                        return Err(e);
                    }
                }
            }
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::predicate::parse;

    fn catalog() -> Catalog {
        Catalog {
            processes: vec![
                (ProcessId(0), "main".into()),
                (ProcessId(1), "teller".into()),
                (ProcessId(2), "auditor".into()),
                (ProcessId(3), "client-0".into()),
            ],
            eblocks: [(
                "bank::handle".to_owned(),
                vec!["bank".to_owned(), "request".to_owned()],
            )]
            .into_iter()
            .collect(),
            labels: ["negative".to_owned(), "total".to_owned()]
                .into_iter()
                .collect(),
            channels: vec![(ObjectId::new(ProcessId(0), 0), Some("requests".into()))],
            objects: [(ObjectId::new(ProcessId(0), 0), "requests".to_owned())]
                .into_iter()
                .collect(),
        }
    }

    fn resolve(text: &str) -> Result<Resolved, String> {
        parse(text)
            .map_err(|e| e.to_string())?
            .resolve(&catalog())
            .map_err(|e| e.to_string())
    }

    #[test]
    fn descriptions_name_processes_and_named_objects() {
        let recv: Event = Event::Recv {
            channel: ObjectId::new(ProcessId(0), 0),
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
        let r = resolve("teller: mark negative & auditor: enter handle if request == 1").unwrap();
        assert_eq!(r.combination, Combination::Conjunctive);
        assert_eq!(r.components[0].process, ProcessId(1));
        assert_eq!(
            r.components[1].matcher,
            Matcher::Enter("bank::handle".into())
        );
        let r = resolve("p3: send requests | 2: recv").unwrap();
        assert_eq!(
            r.components[0].matcher,
            Matcher::Send(Some(ObjectId::new(ProcessId(0), 0)))
        );
        assert_eq!(r.components[1].process, ProcessId(2));
    }

    #[test]
    fn unknown_names_are_refused_with_the_closest_known_ones() {
        assert_eq!(
            resolve("tellr: mark negative").unwrap_err(),
            "process `tellr` is not in this recording; did you mean `teller`?"
        );
        assert_eq!(
            resolve("teller: mark negatve").unwrap_err(),
            "label `negatve` is not in this recording; did you mean `negative`?"
        );
        assert_eq!(
            resolve("teller: enter handel").unwrap_err(),
            "function `handel` is not in this recording; did you mean `bank::handle`?"
        );
        assert_eq!(
            resolve("teller: exit handle if reqest > 0").unwrap_err(),
            "variable `reqest` is not a logged value of `exit handle`; did you mean `request`?"
        );
        assert_eq!(
            resolve("teller: exit handle if total > 0").unwrap_err(),
            "variable `total` is not a logged value of `exit handle` \
             (known: `bank`, `request`, `%1`, `%2`, `%0`)"
        );
        assert_eq!(
            resolve("client-0: send reqests").unwrap_err(),
            "channel `reqests` is not in this recording; did you mean `requests`?"
        );
    }
}
