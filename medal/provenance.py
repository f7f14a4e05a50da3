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

``medal repro TRACE`` re-runs a trace from its own record (:func:`medal.repro.reproduce`).
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
