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
