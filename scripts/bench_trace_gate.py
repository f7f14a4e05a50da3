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
    per_node = len(dumps(trace)) / len(nodes)
    need = int((target_bytes - len(dumps(trace))) / per_node)
    for k in range(max(0, need)):
        src = originals[k % len(originals)]
        new = copy.deepcopy(src)
        new["id"] = len(nodes)
        nodes.append(new)
    text = dumps(trace)
    while len(text.encode()) > target_bytes:  # trim to fit under the limit
        del nodes[-max(1, len(nodes) // 200):]
        text = dumps(trace)
    return text


def timed(fn, repeat=1):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return out, statistics.median(times)


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
    from medal import viz
    from medal.viz import inspector

    run = Run(load_model(args.model), task="countdown", prompt="Use 4, 18, 13 to make 20.",
              strategy="medal", config=GenerationConfig(max_iterations=40), trace=True,
              compare_greedy=True)
    run.finish()
    text = grow(copy.deepcopy(run.trace), int(args.mb * 1e6)).encode()
    print(f"trace: {len(text) / 1e6:.1f} MB, "
          f"{len(json.loads(text)['tree']['nodes'])} nodes (real run grown to size)")
    before = peak_mb()
    trace, t_gate = timed(lambda: loads_trace(text), repeat=3)
    print(f"loads_trace (parse + schema + semantic checks): {t_gate:.2f} s (median of 3); "
          f"peak RSS {before:.0f} -> {peak_mb():.0f} MB")
    if args.jsonschema:
        import jsonschema
        from medal.trace_check import load_schema
        validator = jsonschema.Draft202012Validator(load_schema())
        data = json.loads(text)
        _, t_js = timed(lambda: jsonschema.exceptions.best_match(validator.iter_errors(data)))
        print(f"previous gate (jsonschema, schema only): {t_js:.2f} s")
    win = trace["search"]["winner"]
    views = {
        "tree_view+tree_html (40 nodes drawn)": lambda: viz.tree_html(trace, 40),
        "tree_html (300 nodes drawn)": lambda: viz.tree_html(trace, 300),
        "entropy_heatmap": lambda: viz.entropy_heatmap(trace).to_json(),
        "order_html + order_summary": lambda: (viz.order_html(trace), viz.order_summary(trace)),
        "current_phase + progress": lambda: (viz.current_phase(trace), viz.progress(trace)),
        "inspector (winner)": lambda: (inspector.node_ids(trace), inspector.sequence_html(trace, win),
                                       inspector.action_table(trace, win),
                                       inspector.candidate_report(trace)),
        "replay to iteration 1": lambda: viz.trace_at_iteration(trace, 1),
    }
    total = 0.0
    for name, fn in views.items():
        _, t = timed(fn)
        total += t
        print(f"  {name}: {t * 1000:.0f} ms")
    print(f"render, all views: {total:.2f} s; peak RSS now {peak_mb():.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
