"""The numbers: a results file read, percentages, intervals, the exact paired test, p-values."""
from __future__ import annotations

import math
from pathlib import Path

#: the repository (this folder is scripts/results_doc/)
ROOT = Path(__file__).resolve().parents[2]


def load(path: Path):
    """The document at ``path``: a compact records file (docs/records/, issue 38) rebuilt
    from its records -- every summary recomputed -- or plain JSON (a test's bench file);
    None when there is none (the document then says "not run")."""
    import records   # scripts/records.py
    return records.load(path)


def pct(x):
    return f"{100 * x:.1f}%"


def ci(m):
    lo, hi = m["ci95"]
    return f"{100 * lo:.0f}–{100 * hi:.0f}%"


def mcnemar(a: dict, b: dict) -> tuple[int, int, float]:
    """Paired comparison on the same problems: (a right & b wrong, a wrong & b right,
    exact two-sided binomial p)."""
    common = sorted(set(a) & set(b))
    win = sum(a[i] and not b[i] for i in common)
    loss = sum(b[i] and not a[i] for i in common)
    n = win + loss
    if n == 0:
        return 0, 0, 1.0
    k = min(win, loss)
    p = sum(math.comb(n, j) for j in range(k + 1)) / 2 ** n
    return win, loss, min(1.0, 2 * p)


def verdicts(doc, strategy):
    return {r["index"]: bool(r["verified"]) for r in doc["records"] if r["strategy"] == strategy}


def first_summary(doc):
    return next(iter(doc["summary"].values()))


class Doc:
    def __init__(self, results: Path):
        self.r = results
        self.lines: list[str] = []

    def add(self, *lines):
        self.lines.extend(lines)

    def task(self, name):
        return load(self.r / name / "results.json")


def _acc(doc, s):
    return doc["summary"][s]["accuracy"] if doc and s in doc["summary"] else None


def _cmp(doc, a, b):
    """'x% vs y%: +r% relative (+w/−l, p)' for strategies a vs b on the same problems."""
    if not doc or a not in doc["summary"] or b not in doc["summary"]:
        return "(not run)", None
    ma, mb = doc["summary"][a], doc["summary"][b]
    w, lo_, p = mcnemar(verdicts(doc, a), verdicts(doc, b))
    rel = ma["accuracy"] / mb["accuracy"] - 1 if mb["accuracy"] else float("nan")
    return (f"{pct(ma['accuracy'])} ({ci(ma)}) vs {pct(mb['accuracy'])} ({ci(mb)}): "
            f"{rel:+.0%} relative, +{w}/−{lo_}, {_p(p)}"), (rel, p)


def _subset_note(ref: dict, other: dict) -> str:
    """' (the reference on these 100: 39.0%)' when ``other`` covers fewer problems."""
    common = set(ref) & set(other)
    if len(common) == len(ref):
        return ""
    return (f" (on these {len(common)} problems the reference has "
            f"{pct(sum(ref[i] for i in common) / len(common))})")


def _wl(doc, a, b):
    w, lo_, _ = mcnemar(verdicts(doc, a), verdicts(doc, b))
    return w, lo_


def _p(p: float) -> str:
    """'p<0.001', 'p=0.004', 'p=0.31'."""
    return "p<0.001" if p < 0.001 else f"p={p:.3f}" if p < 0.01 else f"p={p:.2f}"
