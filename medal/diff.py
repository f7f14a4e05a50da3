"""Two traces compared: where two runs part, and why (issue 19).

:func:`diff_traces` walks both runs along their timeline (:mod:`medal.timeline`:
the root, each MCTS iteration's four phases, the search's end, the candidate choice,
every decode step, the greedy comparison, the end) and reports

* whether they are **identical** -- everything equal apart from the wall clock (the
  top-level ``timing`` block and the timing keys of :data:`TIMING_KEYS`), a ``fork``
  record and the environment (``run.versions``, ``run.model.device``, a
  ``reproducibility`` block): those are reported as context, never as differences;
* whether they are **equal within tolerance** (floats within ``rel``/``abs_tol``,
  everything discrete identical: the tolerance another CPU's rounding of the same
  forward needs);
* the **first divergence** (beyond tolerance) on the timeline and its cause: two
  selections with their UCB values and whether that was a near tie (float32 rounding), a
  different action set, a forced action (a fork), a different sample (seed or
  temperature), a different configuration, or different model figures;
* per phase (search, candidates, decode, comparison) same or different;
* answers, verdicts and costs side by side.

:func:`differences` is the plain one-way comparison the reference-trace and example
tests use; :func:`compare_candidates` compares two nodes of one tree slot by slot.

``medal diff A.json B.json [--json]`` prints :meth:`TraceDiff.format` (or
:meth:`TraceDiff.to_json`); exit 0 identical, 1 different, 2 on an error.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

from .errors import InputError
from .scores import entropy_drop

#: timing keys, wherever they sit (the recorder moves most into ``timing``)
TIMING_KEYS = ("seconds", "model_seconds", "search_seconds", "search_model_seconds",
               "comparison_seconds", "ms_per_step")
#: top-level blocks that are context, not the run: wall clock, a fork's record, the
#: environment a run was made in
CONTEXT_KEYS = ("timing", "fork", "reproducibility")
#: two values are a near tie when they differ by no more than this, relatively (about 8
#: float32 ulps: the rounding another CPU's kernels may give the same forward)
NEAR_TIE_REL = 1e-6
#: default tolerance of ``equal_within_tolerance`` (measured between CPUs on the shipped
#: examples: 1.2e-6 relative on probabilities, 1.8e-6 absolute on margins)
REL, ABS = 1e-4, 5e-6
#: node fields that accumulate over the whole search (compared at the end)
CUMULATIVE = ("N", "W", "Q", "ucb", "exhausted", "candidate_final")
#: a child's fields its simulation fills in
SIMULATED = ("r_ig", "reward", "verified", "completion", "completion_ids")
PHASES = ("search", "candidates", "decode", "comparison")
CAUSES = ("configuration", "forced action", "near tie", "different selection",
          "different action set", "different sample", "different model figures",
          "different values", "different length")


# ---------------------------------------------------------------------- value comparison

def _walk(a, b, path, out, rel, abs_tol, limit, one_way):
    """Append (path, a, b, message) for each place ``b`` departs from ``a``. One way: keys
    only ``b`` has are not differences (fields added later)."""
    if len(out) >= limit:
        return
    if isinstance(a, dict):
        if not isinstance(b, dict):
            out.append((path, a, b, f"{type(b).__name__} instead of an object"))
            return
        for k, v in a.items():
            if k not in b:
                out.append((f"{path}/{k}", v, None, "missing"))
            else:
                _walk(v, b[k], f"{path}/{k}", out, rel, abs_tol, limit, one_way)
            if len(out) >= limit:
                return
        if not one_way:
            for k in b:
                if k not in a:
                    out.append((f"{path}/{k}", None, b[k], "only in B"))
    elif isinstance(a, list):
        if not isinstance(b, list) or len(b) != len(a):
            out.append((path, a, b, f"{len(a)} items, now "
                                    f"{len(b) if isinstance(b, list) else type(b).__name__}"))
            return
        for i, (x, y) in enumerate(zip(a, b)):
            _walk(x, y, f"{path}/{i}", out, rel, abs_tol, limit, one_way)
            if len(out) >= limit:
                return
    elif isinstance(a, float) and isinstance(b, (int, float)) and not isinstance(b, bool):
        if not math.isclose(a, b, rel_tol=rel, abs_tol=abs_tol):
            out.append((path, a, b, f"{a!r} -> {b!r}"))
    elif a != b or type(a) is not type(b) and not (
            isinstance(a, int) and isinstance(b, float) and float(a) == b):
        out.append((path, a, b, f"{a!r} -> {b!r}"))


def differences(old, new, path="", out=None, rel=1e-6, abs_tol=1e-9):
    """Where ``new`` departs from ``old``: every key ``old`` has must be in ``new`` with the
    same value (floats to ``rel``; ``old`` holds 10 significant digits). Keys only ``new``
    has (fields added later) are not differences. At most 10, as ``"path: message"``."""
    out = [] if out is None else out
    found: list = []
    _walk(old, new, path, found, rel, abs_tol, 10 - len(out), True)
    out.extend(f"{p}: {m}" for p, _, _, m in found)
    return out


def _paths(a, b, rel, abs_tol, limit=10) -> list[tuple]:
    """Both ways: (path, a, b, message)."""
    found: list = []
    _walk(a, b, "", found, rel, abs_tol, limit, False)
    return found


# ---------------------------------------------------------------------- the timeline

def _config_completed(trace: dict) -> dict:
    """``trace`` (a shallow copy) with its configuration complete: a trace written before
    a configuration field existed ran with that field's default."""
    from .config import GenerationConfig
    cfg = trace["run"].get("config")
    if not isinstance(cfg, dict):
        return trace
    return {**trace, "run": {**trace["run"], "config": GenerationConfig.with_defaults(cfg)}}


