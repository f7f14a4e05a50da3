"""packed-2 traces (issue 17): nodes stored as differences from their parent, decoded by
the one gate (``load_trace`` / ``loads_trace``) to exactly the recorded trace; hostile
differences (later or missing parents, cycles, out-of-range slots, huge counts, chains
that would blow up memory) are a :class:`TraceError`; plain and packed-1 traces still load."""
from __future__ import annotations

import copy
import json
import random

import pytest

from medal.config import GenerationConfig
from medal.engine import Run
from medal.errors import TraceError
from medal.trace.limits import DECODED_PER_BYTE, MAX_ANY_STRING
from medal.models.builtin import BuiltinModel
from medal.trace import (json_default, PACKED, PACKED_1, PACKED_FORMS, dumps, load_trace, loads_trace, pack_v1,
                         write_trace)
from medal.examples import list_examples, load_example


def _exact(value) -> str:
    """JSON text with sorted keys: equal only when values and types (1 vs 1.0) agree."""
    return json.dumps(value, sort_keys=True, allow_nan=False, default=json_default)


@pytest.fixture(scope="module")
def traces(builtin_model):
    """Finished traces of real runs of the built-in models: MEDAL with the greedy
    comparison, a deep search (L_c 20, no exploration: a chain of 20 differences),
    Sudoku, and a baseline."""
    sudoku = BuiltinModel.load("sudoku")
    runs = {
        "countdown": (builtin_model, "countdown", "medal",
                      dict(seed=0, max_iterations=12), True),
        "deep": (builtin_model, "countdown", "medal",
                 dict(seed=1, block_length=28, lc=20, k2=2, c=0.0, candidates=1,
                      max_iterations=60), False),
        "sudoku": (sudoku, "sudoku", "medal", dict(seed=0), True),
        "bst5": (builtin_model, "countdown", "bst5", dict(seed=0, samples=2), True),
    }
    out = {}
    for name, (model, task, strategy, cfg, compare) in runs.items():
        run = Run(model, task=task, problem=_problem(task), strategy=strategy,
                  config=GenerationConfig(**cfg), trace=True, compare_greedy=compare)
        run.finish()
        out[name] = json.loads(dumps(run.trace))
    return out


def _problem(task: str):
    from medal.tasks import get_task
    return get_task(task).generate(1, seed=7)[0]


@pytest.mark.parametrize("name", ["countdown", "deep", "sudoku", "bst5"])
def test_packed2_reads_back_exactly(traces, name, tmp_path):
    plain = traces[name]
    text = dumps(plain, packed=True)
    packed = json.loads(text)
    assert packed["encoding"] == PACKED  # baselines too (their decode steps)
    got = loads_trace(text)
    assert got == plain and _exact(got) == _exact(plain)  # every value, every type
    size = write_trace(plain, tmp_path / "t.json")
    assert _exact(load_trace(tmp_path / "t.json")) == _exact(plain)
    v1 = len(json.dumps(pack_v1(plain), separators=(",", ":")))
    if plain["tree"]:
        nodes = packed["tree"]["nodes"]
        diffed = [n for n in nodes[1:] if isinstance(n["answer_ids"], dict)]
        assert diffed and all(set(n["answer_ids"]) == {"diff"} for n in diffed)
        assert any(isinstance(n["action"], dict) and "from_action_set" in n["action"]
                   for n in nodes)
        assert size < v1


def test_the_deep_search_is_deep(traces):
    nodes = traces["deep"]["tree"]["nodes"]
    assert max(n["depth"] for n in nodes) == 20  # a chain of 20 differences (L_c)


@pytest.mark.parametrize("form", ["plain", "packed-1"])
def test_older_forms_still_load(traces, form):
    plain = traces["countdown"]
    data = plain if form == "plain" else pack_v1(plain)
    assert data.get("encoding") == (None if form == "plain" else PACKED_1)
    assert _exact(loads_trace(json.dumps(data))) == _exact(plain)


def test_shipped_packed1_examples_load():
    """The examples written before packed-2 (packed-1) still load; newer ones are packed-2
    or packed-3."""
    encodings = {}
    for example in list_examples():
        raw = json.loads(example.path.read_text())
        encodings[example.name] = raw["encoding"]
        assert raw["encoding"] in PACKED_FORMS
        trace = load_example(example)
        # written again, as packed-3, it reads back the same
        assert _exact(loads_trace(dumps(trace, packed=True))) == _exact(trace)
    assert sum(e == PACKED_1 for e in encodings.values()) >= 5, encodings


