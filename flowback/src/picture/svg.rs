//! The diagram as a standalone SVG image (no script; every element carries a tooltip).

use ppd_formats::ProcessId;
use std::fmt::Write as _;

use super::{Diagram, escape};

/// Shared look of the SVG and HTML renderings.
pub(crate) const STYLE: &str = "\
.proc-line{stroke:#9aa3ad;stroke-width:1.5}\
.proc-label{font:12px sans-serif;fill:#222}\
.local-run{fill:#e4e8ec;stroke:#9aa3ad;stroke-width:1}\
.collapsed-run{fill:#d5e1f0;stroke:#2f6db5;stroke-width:1}\
.bundle{stroke:#2f6db5;stroke-width:4;opacity:.3;fill:none}\
.bundle-count{font:9px sans-serif;fill:#1d4f8f;text-anchor:middle}\
.left-out{font:12px sans-serif;fill:#8a4b00}\
.run-count{font:9px sans-serif;fill:#556;text-anchor:middle;pointer-events:none}\
.ev{stroke:#fff;stroke-width:1}\
.ev.sync{fill:#2f6db5}.ev.local{fill:#7c8794}.ev.mark{fill:#c08a00}\
.ev.end{fill:#333}.ev.blocked{fill:#fff;stroke:#c2410c;stroke-width:2}\
.ev.race{fill:#d62828;stroke:#7f1010;stroke-width:1.5}\
.msg{stroke:#2f6db5;stroke-width:1.4;fill:none}\
.sync-edge{stroke:#6b7f99;stroke-width:1;stroke-dasharray:4 2;fill:none}\
.sync-edge.reads_from{stroke:#8a4fbf;stroke-dasharray:1 2}\
.race-link{stroke:#d62828;stroke-width:2;stroke-dasharray:5 3;fill:none}\
.halt-cut{stroke:#8a2be2;stroke-width:2.5;fill:none}\
.halt-label{font:12px sans-serif;fill:#8a2be2}\
.dim{opacity:.15}";

