"""The parts of one frame, from a trace at one position (:func:`frame_parts`): the header,
the tree (:mod:`.tree_frame`), each node's figures and card, the task view, the
candidates, the heatmap grids, the unmasking order, the decode step and the inspector;
and the run's meta (settings, the tree's shape) for the viewer's header and tree bar."""
from __future__ import annotations

import math

from ..trace.toprows import TopRows
from ..tasks import task_of_trace
from .board import task_view_html
from .candidates import candidate_rows, near_tie, winners_by
from .common import action_label, nodes_by_id, run_config, run_info, visible_token
from .inspector import (_completion_text, _slot_texts, action_table, candidate_report,
                        node_tags, rig_worked, ucb_card)
from .order import answer_end, order_summary, slot_tokens
from .phases import MCTS_PHASES, current_phase, progress
from ..timeline import ITERATION_ENDS, label_at, positions, trace_at
from .tree import layout, q_scale
from .tree_frame import (MAX_NODES, legend,
                         reward_outlier, tree_parts)


# ---------------------------------------------------------------------- other parts

def _num(v):
    if isinstance(v, float):
        return round(v, 6) if math.isfinite(v) else None
    return v


def _grid_parts(trace: dict, memo: dict | None = None) -> dict:
    """The heatmaps: per grid its header ("x": slot labels, "end", "rows") and one item
    per row ({"y", "h", "m"}). A row's item is made once per record (``memo``)."""
    from .heatmap import _cut, final_tokens, grid_row, grid_rows
    memo = {} if memo is None else memo
    out = {}
    L = run_config(trace).get("gen_length") or 0
    which = ["medal"] + (["greedy"] if trace.get("comparison") else [])
    for gi, w in enumerate(which):
        title, rows = grid_rows(trace, w)
        final = final_tokens(trace, rows, L)
        out[f"{gi}"] = {"title": title,
                        "x": [f"{s} {_cut(final.get(s, '_'))}" for s in range(L)],
                        "end": answer_end(trace, w), "rows": len(rows)}
        for ri, (entropy, label, slots, texts) in enumerate(rows):
            key = (id(entropy), label, tuple(slots), tuple(texts), L)
            hit = memo.get(key)
            if hit is None or hit[0] is not entropy:
                row, mark = grid_row(entropy, slots, texts, L)
                hit = memo[key] = (entropy, {
                    "y": label, "h": [None if v is None else round(v, 3) for v in row],
                    "m": [_cut(t) for t in mark]})
            out[f"{gi}/{ri}"] = hit[1]
    return out


def _order_part(trace: dict) -> dict:
    """The unmasking order, one item per slot ([text, step, flags]; flags: 1 committed by
    the search, 2 tentative -- on the path of a search still running, 4 after the end of
    the answer, 8 fixed by the task's format, 16 rewritten after it was written -- token
    editing: then a 4th item, the text it had before), so a step changes only its own
    slots."""
    cfg = run_config(trace)
    out = {"0": {"names": [run_info(trace, "strategy", "")]
                 + (["greedy"] if trace.get("comparison") else []),
                 "steps": max(1, cfg.get("steps") or cfg.get("gen_length") or 1)}}
    for tag, which in (("m", "medal"), ("g", "greedy")):
        if which == "greedy" and not trace.get("comparison"):
            continue
        for st in slot_tokens(trace, which):
            flags = (1 if st.by_search else 0) | (2 if st.tentative else 0) | \
                    (4 if st.after_eos else 0) | (8 if st.fixed else 0) | \
                    (16 if st.edits else 0)
            out[f"{tag}/{st.slot}"] = [None if st.text is None else visible_token(st.text),
                                       st.step, flags] + (
                [visible_token(st.was or "")] if st.edits else [])
    return out


#: the keys of a frames memo's own caches of work on the trace's records (kept in the memo,
#: not in this module: a module-level cache kept lists of a closed session's trace alive in
#: the server -- 513,000 numbers of a 1,001-node trace after its Frames were gone)
FILLS, RIG = ("fills",), ("rig",)


