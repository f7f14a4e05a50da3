"""One timeline for live runs and replays: every event of a run is a position on it.

The positions of a trace, in the order the engine produced them:

* ``started``                          -- the prompt encoded, every slot masked;
* ``root``                             -- the root evaluated (strategies with a search);
* ``selection`` / ``expansion`` / ``simulation`` / ``backpropagation`` of every iteration;
* ``search_finished``                  -- the search stopped;
* ``decode`` steps of the other candidates' completions (``phase_c-<id>``), if any;
* ``candidate_chosen``                 -- the winner picked;
* ``decode`` steps (phase C, a baseline's steps, best-of-N samples);
* ``compare`` steps                    -- the greedy comparison;
* ``finished``.

:func:`trace_at` gives the trace as it stood at a position -- the same dict a live run
had at that moment (tested against snapshots of a live run, phase by phase) -- so an
uploaded trace steps exactly like a live run and every view renders it unchanged.
"""
from __future__ import annotations

from dataclasses import dataclass

MCTS_KINDS = ("selection", "expansion", "simulation", "backpropagation")
#: where "Next iteration" stops: the end of an iteration, or any position past the search
ITERATION_ENDS = frozenset({"backpropagation", "search_finished", "candidate_chosen",
                            "decode", "compare", "finished"})


@dataclass(frozen=True)
class Position:
    kind: str                    # see the module docstring
    iteration: int | None = None  # MCTS phases
    index: int | None = None      # decode: index in trace["decode"]; compare: in its steps

    @property
    def label(self) -> str:
        if self.kind in MCTS_KINDS:
            return f"{self.kind} · iteration {self.iteration}"
        if self.kind in ("decode", "compare"):
            return f"{'greedy ' if self.kind == 'compare' else ''}step {self.index + 1}"
        return self.kind.replace("_", " ")


def step_name(rec: dict, *, greedy: bool = False) -> str:
    """A decode step in user words, numbered by its record's ``step`` -- the number the
    viewer's header, the Compare rows, "Where they part", ``medal fork --step`` and
    ``medal diff`` all use (issue 28 #4: they used four numberings)."""
    phase = str(rec.get("phase") or "")
    k = rec.get("step")
    if greedy or phase == "compare_greedy":
        return f"greedy comparison, decode step {k}"
    if phase.startswith("phase_c-"):
        return f"candidate #{phase[len('phase_c-'):]}'s completion, step {k}"
    if phase.startswith("sample-"):
        return f"sample {phase[len('sample-'):]}, decode step {k}"
    return f"decode step {k}"


def label_at(trace: dict, pos: Position) -> str:
    """The position's label for people: a decode step by :func:`step_name`, any other
    position by :attr:`Position.label`."""
    try:
        if pos.kind == "decode":
            return step_name(trace["decode"][pos.index])
        if pos.kind == "compare":
            return step_name(trace["comparison"]["steps"][pos.index], greedy=True)
    except (KeyError, IndexError, TypeError):
        pass
    return pos.label


def positions(trace: dict | None) -> list[Position]:
    """Every position of ``trace`` (a finished run's or one in progress), in order."""
    if not trace or not trace.get("run"):
        return []
    out = [Position("started")]
    if trace.get("tree"):
        out.append(Position("root"))
    for it in trace.get("iterations") or []:
        for kind in MCTS_KINDS:
            if it.get(kind):
                out.append(Position(kind, iteration=it["iteration"]))
    decode = trace.get("decode") or []
    search = trace.get("search")
    rest = list(range(len(decode)))
    if search is not None:
        out.append(Position("search_finished"))
        # one pass each (linear in decode steps: a set rebuilt per step was quadratic)
        others = [i for i in rest if decode[i]["phase"].startswith("phase_c-")]
        out.extend(Position("decode", index=i) for i in others)
        rest = [i for i in rest if not decode[i]["phase"].startswith("phase_c-")]
        if search.get("winner") is not None:
            out.append(Position("candidate_chosen"))
    out.extend(Position("decode", index=i) for i in rest)
    comparison = trace.get("comparison") or {}
    out.extend(Position("compare", index=i) for i in range(len(comparison.get("steps") or [])))
    if trace.get("result") is not None:
        out.append(Position("finished"))
    return out


def clamp(trace: dict | None, index: int | None) -> int:
    """``index`` within the trace's positions (None or past the end: the last one)."""
    n = len(positions(trace))
    if n == 0:
        return 0
    if index is None or index >= n:
        return n - 1
    return max(0, index)


def _empty_after(out: dict, *, search=None, decode=(), comparison=None) -> dict:
    out.update(search=search, decode=list(decode), comparison=comparison, result=None,
               timing={})
    out.pop("stats", None)
    return out


