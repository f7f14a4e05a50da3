"""The Streamlit pages, driven headless with AppTest (no browser): buttons, phases,
errors, uploads, the teaching page."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402

from medal.trace import dumps  # noqa: E402

from medal.views.phases import current_phase  # noqa: E402
from medal.timeline import positions  # noqa: E402
from viz_support import (RANDOM_SPEC, Press, app_test, make_trace,  # noqa: E402
                         patch_load_model, upload)

APP = str(Path(__file__).resolve().parents[2] / "app.py")
TIMEOUT = 120


#: the operator's model list for these tests (medal/serving.py): the random stand-in
OPERATOR_MODELS = ",".join([RANDOM_SPEC, RANDOM_SPEC + "-trusted", RANDOM_SPEC + "-plain",
                            "builtin:no-such-model"])


@pytest.fixture
def app(monkeypatch):
    patch_load_model(monkeypatch)
    monkeypatch.setenv("MEDAL_MODELS", OPERATOR_MODELS)
    at = app_test(APP, timeout=TIMEOUT)
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
    return Press(at, label)


def head_trace(at):
    """The trace the page holds: the live run's, the uploaded one or the example."""
    s = at.session_state
    if "run" in s and s["w_source"] == "Live run":
        return s["run"].trace
    if s["w_source"] == "Uploaded trace" and "uploaded" in s:
        return s["uploaded"][1]
    return None


def phase(at) -> str:
    """The phase at the head of what the page holds (the viewer opens there)."""
    info = current_phase(head_trace(at))
    return info.title + (f" · iteration {info.iteration}" if info.iteration else "")


def open_expander(at, key: str):
    """Open the page's lazily drawn expander ``key`` (its content is drawn only while it is
    open) and rerun, as a click on its label does."""
    at.session_state[key] = True
    return at.run()


def markdown_text(at) -> str:
    return "\n".join(m.value for m in at.markdown)


def test_page_loads_with_every_control(app):
    # the run's controls are the viewer's (medal/viewer); the page says where to start
    assert any("open an example run" in i.value for i in app.info)
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
    assert app.session_state["events"] == 6          # one engine step per press
    button(app, "Next iteration").click().run()
    assert phase(app) == "Backpropagation · iteration 2"
    button(app, "Run to end").click().run()
    assert not app.exception and not app.error
    assert phase(app) == "Finished"
    assert not app.session_state["running"]
    assert app.session_state["run"].done
    # the frames the viewer holds: one per position of the finished run
    frames = app.session_state["live_frames"]
    assert len(frames.enc.frames) == len(positions(app.session_state["run"].trace))
    exp = next(e for e in app.expander if e.label.startswith("Trace file"))
    assert not exp.get("download_button")        # drawn only while it is open
    open_expander(app, "open_trace_files")
    exp = next(e for e in app.expander if e.label.startswith("Trace file"))
    assert exp.get("download_button")
    button(app, "Reset").click().run()
    assert "run" not in app.session_state
    assert any("open an example run" in i.value for i in app.info)


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
    at = app_test(APP, timeout=TIMEOUT).run()
    assert not [c for c in at.checkbox if "trust" in (c.key or "") or "remote" in c.label.lower()]
    assert any("Remote model code: not allowed" in c.value for c in at.caption)
    configure(at)
    # specs not loaded before in this process: the model cache would answer otherwise
    at.selectbox(key="w_model").set_value(RANDOM_SPEC + "-plain").run()
    button(at, "Next phase").click().run()
    assert calls[-1] == (RANDOM_SPEC + "-plain", {})

    monkeypatch.setenv("MEDAL_TRUST_REMOTE_CODE", "1")
    at = app_test(APP, timeout=TIMEOUT).run()
    assert any("Remote model code: allowed" in c.value for c in at.caption)
    configure(at)
    at.selectbox(key="w_model").set_value(RANDOM_SPEC + "-trusted").run()
    button(at, "Next phase").click().run()
    assert calls[-1] == (RANDOM_SPEC + "-trusted", {"trust_remote_code": True})


