"""``medal.compare`` (issue 19): two runs on one timeline, without a browser (the page in
Chromium: tests/browser/test_compare.py)."""
from __future__ import annotations

import copy
import html as _html
import re

import pytest

import medal
from medal.viewer.comparison import Comparison, align
from medal.errors import InputError, TraceError
from medal.examples import list_examples, load_example
from medal.timeline import positions

EXAMPLES = list_examples()


def test_a_trace_with_itself_parts_nowhere(tmp_path):
    ex = EXAMPLES[0]
    cmp = medal.compare(ex.path, ex.path)
    assert cmp.diff.identical and cmp.part_row is None and cmp.where_they_part() is None
    assert cmp.rows == [(i, i) for i in range(len(positions(load_example(ex))))]
    assert cmp.names[0] != cmp.names[1]          # one file twice: still two names
    assert cmp.bundle()["part"] is None


def test_a_changed_decode_step_is_where_they_part():
    a = load_example(EXAMPLES[0])
    b = copy.deepcopy(a)
    k = len(b["decode"]) - 2
    b["decode"][k]["tokens"][0] += 1
    b["decode"][k]["token_texts"][0] = "?"
    cmp = medal.compare(a, b, names=("one", "two"))
    part = cmp.where_they_part()
    i, j = cmp.rows[part["row"]]
    assert positions(a)[i].kind == "decode" and positions(a)[i].index == k and i == j
    assert part["cause"] and part["a"]["tokens"] != part["b"]["tokens"]
    data = cmp.bundle()
    assert data["names"] == ["one", "two"] and data["part"]["row"] == part["row"]
    assert data["a"]["n_frames"] == len(positions(a)) == data["b"]["n_frames"]
    assert [r[0] for r in data["side"]][:3] == ["strategy", "answer", "verified"]


def test_align_keeps_equal_positions_on_one_row():
    a = positions(load_example(EXAMPLES[0]))
    b = positions(load_example(EXAMPLES[3]))         # a longer search
    rows = align(a, b)
    assert [i for i, _ in rows if i is not None] == list(range(len(a)))
    assert [j for _, j in rows if j is not None] == list(range(len(b)))
    for i, j in rows:
        if i is not None and j is not None and a[i].kind == "selection":
            assert a[i] == b[j] or a[i].kind == b[j].kind


def test_the_page_is_self_contained_and_written_atomically(tmp_path):
    cmp = medal.compare(EXAMPLES[0].path, EXAMPLES[1].path)
    path = cmp.save_html(tmp_path / "c.html")
    text = path.read_text(encoding="utf-8")
    assert "Content-Security-Policy" in text and "MedalViewer.compare" in text
    assert not re.search(r"<(script|link)[^>]+(src|href)\s*=", text, re.I)
    assert not list(tmp_path.glob(".*.part"))
    shown = cmp._repr_html_()                          # a notebook: the page in an iframe
    assert shown.startswith("<iframe") and 'sandbox="allow-scripts"' in shown
    assert _html.unescape(shown.split('srcdoc="', 1)[1].split('" style=', 1)[0]) == cmp.html()


def test_what_compare_takes():
    with pytest.raises(InputError):
        medal.compare({"not": "a trace"}, EXAMPLES[0].path)
    with pytest.raises(TraceError):
        medal.compare("/nonexistent/trace.json", EXAMPLES[0].path)
    # the module is medal.viewer.comparison: importing it never hides the function medal.compare
    assert "compare" in medal.__all__ and callable(medal.compare)
    assert isinstance(medal.compare(load_example(EXAMPLES[0]), medal.Trace(load_example(EXAMPLES[0]))),
                      Comparison)


# ---------------------------------------------------------------------- the app (AppTest)

