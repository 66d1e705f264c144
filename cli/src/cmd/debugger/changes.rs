//! What changed from one halted state to the next: after a step, `back` or `goto`, the
//! debugger prints the processes that moved, at their new positions, under a line saying where
//! the replay is now; `print` shows everything.

use std::fmt::Write as _;

use ppd_replayer::debugger::{HaltState, ProcessState};

/// The change from `before` to `after`, for a terminal.
pub(super) fn render(before: &HaltState, after: &HaltState) -> String {
    let moved: Vec<(&ProcessState, Option<&ProcessState>)> = after
        .processes
        .iter()
        .map(|p| (p, before.processes.iter().find(|b| b.id == p.id)))
        .filter(|(p, b)| b.is_none_or(|b| b.events != p.events))
        .collect();
    let mut out = format!(
        "halted ({}): {}\n",
        after.reason,
        summary(&moved, after.processes.len())
    );
    for (now, was) in &moved {
        out.push_str(&moved_process(now, *was));
    }
    out
}

/// One line: who moved, and where to.
fn summary(moved: &[(&ProcessState, Option<&ProcessState>)], processes: usize) -> String {
    let still = processes - moved.len();
    let others = match still {
        0 => String::new(),
        1 => "; the other process did not move".to_owned(),
        n => format!("; the other {n} did not move"),
    };
    match moved {
        [] => "no process moved".to_owned(),
        [(now, was)] => format!("{} {}{others}", now.name, direction(now, *was)),
        several => {
            let names: Vec<&str> = several.iter().map(|(p, _)| p.name.as_str()).collect();
            format!(
                "{} processes moved ({}){others}",
                several.len(),
                names.join(", ")
            )
        }
    }
}

/// `moved to event 12`, `moved back to event 3`, `moved back to its start`.
fn direction(now: &ProcessState, was: Option<&ProcessState>) -> String {
    let back = was.is_some_and(|w| w.events > now.events);
    let verb = if back { "moved back to" } else { "moved to" };
    match now.last_event {
        Some(event) => format!("{verb} event {event}"),
        None => format!("{verb} its start"),
    }
}

/// A process that moved: its new position (event, kind, what it did with its value and
/// `file:line`), then whatever else of it changed.
fn moved_process(now: &ProcessState, was: Option<&ProcessState>) -> String {
    let mut out = String::new();
    let _ = write!(out, "  {} ({}): ", now.name, now.id);
    match (now.last_event, &now.at) {
        (Some(event), Some(at)) => {
            let kind = now
                .kind
                .as_deref()
                .filter(|k| !at.starts_with(*k))
                .map(|k| format!("[{k}] "))
                .unwrap_or_default();
            let _ = writeln!(out, "event {event}, {kind}{at}");
        }
        (Some(event), None) => {
            let _ = writeln!(out, "event {event}");
        }
        (None, _) => {
            let _ = writeln!(out, "at its start, no event executed");
        }
    }
    if was.is_none_or(|w| w.status != now.status) {
        let _ = writeln!(out, "    now      {}", now.status);
    }
    let eblock_changed =
        was.is_none_or(|w| w.eblock != now.eblock || w.eblock_args != now.eblock_args);
    match (&now.eblock, was.and_then(|w| w.eblock.as_ref())) {
        (Some(e), _) if eblock_changed => {
            let _ = writeln!(out, "    in       {e}{}", now.eblock_arguments());
        }
        (None, Some(left)) => {
            let _ = writeln!(out, "    left     {left}");
        }
        _ => {}
    }
    for (label, value) in &now.values {
        if was.is_none_or(|w| w.values.get(label) != Some(value)) {
            let _ = writeln!(out, "    {label:<8} = {value}");
        }
    }
    if let Some(waiting) = &now.waiting_for
        && was.is_none_or(|w| w.waiting_for.as_ref() != Some(waiting))
    {
        let _ = writeln!(out, "    waiting  for {waiting}");
    }
    for holds in &now.holds {
        if was.is_none_or(|w| !w.holds.contains(holds)) {
            let _ = writeln!(out, "    holds    {holds}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use ppd_formats::ProcessId;

    use super::*;

    fn process(id: u32, name: &str, events: u64, at: &str) -> ProcessState {
        ProcessState {
            id: ProcessId(id),
            name: name.into(),
            events,
            logged: 100,
            status: "held".into(),
            last_event: events.checked_sub(1),
            kind: at.split_whitespace().next().map(str::to_owned),
            at: Some(at.into()),
            file: None,
            line: None,
            eblock: None,
            eblock_args: None,
            values: BTreeMap::new(),
            vclock: Vec::new(),
            holds: Vec::new(),
            waiting_for: None,
            thread: None,
        }
    }

    fn state(reason: &str, processes: Vec<ProcessState>) -> HaltState {
        HaltState {
            predicate: None,
            reason: reason.into(),
            processes,
            channels: Vec::new(),
            latency_ns: None,
        }
    }

    #[test]
    fn only_the_process_that_moved_is_shown() {
        let before = state(
            "the predicate holds",
            vec![
                process(0, "main", 3, "spawn teller at a.rs:1"),
                process(1, "teller", 7, "recv message 2 at a.rs:9"),
            ],
        );
        let mut after = state(
            "after a step",
            vec![
                process(0, "main", 3, "spawn teller at a.rs:1"),
                process(1, "teller", 8, "mark negative = -10 at a.rs:12"),
            ],
        );
        after.processes[1]
            .values
            .insert("negative".into(), serde_json::json!(-10));
        let text = render(&before, &after);
        assert_eq!(
            text,
            "halted (after a step): teller moved to event 7; the other process did not move\n  \
             teller (p1): event 7, mark negative = -10 at a.rs:12\n    \
             negative = -10\n",
        );
        assert!(!text.contains("main"), "{text}");
    }

    #[test]
    fn going_back_says_so_and_names_every_process_that_moved() {
        let before = state(
            "after a step",
            vec![
                process(0, "main", 3, "spawn at a.rs:1"),
                process(1, "teller", 8, "recv at a.rs:9"),
                process(2, "auditor", 4, "send at a.rs:20"),
            ],
        );
        let after = state(
            "the requested state",
            vec![
                process(0, "main", 3, "spawn at a.rs:1"),
                process(1, "teller", 0, ""),
                process(2, "auditor", 2, "send at a.rs:20"),
            ],
        );
        let text = render(&before, &after);
        let mut lines = text.lines();
        assert_eq!(
            lines.next(),
            Some(
                "halted (the requested state): 2 processes moved (teller, auditor); \
                 the other process did not move"
            )
        );
        assert_eq!(
            lines.next(),
            Some("  teller (p1): at its start, no event executed")
        );
        assert_eq!(
            lines.next(),
            Some("  auditor (p2): event 1, send at a.rs:20")
        );
        assert_eq!(lines.next(), None, "{text}");
        let one_back = state(
            "the requested state",
            vec![
                process(0, "main", 3, "spawn at a.rs:1"),
                process(1, "teller", 6, "recv at a.rs:9"),
                process(2, "auditor", 4, "send at a.rs:20"),
            ],
        );
        assert!(
            render(&before, &one_back)
                .starts_with("halted (the requested state): teller moved back to event 5;"),
            "{}",
            render(&before, &one_back)
        );
    }

    #[test]
    fn a_state_where_nothing_moved_says_so() {
        let before = state("after a step", vec![process(0, "main", 3, "x at a.rs:1")]);
        assert_eq!(
            render(&before, &before.clone()),
            "halted (after a step): no process moved\n"
        );
    }
}
