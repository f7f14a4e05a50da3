"""Tokenizers for native checkpoints, built from their files: no tokenizer code runs.

* A folder with ``tokenizer.json`` (LLaDA's, DiffuCoder's): ``PreTrainedTokenizerFast``
  reads it with ``tokenizer_config.json`` (special tokens, chat template); the config's
  ``auto_map``, if any, is never followed.
* A folder with only a slow Qwen2-style tokenizer (Dream's ``DreamTokenizer``:
  ``vocab.json`` + ``merges.txt`` + ``tokenizer_config.json``): :func:`bpe_fast_tokenizer`
  builds the byte-level BPE fast tokenizer with the same vocabulary, merges, special
  tokens at the same ids and the same chat template. ``tests/networks/test_native.py`` checks it
  gives the same ids as the slow tokenizer.
"""
from __future__ import annotations

import json
from pathlib import Path

from ..errors import ModelLoadError

#: Qwen2's pre-tokenizer split (Dream's tokenizer is Qwen2's)
QWEN2_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+"
               r"[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
NAMED_TOKENS = ("bos_token", "eos_token", "pad_token", "mask_token", "unk_token",
                "additional_special_tokens")


def _token_text(value):
    """A special token in tokenizer_config.json: a string or an AddedToken dict."""
    return value.get("content") if isinstance(value, dict) else value


def bpe_fast_tokenizer(source: Path):
    """A byte-level BPE ``PreTrainedTokenizerFast`` from a slow Qwen2-style tokenizer's
    ``vocab.json`` + ``merges.txt`` + ``tokenizer_config.json`` (see the module docstring)."""
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers
    from tokenizers import pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    source = Path(source)
    vocab = json.loads((source / "vocab.json").read_text(encoding="utf-8"))
    merges = [tuple(line.split(" ")) for line in
              (source / "merges.txt").read_text(encoding="utf-8").splitlines()
              if line and not line.startswith("#version")]
    config = json.loads((source / "tokenizer_config.json").read_text(encoding="utf-8"))
    added = sorted(((int(i), t) for i, t in config.get("added_tokens_decoder", {}).items()),
                   key=lambda p: p[0])
    core = Tokenizer(models.BPE(vocab=vocab, merges=merges, unk_token=None,
                                fuse_unk=False, byte_fallback=False))
    core.normalizer = normalizers.NFC()  # DreamTokenizer.prepare_for_tokenization
    core.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN2_SPLIT), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    core.decoder = decoders.ByteLevel()
    for tid, spec in added:
        if tid != core.get_vocab_size(with_added_tokens=True):
            raise ModelLoadError(
                f"{source}: added token {spec['content']!r} has id {tid}, but the next free id "
                f"is {core.get_vocab_size(with_added_tokens=True)}: the ids must follow the "
                "vocabulary without gaps. Give the checkpoint a tokenizer.json")
        core.add_special_tokens([AddedToken(spec["content"], special=spec.get("special", True),
                                            normalized=spec.get("normalized", False),
                                            lstrip=spec.get("lstrip", False),
                                            rstrip=spec.get("rstrip", False),
                                            single_word=spec.get("single_word", False))])
    named = {k: config[k] for k in NAMED_TOKENS if config.get(k) is not None}
    tok = PreTrainedTokenizerFast(tokenizer_object=core, clean_up_tokenization_spaces=False,
                                  model_max_length=config.get("model_max_length", 131072),
                                  **named)
    if config.get("chat_template"):
        tok.chat_template = config["chat_template"]
    for tid, spec in added:  # the ids are the point: check them
        if tok.convert_tokens_to_ids(spec["content"]) != tid:
            raise ModelLoadError(f"{source}: the tokenizer built from vocab.json/merges.txt "
                                 f"gives {spec['content']!r} another id than {tid}")
    return tok


def load_tokenizer(directory: Path):
    """The checkpoint's tokenizer as a fast tokenizer, from its files only."""
    from transformers import PreTrainedTokenizerFast

    directory = Path(directory)
    try:
        if (directory / "tokenizer.json").is_file():
            tok = PreTrainedTokenizerFast.from_pretrained(str(directory))
            config = directory / "tokenizer_config.json"
            if not getattr(tok, "chat_template", None) and config.is_file():
                template = json.loads(config.read_text(encoding="utf-8")).get("chat_template")
                if template:
                    tok.chat_template = template
            return tok
        if all((directory / f).is_file() for f in
               ("vocab.json", "merges.txt", "tokenizer_config.json")):
            return bpe_fast_tokenizer(directory)
    except ModelLoadError:
        raise
    except (OSError, ValueError, KeyError) as exc:
        raise ModelLoadError(f"the tokenizer files in {directory} are unreadable "
                             f"({type(exc).__name__}: {str(exc)[:300]}); download them "
                             "again") from exc
    raise ModelLoadError(f"no tokenizer in {directory}: MEDAL's native loading needs "
                         "tokenizer.json, or vocab.json + merges.txt + tokenizer_config.json")
