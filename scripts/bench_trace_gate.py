"""How long the trace gate takes on a 20 MB upload, and what rendering it costs.

    python scripts/bench_trace_gate.py [--mb 19.5] [--model builtin:countdown] [--jsonschema]

Records a real MEDAL run on the model, grows its tree to about ``--mb`` megabytes with
more nodes of the same shape (valid: each a copy of a real node under the same parent),
then prints: the size, ``loads_trace`` (parse + schema + semantic checks; the median of
3), the old ``jsonschema`` validation for comparison (``--jsonschema``), the time of each
view the Run page draws, and the process's peak memory (RSS) before and after.
"""
from __future__ import annotations

import argparse
import copy
import json
import resource
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def grow(trace: dict, target_bytes: int) -> str:
    from medal.trace import dumps
    nodes = trace["tree"]["nodes"]
    originals = nodes[1:]
    per_node = sum(len(json.dumps(n, separators=(",", ":"))) for n in originals) / len(originals)
    size = len(dumps(trace).encode())
    k = 0
    while size < target_bytes:
        for _ in range(max(1, int((target_bytes - size) / per_node))):
            new = copy.deepcopy(originals[k % len(originals)])
            new["id"] = len(nodes)
            nodes.append(new)
            k += 1
        size = len(dumps(trace).encode())
    text = dumps(trace)
    while len(text.encode()) > target_bytes:  # trim to fit under the limit
        del nodes[-max(1, (len(text.encode()) - target_bytes) // int(per_node) + 1):]
        text = dumps(trace)
    return text


def timed(fn, repeat=1):
    """(result, median wall seconds, median CPU seconds of this process)."""
    walls, cpus = [], []
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    return out, statistics.median(walls), statistics.median(cpus)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=19.5, help="trace size in MB (10^6 bytes)")
    ap.add_argument("--model", default="builtin:countdown")
    ap.add_argument("--jsonschema", action="store_true",
                    help="also time the previous gate (jsonschema) on the same text")
    args = ap.parse_args()

    import torch
    torch.set_num_threads(1)
    from medal.config import GenerationConfig
    from medal.engine import Run
    from medal.models import load_model
    from medal.trace import loads_trace
    from medal import views as viz
    from medal.viewer import bundle
    from medal.views import inspector
    from medal.views.tree_frame import tree_parts

    run = Run(load_model(args.model), task="countdown", prompt="Use 4, 18, 13 to make 20.",
              strategy="medal", config=GenerationConfig(max_iterations=40), trace=True,
              compare_greedy=True)
    run.finish()
    text = grow(copy.deepcopy(run.trace), int(args.mb * 1e6)).encode()
    print(f"trace: {len(text) / 1e6:.1f} MB, "
          f"{len(json.loads(text)['tree']['nodes'])} nodes (real run grown to size)")
    before = peak_mb()
    trace, t_gate, c_gate = timed(lambda: loads_trace(text), repeat=3)
    print(f"loads_trace (parse + schema + semantic checks): {t_gate:.2f} s wall, "
          f"{c_gate:.2f} s CPU (median of 3); peak RSS {before:.0f} -> {peak_mb():.0f} MB")
    if args.jsonschema:
        import jsonschema
        from medal.trace.gate.schema import load_schema
        validator = jsonschema.Draft202012Validator(load_schema())
        data = json.loads(text)
        _, t_js, c_js = timed(lambda: jsonschema.exceptions.best_match(validator.iter_errors(data)))
        print(f"previous gate (jsonschema, schema only): {t_js:.2f} s wall, {c_js:.2f} s CPU")
    win = trace["search"]["winner"]
    views = {
        "the viewer's frames, every position (what the app draws)":
            lambda: json.dumps(bundle(trace)),
        "the tree's part of the last frame (300 nodes drawn)":
            lambda: tree_parts(trace, "finished", 300),
        "entropy_grid + order_summary": lambda: (viz.entropy_grid(trace), viz.order_summary(trace)),
        "current_phase + progress": lambda: (viz.current_phase(trace), viz.progress(trace)),
        "inspector (winner)": lambda: (inspector.node_ids(trace), inspector.sequence_html(trace, win),
                                       inspector.action_table(trace, win),
                                       inspector.candidate_report(trace)),
        "replay to iteration 1": lambda: viz.trace_at_iteration(trace, 1),
    }
    small = run.trace  # warm-up on the run before growing: imports and templates, not timed
    json.dumps(bundle(small))
    total = total_cpu = 0.0
    for name, fn in views.items():
        _, t, c = timed(fn)
        total, total_cpu = total + t, total_cpu + c
        print(f"  {name}: {t * 1000:.0f} ms wall, {c * 1000:.0f} ms CPU")
    print(f"render, all views: {total:.2f} s wall, {total_cpu:.2f} s CPU; peak RSS now "
          f"{peak_mb():.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
