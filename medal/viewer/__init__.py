"""One viewer for a run, in the browser; three hosts (the Streamlit app, the HTML export,
a Jupyter notebook).

Python turns a trace into *frames*, one per timeline position (:mod:`medal.timeline`
orders them); ``viewer.js`` (beside this file, with ``viewer.css``) draws and steps them:
the tree (vis-network from the installed pyvis package), the task view, the candidates,
the entropy heatmaps (a small SVG renderer), the unmasking order, the inspector, the
timeline, the keys and play. Nothing is fetched from outside the page.

**Frames share what did not change.** A frame is a set of keyed *parts* -- ``h`` (the
header), ``n`` and ``e`` (every drawn tree node and edge, each with its complete style),
``s`` (each node's figures at this position), ``a`` (each node's fixed card: sequence and
action set), ``g`` (heatmap grids, one item per row), ``v`` (the other views). Every
distinct value is stored once in a *pool*; a frame records only the keys whose value
changed since the previous frame (``[key, pool index, ...]``, index -1: removed). An
MCTS phase changes a path's worth of nodes, so the bundle grows linearly with the
positions, not with positions x nodes. The browser rebuilds each position's full state
once, when the frames arrive, and a step then updates only what differs.

Every tree node and edge carries *every* style field (colour, width, dashes, font,
outline, label...): vis-network's in-place update keeps any field a new item omits, which
once left old path colours on edges that had left the path.

    bundle = medal.viewer.bundle(trace)          # what the hosts hand to viewer.js
    html = medal.viewer.page(trace)              # a self-contained page (the export)
    medal.show(trace)                            # inline in a notebook
"""
from __future__ import annotations

import base64
import functools
import gzip
import html as _html
import json
import math
from pathlib import Path

from ..extensions import lend
from ..scores import entropy_drop
from ..tasks import task_of_trace
from ..viz.board import task_view_html
from ..viz.candidates import candidate_rows, near_tie, winners_by
from ..viz.common import (VIRIDIS, action_label, candidate_ids, current_path, fmt,
                          latest_children, lerp_colour, node_path, nodes_by_id, run_config,
                          run_info, visible_token, winner_id)
from ..viz.heatmap import entropy_grid
from ..viz.inspector import (_completion_text, _slot_texts, action_table, candidate_report,
                             ucb_card, ucb_text)
from ..viz.order import answer_end, order_summary, slot_tokens
from ..viz.phases import MCTS_PHASES, current_phase, progress
from ..timeline import ITERATION_ENDS, label_at, positions, trace_at
from ..viz.tree import (CANDIDATE_COLOUR, H_GAP, LABEL_FONT, NEW_COLOUR, PATH_COLOUR,
                        SMALL_FONT, UNVISITED, V_GAP, VIS_OPTIONS, WINNER_COLOUR, layout,
                        q_scale, vis_assets, visible_node_ids)

HERE = Path(__file__).resolve().parent
MAX_NODES = 300            # tree nodes drawn per position (the most visited are kept)
EDGE_COLOUR = "#9e9e9e"
HIDDEN_EDGE = "#cccccc"
#: an r_IG is flagged when its parent's total entropy (the formula's denominator) is
#: below this share of the root's: the ratio of two small numbers is then mostly noise
OUTLIER_SHARE = 0.05
FORMAT = "medal-viewer/1"


# ---------------------------------------------------------------------- assets

def viewer_js() -> str:
    return (HERE / "viewer.js").read_text(encoding="utf-8")


def viewer_css() -> str:
    return (HERE / "viewer.css").read_text(encoding="utf-8")


# ---------------------------------------------------------------------- rewards

def reward_outlier(trace: dict, nid: int, nodes: dict | None = None) -> dict | None:
    """Why ``nid``'s r_IG is not to be trusted, or None: the paper's formula divides by the
    parent's total entropy, and when that is tiny (below :data:`OUTLIER_SHARE` of the
    root's) one small difference becomes a huge reward, e.g. (0.014 - 0.862) / 0.014 =
    -59.96. The formula is kept (:mod:`medal.scores`); the view flags the value."""
    nodes = nodes if nodes is not None else nodes_by_id(trace)
    node = nodes.get(nid)
    if not node or node.get("r_ig") is None or node.get("parent") is None:
        return None
    parent = nodes.get(node["parent"])
    root = nodes.get((trace.get("tree") or {}).get("root"))
    if parent is None or root is None:
        return None
    p_sum = parent.get("entropy_sum")
    r_sum = root.get("entropy_sum")
    if not isinstance(p_sum, (int, float)) or not isinstance(r_sum, (int, float)) or r_sum <= 0:
        return None
    if p_sum >= OUTLIER_SHARE * r_sum and abs(node["r_ig"]) <= 1.0:
        return None
    return {"parent_entropy": p_sum, "root_entropy": r_sum, "r_ig": node["r_ig"],
            "text": (f"r_IG = {node['r_ig']:.3f} is an outlier: the parent's remaining "
                     f"entropy is only {p_sum:.3f} (the root's: {r_sum:.3f}), and the "
                     "formula divides by it")}


# ---------------------------------------------------------------------- the tree