def _fills(n: dict, cache: dict | None = None) -> list[str]:
    """The text of each slot's token in the node's simulated completion (the token's
    entry among the slot's top tokens; ``#id`` when it is not among them), worked out
    once per completion (``cache``: a frames memo's)."""
    ids = n["completion_ids"]
    hit = cache.get(id(ids)) if cache is not None else None
    if hit is not None and hit[0] is ids:
        return hit[1]
    top = n.get("top")
    if type(top) is TopRows and len(ids) == len(top) and all(type(t) is int for t in ids):
        out = [f"#{t}" if x is None else x for t, x in zip(ids, top.texts_of(ids))]
    else:
        out = [_completion_text(n, slot) for slot in range(len(ids))]
    if cache is not None:
        cache[id(ids)] = (ids, out)
    return out


def _node_card(trace: dict, nid: int, nodes: dict | None = None, kids: dict | None = None,
               texts_memo: dict | None = None, fills: dict | None = None) -> dict:
    """What never changes about a node once it exists: its sequence and action set.
    (``nodes``, ``kids``, ``texts_memo``: shared by the cards of one position, so a card
    costs its own node, not a walk of the tree.)"""
    nodes = nodes_by_id(trace) if nodes is None else nodes
    rows = action_table(trace, nid, nodes, kids)
    n = nodes[nid]
    texts = {f["slot"]: f["text"] for f in run_info(trace, "fixed_slots") or []}
    texts.update(_slot_texts(nodes, nid, texts_memo))
    own = n["action"]["slot"] if n.get("action") else None
    # per slot: its text ("texts") and how it stands ("how", one digit a slot): 2 this
    # node's action, 1 committed on its path, 0 masked (text: the simulation's fill, or ""
    # before it)
    fills = _fills(n, fills) if n.get("completion_ids") else None
    cell_texts, how = [], []
    for i, masked in enumerate(n.get("masked") or []):
        if masked:
            cell_texts.append(fills[i] if fills is not None else "")
            how.append("0")
        else:
            cell_texts.append(visible_token(texts.get(i, "?")))
            how.append("2" if i == own else "1")
    return {"id": nid, "label": f"node {nid} · {action_label(n)} · depth {n['depth']}",
            "parent": n.get("parent"), "depth": n["depth"], "made": n.get("created_iteration"),
            "texts": cell_texts, "how": "".join(how), "sequence": n.get("sequence", ""),
            "actions": [{k: _num(r[k]) for k in ("rank", "slot", "token", "p", "H", "margin",
                                                 "s (recomputed)", "child")} for r in rows]}


def last_selections(t: dict) -> dict[int, tuple]:
    """Per node: (iteration, row) of the latest selection that weighed it."""
    last: dict[int, tuple] = {}
    for it in t.get("iterations") or []:
        for level in it["selection"]["levels"]:
            for row in level:
                last[row["node"]] = (it["iteration"], row)
    return last


def stats_parts(t: dict, info: dict, memo: dict) -> dict:
    """Every node's figures at this position (``memo``: shared across the positions of
    one run, keyed by what the figures depend on)."""
    nodes = nodes_by_id(t)
    c = float(run_config(t).get("c", 0.1))
    last = last_selections(t)
    win, cands = info.get("winner"), set(info.get("candidates") or ())
    return {str(nid): node_stats_item(t, n, nodes, c, last.get(nid), win, cands, memo)
            for nid, n in nodes.items()}


def node_stats_item(t: dict, n: dict, nodes: dict, c: float, lr, win, cands,
                    memo: dict) -> dict:
    """One node's figures (memoised on what they depend on)."""
    nid = n["id"]
    parent = nodes.get(n.get("parent"))
    key = (nid, n["N"], n["W"], n["Q"], parent["N"] if parent else None, n.get("r_ig"),
           n.get("reward"), n.get("verified"),
           nid == win, nid in cands, n.get("exhausted"), n.get("created_iteration"),
           None if lr is None else (lr[0], lr[1]["N"], lr[1]["Q"], lr[1]["parent_N"],
                                    lr[1]["chosen"]))
    hit = memo.get(key)
    if hit is None:
        hit = memo[key] = _node_stats(t, n, parent, nodes, c, lr, win, cands,
                                      memo.setdefault(RIG, {}))
    return hit


