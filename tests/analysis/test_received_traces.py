"""A received trace is data, never an instruction (issue 31): ``medal repro`` and ``medal
fork`` run only a model the user names or has here, within this machine's limits, and
refuse bad input with one error line (exit 2) before any work -- never a traceback."""
from __future__ import annotations

import copy
import json
import socket

import pytest

from medal import cli
from medal.config import GenerationConfig
from medal.engine import Run
from medal.trace import dumps, write_trace


@pytest.fixture(scope="module")
def parent(builtin_model):
    run = Run(builtin_model, problem={"numbers": [4, 18, 13], "target": 20}, strategy="medal",
              config=GenerationConfig(seed=0, max_iterations=4, candidates=2, lc=2),
              trace=True)
    run.finish()
    return json.loads(dumps(run.trace))


@pytest.fixture
def no_network_no_run(monkeypatch):
    """Any name look-up, connection or engine run fails the test."""
    import medal.engine

    def refuse(*a, **k):
        raise AssertionError("the command went on to work it should have refused")

    def offline(*a, **k):
        raise AssertionError(f"a network call: {a[:2]}")
    monkeypatch.setattr(socket, "getaddrinfo", offline)
    monkeypatch.setattr(socket.socket, "connect", offline)
    monkeypatch.setattr(medal.engine.Run, "finish", refuse)
    monkeypatch.setattr(medal.engine.Run, "__init__", refuse)


def _write(tmp_path, trace, name="t.json"):
    path = tmp_path / name
    write_trace(trace, path)
    return str(path)


def _one_error(capsys, argv, word):
    status = cli.main(argv)
    out, err = capsys.readouterr()
    lines = [line for line in err.splitlines() if line.strip()]
    assert status == 2, (status, err)
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert word.lower() in lines[0].lower(), lines[0]
    assert "Traceback" not in err


def _hub_named(parent):
    t = copy.deepcopy(parent)
    t["run"]["model"]["name"] = "mlm:evil-org/evil-model"
    return t


def _heavy(parent):
    t = copy.deepcopy(parent)
    t["run"]["config"].update(k1=1000, k2=1000, candidates=1000, max_iterations=100_000)
    return t


@pytest.mark.parametrize("command", ["repro", "fork"])
def test_a_hub_model_named_by_a_trace_is_never_fetched(tmp_path, parent, capsys, command,
                                                       no_network_no_run):
    path = _write(tmp_path, _hub_named(parent))
    argv = (["repro", path] if command == "repro" else
            ["fork", path, "--node", "0", "--action", "3:7", "--trace", str(tmp_path / "o.json")])
    _one_error(capsys, argv, "--model")
    assert not (tmp_path / "o.json").exists()


def test_a_hub_model_named_by_a_trace_runs_when_the_user_gives_a_model(tmp_path, parent,
                                                                        capsys):
    """--model SPEC: the user's choice, not the trace's (here the built-in one)."""
    path = _write(tmp_path, _hub_named(parent))
    status = cli.main(["fork", path, "--node", "0", "--action", "3:7", "--trace",
                       str(tmp_path / "o.json"), "--model", "builtin:countdown"])
    assert status == 0, capsys.readouterr().err
    assert (tmp_path / "o.json").exists()


@pytest.mark.parametrize("command", ["repro", "fork"])
def test_settings_beyond_the_limits_are_refused_before_running(tmp_path, parent, capsys,
                                                               command, no_network_no_run,
                                                               monkeypatch):
    for env in ("MEDAL_MAX_K1", "MEDAL_MAX_ITERATIONS", "MEDAL_MAX_K2", "MEDAL_MAX_CANDIDATES"):
        monkeypatch.delenv(env, raising=False)
    path = _write(tmp_path, _heavy(parent))
    argv = (["repro", path] if command == "repro" else
            ["fork", path, "--node", "0", "--action", "3:7", "--trace", str(tmp_path / "o.json")])
    _one_error(capsys, argv, "limit")


def test_the_operators_limits_let_a_heavier_trace_run(parent, monkeypatch):
    from medal.serving import check_received_config
    t = copy.deepcopy(parent)
    t["run"]["config"]["max_iterations"] = 600
    with pytest.raises(Exception, match="MEDAL_MAX_ITERATIONS"):
        check_received_config(t)
    monkeypatch.setenv("MEDAL_MAX_ITERATIONS", "1000")
    check_received_config(t)


@pytest.mark.parametrize("action, word", [("3:#²", "0-9"), ("²:5", "slot"), ("٣:5", "slot"),
                                          ("3:#", "token"), (":5", "slot")])
def test_odd_digits_in_an_action_are_one_error_line(tmp_path, parent, capsys, action, word):
    path = _write(tmp_path, parent)
    _one_error(capsys, ["fork", path, "--node", "0", "--action", action, "--trace",
                        str(tmp_path / "o.json")], word)
    assert not (tmp_path / "o.json").exists()


def test_an_unfinished_parent_is_refused_before_running(tmp_path, parent, capsys,
                                                        no_network_no_run):
    t = copy.deepcopy(parent)
    t["result"] = None
    path = _write(tmp_path, t)
    _one_error(capsys, ["fork", path, "--node", "0", "--action", "3:7", "--trace",
                        str(tmp_path / "o.json")], "did not finish")
    assert not (tmp_path / "o.json").exists()


def test_fork_in_python_refuses_an_unfinished_trace_too(parent):
    from medal.errors import InputError
    from medal.fork import fork
    t = copy.deepcopy(parent)
    t["result"] = None
    with pytest.raises(InputError, match="did not finish"):
        fork(t, node=0, actions=[(3, "7")])
