"""Measure the viewer's targets in Chromium on this machine (issue 18), and print a table
for docs/UI.md. A benchmark, not a test: the figures depend on the machine and its load.

    python scripts/bench_viewer.py [--steps 60] [--live-steps 20]

* step: a computed position shown, every visible view redrawn -- ``viewer.go(i)`` to the
  next ``afterDrawing`` of the tree (Tree tab), or the end of ``go`` (other tabs; they
  draw synchronously), on a trace with >= 300 tree nodes, in the HTML export;
* live "Next phase" -> the new frame drawn: in the app, at the head of a live run, the
  click to the viewer showing the new position (and the bytes the page received for it);
* page load -> interactive tree: the app's plain URL opened (a new session opens on an
  example) to its tree drawn, in a fresh browser profile (nothing cached) and again with
  the browser's cache warm; and the URL opened on the live run (``?source=live``, which
  draws the ~40 settings) plus one click on an example; and the export's file opened to
  its tree drawn;
* example click -> tree: a click on an example's button (examples already computed once
  by the server) to its tree drawn;
* step at LLaDA's size: the same steps on a trace of 256 answer slots and ~1,000 nodes from
  a tiny random-weight LLaDA (tests/llada_sized.py; ~20 s to make; --no-llada skips it);
* view movement: stepping forwards one position at a time through each shipped example,
  how far the tree's view moves (steps that move it, moves over 300 px, zoom changes);
* page load -> Compare drawn: the URL opened on Compare (``?source=compare``: two examples
  side by side) to both viewers drawn, in 5 fresh browser profiles;
* export size of every shipped example.

The machine these figures come from matters: say its cores and load with them (the load
average is printed at the start and the end).
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]
CHROMIUM = "/usr/bin/chromium"


#: counts the bytes the page receives on its WebSockets (Streamlit's), in __wsBytes
WS_BYTES = """(() => { globalThis.__wsBytes = 0; const O = WebSocket;
  globalThis.WebSocket = function (...a) { const w = new O(...a);
    w.addEventListener("message", (e) => {
      globalThis.__wsBytes += e.data.byteLength || e.data.size || e.data.length || 0; });
    return w; };
  globalThis.WebSocket.prototype = O.prototype; Object.assign(globalThis.WebSocket, O); })()"""


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def row(name, xs):
    return (f"| {name} | {len(xs)} | {statistics.median(xs):.0f} ms | {pct(xs, 0.9):.0f} ms | "
            f"{max(xs):.0f} ms |")


def deep_trace(nodes: int) -> dict:
    from medal.config import GenerationConfig
    from medal.engine import Run
    from medal.models import load_model
    run = Run(load_model("builtin:countdown"), problem={"numbers": [4, 18, 13], "target": 20},
              trace=True, compare_greedy=True,
              config=GenerationConfig(lc=6, candidates=4, max_iterations=120, c=0.5))
    run.finish()
    trace = json.loads(json.dumps(run.trace))
    print(f"trace: {len(trace['tree']['nodes'])} nodes", file=sys.stderr)
    return trace


sys.path.insert(0, str(ROOT / "tests" / "browser"))
from viewer_checks import MOVES, STEPS  # noqa: E402


def view_moves(pg, n: int) -> dict:
    """How the view moved over the steps (each step waited out, its glide included)."""
    ms = pg.evaluate(MOVES, n)
    moved = [m for m in ms if m[0] > 1 or abs(m[1] - 1) > 1e-3]
    return {"steps": len(ms), "moved": len(moved), "big": sum(m[0] > 300 for m in ms),
            "zooms": sum(abs(m[1] - 1) > 1e-3 for m in ms),
            "px": sum(m[0] for m in ms), "frame_px": max((m[2] for m in ms), default=0)}
    # frame_px: the view's fastest, in screen px per 60 Hz frame (16.7 ms)


def llada_trace() -> dict:
    sys.path.insert(0, str(ROOT / "tests"))
    from llada_sized import llada_sized_trace
    t0 = time.perf_counter()
    trace = llada_sized_trace(tempfile.mkdtemp())
    print(f"LLaDA-sized trace: {len(trace['tree']['nodes'])} nodes, "
          f"{trace['run']['config']['gen_length']} slots ({time.perf_counter() - t0:.0f} s)",
          file=sys.stderr)
    return trace


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--live-steps", type=int, default=20)
    ap.add_argument("--nodes", type=int, default=300)
    ap.add_argument("--no-llada", action="store_true", help="skip the LLaDA-sized trace")
    ap.add_argument("--no-moves", action="store_true", help="skip the view-movement count")
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    print(f"load average at the start: {os.getloadavg()}", file=sys.stderr)
    from medal.examples import list_examples, load_example
    from medal.viewer.export import write_html
    tmp = Path(tempfile.mkdtemp())
    out, moves = {}, {}
    sizes = {}
    for e in list_examples():
        p = write_html(load_example(e), tmp / f"{e.name}.html")
        sizes[e.name] = p.stat().st_size
    trace = deep_trace(args.nodes)
    t0 = time.perf_counter()
    big = write_html(trace, tmp / "big.html")
    export_s = time.perf_counter() - t0
    llada = None
    if not args.no_llada:
        t0 = time.perf_counter()
        llada = write_html(llada_trace(), tmp / "llada.html")
        print(f"LLaDA-sized export: {llada.stat().st_size / 1e6:.2f} MB in "
              f"{time.perf_counter() - t0:.1f} s", file=sys.stderr)
    port = free_port()
    log = open(tmp / "streamlit.log", "w")
    server = subprocess.Popen(
        [sys.executable, str(ROOT / "tests" / "browser" / "serve_app.py"), "--server.port", str(port),
         "--server.address", "127.0.0.1", "--server.headless", "true",
         "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"],
        cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "MEDAL_TEST_THREADS": "1"})
    url = f"http://127.0.0.1:{port}"
    for _ in range(180):
        try:
            urllib.request.urlopen(url + "/_stcore/health", timeout=2)
            break
        except OSError:
            time.sleep(0.5)
    healthy = time.perf_counter()
    try:
        with sync_playwright() as p:
            b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
            pg = b.new_page(viewport={"width": 1440, "height": 900})
            # export: load, then steps at >= 300 nodes
            t0 = time.perf_counter()
            pg.goto(big.as_uri())
            pg.wait_for_function("window.medalViewer && globalThis.__medalTreeDrawn", timeout=120_000)
            out["export load"] = [(time.perf_counter() - t0) * 1000]
            n = pg.evaluate("medalViewer.n()")
            drawn = pg.evaluate("medalViewer.nodes.length")
            print(f"export: {n} positions, {drawn} nodes drawn at the end", file=sys.stderr)
            # k steps through the search (where the tree changes at every step), each from
            # the call to the second animation frame after it: the tree's canvas and every
            # visible view are drawn by then
            steps = pg.evaluate("""([k, n]) => new Promise(done => {
                const v = medalViewer, out = []; let i = Math.max(0, Math.floor(n / 3));
                v.go(i);
                function one() {
                  if (out.length >= k) { done(out); return; }
                  i += 1; const t = performance.now();
                  v.go(i);
                  requestAnimationFrame(() => requestAnimationFrame(() => {
                    out.push(performance.now() - t); setTimeout(one, 30); }));
                }
                setTimeout(one, 300); })""", [args.steps, n])
            out[f"step, Tree tab ({drawn} nodes drawn)"] = steps
            for tab in ("entropy", "inspector", "cands"):
                pg.evaluate(f"medalViewer.setTab('{tab}')")
                xs = pg.evaluate("""([k, n, tab]) => new Promise(done => {
                    const v = medalViewer, out = []; let j = 0;
                    function one() { if (j >= k) { done(out); return; }
                      const i = Math.floor(n / 3) + j; j += 1; const t = performance.now(); v.go(i);
                      requestAnimationFrame(() => requestAnimationFrame(() => {
                        out.push(performance.now() - t); setTimeout(one, 30); })); }
                    one(); })""", [args.steps, n, tab])
                out[f"step, {tab} tab"] = xs
            if llada is not None:
                for size in ((1440, 900), (1024, 768)):
                    lp = b.new_page(viewport={"width": size[0], "height": size[1]})
                    t0 = time.perf_counter()
                    lp.goto(llada.as_uri())
                    lp.wait_for_function("window.medalViewer && globalThis.__medalTreeDrawn",
                                         timeout=120_000)
                    load_ms = (time.perf_counter() - t0) * 1000
                    ln = lp.evaluate("medalViewer.n()")
                    xs = lp.evaluate(STEPS, [args.steps, ln, 1 / 3])
                    ld = lp.evaluate("medalViewer.nodes.length")
                    out[f"step, LLaDA-sized trace (256 slots, ~1,000 nodes; {ld} drawn), "
                        f"Tree tab, {size[0]}x{size[1]}"] = xs
                    out[f"export load, LLaDA-sized trace, {size[0]}x{size[1]}"] = [load_ms]
                    lp.close()
            if not args.no_moves:
                for e in list_examples():
                    mp = b.new_page(viewport={"width": 1440, "height": 900})
                    mp.goto((tmp / f"{e.name}.html").as_uri())
                    mp.wait_for_function("window.medalViewer && globalThis.__medalTreeDrawn",
                                         timeout=120_000)
                    mv = view_moves(mp, mp.evaluate("medalViewer.n()"))
                    moves[e.name] = mv
                    mp.close()
            # the app: load -> interactive tree (an example's), example click -> tree
            examples = list_examples()
            # the server's first page (its first session: imports, the examples' frames)
            c = b.new_context(viewport={"width": 1440, "height": 900})
            lp = c.new_page()
            t0 = time.perf_counter()
            lp.goto(url)
            lp.wait_for_function("globalThis.__medalViewer && __medalViewer.store && "
                                 "globalThis.__medalTreeDrawn", timeout=120_000, polling=10)
            out[f"page load -> interactive tree, the server's first page ({t0 - healthy:.0f} s "
                "after it was up)"] = [(time.perf_counter() - t0) * 1000]
            c.close()
            landing = []
            for cached in (False, False, False, False, False, True, True, True, True, True):
                c = warm if cached else b.new_context(viewport={"width": 1440, "height": 900})
                if not cached:
                    warm = c
                lp = c.new_page()
                t0 = time.perf_counter()
                lp.goto(url)
                lp.wait_for_function("globalThis.__medalViewer && __medalViewer.store && "
                                     "globalThis.__medalTreeDrawn", timeout=120_000, polling=10)
                landing.append(((time.perf_counter() - t0) * 1000, cached))
                lp.close()
            warm.close()
            out["page load -> interactive tree (plain URL: opens on an example), fresh profile"] = [
                t for t, cached in landing if not cached]
            out["page load -> interactive tree (plain URL), browser cache warm"] = [
                t for t, cached in landing if cached]
            compare = []
            for _ in range(5):
                c = b.new_context(viewport={"width": 1440, "height": 900})
                lp = c.new_page()
                t0 = time.perf_counter()
                lp.goto(url + "?source=compare")
                lp.wait_for_function("globalThis.__medalCompare && __medalCompare.root.isConnected "
                                     "&& __medalCompare.views.length === 2 && "
                                     "__medalCompare.views.every(v => v.n() > 0)",
                                     timeout=120_000, polling=10)
                compare.append((time.perf_counter() - t0) * 1000)
                c.close()
            out["page load -> Compare drawn (?source=compare), fresh profile"] = compare
            ctx = b.new_context(viewport={"width": 1440, "height": 900})
            pg = ctx.new_page()
            t0 = time.perf_counter()
            pg.goto(url + "?source=live")
            pg.wait_for_selector(".mv .mv-next", timeout=120_000)
            out["app load (?source=live, settings drawn) -> viewer up"] = [(time.perf_counter() - t0) * 1000]
            clicks = []
            for _round in range(2):
                for e in examples:
                    pg.evaluate("globalThis.__medalTreeDrawn = null")
                    t0 = time.perf_counter()
                    pg.get_by_role("button", name=e.title, exact=True).click()
                    pg.wait_for_function(f"globalThis.__medalViewer && __medalViewer.store && "
                                         f"__medalViewer.store.key === 'example-{e.name}' && globalThis.__medalTreeDrawn",
                                         timeout=120_000)
                    clicks.append((time.perf_counter() - t0) * 1000)
            out["example click -> tree (first round computes the frames)"] = clicks[:len(examples)]
            out["example click -> tree (frames computed)"] = clicks[len(examples):]
            ctx.close()
            ctx = b.new_context(viewport={"width": 1440, "height": 900})
            ctx.add_init_script(WS_BYTES)
            pg = ctx.new_page()
            t0 = time.perf_counter()
            pg.goto(url + "?source=live")
            pg.wait_for_selector(".mv .mv-next", timeout=120_000)
            pg.get_by_role("button", name=examples[0].title, exact=True).click()
            pg.wait_for_function("globalThis.__medalTreeDrawn", timeout=120_000)
            out["page load (?source=live) + one example click -> tree"] = [(time.perf_counter() - t0) * 1000]
            # live: Next phase -> new frame drawn
            pg.get_by_text("Live run", exact=True).click()
            pg.wait_for_timeout(2000)
            pg.click("button.mv-next")
            pg.wait_for_function("__medalViewer.n() >= 1", timeout=120_000)
            pg.wait_for_timeout(1000)
            live, received = [], []
            for _ in range(args.live_steps):
                n0 = pg.evaluate("__medalViewer.n()")
                pg.evaluate("globalThis.__wsBytes = 0")
                t0 = time.perf_counter()
                pg.click("button.mv-next")
                pg.wait_for_function(f"__medalViewer.n() > {n0} && __medalViewer.pos === __medalViewer.n() - 1",
                                     timeout=120_000, polling=10)
                live.append((time.perf_counter() - t0) * 1000)
                received.append(pg.evaluate("globalThis.__wsBytes"))
                pg.wait_for_timeout(150)
            out["live Next phase -> new frame drawn"] = live
            print(f"live step: received from the server per step: p50 "
                  f"{statistics.median(received) / 1e3:.1f} kB, max {max(received) / 1e3:.1f} kB",
                  file=sys.stderr)
            b.close()
    finally:
        server.terminate()
        server.wait(timeout=30)
    print(f"load average: {os.getloadavg()}")
    print("| measure | samples | p50 | p90 | max |\n|---|---|---|---|---|")
    for k, xs in out.items():
        print(row(k, xs))
    print(f"\nexport of the {trace and len(trace['tree']['nodes'])}-node trace: "
          f"{big.stat().st_size / 1e6:.2f} MB, written in {export_s:.1f} s")
    for k, v in sizes.items():
        print(f"export {k}: {v / 1e6:.2f} MB")
    if moves:
        print("\nview movement stepping forwards one position at a time (1440x900): "
              "| example | steps | steps that move the view | moves > 300 px | zooms | px in all "
              "| fastest (px a 60 Hz frame) |")
        for k, m in moves.items():
            print(f"| {k} | {m['steps']} | {m['moved']} | {m['big']} | {m['zooms']} | "
                  f"{m['px']:.0f} | {m['frame_px']:.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
