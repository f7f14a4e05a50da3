"""A session's live run: started from the sidebar's settings, stepped under its lock and
the operator's budget, grown as the viewer asks (its requests), its trace and frames
rebuilt only when the engine has moved."""
from __future__ import annotations

import contextlib
import threading
import time

import streamlit as st

from .. import serving, timeline
from ..errors import MedalError
from ..viewer import Frames
from . import components
from .controller import (OverBudget, advance, app_threads, create_run, k2_note, run_budget,
                         make_config, release)
from ..views.safe import md
from .session import STATE, serving_settings
from .sidebar import load_model_or_error, settings_key


CHUNK_SECONDS = 0.5      # "Run to end" (jump) works in chunks; Stop is honoured between them


def start_run(settings: dict):
    """A new Run from the settings, or None after showing what is wrong."""
    try:
        config = make_config(settings["params"])
        serving.check_limits(serving_settings(), config)
    except MedalError as exc:
        st.error(md(f"Invalid parameters: {exc}"))
        return None
    model = load_model_or_error(settings["model"], settings["load_options"])
    if model is None:
        return None
    threads = app_threads(model)
    if threads:
        import torch
        torch.set_num_threads(threads)
    try:
        run = create_run(model, task=settings["task"], prompt=settings["prompt"],
                         strategy=settings["strategy"], config=config)
    except MedalError as exc:
        st.error(md(f"Cannot start this run: {exc}"))
        return None
    release(STATE.get("run"))   # the previous run's search, if any
    run.observers.append(Moves())
    run._medal_lock = threading.Lock()
    STATE["run"] = run
    STATE["budget"] = run_budget(serving_settings())
    STATE["run_settings"] = settings_key(settings)
    STATE["run_id"] = STATE.get("run_id", 0) + 1
    STATE["run_started_at"] = time.time()
    STATE["run_notes"] = [n for n in (k2_note(run.config, run.strategy),) if n]
    return run


class Moves:
    """An engine observer on a live run: how many events the engine has made. The Run
    page's caches of the trace and of the viewer's frames are keyed on it, not only on the
    page's own count (``STATE["events"]``): Stop -- any rerun -- makes Streamlit start a new
    script run at once (fastReruns) while the old one finishes its engine step, and the old
    one is stopped before it counts that step. The frames then stayed behind the trace for
    good: a step request found the positions it asked for already made, stepped nothing and
    sent no new frame, and the viewer asked again and again (issue 18: Next phase after
    Stop did not step on)."""

    def __init__(self):
        self.n = 0

    def __call__(self, event) -> None:
        self.n += 1


def engine_lock(run):
    """The lock a script run holds while it steps ``run``'s engine: a script run that Stop
    (or any rerun) replaced may still be inside an engine step; the new one waits for it
    before it steps the run or reads its trace, so two threads never step one run."""
    return getattr(run, "_medal_lock", None) or contextlib.nullcontext()


def moved(run) -> tuple:
    """A stamp that changes whenever ``run`` has moved (see :class:`Moves`)."""
    counter = next((o for o in getattr(run, "observers", ()) if isinstance(o, Moves)), None)
    return (STATE.get("events", 0), counter.n if counter is not None else None)


def step_or_error(run, mode: str, **limits) -> bool:
    """Advance the run within its budget; on failure show why (no traceback) and stop."""
    if getattr(run, "_released", False):   # stopped over budget: nothing left to run
        STATE["running"] = STATE["playing"] = False
        return False
    try:
        budget = STATE.get("budget")
        with engine_lock(run):
            events = advance(run, mode, budget=budget, **limits)
        STATE["events"] = STATE.get("events", 0) + len(events)
        return True
    except OverBudget as exc:  # stopped and released: the trace so far stays on view
        release(run)
        run._released = True
        STATE["running"] = STATE["playing"] = False
        STATE["events"] = STATE.get("events", 0) + 1
        STATE["run_notes"] = (STATE.get("run_notes") or []) + [
            f"The run was stopped: {exc}. Press Reset to start again."]
        st.error(md(f"The run was stopped: {exc}. Press Reset to start again."))
        return False
    except Exception as exc:  # the model or the engine failed mid-run
        STATE["running"] = STATE["playing"] = False
        STATE["events"] = STATE.get("events", 0) + 1  # trace moved
        detail = str(exc) if isinstance(exc, MedalError) else f"{type(exc).__name__}: {exc}"
        st.error(md(f"The run failed: {detail}. Press Reset to start again."))
        return False


def on_request() -> None:
    value = components.trigger("medal_viewer", "request")
    if isinstance(value, dict) and value.get("op"):
        STATE["pending_request"] = value


def on_need() -> None:
    sender().need(components.trigger("medal_viewer", "need"))


def sender() -> components.Sender:
    return components.session_sender()


def reset_run() -> None:
    release(STATE.get("run"))   # the search's memory goes now, not at the next run
    for key in ("run", "budget", "running", "run_settings", "last_step_ms", "events", "trace_cache",
                "run_notes", "live_frames"):
        STATE.pop(key, None)


def handle_request(req: dict | None, settings: dict | None):
    """Carry out the viewer's request on the live run (starting one if none exists)."""
    if not req or not isinstance(req, dict):
        return    # (a visitor's browser can send anything: what is not a request is ignored)
    op = req.get("op")
    if op not in ("stop", "reset", "step", "iteration", "end"):
        return
    if op == "stop":
        STATE["running"] = False
        return
    if op == "reset":
        reset_run()
        return
    run = STATE.get("run")
    if run is None:
        if settings is None:
            return
        run = start_run(settings)
        if run is None:
            return
    if op == "step":
        from medal.app.components import visitor_int
        want = visitor_int(req.get("want"), default=1, low=1, high=10 ** 6)
        t0 = time.perf_counter()
        while not run.done and len(timeline.positions(run_trace(run))) < want:
            if not step_one_position(run):
                break
        STATE["last_step_ms"] = (time.perf_counter() - t0) * 1000
    elif op == "iteration":
        t0 = time.perf_counter()
        if step_or_error(run, "iteration"):
            STATE["last_step_ms"] = (time.perf_counter() - t0) * 1000
    elif op == "end":
        STATE["running"] = True


def step_one_position(run) -> bool:
    """Advance the engine until the timeline has one more position (or the run ends)."""
    before = len(timeline.positions(run_trace(run)))
    while not run.done and len(timeline.positions(run_trace(run))) <= before:
        if not step_or_error(run, "phase"):
            return False
    return True


def run_trace(run) -> dict:
    """``run.trace``, rebuilt only when the run has moved."""
    key = (STATE.get("run_id"), moved(run))
    cached = STATE.get("trace_cache")
    if cached is not None and cached[0] == key:
        return cached[1]
    trace = run.trace
    STATE["trace_cache"] = (key, trace)
    return trace


def live_frames(run, trace: dict) -> Frames:
    """The live run's frames, extended as the engine makes new positions."""
    key = f"live-{STATE.get('run_id', 0)}"
    frames = STATE.get("live_frames")
    if frames is None or frames.key != key:
        frames = STATE["live_frames"] = Frames(key)
    stamp = (moved(run), run.done)
    if STATE.get("live_frames_stamp") != (key, stamp):
        frames.update(trace, final=run.done)
        STATE["live_frames_stamp"] = (key, stamp)
    return frames
