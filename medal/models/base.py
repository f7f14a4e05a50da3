"""The one model interface every search and decoder uses (DESIGN section 2).

A model takes a batch of token ids (prompt + answer slots) and returns logits for the
answer slots only (the last ``answer_length`` positions), where row i predicts answer
slot i -- adapters whose network predicts shifted (Dream: output at i-1 predicts slot i)
undo the shift here, so nothing above this layer knows about it. The logits stay on the
model's device; the runner scores them there (softmax, entropy, top-k) and brings back
only the top tokens and per-slot figures.
"""
from __future__ import annotations

from abc import ABC, abstractmethod

import torch

from ..errors import InputError, ModelLoadError


def check_finite(logits: torch.Tensor, name: str) -> torch.Tensor:
    """``logits`` as they come back from the model call, if every one is finite; else a
    :class:`ModelLoadError` naming the dtype, the device and the fix. One reduction on the
    logits' own device and one boolean brought back per batch (a NaN weight, float16
    overflow or a corrupt shard would otherwise decode to garbage, silently).

    The reduction is the logits' sum (in float32 at least): a NaN or an infinity makes
    it NaN or infinite, so a finite sum proves every logit finite, in one pass with no
    temporary (``isfinite(x).all()`` was 30-40x slower on the CPU for a 126k-column
    vocabulary). A sum that overflows from finite logits takes the exact check."""
    wide = torch.float32 if logits.dtype in (torch.float16, torch.bfloat16) else None
    if bool(torch.isfinite(logits.sum(dtype=wide))) or bool(torch.isfinite(logits).all()):
        return logits
    dtype = str(logits.dtype).replace("torch.", "")
    bad = "NaN" if bool(torch.isnan(logits).any()) else "infinite"
    if logits.dtype == torch.float16:
        fix = ("float16 overflows in these models: load with --dtype bfloat16 (GPUs from "
               "Ampere on, and CPUs) or --dtype float32")
    else:
        fix = ("try --dtype float32 (or bfloat16 on a GPU) to rule out the precision; if it "
               "stays, the weights are damaged (a corrupt or partly downloaded shard, or NaN "
               "in the checkpoint): download the checkpoint again")
    raise ModelLoadError(f"{name} returned {bad} logits (dtype {dtype}, device "
                         f"{logits.device}): {fix}")


class DiffusionLM(ABC):
    """A masked diffusion language model, as the engine sees it."""

    #: short name for traces and the UI, e.g. ``builtin:countdown``
    name: str
    #: id of the mask token; every masked answer slot holds it
    mask_id: int
    #: end-of-sequence id; answer text after it is padding (None: no such token)
    eos_id: int | None = None
    #: True for the built-in models (short prompt templates); False for instruct LLMs
    builtin: bool = False
    #: the task this model was trained for, and how many of its prompt templates (the
    #: first N): a run of that task in a later template is refused (None: a model that
    #: reads any prompt, as an instruct LLM does)
    trained_task: str | None = None
    prompt_templates: int | None = None
    #: answer slots to generate when the user does not say
    default_gen_length: int = 64
    #: the most answer slots this model can fill after a prompt (None: no limit known)
    max_gen_length: int | None = None
    device: torch.device = torch.device("cpu")

    @abstractmethod
    def encode_prompt(self, prompt: str) -> list[int]:
        """Prompt text -> ids, with the chat template for instruct models. Raises
        :class:`InputError` if the prompt is empty or too long for the model."""

    @abstractmethod
    def logits(self, ids: torch.Tensor, answer_length: int) -> torch.Tensor:
        """Token ids ``[B, T]`` on :attr:`device` (prompt, then ``answer_length`` answer
        slots) -> floating-point logits ``[B, answer_length, V]`` on :attr:`device`; row i
        predicts answer slot i. Adapters compute the output layer for these rows only where
        the network allows (the prompt's logits are never needed)."""

    @abstractmethod
    def token_text(self, token_id: int) -> str:
        """How one token looks on screen."""

    @abstractmethod
    def decode(self, ids) -> str:
        """Answer ids -> text, stopping at the end-of-sequence token."""

    @property
    def end_ids(self) -> frozenset[int]:
        """Ids that end an answer: text after the first of them is padding. The EOS id,
        plus end-of-turn ids for chat models (LLaDA's <|eot_id|>, Dream's <|im_end|>)."""
        return frozenset() if self.eos_id is None else frozenset({self.eos_id})

    def decode_masked(self, ids, mask: str = "_") -> str:
        """An answer in progress: masked slots shown as ``mask``, stopping at the first
        end token (see :attr:`end_ids`)."""
        out = []
        ends = self.end_ids
        for i in (ids.tolist() if hasattr(ids, "tolist") else map(int, ids)):
            if i in ends:
                break
            out.append(mask if i == self.mask_id else self.token_text(i))
        return "".join(out)

    @property
    def vocab_size(self) -> int:  # pragma: no cover - adapters override when cheap
        raise NotImplementedError

    def describe(self) -> dict:
        """Facts for the trace's run metadata."""
        return {"name": self.name, "mask_id": self.mask_id, "eos_id": self.eos_id,
                "end_ids": sorted(self.end_ids), "device": str(self.device),
                "builtin": self.builtin}

    def check_prompt(self, prompt: str) -> None:
        if not isinstance(prompt, str) or not prompt.strip():
            raise InputError("the prompt is empty; give the question or task to answer")


class BlockCacheMixin:
    """Fast-dLLM's block KV cache (:class:`medal.models.native.BlockKVCache`), opt-in and
    APPROXIMATE, for the models whose network computes a span against cached keys and
    values (``forward_span``): the native LLaDA and Dream code and the built-in models."""

    #: None (off), "prefix" or "dual" (:meth:`set_kv_cache`)
    kv_cache_mode: str | None = None
    kv_cache_refresh = "block"
    #: the cache started last (:meth:`start_kv_cache`): :meth:`logits`' default
    kv_cache = None
    #: token positions the network computed in the last :meth:`logits` call
    last_token_passes: int | None = None

    def set_kv_cache(self, mode: str | None, refresh: str = "block") -> None:
        """Turn the block KV cache on ("prefix" or "dual") or off (None). APPROXIMATE (see
        BlockKVCache); each run starts it afresh for its block length and prompt.
        ``refresh="step"`` recomputes it at every forward (the exactness check; no
        saving)."""
        from .native import KV_CACHE_MODES
        if mode is not None and mode not in KV_CACHE_MODES:
            raise InputError(f"kv cache must be one of {', '.join(KV_CACHE_MODES)} or off, "
                             f"got {mode!r}")
        if mode is not None:
            self._check_kv_cache_applies()
        if refresh not in ("block", "step"):
            raise InputError(f"kv cache refresh must be 'block' or 'step', got {refresh!r}")
        self.kv_cache_mode, self.kv_cache_refresh, self.kv_cache = mode, refresh, None

    def _check_kv_cache_applies(self) -> None:
        """Raise :class:`InputError` where this model cannot take the cache."""

    def start_kv_cache(self, block_length: int, prompt_length: int):
        """A fresh cache for a run (called by :class:`medal.engine.Run`, which keeps it on
        its runner: runs in lock-step each have their own); none when off. It is also the
        model's :attr:`kv_cache`, the one :meth:`logits` uses when given none."""
        from .native import BlockKVCache
        self.kv_cache = (BlockKVCache(self.kv_cache_mode, block_length, prompt_length,
                                      self.kv_cache_refresh) if self.kv_cache_mode else None)
        return self.kv_cache
