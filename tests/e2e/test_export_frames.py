"""The exported page rebuilds every frame from the changes it carries (issue 21): in
Chromium, each rebuilt frame equals the frame the views compute at that position."""
from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_browser import browser, expect  # noqa: E402,F401

from medal.config import GenerationConfig  # noqa: E402
from medal.engine import Run  # noqa: E402
from medal.models import load_model  # noqa: E402
from medal.trace import dumps, loads_trace  # noqa: E402
from medal.viz import export  # noqa: E402
from medal.viz.timeline import positions  # noqa: E402


def test_the_page_rebuilds_every_frame(browser, tmp_path):
    run = Run(load_model("builtin:sudoku"), task="sudoku", prompt="Sudoku ..3./3.21/.3.2/.24.",
              trace=True, compare_greedy=True, config=GenerationConfig(seed=3))
    run.finish()
    trace = loads_trace(dumps(run.trace))
    page = tmp_path / "t.html"
    export.write_html(trace, page)
    context = browser.new_context(offline=True)
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.goto(page.as_uri())
    expect(pg.locator("#title")).to_have_text("Finished", timeout=30_000)
    n = len(positions(trace))
    assert pg.evaluate("window.medalExport.frames") == n
    for i in range(n):
        got = json.loads(pg.evaluate(f"JSON.stringify(window.medalExport.frame({i}))"))
        want = json.loads(json.dumps(export.frame(trace, i)))
        for f in (got, want):   # the page names each edge it draws ("0>1"): not data
            for e in (f.get("tree") or {}).get("edges", []):
                e.pop("id", None)
        assert got == want, f"frame {i}"
    pg.keyboard.press("Home")
    for _ in range(n - 1):
        pg.keyboard.press("ArrowRight")
    assert pg.evaluate("window.medalExport.position()") == n - 1
    context.close()
    assert errors == []
