"""Checkpoint folders for the transformers adapters' tests: LLaDA, Dream and a BERT-style
masked LM, built and loaded exactly as a user's download.

* ``save_llada`` / ``save_dream`` -- a folder made by ``scripts/make_random_checkpoint.py``
  from the real checkpoints' ``config.json`` (``tests/data/real-models/*``: the real
  vocabulary sizes, special ids, positions and RoPE settings, the network shrunk), their
  tokenizers (Dream's as a fast tokenizer with the same ids: its slow ``DreamTokenizer``
  is upstream code) and model code, with seeded random safetensors weights. ``auto_map``
  names the code files in the folder, so loading runs them as remote code.
* The code is the stand-ins in ``standin_code/`` (ours: small networks that treat
  transformers as the genuine files do, see ``standin_code/README.md``), or the genuine
  upstream files from a folder named by ``MEDAL_REAL_MODEL_CODE`` (``llada/`` and
  ``dream/`` inside; never committed, see docs/REAL_MODELS.md).
* ``save_bert`` -- a tiny random ``BertForMaskedLM`` with a WordPiece tokenizer.
"""
from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest
import torch
import transformers
from transformers import BertConfig, BertForMaskedLM, BertTokenizerFast

ROOT = Path(__file__).resolve().parents[1]
REAL_CONFIGS = Path(__file__).resolve().parent / "data" / "real-models"
STANDIN_CODE = Path(__file__).resolve().parent / "standin_code"
#: names a folder with the genuine upstream code: <dir>/llada/{configuration,modeling}_llada.py
#: and <dir>/dream/{configuration_dream,modeling_dream,generation_utils,tokenization_dream}.py
REAL_CODE_ENV = "MEDAL_REAL_MODEL_CODE"
CODE_FILES = {"llada": ("configuration_llada.py", "modeling_llada.py"),
              "dream": ("configuration_dream.py", "modeling_dream.py", "generation_utils.py")}
#: optional: <dir>/lladamoe/{configuration,modeling}_lladamoe.py (LLaDA-MoE's genuine code;
#: without it the LLaDA-MoE genuine tests skip and the LLaDA/Dream ones still run)
OPTIONAL_CODE_FILES = {"llada-moe": ("configuration_lladamoe.py", "modeling_lladamoe.py")}
#: a family's folder name (REAL_CONFIGS, the genuine code)
FOLDER = {"llada": "llada", "dream": "dream", "llada-moe": "lladamoe"}
#: the config key that holds each family's position limit
POSITIONS_KEY = {"llada": "max_sequence_length", "dream": "max_position_embeddings",
                 "llada-moe": "max_position_embeddings"}

# Words of the Countdown prompts (for the BERT vocabulary); anything else is [UNK].
WORDS = ("Use to make Solve the problem by breaking it into subtasks then answer Question "
         "Subtask Answer Find two numbers whose combination gets close combine result with "
         "remaining number Check every is used once and Look for a division or subtraction "
         "that simplifies Refine intermediate step user assistant system You are a helpful"
         ).split()
SYMBOLS = list("0123456789+-*/()=.,:")


