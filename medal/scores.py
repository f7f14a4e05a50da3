"""The paper's formulas, each under its own name (paper section 3.1).

    p = softmax(l[i]);  H_i = -sum_v p(v) log(p(v) + eps)                  entropy
    margin_i = p_(1) - p_(2)                                                 top2_margin
    s[i, v] = p(v) * exp(-H_i) * sigmoid(gamma * margin_i)                   confidence_scores
    r_IG = (sum_{j in M} H_parent(j) - sum_{j in M minus i} H_child(j))
           / sum_{j in M} H_parent(j)                                        information_gain
"""
from __future__ import annotations

import importlib
import math
from dataclasses import dataclass


class _OnFirstUse:
    """numpy and torch, imported when a formula first needs them: the viewer and ``medal
    diff`` use :func:`entropy_drop` from here and never pay for torch (~2 s to import)."""

    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, attr):
        module = importlib.import_module(self._name)
        globals()["np" if self._name == "numpy" else self._name] = module
        return getattr(module, attr)


np = _OnFirstUse("numpy")
torch = _OnFirstUse("torch")

EPS = 1e-8  # paper's epsilon in the entropy


def entropy(probs: torch.Tensor) -> torch.Tensor:
    """H = -sum_v p(v) log(p(v) + eps) over the last dimension."""
    return -(probs * torch.log(probs + EPS)).sum(-1)


def top2_margin(top_probs: torch.Tensor) -> torch.Tensor:
    """p_(1) - p_(2) from probabilities sorted in descending order on the last dim (a
    tensor or a NumPy array)."""
    return top_probs[..., 0] - top_probs[..., 1]


def entropy_penalty(H: torch.Tensor) -> torch.Tensor:
    """phi_ent = exp(-H) in (0, 1]. torch's CPU exp computes a tensor's tail with its
    vector formula too, so each element rounds the same wherever it lies: a row of a
    batch as that row alone (unlike the sigmoid, see :func:`margin_factor`)."""
    return torch.exp(-H)


#: rows kept apart in memory: the ``[:, :L]`` view of a ``[rows, L + pad]`` buffer, which
#: no elementwise kernel merges into one long row (see margin_factor)
_ROW_PAD = 1


def margin_factor(margin: torch.Tensor, gamma: float) -> torch.Tensor:
    """phi_mar = sigmoid(gamma * margin), each row (last dimension) rounded exactly as
    ``torch.sigmoid(gamma * row)`` of that row alone.

    The CPU sigmoid takes whole vectors and the tail of a contiguous tensor with its
    scalar formula, which rounds differently: on a contiguous ``[B, L]`` tensor the rows
    would run together and an element's last bit would depend on its place in the batch
    (measured: 2 to 3 of 7 states differ by one float32 step, up to 2.4e-7 relative).
    Written into rows kept apart in memory, each row is one kernel call of length L, as
    alone: a search's K2 children, scored together, get the scores each would get alone,
    as phase C and a fork score one state."""
    shape = margin.shape
    if len(shape) < 2 or margin.numel() == shape[-1]:   # one row (or none): as it is
        return torch.sigmoid(gamma * margin)
    L = shape[-1]
    rows = margin if len(shape) == 2 else margin.reshape(-1, L)
    out = margin.new_empty((rows.shape[0], L + _ROW_PAD))[:, :L]
    torch.mul(rows, gamma, out=out)
    out.sigmoid_()
    return out if len(shape) == 2 else out.view(shape)


def confidence_scores(probs: torch.Tensor, H: torch.Tensor, margin: torch.Tensor,
                      gamma: float) -> torch.Tensor:
    """Confidence-adjusted score s[i, v] = p(v) * exp(-H_i) * sigmoid(gamma * margin_i).

    ``probs`` is ``[..., slots, tokens]`` (all or the top-k tokens of each slot); ``H`` and
    ``margin`` are ``[..., slots]``. Each row of a batch (``[B, slots, ...]``) is scored
    exactly as that row alone (:func:`margin_factor`). Tensors, or NumPy arrays (the
    search's bookkeeping): the factor is torch's either way, and the product with ``probs``,
    exactly rounded, is the same in both."""
    if isinstance(probs, torch.Tensor):
        return probs * (entropy_penalty(H) * margin_factor(margin, gamma)).unsqueeze(-1)
    H, margin = torch.from_numpy(H), torch.from_numpy(margin)   # NumPy arrays: the same
    return probs * (entropy_penalty(H) * margin_factor(margin, gamma)).numpy()[..., None]


def margin_only_scores(probs: torch.Tensor, margin: torch.Tensor) -> torch.Tensor:
    """The paper's "w/o Cf. + t2" ablation: slots ranked by the top-2 margin alone, tokens
    within a slot by probability: s[i, v] = margin_i * p(v) / p_(1). Tensors or NumPy
    arrays (the same float32 rounding)."""
    return probs / probs[..., :1].clip(min=EPS) * margin[..., None]


