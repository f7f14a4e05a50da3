"""Two traces compared: where two runs part, and why (issue 19).

:func:`diff_traces` walks both runs along their timeline (:mod:`medal.timeline`:
the root, each MCTS iteration's four phases, the search's end, the candidate choice,
every decode step, the greedy comparison, the end) and reports

* whether they are **identical** -- everything equal apart from the wall clock (the
  top-level ``timing`` block and the timing keys of :data:`TIMING_KEYS`), a ``fork``
  record and the environment (``run.versions``, ``run.model.device``, a
  ``reproducibility`` block): those are reported as context, never as differences;
* whether they are **equal within tolerance** (floats within ``rel``/``abs_tol``,
  everything discrete identical: the tolerance another CPU's rounding of the same
  forward needs);
* the **first divergence** (beyond tolerance) on the timeline and its cause: two
  selections with their UCB values and whether that was a near tie (float32 rounding), a
  different action set, a forced action (a fork), a different sample (seed or
  temperature), a different configuration, or different model figures;
* per phase (search, candidates, decode, comparison) same or different;
* answers, verdicts and costs side by side.

:func:`differences` is the plain one-way comparison the reference-trace and example
tests use; :func:`compare_candidates` compares two nodes of one tree slot by slot.

``medal diff A.json B.json [--json]`` prints :meth:`TraceDiff.format` (or
:meth:`TraceDiff.to_json`); exit 0 identical, 1 different, 2 on an error.
"""

from ..candidates import compare_candidates, format_candidates
from .causes import RANDOM_KEYS
from .positions import CONTEXT_KEYS, CUMULATIVE, SIMULATED, TIMING_KEYS, without_context
from .report import CAUSES, PHASES, Divergence, TraceDiff
from .tolerance import ABS, NEAR_TIE_REL, REL, differences
from .traces import diff_traces

__all__ = ["diff_traces", "TraceDiff", "Divergence", "differences", "without_context",
           "compare_candidates", "format_candidates", "REL", "ABS", "NEAR_TIE_REL",
           "TIMING_KEYS", "CONTEXT_KEYS", "CUMULATIVE", "SIMULATED", "PHASES", "CAUSES",
           "RANDOM_KEYS"]
