//! Time-space diagrams: a line per process, events as dots, synchronization edges as arrows,
//! races highlighted, the halt cut drawn across.
//!
//! The layout keeps large runs readable. Only events that matter between processes are dots
//! (the synchronization nodes of the parallel dynamic graph, race sides, the ends of each
//! process, marks, the events next to the halt cut, sends nobody received, and an atomic
//! write and the read of another process that read it when the write releases and the read
//! acquires); each run of local events between them is collapsed into one box that says how
//! many it holds. A relaxed read of another process's write is a `reads_from` arrow when both
//! ends are dots anyway, and bundled with the boxes holding its ends otherwise. Columns are
//! Lamport times over these items — an item sits one column after its predecessor on the line
//! and after the start of every arrow into it — so arrows always point rightwards and the
//! diagram is as narrow as the causal structure allows. The renderers ([`svg`], [`html`],
//! [`dot`]) only draw this model.
//!
//! A run of millions of events has millions of such dots. Past a budget of dots the diagram is
//! an overview: only some stretches of Lamport time are drawn in detail — the start and end of
//! the window, then the neighbourhoods of races, blocked and panicked ends, the halt cut, the
//! task in focus and marks, in that order, as many as the budget holds. The events in between
//! are collapsed into boxes (which say how many of their events synchronize), the edges with
//! an end in a box are bundled into one line per pair of items and kind, with their count,
//! and [`Diagram::left_out`] says in sentences what was not drawn. A [`Window`] zooms: only
//! its processes and Lamport times are laid out.

mod density;
pub mod dot;
pub mod html;
mod select;
pub mod svg;

use std::collections::{BTreeSet, HashMap};

use serde::Serialize;

use crate::deadlock::{Ending, deadlocks};
use crate::fasthash::FastMap;
use crate::halt::HaltCut;
use crate::lamport::lamport;
use crate::message_races::MessageRace;
use crate::races::DataRace;
use crate::reads_from::{ReadsFrom, reads_from};
use crate::trace::{EventRef, Op, Trace};
use crate::vclock::Clocks;
use crate::window::Window;
pub use density::{Density, Landmark};
use ppd_formats::order::Tick;
use ppd_formats::progress;
use select::{Inputs, Selection};

/// Horizontal distance between columns, in pixels.
pub const COLUMN: f64 = 28.0;
/// Vertical distance between process lines, in pixels.
pub const LANE: f64 = 48.0;
/// Left margin (process names), in pixels.
pub const LEFT: f64 = 160.0;
/// Top margin, in pixels.
pub const TOP: f64 = 36.0;
/// Height of a line of notes below the diagram, in pixels.
pub const NOTE: f64 = 16.0;

/// A process line.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Lane {
    /// Its process's index in the trace.
    #[serde(skip)]
    pub process: u32,
    /// Process id number.
    pub pid: u32,
    /// Process name.
    pub name: String,
    /// Its number of events.
    pub events: u32,
    /// `ended`, `blocked` or `running` (when the recording stopped).
    pub ending: &'static str,
    /// The Lamport times of its first and last event in the window (none: it has no event
    /// there).
    pub span: Option<(Tick, Tick)>,
}

/// An event drawn as a dot.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Dot {
    /// Its line.
    pub lane: u32,
    /// Its column.
    #[serde(skip)]
    pub col: u32,
    /// Its Lamport time.
    pub time: Tick,
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
    #[serde(skip)]
    pub col: u32,
    /// The Lamport times of its first and last event.
    pub from: Tick,
    /// See `from`.
    pub to: Tick,
    /// Index of its first event.
    pub first: u32,
    /// How many events it holds.
    pub count: u32,
    /// How many of them the full diagram draws as dots (an overview collapses them).
    #[serde(skip_serializing_if = "is_zero")]
    pub hidden: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// The synchronization edges of one kind between two items (dots or boxes) that are not both
