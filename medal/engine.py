"""One engine for every strategy: a :class:`Run` yields events; observers watch them.

    run = Run(model, task="countdown", problem=p, strategy="medal")
    result = run.finish()            # or: while (ev := run.step()): ...  (step by step)

Strategies (``STRATEGIES``):

========================= ================================================================
medal                     decomposition prompt, MCTS initialisation, best candidate, phase C
medal-no-mcts             decomposition prompt, phase C alone (paper's "w/o MCTS")
medal-no-decomposition    MEDAL on the original prompt (paper's "w/o T. Dcp.")
medal-margin-only         MEDAL scoring by top-2 margin only (paper's "w/o Cf. + t2")
greedy                    LLaDA low-confidence remasking (alias: low-confidence)
random                    LLaDA random remasking
entropy                   Dream's entropy order
margin                    Dream's top-2 margin order
eb                        entropy-bounded sampler (adaptive slots per step)
bst5                      Best-of-N (N = samples) sampled decodes, majority vote on answers
threshold                 Fast-dLLM's parallel decoding: every slot of p >= threshold a step
info-gain                 Info-Gain sampler (Yang et al., ICML 2026): one-step lookahead
medal-order               control *order*: MEDAL's slot schedule, no alternatives (K2=1, C=1)
medal-choice              control *choice*: the search's candidates, no UCB (selection greedy)
medal-branching           control *exploration*: the full search where it branches (C = 2 K2)
medal-random-choice       control *r_IG*: MEDAL's search and candidates, the winner at random
medal-explore             control *exploration at C fixed*: the explore mode's search, C = 3
medal-wide-pool           control *pool size*: C = 2 K2 candidates, no exploration (no UCB)
ots                       Order-Token Search (Shen et al. 2026): beams over order and tokens
soar                      SOAR (Cao et al. 2026): beam search only where the model is unsure
========================= ================================================================

The three controls (issue 30) isolate what the search's parts buy: ``medal-order`` the
order of writing (L_c commitments one at a time by the confidence score, then phase C),
``medal-choice`` choosing among alternatives by r_IG without UCB, ``medal-branching``
what UCB and c add once the search must leave its first line (C > K2 candidates).
``medal-random-choice`` (issue 38) isolates the information-gain choice: the same search,
so the same candidates, as ``medal`` on every problem, and the winner drawn uniformly
among them from a stream of its own (:func:`random_choice`). ``medal-branching`` changes two
things at once -- the search explores (UCB leaves the first line) and the winner's pool
widens from C = 3 to C = 2 K2 = 10 -- so two more controls take them apart:
``medal-explore`` explores at the pool MEDAL has (C unchanged; the ``--search explore``
mode's settings: at most one candidate per parent, c = 1, so the C candidates come from C
different parents), and ``medal-wide-pool`` widens the pool without exploring (C = 2 K2
with the choice control's greedy selection: the best-r_IG line first, then the next-best
node by r_IG, never a UCB bonus).

Baselines use the original prompt unless ``decompose`` is set explicitly.
"""
from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Callable, Iterator

import torch

from .config import SEARCH_MODES, STRATEGY_ALIASES, GenerationConfig
from .cost import cost_record, tokens_per_forward, valid_output_tokens
from .decoding import DecodeState, decode
from .errors import InputError
from .extensions import borrowed
from .events import (CandidateChosen, Event, Forced, RunFinished, RunStarted, SampleFinished,
                     SearchFinished)
from .models.base import DiffusionLM
from .runner import ForwardRequest, ModelRunner
from .scores import (cumulative_information_gain, entropy_total, rollout_path_gain,
                     uncertainty_penalised_gains)
from .search import MCTS, ots_search, soar_search
from .tasks import Task, get_task, task_of_trace
from .tasks.decomposition import decompose_prompt


@dataclass
class SearchOutcome:
    """What MEDAL's search decided: the winner among its candidates and why, why the search
    stopped, and what it cost (before phase C)."""
    winner: int                # the winning candidate's node id
    candidates: list[dict]     # every candidate: node, path, cumulative IG, score, final
    stop_reason: str           # "candidates", "budget", "exhausted", ...
    iterations: int
    why: str                   # the candidate choice, in words
    candidate_choice: str      # the rule that chose (GenerationConfig.candidate_choice)
    seconds: float             # the search's wall time
    model_seconds: float       # of it, in the network
    forwards: int              # its batched model calls
    stats: dict                # MCTS.stats: depth, branching, distinct first commitments

    def to_json(self) -> dict:
        return {"winner": self.winner, "candidates": self.candidates,
                "stop_reason": self.stop_reason, "iterations": self.iterations,
                "why": self.why, "search_seconds": self.seconds,
                "search_model_seconds": self.model_seconds, "search_forwards": self.forwards,
                "search_stats": self.stats, "candidate_choice": self.candidate_choice}


@dataclass
class VoteOutcome:
    """Best-of-N's vote: every sample's answer and the one chosen."""
    votes: dict[str, int]      # answer -> samples that gave it
    chosen_sample: int
    samples: list[dict]        # each sample's text, answer, verdict

    def to_json(self) -> dict:
        return {"votes": self.votes, "chosen_sample": self.chosen_sample,
                "samples": self.samples}


