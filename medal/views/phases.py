"""Where a run stands, read from its trace: the phase just done, named and explained,
and how far along the run is (for the progress bar).

Derived from the trace rather than from the last event, so a live run and an uploaded
trace (or a replayed point in one) say the same thing.
"""
from __future__ import annotations

from dataclasses import dataclass

from .common import candidate_ids, clip, distinct_digits, esc, nodes_by_id

MCTS_PHASES = ("selection", "expansion", "simulation", "backpropagation")

PHASES: dict[str, tuple[str, str]] = {
    "not_started": (
        "Not started",
        "Choose a model, a prompt and the parameters, then step through the run."),
    "started": (
        "Start",
        "The prompt (with the task-decomposition guidance when it is on) is encoded and "
        "every answer slot is masked."),
    "root": (
        "Root evaluation",
        "One forward pass on the all-masked answer gives every slot's distribution, its "
        "entropy H and the confidence-adjusted scores s; the best K2 (slot, token) actions "
        "become the root's action set."),
    "selection": (
        "Selection",
        "From the root the search walks down to a leaf, at each level taking the child with "
        "the highest UCB = Q + c·√(ln N(parent) / N(child)): a high mean reward "
        "(exploitation) or few visits (exploration)."),
    "expansion": (
        "Expansion",
        "Each of the leaf's K2 best actions (a slot and a token, ranked by the "
        "confidence-adjusted score) makes one child; all the children are evaluated in a "
        "single batched forward pass."),
    "simulation": (
        "Simulation",
        "Each child's remaining masks are filled from its own prediction (no extra forward) "
        "and it earns the information-gain reward r_IG: the share of the parent's total "
        "entropy that its commitment removed from the other slots."),
    "backpropagation": (
        "Backpropagation",
        "Each child's reward is added to W, and 1 to N, of the child and of every node on "
        "the path to the root, so Q = W/N is the mean reward below a node. A child with "
        "L_c committed slots is terminal; of the terminal nodes, only the top C by reward "
        "become candidates."),
    "search_finished": (
        "Search finished",
        "The search stopped (C candidates found, the budget spent, or nothing left to "
        "expand); the candidates go to the candidate choice."),
    "candidate_chosen": (
        "Candidate choice",
        "The candidate with the highest cumulative information gain from the root -- the "
        "least entropy left on the remaining slots -- wins; its committed slots start the "
        "decoding."),
    "phase_c": (
        "Phase C: confidence-guided unmasking",
        "The remaining masks are filled step by step: each step unmasks the slots with the "
        "highest confidence-adjusted score s = p·exp(−H)·σ(γ·margin)."),
    "decode": (
        "Decoding step",
        "The strategy unmasks the next slot(s) by its own rule (confidence, entropy, margin, "
        "random...), one forward pass per step."),
    "sample": (
        "Best-of-N sample",
        "One sampled low-confidence decode of the prompt; the most common extracted answer "
        "over the N samples wins."),
    "compare_greedy": (
        "Greedy comparison",
        "The same prompt decoded by LLaDA's low-confidence remasking, recorded for the "
        "side-by-side entropy and unmasking-order views."),
    "finished": (
        "Finished",
        "The run is complete: compare the answer, the unmasking order and the entropies "
        "with greedy decoding, or inspect any node."),
}


@dataclass(frozen=True)
class PhaseInfo:
    key: str
    title: str
    explanation: str
    detail: str = ""          # what happened, with this run's numbers
    iteration: int | None = None

    @property
    def in_mcts(self) -> bool:
        return self.key in MCTS_PHASES


def _info(key: str, detail: str = "", iteration: int | None = None) -> PhaseInfo:
    title, text = PHASES[key]
    return PhaseInfo(key, title, text, detail, iteration)


def current_phase(trace: dict | None) -> PhaseInfo:
    """The phase the run has just completed."""
    if not trace:
        return _info("not_started")
    if trace.get("result") is not None:
        res = trace["result"]
        verdict = {True: "correct", False: "wrong", None: "not verifiable"}[res.get("verified")]
        return _info("finished", f"answer {clip(repr(res.get('answer')), 160)} ({verdict}), "
                                 f"{res.get('forwards')} forward passes")
    comparison = trace.get("comparison")
    if comparison and comparison.get("steps"):
        step = comparison["steps"][-1]
        return _info("compare_greedy", _step_detail(step))
    decode = trace.get("decode") or []
    if decode:
        step = decode[-1]
        phase = step["phase"]
        key = ("phase_c" if phase.startswith("phase_c") else
               "sample" if phase.startswith("sample") else "decode")
        return _info(key, _step_detail(step))
    search = trace.get("search")
    if search:
        if search.get("winner") is not None:
            return _info("candidate_chosen", search.get("why") or "")
        reasons = {"candidates": "C candidates were found",
                   "budget": "the iteration budget ran out",
                   "exhausted": "no node was left to expand"}
        return _info("search_finished",
                     f"after {plural(search['iterations'], 'iteration')}: "
                     f"{reasons.get(search['stop_reason'], search['stop_reason'])}; "
                     f"candidates {search['candidates']}")
    iterations = trace.get("iterations") or []
    if iterations:
        it = iterations[-1]
        n = it["iteration"]
        for key in reversed(MCTS_PHASES):
            rec = it.get(key)
            if rec:
                return _info(key, _mcts_detail(key, rec), n)
    if trace.get("tree"):
        root = trace["tree"]["nodes"][0]
        return _info("root", f"{len(root.get('action_set', []))} actions at the root; "
                             f"total entropy {root.get('entropy_sum', 0):.3f}")
    if trace.get("run"):
        return _info("started")
    return _info("not_started")


