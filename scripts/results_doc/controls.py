"""The controls (issue 30): what each comparison isolates, its table and its prose."""
from __future__ import annotations

from pathlib import Path

from .figures import _cmp, _wl, ci, load, pct
from .rules import combine, paired_outcome, same_search, TASK_TITLES
from .tables import HEADROOM_HEAD, headroom_cells, search_stat_cells, SEARCH_HEAD


#: the controls (issue 30): what each comparison isolates
CONTROL_EFFECTS = [
    ("order: MEDAL's schedule (L_c commitments one at a time) against phase C alone",
     "medal-order", "medal-no-mcts"),
    ("order: MEDAL's schedule with no alternatives against greedy", "medal-order", "greedy"),
    ("choice: the search's K2 alternatives chosen by r_IG, no UCB, against none",
     "medal-choice", "medal-order"),
    ("UCB at the defaults: MEDAL against the same candidates without UCB", "medal",
     "medal-choice"),
    ("exploration and a wider pool together: the full search where it branches "
     "(C = 2·K2) against MEDAL (issue 30's control)", "medal-branching", "medal"),
    ("exploration alone, at MEDAL's pool (C = 3): the exploring search against MEDAL",
     "medal-explore", "medal"),
    ("the pool alone: C = 2·K2 candidates against C = 3, both without UCB (best-first)",
     "medal-wide-pool", "medal-choice"),
    ("exploration at the wide pool: UCB's search against best-first, both C = 2·K2",
     "medal-branching", "medal-wide-pool"),
    ("r_IG's choice: MEDAL against the same candidates chosen at random", "medal",
     "medal-random-choice"),
    ("the whole search: MEDAL against its own schedule without alternatives", "medal",
     "medal-order"),
]


def control_columns(results: Path, docs: dict) -> dict:
    """The controls' columns: each task's headline, and Twins at 2 steps."""
    cols = {TASK_TITLES[t]: d for t, d in docs.items()}
    cols["Twins, 2 steps"] = load(results / "twins" / "steps2.json")
    return cols


def controls_section(results: Path, docs: dict) -> list[str]:
    """Three controls, each isolating one part of the search (issue 30)."""
    out = ["## What the search's parts buy: the controls", "",
           "MEDAL changes two things at once against phase C alone: the *order* of writing "
           "(its first L_c commitments one slot at a time) and the *search* over them. "
           "Controls, each a named strategy of `medal bench` and each changing one thing, "
           "take them apart: "
           "`medal-order` is MEDAL's schedule with no alternatives (K2 = 1, C = 1: the most "
           "confident action, L_c times, then phase C — one sequence per step, as greedy); "
           "`medal-choice` keeps the search's K2 alternatives and chooses by r_IG without "
           "UCB (one expansion per level, the C best children of the last as candidates, "
           "the highest cumulative IG wins); `medal-random-choice` runs MEDAL's search and "
           "draws the winner uniformly among its candidates (the same candidates on every "
           "problem: it isolates what r_IG's choice adds); `medal-explore` explores at "
           "MEDAL's pool of C = 3 candidates (at most one per parent, c = 1, so they come "
           "from different first commitments); `medal-wide-pool` widens the pool to "
           "C = 2·K2 without exploring (best-first by r_IG, no UCB); `medal-branching` (issue "
           "30) does both — the paper's full search at C = 2·K2, where UCB and c decide "
           "where the tree grows. The headroom columns give the best of each search's "
           "candidates by the verifier (an oracle: the most any chooser of them could "
           "score) and the expected accuracy of a random pick of them. The search's "
           "statistics are means per problem: iterations, nodes, expansions off the "
           "first-expanded line, distinct first commitments among the candidates, and the "
           "share of problems whose winner is not the most confident path (each node's "
           "first action).", "",
           "| task | strategy | accuracy | 95% CI | " + HEADROOM_HEAD + " | seqs | "
           + SEARCH_HEAD + " |", "|---|" + "---|" * 11]
    cols = control_columns(results, docs)
    names = ("greedy", "medal-no-mcts", "medal-order", "medal-choice", "medal",
             "medal-random-choice", "medal-explore", "medal-wide-pool", "medal-branching")
    any_rows = False
    for col, doc in cols.items():
        if not doc:
            continue
        for s in names:
            if s in doc["summary"]:
                m = doc["summary"][s]
                any_rows = True
                out.append(f"| {col} ({m['n']} problems) | {s} | {pct(m['accuracy'])} | {ci(m)} "
                           f"| {headroom_cells(m)} | {m['mean_sequence_forwards']:.1f} | "
                           f"{search_stat_cells(m)} |")
    if not any_rows:
        return out + ["| (not run) |" + " |" * 11]
    out += ["", "Each effect, paired on the same problems (+ right only with the first, − "
            "only with the second; exact McNemar p); **untested** where the two ran the "
            "same search on every problem:", "",
            "| effect (first vs second) | " + " | ".join(cols) + " | verdict |",
            "|---|" + "---|" * len(cols) + "---|"]
    found = {}
    for label, a, b in CONTROL_EFFECTS:
        cells, vs = [], {}
        for col, doc in cols.items():
            txt, o = _cmp(doc, a, b)
            if o and same_search(doc, a, b):
                vs[col] = "untested"
                txt += " (the same search)"
            elif o:
                w, lo_ = _wl(doc, a, b)
                vs[col] = paired_outcome(w, lo_, o[1])
            cells.append(txt)
        found[(a, b)] = vs
        out.append(f"| {label} (`{a}` vs `{b}`) | " + " | ".join(cells) + " | "
                   + combine(vs) + " |")
    out += ["", "(\"reproduced\" here means: the first is significantly better, as the part "
            "it adds would have it.)", "", *headroom_prose(cols), *controls_prose(found)]
    return out


