"""The views of a run (medal.views), built from real traces of a tiny random model."""
from __future__ import annotations

import copy
import dataclasses
import json
import math
import re

import pytest

from medal.config import GenerationConfig
from medal.engine import Run
from medal.errors import InputError
from medal.timeline import positions
from medal.trace import dumps, loads_trace
from medal.views import (current_phase, entropy_grid, iteration_count, order_summary, progress,
                         trace_at_iteration)
from medal.app import controller
from medal.views import inspector, teaching
from medal.views.common import esc, nodes_by_id, node_path
from medal.views.order import orders
from medal.views.phases import PHASES, phase_cycle_html
from medal.views.tree_frame import LABEL_CHARS, fit_token
from medal.views.tree import visible_node_ids

from viz_support import drawn, make_trace, random_model

PROMPT = "Use 4, 18, 13 to make 20."
EVIL = '<img src=x onerror="alert(1)">&'


@pytest.fixture(scope="module")
def trace():
    """MEDAL that finds its C=2 candidates (L_c=2) in a few iterations."""
    return make_trace(lc=2, candidates=2)


@pytest.fixture(scope="module")
def budget_trace():
    """MEDAL whose search runs out of budget (fallback candidates) -- a bigger tree (L_c = 4,
    the Countdown default before it was lowered to 2: deep enough to need 6 iterations)."""
    return make_trace(max_iterations=6, lc=4)


def _run(**config):
    return Run(random_model(), task="countdown", prompt=PROMPT, strategy="medal",
               config=GenerationConfig(**{"lc": 2, "candidates": 2, "max_iterations": 12,
                                          **config}),
               trace=True, compare_greedy=True)


def _evil(trace):
    """The trace with every token text replaced by markup."""
    t = copy.deepcopy(trace)
    for n in t["tree"]["nodes"]:
        if n["action"]:
            n["action"]["token_text"] = EVIL
        for a in n["action_set"]:
            a["token_text"] = EVIL
        n["sequence"] = EVIL
        n["completion"] = EVIL
    for s in t["decode"] + t["comparison"]["steps"]:
        s["token_texts"] = [EVIL] * len(s["token_texts"])
    t["search"]["why"] = EVIL
    return t


# ---------------------------------------------------------------------- tree
def test_the_viewer_draws_every_node_offline(trace):
    """One drawing path (issue 26): the tree the viewer draws holds every node, and its
    page (the export, the same viewer as the app's) loads nothing from outside."""
    from medal.viewer import page
    view = drawn(trace)
    assert view["info"]["shown"] == view["info"]["total"] == len(trace["tree"]["nodes"])
    assert {k for k in view["nodes"] if isinstance(k, int)} == set(nodes_by_id(trace))
    html = page(trace)
    assert "vis.Network" in html or "vis-network" in html           # vis-network inlined
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", html, re.I)
    assert "<link" not in html.lower()
    for host in ("cdnjs", "jsdelivr", "unpkg", "googleapis", "gstatic"):
        assert host not in html


def test_tree_labels_colours_sizes_and_highlights(trace):
    view = drawn(trace)
    by_id, nodes = view["nodes"], nodes_by_id(trace)
    assert by_id[0]["label"].startswith("#0 root")
    some = next(n for n in nodes.values() if n["action"])
    head, token = by_id[some["id"]]["label"].split("\n")[:2]
    assert head.endswith(f"#{some['id']} @{some['action']['slot']}")
    assert token == fit_token(some["action"]["token_text"])
    # every line fits between two siblings (LABEL_CHARS, from the gap and the font)
    for k, n in by_id.items():
        if isinstance(k, int):
            assert all(len(line) <= LABEL_CHARS for line in n["label"].split("\n")), n["label"]
    win = trace["search"]["winner"]
    assert by_id[win]["shape"] == "star" and by_id[win]["label"].startswith("★")
    for c in trace["search"]["candidates"]:
        if c != win:
            assert by_id[c]["shape"] == "diamond"
    # size grows with N
    visited = sorted((n for n in nodes.values()), key=lambda n: n["N"])
    assert by_id[visited[-1]["id"]]["size"] > by_id[visited[0]["id"]]["size"]
    # at the end the winner's path stands out
    path = node_path(nodes, win)
    thick = {(e["from"], e["to"]) for e in view["edges"] if e.get("width") == 4}
    assert thick == set(zip(path, path[1:]))
    # the figures the tooltip and the inspector show
    for key in ("N", "W", "Q", "UCB", "r_IG"):
        assert key in view["stats"][str(win)]


def test_token_texts_travel_as_data_not_markup(trace):
    """A token's text reaches the viewer as it is (data: vis-network draws labels as
    canvas text, the page sets every other string with textContent), never pre-escaped
    or pasted into markup."""
    evil = _evil(trace)
    view = drawn(evil)
    node = next(n for n in evil["tree"]["nodes"] if n["action"])
    label = view["nodes"][node["id"]]["label"]
    assert label.split("\n")[1] == fit_token(EVIL) and "<img" in label
    assert "&lt;" not in label and "&amp;" not in label


