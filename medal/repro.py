"""Where a run ran: the reproducibility record of every trace and every bench result.

Users of diffusion LMs report scores that move with the CUDA version, the batch size or a
checkpoint's code; a result that records none of it cannot be explained later. Each trace
carries, in its top-level ``reproducibility`` block (outside what must reproduce, like
``timing``):

* ``versions`` -- medal, torch, transformers, tokenizers, numpy, python;
* ``platform`` -- the OS and machine; ``device`` -- the model's device, the GPU's name,
  CUDA and cuDNN versions, the weights' dtype, the CPU threads;
* ``checkpoint`` -- the checkpoint folder's resolved revision (the hub snapshot's commit),
  the SHA-256 of its code files (``*.py``), its config and tokenizer files and its weight
  index (a sharded checkpoint's ``*.index.json``; a single small weights file whole, a
  large one by its safetensors header, which fixes every tensor's name, shape, dtype and
  offset);
* ``seed`` and ``command`` -- the command line, when the run was started from one.

``medal repro TRACE`` re-runs a trace from its own record (:func:`reproduce`).
"""
from __future__ import annotations

import hashlib
import platform
import shlex
import struct
from importlib import metadata
from pathlib import Path

from ._version import __version__

#: weights files up to this size are hashed whole; larger ones by their safetensors header
WHOLE_FILE_BYTES = 64 * 1024 * 1024
#: checkpoint files hashed besides the code: configs, tokenizers, weight indexes
RECORDED_SUFFIXES = (".py", ".json", ".txt", ".model", ".jinja")
#: a recorded command line is cut here (the trace gate bounds every string)
MAX_COMMAND_CHARS = 4000
_COMMAND: list[str] | None = None


def set_command(argv: list[str] | None) -> None:
    """Record the command line this process was started with (the CLI calls this)."""
    global _COMMAND
    _COMMAND = None if argv is None else list(argv)


def current_command() -> str | None:
    """The recorded command line, shell-quoted; None for a run made through the API."""
    if _COMMAND is None:
        return None
    text = " ".join(shlex.quote(a) for a in ["medal", *_COMMAND])
    if len(text) > MAX_COMMAND_CHARS:  # e.g. a --problem of 100,000 numbers
        text = text[:MAX_COMMAND_CHARS] + f"… ({len(text):,} characters in all)"
    return text


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def versions() -> dict:
    import torch
    return {"medal": __version__, "torch": torch.__version__,
            "transformers": _version("transformers"), "tokenizers": _version("tokenizers"),
            "numpy": _version("numpy"), "python": platform.python_version()}


def device_record(model) -> dict:
    import torch
    device = getattr(model, "device", torch.device("cpu"))
    device = torch.device(device) if not isinstance(device, torch.device) else device
    out = {"device": str(device), "threads": torch.get_num_threads(),
           "dtype": _dtype(model), "gpu": None,
           "cuda": torch.version.cuda, "cudnn": None}
    if device.type == "cuda" and torch.cuda.is_available():
        out["gpu"] = torch.cuda.get_device_name(device)
        out["cudnn"] = torch.backends.cudnn.version()
    return out


def _dtype(model) -> str | None:
    described = getattr(model, "dtype", None)
    if described is None:
        net = getattr(model, "net", None)
        params = next(iter(net.parameters()), None) if net is not None else None
        described = params.dtype if params is not None else None
    return str(described).replace("torch.", "") if described is not None else None


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def safetensors_header_sha256(path: Path) -> str:
    """SHA-256 of a safetensors file's header (its length prefix and JSON)."""
    with open(path, "rb") as f:
        prefix = f.read(8)
        (n,) = struct.unpack("<Q", prefix)
        return hashlib.sha256(prefix + f.read(min(n, 100 * 1024 * 1024))).hexdigest()


def checkpoint_record(directory: Path | None) -> dict | None:
    """The revision and file hashes of a checkpoint folder (None: no folder known)."""
    if directory is None or not Path(directory).is_dir():
        return None
    directory = Path(directory)
    parts = directory.resolve().parts
    # a hub cache folder: .../models--org--name/snapshots/<commit>/
    revision = parts[-1] if len(parts) >= 2 and parts[-2] == "snapshots" else None
    files, weights = {}, {}
    for path in sorted(directory.iterdir()):
        if not path.is_file():
            continue
        if path.suffix in RECORDED_SUFFIXES:
            files[path.name] = sha256_file(path)
        elif path.suffix == ".safetensors":
            if path.stat().st_size <= WHOLE_FILE_BYTES:
                weights[path.name] = {"sha256": sha256_file(path)}
            else:
                weights[path.name] = {"header_sha256": safetensors_header_sha256(path)}
    return {"revision": revision, "files": files, "weights": weights}


def record(model, seed: int | None = None) -> dict:
    """The whole reproducibility record of a run of ``model``."""
    directory = getattr(model, "checkpoint_dir", None)
    return {"versions": versions(),
            "platform": {"system": platform.system(), "machine": platform.machine(),
                         "python_implementation": platform.python_implementation()},
            "device": device_record(model),
            "checkpoint": checkpoint_record(directory() if callable(directory) else directory),
            "seed": seed, "command": current_command()}


# ---------------------------------------------------------------------- a received trace

def load_recorded_model(trace: dict, what: str = "medal repro", **options):
    """The model a trace names, only if this machine has it (issue 31: a received trace
    is data, never an instruction): a built-in model, a checkpoint folder that exists
    here, or a hub id whose files are already in the local Hugging Face cache (then
    loaded with the hub switched off). A hub id that is not here is never downloaded:
    :class:`ModelLoadError` says so and how to give the model (``--model SPEC``)."""
    from .errors import ModelLoadError
    from .models import load_model
    name = ((trace.get("run") or {}).get("model") or {}).get("name")
    name = name.strip() if isinstance(name, str) else ""
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


def check_received_config(trace: dict, what: str = "medal repro", settings=None) -> None:
    """A received trace's run settings within this machine's limits (the same as the
    app's: :data:`medal.serving.DEFAULT_LIMITS`, or the operator's MEDAL_MAX_* settings),
    before anything runs: InputError naming the setting and how to raise the limit."""
    from . import serving
    from .config import GenerationConfig
    from .errors import InputError
    settings = serving.current() if settings is None else settings
    cfg = GenerationConfig.from_json(dict(trace["run"]["config"]))
    try:
        serving.check_limits(settings, cfg)
    except InputError as exc:
        msg = str(exc).replace("this server's limit", "this machine's limit")
        raise InputError(f"{what}: the trace's settings are beyond this machine's limits: "
                         f"{msg}; a received trace runs within them (raise that limit for "
                         "this command if you mean it)") from None


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
    from .errors import InputError
    from .viz.board import task_of
    from .viz.examples import rerun

    if trace.get("fork"):
        raise InputError("this trace is a fork: reproduce its parent with medal repro, then "
                         "fork it again with the recorded action (medal fork)")
    task = trace["run"].get("task") or task_of(trace)
    if task is None:
        raise InputError("the trace does not say which task it ran (no run.task, and the "
                         "prompt is not a Countdown or Sudoku problem)")
    if model is None:
        model = load_recorded_model(trace, "medal repro", **load_options)
    new = rerun(trace, task, model)
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
