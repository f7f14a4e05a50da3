"""The adapter: a checkpoint as MEDAL's :class:`DiffusionLM`, one subclass per family.

By job: this module is the network's side (the forward and its logits, the KV cache, the
description); :mod:`.tokens` the tokenizer's (special ids, the prompt, the answer's text);
:mod:`.loader` loads a checkpoint into an adapter class (:func:`~.loader.load_adapter`).
"""
from __future__ import annotations

from pathlib import Path

import torch

from ...errors import InputError, ModelLoadError
from ..base import BlockCacheMixin, DiffusionLM, check_finite
from .families import (DREAM_EOS_ID, DREAM_EOS_TOKEN, DREAM_FULL_ATTENTION, DREAM_IM_END_ID,
                       DREAM_IM_END_TOKEN, DREAM_MASK_ID, DREAM_MASK_TOKEN, LLADA_EOS_ID,
                       LLADA_EOS_TOKEN, LLADA_EOT_ID, LLADA_EOT_TOKEN, LLADA_MASK_ID,
                       LLADA_MASK_TOKEN)
from .memory_guard import checkpoint_directory
from .spec import ModelSource
from .tokens import TokenizerSide


class HFDiffusionLM(BlockCacheMixin, TokenizerSide, DiffusionLM):
    """A checkpoint folder as a :class:`DiffusionLM`. Subclasses say how a family is loaded
    (:attr:`auto_class`, :attr:`needs_remote_code`, :attr:`native`), which tokens are
    special (:class:`~.tokens.TokenizerSide`), and how its forward is called
    (:meth:`forward`)."""

    family: str = ""
    auto_class: str = "AutoModel"
    #: the checkpoint's own code is needed to run it through transformers
    needs_remote_code: bool = True
    #: MEDAL has its own model code for the family (medal/models/native.py)
    native: bool = False
    #: parameter count for the memory estimate when the weights are not on disk yet
    typical_parameters: float | None = None
    default_gen_length = 256
    #: the model's outputs are shifted: position i predicts slot i+1 (Dream)
    shifted_logits = False

    def _check_kv_cache_applies(self) -> None:
        if self.implementation != "native" or self.family == "llada-moe":
            raise InputError(f"{self.name}: the KV cache is for MEDAL's native LLaDA and Dream "
                             "code; load with --implementation native, or leave it off")

    def __init__(self, net, tokenizer, source: ModelSource, *, device: torch.device,
                 dtype: torch.dtype, chat_template: bool | None = None,
                 config: dict | None = None, implementation: str = "remote",
                 mask_id: int | None = None, generation_config: dict | None = None):
        self.net = net.eval()
        self.tokenizer = tokenizer
        self.source = source
        self.name = source.name
        self.device = device
        self.dtype = dtype
        self.implementation = implementation
        if config is None:
            to_dict = getattr(getattr(net, "config", None), "to_dict", None)
            config = to_dict() if callable(to_dict) else {}
        self.config = config
        has_template = bool(getattr(tokenizer, "chat_template", None))
        if chat_template and not has_template:
            raise ModelLoadError(f"{source.name}: the tokenizer has no chat template; load "
                                 "without chat_template=True (the prompt is then used as is)")
        self.chat = has_template if chat_template is None else bool(chat_template)
        if implementation == "native":
            self._vocab = int(net.cfg.vocab_size)
        else:
            size = getattr(getattr(net, "config", None), "vocab_size", None)
            self._vocab = int(size) if size else len(tokenizer)
        self.mask_id = self._resolve_mask_id(mask_id, generation_config or {})
        self.eos_id, self._end_ids = self._resolve_end_ids(generation_config or {})
        self.max_positions = self._max_positions()
        if self.max_positions is not None:
            self.max_gen_length = self.max_positions - 1
            self.default_gen_length = min(self.default_gen_length, self.max_gen_length)
        self._texts: dict[int, str] = {}
        self._mask_text = tokenizer.decode([self.mask_id], skip_special_tokens=False).strip()
        #: ids from here up have no token in the tokenizer (Dream: 152064 logits, 151667
        #: tokens): never chosen (their logits are -inf), shown as ``<id N>``
        self.text_vocab = min(len(tokenizer), self.vocab_size)

    # ------------------------------------------------------------------ the interface
    @property
    def vocab_size(self) -> int:
        return self._vocab

    @torch.inference_mode()
    def logits(self, ids: torch.Tensor, answer_length: int, cache=None) -> torch.Tensor:
        """ids ``[B, T]`` -> float32 logits ``[B, answer_length, V]`` of the answer slots,
        on the model's device, row i predicting slot i.

        The output layer runs on the rows that predict answer slots only (the last
        ``answer_length`` positions; Dream: the ``answer_length`` positions before the
        last, its outputs being shifted by one). The prompt's logits -- a
        ``[B, T, V]`` tensor of 126k-152k columns -- are never made where the network's
        output layer is a module :meth:`_answer_rows_only` can see (LLaDA, Dream, masked
        LMs); otherwise they are made and sliced off.

        ``cache``: the run's KV cache (:meth:`start_kv_cache`); default: the one started
        last. :attr:`last_token_passes` is then the positions the network computed."""
        out, passes = self.logits_together(
            [(ids, self.kv_cache if cache is None else cache)], answer_length)
        self.last_token_passes = passes[0]
        return out

    @torch.inference_mode()
    def logits_together(self, parts: list[tuple[torch.Tensor, object]],
                        answer_length: int) -> tuple[torch.Tensor, list[int]]:
        """Several runs' forwards of one sequence length, each ``(ids [B_i, T], its KV
        cache or None)``, as :meth:`logits` of them all (rows in the order given) and the
        token positions the network computed for each: lock-step with the KV cache
        (medal.runner.forward_together; :func:`medal.models.native.cached_logits` groups
        the cached forwards)."""
        parts = [(ids.to(self.device), cache) for ids, cache in parts]
        T = parts[0][0].shape[1]
        B = sum(ids.shape[0] for ids, _ in parts)
        if self.max_positions is not None and T > self.max_positions:
            raise InputError(f"the sequence is {T} tokens (prompt + answer slots); {self.name} "
                             f"reads at most {self.max_positions}. Lower --gen-length or "
                             "shorten the prompt")
        shifted = self.shifted_logits and T > answer_length
        rows = answer_length + 1 if shifted else answer_length
        try:
            if self.implementation == "native" and any(c is not None for _, c in parts):
                from ..native import cached_logits
                out, passes = cached_logits(self.net, parts, rows, self.mask_id,
                                            shifted=shifted)
            else:
                ids = parts[0][0] if len(parts) == 1 else torch.cat([p[0] for p in parts])
                passes = [p[0].numel() for p in parts]
                if self.implementation == "native":
                    out = self.net(ids, rows=rows)
                else:
                    with self._answer_rows_only(rows):
                        out = self.forward(ids)[:, -rows:]
        except torch.cuda.OutOfMemoryError as exc:
            raise ModelLoadError(
                f"out of GPU memory running {self.name} on {B} sequences of {T} "
                "tokens. Lower --k2 (children evaluated per forward) or --gen-length, or use "
                "a GPU with more memory") from exc
        check_finite(out, self.name)
        if shifted:               # slot i <- output at i-1
            out = out[:, :-1]
        elif self.shifted_logits:  # no prompt: slot 0 has no output before it; use its own
            out = torch.cat([out[:, :1], out[:, :-1]], dim=1)
        out = out.float()
        out[..., self.mask_id] = float("-inf")
        out[..., self.text_vocab:] = float("-inf")  # ids without a token: never chosen
        return out, passes

    def _answer_rows_only(self, rows: int):
        """While active, the network's output layer (``get_output_embeddings()``, when it
        is a linear module the forward calls: LLaDA's ``ff_out``, Dream's ``lm_head``,
        BERT's decoder) sees only the last ``rows`` positions of its input."""
        import contextlib
        get = getattr(self.net, "get_output_embeddings", None)
        head = get() if callable(get) else None
        if not isinstance(head, torch.nn.Linear):
            return contextlib.nullcontext()

        def keep_last(module, args):
            return (args[0][:, -rows:],) + tuple(args[1:])

        @contextlib.contextmanager
        def hooked():
            handle = head.register_forward_pre_hook(keep_last)
            try:
                yield
            finally:
                handle.remove()
        return hooked()

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        """The network's raw logits (in its own alignment and dtype)."""
        return self.net(input_ids=ids, attention_mask=torch.ones_like(ids)).logits

    @property
    def checkpoint_dir(self) -> Path | None:
        """The checkpoint's folder (a local one, or the hub cache's snapshot), if known."""
        return checkpoint_directory(self.source)

    def describe(self) -> dict:
        return {**super().describe(), "family": self.family, "source": self.source.target,
                "revision": self.source.revision, "local": self.source.local,
                "end_tokens": {str(i): self.token_text(i) for i in sorted(self._end_ids)},
                "mask_token": self.token_text(self.mask_id),
                "dtype": str(self.dtype).replace("torch.", ""),
                "parameters": sum(p.numel() for p in self.net.parameters()),
                "vocab_size": self.vocab_size, "max_positions": self.max_positions,
                "chat_template": self.chat, "logits_shifted_by_model": self.shifted_logits,
                "implementation": self.implementation,
                "remote_code": self.needs_remote_code and self.implementation == "remote",
                # Fast-dLLM's block cache: answers APPROXIMATE when on (docs/SPEED.md)
                "kv_cache": self.kv_cache_mode}