def without_context(trace: dict) -> dict:
    """The run itself: ``trace`` less its context (wall clock, fork record, environment).
    Returns a new dict; ``trace`` is not changed."""
    out = {k: v for k, v in trace.items() if k not in CONTEXT_KEYS}
    if isinstance(out.get("run"), dict):
        out["run"] = {k: v for k, v in out["run"].items() if k != "versions"}
        if isinstance(out["run"].get("model"), dict):
            out["run"]["model"] = {k: v for k, v in out["run"]["model"].items()
                                   if k != "device"}
    return _strip_timing(out)


def _strip_timing(value):
    if isinstance(value, dict):
        return {k: _strip_timing(v) for k, v in value.items() if k not in TIMING_KEYS}
    if isinstance(value, list):
        return [_strip_timing(v) for v in value]
    return value


def _forked_nodes(trace: dict) -> set[int]:
    """Nodes no expansion made (besides the root): those a fork forced."""
    tree = trace.get("tree") or {}
    made = {c for it in trace.get("iterations") or [] if it.get("expansion")
            for c in it["expansion"]["children"]}
    return {n["id"] for n in tree.get("nodes") or []
            if n["parent"] is not None and n["id"] not in made}


def _static(node: dict) -> dict:
    return {k: v for k, v in node.items() if k not in CUMULATIVE and k not in SIMULATED}


def _content(trace: dict, pos) -> dict:
    """What is new at timeline position ``pos``: {json path: value}."""
    nodes = (trace.get("tree") or {}).get("nodes") or []
    its = {it["iteration"]: (k, it) for k, it in enumerate(trace.get("iterations") or [])}
    run = trace.get("run") or {}
    kind = pos.kind
    if kind == "started":
        return {f"/run/{k}": run.get(k) for k in ("task", "strategy", "prompt",
                                                  "model_prompt", "problem", "fixed_slots")}
    if kind == "root":
        return {"/tree/nodes/0": _static(nodes[0])} if nodes else {}
    if kind in ("selection", "expansion", "simulation", "backpropagation"):
        k, it = its[pos.iteration]
        out = {f"/iterations/{k}/{kind}": it.get(kind)}
        children = (it.get("expansion") or {}).get("children") or []
        if kind == "expansion":
            out.update({f"/tree/nodes/{c}": _static(nodes[c]) for c in children})
        if kind == "simulation":
            out.update({f"/tree/nodes/{c}": {f: nodes[c].get(f) for f in SIMULATED}
                        for c in children})
        return out
    search = trace.get("search") or {}
    if kind == "search_finished":
        out = {f"/search/{k}": search.get(k) for k in ("stop_reason", "iterations",
                                                       "candidates")}
        out.update({f"/tree/nodes/{n}": _static(nodes[n]) for n in sorted(_forked_nodes(trace))})
        return out
    if kind == "candidate_chosen":
        return {f"/search/{k}": search.get(k) for k in ("winner", "why", "candidate_scores")}
    if kind == "decode":
        return {f"/decode/{pos.index}": trace["decode"][pos.index]}
    if kind == "compare":
        return {f"/comparison/steps/{pos.index}": trace["comparison"]["steps"][pos.index]}
    if kind == "finished":  # everything else: results, costs, the nodes' final figures
        return {"/result": trace.get("result"), "/stats": trace.get("stats"),
                "/comparison/result": (trace.get("comparison") or {}).get("result"),
                "/tree/nodes (final N, W, Q, UCB)": [
                    {f: n.get(f) for f in CUMULATIVE + ("candidate",)} for n in nodes]}
    return {}


