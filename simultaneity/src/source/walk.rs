//! The walk over a program's syntax that builds its DCFG (see the module above for what it
//! models).

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::visit::Visit;

use super::effects::{self, Functions, RECVS, SENDS, is_mark, mark_label};
use super::{Channel, File, Hidden, ProcessInfo, Program, Site, SourceError, Unknown, What};
use crate::dcfg::{Dcfg, Kind, NodeId};

/// Channel constructors: a `(sender, receiver)` pair.
const CONSTRUCTORS: &[&str] = &[
    "channel",
    "sync_channel",
    "named_channel",
    "named_sync_channel",
    "unbounded",
    "bounded",
    "named",
];

/// What a name is bound to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Bound {
    /// An end of a known channel.
    Chan(usize),
    /// The join handle of a process.
    Handle(usize),
    /// Anything else: a local that shadows what the name meant outside.
    Local,
}

type Env = HashMap<String, Bound>;

/// Whether `f` holds a `#[ppd::main]` function.
pub(crate) fn has_ppd_main(f: &File) -> bool {
    f.ast.items.iter().any(|i| match i {
        syn::Item::Fn(f) => is_ppd_main(&f.attrs),
        _ => false,
    })
}

fn is_ppd_main(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        let s: Vec<String> = a
            .path()
            .segments
            .iter()
            .map(|s| s.ident.to_string())
            .collect();
        s == ["ppd", "main"]
    })
}

/// The files of the modules `ast` (read from `path`) declares with `mod x;`.
pub(crate) fn module_files(path: &Path, ast: &syn::File) -> Vec<PathBuf> {
    let dir = match path.file_name().and_then(|n| n.to_str()) {
        Some("mod.rs" | "main.rs" | "lib.rs") | None => {
            path.parent().map(Path::to_owned).unwrap_or_default()
        }
        Some(_) => path.with_extension(""),
    };
    let mut out = Vec::new();
    for item in &ast.items {
        if let syn::Item::Mod(m) = item
            && m.content.is_none()
        {
            let name = m.ident.to_string();
            let flat = dir.join(format!("{name}.rs"));
            let nested = dir.join(&name).join("mod.rs");
            if flat.is_file() {
                out.push(flat);
            } else if nested.is_file() {
                out.push(nested);
            }
        }
    }
    out
}

/// Builds the program's graph.
pub(crate) fn build(files: &[File]) -> Result<Program, SourceError> {
    let fns = Functions::of(files);
    let mut mains = Vec::new();
    let mut plain = Vec::new();
    for f in files {
        for item in &f.ast.items {
            if let syn::Item::Fn(func) = item {
                if is_ppd_main(&func.attrs) {
                    mains.push((f, func));
                } else if func.sig.ident == "main" {
                    plain.push((f, func));
                }
            }
        }
    }
    if mains.len() > 1 {
        let at: Vec<String> = mains
            .iter()
            .map(|(f, func)| format!("{}:{}", f.name, func.sig.ident.span().start().line))
            .collect();
        return Err(SourceError::SeveralMains(at.join(", ")));
    }
    let Some((file, main)) = mains.pop().or_else(|| plain.pop()) else {
        let names: Vec<&str> = files.iter().map(|f| f.name.as_str()).collect();
        return Err(SourceError::NoMain(names.join(", ")));
    };
    let mut w = W {
        g: Dcfg::new(),
        what: Vec::new(),
        sites: Vec::new(),
        processes: Vec::new(),
        hidden: Vec::new(),
        channels: Vec::new(),
        unknowns: Vec::new(),
        taint_all: false,
        fns,
        file: file.name.clone(),
        inlining: Vec::new(),
        endings: HashMap::new(),
        closes: BTreeMap::new(),
        made_in_loop: Vec::new(),
        plain_sends: Default::default(),
        depth: 0,
        too_deep: None,
    };
    let p = w.new_process(Some("main".to_owned()), main.span(), false);
    let mut cx = Ctx::new(p, w.g.processes[p].stop, Some("main".to_owned()), false);
    let mut cur = vec![w.g.processes[p].start];
    w.block(&mut cx, &mut cur, &Env::new(), &main.block);
    w.flow_all(&cur, cx.stop);
    if let Some(site) = w.too_deep {
        return Err(SourceError::TooDeep {
            file: site.file,
            line: site.line,
            limit: super::DEPTH_LIMIT,
        });
    }
    w.finish();
    Ok(Program {
        graph: w.g,
        what: w.what,
        sites: w.sites,
        processes: w.processes,
        hidden: w.hidden,
        channels: w.channels,
        unknowns: w.unknowns,
        closes: w.closes,
        files: files.iter().map(|f| f.name.clone()).collect(),
    })
}

/// A loop or labelled block that `break` and `continue` leave.
#[derive(Debug)]
struct LoopCtx {
    label: Option<String>,
    /// The loop's head; `None` for a labelled block.
    head: Option<NodeId>,
    breaks: Vec<NodeId>,
}

/// Where the walk is in one process.
#[derive(Debug)]
struct Ctx {
    p: usize,
    stop: NodeId,
    name: Option<String>,
    loops: Vec<LoopCtx>,
    /// How many branches, loops or closures the walk is inside.
    conditional: usize,
    in_loop: usize,
    /// Spawns so far, while they are countable (straight-line code only).
    spawned: Option<usize>,
    replicated: bool,
    /// For each call being followed, innermost last: the nodes its `return`s leave.
    returns: Vec<Vec<NodeId>>,
    /// The type whose method is being followed, for `self.m()` and `Self::m()`.
    owner: Option<String>,
}

impl Ctx {
    fn new(p: usize, stop: NodeId, name: Option<String>, replicated: bool) -> Ctx {
        Ctx {
            p,
            stop,
            name,
            loops: Vec::new(),
            conditional: 0,
            in_loop: 0,
            spawned: Some(0),
            replicated,
            returns: Vec::new(),
            owner: None,
        }
    }
}

/// The name a spawn gives its process.
enum Naming {
    /// No `.name(..)`: ppd's default.
    Default,
    /// A literal.
    Literal(String),
    /// A name computed at run time.
    Computed,
}

struct W {
    g: Dcfg,
    what: Vec<What>,
    sites: Vec<Site>,
    processes: Vec<ProcessInfo>,
    hidden: Vec<Hidden>,
    channels: Vec<Channel>,
    unknowns: Vec<Unknown>,
    /// Some send the analysis cannot place may feed any receive.
    taint_all: bool,
    fns: Functions,
    file: String,
    /// The functions whose calls are being followed, innermost last.
    inlining: Vec<String>,
    /// Each spawned process's end node, which its join receives from.
    endings: HashMap<usize, NodeId>,
    /// The `exit F` node of each `enter F` node.
    closes: BTreeMap<NodeId, NodeId>,
    /// Per channel, whether it was made in a loop or a replicated process (several channels
    /// at run time).
    made_in_loop: Vec<bool>,
    /// The sends that are `.send(..)`: a message, unless the channel is disconnected.
    plain_sends: std::collections::HashSet<NodeId>,
    /// How deep the walk is in expressions (calls followed included).
    depth: usize,
    /// Where the walk passed the depth limit, if it did.
    too_deep: Option<Site>,
}

/// How deep the walk follows calls into calls.
const INLINE_DEPTH: usize = 8;

