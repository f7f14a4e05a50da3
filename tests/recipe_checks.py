"""Checks shared by the built-in models' tests: the training command recorded in a
checkpoint's config.json is the one that ran."""
from __future__ import annotations

import json
import shlex
from pathlib import Path

from medal import load_model
from medal.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]


def check_recorded_command(task: str, budget_seconds: float = 3600,
                           model: str | None = None) -> dict:
    """Re-parse the recorded training command with the CLI's own parser: every option it
    gives must be what the checkpoint records, the architecture must match the weights,
    and the recorded time must be within ``budget_seconds``. Returns the training record.
    ``model``: the shipped folder when it is not the task's own (``countdown-2t``)."""
    model = model or task
    meta = json.loads((ROOT / "medal" / "assets" / model / "config.json").read_text())
    tr = meta["training"]
    argv = shlex.split(tr["command"])
    assert argv[:4] == ["python", "-m", "medal", "train"]
    args = build_parser().parse_args(argv[3:])
    assert args.task == meta["task"] == task
    # the prompt templates it was trained on: what the command asked for (default: the
    # task's own form; Avoid always both), as the checkpoint records them
    assert tr.get("templates", 1) == (args.templates or (2 if task == "avoid" else 1))
    assert (args.steps, args.batch_size, args.lr, args.seed) == (
        tr["steps"], tr["batch_size"], tr["lr"], tr["seed"])
    assert args.threads == tr["threads"]
    assert args.bf16 == tr["bf16"]
    arch = meta["config"]
    assert (args.layers, args.width) == (arch["n_layer"], arch["n_embd"])
    assert (args.prompt_length, args.answer_length) == (
        arch["prompt_length"], arch["answer_length"])
    assert Path(args.out) == Path(f"medal/assets/{model}")
    assert tr["seconds"] <= budget_seconds, f"the budget: at most {budget_seconds} s of training"
    assert tr["parameters"] == sum(
        p.numel() for p in load_model(f"builtin:{model}").net.parameters())
    return tr


def decode_after_commitment(model, task: str, problem, slot: int, letter: str, seed: int,
                            steps: int) -> str:
    """Greedy decoding in ``steps`` steps after ``letter`` is written at ``slot`` first (the
    word-choice tasks' premise: does the model follow a written letter?)."""
    from medal.config import GenerationConfig
    from medal.decoding import decode
    from medal.engine import Run
    run = Run(model, task=task, problem=problem, strategy="greedy",
              config=GenerationConfig(seed=seed, steps=steps))
    state = run.new_state()
    state.answer[slot] = model.tokenizer.encode(letter)[0]
    state.order[slot], state.step, state.steps_in_block = 0, 1, {0: 1}
    for _ in decode(run.runner, state, run.config, "low_confidence", "decode"):
        pass
    return model.decode_masked(state.answer)


def check_word_view(model, task) -> None:
    """A word-choice task's run (Pick, Twins) renders as the words and, for MEDAL's and
    greedy's answers, which word each is or that it mixes them; the prompt alone names
    the task."""
    from medal.engine import Run
    from medal.tasks import get_task
    from medal.views import board
    problem = get_task(task).example_problems[0]
    run = Run(model, task=task, problem=problem, strategy="medal", compare_greedy=True,
              trace=True)
    run.finish()
    trace = run.trace
    assert board.task_of(trace) == task
    html = board.task_view_html(trace)
    assert "words: " + "  ".join(problem.words) in html
    for res in (trace["result"], trace["comparison"]["result"]):
        assert ("= word " if res["verified"] else "(not one of the words: a mix)") in html
    assert board.task_of({"run": {"prompt": trace["run"]["prompt"]}}) == task
