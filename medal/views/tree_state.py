"""The search tree as it stood at each position of the timeline, replayed forwards one
position at a time (:class:`TreeReplay`), so a run's frames cost what its events change,
not positions x nodes.

At every MCTS position the replay holds the node copies :func:`medal.timeline._tree_at`
defines (the node's figures after the latest backpropagation so far, the UCB of the
latest selection that considered it, a new child's reward hidden until its simulation,
``exhausted`` recomputed) -- but a copy is made again only when one of those figures
changes, and :attr:`TreeReplay.changed` names the nodes whose copy changed at the latest
step. ``tests/views/test_frames_incremental.py`` checks it against ``_tree_at`` at every
position of every shipped example.
"""
from __future__ import annotations

from types import MappingProxyType

from ..timeline import MCTS_KINDS

_ORDER = {k: i for i, k in enumerate(MCTS_KINDS)}
_MASKED = ("r_ig", "reward", "verified", "completion", "completion_ids")


class IndexedTree(dict):
    """A tree dict (``{"root", "nodes"}``) that also carries its indexes: ``by_id`` (id ->
    node, read only), so :func:`medal.views.common.nodes_by_id` answers without a walk
    over the nodes, and during a search ``candidates`` (those found so far, or None), so
    :func:`medal.views.common.candidate_ids` does not walk the iterations."""

    by_id: MappingProxyType
    candidates: tuple | None = None


def indexed_tree(root, nodes: list[dict], by_id: dict, candidates=None) -> IndexedTree:
    tree = IndexedTree(root=root, nodes=nodes)
    tree.by_id = MappingProxyType(by_id)
    tree.candidates = None if candidates is None else tuple(candidates)
    return tree