@dataclass
class GenerationResult:
    strategy: str
    answer_ids: list[int]
    text: str                  # decoded answer (up to EOS)
    answer: str                # the task's extracted answer
    verified: bool | None      # None when the prompt is not a known problem
    forwards: int              # batched model calls (NFE)
    sequence_forwards: int     # sequences those calls evaluated
    seconds: float
    model_seconds: float
    order: list[int | None]    # step at which each slot was unmasked
    #: MEDAL's search (the medal strategies; None for the others)
    search: SearchOutcome | None = None
    #: Best-of-N's vote (bst5; None for the others)
    vote: VoteOutcome | None = None
    #: each decode step's entropy of every slot (None where the strategy keeps no one row)
    entropy_rows: list | None = field(default=None, repr=False)
    cache_hits: int = 0        # evaluations answered from the cache (no forward)
    # what the strategy would cost on its own (no cache shared with another strategy):
    # equal to forwards / sequence_forwards except for the greedy comparison
    standalone_forwards: int | None = None
    standalone_sequences: int | None = None
    token_passes: int = 0      # token positions the network processed (medal.cost)
    valid_tokens: int = 0      # the answer's output tokens (medal.cost)
    #: a beam search's record (ots, soar; None for the others): its nodes with their
    #: parents (a tree), its steps, the winner and why (``BeamOutcome.to_json``)
    beam: dict | None = None
    #: the run's JSON trace, when it was recorded (``medal.generate(..., trace=True)``)
    trace: dict | None = field(default=None, repr=False, compare=False)

    def __post_init__(self):
        if self.standalone_forwards is None:
            self.standalone_forwards = self.forwards
        if self.standalone_sequences is None:
            self.standalone_sequences = self.sequence_forwards

    @property
    def tpf(self) -> float | None:
        """Tokens per forward (:mod:`medal.cost`)."""
        return tokens_per_forward(self.valid_tokens, self.sequence_forwards)

    def cost(self) -> dict:
        """The run's cost on the one axis every result reports (:mod:`medal.cost`)."""
        return cost_record(self.forwards, self.sequence_forwards, self.token_passes,
                           self.valid_tokens)

    def to_json(self) -> dict:
        return {"strategy": self.strategy, "answer_ids": self.answer_ids, "text": self.text,
                "answer": self.answer, "verified": self.verified, "forwards": self.forwards,
                "sequence_forwards": self.sequence_forwards, "cache_hits": self.cache_hits,
                "token_passes": self.token_passes, "valid_tokens": self.valid_tokens,
                "tpf": self.tpf,
                "standalone_forwards": self.standalone_forwards,
                "standalone_sequences": self.standalone_sequences, "seconds": self.seconds,
                "model_seconds": self.model_seconds, "order": self.order,
                **({} if self.search is None else self.search.to_json()),
                **({} if self.vote is None else self.vote.to_json()),
                **({} if self.beam is None else {"beam_search": self.beam}),
                **({} if self.entropy_rows is None else {"entropy_rows": self.entropy_rows})}


#: the controls of issue 30: each a MEDAL run with these settings (from the run's config)
CONTROLS = {"medal-order": lambda cfg: {"k2": 1, "candidates": 1},
            "medal-choice": lambda cfg: {"selection": "greedy"},
            "medal-branching": lambda cfg: {"candidates": 2 * cfg.k2},
            # issue 38: MEDAL's settings; only the candidate choice differs (random_choice)
            "medal-random-choice": lambda cfg: {},
            # issue 38: exploration at a fixed pool, and the pool widened without exploring
            "medal-explore": lambda cfg: dict(SEARCH_MODES["explore"]),
            "medal-wide-pool": lambda cfg: {"candidates": 2 * cfg.k2, "selection": "greedy"}}
MEDAL_STRATEGIES = {"medal", "medal-no-mcts", "medal-no-decomposition", "medal-margin-only",
                    *CONTROLS}
ALIASES = STRATEGY_ALIASES


