"""End to end, in Chromium: the views shaped like the task, the shipped examples, the
candidate comparison, the Benchmark page, and the exported HTML page opened with the
network blocked.

Reuses test_browser.py's server (``streamlit run app.py`` through serve_app.py) and its
request blocking: every request to a host other than localhost is aborted and counted,
and the count must stay 0. The exported page is opened from a file:// URL in a context
that aborts every request that is not a file:, data: or blob: URL. Screenshots at
1440x900 and 1024x768 go to ``test-artifacts/``.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_browser import (ARTIFACTS, browser, expect, offline_session,  # noqa: E402,F401
                          server, wait_idle)

SIZES = {"1440x900": {"width": 1440, "height": 900}, "1024x768": {"width": 1024, "height": 768}}


def _session(browser, server, size: str):
    return offline_session(browser, server, SIZES[size], accept_downloads=True)


@pytest.fixture(params=list(SIZES))
def app(request, browser, server):
    context, pg, offline = _session(browser, server, request.param)
    yield pg, request.param
    context.close()
    assert offline.blocked == [], f"requests left the machine: {offline.blocked}"


def shot(pg, name: str, size: str, full_page: bool = False) -> None:
    pg.screenshot(path=str(ARTIFACTS / f"e2e-views-{name}-{size}.png"), full_page=full_page)


def open_example(pg, title: str) -> None:
    pg.get_by_role("button", name=title, exact=True).click()   # one click
    expect(pg.locator(".mv-title")).to_have_text("Phase: Finished", timeout=60_000)
    wait_idle(pg)


def open_tab(pg, name: str) -> None:
    """A tab of the viewer (switched in the browser: no server round trip)."""
    pg.locator("button.mv-tab", has_text=name).click()


def test_examples_open_with_board_expression_and_candidates(app, tmp_path):
    pg, size = app
    open_example(pg, "Countdown: MEDAL fixes greedy's answer")
    open_tab(pg, "Answer")
    view = pg.locator(".medal-expression")
    expect(view).to_be_visible()
    expect(view.get_by_text("✓ correct")).to_have_count(1)     # MEDAL
    expect(view.get_by_text("✗ wrong")).to_have_count(1)       # greedy
    shot(pg, "countdown-answer", size)
    open_tab(pg, "Candidates")
    expect(pg.get_by_text("winner by cumulative IG", exact=False)).to_be_visible()
    expect(pg.locator(".mv-panel .mv-table").first).to_be_visible()
    expect(pg.locator(".mv-barrow .mv-barfill").first).to_be_visible()     # the bars
    shot(pg, "candidates", size)
    open_tab(pg, "Entropy")
    expect(pg.get_by_text("padding slots hidden", exact=False).first).to_be_visible(timeout=30_000)
    shot(pg, "entropy-trimmed", size)
    pg.get_by_text("show the padding after the end of the answer").click()
    expect(pg.get_by_text("padding slots hidden", exact=False)).to_have_count(0)

    open_example(pg, "Sudoku 4x4: the board, MEDAL beside greedy")
    open_tab(pg, "Answer")
    boards = pg.locator(".medal-board")
    expect(boards).to_have_count(2)
    expect(boards.first.locator("td")).to_have_count(16)
    shot(pg, "sudoku-board", size)

    # the same run as one web page, opened with no server and no network
    pg.get_by_text("Trace file: download", exact=False).click()
    with pg.expect_download(timeout=180_000) as info:
        pg.get_by_role("button", name="Download as a web page (HTML)", exact=True).click()
    saved = tmp_path / "sudoku.html"
    info.value.save_as(saved)
    assert info.value.suggested_filename.endswith(".html")
    (ARTIFACTS / f"e2e-export-{size}.html").write_bytes(saved.read_bytes())
    _check_export(pg.context.browser, saved, size)


def _check_export(browser, path: Path, size: str) -> None:
    leaked: list[str] = []

    def route(r):
        url = r.request.url
        if url.startswith(("file:", "data:", "blob:", "about:")):
            r.continue_()
        else:
            leaked.append(url)
            r.abort()

    context = browser.new_context(viewport=SIZES[size], offline=True)
    context.route("**/*", route)
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.goto(path.as_uri())
    title = pg.locator(".mv-title")
    expect(title).to_have_text("Phase: Finished", timeout=30_000)
    expect(pg.locator("#medal-tree canvas")).to_have_count(1)
    pg.locator("button.mv-tab", has_text="Entropy").click()
    expect(pg.locator("svg.mv-heat").first).to_be_attached(timeout=30_000)
    pg.locator("button.mv-tab", has_text="Answer").click()
    expect(pg.locator(".mv-task .medal-board")).to_have_count(2)
    pg.screenshot(path=str(ARTIFACTS / f"e2e-views-export-finished-{size}.png"))
    pg.locator("button.mv-tab", has_text="Tree").click()
    n = pg.evaluate("medalViewer.n()")
    pg.keyboard.press("Home")
    expect(title).to_have_text("Phase: Start")
    assert pg.evaluate("medalViewer.pos") == 0
    for want in ("Root evaluation", "Selection · iteration 1", "Expansion · iteration 1",
                 "Simulation · iteration 1", "Backpropagation · iteration 1"):
        pg.keyboard.press("ArrowRight")
        expect(title).to_have_text("Phase: " + want)
    expect(pg.locator("#medal-tree[data-drawn]")).to_have_count(1)
    assert pg.evaluate("medalViewer.pos") == 5
    pg.screenshot(path=str(ARTIFACTS / f"e2e-views-export-step-{size}.png"))
    pg.locator("button.mv-prev").click()
    expect(title).to_have_text("Phase: Simulation · iteration 1")
    pg.keyboard.press("End")
    assert pg.evaluate("medalViewer.pos") == n - 1
    context.close()
    assert leaked == [] and errors == [], (leaked, errors)


def test_benchmark_page(browser, server, tmp_path):
    from medal import bench
    from medal.config import GenerationConfig
    from medal.models import load_model
    from medal.tasks import SUDOKU

    cfg = GenerationConfig()
    strategies = ["greedy", "medal"]
    records = bench.bench(load_model("builtin:sudoku"), "sudoku", SUDOKU.generate(4, seed=5),
                          strategies, cfg, progress=False)
    results = tmp_path / "results.json"
    results.write_text(json.dumps(bench.results_document(
        records, strategies, "sudoku", cfg, "builtin:sudoku", "generated")))
    bad = tmp_path / "trace.json"
    bad.write_text('{"format": "medal-trace"}')
    for size in SIZES:
        context, pg, offline = _session(browser, server, size)
        pg.get_by_role("link", name="Benchmark").click()
        expect(pg.get_by_role("heading", name="Benchmark results")).to_be_visible(timeout=30_000)
        upload = pg.locator('[data-testid="stFileUploader"] input[type="file"]')
        upload.set_input_files(str(bad))
        expect(pg.get_by_text("not a MEDAL benchmark results file", exact=False)).to_be_visible(
            timeout=30_000)
        upload.set_input_files(str(results))
        expect(pg.get_by_text("Loaded results.json")).to_be_visible(timeout=30_000)
        expect(pg.get_by_text("accuracy against cost", exact=False).first).to_be_visible()
        expect(pg.locator('[data-testid="stPlotlyChart"] .main-svg').first).to_be_attached(
            timeout=30_000)
        wait_idle(pg)
        shot(pg, "benchmark", size, full_page=True)
        # the loaded file survives a page switch
        pg.get_by_role("link", name="How MEDAL works").click()
        pg.wait_for_timeout(500)
        pg.get_by_role("link", name="Benchmark").click()
        expect(pg.get_by_text("Loaded results.json")).to_be_visible(timeout=30_000)
        context.close()
        assert offline.blocked == [], offline.blocked
