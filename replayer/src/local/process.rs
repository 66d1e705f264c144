//! The replay backend of one process: its local debugger's view of its log.
//!
//! Before each operation the process passes its controller's gate, then gets the next logged
//! event and checks that the program is about to do that kind of thing on that object; after
//! the operation it checks what happened against the log (all values with `--verify`), and
//! tells its controller, which evaluates the predicate's tests about this process as it needs
//! them.

use std::iter::Peekable;
use std::sync::Arc;

use ppd_formats::Events;
use ppd_formats::event::{Nesting, Owned};
use ppd_formats::{Borrowed, Event, EventKind, ProcessId};
use ppd_recorder::runtime::ReplayCode;
use ppd_recorder::runtime::backend::{Dependency, Op, ProcessBackend, is_last_receiver_release};
use ppd_recorder::tracer;

use super::Shared;
use super::control::Need;
use crate::describe::describe;
use crate::predicate::{Local, Resolved, Tests};
use crate::protocol::{Goal, Report};
use crate::trace_hook::OpenCalls;

/// One process's replay backend.
pub(crate) struct ReplayProcess {
    id: ProcessId,
    shared: Arc<Shared>,
    events: Option<Peekable<Events<'static>>>,
    /// Index of the next event of the log.
    next: u64,
    /// The operation under way was let through against the next logged event, which stays in
    /// `events` until the operation is done (one copy of each event leaves the log: the one
    /// the operation gets); whether that event logged a value.
    current: Option<Current>,
    /// The predicate's tests about this process.
    tests: Option<Local>,
    /// Prelogs of the open e-blocks, for conditions on exits (kept only with a predicate).
    prelogs: Vec<Box<[u8]>>,
    /// Why the process's log, which the recording has, could not be opened (too many open
    /// files, say): the replay of the process stops there, saying so, instead of taking the
    /// log for empty.
    unreadable: Option<String>,
    /// The nested e-block calls open while the process's body is traced
    /// (`ppd_recorder::body`).
    calls: OpenCalls,
}

/// What the backend keeps of the event the current operation must reproduce.
#[derive(Clone, Copy, Debug)]
struct Current {
    /// It logged a transferred value (a payload, a guarded value, a value read).
    logged_value: bool,
}

impl ReplayProcess {
    pub(crate) fn new(
        id: ProcessId,
        shared: Arc<Shared>,
        events: Result<Option<Events<'static>>, String>,
        tests: Option<Arc<Tests>>,
    ) -> ReplayProcess {
        let (events, unreadable) = match events {
            Ok(events) => (events, None),
            Err(why) => (None, Some(why)),
        };
        ReplayProcess {
            id,
            shared,
            events: events.map(Iterator::peekable),
            next: 0,
            current: None,
            tests: tests.map(|t| Local::new(t, id)),
            prelogs: Vec::new(),
            unreadable,
            calls: OpenCalls::default(),
        }
    }

    /// Stops the replay of a process whose log could not be opened, saying why.
    fn stop_if_unreadable(&mut self) {
        if let Some(why) = self.unreadable.take() {
            self.diverge(
                "the events of its log".into(),
                format!("its log could not be opened: {why}"),
            );
        }
    }

    fn report(&self, report: Report) {
        self.shared.controller.report(report);
    }

    /// Reports a divergence and stops this process for good.
    fn diverge(&mut self, expected: String, happened: String) -> ! {
        self.report(Report::Diverged {
            process: self.id,
            event: self.next,
            expected,
            happened,
        });
        self.shared.controller.ended(self.id, true);
        loop {
            std::thread::park();
        }
    }

    /// The log has nothing more: this is where the recorded process stopped.
    fn log_ended(&mut self) -> ! {
        self.stop_if_unreadable();
        // A process spawned just before the run was cut short may have no log at all, and the
        // controllers none of its own: it never started in the recorded run, so it is held
        // before its first event without counting in the run's end.
        if self.id.index() < self.shared.controller.processes() {
            self.shared.controller.ended(self.id, false);
        }
        loop {
            std::thread::park();
        }
    }

    /// The next logged event, left in the log.
    fn peeked(&mut self) -> Option<Result<&Event, String>> {
        let events = self.events.as_mut()?;
        match events.peek()? {
            Ok((_, e)) => Some(Ok(e)),
            Err(e) => Some(Err(e.to_string())),
        }
    }

