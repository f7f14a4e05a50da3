"""``medal repro TRACE``: re-run a trace from its own record and say whether it
reproduces (:func:`reproduce`), and what changed in the environment
(:func:`environment_changes`). The record itself is :mod:`medal.provenance`."""
from __future__ import annotations

from .models.recorded import load_recorded_model  # noqa: F401  (the name medal.repro had)
from .provenance import record, set_command  # noqa: F401  (the names medal.repro had)


# ---------------------------------------------------------------------- medal repro

MATCH = ("identical", "equal within float tolerance", "equal up to a near tie")


def reproduce(trace: dict, model=None, **load_options):
    """Run again what ``trace`` records (its model, task, prompt, strategy, resolved
    parameters and seed, with the greedy comparison if it has one) and compare.

    Returns ``(verdict, diff, new_trace)``: ``verdict`` is ``"identical"`` (the same trace,
    timing and environment aside), ``"equal within float tolerance"`` (every discrete
    choice the same, floats within what another CPU's rounding of the same forward needs),
    ``"equal up to a near tie"`` (the runs part only where the recorded choice was between
    values tied to float32 rounding: another CPU may take the other one) or
    ``"different"``; ``diff`` is :func:`medal.diff.diff_traces`'s answer (its ``first``
    names the first difference)."""
    from .diff import diff_traces
    from .engine import rerun
    from .errors import InputError
    from .tasks import task_of_trace as task_of

    if trace.get("fork"):
        raise InputError("this trace is a fork: reproduce its parent with medal repro, then "
                         "fork it again with the recorded action (medal fork)")
    task = trace["run"].get("task") or task_of(trace)
    if task is None:
        raise InputError("the trace does not say which task it ran (no run.task, and the "
                         "prompt is not a Countdown or Sudoku problem)")
    if model is None:
        model = load_recorded_model(trace, "medal repro", **load_options)
    new = rerun(trace, model, task=task)
    compared = new
    if "task" not in trace["run"]:  # a trace made before medal 0.2 does not name its task
        compared = {**new, "run": {k: v for k, v in new["run"].items() if k != "task"}}
    diff = diff_traces(trace, compared, names=("recorded", "re-run"))
    if diff.identical:
        verdict = "identical"
    elif diff.equal_within_tolerance:
        verdict = "equal within float tolerance"
    elif diff.first is not None and diff.first.near_tie:
        verdict = "equal up to a near tie"
    else:
        verdict = "different"
    return verdict, diff, new


def environment_changes(old: dict | None, new: dict | None) -> list[str]:
    """What differs between two reproducibility records, for people: versions, device."""
    if not old:
        return ["the recorded trace has no reproducibility record (made before medal 0.2)"]
    out = []
    for group in ("versions", "device", "platform"):
        a, b = old.get(group) or {}, (new or {}).get(group) or {}
        for key in sorted(set(a) | set(b)):
            if key != "threads" and a.get(key) != b.get(key):
                out.append(f"{group}.{key}: {a.get(key)} -> {b.get(key)}")
    ca, cb = old.get("checkpoint") or {}, (new or {}).get("checkpoint") or {}
    for part in ("files", "weights"):
        fa, fb = ca.get(part) or {}, cb.get(part) or {}
        changed = sorted(k for k in set(fa) | set(fb) if fa.get(k) != fb.get(k))
        if changed:
            out.append(f"checkpoint {part} differ: {', '.join(changed)}")
    return out


def rerun_example(trace: dict, task: str, model=None) -> dict:
    """Run again what a shipped example's ``trace`` records (:func:`medal.engine.rerun`),
    with the model it names unless ``model`` is given; returns the new trace (the
    examples' check: it still reproduces, :func:`medal.examples.comparable`)."""
    from .engine import rerun as run_again
    from .models import load_model

    model = model or load_model(trace["run"]["model"]["name"])
    return run_again(trace, model, task=task)