class Run:
    """A generation in progress. Iterate with :meth:`step`; finish with :meth:`finish`."""

    def __init__(self, model: DiffusionLM, *, task: str | Task = "countdown",
                 prompt: str | None = None, problem=None, strategy: str = "medal",
                 config: GenerationConfig | None = None, observers: tuple = (),
                 compare_greedy: bool = False, decompose: bool | None = None,
                 trace: bool = False, fork=None):
        self.model = model
        #: a fork's intervention (:class:`medal.fork.ForkSpec`), or None
        self.fork_spec = fork
        self.task = task if isinstance(task, Task) else get_task(task)
        strategy = ALIASES.get(strategy, strategy)
        if strategy not in STRATEGIES:
            raise InputError(f"unknown strategy {strategy!r}; choose one of: "
                             f"{', '.join(STRATEGIES)} (aliases: {', '.join(ALIASES)})")
        self.strategy = strategy
        cfg = config or GenerationConfig()
        if prompt is None and problem is None:
            raise InputError("give a prompt or a problem")
        if problem is not None and not isinstance(problem, self.task.problem_type):
            problem = self.task.parse_problem(problem)
        if problem is None:
            model.check_prompt(prompt)
            problem = self.task.problem_from_prompt(prompt)
        self.problem = problem
        if cfg.template >= self.task.prompt_templates:
            self.task.templated_prompt(problem, cfg.template)   # names the task's templates
        if (prompt is not None and cfg.template and problem is not None
                and prompt != self.task.templated_prompt(problem, cfg.template)):
            # (a re-run of a trace gives the prompt the template wrote: that is accepted)
            raise InputError(f"the prompt is not the problem written in template "
                             f"{cfg.template}: the template writes a problem's prompt; give "
                             "the problem alone, or leave the template at 0")
        base_prompt = (prompt if prompt is not None
                       else self.task.templated_prompt(problem, cfg.template))
        check_trained_template(model, self.task, problem, base_prompt, cfg.template)
        if strategy == "medal-no-decomposition":
            decompose = False
        if not self.task.decomposable:
            if decompose or cfg.decompose:
                raise InputError(f"the {self.task.name} task passes the prompt to the model "
                                 "as written: it has no decomposition; leave decompose unset "
                                 "(or false)")
            decompose = False
        if decompose is None:
            decompose = cfg.decompose
        if decompose is None:  # the strategy's and task's default
            decompose = (strategy in MEDAL_STRATEGIES and strategy != "medal-no-decomposition"
                         and (self.task.default_decompose or not model.builtin))
        use_decomposition = decompose
        self.decompose = use_decomposition
        self.prompt = base_prompt
        self.model_prompt = decompose_prompt(self.task.name, base_prompt, problem,
                                             decompose=use_decomposition,
                                             n_subtasks=cfg.n_subtasks, builtin=model.builtin)
        prompt_ids = model.encode_prompt(self.model_prompt)
        if strategy == "medal-margin-only":
            # the paper's "w/o Cf. + t2" changes the search; scoring_scope="all" also
            # changes phase C
            cfg = replace(cfg, scoring="margin")
        if strategy in CONTROLS:
            cfg = replace(cfg, **CONTROLS[strategy](cfg))
        # a block-diffusion model (LLaDA2) lays its blocks out from the sequence's start:
        # its answer ends a block, its first block is the rest of the prompt's
        # (GenerationConfig.resolved, medal.decoding.block_of)
        blocks_of_sequence = bool(getattr(model, "block_diffusion", False))
        self.config = cfg.resolved(model.default_gen_length, self.task.default_lc,
                                   model.max_gen_length,
                                   self.task.default_block_length if model.builtin else
                                   getattr(model, "default_block_length", None),
                                   self.task.default_steps if model.builtin else None,
                                   prompt_length=len(prompt_ids) if blocks_of_sequence
                                   else None)
        self.fixed = fixed_slots(model, self.task, self.config.gen_length)
        suppress = ((model.eos_id,) if self.config.logits_eos_inf and model.eos_id is not None
                    else ())
        self.runner = ModelRunner(model, prompt_ids, self.config.gen_length, fixed=self.fixed,
                                  suppress=suppress)
        if getattr(model, "kv_cache_mode", None):  # Fast-dLLM's KV cache (opt-in, approximate)
            self.runner.kv_cache = model.start_kv_cache(self.config.block_length,
                                                        len(prompt_ids))
        elif blocks_of_sequence:  # the run's attention blocks go with each of its forwards
            self.runner.kv_cache = model.attention_blocks(self.config.block_length)
        self.generator = torch.Generator().manual_seed(self.config.seed)
        self.observers = list(observers)
        self.recorder = None
        if trace:
            from .trace import TraceRecorder
            self.recorder = TraceRecorder(model)
            self.observers.insert(0, self.recorder)
        self.compare_greedy = compare_greedy
        self.mcts: MCTS | None = None
        self.result: GenerationResult | None = None
        self.comparison: GenerationResult | None = None
        self._clock = 0.0          # seconds spent inside step(): pauses between steps excluded
        self._step_started: float | None = None
        self._events = self._all_events()

    # ------------------------------------------------------------------ driving
    def step(self) -> Event | None:
        """Advance by one event (one MCTS phase or one decode step); None when done."""
        self._step_started = time.perf_counter()
        try:
            event = next(self._events)
        except StopIteration:
            return None
        finally:
            self._clock += time.perf_counter() - self._step_started
            self._step_started = None
        if isinstance(event, ForwardRequest):
            # lock-step only (runner.defer, medal.bench.lock_step): a forward for the
            # scheduler, no event; the next step runs it here if the scheduler did not
            return event
        for obs in self.observers:
            obs(event)
        return event

    def finish(self, until: Callable[[Event], bool] | None = None) -> GenerationResult | None:
        """Run to the end (or until ``until(event)`` is true); returns the result."""
        while (event := self.step()) is not None:
            if until is not None and until(event):
                break
        return self.result

    def charge(self, seconds: float) -> None:
        """Count ``seconds`` of work done for this run outside :meth:`step`: a lock-step
        scheduler's share of a forward it ran for several runs (medal.bench.lock_step)."""
        self._clock += seconds

    def elapsed(self) -> float:
        """Seconds of work so far (time between steps, e.g. a user reading the app, is
        not counted)."""
        running = time.perf_counter() - self._step_started if self._step_started else 0.0
        return self._clock + running

    @property
    def trace(self) -> dict | None:
        """The trace so far (None unless the run was made with ``trace=True``): the
        recorder's live dict, updated in place as the run goes on; copy it to keep a snapshot."""
        return self.recorder.to_json() if self.recorder else None

    @property
    def done(self) -> bool:
        return self.result is not None and self._finished

    def _repr_html_(self) -> str | None:
        """In a notebook a traced run shows itself as the viewer (``medal.show``)."""
        trace = self.trace
        if not trace or not trace.get("run"):
            return None
        return borrowed("show")(trace)._repr_html_()

    _finished = False

    def _all_events(self) -> Iterator[Event]:
        yield RunStarted(strategy=self.strategy, prompt=self.prompt, model_prompt=self.model_prompt,
                         config=self.config.to_json(), model=self.model.describe(),
                         problem=self.problem.to_json() if self.problem is not None else None,
                         fixed={s: (t, self.model.token_text(t)) for s, t in self.fixed.items()},
                         task=self.task.name,
                         fork=self.fork_spec.record() if self.fork_spec is not None else None)
        self.result = yield from STRATEGIES[self.strategy](self)
        if self.compare_greedy:
            self.comparison = yield from self._comparison()
        self._finished = True
        yield RunFinished(result=self.result, comparison=self.comparison)

    def _comparison(self):
        """Greedy low-confidence decoding of the same prompt, for the order/entropy views.

        It shares the run's cache (states the run already evaluated, the root at least,
        are not recomputed). It reports the forwards it actually ran, the sequences they
        evaluated and its cache hits, like every strategy, and beside them its standalone
        cost (greedy on its own: one forward of one sequence per step)."""
        runner = self.runner.sharing_cache()
        state = DecodeState(answer=runner.initial_answer(), order=[None] * self.config.gen_length,
                            fixed=frozenset(self.fixed))
        t0 = self.elapsed()
        yield from decode(runner, state, replace(self.config, temperature=0.0), "low_confidence",
                          "compare_greedy", None, self.model.token_text)
        result = self._result("greedy", state, runner, t0, entropy_rows=state.entropy_rows)
        result.standalone_forwards = result.standalone_sequences = runner.requested
        return result

    # ------------------------------------------------------------------ results
    def _result(self, strategy: str, state: DecodeState, runner: ModelRunner, t0: float,
                **outcome) -> GenerationResult:
        """The result of ``state``; ``outcome``: the strategy's own (``search``, ``vote``,
        ``entropy_rows``)."""
        text = self.model.decode(state.answer)
        answer = self.task.extract_answer(text)
        verified = self.task.verify(answer, self.problem) if self.problem is not None else None
        return GenerationResult(strategy=strategy, answer_ids=state.answer.tolist(), text=text,
                                answer=answer, verified=verified, forwards=runner.forwards,
                                sequence_forwards=runner.sequences,
                                cache_hits=runner.cache_hits,
                                token_passes=runner.token_passes,
                                valid_tokens=valid_output_tokens(state.answer.tolist(),
                                                                 self.model.end_ids, self.fixed),
                                seconds=self.elapsed() - t0,
                                model_seconds=runner.model_seconds, order=state.order,
                                **outcome)

    def verifier(self):
        """answer ids -> verdict, for the beyond-the-paper "ig+verifier" reward; None when
        the prompt is not a problem the task can check."""
        if self.problem is None:
            return None
        return lambda ids: self.task.verify(self.task.extract_answer(self.model.decode(ids)),
                                            self.problem)

    def fork(self, *, node: int | None = None, step: int | None = None, actions,
             then: str | None = None, **options) -> "Run":
        """A new run that re-runs this one and changes one decision: at tree node ``node``
        or decode step ``step``, the (slot, token) ``actions`` are forced; ``then``
        "search" or "decode" says how it goes on. Needs this run's trace (``trace=True``).
        Returns the new run, not yet started: ``run.fork(...).finish()``. See
        :func:`medal.fork.fork` for every option."""
        return borrowed("fork")(self, node=node, step=step, actions=actions, then=then,
                                **options)

    @classmethod
    def from_trace(cls, trace: dict, model: DiffusionLM, *, task: str | None = None,
                   fork=None, observers: tuple = ()) -> "Run":
        """A new run of what ``trace`` records: its task, prompt, strategy, every parameter
        and seed, with the greedy comparison if it has one, traced; ``fork`` (a
        :class:`medal.fork.ForkSpec`) changes one decision. Not yet started. Every re-run
        of a trace (``medal repro``, a fork, the examples' check) is this."""
        run_info = trace["run"]
        task = task or run_info.get("task") or task_of_trace(trace)
        if task is None:
            raise InputError("the trace does not say which task it ran (no run.task, and "
                             "the prompt is not a Countdown, Sudoku or Pick problem); give "
                             "the task")
        config = GenerationConfig.from_json(dict(run_info["config"]))
        return cls(model, task=task, prompt=run_info["prompt"], strategy=run_info["strategy"],
                   config=config, compare_greedy=trace.get("comparison") is not None,
                   trace=True, observers=observers, fork=fork)

    def forced_steps(self) -> dict | None:
        """A step fork's {step: [(slot, token), ...]} for the run's answer decode."""
        spec = self.fork_spec
        return {spec.step: list(spec.forced)} if spec is not None and spec.step is not None else None

    def new_state(self) -> DecodeState:
        return DecodeState(answer=self.runner.initial_answer(),
                           order=[None] * self.config.gen_length, fixed=frozenset(self.fixed))


