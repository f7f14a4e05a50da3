"""Replay: the trace as it stood after iteration k, so an uploaded (or finished) run can
be stepped through with a slider and every view renders it unchanged.

The tree's statistics at iteration k come from the iterations' own records: the N, W,
Q of each node after the latest backpropagation at or before k, and the UCB of the
latest selection that considered it.
"""
from __future__ import annotations


def iteration_count(trace: dict) -> int:
    return len(trace.get("iterations") or [])


def trace_at_iteration(trace: dict, k: int) -> dict:
    """A trace truncated after MCTS iteration ``k`` (0: the root alone).

    ``k`` at or beyond the last iteration returns ``trace`` itself (search result,
    decoding and comparison included). Earlier points drop everything after the
    search: the candidate choice, phase C and the result had not happened yet."""
    iterations = trace.get("iterations") or []
    if k >= len(iterations) or not trace.get("tree"):
        return trace
    k = max(0, k)
    kept_iterations = iterations[:k]
    stats: dict[int, dict] = {}
    ucbs: dict[int, float | None] = {}
    for it in kept_iterations:
        for level in it["selection"]["levels"]:
            for row in level:
                ucbs[row["node"]] = row["ucb"]
        bp = it.get("backpropagation")
        if bp:
            for u in bp["updates"]:
                stats[u["node"]] = u
    nodes = []
    for node in trace["tree"]["nodes"]:
        if node.get("created_iteration", 0) > k:
            continue
        s = stats.get(node["id"], {"N": 0, "W": 0.0, "Q": 0.0})
        copy = dict(node, N=s["N"], W=s["W"], Q=s["Q"], ucb=ucbs.get(node["id"]))
        copy.pop("candidate_final", None)
        nodes.append(copy)
    out = dict(trace)
    out.update(tree={"root": trace["tree"]["root"], "nodes": nodes}, iterations=kept_iterations,
               search=None, decode=[], result=None, comparison=None, timing={})
    out.pop("stats", None)
    out["replay"] = {"iteration": k, "of": len(iterations)}
    return out
