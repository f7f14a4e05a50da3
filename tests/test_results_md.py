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


def test_sweep_verdict_a_collapse_is_not_a_plateau():
    """'Gains rise with L_c and saturate': a rise then a collapse (the largest setting's
    interval wholly below the peak's) is not reproduced; a rise then a plateau is."""
    from medal.bench import wilson_interval

    def rows(accs, n=100):
        return [{"value": v, "accuracy": a, "ci95": list(wilson_interval(round(a * n), n))}
                for v, a in accs]
    collapse = rows([(1, 0.38), (2, 0.40), (4, 0.31), (6, 0.14)])
    plateau = rows([(1, 0.38), (2, 0.40), (4, 0.41), (6, 0.40)])
    clear = rows([(1, 0.10), (2, 0.40), (4, 0.41), (6, 0.40)])
    assert results_md._sweep_outcome("lc", collapse) == "no"
    assert results_md._sweep_outcome("lc", plateau) == "direction"
    assert results_md._sweep_outcome("lc", clear) == "full"
    assert results_md.sweep_verdict("lc", [collapse, plateau]).startswith("**partly**")
    assert results_md.sweep_verdict("lc", [collapse, None]) == "**not reproduced**"
