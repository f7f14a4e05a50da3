"""The adapter: a checkpoint as MEDAL's :class:`DiffusionLM`, one subclass per family."""
from __future__ import annotations

from pathlib import Path

import torch

from ...errors import InputError, ModelLoadError
from ...memory import is_out_of_memory
from ..base import DiffusionLM, check_finite
from .checkpoint import check_hub_reachable, check_local_files, download_checkpoint, read_json
from .families import (DREAM_EOS_ID, DREAM_EOS_TOKEN, DREAM_FULL_ATTENTION, DREAM_IM_END_ID,
                       DREAM_IM_END_TOKEN, DREAM_MASK_ID, DREAM_MASK_TOKEN, LLADA_EOS_ID,
                       LLADA_EOS_TOKEN, LLADA_EOT_ID, LLADA_EOT_TOKEN, LLADA_MASK_ID,
                       LLADA_MASK_TOKEN, MASK_TEXTS)
from .memory_guard import check_memory, checkpoint_directory, out_of_memory
from .remote import _dtype_keyword, from_pretrained, remote_code_opted_in, remote_code_refusal
from .spec import ModelSource, choose_device, choose_dtype

def _placeholder(token_id: int) -> str:
    """What an id without a token shows as."""
    return f"<id {int(token_id)}>"


