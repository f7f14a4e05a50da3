"""The trace: a versioned JSON document with everything the UI shows (DESIGN section 3).

:class:`TraceRecorder` is an observer of the engine's events; after each event
``recorder.trace`` is the trace so far, so a live view and a re-loaded file render
through the same functions. :func:`load_trace` validates a file against
``trace.schema.json`` and says what is wrong with a bad one.
"""
from __future__ import annotations

import json
import math
import platform
from importlib import resources
from pathlib import Path
from typing import Any

from . import __version__
from .errors import TraceError
from .events import Event
from .repro import record as repro_record

TRACE_FORMAT = "medal-trace"
TRACE_VERSION = 1
MAX_TRACE_BYTES = 20 * 1024 * 1024  # uploads above this are refused
LONG_ANSWER = 64  # answers longer than this record fewer per-slot figures
#: the packed form of a written trace (see :func:`pack`); read back by :func:`unpack`
PACKED = "packed-1"


def torch_nonzero(mask) -> list[int]:
    return [i for i, m in enumerate(mask.tolist()) if m]


def jsonable(value: Any) -> Any:
    """Plain JSON values: NaN/inf -> None, numpy/torch scalars and tensors -> numbers/lists."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, (bool, int, str)) or value is None:
        return value
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if hasattr(value, "tolist"):  # torch / numpy tensors and scalars
        return jsonable(value.tolist())
    if hasattr(value, "item"):
        return jsonable(value.item())
    raise TypeError(f"cannot put {type(value).__name__} in a trace")


class TraceRecorder:
    """Builds the trace from engine events. ``top_k``: tokens recorded per masked slot."""

    def __init__(self, model, top_k: int = 3):
        self.model = model
        self.top_k = top_k
        self.trace: dict = {}
        self._k1 = 0
        self._block_length: int | None = None
        self._nodes: dict[int, Any] = {}
        self._iteration: dict | None = None

    # ------------------------------------------------------------------ nodes
    def _node_json(self, node, iteration: int) -> dict:
        ev = node.evaluation
        # enough tokens per slot to recompute the node's action set: K1 of them (and 2
        # for the margin), whatever K1 is
        k = max(self.top_k, self._k1, 2)
        masked = ev.masked.tolist()
        tt = self.model.token_text
        # long answers (LLaDA's 256 slots): top tokens only for the slots eligible for the
        # node's action set (its first block with masks), which is what recomputing the
        # action set needs; keeps traces uploadable
        keep = None
        if len(masked) > LONG_ANSWER:
            from .decoding import eligible_slots
            eligible, _ = eligible_slots(ev.masked, self._block_length or len(masked))
            keep = set(torch_nonzero(eligible)) | {a.slot for a in node.actions}
        return {
            "id": node.id,
            "parent": node.parent.id if node.parent is not None else None,
            "depth": node.depth,
            "created_iteration": iteration,
            "action": (node.action.to_json(tt(node.action.token)) if node.action else None),
            "N": node.N, "W": node.W, "Q": node.Q,
            "r_ig": node.r_ig, "reward": node.reward, "verified": node.verified,
            "ucb": None,
            "sequence": self.model.decode_masked(ev.answer),
            "answer_ids": ev.answer.tolist(),
            "completion": None, "completion_ids": None,
            "masked": masked,
            "entropy": [float(h) if m else None for h, m in zip(ev.entropy.tolist(), masked)],
            "entropy_sum": float(ev.entropy[ev.masked].sum()),
            "top": [[{"token": int(t), "text": tt(int(t)), "p": float(p)}
                     for t, p in zip(ev.top_tokens[i, :k].tolist(), ev.top_probs[i, :k].tolist())]
                    if m and (i in keep if keep is not None else True) else None
                    for i, m in enumerate(masked)],
            "action_set": [a.to_json(tt(a.token)) for a in node.actions],
            "candidate": node.candidate, "exhausted": node.exhausted,
        }

    def _sync(self, node) -> None:
        rec = self.trace["tree"]["nodes"][node.id]
        rec.update(N=node.N, W=node.W, Q=node.Q, exhausted=node.exhausted,
                   ucb=jsonable(node.last_ucb), r_ig=node.r_ig, reward=node.reward, verified=node.verified)
        if node.completion is not None and rec["completion"] is None:
            rec["completion_ids"] = node.completion.tolist()
            rec["completion"] = self.model.decode_masked(node.completion)

    # ------------------------------------------------------------------ events
    def __call__(self, event: Event) -> None:
        getattr(self, "_on_" + event.kind)(event)

    def _on_run_started(self, e):
        import torch
        self._k1 = int(e.config.get("k1") or 0)
        self._block_length = e.config.get("block_length")
        self.trace = {
            "format": TRACE_FORMAT, "version": TRACE_VERSION,
            "run": {"strategy": e.strategy, "prompt": e.prompt, "model_prompt": e.model_prompt,
                    "problem": e.problem, "config": e.config, "model": e.model,
                    "fixed_slots": [{"slot": s, "token": t, "text": text}
                                    for s, (t, text) in sorted(e.fixed.items())],
                    "task": e.task,
                    "versions": {"medal": __version__, "torch": torch.__version__,
                                 "python": platform.python_version()}},
            "tree": None, "iterations": [], "search": None, "decode": [],
            "result": None, "comparison": None, "timing": {},
            # where it ran: outside what must reproduce, like the timing
            "reproducibility": repro_record(self.model, e.config.get("seed")),
        }
        if getattr(e, "fork", None):
            self.trace["fork"] = dict(e.fork)

    def _on_root(self, e):
        self.trace["tree"] = {"root": e.node.id, "nodes": [self._node_json(e.node, 0)]}
        self._nodes[e.node.id] = e.node

    def _on_selection(self, e):
        self._iteration = {"iteration": e.iteration,
                           "selection": {"path": e.path, "levels": jsonable(e.levels)},
                           "expansion": None, "simulation": None, "backpropagation": None}
        self.trace["iterations"].append(self._iteration)
        for level in e.levels:
            for row in level:
                self.trace["tree"]["nodes"][row["node"]]["ucb"] = jsonable(row["ucb"])

    def _on_expansion(self, e):
        for ch in e.children:
            self._nodes[ch.id] = ch
            self.trace["tree"]["nodes"].append(self._node_json(ch, e.iteration))
        self._iteration["expansion"] = {"leaf": e.leaf, "children": [c.id for c in e.children],
                                        "forwards": e.forwards, "cached": e.cached,
                                        "sequences": e.sequences}

    def _on_simulation(self, e):
        self._iteration["simulation"] = {"children": e.children, "rewards": e.rewards,
                                         "completions": e.completions,
                                         "forwards": e.forwards, "sequences": e.sequences,
                                         "cache_hits": e.cache_hits}
        for nid in e.children:
            self._sync(self._nodes[nid])

    def _on_backpropagation(self, e):
        self._iteration["backpropagation"] = {"path": e.path, "updates": jsonable(e.updates),
                                              "new_candidates": e.new_candidates}
        for u in e.updates:
            self._sync(self._nodes[u["node"]])
        for nid in self._iteration["selection"]["path"]:
            self._sync(self._nodes[nid])

    def _on_forced(self, e):
        for node in e.new:
            self._nodes[node.id] = node
            self.trace["tree"]["nodes"].append(self._node_json(node, e.iteration))
            self._sync(node)
        self.trace["fork"].update(after_iteration=e.iteration, forced_nodes=list(e.path))

    def _on_search_finished(self, e):
        self.trace["search"] = {"stop_reason": e.reason, "iterations": e.iterations,
                                "candidates": e.candidates, "winner": None, "why": None,
                                "candidate_scores": [], "stats": e.stats}
        for node in self._nodes.values():
            self._sync(node)

    def _on_candidate_chosen(self, e):
        self.trace["search"].update(winner=e.winner, why=e.why,
                                    candidate_scores=jsonable(e.candidates))

    def _on_decode_step(self, e):
        step = jsonable({k: getattr(e, k) for k in ("phase", "step", "block", "slots", "tokens",
                                                    "token_texts", "scores", "entropy", "answer",
                                                    "forwards", "sequences", "cache_hits",
                                                    "eligible")})
        if e.phase == "compare_greedy":
            comp = self.trace["comparison"] or {"strategy": "greedy", "steps": [], "result": None}
            comp["steps"].append(step)
            self.trace["comparison"] = comp
        else:
            self.trace["decode"].append(step)

    def _on_sample_finished(self, e):
        pass  # the samples are in the result's extra figures

    def _on_run_finished(self, e):
        res = jsonable(e.result.to_json())
        timing = {k: res.pop(k) for k in ("seconds", "model_seconds", "search_seconds",
                                          "search_model_seconds") if k in res}
        res.pop("entropy_rows", None)
        self.trace["result"] = res
        self.trace["timing"] = timing
        self.trace["stats"] = {"forwards": res["forwards"],
                               "sequence_forwards": res["sequence_forwards"],
                               "cache_hits": res["cache_hits"],
                               "standalone_forwards": res["standalone_forwards"],
                               "standalone_sequences": res["standalone_sequences"],
                               "mcts_forwards": sum(it["expansion"]["forwards"]
                                                    + ((it["simulation"] or {}).get("forwards") or 0)
                                                    for it in self.trace["iterations"]
                                                    if it["expansion"]) + (1 if self.trace["tree"] else 0)}
        if self.trace["search"]:
            # the finals are known only now (the winner's phase C came after the choice):
            # from the result's records, not from the copy taken at the choice
            finals = {r["node"]: r.get("final") for r in res.get("candidates") or []}
            for rec in self.trace["search"]["candidate_scores"]:
                self.trace["tree"]["nodes"][rec["node"]]["candidate_final"] = finals.get(rec["node"])
        if e.comparison is not None:
            comp = jsonable(e.comparison.to_json())
            comp.pop("entropy_rows", None)
            self.trace["timing"]["comparison_seconds"] = comp.pop("seconds")
            comp.pop("model_seconds")
            self.trace["comparison"]["result"] = comp

    def to_json(self) -> dict:
        """The trace so far, JSON-ready (every value was made plain as it was recorded).
        This is the recorder's own dict, not a copy: read it, or copy before changing it."""
        return self.trace


