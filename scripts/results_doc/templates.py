"""Issue 38 #5: the headline runs in both prompt templates, and the ranking per template.

"Evaluation Illusion" (arXiv 2606.29228) warns that a ranking of decoders can flip with the
prompt template. Each task's headline strategies run on the same problems written in
template 0 and in template 1, on a model trained on both (``builtin:<task>-2t``). What the
section reports, all recomputed from the records: each template's accuracies and ranks, how
far the two rankings agree (Kendall's tau-b), the pairs of strategies whose order flips,
and which of those flips are significant in both templates (a paired McNemar p < 0.05 in
each, with opposite signs: the only flip this section calls real), and the paper's main
comparison (MEDAL against greedy) in each template.
"""
from __future__ import annotations

import itertools
import json
import math
import re

from .figures import ROOT, _p, ci, load, mcnemar, pct, verdicts
from .rules import ALPHA, TASK_TITLES
from .tables import STRATEGY_ORDER

TEMPLATES = (0, 1)
#: the comparisons each template's verdict is given for (the paper's main claim first)
KEY_PAIRS = (("medal", "greedy"), ("medal", "medal-order"), ("medal", "bst5"))


def ranks(accuracy: dict[str, float]) -> dict[str, float]:
    """Rank 1 = the most accurate; tied strategies share the mean of their ranks."""
    order = sorted(accuracy, key=lambda s: -accuracy[s])
    out, i = {}, 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and accuracy[order[j + 1]] == accuracy[order[i]]:
            j += 1
        for s in order[i:j + 1]:
            out[s] = (i + j) / 2 + 1
        i = j + 1
    return out


def kendall_tau_b(a: dict[str, float], b: dict[str, float]) -> float | None:
    """Kendall's tau-b between two scorings of the same strategies (the pre-registered
    comparison's own, :func:`prereg_table.kendall_tau`); None when either is all ties."""
    from prereg_table import kendall_tau      # scripts/prereg_table.py
    keys = sorted(set(a) & set(b))
    tau = kendall_tau([a[k] for k in keys], [b[k] for k in keys])
    return None if math.isnan(tau) else tau


def flips(docs: dict[int, dict], strategies: list[str]) -> tuple[list, list]:
    """The pairs whose order differs between the templates (strictly one way in one, strictly
    the other way in the other), and those of them significant in both templates."""
    acc = {t: {s: docs[t]["summary"][s]["accuracy"] for s in strategies} for t in docs}
    flipped, real = [], []
    for x, y in itertools.combinations(strategies, 2):
        d0, d1 = acc[0][x] - acc[0][y], acc[1][x] - acc[1][y]
        if d0 * d1 >= 0:
            continue
        flipped.append((x, y))
        tests = [mcnemar(verdicts(docs[t], x), verdicts(docs[t], y)) for t in TEMPLATES]
        if all(p < ALPHA for _, _, p in tests):
            real.append((x, y, tests))
    return flipped, real


def _pp(p: float) -> str:
    """:func:`_p`, with a third decimal near the threshold (so that p = 0.0502 is not read
    as significant)."""
    return f"p={p:.3f}" if 0.04 <= p < 0.06 else _p(p)


def _outcome(w: int, lo_: int, p: float) -> str:
    if p < ALPHA:
        return "better" if w > lo_ else "worse"
    return "no significant difference"


def interaction(docs: dict[int, dict], a: str, b: str) -> tuple[float, float, int, int, float]:
    """Does ``a``'s edge over ``b`` differ between the templates? On each problem (the same
    problems in both) the edge is right(a) - right(b) in {-1, 0, 1}; the exact two-sided
    sign test on its change from template 0 to template 1 (problems where it does not
    change left out). Returns (mean edge in template 0, in template 1, problems where the
    edge grew, where it shrank, p)."""
    edge = {t: {i: int(va) - int(verdicts(docs[t], b)[i])
                for i, va in verdicts(docs[t], a).items()} for t in TEMPLATES}
    common = sorted(set(edge[0]) & set(edge[1]))
    # the exact test McNemar's is: "grew" and "shrank" as its two discordant counts
    grew, shrank, p = mcnemar({i: edge[1][i] > edge[0][i] for i in common},
                              {i: edge[1][i] < edge[0][i] for i in common})
    mean = {t: sum(edge[t][i] for i in common) / max(1, len(common)) for t in TEMPLATES}
    return mean[0], mean[1], grew, shrank, p


def judge(outcome: dict[int, str], inter: tuple) -> str:
    """``same`` (one verdict in both templates), ``depends`` (the verdicts differ and so does
    the edge itself: the interaction test is significant) or ``power`` (the verdicts differ,
    the edge does not significantly: one template's test is short of power, not of the
    answer)."""
    if outcome[0] == outcome[1]:
        return "same"
    return "depends" if inter[4] < ALPHA else "power"


