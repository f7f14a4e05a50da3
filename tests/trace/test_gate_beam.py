"""The gate checks a beam search's record (issue 38, item 4: medal/trace/gate/beam.py).

Real SOAR and Order-Token Search traces from the shipped Countdown model pass, written and
read back as files; each tampering of ``result.beam_search`` is refused with one line that
names the field and says what it must be."""
from __future__ import annotations

import copy
import json

import pytest

from medal.config import GenerationConfig
from medal.engine import Run
from medal.errors import TraceError
from medal.trace import dumps, load_trace, loads_trace, write_trace
from medal.trace.gate import beam as gate_beam

PROBLEM = "Use 4, 18, 13 to make 27."


@pytest.fixture(scope="module")
def beam_traces(builtin_model):
    """A finished SOAR trace and OTS trace (with the greedy comparison) from the shipped
    model, as JSON text. SOAR at threshold 0.99 branches on several steps, so its tree has
    pruned nodes; OTS's search steps have K^2 = 9 candidates at the root."""
    out = {}
    for strategy, cfg in (("soar", dict(soar_threshold=0.99)),
                          ("ots", dict(ots_beams=3, ots_temperature=0.7))):
        run = Run(builtin_model, task="countdown", prompt=PROBLEM, strategy=strategy,
                  config=GenerationConfig(seed=3, **cfg), trace=True, compare_greedy=True)
        run.finish()
        out[strategy] = dumps(run.trace)
    return out


def tampered(text: str, change) -> str:
    data = json.loads(text)
    change(data["result"]["beam_search"], data)
    return json.dumps(data)


@pytest.mark.parametrize("strategy", ["soar", "ots"])
def test_real_beam_traces_pass_the_gate(beam_traces, tmp_path, strategy):
    data = json.loads(beam_traces[strategy])
    beam = data["result"]["beam_search"]
    assert beam["algorithm"] == strategy
    pruned = [n for n in beam["nodes"] if not n["kept"]]
    assert pruned, "the fixture's search pruned nothing: the kept checks would test little"
    write_trace(data, tmp_path / "t.json")          # the written (packed) form
    again = load_trace(tmp_path / "t.json")
    assert again["result"]["beam_search"] == beam
    assert loads_trace(beam_traces[strategy])["result"]["beam_search"] == beam


def _cycle(b, d):
    b["nodes"][2]["parent"], b["nodes"][3]["parent"] = 3, 2


def _grow_nodes(b, d):
    b["nodes"] = b["nodes"] * 200


def _grow_steps(b, d):
    b["steps"] = b["steps"] * 50


def _dup_token(b, d):
    b["nodes"][1]["tokens"].append(b["nodes"][1]["tokens"][0])


