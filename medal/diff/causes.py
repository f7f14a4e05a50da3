"""Why two runs part at a position: a fork, the configuration, a near tie, a different choice."""
from __future__ import annotations

from .report import _show
from .tolerance import _near_tie

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
        from ..timeline import label_at
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
        edits_a, edits_b = _edits(sa_), _edits(sb_)
        if edits_a or edits_b:   # token edits (LLaDA2.1): what each step rewrote
            side_a["edits"], side_b["edits"] = edits_a, edits_b
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
        if edits_a != edits_b:
            text = (f"the same slots and tokens unmasked; A rewrites "
                    f"{', '.join(edits_a) or 'nothing'}, B {', '.join(edits_b) or 'nothing'} "
                    "(token edits)")
            if sampled and (random_changed or not config):
                return "different sample", f"{text}; a sampled step", side_a, side_b, None
            if cause_cfg:
                return cause_cfg, f"{text}; configuration: {changed}", side_a, side_b, None
            tie = _edit_tie(sa_, sb_)
            if tie:
                return ("near tie", text + "; an edit's probability is equal to its "
                        "threshold to float32 rounding: whether it passes depends on the "
                        "CPU's rounding", side_a, side_b, True)
            return "different edits", text, side_a, side_b, False
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


def _edits(step: dict) -> list[str]:
    """A step's token edits in words: ``slot:old->new``."""
    return [f"{e['slot']}:{e['old_text']}->{e['new_text']}" for e in step.get("edits") or []]


def _edit_tie(sa: dict, sb: dict) -> bool:
    """An edit only one step made had a probability equal to its threshold to float32
    rounding (so the other run's rounding may have kept it below)."""
    only = [e for x, y in ((sa, sb), (sb, sa)) for e in x.get("edits") or []
            if e not in (y.get("edits") or [])]
    return bool(only) and all(_near_tie(e["confidence"], e["threshold"]) for e in only)


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
