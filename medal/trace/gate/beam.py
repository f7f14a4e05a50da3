"""The gate's check of a beam search's record (issue 38): ``result.beam_search``.

Order-Token Search and SOAR (:func:`medal.search.ots_search`, :func:`medal.search.soar_search`)
record their whole search as a tree of beam nodes (:meth:`medal.search.BeamOutcome.to_json`):
``{algorithm, settings, nodes, steps, winner, why, stats}``. The trace's decode steps are the
winner's path replayed (:func:`medal.engine._beam_search`). The schema does not describe the
section; this module checks it whole -- types, references, lengths, ranges, the search's own
rules where they are cheap to see, its size against the run's settings and the render
budget -- so that a trace that passes is fit for the beam view (:mod:`medal.views.beam`).
Called by :func:`medal.trace.gate.check` after the bounds.
"""
from __future__ import annotations

import math

from ..limits import MAX_NODES, MAX_RENDER_UNITS, MAX_REWARD, P_TOLERANCE, TEXT_CHARS_PER_UNIT
from .bounds import render_units
from .parse import _fail, _short

BASE = ["result", "beam_search"]
#: each strategy's node modes (the root's is "root") and step flag
MODES = {"soar": ("parallel", "branch"), "ots": ("search", "denoise")}
#: a setting the section repeats from the run's configuration, per strategy
SETTINGS = {"soar": ("soar_beams", "soar_threshold", "soar_parallel"),
            "ots": ("ots_beams", "ots_temperature", "steps", "block_length")}
#: OTS clamps each scored token's probability at 1e-30 before its log
#: (:func:`medal.search.ots_search`): a block score is at least this much per written slot
LOG_FLOOR = math.log(1e-30)
U32 = 2.0 ** -24      # float32's unit roundoff
U64 = 2.0 ** -53      # float64's


def _int(v) -> bool:
    return type(v) is int


def _num(v) -> bool:
    return type(v) in (int, float)


def _need(ok: bool, path: list, message: str) -> None:
    if not ok:
        _fail(path, message)


def _ints(values, path: list, what: str) -> None:
    _need(type(values) is list, path, f"a list of {what}, got {_short(values)}")
    for j, v in enumerate(values):
        _need(_int(v), path + [j], f"{what[:-1] if what.endswith('s') else what} is a whole "
                                   f"number, got {_short(v)}")


def beam_units(beam: dict, L: int) -> int:
    """The beam view's cost in render units, counted as the MCTS tree's nodes are
    (:func:`medal.trace.gate.bounds.render_units`): every node its answer twice (its
    card: the sequence and, for an OTS search node, the proposal), one unit for itself,
    and its texts (:data:`TEXT_CHARS_PER_UNIT` characters a unit)."""
    nodes = beam["nodes"]
    chars = 0
    for n in nodes:
        for text in [n.get("sequence")] + list(n.get("token_texts") or []):
            if type(text) is str:
                chars += len(text)
    return len(nodes) * (2 * L + 1) + chars // TEXT_CHARS_PER_UNIT


