"""Small helpers shared by the views: escaping, number formatting, node look-ups.

Every view reads a trace dict -- the same dict whether it comes live from
``run.trace`` or from an uploaded file -- so token texts and prompts are untrusted
here: anything that ends up in HTML goes through :func:`esc`.
"""
from __future__ import annotations

import html
import math
from typing import Any

MASK_GLYPH = "_"


def esc(value: Any) -> str:
    """HTML-escape any value (quotes included, so it is safe inside attributes)."""
    return html.escape("" if value is None else str(value), quote=True)


def finite(value: Any) -> float | None:
    """A plain finite float, or None (for None, NaN, infinities and non-numbers)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def fmt(value: Any, digits: int = 4) -> str:
    """A number for display: ``inf`` for an unvisited child's UCB, ``—`` when unknown."""
    if isinstance(value, float) and math.isinf(value):
        return "∞" if value > 0 else "-∞"
    v = finite(value)
    if v is None:
        return "—"
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return f"{v:.{digits}f}"


def distinct_digits(values, most: int = 6) -> int:
    """The fewest decimals (at least 3, at most ``most``) at which the finite ``values``
    that differ also read differently: a legend's two ends, a simulation's rewards (at 3
    decimals a search's tiny r_IG all read 0.004)."""
    vals = sorted({v for v in values if isinstance(v, (int, float)) and math.isfinite(v)})
    for d in range(3, most + 1):
        if len({f"{v:.{d}f}" for v in vals}) == len(vals):
            return d
    return most


def clip(text: str, n: int) -> str:
    """``text`` cut to ``n`` characters, with how much was left out."""
    text = str(text)
    return text if len(text) <= n else f"{text[:n]}… ({len(text) - n:,} more characters)"


def visible_token(text: str | None) -> str:
    """A token as it should read in a label: spaces and line breaks made visible."""
    if text is None:
        return "?"
    if text == "":
        return "∅"
    return text.replace(" ", "␣").replace("\n", "⏎").replace("\t", "⇥")


def run_config(trace: dict) -> dict:
    """The run's resolved parameters ({} for an empty trace)."""
    return (trace.get("run") or {}).get("config") or {}


def run_info(trace: dict, key: str, default=None):
    return (trace.get("run") or {}).get(key, default)


def nodes_by_id(trace: dict) -> dict[int, dict]:
    """Node id -> node. A tree that carries its index (the frame builder's trees,
    :class:`medal.views.tree_state.IndexedTree`) answers from it, read only."""
    tree = trace.get("tree") or {}
    index = getattr(tree, "by_id", None)
    if index is not None:
        return index
    return {n["id"]: n for n in tree.get("nodes", [])}


def node_path(nodes: dict[int, dict], node_id: int) -> list[int]:
    """Node ids from the root down to ``node_id``."""
    out, seen = [], set()
    current = node_id
    while current is not None and current in nodes and current not in seen:
        seen.add(current)
        out.append(current)
        current = nodes[current].get("parent")
    return out[::-1]


def action_label(node: dict, max_chars: int = 12, sep: str = " ") -> str:
    """``token @slot`` for a node made by an action (long tokens cut to ``max_chars``;
    ``sep`` between the two); ``root`` for the root."""
    action = node.get("action")
    if not action:
        return "root"
    token = visible_token(action.get("token_text", str(action["token"])))
    if len(token) > max_chars:
        token = token[: max_chars - 1] + "…"
    return f"{token}{sep}@{action['slot']}"


def winner_id(trace: dict) -> int | None:
    search = trace.get("search") or {}
    return search.get("winner")


def candidate_ids(trace: dict) -> list[int]:
    """The search's candidates: final once the search stopped; the ones collected so
    far (from the backpropagation records) while it runs."""
    search = trace.get("search")
    if search:
        return list(search.get("candidates") or [])
    known = getattr(trace.get("tree"), "candidates", None)   # the frame builder's index
    if known is not None:
        return list(known)
    out: list[int] = []
    for it in trace.get("iterations", []):
        bp = it.get("backpropagation")
        if bp:
            out.extend(bp.get("new_candidates", []))
    return out


def current_path(trace: dict) -> list[int]:
    """The selection path of the latest iteration (root first); [] before any."""
    its = trace.get("iterations") or []
    if not its:
        return []
    return list(its[-1]["selection"]["path"])


def latest_children(trace: dict) -> list[int]:
    """The children made by the latest expansion; [] if it has not happened yet."""
    its = trace.get("iterations") or []
    if not its or not its[-1].get("expansion"):
        return []
    return list(its[-1]["expansion"]["children"])


def main_phase(trace: dict) -> str | None:
    """Which decode phase is the run's own answer (phase C, a baseline, a chosen sample)."""
    phases = [s["phase"] for s in trace.get("decode") or []]
    if any(p == "phase_c" or p.startswith("phase_c-") for p in phases):
        return "phase_c"  # (phase_c-<id>: other candidates completed for comparison)
    if "decode" in phases:
        return "decode"
    result = trace.get("result") or {}
    if result.get("chosen_sample") is not None:
        return f"sample-{result['chosen_sample']}"
    return phases[-1] if phases else None


def search_path(trace: dict) -> list[dict]:
    """The nodes whose commitments start MEDAL's answer: the winner's path once chosen,
    the current selection path before that."""
    nodes = nodes_by_id(trace)
    if not nodes:
        return []
    w = winner_id(trace)
    ids = node_path(nodes, w) if w is not None else current_path(trace)
    return [nodes[i] for i in ids if i in nodes]


def lerp_colour(t: float, stops: tuple[str, ...]) -> str:
    """Linear interpolation through hex colour stops, t in [0, 1]."""
    t = min(1.0, max(0.0, t))
    if len(stops) == 1:
        return stops[0]
    pos = t * (len(stops) - 1)
    i = min(int(pos), len(stops) - 2)
    f = pos - i
    a, b = stops[i], stops[i + 1]
    rgb = [round(int(a[k:k + 2], 16) * (1 - f) + int(b[k:k + 2], 16) * f) for k in (1, 3, 5)]
    return "#" + "".join(f"{v:02x}" for v in rgb)


#: viridis, sampled -- readable on white and for most colour-blind readers
VIRIDIS = ("#440154", "#3b528b", "#21918c", "#5ec962", "#fde725")
#: the step at which a slot was unmasked (order strip, Sudoku board, Countdown expression):
#: a rainbow ("turbo", sampled) whose first steps are far apart -- viridis's dark purple and
#: dark blue were hard to tell apart (issue 18 #8). The same stops as the viewer script's STEPS (viewer-core.js).
STEP_COLOURS = ("#30123b", "#4662d7", "#36aaf9", "#1ae4b6", "#72fe5e", "#c8ef34", "#faba39",
                "#f66b19", "#ca2a04", "#7a0403")


def text_colour_for(background: str) -> str:
    """Black or white, whichever reads better on ``background``."""
    r, g, b = (int(background[k:k + 2], 16) for k in (1, 3, 5))
    return "#000000" if 0.299 * r + 0.587 * g + 0.114 * b > 150 else "#ffffff"