/// dots, drawn as one line with their count.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Bundle {
    /// The line of the item the edges start in.
    pub from_lane: u32,
    /// Its column.
    #[serde(skip)]
    pub from_col: u32,
    /// Its Lamport time (a box's: the middle of its span).
    pub from_time: Tick,
    /// The line of the item they end in.
    pub to_lane: u32,
    /// Its column.
    #[serde(skip)]
    pub to_col: u32,
    /// Its Lamport time, as `from_time`.
    pub to_time: Tick,
    /// Their kind (`message`, `lock`, `spawn`, ...).
    pub kind: &'static str,
    /// How many edges.
    pub count: u64,
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
    #[serde(skip)]
    pub cols: Vec<f64>,
    /// Per line, the Lamport time it crosses it at: between its last event inside and its
    /// first outside.
    pub times: Vec<f64>,
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
    pub nodes: Vec<Dot>,
    /// The collapsed runs.
    pub runs: Vec<Run>,
    /// The arrows.
    pub arrows: Vec<Arrow>,
    /// The bundled edges (in an overview or a window).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub bundles: Vec<Bundle>,
    /// The races.
    pub races: Vec<RaceLink>,
    /// The halt cut, if a replay halted.
    pub cut: Option<CutLine>,
    /// Number of columns.
    #[serde(skip)]
    pub columns: u32,
    /// Number of events of the run.
    pub events: u64,
    /// The Lamport times of the first and last event the diagram shows (none: it shows none).
    pub span: Option<(Tick, Tick)>,
    /// Whether only some stretches are drawn in detail (see the module documentation).
    pub overview: bool,
    /// How many events each line has in each stretch of Lamport time.
    pub density: Density,
    /// Where the events that matter are, dots or not.
    pub landmarks: Vec<Landmark>,
    /// What the diagram does not draw, in sentences (nothing for a full diagram of the run).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub left_out: Vec<String>,
}

/// How much the full diagram of a window draws, counted without laying it out: what a size
/// estimate starts from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Size {
    /// Dots.
    pub dots: u64,
    /// Arrows.
    pub arrows: u64,
    /// Boxes of local events.
    pub runs: u64,
    /// Counts of the density (events per line and stretch of Lamport time).
    pub cells: u64,
}

/// What a diagram is drawn from: the analyses it needs (Lamport times, race sides, how each
/// process ended, which write each atomic read read) and the dots `view` chose. Computed once,
/// so that `--full`'s size estimate and the picture it announces are the same diagram.
#[derive(Debug)]
pub struct Plan {
    times: Vec<Vec<Tick>>,
    race_pairs: Vec<RacePair>,
    ends: Vec<Ending>,
    data_edges: Vec<ReadsFrom>,
    cut_at: Option<Vec<u64>>,
    selection: Selection,
}

impl Plan {
    /// Chooses the dots of the part of a run `view` chooses.
    pub fn new(
        trace: &Trace,
        clocks: &Clocks,
        data: &[DataRace],
        messages: &[MessageRace],
        cut: Option<&HaltCut>,
        view: &View,
    ) -> Plan {
        let n = trace.processes().len();
        progress::stage("finding how each process ended", None);
        let ends = deadlocks(trace).endings;
        let times = lamport(trace, clocks);
        let race_pairs = race_pairs(trace, data, messages);
        progress::stage("finding which write each atomic read read", None);
        let data_edges = reads_from(trace);
        let cut_at: Option<Vec<u64>> =
            cut.map(|c| (0..n as u32).map(|p| c.events_of(trace, p)).collect());
        let mut chosen: Vec<EventRef> = view.chosen.clone();
        if let Some(at) = &cut_at {
            for (p, &k) in at.iter().enumerate() {
                let len = trace.processes()[p].events.len() as u64;
                for i in [k.checked_sub(1), Some(k)].into_iter().flatten() {
                    if i < len {
                        chosen.push(EventRef::new(p as u32, i as u32));
                    }
                }
            }
        }
        let races: BTreeSet<EventRef> = race_pairs.iter().flat_map(|r| [r.0, r.1]).collect();
        let races: Vec<EventRef> = races.into_iter().collect();
        let selection = Selection::choose(
            &Inputs {
                trace,
                clocks,
                times: &times,
                window: &view.window,
                endings: &ends,
                races: &races,
                chosen: &chosen,
                data_edges: &data_edges,
            },
            view.budget,
        );
        Plan {
            times,
            race_pairs,
            ends,
            data_edges,
            cut_at,
            selection,
        }
    }

