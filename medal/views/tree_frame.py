"""The tree's part of a frame: every drawn node and edge with its complete style (vis-network
keeps any field an update omits; a node's label says how many nodes below it the cap
leaves out, '+k↓' after its token), the legend's data, and the reward-outlier flag."""
from __future__ import annotations

import math

from .common import (VIRIDIS, candidate_ids, current_path, distinct_digits, latest_children,
                     lerp_colour, node_path, nodes_by_id, visible_token, winner_id)
from .tree import (CANDIDATE_COLOUR, H_GAP, LABEL_FONT, NEW_COLOUR, PATH_COLOUR, SMALL_FONT,
                   UNVISITED, WINNER_COLOUR, layout, visible_node_ids)


MAX_NODES = 300            # tree nodes drawn per position (the most visited are kept)
EDGE_COLOUR = "#9e9e9e"
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


def highlighted_path(trace: dict, nodes: dict | None = None) -> list[int]:
    """The path the tree highlights: the winner's once it is chosen, else the latest
    selection path."""
    nodes = nodes_by_id(trace) if nodes is None else nodes
    w = winner_id(trace)
    if w is not None and w in nodes:
        return node_path(nodes, w)
    return [n for n in current_path(trace) if n in nodes]


#: the most characters on a line of a node's label: siblings are H_GAP px apart and a
#: LABEL_FONT px monospace character is 0.6 of the font size wide, so two labels of this
#: width, centred under their nodes, leave a gap between them
LABEL_CHARS = int((H_GAP - 8) // (0.6 * LABEL_FONT))


def fit_token(text: str, n: int = LABEL_CHARS) -> str:
    """A token as a label's line shows it: spaces and breaks made visible, cut to ``n``."""
    return _short(visible_token(text), n) if len(visible_token(text)) > n else visible_token(text)


def _short(text: str, n: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[: n - 1] + "…"


class TreeContext:
    """What a tree node's drawing depends on beyond its own figures, at one position:
    the highlighted path, the latest expansion's children, the candidates, the winner,
    the siblings the selection weighed (with their UCB), the Q colour scale."""

    __slots__ = ("path", "path_set", "path_edges", "win", "path_colour", "new",
                 "with_reward", "cands", "ucb_rows", "scale")

    def __init__(self, trace: dict, kind: str, scale, nodes: dict, *, path=None,
                 cands=None):
        self.path = highlighted_path(trace, nodes) if path is None else path
        self.path_set = set(self.path)
        self.path_edges = set(zip(self.path, self.path[1:]))
        self.win = winner_id(trace)
        self.path_colour = WINNER_COLOUR if self.win is not None else PATH_COLOUR
        self.new = set(latest_children(trace)) if kind in ("expansion", "simulation") else set()
        self.with_reward = self.new if kind == "simulation" else set()
        self.cands = set(candidate_ids(trace) if cands is None else cands)
        self.ucb_rows: dict[int, dict] = {}
        its = trace.get("iterations") or []
        if kind == "selection" and its:
            for level in its[-1]["selection"]["levels"]:
                for row in level:
                    self.ucb_rows[row["node"]] = row
        self.scale = scale

    def marked(self) -> set[int]:
        """The nodes drawn differently from a plain node at this position."""
        return self.path_set | self.new | self.cands | set(self.ucb_rows) | (
            {self.win} if self.win is not None else set())


def node_item(trace: dict, n: dict, nodes: dict, ctx: TreeContext, xy: dict,
              hidden: int = 0) -> tuple[dict, bool, bool]:
    """One drawn node with every style field set: (vis item, Q clipped by the colour
    scale, r_IG flagged as an outlier). ``hidden``: the nodes below it the cap leaves
    out, said after its token on its label ("+k↓")."""
    nid = n["id"]
    q_lo, q_hi = ctx.scale if ctx.scale else (0.0, 0.0)
    win, path_set, new, cands = ctx.win, ctx.path_set, ctx.new, ctx.cands
    row = ctx.ucb_rows.get(nid)
    extra = []
    clipped = False
    if n["N"] > 0:
        t = 0.5 if q_hi <= q_lo else (n["Q"] - q_lo) / (q_hi - q_lo)
        colour = lerp_colour(t, VIRIDIS)
        if t > 1 or t < 0:
            clipped = True
            extra.append(f"Q = {n['Q']:.3f} lies {'above' if t > 1 else 'below'} the "
                         f"colour scale ({q_lo:g} to {q_hi:g}): drawn in its "
                         f"{'top' if t > 1 else 'bottom'} colour")
    else:
        colour = UNVISITED
    border = (WINNER_COLOUR if nid == win else ctx.path_colour if nid in path_set else
              NEW_COLOUR if nid in new else CANDIDATE_COLOUR if nid in cands else "#555555")
    shape = "star" if nid == win else "diamond" if nid in cands else "dot"
    # sized by N on an absolute scale: a backpropagation resizes only what it updates
    size = min(30.0, 9 + 4 * math.log2(1 + max(n["N"], 0)))
    if nid == win:
        size = max(size, 22)
    # every line at most LABEL_CHARS characters, so two siblings' labels never touch
    # (the full token is in the tooltip and the inspector): the id and the slot, then the
    # token, cut to fit
    action = n.get("action")
    head = f"#{nid}" + (f" @{action['slot']}" if action else " root")
    if nid == win:
        head = "★" + head
    if clipped:
        head += "⇡" if n["Q"] > q_hi else "⇣"
    lines = [head]
    # the nodes below it the cap leaves out, "+k↓", at the end of its token's line (the
    # root's first): a line of its own made a four-line label reach its child's below
    more = f" +{hidden}↓" if hidden else ""
    if action:
        lines.append(fit_token(action.get("token_text", str(action["token"])),
                               LABEL_CHARS - len(more)) + more)
    else:
        lines[0] += more
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
        extra.append(flag["text"])
    if nid in ctx.with_reward and n.get("r_ig") is not None:
        # three significant digits: a search's tiny rewards (0.00401, 0.00398) differ
        lines.append(f"r={n['r_ig']:.3g}" + ("⚠" if flag else ""))
        if n.get("completion"):
            lines.append(_short(n["completion"].replace("_", "·"), LABEL_CHARS))
        font_size, font_bg = SMALL_FONT, "#fff3c4"
    if hidden:
        # (in its own label: a mark of its own beside the node sat on some label,
        # wherever it went -- a sibling's, its parent's tall one)
        extra.append(f"{hidden} node{'s' if hidden != 1 else ''} below node {nid} not "
                     "drawn (fewer visits)")
    x, y = xy.get(nid, (0.0, 0.0))
    item = _node_style(
        nid=nid, label="\n".join(lines), x=x, y=y, shape=shape, size=round(size, 1),
        background=colour, border=border,
        border_width=(4 if (nid in path_set or nid == win or nid in new) else
                      2.5 if nid in cands else 1.5),
        dashes=[5, 4] if nid in new else False, font_size=font_size,
        font_background=font_bg, note=" · ".join(extra))
    return item, clipped, bool(flag)


def edge_item(n: dict, ctx: TreeContext, cache: dict | None = None) -> dict:
    """The edge from ``n``'s parent to ``n`` (both drawn); ``cache``: a frames memo's, so
    an unchanged edge is the same item (never a module-level cache: its long-lived items,
    made amid a large trace's short-lived ones, kept that trace's memory from going back
    to the system after it was gone -- 280 MB resident for 1 MB of edges)."""
    parent = n["parent"]
    on = (parent, n["id"]) in ctx.path_edges
    key = (parent, n["id"], ctx.path_colour if on else EDGE_COLOUR)
    e = cache.get(key) if cache is not None else None
    if e is None:
        e = _edge_style(f"{parent}-{n['id']}", parent, n["id"], colour=key[2],
                        width=4 if on else 1.2)
        if cache is not None:
            cache[key] = e
    return e


def tree_info(trace: dict, ctx: TreeContext, clipped, outliers, total: int,
              shown: int) -> dict:
    """What the viewer frames and explains about the tree at this position."""
    return {"path": ctx.path, "new": sorted(ctx.new), "candidates": sorted(ctx.cands),
            "winner": ctx.win, "ucb": sorted(ctx.ucb_rows), "clipped": sorted(clipped),
            "outliers": sorted(outliers), "total": total, "shown": shown,
            "root": (trace.get("tree") or {}).get("root", 0)}


def tree_parts(trace: dict, kind: str, max_nodes: int = MAX_NODES,
               scale: tuple[float, float] | None = None,
               n_scale: int | None = None, xy: dict | None = None,
               memo: dict | None = None) -> tuple[dict, dict, dict]:
    """(nodes, edges, info) for the tree at this position, from scratch: vis items keyed
    by id (every style field set) and what the viewer frames and explains (path, new
    children, candidates, winner, the siblings' UCB during a selection, what was
    clipped). :class:`medal.views.builder.FrameBuilder` makes the same items from the
    previous position's, drawing again only what changed."""
    nodes = nodes_by_id(trace)
    if not nodes:
        return {}, {}, {}
    ctx = TreeContext(trace, kind, scale, nodes)
    keep = visible_node_ids(trace, max_nodes)
    keep.update(ctx.path)
    xy = xy if xy is not None else layout(trace)   # (a node never moves: the full run's do)
    out_n, out_e, clipped, outliers = {}, {}, [], []
    below = hidden_below(nodes, keep)
    for nid in sorted(keep):
        n = nodes[nid]
        item, was_clipped, was_outlier = node_item(trace, n, nodes, ctx, xy,
                                                   below.get(nid, 0))
        out_n[str(nid)] = item
        if was_clipped:
            clipped.append(nid)
        if was_outlier:
            outliers.append(nid)
        if n.get("parent") is not None and n["parent"] in keep:
            e = edge_item(n, ctx)
            out_e[e["id"]] = e
    return out_n, out_e, tree_info(trace, ctx, clipped, outliers, len(nodes), len(keep))


def hidden_below(nodes: dict, keep: set) -> dict[int, int]:
    """Per drawn node, how many nodes below it are not drawn (those whose nearest drawn
    ancestor it is)."""
    out: dict[int, int] = {}
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
            out[anchor] = out.get(anchor, 0) + 1
    return out


def legend(scale, info: dict) -> dict:
    """The legend's content as data (the viewer writes it with textContent)."""
    return {"q": list(scale) if scale else None,
            # the two ends as text, with the decimals that tell them apart
            "q_text": ([f"{v:.{distinct_digits(scale)}f}" for v in scale] if scale else None),
            "stops": [lerp_colour(i / 8, VIRIDIS) for i in range(9)],
            "colours": {"path": PATH_COLOUR, "new": NEW_COLOUR, "candidate": CANDIDATE_COLOUR,
                        "winner": WINNER_COLOUR, "unvisited": UNVISITED},
            "clipped": len(info.get("clipped") or []),
            "hidden": (info.get("total") or 0) - (info.get("shown") or 0),
            "total": info.get("total") or 0}
