"""The inspector: everything about one node or candidate, recomputable from the trace.

* its sequence (masked slots visible) and its completion;
* its action set with p, H, margin and the score s -- recomputed here from the recorded
  figures, next to the recorded value;
* its statistics (N, W, Q, UCB, r_IG) with the UCB and the reward recomputed;
* for candidates: the figures the candidate choice compared, and why the winner won.
"""
from __future__ import annotations

import math

from ..scores import confidence_score, entropy_drop, masked_entropy_sum, ucb, ucb_bonus
from .common import (action_label, candidate_ids, esc, nodes_by_id, node_path,
                     run_config, winner_id)


def node_label(trace: dict, nid: int) -> str:
    """A label that never changes while the run goes on (a select box keeps its choice
    by label): the node's id, action, depth, and whether it is deep enough (L_c) to be
    a candidate."""
    n = nodes_by_id(trace)[nid]
    return (f"node {nid} · {action_label(n)} · depth {n['depth']}"
            + (" = L_c" if n.get("candidate") else ""))


def node_badges(trace: dict, nid: int) -> str:
    """What the node is now: the winner, a candidate, on the current path..."""
    return "; ".join(node_tags(nodes_by_id(trace)[nid], winner_id(trace),
                               set(candidate_ids(trace))))


def node_tags(n: dict, win, cands) -> list[str]:
    """The node's badges: the winner (``win``) or a candidate (in ``cands``), the root or
    the iteration that made it, exhausted."""
    tags = []
    if n["id"] == win:
        tags.append("★ the winning candidate")
    elif n["id"] in cands:
        tags.append("a candidate")
    if n.get("parent") is None:
        tags.append("the root")
    else:
        tags.append(f"made in iteration {n.get('created_iteration')}")
    if n.get("exhausted"):
        tags.append("exhausted (nothing left to expand below it)")
    return tags


def node_ids(trace: dict) -> list[int]:
    return sorted(nodes_by_id(trace))


def _slot_texts(nodes: dict, nid: int, memo: dict | None = None) -> dict[int, str]:
    """Committed slot -> token text, from the actions along the node's path.

    ``memo`` (node id -> its texts, shared by the calls for one tree): a node's texts are
    its parent's plus its own action, so the cards of a whole tree cost one step a node
    (at most one entry a slot each), not a walk to the root each (O(depth^2) on a chain)."""
    if memo is None:
        out = {}
        for pid in node_path(nodes, nid)[1:]:
            a = nodes[pid]["action"]
            out[a["slot"]] = a.get("token_text", f"#{a['token']}")
        return out
    # walk up only to the nearest ancestor already known, then fill in downwards
    todo, seen, cur = [], set(), nid
    while cur is not None and cur in nodes and cur not in memo and cur not in seen:
        seen.add(cur)
        todo.append(cur)
        cur = nodes[cur].get("parent")
    base = memo.get(cur, {}) if cur is not None else {}
    for pid in reversed(todo):
        a = nodes[pid].get("action") if nodes[pid].get("parent") is not None else None
        if a:
            base = {**base, a["slot"]: a.get("token_text", f"#{a['token']}")}
        memo[pid] = base
    return dict(memo.get(nid, base))


def _completion_text(node: dict, slot: int) -> str:
    ids = node.get("completion_ids")
    if not ids:
        return "?"
    tok = ids[slot]
    for entry in (node.get("top") or [None] * (slot + 1))[slot] or []:
        if entry["token"] == tok:
            return entry["text"]
    return f"#{tok}"


def sequence_html(trace: dict, nid: int) -> str:
    """The node's answer, slot by slot: committed tokens, masks, and (greyed) its
    completion's fill for the masked slots."""
    nodes = nodes_by_id(trace)
    node = nodes[nid]
    texts = {f["slot"]: f["text"] for f in (trace.get("run") or {}).get("fixed_slots") or []}
    texts.update(_slot_texts(nodes, nid))   # (fixed slots: the task's format, e.g. Sudoku's '/')
    own = node["action"]["slot"] if node.get("action") else None

    def cell(content: str, style: str, title: str) -> str:
        return (f'<span title="{esc(title)}" style="display:inline-block;min-width:1.1em;'
                f'margin:1px;padding:2px 3px;border-radius:3px;font-family:monospace;'
                f'white-space:pre;text-align:center;{style}">{esc(content)}</span>')

    seq, comp = [], []
    for i, masked in enumerate(node["masked"]):
        if masked:
            seq.append(cell("_", "background:#eeeeee;color:#999", f"slot {i}: masked"))
            comp.append(cell(_completion_text(node, i), "background:#f7f7f7;color:#888;"
                             "font-style:italic", f"slot {i}: filled by the simulation"))
        else:
            text = texts.get(i, "?")
            style = ("background:#ff7f0e;color:#fff" if i == own else
                     "background:#3b528b;color:#fff")
            seq.append(cell(text, style, f"slot {i}: committed"
                            + (" by this node's action" if i == own else " on the path")))
            comp.append(cell(text, style, f"slot {i}: committed"))
    rows = [("sequence", seq)]
    if node.get("completion_ids"):
        rows.append(("completion", comp))
    return ('<div style="line-height:2.1">' + "".join(
        f'<div><span style="display:inline-block;width:6.5em;font-weight:600">{name}</span>'
        + "".join(cells) + "</div>" for name, cells in rows) + "</div>")


