"""The cost of one live UI step: one ``run.step()`` plus what the Run page does with the
trace it grew -- the viewer's new frames (:class:`medal.viewer.Frames`: tree, task view,
candidates, heatmaps, order, inspector) and the bundle the page sends the browser, as
JSON. The same path the app draws (issue 26: it once timed a drawing path the app no
longer used).

    from medal.models import load_model
    from medal.viewer.bench import measure_ui_step
    print(measure_ui_step(load_model("builtin:countdown"), threads=1))

or ``python -m medal.viewer.bench builtin:countdown 60 1`` (spec, steps, threads).

Goal: at most 300 ms per step on 2 CPU cores with the built-in model.
"""
from __future__ import annotations

import statistics
import time

from ..config import GenerationConfig

PARTS = ("step", "trace", "frames", "bundle")


def measure_ui_step(model, n_steps: int = 60, *, task: str = "countdown",
                    prompt: str | None = None, strategy: str = "medal",
                    config: GenerationConfig | None = None, max_nodes: int | None = None,
                    warmup: int = 1, threads: int | None = None) -> dict:
    """Time ``n_steps`` UI steps of a traced run (with the greedy comparison, as in the
    app), from its start. Returns milliseconds: mean / median / p90 / max per step and
    the mean of each part, plus the tree size reached.

    ``threads``: torch threads while measuring (None: leave as is). The app runs the
    built-in models on one thread (see :func:`medal.app.controller.app_threads`)."""
    import torch

    previous = torch.get_num_threads()
    if threads:
        torch.set_num_threads(threads)
    try:
        out = _measure(model, n_steps, task, prompt, strategy, config, max_nodes, warmup)
    finally:
        torch.set_num_threads(previous)
    out["threads"] = threads or previous
    return out


def _measure(model, n_steps, task, prompt, strategy, config, max_nodes, warmup) -> dict:
    import json

    from ..engine import Run
    from ..tasks import get_task
    from . import MAX_NODES, Frames

    t = get_task(task)
    prompt = prompt or t.format_prompt(t.example_problems[0])
    run = Run(model, task=task, prompt=prompt, strategy=strategy,
              config=config or GenerationConfig(), trace=True, compare_greedy=True)
    frames = Frames("bench", max_nodes=max_nodes or MAX_NODES)
    # warm-up: imports and the viewer's first frames
    for _ in range(warmup):
        frames.update(run.trace, final=False)
    pool, sent = len(frames.enc.pool), len(frames.enc.frames)
    totals, parts = [], {k: [] for k in PARTS}
    kinds = []
    for _ in range(n_steps):
        marks = [time.perf_counter()]
        event = run.step()
        marks.append(time.perf_counter())
        if event is None:
            break
        kinds.append(event.kind)
        tr = run.trace
        marks.append(time.perf_counter())
        frames.update(tr, final=False)
        marks.append(time.perf_counter())
        start = min(sent, frames.dirty_from)
        json.dumps(frames.bundle(pool_from=pool, frames_from=start, live=True, done=False))
        pool, sent = len(frames.enc.pool), len(frames.enc.frames)
        marks.append(time.perf_counter())
        for k, a, b in zip(PARTS, marks, marks[1:]):
            parts[k].append((b - a) * 1000)
        totals.append((marks[-1] - marks[0]) * 1000)
    if not totals:
        raise ValueError("the run produced no events to time")
    ordered = sorted(totals)
    tr = run.trace
    return {
        "steps": len(totals),
        "mean_ms": statistics.fmean(totals),
        "median_ms": statistics.median(totals),
        "p90_ms": ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))],
        "max_ms": ordered[-1],
        "parts_mean_ms": {k: statistics.fmean(v) for k, v in parts.items()},
        "tree_nodes": len((tr.get("tree") or {}).get("nodes", [])),
        "events": {k: kinds.count(k) for k in sorted(set(kinds))},
        "goal_ms": 300.0,
    }


def main() -> None:  # python -m medal.viewer.bench [model-spec] [n_steps]
    import json
    import sys

    from ..models import load_model
    spec = sys.argv[1] if len(sys.argv) > 1 else "builtin:countdown"
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 60
    threads = int(sys.argv[3]) if len(sys.argv) > 3 else None
    print(json.dumps(measure_ui_step(load_model(spec), n_steps=n, threads=threads), indent=1))


if __name__ == "__main__":
    main()
