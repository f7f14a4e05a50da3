"""LLaDA and Dream checkpoint folders loaded as a user loads a download.

Each folder holds the real checkpoint's ``config.json`` and tokenizer (from
``tests/data/real-models``: real vocabulary sizes, special ids, RoPE settings; the
network shrunk), model code named by ``auto_map`` and seeded random safetensors weights
(``scripts/make_random_checkpoint.py``). It is loaded through ``load_model("llada:DIR")``
/ ``load_model("dream:DIR")`` with remote code opted in.

The code is, in turn:

* ``standin`` -- ``tests/standin_code/``: ours, small, and treating transformers exactly
  as the genuine files do (no ``post_init``, old ``tie_weights``, ``use_cache`` read but
  not set, the ``"default"`` RoPE lookup, an old-style ``validate``, an ``inv_freq`` buffer
  filled only in ``__init__``). Always runs.
* ``genuine`` -- the upstream files from the folder named by ``MEDAL_REAL_MODEL_CODE``;
  skipped, with the reason, when it is not set.
"""
from __future__ import annotations

import json

import pytest
import torch

import standins
from medal.config import GenerationConfig
from medal.engine import STRATEGIES, Run
from medal.errors import ModelLoadError
from medal.models import hf, load_model

PROMPT = "Use 4, 18, 13 to make 20."
# no two-shot decomposition: a short prompt keeps each forward over the real vocabulary cheap
SMALL = dict(gen_length=8, lc=2, steps=8, max_iterations=6, samples=2, seed=0, decompose=False)
#: the real checkpoints' ids (config.json and tokenizer), as the adapters must find them
REAL = {"llada": dict(vocab=126464, mask=126336, ends={126081, 126348}, eos=126081,
                      net="LLaDAModelLM", text_tokens=126349),
        "dream": dict(vocab=152064, mask=151666, ends={151643, 151645}, eos=151643,
                      net="DreamModel", text_tokens=151667)}
GENUINE, WHY_NOT = standins.genuine_code()
SOURCES = ["standin", pytest.param("genuine", marks=pytest.mark.skipif(
    GENUINE is None, reason=WHY_NOT))]


@pytest.fixture(autouse=True)
def no_env_opt_in(monkeypatch):
    monkeypatch.delenv(hf.TRUST_REMOTE_CODE_ENV, raising=False)


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    """Checkpoint folders, built on first use: {(source, family): path}. Folder names are
    unique per code (transformers caches a folder's remote code under its name)."""
    root = tmp_path_factory.mktemp("real-code")
    built = {}

    def get(source: str, family: str):
        if (source, family) not in built:
            built[source, family] = standins.save_checkpoint(
                root / f"{source}-{family}-{root.name}", family, source)
        return built[source, family]
    return get


@pytest.fixture(scope="module")
def loaded(folders):
    cache = {}

    def get(source: str, family: str):
        if (source, family) not in cache:
            cache[source, family] = load_model(f"{family}:{folders(source, family)}",
                                               trust_remote_code=True, device="cpu",
                                               implementation="remote")
        return cache[source, family]
    return get


def _checked_logits(model):
    """Wrap ``model.logits`` so every forward of a run is checked: no NaN, and every logit
    finite except the ids the adapter bans on purpose (mask, ids without text: -inf)."""
    original = model.logits
    banned = torch.zeros(model.vocab_size, dtype=torch.bool)
    banned[model.mask_id] = True
    banned[len(model.tokenizer):] = True
    calls = []

    def logits(*args, **kwargs):
        out = original(*args, **kwargs)
        assert not torch.isnan(out).any(), "NaN logits"
        assert torch.isfinite(out[..., ~banned]).all(), "non-finite logits"
        assert torch.isneginf(out[..., banned]).all(), "a banned id can be chosen"
        calls.append(out.shape)
        return out
    return logits, calls


# ---------------------------------------------------------------------- loading

@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("family", ["llada", "dream"])
def test_loads_like_a_download(loaded, folders, source, family):
    m = loaded(source, family)
    real = REAL[family]
    folder = folders(source, family)
    assert type(m.net).__name__ == real["net"]
    # the class came from the folder's own code, run as remote code
    assert type(m.net).__module__.startswith("transformers_modules")
    config = json.loads((folder / "config.json").read_text())
    assert config["auto_map"]["AutoModel"].endswith(real["net"])
    assert (m.vocab_size, m.mask_id, m.eos_id) == (real["vocab"], real["mask"], real["eos"])
    assert set(m.end_ids) == real["ends"]
    assert len(m.tokenizer) == real["text_tokens"]  # fewer tokens than logits
    assert m.describe()["parameters"] == hf.count_parameters(folder)
    ids = torch.tensor([m.encode_prompt(PROMPT) + [m.mask_id] * 4])
    out = m.logits(ids, 4)  # the 4 answer slots
    assert out.shape == (1, 4, real["vocab"])
    finite = out[..., : len(m.tokenizer)].clone()
    finite[..., m.mask_id] = 0
    assert torch.isfinite(finite).all()
    assert finite.std() > 0  # the weights were loaded, not left at zero


