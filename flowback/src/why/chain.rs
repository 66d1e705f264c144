//! The chain of a why-query: the dependences of its target followed breadth first, each level's
//! instances re-executed together, and the nodes described as the answer shows them.

use std::collections::{BTreeSet, HashMap};

use ppd_formats::trace::RecordKind;
use ppd_formats::value::{self, Value};
use ppd_formats::{Event, ProcessId};

use super::answer::{Dependence, NodeKind, Step, Via, node_kind};
use super::engine::{Dep, Engine, Outside, Site, Stall, Try, decoded, record_value};
use super::place::Place;
use super::store::{InstanceKey, Lookup};
use crate::error::Result;

/// A node of the answer while it is being built.
struct Node {
    site: Site,
    parent: Option<usize>,
    kind: Dependence,
    via: Option<Via>,
    see: Option<usize>,
    more: bool,
    children: Vec<usize>,
}

impl Engine<'_, '_> {
    /// The dependences of `target`, followed breadth first to `depth`; the instances each
    /// level needs are re-executed together.
    pub(super) fn chain(&mut self, target: Site, depth: usize) -> Result<Step> {
        let mut nodes = vec![Node {
            site: target.clone(),
            parent: None,
            kind: Dependence::Target,
            via: None,
            see: None,
            more: false,
            children: Vec::new(),
        }];
        let mut seen: HashMap<Site, usize> = HashMap::from([(target, 0)]);
        let mut level = vec![0usize];
        for _ in 0..depth {
            // The depth is the user's; what there is to follow bounds the work.
            if level.is_empty() {
                break;
            }
            let mut next = Vec::new();
            let mut todo = level;
            while !todo.is_empty() {
                let mut needed = BTreeSet::new();
                let mut stalled = Vec::new();
                for id in todo {
                    let site = nodes[id].site.clone();
                    let deps = match self.deps(&site) {
                        Ok(deps) => deps,
                        Err(Stall::Need(keys)) => {
                            needed.extend(keys);
                            stalled.push(id);
                            continue;
                        }
                        Err(Stall::Failed(key, why)) => vec![self.failed(key, &why)],
                        Err(Stall::Error(e)) => return Err(e),
                    };
                    // A branch that also controls the parent is shown there already.
                    let inherited = nodes[id]
                        .parent
                        .and_then(|p| self.control_of(&nodes[p].site));
                    for (kind, via, site) in deps {
                        if let (Dependence::Control, Site::Record { inst, rec, .. }) = (kind, &site)
                            && inherited == Some((*inst, *rec))
                        {
                            continue;
                        }
                        let child = nodes.len();
                        let see = seen.get(&site).copied();
                        if see.is_none() {
                            seen.insert(site.clone(), child);
                            next.push(child);
                        }
                        nodes.push(Node {
                            site,
                            parent: Some(id),
                            kind,
                            via,
                            see,
                            more: false,
                            children: Vec::new(),
                        });
                        nodes[id].children.push(child);
                    }
                }
                if !needed.is_empty() {
                    self.store.fetch(&needed)?;
                }
                todo = stalled;
            }
            level = next;
        }
        for id in level {
            nodes[id].more = match &nodes[id].site {
                Site::Outside(_) => false,
                Site::Record { inst, rec, .. } => match self.store.trace(*inst) {
                    Lookup::Ready(t) => t.records[*rec as usize].kind != RecordKind::Input,
                    _ => true,
                },
                Site::CallOutput { .. } | Site::Publish { .. } => true,
            };
        }
        self.settle(|engine| engine.step(&nodes, 0))
    }

    /// The branch a node's statement is control dependent on, if its trace is at hand.
    fn control_of(&mut self, site: &Site) -> Option<(InstanceKey, u32)> {
        let (inst, rec) = match site {
            Site::Record { inst, rec, .. }
            | Site::CallOutput { inst, rec, .. }
            | Site::Publish { inst, rec, .. } => (*inst, *rec),
            Site::Outside(_) => return None,
        };
        match self.store.trace(inst) {
            Lookup::Ready(t) => t.records[rec as usize].control.map(|c| (inst, c)),
            _ => None,
        }
    }

