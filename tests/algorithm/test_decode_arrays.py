"""The decode step's NumPy helpers (medal/decoding.py: token_figure, slot_confidence_array,
eligible_candidates; medal/runner.py: ModelRunner.evaluate_entry) agree to the bit with
the per-slot tensor forms they replaced, on the shipped built-in models' own figures;
slot_confidence (the tensor form forks and rollouts use) is that table too."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from medal.decoding import (RULES, descending_order, eligible_candidates, eligible_slots,
                            slot_confidence, slot_confidence_array, token_figure)
from medal.engine import Run
from medal.models.builtin import BuiltinModel
from medal.runner import ModelRunner
from medal.scores import slot_scores
from medal.tasks import get_task


def _bits(a) -> np.ndarray:
    a = a.numpy() if isinstance(a, torch.Tensor) else a
    return np.ascontiguousarray(a).view(np.uint32 if a.dtype == np.float32 else a.dtype)


def _per_slot_confidence(rule, ev, tokens, gamma, scoring, generator) -> torch.Tensor:
    """The per-slot tensor form the NumPy rule table replaced (written out here, so that
    the table is checked against an independent form): the proposed token's probability
    or score summed over its one hit among the slot's top-k tokens."""
    hit = ev.top_tokens == tokens.unsqueeze(1)
    if rule in ("low_confidence", "threshold", "info_gain"):
        return (ev.top_probs * hit).sum(1)
    if rule == "random":
        return torch.rand(len(tokens), generator=generator)
    if rule in ("entropy", "eb"):
        return -ev.entropy
    if rule == "margin":
        return ev.margin
    if rule == "confidence":
        return (slot_scores(ev.top_probs, ev.entropy, gamma, scoring) * hit).sum(1)
    raise ValueError(rule)


def _states(task: str, top_k: int):
    """A runner on the shipped model of ``task`` and some of its answer states: the root,
    then the states of a greedy decode, some with every slot filled."""
    model = BuiltinModel.load(task)
    t = get_task(task)
    problem = t.generate(1, seed=3)[0]
    run = Run(model, task=t, problem=problem, strategy="greedy")
    run.finish()
    runner = ModelRunner(model, run.runner.prompt.tolist(), run.config.gen_length,
                         top_k=top_k, fixed=run.fixed)
    final = torch.tensor(run.result.answer_ids)
    states = [runner.initial_answer()]
    for step in range(max(s for s in run.result.order if s is not None) + 1):
        a = states[-1].clone()
        for slot, when in enumerate(run.result.order):
            if when == step:
                a[slot] = final[slot]
        states.append(a)
    return model, runner, run.config, states[:-1]   # the last has no masks


@pytest.mark.parametrize("task,top_k", [("countdown", 64), ("sudoku", 64), ("countdown", 3)])
def test_decode_step_arrays_equal_the_tensor_forms(task, top_k):
    model, runner, cfg, states = _states(task, top_k)
    g = torch.Generator().manual_seed(0)
    for answer in states:
        ev = runner.evaluate_one(answer)
        counts = (runner.forwards, runner.cache_hits, runner.requested)
        batch, b = runner.evaluate_entry(answer)   # the same state: a cache hit
        assert (runner.forwards, runner.cache_hits, runner.requested) == \
            (counts[0], counts[1] + 1, counts[2] + 1)
        assert batch.evaluations[b] is ev
        _, masked, H, top_tokens, top_probs = (a[b] for a in batch.arrays)
        # eligible slots, as torch.nonzero of the eligible mask
        for block_length in (1, 4, cfg.block_length, len(answer)):
            eligible, block = eligible_slots(ev.masked, block_length)
            slots, block2 = eligible_candidates(masked, block_length)
            assert block2 == block
            assert slots.tolist() == torch.nonzero(eligible).flatten().tolist()
        # proposed tokens: argmax, sampled (some outside the top-k when k is 3), forced
        sampled = torch.randint(0, model.vocab_size, (len(answer),), generator=g)
        for tokens in (ev.sample_tokens(), ev.sample_tokens(g, 1.0), sampled):
            hit = ev.top_tokens == tokens.unsqueeze(1)
            p_tok = token_figure(top_probs, top_tokens, tokens.numpy())
            assert np.array_equal(_bits(p_tok), _bits((ev.top_probs * hit).sum(1)))
            for scoring in ("confidence", "margin"):
                for gamma in (0.0, 5.0):
                    s = slot_scores(ev.top_probs, ev.entropy, gamma, scoring)
                    got = token_figure(slot_scores(top_probs, H, gamma, scoring),
                                       top_tokens, tokens.numpy())
                    assert np.array_equal(_bits(got), _bits((s * hit).sum(1)))
                    for rule in RULES:
                        if rule in ("info_gain",):
                            continue   # its confidence is low_confidence's (p_tok)
                        seed = int(torch.randint(0, 1 << 30, (1,), generator=g))
                        want = _per_slot_confidence(rule, ev, tokens, gamma, scoring,
                                                    torch.Generator().manual_seed(seed))
                        tensor = slot_confidence(rule, ev, tokens, gamma, scoring,
                                                 torch.Generator().manual_seed(seed))
                        assert np.array_equal(_bits(tensor), _bits(want)), (rule, scoring)
                        have = slot_confidence_array(rule, H, top_tokens, top_probs,
                                                     tokens.numpy(), p_tok, gamma, scoring,
                                                     torch.Generator().manual_seed(seed))
                        assert np.array_equal(_bits(have), _bits(want)), (rule, scoring)
                        if tokens is not sampled and tokens.equal(ev.top_tokens[:, 0]):
                            # the argmax: the first column's figures
                            first = slot_confidence_array(
                                rule, H, top_tokens, top_probs, None, top_probs[:, 0], gamma,
                                scoring, torch.Generator().manual_seed(seed))
                            assert np.array_equal(_bits(first), _bits(want)), (rule, scoring)
                            order = descending_order(first)
                            assert order.tolist() == torch.argsort(
                                want, descending=True, stable=True).tolist()