def _builder():
    spec = importlib.util.spec_from_file_location(
        "make_random_checkpoint", ROOT / "scripts" / "make_random_checkpoint.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def genuine_code() -> tuple[Path | None, str]:
    """(folder, "") if ``MEDAL_REAL_MODEL_CODE`` names a complete folder of the genuine
    code; else (None, why the genuine-code tests skip)."""
    value = os.environ.get(REAL_CODE_ENV, "").strip()
    if not value:
        return None, (f"{REAL_CODE_ENV} is not set: set it to a folder with the genuine "
                      "upstream files in llada/ and dream/ (docs/REAL_MODELS.md, 'Testing "
                      "against the genuine code') to run these tests on them")
    folder = Path(value).expanduser()
    missing = [f"{fam}/{f}" for fam, files in CODE_FILES.items() for f in files
               if not (folder / fam / f).is_file()]
    if missing:
        return None, f"{REAL_CODE_ENV}={folder} lacks {', '.join(missing)}"
    return folder, ""


def genuine_moe_code() -> tuple[Path | None, str]:
    """Like :func:`genuine_code`, for LLaDA-MoE's genuine files (``lladamoe/``)."""
    folder, why = genuine_code()
    if folder is None:
        return None, why
    missing = [f"lladamoe/{f}" for f in OPTIONAL_CODE_FILES["llada-moe"]
               if not (folder / "lladamoe" / f).is_file()]
    if missing:
        return None, (f"{REAL_CODE_ENV}={folder} lacks {', '.join(missing)} (LLaDA-MoE's "
                      "genuine code)")
    return folder, ""


#: LLaDA2.0's and LLaDA2.1's genuine files (dllm's copies, <dir>/llada2 and <dir>/llada21),
#: and dllm's samplers for them (<dir>/dllm-samplers); optional like LLaDA-MoE's
LLADA2_CODE = {"2.0": ("llada2", ("configuration_llada2_moe.py", "modeling_llada2_moe.py")),
               "2.1": ("llada21", ("configuration_llada21_moe.py", "modeling_llada21_moe.py"))}
LLADA2_SAMPLERS = ("dllm-samplers", ("llada2_sampler.py", "llada21_sampler.py"))


def genuine_llada2_code(version: str = "2.0") -> tuple[Path | None, str]:
    """(folder of LLaDA2.0's or 2.1's genuine model code, "") if ``MEDAL_REAL_MODEL_CODE``
    holds it (``llada2/`` or ``llada21/``); else (None, why the tests that need it skip).
    ``version`` "samplers": dllm's samplers (``dllm-samplers/``)."""
    value = os.environ.get(REAL_CODE_ENV, "").strip()
    if not value:
        return None, (f"{REAL_CODE_ENV} is not set: set it to a folder with LLaDA2's genuine "
                      "code in llada2/, llada21/ and dllm-samplers/ (docs/REAL_MODELS.md, "
                      "'Testing against the genuine code') to run these tests on it")
    sub, files = LLADA2_SAMPLERS if version == "samplers" else LLADA2_CODE[version]
    folder = Path(value).expanduser() / sub
    missing = [f"{sub}/{f}" for f in files if not (folder / f).is_file()]
    if missing:
        return None, f"{REAL_CODE_ENV}={folder.parent} lacks {', '.join(missing)}"
    return folder, ""


def save_llada2(directory, version: str = "2.0", source: str = "native", seed: int = 0,
                dtype: str = "fp32", std: float | None = None,
                overrides: dict | None = None) -> Path:
    """A LLaDA2 checkpoint folder: the shrunk config and the tokenizer of
    ``tests/data/real-models/llada2`` (changed by ``overrides``), seeded random weights
    named as ``LLaDA2MoeModelLM`` names them (``std``: of the matrices; the config's 0.02
    by default), and ``source`` code: "native" (none) or "genuine" (LLaDA2.0's or 2.1's
    published files, ``version``; 2.1's config then names dllm's ``llada21_moe`` files).
    The weights depend on the seed, std and shapes only: every source reads the same."""
    overrides = dict(overrides or {})
    code = None
    if source == "genuine":
        if int(transformers.__version__.split(".")[0]) >= 5:
            pytest.skip(f"LLaDA2's own code needs transformers 4.x (this is "
                        f"{transformers.__version__}; on 5.24.0 it fails: No module named "
                        "'transformers.modeling_attn_mask_utils')")
        code, why = genuine_llada2_code(version)
        if code is None:
            raise RuntimeError(why)
        if version == "2.1":
            overrides.setdefault("model_type", "llada21_moe")
            overrides.setdefault("auto_map", {
                "AutoConfig": "configuration_llada21_moe.LLaDA2MoeConfig",
                "AutoModel": "modeling_llada21_moe.LLaDA2MoeModel",
                "AutoModelForCausalLM": "modeling_llada21_moe.LLaDA2MoeModelLM"})
    elif source != "native":
        raise RuntimeError(f"LLaDA2 has no {source} code (native or genuine)")
    return _builder().build(REAL_CONFIGS / "llada2" / "config.json", code, Path(directory),
                            dtype=dtype, seed=seed, std=std, overrides=overrides,
                            native="llada2")


def code_folder(family: str, source: str = "standin") -> Path | None:
    if source == "native":
        return None
    if source == "standin":
        if family not in CODE_FILES:
            raise RuntimeError(f"no stand-in code for {family}")
        return STANDIN_CODE / family
    folder, why = genuine_moe_code() if family == "llada-moe" else genuine_code()
    if folder is None:
        raise RuntimeError(why)
    return folder / FOLDER[family]


def _moe_mask_text(directory: Path) -> None:
    """LLaDA-MoE's tokenizer names its mask ``<|mask|>``; the test checkpoints use LLaDA's
    tokenizer with its ``<|mdm_mask|>`` renamed so (same id, 126336)."""
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        f = directory / name
        if f.is_file():
            f.write_text(f.read_text(encoding="utf-8").replace("<|mdm_mask|>", "<|mask|>"),
                         encoding="utf-8")


def save_checkpoint(directory, family: str, source: str = "standin", seed: int = 0,
                    max_positions: int | None = None, dtype: str = "fp32",
                    overrides: dict | None = None) -> Path:
    """A checkpoint folder of ``family`` (llada/dream/llada-moe) with the real config
    (changed by ``overrides``) and tokenizer, ``source`` code ("standin", "genuine", or "native": no
    code, tensor names and shapes from MEDAL's native network) and seeded random weights.
    The weights depend on the seed, the names and the shapes only, so the three sources
    give the same weights.

    The folder's name should be unique per code: transformers caches remote code by the
    folder's name."""
    if source != "native" and int(transformers.__version__.split(".")[0]) >= 5:
        # the checkpoints' own code (and the stand-ins, which use transformers as it does)
        # fails on 5.x by design; the test extra pins 4.x (docs/REAL_MODELS.md)
        pytest.skip(f"the {family} checkpoint's own code needs transformers 4.x "
                    f"(this is {transformers.__version__}); pip install -e '.[test]' pins it")
    code = code_folder(family, source)
    overrides = dict(overrides or {})
    if max_positions:
        overrides[POSITIONS_KEY[family]] = max_positions
    # Dream's slow tokenizer is code (tokenization_dream.py): with the genuine code it is
    # used as a download uses it; the stand-ins use a fast tokenizer with the same ids
    fast = family == "dream" and not (code and (code / "tokenization_dream.py").is_file())
    # LLaDA-MoE: a tiny config of our own (tests/data/real-models/lladamoe) and LLaDA's
    # tokenizer with the mask renamed <|mask|>, as LLaDA-MoE's is named
    tokenizer = REAL_CONFIGS / "llada" if family == "llada-moe" else None
    out = _builder().build(REAL_CONFIGS / FOLDER[family] / "config.json", code,
                           Path(directory), tokenizer=tokenizer, fast_tokenizer=fast,
                           dtype=dtype, seed=seed, overrides=overrides,
                           native=family if source == "native" else None)
    if family == "llada-moe":
        _moe_mask_text(out)
    return out


def save_llada(directory, seed: int = 0, max_positions: int | None = None) -> Path:
    """A LLaDA checkpoint folder with the stand-in code (see :func:`save_checkpoint`)."""
    return save_checkpoint(directory, "llada", "standin", seed, max_positions)


def save_dream(directory, seed: int = 0, max_positions: int | None = None) -> Path:
    """A Dream checkpoint folder with the stand-in code (see :func:`save_checkpoint`)."""
    return save_checkpoint(directory, "dream", "standin", seed, max_positions)


def save_bert(directory, seed: int = 0) -> Path:
    """A tiny random ``BertForMaskedLM`` (hidden 32, 2 layers) and WordPiece tokenizer."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [w.lower() for w in WORDS] + SYMBOLS
    vocab += [f"##{d}" for d in "0123456789"]  # so "18" is "1", "##8"
    vocab = list(dict.fromkeys(vocab))
    (directory / "vocab.txt").write_text("\n".join(vocab) + "\n")
    (directory / "tokenizer.json").unlink(missing_ok=True)  # a stale one would win
    tokenizer = BertTokenizerFast.from_pretrained(directory)  # reads vocab.txt (4.x and 5.x)
    torch.manual_seed(seed)
    config = BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=64,
                        max_position_embeddings=512)
    BertForMaskedLM(config).eval().save_pretrained(directory, safe_serialization=True)
    tokenizer.save_pretrained(directory)
    return directory


# ---------------------------------------------------------------------- LLaDA2

#: LLaDA2's special tokens at the ids its published code uses (mask 156895: the samplers'
#: ``mask_id``; EOS 156892: their ``eos_id`` and config.json's ``pad_token_id``); the role
#: markup of its chat template at ids of ours (the published tokenizer was not on this
#: machine: the adapter finds these by their text, whatever their ids)
LLADA2_SPECIALS = {156891: "<|startoftext|>", 156892: "<|endoftext|>", 156893: "[CLS]",
                   156894: "[gMASK]", 156895: "<|mask|>", 156900: "<|role_end|>",
                   157151: "<role>", 157152: "</role>"}
LLADA2_VOCAB = 157184
#: Ling's role-tagged template, as LLaDA2 reads a conversation (ours: user -> HUMAN)
LLADA2_CHAT_TEMPLATE = (
    "{% for message in messages %}{% set role = message['role'] | upper %}"
    "{% if role == 'USER' %}{% set role = 'HUMAN' %}{% endif %}"
    "{{ '<role>' + role + '</role>' + message['content'] + '<|role_end|>' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<role>ASSISTANT</role>' }}{% endif %}")


def llada2_tokenizer_files() -> dict[str, str]:
    """The test tokenizer of ``tests/data/real-models/llada2`` (what its files hold; a
    test checks they still do): LLaDA's test tokenizer's byte-level BPE (ids below
    126080), fillers up to LLaDA2's vocabulary of 157,184 ids (every id has text, as in
    the model's output layer), and :data:`LLADA2_SPECIALS` at their ids."""
    import json
    src = json.loads((REAL_CONFIGS / "llada" / "tokenizer.json").read_text(encoding="utf-8"))
    base = {k: i for k, i in src["model"]["vocab"].items() if i < 126080}
    vocab = dict(base)
    for i in range(len(base), LLADA2_VOCAB):
        vocab[LLADA2_SPECIALS.get(i, f"<|filler_{i}|>")] = i
    added = [{"id": i, "content": text, "single_word": False, "lstrip": False,
              "rstrip": False, "normalized": False, "special": True}
             for i, text in sorted(LLADA2_SPECIALS.items())]
    tokenizer = {**src, "added_tokens": added, "model": {**src["model"], "vocab": vocab}}
    config = {"add_bos_token": False, "add_eos_token": False,
              "added_tokens_decoder": {str(a["id"]): {k: v for k, v in a.items() if k != "id"}
                                       for a in added},
              "bos_token": "<|startoftext|>", "eos_token": "<|endoftext|>",
              "pad_token": "<|endoftext|>", "mask_token": "<|mask|>", "cls_token": "[CLS]",
              "additional_special_tokens": ["<|role_end|>", "<role>", "</role>"],
              "chat_template": LLADA2_CHAT_TEMPLATE, "clean_up_tokenization_spaces": False,
              "model_max_length": 32768, "tokenizer_class": "PreTrainedTokenizerFast"}
    specials = {"bos_token": "<|startoftext|>", "eos_token": "<|endoftext|>",
                "pad_token": "<|endoftext|>", "mask_token": "<|mask|>", "cls_token": "[CLS]",
                "additional_special_tokens": ["<|role_end|>", "<role>", "</role>"]}
    generation = {"bos_token_id": 156891, "eos_token_id": 156892, "pad_token_id": 156892}
    dump = lambda value: json.dumps(value, indent=2, ensure_ascii=False) + "\n"  # noqa: E731
    return {"tokenizer.json": json.dumps(tokenizer, ensure_ascii=False),
            "tokenizer_config.json": dump(config), "special_tokens_map.json": dump(specials),
            "generation_config.json": dump(generation)}
