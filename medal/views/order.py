"""The unmasking order, MEDAL beside greedy: every answer slot as a coloured token.

A token's colour is the step at which its slot was unmasked (viridis: dark = early,
yellow = late); slots committed by the MCTS initialisation are outlined in red; slots
after the end-of-sequence token are faded (they are not part of the answer). The order
is read from the trace's steps, so it also shows a run in progress.
"""
from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from .common import main_phase, run_config, run_info, search_path, winner_id


@dataclass
class SlotToken:
    slot: int
    text: str | None = None      # None while still masked
    token: int | None = None
    step: int | None = None      # the step at which it was unmasked
    by_search: bool = False      # committed by the MCTS initialisation
    after_eos: bool = False
    fixed: bool = False          # filled from the start by the task's format (never masked)
    tentative: bool = False      # on the current selection path of a search still running
    edits: int = 0               # times the slot was rewritten after it was written (token
    #                              editing, LLaDA2.1): ``text`` is then the latest token's
    was: str | None = None       # the text it had before its latest rewrite


#: while one frame is built (:func:`one_position`), the slot records of the traces it reads
_ONE_POSITION: ContextVar[dict | None] = ContextVar("medal_one_position", default=None)


@contextmanager
def one_position():
    """The views read the same slot records several times for one frame (the order
    strip, the heatmap's answer end, the task view): inside this block they are worked
    out once per trace object and ``which``. Only for a trace that does not change
    inside the block (the frame builder's)."""
    token = _ONE_POSITION.set({})
    try:
        yield
    finally:
        _ONE_POSITION.reset(token)


def slot_tokens(trace: dict, which: str = "medal") -> list[SlotToken]:
    """Per slot: its token and the step that unmasked it (None while masked)."""
    cache = _ONE_POSITION.get()
    if cache is not None:
        hit = cache.get((id(trace), which))
        if hit is not None and hit[0] is trace:
            return hit[1]
        out = _slot_tokens(trace, which)
        cache[(id(trace), which)] = (trace, out)
        return out
    return _slot_tokens(trace, which)


def _slot_tokens(trace: dict, which: str) -> list[SlotToken]:
    L = run_config(trace).get("gen_length") or 0
    slots = [SlotToken(slot=i) for i in range(L)]
    for f in run_info(trace, "fixed_slots") or []:
        if 0 <= f["slot"] < L:
            slots[f["slot"]] = SlotToken(slot=f["slot"], text=f["text"], token=f["token"],
                                         fixed=True)

    def put(slot: int, text: str, token: int, step: int, by_search: bool = False,
            tentative: bool = False):
        if 0 <= slot < L:
            slots[slot] = SlotToken(slot=slot, text=text, token=token, step=step,
                                    by_search=by_search, tentative=tentative)

    if which == "greedy":
        steps = (trace.get("comparison") or {}).get("steps") or []
    else:
        # the winner's commitments; while the search runs, the current selection path's
        # (so the view fills in as the run goes, rather than staying blank to the end)
        searching = winner_id(trace) is None
        for node in search_path(trace)[1:]:
            a = node["action"]
            put(a["slot"], a.get("token_text", "?"), a["token"], node["depth"] - 1, True,
                tentative=searching)
        phase = main_phase(trace)
        steps = [s for s in trace.get("decode") or [] if s["phase"] == phase]
    for step in steps:
        for s, t, text in zip(step["slots"], step["tokens"], step["token_texts"]):
            put(s, text, t, step["step"])
        for e in step.get("edits") or ():     # a written token rewritten (token editing)
            if 0 <= e["slot"] < L:
                old = slots[e["slot"]]
                slots[e["slot"]] = SlotToken(slot=e["slot"], text=e.get("new_text"),
                                             token=e["new_token"], step=old.step,
                                             by_search=old.by_search, edits=old.edits + 1,
                                             was=e.get("old_text"))
    ends = end_ids(trace)
    seen_eos = False
    for st in slots:
        if seen_eos:
            st.after_eos = True
        elif st.token is not None and st.token in ends:
            seen_eos = True
    return slots


def end_ids(trace: dict) -> set[int]:
    """Token ids that end an answer (EOS, and a chat model's end-of-turn)."""
    model = run_info(trace, "model") or {}
    ends = set(model.get("end_ids") or [])
    if model.get("eos_id") is not None:
        ends.add(model["eos_id"])
    return ends


def answer_end(trace: dict, which: str = "medal") -> int | None:
    """The slot of the first end token unmasked so far (the answer ends there; what
    follows is padding), or None while no end token is known."""
    ends = end_ids(trace)
    for st in slot_tokens(trace, which):
        if st.token is not None and st.step is not None and st.token in ends:
            return st.slot
    return None


def orders(trace: dict, which: str = "medal") -> list[int | None]:
    return [s.step for s in slot_tokens(trace, which)]


def order_summary(trace: dict) -> list[dict]:
    """One row per decoder: answer, verification, forward passes and time."""
    rows = []
    timing = trace.get("timing") or {}

    def row(name: str, res: dict | None, seconds, model_seconds=None) -> dict:
        if res is None:
            return {"decoder": name, "answer": "(running)", "text": "", "verified": "—",
                    "forwards": None, "sequences": None, "cache hits": None,
                    "standalone forwards": None, "seconds": None,
                    "model seconds": None}
        v = res.get("verified")
        return {"decoder": name, "answer": res.get("answer", ""), "text": res.get("text", ""),
                "verified": "✓ correct" if v else "✗ wrong" if v is False else "— (no verifier)",
                "forwards": res.get("forwards"), "sequences": res.get("sequence_forwards"),
                "cache hits": res.get("cache_hits"),
                # what it would cost on its own (the greedy comparison shares the run's cache)
                "standalone forwards": res.get("standalone_forwards", res.get("forwards")),
                "seconds": round(seconds, 3) if isinstance(seconds, (int, float)) else None,
                "model seconds": (round(model_seconds, 3)
                                  if isinstance(model_seconds, (int, float)) else None)}

    rows.append(row(run_info(trace, "strategy", ""), trace.get("result"), timing.get("seconds"),
                    timing.get("model_seconds")))
    if trace.get("comparison"):
        comp = trace["comparison"].get("result") or {}
        rows.append(row("greedy", trace["comparison"].get("result"),
                        timing.get("comparison_seconds"), comp.get("model_seconds")))
    return rows
