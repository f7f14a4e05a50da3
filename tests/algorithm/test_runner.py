"""The model runner: answer-only logits, scoring on the model's device, and MEDAL's numbers
unchanged by the speed refactor (issue 8 part B, issue 11 item 5)."""
from __future__ import annotations

import pytest

import reference_traces
from trace_compare import differences


@pytest.fixture(scope="module")
def reference():
    return reference_traces.load()


@pytest.fixture(scope="module")
def reference_models():
    from scripted import ScriptedLM
    return {"tiny": reference_traces.tiny_model(), "scripted": ScriptedLM()}


#: The reference was recorded on one CPU; another CPU's vector kernels round the same
#: float32 arithmetic differently (measured on an AMD EPYC, AVX2, against the recording:
#: up to 5.2e-6 relative on Q, 1.9e-9 absolute on margins near 0). Floats are compared
#: within these; ids, tokens, actions, answers and counts must be identical.
REL, ABS = 1e-5, 1e-8

#: node figures that accumulate over the whole search (compared only when the whole
#: search is; see parting_iteration)
CUMULATIVE = ("N", "W", "Q", "ucb", "candidate", "exhausted", "candidate_final")


def is_near_tie(iteration: dict) -> bool:
    """The iteration's selection chose, at some level, between children whose UCB values
    differ by no more than float32 rounding. The random-weight tiny model makes such ties
    (two children with the same r_IG): which one wins depends on the CPU's rounding."""
    for level in iteration["selection"]["levels"]:
        ucbs = sorted((c["ucb"] for c in level if c.get("ucb") is not None), reverse=True)
        if len(ucbs) > 1 and abs(ucbs[0] - ucbs[1]) <= 1e-6 * max(abs(ucbs[0]), 1e-12):
            return True
    return False


def parting_iteration(old: dict, new: dict) -> int | None:
    """Index of the first iteration whose selection took another path, or None."""
    for k, (a, b) in enumerate(zip(old["iterations"], new["iterations"])):
        if a["selection"]["path"] != b["selection"]["path"]:
            return k
    return None


def search_prefix(trace: dict, k: int) -> dict:
    """The part of ``trace`` that precedes iteration index ``k``: its iterations, and the
    nodes made before it without their cumulative figures."""
    made = {0} | {c for it in trace["iterations"][:k] for c in it["expansion"]["children"]}
    return {"iterations": trace["iterations"][:k],
            "nodes": [{f: v for f, v in n.items() if f not in CUMULATIVE}
                      for n in trace["tree"]["nodes"] if n["id"] in made]}


@pytest.mark.parametrize("case", list(reference_traces.CASES))
def test_medal_traces_match_those_recorded_before_the_refactor(case, reference, reference_models):
    """Every number of a MEDAL trace recorded on the code before the runner/search speed
    refactor (tree, UCB values, rewards, action sets, completions, phase C, the greedy
    comparison, counts of forwards and sequences) is reproduced.

    Where the recorded search chose between children tied to float32 rounding, another
    CPU may take the other one and the two searches part there: then the parting
    iteration's recorded selection must be such a near-tie, everything before it must
    still match, and the test says where it stopped comparing."""
    old = reference[case]
    new = reference_traces.case_trace(case, reference_models)
    diff = differences(old, new, rel=REL, abs_tol=ABS)
    if diff and (k := parting_iteration(old, new)) is not None:
        assert is_near_tie(old["iterations"][k]), (
            f"the searches part at iteration {k + 1}, where the recorded selection was not "
            "a near-tie:\n" + "\n".join(diff))
        prefix = differences(search_prefix(old, k), search_prefix(new, k), rel=REL,
                             abs_tol=ABS)
        assert not prefix, "\n".join(prefix)
        assert k >= 3, "the searches part too early to compare anything useful"
        print(f"{case}: the searches part at a recorded near-tie (iteration {k + 1}); "
              f"compared its first {k} iterations and their nodes")
        return
    assert not diff, "\n".join(diff)


