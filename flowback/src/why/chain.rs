//! The chain of a why-query: the dependences of its target followed breadth first, each
//! level's instances re-executed together, and the steps described as the answer shows them.
//!
//! Steps are numbered in the order the search reaches them: level by level, and within a level
//! in the order of the steps that depend on them and of their dependences. Every dependence of
//! a level is worked out, re-executing what it needs, before any is numbered, so the numbers
//! are a function of the answer: the same whichever traces were cached. A step reached again
//! is referenced by its number, never followed again, and nothing here recurses: the work and
//! the stack follow the steps of the graph, not the depth asked for.

use std::collections::{BTreeSet, HashMap};

use ppd_formats::eblock_trace::RecordKind;
use ppd_formats::value::Value;
use ppd_formats::{Event, ProcessId};

use super::answer::{Dependence, Edge, NodeKind, Step, Via, node_kind};
use super::engine::{Dep, DepNode, Engine, Outside, Stall, Try, decoded};
use super::place::Place;
use super::store::{InstanceKey, Lookup};
use crate::error::Result;

/// A step of the answer while it is being built.
struct Node {
    site: DepNode,
    /// The step the search first reached it from.
    parent: Option<usize>,
    deps: Vec<Edge>,
    more: bool,
}

impl Engine<'_, '_> {
    /// The steps of the answer: the dependences of `target`, followed breadth first to
    /// `depth` or to the end of the graph, whichever comes first.
    pub(super) fn chain(&mut self, target: DepNode, depth: usize) -> Result<Vec<Step>> {
        let mut nodes = vec![Node {
            site: target.clone(),
            parent: None,
            deps: Vec::new(),
            more: false,
        }];
        let mut seen: HashMap<DepNode, usize> = HashMap::from([(target, 0)]);
        let mut level = vec![0usize];
        for _ in 0..depth {
            // The depth is the user's; what there is to follow bounds the work.
            if level.is_empty() {
                break;
            }
            let found = self.settled_each(&level, |engine, id| engine.dependences(&nodes, id))?;
            self.store.work.followed += level.len();
            let mut next = Vec::new();
            for (&id, deps) in level.iter().zip(found) {
                for (kind, via, site) in deps {
                    let through = match via {
                        Some(Via::Lock | Via::Atomic) => self
                            .through
                            .get(&site)
                            .map(|&object| self.object_called(object)),
                        _ => None,
                    };
                    let step = match seen.get(&site) {
                        Some(&known) => known,
                        None => {
                            let new = nodes.len();
                            seen.insert(site.clone(), new);
                            nodes.push(Node {
                                site,
                                parent: Some(id),
                                deps: Vec::new(),
                                more: false,
                            });
                            next.push(new);
                            new
                        }
                    };
                    nodes[id].deps.push(Edge {
                        step,
                        kind,
                        via,
                        through,
                    });
                }
            }
            level = next;
        }
        for id in level {
            nodes[id].more = self.may_depend(&nodes[id].site);
        }
        let all: Vec<usize> = (0..nodes.len()).collect();
        let described = self.settled_each(&all, |engine, id| engine.describe(&nodes[id].site))?;
        Ok(described
            .into_iter()
            .zip(nodes)
            .enumerate()
            .map(|(id, (mut step, node))| {
                step.id = id;
                step.more = node.more;
                step.deps = node.deps;
                step
            })
            .collect())
    }

