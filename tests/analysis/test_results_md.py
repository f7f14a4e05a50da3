"""scripts/results_md.py: docs/RESULTS.md written from bench JSON (no model needed)."""
import importlib.util
import json
from pathlib import Path

from medal.bench import results_document
from medal.config import GenerationConfig

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("results_md", ROOT / "scripts" / "results_md.py")
results_md = importlib.util.module_from_spec(spec)
spec.loader.exec_module(results_md)


def _doc(task, right: dict[str, list[bool]], seqs: dict[str, float]):
    records = []
    for s, verdicts in right.items():
        for i, v in enumerate(verdicts):
            records.append({"strategy": s, "index": i, "problem": {}, "verified": v,
                            "forwards": seqs[s], "sequence_forwards": seqs[s],
                            "cache_hits": 1, "seconds": 0.1})
    return results_document(records, list(right), task, GenerationConfig(), "builtin:" + task,
                            "synthetic")


def test_mcnemar_exact():
    a = {i: i < 10 for i in range(20)}
    b = {i: False for i in range(20)}
    assert results_md.mcnemar(a, b) == (10, 0, 2 / 2 ** 10)
    assert results_md.mcnemar(a, a) == (0, 0, 1.0)


def test_renders_tables_verdicts_and_research(tmp_path):
    n = 40
    greedy = [i % 5 == 0 for i in range(n)]                   # 20%
    medal = [i % 5 == 0 or i % 7 == 1 for i in range(n)]      # more
    doc = _doc("countdown", {"greedy": greedy, "bst5": greedy, "medal": medal},
               {"greedy": 28, "bst5": 100, "medal": 30})
    (tmp_path / "countdown" / "research").mkdir(parents=True)
    (tmp_path / "countdown" / "results.json").write_text(json.dumps(doc))
    vote = _doc("countdown", {"medal": medal}, {"medal": 30})
    (tmp_path / "countdown" / "research" / "vote_lc1_s8.json").write_text(json.dumps(vote))
    out = tmp_path / "R.md"
    results_md.main(str(tmp_path), str(out))
    text = out.read_text()
    assert "| greedy | 20.0% |" in text
    g = 8 / 40
    m = sum(medal) / n
    assert f"{(m / g - 1):+.0%}" in text
    # medal: +relative, cost 30 <= 100/3 -> the research row meets the target
    assert "**Found:**" in text and "| yes |" in text
    assert "(not run)" in text          # sudoku and the rest are marked, not invented


def test_paired_outcome_rules():
    """Issue 20's rules: a significant result against the paper is reversed, not partly;
    no significant difference is not reproduced, whatever the sign."""
    po = results_md.paired_outcome
    assert po(9, 33, 0.0002) == "reversed"                 # Sudoku: MEDAL 56% vs greedy 64%
    assert po(21, 17, 0.63) == "not reproduced"            # Countdown: +4 on 300, p=0.63
    assert po(9, 21, 0.04) == "reversed"
    assert po(40, 10, 1e-5) == "reproduced"
    assert po(40, 10, 1e-5, target_met=False) == "partly"  # significant, target missed
    assert po(12, 12, 1.0) == "not reproduced"


def test_combine_lists_each_tasks_verdict():
    text = results_md.combine({"countdown": "not reproduced", "sudoku": "reversed",
                               "pick": "reproduced"})
    assert text.startswith("**reversed** (Sudoku)")
    assert "**not reproduced** (Countdown)" in text and "**reproduced** (Pick)" in text
    assert results_md.combine({"countdown": None}) == "not run"


def _sweep_rows(settings, n=100):
    """settings: value -> (verified list, fingerprint)."""
    rows = []
    for v, (right, fp) in settings.items():
        rows.append({"value": v, "accuracy": sum(right) / n, "mean_sequence_forwards": 10,
                     "verified": right, "search": {"fingerprint": fp}})
    return rows


