//! The task analysis over recordings written with the real log writer: task marks are read
//! back from the logs, a mark with a reserved label but a foreign value is a note (never a
//! panic, never trusted), and a log cut short still gives its tasks.

use std::panic::Location;
use std::path::Path;

use ppd_flowback::tasks::TaskRecording;
use ppd_formats::manifest::Manifest;
use ppd_formats::task::{TaskMark, TaskStep};
use ppd_formats::{Borrowed, Event, ProcessId, Recording};

mod common;
use common::{manifest, write_log};

fn mark<'a>(step: TaskStep, value: &'a [u8]) -> Event<Borrowed<'a>> {
    Event::Mark {
        label: step.label(),
        site: Some(Location::caller()),
        value,
    }
}

/// A worker (p1, by hand with `enter`) that begins tasks 0 and 1, ends task 0, and whose mark
/// for task 2 carries a string instead of a task value.
fn write_recording(dir: &Path) {
    manifest(&[(0, "main"), (1, "worker")])
        .write(dir, false)
        .unwrap();
    write_log(
        dir,
        0,
        "main",
        &[Event::Start { parent: None }, Event::Exit],
    );
    let begin0 = TaskMark(0, 0, vec![], 0).encode();
    let end0 = TaskMark(0, 0, vec![], 0).encode();
    let begin1 = TaskMark(0, 1, vec![], 0).encode();
    let foreign = ppd_formats::value::encode("not a task").unwrap();
    write_log(
        dir,
        1,
        "worker",
        &[
            Event::Start {
                parent: Some(ProcessId(0)),
            },
            mark(TaskStep::Begin, &begin0),
            mark(TaskStep::End, &end0),
            mark(TaskStep::Begin, &foreign),
            mark(TaskStep::Begin, &begin1),
            Event::Panic {
                message: "task 1 failed",
                file: "src/worker.rs",
                line: 17,
            },
        ],
    );
}

#[test]
fn marks_are_read_back_and_a_foreign_value_is_a_note() {
    let tmp = tempfile::tempdir().unwrap();
    write_recording(tmp.path());
    let recording = Recording::open(tmp.path()).unwrap();
    let report = TaskRecording::open(&recording, None).unwrap().report();
    assert_eq!(report.verdict, "failure");
    assert_eq!((report.tasks, report.complete), (2, 1));
    let e = &report.errors[0];
    assert_eq!(
        (e.fault.name(), e.task, e.node.as_str(), e.at.as_deref()),
        ("PANIC", 1, "worker/p1", Some("src/worker.rs:17"))
    );
    assert_eq!(report.notes.len(), 1, "{:?}", report.notes);
    assert!(
        report.notes[0].contains("worker (p1) event 3: a ppd.task.begin mark whose value"),
        "{:?}",
        report.notes
    );
}

#[test]
fn a_log_whose_end_is_cut_off_is_analysed_with_what_it_still_holds() {
    let tmp = tempfile::tempdir().unwrap();
    write_recording(tmp.path());
    // Cut off the end of the worker's log: its index and footer are damaged, its frames not.
    let log = tmp.path().join(Manifest::log_name(ProcessId(1)));
    let bytes = std::fs::read(&log).unwrap();
    std::fs::write(&log, &bytes[..bytes.len() - 40]).unwrap();
    let recording = Recording::open(tmp.path()).unwrap();
    let run = TaskRecording::open(&recording, None).unwrap();
    assert!(
        !run.trace.process(1).damage.is_empty(),
        "the cut is noticed"
    );
    let report = run.report();
    assert_eq!((report.tasks, report.complete), (2, 1));
    assert_eq!(report.errors[0].fault.name(), "PANIC");
    assert_eq!(report.errors[0].task, 1);
}
