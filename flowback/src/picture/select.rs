//! Which events a diagram draws as dots.
//!
//! The full diagram draws every event that matters between processes (see the module
//! documentation of [`super`]). At ten million events that is millions of dots: past a budget
//! the diagram becomes an overview that draws in detail only some stretches of Lamport time —
//! the start and the end of the window, and a neighbourhood around each event that matters
//! most: races first, then blocked and panicked ends, the halt cut and a chosen task, then
//! marks — as many as the budget holds, in that order. Everything else is collapsed into
//! boxes, and the edges between boxes into bundles.

use std::ops::Range;

use crate::deadlock::Ending;
use crate::reads_from::ReadsFrom;
use crate::trace::{EventRef, Op, Trace};
use crate::vclock::Clocks;
use crate::window::Window;
use ppd_formats::progress;

/// Events that make a stretch worth drawing, most important first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Anchor {
    /// A side of a race.
    Race,
    /// The last event of a process that is blocked or panicked.
    Ending,
    /// An event next to the halt cut, or of the task in focus.
    Chosen,
    /// A mark the program logged.
    Mark,
}

/// The dots of a diagram.
#[derive(Debug)]
pub(crate) struct Selection {
    /// Per process (trace order): its events inside the window (empty for hidden processes).
    pub(crate) ranges: Vec<Range<u32>>,
    /// Per process: the events the full diagram of the window draws as dots, ascending.
    pub(crate) candidates: Vec<Vec<u32>>,
    /// Per process: the events drawn as dots, ascending (a subset of the candidates).
    pub(crate) dots: Vec<Vec<u32>>,
    /// Whether only some stretches are drawn in detail.
    pub(crate) overview: bool,
    /// Stretches of Lamport time drawn in detail, in an overview.
    pub(crate) stretches: Vec<(u32, u32)>,
    /// Events that matter, by kind, whose neighbourhood did not fit the budget.
    pub(crate) anchors_left_out: Vec<(Anchor, usize)>,
}

/// What the selection starts from.
pub(crate) struct Inputs<'a> {
    pub(crate) trace: &'a Trace,
    pub(crate) clocks: &'a Clocks,
    pub(crate) times: &'a [Vec<u32>],
    pub(crate) window: &'a Window,
    pub(crate) endings: &'a [Ending],
    /// Race sides, events next to the halt cut, events of the task in focus.
    pub(crate) races: &'a [EventRef],
    pub(crate) chosen: &'a [EventRef],
    /// Reads of atomics linked to the write they read: a synchronizing pair gets its dots.
    pub(crate) data_edges: &'a [ReadsFrom],
}

impl Selection {
    /// Chooses the dots: every candidate when there are at most `budget` (or no budget), an
    /// overview otherwise.
    pub(crate) fn choose(input: &Inputs<'_>, budget: Option<usize>) -> Selection {
        let Inputs {
            trace,
            clocks,
            times,
            window,
            ..
        } = *input;
        let n = trace.processes().len();
        let ranges: Vec<Range<u32>> = (0..n)
            .map(|p| {
                if window.shows(p as u32) {
                    let r = window.events(&times[p]);
                    r.start as u32..r.end as u32
                } else {
                    0..0
                }
            })
            .collect();
        let inside: u64 = ranges.iter().map(|r| u64::from(r.len() as u32)).sum();
        let mut counted = progress::pass("choosing the dots", inside);
        let mut candidates: Vec<Vec<u32>> = vec![Vec::new(); n];
        let mut marks: Vec<EventRef> = Vec::new();
        for (p, proc) in trace.processes().iter().enumerate() {
            let r = ranges[p].clone();
            if r.is_empty() {
                continue;
            }
            candidates[p].push(r.start);
            candidates[p].push(r.end - 1);
            for k in r {
                counted.add(1);
                match proc.events[k as usize].op {
                    Op::Mark { .. } => {
                        candidates[p].push(k);
                        marks.push(EventRef::new(p as u32, k));
                    }
                    Op::Send { .. } => candidates[p].push(k),
                    _ => {}
                }
            }
        }
        let mut add = |e: EventRef| {
            let p = e.process as usize;
            if ranges.get(p).is_some_and(|r| r.contains(&e.index)) {
                candidates[p].push(e.index);
            }
        };
        for e in clocks.edges() {
            add(e.from);
            add(e.to);
        }
        for e in input.data_edges.iter().filter(|e| e.synchronizes) {
            add(e.from);
            add(e.to);
        }
        input.races.iter().chain(input.chosen).for_each(|&e| add(e));
        for c in &mut candidates {
            c.sort_unstable();
            c.dedup();
        }
        let total: usize = candidates.iter().map(Vec::len).sum();
        let mut selection = Selection {
            ranges,
            dots: Vec::new(),
            candidates,
            overview: false,
            stretches: Vec::new(),
            anchors_left_out: Vec::new(),
        };
        match budget {
            Some(budget) if total > budget => selection.overview(input, &marks, budget),
            _ => selection.dots = selection.candidates.clone(),
        }
        selection
    }

