#!/usr/bin/env python
"""Trace size at the paper's settings (docs/REAL_MODELS.md, "Trace size at the paper's
settings"; not part of the tests).

Builds a tiny LLaDA checkpoint (the real config of ``tests/data/real-models/llada``:
126,464-token vocabulary, MEDAL's native network, seeded random weights), runs a MEDAL
search at the paper's settings (gen length 256, steps 256, block 32, L_c 20, K1 3, K2 5,
C 3, up to ``--max-iterations`` 200) on the first Countdown problem of gpu_check.py,
records its trace, and writes the trace three ways::

    OUT/plain.json     json of the trace as recorded (medal.trace.dumps)
    OUT/packed.json    what --trace and the app's download write (medal.trace.write_trace)
    OUT/packed-1.json  the earlier packing (nodes in full), for comparison

then reads the written trace back through the one gate (``load_trace``) and prints the
sizes, the time to load, and whether the trace read back equals the recorded one.
``--search-only`` (the default) stops after the search, as the measurements in the docs
did (no phase C, no greedy comparison); ``--full`` runs the whole generation.

    OMP_NUM_THREADS=2 python scripts/trace_size.py --out /tmp/trace-size
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

PAPER = dict(gen_length=256, steps=256, block_length=32, lc=20, k1=3, k2=5, candidates=3)


def checkpoint(out: Path) -> Path:
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        "make_random_checkpoint", ROOT / "scripts" / "make_random_checkpoint.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.build(ROOT / "tests" / "data" / "real-models" / "llada" / "config.json",
                        None, out, native="llada", seed=0)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, required=True, help="folder for the three files")
    p.add_argument("--max-iterations", type=int, default=200)
    p.add_argument("--full", action="store_true", help="the whole run, not the search only")
    p.add_argument("--compare", action="store_true", help="with --full: the greedy comparison too")
    args = p.parse_args(argv)

    from medal.config import GenerationConfig
    from medal.engine import Run
    from medal.models import load_model
    from medal.tasks import get_task
    from medal import trace as T

    args.out.mkdir(parents=True, exist_ok=True)
    folder = checkpoint(Path(tempfile.mkdtemp(prefix="medal-trace-size-")))
    model = load_model(f"llada:{folder}", device="cpu")
    problem = get_task("countdown").generate(1, seed=10_000)[0]
    config = GenerationConfig(**PAPER, max_iterations=args.max_iterations, seed=0)
    t0 = time.perf_counter()
    run = Run(model, task="countdown", problem=problem, strategy="medal", config=config,
              trace=True, compare_greedy=args.full and args.compare)
    if args.full:
        run.finish()
    else:
        while (event := run.step()) is not None and event.kind != "search_finished":
            pass
    ran = time.perf_counter() - t0
    trace = run.trace
    nodes = len(trace["tree"]["nodes"])
    plain = T.dumps(trace)
    (args.out / "plain.json").write_text(plain)
    old = getattr(T, "pack_v1", None)
    if old is not None:
        (args.out / "packed-1.json").write_text(json.dumps(
            old(json.loads(plain)), allow_nan=False, separators=(",", ":")))
    size = T.write_trace(trace, args.out / "packed.json")
    t1 = time.perf_counter()
    back = T.load_trace(args.out / "packed.json", max_bytes=max(size, T.MAX_TRACE_BYTES))
    loaded = time.perf_counter() - t1
    same = back == json.loads(plain)
    sizes = {f.name: f.stat().st_size for f in sorted(args.out.glob("*.json"))}
    report = {"iterations": len(trace["iterations"]), "nodes": nodes,
              "search_only": not args.full, "run_seconds": round(ran, 1),
              "sizes": sizes, "limit": T.MAX_TRACE_BYTES,
              "load_seconds": round(loaded, 2), "reads_back_equal": same}
    print(json.dumps(report, indent=1))
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
