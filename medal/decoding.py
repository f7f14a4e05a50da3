"""Step-wise unmasking: MEDAL's phase C and the baselines, one loop with pluggable rules.

Each step: one forward on the current state (cached when the state was seen), a token
proposed for every masked slot, a confidence per slot by the rule, and the most
confident eligible slots unmasked. Block mode (LLaDA's semi-autoregressive decoding):
only slots of the first block that still has masks are eligible. The number unmasked
per step spreads a block's remaining masks evenly over its remaining steps (LLaDA's
``get_num_transfer_tokens``), except the EB sampler, which decides adaptively.

Blocks are counted back from the answer's end (:func:`block_of`): when the block length
divides the answer, from its first slot as LLaDA's ``generate.py`` counts them; else the
first block is the short one. A block-diffusion model (LLaDA2) lays its blocks from the
sequence's start, the prompt included, and the engine lengthens its answer to end a
block (:class:`medal.engine.Run`), so its answer's first block is the rest of the block
the prompt ends in, as in its own samplers.

Token editing (LLaDA2.1, ``cfg.edit_threshold`` > 0; off by default): at every step, a
slot of the current block that was already written before the step (not a task's fixed
slot) is rewritten with the token the step proposes for it when that token differs and
its probability exceeds the threshold (strictly, as LLaDA2.1's samplers compare). Once a
block has no mask left, the decode stays on it: each further forward ("post step")
rewrites what passes the threshold, until one rewrites nothing or ``cfg.max_post_steps``
post steps were run. Each rewrite is a :class:`medal.events.TokenEdit` on the step's
:class:`DecodeStep`; a step that only edits unmasks no slot.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

import numpy as np
import torch

from .events import DecodeStep, TokenEdit
from .runner import Evaluation, ModelRunner
from .scores import slot_scores, top2_margin

RULES = ("low_confidence", "random", "entropy", "margin", "confidence", "eb", "threshold",
         "info_gain")


@dataclass
class DecodeState:
    answer: torch.Tensor
    order: list[int | None]          # step at which each slot was unmasked
    step: int = 0                    # global step counter
    steps_in_block: dict[int, int] = field(default_factory=dict)
    entropy_rows: list[list[float | None]] = field(default_factory=list)  # per step
    #: token editing: the block whose post steps are due (its masks are all written), and
    #: how many it has had; slots never rewritten (a task's fixed slots)
    editing_block: int | None = None
    post_steps: int = 0
    fixed: frozenset = frozenset()


def block_start(length: int, block_length: int) -> int:
    """Where block 0 starts, in slots: 0 when ``block_length`` divides the answer's
    ``length``, else minus the part of it before the answer (blocks are counted back from
    the answer's end, so the first block holds ``length % block_length`` slots)."""
    return -((-length) % block_length)


def block_of(slots, length: int, block_length: int):
    """The block of each slot (an int or an array of them) of an answer of ``length``
    slots: blocks of ``block_length`` slots counted back from the answer's end."""
    return (slots - block_start(length, block_length)) // block_length


def block_slots(block: int, length: int, block_length: int) -> range:
    """The answer slots of ``block``."""
    start = block_start(length, block_length) + block * block_length
    return range(max(start, 0), min(start + block_length, length))


def eligible_slots_array(masked: np.ndarray, block_length: int) -> np.ndarray:
    """:func:`eligible_slots` of B states (a NumPy ``[B, L]`` array) at once: each row's
    masked slots in the first block that still has masks (none for a row with no masks).
    NumPy, for the search's bookkeeping."""
    L = masked.shape[1]
    block = block_of(masked.argmax(1), L, block_length)
    return masked & (block_of(np.arange(L), L, block_length)[None, :] == block[:, None])


def eligible_slots(masked: torch.Tensor, block_length: int) -> tuple[torch.Tensor, int]:
    """Masked slots of the first block that still has masks, and that block's index."""
    idx = torch.nonzero(masked).flatten()
    if len(idx) == 0:
        return torch.zeros_like(masked), -1
    L = len(masked)
    block = block_of(int(idx[0]), L, block_length)
    span = block_slots(block, L, block_length)
    eligible = masked.clone()
    eligible[: span.start] = False
    eligible[span.stop:] = False
    return eligible, block


def eligible_candidates(masked: np.ndarray, block_length: int) -> tuple[np.ndarray, int]:
    """:func:`eligible_slots` of one state as slot indices (a NumPy ``[L]`` bool array in,
    ``torch.nonzero(eligible)``'s slots out, ascending) and the block's index (-1 and no
    slots when nothing is masked). NumPy, for the decode step's bookkeeping."""
    idx = np.flatnonzero(masked)
    if not len(idx):
        return idx, -1
    L = len(masked)
    block = block_of(int(idx[0]), L, block_length)
    return idx[idx < block_slots(block, L, block_length).stop], block


def token_figure(values: np.ndarray, top_tokens: np.ndarray, tokens: np.ndarray) -> np.ndarray:
    """Each slot's figure (``values[i, j]``: a probability or score of its j-th top token)
    for its proposed token ``tokens[i]``, 0 where that token is outside the slot's top-k:
    the per-slot form ``(values * (top_tokens == tokens[:, None])).sum(1)`` as one gather.
    The same value to the bit, for ``values`` >= 0 (probabilities and scores): a slot's
    top-k tokens are distinct, so that sum adds +0.0 to its one hit."""
    hit = top_tokens == tokens[:, None]
    col = hit.argmax(1)
    rows = np.arange(len(tokens))
    return np.where(hit[rows, col], values[rows, col], values.dtype.type(0))


def slot_confidence_array(rule: str, H: np.ndarray, top_tokens: np.ndarray,
                          top_probs: np.ndarray, tokens: np.ndarray | None, p_tok: np.ndarray,
                          gamma: float, scoring: str,
                          generator: torch.Generator | None) -> np.ndarray:
    """:func:`slot_confidence` of one state's NumPy rows (``p_tok``: :func:`token_figure`
    of ``top_probs``), the same values to the bit; a random rule draws from ``generator``
    as it does. ``tokens`` None: each slot's most probable token (``top_tokens[:, 0]``),
    whose figures are the first column's (only that column of the scores is computed:
    a slot's score of a token is its probability times the slot's factor, the same
    product whatever the other columns)."""
    if rule in ("low_confidence", "threshold", "info_gain"):
        return p_tok
    if rule == "random":
        return torch.rand(len(H), generator=generator).numpy()
    if rule in ("entropy", "eb"):
        return -H
    if rule == "margin":
        return top2_margin(top_probs)
    if rule == "confidence":
        if tokens is None:
            return slot_scores(top_probs[:, :2], H, gamma, scoring)[:, 0]
        return token_figure(slot_scores(top_probs, H, gamma, scoring), top_tokens, tokens)
    raise ValueError(rule)


def descending_order(values: np.ndarray, n: int | None = None) -> np.ndarray:
    """``torch.argsort(values, descending=True, stable=True)`` of a float NumPy array
    (its first ``n``, if given): ties keep their order, -inf last. NumPy's stable sort
    of the negated values, unless a value is NaN (torch puts NaN first, NumPy last): then
    torch's. The first one alone is ``np.argmax``: the first of the largest (the first
    NaN, if any), as torch's stable order puts it first."""
    if n == 1 and len(values):
        return np.argmax(values).reshape(1)
    if np.isnan(values).any():
        return torch.argsort(torch.from_numpy(values), descending=True, stable=True).numpy()
    return np.argsort(-values, kind="stable")


def slot_confidence(rule: str, ev: Evaluation, tokens: torch.Tensor, gamma: float,
                    scoring: str, generator: torch.Generator | None) -> torch.Tensor:
    """How confident each slot is under ``rule`` (higher is unmasked first), for a state's
    :class:`Evaluation` and proposed ``tokens``: :func:`slot_confidence_array` (the one
    table of the rules) on its figures, as a tensor (a fork's forced tokens, rollouts)."""
    top_tokens, top_probs, tok = ev.top_tokens.numpy(), ev.top_probs.numpy(), tokens.numpy()
    return torch.from_numpy(np.asarray(slot_confidence_array(
        rule, ev.entropy.numpy(), top_tokens, top_probs, tok,
        token_figure(top_probs, top_tokens, tok), gamma, scoring, generator)))


def defer_tokens(conf: torch.Tensor, tokens: torch.Tensor, late) -> torch.Tensor:
    """``conf`` with -inf where the proposed token is one of ``late`` (LLaDA's
    ``confidence_eos_eot_inf``): those slots come after every other one."""
    late = torch.tensor(sorted(late), dtype=tokens.dtype, device=tokens.device)
    return conf.masked_fill(torch.isin(tokens, late), float("-inf"))


def eb_count(entropies: torch.Tensor, threshold: float) -> int:
    """Entropy-bounded (EB) sampler: the largest k such that, for the k lowest-entropy
    slots, sum(H) - max(H) <= threshold (at least 1)."""
    h = torch.sort(entropies).values
    k = 1
    while k < len(h) and float(h[: k + 1].sum() - h[k]) <= threshold:
        k += 1
    return k


def threshold_pick(priority: torch.Tensor, p_tok: torch.Tensor, candidates: torch.Tensor,
                   threshold: float) -> torch.Tensor:
    """Fast-dLLM's confidence-threshold rule (Wu et al. 2025, "Fast-dLLM", parallel
    decoding): of the eligible ``candidates``, every slot whose proposed token has
    probability ``p_tok`` >= ``threshold``, and always the slot of highest ``priority``
    (at least one a step). A slot whose priority is -inf (an end token deferred by
    ``confidence_eos_eot_inf``) joins only as that one.

    ``>=``, as Fast-dLLM's samplers in dllm (``confidence >= threshold``): a slot whose
    probability equals the threshold is committed, and at threshold 1.0 every slot whose
    probability rounds to 1.0 in float32 is (so threshold 1 is one slot a step only where
    no probability rounds to 1)."""
    best = candidates[torch.argmax(priority[candidates])]
    above = candidates[(p_tok[candidates] >= threshold) & torch.isfinite(priority[candidates])]
    return torch.unique(torch.cat([above, best.view(1)]))


def info_gain_pick(runner: ModelRunner, ev: Evaluation, answer: torch.Tensor,
                   tokens: torch.Tensor, p_tok: torch.Tensor, candidates: torch.Tensor,
                   n: int, cfg, generator: torch.Generator | None
                   ) -> tuple[torch.Tensor, torch.Tensor]:
    """The Info-Gain sampler's choice of ``n`` slots (our own code from the idea of Yang
    et al., "Improving Sampling for Masked Diffusion Models via Information Gain", ICML
    2026, arXiv:2602.18176; read against their public sampler, src/samplers/info_gain.py
    at commit 0ae2da8). Returns (slots, tokens).

    1. Sample N = ``cfg.ig_candidates`` actions: action 0 is the ``n`` most confident
       eligible slots with their proposed tokens; action c > 0 draws fresh tokens (at
       ``cfg.temperature``; the same tokens at 0) and picks its ``n`` slots by
       confidence / ``ig_position_temperature`` + Gumbel noise. Repeated slot sets are
       dropped.
    2. Evaluate the states the actions lead to in ONE batched forward (counted).
    3. Commit the action of highest J = IG - C = -H_next - C, where C is the sum of the
       current entropies of the slots it commits and H_next the mean entropy of the
       masks left after it (their ``info_gain`` variant).

    The lookahead is skipped (the ``n`` most confident slots, as greedy) when every
    eligible slot's proposed token has probability >= ``cfg.threshold`` (their
    "high-confidence bypass"), when no more than ``n`` slots are eligible, or when N = 1
    or the position temperature is 0. The chosen state's forward is cached, so the next
    step's evaluation costs no forward.

    A generator (``pick, tokens = yield from info_gain_pick(...)``): the lookahead's
    forward is announced first (:meth:`ModelRunner.prepare`, lock-step)."""
    order = torch.argsort(p_tok[candidates], descending=True, stable=True)
    greedy = candidates[order[:n]]
    if (len(candidates) <= n or cfg.ig_candidates <= 1 or cfg.ig_position_temperature <= 0
            or bool((p_tok[candidates] >= cfg.threshold).all())):
        return greedy, tokens
    actions, seen = [], set()
    for c in range(cfg.ig_candidates):
        if c == 0:
            slots, toks = greedy, tokens
        else:
            toks = ev.sample_tokens(generator, cfg.temperature)
            hit = ev.top_tokens == toks.unsqueeze(1)
            conf = (ev.top_probs * hit).sum(1)[candidates]
            u = torch.rand(len(candidates), generator=generator)
            gumbel = -torch.log(-torch.log(u + 1e-10) + 1e-10)
            slots = candidates[torch.topk(conf / cfg.ig_position_temperature + gumbel, n).indices]
        key = tuple(sorted(slots.tolist()))
        if key not in seen:
            seen.add(key)
            actions.append((slots, toks))
    states = []
    for slots, toks in actions:
        s = answer.clone()
        s[slots] = toks[slots]
        states.append(s)
    yield from runner.prepare(torch.stack(states))
    nexts = runner.evaluate(states)
    mask_id = runner.model.mask_id
    best, best_j = 0, -math.inf
    for i, ((slots, _), nxt) in enumerate(zip(actions, nexts)):
        rest = states[i] == mask_id
        h_next = float(nxt.entropy[rest].sum()) / (float(rest.sum()) + 1e-10)
        j = -float(ev.entropy[slots].sum()) - h_next
        if j > best_j:
            best, best_j = i, j
    return actions[best]


def sample_pairs(ev: Evaluation, candidates: torch.Tensor, n: int, k1: int, gamma: float,
                 scoring: str, temperature: float, generator: torch.Generator | None
                 ) -> tuple[torch.Tensor, torch.Tensor]:
    """Phase C as Algorithm 2 writes it: draw ``n`` (slot, token) actions, each
    ~ Softmax(s / T) over the candidate slots' top-K1 tokens, one action per slot
    (a drawn slot's other tokens leave the pool). Returns (slots, tokens)."""
    k1 = min(k1, ev.top_probs.shape[1])
    s = slot_scores(ev.top_probs[candidates], ev.entropy[candidates], gamma, scoring)[:, :k1]
    logits = (s / temperature).flatten()
    slots, toks = [], []
    for _ in range(n):
        j = int(torch.multinomial(torch.softmax(logits, 0), 1, generator=generator))
        row = j // k1
        slots.append(int(candidates[row]))
        toks.append(int(ev.top_tokens[candidates[row], j % k1]))
        logits[row * k1:(row + 1) * k1] = -math.inf
    return torch.tensor(slots, dtype=torch.long), torch.tensor(toks, dtype=torch.long)


def decode(runner: ModelRunner, state: DecodeState, cfg, rule: str, phase: str,
           generator: torch.Generator | None = None, token_text=str,
           force: dict[int, list[tuple[int, int]]] | None = None):
    """Unmask until no mask is left, yielding a :class:`DecodeStep` per step.

    ``cfg`` is a resolved GenerationConfig. Tokens are argmax, or sampled at
    ``cfg.temperature``. With rule ``confidence`` (phase C, scored by
    ``cfg.phase_c_scoring``): ``cfg.slot_temperature > 0`` samples the slots in
    proportion to softmax(score / T); ``cfg.pair_temperature > 0`` samples (slot, token)
    pairs in proportion to Softmax(s / T) (the paper's Algorithm 2 with T = 1).

    Each step reports what it cost (forwards run, sequences evaluated, cache hits) and
    every eligible slot's p (of the proposed token), margin, score and entropy.

    ``force`` (a fork, :mod:`medal.fork`): {step: [(slot, token), ...]}: that step
    unmasks the given slots with the given tokens (any masked slot, any token), and, if
    the step unmasks more slots than that, the most confident others as usual. Forcing
    what the step would have done changes nothing (the same draws, the same figures).

    Token editing (``cfg.edit_threshold`` > 0, see the module docstring): each step's
    :class:`DecodeStep` lists its rewrites in ``edits``; once a block has no mask left,
    post steps (``slots`` empty) rewrite it until one rewrites nothing."""
    steps_per_block = cfg.steps // -(-cfg.gen_length // cfg.block_length)
    edit_threshold = float(getattr(cfg, "edit_threshold", 0.0) or 0.0)
    model = runner.model
    mask_id = model.mask_id
    scoring = cfg.phase_c_scoring
    late = model.end_ids if cfg.confidence_eos_eot_inf else None
    parallel = rule == "threshold" or (rule == "confidence" and cfg.threshold_phase_c)
    pair_t = cfg.pair_temperature
    # A step's figures are NumPy rows of the forward's arrays (a NumPy call on them costs
    # about a microsecond, a torch call several): the same values to the bit as the
    # tensors' (token_figure, slot_confidence_array; the transcendental steps of a
    # score stay torch's). The rarer rules' steps hand torch views of them to their
    # tensor code (torch.from_numpy shares the memory).
    while True:
        answer = state.answer
        masked = answer.numpy() == mask_id
        candidates, block = eligible_candidates(masked, cfg.block_length)
        if edit_threshold > 0:
            if state.editing_block is not None and state.editing_block != block:
                # the block being edited has no mask left: its post steps, if any are due
                if state.post_steps < cfg.max_post_steps:
                    state.post_steps += 1
                    edited = yield from _post_step(runner, state, cfg, phase, generator,
                                                   token_text, edit_threshold,
                                                   (force or {}).get(state.step))
                    if edited:
                        continue
                state.editing_block = None
            if block >= 0 and state.editing_block is None:
                state.editing_block, state.post_steps = block, 0
        if block < 0:
            return state
        before = (runner.forwards, runner.sequences, runner.cache_hits)
        yield from runner.prepare(answer[None])   # lock-step: a scheduler may batch it
        batch, b = runner.evaluate_entry(answer)
        _, _, H, top_tokens, top_probs = (a[b] for a in batch.arrays)
        if cfg.temperature > 0:
            tokens = batch.evaluations[b].sample_tokens(generator, cfg.temperature).numpy()
            p_tok = token_figure(top_probs, top_tokens, tokens)
            sampled = tokens
        else:   # the argmax: each slot's first top token, its figures the first column's
            tokens = top_tokens[:, 0].copy()
            p_tok = top_probs[:, 0]
            sampled = None
        proposed, p_proposed = tokens, p_tok
        conf = slot_confidence_array(rule, H, top_tokens, top_probs, sampled, p_tok,
                                     cfg.gamma, scoring, generator)
        # the order slots are unmasked in: confidence, with end tokens last if asked
        priority = conf
        if late is not None:
            priority = defer_tokens(torch.from_numpy(conf), torch.from_numpy(tokens),
                                    late).numpy()
        used = state.steps_in_block.get(block, 0)
        if rule == "eb":
            n = eb_count(torch.from_numpy(H[candidates]), cfg.eb_threshold)
        elif parallel:
            pick = threshold_pick(torch.from_numpy(priority), torch.from_numpy(p_tok),
                                  torch.from_numpy(candidates), cfg.threshold).numpy()
            n = len(pick)
        else:
            remaining_steps = max(1, steps_per_block - used)
            n = math.ceil(len(candidates) / remaining_steps)
        n = min(n, len(candidates))
        if parallel:
            pass  # the threshold rule's pick, above
        elif rule == "info_gain":
            pick, tokens = yield from info_gain_pick(
                runner, batch.evaluations[b], answer, torch.from_numpy(tokens),
                torch.from_numpy(conf), torch.from_numpy(candidates), n, cfg, generator)
            pick, tokens = pick.numpy(), tokens.numpy()
        elif rule == "confidence" and pair_t > 0:
            ev = batch.evaluations[b]
            pick, drawn = sample_pairs(ev, torch.from_numpy(candidates), n, cfg.k1,
                                       cfg.gamma, scoring, pair_t, generator)
            pick = pick.numpy()
            tokens = tokens.copy()
            tokens[pick] = drawn.numpy()
            # the score of each slot's (drawn) token
            conf = token_figure(slot_scores(top_probs, H, cfg.gamma, scoring), top_tokens,
                                tokens)
        elif (rule == "confidence" and cfg.slot_temperature > 0
              and int(np.isfinite(priority[candidates]).sum()) >= n):
            weights = torch.softmax(torch.from_numpy(priority[candidates])
                                    / cfg.slot_temperature, 0)
            pick = candidates[torch.multinomial(weights, n, generator=generator).numpy()]
        else:
            pick = candidates[descending_order(priority[candidates], n)[:n]]
        forced = (force or {}).get(state.step)
        forced_edits = None
        if forced and edit_threshold > 0:   # a written slot forced: a rewrite (an edit)
            forced_edits = [(sl, t) for sl, t in forced if not masked[sl]]
            forced = [(sl, t) for sl, t in forced if masked[sl]]
        if forced:
            pick, tokens, conf = _forced_step(forced, state, mask_id,
                                              batch.evaluations[b], torch.from_numpy(tokens),
                                              torch.from_numpy(conf),
                                              torch.from_numpy(priority),
                                              torch.from_numpy(candidates), n, rule, cfg,
                                              scoring)
            pick, tokens, conf = pick.numpy(), tokens.numpy(), conf.numpy()
        pick = np.sort(pick)
        if tokens is not proposed:
            p_tok = token_figure(top_probs, top_tokens, tokens)
        # as Python lists once (a tensor indexed slot by slot makes a tensor per slot)
        conf_l = conf.tolist()
        p_l, margin_l, score_l, entropy_l = np.stack(
            (p_tok, top2_margin(top_probs), conf, H))[:, candidates].tolist()
        eligible_figures = {"slots": candidates.tolist(), "p": p_l, "margin": margin_l,
                            "score": score_l, "entropy": entropy_l}
        row = [h if m else None for h, m in zip(H.tolist(), masked.tolist())]
        state.entropy_rows.append(row)
        edits = (_edits(state, masked, block, cfg, proposed, p_proposed, edit_threshold,
                        token_text, forced_edits, (top_tokens, top_probs))
                 if edit_threshold > 0 else None)
        state.answer = answer = answer.clone()
        picked_tokens = tokens[pick]
        answer.numpy()[pick] = picked_tokens
        for e in edits or ():
            answer[e.slot] = e.new_token
        picked, picked_tokens = pick.tolist(), picked_tokens.tolist()
        for s in picked:
            state.order[s] = state.step
        state.steps_in_block[block] = used + 1
        yield DecodeStep(phase=phase, step=state.step, block=block, slots=picked,
                         tokens=picked_tokens,
                         token_texts=[token_text(t) for t in picked_tokens],
                         scores=[conf_l[s] for s in picked], entropy=row,
                         answer=model.decode_masked(answer),
                         forwards=runner.forwards - before[0],
                         sequences=runner.sequences - before[1],
                         cache_hits=runner.cache_hits - before[2], eligible=eligible_figures,
                         edits=edits or None)
        state.step += 1


def _edits(state: DecodeState, masked: np.ndarray, block: int, cfg, tokens: np.ndarray,
           p_tok: np.ndarray, threshold: float, token_text, forced=None,
           tops: tuple[np.ndarray, np.ndarray] | None = None) -> list[TokenEdit]:
    """LLaDA2.1's token editing at one step: the slots of ``block`` that were written
    before the step (``masked``: the state before it), not fixed by the task, whose
    proposed token (``tokens``, probability ``p_tok``) differs from the one they hold and
    passes the threshold (p > threshold, strictly, as the published samplers compare).

    ``forced`` (a fork at this step): (slot, token) rewrites made whatever the threshold
    says, in place of the step's own edit of that slot; their confidence is the token's
    probability there (``tops``: the step's top tokens and probabilities; 0 outside
    them). Forcing the rewrite the step made anyway changes nothing."""
    from .errors import InputError
    answer = state.answer.numpy()
    span = block_slots(block, len(answer), cfg.block_length)
    forced = dict(forced or ())
    for s, t in forced.items():
        if s not in span or s in state.fixed:
            raise InputError(f"slot {s} is already written at step {state.step} and outside "
                             f"the block being decoded there (slots {span.start}.."
                             f"{span.stop - 1}): a fork may rewrite (edit) a written slot of "
                             "that block only, or unmask a slot still masked there")
        if t == int(answer[s]):
            raise InputError(f"slot {s} already holds token {t} at step {state.step}: force "
                             "another token to rewrite it")
    edits = []
    for s in span:
        old = int(answer[s])
        if masked[s] or s in state.fixed:
            continue
        if s in forced:
            new = forced[s]
            hit = tops[0][s] == new
            p = float(tops[1][s][hit][0]) if hit.any() else 0.0
        else:
            new, p = int(tokens[s]), float(p_tok[s])
            if new == old or not p > threshold:
                continue
        edits.append(TokenEdit(slot=s, old_token=old, new_token=new, old_text=token_text(old),
                               new_text=token_text(new), confidence=p, threshold=threshold))
    return edits


def _post_step(runner: ModelRunner, state: DecodeState, cfg, phase: str,
               generator: torch.Generator | None, token_text, threshold: float, forced=None):
    """One post step of token editing on ``state.editing_block`` (its masks all written):
    a forward, then its rewrites (``forced``: a fork's, see :func:`_edits`); yields the
    :class:`DecodeStep` (no slot unmasked) and returns whether it rewrote anything."""
    model = runner.model
    answer = state.answer
    masked = answer.numpy() == model.mask_id
    for s, _ in forced or ():
        if masked[s]:
            from .errors import InputError
            raise InputError(f"slot {s} is still masked at step {state.step}, a step that "
                             "only rewrites written slots (its block has no mask left): "
                             "force a written slot of that block, or fork another step")
    before = (runner.forwards, runner.sequences, runner.cache_hits)
    attention = runner.kv_cache
    if getattr(attention, "post", None) is False:
        # a block-diffusion model reads up to the end of the block being decoded: here
        # the written one, not the next (as its sampler's post steps read); the state's
        # usual evaluation reads the next, so this one is not cached (nor batched)
        runner.kv_cache = dataclasses.replace(attention, post=True)
        try:
            batch, b = runner._forward(answer[None]), 0
        finally:
            runner.kv_cache = attention
    else:
        yield from runner.prepare(answer[None])
        batch, b = runner.evaluate_entry(answer)
    _, _, H, top_tokens, top_probs = (a[b] for a in batch.arrays)
    if cfg.temperature > 0:
        tokens = batch.evaluations[b].sample_tokens(generator, cfg.temperature).numpy()
        p_tok = token_figure(top_probs, top_tokens, tokens)
    else:
        tokens, p_tok = top_tokens[:, 0], top_probs[:, 0]
    edits = _edits(state, masked, state.editing_block, cfg, tokens, p_tok, threshold,
                   token_text, forced, (top_tokens, top_probs))
    state.answer = answer = answer.clone()
    for e in edits:
        answer[e.slot] = e.new_token
    row = [h if m else None for h, m in zip(H.tolist(), masked.tolist())]
    yield DecodeStep(phase=phase, step=state.step, block=state.editing_block, slots=[],
                     tokens=[], token_texts=[], scores=[], entropy=row,
                     answer=model.decode_masked(answer),
                     forwards=runner.forwards - before[0],
                     sequences=runner.sequences - before[1],
                     cache_hits=runner.cache_hits - before[2],
                     eligible={"slots": [], "p": [], "margin": [], "score": [],
                               "entropy": []},
                     edits=edits or None)
    state.step += 1
    return bool(edits)


def _forced_step(forced, state, mask_id, ev, tokens, conf, priority, candidates, n, rule,
                 cfg, scoring):
    """A fork's step: the forced (slot, token) pairs, then the step's other slots by the
    rule's order; the figures of the forced tokens (a random rule's draws are kept)."""
    from .errors import InputError
    slots = [s for s, _ in forced]
    for s in slots:
        if int(state.answer[s]) != mask_id:
            raise InputError(f"slot {s} is already unmasked at step {state.step}; force a "
                             "slot that is still masked there")
    if [int(tokens[s]) for s in slots] != [t for _, t in forced]:
        tokens = tokens.clone()
        for s, t in forced:
            tokens[s] = t
        if rule != "random":
            conf = slot_confidence(rule, ev, tokens, cfg.gamma, scoring, None)
    order = torch.argsort(priority[candidates], descending=True, stable=True)
    rest = [int(c) for c in candidates[order] if int(c) not in set(slots)]
    pick = torch.tensor(slots + rest[:max(0, n - len(slots))], dtype=torch.long)
    return pick, tokens, conf


def rollout(runner: ModelRunner, evaluations: list[Evaluation], steps: int, block_length: int,
            gamma: float, scoring: str = "confidence", generator: torch.Generator | None = None,
            temperature: float = 0.0) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """Iterative DLM rollouts of ``steps`` steps from several states at once (MEDAL's
    simulation as an option). Step t unmasks ceil(remaining / steps left) slots of each
    state -- the most confident by the confidence score, earlier blocks first -- and the
    last step fills the rest. Step 0 uses the given evaluations; each later step is ONE
    batched forward over the states that still have masks (counted by the runner).

    Returns each state's completion and, per slot, the entropy it had when the rollout
    filled it (0 where the state was already unmasked)."""
    answers = [ev.answer.clone() for ev in evaluations]
    fill_entropy = [torch.zeros_like(ev.entropy) for ev in evaluations]
    current = list(evaluations)
    mask_id = runner.model.mask_id
    for t in range(steps):
        for b, ev in enumerate(current):
            if ev is None:
                continue
            idx = torch.nonzero(answers[b] == mask_id).flatten()
            if len(idx) == 0:
                continue
            n = len(idx) if t == steps - 1 else math.ceil(len(idx) / (steps - t))
            tokens = ev.sample_tokens(generator, temperature)
            conf = slot_confidence("confidence", ev, tokens, gamma, scoring, None)[idx]
            # earlier blocks first, then the most confident (conf lies in [0, 1])
            key = block_of(idx, len(answers[b]), block_length).float() * 2.0 - conf
            pick = idx[torch.argsort(key, stable=True)[:n]]
            answers[b][pick] = tokens[pick]
            fill_entropy[b][pick] = ev.entropy[pick]
        if t == steps - 1:
            break
        todo = [b for b in range(len(answers)) if bool((answers[b] == mask_id).any())]
        if not todo:
            break
        evs = runner.evaluate([answers[b] for b in todo])
        current = [None] * len(answers)
        for b, e in zip(todo, evs):
            current[b] = e
    return answers, fill_entropy
