"""What Fast-dLLM's block KV cache costs in accuracy on the trained built-in models (issue 39).

    nice -n 10 env OMP_NUM_THREADS=1 python scripts/kv_cache_accuracy.py --n 300 --out kv.json
    python scripts/kv_cache_accuracy.py --from kv.json          # the table again, no runs

For each built-in task (Countdown, Sudoku), ``--n`` fresh problems (generated with seed
``--problem-seed``, 39000 by default: not the 10000 + seed sets the docs' other tables
use), each strategy (greedy, threshold, MEDAL) runs with the cache off, ``prefix`` and
``dual`` (``medal bench``'s runs: problem i uses seed i; lock-step ``--lock-step`` runs at a
time, which gives one-at-a-time's records on the CPU). Printed, per task, strategy and
cache: accuracy with its Wilson 95% interval; the answers equal to the exact run's; the
verdicts gained and lost against the exact run, paired problem by problem, and McNemar's
exact two-sided p; sequences, token passes and TPF a problem; for MEDAL, the runs whose
search committed what the exact run's did (the winner's L_c slots and tokens).

``--root-expansions N`` also prints, on N Countdown problems, how the cache moves MEDAL's
reward against greedy's choice: the root's K2 children (its 5 most confident slots of
the first block, each with its argmax token) evaluated against the cache made at the root
and exactly -- how often the child of highest r_IG is the exact one's, the mean largest
r_IG error -- and greedy's second step (after the root's most confident slot) cached and
exact.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

import torch  # noqa: E402

from medal.bench import LockStep, run_record, wilson_interval  # noqa: E402
from medal.config import GenerationConfig  # noqa: E402
from medal.engine import Run  # noqa: E402
from medal.models import load_model  # noqa: E402
from medal.tasks import get_task  # noqa: E402

TASKS = ("countdown", "sudoku")
STRATEGIES = ("greedy", "threshold", "medal")
MODES = ("off", "prefix", "dual")


def mcnemar(a: list[bool], b: list[bool]) -> tuple[int, int, float]:
    """(right in ``a`` only, right in ``b`` only, McNemar's exact two-sided p: the
    binomial test of the discordant pairs at 1/2)."""
    gain = sum(x and not y for x, y in zip(a, b))
    loss = sum(y and not x for x, y in zip(a, b))
    n = gain + loss
    if n == 0:
        return 0, 0, 1.0
    tail = sum(math.comb(n, j) for j in range(min(gain, loss) + 1)) / 2 ** n
    return gain, loss, min(1.0, 2 * tail)


def commitments(run: Run) -> list[list[int]] | None:
    """MEDAL: the winner's path from the root, as [slot, token] pairs."""
    if run.mcts is None or run.result.search is None:
        return None
    node = run.mcts.nodes[run.result.search.winner]
    return [[int(n.action.slot), int(n.action.token)] for n in node.path()[1:]]


