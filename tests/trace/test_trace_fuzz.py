"""The trace gate against hostile and broken files (issue 9).

``loads_trace`` either raises :class:`TraceError` (naming the failing place) or returns a
trace that every view renders. Checked three ways: the issue's reproducers (a corpus
kept as regression tests), Hypothesis mutations of real traces recorded from the
built-in model, and every intermediate trace of every strategy (nothing valid refused).
"""
from __future__ import annotations

import copy
import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from medal.errors import TraceError
from medal.trace import MAX_TRACE_BYTES, dumps, loads_trace, pack
from medal.trace.gate.parse import Invalid
from medal.trace.gate.schema import compile_schema, compile_pred, load_schema
from viz_support import render_everything
from work import lines_run

ROOT = Path(__file__).resolve().parents[2]
# per fuzz test; the suite runs the same 150 each time (derandomized); MEDAL_FUZZ_EXAMPLES=N
# runs a longer campaign of fresh random examples (CI runs one after the suite: .ci/run)
FUZZ_EXAMPLES = int(os.environ.get("MEDAL_FUZZ_EXAMPLES", "150"))
FUZZ_FIXED = "MEDAL_FUZZ_EXAMPLES" not in os.environ


# ---------------------------------------------------------------------- real traces

@pytest.fixture(scope="module")
def real_traces(builtin_model):
    """Small finished traces from the shipped model: MEDAL (tree, search, phase C and the
    greedy comparison), a baseline and SOAR (a beam search's record); text of each."""
    from medal.config import GenerationConfig
    from medal.engine import Run
    out = _Quiet()
    for strategy, cfg in (("medal", dict(max_iterations=6, candidates=2, lc=2)),
                          ("bst5", dict(samples=2)), ("soar", dict(soar_threshold=0.99))):
        run = Run(builtin_model, task="countdown", prompt="Use 4, 18, 13 to make 20.",
                  strategy=strategy, config=GenerationConfig(**cfg), trace=True,
                  compare_greedy=True)
        run.finish()
        out[strategy] = dumps(run.trace)
        render_everything(run.trace)  # imports (plotly...) done here, not in a timed example
    return out


class _Quiet(dict):
    """The traces, without a 150 kB repr in every Hypothesis report."""

    def __repr__(self):
        return f"<real traces: {', '.join(self)}>"


#: a hang is a failure: the gate and the views may run this many Python lines on one
#: fuzzed trace (tests/work.py counts them; ~10^5 is usual), then the example fails --
#: counted, not timed, so a loaded machine neither fails it nor needs a wider margin
MOST_LINES = 100_000_000


def gate_then_render(text) -> str:
    """'refused' or 'rendered'; anything else than TraceError fails the test."""
    return lines_run(lambda: _gate_then_render(text), MOST_LINES)[0]


def _gate_then_render(text) -> str:
    try:
        trace = loads_trace(text)
    except TraceError as exc:
        assert str(exc)
        return "refused"
    render_everything(trace)
    return "rendered"


# ---------------------------------------------------------------------- the corpus

def _mutate(text: str, change) -> str:
    data = json.loads(text)
    change(data)
    return json.dumps(data)


def _node(data, i):
    return data["tree"]["nodes"][i]