def _position_info(trace: dict, pos) -> dict:
    from .timeline import MCTS_KINDS, step_name
    info = {"kind": pos.kind, "label": pos.label}
    if pos.kind in MCTS_KINDS:
        info["iteration"] = pos.iteration
    if pos.kind in ("decode", "compare"):
        steps = trace["decode"] if pos.kind == "decode" else trace["comparison"]["steps"]
        info["index"] = pos.index
        info["step"] = steps[pos.index]["step"]
        info["phase"] = steps[pos.index]["phase"]
        info["label"] = step_name(steps[pos.index], greedy=pos.kind == "compare")
    return info


def _phase_of(kind: str, trace: dict, pos) -> str:
    if kind in ("started",):
        return "run"
    if kind in ("root", "selection", "expansion", "simulation", "backpropagation",
                "search_finished"):
        return "search"
    if kind == "candidate_chosen":
        return "candidates"
    if kind == "decode":
        phase = trace["decode"][pos.index]["phase"]
        return "candidates" if phase.startswith("phase_c-") else "decode"
    if kind == "compare":
        return "comparison"
    return "result"


# ---------------------------------------------------------------------- the result

@dataclass
class Divergence:
    """The first place two runs part, and why.

    ``position``: where on the timeline (``kind``: started, root, selection, expansion,
    simulation, backpropagation, search_finished, candidate_chosen, decode, compare,
    finished, or config; ``iteration`` for MCTS phases; ``index``/``step``/``phase`` for
    decode steps; ``label`` for people). ``phase``: run, search, candidates, decode,
    comparison or result. ``cause``: one of :data:`CAUSES`. ``a`` and ``b``: what each
    run did there (e.g. the selected node, its action and UCB value). ``near_tie``: the
    two choices' values were equal to float32 rounding (None: not a choice between
    scored options). ``paths``: the first differing JSON paths, with both values."""
    position: dict
    phase: str
    cause: str
    explanation: str
    a: dict = field(default_factory=dict)
    b: dict = field(default_factory=dict)
    near_tie: bool | None = None
    paths: list = field(default_factory=list)