def measure(task: str, n: int, problem_seed: int, strategies, modes, lock_step: int) -> dict:
    model = load_model(f"builtin:{task}")
    problems = get_task(task).generate(n, seed=problem_seed)
    out = {}
    for mode in modes:
        model.set_kv_cache(None if mode == "off" else mode)
        for strategy in strategies:
            t0 = time.perf_counter()
            runs = [Run(model, task=task, problem=p, strategy=strategy,
                        config=GenerationConfig(seed=i)) for i, p in enumerate(problems)]
            for _ in LockStep(lock_step).run(iter(runs)):
                pass
            rows = []
            for i, run in enumerate(runs):
                rec = run_record(run)
                rows.append({"index": i, "text": rec["text"], "verified": bool(rec["verified"]),
                             "sequence_forwards": rec["sequence_forwards"],
                             "token_passes": rec["token_passes"],
                             "valid_tokens": rec["valid_tokens"],
                             "commitments": commitments(run)})
            out[f"{strategy}/{mode}"] = rows
            print(f"{task} {strategy} cache {mode}: {n} runs in "
                  f"{time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
    model.set_kv_cache(None)
    return out


def table(doc: dict) -> str:
    lines = []
    for task, runs in doc["tasks"].items():
        lines += [f"\n{task}, {doc['n']} problems (seed {doc['problem_seed']}):",
                  "| strategy | cache | accuracy [95%] | as exact | right: +gained / -lost "
                  "| McNemar p | search as exact | sequences | token passes | TPF |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        for strategy in doc["strategies"]:
            exact = runs.get(f"{strategy}/off")
            for mode in doc["modes"]:
                rows = runs.get(f"{strategy}/{mode}")
                if rows is None:
                    continue
                n = len(rows)
                k = sum(r["verified"] for r in rows)
                lo, hi = wilson_interval(k, n)
                seq = sum(r["sequence_forwards"] for r in rows)
                cells = [strategy, mode, f"{100 * k / n:.1f}% [{100 * lo:.1f}, {100 * hi:.1f}]"]
                if mode == "off" or exact is None:
                    cells += ["-", "-", "-", "-"]
                else:
                    same = sum(a["text"] == b["text"] for a, b in zip(rows, exact))
                    gain, loss, p = mcnemar([r["verified"] for r in rows],
                                            [r["verified"] for r in exact])
                    search = ("-" if rows[0]["commitments"] is None else
                              str(sum(a["commitments"] == b["commitments"]
                                      for a, b in zip(rows, exact))))
                    cells += [str(same), f"+{gain} / -{loss}", f"{p:.3g}", search]
                cells += [f"{seq / n:.1f}", f"{sum(r['token_passes'] for r in rows) / n:.0f}",
                          f"{sum(r['valid_tokens'] for r in rows) / seq:.2f}"]
                lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def entropy(logits: torch.Tensor) -> torch.Tensor:
    p = torch.softmax(logits, -1)
    return -(p * torch.log(p + 1e-8)).sum(-1)


def root_expansions(n: int, problem_seed: int) -> str:
    """See the module docstring: the reward's error under the cache against greedy's."""
    exact_model = load_model("builtin:countdown")
    problems = get_task("countdown").generate(n, seed=problem_seed)
    lines = [f"\nCountdown root expansions, {n} problems (seed {problem_seed}):",
             "| cache | best child (r_IG) as exact | mean largest r_IG error "
             "| greedy's 2nd step as exact |", "|---|---|---|---|"]
    for mode in ("prefix", "dual"):
        model = load_model("builtin:countdown", kv_cache=mode)
        best = greedy = 0
        error = 0.0
        for prob in problems:
            run = Run(model, task="countdown", problem=prob, strategy="greedy",
                      config=GenerationConfig(seed=0))
            P, L, B = run.runner.prompt.shape[0], run.config.gen_length, run.config.block_length
            root = torch.cat([run.runner.prompt, torch.full((L,), model.mask_id)])[None]
            cache = model.start_kv_cache(B, P)
            logits = model.logits(root, L, cache=cache)[0]     # the refresh: exact
            p, tok = torch.softmax(logits, -1).max(-1)
            order = torch.argsort(p[:B], descending=True)[:5]
            kids = root.repeat(len(order), 1)
            for j, s in enumerate(order):
                kids[j, P + s] = tok[s]
            before = float(entropy(logits).sum())

            def rig(out):
                h = entropy(out)
                return torch.tensor([(before - float(h[j].sum() - h[j, s])) / before
                                     for j, s in enumerate(order.tolist())])
            cached, exact = rig(model.logits(kids, L, cache=cache)), rig(exact_model.logits(kids, L))
            best += int(cached.argmax() == exact.argmax())
            error += float((cached - exact).abs().max())
            state = kids[:1]
            slots = [s for s in range(B) if s != int(order[0])]

            def pick(out):
                q, t = torch.softmax(out[0], -1).max(-1)
                s = max(slots, key=lambda s: float(q[s]))
                return s, int(t[s])
            greedy += int(pick(model.logits(state, L, cache=cache)) ==
                          pick(exact_model.logits(state, L)))
        lines.append(f"| {mode} | {best} / {n} | {error / n:.3f} | {greedy} / {n} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=300, help="problems a task (default 300)")
    ap.add_argument("--problem-seed", type=int, default=39_000)
    ap.add_argument("--tasks", default=",".join(TASKS))
    ap.add_argument("--strategies", default=",".join(STRATEGIES))
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--lock-step", type=int, default=8)
    ap.add_argument("--out", help="write every run's record here (JSON)")
    ap.add_argument("--from", dest="source", help="print the table of a saved --out file")
    ap.add_argument("--root-expansions", type=int, default=0, metavar="N",
                    help="also the reward's error under the cache on N Countdown problems")
    args = ap.parse_args(argv)
    if args.source:
        doc = json.loads(Path(args.source).read_text())
    else:
        torch.set_num_threads(1)
        doc = {"n": args.n, "problem_seed": args.problem_seed,
               "strategies": args.strategies.split(","), "modes": args.modes.split(","),
               "machine": f"{torch.get_num_threads()} thread(s), torch {torch.__version__}",
               "tasks": {}}
        for task in args.tasks.split(","):
            doc["tasks"][task] = measure(task, args.n, args.problem_seed, doc["strategies"],
                                         doc["modes"], args.lock_step)
        if args.out:
            Path(args.out).write_text(json.dumps(doc) + "\n")
    print(table(doc))
    if args.root_expansions:
        print(root_expansions(args.root_expansions, args.problem_seed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
