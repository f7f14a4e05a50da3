"""A ``medal bench --out`` results file, read back for the Benchmark page: validated, as a
table, and as accuracy against cost with the Pareto frontier.

    doc = loads_results(open("results.json", "rb").read())
    rows = summary_rows(doc); fig = frontier_figure(doc, cost="mean_sequence_forwards")
"""
from __future__ import annotations

import math

from ..errors import InputError, TraceError
from .safe import plotly_text

RESULTS_FORMAT = "medal-bench"
MAX_RESULTS_BYTES = 20 * 1024 * 1024
MAX_DEPTH = 16            # a results file nests ~5 levels (records/i/problem/numbers)
MAX_STRATEGIES = 100
MAX_NAME = 200            # characters of a strategy name, the task, the model
MAX_PROBLEMS = 10_000_000
MAX_COST = 1e12           # forwards, sequences, seconds per problem
#: cost measures a frontier can use: summary key -> axis title
COSTS = {"mean_sequence_forwards": "sequences evaluated per problem (mean)",
         "mean_forwards": "batched forward calls per problem (mean)",
         "mean_seconds": "seconds per problem (mean, wall clock)",
         "mean_token_passes": "token passes per problem (mean; positions the network "
                              "processed)",
         "tpf": "tokens per forward (TPF: valid output tokens / sequence forwards; "
                "higher is cheaper)"}
#: costs where more is cheaper (the frontier runs the other way)
MORE_IS_CHEAPER = {"tpf"}


