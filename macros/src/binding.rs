//! Objects named after the variables they are bound to (`ppd_recorder::runtime::binding`),
//! for `#[ppd::main]` and `#[ppd::eblock]`: the table of a function's `let` statements (where
//! each one, and each part of its initializer that a part of its pattern binds, lies in the
//! source, and the name the objects made there take), and the registration of the objects
//! with `const` constructors that a `let` binds.
//!
//! Every `let` of the body counts, in nested blocks and closures too, but not in nested items
//! (which are functions of their own) or inside macro calls (which are not parsed).

use proc_macro2::{Span, TokenStream, TokenTree};
use quote::{ToTokens, quote, quote_spanned};
use syn::ext::IdentExt;
use syn::visit::Visit;
use syn::visit_mut::VisitMut;
use syn::{Block, Expr, Ident, Local, Member, Pat, Stmt, parse_quote};

/// The types of ppd whose constructors are `const`: their objects are created at their first
/// use unless a binding registers them.
const LAZY_TYPES: &[&str] = &[
    "Mutex",
    "RwLock",
    "Semaphore",
    "Barrier",
    "Condvar",
    "Once",
    "OnceLock",
    "LazyLock",
    "AtomicBool",
    "AtomicI8",
    "AtomicI16",
    "AtomicI32",
    "AtomicI64",
    "AtomicIsize",
    "AtomicU8",
    "AtomicU16",
    "AtomicU32",
    "AtomicU64",
    "AtomicUsize",
    "AtomicPtr",
];

/// Calls whose closure argument runs in a process of its own.
const SPAWNS: &[&str] = &["spawn", "spawn_scoped"];

/// Whether a call of `callee` (a function's last path segment, or a method) starts a process
/// with its closure argument.
pub(crate) fn is_spawn(callee: &Ident) -> bool {
    SPAWNS.iter().any(|s| callee == s)
}

