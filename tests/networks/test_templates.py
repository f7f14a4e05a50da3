"""Issue 38 #5: two prompt templates per task. Every task with a verifier writes a problem two
ways (the ``template`` setting); the models trained on both (``builtin:<task>-2t``) read
both; a model is refused a template it was never trained on (its answers there would
measure the unread prompt, not the decoder); the shipped models' training stream is
unchanged by the new option."""
from __future__ import annotations

import hashlib
import json
import random

import pytest

from medal import load_model
from medal.config import GenerationConfig
from medal.engine import Run
from medal.errors import InputError
from medal.models.builtin import builtin_names, models_for_template
from medal.tasks import get_task, task_of_trace
from medal.train import EXAMPLE_MAKERS, train
from recipe_checks import check_recorded_command

TEMPLATED = ("countdown", "sudoku", "pick", "twins", "avoid")
TWO = ("countdown", "sudoku", "pick", "twins")   # the tasks with a -2t model beside their own


@pytest.mark.parametrize("name", TEMPLATED)
def test_each_template_round_trips_and_names_the_task(name):
    task = get_task(name)
    assert task.prompt_templates == 2
    problems = task.generate(60, seed=4)
    for p in problems:
        prompts = [task.templated_prompt(p, t) for t in (0, 1)]
        assert prompts[0] != prompts[1]
        for prompt in prompts:
            assert task.problem_from_prompt(prompt) == p
            assert task_of_trace({"run": {"prompt": prompt}}) == name
    with pytest.raises(InputError, match="templates 0..1"):
        task.templated_prompt(problems[0], 2)
    # another task's prompt in either template is not this task's problem
    for other in TEMPLATED:
        if other != name:
            q = get_task(other).example_problems[0]
            for t in (0, 1):
                assert task.problem_from_prompt(get_task(other).templated_prompt(q, t)) is None


def test_the_word_tasks_parse_template_1_as_given():
    """A Pick or Twins problem typed in template 1's form parses (as template 0's does)."""
    for name in ("pick", "twins"):
        task = get_task(name)
        for p in task.generate(20, seed=9):
            assert task.parse_problem(task.templated_prompt(p, 1)) == p
            assert task.parse_problem(task.templated_prompt(p, 0)) == p


@pytest.mark.parametrize("name", TEMPLATED)
def test_every_training_prompt_fits_the_shipped_model(name):
    """Both templates, every form a training example takes (Countdown's step form and
    four numbers included), fit the prompt the task's model reads."""
    model = load_model(f"builtin:{name}")
    rng = random.Random(1)
    options = ({"p_decompose": 0.5, "p_four": 0.5, "p_uniform_target": 0.5}
               if name == "countdown" else {})
    longest = max(len(model.tokenizer.encode(EXAMPLE_MAKERS[name](rng, templates=2, **options)[0]))
                  for _ in range(2000))
    assert longest <= model.net.cfg.prompt_length


def _stream_hash(name: str, **options) -> str:
    rng = random.Random(7)
    return hashlib.sha256(json.dumps(
        [EXAMPLE_MAKERS[name](rng, **options) for _ in range(300)]).encode()).hexdigest()[:16]


def test_the_shipped_models_training_stream_is_unchanged():
    """Without ``templates`` no template is drawn at all, so each shipped model's recorded
    command still makes the stream it was trained on. The hashes were taken from the code
    before templates existed (it gave the same 300 examples per task, compared whole)."""
    cd = {"p_decompose": 0.1, "p_four": 0.05, "p_uniform_target": 1.0, "canonical": True}
    assert {n: _stream_hash(n, **(cd if n == "countdown" else {})) for n in EXAMPLE_MAKERS} == {
        "countdown": "451a6c9ca2cdef66", "sudoku": "d0dc4d4911a381a5",
        "pick": "ef71f61a8c236e2e", "twins": "5280222c760e864c", "avoid": "611968fa806e6255"}


@pytest.mark.parametrize("name", TWO)
def test_templates_2_draws_both_about_equally(name):
    task = get_task(name)
    rng = random.Random(3)
    n, first = 600, 0
    for _ in range(n):
        prompt, _ = EXAMPLE_MAKERS[name](rng, templates=2)
        problem = task.problem_from_prompt(prompt)
        first += prompt.startswith(task.templated_prompt(problem, 0))
    # a fair draw: 300 expected, sd 12.2; 4.5 sd either side
    assert 245 <= first <= 355


