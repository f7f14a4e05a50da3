"""What the tree must show at a position, computed from the trace alone (not from the
viewer's frames), and the reading of what vis-network actually holds."""
from __future__ import annotations

import re

from medal.views.common import candidate_ids, current_path, node_path, nodes_by_id, winner_id
from medal.timeline import positions, trace_at
from medal.views.tree import CANDIDATE_COLOUR, NEW_COLOUR, PATH_COLOUR, WINNER_COLOUR

#: reads every drawn node's and edge's style out of the viewer's vis DataSets
READ = """(v) => ({pos: v.pos,
  nodes: v.nodes ? v.nodes.get().map(n => ({id: n.id, shape: n.shape, border: n.color.border,
      dashes: n.shapeProperties.borderDashes, label: n.label, font: n.font.size})) : [],
  edges: v.edges ? v.edges.get().map(e => ({from: e.from, to: e.to, colour: e.color.color,
      width: e.width})) : []})"""


def expected(trace: dict, index: int) -> dict:
    t = trace_at(trace, index)
    kind = positions(trace)[index].kind
    nodes = nodes_by_id(t)
    win = winner_id(t)
    path = node_path(nodes, win) if win is not None else current_path(t)
    its = t.get("iterations") or []
    new = set(its[-1]["expansion"]["children"]) if (
        kind in ("expansion", "simulation") and its and its[-1].get("expansion")) else set()
    return {"nodes": set(nodes), "path_edges": set(zip(path, path[1:])), "path": path,
            "N": {i: n.get("N") or 0 for i, n in nodes.items()},
            "parent": {i: n.get("parent") for i, n in nodes.items()},
            "colour": WINNER_COLOUR if win is not None else PATH_COLOUR, "winner": win,
            "candidates": set(candidate_ids(t)), "new": new}


def check(trace: dict, index: int, drawn: dict, where: str = "") -> None:
    """The drawn tree at ``index`` says exactly what the trace says."""
    want = expected(trace, index)
    at = f"{where} position {index}"
    assert drawn["pos"] == index, at
    real = {n["id"]: n for n in drawn["nodes"] if isinstance(n["id"], int)}
    assert set(real) <= want["nodes"], at
    missing = want["nodes"] - set(real)
    if missing:
        # A large tree: above 300 nodes the least visited are not drawn (a '+k' dot under
        # their nearest drawn ancestor counts them) and, above 300 drawn, low-visit leaves
        # fold into '+k' boxes (issue 28 #7). What matters is never among them, and every
        # node not drawn is counted where it would be.
        assert len(want["nodes"]) > 300, f"{at}: {len(missing)} of {len(want['nodes'])} not drawn"
        keep = set(want["path"]) | want["candidates"] | want["new"] | {want["winner"]}
        assert not (missing & keep), f"{at}: {sorted(missing & keep)} not drawn"
        counts = {}
        for i in missing:
            a = want["parent"][i]
            while a not in real:
                a = want["parent"][a]
            counts[a] = counts.get(a, 0) + 1
        said = {}
        for n in drawn["nodes"]:
            sid = str(n["id"])
            if sid.startswith("fold-"):
                a = int(sid.split("-")[1])
                said[a] = said.get(a, 0) + int(n["label"].lstrip("+"))
            elif isinstance(n["id"], int):          # '+k↓' on a drawn node's label
                m = re.search(r" \+(\d+)↓$", n["label"] or "", re.M)
                if m:
                    said[n["id"]] = said.get(n["id"], 0) + int(m.group(1))
        assert said == counts, f"{at}: '+k' marks {said}, nodes not drawn per ancestor {counts}"
    marked = {(e["from"], e["to"]) for e in drawn["edges"]
              if e["colour"] in (PATH_COLOUR, WINNER_COLOUR)}
    assert marked == want["path_edges"], f"{at}: highlighted edges {sorted(marked)}, path {want['path']}"
    for e in drawn["edges"]:
        if (e["from"], e["to"]) in want["path_edges"]:
            assert e["colour"] == want["colour"] and e["width"] == 4, at
        else:
            assert e["width"] < 2, at
    for nid, n in real.items():
        if nid == want["winner"]:
            assert n["shape"] == "star" and n["border"] == WINNER_COLOUR, at
        elif nid in want["candidates"]:
            assert n["shape"] == "diamond", at
        else:
            assert n["shape"] == "dot", at
        if nid in want["path"] and nid != want["winner"]:
            assert n["border"] == want["colour"], at
        assert bool(n["dashes"]) == (nid in want["new"]), at
        if nid in want["new"] and nid not in want["path"]:
            assert n["border"] == NEW_COLOUR, at
        elif nid in want["candidates"] and nid not in want["path"] and nid != want["winner"]:
            assert n["border"] == CANDIDATE_COLOUR, at
        assert n["label"].startswith(("#", "★#")), at           # node ids on the canvas


