"""The views' cost at real size (issue 41): a benchmark that prints figures, never a test.

    python scripts/bench_views.py [--sizes 200,400,1000] [--live-iterations 200] [--no-live]

* **Export and upload at three sizes.** Traces of a search at LLaDA's answer length (256
  slots) from a tiny random-weight LLaDA (tests/llada_sized.py; the vocabulary cut to 4,096
  ids), with 200, 400 and 1,000 iterations: ~1,000, 2,000 and 5,000 nodes. For each, in a
  fresh process: ``medal export`` (the gate, then the page) and the app's upload path
  (the gate, then the viewer's frames and the bundle sent to the browser) -- CPU seconds
  (user + system) and peak memory (max RSS) of that process; and the frames' work counted
  (function calls, the same on any machine), so doubling the search shows what doubling
  costs. Targets: export <= 10 s CPU and <= 300 MB at ~1,000 nodes; upload -> frames <= 5 s
  CPU; doubling the nodes at most ~doubles the work.
* **A live run at the paper's settings** (tiny random LLaDA, 256 slots, L_c = 20, 200
  iterations, K2 = 5): per engine event, the engine's time (``run.step()``) against the
  views' (``Frames.update`` and the bundle the page receives, as JSON), median / p90 / max.
  Target: the views add <= 20 ms per event at p90.

The machine's load is printed at the start and the end: times on a shared machine are
inflated by its load; the call counts are not.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT)]


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


CHILD = r"""
import json, resource, sys, time
what, path = sys.argv[1], sys.argv[2]
def cpu():     # this process's and its finished children's (the gate's, for "apart")
    r, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime + c.ru_utime + c.ru_stime
import medal.viewer  # imports outside the timed part, as a running server has them
from medal.trace import load_trace, loads_trace_apart
import os
from medal.trace.limits import MAX_TRACE_BYTES
# (a search of 5,000 nodes at 256 slots is over the upload limit and the drawing budget
# of a default server: the gate is given room, as an operator would give it)
import medal.trace.gate.bounds as bounds
bounds.MAX_RENDER_UNITS = 10 ** 9
most = max(MAX_TRACE_BYTES, os.path.getsize(path))
t0 = cpu()
if what == "apart":     # the served app's upload: the gate in a child process (its
    # own limits: a default server's drawing budget)
    trace = loads_trace_apart(open(path, "rb").read(), max_bytes=most)
else:
    trace = load_trace(path, max_bytes=most)
t1 = cpu()
calls = None
if what == "export":
    from medal.viewer.export import write_html
    write_html(trace, path + ".html")
else:
    from medal.views.frames import Frames
    f = Frames("upload")
    f.update(trace)
    json.dumps(f.bundle())
t2 = cpu()
# the peak resident memory of this process (VmHWM: ru_maxrss would carry over the
# benchmark's own, larger, peak through fork and exec)
hwm = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM"))
print(json.dumps({"gate_s": t1 - t0, "views_s": t2 - t1, "cpu_s": t2 - t0,
                  "max_rss_mb": hwm / 1024}))
