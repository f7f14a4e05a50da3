"""Tiny randomly initialised stand-ins for LLaDA, Dream and a BERT-style masked LM.

They have the call shapes of the real checkpoints (which cannot be downloaded here):

* ``StandinLLaDA`` -- ``model(input_ids, attention_mask=...)`` returns ``.logits`` whose
  position i predicts slot i (LLaDA's convention), special tokens named as LLaDA's.
* ``StandinDream`` -- ``model(input_ids, attention_mask="full")`` returns ``.logits`` whose
  position i predicts slot i+1 (Dream's convention: the adapter shifts them back),
  special tokens named as Dream's, a Qwen-style chat template.
* ``save_bert`` -- a tiny random ``BertForMaskedLM`` with a WordPiece tokenizer.

The model types are registered with ``AutoConfig``/``AutoModel``, so loading them needs no
remote code -- yet the ``llada:``/``dream:`` specs must still demand the opt-in.
Everything is saved with safetensors into a directory and loaded back through
``from_pretrained``, exactly as a downloaded checkpoint would be.
"""
from __future__ import annotations

from pathlib import Path

import torch
import torch.nn as nn
from tokenizers import Tokenizer, decoders, models, pre_tokenizers
from transformers import (AutoConfig, AutoModel, BertConfig, BertForMaskedLM, BertTokenizerFast,
                          PretrainedConfig, PreTrainedModel, PreTrainedTokenizerFast)
from transformers.modeling_outputs import MaskedLMOutput

from medal.models import hf

# Words of the Countdown prompts (plain and two-shot decomposition); anything else is [UNK].
WORDS = ("Use to make Solve the problem by breaking it into subtasks then answer Question "
         "Subtask Answer Find two numbers whose combination gets close combine result with "
         "remaining number Check every is used once and Look for a division or subtraction "
         "that simplifies Refine intermediate step user assistant system You are a helpful"
         ).split()
SYMBOLS = list("0123456789+-*/()=.,:")

LLADA_SPECIALS = {"bos": "<|startoftext|>", "eos": hf.LLADA_EOS_TOKEN, "eot": hf.LLADA_EOT_TOKEN,
                  "mask": hf.LLADA_MASK_TOKEN, "header_start": "<|start_header_id|>",
                  "header_end": "<|end_header_id|>"}
LLADA_CHAT_TEMPLATE = (
    "{{ '<|startoftext|>' }}{% for m in messages %}<|start_header_id|>{{ m['role'] }}"
    "<|end_header_id|>\n\n{{ m['content'] }}<|eot_id|>{% endfor %}"
    "{% if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>\n\n{% endif %}")

DREAM_SPECIALS = {"eos": hf.DREAM_EOS_TOKEN, "im_end": hf.DREAM_IM_END_TOKEN,
                  "im_start": "<|im_start|>", "mask": hf.DREAM_MASK_TOKEN}
DREAM_CHAT_TEMPLATE = (
    "{% for m in messages %}{% if loop.first and m['role'] != 'system' %}"
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n{% endif %}"
    "<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


# ---------------------------------------------------------------------- models

class StandinConfig(PretrainedConfig):
    """A tiny bidirectional transformer's shape; ``max_sequence_length`` as LLaDA names it.
    Fields as annotated class attributes: the style transformers 5 wants, and transformers
    4 sets them from keyword arguments the same way."""

    vocab_size: int = 64
    hidden_size: int = 32
    num_heads: int = 2
    max_sequence_length: int = 512


class StandinLLaDAConfig(StandinConfig):
    model_type = "medal-standin-llada"


class StandinDreamConfig(StandinConfig):
    model_type = "medal-standin-dream"


class _Standin(PreTrainedModel):
    base_model_prefix = "standin"

    def __init__(self, config: StandinConfig):
        super().__init__(config)
        h = config.hidden_size
        self.tok_emb = nn.Embedding(config.vocab_size, h)
        self.pos_emb = nn.Embedding(config.max_sequence_length, h)
        self.layer = nn.TransformerEncoderLayer(h, config.num_heads, 2 * h, dropout=0.0,
                                                batch_first=True)
        self.head = nn.Linear(h, config.vocab_size)
        self.post_init()

    def _init_weights(self, module):
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, std=0.5)  # large: distinct, confident-ish logits
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)

    def _logits(self, input_ids: torch.Tensor) -> torch.Tensor:
        T = input_ids.shape[1]
        x = self.tok_emb(input_ids) + self.pos_emb(torch.arange(T, device=input_ids.device))
        return self.head(self.layer(x))


