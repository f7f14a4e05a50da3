"""The model runner: answer-only logits, scoring on the model's device, and MEDAL's numbers
unchanged by the speed refactor (issue 8 part B, issue 11 item 5)."""
from __future__ import annotations

import math

import pytest

import reference_traces


def differences(old, new, path="", out=None, rel=1e-6):
    """Where ``new`` departs from ``old``: every key ``old`` has must be in ``new`` with the
    same value (floats to ``rel``; ``old`` holds 10 significant digits). Keys only ``new``
    has (fields added later) are not differences."""
    out = [] if out is None else out
    if len(out) >= 10:
        return out
    if isinstance(old, dict):
        if not isinstance(new, dict):
            out.append(f"{path}: {type(new).__name__} instead of an object")
            return out
        for k, v in old.items():
            if k not in new:
                out.append(f"{path}/{k}: missing")
            else:
                differences(v, new[k], f"{path}/{k}", out, rel)
    elif isinstance(old, list):
        if not isinstance(new, list) or len(new) != len(old):
            out.append(f"{path}: {len(old)} items, now "
                       f"{len(new) if isinstance(new, list) else type(new).__name__}")
            return out
        for i, (a, b) in enumerate(zip(old, new)):
            differences(a, b, f"{path}/{i}", out, rel)
    elif isinstance(old, float) and isinstance(new, (int, float)) and not isinstance(new, bool):
        if not math.isclose(old, new, rel_tol=rel, abs_tol=1e-9):
            out.append(f"{path}: {old!r} -> {new!r}")
    elif old != new or type(old) is not type(new) and not (
            isinstance(old, int) and isinstance(new, float) and float(old) == new):
        out.append(f"{path}: {old!r} -> {new!r}")
    return out


@pytest.fixture(scope="module")
def reference():
    return reference_traces.load()


@pytest.fixture(scope="module")
def reference_models():
    from conftest import ScriptedLM
    return {"tiny": reference_traces.tiny_model(), "scripted": ScriptedLM()}


@pytest.mark.parametrize("case", list(reference_traces.CASES))
def test_medal_traces_match_those_recorded_before_the_refactor(case, reference, reference_models):
    """Every number of a MEDAL trace recorded on the code before the runner/search speed
    refactor (tree, UCB values, rewards, action sets, completions, phase C, the greedy
    comparison, counts of forwards and sequences) is reproduced."""
    new = reference_traces.case_trace(case, reference_models)
    diff = differences(reference[case], new)
    assert not diff, "\n".join(diff)


def test_the_comparison_sees_a_changed_number(reference, reference_models):
    """The check above can fail: one reward nudged by 1e-5 is reported."""
    new = reference_traces.case_trace("scripted-medal", reference_models)
    node = next(n for n in new["tree"]["nodes"] if n["reward"])
    node["reward"] *= 1 + 1e-5
    assert differences(reference["scripted-medal"], new) == [
        f"/tree/nodes/{node['id']}/reward: "
        f"{reference['scripted-medal']['tree']['nodes'][node['id']]['reward']!r} -> {node['reward']!r}"]