    /// Counts the diagram this plan draws.
    pub fn size(&self, clocks: &Clocks) -> Size {
        let (selection, data_edges) = (&self.selection, &self.data_edges);
        let mut size = Size::default();
        for (dots, range) in selection.dots.iter().zip(&selection.ranges) {
            size.dots += dots.len() as u64;
            let mut next = range.start;
            for &k in dots {
                size.runs += u64::from(k > next);
                next = k + 1;
            }
            size.runs += u64::from(range.end > next);
        }
        // Arrows join dots; an edge with an end inside a box is bundled instead.
        let is_dot = |e: EventRef| {
            selection
                .dots
                .get(e.process as usize)
                .is_some_and(|d| d.binary_search(&e.index).is_ok())
        };
        let sync_arrows = clocks
            .edges()
            .iter()
            .filter(|e| is_dot(e.from) && is_dot(e.to))
            .count();
        let data_arrows = data_edges
            .iter()
            .filter(|e| is_dot(e.from) && is_dot(e.to))
            .count();
        size.arrows = (sync_arrows + data_arrows) as u64;
        let spans = selection
            .ranges
            .iter()
            .zip(&self.times)
            .filter_map(|(range, times)| lane_span(times, range));
        let lanes = spans.clone().count();
        if let Some(span) = spans.reduce(|a, b| (a.0.min(b.0), a.1.max(b.1))) {
            size.cells = (lanes * density::bins(lanes, span).1) as u64;
        }
        size
    }
}

/// What part of a run a diagram shows, and in how much detail.
#[derive(Clone, Debug)]
pub struct View {
    /// The processes and Lamport times shown.
    pub window: Window,
    /// At most this many dots: past it, an overview (see the module documentation). `None`:
    /// every dot.
    pub budget: Option<usize>,
    /// Events whose neighbourhood an overview draws in detail (the task in focus).
    pub chosen: Vec<EventRef>,
}

impl Diagram {
    /// Width in pixels.
    pub fn width(&self) -> f64 {
        LEFT + f64::from(self.columns) * COLUMN + 40.0
    }

    /// Height in pixels.
    pub fn height(&self) -> f64 {
        TOP + self.lanes.len() as f64 * LANE + 10.0 + NOTE * self.left_out.len() as f64
    }

