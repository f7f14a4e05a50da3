import json

import pytest
import torch

from medal.config import GenerationConfig
from medal.decoding import eb_count
from medal.engine import STRATEGIES, Run, generate
from medal.errors import InputError
from medal.trace import dumps, validate_trace

PROBLEM = {"numbers": [4, 18, 13], "target": 20}


def strip_timing(trace):
    trace = json.loads(dumps(trace))
    trace.pop("timing")
    return trace


@pytest.mark.parametrize("strategy", list(STRATEGIES))
def test_every_strategy_runs_and_fills_every_slot(tiny_model, strategy):
    cfg = GenerationConfig(seed=0, max_iterations=30)
    run = Run(tiny_model, problem=PROBLEM, strategy=strategy, config=cfg, trace=True)
    res = run.finish()
    assert tiny_model.mask_id not in res.answer_ids
    assert len(res.answer_ids) == tiny_model.default_gen_length
    assert all(o is not None for o in res.order)
    assert res.forwards >= 1 and res.sequence_forwards >= res.forwards
    assert res.verified in (True, False)
    validate_trace(json.loads(dumps(run.trace)))


def test_same_seed_same_trace(tiny_model):
    def trace(seed):
        run = Run(tiny_model, problem=PROBLEM, strategy="medal",
                  config=GenerationConfig(seed=seed, simulation="sample", temperature=0.7),
                  trace=True, compare_greedy=True)
        run.finish()
        return strip_timing(run.trace)

    a, b = trace(3), trace(3)
    assert a == b
    assert trace(4) != a


def test_sampled_strategies_depend_on_seed(tiny_model):
    outs = {generate(tiny_model, problem=PROBLEM, strategy="random",
                     config=GenerationConfig(seed=s)).order.__repr__() for s in range(3)}
    assert len(outs) > 1


def test_steps_and_blocks(tiny_model):
    cfg = GenerationConfig(steps=8, block_length=7, gen_length=28, seed=0)
    run = Run(tiny_model, problem=PROBLEM, strategy="greedy", config=cfg, trace=True)
    res = run.finish()
    steps = run.trace["decode"]
    # 4 blocks of 7 slots, 2 steps each: 4 then 3 slots per block
    assert [len(s["slots"]) for s in steps] == [4, 3] * 4
    assert [s["block"] for s in steps] == [0, 0, 1, 1, 2, 2, 3, 3]
    # every slot of block b is unmasked before any slot of block b + 1
    first = [min(res.order[b * 7:(b + 1) * 7]) for b in range(4)]
    last = [max(res.order[b * 7:(b + 1) * 7]) for b in range(4)]
    assert all(last[b] < first[b + 1] for b in range(3))


def test_medal_searches_inside_the_first_block(tiny_model):
    cfg = GenerationConfig(steps=28, block_length=7, lc=3, seed=0)
    run = Run(tiny_model, problem=PROBLEM, strategy="medal", config=cfg, trace=True)
    run.finish()
    for node in run.trace["tree"]["nodes"][1:]:
        assert node["action"]["slot"] < 7


def test_phase_c_starts_where_the_search_stopped(tiny_model):
    run = Run(tiny_model, problem=PROBLEM, strategy="medal", config=GenerationConfig(lc=4, seed=0),
              trace=True)
    res = run.finish()
    first_decode = run.trace["decode"][0]
    assert first_decode["step"] == 4
    assert sorted(o for o in res.order if o is not None) == sorted(res.order)
    assert sorted(res.order)[:4] == [0, 1, 2, 3]


def test_eb_count():
    assert eb_count(torch.tensor([0.1, 0.2, 5.0]), 0.5) == 3  # 0.1 + 0.2 <= 0.5
    assert eb_count(torch.tensor([0.4, 0.3, 0.2]), 0.1) == 1
    assert eb_count(torch.tensor([2.0]), 0.0) == 1


def test_bst5_votes(tiny_model):
    res = generate(tiny_model, problem=PROBLEM, strategy="bst5", config=GenerationConfig(seed=0))
    assert sum(res.vote.votes.values()) == 5
    chosen = res.vote.samples[res.vote.chosen_sample]["answer"]
    assert res.vote.votes[chosen] == max(res.vote.votes.values())
    assert res.answer == chosen


