"""The gate's checks of token edits (LLaDA2.1's editing: a decode step's ``edits``).

A trace without edits is not looked at here. With edits, each decode (the answer's,
each candidate's completion, each sample, the greedy comparison) is replayed from where
it started -- every slot masked but the task's fixed ones; phase C from its node's
answer -- applying each step's unmasked slots and edits in order, so that every edit is
checked against the answer as it stood when its step ran: the slot was written (not
masked, not a fixed slot, not unmasked by the same step), it held ``old_token``, the new
token differs. Each edit passed its threshold (``confidence`` > ``threshold`` = the run's
``edit_threshold``) unless the trace's fork forced it at that step. The decode that made
the run's answer must end on the recorded answer.
"""
from __future__ import annotations

from .parse import _fail


def post_steps_allowed(config: dict) -> int:
    """The most post steps a decode of this configuration runs (token editing on: up to
    ``max_post_steps`` after each block; else none): decode steps that unmask no slot."""
    if not config.get("edit_threshold"):
        return 0
    try:
        blocks = -(-int(config["gen_length"]) // int(config["block_length"]))
        return blocks * int(config.get("max_post_steps", 16))
    except (KeyError, TypeError, ValueError, ZeroDivisionError):
        return 0


def has_edits(data: dict) -> bool:
    steps = list(data.get("decode") or []) + list((data.get("comparison") or {}).get("steps")
                                                  or [])
    return any(step.get("edits") for step in steps)


def _start(data: dict, phase: str, L: int, mask_id: int) -> list[int] | None:
    """Where a decode of ``phase`` started (None: not known from the trace)."""
    nodes = (data.get("tree") or {}).get("nodes") or []
    if phase == "phase_c" or phase.startswith("phase_c-"):
        if phase == "phase_c":
            node = (data.get("search") or {}).get("winner")
        else:
            node = phase[len("phase_c-"):]
            node = int(node) if node.isascii() and node.isdigit() else None
        if node is None or not 0 <= node < len(nodes):
            return None
        return list(nodes[node]["answer_ids"])
    answer = [mask_id] * L
    for f in data["run"].get("fixed_slots") or []:
        if 0 <= f["slot"] < L:
            answer[f["slot"]] = f["token"]
    return answer


def check_edits(data: dict) -> None:
    """See the module docstring; a no-op for a trace without edits."""
    if not has_edits(data):
        return
    run = data["run"]
    cfg = run["config"]
    L = cfg["gen_length"]
    threshold = cfg.get("edit_threshold")
    if not isinstance(threshold, (int, float)) or isinstance(threshold, bool) or not threshold > 0:
        _fail(["run", "config", "edit_threshold"], "the decode steps edit tokens, but the "
                                                   "run's edit_threshold is not above 0 "
                                                   "(editing off)")
    mask_id = (run.get("model") or {}).get("mask_id")
    fixed = {f["slot"] for f in run.get("fixed_slots") or []}
    fork = data.get("fork") or {}
    forced = ({f["slot"]: f["token_id"] for f in fork.get("forced") or []}
              if "step" in fork else {})
    answers: dict[str, list[int] | None] = {}
    for base, steps in ((["decode"], data.get("decode") or []),
                        (["comparison", "steps"], (data.get("comparison") or {}).get("steps")
                         or [])):
        for k, step in enumerate(steps):
            p = base + [k]
            phase = step["phase"]
            if phase not in answers:
                answers[phase] = (_start(data, phase, L, mask_id)
                                  if isinstance(mask_id, int) else None)
            answer = answers[phase]
            unmasked = set(step["slots"])
            if answer is not None:
                for s, t in zip(step["slots"], step["tokens"]):
                    if 0 <= s < L:
                        answer[s] = t
            seen = set()
            for j, e in enumerate(step.get("edits") or []):
                q = p + ["edits", j]
                s = e["slot"]
                if not 0 <= s < L:
                    _fail(q + ["slot"], f"slot outside the answer (0..{L - 1})")
                if s in seen:
                    _fail(q + ["slot"], f"slot {s} is edited twice in one step")
                seen.add(s)
                if s in unmasked:
                    _fail(q + ["slot"], f"slot {s} is unmasked by this step: an edit rewrites "
                                        "a slot written before it")
                if s in fixed:
                    _fail(q + ["slot"], f"slot {s} is one of the task's fixed slots, which are "
                                        "never rewritten")
                if e["new_token"] == e["old_token"]:
                    _fail(q + ["new_token"], "an edit changes the slot's token")
                if e["threshold"] != threshold:
                    _fail(q + ["threshold"], f"the run's edit_threshold is {threshold}")
                is_forced = ("step" in fork and step["step"] == fork["step"]
                             and phase in ("phase_c", "decode") and forced.get(s) == e["new_token"])
                if not e["confidence"] > e["threshold"] and not is_forced:
                    _fail(q + ["confidence"], f"{e['confidence']} does not exceed the editing "
                                              f"threshold {e['threshold']} (and no fork forced "
                                              "this edit)")
                if answer is not None:
                    if answer[s] == mask_id:
                        _fail(q + ["slot"], f"slot {s} is still masked at this step: only a "
                                            "written slot is edited")
                    if answer[s] != e["old_token"]:
                        _fail(q + ["old_token"], f"slot {s} holds token {answer[s]} at this "
                                                 f"step, not {e['old_token']}")
            if answer is not None:
                for e in step.get("edits") or []:
                    answer[e["slot"]] = e["new_token"]
    for base, result, phase in ((["result"], data.get("result"),
                                 "phase_c" if data.get("search") else "decode"),
                                (["comparison", "result"],
                                 (data.get("comparison") or {}).get("result"), "compare_greedy")):
        answer = answers.get(phase)
        if result is None or answer is None or run.get("strategy") == "bst5":
            continue
        if list(result["answer_ids"]) != answer:
            _fail(base + ["answer_ids"], "not the answer its decode steps (their unmasked "
                                         "slots and edits) write")
