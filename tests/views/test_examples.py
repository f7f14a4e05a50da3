"""The shipped example traces: each loads, says what its title claims, and reproduces
from its own recorded configuration (same model, prompt, parameters and seed -> the same
trace, timings aside). Regenerate them with scripts/make_examples.py."""
from __future__ import annotations

import pytest

from medal.views.board import task_of
from medal.examples import comparable, list_examples, load_example
from medal.repro import rerun_example as rerun
from trace_compare import differences

#: The examples record the forward's float32 figures at full precision on the machine that
#: made them; another CPU's vector kernels round the same forward differently (measured:
#: 1.2e-6 relative on probabilities, 1.8e-6 absolute on margins, from the machine that
#: made them to an AMD EPYC with AVX2). Floats are compared within these; everything
#: discrete (tree shape, actions, tokens, answers, verdicts, counts of forwards) must be
#: identical.
REL, ABS = 1e-4, 5e-6

EXAMPLES = list_examples()


def test_the_examples_are_shipped():
    names = [e.name for e in EXAMPLES]
    assert names == ["countdown-medal-fixes-greedy", "countdown-medal-does-not-fix", "sudoku",
                     "countdown-longer-search", "pick-medal-does-not-fix",
                     "twins-medal-fixes-greedy", "countdown-large-search"]
    for e in EXAMPLES:
        assert e.path.is_file(), f"{e.path} is missing: run scripts/make_examples.py"


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.name for e in EXAMPLES])
def test_example_says_what_it_claims(example):
    trace = load_example(example)
    assert task_of(trace) == example.task
    assert trace["run"]["strategy"] == "medal" and trace["comparison"] is not None
    medal, greedy = trace["result"]["verified"], trace["comparison"]["result"]["verified"]
    if example.name in ("countdown-medal-fixes-greedy", "twins-medal-fixes-greedy"):
        assert medal is True and greedy is False
    elif example.name in ("countdown-medal-does-not-fix", "pick-medal-does-not-fix"):
        assert medal is False and greedy is False
    elif example.name == "countdown-longer-search":
        # a lecture's search: >= 8 iterations, UCB choosing a sibling other than the best Q
        import importlib.util
        from pathlib import Path
        spec = importlib.util.spec_from_file_location(
            "make_examples", Path(__file__).resolve().parents[2] / "scripts" / "make_examples.py")
        make = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(make)
        cfg = trace["run"]["config"]
        assert cfg["lc"] == 4 and cfg["c"] == 0.5
        assert "L_c = 4" in example.description and "c = 0.5" in example.description
        assert len(trace["iterations"]) >= 8 and make.explorations(trace) >= 3
    elif example.name == "countdown-large-search":
        # a search at a real model's size (issue 28): >= 300 nodes, six levels deep
        cfg = trace["run"]["config"]
        assert cfg["lc"] == 6 and cfg["c"] == 0.5 and cfg["min_action_prob"] == 0.02
        assert "L_c = 6" in example.description and "0.02" in example.description
        nodes = trace["tree"]["nodes"]
        assert len(nodes) >= 300 and max(n["depth"] for n in nodes) >= 6
    else:
        assert trace["run"]["fixed_slots"] and medal is True


#: result fields that phase C decides (the search's winner and candidates come before it)
DECODED = ("answer_ids", "text", "answer", "verified", "forwards", "sequence_forwards",
           "cache_hits", "standalone_forwards", "standalone_sequences", "order")


def _steps(trace: dict, where: str) -> list:
    return trace["decode"] if where == "decode" else trace["comparison"]["steps"]


def parting_step(old: list, new: list) -> int | None:
    """Index of the first decode step that unmasked other slots, or None."""
    return next((k for k, (a, b) in enumerate(zip(old, new)) if a["slots"] != b["slots"]),
                None)


def tied(step: dict) -> bool:
    """The step chose among eligible slots whose recorded scores are equal to float32
    rounding (e.g. EOS slots at p = 0.9999995 each): which one goes first depends on the
    CPU's rounding of the same forward."""
    scores = sorted(step["eligible"]["score"], reverse=True)
    return len(scores) > 1 and scores[0] - scores[1] <= 1e-6 * max(abs(scores[0]), 1e-12)


def cut_at_parting(old: dict, new: dict) -> list[str]:
    """Where a decode (phase C or the greedy comparison) of ``new`` parts from ``old``'s:
    require a recorded tie there and cut both decodes (and what they decide) at it, in
    place. Returns where they parted."""
    parted = []
    for where in ("decode", "comparison"):
        k = parting_step(_steps(old, where), _steps(new, where))
        if k is None:
            continue
        assert tied(_steps(old, where)[k]), (
            f"the {where} steps part at step {k} where the recorded scores were not tied")
        for t in (old, new):
            if where == "decode":
                t["decode"] = t["decode"][:k]
                for key in DECODED:
                    t["result"].pop(key, None)
                t.pop("stats", None)
            else:
                t["comparison"]["steps"] = t["comparison"]["steps"][:k]
                t["comparison"].pop("result", None)
        parted.append(f"{where} at step {k}")
    return parted


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.name for e in EXAMPLES])
def test_example_reproduces_from_its_own_config(example):
    """The same trace, timings aside. Where a decode chose between slots tied to float32
    rounding, another CPU may take the other one and the decodes part there: then the
    parting step's recorded scores must be tied, and everything before it (the whole
    search included) must still match."""
    trace = load_example(example)
    old, new = comparable(trace), comparable(rerun(trace, example.task))

    def both_ways():
        return (differences(old, new, rel=REL, abs_tol=ABS)
                + differences(new, old, rel=REL, abs_tol=ABS))  # and nothing new either
    diff = both_ways()
    if diff and (parted := cut_at_parting(old, new)):
        rest = both_ways()
        assert not rest, "\n".join(rest)
        print(f"{example.name}: decodes part at a recorded tie ({', '.join(parted)}); "
              "compared everything before")
        return
    assert not diff, (
        f"{example.name} no longer reproduces (the model or the engine changed?): "
        "regenerate with python scripts/make_examples.py\n" + "\n".join(diff))


def test_a_decode_may_part_only_at_a_recorded_tie():
    """The tie rule above can fail: an untied step that parts is reported, and a tied one
    cuts the comparison there and drops only what that decode decides."""
    trace = comparable(load_example(EXAMPLES[0]))
    steps = trace["comparison"]["steps"]
    k = next(i for i, st in enumerate(steps) if tied(st) and len(st["eligible"]["slots"]) > 1)
    new = comparable(load_example(EXAMPLES[0]))
    other = next(sl for sl in steps[k]["eligible"]["slots"] if sl not in steps[k]["slots"])
    new["comparison"]["steps"][k]["slots"] = [other]
    old = comparable(load_example(EXAMPLES[0]))
    assert cut_at_parting(old, new) == [f"comparison at step {k}"]
    assert len(old["comparison"]["steps"]) == k and "result" not in old["comparison"]
    assert old["result"] == trace["result"] and old["tree"] == trace["tree"]
    # an untied step
    j = next(i for i, st in enumerate(steps) if not tied(st) and len(st["eligible"]["slots"]) > 1)
    new = comparable(load_example(EXAMPLES[0]))
    new["comparison"]["steps"][j]["slots"] = [
        next(sl for sl in steps[j]["eligible"]["slots"] if sl not in steps[j]["slots"])]
    with pytest.raises(AssertionError, match="not tied"):
        cut_at_parting(comparable(load_example(EXAMPLES[0])), new)


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
