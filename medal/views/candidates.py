"""The candidate comparison: every candidate side by side, and who would win by what.

MEDAL picks the candidate with the highest cumulative information gain from the root
(paper eq. 9; with ``candidate_choice`` rollout or vote, by each candidate's phase-C
rollout instead -- the panel then shows those figures too and marks the rule used). The panel puts that figure beside the candidate's Q (its mean reward in
the tree) and the verdict of the task's verifier on what the candidate becomes:

* its **rollout** -- the one-shot completion the simulation phase made from it;
* its **final answer** -- the candidate completed by phase C. The winner's is the run's
  answer; the engine completes the losers too, for display only (their steps are not in
  the trace and their cost is not the run's). A trace without them (older files, answers
  over 64 slots) shows the rollout instead, marked as such.

A near tie -- the runner-up within ``NEAR_TIE`` (relative) of the winner's cumulative
IG -- is flagged: the choice then rests on a difference the model's noise can flip.
"""
from __future__ import annotations

from dataclasses import dataclass

from .common import action_label, esc, finite, fmt, nodes_by_id, node_path

#: relative gap in cumulative IG below which the winner and runner-up are a near tie
NEAR_TIE = 0.01


@dataclass
class CandidateRow:
    node: int
    winner: bool
    path: str                    # the search's commitments, "token @slot" root first
    cumulative_ig: float | None
    gap: float | None            # best cumulative IG minus this one
    q: float | None
    n: int | None
    rollout: str | None          # the simulation's one-shot completion
    rollout_verified: bool | None
    final: str | None            # the phase-C answer (or the rollout when none recorded)
    final_verified: bool | None
    final_source: str            # "phase C (the run's answer)", "phase C (for display)", ...
    rollout_ig: float | None = None   # candidate_choice rollout/vote: IG of its phase-C rollout
    votes: int | None = None          # candidate_choice vote: rollouts sharing its answer

    def as_table_row(self) -> dict:
        """Plain values for a table: "—" for unknowns, never None."""
        return {"node": self.node, "winner": "★" if self.winner else "",
                "commitments": self.path,
                "cumulative IG": fmt(self.cumulative_ig),
                "gap to best": ("—" if self.gap is None else "0" if self.gap == 0
                                else f"{self.gap:.2g}"),
                "Q": fmt(self.q),
                "N": fmt(self.n),
                "final answer": self.final if self.final is not None else "—",
                "verdict": verdict_text(self.final_verified),
                "answer from": self.final_source,
                "rollout": self.rollout if self.rollout is not None else "—",
                "rollout verdict": verdict_text(self.rollout_verified),
                **({"rollout IG": fmt(self.rollout_ig)} if self.rollout_ig is not None else {}),
                **({"votes": self.votes} if self.votes is not None else {})}


def verdict_text(verified: bool | None) -> str:
    return "✓ correct" if verified else "✗ wrong" if verified is False else "— (no verifier)"


def candidate_rows(trace: dict) -> list[CandidateRow]:
    """One row per candidate the choice compared, in the search's order; [] before the
    choice."""
    search = trace.get("search") or {}
    scores = search.get("candidate_scores") or []
    if not scores:
        return []
    nodes = nodes_by_id(trace)
    win = search.get("winner")
    best = max((finite(r.get("cumulative_ig")) for r in scores
                if finite(r.get("cumulative_ig")) is not None), default=None)
    rows = []
    for r in scores:
        nid = r["node"]
        node = nodes.get(nid, {})
        path = " → ".join(action_label(nodes[i]) for i in node_path(nodes, nid)[1:]) or "root"
        final = r.get("final") or node.get("candidate_final")
        rollout = r.get("completion") if r.get("completion") is not None else node.get("completion")
        rollout_ok = r.get("completion_verified")
        if rollout_ok is None:
            rollout_ok = r.get("verified", node.get("verified"))
        if final:
            text, ok = final.get("text"), final.get("verified")
            source = ("phase C, for display" if final.get("display_only")
                      else "phase C (the run's answer)" if nid == win else "phase C")
        else:
            text, ok, source = rollout, rollout_ok, "rollout (phase C not recorded)"
        ig = finite(r.get("cumulative_ig"))
        rows.append(CandidateRow(
            node=nid, winner=nid == win, path=path, cumulative_ig=ig,
            gap=(best - ig) if best is not None and ig is not None else None,
            q=finite(r.get("Q", node.get("Q"))), n=r.get("N", node.get("N")),
            rollout=rollout, rollout_verified=rollout_ok, final=text, final_verified=ok,
            final_source=source, rollout_ig=finite(r.get("rollout_ig")), votes=r.get("votes")))
    return rows


def choice_rule(trace: dict) -> str:
    """How the run chose: "search" (the cumulative IG of the search's commitments, the
    default), "rollout" (each candidate's phase-C rollout) or "vote"."""
    return (trace.get("run") or {}).get("config", {}).get("candidate_choice") or "search"


RULE_NAMES = {"search": "cumulative IG", "rollout": "rollout IG", "vote": "votes"}


