"""The gate's meaning checks: what the schema cannot say (ids, references, lengths, a fork)."""
from __future__ import annotations

import re

from ...errors import InputError
from ..limits import MAX_NODES
from .parse import _fail, _short, check_plain


def check_config(config: dict, sequence_blocks: bool = False) -> None:
    """The run's configuration: typed and within the engine's own ranges (the checks of
    :class:`medal.config.GenerationConfig`, the same the CLI and the app apply).
    ``sequence_blocks``: a block-diffusion model's run (run.model.block_diffusion), whose
    answer ends a block and may start in the middle of one."""
    from dataclasses import fields

    from ...config import GenerationConfig

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
        # a block-diffusion run's prompt ended where its answer's first block starts
        prompt = (-cfg.gen_length) % cfg.block_length if sequence_blocks else None
        again = cfg.resolved(cfg.gen_length, cfg.lc, None, prompt_length=prompt)
    except InputError as exc:
        _fail(["run", "config"], str(exc))
    if again != cfg:
        _fail(["run", "config"], "the lengths do not agree with each other")


def check_problem(run: dict) -> None:
    """``run.problem`` in the shape of its task (each task declares it:
    :attr:`medal.tasks.Task.problem_shape`), so every view that reads it draws it."""
    from ...tasks import check_recorded_problem
    try:
        check_recorded_problem(run)
    except InputError as exc:
        _fail(["run", "problem"], str(exc))


def _check_node_refs(ids, n_nodes: int, path: list) -> None:
    for i, nid in enumerate(ids):
        if not 0 <= nid < n_nodes:
            _fail(path + [i], f"node {nid} is not in the tree ({n_nodes} nodes)")


def check_meaning(data: dict) -> None:
    """Everything the schema cannot say; called after :func:`check_schema`."""
    run = data["run"]
    model = run.get("model")
    check_config(run["config"], isinstance(model, dict) and model.get("block_diffusion") is True)
    L = run["config"]["gen_length"]
    for key in ("problem", "model", "versions"):
        check_plain(run[key], ["run", key])
    check_problem(run)
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
        scored = [r["node"] for r in search["candidate_scores"]]
        _check_node_refs(scored, n, ["search", "candidate_scores"])
        if len(set(scored)) != len(scored):
            # one record a candidate: the views list them at every position after the
            # choice (a list grown 2,000-fold cost the frames minutes of CPU)
            _fail(["search", "candidate_scores"], "scores a node twice (one record a "
                  "candidate)")
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
                took.update((e["slot"], e["new_token"]) for e in st.get("edits") or [])
                if took.get(f["slot"]) != f["token_id"]:
                    _fail(p + ["forced", j], f"step {fork['step']} did not unmask (or edit) "
                                             f"slot {f['slot']} with token {f['token_id']}")
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