# ---------------------------------------------------------------------- files

def schema() -> dict:
    return json.loads(resources.files("medal").joinpath("trace.schema.json").read_text())


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


def _unf32(value):
    if isinstance(value, dict):
        if set(value) != {"f32"}:
            raise ValueError("a packed list of figures is {\"f32\": [...]}")
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


def _unpacked_step(step: dict) -> dict:
    out = dict(step)
    for key in STEP_FIGURES:
        if key in step and step[key] is not None:
            out[key] = _unf32(step[key])
    if isinstance(step.get("eligible"), dict):
        out["eligible"] = {k: (_unf32(v) if k in ELIGIBLE_FIGURES else v)
                           for k, v in step["eligible"].items()}
    return out


def _packed_node(node: dict, texts: dict) -> dict:
    """One node with its per-slot lists packed: ``masked`` as a string of 0/1, ``entropy``
    for the masked slots only, ``top`` as {slot: [[tokens...], [p...]]} with the token
    texts in the trace's one table; float32 figures in float32's digits."""
    masked = node["masked"]
    out = dict(node)
    out["masked"] = "".join("1" if m else "0" for m in masked)
    out["entropy"] = _f32([h for h, m in zip(node["entropy"], masked) if m])
    top = {}
    for slot, entries in enumerate(node["top"]):
        if entries is not None:
            top[str(slot)] = [[e["token"] for e in entries], _f32([e["p"] for e in entries])]
            for e in entries:
                texts[str(e["token"])] = e["text"]
    out["top"] = top
    return out


