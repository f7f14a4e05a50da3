"""A run's frames built position by position, each from the previous one plus what its
event changed (issue 41): the cost of a frame follows its event, not the tree's size.

:func:`medal.views.parts.frame_parts` defines a frame: every part at one position,
computed from the trace as it stood there (``timeline.trace_at``). Computing that at
every position walks every node at every position -- positions x nodes, tens of seconds
for a real-size search. :class:`FrameBuilder` makes the same frames in one forward pass:

* the tree as it stood is replayed (:class:`.tree_state.TreeReplay`), and only the nodes
  whose copy changed, whose marks changed (path, new children, candidates, winner, the
  siblings a selection weighed) or that entered or left the drawing are drawn again;
* the drawn set (the most visited nodes, :func:`medal.views.tree.visible_node_ids`) is
  kept in visit order, so finding it costs the cap, not the tree;
* the '+k↓' counts are recounted only at the drawn nodes whose hidden subtrees
  changed;
* each node's figures are computed again when its figures or its parent's visits changed,
  its card when it is made or first expanded;
* the other parts (header, grids, order, task view, candidates, step) cost the answer's
  length at most, from the same functions :func:`frame_parts` uses.

The tree's parts come out as changes (``{key: item}``, :data:`GONE` for a key removed),
the others whole; :class:`medal.views.frames.Encoder` takes both. Tests check the
builder's frames against :func:`frame_parts` at every position of every shipped example
(``tests/views/test_frames_incremental.py``) and count its work.
"""
from __future__ import annotations

import bisect

from ..timeline import MCTS_KINDS, _empty_after, trace_at
from .common import candidate_ids, nodes_by_id, run_config
from .order import one_position
from .parts import (_child_rows, card_for, card_key, head_part, node_stats_item,
                    other_parts)
from .tree import keep_with_ancestors, layout
from .tree_frame import (TreeContext, edge_item, node_item,
                         tree_info)
from .tree_state import TreeReplay, indexed_tree

#: a key removed from a part (in a part's changes)
GONE = object()


class _Visible:
    """The drawn set of :func:`medal.views.tree.visible_node_ids`, kept up to date: the
    nodes in visit order (most visited first, then by id) as a sorted list that a
    backpropagation updates in place, so each position costs the cap, not the tree."""

    def __init__(self):
        self.order: list[tuple[int, int]] = []    # (-N, id), sorted
        self.key: dict[int, tuple[int, int]] = {}

    def update(self, nodes, ids) -> None:
        for nid in ids:
            n = nodes.get(nid)
            new = None if n is None else (-n["N"], nid)
            old = self.key.get(nid)
            if old == new:
                continue
            if old is not None:
                del self.order[bisect.bisect_left(self.order, old)]
                del self.key[nid]
            if new is not None:
                bisect.insort(self.order, new)
                self.key[nid] = new

    def drawn(self, nodes, root, must: list[int], max_nodes: int) -> set[int]:
        if len(nodes) <= max_nodes:
            return set(nodes)
        keep: set[int] = set()

        def add(nid):
            out, seen, cur = [], set(), nid
            while cur is not None and cur in nodes and cur not in seen and cur not in keep:
                seen.add(cur)
                out.append(cur)
                cur = nodes[cur].get("parent")
            keep.update(out)

        add(root)
        for nid in must:
            if nid in nodes:
                add(nid)
        for _, nid in self.order:
            if len(keep) >= max_nodes:
                break
            keep_with_ancestors(keep, nodes, nid, max_nodes)
        return keep


class _Shape:
    """The tree's shape (:func:`medal.views.tree.tree_stats`' figures that the viewer's
    tree bar shows), kept up to date from the nodes made and the visits changed."""

    def __init__(self):
        self.n: dict[int, int] = {}            # node -> N
        self.depth: dict[int, int] = {}
        self.kids: dict[int, int] = {}         # node -> children
        self.levels: dict[int, list[int]] = {}  # depth -> [nodes, visits]
        self.unvisited = 0

    def add(self, nid: int, node: dict, parent) -> None:
        d, n = int(node.get("depth") or 0), int(node.get("N") or 0)
        self.n[nid], self.depth[nid] = n, d
        row = self.levels.setdefault(d, [0, 0])
        row[0] += 1
        row[1] += n
        self.unvisited += not n
        if parent is not None and parent != nid:
            self.kids[parent] = self.kids.get(parent, 0) + 1

    def remove(self, nid: int, parent) -> None:
        d, n = self.depth.pop(nid), self.n.pop(nid)
        row = self.levels[d]
        row[0] -= 1
        row[1] -= n
        if not row[0]:
            del self.levels[d]
        self.unvisited -= not n
        if parent is not None and parent in self.kids:
            self.kids[parent] -= 1
            if not self.kids[parent]:
                del self.kids[parent]

    def visit(self, nid: int, node: dict) -> None:
        n = int(node.get("N") or 0)
        old = self.n[nid]
        if n != old:
            self.levels[self.depth[nid]][1] += n - old
            self.unvisited += (not n) - (not old)
            self.n[nid] = n

    def figures(self) -> dict | None:
        if not self.n:
            return None
        # (children are counted only for a parent that is itself in the tree)
        outs = [k for p, k in self.kids.items() if p in self.n]
        depths = sorted(self.levels)
        return {"nodes": len(self.n), "depth": depths[-1], "expanded": len(outs),
                "leaves": len(self.n) - len(outs), "unvisited": self.unvisited,
                "branching": round(sum(outs) / len(outs), 2) if outs else 0.0,
                "visits": [self.levels[d][1] for d in depths],
                "per_level": [self.levels[d][0] for d in depths]}


