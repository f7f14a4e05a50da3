"""The paper's formulas (MEDAL, section 3) and the same formulas with this run's numbers.

Each ``*_example`` function reads a trace and returns the figures and a LaTeX line of
arithmetic, or None when the run has not reached that point yet.
"""
from __future__ import annotations

import math

from .common import nodes_by_id, run_config, winner_id
from ..scores import confidence_score, ucb, ucb_bonus
from .inspector import reward_breakdown

FORMULAS = {
    "entropy": r"H^i = -\sum_{v \in \mathcal{V}} p^i(v)\,\log\big(p^i(v) + \varepsilon\big),"
               r"\qquad \phi_{\mathrm{ent}}^i = e^{-H^i}",
    "margin": r"\Delta^i = p^i_{(1)} - p^i_{(2)}, \qquad \phi_{\mathrm{mar}}^i = \sigma(\gamma\,\Delta^i)",
    "score": r"s^i_v = p^i(v)\cdot \phi_{\mathrm{ent}}^i \cdot \phi_{\mathrm{mar}}^i"
             r" = p^i(v)\, e^{-H^i}\, \sigma(\gamma\,\Delta^i)",
    "action_set": r"\mathcal{A}_t = \bigcup_{i \in \mathcal{M}_t} \{a^i_v : v \in "
                  r"\mathrm{Top}\text{-}K_1(s^i_v)\}, \qquad \mathcal{A}'_t = "
                  r"\arg\mathrm{Top}\text{-}K_2\{s^i_v : a^i_v \in \mathcal{A}_t\}",
    "ucb": r"\mathrm{UCB}(x, a) = Q(x, a) + c\,\sqrt{\frac{\ln N(x)}{N(x, a)}}",
    "info_gain": r"r_{\mathrm{IG}}(a^i_v) = \frac{\sum_{j \in \mathcal{M}_t} H^{\mathrm{before}}(j)"
                 r" - \sum_{j \in \mathcal{M}_t \setminus \{i\}} H^{\mathrm{after}}(j)}"
                 r"{\sum_{j \in \mathcal{M}_t} H^{\mathrm{before}}(j)}",
    "backprop": r"N \leftarrow N + 1,\quad W \leftarrow W + r_{\mathrm{IG}},\quad Q = W / N"
                r"\quad\text{for every node on the path}",
    "candidate": r"x^\star = \arg\max_{x \in \text{candidates}} \frac{\sum_{j \in \mathcal{M}_0}"
                 r" H_{\mathrm{root}}(j) - \sum_{j \in \mathcal{M}_x} H_x(j)}"
                 r"{\sum_{j \in \mathcal{M}_0} H_{\mathrm{root}}(j)}",
    "phase_c": r"\text{each step: unmask } \arg\max_{i \in \mathcal{M}_t} s^i_{\hat v^i},"
               r"\quad \hat v^i = \arg\max_v p^i(v)\qquad"
               r"(\text{or sample } i \propto \mathrm{softmax}(s / T))",
}


def _n(x: float, digits: int = 4) -> str:
    if isinstance(x, float) and math.isinf(x):
        return r"\infty"
    return f"{x:.{digits}f}"


def score_example(trace: dict | None) -> dict | None:
    """The root's best action: s recomputed from its recorded p, H, margin and gamma."""
    if not trace or not trace.get("tree"):
        return None
    root = nodes_by_id(trace)[trace["tree"]["root"]]
    if not root.get("action_set"):
        return None
    a = root["action_set"][0]
    gamma = float(run_config(trace).get("gamma", 5.0))
    parts = confidence_score(a["p"], a["entropy"], a["margin"], gamma)
    latex = (rf"s = {_n(a['p'])} \cdot e^{{-{_n(a['entropy'])}}} \cdot "
             rf"\sigma({_n(gamma, 2)} \cdot {_n(a['margin'])}) = {_n(a['p'])} \cdot "
             rf"{_n(parts['phi_ent'])} \cdot {_n(parts['phi_mar'])} = {parts['s']:.6g}")
    return {"slot": a["slot"], "token": a.get("token_text", str(a["token"])), "p": a["p"],
            "H": a["entropy"], "margin": a["margin"], "gamma": gamma, **parts,
            "recorded": a["score"], "scoring": run_config(trace).get("scoring",
                                                                          "confidence"),
            "latex": latex}


def action_set_example(trace: dict | None) -> dict | None:
    if not trace or not trace.get("tree"):
        return None
    root = nodes_by_id(trace)[trace["tree"]["root"]]
    cfg = run_config(trace)
    masked = sum(1 for m in root["masked"] if m)
    return {"k1": cfg.get("k1"), "k2": cfg.get("k2"), "masked": masked,
            "pool": masked * cfg.get("k1", 0),
            "actions": [(a["slot"], a.get("token_text", str(a["token"])), a["score"])
                        for a in root.get("action_set") or []]}


