"""Issue 41 #4, "a view that holds still", in Chromium: stepping forwards through every
position of the shipped large example (``countdown-large-search``: 446 nodes, 96
expansions, 437 steps), counted, never timed (viewer_checks.MOVES).

* The view moves at fewer steps than the export at 1024x768 did before (103; issue 41's
  target: the app at 1440x900 below that). Sizes: the export at 1440x900 and 1024x768,
  and at 1000x900, whose tree box (970 px) is the app's at 1440x900 (978 px: the Run
  page's sidebar narrows it; ``python scripts/bench_view_moves.py --app`` counts the app
  itself). Before: 88, 103 and 103 (the app) steps; after: 80, 96 and 98.
* At every expansion a new child is off screen only where the children and their labels
  are wider than the box at the smallest readable scale, 0.8: before, 12-13 of the 96
  expansions (the tidy layout of the finished run spread a node's children as wide as
  their subtrees grew); now 4, the families the layout cannot draw narrower without
  taking a child far from its own children (views/tree.py ``_squeeze``); the view then
  shows the parent and the children nearest to it.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_browser import browser  # noqa: E402,F401
from viewer_checks import MOVES, open_offline  # noqa: E402

from medal.examples import list_examples, load_example  # noqa: E402
from medal.timeline import positions  # noqa: E402
from medal.viewer.export import write_html  # noqa: E402
from medal.views.tree import layout  # noqa: E402

BEFORE = 103        # steps that moved the view, the export at 1024x768, before issue 41 #4
LABELS = 12 * 0.62 * 16 + 8     # a label's width, canvas px (the viewer's nodeBox)


#: each size steps all 437 positions in Chromium (~1 CPU-min): the README command runs the
#: app's box, the issue's target; CI's campaign step (MEDAL_FULL_SWEEP=1, .ci/run) all three
FULL_SWEEP = os.environ.get("MEDAL_FULL_SWEEP", "") not in ("", "0")
_CAMPAIGN = pytest.mark.skipif(not FULL_SWEEP, reason="the export's two sizes run under "
                                                      "MEDAL_FULL_SWEEP=1 (CI's campaign step)")


@pytest.mark.parametrize("size", [pytest.param((1440, 900), marks=_CAMPAIGN),
                                  pytest.param((1024, 768), marks=_CAMPAIGN), (1000, 900)],
                         ids=["1440x900", "1024x768", "app-box-970"])
def test_the_view_moves_less_and_shows_every_child_that_fits(browser, tmp_path, size):
    ex = next(e for e in list_examples() if e.name == "countdown-large-search")
    trace = load_example(ex)
    w, h = size
    ctx, pg, blocked, errors = open_offline(
        browser, write_html(trace, tmp_path / "run.html"), {"width": w, "height": h},
        "window.medalViewer && globalThis.__medalTreeDrawn")
    try:
        box = pg.evaluate("medalViewer.box().w")
        ms = pg.evaluate(MOVES, pg.evaluate("medalViewer.n()"))
    finally:
        ctx.close()
    # MOVES' first step is to position 2 (position 0 has no tree to move)
    at = positions(trace)[len(positions(trace)) - len(ms):]
    xy = layout(trace)
    wide, off = set(), {}
    for p, m in zip(at, ms):
        if p.kind != "expansion":
            assert m[3] == -1
            continue
        kids = trace["iterations"][p.iteration - 1]["expansion"]["children"]
        xs = [xy[k][0] for k in kids]
        if (max(xs) - min(xs) + LABELS) * 0.8 > box - 24:
            wide.add(p.iteration)
        if m[3]:
            off[p.iteration] = m[3]
    moved = [m for m in ms if m[0] > 1 or abs(m[1] - 1) > 1e-3]
    print(f"{w}x{h} (tree box {box} px): {len(moved)} of {len(ms)} steps move the view; "
          f"expansions with children off screen {sorted(off)}, too wide for the box "
          f"{sorted(wide)}")
    assert sum(p.kind == "expansion" for p in at) == 96
    assert set(off) <= wide, f"children off screen that fit: {sorted(set(off) - wide)}"
    assert len(moved) < BEFORE, f"the view moved at {len(moved)} of {len(ms)} steps"
    assert blocked == [] and errors == []
