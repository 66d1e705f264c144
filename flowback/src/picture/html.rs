//! The diagram as one self-contained HTML page: the laid-out model as JSON, and a script that
//! draws it on a canvas with Lamport time across, as the exports place events. It opens on the
//! whole run: each line shows how many events its process has at each time (the density
//! [`super::Density`] counts every event, whatever the overview left out), where the races,
//! panicked and blocked ends and marks are, and the halt cut; zooming in (wheel, `+`/`-`, `w`/`s`,
//! buttons) brings out the boxes, dots and arrows, panning (drag, arrows, `a`/`d`) moves along
//! the run, and the axis above labels the Lamport times in view at every zoom. The lines' names
//! stay in a column of their own, one line of text each. A view is named in the address
//! (`#from=T&to=T`), so it can be reopened, and the page says which `ppd graph --from --to`
//! draws it in detail. No external resources: it opens from a file, offline.
//!
//! After each drawing the script marks the `<canvas id="diagram">` element with `data-drawn` and
//! what it drew in view (`data-lines`, `data-nodes`, `data-runs`, `data-messages`, `data-syncs`,
//! `data-bundles`, `data-races`, `data-landmarks`, `data-cut`; `data-edges-hidden`, the edges
//! in view when they are more than the view is pixels wide, which are then not drawn, and
//! `data-vague`, the bundles not drawn because an end is a box many pixels long), the Lamport
//! times at its edges (`data-view-from`,
//! `data-view-to`), where it is on the page (`data-plot`: left, top, right, bottom) and, per
//! line, its colour and the height of its middle (`data-lane-colours`, `data-lane-ys`), so a
//! headless browser can check the picture and its screenshot.

use super::{Diagram, escape};

/// Width of the column of the lines' names, in pixels.
const LABELS: u32 = 170;
/// Pixels per Lamport time at the zoom `1:1` and a race from the list are shown at: a dot and
/// its box side by side.
const DETAIL: u32 = 28;
/// Height of the time axis, in pixels.
const AXIS: u32 = 26;

const PAGE_STYLE: &str = "\
body{margin:0;font:13px sans-serif;color:#222;background:#f6f7f9}\
header{padding:8px 12px;background:#fff;border-bottom:1px solid #dde;display:flex;gap:14px;\
align-items:center;flex-wrap:wrap}\
header h1{font-size:15px;margin:0}\
#stats{color:#555}\
button{font:13px sans-serif;padding:1px 8px;margin-right:2px}\
.legend i{display:inline-block;width:10px;height:10px;border-radius:5px;margin:0 4px 0 10px}\
#where{padding:4px 12px;background:#fff;border-bottom:1px solid #eef;color:#444;min-height:16px}\
#where code{background:#f0f2f5;padding:0 4px}\
#view{position:relative;height:calc(100vh - 200px);min-height:260px;background:#fff;cursor:grab;\
overflow:hidden;user-select:none}\
#view.dragging{cursor:grabbing}\
#corner{position:absolute;left:0;top:0;width:LABELSpx;height:AXISpx;box-sizing:border-box;\
padding:6px 8px;font-size:11px;color:#667;border-bottom:1px solid #ccd;border-right:1px solid #e3e6ea}\
#axis{position:absolute;left:LABELSpx;right:0;top:0;height:AXISpx;overflow:hidden;\
border-bottom:1px solid #ccd;background:#fff}\
.tick{position:absolute;top:0;height:AXISpx;box-sizing:border-box;border-left:1px solid #8a93a0;\
padding:6px 0 0 3px;font:11px sans-serif;color:#222;white-space:nowrap}\
#labels{position:absolute;left:0;top:AXISpx;bottom:0;width:LABELSpx;overflow:hidden;\
background:#fff;border-right:1px solid #e3e6ea}\
.lane-label{position:absolute;left:8px;right:6px;height:16px;line-height:16px;font:12px sans-serif;\
white-space:nowrap;overflow:hidden;text-overflow:ellipsis}\
.lane-label i{display:inline-block;width:8px;height:8px;margin-right:5px;border-radius:2px}\
#diagram{position:absolute;left:LABELSpx;top:AXISpx;right:0;bottom:0;width:calc(100% - LABELSpx);\
height:calc(100% - AXISpx)}\
#tip{position:absolute;pointer-events:none;background:#fffff4;border:1px solid #aa9;padding:3px 6px;\
font:12px sans-serif;max-width:560px;z-index:5;box-shadow:0 1px 3px rgba(0,0,0,.2)}\
#race-list{padding:6px 12px;max-height:120px;overflow:auto;border-top:1px solid #dde;background:#fff}\
#race-list li{cursor:pointer;margin:2px 0}\
#race-list li:hover{text-decoration:underline}\
#left-out{margin:0;padding:4px 12px 4px 28px;color:#8a4b00;background:#fff8ec}\
#left-out:empty{display:none}";