/// Renders the diagram as SVG.
pub fn render(d: &Diagram) -> String {
    let (w, h) = (d.width(), d.height());
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w:.0}" height="{h:.0}" viewBox="0 0 {w:.0} {h:.0}" data-processes="{}" data-events="{}">"#,
        d.lanes.len(),
        d.events
    );
    let _ = writeln!(s, "<title>{}</title>", escape(&d.title));
    let _ = writeln!(s, "<style>{STYLE}</style>");
    s.push_str(
        r##"<defs><marker id="arrowhead" viewBox="0 0 8 8" refX="8" refY="4" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L8,4 L0,8 z" fill="#2f6db5"/></marker></defs>
"##,
    );
    for (i, lane) in d.lanes.iter().enumerate() {
        let y = Diagram::y(i as u32);
        let _ = writeln!(
            s,
            r#"<line class="proc-line" x1="{:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" data-pid="{}"><title>{} ({}): {} events, {}</title></line>"#,
            Diagram::x(-0.5),
            w - 20.0,
            lane.pid,
            escape(&lane.name),
            ProcessId(lane.pid),
            lane.events,
            lane.ending
        );
        let _ = writeln!(
            s,
            r#"<text class="proc-label" x="8" y="{:.1}">{} ({})</text>"#,
            y + 4.0,
            escape(&lane.name),
            ProcessId(lane.pid)
        );
    }
    for r in &d.runs {
        let (x, y) = (Diagram::x(f64::from(r.col)), Diagram::y(r.lane));
        let _ = writeln!(
            s,
            r#"<rect class="{}" x="{:.1}" y="{:.1}" width="20" height="12" rx="3"><title>{}</title></rect><text class="run-count" x="{x:.1}" y="{:.1}">{}</text>"#,
            if r.hidden > 0 {
                "collapsed-run"
            } else {
                "local-run"
            },
            x - 10.0,
            y - 6.0,
            run_title(r),
            y + 3.0,
            short_count(r.count)
        );
    }
    for b in &d.bundles {
        let (x1, y1) = (Diagram::x(f64::from(b.from_col)), Diagram::y(b.from_lane));
        let (x2, y2) = (Diagram::x(f64::from(b.to_col)), Diagram::y(b.to_lane));
        let _ = writeln!(
            s,
            r#"<line class="bundle" x1="{x1:.1}" y1="{y1:.1}" x2="{x2:.1}" y2="{y2:.1}"><title>{}</title></line><text class="bundle-count" x="{:.1}" y="{:.1}">{}</text>"#,
            bundle_title(b),
            (x1 + x2) / 2.0,
            (y1 + y2) / 2.0 - 3.0,
            b.count
        );
    }
    for a in &d.arrows {
        let (f, t) = (&d.nodes[a.from as usize], &d.nodes[a.to as usize]);
        let (x1, y1, x2, y2) = shorten(
            Diagram::x(f64::from(f.col)),
            Diagram::y(f.lane),
            Diagram::x(f64::from(t.col)),
            Diagram::y(t.lane),
        );
        let mut class = if a.kind == "message" {
            "msg".to_owned()
        } else {
            format!("sync-edge {}", a.kind)
        };
        if a.dim {
            class.push_str(" dim");
        }
        let _ = writeln!(
            s,
            r#"<line class="{class}" x1="{x1:.1}" y1="{y1:.1}" x2="{x2:.1}" y2="{y2:.1}" marker-end="url(#arrowhead)"><title>{}</title></line>"#,
            a.kind
        );
    }
    for r in &d.races {
        let (a, b) = (&d.nodes[r.a as usize], &d.nodes[r.b as usize]);
        let _ = writeln!(
            s,
            r#"<line class="race-link" x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}"><title>{} race on {} ({} times)</title></line>"#,
            Diagram::x(f64::from(a.col)),
            Diagram::y(a.lane),
            Diagram::x(f64::from(b.col)),
            Diagram::y(b.lane),
            r.kind,
            escape(&r.var),
            r.count
        );
    }
    for node in &d.nodes {
        let r = if node.class == "race" { 6 } else { 4 };
        let _ = writeln!(
            s,
            r#"<circle class="ev {}{}" cx="{:.1}" cy="{:.1}" r="{r}"><title>{}</title></circle>"#,
            node.class,
            if node.dim { " dim" } else { "" },
            Diagram::x(f64::from(node.col)),
            Diagram::y(node.lane),
            escape(&node.label)
        );
    }
    if let Some(cut) = &d.cut {
        let mut points = String::new();
        for (i, &col) in cut.cols.iter().enumerate() {
            let x = Diagram::x(col);
            let y = Diagram::y(i as u32);
            let _ = write!(
                points,
                "{x:.1},{:.1} {x:.1},{:.1} ",
                y - LANE_HALF,
                y + LANE_HALF
            );
        }
        let _ = writeln!(
            s,
            r#"<polyline class="halt-cut" points="{}"><title>halt: {}{}</title></polyline>"#,
            points.trim_end(),
            escape(&cut.predicate),
            if cut.consistent {
                ""
            } else {
                " (inconsistent cut)"
            }
        );
        let first = cut.cols.first().copied().unwrap_or(0.0);
        let _ = writeln!(
            s,
            r#"<text class="halt-label" x="{:.1}" y="14">halt: {}</text>"#,
            Diagram::x(first),
            escape(&cut.predicate)
        );
    }
    for (i, note) in d.left_out.iter().enumerate() {
        let _ = writeln!(
            s,
            r#"<text class="left-out" x="8" y="{:.1}">left out: {}</text>"#,
            d.notes_y(i),
            escape(note)
        );
    }
    s.push_str("</svg>\n");
    s
}

/// What a box's tooltip says.
pub(crate) fn run_title(r: &super::Run) -> String {
    let span = format!("(#{}–#{})", r.first, r.first + r.count - 1);
    if r.hidden > 0 {
        format!(
            "{} events {span} collapsed, {} of them synchronizing or marked",
            r.count, r.hidden
        )
    } else {
        format!("{} local events {span}", r.count)
    }
}

/// What a bundle's tooltip says.
pub(crate) fn bundle_title(b: &super::Bundle) -> String {
    format!("{} {} edges, bundled", b.count, b.kind)
}

const LANE_HALF: f64 = super::LANE / 2.0 - 4.0;

/// `1234` as `1.2k`: run boxes are small.
pub(crate) fn short_count(n: u32) -> String {
    match n {
        0..=999 => n.to_string(),
        1000..=999_999 => format!("{}k", n / 1000),
        _ => format!("{}M", n / 1_000_000),
    }
}

/// Pulls an arrow's ends in so it starts and ends at the dots' edges.
fn shorten(x1: f64, y1: f64, x2: f64, y2: f64) -> (f64, f64, f64, f64) {
    let (dx, dy) = (x2 - x1, y2 - y1);
    let len = (dx * dx + dy * dy).sqrt();
    if len < 12.0 {
        return (x1, y1, x2, y2);
    }
    let (ux, uy) = (dx / len, dy / len);
    (x1 + ux * 4.0, y1 + uy * 4.0, x2 - ux * 5.0, y2 - uy * 5.0)
}

/// About how many bytes this rendering of a diagram of `size` takes (labels vary: within a
/// factor of two).
pub fn estimated_bytes(size: super::Size) -> u64 {
    160 * size.dots + 130 * size.arrows + 190 * size.runs + 4096
}