class HFDiffusionLM(DiffusionLM):
    """A checkpoint folder as a :class:`DiffusionLM`. Subclasses say how a family is loaded
    (:attr:`auto_class`, :attr:`needs_remote_code`, :attr:`native`), which tokens are
    special, and how its forward is called (:meth:`forward`)."""

    family: str = ""
    auto_class: str = "AutoModel"
    #: the checkpoint's own code is needed to run it through transformers
    needs_remote_code: bool = True
    #: MEDAL has its own model code for the family (medal/models/native.py)
    native: bool = False
    #: (token text, official id) of the mask token; None: the tokenizer's mask_token
    mask_token: tuple[str, int] | None = None
    #: (token text, official id) of the end tokens, EOS first
    end_tokens: tuple[tuple[str, int], ...] = ()
    #: parameter count for the memory estimate when the weights are not on disk yet
    typical_parameters: float | None = None
    default_gen_length = 256
    #: the model's outputs are shifted: position i predicts slot i+1 (Dream)
    shifted_logits = False
    #: with a chat template, ``tokenizer(text)`` adds the tokenizer's own special tokens
    #: on top of the template's (LLaDA's model card does; Dream's README tokenizes inside
    #: ``apply_chat_template``, which adds none)
    chat_adds_special_tokens = False

    #: Fast-dLLM's block KV cache (medal.models.native.BlockKVCache), opt-in and
    #: approximate: None (off), "prefix" or "dual" (:meth:`set_kv_cache`)
    kv_cache_mode: str | None = None
    kv_cache_refresh = "block"
    kv_cache = None
    last_token_passes: int | None = None

    def set_kv_cache(self, mode: str | None, refresh: str = "block") -> None:
        """Turn Fast-dLLM's block KV cache on ("prefix" or "dual") or off (None), for the
        native LLaDA and Dream code. APPROXIMATE (see BlockKVCache); each run starts it
        afresh for its block length and prompt. ``refresh="step"`` recomputes it at every
        forward (the exactness check; no saving)."""
        from ..native import KV_CACHE_MODES
        if mode is not None and mode not in KV_CACHE_MODES:
            raise InputError(f"kv cache must be one of {', '.join(KV_CACHE_MODES)} or off, "
                             f"got {mode!r}")
        if mode is not None and (self.implementation != "native" or self.family == "llada-moe"):
            raise InputError(f"{self.name}: the KV cache is for MEDAL's native LLaDA and Dream "
                             "code; load with --implementation native, or leave it off")
        if refresh not in ("block", "step"):
            raise InputError(f"kv cache refresh must be 'block' or 'step', got {refresh!r}")
        self.kv_cache_mode, self.kv_cache_refresh, self.kv_cache = mode, refresh, None

    def start_kv_cache(self, block_length: int, prompt_length: int) -> None:
        """A fresh cache for a run (called by :class:`medal.engine.Run`); none when off."""
        from ..native import BlockKVCache
        self.kv_cache = (BlockKVCache(self.kv_cache_mode, block_length, prompt_length,
                                      self.kv_cache_refresh) if self.kv_cache_mode else None)

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

    # ------------------------------------------------------------------ loading
    @classmethod
    def load(cls, source: ModelSource, *, trust_remote_code: bool | None = None,
             device: str | None = "auto", dtype: str | None = "auto",
             chat_template: bool | None = None, implementation: str = "remote",
             config: dict | None = None, mask_id: int | None = None,
             memory_check: bool = True) -> "HFDiffusionLM":
        native = implementation == "native"
        if native and not cls.native:
            raise ModelLoadError(f"{source.name}: MEDAL has no native code for the "
                                 f"{cls.family} family; use --implementation remote "
                                 "(with --trust-remote-code where the checkpoint ships code)")
        needs_code = cls.needs_remote_code and not native
        if needs_code and not remote_code_opted_in(trust_remote_code):
            raise remote_code_refusal(source)  # before touching any file
        if source.local:
            check_local_files(Path(source.target), source.name)
        else:
            check_hub_reachable(source)
        dev = choose_device(device)
        dt = choose_dtype(dtype, dev)
        if native and dt == torch.float16 and (dtype or "auto") == "auto":
            dt = torch.float32  # a GPU without bfloat16: float16 would overflow (below)
        if native and dt == torch.float16:
            raise ModelLoadError(
                f"{source.name}: float16 is not safe for {cls.family}: its activations "
                "overflow float16's range (65504) and the logits turn to NaN/inf. Use "
                "--dtype bfloat16 (GPUs from Ampere on, and CPUs) or --dtype float32")
        if native and source.local:
            from ..native import weight_files
            weight_files(Path(source.target))  # safetensors only: say so before anything else
        if memory_check:
            check_memory(source, cls.typical_parameters, dev, dt)
        if native:
            from ..native import load_native
            from ..tokenizers import load_tokenizer
            directory = Path(source.target) if source.local else download_checkpoint(source)
            config = config if config is not None else read_json(directory / "config.json")
            tokenizer = load_tokenizer(directory)
            try:
                net = load_native(directory, cls.family, dev, dt, config)
            except Exception as exc:   # MemoryError, torch's (CUDA's too), safetensors' ENOMEM
                if not is_out_of_memory(exc):
                    raise
                raise out_of_memory(source.name, exc, dev) from exc
            generation = read_json(directory / "generation_config.json", missing_ok=True)
            return cls(net, tokenizer, source, device=dev, dtype=dt,
                       chat_template=chat_template, config=config, implementation="native",
                       mask_id=mask_id, generation_config=generation)
        import transformers
        tokenizer = from_pretrained(transformers.AutoTokenizer, source,
                                    needs_remote_code=needs_code,
                                    trust_remote_code=trust_remote_code)
        # safetensors only, from a folder or the hub: never a pickled pytorch_model.bin
        kwargs = {_dtype_keyword(): dt, "use_safetensors": True}
        if dev.type == "cuda":
            index = dev.index if dev.index is not None else torch.cuda.current_device()
            kwargs["device_map"] = {"": index}  # straight to the GPU, no CPU copy
        net = from_pretrained(getattr(transformers, cls.auto_class), source,
                              needs_remote_code=needs_code,
                              trust_remote_code=trust_remote_code, **kwargs)
        if dev.type != "cuda":
            try:
                net = net.to(dev)
            except Exception as exc:
                if not is_out_of_memory(exc):
                    raise
                raise out_of_memory(source.name, exc, dev) from exc
        generation = getattr(net, "generation_config", None)
        generation = generation.to_dict() if hasattr(generation, "to_dict") else None
        return cls(net, tokenizer, source, device=dev, dtype=dt, chat_template=chat_template,
                   config=config, implementation="remote", mask_id=mask_id,
                   generation_config=generation)

    # ------------------------------------------------------------------ special ids
    def _text_id(self, text: str) -> int | None:
        """The id of special token ``text`` in this tokenizer; None if it has no such token."""
        tok = self.tokenizer
        tid = tok.convert_tokens_to_ids(text)
        if tid is None or (tid == tok.unk_token_id and text != tok.unk_token):
            return None
        return int(tid)

    def _token_id(self, text: str, official: int | None) -> int | None:
        """The id of special token ``text``; the official id if the tokenizer lacks it."""
        tid = self._text_id(text)
        return official if tid is None else tid

    def _resolve_mask_id(self, override: int | None, generation: dict) -> int:
        """The mask id, in this order: ``override`` (--mask-id); the ids config.json,
        generation_config.json and the tokenizer declare (they must agree); the family's
        mask texts in the tokenizer; the family's official id."""
        where = f"{self.name}"
        if override is not None:
            mask = int(override)
        else:
            declared = {}
            for what, value in (("config.json mask_token_id", self.config.get("mask_token_id")),
                                ("generation_config.json mask_token_id",
                                 generation.get("mask_token_id")),
                                ("the tokenizer's mask_token",
                                 self.tokenizer.mask_token_id
                                 if getattr(self.tokenizer, "mask_token", None) else None)):
                if isinstance(value, int) and not isinstance(value, bool):
                    declared[what] = value
            if len(set(declared.values())) > 1:
                said = ", ".join(f"{w} = {v}" for w, v in declared.items())
                raise ModelLoadError(f"{where}: the checkpoint declares different mask ids "
                                     f"({said}). Fix the checkpoint's files, or say which is "
                                     "right with --mask-id N")
            mask = next(iter(declared.values()), None)
            if mask is None and self.mask_token is not None:
                texts = MASK_TEXTS.get(self.family.split("-")[0], (self.mask_token[0],))
                mask = next((i for i in map(self._text_id, texts) if i is not None),
                            self.mask_token[1])
            if mask is None:
                raise ModelLoadError(f"{where}: the tokenizer has no mask token, so this is "
                                     "not a masked language model; use a checkpoint trained "
                                     "with [MASK] (e.g. a BERT or RoBERTa masked LM), or give "
                                     "the mask id with --mask-id N")
        if not 0 <= mask < self.vocab_size:
            raise ModelLoadError(f"{where}: mask id {mask} is outside the model's "
                                 f"vocabulary of {self.vocab_size} tokens"
                                 + (" (from --mask-id)" if override is not None else ""))
        return mask

    def _resolve_end_ids(self, generation: dict) -> tuple[int | None, frozenset[int]]:
        """EOS first: config.json's eos_token_id, else the tokenizer's, else the family's
        EOS text, else its official id. The answer ends at any of: those, the ids
        generation_config.json declares, the family's end-of-turn token."""
        def ids(value):
            values = value if isinstance(value, (list, tuple)) else [value]
            return [int(v) for v in values if isinstance(v, int) and not isinstance(v, bool)]
        declared = ids(self.config.get("eos_token_id"))
        tok_eos = ids(getattr(self.tokenizer, "eos_token_id", None))
        texts = [self._token_id(text, official) for text, official in self.end_tokens]
        ends = declared + tok_eos + texts + ids(generation.get("eos_token_id"))
        ends += self._extra_end_ids()
        ends = [e for e in dict.fromkeys(ends) if e is not None and 0 <= e < self.vocab_size]
        return (ends[0] if ends else None), frozenset(ends)

    def _extra_end_ids(self) -> list[int]:
        return []

    def _max_positions(self) -> int | None:
        for key in ("max_sequence_length", "max_position_embeddings", "n_positions",
                    "max_seq_len"):
            value = self.config.get(key)
            if isinstance(value, int) and value > 0:
                return value
        return None

    # ------------------------------------------------------------------ the interface
    @property
    def vocab_size(self) -> int:
        return self._vocab

    @property
    def end_ids(self) -> frozenset[int]:
        return self._end_ids

    def format_prompt(self, prompt: str) -> str:
        """The text the model reads: the chat template around ``prompt`` for instruct
        models (ending with the assistant's header), the prompt itself otherwise."""
        if not self.chat:
            return prompt
        return self.tokenizer.apply_chat_template(
            [{"role": "user", "content": prompt}], add_generation_prompt=True, tokenize=False)

    def encode_prompt(self, prompt: str, gen_length: int | None = None) -> list[int]:
        """Prompt -> ids (chat template for instruct models). With ``gen_length``, also
        checks that prompt + answer fit in the model's positions; without it, that at
        least one answer slot fits (:meth:`logits` checks every forward)."""
        self.check_prompt(prompt)
        # a plain prompt gets the tokenizer's special tokens ([CLS] ... [SEP] for BERT); a
        # chat template writes its own, and the tokenizer's are added on top only where
        # the model's own code does so (chat_adds_special_tokens)
        ids = self.tokenizer(self.format_prompt(prompt),
                             add_special_tokens=not self.chat or self.chat_adds_special_tokens
                             )["input_ids"]
        self.check_length(len(ids), gen_length or 1, gen_length is not None)
        return list(ids)

    def check_length(self, prompt_tokens: int, gen_length: int, explicit: bool = True) -> None:
        limit = self.max_positions
        if limit is None or prompt_tokens + gen_length <= limit:
            return
        if not explicit or prompt_tokens >= limit:
            raise InputError(f"the prompt is {prompt_tokens} tokens (with the chat template); "
                             f"{self.name} reads at most {limit} positions, which leaves no "
                             "room for an answer. Shorten the prompt, or turn the "
                             "decomposition off (--no-decompose)")
        raise InputError(f"the prompt ({prompt_tokens} tokens) plus gen_length {gen_length} "
                         f"is {prompt_tokens + gen_length} positions; {self.name} reads at "
                         f"most {limit}. Use --gen-length {limit - prompt_tokens} or less, or "
                         "shorten the prompt")

    @torch.inference_mode()
    def logits(self, ids: torch.Tensor, answer_length: int) -> torch.Tensor:
        """ids ``[B, T]`` -> float32 logits ``[B, answer_length, V]`` of the answer slots,
        on the model's device, row i predicting slot i.

        The output layer runs on the rows that predict answer slots only (the last
        ``answer_length`` positions; Dream: the ``answer_length`` positions before the
        last, its outputs being shifted by one). The prompt's logits -- a
        ``[B, T, V]`` tensor of 126k-152k columns -- are never made where the network's
        output layer is a module :meth:`_answer_rows_only` can see (LLaDA, Dream, masked
        LMs); otherwise they are made and sliced off."""
        ids = ids.to(self.device)
        T = ids.shape[1]
        if self.max_positions is not None and T > self.max_positions:
            raise InputError(f"the sequence is {T} tokens (prompt + answer slots); {self.name} "
                             f"reads at most {self.max_positions}. Lower --gen-length or "
                             "shorten the prompt")
        shifted = self.shifted_logits and T > answer_length
        rows = answer_length + 1 if shifted else answer_length
        try:
            self.last_token_passes = ids.numel()
            if self.implementation == "native" and self.kv_cache is not None:
                out, self.last_token_passes = self.kv_cache.logits(
                    self.net, ids, rows, self.mask_id, shifted=shifted)
            elif self.implementation == "native":
                out = self.net(ids, rows=rows)
            else:
                with self._answer_rows_only(rows):
                    out = self.forward(ids)[:, -rows:]
        except torch.cuda.OutOfMemoryError as exc:
            raise ModelLoadError(
                f"out of GPU memory running {self.name} on {ids.shape[0]} sequences of {T} "
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
        return out

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

    def has_text(self, token_id: int) -> bool:
        """False for ids the model can output but the tokenizer has no token for."""
        return 0 <= int(token_id) < self.text_vocab

    def token_text(self, token_id: int) -> str:
        token_id = int(token_id)
        text = self._texts.get(token_id)
        if text is None:
            text = ""
            if self.has_text(token_id):
                text = self.tokenizer.decode([token_id], skip_special_tokens=False)
                if not text:
                    text = self.tokenizer.convert_ids_to_tokens(token_id) or ""
            text = text or _placeholder(token_id)
            self._texts[token_id] = text
        return text

    def _decode_runs(self, ids: list[int], skip_special_tokens: bool) -> str:
        """Runs of ids with text decoded as wholes (multi-byte characters and word pieces
        join); an id without text shown as ``<id N>`` between them."""
        parts, run = [], []
        for i in ids:
            if self.has_text(i):
                run.append(i)
                continue
            if run:
                parts.append(self.tokenizer.decode(run, skip_special_tokens=skip_special_tokens))
                run = []
            parts.append(_placeholder(i))
        if run:
            parts.append(self.tokenizer.decode(run, skip_special_tokens=skip_special_tokens))
        return "".join(parts)

    def answer_until_end(self, ids) -> list[int]:
        """The answer ids before the first end token (the rest is padding)."""
        out = []
        for i in (int(t) for t in ids):
            if i in self._end_ids:
                break
            out.append(i)
        return out

    def decode(self, ids) -> str:
        """Answer ids -> text, stopping at the first end token; special tokens dropped."""
        return self._decode_runs(self.answer_until_end(ids), skip_special_tokens=True).strip()

    def decode_masked(self, ids, mask: str = "_") -> str:
        """An answer in progress, decoded as a whole (so multi-byte characters and word
        pieces join properly), masked slots shown as ``mask``, stopping at an end token."""
        text = self._decode_runs(self.answer_until_end(ids), skip_special_tokens=False)
        return text.replace(self._mask_text, mask) if self._mask_text else text

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
                "remote_code": self.needs_remote_code and self.implementation == "remote"}


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
