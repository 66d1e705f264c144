//! A window on a run: a span of Lamport time and a set of processes, to zoom a picture
//! (`ppd graph --from/--to/--processes`) or cut an export to what a viewer can hold.
//!
//! Lamport time is the time axis of every picture and export ([`crate::lamport`]), so a span
//! read off one of them (a Perfetto timestamp, a `lamport` field of the JSON export) selects
//! the same events in another.

use std::ops::Range;

use crate::error::{FlowbackError, Result};
use crate::trace::Trace;

/// The part of a run to show.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Window {
    /// First Lamport time shown.
    pub from: u32,
    /// Last Lamport time shown (inclusive).
    pub to: u32,
    /// Per process (in trace order), whether it is shown.
    processes: Vec<bool>,
}

impl Window {
    /// The whole run.
    pub fn all(trace: &Trace) -> Window {
        Window {
            from: 0,
            to: u32::MAX,
            processes: vec![true; trace.processes().len()],
        }
    }

    /// Lamport times `from..=to` (either end open) of the processes `processes` (trace
    /// indices; all when empty). A span that ends before it starts is refused.
    pub fn new(
        trace: &Trace,
        from: Option<u32>,
        to: Option<u32>,
        processes: &[u32],
    ) -> Result<Window> {
        let (from, to) = (from.unwrap_or(0), to.unwrap_or(u32::MAX));
        if from > to {
            return Err(FlowbackError::Query(format!(
                "the window ends (Lamport time {to}) before it starts ({from})"
            )));
        }
        let n = trace.processes().len();
        let mut shown = vec![processes.is_empty(); n];
        for &p in processes {
            if let Some(s) = shown.get_mut(p as usize) {
                *s = true;
            }
        }
        Ok(Window {
            from,
            to,
            processes: shown,
        })
    }

    /// Whether this is the whole run.
    pub fn is_all(&self) -> bool {
        self.from == 0 && self.to == u32::MAX && self.processes.iter().all(|&s| s)
    }

    /// Whether process `p` is shown.
    pub fn shows(&self, p: u32) -> bool {
        self.processes.get(p as usize).copied().unwrap_or(false)
    }

    /// The indices of a shown process's events inside the window, given their Lamport times
    /// (which never decrease along a process).
    pub fn events(&self, times: &[u32]) -> Range<usize> {
        let start = times.partition_point(|&t| t < self.from);
        let end = times.partition_point(|&t| t <= self.to);
        start..end.max(start)
    }

    /// How the window reads in a title or a note: `Lamport times 10..=90 of teller, auditor`.
    pub fn describe(&self, trace: &Trace) -> String {
        let span = match (self.from, self.to) {
            (0, u32::MAX) => "all Lamport times".to_owned(),
            (from, u32::MAX) => format!("Lamport times from {from}"),
            (0, to) => format!("Lamport times up to {to}"),
            (from, to) => format!("Lamport times {from}..={to}"),
        };
        if self.processes.iter().all(|&s| s) {
            return span;
        }
        let names: Vec<&str> = trace
            .processes()
            .iter()
            .zip(&self.processes)
            .filter(|(_, s)| **s)
            .map(|(p, _)| p.name.as_str())
            .collect();
        format!("{span} of {}", names.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synth::{self, Shape};

    #[test]
    fn events_of_a_window_are_those_whose_lamport_time_is_inside() {
        let trace = synth::execution(&Shape::mixed(3, 50), 1);
        let w = Window::new(&trace, Some(5), Some(9), &[1]).unwrap();
        let times = [1, 2, 5, 6, 9, 10, 12];
        assert_eq!(w.events(&times), 2..5);
        assert!(w.shows(1) && !w.shows(0) && !w.shows(2));
        assert!(!w.is_all());
        assert_eq!(
            Window::new(&trace, None, None, &[]).unwrap(),
            Window::all(&trace)
        );
        assert_eq!(Window::all(&trace).events(&times), 0..7);
        assert_eq!(
            Window::new(&trace, Some(13), None, &[])
                .unwrap()
                .events(&times),
            7..7
        );
        assert!(Window::new(&trace, Some(9), Some(5), &[]).is_err());
    }
}
