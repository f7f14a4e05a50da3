"""Tasks: how a problem becomes a prompt, how an answer is extracted and verified, and
how training data for the built-in models is generated."""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Callable

from ..errors import InputError
from . import countdown as _cd
from . import pick as _pk
from . import sudoku as _sd
from .decomposition import decompose_prompt


@dataclass(frozen=True)
class Task:
    name: str
    description: str
    problem_type: type
    parse_problem: Callable[[Any], Any]
    format_prompt: Callable[[Any], str]
    problem_from_prompt: Callable[[str], Any]
    verify: Callable[[str, Any], bool]
    extract_answer: Callable[[str], str]
    generate: Callable[..., list]
    load_problems: Callable[[str], list]
    save_problems: Callable[[list, str], None]
    example_problems: tuple
    default_gen_length: int
    default_lc: int
    #: semi-autoregressive block length used with the built-in model (None: one block)
    default_block_length: int | None = None
    #: whether MEDAL strategies decompose the prompt for the built-in model by default
    #: (instruct LLMs always follow the paper: on)
    default_decompose: bool = True
    #: answer slots whose text is fixed by the task's format, given the answer length:
    #: ``{slot: text}`` (e.g. Sudoku's ``/`` row separators). For character-level models
    #: (the built-in ones) these slots start filled instead of masked, so neither the
    #: search nor the decoder spends a step on them. None: every slot starts masked.
    answer_template: Callable[[int], dict[int, str]] | None = None
    #: denoising steps used with the built-in model when the user sets none (None: one
    #: slot per step). Pick decodes 2 slots per step: where parallel decoding can mix
    #: its answers (see :mod:`medal.tasks.pick`)
    default_steps: int | None = None

    def prompt(self, problem, decompose: bool = False, n_subtasks: int = 3,
               builtin: bool = True) -> str:
        """The model's prompt for ``problem``, with or without decomposition guidance."""
        return decompose_prompt(self.name, self.format_prompt(problem), problem,
                                decompose=decompose, n_subtasks=n_subtasks, builtin=builtin)


COUNTDOWN = Task(
    name="countdown",
    description="Combine the numbers with + - * / (each once) to reach the target.",
    problem_type=_cd.CountdownProblem,
    parse_problem=_cd.parse_problem,
    format_prompt=_cd.format_prompt,
    problem_from_prompt=_cd.problem_from_prompt,
    verify=_cd.verify,
    extract_answer=_cd.extract_answer,
    generate=_cd.generate_problems,
    load_problems=_cd.load_problems,
    save_problems=_cd.save_problems,
    example_problems=(_cd.CountdownProblem((4, 18, 13), 20), _cd.CountdownProblem((3, 7, 12), 33),
                      _cd.CountdownProblem((5, 9, 16), 61), _cd.CountdownProblem((2, 6, 15), 42),
                      _cd.CountdownProblem((8, 11, 19), 69)),
    default_gen_length=28,
    # measured on the shipped model, 300 fresh problems (docs/RESULTS.md, research table):
    # L_c = 1 and L_c = 2 both 30.3%, L_c = 4 (the default before) 22.7% at twice the
    # sequences; 2 keeps a real tree (two levels of commitments) for the same accuracy
    default_lc=2,
    # measured on the shipped model (docs/RESULTS.md): semi-autoregressive blocks of 7 lift
    # greedy from ~17% to ~22% and put the search's first commitments on the expression
    # rather than on the end-of-answer padding, where one block lets <eos> actions win
    default_block_length=7,
    # measured: the tiny model's step form ("Solve in 2 steps.") solves far fewer problems
    # than its expressions, so its decomposition is off unless asked for
    default_decompose=False,
)

SUDOKU = Task(
    name="sudoku",
    description="Fill the 4x4 grid so every row, column and 2x2 box holds 1-4 "
                "('.' is a blank, '/' ends a row).",
    problem_type=_sd.SudokuProblem,
    parse_problem=_sd.parse_problem,
    format_prompt=_sd.format_prompt,
    problem_from_prompt=_sd.problem_from_prompt,
    verify=_sd.verify,
    extract_answer=_sd.extract_answer,
    generate=_sd.generate_problems,
    load_problems=_sd.load_problems,
    save_problems=_sd.save_problems,
    example_problems=tuple(_sd.parse_problem(g) for g in (
        "..3./3.21/.3.2/.24.", "..2./23.4/...1/1...", "4..2/23.4/..23/3...",
        "...4/.13./2.../..2.", "..../23../..3./31.2")),
    default_gen_length=_sd.ANSWER_LENGTH,
    default_lc=3,
    answer_template=_sd.answer_template,
)

