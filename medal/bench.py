"""Benchmark: strategies on a task's problems, with accuracy, forwards and time.

    python -m medal bench --task countdown --n 100 --strategies greedy,bst5,medal --seed 0 --out results.json
    accelerate launch --multi_gpu --num_processes 2 -m medal bench ...   # sharded, same results

(``--multi_gpu`` with no GPU present runs CPU processes over gloo: how accelerate shards
on a CPU machine without MPI.)

Every problem gets its own seed (``seed + index``), so a problem's result does not depend
on which process ran it or in what order: a sharded run equals a single-process run.

Lock-step (``--lock-step N``, :func:`lock_step`): N runs advance together, mctx-style --
each to its next forward (an MCTS expansion's K2 children, the root, a decode step), then
one model call for all of theirs -- and the same per-run records come out as one at a
time (one at a time is the lock-step of 1: the same code).
"""
from __future__ import annotations

import json
import math
import os
import platform
import statistics
import time
from dataclasses import replace
from pathlib import Path

from tqdm.auto import tqdm

from ._version import __version__
from .config import GenerationConfig
from .engine import ALIASES, STRATEGIES, Run
from .config import MAX_LOCK_STEP
from .errors import InputError
from .provenance import record as repro_record
from .runner import ForwardRequest, forward_together
from .tasks import get_task

TIMING_FIELDS = ("seconds", "model_seconds", "search_seconds", "search_model_seconds")