def test_sweep_that_did_not_change_the_computation_is_untested():
    n = 100
    base = [i < 40 for i in range(n)]
    low = [i < 38 for i in range(n)]
    # max_iterations 2..32 all stopped after 2 iterations: one search
    rows = _sweep_rows({1: (low, "a"), 2: (base, "b"), 4: (base, "b"), 8: (base, "b"),
                        32: (base, "b")})
    verdict, note = results_md.sweep_outcome("max_iterations", rows)
    # issue 30: two settings ran different searches (1 and 2), so the row is tested: judged
    # on 1 -> 2 (+2/-0, not significant), not marked untested because 2..32 coincide
    assert verdict == "not reproduced"
    assert "2, 4, 8, 32 ran the same search" in note and "1 → 2: +2/−0" in note
    # every setting the same search
    same = _sweep_rows({1: (base, "x"), 2: (base, "x")})
    assert results_md.sweep_outcome("max_iterations", same)[0] == "untested"
    assert results_md.same_search_groups(rows) == [[1], [2, 4, 8, 32]]


def test_sweep_outcomes_rise_fall_and_k2():
    n = 100
    small = [i < 20 for i in range(n)]
    big = [i < 60 for i in range(n)]
    rise = _sweep_rows({1: (small, "a"), 2: (big, "b"), 4: (big, "c")})
    assert results_md.sweep_outcome("lc", rise)[0] == "reproduced"
    fall = _sweep_rows({1: (big, "a"), 2: (big, "b"), 6: (small, "c")})
    assert results_md.sweep_outcome("lc", fall)[0] == "reversed"
    flat = _sweep_rows({1: (big, "a"), 6: ([i < 58 for i in range(n)], "c")})
    assert results_md.sweep_outcome("lc", flat)[0] == "not reproduced"
    k2_best = _sweep_rows({1: (small, "a"), 5: (big, "b"), 10: (small, "c")})
    assert results_md.sweep_outcome("k2", k2_best)[0] == "reproduced"
    k2_worse = _sweep_rows({1: (big, "a"), 5: (small, "b"), 10: (small, "c")})
    assert results_md.sweep_outcome("k2", k2_worse)[0] == "reversed"


def test_claims_table_marks_a_significant_loss_reversed(tmp_path):
    n = 60
    greedy = [i < 40 for i in range(n)]
    medal = [i < 20 for i in range(n)]        # 20 problems lost, none won: p < 0.001
    doc = _doc("sudoku", {"greedy": greedy, "bst5": greedy, "medal": medal,
                          "medal-no-mcts": greedy}, {"greedy": 16, "bst5": 28, "medal": 40,
                                                     "medal-no-mcts": 16})
    (tmp_path / "sudoku").mkdir()
    (tmp_path / "sudoku" / "results.json").write_text(json.dumps(doc))
    out = tmp_path / "R.md"
    results_md.main(str(tmp_path), str(out))
    text = out.read_text()
    row = next(ln for ln in text.splitlines() if ln.startswith("| MEDAL beats greedy"))
    assert "**reversed** (Sudoku)" in row and "partly" not in row
    row = next(ln for ln in text.splitlines() if ln.startswith("| w/o MCTS"))
    assert "**reversed** (Sudoku)" in row


def _rows_with_depth(settings, n=300):
    """settings: value -> (verified list, fingerprint, mean depth reached)."""
    return [{"value": v, "accuracy": sum(r) / n, "mean_sequence_forwards": 10, "verified": r,
             "search": {"fingerprint": fp, "mean_depth_reached": depth}}
            for v, (r, fp, depth) in settings.items()]


