//! `#[ppd::main]` and `#[ppd::test]`: entry points. Each wraps its function so the runtime
//! starts before the body and finishes after, names the objects its `let` statements (its
//! closures' included) create after their variables (`crate::binding`), and compiles its body
//! and the closures it spawns twice, so that a replay can trace them (`crate::body`).

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{ItemFn, ReturnType};

use crate::{binding, body};

/// Which entry point an attribute makes.
#[derive(Clone, Copy)]
pub(crate) enum Entry {
    /// The program's `main`: its body is logical process `main` of the run.
    Main,
    /// A `#[test]`: when a test binary runs under `ppd record`, the one test it runs is the
    /// recorded program, its body logical process `main`.
    Test,
}

impl Entry {
    fn attribute(self) -> &'static str {
        match self {
            Entry::Main => "#[ppd::main]",
            Entry::Test => "#[ppd::test]",
        }
    }
}

/// Parses, checks and expands `#[ppd::main]` or `#[ppd::test]`.
pub(crate) fn expand(entry: Entry, args: &TokenStream, item: TokenStream) -> TokenStream {
    let attribute = entry.attribute();
    let mut errors = Vec::new();
    if !args.is_empty() {
        errors.push(syn::Error::new(
            args.span(),
            format!(
                "{attribute} takes no arguments; the mode comes from `ppd record` / `ppd replay`"
            ),
        ));
    }
    let function: ItemFn = match syn::parse2(item) {
        Ok(f) => f,
        Err(e) => {
            let what = match entry {
                Entry::Main => "`fn main`",
                Entry::Test => "test function",
            };
            let mut e = syn::Error::new(e.span(), format!("{attribute} goes on a {what}"));
            for other in errors {
                e.combine(other);
            }
            return e.to_compile_error();
        }
    };
    errors.extend(check(entry, &function));
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
    let block = body::twice(&block, &sig.ident.to_string(), span);
    match entry {
        Entry::Main => {
            let run = quote_spanned! {span=> ::ppd::__private::main};
            quote! {
                #(#attrs)*
                #vis fn #ident() -> ::std::process::ExitCode {
                    #run(move || -> #output #block)
                }
                #bindings
            }
        }
        Entry::Test => {
            let run = quote_spanned! {span=> ::ppd::__private::test};
            let should_panic = attrs.iter().any(|a| a.path().is_ident("should_panic"));
            quote! {
                #[test]
                #(#attrs)*
                #vis fn #ident() -> #output {
                    #run(
                        ::core::concat!(::core::module_path!(), "::", ::core::stringify!(#ident)),
                        #should_panic,
                        move || -> #output #block,
                    )
                }
                #bindings
            }
        }
    }
}

fn check(entry: Entry, function: &ItemFn) -> Vec<syn::Error> {
    let attribute = entry.attribute();
    let sig = &function.sig;
    let mut errors = Vec::new();
    if let Some(a) = &sig.asyncness {
        errors.push(syn::Error::new(
            a.span(),
            format!("{attribute} cannot be async: logical processes are threads"),
        ));
    }
    if !sig.inputs.is_empty() {
        let message = match entry {
            Entry::Main => "`main` takes no arguments; read them with std::env::args()",
            Entry::Test => "a test takes no arguments",
        };
        errors.push(syn::Error::new(sig.inputs.span(), message));
    }
    if !sig.generics.params.is_empty() {
        let message = match entry {
            Entry::Main => "`main` cannot be generic",
            Entry::Test => "a test cannot be generic",
        };
        errors.push(syn::Error::new(sig.generics.span(), message));
    }
    if let Entry::Test = entry
        && let Some(test) = function.attrs.iter().find(|a| a.path().is_ident("test"))
    {
        errors.push(syn::Error::new(
            test.span(),
            "#[ppd::test] already makes the function a test: remove this #[test]",
        ));
    }
    errors
}
