use expect_test::expect;
use ppd_formats::event::{AtomicOp, MemOrdering, ObjectKind, RwMode};
use ppd_formats::{ObjectId, ProcessId};

use super::*;
use crate::trace::{NO_SITE, Trace};

/// `main` makes a named channel, a mutex, an atomic and a reader-writer lock, spawns `worker`
/// and sends it a message; the worker receives it, reads the atomic main released, takes the
/// reader-writer lock and then finds the channel empty. One event of each kind of field.
fn small_run() -> Trace {
    let mut b = Trace::builder();
    let main = b.add_process(ProcessId(0), "main", None);
    let worker = b.add_process(ProcessId(1), "worker", Some(ProcessId(0)));
    let site = b.site("src/main.rs", 7, 5);
    let ch = b.define_object(
        ObjectId::new(ProcessId(0), 0),
        ObjectKind::Channel,
        0,
        Some("jobs"),
    );
    let m = b.define_object(ObjectId::new(ProcessId(0), 1), ObjectKind::Mutex, 0, None);
    let a = b.define_object(ObjectId::new(ProcessId(0), 2), ObjectKind::Atomic, 3, None);
    let rw = b.define_object(ObjectId::new(ProcessId(0), 3), ObjectKind::RwLock, 0, None);
    for object in [ch, m, a, rw] {
        b.push(main, Op::Create { object }, NO_SITE);
    }
    b.push(
        main,
        Op::Spawn {
            child: ProcessId(1),
        },
        NO_SITE,
    );
    b.push(
        worker,
        Op::Start {
            parent: Some(ProcessId(0)),
        },
        NO_SITE,
    );
    b.push(
        main,
        Op::Lock {
            object: m,
            version: 1,
            prev: None,
        },
        NO_SITE,
    );
    b.push(main, Op::Unlock { object: m }, NO_SITE);
    b.push(
        main,
        Op::Atomic {
            object: a,
            version: 1,
            prev: None,
            op: AtomicOp::Store,
            ordering: MemOrdering::Release,
        },
        NO_SITE,
    );
    b.push(
        main,
        Op::Send {
            channel: ch,
            seq: 1,
        },
        site,
    );
    b.push(
        worker,
        Op::Recv {
            channel: ch,
            sender: ProcessId(0),
            seq: 1,
        },
        site,
    );
    b.push(
        worker,
        Op::Atomic {
            object: a,
            version: 2,
            prev: Some(ProcessId(0)),
            op: AtomicOp::Load,
            ordering: MemOrdering::Acquire,
        },
        NO_SITE,
    );
    b.push(
        worker,
        Op::RwAcquire {
            object: rw,
            version: 1,
            prev: None,
            mode: RwMode::Read,
        },
        NO_SITE,
    );
    b.push(
        worker,
        Op::RecvNone {
            channel: ch,
            outcome: ppd_formats::event::RecvOutcome::Empty,
        },
        NO_SITE,
    );
    b.push(worker, Op::Exit, NO_SITE);
    b.build()
}

fn export(trace: &Trace) -> String {
    let clocks = Clocks::compute(trace);
    let mut out = Vec::new();
    write(trace, &clocks, &mut out).expect("writing to memory does not fail");
    String::from_utf8(out).expect("the export is UTF-8")
}