SCORINGS = ("confidence", "margin")


@dataclass(frozen=True)
class Action:
    """Unmask ``slot`` (0-based, within the answer) with ``token``.

    Carries the figures its score was computed from, so a reader can recompute it."""
    slot: int
    token: int
    p: float
    entropy: float
    margin: float
    score: float

    def to_json(self, token_text: str | None = None) -> dict:
        d = {"slot": self.slot, "token": self.token, "p": self.p, "entropy": self.entropy,
             "margin": self.margin, "score": self.score}
        if token_text is not None:
            d["token_text"] = token_text
        return d


def slot_scores(top_probs: torch.Tensor, H: torch.Tensor, gamma: float,
                scoring: str = "confidence") -> torch.Tensor:
    """Scores of every recorded token of every slot, ``[slots, k]``."""
    margin = top2_margin(top_probs)
    if scoring == "margin":
        return margin_only_scores(top_probs, margin)
    return confidence_scores(top_probs, H, margin, gamma)


def action_set(top_tokens: torch.Tensor, top_probs: torch.Tensor, H: torch.Tensor,
               eligible: torch.Tensor, k1: int, k2: int, gamma: float,
               scoring: str = "confidence", late_tokens=()) -> list[Action]:
    """Confidence score filtering: the top-K1 tokens of each eligible slot by score,
    pooled, then the top-K2 actions overall (ties: lower slot, then higher p first).
    Actions whose token is in ``late_tokens`` (LLaDA's ``confidence_eos_eot_inf``: the end
    tokens) rank after every other eligible action; their recorded score is unchanged.

    ``top_tokens``/``top_probs``: ``[slots, k]`` sorted by probability (k >= K1; since s is
    p times a per-slot factor, the top-K1 by s are the top-K1 by p)."""
    return action_sets(top_tokens.unsqueeze(0), top_probs.unsqueeze(0), H.unsqueeze(0),
                       eligible.unsqueeze(0), k1, k2, gamma, scoring, late_tokens)[0]


def action_sets(top_tokens: torch.Tensor, top_probs: torch.Tensor, H: torch.Tensor,
                eligible: torch.Tensor, k1: int, k2: int, gamma: float,
                scoring: str = "confidence", late_tokens=()) -> list[list[Action]]:
    """:func:`action_set` of B states at once (``[B, slots, k]``, ``[B, slots]``): the
    Action lists of :func:`batch_action_sets`."""
    sets = batch_action_sets(top_tokens, top_probs, H, eligible, k1, k2, gamma, scoring,
                             late_tokens)
    return [sets.actions(b) for b in range(len(sets))]


class ActionSets:
    """The action sets of B states, made in one pass (:func:`batch_action_sets`).

    ``pairs[b, i]`` is state b's i-th action as (slot, token) (a NumPy ``[B, K2, 2]``
    array); state b has ``counts[b]`` actions. The :class:`Action` objects of a state,
    with the figures their scores came from, are made only when asked for
    (:meth:`actions`): a search expands one of the K2 children it makes per iteration, and
    reads the others' action sets as objects only when a trace records them."""

    __slots__ = ("pairs", "counts", "_picks", "_sources", "_made")

    def __init__(self, pairs: np.ndarray | None, counts: list[int],
                 picks: np.ndarray | None = None, sources: tuple = ()):
        self.pairs, self.counts = pairs, counts
        self._picks = picks        # [B, n] indices into each state's (slot, rank) scores
        self._sources = sources    # (scores [B, L*K1], probs [B, L*K1], H [B, L], margin [B, L])
        self._made: dict[int, list[Action]] = {}   # state b's Action objects, once made

    def __len__(self) -> int:
        return len(self.counts)

    def actions(self, b: int) -> list[Action]:
        """State b's actions as :class:`Action` objects (made once, when first asked for)."""
        made = self._made.get(b)
        if made is None:
            made = self._made[b] = self._make(b)
        return made

    def _make(self, b: int) -> list[Action]:
        n = self.counts[b]
        if not n:
            return []
        picks = self._picks[b, :n]
        pairs = self.pairs[b, :n]
        s, probs, H, margin = (t[b] for t in self._sources)
        slots = pairs[:, 0]
        figures = np.stack([s[picks], probs[picks], H[slots], margin[slots]], -1)
        return [Action(slot=slot, token=token, p=p, entropy=h, margin=m, score=sc)
                for (slot, token), (sc, p, h, m) in zip(pairs.tolist(), figures.tolist())]

    def slots_tokens(self, b: int) -> tuple[np.ndarray, np.ndarray]:
        """State b's action slots and tokens, ``[counts[b]]`` each (views)."""
        if self.pairs is None:   # no state has an action
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
        rows = self.pairs[b, :self.counts[b]]
        return rows[:, 0], rows[:, 1]