/// The bindings of `body`, registered with the runtime (an `inventory` submission), or nothing
/// when it binds nothing. `span` is the function's, for its file.
pub(crate) fn table(body: &Block, span: Span) -> TokenStream {
    let mut table = Table::default();
    table.visit_block(body);
    if table.entries.is_empty() {
        return TokenStream::new();
    }
    let entries = &table.entries;
    let file = quote_spanned! {span=> ::core::file!()};
    quote! {
        ::ppd::__private::inventory::submit! {
            ::ppd::__private::Bindings {
                file: #file,
                list: &[#(#entries),*],
            }
        }
    }
}

/// Adds, after each `let` of `block` that binds an object with a `const` constructor, the
/// registration of that object (its nested blocks and closures included).
pub(crate) fn register_in(block: &mut Block) {
    Registrar.visit_block_mut(block);
}

/// The same for `expr`: a closure or `async` block, which the tracing twin does not trace.
pub(crate) fn register_in_untraced(expr: &mut Expr) {
    Registrar.visit_expr_mut(expr);
}

/// The statements registering what `local` binds, to follow it.
pub(crate) fn registrations(local: &Local) -> Vec<Stmt> {
    settled(local)
        .into_iter()
        .map(|var| {
            parse_quote! {
                {
                    #[allow(unused_imports)]
                    use ::ppd::__private::{RegisterBound as _, SkipBound as _};
                    (&&::ppd::__private::Bound(&#var)).register_bound();
                }
            }
        })
        .collect()
}

#[derive(Default)]
struct Table {
    entries: Vec<TokenStream>,
}

impl Table {
    /// A stretch from `first` to `last` naming its objects `name` (`None`: unnamed); none when
    /// it holds nothing but literals.
    fn entry(&mut self, name: Option<String>, extent: Option<(Span, Span)>) {
        let Some((first, last)) = extent else {
            return;
        };
        let at = |span: Span| {
            (
                quote_spanned! {span=> ::core::line!()},
                quote_spanned! {span=> ::core::column!()},
            )
        };
        let ((from_line, from_column), (to_line, to_column)) = (at(first), at(last));
        let name = match name {
            Some(name) => quote!(::core::option::Option::Some(#name)),
            None => quote!(::core::option::Option::None),
        };
        self.entries.push(quote! {
            ::ppd::__private::Binding {
                name: #name,
                from: (#from_line, #from_column),
                to: (#to_line, #to_column),
            }
        });
    }

    /// The parts of `expr` that the parts of `pat` bind.
    fn parts(&mut self, pat: &Pat, expr: &Expr) {
        if let (Pat::Tuple(pats), Expr::Tuple(exprs)) = (unwrap_pat(pat), unwrap_expr(expr))
            && pats.elems.len() == exprs.elems.len()
            && !pats.elems.iter().any(|p| matches!(p, Pat::Rest(_)))
        {
            for (pat, expr) in pats.elems.iter().zip(&exprs.elems) {
                self.entry(joined(pat), extent(expr));
                self.parts(pat, expr);
            }
            return;
        }
        if let Some(name) = single(pat) {
            self.fields(&name.to_string(), expr);
        }
    }

    /// The parts of a tuple or struct literal bound to `name`, named as its fields.
    fn fields(&mut self, name: &str, expr: &Expr) {
        let parts: Vec<(String, &Expr)> = match unwrap_expr(expr) {
            Expr::Tuple(t) => t
                .elems
                .iter()
                .enumerate()
                .map(|(i, e)| (format!("{name}.{i}"), e))
                .collect(),
            Expr::Struct(s) => s
                .fields
                .iter()
                .map(|f| {
                    let member = match &f.member {
                        Member::Named(ident) => ident.unraw().to_string(),
                        Member::Unnamed(index) => index.index.to_string(),
                    };
                    (format!("{name}.{member}"), &f.expr)
                })
                .collect(),
            _ => return,
        };
        for (part, expr) in parts {
            self.entry(Some(part.clone()), extent(expr));
            self.fields(&part, expr);
        }
    }

    /// The closures handed to a spawn among `args`: what they make is not the statement's.
    fn spawned<'a>(&mut self, callee: &Ident, args: impl Iterator<Item = &'a Expr>) {
        if !is_spawn(callee) {
            return;
        }
        for arg in args {
            if let Expr::Closure(_) = unwrap_expr(arg) {
                self.entry(None, extent(arg));
            }
        }
    }
}

impl Visit<'_> for Table {
    fn visit_local(&mut self, local: &Local) {
        if let Some(init) = &local.init {
            if let Some(name) = joined(&local.pat) {
                self.entry(
                    Some(name),
                    Some((local.let_token.span, local.semi_token.span)),
                );
            }
            self.parts(&local.pat, &init.expr);
        }
        syn::visit::visit_local(self, local);
    }

    fn visit_expr_call(&mut self, call: &syn::ExprCall) {
        if let Expr::Path(path) = &*call.func
            && let Some(last) = path.path.segments.last()
        {
            self.spawned(&last.ident, call.args.iter());
        }
        syn::visit::visit_expr_call(self, call);
    }

    fn visit_expr_method_call(&mut self, call: &syn::ExprMethodCall) {
        self.spawned(&call.method, call.args.iter());
        syn::visit::visit_expr_method_call(self, call);
    }

    fn visit_item(&mut self, _: &syn::Item) {}
}

struct Registrar;

impl VisitMut for Registrar {
    fn visit_block_mut(&mut self, block: &mut Block) {
        let mut stmts = Vec::with_capacity(block.stmts.len());
        for mut stmt in std::mem::take(&mut block.stmts) {
            self.visit_stmt_mut(&mut stmt);
            let after = match &stmt {
                Stmt::Local(local) => registrations(local),
                _ => Vec::new(),
            };
            stmts.push(stmt);
            stmts.extend(after);
        }
        block.stmts = stmts;
    }

    // Evaluated at compile time: nothing there is created at run time.
    fn visit_expr_const_mut(&mut self, _: &mut syn::ExprConst) {}

    fn visit_item_mut(&mut self, _: &mut syn::Item) {}
}

/// The variables of `local` whose type is settled at the statement, so that which registration
/// applies can be chosen there: all of them when the pattern states its type, else those
/// bound to a call of a `const`-constructed type's constructor (or an `Arc` of one, or a
/// tuple of them). Choosing for a variable whose type is only inferred later would take it for
/// such an object too early, and reject it.
fn settled(local: &Local) -> Vec<Ident> {
    let Some(init) = &local.init else {
        return Vec::new();
    };
    if let Pat::Type(typed) = &local.pat {
        return names(&typed.pat);
    }
    let mut out = Vec::new();
    settled_parts(&local.pat, &init.expr, &mut out);
    out
}

fn settled_parts(pat: &Pat, expr: &Expr, out: &mut Vec<Ident>) {
    match (unwrap_pat(pat), unwrap_expr(expr)) {
        (Pat::Tuple(pats), Expr::Tuple(exprs)) if pats.elems.len() == exprs.elems.len() => {
            for (pat, expr) in pats.elems.iter().zip(&exprs.elems) {
                settled_parts(pat, expr, out);
            }
        }
        (Pat::Ident(p), expr) if p.by_ref.is_none() && p.subpat.is_none() && constructs(expr) => {
            out.push(p.ident.clone());
        }
        _ => {}
    }
}

/// Whether `expr` is `T::f(...)` for a `const`-constructed type `T`, `Arc::new` of one, or a
/// tuple of them.
fn constructs(expr: &Expr) -> bool {
    match unwrap_expr(expr) {
        Expr::Call(call) => {
            let Expr::Path(path) = &*call.func else {
                return false;
            };
            let segments: Vec<&syn::PathSegment> = path.path.segments.iter().collect();
            match segments.as_slice() {
                [.., ty, f] if ty.ident == "Arc" && f.ident == "new" => {
                    call.args.len() == 1 && call.args.iter().all(constructs)
                }
                [.., ty, _] => LAZY_TYPES.iter().any(|t| ty.ident == t),
                _ => false,
            }
        }
        Expr::Tuple(t) => !t.elems.is_empty() && t.elems.iter().all(constructs),
        _ => false,
    }
}

/// The variables a pattern binds, in order.
fn names(pat: &Pat) -> Vec<Ident> {
    #[derive(Default)]
    struct Names(Vec<Ident>);
    impl Visit<'_> for Names {
        fn visit_pat_ident(&mut self, p: &syn::PatIdent) {
            self.0.push(p.ident.clone());
            syn::visit::visit_pat_ident(self, p);
        }
    }
    let mut found = Names::default();
    found.visit_pat(pat);
    found.0
}

/// The name a pattern gives what it binds: its variables joined by `/` (`tx/rx`).
fn joined(pat: &Pat) -> Option<String> {
    let names: Vec<String> = names(pat).iter().map(|n| n.unraw().to_string()).collect();
    (!names.is_empty()).then(|| names.join("/"))
}

/// The one variable a pattern binds, when it is just a name (with a type, perhaps).
fn single(pat: &Pat) -> Option<Ident> {
    match unwrap_pat(pat) {
        Pat::Ident(p) if p.subpat.is_none() => Some(p.ident.unraw()),
        _ => None,
    }
}

fn unwrap_pat(pat: &Pat) -> &Pat {
    match pat {
        Pat::Type(t) => unwrap_pat(&t.pat),
        Pat::Paren(p) => unwrap_pat(&p.pat),
        other => other,
    }
}

fn unwrap_expr(expr: &Expr) -> &Expr {
    match expr {
        Expr::Paren(p) => unwrap_expr(&p.expr),
        Expr::Group(g) => unwrap_expr(&g.expr),
        other => other,
    }
}

/// The spans of the first and the last token of `tokens` where an object can be created: a
/// group's last tokens are its last (the closing delimiter of a group rebuilt from a syntax
/// tree has no span of its own), and literals are passed over (nothing is created at one, and
/// a `line!()` located at one would read as that literal to lints). `None` for nothing but
/// literals.
fn extent(tokens: &impl ToTokens) -> Option<(Span, Span)> {
    let trees: Vec<TokenTree> = tokens.to_token_stream().into_iter().collect();
    let first = trees.iter().find_map(|tree| match tree {
        TokenTree::Literal(_) => None,
        TokenTree::Group(g) => Some(g.span_open()),
        other => Some(other.span()),
    })?;
    Some((first, last_span(&trees).unwrap_or(first)))
}

fn last_span(trees: &[TokenTree]) -> Option<Span> {
    trees.iter().rev().find_map(|tree| match tree {
        TokenTree::Literal(_) => None,
        TokenTree::Group(g) => {
            let inner: Vec<TokenTree> = g.stream().into_iter().collect();
            last_span(&inner).or_else(|| Some(g.span_open()))
        }
        other => Some(other.span()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table_of(body: &str) -> String {
        let block: Block = syn::parse_str(body).unwrap();
        table(&block, Span::call_site()).to_string()
    }

    fn names_in(table: &str) -> Vec<String> {
        table
            .split("name :")
            .skip(1)
            .map(|entry| {
                let entry = entry.trim_start();
                match entry.split_once("Some (") {
                    Some((before, after)) if before.trim().ends_with("Option ::") => after
                        .split_once(')')
                        .map(|(name, _)| name.trim().trim_matches('"').to_owned())
                        .unwrap_or_default(),
                    _ => "-".to_owned(),
                }
            })
            .collect()
    }

    #[test]
    fn each_let_names_what_it_makes_after_its_variables() {
        let t = table_of(
            "{ let account = Mutex::new(1); let (tx, rx) = channel(); \
             let (a, (b, _)) = (Mutex::new(0), (Mutex::new(1), make())); \
             let pair = (Mutex::new(1), Shared { lock: Mutex::new(2) }); let _ = 3; }",
        );
        assert_eq!(
            names_in(&t),
            [
                "account",
                "tx/rx",
                "a/b",
                "a",
                "b",
                "b",
                "-",
                "pair",
                "pair.0",
                "pair.1",
                "pair.1.lock"
            ],
            "{t}"
        );
    }

    #[test]
    fn closures_and_nested_blocks_bind_too_and_a_spawned_closure_is_its_own() {
        let t = table_of(
            "{ let worker = thread::Builder::new().spawn(move || { let (tx, rx) = channel(); }); \
             let total = { let m = Mutex::new(0); s.spawn(|| 1); 3 }; \
             fn nested() { let ignored = Mutex::new(0); } }",
        );
        assert_eq!(
            names_in(&t),
            ["worker", "-", "tx/rx", "total", "m", "-"],
            "{t}"
        );
        assert!(
            table_of("{ println!(\"{}\", 1); }").is_empty(),
            "nothing bound, nothing registered"
        );
    }

    #[test]
    fn only_variables_whose_type_is_settled_at_the_let_are_registered_there() {
        let registered = |stmt: &str| -> Vec<String> {
            let local: Local = match syn::parse_str::<Stmt>(stmt).unwrap() {
                Stmt::Local(l) => l,
                other => panic!("not a let: {other:?}"),
            };
            settled(&local).iter().map(ToString::to_string).collect()
        };
        assert_eq!(registered("let m = Mutex::new(0);"), ["m"]);
        assert_eq!(
            registered("let hits = Arc::new(ppd::sync::atomic::AtomicU64::new(0));"),
            ["hits"]
        );
        assert_eq!(
            registered("let (a, b, n) = (Mutex::new(0), RwLock::new(1), 2);"),
            ["a", "b"]
        );
        assert_eq!(
            registered("let pair = (Mutex::new(0), Mutex::new(1));"),
            ["pair"]
        );
        assert_eq!(registered("let (x, y): (u8, Mutex<u8>) = f();"), ["x", "y"]);
        for inferred in [
            "let n = line.parse().unwrap();",
            "let d = Default::default();",
            "let a = Arc::new(Default::default());",
            "let (tx, rx) = channel();",
            "let ref m = Mutex::new(0);",
            "let mixed = (Mutex::new(0), 2);",
        ] {
            assert!(registered(inferred).is_empty(), "{inferred}");
        }
    }
}
