//! `farm`: a processor farm. The `manager` hands tasks to `worker-0` … `worker-2` and collects
//! their results. One task (a poisoned input) makes its worker panic: the worker's process ends
//! with a `Panic` event, the manager notices the missing result and names the failed task
//! (the thesis's fault model: task, worker, process). The program exits with code 1.
//!
//! Try: `ppd record -- cargo run --example farm`, then `ppd info` (the panicking worker is
//! reported) or `ppd replay --stop 'worker-1: exit | manager: mark failed'`.

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::time::Duration;

use ppd::sync::mpsc::{Receiver, Sender, channel, named_channel};
use serde::{Deserialize, Serialize};

const WORKERS: usize = 3;
const TASKS: u64 = 24;
/// The input that breaks a worker.
const POISON: u64 = 13;

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Task {
    id: u64,
    input: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Outcome {
    task: u64,
    worker: usize,
    output: u64,
}

fn compute(input: u64) -> u64 {
    assert!(input != POISON, "cannot process input {input}");
    (1..=input).map(|k| k * k).sum()
}

fn worker(id: usize, tasks: Receiver<Task>, results: Sender<Outcome>) {
    for task in tasks.iter() {
        let output = compute(task.input);
        if results
            .send(Outcome {
                task: task.id,
                worker: id,
                output,
            })
            .is_err()
        {
            return;
        }
    }
}

fn manager(workers: Vec<Sender<Task>>, results: Receiver<Outcome>) -> Vec<(u64, usize)> {
    let mut assigned = BTreeMap::new();
    for id in 0..TASKS {
        // Task 9 carries the poisoned input; the others are random and harmless.
        let input = if id == 9 {
            POISON
        } else {
            ppd::rand::u64(14..=40)
        };
        let w = (id as usize) % WORKERS;
        assigned.insert(id, w);
        // A worker that died has dropped its inbox; its remaining tasks are lost too.
        let _ = workers[w].send(Task { id, input });
    }
    drop(workers);
    let mut done = BTreeMap::new();
    while done.len() < assigned.len() {
        match results.recv_timeout(Duration::from_millis(500)) {
            Ok(outcome) => {
                done.insert(outcome.task, outcome);
            }
            Err(_) => break,
        }
    }
    let failed: Vec<(u64, usize)> = assigned
        .iter()
        .filter(|(task, _)| !done.contains_key(task))
        .map(|(task, worker)| (*task, *worker))
        .collect();
    for (task, worker) in &failed {
        ppd::mark!("failed", (task, worker));
    }
    failed
}

#[ppd::main]
fn main() -> ExitCode {
    let (to_manager, results) = named_channel("results");
    let mut inboxes = Vec::new();
    let mut handles = Vec::new();
    for id in 0..WORKERS {
        let (tx, rx) = channel();
        inboxes.push(tx);
        let to_manager = to_manager.clone();
        handles.push(
            ppd::thread::Builder::new()
                .name(format!("worker-{id}"))
                .spawn(move || worker(id, rx, to_manager))
                .expect("spawn worker"),
        );
    }
    drop(to_manager);
    let m = ppd::thread::Builder::new()
        .name("manager".into())
        .spawn(move || manager(inboxes, results))
        .expect("spawn manager");
    let failed = m.join().expect("manager");
    for (id, h) in handles.into_iter().enumerate() {
        if h.join().is_err() {
            println!("worker-{id} died");
        }
    }
    if failed.is_empty() {
        println!("all {TASKS} tasks done");
        ExitCode::SUCCESS
    } else {
        for (task, worker) in &failed {
            println!("task {task} failed (worker-{worker})");
        }
        ExitCode::FAILURE
    }
}
