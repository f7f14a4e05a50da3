"""The command line on the shipped built-in model, as a user runs it."""
import json
import subprocess
import sys

import pytest
from work import HANG

from medal.tasks.countdown import CountdownProblem, verify
from medal.trace import load_trace

ROOT = __import__("pathlib").Path(__file__).resolve().parents[2]


def cli(*args, check=True):
    proc = subprocess.run([sys.executable, "-m", "medal", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=HANG)
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


def test_generate_medal_with_trace(tmp_path):
    out = tmp_path / "trace.json"
    proc = cli("generate", "--model", "builtin:countdown", "--problem",
               '{"numbers": [4, 18, 13], "target": 20}', "--strategy", "medal", "--seed", "1",
               "--trace", str(out))
    assert "answer:" in proc.stdout and "verified:" in proc.stdout
    trace = load_trace(out)
    assert trace["run"]["strategy"] == "medal"
    answer = trace["result"]["answer"]
    assert trace["result"]["verified"] == verify(answer, CountdownProblem((4, 18, 13), 20))
    assert all(it["expansion"]["forwards"] <= 1 for it in trace["iterations"])


def test_generate_json_for_scripts():
    proc = cli("generate", "--prompt", "Use 3, 7, 12 to make 33.", "--strategy", "greedy",
               "--json", "--seed", "0")
    out = json.loads(proc.stdout)
    assert {"answer", "verified", "forwards", "seconds"} <= set(out)
    assert out["verified"] == verify(out["answer"], CountdownProblem((3, 7, 12), 33))
    assert out["forwards"] == 28


def test_same_seed_same_answer():
    args = ("generate", "--problem", '{"numbers": [5, 9, 16], "target": 61}', "--strategy",
            "bst5", "--json", "--seed", "7")
    a, b = json.loads(cli(*args).stdout), json.loads(cli(*args).stdout)
    assert a["answer"] == b["answer"] and a["forwards"] == b["forwards"]


def test_help_explains_every_parameter():
    text = cli("generate", "--help").stdout
    for flag in ("--k1", "--k2", "--lc", "--candidates", "--gamma", "--c", "--steps",
                 "--block-length", "--no-decompose", "--subtasks", "--strategy", "--trace",
                 "--json", "--problem", "--prompt", "--seed", "--max-iterations"):
        assert flag in text


@pytest.mark.parametrize("args,message", [
    (["--prompt", "Use 1, 2, 3 to make 6.", "--k1", "0"], "k1 must be"),
    (["--prompt", "Use 1, 2, 3 to make 6.", "--lc", "40"], "lc (40) must be shorter"),
    (["--prompt", "Use 1, 2, 3 to make 6.", "--strategy", "beam"], "unknown strategy"),
    (["--prompt", ""], "prompt is empty"),
    (["--problem", '{"numbers": [4, 18], "target": 20}'], "3 or 4 whole numbers"),
    (["--problem", "{numbers: 1}"], "not valid JSON"),
    (["--prompt", "x", "--model", "builtin:nothing"], "no built-in model"),
    ([], "give --prompt"),
])
def test_bad_input_is_a_clear_error(args, message):
    proc = cli("generate", *args, check=False)
    assert proc.returncode != 0
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr


def test_bad_flag_value_is_an_argparse_error():
    proc = cli("generate", "--prompt", "x", "--k1", "three", check=False)
    assert proc.returncode == 2 and "invalid int value" in proc.stderr
    assert "Traceback" not in proc.stderr
