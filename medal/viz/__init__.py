"""The parts of the viewer's frames, built from a trace dict by plain functions (no
Streamlit here); :mod:`medal.viewer` puts them together and draws them in the browser --
one drawing path for the app, the HTML export and a notebook.

* :func:`tree_view`        -- the MCTS tree at a position: nodes, edges, fixed places;
* :func:`entropy_grid`     -- step x slot entropies, MEDAL beside greedy;
* :func:`order_summary` / :func:`slot_tokens` -- the unmasking order, MEDAL beside greedy;
* :mod:`.inspector`        -- one node or candidate, its figures recomputed;
* :mod:`.phases`           -- which phase the run is in, explained; progress;
* :mod:`.teaching`         -- the paper's formulas with the run's own numbers;
* :func:`trace_at_iteration` -- replay a trace up to an iteration;
* :func:`measure_ui_step`  -- the cost of one live UI step (engine step + the viewer's frames).
"""
from .heatmap import entropy_grid
from .order import order_summary, slot_tokens
from .phases import current_phase, phase_cycle_html, progress
from .replay import iteration_count, trace_at_iteration
from .tree import tree_view


def measure_ui_step(model, n_steps: int = 60, **kwargs) -> dict:
    """See :func:`medal.viz.bench.measure_ui_step`."""
    from .bench import measure_ui_step as _measure
    return _measure(model, n_steps=n_steps, **kwargs)


bench_ui_step = measure_ui_step

__all__ = ["tree_view", "entropy_grid", "order_summary", "slot_tokens", "current_phase",
           "phase_cycle_html", "progress", "trace_at_iteration", "iteration_count",
           "measure_ui_step", "bench_ui_step"]