# ---------------------------------------------------------------------- hostile input

def _packed(traces, name="deep") -> dict:
    return json.loads(dumps(traces[name], packed=True))


def _diffed(packed: dict, key="answer_ids") -> int:
    """The id of a node whose ``key`` is stored as a difference from its parent."""
    return next(i for i, n in enumerate(packed["tree"]["nodes"])
                if isinstance(n.get(key), dict))


def _refused(data, match: str, **kw):
    with pytest.raises(TraceError, match=match) as info:
        loads_trace(json.dumps(data), **kw)
    return str(info.value)


@pytest.mark.parametrize("parent", ["later", "self", "missing", "none", "string"])
def test_a_difference_from_a_parent_that_is_not_earlier(traces, parent):
    packed = _packed(traces)
    i = _diffed(packed)
    nodes = packed["tree"]["nodes"]
    nodes[i]["parent"] = {"later": i + 1, "self": i, "missing": 10 ** 6, "none": None,
                          "string": "0"}[parent]
    msg = _refused(packed, "not an earlier node")
    assert f"tree/nodes/{i}" in msg


def test_a_cycle_of_parents_is_refused(traces):
    packed = _packed(traces)
    nodes = packed["tree"]["nodes"]
    i = _diffed(packed)
    j = nodes[i]["parent"]
    nodes[j]["parent"] = i  # j's parent is i, i's parent is j
    nodes[j]["answer_ids"] = {"diff": []}
    with pytest.raises(TraceError, match="not an earlier node|parent"):
        loads_trace(json.dumps(packed))


def test_a_difference_on_the_root_is_refused(traces):
    packed = _packed(traces)
    packed["tree"]["nodes"][0]["sequence"] = {"diff": [0, 0, "x"]}
    _refused(packed, "tree/nodes/0 is stored as differences from its parent None")


@pytest.mark.parametrize("damage, match", [
    (lambda n: n.update(answer_ids={"diff": [[10 ** 9, 5]]}), "a change is \\[slot, value\\]"),
    (lambda n: n.update(answer_ids={"diff": [[-1, 5]]}), "a change is"),
    (lambda n: n.update(answer_ids={"diff": [[True, 5]]}), "a change is"),
    (lambda n: n.update(answer_ids={"diff": [[0]]}), "a change is"),
    (lambda n: n.update(answer_ids={"diff": "0:5"}), "a difference is"),
    (lambda n: n.update(answer_ids={"diff": [], "x": 1}), "a difference is"),
    (lambda n: n.update(masked={"diff": [10 ** 9, 10 ** 9, ""]}), "keeps"),
    (lambda n: n.update(masked={"diff": [-1, 0, ""]}), "keeps"),
    (lambda n: n.update(sequence={"diff": [0, 0]}), "a text difference is"),
    # the packing's own bound is the longest text any run holds (a 4,096-slot answer);
    # a run's own, smaller limit (gen_length slots) is the gate's: test_long_answers.py
    (lambda n: n.update(sequence={"diff": [0, 0, "x" * (MAX_ANY_STRING + 1)]}),
     f"at most {MAX_ANY_STRING:,}"),
    (lambda n: n.update(action={"from_action_set": 99}), "not there"),
    (lambda n: n.update(action={"from_action_set": "0"}), "not there"),
])
def test_malformed_differences_are_trace_errors(traces, damage, match):
    packed = _packed(traces)
    i = _diffed(packed)
    damage(packed["tree"]["nodes"][i])
    msg = _refused(packed, match)
    assert "packing is malformed" in msg


def test_a_difference_from_a_missing_parent_value(traces):
    packed = _packed(traces)
    i = _diffed(packed)
    nodes = packed["tree"]["nodes"]
    nodes[nodes[i]["parent"]]["completion_ids"] = None
    nodes[i]["completion_ids"] = {"diff": []}
    _refused(packed, "parent's, which has none")


def test_decoded_differences_are_still_checked_for_meaning(traces):
    packed = _packed(traces)
    i = _diffed(packed, "masked")
    packed["tree"]["nodes"][i]["masked"] = {"diff": [0, 0, "1"]}  # a 1-slot answer
    with pytest.raises(TraceError):
        loads_trace(json.dumps(packed))
    packed = _packed(traces)
    i = _diffed(packed)
    packed["tree"]["nodes"][i]["answer_ids"] = {"diff": [[0, -5]]}  # not a token id
    with pytest.raises(TraceError, match=f"tree/nodes/{i}/answer_ids"):
        loads_trace(json.dumps(packed))


