//! The tracer of a re-executed e-block (Miller & Choi's emulation package, §5.3).
//!
//! `#[ppd::eblock]` compiles, next to the function, a tracing twin of its body that calls the
//! functions here at every `let`, assignment, branch and return; the runtime adds a record for
//! every operation the body performs (receive, send, nested e-block call, clock, random, atomic
//! write, mutex release). They run only while ppd re-executes an instance; the recorded program never calls them.

use std::cell::RefCell;
use std::fmt::Debug;

use ppd_formats::ProcessId;
use ppd_formats::eblock_trace::{Captured, MessageRef, Record, RecordKind};
use serde::Serialize;

/// A statement of a traced body: where it is and how it reads.
#[derive(Debug)]
pub struct Statement {
    /// Source file.
    pub file: &'static str,
    /// Line.
    pub line: u32,
    /// The statement as written.
    pub text: &'static str,
}

#[derive(Debug, Default)]
struct Tracer {
    records: Vec<Record>,
    /// Branch records whose bodies are executing, innermost last.
    controls: Vec<u32>,
    /// Runtime records since the last definition: the results the next one holds.
    pending: Vec<u32>,
    /// The statement executing, for runtime records.
    statement: Option<(&'static Statement, &'static [&'static str])>,
    /// Arguments of the calls being evaluated, innermost last: a nested e-block's call record
    /// takes the innermost.
    calls: Vec<(&'static str, Args)>,
}

/// What each argument of a call was computed from.
pub type Args = &'static [&'static [&'static str]];

thread_local! {
    static TRACER: RefCell<Option<Tracer>> = const { RefCell::new(None) };
}

fn with<R>(f: impl FnOnce(&mut Tracer) -> R) -> Option<R> {
    TRACER.with(|t| t.borrow_mut().as_mut().map(f))
}

/// Starts tracing on this thread.
pub fn start() {
    TRACER.with(|t| *t.borrow_mut() = Some(Tracer::default()));
}

/// Stops tracing and gives the records.
pub fn finish() -> Vec<Record> {
    TRACER
        .with(|t| t.borrow_mut().take())
        .map(|t| t.records)
        .unwrap_or_default()
}

/// Whether this thread is tracing.
pub fn tracing() -> bool {
    TRACER.with(|t| t.borrow().is_some())
}

fn strings(uses: &[&str]) -> Vec<String> {
    uses.iter().map(|u| (*u).to_owned()).collect()
}

impl Tracer {
    fn push(&mut self, mut record: Record) -> u32 {
        record.control = self.controls.last().copied();
        let index = self.records.len() as u32;
        self.records.push(record);
        index
    }

    fn at(&mut self, kind: RecordKind, site: &Statement, var: Option<&str>) -> Record {
        Record {
            kind,
            file: site.file.to_owned(),
            line: site.line,
            text: site.text.to_owned(),
            var: var.map(str::to_owned),
            value: None,
            uses: Vec::new(),
            inputs: std::mem::take(&mut self.pending),
            control: None,
            message: None,
            call: None,
            args: Vec::new(),
            callee: None,
            joined: None,
            event: None,
        }
    }
}

/// A parameter of the instance, as its entry received it (`name` or `%n`).
pub fn entry(site: &'static Statement, param: &str, value: Captured) {
    with(|t| {
        let mut r = t.at(RecordKind::Entry, site, Some(param));
        r.value = Some(value);
        t.push(r);
    });
}

/// A statement begins: the runtime operations it performs are attributed to it, and what
/// earlier statements received no longer feeds definitions.
pub fn statement(site: &'static Statement, uses: &'static [&'static str]) {
    with(|t| {
        t.statement = Some((site, uses));
        t.pending.clear();
        t.calls.clear();
    });
}

/// A `for` loop's iterator, which announces the loop's head before each step: what a step
/// receives (`for line in reader.lines()` reads a socket) is the head's doing, not that of
/// the last statement of the body before it.
pub fn announced<I: IntoIterator>(
    site: &'static Statement,
    uses: &'static [&'static str],
    iter: I,
) -> Announced<I::IntoIter> {
    Announced {
        site,
        uses,
        inner: iter.into_iter(),
    }
}

/// See [`announced`].
#[derive(Debug)]
pub struct Announced<I> {
    site: &'static Statement,
    uses: &'static [&'static str],
    inner: I,
}

impl<I: Iterator> Iterator for Announced<I> {
    type Item = I::Item;

    fn next(&mut self) -> Option<I::Item> {
        statement(self.site, self.uses);
        self.inner.next()
    }
}

/// A function or method is about to be called with arguments computed from `args`: if it is
/// an e-block, its call record maps its parameters to them. Used as
/// `called(call_args(..), f(a))`, which evaluates like `f(a)`.
pub fn call_args(callee: &'static str, args: Args) -> Announcement {
    Announcement(with(|t| {
        t.calls.push((callee, args));
        t.calls.len() - 1
    }))
}

/// Where [`call_args`] put a call's arguments on the stack of calls being evaluated.
#[derive(Debug, Clone, Copy)]
pub struct Announcement(Option<usize>);

/// The call announced by `announcement` returned `value`. A call that is not an e-block leaves
/// its announcement on the stack, and so does one left by `?` or a panic inside it; both are
/// dropped here, so that the next e-block called takes its own (`f(&mut a, b.trim())`: the
/// e-block `f` must not take `trim`'s).
pub fn called<T>(announcement: Announcement, value: T) -> T {
    if let Announcement(Some(depth)) = announcement {
        with(|t| t.calls.truncate(depth));
    }
    value
}

/// A value a process body's tracing twin does not capture: its type may not be known yet
/// where the variable is bound (`let v = Vec::new();`), and capturing would fix it too early.
pub fn not_captured() -> Option<Captured> {
    None
}

/// A variable or place got a value (if it was captured), computed from `uses`.
pub fn def(site: &'static Statement, var: &str, value: impl Into<Option<Captured>>, uses: &[&str]) {
    with(|t| {
        let mut r = t.at(RecordKind::Def, site, Some(var));
        r.value = value.into();
        r.uses = strings(uses);
        t.push(r);
    });
}

/// A variable a pattern binds: like [`def`], but every binding of one pattern holds the
/// same inputs (`let (a, b) = rx.recv()?`); [`end_bindings`] consumes them.
pub fn binding(
    site: &'static Statement,
    var: &str,
    value: impl Into<Option<Captured>>,
    uses: &[&str],
) {
    with(|t| {
        let inputs = t.pending.clone();
        let mut r = t.at(RecordKind::Def, site, Some(var));
        r.inputs = inputs.clone();
        t.pending = inputs;
        r.value = value.into();
        r.uses = strings(uses);
        t.push(r);
    });
}

/// The bindings of a pattern are recorded.
pub fn end_bindings() {
    with(|t| t.pending.clear());
}

/// Whether a place changed from `before` to `after`; one not captured may have.
fn changed(before: Option<Captured>, after: &Option<Captured>) -> bool {
    before.is_none() || after.is_none() || before != *after
}

/// Like [`def`], only if the value changed (a method call that may have mutated its receiver).
pub fn def_if_changed(
    site: &'static Statement,
    var: &str,
    before: impl Into<Option<Captured>>,
    after: impl Into<Option<Captured>>,
    uses: &[&str],
) {
    let after = after.into();
    if changed(before.into(), &after) {
        def(site, var, after, uses);
    }
}

/// A place a statement lent mutably to a call (`&mut line`), if the call changed it: like
/// [`binding`], it shares the statement's inputs with the other places and bindings the
/// statement defines (`let n = stream.read(&mut buf)?` defines both from the read).
pub fn lent(
    site: &'static Statement,
    var: &str,
    before: impl Into<Option<Captured>>,
    after: impl Into<Option<Captured>>,
    uses: &[&str],
) {
    let after = after.into();
    if changed(before.into(), &after) {
        binding(site, var, after, uses);
    }
}

/// A branch condition was evaluated to `value`; returns the branch's record for [`scope`].
pub fn branch(site: &'static Statement, value: Captured, uses: &[&str]) -> u32 {
    with(|t| {
        let mut r = t.at(RecordKind::Branch, site, None);
        r.value = Some(value);
        r.uses = strings(uses);
        t.push(r)
    })
    .unwrap_or(u32::MAX)
}

/// Like [`branch`], leaving the operations it depends on to the definitions that follow:
/// `let Some(x) = rx.recv() else { .. }` both decides a branch and defines `x` from the
/// receive.
pub fn branch_sharing_inputs(site: &'static Statement, value: Captured, uses: &[&str]) -> u32 {
    with(|t| {
        let inputs = t.pending.clone();
        let mut r = t.at(RecordKind::Branch, site, None);
        r.inputs = inputs.clone();
        t.pending = inputs;
        r.value = Some(value);
        r.uses = strings(uses);
        t.push(r)
    })
    .unwrap_or(u32::MAX)
}

/// The code that branch `record` chose runs: what it does depends on the branch.
pub fn scope(record: u32) -> Scope {
    with(|t| t.controls.push(record));
    Scope { _private: () }
}

/// Leaves a branch's scope when dropped (also on early return and panic).
#[derive(Debug)]
pub struct Scope {
    _private: (),
}

impl Drop for Scope {
    fn drop(&mut self) {
        with(|t| t.controls.pop());
    }
}

/// The instance returns `value`, computed from `uses`.
pub fn ret(site: &'static Statement, value: impl Into<Option<Captured>>, uses: &[&str]) {
    with(|t| {
        let mut r = t.at(RecordKind::Return, site, Some("%0"));
        r.value = value.into();
        r.uses = strings(uses);
        t.push(r);
    });
}

/// A runtime operation of the current statement; its record feeds the next definition.
pub fn operation(
    kind: RecordKind,
    value: Option<Captured>,
    message: Option<MessageRef>,
    call: Option<u64>,
    event: u64,
) {
    with(|t| {
        let (site, uses) = match t.statement {
            Some((site, uses)) => (site, uses),
            None => (&UNKNOWN, &[][..]),
        };
        let mut r = t.at(kind, site, None);
        match kind {
            // What it sends or passes is computed from its statement's variables (a call's
            // from its arguments', when they were announced) and from what the statement
            // received before.
            RecordKind::Send => r.uses = strings(uses),
            RecordKind::Call => match t.calls.pop() {
                Some((callee, args)) => {
                    r.callee = Some(callee.to_owned());
                    r.args = args.iter().map(|a| strings(a)).collect();
                    let mut all: Vec<String> = r.args.concat();
                    all.sort();
                    all.dedup();
                    r.uses = all;
                }
                None => r.uses = strings(uses),
            },
            // A mark shows values, a publication hands them to other processes; neither
            // feeds the statement's result.
            RecordKind::Mark | RecordKind::Publish => {
                r.uses = strings(uses);
                t.pending = r.inputs.clone();
            }
            _ => t.pending = std::mem::take(&mut r.inputs),
        }
        r.value = value;
        r.message = message;
        r.call = call;
        r.event = Some(event);
        let index = t.push(r);
        if !matches!(
            kind,
            RecordKind::Send | RecordKind::Mark | RecordKind::Publish
        ) {
            t.pending.push(index);
        }
    });
}

/// The current statement joined `child`'s thread (log event `event`): its result is what the
/// thread's body returned.
pub fn joined(child: ProcessId, event: u64) {
    operation(RecordKind::Join, None, None, None, event);
    with(|t| {
        if let Some(r) = t.records.last_mut() {
            r.joined = Some(child);
        }
    });
}

static UNKNOWN: Statement = Statement {
    file: "",
    line: 0,
    text: "",
};

/// Captures values for traces: MessagePack when the type is `Serialize`, its `Debug` form
/// when it is that, its type name otherwise. Used as `(&&&Probe(&value)).capture()` with the
/// three traits in scope, so that method resolution picks the best one (autoref
/// specialization, which works because the traced code has concrete types).
pub mod probe {
    use super::*;

    /// A value to capture.
    #[derive(Debug)]
    pub struct Probe<'a, T: ?Sized>(pub &'a T);

    /// Capture by serialization.
    pub trait ViaSerialize {
        /// The captured value.
        fn capture(&self) -> Captured;
    }

    impl<T: Serialize + ?Sized> ViaSerialize for &&Probe<'_, T> {
        fn capture(&self) -> Captured {
            match ppd_formats::value::encode(self.0) {
                Ok(bytes) => Captured::Value(bytes),
                Err(e) => Captured::Opaque(format!("<{e}>")),
            }
        }
    }

    /// Capture by `Debug`.
    pub trait ViaDebug {
        /// The captured value.
        fn capture(&self) -> Captured;
    }

    impl<T: Debug + ?Sized> ViaDebug for &Probe<'_, T> {
        fn capture(&self) -> Captured {
            Captured::Debug(format!("{:?}", self.0))
        }
    }

