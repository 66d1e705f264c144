//! `#[ppd::eblock]` and `#[ppd::eblocks]`: emulation blocks (Miller & Choi §5.1–5.3).

mod expand;
mod model;
pub(crate) mod trace;
mod uses;
mod values;

use proc_macro2::TokenStream;
use quote::{ToTokens, quote};
use syn::spanned::Spanned;
use syn::{ImplItem, Item, ItemImpl};

fn combine(errors: Vec<syn::Error>) -> Option<syn::Error> {
    errors.into_iter().reduce(|mut a, b| {
        a.combine(b);
        a
    })
}

/// How an attribute was asked for: written by the user, or put there by `ppd build`'s automatic
/// e-blocks (`ppd_instrument`), whose choice is syntactic and so may pick a function the
/// expansion cannot handle.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Origin {
    /// `#[ppd::eblock]`: what cannot be an e-block is a compile error, with its reason.
    Written,
    /// `#[ppd::eblock(auto)]`: what cannot be an e-block is left exactly as written.
    Automatic,
}

/// Reads the attribute's arguments: none, or `auto`.
fn origin(args: &TokenStream, attribute: &str) -> Result<Origin, syn::Error> {
    let text = args.to_string();
    match text.as_str() {
        "" => Ok(Origin::Written),
        "auto" => Ok(Origin::Automatic),
        _ => Err(syn::Error::new(
            args.span(),
            format!("#[ppd::{attribute}] takes no arguments"),
        )),
    }
}

fn mentions_self_type(sig: &syn::Signature) -> bool {
    sig.to_token_stream()
        .into_iter()
        .any(|t| matches!(&t, proc_macro2::TokenTree::Ident(i) if i == "Self"))
}

/// `#[ppd::eblock]` on a function.
pub(crate) fn expand_fn(args: &TokenStream, item: TokenStream) -> TokenStream {
    let (origin, mut errors) = match origin(args, "eblock") {
        Ok(origin) => (origin, Vec::new()),
        Err(e) => (Origin::Written, vec![e]),
    };
    if origin == Origin::Automatic {
        return expand_chosen_fn(item);
    }
    let function = match syn::parse2::<Item>(item) {
        Ok(Item::Fn(f)) => f,
        Ok(Item::Impl(i)) => {
            errors.push(syn::Error::new(
                i.impl_token.span,
                "#[ppd::eblock] goes on functions; for methods, put #[ppd::eblocks] on the \
                 `impl` block and #[ppd::eblock] on each method",
            ));
            return combine(errors)
                .map(|e| e.to_compile_error())
                .unwrap_or_default();
        }
        Ok(other) => {
            errors.push(syn::Error::new(
                other.span(),
                "#[ppd::eblock] goes on a function",
            ));
            return combine(errors)
                .map(|e| e.to_compile_error())
                .unwrap_or_default();
        }
        Err(e) => return e.to_compile_error(),
    };
    if mentions_self_type(&function.sig) && function.sig.receiver().is_none() {
        errors.push(syn::Error::new(
            function.sig.ident.span(),
            "an associated function e-block needs #[ppd::eblocks] on its `impl` block: \
             re-executing it must name its `Self` type",
        ));
    }
    let eblock = match model::parse(function, false) {
        Ok(e) => e,
        Err(e) => {
            errors.push(e);
            return combine(errors)
                .map(|e| e.to_compile_error())
                .unwrap_or_default();
        }
    };
    if let Some(e) = combine(errors) {
        return e.to_compile_error();
    }
    free_function(&eblock)
}

/// `#[ppd::eblock(auto)]`: the function as an e-block where it can be one, else as written.
fn expand_chosen_fn(item: TokenStream) -> TokenStream {
    let Ok(Item::Fn(function)) = syn::parse2::<Item>(item.clone()) else {
        return item;
    };
    if mentions_self_type(&function.sig) && function.sig.receiver().is_none() {
        return item;
    }
    let Ok(eblock) = model::parse(function, false) else {
        return item;
    };
    free_function(&eblock)
}