def check_beam(data: dict) -> None:
    """``result.beam_search`` of an ``ots`` or ``soar`` run, if the trace has one. Raises
    :class:`medal.errors.TraceError` naming the field and what it must be."""
    result = data["result"]
    if result is None or "beam_search" not in result:
        return
    beam = result["beam_search"]
    run = data["run"]
    cfg = run["config"]
    L = cfg["gen_length"]
    strategy = run["strategy"]
    _need(type(beam) is dict, BASE, "a beam search's record is an object {algorithm, "
                                    "settings, nodes, steps, winner, why, stats}")
    _need(strategy in MODES, ["run", "strategy"],
          f"strategy {_short(strategy)} records no beam search (only ots and soar do): "
          "remove result.beam_search or name the strategy that made it")
    for key in ("algorithm", "settings", "nodes", "steps", "winner", "why"):
        _need(key in beam, BASE + [key], f"missing; a beam search records its {key}")
    _need(beam["algorithm"] == strategy, BASE + ["algorithm"],
          f"{_short(beam['algorithm'])} is not the run's strategy ({strategy})")
    _need(result.get("strategy") == strategy, ["result", "strategy"],
          f"{_short(result.get('strategy'))} is not the run's strategy ({strategy})")
    _need(data["tree"] is None and not data["iterations"] and data["search"] is None,
          ["tree"], "a beam search builds no MCTS tree (tree, search: null; iterations: [])")
    _need(type(beam["why"]) is str, BASE + ["why"], "a text saying why the winner won")

    settings = beam["settings"]
    _need(type(settings) is dict, BASE + ["settings"], "an object of the search's settings")
    for key in SETTINGS[strategy]:
        _need(key in settings and key in cfg and settings[key] == cfg[key] and
              type(settings[key]) is type(cfg.get(key)), BASE + ["settings", key],
              f"{_short(settings.get(key))} is not the run's {key} "
              f"({_short(cfg.get(key))}); the search ran with the run's settings")
    width = cfg["soar_beams"] if strategy == "soar" else cfg["ots_beams"]

    nodes, steps = beam["nodes"], beam["steps"]
    _need(type(nodes) is list and nodes, BASE + ["nodes"], "a list of nodes, the root first")
    _need(type(steps) is list, BASE + ["steps"], "a list of the search's steps")
    # sizes first, from the lengths alone, before any walk: every step writes at least one
    # slot on every open beam (at most L steps); a step's beams are at most the width W,
    # each makes at most W candidates (OTS's root: W x W), so a step makes at most W^2
    _need(len(steps) <= L, BASE + ["steps"],
          f"{len(steps):,} steps; each step writes at least one of the answer's {L} slots "
          "on every beam, so a search takes at most that many")
    most_nodes = min(MAX_NODES, 1 + len(steps) * width * width)
    _need(len(nodes) <= most_nodes, BASE + ["nodes"],
          f"{len(nodes):,} nodes; {len(steps)} steps of at most {width}x{width} candidates "
          f"(the beam width {width} squared) make at most {most_nodes:,}")
    for k, st in enumerate(steps):
        p = BASE + ["steps", k]
        _need(type(st) is dict, p, "a step is an object {step, beams, candidates, kept}")
        for key, most in (("beams", width), ("candidates", width * width), ("kept", width)):
            _need(type(st.get(key)) is list, p + [key], "a list of node ids")
            _need(len(st[key]) <= most, p + [key],
                  f"{len(st[key]):,} entries; the beam width {width} allows at most {most:,}")

    _check_nodes(nodes, strategy, L, cfg, data["run"].get("model"))
    _check_steps(nodes, steps, strategy)
    winner = _check_winner(beam, nodes, steps)
    _check_replay(data, nodes, winner)

    stats = beam.get("stats")
    if stats is not None:
        _need(type(stats) is dict, BASE + ["stats"], "an object of counts")
        for key, count in (("nodes", len(nodes)), ("steps", len(steps))):
            _need(stats.get(key) == count, BASE + ["stats", key],
                  f"{_short(stats.get(key))}; the record holds {count}")

    units = beam_units(beam, L)
    total = render_units(data) + units
    _need(total <= MAX_RENDER_UNITS, BASE + ["nodes"],
          f"drawing this trace would cost {total:,} units (its {len(nodes):,} beam nodes "
          f"{units:,} of them); this server draws at most {MAX_RENDER_UNITS:,}")


