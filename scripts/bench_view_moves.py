"""How often the tree's view moves, and how fast stepping is at LLaDA's size (issue 28): a
benchmark, not a test; the figures depend on the machine and its load.

    python scripts/bench_view_moves.py [--llada TRACE.json] [--steps 120] [--no-llada]

* view movement: stepping forwards one position at a time through the shipped examples
  ``countdown-longer-search`` and ``countdown-large-search`` (or --examples), at 1440x900
  and 1024x768, in the HTML export: the steps that move the view (and per step), the
  moves over 300 px, the zoom changes, screen px in all, and the expansions whose new
  children are not all on screen after the step (viewer_checks.MOVES);
* the same in the app (``--app``: ``streamlit run app.py`` on a free port of this machine,
  the example opened by its URL, ``?example=NAME``; the Run page's sidebar narrows the
  tree's box to ~970 px at 1440x900);
* step at LLaDA's size: ``viewer.go(i)`` to the second animation frame after it, forwards
  from a third of the way in, on the 1,001-node trace of tests/llada_sized.py (~20 s to
  make; --llada reads one written with ``--save``), at both sizes: p50, p90, max.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "tests" / "browser")]
from viewer_checks import MOVES, STEPS  # noqa: E402

SIZES = ((1440, 900), (1024, 768))


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--examples", default="countdown-longer-search,countdown-large-search")
    ap.add_argument("--llada", default=None, help="a LLaDA-sized trace (JSON) written before")
    ap.add_argument("--save", default=None, help="write the LLaDA-sized trace made here")
    ap.add_argument("--no-llada", action="store_true")
    ap.add_argument("--no-moves", action="store_true")
    ap.add_argument("--steps", type=int, default=120)
    ap.add_argument("--app", action="store_true", help="also count the moves in the app")
    ap.add_argument("--no-export", action="store_true", help="the app's rows only (with --app)")
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    from medal.examples import list_examples, load_example
    from medal.viewer.export import write_html
    tmp = Path(tempfile.mkdtemp())
    pages = {}
    if not args.no_moves:
        for e in list_examples():
            if e.name in args.examples.split(","):
                pages[e.name] = write_html(load_example(e), tmp / f"{e.name}.html")
    llada = None
    if not args.no_llada:
        if args.llada:
            trace = json.loads(Path(args.llada).read_text())
        else:
            from llada_sized import llada_sized_trace
            trace = llada_sized_trace(tmp / "ckpt")
            if args.save:
                Path(args.save).write_text(json.dumps(trace))
        llada = write_html(trace, tmp / "llada.html")
    print(f"load average at the start: {os.getloadavg()}")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path="/usr/bin/chromium",
                              args=["--no-sandbox", "--disable-gpu"])
        print("| example | size | steps | steps that move the view | moves per step "
              "| moves > 300 px | zooms | px in all | expansions with children off screen |\n"
              "|---|---|---|---|---|---|---|---|---|")
        for name, path in ({} if args.no_export else pages).items():
            for w, h in SIZES:
                pg = b.new_page(viewport={"width": w, "height": h})
                pg.goto(path.as_uri())
                pg.wait_for_function("window.medalViewer && globalThis.__medalTreeDrawn",
                                     timeout=120_000)
                print(row(name, w, h, pg.evaluate(MOVES, pg.evaluate("medalViewer.n()"))),
                      flush=True)
                pg.close()
        if args.app and pages:
            for name in pages:
                for w, h in SIZES:
                    box, ms = app_moves(b, name, w, h)
                    print(row(f"{name} (app, tree box {box} px)", w, h, ms), flush=True)
        if llada is not None:
            print("\n| LLaDA-sized trace, Tree tab | steps | p50 | p90 | max | first paint |\n"
                  "|---|---|---|---|---|---|")
            for w, h in SIZES:
                pg = b.new_page(viewport={"width": w, "height": h})
                pg.goto(llada.as_uri())
                pg.wait_for_function("window.medalViewer && globalThis.__medalTreeDrawn",
                                     timeout=120_000)
                load = pg.evaluate("globalThis.__medalTreeDrawn.t")
                n = pg.evaluate("medalViewer.n()")
                xs = pg.evaluate(STEPS, [args.steps, n, 1 / 3])
                print(f"| {w}x{h} | {len(xs)} | {statistics.median(xs):.1f} ms | "
                      f"{pct(xs, 0.9):.1f} ms | {max(xs):.1f} ms | {load:.0f} ms |", flush=True)
                pg.close()
        b.close()
    print(f"load average at the end: {os.getloadavg()}")
    return 0


def row(name: str, w: int, h: int, ms: list) -> str:
    """One table row from viewer_checks.MOVES' steps: the steps that move the view (by
    over 1 screen px or in scale), per step, over 300 px, the scale changes, the px in
    all, and the expansions with any new child not wholly on screen, of all expansions
    (and of those children, the ones not named at the box's edge, ``awayMarks``)."""
    moved = [m for m in ms if m[0] > 1 or abs(m[1] - 1) > 1e-3]
    exp = [m[3] for m in ms if m[3] >= 0]
    unnamed = sum(m[4] for m in ms if m[3] >= 0)
    return (f"| {name} | {w}x{h} | {len(ms)} | {len(moved)} | {len(moved) / max(1, len(ms)):.3f} "
            f"| {sum(m[0] > 300 for m in ms)} | {sum(abs(m[1] - 1) > 1e-3 for m in ms)} "
            f"| {sum(m[0] for m in ms):.0f} | {sum(k > 0 for k in exp)} of {len(exp)} "
            f"({sum(exp)} children, {unnamed} not named at the edge) |")


_SERVER = {}


def app_moves(browser, name: str, w: int, h: int) -> list:
    """(the tree box's width, MOVES) in the app's viewer: the example opened by its URL,
    stepped from position 0."""
    import socket
    import subprocess
    import urllib.request
    if "url" not in _SERVER:
        with socket.socket() as sk:
            sk.bind(("127.0.0.1", 0))
            port = sk.getsockname()[1]
        _SERVER["proc"] = proc = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), "--server.port",
             str(port), "--server.address", "127.0.0.1", "--server.headless", "true",
             "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"],
            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        import atexit
        atexit.register(proc.terminate)
        url = f"http://127.0.0.1:{port}"
        while True:
            if proc.poll() is not None:
                raise SystemExit(f"the app exited with status {proc.returncode}")
            try:
                with urllib.request.urlopen(url + "/_stcore/health", timeout=60):
                    break
            except OSError:
                import time
                time.sleep(0.5)
        _SERVER["url"] = url
    ctx = browser.new_context(viewport={"width": w, "height": h})
    try:
        pg = ctx.new_page()
        pg.goto(f"{_SERVER['url']}/?example={name}")
        pg.wait_for_function("globalThis.__medalViewer && __medalViewer.store && "
                             "globalThis.__medalTreeDrawn && __medalViewer.n() > 1",
                             timeout=300_000)
        pg.evaluate("window.medalViewer = globalThis.__medalViewer")
        return (pg.evaluate("medalViewer.box().w"),
                pg.evaluate(MOVES, pg.evaluate("medalViewer.n()")))
    finally:
        ctx.close()


if __name__ == "__main__":
    sys.exit(main())
