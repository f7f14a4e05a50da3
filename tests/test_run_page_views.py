"""The Run page's issue-10b blocks, headless (AppTest): an example opens in one click, its
Answer and Candidates tabs render, the heatmap padding toggle, and the Benchmark page's
empty state. (In a browser: tests/e2e/test_views.py.)"""
from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402

from medal.viz.examples import list_examples  # noqa: E402
from viz_support import show_tab  # noqa: E402

APP = str(Path(__file__).resolve().parents[1] / "app.py")
ROOT = Path(__file__).resolve().parents[1]


def _phase(at) -> str:
    heads = [m.value for m in at.markdown if m.value.startswith("#### Phase:")]
    return heads[0].removeprefix("#### Phase: ") if heads else ""


@pytest.mark.parametrize("example", list_examples(), ids=lambda e: e.name)
def test_an_example_opens_in_one_click(example):
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    assert at.radio(key="w_source").value == "Live run"
    next(b for b in at.button if b.label == example.title).click().run()
    assert not at.exception and not at.error
    assert at.radio(key="w_source").value == "Example"
    assert at.session_state["example_name"] == example.name
    assert _phase(at) == "Finished"
    assert any(example.title in s.value for s in at.sidebar.success)
    # the candidate comparison: who would win by which rule, a table per candidate
    frames = [d.value for d in show_tab(at, "Candidates").dataframe]
    rules = next(f for f in frames if "would pick" in f.columns)
    assert list(rules["rule"]) == ["cumulative IG ← this run's rule", "Q (mean reward in the tree)",
                                   "the verifier"]
    table = next(f for f in frames if "final answer" in f.columns)
    assert table["final answer"].notna().all() and "None" not in set(table["final answer"])
    # the heatmap toggle exists and is off by default
    assert show_tab(at, "Entropy").toggle(key="w_padding").value is False
    at.toggle(key="w_padding").set_value(True).run()
    assert not at.exception


def test_benchmark_page_starts_empty():
    at = AppTest.from_file(str(ROOT / "pages" / "benchmark.py"), default_timeout=60)
    at.run()
    assert not at.exception
    assert any("Upload a results file" in i.value for i in at.info)
