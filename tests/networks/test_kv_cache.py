"""Fast-dLLM's block KV cache for the native LLaDA and Dream code (issue 29 item 2):
refreshed every step its logits equal the uncached ones; the approximate mode's answers
are compared with the exact ones and the difference reported (printed; docs/SPEED.md)."""
import importlib.util
from pathlib import Path

import pytest
import torch

from medal.config import GenerationConfig
from medal.engine import Run
from medal.errors import InputError

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("gpu_check", ROOT / "scripts" / "gpu_check.py")
gpu_check = importlib.util.module_from_spec(_spec)     # a script, not a package
_spec.loader.exec_module(gpu_check)

REAL = ROOT / "tests" / "data" / "real-models"


@pytest.fixture(scope="module", params=["llada", "dream"])
def model(request):
    torch.manual_seed(0)
    return gpu_check.build_random(request.param, REAL / request.param / "config.json",
                                  torch.device("cpu"), torch.float32)


def _states(model, prompt_len=7, L=12, block=4, batch=3, seed=0):
    """A prompt and ``batch`` answer states inside block 1 (block 0 filled, the same
    prefix; block 1 partly filled, different per row; blocks 2+ masked)."""
    g = torch.Generator().manual_seed(seed)
    prompt = torch.randint(0, 1000, (prompt_len,), generator=g)
    ans = torch.full((batch, L), model.mask_id)
    ans[:, :block] = torch.randint(0, 1000, (block,), generator=g)
    for b in range(batch):
        ans[b, block + b % block] = 5 + b
    return torch.cat([prompt.expand(batch, -1), ans], 1), L, block, prompt_len


@pytest.mark.parametrize("mode", ["prefix", "dual"])
def test_refreshed_every_step_the_logits_equal_the_uncached(model, mode):
    ids, L, block, P = _states(model)
    model.set_kv_cache(None)
    exact = model.logits(ids, L)
    model.set_kv_cache(mode, refresh="step")
    model.start_kv_cache(block, P)
    for rows in (ids[:1], ids):          # one row, and a batch sharing the prefix
        got = model.logits(rows, L)
        torch.testing.assert_close(got, exact[:len(rows)], rtol=1e-4, atol=1e-4)
    assert model.kv_cache.refreshes == 2
    # the forward computed fewer positions than the whole sequence, besides the refresh
    T = ids.shape[1]
    computed = model.last_token_passes - len(ids) * T   # less the refresh
    assert computed < len(ids) * T
    model.set_kv_cache(None)


def test_the_cache_is_refused_where_it_does_not_apply(model):
    with pytest.raises(InputError, match="prefix, dual"):
        model.set_kv_cache("suffix")
    with pytest.raises(InputError, match="'block' or 'step'"):
        model.set_kv_cache("prefix", refresh="never")


@pytest.mark.parametrize("strategy, extra", [("greedy", {}), ("threshold", {}),
                                             ("medal", {"threshold_phase_c": False})])
def test_approximate_answers_against_exact(model, strategy, extra, capsys):
    """Block mode with the cache refreshed once per block: the answers may differ from
    the exact ones (reported here, not hidden); the network computes fewer positions."""
    cfg = GenerationConfig(gen_length=8, block_length=4, steps=8, lc=2, seed=0, **extra)
    prompt = "3 5 7 -> 15"
    out = {}
    for mode in (None, "prefix", "dual"):
        model.set_kv_cache(mode)
        res = Run(model, task="countdown", prompt=prompt, strategy=strategy, config=cfg,
                  decompose=False).finish()
        out[mode] = res
    model.set_kv_cache(None)
    exact = out[None]
    for mode in ("prefix", "dual"):
        res = out[mode]
        same = sum(a == b for a, b in zip(res.answer_ids, exact.answer_ids))
        with capsys.disabled():
            print(f"\n[kv cache] {model.family} {strategy} {mode}: {same}/{len(res.answer_ids)} "
                  f"slots as exact; token passes {res.token_passes} vs {exact.token_passes}")
        assert res.sequence_forwards == exact.sequence_forwards or strategy == "threshold"
        assert res.token_passes < exact.token_passes


