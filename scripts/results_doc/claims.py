"""The claims table: each of the paper's claims, its evidence and its verdict per task."""
from __future__ import annotations

from pathlib import Path

from .figures import _acc, _cmp, _p, _wl, ci, first_summary, load, mcnemar, pct, verdicts
from .rules import combine, paired_outcome, same_search, sweep_outcome
from .tables import sweep_text


def claims(results: Path, docs: dict) -> list[str]:
    """The claims table: one column per task, the verdict per task."""
    tasks = list(docs)
    out = []

    def row(label, cells, verdicts_):
        out.append(f"| {label} | " + " | ".join(cells[t] for t in tasks) + f" | "
                   f"{combine(verdicts_)} |")

    def paired_claim(a, b, target=None):
        cells, vs = {}, {}
        for t in tasks:
            txt, o = _cmp(docs[t], a, b)
            cells[t] = txt
            if o and same_search(docs[t], a, b):
                cells[t] += " (the same search)"
                vs[t] = "untested"
            elif o:
                (rel, p), (w, lo_) = o, _wl(docs[t], a, b)
                vs[t] = paired_outcome(w, lo_, p, target is None or rel >= target)
        return cells, vs

    c, v = paired_claim("medal", "greedy", 0.2)
    row("MEDAL beats greedy (target +20% relative)", c, v)

    cells, vs = {}, {}
    for t in tasks:
        doc = docs[t]
        if not doc or "bst5" not in doc["summary"] or "medal" not in doc["summary"]:
            cells[t] = "(not run)"
            continue
        m, b = doc["summary"]["medal"], doc["summary"]["bst5"]
        ratio = m["mean_sequence_forwards"] / b["mean_sequence_forwards"]
        txt, (rel, p) = _cmp(doc, "medal", "bst5")
        w, lo_ = _wl(doc, "medal", "bst5")
        cells[t] = f"{txt}; at {ratio:.2f}× its seqs"
        # not worse counts as the paper's direction only when significant; the cost
        # target (<= 1/3 of Best-of-5's sequences) decides reproduced against partly
        vs[t] = paired_outcome(w, lo_, p, ratio <= 1 / 3)
    row("MEDAL ≥ Best-of-5 at ≤ 1/3 of its cost", cells, vs)

    for param, label in (("lc", "gains rise with L_c and saturate"),
                         ("k2", "K2 = 5 is best"),
                         ("max_iterations", "more search (MCTS iterations) buys accuracy")):
        cells, vs = {}, {}
        for t in tasks:
            sw = load(results / t / f"sweep_{param}.json")
            cells[t] = sweep_text(sw)
            if sw:
                from medal.tasks import get_task
                verdict, note = sweep_outcome(param, sw, get_task(t).default_lc)
                vs[t] = verdict
                if note:
                    cells[t] += f" — {note}"
        row(label, cells, vs)
    c, v = paired_claim("medal", "medal-no-mcts")
    row("w/o MCTS (phase C alone) is worse — the ablation changes the slot schedule with the "
        "search (see the controls)", c, v)
    # issue 30: each claim against the control that isolates it
    c, v = paired_claim("medal", "medal-order")
    row("the search's alternatives beat its schedule alone (MEDAL vs `medal-order`: the same "
        "one-at-a-time first L_c commitments, K2 = 1, C = 1)", c, v)
    # issue 38: medal-branching also widens the pool (C = 2·K2); medal-explore explores at
    # MEDAL's own pool, so it isolates exploration (the controls section has both)
    c, v = paired_claim("medal-explore", "medal")
    row("exploration buys accuracy (`medal-explore`: the search where it branches, at "
        "MEDAL's pool of C = 3 candidates, vs MEDAL; `medal-branching` also widens the "
        "pool: see the controls)", c, v)
    cells, vs = {}, {}
    for t in tasks:
        dec = load(results / t / "decomposition.json")
        if t != "countdown":
            cells[t] = "no-op for this task's built-in model"
        elif dec and docs[t]:
            ms = dec["strategies"][0]
            w, lo_, p = mcnemar(verdicts(docs[t], "medal"), verdicts(dec, ms))
            cells[t] = (f"MEDAL *with* the built-in decomposition: "
                        f"{pct(first_summary(dec)['accuracy'])} ({ci(first_summary(dec))}) vs "
                        f"{pct(_acc(docs[t], 'medal'))} without: +{w}/−{lo_} for without, "
                        f"{_p(p)}")
            vs[t] = paired_outcome(lo_, w, p)   # the claim: with beats without
        else:
            cells[t] = "(not run)"
    row("w/o task decomposition is worse", cells, vs)
    c, v = paired_claim("medal", "medal-margin-only")
    row("w/o confidence score (margin only, in MCTS) is worse", c, v)
    return out
