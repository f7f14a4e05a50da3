"""The Pick task (issue 20's positive control): generator, verifier, prompt round trip,
the default of 2 slots per step, the shipped model's recorded command, and -- on the real
shipped model -- that parallel decoding mixes words where an early commitment does not."""
from __future__ import annotations

import json
import random
import shlex
from pathlib import Path

import pytest

from medal import load_model
from medal.cli import build_parser
from medal.config import GenerationConfig
from medal.engine import Run
from medal.errors import InputError
from medal.tasks import PICK, get_task, pick_training_example
from medal.tasks import pick as pk

ROOT = Path(__file__).resolve().parents[1]
ASSET = ROOT / "medal" / "assets" / "pick"


def test_generator_draws_two_distinct_words():
    problems = PICK.generate(200, seed=3)
    assert problems == PICK.generate(200, seed=3)           # reproducible
    for p in problems:
        assert len(p.words) == 2 and p.words[0] != p.words[1]
        assert all(len(w) == 8 and set(w) <= set(pk.LETTERS) for w in p.words)
        assert p.answers() == ("1" + p.words[0], "2" + p.words[1])
    assert sum(p.differing for p in problems) / len(problems) > 6   # mostly different


def test_verifier_accepts_a_number_and_its_word():
    p = pk.parse_problem("abcdefgh hbgcedfa")
    assert PICK.verify("1abcdefgh", p) and PICK.verify("2hbgcedfa", p)
    assert PICK.verify(" 1abcd efgh", p)                   # spaces are not characters
    assert not PICK.verify("2abcdefgh", p)                 # the other word's number
    assert not PICK.verify("1abgcedfa", p)                 # a mix of the two words
    assert not PICK.verify("abcdefgh", p)                  # no number
    assert not PICK.verify("", p) and not PICK.verify(None, p)


def test_prompt_round_trip_and_parsing():
    for p in PICK.generate(20, seed=1):
        prompt = PICK.format_prompt(p)
        assert PICK.problem_from_prompt(prompt) == p
        assert pk.parse_problem(p.to_json()) == p
        assert pk.parse_problem(json.dumps(p.to_json())) == p
    for bad in ("abc", "abcdefgh", '{"words": ["abcdefgh", "abcdefgh"]}',
                "abcdefgh abcdefgz", '{"x": 1}', "abcdefgh bbcdefgh cbcdefgh"):
        with pytest.raises(InputError):
            pk.parse_problem(bad)
    assert PICK.problem_from_prompt("Use 1, 2, 3 to make 6.") is None


def test_training_examples_answer_with_either_word():
    rng = random.Random(0)
    seen = set()
    for _ in range(200):
        prompt, answer = pick_training_example(rng)
        problem = PICK.problem_from_prompt(prompt)
        assert answer in problem.answers()
        seen.add(answer[0])
    assert seen == {"1", "2"}
    with pytest.raises(InputError):
        pick_training_example(rng, max_answer=4)


def test_default_steps_apply_only_when_set_and_unset_by_the_user():
    cfg = GenerationConfig().resolved(9, PICK.default_lc, None, None, PICK.default_steps)
    assert cfg.steps == 9 and cfg.gen_length == 9            # Pick: one slot per step
    assert GenerationConfig().resolved(8, 2, None, None, 4).steps == 4
    assert GenerationConfig(steps=8).resolved(8, 2, None, None, 4).steps == 8
    # a default that does not fit the answer falls back to one slot per step
    assert GenerationConfig().resolved(3, 1, None, None, 4).steps == 3
    assert get_task("pick") is PICK


# ------------------------------------------------------------ the shipped model

def _training():
    return json.loads((ASSET / "config.json").read_text())["training"]


def test_recorded_command_is_the_one_that_ran():
    """Re-parse the recorded training command with the CLI's own parser: every option it
    gives must be what the checkpoint records, and the architecture must match."""
    meta = json.loads((ASSET / "config.json").read_text())
    tr = meta["training"]
    argv = shlex.split(tr["command"])
    assert argv[:4] == ["python", "-m", "medal", "train"]
    args = build_parser().parse_args(argv[3:])
    assert args.task == meta["task"] == "pick"
    assert (args.steps, args.batch_size, args.lr, args.seed) == (
        tr["steps"], tr["batch_size"], tr["lr"], tr["seed"])
    assert args.threads == tr["threads"]
    assert args.bf16 == tr["bf16"]
    arch = meta["config"]
    assert (args.layers, args.width) == (arch["n_layer"], arch["n_embd"])
    assert (args.prompt_length or 22, args.answer_length or 9) == (
        arch["prompt_length"], arch["answer_length"])
    assert Path(args.out) == Path("medal/assets/pick")
    assert tr["seconds"] <= 3600, "the issue's budget: at most 60 minutes of training"
    assert tr["parameters"] == sum(
        p.numel() for p in load_model("builtin:pick").net.parameters())


@pytest.fixture(scope="module")
def model():
    return load_model("builtin:pick")


def _accuracy(model, problems, strategy, **cfg):
    right = 0
    for i, p in enumerate(problems):
        res = Run(model, task="pick", problem=p, strategy=strategy,
                  config=GenerationConfig(seed=i, **cfg)).finish()
        right += bool(res.verified)
    return right / len(problems)


def test_the_number_first_makes_the_rest_a_copy(model):
    """The premise on the real model: with the number committed first, the model writes
    that word; with a differing letter committed first it cannot follow (it mixes)."""
    from medal.runner import ModelRunner
    problems = PICK.generate(30, seed=77)
    by_number = by_letter = 0
    for i, p in enumerate(problems):
        for first in ("number", "letter"):
            run = Run(model, task="pick", problem=p, strategy="greedy",
                      config=GenerationConfig(seed=i))
            state = run.new_state()
            slot = 0 if first == "number" else next(
                j + 1 for j in range(8) if p.words[0][j] != p.words[1][j])
            token = model.tokenizer.encode("1" if first == "number" else p.words[0][slot - 1])[0]
            state.answer[slot] = token
            state.order[slot] = 0
            state.step = 1
            state.steps_in_block = {0: 1}
            from medal.decoding import decode
            for _ in decode(run.runner, state, run.config, "low_confidence", "decode"):
                pass
            text = model.decode_masked(state.answer)
            ok = PICK.verify(text, p) and text.startswith("1")
            if first == "number":
                by_number += ok
            else:
                by_letter += ok
    assert by_number >= 0.9 * len(problems)
    assert by_letter <= by_number - 0.3 * len(problems)


def test_medal_beats_greedy_on_the_positive_control(model):
    problems = PICK.generate(40, seed=78)
    greedy = _accuracy(model, problems, "greedy")
    medal = _accuracy(model, problems, "medal")
    assert medal >= greedy + 0.1


def test_pick_runs_render_as_an_expression_view(model):
    from medal.viz import board
    problem = PICK.example_problems[0]
    run = Run(model, task="pick", problem=problem, strategy="medal", compare_greedy=True,
              trace=True)
    run.finish()
    trace = run.trace
    assert board.task_of(trace) == "pick"
    html = board.task_view_html(trace)
    assert "words: " + "  ".join(problem.words) in html
    for which, res in (("medal", trace["result"]), ("greedy", trace["comparison"]["result"])):
        expected = ("= word " if res["verified"] else "(not a number and its word")
        assert expected in html
    # the prompt alone is enough to tell the task
    assert board.task_of({"run": {"prompt": trace["run"]["prompt"]}}) == "pick"
