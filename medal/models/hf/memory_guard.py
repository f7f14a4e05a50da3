"""The memory guard: will a checkpoint fit (parameters from its files), and the messages if not."""
from __future__ import annotations

import math
from pathlib import Path

import torch

from ...errors import ModelLoadError
from ...memory import available_memory
from .checkpoint import DOWNLOAD_AGAIN, read_safetensors_header
from .spec import ModelSource

GB = 1e9
#: Memory estimate: the weights times this factor. A search step (K2 = 5 children of a
#: chat prompt with the two-shot decomposition plus 256 slots; logits for the answer rows
#: only) measured 1.06x the weights for LLaDA-8B and 1.08x for Dream-7B (meta device,
#: through the adapter); 1.15 keeps a margin of 7% of the weights above the larger.
#: LLaDA-8B in bfloat16: 16.0 GB x 1.15 = 18.4 GB. --skip-memory-check skips the check.
MEMORY_FACTOR = 1.15


def checkpoint_directory(source: ModelSource) -> Path | None:
    """The local folder holding the checkpoint, if it is on disk (hub cache included)."""
    if source.local:
        return Path(source.target)
    try:
        from huggingface_hub import try_to_load_from_cache
        hit = try_to_load_from_cache(source.target, "config.json", revision=source.revision)
    except Exception:  # an odd id or cache layout: no estimate, the load says the rest
        return None
    return Path(hit).parent if isinstance(hit, str) else None


def count_parameters(directory: Path) -> int | None:
    """Parameters in the safetensors files of ``directory``, read from their headers only
    (None without any). A damaged file is a :class:`ModelLoadError` naming it and the fix
    (:func:`read_safetensors_header`: a Git-LFS pointer, a file cut short, not safetensors)."""
    total = 0
    files = sorted(directory.glob("*.safetensors"))
    for f in files:
        header = read_safetensors_header(f)
        try:
            total += sum(math.prod(t["shape"]) for k, t in header.items()
                         if k != "__metadata__")
        except (TypeError, KeyError) as exc:
            raise ModelLoadError(f"{f} is not a safetensors file (a tensor without a shape: "
                                 f"{type(exc).__name__}): {DOWNLOAD_AGAIN}") from None
    return total if files else None


def memory_needed(parameters: float, dtype: torch.dtype) -> float:
    """Bytes to hold the weights in ``dtype`` and run one search step (MEMORY_FACTOR)."""
    return parameters * (torch.finfo(dtype).bits // 8) * MEMORY_FACTOR


def memory_message(name: str, parameters: float, dtype: torch.dtype, need: float,
                   free: float, device: torch.device) -> ModelLoadError:
    """The refusal: what failed and what to do on its first line, the arithmetic after."""
    width = torch.finfo(dtype).bits // 8
    dtype_name = str(dtype).replace("torch.", "")
    if device.type == "cuda":
        have = f"the GPU has {free / GB:.1f} GB free"
        advice = ("use a GPU with more free memory (24 GB+ for an 8B model in bfloat16) or "
                  "free this one" + (", or --dtype bfloat16" if width > 2 else ""))
    else:
        have = (f"this process can take {free / GB:.1f} GB more (the least of the machine's "
                "free memory, its cgroup's and ulimit -v's)")
        advice = "use a CUDA GPU (--device cuda)" + (
            ", or --dtype bfloat16 to halve the weights" if width > 2 else "")
    return ModelLoadError(
        f"not enough memory for {name}: it needs about {need / GB:.1f} GB and {have}",
        fix=f"{advice}; if you know it fits, --skip-memory-check (memory_check=False) loads "
            "it anyway",
        details=f"{parameters / 1e9:.2f} B parameters x {width} bytes in {dtype_name} = "
                f"{parameters * width / GB:.1f} GB of weights, plus activations "
                f"(x{MEMORY_FACTOR:g} in all)")


def check_memory(source: ModelSource, typical_parameters: float | None, device: torch.device,
                 dtype: torch.dtype) -> None:
    directory = checkpoint_directory(source)
    parameters = count_parameters(directory) if directory else None
    parameters = parameters or typical_parameters
    if not parameters:
        return
    need = memory_needed(parameters, dtype)
    free = available_memory(device)
    if free is not None and need > free:
        raise memory_message(source.name, parameters, dtype, need, free, device)


def out_of_memory(name: str, exc: BaseException, device: torch.device,
                  dtype: torch.dtype | None = None) -> ModelLoadError:
    """A load that the guard let through and that still ran out of memory (another process
    took memory meanwhile, a limit the guard cannot read, an estimate too low). ``dtype``:
    the weights' (``--dtype bfloat16`` is suggested only for a wider one, or when it is
    not known)."""
    where = "the GPU" if device.type == "cuda" else "this machine or process"
    halve = dtype is None or torch.finfo(dtype).bits > 16
    return ModelLoadError(
        f"ran out of memory while loading {name} on {where}",
        fix=("free the GPU, use a larger one, or --device cpu" if device.type == "cuda" else
             "use a CUDA GPU (--device cuda), "
             + ("--dtype bfloat16 to halve the weights, " if halve else "")
             + "or raise this process's memory limit (ulimit -v, the container's limit)"),
        details=f"{type(exc).__name__}: {str(exc)[:300]}")
