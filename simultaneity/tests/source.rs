//! The DCFG built from Rust source, and the static verdicts on predicates over it. Programs
//! are real Rust: the two of `tests/src/bin` that the end-to-end tests also record, and small
//! ones written here.

use expect_test::{Expect, expect};
use ppd_simultaneity::source::{self, Program, SourceError};
use ppd_simultaneity::{Combination, Component, Event, check, render};

const ORDERED: &str = include_str!("../../tests/src/bin/ordered_sections.rs");
const OVERLAPPING: &str = include_str!("../../tests/src/bin/overlapping_sections.rs");

fn program(text: &str) -> Program {
    source::from_sources(&[("prog.rs".to_owned(), text.to_owned())]).unwrap()
}

/// `P: EVENT [NAME]` joined by `==` or `&`.
fn components(pred: &str) -> (Combination, Vec<Component>) {
    let (how, sep) = if pred.contains("==") {
        (Combination::Simultaneous, "==")
    } else {
        (Combination::Conjunctive, "&")
    };
    let cs = pred
        .split(sep)
        .map(|s| {
            let (process, event) = s.split_once(':').unwrap();
            let mut words = event.split_whitespace();
            let kw = words.next().unwrap();
            let name = words.next().map(str::to_owned);
            let event = match kw {
                "enter" => Event::Enter(name.unwrap()),
                "exit" => Event::Exit(name.unwrap()),
                "send" => Event::Send(name),
                "recv" => Event::Recv(name),
                "mark" => Event::Mark(name.unwrap()),
                _ => panic!("{kw}"),
            };
            Component {
                process: process.trim().to_owned(),
                event,
            }
        })
        .collect();
    (how, cs)
}

/// The verdict on `pred` over `text`, as `ppd check` prints it.
fn verdict(text: &str, pred: &str, expect: Expect) {
    let prog = program(text);
    let (how, cs) = components(pred);
    let out = match check(&prog, how, &cs) {
        Ok(v) => render(&prog, &cs, &v),
        Err(e) => format!("error: {e}\n"),
    };
    expect.assert_eq(&out);
}

/// Each process's nodes with their successors, then the message edges.
fn graph(text: &str, expect: Expect) {
    let prog = program(text);
    let g = &prog.graph;
    let mut out = String::new();
    for (p, proc) in g.processes.iter().enumerate() {
        out.push_str(&format!("{}:\n", proc.name));
        for (n, node) in g.nodes.iter().enumerate().filter(|(_, x)| x.process == p) {
            let succ: Vec<String> = g.succ[n].iter().map(|s| s.to_string()).collect();
            out.push_str(&format!("  {n} {} -> [{}]\n", node.label, succ.join(" ")));
        }
    }
    for (s, r) in &g.messages {
        out.push_str(&format!("message {s} -> {r}\n"));
    }
    expect.assert_eq(&out);
}

