"""Issue 38: every bench table shows the candidates' headroom (the oracle over a search's
C candidates, a uniformly random pick of them) and, where the task has one right answer,
how many of the first L_c commitments are wrong -- on the shipped Sudoku model."""
from __future__ import annotations

import statistics

import pytest

from medal import load_model
from medal.bench import (bench, commitment_summary, commitments, format_table, run_record,
                         summarise)
from medal.config import GenerationConfig
from medal.engine import Run
from medal.tasks import SUDOKU
from medal.tasks.sudoku import solve

STRATEGIES = ["greedy", "medal", "medal-order", "medal-random-choice"]


@pytest.fixture(scope="module")
def model():
    return load_model("builtin:sudoku")


@pytest.fixture(scope="module")
def problems():
    return SUDOKU.generate(12, seed=77)


@pytest.fixture(scope="module")
def records(model, problems):
    return bench(model, "sudoku", problems, STRATEGIES, GenerationConfig(), progress=False)


def test_headroom_columns(records):
    """The oracle is right where any candidate's phase-C answer verifies; the random pick is
    the mean share of right candidates; both computed from the records' own candidates.
    MEDAL's answer is one of its candidates', so the oracle bounds it; medal-order has one
    candidate, so its oracle, random pick and accuracy coincide."""
    s = summarise(records, STRATEGIES)
    medal = [r for r in records if r["strategy"] == "medal"]
    assert s["medal"]["oracle_accuracy"] == statistics.fmean(
        any(c["final_verified"] for c in r["candidates"]) for r in medal)
    assert s["medal"]["random_choice_accuracy"] == statistics.fmean(
        sum(c["final_verified"] for c in r["candidates"]) / len(r["candidates"]) for r in medal)
    assert s["medal"]["oracle_accuracy"] >= s["medal"]["accuracy"]
    assert s["medal"]["candidate_problems"] == 12
    o = s["medal-order"]
    assert o["oracle_accuracy"] == o["random_choice_accuracy"] == o["accuracy"]
    assert "oracle_accuracy" not in s["greedy"]
    table = format_table(s)
    head = table.splitlines()[0].split()
    assert head[:5] == ["strategy", "acc", "95%", "CI", "oracle"] and "rand-pick" in head
    row = next(ln for ln in table.splitlines() if ln.startswith("medal "))
    assert f"{s['medal']['oracle_accuracy']:.1%}" in row


def test_commitments_are_judged_against_the_solution(model, problems, records):
    """A decoder's commitments are its first L_c writes, in order, each with the
    probability of the token it wrote (greedy writes its argmax: the top probability) and
    wrong exactly where the character differs from the puzzle's unique solution; MEDAL's
    are its winner's path with the nodes' r_IG."""
    lc = 3
    for r in records:
        sol = solve(SUDOKU.parse_problem(r["problem"]))
        cs = r["commitments"]
        assert len(cs) == lc
        text = r["text"]
        for c in cs:
            # a committed slot keeps its character to the end
            assert c["wrong"] == (text[c["slot"]] != sol[c["slot"]])
            assert 0 < c["p"] <= 1
        if r["strategy"] == "greedy":
            order = sorted((st, slot) for slot, st in enumerate(
                Run(model, task="sudoku", problem=r["problem"], strategy="greedy").finish().order)
                           if st is not None)[:lc]
            assert [c["slot"] for c in cs] == [slot for _, slot in order]
            assert all(c["r_ig"] is None for c in cs)
        elif r["strategy"] == "medal":
            assert all(c["r_ig"] is not None for c in cs)
    run = Run(model, task="sudoku", problem=problems[0], strategy="greedy")
    run.finish()
    first = commitments(run)[0]
    ev = run.runner.evaluate_one(run.runner.initial_answer())
    assert first["p"] == float(ev.top_probs[first["slot"], 0])


def test_commitment_summary_arithmetic():
    rows = [{"verified": False, "commitments": [{"wrong": True, "p": 0.5, "r_ig": 0.3},
                                                 {"wrong": False, "p": 0.9, "r_ig": 0.1}]},
            {"verified": True, "commitments": [{"wrong": False, "p": 0.7, "r_ig": 0.2},
                                                {"wrong": False, "p": 0.8, "r_ig": None}]},
            {"verified": True, "commitments": [{"wrong": None, "p": 0.7, "r_ig": 0.2}]}]
    m = commitment_summary(rows)
    assert m["problems"] == 2 and m["commitments"] == 4   # the unjudged row is left out
    assert m["share_problems_with_a_wrong_commitment"] == 0.5
    assert m["share_commitments_wrong"] == 0.25
    assert m["wrong_commitment_and_wrong_answer"] == 1
    assert m["mean_p_wrong"] == 0.5 and m["mean_p_right"] == pytest.approx(0.8, abs=1e-15)
    assert m["mean_r_ig_wrong"] == 0.3 and m["mean_r_ig_right"] == pytest.approx(0.15, abs=1e-15)
    assert commitment_summary([{"verified": True, "commitments": [{"wrong": None}]}]) is None


def test_unjudged_tasks_carry_no_wrong_column():
    twins = load_model("builtin:twins")
    from medal.tasks import get_task
    recs = bench(twins, "twins", get_task("twins").generate(2, seed=5), ["greedy", "medal"],
                 GenerationConfig(), progress=False)
    assert all(c["wrong"] is None for r in recs for c in r["commitments"])
    s = summarise(recs, ["greedy", "medal"])
    assert "commitments" not in s["medal"] and "wrong-L_c" not in format_table(s)