def test_iterations_claim_counts_only_searches_that_reach_lc():
    """Issue 38 (it was issue 30's rule, which credited a shorter L_c to more search): a
    budget below L_c cuts the search before depth L_c -- a shorter L_c, not less search --
    so those settings are left out of the claim. Sudoku: 1 and 2 are cut, 4 and 8 reached
    L_c and ran different searches (8 = 32): the claim is tested on 4 -> 8 only. Twins: 1
    is cut and 2, 4, 8, 32 ran one search: the budget never binds, **untested** (the old
    rule said "reproduced" from 1 -> 2 alone, +68/-0)."""
    n = 300
    acc = lambda k: [i < k for i in range(n)]   # noqa: E731
    sudoku = _rows_with_depth({1: (acc(174), "a", 1.0), 2: (acc(171), "b", 2.0),
                               4: (acc(177), "c", 3.0), 8: (acc(174), "d", 3.0),
                               32: (acc(174), "d", 3.0)})
    verdict, note = results_md.sweep_outcome("max_iterations", sudoku, lc=3)
    assert verdict == "not reproduced"
    assert "4 → 8: +0/−3" in note and "1 → 2" not in note and "2 → 4" not in note
    assert "8, 32 ran the same search" in note and "1, 2: the budget cut" in note
    twins = _rows_with_depth({1: (acc(132), "a", 1.0), **{v: (acc(200), "b", 2.0)
                                                         for v in (2, 4, 8, 32)}})
    verdict, note = results_md.sweep_outcome("max_iterations", twins, lc=2)
    assert verdict == "untested"
    assert "1: the budget cut the search before depth L_c" in note
    assert "the budget does not bind" in note and "1 → 2" not in note
    # a budget that binds on full-depth searches is tested
    binds = _rows_with_depth({2: (acc(100), "a", 2.0), 4: (acc(150), "b", 2.0)})
    assert results_md.sweep_outcome("max_iterations", binds, lc=2)[0] == "reproduced"
    # untested only when no two settings ran different searches
    one = _rows_with_depth({v: (acc(200), "z", 2.0) for v in (1, 2, 4)})
    assert results_md.sweep_outcome("max_iterations", one, lc=2)[0] == "untested"
    # L_c itself is judged over every setting, the budget's cut aside
    assert results_md.sweep_outcome("lc", twins)[0] == "reproduced"


def test_monotone_claims_are_judged_over_every_setting():
    """L_c: the old rule compared only the smallest with the largest setting. A significant
    rise 1 -> 2 with 2, 4, 6 alike is a rise (1 vs 6 alone would say the same here, but
    a rise then a significant fall is reversed even when 1 and 6 are equal)."""
    n = 100
    acc = lambda k: [i < k for i in range(n)]   # noqa: E731
    rise = _sweep_rows({1: (acc(20), "a"), 2: (acc(60), "b"), 4: (acc(60), "c"),
                        6: (acc(58), "d")})
    verdict, note = results_md.sweep_outcome("lc", rise)
    assert verdict == "reproduced"
    assert "1 → 2: +40/−0" in note and "2 → 4: +0/−0" in note and "4 → 6: +0/−2" in note
    up_down = _sweep_rows({1: (acc(20), "a"), 2: (acc(60), "b"), 6: (acc(20), "c")})
    assert results_md.sweep_outcome("lc", up_down)[0] == "reversed"
    # K2: a paired p-value for every comparison in the note
    k2 = _sweep_rows({1: (acc(20), "a"), 3: (acc(20), "b"), 5: (acc(60), "c"),
                      10: (acc(20), "d")})
    verdict, note = results_md.sweep_outcome("k2", k2)
    assert verdict == "reproduced"
    for v in (1, 3, 10):
        assert f"5 vs {v}: +40/−0, p<0.001" in note


