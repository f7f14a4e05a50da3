"""A trace as one self-contained HTML file: tree, heatmap, order, task view, candidates
and inspector, stepped phase by phase -- no server, no network.

Everything is inlined: the trace's views precomputed per timeline position by the same
functions the app uses, vis-network from the installed pyvis package and plotly.js from
the installed plotly package. A teacher can put the file on a course page; an engineer
can attach it to a bug report. Every string from the trace reaches the page either
HTML-escaped (the views' fragments) or as data set with ``textContent``; the data travel
gzipped and base64-encoded inside a ``<script>`` element, so no token can close it.

    python -m medal export trace.json out.html
"""
from __future__ import annotations

import base64
import functools
import gzip
import json
import math
from dataclasses import dataclass
from pathlib import Path

from .board import task_view_html
from .candidates import candidate_table_html
from .common import esc, nodes_by_id, run_config, run_info
from .heatmap import entropy_grid
from .inspector import action_table, node_badges, node_label, node_stats, sequence_html
from .order import answer_end, order_html, order_summary
from .phases import current_phase, progress
from .timeline import positions, trace_at
from .tree import VIS_OPTIONS, layout, tree_view, vis_assets

EXPORT_MAX_NODES = 60       # tree nodes drawn per position (the most visited are kept)
INSPECTOR_MAX_NODES = 400   # nodes given an inspector card


# ---------------------------------------------------------------------- frames

def _grid_json(trace: dict, which: str) -> dict:
    g = entropy_grid(trace, which, show_padding=True)
    return {"title": g.title, "rows": [[None if v is None else round(v, 4) for v in r]
                                       for r in g.rows],
            "marks": g.marks, "y": g.row_labels, "x": g.slot_labels,
            "end": answer_end(trace, which)}


def _tree_json(trace: dict, xy: dict | None = None) -> dict:
    view = tree_view(trace, EXPORT_MAX_NODES, xy=xy)
    return {"nodes": view.nodes, "edges": view.edges, "total": view.total,
            "shown": view.shown}


def frame(trace: dict, index: int, timeline: list | None = None,
          xy: dict | None = None) -> dict:
    """Everything the exported page shows at position ``index`` of the run's timeline
    (:mod:`.timeline`, the same positions the app steps through; ``timeline``: those
    positions, when the caller has them already)."""
    timeline = positions(trace) if timeline is None else timeline
    pos = timeline[index]
    t = trace_at(trace, index, timeline)
    info = current_phase(t)
    frac, caption = progress(t)
    out = {"kind": pos.kind, "label": pos.label, "title": info.title, "detail": info.detail,
           "explanation": info.explanation, "iteration": info.iteration,
           "progress": 1.0 if pos.kind == "finished" else frac, "caption": caption,
           "order": order_html(t), "task": task_view_html(t) or "",
           "heat": [_grid_json(t, "medal")] + ([_grid_json(t, "greedy")]
                                                if t.get("comparison") else []),
           "tree": _tree_json(t, xy) if t.get("tree") else None,
           "candidates": (candidate_table_html(t)
                          if (t.get("search") or {}).get("winner") is not None else ""),
           "summary": order_summary(t) if pos.kind == "finished" else None}
    return out


def _finite(value):
    """A figure for the page's JSON: an unvisited node's infinite UCB is shown as "∞"
    (JSON has no infinity; allow_nan=False would refuse the whole page)."""
    if isinstance(value, float) and not math.isfinite(value):
        return "∞" if value > 0 else ("−∞" if value < 0 else None)
    return value


def _inspector_cards(trace: dict) -> dict[str, dict]:
    """Per node: its label, badges, sequence and action set (as at the end of the run)."""
    cards = {}
    for nid in sorted(nodes_by_id(trace))[:INSPECTOR_MAX_NODES]:
        stats = node_stats(trace, nid)
        cards[str(nid)] = {
            "label": node_label(trace, nid), "badges": node_badges(trace, nid),
            "sequence": sequence_html(trace, nid),
            "stats": {k: _finite(stats.get(k)) for k in ("N", "W", "Q", "UCB", "r_IG", "depth")},
            "actions": [{k: r[k] for k in ("rank", "slot", "token", "p", "H", "margin",
                                           "s (recomputed)", "child")}
                        for r in action_table(trace, nid)],
        }
    return cards


