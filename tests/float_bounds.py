"""How far a re-run's figures may lie from a recording made on another CPU, derived from
the arithmetic (issue 40; shared by tests/views/test_examples.py and
tests/analysis/test_repro.py).

Why the figures differ at all: one forward of the built-in model is a chain of float32
matrix products and reductions, and a CPU computes them with the vector kernels it has
(ATen picks AVX512, AVX2 or scalar code at start-up; MKL its own GEMM). The same forward
rounds differently on each: measured on the 446 states of countdown-large-search, the
logits of the three kernel sets of one AMD EPYC (ATEN_CPU_CAPABILITY=avx512 / avx2 /
default) differ by up to 1.7e-5 (of logits up to 19). The thread count does not change a
bit (1 and 2 threads give the recording back exactly, under load or not): it is the
kernel, so a check that holds on any machine needs a tolerance, not a setting.

The rule for a figure read off one forward (a probability, an entropy, a margin, a
score): within ``REL`` of its value, or ``ABS`` near 0 -- the existing rule, which covers
those figures with room (a logit error d moves a probability by at most 2d relatively,
and an entropy H = -sum p log p by at most 2d H, since the changes of p sum to 0).

What it does not cover is a figure made by cancelling two of them. The information gain
r = (S_p - S_c) / S_p (S_p: the parent's entropy summed over its n_p masked slots, S_c: the
child's over the rest, n_c slots) carries the error of both sums, |dS| <= REL S + ABS n,
divided by S_p:

    |dr| <= (|dS_p| (1 + |r|) + |dS_c|) / S_p

which is an absolute bound, and a large one relative to r when S_p is small (node 149 of
the large example, r = 0.133 under a nearly settled parent, S_p = 0.0132: its bound is
0.020; the AVX2 kernels moved it by 1.38e-5, 1.035e-4 of it, past the old rule's relative
1e-4) or when r is small. Over the 446 nodes the bounds' median is 4.8e-4. A node's W sums the rewards backed up through
it -- each node's reward is backed up once through every node above it, when it is made --
so |dW| <= the sum of the |dr| bounds of its subtree (itself included) and Q = W / N
within that sum over N; a UCB value is Q plus a term of counts, so it takes Q's. A
candidate's cumulative gain is r's formula from the root's sum to its remaining one.
"""
from __future__ import annotations

import math

from medal.trace import TopRows

#: a figure of one forward: relative, and absolute near 0 (see the module docstring)
REL, ABS = 1e-4, 5e-6

#: fields whose tolerance comes from r's formula (the node's own reward) or from its
#: subtree's rewards (Q, UCB; W scaled by N)
REWARD_KEYS = {"r_ig", "reward"}
MEAN_KEYS = {"Q", "ucb"}


def _sum_error(total: float, slots: int) -> float:
    return REL * abs(total) + ABS * slots


def gain_bound(parent_sum: float, parent_slots: int, rest_sum: float, rest_slots: int,
               gain: float | None) -> float:
    """|d gain| for gain = (parent_sum - rest_sum) / parent_sum (see the module docstring)."""
    if not parent_sum or parent_sum <= 0:
        return ABS        # nothing left to gain: the engine writes 0, exactly
    g = abs(gain) if isinstance(gain, (int, float)) else 1.0
    return (_sum_error(parent_sum, parent_slots) * (1 + g)
            + _sum_error(rest_sum, rest_slots)) / parent_sum