@pytest.mark.parametrize("content, message", [
    (b"{not json", "not valid JSON"),
    (b'{"hello": 1}', "not a MEDAL trace"),
    (json.dumps({"format": "medal-trace", "version": 99}).encode(), "version 99"),
])
def test_bad_uploads_show_a_clear_error(app, content, message):
    upload(app, "bad.json", content)
    errors = [e.value for e in app.error]
    assert any(message in e and "bad.json" in e for e in errors), errors


def test_oversized_upload_is_refused(app, monkeypatch):
    # the limit is the operator's setting (issue 21: one limit, one exact message)
    monkeypatch.setenv("MEDAL_MAX_TRACE_MB", "1")
    upload(app, "big.json", b" " * 1_500_000)
    assert any("1,500,000 bytes; the limit is 1,048,576 bytes (1 MiB)" in e.value
               for e in app.error), [e.value for e in app.error]


@pytest.mark.parametrize("packed", [False, True], ids=["plain", "packed-2"])
def test_uploaded_trace_is_replayed_without_a_model(app, packed):
    trace = make_trace(lc=2, candidates=2)
    upload(app, "run.json", dumps(trace, packed=packed).encode())  # as --trace writes it
    assert not app.error
    if packed:
        assert app.session_state["uploaded"][1] == json.loads(dumps(trace))
    assert phase(app) == "Finished"
    # the viewer was sent one frame per position of the trace
    sender = app.session_state["viewer_sender"]
    key = next(k for k in sender.sent if k.startswith("upload-"))
    assert sender.sent[key][1] == len(positions(trace))
    assert "run" not in app.session_state           # nothing was run, no model loaded


def test_teaching_page_reads_the_open_example(app):
    """Issue 18: "How MEDAL works" shows the numbers of the example open on the Run page."""
    from medal.examples import list_examples, load_example
    ex = list_examples()[0]
    app.session_state["w_source"] = "Example"
    app.session_state["example_name"] = ex.name
    app.run()
    app.switch_page("pages/how_medal_works.py").run()
    assert not app.exception
    prompt = load_example(ex)["run"]["prompt"]
    assert any(prompt in c.value for c in app.caption)
    assert any(r"\mathrm{UCB} = " in x.value for x in app.latex)


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
    shown = settings_shown(app)          # (fresh widget keys after a page switch)
    assert shown["w_model"] == RANDOM_SPEC
    assert shown["w_lc"] == 2


def test_teaching_page_without_a_run():
    at = AppTest.from_file(str(Path(APP).parent / "pages" / "how_medal_works.py"),
                           default_timeout=TIMEOUT).run()
    assert not at.exception
    assert any("Open an example" in i.value for i in at.info)
    assert len(at.latex) >= 8


# ---------------------------------------------------------------------- issue 10 (part A)
SETTING_WIDGETS = ("number_input", "checkbox", "selectbox", "text_input", "text_area", "radio",
                   "toggle", "select_slider", "slider")


def settings_shown(at) -> dict:
    """Every setting drawn, by name (a key's "~generation" suffix -- fresh widget keys
    when the settings come back, issue 18 #1 -- left out)."""
    return {w.key.split("~")[0]: w.value for kind in SETTING_WIDGETS for w in getattr(at, kind)
            if w.key and w.key.startswith("w_") and w.key not in ("w_position", "w_inspect")}


def all_settings(at) -> dict:
    return settings_shown(at)


def test_state_survives_page_switches_in_every_mode(app):
    """Issue 10 #1: every parameter and the loaded trace survive page switches, in the
    live-run mode and in the uploaded-trace mode (and switching between them)."""
    configure(app, k1=4, k2=3, candidates=3, gamma=2.5, c=0.3, max_iterations=9,
              temperature=0.5, seed=7, decompose=True).run()
    app.text_area(key="w_prompt").set_value("Use 3, 7, 12 to make 33.").run()
    want = settings_shown(app)
    assert want["w_model"] == RANDOM_SPEC and want["w_k1"] == 4 and want["w_c"] == 0.3
    assert len(want) > 25
    button(app, "Next phase").click().run()
    for _ in range(2):                       # live mode -> teaching page -> back
        app.switch_page("pages/how_medal_works.py").run()
        app.switch_page("pages/run.py").run()
        assert not app.exception
        assert all_settings(app) == want
        assert phase(app) == "Start"          # the run is still there
    trace = make_trace(lc=2, candidates=2)
    upload(app, "run.json", dumps(trace).encode())
    assert phase(app) == "Finished"
    app.switch_page("pages/how_medal_works.py").run()
    app.switch_page("pages/run.py").run()
    assert not app.exception
    assert app.radio(key="w_source").value == "Uploaded trace"
    assert phase(app) == "Finished", "the uploaded trace was lost"
    assert any("Loaded run.json" in s.value for s in app.success)
    app.radio(key="w_source").set_value("Live run").run()
    assert all_settings(app) == want
    assert phase(app) == "Start"
    app.radio(key="w_source").set_value("Uploaded trace").run()
    assert phase(app) == "Finished"


