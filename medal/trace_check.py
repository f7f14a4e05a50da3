"""The trace gate's checks: parse with limits, the schema (compiled), then the meaning.

:func:`parse` turns bytes or text into JSON values without ever raising anything but
:class:`TraceError` (no RecursionError for deep nesting, no ValueError for 5000-digit
integers, no NaN or Infinity, no lone surrogates). :func:`check` validates a parsed
trace: first against ``trace.schema.json`` through a small compiled validator (the
subset of JSON Schema the file uses; ``jsonschema`` itself is ~10x slower, too slow
for a 20 MB upload), then semantically -- unique dense node ids, existing parents, no
cycles, every reference to a node pointing at a real one, lengths that agree with
``gen_length``, and a run configuration the engine itself accepts.

A trace that passes is fit to render: every view draws it (the fuzz test checks that).
Every error names the failing place as a JSON path, e.g. ``tree/nodes/3/parent``.
"""
from __future__ import annotations

import json
import math
import re
from functools import lru_cache
from importlib import resources
from typing import Any, Callable

from .errors import InputError, TraceError

#: what a trace says it is, its version and the one size limit (the gate's, the CLI's and
#: the app's uploader's); medal.trace re-exports them
TRACE_FORMAT = "medal-trace"
TRACE_VERSION = 1
MAX_TRACE_BYTES = 20 * 1024 * 1024  # uploads above this are refused
MAX_DEPTH = 64            # nesting of JSON containers anywhere in a trace
MAX_NODES = 200_000
INT_MIN, INT_MAX = -(2 ** 63), 2 ** 64 - 1   # every integer a trace holds fits in 64 bits
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


# ---------------------------------------------------------------------- schema

_TYPES: dict[str, Callable[[Any], bool]] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
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


