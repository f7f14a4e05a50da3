"""What a checkpoint folder declares decides how MEDAL runs it: its family (config.json),
its special ids (config.json and tokenizer), and a model call that returns NaN or inf is
an error, never a silent answer.

These tests load LLaDA/Dream folders written by the stand-ins (tests/standins.py) and the
built-in model, through the same doors a user takes (``load_model``, the CLI).
"""
from __future__ import annotations

import json
import shutil

import pytest
import torch
from safetensors.torch import load_file, save_file

import standins
from test_native import REMOTE_RUNS, REMOTE_WHY_NOT
from medal.cli import main
from medal.config import GenerationConfig
from medal.engine import Run
from medal.errors import ModelLoadError
from medal.models import load_model
from medal.models.builtin import BuiltinModel

PROMPT = "Use 4, 18, 13 to make 20."
SMALL = dict(gen_length=8, lc=2, steps=8, max_iterations=4, samples=2, seed=0, decompose=False)


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    for name in ("MEDAL_TRUST_REMOTE_CODE", "MEDAL_IMPLEMENTATION"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    """LLaDA and Dream folders with the stand-in code (where transformers can run it; on
    5.x, written from the native network's names and shapes: the same weights, no code)."""
    root = tmp_path_factory.mktemp("facts")
    code = "standin" if REMOTE_RUNS else "native"
    return {f: standins.save_checkpoint(root / f, f, code) for f in ("llada", "dream")}


def _copy(src, dst, config_changes=None, tokenizer_changes=None):
    shutil.copytree(src, dst)
    for name, changes in (("config.json", config_changes),
                          ("tokenizer_config.json", tokenizer_changes)):
        if changes:
            data = json.loads((dst / name).read_text())
            data.update(changes)
            (dst / name).write_text(json.dumps(data, indent=1))
    return dst


# ---------------------------------------------------------------------- NaN and inf

@pytest.mark.parametrize("implementation", [
    "native", pytest.param("remote", marks=pytest.mark.skipif(not REMOTE_RUNS,
                                                             reason=REMOTE_WHY_NOT))])
def test_a_nan_weight_is_an_error_not_an_answer(base, tmp_path, monkeypatch, capsys,
                                                implementation):
    d = _copy(base["llada"], tmp_path / f"nan-{implementation}")
    weights = load_file(d / "model.safetensors")
    weights["model.transformer.blocks.0.q_proj.weight"][0, 0] = float("nan")
    save_file(weights, str(d / "model.safetensors"), metadata={"format": "pt"})
    monkeypatch.setenv("MEDAL_IMPLEMENTATION", implementation)
    for strategy in ("greedy", "medal"):
        rc = main(["generate", "--model", f"llada:{d}", "--trust-remote-code", "--device",
                   "cpu", "--prompt", PROMPT, "--strategy", strategy, "--gen-length", "8",
                   "--lc", "2", "--max-iterations", "4", "--no-decompose"])
        err = capsys.readouterr().err
        assert rc == 2, err
        assert "NaN" in err and "float32" in err and "cpu" in err and "bfloat16" in err


def test_a_nan_weight_in_the_builtin_model_is_an_error():
    model = BuiltinModel.load("countdown")
    with torch.no_grad():
        next(model.net.parameters()).view(-1)[0] = float("nan")
    with pytest.raises(ModelLoadError, match="NaN.*float32.*cpu"):
        Run(model, task="countdown", prompt=PROMPT, strategy="greedy",
            config=GenerationConfig(**SMALL)).finish()



@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_check_finite_finds_any_nan_or_infinity_and_passes_huge_finite_logits(dtype):
    """check_finite reduces by a sum: a NaN, +inf or -inf anywhere is caught, and finite
    logits whose sum overflows (float16's 65504 is reached by a few thousand logits of
    30) pass through the exact check instead of being refused."""
    from medal.models.base import check_finite
    big = torch.finfo(dtype).max
    huge = torch.full((2, 3, 4000), 30.0, dtype=dtype)
    huge[0, 0, :2] = big               # finite, but the sum overflows in any dtype
    assert check_finite(huge, "m") is huge
    for bad, word in ((float("nan"), "NaN"), (float("inf"), "infinite"),
                      (float("-inf"), "infinite")):
        for where in ((0, 0, 0), (1, 2, 3999)):
            x = torch.zeros(2, 3, 4000, dtype=dtype)
            x[where] = bad
            with pytest.raises(ModelLoadError, match=word):
                check_finite(x, "m")
    both = torch.zeros(2, 3, 4000, dtype=dtype)
    both[0, 0, 0], both[1, 1, 1] = float("inf"), float("-inf")   # sum: NaN, still caught
    with pytest.raises(ModelLoadError, match="infinite"):
        check_finite(both, "m")

# ---------------------------------------------------------------------- special ids

def test_declared_mask_id_wins_over_the_official_one(base, tmp_path):
    """config.json's mask_token_id and the tokenizer's mask token both say 126340: that
    is the mask (it used to be 126336, looked up by text, the declared ids ignored)."""
    d = _copy(base["llada"], tmp_path / "mask126340", {"mask_token_id": 126340},
              {"mask_token": "<role>"})
    m = load_model(f"llada:{d}", trust_remote_code=True, device="cpu")
    assert m.mask_id == 126340
    res = Run(m, task="countdown", prompt=PROMPT, strategy="greedy",
              config=GenerationConfig(**SMALL)).finish()
    assert 126340 not in res.answer_ids and len(res.answer_ids) == 8


def test_a_small_declared_mask_id(base, tmp_path):
    """iLLaDA's mask is id 5, declared in its config."""
    d = _copy(base["llada"], tmp_path / "mask5", {"mask_token_id": 5})
    assert load_model(f"llada:{d}", trust_remote_code=True, device="cpu").mask_id == 5


def test_conflicting_declared_mask_ids_are_an_error(base, tmp_path):
    d = _copy(base["llada"], tmp_path / "conflict", {"mask_token_id": 126340},
              {"mask_token": "<|mdm_mask|>"})
    with pytest.raises(ModelLoadError, match=r"126340.*126336.*--mask-id"):
        load_model(f"llada:{d}", trust_remote_code=True, device="cpu")
    assert load_model(f"llada:{d}", device="cpu", mask_id=126340).mask_id == 126340
    with pytest.raises(ModelLoadError, match="outside"):
        load_model(f"llada:{d}", device="cpu", mask_id=10**7)


# ---------------------------------------------------------------------- families

@pytest.mark.parametrize("family", ["llada", "dream"])
def test_family_comes_from_the_config(base, family):
    m = load_model(f"hf:{base[family]}", device="cpu")
    assert m.family == family and m.implementation == "native"


def test_a_prefix_that_contradicts_the_config_is_an_error(base):
    with pytest.raises(ModelLoadError, match="declares a llada model"):
        load_model(f"dream:{base['llada']}", trust_remote_code=True, device="cpu")


def test_block_causal_models_without_native_code_are_refused_with_the_reason(base, tmp_path):
    """SDAR is refused; LLaDA2 (llada2_moe) is a family now: a config that says LLaDA2 but
    holds LLaDA's keys is refused with the key it lacks."""
    d = _copy(base["llada"], tmp_path / "sdar", {"model_type": "sdar",
                                                "architectures": ["SDARForCausalLM"]})
    with pytest.raises(ModelLoadError, match="block-causal.*SDAR.*LLaDA2"):
        load_model(f"llada:{d}", trust_remote_code=True, device="cpu")
    d = _copy(base["llada"], tmp_path / "llada2", {"model_type": "llada2_moe",
                                                  "architectures": ["LLaDA2MoeModelLM"]})
    with pytest.raises(ModelLoadError, match="no 'hidden_size', which a llada2 config must"):
        load_model(f"llada:{d}", device="cpu")


def test_uniform_noise_models_are_refused_with_the_reason(base, tmp_path):
    d = _copy(base["dream"], tmp_path / "uniform", {"noise_type": "uniform"})
    with pytest.raises(ModelLoadError, match="uniform.*no masked slots"):
        load_model(f"dream:{d}", trust_remote_code=True, device="cpu")


def test_llada_moe_runs_natively_and_its_own_code_only_with_the_opt_in(tmp_path):
    """LLaDA-MoE has native code (the default); its checkpoint code needs the opt-in; a
    config that says LLaDA-MoE but holds LLaDA's keys is refused with what is missing."""
    d = standins.save_checkpoint(tmp_path / "moe", "llada-moe", "native")
    for spec in (f"llada:{d}", f"hf:{d}"):
        m = load_model(spec, device="cpu")
        assert m.family == "llada-moe" and m.implementation == "native"
        assert m.token_text(m.mask_id) == "<|mask|>"
    with pytest.raises(ModelLoadError, match="--trust-remote-code"):
        load_model(f"llada:{d}", device="cpu", implementation="remote")
    dense = _copy(standins.save_checkpoint(tmp_path / "dense", "llada", "native"),
                  tmp_path / "claims-moe", {"model_type": "lladamoe",
                                            "architectures": ["LLaDAMoEModelLM"]})
    with pytest.raises(ModelLoadError, match="hidden_size.*llada-moe"):
        load_model(f"llada:{dense}", device="cpu")


# ---------------------------------------------------------------------- memory, offline, gpu_check

def test_offline_and_not_cached_is_said_before_the_memory_check(monkeypatch):
    import huggingface_hub.constants
    from medal.models import hf
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(hf.memory_guard, "available_memory", lambda device: 1000.0)
    for spec in ("llada:medal-tests/not-downloaded", "dream-7b-instruct"):
        with pytest.raises(ModelLoadError) as err:
            load_model(spec, device="cpu")
        assert "HF_HUB_OFFLINE" in str(err.value) and "not enough memory" not in str(err.value)


def test_memory_estimate_is_the_answer_only_one(base, monkeypatch):
    from medal.models import hf
    # LLaDA-8B in bfloat16: 16 GB of weights; a search step measured 1.06x, so a 20 GB card
    # passes and a 16 GB one does not
    need = hf.memory_needed(8.0e9, torch.bfloat16)
    assert 16.0e9 * 1.08 < need < 20e9
    monkeypatch.setattr(hf.memory_guard, "available_memory", lambda device: 1000.0)
    with pytest.raises(ModelLoadError, match="--skip-memory-check"):
        load_model(f"llada:{base['llada']}", device="cpu")
    assert load_model(f"llada:{base['llada']}", device="cpu", memory_check=False).mask_id


def test_gpu_check_names_the_settings_it_ran(base, capsys):
    import importlib.util
    spec = importlib.util.spec_from_file_location("gpu_check", standins.ROOT / "scripts" /
                                                  "gpu_check.py")
    gpu_check = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gpu_check)
    rc = gpu_check.main([f"llada:{base['llada']}", "--device", "cpu", "--problems", "1",
                         "--seconds", "0.01", "--max-iterations", "2", "--search-only",
                         "--gen-length", "16", "--lc", "2", "--block-length", "16",
                         "--steps", "16"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "paper settings" not in out and "NOT the paper's" in out and "lc 2 (paper 20)" in out
