"""Written traces are compact (per-slot lists packed, float32 figures in float32's digits)
and read back exactly; the CLI warns when a trace outgrows the app's upload limit."""
from __future__ import annotations

import copy
import json

import pytest

from medal import trace as trace_module
from medal.cli import main
from medal.config import GenerationConfig
from medal.engine import Run
from medal.errors import TraceError
from medal.trace import PACKED, dumps, load_trace, loads_trace, write_trace

PROBLEM = {"numbers": [4, 18, 13], "target": 20}


@pytest.fixture(scope="module")
def live_trace(tiny_model):
    run = Run(tiny_model, problem=PROBLEM, strategy="medal",
              config=GenerationConfig(seed=0, lc=3), trace=True, compare_greedy=True)
    run.finish()
    return run.trace


def test_packed_trace_reads_back_as_the_plain_one(live_trace, tmp_path):
    plain = json.loads(dumps(live_trace))
    packed_text = dumps(live_trace, packed=True)
    packed = json.loads(packed_text)
    assert packed["encoding"] == PACKED and isinstance(packed["tree"]["nodes"][0]["masked"], str)
    assert loads_trace(packed_text) == plain  # every float bit for bit
    size = write_trace(live_trace, tmp_path / "t.json")
    assert size == len(packed_text.encode()) < 0.75 * len(dumps(live_trace).encode())
    assert load_trace(tmp_path / "t.json") == plain


def test_float32_figures_take_float32_digits(live_trace):
    packed = json.loads(dumps(live_trace, packed=True))
    node = next(n for n in packed["tree"]["nodes"] if n["top"])
    tokens, probs = next(iter(node["top"].values()))
    figures = probs["f32"] + node["entropy"]["f32"] + packed["decode"][0]["entropy"]["f32"]
    assert all(len(repr(p)) <= 15 for p in figures if p is not None)  # not 17-19 digits


@pytest.mark.parametrize("damage, what", [
    (lambda n, t: n.update(masked="01x" + n["masked"][3:]), "characters"),
    (lambda n, t: n["entropy"]["f32"].append(0.5), "entropies"),
    (lambda n, t: t.clear(), "KeyError"),
    (lambda n, t: n.update(top=[1, 2]), "malformed"),
    (lambda n, t: next(iter(n["top"].values()))[1]["f32"].append(0.5), "probabilities"),
    (lambda n, t: n.update(entropy={"f32": [0.5], "x": 1}), "f32"),
])
def test_malformed_packing_is_a_trace_error(live_trace, damage, what):
    packed = json.loads(dumps(live_trace, packed=True))
    node = next(n for n in packed["tree"]["nodes"] if n["top"])
    damage(node, packed["token_texts"])
    with pytest.raises(TraceError, match=what):
        loads_trace(json.dumps(packed))


def test_a_trace_pack_would_change_stays_plain(live_trace):
    odd = copy.deepcopy(json.loads(dumps(live_trace)))
    node = next(n for n in odd["tree"]["nodes"] if not all(n["masked"]))
    node["entropy"][node["masked"].index(False)] = 0.25  # an entropy on a filled slot
    assert trace_module.pack(odd) is odd
    assert loads_trace(dumps(odd, packed=True)) == odd


def test_cli_warns_when_the_trace_is_above_the_app_limit(tmp_path, monkeypatch, capsys):
    out = tmp_path / "run.json"
    monkeypatch.setattr(trace_module, "MAX_TRACE_BYTES", 1000)
    rc = main(["generate", "--problem", json.dumps(PROBLEM), "--trace", str(out),
               "--max-iterations", "3"])
    err = capsys.readouterr().err
    assert rc == 0 and out.is_file()
    assert "above the app's upload limit" in err and "--max-iterations" in err
    monkeypatch.undo()
    rc = main(["generate", "--problem", json.dumps(PROBLEM), "--trace", str(out),
               "--max-iterations", "3"])
    assert rc == 0 and "upload limit" not in capsys.readouterr().err
