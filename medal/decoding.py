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


def decode(runner: ModelRunner, state: DecodeState, cfg, rule: str, phase: str,
           generator: torch.Generator | None = None, token_text=str):
    """Unmask until no mask is left, yielding a :class:`DecodeStep` per step.

    ``cfg`` is a resolved GenerationConfig. Tokens are argmax, or sampled at
    ``cfg.temperature``. With rule ``confidence`` and ``cfg.slot_temperature > 0`` the
    slots are sampled in proportion to softmax(score / slot_temperature)."""
    steps_per_block = cfg.steps // (cfg.gen_length // cfg.block_length)
    mask_id = runner.model.mask_id
    while True:
        masked = state.answer == mask_id
        eligible, block = eligible_slots(masked, cfg.block_length)
        if block < 0:
            return state
        ev = runner.evaluate_one(state.answer)
        tokens = ev.sample_tokens(generator, cfg.temperature)
        conf = slot_confidence(rule, ev, tokens, cfg.gamma, cfg.scoring, generator)
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
        finite = torch.isfinite(priority[candidates])
        if rule == "confidence" and cfg.slot_temperature > 0 and int(finite.sum()) >= n:
            weights = torch.softmax(priority[candidates] / cfg.slot_temperature, 0)
            pick = candidates[torch.multinomial(weights, n, generator=generator)]
        else:
            order = torch.argsort(priority[candidates], descending=True, stable=True)
            pick = candidates[order[:n]]
        pick = pick.sort().values
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
                         answer=runner.model.decode_masked(state.answer))
        state.step += 1
