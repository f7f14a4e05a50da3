"""Issue 41 #4, "a view that holds still", in Chromium: stepping forwards through every
position of the shipped large example (``countdown-large-search``: 446 nodes, 96
expansions, 437 steps), at every expansion all the new children are wholly on screen
(node and label inside the tree's box, after the step's glide), and the view moves
about once an iteration at most (96 iterations: <= 108 steps). Counted, never timed
(viewer_checks.MOVES). The sizes: the export at 1440x900 and 1024x768, and at 1000x900,
whose tree box (~970 px) is the app's at 1440x900 (the Run page's sidebar narrows it).
``python scripts/bench_view_moves.py --app`` prints the same counts for the app itself.

Before: 12, 13 and 13 of the 96 expansions had children off screen (the tidy layout of
the finished run spread the root's 5 children over 17,316 px), and the view moved at 88,
103 and ~103 steps; after (docs/UI.md), none, and 88, 100 and ~105 steps.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_browser import browser  # noqa: E402,F401
from viewer_checks import MOVES, open_offline  # noqa: E402

from medal.examples import list_examples, load_example  # noqa: E402
from medal.viewer.export import write_html  # noqa: E402

MOST = 96 + 12      # steps that move the view: about one an iteration (96), at most


@pytest.mark.parametrize("size", [(1440, 900), (1024, 768), (1000, 900)],
                         ids=["1440x900", "1024x768", "app-box-970"])
def test_every_expansion_shows_all_its_children(browser, tmp_path, size):
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
    expansions = [m[3] for m in ms if m[3] >= 0]
    moved = [m for m in ms if m[0] > 1 or abs(m[1] - 1) > 1e-3]
    print(f"{w}x{h} (tree box {box} px): {len(moved)} of {len(ms)} steps move the view; "
          f"{sum(k > 0 for k in expansions)} of {len(expansions)} expansions with children "
          f"off screen")
    assert len(expansions) == len(trace["iterations"]) == 96
    assert [k for k in expansions if k] == [], "expansions with children off screen"
    assert len(moved) <= MOST, f"the view moved at {len(moved)} of {len(ms)} steps"
    assert blocked == [] and errors == []
