"""The stricter trace gate (issue 21, "Safe under load", item 4 of the report and the
first item of "What to build"): what is impossible or breaks the views is refused, with
the failing place named; the one size limit reads the same everywhere.

The reproducers of the issue are kept (gzipped) in tests/data/hostile/; the rest are
made here from a real trace of the built-in model.
"""
from __future__ import annotations

import copy
import gzip
import json
from pathlib import Path

import pytest

from medal.config import GenerationConfig
from medal.engine import Run
from medal.errors import TraceError
from medal.trace import MAX_TRACE_BYTES, dumps, load_trace, loads_trace, size_text
from medal.trace.gate.bounds import check_cost, render_units
from medal.trace.limits import MAX_PROMPT, MAX_STRING

HOSTILE = Path(__file__).resolve().parents[1] / "data" / "hostile"
PROBLEM = {"numbers": [4, 18, 13], "target": 20}


def hostile(name: str) -> bytes:
    return gzip.decompress((HOSTILE / f"{name}.gz").read_bytes())


@pytest.fixture(scope="module")
def good(builtin_model):
    run = Run(builtin_model, problem=PROBLEM, strategy="medal",
              config=GenerationConfig(seed=0, max_iterations=6, candidates=2, lc=2),
              trace=True, compare_greedy=True)
    run.finish()
    return json.loads(dumps(run.trace))


def refused(trace: dict, *match: str) -> str:
    with pytest.raises(TraceError) as info:
        loads_trace(json.dumps(trace))
    for m in match:
        assert m in str(info.value), str(info.value)
    return str(info.value)


def test_the_good_trace_passes(good):
    assert loads_trace(json.dumps(good))["run"]["strategy"] == "medal"


def test_duplicate_keys_are_refused(good):
    text = json.dumps(good)
    twice = text.replace('"strategy": "medal"', '"strategy": "greedy", "strategy": "medal"', 1)
    with pytest.raises(TraceError, match="appears twice"):
        loads_trace(twice)


@pytest.mark.parametrize("where, value, words", [
    (("tree", "nodes", 1, "N"), 2 ** 64 - 1, ["tree/nodes/1"]),
    (("tree", "nodes", 1, "top", None, 0, "p"), -1e308, ["tree/nodes/1/top"]),
    (("tree", "nodes", 1, "top", None, 0, "p"), -0.5, ["tree/nodes/1/top", "probability"]),
    (("tree", "nodes", 1, "entropy", None), 1e308, ["tree/nodes/1"]),
    (("tree", "nodes", 1, "entropy", None), -1e308, ["tree/nodes/1"]),
    (("tree", "nodes", 1, "entropy", None), 1e3, ["entropy"]),
    (("tree", "nodes", 1, "action", "p"), 1.5, ["probability"]),
    (("tree", "nodes", 1, "Q"), 0.123456, ["W / N"]),
])
def test_impossible_numbers_are_refused(good, where, value, words):
    bad = copy.deepcopy(good)
    target = bad
    for key in where[:-1]:
        if key is None:  # the first masked slot (entries of unmasked slots are null)
            key = next(i for i, v in enumerate(target) if v is not None)
        target = target[key]
    last = where[-1]
    if last is None:
        last = next(i for i, v in enumerate(target) if v is not None)
    target[last] = value
    refused(bad, *words)


def test_visits_beyond_what_the_iterations_give_are_refused(good):
    bad = copy.deepcopy(good)
    node = bad["tree"]["nodes"][1]
    node["N"] = 10 ** 9
    node["W"] = node["Q"] * node["N"]
    refused(bad, "tree/nodes/1/N", "visits")


def test_the_winner_is_one_of_the_candidates(good):
    bad = copy.deepcopy(good)
    others = [n["id"] for n in bad["tree"]["nodes"] if n["id"] not in bad["search"]["candidates"]]
    bad["search"]["winner"] = others[-1]
    refused(bad, "search/winner", "not one of the candidates")


def test_a_candidate_is_scored_once(good):
    """CI's fuzz campaign (28 Nov): search.candidate_scores grown 2,000-fold (4,000 records
    for 2 candidates) passed the gate, and the frames listed them at every position after
    the choice -- more than 10^8 Python lines (5 CPU-s) for an 11-node search."""
    bad = copy.deepcopy(good)
    bad["search"]["candidate_scores"] = bad["search"]["candidate_scores"] * 2000
    refused(bad, "search/candidate_scores", "scores a node twice")
    bad["search"]["candidate_scores"] = good["search"]["candidate_scores"][:1] * 2
    refused(bad, "search/candidate_scores", "scores a node twice")


def test_decode_steps_are_bounded_by_gen_length(good):
    """The reproducer had 3,028 steps for 28 slots (a quadratic export)."""
    bad = copy.deepcopy(good)
    bad["decode"] = bad["decode"] + [copy.deepcopy(bad["decode"][-1]) for _ in range(40)]
    refused(bad, "decode/", "decoding steps", "gen_length")