    fn peek(&mut self) -> Option<Result<Event, String>> {
        self.peeked().map(|next| next.cloned())
    }

    /// Takes the next logged event out of the log (`None` at its end or where it is damaged),
    /// without counting it: the caller counts it once it matched.
    fn take_next(&mut self) -> Option<Event> {
        match self.events.as_mut()?.next()? {
            Ok((_, e)) => Some(e),
            Err(_) => None,
        }
    }

    /// Tells the controller that the process executed `event`, with the tests that hold after
    /// it for the controller to ask.
    fn executed(&mut self, event: &Event) {
        let Some(tests) = &mut self.tests else {
            self.shared.controller.executed(self.id, event, None);
            return;
        };
        let entry = match event.nesting() {
            Nesting::Exit => self.prelogs.pop(),
            Nesting::Enter | Nesting::Flat => None,
        };
        let mut after = tests.after(event, entry.as_deref());
        self.shared
            .controller
            .executed(self.id, event, Some(&mut after));
        if let Event::EblockEnter { prelog, .. } = event {
            self.prelogs.push(prelog.clone());
        }
    }

    /// Executes the next logged event without an operation of the program (a `Blocked`,
    /// `JoinBlocked` or `Sleep` marker: the recorded process waited there).
    fn pass(&mut self) {
        let Some(event) = self.take_next() else {
            return;
        };
        self.next += 1;
        self.shared.controller.executed(self.id, &event, None);
    }
}

/// Whether logged event `e` carries a transferred value (a payload, a guarded value, a value
/// read) that replay can check.
fn logged_value(e: &Event) -> bool {
    match e {
        Event::Send { payload, .. } | Event::Recv { payload, .. } => payload.is_some(),
        Event::Lock { value, .. } | Event::RwAcquire { value, .. } => value.is_some(),
        Event::Atomic { value, .. } => value.is_some(),
        _ => false,
    }
}

/// Whether the logged event `e` is what operation `op` may produce.
pub(crate) fn op_matches(op: &Op, e: &Event) -> bool {
    let kind_ok = op.kind == e.kind()
        || (matches!(op.kind, EventKind::Recv | EventKind::Select)
            && e.kind() == EventKind::RecvNone)
        // A socket operation may have failed instead.
        || (matches!(
            op.kind,
            EventKind::NetOpen
                | EventKind::NetWrite
                | EventKind::NetRead
                | EventKind::NetSendTo
                | EventKind::NetRecvFrom
        ) && e.kind() == EventKind::NetFail);
    let object_ok = match (op.object, e.object()) {
        (Some(a), Some(b)) => a == b || op.kind == EventKind::Select,
        _ => true,
    };
    kind_ok && object_ok
}

pub(crate) fn describe_op(op: &Op) -> String {
    let object = op.object.map(|o| format!(" on {o}")).unwrap_or_default();
    let site = op.site.map(|s| format!(" at {s}")).unwrap_or_default();
    format!("{}{object}{site}", op.kind)
}

/// Compares what an operation did with the logged event. Without `verify`, only the outcome
/// of each nondeterministic choice; with it, every logged value too. Each class of event has its
/// own comparison; events of different kinds never match. The dispatch names every variant, so
/// that a new kind is a compile error here until it is compared.
pub(crate) fn compare(
    logged: &Event,
    actual: &Event<Borrowed<'_>>,
    verify: bool,
) -> Result<(), ()> {
    let same = match logged {
        Event::Start { .. }
        | Event::Spawn { .. }
        | Event::Join { .. }
        | Event::Exit
        | Event::Panic { .. } => same_lifecycle(logged, actual, verify),
        Event::Create { .. }
        | Event::Send { .. }
        | Event::Recv { .. }
        | Event::RecvNone { .. }
        | Event::Select { .. }
        | Event::Undelivered { .. } => same_message(logged, actual, verify),
        Event::Lock { .. }
        | Event::Unlock { .. }
        | Event::SemAcquire { .. }
        | Event::SemRelease { .. }
        | Event::Atomic { .. }
        | Event::RwAcquire { .. }
        | Event::RwRelease { .. }
        | Event::Outcome { .. } => same_sync(logged, actual, verify),
        Event::Clock { .. }
        | Event::Random { .. }
        | Event::Answer { .. }
        | Event::EblockEnter { .. }
        | Event::EblockExit { .. }
        | Event::Mark { .. } => same_input(logged, actual, verify),
        Event::NetOpen { .. }
        | Event::NetWrite { .. }
        | Event::NetRead { .. }
        | Event::NetSendTo { .. }
        | Event::NetRecvFrom { .. }
        | Event::NetFail { .. } => same_socket(logged, actual, verify),
        // A replayed sleep takes its event (`ppd::thread::sleep`), its length checked with
        // `verify`; nothing is logged for the other waiting markers in replay.
        Event::Sleep { nanos: a, .. } => match actual {
            Event::Sleep { nanos: b, .. } => !verify || a == b,
            _ => false,
        },
        Event::Blocked { .. } | Event::JoinBlocked { .. } => false,
    };
    if same { Ok(()) } else { Err(()) }
}