class FrameBuilder:
    """Frames of ``trace`` in timeline order: :meth:`frame` for positions 0, 1, 2, ...
    (``timeline``: ``positions(trace)``; ``scale``: the run's Q colour scale)."""

    def __init__(self, trace: dict, timeline: list, *, max_nodes: int, scale, memo: dict):
        self.trace, self.timeline, self.max_nodes = trace, timeline, max_nodes
        self.scale_of_run, self.memo = scale, memo
        self.next = 0
        self.replay = TreeReplay(trace) if trace.get("tree") else None
        self.cache: dict = memo.setdefault("trace_at", {})
        self.xy: dict = {}
        self.room: dict = {}
        self.moved: set[int] = set()            # nodes the layout moved (a live run)
        self.visible = _Visible()
        # the tree's parts as drawn at the previous position
        self.tree_obj = None
        self.nodes: dict = {}
        self.drawn: set[int] = set()
        self.ctx: TreeContext | None = None
        self.clipped: set[int] = set()
        self.outliers: set[int] = set()
        self.edges: dict[int, str] = {}         # child id -> its edge's id
        self.hidden: dict[int, int] = {}        # drawn node -> '+k'
        self.subtree: dict[int, int] = {}       # node -> nodes in its subtree (with it)
        self.kids: dict[int, list[int]] = {}
        self.parent_of: dict[int, int | None] = {}   # the nodes drawn so far
        self.shape = _Shape()
        self.cards: dict[int, tuple] = {}       # node -> the card key drawn
        self.last_sel: dict[int, tuple] = {}    # node -> (iteration, row) of its last selection
        self.sel_seen = 0
        self.stats_key: dict = {}

    def grow(self, timeline: list) -> None:
        """The live trace grew: ``timeline`` is its positions now."""
        self.timeline = timeline
        if self.trace.get("tree"):
            if self.replay is None:
                self.replay = TreeReplay(self.trace)
            else:
                self.replay.sync(self.trace)
            if self.xy and len(self.xy) != len(self.trace["tree"]["nodes"]):
                # new nodes: the tree is laid out again, and what moved is drawn again
                xy = self.memo["layout"] = layout(self.trace)
                self.moved |= {nid for nid, at in xy.items() if self.xy.get(nid) != at}
                self.xy, self.room = xy, _child_rows(self.trace, xy)
                self.memo["kids"] = self.room

    # ------------------------------------------------------------------ the trace there
    def _at(self, index: int) -> tuple[dict, set[int] | None]:
        """The trace as it stood at ``index`` and the nodes whose copy changed since the
        previous position (None: the tree object changed as a whole)."""
        pos = self.timeline[index]
        if pos.kind in MCTS_KINDS or pos.kind == "root":
            it, kind = (0, "root") if pos.kind == "root" else (pos.iteration, pos.kind)
            changed = self.replay.advance(it, kind)
            t = dict(self.trace)
            if pos.kind == "root":
                t.update(tree=self.replay.tree(), iterations=[])
            else:
                its = self.trace.get("iterations") or []
                k = it
                current = its[k - 1] if 0 < k <= len(its) and its[k - 1]["iteration"] == k \
                    else next(x for x in its if x["iteration"] == k)
                cut = MCTS_KINDS.index(kind)
                kept = its[:k - 1] if current is its[k - 1] else \
                    [x for x in its if x["iteration"] < k]
                t.update(tree=self.replay.tree(),
                         iterations=kept + [{**current, **{x: None for x in MCTS_KINDS[cut + 1:]}}])
            return _empty_after(t), changed
        if self.replay is not None and "final_tree" not in self.cache and \
                index < len(self.timeline) - 1:
            nodes = [{k: v for k, v in n.items() if k != "candidate_final"}
                     for n in self.trace["tree"]["nodes"]]
            self.cache["final_tree"] = indexed_tree(self.trace["tree"]["root"], nodes,
                                                    {n["id"]: n for n in nodes})
        return trace_at(self.trace, index, self.timeline, cache=self.cache), None

    # ------------------------------------------------------------------ one frame
    def frame(self, index: int) -> tuple[dict, dict]:
        """(whole parts, changed parts) of position ``index`` (the next one)."""
        assert index == self.next, "frames are built in order"
        self.next += 1
        pos = self.timeline[index]
        t, changed = self._at(index)
        iters = t.get("iterations") or []
        scale = self.scale_of_run if (iters and iters[0].get("simulation")) else None
        tree = t.get("tree")
        changes: dict[str, dict] = {"n": {}, "e": {}, "s": {}, "a": {}}
        if tree is None:
            nodes: dict = {}
            self._tree_gone(changes)
            info: dict = {}
        else:
            by_id = getattr(tree, "by_id", None)
            nodes = by_id if by_id is not None else nodes_by_id(t)
            info = self._tree(t, pos, tree, nodes, changed, scale, changes)
        with one_position():
            head = head_part(self.trace, t, pos, info, nodes)
            parts = {"h": {"0": head},
                     **other_parts(self.trace, t, pos, scale, info, self.memo)}
        return parts, changes

    def _tree_gone(self, changes) -> None:
        for nid in self.drawn:
            changes["n"][str(nid)] = GONE
        for eid in self.edges.values():
            changes["e"][eid] = GONE
        for nid in self.parent_of:
            changes["s"][str(nid)] = GONE
            changes["a"][str(nid)] = GONE
        self.drawn, self.edges, self.hidden, self.nodes = set(), {}, {}, {}
        self.parent_of, self.kids, self.subtree, self.cards = {}, {}, {}, {}
        self.shape = _Shape()
        self.clipped, self.outliers = set(), set()
        self.tree_obj, self.ctx = None, None

    def _tree(self, t, pos, tree, nodes, changed, scale, changes) -> dict:
        if not self.xy:
            self.xy = self.memo.setdefault("layout", layout(self.trace))
            self.room = self.memo.setdefault("kids", _child_rows(self.trace, self.xy))
        whole = changed is None and tree is not self.tree_obj
        if whole:
            # another tree object (the final tree, or the trace's own at its last
            # position): compare every node once
            changed = {nid for nid, n in nodes.items() if self.nodes.get(nid) is not n
                       and self.nodes.get(nid) != n}
            changed |= set(self.parent_of) - set(nodes)
        elif changed is None:
            changed = set()
        born = [nid for nid in changed if nid in nodes and nid not in self.parent_of]
        gone = [nid for nid in changed if nid not in nodes and nid in self.parent_of]
        for nid in changed:
            if nid in nodes and nid in self.parent_of:
                self.shape.visit(nid, nodes[nid])
        for nid in born:
            p = self.parent_of[nid] = nodes[nid].get("parent")
            if p is not None:
                self.kids.setdefault(p, []).append(nid)
            self._grow(nodes, nid, +1)
            self.shape.add(nid, nodes[nid], p)
        gone_parents = {nid: self.parent_of.get(nid) for nid in gone}
        for nid in gone:
            self._grow(self.nodes, nid, -1)
            p = self.parent_of.pop(nid)
            if p in self.kids and nid in self.kids[p]:
                self.kids[p].remove(nid)
            self.shape.remove(nid, p)
        self.tree_obj, self.nodes = tree, nodes
        self.visible.update(nodes, changed)
        # the marks at this position, and the drawn set
        cands = candidate_ids(t)
        ctx = TreeContext(t, pos.kind, scale, nodes, cands=cands)
        # what visible_node_ids always draws: the latest selection path, the latest
        # expansion's children, the candidates, the winner
        its = t.get("iterations") or []
        must = (list(its[-1]["selection"]["path"]) if its else []) + _latest(t) + cands + (
            [ctx.win] if ctx.win is not None else [])
        keep = self.visible.drawn(nodes, tree.get("root"), must, self.max_nodes)
        keep.update(p for p in ctx.path if p in nodes)
        prev = self.ctx
        dirty = set(changed) | self.moved
        self.moved = set()
        dirty |= keep ^ self.drawn
        if prev is None or prev.scale != ctx.scale or whole:
            dirty |= keep
        else:
            dirty |= ctx.marked() ^ prev.marked()
            dirty |= ctx.new | prev.new | set(ctx.ucb_rows) | set(prev.ucb_rows)
            if prev.path_colour != ctx.path_colour:
                dirty |= ctx.path_set | prev.path_set
            dirty |= ctx.path_set ^ prev.path_set
        # the '+k↓' counts first: a node whose count changed is drawn again
        dirty |= self._hidden(nodes, keep, dirty, born, gone_parents)
        n_out, e_out = changes["n"], changes["e"]
        for nid in dirty:
            n = nodes.get(nid)
            if n is None or nid not in keep:
                if nid in self.drawn:
                    n_out[str(nid)] = GONE
                self.clipped.discard(nid)
                self.outliers.discard(nid)
                eid = self.edges.pop(nid, None)
                if eid is not None:
                    e_out[eid] = GONE
                continue
            item, clip, flag = node_item(t, n, nodes, ctx, self.xy, self.hidden.get(nid, 0))
            n_out[str(nid)] = item
            (self.clipped.add if clip else self.clipped.discard)(nid)
            (self.outliers.add if flag else self.outliers.discard)(nid)
            p = n.get("parent")
            if p is not None and p in keep:
                e = edge_item(n, ctx, self.memo.setdefault(("edges",), {}))
                old = self.edges.get(nid)
                if old is not None and old != e["id"]:
                    e_out[old] = GONE
                self.edges[nid] = e["id"]
                e_out[e["id"]] = e
            else:
                eid = self.edges.pop(nid, None)
                if eid is not None:
                    e_out[eid] = GONE
        self.drawn, self.ctx = keep, ctx
        self._stats(t, nodes, changed, ctx, prev, whole, changes)
        self._cards(t, nodes, changed, born, whole, changes)
        info = tree_info(t, ctx, self.clipped, self.outliers, len(nodes), len(keep))
        if pos.kind == "selection" and info.get("path"):
            info["room"] = self.room.get(info["path"][-1])
        return info

    def _grow(self, nodes, nid, by) -> None:
        cur, seen = nid, set()
        while cur is not None and cur in nodes and cur not in seen:
            seen.add(cur)
            self.subtree[cur] = self.subtree.get(cur, 0) + by
            cur = nodes[cur].get("parent")

    def _hidden(self, nodes, keep, dirty, born, gone_parents) -> set[int]:
        """The '+k↓' counts of the drawn nodes whose hidden subtrees changed; returns
        the nodes whose count changed."""
        anchors = set()
        for nid in dirty:
            if nid in keep or nid in self.hidden:
                anchors.add(nid)
            p = nodes[nid].get("parent") if nid in nodes else gone_parents.get(nid)
            if p is not None:
                anchors.add(p)
        for nid in list(born) + list(gone_parents):
            cur = nodes[nid].get("parent") if nid in nodes else gone_parents.get(nid)
            seen = set()
            while cur is not None and cur in nodes and cur not in keep and cur not in seen:
                seen.add(cur)
                cur = nodes[cur].get("parent")
            if cur is not None:
                anchors.add(cur)
        changed = set()
        for a in anchors:
            count = 0
            if a in keep:
                count = sum(self.subtree.get(c, 0) for c in self.kids.get(a, ()) if c not in keep)
            if count != self.hidden.get(a, 0):
                changed.add(a)
                if count:
                    self.hidden[a] = count
                else:
                    self.hidden.pop(a, None)
        return changed

    def _stats(self, t, nodes, changed, ctx, prev, whole, changes) -> None:
        its = t.get("iterations") or []
        fresh_rows = set()
        while self.sel_seen < len(its):
            it = its[self.sel_seen]
            for level in it["selection"]["levels"]:
                for row in level:
                    self.last_sel[row["node"]] = (it["iteration"], row)
                    fresh_rows.add(row["node"])
            self.sel_seen += 1
        dirty = set(changed) | fresh_rows
        for nid in changed:
            dirty.update(self.kids.get(nid, ()))
        if prev is None or whole:
            dirty |= set(nodes)
        else:
            dirty |= (ctx.cands ^ prev.cands) | ({ctx.win, prev.win} - {None})
        c = float(run_config(t).get("c", 0.1))
        out = changes["s"]
        for nid in dirty:
            n = nodes.get(nid)
            if n is None:
                out[str(nid)] = GONE
                continue
            out[str(nid)] = node_stats_item(t, n, nodes, c, self.last_sel.get(nid), ctx.win,
                                            ctx.cands, self.memo.setdefault("stats", {}))

    def _cards(self, t, nodes, changed, born, whole, changes) -> None:
        """The cards of the nodes made, expanded or simulated at this position."""
        todo = set(changed)
        for nid in born:
            p = nodes[nid].get("parent")
            if p is not None:
                todo.add(p)
        if whole:
            todo |= set(nodes)
        texts: dict = {}
        out = changes["a"]
        for nid in todo:
            if nid not in nodes:
                continue
            key = card_key(nid, nodes, self.kids)
            if self.cards.get(nid) == key:
                continue
            self.cards[nid] = key
            out[str(nid)] = card_for(t, nid, nodes, self.kids, texts,
                                     self.memo.setdefault("cards", {}))


def _latest(t) -> list[int]:
    its = t.get("iterations") or []
    if not its or not its[-1].get("expansion"):
        return []
    return list(its[-1]["expansion"]["children"])
