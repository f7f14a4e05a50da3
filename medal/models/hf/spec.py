"""A model spec and a load's options: ``family:target@revision``, implementation, device, dtype."""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import torch

from ...errors import InputError, ModelLoadError
from ..options import DEVICES, DTYPE_CHOICES, DTYPE_NAMES, IMPLEMENTATION_ENV, IMPLEMENTATIONS  # noqa: F401

#: spec prefixes: a family, or ``hf:`` (the family read from the checkpoint's config.json)
FAMILIES = ("llada", "dream", "mlm", "hf")
#: families MEDAL has its own model code for (medal/models/native.py)
NATIVE_FAMILIES = ("llada", "llada-moe", "dream", "llada2")
#: how the network runs: MEDAL's own code, or the checkpoint's (opt-in remote code)
SHORTCUTS = {
    "llada-8b-instruct": "llada:GSAI-ML/LLaDA-8B-Instruct",
    "llada-1.5": "llada:GSAI-ML/LLaDA-1.5",
    "dream-7b-instruct": "dream:Dream-org/Dream-v0-Instruct-7B",
}
DTYPES = {name: getattr(torch, name) for name in DTYPE_NAMES}


@dataclass(frozen=True)
class ModelSource:
    """Where a checkpoint comes from: a family, a hub id or local directory, a revision."""
    family: str
    target: str
    revision: str | None = None
    local: bool = False

    @property
    def name(self) -> str:
        return f"{self.family}:{self.target}" + (f"@{self.revision}" if self.revision else "")


def choose_implementation(option: str | None = None) -> str:
    """``native`` (default) or ``remote``: the option, else ``MEDAL_IMPLEMENTATION``."""
    value = (option or os.environ.get(IMPLEMENTATION_ENV, "") or "native").strip().lower()
    if value not in IMPLEMENTATIONS:
        raise InputError(f"implementation must be one of {', '.join(IMPLEMENTATIONS)}; got "
                         f"{value!r} (from {'the option' if option else IMPLEMENTATION_ENV})")
    return value


def is_hf_spec(spec: str) -> bool:
    """True for a shortcut or a ``llada:``/``dream:``/``mlm:``/``hf:`` spec."""
    family, sep, _ = spec.partition(":")
    return spec.split("@", 1)[0] in SHORTCUTS or (bool(sep) and family in FAMILIES)


def parse_spec(spec: str, revision: str | None = None) -> ModelSource:
    """``family:target[@revision]`` or a shortcut -> :class:`ModelSource`.

    The target is a local directory if one exists at that path, or if it looks like a
    path (starts with ``/``, ``.`` or ``~``); otherwise a hub id (``org/name``). A
    ``@revision`` suffix pins a hub commit, branch or tag (not split off a path that exists).
    """
    spec = spec.strip()
    head, _, pinned = spec.partition("@")
    if head in SHORTCUTS:
        spec = SHORTCUTS[head] + (f"@{pinned}" if pinned else "")
    family, sep, target = spec.partition(":")
    if not sep or family not in FAMILIES or not target.strip():
        raise ModelLoadError(f"unknown model spec {spec!r}; use llada:<hub id or dir>, "
                             "dream:<hub id or dir>, mlm:<hub id or dir>, hf:<hub id or dir> "
                             "(family from its config.json; all optionally "
                             f"@<revision>) or a shortcut: {', '.join(SHORTCUTS)}")
    target = target.strip()
    if "@" in target and not Path(target).expanduser().exists():
        target, pinned = target.rsplit("@", 1)
        if not pinned:
            raise ModelLoadError(f"{spec!r} ends in '@' with no revision after it")
        if revision and revision != pinned:
            raise ModelLoadError(f"two different revisions: {pinned!r} in the spec and "
                                 f"{revision!r} from --revision; give one")
        revision = pinned
    path = Path(target).expanduser()
    local = path.exists() or target.startswith(("/", ".", "~"))
    if local:
        if revision:
            raise ModelLoadError(f"a revision ({revision!r}) pins a hub checkpoint; "
                                 f"{target} is a local directory -- drop the revision")
        target = str(path)
    return ModelSource(family, target, revision or None, local)


def choose_device(device: str | None = "auto") -> torch.device:
    """``auto``: CUDA when torch sees a GPU, else the CPU."""
    device = device or "auto"
    if device not in DEVICES:
        raise InputError(f"device must be one of {', '.join(DEVICES)}; got {device!r}")
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise ModelLoadError(f"--device cuda, but torch sees no CUDA GPU (torch "
                             f"{torch.__version__}; torch.cuda.is_available() is False). Use "
                             "--device cpu, or install a CUDA build of torch on a GPU machine")
    return torch.device(device)


def choose_dtype(dtype: str | None, device: torch.device) -> torch.dtype:
    """``auto``: bfloat16 on a GPU (float16 if it lacks bfloat16), float32 on the CPU."""
    dtype = dtype or "auto"
    if dtype not in DTYPE_CHOICES:
        raise InputError(f"dtype must be one of {', '.join(DTYPE_CHOICES)}; got {dtype!r}")
    if dtype != "auto":
        return DTYPES[dtype]
    if device.type == "cuda":
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    return torch.float32