/// Whether two transferred values agree: always without `verify`, and when either is absent.
fn same_bytes(verify: bool, a: &Option<Box<[u8]>>, b: &Option<&[u8]>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => !verify || **a == **b,
        _ => true,
    }
}

/// A process's start, spawns, joins, end and panic: the processes named, and with `verify` the panic's message.
fn same_lifecycle(logged: &Event, actual: &Event<Borrowed<'_>>, verify: bool) -> bool {
    match (logged, actual) {
        (Event::Start { parent: a }, Event::Start { parent: b }) => a == b,
        (Event::Spawn { child: a, .. }, Event::Spawn { child: b, .. })
        | (Event::Join { child: a, .. }, Event::Join { child: b, .. }) => a == b,
        (Event::Exit, Event::Exit) => true,
        (Event::Panic { message: a, .. }, Event::Panic { message: b, .. }) => !verify || **a == **b,
        // Different kinds.
        _ => false,
    }
}

/// Objects made and channel messages: the object, the sender and sequence number of each message, and with `verify` the values.
fn same_message(logged: &Event, actual: &Event<Borrowed<'_>>, verify: bool) -> bool {
    match (logged, actual) {
        (
            Event::Create {
                object: a,
                kind: ka,
                init: ia,
                ..
            },
            Event::Create {
                object: b,
                kind: kb,
                init: ib,
                ..
            },
        ) => a == b && ka == kb && (!verify || ia == ib),
        (
            Event::Send {
                channel: a,
                seq: sa,
                payload: pa,
                ..
            },
            Event::Send {
                channel: b,
                seq: sb,
                payload: pb,
                ..
            },
        ) => a == b && sa == sb && same_bytes(verify, pa, pb),
        (
            Event::Recv {
                channel: a,
                sender: xa,
                seq: sa,
                payload: pa,
                ..
            },
            Event::Recv {
                channel: b,
                sender: xb,
                seq: sb,
                payload: pb,
                ..
            },
        ) => a == b && xa == xb && sa == sb && same_bytes(verify, pa, pb),
        (
            Event::RecvNone {
                channel: a,
                outcome: oa,
                ..
            },
            Event::RecvNone {
                channel: b,
                outcome: ob,
                ..
            },
        ) => (a == b || logged.kind() == EventKind::RecvNone) && oa == ob,
        (Event::Select { index: a, .. }, Event::Select { index: b, .. }) => a == b,
        (
            Event::Undelivered {
                channel: a,
                seq: sa,
                ..
            },
            Event::Undelivered {
                channel: b,
                seq: sb,
                ..
            },
        ) => a == b && sa == sb,
        // Different kinds.
        _ => false,
    }
}

