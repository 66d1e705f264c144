use ppd_formats::task::TaskStep;

use super::synth::{self, Fault as Inject, Sim};
use super::*;

fn analyse_run((trace, events): (Trace, Vec<TaskEvent>)) -> TaskReport {
    analyse(&trace, events)
}

/// `FAULT TASK SUBTASK NODE PROCESS AT` of each error.
fn lines(report: &TaskReport) -> Vec<String> {
    report
        .errors
        .iter()
        .map(|e| {
            format!(
                "{} {} {} {} {} {}",
                e.fault.name(),
                e.task,
                e.subtask,
                e.node,
                e.process.name(),
                e.at.as_deref().unwrap_or("-")
            )
        })
        .collect()
}

fn unit(vm: u64, task: u64, path: &[u32]) -> Unit {
    Unit {
        vm,
        task,
        path: path.to_vec(),
    }
}

#[test]
fn a_clean_farm_is_a_success() {
    let report = analyse_run(synth::farm(40, 4, Inject::None));
    assert_eq!(report.verdict, "success");
    assert!(report.errors.is_empty());
    assert_eq!((report.tasks, report.complete), (40, 40));
    assert_eq!(report.verdict_line(), "success: 40 tasks complete");
}

#[test]
fn a_panicking_task_is_located_at_its_worker_and_the_panic() {
    let report = analyse_run(synth::farm(40, 4, Inject::Panic(9)));
    // Task 9 is the second task of worker 2 (tasks go round: 1, 2, 3, 4, then 5 → 1 …).
    assert_eq!(
        lines(&report),
        ["PANIC 9 - worker-2/p2 computing src/work.rs:7"]
    );
    assert_eq!(report.errors[0].detail, "panicked: task input is poisoned");
    assert_eq!(
        report.verdict_line(),
        "failure: 1 error in 40 tasks (39 complete)"
    );
}

#[test]
fn a_hung_worker_is_a_process_fault_overtaken_by_later_tasks() {
    let report = analyse_run(synth::farm(40, 4, Inject::Hang(6)));
    assert_eq!(
        lines(&report),
        ["PROCESS 6 - worker-3/p3 computing src/main.rs:10"]
    );
    assert!(report.errors[0].overtaken);
    assert!(report.errors[0].detail.contains("hung or killed"));
}

#[test]
fn a_result_sent_and_never_received_is_lost_at_the_collector() {
    let report = analyse_run(synth::farm(20, 3, Inject::LoseResult(4)));
    assert_eq!(
        lines(&report),
        ["LOST 4 - main/p0 collecting src/main.rs:10"]
    );
}

#[test]
fn a_result_collected_twice_is_a_duplicate() {
    let report = analyse_run(synth::farm(20, 3, Inject::Duplicate(7)));
    assert_eq!(
        lines(&report),
        ["DUPLICATE 7 - main/p0 collecting src/main.rs:10"]
    );
    // Task 7 completed at its first collection and was let go: the second one finds it again.
    assert_eq!((report.tasks, report.complete), (20, 19));
}

/// The run `(trace, events)` followed to its end, keeping task `focus`.
fn followed((trace, events): (Trace, Vec<TaskEvent>), focus: Option<u64>) -> Followed {
    let marks: FastMap<EventRef, TaskEvent> = events.into_iter().map(|e| (e.at, e)).collect();
    follow(&trace, marks, focus).0
}

#[test]
fn a_farm_is_followed_holding_only_the_tasks_in_flight_and_keeps_none_that_completed() {
    let run = followed(synth::farm(500, 4, Inject::Hang(300)), None);
    // One task per worker is handed out at a time; the hung one stays open to the end.
    assert!(
        (4..=5).contains(&run.most_open),
        "at most {} tasks open at once",
        run.most_open
    );
    let kept: Vec<u64> = run.runs.units.keys().map(|u| u.task).collect();
    assert_eq!(kept, [300]);
    assert_eq!(run.complete_dropped, 499);
}

