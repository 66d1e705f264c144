//! The diagram as one self-contained HTML page: the laid-out model as JSON, and a script that
//! draws it as SVG and lets the user zoom (wheel, `+`/`-`, buttons), pan (drag, arrows) and
//! jump to races. No external resources: it opens from a file, offline.
//!
//! After drawing, the script marks the `<svg id="diagram">` element with `data-drawn` and the
//! counts of what it drew (`data-lines`, `data-nodes`, `data-runs`, `data-messages`, `data-bundles`,
//! `data-races`), so a headless browser can check the picture.

use super::svg::STYLE;
use super::{COLUMN, Diagram, LANE, LEFT, TOP, escape};

const PAGE_STYLE: &str = "\
body{margin:0;font:13px sans-serif;color:#222;background:#f6f7f9}\
header{padding:8px 12px;background:#fff;border-bottom:1px solid #dde;display:flex;gap:14px;\
align-items:center;flex-wrap:wrap}\
header h1{font-size:15px;margin:0}\
#stats{color:#555}\
button{font:13px sans-serif;padding:1px 8px;margin-right:2px}\
#view{height:calc(100vh - 170px);min-height:260px;background:#fff;cursor:grab;overflow:hidden}\
#view.dragging{cursor:grabbing}\
#diagram{width:100%;height:100%;display:block;user-select:none}\
.legend i{display:inline-block;width:10px;height:10px;border-radius:5px;margin:0 4px 0 10px}\
#race-list{padding:6px 12px;max-height:120px;overflow:auto;border-top:1px solid #dde;background:#fff}\
#race-list li{cursor:pointer;margin:2px 0}\
#race-list li:hover{text-decoration:underline}\
.label-bg{fill:#fff;opacity:.92}\
#left-out{margin:0;padding:4px 12px 4px 28px;color:#8a4b00;background:#fff8ec}\
#left-out:empty{display:none}";

