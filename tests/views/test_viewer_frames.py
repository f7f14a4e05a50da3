"""The viewer's frames (medal/viewer), without a browser: reward outliers flagged, Q
outside the colour scale clipped and marked, the siblings' UCB on the canvas during a
selection, node ids in every label, the winner's path at the end, and a live run's frames
equal to its replay's. (The browser side: tests/browser/test_viewer.py.)"""
from __future__ import annotations

import copy

import pytest

from medal.viewer import Frames, bundle, reward_outlier
from medal.examples import list_examples, load_example
from medal.timeline import positions
from viz_support import states

EXAMPLE = list_examples()[0]


@pytest.fixture(scope="module")
def trace():
    return load_example(EXAMPLE)


def test_a_reward_outlier_is_flagged_and_clipped(trace):
    """Issue 18 #7: r_IG = (0.014 - 0.862) / 0.014 = -59.96 -- the paper's formula divides
    by the parent's remaining entropy. The value is kept, flagged where it is shown, and
    its Q is drawn clipped (marked), so the other nodes keep their colours."""
    t = copy.deepcopy(trace)
    nodes = {n["id"]: n for n in t["tree"]["nodes"]}
    child = next(n for n in t["tree"]["nodes"] if n["depth"] == 2)
    parent = nodes[child["parent"]]
    parent["entropy_sum"] = 0.014
    child["r_ig"] = child["reward"] = -59.96
    for it in t["iterations"]:
        sim = it.get("simulation") or {}
        for k, c in enumerate(sim.get("children") or []):
            if c == child["id"]:
                sim["rewards"][k] = -59.96
        for u in (it.get("backpropagation") or {}).get("updates", []):
            if u["node"] == child["id"]:
                u["W"], u["Q"] = -59.96 * u["N"], -59.96
    child["W"], child["Q"] = -59.96 * child["N"], -59.96
    flag = reward_outlier(t, child["id"])
    assert flag and "0.014" in flag["text"] and "divides" in flag["text"]
    assert reward_outlier(trace, child["id"]) is None          # the shipped one is fine
    st = states(bundle(t))
    pos = positions(t)
    sim_at = next(i for i, p in enumerate(pos) if p.kind == "simulation"
                  and child["id"] in t["iterations"][p.iteration - 1]["simulation"]["children"])
    assert "⚠" in st[sim_at]["n"][str(child["id"])]["label"]
    last = st[-1]
    assert last["s"][str(child["id"])]["outlier"]
    assert "⇣" in last["n"][str(child["id"])]["label"]           # Q below the scale: marked
    assert last["v"]["legend"]["clipped"] >= 1
    # the other nodes keep the colours they had without the outlier
    plain = states(bundle(trace))[-1]
    others = [k for k in last["n"] if k.isdigit() and int(k) != child["id"]
              and int(k) not in node_path(nodes, child["id"])]
    assert others and all(last["n"][k]["color"]["background"] ==
                          plain["n"][k]["color"]["background"] for k in others)


def node_path(nodes, nid):
    out = []
    while nid is not None:
        out.append(nid)
        nid = nodes[nid].get("parent")
    return out


def test_labels_show_ids_and_the_siblings_ucb_during_a_selection(trace):
    st = states(bundle(trace))
    for i, p in enumerate(positions(trace)):
        for k, node in st[i].get("n", {}).items():
            if k.isdigit():
                assert node["label"].lstrip("★ ").startswith(f"#{k}")
        if p.kind == "selection":
            weighed = {r["node"] for lv in trace["iterations"][p.iteration - 1]["selection"]["levels"]
                       for r in lv}
            for nid in weighed:
                assert "UCB" in st[i]["n"][str(nid)]["label"]
        else:
            assert not any("UCB" in n["label"] for n in st[i].get("n", {}).values())


def test_the_end_shows_the_winners_path(trace):
    from medal.views.tree import WINNER_COLOUR
    last = states(bundle(trace))[-1]
    nodes = {n["id"]: n for n in trace["tree"]["nodes"]}
    path = node_path(nodes, trace["search"]["winner"])[::-1]
    red = {(e["from"], e["to"]) for e in last["e"].values() if e["color"]["color"] == WINNER_COLOUR}
    assert red == set(zip(path, path[1:]))
    assert last["h"]["0"]["focus"] == trace["search"]["winner"]


def test_a_live_run_sends_the_frames_of_its_replay():
    """Frames built position by position as a live run grows equal the replay's."""
    from medal.config import GenerationConfig
    from medal.engine import Run
    from medal.models import builtin_names, load_model
    if "countdown" not in builtin_names():
        pytest.skip("no built-in countdown model")
    run = Run(load_model("builtin:countdown"), problem={"numbers": [4, 18, 13], "target": 20},
              trace=True, config=GenerationConfig(lc=2, candidates=2))
    live = Frames("live")
    while not run.done:
        run.step()
        live.update(run.trace, final=run.done)
    replay = Frames("replay")
    replay.update(run.trace)
    assert states(live.bundle()) == states(replay.bundle())


def test_candidates_tab_compares_winner_and_runner_up_slot_by_slot():
    """Issue 19, item 4, in the viewer: the Candidates tab carries the winner against the
    runner-up slot by slot (medal.diff.compare_candidates): the slots whose token differs
    all listed, each slot's IG part, and the parts of every slot adding up to the
    difference of the two cumulative gains."""
    from medal.diff import compare_candidates
    checked = 0
    for ex in list_examples():
        t = load_example(ex)
        if not (t.get("search") or {}).get("candidates") or len(t["search"]["candidates"]) < 2:
            continue
        cands = states(bundle(t))[-1]["v"]["cands"]
        sc = cands["slots"]
        winner = next(r["node"] for r in cands["rows"] if r["_winner"])
        runner = max((r for r in cands["rows"] if not r["_winner"]), key=lambda r: r["_ig"])
        assert (sc["a"], sc["b"]) == (winner, runner["node"]), ex.name
        full = compare_candidates(t, sc["a"], sc["b"])
        assert sc["differing"] == full["differing_slots"]
        shown = {r["slot"] for r in sc["rows"]}
        assert set(full["differing_slots"][:40]) <= shown | set(full["differing_slots"][40:])
        assert abs(sum(r["ig_contribution"] for r in full["slots"]) - full["ig_difference"]) < 1e-9
        assert abs(sc["difference"] - (sc["ig"][0] - sc["ig"][1])) < 1e-5
        for r in sc["rows"]:
            want = next(x for x in full["slots"] if x["slot"] == r["slot"])
            assert r["IG part"] == pytest.approx(want["ig_contribution"], abs=1e-6)
        checked += 1
    assert checked >= 2