def _check_nodes(nodes: list, strategy: str, L: int, cfg: dict, model) -> None:
    mask_id = model.get("mask_id") if isinstance(model, dict) else None
    vocab = model.get("vocab_size") if isinstance(model, dict) else None
    for i, n in enumerate(nodes):
        p = BASE + ["nodes", i]
        _need(type(n) is dict, p, "a node is an object {id, parent, step, mode, slots, ...}")
        for key in ("id", "parent", "step", "mode", "slots", "tokens", "token_texts", "p",
                    "score", "kept", "answer_ids"):
            _need(key in n, p + [key], f"missing; every beam node records its {key}")
        _need(n["id"] == i and _int(n["id"]), p + ["id"],
              f"node ids are 0, 1, 2... in order; expected {i}, got {_short(n['id'])}")
        parent = n["parent"]
        _need(_int(n["step"]), p + ["step"], f"a whole number, got {_short(n['step'])}")
        if i == 0:
            _need(parent is None and n["mode"] == "root" and n["step"] == 0 and not n["slots"],
                  p, "the root (node 0) has no parent, mode \"root\", step 0 and no slots")
        else:
            _need(_int(parent) and 0 <= parent < i, p + ["parent"],
                  f"parent {_short(parent)} is not an earlier node (a node's parent is made "
                  "before it; only the root has none; no cycles)")
            _need(n["mode"] in MODES[strategy], p + ["mode"],
                  f"{_short(n['mode'])}; a {strategy} node is "
                  + " or ".join(f'"{m}"' for m in MODES[strategy]))
            _need(n["step"] > nodes[parent]["step"], p + ["step"],
                  f"step {n['step']} is not after its parent's ({nodes[parent]['step']})")
        _ints(n["slots"], p + ["slots"], "slots")
        _ints(n["tokens"], p + ["tokens"], "tokens")
        for key in ("tokens", "token_texts", "p"):
            _need(type(n[key]) is list and len(n[key]) == len(n["slots"]), p + [key],
                  f"{len(n[key]) if type(n[key]) is list else _short(n[key])} entries; one per "
                  f"slot the node wrote ({len(n['slots'])})")
        for j, s in enumerate(n["slots"]):
            _need(0 <= s < L, p + ["slots", j], f"slot {s} is outside the answer (0..{L - 1})")
        _need(len(set(n["slots"])) == len(n["slots"]), p + ["slots"],
              "a node writes each slot once")
        for j, t in enumerate(n["tokens"]):
            _need(0 <= t and (not _int(vocab) or t < vocab), p + ["tokens", j],
                  f"token {t} is not in the vocabulary"
                  + (f" (0..{vocab - 1})" if _int(vocab) else " (ids are >= 0)"))
        for j, text in enumerate(n["token_texts"]):
            _need(type(text) is str, p + ["token_texts", j], "a token's text")
        for j, x in enumerate(n["p"]):
            _need(_num(x) and -P_TOLERANCE <= x <= 1 + P_TOLERANCE, p + ["p", j],
                  f"{_short(x)} is not a probability (from 0 to 1)")
        _need(_num(n["score"]) and abs(n["score"]) <= MAX_REWARD, p + ["score"],
              f"{_short(n['score'])} is not a score (a number within +-{MAX_REWARD:g})")
        _need(type(n["kept"]) is bool, p + ["kept"], "true or false")
        _need(type(n.get("sequence", "")) is str, p + ["sequence"], "the node's answer as text")
        for key in ("answer_ids", "proposal"):
            if key == "proposal" and n.get(key) is None:
                continue
            _ints(n[key], p + [key], "token ids")
            _need(len(n[key]) == L, p + [key], f"{len(n[key])} entries; gen_length is {L}")
        if i:
            _check_step_rule(n, nodes[n["parent"]], strategy, cfg, p, mask_id)


def _check_step_rule(n: dict, parent: dict, strategy: str, cfg: dict, p: list, mask_id) -> None:
    """What one node's step did, by its search's rule (:mod:`medal.search`): its answer is
    its parent's with its slots written (slots that were masked there); its score."""
    _need(len(n["slots"]) >= 1, p + ["slots"], "a node writes at least one slot")
    written = dict(zip(n["slots"], n["tokens"]))
    for s, (was, now) in enumerate(zip(parent["answer_ids"], n["answer_ids"])):
        if s in written:
            _need(now == written[s] and (not _int(mask_id) or was == mask_id),
                  p + ["answer_ids", s], f"slot {s}: the node writes token {written[s]} into "
                  "a slot masked in its parent's answer")
        else:
            _need(now == was, p + ["answer_ids", s], f"slot {s} differs from the parent's "
                  "answer but is not one of the node's slots")
    block = n.get("block_score")
    if strategy == "soar":
        _need(block is None, p + ["block_score"], "SOAR scores no block (null)")
        most = cfg["soar_parallel"] if n["mode"] == "parallel" else 1
        _need(len(n["slots"]) <= most, p + ["slots"],
              f"{len(n['slots'])} slots; a {n['mode']} step writes at most {most}")
        # score = the parent's + the sum of the written probabilities, summed in float32
        # (k values in [0, 1]: error at most k u32 of the sum) then added in float64
        total = math.fsum(n["p"])
        tol = (len(n["p"]) + 1) * U32 * max(1.0, total) + 2 * U64 * max(1.0, abs(n["score"]))
        _need(abs(n["score"] - (parent["score"] + total)) <= tol, p + ["score"],
              f"{_short(n['score'])} is not its parent's score plus its tokens' probabilities "
              f"({parent['score'] + total:.9g})")
        return
    if n["mode"] == "denoise":
        _need(block is None and n["score"] == parent["score"], p + ["score"],
              "an OTS denoising step keeps its beam's score and scores no block")
        return
    k = len(n["slots"])
    _need(_num(block) and LOG_FLOOR * k - 1e-9 <= block <= k * P_TOLERANCE, p + ["block_score"],
          f"{_short(block)} is not a likelihood estimate of {k} slots (a sum of log p: from "
          f"{LOG_FLOOR * k:.4g} to 0)")
    # score = parent's + block score, one float64 addition
    _need(abs(n["score"] - (parent["score"] + block))
          <= 2 * U64 * max(1.0, abs(n["score"]), abs(parent["score"])), p + ["score"],
          f"{_short(n['score'])} is not its parent's score plus its block score "
          f"({parent['score'] + block:.9g})")
    _need(n.get("proposal") is not None, p + ["proposal"],
          "an OTS search node records the proposal its block score read")


