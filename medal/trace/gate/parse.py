"""The gate's first step: trace text to JSON values with limits; how every check says what is wrong.

:func:`parse` turns bytes or text into JSON values without ever raising anything but
:class:`TraceError` (no RecursionError for deep nesting, no ValueError for 5000-digit
integers, no NaN or Infinity, no lone surrogates). Every error names the failing place as
a JSON path, e.g. ``tree/nodes/3/parent``.
"""
from __future__ import annotations

import json
import math
import re
from typing import Any

from ...errors import TraceError
from ..limits import INT_MAX, INT_MIN, MAX_CONTAINERS_PER_MB, MAX_DEPTH, MAX_TRACE_BYTES

_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


class Invalid(Exception):
    """Internal: a failed check; ``path`` is filled innermost-first as it propagates."""

    def __init__(self, message: str, path: list | None = None):
        super().__init__(message)
        self.message = message
        self.path = path if path is not None else []


def where(path) -> str:
    return "/".join(str(p) for p in path) or "(top level)"


def _fail(path: list, message: str):
    raise TraceError(f"invalid trace at {where(path)}: {message}")


def _short(v) -> str:
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


# ---------------------------------------------------------------------- parsing

def _no_constant(name: str):
    raise Invalid(f"{name} is not a number a trace may hold (only finite numbers)")


def parse(raw: str | bytes) -> Any:
    """JSON values from trace text; every failure is a :class:`TraceError`."""
    if isinstance(raw, str):
        text = raw
        try:
            raw = raw.encode("utf-8")
        except UnicodeEncodeError:
            raise TraceError("the text holds a lone surrogate (not valid Unicode); a trace "
                             "is UTF-8 JSON as exported by the app or written by --trace") from None
    else:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise TraceError(f"the file is not UTF-8 text (byte {exc.start}); a trace is the "
                             "UTF-8 JSON file exported by the app or written by --trace") from None
    # NaN and Infinity are refused as they are read; 1e999 (inf) and integers beyond 64
    # bits by the schema's number types and check_plain; > 4300 digits by Python itself
    hooks: dict = {"parse_constant": _no_constant, "object_pairs_hook": _unique_keys}
    check_container_count(raw)
    try:
        data = json.loads(text, **hooks)
    except Invalid as exc:
        raise TraceError(f"the file is not a trace: {exc.message}") from None
    except RecursionError:
        raise TraceError("the file is not a trace: JSON nested too deeply") from None
    except json.JSONDecodeError as exc:
        raise TraceError(f"the file is not valid JSON ({exc.msg}: line {exc.lineno} column "
                         f"{exc.colno}); a trace is the JSON file exported by the app or "
                         "written by --trace") from None
    except ValueError as exc:  # e.g. Python's 4300-digit limit on int()
        if "digits" in str(exc):
            raise TraceError("the file is not a trace: it holds an integer of more than 4300 "
                             "digits") from None
        raise TraceError(f"the file is not a trace: {str(exc)[:200]}") from None
    if b"\\u" in raw and _SURROGATE_ESCAPE.search(raw):
        try:  # a valid pair (an escaped emoji) is fine; a lone half cannot be encoded
            json.dumps(data, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            _fail(_find_surrogate(data), "a string holds a lone surrogate (\\ud800-\\udfff "
                  "escape without its pair), which is not text")
        except (RecursionError, ValueError):
            pass  # deep nesting: reported by the depth check below
    return data


def _unique_keys(pairs: list) -> dict:
    """An object from its (key, value) pairs; a key given twice is refused (json.loads
    would keep the last one silently, so two readers could see two different traces)."""
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set = set()
        for key, _ in pairs:
            if key in seen:
                raise Invalid(f"the key {_short(key)} appears twice in one object (a JSON "
                              "object names each key once)")
            seen.add(key)
    return out


def _find_surrogate(data) -> list:
    stack = [(data, [])]
    while stack:
        value, path = stack.pop()
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                return path
        elif isinstance(value, dict):
            for k, v in value.items():
                stack.append((k, path + ["(key)"]))
                stack.append((v, path + [k]))
        elif isinstance(value, list):
            stack.extend((v, path + [i]) for i, v in enumerate(value))
    return []


def check_plain(value, path: list, max_depth: int = MAX_DEPTH) -> None:
    """Free-form parts (problem, model, timing...): bounded depth, finite numbers, ints of
    bounded size. Iterative, so no recursion limit is reached; it keeps one iterator per
    level (not one entry per element), and finds the failing path only on failure."""
    bad = _first_bad(value, max_depth)
    if bad is None:
        return
    at, message = bad
    _fail(path + at, message)


def _bad_leaf(v) -> str | None:
    if type(v) is float:
        if not math.isfinite(v):
            return "not a finite number"
    elif type(v) is int:
        if not INT_MIN <= v <= INT_MAX:
            return "integer out of range (64-bit integers)"
    return None


def _first_bad(value, max_depth: int, leaf=_bad_leaf, strings: bool = False):
    """(path, message) of the first value nested too deeply or out of range (``leaf``
    says which numbers, and strings when ``strings``), else None."""
    if isinstance(value, (dict, list)):
        if max_depth < 0:
            return [], f"nested more than {max_depth} levels deep"
    else:
        message = leaf(value)
        return None if message is None else ([], message)
    keys: list = [None]
    iters = [iter(value.items()) if isinstance(value, dict) else enumerate(value)]
    while iters:
        item = next(iters[-1], None)
        if item is None:
            iters.pop()
            keys.pop()
            continue
        keys[-1] = item[0]
        v = item[1]
        if isinstance(v, (dict, list)):
            if len(iters) > max_depth:
                return keys[:], f"nested more than {max_depth} levels deep"
            iters.append(iter(v.items()) if isinstance(v, dict) else enumerate(v))
            keys.append(None)
        elif type(v) in (int, float) or (strings and type(v) is str):
            message = leaf(v)
            if message is not None:
                return keys[:], message
    return None


def max_containers(max_bytes: int) -> int:
    return max(10_000, int(max_bytes / 1e6 * MAX_CONTAINERS_PER_MB))


def check_container_count(raw: bytes, max_bytes: int | None = None) -> None:
    """Before parsing: the number of JSON arrays and objects (counted as brackets, so an
    upper bound) within what a real trace of this size holds. Millions of empty arrays
    cost the parser and every later walk far more than their bytes suggest."""
    most = max_containers(max(len(raw), MAX_TRACE_BYTES if max_bytes is None else max_bytes))
    count = raw.count(b"[") + raw.count(b"{")
    if count > most:
        raise TraceError(f"the file holds {count:,} arrays and objects; a trace of this size "
                         f"holds at most {most:,} (a real one about "
                         f"{MAX_CONTAINERS_PER_MB * len(raw) // 2_000_000:,})")
