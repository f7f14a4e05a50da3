"""The viewer inline in a Jupyter notebook: :func:`show` (``medal.show``), :class:`Display`
(an inline frame holding the self-contained page) and :class:`Trace` (a dict that shows
itself)."""
from __future__ import annotations

import html as _html
from pathlib import Path
from .html_page import page


# ---------------------------------------------------------------------- notebooks

class Display:
    """What :func:`medal.show` returns: it displays itself in Jupyter (an inline frame
    holding the self-contained page: offline, its scripts isolated from the notebook's)."""

    def __init__(self, trace: dict, height: int = 860):
        self.trace = trace
        self.height = height

    def html(self) -> str:
        return page(self.trace)

    def _repr_html_(self) -> str:
        doc = _html.escape(self.html(), quote=True)
        return (f'<iframe class="medal-show" srcdoc="{doc}" style="width:100%;'
                f'height:{self.height}px;border:1px solid #ddd" '
                'sandbox="allow-scripts"></iframe>')

    def save(self, path) -> Path:
        path = Path(path)
        path.write_text(self.html(), encoding="utf-8")
        return path


class Trace(dict):
    """A trace (still a plain dict to every function that takes one) that shows itself
    as the viewer in a notebook: ``medal.Trace(medal.load_trace("run.json"))``."""

    def _repr_html_(self) -> str:
        return show(self)._repr_html_()


def show(trace_or_run, height: int = 860) -> Display:
    """A run or trace as the viewer, inline in a notebook: ``medal.show(run)``,
    ``medal.show(medal.load_trace("run.json"))``."""
    from_run = hasattr(trace_or_run, "trace") and not isinstance(trace_or_run, dict)
    trace = getattr(trace_or_run, "trace", trace_or_run) if from_run else trace_or_run
    if isinstance(trace, Trace):
        trace = dict(trace)
    if not isinstance(trace, dict) or not trace.get("run"):
        raise TypeError("medal.show takes a Run (made with trace=True) or a trace dict")
    if not from_run:
        # a dict may come from anywhere (json.load of a received file): through the one
        # gate, as medal.load_trace would (TraceError naming the place, or a trace fit to
        # render); a Run's own trace is the engine's
        from ..trace import validate_trace
        trace = validate_trace(trace)
    return Display(trace, height)
