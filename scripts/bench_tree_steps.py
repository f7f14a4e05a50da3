"""Stepping a large search in the viewer (issue 28 #7): the time from ``viewer.go(i)`` to
the second animation frame after it (the tree's canvas and the visible views drawn), on
the Tree tab of the HTML export in Chromium, at 1440x900. A benchmark, not a test.

    python scripts/bench_tree_steps.py                    # a Countdown search, L_c = 6
    python scripts/bench_tree_steps.py --trace run.json   # any trace
    python scripts/bench_tree_steps.py --min-action-prob 0.02 --steps 200

Prints the trace's size (nodes, positions, nodes drawn) and p50 / p90 / max of the steps,
forwards through the search from a third of the way in.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]


def large_trace(lc: int, min_action_prob: float, iterations: int) -> dict:
    from medal.config import GenerationConfig
    from medal.engine import Run
    from medal.models import load_model
    from medal.tasks import get_task
    problem = get_task("countdown").generate(1, seed=2026)[0]
    run = Run(load_model("builtin:countdown"), task="countdown", problem=problem, trace=True,
              compare_greedy=True,
              config=GenerationConfig(lc=lc, c=0.5, max_iterations=iterations,
                                      min_action_prob=min_action_prob))
    run.finish()
    return json.loads(json.dumps(run.trace))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trace", default=None)
    ap.add_argument("--lc", type=int, default=6)
    ap.add_argument("--min-action-prob", type=float, default=0.0)
    ap.add_argument("--iterations", type=int, default=200)
    ap.add_argument("--steps", type=int, default=120)
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    from medal.trace import load_trace
    from medal.viewer.export import write_html
    t0 = time.perf_counter()
    trace = load_trace(args.trace) if args.trace else large_trace(
        args.lc, args.min_action_prob, args.iterations)
    made = time.perf_counter() - t0
    tmp = Path(tempfile.mkdtemp())
    t0 = time.perf_counter()
    page = write_html(trace, tmp / "big.html")
    export_s = time.perf_counter() - t0
    print(f"load average {os.getloadavg()}; trace {len(trace['tree']['nodes'])} nodes, "
          f"{len(trace['iterations'])} iterations ({made:.0f} s); export "
          f"{page.stat().st_size / 1e6:.2f} MB in {export_s:.1f} s")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path="/usr/bin/chromium",
                              args=["--no-sandbox", "--disable-gpu"])
        pg = b.new_page(viewport={"width": 1440, "height": 900})
        pg.goto(page.as_uri())
        pg.wait_for_function("window.medalViewer && globalThis.__medalTreeDrawn", timeout=120_000)
        n = pg.evaluate("medalViewer.n()")
        xs = pg.evaluate("""([k, n]) => new Promise(done => {
            const v = medalViewer, out = []; let i = Math.max(0, Math.floor(n / 3));
            v.go(i);
            function one() {
              if (out.length >= k || i >= n - 1) { done(out); return; }
              i += 1; const t = performance.now();
              v.go(i);
              requestAnimationFrame(() => requestAnimationFrame(() => {
                out.push([performance.now() - t, v.nodes ? v.nodes.length : 0]); setTimeout(one, 30); }));
            }
            setTimeout(one, 300); })""", [args.steps, n])
        b.close()
    ts = sorted(x[0] for x in xs)
    p90 = ts[min(len(ts) - 1, int(round(0.9 * (len(ts) - 1))))]
    print(f"{n} positions; {len(ts)} steps, up to {max(x[1] for x in xs)} nodes drawn: "
          f"p50 {statistics.median(ts):.1f} ms, p90 {p90:.1f} ms, max {ts[-1]:.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