const SCRIPT: &str = r#"
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("ppd-data").textContent);
  var NS = "http://www.w3.org/2000/svg";
  var svg = document.getElementById("diagram");
  var world = document.getElementById("world");
  var labels = document.getElementById("labels");
  function el(name, attrs, parent) {
    var e = document.createElementNS(NS, name);
    for (var k in attrs) { e.setAttribute(k, attrs[k]); }
    parent.appendChild(e);
    return e;
  }
  function tip(node, text) {
    var t = document.createElementNS(NS, "title");
    t.textContent = text;
    node.appendChild(t);
  }
  function x(c) { return COL * (c + 0.5); }
  function y(l) { return TOP + l * LANE; }
  var width = x(data.columns) + COL;
  var height = y(data.lanes.length);
  var drawn = { lines: 0, nodes: 0, runs: 0, messages: 0, syncs: 0, races: 0, bundles: 0 };

  data.lanes.forEach(function (lane, i) {
    var line = el("line", { "class": "proc-line", x1: 0, y1: y(i), x2: width, y2: y(i), "data-pid": lane.pid }, world);
    tip(line, lane.name + " (p" + lane.pid + "): " + lane.events + " events, " + lane.ending);
    drawn.lines++;
  });
  data.runs.forEach(function (r) {
    var box = el("rect", { "class": r.hidden ? "collapsed-run" : "local-run", x: x(r.col) - 10, y: y(r.lane) - 6, width: 20, height: 12, rx: 3 }, world);
    var span = "(#" + r.first + "\u2013#" + (r.first + r.count - 1) + ")";
    tip(box, r.hidden ? r.count + " events " + span + " collapsed, " + r.hidden + " of them synchronizing or marked"
      : r.count + " local events " + span);
    var n = r.count < 1000 ? String(r.count) : r.count < 1000000 ? Math.floor(r.count / 1000) + "k" : Math.floor(r.count / 1000000) + "M";
    el("text", { "class": "run-count", x: x(r.col), y: y(r.lane) + 3 }, world).textContent = n;
    drawn.runs++;
  });
  (data.bundles || []).forEach(function (b) {
    var x1 = x(b.from_col), y1 = y(b.from_lane), x2 = x(b.to_col), y2 = y(b.to_lane);
    var line = el("line", { "class": "bundle", x1: x1, y1: y1, x2: x2, y2: y2 }, world);
    tip(line, b.count + " " + b.kind + " edges, bundled");
    el("text", { "class": "bundle-count", x: (x1 + x2) / 2, y: (y1 + y2) / 2 - 3 }, world).textContent = String(b.count);
    drawn.bundles++;
  });
  data.arrows.forEach(function (a) {
    var f = data.nodes[a.from], t = data.nodes[a.to];
    var x1 = x(f.col), y1 = y(f.lane), x2 = x(t.col), y2 = y(t.lane);
    var dx = x2 - x1, dy = y2 - y1, len = Math.sqrt(dx * dx + dy * dy);
    if (len > 12) { x1 += 4 * dx / len; y1 += 4 * dy / len; x2 -= 5 * dx / len; y2 -= 5 * dy / len; }
    var cls = (a.kind === "message" ? "msg" : "sync-edge " + a.kind) + (a.dim ? " dim" : "");
    var line = el("line", { "class": cls, x1: x1, y1: y1, x2: x2, y2: y2, "marker-end": "url(#arrowhead)" }, world);
    tip(line, a.kind + ": " + f.label + " \u2192 " + t.label);
    if (a.kind === "message") { drawn.messages++; } else { drawn.syncs++; }
  });
  data.races.forEach(function (r) {
    var a = data.nodes[r.a], b = data.nodes[r.b];
    var line = el("line", { "class": "race-link", x1: x(a.col), y1: y(a.lane), x2: x(b.col), y2: y(b.lane) }, world);
    tip(line, r.kind + " race on " + r.var + " (" + r.count + " times)");
    drawn.races++;
  });
  data.nodes.forEach(function (n) {
    var dot = el("circle", { "class": "ev " + n["class"] + (n.dim ? " dim" : ""), cx: x(n.col), cy: y(n.lane), r: n["class"] === "race" ? 6 : 4 }, world);
    tip(dot, n.label);
    drawn.nodes++;
  });
  if (data.cut) {
    var pts = data.cut.cols.map(function (c, i) {
      return x(c) + "," + (y(i) - LANE / 2 + 4) + " " + x(c) + "," + (y(i) + LANE / 2 - 4);
    }).join(" ");
    var cut = el("polyline", { "class": "halt-cut", points: pts }, world);
    tip(cut, "halt: " + data.cut.predicate + (data.cut.consistent ? "" : " (inconsistent cut)"));
    el("text", { "class": "halt-label", x: x(data.cut.cols[0] || 0), y: 14 }, world).textContent = "halt: " + data.cut.predicate;
  }

  el("rect", { "class": "label-bg", x: 0, y: 0, width: LEFT - 8, height: "100%" }, labels);
  var labelNodes = data.lanes.map(function (lane) {
    var t = el("text", { "class": "proc-label", x: 8 }, labels);
    t.textContent = lane.name + " (p" + lane.pid + ")";
    return t;
  });

  var s = 1, tx = 0, ty = 0;
  function apply() {
    world.setAttribute("transform", "translate(" + (LEFT + tx) + "," + ty + ") scale(" + s + ")");
    labelNodes.forEach(function (t, i) { t.setAttribute("y", ty + y(i) * s + 4); });
  }
  function viewSize() {
    var r = svg.getBoundingClientRect();
    return { w: Math.max(1, r.width - LEFT), h: Math.max(1, r.height) };
  }
  function zoomAt(f, px, py) {
    var ns = Math.min(8, Math.max(0.01, s * f));
    f = ns / s;
    tx = px - (px - tx) * f;
    ty = py - (py - ty) * f;
    s = ns;
    apply();
  }
  function fit() {
    var v = viewSize();
    s = Math.min(1, (v.w - 10) / width, (v.h - 10) / height);
    tx = 0;
    ty = 0;
    apply();
  }
  function center() { var v = viewSize(); return [v.w / 2, v.h / 2]; }
  document.getElementById("zoom-in").onclick = function () { var c = center(); zoomAt(1.5, c[0], c[1]); };
  document.getElementById("zoom-out").onclick = function () { var c = center(); zoomAt(1 / 1.5, c[0], c[1]); };
  document.getElementById("fit").onclick = fit;
  document.getElementById("actual").onclick = function () { s = 1; tx = 0; ty = 0; apply(); };
  svg.addEventListener("wheel", function (e) {
    e.preventDefault();
    var r = svg.getBoundingClientRect();
    if (e.shiftKey || Math.abs(e.deltaX) > Math.abs(e.deltaY)) {
      tx -= e.deltaX || e.deltaY;
      apply();
    } else {
      zoomAt(Math.exp(-e.deltaY * 0.0015), e.clientX - r.left - LEFT, e.clientY - r.top);
    }
  }, { passive: false });
  var view = document.getElementById("view"), drag = null;
  svg.addEventListener("mousedown", function (e) {
    drag = { x: e.clientX, y: e.clientY, tx: tx, ty: ty };
    view.classList.add("dragging");
  });
  window.addEventListener("mousemove", function (e) {
    if (!drag) { return; }
    tx = drag.tx + e.clientX - drag.x;
    ty = drag.ty + e.clientY - drag.y;
    apply();
  });
  window.addEventListener("mouseup", function () { drag = null; view.classList.remove("dragging"); });
  window.addEventListener("keydown", function (e) {
    var c = center();
    if (e.key === "+" || e.key === "=") { zoomAt(1.5, c[0], c[1]); }
    else if (e.key === "-") { zoomAt(1 / 1.5, c[0], c[1]); }
    else if (e.key === "0") { fit(); }
    else if (e.key === "1") { s = 1; tx = 0; ty = 0; apply(); }
    else if (e.key === "ArrowLeft") { tx += 200; apply(); }
    else if (e.key === "ArrowRight") { tx -= 200; apply(); }
    else if (e.key === "ArrowUp") { ty += 100; apply(); }
    else if (e.key === "ArrowDown") { ty -= 100; apply(); }
  });

  var list = document.getElementById("race-list");
  if (data.races.length === 0) {
    list.textContent = "No races.";
  } else {
    var ul = document.createElement("ul");
    data.races.forEach(function (r) {
      var a = data.nodes[r.a], b = data.nodes[r.b];
      var li = document.createElement("li");
      li.textContent = r.kind + " race on " + r.var + " (" + r.count + "\u00d7): " + a.label + "  \u2194  " + b.label;
      li.onclick = function () {
        var v = viewSize();
        s = 1;
        tx = v.w / 2 - x((a.col + b.col) / 2);
        ty = Math.min(0, v.h / 2 - y((a.lane + b.lane) / 2));
        apply();
      };
      ul.appendChild(li);
    });
    list.appendChild(ul);
  }
  var notes = document.getElementById("left-out");
  (data.left_out || []).forEach(function (text) {
    var li = document.createElement("li");
    li.textContent = text;
    notes.appendChild(li);
  });
  var collapsed = data.runs.reduce(function (n, r) { return n + r.count; }, 0);
  document.getElementById("stats").textContent =
    data.lanes.length + " processes \u00b7 " + data.events + " events \u00b7 " + drawn.nodes + " shown, " +
    collapsed + " events in " + drawn.runs + " boxes \u00b7 " + drawn.messages + " messages \u00b7 " + drawn.bundles + " bundles \u00b7 " +
    drawn.syncs + " other edges \u00b7 " + drawn.races + " races";
  // Fit when that keeps dots visible; a very long run starts at its beginning, actual size.
  if (width / viewSize().w < 4) { fit(); } else { apply(); }
  for (var k in drawn) { svg.setAttribute("data-" + k, drawn[k]); }
  svg.setAttribute("data-drawn", "1");
})();
"#;

