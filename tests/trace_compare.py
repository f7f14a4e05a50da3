"""Comparing two traces: every key of the old one must be in the new one with the same
value, floats within a tolerance (shared by the reference-trace and example tests)."""
from __future__ import annotations

import math


def differences(old, new, path="", out=None, rel=1e-6, abs_tol=1e-9):
    """Where ``new`` departs from ``old``: every key ``old`` has must be in ``new`` with the
    same value (floats to ``rel``; ``old`` holds 10 significant digits). Keys only ``new``
    has (fields added later) are not differences."""
    out = [] if out is None else out
    if len(out) >= 10:
        return out
    if isinstance(old, dict):
        if not isinstance(new, dict):
            out.append(f"{path}: {type(new).__name__} instead of an object")
            return out
        for k, v in old.items():
            if k not in new:
                out.append(f"{path}/{k}: missing")
            else:
                differences(v, new[k], f"{path}/{k}", out, rel, abs_tol)
    elif isinstance(old, list):
        if not isinstance(new, list) or len(new) != len(old):
            out.append(f"{path}: {len(old)} items, now "
                       f"{len(new) if isinstance(new, list) else type(new).__name__}")
            return out
        for i, (a, b) in enumerate(zip(old, new)):
            differences(a, b, f"{path}/{i}", out, rel, abs_tol)
    elif isinstance(old, float) and isinstance(new, (int, float)) and not isinstance(new, bool):
        if not math.isclose(old, new, rel_tol=rel, abs_tol=abs_tol):
            out.append(f"{path}: {old!r} -> {new!r}")
    elif old != new or type(old) is not type(new) and not (
            isinstance(old, int) and isinstance(new, float) and float(old) == new):
        out.append(f"{path}: {old!r} -> {new!r}")
    return out