    /// Y of the `i`th note of what the diagram left out, below the lines.
    pub fn notes_y(&self, i: usize) -> f64 {
        TOP + self.lanes.len() as f64 * LANE + NOTE * i as f64
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
            let process = self.lanes[node.lane as usize].process;
            node.dim = !events.contains(&EventRef::new(process, node.event));
        }
        for arrow in &mut self.arrows {
            arrow.dim = self.nodes[arrow.from as usize].dim || self.nodes[arrow.to as usize].dim;
        }
    }

    /// Lays out the full diagram of a run.
    pub fn build(
        title: &str,
        trace: &Trace,
        clocks: &Clocks,
        data: &[DataRace],
        messages: &[MessageRace],
        cut: Option<&HaltCut>,
    ) -> Diagram {
        let view = View {
            window: Window::all(trace),
            budget: None,
            chosen: Vec::new(),
        };
        Diagram::build_view(title, trace, clocks, data, messages, cut, &view)
    }

    /// Lays out the diagram of the part of a run `view` chooses: everything in its window when
    /// that fits its budget, an overview otherwise (see the module documentation).
    pub fn build_view(
        title: &str,
        trace: &Trace,
        clocks: &Clocks,
        data: &[DataRace],
        messages: &[MessageRace],
        cut: Option<&HaltCut>,
        view: &View,
    ) -> Diagram {
        let plan = Plan::new(trace, clocks, data, messages, cut, view);
        Diagram::from_plan(title, trace, clocks, cut, view, plan)
    }

    /// Lays out the diagram `plan` chose for `view`, in phases: the lines, the items on each
    /// line, the edges between them, the columns, then the cut, the lines' spans and the notes.
    pub fn from_plan(
        title: &str,
        trace: &Trace,
        clocks: &Clocks,
        cut: Option<&HaltCut>,
        view: &View,
        plan: Plan,
    ) -> Diagram {
        let Plan {
            times,
            race_pairs,
            ends,
            data_edges,
            cut_at,
            selection,
        } = plan;
        let n = trace.processes().len();
        let race_events: BTreeSet<EventRef> = race_pairs.iter().flat_map(|r| [r.0, r.1]).collect();
        let lane_of = lane_numbers(n, &view.window);
        let mut items = Items::lay_out(trace, &times, &ends, &selection, &lane_of, &race_events);
        let links = items.connect(clocks, &data_edges, &selection);
        let columns = assign_columns(
            &items.items,
            &mut items.nodes,
            &mut items.runs,
            &links.arrows,
        );
        let bundles = items.bundles(links.bundled);
        let node_of = &items.node_of;
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
        let shown: Vec<usize> = (0..n).filter(|&p| lane_of[p].is_some()).collect();
        let cut = cut
            .zip(cut_at)
            .map(|(c, at)| items.cut_line(c, &at, trace, clocks, &times, &shown));
        let lanes = shown
            .iter()
            .map(|&p| {
                let proc = &trace.processes()[p];
                Lane {
                    process: p as u32,
                    pid: proc.id.0,
                    name: proc.name.clone(),
                    events: proc.events.len() as u32,
                    ending: match ends[p] {
                        Ending::Ended => "ended",
                        Ending::Blocked => "blocked",
                        Ending::Running => "running",
                    },
                    span: lane_span(&times[p], &selection.ranges[p]),
                }
            })
            .collect::<Vec<Lane>>();
        let span = lanes
            .iter()
            .filter_map(|l| l.span)
            .reduce(|a, b| (a.0.min(b.0), a.1.max(b.1)));
        let (density, landmarks) = density::summarize(
            &density::Inputs {
                trace,
                times: &times,
                ranges: &selection.ranges,
                shown: &shown,
                races: &race_events,
                endings: &ends,
            },
            span,
        );
        let Items { nodes, runs, .. } = items;
        let left_out = left_out(
            trace,
            &view.window,
            &selection,
            &runs,
            &bundles,
            links.outside,
        );
        Diagram {
            title: title.to_owned(),
            lanes,
            nodes,
            runs,
            arrows: links.arrows,
            bundles,
            races,
            cut,
            columns,
            events: trace.event_count(),
            span,
            overview: selection.overview,
            density,
            landmarks,
            left_out,
        }
    }
}

/// The line of each process, numbered from the top: only the processes the window shows have
/// one.
fn lane_numbers(n: usize, window: &Window) -> Vec<Option<u32>> {
    let mut next = 0;
    (0..n as u32)
        .map(|p| {
            window.shows(p).then(|| {
                next += 1;
                next - 1
            })
        })
        .collect()
}

/// The items of every line: dots and collapsed runs, in event order.
struct Items {
    nodes: Vec<Dot>,
    runs: Vec<Run>,
    node_of: FastMap<EventRef, u32>,
    /// Per process: items as (is_node, index into nodes or runs).
    items: Vec<Vec<(bool, usize)>>,
    /// Per process: each item's first event.
    starts: Vec<Vec<u32>>,
}