fn peel(e: &syn::Expr) -> &syn::Expr {
    match e {
        syn::Expr::Paren(p) => peel(&p.expr),
        syn::Expr::Group(g) => peel(&g.expr),
        syn::Expr::Reference(r) => peel(&r.expr),
        _ => e,
    }
}

fn ident_of(e: &syn::Expr) -> Option<String> {
    match peel(e) {
        syn::Expr::Path(p) if p.qself.is_none() => p.path.get_ident().map(|i| i.to_string()),
        _ => None,
    }
}

fn last_segment(e: &syn::Expr) -> Option<String> {
    match peel(e) {
        syn::Expr::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
        _ => None,
    }
}

/// The method call `e` is, if it is a receive.
fn recv_call(e: &syn::Expr) -> Option<&syn::ExprMethodCall> {
    match peel(e) {
        syn::Expr::MethodCall(m) if RECVS.contains(&m.method.to_string().as_str()) => Some(m),
        _ => None,
    }
}

/// Whether `p` is `Ok(..)` or `Some(..)`: a pattern only a received message matches.
fn is_success_pattern(p: &syn::Pat) -> bool {
    match p {
        syn::Pat::TupleStruct(t) => t
            .path
            .segments
            .last()
            .is_some_and(|s| s.ident == "Ok" || s.ident == "Some"),
        _ => false,
    }
}

/// The string literal `e` spells (`"x"`, `"x".into()`, `"x".to_string()`, `String::from("x")`).
fn literal_string(e: &syn::Expr) -> Option<String> {
    match peel(e) {
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Str(s),
            ..
        }) => Some(s.value()),
        syn::Expr::MethodCall(m)
            if ["into", "to_string", "to_owned"].contains(&m.method.to_string().as_str()) =>
        {
            literal_string(&m.receiver)
        }
        syn::Expr::Call(c)
            if c.args.len() == 1 && last_segment(&c.func).as_deref() == Some("from") =>
        {
            literal_string(&c.args[0])
        }
        _ => None,
    }
}

/// The name a builder chain gives, looking for `.name(..)` in it.
fn naming(receiver: &syn::Expr) -> Naming {
    let mut e = peel(receiver);
    loop {
        match e {
            syn::Expr::MethodCall(m) if m.method == "name" && m.args.len() == 1 => {
                return match literal_string(&m.args[0]) {
                    Some(n) => Naming::Literal(n),
                    None => Naming::Computed,
                };
            }
            syn::Expr::MethodCall(m) => e = peel(&m.receiver),
            _ => return Naming::Default,
        }
    }
}

fn pat_idents(p: &syn::Pat, out: &mut Vec<String>) {
    match p {
        syn::Pat::Ident(i) => {
            out.push(i.ident.to_string());
            if let Some((_, sub)) = &i.subpat {
                pat_idents(sub, out);
            }
        }
        syn::Pat::Tuple(t) => t.elems.iter().for_each(|e| pat_idents(e, out)),
        syn::Pat::TupleStruct(t) => t.elems.iter().for_each(|e| pat_idents(e, out)),
        syn::Pat::Struct(s) => s.fields.iter().for_each(|f| pat_idents(&f.pat, out)),
        syn::Pat::Type(t) => pat_idents(&t.pat, out),
        syn::Pat::Reference(r) => pat_idents(&r.pat, out),
        syn::Pat::Slice(s) => s.elems.iter().for_each(|e| pat_idents(e, out)),
        syn::Pat::Or(o) => o.cases.iter().for_each(|e| pat_idents(e, out)),
        syn::Pat::Paren(p) => pat_idents(&p.pat, out),
        _ => {}
    }
}

fn simple_ident(p: &syn::Pat) -> Option<String> {
    match p {
        syn::Pat::Ident(i) if i.subpat.is_none() => Some(i.ident.to_string()),
        syn::Pat::Type(t) => simple_ident(&t.pat),
        _ => None,
    }
}

impl W {
    fn site(&self, span: Span) -> Site {
        Site {
            file: self.file.clone(),
            line: span.start().line,
        }
    }

    fn new_process(&mut self, name: Option<String>, span: Span, replicated: bool) -> usize {
        let label = name.clone().unwrap_or_else(|| "(unnamed)".to_owned());
        let p = self.g.process(&label);
        let start = self.site(span);
        let stop = Site {
            file: self.file.clone(),
            line: span.end().line,
        };
        self.what.extend([What::Start, What::Stop]);
        self.sites.extend([start.clone(), stop]);
        self.processes.push(ProcessInfo {
            name,
            site: start,
            replicated,
            unmodelled: false,
        });
        self.hidden.push(Hidden::default());
        p
    }

    fn unknown(&mut self, p: Option<usize>, construct: String, span: Span) {
        let site = self.site(span);
        self.unknowns.push(Unknown {
            process: p,
            construct,
            site,
        });
    }

    fn flow_all(&mut self, from: &[NodeId], to: NodeId) {
        for &f in from {
            // Both ends are in the process being walked, so this cannot fail.
            let _ = self.g.flow(f, to);
        }
    }

    /// Adds a node after `cur` and makes it the current one.
    fn node(&mut self, cx: &Ctx, cur: &mut Vec<NodeId>, what: What, span: Span) -> NodeId {
        let kind = match what {
            What::Send(_) | What::Unmodelled | What::Spawn(_) | What::Ending => Kind::Send,
            What::Recv(_) | What::Started | What::Joined(_) => Kind::Recv,
            _ => Kind::Stmt,
        };
        let n = self.g.node(cx.p, kind, "");
        self.what.push(what);
        self.sites.push(self.site(span));
        self.flow_all(cur, n);
        cur.clear();
        cur.push(n);
        n
    }

    fn block(&mut self, cx: &mut Ctx, cur: &mut Vec<NodeId>, env: &Env, b: &syn::Block) {
        let mut env = env.clone();
        for s in &b.stmts {
            self.stmt(cx, cur, &mut env, s);
        }
    }

    fn stmt(&mut self, cx: &mut Ctx, cur: &mut Vec<NodeId>, env: &mut Env, s: &syn::Stmt) {
        match s {
            syn::Stmt::Local(l) => self.local(cx, cur, env, l),
            syn::Stmt::Item(_) => {}
            syn::Stmt::Expr(e, _) => {
                self.node(cx, cur, What::Stmt, e.span());
                self.expr(cx, cur, env, e);
            }
            syn::Stmt::Macro(m) => {
                self.mac(cx, cur, env, &m.mac);
            }
        }
    }

