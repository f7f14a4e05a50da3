"""The paper's own choices as named options, and one accounting of cost (issue 11)."""
import pytest
import torch

from medal.config import GenerationConfig
from medal.engine import Run
from medal.errors import InputError
from medal.scores import action_set, information_gain, rollout_path_gain
from medal.trace import dumps, validate_trace
import json

from scripted import ScriptedLM

PROBLEM = {"numbers": [3, 5, 7], "target": 22}


def run(model, strategy="medal", trace=True, compare=False, **cfg):
    r = Run(model, task="countdown", problem=PROBLEM, strategy=strategy,
            config=GenerationConfig(**cfg), trace=trace, compare_greedy=compare)
    r.finish()
    return r


def steps_cost(trace, key):
    """A cost summed over every step the trace records: root, expansions, simulations,
    decode steps."""
    root = {"forwards": 1, "sequences": 1, "cache_hits": 0}[key] if trace["tree"] else 0
    it = sum((i["expansion"][key if key != "cache_hits" else "cached"] or 0)
             + i["simulation"][key] for i in trace["iterations"])
    return root + it + sum(s[key] for s in trace["decode"])


def test_config_validates_new_options():
    with pytest.raises(InputError, match="candidate_choice"):
        GenerationConfig(candidate_choice="best")
    with pytest.raises(InputError, match="scoring_scope"):
        GenerationConfig(scoring_scope="phase_c")
    with pytest.raises(InputError, match="rollout_steps"):
        GenerationConfig(rollout_steps=0)
    with pytest.raises(InputError, match="not both"):
        GenerationConfig(slot_temperature=1.0, pair_temperature=1.0)
    assert GenerationConfig(scoring="margin").phase_c_scoring == "confidence"
    assert GenerationConfig(scoring="margin", scoring_scope="all").phase_c_scoring == "margin"


def test_one_step_rollout_simulation_is_the_one_fill_simulation(builtin_model):
    a = run(builtin_model)
    b = run(builtin_model, simulation="rollout", rollout_steps=1)
    assert a.result.answer_ids == b.result.answer_ids
    assert a.result.forwards == b.result.forwards
    ra = [x for i in a.trace["iterations"] for x in i["simulation"]["rewards"]]
    rb = [x for i in b.trace["iterations"] for x in i["simulation"]["rewards"]]
    assert ra == pytest.approx(rb, abs=1e-6)
    assert all(i["simulation"]["forwards"] == 0 for i in b.trace["iterations"])


def test_k_step_rollout_simulation_counts_its_forwards(builtin_model):
    r = run(builtin_model, simulation="rollout", rollout_steps=3, max_iterations=4)
    its = r.trace["iterations"]
    # a simulation runs k-1 = 2 batched forwards over the children still masked, minus
    # any step whose every state is already in the run's cache (no forward for those)
    sims = [i["simulation"] for i in its]
    assert all(s["forwards"] in (0, 1, 2) for s in sims)
    assert all((s["forwards"] == 0) == (s["sequences"] == 0) for s in sims)
    assert sims[0]["forwards"] == 2        # the first iteration has nothing cached yet
    assert all(i["simulation"]["sequences"] + i["simulation"]["cache_hits"] ==
               2 * len(i["simulation"]["children"]) for i in its)
    assert r.result.forwards == steps_cost(r.trace, "forwards")
    assert r.result.sequence_forwards == steps_cost(r.trace, "sequences")
    for i in its:   # rollouts leave no mask in a completion
        assert all("_" not in c for c in i["simulation"]["completions"])


def test_rollout_reward_uses_fill_entropies(scripted):
    """k=2 on the scripted model: r = (sum H_parent(M) - sum H_fill(M')) / sum H_parent(M),
    H_fill from the child's forward for the first half and the next forward for the rest."""
    from medal.decoding import rollout
    from medal.runner import ModelRunner
    runner = ModelRunner(scripted, [0, 0], 6)
    root = runner.evaluate_one(runner.initial_answer())
    child_answer = root.answer.clone()
    child_answer[0] = 1
    child = runner.evaluate_one(child_answer)
    before = runner.forwards
    (done,), (fill,) = rollout(runner, [child], 2, 6, 5.0)
    assert runner.forwards - before == 1
    assert not bool((done == scripted.mask_id).any())
    filled_first = [i for i in range(1, 6) if float(fill[i]) == pytest.approx(float(child.entropy[i]))]
    assert len(filled_first) >= 3          # ceil(5 / 2) slots from the child's own forward
    r = information_gain(root.entropy, root.masked, fill, 0)   # r_IG of the fill entropies
    expect = (float(root.entropy.sum()) - float(fill[1:].sum())) / float(root.entropy.sum())
    assert r == pytest.approx(expect)
    (one,), (fill1,) = rollout(runner, [child], 1, 6, 5.0)
    # a one-step rollout fills every slot from the child's own forward: the argmax r_IG
    assert information_gain(root.entropy, root.masked, fill1, 0) == \
        information_gain(root.entropy, root.masked, child.entropy, 0)


