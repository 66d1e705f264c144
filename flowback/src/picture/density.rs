//! The whole window at a glance: how many events each line has in each stretch of Lamport
//! time, and where the events that matter are (race sides, panicked and blocked ends, marks).
//!
//! An overview draws only some stretches in detail, and a full diagram of a long run has more
//! dots than a screen has pixels; this summary counts every event of the window all the same,
//! in at most [`CELLS`] numbers, so that a picture zoomed out to the whole run still shows where
//! each process was busy and where to zoom in.

use std::collections::BTreeSet;

use serde::Serialize;

use crate::deadlock::Ending;
use crate::trace::{EventRef, Op, Trace};
use ppd_formats::order::Tick;
use ppd_formats::progress;

/// At most this many counts in a diagram's density, over all its lines: the summary stays a
/// small part of the picture's size.
pub(crate) const CELLS: usize = 250_000;
/// At most this many bins per line: a dozen times the width of a screen, to zoom into.
pub(crate) const MAX_BINS: usize = 16_384;

/// Events per line and stretch of Lamport time.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Density {
    /// The Lamport time the first bin starts at.
    pub from: Tick,
    /// How many Lamport times a bin spans.
    pub width: Tick,
    /// Per line (in lane order), its events in each bin.
    pub lanes: Vec<Vec<u32>>,
}

/// Where events of one kind that matter are on one line, in the bins of the [`Density`].
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Landmark {
    /// The line.
    pub lane: u32,
    /// `race` (a side of a race), `panic`, `blocked` (the process's last event) or `mark`.
    pub kind: &'static str,
    /// The bins holding any, with how many they hold.
    pub bins: Vec<(u32, u32)>,
}

/// What the summary is made from.
pub(crate) struct Inputs<'a> {
    pub(crate) trace: &'a Trace,
    pub(crate) times: &'a [Vec<Tick>],
    /// Per process, its events in the window.
    pub(crate) ranges: &'a [std::ops::Range<u32>],
    /// The processes shown, in lane order.
    pub(crate) shown: &'a [usize],
    pub(crate) races: &'a BTreeSet<EventRef>,
    pub(crate) endings: &'a [Ending],
}

/// Counts the events of the window, whose Lamport times span `span`, per line and bin, and
/// finds the bins of the events that matter.
pub(crate) fn summarize(
    input: &Inputs<'_>,
    span: Option<(Tick, Tick)>,
) -> (Density, Vec<Landmark>) {
    let Some((from, to)) = span else {
        return (Density::default(), Vec::new());
    };
    let (width, bins) = bins(input.shown.len(), (from, to));
    let bin_of = |t: Tick| ((t - from) as u64 / width) as u32;
    let inside: u64 = input
        .shown
        .iter()
        .map(|&p| u64::from(input.ranges[p].len() as u32))
        .sum();
    let mut counted = progress::pass("summing up the events per process and time", inside);
    let mut density = Vec::with_capacity(input.shown.len());
    let mut landmarks = Vec::new();
    for (lane, &p) in input.shown.iter().enumerate() {
        let lane = lane as u32;
        let range = input.ranges[p].clone();
        let times = &input.times[p];
        let events = &input.trace.processes()[p].events;
        let mut counts = vec![0u32; bins];
        let mut marks = Bins::default();
        for k in range.clone() {
            let bin = bin_of(times[k as usize]);
            counts[bin as usize] += 1;
            if matches!(events[k as usize].op, Op::Mark { .. }) {
                marks.add(bin);
            }
            counted.add(1);
        }
        density.push(counts);
        let mut races = Bins::default();
        let from_race = EventRef::new(p as u32, range.start);
        for e in input.races.range(from_race..) {
            if e.process != p as u32 || e.index >= range.end {
                break;
            }
            races.add(bin_of(times[e.index as usize]));
        }
        // A process that panicked or is blocked at the end: its last event, if it is shown.
        let mut end = Bins::default();
        let mut end_kind = "blocked";
        if let Some(k) = events.len().checked_sub(1)
            && range.contains(&(k as u32))
        {
            if matches!(events[k].op, Op::Panic { .. }) {
                end_kind = "panic";
                end.add(bin_of(times[k]));
            } else if input.endings[p] == Ending::Blocked {
                end.add(bin_of(times[k]));
            }
        }
        for (kind, found) in [("race", races), (end_kind, end), ("mark", marks)] {
            if !found.0.is_empty() {
                landmarks.push(Landmark {
                    lane,
                    kind,
                    bins: found.0,
                });
            }
        }
    }
    (
        Density {
            from,
            width: width as Tick,
            lanes: density,
        },
        landmarks,
    )
}

/// How many Lamport times a bin of the density of `lanes` lines over the Lamport times `span`
/// spans, and how many bins each line has.
pub(crate) fn bins(lanes: usize, (from, to): (Tick, Tick)) -> (u64, usize) {
    let times_spanned = u64::from(to - from) + 1;
    let most = (CELLS / lanes.max(1)).clamp(64, MAX_BINS) as u64;
    let width = times_spanned.div_ceil(most).max(1);
    (width, times_spanned.div_ceil(width) as usize)
}

/// Bins met in ascending order, with how many times each was met.
#[derive(Default)]
struct Bins(Vec<(u32, u32)>);

impl Bins {
    fn add(&mut self, bin: u32) {
        match self.0.last_mut() {
            Some((b, n)) if *b == bin => *n += 1,
            _ => self.0.push((bin, 1)),
        }
    }
}
