"""Time and peak memory of ``medal export`` on a long trace (issue 21: the export's cost
is linear in the number of timeline positions).

    python scripts/bench_export.py                      # a 156-iteration trace of the built-in model
    python scripts/bench_export.py trace.json ...       # given traces
    python scripts/bench_export.py --iterations 300     # a longer search

Each export runs in a fresh process, so its peak RSS is its own: the figures printed are
CPU seconds, the peak resident memory the export added, and the page's size.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHILD = r"""
import json, resource, sys, time
from medal.trace import load_trace
from medal.viewer.export import export_html
trace = load_trace(sys.argv[1])
import medal.viewer.export as ex; ex.plotly_js(); ex.vis_assets()  # the libraries, read once
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t0 = time.process_time()
page = export_html(trace)
cpu = time.process_time() - t0
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
from medal.timeline import positions
print(json.dumps({"positions": len(positions(trace)), "cpu_s": round(cpu, 2),
                  "peak_mb": round(peak / 1024, 1), "added_mb": round((peak - before) / 1024, 1),
                  "page_mb": round(len(page.encode()) / 1e6, 2)}))
"""


def make_trace(iterations: int, path: Path) -> None:
    """A MEDAL run of the built-in Countdown model that searches ``iterations`` times
    (candidates set high so the budget, not the candidates, stops it)."""
    from medal.config import GenerationConfig
    from medal.engine import Run
    from medal.models import load_model
    from medal.trace import write_trace
    model = load_model("builtin:countdown")
    run = Run(model, task="countdown", prompt="Use 4, 18, 13 to make 20.", strategy="medal",
              config=GenerationConfig(max_iterations=iterations, candidates=iterations,
                                      lc=4, seed=1), trace=True, compare_greedy=True)
    run.finish()
    write_trace(run.trace, path)


def measure(path: Path) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(ROOT))  # this checkout's code
    out = subprocess.run([sys.executable, "-c", CHILD, str(path)], capture_output=True,
                         text=True, check=True, env=env)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    sys.path.insert(0, str(ROOT))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("traces", nargs="*", type=Path)
    ap.add_argument("--iterations", type=int, default=156)
    args = ap.parse_args()
    traces = list(args.traces)
    if not traces:
        tmp = Path(tempfile.mkdtemp()) / f"medal-{args.iterations}.json"
        make_trace(args.iterations, tmp)
        traces = [tmp]
    for path in traces:
        figures = measure(path)
        print(f"{path.name}: {path.stat().st_size / 1e6:.2f} MB, {figures['positions']} "
              f"positions: {figures['cpu_s']} s CPU, peak {figures['peak_mb']} MB "
              f"(+{figures['added_mb']} MB for the export), page {figures['page_mb']} MB")


if __name__ == "__main__":
    main()