CORPUS = {
    # failure 1: parent cycles (two nodes each other's parent; a node its own parent)
    "two-node parent cycle": lambda d: (_node(d, 3).update(parent=4), _node(d, 4).update(parent=3)),
    "own parent": lambda d: _node(d, 5).update(parent=5),
    # failure 3: gen_length of 1e7..1e9
    "gen_length 1e7": lambda d: d["run"]["config"].update(gen_length=10 ** 7),
    "gen_length 1e9 consistent": lambda d: d["run"]["config"].update(
        gen_length=10 ** 9, steps=10 ** 9, block_length=10 ** 9),
    "gen_length as text": lambda d: d["run"]["config"].update(gen_length="28"),
    "gamma as text": lambda d: d["run"]["config"].update(gamma="five"),
    "c negative": lambda d: d["run"]["config"].update(c=-1),
    "seed 2**64": lambda d: d["run"]["config"].update(seed=2 ** 64),
    # failure 4: bad traces that loaded silently or crashed the views
    "missing parent": lambda d: _node(d, 2).update(parent=999),
    "missing winner": lambda d: d["search"].update(winner=12345),
    "missing candidate": lambda d: d["search"]["candidates"].append(777),
    "selection path to nowhere": lambda d: d["iterations"][0]["selection"]["path"].append(555),
    "negative N": lambda d: _node(d, 1).update(N=-3),
    "short completion_ids": lambda d: _node(d, 1).update(completion_ids=[5]),
    "short entropy": lambda d: _node(d, 1).update(entropy=[0.1]),
    "short masked": lambda d: _node(d, 2).update(masked=[True]),
    "no nodes": lambda d: d["tree"].update(nodes=[]),
    "slot past the answer": lambda d: d["decode"][0].update(slots=[10 ** 6]),
    "huge int N (OverflowError)": lambda d: _node(d, 1).update(N=10 ** 400),
    "huge float W": lambda d: _node(d, 1).update(W=1e308 * 10),
    "action slot negative": lambda d: _node(d, 1)["action"].update(slot=-1),
    "duplicate ids": lambda d: _node(d, 2).update(id=1),
    "iteration number wrong": lambda d: d["iterations"][0].update(iteration=7),
    "result order short": lambda d: d["result"].update(order=[0]),
    "bool as number": lambda d: _node(d, 1).update(Q=True),
    "nested problem 1000 deep": lambda d: d["run"].update(problem=json.loads("[" * 900 + "]" * 900)),
    # issue 31: lists beyond what the run's own settings can produce
    "top entries beyond K1": lambda d: _node(d, 0)["top"].__setitem__(
        0, [{"token": 5, "text": "5", "p": 0.1}] * 5000),
    "scores beyond the unmasked slots": lambda d: d["decode"][0].update(scores=[0.5] * 5000),
    "action set beyond K2": lambda d: _node(d, 0).update(action_set=_node(d, 0)["action_set"] * 50),
    "a step unmasking one slot twice": lambda d: d["decode"][0].update(
        slots=d["decode"][0]["slots"] * 2, tokens=d["decode"][0]["tokens"] * 2,
        token_texts=d["decode"][0]["token_texts"] * 2, scores=d["decode"][0]["scores"] * 2),
    "eligible list beyond the answer": lambda d: d["decode"][0].update(
        eligible={"slots": list(range(40)), "p": [0.5] * 40, "margin": [0.5] * 40,
                  "score": [0.5] * 40, "entropy": [0.5] * 40}),
}


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_corpus_is_refused_with_a_trace_error(real_traces, name):
    bad = _mutate(real_traces["medal"], CORPUS[name])
    with pytest.raises(TraceError) as info:
        lines_run(lambda: loads_trace(bad), MOST_LINES)
    assert "trace" in str(info.value)


@pytest.mark.parametrize("text, what", [
    ("[" * 5000, "nested"),                        # was RecursionError
    ("[" + "9" * 5000 + "]", "4300"),              # was ValueError
    ('{"format": "medal-trace", "version": 1, "x": NaN}', "NaN"),
    ('{"format": "medal-trace", "version": 1, "x": Infinity}', "Infinity"),
    ('{"format": "medal-trace", "version": 1, "x": -Infinity}', "Infinity"),
    ('"\\ud800"', "surrogate"),
    ("\ud800", "surrogate"),
    (b"\xff\xfe{\x00}\x00", "UTF-8"),
    (b"", "JSON"),
    ("   ", "JSON"),
    ("null", "not a MEDAL trace"),
    ('{"format": "medal-trace", "version": 1.0}', "version"),
    ('{"format": "medal-trace", "version": true}', "version"),
])
def test_malformed_text_raises_only_trace_error(text, what):
    with pytest.raises(TraceError) as info:
        lines_run(lambda: loads_trace(text), MOST_LINES)
    assert what.lower() in str(info.value).lower()


def test_lone_surrogate_inside_a_real_trace_names_its_place(real_traces):
    text = real_traces["medal"].replace('"strategy":"medal"', '"strategy":"me\\udc00dal"', 1)
    with pytest.raises(TraceError, match="run/strategy.*surrogate"):
        loads_trace(text)


def test_errors_name_the_failing_path(real_traces):
    bad = _mutate(real_traces["medal"], CORPUS["missing parent"])
    with pytest.raises(TraceError, match=r"tree/nodes/2/parent"):
        loads_trace(bad)


def test_oversized_is_refused_before_parsing():
    with pytest.raises(TraceError, match="limit"):
        loads_trace(b"[" * (MAX_TRACE_BYTES + 1))


def test_the_frames_survive_a_parent_cycle_that_skipped_the_gate(real_traces):
    """Failure 1: the tree's drawing looped forever on a parent cycle among hidden nodes.
    The viewer's frames (the path users run: a live run's trace never passes the gate)
    draw such a tree at a cap of 2 nodes. Its work is counted (a loop without end passes
    any ceiling of lines and fails there; nothing is timed)."""
    from medal.views.frames import bundle
    data = json.loads(real_traces["medal"])
    nodes = data["tree"]["nodes"]
    a, b = nodes[-1]["id"], nodes[-2]["id"]
    nodes[-1]["parent"], nodes[-2]["parent"] = b, a
    nodes[-3]["parent"] = nodes[-3]["id"]
    b, _ = lines_run(lambda: bundle(data, max_nodes=2), MOST_LINES)
    assert b["pool"][b["frames"][-1]["h"][1]]["tree"]["total"] == len(nodes)