def _searched_doc(task, right: dict, same_as: dict | None = None):
    """A results document whose MEDAL-like strategies carry search statistics; strategies
    in ``same_as`` copy another's search (equal fingerprints)."""
    same_as = same_as or {}
    records = []
    for s, verdicts in right.items():
        for i, v in enumerate(verdicts):
            rec = {"strategy": s, "index": i, "problem": {}, "verified": v, "forwards": 4,
                   "sequence_forwards": 12, "cache_hits": 1, "seconds": 0.1,
                   "slots_per_step": [1, 1, 3, 3] if s != "greedy" else [2, 2, 2, 2]}
            if s.startswith("medal") and s != "medal-no-mcts":
                src = same_as.get(s, s)
                rec.update(iterations=2, stop_reason="candidates", search_seconds=0.01,
                           search_model_seconds=0.005, winner=len(src),
                           candidates=[{"node": len(src), "final_answer": src,
                                        "cumulative_ig": 0.5, "score": 0.5,
                                        "final_verified": v}],
                           answer=str(v),
                           search_stats={"iterations": 2, "depth_reached": 2, "nodes": 11,
                                         "branch_expansions": 0, "candidates": 3,
                                         "distinct_candidate_states": 3,
                                         "distinct_first_commitments": 1,
                                         "winner_off_confident_path": s != "medal-order"})
            records.append(rec)
    return results_document(records, list(right), task, GenerationConfig(), "builtin:" + task,
                            "synthetic")


def test_controls_section_and_search_columns(tmp_path):
    """Issue 30: the controls' table and effects, untested where two strategies ran the
    same search, the search statistics in the headline table, and the Twins prose that
    no longer credits the search for what the order does."""
    n = 200
    greedy = [i < 80 for i in range(n)]
    full = [True] * n
    doc = _searched_doc("twins", {"greedy": greedy, "medal-no-mcts": greedy,
                                  "medal-order": full, "medal-choice": full, "medal": full,
                                  "medal-branching": full}, same_as={"medal-choice": "medal"})
    (tmp_path / "twins").mkdir()
    (tmp_path / "twins" / "results.json").write_text(json.dumps(doc))
    out = tmp_path / "R.md"
    results_md.main(str(tmp_path), str(out))
    text = out.read_text()
    assert "## What the search's parts buy: the controls" in text
    head = next(ln for ln in text.splitlines() if ln.startswith("| strategy | accuracy"))
    assert "distinct first commitments" in head and "winner off the most confident" in head
    row = next(ln for ln in text.splitlines() if ln.startswith("| medal-order | 100.0%"))
    assert "| 2.0 | 11.0 | 0.00 | 1.00 | 0.0% |" in row
    assert "oracle over its candidates | random pick of them" in head
    ucb = next(ln for ln in text.splitlines() if ln.startswith("| UCB at the defaults"))
    assert "**untested** (Twins)" in ucb
    order = next(ln for ln in text.splitlines() if ln.startswith("| order: MEDAL's schedule "
                                                                 "(L_c"))
    assert "**reproduced** (Twins)" in order
    assert "the search is what does it" not in text
    assert "But the search is not what does it" in text
    claim = next(ln for ln in text.splitlines()
                 if ln.startswith("| the search's alternatives beat its schedule"))
    assert "**not reproduced** (Twins)" in claim
    assert "| Twins | 2, 2, 2, 2 | 1, 1, 3, 3 |" in text      # the step budget table
    assert "top 64 tokens" in text and "--search-steps" in text   # the departures


def _templates_module():
    import sys
    sys.path.insert(0, str(ROOT / "scripts"))
    from results_doc import templates
    return templates


def test_ranks_share_ties_and_kendall_tau_b():
    tm = _templates_module()
    assert tm.ranks({"a": 0.5, "b": 0.7, "c": 0.5, "d": 0.1}) == {
        "b": 1, "a": 2.5, "c": 2.5, "d": 4}
    same = {"a": 3, "b": 2, "c": 1}
    assert tm.kendall_tau_b(same, same) == 1.0
    assert tm.kendall_tau_b(same, {"a": 1, "b": 2, "c": 3}) == -1.0
    # one tie: pairs (a,b) concordant, (a,c) tied in the second, (b,c) discordant
    # -> (1 - 1) / sqrt(3 * 2) = 0
    assert tm.kendall_tau_b(same, {"a": 2, "b": 1, "c": 2}) == 0.0
    assert tm.kendall_tau_b({"a": 1, "b": 1}, {"a": 1, "b": 2}) is None