def test_large_tree_is_capped_with_ancestors(budget_trace):
    total = len(budget_trace["tree"]["nodes"])
    assert total > 12
    view = drawn(budget_trace, max_nodes=12)
    keep = visible_node_ids(budget_trace, 12)
    keep |= set(node_path(nodes_by_id(budget_trace), budget_trace["search"]["winner"]))
    assert {k for k in view["nodes"] if isinstance(k, int)} == keep
    assert view["info"]["shown"] == len(keep) and view["info"]["total"] == total
    nodes = nodes_by_id(budget_trace)
    for nid in keep:                                    # every kept node's ancestors kept
        assert set(node_path(nodes, nid)) <= keep
    must = set(budget_trace["iterations"][-1]["selection"]["path"])
    must |= set(budget_trace["search"]["candidates"]) | {budget_trace["search"]["winner"]}
    assert must <= keep
    # each drawn node says on its label how many below it are not drawn ('+k↓')
    said = [int(m.group(1)) for n in view["nodes"].values()
            for m in [re.search(r" \+(\d+)↓$", n["label"], re.M)] if m]
    # on its token's line (the root's first): the label has no more lines for it
    assert all(n["label"].count("\n") <= 3 for n in view["nodes"].values())
    assert said and sum(said) == total - len(keep)


# ---------------------------------------------------------------------- heatmap
def test_entropy_grids(trace):
    L = trace["run"]["config"]["gen_length"]
    # every slot (the default leaves out the padding after the answer: test_task_views.py)
    medal = entropy_grid(trace, "medal", show_padding=True)
    greedy = entropy_grid(trace, "greedy", show_padding=True)
    depth = nodes_by_id(trace)[trace["search"]["winner"]]["depth"]
    phase_c = [s for s in trace["decode"] if s["phase"] == "phase_c"]
    assert len(medal.rows) == depth + len(phase_c)
    assert medal.row_labels[:depth] == [f"MCTS {d}" for d in range(depth)]
    assert len(greedy.rows) == len(trace["comparison"]["steps"])
    for g in (medal, greedy):
        assert len(g.slot_labels) == len(set(g.slot_labels)) == L      # unique labels
        assert all(lbl.split("<br>", 1)[0] == str(i) for i, lbl in enumerate(g.slot_labels))
        assert all(len(r) == L for r in g.rows)
        assert len(set(g.row_labels)) == len(g.row_labels)
        # the first row: every slot masked; then one slot fewer per step (1 slot/step)
        assert all(h is not None for h in g.rows[0])
        assert [sum(h is None for h in r) for r in g.rows] == list(range(len(g.rows)))
        # each slot is marked exactly once, in the row where it was unmasked
        marked = [i for r in g.marks for i, m in enumerate(r) if m]
        assert sorted(marked) == list(range(L))
    # the search rows are the winner path's recorded entropies
    path = node_path(nodes_by_id(trace), trace["search"]["winner"])
    assert medal.rows[0] == nodes_by_id(trace)[path[0]]["entropy"]


# ---------------------------------------------------------------------- order
def test_unmasking_order_matches_results(trace, budget_trace):
    for t in (trace, budget_trace):
        assert orders(t, "medal") == t["result"]["order"]
        assert orders(t, "greedy") == t["comparison"]["result"]["order"]


def test_order_summary(trace):
    rows = order_summary(trace)
    assert [r["decoder"] for r in rows] == ["medal", "greedy"]
    assert rows[0]["forwards"] == trace["result"]["forwards"]
    assert rows[0]["answer"] == trace["result"]["answer"]
    assert rows[1]["seconds"] == pytest.approx(trace["timing"]["comparison_seconds"], abs=1e-3)


# ---------------------------------------------------------------------- inspector
def test_action_scores_recompute(trace):
    for nid in inspector.node_ids(trace):
        for row in inspector.action_table(trace, nid):
            assert row["s (recomputed)"] == pytest.approx(row["s (recorded)"], rel=1e-5)
            assert row["exp(-H)"] == pytest.approx(math.exp(-row["H"]))


def test_rewards_and_ucb_recompute(trace):
    nodes = nodes_by_id(trace)
    checked = 0
    for nid, node in nodes.items():
        r = inspector.reward_breakdown(trace, nid)
        if node["parent"] is None:
            assert r is None
            continue
        assert r["r_ig (recomputed)"] == pytest.approx(r["r_ig (recorded)"], rel=1e-4, abs=1e-6)
        u = (inspector.ucb_breakdown(trace, nid) or {}).get("last selection")
        if u and u["N"]:
            assert u["ucb (recomputed)"] == pytest.approx(u["ucb (recorded)"], rel=1e-9)
            checked += 1
    assert checked


def test_inspector_views(trace):
    win = trace["search"]["winner"]
    assert inspector.node_label(trace, win).startswith(f"node {win} ·")
    assert "winning candidate" in inspector.node_badges(trace, win)
    stats = inspector.node_stats(trace, win)
    assert stats["winner"] and stats["candidate"] and stats["N"] == nodes_by_id(trace)[win]["N"]
    html = inspector.sequence_html(trace, win)
    masked = sum(nodes_by_id(trace)[win]["masked"])
    assert html.count("masked") == masked and "completion" in html
    report = inspector.candidate_report(trace)
    assert report["winner"] == win and report["why"] == trace["search"]["why"]
    assert [r["winner"] for r in report["rows"]].count("★") == 1
    best = max(report["rows"], key=lambda r: r["cumulative IG"])
    assert best["gap to best"] == 0
    evil = _evil(trace)
    assert "<img" not in inspector.sequence_html(evil, win)


