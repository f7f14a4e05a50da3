"""The transformers adapters (LLaDA, Dream, any masked LM) on tiny random stand-ins.

The real checkpoints cannot be downloaded here; the stand-ins in ``standins.py`` have their
call shapes (per-slot vs shifted logits, special tokens, chat templates) and are saved to
disk and loaded back through ``from_pretrained`` like a downloaded checkpoint.
"""
from __future__ import annotations

import json
import re

import pytest
import torch

import standins
from medal.cli import build_parser, main
from medal.config import GenerationConfig
from medal.engine import STRATEGIES, Run
from medal.errors import InputError, ModelLoadError
from medal.models import add_model_arguments, hf, load_model, model_options
from medal.trace import validate_trace

PROMPT = "Use 4, 18, 13 to make 20."
SMALL = dict(gen_length=8, lc=2, steps=8, max_iterations=20, seed=0)


@pytest.fixture(autouse=True)
def no_env_opt_in(monkeypatch):
    monkeypatch.delenv(hf.TRUST_REMOTE_CODE_ENV, raising=False)


@pytest.fixture(scope="module")
def dirs(tmp_path_factory):
    root = tmp_path_factory.mktemp("standins")
    return {"llada": standins.save_llada(root / "llada"),
            "dream": standins.save_dream(root / "dream"),
            "mlm": standins.save_bert(root / "bert")}


@pytest.fixture(scope="module")
def models(dirs):
    """The checkpoints through transformers (LLaDA and Dream on their stand-in code, as
    --implementation remote; MEDAL's native code is tested in test_native.py)."""
    return {family: load_model(f"{family}:{d}", trust_remote_code=True, device="cpu",
                               implementation="remote")
            for family, d in dirs.items()}


@pytest.fixture
def load_calls(monkeypatch):
    """Every from_pretrained call transformers receives: (class name, trust_remote_code)."""
    import transformers
    calls = []
    for name in ("AutoModel", "AutoTokenizer", "AutoModelForMaskedLM"):
        cls = getattr(transformers, name)
        original = cls.from_pretrained.__func__

        def spy(klass, *args, _original=original, **kwargs):
            calls.append((klass.__name__, kwargs.get("trust_remote_code")))
            return _original(klass, *args, **kwargs)
        monkeypatch.setattr(cls, "from_pretrained", classmethod(spy))
    return calls


# ---------------------------------------------------------------------- special ids

def hf_source() -> str:
    """The source of every module of the package medal/models/hf/, as one text."""
    from pathlib import Path
    return "\n".join(p.read_text(encoding="utf-8")
                     for p in sorted(Path(hf.__file__).parent.glob("*.py")))


def test_official_special_ids_are_named_once():
    assert (hf.LLADA_MASK_ID, hf.LLADA_EOS_ID, hf.LLADA_EOT_ID) == (126336, 126081, 126348)
    assert (hf.DREAM_MASK_ID, hf.DREAM_EOS_ID, hf.DREAM_IM_END_ID) == (151666, 151643, 151645)
    source = hf_source()
    for value in (126336, 126081, 126348, 151666, 151643, 151645):
        assert len(re.findall(rf"\b{value}\b", source)) == 1, value


def test_mask_and_end_ids_come_from_the_tokenizer(models):
    llada, dream, mlm = models["llada"], models["dream"], models["mlm"]
    tok = llada.tokenizer
    assert llada.mask_id == tok.convert_tokens_to_ids(hf.LLADA_MASK_TOKEN)
    assert llada.end_ids == {tok.convert_tokens_to_ids(hf.LLADA_EOS_TOKEN),
                             tok.convert_tokens_to_ids(hf.LLADA_EOT_TOKEN)}
    assert llada.eos_id == tok.convert_tokens_to_ids(hf.LLADA_EOS_TOKEN)
    tok = dream.tokenizer
    assert dream.mask_id == tok.convert_tokens_to_ids(hf.DREAM_MASK_TOKEN) == tok.mask_token_id
    assert dream.end_ids == {tok.convert_tokens_to_ids(hf.DREAM_EOS_TOKEN),
                             tok.convert_tokens_to_ids(hf.DREAM_IM_END_TOKEN)}
    assert mlm.mask_id == mlm.tokenizer.mask_token_id
    assert mlm.end_ids == {mlm.tokenizer.sep_token_id}
    info = llada.describe()
    assert info["end_ids"] == sorted(llada.end_ids)
    assert set(info["end_tokens"].values()) == {hf.LLADA_EOS_TOKEN, hf.LLADA_EOT_TOKEN}
    assert info["mask_token"] == hf.LLADA_MASK_TOKEN and info["family"] == "llada"


