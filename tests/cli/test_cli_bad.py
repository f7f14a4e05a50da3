"""Bad command lines (issue 9, failure 7): each gives exactly one ``error:`` line and exit
status 2, before any work starts (no model is loaded, nothing runs), and never a
traceback or a run without bound."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from medal import cli
from work import HANG, lines_run

BIG = "9" * 5000        # beyond Python's 4300-digit limit on int()
DEEP = "[" * 100_000    # beyond the recursion limit


@pytest.fixture
def files(tmp_path):
    """Problem files of every wrong kind, and paths that cannot be written."""
    line = '{"numbers": [4, 18, 13], "target": 20}\n'
    made = {
        "latin1": ("# café\n" + line).encode("latin-1"),
        "utf16": line.encode("utf-16"),
        "binary": bytes(range(256)) * 4,
        "empty": b"",
        "blank": b"\n   \n\t\n",
        "bigint": ('{"numbers": [' + BIG + ', 1, 2], "target": 3}\n').encode(),
        "deep": (DEEP + "\n").encode(),
        "notjson": b"{numbers: 1}\n",
    }
    out = {}
    for name, content in made.items():
        p = tmp_path / f"{name}.jsonl"
        p.write_bytes(content)
        out[name] = str(p)
    out["dir"] = str(tmp_path)
    out["missing_dir"] = str(tmp_path / "no" / "such" / "dir" / "x.json")
    out["missing"] = str(tmp_path / "missing.jsonl")
    readonly = tmp_path / "ro"
    readonly.mkdir()
    readonly.chmod(0o500)
    out["readonly_dir"] = str(readonly / "x.json")
    return out


P = '--problem={"numbers": [4, 18, 13], "target": 20}'
#: (name, argv with {placeholders} from the fixture, a word the message must contain)
BAD = [
    # parameters out of range (the cases first)
    ("temperature 1e-320", ["generate", P, "--temperature", "1e-320"], "temperature"),
    ("slot temperature 1e-320", ["generate", P, "--slot-temperature", "1e-320"], "slot_temperature"),
    ("pair temperature 1e-320", ["generate", P, "--strategy", "medal-no-mcts",
                                 "--pair-temperature", "1e-320"], "pair_temperature"),
    ("seed 2**64", ["generate", P, "--seed", str(2 ** 64)], "seed"),
    ("seed negative", ["generate", P, "--seed", "-1"], "seed"),
    ("samples 1000000", ["bench", "--n", "2", "--samples", "1000000"], "samples"),
    ("n 1e9", ["bench", "--n", "1e9"], "--n"),
    ("parts without profile", ["bench", "--n", "2", "--parts"], "--parts"),
    ("lock-step 0", ["bench", "--n", "2", "--lock-step", "0"], "--lock-step"),
    ("n 10**9", ["bench", "--n", str(10 ** 9)], "--n"),
    ("k2 1000000", ["bench", "--n", "2", "--k2", "1000000"], "k2"),
    ("2000 strategies", ["bench", "--n", "2", "--strategies", ",".join(["medal"] * 2000)],
     "strategies"),
    ("k1 0", ["generate", P, "--k1", "0"], "k1"),
    ("candidates 10**6", ["generate", P, "--candidates", str(10 ** 6)], "candidates"),
    ("max iterations 10**9", ["generate", P, "--max-iterations", str(10 ** 9)], "max_iterations"),
    ("gen length 10**9", ["generate", P, "--gen-length", str(10 ** 9)], "gen_length"),
    ("gamma nan", ["generate", P, "--gamma", "nan"], "gamma"),
    ("c inf", ["generate", P, "--c", "inf"], "c must"),
    ("temperature 1e9", ["generate", P, "--temperature", "1e9"], "temperature"),
    ("subtasks 0", ["generate", P, "--subtasks", "0"], "n_subtasks"),
    ("k2 as text", ["generate", P, "--k2", "many"], "--k2"),
    ("huge int flag", ["generate", P, "--k1", BIG], "--k1"),
    ("sweep 2000 values", ["bench", "--n", "2", "--sweep", "lc=" + ",".join(["1"] * 2000)], "sweep"),
    ("sweep out of range", ["bench", "--n", "2", "--sweep", "k2=1,1000000"], "k2"),
    ("sweep unknown", ["bench", "--n", "2", "--sweep", "bogus=1"], "sweep"),
    ("train steps 0", ["train", "--steps", "0", "--out", "{dir}/ckpt"], "--steps"),
    ("train lr 0", ["train", "--lr", "0", "--out", "{dir}/ckpt"], "--lr"),
    ("train share 2", ["train", "--decompose-share", "2", "--out", "{dir}/ckpt"], "decompose"),
    ("train width 10**9", ["train", "--width", str(10 ** 9), "--out", "{dir}/ckpt"], "--width"),
    ("train templates 3", ["train", "--templates", "3", "--out", "{dir}/ckpt"], "--templates"),
    ("train task text", ["train", "--task", "text", "--out", "{dir}/ckpt"], "no training data"),
    ("train avoid templates 1", ["train", "--task", "avoid", "--templates", "1", "--out",
                                 "{dir}/ckpt"], "both its prompt templates"),
    # problems given inline
    ("problem 5000 digits", ["generate", '--problem={"numbers": [' + BIG + ', 1, 2], "target": 3}'],
     "problem"),
    ("problem deep", ["generate", "--problem=" + DEEP], "problem"),
    ("no prompt", ["generate"], "--prompt"),
    # problem files
    ("latin-1 file", ["bench", "--problems", "{latin1}"], "UTF-8"),
    ("UTF-16 file", ["bench", "--problems", "{utf16}"], "UTF-8"),
    ("binary file", ["bench", "--problems", "{binary}"], "UTF-8"),
    ("empty file", ["bench", "--problems", "{empty}"], "no problems"),
    ("blank file", ["bench", "--problems", "{blank}"], "no problems"),
    ("5000-digit line", ["bench", "--problems", "{bigint}"], "line 1"),
    ("deep line", ["bench", "--problems", "{deep}"], "nested"),
    ("not JSON", ["bench", "--problems", "{notjson}"], "not valid JSON"),
    ("missing file", ["bench", "--problems", "{missing}"], "no problem file"),
    ("directory as file", ["bench", "--problems", "{dir}"], "no problem file"),
    ("/dev/zero as file", ["bench", "--problems", "/dev/zero"], "no problem file"),
    # outputs that cannot be written, found before any work
    ("trace missing dir", ["generate", P, "--trace", "{missing_dir}"], "does not exist"),
    ("trace is a dir", ["generate", P, "--trace", "{dir}"], "directory"),
    ("trace /dev/full", ["generate", P, "--trace", "/dev/full"], "regular file"),
    ("out missing dir", ["bench", "--n", "2", "--out", "{missing_dir}"], "does not exist"),
    ("out is a dir", ["bench", "--n", "2", "--out", "{dir}"], "directory"),
    ("out /dev/full", ["bench", "--n", "2", "--out", "/dev/full"], "regular file"),
    ("train out /dev/full", ["train", "--out", "/dev/full"], "not a directory"),
    ("train out missing", ["train", "--out", "{missing_dir}"], "does not exist"),
    # commands and flags
    ("unknown command", ["bogus"], "invalid choice"),
    ("unknown flag", ["generate", P, "--frobnicate"], "unrecognized"),
    ("serve port 0", ["serve", "--port", "0"], "--port"),
    ("serve bad limit", ["serve", "--max-samples", "0"], "MEDAL_MAX_SAMPLES"),
]
if os.geteuid() != 0:  # root may write anywhere
    BAD.append(("trace read-only dir", ["generate", P, "--trace", "{readonly_dir}"],
                "not writable"))


@pytest.fixture
def no_work(monkeypatch):
    """Any model load, training or Streamlit start means work began: fail loudly."""
    import medal.models
    import medal.train

    def refuse(*args, **kwargs):
        raise AssertionError("work started before the bad invocation was refused")

    monkeypatch.setattr(medal.models, "load_model", refuse)
    monkeypatch.setattr(medal.train, "train", refuse)
    import streamlit.web.cli
    monkeypatch.setattr(streamlit.web.cli, "main", refuse)


@pytest.mark.parametrize("name, argv, word", BAD, ids=[b[0] for b in BAD])
def test_bad_invocation_is_one_error_line_and_exit_2(name, argv, word, files, no_work, capsys):
    argv = [a.format(**files) if "{" in a and not a.startswith(("--problem=", "[")) else a
            for a in argv]

    def run():
        try:
            return cli.main(argv)
        except SystemExit as exc:       # argparse's own refusals
            return exc.code
    # a refusal is quick work; a hang passes any ceiling of Python lines and fails there
    # (counted, not timed: tests/work.py)
    status, _ = lines_run(run, 50_000_000)
    out, err = capsys.readouterr()
    lines = [line for line in err.splitlines() if line.strip()]
    assert status == 2, (status, err)
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert word.lower() in lines[0].lower(), lines[0]
    assert "Traceback" not in err and not out


def test_every_parameter_documents_its_range():
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    for command in ("generate", "bench", "train"):
        for action in sub.choices[command]._actions:
            if action.type in (int, float) and action.dest not in ("help",):
                assert "range" in (action.help or ""), (command, action.dest)


def test_unwritable_output_found_before_the_run(tmp_path, monkeypatch, capsys):
    """Failure 7: --trace to a missing folder was found only after the whole run."""
    import medal.models
    calls = []
    monkeypatch.setattr(medal.models, "load_model", lambda *a, **k: calls.append(a))
    status = cli.main(["generate", P, "--trace", str(tmp_path / "nope" / "t.json")])
    assert status == 2 and not calls


def test_good_invocation_still_runs(tmp_path, capsys):
    trace = tmp_path / "t.json"
    status = cli.main(["generate", P, "--max-iterations", "3", "--candidates", "1",
                       "--trace", str(trace), "--no-compare"])
    assert status == 0 and trace.is_file()
    from medal.trace import load_trace
    assert load_trace(trace)["run"]["strategy"] == "medal"


def test_a_disk_that_fills_up_is_an_error_line(monkeypatch, tmp_path, capsys):
    import medal.cli

    def full(*args, **kwargs):
        raise OSError(28, "No space left on device", str(tmp_path / "t.json"))
    monkeypatch.setattr("medal.trace.write_trace", full)
    status = medal.cli.main(["generate", P, "--max-iterations", "2", "--candidates", "1",
                             "--trace", str(tmp_path / "t.json"), "--no-compare"])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and len(err) == 1 and "No space left" in err[0]


def test_hub_spec_that_cannot_be_reached_is_one_error_line_at_once(tmp_path):
    """Failure 7: a hub spec while offline ran for 50 s, retrying, with a warning line
    from huggingface_hub before the error. Now the host is probed first (here an address
    that never resolves, so the test asks no network) and the answer is one line."""
    import os
    import subprocess
    import sys
    env = dict(os.environ, HF_ENDPOINT="https://medal-test-no-such-host.invalid",
               HF_HOME=str(tmp_path / "hf"), HF_HUB_OFFLINE="0")
    for spec in ("mlm:nosuchorg/nosuchmodel", "dream:nosuchorg/nosuchmodel"):
        proc = subprocess.run([sys.executable, "-m", "medal", "generate", "--model", spec,
                               "--trust-remote-code", "--dtype", "bfloat16", "--prompt", "hi"],
                              capture_output=True, text=True, env=env, timeout=HANG)
        lines = [line for line in proc.stderr.splitlines() if line.strip()]
        assert proc.returncode == 2, proc.stderr
        assert len(lines) == 1 and lines[0].startswith("error: could not load"), proc.stderr
        assert "medal-test-no-such-host.invalid could not be resolved" in lines[0]


# ---------------------------------------------------------------- medal-lm-eval (issue 31)

def test_lm_eval_device_in_model_args_combines_with_lm_evals_own():
    """docs/LM_EVAL.md lists device= in --model_args; lm-eval also passes its own device:
    the two are one option (model_args wins), not 'got multiple values for device'."""
    pytest.importorskip("lm_eval")
    from medal.lm_eval.model import MedalLM
    for extra in ({"device": "cpu", "batch_size": 1}, {"device": None}, None):
        lm = MedalLM.create_from_arg_string("model=builtin:countdown,device=cpu", extra)
        assert lm.model.name == "builtin:countdown"
        lm = MedalLM.create_from_arg_obj({"model": "builtin:countdown", "device": "cpu"}, extra)


LM_EVAL_BAD = [("model=nosuch", "unknown model spec"), ("model=builtin:countdown,k1=0", "k1"),
               ("model=builtin:countdown,strategy=x", "strategy"),
               ("model=builtin:countdown,trace_dir=/proc/x/y", "trace_dir"),
               ("model=builtin:countdown,seed=-1", "seed"),
               ("model=builtin:countdown,,=3", "option name"),
               ("model=builtin:countdown,k1=abc", "k1"),
               ("model=builtin:countdown,trust_remote_code=maybe", "trust_remote_code"),
               ("model=builtin:countdown,gen_length=99999999999999999999", "gen_length"),
               ("model=builtin:countdown,lc=1e999", "lc")]


@pytest.mark.parametrize("model_args, word", LM_EVAL_BAD, ids=[b[0] for b in LM_EVAL_BAD])
def test_lm_eval_bad_model_args_are_one_error_line(model_args, word, capsys):
    """lm-eval's command line is dispatched outside medal's error handler: a bad
    --model_args must still end in one error line and exit 2, not a traceback."""
    pytest.importorskip("lm_eval")
    from medal.lm_eval.model import MedalLM
    from medal.errors import InputError, ModelLoadError
    with pytest.raises((InputError, ModelLoadError), match="(?i)" + word):
        MedalLM.create_from_arg_string(model_args, {"device": "cpu", "batch_size": 1})


def test_lm_eval_command_turns_a_medal_error_into_one_line(monkeypatch, capsys):
    pytest.importorskip("lm_eval")
    import lm_eval.__main__ as harness
    from medal.errors import ModelLoadError
    from medal.lm_eval import main

    def boom():
        raise ModelLoadError("unknown model spec 'nosuch'")
    monkeypatch.setattr(harness, "cli_evaluate", boom)
    assert main(["--model", "medal", "--model_args", "model=nosuch"]) == 2
    assert cli.main(["lm-eval", "--model", "medal", "--model_args", "model=nosuch"]) == 2
    out, err = capsys.readouterr()
    lines = [line for line in err.splitlines() if line.strip()]
    assert lines == ["error: unknown model spec 'nosuch'"] * 2 and "Traceback" not in err
