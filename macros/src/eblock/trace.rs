//! The tracing twin of an e-block's body (Miller & Choi's emulation package, §5.3).
//!
//! A copy of the body is rewritten so that, when ppd re-executes an instance, it records every
//! `let` (and `let ... else`), assignment (compound and field assignments included), place a
//! mutating method changed, place lent as `&mut` to a call that changed it, `if`/`while` condition, loop iteration, `match` arm, and return,
//! each with its value, the variables it was computed from, and the branch it is control
//! dependent on. Statements are announced before they run, so the runtime can attribute the
//! receives, sends and calls they perform. Closures, `async` blocks and nested items are left
//! as they are: they are not traced.

use std::collections::BTreeSet;

use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::visit_mut::VisitMut;
use syn::{Block, Expr, Local, Stmt, parse_quote};

use super::uses;
use crate::binding;

/// Methods that change their receiver: a statement calling one on a place records the place's
/// new value. (A method that consumed its receiver could not be read back, hence a list.)
const MUTATORS: &[&str] = &[
    "push",
    "push_str",
    "push_back",
    "push_front",
    "pop",
    "pop_back",
    "pop_front",
    "insert",
    "remove",
    "clear",
    "extend",
    "extend_from_slice",
    "append",
    "truncate",
    "retain",
    "sort",
    "sort_by",
    "sort_by_key",
    "sort_unstable",
    "dedup",
    "reverse",
    "swap",
    "fill",
    "resize",
    "set",
    "drain",
    "split_off",
    "swap_remove",
    "rotate_left",
    "rotate_right",
];

/// Whether `expr` has outer attributes: nothing else starts an expression with `#`.
fn has_attributes(expr: &Expr) -> bool {
    matches!(
        expr.to_token_stream().into_iter().next(),
        Some(proc_macro2::TokenTree::Punct(p)) if p.as_char() == '#'
    )
}

/// The identifier of a variable named `name` in the source, raw (`r#try`) or not.
fn variable(name: &str) -> syn::Ident {
    match name.strip_prefix("r#") {
        Some(raw) => syn::Ident::new_raw(raw, Span::call_site()),
        None => syn::Ident::new(name, Span::call_site()),
    }
}

/// Rewrites bodies and collects the variables they may define.
pub(crate) struct Tracer {
    /// Variables and places the body may define (Miller & Choi's DEFINED set).
    pub(crate) defines: BTreeSet<String>,
    /// The expression being rewritten is the function's value: the blocks its branches
    /// choose end in a return record.
    tail: bool,
    /// Whether the values of variables are captured: not in a process body, whose locals'
    /// types may be inferred only further down (`crate::body`).
    values: bool,
}

