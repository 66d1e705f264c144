//! The parallel dynamic graph of Miller & Choi §6.1–6.2.
//!
//! Its nodes are *synchronization nodes*: the events where a synchronization edge starts or
//! ends, plus each process's first and last event (so every event lies on an edge). Its edges
//! are *internal edges*, one per stretch of a process between consecutive synchronization
//! nodes, carrying the number of local (non-synchronization) events inside, and
//! *synchronization edges* of the kinds in [`crate::hb`]. `n1 → n2` (reachability) is the
//! happened-before order; an event's internal edge is the one whose stretch holds it, and two
//! internal edges are *simultaneous* (Definition 6.1) when neither reaches the other.

use std::collections::{BTreeSet, HashMap};

use petgraph::graph::{DiGraph, NodeIndex};

use crate::hb::SyncKind;
use crate::trace::{EventRef, Trace};
use crate::vclock::Clocks;

/// A synchronization node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SyncNode {
    /// The event.
    pub event: EventRef,
}

/// An edge of the parallel dynamic graph.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PdgEdge {
    /// Program order between consecutive synchronization nodes of a process, with the number
    /// of local events strictly between them.
    Internal {
        /// Local events inside.
        events: u32,
    },
    /// A synchronization edge.
    Sync(SyncKind),
}

/// The parallel dynamic graph of a run.
#[derive(Debug, Clone)]
pub struct ParallelDynamicGraph {
    graph: DiGraph<SyncNode, PdgEdge>,
    nodes: HashMap<EventRef, NodeIndex>,
    /// Per process, its synchronization nodes' event indexes, ascending.
    per_process: Vec<Vec<u32>>,
}

impl ParallelDynamicGraph {
    /// Builds the graph of `trace` from its clocks' synchronization edges.
    pub fn build(trace: &Trace, clocks: &Clocks) -> ParallelDynamicGraph {
        let mut points: Vec<BTreeSet<u32>> = trace
            .processes()
            .iter()
            .map(|p| {
                let mut s = BTreeSet::new();
                if !p.events.is_empty() {
                    s.insert(0);
                    s.insert(p.events.len() as u32 - 1);
                }
                s
            })
            .collect();
        for e in clocks.edges() {
            points[e.from.process as usize].insert(e.from.index);
            points[e.to.process as usize].insert(e.to.index);
        }
        let mut graph = DiGraph::new();
        let mut nodes = HashMap::new();
        let mut per_process = Vec::with_capacity(points.len());
        for (p, set) in points.into_iter().enumerate() {
            let mut prev: Option<(u32, NodeIndex)> = None;
            for &k in &set {
                let event = EventRef::new(p as u32, k);
                let n = graph.add_node(SyncNode { event });
                nodes.insert(event, n);
                if let Some((pk, pn)) = prev {
                    graph.add_edge(pn, n, PdgEdge::Internal { events: k - pk - 1 });
                }
                prev = Some((k, n));
            }
            per_process.push(set.into_iter().collect());
        }
        for e in clocks.edges() {
            graph.add_edge(nodes[&e.from], nodes[&e.to], PdgEdge::Sync(e.kind));
        }
        ParallelDynamicGraph {
            graph,
            nodes,
            per_process,
        }
    }

    /// The graph itself.
    pub fn graph(&self) -> &DiGraph<SyncNode, PdgEdge> {
        &self.graph
    }

    /// The node of a synchronization event.
    pub fn node(&self, event: EventRef) -> Option<NodeIndex> {
        self.nodes.get(&event).copied()
    }

    /// Whether `event` is a synchronization node.
    pub fn is_sync_node(&self, event: EventRef) -> bool {
        self.nodes.contains_key(&event)
    }

    /// The internal edge holding `event`: its start and end nodes. A synchronization node
    /// starts the edge after it (the last node of a process ends the edge before it).
    pub fn internal_edge(&self, event: EventRef) -> Option<(EventRef, EventRef)> {
        let points = self.per_process.get(event.process as usize)?;
        let at = points.partition_point(|&k| k <= event.index);
        let (start, end) = match at {
            0 => return None,
            i if i == points.len() => (points.get(i.checked_sub(2)?)?, points.get(i - 1)?),
            i => (&points[i - 1], &points[i]),
        };
        Some((
            EventRef::new(event.process, *start),
            EventRef::new(event.process, *end),
        ))
    }

    /// Counts of the graph's parts: nodes, internal edges, synchronization edges.
    pub fn counts(&self) -> (usize, usize, usize) {
        let internal = self
            .graph
            .edge_weights()
            .filter(|e| matches!(e, PdgEdge::Internal { .. }))
            .count();
        (
            self.graph.node_count(),
            internal,
            self.graph.edge_count() - internal,
        )
    }

    /// Whether node `a` reaches node `b` (`a → b` of §6.1), by search over the graph; the
    /// clocks answer the same question in constant time, this is the definition.
    pub fn reaches(&self, a: EventRef, b: EventRef) -> bool {
        let (Some(na), Some(nb)) = (self.node(a), self.node(b)) else {
            return false;
        };
        petgraph::algo::has_path_connecting(&self.graph, na, nb, None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synth::{self, Shape};

    /// Reachability in the graph is exactly the clocks' happened-before on its nodes.
    #[test]
    fn graph_reachability_is_the_clock_order() {
        let trace = synth::execution(&Shape::mixed(4, 400), 11);
        let clocks = Clocks::compute(&trace);
        let pdg = ParallelDynamicGraph::build(&trace, &clocks);
        let nodes: Vec<EventRef> = pdg.graph().node_weights().map(|n| n.event).collect();
        assert!(nodes.len() > 8);
        for &a in nodes.iter().step_by(3) {
            for &b in nodes.iter().step_by(5) {
                if a != b {
                    assert_eq!(
                        pdg.reaches(a, b),
                        clocks.happened_before(a, b),
                        "{a:?} {b:?}"
                    );
                }
            }
        }
        let (n, internal, sync) = pdg.counts();
        assert_eq!(sync, clocks.edges().len());
        assert_eq!(internal, n - trace.processes().len());
    }
}