def shown_without_state(w):
    """What a browser that builds widget ``w`` from this run's message alone shows: the
    value the message sets, or else the widget's default (a browser keeps no value for a
    key it has not drawn)."""
    p = w.proto
    if getattr(p, "set_value", False):          # this run's message sets the value
        return wanted(w)

    def default():
        try:
            present = p.HasField("default")
        except ValueError:                        # a field that is always present
            present = True
        return p.default if present else None
    return ("index" if w.type in ("selectbox", "radio") else "value", default())


def wanted(w):
    if w.type in ("selectbox", "radio"):
        return ("index", w.index)
    return ("value", None if w.value is None else w.value)


def test_every_setting_reaches_a_browser_in_every_run(app):
    """Issue 18: "N subtasks" came back as 1 after Uploaded trace -> Benchmark -> Live run.
    A value written into the session state reaches the browser only with the first run that
    draws its widget; when another run followed at once (the viewer's own request), the
    browser built the widget from the later run, which carried only the widget's default --
    a number input's minimum. So every run must carry every setting's value."""
    configure(app, k1=4, rollout_steps=2, temperature=0.5, eb_threshold=0.25, samples=3,
              n_subtasks=5, seed=7, decompose=True, simulation="sample").run()
    app.selectbox(key="w_strategy").set_value("medal-no-mcts").run()
    want = settings_shown(app)
    for via in ("Uploaded trace", "Example"):
        for page in ("pages/benchmark.py", "pages/how_medal_works.py"):
            app.radio(key="w_source").set_value(via).run()
            app.switch_page(page).run()
            app.switch_page("pages/run.py").run()
            app.radio(key="w_source").set_value("Live run").run()
            for _ in range(2):                # the run that draws them, and the next one
                assert not app.exception
                assert settings_shown(app) == want
                lost = {w.key: (wanted(w), shown_without_state(w))
                        for kind in SETTING_WIDGETS for w in getattr(app, kind)
                        if w.key and w.key.startswith("w_")
                        and shown_without_state(w) != wanted(w)}
                assert lost == {}, f"{via} -> {page}: {lost}"
                app.run()


def test_live_run_steps_one_engine_step_per_request(app):
    """A request names how many positions the viewer wants: presses that arrived while the
    server was busy are one request for several steps, and none is lost."""
    configure(app).run()
    for _ in range(6):
        button(app, "Next phase").click().run()
    assert phase(app) == "Backpropagation · iteration 1"
    assert any(c.value.startswith("last step on the server:") for c in app.caption)
    assert app.session_state["events"] == 6
    run = app.session_state["run"]
    app.session_state["pending_request"] = {"op": "step", "want": len(positions(run.trace)) + 3,
                                            "seq": 99}
    app.run()
    assert len(positions(run.trace)) == 9 and app.session_state["events"] == 9


def test_replay_hides_the_step_time_and_shows_the_prompt_and_parameters(app):
    trace = make_trace(lc=2, candidates=2, seed=5)
    upload(app, "run.json", dumps(trace).encode())
    assert not any(c.value.startswith("last step:") for c in app.caption)
    assert not app.code                          # the expander's content: drawn once open
    open_expander(app, "open_run_parameters")
    codes = [c.value for c in app.code]
    assert trace["run"]["prompt"] in codes
    exp = next(e for e in app.expander if e.label == "Prompt and parameters of this run")
    table = exp.dataframe[0].value
    assert dict(zip(table["parameter"], table["value"]))["seed"] == "5"


def test_tables_show_missing_values_one_way(app):
    configure(app).run()
    button(app, "Run to end").click().run()
    open_expander(app, "open_run_parameters")
    frames = [f for f in app.dataframe]
    assert frames and all(f.proto.placeholder == "—" for f in frames)