def model_line(task: str, command: str) -> str:
    """What the runs' model is, from its own checkpoint: the recipe its config records."""
    m = re.search(r"--model builtin:(\S+)", command)
    name = m.group(1) if m else task
    path = ROOT / "medal" / "assets" / name / "config.json"
    if not path.is_file():
        return f"The model `builtin:{name}`: (not shipped)."
    tr = json.loads(path.read_text()).get("training", {})
    stages = tr.get("stages", []) + [tr]
    recipe = " then ".join(f"`{st.get('command', '?')}`" for st in stages)
    total = tr.get("total_seconds", tr.get("seconds", 0))
    return (f"The model, `builtin:{name}` (its checkpoint records `templates: "
            f"{tr.get('templates', 1)}`), trained by {recipe}: {total / 60:.0f} min in all, "
            f"final loss {tr.get('final_loss', '?')}.")


def task_part(results, task: str) -> tuple[list[str], dict | None]:
    """One task's table and findings, and its verdicts for the summary (None: not run)."""
    title = TASK_TITLES[task]
    docs = {t: load(results / task / "templates" / f"t{t}.json") for t in TEMPLATES}
    out = [f"### {title}", ""]
    if any(d is None for d in docs.values()):
        have = [f"template {t}" for t, d in docs.items() if d is not None]
        return out + [f"(not run{': only ' + ' and '.join(have) if have else ''})", ""], None
    strategies = [s for s in STRATEGY_ORDER if all(s in d["summary"] for d in docs.values())]
    strategies += [s for s in docs[0]["summary"]
                   if s not in strategies and s in docs[1]["summary"]]
    n = {t: docs[t]["summary"][strategies[0]]["n"] for t in TEMPLATES}
    out += [model_line(task, docs[0]["what_ran"]["command"]), "",
            f"{n[0]} problems ({docs[0]['problems']}), the same in both templates"
            + ("" if docs[0]["problems"] == docs[1]["problems"] and n[0] == n[1]
               else f" — NOT the same: template 1 ran {n[1]} ({docs[1]['problems']})") + ".", "",
            "| strategy | template 0: accuracy (95% CI) | rank | template 1: accuracy (95% CI) "
            "| rank | seqs (template 0 / 1) |", "|---|---|---|---|---|---|"]
    acc = {t: {s: docs[t]["summary"][s]["accuracy"] for s in strategies} for t in TEMPLATES}
    rk = {t: ranks(acc[t]) for t in TEMPLATES}
    for s in strategies:
        m0, m1 = docs[0]["summary"][s], docs[1]["summary"][s]
        out.append(f"| {s} | {pct(m0['accuracy'])} ({ci(m0)}) | {rk[0][s]:g} | "
                   f"{pct(m1['accuracy'])} ({ci(m1)}) | {rk[1][s]:g} | "
                   f"{m0['mean_sequence_forwards']:.1f} / {m1['mean_sequence_forwards']:.1f} |")
    tau = kendall_tau_b(acc[0], acc[1])
    flipped, real = flips(docs, strategies)
    pairs = len(strategies) * (len(strategies) - 1) // 2
    g = {t: verdicts(docs[t], "greedy") for t in TEMPLATES} if "greedy" in strategies else None
    out += ["", "- Agreement of the two rankings: Kendall's τ-b = "
            + ("— (all tied)" if tau is None else f"{tau:.2f}") + f" over {len(strategies)} "
            f"strategies. {len(flipped)} of {pairs} pairs change order between the templates; "
            + (f"{len(real)} of them significantly in both (paired McNemar p < {ALPHA} in each, "
               "opposite signs): "
               + "; ".join(f"{x} vs {y} (template 0 +{a[0]}/−{a[1]}, {_p(a[2])}; template 1 "
                           f"+{b[0]}/−{b[1]}, {_p(b[2])})" for x, y, (a, b) in real)
               if real else "none of them is significant in both templates, so no flip here "
               "is more than the noise of one template's run"
               + ("; a low τ without a significant flip says the strategies lie within that "
                  "noise of each other, not that the template reorders them"
                  if tau is not None and tau < 0.5 else "")) + "."]
    if g:
        w, lo_, p = mcnemar(g[0], g[1])
        out.append(f"- The same problems, greedy in template 0 against template 1: +{w}/−{lo_}, "
                   f"{_p(p)} (the templates are {'not ' if p >= ALPHA else ''}"
                   "significantly different in difficulty for this model).")
    verdict = {}
    for a, b in KEY_PAIRS:
        if a not in strategies or b not in strategies:
            continue
        tests = {t: mcnemar(verdicts(docs[t], a), verdicts(docs[t], b)) for t in TEMPLATES}
        outcome = {t: _outcome(*tests[t]) for t in TEMPLATES}
        inter = interaction(docs, a, b)
        verdict[(a, b)] = (outcome, judge(outcome, inter), inter)
        cells = "; ".join(f"template {t}: {pct(acc[t][a])} vs {pct(acc[t][b])}, "
                          f"+{tests[t][0]}/−{tests[t][1]}, {_pp(tests[t][2])} ({outcome[t]})"
                          for t in TEMPLATES)
        edge = (f"{a}'s edge is {100 * inter[0]:+.1f} points in template 0 and "
                f"{100 * inter[1]:+.1f} in template 1 (its change per problem: "
                f"+{inter[2]}/−{inter[3]}, {_pp(inter[4])})")
        out.append(f"- {a} against {b}: {cells}. " + {
            "same": "The verdict is the same in both templates.",
            "depends": f"**The verdict depends on the template**: {edge}.",
            "power": f"The verdicts differ, but the edge itself does not differ significantly "
                     f"between the templates: {edge}. One template's test is short of power, "
                     "not of the answer."}[judge(outcome, inter)])
    out.append("")
    return out, {"tau": tau, "flipped": flipped, "real": real, "verdict": verdict}


