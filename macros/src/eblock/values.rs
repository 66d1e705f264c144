//! Registering the shared objects an e-block reaches, so that their values are logged when
//! their type is serde (`ppd_recorder::sync::values`).
//!
//! ppd's primitives accept any `T: Send`; only code where the type is concrete can tell whether
//! it is serde, by autoref specialization. An e-block's arguments have declared types, so the
//! expansion probes each argument at entry, and each value-carrying method call in the body
//! whose receiver is a place reached from an argument (`rx.recv()`, `self.accounts[i].lock()`).
//! Receivers that are locals are left alone: their type may only be inferred further down,
//! where the probe would pick the serde case too early and reject a non-serde type.

use std::collections::BTreeSet;

use proc_macro2::TokenStream;
use quote::quote;
use syn::visit::Visit;
use syn::visit_mut::VisitMut;
use syn::{Block, Expr, Ident, parse_quote};

/// Methods of ppd's primitives that move a value in or out of a shared object.
const VALUE_METHODS: &[&str] = &[
    // Channels.
    "send",
    "try_send",
    "send_timeout",
    "recv",
    "try_recv",
    "recv_timeout",
    "recv_deadline",
    "iter",
    "try_iter",
    // Locks and cells.
    "lock",
    "try_lock",
    "read",
    "try_read",
    "write",
    "try_write",
    "get",
    "get_or_init",
    "set",
];

/// The probe that registers `object` when its values are serde.
pub(crate) fn register(object: &TokenStream) -> TokenStream {
    quote! { ::ppd::__private::register_values!(#object); }
}

/// Adds registrations to `block`, whose parameters are `params`.
pub(crate) fn register_in(block: &mut Block, params: &[Ident]) {
    let mut bound = BoundNames::default();
    bound.visit_block(block);
    let roots = params
        .iter()
        .map(Ident::to_string)
        .filter(|name| name == "self" || !bound.0.contains(name))
        .collect();
    Registrar { roots }.visit_block_mut(block);
}

/// Every name a pattern in the body binds: such a name may shadow a parameter.
#[derive(Default)]
struct BoundNames(BTreeSet<String>);

impl Visit<'_> for BoundNames {
    fn visit_pat_ident(&mut self, p: &syn::PatIdent) {
        self.0.insert(p.ident.to_string());
        syn::visit::visit_pat_ident(self, p);
    }
}

struct Registrar {
    /// Parameters no pattern of the body rebinds.
    roots: BTreeSet<String>,
}

impl Registrar {
    /// Whether `expr` is a place reached from a parameter without evaluating anything that
    /// could have an effect (so naming it twice is harmless).
    fn rooted(&self, expr: &Expr) -> bool {
        match expr {
            Expr::Path(p) => p.qself.is_none() && p.path.get_ident().is_some_and(|i| self.root(i)),
            Expr::Field(f) => self.rooted(&f.base),
            Expr::Paren(p) => self.rooted(&p.expr),
            Expr::Reference(r) => r.mutability.is_none() && self.rooted(&r.expr),
            Expr::Unary(u) => matches!(u.op, syn::UnOp::Deref(_)) && self.rooted(&u.expr),
            Expr::Index(i) => {
                self.rooted(&i.expr) && matches!(&*i.index, Expr::Lit(_) | Expr::Path(_))
            }
            _ => false,
        }
    }

    fn root(&self, ident: &Ident) -> bool {
        self.roots.contains(&ident.to_string())
    }
}

impl VisitMut for Registrar {
    fn visit_expr_mut(&mut self, expr: &mut Expr) {
        syn::visit_mut::visit_expr_mut(self, expr);
        let object = match &*expr {
            Expr::MethodCall(call)
                if VALUE_METHODS.contains(&call.method.to_string().as_str())
                    && self.rooted(&call.receiver) =>
            {
                &call.receiver
            }
            // `for message in &rx` and `for message in rx.iter()` alike.
            Expr::ForLoop(l) if self.rooted(&l.expr) => &l.expr,
            _ => return,
        };
        let registration = register(&quote!(#object));
        let original = &*expr;
        *expr = parse_quote!({ #registration #original });
    }

    // Nested items have their own parameters.
    fn visit_item_mut(&mut self, _: &mut syn::Item) {}
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::ToTokens;

    fn check(params: &[&str], body: &str) -> String {
        let mut block: Block = syn::parse_str(body).unwrap();
        let params: Vec<Ident> = params
            .iter()
            .map(|p| Ident::new(p, proc_macro2::Span::call_site()))
            .collect();
        register_in(&mut block, &params);
        block.to_token_stream().to_string()
    }

    #[test]
    fn value_calls_on_parameters_and_their_fields_are_registered() {
        let out = check(
            &["rx", "self"],
            "{ let v = rx.recv().unwrap(); self.accounts[0].lock(); v }",
        );
        assert!(out.contains("register_values ! (rx)"), "{out}");
        assert!(
            out.contains("register_values ! (self . accounts [0])"),
            "{out}"
        );
    }

    #[test]
    fn locals_shadowing_and_other_methods_are_left_alone() {
        let out = check(
            &["rx", "m"],
            "{ let (tx, local) = channel(); local.recv(); let m = other(); m.lock(); rx.len(); \
             make().recv(); }",
        );
        assert!(!out.contains("register_values"), "{out}");
    }

    #[test]
    fn loops_over_a_parameter_are_registered() {
        let out = check(&["rx"], "{ for m in &rx { drop(m); } }");
        assert!(out.contains("register_values ! (& rx)"), "{out}");
    }
}
