"""The one gate for trace files: :func:`load_trace` / :func:`loads_trace`.

Parse with limits (:mod:`.parse`), decode the packing (:mod:`medal.trace.packing`), then
the schema (:mod:`.schema`), the meaning (:mod:`.meaning`), the bounds (:mod:`.bounds`) and a
beam search's record (:mod:`.beam`).
A trace that passes is fit to render: every view draws it (the fuzz test checks that).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ...errors import TraceError
from ..limits import MAX_TRACE_BYTES, TRACE_FORMAT, TRACE_VERSION
from ..packing import _OverBound, unpack
from ..toprows import TopRows
from .beam import check_beam
from .bounds import check_bounds, check_shape
from .edits import check_edits
from .meaning import check_fork, check_meaning
from .parse import _short, parse
from .schema import check_schema


def _operator_k1(max_k1: int | None) -> int:
    """``max_k1``, or this machine's operator limit (MEDAL_MAX_K1, :mod:`medal.config`)."""
    if max_k1 is not None:
        return max_k1
    from ...config import operator_limit
    from ...errors import InputError
    try:
        return operator_limit("k1")
    except InputError as exc:
        raise TraceError(f"cannot check a trace: {exc}") from None


def check(data: Any, max_k1: int | None = None) -> dict:
    """Schema and meaning; returns ``data`` when it is fit to render. ``max_k1``: the
    operator's K1 limit (the most top tokens a slot may carry; None: this machine's,
    MEDAL_MAX_K1)."""

    if not isinstance(data, dict) or data.get("format") != TRACE_FORMAT:
        raise TraceError("this is not a MEDAL trace (the top-level \"format\" must be "
                         f"\"{TRACE_FORMAT}\"); export one from the app or with --trace")
    if data.get("version") != TRACE_VERSION or type(data.get("version")) is not int:
        raise TraceError(f"trace version {_short(data.get('version'))} is not supported "
                         f"(this MEDAL Explorer reads version {TRACE_VERSION})")
    check_shape(data)
    check_schema(data)
    try:
        check_meaning(data)
        check_edits(data)
        if "fork" in data:
            check_fork(data)
        check_bounds(data, _operator_k1(max_k1))
        check_beam(data)
    except (KeyError, IndexError, TypeError, AttributeError) as exc:  # pragma: no cover
        # the schema makes these impossible; never let one escape the gate
        raise TraceError(f"invalid trace: {type(exc).__name__} {exc}") from None
    _as_columns(data)
    return data


def _as_columns(data: dict) -> None:
    """Every node's checked rows of top tokens kept as columns (:class:`TopRows`; packed-3's
    are already): a trace reads the same whatever form it was written in, in a fraction of
    the memory (issue 41)."""
    tree = data.get("tree")
    texts: dict = {}
    for node in tree["nodes"] if tree else ():
        top = node["top"]
        if type(top) is TopRows:
            texts = top.texts if not texts else texts
            continue
        columns = TopRows.from_rows(top, texts)
        if columns is not None:
            node["top"] = columns


def validate_trace(data: Any, max_bytes: int | None = None, max_k1: int | None = None) -> dict:
    """Check a parsed trace (any form: plain, packed-1, -2 or -3): decode the packing
    (bounded by ``max_bytes``, the size limit: :data:`MAX_TRACE_BYTES` by default, and
    ``max_k1``, the operator's K1 limit: MEDAL_MAX_K1 by default), then the schema, then
    its meaning (:mod:`medal.trace.gate`). Returns the plain trace. Raises only
    :class:`TraceError`, which says where (a JSON path) and what."""
    encoding = data.get("encoding") if isinstance(data, dict) else None
    max_k1 = _operator_k1(max_k1)
    try:
        data = unpack(data, MAX_TRACE_BYTES if max_bytes is None else max_bytes, max_k1)
    except _OverBound as exc:
        raise TraceError(f"invalid trace at {str(exc)[:300]}") from None
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
        raise TraceError(f"the trace says it is packed ({str(encoding)[:20]}) but its "
                         f"packing is malformed: {type(exc).__name__}: "
                         f"{str(exc)[:300]}") from None
    except RecursionError:  # pragma: no cover - the parser bounds nesting first
        raise TraceError("the trace's packing is nested too deeply") from None
    return check(data, max_k1)


def size_text(size: int, max_bytes: int) -> str:
    """"21,000,000 bytes; the limit is 20,971,520 bytes (20 MiB)": the one wording of the
    one size limit (the CLI, the gate and the app's uploader say the same)."""
    return f"{size:,} bytes; the limit is {max_bytes:,} bytes ({max_bytes / 2**20:g} MiB)"


def loads_trace(text: str | bytes, max_bytes: int = MAX_TRACE_BYTES,
                max_k1: int | None = None) -> dict:
    """The one gate for trace text: parse with limits, validate, return the trace.

    Refuses more than ``max_bytes``; ``max_k1``: the operator's K1 limit (None: this
    machine's, MEDAL_MAX_K1; the served app passes its own). Raises only
    :class:`TraceError`; a trace it returns is fit to render in every view."""
    if not isinstance(text, (str, bytes, bytearray)):
        raise TraceError(f"a trace is JSON text, not {type(text).__name__}")
    size = len(text)  # a character is at least one byte: no need to encode a huge text
    if isinstance(text, str) and size <= max_bytes:
        size = len(text.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        raise TraceError(f"the trace is {size_text(size, max_bytes)}")
    return validate_trace(parse(bytes(text) if isinstance(text, bytearray) else text),
                          max_bytes, max_k1)


def load_trace(path: str | Path, max_bytes: int = MAX_TRACE_BYTES,
               max_k1: int | None = None) -> dict:
    path = Path(path)
    try:
        if not path.is_file():
            raise TraceError(f"no trace file at {path}")
        if path.stat().st_size > max_bytes:
            raise TraceError(f"{path} is {size_text(path.stat().st_size, max_bytes)}")
        raw = path.read_bytes()
    except OSError as exc:
        raise TraceError(f"cannot read {path}: {exc.strerror or exc}") from None
    return loads_trace(raw, max_bytes, max_k1)
