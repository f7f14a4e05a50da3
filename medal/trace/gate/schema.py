"""The gate's schema check: ``trace.schema.json`` through a small compiled validator.

The validator covers the subset of JSON Schema the file uses (``jsonschema`` itself is
~10x slower, too slow for a 20 MB upload).
"""
from __future__ import annotations

import json
import math
from functools import lru_cache
from importlib import resources
from typing import Any, Callable

from ..limits import INT_MAX, INT_MIN
from ..toprows import TopRows
from .parse import Invalid, _fail, _short

_TYPES: dict[str, Callable[[Any], bool]] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, (list, TopRows)),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    # stricter than JSON Schema: 3.0 is not an integer here (an id of 3.0 cannot index)
    "integer": lambda v: type(v) is int and INT_MIN <= v <= INT_MAX,
    "number": lambda v: (type(v) is int and INT_MIN <= v <= INT_MAX)
    or (type(v) is float and math.isfinite(v)),
}
_IGNORED = {"$schema", "$id", "title", "description", "$defs", "$comment", "default",
            "examples"}
_SUPPORTED = {"type", "required", "properties", "items", "enum", "const", "minimum",
              "maximum", "anyOf", "$ref", "minItems", "maxItems", "maxLength"} | _IGNORED


def _type_name(v) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean",
            type(None): "null", int: "integer", float: "number"}.get(type(v), type(v).__name__)


def compile_schema(schema: dict, root: dict | None = None, cache: dict | None = None):
    """A function ``f(value)`` that raises :class:`Invalid` (with the path) or returns.

    Understands the keywords in ``_SUPPORTED``; any other keyword is an error here, so a
    schema edit the compiler would silently ignore fails the tests instead."""
    root = schema if root is None else root
    cache = {} if cache is None else cache
    unknown = set(schema) - _SUPPORTED
    if unknown:
        raise ValueError(f"trace schema uses unsupported keywords: {sorted(unknown)}")
    checks: list[Callable] = []

    if "$ref" in schema:
        ref = schema["$ref"]
        if not ref.startswith("#/$defs/"):
            raise ValueError(f"unsupported $ref {ref}")
        name = ref[len("#/$defs/"):]
        if name not in cache:
            cache[name] = None  # placeholder for recursive references
            cache[name] = compile_schema(root["$defs"][name], root, cache)

        def ref_check(v, _name=name):
            cache[_name](v)
        checks.append(ref_check)
    if "type" in schema:
        names = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        preds = tuple(_TYPES[n] for n in names)
        wanted = " or ".join(names)

        def type_check(v):
            for pred in preds:
                if pred(v):
                    return
            if isinstance(v, float) and not math.isfinite(v):
                raise Invalid(f"{v} is not a finite number")
            if type(v) is int and ("integer" in names or "number" in names):
                raise Invalid(f"{_short(v)} is out of range (64-bit integers)")
            raise Invalid(f"expected {wanted}, got {_type_name(v)}")
        checks.append(type_check)
    if "const" in schema:
        const = schema["const"]

        def const_check(v):
            if v != const or type(v) is not type(const):
                raise Invalid(f"must be {json.dumps(const)}")
        checks.append(const_check)
    if "enum" in schema:
        options = schema["enum"]

        def enum_check(v):
            if not any(v == o and type(v) is type(o) for o in options):
                raise Invalid(f"must be one of {json.dumps(options)}, got {_short(v)}")
        checks.append(enum_check)
    for key, op in (("minimum", "<"), ("maximum", ">")):
        if key in schema:
            bound = schema[key]

            def bound_check(v, _b=bound, _low=key == "minimum"):
                if isinstance(v, (int, float)) and not isinstance(v, bool):
                    if (v < _b) if _low else (v > _b):
                        raise Invalid(f"{_short(v)} is {'below the minimum' if _low else 'above the maximum'} {_b}")
            checks.append(bound_check)
    if "maxLength" in schema:
        most = schema["maxLength"]

        def len_check(v):
            if isinstance(v, str) and len(v) > most:
                raise Invalid(f"longer than {most} characters")
        checks.append(len_check)
    if "required" in schema:
        required = tuple(schema["required"])

        def required_check(v):
            if isinstance(v, dict):
                for name in required:
                    if name not in v:
                        raise Invalid(f"{name!r} is missing")
        checks.append(required_check)
    if "properties" in schema:
        props = tuple((k, compile_schema(s, root, cache)) for k, s in schema["properties"].items())

        def props_check(v):
            if isinstance(v, dict):
                for name, sub in props:
                    if name in v:
                        try:
                            sub(v[name])
                        except Invalid as exc:
                            exc.path.append(name)
                            raise
        checks.append(props_check)
    if "items" in schema:
        sub_items = compile_schema(schema["items"], root, cache)

        def items_check(v):
            if isinstance(v, list):
                i = 0
                try:
                    for i, item in enumerate(v):
                        sub_items(item)
                except Invalid as exc:
                    exc.path.append(i)
                    raise
        checks.append(items_check)
    for key in ("minItems", "maxItems"):
        if key in schema:
            n = schema[key]

            def count_check(v, _n=n, _min=key == "minItems"):
                if isinstance(v, list) and ((len(v) < _n) if _min else (len(v) > _n)):
                    raise Invalid(f"{'fewer' if _min else 'more'} than {_n} items")
            checks.append(count_check)
    if "anyOf" in schema:
        subs = tuple(compile_schema(s, root, cache) for s in schema["anyOf"])

        def any_check(v):
            best = None
            for sub in subs:
                try:
                    sub(v)
                    return
                except Invalid as exc:
                    if best is None or len(exc.path) > len(best.path):
                        best = exc  # the branch that got furthest explains best
            raise best
        checks.append(any_check)

    if len(checks) == 1:
        return checks[0]
    checks_t = tuple(checks)

    def all_checks(v):
        for c in checks_t:
            c(v)
    return all_checks


