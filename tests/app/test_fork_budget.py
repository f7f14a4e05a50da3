"""A visitor's forks inside the session's budget (issue 31): What if… twenty times keeps
at most MAX_FORKS forks (the oldest dropped, with a message), within the per-run memory
budget, their frames in the session (never the server-wide cache), and the session's
CPU shared by them; a closed session leaves nothing behind."""
from __future__ import annotations

import gc
import json

import pytest

pytest.importorskip("streamlit")

from medal import serving  # noqa: E402
from medal.config import GenerationConfig  # noqa: E402
from medal.engine import Run  # noqa: E402
from medal.trace import dumps  # noqa: E402
from medal.app.controller import process_rss  # noqa: E402


class Session(dict):
    """What compare_view reads and writes of st.session_state."""


@pytest.fixture
def cv(monkeypatch):
    import medal.app.compare_view as cv
    state = Session()
    monkeypatch.setattr(cv, "STATE", state)
    return cv


@pytest.fixture(scope="module")
def source(builtin_model):
    run = Run(builtin_model, problem={"numbers": [4, 18, 13], "target": 20}, strategy="medal",
              config=GenerationConfig(seed=0, max_iterations=3, candidates=1, lc=1), trace=True)
    run.finish()
    return json.loads(dumps(run.trace))


def _fork_n(cv, source, n):
    cv.STATE["uploaded"] = ("k", source)
    for i in range(n):
        cv._do_fork("upload", "Uploaded trace", 0, None, [(3, "7" if i % 2 else "8")], "decode")
        assert "whatif_error" not in cv.STATE, cv.STATE.get("whatif_error")
        k = len(cv.STATE["forks"]) - 1
        cv._frames(f"fork:{k}", cv.STATE["forks"][k]["trace"])   # as the Compare view does


def test_twenty_forks_keep_at_most_max_forks_and_the_memory_flat(cv, source, monkeypatch):
    monkeypatch.setenv("MEDAL_RUN_MEMORY_MB", "512")
    serving.FRAMES_CACHE.clear()
    _fork_n(cv, source, 1)                 # warm: imports, caches
    gc.collect()
    before = process_rss()
    _fork_n(cv, source, 20)
    forks = cv.STATE["forks"]
    assert len(forks) == cv.MAX_FORKS
    assert forks[-1]["label"].startswith("Fork #21:")          # numbered as made
    assert "dropped to make room" in cv.STATE["fork_note"]
    assert len(cv.STATE["fork_frames"]) <= cv.MAX_FORKS       # frames of kept forks only
    assert not [k for k in serving.FRAMES_CACHE._items if "fork:" in str(k)] \
        if hasattr(serving.FRAMES_CACHE, "_items") else True
    gc.collect()
    grown = (process_rss() - before) / 2 ** 20
    assert grown < 150, f"server memory grew {grown:.0f} MiB through 20 forks"
    # the session closes: what it held goes with it
    cv.STATE.clear()
    gc.collect()


def test_forks_beyond_the_memory_budget_drop_the_oldest(cv, source, monkeypatch):
    monkeypatch.setenv("MEDAL_RUN_MEMORY_MB", "1")
    _fork_n(cv, source, 3)
    forks = cv.STATE["forks"]
    assert sum(f["bytes"] for f in forks) <= 2 ** 20 or len(forks) == 1
    assert "MEDAL_RUN_MEMORY_MB" in cv.STATE["fork_note"]


def test_a_sessions_forks_share_one_cpu_budget(cv, source, monkeypatch):
    monkeypatch.setenv("MEDAL_RUN_CPU_SECONDS", "1")
    cv.STATE["session_cpu"] = cv.SESSION_RUNS * 1.0      # all spent already
    cv.STATE["uploaded"] = ("k", source)
    cv._do_fork("upload", "Uploaded trace", 0, None, [(3, "7")], "decode")
    assert "session has used its" in cv.STATE["whatif_error"]
    assert not cv.STATE.get("forks")
