"""What a trace holds at each timeline position, its context (clock, fork, environment) aside."""
from __future__ import annotations

#: timing keys, wherever they sit (the recorder moves most into ``timing``)
TIMING_KEYS = ("seconds", "model_seconds", "search_seconds", "search_model_seconds",
               "comparison_seconds", "ms_per_step")
#: top-level blocks that are context, not the run: wall clock, a fork's record, the
#: environment a run was made in
CONTEXT_KEYS = ("timing", "fork", "reproducibility")
#: node fields that accumulate over the whole search (compared at the end)
CUMULATIVE = ("N", "W", "Q", "ucb", "exhausted", "candidate_final")
#: a child's fields its simulation fills in
SIMULATED = ("r_ig", "reward", "verified", "completion", "completion_ids")


def _config_completed(trace: dict) -> dict:
    """``trace`` (a shallow copy) with its configuration complete: a trace written before
    a configuration field existed ran with that field's default."""
    from ..config import GenerationConfig
    cfg = trace["run"].get("config")
    if not isinstance(cfg, dict):
        return trace
    return {**trace, "run": {**trace["run"], "config": GenerationConfig.with_defaults(cfg)}}


def without_context(trace: dict) -> dict:
    """The run itself: ``trace`` less its context (wall clock, fork record, environment).
    Returns a new dict; ``trace`` is not changed."""
    out = {k: v for k, v in trace.items() if k not in CONTEXT_KEYS}
    if isinstance(out.get("run"), dict):
        out["run"] = {k: v for k, v in out["run"].items() if k != "versions"}
        if isinstance(out["run"].get("model"), dict):
            out["run"]["model"] = {k: v for k, v in out["run"]["model"].items()
                                   if k != "device"}
    return _strip_timing(out)


def _strip_timing(value):
    if isinstance(value, dict):
        return {k: _strip_timing(v) for k, v in value.items() if k not in TIMING_KEYS}
    if isinstance(value, list):
        return [_strip_timing(v) for v in value]
    return value


def _forked_nodes(trace: dict) -> set[int]:
    """Nodes no expansion made (besides the root): those a fork forced."""
    tree = trace.get("tree") or {}
    made = {c for it in trace.get("iterations") or [] if it.get("expansion")
            for c in it["expansion"]["children"]}
    return {n["id"] for n in tree.get("nodes") or []
            if n["parent"] is not None and n["id"] not in made}


def _static(node: dict) -> dict:
    return {k: v for k, v in node.items() if k not in CUMULATIVE and k not in SIMULATED}


def _content(trace: dict, pos) -> dict:
    """What is new at timeline position ``pos``: {json path: value}."""
    nodes = (trace.get("tree") or {}).get("nodes") or []
    its = {it["iteration"]: (k, it) for k, it in enumerate(trace.get("iterations") or [])}
    run = trace.get("run") or {}
    kind = pos.kind
    if kind == "started":
        return {f"/run/{k}": run.get(k) for k in ("task", "strategy", "prompt",
                                                  "model_prompt", "problem", "fixed_slots")}
    if kind == "root":
        return {"/tree/nodes/0": _static(nodes[0])} if nodes else {}
    if kind in ("selection", "expansion", "simulation", "backpropagation"):
        k, it = its[pos.iteration]
        out = {f"/iterations/{k}/{kind}": it.get(kind)}
        children = (it.get("expansion") or {}).get("children") or []
        if kind == "expansion":
            out.update({f"/tree/nodes/{c}": _static(nodes[c]) for c in children})
        if kind == "simulation":
            out.update({f"/tree/nodes/{c}": {f: nodes[c].get(f) for f in SIMULATED}
                        for c in children})
        return out
    search = trace.get("search") or {}
    if kind == "search_finished":
        out = {f"/search/{k}": search.get(k) for k in ("stop_reason", "iterations",
                                                       "candidates")}
        out.update({f"/tree/nodes/{n}": _static(nodes[n]) for n in sorted(_forked_nodes(trace))})
        return out
    if kind == "candidate_chosen":
        return {f"/search/{k}": search.get(k) for k in ("winner", "why", "candidate_scores")}
    if kind == "decode":
        return {f"/decode/{pos.index}": trace["decode"][pos.index]}
    if kind == "compare":
        return {f"/comparison/steps/{pos.index}": trace["comparison"]["steps"][pos.index]}
    if kind == "finished":  # everything else: results, costs, the nodes' final figures
        return {"/result": trace.get("result"), "/stats": trace.get("stats"),
                "/comparison/result": (trace.get("comparison") or {}).get("result"),
                "/tree/nodes (final N, W, Q, UCB)": [
                    {f: n.get(f) for f in CUMULATIVE + ("candidate",)} for n in nodes]}
    return {}


def _position_info(trace: dict, pos) -> dict:
    from ..timeline import MCTS_KINDS, step_name
    info = {"kind": pos.kind, "label": pos.label}
    if pos.kind in MCTS_KINDS:
        info["iteration"] = pos.iteration
    if pos.kind in ("decode", "compare"):
        steps = trace["decode"] if pos.kind == "decode" else trace["comparison"]["steps"]
        info["index"] = pos.index
        info["step"] = steps[pos.index]["step"]
        info["phase"] = steps[pos.index]["phase"]
        info["label"] = step_name(steps[pos.index], greedy=pos.kind == "compare")
    return info


def _phase_of(kind: str, trace: dict, pos) -> str:
    if kind in ("started",):
        return "run"
    if kind in ("root", "selection", "expansion", "simulation", "backpropagation",
                "search_finished"):
        return "search"
    if kind == "candidate_chosen":
        return "candidates"
    if kind == "decode":
        phase = trace["decode"][pos.index]["phase"]
        return "candidates" if phase.startswith("phase_c-") else "decode"
    if kind == "compare":
        return "comparison"
    return "result"
