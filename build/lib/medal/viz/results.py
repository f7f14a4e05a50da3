"""A ``medal bench --out`` results file, read back for the Benchmark page: validated, as a
table, and as accuracy against cost with the Pareto frontier.

    doc = loads_results(open("results.json", "rb").read())
    rows = summary_rows(doc); fig = frontier_figure(doc, cost="mean_sequence_forwards")
"""
from __future__ import annotations

import json
import math

from ..errors import InputError

RESULTS_FORMAT = "medal-bench"
MAX_RESULTS_BYTES = 50 * 1024 * 1024
#: cost measures a frontier can use: summary key -> axis title
COSTS = {"mean_sequence_forwards": "sequences evaluated per problem (mean)",
         "mean_forwards": "batched forward calls per problem (mean)",
         "mean_seconds": "seconds per problem (mean, wall clock)"}


class ResultsError(InputError):
    """A file that is not a readable ``medal bench`` results document."""


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def validate_results(doc) -> dict:
    """Check the parts the page reads; :class:`ResultsError` says what is wrong."""
    if not isinstance(doc, dict) or doc.get("format") != RESULTS_FORMAT:
        raise ResultsError('this is not a MEDAL benchmark results file (the top-level "format" '
                           f'must be "{RESULTS_FORMAT}"); write one with '
                           "`python -m medal bench ... --out results.json`")
    if doc.get("version") != 1:
        raise ResultsError(f"results version {doc.get('version')!r} is not supported (this "
                           "MEDAL Explorer reads version 1)")
    summary = doc.get("summary")
    if not isinstance(summary, dict) or not summary:
        raise ResultsError('the results have no "summary" of strategies')
    for name, m in summary.items():
        if not isinstance(m, dict):
            raise ResultsError(f"summary/{name} is not an object")
        for key in ("n", "accuracy", "mean_forwards", "mean_sequence_forwards"):
            if not _number(m.get(key)):
                raise ResultsError(f"summary/{name}/{key} must be a number, got {m.get(key)!r}")
        if not 0 <= m["accuracy"] <= 1:
            raise ResultsError(f"summary/{name}/accuracy must lie in [0, 1], got {m['accuracy']}")
        ci = m.get("ci95")
        if ci is not None and not (isinstance(ci, list) and len(ci) == 2 and all(map(_number, ci))):
            raise ResultsError(f"summary/{name}/ci95 must be [low, high], got {ci!r}")
    if not isinstance(doc.get("records", []), list):
        raise ResultsError('"records" must be a list')
    return doc


def loads_results(data: bytes | str, max_bytes: int = MAX_RESULTS_BYTES) -> dict:
    size = len(data.encode() if isinstance(data, str) else data)
    if size > max_bytes:
        raise ResultsError(f"the file is {size / 2**20:.1f} MB; the limit is "
                           f"{max_bytes // 2**20} MB")
    try:
        doc = json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ResultsError(f"the file is not valid JSON ({exc}); give the file written by "
                           "`python -m medal bench --out`") from None
    return validate_results(doc)


def summary_rows(doc: dict) -> list[dict]:
    """One row per strategy: accuracy with its 95% interval and the mean costs ("—" for
    what the file does not hold)."""
    rows = []
    for name, m in doc["summary"].items():
        ci = m.get("ci95")
        rows.append({
            "strategy": str(name), "problems": int(m["n"]),
            "correct": m.get("correct", "—"), "accuracy": f"{m['accuracy']:.1%}",
            "95% interval": f"{ci[0]:.1%} – {ci[1]:.1%}" if ci else "—",
            "forward calls": round(m["mean_forwards"], 1),
            "sequences": round(m["mean_sequence_forwards"], 1),
            "seconds": round(m["mean_seconds"], 3) if _number(m.get("mean_seconds")) else "—",
            "MCTS iterations": (round(m["mean_iterations"], 1)
                                if _number(m.get("mean_iterations")) else "—"),
        })
    return rows


def frontier(doc: dict, cost: str = "mean_sequence_forwards") -> list[str]:
    """Strategies on the accuracy-against-cost Pareto frontier (no other strategy is both
    cheaper-or-equal and more accurate), cheapest first."""
    pts = [(m.get(cost), m["accuracy"], name) for name, m in doc["summary"].items()
           if _number(m.get(cost))]
    pts.sort(key=lambda p: (p[0], -p[1]))
    out, best = [], -1.0
    for c, acc, name in pts:
        if acc > best:
            out.append(name)
            best = acc
    return out


def frontier_figure(doc: dict, cost: str = "mean_sequence_forwards"):
    """Accuracy (with its 95% interval) against mean cost, one point per strategy, the
    frontier drawn as a step line."""
    import plotly.graph_objects as go

    if cost not in COSTS:
        raise ResultsError(f"cost must be one of {', '.join(COSTS)}, got {cost!r}")
    names = [n for n, m in doc["summary"].items() if _number(m.get(cost))]
    ms = [doc["summary"][n] for n in names]
    on = set(frontier(doc, cost))
    err_hi = [(m["ci95"][1] - m["accuracy"]) if m.get("ci95") else 0 for m in ms]
    err_lo = [(m["accuracy"] - m["ci95"][0]) if m.get("ci95") else 0 for m in ms]
    data = [go.Scatter(
        x=[m[cost] for m in ms], y=[m["accuracy"] for m in ms], mode="markers+text",
        text=[str(n) for n in names], textposition="top center",
        marker={"size": 12, "color": ["#d62728" if n in on else "#1f77b4" for n in names]},
        error_y={"type": "data", "array": err_hi, "arrayminus": err_lo, "thickness": 1.2},
        hovertemplate="%{text}<br>accuracy %{y:.1%}<br>cost %{x:.1f}<extra></extra>",
        name="strategies")]
    line = sorted(((doc["summary"][n][cost], doc["summary"][n]["accuracy"]) for n in on))
    if line:
        data.append(go.Scatter(x=[p[0] for p in line], y=[p[1] for p in line], mode="lines",
                               line={"shape": "hv", "color": "#d62728", "dash": "dot"},
                               name="frontier", hoverinfo="skip"))
    task = doc.get("task", "")
    return go.Figure(data=data, layout={
        "title": {"text": f"{task}: accuracy against cost (red: on the frontier)"},
        "xaxis": {"title": {"text": COSTS[cost]}, "type": "log" if cost != "mean_seconds" else "log"},
        "yaxis": {"title": {"text": "accuracy (95% interval)"}, "tickformat": ".0%",
                  "rangemode": "tozero"},
        "height": 460, "template": "plotly_white", "showlegend": False})
