"""A loaded trace keeps each node's top tokens as columns (issue 41: medal.trace.TopRows).

They read as the rows they hold (every shipped example, every node, every slot), write
back to the same file, travel from the gate's child process, and are checked by the gate
as a list of rows is: each tampering refused, with the same words as the plain form.
"""
from __future__ import annotations

import base64
import copy
import io
import json
import pickle
from pathlib import Path

import numpy as np
import pytest

from medal.errors import TraceError
from medal.trace import (TopRows, dumps, json_default, load_trace, loads_trace, pack,
                         write_trace)
from medal.trace.gate.apart import _PlainData

EXAMPLES = Path(__file__).resolve().parents[2] / "medal" / "assets" / "examples"
NAMES = sorted(p.stem for p in EXAMPLES.glob("*.json") if p.stem != "index")


def _plain(trace: dict) -> dict:
    """The trace with every node's rows as lists of dicts (through JSON)."""
    return json.loads(json.dumps(trace, default=json_default))


@pytest.mark.parametrize("name", NAMES)
def test_rows_read_as_the_plain_rows(name):
    trace = load_trace(EXAMPLES / f"{name}.json")
    plain = _plain(trace)
    nodes = trace["tree"]["nodes"] if trace["tree"] else []
    assert nodes and all(type(n["top"]) is TopRows for n in nodes)
    for node, want in zip(nodes, plain["tree"]["nodes"]):
        top = node["top"]
        assert len(top) == len(want["top"]) == len(node["masked"])
        assert [top[s] for s in range(len(top))] == want["top"]
        assert list(top) == want["top"] and top[-1] == want["top"][-1]
        assert top[2:5] == want["top"][2:5]
        assert top == want["top"] and want["top"] == top      # == both ways
        for s, row in enumerate(want["top"]):
            for e in row or ():
                assert top.text_of(s, e["token"]) == e["text"]
            assert top.text_of(s, -1) is None
        with pytest.raises(IndexError):
            top[len(top)]


@pytest.mark.parametrize("name", NAMES[:3])
def test_columns_write_back_the_same_file(name, tmp_path):
    """A loaded trace written again is the same text as the file it came from was written
    from (its rows packed straight from their columns)."""
    trace = load_trace(EXAMPLES / f"{name}.json")
    plain = _plain(trace)
    assert dumps(trace, packed=True) == dumps(plain, packed=True)
    assert json.loads(dumps(trace)) == plain
    write_trace(trace, tmp_path / "again.json")
    assert load_trace(tmp_path / "again.json") == trace


def test_a_row_changed_is_unequal():
    trace = load_trace(EXAMPLES / "countdown-medal-fixes-greedy.json")
    node = trace["tree"]["nodes"][1]
    rows = list(node["top"])
    s = next(i for i, r in enumerate(rows) if r)
    changed = copy.deepcopy(rows)
    changed[s][0]["p"] += 2 ** -20
    assert node["top"] != changed and changed != node["top"]
    assert node["top"] != trace["tree"]["nodes"][2]["top"]
    assert node["top"] == TopRows(*[np.array(a) for a in (node["top"].starts,
                                                          node["top"].counts,
                                                          *node["top"].columns()[2:])],
                                  dict(node["top"].texts))


def test_columns_cross_from_the_gate_child_as_bytes():
    """The gate's child process pickles the rows as bytes and one function of ours; the
    server's unpickler allows that function and still refuses anything else."""
    trace = load_trace(EXAMPLES / "countdown-medal-fixes-greedy.json")
    blob = pickle.dumps(trace, protocol=pickle.HIGHEST_PROTOCOL)
    back = _PlainData(io.BytesIO(blob)).load()
    assert back == trace and type(back["tree"]["nodes"][0]["top"]) is TopRows
    with pytest.raises(TraceError, match=r"sent back an object \(builtins.eval\)"):
        _PlainData(io.BytesIO(pickle.dumps(eval))).load()


def test_malformed_pickled_columns_are_refused():
    from medal.trace.toprows import _rebuild
    ok = load_trace(EXAMPLES / "countdown-medal-fixes-greedy.json")["tree"]["nodes"][1]["top"]
    args = list(ok.__reduce__()[1])
    assert _rebuild(*args) == ok
    bad = list(args)
    bad[1] = (np.frombuffer(args[1], dtype=np.int64) + 10_000).tobytes()  # rows past the end
    with pytest.raises(ValueError, match="malformed top rows"):
        _rebuild(*bad)
    with pytest.raises(ValueError, match="malformed top rows"):
        _rebuild(args[0] + 1, *args[1:])


# ---------------------------------------------------------------------- the gate

@pytest.fixture(scope="module")
def base():
    return _plain(load_trace(EXAMPLES / "countdown-medal-fixes-greedy.json"))


def _row_slot(node: dict) -> int:
    return next(s for s, row in enumerate(node["top"]) if row)


def _p(node, value):
    node["top"][_row_slot(node)][0]["p"] = value


def _sum_over(node):
    for e in node["top"][_row_slot(node)]:
        e["p"] = 0.5


def _masked_without(node):
    node["top"][_row_slot(node)] = None


