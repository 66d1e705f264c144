//! Lamport times: one integer per event that grows along every happened-before path.
//!
//! Pictures and exports need a time axis; wall-clock time is not in the logs (and would show
//! the scheduler, not causality), so events are placed at their Lamport time: one more than
//! the latest of their predecessor in the process and the sources of their incoming edges.
//! Times are computed over the synchronization edges [`Clocks`] found: the edges of the
//! memory-model happened-before (`ppd_formats::order`), so a picture's time axis and its arrows
//! show the same order as `ppd races` and `ppd graph`. One pass walks each process's incoming
//! edges in event order.

use ppd_formats::order::Tick;
use ppd_formats::progress;

use crate::fasthash::FastMap;

use crate::trace::{EventRef, Trace};
use crate::vclock::Clocks;

/// The Lamport time of every event, per process.
pub(crate) fn lamport(trace: &Trace, clocks: &Clocks) -> Vec<Vec<Tick>> {
    let mut counted = progress::pass("computing Lamport times", trace.event_count());
    let n = trace.processes().len();
    // Per process, the sources of its incoming edges, in the order of the events they enter:
    // walked with one cursor per process, no lookup per event.
    let mut incoming: Vec<Vec<(u32, EventRef)>> = vec![Vec::new(); n];
    for e in clocks.edges() {
        if let Some(list) = incoming.get_mut(e.to.process as usize) {
            list.push((e.to.index, e.from));
        }
    }
    for list in &mut incoming {
        list.sort_unstable_by_key(|&(k, _)| k);
    }
    let mut cursor = vec![0usize; n];
    let mut times: Vec<Vec<Tick>> = trace
        .processes()
        .iter()
        .map(|p| Vec::with_capacity(p.events.len()))
        .collect();
    let len = |p: usize| trace.processes()[p].events.len();
    let mut waiting: FastMap<EventRef, Vec<usize>> = FastMap::default();
    let mut stack: Vec<usize> = (0..n).rev().collect();
    let mut on_stack = vec![true; n];
    loop {
        while let Some(p) = stack.pop() {
            on_stack[p] = false;
            'events: while times[p].len() < len(p) {
                let k = times[p].len() as u32;
                let mut t = times[p].last().copied().unwrap_or(0);
                let list = &incoming[p];
                let mut i = cursor[p];
                // Edges into events already placed without them (damaged input) are skipped.
                while list.get(i).is_some_and(|&(to, _)| to < k) {
                    i += 1;
                }
                while let Some(&(_, s)) = list.get(i).filter(|&&(to, _)| to == k) {
                    match times[s.process as usize].get(s.index as usize) {
                        Some(&ts) => t = t.max(ts),
                        None => {
                            waiting.entry(s).or_default().push(p);
                            break 'events;
                        }
                    }
                    i += 1;
                }
                cursor[p] = i;
                times[p].push(t + 1);
                counted.add(1);
                if !waiting.is_empty()
                    && let Some(ws) = waiting.remove(&EventRef::new(p as u32, k))
                {
                    for w in ws {
                        if !on_stack[w] {
                            on_stack[w] = true;
                            stack.push(w);
                        }
                    }
                }
            }
        }
        // Edges from the clock computation always go forward; this is only reached with edges
        // that do not (damaged input): place the lowest waiting event after what is known.
        let Some(p) = (0..n).find(|&p| times[p].len() < len(p)) else {
            break;
        };
        let t = times[p].last().copied().unwrap_or(0);
        times[p].push(t + 1);
        counted.add(1);
        waiting.retain(|_, ws| !ws.contains(&p));
        stack.push(p);
        on_stack[p] = true;
    }
    times
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synth::{self, Shape};

    /// Lamport's definition, solved by iterating to a fixed point: one more than the latest of
    /// the predecessor in the process and the sources of the incoming edges.
    fn by_definition(trace: &Trace, clocks: &Clocks) -> Vec<Vec<u32>> {
        let mut times: Vec<Vec<u32>> = trace
            .processes()
            .iter()
            .map(|p| vec![0; p.events.len()])
            .collect();
        loop {
            let mut changed = false;
            for p in 0..times.len() {
                for k in 0..times[p].len() {
                    let mut t = if k == 0 { 0 } else { times[p][k - 1] };
                    for e in clocks.edges() {
                        if e.to == EventRef::new(p as u32, k as u32) {
                            t = t.max(times[e.from.process as usize][e.from.index as usize]);
                        }
                    }
                    if times[p][k] != t + 1 {
                        times[p][k] = t + 1;
                        changed = true;
                    }
                }
            }
            if !changed {
                return times;
            }
        }
    }

    #[test]
    fn times_follow_lamports_definition() {
        for seed in 0..6 {
            let trace = synth::execution(&Shape::mixed(2 + seed % 4, 60), u64::from(seed));
            let clocks = Clocks::compute(&trace);
            assert!(!clocks.edges().is_empty());
            assert_eq!(
                lamport(&trace, &clocks),
                by_definition(&trace, &clocks),
                "{seed}"
            );
        }
    }
}
