"""Writing a trace: JSON text (:func:`dumps`); a packed, checked file (:func:`write_trace`)."""
from __future__ import annotations

import json
from pathlib import Path

from ..config import RANGES
from ..files import write_atomic
from .gate import validate_trace
from .limits import MAX_TRACE_BYTES
from .packing import pack
from .recorder import jsonable
from .toprows import json_default


def dumps(trace: dict, packed: bool = False) -> str:
    """The trace as JSON text; ``packed``: in the compact written form (:func:`pack`),
    which :func:`loads_trace` reads back to the same trace."""
    plain = jsonable(trace)
    return json.dumps(pack(plain) if packed else plain, allow_nan=False,
                      separators=(",", ":"), default=json_default)


def write_trace(trace: dict, path: str | Path) -> int:
    """Write the trace, packed (:func:`pack`), after checking it; returns its size in bytes."""
    text = dumps(trace, packed=True)
    data = text.encode("utf-8")
    # the run's own K1 bounds its top entries here (the engine's range): a trace is written
    # whole; a reader holds it to its own operator's limits (MEDAL_MAX_K1)
    validate_trace(json.loads(text), max_bytes=max(len(data), MAX_TRACE_BYTES),
                   max_k1=RANGES["k1"][1])
    write_atomic(path, data)
    return len(data)


def trace_sha256(trace: dict) -> str:
    """SHA-256 of a trace's canonical JSON (:func:`dumps`): a fork names its parent by it,
    and a comparison keys a pair by it."""
    import hashlib
    return hashlib.sha256(dumps(trace).encode("utf-8")).hexdigest()