# ---------------------------------------------------------------------- phases
def test_phase_follows_every_event():
    run = _run()
    assert current_phase(None).key == "not_started"
    expected = {"run_started": "started", "root": "root", "selection": "selection",
                "expansion": "expansion", "simulation": "simulation",
                "backpropagation": "backpropagation", "search_finished": "search_finished",
                "candidate_chosen": "candidate_chosen", "run_finished": "finished"}
    seen = set()
    last = 0.0
    while (event := run.step()) is not None:
        info = current_phase(run.trace)
        if event.kind == "decode_step":
            assert info.key == ("compare_greedy" if event.phase == "compare_greedy" else "phase_c")
        else:
            assert info.key == expected[event.kind]
        assert info.title == PHASES[info.key][0] and info.explanation
        if info.key in ("selection", "expansion", "simulation", "backpropagation"):
            assert info.iteration == event.iteration
            assert f">{info.title}</span>" in phase_cycle_html(info.key)
        frac, caption = progress(run.trace)
        assert 0.0 <= frac <= 1.0 and frac >= last - 1e-9 and caption
        last = frac
        seen.add(info.key)
    assert progress(run.trace)[0] == 1.0
    assert {"selection", "expansion", "simulation", "backpropagation", "phase_c",
            "compare_greedy", "finished"} <= seen


# ---------------------------------------------------------------------- replay
def test_replay_reconstructs_the_tree_at_each_iteration():
    run = _run()
    snapshots = {}
    while (event := run.step()) is not None:
        if event.kind == "backpropagation":
            # run.trace is the recorder's live dict: snapshot a copy
            snapshots[event.iteration] = copy.deepcopy(run.trace)
    final = run.trace
    assert iteration_count(final) == len(snapshots)
    assert trace_at_iteration(final, len(snapshots)) is final
    root_only = trace_at_iteration(final, 0)
    assert len(root_only["tree"]["nodes"]) == 1 and root_only["result"] is None
    assert current_phase(root_only).key == "root"
    for k, live in snapshots.items():
        replayed = trace_at_iteration(final, k)
        if k == len(snapshots):
            assert replayed is final      # the slider's last position: the whole run
            continue
        assert current_phase(replayed).key == "backpropagation"
        want = {n["id"]: (n["N"], round(n["W"], 9)) for n in live["tree"]["nodes"]}
        got = {n["id"]: (n["N"], round(n["W"], 9)) for n in replayed["tree"]["nodes"]}
        assert got == want
        drawn(replayed), entropy_grid(replayed), order_summary(replayed)


# ---------------------------------------------------------------------- timeline
@pytest.mark.parametrize("strategy, config", [
    ("medal", {}),
    ("medal", {"candidates": 3, "complete_candidates": True}),
    ("medal", {"lc": 3, "candidates": 500, "max_iterations": 7}),   # budget fallback
    ("greedy", {}),
    ("bst5", {"samples": 2}),
])
def test_timeline_replays_every_position_exactly_as_it_ran(strategy, config):
    """Issue 10 #2: an uploaded trace steps exactly like a live run, phase by phase. The
    live trace is snapshotted after every event that adds a position; the finished
    trace, cut at each position, must equal the snapshot (every node's N, W, Q, UCB,
    r_IG, completion, exhausted flag; the iterations; decode and comparison steps)."""
    from medal.timeline import positions, trace_at
    run = Run(random_model(), task="countdown", prompt=PROMPT, strategy=strategy,
              config=GenerationConfig(**{"lc": 2, "candidates": 2, "max_iterations": 12,
                                         **config}), trace=True, compare_greedy=True)
    snapshots = []
    while run.step() is not None:
        if len(positions(run.trace)) > len(snapshots):
            snapshots.append(json.loads(json.dumps(run.trace)))
        assert len(positions(run.trace)) == len(snapshots)   # one position per event at most
    final = json.loads(dumps(run.trace))
    pos = positions(final)
    assert len(pos) == len(snapshots)
    kinds = [p.kind for p in pos]
    assert kinds[0] == "started" and kinds[-1] == "finished" and "compare" in kinds
    if strategy == "medal":
        assert {"selection", "expansion", "simulation", "backpropagation",
                "candidate_chosen"} <= set(kinds)
    for i, live in enumerate(snapshots):
        replayed = json.loads(json.dumps(trace_at(final, i)))
        assert replayed == live, f"position {i} ({pos[i].label}) differs from the live run"
        head = current_phase(trace_at(final, i))
        assert head == current_phase(live)
        assert progress(trace_at(final, i)) == progress(live)


def test_timeline_positions_and_highlights(trace):
    from medal.timeline import (clamp, index_of_iteration_end, nodes_new_at, positions,
                                    trace_at)
    pos = positions(trace)
    assert trace_at(trace, None) is trace and trace_at(trace, len(pos) + 5) is trace
    assert clamp(trace, -3) == 0 and clamp(trace, None) == len(pos) - 1
    sel = next(i for i, p in enumerate(pos) if p.kind == "selection")
    assert pos[sel].label == "selection · iteration 1"
    assert current_phase(trace_at(trace, sel)).title == "Selection"
    exp = sel + 1
    children = trace["iterations"][0]["expansion"]["children"]
    assert nodes_new_at(trace, exp) == children == nodes_new_at(trace, exp + 1)
    assert nodes_new_at(trace, sel) == []
    at_exp = nodes_by_id(trace_at(trace, exp))
    assert all(at_exp[c]["r_ig"] is None and at_exp[c]["completion"] is None for c in children)
    at_sim = nodes_by_id(trace_at(trace, exp + 1))
    assert all(at_sim[c]["r_ig"] is not None and at_sim[c]["completion"] for c in children)
    assert pos[index_of_iteration_end(trace, 1)] == pos[sel + 3]
    assert positions(None) == [] and positions({}) == []