def test_candidate_choice_on_full_rollouts(builtin_model):
    r = run(builtin_model, candidate_choice="rollout")
    recs = r.result.search.candidates
    assert len(recs) >= 2 and all(rec["final"] is not None for rec in recs)
    best = max(recs, key=lambda rec: rec["rollout_ig"])
    assert r.result.search.winner == best["node"]
    assert best["final"]["answer"] == r.result.answer
    # the winner's rollout is replayed as phase C from the cache: no forward
    phase_c = [s for s in r.trace["decode"] if s["phase"] == "phase_c"]
    assert phase_c and all(s["forwards"] == 0 and s["cache_hits"] == 1 for s in phase_c)
    rolled = [s for s in r.trace["decode"] if s["phase"] == f"phase_c-{best['node']}"]
    assert [s["answer"] for s in rolled] == [s["answer"] for s in phase_c]
    rows = [s["entropy"] for s in rolled]
    assert best["rollout_ig"] == pytest.approx(rollout_path_gain(rows))
    assert r.result.forwards == steps_cost(r.trace, "forwards")


def test_candidate_choice_by_vote(builtin_model):
    r = run(builtin_model, candidate_choice="vote")
    recs = r.result.search.candidates
    top = max(rec["votes"] for rec in recs)
    winner = next(rec for rec in recs if rec["node"] == r.result.search.winner)
    assert winner["votes"] == top
    assert "beyond the paper" in r.result.search.why


def test_pair_sampling_near_zero_temperature_is_deterministic_phase_c(builtin_model):
    a = run(builtin_model, strategy="medal-no-mcts")
    b = run(builtin_model, strategy="medal-no-mcts", pair_temperature=1e-4)
    assert a.result.answer_ids == b.result.answer_ids


def test_pair_sampling_draws_tokens_from_each_slots_top_k1(builtin_model):
    answers = set()
    for seed in range(4):
        r = run(builtin_model, strategy="medal-no-mcts", pair_temperature=1.0, seed=seed)
        answers.add(r.result.text)
        for s in r.trace["decode"]:
            el = s["eligible"]
            assert set(s["slots"]) <= set(el["slots"])
    assert len(answers) > 1            # T = 1 really samples
    # the drawn token of each slot is among its top-K1 (K1 = 1: always the argmax)
    one = run(builtin_model, strategy="medal-no-mcts", pair_temperature=5.0, k1=1, seed=3)
    greedy_tokens = run(builtin_model, strategy="medal-no-mcts", k1=1)
    for s in one.trace["decode"]:
        ev = one.runner.evaluate_one(torch.tensor(_state_before(one, s)))
        assert s["tokens"] == [int(ev.top_tokens[i, 0]) for i in s["slots"]]
    assert greedy_tokens.result.forwards > 0


def _state_before(r, step):
    """The answer ids before ``step`` of a plain decode, rebuilt from the trace."""
    mask = r.model.mask_id
    ids = [mask] * r.config.gen_length
    for s in r.trace["decode"]:
        if s is step:
            return ids
        for slot, tok in zip(s["slots"], s["tokens"]):
            ids[slot] = tok
    raise AssertionError("step not in trace")


def test_margin_only_ablation_restricted_to_the_search(builtin_model):
    from medal.scores import confidence_scores, margin_only_scores
    for scope, fn in (("search", "confidence"), ("all", "margin")):
        r = run(builtin_model, strategy="medal-margin-only", scoring_scope=scope)
        assert r.config.scoring == "margin"
        step = next(s for s in r.trace["decode"] if s["phase"] == "phase_c")
        el = step["eligible"]
        p, m, H = (torch.tensor(el[k]) for k in ("p", "margin", "entropy"))
        if fn == "confidence":
            expect = confidence_scores(p.unsqueeze(-1), H, m, r.config.gamma).squeeze(-1)
        else:   # s = margin * p / p_(1) with the argmax token: the margin
            expect = m
        assert torch.allclose(torch.tensor(el["score"]), expect, atol=1e-5), scope
        # the search's action sets use the margin score either way
        node = r.trace["tree"]["nodes"][0]
        assert all(a["score"] == pytest.approx(a["margin"] * a["p"] / max(
            t["p"] for t in node["top"][a["slot"]])) for a in node["action_set"])