def _rig_worked(n: dict, parent: dict, cache: dict) -> tuple[float, float, float]:
    """:func:`.inspector.rig_worked`, fixed by the two nodes' records: worked out once per
    pair of entropy lists (``cache``: a frames memo's)."""
    key = (id(parent["entropy"]), id(parent["masked"]), id(n["entropy"]), n["action"]["slot"])
    hit = cache.get(key)
    if hit is not None and hit[0] is parent["entropy"] and hit[1] is n["entropy"]:
        return hit[2]
    r = rig_worked(n, parent)
    cache[key] = (parent["entropy"], n["entropy"], r)
    return r


def _node_stats(t, n, parent, nodes, c, last, win, cands, rig: dict) -> dict:
    nid = n["id"]
    beyond = run_config(t).get("reward", "ig") != "ig" and n.get("reward") is not None
    card = ucb_card(n, parent, c, last)
    r = None
    if n.get("r_ig") is not None and parent is not None and n.get("action"):
        r = _rig_worked(n, parent, rig)
    flag = reward_outlier(t, nid, nodes)
    badges = node_tags(n, win, cands)
    ls = card.get("last selection")
    return {"N": n["N"], "W": _num(n["W"]), "Q": _num(n["Q"]),
            "UCB": _num(card["ucb"]) if card.get("ucb") is not None else None,
            "r_IG": _num(n.get("r_ig")), "depth": n["depth"], "badges": "; ".join(badges),
            # the reward when it is not r_IG alone (the verifier reward, beyond the paper)
            "reward": _num(n.get("reward")) if beyond else None,
            "verified": n.get("verified") if beyond else None,
            # the UCB and r_IG worked through (the viewer writes the sentences)
            "pN": card["parent_N"], "c": c,
            "bonus": _num(card["bonus"]) if card.get("bonus") is not None else None,
            # the latest selection that weighed it: [iteration, N, Q, parent N, chosen,
            # its UCB then (scores.ucb; None: infinite)]
            "last": None if ls is None else [ls["iteration"], ls["N"], _num(ls["Q"]),
                                             ls["parent_N"], ls["chosen"],
                                             _num(ls["ucb (recomputed)"])],
            "rig": None if r is None else [_num(r[0]), _num(r[1]), _num(r[2])],
            "outlier": flag["text"] if flag else ""}


def _candidates_part(trace: dict) -> dict | None:
    rows = candidate_rows(trace)
    if not rows:
        return None
    out = []
    for r in rows:
        row = r.as_table_row()
        out.append({k: (_num(v) if not isinstance(v, str) else v) for k, v in row.items()}
                   | {"_winner": bool(r.winner), "_ig": _num(r.cumulative_ig), "_q": _num(r.q)})
    report = candidate_report(trace) or {}
    return {"rows": out, "winners": winners_by(trace), "tie": near_tie(trace) or "",
            "why": report.get("why") or "", "slots": _winner_against_runner_up(rows, trace)}


def _winner_against_runner_up(rows, trace: dict, most: int = 40) -> dict | None:
    """The winner and the runner-up (the other candidate with the highest cumulative IG)
    slot by slot (:func:`medal.candidates.compare_candidates`): the slots whose token differs
    or whose remaining entropy moves the gain, each slot's part of the IG difference."""
    from ..candidates import compare_candidates

    win = next((r for r in rows if r.winner), None)
    others = [r for r in rows if not r.winner and r.cumulative_ig is not None]
    if win is None or not others:
        return None
    runner = max(others, key=lambda r: r.cumulative_ig)
    rep = compare_candidates(trace, win.node, runner.node)
    shown = [r for r in rep["slots"] if r["token_differs"] or abs(r["ig_contribution"]) >= 5e-4]

    def tok(side):
        return "[mask]" if side["token"] is None else (
            side["text"] if side["text"] is not None else f"#{side['token']}")

    table = [{"slot": r["slot"], f"node {win.node} (winner)": tok(r["a"]),
              "H winner": _num(r["a"]["entropy"]), f"node {runner.node}": tok(r["b"]),
              "H runner-up": _num(r["b"]["entropy"]), "IG part": _num(r["ig_contribution"]),
              "share": _num(r["share"])} for r in shown[:most]]
    return {"a": win.node, "b": runner.node, "ig": [_num(v) for v in rep["ig"]],
            "difference": _num(rep["ig_difference"]), "differing": rep["differing_slots"],
            "rows": table, "more": max(0, len(shown) - most)}


