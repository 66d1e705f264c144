//! Time-space diagrams: a line per process, events as dots, synchronization edges as arrows,
//! races highlighted, the halt cut drawn across.
//!
//! The layout keeps large runs readable. Only events that matter between processes are dots
//! (the synchronization nodes of the parallel dynamic graph, race sides, the ends of each
//! process, marks, the events next to the halt cut, sends nobody received); each run of local
//! events between them is collapsed into one box that says how many it holds. Columns are
//! Lamport times over these items — an item sits one column after its predecessor on the line
//! and after the start of every arrow into it — so arrows always point rightwards and the
//! diagram is as narrow as the causal structure allows. The renderers ([`svg`], [`html`],
//! [`dot`]) only draw this model.

pub mod dot;
pub mod html;
pub mod svg;

use std::collections::{BTreeSet, HashMap};

use serde::Serialize;

use crate::deadlock::{Ending, deadlocks};
use crate::halt::HaltCut;
use crate::message_races::MessageRace;
use crate::races::DataRace;
use crate::reads_from::reads_from;
use crate::trace::{EventRef, Op, Trace};
use crate::vclock::Clocks;

/// Horizontal distance between columns, in pixels.
pub const COLUMN: f64 = 28.0;
/// Vertical distance between process lines, in pixels.
pub const LANE: f64 = 48.0;
/// Left margin (process names), in pixels.
pub const LEFT: f64 = 160.0;
/// Top margin, in pixels.
pub const TOP: f64 = 36.0;

/// A process line.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Lane {
    /// Process id number.
    pub pid: u32,
    /// Process name.
    pub name: String,
    /// Its number of events.
    pub events: u32,
    /// `ended`, `blocked` or `running` (when the recording stopped).
    pub ending: &'static str,
}

/// An event drawn as a dot.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Node {
    /// Its line.
    pub lane: u32,
    /// Its column.
    pub col: u32,
    /// Its index in the process's log.
    pub event: u32,
    /// Its kind (`send`, `recv`, `lock`, ...).
    pub kind: &'static str,
    /// How it is drawn: `sync`, `race`, `blocked`, `end`, `mark` or `local`.
    pub class: &'static str,
    /// What a tooltip says.
    pub label: String,
    /// Greyed out: outside the part of the run the diagram focuses on ([`Diagram::focus`]).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub dim: bool,
}

/// A collapsed run of local events.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Run {
    /// Its line.
    pub lane: u32,
    /// Its column.
    pub col: u32,
    /// Index of its first event.
    pub first: u32,
    /// How many events it holds.
    pub count: u32,
}

/// A synchronization edge between two dots.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Arrow {
    /// Index of the start node.
    pub from: u32,
    /// Index of the end node.
    pub to: u32,
    /// Its kind (`message`, `lock`, `spawn`, ...; `reads_from`: a data edge, a read of an
    /// atomic to the write it read, which orders nothing).
    pub kind: &'static str,
    /// Greyed out: an end is outside the part of the run the diagram focuses on.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub dim: bool,
}

/// A race between two dots.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RaceLink {
    /// One side's node.
    pub a: u32,
    /// The other side's node.
    pub b: u32,
    /// `data` or `message`.
    pub kind: &'static str,
    /// The variable or channel.
    pub var: String,
    /// How many racing pairs share these sites.
    pub count: u64,
}

/// Where the halt cut crosses each line.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CutLine {
    /// The predicate that halted the replay.
    pub predicate: String,
    /// Per line (in lane order), the column the cut crosses it at.
    pub cols: Vec<f64>,
    /// Whether no synchronization edge enters the cut from outside.
    pub consistent: bool,
}

/// A laid-out diagram.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Diagram {
    /// What it shows.
    pub title: String,
    /// The processes.
    pub lanes: Vec<Lane>,
    /// The dots.
    pub nodes: Vec<Node>,
    /// The collapsed runs.
    pub runs: Vec<Run>,
    /// The arrows.
    pub arrows: Vec<Arrow>,
    /// The races.
    pub races: Vec<RaceLink>,
    /// The halt cut, if a replay halted.
    pub cut: Option<CutLine>,
    /// Number of columns.
    pub columns: u32,
    /// Number of events of the run.
    pub events: u64,
}

impl Diagram {
    /// Width in pixels.
    pub fn width(&self) -> f64 {
        LEFT + f64::from(self.columns) * COLUMN + 40.0
    }

    /// Height in pixels.
    pub fn height(&self) -> f64 {
        TOP + self.lanes.len() as f64 * LANE + 10.0
    }

    /// X of a column.
    pub fn x(col: f64) -> f64 {
        LEFT + col * COLUMN
    }

    /// Y of a line.
    pub fn y(lane: u32) -> f64 {
        TOP + f64::from(lane) * LANE
    }

    /// Counts of arrows by kind, for summaries and tests.
    pub fn arrow_count(&self, kind: &str) -> usize {
        self.arrows.iter().filter(|a| a.kind == kind).count()
    }

