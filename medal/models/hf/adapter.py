"""The adapter: a checkpoint as MEDAL's :class:`DiffusionLM`, one subclass per family.

By job: this module is the network's side (the forward and its logits, the KV cache, the
description); :mod:`.tokens` the tokenizer's (special ids, the prompt, the answer's text);
:mod:`.loader` loads a checkpoint into an adapter class (:func:`~.loader.load_adapter`).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

from ...errors import InputError, ModelLoadError
from ..base import BlockCacheMixin, DiffusionLM, check_finite
from .families import (DREAM_EOS_ID, DREAM_EOS_TOKEN, DREAM_FULL_ATTENTION, DREAM_IM_END_ID,
                       DREAM_IM_END_TOKEN, DREAM_MASK_ID, DREAM_MASK_TOKEN, LLADA2_EOS_ID,
                       LLADA2_EOS_TOKEN, LLADA2_EOT_TOKEN, LLADA2_MASK_ID, LLADA2_MASK_TOKEN,
                       LLADA_EOS_ID, LLADA_EOS_TOKEN, LLADA_EOT_ID, LLADA_EOT_TOKEN,
                       LLADA_MASK_ID, LLADA_MASK_TOKEN)
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


@dataclass(frozen=True)
class BlockAttention:
    """A block-diffusion model's attention blocks for one run, handed to every forward as
    a KV cache is (the engine keeps it on the run's runner): the block length, and
    ``post``: the forward reads up to the end of the block before the first one with
    masks -- a post step of token editing, where that block (all written) is the one
    being decoded -- instead of the first one with masks (:meth:`Llada2LM.window_ends`)."""
    block_length: int
    post: bool = False


class Llada2LM(LLaDALM):
    """LLaDA2.0 / LLaDA2.1 (``llada2_moe``): block diffusion with a mixture of experts.

    The answer is written block by block, each block's slots in parallel (a semi-
    autoregressive decode that the network was trained for): blocks of ``block_length``
    positions counted from position 0 of the sequence, the prompt included, and every
    position attends to its own block and the blocks before it (block-causal, per-slot
    logits as LLaDA). The engine lays the answer out as the model's own samplers do: the
    prompt and the answer fill whole blocks (:meth:`medal.engine.Run`: the answer is
    lengthened to the end of its last block), so the answer's first block is the rest of
    the block the prompt ends in and the engine's blocks are the attention's blocks
    (:func:`medal.decoding.block_of`).

    A forward reads what the published samplers' forward reads: the sequence up to the
    end of the block being decoded (the first block with masks; in a post step of token
    editing the block before it), under the block-causal mask -- the same call, so the
    same logits to the bit (tests/networks/test_llada2.py). The blocks after it are not
    read: nothing the model has seen yet says anything about them, and their logits are
    all 0 -- every token equally likely (entropy log V): "not read yet" in the figures
    (their entropies, the completions) and the same in a state and its children, so they
    change no decision. LLaDA2.1's token editing is the decoding option
    ``edit_threshold`` (medal.decoding); the network is the same for both versions."""
    family = "llada2"
    auto_class = "AutoModelForCausalLM"   # remote: auto_map's AutoModel has no output layer
    chat_adds_special_tokens = False   # dllm's samplers tokenize inside the chat template
    mask_token = (LLADA2_MASK_TOKEN, LLADA2_MASK_ID)
    end_tokens = ((LLADA2_EOS_TOKEN, LLADA2_EOS_ID), (LLADA2_EOT_TOKEN, None))
    typical_parameters = 16.3e9        # LLaDA2.0-mini / LLaDA2.1-mini (flash: 100B)
    native = True
    #: the engine lays the answer out in whole blocks of the sequence (see the class doc)
    block_diffusion = True
    #: the published samplers' block length
    default_block_length = 32

    def _check_kv_cache_applies(self) -> None:
        raise InputError(f"{self.name}: the KV cache is for the bidirectional LLaDA and Dream "
                         "code; LLaDA2 attends block-causally, and MEDAL has no cache for it "
                         "yet. Leave --kv-cache off")

    def describe(self) -> dict:
        # the gate reads it: this run's answer ends a block (GenerationConfig.resolved)
        return {**super().describe(), "block_diffusion": True}

    def attention_blocks(self, block_length: int) -> BlockAttention:
        """What a run hands each forward: its block length (:class:`BlockAttention`)."""
        return BlockAttention(int(block_length))

    def window_ends(self, ids: torch.Tensor, answer_length: int,
                    attention: BlockAttention) -> list[int]:
        """Each row's forward reads positions ``[0, end)``: to the end of the first block
        with a masked answer slot (``attention.post``: the block before it; none masked:
        the last block), blocks of the sequence from position 0."""
        T = ids.shape[1]
        P, block = T - answer_length, attention.block_length
        masked = (ids[:, P:] == self.mask_id).cpu()
        first = masked.float().argmax(1).tolist()
        ends = []
        for row, any_masked in enumerate(masked.any(1).tolist()):
            b = (P + first[row]) // block if any_masked else (T - 1) // block
            if attention.post and any_masked:
                b = max(b - 1, P // block)
            ends.append(min((b + 1) * block, T))
        return ends

    @torch.inference_mode()
    def logits_together(self, parts, answer_length):
        """:meth:`HFDiffusionLM.logits_together` for block diffusion: each row's forward
        reads up to the end of its block being decoded (:meth:`window_ends`), the rows of
        one window in one call; the slots after it get logits 0 (see the class doc). The
        token passes are the positions read."""
        parts = [(ids.to(self.device), self._attention(cache)) for ids, cache in parts]
        T = parts[0][0].shape[1]
        B = sum(ids.shape[0] for ids, _ in parts)
        if self.max_positions is not None and T > self.max_positions:
            raise InputError(f"the sequence is {T} tokens (prompt + answer slots); {self.name} "
                             f"reads at most {self.max_positions}. Lower --gen-length or "
                             "shorten the prompt")
        P = T - answer_length
        groups: dict[tuple[int, int], list[tuple[int, int, int]]] = {}
        at = 0
        for i, (ids, attention) in enumerate(parts):
            for r, end in enumerate(self.window_ends(ids, answer_length, attention)):
                groups.setdefault((attention.block_length, end), []).append((i, r, at + r))
            at += ids.shape[0]
        out = torch.zeros((B, answer_length, self.vocab_size), dtype=torch.float32,
                          device=self.device)
        passes = [0] * len(parts)
        from ..native import block_causal_bias
        for (block, end), members in groups.items():
            ids = torch.stack([parts[i][0][r, :end] for i, r, _ in members])
            bias = block_causal_bias(end, block, self.dtype, self.device)
            rows = end - P
            try:
                if self.implementation == "native":
                    logits = self.net(ids, attention_bias=bias, rows=rows)
                else:
                    with self._answer_rows_only(rows):
                        logits = self.forward(ids, bias)[:, -rows:]
            except torch.cuda.OutOfMemoryError as exc:
                raise ModelLoadError(
                    f"out of GPU memory running {self.name} on {len(members)} sequences of "
                    f"{end} tokens. Lower --k2 (children evaluated per forward) or "
                    "--gen-length, or use a GPU with more memory") from exc
            check_finite(logits, self.name)
            out[[row for _, _, row in members], :rows] = logits.float()
            for i, _, _ in members:
                passes[i] += end
        out[..., self.mask_id] = float("-inf")
        out[..., self.text_vocab:] = float("-inf")  # ids without a token: never chosen
        return out, passes

    def _attention(self, cache) -> BlockAttention:
        if cache is None:
            return BlockAttention(self.default_block_length)
        if not isinstance(cache, BlockAttention):
            raise InputError(f"{self.name} takes no KV cache")
        return cache

    def forward(self, ids: torch.Tensor, attention: torch.Tensor | None = None) -> torch.Tensor:
        """The checkpoint's own code (remote): ``LLaDA2MoeModelLM`` with the block-causal
        mask and positions its samplers pass."""
        if attention is None:
            from ..native import block_causal_bias
            attention = block_causal_bias(ids.shape[1], self.default_block_length,
                                          self.dtype, ids.device)
        positions = torch.arange(ids.shape[1], device=ids.device)[None]
        return self.net(input_ids=ids, attention_mask=attention, position_ids=positions).logits


ADAPTERS = {"llada": LLaDALM, "llada-moe": LLaDAMoELM, "dream": DreamLM, "mlm": MaskedLM,
            "llada2": Llada2LM}