    fn failed(&mut self, key: InstanceKey, why: &str) -> Dep {
        let eblock = self.eblock_name(key).unwrap_or_default();
        (
            Dependence::Data,
            None,
            Site::Outside(Box::new(Outside {
                process: key.process,
                inst: Some(key),
                var: None,
                value: None,
                file: String::new(),
                line: 0,
                text: format!("{eblock} entered at event {}", key.enter),
                note: format!("could not be re-executed: {why}"),
            })),
        )
    }

    fn step(&mut self, nodes: &[Node], id: usize) -> Try<Step> {
        let node = &nodes[id];
        let mut step = self.describe(&node.site)?;
        step.id = id;
        step.kind = node.kind;
        step.via = node.via;
        if matches!(node.via, Some(Via::Lock | Via::Atomic)) {
            step.through = self
                .through
                .get(&node.site)
                .map(|&object| self.object_called(object));
        }
        step.see = node.see;
        step.more = node.more;
        for &child in &node.children {
            let child = self.step(nodes, child)?;
            step.deps.push(child);
        }
        Ok(step)
    }

    /// A node as the answer shows it.
    pub(super) fn describe(&mut self, site: &Site) -> Try<Step> {
        let blank = |process: ProcessId, name: String| Step {
            id: 0,
            process: name,
            pid: process.0,
            eblock: None,
            instance: None,
            var: None,
            value: None,
            file: String::new(),
            line: 0,
            text: String::new(),
            kind: Dependence::Data,
            via: None,
            through: None,
            node: NodeKind::Singular,
            record: None,
            event: None,
            note: None,
            see: None,
            more: false,
            deps: Vec::new(),
        };
        match site {
            Site::Record { inst, rec, place } => {
                let trace = self.trace(*inst)?;
                let r = &trace.records[*rec as usize];
                let mut step = blank(inst.process, self.process_name(inst.process));
                step.eblock = Some(trace.eblock.clone());
                step.instance = Some(inst.enter);
                step.file = r.file.clone();
                step.line = r.line;
                step.text = r.text.clone();
                step.record = Some(r.kind);
                step.event = r.event;
                step.value = record_value(r, place.as_ref());
                let shown_place = place.as_ref().map(ToString::to_string).or(r.var.clone());
                step.node = node_kind(r.kind);
                if r.kind == RecordKind::Branch {
                    // A `match` arm records its pattern, which the statement shows already.
                    let arm = matches!(decoded(r.value.as_ref()), Some(Value::String(_)));
                    step.var = Some(if arm { "match arm" } else { "condition" }.into());
                    if arm {
                        step.value = None;
                    }
                    return Ok(step);
                }
                step.var = match r.kind {
                    RecordKind::Entry => {
                        let n = trace.records[..=*rec as usize]
                            .iter()
                            .filter(|x| x.kind == RecordKind::Entry)
                            .count();
                        Some(format!("%{n} {}", shown_place.unwrap_or_default()))
                    }
                    RecordKind::Return => Some("%0".into()),
                    RecordKind::Call => Some(format!(
                        "%0 of {}",
                        r.call
                            .and_then(|c| self.eblock_name(InstanceKey {
                                process: inst.process,
                                enter: c
                            }))
                            .unwrap_or_else(|| "a call".into())
                    )),
                    _ => shown_place,
                };
                step.note = match r.kind {
                    RecordKind::Recv => match r.event.map(|k| self.store.event(inst.process, k)) {
                        Some(Ok(Event::NetRead {
                            socket,
                            offset,
                            data,
                            ..
                        })) => Some(format!(
                            "bytes {offset}..{} read from {}",
                            offset + data.len() as u64,
                            self.object_name(socket)
                        )),
                        Some(Ok(Event::NetRecvFrom { socket, from, .. })) => Some(format!(
                            "a datagram from {from}, received on {}",
                            self.object_name(socket)
                        )),
                        _ => r.message.map(|m| {
                            format!("message {} from {}", m.seq, self.process_name(m.sender))
                        }),
                    },
                    RecordKind::Send => match r.event.map(|k| self.store.event(inst.process, k)) {
                        Some(Ok(Event::NetWrite {
                            socket,
                            offset,
                            len,
                            ..
                        })) => Some(format!(
                            "bytes {offset}..{} written to {}",
                            offset + len,
                            self.object_name(socket)
                        )),
                        Some(Ok(Event::NetSendTo {
                            socket, seq, to, ..
                        })) => Some(format!(
                            "datagram {seq} sent to {to} from {}",
                            self.object_name(socket)
                        )),
                        _ => r.message.map(|m| {
                            format!("message {} on {}", m.seq, self.object_name(m.channel))
                        }),
                    },
                    RecordKind::Input => {
                        Some(match r.event.map(|k| self.store.event(inst.process, k)) {
                            Some(Ok(Event::Random { .. })) => {
                                "a random number, from the log".into()
                            }
                            Some(Ok(Event::Clock { .. })) => "a clock reading, from the log".into(),
                            Some(Ok(Event::Answer {
                                question, value, ..
                            })) => {
                                format!("{}, from the log", question.describe(value))
                            }
                            Some(Ok(Event::Atomic { object, .. })) => {
                                format!("the value of {}, from the log", self.object_name(object))
                            }
                            Some(Ok(
                                Event::Lock { object, .. } | Event::RwAcquire { object, .. },
                            )) => {
                                format!(
                                    "the value under {}, from the log",
                                    self.object_name(object)
                                )
                            }
                            _ => "a value from the log".into(),
                        })
                    }
                    _ => None,
                };
                Ok(step)
            }
            Site::CallOutput {
                inst,
                rec,
                callee,
                param,
                place,
            } => {
                let trace = self.trace(*inst)?;
                let r = &trace.records[*rec as usize];
                let logs = self.logs(*callee)?;
                let whole = Place::variable(&param.root);
                let value = logs
                    .postlog
                    .iter()
                    .find(|(n, _)| *n == param.root)
                    .and_then(|(_, v)| param.select(&whole, v))
                    .map(value::show);
                let callee_name = self.eblock_name(*callee).unwrap_or_default();
                let mut step = blank(inst.process, self.process_name(inst.process));
                step.eblock = Some(trace.eblock.clone());
                step.instance = Some(inst.enter);
                step.var = Some(place.to_string());
                step.value = value;
                step.file = r.file.clone();
                step.line = r.line;
                step.text = r.text.clone();
                step.node = NodeKind::Subgraph;
                step.record = Some(RecordKind::Call);
                step.event = r.event;
                step.note = Some(format!(
                    "changed by {callee_name} through `&mut {}`",
                    param.root
                ));
                Ok(step)
            }
            Site::Publish { inst, rec, value } => {
                let trace = self.trace(*inst)?;
                let r = &trace.records[*rec as usize];
                let mut step = blank(inst.process, self.process_name(inst.process));
                step.eblock = Some(trace.eblock.clone());
                step.instance = Some(inst.enter);
                step.file = r.file.clone();
                step.line = r.line;
                step.text = r.text.clone();
                step.record = Some(r.kind);
                step.event = r.event;
                step.value = value.clone();
                if let Some(Ok(Event::Atomic { object, op, .. })) =
                    r.event.map(|k| self.store.event(inst.process, k))
                {
                    let how = match op {
                        ppd_formats::event::AtomicOp::Rmw => "read-modify-write of",
                        _ => "stored into",
                    };
                    step.note = Some(format!("{how} {}", self.object_name(object)));
                }
                Ok(step)
            }
            Site::Outside(o) => {
                let mut step = blank(o.process, self.process_name(o.process));
                if let Some(inst) = o.inst {
                    step.eblock = self.eblock_name(inst);
                    step.instance = Some(inst.enter);
                }
                step.var = o.var.clone();
                step.value = o.value.clone();
                step.file = o.file.clone();
                step.line = o.line;
                step.text = o.text.clone();
                step.node = NodeKind::Outside;
                step.note = Some(o.note.clone());
                Ok(step)
            }
        }
    }
}
