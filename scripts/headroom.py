"""Headroom for a better order: greedy against random orders, an oracle over the first
commitment, the schedule controls, and the oracle over MEDAL's candidates.

    python scripts/headroom.py TASK N_PROBLEMS N_ORDERS OUT.json [--steps S] [--seed K]
        [--template T] [--controls]

For each fresh problem (generator seed 10000 + K, as ``medal bench --seed K``): greedy's
verdict, and the verdicts of N decodes that unmask in a random order (LLaDA's random
remasking, argmax tokens, the task's default steps; order k of problem i uses seed
1000 * k + i). "Best of N orders" is right when any of them is: an oracle over orders,
the ceiling a search over the early order could reach with the same decoder. If it is not
well above greedy, the order leaves search nothing to fix on this task.

``--controls`` (issue 38) adds what tells order headroom the *schedule* captures from
headroom only a choice can reach, each on the same problems with the problem's seed:

* the schedule controls: greedy writing one slot per step (``steps`` = the answer length),
  ``medal-order`` (MEDAL's first L_c commitments one at a time, no alternatives) and the
  entropy-bounded sampler ``eb`` -- if these fix greedy, the order's headroom is the
  schedule's;
* the **first-commitment oracle**: each of the root's K2 actions (MEDAL's action set: the
  K2 best (slot, token) pairs by the confidence score) written first, then greedy decoding
  (one model call per step, the task's steps); right when any is -- the ceiling of a
  search over the first commitment;
* MEDAL (default search) and MEDAL with ``--search explore``, with their **candidate
  oracle** (right when the phase-C answer of any of its C candidates is) and the expected
  accuracy of a candidate drawn at random.

The output's ``summary`` has every accuracy with its 95% Wilson interval and, against
greedy, the paired counts (+ right only with it, - only with greedy) and the exact
McNemar p.
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from medal import load_model  # noqa: E402
from medal.bench import load_or_generate, wilson_interval  # noqa: E402
from medal.config import GenerationConfig  # noqa: E402
from medal.decoding import decode  # noqa: E402
from medal.engine import Run  # noqa: E402
from medal.tasks import get_task  # noqa: E402


def mcnemar_p(plus: int, minus: int) -> float:
    """Exact two-sided McNemar p for ``plus`` / ``minus`` discordant pairs."""
    n = plus + minus
    if n == 0:
        return 1.0
    k = min(plus, minus)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n
    return min(1.0, 2 * tail)


def first_commitment_oracle(model, task, problem, config: GenerationConfig) -> list[bool]:
    """Each of the root's action set (MEDAL's K2 best (slot, token) pairs by the
    confidence score) written first, then greedy decoding in the run's steps: each one's
    verdict, in the action set's order."""
    from medal.search import MCTS
    run = Run(model, task=task, problem=problem, strategy="greedy", config=config)
    actions = MCTS(run.runner, run.config).root.actions
    verdicts = []
    for a in actions:
        state = run.new_state()
        state.answer[a.slot] = a.token
        state.order[a.slot], state.step = 0, 1
        state.steps_in_block = {a.slot // run.config.block_length: 1}
        for _ in decode(run.runner, state, run.config, "low_confidence", "decode"):
            pass
        verdicts.append(bool(run._result("greedy", state, run.runner, 0.0).verified))
    return verdicts


def candidate_finals(result) -> list[bool]:
    """The verdicts of a MEDAL run's candidates' phase-C answers (the winner's and the
    losers' completions for display)."""
    return [bool((c.get("final") or {}).get("verified")) for c in result.search.candidates]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("task")
    ap.add_argument("n", type=int)
    ap.add_argument("orders", type=int)
    ap.add_argument("out")
    ap.add_argument("--steps", type=int, default=None)
    ap.add_argument("--seed", type=int, default=0,
                    help="the problems' seed, as medal bench --seed (generator seed 10000 + it)")
    ap.add_argument("--template", type=int, default=0,
                    help="the task's prompt template (tasks with several: bridge)")
    ap.add_argument("--controls", action="store_true",
                    help="also the schedule controls, the first-commitment oracle and "
                         "MEDAL's candidate oracle (issue 38)")
    args = ap.parse_args(argv)
    task = get_task(args.task)
    problems, source = load_or_generate(args.task, None, args.n, args.seed)
    model = load_model(f"builtin:{args.task}")
    base = GenerationConfig(steps=args.steps, template=args.template)
    records = []
    for i, p in enumerate(problems):
        cfg = replace(base, seed=i)
        greedy = Run(model, task=task, problem=p, strategy="greedy", config=cfg).finish()
        rand = [Run(model, task=task, problem=p, strategy="random",
                    config=replace(base, seed=1000 * k + i)).finish()
                for k in range(args.orders)]
        rec = {"index": i, "greedy": bool(greedy.verified),
               "random": [bool(r.verified) for r in rand],
               "random_answers": [r.answer for r in rand],
               "greedy_answer": greedy.answer,
               "greedy_sequences": greedy.sequence_forwards}
        if args.controls:
            length = Run(model, task=task, problem=p, strategy="greedy",
                         config=cfg).config.gen_length
            rec["one_slot"] = bool(Run(model, task=task, problem=p, strategy="greedy",
                                       config=replace(cfg, steps=length)).finish().verified)
            for name in ("medal-order", "eb"):
                rec[name] = bool(Run(model, task=task, problem=p, strategy=name,
                                     config=cfg).finish().verified)
            rec["first_commitments"] = first_commitment_oracle(model, task, p, cfg)
            for name, c in (("medal", cfg), ("medal_explore", cfg.with_search_mode("explore"))):
                res = Run(model, task=task, problem=p, strategy="medal", config=c).finish()
                rec[name] = bool(res.verified)
                rec[name + "_candidates"] = candidate_finals(res)
                rec[name + "_sequences"] = res.sequence_forwards
        records.append(rec)
    n = len(records)
    g = sum(r["greedy"] for r in records)
    best = sum(any(r["random"]) for r in records)
    one = statistics.fmean(statistics.fmean(r["random"]) for r in records)
    steps = Run(model, task=task, problem=problems[0], strategy="greedy", config=base).config.steps
    summary = {"n": n, "orders": args.orders, "steps": steps, "template": args.template,
               "greedy": g / n, "greedy_ci95": wilson_interval(g, n),
               "best_of_orders": best / n, "best_of_orders_ci95": wilson_interval(best, n),
               "one_random_order": one,
               # problems where some random order is right and greedy is not, and back
               "orders_fix_greedy": sum(any(r["random"]) and not r["greedy"] for r in records),
               "greedy_right_no_order_right": sum(r["greedy"] and not any(r["random"])
                                                  for r in records)}
    if args.controls:
        def verdicts(key):
            return {"one_slot_greedy": [r["one_slot"] for r in records],
                    "medal_order": [r["medal-order"] for r in records],
                    "eb": [r["eb"] for r in records],
                    "first_commitment_oracle": [any(r["first_commitments"]) for r in records],
                    "best_of_orders": [any(r["random"]) for r in records],
                    "medal": [r["medal"] for r in records],
                    "medal_candidate_oracle": [any(r["medal_candidates"]) for r in records],
                    "medal_explore": [r["medal_explore"] for r in records],
                    "medal_explore_candidate_oracle": [any(r["medal_explore_candidates"])
                                                       for r in records]}[key]
        g_v = [r["greedy"] for r in records]
        for key in ("one_slot_greedy", "medal_order", "eb", "first_commitment_oracle",
                    "best_of_orders", "medal", "medal_candidate_oracle", "medal_explore",
                    "medal_explore_candidate_oracle"):
            v = verdicts(key)
            k = sum(v)
            plus = sum(a and not b for a, b in zip(v, g_v))
            minus = sum(b and not a for a, b in zip(v, g_v))
            summary[key] = {"accuracy": k / n, "ci95": wilson_interval(k, n),
                            "vs_greedy": [plus, minus], "mcnemar_p": mcnemar_p(plus, minus)}
        for name in ("medal", "medal_explore"):
            summary[name]["random_candidate_accuracy"] = statistics.fmean(
                statistics.fmean(r[name + "_candidates"]) for r in records
                if r[name + "_candidates"])
            summary[name]["mean_sequences"] = statistics.fmean(r[name + "_sequences"]
                                                               for r in records)
        summary["first_commitment_oracle"]["actions"] = statistics.fmean(
            len(r["first_commitments"]) for r in records)
    doc = {"format": "medal-headroom", "task": args.task, "problems": source,
           "summary": summary, "records": records}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(doc) + "\n")
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
