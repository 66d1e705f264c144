//! `task_cases`: task-oriented ppd programs, each with one injected failure, for the end-to-end
//! tests of `ppd analyze tasks` (tests/tests/tasks.rs).
//!
//! ```text
//! task_cases farm-panic   a farm of 100 tasks on 4 workers; the work of task 37 panics
//! task_cases farm-hang    a farm of 40 tasks on 4 workers; the work of task 0 never returns
//! task_cases dc-hang      divide and conquer over 1..=64 on 3 workers; the split of subtask 0
//!                         (1..=32) never returns
//! task_cases hand-farm    a hand-written farm labelled with `ppd::task::enter`; task 5 panics
//! task_cases clean        a farm of 50 tasks and a divide and conquer, all fine
//! task_cases farm-env     a farm of 8 tasks on 2 workers whose work multiplies by
//!                         TASK_CASES_SALT, read from the environment, which ppd does not log
//! task_cases farm-eblock  a farm of 4 tasks on 1 worker whose work is an e-block
//! task_cases dc-combine   divide and conquer over 1..=512 on 2 workers whose combine adds in
//!                         16 bits: from subtask 1 (257..=512) up, the sums wrap
//! task_cases farm-nodes ADDRESS_FILE N [BIND]
//!                         a farm of 30 tasks over N worker OS processes: listens on BIND
//!                         (default 127.0.0.1:0), writes its address to ADDRESS_FILE, and
//!                         waits for N `node-worker`s
//! task_cases node-worker ADDRESS HANG
//!                         a worker node of that farm; its work for task HANG never returns
//! ```
//!
//! `tests/scripts/task-nodes.sh` runs a farm node and its workers on one host,
//! `tests/scripts/task-two-hosts.sh` on two.
//!
//! Work that hangs first prints `hanging PID` (the program's process id), and every other work
//! prints `computed`, so a test can wait until everything but the hung task is done before it
//! kills the run.

use std::io::Write;
use std::process::ExitCode;

use ppd::sync::mpsc::{Sender, channel};
use ppd::thread::Builder;

/// Tells the test how far the run is.
fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

/// Blocks this thread for good; only a kill ends the run, so it says which process to kill.
fn hang() -> ! {
    say(&format!("hanging {}", std::process::id()));
    loop {
        std::thread::park();
    }
}

fn square_sum(n: u64) -> u64 {
    (1..=n).map(|k| k * k).sum()
}

fn farm_panic() -> ExitCode {
    let results = ppd::task::farm(4, (0..100u64).collect(), |n| {
        assert!(n != 37, "task input {n} is poisoned");
        square_sum(n)
    });
    say(&format!("{} results", results.len()));
    ExitCode::SUCCESS
}

fn farm_hang() -> ExitCode {
    let results = ppd::task::farm(4, (0..40u64).collect(), |n| {
        if n == 0 {
            hang();
        }
        let r = square_sum(n);
        say("computed");
        r
    });
    say(&format!("{} results", results.len()));
    ExitCode::SUCCESS
}

/// Splits a range in halves down to 16 numbers; sums the leaves.
fn split(&(lo, hi): &(u64, u64)) -> Option<Vec<(u64, u64)>> {
    (hi - lo >= 16).then(|| {
        let mid = (lo + hi) / 2;
        vec![(lo, mid), (mid + 1, hi)]
    })
}

fn dc_hang() -> ExitCode {
    // 1..=64 splits into 1..=32 (subtask 0) and 33..=64 (subtask 1), then each into two leaves
    // of 16; the split of 1..=32 hangs, the two leaves of 33..=64 are computed.
    let sum = ppd::task::divide_and_conquer(
        3,
        (1u64, 64u64),
        |range: &(u64, u64)| {
            if *range == (1, 32) {
                hang();
            }
            split(range)
        },
        |(lo, hi)| {
            say("computed");
            (lo..=hi).sum::<u64>()
        },
        |parts| parts.into_iter().sum(),
    );
    say(&format!("sum {sum}"));
    ExitCode::SUCCESS
}

