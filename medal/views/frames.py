"""Frames shared: the :class:`Encoder` stores every distinct value of a run's frames once
(a pool) and each frame as the keys that changed; :class:`Frames` builds a run's frames
once per position and extends them as a live trace grows; :func:`bundle` is what a host
hands to the browser."""
from __future__ import annotations

import json

from ..timeline import positions
from .tree import VIS_OPTIONS, q_scale
from .parts import frame_parts, meta
from .tree_frame import MAX_NODES


FORMAT = "medal-viewer/1"


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
        # the colour scale of Q (views.tree.q_scale): a live run's changes once, when its
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
