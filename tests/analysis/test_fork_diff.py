"""Debugging a choice by changing it (issue 19): forks, the trace diff and two candidates
slot by slot, on the shipped tiny models and examples.

The parents are re-run here from the shipped examples' own configuration (the examples
were recorded on another CPU, whose rounding differs in the last float32 digits): a fork
replays its parent, so the invariants are checked against a parent made on this machine.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from medal.cli import main
from medal.config import GenerationConfig
from medal.diff import compare_candidates, diff_traces
from medal.engine import Run
from medal.errors import InputError, ModelLoadError, TraceError
from medal.fork import fork, fork_trace, trace_sha256
from medal.trace import dumps, json_default, load_trace, loads_trace, write_trace
from medal.examples import list_examples
from medal.repro import rerun_example as rerun
from medal.timeline import positions, trace_at

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = {e.name: e for e in list_examples()}


@pytest.fixture(scope="module")
def parents():
    """Each shipped example, re-run on this machine (name -> trace)."""
    return {name: rerun(load_trace(e.path), e.task) for name, e in EXAMPLES.items()}


def reloaded(trace: dict) -> dict:
    """Through the gate, as a file would be."""
    return loads_trace(dumps(trace))


# ---------------------------------------------------------------------- forks

@pytest.mark.parametrize("name", list(EXAMPLES))
def test_forcing_the_step_the_run_took_gives_the_same_trace(parents, name):
    parent = parents[name]
    for k in (0, len(parent["decode"]) // 2):
        step = parent["decode"][k]
        actions = list(zip(step["slots"], step["token_texts"]))
        child = reloaded(fork_trace(parent, step=step["step"], actions=actions))
        assert child["fork"]["step"] == step["step"]
        assert child["fork"]["parent_sha256"] == trace_sha256(parent)
        d = diff_traces(parent, child)
        assert d.identical, d.format()
        without_fork = {k: v for k, v in child.items() if k not in ("fork", "timing")}
        assert without_fork == {k: v for k, v in parent.items() if k != "timing"}


def test_forcing_a_baselines_step_by_token_id_gives_the_same_trace(builtin_model):
    run = Run(builtin_model, task="countdown", prompt="Use 4, 18, 13 to make 20.",
              strategy="greedy", trace=True)
    run.finish()
    parent = run.trace
    step = parent["decode"][3]
    child = run.fork(step=step["step"], actions=[(s, t) for s, t in
                                                  zip(step["slots"], step["tokens"])]).finish()
    assert child.answer == run.result.answer
    assert diff_traces(parent, run.fork(step=step["step"], actions=[
        (step["slots"][0], f"#{step['tokens'][0]}")]).finish() and parent).identical


def test_forcing_the_winner_at_its_parent_is_the_same_run(parents):
    """A node fork, then decode, at the winner's parent with the winner's action: phase C
    starts from the winner, as in the parent; then search, at the root with the action
    every candidate extends: the parent's search stands."""
    parent = parents["countdown-medal-fixes-greedy"]
    nodes = parent["tree"]["nodes"]
    winner = nodes[parent["search"]["winner"]]
    a = winner["action"]
    child = reloaded(fork_trace(parent, node=winner["parent"],
                                actions=[(a["slot"], a["token_text"])], then="decode"))
    assert diff_traces(parent, child).identical
    assert child["fork"]["forced_nodes"] == [winner["id"]]

    def first_action(nid):
        while nodes[nid]["parent"] != 0:
            nid = nodes[nid]["parent"]
        return nodes[nid]["action"]
    shared = {(first_action(c)["slot"], first_action(c)["token"])
              for c in parent["search"]["candidates"]}
    assert len(shared) == 1, "this example's candidates share their first commitment"
    child = reloaded(fork_trace(parent, node=0, actions=list(shared), then="search"))
    assert diff_traces(parent, child).identical


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_greedy_first_commitments_into_phase_c_give_greedys_answer(parents, name):
    """The issue's invariant: MEDAL's phase C from greedy's first L_c commitments (forced at
    the root, then decode) ends on greedy's answer. (Phase C ranks slots by the
    confidence-adjusted score, greedy by p, so the order of the later steps may differ;
    the answer is the same on these examples.)"""
    parent = parents[name]
    lc = parent["run"]["config"]["lc"]
    greedy = parent["comparison"]
    # greedy's first L_c commitments, in its order (a task that decodes several slots per
    # step, like Pick, makes more than one per step)
    actions = [(s, t) for st in greedy["steps"] for s, t in zip(st["slots"], st["tokens"])][:lc]
    assert len(actions) == lc
    child = reloaded(fork_trace(parent, node=0, actions=actions, then="decode"))
    if name == "twins-medal-fixes-greedy":
        # Twins decodes 2 slots per step; after two forced commitments phase C spreads the
        # other 6 slots over the 2 steps left (3 per step, greedy wrote 2 per step), so
        # the later letters may differ. What holds: greedy's first two letters (one of
        # each pair) already mix the words, and no decoding after them is right.
        for slot, token in actions:
            assert child["result"]["answer_ids"][slot] == token
        assert greedy["result"]["verified"] is False and child["result"]["verified"] is False
    else:
        assert child["result"]["answer_ids"] == greedy["result"]["answer_ids"]
        assert child["result"]["answer"] == greedy["result"]["answer"]
    assert child["search"]["winner"] == child["fork"]["forced_nodes"][-1]
    assert child["search"]["why"].startswith("[fork]")