    fn local(&mut self, cx: &mut Ctx, cur: &mut Vec<NodeId>, env: &mut Env, l: &syn::Local) {
        self.node(cx, cur, What::Stmt, l.span());
        let mut names = Vec::new();
        pat_idents(&l.pat, &mut names);
        let Some(init) = &l.init else {
            for n in &names {
                env.insert(n.clone(), Bound::Local);
            }
            return;
        };
        // `let (tx, rx) = channel()`.
        if let syn::Pat::Tuple(t) = strip_type(&l.pat)
            && t.elems.len() == 2
            && let syn::Expr::Call(c) = peel(&init.expr)
            && last_segment(&c.func).is_some_and(|f| CONSTRUCTORS.contains(&f.as_str()))
        {
            let literal = c.args.first().and_then(literal_string);
            let ends: Vec<Option<String>> = t.elems.iter().map(simple_ident).collect();
            let chan = self.channels.len();
            let names = match &literal {
                Some(n) => vec![n.clone()],
                None => ends.iter().flatten().cloned().collect(),
            };
            self.channels.push(Channel {
                names,
                site: self.site(l.span()),
                escapes: false,
            });
            self.made_in_loop.push(cx.in_loop > 0 || cx.replicated);
            for a in c.args.iter() {
                self.expr(cx, cur, env, a);
            }
            for n in &names_of(&l.pat) {
                env.insert(n.clone(), Bound::Local);
            }
            for e in ends.into_iter().flatten() {
                env.insert(e, Bound::Chan(chan));
            }
            return;
        }
        // `let b = a`, `let b = a.clone()`, `let b = Sender::clone(&a)`.
        if let Some(name) = simple_ident(&l.pat)
            && init.diverge.is_none()
            && let Some(end) = self.alias(env, &init.expr)
        {
            env.insert(name, end);
            return;
        }
        let fail = self.maybe_recv(cx, cur, env, &init.expr);
        if let Some((_, diverge)) = &init.diverge {
            let mut other = fail.clone().unwrap_or_else(|| cur.clone());
            if fail.is_none() || !is_success_pattern(&l.pat) {
                other.extend(cur.iter().copied());
            }
            self.expr(cx, &mut other, env, diverge);
            // A diverging `else` leaves nothing; whatever it leaves joins the flow.
            cur.extend(other);
        } else if let Some(fail) = fail {
            cur.extend(fail);
        }
        for n in &names {
            env.insert(n.clone(), Bound::Local);
        }
        // `let h = spawn(..)`: `h.join()` returns after the process ended.
        if let Some(name) = simple_ident(&l.pat)
            && is_spawn(&init.expr)
            && let [n] = cur.as_slice()
            && let What::Spawn(child) = self.what[*n]
        {
            env.insert(name, Bound::Handle(child));
        }
    }

    /// The end `e` denotes, when it is a known end or a clone of one.
    fn alias(&self, env: &Env, e: &syn::Expr) -> Option<Bound> {
        if let Some(i) = ident_of(e) {
            return env.get(&i).copied().filter(|b| *b != Bound::Local);
        }
        match peel(e) {
            syn::Expr::MethodCall(m) if m.method == "clone" && m.args.is_empty() => {
                self.alias(env, &m.receiver)
            }
            syn::Expr::Call(c)
                if c.args.len() == 1 && last_segment(&c.func).as_deref() == Some("clone") =>
            {
                self.alias(env, &c.args[0])
            }
            _ => None,
        }
    }

    /// Walks `e`; when it is a receive, returns the nodes its no-message branch leaves.
    fn maybe_recv(
        &mut self,
        cx: &mut Ctx,
        cur: &mut Vec<NodeId>,
        env: &Env,
        e: &syn::Expr,
    ) -> Option<Vec<NodeId>> {
        match recv_call(e) {
            Some(m) => Some(self.recv(cx, cur, env, m)),
            None => {
                self.expr(cx, cur, env, e);
                None
            }
        }
    }

    /// A receive: a receive node and, beside it, a no-message node, whose nodes it returns.
    fn recv(
        &mut self,
        cx: &mut Ctx,
        cur: &mut Vec<NodeId>,
        env: &Env,
        m: &syn::ExprMethodCall,
    ) -> Vec<NodeId> {
        let chan = self.end_of(env, &m.receiver);
        if chan.is_none() {
            self.expr(cx, cur, env, &m.receiver);
            self.unknown(
                Some(cx.p),
                format!(
                    "`.{}` on `{}`, whose channel is not known",
                    m.method,
                    quote_expr(&m.receiver)
                ),
                m.span(),
            );
        }
        for a in &m.args {
            self.expr(cx, cur, env, a);
        }
        self.fork(cx, cur, chan, m.span())
    }

    fn fork(
        &mut self,
        cx: &Ctx,
        cur: &mut Vec<NodeId>,
        chan: Option<usize>,
        span: Span,
    ) -> Vec<NodeId> {
        let mut none = cur.clone();
        self.node(cx, &mut none, What::NoMessage, span);
        self.node(cx, cur, What::Recv(chan), span);
        none
    }

    fn end_of(&self, env: &Env, e: &syn::Expr) -> Option<usize> {
        match ident_of(e).and_then(|i| env.get(&i).copied()) {
            Some(Bound::Chan(c)) => Some(c),
            _ => None,
        }
    }

    fn escape(&mut self, cx: &Ctx, chan: usize, what: String, span: Span) {
        if !self.channels[chan].escapes {
            self.channels[chan].escapes = true;
        }
        self.unknown(Some(cx.p), what, span);
    }

    fn expr(&mut self, cx: &mut Ctx, cur: &mut Vec<NodeId>, env: &Env, e: &syn::Expr) {
        if self.depth >= super::DEPTH_LIMIT {
            if self.too_deep.is_none() {
                self.too_deep = Some(self.site(e.span()));
            }
            return;
        }
        self.depth += 1;
        self.expr_in(cx, cur, env, e);
        self.depth -= 1;
    }