    /// `f` of every item, the instances they need re-executed together, a run for each round
    /// of needs: what each item gives does not depend on which traces were at hand. A
    /// computation stalls only on traces the store lacks, and a fetch settles each, so this
    /// ends.
    fn settled_each<T>(
        &mut self,
        items: &[usize],
        mut f: impl FnMut(&mut Self, usize) -> Try<T>,
    ) -> Result<Vec<T>> {
        let mut done: Vec<Option<T>> = items.iter().map(|_| None).collect();
        loop {
            let mut needed = BTreeSet::new();
            let mut stalled = false;
            for (slot, &item) in items.iter().enumerate() {
                if done[slot].is_some() {
                    continue;
                }
                match f(self, item) {
                    Ok(v) => done[slot] = Some(v),
                    Err(Stall::Need(keys)) => {
                        stalled = true;
                        needed.extend(keys);
                    }
                    Err(Stall::Failed(key, why)) => return Err(self.not_reexecuted(key, &why)),
                    Err(Stall::Error(e)) => return Err(e),
                }
            }
            if !stalled {
                return Ok(done.into_iter().flatten().collect());
            }
            self.store.fetch(&needed)?;
        }
    }

    /// What step `id` depends on, less a branch that also controls the step it was reached
    /// from, which is shown there already.
    fn dependences(&mut self, nodes: &[Node], id: usize) -> Try<Vec<Dep>> {
        let deps = match self.deps(&nodes[id].site) {
            Err(Stall::Failed(key, why)) => vec![self.failed(key, &why)],
            other => other?,
        };
        let inherited = nodes[id]
            .parent
            .and_then(|p| self.control_of(&nodes[p].site));
        Ok(deps
            .into_iter()
            .filter(|(kind, _, site)| match (kind, site) {
                (Dependence::Control, DepNode::Record { inst, rec, .. }) => {
                    inherited != Some((*inst, *rec))
                }
                _ => true,
            })
            .collect())
    }

    /// Whether a step the depth left unfollowed may depend on more: anything but a value
    /// from outside the traced code, or an input from the log other than a value read from
    /// shared memory.
    fn may_depend(&mut self, site: &DepNode) -> bool {
        let (inst, rec) = match site {
            DepNode::Outside(_) => return false,
            DepNode::CallOutput { .. } | DepNode::Publish { .. } => return true,
            DepNode::Record { inst, rec, .. } => (*inst, *rec),
        };
        let Lookup::Ready(trace) = self.store.trace(inst) else {
            return true;
        };
        let Some(r) = trace.records.get(rec as usize) else {
            return true;
        };
        if r.kind != RecordKind::Input {
            return true;
        }
        r.event.is_some_and(|k| {
            matches!(
                self.store.event(inst.process, k),
                Ok(Event::Lock { .. } | Event::RwAcquire { .. } | Event::Atomic { .. })
            )
        })
    }

    /// The branch a node's statement is control dependent on, if its trace is at hand.
    fn control_of(&mut self, site: &DepNode) -> Option<(InstanceKey, u32)> {
        let (inst, rec) = match site {
            DepNode::Record { inst, rec, .. }
            | DepNode::CallOutput { inst, rec, .. }
            | DepNode::Publish { inst, rec, .. } => (*inst, *rec),
            DepNode::Outside(_) => return None,
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
            DepNode::Outside(Box::new(Outside {
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

    /// A node as the answer shows it.
    pub(super) fn describe(&mut self, site: &DepNode) -> Try<Step> {
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
            node: NodeKind::Singular,
            record: None,
            event: None,
            note: None,
            more: false,
            deps: Vec::new(),
        };
        match site {
            DepNode::Record { inst, rec, place } => {
                let trace = self.trace(*inst)?;
                let r = &trace.records[*rec as usize];
                let mut step = blank(inst.process, self.process_name(inst.process));
                step.eblock = Some(trace.eblock.clone());
                // A body is no instance: it has no entry event.
                step.instance = (!inst.is_body()).then_some(inst.enter);
                step.file = r.file.clone();
                step.line = r.line;
                step.text = r.text.clone();
                step.record = Some(r.kind);
                step.event = r.event;
                step.value = self.record_value(inst.process, r, place.as_ref());
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
            DepNode::CallOutput {
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
                    .map(|v| self.show(inst.process, v));
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
            DepNode::Publish { inst, rec, value } => {
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
            DepNode::Outside(o) => {
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