def _unmasked_with(node):
    s = node["masked"].index(False)
    node["top"][s] = [{"token": 5, "text": "x", "p": 0.5}]


def _empty(node):
    node["top"][_row_slot(node)] = []


def _long_text(node):
    node["top"][_row_slot(node)][0].update(token=99_999, text="x" * 5000)


TAMPERINGS = {
    "p above 1": (lambda n: _p(n, 1.5), r"tree/nodes/1/top/\d+/0/p: 1\.5 is not a probability"),
    "p below 0": (lambda n: _p(n, -0.25), r"tree/nodes/1/top/\d+/0/p: -0\.25 is not a "
                                          r"probability"),
    "a row summing over 1": (_sum_over, r"tree/nodes/1/top/\d+: its \d top tokens' "
                                        r"probabilities sum to 1\.5"),
    "a masked slot without a row": (_masked_without, r"tree/nodes/1/top/\d+: a masked slot "
                                                     r"without top tokens"),
    "a row on an unmasked slot": (_unmasked_with, r"tree/nodes/1/top/\d+: top tokens for a "
                                                  r"slot that is not masked"),
    "an empty row": (_empty, r"tree/nodes/1/top/\d+: an empty list of top tokens"),
    "a token's text too long": (_long_text, r"5,000 characters; a token's text has at most"),
}


@pytest.mark.parametrize("what", list(TAMPERINGS))
def test_the_gate_refuses_tampered_columns_as_it_refuses_tampered_rows(base, what):
    """Each tampering of a node's rows, written plain (rows as dicts, checked row by row)
    and packed-3 (columns, checked whole): both refused, with the same words."""
    tamper, message = TAMPERINGS[what]
    t = copy.deepcopy(base)
    tamper(t["tree"]["nodes"][1])
    plain = json.dumps(t)
    packed = json.dumps(pack(t))
    assert json.loads(packed)["encoding"] == "packed-3"
    for text in (plain, packed):
        with pytest.raises(TraceError, match=message):
            loads_trace(text)


def _packed_top(base) -> tuple[dict, dict]:
    packed = pack(base)
    return packed, packed["tree"]["nodes"][1]["top"]["bin"]


def _b64(values, dtype):
    return base64.b64encode(np.asarray(values, dtype=dtype).tobytes()).decode()


def test_packed_columns_naming_a_slot_twice_are_refused(base):
    packed, part = _packed_top(base)
    slots = np.frombuffer(base64.b64decode(part[0]), dtype="<i4").copy()
    slots[1] = slots[0]
    part[0] = _b64(slots, "<i4")
    with pytest.raises(TraceError, match="tree/nodes/1/top names a slot twice"):
        loads_trace(json.dumps(packed))


def test_packed_columns_with_a_negative_token_are_refused(base):
    packed, part = _packed_top(base)
    tokens = np.frombuffer(base64.b64decode(part[2]), dtype="<i4").copy()
    tokens[0] = -3
    part[2] = _b64(tokens, "<i4")
    with pytest.raises(TraceError, match=r"tree/nodes/1/top holds token -3 \(a token id is "
                                         r"at least 0\)"):
        loads_trace(json.dumps(packed))


def test_packed_columns_whose_text_is_not_text_are_refused(base):
    packed, part = _packed_top(base)
    token = str(int(np.frombuffer(base64.b64decode(part[2]), dtype="<i4")[0]))
    packed["token_texts"][token] = 7
    with pytest.raises(TraceError, match=f"token_texts' entry for token {token} is not a text"):
        loads_trace(json.dumps(packed))


def test_packed_columns_in_any_slot_order_read_as_the_rows(base):
    """A writer may list a node's slots in any order: the rows are the same."""
    packed, part = _packed_top(base)
    slots = np.frombuffer(base64.b64decode(part[0]), dtype="<i4")
    counts = np.frombuffer(base64.b64decode(part[1]), dtype="u1").astype(np.int64)
    tokens = np.frombuffer(base64.b64decode(part[2]), dtype="<i4")
    probs = np.frombuffer(base64.b64decode(part[3]), dtype="<f4")
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    order = list(range(len(slots)))[::-1]
    take = np.concatenate([np.arange(starts[k], starts[k] + counts[k]) for k in order])
    part[:] = [_b64(slots[order], "<i4"), _b64(counts[order], "u1"),
               _b64(tokens[take], "<i4"), _b64(probs[take], "<f4")]
    got = loads_trace(json.dumps(packed))
    assert got["tree"]["nodes"][1]["top"] == base["tree"]["nodes"][1]["top"]


@pytest.mark.parametrize("name", NAMES)
def test_a_completions_texts_at_once_are_each_slots(name):
    """texts_of (a node's completion, every slot at once: the views' fills) gives what
    text_of gives slot by slot, on every node with a completion."""
    trace = load_trace(EXAMPLES / f"{name}.json")
    checked = 0
    for node in trace["tree"]["nodes"]:
        ids = node.get("completion_ids")
        if ids:
            top = node["top"]
            assert top.texts_of(ids) == [top.text_of(s, t) for s, t in enumerate(ids)]
            checked += 1
    assert checked