/// How the edges of the run are drawn between the items.
struct Links {
    /// The edges between two dots.
    arrows: Vec<Arrow>,
    /// The other edges inside the window, counted per pair of items and kind.
    bundled: FastMap<(ItemAt, ItemAt, &'static str), u64>,
    /// The edges with an end outside the window.
    outside: u64,
}

impl Items {
    /// Makes a dot of each event the selection chose on a shown line and a run of each stretch
    /// between them.
    fn lay_out(
        trace: &Trace,
        times: &[Vec<Tick>],
        ends: &[Ending],
        selection: &Selection,
        lane_of: &[Option<u32>],
        race_events: &BTreeSet<EventRef>,
    ) -> Items {
        let n = trace.processes().len();
        let inside: u64 = selection
            .ranges
            .iter()
            .map(|r| u64::from(r.len() as u32))
            .sum();
        let mut counted = progress::pass("laying out the picture", inside);
        let mut laid = Items {
            nodes: Vec::new(),
            runs: Vec::new(),
            node_of: FastMap::default(),
            items: vec![Vec::new(); n],
            starts: vec![Vec::new(); n],
        };
        for (p, proc) in trace.processes().iter().enumerate() {
            let Some(lane) = lane_of[p] else {
                continue;
            };
            let range = selection.ranges[p].clone();
            let points = &selection.dots[p];
            let candidates = &selection.candidates[p];
            let mut k = range.start;
            let mut next_point = 0;
            while k < range.end {
                laid.starts[p].push(k);
                if next_point < points.len() && points[next_point] == k {
                    let e = EventRef::new(p as u32, k);
                    let op = proc.events[k as usize].op;
                    let class = if race_events.contains(&e) {
                        "race"
                    } else if k as usize + 1 == proc.events.len() && ends[p] == Ending::Blocked {
                        "blocked"
                    } else if op.is_end() {
                        "end"
                    } else if matches!(op, Op::Mark { .. }) {
                        "mark"
                    } else {
                        // Made `sync` in `connect` when an edge ends here.
                        "local"
                    };
                    let mut label = format!("{} #{k}: {}", proc.name, trace.describe(e));
                    if selection.overview {
                        label.push_str(&format!(" (Lamport time {})", times[p][k as usize]));
                    }
                    laid.node_of.insert(e, laid.nodes.len() as u32);
                    laid.items[p].push((true, laid.nodes.len()));
                    laid.nodes.push(Dot {
                        lane,
                        col: 0,
                        time: times[p][k as usize],
                        event: k,
                        kind: op.kind_name(),
                        class,
                        label,
                        dim: false,
                    });
                    next_point += 1;
                    k += 1;
                    counted.add(1);
                } else {
                    let end = points.get(next_point).copied().unwrap_or(range.end);
                    let hidden = candidates.partition_point(|&c| c < end)
                        - candidates.partition_point(|&c| c < k);
                    laid.items[p].push((false, laid.runs.len()));
                    laid.runs.push(Run {
                        lane,
                        col: 0,
                        from: times[p][k as usize],
                        to: times[p][end as usize - 1],
                        first: k,
                        count: end - k,
                        hidden: hidden as u32,
                    });
                    counted.add(u64::from(end - k));
                    k = end;
                }
            }
        }
        laid
    }

