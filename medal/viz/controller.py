"""What the app's buttons do, as plain functions (tested without Streamlit).

* ``advance(run, "phase")``      -- one event: one MCTS phase or one decode step;
* ``advance(run, "iteration")``  -- up to the end of the next MCTS iteration (its
                                    backpropagation); past the search, one step;
* ``advance(run, "end", max_seconds=...)`` -- a chunk of a run to the end, so the page
                                    can show progress and offer Stop between chunks.

:data:`PARAMETERS` lists every generation parameter the Run page offers, with its
widget kind and help; defaults come from :class:`medal.config.GenerationConfig`.
"""
from __future__ import annotations

import os
import time
from dataclasses import MISSING, dataclass, fields

from .. import config as _config
from ..config import SIMULATIONS, GenerationConfig
from ..scores import SCORINGS

_FIELDS = {f.name for f in fields(GenerationConfig)}

ITERATION_STOPS = frozenset({"backpropagation", "search_finished", "candidate_chosen",
                             "decode_step", "sample_finished", "run_finished"})
MODES = ("phase", "iteration", "end")


def advance(run, mode: str, *, max_seconds: float | None = None,
            max_events: int | None = None, budget: "RunBudget | None" = None) -> list:
    """Step ``run`` by ``mode``; returns the events it went through ([] when finished).
    ``budget``: checked after every event; a run over it raises :class:`OverBudget`."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    events = []
    t0 = time.perf_counter()
    while True:
        c0 = time.thread_time()
        event = run.step()
        if budget is not None:
            budget.charge(time.thread_time() - c0)
        if event is None:
            break
        events.append(event)
        if budget is not None:
            budget.check(run)
        if mode == "phase":
            break
        if mode == "iteration" and event.kind in ITERATION_STOPS:
            break
        if max_events is not None and len(events) >= max_events:
            break
        if max_seconds is not None and time.perf_counter() - t0 >= max_seconds:
            break
    return events


# ---------------------------------------------------------------------- budgets (issue 21)

class OverBudget(_config.InputError):
    """A run went over the operator's budget for one run; it is stopped and released."""


def process_rss() -> int:
    """This process's resident memory in bytes (0 where /proc is not available)."""
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def run_memory_estimate(run) -> int:
    """Bytes a run's search holds, from its size: every node keeps its evaluation (the
    top-64 tokens and probabilities of every slot, ~13 bytes each) and its trace record
    (the top-K1 tokens of every slot as small dicts, ~300 bytes each)."""
    from ..runner import TOP_K
    trace = run.trace or {}
    nodes = len((trace.get("tree") or {}).get("nodes") or ())
    L = run.config.gen_length
    k = max(run.config.k1, 3)
    steps = len(trace.get("decode") or ()) + len((trace.get("comparison") or {}).get("steps") or ())
    return nodes * L * (TOP_K * 13 + 300 * k + 64) + steps * L * 200


@dataclass
class RunBudget:
    """What one run may spend (the operator's MEDAL_RUN_CPU_SECONDS, MEDAL_RUN_MEMORY_MB)
    and what the whole server may hold (MEDAL_SERVER_MEMORY_MB): checked between engine
    steps, so a run over budget stops within one step."""
    cpu_seconds: float
    memory_bytes: int
    server_memory_bytes: int | None = None
    used_cpu: float = 0.0

    def charge(self, seconds: float) -> None:
        self.used_cpu += max(0.0, seconds)

    def check(self, run) -> None:
        if self.used_cpu > self.cpu_seconds:
            raise OverBudget(f"the run used {self.used_cpu:.1f} CPU seconds, more than this "
                             f"server's {self.cpu_seconds:g} per run (the operator's "
                             "MEDAL_RUN_CPU_SECONDS); smaller K1, K2, C or iterations finish "
                             "sooner")
        need = run_memory_estimate(run)
        if need > self.memory_bytes:
            raise OverBudget(f"the run's search holds about {need / 2**20:.0f} MiB, more than "
                             f"this server's {self.memory_bytes / 2**20:.0f} MiB per run (the "
                             "operator's MEDAL_RUN_MEMORY_MB); smaller K1, K2, C or a shorter "
                             "answer need less")
        if self.server_memory_bytes and process_rss() > self.server_memory_bytes:
            raise OverBudget(f"the server is at its memory limit ({self.server_memory_bytes / 2**20:.0f} "
                             "MiB, the operator's MEDAL_SERVER_MEMORY_MB) with other visitors' "
                             "runs; try again later")


