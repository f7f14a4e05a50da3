"""The app's live run on a full-size LLaDA-8B (random weights, made on the device), driven
headless: per engine event, the model's time against the views' (issue 41's GPU check;
not part of the tests).

    python scripts/gpu_views_live.py --json live.json [--iterations 200] [--budget-seconds 240]

What the app's live page does at each step, without Streamlit: ``run.step()`` (one MCTS
phase or decode step; its forwards on the GPU, synchronised), then the viewer's new frames
(:class:`medal.views.frames.Frames`, ``update``) and the bundle the page would receive,
as JSON. At the paper's settings (256 answer slots, L_c = 20, K2 = 5, C = 3, a 200
iteration budget, c = 0.5 so the random model's search spreads as a real one's does).
Prints ONE JSON object on stdout (progress on stderr): the device, the tree's size, and
per event (ms) the engine's and the views' median / p90 / max, with the views' share.

``--config`` and ``--device cpu`` dry-run it with the tiny config (the suite does).
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "scripts")]


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))] if xs else None


def figures(xs) -> dict:
    return {"median_ms": statistics.median(xs), "p90_ms": pct(xs, 0.9), "max_ms": max(xs),
            "total_s": sum(xs) / 1000} if xs else {}


def main(argv=None) -> int:
    import torch

    from gpu_check import REAL_MODELS, build_random
    from medal.config import GenerationConfig
    from medal.engine import Run
    from medal.views.frames import Frames

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", default=str(REAL_MODELS / "llada" / "config.full-size.json"))
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--dtype", default="bfloat16")
    ap.add_argument("--gen-length", type=int, default=256)
    ap.add_argument("--iterations", type=int, default=200)
    ap.add_argument("--budget-seconds", type=float, default=240.0,
                    help="stop stepping after this long (the figures so far are printed)")
    ap.add_argument("--json", metavar="FILE")
    args = ap.parse_args(argv)
    t_start = time.time()
    device = torch.device(args.device)
    dtype = getattr(torch, args.dtype)
    print(f"building LLaDA from {args.config} on {device} ({args.dtype})", file=sys.stderr,
          flush=True)
    model = build_random("llada", Path(args.config), device, dtype)
    L = args.gen_length
    cfg = GenerationConfig(gen_length=L, steps=L, block_length=min(32, L), lc=min(20, L // 2),
                           k1=3, k2=5, candidates=3, c=0.5, max_iterations=args.iterations,
                           seed=0)
    run = Run(model, task="text", prompt="Use 3, 7, 12 to make 33.", strategy="medal",
              trace=True, compare_greedy=True, config=cfg)
    frames = Frames("live")
    pool = sent = 0
    engine, views, kinds = [], [], []
    sync = (lambda: torch.cuda.synchronize(device)) if device.type == "cuda" else (lambda: None)
    stopped = None
    while not run.done:
        if time.time() - t_start > args.budget_seconds:
            stopped = f"budget ({args.budget_seconds:.0f} s) reached"
            break
        t0 = time.perf_counter()
        event = run.step()
        sync()
        t1 = time.perf_counter()
        if event is None:
            break
        frames.update(run.trace, final=run.done)
        start = min(sent, frames.dirty_from)
        json.dumps(frames.bundle(pool_from=pool, frames_from=start, live=True, done=run.done))
        pool, sent = len(frames.enc.pool), len(frames.enc.frames)
        t2 = time.perf_counter()
        engine.append((t1 - t0) * 1000)
        views.append((t2 - t1) * 1000)
        kinds.append(event.kind)
        if len(engine) % 100 == 0:
            print(f"{len(engine)} events, {time.time() - t_start:.0f} s", file=sys.stderr,
                  flush=True)
    search_end = next((i for i, k in enumerate(kinds) if k == "search_finished"), None)
    out = {"device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
           "dtype": args.dtype, "gen_length": L, "iterations_budget": args.iterations,
           "events": len(engine), "done": run.done, "stopped": stopped,
           "tree_nodes": len((run.trace.get("tree") or {}).get("nodes") or []),
           "frames": len(frames.enc.frames),
           "engine_per_event": figures(engine), "views_per_event": figures(views),
           "views_share": sum(views) / max(1e-9, sum(views) + sum(engine)),
           "views_at_search_end_ms": views[search_end] if search_end is not None else None,
           "wall_s": time.time() - t_start}
    text = json.dumps(out, indent=1)
    print(text)
    if args.json:
        Path(args.json).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