def test_a_forced_other_action_changes_the_run_from_there(parents):
    """Forcing another token at a decode step: everything before the step is the
    parent's, the step has the forced token, and the diff names the fork as the cause."""
    parent = parents["countdown-medal-fixes-greedy"]
    k = 3
    step = parent["decode"][k]
    other = "+" if step["token_texts"][0] != "+" else "-"
    child = reloaded(fork_trace(parent, step=step["step"], actions=[(step["slots"][0], other)]))
    assert child["decode"][:k] == parent["decode"][:k]
    assert child["decode"][k]["token_texts"][0] == other
    d = diff_traces(parent, child)
    assert not d.identical and d.first.cause == "forced action"
    assert d.first.position["kind"] == "decode" and d.first.position["step"] == step["step"]
    assert d.phases["search"] == "same" and d.phases["decode"] == "different"


def test_a_forced_action_outside_the_action_set_searches_below_it(parents):
    parent = parents["sudoku"]
    root = parent["tree"]["nodes"][0]
    in_set = {(a["slot"], a["token"]) for a in root["action_set"]}
    slot = next(s for s, m in enumerate(root["masked"]) if m and all(s != x for x, _ in in_set))
    child = reloaded(fork_trace(parent, node=0, actions=[(slot, "1")], then="search"))
    forced = child["fork"]["forced_nodes"][0]
    nodes = child["tree"]["nodes"]
    assert nodes[forced]["parent"] == 0 and nodes[forced]["action"]["slot"] == slot
    # the parent's iterations are kept; the new ones search below the forced node
    n = child["fork"]["after_iteration"]
    assert child["iterations"][:n] == parent["iterations"]
    assert len(child["iterations"]) > n
    for it in child["iterations"][n:]:
        assert it["selection"]["path"][:2] == [0, forced]
    for c in child["search"]["candidates"]:
        while nodes[c]["parent"] != 0:
            c = nodes[c]["parent"]
        assert c == forced
    assert child["result"]["answer_ids"][slot] == nodes[forced]["action"]["token"]


def test_forked_traces_pass_the_gate_and_replay(parents, tmp_path):
    from viz_support import render_everything
    from medal.viewer.export import export_html
    parent = parents["sudoku"]
    step = parent["decode"][2]
    for kw in (dict(node=3, actions=[(18, "#5")], then="decode"),
               dict(node=0, actions=[(0, "1"), (1, "2")], then="search"),
               dict(step=step["step"], actions=[(step["slots"][0], "4")])):
        child = fork_trace(parent, **kw)
        path = tmp_path / "fork.json"
        write_trace(child, path)
        child = load_trace(path)
        render_everything(child)
        for i in range(len(positions(child))):   # every replay position passes the gate
            loads_trace(dumps(trace_at(child, i)))
        assert "<html" in export_html(child).lower()