    fn expr_in(&mut self, cx: &mut Ctx, cur: &mut Vec<NodeId>, env: &Env, e: &syn::Expr) {
        use syn::Expr as E;
        match e {
            E::Array(a) => a.elems.iter().for_each(|x| self.expr(cx, cur, env, x)),
            E::Tuple(a) => a.elems.iter().for_each(|x| self.expr(cx, cur, env, x)),
            E::Assign(a) => {
                self.expr(cx, cur, env, &a.right);
                self.expr(cx, cur, env, &a.left);
            }
            E::Async(a) => self.detached(cx, env, |d| d.visit_block(&a.block)),
            E::Closure(c) => {
                let mut inner = env.clone();
                for p in &c.inputs {
                    inner = shadowed(&inner, p);
                }
                self.detached(cx, &inner, |d| d.visit_expr(&c.body))
            }
            E::Await(a) => self.expr(cx, cur, env, &a.base),
            E::Binary(b) => {
                self.expr(cx, cur, env, &b.left);
                if matches!(b.op, syn::BinOp::And(_) | syn::BinOp::Or(_)) {
                    let skipped = cur.clone();
                    cx.conditional += 1;
                    self.expr(cx, cur, env, &b.right);
                    cx.conditional -= 1;
                    extend_unique(cur, &skipped);
                } else {
                    self.expr(cx, cur, env, &b.right);
                }
            }
            E::Block(b) => match &b.label {
                Some(l) => {
                    cx.loops.push(LoopCtx {
                        label: Some(l.name.ident.to_string()),
                        head: None,
                        breaks: Vec::new(),
                    });
                    self.block(cx, cur, env, &b.block);
                    let ctx = cx.loops.pop().expect("pushed above");
                    extend_unique(cur, &ctx.breaks);
                }
                None => self.block(cx, cur, env, &b.block),
            },
            E::Unsafe(b) => self.block(cx, cur, env, &b.block),
            E::TryBlock(b) => self.block(cx, cur, env, &b.block),
            E::Break(b) => {
                if let Some(x) = &b.expr {
                    self.expr(cx, cur, env, x);
                }
                let label = b.label.as_ref().map(|l| l.ident.to_string());
                let target = cx.loops.iter_mut().rev().find(|l| match &label {
                    Some(name) => l.label.as_deref() == Some(name),
                    None => l.head.is_some(),
                });
                if let Some(t) = target {
                    t.breaks.append(cur);
                }
                cur.clear();
            }
            E::Continue(c) => {
                let label = c.label.as_ref().map(|l| l.ident.to_string());
                let head = cx
                    .loops
                    .iter()
                    .rev()
                    .filter(|l| l.head.is_some())
                    .find(|l| label.is_none() || l.label == label)
                    .and_then(|l| l.head);
                if let Some(h) = head {
                    let from = std::mem::take(cur);
                    self.flow_all(&from, h);
                }
                cur.clear();
            }
            E::Return(r) => {
                if let Some(x) = &r.expr {
                    self.expr(cx, cur, env, x);
                }
                let from = std::mem::take(cur);
                self.ret(cx, from);
            }
            E::Try(t) => {
                if let Some(m) = recv_call(&t.expr) {
                    let fail = self.recv(cx, cur, env, m);
                    self.ret(cx, fail);
                } else {
                    self.expr(cx, cur, env, &t.expr);
                }
                let from = cur.clone();
                self.ret(cx, from);
            }
            E::Call(c) => self.call(cx, cur, env, c),
            E::MethodCall(m) => self.method_call(cx, cur, env, m),
            E::Cast(x) => self.expr(cx, cur, env, &x.expr),
            E::Field(x) => self.expr(cx, cur, env, &x.base),
            E::Group(x) => self.expr(cx, cur, env, &x.expr),
            E::Paren(x) => self.expr(cx, cur, env, &x.expr),
            E::Reference(x) => self.expr(cx, cur, env, &x.expr),
            E::Unary(x) => self.expr(cx, cur, env, &x.expr),
            E::Index(x) => {
                self.expr(cx, cur, env, &x.expr);
                self.expr(cx, cur, env, &x.index);
            }
            E::Let(x) => self.expr(cx, cur, env, &x.expr),
            E::Range(r) => {
                if let Some(s) = &r.start {
                    self.expr(cx, cur, env, s);
                }
                if let Some(s) = &r.end {
                    self.expr(cx, cur, env, s);
                }
            }
            E::Repeat(r) => self.expr(cx, cur, env, &r.expr),
            E::Struct(s) => {
                for f in &s.fields {
                    self.expr(cx, cur, env, &f.expr);
                }
                if let Some(r) = &s.rest {
                    self.expr(cx, cur, env, r);
                }
            }
            E::Yield(y) => {
                if let Some(x) = &y.expr {
                    self.expr(cx, cur, env, x);
                }
            }
            E::Macro(m) => self.mac(cx, cur, env, &m.mac),
            E::Path(p) => {
                self.fn_as_value(cx, env, p);
                if let Some(i) = p.path.get_ident()
                    && let Some(Bound::Chan(chan)) = env.get(&i.to_string()).copied()
                {
                    self.escape(
                        cx,
                        chan,
                        format!("channel end `{i}` used where the analysis cannot follow it"),
                        p.span(),
                    );
                }
            }
            E::If(i) => self.if_expr(cx, cur, env, i),
            E::Match(m) => {
                let mut start = cur.clone();
                if let Some(fail) = self.maybe_recv(cx, &mut start, env, &m.expr) {
                    extend_unique(&mut start, &fail);
                }
                let mut out = Vec::new();
                cx.conditional += 1;
                for arm in &m.arms {
                    let mut here = start.clone();
                    let env = &shadowed(env, &arm.pat);
                    if let Some((_, g)) = &arm.guard {
                        self.expr(cx, &mut here, env, g);
                    }
                    self.expr(cx, &mut here, env, &arm.body);
                    extend_unique(&mut out, &here);
                }
                cx.conditional -= 1;
                *cur = out;
            }
            E::Loop(l) => {
                let head = self.node(cx, cur, What::LoopHead, l.span());
                self.looped(cx, env, head, l.label.as_ref(), |w, cx, cur| {
                    w.block(cx, cur, env, &l.body)
                });
                *cur = self.pop_loop(cx);
            }
            E::While(wl) => {
                let head = self.node(cx, cur, What::LoopHead, wl.span());
                let mut exit = Vec::new();
                self.looped(cx, env, head, wl.label.as_ref(), |w, cx, cur| {
                    let leave = w.condition(cx, cur, env, &wl.cond);
                    exit = leave;
                    w.block(cx, cur, &cond_env(env, &wl.cond), &wl.body);
                });
                let mut out = self.pop_loop(cx);
                extend_unique(&mut out, &exit);
                *cur = out;
            }
            E::ForLoop(f) => {
                let over = self.iterated_receiver(env, &f.expr);
                if over.is_none() {
                    self.expr(cx, cur, env, &f.expr);
                }
                let head = self.node(cx, cur, What::LoopHead, f.span());
                let mut exit = Vec::new();
                self.looped(cx, env, head, f.label.as_ref(), |w, cx, cur| {
                    match over {
                        Some(chan) => exit = w.fork(cx, cur, Some(chan), f.expr.span()),
                        None => exit = cur.clone(),
                    }
                    w.block(cx, cur, &shadowed(env, &f.pat), &f.body);
                });
                let mut out = self.pop_loop(cx);
                extend_unique(&mut out, &exit);
                *cur = out;
            }
            _ => {}
        }
    }

    /// A `return` (or `?`) from the nodes `from`: to the end of the call being followed, else
    /// to the process's end.
    fn ret(&mut self, cx: &mut Ctx, from: Vec<NodeId>) {
        match cx.returns.last_mut() {
            Some(frame) => extend_unique(frame, &from),
            None => self.flow_all(&from, cx.stop),
        }
    }

    /// The function a call of `func` runs, when the program defines exactly one it can be.
    fn callee(&self, cx: &Ctx, func: &syn::Expr) -> Option<std::rc::Rc<effects::Def>> {
        let syn::Expr::Path(p) = peel(func) else {
            return None;
        };
        if p.qself.is_some() {
            return None;
        }
        let segs: Vec<String> = p
            .path
            .segments
            .iter()
            .map(|s| s.ident.to_string())
            .collect();
        let (name, quals) = segs.split_last()?;
        match quals.last().map(String::as_str) {
            None | Some("crate" | "self" | "super") => self.fns.def(None, name),
            Some("Self") => self.fns.def(Some(cx.owner.as_deref()?), name),
            Some(q) if self.fns.is_type(q) => self.fns.def(Some(q), name),
            Some(q) if self.fns.modules.contains(q) => self.fns.def(None, name),
            Some(_) => None,
        }
    }

    /// Follows a call into `def`'s body: `args` (with `receiver` first for a method call)
    /// are bound to its parameters when they are channel ends, and walked otherwise.
    fn inline(
        &mut self,
        cx: &mut Ctx,
        cur: &mut Vec<NodeId>,
        env: &Env,
        def: &effects::Def,
        args: &[&syn::Expr],
        span: Span,
    ) {
        let mut inner = Env::new();
        let params: &[Option<String>] = if def.has_self && args.len() + 1 == def.params.len() {
            &def.params[1..]
        } else {
            &def.params
        };
        for (i, a) in args.iter().enumerate() {
            match (params.get(i).cloned().flatten(), self.alias(env, a)) {
                (Some(name), Some(end)) => {
                    inner.insert(name, end);
                }
                (name, _) => {
                    self.expr(cx, cur, env, a);
                    if let Some(name) = name {
                        inner.insert(name, Bound::Local);
                    }
                }
            }
        }
        let eblock = self.fns.eblocks.contains(&def.name);
        let enter = eblock.then(|| self.node(cx, cur, What::Enter(def.name.clone()), span));
        let file = std::mem::replace(&mut self.file, def.file.clone());
        let loops = std::mem::take(&mut cx.loops);
        let owner = std::mem::replace(&mut cx.owner, def.owner.clone());
        self.inlining.push(def.name.clone());
        cx.returns.push(Vec::new());
        self.block(cx, cur, &inner, &def.block);
        let returned = cx.returns.pop().unwrap_or_default();
        extend_unique(cur, &returned);
        self.inlining.pop();
        cx.owner = owner;
        cx.loops = loops;
        self.file = file;
        if let Some(enter) = enter {
            let exit = self.node(cx, cur, What::Exit(def.name.clone()), span);
            self.closes.insert(enter, exit);
        }
    }

