//! What each function of the program may do, found syntactically and closed over calls by
//! name: the summary a call that the analysis does not follow stands for.

use std::collections::{BTreeMap, BTreeSet};

use syn::visit::Visit;

use super::File;
use super::Hidden;

/// Method and function names that communicate.
pub(crate) const SENDS: &[&str] = &["send", "try_send", "send_timeout"];
/// Method names that receive.
pub(crate) const RECVS: &[&str] = &["recv", "try_recv", "recv_timeout", "recv_deadline"];

/// Whether `attrs` hold an attribute whose path ends in `name`.
pub(crate) fn has_attr(attrs: &[syn::Attribute], name: &str) -> bool {
    attrs
        .iter()
        .any(|a| a.path().segments.last().is_some_and(|s| s.ident == name))
}

/// The program's functions: what each may do, and which are e-blocks.
#[derive(Debug, Default)]
pub(crate) struct Functions {
    /// Effects by function name, closed over the calls of each.
    pub(crate) effects: BTreeMap<String, Hidden>,
    /// The e-blocks, by name.
    pub(crate) eblocks: BTreeSet<String>,
    /// Every function's definition, by name.
    pub(crate) defs: BTreeMap<String, Vec<std::rc::Rc<Def>>>,
    /// The program's module names.
    pub(crate) modules: BTreeSet<String>,
}

/// A function's definition, for the walk to follow a call into it.
#[derive(Debug)]
pub(crate) struct Def {
    /// Its name.
    pub(crate) name: String,
    /// The type of the `impl` it is in, for a method or an associated function.
    pub(crate) owner: Option<String>,
    /// Each parameter's name, when it is a plain name; `None` for `self` and patterns.
    pub(crate) params: Vec<Option<String>>,
    /// Whether the first parameter is `self`.
    pub(crate) has_self: bool,
    /// Its body.
    pub(crate) block: syn::Block,
    /// The file it is in.
    pub(crate) file: String,
}

impl Functions {
    /// The one function `name` of `owner` (`None`: a free function), if exactly one.
    pub(crate) fn def(&self, owner: Option<&str>, name: &str) -> Option<std::rc::Rc<Def>> {
        let mut it = self
            .defs
            .get(name)?
            .iter()
            .filter(|d| d.owner.as_deref() == owner);
        let d = it.next()?;
        it.next().is_none().then(|| d.clone())
    }

    /// Whether some `impl` of the program is for a type named `name`.
    pub(crate) fn is_type(&self, name: &str) -> bool {
        self.defs
            .values()
            .flatten()
            .any(|d| d.owner.as_deref() == Some(name))
    }
}

impl Functions {
    pub(crate) fn of(files: &[File]) -> Functions {
        let mut c = Collect::default();
        for f in files {
            c.file = f.name.clone();
            c.visit_file(&f.ast);
        }
        let mut effects: BTreeMap<String, Hidden> = c
            .own
            .iter()
            .map(|(name, (h, _))| (name.clone(), h.clone()))
            .collect();
        // Close over calls: each function does what its callees do.
        loop {
            let mut changed = false;
            for (name, (_, callees)) in &c.own {
                let mut acc = effects[name].clone();
                for callee in callees {
                    if callee == name {
                        continue;
                    }
                    if let Some(h) = effects.get(callee) {
                        merge(&mut acc, h);
                        if c.eblocks.contains(callee) {
                            acc.enters.insert(callee.clone());
                        }
                    }
                }
                if acc != effects[name] {
                    effects.insert(name.clone(), acc);
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        Functions {
            effects,
            eblocks: c.eblocks,
            defs: c.defs,
            modules: c.modules,
        }
    }

    /// Whether calling `name` may do anything the graph would need.
    pub(crate) fn effects_of(&self, name: &str) -> Option<&Hidden> {
        self.effects.get(name).filter(|h| !is_empty(h))
    }
}

pub(crate) fn is_empty(h: &Hidden) -> bool {
    h.marks.is_empty() && !h.any_mark && h.enters.is_empty() && !h.comm && !h.spawn
}

pub(crate) fn merge(into: &mut Hidden, h: &Hidden) {
    into.marks.extend(h.marks.iter().cloned());
    into.any_mark |= h.any_mark;
    into.enters.extend(h.enters.iter().cloned());
    into.comm |= h.comm;
    into.spawn |= h.spawn;
}

/// The label of a `mark!` invocation, when it is a literal string.
pub(crate) fn mark_label(m: &syn::Macro) -> Option<String> {
    let args = m
        .parse_body_with(syn::punctuated::Punctuated::<syn::Expr, syn::Token![,]>::parse_terminated)
        .ok()?;
    match args.first()? {
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Str(s),
            ..
        }) => Some(s.value()),
        _ => None,
    }
}

/// Whether `m` is `ppd::mark!` (or `mark!`).
pub(crate) fn is_mark(m: &syn::Macro) -> bool {
    m.path.segments.last().is_some_and(|s| s.ident == "mark")
}

#[derive(Default)]
struct Collect {
    /// Per function name: its own effects and the names it calls.
    own: BTreeMap<String, (Hidden, BTreeSet<String>)>,
    eblocks: BTreeSet<String>,
    /// The function being read, and whether the enclosing item is under `#[eblocks]`.
    current: Vec<String>,
    defs: BTreeMap<String, Vec<std::rc::Rc<Def>>>,
    modules: BTreeSet<String>,
    file: String,
    /// The type of the `impl` being read.
    owner: Vec<String>,
    eblocks_scope: usize,
}

impl Collect {
    fn with_fn(&mut self, name: String, attrs: &[syn::Attribute], body: impl FnOnce(&mut Self)) {
        if has_attr(attrs, "eblock") || self.eblocks_scope > 0 {
            self.eblocks.insert(name.clone());
        }
        self.own.entry(name.clone()).or_default();
        self.current.push(name);
        body(self);
        self.current.pop();
    }

