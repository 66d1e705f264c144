//! Which functions become e-blocks: PPD's rule (§5.4 "Constructing E-blocks") applied to the
//! crate's source.
//!
//! "One natural candidate for constructing an e-block is the subroutine": every function and
//! inherent method is one, except "the small subroutines that correspond to leaf nodes in the
//! call graph", whose "direct ancestor subroutines … inherit the USED sets and the DEFINED
//! sets" — here, whose calls the caller's re-execution runs as plain code. A function is a leaf
//! when its body calls no function of the crate, small when it has fewer than
//! [`SMALL_STATEMENTS`] statements and no loop. The call graph is the source's, by name: a
//! call whose name is some function's of the crate counts as a call of it (a method call of
//! another type's same-named method too), which errs towards more e-blocks, never fewer.
//!
//! ppd's additions: a small leaf that synchronizes or reads an input (a send, receive, lock,
//! atomic access, socket read, clock or random value) stays an e-block, since that is where a
//! parallel program's values come from; `#[ppd::not_traced]` and `#[ppd::eblock]` override the
//! rule; and what an e-block cannot be (async, const, generic, `impl Trait`, a returned
//! reference, a trait's method) is left alone and reported so.

use std::collections::BTreeSet;
use std::path::PathBuf;

use proc_macro2::LineColumn;
use serde::{Deserialize, Serialize};
use syn::spanned::Spanned;
use syn::visit::Visit;
use syn::{Attribute, Block, ImplItem, Item, ItemImpl, Signature, Visibility};

use crate::modules::SourceFile;
use crate::rewrite::Insertion;

/// A function with fewer statements than this, and no loop, is small.
pub const SMALL_STATEMENTS: usize = 5;

/// What is put in front of a chosen free function.
pub const EBLOCK: &str = "#[::ppd::eblock(auto)]";
/// What is put in front of an `impl` block with chosen methods.
pub const EBLOCKS: &str = "#[::ppd::eblocks(auto)]";
/// What is put in front of each chosen method inside it.
pub const METHOD: &str = "#[::ppd::eblock]";

/// Methods and functions whose call synchronizes with another process or reads an input.
const SYNCHRONIZING: &[&str] = &[
    "send",
    "try_send",
    "send_timeout",
    "recv",
    "try_recv",
    "recv_timeout",
    "recv_deadline",
    "lock",
    "try_lock",
    "read",
    "try_read",
    "write",
    "try_write",
    "load",
    "store",
    "swap",
    "fetch_add",
    "fetch_sub",
    "fetch_and",
    "fetch_or",
    "fetch_xor",
    "fetch_max",
    "fetch_min",
    "fetch_update",
    "compare_exchange",
    "compare_exchange_weak",
    "wait",
    "wait_while",
    "wait_timeout",
    "notify_one",
    "notify_all",
    "join",
    "accept",
    "connect",
    "read_line",
    "read_exact",
    "read_to_string",
    "write_all",
    "recv_from",
    "send_to",
    "now",
    "elapsed",
];

/// What was decided for one function.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Verdict {
    /// Made an e-block.
    Eblock,
    /// Already `#[ppd::eblock]`.
    Written,
    /// A small leaf, left to its callers (§5.4).
    SmallLeaf,
    /// Marked `#[ppd::not_traced]`.
    NotTraced,
    /// An entry point or test (`#[ppd::main]`, `#[test]`), traced by its own attribute.
    Entry,
    /// What an e-block cannot be, and why.
    CannotBe(String),
}

/// One function of the crate and its verdict.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Choice {
    /// `name` or `Type::name`.
    pub function: String,
    /// Its file.
    pub file: PathBuf,
    /// The line of its `fn`.
    pub line: usize,
    /// What was decided.
    pub verdict: Verdict,
}

/// The decisions for a crate: the verdicts, and what to put where.
#[derive(Debug)]
pub struct Selection {
    /// Every function considered, in source order.
    pub choices: Vec<Choice>,
    /// The functions made e-blocks: where, and which choice each is.
    chosen: Vec<Chosen>,
    /// The `impl` blocks with methods among them: file and first token.
    blocks: Vec<(usize, LineColumn)>,
}

