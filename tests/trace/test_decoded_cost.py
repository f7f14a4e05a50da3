"""What a packed trace may decode to (issue 40): every decoded value charged at the memory
it really takes, the whole tree's per-slot lists charged before any node is decoded, and
bounds set by the operator's settings -- never raised by a field of the trace itself.

Memory is measured with tracemalloc (what Python and NumPy allocate, whatever the
machine's load): the checks count bytes and decoded nodes, never seconds.
"""
from __future__ import annotations

import base64
import copy
import json
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

import medal.trace.packing as packing
from medal.errors import TraceError
from medal.trace import load_trace, loads_trace, pack, unpack
from medal.trace.gate.parse import parse
from medal.trace.limits import (DECODED_PER_BYTE, DEFAULT_MAX_K1, FIGURE_COST, SLOT_COST,
                                TOP_COLUMN_COST, TOP_ENTRY_COST)
from work import HANG

EXAMPLES = Path(__file__).resolve().parents[2] / "medal" / "assets" / "examples"


@pytest.fixture(scope="module")
def large():
    """A shipped example (11 nodes, K1 = 3), plain; the issue's file was the 446-node one
    rewritten (countdown-large-search: the same shapes, forty times the work, the same
    figures a node: measured there too, 252.6 bytes an entry)."""
    return load_trace(EXAMPLES / "countdown-medal-fixes-greedy.json")


@pytest.fixture(scope="module")
def small():
    return load_trace(EXAMPLES / "countdown-medal-fixes-greedy.json")


def _with_rows(trace: dict, k1: int, per_slot: int) -> dict:
    """``trace`` recorded with K1 = ``k1``: ``per_slot`` top entries on every masked slot,
    their probabilities summing to 0.5, their token ids those of a large vocabulary
    (above 256: Python keeps no shared object for them, so each decoded id is its own)."""
    t = copy.deepcopy(trace)
    t["run"]["config"]["k1"] = k1
    p = float(np.float32(0.5 / max(per_slot, 1)))
    for node in t["tree"]["nodes"]:
        node["top"] = [[dict(row[j % len(row)], token=100_000 + row[j % len(row)]["token"],
                             p=p) for j in range(per_slot)] if row else row
                       for row in node["top"]]
    return t


#: run in a child process: the peak tracemalloc sees in a test process also holds what
#: other threads allocate meanwhile (pytest-xdist's channel to its controller)
_MEASURE = r"""
import json, sys, tracemalloc
import medal.trace.packing as packing
from medal.trace.gate.parse import parse
texts = json.load(open(sys.argv[1]))
budgets = []
original = packing._Budget.__init__
def init(budget, most):
    original(budget, most)
    budgets.append(budget)
packing._Budget.__init__ = init
for text in texts[0]:           # the imports and first-use allocations decoding makes, first
    packing.unpack(parse(text))
out = []
for text, bounded in texts[1:]:
    data = parse(text)
    tracemalloc.start()
    packing.unpack(data, **({} if bounded else {"max_bytes": None}))
    out.append([budgets[-1].used, tracemalloc.get_traced_memory()[1]])
    tracemalloc.stop()
    del data
print(json.dumps(out))
"""


def _measured(texts: list, bounded: bool = True, tmp=None) -> list[tuple[int, int]]:
    """[(bytes charged, tracemalloc's peak while decoding)] for packed traces' texts, in a
    fresh process (see _MEASURE)."""
    import subprocess
    import sys
    import tempfile
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump([texts] + [[t, bounded] for t in texts], f)   # (each form warmed up once)
    try:
        out = subprocess.run([sys.executable, "-c", _MEASURE, f.name], capture_output=True,
                             text=True, timeout=HANG)
    finally:
        Path(f.name).unlink()
    assert out.returncode == 0, out.stderr[-2000:]
    return [tuple(x) for x in json.loads(out.stdout)]


