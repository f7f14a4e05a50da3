"""Shared helpers for the app and viz tests: a tiny random stand-in model and its traces.

The stand-in has the built-in model's interface (character tokenizer, 28 answer slots)
with random weights, so these tests need neither the trained assets nor much CPU.
"""
from __future__ import annotations

import functools
import tempfile

RANDOM_SPEC = "test:random"


@functools.lru_cache(maxsize=1)
def random_model():
    import torch

    from medal.models.builtin import BuiltinModel
    from medal.models.tiny import CharTokenizer, TinyConfig, TinyDLM, load_checkpoint, save_checkpoint

    directory = tempfile.mkdtemp(prefix="medal-random-model-")
    torch.manual_seed(0)
    save_checkpoint(TinyDLM(TinyConfig(vocab_size=len(CharTokenizer()), n_layer=1, n_embd=32)),
                    directory, {"task": "random"})
    net, meta = load_checkpoint(directory)
    return BuiltinModel(net, meta, "builtin:random")


def make_trace(strategy: str = "medal", **config) -> dict:
    """A finished run's trace (with the greedy comparison) on the random model."""
    from medal.config import GenerationConfig
    from medal.engine import Run

    cfg = {"max_iterations": 12, **config}
    run = Run(random_model(), task="countdown", prompt="Use 4, 18, 13 to make 20.",
              strategy=strategy, config=GenerationConfig(**cfg), trace=True, compare_greedy=True)
    run.finish()
    return run.trace


def patch_load_model(monkeypatch) -> None:
    """Make ``medal.models.load_model`` answer RANDOM_SPEC (and ``RANDOM_SPEC-anything``,
    for tests that need a fresh model-cache entry) with the random model."""
    import medal.models

    original = medal.models.load_model

    def load_model(spec, **options):
        if spec.strip().startswith(RANDOM_SPEC):
            return random_model()
        return original(spec, **options)

    monkeypatch.setattr(medal.models, "load_model", load_model)


def show_tab(at, name: str):
    """Select the Run page's tab ``name`` in an AppTest and rerun: the page builds only the
    selected tab's content (as a browser user's click on the tab does)."""
    at.session_state["w_tab"] = name
    return at.run()


def states(bundle: dict) -> list[dict]:
    """Each position's full state, rebuilt from a viewer bundle's shared frames as
    viewer.js does (a frame lists, per part, key/pool-index pairs; -1 removes a key)."""
    pool, out, cur = bundle["pool"], [], {}
    for delta in bundle["frames"]:
        cur = {p: dict(items) for p, items in cur.items()}
        for part, changes in delta.items():
            items = cur.setdefault(part, {})
            for k, i in zip(changes[::2], changes[1::2]):
                if i < 0:
                    items.pop(k, None)
                else:
                    items[k] = pool[i]
        out.append(cur)
    return out


def app_test(path, *, source: str | None = "live", timeout: float = 120):
    """An AppTest of the app (or a page) opened as the URL ``?source=<source>`` opens it:
    a new session opens on an example unless its URL names a source (issue 18), and most
    tests drive the live run. ``source=None``: the plain URL. Not run yet."""
    from streamlit.testing.v1 import AppTest
    at = AppTest.from_file(str(path), default_timeout=timeout)
    if source is not None:
        at.query_params["source"] = source
    return at