    /// Draws in detail the start and end of the window and the neighbourhoods of the events
    /// that matter (`marks`: the window's marks), as many as `budget` dots hold.
    fn overview(&mut self, input: &Inputs<'_>, marks: &[EventRef], budget: usize) {
        self.overview = true;
        let times = input.times;
        let shown: Vec<usize> = (0..self.ranges.len())
            .filter(|&p| !self.ranges[p].is_empty())
            .collect();
        let time = |p: usize, k: u32| times[p][k as usize];
        let (Some(first), Some(last)) = (
            shown.iter().map(|&p| time(p, self.ranges[p].start)).min(),
            shown.iter().map(|&p| time(p, self.ranges[p].end - 1)).max(),
        ) else {
            self.dots = self.candidates.clone();
            return;
        };
        // Half the width of a stretch, in Lamport time: a stretch holds at most 2R + 1 events
        // of each process.
        let radius = (budget / (40 * shown.len().max(1))).clamp(1, 8) as u32;
        let cost = |(a, b): (u32, u32)| -> usize {
            shown
                .iter()
                .map(|&p| {
                    let c = &self.candidates[p];
                    c.partition_point(|&k| time(p, k) <= b) - c.partition_point(|&k| time(p, k) < a)
                })
                .sum()
        };
        let mut stretches = vec![
            (first, first.saturating_add(radius)),
            (last.saturating_sub(radius), last),
        ];
        let mut used = 2 * shown.len() + cost(stretches[0]) + cost(stretches[1]);
        let mut anchors: Vec<(Anchor, u32)> = Vec::new();
        let mut anchor = |kind: Anchor, e: EventRef| {
            let p = e.process as usize;
            if self.ranges[p].contains(&e.index) {
                anchors.push((kind, time(p, e.index)));
            }
        };
        input.races.iter().for_each(|&e| anchor(Anchor::Race, e));
        for (p, proc) in input.trace.processes().iter().enumerate() {
            let Some(k) = proc.events.len().checked_sub(1) else {
                continue;
            };
            let panicked = matches!(proc.events[k].op, Op::Panic { .. });
            if panicked || input.endings[p] == Ending::Blocked {
                anchor(Anchor::Ending, EventRef::new(p as u32, k as u32));
            }
        }
        marks.iter().for_each(|&e| anchor(Anchor::Mark, e));
        input.chosen.iter().for_each(|&e| anchor(Anchor::Chosen, e));
        anchors.sort_unstable();
        anchors.dedup();
        let mut left_out: Vec<(Anchor, usize)> = Vec::new();
        for (kind, t) in anchors {
            if stretches.iter().any(|&(a, b)| a <= t && t <= b) {
                continue;
            }
            let s = (t.saturating_sub(radius), t.saturating_add(radius));
            let c = cost(s);
            if used + c <= budget {
                used += c;
                stretches.push(s);
            } else {
                match left_out.last_mut() {
                    Some((k, n)) if *k == kind => *n += 1,
                    _ => left_out.push((kind, 1)),
                }
            }
        }
        stretches.sort_unstable();
        let mut merged: Vec<(u32, u32)> = Vec::new();
        for (a, b) in stretches {
            match merged.last_mut() {
                Some(m) if a <= m.1.saturating_add(1) => m.1 = m.1.max(b),
                _ => merged.push((a, b)),
            }
        }
        self.dots = (0..self.ranges.len())
            .map(|p| {
                let c = &self.candidates[p];
                let mut dots: Vec<u32> = Vec::new();
                if let Some(&k) = c.first() {
                    dots.push(k);
                }
                for &(a, b) in &merged {
                    let lo = c.partition_point(|&k| time(p, k) < a);
                    let hi = c.partition_point(|&k| time(p, k) <= b);
                    dots.extend_from_slice(&c[lo..hi.max(lo)]);
                }
                if let Some(&k) = c.last() {
                    dots.push(k);
                }
                dots.sort_unstable();
                dots.dedup();
                dots
            })
            .collect();
        self.stretches = merged;
        self.anchors_left_out = left_out;
    }
}