def _whatif_page(monkeypatch, **env):
    pytest.importorskip("streamlit")
    from pathlib import Path

    from streamlit.testing.v1 import AppTest
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    root = Path(__file__).resolve().parents[2]
    at = AppTest.from_file(str(root / "app.py"), default_timeout=180).run()
    at.session_state["w_source"] = "Example"
    at.session_state["example_name"] = "countdown-medal-fixes-greedy"
    at.run()
    trace = load_example(next(e for e in EXAMPLES if e.name == "countdown-medal-fixes-greedy"))
    at.session_state["pending_request"] = {"op": "whatif", "seq": 1,
                                           "pos": len(positions(trace)) - 1,
                                           "node": trace["search"]["winner"]}
    at.run()
    assert not at.exception
    return at


def test_app_what_if_respects_the_operators_limits(monkeypatch):
    """A fork runs the parent's configuration again: beyond the operator's limits it is
    refused with the limit named, and nothing is forked."""
    at = _whatif_page(monkeypatch, MEDAL_MAX_ITERATIONS="100")
    go = [b for b in at.button if b.label == "Fork and compare"]
    assert len(go) == 1
    go[0].click().run()
    assert not at.exception
    assert any("limit of 100" in e.value for e in at.error)
    assert "forks" not in at.session_state or not at.session_state["forks"]
    assert at.session_state["w_source"] == "Example"


def test_app_what_if_form_lists_the_slots_and_tokens(monkeypatch):
    at = _whatif_page(monkeypatch)
    trace = load_example(next(e for e in EXAMPLES if e.name == "countdown-medal-fixes-greedy"))
    node = trace["tree"]["nodes"][trace["search"]["winner"]]
    masked = [i for i, m in enumerate(node["masked"]) if m]
    slots = at.multiselect[0]
    assert len(slots.options) == len(masked) and list(slots.value) == masked[:1]
    tok = [s for s in at.selectbox if s.label.startswith("Token at slot 0")]
    assert tok and len(tok[0].options) > 10            # the top tokens, then the vocabulary
    assert "p " in tok[0].options[0]                     # the node's own top token first


def test_app_what_if_token_default_is_said_and_step_probabilities_are_named(monkeypatch):
    """Issue 28 #8: the token picker preselected the 2nd-ranked token without a word; the
    decode-step form listed probabilities "at the root" as if they were the step's."""
    at = _whatif_page(monkeypatch)
    tok = [s for s in at.selectbox if s.label.startswith("Token at slot 0")][0]
    said = [c.value for c in at.caption if c.value.startswith("Preselected")]
    assert len(said) == 1 and tok.options[1].split("  #")[0] in said[0].replace("\\", "")
    assert "most likely token" in said[0]
    trace = load_example(next(e for e in EXAMPLES if e.name == "countdown-medal-fixes-greedy"))
    pos = positions(trace)
    step = next(i for i, p in enumerate(pos) if p.kind == "decode"
                and trace["decode"][p.index]["phase"] == "phase_c")
    at.session_state["pending_request"] = {"op": "whatif", "seq": 2, "pos": step, "step": True}
    at.run()
    assert not at.exception
    rec = trace["decode"][pos[step].index]
    slot = rec["slots"][0]
    # issue 41 #5: the form preselects the slot this step unmasked (it once took the
    # first masked slot), and lists this step's own probabilities (not the root's)
    assert at.multiselect[0].value == list(rec["slots"])
    tok = [s for s in at.selectbox if s.label.startswith(f"Token at slot {slot}")][0]
    from medal.fork import step_probabilities
    from medal.models import load_model
    top = step_probabilities(trace, load_model("builtin:countdown"), rec["step"], slot)
    assert tok.options[0].startswith(f"{rec['token_texts'][0]!r}  (p {top[0][1]:.3g} at this step")
    assert f"the run's, at step {rec['step']}" in tok.options[0]
    assert not [o for o in tok.options if "root" in o]
    said = [c.value for c in at.caption if c.value.startswith("Preselected")]
    assert said and "written at this very step: forcing it changes nothing" in said[0]
    # a slot the run wrote later: forcing its own token now reorders, it is no no-op
    later = next(d for d in trace["decode"] if d["phase"] == "phase_c" and d["step"] > rec["step"])
    at.multiselect[0].set_value([later["slots"][0]]).run()
    said = [c.value for c in at.caption if c.value.startswith("Preselected")]
    assert said and "changes nothing" not in said[0]
    assert (f"written at step {later['step']}: forcing it now commits it earlier" in said[0]
            or "most likely token at this step" in said[0])


