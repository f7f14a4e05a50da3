"""The per-child work of an expansion is batched: one action-set pass and one reward pass
over the K2 children, not K2; and the batched action sets equal the one-state computation to the bit."""
import torch

from medal import scores, search
from medal.config import GenerationConfig
from medal.runner import ModelRunner
from medal.scores import (batch_action_sets, confidence_scores, entropy_penalty,
                          margin_factor, top2_margin)


def test_one_action_set_pass_and_one_forward_per_expansion(scripted, monkeypatch):
    calls = []
    real = scores.batch_action_sets

    def counting(top_tokens, *args, **kwargs):
        calls.append(top_tokens.shape[0])
        return real(top_tokens, *args, **kwargs)

    monkeypatch.setattr(search, "batch_action_sets", counting)
    info_calls = []
    monkeypatch.setattr(search, "information_gains",
                        lambda *a, **k: info_calls.append(len(a[1])) or scores.information_gains(*a, **k))
    cfg = GenerationConfig(lc=4, candidates=50, max_iterations=6).resolved(6, 3, 6)
    runner = ModelRunner(scripted, scripted.encode_prompt("q"), cfg.gen_length)
    mcts = search.MCTS(runner, cfg)
    expansions = 0
    for _ in range(6):
        for event in mcts.iterate():
            if event.kind == "expansion":
                expansions += 1
                # the children's action sets were made in one call over all of them
                assert calls[-1] == len(event.children) == 5 or event.children[0].depth >= 4
    # the root's pass, then one per expansion whose children are below L_c
    assert len(calls) <= 1 + expansions and calls[0] == 1
    assert all(b == 5 for b in calls[1:])
    # every expansion's rewards: one pass over all its children (one r_IG path, no per-child call)
    assert info_calls == [5] * expansions
    assert runner.forwards == 1 + expansions


def test_margin_factor_rounds_each_row_as_one_row_alone():
    torch.manual_seed(0)
    for L in (1, 7, 19, 28, 33, 256):
        x = torch.rand(5, L) * 2 - 1
        alone = torch.stack([torch.sigmoid(5.0 * row) for row in x.unbind(0)])
        assert torch.equal(margin_factor(x, 5.0), alone)
        assert torch.equal(margin_factor(x[0], 5.0), alone[0])
        assert torch.equal(entropy_penalty(x), torch.stack([torch.exp(-row) for row in x]))


def test_confidence_scores_of_a_batch_are_each_states_alone():
    """One formula for one state (phase C, a fork) and for a search's batch: a state's
    scores do not depend on its place in the batch."""
    torch.manual_seed(2)
    for L in (6, 19, 28, 81):
        probs = torch.softmax(torch.randn(7, L, 40) * 3, -1).topk(8, -1).values
        H = torch.rand(7, L) * 3
        margin = top2_margin(probs)
        batch = confidence_scores(probs, H, margin, 5.0)
        for b in range(7):
            assert torch.equal(batch[b], confidence_scores(probs[b], H[b], margin[b], 5.0))
        assert torch.equal(confidence_scores(probs.view(7, 1, L, 8), H.view(7, 1, L),
                                             margin.view(7, 1, L), 5.0), batch.view(7, 1, L, 8))
        # NumPy arrays (the search's bookkeeping): the same scores to the bit
        assert (confidence_scores(probs.numpy(), H.numpy(), margin.numpy(), 5.0)
                == batch.numpy()).all()


def test_batched_action_sets_equal_one_state_at_a_time():
    torch.manual_seed(1)
    for L in (6, 19, 28):
        probs, tokens = torch.softmax(torch.randn(5, L, 82) * 3, -1).topk(64, -1)
        H = torch.rand(5, L) * 3
        eligible = torch.rand(5, L) > 0.4
        sets = batch_action_sets(tokens, probs, H, eligible, 3, 5, 5.0)
        for b in range(5):
            one = batch_action_sets(tokens[b:b + 1], probs[b:b + 1], H[b:b + 1],
                                    eligible[b:b + 1], 3, 5, 5.0)
            assert sets.actions(b) == one.actions(0)