def test_unknown_token_text_falls_back_to_the_official_id(models):
    """A tokenizer that neither declares a mask token nor knows <|mdm_mask|> (and a config
    without mask_token_id) means the official id, 126336 -- which a model with a 70-token
    vocabulary (the BERT stand-in's network) cannot have: refused with the numbers."""
    import copy
    tokenizer = copy.deepcopy(models["mlm"].tokenizer)
    tokenizer.mask_token = None
    assert tokenizer.mask_token is None
    with pytest.raises(ModelLoadError, match=str(hf.LLADA_MASK_ID)):
        hf.LLaDALM(models["mlm"].net, tokenizer, hf.parse_spec("llada:x/y"),
                   device=torch.device("cpu"), dtype=torch.float32, config={})


# ---------------------------------------------------------------------- logits

def _ids(model, n_slots=6):
    return torch.tensor([model.encode_prompt(PROMPT) + [model.mask_id] * n_slots])


def test_llada_and_mlm_logits_are_per_slot(models):
    for family in ("llada", "mlm"):
        m = models[family]
        ids = _ids(m)
        out = m.logits(ids, 6)  # the answer slots only: the last 6 positions
        raw = m.net(input_ids=ids, attention_mask=torch.ones_like(ids)).logits[:, -6:]
        assert out.dtype == torch.float32 and out.shape == raw.shape
        vocab = torch.arange(out.shape[-1])
        keep = (vocab != m.mask_id) & (vocab < len(m.tokenizer))
        torch.testing.assert_close(out[..., keep], raw[..., keep])
        assert torch.isneginf(out[..., m.mask_id]).all()  # never "fill" a slot with the mask
        assert torch.isneginf(out[..., ~keep]).all()  # nor with an id without text


def test_dream_logits_are_shifted_back_to_slots(models):
    m = models["dream"]
    ids = _ids(m)
    out = m.logits(ids, 6)  # the answer slots only
    raw = m.net(input_ids=ids, attention_mask=hf.DREAM_FULL_ATTENTION).logits
    vocab = torch.arange(out.shape[-1])
    keep = (vocab != m.mask_id) & (vocab < len(m.tokenizer))
    assert torch.isneginf(out[..., ~keep]).all()
    out, raw = out[..., keep], raw[..., keep]
    assert not torch.allclose(raw[:, 1:], raw[:, :-1])  # the shift is observable
    assert out.shape[1] == 6
    torch.testing.assert_close(out, raw[:, -7:-1])  # slot i <- output at i-1
    # with no prompt, slot 0 has no output before it and takes its own
    alone = m.logits(ids[:, -6:], 6)[..., keep]
    raw = m.net(input_ids=ids[:, -6:], attention_mask=hf.DREAM_FULL_ATTENTION).logits[..., keep]
    torch.testing.assert_close(alone[:, 1:], raw[:, :-1])
    torch.testing.assert_close(alone[:, 0], raw[:, 0])
    assert m.describe()["logits_shifted_by_model"] is True


# ---------------------------------------------------------------------- prompts and text

def test_chat_template_wraps_the_prompt(models):
    for family, header in (("llada", "<|start_header_id|>assistant<|end_header_id|>\n\n"),
                           ("dream", "<|im_start|>assistant\n")):
        m = models[family]
        text = m.format_prompt(PROMPT)
        assert PROMPT in text and text.endswith(header)
        expected = m.tokenizer.apply_chat_template(
            [{"role": "user", "content": PROMPT}], add_generation_prompt=True, tokenize=False)
        assert text == expected
        ids = m.encode_prompt(PROMPT)
        assert ids == m.tokenizer(expected, add_special_tokens=False)["input_ids"]
        assert m.describe()["chat_template"] is True
    mlm = models["mlm"]
    assert mlm.format_prompt(PROMPT) == PROMPT
    ids = mlm.encode_prompt(PROMPT)
    assert ids[0] == mlm.tokenizer.cls_token_id and ids[-1] == mlm.tokenizer.sep_token_id


