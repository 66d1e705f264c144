//! Reach, Dom, PDom, PRE, POST1, POST2, StatsAlongPaths and PathExists (§3.2).

use std::collections::VecDeque;

use crate::bits::Bits;
use crate::dcfg::{Dcfg, Kind, NodeId};

/// How much work the analysis did, to compare with the bounds of §3.2.5.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Nodes.
    pub nodes: usize,
    /// Sends (`S`).
    pub sends: usize,
    /// Receives (`R`).
    pub receives: usize,
    /// Interprocess edges (`E`).
    pub edges: usize,
    /// Interprocess edges taken off the PRE worklist (bound: S × E).
    pub pre_steps: usize,
    /// Interprocess edges taken off the POST1 worklist (bound: S × E).
    pub post1_steps: usize,
    /// Interprocess edges taken off the POST2 worklist (bound: S × E).
    pub post2_steps: usize,
}

/// The edges of `messages` whose `end` (their send, or their receive) no other edge shares.
fn unique_edges(
    messages: &[(NodeId, NodeId)],
    end: impl Fn(&(NodeId, NodeId)) -> NodeId,
) -> Vec<(NodeId, NodeId)> {
    messages
        .iter()
        .copied()
        .filter(|e| messages.iter().filter(|f| end(f) == end(e)).count() == 1)
        .collect()
}

/// The sets of §3.2 for one graph.
#[derive(Debug, Clone)]
pub struct Analysis {
    /// `Reach(n)`: the nodes some intraprocess path from `n` of at least one edge reaches.
    pub reach: Vec<Bits>,
    /// `Dom(n)`: the nodes on every path from the process's start to `n`, `n` included.
    pub dom: Vec<Bits>,
    /// `PDom(n)`: the nodes on every path from `n` to the process's end, `n` included.
    pub pdom: Vec<Bits>,
    /// `PRE(n)` of each send and receive (empty for statements).
    pub pre: Vec<Bits>,
    /// `POST1(n)` of each send and receive: sends whose execution leads to `n`'s.
    pub post1: Vec<Bits>,
    /// `POST2(n)` of each send and receive: receives whose execution `n`'s precedes.
    pub post2: Vec<Bits>,
    /// The work done.
    pub counts: Counts,
    process: Vec<usize>,
    kind: Vec<Kind>,
}

impl Analysis {
    /// Computes every set of `g`.
    pub fn new(g: &Dcfg) -> Analysis {
        let n = g.nodes.len();
        let reach = reach(g);
        let dom = dominators(g, &g.pred, |p| g.processes[p].start);
        let pdom = dominators(g, &g.succ, |p| g.processes[p].stop);
        let mut a = Analysis {
            reach,
            dom,
            pdom,
            pre: Vec::new(),
            post1: Vec::new(),
            post2: Vec::new(),
            counts: Counts {
                nodes: n,
                sends: g.nodes.iter().filter(|x| x.kind == Kind::Send).count(),
                receives: g.nodes.iter().filter(|x| x.kind == Kind::Recv).count(),
                edges: g.messages.len(),
                ..Counts::default()
            },
            process: g.nodes.iter().map(|x| x.process).collect(),
            kind: g.nodes.iter().map(|x| x.kind).collect(),
        };
        let only_out_edge = unique_edges(&g.messages, |&(s, _)| s);
        let only_in_edge: Vec<(NodeId, NodeId)> = unique_edges(&g.messages, |&(_, r)| r)
            .into_iter()
            .map(|(s, r)| (r, s))
            .collect();
        (a.pre, a.counts.pre_steps) = a.propagate(&g.messages, &a.reach, Kind::Send);
        (a.post1, a.counts.post1_steps) = a.propagate(&only_out_edge, &a.pdom, Kind::Send);
        (a.post2, a.counts.post2_steps) = a.propagate(&only_in_edge, &a.dom, Kind::Recv);
        a
    }

    fn same_process(&self, set: &mut Bits, p: usize) {
        for m in set.clone().iter() {
            if self.process[m] == p {
                set.remove(m);
            }
        }
    }