def test_every_strategy_reports_forwards_sequences_and_cache_hits(builtin_model):
    r = run(builtin_model, compare=True)
    res, comp = r.result, r.comparison
    t = json.loads(dumps(r.trace))
    validate_trace(t)
    assert t["stats"]["forwards"] == res.forwards == steps_cost(t, "forwards")
    assert t["stats"]["sequence_forwards"] == res.sequence_forwards == steps_cost(t, "sequences")
    assert t["stats"]["cache_hits"] == res.cache_hits == steps_cost(t, "cache_hits")
    # the greedy comparison: forwards actually run (it shares the run's cache) beside its
    # standalone cost, one forward per step
    cs = t["comparison"]["steps"]
    assert comp.forwards == sum(s["forwards"] for s in cs)
    assert comp.cache_hits == sum(s["cache_hits"] for s in cs) >= 1  # the root at least
    assert comp.standalone_forwards == comp.standalone_sequences == len(cs)
    assert comp.forwards + comp.cache_hits == comp.standalone_forwards
    assert t["comparison"]["result"]["standalone_forwards"] == len(cs)
    for name in ("greedy", "bst5", "eb"):
        g = run(builtin_model, strategy=name)
        assert g.result.cache_hits == steps_cost(g.trace, "cache_hits")
        assert g.result.forwards == steps_cost(g.trace, "forwards")
        assert g.result.standalone_forwards == g.result.forwards


def test_trace_records_every_eligible_slot_each_decode_step(builtin_model):
    r = run(builtin_model, strategy="greedy")
    mask = builtin_model.mask_id
    for s in r.trace["decode"]:
        ids = _state_before(r, s)
        masked = [i for i, t in enumerate(ids) if t == mask]
        block = masked[0] // r.config.block_length
        eligible = [i for i in masked if i // r.config.block_length == block]
        assert s["eligible"]["slots"] == eligible
        ev = r.runner.evaluate_one(torch.tensor(ids))
        assert s["eligible"]["p"] == pytest.approx(ev.top_probs[eligible, 0].tolist(), abs=1e-6)
        assert s["eligible"]["margin"] == pytest.approx(ev.margin[eligible].tolist(), abs=1e-6)
        assert s["eligible"]["score"] == pytest.approx(s["eligible"]["p"])  # greedy ranks by p


def _recompute_action_sets(trace):
    cfg = trace["run"]["config"]
    for node in trace["tree"]["nodes"]:
        if not node["action_set"]:
            continue
        L = len(node["masked"])
        k1 = cfg["k1"]
        eligible = torch.zeros(L, dtype=torch.bool)
        tokens = torch.zeros(L, k1, dtype=torch.long)
        probs = torch.zeros(L, k1)
        H = torch.zeros(L)
        first = next(i for i, m in enumerate(node["masked"]) if m) // cfg["block_length"]
        for i, m in enumerate(node["masked"]):
            if m and i // cfg["block_length"] == first:
                top = node["top"][i]
                assert top is not None and len(top) >= k1, (node["id"], i)
                eligible[i] = True
                tokens[i] = torch.tensor([t["token"] for t in top[:k1]])
                probs[i] = torch.tensor([t["p"] for t in top[:k1]])
                H[i] = node["entropy"][i]
        got = action_set(tokens, probs, H, eligible, k1, cfg["k2"], cfg["gamma"], cfg["scoring"])
        assert [(a.slot, a.token) for a in got] == \
            [(a["slot"], a["token"]) for a in node["action_set"]], node["id"]


def test_trace_recomputes_action_sets_with_k1_above_3(builtin_model):
    r = run(builtin_model, k1=5, max_iterations=3)
    _recompute_action_sets(r.trace)


def test_trace_recomputes_action_sets_for_answers_over_64_slots():
    model = ScriptedLM(vocab=8, gen_length=70)
    r = Run(model, task="countdown", prompt="x", strategy="medal",
            config=GenerationConfig(k1=4, lc=2, max_iterations=2, block_length=35),
            trace=True)
    r.finish(until=lambda e: e.kind == "search_finished")
    _recompute_action_sets(r.trace)