def _summary(trace: dict):
    try:
        rows = order_summary(trace)
    except Exception:  # a trace too short for a summary
        return None
    return [{k: _num(v) if not isinstance(v, str) else v for k, v in r.items()} for r in rows]


def _focus_node(t: dict, path: list[int]) -> int | None:
    if path:
        return path[-1]
    nodes = nodes_by_id(t)
    return (t.get("tree") or {}).get("root") if nodes else None


def frame_parts(trace: dict, index: int, *, max_nodes: int = MAX_NODES,
                memo: dict | None = None, timeline: list | None = None):
    """Every part of the frame at position ``index`` (full, before sharing), and the ids
    of the tree's nodes there. ``timeline``: ``positions(trace)`` when the caller has it
    (computing it per frame made a trace's frames quadratic in its positions)."""
    timeline = positions(trace) if timeline is None else timeline
    pos = timeline[index]
    memo = {} if memo is None else memo
    t = trace_at(trace, index, timeline, cache=memo.setdefault("trace_at", {}))
    if "q_scale" not in memo:
        memo["q_scale"] = q_scale(trace)
    scale = memo["q_scale"] if (t.get("iterations") and (
        t["iterations"][0].get("simulation"))) else None
    # past the search the tree is final (trace_at's cached tree): its nodes, tree parts,
    # figures and cards are the same at every such position with the same winner, so
    # they are built once, not once a position (a decode step costs its own slots)
    tree_obj = t.get("tree")
    final = tree_obj is not None and tree_obj is memo["trace_at"].get("final_tree")
    same = memo.get("final_parts") if final else None
    post_key = (id(tree_obj), (t.get("search") or {}).get("winner"),
                len((t.get("search") or {}).get("candidates") or ()), scale)
    if same is not None and same[0] == post_key:
        nodes, tn, te, info, stats, cards = same[1:]
    else:
        nodes = nodes_by_id(t)
        # N's size scale: the next power of two above the root's N at this position (a
        # live run and its replay agree, and it changes a handful of times in a run)
        root = nodes.get((tree_obj or {}).get("root"))
        n_scale = 2 ** math.ceil(math.log2(max(8, root["N"]))) if root else None
        if "layout" not in memo:
            memo["layout"] = layout(trace)
            memo["kids"] = _child_rows(trace, memo["layout"])
        tn, te, info = tree_parts(t, pos.kind, max_nodes, scale, n_scale=n_scale,
                                  xy=memo["layout"], memo=memo.setdefault("tree", {}))
        if pos.kind == "selection" and info.get("path"):
            # where the expansion will draw the leaf's children (the finished run's
            # layout): the view makes room for them now rather than moving at the next step
            info["room"] = memo["kids"].get(info["path"][-1])
        stats = stats_parts(t, info, memo.setdefault("stats", {}))
        cards = card_parts(t, memo.setdefault("cards", {}))
        if final and pos.kind not in ("selection", "expansion", "simulation"):
            memo["final_parts"] = (post_key, nodes, tn, te, info, stats, cards)
    head = head_part(trace, t, pos, info, nodes)
    parts = {"h": {"0": head}, "n": tn, "e": te, "s": stats, "a": cards,
             **other_parts(trace, t, pos, scale, info, memo)}
    return parts, list(nodes)


