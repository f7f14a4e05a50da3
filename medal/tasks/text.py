"""Free text: any prompt, passed to the model exactly as written.

The task for prompts that are not a Countdown or Sudoku problem -- above all the prompts
lm-evaluation-harness builds (GSM8K's few-shot questions, MATH, HumanEval...):

* no decomposition: the prompt reaches the model as written, whatever the strategy
  (an instruct model's adapter still wraps it in the model's chat template, as it does
  for every task; see :meth:`medal.models.hf.tokens.TokenizerSide.format_prompt`);
* no verifier: an answer is never marked right or wrong here (the harness scores it);
* the answer is the decoded text, unchanged;
* no problems: there is nothing to generate, load or save -- a run takes a prompt.
"""
from __future__ import annotations

from ..errors import InputError

#: prompts the app offers as examples (short enough for the built-in models)
EXAMPLE_PROMPTS = ("Use 4, 18, 13 to make 20.", "What is 7 times 8?")


class NoProblem:
    """The text task's problem type: it has none (a run of this task takes a prompt)."""


def parse_problem(obj) -> NoProblem:
    raise InputError("the text task has no problems: give the prompt itself "
                     "(--prompt, or Run(..., prompt=...))")


def format_prompt(prompt) -> str:
    """The prompt, as written."""
    return str(prompt)


def problem_from_prompt(prompt: str) -> None:
    """Never a problem: a free-text answer has no verifier."""
    return None


def verify(answer: str, problem) -> bool:
    raise InputError("the text task has no verifier: score its answers elsewhere "
                     "(e.g. with lm-evaluation-harness)")


def extract_answer(text: str) -> str:
    """The whole decoded text, unchanged."""
    return str(text)


def _no_problems(*args, **kwargs):
    raise InputError("the text task has no problems to generate, load or save; "
                     "use --task countdown or --task sudoku for a benchmark, or run "
                     "free-text prompts through lm-evaluation-harness (docs/LM_EVAL.md)")


generate_problems = load_problems = save_problems = _no_problems
