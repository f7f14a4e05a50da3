"""Lock-step bench (issue 29 item 4): several runs advance together and their forwards share
one model call (medal.bench.LockStep, medal.runner.forward_together); every run's result,
counters and trace are exactly those of the same run alone."""
import copy
import json

import pytest
import torch

from medal.bench import LockStep, bench, comparable, results_document
from medal.config import GenerationConfig
from medal.engine import Run
from medal.errors import InputError
from medal.models import load_model
from medal.runner import ForwardRequest, ModelRunner, forward_together
from medal.tasks import get_task


def _records(model, task, problems, strategies, width, cfg=None):
    cfg = cfg or GenerationConfig(seed=0)
    speed = {}
    recs = bench(model, task, problems, strategies, cfg, progress=False, lock_step=width,
                 throughput=speed)
    doc = results_document(recs, strategies, task, cfg, model.name, "test", throughput=speed)
    return comparable(doc), speed


def _without_timing(trace: dict) -> dict:
    trace = copy.deepcopy(trace)
    trace.pop("timing")
    return json.loads(json.dumps(trace))


@pytest.mark.parametrize("task, n, strategies", [
    ("sudoku", 5, ["medal", "greedy", "threshold", "info-gain", "bst5", "random"]),
    ("countdown", 3, ["medal", "greedy", "info-gain"]),
])
def test_lock_step_bench_equals_one_at_a_time_on_the_builtin_models(task, n, strategies):
    model = load_model(f"builtin:{task}")
    problems = get_task(task).generate(n, seed=10_000)
    one, speed1 = _records(model, task, problems, strategies, 1)
    together, speed4 = _records(model, task, problems, strategies, 4)
    assert together == one   # every record: answers, verdicts, counters, search statistics
    assert speed1["model_calls"] == speed1["forwards"]   # one at a time: a call a forward
    assert speed4["forwards"] == speed1["forwards"] >= sum(r["forwards"] for r in one["records"])
    assert speed4["sequences"] == speed1["sequences"]
    assert speed4["model_calls"] < speed1["model_calls"] / 2   # the forwards were shared


def test_lock_step_traces_equal_the_runs_alone():
    model = load_model("builtin:sudoku")
    problems = get_task("sudoku").generate(3, seed=10_007)
    cfg = GenerationConfig(seed=5)

    def runs():
        return [Run(model, task="sudoku", problem=p, strategy=s, config=cfg, trace=True,
                    compare_greedy=True)
                for p in problems for s in ("medal", "threshold")]

    alone = [r.finish() and r for r in runs()]
    together = list(LockStep(6).run(runs()))
    assert len(together) == len(alone)
    # they finish in another order than they started: matched by problem and strategy
    together.sort(key=lambda r: (problems.index(r.problem), r.strategy != "medal"))
    for a, b in zip(alone, together):
        assert _without_timing(b.trace) == _without_timing(a.trace)
        assert b.result.seconds > 0 and b.result.model_seconds > 0


def test_lock_step_on_the_scripted_model_shares_calls_and_keeps_results(scripted):
    def runs(strategies=("medal", "bst5", "random", "info-gain")):
        return [Run(scripted, prompt="q", strategy=s, config=GenerationConfig(lc=2, seed=k))
                for k in range(3) for s in strategies]

    alone = [r.finish() for r in runs()]
    calls_alone = len(scripted.calls)
    scripted.calls.clear()
    stepper = LockStep(12)
    finished = list(stepper.run(runs()))
    # every call the model saw was one of the scheduler's joint calls
    assert len(scripted.calls) == stepper.model_calls < calls_alone
    assert sum(len(c) for c in scripted.calls) == stepper.sequences
    assert stepper.requests == calls_alone   # each forward of the runs alone, served
    assert max(len(c) for c in scripted.calls) > 5   # rows of several runs in one call
    by_key = {(r.strategy, r.config.seed): r.result for r in finished}
    for r, res in zip(runs(), alone):
        got = by_key[(r.strategy, r.config.seed)]
        assert got.answer_ids == res.answer_ids and got.order == res.order
        assert (got.forwards, got.sequence_forwards, got.cache_hits, got.token_passes) == \
            (res.forwards, res.sequence_forwards, res.cache_hits, res.token_passes)
        mine, theirs = got.to_json(), res.to_json()
        assert {k: v for k, v in mine.items() if "seconds" not in k} == \
            {k: v for k, v in theirs.items() if "seconds" not in k}


