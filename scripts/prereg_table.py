"""The results of the pre-registered comparison, recomputed from its committed records.

    python scripts/prereg_table.py            # print the tables (Markdown)
    python scripts/prereg_table.py --write    # and put them in docs/PREREGISTRATION.md

Reads only ``docs/records/avoid/prereg/t{T}-{run}.json`` (written by scripts/prereg.py
through scripts/records.py), rebuilds each run's per-problem verdicts and costs with
``scripts/records.load``, and computes exactly what docs/PREREGISTRATION.md fixed before
the run: each arm's accuracy (95% Wilson interval) and mean sequence forwards per
template; the primary tests (exact two-sided McNemar, Holm over the family of four); the
secondary tests (Holm over their family); each MEDAL search's candidate oracle and
random pick; the ranking of the arms per template and Kendall's tau between the two.
"""
from __future__ import annotations

import argparse
import math
import re
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from medal.bench import wilson_interval  # noqa: E402
from prereg_power import mcnemar_p  # noqa: E402
import records  # noqa: E402

RECORDS = ROOT / "docs" / "records" / "avoid" / "prereg"
DOC = ROOT / "docs" / "PREREGISTRATION.md"
TEMPLATES = (0, 1)
#: arm -> (run file, strategy in it); the names the pre-registration uses
ARMS = {
    "greedy": ("main", "greedy"),
    "medal": ("main", "medal"),
    "medal-order": ("main", "medal-order"),
    "medal random choice": ("main", "medal-random-choice"),
    "medal explore": ("explore", "medal"),
    "medal explore random choice": ("explore", "medal-random-choice"),
    "best-of-N": ("bst", "bst5"),
    "ots": ("main", "ots"),
    "soar": ("main", "soar"),
    "medal explore + verifier (exploratory)": ("verifier", "medal"),
}
PRIMARY = (("medal explore", "greedy"), ("medal explore", "medal explore random choice"))
SECONDARY = (("medal", "greedy"), ("medal-order", "greedy"), ("best-of-N", "greedy"),
             ("ots", "greedy"), ("soar", "greedy"), ("medal explore", "best-of-N"),
             ("medal explore", "ots"), ("medal explore", "soar"),
             ("medal", "medal random choice"))
START, END = "<!-- prereg-results:start -->", "<!-- prereg-results:end -->"


def holm(pvalues: list[float]) -> list[float]:
    """Holm-adjusted p-values, in the given order."""
    order = sorted(range(len(pvalues)), key=lambda i: pvalues[i])
    out, running = [0.0] * len(pvalues), 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(pvalues) - rank) * pvalues[i]))
        out[i] = running
    return out


def kendall_tau(x: list[float], y: list[float]) -> float:
    """Kendall's tau-b of two score lists (ties handled)."""
    n, conc, disc, tx, ty = len(x), 0, 0, 0, 0
    for i in range(n):
        for j in range(i + 1, n):
            a, b = x[i] - x[j], y[i] - y[j]
            if a == 0 and b == 0:
                continue
            if a == 0:
                tx += 1
            elif b == 0:
                ty += 1
            elif a * b > 0:
                conc += 1
            else:
                disc += 1
    denom = math.sqrt((conc + disc + tx) * (conc + disc + ty))
    return (conc - disc) / denom if denom else float("nan")


def load_arms(root: Path = RECORDS) -> dict:
    """{template: {arm: {"verified": [...], "sequences": [...], "candidates": [...]}}} from
    the records (arms whose run is not there are left out)."""
    out = {}
    for t in TEMPLATES:
        runs, arms = {}, {}
        for arm, (run, strategy) in ARMS.items():
            if run not in runs:
                runs[run] = records.load(root / f"t{t}-{run}.json")
            doc = runs[run]
            if doc is None or strategy not in doc["strategies"]:
                continue
            rows = sorted((r for r in doc["records"] if r["strategy"] == strategy),
                          key=lambda r: r["index"])
            arms[arm] = {"verified": [bool(r["verified"]) for r in rows],
                         "sequences": [r["sequence_forwards"] for r in rows],
                         "candidates": [[bool(c.get("final_verified")) for c in
                                         r.get("candidates") or []] for r in rows],
                         "problems": doc["problems"]}
        out[t] = arms
    return out


def pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def compare(arms: dict, a: str, b: str) -> tuple[int, int, float]:
    va, vb = arms[a]["verified"], arms[b]["verified"]
    plus = sum(x and not y for x, y in zip(va, vb))
    minus = sum(y and not x for x, y in zip(va, vb))
    return plus, minus, mcnemar_p(plus, minus)


