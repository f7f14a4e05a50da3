"""The CLI's last tracebacks (issue 21, "CLI"): each case gives one capped ``error:`` line
or a normal run, never a traceback."""
from __future__ import annotations

import pytest
import torch

from medal.cli import main, train_memory_estimate
from medal.errors import MAX_ERROR_CHARS, error_line
from medal.tasks.countdown import problem_from_prompt

P = '{"numbers": [4, 18, 13], "target": 20}'


@pytest.mark.parametrize("flags", [
    ["--strategy", "bst5", "--temperature", "0.01"],
    ["--strategy", "bst5", "--temperature", "0.001"],
    ["--simulation", "sample", "--temperature", "0.001"],
    ["--simulation", "sample", "--temperature", "0.01"],
])
def test_low_sampling_temperatures_run(flags, capsys):
    assert main(["generate", "--problem", P, *flags]) == 0
    assert "answer:" in capsys.readouterr().out


def test_sampling_at_a_low_temperature_is_argmax_like():
    from medal.runner import Evaluation
    probs = torch.tensor([[0.5, 0.3, 0.2], [1e-5, 1e-6, 1e-7]])
    ev = Evaluation(answer=torch.zeros(2, dtype=torch.long), masked=torch.ones(2, dtype=torch.bool),
                    entropy=torch.zeros(2), top_tokens=torch.tensor([[7, 8, 9], [4, 5, 6]]),
                    top_probs=probs)
    g = torch.Generator().manual_seed(0)
    assert ev.sample_tokens(g, temperature=0.001).tolist() == [7, 4]


def test_a_5000_digit_number_in_a_prompt():
    assert problem_from_prompt("Use 4, 18, 13 to make " + "9" * 5000 + ".") is None
    assert problem_from_prompt("Use " + "9" * 5000 + ", 18, 13 to make 20.") is None
    assert problem_from_prompt("Use 4, 18, 13 to make 20.") is not None


def test_a_5000_digit_prompt_on_the_command_line(capsys):
    code = main(["generate", "--prompt", "Use 4, 18, 13 to make " + "9" * 5000 + "."])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error: ") and len(err) <= MAX_ERROR_CHARS + 1


def test_training_a_model_that_cannot_fit_is_refused_before_allocating(tmp_path, capsys):
    assert train_memory_estimate(64, 4096, 1, 54) > 100 * 2 ** 30
    assert main(["train", "--out", str(tmp_path / "m"), "--steps", "1", "--batch-size", "1",
                 "--width", "4096", "--layers", "64"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: training 64 layers x 4096 wide") and "GiB" in err
    assert not (tmp_path / "m" / "model.safetensors").exists()


def test_error_lines_are_capped(capsys):
    """An echoed input is cut in its middle; the message around it -- what failed, what
    to do -- is kept whole (issue 27: the cut at 300 characters lost every fix)."""
    numbers = ",".join(str(i) for i in range(1, 100_001))   # ~590 kB
    assert main(["generate", "--problem", f'{{"numbers": [{numbers}], "target": 20}}']) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: numbers must be a list of 3 or 4 whole numbers, got [1, 2")
    assert err.count("\n") == 1 and len(err) <= 200
    assert err.rstrip().endswith("99999, 100000] (688,895 characters)")
    with pytest.raises(SystemExit) as info:   # a bad flag: argparse's error, capped too
        main(["generate", "--" + "x" * 5000])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and len(err) <= 200
    assert err.rstrip().endswith("(see medal --help)") or "--help)" in err
    # a message's later lines are its details, indented under the first
    assert error_line("x\ny") == "error: x\n  y"
    # any over-long line keeps its start and its end
    long = "what failed " + " ".join(["word"] * 400) + " -- do this"
    line = error_line(long)
    assert len(line) <= MAX_ERROR_CHARS + 7 and line.startswith("error: what failed")
    assert line.endswith("-- do this")
    # a file's path is what the reader copies: kept whole (a CI's temporary folder made
    # ``tests/networks/test_damaged_weights.py`` fail: 85 characters, cut at 80)
    path = "/tmp/pytest-of-root/pytest-125/popen-gw0/damaged0/trailing-bytes/model.safetensors"
    assert error_line(f"{path} is damaged: download it again") == \
        f"error: {path} is damaged: download it again"
    assert "characters)" in error_line("/" + "x" * 500 + " is damaged")


def test_errors_lead_with_the_fix(tmp_path, capsys, monkeypatch):
    """Issue 27: the memory refusal lost its --skip-memory-check hint, the remote-code
    refusal was cut at 'or set MED...', the transformers-5 failure before 'install
    transformers 4.x'. Each now says what to do on its first line, whole."""
    import standins
    from medal.models import hf
    folder = standins.save_checkpoint(tmp_path / "llada", "llada", "native", seed=0)
    deep = tmp_path / ("a-long-folder-name-" * 12) / "llada"     # a long path in the message
    deep.parent.mkdir(parents=True)
    folder.rename(deep)
    run = ["generate", "--model", f"llada:{deep}", "--prompt", "Hi", "--gen-length", "4"]

    def first_line():
        err = capsys.readouterr().err
        assert err.startswith("error: "), err
        return err.splitlines()[0]

    monkeypatch.setattr(hf.memory_guard, "available_memory", lambda device: 1e6)
    assert main(run) == 2
    line = first_line()
    assert "not enough memory" in line and line.endswith(
        "if you know it fits, --skip-memory-check (memory_check=False) loads it anyway")
    monkeypatch.undo()
    monkeypatch.delenv(hf.TRUST_REMOTE_CODE_ENV, raising=False)
    assert main(run + ["--implementation", "remote"]) == 2
    line = first_line()
    assert "needs remote code" in line and f"set {hf.TRUST_REMOTE_CODE_ENV}=1" in line
    assert line.endswith("(spec@<commit> or --revision)")

    def broken(*args, **kwargs):
        raise AttributeError("'LLaDAModelLM' object has no attribute "
                             "'all_tied_weights_keys' " + "x" * 2000)
    monkeypatch.setenv(hf.TRUST_REMOTE_CODE_ENV, "1")
    import transformers
    monkeypatch.setattr(transformers.AutoModel, "from_pretrained", broken)
    assert main(run + ["--implementation", "remote"]) == 2
    err = capsys.readouterr().err
    first, details = err.splitlines()[0], err.splitlines()[1:]
    assert first.startswith("error: could not load") and first.endswith(
        "install transformers 4.x (pip install 'transformers>=4.50,<5'; docs/REAL_MODELS.md)")
    assert details and "all_tied_weights_keys" in details[0]