//! What a piece of code reads and writes, syntactically: the variables an expression uses
//! (for data dependences) and the names of places (for definitions).

use std::collections::BTreeSet;

use proc_macro2::TokenStream;
use quote::ToTokens;
use syn::punctuated::Punctuated;
use syn::visit::Visit;
use syn::{Expr, ExprClosure, ExprPath, Pat, Token};

/// Methods of ppd's channels, locks and atomics: their receiver is a handle, not data.
const HANDLE_METHODS: &[&str] = &[
    "recv",
    "try_recv",
    "recv_timeout",
    "send",
    "lock",
    "try_lock",
    "acquire",
    "release",
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
    "compare_exchange",
];

/// Whether a method is one of [`HANDLE_METHODS`].
pub(crate) fn is_handle_method(method: &syn::Ident) -> bool {
    HANDLE_METHODS.contains(&method.to_string().as_str())
}

/// Collects what an expression reads: places (`bank.accounts[account].balance`, named whole so
/// that a query can tell one field from another) and variables (`amount`, `self`); not
/// functions being called, not constants or variants (capitalized), not the parameters of
/// closures inside it. The variables an index reads (`account`) are reads of their own.
#[derive(Default)]
struct Uses {
    names: BTreeSet<String>,
    bound: Vec<BTreeSet<String>>,
}

fn is_variable(name: &str) -> bool {
    name == "self"
        || name
            .chars()
            .next()
            .is_some_and(|c| c.is_lowercase() || c == '_')
}

impl Uses {
    fn is_free_variable(&self, name: &str) -> bool {
        is_variable(name) && !self.bound.iter().any(|b| b.contains(name))
    }

    /// A field or index expression: read as a whole place when it is one of a variable's.
    fn place(&mut self, e: &Expr) -> bool {
        let root = place_root(e);
        if !is_place(e) || !root.as_deref().is_some_and(|r| self.is_free_variable(r)) {
            return false;
        }
        self.names.insert(place_name(e));
        self.visit_indexes(e);
        true
    }

    fn visit_indexes(&mut self, e: &Expr) {
        match e {
            Expr::Field(f) => self.visit_indexes(&f.base),
            Expr::Index(i) => {
                self.visit_expr(&i.index);
                self.visit_indexes(&i.expr);
            }
            Expr::Paren(p) => self.visit_indexes(&p.expr),
            _ => {}
        }
    }
}

impl<'ast> Visit<'ast> for Uses {
    fn visit_expr_path(&mut self, e: &'ast ExprPath) {
        if e.qself.is_none() && e.path.segments.len() == 1 {
            let name = e.path.segments[0].ident.to_string();
            if self.is_free_variable(&name) {
                self.names.insert(name);
            }
        }
    }

    fn visit_expr(&mut self, e: &'ast Expr) {
        if matches!(e, Expr::Field(_) | Expr::Index(_)) && self.place(e) {
            return;
        }
        syn::visit::visit_expr(self, e);
    }

    fn visit_expr_method_call(&mut self, e: &'ast syn::ExprMethodCall) {
        // `requests.recv()`, `to_clients[client].send(reply)`: the handle names a channel or a
        // lock; which one depends on its indexes, what comes out does not depend on its value.
        if is_handle_method(&e.method) && is_place(&e.receiver) {
            self.visit_indexes(&e.receiver);
        } else {
            self.visit_expr(&e.receiver);
        }
        for arg in &e.args {
            self.visit_expr(arg);
        }
    }

    fn visit_expr_call(&mut self, e: &'ast syn::ExprCall) {
        // `f(x)`: `f` is a function, not a variable read (unless it is a closure variable,
        // which the trace cannot tell apart).
        if !matches!(&*e.func, Expr::Path(_)) {
            self.visit_expr(&e.func);
        }
        for arg in &e.args {
            self.visit_expr(arg);
        }
    }

    fn visit_expr_closure(&mut self, e: &'ast ExprClosure) {
        // What the closure binds (its parameters, and every pattern of its body: a thread's
        // `let`s and loop variables) is its own, not read from around it.
        let mut params = BTreeSet::new();
        for p in &e.inputs {
            params.extend(bindings(p));
        }
        struct Bound<'b>(&'b mut BTreeSet<String>);
        impl<'ast> Visit<'ast> for Bound<'_> {
            fn visit_pat(&mut self, p: &'ast Pat) {
                self.0.extend(bindings(p));
            }
            fn visit_item(&mut self, _: &'ast syn::Item) {}
        }
        Bound(&mut params).visit_expr(&e.body);
        self.bound.push(params);
        self.visit_expr(&e.body);
        self.bound.pop();
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        // `format!("{}", x)`, `vec![a, b]`: read the arguments when they parse as expressions.
        let comma = m.parse_body_with(Punctuated::<Expr, Token![,]>::parse_terminated);
        let args: Vec<Expr> = match comma {
            Ok(args) => args.into_iter().collect(),
            Err(_) => m
                .parse_body_with(Punctuated::<Expr, Token![;]>::parse_terminated)
                .map(|a| a.into_iter().collect())
                .unwrap_or_default(),
        };
        let formats = m
            .path
            .segments
            .last()
            .is_some_and(|s| FORMAT_MACROS.contains(&s.ident.to_string().as_str()));
        for a in &args {
            match a {
                Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(text),
                    ..
                }) if formats => {
                    for name in inline_format_args(&text.value()) {
                        if self.is_free_variable(&name) {
                            self.names.insert(name);
                        }
                    }
                }
                _ => self.visit_expr(a),
            }
        }
    }
}

