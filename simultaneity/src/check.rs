//! A static verdict on a `==` or `&` predicate over a program's DCFG: possible, impossible in
//! every run, or unknown.
//!
//! *Impossible* rests only on guaranteed interactions ([`Analysis::ordered`], built on
//! `POST2` of §3.2.2): two components that can hold at once need a consistent global state
//! inside both; a send after the end of one, whose message a receive before the start of the
//! other must have taken (the receive's only in-edge), puts every such state out of reach.
//! Beyond the paper, a join orders every event of the joined process before it (the end
//! node stands for the process's last event, whatever it was), and the chain behind each
//! ordering is rebuilt hop by hop for the report.
//! *Possible* means no guaranteed interaction orders them in the graph; with it come the
//! points where each component is evaluated and, where §3.2.4's condition (i) finds one, a
//! recognition point: a node `p` of some process `P` such that `PathExists(p, {R_i})` for
//! receives `R_i` of `P` with a send of component `i`'s process after the component in
//! `PRE(R_i)`. *Unknown* names what kept the analysis from deciding.

use crate::dcfg::{Kind, NodeId};
use crate::sets::{Analysis, Ordering};
use crate::source::{Program, What};

/// A predicate component's event (the `EVENT` of `PROCESS: EVENT [if EXPR]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// `enter F`.
    Enter(String),
    /// `exit F`.
    Exit(String),
    /// `send [CHAN]`.
    Send(Option<String>),
    /// `recv [CHAN]`.
    Recv(Option<String>),
    /// `mark L`.
    Mark(String),
}

/// One local component.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Component {
    /// Its process's name.
    pub process: String,
    /// Its event.
    pub event: Event,
}

/// How the components combine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Combination {
    /// `==`: each component is a stable state (`enter F` while inside F, `mark L` from the
    /// mark on, since a condition cannot be read statically), all held in one global state.
    Simultaneous,
    /// `&`: each component holds right after its event, all in one global state.
    Conjunctive,
}

/// A recognition point (§3.2.4, condition (i)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recognition {
    /// The point `p`.
    pub point: NodeId,
    /// The receives `R_i^P` on the path to it, and the send `S_i` each may get a component's
    /// value from (none for a component of `p`'s own process, whose node is given instead).
    pub via: Vec<(NodeId, Option<NodeId>)>,
}

/// The verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Some run may satisfy the predicate as far as the modelled interactions go.
    Possible {
        /// The nodes where each component's event is, per component.
        points: Vec<Vec<NodeId>>,
        /// Recognition points found, one per process at most.
        recognition: Vec<Recognition>,
    },
    /// No run satisfies it.
    Impossible {
        /// The two components that can never hold together.
        pair: (usize, usize),
        /// The guaranteed interactions that order each pair of their occurrences.
        orderings: Vec<Ordering>,
        /// For each ordering, its whole chain: the earlier node, then each send and the
        /// receive that must have taken its message (through the processes in between), then
        /// the later node.
        chains: Vec<Vec<NodeId>>,
    },
    /// The analysis cannot decide.
    Unknown {
        /// Why, each with its `file:line`.
        reasons: Vec<String>,
    },
}

/// A predicate the check cannot take.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CheckError {
    /// A component names a process the program does not have.
    #[error("no process `{name}` in the program (its processes: {})", known.join(", "))]
    NoProcess {
        /// The name.
        name: String,
        /// The names it has.
        known: Vec<String>,
    },
    /// Fewer than two components.
    #[error("a static check needs at least two components joined by `==` or `&`")]
    TooFew,
}

/// Where a component holds: `(start, end)` per occurrence; `end` is `None` when nothing
/// ends it (a mark under `==`, which holds from the mark on).
type Intervals = Vec<(NodeId, Option<NodeId>)>;

fn last(f: &str) -> &str {
    f.rsplit("::").next().unwrap_or(f)
}

