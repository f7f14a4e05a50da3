"""Per-slot entropy heatmaps, step x slot, for MEDAL and for greedy decoding (the grid the viewer draws).

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
