"""The tokenizer's side of an adapter: which ids are special (the mask, the end tokens),
the prompt the model reads (the chat template) and the answer text read back.

:class:`TokenizerSide` is a part of :class:`~.adapter.HFDiffusionLM` (the network's side
is there: the forward, the logits, the KV cache); it reads the adapter's ``tokenizer``,
``config``, ``name``, ``family``, ``chat``, ``vocab_size`` and ``max_positions``.
"""
from __future__ import annotations

from ...errors import InputError, ModelLoadError
from .families import MASK_TEXTS


def _placeholder(token_id: int) -> str:
    """What an id without a token shows as."""
    return f"<id {int(token_id)}>"


class TokenizerSide:
    """Special ids, prompt encoding and answer decoding of an adapter (see the module
    docstring). A family's subclass names its special tokens here."""

    #: (token text, official id) of the mask token; None: the tokenizer's mask_token
    mask_token: tuple[str, int] | None = None
    #: (token text, official id) of the end tokens, EOS first
    end_tokens: tuple[tuple[str, int], ...] = ()
    #: with a chat template, ``tokenizer(text)`` adds the tokenizer's own special tokens
    #: on top of the template's (LLaDA's model card does; Dream's README tokenizes inside
    #: ``apply_chat_template``, which adds none)
    chat_adds_special_tokens = False

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

    # ------------------------------------------------------------------ the prompt
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

    # ------------------------------------------------------------------ the answer's text
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