def rerun(trace: dict, model: DiffusionLM, *, task: str | None = None) -> dict:
    """Run again, to the end, what ``trace`` records (:meth:`Run.from_trace`); the new trace
    as plain JSON values (lists, not tuples), comparable with one read from a file."""
    import json
    run = Run.from_trace(trace, model, task=task)
    run.finish()
    return json.loads(json.dumps(run.trace))


def check_trained_template(model: DiffusionLM, task: Task, problem, prompt: str,
                           template: int) -> None:
    """Refuse a run whose prompt is in a template the model never read: a model that
    records its templates (the built-in ones), run on its own task in a later template --
    set, or a prompt written in it. Its answers there would measure the unread form, not
    the decoder. The message names the shipped models trained on that template."""
    trained = model.prompt_templates
    if trained is None or model.trained_task != task.name or problem is None:
        return
    if template == 0 and prompt is not None:
        # a prompt typed in a later template's form counts as that template (with anything
        # around it, e.g. a decomposition's suffix; both forms in one prompt: the later)
        written = [t for t in range(task.prompt_templates)
                   if task.templated_prompt(problem, t) in prompt]
        template = max(written, default=0)
    if template < trained:
        return
    from .models.builtin import models_for_template
    others = [m for m in models_for_template(task.name, template) if m != model.name]
    read = "template 0" if trained == 1 else f"templates 0..{trained - 1}"
    raise InputError(f"{model.name} was trained on the {task.name} task's prompt {read} "
                     f"only, and this prompt is in template {template}: "
                     + (f"run it with {' or '.join(others)} (trained on it)"
                        if others else "train a model on it (python -m medal train "
                                       f"--task {task.name} --templates {template + 1})")
                     + ", or write the problem in template 0")