def _unpacked_node(node: dict, texts: dict) -> dict:
    masked = [c == "1" for c in node["masked"]]
    if set(node["masked"]) - {"0", "1"}:
        raise ValueError("masked holds other characters than 0 and 1")
    entropies = _unf32(node["entropy"])
    if len(entropies) != sum(masked):
        raise ValueError(f"{len(entropies)} entropies for {sum(masked)} masked slots")
    entropy = iter(entropies)
    out = dict(node)
    out["masked"] = masked
    out["entropy"] = [next(entropy) if m else None for m in masked]
    top: list = [None] * len(masked)
    for slot, (tokens, probs) in node["top"].items():
        probs = _unf32(probs)
        if len(tokens) != len(probs):
            raise ValueError(f"slot {slot}: {len(tokens)} tokens, {len(probs)} probabilities")
        top[int(slot)] = [{"token": t, "text": texts[str(t)], "p": p}
                          for t, p in zip(tokens, probs)]
    out["top"] = top
    return out


def pack(trace: dict) -> dict:
    """The compact written form of a plain trace: per node, ``masked`` as a 0/1 string,
    ``entropy`` of the masked slots only and ``top`` as packed lists, with each token's
    text once in ``token_texts``, and the float32 figures in float32's digits.
    :func:`unpack` gives the trace back, exactly; a trace it would not give back exactly
    stays as it is."""
    nodes = (trace.get("tree") or {}).get("nodes")
    if not nodes:
        return trace
    texts: dict = {}
    try:
        packed_nodes = [_packed_node(n, texts) for n in nodes]
    except (KeyError, TypeError, ValueError):
        return trace
    out = {**trace, "encoding": PACKED, "token_texts": texts,
           "tree": {**trace["tree"], "nodes": packed_nodes}}
    try:
        if isinstance(trace.get("decode"), list):
            out["decode"] = [_packed_step(st) for st in trace["decode"]]
        if isinstance(trace.get("comparison"), dict) and isinstance(
                trace["comparison"].get("steps"), list):
            out["comparison"] = {**trace["comparison"], "steps": [
                _packed_step(st) for st in trace["comparison"]["steps"]]}
    except (KeyError, TypeError, ValueError, AttributeError):
        return trace
    try:
        same = unpack(out) == trace
    except (KeyError, TypeError, ValueError, IndexError):
        same = False
    return out if same else trace