    /// Draws the happened-before and reads-from edges: those between dots are arrows, the
    /// others, between the items holding their ends, are bundled. A dot an edge ends at is a
    /// `sync` dot, and a send no edge leaves says it was never received.
    fn connect(
        &mut self,
        clocks: &Clocks,
        data_edges: &[ReadsFrom],
        selection: &Selection,
    ) -> Links {
        let item_of = |e: EventRef| -> Option<ItemAt> {
            let p = e.process as usize;
            if !selection.ranges.get(p)?.contains(&e.index) {
                return None;
            }
            let i = self.starts[p]
                .partition_point(|&s| s <= e.index)
                .checked_sub(1)?;
            Some((p as u32, i))
        };
        let mut links = Links {
            arrows: Vec::new(),
            bundled: FastMap::default(),
            outside: 0,
        };
        let mut received: BTreeSet<u32> = BTreeSet::new();
        let edges = clocks
            .edges()
            .iter()
            .map(|e| {
                (
                    e.from,
                    e.to,
                    e.kind.name(),
                    e.kind == crate::vclock::hb::SyncKind::Message,
                )
            })
            .chain(
                data_edges
                    .iter()
                    .map(|e| (e.from, e.to, crate::reads_from::KIND, false)),
            );
        for (edge_from, edge_to, kind, is_message) in edges {
            let (from, to) = (
                self.node_of.get(&edge_from).copied(),
                self.node_of.get(&edge_to).copied(),
            );
            for i in [from, to].into_iter().flatten() {
                if self.nodes[i as usize].class == "local" {
                    self.nodes[i as usize].class = "sync";
                }
            }
            if let Some(from) = from
                && is_message
            {
                received.insert(from);
            }
            match (from, to) {
                (Some(from), Some(to)) => links.arrows.push(Arrow {
                    from,
                    to,
                    kind,
                    dim: false,
                }),
                _ => match (item_of(edge_from), item_of(edge_to)) {
                    (Some(a), Some(b)) => *links.bundled.entry((a, b, kind)).or_default() += 1,
                    _ => links.outside += 1,
                },
            }
        }
        for (i, node) in self.nodes.iter_mut().enumerate() {
            if node.kind == "send" && !received.contains(&(i as u32)) {
                node.label.push_str(" (never received)");
            }
        }
        links
    }

    /// Where an item is drawn: its line, its column and its Lamport time (a run's middle one).
    fn place(&self, (p, i): ItemAt) -> (u32, u32, Tick) {
        let (is_node, j) = self.items[p as usize][i];
        if is_node {
            let d = &self.nodes[j];
            (d.lane, d.col, d.time)
        } else {
            let r = &self.runs[j];
            (r.lane, r.col, r.from + (r.to - r.from) / 2)
        }
    }

