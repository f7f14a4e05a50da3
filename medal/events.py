"""What the engine tells its observers. One event per MCTS phase and per decode step.

The trace recorder, the app and the benchmark all watch these; none of them runs a
second copy of the search.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Event:
    kind: str = field(init=False, default="event")


@dataclass
class RunStarted(Event):
    strategy: str
    prompt: str
    model_prompt: str
    config: dict
    model: dict
    problem: dict | None
    #: answer slots filled from the start by the task's format: slot -> (token id, text)
    fixed: dict = field(default_factory=dict)
    #: the task's name (how the prompt is read and the answer checked)
    task: str | None = None
    #: a forked run's record of its parent and what it forced (:mod:`medal.fork`)
    fork: dict | None = None

    def __post_init__(self):
        self.kind = "run_started"


@dataclass
class RootEvaluated(Event):
    node: Any  # search.Node

    def __post_init__(self):
        self.kind = "root"


@dataclass
class Selected(Event):
    iteration: int
    path: list[int]            # node ids, root first
    levels: list[list[dict]]   # per level: the siblings considered with N, W, Q, UCB

    def __post_init__(self):
        self.kind = "selection"


@dataclass
class Expanded(Event):
    iteration: int
    leaf: int
    children: list[Any]        # new search.Node objects
    forwards: int              # model calls this expansion cost (0 or 1)
    cached: int                # children whose state was already evaluated
    sequences: int = 0         # sequences the forward evaluated (children not cached)

    def __post_init__(self):
        self.kind = "expansion"


@dataclass
class Simulated(Event):
    iteration: int
    children: list[int]
    rewards: list[float]
    completion_ids: list       # each child's completion: answer ids (a tensor or list)
    forwards: int = 0          # model calls the simulations cost (rollout simulation only)
    sequences: int = 0         # sequences those calls evaluated
    cache_hits: int = 0        # rollout states already evaluated
    decode: Any = field(default=None, repr=False, compare=False)  # ids -> text
    _texts: list | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self):
        self.kind = "simulation"

    @property
    def completions(self) -> list[str]:
        """The completions as text, decoded when an observer first asks (the search
        itself never needs the text, so a run with no observer never decodes them)."""
        if self._texts is None:
            decode = self.decode or (lambda ids: str(list(ids)))
            self._texts = [decode(c) for c in self.completion_ids]
        return self._texts


@dataclass
class Forced(Event):
    """A fork committed actions at a tree node (:mod:`medal.fork`): ``path`` the forced
    nodes, one per action, from the node down; ``new`` those made for it (the others were
    already in the tree)."""
    iteration: int             # iterations done when it happened
    node: int
    path: list[int]
    new: list[Any]             # new search.Node objects
    then: str                  # "search" or "decode"

    def __post_init__(self):
        self.kind = "forced"


@dataclass
class Backpropagated(Event):
    iteration: int
    path: list[int]
    updates: list[dict]        # per node on the path and each new child: N, W, Q after
    new_candidates: list[int]

    def __post_init__(self):
        self.kind = "backpropagation"


@dataclass
class SearchFinished(Event):
    reason: str                # "candidates" | "budget" | "exhausted"
    iterations: int
    candidates: list[int]
    #: what the search did (MCTS.stats(): depth reached, distinct candidates, ...)
    stats: dict | None = None

    def __post_init__(self):
        self.kind = "search_finished"


@dataclass
class CandidateChosen(Event):
    candidates: list[dict]
    winner: int
    why: str

    def __post_init__(self):
        self.kind = "candidate_chosen"


@dataclass(frozen=True)
class TokenEdit:
    """An edit event: at a decode step, a slot already written is rewritten (LLaDA2.1's
    token editing, ``GenerationConfig.edit_threshold``): it held ``old_token``, the step
    proposed ``new_token`` with probability ``confidence``, above ``threshold``. A
    :class:`DecodeStep` carries the edits its forward decided (``edits``)."""
    slot: int
    old_token: int
    new_token: int
    old_text: str
    new_text: str
    confidence: float
    threshold: float

    def to_json(self) -> dict:
        return {"slot": self.slot, "old_token": self.old_token, "new_token": self.new_token,
                "old_text": self.old_text, "new_text": self.new_text,
                "confidence": self.confidence, "threshold": self.threshold}


@dataclass
class DecodeStep(Event):
    phase: str                 # "phase_c", "decode", "sample-3", "compare_greedy", ...
    step: int                  # global step index (MCTS commitments count as steps)
    block: int
    slots: list[int]
    tokens: list[int]
    token_texts: list[str]
    scores: list[float]        # the ranking value of each unmasked slot
    entropy: list[float | None]  # every slot's entropy before this step (None: unmasked)
    answer: str                # the answer text after this step (masks as _)
    forwards: int = 0          # model calls this step ran (0: its state was cached)
    sequences: int = 0         # sequences those calls evaluated
    cache_hits: int = 0        # evaluations answered from the cache
    eligible: dict | None = None  # every eligible slot's figures: slots, p, margin, score, entropy
    #: the step's token edits (:class:`TokenEdit`; None: none). A step may edit and
    #: unmask no slot (a post step: its block has no mask left)
    edits: list[TokenEdit] | None = None

    def __post_init__(self):
        self.kind = "decode_step"


@dataclass
class SampleFinished(Event):
    phase: str
    text: str
    answer: str
    verified: bool | None

    def __post_init__(self):
        self.kind = "sample_finished"


@dataclass
class RunFinished(Event):
    result: Any                # engine.GenerationResult
    comparison: Any = None     # the greedy comparison's GenerationResult, if run

    def __post_init__(self):
        self.kind = "run_finished"
