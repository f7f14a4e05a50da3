"""The benchmark on the shipped model: records, summaries, sweeps and sharding."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from medal.bench import comparable, parse_strategies, summarise, wilson_interval
from medal.errors import InputError
from medal.tasks.countdown import CountdownProblem, load_problems, verify

ROOT = Path(__file__).resolve().parents[2]


def medal_cli(*args, env=None, timeout=600):
    proc = subprocess.run([sys.executable, "-m", "medal", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc


def test_wilson_interval():
    lo, hi = wilson_interval(5, 10)
    assert lo == pytest.approx(0.2366, abs=1e-3) and hi == pytest.approx(0.7634, abs=1e-3)
    assert wilson_interval(0, 0) == (0.0, 0.0)
    assert wilson_interval(10, 10)[1] == pytest.approx(1.0)


def test_parse_strategies():
    assert parse_strategies("greedy, medal,low-confidence") == ["greedy", "medal", "greedy"]
    with pytest.raises(InputError, match="unknown strategies"):
        parse_strategies("greedy,beam")


def test_summary_counts_verdicts():
    recs = [{"strategy": "a", "verified": v, "forwards": 2, "sequence_forwards": 3, "seconds": 1.0}
            for v in (True, False, True, None)]
    m = summarise(recs, ["a"])["a"]
    assert (m["n"], m["correct"], m["accuracy"]) == (4, 2, 0.5)
    assert m["mean_forwards"] == 2 and m["mean_sequence_forwards"] == 3


def test_bench_on_a_problem_file_rechecks_with_the_verifier(tmp_path):
    problems = tmp_path / "p.jsonl"
    problems.write_text('{"numbers": [4, 18, 13], "target": 20}\n'
                        '{"numbers": [3, 7, 12], "target": 33}\n')
    out = tmp_path / "r.json"
    proc = medal_cli("bench", "--task", "countdown", "--problems", str(problems), "--strategies",
                     "greedy,medal,bst5", "--seed", "0", "--out", str(out), "--no-progress",
                     "--frontier", "--sweep", "lc=1,2")
    assert "greedy" in proc.stdout and "ms/iteration" in proc.stdout
    doc = json.loads(out.read_text())
    assert doc["strategies"] == ["greedy", "medal", "bst5"] and len(doc["records"]) == 6
    listed = load_problems(problems)
    for rec in doc["records"]:
        problem = CountdownProblem(tuple(rec["problem"]["numbers"]), rec["problem"]["target"])
        assert problem == listed[rec["index"]]
        assert rec["verified"] == verify(rec["answer"], problem)
        assert rec["forwards"] >= 1
    medal_row = doc["summary"]["medal"]
    assert 0 <= medal_row["bookkeeping_share"] <= 1 and medal_row["ms_per_iteration"] > 0
    sweep = json.loads((tmp_path / "sweep_lc.json").read_text())
    assert [r["value"] for r in sweep] == [1, 2]
    for name in ("frontier.html", "sweep_lc.html"):
        html = (tmp_path / name).read_text()
        assert "<script" in html and 'src="http' not in html  # plotly inlined, opens offline


def test_sharded_run_equals_single_process(tmp_path):
    args = ["bench", "--task", "countdown", "--n", "4", "--strategies", "greedy,random,medal",
            "--seed", "3", "--no-progress"]
    medal_cli(*args, "--out", str(tmp_path / "one.json"))
    env = dict(os.environ, OMP_NUM_THREADS="1")
    proc = subprocess.run(
        [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", "2",
         "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no",
         "--main_process_port", "29617", "-m", "medal", *args, "--out", str(tmp_path / "two.json")],
        cwd=ROOT, capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    one = json.loads((tmp_path / "one.json").read_text())
    two = json.loads((tmp_path / "two.json").read_text())
    assert two["processes"] == 2 and one["processes"] == 1
    assert comparable(one) == comparable(two)
    assert not list(tmp_path.glob("*.shard*.json"))
