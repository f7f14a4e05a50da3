"""The self-contained HTML export: its timeline, its truncated traces, its escaping, and
the ``python -m medal export`` command. (Opening it in Chromium with the network
blocked: tests/browser/test_views.py.)"""
from __future__ import annotations

import base64
import copy
import gzip
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from medal.config import GenerationConfig
from medal.engine import Run
from medal.models import load_model
from medal.trace import dumps, loads_trace, write_trace
from medal.viewer import export
from medal.timeline import positions
from viz_support import export_data, states

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def trace():
    run = Run(load_model("builtin:sudoku"), task="sudoku", prompt="Sudoku ..3./3.21/.3.2/.24.",
              trace=True, compare_greedy=True, config=GenerationConfig(seed=3))
    run.finish()
    return loads_trace(dumps(run.trace))


def test_a_frame_per_timeline_position(trace):
    pos = positions(trace)
    frames = states(export.frames(trace))
    assert [f["h"]["0"]["kind"] for f in frames] == [p.kind for p in pos]
    assert frames[0]["h"]["0"]["title"] == "Start" and frames[-1]["h"]["0"]["title"] == "Finished"
    kinds = [f["h"]["0"]["kind"] for f in frames]
    for it in trace["iterations"]:
        k = it["iteration"]
        at = {f["h"]["0"]["kind"]: f for f in frames if f["h"]["0"]["iteration"] == k}
        assert set(at) == {"selection", "expansion", "simulation", "backpropagation"}
        born_before = sum(n["created_iteration"] < k for n in trace["tree"]["nodes"])
        assert at["selection"]["h"]["0"]["tree"]["total"] == born_before
        assert at["expansion"]["h"]["0"]["tree"]["total"] == (born_before
                                                              + len(it["expansion"]["children"]))
    # the candidate table appears at the choice, the greedy board with the comparison
    first_choice = kinds.index("candidate_chosen")
    assert all(not f["v"]["cands"] for f in frames[:first_choice])
    assert all(f["v"]["cands"] for f in frames[first_choice:])
    assert frames[-1]["v"]["task"].count('class="medal-board"') == 2
    assert frames[first_choice]["v"]["task"].count('class="medal-board"') == 1


def test_frames_share_what_did_not_change(trace):
    """The bundle grows with the positions, not with positions x nodes: a frame holds only
    what changed, and every distinct value is stored once."""
    bundle = export.frames(trace)
    n_nodes = len(trace["tree"]["nodes"])
    changed = sum(len(d.get("n", ())) // 2 for d in bundle["frames"])
    assert changed < 0.5 * n_nodes * len(bundle["frames"])
    pool = [json.dumps(v, sort_keys=True) for v in bundle["pool"]]
    assert len(pool) == len(set(pool))
    # every drawn node and edge carries every style field (an in-place update keeps a
    # field it is not given: the old path colour stayed on edges that left the path)
    for st in states(bundle):
        for node in st.get("n", {}).values():
            assert {"label", "shape", "size", "color", "borderWidth", "shapeProperties",
                    "font", "x", "y"} <= set(node)
            assert {"background", "border", "highlight", "hover"} <= set(node["color"])
            assert {"size", "background", "color"} <= set(node["font"])
        for edge in st.get("e", {}).values():
            assert {"color", "width", "dashes", "arrows"} <= set(edge)
            assert {"color", "highlight", "hover", "inherit", "opacity"} <= set(edge["color"])


def test_export_is_self_contained(trace):
    html = export.export_html(trace)
    assert html.startswith("<!DOCTYPE html>")
    # nothing is fetched: no external script, style sheet, image or frame
    assert not re.search(r'<(script|img|iframe|link)[^>]+(src|href)=', html)
    assert "default-src 'none'" in html          # and the page forbids any request
    assert "MedalViewer.mount" in html and "vis.Network" in html
    from medal.viewer import viewer_js
    assert viewer_js()[:2000] in html            # the package's own viewer, inlined
    assert "Plotly" not in html                  # no plotly.js (was 4.6 MB of 6.6)
    data = export_data(html)
    assert len(data["frames"]) == len(positions(trace))
    last = states(data)[-1]
    assert last["v"]["cands"] and last["v"]["task"]
    assert set(last["a"]) == {str(n["id"]) for n in trace["tree"]["nodes"]}


def test_shipped_examples_export_under_3_mb():
    from medal.examples import list_examples, load_example
    for e in list_examples():
        assert len(export.export_html(load_example(e)).encode()) <= 3_000_000, e.name


def test_every_trace_string_is_escaped(trace):
    evil = copy.deepcopy(trace)
    bad = "</script><script>alert(1)</script><img src=x onerror=alert(2)>"
    evil["run"]["prompt"] = bad
    evil["result"]["text"] = bad
    for node in evil["tree"]["nodes"]:
        if node["action"]:
            node["action"]["token_text"] = bad
        node["sequence"] = bad
    for step in evil["decode"]:
        step["token_texts"] = [bad] * len(step["token_texts"])
    evil["tree"]["nodes"][evil["search"]["winner"]]["candidate_final"]["text"] = bad
    html = export.export_html(evil)
    assert "alert(1)</script>" not in html and "<img src=x" not in html
    # the page's own script elements are the only ones
    assert html.count("</script>") == 4
    data = export_data(html)      # and the data still holds the text, intact, for textContent
    assert data["meta"]["prompt"] == bad
    # the only HTML the viewer takes as HTML (the task view) is escaped
    for st in states(data):
        assert "<script" not in (st["v"].get("task") or "") and "<img" not in (st["v"].get("task") or "")


def test_baseline_trace_exports():
    run = Run(load_model("builtin:sudoku"), task="sudoku", prompt="Sudoku ..3./3.21/.3.2/.24.",
              strategy="greedy", trace=True)
    run.finish()
    html = export.export_html(run.trace)
    data = export_data(html)
    assert all(not st.get("n") for st in states(data))
    assert len(data["frames"]) == 1 + len(run.trace["decode"]) + 1   # started, steps, finished


def test_cli_export(tmp_path, trace):
    src = tmp_path / "t.json"
    write_trace(trace, src)
    out = tmp_path / "t.html"
    proc = subprocess.run([sys.executable, "-m", "medal", "export", str(src), str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "wrote" in proc.stdout and 200_000 < out.stat().st_size < 3_000_000
    bad = subprocess.run([sys.executable, "-m", "medal", "export", str(tmp_path / "no.json"),
                          str(out)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2 and "no trace file" in bad.stderr and "Traceback" not in bad.stderr


def _long_trace(trace, extra: int) -> dict:
    """``trace`` with ``extra`` more greedy comparison steps (copies of its last ones):
    a longer timeline, everything else the same."""
    t = copy.deepcopy(trace)
    steps = t["comparison"]["steps"]
    t["comparison"]["steps"] = steps + [copy.deepcopy(steps[-1]) for _ in range(extra)]
    return t


def test_export_size_grows_linearly_with_positions(trace):
    """Issue 21: the export's data grow linearly in the number of timeline positions
    (they grew with their square: every frame carried every heatmap row so far). Sizes,
    not timings: the data for 4x the extra positions are at most ~4x larger."""
    def data_size(t):
        m = re.search(r'<script id="medal-data" type="application/gzip;base64">(.*?)</script>',
                      export.export_html(t), re.S)
        return len(gzip.decompress(base64.b64decode(m.group(1))))
    base = data_size(trace)
    small = data_size(_long_trace(trace, 50)) - base
    big = data_size(_long_trace(trace, 200)) - base
    assert 0 < small and big < 4.6 * small, (small, big)