def unpack(data: Any) -> Any:
    """A trace in the packed form (:func:`pack`) -> the trace; anything else unchanged.
    Malformed packing raises ValueError/KeyError/TypeError/IndexError."""
    if not isinstance(data, dict) or data.get("encoding") != PACKED:
        return data
    texts = data["token_texts"]
    if not isinstance(texts, dict):
        raise TypeError("token_texts is not an object")
    out = {k: v for k, v in data.items() if k not in ("encoding", "token_texts")}
    out["tree"] = {**data["tree"],
                   "nodes": [_unpacked_node(n, texts) for n in data["tree"]["nodes"]]}
    if isinstance(data.get("decode"), list):
        out["decode"] = [_unpacked_step(st) for st in data["decode"]]
    if isinstance(data.get("comparison"), dict) and isinstance(
            data["comparison"].get("steps"), list):
        out["comparison"] = {**data["comparison"], "steps": [
            _unpacked_step(st) for st in data["comparison"]["steps"]]}
    return out


def dumps(trace: dict, packed: bool = False) -> str:
    """The trace as JSON text; ``packed``: in the compact written form (:func:`pack`),
    which :func:`loads_trace` reads back to the same trace."""
    plain = jsonable(trace)
    return json.dumps(pack(plain) if packed else plain, allow_nan=False,
                      separators=(",", ":"))


def write_trace(trace: dict, path: str | Path) -> int:
    """Write the trace, packed (:func:`pack`), after checking it; returns its size in bytes."""
    text = dumps(trace, packed=True)
    validate_trace(json.loads(text))
    from .files import write_atomic
    data = text.encode("utf-8")
    write_atomic(path, data)
    return len(data)


def validate_trace(data: Any) -> dict:
    """Check a parsed trace (either form: plain or packed): the schema, then its meaning
    (:mod:`medal.trace_check`). Returns the plain trace. Raises only :class:`TraceError`,
    which says where (a JSON path) and what."""
    from .trace_check import check
    try:
        data = unpack(data)
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
        raise TraceError(f"the trace says it is packed ({PACKED}) but its packing is "
                         f"malformed: {type(exc).__name__}: {str(exc)[:200]}") from None
    return check(data)


def size_text(size: int, max_bytes: int) -> str:
    """"21,000,000 bytes; the limit is 20,971,520 bytes (20 MiB)": the one wording of the
    one size limit (the CLI, the gate and the app's uploader say the same)."""
    return f"{size:,} bytes; the limit is {max_bytes:,} bytes ({max_bytes / 2**20:g} MiB)"


def loads_trace(text: str | bytes, max_bytes: int = MAX_TRACE_BYTES) -> dict:
    """The one gate for trace text: parse with limits, validate, return the trace.

    Refuses more than ``max_bytes``. Raises only :class:`TraceError`; a trace it returns
    is fit to render in every view."""
    from .trace_check import parse
    if not isinstance(text, (str, bytes, bytearray)):
        raise TraceError(f"a trace is JSON text, not {type(text).__name__}")
    size = len(text)  # a character is at least one byte: no need to encode a huge text
    if isinstance(text, str) and size <= max_bytes:
        size = len(text.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        raise TraceError(f"the trace is {size_text(size, max_bytes)}")
    return validate_trace(parse(bytes(text) if isinstance(text, bytearray) else text))


def load_trace(path: str | Path, max_bytes: int = MAX_TRACE_BYTES) -> dict:
    path = Path(path)
    try:
        if not path.is_file():
            raise TraceError(f"no trace file at {path}")
        if path.stat().st_size > max_bytes:
            raise TraceError(f"{path} is {size_text(path.stat().st_size, max_bytes)}")
        raw = path.read_bytes()
    except OSError as exc:
        raise TraceError(f"cannot read {path}: {exc.strerror or exc}") from None
    return loads_trace(raw, max_bytes)
