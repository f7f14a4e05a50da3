"""Headroom for a better order: greedy against the best of N random unmasking orders.

    python scripts/headroom.py TASK N_PROBLEMS N_ORDERS OUT.json [--steps S]

For each fresh problem (generator seed 10000, as ``medal bench``): greedy's verdict, and
the verdicts of N decodes that unmask in a random order (LLaDA's random remasking, argmax
tokens, the task's default steps; order k of problem i uses seed 1000 * k + i). "Best of N
orders" is right when any of them is: an oracle over orders, the ceiling a search over the
early order could reach with the same decoder. If it is not well above greedy, the order
leaves search nothing to fix on this task.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from medal import load_model  # noqa: E402
from medal.bench import load_or_generate, wilson_interval  # noqa: E402
from medal.config import GenerationConfig  # noqa: E402
from medal.engine import Run  # noqa: E402
from medal.tasks import get_task  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("task")
    ap.add_argument("n", type=int)
    ap.add_argument("orders", type=int)
    ap.add_argument("out")
    ap.add_argument("--steps", type=int, default=None)
    ap.add_argument("--seed", type=int, default=0,
                    help="the problems' seed, as medal bench --seed (generator seed 10000 + it)")
    args = ap.parse_args(argv)
    task = get_task(args.task)
    problems, source = load_or_generate(args.task, None, args.n, args.seed)
    model = load_model(f"builtin:{args.task}")
    base = GenerationConfig(steps=args.steps)
    records = []
    for i, p in enumerate(problems):
        greedy = Run(model, task=task, problem=p, strategy="greedy",
                     config=replace(base, seed=i)).finish()
        rand = [Run(model, task=task, problem=p, strategy="random",
                    config=replace(base, seed=1000 * k + i)).finish()
                for k in range(args.orders)]
        records.append({"index": i, "greedy": bool(greedy.verified),
                        "random": [bool(r.verified) for r in rand],
                        "random_answers": [r.answer for r in rand],
                        "greedy_answer": greedy.answer,
                        "greedy_sequences": greedy.sequence_forwards})
    n = len(records)
    g = sum(r["greedy"] for r in records)
    best = sum(any(r["random"]) for r in records)
    one = statistics.fmean(statistics.fmean(r["random"]) for r in records)
    steps = Run(model, task=task, problem=problems[0], strategy="greedy", config=base).config.steps
    summary = {"n": n, "orders": args.orders, "steps": steps,
               "greedy": g / n, "greedy_ci95": wilson_interval(g, n),
               "best_of_orders": best / n, "best_of_orders_ci95": wilson_interval(best, n),
               "one_random_order": one,
               # problems where some random order is right and greedy is not, and back
               "orders_fix_greedy": sum(any(r["random"]) and not r["greedy"] for r in records),
               "greedy_right_no_order_right": sum(r["greedy"] and not any(r["random"])
                                                  for r in records)}
    doc = {"format": "medal-headroom", "task": args.task, "problems": source,
           "summary": summary, "records": records}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(doc) + "\n")
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
