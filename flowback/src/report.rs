//! The race and deadlock report, as `ppd races` prints it (text) and serializes it (JSON).
//!
//! Each race names both sides with process, source location, access and vector clock, and
//! says which components show the two are unordered.

use ppd_formats::event::ObjectKind;
use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};

use crate::deadlock::{Deadlocks, Ending};
use crate::lock_order::PotentialDeadlock;
use crate::message_races::MessageRace;
use crate::races::DataRace;
use crate::trace::{EventRef, EventStore, Op, Trace, access_name, ordering_name};
use crate::vclock::Clocks;
use crate::vclock::hb::AccessClass;

/// A vector clock as reports print it: the non-zero components, in process order, keyed by
/// process id (`"p3"`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClockView(pub Vec<(String, u32)>);

impl ClockView {
    /// The clock of event `e`.
    pub fn of<S: EventStore>(trace: &Trace<S>, clocks: &Clocks, e: EventRef) -> ClockView {
        ClockView(
            clocks
                .vector(e)
                .into_iter()
                .enumerate()
                .filter(|(_, c)| *c > 0)
                .map(|(q, c)| (trace.process(q as u32).id.to_string(), c))
                .collect(),
        )
    }
}

impl Serialize for ClockView {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

impl std::fmt::Display for ClockView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("{")?;
        for (i, (k, v)) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{k}: {v}")?;
        }
        f.write_str("}")
    }
}

/// One side of a race.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Side {
    /// The process's name.
    pub process: String,
    /// The process's id number.
    pub pid: u32,
    /// The event's index in the process's log.
    pub event: u32,
    /// Source file, when known.
    pub file: Option<String>,
    /// Source line, when known.
    pub line: Option<u32>,
    /// Source column, when known.
    pub column: Option<u32>,
    /// `read`, `write`, `rmw` or `send`.
    pub access: String,
    /// What the operation was (`load`, `store`, `rmw`, `failed-cas`, `send`).
    pub operation: String,
    /// The memory ordering, for atomics.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ordering: Option<String>,
    /// Its vector clock.
    pub clock: ClockView,
}

impl Side {
    fn of<S: EventStore>(trace: &Trace<S>, clocks: &Clocks, e: EventRef) -> Side {
        let proc = trace.process(e.process);
        let ev = trace.event(e);
        let site = trace.site(ev.site);
        let (access, operation, ordering) = match ev.op {
            Op::Atomic { op, ordering, .. } => {
                let access = match (op, AccessClass::of(op, ordering)) {
                    (ppd_formats::event::AtomicOp::Rmw, _) => "rmw",
                    (_, c) if c.writes() => "write",
                    _ => "read",
                };
                (
                    access.to_owned(),
                    access_name(op).to_owned(),
                    Some(ordering_name(ordering).to_owned()),
                )
            }
            ref op => (op.kind_name().to_owned(), op.kind_name().to_owned(), None),
        };
        Side {
            process: proc.name.clone(),
            pid: proc.id.0,
            event: e.index,
            file: site.map(|s| s.file.clone()),
            line: site.map(|s| s.line),
            column: site.map(|s| s.column),
            access,
            operation,
            ordering,
            clock: ClockView::of(trace, clocks, e),
        }
    }

    /// `file:line`, or `?` when the site is unknown.
    pub fn location(&self) -> String {
        match (&self.file, self.line) {
            (Some(f), Some(l)) => format!("{f}:{l}"),
            _ => "?".to_owned(),
        }
    }
}

/// A race between two accesses or two sends.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Race {
    /// `data` (conflicting accesses to an atomic) or `message` (two sends a receive could
    /// have taken either of).
    pub kind: &'static str,
    /// The shared variable or channel: its name, or its id when it has none.
    pub var: String,
    /// The object's id.
    pub object: String,
    /// `atomic` or `channel`.
    pub object_kind: &'static str,
    /// How many racing pairs share these two source sites.
    pub count: u64,
    /// One side (for a message race: the send that was received).
    pub a: Side,
    /// The other side.
    pub b: Side,
    /// For a message race, the receive.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub receive: Option<Side>,
    /// Why the two are unordered, from their clocks.
    pub unordered: String,
}

