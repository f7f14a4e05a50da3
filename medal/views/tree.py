"""The search tree's fixed facts for the views: its layout, its Q colour scale, its shape
(:func:`tree_stats`, :func:`tree_graph`), and which nodes are drawn under a cap
(:func:`visible_node_ids`). :mod:`.tree_frame` draws each node from them, and the
viewer shows it with vis-network (shipped inside the pyvis package, inlined by
:mod:`medal.viewer.html_page`: nothing is fetched from outside the machine).

Each node is labelled with its action (token @ slot), coloured by Q on a scale fixed for
the whole run (:func:`q_scale`: not rescaled per frame, so one outlier does not repaint
the others), sized by N; its tooltip lists N, W, Q, UCB and r_IG (HTML-escaped: token
texts come from models and uploaded files). The current selection path, the nodes new
in this phase, the candidates and the winner stand out; during a simulation each new
child's label shows its r_IG and the start of its completion. Large trees are capped:
the most visited nodes are kept with all their ancestors, plus everything the current
iteration touched; the rest are summarised per parent as "+k hidden".

Positions are computed here (:func:`layout`), not by vis-network: a tidy tree (each
subtree under its parent, siblings side by side, linear time) of the *finished* run, so
a replay draws every position with the same positions and nothing moves while stepping
(issue 28), with a node's children drawn within FAMILY_SPAN where that keeps each of
them near its own children, so the step that makes them can show them all at a readable
scale (issue 41 #4). The viewer (:mod:`medal.viewer`) draws it -- the one drawing of the tree in
the app, the HTML export and a notebook; :func:`medal.tree_graph` gives the same tree as a
networkx graph.
"""
from __future__ import annotations

import math

from .common import candidate_ids, current_path, latest_children, nodes_by_id, node_path, winner_id

DEFAULT_MAX_NODES = 40

PATH_COLOUR = "#ff7f0e"     # the current selection path
NEW_COLOUR = "#e377c2"      # children made by the latest expansion
CANDIDATE_COLOUR = "#d4a017"
WINNER_COLOUR = "#d62728"
UNVISITED = "#d9d9d9"

H_GAP = 104         # px between sibling nodes (a simulation label of 11 characters at 15 px fits)
# The most a node's children may spread, first to last (canvas px), where the tidy layout
# spreads them wider: with their labels (~130 px) they then fit a 970 px tree box (the
# app's at 1440x900) at the smallest stepping scale, 0.8: (1000 + 130) x 0.8 + 24 <= 970.
FAMILY_SPAN = 1000
# A node with children moved by drawing its family narrower stays within REACH - half its
# children's spread of their middle, so it and they still share such a view (issue 41 #4).
REACH = 1000
V_GAP = 100         # px between depths (a path of 6 fits a 540 px box at scale 0.8)

# Label sizes (canvas px). The first view is never zoomed out below MIN_LABEL_PX / the
# smallest of them, so every label is at least MIN_LABEL_PX on screen (issue 10: labels
# were 6-10 px at 1024x768).
LABEL_FONT = 16     # a node's action
SMALL_FONT = 15     # the simulation's r_IG and completion, and "+k hidden"
MIN_LABEL_PX = 12

VIS_OPTIONS = {
    "layout": {"hierarchical": {"enabled": False}, "randomSeed": 0},
    "physics": {"enabled": False},
    "interaction": {"hover": True, "tooltipDelay": 80, "zoomView": True, "dragView": True,
                    "navigationButtons": False, "keyboard": False},
    "edges": {"arrows": {"to": {"enabled": True, "scaleFactor": 0.45}}, "smooth": False,
              "color": {"color": "#9e9e9e"}, "width": 1.2},
    "nodes": {"font": {"size": LABEL_FONT, "face": "monospace", "color": "#222222",
                       "strokeWidth": 3, "strokeColor": "#ffffff"},
              "borderWidth": 1.5},
}
# labels sit on a white box drawn over the edges, so an edge never runs through a label
VIS_OPTIONS["nodes"]["font"]["background"] = "rgba(255,255,255,0.85)"
VIS_OPTIONS["nodes"]["fixed"] = {"x": True, "y": True}


