"""Issue 29: Fast-dLLM's threshold decoding, threshold phase C (beyond the paper), the
Info-Gain sampler and the one cost axis (medal/cost.py). Fast: the scripted model only."""
import math

import pytest
import torch
from conftest import ScriptedLM

from medal.config import GenerationConfig
from medal.cost import COST_FIELDS, tokens_per_forward, valid_output_tokens
from medal.engine import STRATEGIES, Run
from medal.errors import InputError


def run(strategy, trace=True, **cfg):
    model = ScriptedLM(vocab=6, gen_length=6)
    cfg = GenerationConfig(gen_length=6, lc=1, **cfg)
    r = Run(model, task="countdown", prompt="x", strategy=strategy, config=cfg,
            decompose=False, trace=trace)
    return model, r, r.finish()


def probs(model, answer):
    """The scripted model's distribution of every slot, the plain way."""
    logits = model.expected_logits(torch.tensor(answer))
    logits[:, model.mask_id] = -math.inf
    return torch.softmax(logits, -1)


def test_threshold_schedule_by_hand():
    """threshold 0.6, blocks of 3: each step commits the block's slots whose argmax
    token has p >= 0.6, or its single most confident slot when none has."""
    model, r, res = run("threshold", threshold=0.6, block_length=3)
    M = model.mask_id
    # the schedule, worked out from the model's formula (p of each slot's argmax token):
    #   step 0, block 0, p = (0.629, 0.566, 0.939)          -> slots 0 and 2
    #   step 1, block 0, slot 1 alone, p = 0.467 (< 0.6)     -> slot 1 (at least one)
    #   step 2, block 1, p = (0.830, 0.543, 0.483)           -> slot 3
    #   step 3, block 1, p = (0.946, 0.636)                  -> slots 4 and 5
    steps = r.trace["decode"]
    assert [d["slots"] for d in steps] == [[0, 2], [1], [3], [4, 5]]
    assert [d["block"] for d in steps] == [0, 0, 1, 1]
    # recompute each step's p from the formula and the state the step saw
    answer = [M] * 6
    for d in steps:
        p = probs(model, answer)
        top_p, top_t = p.max(-1)
        assert d["eligible"]["p"] == pytest.approx([float(top_p[s]) for s in d["eligible"]["slots"]],
                                                   abs=1e-5)
        above = [s for s in d["eligible"]["slots"] if top_p[s] >= 0.6]
        best = max(d["eligible"]["slots"], key=lambda s: float(top_p[s]))
        assert d["slots"] == sorted(set(above) | {best})
        assert d["tokens"] == [int(top_t[s]) for s in d["slots"]]
        for s, t in zip(d["slots"], d["tokens"]):
            answer[s] = t
    assert res.answer_ids == answer == [0, 1, 5, 5, 5, 3]
    # cost: 4 forwards of one sequence of 2 prompt + 6 answer tokens; 2 output tokens
    # before the first EOS (id 5)
    assert res.cost() == {"model_calls": 4, "sequence_forwards": 4, "token_passes": 32,
                          "valid_tokens": 2, "tpf": 0.5}


def test_threshold_one_is_greedy():
    """No probability of this model rounds to 1.0 (threshold 1 commits those, Fast-dLLM's
    ``>=``: tests/algorithm/test_threshold_rule.py): one slot a step, the most confident
    -- LLaDA's low-confidence remasking at one slot per step, exactly."""
    _, a, ra = run("threshold", threshold=1.0, block_length=3)
    _, b, rb = run("greedy", block_length=3)
    assert ra.answer_ids == rb.answer_ids and ra.order == rb.order
    assert [d["slots"] for d in a.trace["decode"]] == [d["slots"] for d in b.trace["decode"]]


def test_threshold_phase_c_is_beyond_the_paper_and_off_by_default():
    assert GenerationConfig().threshold_phase_c is False
    _, exact, re_ = run("medal-no-mcts")
    _, one, r1 = run("medal-no-mcts", threshold_phase_c=True, threshold=1.0)
    assert r1.answer_ids == re_.answer_ids and r1.order == re_.order  # threshold 1: exact
    _, par, rp = run("medal-no-mcts", threshold_phase_c=True, threshold=0.5)
    assert rp.sequence_forwards < re_.sequence_forwards
    assert max(len(d["slots"]) for d in par.trace["decode"]) > 1
    # every step: the p >= 0.5 slots, and the best-scored one
    for d in par.trace["decode"]:
        el = d["eligible"]
        best = el["slots"][max(range(len(el["slots"])), key=lambda i: el["score"][i])]
        above = {s for s, p in zip(el["slots"], el["p"]) if p >= 0.5}
        assert set(d["slots"]) == above | {best}
    # MEDAL with it: the search unchanged, phase C shorter
    _, m0, r0 = run("medal", candidates=2)
    _, m1, r1 = run("medal", candidates=2, threshold_phase_c=True, threshold=0.5)
    def search(trace):  # the tree without the candidates' phase-C finals
        return [{k: v for k, v in n.items() if k != "candidate_final"}
                for n in trace["tree"]["nodes"]]
    assert search(m0.trace) == search(m1.trace)
    assert len(m1.trace["decode"]) <= len(m0.trace["decode"])


