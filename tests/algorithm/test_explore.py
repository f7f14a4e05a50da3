"""What the search did (issue 20): per-run search statistics, and the exploring mode whose
tree really branches -- on the real built-in Sudoku model."""
from __future__ import annotations

import pytest

from medal import load_model
from medal.bench import bench, summarise
from medal.cli import build_parser, config_from_args
from medal.config import SEARCH_MODES, GenerationConfig
from medal.engine import Run
from medal.errors import InputError
from medal.tasks import SUDOKU


@pytest.fixture(scope="module")
def model():
    return load_model("builtin:sudoku")


@pytest.fixture(scope="module")
def problems():
    return SUDOKU.generate(6, seed=321)


def _stats(model, problem, cfg):
    run = Run(model, task="sudoku", problem=problem, strategy="medal", config=cfg, trace=True)
    res = run.finish()
    return res.search.stats, run.trace, run


def test_default_search_does_not_branch_at_the_root(model, problems):
    """At the defaults every candidate hangs under the root's one expanded child: one
    first commitment. (Sudoku's L_c = 3 branches lower down: two orders of the same
    commitments are one state, so it expands more than L_c nodes to find C distinct.)"""
    for p in problems:
        st, trace, run = _stats(model, p, GenerationConfig())
        assert st["iterations"] >= run.config.lc == 3
        assert st["stop_reason"] == "candidates"
        assert st["distinct_first_commitments"] == 1
        assert st["depth_reached"] == 3 and st["candidates"] == 3
        assert st["expanded"] == st["iterations"]
        assert trace["search"]["stats"] == st            # the trace's search block
        assert st["nodes"] == len(trace["tree"]["nodes"])


def test_explore_mode_branches(model, problems):
    cfg = GenerationConfig().with_search_mode("explore")
    assert cfg.one_per_parent and cfg.c == 1.0
    for p in problems:
        st, trace, _ = _stats(model, p, cfg)
        assert st["distinct_first_commitments"] == 3     # C candidates, C subtrees
        assert st["branch_expansions"] > 0 and st["iterations"] > 3
        assert st["distinct_candidate_states"] == 3
        firsts = {trace["tree"]["nodes"][c]["parent"] for c in trace["search"]["candidates"]}
        assert len(firsts) == 3                          # different parents too


def test_search_modes_leave_changed_settings_alone():
    assert GenerationConfig(c=0.5).with_search_mode("explore").c == 0.5
    assert GenerationConfig().with_search_mode("explore", explicit=("c",)).c == 0.1
    assert GenerationConfig().with_search_mode("paper") == GenerationConfig()
    assert set(SEARCH_MODES) == {"paper", "explore"}
    with pytest.raises(InputError):
        GenerationConfig().with_search_mode("wander")


def test_cli_search_flag():
    parse = build_parser().parse_args
    cfg = config_from_args(parse(["bench", "--task", "sudoku", "--n", "1",
                                   "--search", "explore"]))
    assert cfg.one_per_parent and cfg.c == 1.0
    cfg = config_from_args(parse(["bench", "--task", "sudoku", "--n", "1"]))
    assert not cfg.one_per_parent and cfg.c == 0.1


def test_bench_summary_reports_the_search_and_a_fingerprint(model, problems):
    recs = bench(model, "sudoku", problems, ["medal"], GenerationConfig(), progress=False)
    s = summarise(recs, ["medal"])["medal"]["search"]
    assert s["mean_iterations"] >= 3 and s["mean_distinct_first_commitments"] == 1
    # a budget above what the search uses runs the same search: the same fingerprint
    again = bench(model, "sudoku", problems, ["medal"], GenerationConfig(max_iterations=50),
                  progress=False)
    assert summarise(again, ["medal"])["medal"]["search"]["fingerprint"] == s["fingerprint"]
    other = bench(model, "sudoku", problems, ["medal"],
                  GenerationConfig().with_search_mode("explore"), progress=False)
    assert summarise(other, ["medal"])["medal"]["search"]["fingerprint"] != s["fingerprint"]