    fn define(&mut self, sig: &syn::Signature, block: &syn::Block, owner: Option<String>) {
        let mut has_self = false;
        let params = sig
            .inputs
            .iter()
            .map(|a| match a {
                syn::FnArg::Receiver(_) => {
                    has_self = true;
                    None
                }
                syn::FnArg::Typed(t) => match &*t.pat {
                    syn::Pat::Ident(i) if i.subpat.is_none() => Some(i.ident.to_string()),
                    _ => None,
                },
            })
            .collect();
        let name = sig.ident.to_string();
        self.defs
            .entry(name.clone())
            .or_default()
            .push(std::rc::Rc::new(Def {
                name,
                owner,
                params,
                has_self,
                block: block.clone(),
                file: self.file.clone(),
            }));
    }

    fn here(&mut self) -> Option<&mut (Hidden, BTreeSet<String>)> {
        let name = self.current.last()?.clone();
        self.own.get_mut(&name)
    }
}

impl<'ast> Visit<'ast> for Collect {
    fn visit_item_fn(&mut self, i: &'ast syn::ItemFn) {
        self.define(&i.sig, &i.block, None);
        self.with_fn(i.sig.ident.to_string(), &i.attrs, |c| {
            syn::visit::visit_item_fn(c, i)
        });
    }

    fn visit_impl_item_fn(&mut self, i: &'ast syn::ImplItemFn) {
        let owner = self.owner.last().cloned();
        self.define(&i.sig, &i.block, owner);
        self.with_fn(i.sig.ident.to_string(), &i.attrs, |c| {
            syn::visit::visit_impl_item_fn(c, i)
        });
    }

    fn visit_trait_item_fn(&mut self, i: &'ast syn::TraitItemFn) {
        self.with_fn(i.sig.ident.to_string(), &i.attrs, |c| {
            syn::visit::visit_trait_item_fn(c, i)
        });
    }

    fn visit_item_impl(&mut self, i: &'ast syn::ItemImpl) {
        let scoped = has_attr(&i.attrs, "eblocks");
        self.eblocks_scope += usize::from(scoped);
        let owner = match &*i.self_ty {
            syn::Type::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
            _ => None,
        };
        self.owner.push(owner.unwrap_or_default());
        syn::visit::visit_item_impl(self, i);
        self.owner.pop();
        self.eblocks_scope -= usize::from(scoped);
    }

    fn visit_item_mod(&mut self, i: &'ast syn::ItemMod) {
        self.modules.insert(i.ident.to_string());
        let scoped = has_attr(&i.attrs, "eblocks");
        self.eblocks_scope += usize::from(scoped);
        syn::visit::visit_item_mod(self, i);
        self.eblocks_scope -= usize::from(scoped);
    }

    fn visit_expr_method_call(&mut self, m: &'ast syn::ExprMethodCall) {
        let name = m.method.to_string();
        if let Some((h, callees)) = self.here() {
            if SENDS.contains(&name.as_str()) || RECVS.contains(&name.as_str()) {
                h.comm = true;
            }
            if name == "spawn" {
                h.spawn = true;
            }
            callees.insert(name);
        }
        syn::visit::visit_expr_method_call(self, m);
    }

    fn visit_expr_call(&mut self, c: &'ast syn::ExprCall) {
        if let syn::Expr::Path(p) = &*c.func
            && let Some(last) = p.path.segments.last()
        {
            let name = last.ident.to_string();
            if let Some((h, callees)) = self.here() {
                if name == "spawn" {
                    h.spawn = true;
                }
                callees.insert(name);
            }
        }
        syn::visit::visit_expr_call(self, c);
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        if is_mark(m) {
            let label = mark_label(m);
            if let Some((h, _)) = self.here() {
                match label {
                    Some(l) => {
                        h.marks.insert(l);
                    }
                    None => h.any_mark = true,
                }
            }
        } else if m.path.segments.last().is_some_and(|s| s.ident == "select") {
            if let Some((h, _)) = self.here() {
                h.comm = true;
            }
        } else if let Ok(args) = m.parse_body_with(
            syn::punctuated::Punctuated::<syn::Expr, syn::Token![,]>::parse_terminated,
        ) {
            for a in &args {
                self.visit_expr(a);
            }
        }
    }
}