def wilson_interval(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """95% Wilson score interval for k successes in n trials."""
    if n == 0:
        return (0.0, 0.0)
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def parse_strategies(text: str) -> list[str]:
    names = [ALIASES.get(s.strip(), s.strip()) for s in text.split(",") if s.strip()]
    unknown = [s for s in names if s not in STRATEGIES]
    if unknown or not names:
        raise InputError(f"unknown strategies {unknown or text!r}; choose from: {', '.join(STRATEGIES)}")
    return names




class LockStep:
    """Runs to the end, ``width`` at a time, in lock-step (mctx-style batched search): every
    active run steps on until its next forward (its runner defers them:
    :meth:`medal.runner.ModelRunner.prepare`), then those forwards run in one model call
    (:func:`medal.runner.forward_together`), each run is charged its share of the time, and
    the runs go on. A run's own computation -- its tree, its random stream, its cache and
    counters -- is its own; only the model call is shared, so a run's result, counters and
    trace are those of the same run alone wherever the network's rows do not depend on
    their batch (see forward_together). A width of 1 is one run at a time, the same code.

    :attr:`model_calls` counts the model calls made (joint ones once), :attr:`sequences`
    the sequences they covered, :attr:`requests` the runs' forwards they served."""

    def __init__(self, width: int = 1, joint_scoring: bool | None = None):
        if not 1 <= width <= MAX_LOCK_STEP:
            raise InputError(f"lock-step width must be 1..{MAX_LOCK_STEP}, got {width}")
        self.width = width
        self.joint_scoring = joint_scoring   # forward_together's (None: off on the CPU)
        self.model_calls = 0
        self.sequences = 0
        self.requests = 0

    def run(self, runs):
        """Drive ``runs`` (an iterable of unstarted :class:`~medal.engine.Run` s, made
        only when a place is free) to the end; yields each when it has finished, in the
        order they finish."""
        source, active = iter(runs), []
        while True:
            while len(active) < self.width and (run := next(source, None)) is not None:
                run.runner.defer = True
                active.append(run)
            if not active:
                return
            waiting: list[tuple[Run, ForwardRequest]] = []
            for run in active:
                while (item := run.step()) is not None and not isinstance(item, ForwardRequest):
                    pass
                if item is None:
                    yield run
                else:
                    waiting.append((run, item))
            active = [run for run, _ in waiting]
            if waiting:
                requests = [r for _, r in waiting]
                self.model_calls += forward_together(requests,
                                                     joint_scoring=self.joint_scoring)
                self.sequences += sum(len(r) for r in requests)
                self.requests += len(requests)
                for run, r in waiting:
                    run.charge(r.seconds)


def run_one(model, task, problem, strategy: str, config: GenerationConfig) -> dict:
    run = Run(model, task=task, problem=problem, strategy=strategy, config=config)
    return run_record(next(LockStep(1).run([run])))


def run_record(run: Run) -> dict:
    """A finished run's bench record."""
    res, problem, strategy, config = run.result, run.problem, run.strategy, run.config
    rec = {"strategy": strategy, "problem": problem.to_json(), "text": res.text,
           "answer": res.answer, "verified": res.verified, "forwards": res.forwards,
           "sequence_forwards": res.sequence_forwards, "cache_hits": res.cache_hits,
           "standalone_forwards": res.standalone_forwards,
           "standalone_sequences": res.standalone_sequences, "seconds": res.seconds,
           "model_seconds": res.model_seconds, "seed": config.seed,
           **{k: v for k, v in res.cost().items() if k != "model_calls"}}
    search = res.search
    if search is not None:
        rec.update(iterations=search.iterations, stop_reason=search.stop_reason,
                   search_seconds=search.seconds, search_model_seconds=search.model_seconds,
                   search_forwards=search.forwards, search_stats=search.stats)
        if run.mcts is not None:
            # the search's own statistics (MCTS.stats, as in the trace) and, once the
            # winner is known, whether it left the most confident path
            rec["search_stats"] = {**search.stats,
                                   **run.mcts.winner_stats(run.mcts.nodes[search.winner])}
    judged = commitments(run)
    if judged is not None:
        rec["commitments"] = judged
    # slots written per decode step (the search's commitments are its first L_c steps)
    steps = [s for s in res.order if s is not None]
    rec["slots_per_step"] = [steps.count(k) for k in range(max(steps) + 1)] if steps else []
    if search is not None:
        rec["winner"] = search.winner
        rec["candidates"] = [
            {"node": c["node"], "cumulative_ig": c["cumulative_ig"], "score": c["score"],
             "final_verified": (c.get("final") or {}).get("verified"),
             "final_answer": (c.get("final") or {}).get("answer")}
            for c in search.candidates]
    return rec


def _sudoku_answer(problem) -> str | None:
    from .tasks.sudoku import solve
    return solve(problem)


#: tasks whose problems have exactly one right answer, as problem -> its text: a built-in
#: (character-level) model writes character i of the answer at slot i, so each commitment
#: is right or wrong on its own (issue 38). Countdown, Pick and Twins have several.
UNIQUE_ANSWERS = {"sudoku": _sudoku_answer}


def commitments(run: Run) -> list[dict] | None:
    """The run's first L_c commitments (issue 38): for a search, the winner's path (what
    the search committed, each action's probability p, its slot's entropy and the node's
    r_IG); for a decoder, its first L_c writes in the order written (slots of one step in
    slot order), with p and the entropy of the state before that step (read from the run's
    cache: no forward is counted). ``wrong``: the written character differs from the
    task's one right answer at that slot (None where the task has no single answer or the
    model is not character-level). None for a run with no order of writes (Best-of-N's
    vote still has one: its chosen sample's)."""
    res, k = run.result, run.config.lc
    if run.mcts is not None and res.search is not None:
        out = [{"slot": n.action.slot, "token": n.action.token, "p": n.action.p,
                "entropy": n.action.entropy, "r_ig": n.r_ig}
               for n in run.mcts.nodes[res.search.winner].path()[1:]]
    else:
        import torch
        writes = sorted((step, slot) for slot, step in enumerate(res.order or [])
                        if step is not None)[:k]
        if not writes:
            return None
        answer = torch.tensor(res.answer_ids)
        runner = run.runner.sharing_cache()
        out = []
        for step, slot in writes:
            state = runner.initial_answer()
            before = [i for i, st in enumerate(res.order) if st is not None and st < step]
            state[before] = answer[before]
            ev = runner.evaluate_one(state)
            token = int(answer[slot])
            hit = (ev.top_tokens[slot] == token).nonzero()
            out.append({"slot": slot, "token": token,
                        "p": float(ev.top_probs[slot, hit[0, 0]]) if len(hit) else None,
                        "entropy": float(ev.entropy[slot]), "r_ig": None})
    truth = (UNIQUE_ANSWERS[run.task.name](run.problem)
             if run.task.name in UNIQUE_ANSWERS and run.model.builtin
             and run.problem is not None else None)
    for c in out:
        c["wrong"] = (None if truth is None or c["slot"] >= len(truth)
                      else run.model.token_text(c["token"]) != truth[c["slot"]])
    return out


def candidate_analysis(records: list[dict]) -> dict | None:
    """Does the information gain pick the right candidate? Needs every candidate completed
    (``--complete-candidates``). Reports the winner's accuracy, an oracle's (any candidate
    right), how often the candidates differ, and how often the highest-IG candidate is a
    right one when some but not all are."""
    rows = [r for r in records if r.get("candidates")
            and all(c["final_verified"] is not None for c in r["candidates"])]
    if not rows:
        return None
    mixed = [r for r in rows if 0 < sum(c["final_verified"] for c in r["candidates"])
             < len(r["candidates"])]
    ig_right = sum(max(r["candidates"], key=lambda c: c["score"])["final_verified"] for r in mixed)
    gap = [statistics.fmean(c["cumulative_ig"] for c in r["candidates"] if c["final_verified"])
           - statistics.fmean(c["cumulative_ig"] for c in r["candidates"] if not c["final_verified"])
           for r in mixed]
    return {"problems": len(rows),
            "winner_accuracy": statistics.fmean(bool(r["verified"]) for r in rows),
            "oracle_accuracy": statistics.fmean(any(c["final_verified"] for c in r["candidates"])
                                                for r in rows),
            "distinct_final_answers": statistics.fmean(
                len({c["final_answer"] for c in r["candidates"]}) for r in rows),
            "mixed_problems": len(mixed),
            "ig_picks_a_right_one_when_mixed": ig_right / len(mixed) if mixed else None,
            "chance_when_mixed": statistics.fmean(
                sum(c["final_verified"] for c in r["candidates"]) / len(r["candidates"])
                for r in mixed) if mixed else None,
            "mean_ig_gap_right_minus_wrong": statistics.fmean(gap) if gap else None}


def summarise(records: list[dict], strategies: list[str]) -> dict:
    out = {}
    for s in strategies:
        rows = [r for r in records if r["strategy"] == s]
        if not rows:
            continue
        k, n = sum(bool(r["verified"]) for r in rows), len(rows)
        lo, hi = wilson_interval(k, n)
        summary = {"n": n, "correct": k, "accuracy": k / n, "ci95": [lo, hi],
                   "mean_forwards": statistics.fmean(r["forwards"] for r in rows),
                   "mean_sequence_forwards": statistics.fmean(r["sequence_forwards"] for r in rows),
                   "mean_cache_hits": statistics.fmean(r.get("cache_hits", 0) for r in rows),
                   "mean_seconds": statistics.fmean(r["seconds"] for r in rows),
                   **cost_summary(rows)}
        summary.update(candidate_headroom(rows))
        mech = commitment_summary(rows)
        if mech:
            summary["commitments"] = mech
        searched = [r for r in rows if r.get("iterations")]
        if searched:
            it = sum(r["iterations"] for r in searched)
            search_s = sum(r["search_seconds"] for r in searched)
            model_s = sum(r["search_model_seconds"] for r in searched)
            summary.update(
                mean_iterations=it / len(searched),
                ms_per_iteration=1000 * search_s / it,
                bookkeeping_share=(search_s - model_s) / search_s if search_s else 0.0,
                stop_reasons={k: sum(r["stop_reason"] == k for r in searched)
                              for k in ("candidates", "budget", "exhausted")})
            stats = [r["search_stats"] for r in searched if r.get("search_stats")]
            if stats:
                summary["search"] = {
                    f"mean_{k}": statistics.fmean(st[k] for st in stats)
                    for k in ("iterations", "depth_reached", "nodes", "branch_expansions",
                              "candidates", "distinct_candidate_states",
                              "distinct_first_commitments")}
                summary["search"]["share_branching"] = statistics.fmean(
                    st["branch_expansions"] > 0 for st in stats)
                off = [st["winner_off_confident_path"] for st in stats
                       if "winner_off_confident_path" in st]
                if off:
                    summary["search"]["share_winner_off_confident_path"] = statistics.fmean(off)
                # the search's fingerprint: two settings with the same fingerprints on
                # every problem ran the same computation
                summary["search"]["fingerprint"] = _fingerprint(searched)
        out[s] = summary
    return out


def candidate_headroom(rows: list[dict]) -> dict:
    """The headroom of a search's candidates (issue 38), beside its accuracy in every
    table: ``oracle_accuracy``, the share of problems where one of its C candidates'
    phase-C answers verifies (the best any chooser of them could do, the task's verifier
    choosing); ``random_choice_accuracy``, the expected accuracy of a candidate drawn
    uniformly (the mean share of right candidates: the exact expectation of
    ``medal-random-choice``, with no draw's noise). Only over problems whose every
    candidate was completed (answers of up to 64 slots, or ``--complete-candidates``);
    nothing for a strategy without candidates."""
    done = [r for r in rows if r.get("candidates")
            and all(c.get("final_verified") is not None for c in r["candidates"])]
    if not done:
        return {}
    return {"candidate_problems": len(done),
            "oracle_accuracy": statistics.fmean(
                any(c["final_verified"] for c in r["candidates"]) for r in done),
            "random_choice_accuracy": statistics.fmean(
                statistics.fmean(bool(c["final_verified"]) for c in r["candidates"])
                for r in done)}


def commitment_summary(rows: list[dict]) -> dict | None:
    """The search's commitments against the task's one right answer (issue 38: why MEDAL
    loses on Sudoku): of the problems whose first L_c commitments are known to be right or
    wrong (:func:`commitments`), the share with a wrong one, the share of commitments
    wrong, how many of the problems with a wrong one end wrong, and the mean probability
    and r_IG of the right and of the wrong commitments. None where no commitment could be
    judged (a task with more than one right answer)."""
    judged = [r for r in rows if r.get("commitments")
              and all(c.get("wrong") is not None for c in r["commitments"])]
    if not judged:
        return None
    commits = [c for r in judged for c in r["commitments"]]
    bad = [r for r in judged if any(c["wrong"] for c in r["commitments"])]

    def mean(key, wrong):
        vals = [c[key] for c in commits if bool(c["wrong"]) == wrong and c.get(key) is not None]
        return statistics.fmean(vals) if vals else None
    return {"problems": len(judged), "commitments": len(commits),
            "problems_with_a_wrong_commitment": len(bad),
            "share_problems_with_a_wrong_commitment": len(bad) / len(judged),
            "share_commitments_wrong": statistics.fmean(bool(c["wrong"]) for c in commits),
            "wrong_commitment_and_wrong_answer": sum(not r["verified"] for r in bad),
            "mean_p_right": mean("p", False), "mean_p_wrong": mean("p", True),
            "mean_r_ig_right": mean("r_ig", False), "mean_r_ig_wrong": mean("r_ig", True)}


def cost_summary(rows: list[dict]) -> dict:
    """The cost axis (:mod:`medal.cost`) over a strategy's rows: mean token passes and
    valid tokens, and the TPF of the whole set (its valid tokens / its sequence
    forwards: a ratio of sums, as a leaderboard reports it). Rows from before the cost
    axis give nothing."""
    if not all("token_passes" in r for r in rows):
        return {}
    seqs = sum(r["sequence_forwards"] for r in rows)
    return {"mean_token_passes": statistics.fmean(r["token_passes"] for r in rows),
            "mean_valid_tokens": statistics.fmean(r["valid_tokens"] for r in rows),
            "tpf": sum(r["valid_tokens"] for r in rows) / seqs if seqs else None}


def _fingerprint(rows: list[dict]) -> str:
    """A short hash of what the search chose on each problem (its candidates' nodes and
    final answers, the winner, iterations): equal fingerprints mean the same search."""
    import hashlib
    h = hashlib.sha256()
    for r in sorted(rows, key=lambda r: r.get("index", 0)):
        h.update(json.dumps([r.get("index"), r.get("iterations"), r.get("winner"),
                             [(c["node"], c["final_answer"]) for c in r.get("candidates") or []],
                             r.get("answer")]).encode())
    return h.hexdigest()[:12]


#: the search's statistics in a bench row (means per problem; "off-line": expansions off
#: the first-expanded line, "firsts": distinct first commitments among the candidates,
#: "off-conf": share of winners not on the most confident path)
SEARCH_COLUMNS = (("iters", "mean_iterations", ".1f"), ("nodes", "mean_nodes", ".1f"),
                  ("off-line", "mean_branch_expansions", ".2f"),
                  ("firsts", "mean_distinct_first_commitments", ".2f"),
                  ("off-conf", "share_winner_off_confident_path", ".0%"))


#: the candidates' headroom in a bench row (issue 38, :func:`candidate_headroom`): the
#: best of the search's C candidates by the verifier, and a uniformly random one
HEADROOM_COLUMNS = (("oracle", "oracle_accuracy"), ("rand-pick", "random_choice_accuracy"))


def format_table(summary: dict) -> str:
    """The bench's printed table: accuracy and cost, the candidates' headroom (oracle,
    random pick) beside a search's accuracy, its statistics, and -- where the task has one
    right answer to judge them by -- the share of problems whose first L_c commitments
    hold a wrong one ("wrong-L_c")."""
    judged = any(m.get("commitments") for m in summary.values())
    head = (f"{'strategy':<24}{'acc':>7}{'95% CI':>16}"
            + "".join(f"{c:>10}" for c, _ in HEADROOM_COLUMNS)
            + f"{'calls':>8}{'seqs':>8}{'hits':>8}"
            f"{'tokens':>9}{'TPF':>7}{'sec':>8}" + "".join(f"{c:>10}" for c, _, _ in SEARCH_COLUMNS)
            + (f"{'wrong-L_c':>11}" if judged else ""))
    lines = [head, "-" * len(head)]
    for s, m in summary.items():
        lo, hi = m["ci95"]
        st = m.get("search") or {}
        mech = m.get("commitments") or {}
        wrong = mech.get("share_problems_with_a_wrong_commitment")
        lines.append(f"{s:<24}{m['accuracy']:>7.1%}{f'[{lo:.0%}, {hi:.0%}]':>16}"
                     + "".join(f"{format(m[k], '.1%') if k in m else '-':>10}"
                               for _, k in HEADROOM_COLUMNS)
                     + f"{m['mean_forwards']:>8.1f}{m['mean_sequence_forwards']:>8.1f}"
                     f"{m.get('mean_cache_hits', 0):>8.1f}"
                     f"{m.get('mean_token_passes', float('nan')):>9.0f}"
                     f"{m['tpf'] if m.get('tpf') is not None else float('nan'):>7.2f}"
                     f"{m['mean_seconds']:>8.3f}"
                     + "".join(f"{format(st[k], f) if k in st else '-':>10}"
                               for _, k, f in SEARCH_COLUMNS)
                     + (f"{'-' if wrong is None else format(wrong, '.1%'):>11}" if judged else ""))
    return "\n".join(lines)


def bench(model, task_name: str, problems: list, strategies: list[str],
          config: GenerationConfig, shard: tuple[int, int] = (0, 1), progress: bool = True,
          lock_step: int = 1, throughput: dict | None = None,
          joint_scoring: bool | None = None) -> list[dict]:
    """Run every strategy on this shard's problems; problem i uses seed ``config.seed + i``.
    ``lock_step``: that many runs advance together (:class:`LockStep`); the records are
    the same. ``throughput``: filled with the wall time, runs and model calls."""
    task = get_task(task_name)
    rank, world = shard
    jobs = [(i, s) for i in range(rank, len(problems), world) for s in strategies]
    stepper = LockStep(lock_step, joint_scoring)
    runs = (Run(model, task=task, problem=problems[i], strategy=s,
                config=replace(config, seed=config.seed + i)) for i, s in jobs)
    slot = {}    # a run's place in jobs
    bar = tqdm(total=len(jobs), desc=f"bench {task_name}" + (f" [{rank}/{world}]" if world > 1 else ""),
               unit="run", disable=not progress)
    t0 = time.perf_counter()
    records = [None] * len(jobs)
    with bar:
        for run in stepper.run(_numbered(runs, slot)):
            j = slot.pop(id(run))
            rec = run_record(run)
            rec["index"] = jobs[j][0]
            records[j] = rec
            bar.update()
    if throughput is not None:
        throughput.update(throughput_record(records, stepper, time.perf_counter() - t0))
    return records


def _numbered(runs, slot: dict):
    for j, run in enumerate(runs):
        slot[id(run)] = j
        yield run


def throughput_record(records: list[dict], stepper: LockStep, seconds: float) -> dict:
    """How fast a bench went: wall time, runs (problem x strategy) per second, the model
    calls made (a lock-step's joint calls once) against the forwards they served (what one
    at a time calls), and the sequences they covered. These count every forward of the
    runs, MEDAL's display completions of its losing candidates included (which a run's
    own ``forwards`` leaves out: they are not its cost)."""
    return {"lock_step": stepper.width, "runs": len(records), "wall_seconds": seconds,
            "runs_per_second": len(records) / seconds if seconds > 0 else None,
            "model_calls": stepper.model_calls, "forwards": stepper.requests,
            "sequences": stepper.sequences}


def merge_throughput(parts: list[dict]) -> dict:
    """The throughput of a sharded run: the processes ran side by side, so the wall time
    is the slowest one's; counts add up."""
    wall = max(p["wall_seconds"] for p in parts)
    runs = sum(p["runs"] for p in parts)
    return {"lock_step": parts[0]["lock_step"], "runs": runs, "wall_seconds": wall,
            "runs_per_second": runs / wall if wall > 0 else None,
            **{k: sum(p[k] for p in parts) for k in ("model_calls", "forwards", "sequences")}}


def format_throughput(doc: dict) -> str:
    """One line: how fast the bench went (see :func:`throughput_record`)."""
    t = doc.get("throughput")
    if not t:
        return ""
    mode = f"lock-step {t['lock_step']}" if t["lock_step"] > 1 else "one at a time"
    calls = t["model_calls"]
    return (f"throughput ({mode}): {t['runs']} runs in {t['wall_seconds']:.2f} s = "
            f"{t['runs_per_second'] or 0:.2f} runs/s; {calls} model calls for "
            f"{t['forwards']} forwards (one at a time: {t['forwards']} calls), "
            f"{t['sequences']} sequences, {t['sequences'] / calls if calls else 0:.1f} a call")


def results_document(records, strategies, task_name, config, model_name, source, world=1,
                     model=None, throughput: dict | None = None) -> dict:
    records = sorted(records, key=lambda r: (r["index"], strategies.index(r["strategy"])))
    by_strategy = {}
    for s in strategies:
        a = candidate_analysis([r for r in records if r["strategy"] == s])
        if a is not None:
            by_strategy[s] = {"strategy": s, **a}
    return {"format": "medal-bench", "version": 1, "task": task_name, "model": model_name,
            "problems": source, "strategies": strategies, "config": config.to_json(),
            # Fast-dLLM's block KV cache (prefix / dual): the answers are approximate
            "kv_cache": getattr(model, "kv_cache_mode", None),
            # per strategy: the candidates of medal and medal-margin-only are not pooled
            "candidate_analysis_by_strategy": by_strategy,
            "candidate_analysis": next(iter(by_strategy.values()), None),
            "processes": world,
            # how fast it went: lock-step width, wall time, model calls (throughput_record)
            "throughput": throughput,
            "machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                        "medal": __version__},
            "reproducibility": repro_record(model, config.seed) if model is not None else None,
            "summary": summarise(records, strategies), "records": records}


def comparable(doc: dict) -> dict:
    """A results document without wall-clock figures (for comparing runs)."""
    doc = json.loads(json.dumps(doc))
    for r in doc["records"]:
        for k in TIMING_FIELDS:
            r.pop(k, None)
    for m in doc["summary"].values():
        for k in ("mean_seconds", "ms_per_iteration", "bookkeeping_share"):
            m.pop(k, None)
    doc.pop("processes", None)
    doc.pop("throughput", None)
    doc.pop("reproducibility", None)
    return doc


def load_or_generate(task_name: str, problems_file: str | None, n: int | None, seed: int):
    task = get_task(task_name)
    if problems_file:
        if not Path(problems_file).is_file():
            raise InputError(f"no problem file at {problems_file}")
        return task.load_problems(problems_file), problems_file
    if not n or n < 1:
        raise InputError("give --problems FILE.jsonl or --n N (N >= 1)")
    # generated problems use a seed far from the training data's stream
    return task.generate(n, seed=10_000 + seed), f"generated: {n} problems, seed {10_000 + seed}"


def run_sharded(args_model, task_name, problems, strategies, config, out: Path, source: str,
                progress=True, lock_step: int = 1) -> dict | None:
    """Single process, or one shard of an ``accelerate launch`` run (rank 0 merges)."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world > 1:
        from accelerate import PartialState
        import torch
        # without a GPU, accelerate shards over CPU processes only when told cpu=True
        state = PartialState(cpu=not torch.cuda.is_available())
        rank, world = state.process_index, state.num_processes
    else:
        state, rank = None, 0
    speed: dict = {}
    records = bench(args_model, task_name, problems, strategies, config, (rank, world), progress,
                    lock_step=lock_step, throughput=speed)
    if world == 1:
        doc = results_document(records, strategies, task_name, config, args_model.name, source,
                               model=args_model, throughput=speed)
        _write(out, doc)
        return doc
    shard_path = out.with_name(f"{out.stem}.shard{rank}.json")
    _write(shard_path, {"records": records, "throughput": speed})
    state.wait_for_everyone()
    if rank != 0:
        return None
    merged, speeds = [], []
    for r in range(world):
        path = out.with_name(f"{out.stem}.shard{r}.json")
        part = json.loads(path.read_text())
        merged.extend(part["records"])
        speeds.append(part["throughput"])
        path.unlink()
    doc = results_document(merged, strategies, task_name, config, args_model.name, source, world,
                           model=args_model, throughput=merge_throughput(speeds))
    _write(out, doc)
    return doc


def _write(path: Path, data) -> None:
    from .trace import dumps
    path.parent.mkdir(parents=True, exist_ok=True)
    from .files import write_atomic
    write_atomic(path, dumps(data) + "\n")


def sweep(model, task_name, problems, param: str, values: list, base: GenerationConfig,
          strategy: str = "medal", progress=True) -> list[dict]:
    """Accuracy and cost of ``strategy`` as one parameter varies."""
    rows = []
    for v in values:
        cfg = replace(base, **{param: v})
        recs = bench(model, task_name, problems, [strategy], cfg, progress=progress)
        m = summarise(recs, [strategy])[strategy]
        # per problem (by index), for paired tests between the settings
        m["verified"] = [bool(r["verified"]) for r in sorted(recs, key=lambda r: r["index"])]
        # every problem's record, so each figure of the row can be recomputed from them
        # (scripts/records.py keeps them compact in docs/records/)
        rows.append({"param": param, "value": v, **m, "records": recs})
    return rows


def plot_html(rows: list[dict], x: str, y: str, title: str, path: Path, labels=None) -> None:
    """A self-contained plotly HTML figure (plotly.js inlined: opens offline)."""
    import plotly.graph_objects as go
    xs, ys = [r[x] for r in rows], [r[y] for r in rows]
    err = [[r[y] - r["ci95"][0] for r in rows], [r["ci95"][1] - r[y] for r in rows]] \
        if y == "accuracy" else None
    fig = go.Figure(go.Scatter(
        x=xs, y=ys, mode="lines+markers+text" if labels else "lines+markers",
        text=labels, textposition="top center",
        error_y=dict(type="data", symmetric=False, array=err[1], arrayminus=err[0]) if err else None))
    fig.update_layout(title=title, xaxis_title=x, yaxis_title=y, template="plotly_white")
    from .files import write_atomic
    write_atomic(path, fig.to_html(include_plotlyjs=True, full_html=True))


def timer() -> float:
    return time.perf_counter()