class LLaDALM(HFDiffusionLM):
    """LLaDA-8B-Instruct / LLaDA-1.5 / LLaDA-8B-Base: per-slot logits, ``model(ids).logits``.
    The prompt is read as LLaDA's model card and generate.py read it:
    ``tokenizer(apply_chat_template(m, add_generation_prompt=True, tokenize=False))``."""
    family = "llada"
    chat_adds_special_tokens = True
    mask_token = (LLADA_MASK_TOKEN, LLADA_MASK_ID)
    end_tokens = ((LLADA_EOS_TOKEN, LLADA_EOS_ID), (LLADA_EOT_TOKEN, LLADA_EOT_ID))
    typical_parameters = 8.0e9
    native = True


class LLaDAMoELM(LLaDALM):
    """LLaDA-MoE (mixture-of-experts MLPs): per-slot logits like LLaDA; MEDAL's native code
    (default) or the checkpoint's own (opt-in). Its mask is named ``<|mask|>``."""
    family = "llada-moe"
    native = True
    typical_parameters = 7.0e9


class DreamLM(HFDiffusionLM):
    """Dream-v0-Instruct-7B: the output at position i-1 predicts slot i; shifted back here."""
    family = "dream"
    mask_token = (DREAM_MASK_TOKEN, DREAM_MASK_ID)
    end_tokens = ((DREAM_EOS_TOKEN, DREAM_EOS_ID), (DREAM_IM_END_TOKEN, DREAM_IM_END_ID))
    typical_parameters = 7.6e9
    shifted_logits = True
    native = True

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.net(input_ids=ids, attention_mask=DREAM_FULL_ATTENTION).logits


class MaskedLM(HFDiffusionLM):
    """Any ``AutoModelForMaskedLM`` checkpoint: a one-step masked diffusion model. The mask
    is the tokenizer's; the answer ends at its EOS or separator token ([SEP] for BERT)."""
    family = "mlm"
    auto_class = "AutoModelForMaskedLM"
    needs_remote_code = False
    default_gen_length = 32

    def _extra_end_ids(self) -> list[int]:
        return [self.tokenizer.eos_token_id, self.tokenizer.sep_token_id]


ADAPTERS = {"llada": LLaDALM, "llada-moe": LLaDAMoELM, "dream": DreamLM, "mlm": MaskedLM}