def release(run, collect: bool = True) -> None:
    """Drop what a stopped run's search holds (the engine's generator, its tree, the
    recorder's node objects); its trace stays for the views. Then collect garbage
    (``collect=False``: not now -- a full collection holds the GIL for a while)."""
    import gc
    if run is None:
        return
    events = getattr(run, "_events", None)
    if events is not None:
        try:
            events.close()
        except Exception:  # noqa: BLE001 -- a half-run generator may raise on close
            pass
    for name in ("mcts",):
        if hasattr(run, name):
            setattr(run, name, None)
    if getattr(run, "recorder", None) is not None:
        run.recorder._nodes = {}
    if collect:
        gc.collect()


@dataclass(frozen=True)
class Parameter:
    name: str
    label: str
    kind: str                    # "int", "optional_int", "float", "bool", "optional_bool", "choice"
    help: str
    group: str = "search"
    min_value: float | None = None
    step: float | None = None
    choices: tuple = ()

    @property
    def default(self):
        f = next(f for f in fields(GenerationConfig) if f.name == self.name)
        return None if f.default is MISSING else f.default


_ALL_PARAMETERS: tuple[Parameter, ...] = (
    Parameter("k1", "K1: tokens kept per masked slot", "int",
              "Top-K1 tokens of every masked slot by the confidence-adjusted score enter the "
              "pool of actions.", min_value=1),
    Parameter("k2", "K2: actions per expansion", "int",
              "The K2 best-scoring (slot, token) actions of the pool: the children of an "
              "expanded node.", min_value=1),
    Parameter("lc", "L_c: slots committed by the search", "optional_int",
              "A node with L_c slots unmasked by the search is a candidate. Empty: the task's "
              "default.", min_value=1),
    Parameter("candidates", "C: candidates to collect", "int",
              "The search stops when C distinct candidates exist.", min_value=1),
    Parameter("gamma", "γ: margin scale", "float",
              "In σ(γ·margin): how much a clear top-2 margin raises a slot's score.",
              min_value=0.0, step=0.5),
    Parameter("c", "c: UCB exploration constant", "float",
              "Weight of the exploration bonus c·√(ln N(parent)/N(child)).", min_value=0.0,
              step=0.05),
    Parameter("max_iterations", "Max iterations", "int",
              "Hard budget of MCTS iterations (the search always stops).", min_value=1),
    Parameter("scoring", "Scoring", "choice",
              "confidence: the paper's s = p·exp(−H)·σ(γ·margin); margin: the "
              "'w/o confidence' ablation.", choices=SCORINGS),
    Parameter("simulation", "Simulation fill", "choice",
              "How a simulation completes a child: argmax or sampled tokens from its own "
              "forward (no extra forward), or an iterative DLM rollout of k steps.",
              choices=SIMULATIONS),
    Parameter("rollout_steps", "Rollout steps k", "int",
              "With simulation 'rollout': the DLM fills a child's remaining masks in k "
              "steps (k−1 extra batched forwards per expansion, counted).", min_value=1),
    Parameter("candidate_choice", "Candidate choice", "choice",
              "search: highest cumulative IG of the search's commitments. rollout (the "
              "paper's text): every candidate completed by phase C, the highest rollout IG "
              "wins. vote goes beyond the paper: the answer most rollouts agree on.",
              choices=getattr(_config, "CANDIDATE_CHOICES", ("search",))),
    Parameter("scoring_scope", "Margin-only scope", "choice",
              "Where scoring 'margin' applies: the search only (the paper's ablation) or "
              "also phase C.", choices=getattr(_config, "SCORING_SCOPES", ("search",))),
    Parameter("reward", "Reward", "choice",
              "ig: the paper's information gain. ig+verifier goes beyond the paper: a "
              "simulation (and a candidate) whose completion the task's verifier accepts "
              "earns a bonus.", choices=getattr(_config, "REWARDS", ("ig",))),
    Parameter("verifier_bonus", "Verifier bonus", "float",
              "With reward ig+verifier: added when a completion verifies (beyond the paper).",
              min_value=0.0, step=0.5),
    Parameter("complete_candidates", "Complete every candidate with phase C", "bool",
              "Also decode the losing candidates, to compare their final answers."),
    Parameter("one_per_parent", "At most one candidate per parent", "bool",
              "More diverse candidates: siblings do not all count."),
    Parameter("selection", "Selection rule", "choice",
              "ucb: the paper's Q + c·√(ln N(parent)/N(child)). greedy: the child with the "
              "best reward, no exploration bonus (the 'choice' control, medal-choice).",
              choices=getattr(_config, "SELECTIONS", ("ucb",))),
    Parameter("search_steps", "Search's steps", "choice",
              "count: the search's L_c commitments use up the first L_c of the steps (what "
              "this project has always done); extra: phase C gets every step for what the "
              "search left.", group="decoding",
              choices=getattr(_config, "SEARCH_STEPS", ("count",))),
    Parameter("min_action_prob", "Action probability floor (beyond the paper)", "float",
              "Actions whose token probability is below this leave the action set, so a "
              "node can have fewer than K2 children (0: off, the paper's top-K2; 0..1).",
              min_value=0.0, step=0.01),
    Parameter("gen_length", "Answer length (slots)", "optional_int",
              "Empty: the model's default.", group="decoding", min_value=1),
    Parameter("steps", "Steps", "optional_int",
              "Denoising steps. Empty: one slot per step.", group="decoding", min_value=1),
    Parameter("block_length", "Block length", "optional_int",
              "Semi-autoregressive blocks (LLaDA). Empty: the task's default for its built-in "
              "model (Countdown: 7), else one block.", group="decoding",
              min_value=1),
    Parameter("temperature", "Temperature", "float",
              "Token sampling temperature (0: argmax).", group="decoding", min_value=0.0,
              step=0.1),
    Parameter("slot_temperature", "Slot temperature (phase C)", "float",
              "Phase C samples slots ∝ softmax(s / T) (0: the best slot).", group="decoding",
              min_value=0.0, step=0.1),
    Parameter("pair_temperature", "Pair temperature (phase C)", "float",
              "Phase C samples (slot, token) pairs ∝ Softmax(s / T) over each eligible slot's "
              "top-K1 tokens, as the paper's Algorithm 2 (T = 1). 0: the best slot.",
              group="decoding", min_value=0.0, step=0.1),
    Parameter("eb_threshold", "EB threshold", "float",
              "Entropy-bounded sampler: unmask while ΣH − max H ≤ this.", group="decoding",
              min_value=0.0, step=0.1),
    Parameter("samples", "Best-of-N samples", "int", "N for the bst5 strategy.",
              group="decoding", min_value=1),
    Parameter("threshold", "Confidence threshold (Fast-dLLM)", "float",
              "threshold strategy: each step commits every slot of the current block whose "
              "token probability exceeds this, at least one (0..1). Also phase C's rule "
              "with the option below, and the info-gain strategy's bypass.",
              group="decoding", min_value=0.0, step=0.05),
    Parameter("threshold_phase_c", "Threshold phase C (beyond the paper)", "bool",
              "MEDAL's phase C commits by the confidence-threshold rule instead of its step "
              "schedule: fewer forwards (docs/SPEED.md).", group="decoding"),
    Parameter("ig_candidates", "Info-Gain candidates N", "int",
              "info-gain strategy: candidate actions evaluated per step in one batched "
              "forward.", group="decoding", min_value=1),
    Parameter("ig_position_temperature", "Info-Gain position temperature", "float",
              "info-gain strategy: Gumbel temperature of the candidates' positions (0: "
              "greedy).", group="decoding", min_value=0.0, step=0.05),
    Parameter("logits_eos_inf", "Never write end-of-sequence (logits_eos_inf)", "bool",
              "As LLaDA's generate.py: the EOS logit is set to -inf, so no slot is filled "
              "with it.", group="decoding"),
    Parameter("confidence_eos_eot_inf", "End tokens last (confidence_eos_eot_inf)", "bool",
              "As LLaDA's generate.py: a slot whose token would be EOS or end-of-turn is "
              "unmasked only after every other slot.", group="decoding"),
    Parameter("decompose", "Task decomposition", "optional_bool",
              "Augment the prompt with the subtask guidance. Default: on for MEDAL "
              "strategies with LLMs (the paper); off for baselines and for the built-in "
              "Countdown model, where it was measured to hurt.", group="prompt"),
    Parameter("n_subtasks", "N subtasks", "int", "Subtasks in the decomposition prompt.",
              group="prompt", min_value=1),
    Parameter("seed", "Seed", "int", "Seed for every random choice.", group="prompt"),
)
#: the parameters this version of GenerationConfig has
PARAMETERS = tuple(p for p in _ALL_PARAMETERS if p.name in _FIELDS)


