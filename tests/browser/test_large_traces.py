"""A LLaDA-sized trace in the viewer (issue 28): 256 answer slots and ~1,000 tree nodes, from
a tiny random-weight LLaDA (tests/llada_sized.py), in the HTML export at 1024x768 with
every request blocked.

* It loads, and at a sample of positions the tree is right (viewer_checks.check: the
  node cap and the folds count every node not drawn) and every node in the box is painted
  in its colour (the canvas's pixels);
* the Entropy heatmap and the Unmasking order strip are readable at 256 slots: every
  slot's cell at least 12 px wide and tall, all inside the panel (the heatmap wraps into
  bands; before, 256 cells of 16 px made an SVG 4,246 px wide in a 1,000 px column).

Stepping time at this size is the viewer benchmark's figure (scripts/bench_viewer.py
--llada), never a timed test.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]
from test_browser import ARTIFACTS, browser  # noqa: E402,F401
from test_viewer import FULL_SWEEP, open_export  # noqa: E402
from viewer_checks import MAP, check, check_map, open_offline, undrawn  # noqa: E402
from test_viewer import drawn  # noqa: E402

from medal.timeline import positions  # noqa: E402

#: positions looked at in the suite (every one under MEDAL_FULL_SWEEP=1)
SAMPLE = 16


@pytest.fixture(scope="module")
def llada_trace(tmp_path_factory):
    from llada_sized import SLOTS, llada_sized_trace
    trace = llada_sized_trace(tmp_path_factory.mktemp("llada-sized"))
    assert trace["run"]["config"]["gen_length"] == SLOTS
    assert 900 <= len(trace["tree"]["nodes"]) <= 1100
    return trace


@pytest.fixture(scope="module")
def page(browser, llada_trace, tmp_path_factory):
    ctx, pg, blocked, errors = open_export(browser, llada_trace,
                                           tmp_path_factory.mktemp("llada-page"), "1024x768")
    yield pg
    ctx.close()
    assert blocked == [] and errors == []


def test_llada_sized_tree_drawn_at_a_sample_of_positions(page, llada_trace):
    n = len(positions(llada_trace))
    step = 1 if FULL_SWEEP else max(1, n // SAMPLE)
    bad, looked = [], 0
    for i in sorted(set(range(0, n, step)) | {n - 1}):
        r = undrawn(page, i)
        check(llada_trace, i, drawn(page), "llada-sized")
        looked += r["n"]
        if r["miss"]:
            bad.append((i, r["miss"][:5]))
    assert looked > 0 and bad == [], f"nodes not painted: {bad[:6]}"
    # the tree is larger than the cap: some nodes are counted, not drawn, at the end
    assert page.evaluate("medalViewer.nodes.getIds().filter(i => typeof i === 'number').length") <= 400
    # Fit: far too wide to read whole; the map shows it, readably (issue 28)
    page.click("button.mv-fit")
    page.wait_for_function("medalViewer.root.dataset.map === 'shown'", timeout=5_000)
    m = page.evaluate(MAP, "medalViewer")
    assert check_map(m, "llada-sized, Fit") >= 20
    page.screenshot(path=str(ARTIFACTS / "e2e-llada-sized-map-1024x768.png"))
    page.keyboard.press("Escape")
    page.wait_for_function("medalViewer.root.dataset.map === 'hidden'", timeout=5_000)


CELLS = """(sel) => { const panel = [...document.querySelectorAll('.mv-panel')].find(
    p => p.style.display !== 'none' && p.getClientRects().length); const P = panel.getBoundingClientRect();
  return [...document.querySelectorAll(sel)].filter(e => e.getClientRects().length).map(e => {
    const r = e.getBoundingClientRect(); return {slot: e.dataset.slot ?? null, w: r.width, h: r.height,
      left: r.left, right: r.right, panelLeft: P.left, panelRight: P.right}; }); }"""


def _readable(cells, where):
    small = [c for c in cells if c["w"] < 12 or c["h"] < 12]
    outside = [c for c in cells if c["left"] < c["panelLeft"] - 1 or c["right"] > c["panelRight"] + 1]
    assert small == [], f"{where}: {len(small)} cells under 12 px, e.g. {small[:3]}"
    assert outside == [], f"{where}: {len(outside)} cells outside the panel, e.g. {outside[:3]}"


def test_llada_sized_heatmap_and_order_readable_at_1024(page, llada_trace):
    from llada_sized import SLOTS
    n = len(positions(llada_trace))
    page.evaluate(f"medalViewer.go({n - 1})")
    page.click("button.mv-tab:has-text('Entropy')")
    page.locator(".mv-panel[data-tab=entropy] input[type=checkbox]").check()   # all 256
    page.wait_for_timeout(300)
    cells = page.evaluate(CELLS, "svg.mv-heat rect")
    grids = 2 if llada_trace.get("comparison") else 1
    # every slot of every row of both grids (MEDAL's, greedy's), each a cell
    assert len(cells) % SLOTS == 0 and len(cells) >= SLOTS * grids, len(cells)
    page.screenshot(path=str(ARTIFACTS / "e2e-llada-sized-entropy-1024x768.png"), full_page=True)
    _readable(cells, "entropy heatmap")
    page.click("button.mv-tab:has-text('Unmasking order')")
    page.wait_for_timeout(200)
    toks = page.evaluate(CELLS, ".mv-orow .mv-ocells .mv-tok")
    assert len(toks) == SLOTS * grids
    _readable(toks, "unmasking order")
    page.screenshot(path=str(ARTIFACTS / "e2e-llada-sized-order-1024x768.png"))


#: every drawn label's box as vis-network drew it (canvas coordinates), and the pairs
#: of labels that touch
LABELS = """(v) => { const out = [], b = v.network.body.nodes, net = v.network;
  const sc = net.getScale(), vp = net.getViewPosition(), cv = net.canvas.frame.canvas;
  const W = cv.clientWidth / sc, H = cv.clientHeight / sc, L = vp.x - W / 2, T = vp.y - H / 2;
  for (const id of v.nodes.getIds()) { const n = b[id];
    if (!n || !n.labelModule || !n.labelModule.size || !n.labelModule.size.width) continue;
    if (n.x < L || n.x > L + W || n.y < T || n.y > T + H) continue;    // in the view: drawn
    const s = n.labelModule.size;
    if (Math.abs(s.left + s.width / 2 - n.x) > 1) continue;     // (a box of an earlier draw)
    out.push({id: id, l: s.left, t: s.top, r: s.left + s.width, b: s.top + s.height}); }
  const hits = [];
  for (let i = 0; i < out.length; i++) for (let j = i + 1; j < out.length; j++) {
    const a = out[i], c = out[j];
    if (a.l < c.r && c.l < a.r && a.t < c.b && c.t < a.b) hits.push([a.id, c.id]); }
  return {n: out.length, hits: hits.slice(0, 8), count: hits.length}; }"""


def test_llada_sized_labels_never_touch_and_the_header_fits(browser, llada_trace, tmp_path):
    """Issue 41 #3, at 256 slots of LLaDA's tokens: no two node labels touch (every line
    cut to fit the space between siblings, the whole token in the tooltip), at a
    selection (UCB lines), a simulation (rewards and completions) and the end; the
    legend's two ends read differently; nothing in the page is wider than the window
    (the 256-token answer is a window with 'show all')."""
    # a page of its own: the view as stepping leaves it (the shared page's Fit test
    # zooms out, where vis-network draws no labels)
    ctx, page, blocked, errors = open_export(browser, llada_trace, tmp_path, "1024x768")
    pos = positions(llada_trace)
    picks = {"selection": None, "simulation": None}
    for i, p in enumerate(pos):
        if p.kind in picks and p.iteration and p.iteration >= 100 and picks[p.kind] is None:
            picks[p.kind] = i
    seen = 0
    for where, i in list(picks.items()) + [("end", len(pos) - 1)]:
        page.evaluate(f"medalViewer.go({i})")
        page.wait_for_function("globalThis.__medalTreeDrawn", timeout=30_000)
        page.wait_for_timeout(400)
        r = page.evaluate(LABELS, page.evaluate_handle("medalViewer"))
        seen += r["n"]
        assert r["count"] == 0, f"{where} (position {i}): labels touch: {r['hits']}"
        wide = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert wide <= 0, f"{where}: the page is {wide} px wider than the window"
        page.screenshot(path=str(ARTIFACTS / f"e2e-llada-sized-labels-{where}-1024x768.png"))
    assert seen >= 10, seen             # (labels in the view: the checks looked at some)
    legend = page.inner_text(".mv-legend")
    ends = legend.split("(this run's range")[0].split()
    assert ends[0] == "Q" and ends[1] != ends[-1], legend[:120]
    ctx.close()
    assert blocked == [] and errors == []


def test_llada_sized_trace_is_written_under_the_upload_limit(llada_trace, tmp_path):
    """A 1,001-node search at 256 slots, written as a user's --trace or the app's
    download (packed-3: each node's per-slot figures as binary arrays), fits the upload
    gate's default limit and reads back exactly. In packed-2 it was 26 MB, over the
    20 MiB limit: a real LLaDA search of this size could not be uploaded."""
    from medal.trace import MAX_TRACE_BYTES, load_trace, write_trace
    from medal.trace.recorder import jsonable
    size = write_trace(llada_trace, tmp_path / "llada.json")
    assert size < MAX_TRACE_BYTES
    # jsonable: the trace as JSON holds it (tuples as lists), as json.loads(dumps()) would
    # give it, without writing and parsing 69 MB of plain JSON
    assert load_trace(tmp_path / "llada.json") == jsonable(llada_trace)


def test_a_rewritten_slot_is_shown_rewritten(browser, tmp_path):
    """Issue 39 #2 in the viewer: a slot that token editing rewrote (LLaDA2.1) is drawn
    so (a purple frame and a pen) in the unmasking order, with the token it had before in
    its tooltip; the step that rewrote it lists the edit (slot, was, now, confidence,
    threshold); the heatmap marks the rewrite. Read from the page's pixels: the edited
    cell holds the frame's purple, an unedited written cell none."""
    import io

    from PIL import Image

    import standins
    from medal.config import GenerationConfig
    from medal.engine import Run
    from medal.models import load_model
    from medal.viewer.export import write_html
    folder = standins.save_llada2(tmp_path / "llada21", "2.0", "native", seed=1, std=1.0)
    model = load_model(f"llada:{folder}", device="cpu")
    run = Run(model, task="countdown", prompt="Use 4, 18, 13 to make 20.", strategy="threshold",
              config=GenerationConfig(gen_length=16, block_length=8, threshold=0.7,
                                      edit_threshold=0.5, max_post_steps=4, decompose=False),
              trace=True)
    run.finish()
    trace = run.trace
    steps = [(i, d) for i, d in enumerate(trace["decode"]) if d.get("edits")]
    assert steps, "the run made no edit"
    final_edited = set()
    for d in trace["decode"]:
        final_edited |= {e["slot"] for e in d.get("edits") or ()}
    plain = [s for d in trace["decode"] for s in d["slots"] if s not in final_edited]
    # (a strategy without a tree: the page is ready when the viewer holds its frames)
    ctx, pg, blocked, errors = open_offline(browser, write_html(trace, tmp_path / "run.html"),
                                            {"width": 1024, "height": 768},
                                            "window.medalViewer && medalViewer.store")
    pos = positions(trace)
    last = len(pos) - 1
    pg.evaluate(f"medalViewer.go({last})")
    pg.click("button.mv-tab:has-text('Unmasking order')")
    pg.wait_for_timeout(300)
    cells = pg.locator(".mv-orow").first.locator(".mv-ocells .mv-tok")
    slot = min(final_edited)
    cell = cells.nth(slot)
    assert "mv-edited" in cell.get_attribute("class")
    assert "rewritten later (token editing): was" in cell.get_attribute("title")

    def purple(loc):
        raw = Image.open(io.BytesIO(loc.screenshot())).convert("RGB").tobytes()
        return sum(1 for r, g, b in zip(raw[0::3], raw[1::3], raw[2::3])
                   if abs(r - 0x8e) < 30 and abs(g - 0x24) < 30 and abs(b - 0xaa) < 30)
    assert purple(cell) >= 20, "the edited cell shows no purple frame"
    if plain:
        assert purple(cells.nth(plain[0])) == 0
    # the step that made an edit lists it
    i, d = steps[0]
    at = next(k for k, p in enumerate(pos) if p.kind == "decode" and p.index == i)
    pg.evaluate(f"medalViewer.go({at})")
    pg.wait_for_timeout(200)
    edits = pg.locator("table.mv-edits").inner_text()
    e = d["edits"][0]
    assert str(e["slot"]) in edits and "threshold" in edits
    # the heatmap marks the rewrite in that step's row
    pg.click("button.mv-tab:has-text('Entropy')")
    pg.wait_for_timeout(200)
    assert "✎" in pg.locator(".mv-panel[data-tab=entropy]").inner_text()
    pg.screenshot(path=str(ARTIFACTS / "e2e-edited-slot-1024x768.png"))
    ctx.close()
    assert blocked == [] and errors == []