def head_part(trace: dict, t: dict, pos, info: dict, nodes) -> dict:
    """The header: the position, its phase explained, the progress, the tree's info."""
    ph = current_phase(t)
    frac, caption = progress(t)
    focus = _focus_node(t, info.get("path") or [])
    result = t.get("result") or {}
    answer = None
    if result:
        answer = {"text": str(result.get("answer")), "verified": result.get("verified")}
    return {"kind": pos.kind, "label": label_at(trace, pos), "phase": ph.key, "title": ph.title,
            "iteration": ph.iteration, "explanation": explanation(t, ph.key),
            "detail": ph.detail, "progress": 1.0 if pos.kind == "finished" else round(frac, 4),
            "caption": caption, "iteration_end": pos.kind in ITERATION_ENDS,
            "mcts": ph.key in MCTS_PHASES,
            "focus": focus, "partial": nodes[focus]["sequence"] if focus in nodes else None,
            "decoding": _decoding(trace, pos), "answer": answer, "tree": info}


def _decoding(trace: dict, pos) -> dict | None:
    """At a decode step, the answer that step wrote: which decode it belongs to (the
    run's answer, another candidate's completion, the greedy comparison) and its text.
    (The Tree tab's partial answer is the search's: at a phase-C step it is not the
    answer being decoded.)"""
    if pos.kind not in ("decode", "compare"):
        return None
    try:
        rec = (trace["decode"] if pos.kind == "decode" else trace["comparison"]["steps"])[pos.index]
    except (KeyError, IndexError, TypeError):
        return None
    return {"label": label_at(trace, pos), "text": str(rec.get("answer") or "")}


def other_parts(trace: dict, t: dict, pos, scale, info: dict, memo: dict) -> dict:
    """The parts beside the tree: heatmap grids, the unmasking order, and the views
    (task view, candidates, legend, summary, the decode step)."""
    return {"g": _grid_parts(t, memo.setdefault("grid", {})), "o": _order_part(t),
            "v": {"task": task_view_html(t) or "", "cands": _candidates_part(t),
                  "legend": legend(scale, info),
                  "summary": _summary(t) if pos.kind == "finished" else None,
                  "step": _step_part(trace, t, pos)}}


def _step_part(trace: dict, t: dict, pos) -> dict | None:
    """A decoding step as the field's demos show one (issue 28 #6): which slots it
    unmasked, and every eligible slot's p, margin and score -- for MEDAL's phase C, a
    baseline's decoding and the greedy comparison. ``row``: the order strip's row that
    holds this decode's answer ("m" the run's, "g" greedy's; None for another candidate's
    completion, which no strip holds)."""
    if pos.kind not in ("decode", "compare"):
        return None
    from .common import main_phase
    try:
        rec = (trace["decode"] if pos.kind == "decode" else trace["comparison"]["steps"])[pos.index]
    except (KeyError, IndexError, TypeError):
        return None
    el = rec.get("eligible") or {}
    rows = []
    for k, slot in enumerate(el.get("slots") or []):
        def at(name, k=k):
            v = (el.get(name) or [None] * (k + 1))
            return _num(v[k]) if k < len(v) else None
        rows.append({"slot": slot, "p": at("p"), "margin": at("margin"), "score": at("score"),
                     "now": slot in rec["slots"]})
    row = "g" if pos.kind == "compare" else ("m" if rec["phase"] == main_phase(t) else None)
    return {"label": label_at(trace, pos), "step": rec["step"], "row": row,
            "slots": list(rec["slots"]),
            "texts": [visible_token(x) for x in rec.get("token_texts") or []],
            "eligible": rows,
            # the written tokens this step rewrote (token editing): slot, old and new
            # text, the new token's confidence and the editing threshold it passed
            "edits": [[e["slot"], visible_token(e.get("old_text") or ""),
                       visible_token(e.get("new_text") or ""), _num(e.get("confidence")),
                       _num(e.get("threshold"))] for e in rec.get("edits") or ()]}