/// The nodes of component `c`, or why they cannot be known.
fn nodes_of(
    prog: &Program,
    c: &Component,
) -> Result<Result<(usize, Vec<NodeId>), String>, CheckError> {
    let named: Vec<usize> = (0..prog.processes.len())
        .filter(|&p| prog.processes[p].name.as_deref() == Some(c.process.as_str()))
        .collect();
    let unnamed: Vec<String> = prog
        .processes
        .iter()
        .filter(|p| p.name.is_none() && !p.unmodelled)
        .map(|p| p.site.to_string())
        .collect();
    let hidden_spawns = prog.hidden.iter().any(|h| h.spawn);
    let p = match named.as_slice() {
        [] if unnamed.is_empty() && !hidden_spawns => {
            return Err(CheckError::NoProcess {
                name: c.process.clone(),
                known: prog
                    .processes
                    .iter()
                    .filter_map(|p| p.name.clone())
                    .collect(),
            });
        }
        [] => {
            let mut why = format!("no process is named `{}` in the source", c.process);
            if !unnamed.is_empty() {
                why += &format!(
                    "; the names of the processes spawned at {} are not known",
                    unnamed.join(", ")
                );
            }
            if hidden_spawns {
                why += "; some spawns are not followed";
            }
            return Ok(Err(why));
        }
        [p] => *p,
        [p, ..] => {
            return Ok(Err(format!(
                "several processes are named `{}` (spawned at {})",
                c.process, prog.processes[*p].site
            )));
        }
    };
    let info = &prog.processes[p];
    if info.replicated {
        return Ok(Err(format!(
            "process `{}` (spawned at {}) may run as several instances, which the analysis does not tell apart",
            c.process, info.site
        )));
    }
    let hidden = &prog.hidden[p];
    let in_p = |n: &NodeId| prog.graph.nodes[*n].process == p;
    let all: Vec<NodeId> = (0..prog.graph.nodes.len()).filter(in_p).collect();
    let (nodes, maybe_hidden): (Vec<NodeId>, bool) = match &c.event {
        Event::Mark(l) => (
            all.iter()
                .copied()
                .filter(|&n| prog.what[n] == What::Mark(Some(l.clone())))
                .collect(),
            hidden.marks.contains(l)
                || hidden.any_mark
                || all.iter().any(|&n| prog.what[n] == What::Mark(None)),
        ),
        Event::Enter(f) | Event::Exit(f) => {
            let f = last(f);
            let want = |w: &What| match (&c.event, w) {
                (Event::Enter(_), What::Enter(g)) | (Event::Exit(_), What::Exit(g)) => g == f,
                _ => false,
            };
            (
                all.iter()
                    .copied()
                    .filter(|&n| want(&prog.what[n]))
                    .collect(),
                hidden.enters.contains(f),
            )
        }
        Event::Send(chan) | Event::Recv(chan) => {
            let send = matches!(c.event, Event::Send(_));
            let mut unsure = hidden.comm;
            let nodes = all
                .iter()
                .copied()
                .filter(|&n| {
                    let on = match (&prog.what[n], send) {
                        (What::Send(k), true) | (What::Recv(k), false) => k,
                        _ => return false,
                    };
                    match (chan, on) {
                        (None, _) => true,
                        (Some(name), Some(k)) => prog.channels[*k].names.contains(name),
                        (Some(_), None) => {
                            unsure = true;
                            false
                        }
                    }
                })
                .collect();
            (nodes, unsure)
        }
    };
    if maybe_hidden {
        return Ok(Err(format!(
            "process `{}` may reach `{}` in code the analysis does not follow",
            c.process,
            event_text(&c.event)
        )));
    }
    if nodes.is_empty() {
        return Ok(Err(format!(
            "no `{}` found in process `{}`",
            event_text(&c.event),
            c.process
        )));
    }
    Ok(Ok((p, nodes)))
}

fn event_text(e: &Event) -> String {
    match e {
        Event::Enter(f) => format!("enter {f}"),
        Event::Exit(f) => format!("exit {f}"),
        Event::Send(Some(c)) => format!("send {c}"),
        Event::Send(None) => "send".to_owned(),
        Event::Recv(Some(c)) => format!("recv {c}"),
        Event::Recv(None) => "recv".to_owned(),
        Event::Mark(l) => format!("mark {l}"),
    }
}