/// Renders the diagram as an HTML page.
pub fn render(d: &Diagram) -> String {
    // '<' only occurs inside JSON strings, where "\u003c" means the same: nothing in the data
    // can then close or open an element inside the <script>.
    let json = serde_json::to_string(d)
        .unwrap_or_else(|_| "{}".to_owned())
        .replace('<', "\\u003c");
    let constants = format!(
        "var COL = {COLUMN}, LANE = {LANE}, TOP = {TOP}, LEFT = {LEFT};",
        COLUMN = COLUMN,
        LANE = LANE,
        TOP = TOP,
        LEFT = LEFT
    );
    let script = SCRIPT.replacen(
        "\"use strict\";",
        &format!("\"use strict\";\n  {constants}"),
        1,
    );
    let title = escape(&d.title);
    format!(
        r##"<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>ppd: {title}</title>
<style>{PAGE_STYLE}{STYLE}</style>
</head>
<body>
<header>
<h1>{title}</h1>
<span id="stats"></span>
<span><button id="zoom-in" title="zoom in (+)">+</button><button id="zoom-out" title="zoom out (-)">&minus;</button><button id="fit" title="fit everything (0)">fit</button><button id="actual" title="actual size (1)">1:1</button></span>
<span class="legend"><i style="background:#2f6db5"></i>synchronization<i style="background:#7c8794"></i>local<i style="background:#d62828"></i>race<i style="background:#c08a00"></i>mark<i style="background:#333"></i>end<i style="border:2px solid #c2410c;width:6px;height:6px"></i>blocked<i style="background:#8a2be2;border-radius:0;width:3px"></i>halt cut</span>
</header>
<div id="view"><svg id="diagram" xmlns="http://www.w3.org/2000/svg"><defs><marker id="arrowhead" viewBox="0 0 8 8" refX="8" refY="4" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L8,4 L0,8 z" fill="#2f6db5"/></marker></defs><g id="world"></g><g id="labels"></g></svg></div>
<ul id="left-out"></ul>
<div id="race-list"></div>
<script type="application/json" id="ppd-data">{json}</script>
<script>{script}</script>
</body>
</html>
"##
    )
}

/// About how many bytes this rendering of a diagram of `size` takes (labels vary: within a
/// factor of two).
pub fn estimated_bytes(size: super::Size) -> u64 {
    160 * size.dots + 32 * size.arrows + 40 * size.runs + 4096
}