    /// Whether a call of `def` is to be followed: it does something the graph needs, and is
    /// not already being followed (recursion) nor too deep.
    fn follows(&self, def: &effects::Def) -> bool {
        self.fns.effects_of(&def.name).is_some()
            && !self.inlining.contains(&def.name)
            && self.inlining.len() < INLINE_DEPTH
    }

    /// Walks a loop body from `head`, its end flowing back to `head`; leaves the loop's
    /// context on the stack for [`W::pop_loop`].
    fn looped(
        &mut self,
        cx: &mut Ctx,
        _env: &Env,
        head: NodeId,
        label: Option<&syn::Label>,
        body: impl FnOnce(&mut W, &mut Ctx, &mut Vec<NodeId>),
    ) {
        cx.loops.push(LoopCtx {
            label: label.map(|l| l.name.ident.to_string()),
            head: Some(head),
            breaks: Vec::new(),
        });
        cx.in_loop += 1;
        cx.conditional += 1;
        let mut cur = vec![head];
        body(self, cx, &mut cur);
        self.flow_all(&cur, head);
        cx.in_loop -= 1;
        cx.conditional -= 1;
    }

    fn pop_loop(&mut self, cx: &mut Ctx) -> Vec<NodeId> {
        cx.loops.pop().map(|l| l.breaks).unwrap_or_default()
    }

    /// Walks an `if`/`while` condition; `cur` becomes where the condition holds, and the
    /// nodes where it fails are returned.
    fn condition(
        &mut self,
        cx: &mut Ctx,
        cur: &mut Vec<NodeId>,
        env: &Env,
        cond: &syn::Expr,
    ) -> Vec<NodeId> {
        if let syn::Expr::Let(l) = peel(cond)
            && let Some(m) = recv_call(&l.expr)
        {
            let fail = self.recv(cx, cur, env, m);
            if is_success_pattern(&l.pat) {
                return fail;
            }
            extend_unique(cur, &fail);
            return cur.clone();
        }
        self.expr(cx, cur, env, cond);
        cur.clone()
    }

    fn if_expr(&mut self, cx: &mut Ctx, cur: &mut Vec<NodeId>, env: &Env, i: &syn::ExprIf) {
        let mut other = self.condition(cx, cur, env, &i.cond);
        cx.conditional += 1;
        self.block(cx, cur, &cond_env(env, &i.cond), &i.then_branch);
        if let Some((_, e)) = &i.else_branch {
            self.expr(cx, &mut other, env, e);
        }
        cx.conditional -= 1;
        extend_unique(cur, &other);
    }

    /// The channel a `for` loop receives from: `rx`, `&rx`, `rx.iter()`, `rx.try_iter()`,
    /// `rx.into_iter()`.
    fn iterated_receiver(&self, env: &Env, e: &syn::Expr) -> Option<usize> {
        match peel(e) {
            syn::Expr::MethodCall(m)
                if ["iter", "try_iter", "into_iter"].contains(&m.method.to_string().as_str())
                    && m.args.is_empty() =>
            {
                self.end_of(env, &m.receiver)
            }
            other => self.end_of(env, other),
        }
    }

    fn call(&mut self, cx: &mut Ctx, cur: &mut Vec<NodeId>, env: &Env, c: &syn::ExprCall) {
        let name = last_segment(&c.func).unwrap_or_default();
        if name == "spawn" {
            self.spawn(cx, cur, env, c.args.first(), Naming::Default, c.span());
            return;
        }
        if ["farm", "divide_and_conquer", "spawn_blocking"].contains(&name.as_str()) {
            // ppd::task's virtual machines start processes of their own, and talk to them
            // over channels of their own from the calling process.
            self.hidden[cx.p].spawn = true;
            self.hidden[cx.p].comm = true;
            cx.spawned = None;
        }
        if name == "drop" && c.args.len() == 1 && self.end_of(env, &c.args[0]).is_some() {
            return;
        }
        if name == "scope"
            && let Some(syn::Expr::Closure(cl)) = c.args.first().map(peel)
        {
            self.expr(cx, cur, env, &cl.body);
            return;
        }
        if let Some(def) = self.callee(cx, &c.func)
            && self.follows(&def)
        {
            let args: Vec<&syn::Expr> = c.args.iter().collect();
            self.inline(cx, cur, env, &def, &args, c.span());
            return;
        }
        for a in &c.args {
            self.expr(cx, cur, env, a);
        }
        self.called(cx, cur, &name, c.span());
    }

    /// After a call of `name`: e-block entry and exit, or a call not followed.
    fn called(&mut self, cx: &mut Ctx, cur: &mut Vec<NodeId>, name: &str, span: Span) {
        let eblock = self.fns.eblocks.contains(name);
        let effects = self.fns.effects_of(name).cloned();
        let enter = eblock.then(|| self.node(cx, cur, What::Enter(name.to_owned()), span));
        if let Some(h) = effects {
            self.node(cx, cur, What::Opaque(name.to_owned()), span);
            self.hide(cx, &h, &format!("call of `{name}`"), span);
        }
        if let Some(enter) = enter {
            let exit = self.node(cx, cur, What::Exit(name.to_owned()), span);
            self.closes.insert(enter, exit);
        }
    }

    /// A function of the program named as a value (`.map(f)`, `spawn(f)`): it may run
    /// anywhere, so what it does is hidden.
    fn fn_as_value(&mut self, cx: &mut Ctx, env: &Env, p: &syn::ExprPath) {
        let Some(name) = p.path.segments.last().map(|s| s.ident.to_string()) else {
            return;
        };
        if p.path.segments.len() == 1 && env.contains_key(&name) {
            // A local of that name, not the function.
            return;
        }
        let mut h = self.fns.effects_of(&name).cloned().unwrap_or_default();
        if self.fns.eblocks.contains(&name) {
            h.enters.insert(name.clone());
        }
        if !effects::is_empty(&h) {
            self.hide(cx, &h, &format!("`{name}` taken as a value"), p.span());
        }
    }

    /// Records that process `cx.p` may do `h` where the graph does not show it.
    fn hide(&mut self, cx: &mut Ctx, h: &Hidden, what: &str, span: Span) {
        effects::merge(&mut self.hidden[cx.p], h);
        if h.spawn {
            // Spawns the graph does not count: later default names are not known.
            cx.spawned = None;
        }
        let mut does = Vec::new();
        if h.comm {
            does.push("communicates".to_owned());
            self.taint_all = true;
        }
        if h.spawn {
            does.push("spawns".to_owned());
        }
        if !h.marks.is_empty() || h.any_mark {
            does.push("marks".to_owned());
        }
        if !h.enters.is_empty() {
            does.push("enters e-blocks".to_owned());
        }
        self.unknown(
            Some(cx.p),
            format!("{what}, which {}, is not followed", does.join(", ")),
            span,
        );
    }