    fn in_process(&self, p: usize, kind: Kind) -> impl Iterator<Item = NodeId> + '_ {
        (0..self.kind.len()).filter(move |&m| self.process[m] == p && self.kind[m] == kind)
    }

    /// The one worklist of §3.2.1 and §3.2.2, over `edges` oriented the way the sets flow;
    /// returns the sets and how many edges it took off the list.
    ///
    /// * PRE (§3.2.1): `PRE(R) = ∪_{S→R} PRE(S) − {S' : P(S') = P(R)}`,
    ///   `PRE(S) = ∪_{R : S ∈ Reach(R)} PRE(R) ∪ {S}`: every edge, from send to receive,
    ///   `along` = Reach, `seeds` = sends.
    /// * POST1 (§3.2.2, forward): `POST1(R) = ∪_{S →uniq R} POST1(S) − {S' : P(S') = P(R)}`,
    ///   `POST1(S) = ∪_{R : S ∈ PDom(R)} POST1(R) ∪ {S}`: the edges that are their send's
    ///   only out-edge, from send to receive, `along` = PDom, `seeds` = sends.
    /// * POST2 (§3.2.2, backward): `POST2(S) = ∪_{uniq S→R} POST2(R) − {R' : P(R') = P(S)}`,
    ///   `POST2(R) = ∪_{S : R ∈ Dom(S)} POST2(S) ∪ {R}`: the edges that are their receive's
    ///   only in-edge, from receive to send, `along` = Dom, `seeds` = receives.
    ///
    /// Each node of kind `seeds` starts with itself. When the set at an edge's head grows, it
    /// flows into the `seeds` of the head's process that `along` relates to the head, and the
    /// edges leaving those go back on the list.
    fn propagate(
        &self,
        edges: &[(NodeId, NodeId)],
        along: &[Bits],
        seeds: Kind,
    ) -> (Vec<Bits>, usize) {
        let n = self.kind.len();
        let mut sets = vec![Bits::new(n); n];
        for (m, set) in sets.iter_mut().enumerate() {
            if self.kind[m] == seeds {
                set.insert(m);
            }
        }
        let mut steps = 0;
        let mut list: VecDeque<(NodeId, NodeId)> = edges.iter().copied().collect();
        while let Some((tail, head)) = list.pop_front() {
            steps += 1;
            let mut add = sets[tail].clone();
            self.same_process(&mut add, self.process[head]);
            if !sets[head].union_with(&add) {
                continue;
            }
            let from_head = sets[head].clone();
            for next in self.in_process(self.process[head], seeds) {
                if along[head].contains(next) && sets[next].union_with(&from_head) {
                    list.extend(edges.iter().copied().filter(|&(a, _)| a == next));
                }
            }
        }
        (sets, steps)
    }

    /// `StatsAlongPaths(source, dest)` (§3.2.3): every node on some intraprocess path from
    /// `source` to `dest`, both included; empty when there is none. O(N) given `Reach`.
    pub fn stats_along_paths(&self, source: NodeId, dest: NodeId) -> Bits {
        let n = self.reach.len();
        let mut out = Bits::new(n);
        if source != dest && !self.reach[source].contains(dest) {
            return out;
        }
        for m in 0..n {
            let from = m == source || self.reach[source].contains(m);
            let to = m == dest || self.reach[m].contains(dest);
            if from && to {
                out.insert(m);
            }
        }
        out.insert(source);
        out.insert(dest);
        out
    }

    /// `PathExists(p, list)` (§3.2.4): whether a path from the process's start that ends at
    /// `p` visits every node of `list`. `PATH` starts as `[start, p]` and each node is put
    /// between two neighbours `PATH(i)`, `PATH(i+1)` whose `StatsAlongPaths` holds it; a node
    /// that fits nowhere fails it. Returns the `PATH` found.
    pub fn path_exists(&self, g: &Dcfg, p: NodeId, list: &[NodeId]) -> Option<Vec<NodeId>> {
        let start = g.processes[self.process[p]].start;
        let mut path = vec![start, p];
        for &m in list {
            if self.process[m] != self.process[p] {
                return None;
            }
            let at = (0..path.len() - 1)
                .find(|&i| self.stats_along_paths(path[i], path[i + 1]).contains(m))?;
            path.insert(at + 1, m);
        }
        Some(path)
    }
}

/// `Reach(n)` by a search from each node: O(N × (N + edges)).
fn reach(g: &Dcfg) -> Vec<Bits> {
    let n = g.nodes.len();
    (0..n)
        .map(|from| {
            let mut seen = Bits::new(n);
            let mut stack: Vec<NodeId> = g.succ[from].clone();
            while let Some(m) = stack.pop() {
                if seen.insert(m) {
                    stack.extend(&g.succ[m]);
                }
            }
            seen
        })
        .collect()
}

/// Dominators by the iterative data-flow equations `Dom(n) = {n} ∪ ∩_{m ∈ into(n)} Dom(m)`
/// (Aho, Sethi & Ullman), per process from `root`; with `into = succ` and the end as root,
/// postdominators.
fn dominators(g: &Dcfg, into: &[Vec<NodeId>], root: impl Fn(usize) -> NodeId) -> Vec<Bits> {
    let n = g.nodes.len();
    let mut dom = vec![Bits::full(n); n];
    for p in 0..g.processes.len() {
        let r = root(p);
        dom[r] = Bits::new(n);
        dom[r].insert(r);
    }
    let roots: Vec<NodeId> = (0..g.processes.len()).map(root).collect();
    let mut changed = true;
    while changed {
        changed = false;
        for m in 0..n {
            if roots.contains(&m) {
                continue;
            }
            let mut next = Bits::full(n);
            for &q in &into[m] {
                next.intersect_with(&dom[q]);
            }
            if into[m].is_empty() {
                next = Bits::new(n);
            }
            next.insert(m);
            if next != dom[m] {
                dom[m] = next;
                changed = true;
            }
        }
    }
    dom
}

/// A guaranteed interaction that orders two nodes: every execution of `after` happens after
/// the one execution of `before`, through the send `send` (in `before`'s process, after
/// `before` on every path) and the receive `recv` (in `after`'s process, before `after` on
/// every path), whose execution the send's is guaranteed to precede (`recv ∈ POST2(send)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ordering {
    /// The earlier node.
    pub before: NodeId,
    /// The send after it.
    pub send: NodeId,
    /// The receive that must follow the send.
    pub recv: NodeId,
    /// The later node.
    pub after: NodeId,
}

impl Analysis {
    /// A guaranteed interaction that puts every execution of `after` after `before`, if the
    /// sets find one. Only POST2's guarantees are used, so this never orders two nodes some
    /// run leaves unordered — given that `before`'s process runs its body once: `before` must
    /// lie on no cycle (`before ∉ Reach(before)`), else a later execution of it could follow
    /// `after`.
    pub fn ordered(&self, before: NodeId, after: NodeId) -> Option<Ordering> {
        if self.reach[before].contains(before) || self.process[before] == self.process[after] {
            return None;
        }
        (0..self.kind.len())
            .filter(|&s| self.kind[s] == Kind::Send && s != before && self.dom[s].contains(before))
            .find_map(|send| {
                self.post2[send]
                    .iter()
                    .find(|&r| {
                        self.process[r] == self.process[after] && self.dom[after].contains(r)
                    })
                    .map(|recv| Ordering {
                        before,
                        send,
                        recv,
                        after,
                    })
            })
    }
}