def fixed_slots(model: DiffusionLM, task: Task, gen_length: int) -> dict[int, int]:
    """The task's fixed answer slots (:attr:`Task.answer_template`) as token ids. Only for
    the character-level built-in models, where slot i is character i of the answer; an
    LLM's tokenizer does not place a character at a known slot, so there: none."""
    if task.answer_template is None or not model.builtin:
        return {}
    tokenizer = getattr(model, "tokenizer", None)
    out = {}
    for slot, text in task.answer_template(gen_length).items():
        ids = tokenizer.encode(text) if tokenizer is not None else []
        if len(ids) == 1 and 0 <= slot < gen_length:
            out[slot] = ids[0]
    return out


# ---------------------------------------------------------------------- strategies

def _plain(rule: str):
    def strategy(run: Run):
        state = run.new_state()
        yield from decode(run.runner, state, run.config, rule, "decode", run.generator,
                          run.model.token_text, force=run.forced_steps())
        return run._result(run.strategy, state, run.runner, 0.0,
                           entropy_rows=state.entropy_rows)
    return strategy


def _phase_c_alone(run: Run):
    return (yield from _plain("confidence")(run))


def _best_of_n(run: Run):
    """N sampled low-confidence decodes; the most common extracted answer wins (ties: the
    earliest sample). Sampling temperature: the config's, or 1.0 if it is 0."""
    cfg = replace(run.config, temperature=run.config.temperature or 1.0)
    samples = []
    for k in range(cfg.samples):
        state = run.new_state()
        yield from decode(run.runner, state, cfg, "low_confidence", f"sample-{k}",
                          run.generator, run.model.token_text)
        res = run._result(run.strategy, state, run.runner, 0.0)
        samples.append((state, res))
        yield SampleFinished(phase=f"sample-{k}", text=res.text, answer=res.answer,
                             verified=res.verified)
    votes = Counter(res.answer for _, res in samples)
    top = max(votes.values())
    k = next(i for i, (_, res) in enumerate(samples) if votes[res.answer] == top)
    state, _ = samples[k]
    return run._result(run.strategy, state, run.runner, 0.0, vote=VoteOutcome(
        votes=dict(votes), chosen_sample=k,
        samples=[{"text": r.text, "answer": r.answer, "verified": r.verified}
                 for _, r in samples]))


def _fork_at_node(spec, mcts: MCTS):
    """A node fork, after the parent's search: commit the forced actions at the node (new
    nodes announced by a :class:`Forced` event), then go on searching below them (then
    "search": returns None) or hand the forced node to phase C (then "decode")."""
    path, new = mcts.commit(spec.node, spec.forced)
    yield Forced(iteration=mcts.iteration, node=spec.node, path=[n.id for n in path],
                 new=new, then=spec.then)
    if spec.then == "decode":
        return path[-1]
    if mcts.refocus(path[-1], made_new=bool(new)):
        while not mcts.done:
            yield from mcts.iterate()
    return None


