//! Answers as people and other tools read them: an indented tree, Graphviz. (JSON is the
//! answer serialized as it is.)
//!
//! The answer is a graph, its steps listed once each; the tree draws each step where the
//! search first reached it and refers to it by number (`see #N`) everywhere else. Nothing here
//! recurses, and the tree is indented `NESTING` levels at most: a deeper chain goes on in a
//! tree of its own below, so the text grows with the steps, not with their depth.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt::Write;

use super::answer::{Answer, Dependence, Edge, NodeKind, Step, Via};
use crate::palette::Palette;

/// How many levels deep a tree is drawn before its chain goes on in a tree of its own.
const NESTING: usize = 32;

/// How the tree reaches each step: the step and the position among its dependences of the
/// edge it is drawn under (`None` for the target, or a step no edge reaches).
fn drawn_under(answer: &Answer) -> Vec<Option<(usize, usize)>> {
    let mut under = vec![None; answer.steps.len()];
    let mut reached = vec![false; answer.steps.len()];
    let mut queue = VecDeque::new();
    if !answer.steps.is_empty() {
        reached[0] = true;
        queue.push_back(0);
    }
    while let Some(id) = queue.pop_front() {
        for (i, edge) in answer.steps[id].deps.iter().enumerate() {
            if let Some(seen) = reached.get_mut(edge.step)
                && !*seen
            {
                *seen = true;
                under[edge.step] = Some((id, i));
                queue.push_back(edge.step);
            }
        }
    }
    under
}

/// A line of the tree to write: a step, drawn in full or referred to.
struct Line<'a> {
    step: usize,
    edge: Option<&'a Edge>,
    parent: Option<usize>,
    first: String,
    rest: String,
    nesting: usize,
    full: bool,
}

/// The answer as indented trees, one node per line with its statement below it.
pub fn text(answer: &Answer) -> String {
    text_with(answer, Palette::PLAIN)
}

/// [`text`] coloured with `palette`: process names, sites, values and the kind of each step
/// painted, the tree and the quoted source faint. With [`Palette::PLAIN`] it is [`text`].
pub fn text_with(answer: &Answer, palette: Palette) -> String {
    let under = drawn_under(answer);
    // Steps referred to from elsewhere carry their number where they are drawn.
    let referenced: BTreeSet<usize> = answer
        .steps
        .iter()
        .flat_map(|s| {
            s.deps
                .iter()
                .enumerate()
                .filter(|&(i, e)| under.get(e.step) != Some(&Some((s.id, i))))
                .map(|(_, e)| e.step)
        })
        .collect();
    let mut out = String::new();
    let at = if answer.at == "end" {
        "at the end of the run".to_owned()
    } else {
        format!("at {}", answer.at)
    };
    let _ = writeln!(
        out,
        "why {} {} ({at}):",
        palette.process(&answer.process),
        palette.value(&answer.var)
    );
    let mut trees: VecDeque<(usize, Option<&Edge>)> = VecDeque::new();
    if !answer.steps.is_empty() {
        trees.push_back((0, None));
    }
    while let Some((root, edge)) = trees.pop_front() {
        if root != 0 {
            out.push('\n');
        }
        let mut lines = vec![Line {
            step: root,
            edge,
            parent: None,
            first: String::new(),
            rest: String::new(),
            nesting: 0,
            full: true,
        }];
        while let Some(line) = lines.pop() {
            match write_line(&mut out, answer, &line, &referenced, palette) {
                Written::Step => lines.extend(children(answer, &line, &under).into_iter().rev()),
                Written::Reference => {}
                Written::Deferred(edge) => trees.push_back((line.step, Some(edge))),
            }
        }
    }
    if !answer.leaks.is_empty() {
        let _ = writeln!(
            out,
            "\n{}: re-execution did not reproduce the log; the answer may be wrong where it \
             passes through these instances:",
            palette.alarm("warning")
        );
        for l in &answer.leaks {
            let _ = writeln!(
                out,
                "  {} {} (entered at event {}): {}: logged {}, re-executed {}",
                palette.process(&l.process),
                l.eblock,
                l.instance,
                l.what,
                palette.value(&l.logged),
                palette.value(&l.reproduced)
            );
        }
    }
    out
}