@dataclass
class TraceDiff:
    """:func:`diff_traces`'s answer. ``identical``: the same run apart from context
    (timing, fork record, environment); ``equal_within_tolerance``: floats within the
    tolerance, everything else identical; ``first``: the first divergence beyond
    tolerance (None when equal within it); ``first_exact``: the first position with any
    difference at all (None when identical); ``config``: configuration keys that differ,
    {key: [a, b]}; ``phases``: {search|candidates|decode|comparison: "same" | "same
    within tolerance" | "different" | "absent" | "only in A" | "only in B"};
    ``side_by_side``: {figure: [a, b]} (answer, verdict, costs...); ``context``: {key: [a,
    b]} of what was set aside (timing, fork, versions, device, reproducibility);
    ``tolerance``: (rel, abs_tol); ``names``: the two traces' names in the report."""
    identical: bool
    equal_within_tolerance: bool
    first: Divergence | None
    first_exact: Divergence | None
    config: dict
    phases: dict
    side_by_side: dict
    context: dict
    tolerance: tuple
    names: tuple = ("A", "B")

    def to_json(self) -> dict:
        from .trace import jsonable
        out = asdict(self)
        out["names"] = list(self.names)
        out["tolerance"] = {"rel": self.tolerance[0], "abs": self.tolerance[1]}
        return jsonable(out)

    def format(self) -> str:
        """The report for people (``medal diff``'s output)."""
        A, B = self.names
        lines = []
        if self.identical:
            lines.append("identical: the same run (timing and environment aside)")
        elif self.equal_within_tolerance:
            lines.append(f"equal within tolerance (rel {self.tolerance[0]:g}, abs "
                         f"{self.tolerance[1]:g}), not identical")
        else:
            lines.append("different")
        if self.config:
            lines.append("configuration: " + ", ".join(
                f"{k} {_show(a)} -> {_show(b)}" for k, (a, b) in self.config.items()))
        for d, title in ((self.first, "first divergence"),
                         (self.first_exact if self.first is None else None,
                          "first exact difference")):
            if d is None:
                continue
            lines.append(f"{title}: {d.position['label']} ({d.phase}) -- {d.cause}")
            lines.append(f"  {d.explanation}")
            for p, x, y in d.paths[:3]:
                lines.append(f"  {p}: {_show(x)} -> {_show(y)}")
        if self.phases:
            lines.append("phases: " + ", ".join(f"{k} {v}" for k, v in self.phases.items()))
        width = max((len(k) for k in self.side_by_side), default=0)
        if self.side_by_side:
            lines.append(f"{'':{width}}  {A:<24}  {B}")
        for k, (a, b) in self.side_by_side.items():
            mark = "" if a == b or k == "seconds" else "  *"
            lines.append(f"{k:{width}}  {_show(a):<24}  {_show(b)}{mark}")
        ctx = {k: v for k, v in self.context.items() if v[0] != v[1]}
        if ctx:
            lines.append("context (not compared): " + ", ".join(
                f"{k} differs" if k != "timing" else "timing" for k in ctx))
        return "\n".join(lines)


def _show(v) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    if v is None:
        return "-"
    text = str(v)
    return text if len(text) <= 60 else text[:57] + "..."


# ---------------------------------------------------------------------- causes

def _near_tie(x, y) -> bool:
    if x is None or y is None:
        return x is None and y is None
    if isinstance(x, float) and isinstance(y, float) and (math.isinf(x) or math.isinf(y)):
        return x == y
    return abs(x - y) <= NEAR_TIE_REL * max(abs(x), abs(y), 1e-12)


def _action_text(node: dict | None) -> str | None:
    if not node or not node.get("action"):
        return None
    a = node["action"]
    return f"{a['slot']}:{a.get('token_text', a['token'])}"


def _config_changes(a: dict, b: dict) -> dict:
    ca, cb = (a.get("run") or {}).get("config") or {}, (b.get("run") or {}).get("config") or {}
    out = {k: [ca.get(k), cb.get(k)] for k in sorted(set(ca) | set(cb))
           if ca.get(k) != cb.get(k)}
    for key in ("task", "strategy", "prompt"):
        x, y = (a.get("run") or {}).get(key), (b.get("run") or {}).get(key)
        if x != y:
            out[key] = [x, y]
    ma, mb = ((t.get("run") or {}).get("model") or {} for t in (a, b))
    if ma.get("name") != mb.get("name"):
        out["model"] = [ma.get("name"), mb.get("name")]
    return out


RANDOM_KEYS = ("seed", "temperature", "slot_temperature", "pair_temperature", "simulation")


def _sampled(trace: dict) -> bool:
    cfg = trace["run"]["config"]
    return (trace["run"]["strategy"] in ("random", "bst5") or cfg.get("temperature", 0) > 0
            or cfg.get("slot_temperature", 0) > 0 or cfg.get("pair_temperature", 0) > 0
            or cfg.get("simulation") == "sample")