class TreeReplay:
    """Replays ``trace``'s tree position by position (:meth:`advance` to an MCTS position
    ``(iteration, kind)``, never backwards; the root's position is ``(0, "root")``)."""

    def __init__(self, trace: dict):
        self.root = trace["tree"]["root"]
        self._source: dict[int, dict] = {}
        self._rank: dict[int, int] = {}          # the trace's order
        self._born: dict[int, list[dict]] = {}
        self._admitted = -1     # created_iteration of the last bucket admitted
        self.by_id: dict[int, dict] = {}        # the copies at this position
        self.changed: set[int] = set()          # whose copy changed at the latest advance
        self.kids: dict[int, list[int]] = {}    # parent -> children admitted so far
        self._counted: dict[int, list[int]] = {}   # parent -> children created <= done_bp
        self._stats: dict[int, dict] = {}
        self._ucb: dict[int, object] = {}
        self._exhausted: dict[int, bool] = {}
        self._counted_to = -1   # created_iteration up to which children count (done_bp)
        self._selections = 0    # iterations whose selection rows are applied
        self._backprops = 0     # iterations whose backpropagation is applied
        self.candidates: list[int] = []         # found by the backpropagations applied
        self._masked: int | None = None      # the bucket whose rewards are hidden
        self._list: list[dict] = []             # the copies in the trace's order
        self._at: dict[int, int] = {}           # id -> index in _list
        self._snapshot: list[dict] | None = None
        self.position = (-1, "")
        self.sync(trace)

    def sync(self, trace: dict) -> None:
        """Take in what a live run's trace added since (nodes are only ever appended)."""
        self.iterations = trace.get("iterations") or []
        nodes = trace["tree"]["nodes"]
        for n in nodes[len(self._rank):]:
            self._source[n["id"]] = n
            self._rank[n["id"]] = len(self._rank)
            born = n.get("created_iteration", 0)
            self._born.setdefault(born, []).append(n)
            if born <= self._admitted:
                raise ValueError("a node was added to an iteration already replayed")

    # ------------------------------------------------------------------ stepping
    def advance(self, iteration: int, kind: str) -> set[int]:
        """Move to MCTS position ``(iteration, kind)``; returns :attr:`changed`."""
        if (iteration, _ORDER.get(kind, -1)) < (self.position[0], _ORDER.get(self.position[1], -1)):
            raise ValueError("a TreeReplay only moves forwards")
        self.position = (iteration, kind)
        dirty: set[int] = set()
        done_bp = iteration if kind == "backpropagation" else iteration - 1
        admit_to = iteration if (iteration == 0 or _ORDER.get(kind, -1) >= _ORDER["expansion"]) \
            else iteration - 1
        masked = iteration if (iteration > 0 and kind == "expansion") else None
        # selection rows of iterations[:iteration]: their UCBs
        while self._selections < min(iteration, len(self.iterations)):
            for level in self.iterations[self._selections]["selection"]["levels"]:
                for row in level:
                    self._ucb[row["node"]] = row["ucb"]
                    dirty.add(row["node"])
            self._selections += 1
        # backpropagations of iterations[:iteration] numbered <= done_bp
        while (self._backprops < min(iteration, len(self.iterations))
               and self.iterations[self._backprops]["iteration"] <= done_bp):
            bp = self.iterations[self._backprops].get("backpropagation")
            if bp:
                self.candidates.extend(bp.get("new_candidates", []))
                for u in bp["updates"]:
                    self._stats[u["node"]] = u
                    dirty.add(u["node"])
            self._backprops += 1
        # new nodes
        fresh: list[int] = []
        while self._admitted < admit_to:
            self._admitted += 1
            for n in self._born.get(self._admitted, ()):
                fresh.append(n["id"])
                dirty.add(n["id"])
                if n.get("parent") is not None:
                    self.kids.setdefault(n["parent"], []).append(n["id"])
        # rewards hidden at an expansion, shown from its simulation on
        if masked != self._masked:
            for m in (self._masked, masked):
                if m is not None:
                    dirty.update(n["id"] for n in self._born.get(m, ()))
            self._masked = masked
        # children counted for `exhausted`: created at or before done_bp
        recheck = set(fresh)
        while self._counted_to < done_bp:
            self._counted_to += 1
            for n in self._born.get(self._counted_to, ()):
                if n.get("parent") is not None:
                    self._counted.setdefault(n["parent"], []).append(n["id"])
                    recheck.add(n["parent"])
        dirty |= self._refresh_exhausted(recheck)
        self.changed = set()
        for nid in dirty:
            if nid in self._source and self._is_admitted(nid):
                copy = self._copy(nid)
                if copy != self.by_id.get(nid):
                    self._place(nid, copy)
                    self.changed.add(nid)
        if self.changed:
            self._snapshot = None
        return self.changed

    def _place(self, nid: int, copy: dict) -> None:
        self.by_id[nid] = copy
        i = self._at.get(nid)
        if i is not None:
            self._list[i] = copy
            return
        rank = self._rank[nid]
        if not self._list or self._rank[self._list[-1]["id"]] < rank:
            self._at[nid] = len(self._list)
            self._list.append(copy)
            return
        # a trace whose nodes are not listed in creation order (rare): insert in order
        at = next(k for k, n in enumerate(self._list) if self._rank[n["id"]] > rank)
        self._list.insert(at, copy)
        self._at = {n["id"]: k for k, n in enumerate(self._list)}

    def _is_admitted(self, nid: int) -> bool:
        return self._source[nid].get("created_iteration", 0) <= self._admitted

    def _copy(self, nid: int) -> dict:
        node = self._source[nid]
        s = self._stats.get(nid)
        copy = dict(node, N=s["N"] if s else 0, W=s["W"] if s else 0.0,
                    Q=s["Q"] if s else 0.0, ucb=self._ucb.get(nid))
        copy.pop("candidate_final", None)
        if self._masked is not None and node.get("created_iteration", 0) == self._masked:
            copy.update(dict.fromkeys(_MASKED))
        copy["exhausted"] = self._exhausted.get(nid, False)
        return copy

    def _refresh_exhausted(self, start: set[int]) -> set[int]:
        """``exhausted`` of ``start`` and, where it changes, of their ancestors: terminal
        from birth (no actions), or every counted child exhausted."""
        changed: set[int] = set()
        todo = sorted((nid for nid in start if nid in self._source and self._is_admitted(nid)),
                      key=lambda i: -self._source[i]["depth"])
        seen: set[int] = set()
        while todo:
            nid = todo.pop(0)
            if nid in seen:
                continue
            seen.add(nid)
            node = self._source[nid]
            kids = self._counted.get(nid)
            value = (not node.get("action_set")
                     or bool(kids) and all(self._exhausted.get(k, False) for k in kids))
            if self._exhausted.get(nid) != value:
                self._exhausted[nid] = value
                changed.add(nid)
                p = node.get("parent")
                if p is not None and p in self._source:
                    seen.discard(p)
                    todo.append(p)
                    todo.sort(key=lambda i: -self._source[i]["depth"])
        return changed

    # ------------------------------------------------------------------ reading
    def nodes(self) -> list[dict]:
        """The copies in the trace's order: a list of its own for each position at which
        the tree changed (a pointer copy), shared by the positions at which it did not."""
        if self._snapshot is None:
            self._snapshot = list(self._list)
        return self._snapshot

    def tree(self) -> IndexedTree:
        """The tree as it stands, with its indexes (the candidates found so far)."""
        return indexed_tree(self.root, self.nodes(), self.by_id, self.candidates)
