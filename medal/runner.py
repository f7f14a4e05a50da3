"""Runs the model on answer states, counts forwards, and never evaluates a sequence twice.

An :class:`Evaluation` holds what one forward says about one answer state: each slot's
entropy (from the full distribution) and its top-k tokens and probabilities -- all that
scores, rewards, completions and decoders need. The runner caches evaluations by answer
content, so a state reached twice (a transposition in the tree, the root shared by
several strategies) costs one forward.
"""
from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import dataclass

import torch

from .models.base import DiffusionLM
from .scores import entropy, top2_margin

TOP_K = 64  # tokens kept per slot; sampling draws from these (top-64 sampling)


@dataclass(frozen=True, eq=False)
class Evaluation:
    answer: torch.Tensor      # [L] answer tokens, mask id where masked
    masked: torch.Tensor      # [L] bool
    entropy: torch.Tensor     # [L] H of every slot's predicted distribution
    top_tokens: torch.Tensor  # [L, k] most probable tokens, descending
    top_probs: torch.Tensor   # [L, k] their probabilities

    @property
    def margin(self) -> torch.Tensor:
        return top2_margin(self.top_probs)

    def completion(self, generator: torch.Generator | None = None,
                   temperature: float = 0.0) -> torch.Tensor:
        """Every masked slot filled from this state's prediction: argmax, or sampled at
        ``temperature`` from the top-k. Costs no forward."""
        fill = self.sample_tokens(generator, temperature)
        return torch.where(self.masked, fill, self.answer)

    def sample_tokens(self, generator: torch.Generator | None = None,
                      temperature: float = 0.0) -> torch.Tensor:
        """One token per slot: argmax, or a draw from the top-k at ``temperature``."""
        if temperature <= 0:
            return self.top_tokens[:, 0].clone()
        probs = self.top_probs.clamp_min(1e-12) ** (1.0 / temperature)
        idx = torch.multinomial(probs / probs.sum(-1, keepdim=True), 1, generator=generator)
        return self.top_tokens.gather(1, idx).squeeze(1)


class ModelRunner:
    """Evaluates answer states after a fixed prompt for one run."""

    def __init__(self, model: DiffusionLM, prompt_ids: list[int], gen_length: int,
                 top_k: int = TOP_K, cache_size: int = 4096, suppress=()):
        self.model = model
        #: token ids whose logits are -inf besides the mask's (LLaDA's logits_eos_inf)
        self.suppress = tuple(sorted(int(i) for i in suppress))
        self.prompt = torch.tensor(prompt_ids, dtype=torch.long)
        self.gen_length = gen_length
        self.top_k = top_k
        self.forwards = 0          # batched model calls (NFE)
        self.sequences = 0         # sequences those calls covered
        self.cache_hits = 0
        self.model_seconds = 0.0
        self._cache: OrderedDict[bytes, Evaluation] = OrderedDict()
        self.requested = 0         # evaluations asked for (cached or not)
        self._cache_size = cache_size

    def initial_answer(self) -> torch.Tensor:
        return torch.full((self.gen_length,), self.model.mask_id, dtype=torch.long)

    def evaluate(self, answers: list[torch.Tensor]) -> list[Evaluation]:
        """Evaluations for answer states; the uncached ones in one batched forward."""
        keys = [a.numpy().tobytes() for a in answers]
        todo = {}
        for k, a in zip(keys, answers):
            if k in self._cache:
                self._cache.move_to_end(k)
            elif k not in todo:
                todo[k] = a
        if todo:
            batch = torch.stack(list(todo.values()))
            for k, ev in zip(todo, self._forward(batch)):
                self._cache[k] = ev
                if len(self._cache) > self._cache_size:
                    self._cache.popitem(last=False)
        self.cache_hits += len(answers) - len(todo)
        self.requested += len(answers)
        out = []
        for k, a in zip(keys, answers):
            ev = self._cache.get(k)
            out.append(ev if ev is not None else self._forward(a.unsqueeze(0))[0])
        return out

    def sharing_cache(self) -> "ModelRunner":
        """A runner with its own counters over the same prompt and the same cache: a
        second strategy on one prompt never recomputes a state the first evaluated."""
        other = ModelRunner(self.model, self.prompt.tolist(), self.gen_length, self.top_k,
                            self._cache_size, self.suppress)
        other._cache = self._cache
        return other

    def evaluate_one(self, answer: torch.Tensor) -> Evaluation:
        return self.evaluate([answer])[0]

    def _forward(self, answers: torch.Tensor) -> list[Evaluation]:
        B, L = answers.shape
        ids = torch.cat([self.prompt.expand(B, -1), answers], dim=1)
        t0 = time.perf_counter()
        logits = self.model.logits(ids.to(self.model.device))[:, -L:].float()
        # a slot is never "filled" with the mask token, whatever the model predicts
        logits = logits.index_fill(-1, torch.tensor([self.model.mask_id]), float("-inf"))
        for i in self.suppress:
            logits[..., i] = float("-inf")
        probs = torch.softmax(logits, dim=-1)
        H = entropy(probs)
        k = min(self.top_k, probs.shape[-1])
        top_probs, top_tokens = probs.topk(k, dim=-1)
        H, top_probs, top_tokens = H.cpu(), top_probs.cpu(), top_tokens.cpu()
        self.model_seconds += time.perf_counter() - t0
        self.forwards += 1
        self.sequences += B
        masked = answers == self.model.mask_id
        return [Evaluation(answer=answers[b].clone(), masked=masked[b],
                           entropy=torch.where(masked[b], H[b], torch.zeros_like(H[b])),
                           top_tokens=top_tokens[b], top_probs=top_probs[b])
                for b in range(B)]