def layout(trace: dict) -> dict[int, tuple[float, float]]:
    """(x, y) of every node: a tidy tree (Reingold-Tilford, in Walker's form as made
    linear by Buchheim, Jünger and Leipert, 2002). y from the depth; each subtree drawn
    under its parent, its root centred over its children, siblings side by side in order
    of birth, H_GAP apart at least from any node on their layer, and a subtree packed as
    close to its left neighbour as its contour allows. Then a node's children that this
    spreads over more than FAMILY_SPAN are drawn that narrow, in place, where no child
    with children of its own moves too far from them (:func:`_squeeze`); the subtrees
    below keep their places, and the edges down to them slant. O(n) time, no recursion
    (a chain of thousands of nodes is laid out like any other tree). The root is at
    (0, 0).

    Positions depend on the whole tree: the viewer lays out the *finished* run once and
    draws every position of a replay with it, so nothing moves while stepping (issue 28
    #3). Nodes whose parent is missing (a malformed trace) start trees of their own,
    placed to the right."""
    tree = trace.get("tree") or {}
    nodes = tree.get("nodes") or []
    if not nodes:
        return {}
    ids = [n["id"] for n in nodes]
    index = {nid: i for i, nid in enumerate(ids)}
    count = len(ids)
    kids: list[list[int]] = [[] for _ in range(count)]
    parent = [-1] * count
    for i, n in enumerate(nodes):
        p = index.get(n.get("parent"))
        if p is not None and p != i:
            parent[i] = p
    order = sorted(range(count), key=lambda i: ids[i])    # children in order of birth
    for i in order:
        if parent[i] >= 0:
            kids[parent[i]].append(i)
    root = index.get(tree.get("root"))
    roots = ([root] if root is not None else []) + \
        [i for i in order if parent[i] < 0 and i != root]
    xy: dict[int, tuple[float, float]] = {}
    right_edge = None
    for r in roots:
        placed = _tidy(r, kids)
        if not placed:
            continue
        lo = min(x for x, _ in placed.values())
        hi = max(x for x, _ in placed.values())
        shift = -placed[r][0] if right_edge is None else right_edge + 2 * H_GAP - lo
        _squeeze(r, kids, placed)
        for i, (x, d) in placed.items():
            xy[ids[i]] = (x + shift, d * V_GAP)
        right_edge = hi + shift
    # nodes on a cycle of parents (never from load_trace): a row below everything
    rest = [i for i in order if ids[i] not in xy]
    if rest:
        bottom = max(y for _, y in xy.values()) + V_GAP if xy else 0.0
        for k, i in enumerate(rest):
            xy[ids[i]] = (k * H_GAP, bottom)
    return xy


def _squeeze(root: int, kids: list[list[int]], placed: dict[int, tuple[float, int]]) -> None:
    """Each family (a node's children) that the tidy layout spread wider than FAMILY_SPAN
    drawn that narrow, in place -- its gaps beyond H_GAP shrunk by one factor about the
    same middle, so it stays under its parent and inside its old stretch of its layer
    (where no other node is: the tidy layout keeps a family together) -- where no child
    that has children of its own moves further than REACH - half their spread from
    their middle: the nodes below keep their places (the edges down to them slant), and
    a child and its children must still share a view when it is expanded. A family
    wider than that stays as it was (the view then shows its parent and the children
    nearest to it). No edge crosses another (the children keep their order). Issue 41
    #4: the tidy layout of the large example spread 13 of its 96 expansions' children
    wider than the app's tree box holds at 0.8. O(n)."""
    stack = [root]
    while stack:
        v = stack.pop()
        c = [w for w in kids[v] if w in placed]
        stack.extend(c)
        if len(c) < 2:
            continue
        xs = [placed[w][0] for w in c]
        extra = xs[-1] - xs[0] - H_GAP * (len(c) - 1)     # the spread beyond H_GAP apart
        over = xs[-1] - xs[0] - FAMILY_SPAN
        if over <= 0 or extra <= 0:
            continue
        keep = max(0.0, 1 - over / extra)                 # the share of each gap's extra kept
        mid = (xs[0] + xs[-1]) / 2
        at, pos = 0.0, [0.0]
        for a, b in zip(xs, xs[1:]):
            at += H_GAP + (b - a - H_GAP) * keep
            pos.append(at)
        new = [mid - at / 2 + p for p in pos]
        if any(abs(x1 - x0) > REACH - _spread(w, kids, placed) / 2
               for w, x0, x1 in zip(c, xs, new) if kids[w]):
            continue
        for w, x in zip(c, new):
            placed[w] = (x, placed[w][1])


