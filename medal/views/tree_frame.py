"""The tree's part of a frame: every drawn node and edge with its complete style (vis-network
keeps any field an update omits), the '+k' marks of the nodes the cap leaves out, the
legend's data, and the reward-outlier flag."""
from __future__ import annotations

import math

from .common import (VIRIDIS, action_label, candidate_ids, current_path, latest_children,
                          lerp_colour, node_path, nodes_by_id, winner_id)
from .tree import (CANDIDATE_COLOUR, H_GAP, LABEL_FONT, NEW_COLOUR, PATH_COLOUR,
                        SMALL_FONT, UNVISITED, V_GAP, WINNER_COLOUR, layout, visible_node_ids)


MAX_NODES = 300            # tree nodes drawn per position (the most visited are kept)
EDGE_COLOUR = "#9e9e9e"
HIDDEN_EDGE = "#cccccc"
#: an r_IG is flagged when its parent's total entropy (the formula's denominator) is
#: below this share of the root's: the ratio of two small numbers is then mostly noise
OUTLIER_SHARE = 0.05

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