def test_train_refuses_templates_the_task_lacks(tmp_path):
    with pytest.raises(InputError, match="--templates must lie in 1..2"):
        train("countdown", out=tmp_path / "m", steps=1, templates=3)
    with pytest.raises(InputError, match="avoid model trains on both"):
        train("avoid", out=tmp_path / "m", steps=1, templates=1)
    assert not (tmp_path / "m").exists()


def test_the_checkpoint_records_its_templates(tmp_path):
    for templates, want in ((None, 1), (2, 2)):
        info = train("sudoku", out=tmp_path / str(templates), steps=2, batch_size=4,
                     n_layer=1, n_embd=16, templates=templates, threads=1)
        assert info["training"]["templates"] == want
        assert ("--templates 2" in info["training"]["command"]) == (templates == 2)
        meta = json.loads((tmp_path / str(templates) / "config.json").read_text())
        assert meta["training"]["templates"] == want


def test_shipped_models_say_which_templates_they_read():
    read = {n: load_model(f"builtin:{n}").prompt_templates for n in builtin_names()}
    assert read == {"countdown": 1, "sudoku": 1, "pick": 1, "twins": 1, "avoid": 2,
                    "countdown-2t": 2, "sudoku-2t": 2, "pick-2t": 2, "twins-2t": 2}
    for name in TWO:
        assert models_for_template(name, 1) == [f"builtin:{name}-2t"]
        assert models_for_template(name, 0) == [f"builtin:{name}", f"builtin:{name}-2t"]
    assert models_for_template("avoid", 1) == ["builtin:avoid"]


@pytest.mark.parametrize("name", TWO)
def test_a_model_is_refused_a_template_it_never_read(name):
    task = get_task(name)
    problem = task.example_problems[0]
    model = load_model(f"builtin:{name}")
    message = f"builtin:{name} was trained on .* template 0 only.*builtin:{name}-2t"
    with pytest.raises(InputError, match=message):
        Run(model, task=name, problem=problem, config=GenerationConfig(template=1))
    # a prompt typed in template 1's form is the same request
    with pytest.raises(InputError, match=message):
        Run(model, task=name, prompt=task.templated_prompt(problem, 1))
    if name == "countdown":      # with the step form's instruction after it
        with pytest.raises(InputError, match=message):
            Run(model, task=name, prompt=task.templated_prompt(problem, 1) + " Solve in 2 steps.")
    Run(model, task=name, prompt=task.templated_prompt(problem, 0))
    both = load_model(f"builtin:{name}-2t")
    for t in (0, 1):
        run = Run(both, task=name, problem=problem, config=GenerationConfig(template=t))
        assert run.prompt.startswith(task.templated_prompt(problem, t))


@pytest.mark.parametrize("name", TWO)
def test_recorded_command_of_the_two_template_model(name):
    tr = check_recorded_command(name, budget_seconds=3600, model=f"{name}-2t")
    assert tr["templates"] == 2


@pytest.mark.parametrize("name", TWO)
def test_the_two_template_model_reads_template_1_and_the_shipped_one_does_not(name):
    """Why the guard: on 40 fresh problems in template 1, greedy with the shipped model
    (the guard lifted) solves at most 1 (0 of 100 measured, docs/MODELS.md), with the -2t
    model at least 3. Its rate on 300 problems is 19.3% at the least (Countdown), where 2
    or fewer of 40 has a chance of 1.0%; the run is seeded (Countdown solves 5 here, the
    others 11-26), so the margin is for a retrained model, not for chance."""
    task = get_task(name)
    problems = task.generate(40, seed=10_000 + 77)

    def solved(model) -> int:
        return sum(bool(Run(model, task=name, problem=p, strategy="greedy",
                            config=GenerationConfig(template=1)).finish().verified)
                   for p in problems)

    shipped = load_model(f"builtin:{name}")
    shipped.prompt_templates = 2        # the guard lifted: what it would answer
    assert solved(shipped) <= 1
    assert solved(load_model(f"builtin:{name}-2t")) >= 3