/// The occurrences of a component as intervals.
fn intervals(prog: &Program, how: Combination, c: &Component, nodes: &[NodeId]) -> Intervals {
    nodes
        .iter()
        .map(|&n| match (how, &c.event) {
            (Combination::Simultaneous, Event::Enter(_)) => (n, prog.closes.get(&n).copied()),
            (Combination::Simultaneous, Event::Mark(_)) => (n, None),
            _ => (n, Some(n)),
        })
        .collect()
}

/// Decides `components` combined by `how` over `prog`.
pub fn check(
    prog: &Program,
    how: Combination,
    components: &[Component],
) -> Result<Verdict, CheckError> {
    if components.len() < 2 {
        return Err(CheckError::TooFew);
    }
    let a = Analysis::new(&prog.graph);
    let mut reasons = Vec::new();
    let mut known = Vec::new();
    let reachable = |n: NodeId| {
        let start = prog.graph.processes[prog.graph.nodes[n].process].start;
        n == start || a.reach[start].contains(n)
    };
    for (i, c) in components.iter().enumerate() {
        match nodes_of(prog, c)? {
            // A node the graph cannot reach may be a gap in it: no verdict rests on one.
            Ok((_, nodes)) if !nodes.iter().all(|&n| reachable(n)) => {
                for n in nodes.into_iter().filter(|&n| !reachable(n)) {
                    reasons.push(format!(
                        "{} is not reachable in the graph",
                        prog.describe(n)
                    ));
                }
            }
            Ok((p, nodes)) => {
                let iv = intervals(prog, how, c, &nodes);
                known.push((i, p, nodes, iv));
            }
            Err(why) => reasons.push(why),
        }
    }
    for (x, (i, pi, _, ii)) in known.iter().enumerate() {
        for (j, pj, _, ij) in &known[x + 1..] {
            if pi == pj {
                continue;
            }
            if let Some(orderings) = disjoint(prog, &a, ii, ij, &reachable) {
                let chains = orderings.iter().map(|o| chain(prog, &a, o)).collect();
                return Ok(Verdict::Impossible {
                    pair: (*i, *j),
                    orderings,
                    chains,
                });
            }
        }
    }
    for (x, (_, pi, _, _)) in known.iter().enumerate() {
        if known[x + 1..].iter().any(|(_, pj, _, _)| pj == pi) {
            reasons.push(format!(
                "two components are in process `{}`, which the analysis does not order",
                prog.process_name(*pi)
            ));
            break;
        }
    }
    // What the graph does not model can only hide orderings: a "possible" needs none of it
    // to touch the receives or the components' processes.
    let procs: Vec<usize> = known.iter().map(|k| k.1).collect();
    let tainted = prog.processes.iter().any(|p| p.unmodelled);
    for u in &prog.unknowns {
        if tainted || u.process.is_some_and(|p| procs.contains(&p)) {
            reasons.push(u.to_string());
        }
    }
    if !reasons.is_empty() {
        reasons.dedup();
        return Ok(Verdict::Unknown { reasons });
    }
    let points: Vec<Vec<NodeId>> = known.iter().map(|k| k.2.clone()).collect();
    let recognition = recognition_points(prog, &a, &known);
    Ok(Verdict::Possible {
        points,
        recognition,
    })
}

