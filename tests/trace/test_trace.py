import json
import math

import pytest
import torch

from medal.config import GenerationConfig
from medal.engine import Run
from medal.errors import TraceError
from medal.scores import confidence_scores, information_gain, ucb
from medal.trace import (MAX_TRACE_BYTES, dumps, jsonable, load_trace, loads_trace,
                         validate_trace, write_trace)

PROBLEM = {"numbers": [4, 18, 13], "target": 20}


@pytest.fixture(scope="module")
def medal_trace(tiny_model):
    run = Run(tiny_model, problem=PROBLEM, strategy="medal",
              config=GenerationConfig(seed=0, lc=3), trace=True, compare_greedy=True)
    run.finish()
    return json.loads(dumps(run.trace))


def test_round_trip(tmp_path, medal_trace):
    path = tmp_path / "t.json"
    write_trace(medal_trace, path)
    assert load_trace(path) == medal_trace


def test_recorded_figures_recompute(medal_trace):
    cfg = medal_trace["run"]["config"]
    nodes = medal_trace["tree"]["nodes"]
    for node in nodes:
        for a in node["action_set"]:  # scores recompute from p, H, margin, gamma
            s = confidence_scores(torch.tensor([[a["p"]]]), torch.tensor([a["entropy"]]),
                                  torch.tensor([a["margin"]]), cfg["gamma"])
            assert s.item() == pytest.approx(a["score"], rel=1e-5)
            top = node["top"][a["slot"]]
            assert a["margin"] == pytest.approx(top[0]["p"] - top[1]["p"], abs=1e-6)
        if node["parent"] is not None:  # rewards recompute from the recorded entropies
            parent = nodes[node["parent"]]
            H_parent = torch.tensor([h or 0.0 for h in parent["entropy"]])
            H_child = torch.tensor([h or 0.0 for h in node["entropy"]])
            r = information_gain(H_parent, torch.tensor(parent["masked"]), H_child,
                                 node["action"]["slot"])
            assert r == pytest.approx(node["r_ig"], rel=1e-5)
    for it in medal_trace["iterations"]:  # UCB recomputes from N, Q and c
        for level in it["selection"]["levels"]:
            for row in level:
                assert row["ucb"] == pytest.approx(ucb(row["Q"], row["parent_N"], row["N"], cfg["c"]))
        assert it["expansion"]["forwards"] <= 1


def test_trace_has_the_views_data(medal_trace):
    assert medal_trace["search"]["winner"] in medal_trace["search"]["candidates"]
    assert medal_trace["search"]["why"]
    assert medal_trace["comparison"]["result"]["order"]
    assert medal_trace["decode"] and medal_trace["comparison"]["steps"]
    assert medal_trace["run"]["versions"]["torch"]
    assert medal_trace["stats"]["mcts_forwards"] <= 1 + len(medal_trace["iterations"])


def test_nan_and_tensors_become_plain_json():
    data = jsonable({"a": float("nan"), "b": torch.tensor(2.5), "c": [math.inf, torch.tensor([1, 2])]})
    assert data == {"a": None, "b": 2.5, "c": [None, [1, 2]]}
    json.dumps(data, allow_nan=False)


def test_bad_files_say_what_is_wrong(tmp_path, medal_trace):
    with pytest.raises(TraceError, match="not valid JSON"):
        loads_trace("{nope")
    with pytest.raises(TraceError, match="not a MEDAL trace"):
        loads_trace('{"hello": 1}')
    bad = dict(medal_trace, version=99)
    with pytest.raises(TraceError, match="version 99"):
        validate_trace(bad)
    broken = json.loads(json.dumps(medal_trace))
    broken["tree"]["nodes"][1]["N"] = "many"
    with pytest.raises(TraceError, match="tree/nodes/1/N"):
        validate_trace(broken)
    with pytest.raises(TraceError, match="limit"):
        loads_trace("x" * 100, max_bytes=10)
    with pytest.raises(TraceError, match="no trace file"):
        load_trace(tmp_path / "missing.json")
    assert MAX_TRACE_BYTES >= len(dumps(medal_trace))