@pytest.fixture(scope="module")
def measured(large):
    """The example, the same with K1 = 20 and 20 top entries a masked slot (where the
    entries dominate), and the example without any top entry, each packed-2 and packed-3,
    decoded in one child process, bounded and unbounded:
    {(shape, form, bounded): (bytes charged, peak)}."""
    bare = copy.deepcopy(large)
    for node in bare["tree"]["nodes"]:
        node["top"] = [None] * len(node["top"])
    shapes = {"example": large, "k1=20 rows": _with_rows(large, 20, 20), "bare": bare}
    keys = [(shape, form) for shape in shapes for form in ("packed-2", "packed-3")]
    texts = [json.dumps(pack(shapes[s], binary=f == "packed-3")) for s, f in keys]
    out = {k + (True,): v for k, v in zip(keys, _measured(texts))}
    out.update({k + (False,): v for k, v in zip(keys, _measured(texts, bounded=False))})
    out["entries"] = sum(len(r or ()) for n in shapes["k1=20 rows"]["tree"]["nodes"]
                         for r in n["top"])
    out["slots"] = sum(len(n["masked"]) for n in bare["tree"]["nodes"])
    out["figures"] = sum(map(sum, (n["masked"] for n in bare["tree"]["nodes"])))
    out["texts"] = dict(zip(keys, texts))
    return out


@pytest.mark.parametrize("form", ["packed-2", "packed-3"])
@pytest.mark.parametrize("shape", ["example", "k1=20 rows"])
def test_decoding_is_charged_at_least_what_it_takes(measured, shape, form):
    """The budget counts what decoding builds: at least its measured peak (the charge was a
    quarter of it for top entries before: 64 bytes an entry that takes ~270), and not far
    above it (a trace that fits in memory is not refused for charges it never takes)."""
    charged, peak = measured[shape, form, True]
    assert peak <= charged <= 1.5 * peak, (charged, peak)


@pytest.mark.parametrize("form,cost", [("packed-2", TOP_ENTRY_COST),
                                       ("packed-3", TOP_COLUMN_COST)])
def test_a_top_entry_costs_what_it_is_charged(measured, form, cost):
    """TOP_ENTRY_COST is the memory of a decoded entry as a dict (packed-1 and -2),
    TOP_COLUMN_COST as columns (packed-3, issue 41: ~16 bytes against ~250): measured per
    entry on a tree whose top entries dominate (20 a masked slot), against the same tree
    without any, both decoded unbounded (nothing checked, all built)."""
    per_entry = ((measured["k1=20 rows", form, False][1]
                  - measured["bare", form, False][1]) / measured["entries"])
    assert per_entry <= cost <= 1.25 * per_entry, per_entry


def test_a_figure_and_a_slot_cost_what_they_are_charged(measured):
    """FIGURE_COST and SLOT_COST: a tree without top entries decodes to at most what its
    nodes, slots and figures are charged."""
    charged, peak = measured["bare", "packed-3", True]
    assert peak <= charged
    assert SLOT_COST * measured["slots"] + FIGURE_COST * measured["figures"] < charged


@pytest.mark.parametrize("form", ["plain", "packed-2", "packed-3"])
def test_the_trace_cannot_raise_its_own_top_bound(small, monkeypatch, form):
    """Issue 40, hole 1: a trace declaring K1 = 1000 carried 195 top entries a slot, and
    the gate took its word for it. The bound is the operator's K1 limit (MEDAL_MAX_K1,
    default 20); the trace's own K1 only lowers it."""
    monkeypatch.delenv("MEDAL_MAX_K1", raising=False)
    trace = _with_rows(small, 1000, 25)
    text = (json.dumps(trace) if form == "plain"
            else json.dumps(pack(trace, binary=form == "packed-3")))
    with pytest.raises(TraceError, match=r"tree/nodes/0/top/?\d*: 25 top tokens for one "
                                         r"slot; this machine reads at most 20 \(the "
                                         r"operator's K1 limit, MEDAL_MAX_K1; the trace's "
                                         r"K1 is 1000\)"):
        loads_trace(text)
    assert loads_trace(text, max_k1=25)["run"]["config"]["k1"] == 1000
    monkeypatch.setenv("MEDAL_MAX_K1", "25")    # the operator raises it
    loads_trace(text)
    lowered = _with_rows(small, 24, 25)         # the run's own K1 still bounds it
    text = (json.dumps(lowered) if form == "plain"
            else json.dumps(pack(lowered, binary=form == "packed-3")))
    with pytest.raises(TraceError, match="25 top tokens for one slot; the run records at "
                                         "most 24"):
        loads_trace(text)


