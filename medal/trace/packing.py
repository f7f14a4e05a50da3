"""The written forms of a trace: :func:`pack` ("packed-1", "packed-2", "packed-3") and
:func:`unpack`."""
from __future__ import annotations

import sys
from typing import Any

from .differences import (_apply_string_diff, _Budget, _completion_refs, _completions_back,
                          _diffed_node, _diffed_steps, _OverBound, _undiffed_node)
from .toprows import TopRows
from .limits import (COLUMN_NODE_COST, COLUMN_SLOT_COST, DECODED_PER_BYTE, DEFAULT_MAX_K1,
                     FIGURE_COST, MAX_TRACE_BYTES, SLOT_COST, TOP_COLUMN_COST, TOP_ENTRY_COST,
                     top_entries, top_entries_text)

#: the packed form of a written trace (see :func:`pack`); read back by :func:`unpack`.
#: "packed-2" is "packed-1" with nodes stored as differences from their parent;
#: "packed-3" is "packed-2" with each node's per-slot figures (entropies, top tokens and
#: their probabilities) as little-endian binary arrays in base64 (a 256-slot node: ~10 KB
#: instead of ~24). All three, and plain traces, are read
PACKED_1 = "packed-1"
PACKED_2 = "packed-2"
PACKED_3 = "packed-3"
PACKED = PACKED_3
PACKED_FORMS = (PACKED_1, PACKED_2, PACKED_3)


def _float32_short(values: list) -> list:
    """Float32 figures (entropies, probabilities; None kept) as the float64 numbers
    nearest to their shortest float32 digits: JSON writes those in 8-9 characters instead
    of 17-19, and :func:`_float32_exact` gives the original values back, bit for bit.
    ValueError for a value that is not a float32 number."""
    import numpy as np
    where = [i for i, v in enumerate(values) if v is not None]
    if not where:
        return list(values)
    wide = np.asarray([values[i] for i in where], dtype=np.float64)
    narrow = wide.astype(np.float32)
    if not np.array_equal(narrow.astype(np.float64), wide):
        raise ValueError("not float32 numbers")
    out = list(values)
    for i, v in zip(where, narrow):
        out[i] = float(str(v))
    return out


def _float32_exact(values: list) -> list:
    import numpy as np
    if not isinstance(values, list):
        raise TypeError("packed figures are a list")
    where = [i for i, v in enumerate(values) if v is not None]
    if not all(isinstance(values[i], (int, float)) and not isinstance(values[i], bool)
               for i in where):
        raise TypeError("packed figures are numbers")
    out = list(values)
    narrow = np.asarray([values[i] for i in where], dtype=np.float64).astype(np.float32)
    for i, v in zip(where, narrow.astype(np.float64).tolist()):
        out[i] = v
    return out


def _f32(values):
    """A list of figures, packed as ``{"f32": [...]}`` when they are all float32 numbers."""
    try:
        return {"f32": _float32_short(values)}
    except (ValueError, TypeError):
        return values


def _b64(values, dtype: str) -> str:
    """Numbers as a little-endian binary array (``dtype``: numpy's, e.g. "<f4"), base64;
    ValueError when one does not survive the trip exactly (not a float32, too large)."""
    import base64

    import numpy as np
    array = np.asarray(values, dtype=dtype)
    if isinstance(values, np.ndarray):
        if not np.array_equal(array, values):
            raise ValueError(f"not {dtype} numbers")
    elif array.tolist() != list(values):
        raise ValueError(f"not {dtype} numbers")
    return base64.b64encode(array.tobytes()).decode("ascii")


