"""The Benchmark page's gate, fuzzed as the trace gate is (issue 21): ``loads_results``
either raises :class:`ResultsError` or returns a document that the page's functions draw
-- with every string from the file shown as text (no HTML in plot labels).

The issue's hostile files are kept (gzipped) in tests/data/hostile/. CI runs a fixed set
of examples (derandomized); MEDAL_FUZZ_EXAMPLES=N runs a longer campaign (CI runs one after
the suite: .ci/run).
"""
from __future__ import annotations

import copy
import gzip
import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from medal.bench import results_document
from medal.config import GenerationConfig
from medal.views.results import (COSTS, ResultsError, frontier, frontier_figure, loads_results,
                               summary_rows)
from medal.views.safe import md

HOSTILE = Path(__file__).resolve().parents[1] / "data" / "hostile"
FUZZ_EXAMPLES = int(os.environ.get("MEDAL_FUZZ_EXAMPLES", "100"))
FUZZ_FIXED = "MEDAL_FUZZ_EXAMPLES" not in os.environ


def real_doc() -> dict:
    records = []
    for s, (right, seqs) in {"greedy": (2, 28), "bst5": (3, 140), "medal": (4, 40)}.items():
        for i in range(6):
            records.append({"strategy": s, "index": i, "problem": {"numbers": [4, 18, 13],
                                                                    "target": 20},
                            "verified": i < right, "forwards": seqs, "sequence_forwards": seqs,
                            "cache_hits": 1, "seconds": 0.1})
    doc = results_document(records, ["greedy", "bst5", "medal"], "countdown",
                           GenerationConfig(), "builtin:countdown", "generated")
    return json.loads(json.dumps(doc))


def draw(doc: dict) -> None:
    """What the Benchmark page computes from an accepted file; labels must be text."""
    rows = summary_rows(doc)
    json.dumps(rows, allow_nan=False)
    for cost in COSTS:
        if all(isinstance(m.get(cost), (int, float)) for m in doc["summary"].values()):
            fig = frontier_figure(doc, cost)
            for label in list(fig.data[0].text or []) + [fig.layout.title.text or ""]:
                assert "<" not in label, label
            fig.to_json()
            frontier(doc, cost)
    for k, v in doc.items():
        md(f"{k}: {v}")


def gate_then_draw(raw) -> str:
    try:
        doc = loads_results(raw)
    except ResultsError as exc:
        assert str(exc) and len(str(exc)) < 1000
        return "refused"
    draw(doc)
    return "drawn"


@pytest.mark.parametrize("name", ["results_5000_digits.json", "results_huge_ci.json",
                                  "results_markdown_in_error.json"])
def test_the_issues_hostile_files_are_refused(name):
    assert gate_then_draw(gzip.decompress((HOSTILE / f"{name}.gz").read_bytes())) == "refused"


def test_deep_nesting_is_refused():
    assert gate_then_draw(b"[" * 100_000 + b"]" * 100_000) == "refused"
    doc = real_doc()
    x = {}
    for _ in range(40):
        x = {"a": x}
    doc["config"] = x
    with pytest.raises(ResultsError, match="nested more than"):
        loads_results(json.dumps(doc))


def test_html_in_names_is_drawn_as_text():
    raw = gzip.decompress((HOSTILE / "results_links_in_plot.json.gz").read_bytes())
    doc = loads_results(raw)
    fig = frontier_figure(doc)
    assert fig.data[0].text[0].startswith("&lt;a href=") and "<a" not in fig.layout.title.text


def test_duplicate_keys_nan_and_overflow_are_refused():
    text = json.dumps(real_doc())
    for bad in (text.replace('"version": 1', '"version": 1, "version": 1'),
                text.replace('"accuracy": 0.5', '"accuracy": NaN', 1),
                text.replace('"n": 6', '"n": 1e308', 1),
                text.replace('"n": 6', '"n": 18446744073709551616', 1)):
        assert bad != text
        assert gate_then_draw(bad) == "refused"


def test_the_real_file_is_read():
    assert gate_then_draw(json.dumps(real_doc())) == "drawn"


VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-2 ** 70, max_value=2 ** 70),
    st.floats(allow_nan=False), st.text(max_size=30),
    st.sampled_from(["<a href='http://x.example'>x</a>", "![i](http://x.example/i.gif)",
                     "www.x.example", "a@b.example", "https://x.example", "$x$", "**b**"]),
    st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=5), st.integers(),
                                                         max_size=3))


def _paths(doc) -> list[list]:
    out, stack = [], [(doc, [])]
    while stack:
        v, p = stack.pop()
        if p:
            out.append(p)
        if isinstance(v, dict):
            stack.extend((x, p + [k]) for k, x in v.items())
        elif isinstance(v, list):
            stack.extend((x, p + [i]) for i, x in enumerate(v[:3]))
    return sorted(out, key=str)


BASE = real_doc()
PATHS = _paths(BASE)


@settings(max_examples=FUZZ_EXAMPLES, derandomize=FUZZ_FIXED, deadline=None,
          suppress_health_check=list(HealthCheck))
@given(st.lists(st.tuples(st.sampled_from(PATHS), VALUES, st.booleans()), min_size=1,
                max_size=4))
def test_mutated_files_are_refused_or_drawn(changes):
    doc = copy.deepcopy(BASE)
    for path, value, rename in changes:
        target = doc
        try:
            for key in path[:-1]:
                target = target[key]
            if rename and isinstance(target, dict) and isinstance(value, str):
                target[value] = target.pop(path[-1])   # e.g. a strategy renamed to HTML
            else:
                target[path[-1]] = value
        except (KeyError, IndexError, TypeError):
            continue
    gate_then_draw(json.dumps(doc))


@settings(max_examples=FUZZ_EXAMPLES, derandomize=FUZZ_FIXED, deadline=None,
          suppress_health_check=list(HealthCheck))
@given(st.binary(max_size=200) | st.text(max_size=200))
def test_any_bytes_are_refused_or_drawn(raw):
    gate_then_draw(raw)