def test_a_deferred_request_nobody_runs_is_run_by_its_runner(scripted):
    """Run.finish() in lock-step mode with no scheduler: each forward runs where it was
    announced, as without lock-step."""
    cfg = GenerationConfig(lc=2, seed=1)
    plain = Run(scripted, prompt="q", strategy="medal", config=cfg).finish()
    run = Run(scripted, prompt="q", strategy="medal", config=cfg)
    run.runner.defer = True
    seen = []
    while (item := run.step()) is not None:
        seen.append(isinstance(item, ForwardRequest))
    assert any(seen)   # the requests came back to the caller, not to observers
    assert run.result.answer_ids == plain.answer_ids
    assert run.result.forwards == plain.forwards


def test_requests_of_different_lengths_are_not_padded_into_one_call(tiny_model):
    L = 6
    runners = [ModelRunner(tiny_model, [5] * n, L) for n in (4, 7, 4)]
    answers = [torch.full((2, L), tiny_model.mask_id, dtype=torch.long) for _ in runners]
    for a, k in zip(answers, range(3)):
        a[0, k] = 10 + k
    for r in runners:
        r.defer = True
    requests = [next(r.prepare(a)) for r, a in zip(runners, answers)]
    assert forward_together(requests) == 2   # the two 4-token prompts together
    assert forward_together(requests, max_sequences=2) == 3
    for r, a, req in zip(runners, answers, requests):
        r._pending = req
        got = r.evaluate_batch(a)
        alone = ModelRunner(tiny_model, r.prompt.tolist(), L).evaluate_batch(a)
        for f in ("entropy", "top_tokens", "top_probs"):
            assert torch.equal(getattr(got, f), getattr(alone, f))
        assert r.forwards == 1 and r.sequences == 2


def test_lock_step_width_is_checked():
    with pytest.raises(InputError):
        LockStep(0)


def test_bench_command_prints_the_throughput(tmp_path, capsys):
    from medal.cli import main
    out = tmp_path / "r.json"
    assert main(["bench", "--task", "sudoku", "--n", "3", "--strategies", "greedy,medal",
                 "--lock-step", "3", "--no-progress", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "throughput (lock-step 3): 6 runs in" in printed
    doc = json.loads(out.read_text())
    assert doc["throughput"]["lock_step"] == 3
    assert doc["throughput"]["model_calls"] < doc["throughput"]["forwards"]


@pytest.mark.parametrize("suppress", [((), (), ()), ((), (7,), ())])
def test_joint_scoring_hands_each_request_its_rows(tiny_model, suppress):
    """On an accelerator a joint call's logits are scored once (forward_together's
    ``joint_scoring``): each runner gets its own rows' entropy, top tokens and
    probabilities -- the figures it would score alone (up to the CPU's tail rounding,
    which is why the CPU scores per runner) -- and runners that suppress other ids are
    scored apart."""
    L = 6
    runners = [ModelRunner(tiny_model, [5] * 4, L, suppress=s) for s in suppress]
    answers = [torch.full((n, L), tiny_model.mask_id, dtype=torch.long) for n in (2, 3, 1)]
    for k, a in enumerate(answers):
        a[:, k] = 10 + k
        a[-1, L - 1] = 20 + k
    for r in runners:
        r.defer = True
    requests = [next(r.prepare(a)) for r, a in zip(runners, answers)]
    assert forward_together(requests, joint_scoring=True) == 1
    assert all(req.scored is not None and req.scoring_seconds > 0 for req in requests)
    for r, a, req, s in zip(runners, answers, requests, suppress):
        r._pending = req
        got = r.evaluate_batch(a)
        alone = ModelRunner(tiny_model, r.prompt.tolist(), L, suppress=s).evaluate_batch(a)
        assert torch.equal(got.top_tokens, alone.top_tokens)
        assert torch.equal(got.masked, alone.masked)
        for f in ("entropy", "top_probs"):
            assert torch.allclose(getattr(got, f), getattr(alone, f), rtol=0, atol=1e-6)
        assert r.forwards == 1 and r.sequences == len(torch.unique(a, dim=0))  # states once
        assert 0 < r.scoring_seconds <= r.model_seconds


def test_the_cpu_scores_per_runner(tiny_model):
    """joint_scoring's default is off on the CPU (exactness, see forward_together)."""
    runners = [ModelRunner(tiny_model, [5] * 4, 6) for _ in range(2)]
    for r in runners:
        r.defer = True
    requests = [next(r.prepare(torch.full((2, 6), tiny_model.mask_id, dtype=torch.long)))
                for r in runners]
    forward_together(requests)
    assert all(req.scored is None for req in requests)
