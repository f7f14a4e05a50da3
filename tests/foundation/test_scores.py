import math

import pytest
import torch

from medal.scores import (EPS, action_set, batch_action_sets, confidence_scores,
                          cumulative_information_gain, entropy, information_gain,
                          margin_only_scores, top2_margin, ucb)


def test_entropy_matches_hand_computation():
    p = torch.tensor([0.5, 0.25, 0.25])
    expected = -(0.5 * math.log(0.5 + EPS) + 2 * 0.25 * math.log(0.25 + EPS))
    assert entropy(p).item() == pytest.approx(expected, rel=1e-6)
    assert entropy(torch.tensor([1.0, 0.0])).item() == pytest.approx(0.0, abs=1e-6)


def test_confidence_score_formula():
    probs = torch.tensor([[0.6, 0.3, 0.1]])
    H = entropy(probs)
    margin = top2_margin(probs)
    s = confidence_scores(probs, H, margin, gamma=5.0)
    h = -(0.6 * math.log(0.6 + EPS) + 0.3 * math.log(0.3 + EPS) + 0.1 * math.log(0.1 + EPS))
    factor = math.exp(-h) / (1 + math.exp(-5.0 * 0.3))
    assert margin.item() == pytest.approx(0.3)
    assert s[0].tolist() == pytest.approx([0.6 * factor, 0.3 * factor, 0.1 * factor], rel=1e-5)


def test_margin_only_scores_rank_slots_by_margin():
    probs = torch.tensor([[0.9, 0.05], [0.5, 0.4]])
    s = margin_only_scores(probs, top2_margin(probs))
    assert s[0, 0].item() == pytest.approx(0.85)
    assert s[1, 0].item() == pytest.approx(0.1)
    assert s[1, 1].item() == pytest.approx(0.1 * 0.4 / 0.5)


def test_action_set_takes_top_k1_per_slot_then_top_k2():
    # slot 0 confident, slot 1 uncertain, slot 2 not eligible
    top_probs = torch.tensor([[0.8, 0.15, 0.05], [0.4, 0.35, 0.25], [0.99, 0.01, 0.0]])
    top_tokens = torch.tensor([[1, 2, 3], [4, 5, 6], [7, 8, 9]])
    H = entropy(top_probs)
    eligible = torch.tensor([True, True, False])
    acts = action_set(top_tokens, top_probs, H, eligible, k1=2, k2=3, gamma=5.0)
    assert len(acts) == 3
    assert all(a.slot in (0, 1) for a in acts)
    s = confidence_scores(top_probs, H, top2_margin(top_probs), 5.0)
    pool = sorted([(s[i, r].item(), i, top_tokens[i, r].item()) for i in (0, 1) for r in (0, 1)],
                  reverse=True)[:3]
    assert [(a.slot, a.token) for a in acts] == [(i, t) for _, i, t in pool]
    assert [a.score for a in acts] == pytest.approx([v for v, _, _ in pool])
    # K1=1 keeps only the best token of each slot
    acts1 = action_set(top_tokens, top_probs, H, eligible, k1=1, k2=5, gamma=5.0)
    assert sorted((a.slot, a.token) for a in acts1) == [(0, 1), (1, 4)]


def test_min_prob_leaves_implausible_actions_out_in_score_order():
    """Beyond the paper (``min_action_prob``): of the top-K2 actions, those of probability
    below the floor go; the kept ones stay in score order; at least one stays; 0 is the
    paper's set exactly."""
    top_probs = torch.tensor([[[0.999, 0.0008, 0.0002], [0.6, 0.395, 0.005],
                               [0.998, 0.0015, 0.0005]],
                              [[0.001, 0.0009, 0.0001], [0.002, 0.001, 0.0005],
                               [0.003, 0.001, 0.0001]]])
    top_tokens = torch.arange(18).view(2, 3, 3)
    H = entropy(top_probs)
    eligible = torch.ones(2, 3, dtype=torch.bool)
    paper = batch_action_sets(top_tokens, top_probs, H, eligible, 3, 5, 5.0)
    floor = batch_action_sets(top_tokens, top_probs, H, eligible, 3, 5, 5.0, min_prob=0.01)
    assert paper.counts == [5, 5]
    kept = [(a.slot, a.token) for a in floor.actions(0)]
    assert all(a.p >= 0.01 for a in floor.actions(0)) and floor.counts[0] == 4
    assert kept == [(a.slot, a.token) for a in paper.actions(0) if a.p >= 0.01]
    # nothing plausible: the best action alone stays
    assert floor.counts[1] == 1
    assert floor.actions(1)[0].token == paper.actions(1)[0].token
    zero = batch_action_sets(top_tokens, top_probs, H, eligible, 3, 5, 5.0, min_prob=0.0)
    assert zero.counts == paper.counts and (zero.pairs == paper.pairs).all()