/// A free function's expansion: its items and, beside them, its registration.
fn free_function(eblock: &model::Eblock) -> TokenStream {
    let expansion = expand::expand(eblock, None);
    let items = expansion.items;
    let registration = expansion.registration;
    quote! {
        #items
        const _: () = { #registration };
    }
}

/// Whether an attribute is `#[eblock]` / `#[ppd::eblock]`.
fn is_eblock(attr: &syn::Attribute) -> bool {
    attr.path()
        .segments
        .last()
        .is_some_and(|s| s.ident == "eblock")
}

/// `#[ppd::eblocks]` on an `impl` block: its methods marked `#[ppd::eblock]` are e-blocks.
/// With `auto`, a method that cannot be one, or every method of a block that cannot have any,
/// is left as written.
pub(crate) fn expand_impl(args: &TokenStream, item: TokenStream) -> TokenStream {
    let (origin, mut errors) = match origin(args, "eblocks") {
        Ok(origin) => (origin, Vec::new()),
        Err(e) => (Origin::Written, vec![e]),
    };
    let mut block: ItemImpl = match syn::parse2(item.clone()) {
        Ok(b) => b,
        Err(_) if origin == Origin::Automatic => return item,
        Err(e) => {
            return syn::Error::new(e.span(), "#[ppd::eblocks] goes on an `impl` block")
                .to_compile_error();
        }
    };
    if origin == Origin::Automatic && (!block.generics.params.is_empty() || block.trait_.is_some())
    {
        return without_eblock_marks(block);
    }
    if !block.generics.params.is_empty() {
        errors.push(syn::Error::new(
            block.generics.span(),
            "the methods of a generic `impl` cannot be e-blocks: re-executing an instance needs \
             one concrete type",
        ));
    }
    let self_ty = (*block.self_ty).clone();
    let mut registrations = Vec::new();
    let mut items = Vec::new();
    for item in std::mem::take(&mut block.items) {
        let ImplItem::Fn(method) = item else {
            items.push(item);
            continue;
        };
        if !method.attrs.iter().any(is_eblock) {
            items.push(ImplItem::Fn(method));
            continue;
        }
        let function = syn::ItemFn {
            attrs: method.attrs.into_iter().filter(|a| !is_eblock(a)).collect(),
            vis: method.vis,
            sig: method.sig,
            block: Box::new(method.block),
        };
        if origin == Origin::Automatic {
            match model::parse(function.clone(), true) {
                Ok(eblock) => {
                    let expansion = expand::expand(&eblock, Some(&self_ty));
                    let generated = &expansion.items;
                    match syn::parse2::<ItemImpl>(quote! { impl X { #generated } }) {
                        Ok(parsed) => {
                            items.extend(parsed.items);
                            registrations.push(expansion.registration);
                        }
                        Err(_) => items.push(as_method(function)),
                    }
                }
                Err(_) => items.push(as_method(function)),
            }
            continue;
        }
        match model::parse(function, true) {
            Ok(eblock) => {
                let expansion = expand::expand(&eblock, Some(&self_ty));
                let generated = &expansion.items;
                match syn::parse2::<ItemImpl>(quote! { impl X { #generated } }) {
                    Ok(parsed) => items.extend(parsed.items),
                    Err(e) => errors.push(e),
                }
                registrations.push(expansion.registration);
            }
            Err(e) => errors.push(e),
        }
    }
    block.items = items;
    if let Some(e) = combine(errors) {
        return e.to_compile_error();
    }
    quote! {
        #block
        #(#registrations)*
    }
}

/// A function taken out of an `impl` block, put back as the method it was.
fn as_method(function: syn::ItemFn) -> ImplItem {
    ImplItem::Fn(syn::ImplItemFn {
        attrs: function.attrs,
        vis: function.vis,
        defaultness: None,
        sig: function.sig,
        block: *function.block,
    })
}

/// The block with its methods' `#[ppd::eblock]` marks taken off: what `#[ppd::eblocks(auto)]`
/// leaves of a block none of whose methods can be an e-block.
fn without_eblock_marks(mut block: ItemImpl) -> TokenStream {
    for item in &mut block.items {
        if let ImplItem::Fn(method) = item {
            method.attrs.retain(|a| !is_eblock(a));
        }
    }
    block.into_token_stream()
}