TAMPERINGS = {
    # (what is changed, the refusal's field, a phrase of its message)
    "parent cycle": (_cycle, "result/beam_search/nodes/2/parent", "is not an earlier node"),
    "own parent": (lambda b, d: b["nodes"][4].update(parent=4),
                   "result/beam_search/nodes/4/parent", "is not an earlier node"),
    "a second root": (lambda b, d: b["nodes"][3].update(parent=None),
                      "result/beam_search/nodes/3/parent", "only the root has none"),
    "unknown winner": (lambda b, d: b.update(winner=12345),
                       "result/beam_search/winner", "is not a node of the final beam"),
    "pruned winner": (lambda b, d: b.update(winner=next(n["id"] for n in b["nodes"]
                                                        if not n["kept"])),
                      "result/beam_search/winner", "is not a node of the final beam"),
    "slot out of range": (lambda b, d: b["nodes"][1]["slots"].__setitem__(0, 10 ** 6),
                          "result/beam_search/nodes/1/slots/0", "outside the answer (0..27)"),
    "negative slot": (lambda b, d: b["nodes"][1]["slots"].__setitem__(0, -1),
                      "result/beam_search/nodes/1/slots/0", "outside the answer"),
    "unequal lists": (_dup_token, "result/beam_search/nodes/1/tokens", "one per slot"),
    "probability above 1": (lambda b, d: b["nodes"][1]["p"].__setitem__(0, 1.5),
                            "result/beam_search/nodes/1/p/0", "is not a probability"),
    "text as a token": (lambda b, d: b["nodes"][1]["tokens"].__setitem__(0, "7"),
                        "result/beam_search/nodes/1/tokens/0", "whole number"),
    "oversized: nodes x200": (_grow_nodes, "result/beam_search/nodes", "make at most"),
    "oversized: steps x50": (_grow_steps, "result/beam_search/steps", "at most that many"),
    "kept flag flipped": (lambda b, d: b["nodes"][next(n["id"] for n in b["nodes"]
                                                       if not n["kept"])].update(kept=True),
                          "kept", "the steps' kept lists say False"),
    "step names a missing node": (lambda b, d: b["steps"][0]["kept"].__setitem__(0, 999),
                                  "result/beam_search/steps/0/kept/", "is not in the beam tree"),
    "a score not from its rule": (lambda b, d: b["nodes"][1].update(
        score=b["nodes"][1]["score"] + 0.5), "result/beam_search/nodes/1/score", "parent's"),
    "answer not the parent's plus its slots": (
        lambda b, d: b["nodes"][1]["answer_ids"].__setitem__(
            next(s for s in range(28) if s not in b["nodes"][1]["slots"]), 7),
        "result/beam_search/nodes/1/answer_ids/", "not one of the node's slots"),
    "not a beam strategy": (lambda b, d: (d["run"].update(strategy="greedy"),
                                          d["result"].update(strategy="greedy")),
                            "run/strategy", "only ots and soar"),
    "another algorithm": (lambda b, d: b.update(algorithm="medal"),
                          "result/beam_search/algorithm", "is not the run's strategy"),
    "settings not the run's": (lambda b, d: b["settings"].update(
        {next(iter(b["settings"])): 63}), "result/beam_search/settings/", "run's settings"),
    "decode steps not the winner's path": (
        lambda b, d: d["decode"].pop(), "decode", "the winner's path"),
    "stats lie": (lambda b, d: b["stats"].update(nodes=1),
                  "result/beam_search/stats/nodes", "the record holds"),
}


@pytest.mark.parametrize("strategy", ["soar", "ots"])
@pytest.mark.parametrize("name", sorted(TAMPERINGS))
def test_tampered_beam_search_is_refused_naming_the_field(beam_traces, strategy, name):
    change, where, phrase = TAMPERINGS[name]
    bad = tampered(beam_traces[strategy], change)
    with pytest.raises(TraceError) as info:
        loads_trace(bad)
    message = str(info.value)
    assert "\n" not in message and where in message and phrase in message, message


def test_the_beam_view_is_charged_against_the_render_budget(beam_traces, monkeypatch):
    """The beam nodes cost render units as the MCTS tree's nodes do: a budget one unit
    below this trace's whole cost refuses it, naming the beam nodes."""
    from medal.trace.gate.bounds import render_units
    data = loads_trace(beam_traces["soar"])
    beam = data["result"]["beam_search"]
    L = data["run"]["config"]["gen_length"]
    units = gate_beam.beam_units(beam, L)
    assert units >= len(beam["nodes"]) * (2 * L + 1)
    total = render_units(data) + units
    monkeypatch.setattr(gate_beam, "MAX_RENDER_UNITS", total)
    gate_beam.check_beam(copy.deepcopy(data))
    monkeypatch.setattr(gate_beam, "MAX_RENDER_UNITS", total - 1)
    with pytest.raises(TraceError, match=r"result/beam_search/nodes: drawing this trace "
                                         r"would cost [\d,]+ units \(its \d+ beam nodes"):
        gate_beam.check_beam(data)
