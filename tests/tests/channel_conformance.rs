//! `ppd::channel` answers as crossbeam-channel does, in every mode: each case of the
//! `channel_conformance` program prints what its operations answered, and prints the same
//! run on its own (pass-through), recorded, and replayed with `--verify`.

use std::path::PathBuf;
use std::process::Command;

use ppd_tests::{assert_replays, output_text, record_program};

fn program() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_channel_conformance"))
}

/// The lines printed, sorted: a case's threads print in either order.
fn sorted(printed: &str) -> Vec<&str> {
    let mut lines: Vec<&str> = printed.lines().collect();
    lines.sort_unstable();
    lines
}

/// Runs case `case` alone, then recorded and replayed; each run must print `expected` (in
/// any order of lines).
fn conforms(case: &str, expected: &[&str]) {
    let mut expected = expected.to_vec();
    expected.sort_unstable();

    let alone = Command::new(program())
        .arg(case)
        .output()
        .expect("run the program");
    let (stdout, stderr) = output_text(&alone);
    assert!(alone.status.success(), "{case} alone failed: {stderr}");
    assert_eq!(sorted(&stdout), expected, "{case}, pass-through");

    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join(case);
    let recorded = record_program(work.path(), &dir, &program(), &[case], &[]);
    let (stdout, stderr) = output_text(&recorded);
    assert!(
        recorded.status.success(),
        "recording {case} failed: {stderr}"
    );
    assert_eq!(sorted(&stdout), expected, "{case}, recorded");

    assert_replays(work.path(), &dir, &stdout);
}

#[test]
fn a_rendezvous_try_send_is_taken_by_a_receive_or_selection_waiting_for_it() {
    conforms(
        "rendezvous-try-send",
        &[
            "alone: full, message back: true",
            "received: Ok(2)",
            "taken by the waiting receive: true",
            "selected: Ok(3)",
            "taken by the waiting selection: true",
        ],
    );
}

#[test]
fn every_send_fails_with_its_message_back_once_the_receiver_is_gone() {
    let mut expected = Vec::new();
    for channel in ["rendezvous", "bounded", "unbounded"] {
        for send in ["send", "try_send", "send_timeout"] {
            expected.push(format!("{channel} {send}: true"));
        }
    }
    let expected: Vec<&str> = expected.iter().map(String::as_str).collect();
    conforms("disconnected", &expected);
}

#[test]
fn a_send_timeout_with_nobody_to_take_the_message_times_out_and_hands_nothing_over() {
    conforms(
        "send-timeout",
        &[
            "full: timed out, message back: true, waited the timeout: true",
            "then: Ok(1) Err(Empty)",
            "rendezvous: timed out, message back: true, waited the timeout: true",
            "rendezvous then: Ok(8)",
            "rendezvous send: Ok(())",
        ],
    );
}

#[test]
fn timers_deliver_the_instant_they_were_due_and_are_empty_once_taken() {
    conforms(
        "timers",
        &[
            "after: delivered its due instant: true",
            "after: once: true",
            "at: delivered its instant: true",
            "tick 1: delivered its due instant: true",
            "tick due: len 1 full true",
            "tick 2: delivered its due instant: true",
            "tick taken: len 0 empty true again false",
            "tick 3: a period after the late one was taken: true",
        ],
    );
}

#[test]
fn select_accepts_every_arm_form_crossbeams_does_and_keeps_temporaries_alive() {
    conforms(
        "select-forms",
        &[
            "block and comma: Some(1)",
            "trailing commas: true Some(2)",
            "default alone: default, timeout waited: true",
            "temporaries: [None, Some(3)]",
        ],
    );
}

#[test]
fn select_biased_and_a_biased_select_choose_the_first_ready_operation_and_select_clones() {
    conforms(
        "biased",
        &[
            "select_biased!: the first receive, 20 times of 20",
            "select_biased!, sends too: Ok(\"send\") Ok(7) Ok(\"recv\")",
            "new_biased: first added: true Ok(5)",
            "cloned: 1 Ok(2)",
        ],
    );
}

#[test]
fn messages_need_not_be_send_and_the_ends_of_a_channel_of_send_messages_are_send_and_sync() {
    conforms(
        "non-send",
        &[
            "rc: Ok(4)",
            "any: Some(\"any\")",
            "std: Ok(5) Ok(6)",
            "cell: Ok(7)",
        ],
    );
}

#[test]
fn timers_past_the_end_of_time_are_never_and_endless_timeouts_wait_for_the_timer() {
    conforms(
        "far-timers",
        &[
            "past the end of time: never true true, empty Err(Empty) Err(Empty)",
            "endless timeout: true true",
        ],
    );
}

#[test]
fn a_select_s_operations_can_be_removed_and_ready_deadline_gives_up() {
    conforms(
        "select-remove",
        &[
            "removed: chose the one left: true Ok(2)",
            "ready_deadline: true",
            "the removed receive's message stays: Ok(1)",
        ],
    );
}

#[test]
fn an_unbiased_select_among_due_timers_and_ready_channels_chooses_each_in_turn() {
    conforms(
        "timer-fairness",
        &[
            "two due timers: each chosen at least a quarter of the time: true",
            "a channel and two due timers: each chosen at least a sixth of the time: true",
        ],
    );
}

#[test]
fn workers_racing_for_shared_timers_replay_with_the_deliveries_each_took() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("shared-timers");
    let recorded = record_program(work.path(), &dir, &program(), &["shared-timers"], &[]);
    let (stdout, stderr) = output_text(&recorded);
    assert!(recorded.status.success(), "recording failed: {stderr}");
    assert!(
        stdout.contains("every delivery taken once: true"),
        "{stdout}"
    );
    assert_eq!(stdout.matches(" took ").count(), 4, "{stdout}");
    // How many deliveries each worker took is the recorded run's; the replay prints it again.
    assert_replays(work.path(), &dir, &stdout);
}

#[test]
fn a_rendezvous_send_waiting_for_a_receive_fails_with_its_message_when_the_receiver_goes() {
    conforms(
        "send-waits-disconnect",
        &["send: Err(1)", "std send: Err(2)", "select send: Err(3)"],
    );
}

#[test]
fn selections_that_send_and_receive_on_one_rendezvous_channel_pair_up() {
    conforms("select-matching", &["paired: 4 sent, 4 received"]);
}

#[test]
fn a_send_a_selection_says_is_ready_succeeds_once_the_receive_has_moved_on() {
    conforms(
        "ready-send",
        &["every try_send the selection said was ready succeeded: true"],
    );
}

#[test]
fn a_receive_a_selection_says_is_ready_finds_the_send_that_woke_it() {
    conforms(
        "ready-recv",
        &[
            "try_sends taken: 0",
            "receives after ready that found nothing: 0",
        ],
    );
}