fn hand_farm() -> ExitCode {
    const WORKERS: u64 = 3;
    const TASKS: u64 = 12;
    let (results_tx, results) = channel::<(u64, u64)>();
    let mut inboxes: Vec<Sender<u64>> = Vec::new();
    let mut handles = Vec::new();
    for w in 0..WORKERS {
        let (tx, rx) = channel::<u64>();
        inboxes.push(tx);
        let results_tx = results_tx.clone();
        handles.push(
            Builder::new()
                .name(format!("worker-{w}"))
                .spawn(move || {
                    for id in rx.iter() {
                        let _task = ppd::task::enter(id);
                        assert!(id != 5, "task {id} cannot be computed");
                        if results_tx.send((id, square_sum(id))).is_err() {
                            return;
                        }
                    }
                })
                .expect("spawn a worker"),
        );
    }
    drop(results_tx);
    for id in 0..TASKS {
        // A worker that died has dropped its inbox: its tasks are lost.
        let _ = inboxes[(id % WORKERS) as usize].send(id);
    }
    drop(inboxes);
    let done = results.iter().count() as u64;
    for h in handles {
        let _ = h.join();
    }
    say(&format!("{done} of {TASKS} tasks done"));
    if done == TASKS {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn clean() -> ExitCode {
    let squares = ppd::task::farm(3, (0..50u64).collect(), square_sum);
    let sum = ppd::task::divide_and_conquer(
        2,
        (1u64, 100u64),
        split,
        |(lo, hi)| (lo..=hi).sum::<u64>(),
        |parts| parts.into_iter().sum(),
    );
    assert_eq!(squares.len(), 50);
    assert_eq!(squares[10], 385);
    assert_eq!(sum, 5050);
    say("all done");
    ExitCode::SUCCESS
}

fn farm_env() -> ExitCode {
    let results = ppd::task::farm(2, (1..=8u64).collect(), |n| {
        let salt: u64 = std::env::var("TASK_CASES_SALT")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(1);
        n * salt
    });
    say(&format!("{results:?}"));
    ExitCode::SUCCESS
}

#[ppd::eblock]
fn scaled(n: u64) -> u64 {
    let tripled = n * 3;
    tripled + 1
}

fn farm_eblock() -> ExitCode {
    let results = ppd::task::farm(1, (0..4u64).collect(), scaled);
    say(&format!("{results:?}"));
    ExitCode::SUCCESS
}

fn dc_combine() -> ExitCode {
    // Leaves of 16 numbers; 1..=256 sums to 32896, which fits in 16 bits, 257..=512 to 98432,
    // which does not: the combine of subtask 1 gives 32896, the root's 256.
    let sum = ppd::task::divide_and_conquer(
        2,
        (1u64, 512u64),
        split,
        |(lo, hi)| (lo..=hi).sum::<u64>(),
        |parts| {
            let total = parts
                .iter()
                .fold(0u16, |total, &part| total.wrapping_add(part as u16));
            u64::from(total)
        },
    );
    say(&format!("sum {sum}"));
    ExitCode::SUCCESS
}

fn farm_nodes(address_file: &str, workers: usize, bind: &str) -> ExitCode {
    let listener = ppd::net::TcpListener::bind(bind).expect("bind a free port");
    let address = listener.local_addr().expect("the bound address");
    std::fs::write(address_file, address.to_string()).expect("write the address file");
    let results: Vec<u64> = ppd::task::farm_nodes(&listener, workers, (0..30u64).collect());
    say(&format!("{} results", results.len()));
    ExitCode::SUCCESS
}

fn node_worker(address: &str, hang_task: u64) -> ExitCode {
    let served = ppd::task::serve(address, |n: u64| {
        if n == hang_task {
            hang();
        }
        let r = square_sum(n);
        say("computed");
        r
    });
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("task_cases node-worker: {e}");
            ExitCode::FAILURE
        }
    }
}

#[ppd::main]
fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let arg = |i: usize| args.get(i).map_or("", String::as_str);
    let mode = arg(1);
    match mode {
        "farm-nodes" => farm_nodes(
            arg(2),
            arg(3).parse().expect("a number of workers"),
            args.get(4).map_or("127.0.0.1:0", String::as_str),
        ),
        "node-worker" => node_worker(arg(2), arg(3).parse().expect("the task that hangs")),
        "farm-panic" => farm_panic(),
        "farm-hang" => farm_hang(),
        "dc-hang" => dc_hang(),
        "hand-farm" => hand_farm(),
        "clean" => clean(),
        "farm-env" => farm_env(),
        "farm-eblock" => farm_eblock(),
        "dc-combine" => dc_combine(),
        other => {
            eprintln!(
                "task_cases: unknown case {other:?} (farm-panic, farm-hang, dc-hang, hand-farm, \
                 clean, farm-env, farm-eblock, dc-combine, farm-nodes, node-worker)"
            );
            ExitCode::from(2)
        }
    }
}