@functools.lru_cache(maxsize=1)
def plotly_js() -> str:
    """plotly.js as shipped inside the installed plotly package."""
    import plotly
    path = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing; reinstall plotly")
    return path.read_text(encoding="utf-8")


def _inline_js(code: str) -> str:
    """A library's code, safe inside <script>: no literal ``</script`` can end it early."""
    return code.replace("</script", "<\\/script")


def _grid_delta(prev: dict | None, grid: dict) -> dict:
    """A heatmap grid as the rows it adds to the same grid one position earlier: the
    rows so far are kept (``keep``), only new ones travel. Without this every position
    would carry every row so far -- a cost growing with the square of the positions."""
    if prev is None or prev["title"] != grid["title"]:
        return grid
    keep = 0
    for a, b, ma, mb, ya, yb in zip(prev["rows"], grid["rows"], prev["marks"], grid["marks"],
                                    prev["y"], grid["y"]):
        if a != b or ma != mb or ya != yb:
            break
        keep += 1
    return dict(grid, keep=keep, rows=grid["rows"][keep:], marks=grid["marks"][keep:],
                y=grid["y"][keep:])


def _tree_delta(prev: dict | None, tree: dict | None) -> dict | None:
    """A tree as the nodes that differ from the same tree one position earlier: ``ids``
    in drawing order, ``nodes`` only the changed ones (the page takes the others from
    the position before)."""
    if prev is None or tree is None:
        return tree
    before = {n["id"]: n for n in prev["nodes"]}
    changed = [n for n in tree["nodes"] if before.get(n["id"]) != n]
    return dict(tree, ids=[n["id"] for n in tree["nodes"]], nodes=changed)


def frame_deltas(trace: dict):
    """The frames of :func:`frame`, each holding only what changed since the one before
    (a key left out: as before; a heatmap: its new rows). The page rebuilds them."""
    timeline = positions(trace)
    xy = layout(trace)  # a node never moves as the tree grows: one layout for all
    prev = None
    for i in range(len(timeline)):
        full = frame(trace, i, timeline, xy)
        if prev is None:
            yield full
        else:
            out = {k: v for k, v in full.items() if k not in prev or prev[k] != v}
            if "heat" in out:
                out["heat"] = [_grid_delta(prev["heat"][k] if k < len(prev["heat"]) else None, g)
                               for k, g in enumerate(full["heat"])]
            if "tree" in out:
                out["tree"] = _tree_delta(prev["tree"], full["tree"])
            yield out
        prev = full


def rebuild_frames(deltas: list[dict]) -> list[dict]:
    """The full frames from :func:`frame_deltas`' output: what the page's script does on
    load (kept here in Python so the tests check that the two agree)."""
    out: list[dict] = []
    for i, d in enumerate(deltas):
        if not i:
            out.append(d)
            continue
        before = out[-1]
        f = {**before, **d}
        if "tree" in d and d["tree"] is not None and "ids" in d["tree"]:
            had = {n["id"]: n for n in (before["tree"] or {}).get("nodes", [])}
            had.update((n["id"], n) for n in d["tree"]["nodes"])
            f["tree"] = {k: v for k, v in d["tree"].items() if k != "ids"}
            f["tree"]["nodes"] = [had[i] for i in d["tree"]["ids"]]
        if "heat" in d:
            grids = []
            for k, g in enumerate(d["heat"]):
                if "keep" in g:
                    p, n = before["heat"][k], g["keep"]
                    g = {**{x: v for x, v in g.items() if x != "keep"},
                         "rows": p["rows"][:n] + g["rows"], "marks": p["marks"][:n] + g["marks"],
                         "y": p["y"][:n] + g["y"]}
                grids.append(g)
            f["heat"] = grids
        out.append(f)
    return out


