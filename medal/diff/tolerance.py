"""The tolerance rules: two JSON values compared, floats within ``rel``/``abs_tol``; a near tie."""
from __future__ import annotations

import math

from ..trace.toprows import TopRows

#: two values are a near tie when they differ by no more than this, relatively (about 8
#: float32 ulps: the rounding another CPU's kernels may give the same forward)
NEAR_TIE_REL = 1e-6
#: default tolerance of ``equal_within_tolerance`` (measured between CPUs on the shipped
#: examples: 1.2e-6 relative on probabilities, 1.8e-6 absolute on margins)
REL, ABS = 1e-4, 5e-6


def _walk(a, b, path, out, rel, abs_tol, limit, one_way):
    """Append (path, a, b, message) for each place ``b`` departs from ``a``. One way: keys
    only ``b`` has are not differences (fields added later)."""
    if len(out) >= limit:
        return
    if type(a) is TopRows:      # a loaded node's top tokens: compared as the rows they are
        a = list(a)
    if type(b) is TopRows:
        b = list(b)
    if isinstance(a, dict):
        if not isinstance(b, dict):
            out.append((path, a, b, f"{type(b).__name__} instead of an object"))
            return
        for k, v in a.items():
            if k not in b:
                out.append((f"{path}/{k}", v, None, "missing"))
            else:
                _walk(v, b[k], f"{path}/{k}", out, rel, abs_tol, limit, one_way)
            if len(out) >= limit:
                return
        if not one_way:
            for k in b:
                if k not in a:
                    out.append((f"{path}/{k}", None, b[k], "only in B"))
    elif isinstance(a, list):
        if not isinstance(b, list) or len(b) != len(a):
            out.append((path, a, b, f"{len(a)} items, now "
                                    f"{len(b) if isinstance(b, list) else type(b).__name__}"))
            return
        for i, (x, y) in enumerate(zip(a, b)):
            _walk(x, y, f"{path}/{i}", out, rel, abs_tol, limit, one_way)
            if len(out) >= limit:
                return
    elif isinstance(a, float) and isinstance(b, (int, float)) and not isinstance(b, bool):
        if not math.isclose(a, b, rel_tol=rel, abs_tol=abs_tol):
            out.append((path, a, b, f"{a!r} -> {b!r}"))
    elif a != b or type(a) is not type(b) and not (
            isinstance(a, int) and isinstance(b, float) and float(a) == b):
        out.append((path, a, b, f"{a!r} -> {b!r}"))


def differences(old, new, path="", out=None, rel=1e-6, abs_tol=1e-9):
    """Where ``new`` departs from ``old``: every key ``old`` has must be in ``new`` with the
    same value (floats to ``rel``; ``old`` holds 10 significant digits). Keys only ``new``
    has (fields added later) are not differences. At most 10, as ``"path: message"``."""
    out = [] if out is None else out
    found: list = []
    _walk(old, new, path, found, rel, abs_tol, 10 - len(out), True)
    out.extend(f"{p}: {m}" for p, _, _, m in found)
    return out


def _paths(a, b, rel, abs_tol, limit=10) -> list[tuple]:
    """Both ways: (path, a, b, message)."""
    found: list = []
    _walk(a, b, "", found, rel, abs_tol, limit, False)
    return found


def _near_tie(x, y) -> bool:
    if x is None or y is None:
        return x is None and y is None
    if isinstance(x, float) and isinstance(y, float) and (math.isinf(x) or math.isinf(y)):
        return x == y
    return abs(x - y) <= NEAR_TIE_REL * max(abs(x), abs(y), 1e-12)