class Bounds:
    """The derived tolerances of one recorded trace, by node."""

    def __init__(self, trace: dict):
        nodes = (trace.get("tree") or {}).get("nodes") or []
        self.reward: dict[int, float] = {}
        for n in nodes:
            if n.get("parent") is None:
                continue
            p = nodes[n["parent"]]
            self.reward[n["id"]] = gain_bound(p["entropy_sum"], sum(map(bool, p["masked"])),
                                              n["entropy_sum"], sum(map(bool, n["masked"])),
                                              n.get("r_ig"))
        # a node's W sums the rewards of its subtree: the sum of their bounds
        self.total = {n["id"]: self.reward.get(n["id"], 0.0) for n in nodes}
        for n in reversed(nodes):           # children come after their parent
            parent = n.get("parent")
            if parent is not None:
                self.total[parent] += self.total[n["id"]]
        self.root_sum = nodes[0]["entropy_sum"] if nodes else None
        self.root_slots = sum(map(bool, nodes[0]["masked"])) if nodes else 0

    def of(self, key, record: dict | None, node: int | None, value) -> float | None:
        """The absolute tolerance of ``record[key]`` about ``node``, or None (the rule for a
        figure of one forward applies)."""
        if node is None:
            return None
        if key in REWARD_KEYS:
            return self.reward.get(node, math.inf)
        if key in MEAN_KEYS or key == "W":
            n = record.get("N") if isinstance(record, dict) else None
            n = n if type(n) is int and n > 0 else 1
            return self.total.get(node, math.inf) / (1 if key == "W" else n)
        if key in ("cumulative_ig", "score") and isinstance(record, dict) \
                and "remaining_entropy_sum" in record and self.root_sum:
            return gain_bound(record["root_entropy_sum"], self.root_slots,
                              record["remaining_entropy_sum"], self.root_slots, value)
        return None


def differences(old, new, *, limit: int = 10) -> list[str]:
    """Where ``new`` departs from ``old`` (every key of ``old`` in ``new``, the same value;
    keys only ``new`` has are not differences): discrete values exactly, floats within
    :class:`Bounds` for rewards and their means, else within ``REL``/``ABS``."""
    bounds = Bounds(old)
    out: list[str] = []
    _walk(old, new, [], out, bounds, None, None, limit)
    return out


def _node_of(path: list, record) -> int | None:
    if isinstance(record, dict) and type(record.get("node")) is int:
        return record["node"]
    if len(path) >= 3 and path[0] == "tree" and path[1] == "nodes" and type(path[2]) is int \
            and len(path) == 3:
        return record.get("id") if isinstance(record, dict) else None
    return None


def _walk(a, b, path, out, bounds, record, node, limit):
    if len(out) >= limit:
        return
    a, b = (list(x) if type(x) is TopRows else x for x in (a, b))  # a loaded node's rows
    where = "/" + "/".join(map(str, path))
    if isinstance(a, dict):
        if not isinstance(b, dict):
            out.append(f"{where}: {type(b).__name__} instead of an object")
            return
        here = _node_of(path, a)
        node_here = here if here is not None else node
        for k, v in a.items():
            if k not in b:
                out.append(f"{where}/{k}: missing")
            elif k == "rewards" and isinstance(a.get("children"), list):
                # a simulation: reward j is child j's
                for j, (x, y) in enumerate(zip(v, b[k] if isinstance(b[k], list) else [])):
                    child = a["children"][j] if j < len(a["children"]) else None
                    _leaf(x, y, f"{where}/{k}/{j}", out, bounds.of("r_ig", None, child, x))
                if not isinstance(b[k], list) or len(b[k]) != len(v):
                    out.append(f"{where}/{k}: {len(v)} items")
            else:
                _walk(v, b[k], path + [k], out, bounds, a, node_here, limit)
            if len(out) >= limit:
                return
    elif isinstance(a, list):
        if not isinstance(b, list) or len(b) != len(a):
            out.append(f"{where}: {len(a)} items, now "
                       f"{len(b) if isinstance(b, list) else type(b).__name__}")
            return
        for i, (x, y) in enumerate(zip(a, b)):
            _walk(x, y, path + [i], out, bounds, record, node, limit)
    else:
        key = path[-1] if path else None
        tol = bounds.of(key, record, node, a) if isinstance(a, float) else None
        _leaf(a, b, where, out, tol)


def _leaf(a, b, where: str, out: list, tol: float | None) -> None:
    if isinstance(a, float) and isinstance(b, (int, float)) and not isinstance(b, bool):
        ok = (abs(a - b) <= tol) if tol is not None else math.isclose(
            a, b, rel_tol=REL, abs_tol=ABS)
        if not ok:
            out.append(f"{where}: {a!r} -> {b!r}"
                       + (f" (derived bound {tol:.3g})" if tol is not None else ""))
    elif a != b or (type(a) is not type(b) and not (
            isinstance(a, int) and isinstance(b, float) and float(a) == b)):
        out.append(f"{where}: {a!r} -> {b!r}")
