"""The operator's settings (issue 21, "Serving"): an unknown or misspelt flag is an
error (it would leave a limit at its default), ``--address ''`` is refused (Streamlit
would bind every interface), and the new budgets parse like the other limits."""
from __future__ import annotations

import pytest

from medal import serving
from medal.cli import main
from medal.errors import InputError


@pytest.mark.parametrize("argv", [["--max-iteration", "5"], ["--bogus"], ["--max-k2"],
                                  ["--models", "x", "--trust-remote"]])
def test_unknown_operator_flags_are_an_error(argv):
    with pytest.raises(InputError, match="operator flags"):
        serving.parse_settings(environ={}, argv=argv)


def test_known_flags_and_environment():
    s = serving.parse_settings(environ={"MEDAL_MAX_K1": "7"},
                               argv=["--max-k2", "9", "--max-candidates", "4", "--max-lc", "8",
                                     "--run-cpu-seconds", "30", "--run-memory-mb", "256",
                                     "--server-memory-mb", "2048", "--max-trace-mb", "5"])
    assert (s.limits["max_k1"], s.limits["max_k2"], s.limits["max_candidates"],
            s.limits["max_lc"]) == (7, 9, 4, 8)
    assert s.max_trace_bytes == 5 * 2 ** 20
    with pytest.raises(InputError, match="MEDAL_MAX_K1"):
        serving.parse_settings(environ={"MEDAL_MAX_K1": "0"}, argv=[])


def test_medal_app_refuses_unknown_flags_and_an_empty_address(monkeypatch, capsys):
    import streamlit.web.cli as st_cli
    started = []
    monkeypatch.setattr(st_cli, "main", lambda: started.append(1) or 0)
    monkeypatch.setattr("sys.argv", ["medal"])
    assert main(["app", "--max-iteratons", "5"]) == 2
    assert "operator flags" in capsys.readouterr().err
    assert main(["app", "--address", ""]) == 2
    assert "--address" in capsys.readouterr().err
    assert main(["app", "--address", "  "]) == 2
    assert started == []


def test_a_closed_tabs_session_is_dropped_soon():
    """Streamlit keeps a disconnected session (its run, its uploads) 120 s by default."""
    from pathlib import Path
    assert serving.STREAMLIT_OPTIONS["server.disconnectedSessionTTL"] <= 10
    toml = (Path(__file__).resolve().parents[2] / ".streamlit" / "config.toml").read_text()
    assert "disconnectedSessionTTL = 10" in toml


def test_the_app_reads_flags_only_when_started_as_the_app(monkeypatch):
    """Under pytest (or a notebook) sys.argv is not the operator's: only the environment."""
    monkeypatch.setattr("sys.argv", ["pytest", "--whatever"])
    assert serving.current().limits["max_k2"] == serving.DEFAULT_LIMITS["max_k2"]
    monkeypatch.setattr("sys.argv", ["/srv/app.py", "--max-k2", "3"])
    assert serving.current().limits["max_k2"] == 3
    monkeypatch.setattr("sys.argv", ["/srv/app.py", "--max-k3", "3"])
    with pytest.raises(InputError):
        serving.current()