def _check_steps(nodes: list, steps: list, strategy: str) -> None:
    """Steps numbered 1, 2, ...; each step's beams are the previous step's kept nodes
    (the root's at step 1) that still had masks, its new candidates are its beams'
    children made at that step, and every node but the root is made at exactly one step;
    the nodes' kept flags are the steps' kept lists."""
    n = len(nodes)
    made = [0] * n
    kept_any = {0}
    before = [0]
    for k, st in enumerate(steps):
        p = BASE + ["steps", k]
        _need(st.get("step") == k + 1, p + ["step"],
              f"steps are numbered 1, 2, 3... expected {k + 1}, got {_short(st.get('step'))}")
        for key in ("beams", "candidates", "kept"):
            _ints(st[key], p + [key], "node ids")
            for j, nid in enumerate(st[key]):
                _need(0 <= nid < n, p + [key, j], f"node {nid} is not in the beam tree "
                                                  f"({n} nodes)")
        beams = set(st["beams"])
        _need(beams <= set(before), p + ["beams"], "a step's beams are the nodes the "
              f"previous step kept ({_short(before)})")
        for j, c in enumerate(st["candidates"]):
            node = nodes[c]
            if node["step"] == k + 1:
                _need(node["parent"] in beams, p + ["candidates", j],
                      f"node {c} is made at step {k + 1} but its parent "
                      f"{node['parent']} is not one of the step's beams")
                made[c] += 1
            else:
                _need(c in before and c not in beams, p + ["candidates", j],
                      f"node {c} (made at step {node['step']}) is neither made at step "
                      f"{k + 1} nor a finished beam carried from the step before")
        pool = set(st["candidates"]) | (set(before) - beams)
        _need(set(st["kept"]) <= pool and len(set(st["kept"])) == len(st["kept"]),
              p + ["kept"], "the kept nodes are distinct, among the step's candidates and "
              "the finished beams")
        kept_any.update(st["kept"])
        before = st["kept"]
    for i in range(1, n):
        _need(made[i] == 1, BASE + ["nodes", i, "step"],
              f"node {i} is made at step {nodes[i]['step']} but that step lists it as a "
              f"new candidate {made[i]} times (once)")
    for i, node in enumerate(nodes):
        _need(node["kept"] == (i in kept_any), BASE + ["nodes", i, "kept"],
              f"{node['kept']}, but the steps' kept lists say {i in kept_any}")


def _check_winner(beam: dict, nodes: list, steps: list) -> dict:
    """The winner: a node of the final beam, none of which scores higher (both searches
    answer with the best-scoring final beam)."""
    w = beam["winner"]
    final = steps[-1]["kept"] if steps else [0]
    _need(_int(w) and w in final, BASE + ["winner"],
          f"{_short(w)} is not a node of the final beam {_short(final)}")
    best = max(nodes[i]["score"] for i in final)
    _need(nodes[w]["score"] == best, BASE + ["winner"],
          f"node {w} scores {nodes[w]['score']:.9g}; the final beam's best scores "
          f"{best:.9g}")
    return nodes[w]


def _check_replay(data: dict, nodes: list, winner: dict) -> None:
    """The trace's decode steps are the winner's path, one step a node (its slots and
    tokens), and the result's answer is the winner's."""
    path = []
    node = winner
    while node["parent"] is not None:
        path.append(node)
        node = nodes[node["parent"]]
    path.reverse()
    decode = data["decode"]
    _need(len(decode) == len(path), ["decode"],
          f"{len(decode)} decode steps; the winner's path (node {winner['id']}) has "
          f"{len(path)}: a beam search's decode steps replay it")
    for k, (d, n) in enumerate(zip(decode, path)):
        for key in ("slots", "tokens", "token_texts"):
            _need(d[key] == n[key], ["decode", k, key],
                  f"{_short(d[key])} is not node {n['id']}'s {key} {_short(n[key])} (the "
                  f"winner's path, step {k + 1})")
    _need(data["result"]["answer_ids"] == winner["answer_ids"], ["result", "answer_ids"],
          f"not the winner's (node {winner['id']}) answer")