/// Locks, semaphores, atomics and attempts: the object and its version (the order of accesses), and with `verify` the values.
fn same_sync(logged: &Event, actual: &Event<Borrowed<'_>>, verify: bool) -> bool {
    match (logged, actual) {
        (
            Event::Lock {
                object: a,
                version: va,
                value: xa,
                ..
            },
            Event::Lock {
                object: b,
                version: vb,
                value: xb,
                ..
            },
        ) => a == b && va == vb && same_bytes(verify, xa, xb),
        (Event::Unlock { object: a, .. }, Event::Unlock { object: b, .. }) => a == b,
        (
            Event::RwAcquire {
                object: a,
                version: va,
                mode: ma,
                value: xa,
                ..
            },
            Event::RwAcquire {
                object: b,
                version: vb,
                mode: mb,
                value: xb,
                ..
            },
        ) => a == b && va == vb && ma == mb && same_bytes(verify, xa, xb),
        (
            Event::RwRelease {
                object: a,
                version: va,
                mode: ma,
                ..
            },
            Event::RwRelease {
                object: b,
                version: vb,
                mode: mb,
                ..
            },
        ) => a == b && va == vb && ma == mb,
        (
            Event::SemAcquire {
                object: a,
                version: va,
                ..
            },
            Event::SemAcquire {
                object: b,
                version: vb,
                ..
            },
        )
        | (
            Event::SemRelease {
                object: a,
                version: va,
                ..
            },
            Event::SemRelease {
                object: b,
                version: vb,
                ..
            },
        ) => a == b && va == vb,
        (
            Event::Atomic {
                object: a,
                version: va,
                op: oa,
                value: xa,
                ..
            },
            Event::Atomic {
                object: b,
                version: vb,
                op: ob,
                value: xb,
                ..
            },
        ) => {
            a == b
                && va == vb
                && oa == ob
                && match (xa, xb) {
                    (Some(x), Some(y)) => !verify || x == y,
                    _ => true,
                }
        }
        (
            Event::Outcome {
                object: a,
                outcome: oa,
                ..
            },
            Event::Outcome {
                object: b,
                outcome: ob,
                ..
            },
        ) => a == b && oa == ob,
        // Different kinds.
        _ => false,
    }
}

/// Values read from outside, e-blocks and marks: every input value, and with `verify` the logged bytes.
fn same_input(logged: &Event, actual: &Event<Borrowed<'_>>, verify: bool) -> bool {
    match (logged, actual) {
        (
            Event::Clock {
                source: a,
                nanos: na,
            },
            Event::Clock {
                source: b,
                nanos: nb,
            },
        ) => a == b && na == nb,
        (Event::Random { value: a }, Event::Random { value: b }) => a == b,
        (
            Event::Answer {
                question: a,
                value: va,
                ..
            },
            Event::Answer {
                question: b,
                value: vb,
                ..
            },
        ) => a == b && va == vb,
        (
            Event::EblockEnter {
                eblock: a,
                prelog: pa,
                ..
            },
            Event::EblockEnter {
                eblock: b,
                prelog: pb,
                ..
            },
        ) => **a == **b && (!verify || **pa == **pb),
        (
            Event::EblockExit {
                eblock: a,
                postlog: pa,
            },
            Event::EblockExit {
                eblock: b,
                postlog: pb,
            },
        ) => **a == **b && (!verify || **pa == **pb),
        (
            Event::Mark {
                label: a,
                value: va,
                ..
            },
            Event::Mark {
                label: b,
                value: vb,
                ..
            },
        ) => **a == **b && (!verify || **va == **vb),
        // Different kinds.
        _ => false,
    }
}

/// Socket events: the socket, sequence numbers and offsets, and with `verify` the data.
fn same_socket(logged: &Event, actual: &Event<Borrowed<'_>>, verify: bool) -> bool {
    match (logged, actual) {
        (
            Event::NetOpen {
                socket: a,
                kind: ka,
                how: ha,
                ..
            },
            Event::NetOpen {
                socket: b,
                kind: kb,
                how: hb,
                ..
            },
        ) => a == b && ka == kb && ha == hb,
        (
            Event::NetWrite {
                socket: a,
                seq: sa,
                offset: oa,
                len: la,
                ..
            },
            Event::NetWrite {
                socket: b,
                seq: sb,
                offset: ob,
                len: lb,
                ..
            },
        ) => a == b && sa == sb && oa == ob && la == lb,
        (
            Event::NetRead {
                socket: a,
                offset: oa,
                peek: pa,
                data: da,
                ..
            },
            Event::NetRead {
                socket: b,
                offset: ob,
                peek: pb,
                data: db,
                ..
            },
        ) => a == b && oa == ob && pa == pb && (!verify || **da == **db),
        (
            Event::NetSendTo {
                socket: a,
                seq: sa,
                len: la,
                digest: da,
                ..
            },
            Event::NetSendTo {
                socket: b,
                seq: sb,
                len: lb,
                digest: db,
                ..
            },
        ) => a == b && sa == sb && la == lb && (!verify || da == db),
        (
            Event::NetRecvFrom {
                socket: a,
                peek: pa,
                data: da,
                ..
            },
            Event::NetRecvFrom {
                socket: b,
                peek: pb,
                data: db,
                ..
            },
        ) => a == b && pa == pb && (!verify || **da == **db),
        (
            Event::NetFail {
                socket: a,
                op: oa,
                error: ea,
                ..
            },
            Event::NetFail {
                socket: b,
                op: ob,
                error: eb,
                ..
            },
        ) => a == b && oa == ob && ea == eb,
        // Different kinds.
        _ => false,
    }
}