def test_long_strings_are_refused(good):
    bad = copy.deepcopy(good)
    bad["run"]["strategy"] = "medal" + "x" * 1_000_000   # the 1 MB reproducer
    refused(bad, "run/strategy")
    bad = copy.deepcopy(good)
    bad["run"]["prompt"] = "Use 4, 18, 13 to make 20." * (MAX_PROMPT // 10)
    refused(bad, "run/prompt", f"{MAX_PROMPT:,}")
    bad = copy.deepcopy(good)
    bad["search"]["why"] = "because " * MAX_STRING          # any other text: MAX_STRING
    refused(bad, "search/why", f"{MAX_STRING:,}")
    bad = copy.deepcopy(good)
    bad["decode"][0]["token_texts"][0] = "t" * 500
    refused(bad, "decode/0/token_texts/0")


def test_deep_nesting_in_a_node_is_refused_and_the_download_never_recurses():
    """The reproducer: 500 levels under an extra key of a node; the download
    (medal.trace.dumps) raised RecursionError."""
    with pytest.raises(TraceError, match="tree/nodes/1/extra.*nested more than 64"):
        loads_trace(hostile("trace_download_recursion_nested_500_in_node.json"))


def test_an_unvisited_node_exports(tmp_path):
    """A non-root node with N = 0 is drawn safely: its UCB is infinite, shown as "∞"
    (the export raised 'Out of range float values are not JSON compliant')."""
    from medal.viewer.export import export_html
    trace = loads_trace(hostile("trace_export_crash_unvisited_node.json"))
    assert any(n["N"] == 0 for n in trace["tree"]["nodes"][1:])
    page = export_html(trace)
    assert page.startswith("<!DOCTYPE html>")


def test_an_unvisited_node_has_no_reward_sum(good):
    bad = copy.deepcopy(good)
    node = bad["tree"]["nodes"][1]
    node.update(N=0, W=0.5, Q=0.0)
    refused(bad, "tree/nodes/1", "N = 0")


def test_one_size_limit_with_an_exact_message(tmp_path):
    assert MAX_TRACE_BYTES == 20 * 2 ** 20
    want = "21,000,000 bytes; the limit is 20,971,520 bytes (20 MiB)"
    assert size_text(21_000_000, MAX_TRACE_BYTES) == want
    with pytest.raises(TraceError) as info:
        loads_trace(b" " * 21_000_000)
    assert want in str(info.value)
    path = tmp_path / "big.json"
    path.write_bytes(b" " * 21_000_000)
    with pytest.raises(TraceError) as info:
        load_trace(path)
    assert want in str(info.value)


def test_the_uploader_and_the_gate_agree():
    """The web uploader (megabytes of 10**6 bytes in the browser, 2**20 on the server)
    accepts everything the gate accepts, and at most 1 MB more, which the gate then
    refuses with its exact message; `medal app` passes the operator's limit."""
    from medal import serving
    for mb in (1, 20, 64, 500):
        settings = serving.parse_settings(environ={"MEDAL_MAX_TRACE_MB": str(mb)}, argv=[])
        up = serving.upload_mb(settings.max_trace_bytes)
        assert settings.max_trace_bytes <= up * 10 ** 6 < settings.max_trace_bytes + 10 ** 6
    assert serving.STREAMLIT_OPTIONS["server.maxUploadSize"] == serving.upload_mb(MAX_TRACE_BYTES)
    toml = (Path(__file__).resolve().parents[2] / ".streamlit" / "config.toml").read_text()
    assert f"maxUploadSize = {serving.upload_mb(MAX_TRACE_BYTES)}" in toml
    with pytest.raises(Exception, match="MEDAL_MAX_TRACE_MB"):
        serving.parse_settings(environ={"MEDAL_MAX_TRACE_MB": "0"}, argv=[])


def test_medal_app_passes_the_trace_limit_to_the_uploader(monkeypatch):
    from medal import cli
    seen = {}

    def fake_main():
        import sys
        seen["argv"] = list(sys.argv)
        return 0
    import streamlit.web.cli as st_cli
    monkeypatch.setattr(st_cli, "main", fake_main)
    monkeypatch.setattr("sys.argv", ["medal"])
    assert cli.main(["app", "--max-trace-mb", "64"]) == 0
    argv = seen["argv"]
    assert argv[argv.index("--server.maxUploadSize") + 1] == str(-(-64 * 2 ** 20 // 10 ** 6))
    assert argv[argv.index("--") + 1:] == ["--max-trace-mb", "64"]


def test_millions_of_empty_arrays_are_refused_before_parsing(monkeypatch):
    """The issue's 6 MB file of 2 million empty arrays cost 781 MB and 4 s in the gate:
    the number of arrays is counted before anything is parsed."""
    import importlib
    import json
    parse_module = importlib.import_module("medal.trace.gate.parse")
    text = b'{"format": "medal-trace", "version": 1, "stats": [' + b"[]," * 2_000_000 + b"[]]}"
    parsed: list = []          # counted, not timed (issue 40): the parser is never called

    class Counted:             # the gate's own json module, its parser counted
        def __getattr__(self, name):
            return getattr(json, name)

        def loads(self, *a, **k):
            parsed.append(1)
            return json.loads(*a, **k)
    monkeypatch.setattr(parse_module, "json", Counted())
    with pytest.raises(TraceError, match="arrays and objects"):
        loads_trace(text)
    assert parsed == []


def test_a_trace_too_costly_to_draw_is_refused_before_drawing(good):
    units = render_units(good)
    check_cost(good, most=units)
    with pytest.raises(TraceError, match="would cost"):
        check_cost(good, most=units - 1)


def test_the_model_record_holds_ids(good):
    """Fuzzing found it: ``run.model.end_ids`` of lists (or an ``eos_id`` that is a list)
    passed the gate and the views failed on them (TypeError: unhashable type: 'list')."""
    for key, value in (("end_ids", [[1, 2]]), ("eos_id", [2]), ("end_ids", "2"),
                       ("vocab_size", 0)):
        bad = copy.deepcopy(good)
        bad["run"]["model"][key] = value
        refused(bad, f"run/model/{key}")