/// Why `a` and `b` are unordered: each has a component the other has not reached.
fn unordered<S: EventStore>(trace: &Trace<S>, clocks: &Clocks, a: EventRef, b: EventRef) -> String {
    let pa = trace.process(a.process).id;
    let pb = trace.process(b.process).id;
    format!(
        "a[{pa}] = {} > b[{pa}] = {} and b[{pb}] = {} > a[{pb}] = {}",
        clocks.component(a, a.process),
        clocks.component(b, a.process),
        clocks.component(b, b.process),
        clocks.component(a, b.process),
    )
}

/// A process that ended blocked.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BlockedView {
    /// The process's name.
    pub process: String,
    /// Its id number.
    pub pid: u32,
    /// `lock`, `message` or `permit`.
    pub waits_for: &'static str,
    /// The object waited on.
    pub object: String,
    /// Where it waits.
    pub file: Option<String>,
    /// Where it waits.
    pub line: Option<u32>,
    /// Who could end the wait: the lock's holder (`held_by`), the message's or permit's
    /// providers (`owed_by`).
    pub by: Vec<String>,
    /// `held_by` or `owed_by`.
    pub relation: &'static str,
    /// Whether the providers are a guess (nobody sent on the channel yet).
    pub guessed: bool,
    /// Whether the process is deadlocked: in a cycle of waits (a self-wait is a cycle of
    /// one), behind one, or in a wait no live process could end.
    pub deadlocked: bool,
    /// Whether it was left waiting by the program's exit: `main` returned while it waited,
    /// and a process alive until then could have ended the wait. Not a deadlock.
    pub left_waiting: bool,
}

/// How the run ended for its processes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DeadlockView {
    /// Processes still running (or in a join or sleep) when the recording stopped.
    pub running: Vec<String>,
    /// Processes blocked when the recording stopped.
    pub blocked: Vec<BlockedView>,
    /// Wait-for cycles: each member waits for the next, the last for the first.
    pub cycles: Vec<Vec<BlockedView>>,
}

/// One step of a potential deadlock: a process acquired a mutex while holding another.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LockStepView {
    /// The process's name.
    pub process: String,
    /// Its id number.
    pub pid: u32,
    /// The mutex it held.
    pub holds: String,
    /// Where it locked the mutex it held.
    pub held_file: Option<String>,
    /// Where it locked the mutex it held.
    pub held_line: Option<u32>,
    /// The mutex it acquired while holding `holds`.
    pub acquires: String,
    /// Where it acquired it.
    pub file: Option<String>,
    /// Where it acquired it.
    pub line: Option<u32>,
}

/// A cycle of the lock-order graph: each step acquires the mutex the next step holds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PotentialDeadlockView {
    /// The mutexes of the cycle, in order; the first again closes it.
    pub cycle: Vec<String>,
    /// The acquisitions, one per process.
    pub steps: Vec<LockStepView>,
}

impl PotentialDeadlockView {
    fn of<S: EventStore>(trace: &Trace<S>, d: &PotentialDeadlock) -> PotentialDeadlockView {
        let steps: Vec<LockStepView> = d
            .edges
            .iter()
            .map(|e| {
                let held = trace.site(trace.event(e.held_at).site);
                let acquired = trace.site(trace.event(e.acquired_at).site);
                LockStepView {
                    process: trace.process(e.process).name.clone(),
                    pid: trace.process(e.process).id.0,
                    holds: trace.object(e.held).label(),
                    held_file: held.map(|s| s.file.clone()),
                    held_line: held.map(|s| s.line),
                    acquires: trace.object(e.acquired).label(),
                    file: acquired.map(|s| s.file.clone()),
                    line: acquired.map(|s| s.line),
                }
            })
            .collect();
        PotentialDeadlockView {
            cycle: steps.iter().map(|s| s.holds.clone()).collect(),
            steps,
        }
    }
}