class StandinLLaDA(_Standin):
    """LLaDA's call shape: logits at position i predict slot i."""
    config_class = StandinLLaDAConfig

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None,
                **kwargs) -> MaskedLMOutput:
        if attention_mask is not None and not bool(attention_mask.bool().all()):
            raise ValueError("the stand-in only supports unpadded batches")
        return MaskedLMOutput(logits=self._logits(input_ids))


class StandinDream(_Standin):
    """Dream's call shape: ``attention_mask`` may be the string "full"; logits at position
    i predict slot i+1 (an autoregressive-style head, as Dream was adapted from Qwen)."""
    config_class = StandinDreamConfig

    def forward(self, input_ids: torch.Tensor, attention_mask=None, position_ids=None,
                **kwargs) -> MaskedLMOutput:
        if isinstance(attention_mask, torch.Tensor):
            raise ValueError("Dream's sampler passes attention_mask='full' for unpadded input")
        return MaskedLMOutput(logits=self._logits(input_ids))


AutoConfig.register(StandinLLaDAConfig.model_type, StandinLLaDAConfig, exist_ok=True)
AutoConfig.register(StandinDreamConfig.model_type, StandinDreamConfig, exist_ok=True)
AutoModel.register(StandinLLaDAConfig, StandinLLaDA, exist_ok=True)
AutoModel.register(StandinDreamConfig, StandinDream, exist_ok=True)


# ---------------------------------------------------------------------- tokenizers

def _word_level_tokenizer(specials: dict[str, str], chat_template: str, **named
                          ) -> PreTrainedTokenizerFast:
    vocab = {"[UNK]": 0}
    for token in list(specials.values()) + WORDS + SYMBOLS:
        vocab.setdefault(token, len(vocab))
    core = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    core.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Whitespace(), pre_tokenizers.Digits(individual_digits=True)])
    core.decoder = decoders.WordPiece(prefix="##")  # joins words with spaces
    tok = PreTrainedTokenizerFast(tokenizer_object=core, unk_token="[UNK]",
                                  additional_special_tokens=list(specials.values()), **named)
    tok.chat_template = chat_template
    return tok


def llada_tokenizer() -> PreTrainedTokenizerFast:
    s = LLADA_SPECIALS
    return _word_level_tokenizer(s, LLADA_CHAT_TEMPLATE, bos_token=s["bos"], eos_token=s["eos"])


def dream_tokenizer() -> PreTrainedTokenizerFast:
    s = DREAM_SPECIALS
    return _word_level_tokenizer(s, DREAM_CHAT_TEMPLATE, eos_token=s["eos"],
                                 mask_token=s["mask"])


# ---------------------------------------------------------------------- checkpoints

def _save(directory: Path, config_cls, model_cls, tokenizer, seed: int,
          max_positions: int) -> Path:
    directory = Path(directory)
    torch.manual_seed(seed)
    config = config_cls(vocab_size=len(tokenizer), max_sequence_length=max_positions)
    model = model_cls(config).eval()
    model.save_pretrained(directory, safe_serialization=True)
    tokenizer.save_pretrained(directory)
    return directory


def save_llada(directory, seed: int = 0, max_positions: int = 512) -> Path:
    """A LLaDA-shaped checkpoint (config, safetensors weights, tokenizer) in ``directory``."""
    return _save(directory, StandinLLaDAConfig, StandinLLaDA, llada_tokenizer(), seed,
                 max_positions)


def save_dream(directory, seed: int = 0, max_positions: int = 512) -> Path:
    """A Dream-shaped checkpoint in ``directory``."""
    return _save(directory, StandinDreamConfig, StandinDream, dream_tokenizer(), seed,
                 max_positions)


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