PICK = Task(
    name="pick",
    description="Write any one of the listed words (8 letters a-h). The words agree on "
                "some letters and differ on others: a decoder that writes several letters "
                "per step can mix two words. A positive control for search over the order.",
    problem_type=_pk.PickProblem,
    parse_problem=_pk.parse_problem,
    format_prompt=_pk.format_prompt,
    problem_from_prompt=_pk.problem_from_prompt,
    verify=_pk.verify,
    extract_answer=_pk.extract_answer,
    generate=_pk.generate_problems,
    load_problems=_pk.load_problems,
    save_problems=_pk.save_problems,
    example_problems=tuple(_pk.parse_problem(w) for w in (
        "abcdefgh abcdhfgc", "hagbcead hagfcebd hbgbcdad", "ddcafbge dhcafage",
        "cbbhgaef cbehgafe ebbhgaed", "fgabhcdd fgabecdh")),
    default_gen_length=_pk.ANSWER_LENGTH,
    default_lc=2,
    default_decompose=False,
    default_steps=_pk.DEFAULT_STEPS,
)

TASKS = {t.name: t for t in (COUNTDOWN, SUDOKU, PICK)}


def get_task(name: str) -> Task:
    try:
        return TASKS[name]
    except KeyError:
        raise InputError(f"unknown task {name!r}; choose one of: {', '.join(TASKS)}") from None


def countdown_training_example(rng: random.Random, p_four: float = 0.1,
                               p_decompose: float = 0.5, max_answer: int = 28,
                               p_uniform_target: float = 0.0,
                               canonical: bool = False) -> tuple[str, str]:
    """A (prompt, answer) pair for training the built-in Countdown model.

    Half the prompts ask for the decomposed (step) form -- the built-in model's reading
    of the paper's task decomposition -- and are answered in steps; the rest are answered
    with one expression.

    ``p_uniform_target`` of the three-number problems are drawn as the test problems are
    (:func:`~medal.tasks.countdown.uniform_target_solution`: the target uniform over the
    reachable ones); the rest are built forwards from random operations, whose targets
    cluster on easy values. With ``canonical`` those test-like problems are answered by
    their one :func:`~medal.tasks.countdown.canonical_solution` instead of a random one."""
    while True:
        n = 4 if rng.random() < p_four else 3
        # (no draw at all when the share is 0: the default data stream stays the one the
        # shipped model was trained on)
        if n == 3 and p_uniform_target > 0 and rng.random() < p_uniform_target:
            problem, expr, steps = _cd.uniform_target_solution(rng, canonical)
        else:
            sample = _cd.random_solution(rng, n)
            if sample is None:
                continue
            problem, expr, steps = sample
        decompose = steps is not None and rng.random() < p_decompose
        answer = steps if decompose else expr
        if len(answer) <= max_answer:
            return COUNTDOWN.prompt(problem, decompose=decompose), answer


def pick_training_example(rng: random.Random, max_answer: int = _pk.ANSWER_LENGTH) -> tuple[str, str]:
    """A (prompt, answer) pair for training the built-in Pick model: a problem and one of
    its words, drawn uniformly, so the model learns the mixture over the right answers."""
    if max_answer < _pk.ANSWER_LENGTH:
        raise InputError(f"a Pick answer is {_pk.ANSWER_LENGTH} letters; "
                         f"the model allows {max_answer}")
    problem, word = _pk.training_example(rng)
    return PICK.format_prompt(problem), word


def sudoku_training_example(rng: random.Random, max_answer: int = _sd.ANSWER_LENGTH,
                            min_blanks: int = 4, max_blanks: int = 12) -> tuple[str, str]:
    """A (prompt, answer) pair for training the built-in Sudoku model: a puzzle with a
    unique solution and ``min_blanks``..``max_blanks`` blanks, answered with the whole
    solved grid. No decomposition form: see :mod:`medal.tasks.decomposition`."""
    if max_answer < _sd.ANSWER_LENGTH:
        raise InputError(f"a Sudoku answer is {_sd.ANSWER_LENGTH} characters; "
                         f"the model allows {max_answer}")
    problem, solution = _sd.random_puzzle(rng, rng.randint(min_blanks, max_blanks))
    return SUDOKU.format_prompt(problem), _sd.grid_to_rows(solution)