#: Issue 28 #1: what the canvas shows, not what vis-network holds. Goes to position ``i``,
#: waits for the step's drawing (two animation frames; a glide of the view to its end), then reads the canvas pixel at the
#: centre of every drawn tree node whose centre lies in the box: it must have the node's
#: own colour. Returns the nodes that are not painted, how many were looked at, and how
#: the view moved with the step ([screen px, zoom factor]; null without a tree before).
PIXELS = """async ([name, i]) => { const v = window[name] || globalThis.__medalViewer;
  const was = v.network ? [v.network.getViewPosition(), v.network.getScale()] : null;
  if (i !== null) v.go(i);
  await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
  let panned = false;     // a glide: its last move is drawn on the frame after it
  while (v.panning) { panned = true; await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r))); }
  if (panned) await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
  const net = v.network; if (!net || !v.nodes) return {miss: [], n: 0, move: null};
  const at = net.getViewPosition(), k = net.getScale();
  const move = was && v.network === net ? [Math.hypot(at.x - was[0].x, at.y - was[0].y) * k, k / was[1]] : null;
  const cv = v.el.treeBox.querySelector('canvas'), ctx = cv.getContext('2d');
  const W = v.el.treeBox.clientWidth, H = v.el.treeBox.clientHeight, rx = cv.width / cv.clientWidth;
  const miss = []; let seen = 0;
  for (const n of v.nodes.get()) { if (typeof n.id !== 'number') continue;
    const p = net.canvasToDOM({x: n.x, y: n.y});
    if (p.x < 3 || p.y < 3 || p.x > W - 3 || p.y > H - 3) continue;
    const d = ctx.getImageData(Math.round(p.x * rx), Math.round(p.y * rx), 1, 1).data;
    const want = n.color.background, w = [1, 3, 5].map(k => parseInt(want.substr(k, 2), 16));
    const off = Math.max(Math.abs(d[0] - w[0]), Math.abs(d[1] - w[1]), Math.abs(d[2] - w[2]));
    seen += 1; if (off > 24) miss.push([n.id, want, [d[0], d[1], d[2]]]); }
  return {miss: miss, n: seen, move: move}; }"""


def undrawn(pg, index: int | None, viewer: str = "medalViewer") -> dict:
    """``PIXELS`` at ``index`` (None: where the viewer is, the view as it is): {"miss":
    [[id, colour, pixel], ...], "n": nodes looked at, "move": [px, zoom] or None}."""
    return pg.evaluate(PIXELS, [viewer, index])

#: Steps forwards one position at a time from the start: each step's view movement
#: ms from medalViewer.go(i) to the second animation frame after it, for k forward steps
#: from n x start (scripts/bench_viewer.py, scripts/bench_view_moves.py)
STEPS = """([k, n, start]) => new Promise(done => {
    const v = medalViewer, out = []; let i = Math.max(0, Math.floor(n * start));
    v.go(i);
    function one() {
      if (out.length >= k || i >= n - 1) { done(out); return; }
      i += 1; const t = performance.now();
      v.go(i);
      requestAnimationFrame(() => requestAnimationFrame(() => {
        out.push(performance.now() - t); setTimeout(one, 30); }));
    }
    setTimeout(one, 300); })"""


