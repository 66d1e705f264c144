//! Expanding a checked e-block into: the function itself, logging a prelog at entry and a
//! postlog at exit (and taking its results from a postlog when an enclosing instance is being
//! re-executed); its tracing twin; the emulator that rebuilds its arguments from a prelog and
//! runs the twin; and the registrations of the emulator and of the names its `let`s give the
//! objects they make (`crate::binding`).

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::{ReturnType, Type};

use super::model::{Eblock, Param, Passing};
use super::trace::{self, Tracer};
use super::uses;
use super::values;
use crate::binding;

/// The pieces of an expanded e-block.
pub(crate) struct Expansion {
    /// The function, its twin and its emulator (inside an `impl` for methods).
    pub(crate) items: TokenStream,
    /// The registration (outside any `impl`).
    pub(crate) registration: TokenStream,
}

/// The type a parameter's logged value is rebuilt as: the parameter's type, or what a
/// reference points to (`String` for `&str`, `Vec<T>` for `&[T]`).
fn owned_type(param: &Param) -> TokenStream {
    match &param.passing {
        Passing::Value(t) | Passing::RefMut(t) => quote!(#t),
        Passing::Ref(Type::Path(p)) if p.path.is_ident("str") => quote!(::std::string::String),
        Passing::Ref(Type::Slice(s)) => {
            let elem = &s.elem;
            quote!(::std::vec::Vec<#elem>)
        }
        Passing::Ref(t) => quote!(#t),
        Passing::SelfValue | Passing::SelfRef | Passing::SelfRefMut => quote!(Self),
    }
}

/// `&value` for the prelog/postlog writer.
fn logged_ref(param: &Param) -> TokenStream {
    let name = &param.name;
    match param.passing {
        Passing::Value(_) | Passing::SelfValue => quote!(&#name),
        Passing::Ref(_) | Passing::SelfRef => quote!(#name),
        Passing::RefMut(_) | Passing::SelfRefMut => quote!(&*#name),
    }
}

fn return_type(output: &ReturnType) -> Type {
    match output {
        ReturnType::Default => syn::parse_quote!(()),
        ReturnType::Type(_, ty) => (**ty).clone(),
    }
}

/// Expands an e-block. `self_ty` is the `impl`'s type for methods.
pub(crate) fn expand(eblock: &Eblock, self_ty: Option<&Type>) -> Expansion {
    let function = &eblock.function;
    let sig = &function.sig;
    let ident = &sig.ident;
    let vis = &function.vis;
    let attrs = &function.attrs;
    let ret = return_type(&sig.output);
    let params = &eblock.params;
    let name_suffix = match self_ty {
        Some(ty) => format!("{}::{ident}", uses::compact(quote!(#ty))),
        None => ident.to_string(),
    };
    let count = params.len() as u32;
    let outputs: Vec<&Param> = params.iter().filter(|p| p.is_output()).collect();
    let output_count = 1 + outputs.len() as u32;

    // The recorded function. Values of any type are logged: serde ones as themselves, others
    // as a mark a re-execution stops at (`ppd_recorder::eblock::logged`).
    let prelog_entries = params.iter().map(|p| {
        let label = p.label();
        let value = logged_ref(p);
        quote! { (&&&__ppd_logged::Logged(#value)).log_entry(&mut __ppd_log, #label); }
    });
    let postlog_entries = outputs.iter().map(|p| {
        let label = p.label();
        let value = logged_ref(p);
        quote! { (&&&__ppd_logged::Logged(#value)).log_entry(&mut __ppd_log, #label); }
    });
    let substitutions = outputs.iter().map(|p| {
        let label = p.label();
        let name = &p.name;
        let owned = owned_type(p);
        quote! {
            *#name = (&&__ppd_logged::Rebuilt::<#owned>::new()).take(&__ppd_postlog, #label);
        }
    });
    let param_names: Vec<syn::Ident> = params.iter().map(|p| p.name.clone()).collect();
    let mut body = (*function.block).clone();
    values::register_in(&mut body, &param_names);
    binding::register_in(&mut body);
    let registrations: Vec<TokenStream> = params
        .iter()
        .map(|p| {
            let name = &p.name;
            values::register(&quote!(#name))
        })
        .collect();
    let location = quote_spanned! {ident.span()=> ::core::panic::Location::caller() };
    let wrapper = quote! {
        #(#attrs)*
        #vis #sig {
            #[allow(unused_imports)]
            use ::ppd::__private::eblock::logged::{
                self as __ppd_logged, TakeLogged as _, TakeUnlogged as _, ViaDebug as _,
                ViaNothing as _, ViaSerialize as _,
            };
            #(#registrations)*
            const __PPD_EBLOCK: &str = ::core::concat!(::core::module_path!(), "::", #name_suffix);
            match ::ppd::__private::eblock::enter(__PPD_EBLOCK, #location, || {
                let mut __ppd_log = ::ppd::__private::eblock::map(#count);
                #(#prelog_entries)*
                __ppd_log.finish()
            }) {
                ::ppd::__private::eblock::Entry::Substituted(__ppd_postlog) => {
                    #(#substitutions)*
                    (&&__ppd_logged::Rebuilt::<#ret>::new()).take(&__ppd_postlog, "%0")
                }
                ::ppd::__private::eblock::Entry::Run(__ppd_frame) => {
                    #[allow(clippy::redundant_closure_call)]
                    let __ppd_result: #ret = (|| -> #ret #body)();
                    __ppd_frame.exit(|| {
                        let mut __ppd_log = ::ppd::__private::eblock::map(#output_count);
                        (&&&__ppd_logged::Logged(&__ppd_result)).log_entry(&mut __ppd_log, "%0");
                        #(#postlog_entries)*
                        __ppd_log.finish()
                    });
                    __ppd_result
                }
            }
        }
    };

    // The tracing twin: same signature, traced body.
    let mut tracer = Tracer::new();
    let mut traced_body = tracer.function_body(&function.block);
    values::register_in(&mut traced_body, &param_names);
    let traced_ident = format_ident!("__ppd_traced_{}", ident);
    let mut traced_sig = sig.clone();
    traced_sig.ident = traced_ident.clone();
    let twin = quote! {
        #[doc(hidden)]
        #[allow(unused, clippy::all, clippy::pedantic)]
        #traced_sig #traced_body
    };

    // The emulator: arguments from the prelog, the twin, results to compare.
    let emulate_ident = format_ident!("__ppd_emulate_{}", ident);
    let entry_text = format!("fn {ident}");
    let entry_site = trace::site(ident.span(), &entry_text);
    let mut loads = Vec::new();
    let mut call_args = Vec::new();
    let mut receiver = None;
    for (i, p) in params.iter().enumerate() {
        let slot = format_ident!("__ppd_arg_{}", i);
        let owned = owned_type(p);
        let label = p.label();
        loads.push(quote! {
            #[allow(unused_mut)]
            let mut #slot: #owned =
                (&&__ppd_logged::Rebuilt::<#owned>::new()).arg(__ppd_ctx, #label, #entry_site);
        });
        loads.push(values::register(&quote!(#slot)));
        let passed = match &p.passing {
            Passing::Value(_) | Passing::SelfValue => quote!(#slot),
            Passing::Ref(_) | Passing::SelfRef => quote!(&#slot),
            Passing::RefMut(_) | Passing::SelfRefMut => quote!(&mut #slot),
        };
        if p.is_self() {
            receiver = Some(passed);
        } else {
            call_args.push(passed);
        }
    }
    let outputs_back = params
        .iter()
        .enumerate()
        .filter(|(_, p)| p.is_output())
        .map(|(i, p)| {
            let slot = format_ident!("__ppd_arg_{}", i);
            let label = p.label();
            quote! {
                __ppd_ctx.output(#label, (&&&__ppd_logged::Logged(&#slot)).logged_bytes());
            }
        });
    let call = match (self_ty, receiver) {
        (Some(_), Some(r)) => quote!(Self::#traced_ident(#r, #(#call_args),*)),
        (Some(_), None) => quote!(Self::#traced_ident(#(#call_args),*)),
        (None, _) => quote!(#traced_ident(#(#call_args),*)),
    };
    let emulator = quote! {
        #[doc(hidden)]
        #[allow(unused, clippy::all, clippy::pedantic)]
        fn #emulate_ident(__ppd_ctx: &mut ::ppd::__private::emulate::Ctx) {
            use ::ppd::__private::eblock::logged::{
                self as __ppd_logged, ViaDebug as _, ViaNothing as _, ViaSerialize as _,
            };
            use ::ppd::__private::emulate::arguments::{ArgLogged as _, ArgUnlogged as _};
            #(#loads)*
            let __ppd_result: #ret = #call;
            __ppd_ctx.output("%0", (&&&__ppd_logged::Logged(&__ppd_result)).logged_bytes());
            #(#outputs_back)*
        }
    };

    // The registration.
    let mut defines: Vec<String> = tracer.defines.into_iter().collect();
    defines.extend(outputs.iter().map(|p| p.label()));
    defines.push("%0".into());
    defines.sort();
    defines.dedup();
    let param_labels: Vec<String> = params.iter().map(Param::label).collect();
    let run = match self_ty {
        Some(ty) => quote!(<#ty>::#emulate_ident),
        None => quote!(#emulate_ident),
    };
    let bindings = binding::table(&function.block, ident.span());
    let registration = quote_spanned! {ident.span()=>
        ::ppd::__private::inventory::submit! {
            ::ppd::__private::emulate::Emulator {
                name: ::core::concat!(::core::module_path!(), "::", #name_suffix),
                file: ::core::file!(),
                line: ::core::line!(),
                params: &[#(#param_labels),*],
                defines: &[#(#defines),*],
                run: #run,
            }
        }
        #bindings
    };
    Expansion {
        items: quote! { #wrapper #twin #emulator },
        registration,
    }
}
