"""Issue 38, beyond the paper: the "ig-certain" reward, r_IG less the committed slot's own
share of the parent's entropy -- the formula, the search's rewards and the candidate
choice on the shipped Sudoku model."""
from __future__ import annotations

import pytest

from medal import load_model
from medal.config import GenerationConfig
from medal.engine import Run
from medal.errors import InputError
from medal.scores import entropy_total, uncertainty_penalised_gains
from medal.tasks import SUDOKU


@pytest.fixture(scope="module")
def sudoku():
    return load_model("builtin:sudoku")


def test_formula():
    # (0.5 - 1 * 0.8 / 4, 0.25 - 1 * 0.4 / 4); no parent entropy: unchanged
    assert uncertainty_penalised_gains([0.5, 0.25], [0.8, 0.4], 4.0, 1.0) == [0.3, 0.15]
    assert uncertainty_penalised_gains([0.5], [0.8], 4.0, 0.5) == [0.4]
    assert uncertainty_penalised_gains([0.5], [0.8], 0.0, 1.0) == [0.5]


def test_off_by_default_and_labelled():
    assert GenerationConfig().reward == "ig"
    with pytest.raises(InputError, match="uncertainty_penalty"):
        GenerationConfig(uncertainty_penalty=-1)


def test_search_rewards_and_choice(sudoku):
    """Every expanded child keeps the paper's r_IG and is rewarded r_IG less its slot's
    share of the parent's entropy; the winner has the best cumulative IG less its
    commitments' share of the root's; weight 0 is the paper's search exactly."""
    for p in SUDOKU.generate(5, seed=91):
        run = Run(sudoku, task="sudoku", problem=p, strategy="medal",
                  config=GenerationConfig(reward="ig-certain"))
        res = run.finish()
        for node in run.mcts.nodes[1:]:
            if node.r_ig is None:
                continue
            parent = node.parent.evaluation
            h = float(parent.entropy[node.action.slot])
            total = entropy_total(parent.entropy, parent.masked)
            # the one subtraction of the formula, in float64 from the same float32 sums
            assert node.reward == pytest.approx(node.r_ig - h / total, abs=1e-12)
        root = run.mcts.root.evaluation
        scores = {}
        for c in res.search.candidates:
            node = run.mcts.nodes[c["node"]]
            slots = [n.action.slot for n in node.path()[1:]]
            share = float(root.entropy[slots].sum()) / c["root_entropy_sum"]
            assert c["score"] == pytest.approx(c["cumulative_ig"] - share, abs=1e-12)
            scores[c["node"]] = c["score"]
        assert res.search.winner == max(scores, key=scores.get)
        assert "[reward ig-certain, beyond the paper]" in res.search.why
        paper = Run(sudoku, task="sudoku", problem=p, strategy="medal").finish()
        zero = Run(sudoku, task="sudoku", problem=p, strategy="medal",
                   config=GenerationConfig(reward="ig-certain", uncertainty_penalty=0)).finish()
        assert (zero.answer_ids, zero.search.winner) == (paper.answer_ids, paper.search.winner)


def test_it_commits_fewer_uncertain_slots(sudoku):
    """What it is for: on Sudoku the paper's reward commits less probable digits than the
    variant (mean p of the winner's commitments over 20 problems)."""
    def mean_p(**cfg):
        ps = []
        for p in SUDOKU.generate(20, seed=93):
            run = Run(sudoku, task="sudoku", problem=p, strategy="medal",
                      config=GenerationConfig(**cfg))
            res = run.finish()
            ps += [n.action.p for n in run.mcts.nodes[res.search.winner].path()[1:]]
        return sum(ps) / len(ps)
    assert mean_p(reward="ig-certain") > mean_p()