# ---------------------------------------------------------------------- teaching
def test_teaching_numbers_recompute(trace):
    s = teaching.score_example(trace)
    assert s["s"] == pytest.approx(s["recorded"], rel=1e-5) and "\\sigma" in s["latex"]
    u = teaching.ucb_example(trace)
    assert u["value"] == pytest.approx(u["recorded"]) or math.isinf(u["value"])
    ig = teaching.information_gain_example(trace)
    assert ig["r_ig (recomputed)"] == pytest.approx(ig["r_ig (recorded)"], rel=1e-4, abs=1e-6)
    c = teaching.candidate_example(trace)
    assert c["winner"] == trace["search"]["winner"]
    p = teaching.phase_c_example(trace)
    assert p["recomputed"] == pytest.approx(p["scores"][0], rel=1e-5)
    a = teaching.action_set_example(trace)
    assert len(a["actions"]) == trace["run"]["config"]["k2"]
    assert all(teaching.FORMULAS.values())
    for fn in (teaching.score_example, teaching.ucb_example, teaching.phase_c_example):
        assert fn(None) is None


# ---------------------------------------------------------------------- traces
def test_views_render_an_uploaded_trace_identically(trace):
    uploaded = loads_trace(dumps(trace).encode())
    from medal.viewer import bundle
    assert bundle(uploaded) == bundle(trace)         # every frame the viewer draws
    assert entropy_grid(uploaded) == entropy_grid(trace)


@pytest.mark.parametrize("strategy", ["greedy", "medal-no-mcts"])
def test_baseline_traces_render(strategy):
    t = make_trace(strategy)
    assert not [k for k in drawn(t)["nodes"]] and t["tree"] is None
    assert len(entropy_grid(t).rows) == t["run"]["config"]["steps"]
    assert orders(t) == t["result"]["order"]
    assert current_phase(t).key == "finished"
    assert inspector.node_ids(t) == [] and teaching.score_example(t) is None
    from medal.viewer import bundle
    assert len(bundle(t)["frames"]) == len(positions(t))      # the viewer draws it


def test_block_mode_with_completed_candidates():
    t = make_trace(lc=2, candidates=2, complete_candidates=True, block_length=7, steps=8)
    assert any(s["phase"].startswith("phase_c-") for s in t["decode"])
    assert orders(t) == t["result"]["order"]
    rows = entropy_grid(t).rows
    assert len(rows) == 2 + sum(s["phase"] == "phase_c" for s in t["decode"])


# ---------------------------------------------------------------------- controller
def test_advance_modes():
    run = _run()
    assert [e.kind for e in controller.advance(run, "phase")] == ["run_started"]
    kinds = [e.kind for e in controller.advance(run, "iteration")]
    assert kinds == ["root", "selection", "expansion", "simulation", "backpropagation"]
    assert len(controller.advance(run, "end", max_events=3)) == 3
    while controller.advance(run, "end", max_seconds=0.05):
        pass
    assert run.done and controller.advance(run, "phase") == []
    with pytest.raises(ValueError):
        controller.advance(run, "sideways")


def test_parameters_cover_the_config():
    names = {p.name for p in controller.PARAMETERS}
    assert names == {f.name for f in dataclasses.fields(GenerationConfig)}
    defaults = {p.name: p.default for p in controller.PARAMETERS}
    assert controller.make_config(defaults) == GenerationConfig()
    with pytest.raises(InputError, match="k1"):
        controller.make_config({**defaults, "k1": 0})
    # a bad combination only shows when the run resolves it against the model
    bad = controller.make_config({**defaults, "steps": 5, "block_length": 7})
    with pytest.raises(InputError, match="multiple of the number of blocks"):
        controller.create_run(random_model(), task="countdown", prompt=PROMPT,
                              strategy="medal", config=bad)
    assert controller.load_options(False) == {}
    assert controller.load_options(True) == {"trust_remote_code": True}
    assert controller.load_options(device="cpu", dtype="auto", revision=" main ") == {
        "device": "cpu", "revision": "main"}


def test_app_threads():
    assert controller.app_threads(random_model(), environ={}) == 1     # built-in: one thread
    assert controller.app_threads(object(), environ={}) is None
    assert controller.app_threads(object(), environ={"MEDAL_APP_THREADS": "3"}) == 3


def test_helpers():
    assert esc('<a href="x">') == "&lt;a href=&quot;x&quot;&gt;"


def test_measure_ui_step():
    from medal.viewer.bench import measure_ui_step
    import torch
    before = torch.get_num_threads()
    out = measure_ui_step(random_model(), n_steps=4, threads=1,
                          config=GenerationConfig(lc=2, candidates=2, max_iterations=4))
    assert torch.get_num_threads() == before and out["threads"] == 1
    assert out["steps"] == 4 and out["mean_ms"] > 0
    # the path the app draws: the viewer's frames and the bundle sent to the browser
    assert set(out["parts_mean_ms"]) == {"step", "trace", "frames", "bundle"}
    assert out["parts_mean_ms"]["frames"] > 0 and out["parts_mean_ms"]["bundle"] > 0
    assert out["max_ms"] >= out["median_ms"] > 0


