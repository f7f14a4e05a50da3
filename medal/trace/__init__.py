"""The trace: a versioned JSON document with everything the UI shows (DESIGN section 3).

What a run leaves behind, by job: :mod:`.recorder` (an observer of the engine's events
that builds the trace), :mod:`.packing` (the compact written forms; packed-2's
:mod:`.differences`), :mod:`.writing` (JSON text and files), :mod:`.gate` (the one way
back in: :func:`load_trace`, against ``trace.schema.json``, saying what is wrong with a
bad one) and :mod:`.limits` (the format's constants and limits). The names here are the
ones the rest of MEDAL uses.

A loaded trace keeps each node's top tokens as columns (:class:`TopRows`, a read-only
sequence of the slots' rows, equal to the list of rows it holds): write a loaded trace
with :func:`dumps` / :func:`write_trace`, or ``json.dumps(trace, default=json_default)``.
"""
from __future__ import annotations

from .gate import load_trace, loads_trace, size_text, validate_trace
from .gate.apart import loads_trace_apart
from .gate.schema import load_schema as schema
from .limits import (DECODED_PER_BYTE, MAX_ANY_STRING, MAX_TRACE_BYTES, TRACE_FORMAT,
                     TRACE_VERSION)
from .packing import PACKED, PACKED_1, PACKED_FORMS, pack, pack_v1, unpack
from .recorder import LONG_ANSWER, TraceRecorder, jsonable, torch_nonzero
from .toprows import TopRows, json_default
from .writing import dumps, trace_sha256, write_trace

__all__ = ["load_trace", "loads_trace", "loads_trace_apart", "validate_trace", "size_text", "schema",
           "MAX_ANY_STRING", "MAX_TRACE_BYTES", "TRACE_FORMAT", "TRACE_VERSION",
           "DECODED_PER_BYTE", "PACKED", "PACKED_1", "PACKED_FORMS", "pack", "pack_v1",
           "unpack", "LONG_ANSWER", "TraceRecorder", "jsonable", "torch_nonzero", "dumps",
           "write_trace", "trace_sha256", "TopRows", "json_default"]