    fn method_call(
        &mut self,
        cx: &mut Ctx,
        cur: &mut Vec<NodeId>,
        env: &Env,
        m: &syn::ExprMethodCall,
    ) {
        let method = m.method.to_string();
        if ["unwrap", "expect"].contains(&method.as_str())
            && let Some(r) = recv_call(&m.receiver)
        {
            let fail = self.recv(cx, cur, env, r);
            // A receive that took no message panics here: the process ends.
            self.flow_all(&fail, cx.stop);
            for a in &m.args {
                self.expr(cx, cur, env, a);
            }
            return;
        }
        if RECVS.contains(&method.as_str()) {
            let fail = self.recv(cx, cur, env, m);
            extend_unique(cur, &fail);
            return;
        }
        if SENDS.contains(&method.as_str()) {
            let chan = self.end_of(env, &m.receiver);
            if chan.is_none() {
                self.expr(cx, cur, env, &m.receiver);
                self.unknown(
                    Some(cx.p),
                    format!(
                        "`.{method}` on `{}`, whose channel is not known",
                        quote_expr(&m.receiver)
                    ),
                    m.span(),
                );
                self.taint_all = true;
            }
            for a in &m.args {
                self.expr(cx, cur, env, a);
            }
            let n = self.node(cx, cur, What::Send(chan), m.span());
            if method == "send" {
                self.plain_sends.insert(n);
            }
            return;
        }
        if method == "join"
            && m.args.is_empty()
            && let Some(i) = ident_of(&m.receiver)
            && let Some(Bound::Handle(child)) = env.get(&i).copied()
        {
            let joined = self.node(cx, cur, What::Joined(child), m.span());
            if let Some(&ending) = self.endings.get(&child) {
                // Both are in the graph, in two processes: this cannot fail.
                let _ = self.g.message(ending, joined);
            }
            return;
        }
        if method == "spawn" {
            let naming = naming(&m.receiver);
            self.expr(cx, cur, env, &m.receiver);
            self.spawn(cx, cur, env, m.args.first(), naming, m.span());
            return;
        }
        if ident_of(&m.receiver).as_deref() == Some("self")
            && let Some(owner) = cx.owner.clone()
            && let Some(def) = self.fns.def(Some(&owner), &method)
            && def.has_self
            && self.follows(&def)
        {
            let args: Vec<&syn::Expr> = m.args.iter().collect();
            self.inline(cx, cur, env, &def, &args, m.span());
            return;
        }
        if let Some(chan) = self.end_of(env, &m.receiver) {
            // Methods of an end that neither communicate nor hand the end on.
            if method == "clone" || method.contains("iter") {
                self.escape(
                    cx,
                    chan,
                    format!(
                        "`{}.{method}()` used where the analysis cannot follow it",
                        quote_expr(&m.receiver)
                    ),
                    m.span(),
                );
            }
        } else {
            self.expr(cx, cur, env, &m.receiver);
        }
        for a in &m.args {
            self.expr(cx, cur, env, a);
        }
        self.called(cx, cur, &method, m.span());
    }

    fn spawn(
        &mut self,
        cx: &mut Ctx,
        cur: &mut Vec<NodeId>,
        env: &Env,
        arg: Option<&syn::Expr>,
        naming: Naming,
        span: Span,
    ) {
        let counted = cx.spawned.map(|k| k + 1);
        cx.spawned = if cx.conditional > 0 { None } else { counted };
        let Some(syn::Expr::Closure(closure)) = arg.map(peel) else {
            let what = arg.map(quote_expr).unwrap_or_default();
            if let Some(f) = arg.and_then(last_segment)
                && let Some(h) = self.fns.effects_of(&f).cloned()
            {
                self.hide(cx, &h, &format!("spawn of `{what}`"), span);
            }
            self.hidden[cx.p].spawn = true;
            self.unknown(
                Some(cx.p),
                format!("spawn of `{what}`, not a closure, is not followed"),
                span,
            );
            return;
        };
        let replicated = cx.replicated || cx.in_loop > 0;
        let name = match naming {
            Naming::Literal(n) => Some(n),
            Naming::Computed => None,
            Naming::Default => match (&cx.name, counted) {
                (Some(parent), Some(k)) if cx.conditional == 0 && !replicated => {
                    Some(format!("{parent}.{k}"))
                }
                _ => None,
            },
        };
        // The child's index is the next process's.
        let child = self.g.processes.len();
        let spawn = self.node(cx, cur, What::Spawn(child), span);
        self.spawn_body(env, closure, name, replicated, Some(spawn));
    }

    /// A spawned closure's body as a new process; returns it.
    fn spawn_body(
        &mut self,
        env: &Env,
        closure: &syn::ExprClosure,
        name: Option<String>,
        replicated: bool,
        spawned_by: Option<NodeId>,
    ) -> usize {
        let p = self.new_process(name.clone(), closure.span(), replicated);
        if name.is_none() {
            self.unknown(
                Some(p),
                "a process whose name is not known".to_owned(),
                closure.span(),
            );
        }
        let stop = self.g.processes[p].stop;
        let mut cx = Ctx::new(p, stop, name, replicated);
        // Its end, which a join waits for: every way out of the body goes through it.
        let ending = self.node(&cx, &mut Vec::new(), What::Ending, closure.body.span());
        self.sites[ending].line = closure.body.span().end().line;
        let _ = self.g.flow(ending, stop);
        self.endings.insert(p, ending);
        cx.stop = ending;
        let mut cur = vec![self.g.processes[p].start];
        if let Some(spawn) = spawned_by {
            let started = self.node(&cx, &mut cur, What::Started, closure.span());
            let _ = self.g.message(spawn, started);
        }
        self.expr(&mut cx, &mut cur, env, &closure.body);
        self.flow_all(&cur, ending);
        // A panic may end the process after any node (and ppd logs it as its last event):
        // the end, which joins wait for, is reached from everywhere, so no node dominates it
        // and no guarantee claims a node ran because the process ended.
        for n in 0..self.g.nodes.len() {
            if self.g.nodes[n].process == p && n != ending && n != stop {
                let _ = self.g.flow(n, ending);
            }
        }
        p
    }

    fn mac(&mut self, cx: &mut Ctx, cur: &mut Vec<NodeId>, env: &Env, m: &syn::Macro) {
        if is_mark(m) {
            let label = mark_label(m);
            if label.is_none() {
                self.unknown(
                    Some(cx.p),
                    "a mark whose label is not a literal".to_owned(),
                    m.span(),
                );
            }
            self.node(cx, cur, What::Mark(label), m.span());
            return;
        }
        if m.path.segments.last().is_some_and(|s| s.ident == "select") {
            self.unknown(
                Some(cx.p),
                "`select!`, whose operations are not followed".to_owned(),
                m.span(),
            );
            self.taint_all = true;
            self.hidden[cx.p].comm = true;
            return;
        }
        match m.parse_body_with(
            syn::punctuated::Punctuated::<syn::Expr, syn::Token![,]>::parse_terminated,
        ) {
            Ok(args) => {
                for a in &args {
                    self.expr(cx, cur, env, a);
                }
            }
            Err(_) => {
                let text = m.tokens.to_string();
                if SENDS.iter().chain(RECVS).any(|s| text.contains(s)) {
                    self.unknown(
                        Some(cx.p),
                        format!(
                            "`{}!`, whose arguments are not expressions, may communicate",
                            quote_path(&m.path)
                        ),
                        m.span(),
                    );
                    self.taint_all = true;
                    self.hidden[cx.p].comm = true;
                }
            }
        }
    }

