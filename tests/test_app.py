"""The Streamlit pages, driven headless with AppTest (no browser): buttons, phases,
errors, uploads, the teaching page."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402

import medal.trace  # noqa: E402
from medal.trace import dumps  # noqa: E402

from viz_support import RANDOM_SPEC, make_trace, patch_load_model  # noqa: E402

APP = str(Path(__file__).resolve().parents[1] / "app.py")
TIMEOUT = 120


#: the operator's model list for these tests (medal/serving.py): the random stand-in
OPERATOR_MODELS = ",".join([RANDOM_SPEC, RANDOM_SPEC + "-trusted", RANDOM_SPEC + "-plain",
                            "builtin:no-such-model"])


@pytest.fixture
def app(monkeypatch):
    patch_load_model(monkeypatch)
    monkeypatch.setenv("MEDAL_MODELS", OPERATOR_MODELS)
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.run()
    assert not at.exception
    return at


def configure(at, **params):
    """The random stand-in model and a short search (C=2 candidates of L_c=2)."""
    at.selectbox(key="w_model").set_value(RANDOM_SPEC)
    values = {"lc": 2, "candidates": 2, "max_iterations": 12, **params}
    for name, value in values.items():
        widget = next(w for w in (*at.number_input, *at.checkbox, *at.selectbox)
                      if w.key == f"w_{name}")
        widget.set_value(value)
    return at


def button(at, label):
    return next(b for b in at.button if b.label == label)


def phase(at) -> str:
    heads = [m.value for m in at.markdown if m.value.startswith("#### Phase:")]
    assert len(heads) == 1, heads
    return heads[0].removeprefix("#### Phase: ")


def markdown_text(at) -> str:
    return "\n".join(m.value for m in at.markdown)


def test_page_loads_with_every_control(app):
    labels = {b.label for b in app.button}
    assert {"Next phase", "Next iteration", "Run to end", "Stop", "Reset"} <= labels
    assert button(app, "Stop").disabled
    keys = {w.key for w in (*app.number_input, *app.checkbox, *app.selectbox, *app.text_input)}
    for name in ("k1", "k2", "lc", "candidates", "gamma", "c", "steps", "block_length",
                 "decompose", "n_subtasks", "seed", "max_iterations", "temperature"):
        assert f"w_{name}" in keys
    assert app.selectbox(key="w_model").value == "builtin:countdown"
    assert "w_trust" not in keys and "w_revision" not in keys  # the operator's, not a widget
    examples = app.selectbox(key="w_example").options
    assert len(examples) >= 3 and app.text_area(key="w_prompt").value == examples[0]
    assert "medal" in app.selectbox(key="w_strategy").options
    assert not app.error


def test_example_prompt_fills_the_prompt(app):
    second = app.selectbox(key="w_example").options[1]
    app.selectbox(key="w_example").set_value(second).run()
    assert app.text_area(key="w_prompt").value == second


def test_changing_task_changes_prompt_and_builtin_model(app):
    from medal.tasks import TASKS
    if len(TASKS) < 2:
        pytest.skip("one task only")
    other = next(name for name in TASKS if name != app.selectbox(key="w_task").value)
    app.selectbox(key="w_task").set_value(other).run()
    task = TASKS[other]
    assert app.text_area(key="w_prompt").value == task.format_prompt(task.example_problems[0])
    assert app.selectbox(key="w_model").value == f"builtin:{other}"
    assert not app.exception


def test_search_phase_by_phase_then_to_the_end(app):
    configure(app).run()
    seen = []
    for _ in range(6):
        button(app, "Next phase").click().run()
        assert not app.exception and not app.error
        seen.append(phase(app))
    assert seen == ["Start", "Root evaluation", "Selection · iteration 1",
                    "Expansion · iteration 1", "Simulation · iteration 1",
                    "Backpropagation · iteration 1"]
    text = markdown_text(app)
    assert "Q = W/N" in text            # the phase is explained
    button(app, "Next iteration").click().run()
    assert phase(app) == "Backpropagation · iteration 2"
    assert len(app.tabs) == 7   # Tree, Answer, Candidates, Entropy, Order, Inspector, Trace file
    button(app, "Run to end").click().run()
    assert not app.exception and not app.error
    assert phase(app) == "Finished"
    assert button(app, "Next phase").disabled and button(app, "Stop").disabled
    assert not app.session_state["running"]
    assert app.session_state["run"].done
    assert any("candidate" in i.value.lower() or "cumulative" in i.value for i in app.info)
    assert app.get("download_button")
    # the replay slider goes back through the search
    replay = next(s for s in app.slider if s.label.startswith("Replay"))
    replay.set_value(1).run()
    assert phase(app) == "Backpropagation · iteration 1"
    button(app, "Reset").click().run()
    assert "run" not in app.session_state
    assert any("Press **Next phase**" in i.value for i in app.info)


def test_invalid_parameters_show_the_input_error(app):
    configure(app, steps=5, block_length=7).run()
    button(app, "Next phase").click().run()
    assert not app.exception
    assert any("multiple of the number of blocks" in e.value for e in app.error)
    assert "run" not in app.session_state


def test_a_failing_model_is_a_message(app, monkeypatch):
    configure(app).run()
    button(app, "Next iteration").click().run()
    run = app.session_state["run"]

    def broken(ids, answer_length):
        raise RuntimeError("CUDA out of memory (simulated)")

    monkeypatch.setattr(run.model, "logits", broken)
    button(app, "Run to end").click().run()
    assert not app.exception
    assert any("The run failed" in e.value and "out of memory" in e.value for e in app.error)
    assert not app.session_state["running"]


def test_model_load_errors_are_messages(app):
    app.selectbox(key="w_model").set_value("builtin:no-such-model").run()
    button(app, "Next phase").click().run()
    assert not app.exception
    assert any("Could not load the model" in e.value and "not available" in e.value
               for e in app.error)


def test_remote_code_is_the_operators_setting(monkeypatch):
    """No widget turns remote code on; MEDAL_TRUST_REMOTE_CODE=1 when the server starts
    does, and the page says which (read-only)."""
    import medal.models
    calls = []
    patch_load_model(monkeypatch)
    monkeypatch.setenv("MEDAL_MODELS", OPERATOR_MODELS)
    inner = medal.models.load_model

    def recording(spec, **options):
        calls.append((spec, options))
        return inner(spec, **options)

    monkeypatch.setattr(medal.models, "load_model", recording)
    at = AppTest.from_file(APP, default_timeout=TIMEOUT).run()
    assert not [c for c in at.checkbox if "trust" in (c.key or "") or "remote" in c.label.lower()]
    assert any("Remote model code: not allowed" in c.value for c in at.caption)
    configure(at)
    # specs not loaded before in this process: the model cache would answer otherwise
    at.selectbox(key="w_model").set_value(RANDOM_SPEC + "-plain").run()
    button(at, "Next phase").click().run()
    assert calls[-1] == (RANDOM_SPEC + "-plain", {})

    monkeypatch.setenv("MEDAL_TRUST_REMOTE_CODE", "1")
    at = AppTest.from_file(APP, default_timeout=TIMEOUT).run()
    assert any("Remote model code: allowed" in c.value for c in at.caption)
    configure(at)
    at.selectbox(key="w_model").set_value(RANDOM_SPEC + "-trusted").run()
    button(at, "Next phase").click().run()
    assert calls[-1] == (RANDOM_SPEC + "-trusted", {"trust_remote_code": True})


def upload(at, name: str, content: bytes):
    at.radio(key="w_source").set_value("Uploaded trace").run()
    at.file_uploader(key="w_upload").set_value((name, content, "application/json")).run()
    assert not at.exception
    return at


@pytest.mark.parametrize("content, message", [
    (b"{not json", "not valid JSON"),
    (b'{"hello": 1}', "not a MEDAL trace"),
    (json.dumps({"format": "medal-trace", "version": 99}).encode(), "version 99"),
])
def test_bad_uploads_show_a_clear_error(app, content, message):
    upload(app, "bad.json", content)
    errors = [e.value for e in app.error]
    assert any(message in e and "bad.json" in e for e in errors), errors
    assert not app.tabs


def test_oversized_upload_is_refused(app, monkeypatch):
    monkeypatch.setattr(medal.trace, "MAX_TRACE_BYTES", 100)
    upload(app, "big.json", b" " * 500)
    assert any("limited to" in e.value for e in app.error)


def test_uploaded_trace_is_replayed_without_a_model(app):
    trace = make_trace(lc=2, candidates=2)
    upload(app, "run.json", dumps(trace).encode())
    assert not app.error
    assert phase(app) == "Finished"
    assert len(app.tabs) == 7   # Tree, Answer, Candidates, Entropy, Order, Inspector, Trace file
    replay = next(s for s in app.slider if s.label.startswith("Replay"))
    assert replay.max == len(trace["iterations"])
    replay.set_value(0).run()
    assert phase(app) == "Root evaluation"
    assert "run" not in app.session_state           # nothing was run, no model loaded


def test_teaching_page_shows_formulas_and_live_numbers(app):
    configure(app).run()
    button(app, "Run to end").click().run()
    assert phase(app) == "Finished"
    app.switch_page("pages/how_medal_works.py").run()
    assert not app.exception
    latex = [x.value.strip("$\n ") for x in app.latex]
    assert any(r"\sigma(\gamma" in x for x in latex)                # the formulas
    assert any(x.startswith("s = ") and "\\cdot" in x for x in latex)  # the live arithmetic
    assert any(r"\mathrm{UCB} = " in x for x in latex)
    assert any(r"r_{\mathrm{IG}} = \frac{" in x and "." in x for x in latex)
    # back on the Run page, the settings are still there
    app.switch_page("pages/run.py").run()
    assert app.selectbox(key="w_model").value == RANDOM_SPEC
    assert app.number_input(key="w_lc").value == 2


def test_teaching_page_without_a_run():
    at = AppTest.from_file(str(Path(APP).parent / "pages" / "how_medal_works.py"),
                           default_timeout=TIMEOUT).run()
    assert not at.exception
    assert any("Start a run" in i.value for i in at.info)
    assert len(at.latex) >= 8