def test_chat_template_can_be_turned_off(dirs):
    m = load_model(f"llada:{dirs['llada']}", trust_remote_code=True, chat_template=False)
    assert m.format_prompt(PROMPT) == PROMPT


def test_decode_stops_at_the_first_end_token(models):
    for m in models.values():
        tok = m.tokenizer
        words = tok("to make", add_special_tokens=False)["input_ids"]
        after = tok("solve" if m.family == "mlm" else "Solve", add_special_tokens=False
                    )["input_ids"]
        first = tok.decode(words[:1]).strip()
        assert first and "to".startswith(first)
        for end in sorted(m.end_ids):
            answer = words + [end] + after + [m.eos_id] * 3
            assert m.decode(answer) == "to make"
            assert m.answer_until_end(answer) == words
            shown = m.decode_masked(words[:1] + [m.mask_id, end] + after)
            assert shown.replace(" ", "") == first + "_" and "olve" not in shown


def test_empty_and_too_long_prompts_raise_input_error(dirs, tmp_path):
    short = standins.save_llada(tmp_path / "short", max_positions=40)
    m = load_model(f"llada:{short}", trust_remote_code=True)
    with pytest.raises(InputError, match="empty"):
        m.encode_prompt("   ")
    n = len(m.encode_prompt(PROMPT))
    fix = rf"{n} tokens\) plus gen_length 30 .* --gen-length {40 - n}"
    with pytest.raises(InputError, match=fix):
        m.encode_prompt(PROMPT, gen_length=30)
    with pytest.raises(InputError, match="at most 40 positions"):
        m.encode_prompt(" ".join(["make"] * 60))
    with pytest.raises(InputError, match="at most 40"):  # every forward is checked too
        Run(m, task="countdown", prompt=PROMPT, strategy="greedy",
            config=GenerationConfig(gen_length=30, lc=2), decompose=False).finish()


# ---------------------------------------------------------------------- the remote-code gate

@pytest.mark.parametrize("family", ["llada", "dream"])
def test_remote_code_needs_opt_in(dirs, family, load_calls):
    with pytest.raises(ModelLoadError) as err:
        load_model(f"{family}:{dirs[family]}", implementation="remote")
    message = str(err.value)
    assert "--trust-remote-code" in message and hf.TRUST_REMOTE_CODE_ENV in message
    assert "run" in message and "code" in message
    assert load_calls == []  # refused before transformers read a single file
    with pytest.raises(ModelLoadError):  # shortcuts go through the same door
        load_model("llada-8b-instruct", trust_remote_code=False, implementation="remote")
    # the default, MEDAL's native code, needs no opt-in and runs none of the folder's code
    m = load_model(f"{family}:{dirs[family]}")
    assert m.implementation == "native" and m.describe()["remote_code"] is False
    assert load_calls == []


def test_env_var_opts_in(dirs, monkeypatch, load_calls):
    monkeypatch.setenv(hf.TRUST_REMOTE_CODE_ENV, "1")
    monkeypatch.setenv(hf.IMPLEMENTATION_ENV, "remote")
    m = load_model(f"dream:{dirs['dream']}")
    assert m.implementation == "remote"
    assert m.family == "dream"
    assert load_calls and all(trust is True for _, trust in load_calls)


def test_masked_lm_needs_no_opt_in_and_gets_none(dirs, load_calls):
    m = load_model(f"mlm:{dirs['mlm']}")
    assert m.family == "mlm"
    assert load_calls and all(trust is False for _, trust in load_calls)