/// An ordering through the end of `before`'s process: a join waits for a process's last
/// event, whichever it is (its exit or its panic, which ppd logs after every other event),
/// so every execution of every node of the process precedes a receive in `POST2` of its end
/// node — no matter whether `before` lies on a cycle or on every path to the end. (The end
/// node stands for the process's last event; the process must run once, which a replicated
/// one does not.) Sound for a component that holds only right after `before`; not for the
/// end of an interval, which a panic inside it never reaches.
fn joined_before(prog: &Program, a: &Analysis, before: NodeId, after: NodeId) -> Option<Ordering> {
    let p = prog.graph.nodes[before].process;
    if prog.processes[p].replicated || prog.graph.nodes[after].process == p {
        return None;
    }
    let end = (0..prog.graph.nodes.len())
        .find(|&n| prog.graph.nodes[n].process == p && prog.what[n] == What::Ending)?;
    let q = prog.graph.nodes[after].process;
    a.post2[end]
        .iter()
        .find(|&r| prog.graph.nodes[r].process == q && a.dom[after].contains(r))
        .map(|recv| Ordering {
            before,
            send: end,
            recv,
            after,
        })
}

/// The chain behind `o`: from its send, each message edge that is its receive's only
/// in-edge, and from that receive a send of the same process it dominates, until `o`'s
/// receive — the hops `POST2` was built from (§3.2.2).
fn chain(prog: &Program, a: &Analysis, o: &Ordering) -> Vec<NodeId> {
    let g = &prog.graph;
    let mut into = vec![0usize; g.nodes.len()];
    for &(_, r) in &g.messages {
        into[r] += 1;
    }
    let mut queue = std::collections::VecDeque::from([vec![o.send]]);
    let mut seen = vec![false; g.nodes.len()];
    seen[o.send] = true;
    while let Some(path) = queue.pop_front() {
        let s = *path.last().expect("never empty");
        for &(x, r) in &g.messages {
            if x != s || into[r] != 1 || !a.post2[r].contains(o.recv) {
                continue;
            }
            let mut next = path.clone();
            next.push(r);
            if r == o.recv {
                let mut whole = vec![o.before];
                whole.extend(next);
                whole.push(o.after);
                return whole;
            }
            let p = g.nodes[r].process;
            let onward: Vec<NodeId> = (0..g.nodes.len())
                .filter(|&z| {
                    !seen[z]
                        && g.nodes[z].process == p
                        && g.nodes[z].kind == Kind::Send
                        && a.dom[z].contains(r)
                        && a.post2[z].contains(o.recv)
                })
                .collect();
            for z in onward {
                seen[z] = true;
                let mut further = next.clone();
                further.push(z);
                queue.push_back(further);
            }
        }
    }
    vec![o.before, o.send, o.recv, o.after]
}

/// Orderings that separate every occurrence of one component from every occurrence of the
/// other, if there are.
fn disjoint(
    prog: &Program,
    a: &Analysis,
    first: &Intervals,
    second: &Intervals,
    reachable: &dyn Fn(NodeId) -> bool,
) -> Option<Vec<Ordering>> {
    // `point`: the earlier component holds only right after its node. A join orders only
    // such a one: a process that panics inside an e-block ends with the e-block's interval
    // open (its last state is inside), so a join does not follow the interval's end.
    let ordered = |before: NodeId, after: NodeId, point: bool| {
        a.ordered(before, after)
            .or_else(|| {
                point
                    .then(|| joined_before(prog, a, before, after))
                    .flatten()
            })
            .filter(|o| reachable(o.send) && reachable(o.recv))
    };
    let mut out = Vec::new();
    for &(s1, e1) in first {
        for &(s2, e2) in second {
            let o = e1
                .and_then(|e1| ordered(e1, s2, e1 == s1))
                .or_else(|| e2.and_then(|e2| ordered(e2, s1, e2 == s2)))?;
            if !out.contains(&o) {
                out.push(o);
            }
        }
    }
    Some(out)
}

