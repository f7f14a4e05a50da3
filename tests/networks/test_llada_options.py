"""LLaDA generate.py's ``logits_eos_inf`` and ``confidence_eos_eot_inf`` as engine options.

On the scripted model (tests/conftest.py: 6 tokens, mask 4, EOS 5, logits computed by
hand), where EOS is the argmax of several slots, so both options change what happens."""
from __future__ import annotations

import pytest
import torch

from medal.cli import build_parser, config_from_args
from medal.config import GenerationConfig
from medal.decoding import defer_tokens
from medal.engine import STRATEGIES, Run
from medal.errors import InputError
from medal.scores import action_set

PROMPT = "q"
CFG = dict(gen_length=6, lc=2, max_iterations=3, seed=0)


def _eos_argmax_slots(model, answer):
    return [i for i, row in enumerate(model.expected_logits(answer))
            if int(row.argmax()) == model.eos_id]


def test_off_by_default_and_validated():
    cfg = GenerationConfig()
    assert cfg.logits_eos_inf is False and cfg.confidence_eos_eot_inf is False
    with pytest.raises(InputError, match="logits_eos_inf must be true or false"):
        GenerationConfig(logits_eos_inf="yes")
    args = build_parser().parse_args(["generate", "--logits-eos-inf",
                                      "--confidence-eos-eot-inf"])
    cfg = config_from_args(args)
    assert cfg.logits_eos_inf and cfg.confidence_eos_eot_inf
    assert GenerationConfig.from_json(cfg.to_json()) == cfg  # traces record them


def test_scripted_model_predicts_eos_without_the_options(scripted):
    root = torch.full((6,), scripted.mask_id)
    assert _eos_argmax_slots(scripted, root)  # the options below have something to change
    res = Run(scripted, prompt=PROMPT, strategy="greedy",
              config=GenerationConfig(**CFG)).finish()
    assert scripted.eos_id in res.answer_ids


@pytest.mark.parametrize("strategy", list(STRATEGIES))
def test_logits_eos_inf_never_fills_a_slot_with_eos(scripted, strategy):
    run = Run(scripted, prompt=PROMPT, strategy=strategy,
              config=GenerationConfig(logits_eos_inf=True, **CFG))
    res = run.finish()
    assert scripted.eos_id not in res.answer_ids
    ev = run.runner.evaluate_one(run.runner.initial_answer())
    eos_prob = (ev.top_probs * (ev.top_tokens == scripted.eos_id)).sum(1)
    assert torch.all(eos_prob == 0)  # before the softmax: p(EOS) = 0, entropies without it
    # the other tokens' probabilities are the softmax of the remaining logits
    logits = scripted.expected_logits(run.runner.initial_answer())
    logits[:, [scripted.mask_id, scripted.eos_id]] = float("-inf")
    torch.testing.assert_close(ev.top_probs[:, 0], torch.softmax(logits, -1).max(-1).values)


def _replay(model, cfg):
    """Greedy's decode steps, each with the state it started from and every masked
    slot's proposed token there."""
    from medal.events import DecodeStep
    run = Run(model, prompt=PROMPT, strategy="greedy", config=cfg)
    answer = torch.full((6,), model.mask_id)
    steps = []
    while (event := run.step()) is not None:
        if isinstance(event, DecodeStep):
            proposed = model.expected_logits(answer).argmax(-1)
            masked = [i for i in range(6) if int(answer[i]) == model.mask_id]
            steps.append((event, {i: int(proposed[i]) for i in masked}))
            answer = answer.clone()
            answer[event.slots] = torch.tensor(event.tokens)
    return steps


def test_confidence_eos_eot_inf_unmasks_end_tokens_last(scripted):
    """Greedy (low_confidence) with the option: a slot proposed as EOS is unmasked only
    when every masked slot proposes EOS; without it, some EOS slot goes first."""
    deferred = 0
    for event, proposed in _replay(scripted, GenerationConfig(confidence_eos_eot_inf=True,
                                                              **CFG)):
        assert len(event.slots) == 1
        if event.tokens[0] == scripted.eos_id:
            assert set(proposed.values()) == {scripted.eos_id}
        elif scripted.eos_id in proposed.values():
            deferred += 1
    assert deferred  # the option had something to defer
    plain = _replay(scripted, GenerationConfig(**CFG))
    assert any(e.tokens[0] == scripted.eos_id and set(p.values()) != {scripted.eos_id}
               for e, p in plain)  # ... which greedy without it does not defer


def test_defer_tokens_and_action_sets():
    conf = torch.tensor([0.5, 0.25, 0.75])
    tokens = torch.tensor([5, 1, 3])
    assert defer_tokens(conf, tokens, {5, 3}).tolist() == [float("-inf"), 0.25, float("-inf")]
    top_tokens = torch.tensor([[5, 1], [2, 3]])
    top_probs = torch.tensor([[0.9, 0.1], [0.6, 0.4]])
    H = torch.tensor([0.1, 0.5])
    eligible = torch.tensor([True, True])
    plain = action_set(top_tokens, top_probs, H, eligible, 2, 4, 5.0)
    late = action_set(top_tokens, top_probs, H, eligible, 2, 4, 5.0, late_tokens={5})
    assert plain[0].token == 5  # the most confident action is EOS ...
    assert [a.token for a in late][-1] == 5  # ... and with the option it comes last
    assert sorted((a.slot, a.token, a.score) for a in plain) == \
        sorted((a.slot, a.token, a.score) for a in late)  # same actions, same scores
    # an ineligible slot never enters, late or not
    only = action_set(top_tokens, top_probs, H, torch.tensor([False, True]), 2, 4, 5.0,
                      late_tokens={5, 2})
    assert {a.slot for a in only} == {1} and [a.token for a in only] == [3, 2]


def test_medal_search_defers_end_tokens(scripted):
    cfg = GenerationConfig(confidence_eos_eot_inf=True, **CFG)
    run = Run(scripted, prompt=PROMPT, strategy="medal", config=cfg)
    run.finish()
    for node in run.mcts.nodes:
        toks = [a.token for a in node.actions]
        if scripted.eos_id in toks:
            first_late = toks.index(scripted.eos_id)
            assert all(t == scripted.eos_id for t in toks[first_late:])
