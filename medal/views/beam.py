"""The beam view (issue 38, item 4): an Order-Token Search or SOAR run's beam tree as data.

Pure: a trace in (its ``result.beam_search``, :meth:`medal.search.BeamOutcome.to_json`),
the drawing out -- every node's place, label, colours and tooltip lines, every edge, the
winner's path, and for every timeline position the winner-path node its decode step
replays. The browser (``medal/viewer/viewer-beam.js``) draws these with vis-network as
given; every figure (score, block score, p) is the trace's, formatted here. Strings from
the trace stay plain text: the viewer writes them with ``textContent`` and draws labels
on the canvas with markup off.

Layout: left to right, one column a search step (a node's step is its depth: a beam that
still has masks was made at the step before; a search has more steps than beams, so the
tree is wider than tall), the winner's path as a straight row at y = 0, each column's other
nodes below it in the order of their parents' rows (kept before pruned).
"""
from __future__ import annotations

from ..timeline import positions
from .common import fmt, visible_token

#: px between steps (columns) and between a step's nodes (rows)
STEP_GAP, ROW_GAP = 150, 95
#: committed tokens shown on a label (the rest: "+k")
LABEL_TOKENS = 3
LABEL_TOKEN_CHARS = 8
#: the drawing's colours: the winner's path, a node kept by its step's pruning, a pruned one
WIN_BACKGROUND, WIN_BORDER = "#ffd54f", "#e65100"
KEPT_BACKGROUND, KEPT_BORDER = "#cfe2f3", "#3d6fa3"
PRUNED_BACKGROUND, PRUNED_BORDER, PRUNED_FONT = "#eeeeee", "#b8b8b8", "#9a9a9a"
#: the node the viewer's current decode step replays: a ring of this colour
AT_BORDER, AT_WIDTH = "#d62728", 5
EDGE, WIN_EDGE, PRUNED_EDGE = "#8c8c8c", WIN_BORDER, "#cccccc"

NAMES = {"soar": "SOAR (Cao et al., arXiv 2602.10953)",
         "ots": "Order-Token Search (Shen et al., arXiv 2601.20339)"}
MODES = {"root": "the root: every slot masked",
         "parallel": "parallel step (accelerate: every written slot's p above the threshold)",
         "branch": "branch step (search: one slot, the beam's most confident ones)",
         "search": "search step (the block's first: K actions, each scored by the "
                   "likelihood estimator)",
         "denoise": "denoising step (one action; the score unchanged)"}
#: the options the viewer hands vis-network for this drawing (labels as plain text)
VIS_OPTIONS = {
    "layout": {"hierarchical": {"enabled": False}, "randomSeed": 0},
    "physics": {"enabled": False},
    "interaction": {"hover": True, "tooltipDelay": 80, "zoomView": True, "dragView": True,
                    "navigationButtons": False, "keyboard": False},
    "nodes": {"shape": "box", "font": {"face": "monospace", "size": 14, "multi": False},
              "fixed": {"x": True, "y": True}, "margin": 6},
    "edges": {"arrows": {"to": {"enabled": True, "scaleFactor": 0.45}}, "smooth": False},
}


def winner_path(beam: dict) -> list[int]:
    """The winner's path, root first (node ids)."""
    nodes = beam["nodes"]
    path, nid = [], beam["winner"]
    while nid is not None:
        path.append(nid)
        nid = nodes[nid]["parent"]
    return path[::-1]


def committed(n: dict, most: int | None = LABEL_TOKENS) -> str:
    """What a node's step wrote, ``token@slot`` a line (several for a SOAR parallel step):
    the first ``most`` and "+k more" for the rest."""
    pairs = [f"{visible_token(t)[:LABEL_TOKEN_CHARS]}@{s}"
             for s, t in zip(n["slots"], n["token_texts"])]
    if most is not None and len(pairs) > most:
        return "\n".join(pairs[:most]) + f"\n+{len(pairs) - most} more"
    return "\n".join(pairs)


def _layout(nodes: list[dict], on_path: set[int]) -> dict[int, tuple[float, float]]:
    rows: dict[int, list[dict]] = {}
    for n in nodes:
        rows.setdefault(n["step"], []).append(n)
    xy: dict[int, tuple[float, float]] = {}
    column: dict[int, int] = {}
    for step in sorted(rows):
        row = sorted(rows[step], key=lambda n: (
            n["id"] not in on_path, column.get(n["parent"], -1), not n["kept"], n["id"]))
        for k, n in enumerate(row):
            column[n["id"]] = k
            xy[n["id"]] = (step * STEP_GAP, k * ROW_GAP)
    return xy