@pytest.mark.parametrize("source", SOURCES)
def test_dream_rope_buffer_is_filled(loaded, source):
    """Dream's inv_freq is a non-persistent buffer filled only in __init__: a loading
    path that builds the model on another device leaves it uninitialised (NaN logits)."""
    m = loaded(source, "dream")
    rope = m.net.model.rotary_emb
    cfg = m.net.config
    dim = cfg.hidden_size // cfg.num_attention_heads
    expected = 1.0 / (cfg.rope_theta ** (torch.arange(0, dim, 2, dtype=torch.float) / dim))
    torch.testing.assert_close(rope.inv_freq.float(), expected)


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("family", ["llada", "dream"])
def test_opt_in_gate_refuses_without_opt_in(folders, source, family, monkeypatch):
    import transformers
    reads = []
    for name in ("AutoModel", "AutoTokenizer", "AutoConfig"):
        monkeypatch.setattr(getattr(transformers, name), "from_pretrained",
                            lambda *a, **k: reads.append(a))
    with pytest.raises(ModelLoadError) as err:
        load_model(f"{family}:{folders(source, family)}", device="cpu",
                   implementation="remote")
    assert "--trust-remote-code" in str(err.value)
    assert hf.TRUST_REMOTE_CODE_ENV in str(err.value)
    assert reads == []  # refused before transformers read a file


# ---------------------------------------------------------------------- every strategy

@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("family", ["llada", "dream"])
@pytest.mark.parametrize("strategy", list(STRATEGIES))
def test_every_strategy_runs(loaded, source, family, strategy, monkeypatch):
    m = loaded(source, family)
    logits, calls = _checked_logits(m)
    monkeypatch.setattr(m, "logits", logits)
    res = Run(m, task="countdown", prompt=PROMPT, strategy=strategy,
              config=GenerationConfig(**SMALL)).finish()
    assert calls, "the run never called the model"
    assert len(res.answer_ids) == 8
    assert m.mask_id not in res.answer_ids
    assert all(0 <= i < len(m.tokenizer) for i in res.answer_ids)  # every id has text
    assert isinstance(res.text, str) and res.text == m.decode(res.answer_ids)


# ---------------------------------------------------------------------- ids without text

@pytest.mark.parametrize("family", ["llada", "dream"])
def test_ids_without_text_show_a_placeholder(loaded, family):
    m = loaded("standin", family)
    n = len(m.tokenizer)
    assert n < m.vocab_size
    missing = [n, n + 7, m.vocab_size - 1]
    for i in missing:
        assert m.token_text(i) == f"<id {i}>"
    word = m.tokenizer("make", add_special_tokens=False)["input_ids"]
    answer = word + missing + word
    assert m.decode(answer) == f"make<id {n}><id {n + 7}><id {m.vocab_size - 1}>make"
    shown = m.decode_masked(word + [m.mask_id, missing[0]])
    assert shown == f"make_<id {n}>"
    assert m.decode_masked(word + [m.mask_id, missing[0]], mask="?") == f"make?<id {n}>"


# ---------------------------------------------------------------------- the chat template

@pytest.mark.parametrize("family", ["llada", "dream"])
def test_chat_template_as_the_model_card(loaded, family):
    """LLaDA's model card (and generate.py): ``apply_chat_template(m,
    add_generation_prompt=True, tokenize=False)``, then ``tokenizer(prompt)['input_ids']``.
    Dream's README: ``apply_chat_template(m, add_generation_prompt=True)`` tokenized by the
    template call itself (no special tokens added on top)."""
    m = loaded("standin", family)
    tok = m.tokenizer
    messages = [{"role": "user", "content": PROMPT}]
    text = tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    assert m.format_prompt(PROMPT) == text
    if family == "llada":
        expected = tok(text)["input_ids"]
        assert text.startswith("<|startoftext|><|start_header_id|>user<|end_header_id|>")
        assert text.endswith("<|start_header_id|>assistant<|end_header_id|>\n\n")
    else:
        expected = tok(text, add_special_tokens=False)["input_ids"]
        assert text.endswith("<|im_start|>assistant\n")
    assert m.encode_prompt(PROMPT) == expected


def test_llada_prompt_is_tokenized_as_the_model_card_does(loaded, folders):
    """``tokenizer(prompt)`` adds the tokenizer's own special tokens when its
    ``tokenizer.json`` has a post-processor (Llama-3-style tokenizers prepend BOS): the
    adapter gives the model exactly the ids the model card's code gives it."""
    from tokenizers import processors
    from transformers import AutoTokenizer
    m = loaded("standin", "llada")
    tok = AutoTokenizer.from_pretrained(folders("standin", "llada"))
    bos = tok.convert_tokens_to_ids(tok.bos_token)
    tok.backend_tokenizer.post_processor = processors.TemplateProcessing(
        single=f"{tok.bos_token} $A", special_tokens=[(tok.bos_token, bos)])
    adapter = hf.LLaDALM(m.net, tok, m.source, device=m.device, dtype=m.dtype)
    text = tok.apply_chat_template([{"role": "user", "content": PROMPT}],
                                   add_generation_prompt=True, tokenize=False)
    card = tok(text)["input_ids"]
    assert card[:2] == [bos, bos]  # the template's BOS and the post-processor's
    assert adapter.encode_prompt(PROMPT) == card
