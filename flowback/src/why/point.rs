//! The point of a process's run a why-query asks about (`--at`).
//!
//! * `end` (the default): the end of the run;
//! * `N`: right after the process's event `N`;
//! * `halt`: where the last halted replay stopped the process (`cache/halt.json`);
//! * `NAME#K`: the exit of the K-th instance (from 1) of e-block NAME (`handle#3`; the name
//!   may omit its module path);
//! * an event of a simple predicate, `EVENT [if EXPR] [#K]`: right after the K-th event (default
//!   the first) of the process that satisfies it, as `ppd replay --stop` reads it: `mark
//!   negative`, `exit handle if %0 > 3`, `recv requests #2`.

use std::fmt;
use std::str::FromStr;

use ppd_formats::event::Nesting;
use ppd_formats::{Event, ProcessId, Recording};
use ppd_replayer::predicate::{self, Catalog, Predicate};

use super::did_you_mean;
use super::index::ProcessIndex;
use crate::error::{FlowbackError, Result};
use crate::halt::HaltCut;

/// Where in a process's run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Point {
    /// The end of the run.
    End,
    /// Right after event `N`.
    Event(u64),
    /// Where the last halted replay stopped the process.
    Halt,
    /// The exit of the `nth` (from 1) instance of an e-block.
    Instance {
        /// The e-block's name, or its last segments.
        eblock: String,
        /// Which instance, from 1.
        nth: u64,
    },
    /// Right after the `nth` event satisfying a simple predicate's event.
    Pattern {
        /// The event, as a simple predicate writes it after `PROCESS:`.
        event: String,
        /// Which match, from 1.
        nth: u64,
    },
}

impl FromStr for Point {
    type Err = FlowbackError;

    fn from_str(text: &str) -> Result<Point> {
        let text = text.trim();
        let bad = |why: &str| FlowbackError::Query(format!("--at {text:?}: {why}"));
        if text == "end" || text.is_empty() {
            return Ok(Point::End);
        }
        if text == "halt" {
            return Ok(Point::Halt);
        }
        if let Ok(n) = text.parse::<u64>() {
            return Ok(Point::Event(n));
        }
        let (head, nth) = match text.rsplit_once('#') {
            Some((head, k)) => {
                let nth = k
                    .trim()
                    .parse::<u64>()
                    .ok()
                    .filter(|n| *n > 0)
                    .ok_or_else(|| bad("the number after `#` counts from 1"))?;
                (head.trim(), nth)
            }
            None => (text, 1),
        };
        let is_eblock_name = !head.is_empty()
            && head
                .split("::")
                .all(|s| !s.is_empty() && s.chars().all(|c| c.is_alphanumeric() || c == '_'));
        let first_word = head.split_whitespace().next().unwrap_or("");
        if is_eblock_name && !["enter", "exit", "send", "recv", "mark"].contains(&first_word) {
            Ok(Point::Instance {
                eblock: head.to_owned(),
                nth,
            })
        } else {
            Ok(Point::Pattern {
                event: head.to_owned(),
                nth,
            })
        }
    }
}

impl fmt::Display for Point {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Point::End => f.write_str("end"),
            Point::Event(n) => write!(f, "{n}"),
            Point::Halt => f.write_str("halt"),
            Point::Instance { eblock, nth } => write!(f, "{eblock}#{nth}"),
            Point::Pattern { event, nth: 1 } => f.write_str(event),
            Point::Pattern { event, nth } => write!(f, "{event} #{nth}"),
        }
    }
}

/// Whether `name` (`bank::handle`) is what a user meant by `wanted` (`handle`, `bank::handle`).
pub(crate) fn names_eblock(name: &str, wanted: &str) -> bool {
    name == wanted || name.ends_with(&format!("::{wanted}"))
}

