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
    packed = trace_module.pack(json.loads(dumps(live_trace)), binary=False)     # packed-2
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
    packed = trace_module.pack(json.loads(dumps(live_trace)), binary=False)     # packed-2
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


def test_paper_settings_nodes_pack_small(tmp_path):
    """Tiny LLaDA (126,464-token vocabulary, 256 answer slots) at the paper's settings:
    packed-2 stores a node as differences from its parent, so a node costs a few KB (its
    entropies, top-k and action set), not the ~18 KB of packed-1. The full 200-iteration
    run (1,001 nodes; scripts/trace_size.py) packs to 6.8 MB: docs/REAL_MODELS.md."""
    import standins
    from medal.models import load_model
    from medal.tasks import get_task
    folder = standins.save_checkpoint(tmp_path / "llada", "llada", "native")
    model = load_model(f"llada:{folder}", device="cpu")
    config = GenerationConfig(gen_length=256, steps=256, block_length=32, lc=20, k1=3, k2=5,
                              candidates=3, max_iterations=2, seed=0)
    run = Run(model, task="countdown", problem=get_task("countdown").generate(1, seed=10_000)[0],
              strategy="medal", config=config, trace=True)
    while (event := run.step()) is not None and event.kind != "search_finished":
        pass
    plain = json.loads(dumps(run.trace))
    text = dumps(plain, packed=True)
    packed = json.loads(text)
    nodes = packed["tree"]["nodes"]
    assert len(nodes) == 11

    def per_node(p):  # below the root's children (whose parent has no completion yet)
        deep = [n for n in p["tree"]["nodes"] if n["depth"] >= 2]
        return sum(len(json.dumps(n, separators=(",", ":"))) for n in deep) / len(deep)

    assert per_node(packed) < 7_000 < 14_000 < per_node(trace_module.pack_v1(plain))
    assert loads_trace(text) == plain
    # 1,001 nodes at this rate, with the iterations' records, fit well under the limit
    assert 1001 * per_node(packed) < 0.5 * trace_module.MAX_TRACE_BYTES


def test_packed3_writes_a_nodes_figures_as_binary_arrays_exactly(live_trace):
    """packed-3 (the written form): each node's entropies and top tokens/probabilities
    are base64 arrays of int32/uint8/float32 -- smaller than packed-2's digits and read
    back bit for bit."""
    plain = json.loads(dumps(live_trace))
    text = dumps(live_trace, packed=True)
    packed = json.loads(text)
    assert packed["encoding"] == PACKED == "packed-3"
    node = next(n for n in packed["tree"]["nodes"] if n["top"])
    assert set(node["top"]) == {"bin"} and set(node["entropy"]) == {"f32b"}
    assert loads_trace(text) == plain
    packed2 = json.dumps(trace_module.pack(plain, binary=False))
    assert len(text) < 0.8 * len(packed2)


def _b64(raw: bytes) -> str:
    import base64
    return base64.b64encode(raw).decode()


def _count(node) -> int:
    """How many entropies a packed-3 node holds."""
    import base64
    return len(base64.b64decode(node["entropy"]["f32b"])) // 4


@pytest.mark.parametrize("damage, what", [
    (lambda n: n["entropy"].update(f32b=n["entropy"]["f32b"][:-8]), "27 entropies for 28"),
    # each array as long as the node's masked slots (a count that differs is refused before
    # anything is decoded: the first case)
    (lambda n: n["entropy"].update(f32b=_b64(bytes(4 * _count(n) + 1))),
     "bytes is not a whole number of float32"),
    (lambda n: n["entropy"].update(f32b="@" * len(n["entropy"]["f32b"])), "not base64"),
    (lambda n: n["entropy"].update(f32b=_b64(b"\x00\x00\xc0\x7f" + bytes(4 * _count(n) - 4))),
     "NaN"),                                                            # float32 NaN
    (lambda n: n["top"]["bin"].pop(), "bin"),
    (lambda n: n["top"]["bin"].__setitem__(3, n["top"]["bin"][3][:-8]), "probabilities"),
    (lambda n: n["top"]["bin"].__setitem__(2, 5), "base64 string"),
    (lambda n: n["top"]["bin"].__setitem__(1, "/////w=="), "4 counts for"),
    (lambda n: n["top"]["bin"].__setitem__(
        1, __import__("base64").b64encode(bytes([200]) * sum(map(bool, n["top"]["bin"][0]))
                                          ).decode()), "top tokens for one slot|counts for"),
])
def test_malformed_binary_packing_is_a_trace_error(live_trace, damage, what):
    packed = json.loads(dumps(live_trace, packed=True))
    node = next(n for n in packed["tree"]["nodes"] if n["top"] and n["entropy"])
    damage(node)
    with pytest.raises(TraceError, match=what):
        loads_trace(json.dumps(packed))
