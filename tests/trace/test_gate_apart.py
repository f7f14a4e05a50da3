"""The gate in a child process (issue 40, item 1): the served app's uploads are checked by
:func:`medal.trace.loads_trace_apart`, whose parse and decode live and die in a fresh
process, so the server's own memory holds only what it keeps. Soak figures (50 uploads, a
server that stayed at 587 MB with the gate in its own process): docs/SERVING.md."""
from __future__ import annotations

import io
import json
import pickle
import sys
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from medal.errors import TraceError
from medal.trace import json_default, load_trace, loads_trace, loads_trace_apart, pack
from medal.trace.gate.apart import _PlainData

EXAMPLES = Path(__file__).resolve().parents[2] / "medal" / "assets" / "examples"


@pytest.fixture(scope="module")
def example_text():
    return (EXAMPLES / "countdown-large-search.json").read_text()


def _bomb(text: str, k1: int = 1000, per_slot: int = 60) -> str:
    """The issue's upload, smaller: the example declaring K1 = ``k1`` with ``per_slot``
    top entries on every masked slot."""
    t = json.loads(json.dumps(loads_trace(text), default=json_default))
    t["run"]["config"]["k1"] = k1
    p = float(np.float32(0.5 / per_slot))
    for node in t["tree"]["nodes"]:
        node["top"] = [[dict(row[j % len(row)], token=100_000 + row[j % len(row)]["token"],
                             p=p) for j in range(per_slot)] if row else row
                       for row in node["top"]]
    return json.dumps(pack(t, binary=True))


def test_the_child_returns_what_the_gate_returns(example_text):
    assert loads_trace_apart(example_text) == loads_trace(example_text)
    assert loads_trace_apart(example_text.encode()) == load_trace(
        EXAMPLES / "countdown-large-search.json")


@pytest.mark.parametrize("bad", ["{", "[]", '{"format": "medal-trace"}', "x" * 100])
def test_the_child_refuses_what_the_gate_refuses_in_its_words(bad):
    with pytest.raises(TraceError) as here:
        loads_trace(bad)
    with pytest.raises(TraceError) as apart:
        loads_trace_apart(bad)
    assert str(apart.value) == str(here.value)


def test_the_operator_limits_go_to_the_child(example_text, monkeypatch):
    """The server's K1 limit, not the child's environment's, and the size limit too."""
    bomb = _bomb(example_text, k1=40, per_slot=40)
    monkeypatch.setenv("MEDAL_MAX_K1", "1000")           # the child would inherit this
    with pytest.raises(TraceError, match="K1 is 40"):
        loads_trace_apart(bomb, max_k1=20)
    assert loads_trace_apart(bomb, max_k1=40)["run"]["config"]["k1"] == 40
    with pytest.raises(TraceError, match="the limit is 1,000 bytes"):
        loads_trace_apart(example_text, max_bytes=1000)


def test_a_refused_bomb_costs_the_server_only_its_text(example_text):
    """What the calling process allocates while a K1 bomb is checked: the text and the
    message (here ~2 x the text at most), against many times the text when the same gate
    runs in the process (it decodes up to its bound before refusing)."""
    bomb = _bomb(example_text, k1=20, per_slot=20)
    sizes = {}
    for name, gate in (("apart", loads_trace_apart), ("here", loads_trace)):
        tracemalloc.start()
        try:
            with pytest.raises(TraceError, match="K1 is 20"):
                gate(bomb, max_k1=3)
            sizes[name] = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert sizes["apart"] < 2 * len(bomb), sizes
    assert sizes["here"] > 2 * len(bomb), sizes      # the measure sees the gate's work


def test_the_answer_is_read_as_plain_data_only():
    """A pickle that names any class or function is refused, never called: even a child
    that was subverted cannot make the server run code."""
    plain = {"a": [1, 2.5, None, True, "x"], "b": {"c": (1, 2)}}
    assert _PlainData(io.BytesIO(pickle.dumps(plain))).load() == plain
    for evil in (Path("x"), print, pickle.dumps):
        with pytest.raises(TraceError, match="not plain data"):
            _PlainData(io.BytesIO(pickle.dumps(evil))).load()


def test_a_child_that_dies_is_a_clear_refusal(monkeypatch, example_text):
    monkeypatch.setattr(sys, "executable", "/bin/false")
    with pytest.raises(TraceError, match="checking the trace was stopped"):
        loads_trace_apart(example_text)