def _node_style(*, nid, label, x, y, shape, size, background, border, border_width,
                dashes, font_size, font_background, font_colour="#222222", note=""):
    """A vis-network node with every style field set (see the module docstring). Its
    tooltip is written by the viewer from the node's figures at the position shown
    (``note``: what the style alone does not say, e.g. a clipped Q)."""
    return {"id": nid, "label": label, "note": note, "x": x, "y": y, "shape": shape, "size": size,
            "color": {"background": background, "border": border,
                      "highlight": {"background": background, "border": "#000000"},
                      "hover": {"background": background, "border": "#000000"}},
            "borderWidth": border_width, "borderWidthSelected": border_width + 1,
            "shapeProperties": {"borderDashes": dashes},
            # (face, stroke: the same for every node, from the options, never overridden)
            "font": {"size": font_size, "background": font_background, "color": font_colour}}


def _edge_style(eid, a, b, *, colour, width, dashes=False):
    return {"id": eid, "from": a, "to": b, "width": width, "dashes": dashes,
            "color": {"color": colour, "highlight": colour, "hover": colour,
                      "inherit": False, "opacity": 1.0},
            "arrows": {"to": {"enabled": True, "scaleFactor": 0.45}}}


def highlighted_path(trace: dict) -> list[int]:
    """The path the tree highlights: the winner's once it is chosen, else the latest
    selection path."""
    nodes = nodes_by_id(trace)
    w = winner_id(trace)
    if w is not None and w in nodes:
        return node_path(nodes, w)
    return [n for n in current_path(trace) if n in nodes]