const SCRIPT: &str = r###"
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("ppd-data").textContent);
  var canvas = document.getElementById("diagram");
  var ctx = canvas.getContext("2d");
  var view = document.getElementById("view");
  var axis = document.getElementById("axis");
  var labels = document.getElementById("labels");
  var tip = document.getElementById("tip");
  var where = document.getElementById("where");
  // Pastel lane colours for the density, dark class colours for the dots on top of them.
  var PALETTE = ["#8fb3e8", "#f0b27a", "#8fd19e", "#e89a9a", "#b9a3e3", "#7fcfcf", "#e3a6cf", "#c9c46f", "#a9b8c9", "#d9b08c"];
  var FILL = { sync: "#2f6db5", local: "#7c8794", mark: "#c08a00", end: "#333333", blocked: "#ffffff", race: "#d62828" };
  var RANK = { local: 0, sync: 1, mark: 2, end: 3, blocked: 4, race: 5 };
  var MARKER = { race: "#d62828", panic: "#111111", blocked: "#c2410c", mark: "#c08a00" };
  var ZOOM_MAX = 64, LANE_MAX = 48, LANE_MIN = 22, MARKS = 8, EDGES = 8000;
  var lanes = data.lanes, L = lanes.length;
  var span = data.span || [0, 0];
  var T0 = span[0] - 0.5, T1 = span[1] + 0.5;
  var density = data.density || { from: 0, width: 1, lanes: [] };
  var densityMax = 1;
  density.lanes.forEach(function (bins) { bins.forEach(function (c) { if (c > densityMax) { densityMax = c; } }); });

  // Each line's dots and boxes in time order, for what is in view and what is under the mouse.
  function byLane(items, key) {
    var out = [];
    for (var i = 0; i < L; i++) { out.push([]); }
    items.forEach(function (item, i) { out[item.lane].push(i); });
    out.forEach(function (list) { list.sort(function (a, b) { return key(items[a]) - key(items[b]); }); });
    return out;
  }
  var laneNodes = byLane(data.nodes, function (n) { return n.time; });
  var laneRuns = byLane(data.runs, function (r) { return r.from; });
  function firstAtOrAfter(list, items, key, t) {
    var lo = 0, hi = list.length;
    while (lo < hi) { var mid = (lo + hi) >> 1; if (key(items[list[mid]]) < t) { lo = mid + 1; } else { hi = mid; } }
    return lo;
  }

  var labelNodes = lanes.map(function (lane, i) {
    var d = document.createElement("div");
    d.className = "lane-label";
    var swatch = document.createElement("i");
    swatch.style.background = PALETTE[i % PALETTE.length];
    d.appendChild(swatch);
    d.appendChild(document.createTextNode(lane.name + " (p" + lane.pid + ")"));
    d.title = lane.name + " (p" + lane.pid + "): " + lane.events + " events, " + lane.ending;
    labels.appendChild(d);
    return d;
  });

  var W = 1, H = 1, k = 1, t0 = T0, sy = 0, laneH = LANE_MAX;
  function X(t) { return (t - t0) * k; }
  function laneTop(i) { return 4 + i * laneH - sy; }
  function laneMid(i) { return laneTop(i) + MARKS + (laneH - MARKS) / 2; }
  function zoomMin() { return Math.min(ZOOM_MAX, W / (T1 - T0)); }
  function clampView() {
    k = Math.min(ZOOM_MAX, Math.max(zoomMin(), k));
    var shown = W / k, whole = T1 - T0;
    if (shown >= whole) { t0 = T0 - (shown - whole) / 2; } else { t0 = Math.min(T1 - shown, Math.max(T0, t0)); }
    sy = Math.min(Math.max(0, 8 + L * laneH - H), Math.max(0, sy));
  }
  function measure() {
    var r = canvas.getBoundingClientRect();
    var dpr = window.devicePixelRatio || 1;
    W = Math.max(1, r.width);
    H = Math.max(1, r.height);
    canvas.width = Math.round(W * dpr);
    canvas.height = Math.round(H * dpr);
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    laneH = Math.max(LANE_MIN, Math.min(LANE_MAX, Math.floor((H - 8) / Math.max(1, L))));
  }
  function fit() { k = zoomMin(); t0 = T0; sy = 0; clampView(); draw(); }
  function show(from, to) {
    k = W / Math.max(1, to - from + 1);
    t0 = from - 0.5;
    clampView();
    draw();
  }
  function zoomAt(f, px) {
    var t = t0 + px / k;
    k = k * f;
    clampView();
    t0 = t - px / k;
    clampView();
    draw();
  }
  function pan(dx, dy) { t0 -= dx / k; sy -= dy; clampView(); draw(); }

  // Tick spacing: 1, 2 or 5 times a power of ten Lamport times, about 110 pixels apart.
  function tickStep() {
    var raw = 110 / k, p = Math.pow(10, Math.floor(Math.log10(Math.max(raw, 1))));
    var steps = [1, 2, 5, 10];
    for (var i = 0; i < steps.length; i++) { if (steps[i] * p >= raw) { return Math.max(1, steps[i] * p); } }
    return 10 * p;
  }
  function drawAxis(ta, tb) {
    var step = tickStep();
    var ticks = [];
    axis.textContent = "";
    for (var t = Math.ceil(Math.max(ta, span[0]) / step) * step; t <= tb; t += step) {
      var d = document.createElement("div");
      d.className = "tick";
      d.style.left = X(t).toFixed(1) + "px";
      d.textContent = String(t);
      d.setAttribute("data-time", t);
      axis.appendChild(d);
      ticks.push(t);
    }
    return ticks;
  }

  function binX(b) { return X(density.from + b * density.width - 0.5); }
  function drawDensity(i, mid, half) {
    var bins = density.lanes[i] || [];
    if (!bins.length) { return; }
    var scale = Math.log(1 + densityMax);
    var first = Math.max(0, Math.floor((t0 - density.from) / density.width) - 1);
    var last = Math.min(bins.length - 1, Math.ceil((t0 + W / k - density.from) / density.width) + 1);
    // Zoomed in past the bins' resolution, the density fades behind what is drawn in detail.
    var binPx = density.width * k;
    ctx.globalAlpha = binPx <= 3 ? 1 : binPx >= 24 ? 0.3 : 1 - 0.7 * (binPx - 3) / 21;
    ctx.fillStyle = PALETTE[i % PALETTE.length];
    var px = -1, peak = 0;
    function flush() {
      if (peak > 0) {
        var h = Math.max(1.5, half * Math.log(1 + peak) / scale);
        ctx.fillRect(px, mid - h, 1, 2 * h);
      }
    }
    for (var b = first; b <= last; b++) {
      var c = bins[b];
      if (!c) { continue; }
      var xa = binX(b), xb = binX(b + 1);
      if (xb - xa >= 1) {
        var h = Math.max(1.5, half * Math.log(1 + c) / scale);
        var x0 = Math.round(xa);
        ctx.fillRect(x0, mid - h, Math.max(1, Math.round(xb) - x0), 2 * h);
      } else {
        var p = Math.floor(xa);
        if (p !== px) { flush(); px = p; peak = 0; }
        if (c > peak) { peak = c; }
      }
    }
    flush();
    ctx.globalAlpha = 1;
  }
  function drawMarker(kind, x, top) {
    ctx.fillStyle = MARKER[kind];
    ctx.beginPath();
    if (kind === "race") { ctx.moveTo(x - 4, top); ctx.lineTo(x + 4, top); ctx.lineTo(x, top + 6); }
    else if (kind === "mark") { ctx.moveTo(x, top); ctx.lineTo(x + 3, top + 3); ctx.lineTo(x, top + 6); ctx.lineTo(x - 3, top + 3); }
    else { ctx.rect(x - 3, top, 6, 6); }
    ctx.fill();
  }
  function arrowHead(x1, y1, x2, y2, colour) {
    var dx = x2 - x1, dy = y2 - y1, len = Math.sqrt(dx * dx + dy * dy);
    if (len < 10) { return; }
    var ux = dx / len, uy = dy / len;
    ctx.fillStyle = colour;
    ctx.beginPath();
    ctx.moveTo(x2, y2);
    ctx.lineTo(x2 - 7 * ux + 3 * uy, y2 - 7 * uy - 3 * ux);
    ctx.lineTo(x2 - 7 * ux - 3 * uy, y2 - 7 * uy + 3 * ux);
    ctx.fill();
  }
  function short(n) { return n < 1000 ? String(n) : n < 1000000 ? Math.floor(n / 1000) + "k" : Math.floor(n / 1000000) + "M"; }

  var drawn = {};
  function draw() {
    var ta = t0, tb = t0 + W / k;
    drawn = { lines: 0, nodes: 0, runs: 0, messages: 0, syncs: 0, bundles: 0, races: 0, landmarks: 0, edgesHidden: 0, vague: 0, cut: 0 };
    ctx.clearRect(0, 0, W, H);
    var ticks = drawAxis(ta, tb);
    ctx.strokeStyle = "#edf0f4";
    ctx.lineWidth = 1;
    ticks.forEach(function (t) { var x = Math.round(X(t)) + 0.5; ctx.beginPath(); ctx.moveTo(x, 0); ctx.lineTo(x, H); ctx.stroke(); });
    var r = Math.max(1.5, Math.min(4, k * 0.4));
    var visible = [];
    for (var i = 0; i < L; i++) {
      var top = laneTop(i), mid = laneMid(i);
      var onScreen = top + laneH > 0 && top < H;
      labelNodes[i].style.display = onScreen ? "" : "none";
      labelNodes[i].style.top = (mid - 8).toFixed(1) + "px";
      if (!onScreen) { continue; }
      visible.push(i);
      if (i % 2) { ctx.fillStyle = "#f7f8fa"; ctx.fillRect(0, top, W, laneH); }
      ctx.fillStyle = "#e3e7ec";
      ctx.fillRect(0, Math.round(top + laneH) - 1, W, 1);
      drawDensity(i, mid, (laneH - MARKS) / 2 - 2);
      var s = lanes[i].span;
      if (s) {
        ctx.strokeStyle = "#9aa3ad";
        ctx.lineWidth = 1.5;
        ctx.beginPath();
        ctx.moveTo(Math.max(-1, X(s[0])), mid);
        ctx.lineTo(Math.min(W + 1, X(s[1])), mid);
        ctx.stroke();
      }
      drawn.lines++;
      var runs = laneRuns[i];
      var boxH = Math.min(12, (laneH - MARKS) * 0.45);
      for (var j = firstAtOrAfter(runs, data.runs, function (b) { return b.to; }, ta - 1); j < runs.length; j++) {
        var run = data.runs[runs[j]];
        if (run.from > tb + 1) { break; }
        var xa = X(run.from - 0.5) + 1, xb = X(run.to + 0.5) - 1;
        if (xb - xa < 2) { var c = (xa + xb) / 2; xa = c - 1; xb = c + 1; }
        // A collapsed box lets the density it holds show through.
        ctx.fillStyle = run.hidden ? "rgba(213,225,240,.55)" : "#e4e8ec";
        ctx.strokeStyle = run.hidden ? "#2f6db5" : "#9aa3ad";
        ctx.lineWidth = 1;
        ctx.fillRect(xa, mid - boxH / 2, xb - xa, boxH);
        ctx.strokeRect(xa, mid - boxH / 2, xb - xa, boxH);
        if (xb - xa > 26 && boxH >= 10) {
          ctx.fillStyle = "#556";
          ctx.font = "9px sans-serif";
          ctx.textAlign = "center";
          ctx.fillText(short(run.count), (Math.max(xa, 0) + Math.min(xb, W)) / 2, mid + 3);
        }
        drawn.runs++;
      }
    }
    // Edges, when few enough to tell apart at this zoom.
    function inView(a, b) { return Math.max(a, b) >= ta - 1 && Math.min(a, b) <= tb + 1; }
    // A bundle's end in a box wider than this many pixels is nowhere in particular: such
    // bundles are drawn only zoomed out, or with the events in detail (`ppd graph --from --to`).
    var VAGUE = 60;
    function boxWidth(lane, t) {
      var runs = laneRuns[lane];
      var run = data.runs[runs[firstAtOrAfter(runs, data.runs, function (b) { return b.to; }, t)]];
      return run && run.from <= t ? (run.to - run.from + 1) * k : 0;
    }
    var bundles = (data.bundles || []).filter(function (b) {
      if (!inView(b.from_time, b.to_time)) { return false; }
      if (boxWidth(b.from_lane, b.from_time) > VAGUE || boxWidth(b.to_lane, b.to_time) > VAGUE) { drawn.vague++; return false; }
      return true;
    });
    var arrows = data.arrows.filter(function (a) { return inView(data.nodes[a.from].time, data.nodes[a.to].time); });
    // More edges than pixels across would only paint the view over.
    if (bundles.length + arrows.length > Math.min(EDGES, W)) {
      drawn.edgesHidden = bundles.length + arrows.length;
    } else {
      ctx.lineWidth = 4;
      ctx.strokeStyle = "rgba(47,109,181,.3)";
      bundles.forEach(function (b) {
        var x1 = X(b.from_time), y1 = laneMid(b.from_lane), x2 = X(b.to_time), y2 = laneMid(b.to_lane);
        ctx.beginPath(); ctx.moveTo(x1, y1); ctx.lineTo(x2, y2); ctx.stroke();
        if (Math.abs(x2 - x1) + Math.abs(y2 - y1) > 40) {
          ctx.fillStyle = "#1d4f8f"; ctx.font = "9px sans-serif"; ctx.textAlign = "center";
          ctx.fillText(String(b.count), (x1 + x2) / 2, (y1 + y2) / 2 - 3);
        }
        drawn.bundles++;
      });
      arrows.forEach(function (a) {
        var f = data.nodes[a.from], t = data.nodes[a.to];
        var x1 = X(f.time), y1 = laneMid(f.lane), x2 = X(t.time), y2 = laneMid(t.lane);
        var message = a.kind === "message";
        var colour = message ? "#2f6db5" : a.kind === "reads_from" ? "#8a4fbf" : "#6b7f99";
        ctx.globalAlpha = a.dim ? 0.15 : 1;
        ctx.strokeStyle = colour;
        ctx.lineWidth = message ? 1.4 : 1;
        ctx.setLineDash(message ? [] : a.kind === "reads_from" ? [1, 2] : [4, 2]);
        ctx.beginPath(); ctx.moveTo(x1, y1); ctx.lineTo(x2, y2); ctx.stroke();
        ctx.setLineDash([]);
        arrowHead(x1, y1, x2, y2, colour);
        ctx.globalAlpha = 1;
        if (message) { drawn.messages++; } else { drawn.syncs++; }
      });
    }
    ctx.strokeStyle = "#d62828";
    ctx.lineWidth = 2;
    ctx.setLineDash([5, 3]);
    data.races.forEach(function (rc) {
      var a = data.nodes[rc.a], b = data.nodes[rc.b];
      if (!inView(a.time, b.time)) { return; }
      ctx.beginPath(); ctx.moveTo(X(a.time), laneMid(a.lane)); ctx.lineTo(X(b.time), laneMid(b.lane)); ctx.stroke();
      drawn.races++;
    });
    ctx.setLineDash([]);
    // Dots: one per pixel and class, the more important drawn last, on top.
    visible.forEach(function (i) {
      var list = laneNodes[i], mid = laneMid(i);
      var seen = {};
      var order = [];
      for (var j = firstAtOrAfter(list, data.nodes, function (n) { return n.time; }, ta - 1); j < list.length; j++) {
        var n = data.nodes[list[j]];
        if (n.time > tb + 1) { break; }
        drawn.nodes++;
        var key = Math.round(X(n.time)) + n["class"] + (n.dim ? "d" : "");
        if (seen[key]) { continue; }
        seen[key] = true;
        order.push(n);
      }
      order.sort(function (a, b) { return RANK[a["class"]] - RANK[b["class"]]; });
      order.forEach(function (n) {
        var cls = n["class"], radius = cls === "race" ? r + 2 : r;
        ctx.globalAlpha = n.dim ? 0.15 : 1;
        ctx.beginPath();
        ctx.arc(X(n.time), mid, radius, 0, 2 * Math.PI);
        ctx.fillStyle = FILL[cls];
        ctx.fill();
        ctx.lineWidth = cls === "blocked" ? 2 : 1;
        ctx.strokeStyle = cls === "blocked" ? "#c2410c" : cls === "race" ? "#7f1010" : "#ffffff";
        if (radius > 2 || cls === "blocked") { ctx.stroke(); }
        ctx.globalAlpha = 1;
      });
    });
    // Where the events that matter are, at every zoom.
    // A marker where the bin is narrow; zoomed in past the bins, a strip over the stretch that
    // holds them.
    (data.landmarks || []).forEach(function (m) {
      if (visible.indexOf(m.lane) < 0) { return; }
      var top = laneTop(m.lane) + 1, last = -1;
      m.bins.forEach(function (bin) {
        var xa = binX(bin[0]), xb = binX(bin[0] + 1);
        if (xb < 0 || xa > W) { return; }
        if (xb - xa > 10) {
          ctx.globalAlpha = 0.35;
          ctx.fillStyle = MARKER[m.kind];
          ctx.fillRect(xa, top + 2, xb - xa, 2);
          ctx.globalAlpha = 1;
        } else {
          var x = Math.round((xa + xb) / 2);
          if (x === last) { return; }
          last = x;
          drawMarker(m.kind, x, top);
        }
        drawn.landmarks++;
      });
    });
    if (data.cut) {
      ctx.strokeStyle = "#8a2be2";
      ctx.lineWidth = 2.5;
      ctx.beginPath();
      data.cut.times.forEach(function (t, i) {
        var x = X(t);
        if (i === 0) { ctx.moveTo(x, laneTop(i) + MARKS); } else { ctx.lineTo(x, laneTop(i) + MARKS); }
        ctx.lineTo(x, laneTop(i) + laneH - 2);
      });
      ctx.stroke();
      ctx.fillStyle = "#8a2be2";
      ctx.font = "12px sans-serif";
      ctx.textAlign = "left";
      ctx.fillText(haltText, X(data.cut.times[0] || 0) + 4, laneTop(0) + 12);
      drawn.cut = 1;
    }
    describeView(ta, tb);
    mark(ta, tb);
  }

  var haltText = data.cut ? "halt: " + data.cut.predicate + (data.cut.consistent ? "" : " (inconsistent cut)") : "";
  function describeView(ta, tb) {
    var a = Math.max(span[0], Math.ceil(ta)), b = Math.min(span[1], Math.floor(tb));
    var text = data.span ? "Lamport times " + a + "\u2013" + b + " of " + span[0] + "\u2013" + span[1] : "Nothing to show.";
    where.textContent = text;
    if (data.overview && data.span) {
      where.appendChild(document.createTextNode(" \u00b7 an overview: "));
      var code = document.createElement("code");
      code.textContent = "ppd graph --from " + a + " --to " + b;
      where.appendChild(code);
      where.appendChild(document.createTextNode(" draws these times in detail"));
    }
    if (drawn.edgesHidden) {
      where.appendChild(document.createTextNode(" \u00b7 " + drawn.edgesHidden + " edges in view are not drawn at this zoom: zoom in"));
    }
    if (haltText) { where.appendChild(document.createTextNode(" \u00b7 " + haltText)); }
    if (drawn.vague) {
      where.appendChild(document.createTextNode(" \u00b7 " + drawn.vague + " bundles between long boxes are not drawn"));
    }
    try { history.replaceState(null, "", "#from=" + a + "&to=" + b); } catch (e) { /* a page without history */ }
  }

  function mark(ta, tb) {
    for (var key in drawn) { canvas.setAttribute("data-" + key.replace(/[A-Z]/g, function (c) { return "-" + c.toLowerCase(); }), drawn[key]); }
    var rect = canvas.getBoundingClientRect();
    canvas.setAttribute("data-view-from", ta.toFixed(2));
    canvas.setAttribute("data-view-to", tb.toFixed(2));
    canvas.setAttribute("data-plot", [rect.left, rect.top, rect.right, rect.bottom].map(function (v) { return v.toFixed(1); }).join(","));
    canvas.setAttribute("data-lane-colours", lanes.map(function (l, i) { return PALETTE[i % PALETTE.length]; }).join(","));
    canvas.setAttribute("data-lane-ys", lanes.map(function (l, i) { return (rect.top + laneMid(i)).toFixed(1); }).join(","));
    canvas.setAttribute("data-drawn", "1");
  }

  // What is under the mouse: a dot, a box, a marker, else the line's density there.
  function describeAt(px, py) {
    var lane = Math.floor((py + sy - 4) / laneH);
    if (lane < 0 || lane >= L) { return null; }
    var t = t0 + px / k, name = lanes[lane].name;
    var list = laneNodes[lane], best = null, bestDx = 7;
    for (var j = firstAtOrAfter(list, data.nodes, function (n) { return n.time; }, t - 7 / k - 1); j < list.length; j++) {
      var n = data.nodes[list[j]];
      var dx = Math.abs(X(n.time) - px);
      if (n.time > t + 7 / k + 1) { break; }
      if (dx < bestDx) { best = n; bestDx = dx; }
    }
    if (best) { return best.label + " (Lamport time " + best.time + ")"; }
    var runs = laneRuns[lane];
    var j = firstAtOrAfter(runs, data.runs, function (b) { return b.to; }, t - 0.5);
    var run = data.runs[runs[j]];
    if (run && run.from - 0.5 <= t) {
      var range = "#" + run.first + "\u2013#" + (run.first + run.count - 1) + ", Lamport times " + run.from + "\u2013" + run.to;
      return name + ": " + (run.hidden ? run.count + " events (" + range + ") collapsed, " + run.hidden + " of them synchronizing or marked"
        : run.count + " local events (" + range + ")");
    }
    var b = Math.floor((t + 0.5 - density.from) / density.width);
    var bins = density.lanes[lane] || [];
    var from = density.from + b * density.width, to = from + density.width - 1;
    var found = [];
    (data.landmarks || []).forEach(function (m) {
      if (m.lane !== lane) { return; }
      m.bins.forEach(function (bin) { if (Math.abs(binX(bin[0]) + (binX(bin[0] + 1) - binX(bin[0])) / 2 - px) < 5) { found.push(bin[1] + " " + m.kind + (bin[1] > 1 ? "s" : "")); } });
    });
    if (b >= 0 && b < bins.length && (bins[b] || found.length)) {
      return name + ": " + bins[b] + " events at Lamport times " + from + "\u2013" + to + (found.length ? " (" + found.join(", ") + ")" : "");
    }
    return null;
  }
  canvas.addEventListener("mousemove", function (e) {
    if (drag) { return; }
    var rect = canvas.getBoundingClientRect(), vr = view.getBoundingClientRect();
    var text = describeAt(e.clientX - rect.left, e.clientY - rect.top);
    if (!text) { tip.hidden = true; return; }
    tip.textContent = text;
    tip.hidden = false;
    tip.style.left = Math.min(vr.width - 300, e.clientX - vr.left + 14) + "px";
    tip.style.top = (e.clientY - vr.top + 14) + "px";
  });
  canvas.addEventListener("mouseleave", function () { tip.hidden = true; });

  document.getElementById("zoom-in").onclick = function () { zoomAt(1.5, W / 2); };
  document.getElementById("zoom-out").onclick = function () { zoomAt(1 / 1.5, W / 2); };
  document.getElementById("fit").onclick = fit;
  document.getElementById("actual").onclick = function () { zoomAt(DETAIL / k, W / 2); };
  canvas.addEventListener("wheel", function (e) {
    e.preventDefault();
    var rect = canvas.getBoundingClientRect();
    if (e.shiftKey || Math.abs(e.deltaX) > Math.abs(e.deltaY)) { pan(-(e.deltaX || e.deltaY), 0); }
    else { zoomAt(Math.exp(-e.deltaY * 0.0015), e.clientX - rect.left); }
  }, { passive: false });
  canvas.addEventListener("dblclick", function (e) { zoomAt(3, e.clientX - canvas.getBoundingClientRect().left); });
  var drag = null;
  canvas.addEventListener("mousedown", function (e) {
    drag = { x: e.clientX, y: e.clientY };
    tip.hidden = true;
    view.classList.add("dragging");
  });
  window.addEventListener("mousemove", function (e) {
    if (!drag) { return; }
    var dx = e.clientX - drag.x, dy = e.clientY - drag.y;
    drag = { x: e.clientX, y: e.clientY };
    pan(dx, dy);
  });
  window.addEventListener("mouseup", function () { drag = null; view.classList.remove("dragging"); });
  window.addEventListener("keydown", function (e) {
    if (e.key === "+" || e.key === "=" || e.key === "w") { zoomAt(1.5, W / 2); }
    else if (e.key === "-" || e.key === "s") { zoomAt(1 / 1.5, W / 2); }
    else if (e.key === "0") { fit(); }
    else if (e.key === "1") { zoomAt(DETAIL / k, W / 2); }
    else if (e.key === "ArrowLeft" || e.key === "a") { pan(W / 4, 0); }
    else if (e.key === "ArrowRight" || e.key === "d") { pan(-W / 4, 0); }
    else if (e.key === "ArrowUp") { pan(0, laneH * 2); }
    else if (e.key === "ArrowDown") { pan(0, -laneH * 2); }
  });
  window.addEventListener("resize", function () { measure(); clampView(); draw(); });

  var list = document.getElementById("race-list");
  if (data.races.length === 0) {
    list.textContent = "No races drawn.";
  } else {
    var ul = document.createElement("ul");
    data.races.forEach(function (rc) {
      var a = data.nodes[rc.a], b = data.nodes[rc.b];
      var li = document.createElement("li");
      li.textContent = rc.kind + " race on " + rc.var + " (" + rc.count + "\u00d7): " + a.label + "  \u2194  " + b.label;
      li.onclick = function () {
        var lo = Math.min(a.time, b.time), hi = Math.max(a.time, b.time);
        k = Math.min(DETAIL, W * 0.6 / Math.max(1, hi - lo));
        t0 = (lo + hi) / 2 - W / (2 * k);
        sy = Math.min(a.lane, b.lane) * laneH - laneH;
        clampView();
        draw();
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
  var messages = data.arrows.filter(function (a) { return a.kind === "message"; }).length;
  document.getElementById("stats").textContent =
    L + " processes \u00b7 " + data.events + " events \u00b7 " + data.nodes.length + " dots, " +
    collapsed + " events in " + data.runs.length + " boxes \u00b7 " + messages + " messages \u00b7 " +
    (data.bundles || []).length + " bundles \u00b7 " + (data.arrows.length - messages) + " other edges \u00b7 " +
    data.races.length + " races";

  measure();
  var asked = /#from=(\d+)&to=(\d+)/.exec(location.hash);
  if (asked && Number(asked[2]) >= Number(asked[1])) { show(Number(asked[1]), Number(asked[2])); } else { fit(); }
  window.addEventListener("hashchange", function () {
    var m = /#from=(\d+)&to=(\d+)/.exec(location.hash);
    if (m && Number(m[2]) >= Number(m[1])) { show(Number(m[1]), Number(m[2])); }
  });
})();
"###;

/// Renders the diagram as an HTML page.
pub fn render(d: &Diagram) -> String {
    // '<' only occurs inside JSON strings, where "\u003c" means the same: nothing in the data
    // can then close or open an element inside the <script>.
    let json = serde_json::to_string(d)
        .unwrap_or_else(|_| "{}".to_owned())
        .replace('<', "\\u003c");
    let script = SCRIPT.replacen(
        "\"use strict\";",
        &format!("\"use strict\";\n  var DETAIL = {DETAIL};"),
        1,
    );
    let style = PAGE_STYLE
        .replace("LABELSpx", &format!("{LABELS}px"))
        .replace("AXISpx", &format!("{AXIS}px"));
    let title = escape(&d.title);
    format!(
        r##"<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>ppd: {title}</title>
<style>{style}</style>
</head>
<body>
<header>
<h1>{title}</h1>
<span id="stats"></span>
<span><button id="zoom-in" title="zoom in (+, w)">+</button><button id="zoom-out" title="zoom out (-, s)">&minus;</button><button id="fit" title="the whole run (0)">fit</button><button id="actual" title="{detail} pixels a Lamport time (1)">1:1</button></span>
<span class="legend"><i style="background:#2f6db5"></i>synchronization<i style="background:#7c8794"></i>local<i style="background:#d62828"></i>race<i style="background:#c08a00"></i>mark<i style="background:#333"></i>end<i style="border:2px solid #c2410c;width:6px;height:6px"></i>blocked<i style="background:#8a2be2;border-radius:0;width:3px"></i>halt cut<i style="background:#8fb3e8;border-radius:0;height:6px"></i>events per time</span>
</header>
<div id="where"></div>
<div id="view"><div id="corner">Lamport time</div><div id="axis"></div><div id="labels"></div><canvas id="diagram"></canvas><div id="tip" hidden></div></div>
<ul id="left-out"></ul>
<div id="race-list"></div>
<script type="application/json" id="ppd-data">{json}</script>
<script>{script}</script>
</body>
</html>
"##,
        detail = DETAIL
    )
}

/// About how many bytes this rendering of a diagram of `size` takes (labels vary: within a
/// factor of two).
pub fn estimated_bytes(size: super::Size) -> u64 {
    170 * size.dots + 32 * size.arrows + 60 * size.runs + 2 * size.cells + 24_000
}