def test_information_gain_hand_computed():
    parent_H = torch.tensor([1.0, 2.0, 0.0, 1.0])
    parent_masked = torch.tensor([True, True, False, True])
    child_H = torch.tensor([0.5, 0.0, 0.0, 0.5])  # slot 1 was filled
    r = information_gain(parent_H, parent_masked, child_H, slot=1)
    assert r == pytest.approx((4.0 - 1.0) / 4.0)
    # the filled slot's own entropy is excluded even if the child reports one
    child_H2 = torch.tensor([0.5, 9.0, 0.0, 0.5])
    assert information_gain(parent_H, parent_masked, child_H2, slot=1) == pytest.approx(0.75)
    # a certain parent gives zero, not a division by zero
    assert information_gain(torch.zeros(2), torch.tensor([True, True]), torch.zeros(2), 0) == 0.0


def test_cumulative_information_gain():
    root_H = torch.tensor([1.0, 1.0, 2.0])
    node_H = torch.tensor([0.0, 0.5, 0.5])
    r = cumulative_information_gain(root_H, torch.tensor([True, True, True]),
                                    node_H, torch.tensor([False, True, True]))
    assert r == pytest.approx((4.0 - 1.0) / 4.0)


def test_ucb():
    assert ucb(0.5, 10, 2, 0.1) == pytest.approx(0.5 + 0.1 * math.sqrt(math.log(10) / 2))
    assert ucb(0.0, 10, 0, 0.1) == math.inf


def test_entropy_totals_sum_each_state_as_alone():
    """The one sum of r_IG's totals: each row's total equals that state's H[masked].sum()
    to the bit, whether the rows have the same number of masked slots (one [B, n] block)
    or not (state by state)."""
    from medal.scores import entropy_totals
    torch.manual_seed(3)
    H = torch.rand(5, 29) * 3
    for masked in (torch.rand(5, 29) > 0.3,                          # unequal counts
                   torch.stack([torch.randperm(29) < 17 for _ in range(5)])):  # 17 each
        assert entropy_totals(H, masked) == [float(h[m].sum()) for h, m in zip(H, masked)]
    assert entropy_totals(H, torch.zeros(5, 29, dtype=torch.bool)) == [0.0] * 5


def test_information_gains_from_totals_equal_each_childs_own():
    """The search's r_IG (one call over the children's entropy totals, each summed over
    the child's masked slots: its parent's less the action's slot) equals the one-child
    formula to the bit."""
    from medal.scores import entropy_totals, information_gains
    torch.manual_seed(4)
    parent_H, parent_masked = torch.rand(9) * 2, torch.rand(9) > 0.2
    slots = torch.nonzero(parent_masked).flatten()[:4].tolist()
    child_H = torch.rand(len(slots), 9) * 2
    child_masked = parent_masked.repeat(len(slots), 1)
    child_masked[torch.arange(len(slots)), torch.tensor(slots)] = False
    before = entropy_totals(parent_H[None], parent_masked[None])[0]
    assert before == float(parent_H[parent_masked].sum())
    assert information_gains(before, entropy_totals(child_H, child_masked)) == [
        information_gain(parent_H, parent_masked, h, s) for h, s in zip(child_H, slots)]
    assert information_gains(before, []) == []


def test_one_actions_confidence_score_is_the_batched_formula():
    """scores.confidence_score (one action, double precision: what the views show worked
    through) and scores.confidence_scores (the search's batched float32) are one formula:
    equal in float64, and within float32 rounding of the search's figure."""
    import torch

    from medal.scores import confidence_score, confidence_scores
    g = torch.Generator().manual_seed(0)
    p = torch.rand(40, 1, generator=g, dtype=torch.float64)
    H = torch.rand(40, generator=g, dtype=torch.float64) * 4
    margin = torch.rand(40, generator=g, dtype=torch.float64)
    batched = confidence_scores(p, H, margin, 5.0)[:, 0]
    one = [confidence_score(float(p[i, 0]), float(H[i]), float(margin[i]), 5.0)["s"]
           for i in range(40)]
    assert torch.allclose(batched, torch.tensor(one, dtype=torch.float64), rtol=1e-12, atol=0)
    f32 = confidence_scores(p.float(), H.float(), margin.float(), 5.0)[:, 0]
    assert torch.allclose(f32.double(), torch.tensor(one, dtype=torch.float64), rtol=2e-6, atol=0)


def test_ucb_is_q_plus_its_bonus():
    from medal.scores import ucb, ucb_bonus
    assert ucb(0.3, 10, 0, 0.5) == ucb_bonus(10, 0, 0.5) == math.inf
    assert ucb(0.3, 10, 4, 0.5) == 0.3 + ucb_bonus(10, 4, 0.5) == 0.3 + 0.5 * math.sqrt(math.log(10) / 4)