#: seconds per timeline position for Play and an animated "Run to end"
SPEEDS = (0.1, 0.25, 0.5, 1.0, 2.0, 4.0)


def download_name(trace: dict, when: float | None = None) -> str:
    """A trace file's name from its run: task, strategy, seed and time (``when``, a Unix
    time; default now), e.g. ``medal-countdown-medal-seed0-20261123-0712.json``."""
    import re
    run = trace.get("run") or {}
    task = trace_task(trace)
    seed = (run.get("config") or {}).get("seed")
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(time.time() if when is None
                                                            else when))
    parts = ["medal", task, run.get("strategy"), None if seed is None else f"seed{seed}",
             stamp]
    name = "-".join(str(p) for p in parts if p not in (None, ""))
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name) + ".json"


def trace_task(trace: dict) -> str | None:
    """The task a trace was made for (traces record the problem, not the task's name)."""
    from ..tasks import TASKS
    run = trace.get("run") or {}
    if run.get("task") in TASKS:
        return run["task"]
    problem = run.get("problem")
    if problem:
        for name, task in TASKS.items():
            try:
                task.parse_problem(problem)
                return name
            except Exception:       # not this task's problem
                continue
    model = str((run.get("model") or {}).get("name") or "")
    if model.startswith("builtin:") and model[8:] in TASKS:
        return model[8:]
    if run.get("prompt"):
        for name, task in TASKS.items():
            if task.problem_from_prompt(run["prompt"]) is not None:
                return name
    return None