def _medal(run: Run):
    """MEDAL: MCTS initialisation (L_c commitments), candidate choice, then phase C.

    In block mode the search makes the first L_c commitments of the current block -- the
    answer's first block -- as the paper's block mode does; phase C finishes that block
    in its remaining steps (the commitments are its first steps), then each later block.
    On a block-diffusion model (LLaDA2) that first block is the rest of the block the
    prompt ends in (:meth:`GenerationConfig.resolved`), and L_c must fit in it."""
    cfg = run.config
    t_search = run.elapsed()
    model_before = run.runner.model_seconds
    # the search's r_IG reads every masked slot: with the dual KV cache its forwards
    # compute the later blocks too (BlockKVCache.fresh_after; docs/SPEED.md)
    # (a block-diffusion model's block attention is no cache: nothing to set)
    kv_cache = run.runner.kv_cache
    if not hasattr(kv_cache, "fresh_after"):
        kv_cache = None
    if kv_cache is not None:
        kv_cache.fresh_after = True
    yield from run.runner.prepare(run.runner.initial_answer()[None])  # the root's forward (lock-step)
    mcts = MCTS(run.runner, cfg, run.generator, verifier=run.verifier())
    run.mcts = mcts
    yield mcts.root_event()
    if mcts.root.exhausted:
        mcts.stop_reason = "exhausted"
    while not mcts.done:
        yield from mcts.iterate()
    forced = None
    if run.fork_spec is not None and run.fork_spec.node is not None:
        forced = yield from _fork_at_node(run.fork_spec, mcts)   # the search may go on
    if kv_cache is not None:
        kv_cache.fresh_after = False
    search_seconds = run.elapsed() - t_search
    search_model_seconds = run.runner.model_seconds - model_before
    search_forwards = run.runner.forwards
    candidates = mcts.candidates if mcts.candidates else mcts.fallback_candidates()
    search_stats = mcts.stats(candidates)
    yield SearchFinished(reason=mcts.stop_reason, iterations=mcts.iteration,
                         candidates=[c.id for c in candidates], stats=search_stats)
    root = mcts.root.evaluation
    decode_masked = run.model.decode_masked
    verify = run.verifier()
    def record(c) -> dict:
        ev = c.evaluation
        return {
            "node": c.id, "depth": c.depth,
            "cumulative_ig": cumulative_information_gain(root.entropy, root.masked,
                                                         ev.entropy, ev.masked),
            "root_entropy_sum": entropy_total(root.entropy, root.masked),
            "remaining_entropy_sum": entropy_total(ev.entropy, ev.masked),
            "r_ig": c.r_ig, "Q": c.Q, "N": c.N, "verified": c.verified,
            "sequence": decode_masked(c.answer),
            "completion": decode_masked(c.completion) if c.completion is not None else None,
            # the task's verdict on that one-shot completion (None: no verifier here)
            "completion_verified": (verify(c.completion) if verify is not None
                                    and c.completion is not None else None),
        }
    records = [record(c) for c in candidates]
    bonus = cfg.verifier_bonus if mcts.verifier is not None else 0.0
    finals = {}
    replay = {}
    if cfg.candidate_choice in ("rollout", "vote"):
        # the paper's "each candidate is then fully rolled out by the DLM to compute its
        # information-gain reward": phase C on every candidate, scored on its rollout
        for c, r in zip(candidates, records):
            replay[c.id] = run.generator.get_state()
            st = _state_from_node(run, c)
            yield from decode(run.runner, st, cfg, "confidence", f"phase_c-{c.id}",
                              run.generator, run.model.token_text)
            res = run._result(run.strategy, st, run.runner, 0.0)
            finals[c.id] = {"text": res.text, "answer": res.answer, "verified": res.verified}
            r["rollout_ig"] = rollout_path_gain(st.entropy_rows)
        votes = Counter(finals[c.id]["answer"] for c in candidates)
        for c, r in zip(candidates, records):
            r["votes"] = votes[finals[c.id]["answer"]]
            r["score"] = r["rollout_ig"] + bonus * bool(finals[c.id]["verified"])
        if cfg.candidate_choice == "vote":
            best = max(range(len(records)),
                       key=lambda i: (records[i]["votes"], records[i]["score"], -i))
        else:
            best = max(range(len(records)), key=lambda i: (records[i]["score"], -i))
    else:
        for c, r in zip(candidates, records):
            r["score"] = r["cumulative_ig"] + bonus * bool(r["verified"])
            if cfg.reward == "ig-certain":   # beyond the paper (issue 38)
                committed = [n.action.slot for n in c.path()[1:]]
                r["score"] -= r["cumulative_ig"] - uncertainty_penalised_gains(
                    [r["cumulative_ig"]], [float(root.entropy[committed].sum())],
                    r["root_entropy_sum"], cfg.uncertainty_penalty)[0]
        best = max(range(len(records)), key=lambda i: (records[i]["score"], -i))
    if run.strategy == "medal-random-choice":
        best, by_ig = random_choice(len(records), cfg.seed), best
    winner = candidates[best]
    others = [r for i, r in enumerate(records) if i != best]
    if cfg.candidate_choice == "search":
        why = ((f"[reward ig+verifier, beyond the paper] node {winner.id}'s simulation "
                f"{'verifies' if winner.verified else 'does not verify'}; " if bonus else "")
               + f"node {winner.id} has the highest cumulative information gain "
               f"({records[best]['cumulative_ig']:.4f}: the search's commitments left the "
               f"least entropy on the remaining slots, "
               f"{records[best]['remaining_entropy_sum']:.3f} of "
               f"{records[best]['root_entropy_sum']:.3f})"
               + ("; the others: " + ", ".join(f"node {r['node']} {r['cumulative_ig']:.4f}"
                                                 for r in others)
                  if others else "; it was the only one"))
    else:
        head = (f"[candidate choice by vote, beyond the paper] node {winner.id}'s answer "
                f"{finals[winner.id]['answer']!r} has {records[best]['votes']} of "
                f"{len(records)} rollouts' votes (ties: rollout information gain); "
                if cfg.candidate_choice == "vote" else "")
        why = (head + ("[reward ig+verifier, beyond the paper] node "
                       f"{winner.id}'s rollout {'verifies' if finals[winner.id]['verified'] else 'does not verify'}; "
                       if bonus else "")
               + f"every candidate was rolled out by phase C; node {winner.id}'s rollout has "
               f"the highest information gain (mean r_IG over its steps "
               f"{records[best]['rollout_ig']:.4f})"
               + ("; the others: " + ", ".join(f"node {r['node']} {r['rollout_ig']:.4f}"
                                                 for r in others)
                  if others else "; it was the only one"))
    if cfg.reward == "ig-certain" and cfg.candidate_choice == "search":
        why = (f"[reward ig-certain, beyond the paper] node {winner.id} has the highest "
               "cumulative information gain less its commitments' share of the root's "
               f"entropy ({records[best]['score']:.4f}; its cumulative IG "
               f"{records[best]['cumulative_ig']:.4f})"
               + ("; the others: " + ", ".join(f"node {r['node']} {r['score']:.4f}"
                                                 for r in others)
                  if others else "; it was the only one"))
    if run.strategy == "medal-random-choice":
        why = (f"[random-choice control] node {winner.id} was drawn uniformly at random among "
               f"the {len(records)} candidates (its score {records[best]['score']:.4f}); the "
               f"rule '{cfg.candidate_choice}' would have chosen node {candidates[by_ig].id} "
               f"({records[by_ig]['score']:.4f})")
    if forced is not None and forced is not winner:
        # a fork at a node, then decode: phase C starts from the forced node, whatever the
        # search would have chosen
        if forced not in candidates:
            candidates.append(forced)
            r = record(forced)
            r["score"] = r["cumulative_ig"] + bonus * bool(r["verified"])
            records.append(r)
        chosen, best = winner, candidates.index(forced)
        winner = forced
        why = (f"[fork] node {forced.id} was forced (a fork at node {run.fork_spec.node}, "
               f"then decode); the search alone would have chosen node {chosen.id}: {why}")
    if cfg.complete_candidates and not replay:
        for c in candidates:
            if c is winner:
                continue
            st = _state_from_node(run, c)
            yield from decode(run.runner, st, cfg, "confidence", f"phase_c-{c.id}",
                              run.generator, run.model.token_text)
            res = run._result(run.strategy, st, run.runner, 0.0)
            finals[c.id] = {"text": res.text, "answer": res.answer, "verified": res.verified}
    state = _state_from_node(run, winner)
    yield CandidateChosen(candidates=records, winner=winner.id, why=why)
    if winner.id in replay:
        # the winner's rollout is the answer: replayed as phase C with the same random
        # draws, so every state is a cache hit (no forward)
        run.generator.set_state(replay[winner.id])
    yield from decode(run.runner, state, cfg, "confidence", "phase_c", run.generator,
                      run.model.token_text, force=run.forced_steps())
    result = run._result(run.strategy, state, run.runner, 0.0)
    finals[winner.id] = {"text": result.text, "answer": result.answer, "verified": result.verified}
    finals.update((yield from _display_finals(run, [c for c in candidates if c.id not in finals])))
    for r in records:
        r["final"] = finals.get(r["node"])
    result.search = SearchOutcome(
        winner=winner.id, candidates=records, stop_reason=mcts.stop_reason,
        iterations=mcts.iteration, why=why, candidate_choice=cfg.candidate_choice,
        seconds=search_seconds, model_seconds=search_model_seconds, forwards=search_forwards,
        stats=search_stats)
    result.entropy_rows = state.entropy_rows
    return result