def test_templates_section_calls_a_flip_real_only_when_both_templates_say_so(tmp_path):
    """A template section from synthetic runs: the ranks, the pairs that change order, and
    the flips significant in both templates (medal against greedy: +20/-0 in template 0,
    +0/-21 in template 1; against bst5 alike); a change of order within noise (bst5 vs
    greedy: one problem) is counted as a change but not as a real flip."""
    tm = _templates_module()
    n = 60
    base = [i % 3 == 0 for i in range(n)]                      # 20 right
    up = [b or (i % 3 == 1) for i, b in enumerate(base)]       # +20
    down = [False] * n                                         # -20
    nudge = base[:]
    nudge[1] = True                                            # +1
    docs = {0: _doc("twins", {"greedy": base, "medal": up, "bst5": nudge},
                    {"greedy": 4, "medal": 12, "bst5": 20}),
            1: _doc("twins", {"greedy": nudge, "medal": down, "bst5": base},
                    {"greedy": 4, "medal": 12, "bst5": 20})}
    for t, doc in docs.items():
        doc["what_ran"] = {"command": "python -m medal bench --task twins --model "
                                      f"builtin:twins-2t --template {t}"}
        (tmp_path / "twins" / "templates").mkdir(parents=True, exist_ok=True)
        (tmp_path / "twins" / "templates" / f"t{t}.json").write_text(json.dumps(doc))
    text = "\n".join(tm.templates_section(tmp_path))
    assert "| medal | 66.7% (54–77%) | 1 | 0.0% (0–6%) | 3 | 12.0 / 12.0 |" in text
    assert "| greedy | 33.3% (23–46%) | 3 | 35.0% (24–48%) | 1 | 4.0 / 4.0 |" in text
    assert "3 of 3 pairs change order" in text
    assert "2 of them significantly in both" in text
    assert "greedy vs medal (template 0 +0/−20, p<0.001; template 1 +21/−0, p<0.001)" in text
    assert "bst5 vs greedy" not in text
    # the edge itself: +1 on 20 problems in template 0, -1 on 21 in template 1; it shrank
    # on 40 problems (1 + 20 + 19) and grew on none
    assert "template 0: 66.7% vs 33.3%, +20/−0, p<0.001 (better); template 1: 0.0% vs 35.0%, " \
           "+0/−21, p<0.001 (worse). **The verdict depends on the template**: medal's edge is " \
           "+33.3 points in template 0 and -35.0 in template 1 (its change per problem: " \
           "+0/−40, p<0.001)." in text
    loaded = {t: results_md.load(tmp_path / "twins" / "templates" / f"t{t}.json") for t in (0, 1)}
    mean0, mean1, grew, shrank, p = tm.interaction(loaded, "medal", "greedy")
    assert (round(mean0, 4), round(mean1, 4), grew, shrank) == (0.3333, -0.35, 0, 40)
    assert p == 2 / 2 ** 40
    assert "Significant flips (each in both templates): Twins: greedy vs medal; Twins: bst5 " \
           "vs medal." in text
    assert "a verdict that depends on the template on Twins (better in template 0, worse " \
           "in template 1)" in text
    assert "### Countdown\n\n(not run)" in text
    # one template only: said, not filled in
    (tmp_path / "twins" / "templates" / "t1.json").unlink()
    assert "(not run: only template 0)" in "\n".join(tm.templates_section(tmp_path))


def test_a_verdict_that_differs_only_in_significance_is_not_called_a_template_effect():
    """Significant in one template and not the other, with the edge itself not differing
    between them (the interaction test): short of power, not a different answer."""
    tm = _templates_module()
    worse_then_none = {0: "worse", 1: "no significant difference"}
    assert tm.judge(worse_then_none, (-0.05, -0.04, 31, 29, 0.90)) == "power"
    assert tm.judge(worse_then_none, (-0.05, 0.30, 100, 2, 1e-20)) == "depends"
    assert tm.judge({0: "better", 1: "better"}, (0.5, 0.1, 0, 60, 1e-9)) == "same"
