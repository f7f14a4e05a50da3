"""Two nodes of one search tree compared slot by slot (:func:`compare_candidates`), and its
report: the winner against the runner-up in the viewer, ``medal candidates`` on the
command line, ``medal diff``'s cause when two runs chose differently."""
from __future__ import annotations

from .errors import InputError
from .scores import entropy_drop

def compare_candidates(trace: dict, node_a: int, node_b: int) -> dict:
    """Two nodes of one tree (two candidates, as a rule) slot by slot.

    Cumulative information gain from the root, as the candidate choice reads it:
    ``IG(x) = (sum H_root - sum H_x_remaining) / sum H_root`` (sums over the root's
    masked slots; a slot ``x`` has unmasked counts 0). So
    ``IG(a) - IG(b) = sum_slot (h_b(slot) - h_a(slot)) / sum H_root``: each slot's
    ``ig_contribution`` is its term, and the terms add up to the difference exactly.
    ``share`` is a slot's contribution over the difference (None when the two gains are
    equal).

    Returns {"a", "b", "ig": [a, b], "ig_difference", "root_entropy_sum", "slots": [...],
    "differing_slots": [...]}: ``slots`` lists every slot whose token, state or remaining
    entropy differs (largest contribution first): slot, token text and id in each (None:
    still masked), remaining entropy in each (0 when unmasked), the root's entropy there,
    ``token_differs``, ``ig_contribution`` and ``share``."""
    tree = trace.get("tree")
    if not tree:
        raise InputError("this trace has no search tree (a baseline's run): candidates "
                         "come from MEDAL's search")
    nodes = tree["nodes"]
    for nid in (node_a, node_b):
        if isinstance(nid, bool) or not isinstance(nid, int) or not 0 <= nid < len(nodes):
            raise InputError(f"node {nid!r} is not in the tree; give a node id from 0 to "
                             f"{len(nodes) - 1}"
                             + (f" (the candidates: {', '.join(map(str, trace['search']['candidates']))})"
                                if trace.get("search") else ""))
    root, na, nb = nodes[tree["root"]], nodes[node_a], nodes[node_b]
    mask_id = trace["run"]["model"].get("mask_id")

    def remaining(node, slot):
        return (node["entropy"][slot] or 0.0) if node["masked"][slot] else 0.0

    root_slots = [s for s, m in enumerate(root["masked"]) if m]
    total = sum(root["entropy"][s] or 0.0 for s in root_slots)
    ig = [entropy_drop(total, sum(remaining(n, s) for s in root_slots)) for n in (na, nb)]
    diff = ig[0] - ig[1]

    def token(node, slot):
        t = node["answer_ids"][slot]
        if node["masked"][slot] or t == mask_id:
            return None, None
        for src in ([node.get("action")] + [x.get("action") for x in _path(nodes, node)]):
            if src and src["slot"] == slot and src["token"] == t:
                return t, src.get("token_text")
        return t, _text_at(node, slot)

    rows = []
    for s in range(len(root["masked"])):
        ta, xa = token(na, s)
        tb, xb = token(nb, s)
        ha, hb = remaining(na, s), remaining(nb, s)
        contrib = (hb - ha) / total if s in set(root_slots) and total > 0 else 0.0
        if ta == tb and na["masked"][s] == nb["masked"][s] and ha == hb:
            continue
        rows.append({"slot": s, "a": {"token": ta, "text": xa, "entropy": ha},
                     "b": {"token": tb, "text": xb, "entropy": hb},
                     "root_entropy": root["entropy"][s] if root["masked"][s] else None,
                     "token_differs": ta != tb, "ig_contribution": contrib,
                     "share": contrib / diff if diff else None})
    rows.sort(key=lambda r: (-abs(r["ig_contribution"]), r["slot"]))
    return {"a": node_a, "b": node_b, "ig": ig, "ig_difference": diff,
            "root_entropy_sum": total, "slots": rows,
            "differing_slots": sorted(r["slot"] for r in rows if r["token_differs"])}


def _path(nodes: list[dict], node: dict) -> list[dict]:
    """The node's ancestors, nearest first (a parent cycle -- a live trace never checked
    by the gate can hold one -- ends the walk)."""
    out, seen = [], {node["id"]}
    while node["parent"] is not None and node["parent"] not in seen:
        node = nodes[node["parent"]]
        seen.add(node["id"])
        out.append(node)
    return out


def _text_at(node: dict, slot: int) -> str | None:
    """A committed token's text from the node's sequence (character models: one character
    per slot); None where it cannot be told."""
    seq = node.get("sequence") or ""
    return seq[slot] if len(seq) == len(node["masked"]) else None


def format_candidates(report: dict, min_part: float = 5e-4) -> str:
    """:func:`compare_candidates`'s report for people (``medal candidates``)."""
    a, b = report["a"], report["b"]
    lines = [f"node {a}: cumulative IG {report['ig'][0]:.4f}; node {b}: "
             f"{report['ig'][1]:.4f}; difference {report['ig_difference']:+.4f} "
             f"(of root entropy {report['root_entropy_sum']:.3f})",
             f"slots whose token differs: {report['differing_slots'] or 'none'}",
             f"{'slot':>4}  {'node ' + str(a):<12} {'H':>7}  {'node ' + str(b):<12} "
             f"{'H':>7}  {'IG part':>8}  {'share':>6}"]
    shown = [r for r in report["slots"]
             if r["token_differs"] or abs(r["ig_contribution"]) >= min_part]
    for r in shown:
        def tok(side):
            return "(masked)" if side["token"] is None else repr(side["text"] or side["token"])
        share = "-" if r["share"] is None else f"{r['share']:.0%}"
        lines.append(f"{r['slot']:>4}  {tok(r['a']):<12} {r['a']['entropy']:7.4f}  "
                     f"{tok(r['b']):<12} {r['b']['entropy']:7.4f}  "
                     f"{r['ig_contribution']:+8.4f}  {share:>6}"
                     + ("  *" if r["token_differs"] else ""))
    if len(shown) < len(report["slots"]):
        rest = [r for r in report["slots"] if r not in shown]
        lines.append(f"... and {len(rest)} more slots whose entropies differ, together "
                     f"{sum(r['ig_contribution'] for r in rest):+.4f}")
    lines.append("(* the token differs; IG part: the slot's term of the difference, "
                 "(H_b - H_a) / root entropy; share: of the difference)")
    return "\n".join(lines)
