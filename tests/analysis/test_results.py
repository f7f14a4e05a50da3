"""The Benchmark page's reading of a ``medal bench`` results file: validation, the table,
the Pareto frontier -- on a real (small) benchmark of the built-in Sudoku model."""
from __future__ import annotations

import copy
import re
import json

import pytest

from medal import bench
from medal.config import GenerationConfig
from medal.models import load_model
from medal.tasks import SUDOKU
from medal.views.results import (ResultsError, frontier, frontier_figure, loads_results,
                               summary_rows)


@pytest.fixture(scope="module")
def doc():
    problems = SUDOKU.generate(6, seed=11)
    cfg = GenerationConfig()
    strategies = ["greedy", "medal", "bst5"]
    records = bench.bench(load_model("builtin:sudoku"), "sudoku", problems, strategies, cfg,
                          progress=False)
    return json.loads(json.dumps(bench.results_document(
        records, strategies, "sudoku", cfg, "builtin:sudoku", "generated")))


def test_reads_a_bench_file(doc):
    assert loads_results(json.dumps(doc).encode()) == doc
    rows = summary_rows(doc)
    assert [r["strategy"] for r in rows] == ["greedy", "medal", "bst5"]
    for r in rows:
        m = doc["summary"][r["strategy"]]
        assert r["problems"] == 6 and r["correct"] == m["correct"]
        assert r["accuracy"] == f"{m['accuracy']:.1%}" and "–" in r["95% interval"]
        assert None not in r.values()
    assert rows[1]["MCTS iterations"] != "—" and rows[0]["MCTS iterations"] == "—"


def test_frontier(doc):
    front = frontier(doc)
    s = doc["summary"]
    assert front and front[0] == min(s, key=lambda k: (s[k]["mean_sequence_forwards"],
                                                       -s[k]["accuracy"]))
    # nothing off the frontier is both cheaper-or-equal and more accurate than a point on it
    for name in front:
        assert not any(s[o]["mean_sequence_forwards"] <= s[name]["mean_sequence_forwards"]
                       and s[o]["accuracy"] > s[name]["accuracy"] for o in s)
    synthetic = copy.deepcopy(doc)
    synthetic["summary"] = {
        "cheap": dict(s["greedy"], mean_sequence_forwards=10, accuracy=0.2),
        "dominated": dict(s["greedy"], mean_sequence_forwards=20, accuracy=0.1),
        "better": dict(s["greedy"], mean_sequence_forwards=40, accuracy=0.5)}
    assert frontier(synthetic) == ["cheap", "better"]
    fig = frontier_figure(synthetic)
    assert list(fig.data[0].text) == ["cheap", "dominated", "better"]
    assert list(fig.data[1].x) == [10, 40]
    assert frontier_figure(doc, "mean_forwards").data


def test_frontier_points_are_never_hidden_and_error_bars_have_a_colour():
    """Issue 28 #7: greedy (on the frontier) and random (off it) sit at one point of the
    shipped results, and random's marker was drawn over greedy's; the error bars were
    given the markers' colour list, which plotly.js refuses (black bars)."""
    from pathlib import Path
    doc = loads_results((Path(__file__).resolve().parents[2] / "medal" / "assets"
                         / "bench-countdown.json").read_bytes())
    s = doc["summary"]
    assert (s["greedy"]["mean_sequence_forwards"], s["greedy"]["accuracy"]) == \
        (s["random"]["mean_sequence_forwards"], s["random"]["accuracy"])
    fig = frontier_figure(doc)
    pts = fig.data[0]
    names = list(pts.text)
    on = set(frontier(doc))
    assert "greedy" in on and "random" not in on
    for k, n in enumerate(names):
        if n in on:
            assert pts.marker.symbol[k] == "circle"
        else:      # a ring, larger than any frontier dot: what lies under it shows
            assert pts.marker.symbol[k] == "circle-open"
            assert pts.marker.size[k] > max(pts.marker.size[j] for j, m in enumerate(names)
                                            if m in on)
    colour = pts.error_y.color
    assert isinstance(colour, str) and re.fullmatch(r"#[0-9a-f]{6}", colour), colour


@pytest.mark.parametrize("change, message", [
    (lambda d: d.update(format="medal-trace"), "not a MEDAL benchmark results file"),
    (lambda d: d.update(version=7), "version 7"),
    (lambda d: d.update(summary={}), "no \"summary\""),
    (lambda d: d["summary"]["greedy"].update(accuracy=1.5), "accuracy must lie in [0, 1]"),
    (lambda d: d["summary"]["medal"].pop("mean_forwards"), "summary/medal/mean_forwards"),
    (lambda d: d["summary"]["greedy"].update(ci95="high"), "ci95"),
])
def test_bad_files_say_what_is_wrong(doc, change, message):
    bad = copy.deepcopy(doc)
    change(bad)
    with pytest.raises(ResultsError, match=None) as err:
        loads_results(json.dumps(bad))
    assert message in str(err.value)


def test_not_json_and_too_big():
    with pytest.raises(ResultsError, match="not valid JSON"):
        loads_results(b"{nope")
    with pytest.raises(ResultsError, match="the limit is"):
        loads_results(b"{}" + b" " * 2048, max_bytes=1024)


def test_readme_states_the_results_size_limit_the_code_has():
    """Issue 28 #7: the README said 50 MB; the code refuses a results file over 20 MiB."""
    from pathlib import Path
    from medal.views.results import MAX_RESULTS_BYTES
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    para = readme[readme.index("**Benchmark**"):][:600]
    assert f"at most {MAX_RESULTS_BYTES / 2**20:g} MiB" in para and "50 MB" not in para