def test_the_gate_checks_the_fork_record(parents):
    parent = parents["countdown-medal-fixes-greedy"]
    step = parent["decode"][0]
    child = fork_trace(parent, step=step["step"], actions=[(step["slots"][0], step["tokens"][0])])
    node_child = fork_trace(parent, node=0, actions=[(10, "7")], then="decode")
    loads_trace(dumps(child))
    loads_trace(dumps(node_child))
    bad = {
        "a short hash": (child, lambda f: f.update(parent_sha256="abc")),
        "both positions": (child, lambda f: f.update(node=0)),
        "no position": (child, lambda f: f.pop("step")),
        "a slot outside the answer": (child, lambda f: f["forced"][0].update(slot=99)),
        "a token the step did not take": (child, lambda f: f["forced"][0].update(
            token_id=(step["tokens"][0] + 1) % 30)),
        "a missing step": (child, lambda f: f.update(step=500)),
        "then search at a step": (child, lambda f: f.update(then="search")),
        "an unknown then": (child, lambda f: f.update(then="later")),
        "a forced node that is not the node's child": (
            node_child, lambda f: f.update(forced_nodes=[1])),
        "a node outside the tree": (node_child, lambda f: f.update(node=999)),
        "no forced action": (child, lambda f: f.update(forced=[])),
    }
    for what, (trace, change) in bad.items():
        t = json.loads(dumps(trace))
        change(t["fork"])
        with pytest.raises(TraceError, match="fork"):
            loads_trace(json.dumps(t))
        assert what


def test_bad_fork_requests_say_what_to_give(parents):
    parent = parents["countdown-medal-fixes-greedy"]
    cases = [
        (dict(node=99, actions=[(5, "+")]), "node 99 is not in the tree"),
        (dict(node=0, step=2, actions=[(5, "+")]), "one fork position"),
        (dict(node=0, actions=[(40, "+")]), "outside the answer"),
        (dict(node=0, actions=[(5, "zz")]), "not one token"),
        (dict(node=0, actions=[(5, "#1")]), "mask token"),
        (dict(node=0, actions=[(5, "#100000")]), "outside"),
        (dict(step=0, actions=[(5, "+")]), "no decode step 0"),
        (dict(step=parent["decode"][3]["step"], actions=[(parent["decode"][0]["slots"][0], "+")]),
         "already unmasked"),
        (dict(step=parent["decode"][3]["step"], actions=[(5, "+")], then="search"),
         "give --node"),
        (dict(node=0, actions=[]), "at least one"),
        (dict(node=0, actions=[(5, 7)], then="later"), "--then must be"),
    ]
    for kw, message in cases:
        with pytest.raises(InputError, match=message):
            fork(parent, **kw)
    step = parent["decode"][3]
    child = fork_trace(parent, step=step["step"], actions=[(step["slots"][0], "+")])
    with pytest.raises(InputError, match="itself a fork"):
        fork(child, node=0, actions=[(5, "+")])