def test_kv_cache_option_is_refused_for_other_models():
    from medal.models import load_model
    with pytest.raises(InputError, match="native LLaDA and Dream"):
        load_model("builtin:countdown", kv_cache="prefix")
    assert load_model("builtin:countdown", kv_cache="off").builtin


@pytest.mark.parametrize("mode", ["prefix", "dual"])
def test_lock_step_with_the_cache_equals_the_runs_alone(model, mode):
    """Runs in lock-step each keep their own cache; their refreshes share one network
    call and their cached spans another. Every run's trace (answers, figures, counters,
    token passes) equals the run alone with its cache, and the cached spans of several
    runs were computed together."""
    import copy
    import json

    from medal.bench import LockStep

    cfg = GenerationConfig(gen_length=8, block_length=4, steps=8, lc=2, seed=0)
    prompts = ["3 5 7 -> 15", "1 8 9 -> 18", "6 3 5 -> 14"]
    model.set_kv_cache(mode)

    def runs():
        return [Run(model, task="countdown", prompt=p, strategy=s, config=cfg,
                    decompose=False, trace=True)
                for p in prompts for s in ("greedy", "medal")]

    def plain(run):
        trace = copy.deepcopy(run.trace)
        trace.pop("timing")
        return json.loads(json.dumps(trace))

    net = model.net
    cached_rows: list[int] = []   # each cached span's network call: its rows

    def counting(ids, *args, kv=None, **kw):
        if kv is not None:
            cached_rows.append(ids.shape[0])
        return type(net).forward_span(net, ids, *args, kv=kv, **kw)

    net.forward_span = counting
    try:
        one = LockStep(1)     # one at a time: the same code, a model call a forward
        alone = list(one.run(runs()))
        alone_rows, cached_rows[:] = list(cached_rows), []
        lock = LockStep(len(alone))
        together = list(lock.run(runs()))
    finally:
        del net.forward_span
        model.set_kv_cache(None)
    together.sort(key=lambda r: (prompts.index(r.prompt), r.strategy))
    alone.sort(key=lambda r: (prompts.index(r.prompt), r.strategy))
    assert len({len(r.runner.prompt) for r in alone}) == 1   # prompts of one length
    for a, b in zip(alone, together):
        assert plain(b) == plain(a), (a.prompt, a.strategy)
        assert b.result.token_passes == a.result.token_passes
        assert b.runner.kv_cache is not a.runner.kv_cache
        assert b.runner.kv_cache.refreshes == a.runner.kv_cache.refreshes > 0
        assert a.trace["run"]["model"]["kv_cache"] == mode   # the trace says so too
    assert lock.requests == one.requests == one.model_calls
    assert lock.model_calls < one.model_calls / 2
    # the same cached rows, in far fewer network calls: the first holds every run's
    assert sum(cached_rows) == sum(alone_rows)
    assert len(cached_rows) < len(alone_rows) / 2
    assert cached_rows[0] == len(alone)


def test_bench_command_runs_the_cache_in_lock_step(tmp_path):
    """`medal bench --kv-cache dual --lock-step N` on a native LLaDA checkpoint folder:
    the same records as one at a time with the cache, in fewer model calls (it was
    refused: the cache held one run's prefix)."""
    import json

    import standins
    from medal.bench import comparable
    from medal.cli import main

    d = standins.save_checkpoint(tmp_path / "llada-native", "llada", "native")
    docs = {}
    for width in (1, 4):
        out = tmp_path / f"w{width}.json"
        assert main(["bench", "--model", f"llada:{d}", "--device", "cpu", "--task",
                     "countdown", "--n", "4", "--strategies", "greedy,medal", "--kv-cache",
                     "dual", "--lock-step", str(width), "--gen-length", "8",
                     "--block-length", "4", "--steps", "8", "--lc", "2",
                     "--max-iterations", "4", "--no-decompose", "--no-progress",
                     "--out", str(out)]) == 0
        docs[width] = json.loads(out.read_text())
    assert comparable(docs[4]) == comparable(docs[1])
    assert docs[4]["kv_cache"] == "dual"           # the document says it is approximate
    speed = {w: doc["throughput"] for w, doc in docs.items()}
    assert speed[4]["forwards"] == speed[1]["forwards"] == speed[1]["model_calls"]
    assert speed[4]["model_calls"] < speed[1]["model_calls"]