def test_simulation_completions_name_real_nodes(traces):
    packed = _packed(traces)
    it = next(it for it in packed["iterations"] if it["simulation"]
              and any(type(c) is int for c in it["simulation"]["completions"]))
    k = packed["iterations"].index(it)
    it["simulation"]["completions"][0] = 10 ** 6
    _refused(packed, f"iterations/{k}/simulation/completions/0: node 1000000 has no completion")


def test_a_step_answer_difference_needs_a_previous_step(traces):
    packed = _packed(traces, "countdown")
    packed["decode"][0]["answer"] = {"diff": [0, 0, "x"]}
    _refused(packed, "decode/0/answer: stored as a difference from a text that is not there")


def test_a_chain_of_differences_cannot_blow_up_memory(traces):
    """Every node copying a huge root list: decoding stops at the bound (DECODED_PER_BYTE
    per byte of the size limit), fast, with a clear error."""
    packed = _packed(traces)
    nodes = packed["tree"]["nodes"]
    nodes[0]["answer_ids"] = [0] * 200_000
    for n in nodes[1:]:
        n["answer_ids"] = {"diff": []}
    text = json.dumps(packed)
    with pytest.raises(TraceError, match=f"decodes to more than "
                                         f"{DECODED_PER_BYTE * 2_000_000:,} bytes"):
        loads_trace(text, max_bytes=2_000_000)
    # the same holds under the default limit: refused (here by the budget or the meaning)
    with pytest.raises(TraceError):
        loads_trace(text)


@pytest.mark.parametrize("form", [PACKED_1, PACKED])
def test_a_huge_masked_string_cannot_blow_up_memory(traces, form):
    """packed-1 and packed-2 alike: a node's masked string becomes three lists (masked,
    entropy, top) of its length; it is held to the answer's slots before they are built,
    and where the run's gen_length is not a length, they count against the decoding bound."""
    packed = pack_v1(traces["deep"]) if form == PACKED_1 else _packed(traces)
    packed["tree"]["nodes"][0]["masked"] = "0" * 400_000
    with pytest.raises(TraceError, match="tree/nodes/0/masked: 400,000 slots; gen_length is "):
        loads_trace(json.dumps(packed), max_bytes=1_000_000)
    packed = copy.deepcopy(packed)      # pack_v1 shares the fixture's run record
    packed["run"]["config"]["gen_length"] = "many"
    packed["tree"]["nodes"][0]["masked"] = "0" * 1_000_000   # its lists: ~27 MB
    text = json.dumps(packed)
    limit = len(text)                   # the bound: DECODED_PER_BYTE x ~1.3 MB, ~20 MB
    with pytest.raises(TraceError, match=r"tree/nodes/\d+: the packed trace decodes to more "
                                         f"than {limit * DECODED_PER_BYTE:,} bytes"):
        loads_trace(text, max_bytes=limit)


def test_random_damage_to_packed2_is_a_trace_error_or_a_trace(traces):
    """Seeded random changes to the differences: the gate returns a trace or raises
    TraceError, nothing else."""
    base = _packed(traces)
    rng = random.Random(0)
    values = [0, 1, -1, 2 ** 31, 10 ** 9, None, "", "x", [], {}, [0], [[0, 0]], True, 0.5]
    diffed = [(i, k) for i, n in enumerate(base["tree"]["nodes"])
              for k in ("answer_ids", "completion_ids", "masked", "sequence", "completion",
                        "action", "parent")
              if isinstance(n.get(k), dict) or k == "parent"]
    outcomes = {"refused": 0, "read": 0}
    for _ in range(150):
        packed = copy.deepcopy(base)
        for _ in range(rng.randint(1, 3)):
            i, k = rng.choice(diffed)
            node = packed["tree"]["nodes"][i]
            if k == "parent" or not isinstance(node[k], dict):
                node[k] = rng.choice(values + [i, i + 1, i - 1])
            elif "diff" in node[k] and isinstance(node[k]["diff"], list) and node[k]["diff"]:
                d = node[k]["diff"]
                j = rng.randrange(len(d))
                d[j] = rng.choice(values) if rng.random() < 0.5 else (
                    [rng.choice(values), rng.choice(values)])
            else:
                node[k] = {rng.choice(["diff", "from_action_set", "x"]): rng.choice(values)}
        try:
            loads_trace(json.dumps(packed))
            outcomes["read"] += 1
        except TraceError:
            outcomes["refused"] += 1
    assert outcomes["refused"] > 0