def test_the_comparison_sees_a_changed_number(reference, reference_models):
    """The check above can fail: one reward nudged by 1e-4 (ten times the tolerance) is
    reported, in the whole trace and in a prefix."""
    new = reference_traces.case_trace("scripted-medal", reference_models)
    node = next(n for n in new["tree"]["nodes"] if n["reward"])
    node["reward"] *= 1 + 1e-4
    assert differences(reference["scripted-medal"], new, rel=REL, abs_tol=ABS) == [
        f"/tree/nodes/{node['id']}/reward: "
        f"{reference['scripted-medal']['tree']['nodes'][node['id']]['reward']!r} -> {node['reward']!r}"]
    old = reference["tiny-medal"]
    new = reference_traces.case_trace("tiny-medal", reference_models)
    new["iterations"][1]["simulation"]["rewards"][0] *= 1 + 1e-4
    assert differences(search_prefix(old, 3), search_prefix(new, 3), rel=REL, abs_tol=ABS)


def test_profile_splits_the_search_time_and_counts_sequences(tiny_model):
    """`bench --profile`'s figures: the three parts add up to the search time, and the
    sequence counts are the runs' own."""
    from medal.config import GenerationConfig
    from medal.engine import Run
    from medal.profile import format_profile, profile
    problems = [{"numbers": [4, 18, 13], "target": 20}, {"numbers": [3, 7, 12], "target": 33}]
    from medal.tasks import get_task
    task = get_task("countdown")
    problems = [task.parse_problem(p) for p in problems]
    cfg = GenerationConfig(seed=0, lc=3, max_iterations=20)
    p = profile(tiny_model, "countdown", problems, cfg)
    assert p["network_share"] + p["scoring_share"] + p["bookkeeping_share"] == pytest.approx(1)
    assert 0 < p["bookkeeping_share"] < 1 and p["network_share"] > 0 and p["scoring_share"] > 0
    for i, (row, problem) in enumerate(zip(p["rows"], problems)):
        seeded = GenerationConfig(seed=i, lc=3, max_iterations=20)
        medal = Run(tiny_model, problem=problem, strategy="medal", config=seeded).finish()
        greedy = Run(tiny_model, problem=problem, strategy="greedy", config=seeded).finish()
        assert row["medal_sequences"] == medal.sequence_forwards
        assert row["greedy_sequences"] == greedy.sequence_forwards == 28  # one per step
        assert row["iterations"] == medal.search.iterations
    assert p["sequences_ratio"] == pytest.approx(
        sum(r["medal_sequences"] for r in p["rows"]) / sum(r["greedy_sequences"] for r in p["rows"]))
    assert "tree bookkeeping" in format_profile(p)


def test_profile_parts_split_the_bookkeeping_by_phase_from_the_events(tiny_model):
    """`bench --profile --parts`: the search's bookkeeping split by its phases, read by an
    observer of the run's events (issue 26: nothing patched). Every phase of an
    iteration takes time, the phases add up to the bookkeeping, and no class of the
    engine is changed while it runs."""
    from medal.config import GenerationConfig
    from medal.profile import PHASES, PhaseTimer, format_profile, profile
    from medal.runner import ModelRunner
    from medal.search import MCTS
    from medal.tasks import get_task
    before = {cls: dict(cls.__dict__) for cls in (MCTS, ModelRunner)}
    patched = []
    original = PhaseTimer.__call__

    def watching(self, event):   # the classes as the run sees them, at every event
        patched.extend(cls for cls in before if dict(cls.__dict__) != before[cls])
        original(self, event)

    task = get_task("countdown")
    problems = [task.parse_problem({"numbers": [4, 18, 13], "target": 20})]
    PhaseTimer.__call__ = watching
    try:
        p = profile(tiny_model, "countdown", problems,
                    GenerationConfig(seed=0, lc=3, max_iterations=20), parts=True)
    finally:
        PhaseTimer.__call__ = original
    assert not patched
    parts = p["parts_ms_per_iteration"]
    labels = dict(PHASES)
    assert {labels[k] for k in ("root", "selection", "expansion", "simulation",
                                "backpropagation", "search_finished")} == set(parts)
    assert all(ms > 0 for ms in parts.values())
    assert sum(parts.values()) == pytest.approx(p["bookkeeping_ms_per_iteration"], rel=1e-6)
    assert labels["expansion"] in format_profile(p)
    assert profile(tiny_model, "countdown", problems, GenerationConfig(seed=0, lc=3))[
        "parts_ms_per_iteration"] is None