class ResultsError(InputError):
    """A file that is not a readable ``medal bench`` results document."""


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _quote(value) -> str:
    """A value from the file for an error message: short, and plain text (the page shows
    messages as text, never as Markdown)."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _cut(name) -> str:
    text = str(name)
    return text if len(text) <= 60 else text[:57] + "..."


def _check_results_bounds(doc: dict) -> None:
    """Meaning checks beyond the types (issue 21): names of bounded length, counts and
    costs in sensible ranges, an interval inside [0, 1] around the accuracy."""
    summary = doc["summary"]
    if len(summary) > MAX_STRATEGIES:
        raise ResultsError(f"the summary has {len(summary)} strategies; at most {MAX_STRATEGIES}")
    for key in ("task", "model", "problems"):
        v = doc.get(key)
        if v is not None and (not isinstance(v, str) or len(v) > MAX_NAME * 5):
            raise ResultsError(f'"{key}" must be text of at most {MAX_NAME * 5} characters')
    for name, m in summary.items():
        where = f"summary/{_cut(name)}"
        if len(name) > MAX_NAME:
            raise ResultsError(f"a strategy name of {len(name):,} characters; at most {MAX_NAME}")
        n = m["n"]
        if type(n) is not int or not 1 <= n <= MAX_PROBLEMS:
            raise ResultsError(f"{where}/n must be a whole number of problems from 1 to "
                               f"{MAX_PROBLEMS:,}, got {_quote(n)}")
        correct = m.get("correct")
        if correct is not None and (type(correct) is not int or not 0 <= correct <= n):
            raise ResultsError(f"{where}/correct must be a whole number from 0 to n = {n}, "
                               f"got {_quote(correct)}")
        for key in ("mean_forwards", "mean_sequence_forwards", "mean_seconds",
                    "mean_iterations", "mean_cache_hits", "mean_token_passes",
                    "mean_valid_tokens", "tpf"):
            v = m.get(key)
            if v is not None and not (_number(v) and 0 <= v <= MAX_COST):
                raise ResultsError(f"{where}/{key} must be a number from 0 to {MAX_COST:g}, "
                                   f"got {_quote(v)}")
        ci = m.get("ci95")
        if ci is not None and not (0 <= ci[0] <= m["accuracy"] + 1e-9
                                   and m["accuracy"] - 1e-9 <= ci[1] <= 1):
            raise ResultsError(f"{where}/ci95 must lie in [0, 1] around the accuracy, got "
                               f"{_quote(ci)}")


def _parse(data: bytes | str, max_bytes: int):
    """JSON through the trace gate's hardened parser (no deep nesting, no 5000-digit
    numbers, no NaN, no duplicate keys, bounded containers)."""
    from ..trace.gate.parse import _first_bad, parse
    try:
        doc = parse(data)
    except TraceError as exc:
        reason = str(exc).split(";")[0].replace("the file is not a trace: ", "")
        reason = reason.replace("invalid trace at", "at").replace("a trace", "a results file")
        raise ResultsError(f"{reason}; give the file written by `python -m medal bench --out`") from None
    bad = _first_bad(doc, MAX_DEPTH)
    if bad is not None:
        path, message = bad
        raise ResultsError(f"at {'/'.join(map(str, path)) or '(top level)'}: {message}")
    return doc


def validate_results(doc) -> dict:
    """Check the parts the page reads; :class:`ResultsError` says what is wrong."""
    if not isinstance(doc, dict) or doc.get("format") != RESULTS_FORMAT:
        raise ResultsError('this is not a MEDAL benchmark results file (the top-level "format" '
                           f'must be "{RESULTS_FORMAT}"); write one with '
                           "`python -m medal bench ... --out results.json`")
    if doc.get("version") != 1:
        raise ResultsError(f"results version {_quote(doc.get('version'))} is not supported (this "
                           "MEDAL Explorer reads version 1)")
    summary = doc.get("summary")
    if not isinstance(summary, dict) or not summary:
        raise ResultsError('the results have no "summary" of strategies')
    for name, m in summary.items():
        if not isinstance(m, dict):
            raise ResultsError(f"summary/{_cut(name)} is not an object")
        for key in ("n", "accuracy", "mean_forwards", "mean_sequence_forwards"):
            if not _number(m.get(key)):
                raise ResultsError(f"summary/{_cut(name)}/{key} must be a number, got "
                                   f"{_quote(m.get(key))}")
        if not 0 <= m["accuracy"] <= 1:
            raise ResultsError(f"summary/{_cut(name)}/accuracy must lie in [0, 1], got "
                               f"{_quote(m['accuracy'])}")
        ci = m.get("ci95")
        if ci is not None and not (isinstance(ci, list) and len(ci) == 2 and all(map(_number, ci))):
            raise ResultsError(f"summary/{_cut(name)}/ci95 must be [low, high], got {_quote(ci)}")
    if not isinstance(doc.get("records", []), list):
        raise ResultsError('"records" must be a list')
    _check_results_bounds(doc)
    return doc


def loads_results(data: bytes | str, max_bytes: int = MAX_RESULTS_BYTES) -> dict:
    """The one gate for a results file (the Benchmark page's upload): size, the hardened
    parser, the shape and the meaning. Raises only :class:`ResultsError`."""
    if not isinstance(data, (bytes, bytearray, str)):
        raise ResultsError(f"a results file is JSON text, not {type(data).__name__}")
    size = len(data)
    if isinstance(data, str) and size <= max_bytes:
        size = len(data.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        raise ResultsError(f"the file is {size:,} bytes; the limit is {max_bytes:,} bytes "
                           f"({max_bytes / 2**20:g} MiB)")
    doc = _parse(bytes(data) if isinstance(data, bytearray) else data, max_bytes)
    try:
        return validate_results(doc)
    except ResultsError:
        raise
    except (KeyError, IndexError, TypeError, AttributeError, ValueError,
            OverflowError) as exc:  # pragma: no cover -- never let one escape the gate
        raise ResultsError(f"invalid results file: {type(exc).__name__}") from None


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
            "token passes": (round(m["mean_token_passes"])
                             if _number(m.get("mean_token_passes")) else "—"),
            "TPF": round(m["tpf"], 3) if _number(m.get("tpf")) else "—",
            "MCTS iterations": (round(m["mean_iterations"], 1)
                                if _number(m.get("mean_iterations")) else "—"),
        })
    return rows


def frontier(doc: dict, cost: str = "mean_sequence_forwards") -> list[str]:
    """Strategies on the accuracy-against-cost Pareto frontier (no other strategy is both
    cheaper-or-equal and more accurate), cheapest first."""
    pts = [(m.get(cost), m["accuracy"], name) for name, m in doc["summary"].items()
           if _number(m.get(cost))]
    sign = -1 if cost in MORE_IS_CHEAPER else 1
    pts.sort(key=lambda p: (sign * p[0], -p[1]))
    out, best = [], -1.0
    for c, acc, name in pts:
        if acc > best:
            out.append(name)
            best = acc
    return out


#: where a point's label may go, in order of preference, and the label box's offset from
#: the point (in units of the box's width and height, and the marker's radius)
_PLACES = (("top center", -0.5, 0.0, 0, 1), ("bottom center", -0.5, -1.0, 0, -1),
           ("middle right", 0.0, -0.5, 1, 0), ("middle left", -1.0, -0.5, -1, 0),
           ("top right", 0.0, 0.0, 1, 1), ("bottom right", 0.0, -1.0, 1, -1),
           ("top left", -1.0, 0.0, -1, 1), ("bottom left", -1.0, -1.0, -1, -1))


def label_positions(xs: list, ys: list, labels: list, width: float = 600,
                    height: float = 280, char_px: float = 7.5, line_px: float = 16,
                    marker_px: float = 8) -> list[str]:
    """A plotly ``textposition`` per point so that no two labels overlap (and no label
    covers another point), placed greedily in a plot area of about ``width`` x ``height``
    pixels (the Benchmark page's narrowest layout): x on a log scale, y linear from 0.
    Points whose labels cannot be kept apart keep "top center"."""
    pts = [(float(x), float(y)) for x, y in zip(xs, ys)]
    if not pts:
        return []
    lx = [math.log10(max(x, 1e-12)) for x, _ in pts]
    x_lo, x_hi = min(lx), max(lx)
    x_pad = max((x_hi - x_lo) * 0.1, 0.05)
    y_hi = max(max(y for _, y in pts), 1e-9) * 1.1
    px = [((v - x_lo + x_pad) / (x_hi - x_lo + 2 * x_pad) * width, y / y_hi * height)
          for v, (_, y) in zip(lx, pts)]

    def clash(a, b):
        return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]

    taken = [(x - marker_px, y - marker_px, x + marker_px, y + marker_px) for x, y in px]
    out = []
    for i, ((x, y), label) in enumerate(zip(px, labels)):
        w, h = char_px * len(str(label)) + 4, line_px
        others = taken[:i] + taken[i + 1:len(px)] + taken[len(px):]
        choice = None
        for name, fx, fy, mx, my in _PLACES:
            x0 = x + fx * w + mx * marker_px
            y0 = y + fy * h + my * marker_px
            box = (x0, y0, x0 + w, y0 + h)
            if not any(clash(box, o) for o in others):
                choice = (name, box)
                break
        if choice is None:
            fx, fy, mx, my = _PLACES[0][1:]
            x0, y0 = x + fx * w + mx * marker_px, y + fy * h + my * marker_px
            choice = (_PLACES[0][0], (x0, y0, x0 + w, y0 + h))
        out.append(choice[0])
        taken.append(choice[1])
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
    labels = [plotly_text(n) for n in names]
    data = [go.Scatter(
        x=[m[cost] for m in ms], y=[m["accuracy"] for m in ms], mode="markers+text",
        text=labels, textposition=label_positions([m[cost] for m in ms],
                                                  [m["accuracy"] for m in ms], labels),
        # on the frontier: a filled red dot; off it: a blue ring, larger, so that a point
        # off the frontier never hides one on it at the same place (greedy under random,
        # issue 28 #7)
        marker={"size": [11 if n in on else 17 for n in names],
                "color": ["#d62728" if n in on else "#1f77b4" for n in names],
                "symbol": ["circle" if n in on else "circle-open" for n in names],
                "line": {"width": 2.5}},
        # one colour: plotly.js cannot take the markers' list here ("Invalid color
        # specifier" in the console, bars drawn black)
        error_y={"type": "data", "array": err_hi, "arrayminus": err_lo, "thickness": 1.2,
                 "color": "#7f7f7f"},
        hovertemplate="%{text}<br>accuracy %{y:.1%}<br>cost %{x:.1f}<extra></extra>",
        name="strategies")]
    line = sorted(((doc["summary"][n][cost], doc["summary"][n]["accuracy"]) for n in on))
    if line:
        data.append(go.Scatter(x=[p[0] for p in line], y=[p[1] for p in line], mode="lines",
                               line={"shape": "hv", "color": "#d62728", "dash": "dot"},
                               name="frontier", hoverinfo="skip"))
    task = doc.get("task", "")
    return go.Figure(data=data, layout={
        "title": {"text": plotly_text(f"{task}: accuracy against cost (red dot: on the "
                                      "frontier; blue ring: off it)")},
        "xaxis": {"title": {"text": COSTS[cost]}, "type": "log" if cost != "mean_seconds" else "log"},
        "yaxis": {"title": {"text": "accuracy (95% interval)"}, "tickformat": ".0%",
                  "rangemode": "tozero"},
        "height": 460, "template": "plotly_white", "showlegend": False})
