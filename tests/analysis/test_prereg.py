"""The pre-registered comparison's scripts (issue 38): the runner runs exactly the arms the
pre-registration lists, and the table is recomputed from the compact records alone --
each figure checked here against the bench's own documents (real small runs of the
shipped Avoid model) and against plain recomputations of McNemar, Holm and Kendall's tau."""
from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest

from medal import bench, load_model
from medal.config import GenerationConfig
from medal.tasks import AVOID

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

import prereg  # noqa: E402
import prereg_table  # noqa: E402
import records  # noqa: E402
from prereg_power import critical_wins, mcnemar_p, power  # noqa: E402


def test_the_runner_runs_the_preregistered_arms():
    """Every arm once per template, on the same problems (one --n, one --seed), with the
    flags docs/PREREGISTRATION.md lists, and the table reads every arm from those runs."""
    cmds = prereg.commands(1000, 380)
    assert len(cmds) == 2 * len(prereg.ARMS)
    text = (ROOT / "docs" / "PREREGISTRATION.md").read_text()
    for name, path, argv in cmds:
        line = " ".join(argv)
        assert "--n 1000 --seed 380" in line and "--task avoid" in line
        assert path.name == f"{name}.json"
        assert ("--template 0" in line) != ("--template 1" in line)
    lines = [" ".join(a) for _, _, a in cmds]
    assert any("--search explore" in l and "medal,medal-random-choice" in l for l in lines)
    assert any(f"bst5 --samples {prereg.N_BST}" in l for l in lines)
    assert f"bst5 --samples {prereg.N_BST}" in text and "seed 380" in text
    runs = {name for name, _, _ in prereg.ARMS}
    for arm, (run, strategy) in prereg_table.ARMS.items():
        assert run in runs
        assert strategy in next(s for n, s, _ in prereg.ARMS if n == run).split(",")


def test_exact_tests_and_corrections_by_hand():
    assert mcnemar_p(0, 0) == 1.0
    assert mcnemar_p(7, 0) == pytest.approx(2 / 2 ** 7)
    assert mcnemar_p(3, 5) == pytest.approx(2 * sum(math.comb(8, i) for i in range(4)) / 256)
    assert critical_wins(7, 0.05) == 7 and critical_wins(5, 0.05) is None
    # with no true difference the test rejects in the arm's favour at most alpha / 2
    assert power(200, 0.0, 0.3) <= 0.025
    assert power(1000, 0.06, 0.2) > power(500, 0.06, 0.2) > power(500, 0.06, 0.3)
    assert prereg_table.holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert prereg_table.kendall_tau([1, 2, 3], [1, 2, 3]) == pytest.approx(1.0)
    assert prereg_table.kendall_tau([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)


def _run_into(tmp_path, model, template: int, run: str, strategies: list[str],
              explore: bool = False):
    """A real small bench run of the Avoid model, written and kept as scripts/prereg.py
    keeps one (``explore``: with ``--search explore``)."""
    problems = AVOID.generate(6, seed=10380)
    config = GenerationConfig(template=template, seed=380)
    if explore:
        config = config.with_search_mode("explore")
    recs = bench.bench(model, "avoid", problems, strategies, config, progress=False)
    out = tmp_path / "results" / "avoid" / "prereg" / f"t{template}-{run}.json"
    doc = bench.results_document(recs, strategies, "avoid", config, "builtin:avoid",
                                 "generated: 6 problems, seed 10380")
    bench._write(out, doc)
    Path(str(out) + ".cmd").write_text(json.dumps({"command": f"test {run}", "started": "x",
                                                   "seconds": 1.0}))
    records.compact(out, tmp_path / "records", tmp_path / "results")
    return doc


def test_the_table_is_recomputed_from_the_records(tmp_path):
    model = load_model("builtin:avoid")
    docs = {}
    for t in (0, 1):
        docs[(t, "main")] = _run_into(tmp_path, model, t, "main",
                                      ["greedy", "medal", "ots", "soar"])
        docs[(t, "explore")] = _run_into(tmp_path, model, t, "explore",
                                         ["medal", "medal-random-choice"], explore=True)
    data = prereg_table.load_arms(tmp_path / "records" / "avoid" / "prereg")
    for t in (0, 1):
        want = {"greedy": ("main", "greedy"), "medal": ("main", "medal"),
                "ots": ("main", "ots"), "soar": ("main", "soar"),
                "medal explore": ("explore", "medal"),
                "medal explore random choice": ("explore", "medal-random-choice")}
        assert set(data[t]) == set(want)                 # the arms not run are left out
        for arm, (run, s) in want.items():
            rows = sorted((r for r in docs[(t, run)]["records"] if r["strategy"] == s),
                          key=lambda r: r["index"])
            assert data[t][arm]["verified"] == [bool(r["verified"]) for r in rows]
            assert data[t][arm]["sequences"] == [r["sequence_forwards"] for r in rows]
    text = prereg_table.tables(data)
    for t in (0, 1):
        g = data[t]["greedy"]["verified"]
        e = data[t]["medal explore"]["verified"]
        plus = sum(a and not b for a, b in zip(e, g))
        minus = sum(b and not a for a, b in zip(e, g))
        assert f"| {t} | medal explore | greedy |" in text
        assert f"+{plus}/−{minus} | {mcnemar_p(plus, minus):.3g} |" in text
    assert "(not run)" in text and "Kendall's tau-b" in text
    # --write replaces exactly the results between the markers
    doc = tmp_path / "PRE.md"
    doc.write_text(f"before\n{prereg_table.START}\nold\n{prereg_table.END}\nafter\n")
    prereg_table.DOC = doc
    prereg_table.main(["--write", "--records", str(tmp_path / "records" / "avoid" / "prereg")])
    written = doc.read_text()
    assert written.startswith("before\n") and written.endswith("after\n")
    assert "old" not in written and text in written


def test_the_committed_preregistration_is_what_its_records_give():
    """Once the comparison has run, the document's results are exactly what the committed
    records give (before it runs: the placeholder, and no records)."""
    doc = (ROOT / "docs" / "PREREGISTRATION.md").read_text()
    between = doc.split(prereg_table.START)[1].split(prereg_table.END)[0]
    if not any(prereg_table.RECORDS.glob("*.json")):
        assert between.strip() == "(not run yet)"
        return
    assert between.strip() == prereg_table.tables(prereg_table.load_arms()).strip()
