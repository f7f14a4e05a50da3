"""The CLI's last tracebacks (issue 21, "CLI"): each case gives one capped ``error:`` line
or a normal run, never a traceback."""
from __future__ import annotations

import pytest
import torch

from medal.cli import MAX_ERROR_CHARS, error_line, main, train_memory_estimate
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
    numbers = ",".join(str(i) for i in range(1, 100_001))   # ~590 kB
    assert main(["generate", "--problem", f'{{"numbers": [{numbers}], "target": 20}}']) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1
    assert len(err) <= MAX_ERROR_CHARS + 1 and err.rstrip().endswith("…")
    with pytest.raises(SystemExit) as info:   # a bad flag: argparse's error, capped too
        main(["generate", "--" + "x" * 5000])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and len(err) <= MAX_ERROR_CHARS + 1
    assert error_line("x\ny") == "error: x y"
