//! Synthetic task runs, built event by event as `ppd::task` and the runtime would log them:
//! for the tests of the analysis and for its benchmark.

use std::collections::HashMap;

use ppd_formats::event::ObjectKind;
use ppd_formats::task::TaskStep;
use ppd_formats::{ObjectId, ProcessId};

use super::{TaskEvent, Unit};
use crate::trace::{EventRef, NO_SITE, ObjIdx, Op, SiteId, Trace, TraceBuilder};

/// A run being built: processes, one channel per ordered pair of them, and the task marks.
#[derive(Debug)]
pub(crate) struct Sim {
    builder: TraceBuilder,
    channels: HashMap<(u32, u32), (ObjIdx, u64)>,
    events: Vec<TaskEvent>,
    site: SiteId,
    labels: HashMap<TaskStep, u32>,
}

impl Sim {
    /// A run of `processes` processes: `main` (p0) and `worker-1` … .
    pub(crate) fn new(processes: u32) -> Sim {
        let mut builder = Trace::builder();
        for p in 0..processes {
            let name = if p == 0 {
                "main".to_owned()
            } else {
                format!("worker-{p}")
            };
            let parent = (p > 0).then_some(ProcessId(0));
            builder.add_process(ProcessId(p), &name, parent);
        }
        let site = builder.site("src/main.rs", 10, 5);
        let labels = TaskStep::ALL
            .iter()
            .map(|s| (*s, builder.name(s.label())))
            .collect();
        Sim {
            builder,
            channels: HashMap::new(),
            events: Vec::new(),
            site,
            labels,
        }
    }

    /// Logs task step `step` of `unit` in process `p`.
    pub(crate) fn mark(&mut self, p: u32, step: TaskStep, unit: &Unit, arg: u64) -> EventRef {
        let label = self.labels[&step];
        let at = self.builder.push(p, Op::Mark { label }, self.site);
        self.events.push(TaskEvent {
            step,
            unit: unit.clone(),
            arg,
            at,
        });
        at
    }

    /// Process `from` sends a message that `to` receives.
    pub(crate) fn message(&mut self, from: u32, to: u32) {
        let (channel, seq) = self.send(from, to);
        self.builder.push(
            to,
            Op::Recv {
                channel,
                sender: ProcessId(from),
                seq,
            },
            self.site,
        );
    }

    /// Process `from` sends a message to `to` that is never received.
    pub(crate) fn send(&mut self, from: u32, to: u32) -> (ObjIdx, u64) {
        let next = self.channels.len() as u32;
        let builder = &mut self.builder;
        let entry = self.channels.entry((from, to)).or_insert_with(|| {
            let id = ObjectId::new(ProcessId(0), next);
            (builder.define_object(id, ObjectKind::Channel, 0, None), 0)
        });
        entry.1 += 1;
        let (channel, seq) = *entry;
        self.builder
            .push(from, Op::Send { channel, seq }, self.site);
        (channel, seq)
    }

    /// Process `p` panics with `message` at `file:line`.
    pub(crate) fn panic(&mut self, p: u32, message: &str, file: &str, line: u32) {
        let message = self.builder.name(message);
        let site = self.builder.site(file, line, 0);
        self.builder.push(p, Op::Panic { message }, site);
    }

    /// Process `p` exits.
    pub(crate) fn exit(&mut self, p: u32) {
        self.builder.push(p, Op::Exit, NO_SITE);
    }

    /// Marks process `p`'s log as cut off by a crash.
    pub(crate) fn killed(&mut self, p: u32) {
        self.builder.set_complete(p, false);
    }

    /// The trace and its task marks.
    pub(crate) fn finish(self) -> (Trace, Vec<TaskEvent>) {
        (self.builder.build(), self.events)
    }
}

/// What goes wrong in a synthetic farm.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fault {
    /// Nothing.
    None,
    /// The work of this task panics (its worker's process ends).
    Panic(u64),
    /// The worker of this task never finishes it, and the run is killed at the end.
    Hang(u64),
    /// The result of this task is sent and never received.
    LoseResult(u64),
    /// The result of this task is collected twice.
    Duplicate(u64),
}

/// A farm of `tasks` tasks on `workers` workers (p1 …), run 1 of p0, with at most `workers`
/// tasks in flight: each worker gets a new task when its result comes back.
pub(crate) fn farm(tasks: u64, workers: u32, fault: Fault) -> (Trace, Vec<TaskEvent>) {
    let mut sim = Sim::new(workers + 1);
    let unit = |task| Unit {
        vm: 1,
        task,
        path: Vec::new(),
    };
    sim.mark(0, TaskStep::Farm, &unit(0), tasks);
    let mut dead = vec![false; workers as usize + 1];
    let mut busy: Vec<Option<u64>> = vec![None; workers as usize + 1];
    let mut next = 0;
    loop {
        // Hand a task to every idle, live worker.
        for w in 1..=workers {
            if busy[w as usize].is_none() && !dead[w as usize] && next < tasks {
                sim.mark(0, TaskStep::Give, &unit(next), u64::from(w));
                sim.message(0, w);
                busy[w as usize] = Some(next);
                next += 1;
            }
        }
        if busy.iter().all(Option::is_none) {
            break;
        }
        // Each busy worker computes and answers, in worker order.
        for w in 1..=workers {
            let Some(task) = busy[w as usize] else {
                continue;
            };
            sim.mark(w, TaskStep::Begin, &unit(task), 0);
            match fault {
                Fault::Panic(t) if t == task => {
                    sim.panic(w, "task input is poisoned", "src/work.rs", 7);
                    dead[w as usize] = true;
                    busy[w as usize] = None;
                    continue;
                }
                Fault::Hang(t) if t == task => {
                    dead[w as usize] = true;
                    busy[w as usize] = None;
                    sim.killed(w);
                    continue;
                }
                _ => {}
            }
            sim.mark(w, TaskStep::End, &unit(task), 0);
            if fault == Fault::LoseResult(task) {
                sim.send(w, 0);
            } else {
                sim.message(w, 0);
                sim.mark(0, TaskStep::Collect, &unit(task), 0);
                if fault == Fault::Duplicate(task) {
                    sim.message(w, 0);
                    sim.mark(0, TaskStep::Collect, &unit(task), 0);
                }
            }
            busy[w as usize] = None;
        }
    }
    for w in 1..=workers {
        if !dead[w as usize] {
            sim.exit(w);
        }
    }
    sim.finish()
}