impl Point {
    /// The last event of `process` at the point, or `None` for the end of the run.
    pub fn resolve(
        &self,
        recording: &Recording,
        process: ProcessId,
        index: &ProcessIndex,
    ) -> Result<Option<u64>> {
        let name = recording
            .process(process)
            .map_or_else(|| process.to_string(), |p| p.name.clone());
        match self {
            Point::End => Ok(None),
            Point::Event(n) if *n < index.events => Ok(Some(*n)),
            Point::Event(n) => Err(FlowbackError::Query(format!(
                "--at {n}: {name} has {} events (0 to {})",
                index.events,
                index.events.saturating_sub(1)
            ))),
            Point::Halt => {
                let cut = HaltCut::load(recording.dir())?.ok_or_else(|| {
                    FlowbackError::Query(
                        "--at halt: no replay of this recording has halted (run `ppd replay --stop PRED` first)"
                            .into(),
                    )
                })?;
                let events = cut
                    .cut
                    .iter()
                    .find(|c| c.process == process.0)
                    .map_or(index.events, |c| c.events);
                match events.checked_sub(1) {
                    Some(last) => Ok(Some(last.min(index.events.saturating_sub(1)))),
                    None => Err(FlowbackError::Query(format!(
                        "--at halt: the replay halted {name} before its first event"
                    ))),
                }
            }
            Point::Instance { eblock, nth } => {
                let mut seen = 0;
                let known: Vec<&str> = index.names().iter().map(String::as_str).collect();
                if !known.iter().any(|n| names_eblock(n, eblock)) {
                    return Err(FlowbackError::Query(format!(
                        "--at {self}: {name} never entered an e-block `{eblock}`{}",
                        did_you_mean(eblock, known.iter().copied())
                    )));
                }
                for i in 0..index.len() {
                    let instance = index.instance(i)?;
                    if names_eblock(index.name(&instance), eblock) {
                        seen += 1;
                        if seen == *nth {
                            let end = if instance.exit == u64::MAX {
                                index.events.saturating_sub(1)
                            } else {
                                instance.exit
                            };
                            return Ok(Some(end));
                        }
                    }
                }
                Err(FlowbackError::Query(format!(
                    "--at {self}: {name} has {seen} instances of `{eblock}`"
                )))
            }
            Point::Pattern { event, nth } => {
                find_pattern(recording, process, &name, event, *nth).map(Some)
            }
        }
    }
}

/// The `nth` event of `process` after which the simple predicate `event` holds.
fn find_pattern(
    recording: &Recording,
    process: ProcessId,
    name: &str,
    event: &str,
    nth: u64,
) -> Result<u64> {
    let text = format!("{name}: {event}");
    let bad = |why: String| FlowbackError::Query(format!("--at {event:?}: {why}"));
    let parsed = predicate::parse(&text).map_err(|e| bad(e.to_string()))?;
    let Predicate::Simple(_) = parsed else {
        return Err(bad("give one event, not a combination".into()));
    };
    let catalog = Catalog::for_predicate(recording, &parsed)?;
    let resolved = parsed.resolve(&catalog).map_err(|e| bad(e.to_string()))?;
    let component = &resolved.components[0];
    let entry = recording
        .process(process)
        .ok_or_else(|| bad(format!("no process {process}")))?;
    let reader = recording.open_log(entry)?;
    // Exits see their entry's arguments.
    let mut prelogs: Vec<Box<[u8]>> = Vec::new();
    let mut seen = 0;
    for item in reader.events() {
        let (k, e) = item?;
        let prelog = match (&e, e.nesting()) {
            (Event::EblockEnter { prelog, .. }, _) => {
                prelogs.push(prelog.clone());
                None
            }
            (_, Nesting::Exit) => prelogs.pop(),
            (_, Nesting::Enter | Nesting::Flat) => None,
        };
        let entry_prelog = match &e {
            Event::EblockEnter { prelog, .. } => Some(&prelog[..]),
            _ => prelog.as_deref(),
        };
        if component.holds_after(&e, entry_prelog) {
            seen += 1;
            if seen == nth {
                return Ok(k);
            }
        }
    }
    Err(bad(format!(
        "{name} has {seen} such event{}",
        if seen == 1 { "" } else { "s" }
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn points_parse() {
        let p = |s: &str| s.parse::<Point>().unwrap();
        assert_eq!(p("end"), Point::End);
        assert_eq!(p("351"), Point::Event(351));
        assert_eq!(p("halt"), Point::Halt);
        assert_eq!(
            p("handle#3"),
            Point::Instance {
                eblock: "handle".into(),
                nth: 3
            }
        );
        assert_eq!(
            p("bank::serve"),
            Point::Instance {
                eblock: "bank::serve".into(),
                nth: 1
            }
        );
        assert_eq!(
            p("mark negative #2"),
            Point::Pattern {
                event: "mark negative".into(),
                nth: 2
            }
        );
        assert!("handle#0".parse::<Point>().is_err());
        assert!("handle#x".parse::<Point>().is_err());
        assert!(names_eblock("bank::handle", "handle"));
        assert!(!names_eblock("bank::handle", "andle"));
    }
}
