//! Parsing an e-block into a model, and checking it: every problem becomes an error with its
//! span; nothing panics.

use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::{FnArg, Ident, ItemFn, Pat, ReturnType, Signature, Type};

/// How a parameter is passed.
#[derive(Clone)]
pub(crate) enum Passing {
    /// `x: T`
    Value(Type),
    /// `x: &T`
    Ref(Type),
    /// `x: &mut T`
    RefMut(Type),
    /// `self`
    SelfValue,
    /// `&self`
    SelfRef,
    /// `&mut self`
    SelfRefMut,
}

/// One parameter.
#[derive(Clone)]
pub(crate) struct Param {
    /// Its name (`self` for receivers).
    pub(crate) name: Ident,
    /// How it is passed.
    pub(crate) passing: Passing,
}

impl Param {
    /// The parameter's name as text.
    pub(crate) fn label(&self) -> String {
        self.name.to_string()
    }

    /// Whether the postlog holds its final value.
    pub(crate) fn is_output(&self) -> bool {
        matches!(self.passing, Passing::RefMut(_) | Passing::SelfRefMut)
    }

    /// Whether it is the receiver.
    pub(crate) fn is_self(&self) -> bool {
        matches!(
            self.passing,
            Passing::SelfValue | Passing::SelfRef | Passing::SelfRefMut
        )
    }
}

/// A function marked `#[ppd::eblock]`.
pub(crate) struct Eblock {
    /// The function as written.
    pub(crate) function: ItemFn,
    /// Its parameters.
    pub(crate) params: Vec<Param>,
}

fn error(span: Span, message: impl std::fmt::Display) -> syn::Error {
    syn::Error::new(span, message)
}

fn reference_target(ty: &Type) -> Option<(bool, Type)> {
    match ty {
        Type::Reference(r) => Some((r.mutability.is_some(), (*r.elem).clone())),
        Type::Paren(p) => reference_target(&p.elem),
        _ => None,
    }
}

fn contains_impl_trait(ty: &Type) -> bool {
    struct Finder(bool);
    impl<'ast> syn::visit::Visit<'ast> for Finder {
        fn visit_type_impl_trait(&mut self, _: &'ast syn::TypeImplTrait) {
            self.0 = true;
        }
    }
    let mut f = Finder(false);
    syn::visit::Visit::visit_type(&mut f, ty);
    f.0
}

fn unsized_target(ty: &Type) -> bool {
    matches!(ty, Type::Slice(_) | Type::TraitObject(_))
        || matches!(ty, Type::Path(p) if p.path.is_ident("str"))
}

/// Checks the signature; returns every problem.
fn check_signature(sig: &Signature, errors: &mut Vec<syn::Error>) {
    if let Some(a) = &sig.asyncness {
        errors.push(error(
            a.span(),
            "an e-block cannot be async: its prelog and postlog bracket one synchronous call",
        ));
    }
    if let Some(abi) = &sig.abi {
        errors.push(error(abi.span(), "an e-block cannot have a foreign ABI"));
    }
    if let Some(v) = &sig.variadic {
        errors.push(error(v.span(), "an e-block cannot be variadic"));
    }
    for param in &sig.generics.params {
        if !matches!(param, syn::GenericParam::Lifetime(_)) {
            errors.push(error(
                param.span(),
                "an e-block cannot be generic: re-executing an instance needs one function to \
                 run; make a non-generic wrapper the e-block",
            ));
        }
    }
    if let ReturnType::Type(_, ty) = &sig.output {
        if contains_impl_trait(ty) {
            errors.push(error(
                ty.span(),
                "an e-block cannot return `impl Trait`: its result is logged and rebuilt, so it \
                 needs a concrete type",
            ));
        } else if reference_target(ty).is_some() {
            errors.push(error(
                ty.span(),
                "an e-block cannot return a reference: its result is logged and rebuilt from \
                 the log, so it must be an owned value",
            ));
        }
    }
}

fn param_of(arg: &FnArg, in_impl: bool, errors: &mut Vec<syn::Error>) -> Option<Param> {
    match arg {
        FnArg::Receiver(r) => {
            if !in_impl {
                errors.push(error(
                    r.span(),
                    "a method e-block needs `#[ppd::eblocks]` on its `impl` block: \
                     re-executing it must name its `Self` type",
                ));
                return None;
            }
            let passing = match (&r.reference, &r.mutability) {
                (Some(_), Some(_)) => Passing::SelfRefMut,
                (Some(_), None) => Passing::SelfRef,
                (None, _) if matches!(&*r.ty, Type::Path(_)) => Passing::SelfValue,
                (None, _) => {
                    errors.push(error(
                        r.ty.span(),
                        "an e-block receiver must be `self`, `&self` or `&mut self`",
                    ));
                    return None;
                }
            };
            Some(Param {
                name: Ident::new("self", r.self_token.span),
                passing,
            })
        }
        FnArg::Typed(t) => {
            let name = match &*t.pat {
                Pat::Ident(p) if p.subpat.is_none() && p.by_ref.is_none() => p.ident.clone(),
                other => {
                    errors.push(error(
                        other.span(),
                        "an e-block argument must be a plain name (`x: T`): its value is logged \
                         under that name; destructure it inside the body",
                    ));
                    return None;
                }
            };
            let ty = &*t.ty;
            if contains_impl_trait(ty) {
                errors.push(error(
                    ty.span(),
                    "an e-block argument cannot be `impl Trait`: it is logged and rebuilt, so it \
                     needs a concrete type",
                ));
                return None;
            }
            let passing = match reference_target(ty) {
                Some((true, target)) if unsized_target(&target) => {
                    errors.push(error(
                        ty.span(),
                        "an e-block cannot take `&mut` of an unsized value: its final value is \
                         logged and rebuilt; take `&mut Vec<_>` or `&mut String`",
                    ));
                    return None;
                }
                Some((_, Type::TraitObject(_))) => {
                    errors.push(error(
                        ty.span(),
                        "an e-block cannot take a trait object: it is logged and rebuilt, so it \
                         needs a concrete type",
                    ));
                    return None;
                }
                Some((true, target)) => Passing::RefMut(target),
                Some((false, target)) => Passing::Ref(target),
                None => Passing::Value(ty.clone()),
            };
            Some(Param { name, passing })
        }
    }
}

/// Parses and checks one function. `in_impl` says whether `#[ppd::eblocks]` on an `impl`
/// block expands it (which makes receivers possible).
pub(crate) fn parse(function: ItemFn, in_impl: bool) -> Result<Eblock, syn::Error> {
    let mut errors = Vec::new();
    check_signature(&function.sig, &mut errors);
    let params: Vec<Param> = function
        .sig
        .inputs
        .iter()
        .filter_map(|arg| param_of(arg, in_impl, &mut errors))
        .collect();
    match errors.into_iter().reduce(|mut a, b| {
        a.combine(b);
        a
    }) {
        Some(e) => Err(e),
        None => Ok(Eblock { function, params }),
    }
}