def ucb_example(trace: dict | None) -> dict | None:
    """The choice made at the root by the latest selection that had a choice."""
    if not trace:
        return None
    c = float(run_config(trace).get("c", 0.1))
    for it in reversed(trace.get("iterations") or []):
        levels = it["selection"]["levels"]
        if not levels:
            continue
        rows = levels[0]
        chosen = next(r for r in rows if r["chosen"])
        if chosen["N"] == 0:
            latex = (r"\mathrm{UCB} = \infty \quad (N(x, a) = 0"
                     r"\text{: unvisited children go first})")
            value = math.inf
        else:
            bonus = ucb_bonus(chosen["parent_N"], chosen["N"], c)
            value = ucb(chosen["Q"], chosen["parent_N"], chosen["N"], c)
            latex = (rf"\mathrm{{UCB}} = {_n(chosen['Q'])} + {_n(c, 3)}\sqrt{{\frac{{\ln "
                     rf"{chosen['parent_N']}}}{{{chosen['N']}}}}} = {_n(chosen['Q'])} + "
                     rf"{_n(bonus)} = {_n(value)}")
        return {"iteration": it["iteration"], "node": chosen["node"], "Q": chosen["Q"],
                "N": chosen["N"], "parent_N": chosen["parent_N"], "c": c, "value": value,
                "recorded": chosen["ucb"], "siblings": rows, "latex": latex}
    return None


def information_gain_example(trace: dict | None) -> dict | None:
    """The reward of the best child of the latest simulation."""
    if not trace:
        return None
    for it in reversed(trace.get("iterations") or []):
        sim = it.get("simulation")
        if not sim or not sim["children"]:
            continue
        pairs = [(r if r is not None else -1.0, c) for r, c in zip(sim["rewards"], sim["children"])]
        _, child = max(pairs)
        parts = reward_breakdown(trace, child)
        if parts is None:
            continue
        before, after = parts["parent entropy sum"], parts["remaining entropy sum"]
        latex = (rf"r_{{\mathrm{{IG}}}} = \frac{{{_n(before, 3)} - {_n(after, 3)}}}"
                 rf"{{{_n(before, 3)}}} = {_n(parts['r_ig (recomputed)'])}")
        return {"iteration": it["iteration"], "node": child, **parts, "latex": latex}
    return None


def candidate_example(trace: dict | None) -> dict | None:
    if not trace or not trace.get("search") or not trace["search"].get("candidate_scores"):
        return None
    rows = trace["search"]["candidate_scores"]
    win = winner_id(trace)
    best = next((r for r in rows if r["node"] == win), rows[0])
    latex = (rf"\frac{{{_n(best['root_entropy_sum'], 3)} - {_n(best['remaining_entropy_sum'], 3)}}}"
             rf"{{{_n(best['root_entropy_sum'], 3)}}} = {_n(best['cumulative_ig'])}")
    return {"winner": win, "rows": rows, "why": trace["search"].get("why"), "latex": latex}


def phase_c_example(trace: dict | None) -> dict | None:
    """The first phase-C step: which slots it unmasked and with what score."""
    if not trace:
        return None
    steps = [s for s in trace.get("decode") or [] if s["phase"] == "phase_c"]
    if not steps:
        return None
    step = steps[0]
    cfg = run_config(trace)
    masked = sum(1 for h in step["entropy"] if h is not None)
    out = {"step": step["step"], "slots": step["slots"], "tokens": step["token_texts"],
           "scores": step["scores"], "masked_before": masked, "steps": len(steps),
           "slot_temperature": cfg.get("slot_temperature", 0.0), "latex": None}
    # Phase C starts from the winner's state, whose top tokens and entropies the trace
    # holds: the first unmasked slot's score can be recomputed from them.
    winner = nodes_by_id(trace).get(winner_id(trace))
    slot = step["slots"][0] if step["slots"] else None
    top = (winner.get("top") or [])[slot] if winner and slot is not None else None
    if (top and len(top) >= 2 and cfg.get("scoring", "confidence") == "confidence"
            and not cfg.get("temperature")):
        p1, p2, H = top[0]["p"], top[1]["p"], winner["entropy"][slot]
        gamma = float(cfg.get("gamma", 5.0))
        parts = confidence_score(p1, H, p1 - p2, gamma)
        out.update(p=p1, H=H, margin=p1 - p2, gamma=gamma, recomputed=parts["s"],
                   latex=(rf"s = {_n(p1)} \cdot e^{{-{_n(H)}}} \cdot \sigma({_n(gamma, 2)} \cdot "
                          rf"({_n(p1)} - {_n(p2)})) = {parts['s']:.6g}"))
    return out


__all__ = ["FORMULAS", "score_example", "action_set_example", "ucb_example",
           "information_gain_example", "candidate_example", "phase_c_example"]