/// Macros whose string literals are format strings: `{name}` in one reads `name`.
const FORMAT_MACROS: &[&str] = &[
    "format",
    "format_args",
    "print",
    "println",
    "eprint",
    "eprintln",
    "write",
    "writeln",
    "panic",
    "assert",
    "assert_eq",
    "assert_ne",
    "debug_assert",
    "debug_assert_eq",
    "debug_assert_ne",
    "unreachable",
    "todo",
    "unimplemented",
];

/// The variables a format string captures: `name` in `{name}`, `{name:?}`, and `width` in
/// `{:width$}`; not positions (`{0}`) or escaped braces (`{{`).
fn inline_format_args(format: &str) -> Vec<String> {
    let is_name = |s: &str| {
        s.chars()
            .next()
            .is_some_and(|c| c.is_alphabetic() || c == '_')
            && s.chars().all(|c| c.is_alphanumeric() || c == '_')
    };
    let mut names = Vec::new();
    let mut rest = format;
    while let Some(open) = rest.find(['{', '}']) {
        let after = &rest[open + 1..];
        if rest[open..].starts_with("{{") || rest[open..].starts_with("}}") {
            rest = &after[1..];
            continue;
        }
        if rest.as_bytes()[open] == b'}' {
            rest = after;
            continue;
        }
        let Some(close) = after.find('}') else { break };
        let (argument, spec) = after[..close]
            .split_once(':')
            .unwrap_or((&after[..close], ""));
        names.extend(
            Some(argument.trim())
                .filter(|a| is_name(a))
                .map(str::to_owned),
        );
        for piece in spec.split('$').rev().skip(1) {
            let start = piece
                .rfind(|c: char| !(c.is_alphanumeric() || c == '_'))
                .map_or(0, |i| i + 1);
            names.extend(
                Some(&piece[start..])
                    .filter(|a| is_name(a))
                    .map(str::to_owned),
            );
        }
        rest = &after[close + 1..];
    }
    names
}

/// The variables `expr` reads.
pub(crate) fn of_expr(expr: &Expr) -> Vec<String> {
    let mut u = Uses::default();
    u.visit_expr(expr);
    u.names.into_iter().collect()
}

/// The variables the indexes of a place read (`account` in `bank.accounts[account].balance`):
/// what assigning to the place reads.
pub(crate) fn index_uses(place: &Expr) -> Vec<String> {
    let mut u = Uses::default();
    u.visit_indexes(place);
    u.names.into_iter().collect()
}

/// The variables several expressions read.
pub(crate) fn of_exprs<'a>(exprs: impl IntoIterator<Item = &'a Expr>) -> Vec<String> {
    let mut u = Uses::default();
    for e in exprs {
        u.visit_expr(e);
    }
    u.names.into_iter().collect()
}

/// The names a pattern binds.
pub(crate) fn bindings(pat: &Pat) -> Vec<String> {
    #[derive(Default)]
    struct Bindings(Vec<String>);
    impl<'ast> Visit<'ast> for Bindings {
        fn visit_pat_ident(&mut self, p: &'ast syn::PatIdent) {
            let name = p.ident.to_string();
            // A lone capitalized identifier in a pattern is a unit variant or a constant.
            if is_variable(&name) {
                self.0.push(name);
            }
            if let Some((_, sub)) = &p.subpat {
                self.visit_pat(sub);
            }
        }
    }
    let mut b = Bindings::default();
    b.visit_pat(pat);
    b.0
}

/// How a place is named in traces: its tokens without spaces (`bank.accounts[account].balance`),
/// without dereferences (`total` for `*total`: the trace shows the value behind them).
pub(crate) fn place_name(place: &Expr) -> String {
    match place {
        Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => place_name(&u.expr),
        Expr::Paren(p) => place_name(&p.expr),
        _ => compact(place.to_token_stream()),
    }
}

/// The variable a place belongs to: `bank` for `bank.accounts[i].balance`, `x` for `*x`.
pub(crate) fn place_root(place: &Expr) -> Option<String> {
    match place {
        Expr::Path(p) if p.path.segments.len() == 1 => Some(p.path.segments[0].ident.to_string()),
        Expr::Field(f) => place_root(&f.base),
        Expr::Index(i) => place_root(&i.expr),
        Expr::Unary(u) => place_root(&u.expr),
        Expr::Paren(p) => place_root(&p.expr),
        Expr::MethodCall(m) => place_root(&m.receiver),
        _ => None,
    }
}