#[test]
fn the_task_in_focus_is_kept_with_its_clocks_though_it_completed() {
    let (trace, events) = synth::farm(40, 4, Inject::None);
    let run = followed((trace.clone(), events.clone()), Some(9));
    let kept: Vec<u64> = run.runs.units.keys().map(|u| u.task).collect();
    assert_eq!(kept, [9]);
    // Its event graph from the kept clocks is the one the whole clocks give.
    let kept = TaskGraph::build(&trace, &run.clocks, &run.runs, 1, 9);
    let clocks = Clocks::compute(&trace);
    let whole = TaskGraph::build(&trace, &clocks, &Runs::new(events), 1, 9);
    assert_eq!(format!("{kept:?}"), format!("{whole:?}"));
    assert_eq!(kept.arcs, [(0, 1), (1, 2), (2, 3)]);
}

#[test]
fn a_task_handed_out_and_never_begun_is_lost_at_the_worker_it_went_to() {
    let mut sim = Sim::new(3);
    let u = unit(1, 0, &[]);
    sim.mark(0, TaskStep::Farm, &u, 1);
    sim.mark(0, TaskStep::Give, &u, 2);
    sim.send(0, 2);
    let report = analyse_run(sim.finish());
    assert_eq!(
        lines(&report),
        ["LOST 0 - worker-2/p2 distributing src/main.rs:10"]
    );
}

/// Divide and conquer: the root split in two on worker 1, both children solved on worker 2.
fn split_in_two(sim: &mut Sim, join: bool, second_child_done: bool) {
    let root = unit(1, 0, &[]);
    sim.mark(0, TaskStep::Dc, &root, 1);
    sim.mark(0, TaskStep::Give, &root, 1);
    sim.message(0, 1);
    sim.mark(1, TaskStep::Begin, &root, 0);
    sim.mark(1, TaskStep::Split, &root, 2);
    sim.message(1, 0);
    sim.mark(0, TaskStep::Collect, &root, 0);
    for i in 0..2 {
        let child = unit(1, 0, &[i]);
        sim.mark(0, TaskStep::Give, &child, 2);
        sim.message(0, 2);
        sim.mark(2, TaskStep::Begin, &child, 0);
        if i == 1 && !second_child_done {
            sim.panic(2, "leaf failed", "src/leaf.rs", 3);
            return;
        }
        sim.mark(2, TaskStep::End, &child, 0);
        sim.message(2, 0);
        sim.mark(0, TaskStep::Collect, &child, 0);
    }
    if join {
        sim.mark(0, TaskStep::Join, &root, 2);
    }
}

#[test]
fn subtasks_that_came_back_and_were_never_joined_are_unjoined() {
    let mut sim = Sim::new(3);
    split_in_two(&mut sim, false, true);
    let report = analyse_run(sim.finish());
    assert_eq!(
        lines(&report),
        ["UNJOINED 0 - main/p0 joining src/main.rs:10"]
    );
}

#[test]
fn a_combine_that_panicked_is_a_panic_in_joining() {
    let mut sim = Sim::new(3);
    split_in_two(&mut sim, false, true);
    sim.panic(0, "cannot combine", "src/combine.rs", 12);
    let report = analyse_run(sim.finish());
    assert_eq!(
        lines(&report),
        ["PANIC 0 - main/p0 joining src/combine.rs:12"]
    );
}

#[test]
fn a_failed_subtask_is_the_frontier_and_its_unjoined_parent_is_not_listed() {
    let mut sim = Sim::new(3);
    split_in_two(&mut sim, false, false);
    let report = analyse_run(sim.finish());
    assert_eq!(
        lines(&report),
        ["PANIC 0 1 worker-2/p2 splitting/computing src/leaf.rs:3"]
    );
}

