"""The Benchmark page's accuracy-against-cost plot keeps its point labels apart (issue 18,
item 8: "Benchmark plot labels overlap"), in Chromium: the figure the page draws
(``medal.views.results.frontier_figure``) rendered by plotly.js at the page's widths, and the
drawn labels' boxes measured. Strategies at one point (greedy and random cost the same and
often score the same) are the hard case.
"""
from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_browser import browser  # noqa: E402,F401

from medal.views.results import loads_results  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "medal" / "assets" / "bench-countdown.json"
#: plot widths: the Benchmark page's main column at 1024 and 1440 px windows
WIDTHS = (620, 1000)


def crowded() -> dict:
    """The shipped results with more strategies, several at (nearly) one point."""
    doc = json.loads(SHIPPED.read_text())
    base = doc["summary"]["greedy"]
    extra = {"entropy": (0.0, 0.005), "margin": (0.2, -0.01), "eb": (0.0, 0.0),
             "medal-no-mcts": (8.0, 0.15), "medal-margin-only": (8.0, 0.16),
             "bst5": (60.0, 0.02)}
    for name, (dc, da) in extra.items():
        m = copy.deepcopy(base)
        m["mean_sequence_forwards"] = base["mean_sequence_forwards"] + dc
        m["accuracy"] = base["accuracy"] + da
        if m.get("ci95"):
            m["ci95"] = [max(0.0, m["accuracy"] - 0.05), min(1.0, m["accuracy"] + 0.05)]
        doc["summary"][name] = m
    doc["strategies"] = list(doc["summary"])
    return doc


def drawn_label_boxes(browser, fig, width: int) -> list[dict]:  # noqa: F811
    import plotly.io as pio
    html = pio.to_html(fig, include_plotlyjs=True, full_html=True, default_width=f"{width}px",
                       default_height="460px")
    context = browser.new_context(viewport={"width": width + 40, "height": 600})
    try:
        pg = context.new_page()
        console = []
        pg.on("console", lambda m: console.append(m.text))
        pg.set_content(html)
        pg.wait_for_selector("g.textpoint text", timeout=30000)
        # issue 28 #7: the error bars took the markers' colour list: "Invalid color
        # specifier" once per bar, and black bars
        assert not [m for m in console if "Invalid color" in m], console
        return pg.eval_on_selector_all("g.textpoint text", """els => els.map(e => {
            const r = e.getBoundingClientRect();
            return {text: e.textContent, x0: r.left, y0: r.top, x1: r.right, y1: r.bottom};
        })""")
    finally:
        context.close()


def overlapping(boxes: list[dict]) -> list[tuple[str, str]]:
    out = []
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            if a["x0"] < b["x1"] and b["x0"] < a["x1"] and a["y0"] < b["y1"] and b["y0"] < a["y1"]:
                out.append((a["text"], b["text"]))
    return out


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("which", ["shipped", "crowded"])
def test_benchmark_plot_labels_do_not_overlap(browser, which, width):  # noqa: F811
    from medal.views.results import frontier_figure
    raw = SHIPPED.read_bytes() if which == "shipped" else json.dumps(crowded()).encode()
    doc = loads_results(raw)
    boxes = drawn_label_boxes(browser, frontier_figure(doc), width)
    assert len(boxes) == len(doc["summary"]), boxes
    assert all(b["x1"] > b["x0"] for b in boxes)
    assert overlapping(boxes) == [], f"{which} at {width} px: labels overlap"
