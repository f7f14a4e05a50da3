"""A lecture, end to end in Chromium (issue 10, part A): the Run page's one timeline,
state that survives page switches, the in-place tree and its node clicks, presenter mode.

Reuses ``test_browser``'s server (``serve_app.py``), browser and offline guard: every
request to a host other than localhost is aborted and counted, and must stay 0.
Screenshots at 1440x900 and 1024x768 go to ``test-artifacts/lecture-*.png``.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_browser import (ARTIFACTS, browser, click, expect, open_tab,  # noqa: E402,F401
                          page, phase_is, server, set_number, wait_idle)

LARGE = {"width": 1440, "height": 900}
SMALL = {"width": 1024, "height": 768}

TREE = "#medal-tree"


def shot(pg, name: str) -> None:
    pg.mouse.move(2, 2)                   # no hover tooltip in the picture
    pg.wait_for_timeout(300)
    pg.screenshot(path=str(ARTIFACTS / f"lecture-{name}.png"))
    tree = pg.locator(TREE)
    if tree.count() and tree.is_visible():   # the main area scrolls: the tree, in view
        tree.scroll_into_view_if_needed()
        pg.wait_for_timeout(300)
        pg.screenshot(path=str(ARTIFACTS / f"lecture-{name}-tree.png"))


def tree_drawn(pg) -> int:
    """Waits for the in-page tree (no iframe) to have drawn, returns its draw counter."""
    box = pg.locator(TREE)
    expect(box).to_have_count(1, timeout=90_000)   # a loaded machine: be patient
    expect(box).to_have_attribute("data-drawn", __import__("re").compile(r"\d+"),
                                  timeout=60_000)
    assert pg.locator(f'iframe[srcdoc*="medal-tree"]').count() == 0
    return int(box.get_attribute("data-drawn"))


def scale(pg) -> float:
    return pg.evaluate("() => globalThis.__medalTreeNetwork.getScale()")


def press(pg, key: str) -> None:
    """A key on the page itself (not in a widget): what a presenter does."""
    pg.mouse.click(5, 300)            # focus the page body, away from any widget
    pg.keyboard.press(key)


def node_point(pg, nid: int) -> tuple[float, float]:
    return tuple(pg.evaluate("""nid => {
        const net = globalThis.__medalTreeNetwork;
        const p = net.canvasToDOM(net.getPositions([nid])[nid]);
        const b = globalThis.__medalTreeBox.getBoundingClientRect();
        return [b.left + p.x, b.top + p.y]; }""", nid))


def test_lecture(page, tmp_path):
    pg = page
    console = open(ARTIFACTS / "lecture-console.log", "w")
    pg.on("console", lambda m: console.write(f"{m.type}: {m.text}\n"))
    pg.on("pageerror", lambda e: console.write(f"pageerror: {e}\n"))
    pg.set_viewport_size(LARGE)
    set_number(pg, "L_c: slots committed by the search", 2)
    set_number(pg, "C: candidates to collect", 3)
    set_number(pg, "Max iterations", 20)
    set_number(pg, "K1: tokens kept per masked slot", 4)
    wait_idle(pg)

    # a live run, phase by phase; the tree is drawn in the page and updated in place
    for name in ["Start", "Root evaluation", "Selection · iteration 1",
                 "Expansion · iteration 1"]:
        click(pg, "Next phase")
        phase_is(pg, name)
        wait_idle(pg)
    first = tree_drawn(pg)
    shot(pg, "1-live-expansion-1440")
    pg.evaluate("() => globalThis.__medalTreeNetwork.moveTo({scale: 1.7})")
    click(pg, "Next phase")
    phase_is(pg, "Simulation · iteration 1")
    wait_idle(pg)
    assert tree_drawn(pg) > first
    assert scale(pg) == pytest.approx(1.7), "the zoom was reset by a step"
    pg.evaluate("() => globalThis.__medalTreeNetwork.fit()")
    shot(pg, "2-live-simulation-1440")
    press(pg, "ArrowRight")                               # keyboard stepping
    phase_is(pg, "Backpropagation · iteration 1")
    wait_idle(pg)
    press(pg, "ArrowLeft")
    phase_is(pg, "Simulation · iteration 1")
    wait_idle(pg)
    press(pg, "ArrowRight")
    phase_is(pg, "Backpropagation · iteration 1")
    wait_idle(pg)

    # a node click opens it in the inspector, its slots framed in the order strip
    tree_drawn(pg)
    pg.locator(TREE).scroll_into_view_if_needed()
    pg.wait_for_timeout(300)
    x, y = node_point(pg, 1)
    pg.mouse.click(x, y)
    expect(pg.get_by_text("Node 1:", exact=False)).to_be_visible(timeout=30_000)
    expect(pg.get_by_role("tab", name="Inspector", exact=True)).to_have_attribute(
        "aria-selected", "true")
    framed = pg.get_by_role("tabpanel", name="Inspector").locator('[data-highlight="1"]')
    expect(framed.first).to_be_visible()
    shot(pg, "3-node-click-inspector-1440")

    # page switches keep the run, its position and every setting
    pg.get_by_role("link", name="How MEDAL works").click()
    expect(pg.get_by_role("heading", name="1. Confidence-adjusted score")).to_be_visible(
        timeout=30_000)
    pg.get_by_role("link", name="Run", exact=True).click()
    phase_is(pg, "Backpropagation · iteration 1")
    wait_idle(pg)
    for label, value in [("L_c: slots committed by the search", "2"),
                         ("C: candidates to collect", "3"), ("Max iterations", "20"),
                         ("K1: tokens kept per masked slot", "4")]:
        expect(pg.get_by_label(label, exact=True)).to_have_value(value)
    # the model picker (the operator's list) still shows the model of the run
    expect(pg.get_by_role("combobox", name="Model", exact=True)).to_have_value("builtin:countdown")

    # to the end, download (named after the run), then replay the file phase by phase
    click(pg, "Run to end")
    phase_is(pg, "Finished", timeout=180_000)
    wait_idle(pg)
    # a trace file made beside the app (the random stand-in model), replayed phase by phase
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from medal.trace import dumps
    from viz_support import make_trace
    saved = tmp_path / "lecture-trace.json"
    saved.write_text(dumps(make_trace(lc=2, candidates=3, k1=4, max_iterations=20)))
    pg.get_by_text("Uploaded trace", exact=True).click()
    wait_idle(pg)
    pg.locator('[data-testid="stFileUploader"] input[type="file"]').set_input_files(str(saved))
    phase_is(pg, "Finished")
    wait_idle(pg)
    click(pg, "Start of run")
    phase_is(pg, "Start")
    wait_idle(pg)
    for name in ["Root evaluation", "Selection · iteration 1", "Expansion · iteration 1",
                 "Simulation · iteration 1", "Backpropagation · iteration 1",
                 "Selection · iteration 2"]:
        press(pg, "ArrowRight")
        phase_is(pg, name)
        wait_idle(pg)
    expect(pg.get_by_text("last step:", exact=False)).to_have_count(0)
    pg.set_viewport_size(SMALL)
    press(pg, "ArrowRight")
    phase_is(pg, "Expansion · iteration 2")
    wait_idle(pg)
    tree_drawn(pg)
    shot(pg, "4-replay-expansion-1024")

    # page switch in the uploaded-trace mode: the trace and its position stay
    pg.get_by_role("link", name="How MEDAL works").click()
    expect(pg.get_by_role("heading", name="1. Confidence-adjusted score")).to_be_visible(
        timeout=30_000)
    pg.get_by_role("link", name="Run", exact=True).click()
    phase_is(pg, "Expansion · iteration 2")
    wait_idle(pg)

    # play, then pause
    click(pg, "Play")
    phase_is(pg, "Backpropagation · iteration 2", timeout=30_000)
    click(pg, "Pause")
    wait_idle(pg)

    # presenter mode: no sidebar, large type, keys still step
    pg.get_by_text("Presenter mode", exact=True).click()
    wait_idle(pg)
    expect(pg.locator('section[data-testid="stSidebar"]')).to_be_hidden()
    press(pg, "ArrowLeft")
    wait_idle(pg)
    tree_drawn(pg)
    shot(pg, "5-presenter-1024")
    pg.set_viewport_size(LARGE)
    wait_idle(pg)
    shot(pg, "6-presenter-1440")