def _tooltip(n: dict, algorithm: str, on_path: bool, winner: int) -> list[str]:
    lines = [f"node #{n['id']} · step {n['step']}"
             + (f" · parent #{n['parent']}" if n["parent"] is not None else ""),
             MODES.get(n["mode"], str(n["mode"])),
             ("the winner" if n["id"] == winner else "on the winner's path" if on_path
              else "kept by its step's pruning" if n["kept"] else "pruned at its step")]
    for s, t, tok, p in zip(n["slots"], n["tokens"], n["token_texts"], n["p"]):
        lines.append(f"  slot {s}: {visible_token(tok)} (token {t}), p = {fmt(p)}")
    lines.append(f"score = {fmt(n['score'])}"
                 + (" (the sum of its path's token probabilities)" if algorithm == "soar"
                    else " (the sum of its path's block scores)"))
    if n.get("block_score") is not None:
        lines.append(f"block score = {fmt(n['block_score'])} (log-likelihood of the slots it "
                     "wrote, given its proposal)")
    lines.append(f"answer: {n.get('sequence', '')}")
    return lines


def beam_view(trace: dict, pos=None) -> dict | None:
    """The beam view's data for ``trace``, or None when it has no beam search (any
    strategy but ots and soar, or a run not finished). ``pos``: the trace's positions
    (:func:`medal.timeline.positions`), when the caller has them."""
    result = trace.get("result") if isinstance(trace, dict) else None
    beam = (result or {}).get("beam_search")
    if not isinstance(beam, dict):
        return None
    nodes = beam["nodes"]
    algorithm = beam["algorithm"]
    path = winner_path(beam)
    on_path = set(path)
    edges_on_path = set(zip(path, path[1:]))
    winner = beam["winner"]
    xy = _layout(nodes, on_path)
    items, edges = [], []
    for n in nodes:
        nid = n["id"]
        x, y = xy[nid]
        if nid in on_path:
            bg, border, font, width = WIN_BACKGROUND, WIN_BORDER, "#222222", 2.5
        elif n["kept"]:
            bg, border, font, width = KEPT_BACKGROUND, KEPT_BORDER, "#222222", 1.5
        else:
            bg, border, font, width = PRUNED_BACKGROUND, PRUNED_BORDER, PRUNED_FONT, 1
        label = f"#{nid}" + ("" if n["parent"] is None else "\n" + committed(n))
        items.append({"id": nid, "label": label, "x": x, "y": y,
                      "color": {"background": bg, "border": border,
                                "highlight": {"background": bg, "border": "#000000"},
                                "hover": {"background": bg, "border": "#000000"}},
                      "borderWidth": width, "font": {"color": font},
                      "kept": n["kept"], "win": nid in on_path,
                      "tip": _tooltip(n, algorithm, nid in on_path, winner)})
        if n["parent"] is not None:
            win = (n["parent"], nid) in edges_on_path
            colour = WIN_EDGE if win else EDGE if n["kept"] else PRUNED_EDGE
            edges.append({"id": f"{n['parent']}-{nid}", "from": n["parent"], "to": nid,
                          "width": 3 if win else 1.2,
                          "color": {"color": colour, "highlight": colour, "hover": colour,
                                    "inherit": False}})
    pos = positions(trace) if pos is None else pos
    at: list[int | None] = []
    for p in pos:
        if p.kind == "decode" and p.index is not None and p.index + 1 < len(path):
            at.append(path[p.index + 1])
        elif p.kind == "started":
            at.append(path[0])
        else:
            at.append(winner if p.kind in ("compare", "finished") else None)
    kept = sum(1 for n in nodes if n["kept"])
    stats = beam.get("stats") or {}
    return {"algorithm": algorithm, "name": NAMES.get(algorithm, algorithm),
            "nodes": items, "edges": edges, "path": path, "winner": winner, "at": at,
            "why": beam.get("why", ""), "options": VIS_OPTIONS, "at_border": AT_BORDER, "at_width": AT_WIDTH,
            "summary": (f"{NAMES.get(algorithm, algorithm)}: {len(nodes)} nodes over "
                        f"{len(beam['steps'])} steps ({kept} kept, {len(nodes) - kept} "
                        f"pruned), beam width at most {stats.get('widest_beam', '—')}; "
                        f"the winner #{winner} at the end of a {len(path) - 1}-step path"),
            "legend": [["win", WIN_BACKGROUND, WIN_BORDER, "the winner's path (its steps are "
                        "the decode steps replayed)"],
                       ["kept", KEPT_BACKGROUND, KEPT_BORDER, "kept by its step's pruning"],
                       ["pruned", PRUNED_BACKGROUND, PRUNED_BORDER, "pruned"],
                       ["at", "#ffffff", AT_BORDER, "the node the current decode step "
                        "replays"]]}
