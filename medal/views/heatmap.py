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


def grid_rows(trace: dict, which: str = "medal") -> tuple[str, list[tuple]]:
    """(title, rows) of the step x slot grid: each row (entropy, label, slots, texts) --
    the record's own entropy list (not copied), the row's label, and the slots it
    unmasked with their tokens' texts. MEDAL's rows: one per node on the winner's path
    (while the search runs, on the current selection path), then its main decode."""
    rows: list[tuple] = []
    if which == "greedy":
        comparison = trace.get("comparison") or {}
        for step in comparison.get("steps") or []:
            rows.append(_step_row(step))
        return "greedy (low-confidence)", rows
    path = search_path(trace)
    winner_known = winner_id(trace) is not None
    for d, node in enumerate(path):
        nxt = path[d + 1] if d + 1 < len(path) else None
        if nxt is None and winner_known:
            break  # the winner's own entropies are phase C's first row
        slots = [nxt["action"]["slot"]] if nxt else []
        texts = [nxt["action"].get("token_text", "?")] if nxt else []
        rows.append((node["entropy"], f"MCTS {d}", slots, texts))
    phase = main_phase(trace)
    for step in trace.get("decode") or []:
        if step["phase"] == phase:
            rows.append(_step_row(step))
    return run_info(trace, "strategy", ""), rows


#: marks a rewritten token in a heatmap cell (token editing, LLaDA2.1)
EDIT_MARK = "✎"


def _step_row(step: dict) -> tuple:
    """A decode step's row: the slots it unmasked, then those it rewrote (marked)."""
    slots, texts = list(step["slots"]), list(step["token_texts"])
    for e in step.get("edits") or ():
        slots.append(e["slot"])
        texts.append(EDIT_MARK + (e.get("new_text") or ""))
    return step["entropy"], f"step {step['step']}", slots, texts


def grid_row(entropy, slots, texts, L: int) -> tuple[list, list[str]]:
    """One row's cells (the entropy of each of the L slots, None past the record's) and
    marks (the token shown in each slot the row unmasked)."""
    row = list(entropy)[:L] + [None] * max(0, L - len(entropy))
    mark = [""] * L
    for s, t in zip(slots, texts):
        if 0 <= s < L:
            mark[s] = visible_token(t)
    return row, mark


def final_tokens(trace: dict, rows: list[tuple], L: int) -> dict[int, str]:
    """Each slot's token as the grid's rows leave it (fixed slots first)."""
    final: dict[int, str] = {f["slot"]: visible_token(f["text"])
                             for f in run_info(trace, "fixed_slots") or []}
    for _e, _label, slots, texts in rows:
        for s, t in zip(slots, texts):
            if 0 <= s < L:
                final[s] = visible_token(t)
    return final


def entropy_grid(trace: dict, which: str = "medal", show_padding: bool = False) -> EntropyGrid:
    """The step x slot entropy grid of MEDAL (``which="medal"``: the run's own strategy)
    or of the greedy comparison (``which="greedy"``); slots after the end of the answer
    left out unless ``show_padding``."""
    L = run_config(trace).get("gen_length") or 0
    title, described = grid_rows(trace, which)
    rows, marks, labels = [], [], []
    for entropy, label, slots, texts in described:
        row, mark = grid_row(entropy, slots, texts, L)
        rows.append(row)
        marks.append(mark)
        labels.append(label)
    final = final_tokens(trace, described, L)
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