def export_html(trace: dict) -> str:
    """The whole run as one HTML document."""
    frames = list(frame_deltas(trace))
    cfg = run_config(trace)
    model = run_info(trace, "model") or {}
    meta = {"strategy": run_info(trace, "strategy", ""), "prompt": run_info(trace, "prompt", ""),
            "model": model.get("name", ""),
            "config": {k: v for k, v in cfg.items() if not isinstance(v, (dict, list))}}
    data = {"frames": frames, "inspector": _inspector_cards(trace), "meta": meta,
            "vis_options": VIS_OPTIONS}
    vis_js, vis_css = vis_assets()
    title = f"MEDAL trace: {meta['strategy']} on {meta['prompt']}"
    # the views repeat themselves from one position to the next: gzip shrinks them ~20x
    # (the browser inflates them with its built-in DecompressionStream; no library)
    packed = base64.b64encode(gzip.compress(json.dumps(
        data, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode("utf-8"),
        mtime=0)).decode("ascii")
    return (_PAGE.replace("{{TITLE}}", esc(title[:200]))
            .replace("{{VIS_CSS}}", vis_css.replace("</style", "<\\/style"))
            .replace("{{DATA}}", packed)
            .replace("{{VIS_JS}}", _inline_js(vis_js))
            .replace("{{PLOTLY_JS}}", _inline_js(plotly_js())))


def write_html(trace: dict, path: str | Path) -> Path:
    path = Path(path)
    from ..files import write_atomic
    write_atomic(path, export_html(trace))
    return path


_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'unsafe-inline' 'unsafe-eval'; style-src 'unsafe-inline'; img-src data: blob:; font-src data:">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{TITLE}}</title>
<style>{{VIS_CSS}}</style>
<style>
body { font-family: system-ui, sans-serif; margin: 0; color: #222; }
header { padding: 10px 16px; background: #f6f6f6; border-bottom: 1px solid #ddd; }
header h1 { font-size: 18px; margin: 0 0 4px 0; }
#meta { font-size: 13px; color: #555; line-height: 1.9; }
#meta code { background: #fff; padding: 1px 4px; border: 1px solid #ddd; }
#controls { display: flex; gap: 8px; align-items: center; flex-wrap: wrap; padding: 8px 16px;
  position: sticky; top: 0; background: #fff; border-bottom: 1px solid #eee; z-index: 5; }
#controls button { font-size: 14px; padding: 4px 10px; }
#pos { font-variant-numeric: tabular-nums; min-width: 8em; }
#bar { flex: 1; min-width: 120px; height: 8px; background: #eee; border-radius: 4px; }
#bar div { height: 8px; background: #ff7f0e; border-radius: 4px; width: 0; }
main { padding: 8px 16px; }
#phase h2 { font-size: 18px; margin: 6px 0 2px 0; }
#explanation { font-size: 14px; color: #333; margin: 2px 0; }
#detail { font-size: 13px; color: #666; font-family: monospace; white-space: pre-wrap; }
section { margin: 14px 0; }
section h3 { font-size: 15px; margin: 4px 0; border-bottom: 1px solid #eee; }
.cols { display: grid; grid-template-columns: minmax(0, 3fr) minmax(0, 2fr); gap: 16px; }
@media (max-width: 1100px) { .cols { grid-template-columns: minmax(0, 1fr); } }
#tree { height: 480px; border: 1px solid #e0e0e0; }
#inspector { font-size: 13px; }
#inspector table, table.cands, table.summary { border-collapse: collapse; font-size: 13px; }
#inspector td, #inspector th, table.cands td, table.cands th, table.summary td,
table.summary th { border: 1px solid #ddd; padding: 2px 6px; text-align: left; }
table.cands tr.win { background: #fff4e0; }
.mono { font-family: monospace; white-space: pre; }
.warn { background: #fff3cd; border: 1px solid #e0c36b; padding: 6px 8px; }
.muted { color: #777; }
div.vis-tooltip { font-size: 12px; max-width: 420px; white-space: normal; }
</style>
</head><body>
<header><h1>MEDAL Explorer — exported trace</h1><div id="meta"></div></header>
<div id="controls">
  <button id="first" title="first position (Home)">|◀ first</button>
  <button id="prev" title="previous (←)">◀ prev</button>
  <button id="play" title="play / pause (space)">▶ play</button>
  <button id="next" title="next (→)">next ▶</button>
  <button id="last" title="last position (End)">last ▶|</button>
  <label>speed <select id="speed"><option value="1000">1/s</option>
    <option value="400" selected>2.5/s</option><option value="150">7/s</option></select></label>
  <span id="pos"></span><div id="bar"><div></div></div>
</div>
<main>
<div id="phase"><h2 id="title"></h2><div id="explanation"></div><div id="detail"></div></div>
<section id="task-section"><h3>Answer</h3><div id="task"></div></section>
<div class="cols">
 <section><h3>Search tree <span class="muted" id="tree-note"></span></h3><div id="tree"></div>
  <div class="muted" style="font-size:12px">Click a node to inspect it; scroll to zoom, drag to pan.</div></section>
 <section><h3>Inspector</h3><div id="inspector"><p class="muted">Click a node in the tree.</p></div></section>
</div>
<section><h3>Candidates</h3><div id="candidates"></div></section>
<section><h3>Entropy per slot and step</h3>
 <label><input type="checkbox" id="padding"> show the padding after the end of the answer</label>
 <div id="heat"></div></section>
<section><h3>Unmasking order</h3><div id="order"></div><div id="summary"></div></section>
</main>
<script>{{PLOTLY_JS}}</script>
<script>{{VIS_JS}}</script>
<script id="medal-data" type="application/gzip;base64">{{DATA}}</script>
<script>
function medalUnpack() {
  var b64 = document.getElementById("medal-data").textContent.trim();
  var bin = atob(b64), bytes = new Uint8Array(bin.length);
  for (var i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
  var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
  return new Response(stream).text().then(JSON.parse);
}
medalUnpack().then(function (data) {
  "use strict";
  var frames = data.frames, cards = data.inspector;
  // each frame holds what changed since the one before: fill in the rest (shared, not
  // copied) and join each heatmap's kept rows with its new ones
  frames.forEach(function (f, i) {
    if (!i) return;
    var before = frames[i - 1];
    Object.keys(before).forEach(function (k) { if (!(k in f)) f[k] = before[k]; });
    if (f.tree && f.tree.ids) {
      var had = {};
      (before.tree ? before.tree.nodes : []).forEach(function (n) { had[n.id] = n; });
      f.tree.nodes.forEach(function (n) { had[n.id] = n; });
      f.tree.nodes = f.tree.ids.map(function (id) { return had[id]; });
      delete f.tree.ids;
    }
    f.heat.forEach(function (g, k) {
      if (g.keep === undefined) return;
      var p = before.heat[k];
      g.rows = p.rows.slice(0, g.keep).concat(g.rows);
      g.marks = p.marks.slice(0, g.keep).concat(g.marks);
      g.y = p.y.slice(0, g.keep).concat(g.y);
      delete g.keep;
    });
  });
  var pos = frames.length - 1, timer = null, selected = null;
  function el(id) { return document.getElementById(id); }
  function text(id, value) { el(id).textContent = value == null ? "" : String(value); }
  function fmt(v) { return (typeof v === "number") ? (Number.isInteger(v) ? String(v) : v.toFixed(4)) : (v == null ? "—" : String(v)); }

  // run metadata: plain text only
  var meta = el("meta");
  function metaPart(label, value) {
    var s = document.createElement("span"); s.textContent = label + ": ";
    var c = document.createElement("code"); c.textContent = value; s.appendChild(c);
    s.appendChild(document.createTextNode("  ")); meta.appendChild(s);
  }
  metaPart("strategy", data.meta.strategy); metaPart("model", data.meta.model);
  metaPart("prompt", data.meta.prompt);
  var cfg = data.meta.config, keys = Object.keys(cfg);
  metaPart("parameters", keys.map(function (k) { return k + "=" + cfg[k]; }).join(" "));

  // the tree: one network, its data sets updated in place (zoom and pan are kept)
  var nodes = new vis.DataSet([]), edges = new vis.DataSet([]);
  var network = null;
  if (frames.some(function (f) { return f.tree; })) {
    network = new vis.Network(el("tree"), {nodes: nodes, edges: edges}, data.vis_options);
    network.on("click", function (params) {
      if (params.nodes.length && typeof params.nodes[0] === "number") inspect(params.nodes[0]);
    });
    network.on("afterDrawing", function () { el("tree").setAttribute("data-drawn", String(pos)); });
  } else {
    el("tree").textContent = "This strategy builds no search tree.";
    el("tree").style.height = "auto";
  }
  function tooltip(n) {
    if (typeof n.title === "string") { var d = document.createElement("div"); d.innerHTML = n.title; n.title = d; }
    return n;  // n.title was built from escaped text only
  }
  function drawTree(f) {
    if (!network) return;
    var t = f.tree || {nodes: [], edges: [], total: 0, shown: 0};
    var want = {}; t.nodes.forEach(function (n) { want[n.id] = true; });
    nodes.remove(nodes.getIds().filter(function (id) { return !want[id]; }));
    nodes.update(t.nodes.map(function (n) { return tooltip(Object.assign({}, n)); }));
    var ew = {}; t.edges.forEach(function (e) { e.id = e.from + ">" + e.to; ew[e.id] = true; });
    edges.remove(edges.getIds().filter(function (id) { return !ew[id]; }));
    edges.update(t.edges);
    text("tree-note", t.total ? ("(" + t.shown + " of " + t.total + " nodes drawn)") : "");
  }

  function inspect(id) {
    selected = id;
    var card = cards[String(id)], box = el("inspector");
    box.textContent = "";
    if (!card) { box.textContent = "No inspector card for node " + id + "."; return; }
    var h = document.createElement("div"); h.style.fontWeight = "600"; h.textContent = card.label; box.appendChild(h);
    var b = document.createElement("div"); b.className = "muted"; b.textContent = card.badges; box.appendChild(b);
    var f = frames[pos], now = null;
    if (f.tree) f.tree.nodes.forEach(function (n) { if (n.id === id) now = n; });
    var st = document.createElement("table"), tr = document.createElement("tr"), tr2 = document.createElement("tr");
    ["N", "W", "Q", "UCB", "r_IG", "depth"].forEach(function (k) {
      var th = document.createElement("th"); th.textContent = k; tr.appendChild(th);
      var td = document.createElement("td"); td.textContent = fmt(card.stats[k]); tr2.appendChild(td);
    });
    st.appendChild(tr); st.appendChild(tr2);
    var cap = document.createElement("div"); cap.className = "muted";
    cap.textContent = "figures at the end of the run" + (now ? "" : " (this node does not exist yet at this position, or is not drawn)");
    box.appendChild(cap); box.appendChild(st);
    var seq = document.createElement("div"); seq.innerHTML = card.sequence; box.appendChild(seq);  // escaped by Python
    if (card.actions.length) {
      var at = document.createElement("table"), head = document.createElement("tr");
      var cols = Object.keys(card.actions[0]);
      cols.forEach(function (k) { var th = document.createElement("th"); th.textContent = k; head.appendChild(th); });
      at.appendChild(head);
      card.actions.forEach(function (r) {
        var row = document.createElement("tr");
        cols.forEach(function (k) { var td = document.createElement("td"); td.textContent = fmt(r[k]); row.appendChild(td); });
        at.appendChild(row);
      });
      var cap2 = document.createElement("div"); cap2.style.fontWeight = "600"; cap2.textContent = "action set";
      box.appendChild(cap2); box.appendChild(at);
    }
    if (network && nodes.get(id)) network.selectNodes([id]);
  }

  function drawHeat(f) {
    var full = el("padding").checked, traces = [], layout = {annotations: [], height: 0,
      margin: {l: 70, r: 20, t: 30, b: 60}, plot_bgcolor: "#f7f7f7",
      coloraxis: {colorscale: "Viridis", cmin: 0, colorbar: {title: {text: "entropy H"}}}};
    var zmax = 0, nrows = 1, n = f.heat.length, gap = 0.08, w = (1 - gap * (n - 1)) / n;
    f.heat.forEach(function (g, k) {
      var keep = (full || g.end == null) ? g.x.length : g.end + 1;
      var rows = g.rows.map(function (r) { return r.slice(0, keep); });
      rows.forEach(function (r) { r.forEach(function (v) { if (v != null && v > zmax) zmax = v; }); });
      nrows = Math.max(nrows, rows.length);
      var sx = k ? String(k + 1) : "";
      traces.push({type: "heatmap", z: rows.length ? rows : [g.x.slice(0, keep).map(function () { return null; })],
        x: g.x.slice(0, keep), y: g.y.length ? g.y : ["(no step yet)"],
        text: g.marks.map(function (m) { return m.slice(0, keep); }), texttemplate: "%{text}",
        coloraxis: "coloraxis", xgap: 1, ygap: 1, xaxis: "x" + sx, yaxis: "y" + sx,
        hovertemplate: "%{y}<br>slot %{x}<br>H = %{z:.3f}<extra></extra>"});
      var hidden = g.x.length - keep;
      layout["xaxis" + sx] = {domain: [k * (w + gap), k * (w + gap) + w], anchor: "y" + sx, type: "category",
        tickangle: 0, automargin: true, tickfont: {size: 10},
        title: {text: "slot / token" + (hidden ? " (" + hidden + " padding slots hidden)" : "")}};
      layout["yaxis" + sx] = {anchor: "x" + sx, type: "category", autorange: "reversed", automargin: true,
        tickfont: {size: 10}};
      layout.annotations.push({text: g.title, x: k * (w + gap) + w / 2, y: 1, xref: "paper", yref: "paper",
        xanchor: "center", yanchor: "bottom", showarrow: false, font: {size: 14}});
    });
    layout.coloraxis.cmax = zmax || 1;
    layout.height = Math.max(260, 140 + 17 * nrows);
    Plotly.react(el("heat"), traces, layout, {displaylogo: false, responsive: true});
  }

  function drawSummary(f) {
    var box = el("summary"); box.textContent = "";
    if (!f.summary) return;
    var t = document.createElement("table"); t.className = "summary";
    var cols = Object.keys(f.summary[0] || {}), head = document.createElement("tr");
    cols.forEach(function (k) { var th = document.createElement("th"); th.textContent = k; head.appendChild(th); });
    t.appendChild(head);
    f.summary.forEach(function (r) {
      var row = document.createElement("tr");
      cols.forEach(function (k) { var td = document.createElement("td"); td.textContent = fmt(r[k]); row.appendChild(td); });
      t.appendChild(row);
    });
    box.appendChild(t);
  }

  function show(i) {
    pos = Math.max(0, Math.min(frames.length - 1, i));
    var f = frames[pos];
    text("title", f.title + (f.iteration ? " · iteration " + f.iteration : ""));
    text("explanation", f.explanation); text("detail", f.detail);
    text("pos", "position " + (pos + 1) + " of " + frames.length);
    el("pos").title = f.caption;
    el("bar").firstElementChild.style.width = Math.round(100 * f.progress) + "%";
    el("task").innerHTML = f.task;             // escaped by Python
    el("task-section").style.display = f.task ? "" : "none";
    el("order").innerHTML = f.order;           // escaped by Python
    el("candidates").innerHTML = f.candidates || '<p class="muted">The candidate choice comes after the search.</p>';
    drawTree(f); drawHeat(f); drawSummary(f);
    if (selected !== null) inspect(selected);
    document.body.setAttribute("data-position", String(pos));
  }

  function stop() { if (timer) { clearInterval(timer); timer = null; } text("play", "▶ play"); }
  function play() {
    if (timer) { stop(); return; }
    if (pos >= frames.length - 1) show(0);
    text("play", "⏸ pause");
    timer = setInterval(function () { if (pos >= frames.length - 1) stop(); else show(pos + 1); },
                        Number(el("speed").value));
  }
  el("first").onclick = function () { stop(); show(0); };
  el("prev").onclick = function () { stop(); show(pos - 1); };
  el("next").onclick = function () { stop(); show(pos + 1); };
  el("last").onclick = function () { stop(); show(frames.length - 1); };
  el("play").onclick = play;
  el("speed").onchange = function () { if (timer) { stop(); play(); } };
  el("padding").onchange = function () { drawHeat(frames[pos]); };
  document.addEventListener("keydown", function (e) {
    if (e.target && (e.target.tagName === "INPUT" || e.target.tagName === "SELECT")) return;
    if (e.key === "ArrowRight") { stop(); show(pos + 1); e.preventDefault(); }
    else if (e.key === "ArrowLeft") { stop(); show(pos - 1); e.preventDefault(); }
    else if (e.key === "Home") { stop(); show(0); e.preventDefault(); }
    else if (e.key === "End") { stop(); show(frames.length - 1); e.preventDefault(); }
    else if (e.key === " ") { play(); e.preventDefault(); }
  });
  window.medalExport = {show: show, frames: frames.length, position: function () { return pos; },
                        inspect: inspect, frame: function (i) { return frames[i]; }};
  show(pos);
  var winnerCard = Object.keys(cards).filter(function (k) { return cards[k].badges.indexOf("winning") >= 0; })[0];
  if (winnerCard !== undefined) inspect(Number(winnerCard));
}).catch(function (err) {
  document.getElementById("title").textContent =
    "This browser cannot open the page (" + err + "); use a current Chromium, Firefox or Safari.";
});
</script>
</body></html>
"""