def _fork_cause(a: dict, b: dict, info: dict) -> str | None:
    """A fork record explains a divergence at or after the fork's position."""
    for t in (a, b):
        fork = t.get("fork")
        if not fork:
            continue
        forced = ", ".join(f"{f['slot']}:{f['token_text']}" for f in fork["forced"])
        if "step" in fork:
            if info["kind"] == "decode" and info.get("phase") in ("phase_c", "decode") \
                    and info.get("step", -1) >= fork["step"]:
                return f"a fork forced {forced} at decode step {fork['step']}"
        elif info["kind"] not in ("started", "root") and (
                info.get("iteration") is None or info["iteration"] > fork["after_iteration"]):
            return (f"a fork forced {forced} at node {fork['node']} (then "
                    f"{fork['then']})")
    return None


def _explain(a: dict, b: dict, pos_a, pos_b, info: dict, paths: list, config: dict
             ) -> tuple[str, str, dict, dict, bool | None]:
    """(cause, explanation, a's side, b's side, near tie) at a divergent position."""
    forced = _fork_cause(a, b, info)
    if pos_a != pos_b:
        from .timeline import label_at
        sa = label_at(a, pos_a) if pos_a else "nothing (its trace ends there)"
        sb = label_at(b, pos_b) if pos_b else "nothing (its trace ends there)"
        text = f"A goes on with {sa}, B with {sb}"
        if forced:
            return "forced action", f"{forced}; {text}", {}, {}, None
        if pos_a and pos_b and {pos_a.kind, pos_b.kind} & {"search_finished"}:
            ra, rb = ((t.get("search") or {}).get("stop_reason") for t in (a, b))
            text += f" (search stopped: A {ra}, B {rb})"
        return ("configuration" if config else "different length"), text, {}, {}, None
    kind = info["kind"]
    if forced:
        return "forced action", forced, {}, {}, None
    cause_cfg = "configuration" if config else None
    changed = ", ".join(f"{k} {_show(x)} -> {_show(y)}" for k, (x, y) in config.items())
    nodes_a = (a.get("tree") or {}).get("nodes") or []
    nodes_b = (b.get("tree") or {}).get("nodes") or []
    if kind == "selection":
        la = next(it for it in a["iterations"] if it["iteration"] == info["iteration"])
        lb = next(it for it in b["iterations"] if it["iteration"] == info["iteration"])
        for depth, (lva, lvb) in enumerate(zip(la["selection"]["levels"],
                                               lb["selection"]["levels"])):
            ca = next((r for r in lva if r.get("chosen")), None)
            cb = next((r for r in lvb if r.get("chosen")), None)
            if ca and cb and ca["node"] != cb["node"]:
                # both runs' UCB of both choices, from A's level (the same tree so far)
                ucb_a = ca["ucb"]
                ucb_b_in_a = next((r["ucb"] for r in lva if r["node"] == cb["node"]), None)
                tie = _near_tie(ucb_a, ucb_b_in_a)
                side_a = {"node": ca["node"], "action": _action_text(nodes_a[ca["node"]]),
                          "ucb": ca["ucb"], "N": ca["N"], "Q": ca["Q"]}
                side_b = {"node": cb["node"], "action": _action_text(nodes_b[cb["node"]]),
                          "ucb": cb["ucb"], "N": cb["N"], "Q": cb["Q"]}
                text = (f"at depth {depth} A selects node {ca['node']} ({side_a['action']}, "
                        f"UCB {_show(ca['ucb'])}), B node {cb['node']} ({side_b['action']}, "
                        f"UCB {_show(cb['ucb'])})")
                if tie:
                    return ("near tie", text + "; the two UCB values are equal to float32 "
                            "rounding: which wins depends on the CPU's rounding",
                            side_a, side_b, True)
                if cause_cfg:
                    return cause_cfg, f"{text}; configuration: {changed}", side_a, side_b, False
                return ("different selection", text + "; not a near tie (the figures "
                        "before differ within tolerance only, or the rule changed)",
                        side_a, side_b, False)
        return (cause_cfg or "different values", "the same path, other UCB figures"
                + (f"; configuration: {changed}" if config else ""), {}, {}, None)
    if kind == "root":
        acts_a, acts_b = (_actions(nodes[0]) for nodes in (nodes_a, nodes_b))
        if acts_a != acts_b:
            return (cause_cfg or "different action set",
                    f"the root's action set: A {acts_a}, B {acts_b}"
                    + (f"; configuration: {changed}" if config else ""),
                    {"action_set": acts_a}, {"action_set": acts_b}, None)
    if kind == "expansion":
        it = next(it for it in a["iterations"] if it["iteration"] == info["iteration"])
        itb = next(it for it in b["iterations"] if it["iteration"] == info["iteration"])
        leaf = it["expansion"]["leaf"]
        acts_a = _actions(nodes_a[leaf])
        leaf_b = itb["expansion"]["leaf"]
        acts_b = _actions(nodes_b[leaf_b])
        sa, sb = {"leaf": leaf, "action_set": acts_a}, {"leaf": leaf_b, "action_set": acts_b}
        if acts_a != acts_b:
            return ("different action set" if not config else "configuration",
                    f"node {leaf}'s action set: A {acts_a}, B {acts_b}"
                    + (f"; configuration: {changed}" if config else ""), sa, sb, None)
        return (cause_cfg or "different model figures",
                "the same actions, other figures (entropies or probabilities: the model's "
                "forward differs)" + (f"; configuration: {changed}" if config else ""),
                sa, sb, None)
    if kind in ("decode", "compare"):
        sa_ = a["decode"][pos_a.index] if kind == "decode" else a["comparison"]["steps"][pos_a.index]
        sb_ = b["decode"][pos_b.index] if kind == "decode" else b["comparison"]["steps"][pos_b.index]
        side_a = {"slots": sa_["slots"], "tokens": sa_["token_texts"], "scores": sa_["scores"]}
        side_b = {"slots": sb_["slots"], "tokens": sb_["token_texts"], "scores": sb_["scores"]}
        sampled = _sampled(a) or _sampled(b)
        random_changed = [k for k in config if k in RANDOM_KEYS]
        if sa_["slots"] != sb_["slots"] or sa_["tokens"] != sb_["tokens"]:
            text = (f"A unmasks {_pairs(sa_)} (scores {_scores(sa_)}), "
                    f"B {_pairs(sb_)} (scores {_scores(sb_)})")
            if sampled and (random_changed or not config):
                why = (f"random draws differ ({', '.join(f'{k} {_show(config[k][0])} -> {_show(config[k][1])}' for k in random_changed)})"
                       if random_changed else "a sampled step")
                return "different sample", f"{text}; {why}", side_a, side_b, None
            if cause_cfg:
                return cause_cfg, f"{text}; configuration: {changed}", side_a, side_b, None
            tie = _decode_tie(sa_, sb_)
            if tie:
                return ("near tie", text + "; the slots' scores are equal to float32 "
                        "rounding: which goes first depends on the CPU's rounding",
                        side_a, side_b, True)
            return ("different model figures" if sa_["eligible"] != sb_["eligible"]
                    else "different selection", text, side_a, side_b, False)
        text = ("the same slots and tokens, other figures (the tokens proposed for the "
                "slots left masked, or their scores)")
        if sampled and (random_changed or not config):
            why = (f"random draws differ ({', '.join(f'{k} {_show(config[k][0])} -> {_show(config[k][1])}' for k in random_changed)})"
                   if random_changed else "a sampled step")
            return "different sample", f"{text}; {why}", side_a, side_b, None
        return (cause_cfg or "different model figures",
                text + (f"; configuration: {changed}" if config else ""), side_a, side_b, None)
    if kind == "candidate_chosen":
        wa, wb = a["search"]["winner"], b["search"]["winner"]
        sc_a = {r["node"]: r.get("score") for r in a["search"]["candidate_scores"]}
        sc_b = {r["node"]: r.get("score") for r in b["search"]["candidate_scores"]}
        side_a, side_b = {"winner": wa, "score": sc_a.get(wa)}, {"winner": wb, "score": sc_b.get(wb)}
        if wa != wb:
            tie = _near_tie(sc_a.get(wa), sc_a.get(wb)) if wb in sc_a else False
            text = (f"A chooses node {wa} (score {_show(sc_a.get(wa))}), B node {wb} "
                    f"(score {_show(sc_b.get(wb))})")
            if tie:
                return "near tie", text + "; their scores are equal to float32 rounding", \
                    side_a, side_b, True
            return cause_cfg or "different values", text + (
                f"; configuration: {changed}" if config else ""), side_a, side_b, False
    if kind == "simulation" and (_sampled(a) or _sampled(b)):
        return "different sample", "the children's simulations differ (sampled fills)", \
            {}, {}, None
    if kind == "started" and config:
        return "configuration", f"the runs start differently; configuration: {changed}", \
            {}, {}, None
    first = paths[0] if paths else ("", None, None)
    return (cause_cfg or ("different model figures" if kind in ("root", "simulation")
                          else "different values"),
            f"{first[0]}: {_show(first[1])} -> {_show(first[2])}"
            + (f"; configuration: {changed}" if config else ""), {}, {}, None)