def test_one_door_for_every_load():
    """One call of ``X.from_pretrained`` in the package, and no call anywhere passes a
    literal ``trust_remote_code=True``: the value always comes from the opt-in."""
    import ast
    calls = [n for n in ast.walk(ast.parse(hf_source())) if isinstance(n, ast.Call)]
    loads = [c for c in calls
             if isinstance(c.func, ast.Attribute) and c.func.attr == "from_pretrained"]
    assert len(loads) == 1
    trusts = [k.value for c in calls for k in c.keywords if k.arg == "trust_remote_code"]
    assert trusts and not any(isinstance(v, ast.Constant) and v.value is True for v in trusts)
    with pytest.raises(TypeError):
        hf.from_pretrained(object, hf.parse_spec("mlm:x/y"), needs_remote_code=False,
                           trust_remote_code=None, **{"trust_remote_code": True})


# ---------------------------------------------------------------------- specs, devices, files

def test_specs_shortcuts_and_revisions(tmp_path):
    s = hf.parse_spec("llada-8b-instruct")
    assert (s.family, s.target, s.revision, s.local) == ("llada", "GSAI-ML/LLaDA-8B-Instruct",
                                                         None, False)
    assert hf.parse_spec("llada-1.5@abc123").name == "llada:GSAI-ML/LLaDA-1.5@abc123"
    assert hf.parse_spec("dream-7b-instruct").target == "Dream-org/Dream-v0-Instruct-7B"
    assert hf.parse_spec("mlm:bert-base-uncased", revision="v1").revision == "v1"
    assert hf.parse_spec(f"mlm:{tmp_path}").local
    with pytest.raises(ModelLoadError, match="two different revisions"):
        hf.parse_spec("mlm:org/name@a", revision="b")
    with pytest.raises(ModelLoadError, match="local directory"):
        hf.parse_spec(f"mlm:{tmp_path}", revision="main")
    with pytest.raises(ModelLoadError, match="unknown model spec"):
        load_model("gpt:org/name")
    with pytest.raises(InputError, match="unknown model options"):
        load_model("mlm:org/name", precision="fp8")


