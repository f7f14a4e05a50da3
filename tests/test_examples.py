"""The shipped example traces: each loads, says what its title claims, and reproduces
from its own recorded configuration (same model, prompt, parameters and seed -> the same
trace, timings aside). Regenerate them with scripts/make_examples.py."""
from __future__ import annotations

import pytest

from medal.viz.board import task_of
from medal.viz.examples import comparable, list_examples, load_example, rerun
from trace_compare import differences

#: The examples record the forward's float32 figures at full precision on the machine that
#: made them; another CPU's vector kernels round the same forward differently (measured:
#: 1.2e-6 relative on probabilities, 1.8e-6 absolute on margins, from the machine that
#: made them to an AMD EPYC with AVX2). Floats are compared within these; everything
#: discrete (tree shape, actions, tokens, answers, verdicts, counts of forwards) must be
#: identical.
REL, ABS = 1e-4, 5e-6

EXAMPLES = list_examples()


def test_the_three_examples_are_shipped():
    names = [e.name for e in EXAMPLES]
    assert names == ["countdown-medal-fixes-greedy", "countdown-medal-does-not-fix", "sudoku"]
    for e in EXAMPLES:
        assert e.path.is_file(), f"{e.path} is missing: run scripts/make_examples.py"


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.name for e in EXAMPLES])
def test_example_says_what_it_claims(example):
    trace = load_example(example)
    assert task_of(trace) == example.task
    assert trace["run"]["strategy"] == "medal" and trace["comparison"] is not None
    medal, greedy = trace["result"]["verified"], trace["comparison"]["result"]["verified"]
    if example.name == "countdown-medal-fixes-greedy":
        assert medal is True and greedy is False
    elif example.name == "countdown-medal-does-not-fix":
        assert medal is False and greedy is False
    else:
        assert trace["run"]["fixed_slots"] and medal is True


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.name for e in EXAMPLES])
def test_example_reproduces_from_its_own_config(example):
    trace = load_example(example)
    old, new = comparable(trace), comparable(rerun(trace, example.task))
    diff = (differences(old, new, rel=REL, abs_tol=ABS)
            + differences(new, old, rel=REL, abs_tol=ABS))  # and nothing new either
    assert not diff, (
        f"{example.name} no longer reproduces (the model or the engine changed?): "
        "regenerate with python scripts/make_examples.py\n" + "\n".join(diff))


def test_comparable_ignores_only_timings():
    trace = load_example(EXAMPLES[0])
    other = comparable(trace)
    other["result"]["text"] += "x"
    assert other != comparable(trace)
    assert differences(comparable(trace), other, rel=REL, abs_tol=ABS)
    nudged = comparable(trace)
    nudged["tree"]["nodes"][1]["r_ig"] *= 1.001     # beyond rounding: reported
    assert differences(comparable(trace), nudged, rel=REL, abs_tol=ABS)
    timed = dict(trace, timing={"seconds": 99.0})
    assert comparable(timed) == comparable(trace)
