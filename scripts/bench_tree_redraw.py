"""Click to redrawn tree, measured in Chromium: ``python scripts/bench_tree_redraw.py``.

Starts the app (``tests/browser/serve_app.py``), uploads a trace whose tree has at least
``--nodes`` nodes (made here with the tiny random stand-in model: no weights needed), sets
the node cap above it, goes to the end of the search (the whole tree drawn) and then clicks
"Next phase" ``--clicks`` times. Each sample is the time from the click (in the page's
clock) to the tree component's next ``afterDrawing`` -- the full path: the click, the
Streamlit rerun on the server, the delta to the browser, the in-place vis-network update
and the canvas redraw. Prints every sample, p50 and p90.

Uses /usr/bin/chromium through Playwright; nothing leaves the machine (other hosts are
blocked, and the script fails if any request to one was made).
"""
from __future__ import annotations

import argparse
import re
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
from urllib.parse import urlparse

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]


def big_trace(min_nodes: int) -> dict:
    from medal.config import GenerationConfig
    from medal.engine import Run
    from viz_support import random_model
    its = max(4, min_nodes // 5 + 2)
    run = Run(random_model(), task="countdown", prompt="Use 4, 18, 13 to make 20.",
              strategy="medal", config=GenerationConfig(k1=3, k2=5, lc=5, candidates=1000,
                                                        max_iterations=its),
              trace=True, compare_greedy=True)
    run.finish()
    return json.loads(json.dumps(run.trace))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=150)
    ap.add_argument("--clicks", type=int, default=30)
    ap.add_argument("--width", type=int, default=1440)
    ap.add_argument("--height", type=int, default=900)
    args = ap.parse_args()

    from playwright.sync_api import sync_playwright

    from medal.trace import dumps
    from medal.timeline import positions
    trace = big_trace(args.nodes)
    n_nodes = len(trace["tree"]["nodes"])
    path = Path(tempfile.mkdtemp()) / "bench-trace.json"
    path.write_text(dumps(trace))
    port = free_port()
    log = open(Path(tempfile.gettempdir()) / "bench-tree-streamlit.log", "w")
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "tests" / "browser" / "serve_app.py"), "--server.port",
         str(port), "--server.address", "127.0.0.1", "--server.headless", "true",
         "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"],
        cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"})
    url = f"http://127.0.0.1:{port}"
    blocked = []
    try:
        for _ in range(180):
            try:
                with urllib.request.urlopen(url + "/_stcore/health", timeout=2):
                    break
            except OSError:
                time.sleep(0.5)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium",
                                        args=["--no-sandbox", "--disable-gpu"])
            ctx = browser.new_context(viewport={"width": args.width, "height": args.height})

            def route(r):
                host = urlparse(r.request.url).hostname or ""
                if host in ("127.0.0.1", "localhost") or r.request.url.startswith("data:"):
                    r.continue_()
                else:
                    blocked.append(r.request.url)
                    r.abort()
            ctx.route("**/*", route)
            pg = ctx.new_page()
            pg.goto(url)
            pg.get_by_role("button", name="Run to end", exact=True).wait_for(timeout=90_000)

            def idle():
                pg.wait_for_timeout(150)
                pg.locator('[data-testid="stStatusWidget"]').wait_for(state="detached",
                                                                       timeout=120_000)
            pg.get_by_text("Uploaded trace", exact=True).click()
            idle()
            pg.locator('[data-testid="stFileUploader"] input[type="file"]').set_input_files(
                str(path))
            pg.get_by_role("heading", name="Phase: Finished", exact=True).wait_for(
                timeout=60_000)
            idle()
            cap = pg.get_by_role("slider", name="Most nodes drawn")
            cap.focus()
            cap.press("End")                        # 300 nodes drawn: the whole tree
            idle()
            # to the end of the search: the whole tree exists at every clicked position
            # (the clicks then step through the candidate choice and the decoding)
            pos = positions(trace)
            start = next(i for i, q in enumerate(pos) if q.kind == "search_finished")
            timeline = pg.get_by_role("slider", name="Timeline: position").first
            timeline.focus()
            timeline.press("Home")
            for _ in range(start):
                timeline.press("ArrowRight")
            # every key press above queued a rerun: wait until the page has worked them all
            # off and shows the end of the search, or the first click's time would include
            # them (it did: the first sample was 11-14 s, every later one under 0.4 s)
            pg.get_by_text(re.compile(rf"position {start + 1} of \d+")).first.wait_for(
                timeout=180_000)
            idle()
            pg.wait_for_timeout(1500)
            samples = []
            drawn_nodes = []
            phases = []
            for _ in range(args.clicks):
                before = pg.evaluate("() => (globalThis.__medalTreeDrawn || {}).seq || 0")
                t0 = pg.evaluate("""() => { const b = [...document.querySelectorAll('button')]
                    .find(b => b.innerText.trim() === 'Next phase');
                    const t = performance.now(); b.click(); return t; }""")
                pg.wait_for_function(f"() => (globalThis.__medalTreeDrawn || {{}}).seq > {before}",
                                     timeout=60_000)
                done = pg.evaluate("() => globalThis.__medalTreeDrawn")
                samples.append(done["t"] - t0)
                drawn_nodes.append(done["nodes"])
                heads = pg.get_by_role("heading", name=re.compile("^Phase: "))
                phases.append(heads.first.inner_text() if heads.count() else "?")
                idle()
            browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=20)
        log.close()
    if blocked:
        print(f"requests left the machine: {blocked}", file=sys.stderr)
        return 1
    print("in click order (ms, phase shown): " + "; ".join(
        f"{s:.0f} {h.removeprefix('Phase: ')}" for s, h in zip(samples, phases)))
    samples.sort()
    p90 = samples[min(len(samples) - 1, int(round(0.9 * len(samples))) - 1)]
    print(f"tree: {n_nodes} nodes in the trace, {min(drawn_nodes)}-{max(drawn_nodes)} drawn; "
          f"viewport {args.width}x{args.height}; {len(samples)} clicks on Next phase")
    print("samples (ms): " + " ".join(f"{s:.0f}" for s in samples))
    print(f"click to redrawn tree: p50 {statistics.median(samples):.0f} ms, "
          f"p90 {p90:.0f} ms, max {samples[-1]:.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