def _array(x) -> np.ndarray:
    """A CPU tensor's NumPy view (or the array itself)."""
    return x.detach().cpu().numpy() if isinstance(x, torch.Tensor) else np.asarray(x)


def batch_action_sets(top_tokens, top_probs, H, eligible, k1: int, k2: int, gamma: float,
                      scoring: str = "confidence", late_tokens=(),
                      counts: list[int] | None = None,
                      min_prob: float = 0.0) -> ActionSets:
    """:func:`action_set` of B states at once (``[B, slots, k]``, ``[B, slots]``; CPU
    tensors or NumPy arrays), in one pass: the K2 children of an expansion get their
    action sets together. ``counts``: each state's number of eligible slots, when the
    caller knows it.

    ``min_prob`` (BEYOND the paper, 0 = off): of the top-K2 actions, those whose token
    probability is below it are left out, in score order, so a state keeps fewer than K2
    actions when the rest are implausible (at least one stays). See
    ``GenerationConfig.min_action_prob``.

    Every figure equals the one-state computation to the bit: the scores are
    :func:`confidence_scores` (or :func:`margin_only_scores`) of the whole batch, whose
    rows each round as that state alone (:func:`margin_factor`); the margin is an exactly
    rounded float32 subtraction, and a stable sort of each row orders exactly as the
    stable sort of that state alone. The selection runs in NumPy because a NumPy call on
    these small arrays costs a fraction of a torch call (this is the search's
    bookkeeping)."""
    top_tokens, top_probs, H, eligible = (_array(t) for t in (top_tokens, top_probs, H,
                                                              eligible))
    B = top_probs.shape[0]
    k1 = min(k1, top_probs.shape[-1])
    if counts is None:
        counts = eligible.sum(-1).tolist()
    if B == 0 or k1 < 1 or not any(counts):
        return ActionSets(None, [0] * B)
    margin = top2_margin(top_probs)                                   # [B, L]
    probs = top_probs[..., :k1]
    if scoring == "margin":
        s = margin_only_scores(probs, margin)
    else:   # each state's rows scored as alone (see margin_factor)
        s = confidence_scores(probs, H, margin, gamma)
    s = np.where(eligible[..., None], s, np.float32(-np.inf)).reshape(B, -1)
    # stable sort on the slot-major flattening keeps ties in (slot, probability rank) order
    order = np.argsort(-s, axis=1, kind="stable")
    if late_tokens:
        # then a stable sort by class: eligible, eligible but late, ineligible
        late = np.isin(top_tokens[..., :k1], np.array(sorted(late_tokens),
                                                      dtype=top_tokens.dtype))
        rank = np.where(eligible[..., None], late.astype(np.int64), 2).reshape(B, -1)
        rows = np.arange(B)[:, None]
        order = order[rows, np.argsort(rank[rows, order], axis=1, kind="stable")]
    picks = order[:, :min(k2, s.shape[1])]
    pairs = np.empty(picks.shape + (2,), dtype=np.int64)
    np.floor_divide(picks, k1, out=pairs[..., 0])                      # slot
    pairs[..., 1] = top_tokens[np.arange(B)[:, None], pairs[..., 0], picks % k1]  # token
    sizes = [min(k2, c * k1) for c in counts]
    if min_prob > 0:
        pairs, picks, sizes = _plausible_only(pairs, picks, sizes, probs.reshape(B, -1),
                                              min_prob)
    return ActionSets(pairs, sizes, picks, (s, probs.reshape(B, -1), H, margin))


def _plausible_only(pairs, picks, sizes, flat_probs, min_prob: float):
    """The action sets without their actions of probability below ``min_prob``: the kept
    ones first, in score order; a state keeps at least its best action."""
    keep = np.take_along_axis(flat_probs, picks, axis=1) >= min_prob
    keep &= np.arange(picks.shape[1])[None, :] < np.asarray(sizes)[:, None]
    order = np.argsort(~keep, axis=1, kind="stable")
    rows = np.arange(picks.shape[0])[:, None]
    sizes = [max(1, int(k)) if n else 0 for k, n in zip(keep.sum(1).tolist(), sizes)]
    return pairs[rows, order], picks[rows, order], sizes


def entropy_drop(before: float, after: float) -> float:
    """The information-gain ratio every r_IG of the paper is made of: the share of the
    entropy ``before`` that is gone ``after``, ``(before - after) / before``; 0 when there
    was none to lose. Every gain in MEDAL (a child's r_IG, a candidate's cumulative gain,
    a rollout's, the viewer's and the inspector's figures) is this function of two sums."""
    return (before - after) / before if before > 0 else 0.0