def action_table(trace: dict, nid: int, nodes: dict | None = None,
                 kids: dict | None = None) -> list[dict]:
    """The node's action set (its K2 best actions), each score recomputed from p, H and
    the margin (or, for margin-only scoring, from the margin and p / p_(1)).
    ``nodes`` (:func:`nodes_by_id`) and ``kids`` (parent id -> child ids), when the caller
    has them for many nodes: then a node costs its own children, not the whole tree."""
    nodes = nodes_by_id(trace) if nodes is None else nodes
    node = nodes[nid]
    cfg = run_config(trace)
    gamma = float(cfg.get("gamma", 5.0))
    scoring = cfg.get("scoring", "confidence")
    mine = (kids.get(nid, ()) if kids is not None else
            [c for c in nodes if nodes[c].get("parent") == nid])
    children = {(nodes[c]["action"]["slot"], nodes[c]["action"]["token"]): c
                for c in mine if nodes[c].get("action")}
    rows = []
    for rank, a in enumerate(node.get("action_set") or [], start=1):
        if scoring == "margin":
            tops = node.get("top") or []
            top = tops[a["slot"]] if a["slot"] < len(tops) else None
            p1 = top[0]["p"] if top else a["p"]
            phi_ent, phi_mar = None, None
            s = a["margin"] * a["p"] / max(p1, 1e-8)
        else:
            parts = confidence_score(a["p"], a["entropy"], a["margin"], gamma)
            phi_ent, phi_mar, s = parts["phi_ent"], parts["phi_mar"], parts["s"]
        rows.append({
            "rank": rank, "slot": a["slot"], "token": repr(a.get("token_text", a["token"])),
            "token id": a["token"], "p": a["p"], "H": a["entropy"], "margin": a["margin"],
            "exp(-H)": phi_ent, "σ(γ·margin)": phi_mar, "s (recorded)": a["score"],
            "s (recomputed)": s, "child": children.get((a["slot"], a["token"])),
        })
    return rows


def ucb_breakdown(trace: dict, nid: int) -> dict | None:
    """The node's UCB from one consistent set of figures: its own N and Q and its
    parent's N as they stand at this point of the run, with the bonus and the value
    recomputed. ``state`` says which case applies: "root" (never selected: no UCB),
    "unvisited" (N = 0: the bonus is infinite, so selection tries it before any visited
    sibling) or "visited". ``last selection``: the figures the latest selection that
    considered the node used (a backpropagation may have changed them since), with the
    value it recorded. None for a node not in the trace."""
    nodes = nodes_by_id(trace)
    node = nodes.get(nid)
    if node is None:
        return None
    c = float(run_config(trace).get("c", 0.1))
    return ucb_card(node, nodes.get(node.get("parent")), c, last_selection_of(trace, nid))


def last_selection_of(trace: dict, nid: int) -> tuple | None:
    """(iteration, row) of the latest selection that weighed node ``nid``, or None."""
    for it in reversed(trace.get("iterations") or []):
        for level in it["selection"]["levels"]:
            for row in level:
                if row["node"] == nid:
                    return it["iteration"], row
    return None


def ucb_card(node: dict, parent: dict | None, c: float, last: tuple | None) -> dict:
    """The card of :func:`ucb_breakdown` from figures at hand: the node, its parent (None
    for the root), c, and ``last`` = (iteration, selection row) of the latest selection
    that considered the node, or None."""
    out = {"node": node["id"], "c": c, "N": node["N"], "Q": node["Q"],
           "parent_N": parent["N"] if parent else None, "last selection": None}
    if last is not None:
        it, row = last
        value = ucb(row["Q"], row["parent_N"], row["N"], c)
        out["last selection"] = {"iteration": it, "N": row["N"], "Q": row["Q"],
                                 "parent_N": row["parent_N"], "ucb (recorded)": row["ucb"],
                                 "ucb (recomputed)": value, "chosen": row["chosen"]}
    if parent is None:
        out.update(state="root", bonus=None, ucb=None)
    elif node["N"] == 0:
        out.update(state="unvisited", bonus=math.inf, ucb=math.inf)
    else:
        out.update(state="visited", bonus=ucb_bonus(parent["N"], node["N"], c),
                   ucb=ucb(node["Q"], parent["N"], node["N"], c))
    return out


