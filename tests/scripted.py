"""A model whose distributions the tests control and can recompute by hand (a helper
module: tests import it from here, never from conftest)."""
from __future__ import annotations

import math

import torch

from medal.models.base import DiffusionLM


class ScriptedLM(DiffusionLM):
    """A model whose distributions the tests control and can recompute by hand.

    Vocabulary: tokens 0..V-3 are ordinary, V-2 is the mask, V-1 is EOS. The logits of
    answer slot i are ``scale * cos(1.3 i + 0.7 v + 0.9 s)`` where s is the sum of the
    answer's unmasked tokens, so every commitment changes every other slot's
    distribution in a known way. Every call is recorded."""

    name = "scripted"
    builtin = False

    def __init__(self, vocab: int = 6, gen_length: int = 6, prompt_len: int = 2, scale: float = 3.0):
        self.V = vocab
        self.mask_id = vocab - 2
        self.eos_id = vocab - 1
        self.default_gen_length = gen_length
        self.max_gen_length = gen_length
        self.prompt_len = prompt_len
        self.scale = scale
        self.calls: list[torch.Tensor] = []

    @property
    def vocab_size(self):
        return self.V

    def encode_prompt(self, prompt):
        self.check_prompt(prompt)
        return [0] * self.prompt_len

    def expected_logits(self, answer: torch.Tensor) -> torch.Tensor:
        """[L, V] logits for one answer state, computed the plain way."""
        s = sum(int(t) for t in answer if int(t) != self.mask_id)
        rows = []
        for i in range(len(answer)):
            row = [self.scale * math.cos(1.3 * i + 0.7 * v + 0.9 * s) for v in range(self.V)]
            row[self.mask_id] = -1e9
            rows.append(row)
        return torch.tensor(rows)

    def logits(self, ids, answer_length):
        self.calls.append(ids.clone())
        assert ids.shape[1] == self.prompt_len + answer_length
        out = torch.zeros(ids.shape[0], answer_length, self.V)
        for b in range(ids.shape[0]):
            out[b] = self.expected_logits(ids[b, self.prompt_len:])
        return out

    def token_text(self, token_id):
        return {self.mask_id: "<mask>", self.eos_id: "<eos>"}.get(int(token_id), "abcdefgh"[int(token_id)])

    def decode(self, ids):
        out = []
        for t in ids:
            if int(t) == self.eos_id:
                break
            out.append(self.token_text(t))
        return "".join(out)
