"""The Run page at the two screen sizes of a lecture, in Chromium (issue 10, part C).

* The tree's labels are readable at 1024x768: every label drawn inside the tree's box is
  at least ``MIN_LABEL_PX`` on screen (its vis-network font size times the view's scale),
  and no two nodes' boxes (the node and its label, from vis-network's own
  ``getBoundingBox``) overlap.
* The tree is on the first screen: on the Tree tab, without scrolling, the top of the
  tree's box is within the window and at least ``MIN_TREE_VISIBLE`` px of it show.
* "Run to end" in *animate* mode moves through the run position by position (the header
  takes several intermediate values) and ends at the end; the page stays usable.
* A prompt the task cannot read is flagged before the run; K2 above what a node can have
  is reported on the page.

Reuses ``test_browser``'s server, browser and offline guard (every request to a host that
is not local is aborted and counted; the count must stay 0). Screenshots go to
``test-artifacts/layout-*.png``.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_browser import (ARTIFACTS, browser, click, expect, offline_session,  # noqa: E402,F401
                          open_tab, phase_is, server, set_number, wait_idle)

SIZES = {"1440x900": {"width": 1440, "height": 900}, "1024x768": {"width": 1024, "height": 768}}
MIN_LABEL_PX = 12          # on-screen font size of a tree label
MIN_TREE_VISIBLE = 250     # px of the tree's box on the first screen
EXAMPLE = "Countdown: MEDAL fixes greedy's answer"
TREE = "#medal-tree"

# Every node of the drawing: its font size (vis-network's resolved options), its box (node
# and label, canvas units) and where its centre is on the screen; the view's scale; the
# tree box's place in the window.
_MEASURE = """() => {
  const net = globalThis.__medalTreeNetwork;
  const box = globalThis.__medalTreeBox.getBoundingClientRect();
  const nodes = net.body.nodeIndices.map((id) => {
    const n = net.body.nodes[id];
    const p = net.canvasToDOM({x: n.x, y: n.y});
    return {id: id, label: n.options.label || "", font: n.options.font.size,
            bb: net.getBoundingBox(id), sx: box.left + p.x, sy: box.top + p.y,
            sbottom: box.top + net.canvasToDOM({x: n.x, y: net.getBoundingBox(id).bottom}).y};
  });
  return {scale: net.getScale(), nodes: nodes,
          box: {top: box.top, left: box.left, right: box.right, bottom: box.bottom}};
}"""


@pytest.fixture(params=list(SIZES))
def sized(request, browser, server):
    context, pg, offline = offline_session(browser, server, SIZES[request.param])
    yield pg, request.param
    context.close()
    assert offline.blocked == [], f"requests left the machine: {offline.blocked}"


def tree_drawn(pg) -> None:
    box = pg.locator(TREE)
    expect(box).to_have_count(1, timeout=90_000)
    expect(box).to_have_attribute("data-drawn", __import__("re").compile(r"\d+"),
                                  timeout=60_000)


def measure(pg) -> dict:
    pg.wait_for_timeout(300)
    return pg.evaluate(_MEASURE)


def on_screen(m: dict) -> list[dict]:
    """The nodes whose centre lies inside the tree's box (what the reader sees of it)."""
    b = m["box"]
    return [n for n in m["nodes"]
            if b["left"] <= n["sx"] <= b["right"] and b["top"] <= n["sy"] <= b["bottom"]]


def check_labels(m: dict, where: str) -> None:
    seen = [n for n in on_screen(m) if n["label"]]
    assert len(seen) >= 3, f"{where}: only {len(seen)} labelled nodes in view"
    small = [(n["label"], round(n["font"] * m["scale"], 1)) for n in seen
             if n["font"] * m["scale"] < MIN_LABEL_PX]
    assert not small, (f"{where}: labels under {MIN_LABEL_PX} px on screen (scale "
                       f"{m['scale']:.2f}): {small[:6]}")


def overlaps(m: dict) -> list[tuple]:
    """Pairs of nodes whose boxes (node and label) intersect."""
    out = []
    nodes = m["nodes"]
    for i, a in enumerate(nodes):
        for b in nodes[i + 1:]:
            p, q = a["bb"], b["bb"]
            if (p["left"] < q["right"] and q["left"] < p["right"]
                    and p["top"] < q["bottom"] and q["top"] < p["bottom"]):
                out.append((a["id"], a["label"], b["id"], b["label"]))
    return out


