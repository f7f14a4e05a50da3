"""The beam view's data (medal/views/beam.py, issue 38 item 4): an OTS or SOAR run's beam
tree as the viewer draws it, checked against the trace it comes from -- every node, its
kept flag, the winner's path, what each node committed, its figures, and which node each
timeline position's decode step replays; carried in the viewer's bundle (meta.beam) for
these strategies only."""
from __future__ import annotations

import json

import pytest

from medal.config import GenerationConfig
from medal.engine import Run
from medal.timeline import positions
from medal.trace import dumps, loads_trace
from medal.views import beam as bv
from medal.views.common import fmt, visible_token
from medal.views.frames import bundle

PROBLEM = "Use 4, 18, 13 to make 27."


@pytest.fixture(scope="module")
def traces(builtin_model):
    out = {}
    for strategy, cfg in (("soar", dict(soar_threshold=0.99)),
                          ("ots", dict(ots_beams=3, ots_temperature=0.7, seed=3)),
                          ("greedy", {})):
        run = Run(builtin_model, task="countdown", prompt=PROBLEM, strategy=strategy,
                  config=GenerationConfig(**cfg), trace=True, compare_greedy=True)
        run.finish()
        out[strategy] = loads_trace(dumps(run.trace))
    return out


@pytest.mark.parametrize("strategy", ["soar", "ots"])
def test_beam_data_is_the_traces_tree(traces, strategy):
    trace = traces[strategy]
    beam = trace["result"]["beam_search"]
    data = bv.beam_view(trace)
    assert data["algorithm"] == strategy and data["why"] == beam["why"]
    # every node once, with its parent as an edge, kept flags the trace's
    assert [n["id"] for n in data["nodes"]] == [n["id"] for n in beam["nodes"]]
    assert sorted((e["from"], e["to"]) for e in data["edges"]) == sorted(
        (n["parent"], n["id"]) for n in beam["nodes"] if n["parent"] is not None)
    assert [n["kept"] for n in data["nodes"]] == [n["kept"] for n in beam["nodes"]]
    assert any(not n["kept"] for n in beam["nodes"])     # a pruned node to grey
    # the winner's path: parent links from the winner, and it is what the decode replays
    path, nid = [], beam["winner"]
    while nid is not None:
        path.append(nid)
        nid = beam["nodes"][nid]["parent"]
    path.reverse()
    assert data["path"] == path and path[0] == 0 and data["winner"] == beam["winner"]
    assert [(d["slots"], d["tokens"]) for d in trace["decode"]] == \
        [(beam["nodes"][i]["slots"], beam["nodes"][i]["tokens"]) for i in path[1:]]
    on = {n["id"] for n in data["nodes"] if n["win"]}
    assert on == set(path)
    for n in data["nodes"]:
        colour = n["color"]["background"]
        assert colour == (bv.WIN_BACKGROUND if n["id"] in on else bv.KEPT_BACKGROUND
                          if n["kept"] else bv.PRUNED_BACKGROUND)
    assert all(e["color"]["color"] == bv.WIN_EDGE for e in data["edges"]
               if (e["from"], e["to"]) in set(zip(path, path[1:])))
    # the winner's path a straight row; each step a column
    xy = {n["id"]: (n["x"], n["y"]) for n in data["nodes"]}
    assert {xy[i][1] for i in path} == {0}
    assert all(xy[n["id"]][0] == n["step"] * bv.STEP_GAP for n in beam["nodes"])
    assert len(set(xy.values())) == len(xy)                # no two nodes on one spot