def test_verifier_reward_is_shown_beside_r_ig(trace):
    """With the verifier reward (beyond the paper) a node's reward is r_IG plus the
    bonus: the inspector's figures carry it, and whether the completion verified."""
    t = make_trace(lc=2, candidates=2, reward="ig+verifier")
    assert inspector.node_stats(t, t["search"]["winner"])["reward"] is not None
    stats = drawn(t)["stats"]
    rewarded = [s for s in stats.values() if s.get("reward") is not None]
    assert rewarded and all(s["verified"] in (True, False) for s in rewarded)
    for nid, n in nodes_by_id(t).items():
        if n.get("reward") is not None:
            assert stats[str(nid)]["reward"] == round(n["reward"], 6)
            assert stats[str(nid)]["verified"] == n["verified"]
    plain = drawn(trace)["stats"]
    assert all(s.get("reward") is None for s in plain.values())
    from medal.viewer import bundle
    assert len(bundle(t)["frames"]) == len(positions(t))


# ---------------------------------------------------------------------- issue 10 (part A)
def test_tree_layout_holds_still_as_the_tree_grows(budget_trace):
    """Issue 10 #3, issue 28 #3: in a replay a node never moves -- at every position of the
    timeline the viewer draws it where the finished tree has it -- and it is a tidy tree
    (tidy_tree_checks)."""
    from medal.viewer import Frames
    from medal.timeline import positions, trace_at
    from medal.views.tree import layout
    final = layout(budget_trace)
    assert len(final) == len(budget_trace["tree"]["nodes"])
    tidy_tree_checks(budget_trace, final)
    frames = Frames("t", max_nodes=300)
    frames.update(budget_trace)
    pool, state = frames.enc.pool, {}
    for i, delta in enumerate(frames.enc.frames):
        ch = delta.get("n", [])
        for k in range(0, len(ch), 2):
            if ch[k + 1] < 0:
                state.pop(ch[k], None)
            else:
                state[ch[k]] = pool[ch[k + 1]]
        ids = set(nodes_by_id(trace_at(budget_trace, i)))
        drawn = {n["id"]: n for n in state.values() if isinstance(n["id"], int)}
        assert set(drawn) == ids
        for nid, n in drawn.items():
            assert (n["x"], n["y"]) == final[nid], (i, nid)
    assert len(frames.enc.frames) == len(positions(budget_trace))


def tidy_tree_checks(trace, xy):
    """A tidy tree: y from the depth; on each layer nodes at least H_GAP apart; a node's
    children side by side in order of birth, centred under it unless it is one of a
    family drawn narrower (issue 41 #4: it then moved, at most REACH less half its
    children's spread from their middle); every subtree contiguous on every layer (no
    node of another subtree between two of its nodes), so no edge crosses another."""
    from medal.views.tree import FAMILY_SPAN, H_GAP, REACH, V_GAP
    nodes = nodes_by_id(trace)
    kids = {}
    for n in sorted(nodes.values(), key=lambda n: n["id"]):
        if n.get("parent") is not None:
            kids.setdefault(n["parent"], []).append(n["id"])
    rows = {}
    for nid, (x, y) in xy.items():
        assert y == nodes[nid]["depth"] * V_GAP
        rows.setdefault(y, []).append((x, nid))
    rank = {}
    for y, row in rows.items():
        row.sort()
        assert all(b[0] - a[0] >= H_GAP - 1e-6 for a, b in zip(row, row[1:])), y
        for k, (_, nid) in enumerate(row):
            rank[nid] = k
    for p, c in kids.items():
        assert [xy[k][0] for k in c] == sorted(xy[k][0] for k in c)
        spread = xy[c[-1]][0] - xy[c[0]][0]
        off = abs(xy[p][0] - (xy[c[0]][0] + xy[c[-1]][0]) / 2)
        assert off < 1e-6 or off <= REACH - min(spread, FAMILY_SPAN) / 2 + 1e-6, (p, off)
    # contiguity: walk up from each node, collecting per (ancestor, depth) the ranks
    spans = {}
    for nid in nodes:
        a, d = nid, nodes[nid]["depth"]
        while a is not None:
            lo, hi, k = spans.get((a, d), (rank[nid], rank[nid], 0))
            spans[(a, d)] = (min(lo, rank[nid]), max(hi, rank[nid]), k + 1)
            a = nodes[a].get("parent")
    for (a, d), (lo, hi, k) in spans.items():
        assert hi - lo + 1 == k, f"subtree of {a} is split on depth {d}"