/// A function made an e-block.
#[derive(Debug)]
struct Chosen {
    choice: usize,
    file: usize,
    at: LineColumn,
    /// The line of its closing brace.
    end_line: usize,
    /// The `impl` block it is a method of, by index into [`Selection::blocks`].
    block: Option<usize>,
}

impl Selection {
    /// Whether anything is to be inserted.
    pub fn is_empty(&self) -> bool {
        self.chosen.is_empty()
    }

    /// For each of the crate's `files` (by index), the attributes to insert.
    pub fn insertions(&self, files: usize) -> Vec<Vec<Insertion>> {
        let mut out = vec![Vec::new(); files];
        for chosen in &self.chosen {
            let attribute = if chosen.block.is_some() {
                METHOD
            } else {
                EBLOCK
            };
            out[chosen.file].push(Insertion {
                at: chosen.at,
                attribute,
            });
        }
        for (index, &(file, at)) in self.blocks.iter().enumerate() {
            if self.chosen.iter().any(|c| c.block == Some(index)) {
                out[file].push(Insertion {
                    at,
                    attribute: EBLOCKS,
                });
            }
        }
        out
    }

    /// Withdraws the e-block that rustc found an error in, at `line` of file `file`: the
    /// innermost function whose lines hold it, or every method of the `impl` block whose
    /// attribute is on that line (the expansion's errors point there). Its verdict becomes
    /// [`Verdict::CannotBe`] with `error`. Whether any was withdrawn.
    pub fn withdraw(&mut self, file: usize, line: usize, error: &str) -> bool {
        let block = self
            .blocks
            .iter()
            .position(|&(f, at)| f == file && at.line == line);
        let innermost = self
            .chosen
            .iter()
            .enumerate()
            .filter(|(_, c)| c.file == file && c.at.line <= line && line <= c.end_line)
            .min_by_key(|(_, c)| c.end_line - c.at.line)
            .map(|(i, _)| i);
        let withdrawn: Vec<usize> = match (innermost, block) {
            (Some(i), _) => vec![i],
            (None, Some(b)) => (0..self.chosen.len())
                .filter(|&i| self.chosen[i].block == Some(b))
                .collect(),
            (None, None) => return false,
        };
        for &i in withdrawn.iter().rev() {
            let chosen = self.chosen.remove(i);
            self.choices[chosen.choice].verdict =
                Verdict::CannotBe(format!("its e-block does not compile: {error}"));
        }
        !withdrawn.is_empty()
    }
}

/// A function found in the source, before its verdict.
struct Found {
    file: usize,
    function: String,
    name: String,
    at: LineColumn,
    end_line: usize,
    /// The `impl` block it is a method of, by index into the blocks found.
    block: Option<usize>,
    /// A verdict that does not depend on the call graph.
    fixed: Option<Verdict>,
    shape: Shape,
}

/// Chooses the e-blocks of the crate made of `files`.
pub fn choose(files: &[SourceFile]) -> Selection {
    let mut finder = Finder::default();
    for (index, file) in files.iter().enumerate() {
        finder.items(&file.syntax.items, index);
    }
    let defined: BTreeSet<&str> = finder.found.iter().map(|f| f.name.as_str()).collect();
    let mut chosen = Vec::new();
    let mut choices = Vec::new();
    for found in &finder.found {
        let verdict = found.fixed.clone().unwrap_or_else(|| {
            let leaf = !found
                .shape
                .calls
                .iter()
                .any(|c| defined.contains(c.as_str()));
            let small = found.shape.statements < SMALL_STATEMENTS && !found.shape.loops;
            if leaf && small && !found.shape.synchronizes {
                Verdict::SmallLeaf
            } else {
                Verdict::Eblock
            }
        });
        if verdict == Verdict::Eblock {
            chosen.push(Chosen {
                choice: choices.len(),
                file: found.file,
                at: found.at,
                end_line: found.end_line,
                block: found.block,
            });
        }
        choices.push(Choice {
            function: found.function.clone(),
            file: files[found.file].path.clone(),
            line: found.at.line,
            verdict,
        });
    }
    Selection {
        choices,
        chosen,
        blocks: finder.blocks,
    }
}

