"""How much memory a load or a training run may still take, on the GPU or on this
machine: the one ``available_memory`` that every memory guard reads (the model loader's,
the trainer's). Light to import: torch only for a CUDA device."""
from __future__ import annotations

import os
import resource
from pathlib import Path


def _kib_field(path: str, key: str) -> float | None:
    """``key:`` of a /proc file that gives sizes in kB (MemAvailable, VmSize), in bytes."""
    try:
        for line in Path(path).read_text().splitlines():
            if line.startswith(key + ":"):
                return float(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _meminfo_available() -> float | None:
    found = _kib_field("/proc/meminfo", "MemAvailable")
    if found is not None:
        return found
    try:
        return float(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return None


def _cgroup_room() -> float | None:
    """What this process's cgroup (v2, or v1's memory controller) may still take."""
    for limit, usage in (("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
                         ("/sys/fs/cgroup/memory/memory.limit_in_bytes",
                          "/sys/fs/cgroup/memory/memory.usage_in_bytes")):
        try:
            most = Path(limit).read_text().strip()
            used = float(Path(usage).read_text().strip())
        except (OSError, ValueError):
            continue
        if most == "max" or not most.isdigit() or int(most) >= 2 ** 60:
            return None
        return max(0.0, float(most) - used)
    return None


def _vm_size() -> float | None:
    return _kib_field("/proc/self/status", "VmSize")


def _address_space_room() -> float | None:
    """Room left under ``ulimit -v`` (RLIMIT_AS): the limit less this process's size."""
    try:
        soft, _hard = resource.getrlimit(resource.RLIMIT_AS)
    except (ValueError, OSError):
        return None
    if soft == resource.RLIM_INFINITY:
        return None
    size = _vm_size()
    return max(0.0, float(soft) - (size or 0.0))


def available_memory(device=None) -> float | None:
    """Bytes a new allocation may still take: on a CUDA ``device`` the GPU's free memory;
    otherwise the least of the machine's available memory, this process's cgroup room and
    its address-space limit (``ulimit -v``). None when nothing can be read."""
    if device is not None and getattr(device, "type", str(device)) == "cuda":
        import torch
        free, _total = torch.cuda.mem_get_info(device)
        return float(free)
    known = [x for x in (_meminfo_available(), _cgroup_room(), _address_space_room())
             if x is not None]
    return min(known) if known else None


def is_out_of_memory(exc: BaseException) -> bool:
    """An allocation that failed: Python's MemoryError, torch's out-of-memory errors
    (CUDA's, and the CPU allocator's RuntimeError), a map or read refused with ENOMEM
    (safetensors' "Cannot allocate memory (os error 12)")."""
    if isinstance(exc, MemoryError):
        return True
    if isinstance(exc, OSError) and exc.errno == 12:
        return True
    text = str(exc).lower()
    return any(s in text for s in ("out of memory", "can't allocate memory",
                                   "cannot allocate memory", "os error 12"))
