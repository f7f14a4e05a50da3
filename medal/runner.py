"""Runs the model on answer states, counts forwards, and never evaluates a sequence twice.

An :class:`Evaluation` holds what one forward says about one answer state: each slot's
entropy (from the full distribution) and its top-k tokens and probabilities -- all that
scores, rewards, completions and decoders need. The runner caches evaluations by answer
content, so a state reached twice (a transposition in the tree, the root shared by
several strategies) costs one forward.

Lock-step (several problems' runs advancing together, :func:`medal.bench.lock_step`): a
runner whose :attr:`ModelRunner.defer` is set announces each forward before it runs it
(:meth:`ModelRunner.prepare` yields a :class:`ForwardRequest`); a scheduler may run the
requests of several runners in one model call and hand each its rows of the logits. The
evaluation that follows is the same code either way: it scores its own rows (as its own
forward would) and counts one forward of its sequences. A request nobody ran is run by its
runner, as without lock-step.
"""
from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np
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
        # softmax(log p / T) in log space: p ** (1 / T) underflows to all zeros for a
        # small T (0.01 with p < 1e-4...), and multinomial refuses a zero row
        logits = self.top_probs.float().clamp_min(1e-12).log() / temperature
        probs = torch.softmax(logits, dim=-1)
        idx = torch.multinomial(probs, 1, generator=generator)
        return self.top_tokens.gather(1, idx).squeeze(1)


class EvaluationBatch:
    """Evaluations of B answer states, with their figures stacked ``[B, ...]``, so the
    per-state work of an expansion (action sets, rewards, completions) is one pass over
    the batch. ``evaluations[b]``'s tensors are rows of the stacked ones; the
    :class:`Evaluation` objects are made only when first read (a search reads few of
    them), and :attr:`arrays` gives NumPy views of the same memory for the bookkeeping
    (a NumPy call on these small arrays costs a fraction of a torch call)."""

    __slots__ = ("answer", "masked", "entropy", "top_tokens", "top_probs", "_evaluations",
                 "_arrays")

    def __init__(self, evaluations: list[Evaluation] | None, answer: torch.Tensor,
                 masked: torch.Tensor, entropy: torch.Tensor, top_tokens: torch.Tensor,
                 top_probs: torch.Tensor):
        self.answer = answer            # [B, L]
        self.masked = masked            # [B, L] bool
        self.entropy = entropy          # [B, L] (0 where unmasked)
        self.top_tokens = top_tokens    # [B, L, k]
        self.top_probs = top_probs      # [B, L, k]
        self._evaluations = evaluations
        self._arrays = None

    @property
    def evaluations(self) -> list[Evaluation]:
        if self._evaluations is None:
            self._evaluations = [
                Evaluation(answer=a, masked=m, entropy=h, top_tokens=t, top_probs=p)
                for a, m, h, t, p in zip(self.answer.unbind(0), self.masked.unbind(0),
                                         self.entropy.unbind(0), self.top_tokens.unbind(0),
                                         self.top_probs.unbind(0))]
        return self._evaluations

    @property
    def arrays(self) -> tuple:
        """(answer, masked, entropy, top_tokens, top_probs) as NumPy views (CPU tensors)."""
        if self._arrays is None:
            self._arrays = tuple(t.numpy() for t in (self.answer, self.masked, self.entropy,
                                                     self.top_tokens, self.top_probs))
        return self._arrays

    @classmethod
    def stack(cls, evaluations: list[Evaluation]) -> "EvaluationBatch":
        return cls(list(evaluations), *(torch.stack([getattr(ev, name) for ev in evaluations])
                                        for name in ("answer", "masked", "entropy",
                                                     "top_tokens", "top_probs")))

    def __len__(self) -> int:
        return self.answer.shape[0]


#: largest chunk of logits scored at once (elements): bounds the float32 copies that
#: softmax and entropy make, whatever the batch, answer length and vocabulary
SCORE_CHUNK = 1 << 24


