"""The shipped example traces: each loads, says what its title claims, and reproduces
from its own recorded configuration (same model, prompt, parameters and seed -> the same
trace, timings aside). Regenerate them with scripts/make_examples.py."""
from __future__ import annotations

import pytest

from medal.viz.board import task_of
from medal.viz.examples import comparable, list_examples, load_example, rerun

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
    again = rerun(trace, example.task)
    assert comparable(again) == comparable(trace), (
        f"{example.name} no longer reproduces (the model or the engine changed?): "
        "regenerate with python scripts/make_examples.py")


def test_comparable_ignores_only_timings():
    trace = load_example(EXAMPLES[0])
    other = comparable(trace)
    other["result"]["text"] += "x"
    assert other != comparable(trace)
    timed = dict(trace, timing={"seconds": 99.0})
    assert comparable(timed) == comparable(trace)