def _spread(v: int, kids: list[list[int]], placed: dict[int, tuple[float, int]]) -> float:
    """How wide ``v``'s children will be drawn: their tidy spread, at most FAMILY_SPAN."""
    xs = [placed[w][0] for w in kids[v] if w in placed]
    return min(xs[-1] - xs[0], FAMILY_SPAN) if xs else 0.0


def _tidy(root: int, kids: list[list[int]]) -> dict[int, tuple[float, int]]:
    """Buchheim-Jünger-Leipert's linear Walker layout of the subtree at ``root`` (indices
    into ``kids``): {index: (x, depth)}, siblings at least H_GAP apart. Iterative."""
    dist = float(H_GAP)
    x: dict[int, float] = {}
    mod: dict[int, float] = {}
    thread: dict[int, int] = {}
    ancestor: dict[int, int] = {}
    change: dict[int, float] = {}
    shift: dict[int, float] = {}
    number: dict[int, int] = {}      # 1-based place among its siblings
    up: dict[int, int] = {}          # parent within this tree
    mid: dict[int, float] = {}
    depth: dict[int, int] = {root: 0}

    def left(v):
        c = kids[v]
        return c[0] if c else thread.get(v)

    def right(v):
        c = kids[v]
        return c[-1] if c else thread.get(v)

    def place(v, brother):
        """v's x once its left brother (or None) is final: the end of firstwalk(v)."""
        if brother is None:
            x[v] = mid.get(v, 0.0)
        else:
            x[v] = x[brother] + dist
            if v in mid:
                mod[v] = x[v] - mid[v]

    def apportion(v, brother, first, default):
        if brother is None:
            return default
        vir = vor = v
        vil, vol = brother, first
        sir = sor = mod[v]
        sil, sol = mod[vil], mod[vol]
        while True:
            nl, nr = right(vil), left(vir)
            if nl is None or nr is None:
                break
            vil, vir, vol, vor = nl, nr, left(vol), right(vor)
            ancestor[vor] = v
            gap = (x[vil] + sil) - (x[vir] + sir) + dist
            if gap > 0:
                a = ancestor[vil]
                wl = a if up.get(a, -1) == up[v] else default
                subtrees = number[v] - number[wl]
                change[v] -= gap / subtrees
                shift[v] += gap
                change[wl] += gap / subtrees
                x[v] += gap
                mod[v] += gap
                sir += gap
                sor += gap
            sil += mod[vil]
            sir += mod[vir]
            sol += mod[vol]
            sor += mod[vor]
        if right(vil) is not None and right(vor) is None:
            thread[vor] = right(vil)
            mod[vor] += sil - sor
        else:
            if left(vir) is not None and left(vol) is None:
                thread[vol] = left(vir)
                mod[vol] += sir - sol
            default = v
        return default

    # first walk, post-order: a node's subtree is laid out when all its children's are
    stack = [(root, False)]
    seen = {root}
    while stack:
        v, done = stack.pop()
        if not done:
            x[v] = 0.0
            mod[v] = change[v] = shift[v] = 0.0
            ancestor[v] = v
            stack.append((v, True))
            for k, w in enumerate(kids[v]):
                if w in seen:           # a child reached twice (malformed): left out
                    continue
                seen.add(w)
                up[w] = v
                number[w] = k + 1
                depth[w] = depth[v] + 1
                stack.append((w, False))
            continue
        c = kids[v] = [w for w in kids[v] if up.get(w) == v]
        if not c:
            continue
        default = c[0]
        for k, w in enumerate(c):
            number[w] = k + 1
            brother = c[k - 1] if k else None
            place(w, brother)
            default = apportion(w, brother, c[0], default)
        s = ch = 0.0                     # execute the shifts
        for w in reversed(c):
            x[w] += s
            mod[w] += s
            ch += change[w]
            s += shift[w] + ch
        mid[v] = (x[c[0]] + x[c[-1]]) / 2
    place(root, None)
    # second walk: each node's x plus the sum of its ancestors' mod
    out: dict[int, tuple[float, int]] = {}
    stack2 = [(root, 0.0)]
    while stack2:
        v, m = stack2.pop()
        out[v] = (x[v] + m, depth[v])
        for w in kids[v]:
            stack2.append((w, m + mod[v]))
    return out


