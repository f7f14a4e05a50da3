"""The views layer: a trace (a plain dict) in, the data every view draws out. Pure: no
Streamlit, no engine, no browser viewer here (tests/foundation/test_architecture.py checks
it), so every figure is built and tested from a trace alone.

* :mod:`.frames`           -- :class:`Frames`: a run's frames, one per timeline position,
  each the previous one plus what its event changed; :func:`bundle` for the viewer;
* :mod:`.parts` / :mod:`.tree_frame` -- a frame's parts (the tree's styled nodes and
  edges, each node's figures and card, the task view, candidates, grids, order, step);
* :mod:`.tree`             -- the tree's fixed layout, its Q colour scale, its shape;
* :func:`entropy_grid`     -- step x slot entropies, MEDAL beside greedy;
* :func:`order_summary` / :func:`slot_tokens` -- the unmasking order, MEDAL beside greedy;
* :mod:`.inspector`        -- one node or candidate, its figures from :mod:`medal.scores`;
* :mod:`.phases`           -- which phase the run is in, explained; progress;
* :mod:`.teaching`         -- the paper's formulas with the run's own numbers;
* :mod:`.board`            -- each task's own view (Countdown expression, Sudoku board...);
* :mod:`.results`          -- the Benchmark page's figures from a bench document;
* :mod:`.safe`             -- strings from a trace made safe to show as text;
* :func:`trace_at_iteration` -- replay a trace up to an iteration.

The hosts draw what this layer builds: :mod:`medal.viewer` (the browser viewer, the HTML
export, the notebook) and :mod:`medal.app` (Streamlit).
"""
from .heatmap import entropy_grid
from .order import order_summary, slot_tokens
from .phases import current_phase, phase_cycle_html, progress
from .replay import iteration_count, trace_at_iteration

__all__ = ["entropy_grid", "order_summary", "slot_tokens", "current_phase",
           "phase_cycle_html", "progress", "trace_at_iteration", "iteration_count"]
