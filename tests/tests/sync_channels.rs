//! Bounded channels end to end: `sync_channel` (bounded and rendezvous) and crossbeam's API
//! as `ppd::channel` (a multi-consumer work queue, `select!`), recorded from real programs,
//! replayed with `--verify` and free of races; and a sender blocked on a full channel forever,
//! reported blocked at its send.

use std::path::{Path, PathBuf};

use ppd_formats::event::{ObjectKind, Outcome};
use ppd_formats::{Event, ObjectId, Recording};
use ppd_tests::{assert_no_races, assert_replays, info_json, ppd, processes, start_recording};
use serde_json::Value;

fn program() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_sync_channels"))
}

/// Records case `case` into `work/case`; returns the directory and the program's output.
fn record_case(work: &Path, case: &str) -> (PathBuf, String) {
    let dir = work.join(case);
    let out = ppd_tests::record_program(work, &dir, &program(), &[case], &[]);
    assert!(
        out.status.success(),
        "recording {case} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (dir, String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Every event of process `name`.
fn events(dir: &Path, name: &str) -> Vec<Event> {
    let recording = Recording::open(dir).unwrap();
    let entry = recording
        .find_process(name)
        .unwrap_or_else(|| panic!("no process {name}"))
        .clone();
    let log = recording.open_log(&entry).unwrap();
    (0..log.event_count())
        .map(|k| log.get(k).unwrap())
        .collect()
}

/// The objects of kind `kind` that process `name` created, by name.
fn created(dir: &Path, name: &str, kind: ObjectKind) -> Vec<(ObjectId, Option<String>)> {
    events(dir, name)
        .into_iter()
        .filter_map(|e| match e {
            Event::Create {
                object,
                kind: k,
                name,
                ..
            } if k == kind => Some((object, name.map(|n| n.to_string()))),
            _ => None,
        })
        .collect()
}

fn count(events: &[Event], matches: impl Fn(&Event) -> bool) -> usize {
    events.iter().filter(|e| matches(e)).count()
}

#[test]
fn a_bounded_pipeline_that_fills_up_replays_its_full_answer_and_every_permit() {
    let work = tempfile::tempdir().unwrap();
    let (dir, printed) = record_case(work.path(), "pipeline");
    assert_eq!(printed, "full: true\nreceived 40, sum 820\n");
    assert_replays(work.path(), &dir, &printed);
    assert_no_races(work.path(), &dir);

    // The channel's room: one semaphore, made by main with the channel.
    let rooms = created(&dir, "main", ObjectKind::Semaphore);
    assert_eq!(rooms.len(), 1, "{rooms:?}");
    let room = rooms[0].0;
    let producer = events(&dir, "producer");
    let main = events(&dir, "main");
    // Every send took a slot, every receive gave one back (and the receiver's end one more, to
    // wake any sender still waiting for room); the try_send's answer is logged.
    let takes = |e: &Event| matches!(e, Event::SemAcquire { object, .. } if *object == room);
    let gives = |e: &Event| matches!(e, Event::SemRelease { object, .. } if *object == room);
    assert_eq!(count(&producer, takes), 40);
    assert_eq!(count(&main, gives), 41);
    let full = |e: &Event| matches!(e, Event::Outcome { object, outcome: Outcome::WouldBlock, .. } if *object == room);
    assert_eq!(count(&producer, full), 1);
}

#[test]
fn a_rendezvous_send_returns_after_its_receive_so_reading_what_the_receiver_wrote_is_no_race() {
    let work = tempfile::tempdir().unwrap();
    let (dir, printed) = record_case(work.path(), "rendezvous");
    assert_eq!(printed, "worker read round 5\nrendezvous sum 15\n");
    assert_replays(work.path(), &dir, &printed);
    // The worker's read after its last send is ordered after main's write before its last
    // receive only through the handoff: a buffered channel would make it a race.
    assert_no_races(work.path(), &dir);
    let handoffs = created(&dir, "main", ObjectKind::Semaphore);
    assert_eq!(handoffs.len(), 2, "room and handoff: {handoffs:?}");
}

#[test]
fn a_crossbeam_work_queue_gives_each_job_to_one_worker_and_replays_who_took_which() {
    let work = tempfile::tempdir().unwrap();
    let (dir, printed) = record_case(work.path(), "work-queue");
    // 0² + … + 29² = 8555.
    assert_eq!(
        printed,
        "full: true, len 4, is_full true\nresults 30, squares 8555\n"
    );
    // Replaying three times: the workers' shares must come out as recorded whatever the
    // scheduling (which worker pulls a message off the carrier first).
    for _ in 0..3 {
        assert_replays(work.path(), &dir, &printed);
    }
    assert_no_races(work.path(), &dir);

    let queue = created(&dir, "main", ObjectKind::Channel)[0].0;
    let taken: usize = (0..3)
        .map(|w| {
            count(
                &events(&dir, &format!("worker{w}")),
                |e| matches!(e, Event::Recv { channel, .. } if *channel == queue),
            )
        })
        .sum();
    assert_eq!(taken, 30, "every job is received exactly once");
}

#[test]
fn select_over_two_receivers_with_a_timeout_replays_every_choice() {
    let work = tempfile::tempdir().unwrap();
    let (dir, printed) = record_case(work.path(), "select");
    // 0+2+…+18 and 1+3+…+19.
    assert_eq!(printed, "evens 90, odds 100\n");
    assert_replays(work.path(), &dir, &printed);
    assert_no_races(work.path(), &dir);
    let main = events(&dir, "main");
    // 20 messages and two disconnections, each chosen by a logged select.
    assert!(
        count(&main, |e| matches!(e, Event::Select { .. })) >= 22,
        "{main:?}"
    );
}

#[test]
fn a_sender_blocked_on_a_full_channel_forever_is_reported_blocked_at_its_send() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("hang");
    let mut child = start_recording(work.path(), &dir, program().to_str().unwrap(), &["hang"]);
    let mut polls = 0;
    loop {
        let last = Recording::open(&dir).ok().and_then(|r| {
            let entry = r.find_process("main")?.clone();
            let log = r.open_log(&entry).ok()?;
            log.event_count()
                .checked_sub(1)
                .and_then(|k| log.get(k).ok())
        });
        if matches!(last, Some(Event::Blocked { .. })) {
            break;
        }
        assert!(child.try_wait().unwrap().is_none(), "the program ended");
        polls += 1;
        assert!(polls < 3000, "main never blocked: {last:?}");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let pid = Recording::open(&dir).unwrap().manifest().os_pid as i32;
    // SAFETY: kill only sends a signal.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0);
    child.wait().unwrap();

    let info = info_json(work.path(), &dir);
    let main = &processes(&info)["main"];
    assert_eq!(main["ending"]["how"], "blocked", "{info:#}");
    assert_eq!(
        main["ending"]["on"], "semaphore room of a bounded channel",
        "{info:#}"
    );

    let out = ppd(work.path(), &["races", dir.to_str().unwrap(), "--json"]);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let blocked = report["deadlocks"]["blocked"].as_array().unwrap();
    assert_eq!(blocked.len(), 1, "{report:#}");
    assert_eq!(blocked[0]["process"], "main");
    assert_eq!(blocked[0]["waits_for"], "permit");
    assert_eq!(blocked[0]["file"], "tests/src/bin/sync_channels.rs");
    let source = include_str!("../src/bin/sync_channels.rs");
    let send_line = source
        .lines()
        .position(|l| l.contains("results.send(2)"))
        .unwrap()
        + 1;
    assert_eq!(blocked[0]["line"], send_line as u64, "{report:#}");
}

#[test]
fn tick_and_after_in_a_select_loop_replay_from_the_log_and_leave_no_false_hang() {
    let work = tempfile::tempdir().unwrap();
    let (dir, printed) = record_case(work.path(), "timers");
    assert_eq!(printed, "received 15, ticked true\n");
    for _ in 0..2 {
        assert_replays(work.path(), &dir, &printed);
    }
    // Two timers were never received from (one waited on in the select, one by nobody): no
    // process is reported blocked, and every process ended.
    assert_no_races(work.path(), &dir);
    let info = info_json(work.path(), &dir);
    for (name, process) in processes(&info) {
        assert_ne!(process["ending"]["how"], "blocked", "{name}: {info:#}");
    }
    // The timers are read through the logged clock: replay needs no timing of its own.
    let main = events(&dir, "main");
    assert!(count(&main, |e| matches!(e, Event::Clock { .. })) > 3);
}

#[test]
fn why_re_executes_an_eblock_receiving_from_a_bounded_channel_through_its_room() {
    let work = tempfile::tempdir().unwrap();
    let (dir, printed) = record_case(work.path(), "eblock");
    // (10·2 + 20) + (30·2 + 40) + (50·2 + 60).
    assert_eq!(printed, "doubled total 300\n");
    assert_replays(work.path(), &dir, &printed);
    // The rebuilt receiver knows no room; the re-execution still serves the room's logged
    // release after the first receive, gets to the second, and explains the value back to
    // its send.
    let out = ppd(
        work.path(),
        &[
            "why",
            dir.to_str().unwrap(),
            "main",
            "%0",
            "--at",
            "doubled#2",
        ],
    );
    let (stdout, stderr) = ppd_tests::output_text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    for part in ["%0 = 100", "got = 30", "next = 40", "message 3 from feeder"] {
        assert!(stdout.contains(part), "{part:?} missing: {stdout}");
    }
}

#[test]
fn select_with_send_arms_replays_which_worker_got_each_job_and_timers_alone_sleep() {
    let work = tempfile::tempdir().unwrap();
    let (dir, printed) = record_case(work.path(), "select-send");
    // 1² + … + 30², and the timers' selection: `at` fires, `never` times out.
    let lines: Vec<&str> = printed.lines().collect();
    assert!(lines[0].starts_with("squares 9455, worker-0 "), "{printed}");
    assert_eq!(lines[1], "at, timed out, same true true true", "{printed}");
    // How the jobs were split is the run's; replay gives the same split.
    assert_replays(work.path(), &dir, &printed);
    // The two workers' results race on the results channel (that is the program's design);
    // the job queues' rooms order every send after the receive that made room: no data race.
    let out = ppd(work.path(), &["races", "--json", dir.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    for race in report["races"].as_array().unwrap() {
        assert_eq!(race["kind"], "message", "{report:#}");
    }
    let none = Value::Array(vec![]);
    assert_eq!(report["deadlocks"]["blocked"], none, "{report:#}");
    // Thirty jobs went out through send arms: thirty logged choices of a send operation
    // (index 0 or 1: the receive is 2) and thirty sends.
    let main = events(&dir, "main");
    let send_choices = count(&main, |e| matches!(e, Event::Select { index: 0 | 1, .. }));
    assert_eq!(send_choices, 30, "{main:?}");
    assert_eq!(count(&main, |e| matches!(e, Event::Send { .. })), 30);
    // The timers-only selections slept at the user's `select!`, and blocked on no channel.
    let source = include_str!("../src/bin/sync_channels.rs");
    let sleeps: Vec<u32> = main
        .iter()
        .filter_map(|e| match e {
            Event::Sleep {
                site: Some(site), ..
            } => Some(site.line),
            _ => None,
        })
        .collect();
    assert!(!sleeps.is_empty(), "{main:?}");
    for line in sleeps {
        let text = source.lines().nth(line as usize - 1).unwrap();
        assert!(
            text.contains("ppd::select!"),
            "sleep at line {line}: {text}"
        );
    }
    let blocked_after_jobs = main
        .iter()
        .skip_while(|e| !matches!(e, Event::Join { .. }))
        .filter(|e| matches!(e, Event::Blocked { .. }))
        .count();
    assert_eq!(blocked_after_jobs, 0, "{main:?}");
}

#[test]
fn why_re_executes_an_eblock_with_an_unbounded_channel_and_the_semaphore_made_after_it() {
    let work = tempfile::tempdir().unwrap();
    let (dir, printed) = record_case(work.path(), "eblock-unbounded");
    assert_eq!(printed, "released total 63\n");
    assert_replays(work.path(), &dir, &printed);
    // The semaphore is the object made right after the channel, where a bounded channel's
    // room would be: its release, at its own line, is the e-block's, not the channel's.
    let out = ppd(
        work.path(),
        &[
            "why",
            dir.to_str().unwrap(),
            "main",
            "%0",
            "--at",
            "received_then_released#2",
        ],
    );
    let (stdout, stderr) = ppd_tests::output_text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    for part in ["%0 = 21", "got = 20", "message 2 from feeder"] {
        assert!(stdout.contains(part), "{part:?} missing: {stdout}");
    }
    assert!(!stdout.contains("leak"), "{stdout}");
}

/// The wake-up of a bounded channel's last receiver's drop replays in the process that did it
/// in the recorded run, even when another process's drop is the last in the replay: which
/// clone of an `Arc` holding the receiver goes last is not logged.
#[test]
fn the_last_receivers_wake_up_replays_where_it_was_recorded_whoever_drops_last_in_the_replay() {
    let work = tempfile::tempdir().unwrap();
    let flag = work.path().join("first-waits");
    let flag_arg = flag.to_str().unwrap();
    for (first_waits_recorded, last) in [(true, "first"), (false, "second")] {
        if first_waits_recorded {
            std::fs::write(&flag, b"").unwrap();
        }
        let dir = work.path().join(format!("last-{last}"));
        let out = ppd_tests::record_program(
            work.path(),
            &dir,
            &program(),
            &["last-receiver", flag_arg],
            &[],
        );
        let (stdout, stderr) = ppd_tests::output_text(&out);
        assert!(out.status.success(), "{stderr}");
        assert!(
            stdout.contains("second send disconnected: true"),
            "{stdout}"
        );
        let wake_ups = |name: &str| {
            count(&events(&dir, name), |e| {
                matches!(e, Event::SemRelease { site: Some(s), .. }
                    if s.file == "tests/src/bin/sync_channels.rs"
                        && s.line == line_of_channel())
            })
        };
        assert_eq!(
            (wake_ups("first"), wake_ups("second")),
            if last == "first" { (1, 0) } else { (0, 1) },
            "the worker that slept dropped the receiver and woke main"
        );
        // The other worker sleeps in the replay, so the drop that runs the receiver's is its.
        if first_waits_recorded {
            std::fs::remove_file(&flag).unwrap();
        } else {
            std::fs::write(&flag, b"").unwrap();
        }
        assert_replays(work.path(), &dir, "");
        let _ = std::fs::remove_file(&flag);
    }
}

/// The line of `last_receiver`'s `sync_channel`, where its room's wake-up is logged.
fn line_of_channel() -> u32 {
    let source = include_str!("../src/bin/sync_channels.rs");
    ppd_tests::line_of(source, "shared_rx) = mpsc::sync_channel") as u32
}
