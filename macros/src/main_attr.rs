//! `#[ppd::main]`: wraps `fn main` so the runtime starts before its body and finishes after,
//! and names the objects its `let` statements (its closures' included) create after their
//! variables (`crate::binding`).

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{ItemFn, ReturnType};

use crate::binding;

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
    let mut block = *block;
    let span = sig.ident.span();
    let bindings = binding::table(&block, span);
    binding::register_in(&mut block);
    let run = quote_spanned! {span=> ::ppd::__private::main};
    quote! {
        #(#attrs)*
        #vis fn #ident() -> ::std::process::ExitCode {
            #run(move || -> #output #block)
        }
        #bindings
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
