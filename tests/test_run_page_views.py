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
    """One click opens the example as the source. (Its views -- phase header, candidates,
    heatmap -- are drawn by the browser viewer since issue 18: tests/e2e/test_viewer.py
    checks them at every position.)"""
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    assert at.radio(key="w_source").value == "Live run"
    next(b for b in at.button if b.label == example.title).click().run()
    assert not at.exception and not at.error
    assert at.radio(key="w_source").value == "Example"
    assert at.session_state["example_name"] == example.name
    assert any(example.title in s.value for s in at.sidebar.success)


def test_benchmark_page_opens_the_shipped_results():
    """Issue 18: the Benchmark page is not empty on arrival; it opens the built-in models'
    shipped results file until a visitor uploads one."""
    at = AppTest.from_file(str(ROOT / "pages" / "benchmark.py"), default_timeout=60)
    at.run()
    assert not at.exception and not at.error
    tables = " ".join(d.value.to_string() for d in at.dataframe)
    assert "greedy" in tables and "medal" in tables