/// The lines under a step drawn in full: its dependences, each drawn in full where the tree
/// reaches it unless that is too deep, else referred to.
fn children<'a>(
    answer: &'a Answer,
    line: &Line<'a>,
    under: &[Option<(usize, usize)>],
) -> Vec<Line<'a>> {
    let deps = &answer.steps[line.step].deps;
    deps.iter()
        .enumerate()
        .map(|(i, edge)| {
            let last = i + 1 == deps.len();
            let (first, rest) = if last {
                ("└─ ", "   ")
            } else {
                ("├─ ", "│  ")
            };
            let here = under.get(edge.step) == Some(&Some((line.step, i)));
            Line {
                step: edge.step,
                edge: Some(edge),
                parent: Some(line.step),
                first: format!("{}{first}", line.rest),
                rest: format!("{}{rest}", line.rest),
                nesting: line.nesting + 1,
                full: here,
            }
        })
        .collect()
}

/// What [`write_line`] wrote.
enum Written<'a> {
    /// The step in full: its dependences come below it.
    Step,
    /// A reference to a step drawn elsewhere.
    Reference,
    /// A reference to a step too deep to draw here, which a tree of its own will draw, reached
    /// by this edge.
    Deferred(&'a Edge),
}

/// How many of a receive's message races a tree shows under it.
const RACES_SHOWN: usize = 3;

/// Writes a line of the tree, and the statement and notes below a step drawn in full.
fn write_line<'a>(
    out: &mut String,
    answer: &'a Answer,
    line: &Line<'a>,
    referenced: &BTreeSet<usize>,
    palette: Palette,
) -> Written<'a> {
    let step = &answer.steps[line.step];
    let deeper = !step.deps.is_empty() || step.more;
    let deferred = match line.edge {
        Some(edge) if line.full && line.nesting >= NESTING && deeper => Some(edge),
        _ => None,
    };
    if !line.full || deferred.is_some() {
        let _ = writeln!(
            out,
            "{}{}  {}",
            palette.faint(&line.first),
            label(step, line.edge, palette),
            palette.faint(format!("(see #{})", step.id))
        );
        return deferred.map_or(Written::Reference, Written::Deferred);
    }
    // A tree of its own starts with a step referred to from above.
    let tag = if referenced.contains(&step.id) || line.nesting == 0 && step.id != 0 {
        format!("[#{}] ", step.id)
    } else {
        String::new()
    };
    let parent = line.parent.map(|p| &answer.steps[p]);
    let place = place_of(step, parent, palette);
    let place = if place.is_empty() {
        String::new()
    } else {
        format!("  ({place})")
    };
    let _ = writeln!(
        out,
        "{}{tag}{}{place}",
        palette.faint(&line.first),
        label(step, line.edge, palette)
    );
    let bar = if deeper { "│ " } else { "  " };
    let rest = palette.faint(format!("{}{bar}", line.rest));
    if !step.text.is_empty() {
        let _ = writeln!(out, "{rest}  {}", palette.faint(&step.text));
    }
    if let Some(note) = &step.note {
        let _ = writeln!(out, "{rest}  {}", palette.note(format!("[{note}]")));
    }
    let races: Vec<_> = answer.races.iter().filter(|r| r.step == step.id).collect();
    for race in races.iter().take(RACES_SHOWN) {
        let _ = writeln!(
            out,
            "{rest}  {}",
            palette.note(format!("[{}]", race.describe()))
        );
    }
    if races.len() > RACES_SHOWN {
        let _ = writeln!(
            out,
            "{rest}  {}",
            palette.note(format!(
                "[{}: `ppd races --for {} {}{}` lists every one]",
                match races.len() - RACES_SHOWN {
                    1 => "and 1 more message could have been received here".to_owned(),
                    n => format!("and {n} more messages could have been received here"),
                },
                answer.process,
                answer.var,
                if answer.at == "end" {
                    String::new()
                } else {
                    format!(" --at '{}'", answer.at)
                }
            ))
        );
    }
    if step.more {
        let _ = writeln!(
            out,
            "{}{}",
            palette.faint(format!("{}└─ ", line.rest)),
            palette.note("… (more: raise --depth)")
        );
    }
    Written::Step
}

