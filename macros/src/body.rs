//! Process bodies compiled twice: `#[ppd::main]`'s (and `#[ppd::test]`'s) own body, and each
//! closure written in it as an argument of a `spawn` (`thread::spawn`, `Builder::spawn`, a
//! scope's `s.spawn`, `spawn_scoped`). Each runs as written, except in the replay that traces
//! its process (`ppd_replayer::body`), where its traced copy (`eblock::trace`) runs instead,
//! so that `ppd why` can explain the variables of a thread's closure and of `main` with no
//! annotation.
//!
//! The traced copy of a body is made from the body as written: in it, the closures it spawns
//! run as written, since only one process is traced at a time. A body stays one expression
//! (`if traced { .. } else { body }`), so `return`, `?` and what it captures are as they were;
//! the traced copy runs as a closure of its own, whose `return` ends it the same way.

use proc_macro2::Span;
use quote::quote_spanned;
use syn::spanned::Spanned;
use syn::visit_mut::VisitMut;
use syn::{Block, Expr, ExprClosure, parse_quote};

use crate::binding::is_spawn;
use crate::eblock::trace::Tracer;

/// `block`, `main`'s or a test's body, compiled twice, with every closure it spawns compiled
/// twice too.
pub(crate) fn twice(block: &Block, name: &str, span: Span) -> Block {
    let traced = Tracer::without_values().function_body(block);
    let mut written = block.clone();
    Spawned.visit_block_mut(&mut written);
    let run_traced = quote_spanned! {span=> ::ppd::__private::body::run_traced };
    parse_quote! {{
        if ::ppd::__private::body::traced() {
            #[allow(unreachable_code, unused, clippy::all, clippy::pedantic)]
            let __ppd_traced = || #traced;
            #run_traced(::core::concat!(::core::module_path!(), "::", #name), __ppd_traced)
        } else #written
    }}
}

/// Compiles every closure passed to a spawn twice.
struct Spawned;

impl VisitMut for Spawned {
    fn visit_expr_mut(&mut self, expr: &mut Expr) {
        let args = match expr {
            Expr::Call(call) if is_spawn_path(&call.func) => Some(&mut call.args),
            Expr::MethodCall(call) if is_spawn(&call.method) => Some(&mut call.args),
            _ => None,
        };
        match args {
            Some(args) => {
                for arg in args.iter_mut() {
                    match arg {
                        Expr::Closure(closure) if closure.asyncness.is_none() => {
                            *closure = closure_twice(closure);
                        }
                        other => self.visit_expr_mut(other),
                    }
                }
                // The receiver or callee may spawn too (`scope(|s| ..).spawn(..)` is rare, but
                // a builder's arguments are ordinary expressions).
                match expr {
                    Expr::Call(call) => self.visit_expr_mut(&mut call.func),
                    Expr::MethodCall(call) => self.visit_expr_mut(&mut call.receiver),
                    _ => {}
                }
            }
            None => syn::visit_mut::visit_expr_mut(self, expr),
        }
    }

    // Nested items are not the entry point's: their own attributes decide.
    fn visit_item_mut(&mut self, _: &mut syn::Item) {}
}

/// Whether `func` names a spawn (`spawn`, `thread::spawn`, `ppd::thread::spawn`).
fn is_spawn_path(func: &Expr) -> bool {
    match func {
        Expr::Path(p) => p.path.segments.last().is_some_and(|s| is_spawn(&s.ident)),
        _ => false,
    }
}

/// A spawned closure compiled twice: its body as written (the closures it spawns compiled
/// twice in turn), and traced.
fn closure_twice(closure: &ExprClosure) -> ExprClosure {
    let body: Block = match &*closure.body {
        Expr::Block(b) if b.label.is_none() && b.attrs.is_empty() => b.block.clone(),
        other => parse_quote!({ #other }),
    };
    let traced = Tracer::without_values().function_body(&body);
    let mut written = body;
    Spawned.visit_block_mut(&mut written);
    let span = closure.span();
    let run_traced = quote_spanned! {span=> ::ppd::__private::body::run_traced };
    let name = quote_spanned! {span=>
        ::core::concat!("{closure at ", ::core::file!(), ":", ::core::line!(), "}")
    };
    let mut twice = closure.clone();
    twice.body = Box::new(parse_quote! {{
        if ::ppd::__private::body::traced() {
            #[allow(unreachable_code, unused, clippy::all, clippy::pedantic)]
            let __ppd_traced = || #traced;
            #run_traced(#name, __ppd_traced)
        } else #written
    }});
    twice
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::ToTokens;

    fn expand(body: &str) -> String {
        let block: Block = syn::parse_str(body).unwrap();
        twice(&block, "main", Span::call_site())
            .to_token_stream()
            .to_string()
    }

    #[test]
    fn the_closures_given_to_spawns_are_compiled_twice_and_others_are_not() {
        let out = expand(
            "{ let h = thread::spawn(move || { let x = 1; x }); \
               Builder::new().name(n).spawn(|| work()).unwrap(); \
               s.spawn(|| 2); \
               let f = || 3; v.iter().map(|y| y + 1); }",
        );
        // Main's body, and three spawned closures.
        assert_eq!(out.matches("body :: traced ()").count(), 4, "{out}");
        assert!(out.contains("let f = || 3"), "{out}");
        assert!(out.contains("map (| y | y + 1)"), "{out}");
    }

    #[test]
    fn raw_identifiers_are_traced_as_written() {
        let out = expand("{ let r#try = 1; spawn(move || { let r#loop = r#try; }); }");
        assert!(out.contains("r#try"), "{out}");
        assert!(out.contains("r#loop"), "{out}");
    }

    #[test]
    fn an_expression_with_attributes_is_left_as_written() {
        let out = expand("{ #[allow(unreachable_code)] { f() } }");
        // Written and traced copies alike: never `let __ppd_returned = #[allow] ..`.
        assert_eq!(
            out.matches("# [allow (unreachable_code)] { f () }").count(),
            2,
            "{out}"
        );
    }

    #[test]
    fn a_closure_spawned_inside_a_spawned_closure_is_compiled_twice_where_it_runs_as_written() {
        let out = expand("{ spawn(move || { spawn(move || 1); }); }");
        // Main's body (whose traced copy spawns as written), the outer closure, and the
        // inner one in the outer's written copy.
        assert_eq!(out.matches("body :: traced ()").count(), 3, "{out}");
    }
}