def _short(text: str, n: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[: n - 1] + "…"


_EDGES: dict = {}


def _edge_for(n: dict, keep, path_edges, path_colour: str, out_e: dict) -> None:
    parent = n.get("parent")
    if parent is None or parent not in keep:
        return
    on = (parent, n["id"]) in path_edges
    key = (parent, n["id"], path_colour if on else EDGE_COLOUR)
    e = _EDGES.get(key)
    if e is None:
        eid = f"{parent}-{n['id']}"
        e = _EDGES[key] = _edge_style(eid, parent, n["id"], colour=key[2],
                                      width=4 if on else 1.2)
        if len(_EDGES) > 100_000:
            _EDGES.clear()
    out_e[e["id"]] = e


def tree_parts(trace: dict, kind: str, max_nodes: int = MAX_NODES,
               scale: tuple[float, float] | None = None,
               n_scale: int | None = None, xy: dict | None = None,
               memo: dict | None = None) -> tuple[dict, dict, dict]:
    """(nodes, edges, info) for the tree at this position: vis items keyed by id (every
    style field set) and what the viewer frames and explains (path, new children,
    candidates, winner, the siblings' UCB during a selection, what was clipped)."""
    nodes = nodes_by_id(trace)
    if not nodes:
        return {}, {}, {}
    keep = visible_node_ids(trace, max_nodes)
    path = highlighted_path(trace)
    keep.update(path)
    path_set = set(path)
    path_edges = set(zip(path, path[1:]))
    win = winner_id(trace)
    path_colour = WINNER_COLOUR if win is not None else PATH_COLOUR
    new = set(latest_children(trace)) if kind in ("expansion", "simulation") else set()
    with_reward = new if kind == "simulation" else set()
    cands = set(candidate_ids(trace))
    ucb_rows: dict[int, dict] = {}
    its = trace.get("iterations") or []
    if kind == "selection" and its:
        for level in its[-1]["selection"]["levels"]:
            for row in level:
                ucb_rows[row["node"]] = row
    q_lo, q_hi = scale if scale else (0.0, 0.0)
    shown = [nodes[i] for i in sorted(keep)]
    # sized by N on a scale fixed for the run (the root's final N), so a backpropagation
    # resizes only the nodes it updates
    n_max = n_scale or max((n["N"] for n in shown), default=1) or 1
    xy = xy if xy is not None else layout(trace)   # (a node never moves: the full run's do)
    memo = {} if memo is None else memo
    out_n, out_e, clipped, outliers = {}, {}, [], []
    hidden_below: dict[int, int] = {}
    # each hidden node's nearest drawn ancestor, remembered for the nodes on the way: one
    # step a node in all (walking each node up to the root was O(depth^2) on a chain)
    anchors: dict = {}
    for n in nodes.values():
        if n["id"] in keep:
            continue
        walk, seen, anchor = [], set(), n.get("parent")
        while anchor is not None and anchor not in keep and anchor not in seen \
                and anchor not in anchors:
            seen.add(anchor)
            walk.append(anchor)
            anchor = (nodes.get(anchor) or {}).get("parent")
        if anchor in anchors:
            anchor = anchors[anchor]
        elif anchor in seen:
            anchor = None   # a cycle (a trace the gate refuses; drawn without an anchor)
        for a in walk:
            anchors[a] = anchor
        if anchor is not None and anchor in keep:
            hidden_below[anchor] = hidden_below.get(anchor, 0) + 1
    for n in shown:
        nid = n["id"]
        row = ucb_rows.get(nid)
        mkey = (nid, n["N"], n["Q"], n.get("r_ig"), n.get("completion"),
                n.get("exhausted"), nid in path_set, nid == win, path_colour, nid in new,
                nid in with_reward, nid in cands, n_max, q_lo, q_hi,
                None if row is None else (row.get("ucb"), row.get("chosen")))
        hit = memo.get(mkey)
        if hit is not None:
            out_n[str(nid)], was_clipped, was_outlier = hit
            if was_clipped:
                clipped.append(nid)
            if was_outlier:
                outliers.append(nid)
            _edge_for(n, keep, path_edges, path_colour, out_e)
            continue
        extra = []
        if n["N"] > 0:
            t = 0.5 if q_hi <= q_lo else (n["Q"] - q_lo) / (q_hi - q_lo)
            colour = lerp_colour(t, VIRIDIS)
            if t > 1 or t < 0:
                clipped.append(nid)
                extra.append(f"Q = {n['Q']:.3f} lies {'above' if t > 1 else 'below'} the "
                             f"colour scale ({q_lo:g} to {q_hi:g}): drawn in its "
                             f"{'top' if t > 1 else 'bottom'} colour")
        else:
            colour = UNVISITED
        border = (WINNER_COLOUR if nid == win else path_colour if nid in path_set else
                  NEW_COLOUR if nid in new else CANDIDATE_COLOUR if nid in cands else "#555555")
        shape = "star" if nid == win else "diamond" if nid in cands else "dot"
        # sized by N on an absolute scale: a backpropagation resizes only what it updates
        size = min(30.0, 9 + 4 * math.log2(1 + max(n["N"], 0)))
        if nid == win:
            size = max(size, 22)
        head = f"#{nid}" + ("" if n.get("action") else " root")
        if nid == win:
            head = "★ " + head
        if nid in clipped:
            head += " ⇡" if n["Q"] > q_hi else " ⇣"
        lines = [head]
        if n.get("action"):
            lines.append(action_label(n))
        font_size, font_bg = LABEL_FONT, "rgba(255,255,255,0.85)"
        if row is not None:
            u = row.get("ucb")
            # (9 characters at most: two siblings' labels must not touch; the chosen one
            # is on the path and has an orange background)
            lines.append("UCB " + ("∞" if u is None or (isinstance(u, float) and math.isinf(u))
                                   else f"{u:.3f}"))
            font_size, font_bg = SMALL_FONT, "#e8f1ff" if not row.get("chosen") else "#ffe0c2"
        flag = reward_outlier(trace, nid, nodes) if n.get("r_ig") is not None else None
        if flag:
            outliers.append(nid)
            extra.append(flag["text"])
        if nid in with_reward and n.get("r_ig") is not None:
            lines.append(f"r={n['r_ig']:.3f}" + (" ⚠" if flag else ""))
            if n.get("completion"):
                lines.append(_short(n["completion"].replace("_", "·"), 11))
            font_size, font_bg = SMALL_FONT, "#fff3c4"
        x, y = xy.get(nid, (0.0, 0.0))
        out_n[str(nid)] = _node_style(
            nid=nid, label="\n".join(lines), x=x, y=y, shape=shape, size=round(size, 1),
            background=colour, border=border,
            border_width=(4 if (nid in path_set or nid == win or nid in new) else
                          2.5 if nid in cands else 1.5),
            dashes=[5, 4] if nid in new else False, font_size=font_size,
            font_background=font_bg,
            note=" · ".join(extra))
        memo[mkey] = (out_n[str(nid)], nid in clipped, nid in outliers)
        _edge_for(n, keep, path_edges, path_colour, out_e)
    for parent, count in sorted(hidden_below.items()):
        hid = f"hidden-{parent}"
        px, py = xy.get(parent, (0.0, 0.0))
        out_n[hid] = _node_style(
            nid=hid, label=f"+{count}", x=px + H_GAP / 2, y=py + V_GAP / 2, shape="dot",
            size=4, background="#eeeeee", border="#bbbbbb", border_width=1, dashes=False,
            font_size=SMALL_FONT, font_background="rgba(255,255,255,0.85)",
            font_colour="#555555",
            note=f"{count} node{'s' if count != 1 else ''} below node {parent} not drawn "
                 "(fewer visits)")
        eid = f"{parent}-{hid}"
        out_e[eid] = _edge_style(eid, parent, hid, colour=HIDDEN_EDGE, width=1, dashes=True)
    info = {"path": path, "new": sorted(new), "candidates": sorted(cands),
            "winner": win, "ucb": sorted(ucb_rows), "clipped": clipped,
            "outliers": outliers, "total": len(nodes), "shown": len(shown),
            "root": (trace.get("tree") or {}).get("root", 0)}
    return out_n, out_e, info


def legend(scale, info: dict) -> dict:
    """The legend's content as data (the viewer writes it with textContent)."""
    return {"q": list(scale) if scale else None,
            "stops": [lerp_colour(i / 8, VIRIDIS) for i in range(9)],
            "colours": {"path": PATH_COLOUR, "new": NEW_COLOUR, "candidate": CANDIDATE_COLOUR,
                        "winner": WINNER_COLOUR, "unvisited": UNVISITED},
            "clipped": len(info.get("clipped") or []),
            "hidden": (info.get("total") or 0) - (info.get("shown") or 0),
            "total": info.get("total") or 0}


# ---------------------------------------------------------------------- other parts

def _num(v):
    if isinstance(v, float):
        return round(v, 6) if math.isfinite(v) else None
    return v


def _grid_parts(trace: dict) -> dict:
    out = {}
    which = ["medal"] + (["greedy"] if trace.get("comparison") else [])
    for gi, w in enumerate(which):
        g = entropy_grid(trace, w, show_padding=True)
        out[f"{gi}"] = {"title": g.title, "x": [str(x).replace("<br>", " ") for x in g.slot_labels], "end": answer_end(trace, w),
                        "rows": len(g.rows)}
        for ri, (row, mark, y) in enumerate(zip(g.rows, g.marks, g.row_labels)):
            out[f"{gi}/{ri}"] = {"y": y, "h": [None if v is None else round(v, 3) for v in row],
                                 "m": mark}
    return out


def _order_part(trace: dict) -> dict:
    """The unmasking order, one item per slot ([text, step, flags]; flags: 1 committed by
    the search, 2 tentative -- on the path of a search still running, 4 after the end of
    the answer, 8 fixed by the task's format), so a step changes only its own slots."""
    cfg = run_config(trace)
    out = {"0": {"names": [run_info(trace, "strategy", "")]
                 + (["greedy"] if trace.get("comparison") else []),
                 "steps": max(1, cfg.get("steps") or cfg.get("gen_length") or 1)}}
    for tag, which in (("m", "medal"), ("g", "greedy")):
        if which == "greedy" and not trace.get("comparison"):
            continue
        for st in slot_tokens(trace, which):
            flags = (1 if st.by_search else 0) | (2 if st.tentative else 0) | \
                    (4 if st.after_eos else 0) | (8 if st.fixed else 0)
            out[f"{tag}/{st.slot}"] = [None if st.text is None else visible_token(st.text),
                                       st.step, flags]
    return out


def _node_card(trace: dict, nid: int, nodes: dict | None = None, kids: dict | None = None,
               texts_memo: dict | None = None) -> dict:
    """What never changes about a node once it exists: its sequence and action set.
    (``nodes``, ``kids``, ``texts_memo``: shared by the cards of one position, so a card
    costs its own node, not a walk of the tree.)"""
    nodes = nodes_by_id(trace) if nodes is None else nodes
    rows = action_table(trace, nid, nodes, kids)
    n = nodes[nid]
    texts = {f["slot"]: f["text"] for f in run_info(trace, "fixed_slots") or []}
    texts.update(_slot_texts(nodes, nid, texts_memo))
    own = n["action"]["slot"] if n.get("action") else None
    # per slot: [text, how] -- how: 2 this node's action, 1 committed, 0 masked (text: the
    # simulation's fill, or "" before it)
    cells = []
    for i, masked in enumerate(n.get("masked") or []):
        if masked:
            cells.append([_completion_text(n, i) if n.get("completion_ids") else "", 0])
        else:
            cells.append([visible_token(texts.get(i, "?")), 2 if i == own else 1])
    return {"id": nid, "label": f"node {nid} · {action_label(n)} · depth {n['depth']}",
            "parent": n.get("parent"), "depth": n["depth"], "made": n.get("created_iteration"),
            "cells": cells, "sequence": n.get("sequence", ""),
            "actions": [{k: _num(r[k]) for k in ("rank", "slot", "token", "p", "H", "margin",
                                                 "s (recomputed)", "child")} for r in rows]}


def stats_parts(t: dict, info: dict, memo: dict) -> dict:
    """Every node's figures at this position (``memo``: shared across the positions of
    one run, keyed by what the figures depend on)."""
    nodes = nodes_by_id(t)
    c = float(run_config(t).get("c", 0.1))
    last: dict[int, tuple] = {}
    for it in t.get("iterations") or []:
        for level in it["selection"]["levels"]:
            for row in level:
                last[row["node"]] = (it["iteration"], row)
    win, cands = info.get("winner"), set(info.get("candidates") or ())
    out = {}
    for nid, n in nodes.items():
        parent = nodes.get(n.get("parent"))
        lr = last.get(nid)
        key = (nid, n["N"], n["W"], n["Q"], parent["N"] if parent else None, n.get("r_ig"),
               nid == win, nid in cands, n.get("exhausted"), n.get("created_iteration"),
               None if lr is None else (lr[0], lr[1]["N"], lr[1]["Q"], lr[1]["parent_N"],
                                        lr[1]["chosen"]))
        hit = memo.get(key)
        if hit is None:
            hit = memo[key] = _node_stats(t, n, parent, nodes, c, lr, win, cands)
        out[str(nid)] = hit
    return out


def _node_stats(t, n, parent, nodes, c, last, win, cands) -> dict:
    nid = n["id"]
    card = ucb_card(n, parent, c, last)
    r = None
    if n.get("r_ig") is not None and parent is not None and n.get("action"):
        slot = n["action"]["slot"]
        before = sum(h for h, m in zip(parent["entropy"], parent["masked"])
                     if m and h is not None)
        after = sum(n["entropy"][j] or 0.0 for j, m in enumerate(parent["masked"])
                    if m and j != slot)
        r = (before, after, entropy_drop(before, after))
    flag = reward_outlier(t, nid, nodes)
    badges = []
    if nid == win:
        badges.append("★ the winning candidate")
    elif nid in cands:
        badges.append("a candidate")
    if n.get("parent") is None:
        badges.append("the root")
    else:
        badges.append(f"made in iteration {n.get('created_iteration')}")
    if n.get("exhausted"):
        badges.append("exhausted (nothing left to expand below it)")
    ls = card.get("last selection")
    return {"N": n["N"], "W": _num(n["W"]), "Q": _num(n["Q"]),
            "UCB": _num(card["ucb"]) if card.get("ucb") is not None else None,
            "r_IG": _num(n.get("r_ig")), "depth": n["depth"], "badges": "; ".join(badges),
            # the UCB and r_IG worked through (the viewer writes the sentences)
            "pN": card["parent_N"], "c": c,
            "last": None if ls is None else [ls["iteration"], ls["N"], _num(ls["Q"]),
                                             ls["parent_N"], ls["chosen"]],
            "rig": None if r is None else [_num(r[0]), _num(r[1]), _num(r[2])],
            "outlier": flag["text"] if flag else ""}


def _candidates_part(trace: dict) -> dict | None:
    rows = candidate_rows(trace)
    if not rows:
        return None
    out = []
    for r in rows:
        row = r.as_table_row()
        out.append({k: (_num(v) if not isinstance(v, str) else v) for k, v in row.items()}
                   | {"_winner": bool(r.winner), "_ig": _num(r.cumulative_ig), "_q": _num(r.q)})
    report = candidate_report(trace) or {}
    return {"rows": out, "winners": winners_by(trace), "tie": near_tie(trace) or "",
            "why": report.get("why") or "", "slots": _winner_against_runner_up(rows, trace)}


def _winner_against_runner_up(rows, trace: dict, most: int = 40) -> dict | None:
    """The winner and the runner-up (the other candidate with the highest cumulative IG)
    slot by slot (:func:`medal.diff.compare_candidates`): the slots whose token differs
    or whose remaining entropy moves the gain, each slot's part of the IG difference."""
    from ..diff import compare_candidates

    win = next((r for r in rows if r.winner), None)
    others = [r for r in rows if not r.winner and r.cumulative_ig is not None]
    if win is None or not others:
        return None
    runner = max(others, key=lambda r: r.cumulative_ig)
    rep = compare_candidates(trace, win.node, runner.node)
    shown = [r for r in rep["slots"] if r["token_differs"] or abs(r["ig_contribution"]) >= 5e-4]

    def tok(side):
        return "[mask]" if side["token"] is None else (
            side["text"] if side["text"] is not None else f"#{side['token']}")

    table = [{"slot": r["slot"], f"node {win.node} (winner)": tok(r["a"]),
              "H winner": _num(r["a"]["entropy"]), f"node {runner.node}": tok(r["b"]),
              "H runner-up": _num(r["b"]["entropy"]), "IG part": _num(r["ig_contribution"]),
              "share": _num(r["share"])} for r in shown[:most]]
    return {"a": win.node, "b": runner.node, "ig": [_num(v) for v in rep["ig"]],
            "difference": _num(rep["ig_difference"]), "differing": rep["differing_slots"],
            "rows": table, "more": max(0, len(shown) - most)}


def _summary(trace: dict):
    try:
        rows = order_summary(trace)
    except Exception:  # a trace too short for a summary
        return None
    return [{k: _num(v) if not isinstance(v, str) else v for k, v in r.items()} for r in rows]


def _focus_node(t: dict, path: list[int]) -> int | None:
    if path:
        return path[-1]
    nodes = nodes_by_id(t)
    return (t.get("tree") or {}).get("root") if nodes else None


def frame_parts(trace: dict, index: int, *, max_nodes: int = MAX_NODES,
                memo: dict | None = None, timeline: list | None = None):
    """Every part of the frame at position ``index`` (full, before sharing), and the ids
    of the tree's nodes there. ``timeline``: ``positions(trace)`` when the caller has it
    (computing it per frame made a trace's frames quadratic in its positions)."""
    timeline = positions(trace) if timeline is None else timeline
    pos = timeline[index]
    memo = {} if memo is None else memo
    t = trace_at(trace, index, timeline, cache=memo.setdefault("trace_at", {}))
    ph = current_phase(t)
    frac, caption = progress(t)
    if "q_scale" not in memo:
        memo["q_scale"] = q_scale(trace)
    scale = memo["q_scale"] if (t.get("iterations") and (
        t["iterations"][0].get("simulation"))) else None
    # past the search the tree is final (trace_at's cached tree): its nodes, tree parts,
    # figures and cards are the same at every such position with the same winner, so
    # they are built once, not once a position (a decode step costs its own slots)
    tree_obj = t.get("tree")
    final = tree_obj is not None and tree_obj is memo["trace_at"].get("final_tree")
    same = memo.get("final_parts") if final else None
    post_key = (id(tree_obj), (t.get("search") or {}).get("winner"),
                len((t.get("search") or {}).get("candidates") or ()), scale)
    if same is not None and same[0] == post_key:
        nodes, tn, te, info, stats, cards = same[1:]
    else:
        nodes = nodes_by_id(t)
        # N's size scale: the next power of two above the root's N at this position (a
        # live run and its replay agree, and it changes a handful of times in a run)
        root = nodes.get((tree_obj or {}).get("root"))
        n_scale = 2 ** math.ceil(math.log2(max(8, root["N"]))) if root else None
        if "layout" not in memo:
            memo["layout"] = layout(trace)
            memo["kids"] = _child_rows(trace, memo["layout"])
        tn, te, info = tree_parts(t, pos.kind, max_nodes, scale, n_scale=n_scale,
                                  xy=memo["layout"], memo=memo.setdefault("tree", {}))
        if pos.kind == "selection" and info.get("path"):
            # where the expansion will draw the leaf's children (the finished run's
            # layout): the view makes room for them now rather than moving at the next step
            info["room"] = memo["kids"].get(info["path"][-1])
        stats = stats_parts(t, info, memo.setdefault("stats", {}))
        cards = card_parts(t, memo.setdefault("cards", {}))
        if final and pos.kind not in ("selection", "expansion", "simulation"):
            memo["final_parts"] = (post_key, nodes, tn, te, info, stats, cards)
    focus = _focus_node(t, info.get("path") or [])
    result = t.get("result") or {}
    answer = None
    if result:
        answer = {"text": str(result.get("answer")), "verified": result.get("verified")}
    head = {"kind": pos.kind, "label": label_at(trace, pos), "phase": ph.key, "title": ph.title,
            "iteration": ph.iteration, "explanation": explanation(t, ph.key),
            "detail": ph.detail, "progress": 1.0 if pos.kind == "finished" else round(frac, 4),
            "caption": caption, "iteration_end": pos.kind in ITERATION_ENDS,
            "mcts": ph.key in MCTS_PHASES,
            "focus": focus, "partial": nodes[focus]["sequence"] if focus in nodes else None,
            "answer": answer, "tree": info}
    parts = {"h": {"0": head}, "n": tn, "e": te, "s": stats, "a": cards,
             "g": _grid_parts(t),
             "o": _order_part(t),
            "v": {"task": task_view_html(t) or "",
                   "cands": _candidates_part(t), "legend": legend(scale, info),
                   "summary": _summary(t) if pos.kind == "finished" else None,
                   "step": _step_part(trace, t, pos)}}
    return parts, list(nodes)


def _step_part(trace: dict, t: dict, pos) -> dict | None:
    """A decoding step as the field's demos show one (issue 28 #6): which slots it
    unmasked, and every eligible slot's p, margin and score -- for MEDAL's phase C, a
    baseline's decoding and the greedy comparison. ``row``: the order strip's row that
    holds this decode's answer ("m" the run's, "g" greedy's; None for another candidate's
    completion, which no strip holds)."""
    if pos.kind not in ("decode", "compare"):
        return None
    from ..viz.common import main_phase
    try:
        rec = (trace["decode"] if pos.kind == "decode" else trace["comparison"]["steps"])[pos.index]
    except (KeyError, IndexError, TypeError):
        return None
    el = rec.get("eligible") or {}
    rows = []
    for k, slot in enumerate(el.get("slots") or []):
        def at(name, k=k):
            v = (el.get(name) or [None] * (k + 1))
            return _num(v[k]) if k < len(v) else None
        rows.append({"slot": slot, "p": at("p"), "margin": at("margin"), "score": at("score"),
                     "now": slot in rec["slots"]})
    row = "g" if pos.kind == "compare" else ("m" if rec["phase"] == main_phase(t) else None)
    return {"label": label_at(trace, pos), "step": rec["step"], "row": row,
            "slots": list(rec["slots"]),
            "texts": [visible_token(x) for x in rec.get("token_texts") or []],
            "eligible": rows}


def _child_rows(trace: dict, xy: dict) -> dict:
    """Per node with children: [x of the first, x of the last, y] of its children."""
    out: dict = {}
    for n in (trace.get("tree") or {}).get("nodes") or []:
        p, at = n.get("parent"), xy.get(n["id"])
        if p is None or at is None:
            continue
        row = out.get(p)
        out[p] = [at[0], at[0], at[1]] if row is None else \
            [min(row[0], at[0]), max(row[1], at[0]), at[1]]
    return out


def explanation(t: dict, key: str) -> str:
    """The phase's explanation, with this run's L_c and C where the text names them."""
    from ..viz.phases import PHASES
    text = PHASES[key][1]
    cfg = run_config(t)
    if key == "backpropagation":
        text = (text.replace("L_c committed", f"L_c = {cfg.get('lc')} committed")
                .replace("top C by", f"top C = {cfg.get('candidates')} by"))
    return text


# ---------------------------------------------------------------------- sharing

class Encoder:
    """Turns full frames into shared ones, incrementally (a live run adds frames as the
    engine makes them): a pool of distinct values and per-frame changes."""

    def __init__(self):
        self.pool: list = []
        self._index: dict[str, int] = {}
        self.frames: list[dict] = []
        self._states: list[dict[str, dict[str, int]]] = []
        self._last: dict = {}   # the previous frame's parts (the objects, by part)

    def _intern(self, value) -> int:
        key = json.dumps(value, sort_keys=True, ensure_ascii=False, allow_nan=False)
        i = self._index.get(key)
        if i is None:
            i = self._index[key] = len(self.pool)
            self.pool.append(value)
        return i

    def truncate(self, n: int) -> None:
        """Forget frames from ``n`` on (the pool keeps its values)."""
        del self.frames[n:]
        del self._states[n:]
        self._last = {}

    def add(self, parts: dict[str, dict]) -> dict:
        prev = self._states[-1] if self._states else {}
        state = {}
        for p, items in parts.items():
            before = prev.get(p, {})
            if p in prev and items is self._last.get(p):
                state[p] = before   # the very same part as the previous frame's: unchanged
                continue
            out = state[p] = {}
            for k, v in items.items():
                i = before.get(k)
                # unchanged since the previous frame (often the very same object): no
                # serialisation needed
                if i is None or not (self.pool[i] is v or self.pool[i] == v):
                    i = self._intern(v)
                out[k] = i
        delta = {}
        for p, items in state.items():
            before = prev.get(p, {})
            if items is before:
                continue
            changes = []
            for k, i in items.items():
                if before.get(k) != i:
                    changes += [k, i]
            for k in before:
                if k not in items:
                    changes += [k, -1]
            if changes:
                delta[p] = changes
        self._states.append(state)
        self.frames.append(delta)
        self._last = dict(parts)
        return delta


def card_parts(t: dict, memo: dict) -> dict:
    """Each node's card as it stands at this position: it changes once, when the node is
    expanded (its action table then names the child each action made)."""
    nodes = nodes_by_id(t)
    kids: dict[int, list[int]] = {}
    for n in nodes.values():
        if n.get("parent") is not None:
            kids.setdefault(n["parent"], []).append(n["id"])
    texts: dict = {}   # per position: the tree's actions are fixed, but not its nodes
    out = {}
    for nid in nodes:
        key = (nid, nid in kids)
        card = memo.get(key)
        if card is None:
            card = memo[key] = _node_card(t, nid, nodes, kids, texts)
        out[str(nid)] = card
    return out


def meta(trace: dict) -> dict:
    cfg = run_config(trace)
    model = run_info(trace, "model") or {}
    return {"strategy": run_info(trace, "strategy", ""), "prompt": run_info(trace, "prompt", ""),
            "model": model.get("name", ""), "task": _task_name(trace),
            "config": {k: v for k, v in cfg.items() if not isinstance(v, (dict, list))},
            "lc": cfg.get("lc"), "C": cfg.get("candidates"), "c": cfg.get("c"),
            "tree": _tree_shape(trace)}


def _tree_shape(trace: dict) -> dict | None:
    """The run's tree in figures (:func:`medal.viz.tree.tree_stats`, from its networkx
    graph), for the tree bar; None without a tree."""
    if not (trace.get("tree") or {}).get("nodes"):
        return None
    from ..viz.tree import tree_stats
    st = tree_stats(trace)
    return {k: st[k] for k in ("nodes", "depth", "expanded", "leaves", "unvisited")} | {
        "branching": round(st["branching"], 2),
        "visits": [r["visits"] for r in st["per_level"]],
        "per_level": [r["nodes"] for r in st["per_level"]]}


def _task_name(trace: dict) -> str:
    try:
        return task_of_trace(trace) or ""
    except Exception:
        return ""


class Frames:
    """A run's frames, built once per position and extended as a live trace grows."""

    def __init__(self, key: str, max_nodes: int = MAX_NODES):
        self.key = key
        self.max_nodes = max_nodes
        self.enc = Encoder()
        self.labels: list[str] = []
        self.kinds: list[str] = []
        self.meta: dict = {}
        self.dirty_from = 0      # the first frame the latest update() (re)computed
        self._memo: dict = {}

    def update(self, trace: dict, *, final: bool = True) -> None:
        """Frames for every position of ``trace``; a growing trace recomputes only its
        last known position (it may have changed) and the new ones."""
        pos = positions(trace)
        labels = [p.label for p in pos]
        keep = 0
        while keep < min(len(labels), len(self.labels)) and labels[keep] == self.labels[keep]:
            keep += 1
        if not final and keep == len(self.labels) and keep:
            keep -= 1        # the head of a live run may have moved on within its position
        # the colour scale of Q (viz.tree.q_scale): a live run's changes once, when its
        # search ends (iteration 1's rule, then the run's own range); every frame is then
        # drawn again on it, so a live run's frames equal its replay's
        scale = q_scale(trace)
        if self.labels and scale != self._memo.get("scale_drawn", scale):
            keep = 0
        self._memo["scale_drawn"] = scale
        if keep < len(self.labels) or keep == 0:
            keep = min(keep, len(self.enc.frames))
            self.enc.truncate(keep)
            self.labels, self.kinds = self.labels[:keep], self.kinds[:keep]
        self.meta = meta(trace) if trace.get("run") else {}
        self.dirty_from = len(self.labels)
        self._memo.pop("layout", None)        # the trace may have grown: new nodes placed
        for k in ("trace_at", "final_parts"):   # (its final tree may change)
            self._memo.pop(k, None)
        self._memo["q_scale"] = scale
        for i in range(len(self.labels), len(pos)):
            parts, _ids = frame_parts(trace, i, max_nodes=self.max_nodes, memo=self._memo,
                                      timeline=pos)
            self.enc.add(parts)
            self.labels.append(labels[i])
            self.kinds.append(pos[i].kind)

    def bundle(self, *, pool_from: int = 0, frames_from: int = 0, live: bool = False,
               done: bool = True) -> dict:
        return {"format": FORMAT, "key": self.key, "meta": self.meta,
                "options": VIS_OPTIONS, "pool_from": pool_from,
                "pool": self.enc.pool[pool_from:], "frames_from": frames_from,
                "frames": self.enc.frames[frames_from:], "n_frames": len(self.enc.frames),
                "live": live, "done": done}


def bundle(trace: dict, *, key: str = "trace", max_nodes: int = MAX_NODES) -> dict:
    """Everything the viewer needs for ``trace`` (a finished run's or one in progress)."""
    f = Frames(key, max_nodes)
    f.update(trace)
    return f.bundle()


_EXAMPLES: dict = {}
_EXAMPLES_LOCK = __import__("threading").Lock()


def example_frames(name: str) -> Frames:
    """A shipped example's frames, computed once per process (and shared: read only)."""
    with _EXAMPLES_LOCK:
        frames = _EXAMPLES.get(name)
        if frames is None:
            from ..viz.examples import list_examples, load_example
            ex = next(e for e in list_examples() if e.name == name)
            frames = Frames(f"example-{name}")
            frames.update(load_example(ex))
            _EXAMPLES[name] = frames
        return frames


def warm_examples() -> None:
    """Compute every shipped example's frames in the background, once per process, so
    that the first click on an example does not wait for them."""
    import threading
    if getattr(warm_examples, "started", False):
        return
    warm_examples.started = True

    def work():
        from ..viz.examples import list_examples
        for ex in list_examples():
            try:
                example_frames(ex.name)
            except Exception:   # a broken example shows its error when it is opened
                pass
    threading.Thread(target=work, name="medal-warm-examples", daemon=True).start()


# ---------------------------------------------------------------------- the page

def _inline(code: str, tag: str = "script") -> str:
    return code.replace(f"</{tag}", f"<\\/{tag}")


def pack(data: dict) -> str:
    """JSON, gzipped and base64-encoded: no token of a trace can close the <script>."""
    raw = json.dumps(data, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    return base64.b64encode(gzip.compress(raw.encode("utf-8"), mtime=0)).decode("ascii")


CSP = ("default-src 'none'; script-src 'unsafe-inline' 'unsafe-eval'; "
       "style-src 'unsafe-inline'; img-src data: blob:; font-src data:")


def page(trace: dict, *, title: str | None = None, height: int | None = None) -> str:
    """The whole run as one self-contained HTML document (the viewer inlined, no
    network: its Content-Security-Policy forbids any request)."""
    data = bundle(trace)
    m = data["meta"]
    title = title or f"MEDAL trace: {m.get('strategy')} on {m.get('prompt')}"
    return standalone_page(data, title)


def standalone_page(data: dict, title: str, *, mount: str = "mount",
                    element: str = "medal-viewer", name: str = "medalViewer") -> str:
    """One self-contained HTML document that inlines vis-network and the viewer and calls
    ``MedalViewer.<mount>(#element, data)``, keeping the result as ``window.<name>``
    (``mount``: one run; ``compare``: :class:`medal.comparison.Comparison`)."""
    vis_js, vis_css = vis_assets()
    return (_PAGE.replace("{{CSP}}", CSP)
            .replace("{{TITLE}}", _html.escape(title[:200]))
            .replace("{{VIS_CSS}}", _inline(vis_css, "style"))
            .replace("{{CSS}}", _inline(viewer_css(), "style"))
            .replace("{{VIS_JS}}", _inline(vis_js))
            .replace("{{JS}}", _inline(viewer_js()))
            .replace("{{ELEMENT}}", element).replace("{{NAME}}", name)
            .replace("{{MOUNT}}", mount)
            .replace("{{DATA}}", pack(data)))


_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{{CSP}}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{TITLE}}</title>
<style>{{VIS_CSS}}</style>
<style>{{CSS}}</style>
<style>body { margin: 0; } .medal-standalone { padding: 8px 14px; }</style>
</head><body>
<div id="{{ELEMENT}}" class="medal-standalone"></div>
<script>{{VIS_JS}}</script>
<script>{{JS}}</script>
<script id="medal-data" type="application/gzip;base64">{{DATA}}</script>
<script>
MedalViewer.unpack(document.getElementById("medal-data").textContent).then(function (data) {
  window.{{NAME}} = MedalViewer.{{MOUNT}}(document.getElementById("{{ELEMENT}}"), data,
                                         {host: "page"});
}).catch(function (err) {
  document.getElementById("{{ELEMENT}}").textContent =
    "This browser cannot open the page (" + err + "); use a current Chromium, Firefox or Safari.";
});
</script>
</body></html>
"""


# ---------------------------------------------------------------------- notebooks

class Display:
    """What :func:`medal.show` returns: it displays itself in Jupyter (an inline frame
    holding the self-contained page: offline, its scripts isolated from the notebook's)."""

    def __init__(self, trace: dict, height: int = 860):
        self.trace = trace
        self.height = height

    def html(self) -> str:
        return page(self.trace)

    def _repr_html_(self) -> str:
        doc = _html.escape(self.html(), quote=True)
        return (f'<iframe class="medal-show" srcdoc="{doc}" style="width:100%;'
                f'height:{self.height}px;border:1px solid #ddd" '
                'sandbox="allow-scripts"></iframe>')

    def save(self, path) -> Path:
        path = Path(path)
        path.write_text(self.html(), encoding="utf-8")
        return path


class Trace(dict):
    """A trace (still a plain dict to every function that takes one) that shows itself
    as the viewer in a notebook: ``medal.Trace(medal.load_trace("run.json"))``."""

    def _repr_html_(self) -> str:
        return show(self)._repr_html_()


def show(trace_or_run, height: int = 860) -> Display:
    """A run or trace as the viewer, inline in a notebook: ``medal.show(run)``,
    ``medal.show(medal.load_trace("run.json"))``."""
    from_run = hasattr(trace_or_run, "trace") and not isinstance(trace_or_run, dict)
    trace = getattr(trace_or_run, "trace", trace_or_run) if from_run else trace_or_run
    if isinstance(trace, Trace):
        trace = dict(trace)
    if not isinstance(trace, dict) or not trace.get("run"):
        raise TypeError("medal.show takes a Run (made with trace=True) or a trace dict")
    if not from_run:
        # a dict may come from anywhere (json.load of a received file): through the one
        # gate, as medal.load_trace would (TraceError naming the place, or a trace fit to
        # render); a Run's own trace is the engine's
        from ..trace import validate_trace
        trace = validate_trace(trace)
    return Display(trace, height)


lend("show", show)   # a traced Run's notebook display (medal.extensions)
