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
        assert m[4] == 0, f"iteration {p.iteration}: {m[4]} of the children out of view not named at the edge"
    moved = [m for m in ms if m[0] > 1 or abs(m[1] - 1) > 1e-3]
    print(f"{w}x{h} (tree box {box} px): {len(moved)} of {len(ms)} steps move the view; "
          f"expansions with children off screen {sorted(off)}, too wide for the box "
          f"{sorted(wide)}")
    assert sum(p.kind == "expansion" for p in at) == 96
    assert set(off) <= wide, f"children off screen that fit: {sorted(set(off) - wide)}"
    assert len(moved) < BEFORE, f"the view moved at {len(moved)} of {len(ms)} steps"
    assert blocked == [] and errors == []


#: the marks at the tree box's edge: id, side, text, rect (CSS px, the page's), whether the
#: mark is what the page shows at its centre (not covered); the boxes (node and label) of
#: the path's and the new children's nodes in view; and the tree box's rect
MARKS = """() => { const v = medalViewer, tb = v.el.treeBox.getBoundingClientRect();
  const mk = [...v.el.away.querySelectorAll('.mv-away-mark')].map(e => { const r = e.getBoundingClientRect();
    const top = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
    return {id: +e.dataset.id, side: e.dataset.side, text: e.textContent,
            rect: [r.left, r.top, r.right, r.bottom], shown: top === e}; });
  const t = (v.store.get(v.pos, 'h', '0') || {}).tree || {}, net = v.network, keys = [];
  for (const id of [...(t.path || []), ...(t.new || [])]) { const b = v.nodeBox(id); if (!b) continue;
    const a = net.canvasToDOM({x: b.left, y: b.top}), z = net.canvasToDOM({x: b.right, y: b.bottom});
    if (z.x < 0 || z.y < 0 || a.x > tb.width || a.y > tb.height) continue;
    keys.push({id: id, rect: [tb.left + a.x, tb.top + a.y, tb.left + z.x, tb.top + z.y]}); }
  return {marks: mk, keys: keys, box: [tb.left, tb.top, tb.right, tb.bottom]}; }"""

#: the ids of ``ids`` whose node box (node and label, the viewer's own measure) is not
#: wholly inside the tree's box
OUT = """(ids) => { const v = medalViewer, net = v.network, W = v.box().w, H = v.box().h;
  return ids.filter(id => { const b = v.nodeBox(id); if (!b) return true;
    const a = net.canvasToDOM({x: b.left, y: b.top}), z = net.canvasToDOM({x: b.right, y: b.bottom});
    return a.x < -1 || a.y < -1 || z.x > W + 1 || z.y > H + 1; }); }"""


def _label(pg, i: int) -> str:
    return pg.evaluate(f"String(medalViewer.nodes.get({i}).label).split('\\n').slice(0, 2).join(' ')")


@pytest.mark.parametrize("size", [(1440, 900), (1000, 900), (592, 768)],
                         ids=["1440x900", "app-box-970", "app-box-562"])
def test_children_out_of_view_are_named_at_the_edge(browser, tmp_path, size):
    """Issue 41 #4, "an expansion's children all on screen": the root of the large example
    has 5 children over 17,316 canvas px (iteration 1), #1 has 5 over 12,844 (iteration 6):
    at the smallest readable scale (0.8) no box shows such a family whole (boxes: the
    export at 1440x900, the app's at 1440x900 and 1024x768), and the view
    shows the parent and its nearest children. Each child out of view is named at the
    box's edge, on its side, uncovered, the marks apart and off the path's and the
    children's nodes and labels; a click brings that child into
    view; the marks stay through the children's simulation and go at the backpropagation."""
    ex = next(e for e in list_examples() if e.name == "countdown-large-search")
    trace = load_example(ex)
    ctx, pg, blocked, errors = open_offline(
        browser, write_html(trace, tmp_path / "run.html"), {"width": size[0], "height": size[1]},
        "window.medalViewer && globalThis.__medalTreeDrawn")
    try:
        at = {p.iteration: i for i, p in enumerate(positions(trace)) if p.kind == "expansion"}
        named = 0
        for it in (1, 6):
            i = at[it]
            kids = trace["iterations"][it - 1]["expansion"]["children"]
            for how in ("step", "jump"):            # stepping forwards onto it, and a jump
                start = i - 1 if how == "step" else i + 3       # (a jump back from later on)
                pg.evaluate(f"medalViewer.go({start})")
                pg.wait_for_function(f"medalViewer.framedAt === {start} && !medalViewer.panning")
                pg.evaluate("medalViewer.step(1)" if how == "step" else f"medalViewer.go({i})")
                pg.wait_for_function(f"medalViewer.framedAt === {i} && !medalViewer.panning")
                out = pg.evaluate(OUT, kids)
                seen = pg.evaluate(MARKS)
                assert out, f"iteration {it} ({how}): every child in view -- the case is gone"
                assert sorted(m["id"] for m in seen["marks"]) == sorted(out), (it, how, seen, out)
                bl, bt, br, bb = seen["box"]
                rects = []
                for m in seen["marks"]:
                    l, t, r, b = m["rect"]
                    assert bl - 1 <= l and r <= br + 1 and bt - 1 <= t and b <= bb + 1, (it, how, m)
                    assert m["shown"], f"iteration {it} ({how}): the mark of #{m['id']} is covered"
                    assert m["text"].endswith(_label(pg, m["id"])), (m["text"], _label(pg, m["id"]))
                    assert m["text"][0] == {"left": "←", "right": "→", "top": "↑", "bottom": "↓"}[m["side"]]
                    rects.append(m["rect"])
                for m in seen["marks"]:
                    for key in seen["keys"]:
                        p, q = m["rect"], key["rect"]
                        assert not (p[0] < q[2] and q[0] < p[2] and p[1] < q[3] and q[1] < p[3]), \
                            f"iteration {it} ({how}): the mark of #{m['id']} covers #{key['id']}"
                for a in range(len(rects)):
                    for b in range(a + 1, len(rects)):
                        p, q = rects[a], rects[b]
                        assert not (p[0] < q[2] and q[0] < p[2] and p[1] < q[3] and q[1] < p[3]), \
                            f"iteration {it} ({how}): marks overlap {p} {q}"
                named += len(out)
            # a click on the farthest child's mark brings it into view
            far = seen["marks"][-1]["id"]
            pg.click(f".mv-away-mark[data-id='{far}']")
            pg.wait_for_function("!medalViewer.panning")
            pg.wait_for_timeout(100)
            assert pg.evaluate(OUT, [far]) == [], f"iteration {it}: #{far} still out of view after its mark's click"
            # the backpropagation after the children's simulation: no new children, no marks
            j = next(j for j, p in enumerate(positions(trace)) if j > i and p.kind not in ("expansion", "simulation"))
            pg.evaluate(f"medalViewer.go({j})")
            pg.wait_for_function(f"medalViewer.framedAt === {j} && !medalViewer.panning")
            pg.wait_for_timeout(100)
            assert pg.evaluate(MARKS)["marks"] == []
        print(f"{size}: {named} children out of view named at the edge")
    finally:
        ctx.close()
    assert blocked == [] and errors == []
