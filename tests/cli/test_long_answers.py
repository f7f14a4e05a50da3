"""A real-length answer through every path a user takes (issue 27 item 1).

A trace's ``text`` names a token's text *and* a whole answer; the gate once held both to
200 characters, so no trace of a real model's answer could be written (`medal generate
--trace` exited 2 and wrote nothing). Here: tiny random-weight LLaDA and Dream with the
real configs and tokenizers (tests/data/real-models), 256 answer slots, whose random
answers run to thousands of characters, through ``medal generate --trace``, the gate,
the viewer, ``medal export``, ``medal diff``, ``medal repro``, the app's live run and
upload, and lm-eval's ``trace_dir``.
"""
from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from work import HANG

import standins
from medal import cli
from medal.errors import TraceError
from medal.trace import dumps, load_trace, loads_trace
from medal.trace.gate.bounds import answer_chars
from medal.trace.limits import MAX_STRING, MAX_TOKEN_TEXT

ROOT = Path(__file__).resolve().parents[2]
SLOTS = 256
PROMPT = "Use 3, 7, 12 to make 33."
#: 256 slots decoded in 4 steps and a one-level search: the paths, not the search, are
#: under test (each forward computes 256 x 126k-152k logits on the CPU)
RUN = ["--gen-length", str(SLOTS), "--steps", "4", "--lc", "1", "--candidates", "1",
       "--k2", "2", "--max-iterations", "2", "--seed", "0"]


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    root = tmp_path_factory.mktemp("long")
    return {f: standins.save_checkpoint(root / f, f, "native", seed=0) for f in ("llada", "dream")}


@pytest.fixture(scope="module")
def traces(checkpoints, tmp_path_factory):
    """``medal generate --trace`` at 256 slots: MEDAL (with greedy beside it) per family."""
    out = tmp_path_factory.mktemp("long-traces")
    paths = {}
    for family, folder in checkpoints.items():
        path = out / f"{family}.json"
        assert cli.main(["generate", "--model", f"{family}:{folder}", "--prompt", PROMPT,
                         "--strategy", "medal", *RUN, "--trace", str(path)]) == 0
        paths[family] = path
    return paths


def long_texts(trace) -> list[str]:
    res = trace["result"]
    return [res["text"], trace["comparison"]["result"]["text"]]


@pytest.mark.parametrize("family", ["llada", "dream"])
def test_generate_writes_a_256_slot_trace_the_gate_reads(traces, family):
    trace = load_trace(traces[family])
    assert trace["run"]["config"]["gen_length"] == SLOTS
    texts = long_texts(trace)
    # the bug: any answer over 200 characters was refused; these are thousands long
    assert all(len(t) > 5 * MAX_TOKEN_TEXT for t in texts), [len(t) for t in texts]
    # token texts are still a token's: the longest top entry's text is one token
    top = [e["text"] for n in trace["tree"]["nodes"] for row in n["top"] for e in row or ()]
    assert top and max(map(len, top)) <= MAX_TOKEN_TEXT


def test_the_viewer_and_export_draw_the_long_answer(traces, tmp_path):
    from medal.viewer import Frames
    trace = load_trace(traces["llada"])
    answer = trace["result"]["text"]
    frames = Frames("long")
    frames.update(trace)
    assert answer in json.dumps(frames.bundle(), ensure_ascii=False)
    out = tmp_path / "long.html"
    assert cli.main(["export", str(traces["llada"]), str(out)]) == 0
    from viz_support import export_data      # the page's frames (gzipped JSON inside it)
    assert answer in json.dumps(export_data(out.read_text(encoding="utf-8")), ensure_ascii=False)


def test_diff_and_repro_take_long_answers(traces, checkpoints, capsys):
    path = str(traces["dream"])
    assert cli.main(["diff", path, path]) == 0
    assert "identical" in capsys.readouterr().out.lower()
    assert cli.main(["repro", path, "--model", f"dream:{checkpoints['dream']}"]) == 0
    assert capsys.readouterr().out.strip().endswith(": identical")   # re-run, diffed