/// §3.2.4 condition (i): for each process, the first node `p` with a path through, for each
/// component, its node (same process) or a receive whose `PRE` holds a send after it.
fn recognition_points(
    prog: &Program,
    a: &Analysis,
    known: &[(usize, usize, Vec<NodeId>, Intervals)],
) -> Vec<Recognition> {
    let g = &prog.graph;
    let mut out = Vec::new();
    for (p, info) in prog.processes.iter().enumerate() {
        if info.unmodelled {
            continue;
        }
        let nodes: Vec<NodeId> = (0..g.nodes.len())
            .filter(|&n| g.nodes[n].process == p)
            .collect();
        // The process's end last: an evaluation there comes too late to halt anything.
        let stop = g.processes[p].stop;
        let late = |n: &NodeId| *n == stop || prog.what[*n] == What::Ending;
        let points = nodes
            .iter()
            .copied()
            .filter(|n| !late(n))
            .chain(nodes.iter().copied().filter(late));
        'point: for point in points {
            let mut list = Vec::new();
            let mut via = Vec::new();
            for (_, pc, cnodes, _) in known {
                let found = if *pc == p {
                    cnodes.iter().find_map(|&c| {
                        let mut l = list.clone();
                        l.push(c);
                        a.path_exists(g, point, &l).map(|_| (c, None))
                    })
                } else {
                    nodes
                        .iter()
                        .filter(|&&r| g.nodes[r].kind == Kind::Recv)
                        .find_map(|&r| {
                            let s = a.pre[r].iter().find(|&s| {
                                g.nodes[s].process == *pc
                                    && cnodes.iter().any(|&c| c == s || a.reach[c].contains(s))
                            })?;
                            let mut l = list.clone();
                            l.push(r);
                            a.path_exists(g, point, &l).map(|_| (r, Some(s)))
                        })
                };
                let Some((n, s)) = found else {
                    continue 'point;
                };
                list.push(n);
                via.push((n, s));
            }
            out.push(Recognition { point, via });
            break;
        }
    }
    out
}

impl std::fmt::Display for Component {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.process, event_text(&self.event))
    }
}

/// The verdict in words, one fact a line: the first line `possible`, `impossible` or
/// `unknown`, then the evidence with each node's `file:line`.
pub fn render(prog: &Program, components: &[Component], verdict: &Verdict) -> String {
    let mut out = String::new();
    match verdict {
        Verdict::Possible {
            points,
            recognition,
        } => {
            out.push_str("possible: no guaranteed interaction orders the components\n");
            for (c, nodes) in components.iter().zip(points) {
                out.push_str(&format!("  `{c}` is evaluated at:\n"));
                for &n in nodes {
                    out.push_str(&format!("    {}\n", prog.describe(n)));
                }
            }
            for r in recognition {
                out.push_str(&format!(
                    "  recognition point in `{}`: {}\n",
                    prog.process_name(prog.graph.nodes[r.point].process),
                    prog.describe(r.point)
                ));
                for &(n, s) in &r.via {
                    match s {
                        Some(s) => out.push_str(&format!(
                            "    after {} (may carry {})\n",
                            prog.describe(n),
                            prog.describe(s)
                        )),
                        None => out.push_str(&format!("    after {}\n", prog.describe(n))),
                    }
                }
            }
        }
        Verdict::Impossible {
            pair,
            orderings,
            chains,
        } => {
            out.push_str(&format!(
                "impossible in every run: `{}` and `{}` never hold together\n",
                components[pair.0], components[pair.1]
            ));
            for (o, chain) in orderings.iter().zip(chains) {
                out.push_str(&format!(
                    "  `{}` is over before `{}` holds:\n",
                    process_of(prog, o.before, components),
                    process_of(prog, o.after, components),
                ));
                for &n in chain {
                    out.push_str(&format!(
                        "    {} ({})\n",
                        prog.describe(n),
                        prog.process_name(prog.graph.nodes[n].process)
                    ));
                }
            }
        }
        Verdict::Unknown { reasons } => {
            out.push_str("unknown: the analysis cannot decide\n");
            for r in reasons {
                out.push_str(&format!("  {r}\n"));
            }
        }
    }
    out
}

/// The component whose process holds node `n`, for a report.
fn process_of(prog: &Program, n: NodeId, components: &[Component]) -> String {
    let name = prog.process_name(prog.graph.nodes[n].process);
    components
        .iter()
        .find(|c| c.process == name)
        .map(|c| c.to_string())
        .unwrap_or(name)
}