@pytest.mark.parametrize("strategy", ["soar", "ots"])
def test_each_node_says_what_it_committed_with_the_traces_figures(traces, strategy):
    beam = traces[strategy]["result"]["beam_search"]
    data = {n["id"]: n for n in bv.beam_view(traces[strategy])["nodes"]}
    several = 0
    for n in beam["nodes"][1:]:
        d = data[n["id"]]
        lines = d["label"].split("\n")
        assert lines[0] == f"#{n['id']}"
        shown = min(len(n["slots"]), bv.LABEL_TOKENS)
        assert lines[1:1 + shown] == [f"{visible_token(t)[:bv.LABEL_TOKEN_CHARS]}@{s}"
                                      for s, t in list(zip(n["slots"], n["token_texts"]))[:shown]]
        if len(n["slots"]) > bv.LABEL_TOKENS:
            assert lines[-1] == f"+{len(n['slots']) - bv.LABEL_TOKENS} more"
        several += len(n["slots"]) > 1
        tip = "\n".join(d["tip"])
        assert f"score = {fmt(n['score'])}" in tip
        for s, p in zip(n["slots"], n["p"]):
            assert f"slot {s}: " in tip and f"p = {fmt(p)}" in tip
        if n["block_score"] is not None:
            assert f"block score = {fmt(n['block_score'])}" in tip
        assert n["sequence"] in tip
    if strategy == "soar":
        assert several > 0         # a parallel step: several token@slot on one node


@pytest.mark.parametrize("strategy", ["soar", "ots"])
def test_each_position_marks_the_node_its_decode_step_replays(traces, strategy):
    trace = traces[strategy]
    data = bv.beam_view(trace)
    pos = positions(trace)
    assert len(data["at"]) == len(pos)
    for p, at in zip(pos, data["at"]):
        if p.kind == "decode":
            assert at == data["path"][p.index + 1]
        elif p.kind == "started":
            assert at == 0
        else:
            assert at == data["winner"]           # the greedy comparison, the end


def test_the_bundle_carries_the_beam_view_for_beam_searches_only(traces):
    for strategy in ("soar", "ots"):
        meta = bundle(traces[strategy])["meta"]
        assert meta["beam"] == json.loads(json.dumps(bv.beam_view(traces[strategy])))
    assert "beam" not in bundle(traces["greedy"])["meta"]
    assert bv.beam_view(traces["greedy"]) is None
    # the one viewer script draws it in every host: the app (components.viewer_lib), the
    # export and the notebook (html_page.page) all join viewer-beam.js
    from medal.viewer import show, viewer_js
    assert "drawBeam" in viewer_js() and "drawBeam" in show(traces["soar"]).html()


def test_markup_in_a_token_stays_text_for_the_viewer(traces):
    """The viewer draws labels with markup off and writes tooltips as text; the data keeps
    a token's characters as they are (no escaping to double-escape, no tags added)."""
    trace = json.loads(json.dumps(traces["soar"]))
    beam = trace["result"]["beam_search"]
    first = bv.winner_path(beam)[1]
    beam["nodes"][first]["token_texts"][0] = "<b>x</b>"
    data = bv.beam_view(trace)
    node = next(n for n in data["nodes"] if n["id"] == first)
    assert "<b>x</b>@" in node["label"] and any("<b>x</b>" in t for t in node["tip"])
    assert data["options"]["nodes"]["font"]["multi"] is False


@pytest.mark.parametrize("strategy", ["soar", "ots", "greedy"])
def test_a_run_without_mcts_names_no_search_settings(traces, strategy):
    """The header names L_c, C and c only for a run that searched with MCTS: an OTS, SOAR
    or greedy run's bundle carries none (it showed the config's unused L_c=2, C=3)."""
    meta = bundle(traces[strategy])["meta"]
    assert (meta["lc"], meta["C"], meta["c"]) == (None, None, None)
    assert meta["config"]["lc"] == traces[strategy]["run"]["config"]["lc"]   # still listed


def test_an_mcts_run_names_its_search_settings():
    from pathlib import Path

    from medal.trace import load_trace
    path = Path(__file__).resolve().parents[2] / "medal/assets/examples/countdown-large-search.json"
    trace = load_trace(path)
    cfg = trace["run"]["config"]
    assert (bundle(trace)["meta"]["lc"], bundle(trace)["meta"]["C"]) == (cfg["lc"], cfg["candidates"])