def test_a_fork_needs_the_model_that_made_the_trace(tmp_path):
    """A trace of a model this machine cannot load: a clear error, in Python and on the
    command line (exit 2, one error line, no traceback)."""
    from viz_support import make_trace
    trace = make_trace(max_iterations=4)
    assert trace["run"]["model"]["name"] == "builtin:random"
    with pytest.raises(ModelLoadError, match="builtin:random.*cannot be loaded here"):
        fork(trace, node=0, actions=[(0, "1")])
    path = tmp_path / "random.json"
    write_trace(trace, path)
    proc = subprocess.run([sys.executable, "-m", "medal", "fork", str(path), "--node", "0",
                           "--action", "0:1", "--trace", str(tmp_path / "out.json")],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: this trace was made with the model 'builtin:random'")
    assert "Traceback" not in proc.stderr and "--model" in proc.stderr
    assert not (tmp_path / "out.json").exists()


# ---------------------------------------------------------------------- diff

@pytest.mark.parametrize("name", list(EXAMPLES))
def test_a_diff_of_a_trace_with_itself_finds_nothing(name):
    trace = load_trace(EXAMPLES[name].path)
    d = diff_traces(trace, json.loads(json.dumps(trace, default=json_default)))
    assert d.identical and d.equal_within_tolerance
    assert d.first is None and d.first_exact is None and not d.config
    assert set(d.phases.values()) == {"same"}
    retimed = dict(trace, timing={"seconds": 1e6})
    assert diff_traces(trace, retimed).identical
    # context, not the run: the environment and a fork record
    moved = json.loads(json.dumps(trace, default=json_default))
    moved["run"]["model"]["device"] = "cuda:0"
    moved["run"]["versions"]["torch"] = "0.0"
    moved["reproducibility"] = {"seed": 0}
    d = diff_traces(trace, moved)
    assert d.identical and {"device", "versions", "reproducibility"} <= set(d.context)
    changed = json.loads(json.dumps(trace, default=json_default))
    changed["decode"][-1]["scores"][0] *= 1 + 1e-7        # within tolerance, not identical
    d = diff_traces(trace, changed)
    assert not d.identical and d.equal_within_tolerance and d.first is None
    assert d.first_exact.position["kind"] == "decode"


def _seeded(strategy: str, seed: int, model) -> dict:
    cfg = GenerationConfig(seed=seed, temperature=1.0, max_iterations=20)
    run = Run(model, task="countdown", prompt="Use 4, 18, 13 to make 20.", strategy=strategy,
              config=cfg, trace=True)
    run.finish()
    return json.loads(dumps(run.trace))


def _snapshot(trace: dict, i: int) -> dict:
    """The trace at position i, without the run block and the reproducibility record
    (the seeds differ there)."""
    return {k: v for k, v in trace_at(trace, i).items()
            if k not in ("run", "timing", "reproducibility")}


@pytest.mark.parametrize("strategy", ["medal", "random"])
def test_a_diff_of_two_seeds_finds_where_they_part(builtin_model, strategy):
    """Checked independently: the timeline's snapshots of the two runs are equal at every
    position before the reported one and differ at it."""
    a, b = _seeded(strategy, 0, builtin_model), _seeded(strategy, 1, builtin_model)
    d = diff_traces(a, b)
    assert not d.identical and not d.equal_within_tolerance
    assert d.config["seed"] == [0, 1]
    assert d.first.cause == "different sample", d.format()
    pa, pb = positions(a), positions(b)
    at = next(i for i, p in enumerate(pa)
              if p.kind == d.first.position["kind"]
              and (p.index is None or p.index == d.first.position.get("index"))
              and (p.iteration is None or p.iteration == d.first.position.get("iteration")))
    assert pa[:at] == pb[:at]
    for i in range(at):
        assert _snapshot(a, i) == _snapshot(b, i), f"they already differ at {pa[i].label}"
    assert _snapshot(a, at) != _snapshot(b, at)
    if d.first.position["kind"] == "decode":
        sa, sb = a["decode"][pa[at].index], b["decode"][pb[at].index]
        assert sa != sb   # the unmasked tokens, or those drawn for the slots left masked


def test_a_near_tie_is_told_apart_from_a_real_difference(parents):
    """Two selections whose UCB values are equal to float32 rounding: a near tie; a
    decode step moved to a slot with another score: not one."""
    parent = parents["sudoku"]
    it = next(k for k, it in enumerate(parent["iterations"])
              if any(len(lv) > 1 for lv in it["selection"]["levels"]))
    other = json.loads(json.dumps(parent))
    level = next(lv for lv in other["iterations"][it]["selection"]["levels"] if len(lv) > 1)
    chosen = next(r for r in level if r["chosen"])
    rival = next(r for r in level if not r["chosen"])
    rival["ucb"] = chosen["ucb"] * (1 + 1e-7)   # within float32 rounding
    chosen["chosen"], rival["chosen"] = False, True
    d = diff_traces(other, parent)  # A (the edited trace) selects the rival
    assert d.first.position == {"kind": "selection", "label": d.first.position["label"],
                                "iteration": it + 1}
    assert d.first.cause == "near tie" and d.first.near_tie is True
    rival["ucb"] = chosen["ucb"] * 1.5
    d = diff_traces(other, parent)
    assert d.first.cause != "near tie" and d.first.near_tie is False


def test_a_different_action_set_is_named(parents):
    """The same configuration, another action at the root (as another model would give):
    the diff stops at the root and names the action sets."""
    parent = parents["sudoku"]
    other = json.loads(json.dumps(parent))
    other["tree"]["nodes"][0]["action_set"][-1]["token"] += 1
    other["tree"]["nodes"][0]["action_set"][-1]["token_text"] = "?"
    d = diff_traces(parent, other)
    assert d.first.position["kind"] == "root" and d.first.cause == "different action set"
    assert d.first.a["action_set"] != d.first.b["action_set"]
    assert d.phases["search"] == "different" and d.phases["decode"] == "same"


def test_diff_on_the_command_line(parents, tmp_path, capsys):
    a = tmp_path / "a.json"
    write_trace(parents["countdown-medal-fixes-greedy"], a)
    assert main(["diff", str(a), str(a)]) == 0
    assert capsys.readouterr().out.startswith("identical")
    b = tmp_path / "b.json"
    write_trace(parents["countdown-medal-does-not-fix"], b)
    assert main(["diff", str(a), str(b), "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["identical"] is False and out["first"]["cause"] == "configuration"
    assert out["side_by_side"]["verified"] == [True, False]
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert main(["diff", str(a), str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "Traceback" not in err


def test_fork_and_diff_on_the_command_line(parents, tmp_path, capsys):
    a = tmp_path / "run.json"
    write_trace(parents["countdown-medal-fixes-greedy"], a)
    out = tmp_path / "fork.json"
    assert main(["fork", str(a), "--node", "0", "--action", "10:7", "--trace", str(out)]) == 0
    text = capsys.readouterr().out
    assert "forced:    10:7 at node 0, then search" in text and "parts at:" in text
    fork_rec = load_trace(out)["fork"]
    assert fork_rec["parent_sha256"] == trace_sha256(load_trace(a))
    assert main(["diff", str(a), str(out)]) == 1
    assert "forced action" in capsys.readouterr().out
    again = tmp_path / "again.json"
    assert main(["fork", str(a), "--step", "2", "--action",
                 f"{load_trace(a)['decode'][0]['slots'][0]}:#{load_trace(a)['decode'][0]['tokens'][0]}",
                 "--trace", str(again), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["identical_to_parent"] is True and report["fork"]["step"] == 2
    assert main(["diff", str(a), str(again)]) == 0
    for args, message in (
            (["--node", "99", "--action", "10:7"], "node 99 is not in the tree"),
            (["--node", "0", "--action", "10"], "write SLOT:TOKEN"),
            (["--node", "0", "--action", "x:7"], "slot must be a whole number"),
            (["--node", "0", "--action", "10:zz"], "not one token"),
            (["--step", "2", "--action", "10:7", "--then", "search"], "give --node")):
        assert main(["fork", str(a), *args, "--trace", str(tmp_path / "x.json")]) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ") and message in err, err


# ---------------------------------------------------------------------- two candidates

@pytest.mark.parametrize("name", list(EXAMPLES))
def test_two_candidates_slot_by_slot(name, capsys):
    trace = load_trace(EXAMPLES[name].path)
    records = {r["node"]: r for r in trace["search"]["candidate_scores"]}
    a, b = trace["search"]["candidates"][:2]
    report = compare_candidates(trace, a, b)
    assert report["ig"] == pytest.approx([records[a]["cumulative_ig"],
                                          records[b]["cumulative_ig"]], rel=1e-6)
    parts = sum(r["ig_contribution"] for r in report["slots"])
    assert parts == pytest.approx(report["ig_difference"], abs=1e-9)
    nodes = trace["tree"]["nodes"]
    differ = [s for s in range(trace["run"]["config"]["gen_length"])
              if nodes[a]["answer_ids"][s] != nodes[b]["answer_ids"][s]]
    assert report["differing_slots"] == differ and differ
    assert compare_candidates(trace, a, a)["slots"] == []
    path = EXAMPLES[name].path
    assert main(["candidates", str(path), str(a), str(b)]) == 0
    assert "slots whose token differs" in capsys.readouterr().out
    assert main(["candidates", str(path), str(a), "9999"]) == 2
    assert "not in the tree" in capsys.readouterr().err