def ties_by_token(p: torch.Tensor, t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """A top-k (``p`` descending, tokens ``t``) with equal probabilities in the order of
    their token ids, lowest first: the first token is then ``argmax``'s (the first of
    the largest, the choice of LLaDA's and LLaDA2's published samplers), where ``topk``
    leaves the order of ties to its kernel. bfloat16 logits tie often (LLaDA2's
    157,184 logits in 8 bits of mantissa). A no-op, one comparison, without ties."""
    if not bool((p[..., 1:] == p[..., :-1]).any()):
        return p, t
    by_token = torch.argsort(t, dim=-1)
    p, t = p.gather(-1, by_token), t.gather(-1, by_token)
    order = torch.argsort(p, dim=-1, descending=True, stable=True)
    return p.gather(-1, order), t.gather(-1, order)


def score_logits(logits: torch.Tensor, mask_id: int, top_k: int, suppress=()
                 ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Answer logits ``[B, L, V]`` -> (entropy ``[B, L]``, top probabilities and top
    tokens ``[B, L, k]``), all computed on the logits' own device.

    The mask token is never a prediction (its logit is set to -inf first), nor are the
    ids in ``suppress`` (LLaDA's ``logits_eos_inf``). Rows are
    scored in chunks of at most :data:`SCORE_CHUNK` elements, so the float32 softmax of
    a 152k-token vocabulary never exists for the whole batch at once; each row's figures
    are the same whatever the chunking."""
    B, L, V = logits.shape  # float32 logits are modified in place (the masking)
    k = min(top_k, V)
    flat = logits.reshape(B * L, V)
    rows = max(1, SCORE_CHUNK // max(V, 1))
    H, P, T = [], [], []
    with torch.inference_mode():  # no autograd bookkeeping; in-place on inference logits
        for start in range(0, B * L, rows):
            x = flat[start:start + rows]
            x = x.float()  # a copy for a lower precision; else the logits themselves
            x[:, mask_id] = float("-inf")   # in place, on the device: no index tensor to move
            for i in suppress:
                x[:, i] = float("-inf")
            probs = torch.softmax(x, dim=-1)
            del x
            H.append(entropy(probs))
            p, t = ties_by_token(*probs.topk(k, dim=-1))
            P.append(p)
            T.append(t)
            del probs
        out = [parts[0] if len(parts) == 1 else torch.cat(parts) for parts in (H, P, T)]
    # the small results as normal tensors (an inference tensor refuses later in-place use)
    out = [t.clone() if t.is_inference() else t for t in out]
    return out[0].view(B, L), out[1].view(B, L, k), out[2].view(B, L, k)


class ForwardRequest:
    """A forward a runner is about to run (lock-step, :meth:`ModelRunner.prepare`): the
    token ids ``[B, T]`` (the prompt, then the answers, on the CPU) of which the model gives
    the last ``answer_length`` positions' logits. A scheduler that runs it sets
    :attr:`logits` (``[B, answer_length, V]`` on the model's device, this request's rows of
    a larger call), :attr:`seconds` (its share of that call's time) and, where the model
    reports fewer (a KV cache), :attr:`token_passes`. Where the call's logits were scored
    together (on an accelerator, :func:`forward_together`), :attr:`scored` holds this
    request's rows of the figures (entropy, top probabilities, top tokens; on the CPU) and
    :attr:`scoring_seconds` its share of that scoring; else None and 0."""

    __slots__ = ("runner", "ids", "answer_length", "logits", "seconds", "token_passes",
                 "scored", "scoring_seconds")
    kind = "forward_request"   # not an event: :meth:`medal.engine.Run.step` hands it back

    def __init__(self, runner: "ModelRunner", ids: torch.Tensor, answer_length: int):
        self.runner = runner
        self.ids = ids
        self.answer_length = answer_length
        self.logits: torch.Tensor | None = None
        self.seconds = 0.0
        self.token_passes = ids.numel()  # what the network processed for it (medal.cost)
        self.scored: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None = None
        self.scoring_seconds = 0.0

    @property
    def model(self) -> DiffusionLM:
        return self.runner.model

    def __len__(self) -> int:
        return self.ids.shape[0]


class ModelRunner:
    """Evaluates answer states after a fixed prompt for one run."""

    #: lock-step: :meth:`prepare` announces each forward as a :class:`ForwardRequest`
    defer = False

    def __init__(self, model: DiffusionLM, prompt_ids: list[int], gen_length: int,
                 top_k: int = TOP_K, cache_size: int = 4096,
                 fixed: dict[int, int] | None = None, suppress=()):
        self.model = model
        #: token ids whose logits are -inf besides the mask's (LLaDA's logits_eos_inf)
        self.suppress = tuple(sorted(int(i) for i in suppress))
        self.fixed = dict(fixed or {})  # slot -> token id that starts filled (task format)
        self.prompt = torch.tensor(prompt_ids, dtype=torch.long)
        self.gen_length = gen_length
        self.top_k = top_k
        self.forwards = 0          # batched model calls (NFE)
        self.sequences = 0         # sequences those calls covered
        self.token_passes = 0      # token positions the network processed (medal.cost)
        self.cache_hits = 0
        self.model_seconds = 0.0   # the model call: forward, scoring, copy of the figures
        self.scoring_seconds = 0.0  # of which: softmax, entropy, top-k and the copy back
        self._cache: OrderedDict[bytes, Evaluation] = OrderedDict()
        self.requested = 0         # evaluations asked for (cached or not)
        self._cache_size = cache_size
        self._pending: ForwardRequest | None = None   # run by a scheduler, not yet used
        #: this run's KV cache (native LLaDA / Dream, opt-in: medal.engine.Run sets it)
        self.kv_cache = None

    def prepare(self, answers: torch.Tensor):
        """Lock-step only (:attr:`defer`): yields the forward that evaluating ``answers``
        (``[B, L]``) next will run -- its states not in the cache, each once, in order of
        first appearance, as :meth:`evaluate` and :meth:`evaluate_batch` run them -- as a
        :class:`ForwardRequest`; if a scheduler ran it, that evaluation uses its logits.
        Yields nothing when not deferring or when every state is cached. Call it as
        ``yield from runner.prepare(answers)`` right before the evaluation."""
        if not self.defer:
            return
        cache = self._cache
        todo: dict[bytes, int] = {}
        for i, row in enumerate(answers.numpy()):
            k = row.tobytes()
            if k not in cache and k not in todo:
                todo[k] = i
        if not todo:
            return
        rows = answers if len(todo) == len(answers) else answers[list(todo.values())]
        request = ForwardRequest(self, torch.cat([self.prompt.expand(len(rows), -1), rows],
                                                 dim=1), answers.shape[1])
        yield request
        if request.logits is not None:
            self._pending = request

    def initial_answer(self) -> torch.Tensor:
        """All masks, except the task's fixed slots (e.g. Sudoku's row separators)."""
        answer = torch.full((self.gen_length,), self.model.mask_id, dtype=torch.long)
        for slot, token in self.fixed.items():
            answer[slot] = token
        return answer

    def evaluate(self, answers: list[torch.Tensor] | torch.Tensor) -> list[Evaluation]:
        """Evaluations for answer states (a list of ``[L]`` tensors or one ``[B, L]``
        tensor); the uncached ones in one batched forward."""
        if not isinstance(answers, torch.Tensor):
            answers = torch.stack(list(answers))
        keys = [row.tobytes() for row in answers.numpy()]
        self._forward_uncached(answers, keys)
        out = []
        for k, a in zip(keys, answers):
            entry = self._cache.get(k)   # None only when the cache is smaller than the batch
            out.append(self._entry(entry) if entry is not None
                       else self._forward(a.unsqueeze(0)).evaluations[0])
        return out

    def _forward_uncached(self, answers: torch.Tensor, keys: list[bytes]) -> None:
        """The states of ``answers`` not in the cache (each once, in order of first
        appearance) in one forward, then cached; the cached ones made the most recent;
        the counts of requests and cache hits updated."""
        cache = self._cache
        todo: dict[bytes, int] = {}
        for i, k in enumerate(keys):
            if k in cache:
                cache.move_to_end(k)
            elif k not in todo:
                todo[k] = i
        if todo:
            self._store(list(todo), self._forward(answers[list(todo.values())]))
        self.cache_hits += len(keys) - len(todo)
        self.requested += len(keys)

    def _store(self, keys: list[bytes], batch: EvaluationBatch) -> None:
        """Cache a forward's states as (batch, row): their Evaluation objects are made
        only if a state is asked for again."""
        cache = self._cache
        for b, k in enumerate(keys):
            cache[k] = (batch, b)
            if len(cache) > self._cache_size:
                cache.popitem(last=False)

    @staticmethod
    def _entry(entry) -> Evaluation:
        batch, b = entry
        return batch.evaluations[b]

    def evaluate_batch(self, answers: torch.Tensor) -> EvaluationBatch:
        """:meth:`evaluate` of a ``[B, L]`` tensor, the figures also stacked. When no state
        is cached or repeated (an expansion's children, as a rule) the stacked figures are
        the forward's own tensors, and the counts are as :meth:`evaluate` would make them."""
        keys = [row.tobytes() for row in answers.numpy()]
        cache = self._cache
        if len(set(keys)) < len(keys) or any(k in cache for k in keys):
            if self._cache_size < 2 * len(keys):  # a cache too small to hold them all
                return EvaluationBatch.stack(self.evaluate(answers))
            return self._evaluate_mixed(answers, keys)
        batch = self._forward(answers)
        self._store(keys, batch)
        self.requested += len(keys)
        return batch

    def _evaluate_mixed(self, answers: torch.Tensor, keys: list[bytes]) -> EvaluationBatch:
        """:meth:`evaluate_batch` when some states are cached or repeated: the others in
        one forward (:meth:`_forward_uncached`, as :meth:`evaluate` runs them), then
        every state's figures gathered from the batch that holds them, as NumPy rows (no
        Evaluation objects made). The cached states were just made the most recent, and
        the cache holds at least twice the batch, so none is evicted on the way."""
        self._forward_uncached(answers, keys)
        entries = [self._cache[k] for k in keys]
        return EvaluationBatch(None, *(torch.from_numpy(np.stack([b.arrays[f][r]
                                                                  for b, r in entries]))
                                       for f in range(5)))

    def sharing_cache(self) -> "ModelRunner":
        """A runner with its own counters over the same prompt and the same cache: a
        second strategy on one prompt never recomputes a state the first evaluated."""
        other = ModelRunner(self.model, self.prompt.tolist(), self.gen_length, self.top_k,
                            self._cache_size, self.fixed, self.suppress)
        other._cache = self._cache
        other.kv_cache = self.kv_cache
        return other

    def evaluate_one(self, answer: torch.Tensor) -> Evaluation:
        return self.evaluate([answer])[0]

    def evaluate_entry(self, answer: torch.Tensor) -> tuple[EvaluationBatch, int]:
        """:meth:`evaluate_one` of an ``[L]`` answer as (batch, row): where its figures lie,
        with the same forward, cache and counts, but no :class:`Evaluation` made (a decode
        step reads the batch's NumPy :attr:`~EvaluationBatch.arrays`; ``batch.evaluations
        [row]`` is the evaluation :meth:`evaluate_one` returns)."""
        key = answer.numpy().tobytes()
        cache = self._cache
        if key in cache:
            cache.move_to_end(key)
            self.cache_hits += 1
        else:
            self._store([key], self._forward(answer[None]))
        self.requested += 1
        entry = cache.get(key)
        if entry is None:   # a cache too small to hold it (as evaluate: its own forward)
            return self._forward(answer[None]), 0
        return entry

    def _forward(self, answers: torch.Tensor) -> EvaluationBatch:
        """One forward of the model on ``answers`` (CPU, ``[B, L]``). Everything the model
        returns stays on its device: only the top-k tokens and probabilities and the
        per-slot entropies come back to the CPU."""
        B, L = answers.shape
        device = self.model.device
        pending, self._pending = self._pending, None
        P = self.prompt.shape[0]
        if (pending is not None and pending.ids.shape == (B, P + L)
                and torch.equal(pending.ids[:, P:], answers)):
            ids = pending.ids   # the request's: this prompt, then these answers
        else:
            ids = torch.cat([self.prompt.expand(B, -1), answers], dim=1)
            pending = None
        answers = ids[:, P:]  # our own copy: the caller may change theirs
        t0 = time.perf_counter()
        passes = scored = None
        if pending is not None:
            # lock-step: a scheduler ran these ids with other runners' (their rows of its
            # call are these ids' logits); its share of that call's time is ours
            logits, passes, scored = pending.logits, pending.token_passes, pending.scored
            t0 -= pending.seconds
        else:
            logits = (self.model.logits(ids.to(device), L) if self.kv_cache is None else
                      self.model.logits(ids.to(device), L, cache=self.kv_cache))
            if device.type == "cuda":
                torch.cuda.synchronize(device)
        t1 = time.perf_counter()
        if scored is not None:       # scored with the other runners' rows (an accelerator)
            H, top_probs, top_tokens = scored
            t1 -= pending.scoring_seconds
        else:
            H, top_probs, top_tokens = score_logits(logits, self.model.mask_id, self.top_k,
                                                      self.suppress)
            H, top_probs, top_tokens = H.cpu(), top_probs.cpu(), top_tokens.cpu()
        del logits
        t2 = time.perf_counter()
        self.model_seconds += t2 - t0
        self.scoring_seconds += t2 - t1
        self.forwards += 1
        self.sequences += B
        # a model with a KV cache reports the positions it computed (else: all of them)
        self.token_passes += int(passes or getattr(self.model, "last_token_passes", None)
                                 or ids.numel())
        masked = answers.numpy() == self.model.mask_id
        H = H.contiguous()
        H.numpy()[~masked] = 0.0   # in place (H is this call's own tensor)
        return EvaluationBatch(None, answers, torch.from_numpy(masked), H, top_tokens,
                               top_probs)


#: the most sequences one lock-step model call holds (a larger set of requests is split
#: into several calls, whole requests each): bounds the memory of the joint logits
MAX_JOINT_SEQUENCES = 256


def forward_together(requests: list[ForwardRequest],
                     max_sequences: int = MAX_JOINT_SEQUENCES,
                     joint_scoring: bool | None = None) -> int:
    """Run several runners' :class:`ForwardRequest` s in as few model calls as they allow
    (lock-step): the requests on one model whose sequences have the same length (prompt +
    answer) go in one call -- in the order given, at most ``max_sequences`` sequences a
    call -- and each gets its rows of the logits and its share of the call's time (by
    sequences). Requests of different lengths are never padded into one call: a padded
    row would need an attention mask the models do not take, and its logits could differ
    from the unpadded row's. Returns the number of model calls made.

    Each row of the result is that sequence's logits alone only if the network computes
    every row of a batch independently and rounds it the same whatever the batch (true of
    the built-in models and the scripted test model on the CPU, checked by
    tests/algorithm/test_lock_step.py; not promised by GPU matrix kernels, which pick their
    algorithm by shape).

    ``joint_scoring`` (None: on where the model is not on the CPU): the call's logits are
    scored once, for every request (softmax, entropy, top-k: :func:`score_logits`), and
    come back to the CPU in one copy, instead of each runner scoring its rows with its
    own kernels and copies -- on a GPU those launches and waits, not the arithmetic, are
    a small model's cost. Only requests that score alike (mask id, top-k, suppressed ids)
    share. Off on the CPU: there elementwise kernels round a tensor's tail with their
    scalar formula, so a row's figures could depend on its place in the joint batch
    (``scores.margin_factor`` keeps rows apart for the same reason); on a GPU each row's softmax,
    entropy and top-k are computed by the same per-row kernels whatever the rows around it
    -- not a documented promise, so the GPU check compares the records with one at a
    time's (``same_records_as_first``)."""
    groups: dict[tuple, list[ForwardRequest]] = {}
    for r in requests:
        groups.setdefault((id(r.model), r.ids.shape[1], r.answer_length), []).append(r)
    calls = 0
    for group in groups.values():
        chunk: list[ForwardRequest] = []
        size = 0
        for i, r in enumerate(group):
            chunk.append(r)
            size += len(r)
            if i + 1 == len(group) or size + len(group[i + 1]) > max_sequences:
                _forward_chunk(chunk, size, joint_scoring)
                calls += 1
                chunk, size = [], 0
    return calls


def _forward_chunk(chunk: list[ForwardRequest], size: int,
                   joint_scoring: bool | None = None) -> None:
    model = chunk[0].model
    device = model.device
    if joint_scoring is None:
        joint_scoring = device.type != "cpu"
    caches = [r.runner.kv_cache for r in chunk]
    t0 = time.perf_counter()
    if any(c is not None for c in caches):
        # each run through its own KV cache; the model groups what can share a call
        logits, passes = model.logits_together([(r.ids, c) for r, c in zip(chunk, caches)],
                                               chunk[0].answer_length)
    else:
        ids = chunk[0].ids if len(chunk) == 1 else torch.cat([r.ids for r in chunk])
        logits = model.logits(ids.to(device), chunk[0].answer_length)
        # a model's own (default) cache reports what it computed: the call's, one run's
        last = getattr(model, "last_token_passes", None)
        passes = [last] if len(chunk) == 1 and last else None
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    seconds = time.perf_counter() - t0
    start = 0
    for i, r in enumerate(chunk):
        r.logits = logits[start:start + len(r)]
        r.seconds = seconds * len(r) / size
        if passes is not None:   # what the network computed for this run (its cache)
            r.token_passes = int(passes[i])
        start += len(r)
    if joint_scoring and len(chunk) > 1:
        _score_together(chunk, logits, size)


def _score_together(chunk: list[ForwardRequest], logits: torch.Tensor, size: int) -> None:
    """Score a joint call's logits once for the requests that score alike (see
    :func:`forward_together`) and hand each its rows of the figures, on the CPU."""
    kinds: dict[tuple, list[int]] = {}
    for i, r in enumerate(chunk):
        kinds.setdefault((r.runner.top_k, r.runner.suppress), []).append(i)
    starts = [0]
    for r in chunk:
        starts.append(starts[-1] + len(r))
    for (top_k, suppress), members in kinds.items():
        t0 = time.perf_counter()
        if len(members) == len(chunk):
            part = logits
        else:
            part = torch.cat([logits[starts[i]:starts[i + 1]] for i in members])
        H, P, T = score_logits(part, chunk[0].model.mask_id, top_k, suppress)
        H, P, T = H.cpu(), P.cpu(), T.cpu()
        rows = sum(len(chunk[i]) for i in members)
        seconds = time.perf_counter() - t0
        at = 0
        for i in members:
            r, n = chunk[i], len(chunk[i])
            r.scored = (H[at:at + n], P[at:at + n], T[at:at + n])
            r.scoring_seconds = seconds * n / rows
            r.seconds += r.scoring_seconds
            at += n