def random_choice(n: int, seed: int) -> int:
    """The ``medal-random-choice`` control's winner: one of ``n`` candidates, uniformly, from
    a stream seeded by the run's seed alone -- not the run's generator, so the search, its
    candidates and phase C draw exactly what ``medal``'s do, and only the choice differs."""
    generator = torch.Generator().manual_seed(seed * 1_000_003 + 38)
    return int(torch.randint(n, (1,), generator=generator).item())


#: answers up to this many slots get every losing candidate completed for display
DISPLAY_COMPLETION_MAX_SLOTS = 64


def _display_finals(run: Run, losers: list):
    """Each losing candidate completed by phase C, so the candidate table can show what it
    would have answered. Done after the run's answer, on a runner that shares the cache
    but keeps its own counters (the run's cost and its random stream are untouched), and
    without events (no phase-C steps of losers in the trace). Skipped for long answers
    (LLaDA's 256 slots: that many forwards per candidate) -- ``complete_candidates``
    decodes them as part of the run instead. A generator that yields only its forwards'
    requests, in lock-step (a scheduler may batch them), and returns the finals."""
    if not losers or run.config.gen_length > DISPLAY_COMPLETION_MAX_SLOTS:
        return {}
    runner = run.runner.sharing_cache()
    runner.defer = run.runner.defer
    out = {}
    for c in losers:
        state = _state_from_node(run, c)
        generator = torch.Generator().manual_seed(run.config.seed * 100_003 + c.id)
        for item in decode(runner, state, run.config, "confidence", f"phase_c-{c.id}",
                           generator, run.model.token_text):
            if isinstance(item, ForwardRequest):
                yield item   # not its steps: they are no events
        res = run._result(run.strategy, state, runner, 0.0)
        out[c.id] = {"text": res.text, "answer": res.answer, "verified": res.verified,
                     "display_only": True}
    return out


