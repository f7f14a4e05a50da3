"""Two traces walked along their timeline (:func:`diff_traces`): where they part, and why."""
from __future__ import annotations

from ..errors import InputError
from .causes import _config_changes, _explain
from .positions import (CONTEXT_KEYS, _config_completed, _content, _phase_of, _position_info,
                        _static, _strip_timing, without_context)
from .report import PHASES, Divergence, TraceDiff
from .tolerance import ABS, REL, _paths

def _phase_parts(trace: dict, phase: str):
    search = trace.get("search")
    if phase == "search":
        if not trace.get("tree"):
            return None
        return {"tree": [_static(n) for n in trace["tree"]["nodes"]],
                "iterations": trace.get("iterations"),
                "search": {k: (search or {}).get(k) for k in ("stop_reason", "iterations",
                                                               "candidates")}}
    if phase == "candidates":
        if not search:
            return None
        return {"search": {k: search.get(k) for k in ("winner", "candidate_scores")},
                "rollouts": [d for d in trace.get("decode") or []
                             if d["phase"].startswith("phase_c-")]}
    if phase == "decode":
        steps = [d for d in trace.get("decode") or [] if not d["phase"].startswith("phase_c-")]
        return steps or None
    comparison = trace.get("comparison")
    return comparison or None


def _side_by_side(a: dict, b: dict) -> dict:
    out = {}
    ra, rb = a.get("result") or {}, b.get("result") or {}
    for key in ("strategy",):
        out[key] = [a["run"].get(key), b["run"].get(key)]
    for key, label in (("answer", "answer"), ("verified", "verified"),
                       ("forwards", "forwards"), ("sequence_forwards", "sequences"),
                       ("cache_hits", "cache hits")):
        out[label] = [ra.get(key), rb.get(key)]
    sa, sb = a.get("search") or {}, b.get("search") or {}
    if sa or sb:
        out["winner"] = [sa.get("winner"), sb.get("winner")]
        out["iterations"] = [sa.get("iterations"), sb.get("iterations")]
        out["stop reason"] = [sa.get("stop_reason"), sb.get("stop_reason")]
    na, nb = (sum(len(d.get("edits") or []) for d in t.get("decode") or []) for t in (a, b))
    if na or nb:   # token edits (LLaDA2.1's editing) in the runs' decodes
        out["edits"] = [na, nb]
    ca, cb = ((t.get("comparison") or {}).get("result") or {} for t in (a, b))
    if ca or cb:
        out["greedy answer"] = [ca.get("answer"), cb.get("answer")]
        out["greedy verified"] = [ca.get("verified"), cb.get("verified")]
    ta, tb = a.get("timing") or {}, b.get("timing") or {}
    out["seconds"] = [ta.get("seconds"), tb.get("seconds")]   # context: never compared
    return out


def diff_traces(a: dict, b: dict, *, rel: float = REL, abs_tol: float = ABS,
                names: tuple[str, str] = ("A", "B")) -> TraceDiff:
    """Compare two traces (dicts that passed :func:`medal.trace.load_trace`).

    ``rel``/``abs_tol``: the float tolerance of ``equal_within_tolerance`` and of the
    first divergence (default: what another CPU's rounding needs). ``identical`` is exact.
    Returns a :class:`TraceDiff`; ``.format()`` is the report, ``.to_json()`` one JSON
    object. Neither trace is changed."""
    from ..timeline import positions

    for t, n in ((a, names[0]), (b, names[1])):
        if not isinstance(t, dict) or not isinstance(t.get("run"), dict):
            raise InputError(f"{n} is not a trace (load it with medal.trace.load_trace)")
    a, b = _config_completed(a), _config_completed(b)
    ca, cb = without_context(a), without_context(b)
    identical = ca == cb
    config = _config_changes(a, b)
    context = {k: [a.get(k), b.get(k)] for k in CONTEXT_KEYS if k in a or k in b}
    va, vb = a["run"].get("versions"), b["run"].get("versions")
    if va != vb:
        context["versions"] = [va, vb]
    da, db = ((t["run"].get("model") or {}).get("device") for t in (a, b))
    if da != db:
        context["device"] = [da, db]
    first = first_exact = None
    if not identical:
        pa, pb = positions(a), positions(b)
        for i in range(max(len(pa), len(pb))):
            x = pa[i] if i < len(pa) else None
            y = pb[i] if i < len(pb) else None
            ref_trace, ref = (a, x) if x is not None else (b, y)
            info = _position_info(ref_trace, ref)
            phase = _phase_of(ref.kind, ref_trace, ref)
            if x != y:
                cause, text, sa, sb, tie = _explain(a, b, x, y, info, [], config)
                d = Divergence(info, phase, cause, text, sa, sb, tie, [])
                first = first or d
                first_exact = first_exact or d
                break
            cx, cy = _strip_timing(_content(a, x)), _strip_timing(_content(b, y))
            if first_exact is None:
                exact = [(k + p, u, v) for k in cx
                         for p, u, v, _ in _paths(cx[k], cy.get(k), 0.0, 0.0, 3)]
                if exact:
                    cause, text, sa, sb, tie = _explain(a, b, x, y, info, exact, config)
                    first_exact = Divergence(info, phase, cause, text, sa, sb, tie, exact[:5])
            loose = [(k + p, u, v) for k in cx
                     for p, u, v, _ in _paths(cx[k], cy.get(k), rel, abs_tol, 3)]
            if loose:
                cause, text, sa, sb, tie = _explain(a, b, x, y, info, loose, config)
                first = Divergence(info, phase, cause, text, sa, sb, tie, loose[:5])
                break
        if first_exact is None or first is None:
            # nothing differs position by position: what is left (a field no position
            # covers) is compared whole
            rest = _paths(ca, cb, rel, abs_tol, 5)
            info = {"kind": "finished", "label": "finished"}
            if rest and first is None:
                first = Divergence(info, "result", "configuration" if config else
                                   "different values", f"{rest[0][0]}: {rest[0][3]}",
                                   paths=[(p, u, v) for p, u, v, _ in rest])
            exact = _paths(ca, cb, 0.0, 0.0, 5)
            if exact and first_exact is None:
                first_exact = Divergence(info, "result", "different values",
                                         f"{exact[0][0]}: {exact[0][3]}",
                                         paths=[(p, u, v) for p, u, v, _ in exact])
    equal = first is None
    phases = {}
    for ph in PHASES:
        x, y = _phase_parts(ca, ph), _phase_parts(cb, ph)
        if x is None and y is None:
            phases[ph] = "absent"
        elif x is None or y is None:
            phases[ph] = f"only in {names[0] if y is None else names[1]}"
        elif x == y:
            phases[ph] = "same"
        elif not _paths(x, y, rel, abs_tol, 1):
            phases[ph] = "same within tolerance"
        else:
            phases[ph] = "different"
    return TraceDiff(identical=identical, equal_within_tolerance=equal, first=first,
                     first_exact=first_exact, config=config, phases=phases,
                     side_by_side=_side_by_side(a, b), context=context,
                     tolerance=(rel, abs_tol), names=tuple(names))
