"""Task decomposition via prompt guidance (paper section 3.3).

The prompt is augmented with a two-shot example that splits a question into N subtasks
(paper default N=3) before the answer. It is a pure prompt transform: on/off and N.

Two families of templates:

* ``builtin=True`` -- the tiny built-in models cannot read a two-shot example, so each
  task says in ``BUILTIN_SUFFIX`` what instruction its built-in model was trained on:

  - Countdown: a short instruction (``Solve in 2 steps.``) answered with one subtask per
    step (``18-13=5,5*4=20``). The number of subtasks is fixed by the problem (one per
    combination of two numbers); N is then recorded but not free.
  - Sudoku: none -- decomposition is an explicit no-op for the built-in Sudoku model.
    Its answer is already written as its natural subtasks, one row after another
    (``1234/3412/2143/4321``), and a diffusion model fills the rows in whatever order
    it likes; an instruction suffix would only ask for the same 19 characters. So
    ``medal`` and ``medal-no-decomposition`` read the same prompt there, and the
    ablation is a no-op for this task (the trace still records ``decompose``).

  A task absent from ``BUILTIN_SUFFIX`` gets no suffix.
* ``builtin=False`` -- instruct LLMs (LLaDA, Dream): the paper's two-shot decomposition,
  with a per-task pair of examples in ``TWO_SHOT`` (a generic pair otherwise).
"""
from __future__ import annotations

from typing import Callable

from . import countdown as _cd

#: task -> the built-in model's decomposition instruction, given the effective N
BUILTIN_SUFFIX: dict[str, Callable[[int], str]] = {
    "countdown": _cd.decomposition_suffix,
}

TWO_SHOT = {
    "countdown": [
        ("Use 3, 5, 7 to make 22.",
         ["Find two numbers whose combination gets close to 22: 3 * 5 = 15.",
          "Combine the result with the remaining number 7: 15 + 7 = 22.",
          "Check every number is used once and the result is 22: (3*5)+7 = 22."],
         "3*5+7"),
        ("Use 10, 2, 6 to make 8.",
         ["Look for a division or subtraction that simplifies: 10 - 6 = 4.",
          "Combine the result with the remaining number 2: 4 * 2 = 8.",
          "Check every number is used once and the result is 8: (10-6)*2 = 8."],
         "(10-6)*2"),
    ],
    "sudoku": [
        ("Sudoku ..3./3.21/.3.2/.24.",
         ["Fill the cells forced by their row, column and box: row 2 needs 4, so 3421.",
          "Use the new digits to fill the other rows: 2134, then 4312.",
          "Finish the last row and check every row, column and box holds 1-4: 1243."],
         "2134/3421/4312/1243"),
        ("Sudoku ...2/324./1.2./2413",
         ["Fill the cells forced by their row, column and box: row 2 needs 1, so 3241.",
          "Use the new digits to fill row 1: 4132.",
          "Finish row 3 and check every row, column and box holds 1-4: 1324."],
         "4132/3241/1324/2413"),
    ],
    "generic": [
        ("What is the sum of the first three odd numbers?",
         ["Understand the question: add the odd numbers 1, 3, 5.",
          "Compute the partial sum: 1 + 3 = 4.",
          "Finish: 4 + 5 = 9."],
         "9"),
        ("Tom has 4 apples and buys 3 bags of 2 apples. How many apples does he have?",
         ["Identify the quantities: 4 apples, 3 bags of 2.",
          "Compute the bought apples: 3 * 2 = 6.",
          "Add: 4 + 6 = 10."],
         "10"),
    ],
}


def effective_subtasks(task: str, problem, n_subtasks: int, builtin: bool) -> int:
    if builtin and task == "countdown" and problem is not None:
        return len(problem.numbers) - 1
    return n_subtasks


def decompose_prompt(task: str, prompt: str, problem=None, *, decompose: bool = True,
                     n_subtasks: int = 3, builtin: bool = True) -> str:
    """``prompt`` augmented with the decomposition guidance (or unchanged when off)."""
    if not decompose:
        return prompt
    if n_subtasks < 1:
        from ..errors import InputError
        raise InputError(f"n_subtasks must be at least 1, got {n_subtasks}")
    if builtin:
        suffix = BUILTIN_SUFFIX.get(task)
        if suffix is None:
            return prompt
        return prompt + suffix(effective_subtasks(task, problem, n_subtasks, builtin))
    shots = TWO_SHOT.get(task, TWO_SHOT["generic"])
    parts = [f"Solve the problem by breaking it into {n_subtasks} subtasks, then answer.\n"]
    for question, subtasks, answer in shots:
        steps = _fit(subtasks, n_subtasks)
        parts.append(f"Question: {question}\n" + "".join(
            f"Subtask {k}: {s}\n" for k, s in enumerate(steps, 1)) + f"Answer: {answer}\n")
    parts.append(f"Question: {prompt}\n")
    return "\n".join(parts)


def _fit(subtasks: list[str], n: int) -> list[str]:
    """Stretch or shrink an example's subtasks to exactly ``n`` lines."""
    if n <= len(subtasks):
        return subtasks[: n - 1] + [subtasks[-1]] if n > 1 else [subtasks[-1]]
    return subtasks[:-1] + [f"Refine the intermediate result (step {k})."
                            for k in range(len(subtasks), n)] + [subtasks[-1]]
