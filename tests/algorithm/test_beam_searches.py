"""Order-Token Search and SOAR (issue 38): their rules checked on the scripted model, whose
distributions are recomputed here by hand (tests/scripted.py), step by step against the
recorded beam tree; their cost on the one axis; their trace (the tree in
``result.beam_search``, the winner's path as decode steps) through the gate."""
from __future__ import annotations

import math

import pytest
import torch

from medal.config import GenerationConfig
from medal.engine import STRATEGIES, Run
from medal.errors import InputError
from medal.trace import load_trace, write_trace
from scripted import ScriptedLM


def probs(model: ScriptedLM, answer) -> torch.Tensor:
    """[L, V] probabilities of a state, the plain way: softmax of the scripted logits
    with the mask token excluded (as the runner scores them)."""
    logits = model.expected_logits(torch.as_tensor(answer))
    logits[:, model.mask_id] = float("-inf")
    return torch.softmax(logits, -1)


def run(strategy: str, trace: bool = True, scale: float = 3.0, **cfg):
    model = ScriptedLM(vocab=6, gen_length=6, scale=scale)
    r = Run(model, task="text", prompt="hi", strategy=strategy,
            config=GenerationConfig(**cfg), trace=trace)
    return model, r, r.finish()


# ------------------------------------------------------------------------------ SOAR

def soar_reference(model: ScriptedLM, beams: int, threshold: float, parallel: int):
    """SOAR's rule written out plainly (the docstring of medal.search.soar_search): the
    beams' states step by step as (answer, score) lists, and each step's mode."""
    M = model.mask_id
    beam = [([M] * 6, 0.0)]
    history = []
    while any(M in a for a, _ in beam):
        cands, went_parallel = [], False
        for answer, score in beam:
            if M not in answer:
                cands.append((answer, score))
                continue
            p = probs(model, answer)
            masked = [i for i in range(6) if answer[i] == M]
            conf = {i: float(p[i].max()) for i in masked}
            tok = {i: int(p[i].argmax()) for i in masked}
            order = sorted(masked, key=lambda i: -conf[i])       # stable: ties by slot
            high = [i for i in order if conf[i] > threshold]
            if high:
                went_parallel = True
                new = list(answer)
                for i in high[:parallel]:
                    new[i] = tok[i]
                cands.append((new, score + sum(conf[i] for i in high[:parallel])))
            else:
                for i in order[:beams]:
                    new = list(answer)
                    new[i] = tok[i]
                    cands.append((new, score + conf[i]))
        cands.sort(key=lambda c: -c[1])
        unique, seen = [], set()
        for a, s in cands:
            if tuple(a) not in seen:
                seen.add(tuple(a))
                unique.append((a, s))
        beam = unique[:1] if went_parallel else unique[:beams]
        history.append((went_parallel, beam))
    return history


@pytest.mark.parametrize("beams,threshold,parallel", [
    (2, 1.0, 5), (3, 1.0, 5), (1, 1.0, 5),       # never sure: a pure position beam search
    (2, 0.95, 5), (3, 0.95, 2), (2, 0.9, 1),     # sure now and then: branches, then a
    (2, 0.97, 5),                                # parallel step collapses a wide beam
    (2, 0.0, 5), (2, 0.5, 2)])                   # (nearly) always sure: parallel decoding
def test_soar_follows_its_rule_step_by_step(beams, threshold, parallel):
    """Every step's kept beams (their answers and scores, in order) and whether the beam
    collapsed are the plain rule's; the answer is the best beam's."""
    model, r, res = run("soar", soar_beams=beams, soar_threshold=threshold,
                        soar_parallel=parallel)
    tree = res.beam
    nodes = {n["id"]: n for n in tree["nodes"]}
    expected = soar_reference(model, beams, threshold, parallel)
    assert len(tree["steps"]) == len(expected)
    for step, (went_parallel, beam) in zip(tree["steps"], expected):
        assert step["collapsed"] == went_parallel
        kept = [nodes[i] for i in step["kept"]]
        assert [n["answer_ids"] for n in kept] == [a for a, _ in beam]
        for n, (_, s) in zip(kept, beam):
            # the same sums of float32 probabilities, added in the same order, rounded
            # to double by Python: equal to within a few float32 ulps of ~1
            assert n["score"] == pytest.approx(s, abs=1e-6)
    winner = nodes[tree["winner"]]
    assert res.answer_ids == winner["answer_ids"] == expected[-1][1][0][0]