def _tree_at(trace: dict, iteration: int, kind: str) -> dict:
    """The tree as it stood after phase ``kind`` of ``iteration`` (0, "root": the root)."""
    iterations = trace.get("iterations") or []
    order = {k: i for i, k in enumerate(MCTS_KINDS)}
    done_bp = iteration if kind == "backpropagation" else iteration - 1
    stats: dict[int, dict] = {}
    ucbs: dict[int, object] = {}
    for it in iterations[:iteration]:
        for level in it["selection"]["levels"]:
            for row in level:
                ucbs[row["node"]] = row["ucb"]
        bp = it.get("backpropagation")
        if bp and it["iteration"] <= done_bp:
            for u in bp["updates"]:
                stats[u["node"]] = u
    simulated = kind in ("simulation", "backpropagation")
    nodes = []
    for node in trace["tree"]["nodes"]:
        born = node.get("created_iteration", 0)
        if born > iteration or (born == iteration and iteration > 0
                                and order.get(kind, -1) < order["expansion"]):
            continue
        s = stats.get(node["id"], {"N": 0, "W": 0.0, "Q": 0.0})
        copy = dict(node, N=s["N"], W=s["W"], Q=s["Q"], ucb=ucbs.get(node["id"]))
        copy.pop("candidate_final", None)
        if born == iteration and iteration > 0 and not simulated:
            copy.update(r_ig=None, reward=None, verified=None, completion=None,
                        completion_ids=None)
        nodes.append(copy)
    # exhausted: terminal from birth (no actions), or marked by a backpropagation once
    # all its children are exhausted
    children: dict[int, list[dict]] = {}
    for n in nodes:
        if n.get("parent") is not None and n.get("created_iteration", 0) <= done_bp:
            children.setdefault(n["parent"], []).append(n)
    for n in sorted(nodes, key=lambda n: -n["depth"]):
        kids = children.get(n["id"])
        n["exhausted"] = (not n.get("action_set")
                          or bool(kids) and all(k["exhausted"] for k in kids))
    return {"root": trace["tree"]["root"], "nodes": nodes}


def trace_at(trace: dict, index: int | None, timeline: list[Position] | None = None,
             cache: dict | None = None) -> dict:
    """The trace as it stood at position ``index`` (None or the last: ``trace`` itself).
    ``timeline``: ``positions(trace)``, when the caller has it already; ``cache``: a dict
    kept by a caller that asks for many positions of the same (unchanged) trace, so the
    final tree and the timeline's running counts are built once, not once a position."""
    pos = positions(trace) if timeline is None else timeline
    if not pos:
        return trace
    index = len(pos) - 1 if index is None or index >= len(pos) else max(0, index)
    if index == len(pos) - 1:
        return trace
    p = pos[index]
    out = dict(trace)
    iterations = trace.get("iterations") or []
    if p.kind == "started":
        out.update(tree=None, iterations=[])
        return _empty_after(out)
    if p.kind == "root":
        out.update(tree=_tree_at(trace, 0, "root"), iterations=[])
        return _empty_after(out)
    if p.kind in MCTS_KINDS:
        k = p.iteration
        kept = [it for it in iterations if it["iteration"] < k]
        current = next(it for it in iterations if it["iteration"] == k)
        cut = MCTS_KINDS.index(p.kind)
        kept.append({**current, **{kind: None for kind in MCTS_KINDS[cut + 1:]}})
        out.update(tree=_tree_at(trace, k, p.kind), iterations=kept)
        return _empty_after(out)
    # past the search (or a strategy without one): the tree is final
    cache = {} if cache is None else cache
    if trace.get("tree"):
        if "final_tree" not in cache:
            cache["final_tree"] = {
                "root": trace["tree"]["root"],
                "nodes": [{k: v for k, v in n.items() if k != "candidate_final"}
                          for n in trace["tree"]["nodes"]]}
        out["tree"] = cache["final_tree"]
    search = trace.get("search")
    decode = trace.get("decode") or []
    if cache.get("counts_of") is not pos:
        # per position: decode steps, whether the winner was chosen, compare steps so far
        counts, d, chosen, c = [], 0, False, 0
        for q in pos:
            d += q.kind == "decode"
            chosen = chosen or q.kind == "candidate_chosen"
            c += q.kind == "compare"
            counts.append((d, chosen, c))
        cache["counts_of"], cache["counts"] = pos, counts
        cache["decode_ix"] = [q.index for q in pos if q.kind == "decode"]
    n_decode, chosen, compare_n = cache["counts"][index]
    decode_ix = cache["decode_ix"][:n_decode]
    if search is not None and not chosen:
        search = dict(search, winner=None, why=None, candidate_scores=[])
    comparison = None
    if compare_n:
        comparison = dict(trace["comparison"], steps=trace["comparison"]["steps"][:compare_n],
                          result=None)
    return _empty_after(out, search=search, decode=[decode[i] for i in decode_ix],
                        comparison=comparison)


def index_of_iteration_end(trace: dict, iteration: int) -> int:
    """The position of ``iteration``'s backpropagation (0: the root's position)."""
    for i, p in enumerate(positions(trace)):
        if iteration == 0 and p.kind == "root":
            return i
        if p.kind == "backpropagation" and p.iteration == iteration:
            return i
    return clamp(trace, None)


def nodes_new_at(trace: dict, index: int | None) -> list[int]:
    """The nodes that appeared (expansion) or got their reward (simulation) at this
    position: the ones the tree highlights."""
    pos = positions(trace)
    if not pos:
        return []
    p = pos[clamp(trace, index)]
    if p.kind in ("expansion", "simulation"):
        it = next(it for it in trace["iterations"] if it["iteration"] == p.iteration)
        return list(it["expansion"]["children"])
    if p.kind == "root" and trace.get("tree"):
        return [trace["tree"]["root"]]
    return []