def tree_box(pg) -> dict:
    """The tree's box in the window with the page scrolled to its top (the first screen)."""
    pg.evaluate("() => { window.scrollTo(0, 0); document.querySelectorAll('*').forEach("
                "(e) => { if (e.scrollTop) e.scrollTop = 0; }); }")
    pg.wait_for_timeout(200)
    return pg.evaluate("() => { const r = globalThis.__medalTreeBox.getBoundingClientRect();"
                       " return {top: r.top, bottom: r.bottom}; }")


def check_first_screen(pg, size: str, where: str) -> dict:
    b = tree_box(pg)
    height = SIZES[size]["height"]
    visible = min(b["bottom"], height) - b["top"]
    assert b["top"] < height and visible >= MIN_TREE_VISIBLE, (
        f"{where} at {size}: the tree's box starts at {b['top']:.0f} px; {visible:.0f} px of "
        f"it show in a {height} px window (want >= {MIN_TREE_VISIBLE})")
    return b


def check_whole_tree_on_first_screen(pg, size: str, where: str) -> None:
    """A young tree (the first simulation) shows whole on the first screen, labels with
    r_IG and completions included: a lecture at 1024x768 must not scroll to see them."""
    tree_box(pg)
    m = measure(pg)
    height = SIZES[size]["height"]
    low = [(n["label"], round(n["sbottom"])) for n in m["nodes"] if n["sbottom"] > height]
    assert not low, f"{where} at {size}: labels end below the {height} px screen: {low}"


def test_replayed_tree_is_readable_and_on_the_first_screen(sized):
    pg, size = sized
    pg.get_by_role("button", name=EXAMPLE, exact=True).click()
    phase_is(pg, "Finished")
    wait_idle(pg)
    tree_drawn(pg)
    pg.mouse.move(2, 2)
    pg.wait_for_timeout(300)
    pg.screenshot(path=str(ARTIFACTS / f"layout-example-finished-{size}.png"))
    b = check_first_screen(pg, size, "example, finished")
    m = measure(pg)
    print(f"{size}: tree top {b['top']:.0f} px, bottom {b['bottom']:.0f} px; scale "
          f"{m['scale']:.3f}; label px min "
          f"{min(n['font'] * m['scale'] for n in on_screen(m)):.1f}")
    check_labels(m, "first view of the finished example")
    assert not overlaps(m), f"overlapping nodes: {overlaps(m)[:6]}"

    # from its start, phase by phase, to the first simulation (labels with r_IG and the
    # start of the completion) and on into iteration 2
    click(pg, "Start of run")
    phase_is(pg, "Start")
    wait_idle(pg)
    for name in ["Root evaluation", "Selection · iteration 1", "Expansion · iteration 1",
                 "Simulation · iteration 1"]:
        click(pg, "Next phase")
        phase_is(pg, name)
        wait_idle(pg)
    tree_drawn(pg)
    m = measure(pg)
    check_first_screen(pg, size, "example, simulation 1")
    check_whole_tree_on_first_screen(pg, size, "example, simulation 1")
    check_labels(m, "simulation of iteration 1")
    assert not overlaps(m), f"overlapping nodes: {overlaps(m)[:6]}"
    pg.mouse.move(2, 2)
    pg.wait_for_timeout(300)
    pg.screenshot(path=str(ARTIFACTS / f"layout-example-simulation-{size}.png"))


def test_live_tree_is_on_the_first_screen(sized):
    """A live run outside presenter mode (two rows of buttons at 1024 px, the step time)."""
    pg, size = sized
    for name in ["Start", "Root evaluation", "Selection · iteration 1",
                 "Expansion · iteration 1", "Simulation · iteration 1"]:
        click(pg, "Next phase")
        phase_is(pg, name)
        wait_idle(pg)
    tree_drawn(pg)
    b = check_first_screen(pg, size, "live run, simulation 1")
    check_whole_tree_on_first_screen(pg, size, "live run, simulation 1")
    m = measure(pg)
    check_labels(m, "live simulation of iteration 1")
    assert not overlaps(m), f"overlapping nodes: {overlaps(m)[:6]}"
    print(f"{size} live: tree top {b['top']:.0f} px")
    pg.mouse.move(2, 2)
    pg.wait_for_timeout(300)
    pg.screenshot(path=str(ARTIFACTS / f"layout-live-simulation-{size}.png"))