    /// Walks a closure or `async` block that is not a spawned body: it may run any number of
    /// times, at times the graph cannot place, so what it does is recorded as hidden.
    fn detached(&mut self, cx: &mut Ctx, env: &Env, f: impl FnOnce(&mut Detached<'_>)) {
        let mut d = Detached {
            w: self,
            p: cx.p,
            env: env.clone(),
            spawned: false,
        };
        f(&mut d);
        if d.spawned {
            // Spawns at times the graph cannot count: later default names are not known.
            cx.spawned = None;
        }
    }

    /// The send–receive pairs no run can match (§2): on a channel one process sends on with
    /// `.send` and one other process receives from (neither replicated, the channel made
    /// once and not escaping, no send the graph cannot place), messages arrive in the order
    /// they were sent, so the message of send `S` cannot reach receive `R` when `#S`, the
    /// fewest sends on the channel before `S` on any path, exceeds `#R`, the most receives
    /// from it before `R` on any path.
    fn infeasible_pairs(&self, sends: &[NodeId]) -> std::collections::HashSet<(NodeId, NodeId)> {
        let mut out = std::collections::HashSet::new();
        if self.taint_all {
            return out;
        }
        let n = self.g.nodes.len();
        for c in 0..self.channels.len() {
            let ss: Vec<NodeId> = sends
                .iter()
                .copied()
                .filter(|&s| self.what[s] == What::Send(Some(c)))
                .collect();
            let rs: Vec<NodeId> = (0..n)
                .filter(|&r| self.what[r] == What::Recv(Some(c)))
                .collect();
            let (Some(&s0), Some(&r0)) = (ss.first(), rs.first()) else {
                continue;
            };
            let (ps, pr) = (self.g.nodes[s0].process, self.g.nodes[r0].process);
            let one = |v: &[NodeId], p: usize| v.iter().all(|&x| self.g.nodes[x].process == p);
            if ps == pr
                || !one(&ss, ps)
                || !one(&rs, pr)
                || self.processes[ps].replicated
                || self.processes[pr].replicated
                || self.channels[c].escapes
                || self.made_in_loop[c]
                || !ss.iter().all(|s| self.plain_sends.contains(s))
            {
                continue;
            }
            let fewest = self.fewest_before(ps, &ss);
            let most = self.most_before(pr, &rs);
            for &s in &ss {
                for &r in &rs {
                    if let (Some(k), Some(Some(m))) = (fewest[s], most.get(&r))
                        && k > *m
                    {
                        out.insert((s, r));
                    }
                }
            }
        }
        out
    }

    /// For each node of process `p`, the fewest nodes of `counted` strictly before it on a
    /// path from the start (`None`: unreachable), by a 0-1 breadth-first search.
    fn fewest_before(&self, p: usize, counted: &[NodeId]) -> Vec<Option<usize>> {
        let n = self.g.nodes.len();
        let mut best: Vec<Option<usize>> = vec![None; n];
        let start = self.g.processes[p].start;
        let mut queue = std::collections::VecDeque::from([(start, 0usize)]);
        best[start] = Some(0);
        while let Some((x, k)) = queue.pop_front() {
            if best[x].is_some_and(|b| b < k) {
                continue;
            }
            let w = usize::from(counted.contains(&x));
            for &y in &self.g.succ[x] {
                let ky = k + w;
                if best[y].is_none_or(|b| ky < b) {
                    best[y] = Some(ky);
                    if w == 0 {
                        queue.push_front((y, ky));
                    } else {
                        queue.push_back((y, ky));
                    }
                }
            }
        }
        best
    }

    /// For each node of `counted` (in process `p`), the most nodes of `counted` strictly
    /// before it on a path from the start: `None` when unbounded (a counted node on a cycle
    /// leads to it).
    fn most_before(&self, p: usize, counted: &[NodeId]) -> HashMap<NodeId, Option<usize>> {
        let n = self.g.nodes.len();
        // Which nodes reach which, within the process.
        let reaches = |from: NodeId| {
            let mut seen = vec![false; n];
            let mut stack = vec![from];
            while let Some(x) = stack.pop() {
                for &y in &self.g.succ[x] {
                    if !seen[y] {
                        seen[y] = true;
                        stack.push(y);
                    }
                }
            }
            seen
        };
        let from: HashMap<NodeId, Vec<bool>> = counted.iter().map(|&q| (q, reaches(q))).collect();
        // Longest paths by relaxation; a node no counted cycle leads to settles within n
        // rounds.
        let start = self.g.processes[p].start;
        let mut best: Vec<Option<usize>> = vec![None; n];
        best[start] = Some(0);
        for _ in 0..=n {
            let mut changed = false;
            for x in 0..n {
                let Some(k) = best[x] else { continue };
                let k = k + usize::from(counted.contains(&x));
                for &y in &self.g.succ[x] {
                    if best[y].is_none_or(|b| k > b) {
                        best[y] = Some(k);
                        changed = true;
                    }
                }
            }
            if !changed {
                break;
            }
        }
        counted
            .iter()
            .map(|&r| {
                let unbounded = counted.iter().any(|&q| from[&q][q] && from[&q][r]);
                (r, if unbounded { None } else { best[r] })
            })
            .collect()
    }

    /// Gives every receive its message edges, and an edge from the unmodelled sender where
    /// senders the graph lacks may feed it; labels every node.
    fn finish(&mut self) {
        let n = self.g.nodes.len();
        let sends: Vec<NodeId> = (0..n)
            .filter(|&i| matches!(self.what[i], What::Send(_)))
            .collect();
        let infeasible = self.infeasible_pairs(&sends);
        let mut unmodelled = None;
        for r in 0..n {
            let What::Recv(chan) = self.what[r] else {
                continue;
            };
            let rp = self.g.nodes[r].process;
            let mut needs = self.taint_all || chan.is_none();
            if let Some(c) = chan {
                needs |= self.channels[c].escapes;
            }
            for &s in &sends {
                let What::Send(sc) = self.what[s] else {
                    continue;
                };
                let same = chan.is_none() || sc.is_none() || sc == chan;
                if !same {
                    continue;
                }
                if self.g.nodes[s].process == rp {
                    needs = true;
                } else if !infeasible.contains(&(s, r)) {
                    let _ = self.g.message(s, r);
                }
            }
            if needs {
                let u = *unmodelled.get_or_insert_with(|| {
                    let p = self.g.process("(unmodelled senders)");
                    let site = Site {
                        file: self.file.clone(),
                        line: 0,
                    };
                    self.what.extend([What::Start, What::Stop]);
                    self.sites.extend([site.clone(), site.clone()]);
                    self.processes.push(ProcessInfo {
                        name: None,
                        site: site.clone(),
                        replicated: false,
                        unmodelled: true,
                    });
                    self.hidden.push(Hidden::default());
                    let s = self.g.node(p, Kind::Send, "");
                    self.what.push(What::Unmodelled);
                    self.sites.push(site);
                    let (start, stop) = (self.g.processes[p].start, self.g.processes[p].stop);
                    let _ = self.g.chain(&[start, s, stop]);
                    s
                });
                let _ = self.g.message(u, r);
            }
        }
        let program = Program {
            graph: Dcfg::new(),
            what: std::mem::take(&mut self.what),
            sites: std::mem::take(&mut self.sites),
            processes: std::mem::take(&mut self.processes),
            hidden: Vec::new(),
            channels: std::mem::take(&mut self.channels),
            unknowns: Vec::new(),
            closes: BTreeMap::new(),
            files: Vec::new(),
        };
        for i in 0..self.g.nodes.len() {
            self.g.nodes[i].label = program.describe(i);
        }
        self.what = program.what;
        self.sites = program.sites;
        self.processes = program.processes;
        self.channels = program.channels;
    }
}

/// `env` without the names `pat` binds.
fn shadowed(env: &Env, pat: &syn::Pat) -> Env {
    let mut out = env.clone();
    for n in names_of(pat) {
        out.insert(n, Bound::Local);
    }
    out
}

/// `env` without the names the `let`s of condition `cond` bind.
fn cond_env(env: &Env, cond: &syn::Expr) -> Env {
    match peel(cond) {
        syn::Expr::Let(l) => shadowed(env, &l.pat),
        syn::Expr::Binary(b) if matches!(b.op, syn::BinOp::And(_)) => {
            cond_env(&cond_env(env, &b.left), &b.right)
        }
        _ => env.clone(),
    }
}

/// Whether `e` is a spawn of a closure (`spawn(..)`, `Builder::..spawn(..)`), perhaps
/// unwrapped.
fn is_spawn(e: &syn::Expr) -> bool {
    match peel(e) {
        syn::Expr::MethodCall(m) if m.method == "unwrap" || m.method == "expect" => {
            is_spawn(&m.receiver)
        }
        syn::Expr::MethodCall(m) => {
            m.method == "spawn" && matches!(m.args.first().map(peel), Some(syn::Expr::Closure(_)))
        }
        syn::Expr::Call(c) => {
            last_segment(&c.func).as_deref() == Some("spawn")
                && matches!(c.args.first().map(peel), Some(syn::Expr::Closure(_)))
        }
        _ => false,
    }
}

fn strip_type(p: &syn::Pat) -> &syn::Pat {
    match p {
        syn::Pat::Type(t) => strip_type(&t.pat),
        _ => p,
    }
}

fn names_of(p: &syn::Pat) -> Vec<String> {
    let mut v = Vec::new();
    pat_idents(p, &mut v);
    v
}

fn extend_unique(into: &mut Vec<NodeId>, from: &[NodeId]) {
    for &n in from {
        if !into.contains(&n) {
            into.push(n);
        }
    }
}

fn quote_expr(e: &syn::Expr) -> String {
    let mut s = quote::ToTokens::to_token_stream(e).to_string();
    for (a, b) in [
        (" . ", "."),
        (" (", "("),
        ("( ", "("),
        (" )", ")"),
        ("& ", "&"),
    ] {
        s = s.replace(a, b);
    }
    s
}

fn quote_path(p: &syn::Path) -> String {
    quote::ToTokens::to_token_stream(p)
        .to_string()
        .replace(" :: ", "::")
}

/// The walk of a closure or `async` block that is not a spawned body.
struct Detached<'w> {
    w: &'w mut W,
    p: usize,
    env: Env,
    /// Whether it spawned a process.
    spawned: bool,
}

