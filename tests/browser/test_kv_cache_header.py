"""Issue 39 item 3: the page of a run made with Fast-dLLM's KV cache says it was
approximate. The trace records the cache (``run.model.kv_cache``); the viewer's header
(the export's and the app's: one viewer) reads "KV cache: dual — APPROXIMATE" from the
frames' meta (``medal.views.parts.meta``). A run without the cache says nothing of it."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_browser import browser  # noqa: E402,F401
from viewer_checks import open_offline  # noqa: E402

from medal.config import GenerationConfig  # noqa: E402
from medal.engine import Run  # noqa: E402
from medal.models import builtin_names, load_model  # noqa: E402
from medal.views.parts import meta  # noqa: E402
from medal.viewer.export import write_html  # noqa: E402


def traced(kv_cache: str) -> dict:
    if "countdown" not in builtin_names():
        pytest.skip("the built-in countdown model is not trained here")
    run = Run(load_model("builtin:countdown", kv_cache=kv_cache),
              problem={"numbers": [4, 18, 13], "target": 20}, strategy="medal",
              config=GenerationConfig(seed=0), trace=True)
    run.finish()
    return run.trace


@pytest.mark.parametrize("kv_cache", ["dual", "prefix", "off"])
def test_the_export_header_says_a_cached_run_is_approximate(browser, tmp_path, kv_cache):
    trace = traced(kv_cache)
    cached = kv_cache != "off"
    assert meta(trace)["kv_cache"] == (kv_cache if cached else None)
    ctx, pg, blocked, errors = open_offline(
        browser, write_html(trace, tmp_path / "run.html"), {"width": 1440, "height": 900},
        "window.medalViewer && globalThis.__medalTreeDrawn")
    try:
        header = pg.locator(".mv-problem").inner_text()
        assert (f"KV cache: {kv_cache} — APPROXIMATE" in header) is cached, header
        assert "APPROXIMATE" in header if cached else "KV cache" not in header
        pg.keyboard.press("End")                     # every position keeps the header
        assert (f"KV cache: {kv_cache} — APPROXIMATE" in
                pg.locator(".mv-problem").inner_text()) is cached
        assert not errors and not blocked
    finally:
        ctx.close()