#: [screen px the view's centre moved, zoom factor, the view's fastest in screen px per
#: 60 Hz frame (16.7 ms): a jump moves all the way in one frame, and at an expansion the
#: number of its new children not wholly on screen (node and label inside the tree's box;
#: -1 at any other position; issue 41 #4)], the view sampled at every animation frame
#: until any glide ends (issue 28 #3; scripts/bench_viewer.py prints it).
MOVES = """(n) => new Promise(done => {
    const off = (v) => { const hd = v.store.get(v.pos, 'h', '0') || {}, t = hd.tree || {};
      if (hd.kind !== 'expansion' || !(t.new || []).length) return [-1, 0];
      const box = v.box(); let k = 0, u = 0;
      for (const id of t.new) { const b = v.nodeBox(id);
        if (!b) { k += 1; continue; }
        const a = v.network.canvasToDOM({x: b.left, y: b.top}), z = v.network.canvasToDOM({x: b.right, y: b.bottom});
        if (a.x < -1 || a.y < -1 || z.x > box.w + 1 || z.y > box.h + 1) {
          k += 1; if (!v.el.away.querySelector('.mv-away-mark[data-id="' + id + '"]')) u += 1; } }
      return [k, u]; };
    const v = medalViewer, out = []; let i = 0; v.go(0);
    function one() {
      if (i >= n - 1) { done(out); return; }
      const net = v.network, was = net ? [net.getViewPosition(), net.getScale()] : null;
      let last = was ? was[0] : null, t = performance.now(), most = 0, frames = 0;
      i += 1; v.go(i);
      const sample = (now) => { const m = v.network;
        if (m && m === net && last) { const at = m.getViewPosition();
          const d = Math.hypot(at.x - last.x, at.y - last.y) * m.getScale();
          most = Math.max(most, d / Math.max(8, now - t) * 16.7); last = at; t = now; }
        frames += 1;
        if (v.panning || frames < 3) { requestAnimationFrame(sample); return; }
        if (was && m === net) { const at = m.getViewPosition(), k = m.getScale();
          out.push([Math.hypot(at.x - was[0].x, at.y - was[0].y) * k, k / was[1], most].concat(off(v))); }
        one(); };
      requestAnimationFrame(sample); }
    setTimeout(one, 500); })"""


def open_offline(browser, path, viewport: dict, ready: str):
    """A saved page (an export, a comparison) opened from its file with every request off
    the machine blocked and counted; waits until ``ready`` (a JS expression) holds.
    Returns (context, page, blocked URLs, page errors)."""
    from pathlib import Path
    ctx = browser.new_context(viewport=viewport)
    blocked = []

    def route(r):
        if r.request.url.startswith(("file:", "data:", "blob:")):
            r.continue_()
        else:
            blocked.append(r.request.url)
            r.abort()

    ctx.route("**/*", route)
    pg = ctx.new_page()
    errors = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.goto(Path(path).as_uri())
    pg.wait_for_function(ready, timeout=60_000)
    return ctx, pg, blocked, errors



#: The map that Fit opens over a tree too large to read whole (issue 28): whether it is
#: shown, its canvas's box and the tree box's, every mark (id, x, y, radius) with the
#: pixels around its centre, the colour its node is drawn in, the labels placed (id, text,
#: box) and the label font, the key nodes (path, winner, candidates) and the drawn nodes.
MAP = """(name) => { const v = window[name] || globalThis.__medalViewer, cv = v.el.map;
  const shown = getComputedStyle(v.el.mapWrap).display !== 'none';
  if (!shown || !v.mapMarks) return {shown: shown};
  const ctx = cv.getContext('2d'), rx = cv.width / cv.clientWidth, r = cv.getBoundingClientRect();
  const tb = v.el.treeBox.getBoundingClientRect();
  const info = v.store.get(v.pos, 'h', '0').tree || {};
  const marks = v.mapMarks.map(mk => { const px = [];
    for (let dx = -1; dx <= 1; dx++) for (let dy = -1; dy <= 1; dy++) {
      const d = ctx.getImageData(Math.round((mk[1] + dx) * rx), Math.round((mk[2] + dy) * rx), 1, 1).data;
      px.push([d[0], d[1], d[2]]); }
    const n = v.nodes.get(mk[0]);
    return {id: mk[0], x: mk[1], y: mk[2], r: mk[3], px: px, colour: n ? n.color.background : null}; });
  return {shown: true, pos: v.pos, at: v.mapAt, W: cv.clientWidth, H: cv.clientHeight,
    rect: [r.left, r.top, r.width, r.height], box: [tb.left, tb.top, tb.width, tb.height],
    marks: marks, font: parseFloat(ctx.font), drawn: v.nodes.getIds(),
    labels: v.mapLabels.map(l => ({id: l[0], text: l[1], l: l[2].l, r: l[2].r, t: l[2].t, b: l[2].b})),
    path: info.path || [], winner: info.winner, candidates: info.candidates || [],
    note: v.el.mapNote.textContent}; }"""

