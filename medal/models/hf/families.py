"""The checkpoint families: special tokens, the family config.json declares, the ones refused."""
from __future__ import annotations

import json
from pathlib import Path

from ...errors import ModelLoadError
from .checkpoint import read_json

# ---------------------------------------------------------------------- special tokens
# Every special id, named once: (token text, id in the official checkpoints).

LLADA_MASK_TOKEN, LLADA_MASK_ID = "<|mdm_mask|>", 126336  # every masked slot holds it
LLADA_EOS_TOKEN, LLADA_EOS_ID = "<|endoftext|>", 126081   # pads the answer after it ends
LLADA_EOT_TOKEN, LLADA_EOT_ID = "<|eot_id|>", 126348      # ends the assistant's turn

DREAM_MASK_TOKEN, DREAM_MASK_ID = "<|mask|>", 151666
DREAM_EOS_TOKEN, DREAM_EOS_ID = "<|endoftext|>", 151643   # pads the answer after it ends
DREAM_IM_END_TOKEN, DREAM_IM_END_ID = "<|im_end|>", 151645  # ends the assistant's turn

# LLaDA2.0 / LLaDA2.1: the ids their published samplers default to (``mask_id``,
# ``eos_id`` of ``LLaDA2MoeModelLM.generate``; config.json's ``pad_token_id``). The turn
# ends with ``<|role_end|>`` (dllm's ``eot_token``), found by its text in the tokenizer.
LLADA2_MASK_TOKEN, LLADA2_MASK_ID = "<|mask|>", 156895
LLADA2_EOS_TOKEN, LLADA2_EOS_ID = "<|endoftext|>", 156892
LLADA2_EOT_TOKEN = "<|role_end|>"

#: the texts a family's mask token goes by, tried in this order when neither config.json
#: nor the tokenizer declares the mask id (LLaDA-MoE and LLaDA 2 name theirs like Dream's)
MASK_TEXTS = {"llada": (LLADA_MASK_TOKEN, DREAM_MASK_TOKEN), "dream": (DREAM_MASK_TOKEN,),
              "llada2": (LLADA2_MASK_TOKEN,)}

#: Dream's forward reads this string as "no padding: every position attends everywhere"
#: (what its own sampler passes for unpadded batches).
DREAM_FULL_ATTENTION = "full"


def _config_text(config: dict) -> str:
    """model_type, architectures and auto_map of a config, as one lower-case string."""
    parts = [str(config.get("model_type") or "")]
    parts += [str(a) for a in config.get("architectures") or []]
    parts += [str(v) for v in (config.get("auto_map") or {}).values()]
    return " ".join(parts).lower()


def _declares_uniform_noise(config: dict) -> bool:
    for key, value in config.items():
        if any(w in key.lower() for w in ("noise", "diffusion_type", "corruption")):
            if "uniform" in str(value).lower():
                return True
    return "diffusiongemma" in _config_text(config).replace("_", "").replace("-", "")


def detect_family(config: dict, where: str = "config.json") -> str | None:
    """The family a checkpoint's config.json declares (model_type, architectures,
    auto_map): ``llada``, ``llada-moe``, ``llada2`` (LLaDA2.0 and LLaDA2.1: ``llada2_moe``;
    dllm registers 2.1's code as ``llada21_moe``), ``dream``, or None when it names none of
    them. Families MEDAL cannot search are refused here, with the reason."""
    text = _config_text(config)
    if _declares_uniform_noise(config):
        raise ModelLoadError(
            f"{where} declares a uniform-noise diffusion model: its tokens are corrupted "
            "into other tokens, not masked, so there are no masked slots to unmask. MEDAL's "
            "actions unmask slots, so it cannot search this model; use a masked diffusion "
            "model (LLaDA, Dream)")
    if "llada2" in text.replace("_", "").replace("-", ""):
        return "llada2"
    if "sdar" in text:
        raise ModelLoadError(
            f"{where} declares a block-causal diffusion model ({config.get('model_type')}) "
            "that MEDAL has no model code for: SDAR denoises one block at a time with its "
            "own network. MEDAL runs one block-causal family natively, LLaDA2.0 / LLaDA2.1 "
            "(llada2_moe); use it, or LLaDA-8B, LLaDA-1.5 or Dream")
    if "lladamoe" in text or "llada_moe" in text:
        return "llada-moe"
    if "llada" in text:
        return "llada"
    if "dream" in text:
        return "dream"
    return None