#[derive(Default)]
struct Finder {
    found: Vec<Found>,
    /// The `impl` blocks that may get `#[::ppd::eblocks(auto)]`: file and first token.
    blocks: Vec<(usize, LineColumn)>,
}

impl Finder {
    fn items(&mut self, items: &[Item], file: usize) {
        for item in items {
            match item {
                Item::Fn(f) => {
                    let fixed = fixed_verdict(&f.attrs, &f.sig, false);
                    self.found.push(Found {
                        file,
                        function: f.sig.ident.to_string(),
                        name: f.sig.ident.to_string(),
                        at: first_token(&f.vis, &f.sig),
                        end_line: f.block.brace_token.span.close().end().line,
                        block: None,
                        fixed,
                        shape: Shape::of(&f.block),
                    });
                }
                Item::Impl(block) => self.block(block, file),
                Item::Mod(m) => {
                    if let Some((_, inner)) = &m.content {
                        self.items(inner, file);
                    }
                }
                _ => {}
            }
        }
    }

    fn block(&mut self, block: &ItemImpl, file: usize) {
        let self_type = type_name(&block.self_ty);
        let whole_block = if has_attribute(&block.attrs, "not_traced") {
            Some(Verdict::NotTraced)
        } else if has_attribute(&block.attrs, "eblocks") {
            Some(Verdict::CannotBe(
                "its `impl` block chooses its own e-blocks (#[ppd::eblocks])".into(),
            ))
        } else if block.trait_.is_some() {
            Some(Verdict::CannotBe(
                "a trait's method: an e-block's re-execution twin cannot be added to a trait \
                 `impl`"
                    .into(),
            ))
        } else if !block.generics.params.is_empty() {
            Some(Verdict::CannotBe("a method of a generic `impl`".into()))
        } else {
            None
        };
        let index = self.blocks.len();
        let start = block
            .unsafety
            .map(|u| u.span.start())
            .unwrap_or_else(|| block.impl_token.span.start());
        self.blocks.push((file, start));
        for item in &block.items {
            let ImplItem::Fn(method) = item else { continue };
            let fixed = whole_block
                .clone()
                .or_else(|| fixed_verdict(&method.attrs, &method.sig, true));
            self.found.push(Found {
                file,
                function: format!("{self_type}::{}", method.sig.ident),
                name: method.sig.ident.to_string(),
                at: first_token(&method.vis, &method.sig),
                end_line: method.block.brace_token.span.close().end().line,
                block: Some(index),
                fixed,
                shape: Shape::of(&method.block),
            });
        }
    }
}

/// The verdict a function's attributes or signature decide alone.
fn fixed_verdict(attrs: &[Attribute], sig: &Signature, in_impl: bool) -> Option<Verdict> {
    if has_attribute(attrs, "not_traced") {
        return Some(Verdict::NotTraced);
    }
    if has_attribute(attrs, "eblock") {
        return Some(Verdict::Written);
    }
    if ["main", "test", "bench"]
        .iter()
        .any(|a| has_attribute(attrs, a))
    {
        return Some(Verdict::Entry);
    }
    if let Some(other) = attrs.iter().find(|a| is_foreign_macro(a)) {
        let path = quote_path(other.path());
        return Some(Verdict::CannotBe(format!(
            "#[{path}] rewrites it; ppd's attribute would run first"
        )));
    }
    let cannot = |why: &str| Some(Verdict::CannotBe(why.into()));
    if sig.asyncness.is_some() {
        return cannot("async: an e-block brackets one synchronous call");
    }
    if sig.constness.is_some() {
        return cannot("a const fn");
    }
    if sig.abi.is_some() {
        return cannot("a foreign ABI");
    }
    if sig
        .generics
        .params
        .iter()
        .any(|p| !matches!(p, syn::GenericParam::Lifetime(_)))
    {
        return cannot("generic: re-executing an instance needs one function");
    }
    if mentions_impl_trait(sig) {
        return cannot("an `impl Trait` argument or result: it needs a concrete type");
    }
    if let syn::ReturnType::Type(_, ty) = &sig.output
        && matches!(**ty, syn::Type::Reference(_))
    {
        return cannot("it returns a reference: a logged result must be owned");
    }
    if !in_impl && sig.receiver().is_some() {
        return cannot("a receiver outside an `impl`");
    }
    None
}

