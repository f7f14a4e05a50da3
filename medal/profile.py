"""Where a MEDAL run's time goes, and what it costs against greedy decoding.

    python -m medal bench --profile --task countdown --n 20
    python -m medal bench --profile --model llada:DIR --trust-remote-code --n 3 \
        --gen-length 256 --steps 256 --block-length 32 --lc 20 --k1 3 --k2 5 --candidates 3

For each problem, MEDAL and greedy run on their own (greedy shares no cache with MEDAL).
MEDAL's search time -- from the root's evaluation to the last candidate -- splits into

* the **network**: the model's forward on the answer states (``DiffusionLM.logits``);
* the **scoring**: softmax, entropy and top-k of the answer logits on the model's device,
  and the copy of the top tokens and per-slot figures to the CPU;
* the **tree bookkeeping**: everything else (selection, action sets, rewards,
  completions, backpropagation, the events).

The bookkeeping share is bookkeeping / search time; the network and the scoring
together are the model call. ``--parts`` splits the bookkeeping by the search's phases
(root, selection, expansion, simulation, backpropagation, candidates): a
:class:`PhaseTimer` watches the run's events like any other observer and charges each
phase the run's clock and the runner's model time between its event and the one before. Sequences are the answer states the model evaluated
(a cache hit is not one); greedy's are its forwards, one sequence each.
"""
from __future__ import annotations

import gc
import time

import torch

from .config import GenerationConfig
from .engine import Run


def profile_one(model, task, problem, config: GenerationConfig, search_only: bool = False,
                phases: dict | None = None) -> dict:
    """MEDAL then greedy on one problem, with MEDAL's search time split (see above).
    ``search_only``: stop after MEDAL's search (no phase C, no greedy run); the
    sequences of phase C and of greedy are then the configuration's decode steps (one
    sequence per step: ``steps - L_c`` and ``steps``), an upper bound, marked so.
    ``phases``: a dict the search's time by phase is added to (:class:`PhaseTimer`)."""
    run = Run(model, task=task, problem=problem, strategy="medal", config=config)
    runner = run.runner
    run.step()  # RunStarted: nothing evaluated yet
    e0, m0, s0 = run.elapsed(), runner.model_seconds, runner.scoring_seconds
    f0, q0 = runner.forwards, runner.sequences
    timer = PhaseTimer(run, phases if phases is not None else {})
    run.observers.append(timer)
    while (event := run.step()) is not None and event.kind != "search_finished":
        pass
    run.observers.remove(timer)
    search = run.elapsed() - e0
    model_s, scoring = runner.model_seconds - m0, runner.scoring_seconds - s0
    search_forwards, search_sequences = runner.forwards - f0, runner.sequences - q0
    iterations = run.mcts.iteration if run.mcts is not None else 0
    if search_only:
        steps, lc = run.config.steps, run.config.lc
        return {"iterations": iterations, "search_seconds": search,
                "network_seconds": model_s - scoring, "scoring_seconds": scoring,
                "bookkeeping_seconds": search - model_s,
                "search_forwards": search_forwards, "search_sequences": search_sequences,
                "medal_forwards": search_forwards + steps - lc,
                "medal_sequences": search_sequences + steps - lc,
                "medal_seconds": float("nan"), "medal_verified": None,
                "greedy_forwards": steps, "greedy_sequences": steps,
                "greedy_seconds": float("nan"), "greedy_verified": None, "search_only": True}
    res = run.finish()
    t = time.perf_counter()
    greedy = Run(model, task=task, problem=problem, strategy="greedy", config=config).finish()
    greedy_wall = time.perf_counter() - t
    return {"iterations": iterations, "search_seconds": search,
            "network_seconds": model_s - scoring, "scoring_seconds": scoring,
            "bookkeeping_seconds": search - model_s,
            "search_forwards": search_forwards, "search_sequences": search_sequences,
            "medal_forwards": res.forwards, "medal_sequences": res.sequence_forwards,
            "medal_seconds": res.seconds, "medal_verified": res.verified,
            "greedy_forwards": greedy.forwards, "greedy_sequences": greedy.sequence_forwards,
            "greedy_seconds": greedy_wall, "greedy_verified": greedy.verified}


#: the search's phases ``--parts`` reports: (event kind, label)
PHASES = (
    ("root", "the root (outside its forward)"),
    ("selection", "selection"),
    ("expansion", "expansion: action sets, the children's nodes (outside the forward)"),
    ("simulation", "simulation: completions, rewards"),
    ("backpropagation", "backpropagation"),
    ("forced", "a fork's forced commitments"),
    ("search_finished", "candidates"),
)


class PhaseTimer:
    """An observer of a run's events: to each event's kind it adds the seconds the run
    spent producing it -- the run's clock and the runner's network and scoring time since
    the event before -- as ``totals[kind] = [wall, network + scoring, scoring]``. Nothing
    is patched and nothing timed inside the engine: it reads what the run already keeps."""

    def __init__(self, run, totals: dict):
        self.run, self.totals = run, totals
        self._last = self._now()

    def _now(self) -> tuple:
        runner = self.run.runner
        return self.run.elapsed(), runner.model_seconds, runner.scoring_seconds

    def __call__(self, event) -> None:
        now = self._now()
        spent = self.totals.setdefault(event.kind, [0.0, 0.0, 0.0])
        for i, (a, b) in enumerate(zip(now, self._last)):
            spent[i] += a - b
        self._last = now