#: the node figures :func:`tree_graph` puts on each graph node
GRAPH_FIELDS = ("N", "W", "Q", "ucb", "r_ig", "reward", "verified", "depth",
                "created_iteration", "exhausted", "candidate", "sequence", "completion")


def tree_graph(trace: dict):
    """The trace's search tree as a :class:`networkx.DiGraph` (``medal.tree_graph``).

    One graph node per tree node, keyed by its id, an edge parent -> child. Each node
    carries the node's figures (:data:`GRAPH_FIELDS`: N, W, Q, UCB as ``ucb``, r_IG as
    ``r_ig``, reward, depth, the iteration that made it, sequence, completion ...), its
    ``action`` as ``slot``, ``token`` and ``token_text`` (None at the root), and its
    ``x``, ``y`` in the viewer's tidy layout (:func:`layout`); each edge the child's slot
    and token. The graph's own attributes: ``root``, the ``winner`` and ``candidates``
    of the search. Empty for a strategy without a tree. ::

        g = medal.tree_graph(medal.load_trace("run.json"))
        nx.shortest_path(g, g.graph["root"], g.graph["winner"])    # the winner's path
        max(g.nodes, key=lambda n: g.nodes[n]["N"])                 # the most visited
        medal.tree_stats(trace)                                    # depth, branching...
    """
    import networkx as nx

    from .common import candidate_ids, winner_id
    g = nx.DiGraph()
    tree = trace.get("tree") or {}
    nodes = tree.get("nodes") or []
    g.graph.update(root=tree.get("root"), winner=winner_id(trace) if nodes else None,
                   candidates=candidate_ids(trace) if nodes else [])
    xy = layout(trace)
    for n in nodes:
        action = n.get("action") or {}
        x, y = xy.get(n["id"], (None, None))
        g.add_node(n["id"], **{k: n.get(k) for k in GRAPH_FIELDS},
                   slot=action.get("slot"), token=action.get("token"),
                   token_text=action.get("token_text"), x=x, y=y)
    for n in nodes:
        p = n.get("parent")
        if p is not None and p in g and p != n["id"]:
            action = n.get("action") or {}
            g.add_edge(p, n["id"], slot=action.get("slot"), token=action.get("token"))
    return g


def tree_stats(trace_or_graph) -> dict:
    """The search tree's shape, from a trace or its :func:`tree_graph` (the same figures):
    ``nodes``, ``depth`` (the deepest node's), ``expanded`` (nodes with children),
    ``branching`` (mean children of an expanded node), ``leaves``, ``unvisited`` (N = 0), and per depth (a list, the root's
    first) ``per_level`` rows {depth, nodes, visits (sum of N), mean_q (over visited
    nodes, or None)}. All zero / empty without a tree. The viewer's tree bar shows them."""
    if hasattr(trace_or_graph, "out_degree"):
        g = trace_or_graph
        return _shape(list(g.nodes(data=True)), [d for _, d in g.out_degree()])
    # a trace: the same figures from its node list, without building the graph and its
    # layout (the viewer reads them at every update of a live run: 12-50 ms a time at
    # 1,000 nodes through the graph, ~1 ms from the list)
    nodes = (trace_or_graph.get("tree") or {}).get("nodes") or []
    ids = {n["id"] for n in nodes}
    kids: dict = {}
    for n in nodes:
        p = n.get("parent")
        if p is not None and p in ids and p != n["id"]:
            kids[p] = kids.get(p, 0) + 1
    return _shape([(n["id"], n) for n in nodes], [kids.get(n["id"], 0) for n in nodes])


def _shape(items: list, outs: list) -> dict:
    """tree_stats' figures from (id, figures) pairs and each one's number of children."""
    if not items:
        return {"nodes": 0, "depth": 0, "expanded": 0, "branching": 0.0, "leaves": 0,
                "unvisited": 0, "per_level": []}
    expanded = [d for d in outs if d]
    levels: dict[int, list] = {}
    for nid, data in items:
        levels.setdefault(int(data.get("depth") or 0), []).append(data)
    per_level = []
    for depth in sorted(levels):
        row = levels[depth]
        visited = [d["Q"] for d in row if (d.get("N") or 0) > 0 and d.get("Q") is not None]
        per_level.append({"depth": depth, "nodes": len(row),
                          "visits": sum(int(d.get("N") or 0) for d in row),
                          "mean_q": sum(visited) / len(visited) if visited else None})
    return {"nodes": len(items), "depth": max(levels),
            "expanded": len(expanded),
            "branching": sum(expanded) / len(expanded) if expanded else 0.0,
            "leaves": outs.count(0),
            "unvisited": sum(1 for _, d in items if not d.get("N")),
            "per_level": per_level}


