//! Answers as people and other tools read them: an indented tree, Graphviz. (JSON is the
//! answer serialized as it is.)

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

use super::answer::{Answer, Dependence, NodeKind, Step, Via};

/// The answer as an indented tree, one node per line with its statement below it.
pub fn text(answer: &Answer) -> String {
    let mut referenced = BTreeSet::new();
    collect_references(&answer.root, &mut referenced);
    let mut out = String::new();
    let at = if answer.at == "end" {
        "at the end of the run".to_owned()
    } else {
        format!("at {}", answer.at)
    };
    let _ = writeln!(out, "why {} {} ({at}):", answer.process, answer.var);
    write_step(&mut out, &answer.root, None, "", "", &referenced);
    if !answer.leaks.is_empty() {
        let _ = writeln!(
            out,
            "\nwarning: re-execution did not reproduce the log; the answer may be wrong where it \
             passes through these instances:"
        );
        for l in &answer.leaks {
            let _ = writeln!(
                out,
                "  {} {} (entered at event {}): {}: logged {}, re-executed {}",
                l.process, l.eblock, l.instance, l.what, l.logged, l.reproduced
            );
        }
    }
    out
}

fn collect_references(step: &Step, out: &mut BTreeSet<usize>) {
    if let Some(id) = step.see {
        out.insert(id);
    }
    for d in &step.deps {
        collect_references(d, out);
    }
}

fn label(step: &Step) -> String {
    let kind = match step.kind {
        Dependence::Target => String::new(),
        Dependence::Data => "data".into(),
        Dependence::Control => "control".into(),
    };
    let via = match step.via {
        None => String::new(),
        Some(Via::Message) => " via message".into(),
        Some(Via::Call) => " via call".into(),
        Some(Via::Parameter) => " via parameter".into(),
        Some(Via::EarlierInstance) => " via earlier instance".into(),
        Some(via @ (Via::Lock | Via::Atomic)) => {
            let word = if via == Via::Lock { "lock" } else { "atomic" };
            match &step.through {
                Some(name) => format!(" via {word} {name}"),
                None => format!(" via {word}"),
            }
        }
    };
    let value = step.value.as_deref().map(shorten);
    let what = match (&step.var, &value, step.record) {
        (Some(var), Some(value), _) => format!("{var} = {value}"),
        (Some(var), None, _) => var.clone(),
        (None, Some(value), Some(r)) => format!("{} {value}", record_word(r)),
        (None, Some(value), None) => value.clone(),
        (None, None, Some(r)) => record_word(r).to_owned(),
        (None, None, None) => step.text.clone(),
    };
    if kind.is_empty() {
        what
    } else {
        format!("{kind}{via}: {what}")
    }
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

fn record_word(r: ppd_formats::trace::RecordKind) -> &'static str {
    use ppd_formats::trace::RecordKind::*;
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
    }
}

fn place_of(step: &Step, parent: Option<&Step>) -> String {
    let mut parts = Vec::new();
    if !step.file.is_empty() {
        parts.push(format!("{}:{}", step.file, step.line));
    }
    let moved = parent.is_none_or(|p| p.pid != step.pid || p.instance != step.instance);
    if moved {
        match (&step.eblock, step.instance) {
            (Some(e), Some(i)) => parts.push(format!("{} {e} entered at event {i}", step.process)),
            _ => parts.push(step.process.clone()),
        }
    }
    parts.join(", ")
}

fn write_step(
    out: &mut String,
    step: &Step,
    parent: Option<&Step>,
    first: &str,
    rest: &str,
    referenced: &BTreeSet<usize>,
) {
    let tag = if referenced.contains(&step.id) {
        format!("[#{}] ", step.id)
    } else {
        String::new()
    };
    if let Some(id) = step.see {
        let _ = writeln!(out, "{first}{}  (see #{id})", label(step));
        return;
    }
    let place = place_of(step, parent);
    let place = if place.is_empty() {
        String::new()
    } else {
        format!("  ({place})")
    };
    let _ = writeln!(out, "{first}{tag}{}{place}", label(step));
    let bar = if step.deps.is_empty() && !step.more {
        "  "
    } else {
        "│ "
    };
    if !step.text.is_empty() {
        let _ = writeln!(out, "{rest}{bar}  {}", step.text);
    }
    if let Some(note) = &step.note {
        let _ = writeln!(out, "{rest}{bar}  [{note}]");
    }
    if step.more {
        let _ = writeln!(out, "{rest}└─ … (more: raise --depth)");
    }
    for (i, dep) in step.deps.iter().enumerate() {
        let last = i + 1 == step.deps.len();
        let (f, r) = if last {
            ("└─ ", "   ")
        } else {
            ("├─ ", "│  ")
        };
        write_step(
            out,
            dep,
            Some(step),
            &format!("{rest}{f}"),
            &format!("{rest}{r}"),
            referenced,
        );
    }
}

/// The answer as a Graphviz digraph: one cluster per e-block instance; ENTRY (`%n`), EXIT
/// (`%0`), singular and sub-graph nodes drawn apart; data edges solid, control edges dashed,
/// synchronization edges (messages, and values read under a lock or from an atomic) bold, flow
/// edges (execution order inside an instance) dotted. Edges go from a dependence to what
/// depends on it.
pub fn dot(answer: &Answer) -> String {
    let mut steps = Vec::new();
    let mut edges = Vec::new();
    gather(&answer.root, &mut steps, &mut edges);
    let mut clusters: BTreeMap<(u32, Option<u64>), Vec<&Step>> = BTreeMap::new();
    for s in &steps {
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
            let mut text = label(&Step {
                kind: Dependence::Target,
                ..(*s).clone()
            });
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
    for (from, to, dep) in edges {
        let shared = |color: &str, word: &str| match dep.through.as_deref() {
            Some(name) => format!(
                "style=bold color={color} label=\"{}\"",
                escape(&format!("{word} {name}"))
            ),
            None => format!("style=bold color={color} label=\"{word}\""),
        };
        let style = match (dep.kind, dep.via) {
            (_, Some(Via::Message)) => "style=bold color=blue label=\"message\"".to_owned(),
            (_, Some(Via::Lock)) => shared("darkgreen", "lock"),
            (_, Some(Via::Atomic)) => shared("purple", "atomic"),
            (Dependence::Control, _) => "style=dashed label=\"control\"".to_owned(),
            (_, Some(Via::Call)) => "label=\"call\"".to_owned(),
            (_, Some(Via::Parameter)) => "label=\"parameter\"".to_owned(),
            (_, Some(Via::EarlierInstance)) => "label=\"postlog\"".to_owned(),
            _ => "label=\"data\"".to_owned(),
        };
        let _ = writeln!(out, "  n{from} -> n{to} [{style}];");
    }
    out.push_str("}\n");
    out
}

/// An edge: from a dependence (its id) to what depends on it, and the step that says how.
type Edge<'a> = (usize, usize, &'a Step);

fn gather<'a>(step: &'a Step, steps: &mut Vec<&'a Step>, edges: &mut Vec<Edge<'a>>) {
    steps.push(step);
    for d in &step.deps {
        edges.push((d.see.unwrap_or(d.id), step.id, d));
        if d.see.is_none() {
            gather(d, steps, edges);
        }
    }
}

fn escape(text: &str) -> String {
    text.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}