    /// Greys out every dot that is not one of `events`, and every arrow with such an end: the
    /// diagram of one task (`ppd graph --task N`) in the context of the whole run.
    pub fn focus(&mut self, events: &BTreeSet<EventRef>) {
        for node in &mut self.nodes {
            node.dim = !events.contains(&EventRef::new(node.lane, node.event));
        }
        for arrow in &mut self.arrows {
            arrow.dim = self.nodes[arrow.from as usize].dim || self.nodes[arrow.to as usize].dim;
        }
    }

    /// Lays out the diagram of a run.
    pub fn build(
        title: &str,
        trace: &Trace,
        clocks: &Clocks,
        data: &[DataRace],
        messages: &[MessageRace],
        cut: Option<&HaltCut>,
    ) -> Diagram {
        let n = trace.processes().len();
        let ends = deadlocks(trace).endings;
        let mut shown: Vec<BTreeSet<u32>> = vec![BTreeSet::new(); n];
        for (p, proc) in trace.processes().iter().enumerate() {
            if let Some(last) = proc.events.len().checked_sub(1) {
                shown[p].insert(0);
                shown[p].insert(last as u32);
            }
            for (k, ev) in proc.events.iter().enumerate() {
                if matches!(ev.op, Op::Mark { .. } | Op::Send { .. }) {
                    shown[p].insert(k as u32);
                }
            }
        }
        for e in clocks.edges() {
            shown[e.from.process as usize].insert(e.from.index);
            shown[e.to.process as usize].insert(e.to.index);
        }
        let data_edges = reads_from(trace);
        for e in &data_edges {
            shown[e.from.process as usize].insert(e.from.index);
            shown[e.to.process as usize].insert(e.to.index);
        }
        let mut race_pairs: Vec<(EventRef, EventRef, &'static str, String, u64)> = Vec::new();
        for r in data {
            race_pairs.push((r.a, r.b, "data", trace.object(r.object).label(), r.count));
        }
        for r in messages {
            race_pairs.push((
                r.received,
                r.other,
                "message",
                trace.object(r.channel).label(),
                r.count,
            ));
        }
        let race_events: BTreeSet<EventRef> = race_pairs.iter().flat_map(|r| [r.0, r.1]).collect();
        for e in &race_events {
            shown[e.process as usize].insert(e.index);
        }
        let cut_at: Option<Vec<u64>> =
            cut.map(|c| (0..n as u32).map(|p| c.events_of(trace, p)).collect());
        if let Some(at) = &cut_at {
            for (p, &k) in at.iter().enumerate() {
                let len = trace.processes()[p].events.len() as u64;
                for i in [k.checked_sub(1), Some(k)].into_iter().flatten() {
                    if i < len {
                        shown[p].insert(i as u32);
                    }
                }
            }
        }

        // Items per lane: dots and collapsed runs, in event order.
        let received: BTreeSet<EventRef> = clocks
            .edges()
            .iter()
            .filter(|e| e.kind == crate::hb::SyncKind::Message)
            .map(|e| e.from)
            .collect();
        let endpoints: BTreeSet<EventRef> =
            clocks.edges().iter().flat_map(|e| [e.from, e.to]).collect();
        let mut nodes: Vec<Node> = Vec::new();
        let mut runs: Vec<Run> = Vec::new();
        let mut node_of: HashMap<EventRef, u32> = HashMap::new();
        // Per lane: items as (is_node, index into nodes or runs).
        let mut items: Vec<Vec<(bool, usize)>> = vec![Vec::new(); n];
        for (p, proc) in trace.processes().iter().enumerate() {
            let mut k = 0u32;
            let len = proc.events.len() as u32;
            let points: Vec<u32> = shown[p].iter().copied().collect();
            let mut next_point = 0;
            while k < len {
                if next_point < points.len() && points[next_point] == k {
                    let e = EventRef::new(p as u32, k);
                    let op = proc.events[k as usize].op;
                    let class = if race_events.contains(&e) {
                        "race"
                    } else if k + 1 == len && ends[p] == Ending::Blocked {
                        "blocked"
                    } else if op.is_end() {
                        "end"
                    } else if matches!(op, Op::Mark { .. }) {
                        "mark"
                    } else if endpoints.contains(&e) {
                        "sync"
                    } else {
                        "local"
                    };
                    let mut label = format!("{} #{k}: {}", proc.name, trace.describe(e));
                    if matches!(op, Op::Send { .. }) && !received.contains(&e) {
                        label.push_str(" (never received)");
                    }
                    node_of.insert(e, nodes.len() as u32);
                    items[p].push((true, nodes.len()));
                    nodes.push(Node {
                        lane: p as u32,
                        col: 0,
                        event: k,
                        kind: op.kind_name(),
                        class,
                        label,
                        dim: false,
                    });
                    next_point += 1;
                    k += 1;
                } else {
                    let end = points.get(next_point).copied().unwrap_or(len);
                    items[p].push((false, runs.len()));
                    runs.push(Run {
                        lane: p as u32,
                        col: 0,
                        first: k,
                        count: end - k,
                    });
                    k = end;
                }
            }
        }
        let arrows: Vec<Arrow> = clocks
            .edges()
            .iter()
            .map(|e| (e.from, e.to, e.kind.name()))
            .chain(
                data_edges
                    .iter()
                    .map(|e| (e.from, e.to, crate::reads_from::KIND)),
            )
            .filter_map(|(from, to, kind)| {
                Some(Arrow {
                    from: *node_of.get(&from)?,
                    to: *node_of.get(&to)?,
                    kind,
                    dim: false,
                })
            })
            .collect();
        let columns = assign_columns(&items, &mut nodes, &mut runs, &arrows);
        let races = race_pairs
            .into_iter()
            .filter_map(|(a, b, kind, var, count)| {
                Some(RaceLink {
                    a: *node_of.get(&a)?,
                    b: *node_of.get(&b)?,
                    kind,
                    var,
                    count,
                })
            })
            .collect();
        let cut = cut.zip(cut_at).map(|(c, at)| {
            let cols = (0..n)
                .map(|p| {
                    let col_of = |k: u64| {
                        node_of
                            .get(&EventRef::new(p as u32, k as u32))
                            .map(|&i| f64::from(nodes[i as usize].col))
                    };
                    let before = at[p].checked_sub(1).and_then(col_of);
                    let after = col_of(at[p]);
                    match (before, after) {
                        (Some(b), Some(a)) => (a + b) / 2.0,
                        (Some(b), None) => b + 0.5,
                        (None, Some(a)) => a - 0.5,
                        (None, None) => -0.5,
                    }
                })
                .collect();
            CutLine {
                predicate: c.predicate.clone(),
                cols,
                consistent: c.crossing_edges(trace, clocks).is_empty(),
            }
        });
        let lanes = trace
            .processes()
            .iter()
            .enumerate()
            .map(|(p, proc)| Lane {
                pid: proc.id.0,
                name: proc.name.clone(),
                events: proc.events.len() as u32,
                ending: match ends[p] {
                    Ending::Ended => "ended",
                    Ending::Blocked => "blocked",
                    Ending::Running => "running",
                },
            })
            .collect();
        Diagram {
            title: title.to_owned(),
            lanes,
            nodes,
            runs,
            arrows,
            races,
            cut,
            columns,
            events: trace.event_count(),
        }
    }
}

/// The state of [`assign_columns`]'s worklist.
struct Placing {
    placed: Vec<bool>,
    next: Vec<usize>,
    last_col: Vec<Option<u32>>,
    /// Lines waiting for a node to be placed, by node.
    waiting: HashMap<u32, Vec<usize>>,
    stack: Vec<usize>,
    columns: u32,
}

impl Placing {
    /// The column after the last item placed on line `p`.
    fn after_last(&self, p: usize) -> u32 {
        self.last_col[p].map(|c| c + 1).unwrap_or(0)
    }

