"""Frames shared: the :class:`Encoder` stores every distinct value of a run's frames once
(a pool) and each frame as the keys that changed; :class:`Frames` builds a run's frames
once per position and extends them as a live trace grows; :func:`bundle` is what a host
hands to the browser."""
from __future__ import annotations

import hashlib
import json

from ..timeline import positions
from .tree import VIS_OPTIONS, q_scale
from .beam import beam_view
from .builder import GONE, FrameBuilder
from .parts import meta
from .tree_frame import MAX_NODES


FORMAT = "medal-viewer/1"


# ---------------------------------------------------------------------- sharing

class Encoder:
    """Turns frames into shared ones, incrementally (a live run adds frames as the engine
    makes them): a pool of distinct values and, per frame, the keys that changed.

    :meth:`add` takes a frame as whole parts (``{part: {key: value}}``: keys missing
    from a part are removed) and/or as changes (``{part: {key: value or GONE}}``). Only
    the current state is kept (part -> key -> pool index); :meth:`truncate` rebuilds an
    earlier one from the frames' changes."""

    def __init__(self):
        self.pool: list = []
        self._index: dict[bytes, int] = {}
        self.frames: list[dict] = []
        self._state: dict[str, dict] = {}
        self._last: dict = {}   # the previous frame's whole parts (the objects, by part)

    def _intern(self, value) -> int:
        # keyed by a 128-bit digest of the value's JSON, not the text itself (issue 41:
        # the texts were 53 MB of the 1,001-node trace's frames); two distinct values
        # share one with a probability of about n^2 / 2^129 (n values: ~10^-30 here)
        key = hashlib.blake2b(json.dumps(value, sort_keys=True, ensure_ascii=False,
                                         allow_nan=False).encode("utf-8", "surrogatepass"),
                              digest_size=16).digest()
        i = self._index.get(key)
        if i is None:
            i = self._index[key] = len(self.pool)
            self.pool.append(value)
        return i

    def truncate(self, n: int) -> None:
        """Forget frames from ``n`` on (the pool keeps its values)."""
        del self.frames[n:]
        self._state, self._last = {}, {}
        for delta in self.frames:
            for p, ch in delta.items():
                d = self._state.setdefault(p, {})
                for k in range(0, len(ch), 2):
                    if ch[k + 1] < 0:
                        d.pop(ch[k], None)
                    else:
                        d[ch[k]] = ch[k + 1]

    def _put(self, before: dict, k, v, out: list) -> None:
        i = before.get(k)
        # unchanged (often the very same object): no serialisation needed
        if i is None or not (self.pool[i] is v or self.pool[i] == v):
            i = self._intern(v)
        if before.get(k) != i:
            before[k] = i
            out += [k, i]

    def add(self, parts: dict[str, dict] | None = None,
            changes: dict[str, dict] | None = None) -> dict:
        delta: dict[str, list] = {}
        pool = self.pool
        for p, items in (parts or {}).items():
            last = self._last.get(p)
            if p in self._state and items is last:
                continue    # the very same part as the previous frame's: unchanged
            before = self._state.setdefault(p, {})
            last = last or {}
            out: list = []
            for k, v in items.items():
                if last.get(k) is v and k in before:
                    continue    # the very object the previous frame had here
                i = before.get(k)
                if i is None or not (pool[i] is v or pool[i] == v):
                    i = self._intern(v)
                    if before.get(k) != i:
                        before[k] = i
                        out += [k, i]
            if len(before) > len(items):
                for k in [k for k in before if k not in items]:
                    del before[k]
                    out += [k, -1]
            if out:
                delta[p] = out
            self._last[p] = items
        for p, items in (changes or {}).items():
            before = self._state.setdefault(p, {})
            out = delta.setdefault(p, [])
            for k, v in items.items():
                if v is GONE:
                    if k in before:
                        del before[k]
                        out += [k, -1]
                else:
                    self._put(before, k, v, out)
            if not out:
                del delta[p]
        self.frames.append(delta)
        return delta


class Frames:
    """A run's frames, each built from the previous one (:class:`.builder.FrameBuilder`)
    and extended as a live trace grows."""

    def __init__(self, key: str, max_nodes: int = MAX_NODES):
        self.key = key
        self.max_nodes = max_nodes
        self.enc = Encoder()
        self.labels: list[str] = []
        self.kinds: list[str] = []
        self.meta: dict = {}
        self.dirty_from = 0      # the first frame the latest update() (re)computed
        self._memo: dict = {}
        self._builder: FrameBuilder | None = None
        self._trace = None

    def update(self, trace: dict, *, final: bool = True) -> None:
        """Frames for every position of ``trace``. A growing trace (the same dict: a live
        run's) adds only its new positions' frames, each from the previous one; any other
        change builds them again from the start."""
        pos = positions(trace)
        # the colour scale of Q (views.tree.q_scale): a live run's changes once, when its
        # search ends (iteration 1's rule, then the run's own range); every frame is then
        # drawn again on it, so a live run's frames equal its replay's
        scale = q_scale(trace)
        n = len(self.labels)
        grown = (self._builder is not None and trace is self._trace and len(pos) >= n
                 and scale == self._memo.get("scale_drawn", scale)
                 # a live trace only ever adds positions: its last known one is unchanged
                 and (n == 0 or pos[n - 1].label == self.labels[-1]))
        self._memo["scale_drawn"] = scale
        if grown:
            self._builder.grow(pos)
        else:
            for k in ("layout", "kids", "trace_at", "final_parts"):
                self._memo.pop(k, None)
            self._builder = FrameBuilder(trace, pos, max_nodes=self.max_nodes, scale=scale,
                                         memo=self._memo)
            self.enc.truncate(0)
            self.labels, self.kinds = [], []
        self._trace = trace
        self.dirty_from = len(self.labels)
        for i in range(len(self.labels), len(pos)):
            parts, changes = self._builder.frame(i)
            self.enc.add(parts, changes)
            self.labels.append(pos[i].label)
            self.kinds.append(pos[i].kind)
        self.meta = meta(trace, self._builder.shape.figures()) if trace.get("run") else {}
        beam = beam_view(trace, pos)    # an OTS or SOAR run's beam tree (views/beam.py)
        if beam is not None:
            self.meta["beam"] = beam

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