#[test]
fn a_joined_divide_and_conquer_is_a_success_and_its_graph_is_complete() {
    let mut sim = Sim::new(3);
    split_in_two(&mut sim, true, true);
    let (trace, events) = sim.finish();
    let clocks = Clocks::compute(&trace);
    let report = analyse(&trace, events.clone());
    assert_eq!(report.verdict, "success");
    let runs = Runs::new(events);
    let g = TaskGraph::build(&trace, &clocks, &runs, 1, 0);
    assert_eq!(g.events.len(), 4 + 2 * 4 + 1);
    // Every vertex of the coalesced graph holds what its roles expect.
    assert!(g.coalesced.iter().all(|v| v.complete), "{:?}", g.coalesced);
    // The data flow ends in one place: the join.
    assert_eq!(g.frontier.len(), 1);
    assert_eq!(g.events[g.frontier[0]].step, TaskStep::Join);
}

#[test]
fn a_task_graph_is_the_chain_give_begin_end_collect() {
    let (trace, events) = synth::farm(6, 2, Inject::Hang(3));
    let clocks = Clocks::compute(&trace);
    let runs = Runs::new(events);
    let g = TaskGraph::build(&trace, &clocks, &runs, 1, 2);
    let steps: Vec<TaskStep> = g.events.iter().map(|e| e.step).collect();
    assert_eq!(
        steps,
        [
            TaskStep::Give,
            TaskStep::Begin,
            TaskStep::End,
            TaskStep::Collect
        ]
    );
    assert_eq!(g.arcs, [(0, 1), (1, 2), (2, 3)]);
    let hung = TaskGraph::build(&trace, &clocks, &runs, 1, 3);
    assert_eq!(hung.frontier, [1]);
    assert!(hung.coalesced.iter().all(|v| !v.complete));
}

#[test]
fn a_panic_ranks_before_an_earlier_lost_result() {
    let mut sim = Sim::new(3);
    let (t0, t1) = (unit(1, 0, &[]), unit(1, 1, &[]));
    sim.mark(0, TaskStep::Farm, &t0, 2);
    for (t, w) in [(&t0, 1), (&t1, 2)] {
        sim.mark(0, TaskStep::Give, t, u64::from(w));
        sim.message(0, w);
        sim.mark(w, TaskStep::Begin, t, 0);
    }
    sim.mark(1, TaskStep::End, &t0, 0);
    sim.send(1, 0);
    sim.panic(2, "bad", "src/work.rs", 4);
    let report = analyse_run(sim.finish());
    assert_eq!(
        lines(&report),
        [
            "PANIC 1 - worker-2/p2 computing src/work.rs:4",
            "LOST 0 - main/p0 collecting src/main.rs:10"
        ]
    );
    assert_eq!(
        report.verdict_line(),
        "failure: 2 errors in 2 tasks (0 complete)"
    );
}

#[test]
fn nested_enter_guards_report_the_innermost_subtask() {
    let mut sim = Sim::new(3);
    // By hand: task 1, inside it subtask 1.4, which panics.
    let t1 = unit(0, 1, &[]);
    let t14 = unit(0, 1, &[4]);
    sim.mark(2, TaskStep::Begin, &t1, 0);
    sim.mark(2, TaskStep::Begin, &t14, 0);
    sim.panic(2, "bad", "src/hand.rs", 9);
    let report = analyse_run(sim.finish());
    assert_eq!(
        lines(&report),
        ["PANIC 1 4 worker-2/p2 computing src/hand.rs:9"]
    );
}

#[test]
fn tasks_left_when_the_last_worker_died_are_counted_as_never_handed_out() {
    let report = analyse_run(synth::farm(10, 1, Inject::Panic(0)));
    assert_eq!(
        lines(&report),
        ["PANIC 0 - worker-1/p1 computing src/work.rs:7"]
    );
    assert_eq!(report.never_handed_out, 9);
    assert_eq!(
        report.verdict_line(),
        "failure: 1 error in 10 tasks (0 complete), 9 never handed out"
    );
}
