"""Comparing two traces: every key of the old one must be in the new one with the same
value, floats within a tolerance (shared by the reference-trace and example tests). The
comparison lives in :mod:`medal.diff` (``medal diff`` builds on it)."""
from __future__ import annotations

from medal.diff import differences

__all__ = ["differences"]