_MISSING = object()


def _int_pred(lo, hi):
    lo = INT_MIN if lo is None else lo
    hi = INT_MAX if hi is None else hi
    return lambda v: type(v) is int and lo <= v <= hi


def _num_pred(lo, hi):
    lo = -math.inf if lo is None else lo
    hi = math.inf if hi is None else hi

    def pred(v):
        t = type(v)
        if t is float:
            return lo <= v <= hi and v - v == 0.0   # v - v is nan for inf and nan
        return t is int and INT_MIN <= v <= INT_MAX and lo <= v <= hi
    return pred


_SIMPLE = {"object": lambda v: type(v) is dict,
           # a node's top tokens may be kept as columns (checked whole by the bounds)
           "array": lambda v: type(v) is list or type(v) is TopRows,
           "string": lambda v: type(v) is str, "boolean": lambda v: type(v) is bool,
           "null": lambda v: v is None}


def compile_pred(schema: dict, root: dict | None = None, cache: dict | None = None):
    """A fast yes/no version of :func:`compile_schema` (same schema, same meaning): the
    gate runs this, and the explaining validator only to say where a trace fails."""
    root = schema if root is None else root
    cache = {} if cache is None else cache
    unknown = set(schema) - _SUPPORTED
    if unknown:
        raise ValueError(f"trace schema uses unsupported keywords: {sorted(unknown)}")
    preds: list = []
    if "$ref" in schema:
        name = schema["$ref"][len("#/$defs/"):]
        if name not in cache:
            cache[name] = None
            cache[name] = compile_pred(root["$defs"][name], root, cache)
        preds.append(lambda v, _n=name: cache[_n](v))
    lo, hi = schema.get("minimum"), schema.get("maximum")
    if "type" in schema:
        names = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        tps = [_int_pred(lo, hi) if n == "integer" else _num_pred(lo, hi) if n == "number"
               else _SIMPLE[n] for n in names]
        if len(tps) == 1:
            preds.append(tps[0])
        elif len(tps) == 2:
            a, b = tps
            preds.append(lambda v: a(v) or b(v))
        else:
            preds.append(lambda v: any(t(v) for t in tps))
    elif lo is not None or hi is not None:
        num = _num_pred(lo, hi)
        preds.append(lambda v: num(v) if type(v) in (int, float) else True)
    if "const" in schema:
        c = schema["const"]
        preds.append(lambda v: v == c and type(v) is type(c))
    if "enum" in schema:
        opts = schema["enum"]
        preds.append(lambda v: any(v == o and type(v) is type(o) for o in opts))
    if "maxLength" in schema:
        most = schema["maxLength"]
        preds.append(lambda v: type(v) is not str or len(v) <= most)
    if "required" in schema or "properties" in schema:
        required = tuple(schema.get("required", ()))
        props = tuple((k, compile_pred(sub, root, cache))
                      for k, sub in schema.get("properties", {}).items())

        def obj(v):
            if type(v) is not dict:
                return True  # the type keyword decides
            for name in required:
                if name not in v:
                    return False
            for name, sub in props:
                x = v.get(name, _MISSING)
                if x is not _MISSING and not sub(x):
                    return False
            return True
        preds.append(obj)
    if "items" in schema:
        item = compile_pred(schema["items"], root, cache)
        preds.append(lambda v: type(v) is not list or all(map(item, v)))
    if "minItems" in schema or "maxItems" in schema:
        a, b = schema.get("minItems", 0), schema.get("maxItems", math.inf)
        preds.append(lambda v: type(v) is not list or a <= len(v) <= b)
    if "anyOf" in schema:
        subs = tuple(compile_pred(s, root, cache) for s in schema["anyOf"])
        preds.append(lambda v: any(p(v) for p in subs))
    if not preds:
        return lambda v: True
    if len(preds) == 1:
        return preds[0]
    if len(preds) == 2:
        p1, p2 = preds
        return lambda v: p1(v) and p2(v)
    return lambda v: all(p(v) for p in preds)


def load_schema() -> dict:
    return json.loads(resources.files("medal").joinpath("trace.schema.json").read_text())


@lru_cache(maxsize=1)
def schema_validator():
    return compile_schema(load_schema())


@lru_cache(maxsize=1)
def schema_predicate():
    return compile_pred(load_schema())


def check_schema(data) -> None:
    if schema_predicate()(data):
        return
    try:
        schema_validator()(data)
    except Invalid as exc:
        _fail(exc.path[::-1], exc.message[:300])
    _fail([], "does not match the trace schema")  # pragma: no cover (the two agree)