def test_soar_modes_and_scores_of_each_node():
    """A parallel node writes the eligible slots above the threshold (at most
    soar_parallel, most confident first, argmax tokens); a branch node writes one slot;
    every node's score is its parent's plus the probabilities it wrote."""
    tau = 0.95                                         # the authors' threshold
    model, r, res = run("soar", soar_beams=2, soar_threshold=tau, soar_parallel=2)
    nodes = {n["id"]: n for n in res.beam["nodes"]}
    modes = {n["mode"] for n in nodes.values()}
    assert {"parallel", "branch"} <= modes            # this setting exercises both
    # and a parallel step that collapses a beam of two to its best candidate
    assert any(s["collapsed"] and len(s["beams"]) == 2 and len(s["kept"]) == 1
               for s in res.beam["steps"])
    M = model.mask_id
    for n in nodes.values():
        if n["parent"] is None:
            continue
        parent = nodes[n["parent"]]
        p = probs(model, parent["answer_ids"])
        masked = [i for i, t in enumerate(parent["answer_ids"]) if t == M]
        conf = {i: float(p[i].max()) for i in masked}
        order = sorted(masked, key=lambda i: -conf[i])
        if n["mode"] == "parallel":
            high = [i for i in order if conf[i] > tau]
            assert sorted(n["slots"]) == sorted(high[:2]) and n["slots"]
        else:
            assert n["mode"] == "branch" and len(n["slots"]) == 1
            assert n["slots"][0] in order[:2]
            assert all(conf[i] <= tau for i in masked)
        assert n["tokens"] == [int(p[i].argmax()) for i in n["slots"]]
        assert n["score"] == pytest.approx(parent["score"] + sum(conf[i] for i in n["slots"]),
                                           abs=1e-6)


def test_soar_cost_is_one_forward_per_step_of_every_beam():
    model, r, res = run("soar", soar_beams=3, soar_threshold=1.0)
    steps = res.beam["steps"]
    assert res.forwards == sum(s["forwards"] for s in steps) == len(model.calls)
    assert all(s["forwards"] == 1 for s in steps)       # the beams in ONE batched call
    assert res.sequence_forwards == sum(s["sequences"] for s in steps) \
        == sum(c.shape[0] for c in model.calls)
    # each step evaluates every beam that still has masks (cached states cost none)
    assert all(s["sequences"] + s["cache_hits"] == len(s["beams"]) for s in steps)
    assert max(len(s["beams"]) for s in steps) == 3


# ------------------------------------------------------------------------------ OTS

def test_ots_without_noise_is_greedy_low_confidence_decoding():
    """Temperature 0: every action of a beam is the same (the argmax tokens, the most
    probable slots), so the beam is one trajectory: greedy's answer and order. Each search
    step pays the beams' forward and the scoring forward."""
    for K in (1, 3):
        _, _, ots = run("ots", trace=False, ots_beams=K, ots_temperature=0.0, steps=6,
                        block_length=3)
        _, _, greedy = run("greedy", trace=False, steps=6, block_length=3)
        assert ots.answer_ids == greedy.answer_ids and ots.order == greedy.order
        searches = [s for s in ots.beam["steps"] if s["search"]]
        assert len(searches) == 2                     # the first step of each block
        assert all(s["forwards"] == 2 for s in searches)


