"""The measurement sections: step budget, floor, search settings, exploration, the verifier."""
from __future__ import annotations

from pathlib import Path

from .figures import _p, _subset_note, ci, first_summary, load, mcnemar, pct, verdicts
from .rules import _outcome, same_search_groups, ALPHA, TASK_TITLES
from .tables import _search_cells


def _pattern(counts: list[list[int]]) -> str:
    """The most common slots-per-step pattern, e.g. '1, 1, 3, 3' or '1 ×28'."""
    from collections import Counter
    if not counts:
        return "—"
    pat = Counter(tuple(c) for c in counts).most_common(1)[0][0]
    if len(pat) > 8 and len(set(pat)) == 1:
        return f"{pat[0]} ×{len(pat)}"
    return ", ".join(map(str, pat)) if len(pat) <= 12 else f"{len(pat)} steps, at most {max(pat)}"


def step_budget_section(results: Path, docs: dict) -> list[str]:
    """Slots per step, MEDAL (the search's commitments counted against the steps, and not)
    against greedy at the same --steps (issue 30)."""
    out = ["## The step budget: slots per step", "",
           "The search's L_c commitments count against the decode's steps by default "
           "(`--search-steps count`): MEDAL writes L_c steps of one slot, then phase C fills "
           "the rest of the first block in the steps left — more slots per step than greedy "
           "at the same `--steps` whenever steps < slots. `--search-steps extra` gives phase "
           "C all the steps. The most common pattern of slots written per step (the "
           "search's commitments first):", "",
           "| run | greedy | MEDAL (`count`, the default) | `medal-order` | MEDAL (`extra`) | "
           "accuracy `count` → `extra` (+/−, p): MEDAL | … `medal-order` |",
           "|---|---|---|---|---|---|---|"]
    runs = [(TASK_TITLES[t], d, None) for t, d in docs.items()]
    runs += [(f"Twins, {k} steps", load(results / "twins" / f"steps{k}.json"),
              load(results / "twins" / f"steps{k}_extra.json")) for k in (8, 2)]
    n_rows = 0
    for label, doc, extra in runs:
        if not doc:
            continue

        def pat(d, s):
            if not d:
                return "—"
            return _pattern([r["slots_per_step"] for r in d["records"]
                             if r["strategy"] == s and "slots_per_step" in r])
        accs = []
        for s in ("medal", "medal-order"):
            if extra and s in extra["summary"] and s in doc["summary"]:
                m, m0 = extra["summary"][s], doc["summary"][s]
                w, lo_, p = mcnemar(verdicts(extra, s), verdicts(doc, s))
                accs.append(f"{pct(m0['accuracy'])} → {pct(m['accuracy'])} "
                            f"(+{w}/−{lo_}, {_p(p)})")
            else:
                accs.append("—")
        out.append(f"| {label} | {pat(doc, 'greedy')} | {pat(doc, 'medal')} | "
                   f"{pat(doc, 'medal-order')} | {pat(extra, 'medal')} | {' | '.join(accs)} |")
        n_rows += 1
    if not n_rows:
        out.append("| (not run) | | | | | | |")
        return out
    tw2, tw2x = load(results / "twins" / "steps2.json"), load(results / "twins" / "steps2_extra.json")
    if tw2 and tw2x and all("medal-order" in d["summary"] for d in (tw2, tw2x)):
        a, b = tw2["summary"]["medal-order"], tw2x["summary"]["medal-order"]
        w, lo_, p = mcnemar(verdicts(tw2x, "medal-order"), verdicts(tw2, "medal-order"))
        out += ["", f"On Twins at 2 steps the order control scores {pct(a['accuracy'])} when "
                "the search's commitments count against the steps (phase C then writes the "
                f"remaining slots in one step) and {pct(b['accuracy'])} when they do not "
                f"(+{w}/−{lo_}, {_p(p)}, in 4 steps in all"
                + (f"; greedy in 4 steps: {pct(docs['twins']['summary']['greedy']['accuracy'])}"
                   if docs.get("twins") and "greedy" in docs["twins"]["summary"] else "")
                + "): what the search's choice adds at 2 steps is measured under this "
                "project's step budget, and "
                + ("depends on it." if p < ALPHA and w > lo_ else
                   "does not depend on it significantly.")]
    return out