def test_descending_order_is_torchs_stable_descending_argsort():
    g = torch.Generator().manual_seed(1)
    inf, nan = float("inf"), float("nan")
    cases = [[0.5, 0.5, 0.25, 0.5], [0.0, -0.0, 0.0, -0.0, 1.0], [-0.0, 0.0], [-inf, -inf],
             [-inf, 0.3, -inf, 0.3, inf], [0.1, nan, 0.2, nan, -inf], [inf, nan], [], [1.0]]
    cases += [torch.randint(0, 4, (n,), generator=g).float().div(4).tolist() for n in (7, 30, 64)]
    for values in cases:
        x = np.array(values, dtype=np.float32)
        want = torch.argsort(torch.tensor(x), descending=True, stable=True).tolist()
        assert descending_order(x).tolist() == want, values
        for n in (1, 2, 5):
            assert descending_order(x, n)[:n].tolist() == want[:n], (values, n)


def test_evaluate_entry_counts_as_evaluate_one(builtin_model):
    """A state evaluated by evaluate_entry costs and counts what evaluate_one's does."""
    t = get_task("countdown")
    run = Run(builtin_model, task=t, problem=t.generate(1, seed=5)[0], strategy="greedy")
    one = ModelRunner(builtin_model, run.runner.prompt.tolist(), run.config.gen_length)
    two = ModelRunner(builtin_model, run.runner.prompt.tolist(), run.config.gen_length)
    a = one.initial_answer()
    b = a.clone()
    b[0] = 3
    for answer in (a, b, a):
        ev = one.evaluate_one(answer)
        batch, row = two.evaluate_entry(answer)
        for name in ("answer", "masked", "entropy", "top_tokens", "top_probs"):
            assert torch.equal(getattr(ev, name), getattr(batch.evaluations[row], name))
    for k in ("forwards", "sequences", "cache_hits", "requested", "token_passes"):
        assert getattr(one, k) == getattr(two, k), k


@pytest.mark.parametrize("task", ["countdown", "sudoku"])
def test_builtin_decode_masked_is_the_base_form(task):
    """BuiltinModel.decode_masked (the tokenizer's table read directly) shows an answer as
    DiffusionLM.decode_masked does: masks, end tokens, special tokens, any ids."""
    from medal.models.base import DiffusionLM
    model = BuiltinModel.load(task)
    g = torch.Generator().manual_seed(2)
    for n in (0, 1, 5, 28, 81, 120):
        for _ in range(40):
            ids = torch.randint(0, model.vocab_size, (n,), generator=g)
            ids[torch.rand(n, generator=g) < 0.3] = model.mask_id
            for form in (ids, ids.tolist()):
                for mask in ("_", "?"):
                    assert (model.decode_masked(form, mask)
                            == DiffusionLM.decode_masked(model, form, mask))