def test_app_what_if_takes_any_token_of_a_large_vocabulary(monkeypatch):
    """A vocabulary too large to list (here: the limit lowered): the picker offers the top
    tokens and a text field for any other token; the fork runs and opens in Compare."""
    import medal.app.compare_view as cv
    monkeypatch.setattr(cv, "MAX_VOCAB_LISTED", 10)
    at = _whatif_page(monkeypatch)
    tok = [s for s in at.selectbox if s.label.startswith("Token at slot 0")][0]
    assert len(tok.options) <= 10
    other = [t for t in at.text_input if t.label.startswith("… or any other token at slot 0")]
    assert len(other) == 1
    other[0].input("#16").run()                   # '7'
    [b for b in at.button if b.label == "Fork and compare"][0].click().run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    forks = at.session_state["forks"]
    assert len(forks) == 1 and forks[0]["trace"]["fork"]["forced"][0]["token_id"] == 16
    assert forks[0]["label"].startswith("Fork #1: 0:7 at node")
    assert at.session_state["w_source"] == "Compare" and at.session_state["cmp_b"] == "fork:0"


def test_app_compares_the_live_run_with_an_uploaded_trace(monkeypatch):
    pytest.importorskip("streamlit")
    from pathlib import Path

    from medal.trace import dumps
    from viz_support import Press   # the viewer's controls, as the page receives them
    from viz_support import app_test
    root = Path(__file__).resolve().parents[2]
    at = app_test(root / "app.py", timeout=300).run()
    Press(at, "Run to end").click().run()
    assert at.session_state["run"].done
    at.radio(key="w_source").set_value("Uploaded trace").run()
    ex = EXAMPLES[1]
    at.file_uploader(key="w_upload").set_value(
        ("up.json", dumps(load_example(ex)).encode(), "application/json")).run()
    at.radio(key="w_source").set_value("Compare").run()
    assert not at.exception
    at.selectbox(key="cmp_a").set_value("live").run()
    at.selectbox(key="cmp_b").set_value("upload").run()
    assert not at.exception and not at.error
    assert [s.value for s in at.selectbox if s.key in ("cmp_a", "cmp_b")] == ["live", "upload"]
    assert "Uploaded trace: up.json" in at.selectbox(key="cmp_b").options


def test_app_what_if_stops_a_fork_over_the_run_budget(monkeypatch):
    """The fork is charged like a live run (app.controller.run_budget, checked between
    engine steps): over it, the fork stops with the reason, and nothing opens."""
    from medal.app import controller
    from medal.app.controller import RunBudget
    monkeypatch.setattr(controller, "run_budget",
                        lambda settings: RunBudget(cpu_seconds=0.0, memory_bytes=2 ** 40))
    at = _whatif_page(monkeypatch)
    [b for b in at.button if b.label == "Fork and compare"][0].click().run()
    assert not at.exception
    assert any("The fork was stopped" in e.value and "CPU seconds" in e.value for e in at.error)
    assert not (at.session_state["forks"] if "forks" in at.session_state else [])
    assert at.session_state["w_source"] == "Example"


@pytest.mark.parametrize("req", [{"node": 10 ** 6}, {"node": -1}, {"node": "0"}, {"node": True},
                                 {"pos": 10 ** 6, "step": True}, {"pos": "x", "step": True}])
def test_app_what_if_refuses_a_made_up_request(monkeypatch, req):
    """The request comes from the browser: a node or position that is not there is
    answered with a message, never a traceback."""
    at = _whatif_page(monkeypatch)
    at.session_state["pending_request"] = {"op": "whatif", "seq": 2, "pos": 0, **req}
    at.run()
    assert not at.exception
    assert any("Cannot fork here" in e.value for e in at.error)
