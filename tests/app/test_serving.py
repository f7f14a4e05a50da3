"""The operator's settings for a served app (medal/serving.py), and the page's use of
them: remote code and the model list are the operator's, never a visitor's (issue 9)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from medal import serving
from medal.config import GenerationConfig
from medal.errors import InputError, ModelLoadError
from medal.models import builtin_names, load_model

ROOT = Path(__file__).resolve().parents[2]


def test_defaults_are_safe():
    s = serving.parse_settings(environ={}, argv=[])
    assert s.trust_remote_code is False
    assert s.models == tuple(f"builtin:{n}" for n in builtin_names())
    assert s.limits == serving.DEFAULT_LIMITS
    assert "not allowed" in s.remote_code_line()


def test_environment_and_flags_set_them():
    env = {"MEDAL_TRUST_REMOTE_CODE": "1", "MEDAL_MODELS": "llada:/srv/llada@abc, mlm:bert",
           "MEDAL_MAX_ITERATIONS": "50"}
    s = serving.parse_settings(environ=env, argv=[])
    assert s.trust_remote_code and "allowed by the server's operator" in s.remote_code_line()
    assert s.models[-2:] == ("llada:/srv/llada@abc", "mlm:bert")
    assert s.limits["max_iterations"] == 50
    flags = serving.parse_settings(environ={}, argv=["--trust-remote-code", "--models",
                                                     "dream:/x", "--max-samples", "3"])
    assert flags.trust_remote_code and flags.models[-1] == "dream:/x"
    assert flags.limits["max_samples"] == 3


@pytest.mark.parametrize("env", [{"MEDAL_MAX_GEN_LENGTH": "0"}, {"MEDAL_MAX_SAMPLES": "lots"},
                                 {"MEDAL_MAX_ITERATIONS": "10000000"}])
def test_bad_operator_limits_are_refused(env):
    with pytest.raises(InputError, match="MEDAL_MAX"):
        serving.parse_settings(environ=env, argv=[])


def test_remote_code_comes_only_from_the_operator():
    plain = serving.parse_settings(environ={}, argv=[])
    assert "trust_remote_code" not in serving.load_options(plain, "auto", "auto")
    trusted = serving.parse_settings(environ={"MEDAL_TRUST_REMOTE_CODE": "yes"}, argv=[])
    assert serving.load_options(trusted, "cpu", "auto") == {"trust_remote_code": True,
                                                            "device": "cpu"}


@pytest.mark.parametrize("spec", ["llada:/some/dir", "builtin:/etc", "builtin:../../..",
                                  "mlm:/root", "mlm:/nonexistent", "builtin:countdown/../x",
                                  "", "llada-8b-instruct"])
def test_specs_off_the_list_are_refused_before_any_loading(spec):
    """Failure 2: a visitor could load any folder (and its code) by typing a spec."""
    s = serving.parse_settings(environ={}, argv=[])
    calls = []
    with pytest.raises(ModelLoadError) as info:
        serving.load_allowed_model(s, spec, {}, loader=lambda *a, **k: calls.append(a))
    assert not calls
    assert "not available on this server" in str(info.value)


def test_missing_and_forbidden_read_the_same():
    """Failure 2: mlm:/root and mlm:/nonexistent gave different errors (which folders
    exist). Allowed-but-failing and not-allowed now give one message."""
    s = serving.parse_settings(environ={"MEDAL_MODELS": "mlm:/root,mlm:/nonexistent"}, argv=[])
    messages = []
    for spec in ("mlm:/root", "mlm:/nonexistent", "mlm:/etc"):
        with pytest.raises(ModelLoadError) as info:
            serving.load_allowed_model(s, spec, {})
        messages.append(str(info.value).replace(spec, "SPEC"))
    assert len(set(messages)) == 1, messages


def test_builtin_names_are_never_paths():
    for name in ("/etc", "../../..", "countdown/../countdown", "./countdown"):
        with pytest.raises(ModelLoadError, match="no built-in model"):
            load_model(f"builtin:{name}")


def test_allowed_builtin_loads():
    s = serving.parse_settings(environ={}, argv=[])
    model = serving.load_allowed_model(s, s.models[0], {})
    assert model.name == s.models[0]


def test_operator_limits_refuse_big_requests():
    s = serving.parse_settings(environ={"MEDAL_MAX_ITERATIONS": "20"}, argv=[])
    serving.check_limits(s, GenerationConfig(max_iterations=20))
    with pytest.raises(InputError, match="limit of 20"):
        serving.check_limits(s, GenerationConfig(max_iterations=21))
    with pytest.raises(InputError, match="limit of 256"):
        serving.check_limits(s, GenerationConfig(gen_length=1000, steps=1000, max_iterations=5))
    with pytest.raises(InputError, match="samples"):
        serving.check_limits(s, GenerationConfig(samples=11, max_iterations=5))
    serving.check_problems(s, 50)
    with pytest.raises(InputError, match="problems"):
        serving.check_problems(s, 51)


def test_keep_on_machine_answers_streamlits_ip_lookups_locally(monkeypatch):
    from streamlit import net_util
    monkeypatch.setattr(net_util, "_external_ip", None)
    monkeypatch.setattr(net_util, "_internal_ip", None)
    monkeypatch.setattr(net_util, "_make_blocking_http_get",
                        lambda *a, **k: pytest.fail("asked the internet for the IP"))
    serving.keep_on_machine()
    assert net_util.get_external_ip() == "127.0.0.1"
    assert net_util.get_internal_ip() == "127.0.0.1"


def test_streamlit_config_keeps_errors_and_requests_in():
    import tomllib
    cfg = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert cfg["client"]["showErrorDetails"] == "none"
    assert cfg["server"]["address"] not in ("", "0.0.0.0", "::")
    assert cfg["browser"]["gatherUsageStats"] is False


def test_markdown_escaping_shows_text_as_typed():
    """Failure 5: strategy, answer and search.why were rendered as Markdown."""
    from medal.views.safe import md
    assert md("14*3*2") == "14\\*3\\*2"
    hostile = "![x](http://127.0.0.1:9/a.png) [link](http://evil) <img src=x> :red[x] $x$"
    out = md(hostile)
    import re
    # every character that could open a link, image, tag, directive or formula is escaped
    assert not re.search(r"(?<!\\)[\[\]<>!$*`]", out), out
    assert not re.search(r"(?<!\\):\S", out), out
    assert md("gen_length must be 1..4096: got 5") == "gen_length must be 1..4096: got 5"


def test_page_shows_trace_strings_as_text(monkeypatch):
    """An uploaded trace's strategy, answer and why reach the page escaped."""
    pytest.importorskip("streamlit")
    from streamlit.testing.v1 import AppTest

    from medal.trace import dumps
    from viz_support import make_trace
    trace = make_trace(lc=2, candidates=2)
    trace["result"]["answer"] = "14*3*2"
    trace["search"]["why"] = "see ![pic](http://127.0.0.1:9/x.png) and [here](http://evil)"
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
    at.radio(key="w_source").set_value("Uploaded trace").run()
    at.file_uploader(key="w_upload").set_value(("t.json", dumps(trace).encode(),
                                                "application/json")).run()
    assert not at.exception
    shown = [e.value for e in (*at.markdown, *at.caption, *at.info, *at.success)]
    # the answer and the why are drawn by the browser viewer (textContent, never HTML:
    # tests/views/test_export.py and tests/browser/test_no_links.py); nothing of them reaches the
    # page as Markdown
    assert not any("![pic](" in v or "[here](" in v for v in shown)