def _b64_count(text, itemsize: int) -> int:
    """How many items a base64 array holds, from its length (nothing decoded)."""
    if not isinstance(text, str):
        raise TypeError("a binary array is a base64 string")
    return (len(text) // 4 * 3 - text[-2:].count("=")) // itemsize


_TYPE_NAMES = {"<f4": "float32", "<i4": "int32", "u1": "uint8"}


def _unb64(text, dtype: str, count: int | None = None, array: bool = False):
    """A base64 array of ``dtype`` -> a list of Python numbers (``array``: a NumPy array
    of int64 or float64); figures must be finite."""
    import base64
    import binascii

    import numpy as np
    if not isinstance(text, str):
        raise TypeError("a binary array is a base64 string")
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ValueError(f"a binary array is not base64 ({exc})") from None
    size = np.dtype(dtype).itemsize
    if len(raw) % size or (count is not None and len(raw) != count * size):
        raise ValueError(f"a binary array of {len(raw):,} bytes is not "
                         f"{'a whole number of' if count is None else f'{count:,}'} "
                         f"{_TYPE_NAMES[dtype]} items")
    values = np.frombuffer(raw, dtype=dtype)
    if values.dtype.kind == "f" and not np.isfinite(values).all():
        raise ValueError("a binary array of figures holds NaN or infinity")
    values = values.astype(np.float64 if values.dtype.kind == "f" else np.int64)
    return values if array else values.tolist()


def _int_texts(texts: dict) -> dict:
    """packed token_texts ({"17": text}) as {17: text} (a key that is not a token id's
    digits names no token)."""
    return {int(k): v for k, v in texts.items()
            if type(k) is str and k.isdigit() and str(int(k)) == k}


def _unf32(value):
    if isinstance(value, dict):
        if set(value) == {"f32b"}:
            return _unb64(value["f32b"], "<f4")
        if set(value) != {"f32"}:
            raise ValueError("a packed list of figures is {\"f32\": [...]} or {\"f32b\": base64}")
        return _float32_exact(value["f32"])
    if not isinstance(value, list):
        raise TypeError("figures are a list")
    return value


#: the float32 figures of a decode step (and of its ``eligible`` record)
STEP_FIGURES = ("entropy", "scores")
ELIGIBLE_FIGURES = ("p", "margin", "score", "entropy")


def _packed_step(step: dict) -> dict:
    out = dict(step)
    for key in STEP_FIGURES:
        if isinstance(step.get(key), list):
            out[key] = _f32(step[key])
    if isinstance(step.get("eligible"), dict):
        out["eligible"] = {k: (_f32(v) if k in ELIGIBLE_FIGURES and isinstance(v, list) else v)
                           for k, v in step["eligible"].items()}
    return out


def _figures_len(value) -> int:
    """How many figures a (packed or plain) list holds, before decoding it; ValueError
    for a packed list of another shape."""
    if isinstance(value, dict):
        if set(value) == {"f32"} and isinstance(value["f32"], list):
            return len(value["f32"])
        if set(value) == {"f32b"} and isinstance(value["f32b"], str):
            return _b64_count(value["f32b"], 4)
        raise ValueError("a packed list of figures is {\"f32\": [...]} or {\"f32b\": base64}")
    return len(value) if isinstance(value, list) else 0


def _unpacked_step(step: dict, most: int | None = None, where: str = "decode",
                   budget: "_Budget | None" = None) -> dict:
    """``most``: the answer's slots (gen_length), when known: no list of a step's figures
    is longer, so a longer one is refused before it is decoded; ``budget``: what the
    figures decode to is charged to it first."""
    out = dict(step)
    eligible = step.get("eligible") if isinstance(step.get("eligible"), dict) else {}
    lists = [(k, step.get(k)) for k in STEP_FIGURES] + [
        (f"eligible/{k}", v) for k, v in eligible.items() if k in ELIGIBLE_FIGURES]
    if most is not None:
        for key, value in lists:
            if _figures_len(value) > most:
                raise _OverBound(f"{where}/{key}: {_figures_len(value):,} figures; the "
                                 f"answer has {most} slots (gen_length)")
    if budget is not None:
        budget.spend(sys.getsizeof(step) + FIGURE_COST * sum(_figures_len(v) for _, v in lists),
                     where)
    for key in STEP_FIGURES:
        if key in step and step[key] is not None:
            out[key] = _unf32(step[key])
    if isinstance(step.get("eligible"), dict):
        out["eligible"] = {k: (_unf32(v) if k in ELIGIBLE_FIGURES else v)
                           for k, v in step["eligible"].items()}
    return out


class _Limits:
    """What bounds a trace's per-slot lists before anything is decoded: the answer's slots
    (the run's gen_length, read defensively: the gate checks the configuration later) and
    the top tokens a node records per slot -- the run's K1, never more than the operator's
    ``max_k1`` (:func:`~medal.trace.limits.top_entries`): no field of the trace raises a
    bound."""

    def __init__(self, data: dict, max_k1: int = DEFAULT_MAX_K1):
        from ..config import RANGES
        run = data.get("run") if isinstance(data, dict) else None
        cfg = run.get("config") if isinstance(run, dict) else None
        cfg = cfg if isinstance(cfg, dict) else {}
        L = cfg.get("gen_length")
        self.slots = L if type(L) is int and 0 < L <= RANGES["gen_length"][1] else None
        self.top = top_entries(cfg, max_k1)
        self.top_why = top_entries_text(cfg, max_k1, self.top)


def _packed_node(node: dict, texts: dict, binary: bool = False) -> dict:
    """One node with its per-slot lists packed: ``masked`` as a string of 0/1, ``entropy``
    for the masked slots only, ``top`` as {slot: [[tokens...], [p...]]} with the token
    texts in the trace's one table; float32 figures in float32's digits. ``binary``
    (packed-3): ``entropy`` as {"f32b": base64} and ``top`` as {"bin": [slots, counts,
    tokens, probabilities]} (base64 arrays of int32, uint8, int32 and float32) where
    every figure fits; else as packed-2."""
    masked = node["masked"]
    out = dict(node)
    out["masked"] = "".join("1" if m else "0" for m in masked)
    entropy = [h for h, m in zip(node["entropy"], masked) if m]
    top = node["top"]
    if isinstance(top, TopRows):    # a loaded trace's rows: written from their columns
        columns = top.columns()
        for t in dict.fromkeys(columns[2].tolist()):    # in the rows' order, as below
            texts[str(t)] = top.texts[t]
    else:
        for entries in top:
            for e in entries or ():
                texts[str(e["token"])] = e["text"]
    out["entropy"] = out["top"] = None
    if binary:      # packed-2's lists only where a binary array does not hold the figures
        try:
            out["entropy"] = {"f32b": _b64(entropy, "<f4")}
        except (ValueError, TypeError, OverflowError):
            pass
        try:
            if isinstance(top, TopRows):
                slots, counts, tokens, probs = columns
            else:
                slots = [s for s, e in enumerate(top) if e is not None]
                rows = [top[s] for s in slots]
                counts = [len(r) for r in rows]
                tokens = [e["token"] for r in rows for e in r]
                probs = [e["p"] for r in rows for e in r]
            out["top"] = {"bin": [_b64(slots, "<i4"), _b64(counts, "u1"),
                                  _b64(tokens, "<i4"), _b64(probs, "<f4")]}
        except (ValueError, TypeError, OverflowError):
            pass
    if out["entropy"] is None:
        out["entropy"] = _f32(entropy)
    if out["top"] is None:
        out["top"] = {str(slot): [[e["token"] for e in entries], _f32([e["p"] for e in entries])]
                      for slot, entries in enumerate(node["top"]) if entries is not None}
    return out


def _unpacked_binary_top(top: dict, n_slots: int, where: str, most: int | None,
                         why: str = ""):
    """packed-3's {"bin": [slots, counts, tokens, probabilities]} -> those four arrays
    (NumPy: int64, int64, int64, float64), every array's length checked (from its base64
    length) before it is decoded (their memory was charged by :func:`_decoded_cost`
    before any node was)."""
    part = top["bin"]
    if set(top) != {"bin"} or not isinstance(part, list) or len(part) != 4:
        raise ValueError(f"{where}/top: a binary top is {{\"bin\": [slots, counts, tokens, p]}}")
    n = _b64_count(part[0], 4)
    if n > n_slots:
        raise _OverBound(f"{where}/top: {n:,} slots with top tokens; the answer has {n_slots}")
    if _b64_count(part[1], 1) != n:
        raise ValueError(f"{where}/top: {_b64_count(part[1], 1):,} counts for {n:,} slots")
    counts = _unb64(part[1], "u1", n)
    if most is not None and counts and max(counts) > most:
        raise _OverBound(f"{where}/top: {max(counts):,} top tokens for one slot; {why}")
    total = sum(counts)
    for name, text in (("tokens", part[2]), ("probabilities", part[3])):
        if _b64_count(text, 4) != total:   # checked from the length, before decoding
            raise _OverBound(f"{where}/top: {_b64_count(text, 4):,} {name} for the "
                             f"{total:,} top entries its counts give")
    return (_unb64(part[0], "<i4", n, array=True), _unb64(part[1], "u1", n, array=True),
            _unb64(part[2], "<i4", total, array=True), _unb64(part[3], "<f4", total, array=True))


def _top_entries_count(top) -> int:
    """How many top entries a packed node's ``top`` decodes to, from lengths alone."""
    if not isinstance(top, dict):
        return 0
    if "bin" in top:
        part = top["bin"]
        return _b64_count(part[2], 4) if isinstance(part, list) and len(part) == 4 \
            and isinstance(part[2], str) else 0
    return sum(len(pair[0]) for pair in top.values()
               if isinstance(pair, list) and pair and isinstance(pair[0], list))


def _node_cost(node, n_slots: int) -> int:
    """The memory decoding one packed node's per-slot lists takes (its slots, its entropy
    figures, its top entries: :mod:`medal.trace.limits`' costs), from lengths alone."""
    if not isinstance(node, dict):
        return 0
    top = node.get("top")
    if isinstance(top, dict) and "bin" in top:          # packed-3: kept as columns
        return (2 * sys.getsizeof(node) + COLUMN_SLOT_COST * n_slots + COLUMN_NODE_COST
                + FIGURE_COST * _figures_len(node.get("entropy"))
                + TOP_COLUMN_COST * _top_entries_count(top))
    return (2 * sys.getsizeof(node) + SLOT_COST * n_slots     # its two copies, its lists
            + FIGURE_COST * _figures_len(node.get("entropy"))
            + TOP_ENTRY_COST * _top_entries_count(top))


def _decoded_cost(nodes: list, limits: "_Limits | None", budget: _Budget) -> None:
    """Charge every node's per-slot lists to ``budget`` from their lengths before any
    node is decoded: a trace whose top entries alone would decode past the bound is
    refused without building one (issue 40: 5 M entries took 10.9 CPU-s and 1.9 GB)."""
    for i, node in enumerate(nodes):
        # the slots: gen_length's, which every node must have (else counted as decoded)
        n = limits.slots if limits is not None and limits.slots is not None else 0
        top = node.get("top") if isinstance(node, dict) else None
        if limits is not None and isinstance(top, dict) and "bin" not in top:
            for slot, pair in top.items():    # packed-2's rows: their lengths, first
                if isinstance(pair, list) and pair and isinstance(pair[0], list) \
                        and len(pair[0]) > limits.top:
                    raise _OverBound(f"tree/nodes/{i}/top/{slot[:20]}: {len(pair[0]):,} top "
                                     f"tokens for one slot; {limits.top_why}")
        budget.spend(_node_cost(node, n), f"tree/nodes/{i}")


def _unpacked_node(node: dict, texts: dict, budget: "_Budget | None" = None,
                   where: str = "tree/nodes", limits: "_Limits | None" = None,
                   int_texts: dict | None = None) -> dict:
    """A packed node's per-slot lists back, each checked against the run's bounds from
    its length before it is decoded (``budget``: when given, the node's lists were not
    charged by :func:`_decoded_cost`, and are here)."""
    if not isinstance(node["masked"], str):
        raise TypeError("masked is not a string of 0 and 1")
    if limits is not None and limits.slots is not None and len(node["masked"]) != limits.slots:
        raise _OverBound(f"{where}/masked: {len(node['masked']):,} slots; gen_length is "
                         f"{limits.slots}")
    if set(node["masked"]) - {"0", "1"}:
        raise ValueError("masked holds other characters than 0 and 1")
    n_masked = node["masked"].count("1")
    if _figures_len(node["entropy"]) != n_masked:    # counted before it is decoded
        raise ValueError(f"{_figures_len(node['entropy']):,} entropies for {n_masked} "
                         "masked slots")
    if not isinstance(node["top"], dict):
        raise TypeError("top is malformed (an object of slot: [tokens, probabilities])")
    if budget is not None:
        budget.spend(_node_cost(node, len(node["masked"])), where)
    masked = [c == "1" for c in node["masked"]]
    entropy = iter(_unf32(node["entropy"]))
    out = dict(node)
    out["masked"] = masked
    out["entropy"] = [next(entropy) if m else None for m in masked]
    top: list = [None] * len(masked)
    most = limits.top if limits is not None else None
    why = limits.top_why if limits is not None else ""
    if "bin" in node["top"]:      # kept as columns (issue 41): rows built when read
        slots, counts, tokens, probs = _unpacked_binary_top(node["top"], len(masked), where,
                                                            most, why)
        try:
            out["top"] = TopRows.from_columns(len(masked), slots, counts, tokens, probs,
                                              _int_texts(texts) if int_texts is None
                                              else int_texts)
        except ValueError as exc:
            raise ValueError(f"{where}/{exc}") from None
        return out
    entries = [(slot, *pair) for slot, pair in node["top"].items()]
    for slot, tokens, probs in entries:
        # bounded before anything is built: K1 entries a slot, each a dict in memory
        if not isinstance(tokens, list):
            raise TypeError(f"{where}/top/{slot[:20]}: tokens are a list")
        if most is not None and _figures_len(probs) > most >= len(tokens):
            raise ValueError(f"slot {slot[:20]}: {len(tokens)} tokens, "
                             f"{_figures_len(probs):,} probabilities")
        if most is not None and len(tokens) > most:
            raise _OverBound(f"{where}/top/{slot[:20]}: {len(tokens):,} top tokens for one "
                             f"slot; {why}")
        probs = _unf32(probs)
        if len(tokens) != len(probs):
            raise ValueError(f"slot {slot}: {len(tokens)} tokens, {len(probs)} probabilities")
        if not slot.isdigit() or not int(slot) < len(masked):
            raise ValueError(f"top names slot {slot[:20]!r}, not one of the answer's "
                             f"{len(masked)} slots")
        top[int(slot)] = [{"token": t, "text": texts[str(t)], "p": p}
                          for t, p in zip(tokens, probs)]
    out["top"] = top
    return out


def _unpacked_steps(steps: list, v2: bool, budget: _Budget, where: str,
                    limits: "_Limits | None" = None) -> list:
    out, prev = [], None
    for k, step in enumerate(steps):
        if not isinstance(step, dict):
            raise TypeError(f"{where}/{k} is not an object")
        st = _unpacked_step(step, limits.slots if limits is not None else None,
                            f"{where}/{k}", budget if limits is not None else None)
        if v2 and isinstance(step.get("answer"), dict):
            st["answer"] = _apply_string_diff(prev, step["answer"], f"{where}/{k}/answer",
                                              budget)
        out.append(st)
        prev = st.get("answer")
    return out


def pack(trace: dict, diff: bool = True, binary: bool = True) -> dict:
    """The compact written form of a plain trace. "packed-1" (``diff=False``): per node,
    ``masked`` as a 0/1 string, ``entropy`` of the masked slots only and ``top`` as
    packed lists, with each token's text once in ``token_texts``, and the float32
    figures in float32's digits. "packed-2" (the default) adds differences: a node's
    answer ids, completion ids, masked string, sequence and completion as differences
    from its parent's (:mod:`.differences`), its action as an index into the parent's
    action set; a simulation's completions as the ids of the nodes
    that hold them; a decode step's answer as a difference from the previous step's.
    "packed-3" (the default; ``binary=False``: packed-2) writes each node's entropies, top
    tokens and probabilities as binary arrays (see :func:`_packed_node`).
    :func:`unpack` gives the trace back, exactly; a trace it would not give back exactly
    stays as it is."""
    if "tree" not in trace:
        return trace
    tree = trace["tree"]
    if tree is None:
        nodes: list = []  # a baseline: its decode steps are packed
    elif isinstance(tree, dict) and isinstance(tree.get("nodes"), list) and tree["nodes"]:
        nodes = tree["nodes"]
    else:
        return trace
    texts: dict = {}
    try:
        packed_nodes = [_packed_node(n, texts, binary=diff and binary) for n in nodes]
        if diff:
            packed_nodes = [
                _diffed_node(n, packed_nodes[n["parent"]])
                if type(n.get("parent")) is int and 0 <= n["parent"] < i else n
                for i, n in enumerate(packed_nodes)]
    except (KeyError, TypeError, ValueError):
        return trace
    encoding = (PACKED_3 if binary else PACKED_2) if diff else PACKED_1
    out = {**trace, "encoding": encoding, "token_texts": texts,
           "tree": None if tree is None else {**tree, "nodes": packed_nodes}}
    try:
        if diff and isinstance(trace.get("iterations"), list):
            out["iterations"] = _completion_refs(trace["iterations"], nodes)
        if isinstance(trace.get("decode"), list):
            out["decode"] = [_packed_step(st) for st in trace["decode"]]
            if diff:
                out["decode"] = _diffed_steps(out["decode"])
        if isinstance(trace.get("comparison"), dict) and isinstance(
                trace["comparison"].get("steps"), list):
            steps = [_packed_step(st) for st in trace["comparison"]["steps"]]
            out["comparison"] = {**trace["comparison"],
                                 "steps": _diffed_steps(steps) if diff else steps}
    except (KeyError, TypeError, ValueError, AttributeError):
        return trace
    try:
        same = unpack(out, max_bytes=None) == trace
    except (KeyError, TypeError, ValueError, IndexError, AttributeError):
        same = False
    return out if same else trace


def pack_v1(trace: dict) -> dict:
    """The earlier written form, "packed-1" (nodes in full): :func:`pack` without differences."""
    return pack(trace, diff=False)


def unpack(data: Any, max_bytes: int | None = MAX_TRACE_BYTES,
           max_k1: int = DEFAULT_MAX_K1) -> Any:
    """A trace in a packed form (:func:`pack`: "packed-1", "packed-2", "packed-3") -> the trace;
    anything else unchanged. Malformed packing raises ValueError/KeyError/TypeError/
    IndexError. What it may decode to is bounded by ``max_bytes`` (the size limit;
    :data:`~medal.trace.limits.DECODED_PER_BYTE` bytes of memory per byte; None:
    unbounded, for traces being written) and ``max_k1`` (the operator's K1 limit: the most
    top tokens a slot may carry, whatever the trace's own K1)."""
    if not isinstance(data, dict) or data.get("encoding") not in PACKED_FORMS:
        return data
    v2 = data["encoding"] in (PACKED_2, PACKED_3)     # nodes as differences
    budget = _Budget(None if max_bytes is None else DECODED_PER_BYTE * max_bytes)
    limits = _Limits(data, max_k1) if max_bytes is not None else None
    texts = data["token_texts"]
    if not isinstance(texts, dict):
        raise TypeError("token_texts is not an object")
    out = {k: v for k, v in data.items() if k not in ("encoding", "token_texts")}
    tree = data["tree"]
    if tree is not None and not (isinstance(tree, dict) and isinstance(tree["nodes"], list)):
        raise TypeError("tree/nodes is not a list")
    if tree is not None and max_bytes is not None:
        _decoded_cost(tree["nodes"], limits, budget)     # every node's lists, first
    flat: list = []
    nodes: list = []
    int_texts = _int_texts(texts)       # one table for every node's rows
    for i, node in enumerate(tree["nodes"] if tree is not None else ()):
        if v2:
            node = _undiffed_node(i, node, flat, budget)
            flat.append(node)
        if limits is not None and limits.slots is None and isinstance(node, dict) \
                and isinstance(node.get("masked"), str):   # slots _decoded_cost could not count
            budget.spend(SLOT_COST * len(node["masked"]), f"tree/nodes/{i}")
        nodes.append(_unpacked_node(node, texts, None, f"tree/nodes/{i}", limits, int_texts))
    if tree is not None:
        out["tree"] = {**tree, "nodes": nodes}
    if v2 and "iterations" in data:
        out["iterations"] = _completions_back(data["iterations"], nodes)
    if isinstance(data.get("decode"), list):
        out["decode"] = _unpacked_steps(data["decode"], v2, budget, "decode", limits)
    if isinstance(data.get("comparison"), dict) and isinstance(
            data["comparison"].get("steps"), list):
        out["comparison"] = {**data["comparison"], "steps": _unpacked_steps(
            data["comparison"]["steps"], v2, budget, "comparison/steps", limits)}
    return out