_SIMPLE = {"object": lambda v: type(v) is dict, "array": lambda v: type(v) is list,
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


# ---------------------------------------------------------------------- meaning

def _short(v) -> str:
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


def check_config(config: dict) -> None:
    """The run's configuration: typed and within the engine's own ranges (the checks of
    :class:`medal.config.GenerationConfig`, the same the CLI and the app apply)."""
    from dataclasses import fields

    from .config import GenerationConfig

    names = {f.name for f in fields(GenerationConfig)}
    known = {k: v for k, v in config.items() if k in names}  # newer fields: ignored
    try:
        cfg = GenerationConfig(**known)
    except InputError as exc:
        name = str(exc).split(" ", 1)[0]
        _fail(["run", "config"] + ([name] if name in config else []), str(exc))
    except TypeError as exc:
        _fail(["run", "config"], str(exc))
    for name in ("gen_length", "steps", "block_length", "lc"):
        if not isinstance(config.get(name), int) or isinstance(config.get(name), bool):
            _fail(["run", "config", name], "a recorded run has every length resolved to a "
                                            f"whole number, got {_short(config.get(name))}")
    try:
        again = cfg.resolved(cfg.gen_length, cfg.lc, None)
    except InputError as exc:
        _fail(["run", "config"], str(exc))
    if again != cfg:
        _fail(["run", "config"], "the lengths do not agree with each other")


def _check_node_refs(ids, n_nodes: int, path: list) -> None:
    for i, nid in enumerate(ids):
        if not 0 <= nid < n_nodes:
            _fail(path + [i], f"node {nid} is not in the tree ({n_nodes} nodes)")


def check_meaning(data: dict) -> None:
    """Everything the schema cannot say; called after :func:`check_schema`."""
    run = data["run"]
    check_config(run["config"])
    L = run["config"]["gen_length"]
    for key in ("problem", "model", "versions"):
        check_plain(run[key], ["run", key])
    for key in ("timing", "stats", "reproducibility"):
        if key in data:
            check_plain(data[key], [key])

    tree = data["tree"]
    nodes = tree["nodes"] if tree else []
    n = len(nodes)
    if tree is not None:
        if n == 0:
            _fail(["tree", "nodes"], "a tree has at least its root")
        if n > MAX_NODES:
            _fail(["tree", "nodes"], f"more than {MAX_NODES} nodes")
        if tree["root"] != 0:
            _fail(["tree", "root"], "the root is node 0")
    iterations = data["iterations"]
    if iterations and tree is None:
        _fail(["iterations"], "iterations without a tree")
    for i, node in enumerate(nodes):
        p = ["tree", "nodes", i]
        if node["id"] != i:
            _fail(p + ["id"], f"node ids are 0, 1, 2... in order; expected {i}, got {node['id']}")
        parent = node["parent"]
        if i == 0:
            if parent is not None or node["action"] is not None or node["depth"] != 0:
                _fail(p, "the root has no parent, no action and depth 0")
            if node["created_iteration"] != 0:
                _fail(p + ["created_iteration"], "the root is created before iteration 1")
        else:
            if parent is None or not 0 <= parent < i:
                _fail(p + ["parent"], f"parent {parent} is not an earlier node (a node's "
                                      "parent is created before it; no cycles)")
            if node["action"] is None:
                _fail(p + ["action"], "every node but the root is made by an action")
            if node["depth"] != nodes[parent]["depth"] + 1:
                _fail(p + ["depth"], "depth is one more than the parent's")
            if node["created_iteration"] < nodes[parent]["created_iteration"]:
                _fail(p + ["created_iteration"], "created before its parent")
            if node["created_iteration"] > len(iterations):
                _fail(p + ["created_iteration"], f"after the last iteration ({len(iterations)})")
        if node["N"] < 0:
            _fail(p + ["N"], "visit counts are >= 0")
        for key in ("answer_ids", "masked", "entropy", "top"):
            if len(node[key]) != L:
                _fail(p + [key], f"{len(node[key])} entries; gen_length is {L}")
        if node.get("completion_ids") is not None and len(node["completion_ids"]) != L:
            _fail(p + ["completion_ids"], f"{len(node['completion_ids'])} entries; "
                                          f"gen_length is {L}")
        if node["action"] is not None and not 0 <= node["action"]["slot"] < L:
            _fail(p + ["action", "slot"], f"slot outside the answer (0..{L - 1})")
        for j, a in enumerate(node["action_set"]):
            if not 0 <= a["slot"] < L:
                _fail(p + ["action_set", j, "slot"], f"slot outside the answer (0..{L - 1})")
        if node.get("candidate_final") is not None:
            check_plain(node["candidate_final"], p + ["candidate_final"])

    for k, it in enumerate(iterations):
        p = ["iterations", k]
        if it["iteration"] != k + 1:
            _fail(p + ["iteration"], f"iterations are numbered 1, 2, 3... expected {k + 1}")
        sel = it["selection"]
        _check_node_refs(sel["path"], n, p + ["selection", "path"])
        if not sel["path"] or sel["path"][0] != 0:
            _fail(p + ["selection", "path"], "a selection path starts at the root")
        for d in range(1, len(sel["path"])):
            if nodes[sel["path"][d]]["parent"] != sel["path"][d - 1]:
                _fail(p + ["selection", "path", d], "not a child of the previous node")
        for d, level in enumerate(sel["levels"]):
            _check_node_refs([r["node"] for r in level], n, p + ["selection", "levels", d])
        refs = list(sel["path"]) + [r["node"] for lv in sel["levels"] for r in lv]
        exp = it["expansion"]
        if exp is not None:
            _check_node_refs([exp["leaf"]], n, p + ["expansion", "leaf"])
            _check_node_refs(exp["children"], n, p + ["expansion", "children"])
            for j, c in enumerate(exp["children"]):
                if nodes[c]["parent"] != exp["leaf"]:
                    _fail(p + ["expansion", "children", j], "not a child of the leaf")
            refs += [exp["leaf"], *exp["children"]]
        sim = it["simulation"]
        if sim is not None:
            _check_node_refs(sim["children"], n, p + ["simulation", "children"])
            if len(sim["rewards"]) != len(sim["children"]):
                _fail(p + ["simulation", "rewards"], "one reward per simulated child")
            refs += sim["children"]
        bp = it["backpropagation"]
        if bp is not None:
            _check_node_refs(bp["path"], n, p + ["backpropagation", "path"])
            _check_node_refs([u["node"] for u in bp["updates"]], n,
                             p + ["backpropagation", "updates"])
            _check_node_refs(bp["new_candidates"], n, p + ["backpropagation", "new_candidates"])
            check_plain(bp["updates"], p + ["backpropagation", "updates"])
            refs += bp["path"] + [u["node"] for u in bp["updates"]] + bp["new_candidates"]
        for nid in refs:
            if nodes[nid]["created_iteration"] > k + 1:
                _fail(p, f"refers to node {nid}, created later (iteration "
                         f"{nodes[nid]['created_iteration']})")

    search = data["search"]
    if search is not None:
        if tree is None:
            _fail(["search"], "a search without a tree")
        _check_node_refs(search["candidates"], n, ["search", "candidates"])
        if search["winner"] is not None:
            _check_node_refs([search["winner"]], n, ["search", "winner"])
        _check_node_refs([r["node"] for r in search["candidate_scores"]], n,
                         ["search", "candidate_scores"])
        check_plain(search["candidate_scores"], ["search", "candidate_scores"])

    for key, steps in (("decode", data["decode"]),
                       ("comparison", (data["comparison"] or {}).get("steps") or [])):
        base = [key] if key == "decode" else ["comparison", "steps"]
        for k, step in enumerate(steps):
            p = base + [k]
            for j, s in enumerate(step["slots"]):
                if not 0 <= s < L:
                    _fail(p + ["slots", j], f"slot outside the answer (0..{L - 1})")
            for f in ("tokens", "token_texts"):
                if len(step[f]) != len(step["slots"]):
                    _fail(p + [f], "one entry per unmasked slot")
            if len(step["entropy"]) != L:
                _fail(p + ["entropy"], f"{len(step['entropy'])} entries; gen_length is {L}")
    for base, res in ((["result"], data["result"]),
                      (["comparison", "result"], (data["comparison"] or {}).get("result"))):
        if res is None:
            continue
        for f in ("answer_ids", "order"):
            if len(res[f]) != L:
                _fail(base + [f], f"{len(res[f])} entries; gen_length is {L}")
        check_plain(res, base)


_SHA256 = re.compile(r"[0-9a-f]{64}")


def check_fork(data: dict) -> None:
    """A forked run's record (:mod:`medal.fork`): one position, real slots, nodes and
    steps, and forced actions the run really took there."""
    fork = data["fork"]
    p = ["fork"]
    L = data["run"]["config"]["gen_length"]
    sha = fork["parent_sha256"]
    if sha is not None and not _SHA256.fullmatch(sha):
        _fail(p + ["parent_sha256"], "a SHA-256 is 64 lowercase hexadecimal digits")
    if ("node" in fork) == ("step" in fork):
        _fail(p, "a fork is at one position: a \"node\" or a \"step\"")
    forced = fork["forced"]
    slots = [f["slot"] for f in forced]
    for j, s in enumerate(slots):
        if not 0 <= s < L:
            _fail(p + ["forced", j, "slot"], f"slot outside the answer (0..{L - 1})")
    if len(set(slots)) != len(slots):
        _fail(p + ["forced"], "each slot is forced once")
    tree = data["tree"]
    nodes = tree["nodes"] if tree else []
    if "step" in fork:
        if fork["then"] != "decode":
            _fail(p + ["then"], "a decode step's fork goes on decoding (\"decode\")")
        for key in ("after_iteration", "forced_nodes"):
            if key in fork:
                _fail(p + [key], "only a node's fork has this")
        steps = [d for d in data["decode"] if d["phase"] in ("phase_c", "decode")
                 and d["step"] == fork["step"]]
        if data["result"] is not None and len(steps) != 1:
            _fail(p + ["step"], f"the run has no decode step {fork['step']}")
        for j, f in enumerate(forced):
            for st in steps:
                took = dict(zip(st["slots"], st["tokens"]))
                if took.get(f["slot"]) != f["token_id"]:
                    _fail(p + ["forced", j], f"step {fork['step']} did not unmask slot "
                                             f"{f['slot']} with token {f['token_id']}")
        return
    if data["result"] is None:
        return   # a run in progress, or a replay position: its tree is not all there yet
    if tree is None:
        _fail(p + ["node"], "a node's fork needs the run's tree")
    if not fork["node"] < len(nodes):
        _fail(p + ["node"], f"node {fork['node']} is not in the tree ({len(nodes)} nodes)")
    if "after_iteration" in fork and fork["after_iteration"] > len(data["iterations"]):
        _fail(p + ["after_iteration"], f"after the last iteration ({len(data['iterations'])})")
    made = fork.get("forced_nodes")
    if made is None:
        _fail(p, "a finished node fork names its forced nodes (\"forced_nodes\")")
    if len(made) != len(forced):
        _fail(p + ["forced_nodes"], "one forced node per forced action")
    parent = fork["node"]
    for j, (nid, f) in enumerate(zip(made, forced)):
        if not nid < len(nodes):
            _fail(p + ["forced_nodes", j], f"node {nid} is not in the tree")
        node = nodes[nid]
        action = node["action"] or {}
        if node["parent"] != parent or action.get("slot") != f["slot"] \
                or action.get("token") != f["token_id"]:
            _fail(p + ["forced_nodes", j], f"node {nid} is not node {parent}'s child by the "
                                           f"forced action {f['slot']}:{f['token_id']}")
        parent = nid


def check(data: Any) -> dict:
    """Schema and meaning; returns ``data`` when it is fit to render."""

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
        if "fork" in data:
            check_fork(data)
        check_bounds(data)
    except (KeyError, IndexError, TypeError, AttributeError) as exc:  # pragma: no cover
        # the schema makes these impossible; never let one escape the gate
        raise TraceError(f"invalid trace: {type(exc).__name__} {exc}") from None
    return data


# ---------------------------------------------------------------------- bounds (issue 21)
# What a recorded run can hold, beyond types: numbers in their ranges, counts that the
# run's own budget could have produced, strings of bounded length, no deep nesting
# anywhere (node extras included), and a cost to render known before it is spent.

MAX_CONTAINERS_PER_MB = 55_000  # a real trace holds ~30,000 arrays/objects per MB
# Strings, by what they hold (issue 27: "text" named a token's text and a whole answer):
MAX_TOKEN_TEXT = 200            # one token's text (real vocabularies: under 100 characters)
MAX_NAME = 200                  # a strategy, phase, scoring... name
MAX_MODEL_NAME = 4_096          # a model spec: "llada:" and a path (PATH_MAX)
MAX_PROMPT = 200_000            # a prompt: ~40,000 tokens of text, past every model's context
MAX_STRING = 20_000             # any other text (a "why", an extra); an answer's floor
#: the longest string a trace may hold anywhere, whatever its run: a 4,096-slot answer of
#: the longest tokens (checked before the run's own settings are read)
MAX_ANY_STRING = 4_096 * MAX_TOKEN_TEXT
NAME_KEYS = {"strategy", "phase", "stop_reason", "scoring", "simulation", "reward",
             "candidate_choice", "scoring_scope"}
PROMPT_KEYS = {"prompt", "model_prompt"}
#: texts made of answer slots: at most gen_length tokens' texts (:func:`answer_chars`)
ANSWER_KEYS = {"text", "answer", "sequence", "completion", "completions"}
MAX_NUMBER = 2 ** 53            # every number the page's JavaScript reads exactly
MAX_REWARD = 1e6                # |Q|, |W / N|, rewards (a reward is an entropy drop plus a bonus)
ENTROPY_CEILING = math.log(2 ** 24)   # ln V when the trace does not record V
P_TOLERANCE = 1e-6
Q_TOLERANCE = 1e-6
#: the most "render units" (timeline positions x answer slots, plus nodes x slots) a
#: trace may cost the views and the export: the 156-iteration Countdown trace of
#: scripts/bench_export.py (4.7 MB) is ~0.24 M units (8 s of CPU to export), a 19 MB
#: one of 368 iterations and 2,945 nodes ~1.3 M (88 s); docs/SERVING.md
MAX_RENDER_UNITS = 2_000_000


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


def check_shape(data) -> None:
    """The whole document, extra keys included: nested at most MAX_DEPTH levels, every
    number finite and within +-2**53, every integer within 64 bits."""
    bad = _first_bad(data, MAX_DEPTH, _bad_value, strings=True)
    if bad is not None:
        _fail(*bad)


def _bad_value(v) -> str | None:
    """A leaf of a trace out of bounds: numbers within +-2**53 and finite, strings of
    at most MAX_ANY_STRING characters (each kind of string has its own, smaller limit:
    :func:`check_strings`)."""
    if type(v) is str:
        if len(v) > MAX_ANY_STRING:
            return (f"a string of {len(v):,} characters; no text of a run is longer than "
                    f"{MAX_ANY_STRING:,}")
        return None
    if not -MAX_NUMBER <= v <= MAX_NUMBER:   # also false for NaN
        return f"{_short(v)} is out of range (a trace's numbers lie within +-2**53)"
    return None


def entropy_ceiling(data: dict) -> float:
    """ln V for the run's model when the trace records V (run.model.vocab_size), else a
    ceiling no real vocabulary reaches (2**24 tokens)."""
    v = (data["run"].get("model") or {}).get("vocab_size")
    if type(v) is int and 2 <= v <= 2 ** 24:
        return math.log(v)
    return ENTROPY_CEILING


def _in(value, low: float, high: float, path: list, what: str) -> None:
    if value is not None and not low <= value <= high:
        _fail(path, f"{_short(value)} is not a {what} (from {low:g} to {high:g})")


def answer_chars(gen_length: int) -> int:
    """The longest text made of ``gen_length`` answer slots: each slot one token's text
    (at least :data:`MAX_STRING`, so a short run's messages still fit)."""
    return max(MAX_STRING, gen_length * MAX_TOKEN_TEXT)


def string_limit(key, parent_key, inside_tokens: bool, answer: int) -> tuple[int, str]:
    """(limit, what) for a string stored under ``key`` (a dict key, or an index in a list
    stored under ``parent_key``); ``inside_tokens``: under a ``top`` or ``fixed_slots``
    list, whose entries' ``text`` is one token's."""
    if type(key) is int:   # an item of a list of strings
        if parent_key == "token_texts":
            return MAX_TOKEN_TEXT, "a token's text"
        if parent_key in ANSWER_KEYS:
            return answer, "a text of the run's answer slots"
        return MAX_STRING, "a text"
    if key == "token_text" or (key == "text" and inside_tokens):
        return MAX_TOKEN_TEXT, "a token's text"
    if key in NAME_KEYS:
        return MAX_NAME, "a name"
    if key == "name":
        return MAX_MODEL_NAME, "a name"
    if key in PROMPT_KEYS:
        return MAX_PROMPT, "a prompt"
    if key in ANSWER_KEYS:
        return answer, "a text of the run's answer slots"
    return MAX_STRING, "a text"


def check_strings(data: dict) -> None:
    """Every string within what its kind can hold in a real run: a token's text, a name,
    a prompt, a text of the answer's slots (sized from gen_length), anything else."""
    answer = answer_chars(data["run"]["config"]["gen_length"])
    stack = [(data, [], False)]
    while stack:
        v, p, in_tok = stack.pop()
        items = v.items() if type(v) is dict else enumerate(v)
        for k, x in items:
            if type(x) is str:
                most, what = string_limit(k, p[-1] if p else None, in_tok, answer)
                if len(x) > most:
                    why = (f" (gen_length {data['run']['config']['gen_length']} slots of at "
                           f"most {MAX_TOKEN_TEXT} characters)"
                           if what.startswith("a text of the run") and most > MAX_STRING else "")
                    _fail(p + [k], f"{len(x):,} characters; {what} has at most "
                                   f"{most:,}{why}")
            elif type(x) in (dict, list):
                stack.append((x, p + [k], in_tok or k in ("top", "fixed_slots")))


def _visits(row: dict, path: list, most: int) -> None:
    """N within what the run's iterations could give, and Q = W / N (0 when N = 0)."""
    n, w, q = row["N"], row["W"], row["Q"]
    if n > most:
        _fail(path + ["N"], f"{n} visits; {most} is the most this run's iterations can give")
    _in(q, -MAX_REWARD, MAX_REWARD, path + ["Q"], "mean reward")
    if n == 0:
        if w != 0 or q != 0:
            _fail(path, f"N = 0 but W = {_short(w)}, Q = {_short(q)} (an unvisited node has "
                        "W = Q = 0)")
    elif abs(q - w / n) > Q_TOLERANCE * max(1.0, abs(q)):
        _fail(path + ["Q"], f"Q = {_short(q)} is not W / N = {_short(w / n)}")


def check_bounds(data: dict) -> None:
    """Numbers in their ranges and counts the run could have produced; called after
    :func:`check_meaning`."""
    run = data["run"]
    cfg = run["config"]
    L = cfg["gen_length"]
    ln_v = entropy_ceiling(data)
    h_tol = ln_v + 1e-4
    check_strings(data)
    iterations = data["iterations"]
    most_visits = (len(iterations) + 1) * max(cfg["k2"], cfg["k1"], 1)

    def probs(values, path, what="probability"):
        for j, x in enumerate(values):
            _in(x, -P_TOLERANCE, 1 + P_TOLERANCE, path + [j], what)

    def entropies(values, path):
        for j, x in enumerate(values):
            _in(x, 0.0, h_tol, path + [j], "entropy (nats, at most ln V)")

    def action(a, path):
        _in(a["p"], -P_TOLERANCE, 1 + P_TOLERANCE, path + ["p"], "probability")
        _in(a["margin"], -P_TOLERANCE, 1 + P_TOLERANCE, path + ["margin"], "top-2 margin")
        _in(a["entropy"], 0.0, h_tol, path + ["entropy"], "entropy (nats, at most ln V)")
        _in(a["score"], -MAX_REWARD, MAX_REWARD, path + ["score"], "score")

    most_top = top_entries(cfg)
    tree = data["tree"]
    for i, node in enumerate(tree["nodes"] if tree else []):
        p = ["tree", "nodes", i]
        _visits(node, p, most_visits)
        for s, row in enumerate(node["top"]):
            if row is not None and len(row) > most_top:
                _fail(p + ["top", s], f"{len(row):,} top tokens for one slot; the run records "
                                      f"at most {most_top} (K1 = {cfg['k1']}, at least 3)")
        if len(node["action_set"]) > max(cfg["k2"], 1):
            _fail(p + ["action_set"], f"{len(node['action_set']):,} actions; the run keeps "
                                      f"at most K2 = {cfg['k2']}")
        for key in ("r_ig", "reward", "ucb"):
            _in(node.get(key), -MAX_REWARD, MAX_REWARD, p + [key], "reward")
        entropies(node["entropy"], p + ["entropy"])
        _in(node["entropy_sum"], 0.0, L * h_tol, p + ["entropy_sum"], "sum of entropies")
        for s, row in enumerate(node["top"]):
            for j, t in enumerate(row or ()):
                _in(t["p"], -P_TOLERANCE, 1 + P_TOLERANCE, p + ["top", s, j, "p"], "probability")
        if node["action"] is not None:
            action(node["action"], p + ["action"])
        for j, a in enumerate(node["action_set"]):
            action(a, p + ["action_set", j])
    for k, it in enumerate(iterations):
        p = ["iterations", k]
        for d, level in enumerate(it["selection"]["levels"]):
            for j, row in enumerate(level):
                _visits(row, p + ["selection", "levels", d, j], most_visits)
                if row["parent_N"] > most_visits:
                    _fail(p + ["selection", "levels", d, j, "parent_N"],
                          f"{row['parent_N']} visits; {most_visits} is the most this run's "
                          "iterations can give")
        if it["simulation"] is not None:
            for j, r in enumerate(it["simulation"]["rewards"]):
                _in(r, -MAX_REWARD, MAX_REWARD, p + ["simulation", "rewards", j], "reward")
        if it["backpropagation"] is not None:
            for j, u in enumerate(it["backpropagation"]["updates"]):
                _visits(u, p + ["backpropagation", "updates", j], most_visits)

    search = data["search"]
    if search is not None:
        cands = set(search["candidates"])
        # a fork that decodes from a forced node (medal fork --node ID --then decode): that
        # node is the run's winner without being one of the search's candidates; check_fork
        # checks the forced chain itself
        fork = data.get("fork") if isinstance(data.get("fork"), dict) else {}
        forced = set(fork.get("forced_nodes") or []) if fork.get("then") == "decode" else set()
        if search["winner"] is not None and search["winner"] not in cands | forced:
            _fail(["search", "winner"], f"node {search['winner']} is not one of the "
                                        f"candidates {_short(search['candidates'])}")
        for j, rec in enumerate(search["candidate_scores"]):
            if rec["node"] not in cands | forced:
                _fail(["search", "candidate_scores", j, "node"],
                      f"node {rec['node']} is not one of the candidates")
            for key in ("root_entropy_sum", "remaining_entropy_sum"):
                _in(rec[key], 0.0, L * h_tol, ["search", "candidate_scores", j, key],
                    "sum of entropies")
        if len(search["candidates"]) > cfg["candidates"] * max(cfg["k2"], 1):
            _fail(["search", "candidates"], f"{len(search['candidates'])} candidates; the "
                                            f"run collected at most C = {cfg['candidates']}")

    # decode steps: each phase unmasks at least one slot a step, so at most L (or the
    # configured steps) steps a phase; phases: phase C, one per candidate, one per sample
    most_steps = max(L, cfg["steps"])
    most_phases = cfg["candidates"] * max(cfg["k2"], 1) + cfg.get("samples", 1) + 2
    for key, steps in (("decode", data["decode"]),
                       ("comparison", (data["comparison"] or {}).get("steps") or [])):
        base = [key] if key == "decode" else ["comparison", "steps"]
        per_phase: dict = {}
        for k, step in enumerate(steps):
            n = per_phase[step["phase"]] = per_phase.get(step["phase"], 0) + 1
            if n > most_steps:
                _fail(base + [k], f"more than {most_steps} decoding steps in phase "
                                  f"{_short(step['phase'])} (gen_length {L}: each step "
                                  "unmasks at least one slot)")
            if len(per_phase) > most_phases:
                _fail(base + [k, "phase"], f"more than {most_phases} decoding phases (phase "
                                           "C, one per candidate, one per sample)")
            entropies(step["entropy"], base + [k, "entropy"])
            if len(step["slots"]) > L or len(set(step["slots"])) != len(step["slots"]):
                _fail(base + [k, "slots"], f"{len(step['slots']):,} slots; a step unmasks "
                                           f"each of the answer's {L} slots at most once")
            if len(step["scores"]) not in (0, len(step["slots"])):
                _fail(base + [k, "scores"], f"{len(step['scores']):,} scores for "
                                            f"{len(step['slots'])} unmasked slots (one "
                                            "score per unmasked slot)")
            el = step.get("eligible")
            if isinstance(el, dict):
                for name, values in el.items():
                    if isinstance(values, list) and len(values) > L:
                        _fail(base + [k, "eligible", name], f"{len(values):,} entries; "
                                                            f"gen_length is {L}")
            if el:
                probs(el["p"], base + [k, "eligible", "p"])
                probs(el["margin"], base + [k, "eligible", "margin"], "top-2 margin")
                entropies(el["entropy"], base + [k, "eligible", "entropy"])
    check_cost(data)


#: top tokens a node records per slot: K1 of them, and at least this many (the trace
#: recorder's own top_k, also what the margin needs)
MIN_TOP_ENTRIES = 3


def top_entries(config: dict) -> int:
    """The most top tokens a node of a run with this configuration records per slot."""
    k1 = config.get("k1") if isinstance(config, dict) else None
    return max(k1 if type(k1) is int and k1 > 0 else 0, MIN_TOP_ENTRIES)


#: characters of node texts (sequence, completion) per render unit: every node's card
#: carries its texts to the browser (a packed-2 trace can hold 8,000 sequences of 20,000
#: characters as differences: a 162 MB message to the browser, issue 31); a character
#: outside the BMP counts 3 (JSON writes it as a 12-byte surrogate pair)
TEXT_CHARS_PER_UNIT = 4


def render_units(data: dict) -> int:
    """What a trace costs the views and the export, in answer slots drawn: every
    timeline position draws the answer, the heatmap row and up to 60 tree nodes (and
    walks the tree as it stood, ~1/4 unit a node); every node (up to 400 inspector
    cards) its slots, and every node card its texts (:data:`TEXT_CHARS_PER_UNIT`).
    Counted from the lengths alone (the frames are linear in positions and nodes, so
    these sums are what they cost; issue 31)."""
    L = data["run"]["config"]["gen_length"]
    nodes = len(data["tree"]["nodes"]) if data["tree"] else 0
    positions = (3 + 4 * len(data["iterations"]) + len(data["decode"])
                 + len((data["comparison"] or {}).get("steps") or []))
    chars = 0
    for n in data["tree"]["nodes"] if data["tree"] else ():
        for key in ("sequence", "completion"):
            text = n.get(key)
            if type(text) is str:
                chars += len(text)
                if not text.isascii():
                    chars += 2 * sum(1 for c in text if ord(c) > 0xFFFF)
    return (positions * (L + 60 + nodes // 4) + min(nodes, 400) * L * 4 + nodes
            + chars // TEXT_CHARS_PER_UNIT)


def check_cost(data: dict, most: int | None = None) -> None:
    """Refuse a trace whose views would cost more than ``most`` render units, before
    any view is drawn."""
    most = MAX_RENDER_UNITS if most is None else most
    units = render_units(data)
    if units > most:
        _fail([], f"drawing this trace would cost {units:,} units (timeline positions x "
                  f"answer slots, and the nodes' texts); this server draws at most {most:,}")