def test_decomposition_switch(tiny_model, scripted):
    # the built-in Countdown model: off by default (measured to hurt), on when asked
    default = Run(tiny_model, problem=PROBLEM, strategy="medal")
    on = Run(tiny_model, problem=PROBLEM, strategy="medal", config=GenerationConfig(decompose=True))
    off = Run(tiny_model, problem=PROBLEM, strategy="medal-no-decomposition",
              config=GenerationConfig(decompose=True))
    base = Run(tiny_model, problem=PROBLEM, strategy="greedy")
    assert default.model_prompt == "Use 4, 18, 13 to make 20."
    assert on.model_prompt == "Use 4, 18, 13 to make 20. Solve in 2 steps."
    assert off.model_prompt == base.model_prompt == "Use 4, 18, 13 to make 20."
    forced = Run(tiny_model, problem=PROBLEM, strategy="greedy", decompose=True)
    assert forced.model_prompt == on.model_prompt
    # an instruct LLM follows the paper: MEDAL decomposes, the baselines do not
    llm = Run(scripted, prompt="Use 4, 18, 13 to make 20.", strategy="medal")
    assert "Subtask 3:" in llm.model_prompt and llm.decompose
    assert not Run(scripted, prompt="Use 4, 18, 13 to make 20.", strategy="greedy").decompose


def test_builtin_countdown_decodes_in_blocks_of_seven(tiny_model):
    run = Run(tiny_model, problem=PROBLEM, strategy="greedy")
    assert run.config.block_length == 7
    assert Run(tiny_model, problem=PROBLEM, strategy="greedy",
               config=GenerationConfig(block_length=28)).config.block_length == 28


@pytest.mark.parametrize("kwargs,match", [
    (dict(k1=0), "k1"), (dict(k2=-1), "k2"), (dict(gamma=float("nan")), "gamma"),
    (dict(c=-1.0), "c must"), (dict(scoring="x"), "scoring"), (dict(lc=0), "lc"),
])
def test_bad_config_fails_at_construction(kwargs, match):
    with pytest.raises(InputError, match=match):
        GenerationConfig(**kwargs)


@pytest.mark.parametrize("kwargs,match", [
    (dict(lc=28), "shorter than the answer"), (dict(block_length=5), "divide"),
    (dict(steps=5, block_length=7), "multiple"), (dict(gen_length=40), "exceeds"),
    (dict(steps=29, block_length=28), "cannot exceed"), (dict(lc=8, block_length=7), "first block"),
])
def test_bad_lengths_are_explained(tiny_model, kwargs, match):
    with pytest.raises(InputError, match=match):
        Run(tiny_model, problem=PROBLEM, strategy="medal", config=GenerationConfig(**kwargs))


def test_bad_prompts(tiny_model):
    with pytest.raises(InputError, match="empty"):
        Run(tiny_model, prompt="   ", strategy="greedy")
    with pytest.raises(InputError, match="at most"):
        Run(tiny_model, prompt="Use " + ", ".join(["1"] * 40) + " to make 3.", strategy="greedy")
    with pytest.raises(InputError, match="cannot read"):
        Run(tiny_model, prompt="Use 4, 18, 13 to make 20 ☃", strategy="greedy")
    with pytest.raises(InputError, match="unknown strategy"):
        Run(tiny_model, prompt="Use 4, 18, 13 to make 20.", strategy="beam")


def test_greedy_comparison_reuses_the_runs_forwards(scripted):
    run = Run(scripted, prompt="q", strategy="medal", config=GenerationConfig(lc=2, seed=0),
              compare_greedy=True)
    run.finish()
    rows = [tuple(r.tolist()) for c in scripted.calls for r in c]
    assert len(rows) == len(set(rows)), "the comparison recomputed a state"
    # greedy's own cost: one forward per slot, beside what it actually ran on the shared
    # cache (issue 11: one accounting -- forwards actually run, cache hits, standalone)
    assert run.comparison.standalone_forwards == 6
    assert run.comparison.forwards + run.comparison.cache_hits == 6
    assert run.comparison.cache_hits >= 1  # the root, evaluated by the search
    assert run.result.forwards == run.runner.forwards
