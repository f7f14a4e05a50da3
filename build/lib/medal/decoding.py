"""Step-wise unmasking: MEDAL's phase C and the baselines, one loop with pluggable rules.

Each step: one forward on the current state (cached when the state was seen), a token
proposed for every masked slot, a confidence per slot by the rule, and the most
confident eligible slots unmasked. Block mode (LLaDA's semi-autoregressive decoding):
only slots of the first block that still has masks are eligible. The number unmasked
per step spreads a block's remaining masks evenly over its remaining steps (LLaDA's
``get_num_transfer_tokens``), except the EB sampler, which decides adaptively.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import torch

from .events import DecodeStep
from .runner import Evaluation, ModelRunner
from .scores import slot_scores

RULES = ("low_confidence", "random", "entropy", "margin", "confidence", "eb")


@dataclass
class DecodeState:
    answer: torch.Tensor
    order: list[int | None]          # step at which each slot was unmasked
    step: int = 0                    # global step counter
    steps_in_block: dict[int, int] = field(default_factory=dict)
    entropy_rows: list[list[float | None]] = field(default_factory=list)  # per step


def eligible_slots_array(masked: np.ndarray, block_length: int) -> np.ndarray:
    """:func:`eligible_slots` of B states (a NumPy ``[B, L]`` array) at once: each row's
    masked slots in the first block that still has masks (none for a row with no masks).
    NumPy, for the search's bookkeeping."""
    block = masked.argmax(1) // block_length
    return masked & ((np.arange(masked.shape[1]) // block_length)[None, :] == block[:, None])


def eligible_slots(masked: torch.Tensor, block_length: int) -> tuple[torch.Tensor, int]:
    """Masked slots of the first block that still has masks, and that block's index."""
    idx = torch.nonzero(masked).flatten()
    if len(idx) == 0:
        return torch.zeros_like(masked), -1
    block = int(idx[0]) // block_length
    eligible = masked.clone()
    eligible[: block * block_length] = False
    eligible[(block + 1) * block_length:] = False
    return eligible, block


def slot_confidence(rule: str, ev: Evaluation, tokens: torch.Tensor, gamma: float,
                    scoring: str, generator: torch.Generator | None) -> torch.Tensor:
    """How confident each slot is under ``rule`` (higher is unmasked first)."""
    # probability of the proposed token in each slot (0 if outside the top-k)
    hit = ev.top_tokens == tokens.unsqueeze(1)
    p_tok = (ev.top_probs * hit).sum(1)
    if rule == "low_confidence":
        return p_tok
    if rule == "random":
        return torch.rand(len(tokens), generator=generator)
    if rule in ("entropy", "eb"):
        return -ev.entropy
    if rule == "margin":
        return ev.margin
    if rule == "confidence":
        s = slot_scores(ev.top_probs, ev.entropy, gamma, scoring)
        return (s * hit).sum(1)
    raise ValueError(rule)


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
           generator: torch.Generator | None = None, token_text=str):
    """Unmask until no mask is left, yielding a :class:`DecodeStep` per step.

    ``cfg`` is a resolved GenerationConfig. Tokens are argmax, or sampled at
    ``cfg.temperature``. With rule ``confidence`` (phase C, scored by
    ``cfg.phase_c_scoring``): ``cfg.slot_temperature > 0`` samples the slots in
    proportion to softmax(score / T); ``cfg.pair_temperature > 0`` samples (slot, token)
    pairs in proportion to Softmax(s / T) (the paper's Algorithm 2 with T = 1).

    Each step reports what it cost (forwards run, sequences evaluated, cache hits) and
    every eligible slot's p (of the proposed token), margin, score and entropy."""
    steps_per_block = cfg.steps // (cfg.gen_length // cfg.block_length)
    mask_id = runner.model.mask_id
    scoring = getattr(cfg, "phase_c_scoring", cfg.scoring)
    while True:
        masked = state.answer == mask_id
        eligible, block = eligible_slots(masked, cfg.block_length)
        if block < 0:
            return state
        before = (runner.forwards, runner.sequences, runner.cache_hits)
        ev = runner.evaluate_one(state.answer)
        tokens = ev.sample_tokens(generator, cfg.temperature)
        conf = slot_confidence(rule, ev, tokens, cfg.gamma, scoring, generator)
        # the order slots are unmasked in: confidence, with end tokens last if asked
        priority = conf
        if getattr(cfg, "confidence_eos_eot_inf", False):
            priority = defer_tokens(conf, tokens, runner.model.end_ids)
        candidates = torch.nonzero(eligible).flatten()
        used = state.steps_in_block.get(block, 0)
        if rule == "eb":
            n = eb_count(ev.entropy[candidates], cfg.eb_threshold)
        else:
            remaining_steps = max(1, steps_per_block - used)
            n = math.ceil(len(candidates) / remaining_steps)
        n = min(n, len(candidates))
        pair_t = getattr(cfg, "pair_temperature", 0.0)
        if rule == "confidence" and pair_t > 0:
            pick, drawn = sample_pairs(ev, candidates, n, cfg.k1, cfg.gamma, scoring, pair_t,
                                       generator)
            tokens = tokens.clone()
            tokens[pick] = drawn
            s_pair = slot_scores(ev.top_probs, ev.entropy, cfg.gamma, scoring)
            hit = ev.top_tokens == tokens.unsqueeze(1)
            conf = (s_pair * hit).sum(1)   # the score of each slot's (drawn) token
        elif (rule == "confidence" and cfg.slot_temperature > 0
              and int(torch.isfinite(priority[candidates]).sum()) >= n):
            weights = torch.softmax(priority[candidates] / cfg.slot_temperature, 0)
            pick = candidates[torch.multinomial(weights, n, generator=generator)]
        else:
            order = torch.argsort(priority[candidates], descending=True, stable=True)
            pick = candidates[order[:n]]
        pick = pick.sort().values
        hit = ev.top_tokens == tokens.unsqueeze(1)
        p_tok = (ev.top_probs * hit).sum(1)
        margin = ev.margin
        cl = candidates.tolist()
        eligible_figures = {"slots": cl, "p": [float(p_tok[i]) for i in cl],
                            "margin": [float(margin[i]) for i in cl],
                            "score": [float(conf[i]) for i in cl],
                            "entropy": [float(ev.entropy[i]) for i in cl]}
        row = [float(h) if m else None for h, m in zip(ev.entropy.tolist(), masked.tolist())]
        state.entropy_rows.append(row)
        state.answer = state.answer.clone()
        state.answer[pick] = tokens[pick]
        for s in pick.tolist():
            state.order[s] = state.step
        state.steps_in_block[block] = used + 1
        yield DecodeStep(phase=phase, step=state.step, block=block, slots=pick.tolist(),
                         tokens=tokens[pick].tolist(),
                         token_texts=[token_text(t) for t in tokens[pick].tolist()],
                         scores=[float(conf[s]) for s in pick.tolist()], entropy=row,
                         answer=runner.model.decode_masked(state.answer),
                         forwards=runner.forwards - before[0],
                         sequences=runner.sequences - before[1],
                         cache_hits=runner.cache_hits - before[2], eligible=eligible_figures)
        state.step += 1


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
            key = (idx // block_length).float() * 2.0 - conf
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