def templates_section(results) -> list[str]:
    out = ["## Does the ranking hold in another prompt template?", "",
           "\"Evaluation Illusion\" (arXiv 2606.29228) finds that a ranking of decoders can "
           "flip with the prompt template. Here every task's headline strategies run again on "
           "the same fresh problems written two ways — template 0, the task's own form (`Use "
           "4, 18, 13 to make 20.`, `Sudoku ..3./3.21/.3.2/.24.`, `Pick w1 w2`, `Twins w1 w2 w3 "
           "w4`), and template 1 (`20 from 4 18 13.`, `Fill 0030 3021 0302 0240.`, `w1 or w2?`, "
           "`w1, w2, w3 or w4?`), the `--template` setting — on a model trained on both "
           "(`builtin:<task>-2t`; the shipped models read template 0 only and refuse template "
           "1, docs/MODELS.md). Defaults otherwise, as the headline tables. A change of order "
           f"counts as a real flip only when it is significant in both templates (paired "
           f"McNemar p < {ALPHA} in each, opposite signs); Kendall's τ-b says how far the two "
           "rankings agree (1: the same order). (Avoid's pre-registered comparison runs in "
           "both of its templates and reports each template's ranking itself: "
           "[PREREGISTRATION.md](PREREGISTRATION.md).)", ""]
    found = {}
    for task in TASK_TITLES:
        lines, v = task_part(results, task)
        out += lines
        if v is not None:
            found[task] = v
    if not found:
        return out
    real = [(t, x, y) for t, v in found.items() for x, y, _ in v["real"]]
    depends = [(t, pair) for t, v in found.items() for pair, (_, how, _) in v["verdict"].items()
               if how == "depends"]
    main = {t: v["verdict"][("medal", "greedy")] for t, v in found.items()
            if ("medal", "greedy") in v["verdict"]}
    same = [TASK_TITLES[t] for t, (_, how, _) in main.items() if how == "same"]
    power = [f"{TASK_TITLES[t]} ({o[0]} in template 0, {o[1]} in template 1; the edge "
             f"itself does not differ, {_pp(inter[4])})"
             for t, (o, how, inter) in main.items() if how == "power"]
    differ = [f"{TASK_TITLES[t]} ({o[0]} in template 0, {o[1]} in template 1)"
              for t, (o, how, _) in main.items() if how == "depends"]
    parts = []
    if same:
        parts.append("the same verdict in both templates on " + ", ".join(same))
    if power:
        parts.append("verdicts that differ only in significance on " + ", ".join(power))
    if differ:
        parts.append("a verdict that depends on the template on " + ", ".join(differ))
    out.append("**What it shows.** "
               + ("No ranking flips significantly on any task measured: where two strategies "
                  "change places between the templates, the difference is within one run's "
                  "noise in at least one of them. "
                  if not real else
                  "Significant flips (each in both templates): "
                  + "; ".join(f"{TASK_TITLES[t]}: {x} vs {y}" for t, x, y in real) + ". ")
               + ("The paper's main comparison, MEDAL against greedy, gets "
                  + "; ".join(parts) + ". " if parts else "")
               + ("Key comparisons whose answer depends on the template (the edge itself "
                  "differs significantly between them): "
                  + "; ".join(f"{TASK_TITLES[t]} {a} vs {b}" for t, (a, b) in depends)
                  + " — a claim measured in one template alone would not hold there."
                  if depends else
                  "No key comparison (MEDAL against greedy, medal-order and Best-of-5) has an "
                  "edge that differs significantly between the templates."))
    return out