/// A step as a line shows it, with how the step above depends on it (`edge`).
fn label(step: &Step, edge: Option<&Edge>, palette: Palette) -> String {
    let value = step.value.as_deref().map(|v| palette.value(shorten(v)));
    let what = match (&step.var, &value, step.record) {
        (Some(var), Some(value), _) => format!("{var} = {value}"),
        (Some(var), None, _) => var.clone(),
        (None, Some(value), Some(r)) => format!("{} {value}", record_word(r)),
        (None, Some(value), None) => value.clone(),
        (None, None, Some(r)) => record_word(r).to_owned(),
        (None, None, None) => step.text.clone(),
    };
    let Some(edge) = edge else {
        return what;
    };
    let kind = match edge.kind {
        Dependence::Data => "data",
        Dependence::Control => "control",
    };
    let via = match edge.via {
        None => String::new(),
        Some(Via::Message) => " via message".into(),
        Some(Via::Call) => " via call".into(),
        Some(Via::Parameter) => " via parameter".into(),
        Some(Via::EarlierInstance) => " via earlier instance".into(),
        Some(Via::Join) => " via join".into(),
        Some(via @ (Via::Lock | Via::Atomic)) => {
            let word = if via == Via::Lock { "lock" } else { "atomic" };
            match &edge.through {
                Some(name) => format!(" via {word} {name}"),
                None => format!(" via {word}"),
            }
        }
    };
    format!("{}: {what}", palette.kind(format!("{kind}{via}")))
}

/// Values longer than a line are cut in the tree (`--json` has them whole).
fn shorten(value: &str) -> String {
    const WIDTH: usize = 100;
    if value.chars().count() <= WIDTH {
        value.to_owned()
    } else {
        let cut: String = value.chars().take(WIDTH).collect();
        format!("{cut}…")
    }
}

fn record_word(r: ppd_formats::eblock_trace::RecordKind) -> &'static str {
    use ppd_formats::eblock_trace::RecordKind::*;
    match r {
        Entry => "entry",
        Def => "defines",
        Branch => "branch taken:",
        Return => "returns",
        Recv => "received",
        Send => "sent",
        Call => "call returned",
        Input => "input",
        Mark => "mark",
        Publish => "wrote",
        Join => "joined",
    }
}

fn place_of(step: &Step, parent: Option<&Step>, palette: Palette) -> String {
    let mut parts = Vec::new();
    if !step.file.is_empty() {
        parts.push(palette.site(format!("{}:{}", step.file, step.line)));
    }
    let moved = parent.is_none_or(|p| p.pid != step.pid || p.instance != step.instance);
    if moved {
        match (&step.eblock, step.instance) {
            (Some(e), Some(i)) => parts.push(format!(
                "{} {e} entered at event {i}",
                palette.process(&step.process)
            )),
            // A process's body.
            (Some(e), None) => parts.push(format!("{} {e}", palette.process(&step.process))),
            (None, _) => parts.push(palette.process(&step.process)),
        }
    }
    parts.join(", ")
}