def ucb_text(card: dict) -> str:
    """The UCB card as one line of Markdown (numbers only: nothing from the trace's text)."""
    if card["state"] == "root":
        return "— the root is never selected (selection starts below it), so it has no UCB."
    formula = (f"Q + c·√(ln N(parent) / N) = {card['Q']:.4f} + {card['c']}·√(ln "
               f"{card['parent_N']} / {card['N']})")
    if card["state"] == "unvisited":
        text = (f"{formula} = ∞ — unvisited (N = 0): the exploration bonus is infinite, so "
                "the next selection at its parent tries it before any visited sibling.")
    else:
        text = f"{formula} = {card['Q']:.4f} + {card['bonus']:.4f} = {card['ucb']:.4f}"
    last = card.get("last selection")
    if last:
        was = "∞" if last["N"] == 0 else f"{last['ucb (recomputed)']:.4f}"
        text += (f"  \nThe latest selection that considered it (iteration "
                 f"{last['iteration']}) saw N = {last['N']}, Q = {last['Q']:.4f}, parent N = "
                 f"{last['parent_N']}: UCB {was}" + (", chosen" if last["chosen"] else "")
                 + ".")
    return text


def committed_slots(trace: dict, nid: int) -> list[int]:
    """The answer slots the node's path commits (root first), for the linked highlights."""
    nodes = nodes_by_id(trace)
    if nid not in nodes:
        return []
    return [nodes[p]["action"]["slot"] for p in node_path(nodes, nid)[1:]
            if nodes[p].get("action")]


def reward_breakdown(trace: dict, nid: int) -> dict | None:
    """r_IG recomputed from the parent's and the node's recorded entropies."""
    nodes = nodes_by_id(trace)
    node = nodes[nid]
    parent = nodes.get(node.get("parent"))
    if parent is None or not node.get("action"):
        return None
    before, after, value = rig_worked(node, parent)
    return {"slot": node["action"]["slot"], "parent entropy sum": before,
            "remaining entropy sum": after, "r_ig (recomputed)": value,
            "r_ig (recorded)": node.get("r_ig")}


def rig_worked(node: dict, parent: dict) -> tuple[float, float, float]:
    """r_IG worked through from the two recorded states (paper eq. info_gain): the
    parent's entropy over its masked slots M, the child's over M less the slot its action
    unmasked, and the drop (:func:`medal.scores.entropy_drop`)."""
    before = masked_entropy_sum(parent["entropy"], parent["masked"])
    after = masked_entropy_sum(node["entropy"], parent["masked"], skip=node["action"]["slot"])
    return before, after, entropy_drop(before, after)


def node_stats(trace: dict, nid: int) -> dict:
    n = nodes_by_id(trace)[nid]
    return {"node": nid, "parent": n.get("parent"), "depth": n["depth"],
            "created in iteration": n.get("created_iteration"), "N": n["N"], "W": n["W"],
            "Q": n["Q"], "UCB": (ucb_breakdown(trace, nid) or {}).get("ucb"),
            "r_IG": n.get("r_ig"), "reward": n.get("reward", n.get("r_ig")),
            "completion verified": n.get("verified"), "entropy sum": n.get("entropy_sum"),
            "candidate": nid in candidate_ids(trace), "winner": nid == winner_id(trace),
            "exhausted": n.get("exhausted")}


def candidate_report(trace: dict) -> dict | None:
    """The candidate choice: each candidate's figures, the winner and why."""
    search = trace.get("search")
    if not search or not search.get("candidate_scores"):
        return None
    win = search.get("winner")
    rows = []
    best = max((r["cumulative_ig"] for r in search["candidate_scores"]), default=0.0)
    for r in search["candidate_scores"]:
        final = r.get("final") or {}
        rows.append({"node": r["node"], "winner": "★" if r["node"] == win else "",
                     "depth": r.get("depth"), "cumulative IG": r["cumulative_ig"],
                     "gap to best": best - r["cumulative_ig"],
                     "root entropy sum": r["root_entropy_sum"],
                     "remaining entropy sum": r["remaining_entropy_sum"],
                     "r_IG": r.get("r_ig"), "Q": r.get("Q"), "N": r.get("N"),
                     "sequence": r.get("sequence"),
                     "final answer": final.get("answer") if final else None,
                     "verified": final.get("verified") if final else None})
    return {"winner": win, "why": search.get("why"), "stop_reason": search.get("stop_reason"),
            "iterations": search.get("iterations"), "rows": rows}