def floor_section(results: Path, docs: dict) -> list[str]:
    """Beyond the paper: the action set with a probability floor, against the paper's set,
    on the L_c sweep's problems (paired by problem)."""
    out = ["## Beyond the paper: a probability floor for the action set", "",
           "`--min-action-prob 0.01` leaves actions whose token probability is below 0.01 out "
           "of the action set, so a node keeps fewer than K2 children when the rest are "
           "implausible (the paper's set always holds K2). It is **not in the paper** and off "
           "by default. Why it was tried: once the answer is settled, the paper's set fills "
           "up with tokens of probability near 0 whose r_IG is noise (the Twins section "
           "below shows a case). The L_c settings on the same problems as the sweeps above:",
           "", "| task | L_c | the paper's action set | with the floor (*beyond*) | "
           "floor vs paper (+/−, p) | seqs paper / floor |", "|---|---|---|---|---|---|"]
    rows_out = 0
    acts, hurts, idle = {}, {}, {}
    for t in docs:
        paper = {r["value"]: r for r in load(results / t / "sweep_lc.json") or []}
        fl = {r["value"]: r for r in load(results / t / "floor" / "sweep_lc.json") or []}
        main = load(results / t / "floor" / "results.json")
        if main and "medal" in main["summary"]:
            m = main["summary"]["medal"]
            from medal.tasks import get_task
            fl.setdefault(main["config"].get("lc") or get_task(t).default_lc, {
                **m, "verified": [v for _, v in sorted(verdicts(main, "medal").items())]})
        for lc in sorted(set(paper) & set(fl)):
            a, b = paper[lc], fl[lc]
            va = dict(enumerate(a["verified"]))
            vb = b["verified"] if isinstance(b["verified"], list) else []
            vb = dict(enumerate(vb))
            if len(va) != len(vb):
                continue
            w, lo_, p = mcnemar(vb, va)
            out.append(f"| {TASK_TITLES[t]} | {lc} | {pct(a['accuracy'])} | "
                       f"{pct(b['accuracy'])} | +{w}/−{lo_}, {_p(p)} | "
                       f"{a['mean_sequence_forwards']:.0f} / {b['mean_sequence_forwards']:.0f} |")
            rows_out += 1
            deep = lc >= 4
            if deep:
                (acts if p < ALPHA and w > lo_ else hurts if p < ALPHA else idle).setdefault(
                    TASK_TITLES[t], []).append(f"L_c = {lc}: {pct(a['accuracy'])} → "
                                               f"{pct(b['accuracy'])}")
    if not rows_out:
        return out + ["| (not run) | | | | | |"]
    out.append("")
    parts = []
    for label, group in (("It rescues the deep search on", acts),
                         ("It makes it worse on", hurts),
                         ("It changes nothing significant on", idle)):
        if group:
            parts.append(label + " " + "; ".join(f"{k} ({', '.join(v)})"
                                                 for k, v in group.items()))
    out.append(". ".join(parts) + ". Where it changes nothing, there was nothing to "
               "rescue or the deep search fails for another reason than implausible actions. "
               "It stays off by default: it goes beyond the paper, and at the default L_c it "
               "changes nothing measured here.")
    return out


