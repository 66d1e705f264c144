//! ShiViz's log format: each event is two lines, a description and `HOST {"HOST": n, ...}`
//! with the event's vector clock keyed by host names.
//!
//! The file starts the way ShiViz's "upload a log" expects: the first line is the parsing
//! regular expression, the second the (empty) delimiter between executions:
//!
//! ```text
//! (?<event>.*)\n(?<host>\S*) (?<clock>{.*})
//!
//! start
//! main {"main": 1}
//! ```
//!
//! Pasting the log instead, give ShiViz that same expression. Hosts are the process names
//! with whitespace replaced (and the id appended when two processes share a name); clocks list
//! only non-zero components, the own one always — ShiViz requires each host's own component to
//! count its events from 1, which Fidge clocks with one tick per event do.
//!
//! ShiViz lays out every event it is given, so a long run is exported a [`Window`] at a time:
//! the events of the chosen processes whose Lamport time is inside the span. Each clock is
//! then counted from the window's first event of each host (components for events before the
//! window, and for hidden processes, are left out), so the window is itself a log ShiViz
//! accepts; what happened before it, or through a hidden process, still orders the events
//! through the clocks it carries.

use std::collections::HashMap;
use std::io::Write;

use super::put;
use crate::error::Result;
use crate::lamport::lamport;
use crate::trace::{EventRef, Trace};
use crate::vclock::Clocks;
use crate::window::Window;
use ppd_formats::progress;

/// The regular expression ShiViz parses this log with.
pub const REGEX: &str = r"(?<event>.*)\n(?<host>\S*) (?<clock>{.*})";

const WHAT: &str = "the ShiViz log";

/// ShiViz host names of the processes: unique, without whitespace.
pub fn hosts(trace: &Trace) -> Vec<String> {
    let clean: Vec<String> = trace
        .processes()
        .iter()
        .map(|p| {
            let s: String = p
                .name
                .chars()
                .map(|c| {
                    if c.is_whitespace() || c == '"' {
                        '_'
                    } else {
                        c
                    }
                })
                .collect();
            if s.is_empty() { p.id.to_string() } else { s }
        })
        .collect();
    let mut count: HashMap<&str, usize> = HashMap::new();
    for s in &clean {
        *count.entry(s).or_default() += 1;
    }
    clean
        .iter()
        .zip(trace.processes())
        .map(|(s, p)| {
            if count[s.as_str()] > 1 {
                format!("{s}.{}", p.id)
            } else {
                s.clone()
            }
        })
        .collect()
}

/// Writes the log of the part of a run inside `window`.
pub fn write(trace: &Trace, clocks: &Clocks, window: &Window, out: &mut dyn Write) -> Result<()> {
    let hosts = hosts(trace);
    let times = lamport(trace, clocks);
    // Per process, its first event inside the window (`None`: hidden).
    let mut base: Vec<Option<u32>> = Vec::with_capacity(times.len());
    let mut order: Vec<(u32, EventRef)> = Vec::new();
    for (p, stamps) in times.iter().enumerate() {
        if !window.shows(p as u32) {
            base.push(None);
            continue;
        }
        let inside = window.events(stamps);
        base.push(Some(inside.start as u32));
        for k in inside {
            order.push((stamps[k], EventRef::new(p as u32, k as u32)));
        }
    }
    order.sort_unstable();
    put(out, WHAT, format!("{REGEX}\n\n").as_bytes())?;
    let mut line = String::new();
    let mut counted = progress::pass("writing the ShiViz log", order.len() as u64);
    for (_, e) in order {
        counted.add(1);
        line.clear();
        let text = trace.describe(e).replace(['\n', '\r'], " ");
        line.push_str(&text);
        line.push('\n');
        line.push_str(&hosts[e.process as usize]);
        line.push_str(" {");
        let mut first = true;
        for (q, c) in clocks.vector(e).into_iter().enumerate() {
            let Some(c) = base[q].and_then(|b| c.checked_sub(b)).filter(|&c| c > 0) else {
                continue;
            };
            if !first {
                line.push_str(", ");
            }
            first = false;
            line.push_str(&serde_json::to_string(&hosts[q]).unwrap_or_default());
            line.push_str(": ");
            line.push_str(&c.to_string());
        }
        line.push_str("}\n");
        put(out, WHAT, line.as_bytes())?;
    }
    Ok(())
}