def _actions(node: dict) -> list[str]:
    return [f"{x['slot']}:{x.get('token_text', x['token'])}" for x in node["action_set"]]


def _pairs(step: dict) -> str:
    return ", ".join(f"{s}:{t}" for s, t in zip(step["slots"], step["token_texts"]))


def _scores(step: dict) -> str:
    return ", ".join(_show(s) for s in step["scores"])


def _decode_tie(sa: dict, sb: dict) -> bool:
    """A's step chose among slots whose scores were tied: B's choice had the same score
    in A's figures as A's own."""
    el = sa.get("eligible") or {}
    score = dict(zip(el.get("slots") or [], el.get("score") or []))
    mine = [score.get(s) for s in sa["slots"] if s not in sb["slots"]]
    theirs = [score.get(s) for s in sb["slots"] if s not in sa["slots"]]
    if not mine or not theirs or None in mine or None in theirs:
        return False
    return _near_tie(min(mine), max(theirs))


def _phase_parts(trace: dict, phase: str):
    search = trace.get("search")
    if phase == "search":
        if not trace.get("tree"):
            return None
        return {"tree": [_static(n) for n in trace["tree"]["nodes"]],
                "iterations": trace.get("iterations"),
                "search": {k: (search or {}).get(k) for k in ("stop_reason", "iterations",
                                                               "candidates")}}
    if phase == "candidates":
        if not search:
            return None
        return {"search": {k: search.get(k) for k in ("winner", "candidate_scores")},
                "rollouts": [d for d in trace.get("decode") or []
                             if d["phase"].startswith("phase_c-")]}
    if phase == "decode":
        steps = [d for d in trace.get("decode") or [] if not d["phase"].startswith("phase_c-")]
        return steps or None
    comparison = trace.get("comparison")
    return comparison or None