def test_malformed_prompt_is_flagged_before_running(app):
    app.text_area(key="w_prompt").set_value("make twenty please").run()
    assert any("not a countdown problem" in w.value for w in app.sidebar.warning)
    assert "run" not in app.session_state
    app.text_area(key="w_prompt").set_value("Use 4, 18, 13 to make 20.").run()
    assert not any("not a countdown problem" in w.value for w in app.sidebar.warning)


def test_k2_above_the_possible_is_reported(app, monkeypatch):
    # an operator who allows K2 up to the engine's range (issue 21: the default is 20)
    monkeypatch.setenv("MEDAL_MAX_K2", "1000")
    # within the engine's range but more actions than K1 x open slots: a warning
    configure(app, k2=500).run()
    button(app, "Next phase").click().run()
    assert any("K2 = 500 is more than" in w.value for w in app.warning)
    # beyond the engine's range (issue 9): refused with the range, no run
    configure(app, k2=100000).run()
    button(app, "Reset").click().run()
    button(app, "Next phase").click().run()
    assert any("k2 must be between 1 and 1000" in e.value for e in app.error)


def test_k1_k2_c_lc_beyond_the_operators_limits_are_refused(app):
    """Issue 21: K1, K2, C and L_c have operator limits (defaults 20, 20, 20, 64): a
    visitor's K2 = 500 is refused with the limit and the setting that raises it."""
    for name, value, env in (("k2", 500, "MEDAL_MAX_K2"), ("k1", 1000, "MEDAL_MAX_K1"),
                             ("candidates", 1000, "MEDAL_MAX_CANDIDATES")):
        configure(app, **{name: value}).run()
        button(app, "Reset").click().run()
        button(app, "Next phase").click().run()
        errors = [e.value for e in app.error]
        assert any("above this server's limit" in e and env in e for e in errors), errors
        assert "run" not in app.session_state
        configure(app, **{name: 3}).run()


def test_a_fresh_live_run_starts_on_the_first_request(app):
    """Play, Next phase or an animated Run to end on a run not yet started: the first
    request starts the run and shows its start."""
    configure(app).run()
    button(app, "Play").click().run()
    assert not app.exception
    assert phase(app) == "Start"


def viewer_message(at) -> tuple[int, dict]:
    """(size of the viewer component's own code, its data) in the latest run's message."""
    proto = at.get("bidi_component")[0].proto
    assert proto.component_name.endswith("medal_viewer")
    return len(proto.js_content), json.loads(proto.json)


def test_the_viewer_library_travels_once_per_session(app):
    """Issue 18 (live step p90 <= 250 ms): Streamlit sends a component's inline code with
    every run of the page, and the viewer's was vis-network and viewer.js (~0.5 MB): every
    live step and every example click carried it again. Now the component's code is the
    small adapter, and the library goes once per session, in the first run's data."""
    code, data = viewer_message(app)
    assert code < 20_000
    assert "MedalViewer" in data.get("lib", "") and "vis" in data["lib"]
    configure(app).run()
    for _ in range(3):
        button(app, "Next phase").click().run()
        code, data = viewer_message(app)
        assert code < 20_000 and "lib" not in data
        assert data["key"] and data["frames"]          # the new frames still come
    # a browser that never got it (its run was superseded) asks again: all of it comes
    app.session_state["viewer_sender"].need({"lib": True, "key": None, "pool": 0, "frames": 0})
    app.run()
    code, data = viewer_message(app)
    assert "MedalViewer" in data.get("lib", "")
    assert data["pool_from"] == 0 and data["frames_from"] == 0


def compare_message(at) -> tuple[int, dict]:
    """(size of the Compare component's own code, its data) in the latest run's message."""
    proto = next(c.proto for c in at.get("bidi_component")
                 if c.proto.component_name.endswith("medal_compare"))
    return len(proto.js_content), json.loads(proto.json)