/// Whether an attribute whose path ends in `name` is there (`#[x]`, `#[ppd::x]`).
fn has_attribute(attrs: &[Attribute], name: &str) -> bool {
    attrs.iter().any(|a| {
        a.path()
            .segments
            .last()
            .is_some_and(|segment| segment.ident == name)
    })
}

/// An attribute macro of another crate (`#[tracing::instrument]`): its expansion and ppd's
/// would stack in an order nobody chose.
fn is_foreign_macro(attr: &Attribute) -> bool {
    let segments = &attr.path().segments;
    segments.len() > 1 && segments.first().is_some_and(|s| s.ident != "ppd")
        || segments.len() == 1
            && segments
                .first()
                .is_some_and(|s| s.ident == "no_mangle" || s.ident == "export_name")
        || segments.len() == 1 && segments.first().is_some_and(|s| s.ident == "unsafe")
}

fn quote_path(path: &syn::Path) -> String {
    path.segments
        .iter()
        .map(|s| s.ident.to_string())
        .collect::<Vec<_>>()
        .join("::")
}

fn mentions_impl_trait(sig: &Signature) -> bool {
    #[derive(Default)]
    struct Finds(bool);
    impl<'a> Visit<'a> for Finds {
        fn visit_type_impl_trait(&mut self, _: &'a syn::TypeImplTrait) {
            self.0 = true;
        }
    }
    let mut finds = Finds::default();
    finds.visit_signature(sig);
    finds.0
}

/// The first token of a function after its attributes, where the attribute goes.
fn first_token(vis: &Visibility, sig: &Signature) -> LineColumn {
    if !matches!(vis, Visibility::Inherited) {
        return vis.span().start();
    }
    sig.constness
        .map(|t| t.span.start())
        .or_else(|| sig.asyncness.map(|t| t.span.start()))
        .or_else(|| sig.unsafety.map(|t| t.span.start()))
        .or_else(|| sig.abi.as_ref().map(|a| a.extern_token.span.start()))
        .unwrap_or_else(|| sig.fn_token.span.start())
}

/// How a type is named in a report: its last path segment.
fn type_name(ty: &syn::Type) -> String {
    match ty {
        syn::Type::Path(p) => p
            .path
            .segments
            .last()
            .map(|s| s.ident.to_string())
            .unwrap_or_default(),
        _ => "_".into(),
    }
}

/// What the rule needs of a function's body.
#[derive(Default)]
struct Shape {
    statements: usize,
    loops: bool,
    synchronizes: bool,
    /// The names it calls: a path call's last segment, a method call's name.
    calls: BTreeSet<String>,
}

impl Shape {
    fn of(block: &Block) -> Shape {
        let mut shape = Shape::default();
        shape.visit_block(block);
        shape
    }

    fn called(&mut self, name: String) {
        if SYNCHRONIZING.contains(&name.as_str()) {
            self.synchronizes = true;
        }
        self.calls.insert(name);
    }
}

impl<'a> Visit<'a> for Shape {
    fn visit_stmt(&mut self, stmt: &'a syn::Stmt) {
        self.statements += 1;
        syn::visit::visit_stmt(self, stmt);
    }

    fn visit_expr_for_loop(&mut self, e: &'a syn::ExprForLoop) {
        self.loops = true;
        syn::visit::visit_expr_for_loop(self, e);
    }

