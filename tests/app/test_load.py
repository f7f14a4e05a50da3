"""Load (issue 21): 8 sessions at once, each pushing every knob to the operator's limit,
are all answered, the server stays under its memory ceiling, and a reset releases a
run's memory. Bounded for CI: the operator's run budget is set low here (3 CPU seconds,
64 MiB of search per run), the figures for the default budget are in docs/SERVING.md.

Sessions are Streamlit AppTest instances in this process (the served app's code path,
each with its own session state); the process is the "server" whose memory is measured.
"""
from __future__ import annotations

import gc
import time
import weakref
from pathlib import Path

import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402

from medal import serving  # noqa: E402
from medal.app.controller import (OverBudget, RunBudget, process_rss,  # noqa: E402
                                  run_memory_estimate)
from viz_support import app_test  # noqa: E402

APP = str(Path(__file__).resolve().parents[2] / "app.py")
SESSIONS = 8
RUN_CPU_SECONDS = 3
RUN_MEMORY_MB = 64
#: what 8 sessions at their limits may add to the process, with the budget above: 8 runs
#: of at most 64 MiB of search each (stopped at the first step past it), their traces
#: and Streamlit's per-session state
CEILING_MB = 1500


def at_the_limits(at: AppTest) -> AppTest:
    limits = serving.DEFAULT_LIMITS
    at.selectbox(key="w_model").set_value("builtin:countdown")
    values = {"k1": limits["max_k1"], "k2": limits["max_k2"],
              "candidates": limits["max_candidates"],
              # L_c: all but one slot of Countdown's 28, in one block
              "lc": 27, "block_length": 28, "max_iterations": limits["max_iterations"]}
    for name, value in values.items():
        widget = next(w for w in (*at.number_input, *at.checkbox, *at.selectbox)
                      if w.key == f"w_{name}")
        widget.set_value(value)
    return at


def button(at, label):
    """A press of one of the viewer's controls that reach the server (the viewer steps in
    the browser and asks the page only to grow a live run): as tests/app/test_app.py sends it."""
    from viz_support import Press
    return Press(at, label)


@pytest.fixture
def operator(monkeypatch):
    monkeypatch.setenv("MEDAL_RUN_CPU_SECONDS", str(RUN_CPU_SECONDS))
    monkeypatch.setenv("MEDAL_RUN_MEMORY_MB", str(RUN_MEMORY_MB))
    monkeypatch.delenv("MEDAL_MODELS", raising=False)


def test_eight_sessions_at_their_limits_are_answered_within_the_ceiling(operator):
    gc.collect()
    before = process_rss()
    sessions, peak = [], before
    t0 = time.time()
    for _ in range(SESSIONS):
        at = app_test(APP, timeout=300)
        at.run()
        at_the_limits(at).run()
        button(at, "Run to end").click().run()
        assert not at.exception, at.exception
        sessions.append(at)
        peak = max(peak, process_rss())
    for i, at in enumerate(sessions):
        run = at.session_state["run"]
        stopped = any("The run was stopped" in e.value for e in at.error)
        # answered: finished within the budget, or stopped by it with a message
        assert run.done or stopped, f"session {i}: neither finished nor stopped"
        assert not at.session_state["running"]
        if stopped:
            assert any(s in " ".join(e.value for e in at.error)
                       for s in ("MEDAL_RUN_CPU_SECONDS", "MEDAL_RUN_MEMORY_MB"))
    added = (peak - before) / 2 ** 20
    print(f"\n{SESSIONS} sessions at their limits: +{added:.0f} MiB peak RSS "
          f"(ceiling {CEILING_MB} MiB), {time.time() - t0:.0f} s")
    assert added < CEILING_MB


def test_reset_releases_the_run(operator):
    at = app_test(APP, timeout=300)
    at.run()
    at_the_limits(at).run()
    button(at, "Next iteration").click().run()
    run = at.session_state["run"]
    search = weakref.ref(run.mcts)
    gone = weakref.ref(run)
    del run
    button(at, "Reset").click().run()
    gc.collect()
    assert gone() is None and search() is None


class _FakeRun:
    def __init__(self, nodes, L=28, k1=20):
        from medal.config import GenerationConfig
        self.config = GenerationConfig(k1=k1, gen_length=L, steps=L, block_length=L, lc=4)
        self.trace = {"tree": {"nodes": [{}] * nodes}, "decode": [], "comparison": None}


def test_a_run_over_its_budget_stops():
    budget = RunBudget(cpu_seconds=1, memory_bytes=64 * 2 ** 20)
    budget.check(_FakeRun(10))
    with pytest.raises(OverBudget, match="MEDAL_RUN_MEMORY_MB"):
        budget.check(_FakeRun(10_000))
    assert run_memory_estimate(_FakeRun(10_000)) > 64 * 2 ** 20
    budget.charge(2.0)
    with pytest.raises(OverBudget, match="MEDAL_RUN_CPU_SECONDS"):
        budget.check(_FakeRun(1))
    with pytest.raises(OverBudget, match="MEDAL_SERVER_MEMORY_MB"):
        RunBudget(cpu_seconds=100, memory_bytes=2 ** 40, server_memory_bytes=1).check(_FakeRun(1))


def test_visitors_cannot_empty_the_model_cache():
    """Streamlit's clear_cache message (any visitor can send it) empties st.cache_* for
    everyone; the models live in the server's own cache, which it does not reach."""
    import streamlit as st
    serving.MODEL_CACHE.get(("test-model", ()), lambda: "a model")
    st.cache_resource.clear()
    st.cache_data.clear()
    assert serving.MODEL_CACHE.get(("test-model", ()), lambda: "reloaded") == "a model"
    app = Path(__file__).resolve().parents[2] / "medal" / "app"
    for module in app.rglob("*.py"):
        assert "@st.cache_resource" not in module.read_text(), module