    /// Capture of the type only.
    pub trait ViaNothing {
        /// The captured value.
        fn capture(&self) -> Captured;
    }

    impl<T: ?Sized> ViaNothing for Probe<'_, T> {
        fn capture(&self) -> Captured {
            Captured::Opaque(std::any::type_name::<T>().to_owned())
        }
    }
}

/// Captures a value for a trace: `capture!(expr)`.
#[macro_export]
#[doc(hidden)]
macro_rules! __capture {
    ($value:expr) => {{
        #[allow(unused_imports)]
        use $crate::tracer::probe::{ViaDebug as _, ViaNothing as _, ViaSerialize as _};
        (&&&$crate::tracer::probe::Probe(&$value)).capture()
    }};
}

#[cfg(test)]
mod tests {
    use super::*;

    struct NoTraits;

    #[derive(Debug)]
    struct OnlyDebug(#[allow(dead_code)] u8);

    static S: Statement = Statement {
        file: "f.rs",
        line: 3,
        text: "let x = a + b;",
    };

    #[test]
    fn values_are_captured_by_the_best_means_the_type_has() {
        assert_eq!(
            crate::__capture!(5u8),
            Captured::Value(ppd_formats::value::encode(&5u8).unwrap())
        );
        assert_eq!(
            crate::__capture!(OnlyDebug(1)),
            Captured::Debug("OnlyDebug(1)".into())
        );
        assert!(
            matches!(crate::__capture!(NoTraits), Captured::Opaque(n) if n.ends_with("NoTraits"))
        );
    }

    #[test]
    fn records_know_their_controlling_branch_and_inputs() {
        start();
        let b = branch(&S, crate::__capture!(true), &["a"]);
        {
            let _s = scope(b);
            operation(RecordKind::Input, None, None, None, 7);
            def(&S, "x", crate::__capture!(1), &["a", "b"]);
        }
        def(&S, "y", crate::__capture!(2), &[]);
        let records = finish();
        assert_eq!(records.len(), 4);
        assert_eq!(records[2].control, Some(0));
        assert_eq!(records[2].inputs, vec![1], "x holds the input's result");
        assert_eq!(records[3].control, None, "the branch's scope ended");
        assert!(!tracing());
    }
}
