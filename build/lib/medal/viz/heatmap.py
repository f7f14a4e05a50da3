"""Per-slot entropy heatmaps, step x slot, for MEDAL and for greedy decoding (plotly).

A row is the entropy of every still-masked slot before one unmasking step (blank for
slots already unmasked); the cell of each slot unmasked at that step shows its token.
MEDAL's rows start with the search's commitments -- one row per node on the winner's
path (while the search runs: on the current selection path) -- then phase C.

By default the columns stop at the end of the answer (the first end-of-sequence token
unmasked; the rest is padding -- 21 of Countdown's 28 slots are often ``<eos>``);
``show_padding=True`` shows every slot. Columns are labelled by slot number with the
token under it; cell text is cut to fit (the hover shows it whole).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .common import main_phase, run_config, run_info, search_path, visible_token, winner_id
from .order import answer_end
from .safe import plotly_text

CELL_CHARS = 3   # characters of a token shown inside a cell


@dataclass
class EntropyGrid:
    title: str
    rows: list[list[float | None]] = field(default_factory=list)   # [step][slot]
    row_labels: list[str] = field(default_factory=list)
    slot_labels: list[str] = field(default_factory=list)
    marks: list[list[str]] = field(default_factory=list)           # token shown in a cell
    slots: list[int] = field(default_factory=list)                 # the answer slots shown
    hidden: int = 0                                                # padding slots left out

    @property
    def empty(self) -> bool:
        return not self.rows


def entropy_grid(trace: dict, which: str = "medal", show_padding: bool = False) -> EntropyGrid:
    """The step x slot entropy grid of MEDAL (``which="medal"``: the run's own strategy)
    or of the greedy comparison (``which="greedy"``); slots after the end of the answer
    left out unless ``show_padding``."""
    cfg = run_config(trace)
    L = cfg.get("gen_length") or 0
    rows: list[list[float | None]] = []
    labels: list[str] = []
    marks: list[list[str]] = []
    final: dict[int, str] = {f["slot"]: visible_token(f["text"])
                             for f in run_info(trace, "fixed_slots") or []}

    def add_row(entropy, label, slots, texts):
        row = list(entropy)[:L] + [None] * max(0, L - len(entropy))
        mark = [""] * L
        for s, t in zip(slots, texts):
            if 0 <= s < L:
                mark[s] = visible_token(t)
                final[s] = visible_token(t)
        rows.append(row)
        labels.append(label)
        marks.append(mark)

    if which == "greedy":
        comparison = trace.get("comparison") or {}
        title = "greedy (low-confidence)"
        for step in comparison.get("steps") or []:
            add_row(step["entropy"], f"step {step['step']}", step["slots"], step["token_texts"])
    else:
        title = run_info(trace, "strategy", "")
        path = search_path(trace)
        winner_known = winner_id(trace) is not None
        for d, node in enumerate(path):
            nxt = path[d + 1] if d + 1 < len(path) else None
            if nxt is None and winner_known:
                break  # the winner's own entropies are phase C's first row
            slots = [nxt["action"]["slot"]] if nxt else []
            texts = [nxt["action"].get("token_text", "?")] if nxt else []
            add_row(node["entropy"], f"MCTS {d}", slots, texts)
        phase = main_phase(trace)
        for step in trace.get("decode") or []:
            if step["phase"] == phase:
                add_row(step["entropy"], f"step {step['step']}", step["slots"],
                        step["token_texts"])
    end = None if show_padding else answer_end(trace, which)
    shown = list(range(L if end is None else end + 1))
    if len(shown) < L:
        rows = [[r[s] for s in shown] for r in rows]
        marks = [[m[s] for s in shown] for m in marks]
    slot_labels = [f"{s}<br>{_cut(final.get(s, '_'))}" for s in shown]
    marks = [[_cut(t) for t in m] for m in marks]
    return EntropyGrid(title=title, rows=rows, row_labels=labels, slot_labels=slot_labels,
                       marks=marks, slots=shown, hidden=L - len(shown))


def _cut(text: str, n: int = CELL_CHARS) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def entropy_heatmap(trace: dict, height_per_row: int = 17, show_padding: bool = False):
    """A plotly figure: MEDAL's grid, and greedy's beside it when the trace has one.

    Built in one go (traces and one layout dict, side-by-side axes by domain) rather than
    with ``make_subplots`` and per-axis updates: a third of the time, which matters as the
    figure is rebuilt at every UI step."""
    import plotly.graph_objects as go

    grids = [entropy_grid(trace, "medal", show_padding)]
    if trace.get("comparison"):
        grids.append(entropy_grid(trace, "greedy", show_padding))
    zmax = max((v for g in grids for r in g.rows for v in r if v is not None), default=1.0)
    gap = 0.08
    width = (1.0 - gap * (len(grids) - 1)) / len(grids)
    data, layout = [], {}
    annotations = []
    for k, g in enumerate(grids):
        suffix = "" if k == 0 else str(k + 1)
        x0 = k * (width + gap)
        # token texts and the strategy come from the trace: plotly renders <a>/<b> in
        # labels, so they go in escaped (shown literally)
        data.append(go.Heatmap(
            z=g.rows or [[None] * len(g.slot_labels)],
            x=[plotly_text(x) for x in g.slot_labels],
            y=[plotly_text(y) for y in g.row_labels] or ["(no step yet)"],
            text=[[plotly_text(m) for m in row] for row in g.marks] or None,
            texttemplate="%{text}", textfont={"size": 11 if len(g.slots) <= 20 else 9},
            coloraxis="coloraxis", xgap=1, ygap=1, xaxis="x" + suffix, yaxis="y" + suffix,
            hovertemplate="%{y}<br>slot %{x}<br>H = %{z:.3f}<extra>" + plotly_text(g.title)
                          + "</extra>"))
        title = "slot / token" + (f" ({g.hidden} padding slots hidden)" if g.hidden else "")
        layout["xaxis" + suffix] = {"domain": [x0, x0 + width], "anchor": "y" + suffix,
                                    "type": "category", "tickangle": 0, "automargin": True,
                                    "tickfont": {"size": 10}, "title": {"text": title}}
        layout["yaxis" + suffix] = {"anchor": "x" + suffix, "type": "category",
                                    "autorange": "reversed", "tickfont": {"size": 10},
                                    "automargin": True}
        annotations.append({"text": plotly_text(g.title), "x": x0 + width / 2, "y": 1.0, "xref": "paper",
                            "yref": "paper", "xanchor": "center", "yanchor": "bottom",
                            "showarrow": False, "font": {"size": 14}})
    n_rows = max((len(g.rows) for g in grids), default=1)
    layout.update(
        annotations=annotations,
        coloraxis={"colorscale": "Viridis", "cmin": 0, "cmax": zmax,
                   "colorbar": {"title": {"text": "entropy H"}}},
        height=max(260, 140 + height_per_row * n_rows),
        margin={"l": 60, "r": 20, "t": 40, "b": 80}, plot_bgcolor="#f7f7f7")
    return go.Figure(data=data, layout=layout)
