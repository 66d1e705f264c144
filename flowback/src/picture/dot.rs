//! The diagram as a Graphviz graph (`dot -Tsvg`): one cluster per process with its dots and
//! collapsed runs chained left to right, synchronization edges between clusters, races as
//! dashed red edges that do not constrain the layout, events after the halt cut greyed.

use ppd_formats::ProcessId;
use std::collections::HashMap;
use std::fmt::Write as _;

use super::Diagram;

fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Renders the diagram in the DOT language.
pub fn render(d: &Diagram) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "digraph ppd {{");
    let mut label = d.title.clone();
    for note in &d.left_out {
        label.push_str("\nleft out: ");
        label.push_str(note);
    }
    let _ = writeln!(s, "  label={};", quote(&label));
    let _ = writeln!(s, "  rankdir=LR; newrank=true; nodesep=0.3; ranksep=0.25;");
    let _ = writeln!(
        s,
        "  node [shape=circle, width=0.15, fixedsize=true, label=\"\", style=filled, fillcolor=\"#2f6db5\", color=white];"
    );
    // Items of each lane in column order: nodes `n<i>`, runs `r<i>`.
    let mut lanes: Vec<Vec<(u32, String, String)>> = vec![Vec::new(); d.lanes.len()];
    let after_cut = |lane: u32, col: u32| {
        d.cut
            .as_ref()
            .and_then(|c| c.cols.get(lane as usize))
            .is_some_and(|&c| f64::from(col) > c)
    };
    for (i, n) in d.nodes.iter().enumerate() {
        let fill = match n.class {
            "race" => "#d62828",
            "blocked" => "#ffffff",
            "end" => "#333333",
            "mark" => "#c08a00",
            "local" => "#7c8794",
            _ => "#2f6db5",
        };
        let fill = if after_cut(n.lane, n.col) || n.dim {
            "#d0d0d0"
        } else {
            fill
        };
        let mut attrs = format!("tooltip={}, fillcolor=\"{fill}\"", quote(&n.label));
        if n.class == "blocked" {
            attrs.push_str(", color=\"#c2410c\", penwidth=2");
        }
        lanes[n.lane as usize].push((n.col, format!("n{i}"), attrs));
    }
    for (i, r) in d.runs.iter().enumerate() {
        let (fill, color) = if r.hidden > 0 {
            ("#d5e1f0", "#2f6db5")
        } else {
            ("#e4e8ec", "#9aa3ad")
        };
        let attrs = format!(
            "shape=box, width=0.35, height=0.2, fontsize=8, fillcolor=\"{fill}\", color=\"{color}\", label=\"{}\", tooltip={}",
            super::svg::short_count(r.count),
            quote(&super::svg::run_title(r))
        );
        lanes[r.lane as usize].push((r.col, format!("r{i}"), attrs));
    }
    // The item at each (line, column), for bundles.
    let at: HashMap<(u32, u32), String> = lanes
        .iter()
        .enumerate()
        .flat_map(|(l, items)| {
            items
                .iter()
                .map(move |(col, id, _)| ((l as u32, *col), id.clone()))
        })
        .collect();
    for (l, items) in lanes.iter_mut().enumerate() {
        items.sort_by_key(|(col, _, _)| *col);
        let lane = &d.lanes[l];
        let _ = writeln!(s, "  subgraph cluster_p{} {{", lane.pid);
        let _ = writeln!(
            s,
            "    label={}; color=\"#9aa3ad\";",
            quote(&format!("{} ({})", lane.name, ProcessId(lane.pid)))
        );
        for (_, id, attrs) in items.iter() {
            let _ = writeln!(s, "    {id} [{attrs}];");
        }
        for w in items.windows(2) {
            let _ = writeln!(
                s,
                "    {} -> {} [arrowhead=none, color=\"#9aa3ad\", weight=10];",
                w[0].1, w[1].1
            );
        }
        let _ = writeln!(s, "  }}");
    }
    for a in &d.arrows {
        let style = if a.dim {
            "color=\"#d0d0d0\"".to_owned()
        } else if a.kind == "message" {
            "color=\"#2f6db5\"".to_owned()
        } else {
            format!("color=\"#6b7f99\", style=dashed, tooltip=\"{}\"", a.kind)
        };
        let _ = writeln!(s, "  n{} -> n{} [{style}];", a.from, a.to);
    }
    for b in &d.bundles {
        if let (Some(from), Some(to)) = (
            at.get(&(b.from_lane, b.from_col)),
            at.get(&(b.to_lane, b.to_col)),
        ) {
            let _ = writeln!(
                s,
                "  {from} -> {to} [color=\"#2f6db580\", penwidth=4, constraint=false, label=\"{}\", tooltip={}];",
                b.count,
                quote(&super::svg::bundle_title(b))
            );
        }
    }
    for r in &d.races {
        let _ = writeln!(
            s,
            "  n{} -> n{} [dir=none, color=\"#d62828\", style=dashed, penwidth=2, constraint=false, tooltip={}];",
            r.a,
            r.b,
            quote(&format!("{} race on {} ({} times)", r.kind, r.var, r.count))
        );
    }
    if let Some(cut) = &d.cut {
        let _ = writeln!(
            s,
            "  halt [shape=note, width=0, fixedsize=false, style=\"\", label={}];",
            quote(&format!(
                "halt: {}{} (events after the cut are grey)",
                cut.predicate,
                if cut.consistent { "" } else { ", inconsistent" }
            ))
        );
    }
    let _ = writeln!(s, "}}");
    s
}

/// About how many bytes this rendering of a diagram of `size` takes (labels vary: within a
/// factor of two).
pub fn estimated_bytes(size: super::Size) -> u64 {
    160 * size.dots + 70 * size.arrows + 350 * size.runs + 4096
}
