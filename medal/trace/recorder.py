"""The trace recorder: an observer of the engine's events that builds the trace (DESIGN section 3).

After each event ``recorder.trace`` is the trace so far, so a live view and a re-loaded
file render through the same functions.
"""
from __future__ import annotations

import math
import platform
from typing import Any

from .._version import __version__
from ..events import Event
from ..provenance import record as repro_record
from ..scores import entropy_total
from .limits import LONG_ANSWER, TRACE_FORMAT, TRACE_VERSION
from .toprows import TopRows


def torch_nonzero(mask) -> list[int]:
    return [i for i, m in enumerate(mask.tolist()) if m]


def jsonable(value: Any) -> Any:
    """Plain JSON values: NaN/inf -> None, numpy/torch scalars and tensors -> numbers/lists."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, (bool, int, str)) or value is None:
        return value
    if isinstance(value, TopRows):    # a loaded trace's top tokens: JSON through their rows
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
            from ..decoding import eligible_slots
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
            "entropy_sum": entropy_total(ev.entropy, ev.masked),
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
        if e.edits:  # only when there are some: a trace without edits is as it was
            step["edits"] = jsonable([edit.to_json() for edit in e.edits])
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
                               **{k: res[k] for k in ("token_passes", "valid_tokens", "tpf")},
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
