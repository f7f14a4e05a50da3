"""scripts/results_md.py: docs/RESULTS.md written from bench JSON (no model needed)."""
import importlib.util
import json
from pathlib import Path

from medal.bench import results_document
from medal.config import GenerationConfig

ROOT = Path(__file__).resolve().parents[1]
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
    assert verdict == "untested"
    assert "2, 4, 8, 32 ran the same search" in note and "1 → 2" in note
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
