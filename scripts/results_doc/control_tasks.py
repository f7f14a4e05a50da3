"""The positive-control tasks (Pick, Twins): their models, premises and results."""
from __future__ import annotations

import json
from pathlib import Path

from .figures import _p, ci, first_summary, load, mcnemar, pct, verdicts, ROOT
from .rules import _outcome, ALPHA, TASK_TITLES


#: why a positive-control model's loss cannot reach 0
LOSS_NOTES = {
    "pick": "the letters where the words differ are a mixture",
    "twins": "with every slot masked, each slot is a 1/2-1/4-1/4 mixture of the four words' "
             "letters",
}


def control_model_lines(task: str) -> list[str]:
    title = TASK_TITLES[task]
    path = ROOT / "medal" / "assets" / task / "config.json"
    if not path.is_file():
        return [f"The {title} model: (not trained)."]
    cfg = json.loads(path.read_text())
    tr, arch = cfg.get("training", {}), cfg["config"]
    return [f"The {title} model: {arch['n_layer']} layers, width {arch['n_embd']}, "
            f"{tr.get('parameters', '?')} parameters, trained by `{tr.get('command', '?')}` in "
            f"{tr.get('seconds', 0) / 60:.0f} minutes on {tr.get('threads', '?')} thread(s) of "
            f"the shared machine (final loss {tr.get('final_loss', '?')}; the loss cannot reach "
            f"0: {LOSS_NOTES[task]})."]


CONTROLS = {
    "twins": (
        "## The positive control: Twins",
        "Each prompt lists four words of 8 letters (a–x) in two pairs of twins: words 1 and 2 "
        "share a letter at four positions, words 3 and 4 at the other four; any one word is "
        "right, so the model learns a mixture (`medal/tasks/twins.py`). At every slot the "
        "most likely letter (p = 1/2) is its pair's shared letter, and the most likely "
        "letters of two slots of different pairs belong to no word together. The premise: a "
        "decoder that writes two slots per step in the confident-first order writes exactly "
        "those letters and mixes the pairs whenever one step takes one slot of each, while "
        "committing the first letters one at a time — what MEDAL's search does — lets the "
        "model's conditionals settle the pair and then the word. The task decodes 2 slots per "
        "step by default; the model reads which word a letter belongs to from the letter "
        "itself (six fixed letter classes), which a tiny model learns in minutes. The tables "
        "below test the premise with the shipped model before anything else."),
    "pick": (
        "## The attempted positive control: Pick",
        "Each prompt lists 2–3 words of 8 letters (a–h) that agree on some positions and "
        "differ on others; any one of them is right, so the model learns a mixture "
        "(`medal/tasks/pick.py`). The premise: writing several letters per step from their "
        "own marginals mixes the words, the confident-first order makes it likely (the "
        "shared, certain letters first, the differing ones together at the end), and one "
        "early commitment to a differing letter — what the information-gain reward "
        "prefers — prevents it, PROVIDED the model then stays with that word. The task "
        "decodes 2 slots per step by default. The tables below test that premise with the "
        "shipped model before anything else."),
}
#: why MEDAL did not beat greedy on the attempted control (measured by tests/networks/test_pick.py)
PICK_NEGATIVE = (
    "MEDAL does not beat greedy even here. The shipped model writes each letter "
    "from its own marginal whatever was written before (tests/networks/test_pick.py "
    "measures it: after one differing letter is written, it finishes that word "
    "on far fewer problems than a model that conditioned would), so the search's "
    "first commitment does not carry to the other letters, and one slot per "
    "step is no safer than two. The premise needs a model that conditions on "
    "what is written; this tiny one, trained within the 60-minute budget, does "
    "not (docs/MODELS.md). The shipped example `pick-medal-does-not-fix` shows "
    "it: greedy and MEDAL write the same mix. Twins (above) is the control that works.")