/// The text of a statement as the trace shows it: printed by `prettyplease` (the source text of
/// a whole statement is not available to a proc macro on stable), joined into one line,
/// shortened.
fn text_of(tokens: &impl ToTokens) -> String {
    let tokens = tokens.to_token_stream();
    let printed = syn::parse2::<syn::File>(quote! { fn __ppd() { #tokens } })
        .or_else(|_| syn::parse2::<syn::File>(quote! { fn __ppd() { #tokens; } }))
        .ok()
        .map(|file| prettyplease::unparse(&file));
    let text = printed
        .and_then(|p| {
            let body: Vec<&str> = p.lines().skip(1).collect();
            let body = &body[..body.len().saturating_sub(1)];
            let joined = one_line(body.iter().map(|l| l.trim()).filter(|l| !l.is_empty()));
            (!joined.is_empty()).then_some(joined)
        })
        .unwrap_or_else(|| uses::compact(tokens));
    // `if c {}` printed for a condition: the braces are not part of what is shown.
    let text = text.strip_suffix(" {}").map(str::to_owned).unwrap_or(text);
    let mut out: String = text.chars().take(120).collect();
    if out.len() < text.len() {
        out.push_str(" …");
    }
    out
}

/// Lines of printed code as one line: `a\n.f(x)` → `a.f(x)`, `S {\nx,\n}` → `S { x }`.
fn one_line<'a>(lines: impl Iterator<Item = &'a str>) -> String {
    let mut out = String::new();
    for line in lines {
        let glued = line.starts_with('.')
            || line.starts_with('?')
            || line.starts_with(')')
            || line.starts_with(']')
            || out.ends_with('(')
            || out.ends_with('[')
            || out.is_empty();
        if line.starts_with('}') && out.ends_with(',') {
            out.pop();
        }
        if !glued {
            out.push(' ');
        }
        if (line.starts_with(')') || line.starts_with(']')) && out.ends_with(',') {
            out.pop();
        }
        out.push_str(line);
    }
    out
}

/// `&'static Statement` for a statement, its line taken from `span`.
pub(crate) fn site(span: Span, text: &str) -> TokenStream {
    quote_spanned! {span=>
        {
            static __PPD_SITE: ::ppd::__private::tracer::Statement = ::ppd::__private::tracer::Statement {
                file: ::core::file!(),
                line: ::core::line!(),
                text: #text,
            };
            &__PPD_SITE
        }
    }
}

fn strs(names: &[String]) -> TokenStream {
    quote! { &[#(#names),*] }
}

fn has_let(cond: &Expr) -> bool {
    match cond {
        Expr::Let(_) => true,
        Expr::Binary(b) if matches!(b.op, syn::BinOp::And(_)) => {
            has_let(&b.left) || has_let(&b.right)
        }
        Expr::Paren(p) => has_let(&p.expr),
        _ => false,
    }
}

fn let_bindings(cond: &Expr, out: &mut Vec<String>) {
    match cond {
        Expr::Let(l) => out.extend(uses::bindings(&l.pat)),
        Expr::Binary(b) => {
            let_bindings(&b.left, out);
            let_bindings(&b.right, out);
        }
        Expr::Paren(p) => let_bindings(&p.expr, out),
        _ => {}
    }
}

impl Tracer {
    pub(crate) fn new() -> Tracer {
        Tracer {
            defines: BTreeSet::new(),
            tail: false,
            values: true,
        }
    }

    /// A tracer for a process body: it records what each statement defines and uses, and the
    /// branches taken, without the values of variables (`tracer::not_captured`). Capturing a
    /// value picks how to log it by its type where the variable is bound; an e-block's locals
    /// are computed from its typed parameters, but `let v = Vec::new();` in a closure has a type
    /// only further down, and capturing it there would reject a valid program.
    pub(crate) fn without_values() -> Tracer {
        Tracer {
            values: false,
            ..Tracer::new()
        }
    }

    /// What records the value of `expr`.
    fn value_of(&self, expr: TokenStream) -> TokenStream {
        if self.values {
            quote!(::ppd::__private::capture!(#expr))
        } else {
            quote!(::ppd::__private::tracer::not_captured())
        }
    }

    /// Records of the variables a pattern binds, computed from `used`; all hold the pattern's
    /// inputs.
    fn defs(&mut self, site: &TokenStream, names: &[String], used: &[String]) -> Vec<Stmt> {
        let used = strs(used);
        let mut out: Vec<Stmt> = names
            .iter()
            .map(|name| {
                self.defines.insert(name.clone());
                let ident = variable(name);
                let value = self.value_of(quote!(#ident));
                parse_quote! {
                    ::ppd::__private::tracer::binding(#site, #name, #value, #used);
                }
            })
            .collect();
        // Also without bindings: a branch that shared its inputs with them must not pass them
        // on to the next statement.
        out.push(parse_quote! { ::ppd::__private::tracer::end_bindings(); });
        out
    }

    /// The traced body of the function: its value becomes a return record.
    pub(crate) fn function_body(&mut self, body: &Block) -> Block {
        self.block(body, true)
    }

    fn block(&mut self, block: &Block, function_body: bool) -> Block {
        let mut stmts = Vec::new();
        let last = block.stmts.len().saturating_sub(1);
        for (i, stmt) in block.stmts.iter().enumerate() {
            match stmt {
                Stmt::Local(local) => stmts.extend(self.local(local)),
                Stmt::Item(_) => stmts.push(stmt.clone()),
                Stmt::Macro(m) => {
                    let site = site(m.span(), &text_of(m));
                    let used = strs(&uses::of_expr(&Expr::Macro(syn::ExprMacro {
                        attrs: Vec::new(),
                        mac: m.mac.clone(),
                    })));
                    stmts.push(parse_quote! { ::ppd::__private::tracer::statement(#site, #used); });
                    stmts.push(stmt.clone());
                }
                // `#[allow(..)] { .. }`, `#[cfg(..)] x`: an expression with attributes may stand
                // only as a statement, so it is left as written.
                Stmt::Expr(expr, _) if has_attributes(expr) => stmts.push(stmt.clone()),
                Stmt::Expr(expr, None) if i == last && function_body => {
                    stmts.extend(self.returned(expr));
                }
                Stmt::Expr(Expr::If(guard), _) if is_guard_clause(guard) && i != last => {
                    stmts.extend(self.guard_clause(guard));
                }
                Stmt::Expr(expr, semi) => {
                    stmts.extend(self.expression_statement(expr, semi.is_some()))
                }
            }
        }
        Block {
            brace_token: block.brace_token,
            stmts,
        }
    }

    fn local(&mut self, local: &Local) -> Vec<Stmt> {
        let text = text_of(local);
        let site = site(local.span(), &text);
        let Some(init) = &local.init else {
            return vec![Stmt::Local(local.clone())];
        };
        let used = uses::of_expr(&init.expr);
        let used_tokens = strs(&used);
        let mut traced = local.clone();
        let init_traced = traced.init.as_mut().expect("checked above");
        self.visit_expr_mut(&mut init_traced.expr);
        if let Some((_, diverge)) = &mut init_traced.diverge {
            // `let ... else`: the else block runs when the pattern did not match.
            let inner = match &**diverge {
                Expr::Block(b) => self.block(&b.block, false),
                other => parse_quote!({ #other }),
            };
            let guarded: Expr = parse_quote! {{
                let __ppd_branch = ::ppd::__private::tracer::branch(
                    #site, ::ppd::__private::capture!(false), #used_tokens);
                let _ppd_scope = ::ppd::__private::tracer::scope(__ppd_branch);
                #inner
            }};
            **diverge = guarded;
        }
        let binds = uses::bindings(&local.pat);
        let (lent_before, lent_after) = self.lent(&site, &init.expr, &used, &binds);
        let mut out =
            vec![parse_quote! { ::ppd::__private::tracer::statement(#site, #used_tokens); }];
        out.extend(lent_before);
        let refutable = traced.init.as_ref().is_some_and(|i| i.diverge.is_some());
        out.push(Stmt::Local(traced));
        // As in the recorded function: the process that binds an object creates it.
        out.extend(binding::registrations(local));
        if refutable {
            // The pattern matched: the rest of the block runs because it did.
            out.push(parse_quote! {
                let __ppd_matched = ::ppd::__private::tracer::branch_sharing_inputs(
                    #site, ::ppd::__private::capture!(true), #used_tokens);
            });
            out.push(parse_quote! {
                let _ppd_rest = ::ppd::__private::tracer::scope(__ppd_matched);
            });
        }
        out.extend(lent_after);
        out.extend(self.defs(&site, &binds, &used));
        out
    }

    /// Statements around one that lends places mutably (`read_line(&mut line)`): each place's
    /// value before it, and a record of each the statement changed, holding its inputs.
    /// Places whose variable the statement itself binds are left out: after it, their name
    /// is the new binding's.
    fn lent(
        &mut self,
        site: &TokenStream,
        expr: &Expr,
        used: &[String],
        bound: &[String],
    ) -> (Vec<Stmt>, Vec<Stmt>) {
        let used = strs(used);
        let mut before = Vec::new();
        let mut after = Vec::new();
        let places = uses::lent_mutably(expr)
            .into_iter()
            .filter(|p| uses::place_root(p).is_none_or(|root| !bound.contains(&root)));
        for (i, place) in places.enumerate() {
            let name = uses::place_name(&place);
            self.defines.insert(name.clone());
            let saved = syn::Ident::new(&format!("__ppd_lent_{i}"), Span::call_site());
            let value = self.value_of(quote!(#place));
            before.push(parse_quote! { let #saved = #value; });
            after.push(parse_quote! {
                ::ppd::__private::tracer::lent(#site, #name, #saved, #value, #used);
            });
        }
        (before, after)
    }

    /// The function's final expression: traced, then recorded as the return value. When it is
    /// a `match` or an `if`, the value is recorded at the end of the branch that produced it,
    /// under that branch's control.
    fn returned(&mut self, expr: &Expr) -> Vec<Stmt> {
        if matches!(expr, Expr::Match(_) | Expr::If(_)) {
            let site = site(expr.span(), &text_of(&head(expr)));
            let used = strs(&head_uses(expr));
            let mut traced = expr.clone();
            self.tail = true;
            self.visit_expr_mut(&mut traced);
            self.tail = false;
            return vec![
                parse_quote! { ::ppd::__private::tracer::statement(#site, #used); },
                Stmt::Expr(traced, None),
            ];
        }
        let site = site(expr.span(), &text_of(expr));
        let used = strs(&uses::of_expr(expr));
        let mut traced = expr.clone();
        self.visit_expr_mut(&mut traced);
        let returned = self.value_of(quote!(__ppd_returned));
        vec![Stmt::Expr(
            parse_quote! {{
                ::ppd::__private::tracer::statement(#site, #used);
                let __ppd_returned = #traced;
                ::ppd::__private::tracer::ret(#site, #returned, #used);
                __ppd_returned
            }},
            None,
        )]
    }

    fn expression_statement(&mut self, expr: &Expr, semi: bool) -> Vec<Stmt> {
        let site = site(expr.span(), &text_of(&head(expr)));
        let mut traced = expr.clone();
        self.visit_expr_mut(&mut traced);
        let semi_token: Option<syn::Token![;]> = semi.then(Default::default);
        let announce = |used: &[String]| -> Stmt {
            let used = strs(used);
            parse_quote! { ::ppd::__private::tracer::statement(#site, #used); }
        };
        match expr {
            // `place = value` and `place op= value`.
            Expr::Assign(a) if semi => {
                let mut used = uses::of_expr(&a.right);
                let whole_variable = matches!(&*a.left, Expr::Path(_));
                if !whole_variable {
                    used.extend(uses::index_uses(&a.left));
                }
                self.assignment(&site, &a.left, used, traced, announce)
            }
            Expr::Binary(b) if semi && is_compound_assignment(&b.op) => {
                let used = uses::of_exprs([&*b.right, &*b.left]);
                self.assignment(&site, &b.left, used, traced, announce)
            }
            // `place.push(x)`: the place's new value, if the call changed it.
            Expr::MethodCall(m)
                if semi
                    && uses::is_place(&m.receiver)
                    && MUTATORS.contains(&m.method.to_string().as_str()) =>
            {
                let used = uses::of_expr(expr);
                let place = &m.receiver;
                let name = uses::place_name(place);
                self.defines.insert(name.clone());
                let used_tokens = strs(&used);
                let value = self.value_of(quote!(#place));
                vec![
                    announce(&used),
                    parse_quote! { let __ppd_before = #value; },
                    Stmt::Expr(traced, semi_token),
                    parse_quote! {
                        ::ppd::__private::tracer::def_if_changed(
                            #site, #name, __ppd_before, #value, #used_tokens);
                    },
                ]
            }
            _ if semi => {
                let used = head_uses(expr);
                let (before, after) = self.lent(&site, expr, &used, &[]);
                let mut out = vec![announce(&used)];
                out.extend(before);
                out.push(Stmt::Expr(traced, semi_token));
                if !after.is_empty() {
                    out.extend(after);
                    out.push(parse_quote! { ::ppd::__private::tracer::end_bindings(); });
                }
                out
            }
            _ => vec![announce(&head_uses(expr)), Stmt::Expr(traced, semi_token)],
        }
    }

    fn assignment(
        &mut self,
        site: &TokenStream,
        place: &Expr,
        used: Vec<String>,
        traced: Expr,
        announce: impl Fn(&[String]) -> Stmt,
    ) -> Vec<Stmt> {
        let mut used = used;
        used.sort();
        used.dedup();
        let used_tokens = strs(&used);
        // A place that can be read back is recorded as itself; one behind a call (`*map.entry(k)
        // .or_insert(0) += 1`) would run the call again, so its variable is recorded instead.
        let (name, read_back): (String, Expr) = if uses::is_place(place)
            || matches!(place, Expr::Unary(u) if uses::is_place(&u.expr))
        {
            (uses::place_name(place), place.clone())
        } else if let Some(root) = uses::place_root(place) {
            let ident = variable(&root);
            (root, parse_quote!(#ident))
        } else {
            return vec![
                announce(&used),
                Stmt::Expr(traced, Some(Default::default())),
            ];
        };
        if name == "_" {
            return vec![
                announce(&used),
                Stmt::Expr(traced, Some(Default::default())),
            ];
        }
        self.defines.insert(name.clone());
        let value = self.value_of(quote!(#read_back));
        vec![
            announce(&used),
            Stmt::Expr(traced, Some(Default::default())),
            parse_quote! {
                ::ppd::__private::tracer::def(#site, #name, #value, #used_tokens);
            },
        ]
    }

    /// `{ branch record; scope; definitions; body }` for a block a branch chose. The branch's
    /// inputs (a receive in a `match` scrutinee) are also the inputs of the bindings it makes.
    fn chosen(
        &mut self,
        site: &TokenStream,
        value: TokenStream,
        used: &[String],
        binds: &[String],
        body: &Block,
    ) -> Block {
        let used_tokens = strs(used);
        let defs = self.defs(site, binds, used);
        let tail = std::mem::replace(&mut self.tail, false);
        let inner = self.block(body, tail);
        let stmts = &inner.stmts;
        parse_quote! {{
            let __ppd_branch = ::ppd::__private::tracer::branch_sharing_inputs(#site, #value, #used_tokens);
            let _ppd_scope = ::ppd::__private::tracer::scope(__ppd_branch);
            #(#defs)*
            #(#stmts)*
        }}
    }
}

/// The part of a compound expression that decides it: a `match` scrutinee, an `if` or `while`
/// condition, a `for` iterator; the expression itself otherwise.
fn head(expr: &Expr) -> TokenStream {
    match expr {
        Expr::Match(m) => {
            let e = &m.expr;
            quote!(match #e {})
        }
        Expr::If(i) => {
            let c = &i.cond;
            quote!(if #c {})
        }
        Expr::While(w) => {
            let c = &w.cond;
            quote!(while #c {})
        }
        Expr::ForLoop(f) => {
            let (p, e) = (&f.pat, &f.expr);
            quote!(for #p in #e {})
        }
        Expr::Loop(_) => quote!(loop {}),
        other => other.to_token_stream(),
    }
}

/// The variables the head of an expression reads.
fn head_uses(expr: &Expr) -> Vec<String> {
    match expr {
        Expr::Match(m) => uses::of_expr(&m.expr),
        Expr::If(i) => uses::of_expr(&i.cond),
        Expr::While(w) => uses::of_expr(&w.cond),
        Expr::ForLoop(f) => uses::of_expr(&f.expr),
        Expr::Loop(_) => Vec::new(),
        other => uses::of_expr(other),
    }
}

/// A call of a function by path (`handle(bank, r)`, `Bank::open()`), not of a tuple struct or
/// variant (`Some(x)`, `Reply::Balance(b)`), which could not be an e-block.
fn is_function_call(c: &syn::ExprCall) -> bool {
    match &*c.func {
        Expr::Path(p) => p
            .path
            .segments
            .last()
            .is_some_and(|s| !s.ident.to_string().starts_with(char::is_uppercase)),
        _ => false,
    }
}

/// `called(call_args(callee, &[..]), call)`: announces what each argument was computed from, then
/// evaluates the call as it was (temporaries live as long as they did), then drops the
/// announcement if the call was not an e-block that took it.
fn announced_call(callee: &str, args: &[Vec<String>], call: &Expr) -> Expr {
    let args = args.iter().map(|a| strs(a));
    parse_quote! {
        ::ppd::__private::tracer::called(
            ::ppd::__private::tracer::call_args(#callee, &[#(#args),*]),
            #call,
        )
    }
}

/// `if c { ...; return }` with no `else`, not an `if let`: the code after it runs because the
/// condition was false.
fn is_guard_clause(i: &syn::ExprIf) -> bool {
    i.else_branch.is_none()
        && !has_let(&i.cond)
        && matches!(
            i.then_branch.stmts.last(),
            Some(Stmt::Expr(
                Expr::Return(_) | Expr::Break(_) | Expr::Continue(_),
                _
            ))
        )
}

fn is_compound_assignment(op: &syn::BinOp) -> bool {
    use syn::BinOp::*;
    matches!(
        op,
        AddAssign(_)
            | SubAssign(_)
            | MulAssign(_)
            | DivAssign(_)
            | RemAssign(_)
            | BitXorAssign(_)
            | BitAndAssign(_)
            | BitOrAssign(_)
            | ShlAssign(_)
            | ShrAssign(_)
    )
}

impl VisitMut for Tracer {
    fn visit_expr_mut(&mut self, expr: &mut Expr) {
        match expr {
            // Not traced: they run at another time, or are another function. What they bind
            // is registered as in the recorded function.
            Expr::Closure(_) | Expr::Async(_) => binding::register_in_untraced(expr),
            Expr::Block(b) => {
                b.block = self.block(&b.block, false);
            }
            Expr::Unsafe(u) => {
                u.block = self.block(&u.block, false);
            }
            Expr::Loop(l) => {
                l.body = self.block(&l.body, false);
            }
            Expr::If(i) => *expr = self.traced_if(i),
            Expr::While(w) => *expr = self.traced_while(w),
            Expr::ForLoop(f) => {
                let (pat, iter) = (&f.pat, &f.expr);
                let site = site(f.for_token.span, &text_of(&quote!(for #pat in #iter {})));
                let used = uses::of_expr(&f.expr);
                self.visit_expr_mut(&mut f.expr);
                let iter = &f.expr;
                let used_tokens = strs(&used);
                *f.expr = parse_quote! {
                    ::ppd::__private::tracer::announced(#site, #used_tokens, #iter)
                };
                let binds = uses::bindings(&f.pat);
                f.body = self.chosen(
                    &site,
                    quote!(::ppd::__private::capture!(true)),
                    &used,
                    &binds,
                    &f.body,
                );
            }
            Expr::Match(m) => {
                let tail = std::mem::replace(&mut self.tail, false);
                let scrutinee_used = uses::of_expr(&m.expr);
                self.visit_expr_mut(&mut m.expr);
                for arm in &mut m.arms {
                    self.tail = tail;
                    let pattern = uses::compact(arm.pat.to_token_stream());
                    let site = site(arm.pat.span(), &format!("{pattern} =>"));
                    let mut used = scrutinee_used.clone();
                    if let Some((_, guard)) = &arm.guard {
                        used.extend(uses::of_expr(guard));
                    }
                    let binds = uses::bindings(&arm.pat);
                    let body: Block = match &*arm.body {
                        Expr::Block(b) if b.label.is_none() => b.block.clone(),
                        other => parse_quote!({ #other }),
                    };
                    let chosen = self.chosen(
                        &site,
                        quote!(::ppd::__private::capture!(#pattern)),
                        &used,
                        &binds,
                        &body,
                    );
                    *arm.body = parse_quote!(#chosen);
                }
                self.tail = false;
            }
            Expr::Return(r) => {
                let site = site(r.span(), &text_of(&*r));
                match &mut r.expr {
                    Some(value) => {
                        let used = strs(&uses::of_expr(value));
                        self.visit_expr_mut(value);
                        let v = &**value;
                        let returned = self.value_of(quote!(__ppd_returned));
                        **value = parse_quote! {{
                            let __ppd_returned = #v;
                            ::ppd::__private::tracer::ret(#site, #returned, #used);
                            __ppd_returned
                        }};
                    }
                    None => {
                        *expr = parse_quote! {{
                            ::ppd::__private::tracer::ret(#site, ::ppd::__private::capture!(()), &[]);
                            return;
                        }};
                    }
                }
            }
            Expr::Call(c) if is_function_call(c) => {
                let args: Vec<Vec<String>> = c.args.iter().map(uses::of_expr).collect();
                let callee = match &*c.func {
                    Expr::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
                    _ => None,
                }
                .unwrap_or_default();
                syn::visit_mut::visit_expr_mut(self, expr);
                *expr = announced_call(&callee, &args, expr);
            }
            Expr::MethodCall(m) if !uses::is_handle_method(&m.method) => {
                let mut args = vec![uses::of_expr(&m.receiver)];
                args.extend(m.args.iter().map(uses::of_expr));
                let callee = m.method.to_string();
                syn::visit_mut::visit_expr_mut(self, expr);
                *expr = announced_call(&callee, &args, expr);
            }
            _ => syn::visit_mut::visit_expr_mut(self, expr),
        }
    }

    fn visit_item_mut(&mut self, _item: &mut syn::Item) {}
}

impl Tracer {
    fn traced_if(&mut self, i: &syn::ExprIf) -> Expr {
        let cond = &i.cond;
        let site = site(i.if_token.span, &text_of(&quote!(if #cond {})));
        let used = uses::of_expr(&i.cond);
        let else_block = |this: &mut Tracer, value: bool| -> Option<Block> {
            i.else_branch.as_ref().map(|(_, e)| {
                let body: Block = match &**e {
                    Expr::Block(b) => b.block.clone(),
                    other => parse_quote!({ #other }),
                };
                this.chosen(
                    &site,
                    quote!(::ppd::__private::capture!(#value)),
                    &used,
                    &[],
                    &body,
                )
            })
        };
        let tail = std::mem::replace(&mut self.tail, false);
        if has_let(&i.cond) {
            // `if let` and let chains: the bindings exist only in the chosen block.
            let mut binds = Vec::new();
            let_bindings(&i.cond, &mut binds);
            let mut cond = (*i.cond).clone();
            self.visit_expr_mut(&mut cond);
            self.tail = tail;
            let then = self.chosen(
                &site,
                quote!(::ppd::__private::capture!(true)),
                &used,
                &binds,
                &i.then_branch,
            );
            self.tail = tail;
            let otherwise = else_block(self, false);
            self.tail = false;
            return match otherwise {
                Some(o) => parse_quote!(if #cond #then else #o),
                None => {
                    let o = self.chosen(
                        &site,
                        quote!(::ppd::__private::capture!(false)),
                        &used,
                        &[],
                        &parse_quote!({}),
                    );
                    parse_quote!(if #cond #then else #o)
                }
            };
        }
        let mut cond = (*i.cond).clone();
        self.visit_expr_mut(&mut cond);
        let used_tokens = strs(&used);
        let then_inner = self.block(&i.then_branch, tail);
        let then_stmts = &then_inner.stmts;
        let otherwise = i.else_branch.as_ref().map(|(_, e)| {
            let body: Block = match &**e {
                Expr::Block(b) => b.block.clone(),
                other => parse_quote!({ #other }),
            };
            let inner = self.block(&body, tail);
            let stmts = inner.stmts;
            quote! { else { let _ppd_scope = ::ppd::__private::tracer::scope(__ppd_branch); #(#stmts)* } }
        });
        parse_quote! {{
            ::ppd::__private::tracer::statement(#site, #used_tokens);
            let __ppd_condition: bool = #cond;
            let __ppd_branch = ::ppd::__private::tracer::branch(
                #site, ::ppd::__private::capture!(__ppd_condition), #used_tokens);
            if __ppd_condition {
                let _ppd_scope = ::ppd::__private::tracer::scope(__ppd_branch);
                #(#then_stmts)*
            } #otherwise
        }}
    }

    /// A guard clause, inline: its branch's scope covers the rest of the block.
    fn guard_clause(&mut self, i: &syn::ExprIf) -> Vec<Stmt> {
        let cond = &i.cond;
        let site = site(i.if_token.span, &text_of(&quote!(if #cond {})));
        let used = strs(&uses::of_expr(&i.cond));
        let mut cond = (*i.cond).clone();
        self.visit_expr_mut(&mut cond);
        let inner = self.block(&i.then_branch, false);
        let stmts = &inner.stmts;
        vec![
            parse_quote! { ::ppd::__private::tracer::statement(#site, #used); },
            parse_quote! { let __ppd_guard: bool = #cond; },
            parse_quote! {
                let __ppd_guard_branch = ::ppd::__private::tracer::branch(
                    #site, ::ppd::__private::capture!(__ppd_guard), #used);
            },
            parse_quote! {
                if __ppd_guard {
                    let _ppd_scope = ::ppd::__private::tracer::scope(__ppd_guard_branch);
                    #(#stmts)*
                }
            },
            parse_quote! { let _ppd_rest = ::ppd::__private::tracer::scope(__ppd_guard_branch); },
        ]
    }

    fn traced_while(&mut self, w: &syn::ExprWhile) -> Expr {
        let cond = &w.cond;
        let site = site(w.while_token.span, &text_of(&quote!(while #cond {})));
        let used = uses::of_expr(&w.cond);
        let label = &w.label;
        let mut cond = (*w.cond).clone();
        self.visit_expr_mut(&mut cond);
        if has_let(&w.cond) {
            let mut binds = Vec::new();
            let_bindings(&w.cond, &mut binds);
            let body = self.chosen(
                &site,
                quote!(::ppd::__private::capture!(true)),
                &used,
                &binds,
                &w.body,
            );
            return parse_quote!(#label while #cond #body);
        }
        let used_tokens = strs(&used);
        let inner = self.block(&w.body, false);
        let stmts = &inner.stmts;
        parse_quote! {{
            let mut __ppd_loop_branch: u32 = u32::MAX;
            #label while ({
                ::ppd::__private::tracer::statement(#site, #used_tokens);
                let __ppd_condition: bool = #cond;
                __ppd_loop_branch = ::ppd::__private::tracer::branch(
                    #site, ::ppd::__private::capture!(__ppd_condition), #used_tokens);
                __ppd_condition
            }) {
                let _ppd_scope = ::ppd::__private::tracer::scope(__ppd_loop_branch);
                #(#stmts)*
            }
        }}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_print_on_one_line() {
        let stmt: Stmt = syn::parse_quote! {
            teller
                .send(Request::Check { client: id, account, amount })
                .expect("teller");
        };
        assert_eq!(
            text_of(&stmt),
            r#"teller.send(Request::Check { client: id, account, amount }).expect("teller");"#
        );
        let stmt: Stmt =
            syn::parse_quote! { let total = accounts.iter().map(|a| a.balance).sum(); };
        assert_eq!(
            text_of(&stmt),
            "let total = accounts.iter().map(|a| a.balance).sum();"
        );
    }
}