impl Detached<'_> {
    fn ctx(&self) -> Ctx {
        let stop = self.w.g.processes[self.p].stop;
        Ctx::new(self.p, stop, None, true)
    }

    fn hide(&mut self, h: Hidden, what: &str, span: Span) {
        let mut cx = self.ctx();
        self.spawned |= h.spawn;
        self.w.hide(&mut cx, &h, what, span);
    }
}

impl<'ast> Visit<'ast> for Detached<'_> {
    fn visit_expr_method_call(&mut self, m: &'ast syn::ExprMethodCall) {
        let method = m.method.to_string();
        if method == "spawn"
            && let Some(syn::Expr::Closure(c)) = m.args.first().map(peel)
        {
            let name = match naming(&m.receiver) {
                Naming::Literal(n) => Some(n),
                _ => None,
            };
            self.spawned = true;
            let env = self.env.clone();
            self.w.spawn_body(&env, c, name, true, None);
            self.visit_expr(&m.receiver);
            return;
        }
        if SENDS.contains(&method.as_str()) || RECVS.contains(&method.as_str()) {
            let h = Hidden {
                comm: true,
                ..Hidden::default()
            };
            self.hide(h, &format!("`.{method}` inside a closure"), m.span());
        } else if let Some(h) = self.w.fns.effects_of(&method).cloned() {
            self.hide(h, &format!("call of `{method}` inside a closure"), m.span());
        } else if self.w.fns.eblocks.contains(&method) {
            self.w.hidden[self.p].enters.insert(method);
        }
        syn::visit::visit_expr_method_call(self, m);
    }

    fn visit_expr_call(&mut self, c: &'ast syn::ExprCall) {
        let name = last_segment(&c.func).unwrap_or_default();
        if name == "spawn"
            && let Some(syn::Expr::Closure(cl)) = c.args.first().map(peel)
        {
            self.spawned = true;
            let env = self.env.clone();
            self.w.spawn_body(&env, cl, None, true, None);
            return;
        }
        if let Some(h) = self.w.fns.effects_of(&name).cloned() {
            self.hide(h, &format!("call of `{name}` inside a closure"), c.span());
        } else if self.w.fns.eblocks.contains(&name) {
            self.w.hidden[self.p].enters.insert(name);
        }
        // The callee itself is not a value here: only the arguments are read.
        for a in &c.args {
            self.visit_expr(a);
        }
    }

    fn visit_expr_path(&mut self, p: &'ast syn::ExprPath) {
        let mut cx = self.ctx();
        let env = self.env.clone();
        self.w.fn_as_value(&mut cx, &env, p);
        self.spawned |= cx.spawned.is_none();
        if let Some(i) = p.path.get_ident()
            && let Some(Bound::Chan(chan)) = self.env.get(&i.to_string()).copied()
        {
            let cx = self.ctx();
            self.w.escape(
                &cx,
                chan,
                format!("channel end `{i}` used inside a closure"),
                p.span(),
            );
        }
    }

    fn visit_local(&mut self, l: &'ast syn::Local) {
        if let Some(init) = &l.init
            && let syn::Expr::Call(c) = peel(&init.expr)
            && last_segment(&c.func).is_some_and(|f| CONSTRUCTORS.contains(&f.as_str()))
        {
            let cx = self.ctx();
            self.w.unknown(
                Some(cx.p),
                "a channel made inside a closure".to_owned(),
                l.span(),
            );
        }
        syn::visit::visit_local(self, l);
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        if is_mark(m) {
            let h = match mark_label(m) {
                Some(l) => Hidden {
                    marks: [l].into(),
                    ..Hidden::default()
                },
                None => Hidden {
                    any_mark: true,
                    ..Hidden::default()
                },
            };
            self.hide(h, "a mark inside a closure", m.span());
        } else if m.path.segments.last().is_some_and(|s| s.ident == "select") {
            let h = Hidden {
                comm: true,
                ..Hidden::default()
            };
            self.hide(h, "`select!` inside a closure", m.span());
        } else if let Ok(args) = m.parse_body_with(
            syn::punctuated::Punctuated::<syn::Expr, syn::Token![,]>::parse_terminated,
        ) {
            for a in &args {
                self.visit_expr(a);
            }
        }
    }
}