    /// The bundles of the edges `connect` counted, between the placed items, in column order.
    fn bundles(&self, bundled: FastMap<(ItemAt, ItemAt, &'static str), u64>) -> Vec<Bundle> {
        let mut bundles: Vec<Bundle> = bundled
            .into_iter()
            .map(|((a, b, kind), count)| {
                let (from_lane, from_col, from_time) = self.place(a);
                let (to_lane, to_col, to_time) = self.place(b);
                Bundle {
                    from_lane,
                    from_col,
                    from_time,
                    to_lane,
                    to_col,
                    to_time,
                    kind,
                    count,
                }
            })
            .collect();
        bundles.sort_by_key(|b| (b.from_col, b.from_lane, b.to_col, b.to_lane, b.kind));
        bundles
    }

    /// The halt cut across the shown lines, each process's crossing at `at` placed between
    /// its last event before the cut and its first after, by Lamport time and by column.
    fn cut_line(
        &self,
        cut: &HaltCut,
        at: &[u64],
        trace: &Trace,
        clocks: &Clocks,
        times: &[Vec<Tick>],
        shown: &[usize],
    ) -> CutLine {
        let times = shown
            .iter()
            .map(|&p| {
                let time_of = |k: u64| times[p].get(k as usize).map(|&t| f64::from(t));
                between(at[p].checked_sub(1).and_then(time_of), time_of(at[p]))
            })
            .collect();
        let cols = shown
            .iter()
            .map(|&p| {
                let col_of = |k: u64| {
                    self.node_of
                        .get(&EventRef::new(p as u32, k as u32))
                        .map(|&i| f64::from(self.nodes[i as usize].col))
                };
                between(at[p].checked_sub(1).and_then(col_of), col_of(at[p]))
            })
            .collect();
        CutLine {
            predicate: cut.predicate.clone(),
            cols,
            times,
            consistent: cut.crossing_edges(trace, clocks).is_empty(),
        }
    }
}

/// Where a cut crosses a line, between the positions of the events `before` and `after` it: the
/// middle when both are drawn, half a step beside the one that is otherwise.
fn between(before: Option<f64>, after: Option<f64>) -> f64 {
    match (before, after) {
        (Some(b), Some(a)) => (a + b) / 2.0,
        (Some(b), None) => b + 0.5,
        (None, Some(a)) => a - 0.5,
        (None, None) => -0.5,
    }
}

/// The Lamport times of the first and last of `range`, events of a process whose times are
/// `times`.
fn lane_span(times: &[Tick], range: &std::ops::Range<u32>) -> Option<(Tick, Tick)> {
    if range.is_empty() {
        return None;
    }
    Some((times[range.start as usize], times[range.end as usize - 1]))
}

/// A race's two sides, kind (`data` or `message`), variable or channel, and count.
type RacePair = (EventRef, EventRef, &'static str, String, u64);

/// The races to draw.
fn race_pairs(trace: &Trace, data: &[DataRace], messages: &[MessageRace]) -> Vec<RacePair> {
    let mut pairs: Vec<RacePair> = Vec::new();
    for r in data {
        pairs.push((r.a, r.b, "data", trace.object(r.object).label(), r.count));
    }
    for r in messages {
        pairs.push((
            r.received,
            r.other,
            "message",
            trace.object(r.channel).label(),
            r.count,
        ));
    }
    pairs
}

/// An item of a line: its process and its place among the process's items.
type ItemAt = (u32, usize);

/// What a diagram does not draw, in sentences: the hidden processes and times, the events in
/// collapsed boxes, the edges in bundles, the events that matter left out of an overview.
fn left_out(
    trace: &Trace,
    window: &Window,
    selection: &Selection,
    runs: &[Run],
    bundles: &[Bundle],
    outside: u64,
) -> Vec<String> {
    let mut notes = Vec::new();
    if !window.is_all() {
        let inside: u64 = selection
            .ranges
            .iter()
            .map(|r| u64::from(r.len() as u32))
            .sum();
        notes.push(format!(
            "shows {} only: {inside} of {} events; {outside} synchronization edges leave it",
            window.describe(trace),
            trace.event_count()
        ));
    }
    if selection.overview {
        let mut stretches: Vec<String> = selection
            .stretches
            .iter()
            .map(|(a, b)| format!("{a}..={b}"))
            .collect();
        // A long list says how long it is, its start and its end.
        if stretches.len() > 8 {
            let last = stretches.pop().unwrap_or_default();
            let more = stretches.len() - 6;
            stretches.truncate(6);
            stretches.push(format!("{more} more"));
            stretches.push(last);
        }
        let (hidden, boxes) = runs
            .iter()
            .filter(|r| r.hidden > 0)
            .fold((0u64, 0usize), |(h, b), r| (h + u64::from(r.hidden), b + 1));
        let bundled: u64 = bundles.iter().map(|b| b.count).sum();
        notes.push(format!(
            "an overview: only {} stretches of Lamport time are drawn in detail ({}); {hidden} \
             synchronizing or marked events are collapsed into {boxes} boxes and {bundled} \
             synchronization edges into {} bundles",
            selection.stretches.len(),
            stretches.join(", "),
            bundles.len()
        ));
        for (kind, count) in &selection.anchors_left_out {
            let what = match kind {
                select::Anchor::Race => "race sides",
                select::Anchor::Ending => "blocked or panicked ends",
                select::Anchor::Chosen => "events at the halt cut or of the task",
                select::Anchor::Mark => "marks",
            };
            notes.push(format!(
                "{count} more {what} did not fit in detail: zoom with --from/--to/--processes"
            ));
        }
        notes.push("--full draws every event that matters (after a size estimate)".to_owned());
    }
    notes
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
        nodes: &mut [Dot],
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
    nodes: &mut [Dot],
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