"""


def child(what: str, path: Path) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, what, str(path)], capture_output=True,
                         text=True, check=True, cwd=str(ROOT))
    return json.loads(out.stdout.strip().splitlines()[-1])


def frames_calls(path: Path) -> int:
    from medal.trace import load_trace
    from medal.views.frames import Frames
    import medal.trace.gate.bounds as bounds
    bounds.MAX_RENDER_UNITS = 10 ** 9
    trace = load_trace(path, max_bytes=os.path.getsize(path) + 1)
    from work import calls_run          # tests/work.py: the suite's own counter
    return calls_run(lambda: Frames("w").update(trace))[1]


def make_trace(folder: Path, iterations: int) -> Path:
    path = folder / f"llada-sized-{iterations}.json"
    if path.is_file():
        return path
    from llada_sized import llada_sized_trace
    from medal.trace import write_trace
    t0 = time.time()
    trace = llada_sized_trace(tempfile.mkdtemp(), iterations=iterations)
    write_trace(trace, path)
    print(f"  made {path.name}: {len(trace['tree']['nodes'])} nodes, "
          f"{os.path.getsize(path) / 1e6:.1f} MB, {time.time() - t0:.0f} s", flush=True)
    return path


def sizes(folder: Path, iterations: list[int]) -> None:
    print("\n## Export and upload (fresh process each; CPU = user + system)\n")
    rows = []
    for it in iterations:
        path = make_trace(folder, it)
        from medal.timeline import positions
        from medal.trace import load_trace
        from medal.trace.gate.bounds import render_units
        from medal.trace.limits import MAX_RENDER_UNITS
        import medal.trace.gate.bounds as bounds
        bounds.MAX_RENDER_UNITS = 10 ** 9
        tr = load_trace(path, max_bytes=os.path.getsize(path) + 1)
        units = render_units(tr)
        n_nodes, n_pos = len(tr["tree"]["nodes"]), len(positions(tr))
        del tr
        ex, up = child("export", path), child("upload", path)
        # the served app's path (the gate in a child process), where a default server takes it
        apart = child("apart", path) if units <= MAX_RENDER_UNITS else None
        calls = frames_calls(path)
        rows.append((it, n_nodes, n_pos, os.path.getsize(path), ex, up, calls))
        print(f"| {it} iterations | {n_nodes} nodes | {n_pos} positions | "
              f"{os.path.getsize(path) / 1e6:.1f} MB file | {units / 1e6:.2f} M render units"
              f"{'' if units <= 2e6 else ' (over a default server: refused there)'} | export {ex['cpu_s']:.1f} s CPU "
              f"(gate {ex['gate_s']:.1f}, page {ex['views_s']:.1f}), {ex['max_rss_mb']:.0f} MB | "
              f"upload -> frames {up['cpu_s']:.1f} s CPU (gate {up['gate_s']:.1f}, frames "
              f"{up['views_s']:.1f}), {up['max_rss_mb']:.0f} MB | "
              + (f"the app's upload (gate in a child) -> frames {apart['cpu_s']:.1f} s CPU "
                 f"(child {apart['gate_s']:.1f}, frames {apart['views_s']:.1f}) | "
                 if apart else "the app's upload: over a default server's budget | ")
              + f"frames' work {calls:,} calls |", flush=True)
    for a, b in zip(rows, rows[1:]):
        print(f"  {a[1]} -> {b[1]} nodes (x{b[1] / a[1]:.2f}): frames' work x{b[6] / a[6]:.2f}, "
              f"export CPU x{b[4]['cpu_s'] / a[4]['cpu_s']:.2f}")


def live(iterations: int) -> None:
    print(f"\n## A live run: tiny random LLaDA, 256 slots, L_c = 20, {iterations} iterations\n")
    import torch

    import standins
    from llada_sized import PROMPT, SETTINGS, VOCAB
    from medal.config import GenerationConfig
    from medal.engine import Run
    from medal.models import load_model
    from medal.views.frames import Frames
    torch.set_num_threads(1)
    ckpt = standins.save_checkpoint(
        Path(tempfile.mkdtemp()), "llada", "native", seed=0,
        overrides={"vocab_size": VOCAB, "embedding_size": VOCAB, "mask_token_id": VOCAB - 1,
                   "eos_token_id": VOCAB - 2, "pad_token_id": VOCAB - 2})
    model = load_model(f"llada:{ckpt}", chat_template=False)
    run = Run(model, task="text", prompt=PROMPT, strategy="medal", trace=True,
              compare_greedy=True,
              config=GenerationConfig(**{**SETTINGS, "max_iterations": iterations}))
    frames = Frames("live")
    pool = sent = 0
    engine, views, kinds = [], [], []
    while not run.done:
        t0 = time.process_time()
        event = run.step()
        t1 = time.process_time()
        if event is None:
            break
        frames.update(run.trace, final=run.done)
        start = min(sent, frames.dirty_from)
        json.dumps(frames.bundle(pool_from=pool, frames_from=start, live=True,
                                 done=run.done))
        pool, sent = len(frames.enc.pool), len(frames.enc.frames)
        t2 = time.process_time()
        engine.append((t1 - t0) * 1000)
        views.append((t2 - t1) * 1000)
        kinds.append(event.kind)
    print(f"{len(views)} events, {len(run.trace['tree']['nodes'])} nodes")
    print("| per event (CPU ms) | median | p90 | max | total s |")
    print("|---|---|---|---|---|")
    for name, xs in (("engine (run.step)", engine), ("views (frames + bundle)", views)):
        print(f"| {name} | {statistics.median(xs):.1f} | {pct(xs, 0.9):.1f} | {max(xs):.1f} | "
              f"{sum(xs) / 1000:.1f} |")
    worst = sorted(range(len(views)), key=lambda i: -views[i])[:3]
    print("slowest view updates: " + ", ".join(f"{views[i]:.0f} ms at event {i} ({kinds[i]})"
                                               for i in worst))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="200,400,1000",
                    help="search iterations of the traces (x5 nodes each): 200,400,1000")
    ap.add_argument("--live-iterations", type=int, default=200)
    ap.add_argument("--no-live", action="store_true")
    ap.add_argument("--no-sizes", action="store_true")
    ap.add_argument("--cache", default=str(Path(tempfile.gettempdir()) / "medal-bench-views"),
                    help="where the generated traces are kept between runs")
    args = ap.parse_args(argv)
    print(f"# Views benchmark ({os.cpu_count()} CPUs, load {load()})")
    folder = Path(args.cache)
    folder.mkdir(parents=True, exist_ok=True)
    if not args.no_sizes:
        sizes(folder, [int(x) for x in args.sizes.split(",")])
    if not args.no_live:
        live(args.live_iterations)
    print(f"\nload at the end: {load()}")


if __name__ == "__main__":
    main()
