"""What the app's buttons do, as plain functions (tested without Streamlit).

* ``advance(run, "phase")``      -- one event: one MCTS phase or one decode step;
* ``advance(run, "iteration")``  -- up to the end of the next MCTS iteration (its
                                    backpropagation); past the search, one step;
* ``advance(run, "end", max_seconds=...)`` -- a chunk of a run to the end, so the page
                                    can show progress and offer Stop between chunks.

:data:`PARAMETERS` lists every generation parameter the Run page offers: the settings
:class:`medal.config.GenerationConfig` declares on its fields (label, help, kind, default).
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass

from .. import config as _config
from ..config import SETTINGS, GenerationConfig

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


def run_budget(settings):
    """The budget of one run under the operator's settings (:class:`medal.serving.Settings`;
    checked between engine steps)."""
    lim = settings.limits
    return RunBudget(cpu_seconds=lim["run_cpu_seconds"],
                     memory_bytes=lim["run_memory_mb"] * 2 ** 20,
                     server_memory_bytes=lim["server_memory_mb"] * 2 ** 20)


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


#: every generation parameter the Run page offers: the settings as GenerationConfig declares
#: them (label, help, group, least value, step, choices; :class:`medal.config.Setting`)
PARAMETERS = SETTINGS


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
    from ..models.builtin import builtin_task
    trained_for = builtin_task(str((run.get("model") or {}).get("name") or ""))
    if trained_for in TASKS:
        return trained_for
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