#: tokens whose meaning MEDAL's engine cannot honour: a checkpoint that writes them expects
#: its own decoder to act on them (DreamOn's <|expand|> turns one mask into two, <|delete|>
#: removes a slot: a canvas that grows and shrinks, where MEDAL's has fixed slots)
EDIT_TOKENS = ("<|expand|>", "<|delete|>")
EDIT_WORDS = ("expand", "delete", "insert")
#: generation settings of a variable-length canvas (DreamOn's generation_config)
CANVAS_KEYS = ("expand_budget", "max_expansion", "delete_token_id", "expand_token_id")


def _tokenizer_specials(directory: Path) -> set[str]:
    """The added/special tokens a local tokenizer declares in its small JSON files
    (transformers 4.x saves every added token in tokenizer_config.json's
    added_tokens_decoder; 5.x keeps a fast tokenizer's in tokenizer.json only)."""
    out: set[str] = set()
    for name in ("tokenizer_config.json", "special_tokens_map.json", "added_tokens.json"):
        data = read_json(directory / name, missing_ok=True) or {}
        for entry in data.get("added_tokens") or []:
            if isinstance(entry, dict):
                out.add(str(entry.get("content")))
        for entry in (data.get("added_tokens_decoder") or {}).values():
            if isinstance(entry, dict):
                out.add(str(entry.get("content")))
        if name == "added_tokens.json":
            out.update(str(k) for k in data)
        for key, value in data.items():
            if key.endswith("_token") and isinstance(value, str):
                out.add(value)
            elif key == "additional_special_tokens" and isinstance(value, list):
                out.update(str(v.get("content") if isinstance(v, dict) else v) for v in value)
    return out


def refuse_what_the_engine_cannot_honour(config: dict | None, directory: Path | None,
                                         name: str) -> None:
    """A checkpoint whose files name tokens or a canvas MEDAL's engine cannot honour is
    refused with the reason, as block-causal and uniform-noise models are: DreamOn (Dream's
    network, but <|expand|>/<|delete|> tokens that grow and shrink the canvas) would
    otherwise run silently as plain Dream, its edit tokens written as answer text."""
    found = []
    generation = {}
    if directory is not None:
        generation = read_json(directory / "generation_config.json", missing_ok=True) or {}
    for where, data in (("config.json", config or {}), ("generation_config.json", generation)):
        if not isinstance(data, dict):
            continue
        for key in data:
            k = key.lower()
            if k in CANVAS_KEYS or (k.endswith("token_id") and any(w in k for w in EDIT_WORDS)):
                found.append(f"{where} sets {key}")
    if directory is not None:
        specials = _tokenizer_specials(directory)
        fast = directory / "tokenizer.json"   # megabytes: searched as bytes, not parsed
        raw = fast.read_bytes() if fast.is_file() else b""
        found += [f"the tokenizer has {t}" for t in EDIT_TOKENS
                  if t in specials or json.dumps(t).encode() in raw]
    if found:
        raise ModelLoadError(
            f"{name} is a variable-length (DreamOn-style) model, which MEDAL cannot run",
            fix="use a fixed-canvas masked diffusion model (LLaDA, LLaDA-1.5, Dream, "
                "Dream-Coder)",
            details=f"{'; '.join(found)}. Its decoder grows and shrinks the answer with edit "
                    "tokens (expand one mask into two, delete a slot); MEDAL searches and "
                    "decodes a fixed number of answer slots, so it would write those tokens "
                    "as answer text.")


def resolve_family(prefix: str, config: dict | None, where: str = "config.json") -> str:
    """The adapter family: the one config.json declares; the spec's prefix where the
    config names none (an override for unknown configs). A prefix that contradicts the
    config is an error: the weights would be read as the wrong network."""
    detected = detect_family(config, where) if config else None
    if prefix == "hf":
        if detected is None:
            raise ModelLoadError(
                f"{where} names no family MEDAL knows (model_type "
                f"{(config or {}).get('model_type')!r}); say which it is: llada:, dream: or "
                "mlm: (a BERT-style masked LM)")
        return detected
    if detected is None or detected == prefix or (prefix, detected) in (("llada", "llada-moe"),
                                                                        ("llada", "llada2")):
        return detected or prefix
    raise ModelLoadError(f"the spec says {prefix}:, but {where} declares a {detected} model "
                         f"(model_type {config.get('model_type')!r}); use {detected.split('-')[0]}:"
                         " or hf: (the family from the config)")