def headroom_prose(cols: dict) -> list[str]:
    """The headroom before the verdicts: how often some candidate of MEDAL's (and of the
    exploring controls') is right, against greedy, and what a random pick of them scores."""
    parts = []
    for col, doc in cols.items():
        summ = (doc or {}).get("summary", {})
        if "greedy" not in summ or summ.get("medal", {}).get("oracle_accuracy") is None:
            continue
        cells = [f"MEDAL's {pct(summ['medal']['oracle_accuracy'])} (a random pick "
                 f"{pct(summ['medal']['random_choice_accuracy'])}, r_IG's pick "
                 f"{pct(summ['medal']['accuracy'])})"]
        for s in ("medal-explore", "medal-branching"):
            if summ.get(s, {}).get("oracle_accuracy") is not None:
                cells.append(f"{s}'s {pct(summ[s]['oracle_accuracy'])} (its pick "
                             f"{pct(summ[s]['accuracy'])})")
        parts.append(f"{col}: greedy {pct(summ['greedy']['accuracy'])}; some candidate right "
                     + ", ".join(cells))
    if not parts:
        return []
    return ["The headroom before the verdicts — how often one of a search's candidates is "
            "right (an oracle: the task's verifier choosing), against greedy: "
            + "; ".join(parts) + ".", ""]


def controls_prose(found: dict) -> list[str]:
    """What the controls say, computed from their verdicts."""
    def where(key, verdict):
        return [c for c, v in found.get(key, {}).items() if v == verdict]
    parts = []
    order = where(("medal-order", "medal-no-mcts"), "reproduced")
    if order:
        parts.append("The order of writing alone — MEDAL's first L_c commitments one at a "
                     "time, with no alternative ever considered — beats phase C alone on "
                     + ", ".join(order) + ".")
    choice = where(("medal-choice", "medal-order"), "reproduced")
    nochoice = where(("medal-choice", "medal-order"), "not reproduced")
    if choice:
        parts.append("Choosing among the K2 alternatives by r_IG adds to that order on "
                     + ", ".join(choice) + ".")
    if nochoice:
        parts.append("Choosing among the alternatives adds nothing significant to the order "
                     "on " + ", ".join(nochoice) + ".")
    worse = where(("medal-choice", "medal-order"), "reversed")
    if worse:
        parts.append("Choosing among the alternatives is significantly worse than the most "
                     "confident path on " + ", ".join(worse) + ".")
    ucb = where(("medal", "medal-choice"), "untested")
    if ucb:
        parts.append("At the defaults UCB never acts on " + ", ".join(ucb) + ": MEDAL ran "
                     "exactly the search without UCB on every problem.")
    for v, text in (("reversed", "Where UCB acts at the defaults, MEDAL is significantly "
                                 "worse than the same candidates chosen without it on "),
                    ("reproduced", "Where UCB acts at the defaults, MEDAL is significantly "
                                   "better than without it on "),
                    ("not reproduced", "Where UCB acts at the defaults, it changes nothing "
                                       "significant on ")):
        got = where(("medal", "medal-choice"), v)
        if got:
            parts.append(text + ", ".join(got) + ".")
    for v, text in (("reproduced", "A search that branches is significantly better than "
                                   "the default on "),
                    ("reversed", "A search that branches is significantly worse than the "
                                 "default on "),
                    ("not reproduced", "A search that branches changes nothing significant "
                                       "against the default on ")):
        got = where(("medal-branching", "medal"), v)
        if got:
            parts.append(text + ", ".join(got) + ".")
    for key, verdict, text in (
            (("medal-explore", "medal"), "reproduced",
             "Exploring at MEDAL's pool of 3 candidates is significantly better than MEDAL on "),
            (("medal-explore", "medal"), "reversed",
             "Exploring at MEDAL's pool of 3 candidates is significantly worse than MEDAL on "),
            (("medal-explore", "medal"), "not reproduced",
             "Exploring at MEDAL's pool of 3 candidates changes nothing significant on "),
            (("medal-wide-pool", "medal-choice"), "reproduced",
             "A wider pool without exploration (C = 2·K2, best-first) is significantly better "
             "than C = 3 on "),
            (("medal-wide-pool", "medal-choice"), "reversed",
             "A wider pool without exploration (C = 2·K2, best-first) is significantly worse "
             "than C = 3 on "),
            (("medal-wide-pool", "medal-choice"), "not reproduced",
             "A wider pool without exploration changes nothing significant on "),
            (("medal-branching", "medal-wide-pool"), "reproduced",
             "At the wide pool, UCB's exploration is significantly better than best-first on "),
            (("medal-branching", "medal-wide-pool"), "reversed",
             "At the wide pool, UCB's exploration is significantly worse than best-first on "),
            (("medal-branching", "medal-wide-pool"), "not reproduced",
             "At the wide pool, UCB's exploration changes nothing significant against "
             "best-first on "),
            (("medal-branching", "medal-wide-pool"), "untested",
             "At the wide pool, UCB's search and best-first made the same choices on every "
             "problem on "),
            (("medal", "medal-random-choice"), "reproduced",
             "r_IG chooses significantly better than a random pick of the same candidates on "),
            (("medal", "medal-random-choice"), "reversed",
             "r_IG chooses significantly worse than a random pick of the same candidates on "),
            (("medal", "medal-random-choice"), "not reproduced",
             "r_IG's choice is not significantly different from a random pick of the same "
             "candidates on "),
            (("medal", "medal-random-choice"), "untested",
             "r_IG's choice and the random pick ran the same search and chose alike on every "
             "problem on ")):
        got = where(key, verdict)
        if got:
            parts.append(text + ", ".join(got) + ".")
    return [" ".join(parts)] if parts else []

