"""The verdict rules: a paired outcome, a sweep's verdict, and how the per-task verdicts combine."""
from __future__ import annotations

from .figures import _p, mcnemar


#: significance level of every paired test behind a verdict
ALPHA = 0.05
TASK_TITLES = {"countdown": "Countdown", "sudoku": "Sudoku", "pick": "Pick", "twins": "Twins"}
#: the order verdicts are listed in, worst news first
VERDICT_ORDER = ("reversed", "untested", "not reproduced", "partly", "reproduced")
RULES = (
    "Verdict rules, per task, from the paired test on the same problems (exact McNemar, "
    f"p < {ALPHA}): **reproduced** — the paper's direction, significant, and the issue's "
    "target met where it sets one; **partly** — the paper's direction and significant, "
    "but the target missed (e.g. below +20% relative, or over a third of Best-of-5's cost); "
    "**not reproduced** — no significant difference either way; **reversed** — a "
    "significant difference AGAINST the paper's direction; **untested** — no two of the "
    "settings compared ran different searches (the search made the same choices on every "
    "problem, so there is nothing to compare; for MCTS iterations, a budget that stops the "
    "search before depth L_c shortens L_c rather than the search, so only the settings that "
    "reach L_c count, and the claim is **untested** where they all ran one search — the "
    "budget never binds). Claims over a range of settings (L_c, MCTS "
    "iterations) are judged over every setting: each step from one distinct search to the "
    "next larger is a paired test, printed in the cell; a significant loss at any step is "
    "**reversed**, a significant gain at some step and no loss **reproduced**. K2 = 5 is "
    "tested against every setting that ran another search, each with its p. A claim's "
    "verdict lists each task's.")


def paired_outcome(wins: int, losses: int, p: float, target_met: bool = True) -> str:
    """One task's verdict for 'the first beats the second' from the paired counts
    (wins = right only in the first, losses = right only in the second)."""
    if p < ALPHA and losses > wins:
        return "reversed"
    if p < ALPHA and wins > losses:
        return "reproduced" if target_met else "partly"
    return "not reproduced"


def combine(per_task: dict) -> str:
    """'**reversed** (Sudoku); **not reproduced** (Countdown)' from {task: verdict}."""
    got = {t: v for t, v in per_task.items() if v}
    if not got:
        return "not run"
    parts = []
    for v in VERDICT_ORDER:
        tasks = [TASK_TITLES.get(t, t) for t, vv in got.items() if vv == v]
        if tasks:
            parts.append(f"**{v}** ({', '.join(tasks)})")
    return "; ".join(parts)


def same_search_groups(rows) -> list[list]:
    """The sweep's settings grouped by the search they ran: settings whose search made
    the same choices on every problem (equal fingerprints) form one group. Rows without
    search figures each form their own group."""
    groups: dict = {}
    for r in rows:
        fp = (r.get("search") or {}).get("fingerprint") or ("row", r["value"])
        groups.setdefault(fp, []).append(r["value"])
    return list(groups.values())


def sweep_outcome(param, rows, lc: int | None = None) -> tuple[str, str]:
    """(verdict, note) for one task's sweep of ``param`` under the rules above (issue 30).

    **untested** only when no two settings ran different searches (one fingerprint for
    all). Settings that ran the same search count once (the smallest stands for them).
    lc and max_iterations ("more is better"), judged over every setting: each step from
    one distinct search to the next larger, paired; **reversed** if any step is a
    significant loss, **reproduced** if some step is a significant gain and none a loss,
    **not reproduced** otherwise. k2 ("5 is best"): 5 against every setting that ran
    another search, paired. Every paired test is in the note. A budget of fewer
    iterations than L_c cuts the search before depth L_c: it shortens L_c rather than the
    search, so such settings are left out of the max_iterations steps (issue 38), and
    the claim is **untested** where the settings that reached L_c all ran one search (the
    budget never binds); the note says where the cut happened (``lc``: the task's L_c)."""
    by = {r["value"]: r for r in rows}
    groups = same_search_groups(rows)
    shared = [g for g in groups if len(g) > 1]
    notes = [f"{', '.join(map(str, g))} ran the same search" for g in shared]
    cut = [v for v, r in sorted(by.items()) if param == "max_iterations" and lc
           and (r.get("search") or {}).get("mean_depth_reached", lc) < lc]
    if cut:
        notes.append(f"{', '.join(map(str, cut))}: the budget cut the search before depth "
                     "L_c on some or all problems (a shorter L_c, not less search)")
    if len(groups) <= 1:
        return "untested", "; ".join(["every setting ran the same search"] + notes[1:])
    if cut:
        # issue 38: a budget that stops the search before depth L_c tests a shorter L_c,
        # not more search; only the settings that reached L_c can test more iterations
        full = [g for g in groups if not set(g) & set(cut)]
        if len(full) <= 1:
            return "untested", "; ".join(notes + [
                "among the settings whose search reached depth L_c, more iterations never "
                "changed the search (the budget does not bind): nothing to test"])
        groups = full

    def pair(a, b):
        va = {i: v for i, v in enumerate(by[a].get("verified") or [])}
        vb = {i: v for i, v in enumerate(by[b].get("verified") or [])}
        return mcnemar(va, vb)
    if param == "k2":
        if 5 not in by:
            return "not run", "; ".join(notes)
        group5 = next(g for g in groups if 5 in g)
        others = [min(g) for g in groups if g is not group5]
        tests = {v: pair(5, v) for v in sorted(others)}
        notes.append("; ".join(f"5 vs {v}: +{w}/−{lo_}, {_p(p)}"
                               for v, (w, lo_, p) in tests.items()))
        note = "; ".join(notes)
        if any(p < ALPHA and lo_ > w for w, lo_, p in tests.values()):
            return "reversed", note
        if all(p < ALPHA and w > lo_ for w, lo_, p in tests.values()):
            return "reproduced", note
        return "not reproduced", note
    reps = sorted(min(g) for g in groups)
    steps = [(a, b, *pair(b, a)) for a, b in zip(reps, reps[1:])]
    notes.append("; ".join(f"{a} → {b}: +{w}/−{lo_}, {_p(p)}" for a, b, w, lo_, p in steps))
    note = "; ".join(notes)
    if any(p < ALPHA and lo_ > w for _, _, w, lo_, p in steps):
        return "reversed", note
    if any(p < ALPHA and w > lo_ for _, _, w, lo_, p in steps):
        return "reproduced", note
    return "not reproduced", note


def same_search(doc, a, b) -> bool:
    """Strategies ``a`` and ``b`` ran the same search on every problem (equal
    fingerprints of iterations, candidates, winner and answers)."""
    if not doc or a not in doc["summary"] or b not in doc["summary"]:
        return False
    fa = (doc["summary"][a].get("search") or {}).get("fingerprint")
    fb = (doc["summary"][b].get("search") or {}).get("fingerprint")
    return fa is not None and fa == fb


def _outcome(w: int, lo_: int, p: float) -> str:
    return "better" if p < ALPHA and w > lo_ else "worse" if p < ALPHA and lo_ > w else \
        "no significant difference"