def prompt_note(task_name: str, prompt: str) -> str | None:
    """Why a prompt cannot be verified by its task, said before the run (None: fine)."""
    from ..tasks import TASKS
    task = TASKS.get(task_name)
    if task is None or not (prompt or "").strip():
        return None if task is None else "The prompt is empty: write one or pick an example."
    if not task.has_verifier:
        return None
    if task.problem_from_prompt(prompt) is None:
        example = task.format_prompt(task.example_problems[0])
        return (f"This prompt is not a {task_name} problem the task can read, so the answer "
                f"cannot be verified (the run still works). Expected a prompt like: "
                f"{example!r}.")
    return None


def k2_note(config: GenerationConfig, strategy: str = "medal") -> str | None:
    """K2 above the number of actions a node can have is reported, not silently capped.
    ``config``: the run's resolved config (gen_length and block_length known)."""
    if not strategy.startswith("medal") or strategy == "medal-no-mcts":
        return None
    L = config.gen_length or 0
    block = config.block_length or L
    open_slots = min(L, block) if block else L
    pool = config.k1 * open_slots
    if pool and config.k2 > pool:
        return (f"K2 = {config.k2} is more than the actions a node can have: at most K1 × "
                f"open slots = {config.k1} × {open_slots} = {pool} (slots of the current "
                f"block of {block}). Each expansion makes at most {pool} children; lower K2 "
                f"to {pool} or less, or raise K1.")
    return None


def make_config(values: dict) -> GenerationConfig:
    """A validated config from the widgets' values (raises InputError with the fix)."""
    known = {p.name for p in PARAMETERS}
    return GenerationConfig(**{k: v for k, v in values.items() if k in known})


def create_run(model, *, task: str, prompt: str, strategy: str, config: GenerationConfig):
    """A traced run with the greedy comparison, as the app shows it."""
    from ..engine import Run
    return Run(model, task=task, prompt=prompt, strategy=strategy, config=config,
               trace=True, compare_greedy=True)


def app_threads(model, environ=None) -> int | None:
    """Torch threads for the app to run ``model`` on (None: leave torch's default).

    The built-in models are tiny: one thread runs a batch of 5 in ~15 ms, while two
    threads that share the machine's cores with the browser and the Streamlit server
    spin-wait and are often 10-50x slower. ``MEDAL_APP_THREADS`` overrides."""
    import os
    value = (environ if environ is not None else os.environ).get("MEDAL_APP_THREADS")
    if value:
        return max(1, int(value))
    return 1 if getattr(model, "builtin", False) else None


def load_options(trust_remote_code: bool = False, device: str = "auto", dtype: str = "auto",
                 revision: str | None = None) -> dict:
    """Keyword options for ``load_model``: only the ones that differ from the defaults, so
    a loader that does not know an option is never handed it unasked."""
    options: dict = {}
    if trust_remote_code:
        options["trust_remote_code"] = True
    if device and device != "auto":
        options["device"] = device
    if dtype and dtype != "auto":
        options["dtype"] = dtype
    if revision and revision.strip():
        options["revision"] = revision.strip()
    return options
