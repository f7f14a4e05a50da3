"""The self-contained HTML export: its timeline, its truncated traces, its escaping, and
the ``python -m medal export`` command. (Opening it in Chromium with the network
blocked: tests/e2e/test_views.py.)"""
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
from medal.viz import export
from medal.viz.common import main_phase

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def trace():
    run = Run(load_model("builtin:sudoku"), task="sudoku", prompt="Sudoku ..3./3.21/.3.2/.24.",
              trace=True, compare_greedy=True, config=GenerationConfig(seed=3))
    run.finish()
    return loads_trace(dumps(run.trace))


def _data(html: str) -> dict:
    m = re.search(r'<script id="medal-data" type="application/gzip;base64">(.*?)</script>',
                  html, re.S)
    return json.loads(gzip.decompress(base64.b64decode(m.group(1))))


def test_timeline_has_every_event(trace):
    positions = export.timeline(trace)
    n_it = len(trace["iterations"])
    phase_c = [s for s in trace["decode"] if s["phase"] == main_phase(trace)]
    greedy = trace["comparison"]["steps"]
    assert len(positions) == 1 + 4 * n_it + 1 + len(phase_c) + len(greedy) + 1
    assert [p.kind for p in positions[1:5]] == list(export.MCTS_PHASES)
    assert positions[-1].kind == "finished" and export.trace_at(trace, positions[-1]) is trace


def test_positions_replay_the_search_phase_by_phase(trace):
    nodes = trace["tree"]["nodes"]
    for it in trace["iterations"]:
        k = it["iteration"]
        sel = export.trace_at(trace, export.Position("selection", k))
        exp = export.trace_at(trace, export.Position("expansion", k))
        sim = export.trace_at(trace, export.Position("simulation", k))
        bp = export.trace_at(trace, export.Position("backpropagation", k))
        born_before = {n["id"] for n in nodes if n["created_iteration"] < k}
        assert {n["id"] for n in sel["tree"]["nodes"]} == born_before
        new = set(it["expansion"]["children"])
        assert {n["id"] for n in exp["tree"]["nodes"]} == born_before | new
        # expanded but not simulated: no reward yet; simulated: the recorded r_IG
        assert all(n["r_ig"] is None for n in exp["tree"]["nodes"] if n["id"] in new)
        assert all(n["r_ig"] is not None for n in sim["tree"]["nodes"] if n["id"] in new)
        # N changes only at backpropagation, to the values it recorded
        assert all(n["N"] == 0 for n in sim["tree"]["nodes"] if n["id"] in new)
        updated = {u["node"]: u["N"] for u in it["backpropagation"]["updates"]}
        assert all(n["N"] == updated[n["id"]] for n in bp["tree"]["nodes"] if n["id"] in updated)
        assert sel["iterations"][-1]["expansion"] is None and bp["iterations"][-1]["backpropagation"]
        assert sel["result"] is None and sel["search"] is None


def test_export_is_self_contained(trace):
    html = export.export_html(trace)
    assert html.startswith("<!DOCTYPE html>")
    # nothing is fetched: no external script, style sheet, image or frame
    assert not re.search(r'<(script|img|iframe|link)[^>]+(src|href)=', html)
    assert "default-src 'none'" in html          # and the page forbids any request
    assert "Plotly.react" in html and "vis.Network" in html
    assert export.plotly_js()[:2000] in html     # plotly.js inlined from the plotly package
    data = _data(html)
    assert len(data["frames"]) == len(export.timeline(trace))
    assert data["frames"][-1]["candidates"] and data["frames"][-1]["task"]
    assert set(data["inspector"]) == {str(n["id"]) for n in trace["tree"]["nodes"]}


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
    evil["search"]["candidate_scores"][0]["final"]["text"] = bad
    html = export.export_html(evil)
    assert "alert(1)</script>" not in html and "<img src=x" not in html
    # the page's own script elements are the only ones
    assert html.count("</script>") == 4
    data = _data(html)      # and the data still holds the text, intact, for textContent
    assert data["meta"]["prompt"] == bad


def test_baseline_trace_exports():
    run = Run(load_model("builtin:sudoku"), task="sudoku", prompt="Sudoku ..3./3.21/.3.2/.24.",
              strategy="greedy", trace=True)
    run.finish()
    html = export.export_html(run.trace)
    data = _data(html)
    assert all(f["tree"] is None for f in data["frames"])
    assert len(data["frames"]) == len(run.trace["decode"]) + 1


def test_cli_export(tmp_path, trace):
    src = tmp_path / "t.json"
    write_trace(trace, src)
    out = tmp_path / "t.html"
    proc = subprocess.run([sys.executable, "-m", "medal", "export", str(src), str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "wrote" in proc.stdout and out.stat().st_size > 1_000_000
    bad = subprocess.run([sys.executable, "-m", "medal", "export", str(tmp_path / "no.json"),
                          str(out)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2 and "no trace file" in bad.stderr and "Traceback" not in bad.stderr