def test_a_bad_operator_limit_is_one_line(small, monkeypatch):
    monkeypatch.setenv("MEDAL_MAX_K1", "lots")
    with pytest.raises(TraceError, match="MEDAL_MAX_K1 must be a whole number from 1 to "
                                         "1000, got 'lots'"):
        loads_trace(json.dumps(pack(small)))


def _nodes_decoded(monkeypatch) -> list:
    calls: list = []
    original = packing._unpacked_node

    def counted(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)
    monkeypatch.setattr(packing, "_unpacked_node", counted)
    return calls


def test_the_k1_1000_bomb_is_refused_before_any_node_is_decoded(large, monkeypatch):
    """The issue's 19.6 MB upload, smaller: a shipped example rewritten with K1 = 1000
    and 30 top entries a masked slot (packed-2's rows, as the issue's file). Refused at
    the first row longer than the operator allows, from the rows' lengths: no node
    decoded, a few MB allocated after parsing (it was accepted: 10.9 CPU-s, 1.9 GB)."""
    monkeypatch.delenv("MEDAL_MAX_K1", raising=False)
    data = parse(json.dumps(pack(_with_rows(large, 1000, 30), binary=False)))
    decoded = _nodes_decoded(monkeypatch)
    tracemalloc.start()
    try:
        with pytest.raises(TraceError, match="tree/nodes/0/top/0: 30 top tokens for one slot"):
            packing_validate(data)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert decoded == [] and peak < 8 * 2 ** 20, peak


def packing_validate(data):
    from medal.trace import validate_trace
    return validate_trace(data)


def test_a_tree_over_the_budget_is_refused_before_any_node_is_decoded(large, monkeypatch):
    """Rows within K1 but a tree whose entries together decode past the bound
    (DECODED_PER_BYTE bytes of memory per byte of the size limit): refused from the
    lengths, before the first node is built. (K1 = 100 with 100 entries a masked slot, which
    the operator allows here, as packed-2's rows: its nodes decode to dicts, over 16 x the
    text, past the bound of 16; packed-3's rows decode to columns, a few times their
    text, and cannot reach it.)"""
    monkeypatch.delenv("MEDAL_MAX_K1", raising=False)
    text = json.dumps(pack(_with_rows(large, 100, 100), binary=False),
                      separators=(",", ":"))          # as write_trace writes it
    data = json.loads(text)
    nodes = packing._Budget(None)
    packing._decoded_cost(data["tree"]["nodes"], packing._Limits(data, 100), nodes)
    limit = nodes.used // DECODED_PER_BYTE - 1        # too small for the nodes' lists
    assert len(text) < limit
    decoded = _nodes_decoded(monkeypatch)
    with pytest.raises(TraceError, match=r"tree/nodes/\d+: the packed trace decodes to more "
                                         r"than [\d,]+ bytes of memory"):
        loads_trace(text, max_bytes=limit, max_k1=100)
    assert decoded == []
    # the bound is what refused it: under twice the limit, the same text reads
    assert loads_trace(text, max_bytes=2 * limit, max_k1=100)["run"]["config"]["k1"] == 100


def test_a_nodes_entropy_count_is_checked_before_it_is_decoded(small, monkeypatch):
    """Issue 40: an 18.7 MB entropy array was decoded (3.5 M floats, 310 MB) before its
    count was compared with the node's masked slots."""
    packed = pack(small)
    node = packed["tree"]["nodes"][1]
    node["entropy"] = {"f32b": base64.b64encode(bytes(4 * 1_000_000)).decode()}
    data = parse(json.dumps(packed))
    decoded: list = []     # the lengths of the base64 arrays decoded
    original = packing._unb64
    monkeypatch.setattr(packing, "_unb64",
                        lambda *a, **k: decoded.append(len(a[0])) or original(*a, **k))
    tracemalloc.start()
    try:
        with pytest.raises(TraceError, match="1,000,000 entropies for 2[0-9] masked slots"):
            packing_validate(data)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert max(decoded) < 1000 and peak < 8 * 2 ** 20, (max(decoded), peak)


def test_the_default_operator_k1_is_the_settings_own():
    from medal.config import SETTINGS, operator_limit
    k1 = next(s for s in SETTINGS if s.name == "k1")
    assert DEFAULT_MAX_K1 == k1.limit[0] == operator_limit("k1", environ={})
