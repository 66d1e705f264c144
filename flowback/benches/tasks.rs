//! `ppd analyze tasks` on a synthetic recording of a large processor farm, beside the figure of
//! Lin's thesis (§6.3: deTrEK took about 3 minutes on a Sun4 for a divide-and-conquer run of
//! 1000 tasks on 16 nodes).
//!
//! `cargo bench -p ppd-flowback --bench tasks` writes, with the real log writer, the recording a
//! farm of `PPD_BENCH_TASKS` tasks (default 1 000 000) on 16 workers would leave — per task a
//! hand-out, a message, begin and end marks, a message back and a collection, one task's work
//! panicking — then times what `ppd analyze tasks` does with it: read the logs, then follow the
//! tasks through the run as the vector clocks are computed (`TaskRecording::open`), then make
//! the error list from the tasks left open. Peak memory is the process's resident high-water
//! mark over the analysis (reset before it through `/proc/self/clear_refs`). It is measured at
//! 1000, 100 000 and `PPD_BENCH_TASKS` tasks so that its growth shows, with the most tasks that
//! were open at once (the analysis keeps no clock and no completed task; what grows with the
//! run is the compact events, shown apart). Nothing here gates: the goal (≤ 5 s, memory
//! proportional to the tasks in flight) is reported, not asserted.

use std::panic::Location;
use std::path::Path;
use std::time::Instant;

use ppd_flowback::tasks::TaskRecording;
use ppd_formats::event::ObjectKind;
use ppd_formats::manifest::Manifest;
use ppd_formats::task::{TaskMark, TaskStep};
use ppd_formats::{Borrowed, Event, LogWriter, ObjectId, ProcessId, Recording, WriterOptions};

#[path = "common/memory.rs"]
mod memory;
#[path = "common/settings.rs"]
mod settings;

use memory::{peak_rss, reset_peak_rss};
use settings::env_u64;

const WORKERS: u32 = 16;

fn name(id: u32) -> String {
    if id == 0 {
        "main".to_owned()
    } else {
        format!("farm-worker-{}", id - 1)
    }
}

/// Writes the recording of a farm of `tasks` tasks on [`WORKERS`] workers whose task `poison`
/// panics: tasks are handed out one per idle worker, then each busy worker answers in turn.
/// Returns the number of events written.
fn write_farm(dir: &Path, tasks: u64, poison: u64) -> u64 {
    let site = Location::caller();
    let names: Vec<String> = (0..=WORKERS).map(name).collect();
    let mut logs =
        Manifest::create_synthetic(dir, "farm", &names, WriterOptions::default()).unwrap();
    let mut written = 0u64;
    let mut put = |logs: &mut Vec<LogWriter>, p: u32, e: &Event<Borrowed<'_>>| {
        logs[p as usize].append(e).unwrap();
        written += 1;
    };
    let inbox = |w: u32| ObjectId::new(ProcessId(0), w - 1);
    let outbox = |w: u32| ObjectId::new(ProcessId(0), WORKERS + w - 1);
    let run = 1u64;
    put(&mut logs, 0, &Event::Start { parent: None });
    for w in 1..=WORKERS {
        for object in [inbox(w), outbox(w)] {
            put(
                &mut logs,
                0,
                &Event::Create {
                    object,
                    kind: ObjectKind::Channel,
                    init: 0,
                    name: None,
                    site: Some(site),
                },
            );
        }
        put(
            &mut logs,
            0,
            &Event::Spawn {
                child: ProcessId(w),
                site: Some(site),
            },
        );
        put(
            &mut logs,
            w,
            &Event::Start {
                parent: Some(ProcessId(0)),
            },
        );
    }
    let mark = |step: TaskStep, task: u64, arg: u64, value: &mut Vec<u8>| {
        *value = TaskMark(run, task, Vec::new(), arg).encode();
        step.label()
    };
    let mut value = Vec::new();
    let label = mark(TaskStep::Farm, 0, tasks, &mut value);
    put(
        &mut logs,
        0,
        &Event::Mark {
            label,
            site: Some(site),
            value: &value,
        },
    );
    let mut busy: Vec<Option<u64>> = vec![None; WORKERS as usize + 1];
    let mut dead = vec![false; WORKERS as usize + 1];
    let mut seq = vec![(0u64, 0u64); WORKERS as usize + 1];
    let mut next = 0;
    loop {
        for w in 1..=WORKERS {
            if busy[w as usize].is_none() && !dead[w as usize] && next < tasks {
                let label = mark(TaskStep::Give, next, u64::from(w), &mut value);
                put(
                    &mut logs,
                    0,
                    &Event::Mark {
                        label,
                        site: Some(site),
                        value: &value,
                    },
                );
                seq[w as usize].0 += 1;
                put(
                    &mut logs,
                    0,
                    &Event::Send {
                        channel: inbox(w),
                        seq: seq[w as usize].0,
                        site: Some(site),
                        payload: None,
                    },
                );
                busy[w as usize] = Some(next);
                next += 1;
            }
        }
        if busy.iter().all(Option::is_none) {
            break;
        }
        for w in 1..=WORKERS {
            let Some(task) = busy[w as usize].take() else {
                continue;
            };
            put(
                &mut logs,
                w,
                &Event::Recv {
                    channel: inbox(w),
                    sender: ProcessId(0),
                    seq: seq[w as usize].0,
                    site: Some(site),
                    payload: None,
                },
            );
            let label = mark(TaskStep::Begin, task, 0, &mut value);
            put(
                &mut logs,
                w,
                &Event::Mark {
                    label,
                    site: Some(site),
                    value: &value,
                },
            );
            if task == poison {
                put(
                    &mut logs,
                    w,
                    &Event::Panic {
                        message: "task input is poisoned",
                        file: "src/main.rs",
                        line: 7,
                    },
                );
                dead[w as usize] = true;
                continue;
            }
            let label = mark(TaskStep::End, task, 0, &mut value);
            put(
                &mut logs,
                w,
                &Event::Mark {
                    label,
                    site: Some(site),
                    value: &value,
                },
            );
            seq[w as usize].1 += 1;
            let s = seq[w as usize].1;
            put(
                &mut logs,
                w,
                &Event::Send {
                    channel: outbox(w),
                    seq: s,
                    site: Some(site),
                    payload: None,
                },
            );
            put(
                &mut logs,
                0,
                &Event::Recv {
                    channel: outbox(w),
                    sender: ProcessId(w),
                    seq: s,
                    site: Some(site),
                    payload: None,
                },
            );
            let label = mark(TaskStep::Collect, task, 0, &mut value);
            put(
                &mut logs,
                0,
                &Event::Mark {
                    label,
                    site: Some(site),
                    value: &value,
                },
            );
        }
    }
    for w in 1..=WORKERS {
        if !dead[w as usize] {
            put(&mut logs, w, &Event::Exit);
        }
    }
    put(&mut logs, 0, &Event::Exit);
    for log in logs {
        log.close().unwrap();
    }
    written
}