def q_scale(trace: dict) -> tuple[float, float] | None:
    """The colour scale of Q, one for the run (a node keeps its colour while its Q is
    unchanged; one outlier repaints nothing else).

    A finished search (``trace["search"]`` recorded: a replay, a loaded trace, a live run
    past its search): the run's own Q range -- the visited nodes' Q in the final tree,
    their outliers left out (beyond 1.5 interquartile ranges from the quartiles, Tukey's
    fences: drawn in the end colours and flagged ⇡/⇣), from the lowest to the highest of
    the rest, rounded outwards at a tenth of the range's order of magnitude. So the Q
    values the run actually has get distinct colours (issue 28 #6: Sudoku's Q lie within
    -0.02-0.2 and the old scale, 0 to twice iteration 1's best reward, 0-0.45, painted
    nearly every node the same purple). A search in progress (a live run): 0 to twice the
    best reward of the root's children (iteration 1's simulation), fixed from iteration 1
    on; the viewer redraws a live run's frames once on the run's own range when its search
    ends. None before iteration 1's simulation (no node is visited yet)."""
    its = trace.get("iterations") or []
    sim = its[0].get("simulation") if its else None
    rewards = [r for r in (sim or {}).get("rewards", []) if isinstance(r, (int, float))]
    if not rewards:
        return None
    if trace.get("search"):
        qs = sorted(float(n["Q"]) for n in (trace.get("tree") or {}).get("nodes") or ()
                    if (n.get("N") or 0) > 0 and isinstance(n.get("Q"), (int, float))
                    and math.isfinite(n["Q"]))
        if len(qs) >= 2:
            def at(q):
                x = q * (len(qs) - 1)
                i = int(math.floor(x))
                return qs[i] + (qs[min(i + 1, len(qs) - 1)] - qs[i]) * (x - i)
            q1, q3 = at(0.25), at(0.75)
            fence = 1.5 * (q3 - q1)
            inner = [q for q in qs if q1 - fence <= q <= q3 + fence]
            lo, hi = inner[0], inner[-1]
            if hi - lo > 1e-9:
                step = 10 ** (math.floor(math.log10(hi - lo)) - 1)
                return (round(math.floor(lo / step) * step, 12),
                        round(math.ceil(hi / step) * step, 12))
    top = 2 * max(max(rewards), 1e-6)
    digits = max(0, -math.floor(math.log10(top)) + 1)
    return 0.0, math.ceil(top * 10 ** digits) / 10 ** digits


def visible_node_ids(trace: dict, max_nodes: int = DEFAULT_MAX_NODES) -> set[int]:
    """Which nodes to draw: everything the current iteration touched (the selection path
    and its new children), the candidates, the winner, then the most visited nodes --
    always with all their ancestors -- until ``max_nodes`` (the must-shows may exceed it)."""
    nodes = nodes_by_id(trace)
    if not nodes:
        return set()
    keep: set[int] = set()

    def add(nid: int) -> None:
        keep.update(node_path(nodes, nid))

    add(trace["tree"]["root"])
    for nid in current_path(trace) + latest_children(trace) + candidate_ids(trace):
        if nid in nodes:
            add(nid)
    w = winner_id(trace)
    if w in nodes:
        add(w)
    if len(nodes) <= max_nodes:
        return set(nodes)
    for n in sorted(nodes.values(), key=lambda n: (-n["N"], n["id"])):
        if len(keep) >= max_nodes:
            break
        keep_with_ancestors(keep, nodes, n["id"], max_nodes)
    return keep


def keep_with_ancestors(keep: set, nodes: dict, nid: int, max_nodes: int) -> None:
    """Add ``nid`` and its ancestors to ``keep`` if they all fit within ``max_nodes``.
    ``keep`` holds every ancestor of what it holds: the walk goes up to the first kept node
    only (a walk to the root per node was O(depth^2) on a chain)."""
    extra, cur = [], nid
    while cur is not None and cur in nodes and cur not in keep and len(extra) <= max_nodes:
        extra.append(cur)
        cur = nodes[cur].get("parent")
    if len(keep) + len(extra) <= max_nodes:
        keep.update(extra)
