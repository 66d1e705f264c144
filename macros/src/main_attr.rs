//! `#[ppd::main]`: wraps `fn main` so the runtime starts before its body and finishes after,
//! and names the objects its `let` statements create after their variables.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Block, ItemFn, Pat, ReturnType, Stmt, parse_quote};

/// Parses, checks and expands `#[ppd::main]`.
pub(crate) fn expand(args: &TokenStream, item: TokenStream) -> TokenStream {
    let mut errors = Vec::new();
    if !args.is_empty() {
        errors.push(syn::Error::new(
            args.span(),
            "#[ppd::main] takes no arguments; the mode comes from `ppd record` / `ppd replay`",
        ));
    }
    let function: ItemFn = match syn::parse2(item) {
        Ok(f) => f,
        Err(e) => {
            let mut e = syn::Error::new(e.span(), "#[ppd::main] goes on a `fn main`");
            for other in errors {
                e.combine(other);
            }
            return e.to_compile_error();
        }
    };
    errors.extend(check(&function));
    if let Some(first) = errors.into_iter().reduce(|mut a, b| {
        a.combine(b);
        a
    }) {
        return first.to_compile_error();
    }
    let ItemFn {
        attrs,
        vis,
        sig,
        block,
    } = function;
    let ident = &sig.ident;
    let output = match &sig.output {
        ReturnType::Default => quote!(()),
        ReturnType::Type(_, ty) => quote!(#ty),
    };
    let block = name_bindings(*block);
    let span = sig.ident.span();
    let run = quote_spanned! {span=> ::ppd::__private::main};
    quote! {
        #(#attrs)*
        #vis fn #ident() -> ::std::process::ExitCode {
            #run(move || -> #output #block)
        }
    }
}

/// `main`'s body with every `let NAME = ...;` naming the first ppd object it creates `NAME`
/// (`ppd_recorder::runtime::binding`): the statement's lines bound where the object is made.
fn name_bindings(block: Block) -> Block {
    let mut stmts = Vec::with_capacity(block.stmts.len());
    for stmt in block.stmts {
        let named = match &stmt {
            Stmt::Local(local) if local.init.is_some() => bound_name(&local.pat).map(|var| {
                let name = var.to_string();
                let first = quote_spanned! {local.let_token.span=> ::core::line!()};
                let last = quote_spanned! {local.semi_token.span=> ::core::line!()};
                let open: Stmt = parse_quote! {
                    let __ppd_binding =
                        ::ppd::__private::name_objects(#name, ::core::file!(), #first, #last);
                };
                (open, var)
            }),
            _ => None,
        };
        match named {
            Some((open, var)) => {
                stmts.push(open);
                stmts.push(stmt);
                // Objects created at their first use are registered here, under the name.
                stmts.push(parse_quote! {
                    {
                        #[allow(unused_imports)]
                        use ::ppd::__private::{RegisterBound as _, SkipBound as _};
                        (&&::ppd::__private::Bound(&#var)).register_bound();
                    }
                });
                stmts.push(parse_quote! { ::core::mem::drop(__ppd_binding); });
            }
            None => stmts.push(stmt),
        }
    }
    Block {
        brace_token: block.brace_token,
        stmts,
    }
}

/// The variable a `let` pattern binds, when it binds exactly one by name.
fn bound_name(pat: &Pat) -> Option<syn::Ident> {
    match pat {
        Pat::Ident(i) if i.subpat.is_none() => Some(i.ident.clone()),
        Pat::Type(t) => bound_name(&t.pat),
        _ => None,
    }
}

fn check(function: &ItemFn) -> Vec<syn::Error> {
    let sig = &function.sig;
    let mut errors = Vec::new();
    if let Some(a) = &sig.asyncness {
        errors.push(syn::Error::new(
            a.span(),
            "#[ppd::main] cannot be async: logical processes are threads",
        ));
    }
    if !sig.inputs.is_empty() {
        errors.push(syn::Error::new(
            sig.inputs.span(),
            "`main` takes no arguments; read them with std::env::args()",
        ));
    }
    if !sig.generics.params.is_empty() {
        errors.push(syn::Error::new(
            sig.generics.span(),
            "`main` cannot be generic",
        ));
    }
    errors
}