def test_ots_expands_scores_and_prunes_by_its_rule():
    """At the first step of each block every beam proposes K actions (the root K^2); the
    slots an action writes are the eligible ones whose drawn token is most probable under
    the clean distribution; its block score is the sum over those slots of log p(drawn
    token | the proposal with those slots masked again), recomputed here by hand; its
    score is its beam's plus that; the kept beams are the K best distinct states."""
    K = 3
    # a flatter scripted model (scale 1), so that the noise varies the actions
    model, r, res = run("ots", ots_beams=K, ots_temperature=1.0, steps=6, block_length=3,
                        seed=5, scale=1.0)
    M = model.mask_id
    tree = res.beam
    nodes = {n["id"]: n for n in tree["nodes"]}
    by_step = {s["step"]: s for s in tree["steps"]}
    saw_spread = False
    for s in tree["steps"]:
        per_parent = {}
        for c in s["candidates"]:
            per_parent.setdefault(nodes[c]["parent"], []).append(c)
        for parent, kids in per_parent.items():
            want = (K * K if parent == 0 else K) if s["search"] else 1
            assert len(kids) == want
        for c in s["candidates"]:
            n, parent = nodes[c], nodes[nodes[c]["parent"]]
            before = parent["answer_ids"]
            masked = [i for i in range(6) if before[i] == M]
            block = masked[0] // 3
            eligible = [i for i in masked if i // 3 == block]
            if not s["search"]:
                assert n["block_score"] is None and n["score"] == parent["score"]
                continue
            proposal = n["proposal"]
            assert [proposal[i] for i in range(6) if before[i] != M] == \
                [before[i] for i in range(6) if before[i] != M]
            p = probs(model, before)
            clean = {i: float(p[i, proposal[i]]) for i in eligible}
            written = n["slots"]
            assert all(clean[i] >= clean[j] - 1e-7 for i in written for j in eligible
                       if j not in written)
            assert n["tokens"] == [proposal[i] for i in written]
            masked_again = list(proposal)
            for i in written:
                masked_again[i] = M
            q = probs(model, masked_again)
            want = sum(math.log(float(q[i, proposal[i]])) for i in written)
            # float32 softmax against the runner's float32 softmax of the same logits:
            # log-probabilities of order 1 agree to ~1e-6
            assert n["block_score"] == pytest.approx(want, abs=1e-5)
            assert n["score"] == pytest.approx(parent["score"] + want, abs=1e-5)
            saw_spread |= len({tuple(nodes[k]["answer_ids"]) for k in s["candidates"]}) > 1
        # pruning: the K best distinct states of the step's pool, best first
        pool = [nodes[c] for c in s["candidates"]]
        finished = [nodes[b] for b in (by_step[s["step"] - 1]["kept"] if s["step"] > 1 else [])
                    if b not in s["beams"]]
        ranked = sorted(finished + pool, key=lambda n: -n["score"])
        unique, seen = [], set()
        for n in ranked:
            if tuple(n["answer_ids"]) not in seen:
                seen.add(tuple(n["answer_ids"]))
                unique.append(n["id"])
        assert s["kept"] == unique[:K]
    assert saw_spread                      # the noise did vary the actions here
    assert res.answer_ids == nodes[tree["winner"]]["answer_ids"]


def test_ots_cost_is_every_beams_step_and_the_scoring():
    """The cost axis: model calls and sequences are the search's own (the steps' sums,
    the scripted model's calls); at most S*K + B*K^2 sequences (S steps, B blocks), the
    paper's count of its forwards, fewer when states repeat."""
    K = 3
    model, r, res = run("ots", trace=False, ots_beams=K, ots_temperature=1.0, steps=6,
                        block_length=3, seed=2, scale=1.0)
    steps = res.beam["steps"]
    assert res.forwards == sum(s["forwards"] for s in steps) == len(model.calls)
    assert res.sequence_forwards == sum(s["sequences"] for s in steps) \
        == sum(c.shape[0] for c in model.calls)
    assert res.sequence_forwards <= 6 * K + 2 * K * K


# ------------------------------------------------------------------------- both

@pytest.mark.parametrize("strategy,cfg", [("soar", {"soar_threshold": 0.5}),
                                          ("ots", {"steps": 6, "block_length": 3})])
def test_beam_search_trace_steps_the_winners_path(tmp_path, strategy, cfg):
    """The trace holds the whole beam tree (result.beam_search: every node's parent, the
    steps, the winner and why) and the winner's path as decode steps whose slots and
    tokens are the path's, whose costs add up to the run's; it passes the gate."""
    model, r, res = run(strategy, **cfg)
    trace = r.trace
    beam = trace["result"]["beam_search"]
    nodes = {n["id"]: n for n in beam["nodes"]}
    path, node = [], nodes[beam["winner"]]
    while node["parent"] is not None:
        path.append(node)
        node = nodes[node["parent"]]
    path.reverse()
    assert [(d["slots"], d["tokens"]) for d in trace["decode"]] == \
        [(sorted(n["slots"]), [dict(zip(n["slots"], n["tokens"]))[s] for s in sorted(n["slots"])])
         for n in path] or [(d["slots"], d["tokens"]) for d in trace["decode"]] == \
        [(n["slots"], n["tokens"]) for n in path]
    assert sum(d["forwards"] for d in trace["decode"]) == trace["result"]["forwards"]
    assert sum(d["sequences"] for d in trace["decode"]) == trace["result"]["sequence_forwards"]
    assert trace["decode"][-1]["answer"] == model.decode_masked(torch.tensor(res.answer_ids))
    assert beam["algorithm"] == strategy and beam["why"]
    write_trace(trace, tmp_path / "t.json")
    again = load_trace(tmp_path / "t.json")
    assert again["result"]["beam_search"]["winner"] == beam["winner"]
    # and it re-runs to the same trace (medal repro's path)
    from medal.engine import rerun
    assert rerun(again, ScriptedLM(vocab=6, gen_length=6), task="text")["result"]["answer_ids"] \
        == res.answer_ids


def test_beam_searches_are_strategies_with_checked_settings():
    assert "ots" in STRATEGIES and "soar" in STRATEGIES
    for bad in ({"ots_beams": 0}, {"soar_beams": 0}, {"soar_threshold": 1.5},
                {"ots_temperature": -1.0}, {"soar_parallel": 0}):
        with pytest.raises(InputError, match=next(iter(bad))):
            GenerationConfig(**bad)


def test_a_prompt_template_the_task_lacks_is_refused_by_name():
    """The template setting (issue 38: two prompt templates per task where the task has
    them): a task with one form refuses template 1 with a message naming what it has."""
    model = ScriptedLM(vocab=6, gen_length=6)
    with pytest.raises(InputError, match="only template 0"):
        Run(model, task="text", prompt="hi", strategy="greedy",
            config=GenerationConfig(template=1))
    from medal.tasks import get_task
    countdown = get_task("countdown")
    p = countdown.example_problems[0]
    assert countdown.templated_prompt(p, 0) == countdown.format_prompt(p)
    assert countdown.templated_prompt(p, 1) == "20 from 4 18 13."
    with pytest.raises(InputError, match=r"countdown task has templates 0\.\.1; got template 2"):
        countdown.templated_prompt(p, 2)
