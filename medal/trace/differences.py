"""packed-2's differences: a node stored from its parent's values, a step's answer from the last.

Decoding them is bounded (:class:`_Budget`, :data:`~medal.trace.limits.DECODED_PER_BYTE`).
"""
from __future__ import annotations

import json
import sys

from .limits import DECODED_PER_BYTE, MAX_ANY_STRING

#: node fields that "packed-2" may store as differences from the parent node's: lists of
#: slot values ({"diff": [[slot, value], ...]}: the parent's list with these entries
#: replaced) and strings ({"diff": [head, tail, middle]}: the parent's first ``head``
#: characters, ``middle``, then its last ``tail`` characters). ``masked`` is packed-1's
#: 0/1 string. A decode step's ``answer`` may be such a string difference from the
#: previous step's answer (same list).
DIFF_LISTS = ("answer_ids", "completion_ids")
DIFF_STRINGS = ("masked", "sequence", "completion")


def _json_len(value) -> int:
    return len(json.dumps(value, allow_nan=False, separators=(",", ":")))


def _common_head(a: str, b: str) -> int:
    """The length of the longest common prefix (binary search over C-level slices)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _string_diff(base: str, value: str) -> list:
    """[head, tail, middle] with value == base[:head] + middle + base[len(base) - tail:]."""
    head = _common_head(base, value)
    room = min(len(base), len(value)) - head
    tail = _common_head(base[head:][::-1], value[head:][::-1]) if room > 0 else 0
    tail = min(tail, room)
    return [head, tail, value[head:len(value) - tail]]


def _same(a, b) -> bool:
    """Equal as JSON values, types included (1 and 1.0 and True differ)."""
    return type(a) is type(b) and (a == b if not isinstance(a, (dict, list)) else
                                   json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True))


def _diffed_node(node: dict, base: dict) -> dict:
    """A packed-1 node with the fields that are cheaper as differences from ``base`` (its
    parent's packed-1 record) stored so."""
    out = dict(node)
    for key in DIFF_LISTS:
        value, parent = node.get(key), base.get(key)
        if isinstance(value, list) and isinstance(parent, list) and len(value) == len(parent):
            changes = [[i, x] for i, (x, y) in enumerate(zip(value, parent))
                       if type(x) is not type(y) or x != y]
            if all(type(x) in (int, str) or x is None for _, x in changes) \
                    and _json_len(changes) + 9 < _json_len(value):
                out[key] = {"diff": changes}
    for key in DIFF_STRINGS:
        value, parent = node.get(key), base.get(key)
        if type(value) is str and type(parent) is str:
            diff = {"diff": _string_diff(parent, value)}
            if _json_len(diff) < _json_len(value):
                out[key] = diff
    action = node.get("action")
    if isinstance(action, dict) and isinstance(base.get("action_set"), list):
        for j, a in enumerate(base["action_set"]):
            if _same(a, action):
                out["action"] = {"from_action_set": j}
                break
    return out


class _OverBound(ValueError):
    """A packed list longer than the run's own settings or the operator's limits allow
    ("WHERE: what"): refused like the gate's bounds, before it is decoded."""


#: what a built list or text costs besides its entries (CPython's object headers: a list
#: 56 bytes, a text 40-80)
OBJECT_COST = 80


class _Budget:
    """What decoding may build, in bytes of memory: a list entry counts 8 (a pointer),
    a character 1, 2 or 4 (the width Python stores a text at), each list or text
    :data:`OBJECT_COST` more; the packed nodes' per-slot lists at the costs of
    :mod:`medal.trace.limits`."""

    def __init__(self, most: int | None):
        self.most, self.used = most, 0

    def spend(self, value, where: str) -> None:
        """Count a list or a text built, or (an int) what is about to be built."""
        self.used += value if type(value) is int else (
            8 * len(value) if isinstance(value, list) else len(value))
        if self.most is not None and self.used > self.most:
            raise _OverBound(f"{where}: the packed trace decodes to more than {self.most:,} "
                             f"bytes of memory ({DECODED_PER_BYTE} per byte of the size "
                             "limit, which the operator sets: MEDAL_MAX_TRACE_MB)")


def _apply_list_diff(parent, diff, where: str, budget: _Budget) -> list:
    if not isinstance(parent, list):
        raise ValueError(f"{where}: stored as differences from the parent's, which has none")
    changes = diff["diff"]
    if not isinstance(changes, list):
        raise TypeError(f"{where}: a difference is {{\"diff\": [[slot, value], ...]}}")
    budget.spend(OBJECT_COST + 8 * len(parent), where)   # counted before it is built
    out = list(parent)
    for change in changes:
        if not (isinstance(change, list) and len(change) == 2 and type(change[0]) is int
                and 0 <= change[0] < len(out)):
            raise ValueError(f"{where}: a change is [slot, value] with a slot of the "
                             f"parent's {len(out)}; got {str(change)[:40]}")
        out[change[0]] = change[1]
    return out


def _apply_string_diff(parent, diff, where: str, budget: _Budget) -> str:
    if type(parent) is not str:
        raise ValueError(f"{where}: stored as a difference from a text that is not there")
    d = diff["diff"] if isinstance(diff, dict) else None
    if not (isinstance(d, list) and len(d) == 3 and type(d[0]) is int and type(d[1]) is int
            and type(d[2]) is str):
        raise TypeError(f"{where}: a text difference is {{\"diff\": [head, tail, middle]}}")
    head, tail, middle = d
    if head < 0 or tail < 0 or head + tail > len(parent):
        raise ValueError(f"{where}: keeps {head} + {tail} characters of a text of "
                         f"{len(parent)}")
    if head + tail + len(middle) > MAX_ANY_STRING:
        raise ValueError(f"{where}: decodes to {head + tail + len(middle):,} characters; "
                         f"a trace's texts have at most {MAX_ANY_STRING:,}")
    # counted before it is built, in the bytes Python will hold: a text takes the width
    # of its widest character (4 bytes each for one astral character: the astral bomb of
    # issue 31 decoded to 4x its character count)
    budget.spend(OBJECT_COST + (head + tail + len(middle)) * _char_bytes(parent, middle), where)
    return parent[:head] + middle + parent[len(parent) - tail:]


def _char_bytes(*texts: str) -> int:
    """Bytes a character takes in a Python string holding all of ``texts``."""
    top = max((max(t) for t in texts if t), default="")
    return 4 if top > "\uffff" else 2 if top > "\xff" else 1


def _is_diff(value) -> bool:
    return isinstance(value, dict) and set(value) == {"diff"}


def _undiffed_node(i: int, node, flat: list, budget: _Budget):
    """A packed-2 node back in its packed-1 form, from ``flat`` (the earlier nodes, in
    packed-1 form)."""
    if not isinstance(node, dict):
        raise TypeError(f"tree/nodes/{i} is not an object")
    action = node.get("action")
    from_set = isinstance(action, dict) and set(action) == {"from_action_set"}
    keys = [k for k in DIFF_LISTS + DIFF_STRINGS if isinstance(node.get(k), dict)]
    if not keys and not from_set:
        return node
    parent = node.get("parent")
    if type(parent) is not int or not 0 <= parent < i:
        raise ValueError(f"tree/nodes/{i} is stored as differences from its parent "
                         f"{str(parent)[:20]}, which is not an earlier node (a node's "
                         "parent comes before it; no cycles)")
    base = flat[parent]
    out = dict(node)
    for key in keys:
        where = f"tree/nodes/{i}/{key}"
        if not _is_diff(node[key]):
            raise TypeError(f"{where}: a difference is {{\"diff\": ...}}")
        if key in DIFF_LISTS:
            out[key] = _apply_list_diff(base.get(key), node[key], where, budget)
        else:
            out[key] = _apply_string_diff(base.get(key), node[key], where, budget)
    if from_set:
        j, actions = action["from_action_set"], base.get("action_set")
        if not (type(j) is int and isinstance(actions, list) and 0 <= j < len(actions)
                and isinstance(actions[j], dict)):
            raise ValueError(f"tree/nodes/{i}/action: action {str(j)[:20]} of the parent's "
                             "action set is not there")
        out["action"] = dict(actions[j])
        budget.spend(sys.getsizeof(out["action"]), f"tree/nodes/{i}/action")
    return out


def _completion_refs(iterations: list, nodes: list) -> list:
    """Each simulation's completions that equal a node's completion as that node's id."""
    first: dict = {}
    for n in nodes:
        if type(n.get("completion")) is str:
            first.setdefault(n["completion"], n["id"])
    out = []
    for it in iterations:
        sim = it.get("simulation") if isinstance(it, dict) else None
        comps = sim.get("completions") if isinstance(sim, dict) else None
        if isinstance(comps, list) and all(type(c) is str or c is None for c in comps) \
                and any(c in first for c in comps):
            it = {**it, "simulation": {**sim, "completions": [
                first.get(c, c) if type(c) is str else c for c in comps]}}
        out.append(it)
    return out


def _completions_back(iterations, nodes: list) -> list:
    if not isinstance(iterations, list):
        return iterations
    out = []
    for k, it in enumerate(iterations):
        sim = it.get("simulation") if isinstance(it, dict) else None
        comps = sim.get("completions") if isinstance(sim, dict) else None
        if isinstance(comps, list) and any(type(c) is int for c in comps):
            back = []
            for j, c in enumerate(comps):
                if type(c) is int:
                    if not (0 <= c < len(nodes) and isinstance(nodes[c], dict)
                            and type(nodes[c].get("completion")) is str):
                        raise ValueError(f"iterations/{k}/simulation/completions/{j}: node "
                                         f"{str(c)[:20]} has no completion to stand for")
                    c = nodes[c]["completion"]
                back.append(c)
            it = {**it, "simulation": {**sim, "completions": back}}
        out.append(it)
    return out


def _diffed_steps(steps: list) -> list:
    out, prev = [], None
    for step in steps:
        answer = step.get("answer")
        if type(answer) is str and type(prev) is str:
            diff = {"diff": _string_diff(prev, answer)}
            if _json_len(diff) < _json_len(answer):
                step = {**step, "answer": diff}
        out.append(step)
        prev = answer
    return out