    /// Puts line `p`'s next item, `(is_node, i)`, in column `col`; the lines that waited for
    /// it go back on the worklist.
    fn place(
        &mut self,
        p: usize,
        (is_node, i): (bool, usize),
        col: u32,
        nodes: &mut [Node],
        runs: &mut [Run],
    ) {
        if is_node {
            nodes[i].col = col;
            self.placed[i] = true;
            if let Some(ws) = self.waiting.remove(&(i as u32)) {
                self.stack.extend(ws);
            }
        } else {
            runs[i].col = col;
        }
        self.last_col[p] = Some(col);
        self.columns = self.columns.max(col + 1);
        self.next[p] += 1;
    }
}

/// Gives every item a column: one after its predecessor on its line and after the start of
/// every arrow into it. A worklist over the lines, like the clock computation; arrows come
/// from happened-before, so nothing waits forever (a damaged input is let through).
fn assign_columns(
    items: &[Vec<(bool, usize)>],
    nodes: &mut [Node],
    runs: &mut [Run],
    arrows: &[Arrow],
) -> u32 {
    let n = items.len();
    let mut incoming: HashMap<u32, Vec<u32>> = HashMap::new();
    for a in arrows {
        incoming.entry(a.to).or_default().push(a.from);
    }
    let mut st = Placing {
        placed: vec![false; nodes.len()],
        next: vec![0usize; n],
        last_col: vec![None; n],
        waiting: HashMap::new(),
        stack: (0..n).rev().collect(),
        columns: 0,
    };
    loop {
        while let Some(p) = st.stack.pop() {
            'items: while st.next[p] < items[p].len() {
                let item @ (is_node, i) = items[p][st.next[p]];
                let mut col = st.after_last(p);
                if is_node {
                    for &src in incoming.get(&(i as u32)).into_iter().flatten() {
                        if !st.placed[src as usize] {
                            st.waiting.entry(src).or_default().push(p);
                            break 'items;
                        }
                        col = col.max(nodes[src as usize].col + 1);
                    }
                }
                st.place(p, item, col, nodes, runs);
            }
        }
        let Some(p) = (0..n).find(|&p| st.next[p] < items[p].len()) else {
            break;
        };
        // Only reachable with arrows that point backwards (damaged input).
        let col = st.after_last(p);
        st.place(p, items[p][st.next[p]], col, nodes, runs);
        st.stack.push(p);
    }
    st.columns
}

/// Escapes text for XML and HTML.
pub(crate) fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests;