def entropy_total(H: torch.Tensor, masked: torch.Tensor) -> float:
    """sum_{j in M} H(j) of one state: its entropies ``H`` ``[L]`` over its masked slots
    (r_IG's total; the trace's ``entropy_sum``, a candidate's remaining entropy).
    :func:`entropy_totals` sums a batch's states each exactly as this."""
    return float(H[masked].sum())


def entropy_totals(H, masked) -> list[float]:
    """sum_{j in M} H(j) of each of B states: the entropies ``H`` ``[B, L]`` over the
    slots ``masked`` ``[B, L]`` (CPU tensors or NumPy arrays), the totals every r_IG is
    made of.

    Each is summed exactly as that state's ``H[masked].sum()`` alone: where every state
    has the same number n of such slots (a search's siblings, as a rule), their entropies
    form a contiguous ``[B, n]`` block whose rows torch reduces each as that row alone;
    otherwise state by state."""
    H, masked = _array(H), _array(masked)
    counts = masked.sum(-1).tolist()
    if counts and counts.count(counts[0]) == len(counts):
        picked = H[masked]   # row-major, as torch's H[masked]
        return torch.from_numpy(picked).view(len(counts), counts[0]).sum(-1).tolist()
    return [entropy_total(torch.from_numpy(h), torch.from_numpy(m)) for h, m in zip(H, masked)]


def information_gains(before: float, afters: list[float]) -> list[float]:
    """r_IG of the children of one parent (paper eq. info_gain) from their entropy totals
    (:func:`entropy_totals`): ``before`` the parent's over its masked slots M, ``afters``
    each child's over its masked slots (M less the slot its action unmasked; with a
    rollout simulation, of the entropy each slot had when the rollout filled it):
    ``(before - after) / before`` (:func:`entropy_drop`). Every r_IG of the search is
    this call."""
    return [entropy_drop(before, after) for after in afters]


def uncertainty_penalised_gains(gains: list[float], slot_entropies: list[float],
                                before: float, weight: float) -> list[float]:
    """BEYOND the paper (``reward`` = "ig-certain", off by default; issue 38): each gain
    less ``weight`` times the committed slots' own share of the entropy ``before``,

        r = r_IG - weight * H_parent(i) / sum_{j in M} H_parent(j)

    r_IG counts the committed slot's own entropy as gained (it leaves M), so the paper's
    reward is largest for committing the most uncertain slot -- on Sudoku, a guess (docs/
    RESULTS.md, "Why MEDAL loses on Sudoku"). With ``weight`` = 1 only the entropy the
    commitment removed from the OTHER slots counts. The same for a candidate's cumulative
    gain from the root: ``slot_entropies`` then holds the root's entropy of all its
    committed slots summed, ``before`` the root's total. No change when ``before`` is 0."""
    if before <= 0:
        return list(gains)
    return [g - weight * h / before for g, h in zip(gains, slot_entropies)]


def information_gain(parent_entropy: torch.Tensor, parent_masked: torch.Tensor,
                     child_entropy: torch.Tensor, slot: int) -> float:
    """r_IG for the child made by unmasking ``slot``: the parent's total over its masked
    slots M, the child's over M without ``slot``; 0 when the parent is certain."""
    remaining = _array(parent_masked).copy()
    remaining[slot] = False
    before = entropy_totals(parent_entropy[None], parent_masked[None])[0]
    return information_gains(before, entropy_totals(child_entropy[None], remaining[None]))[0]


def cumulative_information_gain(root_entropy: torch.Tensor, root_masked: torch.Tensor,
                                node_entropy: torch.Tensor, node_masked: torch.Tensor) -> float:
    """Gain from the root to a node: (sum H_root(M_root) - sum H_node(M_node)) / sum H_root."""
    return entropy_drop(entropy_totals(root_entropy[None], root_masked[None])[0],
                        entropy_totals(node_entropy[None], node_masked[None])[0])


def ucb(q: float, n_parent: int, n_child: int, c: float) -> float:
    """Q + c * sqrt(ln N(parent) / N(child)); infinite for an unvisited child."""
    if n_child == 0:
        return math.inf
    return q + c * math.sqrt(math.log(max(n_parent, 1)) / n_child)


def rollout_path_gain(entropy_rows: list[list[float | None]]) -> float:
    """Information gain of a completed rollout (the candidate choice on full rollouts):
    the mean over its steps of r_IG = (sum H_t(M_t) - sum H_{t+1}(M_{t+1})) / sum H_t(M_t),
    where row t holds every slot's entropy before step t (None: unmasked). The last step
    (nothing left to predict) is not counted; 0 when there is no such step."""
    gains = []
    for now, nxt in zip(entropy_rows, entropy_rows[1:]):
        before = sum(h for h in now if h is not None)
        after = sum(h for h in nxt if h is not None)
        if before > 0:
            gains.append(entropy_drop(before, after))
    return sum(gains) / len(gains) if gains else 0.0