/// Whether an expression is a place the trace can read back after a statement changed it.
pub(crate) fn is_place(expr: &Expr) -> bool {
    match expr {
        Expr::Path(p) => p.path.segments.len() == 1 && p.qself.is_none(),
        Expr::Field(f) => is_place(&f.base),
        Expr::Index(i) => is_place(&i.expr),
        Expr::Paren(p) => is_place(&p.expr),
        _ => false,
    }
}

/// The places an expression lends mutably (`line` in `reader.read_line(&mut line)?`): a
/// callee may have written them. Closures and blocks are not looked into: they run at
/// another time, or are traced as statements of their own.
pub(crate) fn lent_mutably(expr: &Expr) -> Vec<Expr> {
    #[derive(Default)]
    struct Lent(Vec<Expr>, BTreeSet<String>);
    impl<'ast> Visit<'ast> for Lent {
        fn visit_expr(&mut self, e: &'ast Expr) {
            match e {
                Expr::Closure(_)
                | Expr::Async(_)
                | Expr::Block(_)
                | Expr::Unsafe(_)
                | Expr::If(_)
                | Expr::Match(_)
                | Expr::Loop(_)
                | Expr::While(_)
                | Expr::ForLoop(_) => {}
                Expr::Reference(r) if r.mutability.is_some() && is_place(&r.expr) => {
                    if self.1.insert(place_name(&r.expr)) {
                        self.0.push((*r.expr).clone());
                    }
                }
                _ => syn::visit::visit_expr(self, e),
            }
        }
    }
    let mut lent = Lent::default();
    lent.visit_expr(expr);
    lent.0
}

/// Tokens as compact text: no spaces except between words, after commas and around braces.
pub(crate) fn compact(tokens: TokenStream) -> String {
    let text = tokens.to_string();
    let chars: Vec<char> = text.chars().collect();
    let word = |c: Option<&char>| c.is_some_and(|c| c.is_alphanumeric() || *c == '_');
    let mut out = String::with_capacity(text.len());
    for (i, &c) in chars.iter().enumerate() {
        let before = chars.get(i.wrapping_sub(1));
        let after = chars.get(i + 1);
        if c == ' ' {
            let keep = (word(before) && word(after))
                || matches!(before, Some(',' | '{'))
                || matches!(after, Some('{' | '}' | '='))
                || matches!(before, Some('>')) && out.ends_with("=>");
            if keep {
                out.push(' ');
            }
            continue;
        }
        // `{ a, b, }`: the trailing comma adds nothing.
        if c == ',' && chars[i + 1..].iter().find(|c| **c != ' ') == Some(&'}') {
            continue;
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn uses(src: &str) -> Vec<String> {
        of_expr(&syn::parse_str(src).unwrap())
    }

    #[test]
    fn variables_read_are_found_and_functions_constants_and_closure_params_are_not() {
        assert_eq!(
            uses("bank.accounts[account].balance - amount"),
            ["account", "amount", "bank.accounts[account].balance"]
        );
        assert_eq!(uses("compute(x, y.z) + OPENING"), ["x", "y.z"]);
        assert_eq!(uses("v[i + 1].len() + t.0"), ["i", "t.0", "v[i+1]"]);
        assert_eq!(
            uses("Request::Withdraw { client: id, account, amount }"),
            ["account", "amount", "id"]
        );
        assert_eq!(uses("v.iter().map(|a| a + k).sum()"), ["k", "v"]);
        assert_eq!(uses("format!(\"{} {}\", a, b.c)"), ["a", "b.c"]);
        assert_eq!(
            uses("format!(\"{{x}} {name} {0:>w$} {n:?} {}\", a)"),
            ["a", "n", "name", "w"]
        );
        assert_eq!(uses("vec![\"{x}\"]"), Vec::<String>::new());
        assert_eq!(
            uses("self.total + Some(n).unwrap_or(0)"),
            ["n", "self.total"]
        );
        assert_eq!(uses("Foo::BAR.x + f().y"), Vec::<String>::new());
        assert_eq!(uses("to_clients[client].send(reply)"), ["client", "reply"]);
        assert_eq!(uses("requests.recv()"), Vec::<String>::new());
        assert_eq!(uses("make().recv()"), Vec::<String>::new());
    }

    #[test]
    fn places_are_named_compactly() {
        let e: Expr = syn::parse_str("bank . accounts [ account ] . balance").unwrap();
        assert_eq!(place_name(&e), "bank.accounts[account].balance");
        let p: Pat = syn::Pat::parse_single
            .parse_str("Request::Withdraw { client, amount, }")
            .unwrap();
        assert_eq!(
            compact(p.to_token_stream()),
            "Request::Withdraw { client, amount }"
        );
        assert_eq!(place_root(&e).as_deref(), Some("bank"));
        assert_eq!(index_uses(&e), ["account"]);
        let e: Expr = syn::parse_str("*count").unwrap();
        assert_eq!(place_root(&e).as_deref(), Some("count"));
        let p: Pat = syn::Pat::parse_single
            .parse_str("(a, Some(b), None, _c)")
            .unwrap();
        assert_eq!(bindings(&p), ["a", "b", "_c"]);
    }

    use syn::parse::Parser;
}
