"""``medal repro TRACE``: re-run a trace from its own record and say whether it
reproduces (:func:`reproduce`), and what changed in the environment
(:func:`environment_changes`). The record itself is :mod:`medal.provenance`."""
from __future__ import annotations

from .provenance import record, set_command  # noqa: F401  (the names medal.repro had)


# ---------------------------------------------------------------------- a received trace

def load_recorded_model(trace: dict, what: str = "medal repro", **options):
    """The model a trace names, only if this machine has it (issue 31: a received trace
    is data, never an instruction): a built-in model, a checkpoint folder that exists
    here, or a hub id whose files are already in the local Hugging Face cache (then
    loaded with the hub switched off), with the KV cache the trace records (its mode, a
    decoding setting: prefix or dual). A hub id that is not here is never downloaded:
    :class:`ModelLoadError` says so and how to give the model (``--model SPEC``)."""
    from .errors import ModelLoadError
    from .models import load_model
    recorded = (trace.get("run") or {}).get("model") or {}
    name = recorded.get("name")
    name = name.strip() if isinstance(name, str) else ""
    if options.get("kv_cache") in (None, "off") and recorded.get("kv_cache") in ("prefix",
                                                                                "dual"):
        # the run decoded through Fast-dLLM's (approximate) block cache: its answers are
        # what the cache computed, so the re-run (or a fork) takes the same cache (the
        # CLI's --kv-cache is "off" unless given; to re-run without it, give the model)
        options = {**options, "kv_cache": recorded["kv_cache"]}
    if name.startswith("builtin:"):
        return load_model(name, **options)
    fix = ("; give the model yourself with --model SPEC (or model= in Python), e.g. a "
           "checkpoint folder you trust")
    try:
        from .models.hf import is_hf_spec, parse_spec
        source = parse_spec(name) if is_hf_spec(name) else None
    except ModelLoadError:
        source = None
    if source is None:
        raise ModelLoadError(f"{what}: the trace names the model {name[:80]!r}, which is "
                             f"not a model spec this machine can load{fix}")
    if source.local:
        from pathlib import Path
        if not Path(source.target).is_dir():
            raise ModelLoadError(f"{what}: the trace names the checkpoint folder "
                                 f"{source.target[:120]!r}, which is not on this machine{fix}")
        return load_model(name, **options)
    if not _in_hub_cache(source.target, source.revision):
        raise ModelLoadError(
            f"{what}: the trace names the hub model {source.name[:120]!r}, which is not on "
            "this machine; a received trace never makes MEDAL download a model (it could be "
            f"anyone's){fix}, or download it yourself first if you trust it "
            f"(`hf download {source.target[:120]}`)")
    with _hub_offline():
        return load_model(name, **options)


def _in_hub_cache(repo: str, revision: str | None) -> bool:
    try:
        from huggingface_hub import try_to_load_from_cache
        return isinstance(try_to_load_from_cache(repo, "config.json", revision=revision), str)
    except Exception:
        return False


class _hub_offline:
    """The Hugging Face hub switched off for one load (environment and the libraries'
    already-read constants), so a cached model is read from the cache only."""

    NAMES = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")

    def __enter__(self):
        import os
        self.env = {k: os.environ.get(k) for k in self.NAMES}
        os.environ.update({k: "1" for k in self.NAMES})
        self.consts = []
        try:
            import huggingface_hub.constants as c
            self.consts.append((c, "HF_HUB_OFFLINE", getattr(c, "HF_HUB_OFFLINE", None)))
            c.HF_HUB_OFFLINE = True
        except Exception:
            pass
        return self

    def __exit__(self, *exc):
        import os
        for k, v in self.env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        for mod, attr, value in self.consts:
            setattr(mod, attr, value)
        return False


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
