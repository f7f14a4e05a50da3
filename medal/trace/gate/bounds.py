"""The gate's bounds (issue 21): ranges, counts the run could make, string lengths, render cost."""
from __future__ import annotations

import math

from ..limits import (ANSWER_KEYS, ENTROPY_CEILING, LONG_ANSWER, MAX_ANY_STRING, MAX_DEPTH,
                      MAX_MODEL_NAME, MAX_NAME, MAX_NUMBER, MAX_PROMPT, MAX_RENDER_UNITS,
                      MAX_REWARD, MAX_STRING, MAX_TOKEN_TEXT, NAME_KEYS, P_SUM_SLACK,
                      P_TOLERANCE, PROMPT_KEYS, Q_TOLERANCE, TEXT_CHARS_PER_UNIT, top_entries,
                      top_entries_text)
from ..toprows import TopRows
from .parse import _fail, _first_bad, _short
from .edits import post_steps_allowed   # noqa: I001 (token editing's post steps)

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


def _top_columns(masked: list, top: TopRows, p: list, L: int, most: int, why: str,
                 seen_texts: set) -> None:
    """A node's top tokens kept as columns (:class:`~medal.trace.toprows.TopRows`), held
    to what the loop over rows in :func:`check_bounds` holds a list of rows to, and each
    token's text to what :func:`check_strings` holds it to (the texts are not walked
    there: they are the trace's one table). Whole arrays at a time; the failing row is
    found only on failure."""
    import numpy as np
    start, count = top.starts, top.counts
    slots, _, tokens, probs = top.columns()
    if count.max(initial=0) > most:
        s = int(np.argmax(count))
        _fail(p + [s], f"{int(count[s]):,} top tokens for one slot; {why}")
    bad = (probs < -P_TOLERANCE) | (probs > 1 + P_TOLERANCE)
    if bad.any():
        at = int(np.flatnonzero(bad)[0])
        s = int(slots[np.searchsorted(start[slots], at, side="right") - 1])
        _in(float(probs[at]), -P_TOLERANCE, 1 + P_TOLERANCE, p + [s, at - int(start[s]), "p"],
            "probability")
    has = start >= 0
    mask = np.asarray([bool(m) for m in masked], dtype=bool)
    if L <= LONG_ANSWER and (mask & ~has).any():
        _fail(p + [int(np.flatnonzero(mask & ~has)[0])],
              "a masked slot without top tokens (the run records at least one for every "
              f"masked slot of an answer of up to {LONG_ANSWER} slots)")
    if (has & (count == 0)).any():
        _fail(p + [int(np.flatnonzero(has & (count == 0))[0])],
              "an empty list of top tokens (a slot has none: null)")
    if (has & ~mask).any():
        _fail(p + [int(np.flatnonzero(has & ~mask)[0])], "top tokens for a slot that is not "
                                                         "masked")
    if len(slots):
        sums = np.add.reduceat(probs, start[slots]) if len(probs) else np.zeros(len(slots))
        for k in np.flatnonzero(sums > 1 + P_SUM_SLACK - 1e-9).tolist():  # exactly, near
            s = int(slots[k])
            row = probs[start[s]:start[s] + count[s]].tolist()
            total = math.fsum(row)
            if total > 1 + P_SUM_SLACK:
                _fail(p + [s], f"its {len(row)} top tokens' probabilities sum to {total:.6g}; "
                               f"one softmax's sum to at most 1 (+{P_SUM_SLACK:.2g} for "
                               "float32 rounding)")
    elif mask.any():
        _fail(p, "no masked slot has top tokens (the run records them for the slots its "
                 "action set is drawn from)")
    for t in set(tokens.tolist()) - seen_texts:
        text = top.texts[t]
        if type(text) is not str:
            _fail(["token_texts", str(t)], f"{_short(text)} is not a token's text (a string)")
        if len(text) > MAX_TOKEN_TEXT:
            _fail(["token_texts", str(t)], f"{len(text):,} characters; a token's text has at "
                                           f"most {MAX_TOKEN_TEXT:,}")
        seen_texts.add(t)


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