/// The document's shape, which scripts read: the header, processes, objects, edges, then one
/// event a line with the fields of its kind.
#[test]
fn the_export_lists_processes_objects_edges_and_each_event_with_its_fields() {
    let text = export(&small_run());
    serde_json::from_str::<serde_json::Value>(&text).expect("the export is one JSON document");
    expect![[r##"
        {"format":"ppd-events","version":1,"processes":[{"complete":true,"damage":[],"events":9,"name":"main","parent":null,"pid":0},{"complete":true,"damage":[],"events":6,"name":"worker","parent":0,"pid":1}],"objects":[{"id":"#0.0","init":0,"kind":"channel","name":"jobs"},{"id":"#0.1","init":0,"kind":"mutex","name":null},{"id":"#0.2","init":3,"kind":"atomic","name":null},{"id":"#0.3","init":0,"kind":"rwlock","name":null}],"edges":[{"from":{"event":4,"pid":0},"kind":"spawn","to":{"event":0,"pid":1}},{"from":{"event":8,"pid":0},"kind":"message","to":{"event":1,"pid":1}},{"from":{"event":7,"pid":0},"kind":"reads_from","object":"#0.2","to":{"event":2,"pid":1}}],"events":[
        {"clock":{"p0":1},"event":0,"kind":"create","lamport":1,"object":"#0.0","pid":0,"text":"create channel jobs"},
        {"clock":{"p0":2},"event":1,"kind":"create","lamport":2,"object":"#0.1","pid":0,"text":"create mutex #0.1"},
        {"clock":{"p0":3},"event":2,"kind":"create","lamport":3,"object":"#0.2","pid":0,"text":"create atomic #0.2"},
        {"clock":{"p0":4},"event":3,"kind":"create","lamport":4,"object":"#0.3","pid":0,"text":"create rwlock #0.3"},
        {"child":1,"clock":{"p0":5},"event":4,"kind":"spawn","lamport":5,"pid":0,"text":"spawn worker (p1)"},
        {"clock":{"p0":6},"event":5,"kind":"lock","lamport":6,"object":"#0.1","pid":0,"text":"lock #0.1 (acquisition 1)","version":1},
        {"clock":{"p0":7},"event":6,"kind":"unlock","lamport":7,"object":"#0.1","pid":0,"text":"unlock #0.1"},
        {"clock":{"p0":8},"event":7,"kind":"atomic","lamport":8,"object":"#0.2","op":"store","ordering":"release","pid":0,"text":"store #0.2 release (access 1)","version":1},
        {"clock":{"p0":9},"column":5,"event":8,"file":"src/main.rs","kind":"send","lamport":9,"line":7,"object":"#0.0","pid":0,"seq":1,"text":"send on jobs (message 1) at src/main.rs:7"},
        {"clock":{"p0":5,"p1":1},"event":0,"kind":"start","lamport":6,"pid":1,"text":"start (spawned by p0)"},
        {"clock":{"p0":9,"p1":2},"column":5,"event":1,"file":"src/main.rs","kind":"recv","lamport":10,"line":7,"object":"#0.0","pid":1,"sender":0,"seq":1,"text":"recv on jobs (message 1 from main (p0)) at src/main.rs:7"},
        {"clock":{"p0":9,"p1":3},"event":2,"kind":"atomic","lamport":11,"object":"#0.2","op":"load","ordering":"acquire","pid":1,"text":"load #0.2 acquire (access 2)","version":2},
        {"clock":{"p0":9,"p1":4},"event":3,"kind":"rw_acquire","lamport":12,"mode":"read","object":"#0.3","pid":1,"text":"read lock #0.3 (operation 1)","version":1},
        {"clock":{"p0":9,"p1":5},"event":4,"kind":"recv_none","lamport":13,"object":"#0.0","pid":1,"text":"recv on jobs: empty"},
        {"clock":{"p0":9,"p1":6},"event":5,"kind":"exit","lamport":14,"pid":1,"text":"exit"}
        ]}
    "##]]
    .assert_eq(&text);
}

/// A writer that takes `left` bytes and then fails.
struct FailsAfter {
    left: usize,
}

impl Write for FailsAfter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.left == 0 {
            return Err(std::io::Error::other("the disk is full"));
        }
        let n = buf.len().min(self.left);
        self.left -= n;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// An output that fails part-way is an error naming the export, not a short document.
#[test]
fn a_failing_output_is_an_error_naming_the_export() {
    let trace = small_run();
    let clocks = Clocks::compute(&trace);
    let mut out = FailsAfter { left: 100 };
    match write(&trace, &clocks, &mut out) {
        Err(FlowbackError::Output { what, source }) => {
            assert_eq!(what, WHAT);
            assert_eq!(source.to_string(), "the disk is full");
        }
        other => panic!("expected an output error, got {other:?}"),
    }
}