def profile(model, task, problems, config: GenerationConfig, progress=None,
            search_only: bool = False, parts: bool = False) -> dict:
    """:func:`profile_one` over problems (problem i with seed ``config.seed + i``), summed.
    ``parts``: also split the bookkeeping by the search's phases (:data:`PHASES`)."""
    from dataclasses import replace
    # the collector's debt from importing torch and loading the model (a full collection
    # of every object, tens of ms) is paid now, not in the first search that trips it
    gc.collect()
    rows = []
    phases: dict = {}
    for i, p in enumerate(problems):
        rows.append(profile_one(model, task, p, replace(config, seed=config.seed + i),
                                search_only, phases))
        if progress:
            progress(i + 1, len(problems))
    total = {k: sum(r[k] for r in rows) for k in rows[0]
             if not k.endswith("verified") and k != "search_only"}
    search = total["search_seconds"] or float("nan")
    it = total["iterations"] or float("nan")
    return {
        "model": model.name, "problems": len(rows), "torch_threads": torch.get_num_threads(),
        "config": config.to_json(),
        "mean_iterations": total["iterations"] / len(rows),
        "ms_per_iteration": 1000 * search / it,
        "network_ms_per_iteration": 1000 * total["network_seconds"] / it,
        "scoring_ms_per_iteration": 1000 * total["scoring_seconds"] / it,
        "bookkeeping_ms_per_iteration": 1000 * total["bookkeeping_seconds"] / it,
        "network_share": total["network_seconds"] / search,
        "scoring_share": total["scoring_seconds"] / search,
        "bookkeeping_share": total["bookkeeping_seconds"] / search,
        "mean_search_sequences": total["search_sequences"] / len(rows),
        "mean_medal_sequences": total["medal_sequences"] / len(rows),
        "mean_greedy_sequences": total["greedy_sequences"] / len(rows),
        "sequences_ratio": total["medal_sequences"] / max(total["greedy_sequences"], 1),
        "mean_medal_seconds": total["medal_seconds"] / len(rows),
        "mean_greedy_seconds": total["greedy_seconds"] / len(rows),
        "medal_correct": sum(bool(r["medal_verified"]) for r in rows),
        "greedy_correct": sum(bool(r["greedy_verified"]) for r in rows),
        "search_only": search_only,
        "parts_ms_per_iteration": _parts(phases, it) if parts else None,
        "rows": rows,
    }


def _parts(phases: dict, iterations) -> dict:
    """Per-iteration ms of the search's bookkeeping in each phase (its model time taken
    out); they add up to the bookkeeping's total."""
    return {label: 1000 * (phases[kind][0] - phases[kind][1]) / iterations
            for kind, label in PHASES if kind in phases}


def format_profile(p: dict) -> str:
    return "\n".join([
        f"{p['model']}: {p['problems']} problems, torch threads {p['torch_threads']}",
        f"  MEDAL search: {p['mean_iterations']:.1f} iterations/problem, "
        f"{p['ms_per_iteration']:.2f} ms/iteration = network {p['network_ms_per_iteration']:.2f}"
        f" + scoring {p['scoring_ms_per_iteration']:.2f} + tree bookkeeping "
        f"{p['bookkeeping_ms_per_iteration']:.3f}",
        f"  shares of search time: network {p['network_share']:.1%}, scoring "
        f"{p['scoring_share']:.1%}, tree bookkeeping {p['bookkeeping_share']:.1%}",
        f"  sequences evaluated per problem: MEDAL {p['mean_medal_sequences']:.1f} (search "
        f"{p['mean_search_sequences']:.1f}), greedy {p['mean_greedy_sequences']:.1f}: "
        f"{p['sequences_ratio']:.2f}x greedy"
        + (" (search measured; phase C and greedy: one sequence per decode step, by the "
           "configuration, not run)" if p.get("search_only") else ""),
    ] + [f"    {label}: {ms * 1000:.1f} us/iteration"
         for label, ms in (p.get("parts_ms_per_iteration") or {}).items()
         ] + ([] if p.get("search_only") else [
        f"  wall time per problem: MEDAL {p['mean_medal_seconds']:.3f} s, greedy "
        f"{p['mean_greedy_seconds']:.3f} s; solved MEDAL {p['medal_correct']}, greedy "
        f"{p['greedy_correct']} of {p['problems']}"]))


GiB = 1024 ** 3


def peak_memory_estimate(*, params: float, dtype_bytes: int, batch: int, tokens: int,
                         answer: int, vocab: int, hidden: int, intermediate: int,
                         score_chunk: int | None = None) -> dict:
    """Analytic peak memory (bytes) of one MEDAL model call: K2 = ``batch`` children of
    ``tokens`` tokens (prompt + ``answer`` slots) through a network of ``params``
    parameters, answer-slot logits only, scored in chunks on the device.

    * weights: params x dtype bytes;
    * activations: one layer's working set at a time (inference keeps no graph): the
      residual stream, q/k/v/attention output and the MLP's gate, up and product
      (``batch x tokens x (6 hidden + 3 intermediate)`` in the model's dtype); attention
      by fused SDPA, so no ``tokens x tokens`` matrix;
    * answer logits: ``batch x answer x vocab`` in the model's dtype, and the adapter's
      float32 copy;
    * scoring: per chunk of at most ``score_chunk`` elements, the softmax and the
      entropy's two temporaries in float32 (the float32 logits are masked in place).
    """
    from .runner import SCORE_CHUNK
    chunk = score_chunk or SCORE_CHUNK
    weights = params * dtype_bytes
    activations = batch * tokens * (6 * hidden + 3 * intermediate) * dtype_bytes
    logits = batch * answer * vocab * (dtype_bytes + 4)
    rows = max(1, chunk // vocab)
    scoring = 3 * min(rows, batch * answer) * vocab * 4
    total = weights + activations + logits + scoring
    return {"weights": weights, "activations": activations, "answer_logits": logits,
            "scoring": scoring, "total": total, "ratio_to_weights": total / weights}