def _step_detail(step: dict) -> str:
    pairs = ", ".join(f"slot {s} ← {t!r}" for s, t in zip(step["slots"], step["token_texts"]))
    return f"decode step {step['step']}: {pairs}"


def _mcts_detail(key: str, rec: dict) -> str:
    if key == "selection":
        return f"path {' → '.join(map(str, rec['path']))}"
    if key == "expansion":
        return (f"leaf {rec['leaf']} expanded into {len(rec['children'])} children "
                f"({rec['forwards']} forward pass{'es' if rec['forwards'] != 1 else ''})")
    if key == "simulation":
        d = distinct_digits(rec["rewards"])
        rewards = ", ".join(f"{r:.{d}f}" if isinstance(r, (int, float)) else "—"
                            for r in rec["rewards"])
        return f"rewards r_IG of children {rec['children']}: {rewards}"
    new = rec.get("new_candidates") or []
    return (f"updated {len(rec['updates'])} nodes"
            + (f"; new candidates {new}" if new else ""))


def phase_cycle_html(current: str) -> str:
    """selection → expansion → simulation → backpropagation, the current one marked."""
    parts = []
    for key in MCTS_PHASES:
        title = PHASES[key][0]
        if key == current:
            parts.append(f'<span style="background:#ff7f0e;color:#fff;padding:2px 8px;'
                         f'border-radius:10px;font-weight:600">{esc(title)}</span>')
        else:
            parts.append(f'<span style="color:#888;padding:2px 8px">{esc(title)}</span>')
    return '<div style="margin:4px 0">' + " → ".join(parts) + "</div>"


def progress(trace: dict | None, with_comparison: bool = True) -> tuple[float, str]:
    """A fraction in [0, 1] and a caption. The search (iterations or candidates, whichever
    is nearer its limit) and the decoding steps share the run's own part; the greedy
    comparison (``with_comparison``) takes the last tenth."""
    if not trace or not trace.get("run"):
        return 0.0, "not started"
    if trace.get("result") is not None:
        return 1.0, "finished"
    cfg = trace["run"]["config"]
    steps_total = cfg.get("steps") or cfg.get("gen_length") or 1
    has_search = trace.get("tree") is not None
    own = 0.0
    captions = []
    decode_weight = 1.0
    if has_search:
        search_done = trace.get("search") is not None
        its = len(trace.get("iterations") or [])
        budget = cfg.get("max_iterations") or 1
        cands = len(trace["search"]["candidates"]) if search_done else _n_candidates(trace)
        need = cfg.get("candidates") or 1
        own += 0.5 * (1.0 if search_done else min(1.0, max(its / budget, cands / need)))
        decode_weight = 0.5
        captions.append(f"search: {plural(its, 'iteration')}, {cands}/{need} candidates")
    decode = trace.get("decode") or []
    main_steps = [s for s in decode if not s["phase"].startswith("phase_c-")]
    done_steps = len(main_steps) + (_winner_depth(trace) if has_search else 0)
    if decode or not has_search or trace.get("search"):
        # a count, not a step's number: steps are named by their record's `step` (the
        # header's "decode step K", `medal fork --step K`), which counts from 0
        captions.append(f"decoding: {done_steps} of {steps_total} steps done")
    own += decode_weight * min(1.0, done_steps / steps_total)
    comparison = trace.get("comparison")
    if not with_comparison:
        return min(own, 0.999), "; ".join(captions)
    frac = 0.9 * own
    if comparison:
        n = len(comparison.get("steps") or [])
        frac = 0.9 + 0.1 * min(1.0, n / steps_total)
        captions.append(f"greedy comparison: {n} of {steps_total} steps done")
    return min(frac, 0.999), "; ".join(captions)


def plural(n: int, word: str) -> str:
    """``1 iteration``, ``2 iterations``."""
    return f"{n} {word}{'' if n == 1 else 's'}"


def _n_candidates(trace: dict) -> int:
    return len(candidate_ids(trace))


def _winner_depth(trace: dict) -> int:
    search = trace.get("search") or {}
    winner = search.get("winner")
    if winner is None or not trace.get("tree"):
        return 0
    node = nodes_by_id(trace).get(winner)
    return node["depth"] if node is not None else 0
