"""Every figure the viewer shows is computed once, in Python, by medal.scores (issue 41
#6): the frames carry each node's UCB, its bonus and the UCB of the latest selection that
weighed it, and each action's score worked through; the viewer's script draws the numbers
it is given and does no UCB or entropy arithmetic of its own."""
from __future__ import annotations

import math

import pytest

from medal import scores
from medal.examples import list_examples, load_example
from medal.timeline import positions, trace_at
from medal.viewer import viewer_js
from medal.views.common import nodes_by_id, run_config
from medal.views.frames import bundle
from medal.views.inspector import last_selection_of
from viz_support import states


def _num(v):
    return round(v, 6) if math.isfinite(v) else None


@pytest.mark.parametrize("example", [e for e in list_examples() if e.name in (
    "countdown-longer-search", "sudoku", "countdown-medal-fixes-greedy")], ids=lambda e: e.name)
def test_every_ucb_on_screen_is_scores_ucb(example):
    trace = load_example(example)
    frames = states(bundle(trace))
    c = float(run_config(trace).get("c", 0.1))
    checked = 0
    for i, _pos in enumerate(positions(trace)):
        t = trace_at(trace, i)
        nodes = nodes_by_id(t)
        for nid, n in nodes.items():
            st = frames[i]["s"][str(nid)]
            parent = nodes.get(n.get("parent"))
            if parent is None:
                assert st["UCB"] is None and st["bonus"] is None
                continue
            assert st["UCB"] == _num(scores.ucb(n["Q"], parent["N"], n["N"], c))
            assert st["bonus"] == _num(scores.ucb_bonus(parent["N"], n["N"], c))
            last = last_selection_of(t, nid)
            if last is not None:
                _it, row = last
                assert st["last"][5] == _num(scores.ucb(row["Q"], row["parent_N"], row["N"], c))
                # and what the search itself recorded then
                assert st["last"][5] == (_num(row["ucb"]) if row["ucb"] is not None else None)
            checked += 1
    assert checked > 50


def test_every_action_score_on_screen_is_scores_confidence_score():
    trace = load_example(next(e for e in list_examples() if e.name == "countdown-longer-search"))
    last = states(bundle(trace))[-1]
    gamma = float(run_config(trace).get("gamma", 5.0))
    nodes = nodes_by_id(trace)
    checked = 0
    for key, card in last["a"].items():
        actions = {(a["slot"], a["token"]): a for a in nodes[int(key)].get("action_set") or []}
        for row in card["actions"]:
            a = next(a for a in actions.values() if a["slot"] == row["slot"]
                     and repr(a.get("token_text", a["token"])) == row["token"])
            want = scores.confidence_score(a["p"], a["entropy"], a["margin"], gamma)["s"]
            assert row["s (recomputed)"] == _num(want)
            # the search's own (float32, batched) score of the same action
            assert abs(want - a["score"]) <= 4 * 2 ** -24 * max(abs(want), 1e-30) + 1e-12
            checked += 1
    assert checked > 20


def test_the_viewer_script_does_no_score_arithmetic():
    js = viewer_js()
    for op in ("Math.log", "Math.sqrt", "Math.exp"):
        assert op not in js, f"the viewer computes {op}: take the figure from the frame"