def test_page_refuses_a_run_beyond_the_operators_limit(monkeypatch):
    pytest.importorskip("streamlit")

    from viz_support import RANDOM_SPEC, app_test, patch_load_model
    patch_load_model(monkeypatch)
    monkeypatch.setenv("MEDAL_MODELS", RANDOM_SPEC)
    monkeypatch.setenv("MEDAL_MAX_ITERATIONS", "5")
    at = app_test(ROOT / "app.py").run()
    at.selectbox(key="w_model").set_value(RANDOM_SPEC)
    at.number_input(key="w_max_iterations").set_value(12)
    from viz_support import Press   # the viewer's Next phase, as the page receives it
    Press(at, "Next phase").click().run()
    assert not at.exception
    assert any("limit of 5" in e.value for e in at.error)
    assert "run" not in at.session_state


def test_medal_app_warms_the_run_page_while_the_server_starts(monkeypatch):
    """Issue 18: the server's first page took ~5 s to its tree (the Run page's imports,
    torch among them, and the examples' frames), later ones ~2 s. ``medal app`` starts
    that work in the background before Streamlit's server, so a visitor arriving a few
    seconds later waits for none of it."""
    import threading

    import medal.app
    import medal.cli
    import medal.viewer.examples_cache
    from streamlit.web import cli as st_cli
    from medal.examples import list_examples
    started = []
    monkeypatch.setattr(sys, "argv", list(sys.argv))       # medal app sets Streamlit's
    monkeypatch.setattr(st_cli, "main", lambda: started.append(list(sys.argv)) or 0)
    monkeypatch.setattr(medal.viewer.warm_examples, "started", False, raising=False)
    monkeypatch.setattr(medal.viewer.examples_cache, "_EXAMPLES", {})
    assert medal.cli.main(["app", "--port", "8599"]) == 0
    assert started and started[0][:2] == ["streamlit", "run"]
    for name in ("medal-warm-app", "medal-warm-examples"):
        for t in [t for t in threading.enumerate() if t.name == name]:
            t.join(timeout=300)
    assert set(medal.viewer.examples_cache._EXAMPLES) == {e.name for e in list_examples()}