def test_lm_eval_trace_dir_holds_long_answers(checkpoints, tmp_path):
    pytest.importorskip("lm_eval")
    from lm_eval.api.instance import Instance

    from medal.lm_eval.model import MedalLM
    lm = MedalLM(model=f"llada:{checkpoints['llada']}", device="cpu", strategy="greedy",
                 gen_length=SLOTS, steps=4, trace_dir=str(tmp_path / "traces"))
    req = Instance(request_type="generate_until", doc={}, arguments=(PROMPT, {"until": []}),
                   idx=0)
    [answer] = lm.generate_until([req], disable_tqdm=True)
    written = sorted((tmp_path / "traces").glob("*.trace.json"))
    assert len(written) == 1
    trace = load_trace(written[0])
    assert len(trace["result"]["text"]) > 5 * MAX_TOKEN_TEXT
    assert answer in trace["result"]["text"] or trace["result"]["answer"] == answer


def test_the_app_uploads_and_runs_a_long_answer(traces, checkpoints, monkeypatch):
    pytest.importorskip("streamlit")
    from viz_support import Press, upload
    from viz_support import app_test
    spec = f"llada:{checkpoints['llada']}"
    monkeypatch.setenv("MEDAL_MODELS", spec)
    monkeypatch.setenv("MEDAL_MAX_GEN_LENGTH", str(SLOTS))
    # 256 x 126k logits a forward: more than the default per-run budget of a laptop demo
    monkeypatch.setenv("MEDAL_RUN_MEMORY_MB", "8000")
    monkeypatch.setenv("MEDAL_RUN_CPU_SECONDS", "1200")
    at = app_test(ROOT / "app.py", source="upload", timeout=HANG).run()
    upload(at, "long.json", traces["llada"].read_bytes())
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.session_state["uploaded"][1]["result"]["text"] == \
        load_trace(traces["llada"])["result"]["text"]

    at = app_test(ROOT / "app.py", timeout=HANG).run()
    at.selectbox(key="w_model").set_value(spec).run()
    at.selectbox(key="w_strategy").set_value("greedy")
    for name, value in {"gen_length": SLOTS, "steps": 4}.items():
        at.number_input(key=f"w_{name}").set_value(value)
    Press(at, "Run to end").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    run = at.session_state["run"]
    assert run.result is not None and len(run.result.text) > 5 * MAX_TOKEN_TEXT
    loads_trace(dumps(run.trace))       # the live run's trace downloads through the gate


# ---------------------------------------------------------------------- the limits themselves

def _good():
    from viz_support import make_trace
    return make_trace(lc=2, candidates=2)


def test_each_string_has_the_limit_of_what_it_holds():
    good = _good()
    L = good["run"]["config"]["gen_length"]
    # an answer's text: gen_length slots of a token's longest text, at least MAX_STRING
    assert answer_chars(L) == max(MAX_STRING, L * MAX_TOKEN_TEXT)
    assert answer_chars(SLOTS) == SLOTS * MAX_TOKEN_TEXT > MAX_STRING
    bad = copy.deepcopy(good)
    bad["result"]["text"] = "x" * (answer_chars(L) + 1)
    with pytest.raises(TraceError, match="result/text.*answer slots"):
        loads_trace(dumps(bad))
    ok = copy.deepcopy(good)
    ok["result"]["text"] = "x" * answer_chars(L)
    loads_trace(dumps(ok))
    # a 256-slot run may hold an answer longer than any short-run text
    # a 256-slot run may hold an answer longer than any short-run text, not past its slots
    from medal.trace.gate.bounds import check_strings, string_limit
    big = copy.deepcopy(good)
    big["run"]["config"]["gen_length"] = SLOTS
    big["result"]["text"] = "x" * 30_000
    check_strings(big)
    big["result"]["text"] = "x" * (SLOTS * MAX_TOKEN_TEXT + 1)
    with pytest.raises(TraceError, match="result/text.*gen_length 256 slots"):
        check_strings(big)
    # a token's text stays a token's, wherever it sits
    assert string_limit("text", 0, True, answer_chars(SLOTS))[0] == MAX_TOKEN_TEXT
    bad = copy.deepcopy(good)
    node = next(n for n in bad["tree"]["nodes"] if any(n["top"]))
    row = next(r for r in node["top"] if r)
    row[0]["text"] = "t" * (MAX_TOKEN_TEXT + 1)
    with pytest.raises(TraceError, match="top.*a token's text has at most 200"):
        loads_trace(dumps(bad))
    # a name stays a name
    bad = copy.deepcopy(good)
    bad["run"]["strategy"] = "m" * 201
    with pytest.raises(TraceError, match="run/strategy.*a name"):
        loads_trace(dumps(bad))
    # a prompt may be long (a few-shot prompt), not unbounded
    ok = copy.deepcopy(good)
    ok["run"]["prompt"] = "p" * (MAX_STRING * 2)
    loads_trace(dumps(ok))
