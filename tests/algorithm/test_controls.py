"""The three controls of issue 30 (order, choice, exploration), the search statistics in
every bench row, and the step budget made explicit -- on the tiny built-in Twins and
Sudoku models (fast)."""
from __future__ import annotations

from collections import Counter

import pytest

from medal import load_model
from medal.bench import SEARCH_COLUMNS, bench, format_table, parse_strategies, summarise
from medal.cli import build_parser, config_from_args
from medal.config import GenerationConfig
from medal.engine import CONTROLS, STRATEGIES, Run, random_choice
from medal.errors import InputError
from medal.tasks import SUDOKU, get_task

TWINS = get_task("twins")


@pytest.fixture(scope="module")
def twins():
    return load_model("builtin:twins")


@pytest.fixture(scope="module")
def sudoku():
    return load_model("builtin:sudoku")


@pytest.fixture(scope="module")
def problems():
    return TWINS.generate(8, seed=4242)


def _run(model, task, problem, strategy, **cfg):
    run = Run(model, task=task, problem=problem, strategy=strategy,
              config=GenerationConfig(**cfg))
    return run, run.finish()


def test_the_controls_are_named_strategies():
    for name in ("medal-order", "medal-choice", "medal-branching"):
        assert name in STRATEGIES and name in CONTROLS
        assert parse_strategies(name) == [name]


def test_order_control_has_no_alternatives(twins, problems):
    """K2 = 1, C = 1: L_c single-child expansions, one candidate, the most confident path."""
    for p in problems:
        run, res = _run(twins, "twins", p, "medal-order")
        assert (run.config.k2, run.config.candidates) == (1, 1)
        st = res.search.stats
        assert st["nodes"] == run.config.lc + 1 and st["candidates"] == 1
        assert run.mcts.winner_stats(run.mcts.nodes[res.search.winner]) == {
            "winner_off_confident_path": False}


def test_choice_control_is_the_default_search_where_ucb_does_not_act(twins, problems):
    """L_c = 2, C <= K2: UCB picks the best-r_IG child, as greedy selection does."""
    for p in problems:
        _, a = _run(twins, "twins", p, "medal")
        run, b = _run(twins, "twins", p, "medal-choice")
        assert run.config.selection == "greedy"
        assert (a.answer_ids, a.search.winner, a.sequence_forwards) == \
               (b.answer_ids, b.search.winner, b.sequence_forwards)


def test_choice_control_expands_one_line(sudoku):
    """Sudoku (L_c = 3), where UCB leaves the first line: greedy selection stays on the
    best-reward line until it has its candidates, and differs from UCB somewhere."""
    differs = 0
    for p in SUDOKU.generate(10, seed=77):
        _, a = _run(sudoku, "sudoku", p, "medal")
        _, b = _run(sudoku, "sudoku", p, "medal-choice")
        sb = b.search.stats
        assert sb["distinct_first_commitments"] == 1
        differs += a.search.stats["iterations"] != sb["iterations"]
    assert differs


def test_branching_control_branches(twins, problems):
    """C = 2 K2 > K2: the search must leave its first line -- off-line expansions and more
    than one first commitment -- where the default never does."""
    for p in problems:
        run, res = _run(twins, "twins", p, "medal-branching")
        assert run.config.candidates == 2 * run.config.k2
        st = res.search.stats
        assert st["branch_expansions"] > 0 and st["distinct_first_commitments"] > 1
        _, d = _run(twins, "twins", p, "medal")
        assert d.search.stats["branch_expansions"] == 0


def test_bench_rows_carry_the_search_statistics(twins, problems):
    recs = bench(twins, "twins", problems[:4], ["greedy", "medal", "medal-order"],
                 GenerationConfig(), progress=False)
    for r in recs:
        if r["strategy"] == "greedy":
            assert "search_stats" not in r
        else:
            assert "winner_off_confident_path" in r["search_stats"]
    s = summarise(recs, ["greedy", "medal", "medal-order"])
    assert s["medal-order"]["search"]["share_winner_off_confident_path"] == 0.0
    assert s["medal-order"]["search"]["mean_nodes"] == 3
    table = format_table(s)
    for col, _, _ in SEARCH_COLUMNS:
        assert col in table.splitlines()[0]


def test_search_steps_setting(twins, problems):
    """At 2 steps (8 slots, L_c = 2) the commitments count against phase C's steps by
    default: 1, 1, 6 against greedy's 4, 4. "extra" gives phase C all its steps."""
    p = problems[0]
    recs = {}
    for strategy, extra in (("greedy", {}), ("medal", {}),
                            ("medal", {"search_steps": "extra"})):
        r = bench(twins, "twins", [p], [strategy], GenerationConfig(steps=2, **extra),
                  progress=False)[0]
        recs[(strategy, bool(extra))] = r["slots_per_step"]
    assert recs[("greedy", False)] == [4, 4]
    assert recs[("medal", False)] == [1, 1, 6]
    assert recs[("medal", True)] == [1, 1, 3, 3]
    # the default is the shipped behaviour
    assert GenerationConfig().search_steps == "count"