def _side_by_side(a: dict, b: dict) -> dict:
    out = {}
    ra, rb = a.get("result") or {}, b.get("result") or {}
    for key in ("strategy",):
        out[key] = [a["run"].get(key), b["run"].get(key)]
    for key, label in (("answer", "answer"), ("verified", "verified"),
                       ("forwards", "forwards"), ("sequence_forwards", "sequences"),
                       ("cache_hits", "cache hits")):
        out[label] = [ra.get(key), rb.get(key)]
    sa, sb = a.get("search") or {}, b.get("search") or {}
    if sa or sb:
        out["winner"] = [sa.get("winner"), sb.get("winner")]
        out["iterations"] = [sa.get("iterations"), sb.get("iterations")]
        out["stop reason"] = [sa.get("stop_reason"), sb.get("stop_reason")]
    ca, cb = ((t.get("comparison") or {}).get("result") or {} for t in (a, b))
    if ca or cb:
        out["greedy answer"] = [ca.get("answer"), cb.get("answer")]
        out["greedy verified"] = [ca.get("verified"), cb.get("verified")]
    ta, tb = a.get("timing") or {}, b.get("timing") or {}
    out["seconds"] = [ta.get("seconds"), tb.get("seconds")]   # context: never compared
    return out


def diff_traces(a: dict, b: dict, *, rel: float = REL, abs_tol: float = ABS,
                names: tuple[str, str] = ("A", "B")) -> TraceDiff:
    """Compare two traces (dicts that passed :func:`medal.trace.load_trace`).

    ``rel``/``abs_tol``: the float tolerance of ``equal_within_tolerance`` and of the
    first divergence (default: what another CPU's rounding needs). ``identical`` is exact.
    Returns a :class:`TraceDiff`; ``.format()`` is the report, ``.to_json()`` one JSON
    object. Neither trace is changed."""
    from .timeline import positions

    for t, n in ((a, names[0]), (b, names[1])):
        if not isinstance(t, dict) or not isinstance(t.get("run"), dict):
            raise InputError(f"{n} is not a trace (load it with medal.trace.load_trace)")
    a, b = _config_completed(a), _config_completed(b)
    ca, cb = without_context(a), without_context(b)
    identical = ca == cb
    config = _config_changes(a, b)
    context = {k: [a.get(k), b.get(k)] for k in CONTEXT_KEYS if k in a or k in b}
    va, vb = a["run"].get("versions"), b["run"].get("versions")
    if va != vb:
        context["versions"] = [va, vb]
    da, db = ((t["run"].get("model") or {}).get("device") for t in (a, b))
    if da != db:
        context["device"] = [da, db]
    first = first_exact = None
    if not identical:
        pa, pb = positions(a), positions(b)
        for i in range(max(len(pa), len(pb))):
            x = pa[i] if i < len(pa) else None
            y = pb[i] if i < len(pb) else None
            ref_trace, ref = (a, x) if x is not None else (b, y)
            info = _position_info(ref_trace, ref)
            phase = _phase_of(ref.kind, ref_trace, ref)
            if x != y:
                cause, text, sa, sb, tie = _explain(a, b, x, y, info, [], config)
                d = Divergence(info, phase, cause, text, sa, sb, tie, [])
                first = first or d
                first_exact = first_exact or d
                break
            cx, cy = _strip_timing(_content(a, x)), _strip_timing(_content(b, y))
            if first_exact is None:
                exact = [(k + p, u, v) for k in cx
                         for p, u, v, _ in _paths(cx[k], cy.get(k), 0.0, 0.0, 3)]
                if exact:
                    cause, text, sa, sb, tie = _explain(a, b, x, y, info, exact, config)
                    first_exact = Divergence(info, phase, cause, text, sa, sb, tie, exact[:5])
            loose = [(k + p, u, v) for k in cx
                     for p, u, v, _ in _paths(cx[k], cy.get(k), rel, abs_tol, 3)]
            if loose:
                cause, text, sa, sb, tie = _explain(a, b, x, y, info, loose, config)
                first = Divergence(info, phase, cause, text, sa, sb, tie, loose[:5])
                break
        if first_exact is None or first is None:
            # nothing differs position by position: what is left (a field no position
            # covers) is compared whole
            rest = _paths(ca, cb, rel, abs_tol, 5)
            info = {"kind": "finished", "label": "finished"}
            if rest and first is None:
                first = Divergence(info, "result", "configuration" if config else
                                   "different values", f"{rest[0][0]}: {rest[0][3]}",
                                   paths=[(p, u, v) for p, u, v, _ in rest])
            exact = _paths(ca, cb, 0.0, 0.0, 5)
            if exact and first_exact is None:
                first_exact = Divergence(info, "result", "different values",
                                         f"{exact[0][0]}: {exact[0][3]}",
                                         paths=[(p, u, v) for p, u, v, _ in exact])
    equal = first is None
    phases = {}
    for ph in PHASES:
        x, y = _phase_parts(ca, ph), _phase_parts(cb, ph)
        if x is None and y is None:
            phases[ph] = "absent"
        elif x is None or y is None:
            phases[ph] = f"only in {names[0] if y is None else names[1]}"
        elif x == y:
            phases[ph] = "same"
        elif not _paths(x, y, rel, abs_tol, 1):
            phases[ph] = "same within tolerance"
        else:
            phases[ph] = "different"
    return TraceDiff(identical=identical, equal_within_tolerance=equal, first=first,
                     first_exact=first_exact, config=config, phases=phases,
                     side_by_side=_side_by_side(a, b), context=context,
                     tolerance=(rel, abs_tol), names=tuple(names))


# ---------------------------------------------------------------------- two candidates

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
    out = []
    while node["parent"] is not None:
        node = nodes[node["parent"]]
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