/// The whole report.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Report {
    /// Number of processes.
    pub processes: usize,
    /// Number of events.
    pub events: u64,
    /// Synchronization edges found.
    pub sync_edges: usize,
    /// The races, data races first.
    pub races: Vec<Race>,
    /// Blocked processes and deadlocks.
    pub deadlocks: DeadlockView,
    /// Cycles in the lock-order graph: deadlocks this run escaped but another could hit.
    pub potential_deadlocks: Vec<PotentialDeadlockView>,
    /// What the analysis had to work around (damaged logs, missing events).
    pub notes: Vec<String>,
}

impl Report {
    /// Assembles the report.
    pub fn new<S: EventStore>(
        trace: &Trace<S>,
        clocks: &Clocks,
        data: &[DataRace],
        messages: &[MessageRace],
        deadlocks: &Deadlocks,
        potential: &[PotentialDeadlock],
    ) -> Report {
        let mut races = Vec::new();
        for r in data {
            let object = trace.object(r.object);
            races.push(Race {
                kind: "data",
                var: object.label(),
                object: object.id.to_string(),
                object_kind: object.kind.map(ObjectKind::name).unwrap_or("atomic"),
                count: r.count,
                a: Side::of(trace, clocks, r.a),
                b: Side::of(trace, clocks, r.b),
                receive: None,
                unordered: unordered(trace, clocks, r.a, r.b),
            });
        }
        for r in messages {
            let object = trace.object(r.channel);
            races.push(Race {
                kind: "message",
                var: object.label(),
                object: object.id.to_string(),
                object_kind: object.kind.map(ObjectKind::name).unwrap_or("channel"),
                count: r.count,
                a: Side::of(trace, clocks, r.received),
                b: Side::of(trace, clocks, r.other),
                receive: Some(Side::of(trace, clocks, r.receive)),
                unordered: unordered(trace, clocks, r.received, r.other),
            });
        }
        let mut notes = Vec::new();
        for p in trace.processes() {
            for d in &p.damage {
                notes.push(format!("{} ({}): {d}", p.name, p.id));
            }
        }
        notes.extend(clocks.notes().iter().cloned());
        Report {
            processes: trace.processes().len(),
            events: trace.event_count(),
            sync_edges: clocks.edge_count(),
            races,
            deadlocks: deadlock_view(trace, deadlocks),
            potential_deadlocks: potential
                .iter()
                .map(|d| PotentialDeadlockView::of(trace, d))
                .collect(),
            notes,
        }
    }
}

fn deadlock_view<S: EventStore>(trace: &Trace<S>, d: &Deadlocks) -> DeadlockView {
    let view = |i: usize| {
        let b = &d.blocked[i];
        let site = trace.site(trace.event(b.event).site);
        BlockedView {
            process: trace.process(b.process).name.clone(),
            pid: trace.process(b.process).id.0,
            waits_for: b.kind.name(),
            object: match b.object {
                Some(object) => trace.object(object).label(),
                None => b
                    .joins
                    .map(|child| trace.pid_label(child))
                    .unwrap_or_default(),
            },
            file: site.map(|s| s.file.clone()),
            line: site.map(|s| s.line),
            by: b
                .waits_for
                .iter()
                .map(|&q| trace.process(q).name.clone())
                .collect(),
            relation: match b.kind {
                crate::deadlock::WaitKind::Lock => "held_by",
                _ => "owed_by",
            },
            guessed: b.guessed,
            deadlocked: b.deadlocked,
            left_waiting: b.left_waiting,
        }
    };
    DeadlockView {
        running: d
            .endings
            .iter()
            .enumerate()
            .filter(|(_, e)| **e == Ending::Running)
            .map(|(p, _)| trace.process(p as u32).name.clone())
            .collect(),
        blocked: (0..d.blocked.len()).map(view).collect(),
        cycles: d
            .cycles
            .iter()
            .map(|c| c.iter().map(|&i| view(i)).collect())
            .collect(),
    }
}