GREY_MARK = "#9a9a9a"     # a fold box's or a '+k' mark's square on the map


def _near_colour(px: list, colour: str, tol: int = 24) -> bool:
    want = [int(colour[k:k + 2], 16) for k in (1, 3, 5)]
    return any(max(abs(a - b) for a, b in zip(p, want)) <= tol for p in px)


def check_map(m: dict, where: str = "") -> int:
    """The map says what the tree holds, readably: shown over the whole tree box; a mark for
    every node drawn, inside it; each mark that nothing covers painted in its node's colour
    (a fold box or '+k' mark grey); labels >= 12 px, inside, never over one another or
    over another node's mark;
    the current node, the path, the winner and the candidates all labelled; depths >= 24 px
    apart. Returns how many marks were checked by their pixels."""
    assert m["shown"], f"{where}: no map"
    assert m["at"] == m["pos"], f"{where}: the map is of position {m['at']}, the viewer at {m['pos']}"
    assert all(abs(a - b) <= 2 for a, b in zip(m["rect"], m["box"])), (where, m["rect"], m["box"])
    ids = [mk["id"] for mk in m["marks"]]
    assert sorted(map(str, ids)) == sorted(map(str, m["drawn"])), f"{where}: marks != nodes drawn"
    W, H = m["W"], m["H"]
    for mk in m["marks"]:
        assert 0 <= mk["x"] <= W and 0 <= mk["y"] <= H, f"{where}: #{mk['id']} at {mk['x']},{mk['y']} off the map"
    labels = m["labels"]
    assert m["font"] >= 12, (where, m["font"])
    for a in labels:
        assert a["l"] >= 0 and a["r"] <= W and a["t"] >= 0 and a["b"] <= H, f"{where}: label {a} off the map"
        assert a["b"] - a["t"] >= 12, a
    for j, a in enumerate(labels):
        for b in labels[j + 1:]:
            assert not (a["l"] < b["r"] - 0.5 and b["l"] < a["r"] - 0.5 and a["t"] < b["b"] - 0.5
                        and b["t"] < a["b"] - 0.5), f"{where}: labels overlap: {a} {b}"
    for a in labels:
        under = [mk["id"] for mk in m["marks"] if mk["id"] != a["id"] and
                 a["l"] < mk["x"] < a["r"] and a["t"] < mk["y"] < a["b"]]
        assert under == [], f"{where}: label {a['text']!r} covers nodes {under}"
    named = {a["id"] for a in labels}
    key = set(m["path"]) | set(m["candidates"]) | ({m["winner"]} if m["winner"] is not None else set())
    assert key <= named, f"{where}: key nodes {sorted(key - named)} not labelled"
    ys = sorted({round(mk["y"], 1) for mk in m["marks"] if isinstance(mk["id"], int)})
    gaps = [b - a for a, b in zip(ys, ys[1:])]
    assert not gaps or min(gaps) >= 24, f"{where}: depths {min(gaps):.1f} px apart"
    checked = 0
    for mk in m["marks"]:
        covered = any(o is not mk and o["id"] != mk["id"] and
                      (o["x"] - mk["x"]) ** 2 + (o["y"] - mk["y"]) ** 2 <= (o["r"] + 2) ** 2
                      for o in m["marks"])
        if covered:
            continue
        colour = mk["colour"] if isinstance(mk["id"], int) else GREY_MARK
        assert _near_colour(mk["px"], colour), f"{where}: #{mk['id']} not painted {colour}: {mk['px'][4]}"
        checked += 1
    return checked