# ---------------------------------------------------------------------- nothing valid refused

@pytest.mark.parametrize("task, prompt", [("countdown", "Use 4, 18, 13 to make 20."),
                                          ("sudoku", None)])
def test_every_intermediate_trace_of_every_strategy_passes(task, prompt):
    """The gate refuses nothing the recorder writes: each strategy, at every event, and
    the finished trace round-trips byte-identical."""
    from medal.config import GenerationConfig
    from medal.engine import STRATEGIES, Run
    from medal.tasks import TASKS
    from viz_support import random_model
    model = random_model()
    if prompt is None:  # the random stand-in reads Countdown-length prompts only
        from medal.models.builtin import BuiltinModel
        model = BuiltinModel.load(task)
        prompt = TASKS[task].format_prompt(TASKS[task].example_problems[0])
    for strategy in STRATEGIES:
        run = Run(model, task=task, prompt=prompt, strategy=strategy,
                  config=GenerationConfig(max_iterations=4, samples=2), trace=True,
                  compare_greedy=True)
        while run.step() is not None:
            loads_trace(dumps(run.trace))
        text = dumps(run.trace)
        assert dumps(loads_trace(text)) == text, strategy


# ---------------------------------------------------------------------- Hypothesis fuzzing

def _paths(value, prefix=()):
    """Every place in a JSON value (containers first), for mutation."""
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out.extend(_paths(v, prefix + (k,)))
    elif isinstance(value, list):
        for i, v in enumerate(value[:6]):          # a few items of each list suffice
            out.extend(_paths(v, prefix + (i,)))
    return out


json_leaf = st.one_of(
    st.none(), st.booleans(),
    st.integers(min_value=-3, max_value=40),
    st.sampled_from([10 ** 7, 10 ** 9, 2 ** 63, 2 ** 64, -2 ** 63 - 1, 10 ** 30]),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.sampled_from([1e308, -1e308, 5e-324, 0.0, -0.0]),
    st.text(max_size=8),
    st.sampled_from(["14*3*2", "[x](http://127.0.0.1:1/)", "<b>x</b>", "\ud800", "\x00",
                     "medal", "greedy", "phase_c", "decode", "sample-0"]),
)
json_value = st.recursive(json_leaf, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=5), inner, max_size=3)),
    max_leaves=8)


def _apply(data, path, op, value):
    if not path:
        return value if op == "replace" else data
    parent = data
    for key in path[:-1]:
        parent = parent[key]
    key = path[-1]
    if op == "replace":
        parent[key] = value
    elif op == "delete":
        if isinstance(parent, dict):
            del parent[key]
        else:
            parent.pop(key)
    elif op == "duplicate" and isinstance(parent, list):
        parent.insert(key, copy.deepcopy(parent[key]))
    elif op == "empty" and isinstance(parent[key], (list, dict, str)):
        parent[key] = type(parent[key])()
    elif op == "bump" and type(parent[key]) is int:
        parent[key] = parent[key] + (value if type(value) is int else 1)
    elif op == "swap" and isinstance(parent, list) and len(parent) > 1:
        j = (key + 1) % len(parent)
        parent[key], parent[j] = parent[j], parent[key]
    return data


mutation = st.tuples(st.integers(min_value=0, max_value=10 ** 9),
                     st.sampled_from(["replace", "delete", "duplicate", "empty", "bump", "swap"]),
                     json_value)

OUTCOMES = {"refused": 0, "rendered": 0}


@settings(max_examples=FUZZ_EXAMPLES, deadline=None, derandomize=FUZZ_FIXED,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                 HealthCheck.data_too_large])
@given(mutations=st.lists(mutation, min_size=1, max_size=3),
       which=st.sampled_from(["medal", "bst5", "soar"]))
def test_fuzz_structured_mutations_of_real_traces(real_traces, mutations, which):
    data = json.loads(real_traces[which])
    for pick, op, value in mutations:
        paths = _paths(data)
        data = _apply(data, paths[pick % len(paths)], op, value)
    text = json.dumps(data, allow_nan=True)
    OUTCOMES[gate_then_render(text)] += 1