def _child_rows(trace: dict, xy: dict) -> dict:
    """Per node with children: [x of the first, x of the last, y] of its children."""
    out: dict = {}
    for n in (trace.get("tree") or {}).get("nodes") or []:
        p, at = n.get("parent"), xy.get(n["id"])
        if p is None or at is None:
            continue
        row = out.get(p)
        out[p] = [at[0], at[0], at[1]] if row is None else \
            [min(row[0], at[0]), max(row[1], at[0]), at[1]]
    return out


def explanation(t: dict, key: str) -> str:
    """The phase's explanation, with this run's L_c and C where the text names them."""
    from .phases import PHASES
    text = PHASES[key][1]
    cfg = run_config(t)
    if key == "backpropagation":
        text = (text.replace("L_c committed", f"L_c = {cfg.get('lc')} committed")
                .replace("top C by", f"top C = {cfg.get('candidates')} by"))
    return text


def card_parts(t: dict, memo: dict) -> dict:
    """Each node's card as it stands at this position: it changes once, when the node is
    expanded (its action table then names the child each action made)."""
    nodes = nodes_by_id(t)
    kids: dict[int, list[int]] = {}
    for n in nodes.values():
        if n.get("parent") is not None:
            kids.setdefault(n["parent"], []).append(n["id"])
    texts: dict = {}   # per position: the tree's actions are fixed, but not its nodes
    return {str(nid): card_for(t, nid, nodes, kids, texts, memo) for nid in nodes}


def card_key(nid: int, nodes: dict, kids: dict) -> tuple:
    """What a node's card depends on besides the node's fixed record: whether it has
    been expanded (its actions then name their children) and whether its simulation has
    filled its masked slots."""
    return (nid, bool(kids.get(nid)), bool(nodes[nid].get("completion_ids")))


def card_for(t: dict, nid: int, nodes: dict, kids: dict, texts: dict, memo: dict) -> dict:
    """A node's card (``memo``: the run's cards by :func:`card_key`)."""
    key = card_key(nid, nodes, kids)
    card = memo.get(key)
    if card is None:
        card = memo[key] = _node_card(t, nid, nodes, kids, texts, memo.setdefault(FILLS, {}))
    return card


def meta(trace: dict, shape: dict | None = None) -> dict:
    """The run's settings and its tree's shape (``shape``: :func:`_tree_shape`'s figures
    when the caller keeps them up to date, as the frame builder does)."""
    cfg = run_config(trace)
    model = run_info(trace, "model") or {}
    return {"strategy": run_info(trace, "strategy", ""), "prompt": run_info(trace, "prompt", ""),
            "model": model.get("name", ""), "task": _task_name(trace),
            # Fast-dLLM's KV cache ("prefix"/"dual"; None: off): the header says the run's
            # logits were APPROXIMATE
            "kv_cache": model.get("kv_cache"),
            "config": {k: v for k, v in cfg.items() if not isinstance(v, (dict, list))},
            # the search's settings, where the run searched with MCTS (a greedy, OTS or
            # SOAR run's header does not name an L_c it never used)
            **({"lc": cfg.get("lc"), "C": cfg.get("candidates"), "c": cfg.get("c")}
               if trace.get("tree") else {"lc": None, "C": None, "c": None}),
            "edits": sum(len(d.get("edits") or ()) for d in trace.get("decode") or ()),
            "tree": shape if shape is not None else _tree_shape(trace)}


def _tree_shape(trace: dict) -> dict | None:
    """The run's tree in figures (:func:`medal.views.tree.tree_stats`, from its networkx
    graph), for the tree bar; None without a tree."""
    if not (trace.get("tree") or {}).get("nodes"):
        return None
    from .tree import tree_stats
    st = tree_stats(trace)
    return {k: st[k] for k in ("nodes", "depth", "expanded", "leaves", "unvisited")} | {
        "branching": round(st["branching"], 2),
        "visits": [r["visits"] for r in st["per_level"]],
        "per_level": [r["nodes"] for r in st["per_level"]]}


def _task_name(trace: dict) -> str:
    try:
        return task_of_trace(trace) or ""
    except Exception:
        return ""