def test_cli_flags_for_the_new_settings():
    args = build_parser().parse_args(["bench", "--task", "twins", "--n", "1",
                                      "--search-steps", "extra", "--selection", "greedy"])
    cfg = config_from_args(args)
    assert (cfg.search_steps, cfg.selection) == ("extra", "greedy")
    with pytest.raises(InputError):
        GenerationConfig(search_steps="sometimes")
    with pytest.raises(InputError):
        GenerationConfig(selection="random")
    helptext = build_parser()._subparsers._group_actions[0].choices["bench"].format_help()
    for words in ("--search-steps", "top 64", "WITHIN the top K2", "deepest nodes"):
        assert words in " ".join(helptext.split())


def test_random_choice_control_is_medals_search_with_the_winner_at_random(sudoku):
    """Issue 38: ``medal-random-choice`` runs MEDAL's search -- the same candidates, with the
    same scores and the same phase-C answers -- and only draws the winner uniformly among
    them (its own stream: the run's generator is MEDAL's), so medal against it isolates the
    information-gain choice. On Sudoku (C = 3 candidates that differ) the draw leaves the
    IG winner on some problems, and re-running gives the same draw."""
    assert parse_strategies("medal-random-choice") == ["medal-random-choice"]
    left_ig = 0
    for p in SUDOKU.generate(10, seed=77):
        run_a, a = _run(sudoku, "sudoku", p, "medal")
        run, b = _run(sudoku, "sudoku", p, "medal-random-choice")
        assert run.config == run_a.config
        same = ("node", "cumulative_ig", "score", "r_ig", "sequence")
        assert [{k: c[k] for k in same} for c in a.search.candidates] == \
               [{k: c[k] for k in same} for c in b.search.candidates]
        finals = {c["node"]: c["final"]["answer"] for c in a.search.candidates}
        assert b.search.winner in finals and b.answer == finals[b.search.winner]
        assert a.search.stats == b.search.stats
        assert b.search.winner == a.search.candidates[random_choice(
            len(a.search.candidates), run.config.seed)]["node"]
        assert "[random-choice control]" in b.search.why
        left_ig += b.search.winner != a.search.winner
        assert _run(sudoku, "sudoku", p, "medal-random-choice")[1].search.winner == \
               b.search.winner
    assert left_ig


def test_random_choice_is_uniform():
    """The draw over 3 candidates, 3,000 seeds: each index about 1,000 times (the count is
    binomial, sd = sqrt(3000 * 1/3 * 2/3) = 25.8; 130 is 5 sd)."""
    counts = Counter(random_choice(3, seed) for seed in range(3000))
    assert set(counts) == {0, 1, 2}
    assert all(abs(c - 1000) < 130 for c in counts.values())


def test_explore_control_explores_at_the_default_pool(twins, problems):
    """Issue 38: ``medal-explore`` keeps MEDAL's pool (C = 3) and makes the tree branch
    (the explore mode: one candidate per parent, c = 1): its C candidates come from C
    different first commitments where MEDAL's share one."""
    for p in problems:
        run, res = _run(twins, "twins", p, "medal-explore")
        assert run.config.candidates == GenerationConfig().candidates == 3
        assert (run.config.one_per_parent, run.config.c) == (True, 1.0)
        st = res.search.stats
        assert st["candidates"] == 3 and st["distinct_first_commitments"] == 3
        assert st["branch_expansions"] > 0


def test_wide_pool_control_widens_without_exploring(sudoku):
    """Issue 38: ``medal-wide-pool`` collects C = 2 K2 candidates with greedy selection (no
    UCB bonus): its first candidates are the choice control's (the best-r_IG line's last
    expansion, best first), and it leaves that line only once the line is used up -- the
    pool grows best-first, not by exploration."""
    for p in SUDOKU.generate(6, seed=77):
        run, wide = _run(sudoku, "sudoku", p, "medal-wide-pool")
        assert (run.config.candidates, run.config.selection) == (2 * run.config.k2, "greedy")
        _, choice = _run(sudoku, "sudoku", p, "medal-choice")
        first = [c["node"] for c in choice.search.candidates]
        assert [c["node"] for c in wide.search.candidates][:len(first)] == first
        assert wide.search.stats["candidates"] == 10
        assert wide.search.stats["branch_expansions"] > 0   # the line alone holds 5
