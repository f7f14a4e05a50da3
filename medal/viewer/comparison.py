"""Two runs side by side on one timeline (issue 19): ``medal.compare(a, b)``.

``a`` and ``b`` are traces (dicts), traced :class:`~medal.engine.Run` objects or paths to
trace files (read through :func:`medal.trace.load_trace`, the one gate). The result, a
:class:`Comparison`, holds

* ``diff`` -- :func:`medal.diff.diff_traces`'s answer (identical? the first divergence and
  its cause: the two selections with their UCB values, a near tie, a different action set,
  a forced action, a different sample...);
* ``rows`` -- the shared timeline: the two runs' positions aligned (the same position of
  both runs on one row; where one run has a position the other has not, the other shows
  its latest position);
* ``part_row`` -- the row where the runs part (None when they do not).

It shows itself inline in a notebook (``_repr_html_``) and writes one self-contained
offline HTML page (:meth:`Comparison.save_html`; ``medal diff A B --html OUT.html``). The
page is the shared viewer (:mod:`medal.viewer`) twice, stepped by one timeline, with a
"Where they part" panel and the answers, verdicts and costs side by side.
"""
from __future__ import annotations

import difflib
import hashlib
import html as _html
from pathlib import Path

from ..errors import InputError
from ..timeline import label_at

FORMAT = "medal-compare/1"


def _as_trace(x, what: str) -> tuple[dict, str | None]:
    """(trace dict, a name from the path or None)."""
    from ..trace import load_trace
    if isinstance(x, (str, Path)):
        return load_trace(x), Path(x).stem
    trace = getattr(x, "trace", x)
    if isinstance(trace, dict) and isinstance(trace.get("run"), dict):
        return dict(trace), None
    raise InputError(f"{what}: compare traces (dicts), traced Runs (trace=True) or trace "
                     f"files, not {type(x).__name__}")


def path_words(trace: dict, path: str) -> str:
    """A JSON path into a trace with its decode step named the way every view names it
    (issue 28 #4: "/decode/2/tokens" is decode step 4 when the search committed 2):
    "decode step 4: tokens (/decode/2/tokens)"."""
    import re
    from ..timeline import step_name
    m = re.match(r"^/(decode|comparison/steps)/(\d+)(?:/(.*))?$", str(path))
    if not m:
        return path
    try:
        steps = trace["decode"] if m.group(1) == "decode" else trace["comparison"]["steps"]
        name = step_name(steps[int(m.group(2))], greedy=m.group(1) != "decode")
    except (KeyError, IndexError, TypeError):
        return path
    return f"{name}{': ' + m.group(3) if m.group(3) else ''} ({path})"


def _key(pos) -> tuple:
    return (pos.kind, pos.iteration, pos.label)


def align(pa: list, pb: list) -> list[tuple[int | None, int | None]]:
    """The two position lists on one timeline: rows of (index in A or None, index in B or
    None), in order; equal positions share a row."""
    sm = difflib.SequenceMatcher(None, [_key(p) for p in pa], [_key(p) for p in pb],
                                 autojunk=False)
    rows: list[tuple[int | None, int | None]] = []
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        if tag == "equal":
            rows.extend(zip(range(i1, i2), range(j1, j2)))
            continue
        # replace/insert/delete: pair what is there one to one, then the rest alone
        n = max(i2 - i1, j2 - j1)
        for k in range(n):
            rows.append((i1 + k if i1 + k < i2 else None, j1 + k if j1 + k < j2 else None))
    return rows


def _plain(v):
    """A JSON-safe value for the page (numbers kept, the rest as text)."""
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, float):
        return v if v == v and v not in (float("inf"), float("-inf")) else str(v)
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    return str(v)