def search_settings_section(results: Path, docs: dict) -> list[str]:
    """Per sweep setting: what the search did (does a setting change the computation?)."""
    out = ["## What the search did, per setting", "",
           "Mean per problem: MCTS iterations run, why the search stopped (problems per "
           "reason), the deepest depth the tree reached, distinct candidate states, and "
           "distinct first commitments among the candidates (1 = every candidate went through "
           "the same first commitment: the tree did not branch at the root). \"same search "
           "as\" names a smaller setting whose search made exactly the same choices on every "
           "problem (equal fingerprints of iterations, candidates and answers): between those "
           "settings the parameter did not act, and a claim about it is **untested** there.", "",
           "| task | parameter | value | accuracy | seqs | iterations | stop reasons | depth "
           "| distinct candidates | distinct first commitments | same search as |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    any_rows = False
    for t in docs:
        for param in ("lc", "k2", "max_iterations"):
            rows = load(results / t / f"sweep_{param}.json")
            if not rows:
                continue
            any_rows = True
            groups = same_search_groups(rows)
            for r in rows:
                g = next(g for g in groups if r["value"] in g)
                same = min(g) if min(g) != r["value"] else "—"
                out.append(f"| {TASK_TITLES[t]} | {param} | {r['value']} | "
                           f"{pct(r['accuracy'])} | {r['mean_sequence_forwards']:.1f} | "
                           f"{_search_cells(r)} | {same} |")
    if not any_rows:
        out.append("| (not run) | | | | | | | | | | |")
    return out


def explore_section(results: Path, docs: dict) -> list[str]:
    """The exploring mode (``--search explore``) against the default on the same problems."""
    out = ["## A search that explores: `--search explore` against the default", "",
           "The default search (`--search paper`) with L_c = 2 and C ≤ K2 expands the root "
           "and then its best child, so all C candidates share one first commitment. "
           "`--search explore` keeps at most one candidate per expanded parent and sets the "
           "UCB constant c = 1, so the C candidates come from C different first commitments "
           "(C + 1 expansions with L_c = 2). Same problems and seeds as the task's headline "
           "table.", "",
           "| task | mode | accuracy | 95% CI | seqs | iterations | stop reasons | depth | "
           "distinct candidates | distinct first commitments | vs default (+/−, p) | "
           "vs greedy (+/−, p) |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    verdicts_ = {}
    for t, doc in docs.items():
        ex = load(results / t / "explore.json")
        if not doc or "medal" not in doc["summary"]:
            continue
        m = doc["summary"]["medal"]
        w, lo_, p = mcnemar(verdicts(doc, "medal"), verdicts(doc, "greedy"))
        out.append(f"| {TASK_TITLES[t]} | default (`paper`) | {pct(m['accuracy'])} | {ci(m)} | "
                   f"{m['mean_sequence_forwards']:.1f} | {_search_cells(m)} | — | "
                   f"+{w}/−{lo_}, {_p(p)} |")
        if not ex:
            out.append(f"| {TASK_TITLES[t]} | explore | (not run) | | | | | | | | | |")
            continue
        me = ex["summary"]["medal"]
        ev = verdicts(ex, "medal")
        w, lo_, p = mcnemar(ev, verdicts(doc, "medal"))
        wg, lg, pg = mcnemar(ev, verdicts(doc, "greedy"))
        verdicts_[t] = (w, lo_, p)
        out.append(f"| {TASK_TITLES[t]} | explore ({me['n']} problems) | {pct(me['accuracy'])} | "
                   f"{ci(me)} | {me['mean_sequence_forwards']:.1f} | {_search_cells(me)} | "
                   f"+{w}/−{lo_}, {_p(p)}{_subset_note(verdicts(doc, 'medal'), ev)} | "
                   f"+{wg}/−{lg}, {_p(pg)}{_subset_note(verdicts(doc, 'greedy'), ev)} |")
    out.append("")
    if verdicts_:
        better = [t for t, (w, lo_, p) in verdicts_.items() if p < ALPHA and w > lo_]
        worse = [t for t, (w, lo_, p) in verdicts_.items() if p < ALPHA and lo_ > w]
        same = [t for t in verdicts_ if t not in better + worse]
        parts = []
        if better:
            parts.append("significantly better than the default on "
                         + ", ".join(TASK_TITLES[t] for t in better))
        if worse:
            parts.append("significantly worse on " + ", ".join(TASK_TITLES[t] for t in worse))
        if same:
            parts.append("not significantly different on "
                         + ", ".join(TASK_TITLES[t] for t in same))
        default_ok = better and not worse and len(verdicts_) == len([d for d in docs.values() if d])
        out.append("Against the default, the exploring mode is " + "; ".join(parts) + ". "
                   + ("It is better on every task measured, at a higher cost in sequences; "
                      "the default stays the paper's search so that `medal` means what the "
                      "paper describes, and `--search explore` is one flag away."
                      if default_ok else
                      "The evidence does not support making it the default: the default "
                      "stays the paper's search (`--search paper`)."))
    return out


def verifier_section(results: Path, docs: dict) -> list[str]:
    """The verifier reward (beyond the paper) beside the paper's reward, every task."""
    out = ["## Beyond the paper: the verifier reward, beside the paper's", "",
           "`--reward ig+verifier` adds a bonus when a simulation's one-shot completion passes "
           "the task's verifier (which needs only the problem, no reference answer). It is "
           "**not in the paper** and off by default; it is reported here beside the paper's "
           "information-gain reward on the same problems.", "",
           "| task | search | reward | accuracy | 95% CI | seqs | vs the paper's reward (+/−, p) |",
           "|---|---|---|---|---|---|---|"]
    outcome: dict[str, list] = {}
    for t, doc in docs.items():
        if not doc or "medal" not in doc["summary"]:
            continue
        for mode, ref_doc, vf_name in (("default", doc, "verifier"),
                                       ("explore", load(results / t / "explore.json"),
                                        "verifier_explore")):
            vf = load(results / t / f"{vf_name}.json")
            if ref_doc is None or (vf is None and mode == "explore"):
                continue
            m = ref_doc["summary"]["medal"]
            out.append(f"| {TASK_TITLES[t]} | {mode} | IG (the paper's) | {pct(m['accuracy'])} | "
                       f"{ci(m)} | {m['mean_sequence_forwards']:.1f} | — |")
            if vf is None:
                out.append(f"| {TASK_TITLES[t]} | {mode} | IG + verifier (*beyond*) | (not run) "
                           "| | | |")
                continue
            mv = first_summary(vf)
            vv = verdicts(vf, vf["strategies"][0])
            w, lo_, p = mcnemar(vv, verdicts(ref_doc, "medal"))
            out.append(f"| {TASK_TITLES[t]} | {mode} | IG + verifier (*beyond*) ({mv['n']} "
                       f"problems) | {pct(mv['accuracy'])} | {ci(mv)} | "
                       f"{mv['mean_sequence_forwards']:.1f} | +{w}/−{lo_}, {_p(p)}"
                       f"{_subset_note(verdicts(ref_doc, 'medal'), vv)} |")
            outcome.setdefault(_outcome(w, lo_, p), []).append(
                f"{TASK_TITLES[t]}{'' if mode == 'default' else ' (explore)'}, {mv['n']} problems")
    if outcome:
        out += ["", "With the verifier reward MEDAL is "
                + "; ".join(f"{'significantly ' if k != 'no significant difference' else ''}"
                            f"{k if k != 'no significant difference' else 'not significantly different'}"
                            f" on {', '.join(v)}" for k, v in outcome.items())
                + ", at about the same sequences (paired on the same problems)."]
    return out