def test_device_and_dtype_on_cpu(dirs, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert hf.choose_device("auto").type == "cpu"
    assert hf.choose_dtype("auto", torch.device("cpu")) == torch.float32
    with pytest.raises(ModelLoadError, match="no CUDA GPU"):
        hf.choose_device("cuda")
    with pytest.raises(InputError):
        hf.choose_dtype("int8", torch.device("cpu"))
    m = load_model(f"mlm:{dirs['mlm']}", dtype="bfloat16")
    assert m.device.type == "cpu" and next(m.net.parameters()).dtype == torch.bfloat16
    assert m.describe()["dtype"] == "bfloat16"
    assert m.logits(_ids(m), 6).dtype == torch.float32
    m = load_model(f"llada:{dirs['llada']}", trust_remote_code=True)
    assert next(m.net.parameters()).dtype == torch.float32


def test_missing_files_say_how_to_get_them(dirs, tmp_path, monkeypatch):
    with pytest.raises(ModelLoadError, match="no checkpoint directory"):
        load_model(f"mlm:{tmp_path / 'nowhere'}")
    partial = tmp_path / "partial"
    partial.mkdir()
    (partial / "config.json").write_text((dirs["mlm"] / "config.json").read_text())
    with pytest.raises(ModelLoadError, match=r"missing the weights .*tokenizer"):
        load_model(f"mlm:{partial}")
    import huggingface_hub.constants
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(ModelLoadError) as err:
        load_model("mlm:medal-tests/not-downloaded")
    assert "HF_HUB_OFFLINE" in str(err.value)
    assert "hf download medal-tests/not-downloaded" in str(err.value)


def test_memory_shortage_is_explained_before_loading(dirs, monkeypatch, load_calls):
    need = hf.memory_needed(8.0e9, torch.bfloat16)
    assert 16e9 < need < 24e9  # 16 GB of weights plus activations: a 24 GB GPU
    text = str(hf.memory_message("llada-8b", 8.0e9, torch.bfloat16, need, 12e9,
                                 torch.device("cuda")))
    assert "8.00 B parameters x 2 bytes in bfloat16 = 16.0 GB" in text and "12.0 GB free" in text
    net = load_model(f"llada:{dirs['llada']}", trust_remote_code=True,
                     implementation="remote").net
    assert hf.count_parameters(dirs["llada"]) == sum(p.numel() for p in net.parameters())
    load_calls.clear()
    monkeypatch.setattr(hf.memory_guard, "available_memory", lambda device: 1000.0)
    with pytest.raises(ModelLoadError, match="not enough memory"):
        load_model(f"llada:{dirs['llada']}", trust_remote_code=True, implementation="remote")
    assert load_calls == []
    with pytest.raises(ModelLoadError, match="not enough memory.*--skip-memory-check"):
        load_model(f"llada:{dirs['llada']}")  # native: the same check
    assert load_model(f"llada:{dirs['llada']}", memory_check=False).mask_id == hf.LLADA_MASK_ID


def test_cli_flags_reach_load_model(dirs, capsys):
    args = build_parser().parse_args(["generate", "--model", "llada-1.5", "--trust-remote-code",
                                      "--device", "cpu", "--dtype", "bfloat16",
                                      "--revision", "abc"])
    assert model_options(args) == {"trust_remote_code": True, "device": "cpu",
                                   "dtype": "bfloat16", "revision": "abc",
                                   "implementation": None, "mask_id": None,
                                   "memory_check": True, "kv_cache": "off"}
    args = build_parser().parse_args(["generate", "--implementation", "remote", "--mask-id", "5",
                                      "--skip-memory-check", "--kv-cache", "dual"])
    assert {k: model_options(args)[k] for k in ("implementation", "mask_id", "memory_check",
                                                "kv_cache")} \
        == {"implementation": "remote", "mask_id": 5, "memory_check": False, "kv_cache": "dual"}
    assert model_options(build_parser().parse_args(["generate"]))["trust_remote_code"] is False
    import argparse
    p = argparse.ArgumentParser()
    add_model_arguments(p)
    assert p.parse_args([]).device == "auto"

    rc = main(["generate", "--model", f"llada:{dirs['llada']}", "--prompt", PROMPT,
               "--gen-length", "8", "--lc", "2", "--implementation", "remote"])
    assert rc == 2 and "--trust-remote-code" in capsys.readouterr().err
    rc = main(["generate", "--model", f"llada:{dirs['llada']}", "--trust-remote-code",
               "--implementation", "remote",
               "--prompt", PROMPT, "--gen-length", "8", "--lc", "2", "--max-iterations", "5",
               "--json"])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert out["strategy"] == "medal" and out["forwards"] > 0


# ---------------------------------------------------------------------- end to end

@pytest.mark.parametrize("family", ["llada", "dream", "mlm"])
@pytest.mark.parametrize("strategy", list(STRATEGIES))
def test_every_strategy_runs_through_every_adapter(models, family, strategy):
    m = models[family]
    run = Run(m, task="countdown", prompt=PROMPT, strategy=strategy,
              config=GenerationConfig(**SMALL), trace=True)
    res = run.finish()
    trace = validate_trace(run.trace)
    assert len(res.answer_ids) == 8 and m.mask_id not in res.answer_ids
    assert res.text == m.decode(res.answer_ids)
    assert trace["run"]["model"]["family"] == family
    assert trace["run"]["model"]["end_ids"] == sorted(m.end_ids)
    if strategy in ("medal", "medal-no-mcts", "medal-margin-only"):
        assert "subtasks" in run.model_prompt  # the two-shot decomposition for LLMs
    if strategy.startswith("medal") and strategy != "medal-no-mcts":
        assert trace["search"]["winner"] is not None


@pytest.mark.parametrize("family", ["llada", "dream", "mlm"])
@pytest.mark.parametrize("strategy", ["medal", "greedy"])
def test_block_mode_fills_blocks_in_order(models, family, strategy):
    cfg = GenerationConfig(gen_length=8, block_length=4, steps=8, lc=2, max_iterations=20)
    res = Run(models[family], task="countdown", prompt=PROMPT, strategy=strategy,
              config=cfg).finish()
    order = res.order
    assert None not in order
    assert max(order[:4]) < min(order[4:])  # the first block is done before the second starts