def check_bounds(data: dict, max_k1: int | None = None) -> None:
    """Numbers in their ranges and counts the run could have produced; called after
    :func:`check_meaning`. ``max_k1``: the operator's K1 limit (the most top tokens a slot
    may carry, whatever the trace's K1)."""
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

    most_top = top_entries(cfg, max_k1)
    why_top = top_entries_text(cfg, max_k1, most_top)
    seen_texts: set = set()      # token texts of rows kept as columns, checked once
    tree = data["tree"]
    for i, node in enumerate(tree["nodes"] if tree else []):
        p = ["tree", "nodes", i]
        _visits(node, p, most_visits)
        columns = type(node["top"]) is TopRows
        if columns:
            _top_columns(node["masked"], node["top"], p + ["top"], L, most_top, why_top,
                         seen_texts)
        else:
            for s, row in enumerate(node["top"]):
                if row is not None and len(row) > most_top:
                    _fail(p + ["top", s], f"{len(row):,} top tokens for one slot; {why_top}")
        if len(node["action_set"]) > max(cfg["k2"], 1):
            _fail(p + ["action_set"], f"{len(node['action_set']):,} actions; the run keeps "
                                      f"at most K2 = {cfg['k2']}")
        for key in ("r_ig", "reward", "ucb"):
            _in(node.get(key), -MAX_REWARD, MAX_REWARD, p + [key], "reward")
        entropies(node["entropy"], p + ["entropy"])
        _in(node["entropy_sum"], 0.0, L * h_tol, p + ["entropy_sum"], "sum of entropies")
        rows = 0
        for s, row in enumerate(() if columns else node["top"]):
            for j, t in enumerate(row or ()):
                _in(t["p"], -P_TOLERANCE, 1 + P_TOLERANCE, p + ["top", s, j, "p"], "probability")
            if row is None:
                if node["masked"][s] and L <= LONG_ANSWER:
                    _fail(p + ["top", s], "a masked slot without top tokens (the run records "
                                          f"at least one for every masked slot of an answer "
                                          f"of up to {LONG_ANSWER} slots)")
                continue
            rows += 1
            if not row:
                _fail(p + ["top", s], "an empty list of top tokens (a slot has none: null)")
            if not node["masked"][s]:
                _fail(p + ["top", s], "top tokens for a slot that is not masked")
            total = math.fsum(t["p"] for t in row)
            if total > 1 + P_SUM_SLACK:
                _fail(p + ["top", s], f"its {len(row)} top tokens' probabilities sum to "
                                      f"{total:.6g}; one softmax's sum to at most 1 (+"
                                      f"{P_SUM_SLACK:.2g} for float32 rounding)")
        if rows == 0 and not columns and any(node["masked"]):
            _fail(p + ["top"], "no masked slot has top tokens (the run records them for the "
                               "slots its action set is drawn from)")
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
    most_steps = max(L, cfg["steps"]) + post_steps_allowed(cfg)   # token editing's post steps
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


def render_units(data: dict) -> int:
    """What a trace costs the views and the export, in answer slots drawn: every
    timeline position draws the answer, the heatmap row and up to 60 tree nodes that its
    event changed (each frame is built from the previous one: no position walks the
    tree, issue 41); every node its card twice (its slots: made, then simulated or
    expanded) and its texts (:data:`TEXT_CHARS_PER_UNIT`). Counted from the lengths
    alone (the frames are linear in positions and nodes, so these sums are what they
    cost; issue 31)."""
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
    return (positions * (L + 60) + nodes * L * 2 + nodes
            + chars // TEXT_CHARS_PER_UNIT)


def check_cost(data: dict, most: int | None = None) -> None:
    """Refuse a trace whose views would cost more than ``most`` render units, before
    any view is drawn."""
    most = MAX_RENDER_UNITS if most is None else most
    units = render_units(data)
    if units > most:
        _fail([], f"drawing this trace would cost {units:,} units (timeline positions x "
                  f"answer slots, and the nodes' texts); this server draws at most {most:,}")