@pytest.mark.parametrize("bad, msg", [
    (dict(threshold=1.5), "threshold must be between 0 and 1"),
    (dict(threshold=-0.1), "threshold must be a finite number >= 0"),
    (dict(threshold_phase_c="yes"), "threshold_phase_c must be true or false"),
    (dict(threshold_phase_c=True, pair_temperature=1.0), "leave slot_temperature"),
    (dict(ig_candidates=0), "ig_candidates must be a whole number >= 1"),
])
def test_threshold_settings_are_validated(bad, msg):
    with pytest.raises(InputError, match=msg):
        GenerationConfig(**bad)


def test_info_gain_commits_the_best_lookahead():
    """Info-Gain sampler: each lookahead step commits the action of highest
    J = -C - H_next among the states the lookahead evaluated (recomputed here from the
    scripted formula), and pays one batched forward of those states."""
    model, r, res = run("info-gain", threshold=1.0, ig_candidates=4)
    assert "info-gain" in STRATEGIES
    M = model.mask_id
    answer = [M] * 6

    def entropy(p):
        return float(-(p * p.clamp_min(1e-30).log()).sum())

    lookaheads = 0
    for d in r.trace["decode"]:
        p = probs(model, answer)
        el = d["eligible"]["slots"]
        if len(el) > 1:
            lookaheads += 1
            assert d["sequences"] >= 1   # the lookahead's batch (the state itself: cached)
            # J of the committed action >= J of the greedy action (action 0)
            def J(slot, token):
                nxt = list(answer)
                nxt[slot] = token
                q = probs(model, nxt)
                rest = [s for s in range(6) if nxt[s] == M]
                h_next = sum(entropy(q[s]) for s in rest) / (len(rest) + 1e-10)
                return -entropy(p[slot]) - h_next
            g = max(el, key=lambda s: float(p[s].max()))
            (s,), (t,) = d["slots"], d["tokens"]
            assert J(s, t) >= J(g, int(p[g].argmax())) - 1e-5
        for s, t in zip(d["slots"], d["tokens"]):
            answer[s] = t
    assert lookaheads >= 3
    assert res.answer_ids == answer
    assert res.sequence_forwards > res.forwards   # the lookaheads are batches


def test_cost_definitions():
    assert valid_output_tokens([3, 1, 9, 2, 7, 7], end_ids={7}) == 4
    assert valid_output_tokens([3, 1, 9, 2, 7, 7], end_ids={7}, fixed={2}) == 3
    assert valid_output_tokens([7, 1], end_ids={7}) == 0
    assert tokens_per_forward(6, 3) == 2.0 and tokens_per_forward(5, 0) is None
    _, r, res = run("medal", candidates=2)
    cost = res.cost()
    assert tuple(cost) == COST_FIELDS
    assert cost["token_passes"] == cost["sequence_forwards"] * (2 + 6)
    assert cost["tpf"] == cost["valid_tokens"] / cost["sequence_forwards"]
    # the trace carries the same figures
    for k in ("token_passes", "valid_tokens", "tpf"):
        assert r.trace["result"][k] == cost[k]
        assert r.trace["stats"][k] == cost[k]


def test_benchmark_page_plots_accuracy_against_each_cost():
    """The Benchmark page's costs include token passes and TPF; TPF's frontier runs the
    other way (more tokens per forward is cheaper)."""
    from medal.views.results import COSTS, frontier, frontier_figure, summary_rows
    assert {"mean_forwards", "mean_sequence_forwards", "mean_token_passes", "tpf"} <= set(COSTS)
    doc = {"task": "countdown", "summary": {
        "greedy": {"n": 10, "accuracy": 0.5, "mean_forwards": 28, "mean_sequence_forwards": 28,
                   "mean_seconds": 1.0, "mean_token_passes": 1400, "tpf": 0.25},
        "threshold": {"n": 10, "accuracy": 0.5, "mean_forwards": 8, "mean_sequence_forwards": 8,
                      "mean_seconds": 0.3, "mean_token_passes": 400, "tpf": 0.9},
        "medal": {"n": 10, "accuracy": 0.7, "mean_forwards": 28, "mean_sequence_forwards": 36,
                  "mean_seconds": 1.2, "mean_token_passes": 1800, "tpf": 0.2}}}
    assert frontier(doc, "mean_token_passes") == ["threshold", "medal"]
    assert frontier(doc, "tpf") == ["threshold", "medal"]
    for cost in COSTS:
        frontier_figure(doc, cost)
    rows = summary_rows(doc)
    assert rows[1]["TPF"] == 0.9 and rows[1]["token passes"] == 400


@pytest.mark.parametrize("strategy, cfg", [("threshold", dict(threshold=0.5)),
                                           ("info-gain", dict(threshold=1.0)),
                                           ("medal", dict(threshold_phase_c=True,
                                                          threshold=0.5))])
def test_traces_of_the_new_strategies_pass_the_gate(strategy, cfg, tmp_path):
    from medal.trace import load_trace, write_trace
    _, r, _ = run(strategy, **cfg)
    path = tmp_path / "t.json"
    write_trace(r.trace, path)          # checks the trace before writing
    back = load_trace(path)
    assert back["stats"]["tpf"] == r.trace["stats"]["tpf"]