def _state_from_node(run: Run, node) -> DecodeState:
    """The decode state after the search's commitments along ``node``'s path."""
    order: list[int | None] = [None] * run.config.gen_length
    for step, n in enumerate(node.path()[1:]):
        order[n.action.slot] = step
    # search_steps "count": the commitments are the first steps of phase C's budget
    used = node.depth if getattr(run.config, "search_steps", "count") == "count" else 0
    state = DecodeState(answer=node.answer.clone(), order=order, step=node.depth,
                        steps_in_block={0: used}, fixed=frozenset(run.fixed))
    return state


def _beam_search(search):
    """A beam search's strategy (``ots``, ``soar``): the search (its forwards are the run's
    cost), then its winner's path replayed as the run's decode steps -- each step's figures
    are those of the state the search read there (no forward), its cost the search step's
    whole cost (every beam's forward, and OTS's scoring forward) -- so the viewer steps the
    answer as any decode; the whole beam tree is the result's ``beam_search``."""
    from .decoding import eligible_candidates
    from .events import DecodeStep
    from .scores import top2_margin

    def strategy(run: Run):
        outcome = yield from search(run)
        runner, model = run.runner, run.model
        forwards, sequences, hits = runner.forwards, runner.sequences, runner.cache_hits
        state = run.new_state()
        path = outcome.winner.path()[1:]
        for k, node in enumerate(path):
            batch, row = node.source
            answer, masked, H, top_tokens, top_probs = (a[row] for a in batch.arrays)
            eligible, block = eligible_candidates(masked, run.config.block_length)
            entropy_row = [h if m else None for h, m in zip(H.tolist(), masked.tolist())]
            state.entropy_rows.append(entropy_row)
            state.answer = node.answer.clone()
            for slot in node.slots:
                state.order[slot] = k
            margin = top2_margin(top_probs)
            yield DecodeStep(phase="decode", step=k, block=block, slots=list(node.slots),
                             tokens=list(node.tokens),
                             token_texts=[model.token_text(t) for t in node.tokens],
                             scores=list(node.p), entropy=entropy_row,
                             answer=model.decode_masked(state.answer),
                             forwards=node.cost[0], sequences=node.cost[1],
                             cache_hits=node.cost[2],
                             eligible={"slots": eligible.tolist(),
                                       "p": top_probs[eligible, 0].tolist(),
                                       "margin": margin[eligible].tolist(),
                                       "score": top_probs[eligible, 0].tolist(),
                                       "entropy": H[eligible].tolist()})
            state.step = k + 1
        assert (runner.forwards, runner.sequences, runner.cache_hits) == (forwards, sequences,
                                                                          hits)
        result = run._result(run.strategy, state, runner, 0.0,
                             entropy_rows=state.entropy_rows)
        result.beam = outcome.to_json(model.decode_masked, model.token_text)
        return result
    return strategy


def _ots(run: Run):
    return (yield from ots_search(run.runner, run.config, run.generator))


def _soar(run: Run):
    return (yield from soar_search(run.runner, run.config))


STRATEGIES = {
    "medal": _medal,
    "medal-no-mcts": _phase_c_alone,
    "medal-no-decomposition": _medal,
    "medal-margin-only": _medal,
    "greedy": _plain("low_confidence"),
    "random": _plain("random"),
    "entropy": _plain("entropy"),
    "margin": _plain("margin"),
    "eb": _plain("eb"),
    "bst5": _best_of_n,
    "threshold": _plain("threshold"),
    "info-gain": _plain("info_gain"),
    **{name: _medal for name in CONTROLS},
    "ots": _beam_search(_ots),
    "soar": _beam_search(_soar),
}


def generate(model: DiffusionLM, *, strategy: str = "medal", **kwargs) -> GenerationResult:
    """Run a strategy to the end and return its result (see :class:`Run`)."""
    return Run(model, strategy=strategy, **kwargs).finish()