def test_tree_layout_draws_wide_families_narrower():
    """Issue 41 #4: the tidy layout spread a node's children as wide as their subtrees
    grew -- the large example's root's 5 children over 17,316 px, 13 of its 96
    expansions' children wider than the app's 970 px tree box holds at scale 0.8 (labels
    15 px -> 12 px), so the step that made them could not show them all. Now a family is
    drawn within FAMILY_SPAN (1000 px: with labels ~130 px, (1000 + 130) x 0.8 + 24 <=
    970) wherever that moves no child that has children of its own more than REACH less
    half their spread from their middle (so a node and its children still share a view
    when it is expanded); else it is left as the tidy layout has it. On the large example
    4 of the 96 expansions stay wider (the root's, #1's and two more). Checked on every
    shipped example and random trees against the tidy layout itself."""
    import random
    from unittest import mock
    from medal.examples import list_examples, load_example
    from medal.views import tree
    rnd = random.Random(41)
    trees = {ex.name: load_example(ex) for ex in list_examples()}
    for k in range(5):
        trees[f"random {k}"] = _shape([None] + [rnd.randrange(max(1, i // 4)) for i in range(1, 400)])
    narrowed = 0
    for name, t in trees.items():
        xy = tree.layout(t)
        with mock.patch.object(tree, "_squeeze", lambda *a: None):
            tidy = tree.layout(t)
        kids = {}
        for n in sorted(t["tree"]["nodes"], key=lambda n: n["id"]):
            if n.get("parent") is not None:
                kids.setdefault(n["parent"], []).append(n["id"])
        wide = []
        for p, c in kids.items():
            span, was = xy[c[-1]][0] - xy[c[0]][0], tidy[c[-1]][0] - tidy[c[0]][0]
            least = max(tree.FAMILY_SPAN, tree.H_GAP * (len(c) - 1))   # H_GAP apart at least
            if span > least + 1e-6:
                assert [xy[k] for k in c] == [tidy[k] for k in c], (name, p)   # as it was
                wide.append(p)
            elif was > least + 1e-6:
                narrowed += 1
                assert abs(span - least) < 1e-6, (name, p, span)
        for nid, (x, y) in xy.items():
            if nid in kids and abs(x - tidy[nid][0]) > 1e-6:
                c = kids[nid]
                spread = min(tidy[c[-1]][0] - tidy[c[0]][0], tree.FAMILY_SPAN)
                assert abs(x - tidy[nid][0]) <= tree.REACH - spread / 2 + 1e-6, (name, nid)
        tidy_tree_checks(t, xy)
        if name == "countdown-large-search":
            big = {it["expansion"]["leaf"] for it in t["iterations"]}
            assert len(big & set(wide)) == 4, sorted(big & set(wide))
    assert narrowed >= 10


def _shape(parents):
    """A bare trace whose tree has these parents (index = id; None: the root)."""
    nodes, depth = [], {}
    for i, p in enumerate(parents):
        depth[i] = 0 if p is None else depth[p] + 1
        nodes.append({"id": i, "parent": p, "depth": depth[i], "N": 0, "W": 0.0, "Q": 0.0,
                      "action": None})
    return {"tree": {"root": 0, "nodes": nodes}}


def test_tree_layout_is_tidy_at_any_shape():
    """Issue 28 #3: each subtree under its parent and siblings together, for the shipped
    examples and for random trees of every kind of branching (bushy, chains, one wide
    layer, MCTS-like K2-groups)."""
    import random
    from medal.examples import list_examples, load_example
    from medal.views.tree import layout
    for ex in list_examples():
        t = load_example(ex)
        tidy_tree_checks(t, layout(t))
    rnd = random.Random(28)
    for case in range(60):
        n = rnd.randint(1, 160)
        parents = [None]
        for i in range(1, n):
            style = case % 3
            if style == 0:
                parents.append(rnd.randrange(i))
            elif style == 1:
                parents.append(max(0, i - rnd.randint(1, 3)))
            else:
                parents.append(rnd.randrange(max(1, i // 3)))
        t = _shape(parents)
        tidy_tree_checks(t, layout(t))


def test_tree_layout_is_linear_in_one_node_groups():
    """Issue 28 #3 (hostile input): the old layout searched every layer for a free stretch
    per group of children -- cubic in one-node groups on a layer (1,000 of them: 39.5 s;
    1,500 here: over a minute). A tidy tree is linear. Its work is counted, not timed
    (tests/work.py: the Python lines it executes, the same on any machine under any load;
    issue 40): from 375 to 1,500 one-node groups (476 to 1,601 nodes) the lines grow 3.3x
    (cubic: ~38x), along a 1,250- to 5,000-node chain 4.0x; each within 1.25x of the
    growth in nodes, and a run past 3 million lines stops as a failure."""
    from medal.views.tree import layout
    from work import growth, lines_run

    def wide_parents(groups):
        return [None] + [0] * 100 + [1 + j % 100 for j in range(groups)]

    def chain_parents(n):
        return [None] + list(range(n))

    most = 3_000_000
    shapes = {("wide", g): _shape(wide_parents(g)) for g in (375, 1500)}   # made outside
    shapes.update({("chain", n): _shape(chain_parents(n)) for n in (1250, 5000)})
    assert growth(lambda g: layout(shapes["wide", g]), 375, 1500, most) <= 1.25 * 1601 / 476
    assert growth(lambda n: layout(shapes["chain", n]), 1250, 5000, most) \
        <= 1.25 * 5001 / 1251
    wide, _ = lines_run(lambda: layout(shapes["wide", 1500]), most)
    deep, _ = lines_run(lambda: layout(shapes["chain", 5000]), most)
    assert len(wide) == 1601 and len(deep) == 5001
    tidy_tree_checks(_shape(wide_parents(1500)), wide)
    assert {x for x, _ in deep.values()} == {0.0}


def test_tree_colour_scale_is_fixed_for_the_run(budget_trace):
    """Issue 10 #3: the colour of Q is not rescaled per frame: one outlier Q does not
    repaint the other nodes, and a node keeps its colour while its Q is unchanged."""
    from medal.views.tree import q_scale
    scale = q_scale(budget_trace)
    assert scale and scale[0] < scale[1]
    colours = {k: n["color"]["background"] for k, n in drawn(budget_trace)["nodes"].items()
               if isinstance(k, int)}
    bent = copy.deepcopy(budget_trace)
    victim = next(n for n in bent["tree"]["nodes"] if n["N"] > 0 and n["parent"] is not None)
    victim["Q"] = 50.0                                # an outlier
    after = {k: n["color"]["background"] for k, n in drawn(bent)["nodes"].items()
             if isinstance(k, int)}
    changed = {nid for nid in colours if colours[nid] != after[nid]}
    assert changed == {victim["id"]}
    from medal.timeline import index_of_iteration_end, trace_at
    # a search in progress (a live run): one scale from iteration 1 on
    early = [q_scale(trace_at(budget_trace, index_of_iteration_end(budget_trace, k)))
             for k in (1, 2, 3, 5)]
    assert early[0] is not None and early.count(early[0]) == len(early)
    from medal.viewer import Frames, legend       # the viewer's legend: the run's one scale
    assert legend(scale, {})["q"] == list(scale)
    # a replay: every frame of the run drawn on the same scale, the finished run's
    f = Frames("scale")
    f.update(budget_trace)
    legends = [v for v in f.enc.pool if isinstance(v, dict) and "stops" in v]
    assert legends and {json.dumps(v["q"]) for v in legends} <= {"null", json.dumps(list(scale))}


def test_tree_colour_scale_separates_the_runs_q_values():
    """Issue 28 #6: the scale is the run's own Q range (the visited nodes' Q without their
    outliers), never wider than the run's Q values, and two nodes whose Q differ by an
    eighth of it get colours that differ by more than 24 in a channel. The old scale (0 to
    twice iteration 1's best reward: Sudoku 0-0.45 for Q within -0.02-0.2, Pick 0-0.33 for
    0.002-0.23) was wider than the run's values, and Sudoku's Q within 0.05 of each other
    looked alike (87 of its 398 pairs over an eighth of its 5-95% range)."""
    import itertools
    from medal.examples import list_examples, load_example
    from medal.views.tree import q_scale
    from medal.views.common import VIRIDIS, lerp_colour
    for ex in list_examples():
        trace = load_example(ex)
        lo, hi = q_scale(trace)
        qs = sorted(n["Q"] for n in trace["tree"]["nodes"] if n["N"] > 0)
        assert sum(lo <= q <= hi for q in qs) >= 0.8 * len(qs), (ex.name, lo, hi)
        assert hi - lo <= 1.05 * (qs[-1] - qs[0]) + 0.02, (ex.name, lo, hi)   # the run's own range

        def rgb(q):
            c = lerp_colour((q - lo) / (hi - lo), VIRIDIS)
            return [int(c[k:k + 2], 16) for k in (1, 3, 5)]
        inner = sorted({round(q, 6) for q in qs if lo <= q <= hi})[:400]
        same = [(a, b) for a, b in itertools.combinations(inner, 2) if abs(a - b) >= (hi - lo) / 8
                and max(abs(x - y) for x, y in zip(rgb(a), rgb(b))) <= 24]
        assert same == [], f"{ex.name}: Q values {same[:4]} look alike on {lo}-{hi}"


def test_tree_highlights_new_nodes_and_shows_simulation_results(trace):
    from medal.timeline import nodes_new_at, positions, trace_at
    pos = positions(trace)
    sim = next(i for i, p in enumerate(pos) if p.kind == "simulation")
    shown = trace_at(trace, sim)
    new = nodes_new_at(trace, sim)
    by_id = drawn(trace, sim)["nodes"]
    for nid in new:
        node = nodes_by_id(shown)[nid]
        assert by_id[nid]["shapeProperties"]["borderDashes"]
        assert f"r={node['r_ig']:.3g}" in by_id[nid]["label"]
    assert not by_id[0]["shapeProperties"]["borderDashes"]
    after = drawn(trace, sim + 1)["nodes"]
    assert pos[sim + 1].kind == "backpropagation"
    assert not any(n["shapeProperties"]["borderDashes"] for k, n in after.items()
                   if isinstance(k, int))


def test_the_viewers_tree_is_json_with_fixed_places(trace):
    """The tree the viewer draws (one drawing path, issue 26): JSON, vis-network's physics
    off and labels as plain text on the canvas, every node at a fixed place. A trace's
    strings reach the page as data the viewer writes with textContent
    (tests/views/test_export.py checks the page's escaping)."""
    from medal.viewer import bundle
    evil = _evil(trace)
    data = bundle(evil)
    json.dumps(data)
    assert data["options"]["physics"]["enabled"] is False
    assert not data["options"]["nodes"]["font"].get("multi")
    nodes = [v for v in data["pool"] if isinstance(v, dict) and "x" in v and "label" in v]
    assert nodes and all(isinstance(n["x"], (int, float)) and isinstance(n["y"], (int, float))
                         for n in nodes)


def test_ucb_card_uses_one_consistent_set_of_figures():
    """Issue 10 #5: the UCB card's N, Q and parent N are the node's and its parent's
    figures at this point of the run (not those of the latest selection, which a
    backpropagation has since changed), and the unvisited case is explained."""
    from medal.timeline import positions, trace_at
    final = make_trace(lc=3, candidates=500, max_iterations=10)
    checked = unvisited = 0
    for i, p in enumerate(positions(final)):
        if p.kind not in ("expansion", "backpropagation"):
            continue
        t = trace_at(final, i)
        nodes = nodes_by_id(t)
        for nid, node in nodes.items():
            card = inspector.ucb_breakdown(t, nid)
            assert card["N"] == node["N"] and card["Q"] == node["Q"]
            if node["parent"] is None:
                assert card["state"] == "root" and card["ucb"] is None
                assert "never selected" in inspector.ucb_text(card)
                continue
            parent = nodes[node["parent"]]
            assert card["parent_N"] == parent["N"]
            if node["N"] == 0:
                assert card["state"] == "unvisited" and card["ucb"] == math.inf
                assert "unvisited (N = 0)" in inspector.ucb_text(card)
                unvisited += 1
            else:
                want = node["Q"] + card["c"] * math.sqrt(math.log(parent["N"]) / node["N"])
                assert card["ucb"] == pytest.approx(want, rel=1e-12)
                text = inspector.ucb_text(card)
                assert f"√(ln {parent['N']} / {node['N']})" in text
                assert f"= {card['ucb']:.4f}" in text
                last = card["last selection"]
                if last and last["N"] != node["N"]:
                    checked += 1                 # the case the issue saw (26 vs 31)
            assert inspector.node_stats(t, nid)["UCB"] == card["ucb"]
    assert checked and unvisited


def test_committed_slots_and_outlines(trace):
    win = trace["search"]["winner"]
    slots = inspector.committed_slots(trace, win)
    nodes = nodes_by_id(trace)
    assert len(slots) == nodes[win]["depth"]
    assert inspector.committed_slots(trace, trace["tree"]["root"]) == []
    assert all(not nodes[win]["masked"][s] for s in slots)


def test_small_fixes_plural_download_name_k2():
    """Issue 10 #7: "1 iteration" singular; downloads named after the run; K2 above the
    possible reported."""
    from medal.app.controller import download_name, k2_note, prompt_note
    from medal.views.phases import plural
    assert plural(1, "iteration") == "1 iteration" and plural(2, "iteration") == "2 iterations"
    t = make_trace(lc=1, candidates=1, max_iterations=1)
    t2 = copy.deepcopy(t)
    t2["search"].update(winner=None, iterations=1)
    t2["decode"], t2["result"], t2["comparison"] = [], None, None
    assert "after 1 iteration:" in current_phase(t2).detail
    name = download_name(t, 0)
    assert name.startswith("medal-countdown-medal-seed0-") and name.endswith(".json")
    assert download_name(t, 0) != download_name(t, 3600)
    cfg = GenerationConfig(k1=3, k2=1000).resolved(28, 2, None)
    note = k2_note(cfg)
    assert "K2 = 1000" in note and str(3 * cfg.block_length) in note
    assert k2_note(GenerationConfig(k1=3, k2=5).resolved(28, 2, None)) is None
    assert prompt_note("countdown", "Use 4, 18, 13 to make 20.") is None
    assert "not a countdown problem" in prompt_note("countdown", "twenty please")


def test_tree_graph_is_the_trace_tree_with_every_figure():
    """Issue 28 #10: networkx was declared and never used. medal.tree_graph(trace) is the
    search tree as a DiGraph with every node's figures; medal.tree_stats reads the shape
    from it (and the viewer's tree bar shows it)."""
    import networkx as nx
    import medal
    from medal.viewer import bundle
    from medal.examples import list_examples, load_example
    from medal.views.tree import GRAPH_FIELDS, layout
    t = load_example(next(e for e in list_examples() if e.name == "countdown-longer-search"))
    g = medal.tree_graph(t)
    assert isinstance(g, nx.DiGraph) and nx.is_arborescence(g)
    nodes = nodes_by_id(t)
    assert set(g.nodes) == set(nodes) and g.number_of_edges() == len(nodes) - 1
    xy = layout(t)
    for nid, n in nodes.items():
        d = g.nodes[nid]
        assert all(d[k] == n.get(k) for k in GRAPH_FIELDS)
        assert (d["x"], d["y"]) == xy[nid]
        if n.get("parent") is not None:
            assert g.has_edge(n["parent"], nid) and d["slot"] == n["action"]["slot"]
    assert g.graph["root"] == 0 and g.graph["winner"] == t["search"]["winner"]
    path = nx.shortest_path(g, g.graph["root"], g.graph["winner"])
    assert path == node_path(nodes, g.graph["winner"])
    st = medal.tree_stats(t)
    kids = {}
    for n in nodes.values():
        if n.get("parent") is not None:
            kids[n["parent"]] = kids.get(n["parent"], 0) + 1
    assert st["nodes"] == len(nodes) and st["depth"] == max(n["depth"] for n in nodes.values())
    assert st["expanded"] == len(kids) and st["leaves"] == len(nodes) - len(kids)
    assert st["branching"] == sum(kids.values()) / len(kids)
    assert [r["nodes"] for r in st["per_level"]] == [
        sum(1 for n in nodes.values() if n["depth"] == d) for d in range(st["depth"] + 1)]
    assert [r["visits"] for r in st["per_level"]] == [
        sum(n["N"] for n in nodes.values() if n["depth"] == d) for d in range(st["depth"] + 1)]
    assert bundle(t)["meta"]["tree"]["per_level"] == [r["nodes"] for r in st["per_level"]]
    assert "tree_graph" in medal.__all__ and medal.tree_stats({"run": {}})["nodes"] == 0


def test_tree_stats_of_a_trace_equal_its_graphs():
    """Issue 28: the viewer reads tree_stats at every update of a live run; from a trace
    it reads the node list (no graph, no layout), with the graph's figures exactly."""
    import medal
    from medal.examples import list_examples, load_example
    for ex in list_examples():
        t = load_example(ex)
        assert medal.tree_stats(t) == medal.tree_stats(medal.tree_graph(t)), ex.name