def test_the_compare_view_sends_its_library_and_pair_once(app):
    """Issue 18: the Compare view's component carried vis-network and viewer.js as its
    inline code (~0.5 MB with every run of the page) and both runs' whole frames with every
    run. Now it shares the viewer's once-per-session library and sends a pair once; it asks
    again (``need``) when it lacks either."""
    assert "MedalViewer" in viewer_message(app)[1].get("lib", "")   # the first run's viewer
    app.radio(key="w_source").set_value("Compare").run()
    assert not app.exception
    code, data = compare_message(app)
    assert code < 20_000
    # the page already holds the library (the viewer evaluated it): only the pair comes
    assert "lib" not in data and data["frames_sent"] and data["a"]["frames"]
    key = data["key"]
    app.run()                                    # any rerun of the same pair
    code, data = compare_message(app)
    assert code < 20_000 and "lib" not in data
    assert data == {"key": key, "frames_sent": False}
    # another pair: its frames come (the library does not)
    other = next(o for o in app.selectbox(key="cmp_b").options if o != app.selectbox(key="cmp_b").value)
    app.selectbox(key="cmp_b").set_value(other).run()
    code, data = compare_message(app)
    assert "lib" not in data and data["frames_sent"] and data["key"] != key
    # the view lost its pair (say, it was mounted afresh): it asks, and gets it whole
    app.session_state["viewer_sender"].need({"lib": False, "compare": data["key"]})
    app.run()
    assert compare_message(app)[1]["frames_sent"]
    # a browser with no library at all: library and pair again
    app.session_state["viewer_sender"].need({"lib": True, "compare": data["key"]})
    app.run()
    code, data = compare_message(app)
    assert "MedalViewer" in data.get("lib", "") and data["frames_sent"]


def test_no_full_garbage_collection_after_every_run():
    """Issue 18: Streamlit collects all garbage after every script run by default; with a
    model, a run's search and its frames in memory that took 150-250 ms and held the GIL,
    so the messages of the run that had just ended (a live step's new frames) waited for
    it. Off in both places the app's options are set (the figure: scripts/bench_viewer.py)."""
    import tomllib

    from medal.serving import STREAMLIT_OPTIONS
    assert STREAMLIT_OPTIONS["runner.postScriptGC"] == "false"
    config = tomllib.loads((Path(APP).parent / ".streamlit" / "config.toml").read_text())
    assert config["runner"]["postScriptGC"] is False


def test_example_prompts_follow_the_templates_the_model_read(monkeypatch):
    """Issue 38 #5: a model trained on both prompt templates (builtin:<task>-2t) is offered
    the examples in both; the task's own model, in template 0 only. A change of task keeps
    the kind of model. A prompt in a template the model never read is refused before any
    step, with the model that reads it named (and the prompt kept)."""
    from medal.tasks import COUNTDOWN
    monkeypatch.setenv("MEDAL_MODELS", "builtin:countdown,builtin:countdown-2t,"
                                       "builtin:sudoku,builtin:sudoku-2t")
    at = app_test(APP, timeout=TIMEOUT)
    at.run()
    own = at.selectbox(key="w_example").options
    assert own == [COUNTDOWN.templated_prompt(p, 0) for p in COUNTDOWN.example_problems]
    at.selectbox(key="w_model").set_value("builtin:countdown-2t").run()
    both = at.selectbox(key="w_example").options
    assert both == own + [COUNTDOWN.templated_prompt(p, 1) for p in COUNTDOWN.example_problems]
    at.selectbox(key="w_task").set_value("sudoku").run()
    assert at.selectbox(key="w_model").value == "builtin:sudoku-2t"
    assert any(e.startswith("Fill ") for e in at.selectbox(key="w_example").options)
    at.selectbox(key="w_task").set_value("countdown").run()
    at.selectbox(key="w_model").set_value("builtin:countdown").run()
    typed = COUNTDOWN.templated_prompt(COUNTDOWN.example_problems[0], 1)
    at.text_area(key="w_prompt").set_value(typed).run()
    assert not any("not a countdown problem" in w.value for w in at.sidebar.warning)
    button(at, "Next phase").click().run()
    assert not at.exception
    # (the page escapes Markdown in the message: what it shows is the plain text)
    shown = [e.value.replace("\\", "") for e in at.error]
    assert any("template 0 only" in e and "run it with builtin:countdown-2t" in e for e in shown)
    assert "run" not in at.session_state
    assert at.text_area(key="w_prompt").value == typed