#[test]
fn an_acknowledgement_protocol_orders_the_critical_sections() {
    verdict(
        ORDERED,
        "first: enter critical_first == second: enter critical_second",
        expect![[r#"
            impossible in every run: `first: enter critical_first` and `second: enter critical_second` never hold together
              `first: enter critical_first` is over before `second: enter critical_second` holds:
                exit critical_first at prog.rs:32 (first)
                send on `done_tx`/`done_rx` at prog.rs:33 (first)
                receive on `done_tx`/`done_rx` at prog.rs:41 (second)
                enter critical_second at prog.rs:42 (second)
        "#]],
    );
}

#[test]
fn the_same_protocol_with_the_wait_after_the_section_lets_them_overlap() {
    verdict(
        OVERLAPPING,
        "first: enter critical_first == second: enter critical_second",
        expect![[r#"
            possible: no guaranteed interaction orders the components
              `first: enter critical_first` is evaluated at:
                enter critical_first at prog.rs:32
              `second: enter critical_second` is evaluated at:
                enter critical_second at prog.rs:41
              recognition point in `main`: join first at prog.rs:46
                after join first at prog.rs:46 (may carry end, before a join at prog.rs:35)
                after join first at prog.rs:46 (may carry send on `ack_tx`/`ack_rx` at prog.rs:43)
              recognition point in `first`: receive on `ack_tx`/`ack_rx` at prog.rs:34
                after enter critical_first at prog.rs:32
                after receive on `ack_tx`/`ack_rx` at prog.rs:34 (may carry send on `ack_tx`/`ack_rx` at prog.rs:43)
              recognition point in `second`: receive on `done_tx`/`done_rx` at prog.rs:42
                after receive on `done_tx`/`done_rx` at prog.rs:42 (may carry send on `done_tx`/`done_rx` at prog.rs:33)
                after enter critical_second at prog.rs:41
        "#]],
    );
}

/// A worker that sends on every other turn of a loop, and a main that receives until the
/// channel closes.
const CONDITIONAL: &str = r#"
use ppd::sync::mpsc::channel;

#[ppd::main]
fn main() {
    let (tx, rx) = channel();
    let w = ppd::thread::Builder::new()
        .name("worker".into())
        .spawn(move || {
            for i in 0..10 {
                if i % 2 == 0 {
                    tx.send(i).unwrap();
                }
                ppd::mark!("turn", i);
            }
        })
        .unwrap();
    while let Ok(v) = rx.recv() {
        ppd::mark!("got", v);
    }
    w.join().unwrap();
}
"#;

#[test]
fn a_conditional_send_in_a_loop() {
    graph(
        CONDITIONAL,
        expect![[r#"
            main:
              0 start at prog.rs:4 -> [2]
              1 end at prog.rs:22 -> []
              2 statement at prog.rs:6 -> [3]
              3 statement at prog.rs:7 -> [4]
              4 spawn worker at prog.rs:7 -> [15]
              15 statement at prog.rs:18 -> [16]
              16 loop at prog.rs:18 -> [17 18]
              17 receive without a message at prog.rs:18 -> [20]
              18 receive on `tx`/`rx` at prog.rs:18 -> [19]
              19 mark got at prog.rs:19 -> [16]
              20 statement at prog.rs:21 -> [21]
              21 join worker at prog.rs:21 -> [1]
            worker:
              5 start at prog.rs:9 -> [8 7]
              6 end at prog.rs:16 -> []
              7 end, before a join at prog.rs:16 -> [6]
              8 start, after the spawn at prog.rs:9 -> [9 7]
              9 statement at prog.rs:10 -> [10 7]
              10 loop at prog.rs:10 -> [11 7]
              11 statement at prog.rs:11 -> [12 14 7]
              12 statement at prog.rs:12 -> [13 7]
              13 send on `tx`/`rx` at prog.rs:12 -> [14 7]
              14 mark turn at prog.rs:14 -> [10 7]
            message 4 -> 8
            message 7 -> 21
            message 13 -> 18
        "#]],
    );
    // Every turn's mark may come before or after a send: nothing orders it with a receive.
    verdict(
        CONDITIONAL,
        "worker: mark turn & main: recv",
        expect![[r#"
            possible: no guaranteed interaction orders the components
              `worker: mark turn` is evaluated at:
                mark turn at prog.rs:14
              `main: recv` is evaluated at:
                receive on `tx`/`rx` at prog.rs:18
              recognition point in `main`: loop at prog.rs:18
                after receive on `tx`/`rx` at prog.rs:18 (may carry send on `tx`/`rx` at prog.rs:12)
                after receive on `tx`/`rx` at prog.rs:18
        "#]],
    );
}

#[test]
fn a_mark_before_a_send_and_one_after_its_receive() {
    let text = r#"
use ppd::sync::mpsc::channel;

#[ppd::main]
fn main() {
    let (tx, rx) = channel();
    let w = ppd::thread::Builder::new()
        .name("worker".into())
        .spawn(move || {
            ppd::mark!("before");
            tx.send(1).unwrap();
        })
        .unwrap();
    let v: u32 = rx.recv().unwrap();
    ppd::mark!("after", v);
    w.join().unwrap();
}
"#;
    // Right after each mark, in one state: the send after `before` must have reached `after`.
    verdict(
        text,
        "worker: mark before & main: mark after",
        expect![[r#"
        impossible in every run: `worker: mark before` and `main: mark after` never hold together
          `worker: mark before` is over before `main: mark after` holds:
            mark before at prog.rs:10 (worker)
            send on `tx`/`rx` at prog.rs:11 (worker)
            receive on `tx`/`rx` at prog.rs:14 (main)
            mark after at prog.rs:15 (main)
    "#]],
    );
    // Under `==` a mark holds from the mark on, so both hold once both have run.
    verdict(
        text,
        "worker: mark before == main: mark after",
        expect![[r#"
        possible: no guaranteed interaction orders the components
          `worker: mark before` is evaluated at:
            mark before at prog.rs:10
          `main: mark after` is evaluated at:
            mark after at prog.rs:15
          recognition point in `main`: mark after at prog.rs:15
            after receive on `tx`/`rx` at prog.rs:14 (may carry send on `tx`/`rx` at prog.rs:11)
            after mark after at prog.rs:15
    "#]],
    );
    // A receive that may find nothing guarantees nothing.
    verdict(
        &text.replace("rx.recv().unwrap()", "rx.try_recv().unwrap_or(0)"),
        "worker: mark before & main: mark after",
        expect![[r#"
            possible: no guaranteed interaction orders the components
              `worker: mark before` is evaluated at:
                mark before at prog.rs:10
              `main: mark after` is evaluated at:
                mark after at prog.rs:15
              recognition point in `main`: mark after at prog.rs:15
                after receive on `tx`/`rx` at prog.rs:14 (may carry send on `tx`/`rx` at prog.rs:11)
                after mark after at prog.rs:15
        "#]],
    );
}

#[test]
fn a_call_that_gets_a_channel_end_is_followed_into_the_function() {
    verdict(
        r#"
use ppd::sync::mpsc::{Sender, channel};

fn pass(tx: Sender<u32>) {
    tx.send(1).unwrap();
}

#[ppd::eblock]
fn critical() {}

#[ppd::main]
fn main() {
    let (tx, rx) = channel();
    let w = ppd::thread::Builder::new()
        .name("worker".into())
        .spawn(move || {
            ppd::mark!("before");
            pass(tx);
        })
        .unwrap();
    rx.recv().unwrap();
    critical();
    w.join().unwrap();
}
"#,
        "worker: mark before & main: enter critical",
        expect![[r#"
            impossible in every run: `worker: mark before` and `main: enter critical` never hold together
              `worker: mark before` is over before `main: enter critical` holds:
                mark before at prog.rs:17 (worker)
                send on `tx`/`rx` at prog.rs:5 (worker)
                receive on `tx`/`rx` at prog.rs:21 (main)
                enter critical at prog.rs:22 (main)
        "#]],
    );
}

#[test]
fn names_of_unnamed_and_replicated_processes() {
    let text = r#"
#[ppd::main]
fn main() {
    let a = ppd::thread::spawn(|| ppd::mark!("x"));
    let b = ppd::thread::spawn(|| ppd::mark!("y"));
    let many: Vec<_> = (0..3)
        .map(|i| ppd::thread::Builder::new().name(format!("w{i}")).spawn(move || ppd::mark!("z")))
        .collect();
}
"#;
    verdict(
        text,
        "main.1: mark x == main.2: mark y",
        expect![[r#"
        possible: no guaranteed interaction orders the components
          `main.1: mark x` is evaluated at:
            mark x at prog.rs:4
          `main.2: mark y` is evaluated at:
            mark y at prog.rs:5
    "#]],
    );
    verdict(
        text,
        "w1: mark z == main.2: mark y",
        expect![[r#"
        unknown: the analysis cannot decide
          no process is named `w1` in the source; the names of the processes spawned at prog.rs:7 are not known
    "#]],
    );
}

#[test]
fn bad_input_is_a_typed_error() {
    let err = source::from_sources(&[(
        "bad.rs".to_owned(),
        "fn main() {\n  let x = ;\n}".to_owned(),
    )])
    .unwrap_err();
    expect!["bad.rs:2:11: cannot parse: expected an expression"].assert_eq(&err.to_string());
    assert!(matches!(err, SourceError::Parse { line: 2, .. }));
    let err =
        source::from_sources(&[("lib.rs".to_owned(), "fn unused() {}".to_owned())]).unwrap_err();
    expect!["no `#[ppd::main]` function (nor a `fn main`) in lib.rs"].assert_eq(&err.to_string());
    verdict(
        ORDERED,
        "first: enter critical_first == third: enter critical_second",
        expect![[r#"
        error: no process `third` in the program (its processes: main, first, second)
    "#]],
    );
    verdict(
        ORDERED,
        "first: enter nowhere == second: enter critical_second",
        expect![[r#"
        unknown: the analysis cannot decide
          no `enter nowhere` found in process `first`
    "#]],
    );
}

/// Every program of the workspace's examples and test programs builds a graph (or is refused
/// with a typed error), and every predicate over its processes gets a verdict: no panic.
#[test]
fn every_workspace_program_gets_a_graph_and_verdicts() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    for dir in ["examples", "tests/src/bin"] {
        for e in std::fs::read_dir(root.join(dir)).unwrap() {
            let path = e.unwrap().path();
            if path.extension().is_some_and(|x| x == "rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    let mut built = 0;
    for f in &files {
        let Ok(prog) = source::load(f) else {
            continue;
        };
        built += 1;
        let names: Vec<String> = prog
            .processes
            .iter()
            .filter_map(|p| p.name.clone())
            .take(4)
            .collect();
        for a in &names {
            for b in &names {
                for how in [Combination::Simultaneous, Combination::Conjunctive] {
                    let cs = [
                        Component {
                            process: a.clone(),
                            event: Event::Recv(None),
                        },
                        Component {
                            process: b.clone(),
                            event: Event::Send(None),
                        },
                    ];
                    let v = check(&prog, how, &cs).unwrap();
                    render(&prog, &cs, &v);
                }
            }
        }
    }
    assert!(built >= 10, "only {built} of {} files built", files.len());
}

#[test]
fn a_channel_that_goes_through_a_struct_or_comes_back_from_a_function_is_unknown() {
    // The ends come back from `make`: the analysis does not follow values out of a call.
    verdict(
        r#"
use ppd::sync::mpsc::{Receiver, Sender, channel};

fn make() -> (Sender<u32>, Receiver<u32>) {
    channel()
}

#[ppd::main]
fn main() {
    let (tx, rx) = make();
    let w = ppd::thread::Builder::new()
        .name("worker".into())
        .spawn(move || {
            ppd::mark!("before");
            tx.send(1).unwrap();
        })
        .unwrap();
    rx.recv().unwrap();
    ppd::mark!("after");
    w.join().unwrap();
}
"#,
        "worker: mark before & main: mark after",
        expect![[r#"
            unknown: the analysis cannot decide
              `.send` on `tx`, whose channel is not known at prog.rs:15
              `.recv` on `rx`, whose channel is not known at prog.rs:18
        "#]],
    );
    // The sender is a struct's field.
    verdict(
        r#"
use ppd::sync::mpsc::{Sender, channel};

struct Out {
    tx: Sender<u32>,
}

#[ppd::main]
fn main() {
    let (tx, rx) = channel();
    let out = Out { tx };
    let w = ppd::thread::Builder::new()
        .name("worker".into())
        .spawn(move || {
            ppd::mark!("before");
            out.tx.send(1).unwrap();
        })
        .unwrap();
    rx.recv().unwrap();
    ppd::mark!("after");
    w.join().unwrap();
}
"#,
        "worker: mark before & main: mark after",
        expect![[r#"
            unknown: the analysis cannot decide
              channel end `tx` used where the analysis cannot follow it at prog.rs:11
              `.send` on `out.tx`, whose channel is not known at prog.rs:16
        "#]],
    );
}

#[test]
fn a_recursive_function_is_not_followed_into_itself() {
    verdict(
        r#"
use ppd::sync::mpsc::{Sender, channel};

fn ping(tx: &Sender<u32>, n: u32) {
    if n > 0 {
        tx.send(n).unwrap();
        ping(tx, n - 1);
    }
}

#[ppd::main]
fn main() {
    let (tx, rx) = channel();
    let w = ppd::thread::Builder::new()
        .name("worker".into())
        .spawn(move || {
            ppd::mark!("before");
            ping(&tx, 3);
        })
        .unwrap();
    rx.recv().unwrap();
    ppd::mark!("after");
    w.join().unwrap();
}
"#,
        "worker: mark before & main: mark after",
        expect![[r#"
            unknown: the analysis cannot decide
              channel end `tx` used where the analysis cannot follow it at prog.rs:7
              call of `ping`, which communicates, is not followed at prog.rs:7
        "#]],
    );
}

#[test]
fn a_name_rebound_by_a_pattern_is_no_longer_the_channel_end() {
    // The loop's `tx` is each sender of `others`, not the channel of `rx`: its send is on an
    // unknown channel, which may feed `rx`, so nothing is guaranteed.
    verdict(
        r#"
use ppd::sync::mpsc::channel;

#[ppd::main]
fn main() {
    let (tx, rx) = channel();
    let others = vec![tx.clone()];
    let w = ppd::thread::Builder::new()
        .name("worker".into())
        .spawn(move || {
            ppd::mark!("before");
            for tx in others {
                tx.send(1).unwrap();
            }
        })
        .unwrap();
    drop(tx);
    rx.recv().unwrap();
    ppd::mark!("after");
    w.join().unwrap();
}
"#,
        "worker: mark before & main: mark after",
        expect![[r#"
            unknown: the analysis cannot decide
              `tx.clone()` used where the analysis cannot follow it at prog.rs:7
              `.send` on `tx`, whose channel is not known at prog.rs:13
        "#]],
    );
}

#[test]
fn a_channel_end_a_closure_captures_guarantees_nothing_for_its_channel() {
    let text = r#"
use ppd::sync::mpsc::channel;

#[ppd::main]
fn main() {
    let (tx, rx) = channel();
    let (tx2, rx2) = channel::<u32>();
    let tx3 = tx.clone();
    let w = ppd::thread::Builder::new()
        .name("worker".into())
        .spawn(move || {
            ppd::mark!("before");
            tx.send(1).unwrap();
        })
        .unwrap();
    let later = move || external::forward(CAPTURED);
    rx.recv().unwrap();
    rx2.recv().unwrap();
    ppd::mark!("after");
    w.join().unwrap();
    later();
}
"#;
    // The closure hands on an end of the other channel: `rx`'s message still comes from the
    // worker only.
    verdict(
        &text.replace("CAPTURED", "tx2"),
        "worker: mark before & main: mark after",
        expect![[r#"
            impossible in every run: `worker: mark before` and `main: mark after` never hold together
              `worker: mark before` is over before `main: mark after` holds:
                mark before at prog.rs:12 (worker)
                send on `tx`/`rx` at prog.rs:13 (worker)
                receive on `tx`/`rx` at prog.rs:17 (main)
                mark after at prog.rs:19 (main)
        "#]],
    );
    // It hands on a clone of the worker's sender: `rx` may get a message from elsewhere.
    verdict(
        &text.replace("CAPTURED", "tx3"),
        "worker: mark before & main: mark after",
        expect![[r#"
            unknown: the analysis cannot decide
              channel end `tx3` used inside a closure at prog.rs:16
        "#]],
    );
}

#[test]
fn a_point_after_an_endless_loop_is_not_reachable() {
    verdict(
        r#"
use ppd::sync::mpsc::channel;

#[ppd::main]
fn main() {
    let (tx, rx) = channel();
    let w = ppd::thread::Builder::new()
        .name("worker".into())
        .spawn(move || {
            ppd::mark!("before");
            tx.send(1).unwrap();
        })
        .unwrap();
    loop {
        rx.recv().unwrap();
    }
    ppd::mark!("after");
}
"#,
        "worker: mark before & main: mark after",
        expect![[r#"
            unknown: the analysis cannot decide
              mark after at prog.rs:17 is not reachable in the graph
        "#]],
    );
}

#[test]
fn labelled_loops_let_else_early_return_and_a_scope() {
    graph(
        r#"
use ppd::sync::mpsc::channel;

#[ppd::main]
fn main() {
    let (tx, rx) = channel::<u32>();
    let (back_tx, back_rx) = channel::<u32>();
    ppd::thread::scope(|s| {
        s.spawn(move || {
            'outer: loop {
                let Ok(v) = rx.recv() else { break };
                match v {
                    0 => continue 'outer,
                    1 => break 'outer,
                    _ => {}
                }
                if back_tx.send(v).is_err() {
                    return;
                }
            }
            ppd::mark!("done");
        });
    });
    tx.send(2).unwrap();
    let got = back_rx.recv_timeout(std::time::Duration::from_millis(5))?;
    ppd::mark!("got", got);
}
"#,
        expect![[r#"
            main:
              0 start at prog.rs:4 -> [2]
              1 end at prog.rs:27 -> []
              2 statement at prog.rs:6 -> [3]
              3 statement at prog.rs:7 -> [4]
              4 statement at prog.rs:8 -> [5]
              5 statement at prog.rs:9 -> [6]
              6 spawn main.1 at prog.rs:9 -> [22]
              22 statement at prog.rs:24 -> [23]
              23 send on `tx`/`rx` at prog.rs:24 -> [24]
              24 statement at prog.rs:25 -> [25 26]
              25 receive without a message at prog.rs:25 -> [1]
              26 receive on `back_tx`/`back_rx` at prog.rs:25 -> [1 27]
              27 mark got at prog.rs:26 -> [1]
            main.1:
              7 start at prog.rs:9 -> [10 9]
              8 end at prog.rs:22 -> []
              9 end, before a join at prog.rs:22 -> [8]
              10 start, after the spawn at prog.rs:9 -> [11 9]
              11 statement at prog.rs:10 -> [12 9]
              12 loop at prog.rs:10 -> [13 9]
              13 statement at prog.rs:11 -> [14 15 9]
              14 receive without a message at prog.rs:11 -> [16 9]
              15 receive on `tx`/`rx` at prog.rs:11 -> [17 9]
              16 statement at prog.rs:11 -> [21 9]
              17 statement at prog.rs:12 -> [12 18 21 9]
              18 statement at prog.rs:17 -> [19 9]
              19 send on `back_tx`/`back_rx` at prog.rs:17 -> [20 12 9]
              20 statement at prog.rs:18 -> [9]
              21 mark done at prog.rs:21 -> [9]
            message 6 -> 10
            message 23 -> 15
            message 19 -> 26
        "#]],
    );
}

#[test]
fn a_spawn_and_a_join_order_the_parent_and_the_child() {
    let text = r#"
#[ppd::main]
fn main() {
    ppd::mark!("before");
    let h = ppd::thread::Builder::new()
        .name("worker".into())
        .spawn(|| ppd::mark!("inside"))
        .unwrap();
    JOIN.join().unwrap();
    ppd::mark!("after");
}
"#;
    let joined = text.replace("JOIN", "h");
    verdict(
        &joined,
        "main: mark before & worker: mark inside",
        expect![[r#"
        impossible in every run: `main: mark before` and `worker: mark inside` never hold together
          `main: mark before` is over before `worker: mark inside` holds:
            mark before at prog.rs:4 (main)
            spawn worker at prog.rs:5 (main)
            start, after the spawn at prog.rs:7 (worker)
            mark inside at prog.rs:7 (worker)
    "#]],
    );
    verdict(
        &joined,
        "worker: mark inside & main: mark after",
        expect![[r#"
        impossible in every run: `worker: mark inside` and `main: mark after` never hold together
          `worker: mark inside` is over before `main: mark after` holds:
            mark inside at prog.rs:7 (worker)
            end, before a join at prog.rs:7 (worker)
            join worker at prog.rs:9 (main)
            mark after at prog.rs:10 (main)
    "#]],
    );
    // A join of a handle the analysis does not know orders nothing.
    let other = text.replace("JOIN", "{ let g = h; g }");
    verdict(
        &other,
        "worker: mark inside & main: mark after",
        expect![[r#"
        possible: no guaranteed interaction orders the components
          `worker: mark inside` is evaluated at:
            mark inside at prog.rs:7
          `main: mark after` is evaluated at:
            mark after at prog.rs:10
    "#]],
    );
}

#[test]
fn a_program_of_several_files_is_read_through_its_modules() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    std::fs::create_dir_all(src.join("net")).unwrap();
    std::fs::write(
        src.join("main.rs"),
        r#"mod net;
mod work;

#[ppd::main]
fn main() {
    let (tx, rx) = ppd::sync::mpsc::channel();
    let w = ppd::thread::Builder::new()
        .name("worker".into())
        .spawn(move || work::run(tx))
        .unwrap();
    net::wait(rx);
    ppd::mark!("after");
    w.join().unwrap();
}
"#,
    )
    .unwrap();
    std::fs::write(
        src.join("work.rs"),
        "pub fn run(tx: ppd::sync::mpsc::Sender<u32>) {\n    ppd::mark!(\"before\");\n    tx.send(1).unwrap();\n}\n",
    )
    .unwrap();
    std::fs::write(
        src.join("net/mod.rs"),
        "pub fn wait(rx: ppd::sync::mpsc::Receiver<u32>) {\n    rx.recv().unwrap();\n}\n",
    )
    .unwrap();
    // A stray file with a parse error that the program does not include is not read.
    std::fs::write(src.join("stray.rs"), "fn (").unwrap();
    let prog = source::load(dir.path()).unwrap_or_else(|e| panic!("{e}"));
    let (how, cs) = components("worker: mark before & main: mark after");
    let v = check(&prog, how, &cs).unwrap();
    let root = dir.path().display().to_string();
    expect![[r#"
        impossible in every run: `worker: mark before` and `main: mark after` never hold together
          `worker: mark before` is over before `main: mark after` holds:
            mark before at DIR/src/work.rs:2 (worker)
            send on `tx`/`rx` at DIR/src/work.rs:3 (worker)
            receive on `tx`/`rx` at DIR/src/net/mod.rs:2 (main)
            mark after at DIR/src/main.rs:12 (main)
    "#]]
    .assert_eq(&render(&prog, &cs, &v).replace(&root, "DIR"));
}

#[test]
fn an_eblock_named_as_a_value_may_run_anywhere() {
    let text = r#"
use ppd::sync::mpsc::channel;

#[ppd::eblock]
fn critical(k: u32) -> u32 {
    k
}

#[ppd::main]
fn main() {
    let (tx, rx) = channel();
    let w = ppd::thread::Builder::new()
        .name("worker".into())
        .spawn(move || {
            critical(0);
            tx.send(1).unwrap();
        })
        .unwrap();
    let _: Vec<u32> = (0..2).map(critical).collect();
    rx.recv().unwrap();
    critical(2);
    w.join().unwrap();
}
"#;
    verdict(
        text,
        "worker: enter critical == main: enter critical",
        expect![[r#"
            unknown: the analysis cannot decide
              process `main` may reach `enter critical` in code the analysis does not follow
        "#]],
    );
    // A local of the same name is not the function.
    verdict(
        &text.replace(
            "let _: Vec<u32> = (0..2).map(critical).collect();",
            "{ let critical = 3u32; let _ = critical + 1; }",
        ),
        "worker: enter critical == main: enter critical",
        expect![[r#"
            impossible in every run: `worker: enter critical` and `main: enter critical` never hold together
              `worker: enter critical` is over before `main: enter critical` holds:
                exit critical at prog.rs:15 (worker)
                send on `tx`/`rx` at prog.rs:16 (worker)
                receive on `tx`/`rx` at prog.rs:20 (main)
                enter critical at prog.rs:21 (main)
        "#]],
    );
}

#[test]
fn an_ordering_through_a_third_process_names_every_hop() {
    verdict(
        r#"
use ppd::sync::mpsc::channel;

#[ppd::main]
fn main() {
    let (ab_tx, ab_rx) = channel::<u32>();
    let (bc_tx, bc_rx) = channel::<u32>();
    let a = ppd::thread::Builder::new()
        .name("a".into())
        .spawn(move || {
            ppd::mark!("first");
            ab_tx.send(1).unwrap();
        })
        .unwrap();
    let b = ppd::thread::Builder::new()
        .name("b".into())
        .spawn(move || {
            let v = ab_rx.recv().unwrap();
            bc_tx.send(v).unwrap();
        })
        .unwrap();
    bc_rx.recv().unwrap();
    ppd::mark!("last");
}
"#,
        "a: mark first & main: mark last",
        expect![[r#"
            impossible in every run: `a: mark first` and `main: mark last` never hold together
              `a: mark first` is over before `main: mark last` holds:
                mark first at prog.rs:11 (a)
                send on `ab_tx`/`ab_rx` at prog.rs:12 (a)
                receive on `ab_tx`/`ab_rx` at prog.rs:18 (b)
                send on `bc_tx`/`bc_rx` at prog.rs:19 (b)
                receive on `bc_tx`/`bc_rx` at prog.rs:22 (main)
                mark last at prog.rs:23 (main)
        "#]],
    );
}

#[test]
fn an_eblock_whose_body_is_followed_still_closes_at_its_exit() {
    verdict(
        r#"
use ppd::sync::mpsc::{Sender, channel};

#[ppd::eblock]
fn first_section(log: &Sender<u32>) {
    log.send(0).unwrap();
}

#[ppd::eblock]
fn second_section() {}

#[ppd::main]
fn main() {
    let (log_tx, log_rx) = channel();
    let (done_tx, done_rx) = channel();
    let a = ppd::thread::Builder::new()
        .name("a".into())
        .spawn(move || {
            first_section(&log_tx);
            done_tx.send(1).unwrap();
        })
        .unwrap();
    let b = ppd::thread::Builder::new()
        .name("b".into())
        .spawn(move || {
            let _: u32 = done_rx.recv().unwrap();
            second_section();
        })
        .unwrap();
    let _: u32 = log_rx.recv().unwrap();
}
"#,
        "a: enter first_section == b: enter second_section",
        expect![[r#"
            impossible in every run: `a: enter first_section` and `b: enter second_section` never hold together
              `a: enter first_section` is over before `b: enter second_section` holds:
                exit first_section at prog.rs:19 (a)
                send on `done_tx`/`done_rx` at prog.rs:20 (a)
                receive on `done_tx`/`done_rx` at prog.rs:26 (b)
                enter second_section at prog.rs:27 (b)
        "#]],
    );
}

#[test]
fn a_send_cannot_reach_a_receive_that_comes_before_its_message() {
    // §2: the second send's message is the second on the channel, so the first receive
    // cannot get it; the first receive then has one sender and guarantees its send.
    let text = r#"
use ppd::sync::mpsc::channel;

#[ppd::main]
fn main() {
    let (tx, rx) = channel();
    let w = ppd::thread::Builder::new()
        .name("worker".into())
        .spawn(move || {
            ppd::mark!("first");
            tx.SEND(1).unwrap();
            ppd::mark!("between");
            tx.send(2).unwrap();
        })
        .unwrap();
    let _: u32 = rx.recv().unwrap();
    ppd::mark!("one");
    let _: u32 = rx.recv().unwrap();
    ppd::mark!("two");
    w.join().unwrap();
}
"#;
    let pruned = text.replace("SEND", "send");
    graph(
        &pruned,
        expect![[r#"
            main:
              0 start at prog.rs:4 -> [2]
              1 end at prog.rs:21 -> []
              2 statement at prog.rs:6 -> [3]
              3 statement at prog.rs:7 -> [4]
              4 spawn worker at prog.rs:7 -> [15]
              15 statement at prog.rs:16 -> [16 17]
              16 receive without a message at prog.rs:16 -> [1]
              17 receive on `tx`/`rx` at prog.rs:16 -> [18]
              18 mark one at prog.rs:17 -> [19]
              19 statement at prog.rs:18 -> [20 21]
              20 receive without a message at prog.rs:18 -> [1]
              21 receive on `tx`/`rx` at prog.rs:18 -> [22]
              22 mark two at prog.rs:19 -> [23]
              23 statement at prog.rs:20 -> [24]
              24 join worker at prog.rs:20 -> [1]
            worker:
              5 start at prog.rs:9 -> [8 7]
              6 end at prog.rs:14 -> []
              7 end, before a join at prog.rs:14 -> [6]
              8 start, after the spawn at prog.rs:9 -> [9 7]
              9 mark first at prog.rs:10 -> [10 7]
              10 statement at prog.rs:11 -> [11 7]
              11 send on `tx`/`rx` at prog.rs:11 -> [12 7]
              12 mark between at prog.rs:12 -> [13 7]
              13 statement at prog.rs:13 -> [14 7]
              14 send on `tx`/`rx` at prog.rs:13 -> [7]
            message 4 -> 8
            message 7 -> 24
            message 11 -> 17
            message 11 -> 21
            message 14 -> 21
        "#]],
    );
    verdict(
        &pruned,
        "worker: mark first & main: mark one",
        expect![[r#"
        impossible in every run: `worker: mark first` and `main: mark one` never hold together
          `worker: mark first` is over before `main: mark one` holds:
            mark first at prog.rs:10 (worker)
            send on `tx`/`rx` at prog.rs:11 (worker)
            receive on `tx`/`rx` at prog.rs:16 (main)
            mark one at prog.rs:17 (main)
    "#]],
    );
    // Counting keeps both sends' edges into the second receive (`#S` is at most its `#R`
    // for both), so it guarantees neither: `between` and `two` stay unordered.
    verdict(
        &pruned,
        "worker: mark between & main: mark two",
        expect![[r#"
        possible: no guaranteed interaction orders the components
          `worker: mark between` is evaluated at:
            mark between at prog.rs:12
          `main: mark two` is evaluated at:
            mark two at prog.rs:19
          recognition point in `main`: mark two at prog.rs:19
            after receive on `tx`/`rx` at prog.rs:18 (may carry send on `tx`/`rx` at prog.rs:13)
            after mark two at prog.rs:19
    "#]],
    );
    // A `try_send` may send nothing: no pair is pruned.
    verdict(
        &text.replace("SEND", "try_send"),
        "worker: mark first & main: mark one",
        expect![[r#"
            possible: no guaranteed interaction orders the components
              `worker: mark first` is evaluated at:
                mark first at prog.rs:10
              `main: mark one` is evaluated at:
                mark one at prog.rs:17
              recognition point in `main`: mark one at prog.rs:17
                after receive on `tx`/`rx` at prog.rs:16 (may carry send on `tx`/`rx` at prog.rs:11)
                after mark one at prog.rs:17
        "#]],
    );
}

#[test]
fn a_join_follows_everything_its_process_did_even_on_a_cycle() {
    // The worker may end early (its receive panics), and `item` lies on a cycle: neither
    // matters, since the join comes after the worker's last event, whichever it was.
    verdict(
        r#"
use ppd::sync::mpsc::channel;

#[ppd::main]
fn main() {
    let (tx, rx) = channel::<u32>();
    let w = ppd::thread::Builder::new()
        .name("worker".into())
        .spawn(move || {
            for _ in 0..3 {
                let _ = rx.recv().unwrap();
                ppd::mark!("item");
            }
        })
        .unwrap();
    tx.send(1).unwrap();
    drop(tx);
    w.join().ok();
    ppd::mark!("after");
}
"#,
        "worker: mark item & main: mark after",
        expect![[r#"
            impossible in every run: `worker: mark item` and `main: mark after` never hold together
              `worker: mark item` is over before `main: mark after` holds:
                mark item at prog.rs:12 (worker)
                end, before a join at prog.rs:14 (worker)
                join worker at prog.rs:18 (main)
                mark after at prog.rs:19 (main)
        "#]],
    );
}

#[test]
fn a_join_does_not_close_an_interval_a_panic_may_leave_open() {
    // If `critical` panics, the worker's last state is inside it, and main's state after
    // the join sees that state: the join orders nothing for an interval.
    verdict(
        r#"
#[ppd::eblock]
fn critical(k: u32) -> u32 {
    k
}

#[ppd::eblock]
fn later() {}

#[ppd::main]
fn main() {
    let w = ppd::thread::Builder::new()
        .name("worker".into())
        .spawn(|| {
            critical(1);
        })
        .unwrap();
    let _ = w.join();
    later();
}
"#,
        "worker: enter critical == main: enter later",
        expect![[r#"
            possible: no guaranteed interaction orders the components
              `worker: enter critical` is evaluated at:
                enter critical at prog.rs:15
              `main: enter later` is evaluated at:
                enter later at prog.rs:19
              recognition point in `main`: enter later at prog.rs:19
                after join worker at prog.rs:18 (may carry end, before a join at prog.rs:16)
                after enter later at prog.rs:19
        "#]],
    );
}
