"""Issue 39 item 4: the threshold rule is Fast-dLLM's, ``confidence >= threshold`` (dllm's
``fastdllm/llada/sampler.py`` and ``fastdllm/dream/sampler.py``), not ``>``: a slot whose
probability equals the threshold is committed, and at threshold 1.0 so is every slot whose
probability rounds to 1.0 in float32. (Against Fast-dLLM's own function:
tests/networks/test_fastdllm_cache.py.)"""
import pytest
import torch
from scripted import ScriptedLM

from medal.config import GenerationConfig
from medal.decoding import threshold_pick
from medal.engine import Run

NEG = -1e9   # exp(NEG - 0) is 0.0 in float32: the slot's other tokens carry no mass


class DesignedLM(ScriptedLM):
    """Four answer slots with probabilities chosen to be exact in float32, whatever is
    committed (tokens 0..3; 4 the mask, 5 EOS):

    * slot 0: tokens 0 and 1 tie at logit 0, the rest NEG: p = 0.5 exactly (1 / (1 + 1));
    * slot 1: token 2 alone: p = 1.0 exactly;
    * slot 2: token 3 at 30, tokens 0..2 at 0: p = 1 / (1 + 3 e^-30) = 1 - 2.8e-13, which
      rounds to 1.0 in float32 (its ulp below 1 is 6e-8);
    * slot 3: tokens 0..3 at 0: p = 0.25 exactly."""

    def __init__(self):
        super().__init__(vocab=6, gen_length=4)

    def expected_logits(self, answer):
        rows = [[0.0, 0.0, NEG, NEG], [NEG, NEG, 0.0, NEG], [0.0, 0.0, 0.0, 30.0],
                [0.0, 0.0, 0.0, 0.0]]
        return torch.tensor([r + [NEG, NEG] for r in rows])


def steps(threshold):
    r = Run(DesignedLM(), task="countdown", prompt="x", strategy="threshold",
            config=GenerationConfig(gen_length=4, block_length=4, lc=1, threshold=threshold),
            decompose=False, trace=True)
    r.finish()
    return r.trace["decode"]


def test_a_slot_at_exactly_the_threshold_is_committed():
    """Threshold 0.5: slot 0's p is 0.5 exactly, so it is committed in the first step
    with slots 1 and 2 (p = 1); slot 3 (p = 0.25) comes alone next. A strict ``>`` left
    slot 0 for a second step."""
    d = steps(0.5)
    first = dict(zip(d[0]["eligible"]["slots"], d[0]["eligible"]["p"]))
    assert first == {0: 0.5, 1: 1.0, 2: 1.0, 3: 0.25}       # exact in float32
    assert [s["slots"] for s in d] == [[0, 1, 2], [3]]


def test_threshold_one_commits_every_slot_whose_probability_rounds_to_one():
    """Threshold 1.0: slots 1 (p = 1 exactly) and 2 (p = 1 - 2.8e-13, 1.0 in float32) in
    one step, as Fast-dLLM's ``>=`` does; then the rest one at a time (no other p reaches
    1). A strict ``>`` committed one slot a step (the most confident, slot 1)."""
    d = steps(1.0)
    assert [s["slots"] for s in d] == [[1, 2], [0], [3]]


def test_threshold_pick_at_ties():
    """The rule itself: every candidate with p >= threshold, and the best by priority;
    a deferred slot (priority -inf) joins only as the best."""
    p = torch.tensor([0.9, 0.5, 0.5, 0.2, 0.7])
    prio = p.clone()
    cands = torch.tensor([0, 1, 2, 3, 4])
    assert threshold_pick(prio, p, cands, 0.5).tolist() == [0, 1, 2, 4]
    assert threshold_pick(prio, p, cands, 0.9).tolist() == [0]
    assert threshold_pick(prio, p, torch.tensor([1, 2, 3]), 0.95).tolist() == [1]  # best: first of the tie
    prio[1] = float("-inf")
    assert threshold_pick(prio, p, cands, 0.5).tolist() == [0, 2, 4]


@pytest.mark.parametrize("threshold", [0.5, 1.0])
def test_threshold_phase_c_uses_the_same_rule(threshold):
    """MEDAL's threshold phase C commits by the same rule: at threshold 1.0 the two slots
    whose p is 1.0 go together in its first step."""
    r = Run(DesignedLM(), task="countdown", prompt="x", strategy="medal-no-mcts",
            config=GenerationConfig(gen_length=4, block_length=4, lc=1, threshold=threshold,
                                    threshold_phase_c=True), decompose=False, trace=True)
    r.finish()
    first = r.trace["decode"][0]
    above = {s for s, p in zip(first["eligible"]["slots"], first["eligible"]["p"])
             if p >= threshold}
    assert above == ({0, 1, 2} if threshold == 0.5 else {1, 2})
    assert above <= set(first["slots"])
