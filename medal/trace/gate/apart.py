"""The gate in a child process: :func:`loads_trace_apart` (the served app's uploads).

Parsing and decoding a 20 MB upload builds hundreds of MB of short-lived objects; in the
server's own process they left its heap fragmented, and its resident memory only grew
over hostile uploads and closed sessions (issue 40: 384 -> 812 MB after 20 uploads, most
of them refused). Here a fresh Python process (``python -c``: nothing of the server's
state or threads is copied into it) parses and checks the text; a refused upload costs the
server nothing but the wait, an accepted one the finished trace it reads back. The trace
comes back pickled (a decoded 1,000-node trace is hundreds of MB as JSON text, a fraction of
a second as a pickle), read by an unpickler that makes no object but the plain data a trace
is made of (dicts, lists, text, numbers; no class or function is ever looked up but the
one that rebuilds a node's top tokens from bytes: :mod:`medal.trace.toprows`), so even
a child that had been subverted could not make the server run anything. The child's memory goes back to the system when it exits,
and its CPU is bounded (RLIMIT_CPU), so even a gate that met something it does not bound
cannot hold the server. A child costs ~0.3 CPU-s to start (Python, NumPy).
"""
from __future__ import annotations

import io
import os
import pickle
import subprocess
import sys

from ...errors import TraceError
from ..limits import MAX_TRACE_BYTES

#: CPU seconds a child may spend checking one upload (the largest trace the gate accepts
#: took 6.2 CPU-s, 1.6 s since its top tokens are kept as columns: docs/SERVING.md)
CPU_SECONDS = 60
_CHILD = "from medal.trace.gate.apart import _child; _child()"


class _PlainData(pickle.Unpickler):
    """An unpickler for plain data only: any class or function a pickle names is refused,
    but the one that rebuilds a node's top tokens from their bytes
    (:class:`~medal.trace.toprows.TopRows`, which checks what it is given)."""

    def find_class(self, module, name):
        if (module, name) == ("medal.trace.toprows", "_rebuild"):
            from ..toprows import _rebuild
            return _rebuild
        raise TraceError(f"the trace's checker sent back an object ({module}.{name}), not "
                         "plain data")


def _child() -> None:
    """In the child: read (text, max_bytes, max_k1, cpu_seconds) pickled on stdin, write
    (trace, None) or (None, message) pickled on stdout."""
    text, max_bytes, max_k1, cpu_seconds = pickle.load(sys.stdin.buffer)
    if cpu_seconds:
        import resource
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds + 5))
    from . import loads_trace
    try:
        out = (loads_trace(text, max_bytes, max_k1), None)
    except TraceError as exc:
        out = (None, str(exc))
    except MemoryError:
        out = (None, "checking the trace took more memory than this machine has for it")
    pickle.dump(out, sys.stdout.buffer, protocol=pickle.HIGHEST_PROTOCOL)
    sys.stdout.buffer.flush()


def loads_trace_apart(text: str | bytes, max_bytes: int = MAX_TRACE_BYTES,
                      max_k1: int | None = None, cpu_seconds: int | None = CPU_SECONDS) -> dict:
    """:func:`~medal.trace.loads_trace` in a fresh child process: the same trace or the
    same TraceError; a child that ran past ``cpu_seconds`` or died is a TraceError too."""
    if not isinstance(text, (str, bytes, bytearray)):
        raise TraceError(f"a trace is JSON text, not {type(text).__name__}")
    if len(text) > max_bytes:          # refused here, without a child, as the gate says it
        from . import loads_trace
        return loads_trace(text, max_bytes, max_k1)
    if max_k1 is None:                 # this process's operator limit, not the child's
        from . import _operator_k1
        max_k1 = _operator_k1(None)
    request = pickle.dumps((bytes(text) if isinstance(text, bytearray) else text, max_bytes,
                            max_k1, cpu_seconds), protocol=pickle.HIGHEST_PROTOCOL)
    # this package where the server found it (a clone run without installing it too)
    home = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (home, os.environ.get("PYTHONPATH")) if p)}
    child = subprocess.run([sys.executable, "-c", _CHILD], input=request,
                           capture_output=True, env=env)
    if child.returncode != 0 or not child.stdout:
        raise TraceError("checking the trace was stopped: it took more than this server "
                         f"gives one upload ({cpu_seconds} CPU seconds), or failed") from None
    trace, error = _PlainData(io.BytesIO(child.stdout)).load()
    if error is not None:
        raise TraceError(error)
    return trace