/// The answer as a Graphviz digraph: one cluster per e-block instance; ENTRY (`%n`), EXIT
/// (`%0`), singular and sub-graph nodes drawn apart; data edges solid, control edges dashed,
/// synchronization edges (messages, and values read under a lock or from an atomic) bold, flow
/// edges (execution order inside an instance) dotted. Edges go from a dependence to what
/// depends on it.
pub fn dot(answer: &Answer) -> String {
    let mut clusters: BTreeMap<(u32, Option<u64>), Vec<&Step>> = BTreeMap::new();
    for s in &answer.steps {
        clusters.entry((s.pid, s.instance)).or_default().push(s);
    }
    let mut out = String::new();
    let _ = writeln!(
        out,
        "digraph why {{\n  rankdir=BT;\n  node [fontname=\"monospace\" fontsize=10];\n  \
         edge [fontname=\"monospace\" fontsize=9];\n  label=\"{}\";",
        escape(&format!(
            "why {} {} at {}",
            answer.process, answer.var, answer.at
        ))
    );
    for (i, ((_, instance), members)) in clusters.iter().enumerate() {
        let first = members[0];
        let title = match (&first.eblock, instance) {
            (Some(e), Some(at)) => format!("{}: {e} (entered at event {at})", first.process),
            _ => first.process.clone(),
        };
        let _ = writeln!(
            out,
            "  subgraph cluster_{i} {{\n    label=\"{}\";",
            escape(&title)
        );
        for s in members {
            let shape = match s.node {
                NodeKind::Entry => "invhouse",
                NodeKind::Exit => "house",
                NodeKind::Singular => "box",
                NodeKind::Subgraph => "box3d",
                NodeKind::Outside => "note",
            };
            let mut text = label(s, None, Palette::PLAIN);
            if !s.file.is_empty() {
                let _ = write!(text, "\n{}:{}", s.file, s.line);
            }
            if !s.text.is_empty() {
                let _ = write!(text, "\n{}", s.text);
            }
            let _ = writeln!(
                out,
                "    n{} [shape={shape} label=\"{}\"];",
                s.id,
                escape(&text)
            );
        }
        // Flow edges: the nodes of one instance in execution order.
        let mut ordered: Vec<&&Step> = members
            .iter()
            .filter(|s| s.event.is_some() || s.line > 0)
            .collect();
        ordered.sort_by_key(|s| (s.event.unwrap_or(0), s.line, s.id));
        for pair in ordered.windows(2) {
            let _ = writeln!(
                out,
                "    n{} -> n{} [style=dotted color=gray arrowhead=none constraint=false];",
                pair[0].id, pair[1].id
            );
        }
        let _ = writeln!(out, "  }}");
    }
    for step in &answer.steps {
        for edge in &step.deps {
            let shared = |color: &str, word: &str| match edge.through.as_deref() {
                Some(name) => format!(
                    "style=bold color={color} label=\"{}\"",
                    escape(&format!("{word} {name}"))
                ),
                None => format!("style=bold color={color} label=\"{word}\""),
            };
            let style = match (edge.kind, edge.via) {
                (_, Some(Via::Message)) => "style=bold color=blue label=\"message\"".to_owned(),
                (_, Some(Via::Lock)) => shared("darkgreen", "lock"),
                (_, Some(Via::Atomic)) => shared("purple", "atomic"),
                (Dependence::Control, _) => "style=dashed label=\"control\"".to_owned(),
                (_, Some(Via::Call)) => "label=\"call\"".to_owned(),
                (_, Some(Via::Parameter)) => "label=\"parameter\"".to_owned(),
                (_, Some(Via::EarlierInstance)) => "label=\"postlog\"".to_owned(),
                (_, Some(Via::Join)) => "style=bold label=\"join\"".to_owned(),
                _ => "label=\"data\"".to_owned(),
            };
            let _ = writeln!(out, "  n{} -> n{} [{style}];", edge.step, step.id);
        }
    }
    out.push_str("}\n");
    out
}

fn escape(text: &str) -> String {
    text.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}