def control_section(results: Path, task: str, doc) -> list[str]:
    """A positive control: headroom first, then every strategy, mode and budget."""
    heading, premise = CONTROLS[task]
    out = [heading, ""]
    if doc is None:
        return out + ["(not run)"]
    out += [premise, ""]
    hr = load(results / task / "headroom.json")
    if hr:
        h = hr["summary"]
        lo, hi = h["best_of_orders_ci95"]
        glo, ghi = h["greedy_ci95"]
        out += [f"**Headroom first** ({h['n']} problems, {h['steps']} steps): greedy "
                f"{pct(h['greedy'])} ({100 * glo:.0f}–{100 * ghi:.0f}%); one random order "
                f"{pct(h['one_random_order'])} on average; the best of {h['orders']} random "
                f"orders (right when any is — an oracle over orders, the ceiling for a search "
                f"over the order with this decoder) **{pct(h['best_of_orders'])}** "
                f"({100 * lo:.0f}–{100 * hi:.0f}%). Some order fixes greedy on "
                f"{h['orders_fix_greedy']} problems; greedy is right where no random order "
                f"is on {h['greedy_right_no_order_right']}.", ""]
    else:
        out += ["Headroom: (not run)", ""]
    g = doc["summary"].get("greedy")
    gv = verdicts(doc, "greedy")
    rows = [("MEDAL default", doc, "medal"),
            ("MEDAL w/o MCTS (phase C alone)", doc, "medal-no-mcts"),
            ("MEDAL with K2 = 10 (every slot's best token is an action)",
             load(results / task / "k2_10.json"), "medal"),
            ("MEDAL margin-only", doc, "medal-margin-only")]
    ex = load(results / task / "explore.json")
    if ex:
        rows += [("MEDAL explore", ex, "medal"), ("MEDAL explore, margin-only", ex,
                                                   "medal-margin-only")]
    for name, label in (("verifier", "MEDAL default + verifier reward (*beyond*)"),
                        ("verifier_explore", "MEDAL explore + verifier reward (*beyond*)")):
        dd = load(results / task / f"{name}.json")
        if dd:
            rows.append((label, dd, dd["strategies"][0]))
    rows += [("Best-of-5 (vote)", doc, "bst5")]
    for n_ in (3, 8):
        dd = load(results / task / f"bst{n_}.json")
        if dd:
            rows.append((f"Best-of-{n_} (vote)", dd, dd["strategies"][0]))
    rows += [(s, doc, s) for s in ("random", "entropy", "margin", "eb")]
    if g:
        out += ["Every strategy on the same problems and seeds, against greedy "
                f"({pct(g['accuracy'])}, {ci(g)}, {g['mean_sequence_forwards']:.1f} seqs):", "",
                "| strategy | accuracy | 95% CI | seqs | vs greedy (+/−, p) | verdict |",
                "|---|---|---|---|---|---|"]
        for label, dd, s in rows:
            if not dd or s not in dd["summary"]:
                continue
            m = dd["summary"][s]
            w, lo_, p = mcnemar(verdicts(dd, s), gv)
            out.append(f"| {label} | {pct(m['accuracy'])} | {ci(m)} | "
                       f"{m['mean_sequence_forwards']:.1f} | +{w}/−{lo_}, {_p(p)} | "
                       f"{_outcome(w, lo_, p)} |")
        out.append("")
    steps_rows = []
    for name, label in (("steps8", "8 steps (1 slot per step)"),
                        ("steps2", "2 steps (4 slots per step)")):
        dd = load(results / task / f"{name}.json")
        if dd:
            steps_rows.append((label, dd))
    if steps_rows and g and "medal" in doc["summary"]:
        out += ["How many slots per step (the same problems):", "",
                "| decoding | greedy | MEDAL default | MEDAL vs greedy (+/−, p) | seqs greedy / MEDAL |",
                "|---|---|---|---|---|"]
        m = doc["summary"]["medal"]
        w, lo_, p = mcnemar(verdicts(doc, "medal"), gv)
        out.append(f"| 4 steps (2 slots per step, the default) | {pct(g['accuracy'])} | "
                   f"{pct(m['accuracy'])} | +{w}/−{lo_}, {_p(p)} | "
                   f"{g['mean_sequence_forwards']:.1f} / {m['mean_sequence_forwards']:.1f} |")
        for label, dd in steps_rows:
            gg, mm = dd["summary"]["greedy"], dd["summary"]["medal"]
            w, lo_, p = mcnemar(verdicts(dd, "medal"), verdicts(dd, "greedy"))
            out.append(f"| {label} | {pct(gg['accuracy'])} | {pct(mm['accuracy'])} | "
                       f"+{w}/−{lo_}, {_p(p)} | {gg['mean_sequence_forwards']:.1f} / "
                       f"{mm['mean_sequence_forwards']:.1f} |")
        out.append("")
    m = doc["summary"].get("medal")
    if m and g:
        w, lo_, p = mcnemar(verdicts(doc, "medal"), gv)
        hr_ok = hr and hr["summary"]["best_of_orders"] >= g["accuracy"] + 0.1
        beats = p < ALPHA and w > lo_
        text = ("**What this says.** " + (
            f"The order leaves headroom (best of {hr['summary']['orders']} random orders "
            f"{pct(hr['summary']['best_of_orders'])} against greedy {pct(g['accuracy'])})"
            if hr_ok else
            "The order leaves little headroom: the best of several random orders is "
            "barely above greedy")
            + f"; MEDAL against greedy: {pct(m['accuracy'])} against {pct(g['accuracy'])}, "
            f"+{w}/−{lo_}, {_p(p)}. ")
        if beats:
            text += "MEDAL beats greedy here"
            nm = doc["summary"].get("medal-no-mcts")
            mo = doc["summary"].get("medal-order")
            if nm:
                wn, ln, pn = mcnemar(verdicts(doc, "medal"), verdicts(doc, "medal-no-mcts"))
                text += (f"; phase C alone (the same decoder without the search, and without "
                         f"its one-at-a-time first commitments) scores {pct(nm['accuracy'])} "
                         f"(MEDAL +{wn}/−{ln}, {_p(pn)})")
            b3 = load(results / task / "bst3.json")
            if b3:
                mb = first_summary(b3)
                wb, lb, pb = mcnemar(verdicts(doc, "medal"), verdicts(b3, b3["strategies"][0]))
                text += (f"; at about the same cost ({m['mean_sequence_forwards']:.1f} "
                         f"sequences against {mb['mean_sequence_forwards']:.1f}), Best-of-3 "
                         f"scores {pct(mb['accuracy'])} (MEDAL +{wb}/−{lb}, {_p(pb)})")
            text += "."
            if mo:
                wo, lo2, po = mcnemar(verdicts(doc, "medal"), verdicts(doc, "medal-order"))
                if po < ALPHA and wo > lo2:
                    text += (f" The search's alternatives are what does it: MEDAL's schedule "
                             f"without them (`medal-order`, K2 = 1, C = 1) scores "
                             f"{pct(mo['accuracy'])} (MEDAL +{wo}/−{lo2}, {_p(po)})")
                    text += "."
                else:
                    text += (f" But the search is not what does it: MEDAL's schedule with no "
                             f"alternatives (`medal-order`, K2 = 1, C = 1) scores "
                             f"{pct(mo['accuracy'])} at {mo['mean_sequence_forwards']:.1f} "
                             f"sequences (MEDAL +{wo}/−{lo2}, {_p(po)}): writing the first "
                             "L_c slots one at a time is")
                    text += "."
                s2 = load(results / task / "steps2.json")
                if s2 and {"medal", "medal-order"} <= set(s2["summary"]):
                    w2, l2, p2 = mcnemar(verdicts(s2, "medal"), verdicts(s2, "medal-order"))
                    text += ((" The search's choice matters where decoding is harsher"
                              if p2 < ALPHA and w2 > l2 else
                              " At 2 steps, too, the choice adds nothing significant")
                             + f": at 2 steps MEDAL scores {pct(s2['summary']['medal']['accuracy'])} "
                             f"against {pct(s2['summary']['medal-order']['accuracy'])} for the "
                             f"same schedule without alternatives (+{w2}/−{l2}, {_p(p2)}; "
                             "\"What the search's parts buy\" has every control, \"The step "
                             "budget\" how this depends on the search's commitments counting "
                             "against the steps).")
            cheaper = [(s, mm) for s, mm in doc["summary"].items()
                       if not s.startswith("medal") and mm["accuracy"] >= m["accuracy"] - 0.005
                       and mm["mean_sequence_forwards"] < m["mean_sequence_forwards"]]
            for s, mm in cheaper:
                text += (f" But MEDAL is not the only way out, nor the cheapest: `{s}` reaches "
                         f"{pct(mm['accuracy'])} at {mm['mean_sequence_forwards']:.1f} sequences "
                         f"(MEDAL {m['mean_sequence_forwards']:.1f})"
                         + (" — the entropy-bounded sampler decides how many slots to write "
                            "from their summed entropy, so it writes one uncertain slot alone "
                            "and the rest once they are settled." if s == "eb" else "."))
            for label, dd in steps_rows:
                gg = dd["summary"]["greedy"]
                if gg["accuracy"] >= m["accuracy"] - 0.005 and \
                        gg["mean_sequence_forwards"] < m["mean_sequence_forwards"]:
                    text += (f" Nor does it beat slower decoding: greedy with {label} "
                             f"reaches {pct(gg['accuracy'])} at "
                             f"{gg['mean_sequence_forwards']:.1f} sequences. What MEDAL's "
                             "schedule buys is the safety of one slot at a time for its first L_c "
                             "commitments, then the speed of several per step.")
            if task == "twins":
                text += (" The shipped example `twins-medal-fixes-greedy` shows one problem "
                         "step by step.")
                lc_rows = {r["value"]: r for r in load(results / task / "sweep_lc.json") or []}
                if 6 in lc_rows and 2 in lc_rows:
                    text += (
                        f"\n\n**Why a deeper search hurts, even here.** With L_c = 6 MEDAL "
                        f"falls to {pct(lc_rows[6]['accuracy'])} (L_c = 2: "
                        f"{pct(lc_rows[2]['accuracy'])}; \"What the search did\" has the "
                        "sweep). Two commitments settle the word; after that every masked "
                        "slot has one certain letter, but the action set still holds K2 = 5 "
                        "actions (the top K2 of every slot's top K1 = 3 tokens), so once "
                        "fewer than five slots are masked it fills up with letters of "
                        "probability near 0. Their r_IG is computed against a parent whose "
                        "remaining entropy is itself near 0, so it is noise, and the "
                        "candidates' cumulative IG differs in the fourth decimal: on the "
                        "first problem (seed 10000, L_c = 6) the winner's sixth commitment "
                        "is a letter of probability 0.0004, chosen by cumulative IG 0.9985 "
                        "against 0.9985 and 0.9983 (`medal generate --task twins --problem "
                        "'kacaiiid nacampod gtqsfgft guvwfgfw' --lc 6 --trace t.json`). It "
                        "is the paper's action set and reward as written. Leaving the "
                        "implausible actions out (`--min-action-prob 0.01`, beyond the "
                        "paper, off by default) makes the same deep search right: see "
                        "\"Beyond the paper: a probability floor for the action set\", "
                        "which also shows whether this reading explains the collapse of "
                        "deep searches on the other tasks.")
        else:
            text += PICK_NEGATIVE if task == "pick" else "MEDAL does not beat greedy here."
        out += [text, ""]
    return out
