"""MEDAL Explorer: MCTS initialisation for diffusion language model inference.

A masked diffusion LM (LLaDA, Dream, or the built-in tiny models) writes an answer by
unmasking slots over many steps. MEDAL searches the first ``L_c`` commitments with Monte
Carlo Tree Search, keeps the best of ``C`` candidates, then finishes with
confidence-guided decoding. This package runs it, records every step in a trace, and shows
it.

Where to start::

    import medal
    model = medal.load_model("builtin:countdown")            # a tiny CPU model, shipped
    result = medal.generate(model, problem={"numbers": [4, 18, 13], "target": 20})
    print(result.answer, result.verified, result.forwards)

    run = medal.Run(model, problem={"numbers": [4, 18, 13], "target": 20}, trace=True)
    while (event := run.step()) is not None:                 # one MCTS phase or decode step
        print(event.kind)
    trace = run.trace                                        # the JSON trace (a dict)

    trace = medal.load_trace("run.json")                     # the one gate for trace files

The names at this level:

* :func:`load_model` -- a model from its spec (``builtin:countdown``, ``builtin:sudoku``,
  ``llada-8b-instruct``, ``dream:<dir>``, ``mlm:<dir>`` ...).
* :func:`generate` -- one prompt or problem, one strategy, to the end.
* :class:`Run` -- the same, step by step (events for every phase).
* :func:`load_trace` / :func:`loads_trace` -- read and validate a trace file.
* :data:`STRATEGIES` -- the strategies' names (``medal``, its ablations, ``greedy``,
  ``bst5`` ...).
* :class:`GenerationConfig` -- every knob of a run (K1, K2, L_c, C, gamma, c ...).
* :func:`show` -- a run or trace as the step-by-step viewer, inline in a notebook (a
  traced :class:`Run` and a :class:`Trace` also display themselves).
* :class:`Trace` -- a trace dict that displays itself: ``medal.Trace(medal.load_trace(p))``.
* :func:`compare` -- two runs (traces, Runs or files) side by side on one timeline, with
  where they part and why; inline in a notebook, ``.save_html(path)`` for one offline page.
* :func:`tree_graph` -- a trace's search tree as a ``networkx.DiGraph``, every node's N, W,
  Q, UCB, r_IG ...; :func:`tree_stats` -- its shape (depth, branching, visits per level).

The command line is ``medal`` (``medal generate``, ``medal bench``, ``medal app`` ...);
``medal --help`` lists it all. The app: ``medal app``.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._version import __version__

__all__ = ["__version__", "load_model", "generate", "Run", "load_trace", "loads_trace",
           "STRATEGIES", "GenerationConfig", "show", "Trace", "compare", "tree_graph",
           "tree_stats"]

if TYPE_CHECKING:  # pragma: no cover
    from .config import GenerationConfig
    from .engine import GenerationResult, Run

# The heavy imports (torch) wait until a name is first used, so ``medal --help`` stays quick.
_LAZY = {"Run": ("engine", "Run"), "GenerationConfig": ("config", "GenerationConfig"),
         "load_trace": ("trace", "load_trace"), "loads_trace": ("trace", "loads_trace"),
         "show": ("viewer", "show"), "Trace": ("viewer", "Trace"),
         "compare": ("viewer.comparison", "compare"),
         "tree_graph": ("views.tree", "tree_graph"), "tree_stats": ("views.tree", "tree_stats")}


def __getattr__(name: str) -> Any:
    if name == "STRATEGIES":
        from .engine import STRATEGIES
        return tuple(STRATEGIES)
    if name in _LAZY:
        import importlib
        module, attr = _LAZY[name]
        if module == "engine":   # what Run borrows from the layers above it (run.fork,
            from . import fork, viewer  # noqa: F401  a notebook's display): medal.extensions
        value = getattr(importlib.import_module(f".{module}", __name__), attr)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'medal' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


def load_model(spec: str = "builtin:countdown", **options):
    """Load a model from its spec (see :mod:`medal.models`).

    ``builtin:countdown`` and ``builtin:sudoku`` ship with the package and run on a CPU.
    LLaDA/Dream/masked-LM specs take the options ``device``, ``dtype``, ``revision``,
    ``trust_remote_code`` (see docs/REAL_MODELS.md). Raises
    :class:`medal.errors.ModelLoadError` with the fix when the model cannot be loaded."""
    from .models import load_model as _load
    return _load(spec, **options)


def generate(model="builtin:countdown", prompt: str | None = None, *, problem=None,
             task: str | None = None, strategy: str = "medal", trace: bool = False,
             config=None, **settings) -> "GenerationResult":
    """Answer one prompt (or a structured ``problem``) with ``strategy``, to the end.

    ``model``: a loaded model or a spec. ``task``: how the prompt is read and checked
    (``countdown``, ``sudoku`` ...; default: the built-in model's own task, else
    ``countdown``). ``settings``: any :class:`GenerationConfig` field (``k1``, ``k2``,
    ``lc``, ``candidates``, ``seed``, ``gen_length`` ...), or pass a whole ``config``.
    Returns a :class:`medal.engine.GenerationResult` (``answer``, ``verified``,
    ``forwards`` ...; MEDAL's search in ``search``: winner, candidates, stop reason; a
    vote's in ``vote``); with ``trace=True`` its ``trace`` attribute is the JSON trace."""
    from .config import GenerationConfig
    from .engine import Run
    from .errors import InputError
    if isinstance(model, str):
        model = load_model(model)
    if config is not None and settings:
        raise InputError("give either config=GenerationConfig(...) or keyword settings, "
                         "not both")
    if config is None and settings:
        try:
            config = GenerationConfig(**settings)
        except TypeError:
            from dataclasses import fields
            known = ", ".join(f.name for f in fields(GenerationConfig))
            unknown = ", ".join(sorted(set(settings) - {f.name for f in fields(GenerationConfig)}))
            raise InputError(f"unknown setting(s) {unknown}; known: {known}") from None
    run = Run(model, task=task or _default_task(model), prompt=prompt, problem=problem,
              strategy=strategy, config=config, trace=trace, compare_greedy=trace)
    result = run.finish()
    result.trace = run.trace
    return result


def _default_task(model) -> str:
    return getattr(model, "trained_task", None) or "countdown"