/// Where the run's events are while the analysis reads them: in the logs of `dir`, on disk.
fn breakdown(dir: &Path) {
    let recording = Recording::open(dir).unwrap();
    let logs: u64 = recording
        .processes()
        .iter()
        .map(|entry| std::fs::metadata(recording.log_path(entry)).map_or(0, |m| m.len()))
        .sum();
    println!(
        "  kept in memory: no event (read again from the logs, {:.1} MiB on disk), no clock, and \
         of each completed task one bit of a compressed bitmap",
        logs as f64 / 1048576.0
    );
}

fn measure(tasks: u64, detail: bool) {
    let dir = tempfile::tempdir().unwrap();
    let t = Instant::now();
    let events = write_farm(dir.path(), tasks, tasks / 2);
    let t_write = t.elapsed();
    let reset = reset_peak_rss();
    let base = peak_rss();
    let t = Instant::now();
    let recording = Recording::open(dir.path()).unwrap();
    let run = TaskRecording::open(&recording, None).unwrap();
    let t_open = t.elapsed();
    let t2 = Instant::now();
    let report = run.report();
    let t_tasks = t2.elapsed();
    let total = t.elapsed();
    let peak = peak_rss();
    let most_open = run.most_open();
    drop(run);
    assert_eq!(report.errors.len(), 1, "the one poisoned task");
    assert_eq!(report.errors[0].task, tasks / 2);
    println!(
        "{tasks} tasks on {WORKERS} workers: {events} events (written in {:.2} s)",
        t_write.as_secs_f64()
    );
    println!(
        "  read the logs, follow the tasks by the clocks  {:>8.2} s   (at most {most_open} tasks \
         open at once)",
        t_open.as_secs_f64()
    );
    println!(
        "  analyse the tasks                              {:>8.2} s",
        t_tasks.as_secs_f64()
    );
    println!(
        "  ppd analyze tasks, total                       {:>8.2} s   ({:.1} µs per task)",
        total.as_secs_f64(),
        total.as_secs_f64() * 1e6 / tasks as f64
    );
    match (peak, base, reset) {
        (Some(peak), Some(base), true) => println!(
            "  peak resident memory during the analysis       {:>8.1} MiB (above {:.1} MiB before; \
             {:.0} bytes per task)",
            peak as f64 / 1048576.0,
            base as f64 / 1048576.0,
            peak.saturating_sub(base) as f64 / tasks as f64
        ),
        (Some(peak), _, _) => println!(
            "  peak resident memory of the process            {:>8.1} MiB (could not reset the \
             high-water mark: includes writing the recording)",
            peak as f64 / 1048576.0
        ),
        _ => println!("  peak resident memory: not available on this system"),
    }
    println!(
        "  first error: {} task {} on {} ({})",
        report.errors[0].fault.name(),
        report.errors[0].task,
        report.errors[0].node,
        report.errors[0].process.name()
    );
    if detail {
        breakdown(dir.path());
    }
}

fn main() {
    // `cargo test --benches` runs this with `--bench`-less arguments: keep it short then.
    let quick = !std::env::args().any(|a| a == "--bench");
    let tasks = if quick {
        1000
    } else {
        env_u64("PPD_BENCH_TASKS", 1_000_000)
    };
    println!(
        "thesis §6.3: deTrEK on a Sun4 took about 3 minutes for a divide-and-conquer run of 1000 \
         tasks on 16 nodes (here: a farm)"
    );
    for smaller in [1000, 100_000] {
        if !quick && smaller < tasks {
            measure(smaller, false);
        }
    }
    measure(tasks, !quick);
    println!("goal: 1 M tasks on 16 workers in at most 5 s");
}
