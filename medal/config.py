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
* ``reward`` = "ig-certain" goes BEYOND the paper (off by default, labelled; issue 38):
  r_IG less ``uncertainty_penalty`` times the committed slot's own share of the parent's
  entropy (:func:`medal.scores.uncertainty_penalised_gains`), in the search's rewards and
  in the candidate choice (the cumulative gain less the committed slots' share of the
  root's entropy). The paper's r_IG counts the committed slot's own entropy as gained, so
  it rewards committing the most uncertain slot; on Sudoku those commitments are guesses,
  and wrong ones end wrong. docs/RESULTS.md ("Why MEDAL loses on Sudoku") measures it:
  weight 1 (the default weight) helps little; weight 4, chosen on one set of problems and
  confirmed on 300 fresh ones (seed 10039), lifts MEDAL from 53.3% to 60.0% (+29/-9,
  p = 0.002) -- greedy's level (61.3%), not above it. The trace keeps the paper's r_IG per
  node beside the reward the search used.
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
  proposed token's probability reaches it (``>=``, as Fast-dLLM's samplers), and at least
  the most confident one (Fast-dLLM, Wu et al. 2025, "confidence-aware parallel
  decoding"); ``steps`` does not apply.
  ``threshold_phase_c`` goes BEYOND the paper (off by default, labelled): MEDAL's phase C
  commits by the same rule (every slot above the threshold, at least its best-scored one)
  instead of its step schedule. Measured in docs/SPEED.md.
* ``edit_threshold`` / ``max_post_steps`` (LLaDA2.1's token editing; 0: off, the default):
  a written slot of the current block is rewritten when the step proposes another token
  there with probability above the threshold, and a block with no mask left gets up to
  ``max_post_steps`` more forwards that only rewrite (:mod:`medal.decoding`). Recorded in
  a trace only when on, so a run without it is recorded as before.
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

from dataclasses import asdict, dataclass, field, fields, replace

from .errors import InputError
from .scores import SCORINGS

SIMULATIONS = ("argmax", "sample", "rollout")
REWARDS = ("ig", "ig+verifier", "ig-certain")
CANDIDATE_CHOICES = ("search", "rollout", "vote")
SCORING_SCOPES = ("search", "all")
SELECTIONS = ("ucb", "greedy")
SEARCH_STEPS = ("count", "extra")

#: a sampling temperature is 0 (argmax) or at least this: below it softmax(x / T)
#: overflows float32 and sampling fails
MIN_TEMPERATURE = 1e-3
#: phase C's pair sampling takes softmax(s / T) with s in [0, 1]: stable for any T down to
#: this; below it s / T overflows
MIN_PAIR_TEMPERATURE = 1e-6


#: Every strategy's name, in the order the engine lists them (``medal.engine.STRATEGIES``
#: holds their code; a test keeps the two the same), and the names also accepted. Here, so
#: the command line lists them without importing the engine (torch).
STRATEGY_NAMES = ("medal", "medal-no-mcts", "medal-no-decomposition", "medal-margin-only",
                  "greedy", "random", "entropy", "margin", "eb", "bst5", "threshold",
                  "info-gain", "medal-order", "medal-choice", "medal-branching",
                  "medal-random-choice", "medal-explore", "medal-wide-pool", "ots", "soar")
STRATEGY_ALIASES = {"low-confidence": "greedy", "phase-c": "medal-no-mcts"}


#: the most runs ``medal bench --lock-step`` advances together (the joint model call is
#: split into calls of at most medal.runner.MAX_JOINT_SEQUENCES sequences anyway)
MAX_LOCK_STEP = 256

#: token editing's settings (recorded only when editing is on: :meth:`GenerationConfig.to_json`)
EDIT_SETTINGS = ("edit_threshold", "max_post_steps")


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
class Setting:
    """What one :class:`GenerationConfig` field is, declared once on the field (issue 26):
    the command line's flag, the app's widget, the engine's check and the operator's limit
    are all built from it.

    ``label`` names the app's widget; ``help`` is the one explanation (``--help`` and the
    widget's tooltip); ``group`` places it (search, decoding, prompt); ``low``..``high`` is
    the range the engine accepts, and a temperature-like setting is 0 or at least
    ``least_nonzero``; ``step`` is the app's increment; ``flag`` the CLI flag when it is
    not ``--name-with-dashes`` (``None``: each command declares its own, e.g. ``--seed``);
    ``limit``: the operator's cap on what a web visitor may ask, as (default, what it
    limits) -- ``MEDAL_MAX_<NAME>`` / ``--max-<name>`` set it, up to ``high``. Every other
    setting a visitor may change within its range. ``name``, ``default`` and ``kind`` come
    from the field."""
    label: str
    help: str
    group: str = "search"
    low: float | None = None
    high: float | None = None
    least_nonzero: float | None = None
    choices: tuple = ()
    step: float | None = None
    flag: str | None = ""
    limit: tuple | None = None
    name: str = ""
    default: object = None
    kind: str = ""       # int, optional_int, float, bool, optional_bool, choice

    @property
    def range_text(self) -> str:
        """The accepted values in a few characters, e.g. ``1..1000`` or ``0 or 0.001..100``."""
        if self.choices:
            return ", ".join(self.choices)
        if self.low is None:
            return ""
        if self.least_nonzero is not None:
            return f"0 or {self.least_nonzero:g}..{_number(self.high)}"
        return f"{_number(self.low)}..{_number(self.high)}"

    @property
    def cli_flag(self) -> str | None:
        if self.flag is None:
            return None
        return "--" + (self.flag or self.name).replace("_", "-")

    @property
    def min_value(self):
        """The app widget's least value (its range's low end, a float for a float)."""
        return float(self.low) if self.kind == "float" and self.low is not None else self.low


def _number(v) -> str:
    return str(int(v)) if float(v).is_integer() else f"{v:g}"


def setting(default, label: str, help: str, **declared):
    """A :class:`GenerationConfig` field with its :class:`Setting`."""
    return field(default=default, metadata={"setting": Setting(label, help, **declared)})


_KINDS = {"int": "int", "int | None": "optional_int", "float": "float", "bool": "bool",
          "bool | None": "optional_bool", "str": "choice"}


@dataclass(frozen=True)
class GenerationConfig:
    # --- search (MEDAL) ---
    k1: int = setting(3, "K1: tokens kept per masked slot",
                      "K1: the top-K1 tokens of every masked slot, by the confidence-adjusted "
                      "score, enter the pool of actions", low=1, high=1000, limit=(20, "tokens kept per slot (K1)"))
    k2: int = setting(5, "K2: actions per expansion",
                      "K2: the K2 best-scoring (slot, token) actions of the pool are the "
                      "children of an expanded node", low=1, high=1000, limit=(20, "children per expansion (K2)"))
    lc: int | None = setting(None, "L_c: slots committed by the search",
                             "L_c: a node with L_c slots unmasked by the search is a candidate "
                             "(unset: the task's default)", low=1, high=4096,
                             limit=(64, "slots committed by the search (L_c)"))
    candidates: int = setting(3, "C: candidates to collect",
                              "C: the search stops when C distinct candidates exist", low=1,
                              high=1000, limit=(20, "candidates (C)"))
    gamma: float = setting(5.0, "γ: margin scale",
                           "γ, the margin scale in σ(γ·margin): how much a clear top-2 margin "
                           "raises a slot's score", low=0, high=1_000_000, step=0.5)
    c: float = setting(0.1, "c: UCB exploration constant",
                       "c, the UCB exploration constant: weight of the bonus "
                       "c·√(ln N(parent)/N(child))", low=0, high=1_000_000, step=0.05)
    max_iterations: int = setting(200, "Max iterations",
                                  "hard budget of MCTS iterations (a search that runs out "
                                  "before C candidates exist takes the deepest nodes, best Q "
                                  "first, as its candidates)", low=1, high=100_000,
                                  limit=(500, "MCTS iterations"))
    scoring: str = setting("confidence", "Scoring",
                           "action scores: confidence, the paper's s = p·exp(−H)·σ(γ·margin); "
                           "margin, the 'w/o confidence' ablation (top-2 margin only)",
                           choices=SCORINGS)
    simulation: str = setting("argmax", "Simulation fill",
                              "how a simulation fills a child's remaining masks: one fill from "
                              "the child's own forward (argmax or sampled tokens, no extra "
                              "forward), or rollout: an iterative DLM rollout of k steps (the "
                              "paper's reading; its forwards are counted)", choices=SIMULATIONS)
    rollout_steps: int = setting(3, "Rollout steps k",
                                 "k: DLM steps per rollout simulation (with simulation "
                                 "rollout; k−1 extra batched forwards per expansion, counted)",
                                 low=1, high=4096)
    reward: str = setting("ig", "Reward",
                          "ig: the paper's information gain; ig+verifier (BEYOND the paper): a "
                          "simulation (and a candidate) whose completion the task's verifier "
                          "accepts earns the verifier bonus; ig-certain (BEYOND the paper): "
                          "r_IG less the committed slot's own share of the parent's entropy "
                          "(times the uncertainty penalty), so guessing an uncertain slot "
                          "earns nothing for its own uncertainty", choices=REWARDS)
    verifier_bonus: float = setting(1.0, "Verifier bonus",
                                    "reward bonus for a verified completion (with reward "
                                    "ig+verifier; beyond the paper)", low=0, high=1_000_000,
                                    step=0.5)
    uncertainty_penalty: float = setting(1.0, "Uncertainty penalty (beyond the paper)",
                                         "with reward ig-certain (BEYOND the paper): the "
                                         "weight of the committed slot's own share of the "
                                         "parent's entropy taken off r_IG (1: only the gain "
                                         "on the other slots counts)", low=0, high=1_000_000,
                                         step=0.25)
    complete_candidates: bool = setting(False, "Complete every candidate with phase C",
                                        "complete every candidate with phase C, not only the "
                                        "winner (to compare their final answers)")
    candidate_choice: str = setting("search", "Candidate choice",
                                    "search: the winner has the highest cumulative IG of the "
                                    "search's commitments; rollout (the paper's text): every "
                                    "candidate is completed by phase C and the highest "
                                    "rollout IG wins; vote (BEYOND the paper): the answer most "
                                    "rollouts agree on", choices=CANDIDATE_CHOICES)
    scoring_scope: str = setting("search", "Margin-only scope",
                                 "where scoring margin applies: the search only (the paper's "
                                 "ablation) or also phase C", choices=SCORING_SCOPES)
    one_per_parent: bool = setting(False, "At most one candidate per parent",
                                   "count at most one candidate per parent node (more diverse "
                                   "candidates: siblings do not all count)")
    min_action_prob: float = setting(0.0, "Action probability floor (beyond the paper)",
                                     "BEYOND the paper: actions whose token probability is "
                                     "below this leave the action set, so a node keeps fewer "
                                     "than K2 children when the rest are implausible (0: off, "
                                     "the paper's top-K2). It filters WITHIN the top K2 (no "
                                     "refilling from lower actions) and keeps each state's "
                                     "best action", low=0, high=1, step=0.01)
    selection: str = setting("ucb", "Selection rule",
                             "ucb (the paper): descend by Q + c·√(ln N(parent)/N(child)); "
                             "greedy (the choice control, strategy medal-choice): descend "
                             "through the child with the highest reward, one expansion per "
                             "level", choices=SELECTIONS)
    search_steps: str = setting("count", "Search's steps",
                                "MEDAL: count (the default, as this project always did): the "
                                "search's L_c commitments are the first L_c of the steps, so "
                                "phase C writes the rest of the first block in the steps left "
                                "(more slots per step than greedy when steps < slots); extra: "
                                "phase C gets all the steps, L_c + steps in all",
                                group="decoding", choices=SEARCH_STEPS)
    # --- decoding ---
    gen_length: int | None = setting(None, "Answer length (slots)",
                                     "answer slots (unset: the model's default)",
                                     group="decoding", low=1, high=4096,
                                     limit=(256, "answer length"))
    steps: int | None = setting(None, "Steps", "denoising steps (unset: one slot per step)",
                                group="decoding", low=1, high=4096)
    block_length: int | None = setting(None, "Block length",
                                       "semi-autoregressive block length (unset: the task's "
                                       "default for its built-in model, e.g. Countdown 7, "
                                       "else one block)", group="decoding", low=1, high=4096)
    temperature: float = setting(0.0, "Temperature",
                                 "token sampling temperature (0: argmax; bst5 uses 1 when 0); "
                                 "sampling draws from each slot's top 64 tokens (top-k "
                                 "sampling)", group="decoding", low=0, high=100,
                                 least_nonzero=MIN_TEMPERATURE, step=0.1)
    slot_temperature: float = setting(0.0, "Slot temperature (phase C)",
                                      "phase C: sample slots ∝ softmax(score / T) (0: the most "
                                      "confident slot)", group="decoding", low=0, high=100,
                                      least_nonzero=MIN_TEMPERATURE, step=0.1)
    pair_temperature: float = setting(0.0, "Pair temperature (phase C)",
                                      "phase C: sample (slot, token) pairs ∝ Softmax(s / T) "
                                      "over each eligible slot's top-K1 tokens (the paper's "
                                      "Algorithm 2: T = 1; 0: off, the best slot)",
                                      group="decoding", low=0, high=100,
                                      least_nonzero=MIN_PAIR_TEMPERATURE, step=0.1)
    eb_threshold: float = setting(0.5, "EB threshold",
                                  "entropy-bounded (EB) sampler: unmask while ΣH − max H ≤ this",
                                  group="decoding", low=0, high=1_000_000, step=0.1)
    samples: int = setting(5, "Best-of-N samples", "bst5: the number of samples voted on (N)",
                           group="decoding", low=1, high=100,
                           limit=(10, "Best-of-N samples"))
    # --- parallel decoding (docs/SPEED.md) ---
    threshold: float = setting(0.9, "Confidence threshold (Fast-dLLM)",
                               "Fast-dLLM's confidence threshold: the threshold strategy (and "
                               "phase C with threshold phase C) commits every slot of the "
                               "current block whose token probability reaches it (>=, as "
                               "Fast-dLLM), at least one a step (block length: the block "
                               "length setting); also the info-gain strategy's bypass",
                               group="decoding", low=0, high=1, step=0.05)
    threshold_phase_c: bool = setting(False, "Threshold phase C (beyond the paper)",
                                      "BEYOND the paper: MEDAL's phase C commits by the "
                                      "confidence-threshold rule instead of its step schedule "
                                      "(fewer forwards; docs/SPEED.md)", group="decoding")
    # --- token editing (LLaDA2.1; off by default) ---
    edit_threshold: float = setting(0.0, "Token editing threshold (LLaDA2.1)",
                                    "LLaDA2.1's token editing: at every step a slot of the "
                                    "current block written earlier is rewritten with the "
                                    "token the step proposes there when it differs and its "
                                    "probability exceeds this (0: off; LLaDA2.1's samplers "
                                    "default to 0.9, its quality mode 0.5)",
                                    group="decoding", low=0, high=1, step=0.05)
    max_post_steps: int = setting(16, "Editing steps after a block",
                                  "with token editing: forwards after a block's last mask "
                                  "is written, each rewriting what passes the editing "
                                  "threshold, until one rewrites nothing (LLaDA2.1's "
                                  "max_post_steps)", group="decoding", low=0, high=4096)
    ig_candidates: int = setting(8, "Info-Gain candidates N",
                                 "info-gain strategy: candidate actions evaluated per step in "
                                 "one batched forward (N)", group="decoding", low=1, high=64)
    ig_position_temperature: float = setting(0.2, "Info-Gain position temperature",
                                             "info-gain strategy: Gumbel temperature of the "
                                             "candidates' positions (0: greedy)",
                                             group="decoding", low=0, high=100, step=0.05)
    # --- the newer beam searches (issue 38; medal.search.ots_search / soar_search) ---
    ots_beams: int = setting(3, "OTS beams K",
                             "ots strategy (Order-Token Search): beams kept; at each block's "
                             "first step every beam proposes K actions, each scored by one "
                             "forward (K² a search step)", group="decoding", low=1, high=64)
    ots_temperature: float = setting(0.4, "OTS Gumbel temperature",
                                     "ots strategy: temperature of the Gumbel noise that "
                                     "varies each action's tokens and order (0: argmax, every "
                                     "action the same)", group="decoding", low=0, high=100,
                                     least_nonzero=MIN_TEMPERATURE, step=0.1)
    soar_beams: int = setting(2, "SOAR beams",
                              "soar strategy: the beam's width where the model is unsure (each "
                              "beam branches into its most confident slots, one each)",
                              group="decoding", low=1, high=64)
    soar_threshold: float = setting(0.95, "SOAR confidence threshold",
                                    "soar strategy: a slot whose token probability exceeds "
                                    "this is written in parallel and the beam collapses to "
                                    "its best candidate", group="decoding", low=0, high=1,
                                    step=0.01)
    soar_parallel: int = setting(5, "SOAR slots per parallel step",
                                 "soar strategy: the most slots one parallel step writes",
                                 group="decoding", low=1, high=4096)
    # --- LLaDA's generate.py options (off by default, as there) ---
    logits_eos_inf: bool = setting(False, "Never write end-of-sequence (logits_eos_inf)",
                                   "as LLaDA's generate.py: the EOS logit is -inf, so no slot "
                                   "is ever filled with EOS (answers run to the answer length)",
                                   group="decoding")
    confidence_eos_eot_inf: bool = setting(False, "End tokens last (confidence_eos_eot_inf)",
                                           "as LLaDA's generate.py: slots whose token is an "
                                           "end token (EOS, end of turn) get the lowest "
                                           "confidence and are unmasked last",
                                           group="decoding")
    # --- prompt ---
    decompose: bool | None = setting(None, "Task decomposition",
                                     "the task decomposition prompt (paper 3.3; unset: on for "
                                     "MEDAL strategies with LLMs as in the paper, off for "
                                     "baselines and for the built-in Countdown model, where it "
                                     "was measured to hurt)", group="prompt")
    n_subtasks: int = setting(3, "N subtasks", "N: subtasks in the decomposition prompt",
                              group="prompt", low=1, high=16, flag="subtasks")
    template: int = setting(0, "Prompt template",
                            "the task's prompt template: the same problem written another "
                            "way (0: the task's own form; every task with a verifier has 0 "
                            "and 1; a built-in model reads those it was trained on: "
                            "builtin:<task>-2t both)",
                            group="prompt", low=0, high=15)
    seed: int = setting(0, "Seed", "seed for every random choice", group="prompt", low=0,
                        high=4_294_967_295, flag=None)

    def __post_init__(self):
        def need(ok: bool, msg: str):
            if not ok:
                raise InputError(msg)

        for st in SETTINGS:
            v = getattr(self, st.name)
            if st.kind in ("int", "optional_int"):
                unset = " (or unset)" if st.kind == "optional_int" else ""
                need((v is None and unset) or (type(v) is int and v >= st.low),
                     f"{st.name} must be a whole number >= {st.low:g}{unset}, got {v!r}")
            elif st.kind == "float":
                need(type(v) in (int, float) and v == v and abs(v) != float("inf")
                     and v >= st.low,
                     f"{st.name} must be a finite number >= {st.low:g}, got {v!r}")
            elif st.kind == "choice":
                need(v in st.choices, f"{st.name} must be one of {st.choices}, got {v!r}")
            elif st.kind == "bool":
                need(isinstance(v, bool), f"{st.name} must be true or false, got {v!r}")
            else:
                need(v in (None, True, False) and not type(v) in (int, float),
                     f"{st.name} must be true, false or unset, got {v!r}")
        for st in SETTINGS:
            v = getattr(self, st.name)
            if st.high is not None:
                need(v is None or st.low <= v <= st.high,
                     f"{st.name} must be between {_number(st.low)} and {_number(st.high)}, "
                     f"got {v!r}")
            if st.least_nonzero is not None:
                need(v == 0 or v >= st.least_nonzero,
                     f"{st.name} must be 0 (off) or at least {st.least_nonzero:g}, got {v!r}")
        need(not (self.slot_temperature > 0 and self.pair_temperature > 0),
             "set slot_temperature (sample slots) or pair_temperature (sample (slot, token) "
             "pairs), not both")
        need(not (self.threshold_phase_c and (self.slot_temperature > 0
                                              or self.pair_temperature > 0)),
             "threshold_phase_c commits every slot above the threshold: leave slot_temperature "
             "and pair_temperature at 0 with it (or turn threshold_phase_c off)")

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
                 default_steps: int | None = None,
                 prompt_length: int | None = None) -> "GenerationConfig":
        """Fill the unset lengths and check them against each other and the model.

        ``default_block``: the task's semi-autoregressive block length for its built-in
        model, used when the user sets none and it divides the answer length (a block-
        diffusion model's own block length: used when the user sets none).
        ``default_steps``: the task's denoising steps for its built-in model, used when the
        user sets none and it fits the answer (a multiple of the blocks, at most L).

        ``prompt_length`` (a block-diffusion model, LLaDA2; None for the others): the
        model's blocks are the sequence's, from position 0, the prompt's positions
        included. The answer is lengthened to the end of the block it ends in (the
        model's own samplers lay out their canvas so), its first block is the rest of the
        block the prompt ends in -- shorter than ``block_length`` unless the prompt ends
        a block -- and :func:`medal.decoding.block_of` counts the blocks back from the
        answer's end. Unset steps: ``block_length`` a block, the samplers' default; the
        search's ``lc`` commitments must fit in the first block."""
        L = self.gen_length or gen_length
        sequence_blocks = prompt_length is not None
        if sequence_blocks:
            block = self.block_length or default_block or L
            L = -(-(prompt_length + L) // block) * block - prompt_length
        if max_gen_length is not None and L > max_gen_length:
            raise InputError(f"gen_length {L} exceeds what this model can fill ({max_gen_length})"
                             + (f" (lengthened to the end of a block of {block})"
                                if sequence_blocks and L != (self.gen_length or gen_length)
                                else ""))
        if not sequence_blocks:
            if self.block_length is None and default_block and L % default_block == 0:
                block = default_block
            else:
                block = self.block_length or L
            if block > L or L % block:
                raise InputError(f"block_length must divide gen_length ({L}); got {block}")
        n_blocks = -(-L // block)
        whole = n_blocks * block          # L, unless the first block is short
        first = L - (n_blocks - 1) * block
        if self.steps is None and default_steps and default_steps <= L \
                and default_steps % n_blocks == 0:
            steps = default_steps
        else:
            steps = self.steps or whole
        if steps % n_blocks:
            raise InputError(f"steps ({steps}) must be a multiple of the number of blocks "
                             f"({n_blocks} = gen_length {L} / block_length {block})")
        if steps > whole:
            raise InputError(f"steps ({steps}) cannot exceed gen_length ({L}): "
                             "each step unmasks at least one slot" if whole == L else
                             f"steps ({steps}) cannot exceed {whole} ({n_blocks} blocks of "
                             f"{block} steps at most)")
        lc = self.lc if self.lc is not None else min(default_lc, max(1, first - 1))
        if lc >= L:
            raise InputError(f"lc ({lc}) must be shorter than the answer (gen_length {L})")
        if lc > first:
            raise InputError(f"lc ({lc}) must fit in the first block (block_length {block}): "
                             "the search initialises the first block" if first == block else
                             f"lc ({lc}) must fit in the first block ({first} slots: the rest "
                             f"of the block of {block} the prompt ends in): the search "
                             "initialises the first block")
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
        """Every field; token editing's settings only when editing is on (a run without
        it records what it recorded before editing existed: its trace is unchanged, and
        :meth:`with_defaults` fills them back in)."""
        out = asdict(self)
        if not self.edit_threshold:
            for name in EDIT_SETTINGS:
                out.pop(name)
        return out

    @classmethod
    def from_json(cls, data: dict) -> "GenerationConfig":
        names = {f.name for f in fields(cls)}
        unknown = set(data) - names
        if unknown:
            raise InputError(f"unknown parameters: {', '.join(sorted(unknown))}")
        return cls(**data)


#: Every setting, in the order of the fields: the one declaration the CLI's flags
#: (``medal.cli.add_config_arguments``), the app's widgets (``medal.app.controller.PARAMETERS``)
#: and the operator's limits (``medal.serving``) are built from.
SETTINGS: tuple[Setting, ...] = tuple(
    replace(f.metadata["setting"], name=f.name, default=f.default, kind=_KINDS[f.type])
    for f in fields(GenerationConfig))
#: The range (inclusive) the engine accepts for every numeric setting; the bounds keep every
#: run finite in time and memory (e.g. answers of at most 4096 slots, 100 samples).
RANGES: dict[str, tuple] = {st.name: (st.low, st.high) for st in SETTINGS if st.high is not None}


def operator_limit(name: str, environ=None) -> int:
    """An operator's cap on a setting that declares one (``limit``; e.g. ``"k1"``) from the
    environment, ``MEDAL_MAX_<NAME>``, else its declared default: what every reader of a
    trace outside the served app holds it to (the served app reads the same variable, or
    its flag: :mod:`medal.serving`). A bad value is an InputError naming the variable."""
    import os
    st = next((s for s in SETTINGS if s.name == name and s.limit is not None), None)
    if st is None:
        raise KeyError(f"{name} declares no operator limit")
    env = "MEDAL_" + (name if name.startswith("max_") else f"max_{name}").upper()
    text = (os.environ if environ is None else environ).get(env, "")
    if not str(text).strip():
        return st.limit[0]
    try:
        value = int(str(text).strip())
    except ValueError:
        value = None
    if value is None or not 1 <= value <= st.high:
        raise InputError(f"{env} must be a whole number from 1 to {int(st.high)}, got {text!r}")
    return value