impl ProcessBackend for ReplayProcess {
    fn expect(&mut self, op: Op) -> Option<Event<Owned>> {
        if self.id.index() >= self.shared.controller.processes() {
            self.log_ended();
        }
        loop {
            self.shared.controller.gate(self.id);
            let expected = match self.peeked() {
                None => self.log_ended(),
                Some(Err(damage)) => {
                    Err(format!("a readable event (the log is damaged: {damage})"))
                }
                Some(Ok(e)) if e.kind().is_wait() && op.kind != e.kind() => Ok(None),
                // A last receiver's wake-up is done by the runtime before `op`, then asked for
                // as its own operation.
                Some(Ok(e)) if !op_matches(&op, e) => {
                    if is_last_receiver_wakeup(e) {
                        return Some(e.clone());
                    }
                    Err(describe(e))
                }
                Some(Ok(e)) => Ok(Some(e.clone())),
            };
            match expected {
                Err(expected) => self.diverge(expected, describe_op(&op)),
                // A wait marker of the recorded process: it waited there.
                Ok(None) => self.pass(),
                Ok(Some(e)) => {
                    self.current = Some(Current {
                        logged_value: logged_value(&e),
                    });
                    return Some(e);
                }
            }
        }
    }

    fn expect_if(&mut self, op: Op) -> Option<Event<Owned>> {
        // No gate: this continues the operation already let through (a send that has been
        // logged must reach its channel before its process is held).
        let e = match self.peeked() {
            Some(Ok(e)) if op_matches(&op, e) => e.clone(),
            _ => return None,
        };
        self.current = Some(Current {
            logged_value: logged_value(&e),
        });
        Some(e)
    }

    fn next_logged(&mut self) -> Option<Event<Owned>> {
        self.peek()?.ok()
    }

    fn done(&mut self, event: &Event<Borrowed<'_>>) {
        let _replay_code = ReplayCode::enter();
        // The event the operation was let through against, or, if it asked for none, the
        // next one: either way the log's next event, taken out of it.
        self.current = None;
        let Some(logged) = self.take_next() else {
            self.stop_if_unreadable();
            self.diverge("the end of the log".into(), describe(event))
        };
        if compare(&logged, event, self.shared.verify).is_err() {
            self.diverge(describe(&logged), describe(event));
        }
        self.next += 1;
        self.executed(&logged);
        if tracer::tracing() {
            self.calls.record(&logged, self.next - 1, self.id);
        }
    }

    fn waiting_for(&mut self, dependency: Dependency) {
        let _replay_code = ReplayCode::enter();
        // Held processes run only on request: name the creator, so that it can be asked.
        let dependency = match dependency {
            Dependency::Creation { kind, site } if !self.others_run_freely() => self
                .shared
                .creation_awaited(kind, site)
                .unwrap_or(dependency),
            other => other,
        };
        self.shared
            .controller
            .request(self.id, Need::Dep(dependency));
    }

    fn others_run_freely(&self) -> bool {
        !self.shared.controller.debugging()
    }

    fn diverged(&mut self, detail: &str) {
        let _replay_code = ReplayCode::enter();
        let expected = match (self.current, self.peeked()) {
            (Some(_), Some(Ok(e))) => describe(e),
            _ => "the logged event".into(),
        };
        self.diverge(expected, detail.to_owned());
    }

    fn log_payloads(&self) -> bool {
        self.shared.verify && self.current.is_some_and(|c| c.logged_value)
    }

    fn finish(&mut self) {}
}

impl Goal {
    /// The predicate of the goal, if it has one.
    pub(crate) fn plan(&self) -> Option<&Resolved> {
        match self {
            Goal::Stop(p) | Goal::History(p) => Some(p),
            _ => None,
        }
    }
}

/// Whether `logged` is the wake-up of a bounded channel's last receiver, which the process's
/// receiver did in the recorded run and may not in this replay
/// ([`is_last_receiver_release`]).
fn is_last_receiver_wakeup(logged: &Event) -> bool {
    matches!(logged, Event::SemRelease { object, site, .. }
        if is_last_receiver_release(*object, site.as_deref()))
}
