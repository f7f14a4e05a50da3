"""The Run page's issue-10b blocks, headless (AppTest): an example opens in one click, its
Answer and Candidates tabs render, the heatmap padding toggle, and the Benchmark page's
empty state. (In a browser: tests/browser/test_views.py.)"""
from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402

from medal.examples import list_examples  # noqa: E402
from viz_support import app_test, show_tab  # noqa: E402

APP = str(Path(__file__).resolve().parents[2] / "app.py")
ROOT = Path(__file__).resolve().parents[2]


def _phase(at) -> str:
    heads = [m.value for m in at.markdown if m.value.startswith("#### Phase:")]
    return heads[0].removeprefix("#### Phase: ") if heads else ""


@pytest.mark.parametrize("example", list_examples(), ids=lambda e: e.name)
def test_an_example_opens_in_one_click(example):
    """One click opens the example as the source. (Its views -- phase header, candidates,
    heatmap -- are drawn by the browser viewer since issue 18: tests/browser/test_viewer.py
    checks them at every position.)"""
    at = app_test(APP)           # ?source=live: from the live run's page
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


def _setting_keys(at) -> set:
    return {w.key for w in (*at.number_input, *at.checkbox, *at.selectbox, *at.text_area)}


def test_a_new_session_opens_on_an_example_with_what_to_do_first():
    """Issue 18 (page load -> interactive tree <= 2 s, the landing says what to do first):
    the plain URL opens the first example, with a "Start here" note above it, and draws no
    settings (the ~40 setting widgets were most of the browser's time to the first tree).
    Opening another example drops the note; the settings come with Live run."""
    at = app_test(APP, source=None).run()
    assert not at.exception and not at.error and not at.warning
    assert at.radio(key="w_source").value == "Example"
    assert at.session_state["example_name"] == "countdown-medal-fixes-greedy"
    note = [i.value for i in at.info if "Start here" in i.value]
    assert note and "Next phase" in note[0] and "Live run" in note[0]
    assert "w_k1" not in _setting_keys(at) and "w_prompt" not in _setting_keys(at)
    other = list_examples()[2]
    next(b for b in at.button if b.label == other.title).click().run()
    assert at.session_state["example_name"] == other.name
    assert not any("Start here" in i.value for i in at.info)
    at.radio(key="w_source").set_value("Live run").run()
    assert {"w_k1", "w_prompt", "w_lc"} <= _setting_keys(at)
    assert any("open an example run" in i.value for i in at.info)
    # drawn for the first time after the landing, every setting has its default (issue 18 #1)
    from medal.app.controller import PARAMETERS
    widgets = {w.key: w for w in (*at.number_input, *at.checkbox, *at.selectbox)}
    for p in PARAMETERS:
        assert widgets[f"w_{p.name}"].value == p.default, p.name
    assert at.text_area(key="w_prompt").value == at.selectbox(key="w_example").options[0]


@pytest.mark.parametrize("query,source,example", [
    ({"source": "live"}, "Live run", None),
    ({"source": "Upload"}, "Uploaded trace", None),
    ({"source": "compare"}, "Compare", None),
    ({"example": "sudoku"}, "Example", "sudoku"),
    ({"source": "example", "example": "twins-medal-fixes-greedy"}, "Example",
     "twins-medal-fixes-greedy"),
])
def test_the_url_names_what_a_new_session_opens(query, source, example):
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params.update(query)
    at.run()
    assert not at.exception and not at.error and not at.warning
    assert at.radio(key="w_source").value == source
    if example:
        assert at.session_state["example_name"] == example
        assert any("Start here" in i.value for i in at.info)


@pytest.mark.parametrize("query,says,escaped", [
    ({"example": "[click](http://127.0.0.1:9/x) <b>no</b>"}, "There is no example named",
     ("\\[click\\]", "\\<b\\>")),
    ({"source": ":red[everything]"}, "Unknown source", ("\\:red\\[",)),
])
def test_a_url_naming_nothing_known_says_so_as_text_and_opens_the_default(query, says,
                                                                           escaped):
    """A link's text reaches the page only as text (no link, no markup), and the page
    still opens on the default example."""
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params.update(query)
    at.run()
    assert not at.exception
    warning = " ".join(w.value for w in at.warning)
    assert says in warning
    # the Markdown source: every character that would start a link, tag or directive is
    # escaped (medal.views.safe.md), so the browser shows the text as typed
    assert all(e in warning for e in escaped), warning
    assert at.radio(key="w_source").value == "Example"
    assert at.session_state["example_name"] == "countdown-medal-fixes-greedy"