def winners_by(trace: dict) -> dict[str, str]:
    """Who would win under each rule: the cumulative IG (MEDAL's), Q, and the verifier
    (the candidates whose final answer verifies)."""
    rows = candidate_rows(trace)
    if not rows:
        return {}

    def top(key) -> str:
        known = [r for r in rows if key(r) is not None]
        if not known:
            return "— (not recorded)"
        best = max(key(r) for r in known)
        ids = [r.node for r in known if key(r) == best]
        return ", ".join(f"node {i}" for i in ids) + (" (tie)" if len(ids) > 1 else "")

    used = choice_rule(trace)
    mark = " ← this run's rule"
    out = {"cumulative IG" + (mark if used == "search" else ""): top(lambda r: r.cumulative_ig),
           "Q (mean reward in the tree)": top(lambda r: r.q)}
    if any(r.rollout_ig is not None for r in rows):
        out["rollout IG" + (mark if used == "rollout" else "")] = top(lambda r: r.rollout_ig)
    if any(r.votes is not None for r in rows):
        out["votes" + (mark if used == "vote" else "")] = top(lambda r: r.votes)
    verdicts = [r for r in rows if r.final_verified is not None]
    if not verdicts:
        out["the verifier"] = "— (no verifier for this prompt)"
    else:
        ok = [r.node for r in verdicts if r.final_verified]
        out["the verifier"] = (", ".join(f"node {i}" for i in ok) if ok
                               else "none: no candidate's answer verifies")
    return out


def near_tie(trace: dict, margin: float = NEAR_TIE) -> str | None:
    """A warning when the runner-up's figure is within ``margin`` (relative to the
    winner's) of the winner's; None otherwise. The figure is the one that chose: the
    cumulative IG, or with ``candidate_choice`` rollout/vote the rollout IG."""
    by_rollout = choice_rule(trace) in ("rollout", "vote")
    what = "rollout IG" if by_rollout else "cumulative IG"
    igs = sorted((v for r in candidate_rows(trace)
                  if (v := (r.rollout_ig if by_rollout else r.cumulative_ig)) is not None),
                 reverse=True)
    if len(igs) < 2:
        return None
    first, second = igs[0], igs[1]
    gap = first - second
    rel = gap / abs(first) if first else (0.0 if gap == 0 else float("inf"))
    if rel >= margin:
        return None
    return (f"Near tie: the runner-up's {what} is within {rel:.2%} of the winner's "
            f"({first:.4f} vs {second:.4f}, gap {gap:.2g}; warned below {margin:.0%}). "
            "A difference this small can flip with the model's noise: compare the "
            "candidates' answers, not just the scores.")


def candidate_bars(trace: dict):
    """A plotly figure: cumulative IG and Q per candidate as horizontal bars (the winner
    in orange), one row per candidate, readable with many candidates."""
    import plotly.graph_objects as go

    rows = candidate_rows(trace)
    labels = [f"node {r.node}" + (" ★" if r.winner else "") for r in rows]
    colours = ["#ff7f0e" if r.winner else "#1f77b4" for r in rows]
    data = []
    for k, (name, values) in enumerate((("cumulative IG", [r.cumulative_ig for r in rows]),
                                        ("Q", [r.q for r in rows]))):
        axis = "" if k == 0 else "2"
        data.append(go.Bar(
            x=values, y=labels, orientation="h", marker={"color": colours}, name=name,
            text=[fmt(v) for v in values], textposition="auto", xaxis="x" + axis,
            yaxis="y" + axis, showlegend=False,
            hovertemplate="%{y}: " + name + " = %{x:.5f}<extra></extra>"))
    height = max(200, 90 + 28 * len(rows))
    layout = {
        "xaxis": {"domain": [0, 0.47], "title": {"text": "cumulative IG (chooses the winner)"}},
        "xaxis2": {"domain": [0.53, 1], "anchor": "y2", "title": {"text": "Q (mean reward)"}},
        "yaxis": {"type": "category", "autorange": "reversed", "automargin": True},
        "yaxis2": {"type": "category", "autorange": "reversed", "anchor": "x2",
                   "showticklabels": False},
        "height": height, "margin": {"l": 10, "r": 10, "t": 20, "b": 50},
        "bargap": 0.25,
    }
    return go.Figure(data=data, layout=layout)


def candidate_table_html(trace: dict) -> str:
    """The comparison as an HTML table (for the exported page); every trace string
    escaped."""
    rows = candidate_rows(trace)
    if not rows:
        return '<p class="muted">No candidate choice yet.</p>'
    cols = ("node", "winner", "commitments", "cumulative IG", "gap to best", "Q", "N",
            "final answer", "verdict", "answer from")
    out = ['<table class="cands"><thead><tr>']
    out += [f"<th>{esc(c)}</th>" for c in cols]
    out.append("</tr></thead><tbody>")
    for r in rows:
        row = r.as_table_row()
        out.append('<tr class="win">' if r.winner else "<tr>")
        for c in cols:
            v = row[c]
            text = str(v)
            cls = ' class="mono"' if c in ("final answer", "commitments") else ""
            out.append(f"<td{cls}>{esc(text)}</td>")
        out.append("</tr>")
    out.append("</tbody></table>")
    wins = winners_by(trace)
    out.append('<ul class="winners">' + "".join(
        f"<li>winner by {esc(k)}: <b>{esc(v)}</b></li>" for k, v in wins.items()) + "</ul>")
    tie = near_tie(trace)
    if tie:
        out.append(f'<p class="warn">{esc(tie)}</p>')
    return "".join(out)