    fn visit_expr_while(&mut self, e: &'a syn::ExprWhile) {
        self.loops = true;
        syn::visit::visit_expr_while(self, e);
    }

    fn visit_expr_loop(&mut self, e: &'a syn::ExprLoop) {
        self.loops = true;
        syn::visit::visit_expr_loop(self, e);
    }

    fn visit_expr_call(&mut self, call: &'a syn::ExprCall) {
        if let syn::Expr::Path(path) = &*call.func {
            if path
                .path
                .segments
                .iter()
                .any(|s| s.ident == "rand" || s.ident == "random")
            {
                self.synchronizes = true;
            }
            if let Some(last) = path.path.segments.last() {
                self.called(last.ident.to_string());
            }
        }
        syn::visit::visit_expr_call(self, call);
    }

    fn visit_expr_method_call(&mut self, call: &'a syn::ExprMethodCall) {
        self.called(call.method.to_string());
        syn::visit::visit_expr_method_call(self, call);
    }

    /// A macro's arguments, where they are expressions (`println!("{}", f(x))`, `vec![g()]`),
    /// are searched for calls too.
    fn visit_macro(&mut self, mac: &'a syn::Macro) {
        use syn::parse::Parser;
        let parser = syn::punctuated::Punctuated::<syn::Expr, syn::Token![,]>::parse_terminated;
        if let Ok(args) = parser.parse2(mac.tokens.clone()) {
            for arg in &args {
                self.visit_expr(arg);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use expect_test::{Expect, expect};

    /// Chooses the e-blocks of a one-file crate and lists each function's verdict.
    fn check(source: &str, expected: Expect) {
        let file = SourceFile {
            path: PathBuf::from("main.rs"),
            text: source.to_string(),
            syntax: syn::parse_file(source).unwrap(),
        };
        let selection = choose(std::slice::from_ref(&file));
        let mut out = String::new();
        for choice in &selection.choices {
            out.push_str(&format!(
                "{}:{} {:?}\n",
                choice.function, choice.line, choice.verdict
            ));
        }
        out.push_str(&crate::rewrite::apply(source, &selection.insertions(1)[0]));
        expected.assert_eq(&out);
    }

    #[test]
    fn small_leaves_are_left_to_their_callers_and_the_rest_are_eblocks() {
        check(
            r#"
fn double(x: u64) -> u64 { x * 2 }
fn sum(items: &[u64]) -> u64 {
    let mut total = 0;
    for item in items { total += double(*item); }
    total
}
fn take(rx: &Receiver<u64>) -> u64 { rx.recv().unwrap() }
fn caller() -> u64 { println!("{}", double(1)); 1 }
"#,
            expect![[r#"
                double:2 SmallLeaf
                sum:3 Eblock
                take:8 Eblock
                caller:9 Eblock

                fn double(x: u64) -> u64 { x * 2 }
                #[::ppd::eblock(auto)] fn sum(items: &[u64]) -> u64 {
                    let mut total = 0;
                    for item in items { total += double(*item); }
                    total
                }
                #[::ppd::eblock(auto)] fn take(rx: &Receiver<u64>) -> u64 { rx.recv().unwrap() }
                #[::ppd::eblock(auto)] fn caller() -> u64 { println!("{}", double(1)); 1 }
            "#]],
        );
    }

    #[test]
    fn attributes_and_signatures_decide_alone() {
        check(
            r#"
#[ppd::main]
fn main() { helper(); }
/// Documented.
#[ppd::not_traced]
pub fn helper() { for _ in 0..3 {} }
#[ppd::eblock]
fn written() { helper(); }
async fn later() { helper(); }
fn generic<T>(t: T) { helper(); }
fn shows(x: impl std::fmt::Debug) { helper(); }
fn borrowed(x: &Vec<u8>) -> &u8 { helper(); &x[0] }
#[tracing::instrument]
fn instrumented() { helper(); }
"#,
            expect![[r##"
                main:3 Entry
                helper:6 NotTraced
                written:8 Written
                later:9 CannotBe("async: an e-block brackets one synchronous call")
                generic:10 CannotBe("generic: re-executing an instance needs one function")
                shows:11 CannotBe("an `impl Trait` argument or result: it needs a concrete type")
                borrowed:12 CannotBe("it returns a reference: a logged result must be owned")
                instrumented:14 CannotBe("#[tracing::instrument] rewrites it; ppd's attribute would run first")

                #[ppd::main]
                fn main() { helper(); }
                /// Documented.
                #[ppd::not_traced]
                pub fn helper() { for _ in 0..3 {} }
                #[ppd::eblock]
                fn written() { helper(); }
                async fn later() { helper(); }
                fn generic<T>(t: T) { helper(); }
                fn shows(x: impl std::fmt::Debug) { helper(); }
                fn borrowed(x: &Vec<u8>) -> &u8 { helper(); &x[0] }
                #[tracing::instrument]
                fn instrumented() { helper(); }
            "##]],
        );
    }

    #[test]
    fn methods_of_inherent_blocks_get_their_blocks_attribute() {
        check(
            r#"
struct Bank;
impl Bank {
    pub fn open() -> Bank { let b = Bank; for _ in 0..3 {} b }
    fn tiny(&self) -> u8 { 1 }
}
impl Drop for Bank {
    fn drop(&mut self) { for _ in 0..3 {} }
}
impl<T> Wrapper<T> {
    fn inner(&self) { for _ in 0..3 {} }
}
mod inline {
    fn nested() { for _ in 0..3 {} }
}
"#,
            expect![[r#"
                Bank::open:4 Eblock
                Bank::tiny:5 SmallLeaf
                Bank::drop:8 CannotBe("a trait's method: an e-block's re-execution twin cannot be added to a trait `impl`")
                Wrapper::inner:11 CannotBe("a method of a generic `impl`")
                nested:14 Eblock

                struct Bank;
                #[::ppd::eblocks(auto)] impl Bank {
                    #[::ppd::eblock] pub fn open() -> Bank { let b = Bank; for _ in 0..3 {} b }
                    fn tiny(&self) -> u8 { 1 }
                }
                impl Drop for Bank {
                    fn drop(&mut self) { for _ in 0..3 {} }
                }
                impl<T> Wrapper<T> {
                    fn inner(&self) { for _ in 0..3 {} }
                }
                mod inline {
                    #[::ppd::eblock(auto)] fn nested() { for _ in 0..3 {} }
                }
            "#]],
        );
    }

    #[test]
    fn an_eblock_that_does_not_compile_is_withdrawn_alone() {
        let source = "struct S;\nimpl S {\n    fn a(&self) { for _ in 0..3 {} }\n}\n\
                      fn f() {\n    for _ in 0..3 {}\n}\nfn g() { f(); }\n";
        let file = SourceFile {
            path: PathBuf::from("main.rs"),
            text: source.to_string(),
            syntax: syn::parse_file(source).unwrap(),
        };
        let mut selection = choose(std::slice::from_ref(&file));
        assert!(!selection.withdraw(0, 1, "nothing there"));
        // An error inside `f`'s body withdraws `f`, not `g`.
        assert!(selection.withdraw(0, 6, "E0277"));
        // An error at the `impl` block's attribute withdraws its methods.
        assert!(selection.withdraw(0, 2, "E0599"));
        let verdicts: Vec<_> = selection
            .choices
            .iter()
            .map(|c| format!("{} {:?}", c.function, c.verdict))
            .collect();
        assert_eq!(
            verdicts,
            [
                "S::a CannotBe(\"its e-block does not compile: E0599\")",
                "f CannotBe(\"its e-block does not compile: E0277\")",
                "g Eblock",
            ]
        );
        let out = crate::rewrite::apply(source, &selection.insertions(1)[0]);
        assert_eq!(out.matches("#[::ppd::").count(), 1, "{out}");
    }
}