class Comparison:
    """Two runs on one timeline; see the module docstring."""

    def __init__(self, a: dict, b: dict, names: tuple[str, str] = ("A", "B"),
                 height: int = 1100, *, rel: float | None = None,
                 abs_tol: float | None = None):
        from ..diff import ABS, REL, diff_traces
        from ..timeline import positions
        self.a, self.b = a, b
        self.names = tuple(names)
        self.height = height
        self.diff = diff_traces(a, b, names=self.names, rel=REL if rel is None else rel,
                                abs_tol=ABS if abs_tol is None else abs_tol)
        self.positions = (positions(a), positions(b))
        self.rows = align(*self.positions)
        self.part_row = self._part_row()

    # -------------------------------------------------------------- the parting row
    def _part_row(self) -> int | None:
        d = self.diff.first or self.diff.first_exact
        if d is None:
            return None
        p = d.position
        for side, plist in enumerate(self.positions):
            for i, pos in enumerate(plist):
                if pos.kind != p.get("kind"):
                    continue
                if p.get("iteration") is not None and pos.iteration != p["iteration"]:
                    continue
                if p.get("index") is not None and pos.index != p["index"]:
                    continue
                for r, row in enumerate(self.rows):
                    if row[side] == i:
                        return r
        # the first row whose positions differ (a run that ends earlier, a field no
        # position covers: the end)
        for r, (i, j) in enumerate(self.rows):
            if i is None or j is None:
                return r
        return len(self.rows) - 1 if self.rows else None

    def where_they_part(self) -> dict | None:
        """The "Where they part" panel's content: the row, the position, the cause and its
        explanation, what each run did there (e.g. the selected node, its action, UCB),
        whether it was a near tie; None when the runs are identical."""
        d = self.diff.first or self.diff.first_exact
        if d is None:
            return None
        side_a, side_b = d.a, d.b
        if not side_a and not side_b and self.part_row is not None:
            side_a, side_b = (self._what_it_did(k) for k in (0, 1))
        return _plain({"row": self.part_row, "label": d.position.get("label"),
                       "position": d.position, "phase": d.phase, "cause": d.cause,
                       "explanation": d.explanation, "a": side_a, "b": side_b,
                       "near_tie": d.near_tie,
                       "paths": [[path_words(self.a, p[0]), *p[1:]] for p in d.paths[:3]],
                       "within_tolerance": self.diff.first is None})

    def _what_it_did(self, k: int) -> dict:
        """What run ``k`` did at the parting row, when the diff's cause names no two
        choices (a forced action, a run that ends earlier): its step's slots, tokens and
        scores, or its selection there."""
        i = self.rows[self.part_row][k]
        if i is None:
            return {"position": "none (the other run's only)"}
        t, pos = (self.a, self.b)[k], self.positions[k][i]
        out: dict = {"position": label_at(t, pos)}
        if pos.kind in ("decode", "compare"):
            st = (t["decode"] if pos.kind == "decode" else t["comparison"]["steps"])[pos.index]
            out["unmasks"] = [f"{s}:{x}" for s, x in zip(st["slots"], st["token_texts"])]
            out["scores"] = st.get("scores")
        elif pos.kind == "selection":
            it = next((x for x in t.get("iterations") or [] if x["iteration"] == pos.iteration),
                      None)
            chosen = [r for lv in (it or {}).get("selection", {}).get("levels", [])
                      for r in lv if r.get("chosen")]
            out["path"] = [r["node"] for r in chosen]
            out["UCB"] = [r.get("ucb") for r in chosen]
        if (t.get("fork") or {}).get("forced"):
            out["forced"] = [f"{f['slot']}:{f['token_text']}" for f in t["fork"]["forced"]]
        return out

    def verdict(self) -> str:
        if self.diff.identical:
            return "identical (timing and environment aside)"
        if self.diff.equal_within_tolerance:
            return "equal within tolerance, not identical"
        return "different"

    # -------------------------------------------------------------- the page
    def bundle(self, *, key: str | None = None, frames=None) -> dict:
        """What the viewer's compare mode takes. ``frames``: two ready
        :class:`medal.viewer.Frames` (the app's caches), else computed here."""
        from ..views.frames import Frames
        if key is None:
            from ..trace import trace_sha256
            key = "cmp-" + hashlib.sha256(
                (trace_sha256(self.a) + trace_sha256(self.b)).encode()).hexdigest()[:12]
        if frames is None:
            fa, fb = Frames(f"{key}-a"), Frames(f"{key}-b")
            fa.update(self.a)
            fb.update(self.b)
        else:
            fa, fb = frames
        labels = [[label_at(self.a, self.positions[0][i]) if i is not None else None,
                   label_at(self.b, self.positions[1][j]) if j is not None else None]
                  for i, j in self.rows]
        side = [[k, _plain(x), _plain(y)] for k, (x, y) in self.diff.side_by_side.items()]
        return {"format": FORMAT, "key": key, "names": list(self.names),
                "a": fa.bundle(), "b": fb.bundle(), "rows": [list(r) for r in self.rows],
                "labels": labels, "part": self.where_they_part(), "verdict": self.verdict(),
                "config": _plain(self.diff.config), "phases": _plain(self.diff.phases),
                "side": side}

    def html(self, title: str | None = None) -> str:
        """One self-contained HTML document (the viewer inlined, no network)."""
        from .html_page import standalone_page
        title = title or f"MEDAL compare: {self.names[0]} vs {self.names[1]}"
        return standalone_page(self.bundle(), title, mount="compare", element="medal-compare",
                               name="medalCompare")

    def save_html(self, path) -> Path:
        """Write the page atomically (a temporary file renamed over ``path``)."""
        from ..files import write_atomic
        return write_atomic(path, self.html())

    def _repr_html_(self) -> str:
        doc = _html.escape(self.html(), quote=True)
        return (f'<iframe class="medal-compare" srcdoc="{doc}" style="width:100%;'
                f'height:{self.height}px;border:1px solid #ddd" '
                'sandbox="allow-scripts"></iframe>')

    def format(self) -> str:
        """The text report (``medal diff``'s)."""
        return self.diff.format()

    def __repr__(self) -> str:
        return (f"<medal.Comparison {self.names[0]} vs {self.names[1]}: {self.verdict()}"
                + (f", part at row {self.part_row}" if self.part_row is not None else "")
                + ">")


def compare(a, b, *, names: tuple[str, str] | None = None, height: int = 1100) -> Comparison:
    """Two runs side by side on one timeline: traces (dicts), traced Runs or trace files.
    ``names``: what the page calls them (default: the files' names, "parent"/"fork" for a
    fork and its parent, else A and B). In a notebook it displays itself;
    ``.save_html(path)`` writes one offline page; ``.diff`` is :func:`medal.diff.diff_traces`'s
    answer; ``.where_they_part()`` the first divergence with its cause."""
    ta, na = _as_trace(a, "A")
    tb, nb = _as_trace(b, "B")
    if names is None:
        names = (na or "A", nb or "B")
        if names[0] == names[1]:
            names = (names[0] + " (A)", names[1] + " (B)")
        from ..trace import trace_sha256
        if (tb.get("fork") or {}).get("parent_sha256") == trace_sha256(ta) and not (na or nb):
            names = ("parent", "fork")
    return Comparison(ta, tb, tuple(str(n) for n in names), height)


