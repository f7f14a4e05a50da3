"""Every knob of a run, in one frozen, validated dataclass.

Bad values fail at construction with a message that says what is allowed. Defaults are
the paper's where it gives them (K1=3, K2=5, C=3, N=3 subtasks, eps=1e-8); where it
does not:

* ``gamma`` = 5: margins lie in [0, 1], so sigmoid(5 * margin) spans 0.5 (a tie) to 0.99
  (a certain slot) -- the margin factor matters without swamping p and exp(-H).
* ``c`` = 0.1: rewards are fractions of the parent's total entropy, so c = 0.1 keeps the
  exploration bonus on their scale. With the default L_c = 2 and C <= K2, c does not act:
  the search expands the root, then its best child, whose K2 children already make the C
  candidates (every run stops after L_c iterations; docs/RESULTS.md, "What the search
  did"). ``--search explore`` (:data:`SEARCH_MODES`) makes the tree branch.
* ``reward`` = "ig": the paper's information gain. "ig+verifier" goes BEYOND the paper
  (off by default, labelled so everywhere): for tasks with a verifier, a simulation whose
  completion verifies earns ``verifier_bonus`` on top of r_IG, and so does a candidate in
  the final choice. Countdown's verifier needs only the problem (no reference answer),
  so this is legitimate test-time checking, not an oracle.
* The paper's own choices, each a named option (DESIGN: "the paper's choices as options"):

  - ``pair_temperature`` > 0: phase C samples (slot, token) pairs in proportion to
    Softmax(s / T) (Algorithm 2 samples "a ~ Softmax(s)": T = 1). The pool is every
    eligible slot's top-K1 tokens, like the action set (over the whole vocabulary a
    softmax of scores in [0, 1] is nearly uniform). 0: the best slot, its argmax token.
  - ``candidate_choice`` = "rollout": every candidate is rolled out to the end by phase C
    and the winner is the one whose rollout has the highest information gain (mean r_IG
    over its steps); its rollout is the answer. "search" (the default): the cumulative
    IG of the search's commitments, then phase C on the winner only.
  - ``simulation`` = "rollout": a child is simulated by an iterative DLM rollout of
    ``rollout_steps`` steps (k-1 extra batched forwards per expansion, counted); the
    reward uses the entropy each remaining slot had when the rollout filled it (k = 1 is
    the one-fill simulation exactly).
  - ``scoring_scope``: where ``scoring`` = "margin" applies: "search" (the paper's
    "w/o Cf. + t2" ablation changes MCTS only) or "all" (also phase C).

  The defaults stay as they were (deterministic phase C, the search's IG for the
  choice, the one-fill simulation) and the margin-only scope follows the paper
  ("search"). The evidence is docs/RESULTS.md's table "The paper's own choices"
  (``bash scripts/results.sh`` regenerates it with the shipped model): pair sampling at
  T = 1 wrecks the answers (a softmax of scores in [0, 1] is nearly uniform), and the
  rollout choice and the rollout simulation cost more sequences without a significant
  gain.

  ``candidate_choice`` = "vote" goes BEYOND the paper (off by default, labelled): roll
  out every candidate and take the answer most rollouts agree on (ties: rollout IG).
* ``min_action_prob`` goes BEYOND the paper (off by default, labelled): actions whose
  token probability is below it are left out of the action set, so a node keeps fewer
  than K2 children when the rest are implausible. The paper's set always holds K2 actions;
  once the answer is settled (few masked slots, each with one certain token) it fills up
  with tokens of probability near 0 whose r_IG is noise against a remaining entropy near
  0. docs/RESULTS.md measures it: with a floor of 0.01 the L_c = 6 search goes from 19.5%
  to 100% on Twins and from 14% to 25% on Countdown, and changes nothing on Sudoku.
* ``threshold`` (default 0.9, Fast-dLLM's): the ``threshold`` strategy commits, each step,
  every eligible slot (the current semi-autoregressive block: ``block_length``) whose
  proposed token's probability exceeds it, and at least the most confident one (Fast-dLLM,
  Wu et al. 2025, "confidence-aware parallel decoding"); ``steps`` does not apply.
  ``threshold_phase_c`` goes BEYOND the paper (off by default, labelled): MEDAL's phase C
  commits by the same rule (every slot above the threshold, at least its best-scored one)
  instead of its step schedule. Measured in docs/SPEED.md.
* ``ig_candidates`` / ``ig_position_temperature``: the Info-Gain sampler's N and position
  temperature (Yang et al., ICML 2026; defaults of their code: 8 and 0.2); see
  :func:`medal.decoding.info_gain_pick`.
* ``search_steps`` (a departure made explicit): the paper does not say whether the search's
  L_c commitments are part of the decode's step budget. "count" (the default, what this
  project has always done): they are the first L_c of ``steps``, so phase C fills the rest
  of the first block in the block's remaining steps -- with fewer steps than slots it
  writes MORE slots per step than greedy at the same ``steps`` (Twins, 8 slots, 4 steps,
  L_c = 2: 1, 1, 3, 3 against greedy's 2, 2, 2, 2; at 2 steps: 1, 1, 6). "extra": phase C
  gets all ``steps`` for what the search left (L_c + steps steps in all).
* ``selection`` = "greedy" (the *choice* control, strategy ``medal-choice``): selection
  descends through the child with the highest reward instead of the highest UCB value --
  one expansion per level along the best-r_IG line, then the C best children of the last
  expansion as candidates. With L_c = 2 and C <= K2 it is the default search exactly (UCB
  does not act there; docs/RESULTS.md shows it per run).
* Three more departures, documented here and in docs/RESULTS.md: the probability floor
  (``min_action_prob``) filters WITHIN the top K2 without refilling from lower-ranked
  actions and keeps each state's best action (scores.py ``_plausible_only``); sampled
  tokens (``temperature`` > 0, Best-of-N, ``simulation`` = "sample") are drawn from each
  slot's top 64 tokens (runner.py ``TOP_K``: top-k sampling on LLaDA's vocabulary); a
  search whose iteration budget ends before C candidates exist falls back to the deepest
  nodes, best Q first (search.py ``fallback_candidates``).
* ``lc``: the paper's 20 is for 256-slot answers (8%); short answers take a task default
  (Countdown, Pick and Twins: 2; Sudoku: 3) -- see ``Task.default_lc``.
* ``logits_eos_inf`` / ``confidence_eos_eot_inf``: the options of LLaDA's ``generate.py``
  of the same names, for every model. The first sets the model's EOS logit to -inf before
  anything is computed from the logits (LLaDA used it for code: answers run to their full
  length). The second gives slots whose proposed token is an end token (EOS, or the
  turn's end: LLaDA ``<|eot_id|>``, Dream ``<|im_end|>``) the lowest priority, so they
  are unmasked after every other slot of their block -- in phase C, the baselines and
  MEDAL's action sets alike. Both off by default, as in LLaDA.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace

from .errors import InputError
from .scores import SCORINGS

SIMULATIONS = ("argmax", "sample", "rollout")
REWARDS = ("ig", "ig+verifier")
CANDIDATE_CHOICES = ("search", "rollout", "vote")
SCORING_SCOPES = ("search", "all")
SELECTIONS = ("ucb", "greedy")
SEARCH_STEPS = ("count", "extra")

#: The range (inclusive) the engine accepts for every numeric parameter. The CLI, the app
#: and the trace gate all apply these (through GenerationConfig); the bounds keep every
#: run finite in time and memory (e.g. answers of at most 4096 slots, 100 samples).
RANGES: dict[str, tuple] = {
    "k1": (1, 1000), "k2": (1, 1000), "lc": (1, 4096), "candidates": (1, 1000),
    "gamma": (0, 1_000_000), "c": (0, 1_000_000), "max_iterations": (1, 100_000),
    "verifier_bonus": (0, 1_000_000), "gen_length": (1, 4096), "steps": (1, 4096),
    "block_length": (1, 4096), "temperature": (0, 100), "slot_temperature": (0, 100),
    "eb_threshold": (0, 1_000_000), "samples": (1, 100), "n_subtasks": (1, 16),
    "seed": (0, 4_294_967_295), "rollout_steps": (1, 4096), "pair_temperature": (0, 100),
    "min_action_prob": (0, 1),
    "threshold": (0, 1), "ig_candidates": (1, 64), "ig_position_temperature": (0, 100),
}
#: a sampling temperature is 0 (argmax) or at least this: below it softmax(x / T)
#: overflows float32 and sampling fails
MIN_TEMPERATURE = 1e-3
#: phase C's pair sampling takes softmax(s / T) with s in [0, 1]: stable for any T down to
#: this; below it s / T overflows
MIN_PAIR_TEMPERATURE = 1e-6


#: Named search modes (``--search NAME``): settings applied on top of the defaults, each
#: only where the user left that setting at its default.
#:
#: * ``paper``: the defaults. With L_c = 2 and C <= K2 the search expands the root, then
#:   its best child, and every candidate is a grandchild through that ONE first
#:   commitment: UCB, c and the budget never act (issue 20; docs/RESULTS.md reports the
#:   iterations, depth and distinct first commitments per run).
#: * ``explore``: the tree really branches. At most one candidate per expanded parent
#:   (``one_per_parent``), so the C candidates come from C different depth-(L_c-1)
#:   nodes -- with L_c = 2, C different first commitments -- and a larger UCB constant
#:   (c = 1) that spreads the later expansions over the root's children. It costs about
#:   C + 1 expansions instead of L_c. Measured against ``paper`` in docs/RESULTS.md; it
#:   becomes the default only if the evidence there says so.
SEARCH_MODES: dict[str, dict] = {
    "paper": {},
    "explore": {"one_per_parent": True, "c": 1.0},
}


@dataclass(frozen=True)
class GenerationConfig:
    # --- search (MEDAL) ---
    k1: int = 3                    # tokens kept per masked slot
    k2: int = 5                    # actions kept overall = children per expansion
    lc: int | None = None          # slots committed by search (None: the task's default)
    candidates: int = 3            # C: candidates to collect
    gamma: float = 5.0             # margin scale in sigmoid(gamma * margin)
    c: float = 0.1                 # UCB exploration constant
    max_iterations: int = 200      # hard budget of MCTS iterations
    scoring: str = "confidence"    # "confidence" (paper) or "margin" (ablation)
    simulation: str = "argmax"     # how a simulation fills the remaining masks
    rollout_steps: int = 3         # with simulation "rollout": k DLM steps per simulation
    reward: str = "ig"             # "ig" (paper) or "ig+verifier" (beyond the paper, see below)
    verifier_bonus: float = 1.0    # with "ig+verifier": added when a completion verifies
    complete_candidates: bool = False  # phase-C-complete every candidate, not just the winner
    candidate_choice: str = "search"  # "search" IG, "rollout" IG (paper), "vote" (beyond)
    scoring_scope: str = "search"  # where scoring="margin" applies: "search" (paper) or "all"
    one_per_parent: bool = False   # count at most one candidate per parent (diversity)
    min_action_prob: float = 0.0   # BEYOND the paper: leave actions of p below this out of
    #                                the action set (0: off, the paper's top-K2 always)
    selection: str = "ucb"         # "ucb" (paper) or "greedy": the best-reward child, no UCB
    search_steps: str = "count"    # the search's L_c commitments: "count" against phase C's
    #                                steps (this project's reading) or "extra" (on top of them)
    # --- decoding ---
    gen_length: int | None = None  # answer slots (None: the model's default)
    steps: int | None = None       # denoising steps (None: one slot per step)
    block_length: int | None = None  # semi-autoregressive blocks (None: one block)
    temperature: float = 0.0       # token sampling temperature (0: argmax)
    slot_temperature: float = 0.0  # phase C: sample slots ~ softmax(s / T) (0: best slot)
    pair_temperature: float = 0.0  # phase C: sample (slot, token) ~ softmax(s / T) (paper: 1)
    eb_threshold: float = 0.5      # EB sampler: unmask while sum H - max H <= this
    samples: int = 5               # Best-of-N: N
    # --- parallel decoding (docs/SPEED.md) ---
    threshold: float = 0.9         # Fast-dLLM: commit every slot of p > this (>= 1 a step);
    #                                also the Info-Gain sampler's high-confidence bypass
    threshold_phase_c: bool = False  # BEYOND the paper: phase C commits by that rule
    ig_candidates: int = 8         # Info-Gain sampler: candidate actions per step (N)
    ig_position_temperature: float = 0.2  # Info-Gain sampler: Gumbel position temperature
    # --- LLaDA's generate.py options (off by default, as there) ---
    logits_eos_inf: bool = False   # the EOS logit is -inf: no slot is ever filled with EOS
    confidence_eos_eot_inf: bool = False  # slots whose token is an end token (EOS, EOT /
    #                                       <|im_end|>) are unmasked last (confidence -inf)
    # --- prompt ---
    decompose: bool | None = None  # task decomposition (paper 3.3); None: the task's default
    n_subtasks: int = 3            # N subtasks in the decomposition prompt
    seed: int = 0

    def __post_init__(self):
        def need(ok: bool, msg: str):
            if not ok:
                raise InputError(msg)

        for name in ("k1", "k2", "candidates", "max_iterations", "samples", "n_subtasks",
                     "rollout_steps", "ig_candidates"):
            v = getattr(self, name)
            need(type(v) is int and v >= 1, f"{name} must be a whole number >= 1, got {v!r}")
        for name in ("lc", "gen_length", "steps", "block_length"):
            v = getattr(self, name)
            need(v is None or (type(v) is int and v >= 1),
                 f"{name} must be a whole number >= 1 (or unset), got {v!r}")
        for name in ("gamma", "c", "temperature", "slot_temperature", "pair_temperature",
                     "eb_threshold", "verifier_bonus", "min_action_prob", "threshold",
                     "ig_position_temperature"):
            v = getattr(self, name)
            need(isinstance(v, (int, float)) and v == v and abs(v) != float("inf") and v >= 0,
                 f"{name} must be a finite number >= 0, got {v!r}")
        need(self.scoring in SCORINGS, f"scoring must be one of {SCORINGS}, got {self.scoring!r}")
        need(self.reward in REWARDS, f"reward must be one of {REWARDS}, got {self.reward!r}")
        need(self.simulation in SIMULATIONS,
             f"simulation must be one of {SIMULATIONS}, got {self.simulation!r}")
        need(self.candidate_choice in CANDIDATE_CHOICES,
             f"candidate_choice must be one of {CANDIDATE_CHOICES}, got {self.candidate_choice!r}")
        need(self.scoring_scope in SCORING_SCOPES,
             f"scoring_scope must be one of {SCORING_SCOPES}, got {self.scoring_scope!r}")
        need(self.selection in SELECTIONS,
             f"selection must be one of {SELECTIONS}, got {self.selection!r}")
        need(self.search_steps in SEARCH_STEPS,
             f"search_steps must be one of {SEARCH_STEPS}, got {self.search_steps!r}")
        need(not (self.slot_temperature > 0 and self.pair_temperature > 0),
             "set slot_temperature (sample slots) or pair_temperature (sample (slot, token) "
             "pairs), not both")
        need(type(self.seed) is int, f"seed must be a whole number, got {self.seed!r}")
        for name, (low, high) in RANGES.items():
            v = getattr(self, name, None)
            need(v is None or low <= v <= high,
                 f"{name} must be between {low} and {high}, got {v!r}")
        for name in ("temperature", "slot_temperature"):
            v = getattr(self, name)
            need(v == 0 or v >= MIN_TEMPERATURE,
                 f"{name} must be 0 (argmax) or at least {MIN_TEMPERATURE:g}, got {v!r}")
        need(self.pair_temperature == 0 or self.pair_temperature >= MIN_PAIR_TEMPERATURE,
             f"pair_temperature must be 0 (off) or at least {MIN_PAIR_TEMPERATURE:g}, "
             f"got {self.pair_temperature!r}")
        need(not (self.threshold_phase_c and (self.slot_temperature > 0
                                              or self.pair_temperature > 0)),
             "threshold_phase_c commits every slot above the threshold: leave slot_temperature "
             "and pair_temperature at 0 with it (or turn threshold_phase_c off)")
        for name in ("logits_eos_inf", "confidence_eos_eot_inf", "complete_candidates",
                     "one_per_parent", "threshold_phase_c"):
            v = getattr(self, name)
            need(isinstance(v, bool), f"{name} must be true or false, got {v!r}")
        need(self.decompose in (None, True, False),
             f"decompose must be true, false or unset, got {self.decompose!r}")

    @staticmethod
    def with_defaults(recorded: dict) -> dict:
        """A recorded configuration with the fields it predates filled with their
        defaults (a trace written before a field existed ran with its default)."""
        return {**{f.name: f.default for f in fields(GenerationConfig)}, **recorded}

    @property
    def phase_c_scoring(self) -> str:
        """The scoring phase C ranks slots by: ``scoring`` unless it is restricted to the
        search (``scoring_scope`` = "search"), then the paper's confidence score."""
        return self.scoring if self.scoring_scope == "all" else "confidence"

    def resolved(self, gen_length: int, default_lc: int, max_gen_length: int | None,
                 default_block: int | None = None,
                 default_steps: int | None = None) -> "GenerationConfig":
        """Fill the unset lengths and check them against each other and the model.

        ``default_block``: the task's semi-autoregressive block length for its built-in
        model, used when the user sets none and it divides the answer length.
        ``default_steps``: the task's denoising steps for its built-in model, used when the
        user sets none and it fits the answer (a multiple of the blocks, at most L)."""
        L = self.gen_length or gen_length
        if max_gen_length is not None and L > max_gen_length:
            raise InputError(f"gen_length {L} exceeds what this model can fill ({max_gen_length})")
        if self.block_length is None and default_block and L % default_block == 0:
            block = default_block
        else:
            block = self.block_length or L
        if block > L or L % block:
            raise InputError(f"block_length must divide gen_length ({L}); got {block}")
        n_blocks = L // block
        if self.steps is None and default_steps and default_steps <= L \
                and default_steps % n_blocks == 0:
            steps = default_steps
        else:
            steps = self.steps or L
        if steps % n_blocks:
            raise InputError(f"steps ({steps}) must be a multiple of the number of blocks "
                             f"({n_blocks} = gen_length {L} / block_length {block})")
        if steps > L:
            raise InputError(f"steps ({steps}) cannot exceed gen_length ({L}): "
                             "each step unmasks at least one slot")
        lc = self.lc if self.lc is not None else min(default_lc, max(1, block - 1))
        if lc >= L:
            raise InputError(f"lc ({lc}) must be shorter than the answer (gen_length {L})")
        if lc > block:
            raise InputError(f"lc ({lc}) must fit in the first block (block_length {block}): "
                             "the search initialises the first block")
        return replace(self, gen_length=L, steps=steps, block_length=block, lc=lc)

    def with_search_mode(self, mode: str, explicit: tuple[str, ...] = ()) -> "GenerationConfig":
        """This config in the named search mode (:data:`SEARCH_MODES`): each of the mode's
        settings replaces this config's value unless that setting is in ``explicit`` (set
        by the user) or differs from the default."""
        if mode not in SEARCH_MODES:
            raise InputError(f"search mode must be one of {tuple(SEARCH_MODES)}, got {mode!r}")
        defaults = GenerationConfig()
        changes = {k: v for k, v in SEARCH_MODES[mode].items()
                   if k not in explicit and getattr(self, k) == getattr(defaults, k)}
        return replace(self, **changes)

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> "GenerationConfig":
        names = {f.name for f in fields(cls)}
        unknown = set(data) - names
        if unknown:
            raise InputError(f"unknown parameters: {', '.join(sorted(unknown))}")
        return cls(**data)
