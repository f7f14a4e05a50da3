"""Views of a run, built from its trace dict by plain functions (no Streamlit here).

The same functions render a live run (``run.trace``) and an uploaded trace file:

* :func:`tree_html`        -- the MCTS tree (pyvis / vis-network, inlined, offline);
* :func:`entropy_heatmap`  -- step x slot entropies, MEDAL beside greedy (plotly);
* :func:`order_html`       -- the unmasking order, MEDAL beside greedy;
* :mod:`.inspector`        -- one node or candidate, its figures recomputed;
* :mod:`.phases`           -- which phase the run is in, explained; progress;
* :mod:`.teaching`         -- the paper's formulas with the run's own numbers;
* :func:`trace_at_iteration` -- replay a trace up to an iteration;
* :func:`bench_ui_step` / :func:`measure_ui_step` -- the cost of one UI step.
"""
from .heatmap import entropy_grid, entropy_heatmap
from .order import order_html, order_summary, slot_tokens
from .phases import current_phase, phase_cycle_html, progress
from .replay import iteration_count, trace_at_iteration
from .tree import tree_html, tree_view


def measure_ui_step(model, n_steps: int = 60, **kwargs) -> dict:
    """See :func:`medal.viz.bench.measure_ui_step`."""
    from .bench import measure_ui_step as _measure
    return _measure(model, n_steps=n_steps, **kwargs)


bench_ui_step = measure_ui_step

__all__ = ["tree_html", "tree_view", "entropy_heatmap", "entropy_grid", "order_html",
           "order_summary", "slot_tokens", "current_phase", "phase_cycle_html", "progress",
           "trace_at_iteration", "iteration_count", "measure_ui_step", "bench_ui_step"]
