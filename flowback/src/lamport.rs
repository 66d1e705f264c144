//! Lamport times: one integer per event that grows along every happened-before path.
//!
//! Pictures and exports need a time axis; wall-clock time is not in the logs (and would show
//! the scheduler, not causality), so events are placed at their Lamport time: one more than
//! the latest of their predecessor in the process and the sources of their incoming edges.
//! Times are computed over the synchronization edges [`Clocks`] found, in one pass: the edges of
//! the memory-model happened-before (`ppd_formats::order`), so a picture's time axis and its
//! arrows show the same order as `ppd races` and `ppd graph`.

use ppd_formats::order::Tick;

use crate::fasthash::FastMap;

use crate::trace::{EventRef, Trace};
use crate::vclock::Clocks;

/// The Lamport time of every event, per process.
pub fn lamport(trace: &Trace, clocks: &Clocks) -> Vec<Vec<Tick>> {
    let n = trace.processes().len();
    let mut incoming: FastMap<EventRef, Vec<EventRef>> = FastMap::default();
    for e in clocks.edges() {
        incoming.entry(e.to).or_default().push(e.from);
    }
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
                let k = times[p].len();
                let e = EventRef::new(p as u32, k as u32);
                let mut t = times[p].last().copied().unwrap_or(0);
                if let Some(sources) = incoming.get(&e) {
                    for s in sources {
                        match times[s.process as usize].get(s.index as usize) {
                            Some(&ts) => t = t.max(ts),
                            None => {
                                waiting.entry(*s).or_default().push(p);
                                break 'events;
                            }
                        }
                    }
                }
                times[p].push(t + 1);
                if let Some(ws) = waiting.remove(&e) {
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
        waiting.retain(|_, ws| !ws.contains(&p));
        stack.push(p);
        on_stack[p] = true;
    }
    times
}