@settings(max_examples=FUZZ_EXAMPLES, deadline=None, derandomize=FUZZ_FIXED,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(cut=st.integers(min_value=0, max_value=10 ** 9), junk=st.binary(max_size=12),
       drop=st.integers(min_value=0, max_value=20))
def test_fuzz_byte_mutations_of_real_traces(real_traces, cut, junk, drop):
    raw = real_traces["medal"].encode()
    at = cut % len(raw)
    OUTCOMES[gate_then_render(raw[:at] + junk + raw[at + drop:])] += 1


@pytest.fixture(scope="module")
def packed_traces(real_traces):
    """The real traces in the written form (packed-3: binary per-slot figures), MEDAL's
    also in packed-2 (still read), and one plain."""
    out = _Quiet({k + "-packed": dumps(json.loads(v), packed=True)
                  for k, v in real_traces.items()})
    out["medal-packed2"] = json.dumps(pack(json.loads(real_traces["medal"]), binary=False))
    out["medal"] = real_traces["medal"]
    return out


def _grow(data, path, times: int):
    """The list at ``path`` (or the nearest list above it) repeated ``times`` times: the
    campaign's shape of a list far beyond what the run's settings produce."""
    path = list(path)
    while path:
        parent = data
        for key in path[:-1]:
            parent = parent[key]
        value = parent[path[-1]]
        if isinstance(value, list) and value:
            parent[path[-1]] = value * times
            return data
        if isinstance(value, dict) and isinstance(value.get("f32"), list) and value["f32"]:
            value["f32"] = value["f32"] * times
            return data
        if isinstance(value, dict) and isinstance(value.get("f32b"), str) and value["f32b"]:
            value["f32b"] = value["f32b"].rstrip("=") * times    # a binary array, longer
            return data
        if isinstance(value, str) and len(path) >= 2 and path[-2] == "bin":
            parent[path[-1]] = value.rstrip("=") * times
            return data
        path.pop()
    return data


@settings(max_examples=max(30, FUZZ_EXAMPLES // 3), deadline=None, derandomize=FUZZ_FIXED,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                 HealthCheck.data_too_large])
@given(mutations=st.lists(mutation, min_size=0, max_size=2),
       grow=st.integers(min_value=0, max_value=10 ** 9),
       times=st.sampled_from([2, 30, 2000]),
       which=st.sampled_from(["medal-packed", "medal-packed2", "bst5-packed", "medal"]))
def test_fuzz_packed_traces_and_grown_lists(packed_traces, mutations, grow, times, which):
    """Issue 31: packed traces (differences, packed top entries and figures; packed-3's
    binary arrays) mutated, and one list or array grown far beyond the run's settings:
    refused with a TraceError or rendered, never an exception or a hang."""
    data = json.loads(packed_traces[which])
    assert data.get("encoding") == {"medal": None, "medal-packed2": "packed-2"}.get(
        which, "packed-3")
    for pick, op, value in mutations:
        paths = _paths(data)
        data = _apply(data, paths[pick % len(paths)], op, value)
    paths = _paths(data)
    data = _grow(data, paths[grow % len(paths)], times)
    OUTCOMES[gate_then_render(json.dumps(data, allow_nan=True))] += 1


def test_fuzz_ran_both_ways():
    """The fuzzing above exercised both outcomes (it is not refusing everything)."""
    if sum(OUTCOMES.values()) == 0:
        pytest.skip("run together with the fuzz tests")
    print(f"fuzz outcomes: {OUTCOMES}")
    assert OUTCOMES["refused"] > 0 and OUTCOMES["rendered"] > 0


# ---------------------------------------------------------------------- schema compiler

def test_compiled_schema_agrees_with_jsonschema(real_traces):
    """The fast validator accepts nothing the reference (jsonschema, Draft 2020-12)
    rejects, on real traces and their mutations; it explains where."""
    import random

    import jsonschema
    schema = load_schema()
    ref = jsonschema.Draft202012Validator(schema)
    explain, pred = compile_schema(schema), compile_pred(schema)
    rng = random.Random(0)
    leaves = [None, True, -1, 0, 3, 2.5, "x", [], {}, 10 ** 30]
    tried = 0
    for text in real_traces.values():
        base = json.loads(text)
        assert pred(base) and ref.is_valid(base)
        paths = _paths(base)
        for _ in range(150):
            data = _apply(copy.deepcopy(base), rng.choice(paths), "replace", rng.choice(leaves))
            ok = pred(data)
            if ok:
                assert ref.is_valid(data), "compiled schema accepted what jsonschema refuses"
            else:
                with pytest.raises(Invalid):
                    explain(data)
            tried += 1
    assert tried == 150 * len(real_traces)


def test_schema_compiler_refuses_unknown_keywords():
    with pytest.raises(ValueError, match="unsupported"):
        compile_schema({"type": "object", "patternProperties": {}})