def tables(data: dict) -> str:
    lines = []
    present = [t for t in TEMPLATES if data.get(t)]
    if not present:
        return "(no records yet: the comparison has not run)\n"
    problems = next(iter(data[present[0]].values()))["problems"]
    lines.append(f"Problems: {problems}; templates {', '.join(map(str, present))}.\n")
    lines.append("| arm | " + " | ".join(f"template {t}: accuracy (95% CI) | seqs"
                                         for t in present) + " |")
    lines.append("|---|" + "---|---|" * len(present))
    for arm in ARMS:
        cells = []
        for t in present:
            a = data[t].get(arm)
            if a is None:
                cells += ["(not run)", ""]
                continue
            k, n = sum(a["verified"]), len(a["verified"])
            lo, hi = wilson_interval(k, n)
            cells += [f"{pct(k / n)} ({pct(lo)}–{pct(hi)}), {k}/{n}",
                      f"{statistics.fmean(a['sequences']):.1f}"]
        lines.append(f"| {arm} | " + " | ".join(cells) + " |")
    lines.append("")
    lines.append("Each search's candidates (their phase-C answers): the oracle is right when any "
                 "is; the random pick is the expected accuracy of one drawn uniformly.\n")
    lines.append("| search | " + " | ".join(f"template {t}: oracle | random pick"
                                            for t in present) + " |")
    lines.append("|---|" + "---|---|" * len(present))
    for arm in ("medal", "medal explore"):
        cells = []
        for t in present:
            a = data[t].get(arm)
            rows = [c for c in (a or {}).get("candidates", []) if c]
            if not rows:
                cells += ["—", "—"]
                continue
            cells += [pct(statistics.fmean(any(c) for c in rows)),
                      pct(statistics.fmean(statistics.fmean(c) for c in rows))]
        lines.append(f"| {arm} | " + " | ".join(cells) + " |")
    for title, family in (("Primary tests (Holm over the four)", PRIMARY),
                          ("Secondary tests (Holm over their family)", SECONDARY)):
        rows, ps = [], []
        for t in present:
            for a, b in family:
                if a in data[t] and b in data[t]:
                    plus, minus, p = compare(data[t], a, b)
                    rows.append((t, a, b, plus, minus, p))
                    ps.append(p)
        adjusted = holm(ps)
        lines.append("")
        lines.append(f"**{title}** (exact two-sided McNemar; + right only with the first, "
                     "− only with the second):\n")
        lines.append("| template | first | second | accuracy | +/− | p | Holm p | at 0.05 |")
        lines.append("|---|---|---|---|---|---|---|---|")
        for (t, a, b, plus, minus, p), q in zip(rows, adjusted):
            acc = (f"{pct(statistics.fmean(data[t][a]['verified']))} vs "
                   f"{pct(statistics.fmean(data[t][b]['verified']))}")
            verdict = ("first better" if q < 0.05 and plus > minus else
                       "second better" if q < 0.05 else "no significant difference")
            lines.append(f"| {t} | {a} | {b} | {acc} | +{plus}/−{minus} | {p:.3g} | {q:.3g} | "
                         f"{verdict} |")
    lines.append("")
    lines.append("**Rankings per template** (by accuracy; equal accuracies share a rank):\n")
    ranked_arms = [arm for arm in ARMS if all(arm in data[t] for t in present)]
    for t in present:
        acc = {arm: statistics.fmean(data[t][arm]["verified"]) for arm in ranked_arms}
        order = sorted(ranked_arms, key=lambda a: -acc[a])
        lines.append(f"- template {t}: " + " > ".join(f"{a} ({pct(acc[a])})" for a in order))
    if len(present) == 2:
        x = [statistics.fmean(data[present[0]][a]["verified"]) for a in ranked_arms]
        y = [statistics.fmean(data[present[1]][a]["verified"]) for a in ranked_arms]
        lines.append(f"- Kendall's tau-b between the two templates' accuracies over the "
                     f"{len(ranked_arms)} arms: {kendall_tau(x, y):.2f}")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--write", action="store_true",
                    help=f"replace the results between the markers in {DOC.name}")
    ap.add_argument("--records", default=str(RECORDS))
    args = ap.parse_args(argv)
    text = tables(load_arms(Path(args.records)))
    print(text)
    if args.write:
        doc = DOC.read_text()
        if START not in doc or END not in doc:
            raise SystemExit(f"{DOC} has no {START} ... {END} markers")
        doc = re.sub(re.escape(START) + r".*?" + re.escape(END),
                     lambda m: f"{START}\n{text}{END}", doc, flags=re.S)
        DOC.write_text(doc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
